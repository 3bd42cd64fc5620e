"""Session-neighbour expansion: the turns next to the best matches, added just below them.

In a conversation the turn that matches a question best is often not the one
that answers it: "Did you go to the concert?" matches the question's words,
"Yes, it was Taylor Swift!" right after it holds the answer and shares none
of them. Both legs rank each turn alone, so the answering turn can sit far
down the pool. After ranking, each of the best few results brings in the
turns before and after it in its session (same ``source_session_id``, the
store's order: date, then insertion) at ``share`` of its own score, so a
neighbour lands just below the match that found it and above weaker matches.
The turns two away follow at RING_SHARE of that share: in a dialogue the
question ranked first is often answered by its speaker's own next turn, after
the other speaker's reply ("I went to a support group." / "How was it?" /
"So inspiring, I want to counsel now."). LoCoMo dev, one write per turn,
fitted on two conversations and scored on the third: any@5 / any@10 / MRR@10
0.815 / 0.877 / 0.659 -> 0.828 / 0.890 / 0.664 (man/benchmarks.md).

Pure: the caller reads the neighbours through the admission predicate (the
store decides what may be seen) and passes them in.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

T = TypeVar("T")

# What a turn two away from a hit gains, as a fraction of what an adjacent turn gains.
RING_SHARE = 0.75


def expand(
    ranked: Sequence[tuple[T, float]],
    neighbours: Sequence[Sequence[Sequence[T]]],
    *,
    share: float,
    limit: int,
    key: Callable[[T], Hashable],
) -> list[tuple[T, float]]:
    """``ranked`` (item, score; best first) with ``neighbours[i]``, the rings of ``ranked[i]``
    (its adjacent turns, then those one further), merged in at ``share`` of its score for
    the first ring and each further ring at RING_SHARE of the one before; the best ``limit``
    come back.

    A neighbour already ranked stays where it is; one next to several hits
    takes the best hit's. Ties keep ``ranked`` first, then the hits' order.
    """
    seen = {key(item) for item, _ in ranked}
    added: dict[Hashable, tuple[T, float]] = {}
    for (_, score), rings in zip(ranked, neighbours, strict=False):
        for ring, near in enumerate(rings):
            for item in near:
                value = share * RING_SHARE**ring * score
                if key(item) not in seen and value > added.get(key(item), (item, -1.0))[1]:
                    added[key(item)] = (item, value)
    return sorted([*ranked, *added.values()], key=lambda pair: -pair[1])[:limit]  # stable: ties keep their order
