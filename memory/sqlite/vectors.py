"""The vector SQL: sqlite-vec indexes (``memory_vec_<N>``), the embedding pin, KNN.

Each index is a ``vec0`` table whose rowid is ``memories.seq``, so a purge
through the ledger removes the vector too; each vector row carries its content
hash and model, so re-runs embed only what changed. Every write re-reads the
pin inside its own write transaction (:func:`put_live_txn`), so two writers
racing to create the first index agree on one.

Reads here are index upkeep (every row needs a vector, whatever its
visibility), not reads on behalf of an agent; agent reads go through the
admission predicate (:func:`memory.sqlite.rows.admitted_rows`, the store's keyword leg).
"""

from __future__ import annotations

import re
import struct
from collections.abc import Sequence
from dataclasses import replace

from memory.embedding.base import EmbeddingMeta, content_hash
from memory.sqlite import chunks, compact, vec0
from memory.sqlite.batches import select_in
from memory.sqlite.connection import load_vec, transaction
from memory.sqlite.context import EMBEDDED_TEXT_SQL

_TABLE = re.compile(r"^memory_vec_(\d+)$")
OVERFETCH = 4  # a KNN asks this many rows per row wanted (some will fail admission) ...
KNN_FLOOR = 40  # ... and never fewer than this


def pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


def vec_tables(raw) -> list[str]:
    """The database's vector indexes, oldest first (the one lookup of them)."""
    names = [
        r[0]
        for r in raw.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'memory_vec_[0-9]*' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        )
    ]
    return sorted((n for n in names if _TABLE.match(n)), key=lambda n: int(_TABLE.match(n).group(1)))


def _next_table(raw) -> str:
    tables = vec_tables(raw)
    return f"memory_vec_{int(_TABLE.match(tables[-1]).group(1)) + 1 if tables else 1}"


def loaded(raw) -> None:
    """Load sqlite-vec into this connection unless it is: an edit made through a store that never
    searched by vector must still be able to change its vector indexes."""
    if not raw.execute("SELECT 1 FROM pragma_module_list WHERE name = 'vec0'").fetchone():
        load_vec(raw)


def table_exists(raw, table: str | None) -> bool:
    return table in vec_tables(raw)


def _create_table(raw, table: str, dimension: int) -> None:
    raw.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
        f"embedding float[{int(dimension)}] distance_metric=cosine, +content_hash text, +model text)"
    )


def embedded_of(raw, entry_id: str) -> tuple[int, str]:
    """(seq, embedded text) of a stored row: its content with the context derived at write."""
    row = raw.execute(f"SELECT seq, {EMBEDDED_TEXT_SQL} FROM memories WHERE id = ?", (entry_id,)).fetchone()
    return row[0], row[1]


def stale_rows(raw, table: str | None, ids: Sequence[str]) -> list[tuple[int, str, str]]:
    """The rows of ``ids`` (seq, id, embedded text) whose vector in ``table`` is missing or was made from other text."""
    rows = [tuple(r) for r in select_in(raw, f"SELECT seq, id, {EMBEDDED_TEXT_SQL} FROM memories WHERE id IN ({{marks}})", ids)]
    if not rows or table is None or not table_exists(raw, table):
        return rows
    hashes = dict(select_in(raw, f"SELECT rowid, content_hash FROM {table} WHERE rowid IN ({{marks}})", [r[0] for r in rows]))
    return [r for r in rows if hashes.get(r[0]) != content_hash(r[2])]


class StoredHashes:
    """The content hash of every vector in an index, read in one scan and held in 40 bytes a row (sorted
    row ids, 32-byte hashes): a whole-store check (a backfill, `embeddings status`, `doctor`) compares
    each page of rows against them. Looking a page's rows up in vec0 instead costs a scan per page,
    and holding every row's text (as the check did) took 282 MB at 300,000 rows."""

    def __init__(self, raw, table: str | None):
        import numpy as np  # only a whole-store check pays for it

        self._np = np
        held = np.empty(0, dtype=[("id", np.int64), ("hash", "S32")])
        if table is not None and table_exists(raw, table):
            # Filled in place and sorted in place: gathering pages, then joining and reordering them,
            # held two to three copies at once (about 128 bytes a row at the peak, not 40).
            held = np.empty(raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0], dtype=held.dtype)
            cursor, filled = raw.execute(f"SELECT rowid, content_hash FROM {table}"), 0
            while batch := cursor.fetchmany(10_000):
                if filled + len(batch) > len(held):  # rows written since the count
                    held = np.resize(held, filled + len(batch))
                page = held[filled : filled + len(batch)]
                page["id"] = np.fromiter((r[0] for r in batch), dtype=np.int64, count=len(batch))
                page["hash"] = [(r[1] or "").encode() for r in batch]
                filled += len(batch)
            held = held[:filled]
            held.sort(order="id", kind="stable")
        self.ids, self.hashes = held["id"], held["hash"]

    def stale(self, rows: list[tuple[int, str, str]]) -> list[tuple[int, str, str]]:
        """The ``rows`` (seq, id, embedded text) whose vector is missing or was made from other text."""
        if not rows or not len(self.ids):
            return rows
        np = self._np
        seqs = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        at = np.minimum(np.searchsorted(self.ids, seqs), len(self.ids) - 1)
        held, stored = (self.ids[at] == seqs).tolist(), self.hashes[at].tolist()
        return [r for r, h, old in zip(rows, held, stored, strict=True) if not h or old != content_hash(r[2]).encode()]


def stale_page(raw, hashes: StoredHashes, after: int, limit: int) -> tuple[list[tuple[int, str, str]], int, int]:
    """Of the next ``limit`` rows past sequence number ``after``, those whose vector is missing or stale
    (``hashes``, the index's), the last sequence number read and how many rows were read: a scan of the
    store a page at a time, so memory stays bounded however many rows it holds."""
    rows = [tuple(r) for r in raw.execute(
        f"SELECT seq, id, {EMBEDDED_TEXT_SQL} FROM memories WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)
    )]
    return hashes.stale(rows), rows[-1][0] if rows else after, len(rows)


def read_meta(raw) -> EmbeddingMeta | None:
    row = raw.execute("SELECT model, family, dimension, vec_table, pinned_at FROM embedding_meta").fetchone()
    return EmbeddingMeta(*row) if row else None


def put_live_txn(raw, candidate: EmbeddingMeta, rows: list[tuple]) -> tuple[EmbeddingMeta, int | None]:
    """Write ``rows`` (seq, blob, hash, model) into the pinned index; return the pin and how many were stored.

    The pin is read under the write lock, so creating the index and pinning
    are one decision: with no pin, the next free ``memory_vec_N`` is created
    and ``candidate`` pinned to it; with a pin of the same family and width
    (whoever made it), its index is used. A pin that disagrees stores
    nothing and returns None, for the caller to report.
    """
    with transaction(raw):
        meta = read_meta(raw)
        if meta is None:
            meta = replace(candidate, vec_table=_next_table(raw))
            _create_table(raw, meta.vec_table, meta.dimension)
            raw.execute(
                "INSERT INTO embedding_meta (id, model, family, dimension, vec_table, pinned_at) "
                "VALUES (1, ?, ?, ?, ?, ?)",
                (meta.model, meta.family, meta.dimension, meta.vec_table, meta.pinned_at),
            )
        elif (meta.family, meta.dimension) != (candidate.family, candidate.dimension):
            return meta, None
        elif not table_exists(raw, meta.vec_table):
            _create_table(raw, meta.vec_table, meta.dimension)
        return meta, _replace_vectors(raw, meta.vec_table, rows)


def put_build_txn(raw, table: str, dimension: int, rows: list[tuple]) -> int:
    """Write ``rows`` into ``table``, an index being built beside the live one (a re-embed)."""
    with transaction(raw):
        if not table_exists(raw, table):
            _create_table(raw, table, dimension)
        return _replace_vectors(raw, table, rows)


def _replace_vectors(raw, table: str, rows: list[tuple]) -> int:
    """Replace the vectors of the ``rows`` still present (purged meanwhile: no orphan vectors)."""
    live = {r[0] for r in select_in(raw, "SELECT seq FROM memories WHERE seq IN ({marks})", [r[0] for r in rows])}
    rows = [r for r in rows if r[0] in live]
    raw.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r[0],) for r in rows])
    raw.executemany(f"INSERT INTO {table} (rowid, embedding, content_hash, model) VALUES (?, ?, ?, ?)", rows)
    compact.put(raw, table, [(r[0], r[1]) for r in rows])
    return len(rows)


def build_table(raw, live: str | None, model: str, dimension: int) -> str:
    """The index a re-embed fills: a leftover one for the same model (resume), else a new one."""
    for table in vec_tables(raw):
        if table == live:
            continue
        row = raw.execute(f"SELECT model, vec_length(embedding) FROM {table} LIMIT 1").fetchone()
        if row is not None and tuple(row) == (model, dimension):
            return table
        with transaction(raw):  # an abandoned build for another model, or empty: start over
            vec0.drop(raw, table)
            chunks.drop(raw, table)
            compact.drop(raw, table)
    table = _next_table(raw)
    if live and table == live:
        table = f"memory_vec_{int(_TABLE.match(live).group(1)) + 1}"
    with transaction(raw):
        _create_table(raw, table, dimension)
    return table


def unfinished_build(raw, live: str | None) -> tuple[str, int] | None:
    """(model, vectors so far) of the index a stopped re-embed left beside the live one (what
    :func:`build_table` resumes), or None. Counted off its rowid table, never its vectors."""
    for table in vec_tables(raw):
        if table == live:
            continue
        row = raw.execute(f"SELECT model FROM {table} LIMIT 1").fetchone()
        if row is not None:
            return row[0], raw.execute(f"SELECT count(*) FROM {table}_rowids").fetchone()[0]
    return None


def repin_txn(raw, pin: EmbeddingMeta, old: str | None) -> None:
    with transaction(raw):
        raw.execute(
            "INSERT INTO embedding_meta (id, model, family, dimension, vec_table, pinned_at) VALUES (1, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET model = excluded.model, family = excluded.family, "
            "dimension = excluded.dimension, vec_table = excluded.vec_table, pinned_at = excluded.pinned_at",
            (pin.model, pin.family, pin.dimension, pin.vec_table, pin.pinned_at),
        )
        if old and old != pin.vec_table:
            vec0.drop(raw, old)  # also when an outside edit damaged it
            chunks.drop(raw, old)
            compact.drop(raw, old)


def nearest(
    raw, table: str, blob: bytes, k: int, clause_sql: str, params: tuple, compact_from: int = compact.SEARCH_FROM
) -> tuple[list[tuple[int, float]], bool]:
    """The ``k`` nearest rows to ``blob``, and whether they came from the compact index.

    From the exact scan, of any row, for the caller to admit: ``k`` is
    over-fetched (:data:`OVERFETCH`) for that. The compact index (when it holds
    ``compact_from`` vectors or more) admits inside its statement (``clause_sql``)
    and over-fetches its own candidates, so it is asked for ``k /`` :data:`OVERFETCH`
    (at least :data:`KNN_FLOOR`): over-fetching twice made a hybrid leg of 50
    rescore 800 floats, five times a semantic query's (bench_scale.py).
    """
    if compact.size(raw, table) >= max(compact_from, 1):
        wanted = max(k // OVERFETCH, min(k, KNN_FLOOR))
        return compact.search(raw, table, blob, wanted, clause_sql, params), True
    return knn(raw, table, blob, k), False


def knn(raw, table: str, blob: bytes, k: int) -> list[tuple[int, float]]:
    return [
        (r[0], r[1])
        for r in raw.execute(
            f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance", (blob, k)
        )
    ]


def filtered_scan(raw, table: str, blob: bytes, clause_sql: str, params: tuple, limit: int):
    """Exact nearest rows among those ``clause_sql`` (the admission predicate and filters) admits."""
    sql = (
        f"SELECT m.seq, vec_distance_cosine(v.embedding, ?) AS d FROM memories m "
        f"JOIN {table} v ON v.rowid = m.seq WHERE {clause_sql} ORDER BY d LIMIT ?"
    )
    return [(r[0], r[1]) for r in raw.execute(sql, (blob, *params, limit))]

