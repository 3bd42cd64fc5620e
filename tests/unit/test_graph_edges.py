"""EdgeStore over a real SQLite file, and one-hop graph expansion with admission."""

from __future__ import annotations

import pytest

from memory.graph.edges import EdgeStore, MemoryEdge
from memory.graph.expand import expand_one_hop
from memory.types import MemoryEntry, MemoryQuery, Visibility


@pytest.fixture
async def edges(store):
    await store.connect()
    return EdgeStore(store)


async def test_upsert_is_idempotent_on_the_key(edges):
    batch = [MemoryEdge("a", "b", source="s"), MemoryEdge("a", "b", source="s"), MemoryEdge("a", "c", source="s")]
    assert await edges.upsert(batch) == 2
    assert await edges.upsert(batch) == 2
    assert await edges.count() == 2
    await edges.upsert([MemoryEdge("a", "b", source="s", confidence=0.4)])
    assert [e.confidence for e in await edges.outgoing("a")] == [0.4, 1.0]


async def test_replace_source_rewrites_only_its_own_set(edges):
    await edges.upsert([MemoryEdge("x", "y", source="other"), MemoryEdge("a", "b", source="wl")])
    assert await edges.replace_source("wl", [MemoryEdge("a", "c", source="wl")]) == 1
    assert [(e.src_id, e.dst_id, e.source) for e in await edges.outgoing("a")] == [("a", "c", "wl")]
    assert await edges.count("other") == 1  # positive control: another producer's edge stays
    with pytest.raises(ValueError):
        await edges.replace_source("wl", [MemoryEdge("q", "r", source="other")])
    assert [e.dst_id for e in await edges.outgoing("a")] == ["c"]  # refused before anything changed
    assert await edges.replace_source("wl", []) == 0
    assert await edges.count("wl") == 0 and await edges.count("other") == 1


async def test_neighbors_both_directions_deduped_and_order_stable(edges):
    await edges.upsert(
        [
            MemoryEdge("n", "z"),
            MemoryEdge("n", "b"),
            MemoryEdge("b", "n"),  # both directions: one neighbour
            MemoryEdge("a", "n"),
            MemoryEdge("n", "b", relation="mentions"),
            MemoryEdge("n", "n"),  # a self-loop is not a neighbour
            MemoryEdge("q", "r"),
        ]
    )
    assert await edges.neighbors("n") == ["b", "z", "a"]
    assert await edges.neighbors("n", "mentions") == ["b"]
    assert (await edges.neighbors_many(["n", "r", "nobody"])) == {"n": ["b", "z", "a"], "r": ["q"], "nobody": []}


async def test_expand_one_hop_adds_neighbours_with_decay_and_respects_admission(store, edges):
    seed = MemoryEntry(id="seed", agent_id="a", content="metric units")
    near = MemoryEntry(id="near", agent_id="a", content="kilograms and metres")
    hidden = MemoryEntry(id="hidden", agent_id="a", content="secret", visibility=Visibility.HIDDEN)
    other = MemoryEntry(id="other", agent_id="a", content="metric units too")
    await store.write_many([seed, near, hidden, other])
    await edges.upsert([MemoryEdge("seed", "near"), MemoryEdge("hidden", "seed"), MemoryEdge("other", "seed")])
    seeds = await store.search(MemoryQuery(text="metric units"))
    assert {e.id for e in seeds} == {"seed", "other"}

    async def fetch(ids):
        found = {}
        for entry_id in ids:
            entry = await store.get(entry_id)  # admission applies here
            if entry is not None:
                found[entry_id] = entry
        return found

    expanded = await expand_one_hop(seeds, edges, fetch, decay=0.5, limit=10)
    by_id = {e.id: e for e in expanded}
    assert "hidden" not in by_id  # the edge exists, but admission keeps it out
    assert by_id["near"].matched_by == ["graph"]
    best_seed = max(s.score for s in seeds if s.id == "seed")
    assert by_id["near"].score == pytest.approx(best_seed * 0.5)
    assert [e.id for e in expanded][-1] == "near"
    assert by_id["seed"].matched_by == ["keyword"]  # a seed keeps its own, larger score


async def test_expand_boosts_a_weak_seed_linked_from_a_strong_one(store, edges):
    strong = MemoryEntry(id="s", agent_id="a", content="x").model_copy(update={"score": 10.0, "matched_by": ["keyword"]})
    weak = MemoryEntry(id="w", agent_id="a", content="y").model_copy(update={"score": 1.0, "matched_by": ["keyword"]})
    await edges.upsert([MemoryEdge("s", "w")])

    async def fetch(ids):
        return {}

    out = await expand_one_hop([strong, weak], edges, fetch, decay=0.5)
    assert [(e.id, e.score, e.matched_by) for e in out] == [("s", 10.0, ["keyword"]), ("w", 5.0, ["keyword", "graph"])]
    with pytest.raises(ValueError):
        await expand_one_hop([strong], edges, fetch, decay=1.5)


async def test_replace_outgoing_rewrites_only_the_named_sources(edges):
    await edges.upsert([MemoryEdge("a", "b", source="wl"), MemoryEdge("a", "c", source="wl"), MemoryEdge("d", "b", source="wl")])
    await edges.upsert([MemoryEdge("a", "x", source="manual")])
    assert await edges.replace_outgoing("wl", ["a"], [MemoryEdge("a", "d", source="wl")]) == 1
    assert [(e.dst_id, e.source) for e in await edges.outgoing("a")] == [("d", "wl"), ("x", "manual")]
    assert [e.src_id for e in await edges.incoming("b")] == ["d"]  # another note's edge is untouched
    with pytest.raises(ValueError):
        await edges.replace_outgoing("wl", ["a"], [MemoryEdge("z", "b", source="wl")])


async def test_expansion_neighbours_pass_the_same_admission_and_filters_as_seeds(store, edges):
    seed = MemoryEntry(agent_id="a", content="seed about lanterns", confidence=0.9)
    ok = MemoryEntry(agent_id="a", content="linked and readable", confidence=0.9)
    hidden = MemoryEntry(agent_id="a", content="linked but hidden", confidence=0.9, visibility=Visibility.HIDDEN)
    private = MemoryEntry(agent_id="a", content="linked but private", confidence=0.9, visibility=Visibility.PRIVATE)
    weak = MemoryEntry(agent_id="a", content="linked but below the confidence floor", confidence=0.2)
    await store.write_many([seed, ok, hidden, private, weak])
    await edges.upsert([MemoryEdge(seed.id, other.id, source="t") for other in (ok, hidden, private, weak)])
    query = MemoryQuery(text="lanterns", min_confidence=0.5)
    seeds = await store.search(query)
    assert [e.id for e in seeds] == [seed.id]
    expanded = await expand_one_hop(seeds, edges, lambda ids: store.admitted_by_id(query, ids), limit=10)
    assert [(e.id, e.matched_by) for e in expanded] == [(seed.id, ["keyword"]), (ok.id, ["graph"])]
