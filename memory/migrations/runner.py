"""The forward-only migration engine.

A whole upgrade holds one write lock; each migration's statements and its
``user_version`` bump share a savepoint, so a failing migration leaves the
database exactly at the version before it.
A database whose version is above :func:`head_version` was written by newer
code and is refused before anything is written.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from memory.errors import SchemaTooNewError
from memory.migrations import versions
from memory.sqlite.connection import run_sync, transaction


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]
    apply: Callable | None = None  # ``apply(raw)`` after the statements: work SQL text alone cannot say


def _discover() -> tuple[Migration, ...]:
    found = []
    for info in pkgutil.iter_modules(versions.__path__):
        module = importlib.import_module(f"{versions.__name__}.{info.name}")
        found.append(Migration(module.VERSION, module.NAME, tuple(module.STATEMENTS), getattr(module, "APPLY", None)))
    found.sort(key=lambda m: m.version)
    expected = list(range(1, len(found) + 1))
    if [m.version for m in found] != expected:
        raise RuntimeError(f"migration versions must be 1..N without gaps, got {[m.version for m in found]}")
    return tuple(found)


MIGRATIONS: tuple[Migration, ...] = _discover()

_BOOKKEEPING = """
CREATE TABLE IF NOT EXISTS schema_migrations (
    version INTEGER PRIMARY KEY,
    name TEXT NOT NULL,
    applied_at REAL NOT NULL
)
"""


def head_version(migrations: tuple[Migration, ...] = MIGRATIONS) -> int:
    return migrations[-1].version if migrations else 0


async def current_version(conn: aiosqlite.Connection) -> int:
    async with conn.execute("PRAGMA user_version") as cur:
        row = await cur.fetchone()
    return int(row[0])


async def check_not_newer(
    conn: aiosqlite.Connection, path: Path | str, migrations: tuple[Migration, ...] = MIGRATIONS
) -> int:
    version = await current_version(conn)
    _refuse_newer(version, path, migrations)
    return version


def _refuse_newer(version: int, path: Path | str, migrations: tuple[Migration, ...]) -> None:
    head = head_version(migrations)
    if version > head:
        raise SchemaTooNewError(
            f"{path}: schema version {version} is newer than this Arcana understands "
            f"({head}); upgrade Arcana — the database was left untouched"
        )


async def migrate(
    conn: aiosqlite.Connection,
    path: Path | str = "",
    migrations: tuple[Migration, ...] = MIGRATIONS,
    *,
    before_upgrade: Callable[[int], None] | None = None,
) -> int:
    """Apply every pending migration in order; return the resulting version.

    ``before_upgrade(version)`` runs once, under the write lock, before a
    database that already has a schema is changed (the backup hook).
    """
    if await check_not_newer(conn, path, migrations) >= head_version(migrations):
        return head_version(migrations)
    return await run_sync(conn, _apply_pending, path, migrations, before_upgrade, path=path)


def _apply_pending(raw, path, migrations: tuple[Migration, ...], before_upgrade) -> int:
    """The whole upgrade under one write lock, each migration in its own savepoint.

    One lock: a process racing to create the same store sees version 0 or the
    head, never a half-built schema it would mistake for an old one (and back
    up). Savepoints: a failing migration is undone alone, the ones before it
    commit.
    """
    with transaction(raw):
        version = int(raw.execute("PRAGMA user_version").fetchone()[0])  # another process may have migrated
        _refuse_newer(version, path, migrations)
        pending = [m for m in migrations if m.version > version]
        if pending and version > 0 and before_upgrade is not None:
            before_upgrade(version)
        for migration in pending:
            raw.execute("SAVEPOINT migration")
            try:
                for statement in migration.statements:
                    raw.execute(statement)
                if migration.apply is not None:
                    migration.apply(raw)
                raw.execute(_BOOKKEEPING)
                raw.execute(
                    "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                    (migration.version, migration.name, time.time()),
                )
                raw.execute(f"PRAGMA user_version = {migration.version}")
                raw.execute("RELEASE migration")
            except BaseException:
                raw.execute("ROLLBACK TO migration")
                raw.execute("RELEASE migration")
                raw.execute("COMMIT")  # keep the migrations before this one
                raise
            version = migration.version
    return version
