"""A quarantine is loud, stays on doctor's list until dealt with, and salvages what is readable (issue 9, item 5).

The damage is real: every page holding one memory's text is overwritten with
random bytes (the memories b-tree leaf and the ledger page that copied it).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.agents import AgentRegistry
from memory.operations.quarantine import salvage
from memory.sqlite.connection import dbapi
from memory.types import MemoryEntry, Visibility

PAGE = 4096
ROWS = 30
TARGET = 15  # the memory whose pages are destroyed
MARK = b"QuarantineHeron"

pytestmark = pytest.mark.usefixtures("no_embedder")  # about storage, not the model


def _written(arcana_home, agent_id: str, entries: list[MemoryEntry]) -> Path:
    """``entries`` written to the agent's store, closed: its memory.db."""

    async def write():
        store = SQLiteAdapter.for_agent(agent_id, home=arcana_home)
        try:
            await store.write_many(entries)
        finally:
            await store.aclose()

    asyncio.run(write())
    return arcana_home.agent_db(agent_id)


def _corrupt_store(arcana_home) -> tuple[str, Path, list[MemoryEntry]]:
    """An agent with ROWS memories (~1 KB each, a few per page); the pages holding TARGET's text are destroyed."""
    card = AgentRegistry(arcana_home).create("keeper")
    entries = [
        MemoryEntry(
            agent_id=card.id,
            content=f"Fact {i}: " + ("The QuarantineHeron nests by pond seven. " if i == TARGET else "") + "tide " * 200,
            visibility=Visibility.HIDDEN if i == 1 else None,
        )
        for i in range(ROWS)
    ]

    db = _written(arcana_home, card.id, entries)
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0  # all of it is in the file
    data = db.read_bytes()
    pages = [n for n in range(len(data) // PAGE) if MARK in data[n * PAGE : (n + 1) * PAGE]]
    assert len(pages) >= 1
    with open(db, "r+b") as handle:
        for n in pages:
            handle.seek(n * PAGE)
            handle.write(os.urandom(PAGE))
    return card.id, db, entries


def _live_rows(db: Path) -> dict[str, tuple]:
    raw = dbapi().connect(str(db))
    try:
        return {r[0]: (r[1], r[2]) for r in raw.execute("SELECT id, content, visibility FROM memories")}
    finally:
        raw.close()


def _ledger_actors(db: Path) -> list[str]:
    raw = dbapi().connect(str(db))
    try:
        return [r[0] for r in raw.execute("SELECT actor FROM memory_ledger WHERE op = 'quarantine_restore'")]
    finally:
        raw.close()


async def _write_then_purge(agent_id: str, home, entry) -> None:
    store = SQLiteAdapter.for_agent(agent_id, home=home)
    try:
        await store.write(entry)
        assert await store.purge([entry.id]) == 1
    finally:
        await store.aclose()


def _quarantine_checks(cli) -> tuple[int, list[dict]]:
    result = cli("doctor", "--json")
    checks = json.loads(result.stdout)["checks"]
    return result.exit_code, [c for c in checks if c["name"].startswith("quarantine")]


def test_recall_that_quarantines_is_loud_and_restore_salvages_every_readable_row(cli, arcana_home):
    agent_id, db, entries = _corrupt_store(arcana_home)
    code, checks = _quarantine_checks(cli)
    assert [(c["name"], c["ok"]) for c in checks] == [("quarantine", True)]  # positive control: nothing yet

    result = cli("recall", "QuarantineHeron", "--agent", "keeper", "--json")
    assert result.exit_code == 5, result.output
    payload = json.loads(result.stdout)
    assert payload["results"] == []
    assert [(d["tier"], d["scope"], d["reason"]) for d in payload["degraded"]] == [("private", "private", "corruption")]
    loud = [line for line in result.stderr.splitlines() if line.startswith("arcana: error:")]
    assert len(loud) == 1 and "agent 'keeper'" in loud[0] and "arcana quarantine list" in loud[0]
    again = cli("recall", "QuarantineHeron", "--agent", "keeper", "--json")
    assert again.exit_code == 0 and json.loads(again.stdout)["degraded"] == []  # the fresh store is healthy

    [item] = json.loads(cli("quarantine", "list", "--json").stdout)["quarantined"]
    assert item["database"] == str(db) and "corrupt" in item["reason"]
    code, checks = _quarantine_checks(cli)
    assert code == 1 and [(c["name"], c["ok"]) for c in checks] == [(f"quarantine {item['id']}", False)]
    assert code == _quarantine_checks(cli)[0]  # still failing: doctor itself never deals with it

    # Meanwhile the agent goes on, and one quarantined id is rewritten in the live store: the live row must win.
    assert cli("remember", "written after the damage", "--agent", "keeper").exit_code == 0
    live_copy = entries[0].model_copy(update={"content": "Fact 0, as corrected after the damage"})

    _written(arcana_home, agent_id, [live_copy])
    # ... and one is purged there after the damage: the operator's removal must stand.
    asyncio.run(_write_then_purge(agent_id, arcana_home, entries[3]))

    result = cli("quarantine", "restore", item["id"], "--json")
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["duplicates"] == 2 and report["unreadable"] >= 1 and report["damaged"]
    assert report["restored"] + report["duplicates"] + report["unreadable"] == ROWS
    assert report["restored"] >= ROWS - 8  # only the destroyed page's few rows are gone

    rows = _live_rows(db)
    assert rows[entries[0].id][0] == live_copy.content  # the duplicate was skipped, not overwritten
    assert entries[3].id not in rows  # purged in the live store: not brought back
    assert entries[TARGET].id not in rows  # its page was destroyed
    assert {entries[2].id, entries[ROWS - 1].id} <= set(rows)  # positive controls from intact pages
    assert rows[entries[1].id] == (entries[1].content, "hidden")  # restored as it was: still hidden
    assert _ledger_actors(db).count("quarantine-restore") == report["restored"]  # every row through the ledger
    found = json.loads(cli("recall", "tide", "--agent", "keeper", "--limit", "100", "--json").stdout)["results"]
    assert entries[ROWS - 1].id in {r["id"] for r in found} and entries[1].id not in {r["id"] for r in found}

    assert json.loads(cli("quarantine", "list", "--json").stdout)["quarantined"] == []
    assert Path(report["trashed_to"]).is_dir() and Path(report["trashed_to"]).parent == arcana_home.trash_dir
    code, checks = _quarantine_checks(cli)
    assert code == 0 and [(c["name"], c["ok"]) for c in checks] == [("quarantine", True)]
    assert cli("quarantine", "restore", item["id"]).exit_code == 3  # dealt with: gone from the list


def test_dismiss_deals_with_a_quarantine_without_restoring(cli, arcana_home):
    _, db, _ = _corrupt_store(arcana_home)
    result = cli("--quiet", "recall", "QuarantineHeron", "--agent", "keeper")
    assert result.exit_code == 5 and "was corrupt and was moved" in result.stderr  # even under --quiet (cron)
    [item] = json.loads(cli("quarantine", "list", "--json").stdout)["quarantined"]

    refused = cli("quarantine", "dismiss", item["id"])  # no TTY: destructive needs --yes
    assert refused.exit_code == 2 and _quarantine_checks(cli)[0] == 1
    assert cli("quarantine", "dismiss", "no-such-id", "--yes").exit_code == 3
    done = cli("quarantine", "dismiss", item["id"], "--yes", "--json")
    assert done.exit_code == 0, done.output
    trashed = Path(json.loads(done.stdout)["trashed_to"])
    assert (trashed / "memory.db").exists()  # moved, never deleted
    code, checks = _quarantine_checks(cli)
    assert code == 0 and [c["ok"] for c in checks] == [True]


@pytest.mark.parametrize("at", ['"2024-05-01"', "1e300", "true", "[" * 100_000 + "]" * 100_000])
def test_a_damaged_quarantine_time_is_unknown_not_a_traceback(cli, arcana_home, at):
    """quarantine.json's "at" as text (or past any clock, or nested past the parser's depth) failed
    quarantine list and doctor with a TypeError/OverflowError/RecursionError traceback (exit 1); it
    shows as '?' now, the store still listed."""
    _corrupt_store(arcana_home)
    assert cli("--quiet", "recall", "QuarantineHeron", "--agent", "keeper").exit_code == 5
    [item] = json.loads(cli("quarantine", "list", "--json").stdout)["quarantined"]
    assert item["at"] is not None  # the control: the time quarantine wrote
    damaged = arcana_home.quarantine_dir / "damaged"
    damaged.mkdir()
    (damaged / "quarantine.json").write_text(f'{{"database": "/gone/memory.db", "reason": "r", "at": {at}}}')
    listed = cli("quarantine", "list", "--json")
    assert listed.exit_code == 0, listed.output
    assert {q["id"]: q["at"] for q in json.loads(listed.stdout)["quarantined"]} == {item["id"]: item["at"], "damaged": None}
    assert "?" in cli("quarantine", "list").stdout
    code, checks = _quarantine_checks(cli)
    assert code == 1 and len(checks) == 2


def test_salvage_reads_past_a_destroyed_page_and_leaves_the_file_untouched(arcana_home):
    agent_id, db, entries = _corrupt_store(arcana_home)
    before = db.read_bytes()
    found = salvage(db)
    assert db.read_bytes() == before
    ids = {e.id for e in found.entries}
    assert entries[TARGET].id not in ids and {entries[0].id, entries[ROWS - 1].id} <= ids
    assert len(ids) + found.unreadable == ROWS and found.unreadable >= 1
    garbage = db.parent / "garbage.db"
    garbage.write_bytes(os.urandom(8 * PAGE))
    with pytest.raises(Exception, match="nothing can be salvaged"):
        salvage(garbage)


def test_salvage_reads_a_store_cut_short_as_far_as_it_goes(arcana_home):
    """A memory.db truncated (a full disk, a copy that stopped) is refused whole by SQLite, schema and all;
    salvage still reads the rows on the pages that are left."""
    card = AgentRegistry(arcana_home).create("cut")
    entries = [MemoryEntry(agent_id=card.id, content=f"Fact {i}: " + "tide " * 200) for i in range(ROWS * 4)]

    db = _written(arcana_home, card.id, entries)
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0
    assert len(salvage(db).entries) == len(entries)  # positive control: the whole file gives every row
    pages = db.stat().st_size // PAGE
    os.truncate(db, (pages * 2 // 3) * PAGE)
    raw = dbapi().connect(str(db))
    try:  # the precondition: SQLite itself refuses the cut file
        with pytest.raises(dbapi().DatabaseError, match="malformed"):
            raw.execute("SELECT count(*) FROM sqlite_master").fetchone()
    finally:
        raw.close()
    before = db.read_bytes()
    found = salvage(db)
    assert db.read_bytes() == before
    ids = {e.id for e in found.entries}
    assert ids <= {e.id for e in entries} and len(ids) >= len(entries) // 3, (len(ids), found.damaged)


def test_a_quarantine_json_naming_a_store_outside_the_home_never_writes_there(cli, arcana_home, tmp_path):
    """quarantine.json is read off disk (a restored backup carries it), and `quarantine restore` wrote
    the salvaged rows into whatever database it named: a new memory.db outside the home, or the
    store of the home the backup was taken from. Only a store's place under a home is taken now, in
    this home; any other path is an unknown origin, to be dismissed."""
    agent_id, db, entries = _corrupt_store(arcana_home)
    assert cli("--quiet", "recall", "QuarantineHeron", "--agent", "keeper").exit_code == 5
    [item] = json.loads(cli("quarantine", "list", "--json").stdout)["quarantined"]
    quarantined = Path(item["folder"]) / "memory.db"
    outside, old_home = tmp_path / "outside", tmp_path / "old-home" / "agents" / agent_id
    for folder, recorded in (("outside", outside / "memory.db"), ("moved", old_home / "memory.db")):
        recorded.parent.mkdir(parents=True)
        (arcana_home.quarantine_dir / folder).mkdir()
        (arcana_home.quarantine_dir / folder / "memory.db").write_bytes(quarantined.read_bytes())
        (arcana_home.quarantine_dir / folder / "quarantine.json").write_text(
            json.dumps({"database": str(recorded), "reason": "r", "at": 1}))
    listed = {q["id"]: q["database"] for q in json.loads(cli("quarantine", "list", "--json").stdout)["quarantined"]}
    assert listed == {item["id"]: str(db), "outside": None, "moved": str(db)}

    refused = cli("quarantine", "restore", "outside")
    assert refused.exit_code == 3 and "dismiss" in refused.stderr, refused.output
    assert list(outside.iterdir()) == [] and (arcana_home.quarantine_dir / "outside").is_dir()
    moved = cli("quarantine", "restore", "moved", "--json")  # control: its place under a home, in this one
    assert moved.exit_code == 0, moved.output
    assert json.loads(moved.stdout)["database"] == str(db) and list(old_home.iterdir()) == []
    assert entries[ROWS - 1].id in _live_rows(db)
