"""Imported lines that restated what the agent already knew, remembered by their ids.

A ``remember --from`` line gets a deterministic id, and a re-run of the same
file skips every id the store already holds. A line decided ``noop`` stores
no row under its id, though: it reinforced another one. So its id leaves a
``memory_edges`` edge (relation ``restates``) to the memory it reinforced,
and a re-run finds the line done there instead of reinforcing again (an
importance that crept up on every run). A ``--pool`` line that restated a
pool's memory is remembered in the agent's store too (a server pool keeps no
edges), under the pool's own relation: the same file imported privately is
another import.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.graph.edges import EdgeStore, MemoryEdge
from memory.reconcile.entities import EDGE_SOURCE
from memory.sqlite.batches import select_in

RESTATES = "restates"


def relation(pool: str | None) -> str:
    """The edge's relation: a private line's, or a line imported into ``pool``."""
    return RESTATES if pool is None else f"{RESTATES}:pool:{pool}"


async def record(store, line_id: str, target_id: str, pool: str | None = None) -> None:
    """``line_id`` restated ``target_id`` (in ``pool``, else the agent's store): one edge, idempotent,
    in ``store`` (the agent's SQLiteAdapter)."""
    await EdgeStore(store).upsert([MemoryEdge(line_id, target_id, relation(pool), EDGE_SOURCE)])


def recorded(raw, line_ids: Sequence[str], pool: str | None = None) -> set[str]:
    """The ids among ``line_ids`` that already restated something (in ``pool``, else the agent's store)."""
    sql = "SELECT src_id FROM memory_edges WHERE relation = ? AND src_id IN ({marks})"
    return {row[0] for row in select_in(raw, sql, line_ids, before=(relation(pool),))}
