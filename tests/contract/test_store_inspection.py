"""What the web view reads beside the memories, on the store itself (both engines: see
test_postgres_store.py): a census by state, growth from the ledger, recall activity per day,
a listing paged in SQL, and operator edits guarded by the memory's newest ledger seq."""

from __future__ import annotations

import pytest

from factories import entry
from memory.errors import StaleEditError
from memory.inspection import Growth
from memory.types import Audience
from memory.types import MemoryQuery, Visibility


async def test_census_counts_each_state(store):
    rows = [entry(f"census row {i}") for i in range(6)]
    await store.write_many(rows)
    await store.archive([rows[0].id])
    await store.set_visibility([rows[1].id], Visibility.HIDDEN)
    await store.set_visibility([rows[2].id], Visibility.PRIVATE)
    await store.supersede([rows[3].id], rows[4].id)
    census = await store.census()
    assert (census.total, census.archived, census.hidden, census.private, census.superseded) == (6, 1, 1, 1, 1)
    assert census.recallable == 2  # rows 4 and 5: the control that the states do not swallow everything



async def test_census_and_counts_follow_each_change_of_state(store):
    rows = [entry(f"census row {i}") for i in range(6)]
    await store.write_many(rows)
    await store.archive([rows[0].id])
    await store.archive([rows[0].id])  # again: nothing moves
    await store.set_visibility([rows[1].id], Visibility.HIDDEN)
    await store.supersede([rows[3].id], rows[4].id)
    await store.restore([rows[0].id])
    await store.set_visibility([rows[1].id], Visibility.VISIBLE)
    await store.archive([rows[2].id])
    await store.purge([rows[5].id, rows[2].id])  # one live, one archived
    await store.update(rows[4].id, content="census row 4, edited")  # touches no state
    census = await store.census()
    assert (census.total, census.recallable, census.archived, census.hidden, census.private, census.superseded) == (
        4, 3, 0, 0, 0, 1)
    assert (await store.count(), await store.count(include_archived=False)) == (4, 4)
    await store.archive([rows[4].id])
    assert (await store.count(), await store.count(include_archived=False)) == (4, 3)


async def _steps(store, coroutine) -> int:
    """SQLite VM steps ``coroutine`` took on the store's connection: how much it read, not how long."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    await store.run(lambda raw: raw.set_progress_handler(step, 1))
    try:
        await coroutine
    finally:
        await store.run(lambda raw: raw.set_progress_handler(None, 0))
    return steps[0]


@pytest.mark.sqlite_only("it counts SQLite VM steps")
async def test_census_and_counts_read_the_same_at_any_size(store):
    """The web view's first page takes every listed store's census, and the consolidation check after
    every `arcana run` turn that wrote counts the live rows: both read every row (135 ms and 19 ms at
    300,000 rows) until the census became one row kept by triggers."""
    asks = (store.census, store.count, lambda: store.count(include_archived=False))
    await store.write_many([entry(f"fact number {i}") for i in range(20)])
    small = [await _steps(store, ask()) for ask in asks]
    await store.write_many([entry(f"more fact number {i}") for i in range(2000)])
    assert [await _steps(store, ask()) for ask in asks] == small
    # Positive control: the steps follow what is read, so a search over the whole table grows with it.
    scan = "SELECT count(*) FROM memories WHERE content LIKE '%fact%'"
    assert await _steps(store, store.run(lambda raw: raw.execute(scan).fetchone())) > 2000

async def test_growth_read_in_steps_sums_as_one_pass(store):
    first = [entry(f"grown {i}") for i in range(5)]
    await store.write_many(first)
    early = await store.growth()
    await store.write_many([entry(f"later {i}") for i in range(3)])
    await store.purge([first[0].id])
    await store.archive([first[1].id])  # neither an add nor a removal
    whole = await store.growth()
    assert early.extend(await store.growth(early.seq)) == whole
    assert sum(a for _, a, _ in whole.days) == 8 and sum(r for _, _, r in whole.days) == 1
    assert whole.stored()[-1][1] == 7 == await store.count()
    assert await store.growth(whole.seq) == Growth(whole.seq)  # nothing new: nothing read


async def test_recall_activity_counts_recalls_and_what_they_returned(store):
    await store.write_many([entry("activity heron one"), entry("activity heron two"), entry("unrelated")])
    assert await store.recall_activity() == []
    await store.search(MemoryQuery(text="heron"))
    await store.search(MemoryQuery(text="nothing matches this"))
    await store.search(MemoryQuery(text="heron"), audience=Audience.OPERATOR)  # an operator read is not a recall
    days = await store.recall_activity()
    assert [(d.recalls, d.hits) for d in days] == [(2, 2)]
    await store.search(MemoryQuery(text="heron one", limit=1))
    assert [(d.recalls, d.hits) for d in await store.recall_activity()] == [(3, 3)]


async def test_a_listing_paged_in_sql_covers_every_row_once(store):
    rows = [entry(f"paged {i}", importance=(i % 3) / 3) for i in range(23)]
    await store.write_many(rows)
    await store.set_visibility([rows[5].id], Visibility.HIDDEN)
    whole = await store.search(MemoryQuery(limit=100), audience=Audience.OPERATOR)
    pages = [await store.page(MemoryQuery(limit=10), offset=o, audience=Audience.OPERATOR) for o in (0, 10, 20)]
    assert [e.id for page in pages for e in page] == [e.id for e in whole] and len(whole) == 23
    listed = [e.id for o in (0, 10, 20) for e in await store.page(MemoryQuery(limit=10), offset=o)]
    assert rows[5].id not in listed and len(listed) == 22  # a listing admits what recall may see
    with pytest.raises(ValueError):
        await store.page(MemoryQuery(limit=10), audience=Audience.RECALL)


async def test_a_walk_past_the_last_row_covers_every_row_once(store):
    """A restore checks a server's copies a page at a time: paged by OFFSET, each page sorted and
    skipped every row before it (quadratic in an agent's copies); each page now starts past the last."""
    rows = [entry(f"walked {i}", importance=(i % 3) / 3) for i in range(23)]
    other = entry("walked, another agent's", agent_id="other")
    await store.write_many([*rows, other])
    await store.set_visibility([rows[5].id], Visibility.HIDDEN)
    query, walked, after = MemoryQuery(agent_id=rows[0].agent_id, limit=10), [], 0
    while True:
        page, last = await store.page_after(query, after, audience=Audience.OPERATOR)
        if last == after:
            break
        walked.append([e.id for e in page])
        after = last
    assert [len(p) for p in walked] == [10, 10, 3] and [i for p in walked for i in p] == [e.id for e in rows]
    listed, _ = await store.page_after(MemoryQuery(limit=30))
    assert rows[5].id not in {e.id for e in listed} and len(listed) == 23  # a listing admits what recall may see
    with pytest.raises(ValueError):
        await store.page_after(query, audience=Audience.RECALL)


@pytest.mark.sqlite_only("it counts SQLite VM steps")
async def test_a_walk_reads_the_same_for_its_last_page_as_for_its_first(store):
    await store.write_many([entry(f"walked {i}") for i in range(2000)])
    query = MemoryQuery(agent_id="a1", limit=10)
    _, first = await store.page_after(query, audience=Audience.OPERATOR)
    firsts = await _steps(store, store.page_after(query, audience=Audience.OPERATOR))
    lasts = await _steps(store, store.page_after(query, first + 1980, audience=Audience.OPERATOR))
    assert lasts == firsts
    # Positive control: the same page by OFFSET reads every row before it.
    assert await _steps(store, store.page(query, offset=1980, audience=Audience.OPERATOR)) > 10 * firsts


async def test_an_edit_guarded_by_a_stale_seq_is_refused_and_writes_nothing(store):
    target, other = entry("guarded row"), entry("guarded bystander")
    await store.write_many([target, other])
    seen = (await store.history(target.id))[-1].seq
    await store.set_pinned([target.id], True)  # someone else changes it after the page was drawn
    with pytest.raises(StaleEditError, match="changed since it was shown"):
        await store.archive([target.id], expect_seq=seen)
    assert not (await store.get(target.id)).archived and len(await store.history(target.id)) == 2
    current = (await store.history(target.id))[-1].seq
    assert await store.archive([target.id], expect_seq=current) == 1  # the control: the current seq applies
    assert (await store.get(target.id, audience=Audience.OPERATOR, include_archived=True)).archived
    with pytest.raises(ValueError):
        await store.restore([target.id, other.id], expect_seq=current)
