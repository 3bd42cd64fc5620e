"""The one connection factory: driver choice, pragmas, extension loading.

pyenv-built interpreters (the default ``python3`` on our machines) ship a
``sqlite3`` without ``enable_load_extension``, so sqlite-vec could never load.
``pysqlite3`` bundles a SQLite that can; we prefer it when installed and fall
back to the stdlib module otherwise.
"""

from __future__ import annotations

import os
import time
from functools import cache
from pathlib import Path
from types import ModuleType

import aiosqlite

from memory.errors import MemoryBusyError, MemoryCorruptError, MemoryStorageError

BUSY_TIMEOUT_MS = 30_000

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
    if any(marker in lowered for marker in _CORRUPT_MARKERS):
        return MemoryCorruptError(f"{path}: database is corrupt ({message})")
    if "locked" in lowered or "busy" in lowered:
        return MemoryBusyError(
            f"{path}: database stayed locked by another writer for "
            f"{BUSY_TIMEOUT_MS // 1000}s ({message})"
        )
    return MemoryStorageError(f"{path}: {message}")


def connect_readonly(path: Path | str):
    """A plain read-only driver connection: for probes and diagnostics that must never write."""
    return dbapi().connect(f"file:{Path(path).as_posix()}?mode=ro", uri=True)


async def open_connection(path: Path | str) -> aiosqlite.Connection:
    """Open ``path`` with autocommit off-the-driver (we issue BEGIN ourselves).

    Pragmas that write the file (WAL) are applied by :func:`apply_pragmas`, after
    the caller has checked the schema version, so a database newer than this
    code is never written to.
    """
    module = dbapi()

    def connector():
        conn = module.connect(
            str(path),
            isolation_level=None,
            check_same_thread=False,
            timeout=BUSY_TIMEOUT_MS / 1000,
        )
        conn.row_factory = module.Row
        return conn

    if str(path) != ":memory:":
        Path(path).parent.mkdir(parents=True, exist_ok=True)
    conn = aiosqlite.Connection(connector, iter_chunk_size=256)
    # A connection someone forgot to close must not keep the process alive at
    # exit; committed data is safe in the WAL either way.
    conn._thread.daemon = True
    try:
        await conn
    except module.Error as exc:
        raise translate(exc, path) from exc
    return conn


async def apply_pragmas(conn: aiosqlite.Connection, path: Path | str) -> None:
    def _apply(raw) -> None:
        raw.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _enable_wal(raw)
        raw.execute("PRAGMA synchronous = NORMAL")
        raw.execute("PRAGMA foreign_keys = ON")

    await run_sync(conn, _apply, path=path)
    if str(path) != ":memory:":
        _restrict(Path(path))


def _enable_wal(raw) -> None:
    """Switch to WAL, retrying while another connection does the same.

    The switch reads page 1 and then upgrades to a write, and SQLite never runs
    the busy handler for such an upgrade: two processes creating the same
    database at once made one fail with "database is locked" at once, not
    after the busy timeout. Retry until that timeout instead.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
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


async def load_sqlite_vec(conn: aiosqlite.Connection) -> str | None:
    """Load sqlite-vec into ``conn``; return its version, or None when it cannot load."""

    def _load(raw) -> str | None:
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

    try:
        return await conn._execute(_load, conn._conn)  # runs on the connection's thread
    except dbapi().Error:
        return None


async def run_sync(conn: aiosqlite.Connection, fn, *args, path: Path | str = ""):
    """Run ``fn(raw_connection, *args)`` on the connection's own thread.

    A mutation is several statements (before image, change, after image,
    ledger row); running them in one hop instead of one await each keeps a
    committed single write close to a raw INSERT. Driver errors come back
    translated into the memory taxonomy.
    """
    try:
        return await conn._execute(fn, conn._conn, *args)
    except dbapi().Error as exc:
        raise translate(exc, path) from exc


class transaction:
    """``with transaction(raw):`` — BEGIN IMMEDIATE … COMMIT, ROLLBACK on error.

    IMMEDIATE takes the write lock up front, so two processes never deadlock
    upgrading a read to a write (which SQLite reports as "database is locked"
    without waiting for the busy timeout).
    """

    def __init__(self, raw):
        self.raw = raw

    def __enter__(self):
        self.raw.execute("BEGIN IMMEDIATE")
        return self.raw

    def __exit__(self, exc_type, exc, tb):
        if exc_type is None:
            self.raw.execute("COMMIT")
        elif self.raw.in_transaction:
            self.raw.execute("ROLLBACK")
        return False
