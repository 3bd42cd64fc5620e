"""Corrupt stores: an error for plain adapters, quarantine-and-start-fresh for an
agent's private store (never deleted, audited, loud), and no committed data lost
when a writer is killed mid-batch."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.audit import AuditLog
from memory.errors import MemoryCorruptError
from memory.sqlite.connection import dbapi
from memory.types import MemoryQuery
from factories import entry

PAGE = 4096

# Keyword-only homes: these tests are about the store, not the embedding model.
pytestmark = pytest.mark.usefixtures("no_embedder")




async def make_store(path: Path, agent_id: str = "a1", n: int = 2000) -> None:
    store = SQLiteAdapter(path)
    await store.write_many([entry(f"entry {i} about lighthouses and tides", agent_id) for i in range(n)])
    await store.aclose()


def scribble(path: Path, offset: int, length: int) -> None:
    with open(path, "r+b") as handle:
        handle.seek(offset)
        handle.write(os.urandom(length))


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


async def test_garbage_header_raises_at_connect(tmp_path):
    path = tmp_path / "m.db"
    await make_store(path)
    scribble(path, 0, 100)
    store = SQLiteAdapter(path)
    with pytest.raises(MemoryCorruptError, match="m.db"):
        await store.connect()
    assert path.exists()  # a plain adapter never moves anything


async def test_damage_past_the_first_page_raises_on_use(tmp_path):
    path = tmp_path / "m.db"
    await make_store(path)
    scribble(path, 2 * PAGE, 8 * PAGE)
    store = SQLiteAdapter(path)
    with pytest.raises(MemoryCorruptError):
        await store.search(MemoryQuery(text="lighthouses"))
    await store.aclose()
    assert path.exists() and store.quarantined_to is None


async def test_truncated_file_raises(tmp_path):
    path = tmp_path / "m.db"
    await make_store(path)
    os.truncate(path, path.stat().st_size // 2)
    with pytest.raises(MemoryCorruptError):
        await SQLiteAdapter(path).count()


@pytest.fixture
def agent_db(arcana_home) -> tuple[str, Path]:
    arcana_home.ensure()
    card = AgentRegistry(arcana_home).create("keeper")
    return card.id, arcana_home.agent_db(card.id)


async def test_for_agent_quarantines_a_corrupt_store_with_its_wal_and_starts_fresh(arcana_home, agent_db):
    agent_id, db = agent_db
    await make_store(db, agent_id)
    scribble(db, 0, 100)
    Path(f"{db}-wal").write_bytes(b"leftover wal bytes")
    Path(f"{db}-shm").write_bytes(b"leftover shm bytes")
    hashes = {suffix: sha(Path(f"{db}{suffix}")) for suffix in ("", "-wal", "-shm")}

    store = SQLiteAdapter.for_agent(agent_id)
    fresh = entry("the first memory after the quarantine", agent_id)
    await store.write(fresh)
    assert [e.id for e in await store.search(MemoryQuery(text="quarantine"))] == [fresh.id]
    await store.aclose()

    moved = store.quarantined_to
    assert moved is not None and moved.parent == arcana_home.quarantine_dir
    # The database and its WAL byte for byte; the -shm is only an index SQLite rebuilds.
    assert {suffix: sha(moved / f"memory.db{suffix}") for suffix in ("", "-wal")} == {
        suffix: hashes[suffix] for suffix in ("", "-wal")
    }
    assert (moved / "memory.db-shm").exists()
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").read_bytes() != b"leftover wal bytes"
    [line] = [r for r in AuditLog(arcana_home.audit_log).read() if r["event"] == "store_quarantined"]
    assert line["database"] == str(db) and line["moved_to"] == str(moved) and "corrupt" in line["reason"]
    reopened = SQLiteAdapter.for_agent(agent_id)
    assert await reopened.count() == 1 and reopened.quarantined_to is None
    await reopened.aclose()


async def test_damage_found_mid_session_also_quarantines(arcana_home, agent_db):
    agent_id, db = agent_db
    await make_store(db, agent_id)
    scribble(db, 2 * PAGE, 8 * PAGE)
    store = SQLiteAdapter.for_agent(agent_id)
    await store.connect()
    assert store.quarantined_to is None  # the first page is fine
    assert await store.search(MemoryQuery(text="lighthouses")) == []  # served by the fresh store
    assert store.quarantined_to is not None and (store.quarantined_to / "memory.db").exists()
    await store.write(entry("written after the move", agent_id))
    assert await store.count() == 1
    await store.aclose()


def test_cli_says_so_loudly_on_one_line(cli, arcana_home):
    assert cli("remember", "a memory before the damage", "--agent", "keeper").exit_code == 0
    card = json.loads(cli("agent", "show", "keeper", "--json").stdout)
    scribble(Path(card["memory_db"]), 0, 100)
    result = cli("recall", "damage", "--agent", "keeper", "--json")
    assert result.exit_code == 5  # corrupt storage, as the exit-code table says (more in test_quarantine.py)
    assert json.loads(result.stdout)["results"] == []
    loud = [line for line in result.stderr.splitlines() if line.startswith("arcana: error:")]
    assert len(loud) == 1 and "quarantine" in loud[0] and "nothing was deleted" in loud[0]
    assert list(arcana_home.quarantine_dir.glob("*/memory.db"))
    again = cli("recall", "damage", "--agent", "keeper")
    assert again.exit_code == 0 and "corrupt" not in again.stderr  # said once, then quiet


def test_cron_quiet_still_hears_about_a_quarantine(cli, arcana_home):
    assert cli("remember", "a memory before the damage", "--agent", "keeper").exit_code == 0
    card = json.loads(cli("agent", "show", "keeper", "--json").stdout)
    scribble(Path(card["memory_db"]), 0, 100)
    result = cli("--quiet", "remember", "written after the damage", "--agent", "keeper")
    assert result.exit_code == 5  # stored in the fresh store, but the quarantine is news
    assert [line for line in result.stderr.splitlines() if "was corrupt and was moved" in line]
    found = cli("recall", "written after the damage", "--agent", "keeper", "--json")
    assert [r["content"] for r in json.loads(found.stdout)["results"]] == ["written after the damage"]


KILLED_WRITER = """
import asyncio, sys
from memory.adapters.sqlite import SQLiteAdapter
from memory.types import MemoryEntry


async def main(path):
    store = SQLiteAdapter(path)
    batch = 0
    while True:
        entries = [MemoryEntry(agent_id="a1", content=f"batch {batch} item {i} survives crashes") for i in range(200)]
        await store.write_many(entries)
        print(" ".join(e.id for e in entries), flush=True)
        batch += 1

asyncio.run(main(sys.argv[1]))
"""


@pytest.mark.slow
async def test_kill_9_mid_batch_loses_no_committed_data(tmp_path):
    path = tmp_path / "crash.db"
    writer = subprocess.Popen([sys.executable, "-c", KILLED_WRITER, str(path)], stdout=subprocess.PIPE, text=True)
    committed: list[str] = []
    try:
        for _ in range(8):
            line = writer.stdout.readline()
            assert line, "the writer died on its own"
            committed += line.split()
    finally:
        writer.send_signal(signal.SIGKILL)
        writer.wait(timeout=10)
    assert writer.returncode == -signal.SIGKILL

    raw = dbapi().connect(str(path))
    try:
        assert raw.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {r[0] for r in raw.execute("SELECT id FROM memories")}
        ledgered = {r[0] for r in raw.execute("SELECT DISTINCT memory_id FROM memory_ledger")}
        raw.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
    finally:
        raw.close()
    assert set(committed) <= stored
    assert len(stored) % 200 == 0  # whole batches only: the interrupted one left nothing behind
    assert stored == ledgered

    store = SQLiteAdapter(path)
    await store.write(entry("life goes on after the crash"))
    assert len(await store.search(MemoryQuery(text="life", limit=10))) == 1
    assert len(await store.search(MemoryQuery(text="survives", limit=5))) == 5
    await store.aclose()
