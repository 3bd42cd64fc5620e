"""Hybrid retrieval: the fusion formula exactly (seed min-max, confidence-weighted), neighbour
scoring, and the fused ranking on a real store."""

from __future__ import annotations

import math

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.embedding.gateway import EmbeddingGateway
from memory.ranking.fusion import (
    DEFAULT_WEIGHTS,
    SEED_WEIGHTS,
    Weights,
    asks,
    best,
    confidence,
    fuse,
    hand_to_replies,
    lift_by_pairs,
    minmax,
    hybrid_pool,
    spread_to_neighbours,
)
from memory.query_terms import terms
from memory.sqlite import fts
from memory.sqlite.admission import where
from memory.sqlite.fts import pair_share
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode, Visibility

AGENT = "agent-1"


def scored(entry_id: str, score: float) -> MemoryEntry:
    return MemoryEntry(id=entry_id, agent_id=AGENT, content=entry_id, score=score)


def test_fusion_is_the_seed_minmax_weighted_by_each_legs_confidence():
    semantic = [scored("both", 0.9), scored("vec-only", 0.5), scored("vec-low", 0.1)]
    keyword = [scored("both", 2.0), scored("kw-only", 6.0), scored("kw-low", 1.0)]
    # confidence: (best - median of the rest) / best
    assert math.isclose(confidence([0.9, 0.5, 0.1]), (0.9 - 0.3) / 0.9)
    assert math.isclose(confidence([2.0, 6.0, 1.0]), (6.0 - 1.5) / 6.0)
    v, k = 0.7 * (0.6 / 0.9), 0.3 * (4.5 / 6.0)  # Weights(7, 3) normalised, then scaled
    fused = {e.id: e for e in fuse(semantic, keyword, Weights(7, 3), 10)}
    assert math.isclose(fused["both"].score, v * 1.0 + k * 0.2)
    assert math.isclose(fused["vec-only"].score, v * 0.5)  # one leg: 0 on the other
    assert math.isclose(fused["kw-only"].score, k * 1.0)
    assert fused["vec-low"].score == 0.0 and fused["kw-low"].score == 0.0
    assert fused["both"].matched_by == ["semantic", "keyword"] and fused["kw-only"].matched_by == ["keyword"]
    assert [e.id for e in fuse(semantic, keyword, Weights(0.7, 0.3), 2)] == ["both", "vec-only"]
    # the keyword leg's weight also scales by its best hit's coverage of the query words, squared
    half = {e.id: e.score for e in fuse(semantic, keyword, Weights(7, 3), 10, coverage=0.5)}
    assert math.isclose(half["kw-only"], k * 0.25) and math.isclose(half["vec-only"], v * 0.5)


def test_a_leg_whose_hits_all_score_alike_steps_back():
    semantic = [scored("meant", 0.8), scored("near", 0.4), scored("far", 0.1)]
    flat = [scored("common-word-1", 3.0), scored("common-word-2", 3.0), scored("common-word-3", 3.0)]
    assert confidence([3.0, 3.0, 3.0]) == 0.0 and confidence([]) == 0.0 and confidence([2.0]) == 1.0
    ranked = [e.id for e in fuse(semantic, flat, Weights(0.2, 0.8), 3)]
    assert ranked == ["meant", "near", "common-word-1"]  # keyword-heavy weights, yet meaning leads
    # both legs flat: the weights as given, so the result is still a ranking
    both_flat = fuse([scored("a", 0.5), scored("b", 0.5)], flat, Weights(0.2, 0.8), 5)
    assert {e.id: e.score for e in both_flat} == {"a": 0.2, "b": 0.2} | dict.fromkeys([e.id for e in flat], 0.8)


def test_adjacent_turns_share_a_match():
    fused = {"answer": 0.6, "question": 0.5, "other": 0.55}
    lifted = spread_to_neighbours(fused, {"answer": "question", "unrelated": "other"}, 0.3)
    assert math.isclose(lifted["question"], 0.5 + 0.3 * 0.6) and math.isclose(lifted["answer"], 0.6 + 0.3 * 0.5)
    assert lifted["other"] == 0.55  # its neighbour is not a candidate: nothing to share
    assert best(lifted, 3) == ["answer", "question", "other"]


def test_a_reply_takes_the_score_of_the_turn_that_asked():
    fused = {"asks": 0.9, "reply": 0.5, "strong-reply": 0.95, "asks-2": 0.4, "statement": 0.7, "after-statement": 0.3}
    previous = {"reply": "asks", "strong-reply": "asks-2", "after-statement": "statement", "gone": "asks"}
    lifted = hand_to_replies(fused, previous, {"asks", "asks-2"})
    assert lifted["reply"] == 0.9  # lifted to the asking turn's score
    assert lifted["strong-reply"] == 0.95  # already higher: kept
    assert lifted["after-statement"] == 0.3  # control: the turn before it asks nothing
    assert "gone" not in lifted and lifted["asks"] == 0.9  # only candidates take part; the asker keeps its score
    assert asks("Caroline: What kind of books do you have? ") and not asks("Who knows? Not me.")


def test_word_pairs_lift_a_candidate_by_its_share():
    lifted = lift_by_pairs({"phrase": 0.5, "scattered": 0.6, "half": 0.4}, {"phrase": 1.0, "half": 0.5})
    assert lifted == {"phrase": 1.0, "scattered": 0.6, "half": 0.6000000000000001}
    assert best(lifted, 3) == ["phrase", "half", "scattered"]


# cap 0: every word counts as common, so each pair is matched per candidate (a large store's path)
@pytest.mark.parametrize("cap", [fts.PAIR_DF_CAP, 0])
async def test_pair_share_counts_query_word_pairs_said_together_and_only_for_admitted_rows(tmp_path, monkeypatch, cap):
    monkeypatch.setattr(fts, "PAIR_DF_CAP", cap)
    store = SQLiteAdapter(tmp_path / "m.db")
    try:
        together = MemoryEntry(agent_id=AGENT, content="Caroline: I went to a support group yesterday.")
        apart = MemoryEntry(agent_id=AGENT, content="Caroline: The group chat was quiet, thanks for the support.")
        hidden = MemoryEntry(agent_id=AGENT, content="Caroline: The support group meets on Mondays.")
        await store.write_many([together, apart, hidden])
        await store.set_visibility([hidden.id], Visibility.HIDDEN)
        q = MemoryQuery(agent_id=AGENT, text="When did Caroline go to the support groups?")
        clause = where(q)
        ids = [together.id, apart.id, hidden.id]
        shares = await store.run(pair_share, terms(q.text), ids, clause.sql, clause.params)
        # pairs: (caroline, go), (go, support), (support, groups); only the last is said together
        # (stemmed: groups ~ group); "apart" holds both words six apart; the hidden row says it
        # too but is not admitted, so it gets no share at all
        assert shares == {together.id: pytest.approx(1 / 3)}
        one_word = await store.run(pair_share, terms("support"), ids, clause.sql, clause.params)
        assert one_word == {}
    finally:
        await store.aclose()


async def test_coverage_is_the_share_of_query_words_a_hit_contains(tmp_path):
    store = SQLiteAdapter(tmp_path / "m.db")
    try:
        covered, stray = MemoryEntry(agent_id=AGENT, content="Caroline: I applied to adoption agencies!"), \
            MemoryEntry(agent_id=AGENT, content="Caroline: hiking was fun.")
        await store.write_many([covered, stray])
        q = MemoryQuery(agent_id=AGENT, text="When did Caroline apply to adoption agencies?")
        clause = where(q)

        async def share(entry_id, text=q.text):
            return await store.run(fts.coverage, terms(text), entry_id, clause.sql, clause.params)

        assert await share(covered.id) == 1.0  # stemmed by the index: apply ~ applied
        assert await share(stray.id) == 0.25  # only the name
        assert await share(covered.id, "?!") == 0.0
        # the keyword leg reports its best hit's coverage
        hits, best_coverage = await store.keyword_leg(q, terms(q.text), 5)
        assert [h.id for h in hits][0] == covered.id and best_coverage == 1.0
        # hidden means hidden: a hidden row reveals nothing, not even how many words it holds
        await store.set_visibility([covered.id], Visibility.HIDDEN)
        assert await share(covered.id) == 0.0
        assert await share(stray.id) == 0.25  # the visible one still answers
        hits, best_coverage = await store.keyword_leg(q, terms(q.text), 5)
        assert [h.id for h in hits] == [stray.id] and best_coverage == 0.25
    finally:
        await store.aclose()


def test_a_keyword_hit_on_a_stray_word_counts_little():
    semantic = [scored("meant", 0.6), scored("near", 0.5), scored("far", 0.1)]
    keyword = [scored("stray", 5.0), scored("weak", 1.0), scored("weaker", 0.5)]
    # full coverage: the keyword leg's best hit leads at even weights
    assert [e.id for e in fuse(semantic, keyword, DEFAULT_WEIGHTS, 2, coverage=1.0)][0] == "stray"
    # it matched one of four query words: meaning leads
    assert [e.id for e in fuse(semantic, keyword, DEFAULT_WEIGHTS, 2, coverage=0.25)][0] == "meant"


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
        keyword, coverage = await adapter.store.keyword_leg(q, terms(q.text), hybrid_pool(3))
        assert 0 < coverage < 1  # "Alice" is in the best keyword hit, "food", "must", "avoid" are not
        expected = fuse(semantic, keyword, DEFAULT_WEIGHTS, 3, coverage)
        assert [(e.id, round(e.score, 9)) for e in result.entries] == [(e.id, round(e.score, 9)) for e in expected]
        seeded = VectorAdapter(adapter.store, adapter.gateway, vector_weight=0.7, bm25_weight=0.3)
        seed_result = await seeded.search(q)
        assert [e.id for e in seed_result] == [e.id for e in fuse(semantic, keyword, SEED_WEIGHTS, 3, coverage)]
    finally:
        await adapter.aclose()


class _Counted:
    """The real store, counting each call the vector adapter makes into it."""

    def __init__(self, store):
        self._store, self.calls = store, []

    def __getattr__(self, name):
        value = getattr(self._store, name)
        if not callable(value):
            return value

        def counted(*args, **kwargs):
            self.calls.append(name)
            return value(*args, **kwargs)

        return counted


async def test_one_hybrid_recall_enters_the_store_once_per_leg(tmp_path, offline_embedder):
    store = SQLiteAdapter(tmp_path / "m.db")
    adapter = VectorAdapter(store, EmbeddingGateway([offline_embedder]))
    try:
        await adapter.write_many([MemoryEntry(agent_id=AGENT, content=t, source_session_id="s1") for t in (
            "Melanie: What did you adopt?", "Caroline: A cat, Milo, two years old.", "Caroline: I work at a bakery.",
        )])
        q = MemoryQuery(agent_id=AGENT, text="the cat Caroline adopted", retrieval_mode=RetrievalMode.hybrid, limit=3)
        expected = [e.id for e in (await adapter.recall(q)).entries]
        adapter.store = _Counted(store)
        assert [e.id for e in (await adapter.recall(q)).entries] == expected
        # the pin, each leg, the re-rank's context, the access buffer: five, not ten
        assert adapter.store.calls == ["vector_pin", "semantic_leg", "keyword_leg", "turn_context", "record_access"]
    finally:
        await store.aclose()
