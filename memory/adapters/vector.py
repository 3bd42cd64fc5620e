"""VectorAdapter: semantic and hybrid search over a SQLiteAdapter's own database.

It composes the SQLite store rather than subclassing it: rows still go through
the store (and so through the ledger); this adapter only adds vectors, kept in
one sqlite-vec ``vec0`` index per database (``memory_vec_<N>``) whose rowid is
``memories.seq`` — so a purge through the store removes the vector too. Each
vector row carries its content hash and model, so re-runs embed only what
changed. The first embedded write creates the index and pins the database to
the model (``embedding_meta``) in one transaction.

With no sqlite-vec, or no healthy embedder compatible with the pin, every
search falls back to keyword with a one-time notice; nothing fails.
"""

from __future__ import annotations

import hashlib
import re
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from memory.adapters.sqlite import SQLiteAdapter
from memory.embedding.base import Embedder, EmbeddingMeta, l2_normalize, length_order
from memory.embedding.fusion import DEFAULT_KEYWORD_WEIGHT, DEFAULT_VECTOR_WEIGHT, Weights, fuse
from memory.embedding.gateway import EmbeddingGateway
from memory.errors import MemoryStorageError
from memory.sqlite.admission import where
from memory.sqlite.connection import transaction
from memory.types import HealthStatus, MemoryEntry, MemoryQuery, PrunePolicy, PruneReport, RetrievalMode

KNN_MAX = 4096  # sqlite-vec's ceiling on k
# Rows, then their vectors, per window of this many entries. The embedder sorts
# each window by length to cut padding: 256 measured 0.91x raw fastembed over
# 1,800 texts, 1,024 1.03x (a longer window pads less).
COMMIT_BATCH = 1024
EMBED_CHUNK = 128  # texts per embed call within a window: paces progress, costs nothing
_TABLE = re.compile(r"^memory_vec_(\d+)$")


def hybrid_pool(limit: int) -> int:
    """Candidates each hybrid leg contributes: enough that fusion can reorder, few enough to stay fast."""
    return max(3 * limit, 30)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _pack(vector: Sequence[float]) -> bytes:
    return struct.pack(f"{len(vector)}f", *vector)


@dataclass(frozen=True)
class Recall:
    """Search results plus which legs answered and why a leg was skipped."""

    entries: list[MemoryEntry]
    legs: tuple[str, ...]
    fallback: str | None = None


@dataclass
class FillReport:
    """What an embedding pass did: vectors written, rows skipped (with reasons)."""

    vec_table: str | None = None
    model: str | None = None
    total: int = 0
    embedded: int = 0
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass(frozen=True)
class VectorStatus:
    meta: EmbeddingMeta | None
    rows: int
    embedded: int
    vec_available: bool

    @property
    def missing(self) -> int:
        return self.rows - self.embedded


class VectorAdapter:
    """Semantic/hybrid search and vector upkeep over ``store``'s connection.

    ``vector_weight``/``bm25_weight`` weigh hybrid fusion (normalised to sum 1).
    The seed's 0.7/0.3 is available by passing it; the default is the
    weighting that beat both legs on our evaluation (see README).
    ``notify`` receives each degradation notice once per adapter.
    """

    def __init__(
        self,
        store: SQLiteAdapter,
        gateway: EmbeddingGateway,
        *,
        vector_weight: float = DEFAULT_VECTOR_WEIGHT,
        bm25_weight: float = DEFAULT_KEYWORD_WEIGHT,
        notify: Callable[[str], None] | None = None,
        commit_batch: int = COMMIT_BATCH,
        min_similarity: float = -1.0,
    ):
        self.store = store
        self.gateway = gateway
        self.weights = Weights(vector_weight, bm25_weight).normalized()
        self.min_similarity = min_similarity
        self.notify = notify
        self.commit_batch = commit_batch
        self.notices: list[str] = []
        self._resolved: dict[EmbeddingMeta | None, Embedder | None] = {}

    # -- lifecycle ---------------------------------------------------------

    async def connect(self) -> None:
        await self.store.connect()

    async def aclose(self) -> None:
        await self.store.aclose()

    async def health_check(self) -> HealthStatus:
        """The store's health; a missing vector layer is noted, not unhealthy (keyword still answers)."""
        status = await self.store.health_check()
        if status.healthy and await self._vec() is None:
            return HealthStatus(healthy=True, message=status.message + " (sqlite-vec unavailable: keyword only)")
        return status

    async def _vec(self) -> str | None:
        try:
            return await self.store.ensure_vec()
        except MemoryStorageError:
            return None

    def _notice(self, message: str) -> None:
        """Say once (and audit) that semantic work fell back to keyword.

        Trigger: no embedder is configured at all. Why: keyword-only is then the
        operator's choice, not a degradation. Outcome: stay quiet.
        """
        if message in self.notices or not self.gateway.embedders:
            return
        self.notices.append(message)
        if self.notify is not None:
            self.notify(message)
        if self.store.audit is not None:
            self.store.audit.append("embedding_degraded", db=str(self.store.path), reason=message)

    # -- the pin ------------------------------------------------------------

    async def meta(self) -> EmbeddingMeta | None:
        rows = await self.store.run(
            lambda raw: raw.execute("SELECT model, family, dimension, vec_table, pinned_at FROM embedding_meta").fetchall()
        )
        return EmbeddingMeta(*rows[0]) if rows else None

    async def embedder(self, meta: EmbeddingMeta | None) -> Embedder | None:
        """The gateway's answer for ``meta``, asked once per pin per adapter."""
        if meta not in self._resolved:
            self._resolved[meta] = await self.gateway.resolve(meta)
        return self._resolved[meta]

    async def _searchable(self) -> tuple[Embedder, EmbeddingMeta] | str | None:
        """What semantic search needs, a fallback reason, or None (nothing embedded yet)."""
        meta = await self.meta()
        if meta is None:
            return None
        if await self._vec() is None:
            return "sqlite-vec is unavailable: semantic search falls back to keyword"
        embedder = await self.embedder(meta)
        if embedder is None:
            return (
                f"no healthy embedder compatible with the pinned model {meta.model} "
                f"(family {meta.family}): semantic search falls back to keyword"
            )
        return embedder, meta

    # -- writes -------------------------------------------------------------

    async def write(self, entry: MemoryEntry, *, vector: Sequence[float] | None = None) -> None:
        """Store ``entry`` through the SQLite store, then index its vector.

        With no healthy embedder the entry is still stored (keyword-searchable);
        a supplied ``vector`` whose width disagrees with the pin is refused
        before anything is written.
        """
        if vector is None:
            await self.write_many([entry])
            return
        target = await self._write_target()
        if isinstance(target, str):
            raise MemoryStorageError(f"cannot index a supplied vector: {target}")
        embedder, table, meta = target
        width = meta.dimension if meta else embedder.dimension
        if len(vector) != width:
            raise MemoryStorageError(
                f"{self.store.path}: vector has {len(vector)} dimensions but the index holds {width}"
            )
        try:
            unit = l2_normalize(vector)
        except ValueError as exc:
            raise MemoryStorageError(f"{self.store.path}: {exc}") from None
        await self.store.write(entry)
        seq = await self.store.run(_seq_of, entry.id)
        await self.store.run(
            _put_vectors_txn, table, width, self._pin_for(embedder, table, meta),
            [(seq, _pack(unit), content_hash(entry.content), embedder.model_name)],
        )

    async def write_many(
        self, entries: Sequence[MemoryEntry], *, on_progress: Callable[[int, int], None] | None = None
    ) -> FillReport:
        """Rows and vectors in bounded batches: rows commit first, then that batch's vectors.

        An entry that cannot be embedded is stored without a vector and reported
        in ``skipped``; ``arcana reindex`` picks it up later.
        """
        report = FillReport(total=len(entries))
        target: tuple | str | None = None
        for start in range(0, len(entries), self.commit_batch):
            batch = entries[start : start + self.commit_batch]
            await self.store.write_many(batch)
            if target is None:
                target = await self._write_target()
                if isinstance(target, str):
                    self._notice(target)
            if not isinstance(target, str):
                embedder, table, meta = target
                await self._fill_batch(
                    table, embedder, self._pin_for(embedder, table, meta),
                    await self.store.run(_stale_rows, table, [e.id for e in batch]), report,
                    _offset(on_progress, start, len(entries)),
                )
                if meta is None:  # the first batch created the index and the pin
                    target = (embedder, table, await self.meta())
            if on_progress:
                on_progress(min(start + self.commit_batch, len(entries)), len(entries))
        if report.skipped:
            entry_id, reason = report.skipped[0]
            self._notice(f"{len(report.skipped)} memories stored without a vector ({entry_id}: {reason})")
        return report

    async def _write_target(self) -> tuple[Embedder, str, EmbeddingMeta | None] | str:
        if await self._vec() is None:
            return "sqlite-vec is unavailable: memories are stored without vectors (keyword only)"
        meta = await self.meta()
        embedder = await self.embedder(meta)
        if embedder is None:
            pinned = f" compatible with the pinned model {meta.model}" if meta else ""
            return f"no healthy embedder{pinned}: memories are stored without vectors; run `arcana reindex` later"
        table = meta.vec_table if meta else await self.store.run(_next_table)
        return embedder, table, meta

    @staticmethod
    def _pin_for(embedder: Embedder, table: str, meta: EmbeddingMeta | None) -> EmbeddingMeta | None:
        """The pin to create with the first vectors, or None when the database is already pinned."""
        if meta is not None:
            return None
        return EmbeddingMeta(embedder.model_name, embedder.model_family, embedder.dimension, table, time.time())

    async def _fill_batch(self, table, embedder, pin, rows, report: FillReport, progress=None) -> None:
        """Embed ``rows`` ((seq, id, content)) shortest first; write their vectors in one transaction.

        The whole window is sorted by length, since an embedder pads each batch
        to its longest text. It is then embedded a chunk at a time, which
        changes nothing for the model but lets ``progress(done)`` move. The
        window's last count is left to the caller, which reports it only after
        the vectors have committed.
        """
        if not rows:
            return
        rows = [rows[i] for i in length_order([content for _, _, content in rows])]
        vectors: list[list[float] | None] = []
        for start in range(0, len(rows), EMBED_CHUNK):
            vectors += await self._embed_isolated(embedder, rows[start : start + EMBED_CHUNK], report)
            if progress and len(vectors) < len(rows):
                progress(len(vectors))
        width = pin.dimension if pin else None
        good = []
        for (seq, entry_id, content), vector in zip(rows, vectors, strict=True):
            if vector is None:
                continue
            if width is None:
                width = len(vector)
            if len(vector) != width:
                report.skipped.append((entry_id, f"embedder returned {len(vector)} dimensions, index holds {width}"))
                continue
            good.append((seq, _pack(vector), content_hash(content), embedder.model_name))
        if good:
            report.embedded += await self.store.run(_put_vectors_txn, table, width, pin, good)
        report.vec_table, report.model = table, embedder.model_name

    async def _embed_isolated(self, embedder: Embedder, rows, report: FillReport) -> list[list[float] | None]:
        """Embed a batch; if it fails, embed one by one so one bad item costs only itself."""
        texts = [content for _, _, content in rows]
        try:
            return await embedder.embed(texts)
        except Exception:
            pass  # find the culprit(s) below
        out: list[list[float] | None] = []
        for (_, entry_id, _), text in zip(rows, texts, strict=True):
            try:
                out.append((await embedder.embed([text]))[0])
            except Exception as exc:
                report.skipped.append((entry_id, f"{type(exc).__name__}: {exc}"[:200]))
                out.append(None)
        return out

    # -- reads ----------------------------------------------------------------

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        return (await self.recall(query)).entries

    async def recall(self, query: MemoryQuery) -> Recall:
        """Search in the query's mode, falling back to keyword when semantic cannot run."""
        mode = query.retrieval_mode
        if mode is RetrievalMode.keyword or not (query.text and query.text.strip()):
            return Recall(await self.store.search(query), ("keyword",) if query.text else ())
        ready = await self._searchable()
        if not isinstance(ready, tuple):
            if ready is not None:
                self._notice(ready)
            return Recall(await self.store.search(query), ("keyword",), ready)
        embedder, meta = ready
        try:
            if mode is RetrievalMode.semantic:
                entries = await self._semantic(query, embedder, meta, query.limit)
                legs: tuple[str, ...] = ("semantic",)
            else:
                pool = hybrid_pool(query.limit)
                semantic = await self._semantic(query, embedder, meta, pool)
                keyword = await self.store.keyword_candidates(query, pool)
                entries = fuse(semantic, keyword, self.weights, query.limit)
                legs = ("semantic", "keyword")
        except _QueryEmbedFailed as exc:
            reason = f"embedding the query failed ({exc}): falling back to keyword"
            self._notice(reason)
            return Recall(await self.store.search(query), ("keyword",), reason)
        await self.store.record_access(entries)
        return Recall(entries, legs)

    async def semantic_ready(self) -> bool:
        """Can a semantic search run now (vectors indexed, sqlite-vec loaded, a compatible embedder)?"""
        return isinstance(await self._searchable(), tuple)

    async def similar(self, query: MemoryQuery, limit: int, min_similarity: float) -> list[MemoryEntry]:
        """Admitted nearest neighbours of ``query.text`` at cosine >= ``min_similarity``, scored by cosine.

        For write-time reconciliation: not a recall, so no access is recorded
        and no fallback notice is given; [] when semantic search cannot run.
        """
        ready = await self._searchable()
        if not isinstance(ready, tuple):
            return []
        embedder, meta = ready
        hits = await self._semantic(query, embedder, meta, limit)
        return [h for h in hits if h.score is not None and h.score >= min_similarity]

    async def _semantic(self, query: MemoryQuery, embedder: Embedder, meta: EmbeddingMeta, wanted: int):
        """KNN by cosine distance, admitted and filtered, over-fetching until ``wanted`` are found."""
        try:
            vector = (await embedder.embed([query.text]))[0]
        except Exception as exc:
            raise _QueryEmbedFailed(str(exc)) from exc
        if len(vector) != meta.dimension:
            raise MemoryStorageError(
                f"query vector has {len(vector)} dimensions but the index holds {meta.dimension}"
            )
        blob = _pack(vector)
        k = min(max(4 * wanted, 40), KNN_MAX)
        while True:
            hits = await self.store.run(_knn, meta.vec_table, blob, k)
            results = await self._admit(query, hits, wanted)
            if len(results) >= wanted or len(hits) < k:  # enough, or the index is exhausted
                break
            if 1.0 - hits[-1][1] < self.min_similarity:  # nearest-first: nothing further can pass
                break
            if k >= KNN_MAX:  # selective filters: scan only the rows that pass them
                clause = where(query)
                hits = await self.store.run(_filtered_scan, meta.vec_table, blob, clause.sql, clause.params, wanted)
                results = await self._admit(query, hits, wanted)
                break
            k = min(4 * k, KNN_MAX)
        return results[:wanted]

    async def _admit(self, query: MemoryQuery, hits: list[tuple[int, float]], wanted: int) -> list[MemoryEntry]:
        """Hits that pass admission and filters, nearest first; reads rows only until ``wanted`` are found."""
        results: list[MemoryEntry] = []
        start, step = 0, wanted
        while start < len(hits) and len(results) < wanted:
            chunk = hits[start : start + step]
            admitted = await self.store.fetch_admitted(query, [seq for seq, _ in chunk])
            results += [
                admitted[seq].model_copy(update={"score": 1.0 - distance, "matched_by": ["semantic"]})
                for seq, distance in chunk
                if seq in admitted and 1.0 - distance >= self.min_similarity
            ]
            start, step = start + len(chunk), step * 4
        return results

    async def get(self, entry_id: str) -> MemoryEntry | None:
        return await self.store.get(entry_id)

    async def prune(self, policy: PrunePolicy) -> PruneReport:
        """Prune through the store; a PURGE clears the removed entries' vectors in the same transaction."""
        return await self.store.prune(policy)

    async def purge(self, entry_ids: Sequence[str]) -> int:
        return await self.store.purge(entry_ids)

    # -- upkeep: status, backfill, re-embed --------------------------------

    async def status(self) -> VectorStatus:
        meta = await self.meta()
        rows = await self.store.count()
        vec = await self._vec() is not None
        embedded = 0
        if meta is not None and vec:
            embedded = rows - len(await self.store.run(_stale_rows, meta.vec_table, None))
        return VectorStatus(meta, rows, embedded, vec)

    async def backfill(self, on_progress: Callable[[int, int], None] | None = None) -> FillReport:
        """Embed every row that has no vector (or a stale one) with the pinned model's embedder."""
        target = await self._write_target()
        if isinstance(target, str):
            raise MemoryStorageError(f"{self.store.path}: cannot embed: {target}")
        embedder, table, meta = target
        return await self._fill(table, embedder, self._pin_for(embedder, table, meta), on_progress)

    async def reembed(self, embedder: Embedder, on_progress: Callable[[int, int], None] | None = None) -> FillReport:
        """Rebuild the index with ``embedder`` beside the live one; re-pin only when complete.

        Interrupted, the live index and pin stay as they were and the partial
        new index is resumed by the next run with the same model.
        """
        if await self._vec() is None:
            raise MemoryStorageError(f"{self.store.path}: sqlite-vec is unavailable; cannot build a vector index")
        status = await embedder.health_check()
        if not status.healthy:
            raise MemoryStorageError(f"cannot re-embed: {status.message}")
        meta = await self.meta()
        table = await self.store.run(_build_table, meta.vec_table if meta else None, embedder.model_name, embedder.dimension)
        report = await self._fill(table, embedder, None, on_progress)
        # Rows written while we worked went to the old index: catch up, then swap.
        catch_up = await self._fill(table, embedder, None, None)
        report.embedded += catch_up.embedded
        report.skipped += catch_up.skipped
        pin = EmbeddingMeta(embedder.model_name, embedder.model_family, embedder.dimension, table, time.time())
        await self.store.run(_repin_txn, pin, meta.vec_table if meta else None)
        self._resolved.clear()
        return report

    async def _fill(self, table, embedder, pin, on_progress) -> FillReport:
        exists = await self.store.run(_table_exists, table)
        rows = await self.store.run(_stale_rows, table, None) if exists else await self.store.run(_all_rows)
        report = FillReport(vec_table=table, model=embedder.model_name, total=len(rows))
        for start in range(0, len(rows), self.commit_batch):
            await self._fill_batch(
                table, embedder, pin, rows[start : start + self.commit_batch], report, _offset(on_progress, start, len(rows))
            )
            pin = None  # created (with the table) by the first batch
            if on_progress:
                on_progress(min(start + self.commit_batch, len(rows)), len(rows))
        return report


def _offset(on_progress, start: int, total: int):
    """``on_progress`` for a window that begins at ``start``: reports ``start + done`` of ``total``."""
    if on_progress is None:
        return None
    return lambda done: on_progress(min(start + done, total), total)


class _QueryEmbedFailed(Exception):
    """The embedder failed on the query itself: degrade to keyword, do not fail the read."""


# -- work run on the connection thread ----------------------------------------
# Reads below are index upkeep (every row needs a vector, whatever its
# visibility), not reads on behalf of an agent; agent reads go through
# SQLiteAdapter.fetch_admitted / keyword_candidates (the admission predicate).


def _vec_tables(raw) -> list[str]:
    names = [
        r[0]
        for r in raw.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB 'memory_vec_[0-9]*' "
            "AND sql LIKE 'CREATE VIRTUAL TABLE%'"
        )
    ]
    return sorted((n for n in names if _TABLE.match(n)), key=lambda n: int(_TABLE.match(n).group(1)))


def _next_table(raw) -> str:
    tables = _vec_tables(raw)
    return f"memory_vec_{int(_TABLE.match(tables[-1]).group(1)) + 1 if tables else 1}"


def _table_exists(raw, table: str) -> bool:
    return table in _vec_tables(raw)


def _create_table(raw, table: str, dimension: int) -> None:
    raw.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
        f"embedding float[{int(dimension)}] distance_metric=cosine, +content_hash text, +model text)"
    )


def _seq_of(raw, entry_id: str) -> int:
    return raw.execute("SELECT seq FROM memories WHERE id = ?", (entry_id,)).fetchone()[0]


def _all_rows(raw) -> list[tuple[int, str, str]]:
    return [tuple(r) for r in raw.execute("SELECT seq, id, content FROM memories ORDER BY seq")]


def _stale_rows(raw, table: str, ids: Sequence[str] | None) -> list[tuple[int, str, str]]:
    """Rows (seq, id, content) whose vector is missing or was made from other content."""
    if ids is None:
        rows = _all_rows(raw)
    else:
        rows = []
        for start in range(0, len(ids), 500):
            chunk = list(ids[start : start + 500])
            rows += [
                tuple(r)
                for r in raw.execute(
                    f"SELECT seq, id, content FROM memories WHERE id IN ({','.join('?' * len(chunk))})", chunk
                )
            ]
    if not rows or not _table_exists(raw, table):
        return rows
    if ids is None:
        hashes = dict(raw.execute(f"SELECT rowid, content_hash FROM {table}").fetchall())
    else:  # a batch: look up only its own rows, not the whole index
        seqs = [r[0] for r in rows]
        hashes = {}
        for start in range(0, len(seqs), 500):
            chunk = seqs[start : start + 500]
            hashes.update(raw.execute(
                f"SELECT rowid, content_hash FROM {table} WHERE rowid IN ({','.join('?' * len(chunk))})", chunk
            ).fetchall())
    return [r for r in rows if hashes.get(r[0]) != content_hash(r[2])]


def _put_vectors_txn(raw, table: str, dimension: int, pin: EmbeddingMeta | None, rows: list[tuple]) -> int:
    """Replace the vectors for ``rows`` (seq, blob, hash, model); create index + pin when ``pin`` is set."""
    with transaction(raw):
        if pin is not None:
            current = raw.execute("SELECT family, dimension, vec_table FROM embedding_meta").fetchone()
            if current is None:
                _create_table(raw, table, pin.dimension)
                raw.execute(
                    "INSERT INTO embedding_meta (id, model, family, dimension, vec_table, pinned_at) "
                    "VALUES (1, ?, ?, ?, ?, ?)",
                    (pin.model, pin.family, pin.dimension, pin.vec_table, pin.pinned_at),
                )
            elif (current[0], current[1], current[2]) != (pin.family, pin.dimension, table):
                return 0  # another process pinned a different model first; reindex will catch up
        elif not _table_exists(raw, table):
            _create_table(raw, table, dimension)
        seqs = [r[0] for r in rows]
        live = {
            r[0]
            for start in range(0, len(seqs), 500)
            for r in raw.execute(
                f"SELECT seq FROM memories WHERE seq IN ({','.join('?' * len(seqs[start:start + 500]))})",
                seqs[start : start + 500],
            )
        }
        rows = [r for r in rows if r[0] in live]  # purged meanwhile: no orphan vectors
        raw.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r[0],) for r in rows])
        raw.executemany(f"INSERT INTO {table} (rowid, embedding, content_hash, model) VALUES (?, ?, ?, ?)", rows)
        return len(rows)


def _build_table(raw, live: str | None, model: str, dimension: int) -> str:
    """The index a re-embed fills: a leftover one for the same model (resume), else a new one."""
    for table in _vec_tables(raw):
        if table == live:
            continue
        row = raw.execute(f"SELECT model, vec_length(embedding) FROM {table} LIMIT 1").fetchone()
        if row is not None and tuple(row) == (model, dimension):
            return table
        with transaction(raw):  # an abandoned build for another model, or empty: start over
            raw.execute(f"DROP TABLE {table}")
    table = _next_table(raw)
    if live and table == live:
        table = f"memory_vec_{int(_TABLE.match(live).group(1)) + 1}"
    with transaction(raw):
        _create_table(raw, table, dimension)
    return table


def _repin_txn(raw, pin: EmbeddingMeta, old: str | None) -> None:
    with transaction(raw):
        raw.execute(
            "INSERT INTO embedding_meta (id, model, family, dimension, vec_table, pinned_at) VALUES (1, ?, ?, ?, ?, ?) "
            "ON CONFLICT(id) DO UPDATE SET model = excluded.model, family = excluded.family, "
            "dimension = excluded.dimension, vec_table = excluded.vec_table, pinned_at = excluded.pinned_at",
            (pin.model, pin.family, pin.dimension, pin.vec_table, pin.pinned_at),
        )
        if old and old != pin.vec_table:
            raw.execute(f"DROP TABLE {old}")


def _knn(raw, table: str, blob: bytes, k: int) -> list[tuple[int, float]]:
    return [
        (r[0], r[1])
        for r in raw.execute(
            f"SELECT rowid, distance FROM {table} WHERE embedding MATCH ? AND k = ? ORDER BY distance", (blob, k)
        )
    ]


def _filtered_scan(raw, table: str, blob: bytes, clause_sql: str, params: tuple, limit: int):
    sql = (
        f"SELECT m.seq, vec_distance_cosine(v.embedding, ?) AS d FROM memories m "
        f"JOIN {table} v ON v.rowid = m.seq WHERE {clause_sql} ORDER BY d LIMIT ?"
    )
    return [(r[0], r[1]) for r in raw.execute(sql, (blob, *params, limit))]
