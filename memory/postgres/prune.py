"""Pruning a PostgreSQL store: victims chosen in SQL, removed through the ledger."""

from __future__ import annotations

from memory.postgres import mutations
from memory.postgres.admission import POSTGRES, numbered
from memory.progress import Progress, Report
from memory.sqlite import prune_order
from memory.types import PruneMode, PrunePolicy, PruneReport


async def prune(conn, policy: PrunePolicy, actor: str, on_progress: Report | None = None) -> PruneReport:
    """As on SQLite (``SQLiteAdapter.prune``); ``on_progress`` counts rows read, then rows removed
    (in one statement: one step)."""
    scanned = await conn.fetchval("SELECT count(*) FROM memories WHERE archived = 0")
    progress = Progress(on_progress, scanned)
    victims: dict[str, None] = {}
    live_only = " AND archived = 0" if policy.mode is PruneMode.ARCHIVE else ""
    if policy.min_importance is not None:
        for r in await conn.fetch(
            f"SELECT id FROM memories WHERE pinned = 0 AND importance < $1{live_only} ORDER BY importance, created_at",
            policy.min_importance,
        ):
            victims[r["id"]] = None
    if policy.max_entries is not None or policy.max_bytes is not None:
        sql, params = prune_order.candidates_sql(POSTGRES)
        totals = tuple(await conn.fetchrow(prune_order.totals_sql(POSTGRES)))
        keys = []
        async for r in conn.cursor(numbered(sql), *params, prefetch=2000):
            keys.append(prune_order.sort_key(tuple(r), policy.max_bytes is not None))
            if len(keys) % progress.every == 0:
                progress.advance(progress.every)
        progress.advance(len(keys) % progress.every)
        keys.sort()
        for mid in prune_order.overflow(keys, totals, policy.max_entries, policy.max_bytes):
            victims[mid] = None
    ids = policy.restrict(list(victims))
    report = PruneReport(scanned=scanned, dry_run=policy.dry_run, victim_ids=ids)
    progress.total = progress.done + (0 if policy.dry_run else len(ids))
    progress.advance(0)
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
    progress.advance(len(ids))
    return report
