"""The seam every store implements: agents read and write without knowing which.

:class:`MemoryAdapter` is what every tier must do. The optional capabilities a
caller may find on a tier are protocols too, checked with ``isinstance`` where
the federation, the router, the store factory and maintenance need them,
instead of probing attribute names.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memory.progress import Report
from memory.types import HealthStatus, MemoryEntry, MemoryQuery, PrunePolicy, PruneReport


@runtime_checkable
class MemoryAdapter(Protocol):
    async def connect(self) -> None: ...

    async def aclose(self) -> None: ...

    async def health_check(self) -> HealthStatus: ...

    async def write(self, entry: MemoryEntry) -> None: ...

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]: ...

    async def get(self, entry_id: str) -> MemoryEntry | None: ...


@runtime_checkable
class GetsMany(Protocol):
    """Reads many ids in one call, each admitted as :meth:`MemoryAdapter.get` admits one (a bulk import's lookup)."""

    async def get_many(self, entry_ids: Sequence[str]) -> dict[str, MemoryEntry]: ...


@runtime_checkable
class AdmitsById(Protocol):
    """Reads many ids in one call through the admission predicate for an audience (an operator's
    read sees every state: hidden, archived, superseded), and names those it removed for good."""

    async def admitted_by_id(
        self, query: MemoryQuery, entry_ids: Sequence[str], *, audience: Any = ..., include_archived: bool = False
    ) -> dict[str, MemoryEntry]: ...

    async def removed(self, entry_ids: Sequence[str]) -> set[str]: ...


@runtime_checkable
class Closeable(Protocol):
    """Holds something to release (a file, a pool of connections); a bare read-only source may not."""

    async def aclose(self) -> None: ...


@runtime_checkable
class Prunable(Protocol):
    """Can archive or purge by a :class:`PrunePolicy` (the stores that keep rows); ``on_progress(done,
    total)`` counts rows read, then rows removed."""

    async def prune(self, policy: PrunePolicy, on_progress: Report | None = None) -> PruneReport: ...


@runtime_checkable
class SessionNeighbours(Protocol):
    """Can read, through the admission predicate, the turns next to given memories in their sessions."""

    async def session_neighbours(self, query: MemoryQuery, entry_ids: Sequence[str]) -> dict[str, list[MemoryEntry]]: ...


@runtime_checkable
class ReadOnly(Protocol):
    """Declares that it takes no writes (``read_only = True``): a folder, a vault."""

    read_only: bool


@runtime_checkable
class DeclaresWrites(Protocol):
    """Declares with ``accepts_writes = False`` that its write stores nothing (the composite seed's marker)."""

    accepts_writes: bool


@runtime_checkable
class BatchWriter(Protocol):
    """Writes many entries in bounded transactions; the result names an op per entry (a list, or ``.ops``)."""

    async def write_many(self, entries: Sequence[MemoryEntry]) -> Any: ...


@runtime_checkable
class PreparesWrites(Protocol):
    """Has one-time work before its first write (loading a model), to run outside a write budget."""

    async def prepare_write(self) -> None: ...


@runtime_checkable
class EmbedsAhead(Protocol):
    """Can embed the next batch while this one is decided and written (an import)."""

    def embed_ahead(self, entries: Sequence[MemoryEntry], settled: Any = None) -> None: ...

    async def embedded_ahead(self, entries: Sequence[MemoryEntry]) -> None:
        """Return once what was embedded ahead for ``entries`` is done (or failed)."""
        ...


@runtime_checkable
class Provenance(Protocol):
    """Knows which memories a consolidated memory carries (its ``consolidates`` edges)."""

    async def sources(self, entry_ids: Sequence[str], *, quoted: bool = True) -> dict[str, list[str]]:
        """For each id that is a consolidated memory, the ids of the memories whose content it carries
        (without ``quoted``, not those an agent's claim only quotes)."""
        ...

    async def carriers(self, entry_ids: Sequence[str]) -> list[str]:
        """The consolidated memories that carry any of ``entry_ids``."""
        ...

    async def digests(self, entry_ids: Sequence[str]) -> set[str]:
        """Which of ``entry_ids`` are digests consolidation wrote (made of turns, not one kept statement)."""
        ...

    async def carried(self, entry_ids: Sequence[str]) -> set[str]:
        """Which of ``entry_ids`` consolidation archived into a memory that still answers for them (their
        archive is no operator's: a promoted one's copy stays live)."""
        ...

    async def carry_again(self, entry_ids: Sequence[str]) -> int:
        """Archive ``entry_ids`` as consolidation's again (ledgered): restatements a withdrawal of their
        merge archived, answering through it once it is restored. How many changed."""
        ...

    async def stand_alone(self, entry_ids: Sequence[str]) -> int:
        """Restore (ledgered) those of ``entry_ids`` that consolidation archived and that are visible while
        nothing carrying them answers (a hide of theirs reached every carrier): how many."""
        ...


def provenance_of(adapter: object) -> Provenance | None:
    """The store under ``adapter`` (through layers) that records provenance, if any."""
    return _under(adapter, Provenance)


@runtime_checkable
class RepairsRows(Protocol):
    """Can write a row an outside edit left unreadable back from its ledger (SQLite stores; a server
    store's rows are left to the server's tools)."""

    async def repair(self, entry_id: str, seq: int, taken: Sequence[str]) -> int: ...


@runtime_checkable
class Rewords(Protocol):
    """Says which memories were re-worded after a time (a federation, over its tiers' ledgers)."""

    async def reworded(self, since: Mapping[str, datetime]) -> set[str]: ...


@runtime_checkable
class Ledgered(Protocol):
    """Keeps a mutation ledger it can read per memory (both engines' stores)."""

    async def history(self, entry_id: str) -> list[Any]: ...


@runtime_checkable
class FindsWithheld(Protocol):
    """Finds the memories an operator withheld there whose words a claim may repeat (both engines' stores)."""

    async def withheld(self, words: Iterable[str] | None) -> list[tuple[str, str]]: ...

    async def admitted_by_id(
        self, query: MemoryQuery, entry_ids: Sequence[str], *, audience: Any = ..., include_archived: bool = False
    ) -> dict[str, MemoryEntry]: ...


def withheld_of(adapter: object) -> FindsWithheld | None:
    """The store under ``adapter`` (through layers) that finds withheld memories, if any."""
    return _under(adapter, FindsWithheld)


@runtime_checkable
class BuffersAccess(Protocol):
    """Buffers read hits and folds them in later (both engines' stores, memory/access.py)."""

    def seen(self, entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
        """``entries`` as they will read once the hits buffered for them are folded in."""
        ...


@runtime_checkable
class SerialisesDecisions(Protocol):
    """Holds one writer's reconciled write at a time, across processes and machines that share the store
    (a pool: SQLite a lock file beside it, PostgreSQL an advisory lock on the server), from the
    decision to the settling: each member's own decision lock let two members decide ``add`` at once."""

    def deciding(self, notify: Callable[[str], None] | None = None) -> AbstractAsyncContextManager[None]: ...


def serialising_of(adapter: object) -> SerialisesDecisions | None:
    """The store under ``adapter`` (through layers) that serialises reconciled writes, if any."""
    return _under(adapter, SerialisesDecisions)


def admitting_of(adapter: object) -> AdmitsById | None:
    """The store under ``adapter`` (through layers) that reads ids through admission, if any."""
    return _under(adapter, AdmitsById)


def ledger_of(adapter: object) -> Ledgered | None:
    """The store under ``adapter`` (through layers) that keeps the ledger, if any."""
    return _under(adapter, Ledgered)


@runtime_checkable
class FindsSimilar(Protocol):
    """Finds a text's admitted nearest neighbours for write-time reconciliation (SQLite's vector
    layer, a PostgreSQL store); None when semantic search cannot run."""

    async def similar(self, query: MemoryQuery, limit: int, min_similarity: float) -> list[MemoryEntry] | None: ...


def similar_of(adapter: object) -> FindsSimilar | None:
    """The store under ``adapter`` (through layers) that finds similar memories, if any."""
    return _under(adapter, FindsSimilar)


def access_buffer_of(adapter: object) -> BuffersAccess | None:
    """The store under ``adapter`` (through layers) that buffers read hits, if any."""
    return _under(adapter, BuffersAccess)


def _under(adapter: object, kind: type) -> Any:
    """``adapter``, or the first store under it through layers, that is a ``kind``; else None."""
    while not isinstance(adapter, kind) and isinstance(adapter, Layered):
        adapter = adapter.store
    return adapter if isinstance(adapter, kind) else None


@runtime_checkable
class Layered(Protocol):
    """A layer over another store (vectors over SQLite); ``store`` is the one underneath."""

    store: MemoryAdapter


@runtime_checkable
class FileBacked(Protocol):
    """Lives in one database file at ``path``."""

    path: Path


def is_read_only(adapter: object) -> bool:
    """Whether ``adapter`` declares itself read-only (either marker)."""
    if isinstance(adapter, ReadOnly) and adapter.read_only:
        return True
    return isinstance(adapter, DeclaresWrites) and adapter.accepts_writes is False

