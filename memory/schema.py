"""Read a database's schema version without writing to it."""

from __future__ import annotations

from pathlib import Path

from memory.sqlite.connection import dbapi


def read_version(db: Path) -> tuple[int, str | None]:
    """``(user_version, problem)``; opened read-only so nothing is ever written."""
    try:
        conn = dbapi().connect(f"file:{db.as_posix()}?mode=ro", uri=True)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return int(conn.execute("PRAGMA user_version").fetchone()[0]), None
        finally:
            conn.close()
    except dbapi().Error as exc:
        return -1, f"unreadable: {exc}"
