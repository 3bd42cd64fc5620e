"""Racing writers and the pin: one index per database, and no vector dropped without a word (issue 9, item 4)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import sqlite_vec

from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.audit import AuditLog
from memory.embedding.gateway import EmbeddingGateway
from memory.sqlite.connection import dbapi
from memory.types import MemoryEntry

AGENT = "agent-1"


def _raw(path):
    """A second, plain connection to the file: what another process would hold."""
    raw = dbapi().connect(str(path), isolation_level=None)
    raw.enable_load_extension(True)
    sqlite_vec.load(raw)
    return raw


def _repin(path, *, model: str, family: str, dimension: int, table: str) -> None:
    """Another writer re-pins the database to ``table`` (as a finished re-embed does)."""
    raw = _raw(path)
    raw.execute(
        f"CREATE VIRTUAL TABLE {table} USING vec0(embedding float[{dimension}] distance_metric=cosine, "
        "+content_hash text, +model text)"
    )
    raw.execute(
        "UPDATE embedding_meta SET model = ?, family = ?, dimension = ?, vec_table = ?, pinned_at = ?",
        (model, family, dimension, table, time.time()),
    )
    raw.close()


def _vec_tables(path) -> dict[str, int]:
    raw = _raw(path)
    names = [r[0] for r in raw.execute(
        "SELECT name FROM sqlite_master WHERE name GLOB 'memory_vec_[0-9]*' AND sql LIKE 'CREATE VIRTUAL TABLE%'"
    )]
    counts = {name: raw.execute(f"SELECT count(*) FROM {name}").fetchone()[0] for name in names}
    raw.close()
    return counts


async def _write_while_repinned(tmp_path, offline_embedder, **pin):
    """Three entries, one per window; after the first window another writer re-pins the database."""
    path = tmp_path / "memory.db"
    notices: list[str] = []
    adapter = VectorAdapter(
        SQLiteAdapter(path, actor="test", audit=AuditLog(tmp_path / "audit.jsonl")),
        EmbeddingGateway([offline_embedder]),
        commit_batch=1,
        notify=notices.append,
    )
    entries = [MemoryEntry(agent_id=AGENT, content=f"fact number {i} about herons") for i in range(3)]
    first_window = []

    def on_progress(done, total):
        if done == 1:
            first_window.append(_vec_tables(path))
            _repin(path, **pin)

    try:
        report = await adapter.write_many(entries, on_progress=on_progress)
        status = await adapter.status()
    finally:
        await adapter.aclose()
    assert first_window == [{"memory_vec_1": 1}]  # the first window pinned and embedded as usual
    return entries, report, status, notices, path


async def test_a_long_lived_writer_follows_the_pin_into_the_winners_index(tmp_path, offline_embedder):
    entries, report, status, notices, path = await _write_while_repinned(
        tmp_path, offline_embedder, model=offline_embedder.model_name, family=offline_embedder.model_family,
        dimension=384, table="memory_vec_2",
    )
    # The two later windows went to the index the pin names now, not the one the writer started with.
    assert _vec_tables(path) == {"memory_vec_1": 1, "memory_vec_2": 2}
    assert report.embedded == 3 and report.skipped == [] and notices == []
    assert (status.rows, status.embedded) == (3, 2)  # the first row waits for a reindex, as status says


async def test_a_vector_the_pin_no_longer_accepts_is_reported_not_dropped(tmp_path, offline_embedder):
    entries, report, status, notices, path = await _write_while_repinned(
        tmp_path, offline_embedder, model="nomic-embed-text", family="nomic-embed-text-v1.5",
        dimension=768, table="memory_vec_2",
    )
    assert _vec_tables(path) == {"memory_vec_1": 1, "memory_vec_2": 0}  # nothing written under the wrong pin
    assert report.embedded == 1  # positive control: the window before the re-pin
    assert [entry_id for entry_id, _ in report.skipped] == [entries[1].id, entries[2].id]
    assert all("pinned meanwhile to nomic-embed-text" in reason for _, reason in report.skipped)
    assert len(notices) == 1 and notices[0].startswith("2 memories stored without a vector")
    audited = [r for r in AuditLog(tmp_path / "audit.jsonl").read() if r["event"] == "embedding_degraded"]
    assert [r["reason"] for r in audited] == notices
    assert (status.rows, status.missing) == (3, 3)  # every row is still there, each one counted as missing


def test_concurrent_first_embedded_writes_from_processes_share_one_index(arcana_home, offline_embedder, tmp_path):
    """N processes make the first embedded write to one new store at once: one index, every row embedded."""
    env = {**os.environ, "ARCANA_HOME": str(arcana_home.root)}

    def arcana(*args, **kw):
        return subprocess.run([sys.executable, "-m", "arcana_cli.main", *args], env=env, capture_output=True,
                              text=True, timeout=240, **kw)

    assert arcana("agent", "create", "racer").returncode == 0
    # A loaded 2-core machine loads the model in each process inside the write: a budget that cannot expire.
    arcana_home.connections_path.parent.mkdir(parents=True, exist_ok=True)
    arcana_home.connections_path.write_text(json.dumps({"private": {"write_timeout_ms": 200_000}}))
    writers = [
        subprocess.Popen([sys.executable, "-m", "arcana_cli.main", "remember", f"first write {i}", "--agent", "racer"],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(4)
    ]
    results = [w.communicate(timeout=240) + (w.returncode,) for w in writers]
    assert [rc for _, _, rc in results] == [0] * 4, [err for _, err, _ in results]
    assert all("without a vector" not in err for _, err, _ in results)
    status = json.loads(arcana("embeddings", "status", "--json").stdout)
    [db] = [d for d in status["databases"] if d["agent"] == "racer"]
    assert (db["rows"], db["embedded"], db["missing"], db["vec_table"]) == (4, 4, 0, "memory_vec_1")
    [agent_db] = (arcana_home.root / "agents").glob("*/memory.db")
    assert _vec_tables(agent_db) == {"memory_vec_1": 4}  # one index, no orphan memory_vec_2
