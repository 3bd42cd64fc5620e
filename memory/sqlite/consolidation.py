"""The SQL behind consolidation: a store's current memories with their vectors, page by page, and
the ``consolidates`` edges from a consolidated memory (or a session summary) to the memories whose
content it carries, and the derived memories prune takes with their sources.

Reads here are the operator's (every current row, whatever its visibility, as
prune sees them); what consolidation makes of hidden or private rows is
decided above, never widened (:mod:`memory.consolidation.plan`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Mapping, Sequence

from memory.sqlite import mutations
from memory.sqlite.admission import SQLITE
from memory.sqlite.batches import select_in
from memory.sqlite.connection import transaction
from memory.sqlite.rows import SELECT_COLUMNS, row_to_entry
from memory.sqlite.vectors import read_meta, table_exists
from memory.types import DERIVED_TAG, MemoryEntry

SOURCES = "consolidates"  # edge relation: consolidated memory -> a source whose content it carries


_CURRENT = "m.archived = 0 AND m.valid_to IS NULL"


def current_count(raw) -> int:
    """How many rows :func:`current_page` pages through (a progress bar's total)."""
    return raw.execute(f"SELECT count(*) FROM memories m WHERE {_CURRENT}").fetchone()[0]


def current_page(raw, after_seq: int, limit: int) -> list[tuple[int, MemoryEntry, list[float] | None]]:
    """Up to ``limit`` current (live, not superseded) rows after ``after_seq``, with their stored vectors."""
    rows = raw.execute(
        f"SELECT m.seq, {SELECT_COLUMNS} FROM memories m "
        f"WHERE m.seq > ? AND {_CURRENT} ORDER BY m.seq LIMIT ?",
        (after_seq, limit),
    ).fetchall()
    meta = read_meta(raw)
    vectors: dict[int, list[float]] = {}
    if rows and meta is not None and table_exists(raw, meta.vec_table):
        sql = f"SELECT rowid, embedding FROM {meta.vec_table} WHERE rowid IN ({{marks}})"
        for seq, blob in select_in(raw, sql, [r[0] for r in rows]):
            vectors[seq] = list(struct.unpack(f"{len(blob) // 4}f", blob))
    return [(r[0], row_to_entry(r[1:]), vectors.get(r[0])) for r in rows]


def sources_of(raw, ids: Sequence[str]) -> dict[str, list[str]]:
    """For each id among ``ids`` that is a consolidated memory, the ids of its sources (sorted)."""
    found: dict[str, list[str]] = {}
    sql = f"SELECT src_id, dst_id FROM memory_edges WHERE relation = '{SOURCES}' AND src_id IN ({{marks}})"
    for src, dst in select_in(raw, sql, ids):
        found.setdefault(src, []).append(dst)
    return {k: sorted(v) for k, v in found.items()}


def carriers_of(raw, ids: Sequence[str]) -> list[str]:
    """The consolidated memories that carry any of ``ids`` (an operator's edit of a source reaches them)."""
    sql = f"SELECT DISTINCT src_id FROM memory_edges WHERE relation = '{SOURCES}' AND dst_id IN ({{marks}})"
    return sorted({row[0] for row in select_in(raw, sql, ids)})


DERIVED = SQLITE.has_tag.format(col="tags")  # one parameter: DERIVED_TAG


def derived_from(raw, ids: Sequence[str], *, live_only: bool) -> list[str]:
    """The unpinned derived memories (live ones only with ``live_only``) that carry any of the live,
    not derived, memories among ``ids``: what prune must take with the facts it removes."""
    # "+archived": the planner would otherwise walk memories_order's live rows once per batch of ids
    # (387 ms a batch at 30k rows: a capped prune grew with the square of the store) instead of the id index.
    facts = select_in(raw, f"SELECT id FROM memories WHERE +archived = 0 AND NOT {DERIVED} AND id IN ({{marks}})",
                      ids, before=(DERIVED_TAG,))
    carriers = carriers_of(raw, [row[0] for row in facts])
    live = " AND +archived = 0" if live_only else ""
    sql = f"SELECT id FROM memories WHERE pinned = 0{live} AND {DERIVED} AND id IN ({{marks}})"
    return [row[0] for row in select_in(raw, sql, carriers, before=(DERIVED_TAG,))]


def apply_txn(
    raw,
    writes: Sequence[MemoryEntry],
    importance: Mapping[str, float],
    links: Sequence[tuple[str, str]],
    archive: Sequence[str],
    actor: str,
) -> None:
    """One batch of consolidation decisions in one transaction: new consolidated memories, the
    importance a merge gives its keeper, the ``consolidates`` edges, and the sources archived.

    All or nothing, so a killed run leaves either the sources current and no
    consolidated memory, or both done: a re-run never digests a source twice.
    """
    with transaction(raw):
        if writes:
            mutations.upsert(raw, writes, actor, op="consolidate")
        for entry_id, value in importance.items():
            mutations.update(raw, [entry_id], "reinforce", actor, "importance = ?", (value,))
        now = time.time()
        raw.executemany(
            "INSERT OR IGNORE INTO memory_edges (src_id, dst_id, relation, source, confidence, created_at) "
            f"VALUES (?, ?, '{SOURCES}', 'consolidation', 1.0, ?)",
            [(src, dst, now) for src, dst in links],
        )
        if archive:
            mutations.update(raw, list(archive), "archive", actor, "archived = 1")
