"""Consolidate one SQLite store: read it page by page, plan it whole, apply the plan in batches.

Each batch is one transaction with its ledger rows
(:func:`memory.sqlite.consolidation.apply_txn`), so a killed run leaves every
decision done or not done. Shared by ``arcana consolidate`` (home-wide, under
its lock: :mod:`memory.operations.consolidate`) and the job ``arcana run``
queues when the store has grown (:mod:`memory.runtime.agent`).
"""

from __future__ import annotations

from datetime import datetime

from memory.consolidation.plan import Candidate, Merge, Plan, plan
from memory.sqlite.consolidation import apply_txn, current_count, current_page

PAGE = 2_000
BATCH = 200  # decisions per transaction


async def consolidate_store(
    store, now: datetime, *, dry_run: bool = False, embed=None, actor: str = "library", on_progress=None
) -> tuple[int, Plan]:
    """Consolidate one SQLite store (an open or openable :class:`SQLiteAdapter`): ``(scanned, plan)``.

    ``embed(ids)`` gives the digests written their vectors (``VectorAdapter.complete``);
    without it they are embedded by the next reindex or write. ``on_progress(done, total)``
    counts the current rows read (the long part of a large store), then the decisions applied.
    """
    candidates = await _candidates(store, on_progress)
    planned = plan(candidates, now)
    if not dry_run:
        new_ids = await _apply(store, planned, f"{actor}:consolidate", on_progress)
        if new_ids and embed is not None:
            await embed(new_ids)
    return len(candidates), planned


async def _candidates(store, progress) -> list[Candidate]:
    found: list[Candidate] = []
    after = 0
    await store.ensure_vec()  # stored vectors are read back when the store has an index
    total = await store.run(current_count) if progress else 0
    while page := await store.run(current_page, after, PAGE):
        found.extend(Candidate(entry, vector) for _, entry, vector in page)
        after = page[-1][0]
        if progress:
            progress(len(found), max(total, len(found)))
    return found


async def _apply(store, planned: Plan, actor: str, progress) -> list[str]:
    """Write the plan batch by batch; return the ids of the digests it wrote (to embed)."""
    decisions: list = [*planned.merges, *planned.digests]
    total = len(decisions)
    for start in range(0, total, BATCH):
        writes, importance, links, archive = [], {}, [], []
        for decision in decisions[start : start + BATCH]:
            if isinstance(decision, Merge):
                importance[decision.keep.id] = decision.importance
                links += [(decision.keep.id, s.id) for s in decision.sources]
                archive += [s.id for s in decision.sources]
            else:
                writes.append(decision.entry)
                links += [(decision.entry.id, s.id) for s in decision.sources]
                archive += [s.id for s in (*decision.sources, *decision.idle)]
        await store.run(apply_txn, writes, importance, links, archive, actor)
        if progress:
            progress(min(start + BATCH, total), total)
    return [d.entry.id for d in planned.digests]
