"""SQLiteAdapter: one agent's memory in one SQLite file, searched with FTS5/BM25."""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from memory import audit as audit_mod
from memory.access import AccessBuffer, defer
from memory.deadline import WAIT_LONGER, lock_wait
from memory.embedding.base import EmbeddingMeta
from memory.errors import MemoryCorruptError, MemoryStorageError, NotFoundError
from memory.home import Home
from memory.limits import MAX_CONTENT_BYTES, check_entries
from memory.locks import DECIDE_WAIT_SECONDS, queued
from memory.migrations.backup import backup_copy
from memory.migrations.runner import check_not_newer, migrate
from memory.progress import Progress, Report
from memory.promotion import promote
from memory.query_terms import DF_BUDGET, QueryTerms, terms
from memory.protocols import MemoryAdapter
from memory.sqlite import compact, consolidation, context, inspection, mutations, prune_order, vectors
from memory.sqlite.condense import Condenser
from memory.sqlite import versions as version_sql
from memory.sqlite.admission import CONSOLIDATED, SQLITE, where
from memory.sqlite.batches import select_in
from memory.sqlite.connection import (
    StoreConnection,
    apply_pragmas,
    connect_readonly,
    dbapi,
    has_fts5,
    hold_write_lock,
    load_sqlite_vec,
    open_connection,
    release_write_lock,
    run_inline,
    run_sync,
    transaction,
    translate,
    truncate_wal,
)
from memory.sqlite.fts import coverage, focused_match, match_expression, pair_share, without_majority
from memory.sqlite.quarantine import quarantine_store
from memory.sqlite.rows import SELECT_COLUMNS, UNREADABLE, admitted_rows, keyset_page, readable, row_to_entry
from memory.sqlite.semantic import Prefetched, ahead_k, semantic_leg, store_version
from memory.inspection import Census, Growth, RecallDay
from memory.store_kinds import StoreKind, store_options
from memory.types import (
    PRUNE_ACTOR,
    Audience,
    HealthStatus,
    LedgerRecord,
    MemoryEntry,
    MemoryQuery,
    PruneMode,
    PrunePolicy,
    PruneReport,
    Visibility,
)

# Rows a transaction: the vector store's and bulk import's window of 1,024, so a batch is one
# commit (512 was 4% slower at 100k rows: random-keyed index pages dirtied per row). It holds the
# write lock about 0.1 s.
WRITE_BATCH = 1024
INLINE_ROWS = 16  # up to this many rows a write runs inline (see run_inline)
_HIT_FLUSH = 256


def _keyword_hit(row) -> dict[str, Any]:
    """A keyword search row's annotations: its BM25 score, and the leg that found it."""
    return {"score": -row["rank"], "matched_by": ["keyword"]}


class SQLiteAdapter:
    """Async store over one ``.db`` file. Implements :class:`MemoryAdapter`.

    ``connect()`` is implicit on first use and idempotent. With ``quarantine_dir``
    set (as :meth:`for_agent` does), a corrupt file — found at connect or by a
    later operation — is moved aside and a fresh store started, so the agent
    keeps working and nothing is deleted; ``quarantined_to`` then says where the
    old file went.
    """

    def __init__(
        self,
        path: Path | str,
        *,
        global_store: MemoryAdapter | None = None,
        actor: str = "library",
        quarantine_dir: Path | None = None,
        backup_dir: Path | None = None,
        audit: audit_mod.AuditLog | None = None,
        max_content_bytes: int | None = MAX_CONTENT_BYTES,
    ):
        self.path = Path(path)
        self.max_content_bytes = max_content_bytes  # None: no bound (a vault index; its notes have max_file_bytes)
        self.global_store = global_store
        self.actor = actor
        self.quarantine_dir = quarantine_dir
        self.backup_dir = backup_dir
        self.backed_up_to: Path | None = None
        self.audit = audit
        self.quarantined_to: Path | None = None
        self.promotion_errors: list[str] = []
        self._conn: StoreConnection | None = None
        self._lock = asyncio.Lock()
        self._hits = AccessBuffer()
        self._vec_loaded: str | None | bool = False
        self._held = False  # inside write_locked()
        self._purged_in_hold = False  # a purge inside write_locked(): empty the WAL when it ends
        self.opened_file: tuple[int, int] | None = None  # (device, inode) of the file open now

    @classmethod
    def for_agent(cls, agent_id: Any, *, home: Home | Path | str | None = None, **kwargs: Any) -> SQLiteAdapter:
        """The private store at ``<home>/agents/{agent_id}/memory.db``."""
        home = home if isinstance(home, Home) else Home.resolve(home)
        return cls(home.agent_db(str(agent_id)), **store_options(home, StoreKind.PRIVATE, **kwargs))

    # -- lifecycle ---------------------------------------------------------

    @property
    def connection(self) -> StoreConnection:
        """The live connection (raises when not connected)."""
        if self._conn is None:
            raise MemoryStorageError(f"{self.path}: not connected")
        return self._conn

    async def connect(self) -> None:
        if self._conn is not None:
            return
        async with self._lock:
            if self._conn is not None:
                return
            try:
                self._conn = await self._open()
            except MemoryCorruptError as exc:
                if self.quarantine_dir is None:
                    raise
                await self._start_fresh(exc)

    async def _start_fresh(self, exc: MemoryCorruptError) -> None:
        """Move the corrupt file aside and open a fresh store (caller holds ``_lock``)."""
        if self._conn is not None:
            conn, self._conn = self._conn, None
            self._hits.clear()
            self._vec_loaded = False
            with contextlib.suppress(Exception):  # closing a damaged file may fail; it is moved aside anyway
                await conn.close()
        self.quarantined_to = quarantine_store(self.path, self.quarantine_dir, str(exc), self.audit)
        self._conn = await self._open()

    async def _open(self) -> StoreConnection:
        if self.path.exists():
            await self._probe_readonly()
        conn = await open_connection(self.path)
        try:
            await check_not_newer(conn, self.path)
            if not await has_fts5(conn):
                raise MemoryStorageError(
                    f"{self.path}: this SQLite build lacks FTS5; install pysqlite3-binary or a Python "
                    "whose sqlite3 includes FTS5"
                )
            await apply_pragmas(conn, self.path)
            await migrate(conn, self.path, before_upgrade=self._back_up)
            opened = os.stat(self.path)
        except BaseException:
            await conn.close()
            raise
        self.opened_file = (opened.st_dev, opened.st_ino)
        return conn

    def _back_up(self, version: int) -> None:
        """Upgrades that lose data are the most bitter complaint: copy first."""
        self.backed_up_to = backup_copy(self.path, self.backup_dir or self.path.parent, f"v{version}")

    async def _probe_readonly(self) -> None:
        """Read the schema read-only first. Closing a read-write connection to a
        damaged file checkpoints and deletes its -wal: the very evidence (and
        possibly the last commits) that quarantine must keep."""
        # Sub-millisecond and lock-free (read-only, WAL), so no worker thread for it.
        driver = dbapi()
        try:
            raw = connect_readonly(self.path)
            try:
                _probe(raw)
            finally:
                raw.close()
        except driver.Error as exc:
            raise translate(exc, self.path) from exc

    async def aclose(self) -> None:
        if self._conn is None:
            return
        conn, self._conn = self._conn, None
        try:
            await self._flush_hits(conn)
        finally:
            await conn.close()

    async def health_check(self) -> HealthStatus:
        try:
            await self.run(_probe)
            return HealthStatus(healthy=True, message=f"{self.path}: ok")
        except Exception as exc:  # never raises, by contract
            return HealthStatus(healthy=False, message=f"{self.path}: {exc}")

    async def schema_version(self) -> int:
        rows = await self.run(lambda raw: raw.execute("PRAGMA user_version").fetchall())
        return rows[0][0]

    async def run(self, fn: Callable, *args: Any, inline: bool = False) -> Any:
        """Run ``fn(raw, *args)`` on the connection thread (see :func:`run_sync`),
        or with ``inline`` on the event loop unless that could block (see
        :func:`run_inline`): for short calls that are safe to start again — a
        search, a few rows in one transaction.

        Damage often lies in pages that connect never reads. When it surfaces
        here on a store with ``quarantine_dir`` the file is quarantined, a fresh
        store opened and ``fn`` retried once there, as at connect.
        """
        call = run_inline if inline else run_sync
        await self.connect()
        conn = self.connection
        try:
            return await call(conn, fn, *args, path=self.path)
        except MemoryCorruptError as exc:
            if self.quarantine_dir is None:
                raise
            async with self._lock:
                if self._conn is conn:  # not already replaced by a concurrent caller
                    await self._start_fresh(exc)
        return await call(self.connection, fn, *args, path=self.path)

    async def ensure_vec(self) -> str | None:
        """Load sqlite-vec on this connection once; its version, or None if unavailable."""
        await self.connect()
        if self._vec_loaded is False:
            self._vec_loaded = await load_sqlite_vec(self.connection)
        return self._vec_loaded or None

    async def vector_pin(self) -> tuple[EmbeddingMeta | None, str | None]:
        """The database's embedding pin and the loaded sqlite-vec version (None when unavailable),
        read together: what a semantic search must know before it embeds the query."""
        try:
            vec = await self.ensure_vec()
        except MemoryStorageError:
            vec = None
        return await self.run(vectors.read_meta, inline=True), vec

    # -- writes (all through memory.sqlite.mutations) ----------------------

    async def write(self, entry: MemoryEntry) -> None:
        """Upsert one entry by id, then promote it to the global store if eligible."""
        await self.write_many([entry])

    async def write_many(
        self, entries: Sequence[MemoryEntry], *, on_progress: Callable[[int, int], None] | None = None
    ) -> list[str]:
        """Upsert in bounded transactions; return the op per entry (insert/update/noop/...).

        Content (or tags together) over ``max_content_bytes`` refuses the whole call before anything is written.
        """
        check_entries(entries, self.max_content_bytes)
        ops: list[str] = []
        for start in range(0, len(entries), WRITE_BATCH):
            batch = entries[start : start + WRITE_BATCH]
            ops += await self.run(_upsert_txn, batch, self.actor, inline=len(batch) <= INLINE_ROWS)
            if on_progress:
                on_progress(len(ops), len(entries))
        await self._promote(entries)
        return ops

    async def _promote(self, entries: Sequence[MemoryEntry]) -> None:
        """Copy what the promotion policy allows to ``global_store``; a failure degrades, recorded."""
        if self.global_store is None:
            return
        for entry, exc in await promote(entries, self.global_store):
            self.promotion_errors.append(f"{entry.id}: {exc}")
            if self.audit:
                self.audit.append("promotion_failed", memory_id=entry.id, error=str(exc))

    async def update(self, entry_id: str, **changes: Any) -> MemoryEntry:
        """Change fields of one entry (operator edit); ledgered like any upsert."""
        current = await self.get(entry_id, audience=Audience.OPERATOR, include_archived=True)
        if current is None:
            raise NotFoundError(f"no memory with id {entry_id}")
        updated = MemoryEntry(**{**current.model_dump(), **changes})
        check_entries([updated], self.max_content_bytes)
        await self.run(_upsert_txn, [updated], self.actor, inline=True)
        return await self.get(entry_id, audience=Audience.OPERATOR, include_archived=True)

    async def delete(self, entry_id: str) -> bool:
        return await self._remove([entry_id], "delete") == 1

    async def purge(self, entry_ids: Sequence[str]) -> int:
        purged = await self._remove(entry_ids, "purge")
        if purged:
            await self._empty_wal()
        return purged

    async def _empty_wal(self) -> None:
        """Empty the WAL once a purge has committed (:func:`truncate_wal`); inside
        :meth:`write_locked`, when the hold ends."""
        if self._held:
            self._purged_in_hold = True
        else:
            await self.run(truncate_wal)

    async def withdraw(self, entry_ids: Sequence[str]) -> int:
        """Remove promoted copies that no longer qualify (ledgered as ``withdraw``)."""
        return await self._remove(entry_ids, "withdraw")

    def deciding(self, notify: Callable[[str], None] | None = None) -> contextlib.AbstractAsyncContextManager[None]:
        """Hold this store's decision lock (``<file>-decide.lock``, beside it) from a reconciled write's
        decision to its settling: processes of different agents writing into one pool file each decided
        against a pool holding neither row, and the fact was stored twice. :class:`LockHeldError` when
        another write kept deciding for the lock wait."""
        path = Path(f"{self.path}-decide.lock")
        wait = lock_wait(DECIDE_WAIT_SECONDS)
        busy = f"another write into {self.path} kept deciding for {wait:g}s (lock {path}); try again once it is done, or {WAIT_LONGER}"
        waiting = f"waiting for another process's write into {self.path} to be stored first (lock {path}; at most {wait:g}s)"
        return queued(path, fcntl.LOCK_EX, wait, busy, waiting, notify)

    @contextlib.asynccontextmanager
    async def write_locked(self) -> AsyncIterator[None]:
        """Hold this store's write lock until the block ends: for an edit that changes this store and
        another (an original and its global copy). Taken first, waiting as any write does, so another
        writer keeping it fails the edit (:class:`MemoryBusyError`) with neither store changed; held,
        so no writer gets in between the two changes. Writes inside are each whole (savepoints) and
        ledgered as ever; what they did is committed when the block ends, by an error too. A hold
        inside a hold of the same store is the outer one."""
        if self._held:
            yield
            return
        await self.run(hold_write_lock)
        self._held = True
        try:
            yield
        finally:
            self._held = False
            await self.run(release_write_lock)
            if self._purged_in_hold:
                self._purged_in_hold = False
                await self._empty_wal()

    async def _remove(self, entry_ids: Sequence[str], op: str) -> int:
        if await self._has_vectors():
            await self.ensure_vec()
        return await self.run(_delete_txn, list(entry_ids), op, self.actor, inline=len(entry_ids) <= INLINE_ROWS)

    async def removed(self, entry_ids: Sequence[str]) -> set[str]:
        """The ids among ``entry_ids`` that this store once held and removed (deleted, purged,
        withdrawn) and does not hold again: an import must not bring them back."""
        return await self.run(mutations.removed, entry_ids)

    # ``expect_seq`` (one id only): refuse with StaleEditError unless it is the memory's newest ledger row.

    async def archive(self, entry_ids: Sequence[str], *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "archive", "archived = 1", expect_seq=expect_seq)

    async def restore(self, entry_ids: Sequence[str], *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "restore", "archived = 0", expect_seq=expect_seq)

    async def set_visibility(self, entry_ids: Sequence[str], visibility: Visibility, *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "visibility", "visibility = ?", (Visibility(visibility).value,), expect_seq)

    async def set_pinned(self, entry_ids: Sequence[str], pinned: bool, *, expect_seq: int | None = None) -> int:
        return await self._set(entry_ids, "pin", "pinned = ?", (int(pinned),), expect_seq)

    async def _set(
        self, entry_ids: Sequence[str], op: str, assignments: str, params: tuple = (), expect_seq: int | None = None
    ) -> int:
        ids = list(entry_ids)
        if expect_seq is not None and len(ids) != 1:
            raise ValueError("expect_seq guards an edit of one memory")
        return await self.run(
            _update_txn, ids, op, self.actor, assignments, params, expect_seq, inline=len(ids) <= INLINE_ROWS
        )

    async def supersede(self, old_ids: Sequence[str], new_id: str, at: datetime | None = None) -> list[str]:
        """End the current ``old_ids`` in favour of ``new_id`` (both ledgered) at ``at``, when the new
        fact was said (default now); the ids actually ended."""
        when = time.time() if at is None else at.timestamp()
        return await self.run(_supersede_txn, list(old_ids), new_id, when, self.actor, inline=True)

    async def repair(self, entry_id: str, seq: int, taken: Sequence[str]) -> int:
        """Revert a row an outside edit left unreadable to ledger row ``seq``'s image (:func:`mutations.repair`)."""
        return await self.run(_repair_txn, entry_id, seq, list(taken), self.actor, inline=True)

    async def make_current(self, entry_id: str) -> list[str]:
        """Undo a supersession or release a held conflict: ``entry_id`` answers recall again (ledgered)."""
        return await self.run(_make_current_txn, entry_id, self.actor, inline=True)

    async def reinforce(self, entry_id: str, step: float, confirm: float | None = None, asserted: bool = False) -> int:
        """A restated fact: importance and access bumped, ledgered (capped for an ``asserted`` one)."""
        return await self.run(_reinforce_txn, entry_id, self.actor, step, confirm, asserted, inline=True)

    async def versions(
        self, entry_id: str, *, audience: Audience = Audience.OPERATOR, include_archived: bool = False
    ) -> list[MemoryEntry]:
        """The version chain through ``entry_id``, oldest first, as ``audience`` may see it (one query)."""
        query = version_sql.chain(entry_id, f"{SELECT_COLUMNS}, m.seq", audience=audience, include_archived=include_archived)
        rows = await self.run(lambda raw: raw.execute(query.sql, query.params).fetchall(), inline=True)
        return readable(rows)

    async def sources(self, entry_ids: Sequence[str], *, quoted: bool = True) -> dict[str, list[str]]:
        """For each id that is a consolidated memory, the ids whose content it carries (sorted);
        without ``quoted``, not the memories an agent's claim only quotes."""
        return await self.run(consolidation.sources_of, list(entry_ids), quoted, inline=True) if entry_ids else {}

    async def written_in_session(self, session_id: str, summary_tag: str) -> list[str]:
        """The current memories a session's turns wrote here (``source_session_id``), those tagged
        ``summary_tag`` aside: what the session file may not name when its process was killed mid-write."""
        return await self.run(consolidation.written_in_session, session_id, summary_tag, inline=True)

    async def carriers(self, entry_ids: Sequence[str]) -> list[str]:
        """The consolidated memories that carry any of ``entry_ids``: where an operator's edit must reach."""
        return await self.run(consolidation.carriers_of, list(entry_ids), inline=True) if entry_ids else []

    async def digests(self, entry_ids: Sequence[str]) -> set[str]:
        """Which of ``entry_ids`` are digests consolidation wrote (made of turns, not one kept statement)."""
        return await self.run(consolidation.digests_among, list(entry_ids), inline=True) if entry_ids else set()

    async def carried(self, entry_ids: Sequence[str]) -> set[str]:
        """Which of ``entry_ids`` consolidation archived into a memory that still answers for them."""
        return await self.run(consolidation.carried_sources, list(entry_ids), inline=True) if entry_ids else set()

    async def carry_again(self, entry_ids: Sequence[str]) -> int:
        """Archive ``entry_ids`` as consolidation's again (ledgered ``restore``): restatements a withdrawal
        of their merge archived, answering through it once it is restored."""
        return await self._set(entry_ids, "restore", f"archived = {CONSOLIDATED}")

    async def stand_alone(self, entry_ids: Sequence[str]) -> int:
        """Restore those of ``entry_ids`` consolidation archived that are visible while no carrier answers."""
        alone = await self.run(consolidation.uncarried_sources, list(entry_ids), inline=True) if entry_ids else []
        return await self.restore(alone) if alone else 0

    async def held_beside(self, entry_id: str) -> list[MemoryEntry]:
        """The claims held beside the fact ``entry_id`` (any visibility, archived too)."""
        query = version_sql.held_beside(entry_id, SELECT_COLUMNS)
        return readable(await self.run(lambda raw: raw.execute(query.sql, query.params).fetchall(), inline=True))

    async def withheld(self, words: Iterable[str] | None) -> list[tuple[str, str]]:
        """The (id, content) of the memories an operator withheld here (hidden, private, forgotten), any
        version, holding any of the content ``words``; of all of them when ``words`` is None."""
        query = version_sql.withheld(words, "m.id, m.content")
        return [tuple(row) for row in await self.run(lambda raw: raw.execute(query.sql, query.params).fetchall(), inline=True)]

    async def open_conflicts(self) -> int:
        """Claims held beside the user-confirmed fact they contradict, awaiting an operator."""
        query = version_sql.open_conflicts()
        return (await self.run(lambda raw: raw.execute(query.sql, query.params).fetchone()))[0]

    async def _has_vectors(self) -> bool:
        return bool(await self.run(vectors.vec_tables))

    # -- reads (all through memory.sqlite.admission) -----------------------

    async def search(
        self,
        query: MemoryQuery,
        *,
        audience: Audience = Audience.RECALL,
        include_archived: bool = False,
    ) -> list[MemoryEntry]:
        """BM25 keyword search when the query has words, else filter-and-order.

        Every text query is served here whatever its retrieval_mode; semantic
        ranking is :class:`VectorAdapter`'s job.
        """
        clause = where(query, audience=audience, include_archived=include_archived)
        parsed = terms(query.text)
        if not parsed.tokens:
            rows = await self.run(_ordered, clause.sql, clause.params, query.limit, inline=True)
            entries = readable(rows)
        else:
            rows = await self.run(_ranked, parsed, clause.sql, clause.params, query.limit, inline=True)
            entries = readable(rows, _keyword_hit)
        if audience is Audience.RECALL:
            await self.record_access(entries)
        return entries

    async def keyword_candidates(self, query: MemoryQuery, limit: int) -> list[MemoryEntry]:
        """Admitted, filtered, BM25-scored matches of the memories' own words on the few most
        informative words of the query (:func:`memory.sqlite.fts.focused_match`): bounded work
        for write-time reconciliation on a large store."""
        clause = where(query)
        rows = await self.run(_focused_keyword, terms(query.text), clause.sql, clause.params, limit, inline=True)
        return readable(rows, _keyword_hit)

    async def keyword_leg(self, query: MemoryQuery, parsed: QueryTerms, limit: int) -> tuple[list[MemoryEntry], float]:
        """The keyword leg of a hybrid recall, in one call: the best ``limit`` BM25 matches and the
        share of the query's words the best one contains (see :mod:`memory.ranking.fusion`)."""
        clause = where(query)
        rows, covered = await self.run(_keyword_leg, parsed, clause.sql, clause.params, limit, inline=True)
        return readable(rows, _keyword_hit), covered

    async def semantic_leg(
        self, query: MemoryQuery, table: str, blob: bytes, wanted: int, *, min_similarity: float, compact_from: int,
        first: Prefetched | None = None, ahead_only: bool = False,
    ) -> list[MemoryEntry] | None:
        """The ``wanted`` nearest admitted memories to the packed vector ``blob`` in the vector
        index ``table``, in one call (see :mod:`memory.sqlite.semantic`; ``first``: from :meth:`nearest_many`;
        ``ahead_only``: None instead when something was written since ``first`` was found)."""
        clause = where(query)
        return await self.run(  # found ahead, what is left is a short read
            semantic_leg, table, blob, wanted, clause.sql, clause.params, min_similarity, compact_from, first,
            ahead_only, inline=first is not None,
        )

    async def nearest_many(
        self, table: str, blobs: Sequence[bytes], wanted: int, *, compact_from: int
    ) -> list[Prefetched | None]:
        """For each packed vector of ``blobs``, the exact scan's rows :meth:`semantic_leg` reads first
        for ``wanted`` memories (its ``first``), the index read once for all (:mod:`memory.sqlite.window_knn`);
        None for a vector that is searched on its own (a tie; every one once the compact index answers)."""
        return await self.run(_nearest_many, table, list(blobs), wanted, compact_from)

    async def turn_context(
        self, query: MemoryQuery, parsed: QueryTerms, entry_ids: Sequence[str]
    ) -> tuple[dict[str, str], dict[str, float]]:
        """What the hybrid re-rank needs of ``entry_ids``, in one call: the turn before each (id to
        id) and the share of the query's word pairs each holds (both among admitted rows only)."""
        clause = where(query)
        return await self.run(_turn_context, parsed, list(entry_ids), clause.sql, clause.params, inline=True)

    async def admitted_by_id(
        self, query: MemoryQuery, entry_ids: Sequence[str], *, audience: Audience = Audience.RECALL,
        include_archived: bool = False,
    ) -> dict[str, MemoryEntry]:
        """Entries among ``entry_ids`` that pass admission (for ``audience``) and the query's filters, keyed by id.

        Graph expansion's way in (a neighbour must pass exactly what a seed
        did), and the operator's to many ids at once.
        """
        clause = where(query, audience=audience, include_archived=include_archived)
        rows = await self.run(admitted_rows, "id", list(entry_ids), clause.sql, clause.params, inline=True)
        return {e.id: e for e in readable(rows)}

    async def session_neighbours(self, query: MemoryQuery, entry_ids: Sequence[str]) -> dict[str, list[MemoryEntry]]:
        """For each of ``entry_ids`` the query admits, the turns before and after it in its session
        that the query admits too (see :mod:`memory.ranking.neighbours`)."""
        clause = where(query)
        adjacent = await self.run(context.adjacent_ids, list(entry_ids), clause.sql, clause.params, inline=True)
        admitted = await self.admitted_by_id(query, [n for near in adjacent.values() for n in near])
        return {i: [admitted[n] for n in near if n in admitted] for i, near in adjacent.items()}

    async def get(
        self, entry_id: str, *, audience: Audience = Audience.RECALL, include_archived: bool = False
    ) -> MemoryEntry | None:
        clause = where(MemoryQuery(), audience=audience, include_archived=include_archived)
        rows = await self.run(_by_id, entry_id, clause.sql, clause.params, inline=True)
        return row_to_entry(rows[0]) if rows else None

    async def get_many(self, entry_ids: Sequence[str]) -> dict[str, MemoryEntry]:
        """What :meth:`get` finds for each of ``entry_ids``, in one read."""
        return await self.admitted_by_id(MemoryQuery(), entry_ids)

    async def find_by_prefix(
        self, prefix: str, limit: int = 5, *, query: MemoryQuery | None = None,
        audience: Audience = Audience.OPERATOR, include_archived: bool = True,
    ) -> list[MemoryEntry]:
        """Ids starting with ``prefix`` that ``audience`` may read and ``query`` admits (default: an
        operator's lookup, any visibility, archived too). Admitted in SQL, so the ``limit`` counts only
        readable rows: none past the limit is missed behind rows the reader may not see."""
        clause = where(query or MemoryQuery(), audience=audience, include_archived=include_archived)
        rows = await self.run(_by_prefix, prefix, clause.sql, clause.params, limit, inline=True)
        return [row_to_entry(r) for r in rows]  # the operator asked for these rows: one unreadable is named

    def seen(self, entries: Sequence[MemoryEntry]) -> list[MemoryEntry]:
        """``entries`` with the read hits buffered for them (see :meth:`AccessBuffer.seen`)."""
        return self._hits.seen(entries)

    async def record_access(self, entries: Sequence[MemoryEntry]) -> None:
        """Buffer read hits; they are folded in at close or every few hundred hits."""
        if defer(self, (entry.id for entry in entries)):
            return  # a federated recall counts only what it returns (memory.access.deferred_access)
        self._hits.record((entry.id for entry in entries), time.time())
        if len(self._hits) >= _HIT_FLUSH and self._conn is not None:
            await self._flush_hits(self._conn)

    async def _flush_hits(self, conn: StoreConnection) -> None:
        hits = self._hits.take()
        if hits is None:
            return
        try:
            await run_sync(conn, _touch_txn, hits, conn.lock_wait_ms, path=self.path)
        except MemoryStorageError:
            pass  # access counts are a ranking hint; never fail a read over them

    async def history(self, entry_id: str) -> list[LedgerRecord]:
        return await self.ledger([entry_id])

    async def ledger_ids(self, prefix: str, limit: int = 5) -> list[str]:
        """Ids the ledger records that start with ``prefix``: a purged memory's row is gone, its history is not."""
        select = "SELECT DISTINCT memory_id FROM memory_ledger"
        return [r[0] for r in await self.run(_starting_with, select, "memory_id", prefix, " LIMIT ?", (limit,))]

    async def ledger(self, entry_ids: Sequence[str] | None = None, *, after: int = 0, limit: int = -1) -> list[LedgerRecord]:
        """The ledger rows of ``entry_ids``, oldest first, in one read; with None, of every memory,
        a page at a time (the ``limit`` rows past seq ``after``; -1: all of them)."""

        def read(raw) -> list:
            if entry_ids is None:
                return raw.execute("SELECT * FROM memory_ledger WHERE seq > ? ORDER BY seq LIMIT ?", (after, limit)).fetchall()
            rows = select_in(raw, "SELECT * FROM memory_ledger WHERE memory_id IN ({marks})", list(entry_ids))
            return sorted(rows, key=lambda r: r["seq"])

        return [LedgerRecord.from_row(r) for r in await self.run(read)]

    async def page(
        self, query: MemoryQuery, *, offset: int = 0, audience: Audience = Audience.LISTING, include_archived: bool = False
    ) -> list[MemoryEntry]:
        """Rows ``offset`` .. ``offset + query.limit`` of the filter-and-order listing (the query's text
        is not searched): a listing paged in SQL, never loaded whole. Not a recall hit."""
        if audience is Audience.RECALL:
            raise ValueError("a listing page is not a recall; use search()")
        clause = where(query, audience=audience, include_archived=include_archived)
        rows = await self.run(_ordered, clause.sql, clause.params, query.limit, offset, inline=True)
        return readable(rows)

    async def page_after(
        self, query: MemoryQuery, after: int = 0, *, audience: Audience = Audience.LISTING, include_archived: bool = False
    ) -> tuple[list[MemoryEntry], int]:
        """Up to ``query.limit`` rows of the listing past row ``after``, in the order they were stored, and
        the row to go on after (``after`` itself once none is left): a walk of every row whose pages cost the
        same however far it has gone. Not a recall hit."""
        if audience is Audience.RECALL:
            raise ValueError("a listing page is not a recall; use search()")
        clause = where(query, audience=audience, include_archived=include_archived)
        rows = await self.run(keyset_page, after, clause.sql, clause.params, query.limit, inline=True)
        return readable(rows), rows[-1]["seq"] if rows else after

    async def census(self) -> Census:
        """Rows by state (one aggregate statement)."""
        return await self.run(inspection.census)

    async def growth(self, after: int = 0) -> Growth:
        """Rows added and removed per day, from the ledger rows past seq ``after``."""
        return await self.run(inspection.growth, after)

    async def recall_activity(self) -> list[RecallDay]:
        """Recalls answered and memories returned per day (folded in from the access buffer)."""
        await self.connect()
        await self._flush_hits(self.connection)
        return await self.run(inspection.recalls)

    async def count(self, *, include_archived: bool = True) -> int:
        """Rows held (or live ones), read off the census row (migration v10), not counted: the
        consolidation check asks after every `arcana run` turn that wrote."""
        sql = f"SELECT {'total' if include_archived else 'total - archived'} FROM memory_census WHERE id = 1"
        rows = await self.run(lambda raw: raw.execute(sql).fetchall())
        return rows[0][0]

    # -- maintenance -------------------------------------------------------

    async def prune(self, policy: PrunePolicy, on_progress: Report | None = None) -> PruneReport:
        """Archive (default) or purge the policy's victims in one transaction; pinned never. Under a
        byte budget, digests are condensed before the only record of a fact goes
        (:mod:`memory.sqlite.condense`; their vectors are the caller's to renew).
        ``on_progress(done, total)`` counts rows read, then rows removed."""
        if policy.mode is PruneMode.PURGE and not policy.dry_run and await self._has_vectors():
            await self.ensure_vec()
        report = await self.run(_prune_txn, policy, self.actor, on_progress)
        if report.purged and not report.dry_run:
            await self._empty_wal()
        return report


# -- work run on the connection thread ----------------------------------------


def _probe(raw) -> None:
    """Touch the schema so a file that is not a database fails at connect."""
    raw.execute("SELECT count(*) FROM sqlite_master").fetchone()


def _nearest_many(raw, table, blobs, wanted, compact_from):
    if not blobs or not vectors.table_exists(raw, table) or compact.size(raw, table) >= max(compact_from, 1):
        return [None] * len(blobs)
    from memory.sqlite.window_knn import knn_many  # numpy: only for a window's search

    version, k, read = store_version(raw), ahead_k(wanted), {}
    return [None if hits is None else (version, k, hits, read) for hits in knn_many(raw, table, blobs, k)]


def _upsert_txn(raw, entries, actor):
    with transaction(raw):
        return mutations.upsert(raw, entries, actor)


def _update_txn(raw, ids, op, actor, assignments, params, expect_seq=None):
    with transaction(raw):
        if expect_seq is not None:
            mutations.check_unchanged(raw, ids[0], expect_seq)
        return mutations.update(raw, ids, op, actor, assignments, params)


def _delete_txn(raw, ids, op, actor):
    with transaction(raw):
        return mutations.delete(raw, ids, op, actor)


def _supersede_txn(raw, old_ids, new_id, at, actor):
    with transaction(raw):
        return mutations.supersede(raw, old_ids, new_id, at, actor)


def _make_current_txn(raw, entry_id, actor):
    with transaction(raw):
        return mutations.make_current(raw, entry_id, actor)


def _repair_txn(raw, entry_id, seq, taken, actor):
    with transaction(raw):
        return mutations.repair(raw, entry_id, seq, taken, actor)


def _reinforce_txn(raw, entry_id, actor, step, confirm, asserted):
    with transaction(raw):
        return mutations.reinforce(raw, entry_id, actor, importance_step=step, confirm=confirm, asserted=asserted)


def _touch_txn(raw, hits, lock_wait_ms):
    raw.execute(f"PRAGMA busy_timeout = {min(1000, lock_wait_ms)}")
    try:
        with transaction(raw):
            mutations.touch_access(raw, hits)
    finally:
        raw.execute(f"PRAGMA busy_timeout = {lock_wait_ms}")


# BM25 weight per FTS column (content, tags, context, dated): a word of the
# turn before counts half a word of the memory itself. LoCoMo keyword leg:
# context at 1.0 any@10 0.807 / MRR 0.461, at 0.5 0.791 / 0.538, at 0 0.721 / 0.508.
_BM25 = "bm25(memories_fts, 1.0, 1.0, 0.5, 1.0)"
_KEYWORD_SQL = (
    "SELECT {columns}, m.seq, c.rank AS rank "
    f"FROM (SELECT rowid, {_BM25} AS rank FROM memories_fts WHERE memories_fts MATCH ? "
    "ORDER BY rank LIMIT ?) AS c "
    "CROSS JOIN memories m ON m.seq = c.rowid WHERE {clause} ORDER BY c.rank LIMIT ?"
)
# The same for a common word (memory.sqlite.fts.focused_match): FTS5 walks its rows newest first
# and stops after the window, so only those are scored (2 ms for a word in 30,000 of 300,000 rows).
_NEWEST_KEYWORD_SQL = _KEYWORD_SQL.replace("ORDER BY rank LIMIT ?", "ORDER BY rowid DESC LIMIT ?")


def _keyword(raw, match, clause_sql, params, limit):
    """The best ``limit`` admitted rows by BM25.

    FTS5 ranks inside the index first and only a window of its best matches is
    joined and filtered; the window widens until enough rows pass or the
    matches run out. A plain join let the planner drive from the agent_id
    index and run MATCH once per row — ~700 ms at 10k entries instead of ~1 ms.
    (``ORDER BY bm25(...)``, not FTS5's ``rank`` column: the latter measured
    twice as slow here; and a CTE that also reports how full the window was
    measured 12% slower at the median than counting matches only when a page
    comes back short.)
    """
    sql = _KEYWORD_SQL.format(columns=SELECT_COLUMNS, clause=clause_sql)
    window, total = max(4 * limit, 40), None
    while True:
        rows = raw.execute(sql, (match, window, *params, limit)).fetchall()
        if len(rows) >= limit:
            return rows
        if total is None:
            total = raw.execute("SELECT count(*) FROM memories_fts WHERE memories_fts MATCH ?", (match,)).fetchone()[0]
        if window >= total:
            return rows
        window = min(window * 8, total)


def _ranked(raw, parsed, clause_sql, params, limit):
    """The best ``limit`` admitted rows by BM25 on ``parsed`` (which has words).

    On a large store the match first leaves out the words in most rows
    (:func:`memory.sqlite.fts.without_majority`): their idf is clamped, so the
    ranking agrees up to 2.2e-6 of score per word left out (rows whose other
    words score exactly alike may change places: 3 of the 50 bench queries at
    1M), and FTS5 no longer scores every row that holds one. When that finds fewer than ``limit`` rows,
    the rows holding only those words would have filled the tail: the whole
    query runs instead, so an answer is never shorter than the full query's.
    """
    narrowed = without_majority(raw, parsed)
    if narrowed is not None:
        rows = _keyword(raw, match_expression(narrowed), clause_sql, params, limit)
        if len(rows) >= limit:
            return rows
    return _keyword(raw, match_expression(parsed), clause_sql, params, limit)


def _focused_keyword(raw, parsed, clause_sql, params, limit):
    """The rare words' best matches, then the common word's among its newest rows (see focused_match)."""
    focused = focused_match(raw, parsed)
    if focused is None:
        return []
    rare, common = focused
    rows = _keyword(raw, rare, clause_sql, params, limit) if rare else []
    if common is not None and len(rows) < limit:
        seen = {r["seq"] for r in rows}
        sql = _NEWEST_KEYWORD_SQL.format(columns=SELECT_COLUMNS, clause=clause_sql)
        rows += [r for r in raw.execute(sql, (common, DF_BUDGET, *params, limit)) if r["seq"] not in seen][: limit - len(rows)]
    return rows


def _keyword_leg(raw, parsed, clause_sql, params, limit):
    if not parsed.tokens:
        return [], 0.0
    rows = _ranked(raw, parsed, clause_sql, params, limit)
    return rows, coverage(raw, parsed, rows[0]["id"], clause_sql, params) if rows else 0.0


def _turn_context(raw, parsed, ids, clause_sql, params):
    if not ids:
        return {}, {}
    return context.previous_ids(raw, ids, clause_sql, params), pair_share(raw, parsed, ids, clause_sql, params)


def _ordered(raw, clause_sql, params, limit, offset=0):
    sql = (
        f"SELECT {SELECT_COLUMNS}, m.seq FROM memories m WHERE {clause_sql} "
        "ORDER BY m.pinned DESC, m.importance DESC, m.created_at DESC, m.seq LIMIT ? OFFSET ?"
    )
    return raw.execute(sql, (*params, limit, offset)).fetchall()


def _by_id(raw, entry_id, clause_sql, params):
    sql = f"SELECT {SELECT_COLUMNS}, m.seq FROM memories m WHERE m.id = ? AND {clause_sql}"
    return raw.execute(sql, (entry_id, *params)).fetchall()


# An id starting with a prefix, ASCII case folded as LIKE folds it, without LIKE's pattern: SQLite refuses
# one over 50,000 bytes ('LIKE or GLOB pattern too complex'), which a pasted id or a tool's argument can be.
_STARTS_WITH = "substr({col}, 1, length(?)) = ? COLLATE NOCASE"
# The same prefix as typed: a range the column's index answers (the folded form reads every row).
_IN_RANGE = "{col} >= ? AND {col} < ?"


def _starting_with(raw, select: str, col: str, prefix: str, tail: str, params: tuple) -> list:
    """The rows of ``select ... WHERE <col starts with prefix> tail``: as typed, through the index (0.1 ms
    at 300,000 rows), and with ASCII case folded only when nothing matches as typed (a full scan: 149 ms
    there). Strings starting with ``prefix`` sort from it up to, not including, its last character
    raised by one (code point order is UTF-8 byte order, SQLite's BINARY order)."""
    if prefix and ord(prefix[-1]) < 0x10FFFF:
        rows = raw.execute(f"{select} WHERE {_IN_RANGE.format(col=col)}{tail}",
                           (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1), *params)).fetchall()
        if rows:
            return rows
    return raw.execute(f"{select} WHERE {_STARTS_WITH.format(col=col)}{tail}", (prefix, prefix, *params)).fetchall()


def _by_prefix(raw, prefix, clause_sql, params, limit):
    select = f"SELECT {SELECT_COLUMNS}, m.seq FROM memories m"
    return _starting_with(raw, select, "m.id", prefix, f" AND {clause_sql} LIMIT ?", (*params, limit))


def _prune_txn(raw, policy: PrunePolicy, actor: str, on_progress: Report | None) -> PruneReport:
    with transaction(raw):
        scanned = raw.execute("SELECT count(*) FROM memories WHERE archived = 0").fetchone()[0]
        progress = Progress(on_progress, scanned)
        victims: dict[str, None] = {}
        live_only = policy.mode is PruneMode.ARCHIVE
        condenser = Condenser(raw, f"{actor}{PRUNE_ACTOR}", policy.dry_run)
        if policy.min_importance is not None:
            sql = "SELECT id FROM memories WHERE pinned = 0 AND importance < ?"
            sql += " AND archived = 0" if live_only else ""
            for (mid,) in raw.execute(sql + " ORDER BY importance, created_at", (policy.min_importance,)):
                victims[mid] = None
        if policy.max_entries is not None or policy.max_bytes is not None:
            sql, params = prune_order.candidates_sql(SQLITE)
            totals = raw.execute(prune_order.totals_sql(SQLITE)).fetchone()
            def read():
                return progress.counting(raw.execute(sql, params))

            with prune_order.staged_order(raw, read, policy.max_bytes is not None) as (ordered, last_digests):
                for mid in prune_order.overflow(ordered, totals, policy.max_entries, policy.max_bytes, condenser,
                                                last_digests):
                    victims[mid] = None
        for mid in consolidation.derived_from(raw, list(victims), live_only=live_only):
            victims[mid] = None  # a summary goes with a fact it carries, whatever its importance
        # A row an outside edit left unreadable is left as it is (doctor names it, `memory revert` repairs it):
        # nothing acts on a row it cannot read, as consolidation and every read leave it out.
        for (mid,) in select_in(raw, f"SELECT id FROM memories WHERE id IN ({{marks}}) AND {UNREADABLE}", list(victims)):
            del victims[mid]
        ids = policy.restrict(list(victims))
        report = PruneReport(scanned=scanned, dry_run=policy.dry_run, victim_ids=ids,
                             condensed=len(condenser.decisions), condensations=condenser.decisions)
        progress.total = progress.done + (0 if policy.dry_run else len(ids))  # read, then to remove
        progress.advance(0)
        if policy.dry_run:  # counts say what would happen; nothing is written
            if policy.mode is PruneMode.ARCHIVE:
                report.archived = len(ids)
            else:
                report.purged = len(ids)
            return report
        if not ids:
            return report
        if policy.mode is PruneMode.ARCHIVE:
            report.archived = mutations.update(raw, ids, "archive", f"{actor}{PRUNE_ACTOR}", "archived = 1", progress=progress)
        else:
            report.purged = mutations.delete(raw, ids, "purge", f"{actor}{PRUNE_ACTOR}", progress=progress)
        return report
