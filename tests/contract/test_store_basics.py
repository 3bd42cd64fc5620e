"""SQLiteAdapter lifecycle and single-entry operations against real files."""

from __future__ import annotations

import pytest
from engines import open_store
from factories import entry

from memory.adapters import sqlite as sqlite_adapter
from memory.adapters.sqlite import SQLiteAdapter
from memory.errors import InvalidRequestError, MemoryStorageError, NotFoundError
from memory.limits import MAX_CONTENT_BYTES
from memory.sqlite.connection import dbapi, has_fts5
from memory.types import MAX_ACCESS_COUNT, Audience, MemoryQuery, MemoryScope, MemoryType


async def test_connect_is_implicit_on_first_use(tmp_path):
    store = SQLiteAdapter(tmp_path / "implicit.db")
    assert not (tmp_path / "implicit.db").exists()
    await store.write(entry("written before any connect"))
    try:
        assert (tmp_path / "implicit.db").exists()
        assert await store.count() == 1
    finally:
        await store.aclose()


@pytest.mark.sqlite_only("it counts SQLite connections")
async def test_connect_is_idempotent(store):
    await store.connect()
    first = store.connection
    await store.connect()
    assert store.connection is first
    await store.write(entry("still one connection"))
    assert store.connection is first


async def test_aclose_is_idempotent_and_reopens(tmp_path):
    store = SQLiteAdapter(tmp_path / "close.db")
    await store.aclose()  # never connected: a no-op
    await store.write(entry("survives close"))
    await store.aclose()
    await store.aclose()
    with pytest.raises(MemoryStorageError):
        store.connection  # noqa: B018 - closed means closed
    found = await store.search(MemoryQuery(text="survives"))  # reconnects implicitly
    assert [e.content for e in found] == ["survives close"]
    await store.aclose()


async def test_health_check_ok_on_a_real_store(store):
    status = await store.health_check()
    assert status.healthy, status.message


async def test_health_check_never_raises_on_garbage(tmp_path):
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database, just bytes " * 200)
    store = SQLiteAdapter(garbage)  # no quarantine dir: corruption stays an error
    status = await store.health_check()
    assert not status.healthy
    assert "garbage.db" in status.message
    await store.aclose()


async def test_health_check_never_raises_on_unopenable_path(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("x")
    status = await SQLiteAdapter(blocker / "sub" / "memory.db").health_check()
    assert not status.healthy


async def test_write_upserts_by_id(store):
    original = entry("first version", importance=0.3)
    await store.write(original)
    await store.write(original.model_copy(update={"content": "second version", "importance": 0.8}))
    assert await store.count() == 1
    got = await store.get(original.id)
    assert got.content == "second version"
    assert got.importance == pytest.approx(0.8)
    # The index followed the content change: old words gone, new words found.
    assert await store.search(MemoryQuery(text="first")) == []
    assert [e.id for e in await store.search(MemoryQuery(text="second"))] == [original.id]


async def test_write_many_reports_ops(store):
    a, b = entry("alpha note"), entry("beta note")
    assert await store.write_many([a, b]) == ["insert", "insert"]
    assert await store.write_many([a, b.model_copy(update={"content": "beta changed"})]) == ["noop", "update"]


async def test_get_round_trips_every_field(store):
    original = entry(
        "round trip of every field",
        type=MemoryType.PROCEDURAL,
        importance=0.7,
        pinned=True,
        confidence=0.6,
        tags=["x", "y"],
        source_session_id="s1",
        conflict_with="other",
    )
    await store.write(original)
    got = await store.get(original.id)
    for field in ("id", "agent_id", "type", "content", "scope", "importance", "pinned", "confidence", "tags",
                  "source_session_id", "conflict_with", "created_at"):
        assert getattr(got, field) == getattr(original, field), field
    assert await store.get("no-such-id") is None


async def test_an_access_count_past_32_bits_is_held_as_on_sqlite(store):
    """PostgreSQL's access_count was a 32-bit column: a write carrying a count SQLite holds (an import
    line) failed on a server with its whole batch, reported as an unreachable server."""
    big = entry("counted past two billion", access_count=2**40)
    small = entry("counted a little", access_count=3)
    assert await store.write_many([big, small]) == ["insert", "insert"]
    got = await store.get(big.id, audience=Audience.OPERATOR)
    assert got.access_count == 2**40
    assert (await store.get(small.id, audience=Audience.OPERATOR)).access_count == 3  # positive control


async def test_counting_reads_saturates_at_the_largest_access_count(store, tmp_path, request):
    """A memory already at the largest count (an import line may carry it) read again: SQLite stored the
    overflowing sum as a float that no later read could take, so the whole tier failed every recall;
    PostgreSQL refused the flush and dropped every other memory's hits with it."""
    full = entry("harbour log already read as often as can be counted", access_count=MAX_ACCESS_COUNT)
    fresh = entry("harbour log read for the first time")
    await store.write_many([full, fresh])
    assert {e.id for e in await store.search(MemoryQuery(text="harbour"))} == {full.id, fresh.id}
    assert await store.reinforce(full.id, 0.1) == 1
    await store.aclose()  # flushes the buffered hits
    again = open_store(request.node.callspec.params["store"], tmp_path, request)
    try:
        found = {e.id: e.access_count for e in await again.search(MemoryQuery(text="harbour"))}
        assert found == {full.id: MAX_ACCESS_COUNT, fresh.id: 1}  # fresh: the positive control
    finally:
        await again.aclose()


async def test_content_over_the_limit_refuses_the_whole_write(store):
    """A server store took content of any size (an agent's MCP remember into a server pool stored
    2 MiB) where a SQLite store refuses it: both refuse the call before writing anything."""
    at_limit = entry("x" * MAX_CONTENT_BYTES)
    assert await store.write_many([at_limit]) == ["insert"]  # positive control: the limit itself is fine
    over, beside = entry("y" * (MAX_CONTENT_BYTES + 1)), entry("a fact written with it")
    with pytest.raises(InvalidRequestError, match="over the limit"):
        await store.write_many([beside, over])
    with pytest.raises(InvalidRequestError, match="over the limit"):
        await store.update(at_limit.id, content="z" * (MAX_CONTENT_BYTES + 1))
    tagged = entry("a fact whose tags are over the limit together")
    tagged.tags = ["t" * (MAX_CONTENT_BYTES // 2), "u" * (MAX_CONTENT_BYTES // 2 + 1)]
    with pytest.raises(InvalidRequestError, match="tags are 1,048,577 bytes together"):
        await store.write_many([beside, tagged])
    listed = await store.search(MemoryQuery(), audience=Audience.OPERATOR, include_archived=True)
    assert [(e.id, len(e.content)) for e in listed] == [(at_limit.id, MAX_CONTENT_BYTES)]


async def test_a_nul_character_is_refused_alike_and_tag_filters_keep_working(store):
    """SQLite stored a NUL in content or a tag; a server pool refused the content as if the server were down,
    and took the tag, after which every tag-filtered read of the pool failed (jsonb has no NUL)."""
    kept = entry("a tagged fact", tags=["work"])
    assert await store.write_many([kept]) == ["insert"]  # positive control
    for bad in (entry("before\x00after"), entry("a fact with an odd tag", tags=["a\x00b"])):
        with pytest.raises(InvalidRequestError, match="NUL character"):
            await store.write_many([entry("written beside it"), bad])
    with pytest.raises(InvalidRequestError, match="NUL character"):
        await store.update(kept.id, tags=["work", "x\x00"])
    assert [e.id for e in await store.search(MemoryQuery(tags=["work"]))] == [kept.id]
    listed = await store.search(MemoryQuery(), audience=Audience.OPERATOR, include_archived=True)
    assert [(e.id, e.tags) for e in listed] == [(kept.id, ["work"])]


async def test_delete(store):
    keep, drop = entry("keep me"), entry("drop me")
    await store.write_many([keep, drop])
    assert await store.delete(drop.id) is True
    assert await store.delete(drop.id) is False
    assert await store.get(drop.id, audience=Audience.OPERATOR, include_archived=True) is None
    assert (await store.get(keep.id)).content == "keep me"
    assert await store.search(MemoryQuery(text="drop")) == []


async def test_update_unknown_id_raises_not_found(store):
    with pytest.raises(NotFoundError):
        await store.update("missing", importance=0.1)


@pytest.mark.sqlite_only("FTS5 is SQLite's")
async def test_fts5_is_present_in_the_driver_we_use(store):
    """The missing-FTS5 branch of connect cannot be exercised on these machines.

    Every SQLite here (stdlib on each pyenv build, Debian's, pysqlite3-binary) is
    compiled with FTS5, and a compiled-in module cannot be removed from Python.
    This pins the probe the branch depends on: if it ever reported False on a
    build with FTS5, connect would refuse every store.
    """
    await store.connect()
    assert await has_fts5(store.connection) is True
    raw = dbapi().connect(":memory:")
    raw.execute("CREATE VIRTUAL TABLE t USING fts5(x)")  # the probe agrees with reality
    raw.close()


# -- promotion -----------------------------------------------------------------


@pytest.fixture
async def promoting(tmp_path):
    global_store = SQLiteAdapter(tmp_path / "global.db")
    private = SQLiteAdapter(tmp_path / "private.db", global_store=global_store)
    yield private, global_store
    await private.aclose()
    await global_store.aclose()


async def test_promotion_of_important_private_entries(promoting):
    private, global_store = promoting
    high = entry("promote this one", importance=0.9)
    low = entry("keep this one local", importance=0.89)
    shared = entry("shared already", importance=0.95, scope=MemoryScope.SHARED, pool_name="team")
    await private.write_many([high, low, shared])
    promoted = await global_store.search(MemoryQuery(limit=10))
    assert [e.id for e in promoted] == [high.id]
    assert promoted[0].scope is MemoryScope.GLOBAL
    assert promoted[0].pool_name is None
    assert await private.count() == 3  # the private copy stays


async def test_promotion_failure_degrades_without_losing_the_private_write(tmp_path):
    blocker = tmp_path / "blocker"
    blocker.write_text("a file where a directory should be")
    broken_global = SQLiteAdapter(blocker / "global.db")
    private = SQLiteAdapter(tmp_path / "private.db", global_store=broken_global)
    important = entry("must not be lost", importance=1.0)
    await private.write(important)
    assert (await private.get(important.id)).content == "must not be lost"
    assert private.promotion_errors and important.id in private.promotion_errors[0]
    await private.aclose()
    await broken_global.aclose()


async def test_concurrent_first_use_opens_one_connection(tmp_path):
    """Five calls race to connect; one connection (one aiosqlite thread) must result."""
    import asyncio
    import threading

    store = SQLiteAdapter(tmp_path / "race.db")
    before = set(threading.enumerate())
    try:
        results = await asyncio.gather(*(store.search(MemoryQuery(text="anything")) for _ in range(5)))
        assert results == [[]] * 5
        started = [t for t in threading.enumerate() if t not in before]
        assert len(started) == 1
    finally:
        await store.aclose()
    started[0].join(timeout=5)
    assert not started[0].is_alive()


async def test_a_restatement_reinforces_only_a_live_current_memory(store):
    """The reconciler finds a restated memory, then bumps it in a transaction of its own: one archived
    (a prune) or ended in between was bumped anyway and the write reported saved into it. Now the
    bump changes nothing there (0), and the write is stored instead."""
    live, archived, ended, newer = (entry(t) for t in ("tea at four", "coffee at nine", "lunch at one", "lunch at two"))
    await store.write_many([live, archived, ended, newer])
    await store.archive([archived.id])
    await store.supersede([ended.id], newer.id)
    assert await store.reinforce(live.id, 0.1) == 1  # control
    assert await store.reinforce(archived.id, 0.1) == 0 and await store.reinforce(ended.id, 0.1) == 0
    rows = {e.id: e for e in await store.search(MemoryQuery(), audience=Audience.OPERATOR, include_archived=True)}
    assert rows[live.id].importance > live.importance
    assert (rows[archived.id].importance, rows[ended.id].importance) == (archived.importance, ended.importance)


async def test_an_id_prefix_of_any_length_is_looked_up_not_refused(store):
    """SQLite refuses a LIKE pattern over 50,000 bytes, so a 60,000-character id (pasted, or an MCP
    tool's argument) failed `memory show` as a storage error (exit 5) naming the store: the store was
    fine, the id just names nothing. Each engine answers no match; a real id's prefix (the control)
    and its upper-case spelling (ids are looked up as typed, case folded on a miss) still find it, on
    both engines (a server pool answered the upper-case spelling with "no memory")."""
    kept = entry("an ordinary memory", id="abcdef12-0000-4000-8000-000000000002")  # letters: upper case differs
    await store.write(kept)
    assert [e.id for e in await store.find_by_prefix(kept.id[:8])] == [kept.id]
    assert await store.ledger_ids(kept.id[:8]) == [kept.id]
    assert await store.find_by_prefix("a" * 60_000) == [] and await store.ledger_ids("%" * 60_000) == []
    assert await store.find_by_prefix(kept.id[:7] + "%") == []  # a wildcard is a character, not a pattern
    assert [e.id for e in await store.find_by_prefix(kept.id[:8].upper())] == [kept.id]
    assert await store.ledger_ids(kept.id[:8].upper()) == [kept.id]


async def test_a_prefix_lookup_admits_in_sql_so_its_limit_counts_only_readable_rows(store):
    """An agent's prefix lookup took the operator's first rows and admitted them afterwards, so a
    visible match behind a limit's worth of hidden (or another agent's) rows was never seen. Admitted
    in the query, the one visible own row is found; the operator's default lookup still sees them all."""
    from memory.types import Visibility

    hidden = [entry(f"hidden {n}", id=f"feed0000-0000-4000-8000-{n:012d}", visibility=Visibility.HIDDEN) for n in range(3)]
    others = [entry(f"other {n}", agent_id="b2", id=f"feed0000-0000-4000-8001-{n:012d}") for n in range(3)]
    mine = entry("mine", id="feed0000-0000-4000-8002-000000000000")
    await store.write_many([*hidden, *others, mine])
    agent = dict(query=MemoryQuery(agent_id="a1"), audience=Audience.LISTING, include_archived=False)
    assert [e.id for e in await store.find_by_prefix("feed0000", limit=2, **agent)] == [mine.id]
    assert len(await store.find_by_prefix("feed0000", limit=10)) == 7  # the control: the operator sees every row
    assert await store.find_by_prefix("feed0000-0000-4000-8000", limit=10, **agent) == []


@pytest.mark.sqlite_only("it reads SQLite's query plans")
async def test_an_id_prefix_as_typed_is_found_through_the_id_index(store):
    """Every prefix lookup (`memory show 1a2b3c`, an MCP get, the ledger's ids) folded case in SQL, which no
    index answers: 149 ms a lookup at 300,000 rows, a full read of the table. A prefix as typed is now a
    range on the id index; the case-folded scan runs only when nothing matches as typed (the control:
    the upper-case spelling of a lower-case id is still found, by that scan). The id has letters in its
    first eight characters: a random one of only digits (2% of them) spells the same in upper case."""
    kept = entry("an ordinary memory", id="abcdef12-0000-4000-8000-000000000001")
    await store.write_many([kept, entry("another memory")])
    plans: list[str] = []

    for prefix in (kept.id[:8], kept.id[:8].upper()):
        seen: list[str] = []
        await store.run(lambda raw: raw.set_trace_callback(seen.append))
        try:
            found = [e.id for e in await store.find_by_prefix(prefix)]
            ledger = await store.ledger_ids(prefix)
        finally:
            await store.run(lambda raw: raw.set_trace_callback(None))
        assert found == [kept.id] and ledger == [kept.id]
        plans.append(" | ".join(s for s in seen if "substr(" in s))
    assert plans[0] == ""  # as typed: no statement folded case over every row
    assert plans[1].count("substr(") == 2  # the control: the upper-case spelling took the scan, and found it
    plan = await store.run(lambda raw: raw.execute(
        f"EXPLAIN QUERY PLAN SELECT 1 FROM memories m WHERE {sqlite_adapter._IN_RANGE.format(col='m.id')}",
        ("a", "b")).fetchall())
    assert "USING" in plan[0][-1] and "INDEX" in plan[0][-1], plan
