"""The forward-only migration engine.

Each migration's statements and its ``user_version`` bump share one
transaction, so a failure leaves the database exactly at its prior version.
A database whose version is above :func:`head_version` was written by newer
code and is refused before anything is written.
"""

from __future__ import annotations

import importlib
import pkgutil
import time
from dataclasses import dataclass
from pathlib import Path

import aiosqlite

from memory.errors import SchemaTooNewError
from memory.migrations import versions
from memory.sqlite.connection import dbapi, translate


@dataclass(frozen=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


def _discover() -> tuple[Migration, ...]:
    found = []
    for info in pkgutil.iter_modules(versions.__path__):
        module = importlib.import_module(f"{versions.__name__}.{info.name}")
        found.append(Migration(module.VERSION, module.NAME, tuple(module.STATEMENTS)))
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
    head = head_version(migrations)
    if version > head:
        raise SchemaTooNewError(
            f"{path}: schema version {version} is newer than this Arcana understands "
            f"({head}); upgrade Arcana — the database was left untouched"
        )
    return version


async def migrate(
    conn: aiosqlite.Connection, path: Path | str = "", migrations: tuple[Migration, ...] = MIGRATIONS
) -> int:
    """Apply every pending migration in order; return the resulting version."""
    version = await check_not_newer(conn, path, migrations)
    for migration in migrations:
        if migration.version <= version:
            continue
        try:
            await conn.execute("BEGIN IMMEDIATE")
            # Another process may have migrated while we waited for the lock.
            if await current_version(conn) >= migration.version:
                await conn.execute("ROLLBACK")
                continue
            for statement in migration.statements:
                await conn.execute(statement)
            await conn.execute(_BOOKKEEPING)
            await conn.execute(
                "INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)",
                (migration.version, migration.name, time.time()),
            )
            await conn.execute(f"PRAGMA user_version = {migration.version}")
            await conn.execute("COMMIT")
        except BaseException as exc:
            if conn.in_transaction:
                await conn.execute("ROLLBACK")
            if isinstance(exc, dbapi().Error):
                raise translate(exc, path) from exc
            raise
        version = migration.version
    return version
