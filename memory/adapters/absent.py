"""A local store not made yet, as a read sees it: empty, and left unmade."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from memory.errors import MemoryStorageError
from memory.types import Audience, HealthStatus, MemoryEntry, MemoryQuery


class AbsentStore:
    """Stands in for a store whose file does not exist yet, in a federation opened only to read
    (`recall`, `context`): opening the real store would make the file, and the home would change
    because someone looked. Reads find nothing; a write is refused, as a read-only tier's is. Its
    reads take the SQLite store's arguments: `arcana mcp --read-only` reads ids and prefixes too."""

    read_only = True
    quarantined_to = None  # nothing opened, so nothing found corrupt and moved aside

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

    async def get(
        self, entry_id: str, *, audience: Audience = Audience.RECALL, include_archived: bool = False
    ) -> MemoryEntry | None:
        return None

    async def find_by_prefix(
        self, prefix: str, limit: int = 5, *, query: MemoryQuery | None = None,
        audience: Audience = Audience.OPERATOR, include_archived: bool = True,
    ) -> list[MemoryEntry]:
        return []

    async def sources(self, entry_ids: Sequence[str], *, quoted: bool = True) -> dict[str, list[str]]:
        return {}
