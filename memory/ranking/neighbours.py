"""Session-neighbour expansion: the turns next to the best matches, added just below them.

In a conversation the turn that matches a question best is often not the one
that answers it: "Did you go to the concert?" matches the question's words,
"Yes, it was Taylor Swift!" right after it holds the answer, and shares none
of them. Both legs rank each turn alone, so the answering turn can sit far
down the pool. After ranking, each of the best ``depth`` results brings in the
turns before and after it in its session (same ``source_session_id``, the
store's order: date, then insertion) at ``share`` of its own score, so a
neighbour lands just below the match that found it and above weaker matches.

Pure: the caller reads the neighbours through the admission predicate (the
store decides what may be seen) and passes them in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

def expand(
    ranked: Sequence[tuple[str, float]],
    neighbours: Mapping[str, Sequence[str]],
    *,
    depth: int,
    share: float,
    limit: int,
) -> list[tuple[str, float]]:
    """``ranked`` (id, score; best first) with the neighbours of its first ``depth`` ids merged in.

    A neighbour scores ``share`` of the best score among the hits it is next
    to; an id already ranked keeps the higher of its own and that score. The
    best ``limit`` come back, ties in ``ranked``'s order, then by the hit's rank.
    """
    scores = dict(ranked)
    order = {entry_id: n for n, (entry_id, _) in enumerate(ranked)}
    for rank, (hit, score) in enumerate(ranked[:depth]):
        for near in neighbours.get(hit, ()):
            lifted = share * score
            if lifted > scores.get(near, float("-inf")):
                scores[near] = lifted
                order.setdefault(near, len(ranked) + rank)
    return sorted(scores.items(), key=lambda kv: (-kv[1], order[kv[0]]))[:limit]
