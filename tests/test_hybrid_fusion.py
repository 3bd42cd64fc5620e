"""Hybrid retrieval: the seed's min-max fusion exactly, and the fused ranking on a real store."""

from __future__ import annotations

import math

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter, hybrid_pool
from memory.embedding.fusion import DEFAULT_WEIGHTS, SEED_WEIGHTS, Weights, fuse, minmax
from memory.embedding.gateway import EmbeddingGateway
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode

AGENT = "agent-1"


def scored(entry_id: str, score: float) -> MemoryEntry:
    return MemoryEntry(id=entry_id, agent_id=AGENT, content=entry_id, score=score)


def test_minmax_fusion_is_the_seed_formula():
    semantic = [scored("both", 0.9), scored("vec-only", 0.5), scored("vec-low", 0.1)]
    keyword = [scored("both", 2.0), scored("kw-only", 6.0), scored("kw-low", 1.0)]
    fused = {e.id: e for e in fuse(semantic, keyword, Weights(7, 3), 10)}  # normalised: 0.7 / 0.3
    assert math.isclose(fused["both"].score, 0.7 * 1.0 + 0.3 * 0.2)
    assert math.isclose(fused["vec-only"].score, 0.7 * 0.5)  # one leg: 0 on the other
    assert math.isclose(fused["kw-only"].score, 0.3 * 1.0)
    assert fused["vec-low"].score == 0.0 and fused["kw-low"].score == 0.0
    assert fused["both"].matched_by == ["semantic", "keyword"] and fused["kw-only"].matched_by == ["keyword"]
    assert [e.id for e in fuse(semantic, keyword, Weights(0.7, 0.3), 2)] == ["both", "vec-only"]


def test_weights_normalise_and_reject_nonsense():
    assert SEED_WEIGHTS.normalized() == Weights(0.7, 0.3)
    assert math.isclose(sum(vars(DEFAULT_WEIGHTS.normalized()).values()), 1.0)
    assert minmax({"a": 3.0, "b": 3.0}) == {"a": 1.0, "b": 1.0}
    with pytest.raises(ValueError):
        Weights(0, 0).normalized()


async def test_hybrid_ranks_an_entry_both_legs_found_first(tmp_path, offline_embedder):
    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "m.db"), EmbeddingGateway([offline_embedder]))
    try:
        await adapter.write_many([MemoryEntry(agent_id=AGENT, content=t) for t in (
            "Alice is allergic to peanuts.",  # keyword (Alice) and meaning (food she must avoid)
            "Alice plays tennis on Sundays.",  # keyword only
            "Bob never eats shellfish.",  # meaning only
            "The printer on floor two is broken.",
        )])
        q = MemoryQuery(agent_id=AGENT, text="Alice food she must avoid", retrieval_mode=RetrievalMode.hybrid, limit=3)
        result = await adapter.recall(q)
        assert result.legs == ("semantic", "keyword")
        assert result.entries[0].content == "Alice is allergic to peanuts."
        assert result.entries[0].matched_by == ["semantic", "keyword"]
        # the adapter's hybrid is fuse() over hybrid_pool candidates from each leg, with the adapter's weights
        semantic = await adapter.search(q.model_copy(update={"retrieval_mode": RetrievalMode.semantic, "limit": hybrid_pool(3)}))
        keyword = await adapter.store.keyword_candidates(q, hybrid_pool(3))
        expected = fuse(semantic, keyword, DEFAULT_WEIGHTS, 3)
        assert [(e.id, round(e.score, 9)) for e in result.entries] == [(e.id, round(e.score, 9)) for e in expected]
        seeded = VectorAdapter(adapter.store, adapter.gateway, vector_weight=0.7, bm25_weight=0.3)
        seed_result = await seeded.search(q)
        assert [e.id for e in seed_result] == [e.id for e in fuse(semantic, keyword, SEED_WEIGHTS, 3)]
    finally:
        await adapter.aclose()
