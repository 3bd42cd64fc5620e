"""Graph-aware recall: seed with search results, expand one hop along edges, re-rank.

The seed populates edges but never reads them; this is the read side. A
neighbour reached from a seed scores ``seed score × decay`` (the best such
path wins); a seed that is also a neighbour keeps the larger of its own score
and the graph score. Entries that came only by expansion are marked
``matched_by=["graph"]``; seeds boosted by a neighbour get ``"graph"`` added.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

from memory.graph.edges import EdgeStore
from memory.types import MemoryEntry

DEFAULT_DECAY = 0.5
MAX_NEIGHBOURS_PER_SEED = 8

Fetch = Callable[[list[str]], Awaitable[dict[str, MemoryEntry]]]


async def expand_one_hop(
    seeds: Sequence[MemoryEntry],
    edges: EdgeStore,
    fetch: Fetch,
    *,
    decay: float = DEFAULT_DECAY,
    limit: int | None = None,
    max_per_seed: int = MAX_NEIGHBOURS_PER_SEED,
) -> list[MemoryEntry]:
    """Seeds plus their one-hop neighbours, re-ranked by score with a per-hop ``decay``.

    ``fetch(ids)`` returns the readable entries among ``ids`` (it is where
    admission applies, so a hidden neighbour never surfaces). ``max_per_seed``
    caps a hub note's fan-out. Ties keep seed order, then neighbour order.
    """
    if not 0.0 <= decay <= 1.0:
        raise ValueError("decay must be between 0 and 1")
    limit = limit or len(seeds)
    scores: dict[str, float] = {}
    order: dict[str, int] = {}
    entries: dict[str, MemoryEntry] = {}
    for entry in seeds:
        if entry.id not in entries:
            entries[entry.id] = entry
            scores[entry.id] = entry.score if entry.score is not None else 0.0
            order[entry.id] = len(order)
    adjacency = await edges.neighbors_many(list(entries))
    graph_score: dict[str, float] = {}
    for seed_id in list(entries):
        base = scores[seed_id] * decay
        for neighbour in adjacency.get(seed_id, [])[:max_per_seed]:
            if base > graph_score.get(neighbour, float("-inf")):
                graph_score[neighbour] = base
            order.setdefault(neighbour, len(order))
    missing = [n for n in graph_score if n not in entries]
    fetched = await fetch(missing) if missing else {}
    for node, score in graph_score.items():
        if node in entries:
            if score > scores[node]:
                scores[node] = score
                entries[node] = entries[node].model_copy(
                    update={"matched_by": [*entries[node].matched_by, "graph"]}
                )
        elif node in fetched:
            scores[node] = score
            entries[node] = fetched[node].model_copy(update={"matched_by": ["graph"]})
    ranked = sorted(entries, key=lambda i: (-scores[i], order[i]))
    return [entries[i].model_copy(update={"score": scores[i]}) for i in ranked[:limit]]
