"""Federated reads: fan-out, dropped-and-reported tiers, de-duplication before
ranking, routing by scope, stream order — real SQLite tiers and a vault folder."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from factories import T0, entries_for
from federation_faults import FaultyTier, corrupt_file

from memory.adapters.markdown import MarkdownFolderAdapter
from memory.adapters.sqlite import SQLiteAdapter
from memory.budgets import ConnectionsConfig, TierBudget
from memory.errors import MemoryRoutingError
from memory.federation.federation import MemoryFederation, dedupe
from memory.federation.router import MemoryRouter
from memory.ranking.decay import DEFAULT_PROFILES
from memory.markdown.notes import note_id
from memory.types import MemoryQuery, MemoryScope

entry = entries_for("a")


@pytest.fixture
async def stores(tmp_path):
    made = {
        "private": SQLiteAdapter(tmp_path / "private.db"),
        "pool": SQLiteAdapter(tmp_path / "team.db"),
        "global": SQLiteAdapter(tmp_path / "global.db"),
    }
    yield made
    for store in made.values():
        await store.aclose()


def federate(stores, events, *, pool=None, budget=None, **kw) -> MemoryFederation:
    resilience = None if budget is None else ConnectionsConfig(private=budget, global_=budget, default_shared=budget)
    router = MemoryRouter(
        private=stores["private"], global_=stores["global"], pools={"team": pool or stores["pool"]},
        resilience=resilience, **kw,
    )
    return MemoryFederation(router, on_degraded=events.append)


async def test_promoted_copy_comes_back_once_naming_both_tiers(stores):
    federation = federate(stores, [])
    important = entry("the user is allergic to peanuts", importance=0.95)
    await federation.write(important)
    report = await federation.recall(MemoryQuery(agent_id="a", text="peanuts"))
    assert [(e.id, e.tiers, e.scope) for e in report.entries] == [
        (important.id, ["private", "global"], MemoryScope.PRIVATE)  # the most local copy wins
    ]


async def test_identical_content_under_different_ids_is_one_fact_but_different_content_is_not(stores):
    await stores["private"].write(entry("Standup is at 10:00"))
    await stores["pool"].write(entry("Standup  is at 10:00", agent_id="b", scope=MemoryScope.SHARED, pool_name="team"))
    await stores["pool"].write(entry("Standup is at 10:30 on Fridays", agent_id="b", scope=MemoryScope.SHARED, pool_name="team"))
    found = await federate(stores, []).search(MemoryQuery(agent_id="a", text="standup"))
    assert sorted((e.content, tuple(e.tiers)) for e in found) == [
        ("Standup is at 10:00", ("private", "pool:team")),
        ("Standup is at 10:30 on Fridays", ("pool:team",)),
    ]


async def test_duplicates_are_merged_before_truncation_so_they_never_take_two_slots(stores):
    federation = federate(stores, [])
    top = entry("deploy freeze starts friday", importance=0.95)  # private + global copy
    second = entry("deploy window is tuesday", importance=0.7)
    await federation.write(top)
    await federation.write(second)
    found = await federation.search(MemoryQuery(agent_id="a", text="deploy", limit=2))
    assert [e.id for e in found] == [top.id, second.id]


def test_dedupe_unit_survivor_is_the_first_copy_and_lists_every_tier():
    a = entry("same fact", id="1", importance=0.2)
    b = entry("same fact", id="2", importance=0.9)
    c = entry("other fact", id="1")  # same id as a: the same record
    merged = dedupe([("private", [a]), ("pool:team", [b]), ("global", [c])])
    assert [(m.id, m.importance, tiers) for m, tiers in merged] == [("1", 0.2, ["private", "pool:team", "global"])]
    assert a.tiers == []  # the backend's entry is not changed


async def test_two_vaults_with_the_same_note_path_are_two_notes(tmp_path):
    for vault, text in (("work", "Work readme: deploys on Tuesday"), ("home", "Home readme: bins go out Monday")):
        (tmp_path / vault).mkdir()
        (tmp_path / vault / "README.md").write_text(text)
    reads = []
    for vault in ("work", "home"):
        folder = MarkdownFolderAdapter(tmp_path / vault, "a", scope=MemoryScope.SHARED, pool_name=f"vault:{vault}")
        reads.append((f"vault:{vault}", await folder.search(MemoryQuery(text="readme"))))
    assert reads[0][1][0].id == reads[1][1][0].id == note_id("README.md")  # same path, same id
    merged = dedupe(reads)
    assert sorted(tiers[0] for _, tiers in merged) == ["vault:home", "vault:work"]
    # control: the same note from one vault's folder and its index is still one fact
    again = dedupe([reads[0], ("vault:work", reads[0][1])])
    assert len(again) == 1


async def test_other_agents_shared_memories_are_read_but_their_private_ones_never(stores, tmp_path):
    await stores["pool"].write(entry("the printer is on floor 2", agent_id="b", scope=MemoryScope.SHARED, pool_name="team"))
    bobs_private = SQLiteAdapter(tmp_path / "bob.db")
    await bobs_private.write(entry("the printer password is hunter2", agent_id="b"))
    found = await federate(stores, []).search(MemoryQuery(agent_id="a", text="printer"))
    assert [e.content for e in found] == ["the printer is on floor 2"]
    await bobs_private.aclose()


async def test_a_corrupt_tier_is_dropped_and_reported_while_the_others_answer(stores, tmp_path):
    await stores["private"].write(entry("kettle is blue"))
    await stores["global"].write(entry("kettle descaling is monthly", scope=MemoryScope.GLOBAL))
    events = []
    federation = federate(stores, events, pool=SQLiteAdapter(corrupt_file(tmp_path / "broken.db")))
    report = await federation.recall(MemoryQuery(agent_id="a", text="kettle"))
    assert sorted(e.content for e in report.entries) == ["kettle descaling is monthly", "kettle is blue"]
    assert [(d.tier, d.reason) for d in report.degraded] == [("pool:team", "corruption")]
    assert events == report.degraded
    health = await federation.health_check()
    assert health.healthy and "pool:team" in health.message  # usable while any tier is
    await federation.aclose()


async def test_a_hanging_tier_costs_one_read_budget_not_the_session(stores):
    await stores["private"].write(entry("kettle is blue"))
    events = []
    # The default (hybrid) read waits out the semantic budget, then one keyword retry the read budget.
    budget = TierBudget(read_timeout_ms=200, semantic_timeout_ms=200)
    federation = federate(stores, events, pool=FaultyTier(stores["pool"], delay=None), budget=budget)
    started = time.monotonic()
    report = await federation.recall(MemoryQuery(agent_id="a", text="kettle"))
    assert time.monotonic() - started < 1.5
    assert [e.content for e in report.entries] == ["kettle is blue"]
    assert [(d.tier, d.reason) for d in report.degraded] == [("pool:team", "timeout")]


async def test_vault_notes_join_as_a_read_only_shared_tier_and_dedupe_with_an_ingested_copy(stores, tmp_path):
    vault_dir = tmp_path / "vault"
    vault_dir.mkdir()
    (vault_dir / "coffee.md").write_text("---\nimportance: 0.7\n---\nThe coffee machine needs descaling.\n")
    (vault_dir / "tea.md").write_text("Green tea steeps for two minutes.\n")
    ingested = entry("The coffee machine needs descaling (ingested).", id=note_id("coffee.md"), agent_id="vault")
    await stores["pool"].write(ingested.model_copy(update={"scope": MemoryScope.SHARED, "pool_name": "team"}))
    router = MemoryRouter(private=stores["private"], pools={"team": stores["pool"]})
    vault = MarkdownFolderAdapter(vault_dir, "a", scope=MemoryScope.SHARED)
    router.register_pool("notes", vault, read_only=True, label="vault:notes")
    federation = MemoryFederation(router, on_degraded=lambda e: None)
    coffee = await federation.search(MemoryQuery(agent_id="a", text="coffee descaling"))
    # Pools fan out in name order ("notes" before "team"): the first copy seen survives.
    assert [(e.id, e.tiers) for e in coffee] == [(note_id("coffee.md"), ["vault:notes", "pool:team"])]
    assert "(ingested)" not in coffee[0].content
    tea = await federation.search(MemoryQuery(agent_id="a", text="tea", scope=MemoryScope.SHARED, pool_name="notes"))
    assert [e.tiers for e in tea] == [["vault:notes"]]


async def test_scope_routes_reads_and_an_unknown_pool_is_a_caller_error(stores):
    federation = federate(stores, [])
    await federation.write(entry("alpha private"))
    await federation.write(entry("alpha shared", scope=MemoryScope.SHARED, pool_name="team"))
    await federation.write(entry("alpha global", scope=MemoryScope.GLOBAL))

    async def contents(**kw):
        return sorted(e.content for e in await federation.search(MemoryQuery(agent_id="a", text="alpha", **kw)))

    assert await contents() == ["alpha global", "alpha private", "alpha shared"]
    assert await contents(scope=MemoryScope.PRIVATE) == ["alpha private"]
    assert await contents(scope=MemoryScope.SHARED) == ["alpha shared"]
    assert await contents(scope=MemoryScope.SHARED, pool_name="team") == ["alpha shared"]
    assert await contents(scope=MemoryScope.GLOBAL) == ["alpha global"]
    with pytest.raises(MemoryRoutingError, match="unknown pool 'nope'"):
        await contents(scope=MemoryScope.SHARED, pool_name="nope")


async def test_stream_search_yields_the_search_order(stores):
    federation = federate(stores, [])
    for i, importance in enumerate((0.3, 0.95, 0.6, 0.8)):
        await federation.write(entry(f"note {i} about lamps", importance=importance))
    query = MemoryQuery(agent_id="a", text="lamps")
    streamed = [e.id async for e in federation.stream_search(query)]
    assert streamed == [e.id for e in await federation.search(query)] and len(streamed) == 4


async def test_pinned_first_in_a_listing_but_only_a_near_tie_breaker_in_a_query(stores):
    federation = federate(stores, [])
    low_pinned = entry("pinned lamp fact", importance=0.1, pinned=True)
    high = entry("important lamp fact", importance=0.9)
    await federation.write(high)
    await federation.write(low_pinned)
    listed = await federation.search(MemoryQuery(agent_id="a"))
    assert [e.id for e in listed] == [low_pinned.id, high.id]
    found = await federation.search(MemoryQuery(agent_id="a", text="lamp"))
    assert [e.id for e in found] == [high.id, low_pinned.id]  # a pin never outweighs importance 0.9 vs 0.1


async def test_get_returns_the_most_local_copy(stores):
    federation = federate(stores, [])
    important = entry("the vault code is 1234", importance=0.95)
    await federation.write(important)
    found = await federation.get(important.id)
    assert found.scope is MemoryScope.PRIVATE and found.tiers == ["private"]
    assert await federation.get("no-such-id") is None


async def test_get_many_finds_each_id_in_its_most_local_tier_in_one_read_a_tier(stores):
    federation = federate(stores, [])
    promoted, private_only = entry("the vault code is 1234", importance=0.95), entry("a passing remark")
    await federation.write_many([promoted, private_only])
    only_global = entry("a fact only the global tier holds")
    await stores["global"].write(only_global)
    found = await federation.get_many([promoted.id, private_only.id, only_global.id, "no-such-id"])
    assert {i: e.tiers for i, e in found.items()} == {
        promoted.id: ["private"], private_only.id: ["private"], only_global.id: ["global"]
    }


async def test_get_many_skips_a_broken_tier_and_reports_it(tmp_path, stores):
    events = []
    broken = SQLiteAdapter(corrupt_file(tmp_path / "broken.db"))
    federation = MemoryFederation(MemoryRouter(private=broken, global_=stores["global"]), on_degraded=events.append)
    held = entry("a fact the global tier holds")
    await stores["global"].write(held)
    assert list(await federation.get_many([held.id])) == [held.id]
    assert [(e.tier, e.op, e.reason) for e in events] == [("private", "get", "corruption")]


async def test_with_every_tier_down_health_says_so_and_reads_come_back_empty(tmp_path):
    broken = SQLiteAdapter(corrupt_file(tmp_path / "private.db"))  # no quarantine dir: stays broken
    events = []
    federation = MemoryFederation(MemoryRouter(private=broken), on_degraded=events.append)
    assert await federation.search(MemoryQuery(agent_id="a", text="x")) == []
    assert [(e.tier, e.reason) for e in events] == [("private", "corruption")]
    health = await federation.health_check()
    assert not health.healthy and "1/1 tier(s) down" in health.message


def test_relevance_is_a_fraction_of_the_tiers_best_score_and_reorders_close_importance():
    from memory.federation.federation import tier_relevance

    answer = entry("the answer", score=8.0, importance=0.5)
    weak = entry("a weak neighbour", score=0.2, importance=0.9)
    unscored = entry("a filter hit")
    assert tier_relevance([answer, weak, unscored]) == {answer.id: 1.0, weak.id: 0.05}
    assert tier_relevance([unscored]) == {}
    router = MemoryRouter(private=object())
    ranked = router.rank([weak, answer], 10, relevance=tier_relevance([answer, weak]))
    assert [e.content for e, _ in ranked] == ["the answer", "a weak neighbour"]
    assert [e.content for e, _ in router.rank([weak, answer], 10)] == ["a weak neighbour", "the answer"]  # control


async def test_a_recall_as_of_an_earlier_time_measures_age_from_then(stores):
    """--as-of answers as recall would have then: an episode a few days old then is listed (it aged
    out only since), and a read made later (today's recall refreshed its decay clock) was not made yet."""
    from datetime import datetime, timezone

    from memory.types import MemoryType

    def day(d: int) -> datetime:
        return datetime(2024, 1, d, 10, tzinfo=timezone.utc)

    hiking = entry("went hiking at the lake", type=MemoryType.EPISODIC, created_at=day(1), updated_at=day(1))
    trip = entry("the lake trip was fun", type=MemoryType.EPISODIC, created_at=day(2), updated_at=day(2))
    await stores["private"].write_many([hiking, trip])
    federation = federate(stores, [])

    async def listed(as_of: datetime | None) -> list[str]:
        return [e.id for e in (await federation.recall(MemoryQuery(agent_id="a", as_of=as_of))).entries]

    assert await listed(None) == []  # control: two years on, both episodes aged out of a listing
    assert await listed(day(5)) == [trip.id, hiking.id]  # then, both were days old: the newer first
    await stores["private"].recall_activity()  # folds in the reads the listing just made (today)
    assert set(await listed(None)) == {trip.id, hiking.id}  # control: today's read refreshed both
    assert await listed(day(30)) == []  # on 30 January both had aged out: that read was not made yet


async def test_equal_scores_go_to_the_more_local_tier_and_within_one_by_id(stores):
    """Each tier's best match has relevance 1 whatever its scale, so the two tiers' best tie; the
    tie fell to the raw BM25, which a larger store makes larger: another agent's global memory
    outranked the agent's own as soon as the global store held more rows."""
    when = T0
    mine = entry("the deploy freeze starts friday", created_at=when, updated_at=when)
    theirs = entry("the deploy freeze starts monday", agent_id="b", scope=MemoryScope.GLOBAL, created_at=when,
                   updated_at=when)
    await stores["private"].write(mine)
    await stores["global"].write_many([theirs, *(entry(f"other filler {i}", agent_id="b", scope=MemoryScope.GLOBAL)
                                                 for i in range(20))])
    no_refresh = {t: p.model_copy(update={"refresh_on_access": False}) for t, p in DEFAULT_PROFILES.items()}
    federation = federate(stores, [], decay_profiles=no_refresh)  # a recall leaves the next one's ages alone
    found = await federation.recall(MemoryQuery(agent_id="a", text="deploy freeze", limit=2))
    assert [(e.id, e.tiers) for e in found.entries] == [(mine.id, ["private"]), (theirs.id, ["global"])]
    assert found.entries[0].score == found.entries[1].score  # a tie, which the tier decided
    # control: a better match in the global tier still outranks a weaker private one
    weak = entry("a deploy note", created_at=when, updated_at=when)
    await stores["private"].write(weak)
    found = await federation.search(MemoryQuery(agent_id="a", text="deploy freeze", limit=3))
    assert [e.id for e in found] == [mine.id, theirs.id, weak.id]
    # within one tier, equal matches of one age go by id, whatever order they were written in
    twins = [entry(f"the standup {word} moved", id=f"{n}-twin", created_at=when, updated_at=when)
             for n, word in (("2", "alpha"), ("1", "bravo"))]
    await stores["private"].write_many(twins)
    found = await federation.search(MemoryQuery(agent_id="a", text="standup moved", limit=2))
    assert [e.id for e in found] == ["1-twin", "2-twin"]


async def test_a_recall_ranks_by_the_age_the_last_recall_in_the_same_process_refreshed(stores):
    """A store buffers read hits and folds them in at close: a long-lived process (the MCP server,
    `arcana run`) ranked its second recall by the age before its first, where a new process (each
    `arcana recall`) ranks by the refreshed one, so the two skins disagreed on the same store."""
    from memory.types import MemoryType

    now = datetime.now(UTC) + timedelta(minutes=1)  # read hits are stamped with the real time
    old = now - timedelta(days=10)
    aged = entry("the zebra enclosure moved to the north gate", type=MemoryType.EPISODIC, created_at=old, updated_at=old)
    other = entry("the zebra keeper is Ana", type=MemoryType.EPISODIC, created_at=old, updated_at=old)
    await stores["private"].write_many([aged, other])
    clock = lambda: now  # noqa: E731 - one instant for every read
    federation = federate(stores, [], clock=clock)
    first = await federation.recall(MemoryQuery(agent_id="a", text="zebra enclosure", limit=1))
    again = await federation.recall(MemoryQuery(agent_id="a", text="zebra enclosure", limit=1))
    await stores["private"].aclose()  # the hits folded in, as a process's exit does
    fresh = await federate(stores, [], clock=clock).recall(MemoryQuery(agent_id="a", text="zebra enclosure", limit=1))
    assert [e.id for e in first.entries] == [e.id for e in again.entries] == [e.id for e in fresh.entries] == [aged.id]
    # as a new process reads it (but for the moments between the first recall's hit and the second's)
    assert again.entries[0].score == pytest.approx(fresh.entries[0].score, rel=1e-6)
    assert abs(again.entries[0].last_accessed_at - fresh.entries[0].last_accessed_at) < timedelta(seconds=5)
    assert first.entries[0].score < fresh.entries[0].score  # control: the refresh does lift it
