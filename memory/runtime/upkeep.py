"""The consolidation ``arcana run`` queues after a turn: once an agent's private store has grown
past another multiple of ``memory.consolidate_every`` live memories, it is consolidated in the
background, as ``arcana consolidate --agent`` would (the same lock: a run in progress is left to finish)."""

from __future__ import annotations

from memory.adapters.vector import VectorAdapter
from memory.audit import AuditLog
from memory.errors import LockHeldError
from memory.federation.federation import MemoryFederation
from memory.home import Home
from memory.locks import exclusive
from memory.protocols import MemoryAdapter
from memory.runtime.assembly import private_store
from memory.types import now_utc


async def consolidate_if_grown(
    home: Home, memory: MemoryAdapter, agent_id: str, *, written: int, every: int, audit: AuditLog
) -> dict | None:
    """Consolidate the private store when its ``written`` new rows crossed a multiple of ``every``;
    the counts it changed, or None when nothing was due (or another consolidation holds the lock)."""
    if every <= 0 or written <= 0 or not isinstance(memory, MemoryFederation):
        return None
    store = private_store(memory)
    live = await store.count(include_archived=False)
    if live // every == max(0, live - written) // every:
        return None
    from memory.consolidation.store import consolidate_store  # numpy: only when a consolidation is due

    backend = memory.router.private.backend
    embed = backend.complete if isinstance(backend, VectorAdapter) else None
    try:
        with exclusive(home.locks_dir / "consolidate.lock", "consolidate"):
            _, planned = await consolidate_store(store, now_utc(), embed=embed, actor="run")
    except LockHeldError:
        return None
    counts = planned.counts()
    if planned.archived:
        audit.append("consolidate", store=f"agent:{agent_id}", trigger="run", live=live, **counts)
    return counts
