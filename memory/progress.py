"""Progress of a long loop in the core, told to a skin's ``on_progress(done, total)`` (a bar, or nothing).

The core never draws: it counts. A loop over a million rows reports every
``every`` rows, not every row, and a total that grows as the work is found
(a prune learns how many rows it removes only after reading them all).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

T = TypeVar("T")
Report = Callable[[int, int], None]


class Progress:
    def __init__(self, report: Report | None, total: int, every: int = 5_000):
        self.report, self.total, self.every, self.done = report, total, every, 0

    def advance(self, steps: int) -> None:
        self.done += steps
        if self.report is not None:
            self.report(self.done, max(self.total, self.done))

    def counting(self, items: Iterable[T]) -> Iterator[T]:
        """``items`` as they are, advancing every ``every`` of them (and once at the end)."""
        pending = 0
        for item in items:
            yield item
            pending += 1
            if pending == self.every:
                self.advance(pending)
                pending = 0
        self.advance(pending)
