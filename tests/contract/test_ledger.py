"""The mutation ledger: every mutator of SQLiteAdapter leaves a row, rows are
never changed (but for a purge taking a memory's words out of them), and no module
writes ``memories`` except the two engines' mutations.py."""

from __future__ import annotations

import inspect
import re
import time
from pathlib import Path

import pytest
from factories import entry

from memory.adapters.sqlite import SQLiteAdapter
from memory.deadline import LOCK_WAIT
from memory.errors import MemoryBusyError, MemoryStorageError, StaleEditError
from memory.sqlite import mutations
from memory.sqlite.admission import CONSOLIDATED
from memory.sqlite.connection import dbapi
from memory.sqlite.consolidation import link_sources
from memory.sqlite.rows import COLUMNS
from memory.types import Audience, MemoryQuery, PruneMode, PrunePolicy, Visibility

ROOT = Path(__file__).resolve().parents[2]




# name -> (coroutine doing the mutation on `target`, expected op, expects an after image)
async def _write(s, t):
    await s.write(t.model_copy(update={"content": "changed by write"}))


async def _write_many(s, t):
    await s.write_many([t.model_copy(update={"importance": 0.05})])


async def _update(s, t):
    await s.update(t.id, tags=["edited"])


async def _delete(s, t):
    assert await s.delete(t.id)


async def _purge(s, t):
    assert await s.purge([t.id]) == 1


async def _archive(s, t):
    assert await s.archive([t.id]) == 1


async def _restore(s, t):
    await s.archive([t.id])
    assert await s.restore([t.id]) == 1


async def _set_visibility(s, t):
    assert await s.set_visibility([t.id], Visibility.HIDDEN) == 1


async def _withdraw(s, t):
    assert await s.withdraw([t.id]) == 1


async def _set_pinned(s, t):
    assert await s.set_pinned([t.id], True) == 1


async def _prune_archive(s, t):
    assert (await s.prune(PrunePolicy(min_importance=0.5))).victim_ids == [t.id]


async def _prune_purge(s, t):
    assert (await s.prune(PrunePolicy(min_importance=0.5, mode=PruneMode.PURGE))).purged == 1


async def _supersede(s, t):
    assert await s.supersede([t.id], "a-successor-not-stored") == [t.id]


async def _make_current(s, t):
    await s.supersede([t.id], "a-successor-not-stored")
    assert await s.make_current(t.id) == [t.id]


async def _reinforce(s, t):
    assert await s.reinforce(t.id, 0.05) == 1


async def _stand_alone(s, t):
    """A source consolidation archived into a carrier no longer stored, shown again: restored on its own."""
    await s.set_visibility([t.id], Visibility.VISIBLE)
    await s.run(mutations.update, [t.id], "archive", "test", f"archived = {CONSOLIDATED}")
    await s.run(link_sources, [("a-carrier-not-stored", t.id)], "consolidation")
    assert await s.stand_alone([t.id]) == 1


async def _carry_again(s, t):
    """A restatement a forget of its merge archived, archived into the restored merge again."""
    await s.archive([t.id])
    assert await s.carry_again([t.id]) == 1


async def _repair(s, t):
    """An outside edit leaves the row unreadable (never ledgered); the repair from its insert's image is."""
    [insert] = await s.history(t.id)
    await s.run(lambda raw: raw.execute("UPDATE memories SET type = 'gossip' WHERE id = ?", (t.id,)))
    assert await s.repair(t.id, insert.seq, ["importance"]) == 1


MUTATORS = {
    "write": (_write, "update", True),
    "write_many": (_write_many, "update", True),
    "update": (_update, "update", True),
    "delete": (_delete, "delete", False),
    "purge": (_purge, "purge", False),
    "withdraw": (_withdraw, "withdraw", False),
    "archive": (_archive, "archive", True),
    "restore": (_restore, "restore", True),
    "set_visibility": (_set_visibility, "visibility", True),
    "set_pinned": (_set_pinned, "pin", True),
    "prune[archive]": (_prune_archive, "archive", True),
    "prune[purge]": (_prune_purge, "purge", False),
    "supersede": (_supersede, "supersede", True),
    "make_current": (_make_current, "make_current", True),
    "reinforce": (_reinforce, "reinforce", True),
    "repair": (_repair, "revert", True),
    "stand_alone": (_stand_alone, "restore", True),
    "carry_again": (_carry_again, "restore", True),
}
# SQLite's alone: a server store's rows are left to the server's tools (test_postgres_store.py).
SQLITE_ONLY_MUTATORS = {"repair", "stand_alone", "carry_again"}

# Public coroutines that never change what is remembered. record_access only
# bumps access counters (documented, unledgered bookkeeping); ensure_vec loads
# an extension; run is the escape hatch for memory/sqlite/ SQL, covered by the
# static test below. (write_locked, a context manager and so not listed, holds
# the write lock around writes that are each one of the mutators here.)
NON_MUTATORS = {
    "connect", "aclose", "health_check", "schema_version", "run", "ensure_vec", "search",
    "keyword_candidates", "keyword_leg", "semantic_leg", "nearest_many", "turn_context", "vector_pin", "admitted_by_id", "get", "get_many", "find_by_prefix", "ledger_ids", "record_access", "history", "ledger",
    "count", "versions", "held_beside", "withheld", "open_conflicts", "removed", "page", "page_after", "census", "growth", "recall_activity",
    "sources", "carriers", "carried", "digests", "session_neighbours", "written_in_session",
}


def test_every_public_coroutine_is_classified():
    """A new public method must be added to MUTATORS (and proven) or to NON_MUTATORS."""
    public = {
        name
        for name, fn in inspect.getmembers(SQLiteAdapter, inspect.iscoroutinefunction)
        if not name.startswith("_")
    }
    mutators = {name.split("[")[0] for name in MUTATORS}
    assert public - mutators - NON_MUTATORS == set()
    assert mutators & NON_MUTATORS == set()


@pytest.mark.sqlite_only("it reads the SQLite ledger table through the driver (PostgreSQL: tests/contract/test_postgres_store.py)")
@pytest.mark.parametrize("name", list(MUTATORS))
async def test_mutator_leaves_a_ledger_row(store, name):
    action, op, has_after = MUTATORS[name]
    target = entry("ledger target", importance=0.2, visibility=Visibility.PRIVATE)
    bystander = entry("ledger bystander", importance=0.9, pinned=True)
    await store.write_many([target, bystander])
    start = await store.run(lambda raw: raw.execute("SELECT max(seq) FROM memory_ledger").fetchone()[0])
    t0 = time.time()

    await action(store, target)

    rows = await store.run(
        lambda raw: raw.execute("SELECT * FROM memory_ledger WHERE seq > ? ORDER BY seq", (start,)).fetchall()
    )
    mine = [r for r in rows if r["memory_id"] == target.id]
    assert mine, f"{name} left no ledger row"
    assert all(r["memory_id"] == target.id for r in rows), "a bystander was ledgered"
    last = (await store.history(target.id))[-1]
    assert last.op == op
    assert last.actor.startswith("test")
    assert t0 - 1 <= last.at.timestamp() <= time.time() + 1
    assert last.before is not None and set(last.before) == set(COLUMNS)
    assert last.before["visibility"] in {v.value for v in Visibility}
    if has_after:
        assert set(last.after) == set(COLUMNS) and last.after["visibility"]
        assert last.before != last.after
    else:
        assert last.after is None
        assert await store.get(target.id, audience=Audience.OPERATOR, include_archived=True) is None


async def test_insert_is_ledgered_with_after_image(store):
    new = entry("brand new", visibility=Visibility.HIDDEN)
    await store.write(new)
    [record] = await store.history(new.id)
    assert (record.op, record.before, record.after["visibility"]) == ("insert", None, "hidden")


async def test_one_id_twice_in_a_batch_is_an_insert_then_an_update(store):
    first = entry("first version")
    ops = await store.write_many([first, first.model_copy(update={"content": "second version"}), first])
    assert ops == ["insert", "update", "update"]
    records = await store.history(first.id)
    assert [r.op for r in records] == ["insert", "update", "update"]
    assert records[1].before["content"] == "first version" and records[1].after["content"] == "second version"
    assert (await store.get(first.id)).content == "first version"


async def test_noop_writes_and_noop_changes_leave_no_row(store):
    same = entry("unchanged")
    await store.write(same)
    await store.write(same)
    await store.set_pinned([same.id], False)  # already unpinned
    assert await store.restore([same.id]) == 0  # not archived
    assert [r.op for r in await store.history(same.id)] == ["insert"]


@pytest.mark.sqlite_only("SQLite's ledger triggers (PostgreSQL: test_postgres_store.py)")
async def test_ledger_rejects_update_and_delete(store):
    await store.write(entry("append only"))
    await store.aclose()
    raw = dbapi().connect(str(store.path))
    try:
        # taking the words out of the images is a purge's alone (migration v11): this memory is live
        words = "UPDATE memory_ledger SET after = json_set(after, '$.content', 'x')"
        for statement in ("UPDATE memory_ledger SET op = 'forged'", "DELETE FROM memory_ledger", words):
            with pytest.raises(dbapi().DatabaseError, match="append-only"):
                raw.execute(statement)
        assert raw.execute("SELECT count(*) FROM memory_ledger").fetchone()[0] == 1
    finally:
        raw.close()


@pytest.mark.sqlite_only("the SQLite purge erases its words from the ledger (PostgreSQL keeps them)")
async def test_a_purge_takes_the_words_out_of_the_ledger_and_keeps_what_happened(store):
    gone, kept = entry("the vault code is 7731", tags=["vaultish"]), entry("the boathouse code is 4410", tags=["boat"])
    await store.write_many([gone, kept])
    await store.update(gone.id, content="the vault code is 7732")
    await store.set_pinned([gone.id], True)
    assert await store.purge([gone.id]) == 1
    history = await store.history(gone.id)
    assert [r.op for r in history] == ["insert", "update", "pin", "purge"]
    assert [r.changed_fields() for r in history] == [["(created)"], ["content"], ["pinned"], ["(removed)"]]
    images = [i for r in history for i in (r.before, r.after) if i is not None]
    assert {i["content"] for i in images} == {"[purged]", "[purged] (earlier text)"}
    assert {i["tags"] for i in images} == {"[]"} and all(i["id"] == gone.id and i["importance"] == 0.5 for i in images)
    # the control: the memory beside it keeps its words, in its ledger and its row
    assert (await store.history(kept.id))[0].after["content"] == kept.content
    assert (await store.history(kept.id))[0].after["tags"] == '["boat"]'
    await store.aclose()
    raw = dbapi().connect(str(store.path))
    try:  # the words, and nothing else, of a purged memory only
        for statement in ("UPDATE memory_ledger SET op = 'forged' WHERE memory_id = ?",
                          "UPDATE memory_ledger SET after = json_set(after, '$.importance', 1) WHERE memory_id = ?"):
            with pytest.raises(dbapi().DatabaseError, match="append-only"):
                raw.execute(statement, (gone.id,))
    finally:
        raw.close()


@pytest.mark.sqlite_only("it breaks the SQLite ledger with a trigger")
async def test_a_failed_ledger_append_rolls_the_mutation_back(store):
    """Same transaction: if the ledger row cannot be written, the change does not commit."""
    kept = entry("committed before the fault")
    await store.write(kept)
    await store.run(
        lambda raw: raw.execute(
            "CREATE TRIGGER test_ledger_fault BEFORE INSERT ON memory_ledger BEGIN SELECT RAISE(ABORT, 'fault'); END"
        )
    )
    lost = entry("never committed")
    with pytest.raises(MemoryStorageError, match="fault"):
        await store.write(lost)
    with pytest.raises(MemoryStorageError, match="fault"):
        await store.archive([kept.id])
    await store.run(lambda raw: raw.execute("DROP TRIGGER test_ledger_fault"))
    assert await store.get(lost.id, audience=Audience.OPERATOR, include_archived=True) is None
    assert [e.id for e in await store.search(MemoryQuery(text="committed"))] == [kept.id]


# -- static: one way in for writes -------------------------------------------

_WRITE_TO_MEMORIES = re.compile(
    r"\b(?:INSERT(?:\s+OR\s+\w+)?\s+INTO|REPLACE\s+INTO|UPDATE(?:\s+OR\s+\w+)?|DELETE\s+FROM)\s+[\"'`\[]?memories\b(?!_)",
    re.IGNORECASE,
)
_ALLOWED = {Path("memory/sqlite/mutations.py"), Path("memory/postgres/mutations.py")}


def _offenders(root: Path) -> list[str]:
    found = []
    for package in ("memory", "arcana_cli"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root)
            if relative in _ALLOWED or relative.parts[:2] == ("memory", "migrations"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if _WRITE_TO_MEMORIES.search(line):
                    found.append(f"{relative}:{number}: {line.strip()}")
    return found


def test_no_module_writes_memories_outside_mutations():
    assert _offenders(ROOT) == []


def test_the_static_check_can_fail(tmp_path):
    rogue = tmp_path / "memory" / "rogue.py"
    rogue.parent.mkdir()
    rogue.write_text('SQL = "UPDATE memories SET archived = 1"\nOK = "UPDATE memories_fts SET x = 1"\n')
    (tmp_path / "arcana_cli").mkdir()
    assert _offenders(tmp_path) == ['memory/rogue.py:1: SQL = "UPDATE memories SET archived = 1"']


@pytest.mark.sqlite_only("the hold is SQLite's write lock (a server tier's edits are not held across stores)")
async def test_writes_under_a_held_write_lock_are_each_ledgered_and_stand(store):
    """``write_locked`` keeps every other writer out until the block ends; what was written inside
    stands (ledgered) even when the block then fails, and a write refused inside leaves nothing."""
    target, other = entry("held target", importance=0.2), entry("held bystander", importance=0.2)
    await store.write_many([target, other])
    token = LOCK_WAIT.set(0.2)
    try:
        rival = SQLiteAdapter(store.path, actor="test-rival")
        await rival.connect()
    finally:
        LOCK_WAIT.reset(token)
    try:
        with pytest.raises(RuntimeError):
            async with store.write_locked():
                assert await store.archive([target.id]) == 1
                with pytest.raises(StaleEditError):
                    await store.set_pinned([other.id], True, expect_seq=0)
                with pytest.raises(MemoryBusyError):
                    await rival.set_pinned([other.id], True)
                raise RuntimeError("after the change")
        assert [r.op for r in await store.history(target.id)] == ["insert", "archive"]
        assert [r.op for r in await store.history(other.id)] == ["insert"]
        assert await rival.set_pinned([other.id], True) == 1  # released: the control writes
    finally:
        await rival.aclose()
