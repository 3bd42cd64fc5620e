"""Pruning a PostgreSQL store: victims chosen in SQL, removed through the ledger."""

from __future__ import annotations

from memory.postgres import mutations
from memory.postgres.admission import POSTGRES, numbered
from memory.progress import Progress, Report
from memory.sqlite import prune_order
from memory.types import PRUNE_ACTOR, PruneMode, PrunePolicy, PruneReport


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
        totals = tuple(await conn.fetchrow(prune_order.totals_sql(POSTGRES)))
        await _stage_keys(conn, policy.max_bytes is not None, progress)
        for mid in await _overflow(conn, totals, policy.max_entries, policy.max_bytes):
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
        report.archived = await mutations.update(conn, ids, "archive", f"{actor}{PRUNE_ACTOR}", "archived", 1)
    else:
        report.purged = await mutations.delete(conn, ids, "purge", f"{actor}{PRUNE_ACTOR}")
    progress.advance(len(ids))
    return report


# The keys, sorted on the server as SQLite sorts them in a TEMP table (prune_order.staged_order):
# held in a Python list, a million live rows' keys took about 300 MB. Dropped with the prune's
# transaction. The id is compared byte-wise ("C"), as Python compares str, whatever the database's collation.
_STAGE = f"""CREATE TEMP TABLE {prune_order.STAGE_TABLE} (tier int, worth float8, used_at float8,
    id text COLLATE "C", nbytes bigint, digest boolean) ON COMMIT DROP"""
_ORDERED = f"SELECT * FROM {prune_order.STAGE_TABLE} ORDER BY tier, worth, used_at, id"


async def _stage_keys(conn, by_bytes: bool, progress: Progress) -> None:
    """Every candidate's :class:`prune_order.Key`, decided in Python a page at a time and COPYed
    into the stage table; ``progress`` counts the rows read."""
    await conn.execute(_STAGE)
    sql, params = prune_order.candidates_sql(POSTGRES)
    cursor = await conn.cursor(numbered(sql), *params)
    while rows := await cursor.fetch(prune_order.STAGE_PAGE):
        keys = [prune_order.sort_key(tuple(r), by_bytes) for r in rows]
        await conn.copy_records_to_table(prune_order.STAGE_TABLE, records=keys)
        progress.advance(len(keys))


async def _overflow(conn, totals: tuple[int, int], max_entries: int | None, max_bytes: int | None) -> list[str]:
    """:func:`prune_order.overflow` over the staged keys, least worth first, read a page at a time:
    a page's walk carries the totals left to the next, and the walk ends on a page it stopped in
    (no digest is condensed on a server, so no page needs another)."""
    victims: list[str] = []
    count, nbytes = totals
    cursor = await conn.cursor(_ORDERED)
    while page := [prune_order.Key(*r) for r in await cursor.fetch(prune_order.STAGE_PAGE)]:
        taken = prune_order.overflow(page, (count, nbytes), max_entries, max_bytes)
        victims += taken
        count, nbytes = count - len(taken), nbytes - sum(k.nbytes for k in page[: len(taken)])
        if len(taken) < len(page):
            break
    return victims
