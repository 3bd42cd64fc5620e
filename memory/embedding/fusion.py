"""Hybrid fusion: combine the semantic and keyword legs into one ranking.

The seed's formula: each leg's scores (already higher-is-better) are min-max
normalised to [0, 1] within the query's candidate pool and combined with
weights normalised to sum 1; an entry found by one leg scores 0 on the other.
The seed weights it 0.7 vector / 0.3 keyword. On our evaluation
(tests/eval/retrieval_eval.py) 0.8 / 0.2 was the weighting that beat both legs
on recall@5 and MRR; keyword-leaning weights (which won on an upstream
conversational benchmark) lost to the semantic leg alone there. See README
(semantic section) for the figures; config keys embedding.vector_weight and
embedding.keyword_weight override it.
"""

from __future__ import annotations

from collections.abc import Sequence
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


def fuse(
    semantic: Sequence[MemoryEntry], keyword: Sequence[MemoryEntry], weights: Weights, limit: int
) -> list[MemoryEntry]:
    """The fused top ``limit``; each entry's score is its fused score, matched_by its legs."""
    w = weights.normalized()
    vec = minmax({e.id: e.score or 0.0 for e in semantic})
    kw = minmax({e.id: e.score or 0.0 for e in keyword})
    entries = {e.id: e for e in keyword} | {e.id: e for e in semantic}
    fused: list[MemoryEntry] = []
    for entry_id, entry in entries.items():
        legs = [leg for leg, pool in (("semantic", vec), ("keyword", kw)) if entry_id in pool]
        score = w.vector * vec.get(entry_id, 0.0) + w.keyword * kw.get(entry_id, 0.0)
        fused.append(entry.model_copy(update={"score": score, "matched_by": legs}))
    fused.sort(key=lambda e: (-e.score, e.id))
    return fused[:limit]


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
