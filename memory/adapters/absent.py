"""A local store not made yet, as a read sees it: empty, and left unmade."""

from __future__ import annotations

from pathlib import Path

from memory.errors import MemoryStorageError
from memory.types import HealthStatus, MemoryEntry, MemoryQuery


class AbsentStore:
    """Stands in for a store whose file does not exist yet, in a federation opened only to read
    (`recall`, `context`): opening the real store would make the file, and the home would change
    because someone looked. Reads find nothing; a write is refused, as a read-only tier's is."""

    read_only = True

    def __init__(self, path: Path):
        self.path = path

    async def connect(self) -> None:
        return None

    async def aclose(self) -> None:
        return None

    async def health_check(self) -> HealthStatus:
        return HealthStatus(healthy=True, message=f"no store yet ({self.path})")

    async def write(self, entry: MemoryEntry) -> None:
        raise MemoryStorageError(f"{self.path}: opened only to read; nothing is written")

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        return []

    async def get(self, entry_id: str) -> MemoryEntry | None:
        return None
