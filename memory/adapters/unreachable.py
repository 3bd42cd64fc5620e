"""A server tier that cannot even be addressed: its URL variable is unset, or holds no postgresql:// URL."""

from __future__ import annotations

from memory.errors import MemoryStorageError
from memory.types import HealthStatus, MemoryEntry, MemoryQuery


class UnreachableTier:
    """Stands in for a pool or global tier whose server URL cannot be had in this process.

    Every call fails with the reason (the message of the error that stopped the
    URL), so the federation's resilience degrades the tier — a warning, an audit
    line, the other tiers answer — exactly as it does a server that is down.
    """

    def __init__(self, reason: BaseException):
        self.reason = str(reason)

    def _fail(self) -> MemoryStorageError:
        return MemoryStorageError(self.reason)

    async def connect(self) -> None:
        raise self._fail()

    async def aclose(self) -> None:
        return None

    async def health_check(self) -> HealthStatus:
        return HealthStatus(healthy=False, message=self.reason)

    async def write(self, entry: MemoryEntry) -> None:
        raise self._fail()

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        raise self._fail()

    async def get(self, entry_id: str) -> MemoryEntry | None:
        raise self._fail()
