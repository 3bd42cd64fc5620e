"""Hybrid fusion: combine the semantic and keyword legs into one ranking.

The seed's formula: each leg's scores (already higher-is-better) are min-max
normalised to [0, 1] within the query's candidate pool and combined with
weights normalised to sum 1; an entry found by one leg scores 0 on the other.
On top of it each leg's weight is scaled, per query, by that leg's confidence:
how far its best score stands above the median of its pool. A keyword leg
that matched only on a common word (every hit scores alike) then steps back,
and one whose best hit matched the rare words leads. Measured on the LoCoMo
dev split and on tests/eval/retrieval_eval.py (figures in README, "Semantic
and hybrid recall"): at 0.8 / 0.2 it lifts LoCoMo any@10 from 0.689 (plain
min-max) to 0.825 and loses no slice of our eval; keyword-leaning weights
(0.6 / 0.4: LoCoMo 0.854) cost the synthetic paraphrase slice MRR 0.786 ->
0.736, so they are not the default. Config keys embedding.vector_weight and
embedding.keyword_weight override the base weights.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from memory.types import MemoryEntry

SEED_VECTOR_WEIGHT = 0.7
SEED_KEYWORD_WEIGHT = 0.3
DEFAULT_VECTOR_WEIGHT = 0.8
DEFAULT_KEYWORD_WEIGHT = 0.2
DEFAULT_MIN_SIMILARITY = 0.2


@dataclass(frozen=True)
class Weights:
    vector: float
    keyword: float

    def normalized(self) -> Weights:
        total = self.vector + self.keyword
        if self.vector < 0 or self.keyword < 0 or total <= 0:
            raise ValueError("fusion weights must be non-negative and not both zero")
        return Weights(self.vector / total, self.keyword / total)


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


def fuse(
    semantic: Sequence[MemoryEntry], keyword: Sequence[MemoryEntry], weights: Weights, limit: int
) -> list[MemoryEntry]:
    """The fused top ``limit``; each entry's score is its fused score, matched_by its legs.

    Weights are scaled by each leg's :func:`confidence` for this query (both
    unconfident: the weights as given).
    """
    w = weights.normalized()
    vector_w = w.vector * confidence([e.score or 0.0 for e in semantic])
    keyword_w = w.keyword * confidence([e.score or 0.0 for e in keyword])
    if vector_w + keyword_w <= 0:
        vector_w, keyword_w = w.vector, w.keyword
    vec = minmax({e.id: e.score or 0.0 for e in semantic})
    kw = minmax({e.id: e.score or 0.0 for e in keyword})
    entries = {e.id: e for e in keyword} | {e.id: e for e in semantic}
    fused: list[MemoryEntry] = []
    for entry_id, entry in entries.items():
        legs = [leg for leg, pool in (("semantic", vec), ("keyword", kw)) if entry_id in pool]
        score = vector_w * vec.get(entry_id, 0.0) + keyword_w * kw.get(entry_id, 0.0)
        fused.append(entry.model_copy(update={"score": score, "matched_by": legs}))
    fused.sort(key=lambda e: (-e.score, e.id))
    return fused[:limit]


def spread_to_neighbours(
    fused: Sequence[MemoryEntry], previous: Mapping[str, str], share: float
) -> list[MemoryEntry]:
    """Adjacent turns of one session scored together: each gains ``share`` of its neighbour's score.

    ``previous`` maps an entry id to the id of the turn before it. A question
    is often answered across two turns ("How was Paris?" / "Amazing!"), so a
    turn next to a strong match is lifted; only candidates already in the
    pool take part. Re-sorted, same length.
    """
    score = {e.id: e.score or 0.0 for e in fused}
    lifted = dict(score)
    for later, earlier in previous.items():
        if later in score and earlier in score:
            lifted[earlier] = max(lifted[earlier], score[earlier] + share * score[later])
            lifted[later] = max(lifted[later], score[later] + share * score[earlier])
    out = [e.model_copy(update={"score": lifted[e.id]}) if lifted[e.id] != score[e.id] else e for e in fused]
    out.sort(key=lambda e: (-(e.score or 0.0), e.id))
    return out


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
