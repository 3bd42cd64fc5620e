"""The memories a new one could be about: its nearest current neighbours in the same agent store
(or, for a write into a pool, in that pool, every member's).

Vector similarity above the ``min_similarity`` floor when the store has
vectors; otherwise keyword (the statement's words plus the words its slots'
attributes and subjects are usually stated with — "I moved to Lisbon" shares
no word with "I live in Berlin"). Both read through the admission predicate,
so only current, visible versions are candidates, and neither counts as an
access.
"""

from __future__ import annotations

from typing import Any

from memory.types import MemoryEntry, MemoryQuery


async def find_candidates(
    store: Any, vectors: Any | None, entry: MemoryEntry, extra_words: str, *, limit: int, min_similarity: float,
    shared: bool = False,
) -> list[tuple[MemoryEntry, float | None]]:
    """Up to ``2 * limit`` distinct candidates with their cosine similarity (None: found by keyword only).
    ``shared``: a pool, where every member's memories are candidates, not only the writer's."""
    found: dict[str, tuple[MemoryEntry, float | None]] = {}
    similar = None
    agent_id = None if shared else entry.agent_id
    if vectors is not None:
        query = MemoryQuery(agent_id=agent_id, text=entry.content, limit=limit)
        similar = await vectors.similar(query, limit, min_similarity)
        for hit in similar or []:
            found[hit.id] = (hit, hit.score)
    if similar is None:
        # Trigger: no vector leg (keyword-only install, embedder down). Why: OR-ing the
        # statement's and its slots' common words ranks most of a large store (65 of 84 ms
        # per write at 10k rows), so it runs only when vectors cannot answer, and on the
        # few most informative words only (memory.query_terms.focus).
        query = MemoryQuery(agent_id=agent_id, text=f"{entry.content} {extra_words}", limit=limit)
        for hit in await store.keyword_candidates(query, limit):
            found.setdefault(hit.id, (hit, None))
    found.pop(entry.id, None)
    return list(found.values())
