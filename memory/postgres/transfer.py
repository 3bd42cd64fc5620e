"""Export and import on a PostgreSQL store: the server side of memory/operations/export.py.

The same records as a SQLite store gives (every row, operator audience,
keyset pages by ``seq``; ledger rows; vectors of the pinned model) and the
same import promises: upsert by id through the ledger as ``import`` (here
through the bulk path, memory/postgres/bulk.py), supplied vectors kept only
when the file's model is the pool's pin (or pins a pool that has none).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from memory.embedding.base import EmbeddingMeta, l2_normalize
from memory.postgres import bulk, mutations
from memory.postgres.admission import where
from memory.postgres.mutations import SELECT_COLUMNS
from memory.postgres.vectors import HASH, VEC_TABLE, put_vectors, vector_text
from memory.sqlite.rows import row_to_entry
from memory.types import Audience, LedgerRecord, MemoryEntry, MemoryQuery

Store = Any  # a memory.adapters.postgres.PostgresAdapter (this engine module is below the adapters)

PAGE = bulk.REBUILD_MIN  # rows per import transaction: a large import into a new pool builds its indexes once


async def pin(store: Store) -> dict | None:
    meta = await store.meta()
    if meta is None:
        return None
    return {"model": meta.model, "family": meta.family, "dimension": meta.dimension, "vec_table": meta.vec_table}


async def records(store: Store, *, with_history: bool, with_vectors: bool, page: int) -> AsyncIterator[dict]:
    """Every row of ``store`` as an export record, oldest first, ``page`` rows per query."""
    clause = where(MemoryQuery(), audience=Audience.OPERATOR, include_archived=True, start=2)
    vectors = with_vectors and await store.meta() is not None
    n = len(clause.params)
    sql = (
        f"SELECT {SELECT_COLUMNS}, m.seq, " + ("v.embedding::text AS vector " if vectors else "NULL AS vector ")
        + "FROM memories m " + (f"LEFT JOIN {VEC_TABLE} v ON v.seq = m.seq " if vectors else "")
        + f"WHERE m.seq > $1 AND {clause.sql} ORDER BY m.seq LIMIT ${n + 2}"
    )
    after = 0
    while True:
        rows = await store._call(lambda conn: conn.fetch(sql, after, *clause.params, page))  # noqa: B023
        if not rows:
            return
        after = rows[-1]["seq"]
        history = await _history(store, [r["id"] for r in rows]) if with_history else {}
        for r in rows:
            record: dict = {"memory": row_to_entry(tuple(r)).model_dump(mode="json")}
            if with_history:
                record["history"] = history.get(r["id"], [])
            if r["vector"] is not None:
                record["vector"] = [round(v, 7) for v in json.loads(r["vector"])]
            yield record


async def _history(store: Store, ids: Sequence[str]) -> dict[str, list[dict]]:
    rows = await store._call(
        lambda conn: conn.fetch(
            "SELECT memory_id, op, actor, at, before, after FROM memory_ledger "
            "WHERE memory_id = ANY($1::text[]) ORDER BY seq",
            list(ids),
        )
    )
    found: dict[str, list[dict]] = {}
    for r in rows:
        found.setdefault(r["memory_id"], []).append(
            {
                "op": r["op"], "actor": r["actor"], "at": r["at"],
                "before": json.loads(r["before"]) if r["before"] else None,
                "after": json.loads(r["after"]) if r["after"] else None,
            }
        )
    return found


async def changes_since(store: Store, ids: Sequence[str], since: float) -> list[LedgerRecord]:
    """The changes to ``ids`` after ``since`` made other than by an import: what an older import
    line must not undo (memory/operations/export.py)."""
    return await store._call(lambda conn: mutations.changes_since(conn, ids, since))


async def write(store: Store, entries: Sequence[MemoryEntry]) -> list[str]:
    """Upsert ``entries`` as ``import`` (the bulk path for a big page)."""
    return await store.write_many(entries, op="import")


async def _put_loaded(conn, base_ms: int, rows: list[tuple]) -> int:
    """Supplied vectors; a page larger than the vectors already there builds the HNSW index after it."""
    await bulk.scale_timeout(conn, base_ms, len(rows))
    async with bulk.deferred_indexes(conn, len(rows), (VEC_TABLE,)):
        return await put_vectors(conn, rows)


async def vector_sink(store: Store, model: dict | None):
    """A writer for supplied vectors when the file's model is the pool's pin (or pins it), else None."""
    if model is None:
        return None
    current = await store.meta()
    if current is not None and (current.model, current.dimension) != (model["model"], model["dimension"]):
        return None

    async def put(pairs: list[tuple[MemoryEntry, list[float]]]) -> int:
        if not pairs:
            return 0
        candidate = EmbeddingMeta(model["model"], model["family"], model["dimension"], VEC_TABLE, 0.0)
        meta = await store.ensure_pin(candidate)
        if (meta.model, meta.dimension) != (candidate.model, candidate.dimension):
            return 0  # another machine pinned a different model first
        indexed = await store._call(
            lambda conn: conn.fetch(
                f"SELECT m.id, m.seq, {HASH} AS hash FROM memories m WHERE m.id = ANY($1::text[])", [e.id for e, _ in pairs]
            )
        )
        by_id = {r["id"]: r for r in indexed}
        rows = [
            (by_id[e.id]["seq"], vector_text(l2_normalize(v)), by_id[e.id]["hash"], model["model"])
            for e, v in pairs
            if e.id in by_id
        ]
        return await store._call(_put_loaded, store.statement_timeout_ms, rows, transaction=True)

    return put
