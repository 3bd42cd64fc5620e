"""Hybrid recall for either engine: the legs asked once each, one fusion for both.

An engine answers each step in one call — its semantic leg (the caller's,
since how a query vector is searched is the engine's own), ``keyword_leg``
(BM25 matches and the best one's coverage of the query's words) and
``turn_context`` (the turn before each strong candidate, and its share of the
query's word pairs) — and the ranking between the calls is
:mod:`memory.ranking.fusion`'s, the same for SQLite and PostgreSQL.
"""

from __future__ import annotations

from typing import Protocol

from memory.query_terms import QueryTerms
from memory.ranking.fusion import NEIGHBOUR_POOL, Weights, best, fused_scores, hybrid_pool, rerank
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode


class HybridEngine(Protocol):
    async def keyword_leg(self, query: MemoryQuery, parsed: QueryTerms, limit: int) -> tuple[list[MemoryEntry], float]: ...

    async def turn_context(
        self, query: MemoryQuery, parsed: QueryTerms, entry_ids: list[str]
    ) -> tuple[dict[str, str], dict[str, float]]: ...


def asks_vectors(query: MemoryQuery, parsed: QueryTerms) -> bool:
    """Whether ``query`` is searched by vector at all, on either engine: not in keyword mode, not
    without text, and not a hybrid query with no word to search (punctuation, an emoji), which
    is the listing keyword mode gives it, not whatever a vector of "?" lands near."""
    if query.retrieval_mode is RetrievalMode.keyword or not (query.text and query.text.strip()):
        return False
    return query.retrieval_mode is not RetrievalMode.hybrid or bool(parsed.tokens)


async def hybrid(
    engine: HybridEngine, query: MemoryQuery, parsed: QueryTerms, semantic: list[MemoryEntry], weights: Weights
) -> list[MemoryEntry]:
    """The fused top ``query.limit`` of ``semantic`` (the semantic leg's best :func:`hybrid_pool`)
    and the engine's keyword leg, re-ranked among the best few with their turn context."""
    keyword, coverage = await engine.keyword_leg(query, parsed, hybrid_pool(query.limit))
    scores = fused_scores(semantic, keyword, weights, coverage)
    near = best(scores, NEIGHBOUR_POOL * query.limit)
    previous, pairs = await engine.turn_context(query, parsed, near)
    return rerank(scores, near, previous, pairs, semantic, keyword, query.limit, query.text or "")
