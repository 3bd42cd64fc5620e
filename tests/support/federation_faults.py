"""Faults injected at the tier boundary: a real store behind a wrapper that hangs,
is slow, or raises — the federation and resilience code under test are untouched."""

from __future__ import annotations

import asyncio
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
