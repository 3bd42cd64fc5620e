"""Pruning a store: one victim set from floor and cap, pinned never touched, archive restorable,
purge final, dry runs inert; run on both engines (the CLI around it: tests/cli/test_prune.py)."""

from __future__ import annotations

import hashlib

import pytest
from factories import entry

from memory.adapters.sqlite import SQLiteAdapter
from memory.types import Audience, MemoryQuery, PruneMode, PrunePolicy

# Keyword-only homes: these tests are about the store, not the embedding model.
pytestmark = pytest.mark.usefixtures("no_embedder")


@pytest.fixture
async def ten(store):
    """Importance 0.0 .. 0.9, plus one pinned entry at importance 0."""
    entries = [entry(f"prune probe {i}", importance=i / 10) for i in range(10)]
    pinned = entry("prune probe pinned", importance=0.0, pinned=True)
    await store.write_many([*entries, pinned])
    return entries, pinned


def importances(entries, ids) -> list[float]:
    by_id = {e.id: e.importance for e in entries}
    return sorted(by_id[i] for i in ids)


@pytest.mark.parametrize(
    "floor, cap, expected",
    [
        (0.3, None, [0.0, 0.1, 0.2]),
        (None, 7, [0.0, 0.1, 0.2, 0.3]),  # 11 live (pinned counts), keep 7
        (0.5, 9, [0.0, 0.1, 0.2, 0.3, 0.4]),  # cap's victims are inside the floor's
        (0.15, 6, [0.0, 0.1, 0.2, 0.3, 0.4]),  # cap reaches past the floor
        (1.0, None, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),
        (None, 0, [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9]),
    ],
)
async def test_floor_and_cap_compose_into_one_victim_set(store, ten, floor, cap, expected):
    entries, pinned = ten
    report = await store.prune(PrunePolicy(min_importance=floor, max_entries=cap))
    assert pinned.id not in report.victim_ids
    assert importances(entries, report.victim_ids) == pytest.approx(expected)
    assert len(set(report.victim_ids)) == len(report.victim_ids) == report.archived
    assert report.scanned == 11
    assert (await store.get(pinned.id)).pinned  # untouched and still recalled


async def test_a_cap_removes_derived_memories_before_any_fact(store):
    """A summary outweighing the fact it repeats still goes first; a pinned summary stays (control)."""
    fact = entry("I prefer tea over coffee", importance=0.3)
    other = entry("The ferry leaves at nine", importance=0.2)
    summaries = [entry(f"Session summary {i}", importance=0.9, tags=["derived"]) for i in range(3)]
    pinned = entry("Session summary pinned", importance=0.0, tags=["derived"], pinned=True)
    await store.write_many([fact, other, *summaries, pinned])
    report = await store.prune(PrunePolicy(max_entries=3))
    assert set(report.victim_ids) == {s.id for s in summaries[:3]}
    report = await store.prune(PrunePolicy(max_entries=2))
    assert report.victim_ids == [other.id]  # with no derived memory left to take, the lowest fact goes


@pytest.mark.sqlite_only("consolidation edges live in SQLite stores only")
async def test_a_cap_keeps_what_recall_returns_and_what_carries_others(store):
    """Among equal importance, a memory recall keeps returning and a consolidated memory with
    sources outlive two never recalled, though both are older; the older of those goes first."""
    from datetime import UTC, datetime

    from memory.graph.edges import EdgeStore, MemoryEdge
    from memory.sqlite.consolidation import SOURCES

    day = lambda d: datetime(2024, 1, d, tzinfo=UTC)  # noqa: E731
    recalled = entry("harbour note kelp", importance=0.5, created_at=day(1), access_count=8, last_accessed_at=day(2))
    digest = entry("harbour note gull", importance=0.5, created_at=day(1))
    old, new = entry("harbour note tide", importance=0.5, created_at=day(5)), entry("harbour note buoy", importance=0.5, created_at=day(6))
    source = entry("harbour note source", importance=0.5, created_at=day(1), archived=True)
    await store.write_many([recalled, digest, old, new, source])
    await EdgeStore(store).upsert([MemoryEdge(digest.id, source.id, SOURCES, "consolidation")])
    report = await store.prune(PrunePolicy(max_entries=2, dry_run=True))
    assert set(report.victim_ids) == {old.id, new.id}
    report = await store.prune(PrunePolicy(max_entries=3, dry_run=True))
    assert report.victim_ids == [old.id]  # least recently used first among the rest


async def test_a_cap_takes_what_carries_nothing_before_a_fact(store):
    """Small talk goes first whatever its importance; the least important fact is next (control)."""
    filler = [entry("haha, yes!", importance=0.9), entry("Thanks, you too!", importance=0.9)]
    low, high = entry("The ferry leaves at nine", importance=0.1), entry("Ada moved to Lisbon", importance=0.5)
    await store.write_many([*filler, low, high])
    assert set((await store.prune(PrunePolicy(max_entries=2, dry_run=True))).victim_ids) == {f.id for f in filler}
    assert (await store.prune(PrunePolicy(max_entries=1, dry_run=True))).victim_ids[-1] == low.id


async def test_a_byte_budget_takes_from_the_same_order_until_the_content_fits(store):
    """Content bytes of live memories (pinned ones count, never go): the least worth goes until they fit."""
    facts = [entry(f"{'byte budget fact ' * 5}{i}", importance=(i + 1) / 10) for i in range(3)]  # 86 bytes each
    pinned = entry("pinned byte budget fact", importance=0.0, pinned=True)  # 23 bytes
    await store.write_many([*facts, pinned])
    report = await store.prune(PrunePolicy(max_bytes=200, dry_run=True))
    assert report.victim_ids == [facts[0].id]  # 281 -> 195 bytes
    assert (await store.prune(PrunePolicy(max_bytes=195, dry_run=True))).victim_ids == [facts[0].id]  # at the budget
    everything = await store.prune(PrunePolicy(max_bytes=0))
    assert everything.victim_ids == [f.id for f in facts] and everything.condensed == 0  # no digest to condense
    assert (await store.get(pinned.id)) is not None


async def test_both_budgets_must_hold(store):
    facts = [entry(f"both budgets fact {i}", importance=(i + 1) / 10) for i in range(4)]  # 19 bytes each
    await store.write_many(facts)
    assert len((await store.prune(PrunePolicy(max_entries=3, max_bytes=1000, dry_run=True))).victim_ids) == 1
    assert len((await store.prune(PrunePolicy(max_entries=3, max_bytes=20, dry_run=True))).victim_ids) == 3


@pytest.mark.sqlite_only("consolidation edges live in SQLite stores only")
async def test_a_cap_takes_what_a_live_digest_carries_before_the_only_record_of_a_fact(store):
    """A live source of a live digest goes first (its content survives there); a less important fact
    that is its own only record stays (control), and so does the digest."""
    from memory.graph.edges import EdgeStore, MemoryEdge
    from memory.sqlite.consolidation import SOURCES

    carried = entry("Ada moved to Lisbon in 2022", importance=0.9)
    digest = entry("On 1 May 2023: Ada moved to Lisbon in 2022", importance=0.5)
    lone = entry("The ferry leaves at nine", importance=0.1)
    await store.write_many([carried, digest, lone])
    await EdgeStore(store).upsert([MemoryEdge(digest.id, carried.id, SOURCES, "consolidation")])
    assert (await store.prune(PrunePolicy(max_entries=2))).victim_ids == [carried.id]
    assert None not in [await store.get(i) for i in (digest.id, lone.id)]


@pytest.mark.sqlite_only("consolidation edges live in SQLite stores only")
@pytest.mark.parametrize("policy", [PrunePolicy(max_entries=3), PrunePolicy(min_importance=0.25)])
async def test_prune_never_archives_a_user_fact_while_keeping_what_was_derived_from_it(store, policy):
    """A derived memory carrying a pruned user fact goes with it, however much it outweighs it (it is
    also the only record of an archived source); one carrying a fact that stays, stays (control)."""
    from memory.graph.edges import EdgeStore, MemoryEdge
    from memory.sqlite.consolidation import SOURCES
    from memory.types import DERIVED_TAG, ConfidenceSource

    user = dict(confidence_source=ConfidenceSource.USER_CONFIRMED)
    fact, kept = entry("Caroline joined a support group", importance=0.2, **user), entry("Mel paints sunsets", importance=0.3, **user)
    old = [entry(f"an earlier echo {i}", tags=[DERIVED_TAG], archived=True) for i in range(2)]
    made = entry("Summary: Caroline joined a support group", importance=0.9, tags=[DERIVED_TAG])
    control = entry("Summary: Mel paints sunsets", importance=0.9, tags=[DERIVED_TAG])
    await store.write_many([fact, kept, *old, made, control])
    await EdgeStore(store).upsert([MemoryEdge(made.id, fact.id, SOURCES, "consolidation"),
                                   MemoryEdge(made.id, old[0].id, SOURCES, "consolidation"),
                                   MemoryEdge(control.id, kept.id, SOURCES, "consolidation"),
                                   MemoryEdge(control.id, old[1].id, SOURCES, "consolidation")])
    report = await store.prune(policy)
    assert set(report.victim_ids) == {fact.id, made.id}
    assert None not in [await store.get(i) for i in (kept.id, control.id)]


async def test_a_planned_prune_removes_no_more_than_it_planned(store, ten):
    """What operations/prune.py relies on: copies followed for the plan, then exactly the plan pruned;
    a row that became a victim since stays for the next prune."""
    entries, _ = ten
    planned = (await store.prune(PrunePolicy(min_importance=0.3, dry_run=True))).victim_ids
    late = entry("prune probe late", importance=0.05)
    await store.write(late)
    report = await store.prune(PrunePolicy(min_importance=0.3, within=frozenset(planned)))
    assert sorted(report.victim_ids) == sorted(planned) and report.archived == 3
    assert await store.get(late.id) is not None  # the late victim is still live
    assert [await store.get(i) for i in planned] == [None] * 3  # and the plan went
    assert PrunePolicy(min_importance=0.3, within=frozenset(planned)).model_dump() == PrunePolicy(min_importance=0.3).model_dump()
    assert late.id in (await store.prune(PrunePolicy(min_importance=0.3))).victim_ids


async def test_archive_hides_keeps_and_restores(store, ten):
    entries, _ = ten
    report = await store.prune(PrunePolicy(min_importance=0.3))
    victims = set(report.victim_ids)
    recalled = {e.id for e in await store.search(MemoryQuery(text="prune probe", limit=50))}
    assert recalled and not recalled & victims
    assert await store.count() == 11  # kept
    for victim in victims:
        kept = await store.get(victim, audience=Audience.OPERATOR, include_archived=True)
        assert kept.archived
    assert await store.restore(sorted(victims)) == 3
    recalled = {e.id for e in await store.search(MemoryQuery(text="prune probe", limit=50))}
    assert victims <= recalled


async def test_a_second_archive_prune_finds_nothing(store, ten):
    assert (await store.prune(PrunePolicy(min_importance=0.3))).archived == 3
    again = await store.prune(PrunePolicy(min_importance=0.3))
    assert (again.archived, again.victim_ids, again.scanned) == (0, [], 8)


async def test_purge_deletes_including_already_archived(store, ten):
    entries, pinned = ten
    await store.archive([entries[0].id])
    report = await store.prune(PrunePolicy(min_importance=0.3, mode=PruneMode.PURGE))
    assert report.purged == 3 and report.archived == 0
    assert await store.count() == 8
    for victim in report.victim_ids:
        assert await store.get(victim, audience=Audience.OPERATOR, include_archived=True) is None
        assert (await store.history(victim))[-1].op == "purge"  # the ledger keeps the story
    assert await store.get(pinned.id) is not None


def _file_state(path) -> tuple:
    return tuple(
        hashlib.sha256(p.read_bytes()).hexdigest() if p.exists() else None
        for p in (path, path.with_name(path.name + "-wal"))
    )


@pytest.mark.parametrize("mode", list(PruneMode))
async def test_dry_run_changes_nothing(tmp_path, mode):
    path = tmp_path / "dry.db"
    store = SQLiteAdapter(path)
    await store.write_many([entry(f"dry {i}", importance=i / 10) for i in range(10)])
    await store.aclose()
    before = _file_state(path)

    store = SQLiteAdapter(path)
    report = await store.prune(PrunePolicy(min_importance=0.5, max_entries=2, mode=mode, dry_run=True))
    await store.aclose()
    assert report.dry_run and len(report.victim_ids) == 8
    assert (report.archived if mode is PruneMode.ARCHIVE else report.purged) == 8
    assert _file_state(path) == before

    store = SQLiteAdapter(path)  # positive control: the same policy for real does change the file
    await store.prune(PrunePolicy(min_importance=0.5, max_entries=2, mode=mode))
    await store.aclose()
    assert _file_state(path) != before


@pytest.mark.sqlite_only("it reads SQLite's query plans")
async def test_prune_reads_each_candidates_edges_by_index_never_the_live_rows_again(store):
    """A capped prune looks up each candidate's carriers by id: a plan that walks the live rows inside
    the per-candidate subqueries made a 100k-row prune run for over ten minutes."""
    from memory.sqlite import prune_order
    from memory.sqlite.admission import SQLITE

    sql, params = prune_order.candidates_sql(SQLITE)
    plan = await store.run(lambda raw: [r[3] for r in raw.execute("EXPLAIN QUERY PLAN " + sql, params)])
    assert plan[0].startswith("SEARCH memories USING INDEX memories_order")  # the outer scan of live rows
    assert [step for step in plan[1:] if "memories_order" in step] == []
    assert any("memory_edges_dst (dst_id=?)" in step for step in plan)  # positive control: the edge index
    assert any("memory_ledger_memory (memory_id=?)" in step for step in plan)  # is it a digest: its own ledger rows


@pytest.mark.sqlite_only("it shrinks SQLite's mutation window")
@pytest.mark.parametrize("mode", [PruneMode.ARCHIVE, PruneMode.PURGE])
async def test_a_prune_larger_than_one_mutation_window_ledgers_every_row(store, monkeypatch, mode):
    from memory.sqlite import mutations

    monkeypatch.setattr(mutations, "MUTATION_WINDOW", 7)
    kept = entry("the one to keep", importance=0.9)
    await store.write_many([kept, *(entry(f"filler fact number {i}", importance=0.1) for i in range(30))])
    report = await store.prune(PrunePolicy(max_entries=1, mode=mode))
    assert (report.archived if mode is PruneMode.ARCHIVE else report.purged) == 30
    ops = await store.run(lambda raw: raw.execute(
        "SELECT op, count(*) FROM memory_ledger WHERE op IN ('archive', 'purge') GROUP BY op").fetchall())
    assert [tuple(r) for r in ops] == [(mode.value if mode is PruneMode.PURGE else "archive", 30)]
    assert [e.id for e in await store.search(MemoryQuery())] == [kept.id]  # positive control: the kept one answers


@pytest.mark.parametrize("dry_run", [True, False])
async def test_progress_counts_every_row_read_then_every_row_removed(store, ten, dry_run):
    """A million-row prune is one long transaction: its progress reaches the rows it read (ten
    unpinned), then, for real, those plus the four it archives, and never runs backwards."""
    seen: list[tuple[int, int]] = []
    report = await store.prune(PrunePolicy(max_entries=7, dry_run=dry_run), lambda done, total: seen.append((done, total)))
    assert report.archived == 4
    expected = 10 if dry_run else 14
    assert seen[-1] == (expected, expected)
    assert all(done <= total for done, total in seen)
    assert [done for done, _ in seen] == sorted(done for done, _ in seen)


@pytest.mark.sqlite_only("it stages SQLite's prune order")
@pytest.mark.parametrize("by_bytes", [False, True])
async def test_the_staged_prune_order_is_the_order_python_sorts_by_in_pages(store, monkeypatch, by_bytes):
    """The keys are sorted by SQLite in a TEMP table, a page of 3 staged at a time: every key
    comes back in the order ``sorted`` gives, ties (one importance, one instant) broken by id."""
    from datetime import UTC, datetime

    from memory.sqlite import prune_order
    from memory.sqlite.admission import SQLITE

    monkeypatch.setattr(prune_order, "STAGE_PAGE", 3)
    at = datetime(2025, 1, 1, tzinfo=UTC)
    await store.write_many([entry(f"order probe {'word ' * (i % 4)}{i}", importance=(i % 3) / 10, created_at=at)
                            for i in range(20)] + [entry("haha", importance=0.9)])
    sql, params = prune_order.candidates_sql(SQLITE)

    def both(raw):
        expected = sorted(prune_order.sort_key(row, by_bytes) for row in raw.execute(sql, params))
        with prune_order.staged_order(raw, lambda: raw.execute(sql, params), by_bytes) as (ordered, _):
            return expected, list(ordered)

    expected, staged = await store.run(both)
    assert len(staged) == 21 and staged[0].tier == 0  # "haha" says nothing: it goes first
    assert [(k.tier, k.worth, k.used_at, k.id, k.nbytes, bool(k.digest)) for k in staged] == [tuple(k) for k in expected]


async def test_a_capped_prune_holds_no_key_per_live_row(store, monkeypatch):
    """Every live row's sort key was held in a list (about 300 bytes a row: 195 MiB archiving half of
    300,000 rows with vectors on SQLite; on PostgreSQL until the keys were sorted on the server too).
    Removing 5 rows of 3,000 now peaks as removing 5 of 300 does; both remove exactly the 5 least worth."""
    import tracemalloc

    from memory.sqlite import prune_order

    monkeypatch.setattr(prune_order, "STAGE_PAGE", 50)
    peaks, gone = [], []
    for n in (300, 3_000):  # one store: the first round's 5 are archived, out of the second's count
        rows = [entry(f"capped probe fact {n} {i}", importance=0.5) for i in range(n)]
        least = [entry(f"least worth fact {n} {i}", importance=0.01) for i in range(5)]
        await store.write_many([*rows, *least])
        live = await store.count(include_archived=False)
        tracemalloc.start()
        report = await store.prune(PrunePolicy(max_entries=live - 5))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        gone.append(sorted(report.victim_ids) == sorted(e.id for e in least))
    assert gone == [True, True]
    assert peaks[1] < 2 * peaks[0], peaks  # 6.5x before
