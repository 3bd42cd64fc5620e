"""PostgresAdapter: a shared pool or the global tier on a PostgreSQL + pgvector server.

The same contract and method names as :class:`SQLiteAdapter` (plus the
semantic/hybrid reads :class:`VectorAdapter` adds there), each guarantee
enforced in SQL on the server: reads through the one admission predicate
(memory/postgres/admission.py), writes through the ledger
(memory/postgres/mutations.py) in the mutation's own transaction, keyword
search on a generated ``tsvector`` with a GIN index, semantic search on an HNSW
(cosine) index, hybrid fusion with memory/ranking/fusion.py, and the
embedding pin per pool so machines with different embedders cannot mix
vector spaces.

Nothing connects before the first operation; every message carries the URL
with its password masked.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from memory import audit as audit_mod
from memory.adapters.hybrid import asks_vectors, hybrid
from memory.access import DAY_SECONDS, AccessBuffer, defer
from memory.inspection import Census, Growth, RecallDay, day_date
from memory.limits import MAX_CONTENT_BYTES, check_entries
from memory.locks import DECIDE_WAIT_SECONDS, WaitNotice
from memory.config import DEFAULT_KEYWORD_WEIGHT, DEFAULT_VECTOR_WEIGHT
from memory.embedding.base import Embedder, EmbeddingMeta, l2_normalize, length_order
from memory.deadline import WAIT_LONGER, lock_wait
from memory.errors import LockHeldError, MemoryStorageError, NotFoundError, SchemaTooNewError, StaleEditError
from memory.postgres import bulk, mutations, search
from memory.postgres import prune as prune_sql
from memory.postgres import vectors as vector_sql
from memory.postgres.admission import gate, numbered, where
from memory.postgres.connection import CONNECT_TIMEOUT_S, STATEMENT_TIMEOUT_MS, open_pool, storage_error
from memory.postgres.fts import text_query
from memory.postgres.migrations import current_version, migrate, refuse_newer
from memory.postgres.mutations import SELECT_COLUMNS
from memory.postgres.vectors import VEC_TABLE
from memory.progress import Report
from memory.query_terms import QueryTerms, terms
from memory.ranking.fusion import Weights, hybrid_pool
from memory.server_urls import check_url, mask_url
from memory.sqlite import versions as version_sql
from memory.sqlite.admission import POSTGRES
from memory.sqlite.rows import readable, row_to_entry
from memory.types import (
    Audience,
    FillReport,
    HealthStatus,
    LedgerRecord,
    MemoryEntry,
    MemoryQuery,
    PrunePolicy,
    PruneReport,
    RetrievalMode,
    Visibility,
)

WRITE_BATCH = 500
BULK_BATCH = 50_000  # rows per transaction of a large load (memory stays bounded)
EMBED_PAGE = 1_024  # rows embedded at a time: their vectors, as Python floats, stay ~15 MB
EF_SEARCH = 200  # HNSW candidate list: recall over speed (see man/benchmarks.md, PostgreSQL)
_HIT_FLUSH = 256


def _keyword_hit(row) -> dict[str, Any]:
    """A keyword search row's annotations: its rank (higher is better, unlike BM25), and the leg that found it."""
    return {"score": row["rank"], "matched_by": ["keyword"]}


class _QueryEmbedFailed(Exception):
    """The embedder failed on the query itself: degrade to keyword, do not fail the read."""


class PostgresAdapter:
    """Async store over one PostgreSQL database. Implements :class:`MemoryAdapter`.

    ``gateway`` (an :class:`EmbeddingGateway`) makes it semantic: writes embed,
    reads honour ``retrieval_mode``; without one it is keyword-only, like a
    bare SQLite store. ``connect_timeout``/``statement_timeout_ms`` bound every
    call inside the tier's budget.
    """

    def __init__(
        self,
        url: str,
        *,
        gateway: Any | None = None,
        actor: str = "library",
        audit: audit_mod.AuditLog | None = None,
        vector_weight: float = DEFAULT_VECTOR_WEIGHT,
        bm25_weight: float = DEFAULT_KEYWORD_WEIGHT,
        min_similarity: float = -1.0,
        notify: Callable[[str], None] | None = None,
        connect_timeout: float = CONNECT_TIMEOUT_S,
        statement_timeout_ms: int = STATEMENT_TIMEOUT_MS,
        ef_search: int = EF_SEARCH,
        max_content_bytes: int | None = MAX_CONTENT_BYTES,
    ):
        self.url = check_url(url)
        self.max_content_bytes = max_content_bytes  # as on SQLite: a larger content refuses the write
        self.gateway = gateway
        self.actor = actor
        self.audit = audit
        self.weights = Weights(vector_weight, bm25_weight).normalized()
        self.min_similarity = min_similarity
        self.notify = notify
        self.connect_timeout = connect_timeout
        self.statement_timeout_ms = statement_timeout_ms
        self.ef_search = ef_search
        self.notices: list[str] = []
        self._pool = None
        self._lock = asyncio.Lock()
        self._hits = AccessBuffer()
        self._resolved: dict[EmbeddingMeta | None, Embedder | None] = {}
        self._meta: EmbeddingMeta | None = None

    @property
    def path(self) -> str:
        """Where this store lives, safe to print (the URL, password masked)."""
        return mask_url(self.url)

    # -- lifecycle ---------------------------------------------------------

    async def connect(self) -> None:
        """Open the pool and bring the schema up to date (refusing a newer one)."""
        if self._pool is not None:
            return
        async with self._lock:
            if self._pool is not None:
                return
            try:
                pool = await open_pool(
                    self.url, connect_timeout=self.connect_timeout, statement_timeout_ms=self.statement_timeout_ms,
                    ef_search=self.ef_search,
                )
            except Exception as exc:
                raise storage_error(self.url, exc) from None
            try:
                async with pool.acquire() as conn:
                    await migrate(conn, self.path)
            except SchemaTooNewError:
                await pool.close()
                raise
            except Exception as exc:
                pool.terminate()
                raise storage_error(self.url, exc) from None
            self._pool = pool

    async def aclose(self) -> None:
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        try:
            await self._flush_hits(pool)
        finally:
            try:
                await asyncio.wait_for(pool.close(), self.connect_timeout)
            except Exception:  # the server went away: drop the sockets
                pool.terminate()

    async def _call(self, fn: Callable, *args: Any, transaction: bool = False) -> Any:
        """Run ``fn(conn, *args)`` on a pooled connection; server errors become MemoryStorageError."""
        await self.connect()
        try:
            async with self._pool.acquire(timeout=self.connect_timeout) as conn:
                if not transaction:
                    return await fn(conn, *args)
                async with conn.transaction():
                    return await fn(conn, *args)
        except (MemoryStorageError, NotFoundError, StaleEditError, asyncio.CancelledError):
            raise
        except Exception as exc:
            raise storage_error(self.url, exc) from None

    async def health_check(self) -> HealthStatus:
        try:
            await self._call(lambda conn: conn.fetchval("SELECT 1"))
            return HealthStatus(healthy=True, message=f"{self.path}: ok")
        except Exception as exc:  # never raises, by contract
            return HealthStatus(healthy=False, message=str(exc) if self.path in str(exc) else f"{self.path}: {exc}")

    async def schema_version(self) -> int:
        return await self._call(current_version)

    async def pending_version(self) -> tuple[int, int]:
        """(applied, head) without upgrading: for ``migrate status``."""
        from memory.postgres.migrations import head_version

        try:
            pool = await open_pool(
                self.url, connect_timeout=self.connect_timeout, statement_timeout_ms=self.statement_timeout_ms
            )
            try:
                async with pool.acquire() as conn:
                    version = await current_version(conn)
            finally:
                await pool.close()
        except Exception as exc:
            raise storage_error(self.url, exc) from None
        refuse_newer(version, self.path)
        return version, head_version()

    # -- writes (all through memory.postgres.mutations) --------------------

    @contextlib.asynccontextmanager
    async def deciding(self, notify: Callable[[str], None] | None = None) -> AsyncIterator[None]:
        """Hold the pool's decision lock from a reconciled write's decision to its settling, for every
        process on every machine using this database: a transaction-scoped advisory lock
        (:func:`memory.postgres.mutations.took_decision_lock`) on a connection of its own. The server
        does not serialise it by itself: a decision is reads, and two members' reads of a pool holding
        neither row both decided ``add``. :class:`LockHeldError` after the lock wait."""
        await self.connect()
        wait = lock_wait(DECIDE_WAIT_SECONDS)
        busy = f"another write into {self.path} kept deciding for {wait:g}s; try again once it is done, or {WAIT_LONGER}"
        notice = WaitNotice(notify, f"waiting for another write into {self.path} to be stored first (at most {wait:g}s)")
        deadline = time.monotonic() + wait
        try:
            conn = await self._pool.acquire(timeout=self.connect_timeout)
        except Exception as exc:
            raise storage_error(self.url, exc) from None
        held = conn.transaction()  # nothing is written in it: it only holds the lock
        try:
            try:
                await held.start()
                while not await mutations.took_decision_lock(conn):
                    if time.monotonic() >= deadline:
                        raise LockHeldError(busy)
                    notice.still_waiting()
                    await asyncio.sleep(0.05)
            except (LockHeldError, asyncio.CancelledError):
                raise
            except Exception as exc:
                raise storage_error(self.url, exc) from None
            yield
        finally:
            # A server gone by now takes the lock with the session; the write's own outcome stands.
            with contextlib.suppress(Exception):
                await held.rollback()
            with contextlib.suppress(Exception):
                await self._pool.release(conn)

    async def write(self, entry: MemoryEntry) -> None:
        await self.write_many([entry])

    async def write_many(
        self,
        entries: Sequence[MemoryEntry],
        *,
        on_progress: Callable[[int, int], None] | None = None,
        op: str | None = None,
    ) -> list[str]:
        """Upsert, then embed what changed (when semantic).

        A load of at least :data:`bulk.REBUILD_MIN` rows that outnumbers the
        table is one transaction: its secondary indexes and unique id
        constraint dropped, the rows
        COPYed in :data:`BULK_BATCH` at a time (memory stays bounded), the
        indexes built once at the end (memory/postgres/bulk.py); readers on
        other machines wait for it, and a failure leaves the table as it was.
        Anything else goes in bounded transactions of :data:`WRITE_BATCH`
        (:data:`BULK_BATCH` for a large load into a larger table). Each
        statement's timeout grows with the rows, as the tier's write budget
        does. ``op`` names the ledger rows (``import``). Content over
        ``max_content_bytes`` (or tags together over it) refuses the whole
        call before anything is written, as on SQLite.
        """
        check_entries(entries, self.max_content_bytes)
        if len(entries) >= bulk.REBUILD_MIN and await self._call(bulk.outnumbers, len(entries), "memories"):
            ops = await self._call(self._load, entries, op, on_progress, transaction=True)
            if self.gateway is not None:
                for start in range(0, len(entries), BULK_BATCH):
                    await self._embed_ids([e.id for e in entries[start : start + BULK_BATCH]])
            return ops
        size = BULK_BATCH if len(entries) >= bulk.REBUILD_MIN else WRITE_BATCH
        ops: list[str] = []
        for start in range(0, len(entries), size):
            batch = entries[start : start + size]
            ops += await self._call(self._upsert, batch, op, transaction=True)
            if self.gateway is not None:
                await self._embed_ids([e.id for e in batch])
            if on_progress:
                on_progress(len(ops), len(entries))
        return ops

    async def _load(self, conn, entries: Sequence[MemoryEntry], op: str | None, on_progress) -> list[str]:
        await bulk.scale_timeout(conn, self.statement_timeout_ms, len(entries), WRITE_BATCH)
        async with bulk.deferred_indexes(conn, len(entries)) as locked:
            return await mutations.load(
                conn, entries, self.actor, op=op, size=BULK_BATCH, locked=locked, on_progress=on_progress
            )

    async def _upsert(self, conn, batch: Sequence[MemoryEntry], op: str | None) -> list[str]:
        await bulk.scale_timeout(conn, self.statement_timeout_ms, len(batch), WRITE_BATCH)
        return await mutations.upsert(conn, batch, self.actor, op=op)

    async def update(self, entry_id: str, **changes: Any) -> MemoryEntry:
        current = await self.get(entry_id, audience=Audience.OPERATOR, include_archived=True)
        if current is None:
            raise NotFoundError(f"no memory with id {entry_id}")
        updated = MemoryEntry(**{**current.model_dump(), **changes})
        await self.write_many([updated])
        return await self.get(entry_id, audience=Audience.OPERATOR, include_archived=True)

    async def delete(self, entry_id: str) -> bool:
        return await self._call(mutations.delete, [entry_id], "delete", self.actor, transaction=True) == 1

    async def purge(self, entry_ids: Sequence[str]) -> int:
        return await self._call(mutations.delete, list(entry_ids), "purge", self.actor, transaction=True)

    async def withdraw(self, entry_ids: Sequence[str]) -> int:
        """Remove promoted copies that no longer qualify (ledgered as ``withdraw``)."""
        return await self._call(mutations.delete, list(entry_ids), "withdraw", self.actor, transaction=True)

    async def removed(self, entry_ids: Sequence[str]) -> set[str]:
        """The ids among ``entry_ids`` that this store once held and removed (deleted, purged,
        withdrawn) and does not hold again: an import must not bring them back."""
        return await self._call(mutations.removed, entry_ids)

    async def supersede(self, old_ids: Sequence[str], new_id: str, at: datetime | None = None) -> list[str]:
        """End the current ``old_ids`` in favour of ``new_id`` (both ledgered) at ``at``, when the new
        fact was said (default now); the ids actually ended."""
        when = time.time() if at is None else at.timestamp()
        return await self._call(mutations.supersede, list(old_ids), new_id, when, self.actor, transaction=True)

    async def make_current(self, entry_id: str) -> list[str]:
        """Undo a supersession or release a held conflict: ``entry_id`` answers recall again (ledgered)."""
        return await self._call(mutations.make_current, entry_id, self.actor, transaction=True)

    async def reinforce(self, entry_id: str, step: float, confirm: float | None = None, asserted: bool = False) -> int:
        """A restated fact: importance and access bumped, ledgered in the same transaction."""
        return await self._call(
            lambda conn: mutations.reinforce(
                conn, entry_id, self.actor, importance_step=step, confirm=confirm, asserted=asserted
            ),
            transaction=True,
        )

    async def archive(self, entry_ids: Sequence[str], *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "archive", "archived", 1, expect_seq)

    async def restore(self, entry_ids: Sequence[str], *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "restore", "archived", 0, expect_seq)

    async def set_visibility(self, entry_ids: Sequence[str], visibility: Visibility, *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "visibility", "visibility", Visibility(visibility).value, expect_seq)

    async def set_pinned(self, entry_ids: Sequence[str], pinned: bool, *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "pin", "pinned", int(pinned), expect_seq)

    async def _set(self, entry_ids: Sequence[str], op: str, column: str, value: Any, expect_seq: int | None = None) -> int:
        ids = list(entry_ids)
        if expect_seq is not None and len(ids) != 1:
            raise ValueError("expect_seq guards an edit of one memory")
        return await self._call(mutations.update, ids, op, self.actor, column, value, expect_seq, transaction=True)

    # -- reads (all through memory.postgres.admission) ---------------------

    async def search(
        self, query: MemoryQuery, *, audience: Audience = Audience.RECALL, include_archived: bool = False
    ) -> list[MemoryEntry]:
        """Keyword, semantic or hybrid per ``query.retrieval_mode`` (semantic needs a gateway)."""
        if audience is Audience.RECALL and self.gateway is not None and query.retrieval_mode is not RetrievalMode.keyword:
            entries = await self._semantic_or_hybrid(query)
            if entries is not None:
                await self.record_access(entries)
                return entries
        clause = where(query, audience=audience, include_archived=include_archived)
        tq = text_query(terms(query.text))
        if tq is None:
            rows = await self._call(search.ordered, clause, query.limit)
            entries = readable(rows)
        else:
            entries = await self._keyword(tq, clause, query.limit)
        if audience is Audience.RECALL:
            await self.record_access(entries)
        return entries

    async def _keyword(self, tq, clause, limit: int) -> list[MemoryEntry]:
        rows = await self._call(search.keyword, tq, clause, limit)
        return readable(rows, _keyword_hit)

    async def keyword_candidates(self, query: MemoryQuery, limit: int) -> list[MemoryEntry]:
        """Admitted, filtered matches of the few most informative words of the query, for write-time
        reconciliation of a pool (:func:`memory.postgres.search.focused_keyword`): bounded work on a
        large pool, the words SQLite's candidate search picks; never an access."""
        tq = text_query(terms(query.text))
        if tq is None:
            return []
        return readable(await self._call(search.focused_keyword, tq, where(query), limit), _keyword_hit)

    async def similar(self, query: MemoryQuery, limit: int, min_similarity: float) -> list[MemoryEntry] | None:
        """Admitted nearest neighbours of ``query.text`` at cosine >= ``min_similarity``, for
        write-time reconciliation of a pool (never an access); None when semantic search cannot
        run (no gateway, nothing embedded, no compatible embedder), so keywords decide."""
        meta = await self.meta() if self.gateway is not None else None
        embedder = await self.embedder(meta) if meta is not None else None
        if embedder is None:
            return None
        vector = (await embedder.embed([query.text]))[0]
        return await self._knn(query, vector_sql.vector_text(vector), limit, min_similarity)

    async def keyword_leg(self, query: MemoryQuery, parsed: QueryTerms, limit: int) -> tuple[list[MemoryEntry], float]:
        """The keyword leg of a hybrid recall, in one call: the best ``limit`` matches and the share
        of the query's words the best one contains (see :mod:`memory.ranking.fusion`)."""
        tq = text_query(parsed)
        if tq is None:
            return [], 0.0
        rows, covered = await self._call(search.keyword_leg, tq, where(query), limit)
        return readable(rows, _keyword_hit), covered

    async def turn_context(
        self, query: MemoryQuery, parsed: QueryTerms, entry_ids: Sequence[str]
    ) -> tuple[dict[str, str], dict[str, float]]:
        """What the hybrid re-rank needs of ``entry_ids``, in one call: the turn before each (id to
        id) and the share of the query's word pairs each holds (both among admitted rows only)."""
        if not entry_ids:
            return {}, {}
        clause = where(query, start=2)
        neighbour = gate("p", 2 + len(clause.params))
        return await self._call(search.turn_context, list(entry_ids), parsed.pairs, clause, neighbour)

    async def session_neighbours(self, query: MemoryQuery, entry_ids: Sequence[str]) -> dict[str, list[MemoryEntry]]:
        """For each of ``entry_ids`` the query admits, the turns before and after it in its session
        that the query admits too, as on SQLite (recall's session-neighbour step)."""
        clause = where(query, start=2)
        adjacent = await self._call(search.adjacent_ids, list(entry_ids), clause, gate("p", 2 + len(clause.params)))
        admitted = await self.admitted_by_id(query, [n for near in adjacent.values() for n in near])
        return {i: [admitted[n] for n in near if n in admitted] for i, near in adjacent.items()}

    async def admitted_by_id(
        self, query: MemoryQuery, entry_ids: Sequence[str], *, audience: Audience = Audience.RECALL,
        include_archived: bool = False,
    ) -> dict[str, MemoryEntry]:
        """Entries among ``entry_ids`` that pass admission (for ``audience``) and the query's filters, keyed by id.

        Graph expansion's way in (a neighbour must pass exactly what a seed
        did), and the operator's to many ids at once.
        """
        clause = where(query, audience=audience, include_archived=include_archived, start=2)
        rows = await self._call(search.by_ids, list(entry_ids), clause)
        return {e.id: e for e in readable(rows)}

    async def get(
        self, entry_id: str, *, audience: Audience = Audience.RECALL, include_archived: bool = False
    ) -> MemoryEntry | None:
        clause = where(MemoryQuery(), audience=audience, include_archived=include_archived, start=2)
        rows = await self._call(search.by_ids, [entry_id], clause)
        return row_to_entry(rows[0]) if rows else None  # asked for by id: an unreadable row is named

    async def get_many(self, entry_ids: Sequence[str]) -> dict[str, MemoryEntry]:
        """What :meth:`get` finds for each of ``entry_ids``, in one read."""
        return await self.admitted_by_id(MemoryQuery(), entry_ids)

    async def find_by_prefix(
        self, prefix: str, limit: int = 5, *, query: MemoryQuery | None = None,
        audience: Audience = Audience.OPERATOR, include_archived: bool = True,
    ) -> list[MemoryEntry]:
        """Ids starting with ``prefix`` that ``audience`` may read and ``query`` admits (default: an
        operator's lookup), admitted in SQL as SQLiteAdapter.find_by_prefix is."""
        clause = where(query or MemoryQuery(), audience=audience, include_archived=include_archived, start=3)
        select = f"SELECT {SELECT_COLUMNS} FROM memories m WHERE {{match}} AND {clause.sql} LIMIT $2"
        rows = await self._starting_with(select, "m.id", prefix, limit, *clause.params)
        return [row_to_entry(r) for r in rows]  # the operator asked for these rows: one unreadable is named

    def seen(self, entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
        """``entries`` with the read hits buffered for them (see :meth:`AccessBuffer.seen`)."""
        return self._hits.seen(entries)

    async def record_access(self, entries: Sequence[MemoryEntry]) -> None:
        """Buffer read hits; folded in at close or every few hundred hits."""
        if defer(self, (entry.id for entry in entries)):
            return  # a federated recall counts only what it returns (memory.access.deferred_access)
        self._hits.record((entry.id for entry in entries), time.time())
        if len(self._hits) >= _HIT_FLUSH and self._pool is not None:
            await self._flush_hits(self._pool)

    async def _flush_hits(self, pool) -> None:
        hits = self._hits.take()
        if hits is None:
            return
        try:
            async with pool.acquire(timeout=self.connect_timeout) as conn:
                await mutations.touch_access(conn, hits)
        except Exception:
            pass  # access counts are a ranking hint; never fail a read (or a close) over them

    async def page(
        self, query: MemoryQuery, *, offset: int = 0, audience: Audience = Audience.LISTING, include_archived: bool = False
    ) -> list[MemoryEntry]:
        """Rows ``offset`` .. ``offset + query.limit`` of the filter-and-order listing, as on SQLite."""
        if audience is Audience.RECALL:
            raise ValueError("a listing page is not a recall; use search()")
        clause = where(query, audience=audience, include_archived=include_archived)
        return readable(await self._call(search.ordered, clause, query.limit, offset))

    async def page_after(
        self, query: MemoryQuery, after: int = 0, *, audience: Audience = Audience.LISTING, include_archived: bool = False
    ) -> tuple[list[MemoryEntry], int]:
        """Up to ``query.limit`` rows past row ``after`` and the row to go on after, as on SQLite."""
        if audience is Audience.RECALL:
            raise ValueError("a listing page is not a recall; use search()")
        clause = where(query, audience=audience, include_archived=include_archived)
        rows = await self._call(search.after, clause, after, query.limit)
        return readable(rows), rows[-1]["seq"] if rows else after

    async def census(self) -> Census:
        """Rows by state (one aggregate statement)."""
        return Census.of(await self._call(lambda conn: conn.fetchrow(_CENSUS)))

    async def growth(self, after: int = 0) -> Growth:
        """Rows added and removed per day, from the ledger rows past seq ``after``."""
        return await self._call(_growth, after)

    async def recall_activity(self) -> list[RecallDay]:
        await self.connect()
        await self._flush_hits(self._pool)
        rows = await self._call(lambda conn: conn.fetch("SELECT day, recalls, hits FROM recall_activity ORDER BY day"))
        return [RecallDay(day_date(r["day"]), r["recalls"], r["hits"]) for r in rows]

    async def history(self, entry_id: str) -> list[LedgerRecord]:
        rows = await self._call(
            lambda conn: conn.fetch("SELECT * FROM memory_ledger WHERE memory_id = $1 ORDER BY seq", entry_id)
        )
        return [LedgerRecord.from_row(r) for r in rows]

    async def ledger_ids(self, prefix: str, limit: int = 5) -> list[str]:
        """Ids the ledger records that start with ``prefix``: a purged memory's row is gone, its history is not."""
        select = "SELECT DISTINCT memory_id FROM memory_ledger WHERE {match} LIMIT $2"
        rows = await self._starting_with(select, "memory_id", prefix, limit)
        return [r["memory_id"] for r in rows]

    async def _starting_with(self, select: str, col: str, prefix: str, *params: Any) -> list:
        """The rows of ``select`` whose ``col`` starts with ``prefix`` (``{match}``, bound as $1): as typed,
        through the pattern index, and with case folded only when nothing matches as typed, as on SQLite
        (``memory.adapters.sqlite._starting_with``)."""
        pattern = prefix.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"

        async def fetch(conn):
            rows = await conn.fetch(select.replace("{match}", f"{col} LIKE $1"), pattern, *params)
            return rows or await conn.fetch(select.replace("{match}", f"lower({col}) LIKE lower($1)"), pattern, *params)

        return await self._call(fetch)

    async def versions(
        self, entry_id: str, *, audience: Audience = Audience.OPERATOR, include_archived: bool = False
    ) -> list[MemoryEntry]:
        """The version chain through ``entry_id``, oldest first, as ``audience`` may see it (one query)."""
        query = version_sql.chain(entry_id, SELECT_COLUMNS, audience=audience, include_archived=include_archived, dialect=POSTGRES)
        rows = await self._call(lambda conn: conn.fetch(numbered(query.sql), *query.params))
        return readable(rows)

    async def held_beside(self, entry_id: str) -> list[MemoryEntry]:
        """The claims held beside the fact ``entry_id`` (any visibility, archived too)."""
        query = version_sql.held_beside(entry_id, SELECT_COLUMNS, POSTGRES)
        rows = await self._call(lambda conn: conn.fetch(numbered(query.sql), *query.params))
        return readable(rows)

    async def withheld(self, words: Iterable[str] | None) -> list[tuple[str, str]]:
        """The (id, content) of the memories an operator withheld here (hidden, private, forgotten), any
        version: every one, whatever ``words`` (:func:`memory.sqlite.versions.withheld`)."""
        query = version_sql.withheld(words, "m.id, m.content", POSTGRES)
        rows = await self._call(lambda conn: conn.fetch(numbered(query.sql), *query.params))
        return [(row["id"], row["content"]) for row in rows]

    async def open_conflicts(self) -> int:
        """Claims held beside the user-confirmed fact they contradict, awaiting an operator."""
        query = version_sql.open_conflicts(POSTGRES)
        return await self._call(lambda conn: conn.fetchval(numbered(query.sql), *query.params))

    async def count(self, *, include_archived: bool = True) -> int:
        sql = "SELECT count(*) FROM memories" + ("" if include_archived else " WHERE archived = 0")
        return await self._call(lambda conn: conn.fetchval(sql))

    # -- maintenance -------------------------------------------------------

    async def prune(self, policy: PrunePolicy, on_progress: Report | None = None) -> PruneReport:
        """Archive (default) or purge the policy's victims in one transaction; pinned never."""
        return await self._call(prune_sql.prune, policy, self.actor, on_progress, transaction=True)

    # -- the pin and vectors -------------------------------------------------

    async def meta(self) -> EmbeddingMeta | None:
        """The pool's pin, read once (again after a write the pin refused: a re-embed happened)."""
        if self._meta is None:
            row = await self._call(
                lambda conn: conn.fetchrow("SELECT model, family, dimension, vec_table, pinned_at FROM embedding_meta")
            )
            self._meta = EmbeddingMeta(*row) if row else None
        return self._meta

    async def ensure_pin(self, candidate: EmbeddingMeta) -> EmbeddingMeta:
        """The pool's pin, set to ``candidate``'s model when it has none yet (the first pin wins)."""
        self._meta = await self._call(vector_sql.pin, candidate, transaction=True)
        return self._meta

    async def embedder(self, meta: EmbeddingMeta | None) -> Embedder | None:
        if meta not in self._resolved:
            self._resolved[meta] = await self.gateway.resolve(meta)
        return self._resolved[meta]

    def _notice(self, message: str) -> None:
        """Say once (and audit) that semantic work fell back to keyword."""
        if message in self.notices or self.gateway is None or not self.gateway.embedders:
            return
        self.notices.append(message)
        if self.notify is not None:
            self.notify(message)
        if self.audit is not None:
            self.audit.append("embedding_degraded", db=self.path, reason=message)

    async def _embed_ids(self, ids: Sequence[str]) -> int:
        """Embed the rows among ``ids`` whose vector is missing or stale, :data:`EMBED_PAGE` at a time."""
        meta = await self.meta()
        embedder = await self._write_embedder(meta)
        done = 0
        for start in range(0, len(ids) if embedder else 0, EMBED_PAGE):
            rows = await self._call(vector_sql.stale_rows, meta is not None, ids[start : start + EMBED_PAGE])
            written = await self._embed_rows(embedder, rows)
            if written is None:
                break  # the embedder failed (said once, in the notices): reindex embeds the rest
            done += written
            meta = await self.meta()  # the first page pins an unpinned pool
        return done

    async def _write_embedder(self, meta: EmbeddingMeta | None) -> Embedder | None:
        embedder = await self.embedder(meta)
        if embedder is None:
            self._notice(f"{_no_embedder(meta)}: memories are stored without vectors; run `arcana reindex` later")
        return embedder

    async def _embed_rows(self, embedder: Embedder, rows: Sequence[Any]) -> int | None:
        """Embed ``rows`` (stale rows: seq, content, hash) and write their vectors, pinning an unpinned
        pool to ``embedder``; how many were written, or None when the embedder failed."""
        if not rows:
            return 0
        rows = [rows[i] for i in length_order([r["content"] for r in rows])]
        try:
            vectors = await embedder.embed([r["content"] for r in rows])
        except Exception as exc:
            self._notice(f"embedding failed ({exc}): memories stored without vectors; run `arcana reindex` later")
            return None
        meta = await self.meta()
        if meta is None:
            meta = await self.ensure_pin(EmbeddingMeta(embedder.model_name, embedder.model_family, len(vectors[0]), VEC_TABLE, 0))
            if (meta.family, meta.dimension) != (embedder.model_family, len(vectors[0])):
                return 0  # another machine pinned a different model first; reindex catches up
        good = [
            (r["seq"], vector_sql.vector_text(l2_normalize(v)), r["hash"], embedder.model_name)
            for r, v in zip(rows, vectors, strict=True)
            if len(v) == meta.dimension
        ]
        written = await self._call(vector_sql.put_vectors, good, transaction=True)
        if written < len(good):
            self._meta = None  # re-pinned by another machine meanwhile: read the pin again next time
        return written

    async def complete(self, ids: Sequence[str], *, gateway: Any | None = None) -> int:
        """Embed the rows of ``ids`` that have no current vector (an operator's edit of them); how many.

        ``gateway``: embed with it from now on (a tier opened bare, without one)."""
        if gateway is not None:
            self.gateway = gateway
        return await self._embed_ids(ids)

    async def backfill(
        self, on_progress: Callable[[int, int], None] | None = None, *, gateway: Any | None = None
    ) -> FillReport:
        """Embed every row without a current vector (``arcana reindex`` on a server pool), a page
        at a time: memory stays bounded however many rows the pool holds, and progress moves.

        ``gateway``: embed with it from now on (an import that wrote its rows without embedding).
        """
        if gateway is not None:
            self.gateway = gateway
        meta = await self.meta()
        embedder = None if self.gateway is None else await self.embedder(meta)
        if embedder is None:
            raise MemoryStorageError(f"{self.path}: cannot embed: {_no_embedder(meta)}")
        pinned = meta is not None
        total = await self._call(vector_sql.stale_count, pinned)
        done = 0
        async for page in vector_sql.stale_pages(self._call, pinned, size=EMBED_PAGE):
            written = await self._embed_rows(embedder, page)
            if written is None:
                break  # the embedder failed (said once, in the notices): the rest waits for the next reindex
            done += written
            if on_progress:
                on_progress(done, total)
        meta = await self.meta()
        skipped = [] if done == total else [("*", f"{total - done} rows not embedded: {'; '.join(self.notices)}")]
        return FillReport(vec_table=VEC_TABLE, model=meta and meta.model, total=total, embedded=done, skipped=skipped)

    async def reembed(self, embedder: Embedder, on_progress: Callable[[int, int], None] | None = None) -> FillReport:
        """Rebuild every vector with ``embedder`` beside the live ones, then re-pin the pool to it.

        memory/postgres/reembed.py: the live index and pin stay as they were
        until the new table is complete (an interrupted run is resumed by the
        next one with the same model); the swap is one transaction.
        """
        from memory.postgres import reembed

        status = await embedder.health_check()
        if not status.healthy:
            raise MemoryStorageError(f"cannot re-embed: {status.message}")
        report = await reembed.rebuild(self._call, embedder, on_progress)
        self._meta = None
        self._resolved.clear()
        return report

    async def embedded_count(self) -> int:
        if await self.meta() is None:
            return 0
        return await self._call(lambda conn: conn.fetchval(f"SELECT count(*) FROM {VEC_TABLE}"))

    async def _semantic_or_hybrid(self, query: MemoryQuery) -> list[MemoryEntry] | None:
        """Semantic or hybrid results, or None to fall back to keyword (with a notice, unless the
        query asks no vector: see :func:`asks_vectors`)."""
        if not asks_vectors(query, terms(query.text)):
            return None
        meta = await self.meta()
        if meta is None:
            return None
        embedder = await self.embedder(meta)
        if embedder is None:
            self._notice(
                f"no healthy embedder compatible with the pinned model {meta.model} "
                f"(family {meta.family}): semantic search falls back to keyword"
            )
            return None
        try:
            vector = (await embedder.embed([query.text]))[0]
        except Exception as exc:
            self._notice(f"embedding the query failed ({exc}): falling back to keyword")
            return None
        if len(vector) != meta.dimension:
            raise MemoryStorageError(f"query vector has {len(vector)} dimensions but the index holds {meta.dimension}")
        text = vector_sql.vector_text(vector)
        if query.retrieval_mode is RetrievalMode.semantic:
            return await self._knn(query, text, query.limit)
        semantic = await self._knn(query, text, hybrid_pool(query.limit))
        return await hybrid(self, query, terms(query.text), semantic, self.weights)

    async def _knn(
        self, query: MemoryQuery, vector_text: str, limit: int, min_similarity: float | None = None
    ) -> list[MemoryEntry]:
        rows = await self._call(search.knn, vector_text, where(query, start=3), limit)  # $1 vector, $2 window
        floor = self.min_similarity if min_similarity is None else min_similarity
        near = [r for r in rows if 1.0 - r["distance"] >= floor]
        return readable(near, lambda r: {"score": 1.0 - r["distance"], "matched_by": ["semantic"]})


_CENSUS = (
    "SELECT count(*), count(*) FILTER (WHERE visibility = 'visible' AND archived = 0 AND valid_to IS NULL), "
    "count(*) FILTER (WHERE archived = 1), count(*) FILTER (WHERE visibility = 'hidden'), "
    "count(*) FILTER (WHERE visibility = 'private'), count(*) FILTER (WHERE valid_to IS NOT NULL) FROM memories"
)


def _no_embedder(meta: EmbeddingMeta | None) -> str:
    pinned = f" compatible with the pinned model {meta.model}" if meta else ""
    return f"no healthy embedder{pinned}"


async def _growth(conn, after: int) -> Growth:
    newest = await conn.fetchval("SELECT coalesce(max(seq), 0) FROM memory_ledger")
    if newest <= after:
        return Growth(after)
    rows = await conn.fetch(
        f"SELECT floor(at / {DAY_SECONDS})::bigint AS day, count(*) FILTER (WHERE before IS NULL) AS added, "
        "count(*) FILTER (WHERE after IS NULL) AS removed FROM memory_ledger WHERE seq > $1 AND seq <= $2 "
        "GROUP BY day ORDER BY day",
        after, newest,
    )
    return Growth(newest, tuple((r["day"], r["added"], r["removed"]) for r in rows))
