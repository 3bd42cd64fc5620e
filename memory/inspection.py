"""What an operator looks at beside the memories themselves: how many of each state a store
holds, how it grew, how often it was recalled. Engine-neutral shapes; each engine's SQL fills them.

Each is one aggregate query (no rows reach Python); growth reads only the
ledger rows past the seq already summed, so a caller that keeps the last
:class:`Growth` (the web view does) pays for new rows only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

from memory.access import DAY_SECONDS


@dataclass(frozen=True)
class Census:
    """Rows of a store by state. ``recallable``: visible, live and current (what recall can return)."""

    total: int = 0
    recallable: int = 0
    archived: int = 0
    hidden: int = 0
    private: int = 0
    superseded: int = 0

    @classmethod
    def of(cls, row: Sequence) -> Census:
        return cls(*(int(v or 0) for v in row))


def day_date(day: int) -> date:
    return datetime.fromtimestamp(day * DAY_SECONDS, UTC).date()


@dataclass(frozen=True)
class Growth:
    """Rows added (ledger rows with no before image) and removed (no after image) per UTC day,
    summed over the ledger up to row ``seq``."""

    seq: int = 0
    days: tuple[tuple[int, int, int], ...] = ()  # (day, added, removed), oldest first

    def extend(self, newer: Growth) -> Growth:
        """This summary plus one of the rows after it."""
        merged: dict[int, list[int]] = {d: [a, r] for d, a, r in self.days}
        for day, added, removed in newer.days:
            total = merged.setdefault(day, [0, 0])
            total[0] += added
            total[1] += removed
        return Growth(max(self.seq, newer.seq), tuple((d, a, r) for d, (a, r) in sorted(merged.items())))

    def stored(self) -> list[tuple[date, int]]:
        """Rows held at the end of each day that saw a change."""
        held, out = 0, []
        for day, added, removed in self.days:
            held += added - removed
            out.append((day_date(day), held))
        return out


@dataclass(frozen=True)
class RecallDay:
    day: date
    recalls: int
    hits: int


@dataclass
class Activity:
    """A store's growth and recall activity, for a plot."""

    growth: Growth
    recalls: list[RecallDay] = field(default_factory=list)
