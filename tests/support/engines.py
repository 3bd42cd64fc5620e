"""The two store engines a contract test runs on: SQLite files and a PostgreSQL + pgvector server."""

from __future__ import annotations

from memory.adapters.postgres import PostgresAdapter
from memory.adapters.sqlite import SQLiteAdapter

ENGINES = ["sqlite", "postgres"]


def open_store(engine: str, tmp_path, request, **kw):
    """A store of ``engine``: a file under ``tmp_path``, or an empty database on the session's server."""
    if engine == "sqlite":
        return SQLiteAdapter(tmp_path / "store" / "memory.db", actor="test", **kw)
    return PostgresAdapter(request.getfixturevalue("pg_url"), actor="test", **kw)
