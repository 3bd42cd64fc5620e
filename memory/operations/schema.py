"""Schema state of every database under a home, and upgrading them all.

``arcana migrate status/up`` and ``arcana doctor`` both describe a database's
version from here, so they can never disagree about what "pending" means.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from memory.home import Home
from memory.migrations.runner import head_version
from memory.sqlite.connection import dbapi, reading


def read_version(db: Path) -> tuple[int, str | None]:
    """``(user_version, problem)``; opened read-only so nothing is ever written."""
    try:
        with reading(db) as conn:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return int(conn.execute("PRAGMA user_version").fetchone()[0]), None
    except dbapi().Error as exc:
        return -1, f"unreadable: {exc}"


def describe(version: int, head: int, problem: str | None = None) -> str:
    """The one wording of a database's schema state."""
    if problem:
        return problem
    if version == head:
        return "current"
    return "newer than this Arcana" if version > head else "pending"


@dataclass
class DatabaseVersion:
    database: str  # relative to the home
    version: int
    head: int
    state: str

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class MigrationResult:
    database: str
    from_version: int
    to_version: int
    state: str  # "migrated", or why it was left alone
    backup: str | None = None
    head: int = 0  # the schema this Arcana would migrate it to
    # Why a server tier was not checked, where the config stopped it before the server was asked: its
    # ConfigError, or the UnsetVariableError of a ``url_env`` this process lacks (not in as_dict).
    error: Exception | None = field(default=None, repr=False, compare=False)

    def as_dict(self) -> dict:
        return {"database": self.database, "from": self.from_version, "to": self.to_version,
                "state": self.state, "backup": self.backup}


def home_status(home: Home) -> list[DatabaseVersion]:
    """Every database under ``home`` with its version against this Arcana's."""
    head = head_version()
    rows = []
    for db in home.databases():
        version, problem = read_version(db)
        rows.append(DatabaseVersion(str(db.relative_to(home.root)), version, head, describe(version, head, problem)))
    return rows


async def upgrade_home(
    home: Home, *, actor: str = "library", on_progress: Callable[[int, int], None] | None = None
) -> list[MigrationResult]:
    """Migrate every pending database (each copied aside first); the rest are reported as they are.
    ``on_progress(done, total)`` counts databases: a large one's copy and migration take a while."""
    from memory.adapters.opener import open_database

    head = head_version()
    results = []
    databases = home.databases()
    for done, db in enumerate(databases):
        if on_progress is not None:
            on_progress(done, len(databases))
        version, problem = read_version(db)
        result = MigrationResult(str(db.relative_to(home.root)), version, version, describe(version, head, problem))
        if result.state == "newer than this Arcana":
            result.state += ": skipped"
        elif result.state == "pending":
            store = open_database(home, db, actor=actor)
            try:
                await store.connect()
                result.to_version = await store.schema_version()
                result.backup = str(store.backed_up_to) if store.backed_up_to else None
                result.state = "migrated"
            finally:
                await store.aclose()
        results.append(result)
    if on_progress is not None:
        on_progress(len(databases), len(databases))
    return results


async def server_versions(home: Home, config, *, upgrade: bool = False, actor: str = "library") -> list[MigrationResult]:
    """Every tier config puts on a PostgreSQL server, its version read (and with ``upgrade`` migrated).

    Reading never upgrades; an unreachable server or an unset ``url_env`` is
    a row saying so (password masked), not an error.
    """
    from memory.adapters.opener import server_tiers
    from memory.errors import ArcanaMemoryError, SchemaTooNewError
    from memory.postgres.migrations import head_version

    results = []
    for label, store in server_tiers(home, config, actor=actor):
        if isinstance(store, Exception):
            results.append(MigrationResult(label, 0, 0, f"not checked: {store}", head=head_version(), error=store))
            continue
        result = MigrationResult(f"{label} {store.path}", 0, 0, "", head=head_version())
        try:
            result.from_version, head = await store.pending_version()
            result.to_version = result.from_version
            result.state = describe(result.from_version, head)
            if upgrade and result.state == "pending":
                await store.connect()  # migrates under the server's advisory lock
                result.to_version = await store.schema_version()
                result.state = "migrated"
        except SchemaTooNewError:
            result.state = "newer than this Arcana"
        except ArcanaMemoryError as exc:
            result.state = f"unreachable: {exc}"
        finally:
            await store.aclose()
        results.append(result)
    return results
