"""Faults injected at the tier boundary: a real store behind a wrapper that hangs,
is slow, or raises — the federation and resilience code under test are untouched."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from contextlib import contextmanager
from pathlib import Path

from memory.adapters.sqlite import SQLiteAdapter
from memory.sqlite.connection import dbapi
from memory.types import MemoryEntry


class FaultyTier:
    """Delegates to ``inner``; ``search``/``write``/``get`` misbehave as configured.

    ``delay`` seconds before each call (``None`` = hang forever), or ``error``
    raised instead of calling. ``calls`` counts attempts that reached the tier.
    """

    def __init__(self, inner, *, delay: float | None = 0.0, error: BaseException | None = None, modes=None):
        self.inner = inner
        self.delay = delay
        self.error = error
        self.modes = modes  # misbehave only for searches in these retrieval modes (None: always)
        self.calls = 0

    async def _fault(self, query=None) -> None:
        if query is not None and self.modes is not None and query.retrieval_mode not in self.modes:
            return
        self.calls += 1
        if self.delay is None:
            await asyncio.Event().wait()
        elif self.delay:
            await asyncio.sleep(self.delay)
        if self.error is not None:
            raise self.error

    async def search(self, query):
        await self._fault(query)
        return await self.inner.search(query)

    async def write(self, entry: MemoryEntry):
        await self._fault()
        return await self.inner.write(entry)

    async def get(self, entry_id: str):
        await self._fault()
        return await self.inner.get(entry_id)

    def __getattr__(self, name):
        return getattr(self.inner, name)


def corrupt_file(path: Path) -> Path:
    """Overwrite ``path`` with bytes that are not a SQLite database."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"this is not a database, it is a shopping list\n" * 200)
    return path


@contextmanager
def write_locked(path: Path):
    """Hold SQLite's write lock on ``path`` from another connection (a real busy writer).

    Same SQLite library as the store: POSIX locks do not conflict within one
    process, so only the library's own bookkeeping makes the lock visible.
    """
    conn = dbapi().connect(str(path), isolation_level=None)
    try:
        conn.execute("BEGIN EXCLUSIVE")
        yield
    finally:
        conn.execute("ROLLBACK")
        conn.close()


@contextmanager
def locked_by_another_process(path: Path):
    """Hold SQLite's write lock on ``path`` from another process until the block ends: for tests
    whose CLI runs in this process, where the library's own bookkeeping would not show the lock."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import sys\nfrom memory.sqlite.connection import dbapi\n"
         "c = dbapi().connect(sys.argv[1], isolation_level=None)\nc.execute('BEGIN IMMEDIATE')\n"
         "print('locked', flush=True)\nsys.stdin.read()\n", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "locked"
        yield
    finally:
        holder.stdin.close()
        holder.wait(timeout=10)


async def seeded(path: Path, *entries: MemoryEntry) -> SQLiteAdapter:
    store = SQLiteAdapter(path, actor="test")
    for entry in entries:
        await store.write(entry)
    return store


@contextmanager
def locked_once(path: Path, watched: Path, sql: str, *params, hold: float = 3.0):
    """Another process that takes SQLite's write lock on ``path`` the moment ``sql`` (one count) on
    ``watched`` first comes out non-zero, holds it ``hold`` seconds, then lets go: a writer slipping in
    between two changes of one command. Yields a call that waits for it and returns what the same
    ``sql`` counted in ``path`` once the lock was had."""
    holder = subprocess.Popen(
        [sys.executable, "-c",
         "import json, sys, time\nfrom memory.sqlite.connection import dbapi\n"
         "path, watched, sql, hold, params = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), json.loads(sys.argv[5])\n"
         "seen = dbapi().connect(f'file:{watched}?mode=ro', uri=True, isolation_level=None)\n"
         "mine = dbapi().connect(path, isolation_level=None, timeout=60)\n"
         "print('watching', flush=True)\n"
         "give_up = time.monotonic() + 60\n"
         "while not seen.execute(sql, params).fetchone()[0] and time.monotonic() < give_up:\n"
         "    time.sleep(0.001)\n"
         "mine.execute('BEGIN IMMEDIATE')\n"
         "print(mine.execute(sql, params).fetchone()[0], flush=True)\n"
         "time.sleep(hold)\n"
         "mine.execute('ROLLBACK')\n",
         str(path), str(watched), sql, str(hold), json.dumps(params)],
        stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True,
    )
    try:
        assert holder.stdout.readline().strip() == "watching"
        yield lambda: int(holder.stdout.readline())
    finally:
        holder.wait(timeout=90)
