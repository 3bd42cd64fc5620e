"""Pruning a PostgreSQL store: victims chosen in SQL, removed through the ledger."""

from __future__ import annotations

from memory.postgres import mutations
from memory.postgres.admission import POSTGRES, numbered
from memory.sqlite.prune_order import overflow_sql
from memory.types import DERIVED_TAG, PruneMode, PrunePolicy, PruneReport


async def prune(conn, policy: PrunePolicy, actor: str) -> PruneReport:
    scanned = await conn.fetchval("SELECT count(*) FROM memories WHERE archived = 0")
    victims: dict[str, None] = {}
    live_only = " AND archived = 0" if policy.mode is PruneMode.ARCHIVE else ""
    if policy.min_importance is not None:
        for r in await conn.fetch(
            f"SELECT id FROM memories WHERE pinned = 0 AND importance < $1{live_only} ORDER BY importance, created_at",
            policy.min_importance,
        ):
            victims[r["id"]] = None
    if policy.max_entries is not None:
        for r in await conn.fetch(numbered(overflow_sql(POSTGRES)), DERIVED_TAG, policy.max_entries):
            victims[r["id"]] = None
    ids = policy.restrict(list(victims))
    report = PruneReport(scanned=scanned, dry_run=policy.dry_run, victim_ids=ids)
    if policy.dry_run:
        if policy.mode is PruneMode.ARCHIVE:
            report.archived = len(ids)
        else:
            report.purged = len(ids)
        return report
    if not ids:
        return report
    if policy.mode is PruneMode.ARCHIVE:
        report.archived = await mutations.update(conn, ids, "archive", f"{actor}:prune", "archived", 1)
    else:
        report.purged = await mutations.delete(conn, ids, "purge", f"{actor}:prune")
    return report
