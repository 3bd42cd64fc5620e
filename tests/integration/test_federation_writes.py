"""Federated writes: routing, promotion, the accepted/refused/failed split, and
the durability anchor raising — on real SQLite tiers and a real vault folder."""

from __future__ import annotations

import pytest
from factories import entries_for
from federation_faults import FaultyTier, corrupt_file, write_locked

from memory.adapters.markdown import MarkdownFolderAdapter
from memory.adapters.sqlite import SQLiteAdapter
from memory.budgets import ConnectionsConfig, TierBudget
from memory.errors import MemoryCorruptError, MemoryRoutingError, MemoryStorageError, MemoryWriteError
from memory.federation.federation import FederatedWriteError, MemoryFederation
from memory.federation.router import MemoryRouter
from memory.types import Audience, MemoryQuery, MemoryScope, PrunePolicy


class Tiers:
    """A private store, a pool, a global store and a vault folder under tmp_path."""

    def __init__(self, root):
        self.root = root
        self.private = SQLiteAdapter(root / "agents" / "a" / "memory.db")
        self.pool = SQLiteAdapter(root / "pools" / "team.db")
        self.global_ = SQLiteAdapter(root / "vector" / "global.db")
        self.vault_dir = root / "vault"
        self.vault_dir.mkdir()
        (self.vault_dir / "kettle.md").write_text("The office kettle is blue.\n")
        self.vault = MarkdownFolderAdapter(self.vault_dir, "a", scope=MemoryScope.SHARED, pool_name="team")
        self.events = []

    def federation(self, *, private=None, pool=None, global_=..., budget: TierBudget | None = None) -> MemoryFederation:
        resilience = None
        if budget is not None:
            resilience = ConnectionsConfig(private=budget, global_=budget, default_shared=budget)
        router = MemoryRouter(
            private=private or self.private,
            global_=self.global_ if global_ is ... else global_,
            pools={"team": pool or self.pool},
            resilience=resilience,
        )
        router.register_pool("team", self.vault, read_only=True, label="vault:notes")
        return MemoryFederation(router, on_degraded=self.events.append)

    async def close(self):
        for store in (self.private, self.pool, self.global_):
            await store.aclose()


@pytest.fixture
async def tiers(tmp_path):
    made = Tiers(tmp_path)
    yield made
    await made.close()


entry = entries_for("a")


async def test_important_private_entry_is_promoted_to_global_as_a_scope_rewritten_copy(tiers):
    federation = tiers.federation()
    important = entry("the user is allergic to peanuts", importance=0.95)
    ordinary = entry("the user had toast", importance=0.5)
    report = await federation.write(important)
    assert report.accepted == ["private", "global"] and report.promoted
    assert (await federation.write(ordinary)).accepted == ["private"]  # below 0.9: stays private
    copy = await tiers.global_.get(important.id)
    assert copy is not None and copy.scope is MemoryScope.GLOBAL and copy.pool_name is None
    assert (await tiers.private.get(important.id)).scope is MemoryScope.PRIVATE
    assert await tiers.global_.get(ordinary.id) is None


async def test_without_a_global_tier_promotion_simply_stays_private(tiers):
    federation = tiers.federation(global_=None)
    assert (await federation.write(entry("important", importance=1.0))).accepted == ["private"]
    with pytest.raises(MemoryRoutingError, match="no global tier"):
        await federation.write(entry("for everyone", scope=MemoryScope.GLOBAL))


async def test_shared_write_goes_to_its_pool_and_the_vault_is_refused_not_accepted(tiers):
    federation = tiers.federation()
    before = sorted(p.name for p in tiers.vault_dir.iterdir())
    shared = entry("standup moved to 10:00", scope=MemoryScope.SHARED, pool_name="team")
    report = await federation.write(shared)
    assert report.as_dict() == {
        "id": shared.id, "accepted": ["pool:team"], "refused": ["vault:notes"], "failed": {},
        "decision": "add", "supersedes": [], "conflict_with": None, "warnings": [],
    }
    assert await tiers.pool.get(shared.id) is not None
    assert await tiers.private.get(shared.id) is None
    assert sorted(p.name for p in tiers.vault_dir.iterdir()) == before  # the folder is never written


@pytest.mark.parametrize(
    ("pool_name", "needle"),
    [(None, "needs a pool name"), ("nope", "unknown pool 'nope'")],
)
async def test_shared_write_without_a_known_pool_is_a_routing_error(tiers, pool_name, needle):
    with pytest.raises(MemoryRoutingError, match=needle):
        await tiers.federation().write(entry("x", scope=MemoryScope.SHARED, pool_name=pool_name))


async def test_a_write_to_an_unknown_pool_offers_only_pools_it_can_write_to(tiers):
    """A read-only vault is no place to write: the error names the writable pools only; a read's names both."""
    router = MemoryRouter(private=tiers.private, pools={"team": tiers.pool})
    router.register_pool("notes", tiers.vault, read_only=True)
    federation = MemoryFederation(router, on_degraded=tiers.events.append)
    with pytest.raises(MemoryRoutingError, match=r"unknown pool 'nope' for this agent; its pools: team$"):
        await federation.write(entry("x", scope=MemoryScope.SHARED, pool_name="nope"))
    with pytest.raises(MemoryRoutingError, match=r"its pools: notes, team$"):  # control: reading, a vault is a pool
        router.route_read(MemoryQuery(scope=MemoryScope.SHARED, pool_name="nope"))


async def test_a_pool_of_only_read_only_tiers_cannot_take_a_write(tiers):
    router = MemoryRouter(private=tiers.private)
    router.register_pool("notes", tiers.vault, read_only=True)
    federation = MemoryFederation(router, on_degraded=tiers.events.append)
    with pytest.raises(MemoryRoutingError, match="no writable tier"):
        await federation.write(entry("x", scope=MemoryScope.SHARED, pool_name="notes"))


async def test_failed_shared_tier_degrades_with_an_event_and_an_honest_split(tiers, tmp_path):
    broken = SQLiteAdapter(corrupt_file(tmp_path / "broken.db"))
    federation = tiers.federation(pool=broken)
    shared = entry("the wifi password rotates monthly", scope=MemoryScope.SHARED, pool_name="team")
    report = await federation.write(shared)  # does not raise: SHARED degrades
    assert report.accepted == [] and report.refused == ["vault:notes"]
    assert list(report.failed) == ["pool:team"] and report.failed["pool:team"].startswith("corruption")
    [event] = tiers.events
    assert (event.tier, event.op, event.reason) == ("pool:team", "write", "corruption")


async def test_failed_promotion_pauses_promotion_without_failing_the_private_write(tiers, tmp_path):
    broken_global = SQLiteAdapter(corrupt_file(tmp_path / "global-broken.db"))
    federation = tiers.federation(global_=broken_global)
    important = entry("the server room code is 4711", importance=0.95)
    report = await federation.write(important)
    assert report.accepted == ["private"] and list(report.failed) == ["global"] and not report.promoted
    assert await tiers.private.get(important.id) is not None
    assert [(e.tier, e.op) for e in tiers.events] == [("global", "promote")]


async def test_failed_private_write_raises_with_the_split(tiers):
    await tiers.private.connect()
    federation = tiers.federation(budget=TierBudget(write_timeout_ms=200))
    important = entry("must not be lost", importance=0.95)
    with write_locked(tiers.private.path):  # another writer holds the durability anchor
        with pytest.raises(FederatedWriteError) as info:
            await federation.write(important)
    assert isinstance(info.value, MemoryWriteError)
    report = info.value.report
    assert report.accepted == ["global"] and list(report.failed) == ["private"]
    assert report.failed["private"].startswith("timeout")
    assert tiers.events == []  # the private failure is raised, not filed as a degradation


async def test_private_backend_error_raises_even_without_other_tiers(tiers):
    failing = FaultyTier(tiers.private, error=MemoryStorageError("disk I/O error"))
    federation = tiers.federation(private=failing, global_=None)
    with pytest.raises(FederatedWriteError, match="disk I/O error") as info:
        await federation.write(entry("x"))
    assert info.value.report.accepted == [] and list(info.value.report.failed) == ["private"]


async def test_prune_spans_writable_tiers_and_skips_read_only_ones(tiers):
    federation = tiers.federation()
    low_private = entry("trivia", importance=0.1)
    low_shared = entry("pool trivia", importance=0.1, scope=MemoryScope.SHARED, pool_name="team")
    keep = entry("keep me", importance=0.8)
    for item in (low_private, low_shared, keep):
        await federation.write(item)
    report = await federation.prune(PrunePolicy(min_importance=0.5))
    assert report.archived == 2 and set(report.victim_ids) == {low_private.id, low_shared.id}
    assert (await tiers.private.get(low_private.id, audience=Audience.OPERATOR, include_archived=True)).archived
    assert (await tiers.private.get(keep.id)) is not None
    assert (tiers.vault_dir / "kettle.md").exists()


async def test_prune_failure_propagates(tiers, tmp_path):
    federation = tiers.federation(pool=SQLiteAdapter(corrupt_file(tmp_path / "broken.db")))
    with pytest.raises(MemoryCorruptError):
        await federation.prune(PrunePolicy(min_importance=0.5))


async def test_aclose_is_idempotent(tiers):
    federation = tiers.federation()
    await federation.write(entry("x"))
    await federation.aclose()
    await federation.aclose()
    for store in (tiers.private, tiers.pool):
        with pytest.raises(MemoryStorageError, match="not connected"):
            store.connection
