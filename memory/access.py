"""Read bookkeeping a store buffers and folds in now and then, never ledgered.

Per memory, how often and when it was last returned (``access_count`` /
``last_accessed_at``, a ranking hint); per UTC day, how many recalls the store
answered and how many memories they returned (``recall_activity``, what the
web view plots). Both engines keep one :class:`AccessBuffer`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from memory.types import MAX_ACCESS_COUNT, MemoryEntry

DAY_SECONDS = 86_400


@dataclass
class AccessBuffer:
    hits: dict[str, tuple[int, float]] = field(default_factory=dict)  # id -> (count, last at)
    days: dict[int, tuple[int, int]] = field(default_factory=dict)  # UTC day -> (recalls, memories returned)

    def record(self, ids: Iterable[str], now: float) -> None:
        """One recall answered at ``now`` that returned ``ids``."""
        returned = 0
        for entry_id in ids:
            count, _ = self.hits.get(entry_id, (0, now))
            self.hits[entry_id] = (count + 1, now)
            returned += 1
        day = int(now // DAY_SECONDS)
        recalls, hits = self.days.get(day, (0, 0))
        self.days[day] = (recalls + 1, hits + returned)

    def __len__(self) -> int:
        return len(self.hits)

    def seen(self, entries: Iterable[MemoryEntry]) -> list[MemoryEntry]:
        """``entries`` as they will read once these hits are folded in (as the engines' fold does:
        count added, saturating; the later last access kept). A long-lived process (the MCP server,
        `arcana run`) otherwise ranked its next recall by the age before its last one refreshed it,
        where a new process reads the refreshed age."""
        return [self._seen(entry) for entry in entries]

    def _seen(self, entry: MemoryEntry) -> MemoryEntry:
        hit = self.hits.get(entry.id)
        if hit is None:
            return entry
        count, at = hit
        last = datetime.fromtimestamp(at, UTC)
        if entry.last_accessed_at is not None:
            last = max(last, entry.last_accessed_at)
        return entry.model_copy(update={"access_count": min(entry.access_count + count, MAX_ACCESS_COUNT),
                                        "last_accessed_at": last})

    def take(self) -> AccessBuffer | None:
        """What was buffered (None if nothing), leaving this buffer empty."""
        if not self.hits and not self.days:
            return None
        taken = AccessBuffer(self.hits, self.days)
        self.hits, self.days = {}, {}
        return taken

    def clear(self) -> None:
        self.hits, self.days = {}, {}


# A federated recall reads more candidates than it returns (each tier's ``limit``,
# entries that aged out of a listing, what ranks below another tier's matches).
# While one is open, a store's ``record_access`` notes what it read here instead
# of counting it, and the federation then counts only what it returned: a
# candidate the user never saw neither has its decay clock reset nor gains a hit.
_DEFERRED: ContextVar[dict[int, tuple[Any, set[str]]] | None] = ContextVar("arcana_deferred_access", default=None)


@contextmanager
def deferred_access() -> Iterator[dict[int, tuple[Any, set[str]]]]:
    """Within the block, stores' read hits are collected (store id -> (store, ids read)), not recorded."""
    pending: dict[int, tuple[Any, set[str]]] = {}
    token = _DEFERRED.set(pending)
    try:
        yield pending
    finally:
        _DEFERRED.reset(token)


def defer(store: Any, ids: Iterable[str]) -> bool:
    """Note ``ids`` as read by ``store`` when a federated recall is collecting; False when not (record now)."""
    pending = _DEFERRED.get()
    if pending is None:
        return False
    pending.setdefault(id(store), (store, set()))[1].update(ids)
    return True
