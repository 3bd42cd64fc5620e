"""Read a database's schema version without writing to it."""

from __future__ import annotations

from pathlib import Path

from memory.sqlite.connection import connect_readonly, dbapi


def read_version(db: Path) -> tuple[int, str | None]:
    """``(user_version, problem)``; opened read-only so nothing is ever written."""
    try:
        conn = connect_readonly(db)
        try:
            conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
            return int(conn.execute("PRAGMA user_version").fetchone()[0]), None
        finally:
            conn.close()
    except dbapi().Error as exc:
        return -1, f"unreadable: {exc}"
