"""Decay visibly reorders federated recall over simulated months — with floors
holding and pinned entries exempt — on real SQLite tiers."""

from __future__ import annotations

from datetime import timedelta

from memory.adapters.sqlite import SQLiteAdapter
from memory.federation.federation import MemoryFederation
from memory.federation.router import MemoryRouter
from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType, now_utc


async def test_recall_order_follows_each_types_clock(tmp_path):
    start = now_utc()
    clock = {"now": start}
    private = SQLiteAdapter(tmp_path / "private.db")
    pool = SQLiteAdapter(tmp_path / "team.db")
    router = MemoryRouter(private=private, pools={"team": pool}, clock=lambda: clock["now"])
    federation = MemoryFederation(router, on_degraded=lambda event: None)
    facts = {
        "episode": MemoryEntry(agent_id="a", type=MemoryType.EPISODIC, importance=0.9, content="we debugged the deploy today"),
        "fact": MemoryEntry(agent_id="a", type=MemoryType.SEMANTIC, importance=0.6, content="the deploy target is eu-west"),
        "howto": MemoryEntry(
            agent_id="a", type=MemoryType.PROCEDURAL, importance=0.5, content="to deploy run make release",
            scope=MemoryScope.SHARED, pool_name="team",
        ),
        "pinned": MemoryEntry(agent_id="a", type=MemoryType.EPISODIC, importance=0.3, pinned=True, content="launch is 1 May"),
    }
    for item in facts.values():
        await federation.write(item)
    names = {item.id: name for name, item in facts.items()}

    async def order_after(days: float) -> list[str]:
        clock["now"] = start + timedelta(days=days)
        return [names[e.id] for e in await federation.search(MemoryQuery(agent_id="a", limit=10))]

    assert await order_after(0) == ["pinned", "episode", "fact", "howto"]  # fresh: raw importance
    assert await order_after(14) == ["pinned", "fact", "howto", "episode"]  # the episode fades first
    assert await order_after(90) == ["pinned", "howto", "fact"]  # aged out; procedural outlasts semantic
    decade = await order_after(3650)
    assert decade == ["pinned", "howto", "fact"]  # floors hold: durable memories never reach zero
    scores = {names[e.id]: e.score for e in await federation.search(MemoryQuery(agent_id="a", limit=10))}
    assert scores["fact"] > 0 and scores["howto"] > 0
    assert scores["pinned"] == 0.3 * 0.5  # pinned: full importance × neutral weight, a decade on
    await federation.aclose()


async def test_card_weights_change_the_order(tmp_path):
    private = SQLiteAdapter(tmp_path / "private.db")
    entries = [
        MemoryEntry(agent_id="a", type=MemoryType.EPISODIC, importance=0.9, content="an episode"),
        MemoryEntry(agent_id="a", type=MemoryType.PROCEDURAL, importance=0.4, content="a procedure"),
    ]
    for item in entries:
        await private.write(item)
    neutral = MemoryFederation(MemoryRouter(private=private), on_degraded=lambda e: None)
    assert [e.content for e in await neutral.search(MemoryQuery(agent_id="a"))] == ["an episode", "a procedure"]
    weighted = MemoryFederation(
        MemoryRouter(private=private, weights={MemoryType.PROCEDURAL: 1.0, MemoryType.EPISODIC: 0.2}),
        on_degraded=lambda e: None,
    )
    assert [e.content for e in await weighted.search(MemoryQuery(agent_id="a"))] == ["a procedure", "an episode"]
    await private.aclose()


async def test_a_listing_short_of_its_limit_after_aging_out_reads_further(tmp_path):
    """Each tier is asked for ``limit`` rows in stored-importance order; when the ones that aged out
    fill them, the listing asks again for more instead of returning fewer (or none) of the live."""
    now = now_utc()
    private = SQLiteAdapter(tmp_path / "private.db")
    pool = SQLiteAdapter(tmp_path / "team.db")
    federation = MemoryFederation(MemoryRouter(private=private, pools={"team": pool}), on_degraded=lambda event: None)
    for n in range(4):  # 0.5 ** (60 / 7) of their importance left: aged out, though stored highest
        await federation.write(MemoryEntry(agent_id="a", type=MemoryType.EPISODIC, importance=0.9,
                                           content=f"old episode {n}", created_at=now - timedelta(days=60)), reconcile=False)
    live = ["the deploy target is eu-west", "the on-call rota is weekly"]
    for text in live:
        await federation.write(MemoryEntry(agent_id="a", type=MemoryType.SEMANTIC, importance=0.5, content=text), reconcile=False)
    await federation.write(MemoryEntry(agent_id="a", type=MemoryType.PROCEDURAL, importance=0.4, content="to deploy run make release",
                                       scope=MemoryScope.SHARED, pool_name="team"), reconcile=False)
    expected = {*live, "to deploy run make release"}
    # The control: a limit above the aged-out rows always listed every live memory.
    assert {e.content for e in await federation.search(MemoryQuery(agent_id="a", limit=10))} == expected
    assert {e.content for e in await federation.search(MemoryQuery(agent_id="a", limit=3))} == expected  # was the pool's one
    assert len(await federation.search(MemoryQuery(agent_id="a", limit=1))) == 1  # was none
    await federation.aclose()
