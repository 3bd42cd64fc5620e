"""ResilientTier over real SQLite files with faults injected at the tier boundary,
and the budgets file (connections/memory-adapters.json)."""

from __future__ import annotations

import json
import time

import pytest
from factories import entries_for
from federation_faults import FaultyTier, corrupt_file, seeded, write_locked

from memory.adapters.sqlite import SQLiteAdapter
from memory.budgets import ConnectionsConfig, TierBudget
from memory.errors import ConfigError, MemoryStorageError, TierWriteFailed
from memory.federation.resilience import BreakerState, ResilientTier
from memory.types import MemoryQuery, MemoryScope, RetrievalMode

FAST = TierBudget(read_timeout_ms=100, semantic_timeout_ms=600, write_timeout_ms=150, fail_threshold=2)


entry = entries_for("a")


def tier(adapter, budget=FAST, clock=time.monotonic) -> ResilientTier:
    return ResilientTier(adapter, name="pool:t", scope=MemoryScope.SHARED, pool_name="t", budget=budget, clock=clock)


async def test_healthy_tier_reads_and_writes(tmp_path):
    store = await seeded(tmp_path / "t.db", entry("the kettle is blue"))
    wrapped = tier(store)
    await wrapped.write(entry("the mug is red"))
    outcome = await wrapped.read(MemoryQuery(text="kettle"))
    assert [e.content for e in outcome.entries] == ["the kettle is blue"] and outcome.degraded is None
    await store.aclose()


async def test_hanging_read_times_out_to_an_empty_read_with_an_event(tmp_path):
    store = await seeded(tmp_path / "t.db", entry("the kettle is blue"))
    wrapped = tier(FaultyTier(store, delay=None))
    started = time.monotonic()
    outcome = await wrapped.read(MemoryQuery(text="kettle"))
    assert time.monotonic() - started < 1.0
    assert outcome.entries == []
    assert (outcome.degraded.tier, outcome.degraded.reason, outcome.degraded.op) == ("pool:t", "timeout", "read")
    await store.aclose()


async def test_semantic_reads_run_on_their_own_budget(tmp_path):
    store = await seeded(tmp_path / "t.db", entry("the kettle is blue"))
    wrapped = tier(FaultyTier(store, delay=0.3))  # slower than a keyword read may be, within semantic
    keyword = await wrapped.read(MemoryQuery(text="kettle", retrieval_mode=RetrievalMode.keyword))
    hybrid = await wrapped.read(MemoryQuery(text="kettle", retrieval_mode=RetrievalMode.hybrid))
    assert keyword.degraded is not None and keyword.degraded.reason == "timeout"
    assert hybrid.degraded is None and [e.content for e in hybrid.entries] == ["the kettle is blue"]
    await store.aclose()


async def test_semantic_timeout_falls_back_to_a_keyword_read(tmp_path):
    store = await seeded(tmp_path / "t.db", entry("the kettle is blue"), entry("the mug is red"))
    slow_semantic = FaultyTier(store, delay=None, modes={RetrievalMode.semantic, RetrievalMode.hybrid})
    wrapped = tier(slow_semantic)
    started = time.monotonic()
    outcome = await wrapped.read(MemoryQuery(text="kettle", retrieval_mode=RetrievalMode.hybrid))
    assert time.monotonic() - started < 1.5  # semantic budget, then one keyword read
    assert [e.content for e in outcome.entries] == ["the kettle is blue"]
    assert outcome.degraded.reason == "timeout" and "answered by keyword" in outcome.degraded.detail
    # control: a keyword read that itself hangs is not retried and comes back empty
    hanging = tier(FaultyTier(store, delay=None))
    empty = await hanging.read(MemoryQuery(text="kettle", retrieval_mode=RetrievalMode.hybrid))
    assert empty.entries == [] and "answered by keyword" not in empty.degraded.detail
    await store.aclose()


async def test_write_to_a_locked_store_times_out_as_tier_write_failed(tmp_path):
    store = await seeded(tmp_path / "t.db", entry("seed"))
    wrapped = tier(store)
    with write_locked(store.path):
        with pytest.raises(TierWriteFailed) as info:
            await wrapped.write(entry("blocked by another writer"))
    assert info.value.scope == "shared" and info.value.reason == "timeout"
    await store.aclose()


async def test_backend_error_on_write_carries_scope_and_cause(tmp_path):
    store = await seeded(tmp_path / "t.db")
    wrapped = tier(FaultyTier(store, error=MemoryStorageError("disk full")))
    with pytest.raises(TierWriteFailed) as info:
        await wrapped.write(entry("x"))
    assert info.value.reason == "backend_error" and "disk full" in str(info.value.cause)
    await store.aclose()


async def test_corrupt_store_forces_the_breaker_open_and_later_calls_fail_fast(tmp_path):
    path = corrupt_file(tmp_path / "t.db")
    store = SQLiteAdapter(path)  # a shared tier: never quarantined at open
    faulty = FaultyTier(store)
    wrapped = tier(faulty)
    first = await wrapped.read(MemoryQuery(text="anything"))
    assert first.entries == [] and first.degraded.reason == "corruption"
    assert wrapped.breaker.state is BreakerState.OPEN and wrapped.breaker.forced_reason == "corruption"
    second = await wrapped.read(MemoryQuery(text="anything"))
    assert second.degraded.reason == "breaker_open"
    assert faulty.calls == 1  # the open breaker kept the second call off the store
    assert not (await wrapped.health_check()).healthy
    assert path.exists()  # nothing moved or deleted


async def test_breaker_trips_in_real_traffic_then_recovers_through_one_probe(tmp_path):
    now = [0.0]
    store = await seeded(tmp_path / "t.db", entry("the kettle is blue"))
    faulty = FaultyTier(store, error=MemoryStorageError("flaky"))
    wrapped = tier(faulty, clock=lambda: now[0])
    for _ in range(2):
        assert (await wrapped.read(MemoryQuery(text="kettle"))).degraded.reason == "backend_error"
    assert wrapped.breaker.state is BreakerState.OPEN
    assert (await wrapped.read(MemoryQuery(text="kettle"))).degraded.reason == "breaker_open"
    assert faulty.calls == 2
    faulty.error = None  # the backend recovers
    now[0] += FAST.reset_after_seconds
    recovered = await wrapped.read(MemoryQuery(text="kettle"))
    assert recovered.degraded is None and len(recovered.entries) == 1
    assert wrapped.breaker.state is BreakerState.CLOSED
    await store.aclose()


async def test_read_only_tier_refuses_writes_without_touching_the_backend(tmp_path):
    store = await seeded(tmp_path / "t.db")
    faulty = FaultyTier(store)
    wrapped = ResilientTier(faulty, name="vault:v", scope=MemoryScope.SHARED, read_only=True)
    with pytest.raises(TierWriteFailed) as info:
        await wrapped.write(entry("x"))
    assert info.value.reason == "read_only" and faulty.calls == 0
    await store.aclose()


# -- budgets file ---------------------------------------------------------------


def test_missing_connections_file_means_defaults(arcana_home):
    config = ConnectionsConfig.load(arcana_home.connections_path)
    assert config.for_tier(MemoryScope.PRIVATE) == TierBudget()


def test_connections_file_sets_budgets_per_tier_and_pool(arcana_home):
    path = arcana_home.connections_path
    path.parent.mkdir(parents=True)
    path.write_text(
        json.dumps(
            {
                "private": {"read_timeout_ms": 250, "semantic_timeout_ms": 1500, "write_timeout_ms": 500},
                "global": {"read_timeout_ms": 400, "write_timeout_ms": 600},
                "shared": {"team-research": {"read_timeout_ms": 300}},
                "default_shared": {"read_timeout_ms": 450},
            }
        )
    )
    config = ConnectionsConfig.load(path)
    assert config.for_tier(MemoryScope.PRIVATE).write_timeout_ms == 500
    assert config.for_tier(MemoryScope.GLOBAL).read_timeout_ms == 400
    assert config.for_tier(MemoryScope.SHARED, "team-research").read_timeout_ms == 300
    assert config.for_tier(MemoryScope.SHARED, "other").read_timeout_ms == 450


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("{not json", "invalid JSON at line 1"),
        ("[1, 2]", "top level must be a JSON object"),
        ('{"private": {"read_timeout_ms": -5}}', "private.read_timeout_ms"),
        ('{"privte": {}}', "privte"),
    ],
)
def test_malformed_connections_file_is_a_clear_error(arcana_home, text, needle):
    path = arcana_home.connections_path
    path.parent.mkdir(parents=True)
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        ConnectionsConfig.load(path)
    assert str(path) in str(info.value) and needle in str(info.value)


async def test_search_used_alone_is_total_and_emits_its_event(tmp_path):
    events = []
    store = SQLiteAdapter(corrupt_file(tmp_path / "t.db"))
    wrapped = ResilientTier(store, name="global", scope=MemoryScope.GLOBAL, on_degraded=events.append)
    assert await wrapped.search(MemoryQuery(text="x")) == []
    assert [(e.tier, e.reason) for e in events] == [("global", "corruption")]
    healthy = ResilientTier(await seeded(tmp_path / "ok.db", entry("x marks")), name="p", scope=MemoryScope.PRIVATE)
    assert [e.content for e in await healthy.search(MemoryQuery(text="marks"))] == ["x marks"]
    await healthy.backend.aclose()


def test_a_cold_model_load_is_not_charged_to_the_write_budget(tmp_path):
    """The first embedded write of a process loads the model outside the private tier's budget."""
    import json
    import os
    import subprocess
    import sys

    home = tmp_path / "home"
    home.joinpath("connections").mkdir(parents=True)
    # 300 ms: a cold MiniLM load takes longer on its own (0.25-0.7 s here); one write takes a few ms.
    home.joinpath("connections", "memory-adapters.json").write_text(json.dumps({"private": {"write_timeout_ms": 300}}))
    env = {**os.environ, "ARCANA_HOME": str(home)}
    command = [sys.executable, "-m", "arcana_cli.main", "remember", "The kettle is blue.", "--agent", "a", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "private" in json.loads(done.stdout)["accepted"]
    status = subprocess.run([sys.executable, "-m", "arcana_cli.main", "embeddings", "status", "--json"],
                            capture_output=True, text=True, env=env, timeout=120)
    [row] = [r for r in json.loads(status.stdout)["databases"] if r["agent"] == "a"]
    assert (row["rows"], row["embedded"]) == (1, 1)  # the write really embedded, within its budget
