"""VectorAdapter: semantic and hybrid search over a SQLiteAdapter's own database.

It composes the SQLite store rather than subclassing it: rows still go through
the store (and so through the ledger); this adapter only adds vectors, kept in
one sqlite-vec ``vec0`` index per database (``memory_vec_<N>``) whose rowid is
``memories.seq`` — so a purge through the store removes the vector too. Each
vector row carries its content hash and model, so re-runs embed only what
changed. Every write of vectors re-reads the pin inside its own write
transaction: the first one creates the index and pins the database to the
model (``embedding_meta``), and every later one — in this process or another
that raced it — writes into the index the pin names, never a table of its own.
A vector that cannot be stored (the pin disagrees with this embedder) is
reported, never dropped silently.

With no sqlite-vec, or no healthy embedder compatible with the pin, every
search falls back to keyword with a one-time notice; nothing fails.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass

from memory.adapters.hybrid import asks_vectors, hybrid
from memory.adapters.sqlite import SQLiteAdapter
from memory.config import DEFAULT_KEYWORD_WEIGHT, DEFAULT_VECTOR_WEIGHT
from memory.embedding.base import Embedder, EmbeddingMeta, content_hash, l2_normalize, length_order
from memory.embedding.chunking import embed_text
from memory.embedding.gateway import EmbeddingGateway
from memory.errors import (
    MemoryBusyError,
    MemoryCorruptError,
    MemoryStorageError,
    MemoryTimeoutError,
    VectorIndexDamagedError,
)
from memory.progress import Report
from memory.query_terms import terms
from memory.ranking.fusion import Weights, hybrid_pool
from memory.sqlite import chunks, compact, vec0
from memory.sqlite.rows import held_ids
from memory.sqlite.semantic import Prefetched
from memory.sqlite.vectors import (
    StoredHashes,
    build_table,
    embedded_of,
    pack,
    put_build_txn,
    put_live_txn,
    read_meta,
    repin_txn,
    stale_page,
    stale_rows,
    table_exists,
    unfinished_build,
)
from memory.types import FillReport, HealthStatus, MemoryEntry, MemoryQuery, PrunePolicy, PruneReport, RetrievalMode

# Rows, then their vectors, per window of this many entries. The embedder sorts
# each window by length to cut padding: 256 measured 0.91x raw fastembed over
# 1,800 texts, 1,024 1.03x (a longer window pads less).
COMMIT_BATCH = 1024
Settled = Callable[[list[str]], Awaitable[set[str]]]  # the ids of a batch a re-run does not write again
EMBED_CHUNK = 128  # texts per embed call within a window: paces progress, costs nothing
REUSABLE_VECTORS = 4  # query vectors similar() keeps for the write that follows it


@dataclass(frozen=True)
class Recall:
    """Search results plus which legs answered and why a leg was skipped."""

    entries: list[MemoryEntry]
    legs: tuple[str, ...]
    fallback: str | None = None


@dataclass(frozen=True)
class VectorStatus:
    meta: EmbeddingMeta | None
    rows: int
    embedded: int
    vec_available: bool
    chunks: int = 0
    damage: str | None = None  # the pinned index cannot be read whole: its vectors are not counted
    building: tuple[str, int] | None = None  # (model, vectors so far) of a re-embed stopped part way

    @property
    def missing(self) -> int:
        return self.rows - self.embedded


class VectorAdapter:
    """Semantic/hybrid search and vector upkeep over ``store``'s connection.

    ``vector_weight``/``bm25_weight`` weigh hybrid fusion (normalised to sum 1).
    The seed's 0.7/0.3 is available by passing it; the default is the
    weighting chosen on LoCoMo and our evaluation (see man/benchmarks.md).
    ``notify`` receives each degradation notice once per adapter.
    ``chunk_long`` also embeds the chunks of memories longer than the
    model's window (vault notes), so a late section can be found; searches
    use chunk vectors wherever they exist. From ``compact_from`` vectors a
    search reads the compact index (memory/sqlite/compact.py) instead of
    every float.
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
        chunk_long: bool = False,
        compact_from: int = compact.SEARCH_FROM,
        embed_later: str = "run `arcana reindex` later",
    ):
        self.store = store
        self.embed_later = embed_later  # what a notice of rows left without vectors tells to run
        self.gateway = gateway
        self.weights = Weights(vector_weight, bm25_weight).normalized()
        self.min_similarity = min_similarity
        self.notify = notify
        self.commit_batch = commit_batch
        self.chunk_long = chunk_long
        self.compact_from = compact_from
        self.notices: list[str] = []
        self._resolved: dict[EmbeddingMeta | None, Embedder | None] = {}
        # (model, text) -> vector that similar() embedded for a write about to happen: the write
        # reuses it instead of embedding the same text again (reconciliation's largest cost).
        self._reusable: dict[tuple[str, str], list[float]] = {}
        self._primed: dict[tuple[str, str], list[float]] = {}  # a reconciled batch's texts (prime()), kept for its write
        self._nearest: dict[tuple[str, str, int], Prefetched] = {}  # their nearest rows (prime()), while nothing is written
        self._window: tuple[Embedder, EmbeddingMeta] | None = None  # the pin prime() found them under
        self._ahead: list[tuple[frozenset[str], asyncio.Future]] = []  # the next batches' vectors (embed_ahead())
        self._turn: asyncio.Future | None = None  # the model call in progress: one at a time (_embed())

    # -- lifecycle ---------------------------------------------------------

    async def connect(self) -> None:
        await self.store.connect()

    async def aclose(self) -> None:
        for _, pending in self._ahead:
            pending.cancel()
        self._ahead = []
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
        return await self.store.run(read_meta)

    async def embedder(self, meta: EmbeddingMeta | None) -> Embedder | None:
        """The gateway's answer for ``meta``, asked once per pin per adapter."""
        if meta not in self._resolved:
            self._resolved[meta] = await self.gateway.resolve(meta)
        return self._resolved[meta]

    async def _searchable(self) -> tuple[Embedder, EmbeddingMeta] | str | None:
        """What semantic search needs, a fallback reason, or None (nothing embedded yet)."""
        meta, vec = await self.store.vector_pin()
        if meta is None:
            return None
        if vec is None:
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
        embedder = await self._write_target(await self.meta())
        if isinstance(embedder, str):
            raise MemoryStorageError(f"cannot index a supplied vector: {embedder}")
        if len(vector) != embedder.dimension:
            raise MemoryStorageError(
                f"{self.store.path}: vector has {len(vector)} dimensions but the index holds {embedder.dimension}"
            )
        try:
            unit = l2_normalize(vector)
        except ValueError as exc:
            raise MemoryStorageError(f"{self.store.path}: {exc}") from None
        await self.store.write(entry)
        seq, text = await self.store.run(embedded_of, entry.id)
        meta, stored = await self.store.run(
            put_live_txn, _candidate(embedder), [(seq, pack(unit), content_hash(text), embedder.model_name)]
        )
        if stored is None:
            raise MemoryStorageError(f"memory {entry.id} was stored without its vector: {_pin_conflict(meta)}")

    async def write_many(
        self, entries: Sequence[MemoryEntry], *, on_progress: Callable[[int, int], None] | None = None
    ) -> FillReport:
        """Rows and vectors in bounded batches: rows commit first, then that batch's vectors.

        An entry that cannot be embedded is stored without a vector and reported
        in ``skipped``; ``arcana reindex`` picks it up later.
        """
        report = FillReport(total=len(entries))
        embedder: Embedder | str | None = None
        for start in range(0, len(entries), self.commit_batch):
            batch = entries[start : start + self.commit_batch]
            report.ops += await self.store.write_many(batch)
            meta = await self.meta()
            if embedder is None:
                embedder = await self._write_target(meta)
                if isinstance(embedder, str):
                    self._notice(embedder)
            if not isinstance(embedder, str):
                await self._embed_ids(embedder, meta, [e.id for e in batch], report, _offset(on_progress, start, len(entries)))
            if on_progress:
                on_progress(min(start + self.commit_batch, len(entries)), len(entries))
        if report.skipped:
            entry_id, reason = report.skipped[0]
            self._notice(f"{len(report.skipped)} memories stored without a vector ({entry_id}: {reason})")
        return report

    async def _embed_ids(self, embedder: Embedder, meta: EmbeddingMeta | None, ids: Sequence[str], report: FillReport,
                         progress=None) -> None:
        """Embed those of ``ids`` whose row has no current vector (and their chunks)."""
        await self._fill_batch(embedder, await self.store.run(stale_rows, meta and meta.vec_table, ids), report, progress)
        meta = meta or await self.meta()  # the first batch created the index and the pin
        if meta is not None and (meta.family, meta.dimension) == (embedder.model_family, embedder.dimension):
            await self._fill_chunks(meta.vec_table, embedder, ids, report)

    async def complete(self, ids: Sequence[str]) -> FillReport:
        """Embed the rows of ``ids`` that have none: rows a killed bulk write committed without
        their vectors, which a re-run finds unchanged and would otherwise never embed."""
        report = FillReport(total=len(ids))
        meta = await self.meta()
        embedder = await self._write_target(meta)
        if isinstance(embedder, str):
            return report
        for start in range(0, len(ids), self.commit_batch):
            await self._embed_ids(embedder, meta, ids[start : start + self.commit_batch], report)
            meta = meta or await self.meta()
        return report

    async def prepare_write(self) -> None:
        """Load the embedder a write will use, before the tier's write budget starts.

        A cold model load is start-up, not the write: on a busy machine it
        alone can outlast the budget, and the write would be reported failed
        (and cut off) for a cost it pays once per process.
        """
        await self._write_target(await self.meta())

    async def _write_target(self, meta: EmbeddingMeta | None) -> Embedder | str:
        """The embedder new vectors come from (given the pin as last read), or why there is none.

        Which index they go to is not decided here but inside the write
        transaction (:func:`put_live_txn`), where a pin made meanwhile by
        another writer is seen.
        """
        if await self._vec() is None:
            return "sqlite-vec is unavailable: memories are stored without vectors (keyword only)"
        embedder = await self.embedder(meta)
        if embedder is None:
            pinned = f" compatible with the pinned model {meta.model}" if meta else ""
            return f"no healthy embedder{pinned}: memories are stored without vectors; {self.embed_later}"
        return embedder

    async def _fill_batch(self, embedder, rows, report: FillReport, progress=None, build: str | None = None) -> None:
        """Embed ``rows`` ((seq, id, embedded text)) shortest first; write their vectors in one transaction.

        They go to the pinned index (pinning it first if nothing is), or to
        ``build``, an index a re-embed is filling beside the live one.

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
        width = embedder.dimension
        good, ids = [], []
        for (seq, entry_id, content), vector in zip(rows, vectors, strict=True):
            if vector is None:
                continue
            if len(vector) != width:
                report.skipped.append((entry_id, f"embedder returned {len(vector)} dimensions, index holds {width}"))
                continue
            good.append((seq, pack(vector), content_hash(content), embedder.model_name))
            ids.append(entry_id)
        report.model = embedder.model_name
        if build is not None:
            if good:
                report.embedded += await self.store.run(put_build_txn, build, width, good)
            report.vec_table = build
            return
        if not good:
            return
        meta, stored = await self.store.run(put_live_txn, _candidate(embedder), good)
        report.vec_table = meta.vec_table
        if stored is None:
            report.skipped += [(entry_id, _pin_conflict(meta)) for entry_id in ids]
        else:
            report.embedded += stored

    async def _embed_isolated(self, embedder: Embedder, rows, report: FillReport) -> list[list[float] | None]:
        """Embed a batch; if it fails, embed one by one so one bad item costs only itself."""
        texts = [content for _, _, content in rows]
        reused = [self._reusable.pop(key, None) or self._primed.pop(key, None) for key in ((embedder.model_name, t) for t in texts)]
        # Only what is not held yet is taken from the batches embedded ahead: a text the next batch
        # says again keeps its vector there, for that batch's own search.
        ahead = await self._from_ahead(embedder, [t for t, vector in zip(texts, reused, strict=True) if vector is None])
        reused = [vector or ahead.get(text) for text, vector in zip(texts, reused, strict=True)]
        missing = [text for text, vector in zip(texts, reused, strict=True) if vector is None]
        if not missing:
            return reused
        try:
            fresh = iter(await self._embed(embedder, missing))
            return [next(fresh) if vector is None else vector for vector in reused]
        except Exception:
            pass  # find the culprit(s) below
        out: list[list[float] | None] = []
        for (_, entry_id, _), text, vector in zip(rows, texts, reused, strict=True):
            if vector is not None:
                out.append(vector)
                continue
            try:
                out.append((await self._embed(embedder, [text]))[0])
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
        words = terms(query.text)
        if not asks_vectors(query, words):
            return Recall(await self.store.search(query), ("keyword",) if query.text else ())
        ready = await self._searchable()
        if not isinstance(ready, tuple):
            if ready is not None:
                self._notice(ready)
            return Recall(await self.store.search(query), ("keyword",), ready)
        embedder, meta = ready
        wanted = query.limit if mode is RetrievalMode.semantic else hybrid_pool(query.limit)
        try:
            semantic = await self._semantic(query, embedder, meta, wanted)
        except _QueryEmbedFailed as exc:
            return await self._keyword_instead(query, f"embedding the query failed ({exc})")
        except (MemoryBusyError, MemoryTimeoutError, MemoryCorruptError):
            raise  # the store's own trouble: a keyword read would meet it too
        except MemoryStorageError as exc:
            # Trigger: the vector index is missing, damaged or of another width. Why: the rows and
            # their keyword index are intact. Outcome: keyword answers, with a notice, not the tier lost.
            return await self._keyword_instead(query, f"the vector index could not be searched ({exc})")
        if mode is RetrievalMode.semantic:
            entries, legs = semantic, ("semantic",)
        else:
            entries = await hybrid(self.store, query, words, semantic, self.weights)
            legs = ("semantic", "keyword")
        await self.store.record_access(entries)
        return Recall(entries, legs)

    async def _keyword_instead(self, query: MemoryQuery, why: str) -> Recall:
        reason = f"{why}: falling back to keyword"
        self._notice(reason)
        return Recall(await self.store.search(query), ("keyword",), reason)

    def embed_ahead(self, entries: Sequence[MemoryEntry], settled: Settled | None = None) -> None:
        """Start embedding the texts of ``entries`` that the next batch will write (an import's next
        window): the model then works while this batch is decided and written, instead of after it
        (still one model call at a time, :meth:`_embed`). Up to two batches are kept ahead; an
        older one is dropped. ``settled(ids)`` says which of them a re-run will not write again
        (by default: those the store holds a row for); they are not embedded.

        Trigger: ``remember --from`` with an embedder. Why: deciding and writing a batch is Python
        and SQLite work that left the model idle. Outcome: :meth:`prime` and the write take their
        vectors from here; a failure here only costs the time it took, as they embed whatever is
        missing themselves.
        """
        if not entries:
            return
        texts = frozenset(e.content for e in entries)
        pending = asyncio.ensure_future(self._embed_new(list(entries), settled or self._held))
        for _, dropped in self._ahead[:-1]:
            dropped.cancel()
        self._ahead = self._ahead[-1:] + [(texts, pending)]

    async def embedded_ahead(self, entries: Sequence[MemoryEntry]) -> None:
        """Return once the batches embedded ahead that hold texts of ``entries`` are done, their
        vectors left for :meth:`prime` and the write to take. A reconciled batch waits here before
        it takes the agent's decide lock: else it held the lock through the model's time for its
        own texts, and every other write for the agent (a `remember`, an `arcana run` turn's
        extraction) waited on the model too."""
        wanted = {e.content for e in entries}
        pending = [task for covered, task in self._ahead if covered & wanted]
        if pending:
            await asyncio.wait(pending)

    async def _held(self, ids: list[str]) -> set[str]:
        return await self.store.run(held_ids, ids)

    async def _embed_new(self, entries: list[MemoryEntry], settled: Settled) -> dict[tuple[str, str], list[float]]:
        try:
            embedder = await self._write_target(await self.meta())
            if isinstance(embedder, str):
                return {}
            done = await settled([e.id for e in entries])
            texts = list(dict.fromkeys(e.content for e in entries if e.id not in done))
            return {(embedder.model_name, t): v for t, v in zip(texts, await self._embed(embedder, texts), strict=True)}
        except Exception:  # the batch's own write embeds what is missing, and reports what fails there
            return {}

    async def _embed(self, embedder: Embedder, texts: Sequence[str]) -> list[list[float]]:
        """``embedder.embed``, one call of this adapter's at a time: a batch embedded ahead and the
        write's own texts would otherwise share the same cores, each slower by half."""
        if not texts:
            return []
        previous, self._turn = self._turn, asyncio.get_running_loop().create_future()
        mine = self._turn
        try:
            if previous is not None and not previous.done():
                await asyncio.wait([previous])
            return await embedder.embed(texts)
        finally:
            mine.set_result(None)

    async def _from_ahead(self, embedder: Embedder, texts: Sequence[str]) -> dict[str, list[float]]:
        """The vectors of ``texts`` embedded ahead (waiting for the batch that holds them), taken out."""
        wanted, found = set(texts), {}
        for covered, pending in self._ahead:
            need = covered & wanted - found.keys()  # a text the next batch says again is left to it
            if not need:
                continue
            await asyncio.wait([pending])
            if pending.cancelled():
                continue
            vectors = pending.result()
            for text in need:
                vector = vectors.pop((embedder.model_name, text), None)
                if vector is not None:
                    found[text] = vector
        return found

    async def prime(self, texts: Sequence[str], neighbours: int = 0) -> dict[str, list[float]]:
        """Embed ``texts`` in one call for the :meth:`similar` calls about to ask for them (a batch
        being reconciled) and for the write of the batch after them (a text stored as it was
        said is then embedded once, not twice), replacing what an earlier batch primed; returns
        them by text ({} when semantic search cannot run).

        With ``neighbours`` (the ``limit`` those calls will ask), each text's nearest rows are
        found here too, the index read once for all of them instead of once per text
        (:meth:`SQLiteAdapter.nearest_many`); a search uses them only if nothing was written since.
        """
        self._primed, self._nearest, self._window = {}, {}, None
        ready = await self._searchable()
        if not isinstance(ready, tuple) or not texts:
            return {}
        embedder, meta = ready
        unique = list(dict.fromkeys(texts))
        vectors = await self._from_ahead(embedder, unique)
        missing = [t for t in unique if t not in vectors]
        if missing:
            vectors.update(zip(missing, await self._embed(embedder, missing), strict=True))
        vectors = {t: vectors[t] for t in unique}
        self._primed = {(embedder.model_name, t): v for t, v in vectors.items()}
        if neighbours and all(len(v) == meta.dimension for v in vectors.values()):
            found = await self.store.nearest_many(
                meta.vec_table, [pack(v) for v in vectors.values()], neighbours, compact_from=self.compact_from
            )
            self._nearest = {(embedder.model_name, t, neighbours): hits for t, hits in zip(vectors, found) if hits is not None}
            self._window = embedder, meta
        return vectors

    async def similar(self, query: MemoryQuery, limit: int, min_similarity: float) -> list[MemoryEntry] | None:
        """Admitted nearest neighbours of ``query.text`` at cosine >= ``min_similarity``, scored by cosine.

        For write-time reconciliation: not a recall, so no access is recorded
        and no fallback notice is given; None when semantic search cannot run
        (nothing embedded yet, no sqlite-vec, no compatible embedder).
        The text's vector is kept (the last few) for the write of that text to
        reuse: the memory is embedded once, not once to decide and once to store.
        """
        hits = await self._found_ahead(query, limit)
        if hits is not None:
            return [h for h in hits if h.score is not None and h.score >= min_similarity]
        ready = await self._searchable()
        if not isinstance(ready, tuple):
            return None
        embedder, meta = ready
        key = (embedder.model_name, query.text)
        vector = self._primed.get(key)
        first = None if vector is None else self._nearest.get((*key, limit))  # found for this very vector
        if vector is None:
            vector = (await self._embed(embedder, [query.text]))[0]
            self._reusable[key] = vector
            while len(self._reusable) > REUSABLE_VECTORS:
                del self._reusable[next(iter(self._reusable))]
        hits = await self._semantic(query, embedder, meta, limit, vector=vector, first=first)
        return [h for h in hits if h.score is not None and h.score >= min_similarity]

    async def _found_ahead(self, query: MemoryQuery, limit: int) -> list[MemoryEntry] | None:
        """:meth:`similar`'s leg for a text :meth:`prime` found the nearest rows of, under the pin read
        then: both hold while nothing is written since, which the leg checks (None otherwise, and the
        search is made as for any text). Each line of a window read the pin again (a fifth of its search)."""
        if self._window is None:
            return None
        embedder, meta = self._window
        key = (embedder.model_name, query.text)
        vector, first = self._primed.get(key), self._nearest.get((*key, limit))
        if vector is None or first is None:
            return None
        return await self.store.semantic_leg(
            query, meta.vec_table, pack(vector), limit, min_similarity=self.min_similarity,
            compact_from=self.compact_from, first=first, ahead_only=True,
        )

    async def _semantic(
        self, query: MemoryQuery, embedder: Embedder, meta: EmbeddingMeta, wanted: int, vector: list[float] | None = None,
        first: Prefetched | None = None,
    ) -> list[MemoryEntry]:
        """The store's semantic leg for ``vector`` (else the query text's), admitted and filtered."""
        if vector is None:
            try:
                vector = (await self._embed(embedder, [query.text]))[0]
            except Exception as exc:
                raise _QueryEmbedFailed(str(exc)) from exc
        if len(vector) != meta.dimension:
            raise MemoryStorageError(
                f"query vector has {len(vector)} dimensions but the index holds {meta.dimension}"
            )
        return await self.store.semantic_leg(
            query, meta.vec_table, pack(vector), wanted, min_similarity=self.min_similarity,
            compact_from=self.compact_from, first=first,
        )

    async def get(self, entry_id: str) -> MemoryEntry | None:
        return await self.store.get(entry_id)

    async def get_many(self, entry_ids: Sequence[str]) -> dict[str, MemoryEntry]:
        return await self.store.get_many(entry_ids)

    async def session_neighbours(self, query: MemoryQuery, entry_ids: Sequence[str]) -> dict[str, list[MemoryEntry]]:
        return await self.store.session_neighbours(query, entry_ids)

    async def prune(self, policy: PrunePolicy, on_progress: Report | None = None) -> PruneReport:
        """Prune through the store; a PURGE clears the removed entries' vectors in the same transaction."""
        return await self.store.prune(policy, on_progress)

    async def purge(self, entry_ids: Sequence[str]) -> int:
        return await self.store.purge(entry_ids)

    # -- upkeep: status, backfill, re-embed --------------------------------

    async def status(self) -> VectorStatus:
        meta = await self.meta()
        rows = await self.store.count()
        vec = await self._vec() is not None
        embedded = chunk_vectors = 0
        damage = await self.index_damage()
        if meta is not None and vec and damage is None:
            embedded = rows
            async for page, _ in self._stale_pages(meta.vec_table):
                embedded -= len(page)
            chunk_vectors = await self.store.run(chunks.count, chunks.chunk_table(meta.vec_table))
        building = await self.store.run(unfinished_build, meta and meta.vec_table) if vec else None
        return VectorStatus(meta, rows, embedded, vec, chunk_vectors, damage, building)

    async def index_damage(self) -> str | None:
        """What is wrong with the pinned vector index (:func:`memory.sqlite.vec0.damage`), or None.

        None too with no pin, no sqlite-vec, or the index dropped whole: its rows
        then merely lack vectors, which a backfill recreates and refills.
        """
        meta = await self.meta()
        if meta is None or await self._vec() is None or not await self.store.run(table_exists, meta.vec_table):
            return None
        return await self.store.run(vec0.damage, meta.vec_table, meta.dimension)

    async def backfill(self, on_progress: Callable[[int, int], None] | None = None) -> FillReport:
        """Embed every row that has no vector (or a stale one) with the pinned model's embedder."""
        meta = await self.meta()
        damage = await self.index_damage()
        if damage is not None:  # a backfill would fail on it, or find nothing to do while search finds nothing
            raise VectorIndexDamagedError(f"{self.store.path}: {damage}", model=meta.model)
        embedder = await self._write_target(meta)
        if isinstance(embedder, str):
            raise MemoryStorageError(f"{self.store.path}: cannot embed: {embedder}")
        return await self._fill(meta and meta.vec_table, embedder, None, on_progress)

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
        table = await self.store.run(build_table, meta.vec_table if meta else None, embedder.model_name, embedder.dimension)
        report = await self._fill(table, embedder, table, on_progress)
        # Rows written while we worked went to the old index: catch up, then swap.
        catch_up = await self._fill(table, embedder, table, None)
        report.embedded += catch_up.embedded
        report.skipped += catch_up.skipped
        pin = EmbeddingMeta(embedder.model_name, embedder.model_family, embedder.dimension, table, time.time())
        await self.store.run(repin_txn, pin, meta.vec_table if meta else None)
        self._resolved.clear()
        return report

    async def _fill(self, table: str | None, embedder, build: str | None, on_progress) -> FillReport:
        """Embed every row ``table`` lacks (all rows when it is None or absent), checking the store
        :attr:`commit_batch` rows at a time and committing each page's vectors before reading the
        next: memory stays bounded however many rows the store holds (reading every stale row's text
        first held a million of them). ``on_progress(rows checked, rows)``."""
        report = FillReport(vec_table=table, model=embedder.model_name, total=0)
        rows = await self.store.count() if on_progress else 0
        async for page, checked in self._stale_pages(table):
            report.total += len(page)
            await self._fill_batch(embedder, page, report, None, build)
            if on_progress:
                on_progress(checked, max(rows, checked))
        if await self.store.run(table_exists, table):
            await self._fill_chunks(table, embedder, None, report)
        return report

    async def _stale_pages(self, table: str | None) -> AsyncIterator[tuple[list[tuple[int, str, str]], int]]:
        """The rows whose vector in ``table`` is missing or stale, a page of :attr:`commit_batch` rows
        checked at a time (each read after the one before was handled), with the rows checked so far."""
        hashes = await self.store.run(StoredHashes, table)
        after, checked = 0, 0
        while True:
            page, last, read = await self.store.run(stale_page, hashes, after, self.commit_batch)
            if not read:
                return
            after, checked = last, checked + read
            yield page, checked

    async def _fill_chunks(self, table: str, embedder: Embedder, ids: Sequence[str] | None, report: FillReport) -> None:
        """With ``chunk_long``, (re)embed the chunks of the long memories among ``ids`` (None: all) that need it.

        Chunks are embedded a window at a time and each window's vectors
        commit with the spans they belong to; a chunk that cannot be embedded
        leaves its memory stale, to be retried by the next fill.
        """
        if not self.chunk_long:
            return
        target = chunks.chunk_table(table)
        if ids is not None:
            await self._fill_chunk_work(target, embedder, await self.store.run(chunks.stale, target, ids), report)
            return
        after: int | None = 0
        while after is not None:  # the whole store: a page of long memories at a time
            work, after = await self.store.run(chunks.stale_page, target, after, self.commit_batch)
            await self._fill_chunk_work(target, embedder, work, report)

    async def _fill_chunk_work(self, target: str, embedder: Embedder, work: list, report: FillReport) -> None:
        """Embed ``work``'s chunks a window of :attr:`commit_batch` texts at a time, each window committed."""
        width = embedder.dimension
        start = 0
        while start < len(work):
            window, texts = [], 0
            while start < len(work) and (not window or texts + len(work[start].embedded) <= self.commit_batch):
                window.append(work[start])
                texts += len(work[start].embedded)
                start += 1
            rows = [(w.seq, w.entry_id, embed_text(w.content, span)) for w in window for span in w.embedded]
            vectors = await self._embed_isolated(embedder, rows, report) if rows else []
            blobs = iter(None if v is None or len(v) != width else pack(v) for v in vectors)
            items = [(w, [next(blobs) for _ in w.embedded]) for w in window]
            report.chunks += await self.store.run(chunks.put_txn, target, width, items, embedder.model_name)


def _offset(on_progress, start: int, total: int):
    """``on_progress`` for a window that begins at ``start``: reports ``start + done`` of ``total``."""
    if on_progress is None:
        return None
    return lambda done: on_progress(min(start + done, total), total)


def _candidate(embedder: Embedder) -> EmbeddingMeta:
    """The pin ``embedder`` would make if the database has none yet (its index is named under the lock)."""
    return EmbeddingMeta(embedder.model_name, embedder.model_family, embedder.dimension, "", time.time())


def _pin_conflict(meta: EmbeddingMeta) -> str:
    return (
        f"the database was pinned meanwhile to {meta.model} ({meta.dimension} dimensions), which this "
        "embedder does not match; run `arcana reindex` with that model available"
    )


class _QueryEmbedFailed(Exception):
    """The embedder failed on the query itself: degrade to keyword, do not fail the read."""
