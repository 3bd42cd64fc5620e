"""Killed `arcana run`s, migrations and maintenance beside writers (hunt 20): what was written stays
whole and accounted for.

Every kill is a SIGKILL of a real `arcana` process at a point it was seen to
reach (a row, a line, a file), with a real loopback model server answering.
"""

from __future__ import annotations

import json
import sqlite3
import zlib

import pytest
from model_server import LoopbackModelServer
from runner import arcana, kill_when, run_arcana

from memory.migrations.runner import head_version

pytestmark = pytest.mark.usefixtures("no_embedder")

FACTS = 40


def _extracting_model(body: dict) -> str:
    """Answers a turn, extracts ``FACTS`` facts (a long run of writes to be killed in), summarises."""
    system = body["messages"][0]["content"]
    room = zlib.crc32(body["messages"][-1]["content"].encode()) % 90_000  # each prompt its own facts
    if "JSON list" in system:
        return json.dumps([{"type": "semantic", "content": f"Ada keeps crate {i} in room {room} on shelf {i * 7 % 31}.",
                            "importance": 0.6} for i in range(FACTS)])
    if "Summarise" in system:
        return f"Ada keeps her crates in room {room} on numbered shelves."
    return "Noted."


def _ro(db) -> sqlite3.Connection:
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)


def _session_rows_and_sources(db, session_id: str) -> tuple[set[str], set[str], str]:
    """(ids the session wrote, ids its summary links as sources, the summary's id)."""
    conn = _ro(db)
    try:
        rows = conn.execute("SELECT id, tags FROM memories WHERE source_session_id = ?", (session_id,)).fetchall()
        [summary] = [i for i, tags in rows if "session-summary" in json.loads(tags)]
        sources = {r[0] for r in conn.execute("SELECT dst_id FROM memory_edges WHERE src_id = ?", (summary,))}
        return {i for i, _ in rows if i != summary}, sources, summary
    finally:
        conn.close()


@pytest.fixture
def llm_home(arcana_home):
    with LoopbackModelServer(_extracting_model) as server:
        arcana("model", "add", "loop", "--provider", "ollama", "--base-url", server.url, "--model", "tiny",
               "--default", home=arcana_home)
        arcana("config", "set", "memory.extraction.strategy", "llm", home=arcana_home)
        arcana("agent", "create", "ada", home=arcana_home)
        yield arcana_home


def test_a_run_killed_while_writing_its_memories_closes_later_with_every_one_as_a_source(llm_home):
    # Positive control: an uninterrupted run's summary carries every memory the turn wrote.
    whole = json.loads(arcana("run", "ada", "Where are my crates?", "--json", home=llm_home))
    db = next(llm_home.root.glob("agents/*/memory.db"))
    written, sources, _ = _session_rows_and_sources(db, whole["session_id"])
    assert len(written) == FACTS and sources == written

    def some_written() -> bool:
        conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=0.2)
        try:
            return conn.execute("SELECT count(*) FROM memories WHERE source_session_id != ?",
                                (whole["session_id"],)).fetchone()[0] >= 2
        finally:
            conn.close()

    kill_when(llm_home, ["run", "ada", "Which shelf holds crate 3?"], some_written, "the turn's memories were being written")
    listed = json.loads(arcana("session", "list", "--agent", "ada", "--json", home=llm_home))
    [killed] = [s for s in listed if s["id"] != whole["session_id"]]
    assert killed["turns"] == 1 and killed["closed_at"] is None  # the turn whole, the session open to close
    closed = json.loads(arcana("session", "close", killed["id"], "--agent", "ada", "--json", home=llm_home))
    assert closed["closed_at"] and closed["summary_memory_id"]
    written, sources, summary = _session_rows_and_sources(db, killed["id"])
    assert summary == closed["summary_memory_id"]
    assert written and sources == written  # the rows the killed process wrote and never named, too
    shown = json.loads(arcana("session", "show", killed["id"], "--agent", "ada", "--json", home=llm_home))
    assert [t["prompt"] for t in shown["turns"]] == ["Which shelf holds crate 3?"]  # one turn, not replayed twice
    again = run_arcana("run", "ada", "Anything else?", "--json", home=llm_home)
    assert again.returncode == 0, again.stderr


# -- arcana migrate up, killed while copying the store aside and while migrating it -----------------

OLD_ROWS = 100_000


def _v1_store(home) -> tuple[str, object]:
    """An agent whose store is at schema v1 (as v1 wrote it) with ``OLD_ROWS`` memories."""
    import asyncio

    from memory.agents import AgentRegistry
    from memory.migrations.runner import MIGRATIONS, migrate
    from memory.sqlite.connection import open_connection

    card = AgentRegistry(home).create("elder")
    db = home.agent_db(card.id)

    async def make() -> None:
        conn = await open_connection(db)
        try:
            assert await migrate(conn, db, MIGRATIONS[:1]) == 1
            await conn.execute("BEGIN IMMEDIATE")
            await conn.executemany(
                "INSERT INTO memories (id, agent_id, type, content, created_at, updated_at) VALUES (?, ?, 'semantic', ?, 0, 0)",
                [(f"old-{i}", card.id, f"old memory {i}: crate {i % 97} sits on shelf {i % 13}") for i in range(OLD_ROWS)],
            )
            await conn.execute("COMMIT")
        finally:
            await conn.close()

    asyncio.run(make())
    return card.id, db


def _version_and_rows(db) -> tuple[int, int]:
    conn = _ro(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        return conn.execute("PRAGMA user_version").fetchone()[0], conn.execute("SELECT count(*) FROM memories").fetchone()[0]
    finally:
        conn.close()


@pytest.mark.parametrize("stage", ["copying", "migrating"])
def test_a_killed_migrate_leaves_the_old_store_whole_and_only_whole_copies_named_as_such(arcana_home, stage):
    _, db = _v1_store(arcana_home)
    copies = arcana_home.root / "backups"

    def reached() -> bool:
        made = list(copies.glob("*")) if copies.exists() else []
        if stage == "copying":
            return bool(made)  # the copy's file has appeared: it is being written
        # The copy is whole (named, its journal gone): the migration's transaction is under way.
        return any(p.suffix == ".db" for p in made) and not any(p.name.endswith(("-journal", ".partial")) for p in made)

    kill_when(arcana_home, ["migrate", "up"], reached, f"the {stage} stage")
    assert _version_and_rows(db) == (1, OLD_ROWS)  # old, whole: the migration is one transaction
    for copy in copies.glob("*.db"):  # a file named as the copy taken before migrating is that copy, whole
        assert _version_and_rows(copy) == (1, OLD_ROWS), copy.name
    status = json.loads(arcana("migrate", "status", "--json", home=arcana_home))
    assert [(s["version"], s["state"]) for s in status] == [(1, "pending")]

    [done] = json.loads(arcana("migrate", "up", "--json", home=arcana_home))
    assert (done["from"], done["to"], done["state"]) == (1, head_version(), "migrated")
    assert _version_and_rows(db) == (head_version(), OLD_ROWS)
    assert _version_and_rows(done["backup"]) == (1, OLD_ROWS)  # positive control: the rerun's copy is whole
    for copy in copies.glob("*.db"):
        assert _version_and_rows(copy) == (1, OLD_ROWS), copy.name
    assert not list(copies.glob("*.partial*"))  # the killed run's unfinished copy was cleared, not kept


# -- two arcana run on one agent at once --------------------------------------------------------------


def test_two_runs_of_one_agent_at_once_keep_their_sessions_and_memories(llm_home):
    import os
    import subprocess

    from runner import ARCANA

    env = {**os.environ, "ARCANA_HOME": str(llm_home.root)}
    results = []
    for round_ in range(3):
        runs = [subprocess.Popen([*ARCANA, "run", "ada", f"Round {round_}, writer {w}: where are my crates?", "--json"],
                                 env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for w in "ab"]
        for run in runs:
            out, err = run.communicate(timeout=120)
            assert (run.returncode, err) == (0, ""), err  # nobody waits out a lock into a traceback
            results.append(json.loads(out))
    sessions = {s["id"]: s for s in json.loads(arcana("session", "list", "--agent", "ada", "--json", home=llm_home))}
    assert sorted(sessions) == sorted(r["session_id"] for r in results)  # one session each, none shared
    assert all(s["turns"] == 1 and s["closed_at"] for s in sessions.values())
    db = next(llm_home.root.glob("agents/*/memory.db"))
    conn = _ro(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        for result in results:  # each run's acknowledged writes are in the store, its own
            assert len(result["written_ids"]) == FACTS
            found = conn.execute(f"SELECT source_session_id FROM memories WHERE id IN ({','.join('?' * FACTS)})",
                                 result["written_ids"]).fetchall()
            assert sorted(found) == [(result["session_id"],)] * FACTS
    finally:
        conn.close()
