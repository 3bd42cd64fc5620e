"""Hybrid fusion: combine the semantic and keyword legs into one ranking.

The seed's formula: each leg's scores (already higher-is-better) are min-max
normalised to [0, 1] within the query's candidate pool and combined with
weights normalised to sum 1; an entry found by one leg scores 0 on the other.
On top of it each leg's weight is scaled, per query, by how much that leg can
be trusted for this query:

- both legs by their *confidence*: how far the best score stands above the
  median of the pool (a keyword leg that matched only a common word, every
  hit alike, steps back);
- the keyword leg also by its *coverage*, squared: the share of the query's
  search words its best hit contains. A paraphrase shares few words with its
  memory, so the keyword leg's best hit matched one stray word and counts
  little; a question whose words are all in one turn ("When did Caroline
  apply to adoption agencies?") lets it lead.

Measured on the LoCoMo dev split and tests/eval/retrieval_eval.py (figures in
man/benchmarks.md, "How the hybrid ranking was chosen"): with coverage the base weights can be
even, 0.5 / 0.5 — LoCoMo any@10 / MRR@10 0.825 / 0.515 -> 0.846 / 0.552
(cross-validated 0.843 / 0.549) with no slice of our eval below its floor;
without coverage, even weights cost the synthetic paraphrase slice (MRR 0.786
-> 0.736 at 0.6 / 0.4). Config keys embedding.vector_weight and
embedding.keyword_weight override the base weights.

The best fused candidates are then re-ranked (:func:`spread_to_neighbours`,
:func:`lift_by_pairs`, :func:`hand_to_replies`, then
:func:`memory.ranking.speakers.lift_named_speakers`,
:func:`memory.ranking.dated.lift_dated_lines`): adjacent turns scored
together, the query's word pairs said together, the reply to a turn that
asked the question, the lines of a speaker the query names, and for a
question that asks when, the lines that say when. LoCoMo any@10 / MRR@10 0.846 / 0.552 -> 0.859 / 0.614
with the federation's asking weight (see memory.federation.router).
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memory.config import DEFAULT_KEYWORD_WEIGHT, DEFAULT_VECTOR_WEIGHT
from memory.ranking.dated import lift_dated_lines
from memory.ranking.speakers import lift_named_speakers
from memory.types import MemoryEntry

SEED_VECTOR_WEIGHT = 0.7
SEED_KEYWORD_WEIGHT = 0.3
# The keyword leg's weight is scaled by its best hit's coverage to this power:
# 2 measured best in every cross-validation fold (1 lets paraphrases lose).
COVERAGE_POWER = 2
# What an adjacent turn of the same session gains of a match's fused score,
# among the best NEIGHBOUR_POOL x limit fused candidates (LoCoMo any@10 +0.008
# at 0.15 over none; 0.1-0.3 within 0.005; the whole pool of 100 measured
# within 0.002 of the best 30, at three times the lookups).
NEIGHBOUR_SHARE = 0.15
NEIGHBOUR_POOL = 3
# Those best NEIGHBOUR_POOL x limit are then re-ranked on what the legs' bags of
# words cannot see: the query's word pairs said together (lift_by_pairs) and a
# reply taking the score of the turn that asked (hand_to_replies). LoCoMo
# through the federation, with the federation's asking weight: any@10 / MRR@10
# 0.846 / 0.552 -> 0.859 / 0.614 (man/benchmarks.md).


def hybrid_pool(limit: int) -> int:
    """Candidates each hybrid leg contributes: enough that fusion can reorder, few enough to stay fast.

    On LoCoMo an evidence turn was in the top 50 of either leg for 96.6% of
    questions; 30 and 100 measured the same any@10 at 50's cost or more.
    """
    return max(5 * limit, 50)


@dataclass(frozen=True)
class Weights:
    vector: float
    keyword: float

    def normalized(self) -> Weights:
        """The two weights as shares summing to 1. Scaled by the larger first: two weights near the
        largest float add up to infinity, and would divide to 0 and 0."""
        if self.vector < 0 or self.keyword < 0 or max(self.vector, self.keyword) <= 0:
            raise ValueError("fusion weights must be non-negative and not both zero")
        vector, keyword = (w / max(self.vector, self.keyword) for w in (self.vector, self.keyword))
        return Weights(vector / (vector + keyword), keyword / (vector + keyword))


DEFAULT_WEIGHTS = Weights(DEFAULT_VECTOR_WEIGHT, DEFAULT_KEYWORD_WEIGHT)
SEED_WEIGHTS = Weights(SEED_VECTOR_WEIGHT, SEED_KEYWORD_WEIGHT)


def minmax(scores: dict[str, float]) -> dict[str, float]:
    """Scale to [0, 1] within the pool; a pool of equal scores all get 1."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high == low:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}


def confidence(scores: Sequence[float]) -> float:
    """How far a leg's best score stands above its pool's median, as a fraction of the best.

    1 for a lone hit, 0 for an empty leg or one whose scores are all alike.
    """
    if not scores:
        return 0.0
    ordered = sorted(scores, reverse=True)
    top = ordered[0]
    if len(ordered) == 1:
        return 1.0
    if top <= 0:
        return 0.0
    return max(0.0, (top - statistics.median(ordered[1:])) / top)


def fused_scores(
    semantic: Sequence[MemoryEntry],
    keyword: Sequence[MemoryEntry],
    weights: Weights,
    coverage: float = 1.0,
) -> dict[str, float]:
    """Each candidate's fused score, by id (see the module docstring).

    ``coverage`` is the share of the query's search words the keyword leg's
    best hit contains (1 when the backend cannot tell: the seed's weighting).
    Both legs untrusted: the weights as given.
    """
    w = weights.normalized()
    vector_w = w.vector * confidence([e.score or 0.0 for e in semantic])
    keyword_w = w.keyword * confidence([e.score or 0.0 for e in keyword]) * coverage**COVERAGE_POWER
    if vector_w + keyword_w <= 0:
        vector_w, keyword_w = w.vector, w.keyword
    vec = minmax({e.id: e.score or 0.0 for e in semantic})
    kw = minmax({e.id: e.score or 0.0 for e in keyword})
    return {i: vector_w * vec.get(i, 0.0) + keyword_w * kw.get(i, 0.0) for i in vec.keys() | kw.keys()}


def best(scores: Mapping[str, float], limit: int) -> list[str]:
    """The ``limit`` best ids, ties by id (so a ranking never depends on dict order)."""
    return sorted(scores, key=lambda i: (-scores[i], i))[:limit]


def ranked_entries(
    scores: Mapping[str, float], semantic: Sequence[MemoryEntry], keyword: Sequence[MemoryEntry], limit: int
) -> list[MemoryEntry]:
    """The best ``limit`` candidates as entries carrying their fused score and the legs that found them.

    Only these are copied: a pool of 100 candidates is ranked on ids.
    """
    sem = {e.id: e for e in semantic}
    kw = {e.id: e for e in keyword}
    out = []
    for entry_id in best(scores, limit):
        legs = [leg for leg, pool in (("semantic", sem), ("keyword", kw)) if entry_id in pool]
        entry = sem.get(entry_id) or kw[entry_id]
        out.append(entry.model_copy(update={"score": scores[entry_id], "matched_by": legs}))
    return out


def fuse(
    semantic: Sequence[MemoryEntry],
    keyword: Sequence[MemoryEntry],
    weights: Weights,
    limit: int,
    coverage: float = 1.0,
) -> list[MemoryEntry]:
    """The fused top ``limit``; each entry's score is its fused score, matched_by its legs."""
    return ranked_entries(fused_scores(semantic, keyword, weights, coverage), semantic, keyword, limit)


def spread_to_neighbours(scores: Mapping[str, float], previous: Mapping[str, str], share: float) -> dict[str, float]:
    """Adjacent turns of one session scored together: each gains ``share`` of its neighbour's score.

    ``previous`` maps an entry id to the id of the turn before it. A question
    is often answered across two turns ("How was Paris?" / "Amazing!"), so a
    turn next to a strong match is lifted; only candidates already scored take
    part.
    """
    lifted = dict(scores)
    for later, earlier in previous.items():
        if later in scores and earlier in scores:
            lifted[earlier] = max(lifted[earlier], scores[earlier] + share * scores[later])
            lifted[later] = max(lifted[later], scores[later] + share * scores[earlier])
    return lifted


def asks(content: str) -> bool:
    """Does the memory end by asking a question (its last character a question mark)?"""
    return content.rstrip().endswith("?")


def lift_by_pairs(scores: Mapping[str, float], pair_share: Mapping[str, float]) -> dict[str, float]:
    """Each candidate's score times 1 + the share of the query's word pairs its own text holds.

    A memory that says "support group" is closer to "the support group
    Caroline went to" than one that says "group" and, elsewhere, "support";
    the bag of words the legs rank by cannot tell them apart.
    """
    return {i: v * (1.0 + pair_share.get(i, 0.0)) for i, v in scores.items()}


def hand_to_replies(scores: Mapping[str, float], previous: Mapping[str, str], asking: set[str]) -> dict[str, float]:
    """The reply to a candidate that asks scores at least as high as the asking turn.

    ``previous`` maps a turn to the turn before it, ``asking`` holds the
    candidates that end with a question. The turn "What kind of books do you
    have?" repeats a later query's words, its reply ("Kids' books, classics…")
    holds the answer: among candidates already scored, the reply takes the
    asking turn's score when its own is lower.
    """
    lifted = dict(scores)
    for reply, earlier in previous.items():
        if earlier in asking and reply in scores and earlier in scores:
            lifted[reply] = max(lifted[reply], scores[earlier])
    return lifted


def rerank(
    scores: Mapping[str, float],
    near: Sequence[str],
    previous: Mapping[str, str],
    pair_share: Mapping[str, float],
    semantic: Sequence[MemoryEntry],
    keyword: Sequence[MemoryEntry],
    limit: int,
    query_text: str,
) -> list[MemoryEntry]:
    """The best ``limit`` of the ``near`` candidates once re-ranked on what the legs' bags of words
    cannot see: adjacent turns scored together, the query's word pairs said together, the
    reply to a turn that asked (``previous``: turn to the turn before it, among admitted rows),
    the lines of a speaker ``query_text`` names (:mod:`memory.ranking.speakers`) and, when it
    asks when, the lines that say when (:mod:`memory.ranking.dated`)."""
    lifted = spread_to_neighbours({i: scores[i] for i in near}, previous, NEIGHBOUR_SHARE)
    lifted = lift_by_pairs(lifted, pair_share)
    content = {e.id: e.content for e in (*keyword, *semantic)}
    lifted = hand_to_replies(lifted, previous, {i for i in near if asks(content[i])})
    lifted = lift_named_speakers(lifted, content, query_text)
    lifted = lift_dated_lines(lifted, content, query_text)
    return ranked_entries(lifted, semantic, keyword, limit)


def fuse_rrf(
    semantic: Sequence[MemoryEntry], keyword: Sequence[MemoryEntry], limit: int, *, k: int = 60
) -> list[MemoryEntry]:
    """Reciprocal-rank fusion: each leg adds ``1 / (k + rank)``; scales never meet."""
    scores: dict[str, float] = {}
    legs: dict[str, list[str]] = {}
    entries = {e.id: e for e in keyword} | {e.id: e for e in semantic}
    for name, leg in (("semantic", semantic), ("keyword", keyword)):
        for rank, entry in enumerate(leg, 1):
            scores[entry.id] = scores.get(entry.id, 0.0) + 1.0 / (k + rank)
            legs.setdefault(entry.id, []).append(name)
    fused = [entries[i].model_copy(update={"score": s, "matched_by": legs[i]}) for i, s in scores.items()]
    fused.sort(key=lambda e: (-e.score, e.id))
    return fused[:limit]
