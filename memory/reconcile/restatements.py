"""Imported lines that restated what the agent already knew, remembered by their ids.

A ``remember --from`` line gets a deterministic id, and a re-run of the same
file skips every id the store already holds. A line decided ``noop`` stores
no row under its id, though: it reinforced another one. So its id leaves a
``memory_edges`` edge (relation ``restates``) to the memory it reinforced,
and a re-run finds the line done there instead of reinforcing again (an
importance that crept up on every run).
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from memory.reconcile.entities import EDGE_SOURCE
from memory.sqlite.batches import select_in
from memory.sqlite.connection import transaction

RESTATES = "restates"


def record(raw, line_id: str, target_id: str) -> None:
    """``line_id`` restated ``target_id`` (one edge, idempotent)."""
    with transaction(raw):
        raw.execute(
            "INSERT OR IGNORE INTO memory_edges (src_id, dst_id, relation, source, confidence, created_at) "
            "VALUES (?, ?, ?, ?, 1.0, ?)",
            (line_id, target_id, RESTATES, EDGE_SOURCE, time.time()),
        )


def recorded(raw, line_ids: Sequence[str]) -> set[str]:
    """The ids among ``line_ids`` that already restated something."""
    sql = f"SELECT src_id FROM memory_edges WHERE relation = '{RESTATES}' AND src_id IN ({{marks}})"
    return {row[0] for row in select_in(raw, sql, line_ids)}
