"""Session-neighbour expansion: the turns next to the best matches, added just below them.

In a conversation the turn that matches a question best is often not the one
that answers it: "Did you go to the concert?" matches the question's words,
"Yes, it was Taylor Swift!" right after it holds the answer and shares none
of them. Both legs rank each turn alone, so the answering turn can sit far
down the pool. After ranking, each of the best few results brings in the
turns before and after it in its session (same ``source_session_id``, the
store's order: date, then insertion) at ``share`` of its own score, so a
neighbour lands just below the match that found it and above weaker matches.

Pure: the caller reads the neighbours through the admission predicate (the
store decides what may be seen) and passes them in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")


def expand(
    ranked: Sequence[tuple[T, float]],
    neighbours: Sequence[Sequence[T]],
    *,
    share: float,
    limit: int,
    key: Callable[[T], Hashable],
) -> list[tuple[T, float]]:
    """``ranked`` (item, score; best first) with ``neighbours[i]``, the neighbours of ``ranked[i]``,
    merged in at ``share`` of its score; the best ``limit`` come back.

    A neighbour already ranked stays where it is; one next to several hits
    takes the best hit's. Ties keep ``ranked`` first, then the hits' order.
    """
    seen = {key(item) for item, _ in ranked}
    added: list[tuple[T, float]] = []
    for (_, score), near in zip(ranked, neighbours, strict=False):
        for item in near:
            if key(item) not in seen:
                seen.add(key(item))
                added.append((item, share * score))
    return sorted([*ranked, *added], key=lambda pair: -pair[1])[:limit]  # stable: ties keep their order
