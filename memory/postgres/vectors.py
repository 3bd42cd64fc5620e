"""The PostgreSQL vector SQL: the pool's pin, its vector table, stale rows and vector upserts."""

from __future__ import annotations

import time
from collections.abc import Sequence

from memory.embedding.base import EmbeddingMeta

VEC_TABLE = "memory_vectors"
PIN_LOCK = 0x41524350  # 'ARCP': serialises the first pin of a pool across machines


def vector_text(vector: Sequence[float]) -> str:
    return "[" + ",".join(format(float(x), ".8g") for x in vector) + "]"


# Index upkeep reads every row, whatever its visibility: they need vectors too.
HASH = "left(encode(sha256(convert_to(m.content, 'UTF8')), 'hex'), 32)"


async def stale_rows(conn, pinned: bool, ids: Sequence[str] | None, table: str = VEC_TABLE, after: int = 0, limit: int | None = None):
    """Rows (among ``ids``; all when None) that ``table`` holds no current vector for; with
    ``limit``, the first ``limit`` of them past sequence number ``after`` (a page of a backfill)."""
    clauses, args = ["m.seq > $1"], [after]
    if ids is not None:
        clauses.append(f"m.id = ANY(${len(args) + 1}::text[])")
        args.append(list(ids))
    if pinned:
        clauses.append(f"(v.seq IS NULL OR v.content_hash <> {HASH})")
    join = f" LEFT JOIN {table} v ON v.seq = m.seq" if pinned else ""
    page = "" if limit is None else f" ORDER BY m.seq LIMIT {int(limit)}"
    return await conn.fetch(
        f"SELECT m.seq, m.content, {HASH} AS hash FROM memories m{join} WHERE {' AND '.join(clauses)}{page}", *args
    )


async def stale_pages(call, pinned: bool, table: str = VEC_TABLE, *, size: int):
    """The rows ``table`` holds no current vector for, ``size`` at a time in sequence order; each
    page is read after the one before was handled, so memory stays bounded however many rows the
    pool holds. ``call`` runs ``fn(conn, *args)`` on a pooled connection."""
    after = 0
    while rows := await call(stale_rows, pinned, None, table, after, size):
        after = rows[-1]["seq"]
        yield rows


async def stale_count(conn, pinned: bool, table: str = VEC_TABLE) -> int:
    """How many rows ``table`` holds no current vector for (a backfill's total, counted, not read)."""
    if not pinned:
        return await conn.fetchval("SELECT count(*) FROM memories")
    return await conn.fetchval(
        f"SELECT count(*) FROM memories m LEFT JOIN {table} v ON v.seq = m.seq WHERE v.seq IS NULL OR v.content_hash <> {HASH}"
    )


async def pin(conn, candidate: EmbeddingMeta) -> EmbeddingMeta:
    """Pin the pool to ``candidate`` and create its vector table + HNSW index, unless pinned meanwhile."""
    await conn.execute("SELECT pg_advisory_xact_lock($1)", PIN_LOCK)
    row = await conn.fetchrow("SELECT model, family, dimension, vec_table, pinned_at FROM embedding_meta")
    if row is not None:
        return EmbeddingMeta(*row)
    dimension = candidate.dimension
    await conn.execute(
        f"CREATE TABLE IF NOT EXISTS {VEC_TABLE} (seq bigint PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE, "
        f"embedding vector({int(dimension)}) NOT NULL, content_hash text NOT NULL, model text NOT NULL)"
    )
    await conn.execute(f"CREATE INDEX IF NOT EXISTS {VEC_TABLE}_hnsw ON {VEC_TABLE} USING hnsw (embedding vector_cosine_ops)")
    meta = EmbeddingMeta(candidate.model, candidate.family, dimension, VEC_TABLE, time.time())
    await conn.execute(
        "INSERT INTO embedding_meta (id, model, family, dimension, vec_table, pinned_at) VALUES (1, $1, $2, $3, $4, $5)",
        meta.model, meta.family, meta.dimension, meta.vec_table, meta.pinned_at,
    )
    return meta


async def put_vectors(conn, rows: list[tuple], table: str = VEC_TABLE) -> int:
    """Upsert vectors for live rows only (a row purged meanwhile gets none: no orphans).

    Into the live table only vectors of the pinned model go: a machine that
    still holds the pin from before a re-embed writes nothing (0 returned)
    instead of mixing vector spaces.
    """
    if not rows:
        return 0
    seqs, vectors, hashes, models = (list(c) for c in zip(*rows, strict=True))
    pinned = " AND t.md = (SELECT model FROM embedding_meta)" if table == VEC_TABLE else ""
    status = await conn.execute(
        f"INSERT INTO {table} (seq, embedding, content_hash, model) "
        "SELECT s, e::vector, h, md FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) AS t(s, e, h, md) "
        f"WHERE EXISTS (SELECT 1 FROM memories WHERE memories.seq = t.s){pinned} "
        "ON CONFLICT (seq) DO UPDATE SET embedding = excluded.embedding, content_hash = excluded.content_hash, "
        "model = excluded.model",
        seqs, vectors, hashes, models,
    )
    return int(status.split()[-1])
