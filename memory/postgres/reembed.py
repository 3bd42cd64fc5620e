"""Re-embedding a PostgreSQL pool: a new vector table beside the live one, swapped in at the end.

``arcana reindex --re-embed --model M`` on a server pool. The build table
(``memory_vectors_build``) is filled window by window; its HNSW index is
built once the bulk is in (cheaper than growing it row by row), rows written
meanwhile are caught up, and one transaction under the pin lock drops the old
table, renames the new one into place and re-pins ``embedding_meta``. Until
then the live index and pin serve reads unchanged; a run interrupted midway
is resumed by the next one with the same model (a leftover for another model
or dimension is replaced). Vectors a machine still holding the old pin writes
afterwards are refused by the live table's pin check and backfilled by the
next ``arcana reindex``.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable

from memory.embedding.base import Embedder, l2_normalize, length_order
from memory.postgres.vectors import PIN_LOCK, VEC_TABLE, put_vectors, stale_count, stale_pages, vector_text
from memory.types import FillReport

BUILD = f"{VEC_TABLE}_build"
WINDOW = 256  # rows embedded and written per transaction

Call = Callable[..., Awaitable]


async def _prepare(conn, model: str, dimension: int) -> None:
    """Create the build table, or keep a leftover of this model and dimension (resume)."""
    kind = await conn.fetchval(
        "SELECT format_type(atttypid, atttypmod) FROM pg_attribute "
        "WHERE attrelid = to_regclass($1) AND attname = 'embedding'", BUILD,
    )
    if kind is not None:
        foreign = await conn.fetchval(f"SELECT EXISTS (SELECT 1 FROM {BUILD} WHERE model <> $1)", model)
        if kind == f"vector({dimension})" and not foreign:
            return
        await conn.execute(f"DROP TABLE {BUILD}")
    await conn.execute(
        f"CREATE TABLE {BUILD} (seq bigint PRIMARY KEY REFERENCES memories (seq) ON DELETE CASCADE, "
        f"embedding vector({int(dimension)}) NOT NULL, content_hash text NOT NULL, model text NOT NULL)"
    )


async def _fill(call: Call, embedder: Embedder, report: FillReport, on_progress) -> None:
    total = await call(stale_count, True, BUILD)
    report.total += total
    done = 0
    async for page in stale_pages(call, True, BUILD, size=WINDOW):
        window = [page[i] for i in length_order([r["content"] for r in page])]
        vectors = await embedder.embed([r["content"] for r in window])
        good = []
        for r, v in zip(window, vectors, strict=True):
            if len(v) == embedder.dimension:
                good.append((r["seq"], vector_text(l2_normalize(v)), r["hash"], embedder.model_name))
            else:
                report.skipped.append((str(r["seq"]), f"{len(v)} dimensions, expected {embedder.dimension}"))
        report.embedded += await call(put_vectors, good, BUILD, transaction=True)
        done += len(window)
        if on_progress:
            on_progress(min(done, total), total)


async def _index(conn) -> None:
    await conn.execute(f"CREATE INDEX IF NOT EXISTS {BUILD}_hnsw ON {BUILD} USING hnsw (embedding vector_cosine_ops)")


async def _swap(conn, embedder: Embedder) -> None:
    await conn.execute("SELECT pg_advisory_xact_lock($1)", PIN_LOCK)
    await conn.execute(f"DROP TABLE IF EXISTS {VEC_TABLE}")
    await conn.execute(f"ALTER TABLE {BUILD} RENAME TO {VEC_TABLE}")
    await conn.execute(f"ALTER INDEX {BUILD}_hnsw RENAME TO {VEC_TABLE}_hnsw")
    await conn.execute(f"ALTER INDEX {BUILD}_pkey RENAME TO {VEC_TABLE}_pkey")
    await conn.execute(
        "INSERT INTO embedding_meta (id, model, family, dimension, vec_table, pinned_at) VALUES (1, $1, $2, $3, $4, $5) "
        "ON CONFLICT (id) DO UPDATE SET model = excluded.model, family = excluded.family, "
        "dimension = excluded.dimension, vec_table = excluded.vec_table, pinned_at = excluded.pinned_at",
        embedder.model_name, embedder.model_family, embedder.dimension, VEC_TABLE, time.time(),
    )


async def rebuild(call: Call, embedder: Embedder, on_progress=None) -> FillReport:
    """Embed every row with ``embedder`` into the build table, index it, catch up, swap and re-pin.

    ``call`` runs ``fn(conn, *args)`` on a pooled connection (PostgresAdapter._call).
    """
    report = FillReport(vec_table=VEC_TABLE, model=embedder.model_name)
    await call(_prepare, embedder.model_name, embedder.dimension, transaction=True)
    await _fill(call, embedder, report, on_progress)
    await call(_index)
    await _fill(call, embedder, report, None)  # rows written while we worked
    await call(_swap, embedder, transaction=True)
    return report
