"""Bulk loading into a PostgreSQL store: COPY in, and build indexes after a large load.

memory/postgres/mutations.py stays the one way in for writes: for a batch of
:data:`COPY_MIN` new rows or more it COPYs them in and has the server write
their ledger rows from them (mutations._insert_copied). This module holds the
rest of a bulk load. A
load that is large against the table (:func:`deferred_indexes`) drops the
secondary indexes first and builds them once at the end, in the same
transaction: a crash leaves the table and its indexes as they were.
Measured (tests/bench/bench_postgres.py): see man/benchmarks.md, PostgreSQL.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager


COPY_MIN = 200  # rows from which COPY beats one unnest INSERT (below it, the round trips are equal)
REBUILD_MIN = 20_000  # rows from which a load that also outnumbers the table builds indexes afresh
BUILD_MEMORY = "512MB"  # maintenance_work_mem for those builds (SET LOCAL: this transaction only)
_LEDGER_COLUMNS = ["memory_id", "op", "actor", "at", "before", "after"]


async def scale_timeout(conn, base_ms: int, rows: int, per: int = 500) -> None:
    """Inside a transaction: a statement timeout that grows with the load (``base_ms`` per ``per`` rows),
    as the tier's write budget grows with a batch."""
    if rows > per:
        await conn.execute(f"SET LOCAL statement_timeout = {int(base_ms * -(-rows // per))}")


async def append_ledger(conn, rows: Sequence[tuple]) -> None:
    """Ledger rows ``(memory_id, op, actor, at, before, after)`` by COPY."""
    await conn.copy_records_to_table("memory_ledger", records=list(rows), columns=_LEDGER_COLUMNS)


async def _deferrable(conn, tables: Sequence[str]) -> list[tuple[str, str]]:
    """(drop, create) statements for what a large load builds afresh on ``tables``: the indexes no
    constraint needs, and the unique constraints no foreign key leans on (primary keys stay)."""
    indexes = await conn.fetch(
        "SELECT i.indexrelid::regclass::text AS name, pg_get_indexdef(i.indexrelid) AS ddl FROM pg_index i "
        "WHERE i.indrelid = ANY($1::regclass[]) AND NOT i.indisunique AND NOT i.indisprimary",
        list(tables),
    )
    uniques = await conn.fetch(
        "SELECT c.conrelid::regclass::text AS tab, quote_ident(c.conname) AS name, pg_get_constraintdef(c.oid) AS def "
        "FROM pg_constraint c WHERE c.conrelid = ANY($1::regclass[]) AND c.contype = 'u' "
        "AND NOT EXISTS (SELECT 1 FROM pg_constraint f WHERE f.contype = 'f' AND f.conindid = c.conindid)",
        list(tables),
    )
    return [(f"DROP INDEX {r['name']}", r["ddl"]) for r in indexes] + [
        (f"ALTER TABLE {r['tab']} DROP CONSTRAINT {r['name']}", f"ALTER TABLE {r['tab']} ADD CONSTRAINT {r['name']} {r['def']}")
        for r in uniques
    ]


async def outnumbers(conn, incoming: int, table: str) -> bool:
    """Whether ``incoming`` rows are more than ``table`` holds: the planner's estimate first (free),
    an exact count only when the estimate says yes (it is -1 or stale before the first ANALYZE)."""
    estimate = await conn.fetchval("SELECT reltuples FROM pg_class WHERE oid = $1::regclass", table)
    if estimate is not None and estimate >= incoming:
        return False
    return incoming > await conn.fetchval(f"SELECT count(*) FROM (SELECT 1 FROM {table} LIMIT $1) AS t", incoming)


@asynccontextmanager
async def deferred_indexes(conn, incoming: int, tables: Sequence[str] = ("memories", "memory_ledger")) -> AsyncIterator[bool]:
    """Inside a transaction: drop the secondary indexes and unique constraints of ``tables`` for a
    large load, build them again after.

    Large means at least :data:`REBUILD_MIN` rows and more than the table
    holds; building a GIN or B-tree index once over everything is cheaper
    than maintaining it row by row then (the unique index on ``memories.id``
    alone was a third of a COPY's time). Yields whether it deferred: if so
    the transaction holds the table's ACCESS EXCLUSIVE lock (the drops take
    it) until it ends, so readers and writers on other connections wait and
    nothing else can insert meanwhile; the constraint is checked again when
    it is added back (a duplicate would fail the load, leaving everything as
    it was).
    """
    if incoming < REBUILD_MIN or not await outnumbers(conn, incoming, tables[0]):
        yield False
        return
    deferred = await _deferrable(conn, tables)
    for drop, _ in deferred:
        await conn.execute(drop)
    yield True
    await conn.execute(f"SET LOCAL maintenance_work_mem = '{BUILD_MEMORY}'")
    for _, create in deferred:
        await conn.execute(create)
    # Statistics for the table the load made: until autovacuum got to it, keyword
    # recall right after a 1M load planned on an empty table's (291 ms p50 against 9.7).
    for table in tables:
        await conn.execute(f"ANALYZE {table}")
