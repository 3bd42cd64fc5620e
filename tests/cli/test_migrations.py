"""Schema migrations: exact schema from blank, atomic failure, refusing newer
databases without writing them, and the copy taken before upgrading."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.errors import MemoryStorageError, SchemaTooNewError
from memory.migrations.runner import MIGRATIONS, Migration, head_version, migrate
from memory.sqlite.connection import dbapi, open_connection
from memory.types import MemoryEntry

# Keyword-only homes: these tests are about the store, not the embedding model.
pytestmark = pytest.mark.usefixtures("no_embedder")

# The exact schema a blank database reaches at head. A new migration must
# extend this (and head below) on purpose.
HEAD = 11
TABLES = {
    "memories": [
        "seq", "id", "agent_id", "type", "content", "scope", "pool_name", "importance", "pinned", "confidence",
        "confidence_source", "conflict_with", "superseded_by", "tags", "source_session_id", "created_at",
        "updated_at", "last_accessed_at", "access_count", "archived", "visibility", "context", "dated",
        "valid_from", "valid_to", "supersedes",
    ],
    "memories_fts": ["content", "tags", "context", "dated"],
    "memories_fts_config": ["k", "v"],
    "memories_fts_data": ["id", "block"],
    "memories_fts_docsize": ["id", "sz"],
    "memories_fts_idx": ["segid", "term", "pgno"],
    "memory_ledger": ["seq", "memory_id", "op", "actor", "at", "before", "after"],
    "sqlite_sequence": ["name", "seq"],
    "schema_migrations": ["version", "name", "applied_at"],
    "embedding_meta": ["id", "model", "family", "dimension", "vec_table", "pinned_at"],
    "memory_edges": ["src_id", "dst_id", "relation", "source", "confidence", "created_at"],
    "vault_files": [
        "id", "rel_path", "mtime_ns", "size", "content_hash", "aliases", "targets", "links", "resolved",
        "attachments", "self_links", "dangling", "ambiguous",
    ],
    "vault_meta": ["key", "value"],
    "memory_chunks": ["id", "seq", "chunk", "char_start", "char_end", "source_hash"],
    "entities": ["id", "agent_id", "name", "created_at"],
    "entity_aliases": ["agent_id", "alias", "entity_id"],
    "recall_activity": ["day", "recalls", "hits"],
    "memory_census": ["id", "total", "recallable", "archived", "hidden", "private", "superseded"],
}
INDEXES = {
    "memories_agent": ("memories", ["agent_id"]),
    "memories_order": ("memories", ["archived", "pinned", "importance", "created_at"]),
    "memories_session": ("memories", ["source_session_id", "created_at"]),
    "sqlite_autoindex_memories_1": ("memories", ["id"]),
    "memory_ledger_memory": ("memory_ledger", ["memory_id", "seq"]),
    "memory_edges_dst": ("memory_edges", ["dst_id"]),
    "memory_edges_source": ("memory_edges", ["source"]),
    "sqlite_autoindex_memory_edges_1": ("memory_edges", ["src_id", "dst_id", "relation"]),
    "sqlite_autoindex_vault_files_1": ("vault_files", ["id"]),
    "sqlite_autoindex_vault_files_2": ("vault_files", ["rel_path"]),
    "sqlite_autoindex_vault_meta_1": ("vault_meta", ["key"]),
    "sqlite_autoindex_memory_chunks_1": ("memory_chunks", ["seq", "chunk"]),
    "memories_supersedes": ("memories", ["supersedes"]),
    "sqlite_autoindex_entities_1": ("entities", ["id"]),
    "sqlite_autoindex_entity_aliases_1": ("entity_aliases", ["agent_id", "alias"]),
    "entity_aliases_entity": ("entity_aliases", ["entity_id"]),
}
TRIGGERS = {
    "memories_fts_insert": "memories",
    "memories_fts_delete": "memories",
    "memories_fts_update": "memories",
    "memory_ledger_no_update": "memory_ledger",
    "memory_ledger_no_delete": "memory_ledger",
    "memory_census_insert": "memories",
    "memory_census_delete": "memories",
    "memory_census_update": "memories",
}
NOT_NULL = {
    "memories": {"id", "agent_id", "type", "content", "scope", "importance", "pinned", "confidence",
                 "confidence_source", "tags", "created_at", "updated_at", "access_count", "archived", "visibility",
                 "context", "dated"},
}


def schema(path: Path) -> dict:
    raw = dbapi().connect(str(path))
    try:
        objects = raw.execute("SELECT type, name, tbl_name FROM sqlite_master").fetchall()
        tables = {
            name: [c[1] for c in raw.execute(f"PRAGMA table_info('{name}')")]
            for kind, name, _ in objects
            if kind == "table"
        }
        indexes = {
            name: (table, [c[2] for c in raw.execute(f"PRAGMA index_info('{name}')")])
            for kind, name, table in objects
            if kind == "index"
        }
        triggers = {name: table for kind, name, table in objects if kind == "trigger"}
        not_null = {c[1] for c in raw.execute("PRAGMA table_info('memories')") if c[3]}
        version = raw.execute("PRAGMA user_version").fetchone()[0]
        applied = [r[0] for r in raw.execute("SELECT version FROM schema_migrations ORDER BY version")]
    finally:
        raw.close()
    return {"tables": tables, "indexes": indexes, "triggers": triggers, "not_null": not_null,
            "version": version, "applied": applied}


def digest(path: Path) -> tuple[str, int]:
    """The database's bytes and the size of its WAL: what was committed, and what waits to be.

    A read-only open of a WAL database may create an empty -wal and a -shm
    index; neither holds data, so only the WAL's size is compared.
    """
    wal = Path(f"{path}-wal")
    return hashlib.sha256(path.read_bytes()).hexdigest(), wal.stat().st_size if wal.exists() else 0


async def test_blank_database_reaches_the_exact_schema(tmp_path):
    assert head_version() == HEAD, "a new migration: extend the expected schema in this test"
    store = SQLiteAdapter(tmp_path / "blank.db")
    await store.connect()
    assert await store.schema_version() == HEAD
    await store.aclose()
    got = schema(tmp_path / "blank.db")
    assert got["tables"] == TABLES
    assert got["indexes"] == INDEXES
    assert got["triggers"] == TRIGGERS
    assert got["not_null"] == NOT_NULL["memories"]
    assert got["version"] == HEAD and got["applied"] == list(range(1, HEAD + 1))


async def test_a_failing_migration_leaves_the_prior_version_intact(tmp_path):
    path = tmp_path / "fail.db"
    conn = await open_connection(path)
    try:
        assert await migrate(conn, path) == HEAD
        bad = Migration(HEAD + 1, "bad", ("CREATE TABLE half_done (x)", "THIS IS NOT SQL"))
        with pytest.raises(MemoryStorageError, match="syntax error"):
            await migrate(conn, path, MIGRATIONS + (bad,))
    finally:
        await conn.close()
    after = schema(path)
    assert after["version"] == HEAD and after["applied"] == list(range(1, HEAD + 1))
    assert "half_done" not in after["tables"]


async def test_failure_midway_keeps_the_migrations_before_it(tmp_path):
    path = tmp_path / "midway.db"
    conn = await open_connection(path)
    bad = Migration(2, "bad", ("CREATE TABLE partial (x)", "INSERT INTO no_such_table VALUES (1)"))
    try:
        with pytest.raises(MemoryStorageError, match="no_such_table"):
            await migrate(conn, path, (MIGRATIONS[0], bad))
    finally:
        await conn.close()
    after = schema(path)
    assert after["version"] == 1 and after["applied"] == [1]
    assert "partial" not in after["tables"] and "memories" in after["tables"]


async def test_a_newer_database_is_refused_and_never_written(tmp_path):
    path = tmp_path / "agents" / "future" / "memory.db"
    store = SQLiteAdapter(path)
    await store.write(MemoryEntry(agent_id="future", content="written by the future"))
    await store.aclose()
    raw = dbapi().connect(str(path))
    raw.execute(f"PRAGMA user_version = {HEAD + 7}")
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    before = digest(path)

    refused = SQLiteAdapter(path)
    with pytest.raises(SchemaTooNewError, match="newer than this Arcana"):
        await refused.connect()
    assert not (await refused.health_check()).healthy
    await refused.aclose()
    assert digest(path) == before


def test_the_cli_refuses_a_newer_database_without_writing_it(cli, arcana_home):
    assert cli("agent", "create", "future").exit_code == 0
    assert cli("remember", "from the future", "--agent", "future").exit_code == 0
    card = json.loads(cli("agent", "show", "future", "--json").stdout)
    db = Path(card["memory_db"])
    raw = dbapi().connect(str(db))
    raw.execute(f"PRAGMA user_version = {HEAD + 1}")
    raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    raw.close()
    before = digest(db)
    result = cli("recall", "future", "--agent", "future")
    assert result.exit_code == 5
    assert "newer than this Arcana" in result.stderr and result.stdout == ""
    assert not arcana_home.quarantine_dir.exists()  # too new is not corrupt: nothing is moved
    status = json.loads(cli("migrate", "status", "--json").stdout)
    assert [s["state"] for s in status] == ["newer than this Arcana"]
    up = cli("migrate", "up", "--json")
    assert json.loads(up.stdout)[0]["state"].startswith("newer than this Arcana")
    assert "1 database(s) skipped" in up.stderr
    assert digest(db) == before


async def _make_v1(path: Path, content: str, agent_id: str = "old") -> None:
    conn = await open_connection(path)
    try:
        assert await migrate(conn, path, MIGRATIONS[:1]) == 1
        await conn.execute("BEGIN IMMEDIATE")
        # A v1 row written as v1 wrote it: today's upsert knows columns v1 lacks.
        await conn.execute(
            "INSERT INTO memories (id, agent_id, type, content, created_at, updated_at) VALUES (?, ?, 'semantic', ?, 0, 0)",
            (MemoryEntry(agent_id=agent_id, content=content).id, agent_id, content),
        )
        await conn.execute("COMMIT")
    finally:
        await conn.close()


async def test_connecting_to_an_older_database_backs_it_up_first(tmp_path):
    path = tmp_path / "old.db"
    await _make_v1(path, "kept across the upgrade")
    store = SQLiteAdapter(path, backup_dir=tmp_path / "backups")
    await store.connect()
    assert await store.schema_version() == HEAD
    copy = store.backed_up_to
    await store.aclose()
    assert copy is not None and copy.parent == tmp_path / "backups" and copy.exists()
    backed = schema(copy)
    assert backed["version"] == 1 and "memory_edges" not in backed["tables"]
    raw = dbapi().connect(str(copy))
    assert raw.execute("SELECT content FROM memories").fetchall()[0][0] == "kept across the upgrade"
    raw.close()
    # A current database is not copied again.
    again = SQLiteAdapter(path, backup_dir=tmp_path / "backups")
    await again.connect()
    assert again.backed_up_to is None
    await again.aclose()


async def test_an_older_store_has_its_rows_counted_when_it_reaches_v10(tmp_path):
    """v10 takes the census of the rows a store already holds once; its triggers keep it from then on."""
    path = tmp_path / "old.db"
    await _make_v1(path, "live before the upgrade")
    await _make_v1(path, "archived before the upgrade")
    raw = dbapi().connect(str(path))
    raw.execute("UPDATE memories SET archived = 1 WHERE content LIKE 'archived%'")
    raw.commit()
    raw.close()
    store = SQLiteAdapter(path, backup_dir=tmp_path / "backups")
    try:
        assert (await store.count(), await store.count(include_archived=False)) == (2, 1)
        await store.write(MemoryEntry(agent_id="old", content="written after it"))
        assert (await store.count(), await store.count(include_archived=False)) == (3, 2)
    finally:
        await store.aclose()


def test_migrate_status_and_up_through_the_cli(cli, arcana_home):
    assert cli("agent", "create", "elder").exit_code == 0
    card = json.loads(cli("agent", "show", "elder", "--json").stdout)
    asyncio.run(_make_v1(Path(card["memory_db"]), "an old memory", card["id"]))

    status = json.loads(cli("migrate", "status", "--json").stdout)
    assert [(s["version"], s["head"], s["state"]) for s in status] == [(1, HEAD, "pending")]
    table = cli("migrate", "status")
    assert table.exit_code == 0 and "pending" in table.stdout

    up = cli("migrate", "up", "--json")
    assert up.exit_code == 0, up.stderr
    [result] = json.loads(up.stdout)
    assert (result["from"], result["to"], result["state"]) == (1, HEAD, "migrated")
    assert Path(result["backup"]).exists() and schema(Path(result["backup"]))["version"] == 1

    assert [s["state"] for s in json.loads(cli("migrate", "status", "--json").stdout)] == ["current"]
    second = cli("migrate", "up", "--json")
    assert json.loads(second.stdout)[0]["state"] == "current"
    recalled = json.loads(cli("recall", "old memory", "--agent", "elder", "--json").stdout)
    assert [r["content"] for r in recalled["results"]] == ["an old memory"]


def test_status_and_doctor_leave_no_wal_files_beside_a_database_they_only_read(cli, arcana_home):
    """A read-only open of a WAL database makes its -wal and -shm, which it cannot remove: `migrate status`
    and doctor's checks left both beside every closed store. Positive control: a store a writer holds open
    keeps its WAL, and the write waiting in it."""
    assert cli("remember", "a stored fact", "--agent", "ada").exit_code == 0
    assert cli("pool", "create", "team").exit_code == 0
    stores = [arcana_home.agent_db(json.loads(cli("agent", "show", "ada", "--json").stdout)["id"]),
              arcana_home.pool_db("team")]
    sidecars = [Path(f"{db}{suffix}") for db in stores for suffix in ("-wal", "-shm")]
    assert not any(p.exists() for p in sidecars)
    for args in (("migrate", "status"), ("doctor",)):
        assert cli(*args).exit_code == 0, args
        assert [p.name for p in sidecars if p.exists()] == [], args
    writer = dbapi().connect(str(stores[1]))
    try:
        writer.execute("PRAGMA wal_autocheckpoint=0")
        writer.execute("CREATE TABLE held (x)")
        writer.commit()
        assert cli("migrate", "status").exit_code == 0
        assert Path(f"{stores[1]}-wal").stat().st_size > 0 and Path(f"{stores[1]}-shm").exists()
    finally:
        writer.close()
    assert "held" in schema(stores[1])["tables"]
