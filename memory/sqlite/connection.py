"""The one connection factory: driver choice, pragmas, extension loading, and
the two ways work reaches a connection: on aiosqlite's thread
(:func:`run_sync`), or inline on the event loop when that cannot block
(:func:`run_inline`). Either way a caller's deadline stops it inside SQLite.

pyenv-built interpreters (the default ``python3`` on our machines) ship a
``sqlite3`` without ``enable_load_extension``, so sqlite-vec could never load.
``pysqlite3`` bundles a SQLite that can; we prefer it when installed and fall
back to the stdlib module otherwise.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
import time
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import Any

import aiosqlite

from memory.deadline import DEADLINE, DEFAULT_LOCK_WAIT_SECONDS, WAIT_LONGER, lock_wait
from memory.errors import MemoryBusyError, MemoryCorruptError, MemoryStorageError, MemoryTimeoutError
from memory.home import private_file

LOCK_WAIT_GRACE_MS = 250  # how long past a caller's deadline a lock wait may run

# "vtable constructor failed" is how a damaged FTS5 shadow table surfaces
# (a missing module reads "no such module" instead).
_CORRUPT_MARKERS = ("malformed", "not a database", "file is encrypted", "disk image", "vtable constructor failed")


@cache
def dbapi() -> ModuleType:
    """The DB-API module in use: pysqlite3 (Linux x86_64 wheels), else sqlean.py
    (wheels for the other platforms), else the stdlib — which on some builds
    cannot load sqlite-vec, so semantic search then degrades to keyword."""
    try:
        from pysqlite3 import dbapi2  # type: ignore[import-not-found]

        return dbapi2
    except ImportError:
        pass
    try:
        from sqlean import dbapi2  # type: ignore[import-not-found]

        return dbapi2
    except ImportError:
        import sqlite3

        return sqlite3


def translate(exc: BaseException, path: Path | str) -> BaseException:
    """Map a driver error onto the memory taxonomy, naming the file."""
    message = str(exc)
    lowered = message.lower()
    # 'malformed JSON' is one cell's text (a JSON function's argument), not the file: never quarantine for it.
    if any(marker in lowered for marker in _CORRUPT_MARKERS) and "malformed json" not in lowered:
        return MemoryCorruptError(f"{path}: database is corrupt ({message})")
    if lowered == "interrupted":
        return MemoryTimeoutError(f"{path}: stopped at its deadline")
    if "database or disk is full" in lowered or ("disk i/o error" in lowered and _disk_full(path)):
        return MemoryStorageError(f"{path}: the disk is full ({message}); free space on it and run again")
    if "readonly database" in lowered:  # SQLite opened it read-only: the system refused it for writing
        return MemoryStorageError(f"{path}: the store cannot be written ({message}); {unwritable_fix(path)}")
    if "locked" in lowered or "busy" in lowered:
        return MemoryBusyError(
            f"{path}: database stayed locked by another writer ({message}); "
            f"run again once the other process has finished its write, or {WAIT_LONGER}"
        )
    return MemoryStorageError(f"{path}: {message}")


def unwritable_fix(path: Path | str) -> str:
    """What to do about a store the system will not let Arcana write (reads go on): most often an
    immutable flag, which no mode bit shows."""
    return (f"reads go on, writes fail: if `lsattr {path}` shows it immutable, `chattr -i {path}` as root, "
            "else make it (its folder and its -wal/-shm files) writable by this user, then run again")


def _disk_full(path: Path | str) -> bool:
    """Whether the disk holding ``path`` has (next to) no space left: SQLite reports a write to its
    ``-shm`` or ``-wal`` on a full disk as a bare 'disk I/O error'."""
    try:
        return shutil.disk_usage(Path(path).parent).free < 1 << 20
    except OSError:
        return False


def connect_readonly(path: Path | str):
    """A plain read-only driver connection: for probes and diagnostics that must never write."""
    return dbapi().connect(f"file:{Path(path).as_posix()}?mode=ro", uri=True)


@contextlib.contextmanager
def reading(path: Path | str) -> Iterator[Any]:
    """:func:`connect_readonly`, closed on exit, leaving no -wal and -shm it made.

    Opening a WAL database makes both files, and a read-only connection cannot
    remove them: a status or doctor run left them beside every closed store. When
    neither was there before, a plain connection opened and closed after the read
    removes them (SQLite does, as the last connection closes, once the empty WAL
    is checkpointed); a writer still holding the database keeps them, and a WAL
    that was there before is never touched (it may hold the last commits).
    """
    made = not any(Path(f"{path}{suffix}").exists() for suffix in ("-wal", "-shm"))
    conn = connect_readonly(path)
    try:
        yield conn
    finally:
        conn.close()
        if made and Path(f"{path}-wal").exists():
            with contextlib.suppress(dbapi().Error):  # a store this user may not write keeps them
                tidy = dbapi().connect(f"file:{Path(path).as_posix()}?mode=rw", uri=True)
                try:
                    tidy.execute("SELECT count(*) FROM sqlite_master").fetchone()
                finally:
                    tidy.close()


class StoreConnection(aiosqlite.Connection):
    """aiosqlite's connection plus a gate held by whoever is running work on
    the raw connection: aiosqlite's thread, or the event loop (:func:`run_inline`);
    and its busy timeout (the lock wait when it was opened, :func:`memory.deadline.lock_wait`), which a call that
    changes it for a while puts back."""

    def __init__(self, connector, lock_wait_ms: int, iter_chunk_size: int = 256):
        super().__init__(connector, iter_chunk_size)
        self.gate = threading.Lock()
        self.lock_wait_ms = lock_wait_ms


async def open_connection(path: Path | str) -> StoreConnection:
    """Open ``path`` with autocommit off-the-driver (we issue BEGIN ourselves).

    Pragmas that write the file (WAL) are applied by :func:`apply_pragmas`, after
    the caller has checked the schema version, so a database newer than this
    code is never written to.
    """
    module = dbapi()
    lock_wait_ms = round(lock_wait(DEFAULT_LOCK_WAIT_SECONDS) * 1000)  # read here: aiosqlite's thread does not see the caller's context

    def connector():
        conn = module.connect(
            str(path),
            isolation_level=None,
            check_same_thread=False,
            timeout=lock_wait_ms / 1000,
        )
        conn.row_factory = module.Row
        return conn

    if str(path) != ":memory:":
        private_file(path)  # 0600 in 0700 folders; its -wal/-shm inherit the mode
    conn = StoreConnection(connector, lock_wait_ms)
    # A connection someone forgot to close must not keep the process alive at
    # exit; committed data is safe in the WAL either way.
    conn._thread.daemon = True
    try:
        await conn
    except module.Error as exc:
        raise translate(exc, path) from exc
    return conn


# Page cache per connection, in KiB (SQLite's default is 2 MiB). A write transaction's dirty
# pages cannot leave the cache, so with 2 MiB a transaction that wrote a batch and then read an
# index (the compact index's build over 20,000 vectors: 30 MB of floats) re-read every page
# from the file: 2.0 s instead of 0.13 s. Pages are taken as they are used, not up front.
CACHE_KIB = 32 * 1024


async def apply_pragmas(conn: StoreConnection, path: Path | str) -> None:
    def _apply(raw) -> None:
        raw.execute(f"PRAGMA busy_timeout = {conn.lock_wait_ms}")
        _enable_wal(raw, conn.lock_wait_ms)
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = ON")
        raw.execute(f"PRAGMA cache_size = -{CACHE_KIB}")
        # Freed space is zeroed, so a purged memory's words (and the earlier text of a re-worded
        # one) do not stay in free pages and cells: +0.2-0.3 ms a re-word or delete, none on an insert.
        raw.execute("PRAGMA secure_delete = ON")

    await run_sync(conn, _apply, path=path)
    if str(path) != ":memory:":
        _restrict(Path(path))


def _enable_wal(raw, lock_wait_ms: int) -> None:
    """Switch to WAL, retrying while another connection does the same.

    The switch reads page 1 and then upgrades to a write, and SQLite never runs
    the busy handler for such an upgrade: two processes creating the same
    database at once made one fail with "database is locked" at once, not
    after the busy timeout. Retry until that timeout instead.
    """
    deadline = time.monotonic() + lock_wait_ms / 1000
    delay = 0.005
    while True:
        try:
            raw.execute("PRAGMA journal_mode = WAL").fetchall()
            return
        except dbapi().OperationalError as exc:
            if "locked" not in str(exc).lower() or time.monotonic() >= deadline:
                raise
        time.sleep(delay)
        delay = min(delay * 2, 0.1)


def _restrict(path: Path) -> None:
    """Database files hold private memory: owner read/write only."""
    for suffix in ("", "-wal", "-shm"):
        candidate = Path(f"{path}{suffix}")
        if candidate.exists():
            try:
                os.chmod(candidate, 0o600)
            except OSError:
                pass


async def has_fts5(conn: aiosqlite.Connection) -> bool:
    async with conn.execute("SELECT sqlite_compileoption_used('ENABLE_FTS5')") as cur:
        row = await cur.fetchone()
    return bool(row and row[0])


def load_vec(raw) -> str | None:
    """Load sqlite-vec into a raw connection (on its thread); its version, or None when it cannot load."""
    if not hasattr(raw, "enable_load_extension"):
        return None
    try:
        import sqlite_vec
    except ImportError:
        return None
    raw.enable_load_extension(True)
    try:
        sqlite_vec.load(raw)
    finally:
        raw.enable_load_extension(False)
    return raw.execute("SELECT vec_version()").fetchone()[0]


async def load_sqlite_vec(conn: StoreConnection) -> str | None:
    """Load sqlite-vec into ``conn``; return its version, or None when it cannot load."""
    try:
        return await run_sync(conn, load_vec)
    except MemoryStorageError:
        return None


async def run_sync(conn: StoreConnection, fn, *args, path: Path | str = ""):
    """Run ``fn(raw_connection, *args)`` on the connection's own thread.

    A mutation is several statements (before image, change, after image,
    ledger row); running them in one hop instead of one await each keeps a
    committed single write close to a raw INSERT. Driver errors come back
    translated into the memory taxonomy.
    """
    deadline = DEADLINE.get()

    def gated(raw):
        with conn.gate:
            if deadline is None:
                return _call(raw, deadline, fn, args)
            # A lock wait runs no VM steps, so the progress handler cannot stop it:
            # the busy timeout must end by the deadline too (just after it, so the
            # caller's own timeout still speaks first).
            wait_ms = max(0, int((deadline - time.monotonic()) * 1000)) + LOCK_WAIT_GRACE_MS
            raw.execute(f"PRAGMA busy_timeout = {min(wait_ms, conn.lock_wait_ms)}")
            try:
                return _call(raw, deadline, fn, args)
            finally:
                raw.execute(f"PRAGMA busy_timeout = {conn.lock_wait_ms}")

    try:
        return await conn._execute(gated, conn._conn)
    except dbapi().Error as exc:
        raise translate(exc, path) from exc


async def run_inline(conn: StoreConnection, fn, *args, path: Path | str = ""):
    """Run ``fn(raw_connection, *args)`` on the calling event-loop thread when
    that cannot block; otherwise exactly as :func:`run_sync`.

    The hop to aiosqlite's thread and back costs about 0.1 ms, as much as a
    whole committed insert, so short calls (a search, one write) run here. It
    cannot block: the gate must be free (the thread is not mid-call), and the
    busy timeout is 0 here, so a lock held by another process sends the call
    to the thread, where it waits as usual. ``fn`` must therefore be safe to
    start again: reads, or one ``transaction``. A deadline is enforced by
    SQLite's progress handler on either path.
    """
    if conn._running and conn._connection is not None and conn.gate.acquire(blocking=False):
        raw = conn._connection
        try:
            raw.execute("PRAGMA busy_timeout = 0")
            try:
                return _call(raw, DEADLINE.get(), fn, args)
            finally:
                raw.execute(f"PRAGMA busy_timeout = {conn.lock_wait_ms}")
        except dbapi().Error as exc:
            error = translate(exc, path)
            if not isinstance(error, MemoryBusyError):
                raise error from exc
        finally:
            conn.gate.release()
    return await run_sync(conn, fn, *args, path=path)


def _call(raw, deadline: float | None, fn, args):
    """``fn(raw, *args)``, interrupted inside SQLite once ``deadline`` has passed."""
    if deadline is None:
        return fn(raw, *args)
    raw.set_progress_handler(lambda: time.monotonic() > deadline, 5000)  # every 5000 VM steps: well under 1 ms
    try:
        return fn(raw, *args)
    finally:
        raw.set_progress_handler(None, 0)


class transaction:
    """``with transaction(raw):`` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on error.

    IMMEDIATE takes the write lock up front, so two processes never deadlock
    upgrading a read to a write (which SQLite reports as "database is locked"
    without waiting for the busy timeout). Inside a transaction already open
    (:func:`hold_write_lock`) it is a savepoint, released or rolled back alike:
    each change still whole or not at all, the lock kept until the holder ends.
    """

    def __init__(self, raw):
        self.raw = raw

    def __enter__(self):
        self.nested = self.raw.in_transaction
        self.raw.execute("SAVEPOINT change" if self.nested else "BEGIN IMMEDIATE")
        return self.raw

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.raw.execute("RELEASE change" if self.nested else "COMMIT")
        elif self.raw.in_transaction:
            if self.nested:
                self.raw.execute("ROLLBACK TO change")
                self.raw.execute("RELEASE change")
            else:
                self.raw.execute("ROLLBACK")
        return False


def truncate_wal(raw) -> bool:
    """Copy the WAL into the database and empty it, without waiting: whether it was emptied.

    After a purge the WAL still holds the pages as they were before it (the
    purged words in them) until a checkpoint restarts it. A reader on an older
    snapshot keeps them (False): the next checkpoint, or the last close, does it.
    """
    wait = raw.execute("PRAGMA busy_timeout").fetchone()[0]
    raw.execute("PRAGMA busy_timeout = 0")
    try:
        return raw.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] == 0
    finally:
        raw.execute(f"PRAGMA busy_timeout = {wait}")


def hold_write_lock(raw) -> None:
    """Take the write lock (waiting the busy timeout) and keep it: every :class:`transaction` until
    :func:`release_write_lock` is a savepoint of this one."""
    raw.execute("BEGIN IMMEDIATE")


def release_write_lock(raw) -> None:
    """Commit what was changed under :func:`hold_write_lock`: each change was whole, so it stands as
    it would have without the hold (rolled back only when the commit itself fails)."""
    if not raw.in_transaction:  # SQLite rolled it back itself (an interrupted or failed write)
        return
    try:
        raw.execute("COMMIT")
    except dbapi().Error:
        raw.execute("ROLLBACK")
        raise
