"""The seam every store implements: agents read and write without knowing which."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from memory.types import HealthStatus, MemoryEntry, MemoryQuery


@runtime_checkable
class MemoryAdapter(Protocol):
    async def connect(self) -> None: ...

    async def aclose(self) -> None: ...

    async def health_check(self) -> HealthStatus: ...

    async def write(self, entry: MemoryEntry) -> None: ...

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]: ...

    async def get(self, entry_id: str) -> MemoryEntry | None: ...
