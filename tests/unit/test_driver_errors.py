"""What a driver error becomes (memory.sqlite.connection.translate), from errors real SQLite raises."""

from __future__ import annotations

import pytest

from memory.errors import MemoryBusyError, MemoryCorruptError
from memory.sqlite.connection import dbapi, translate


def _raised(db, *sql: str) -> Exception:
    conn = dbapi().connect(str(db), isolation_level=None, timeout=0)
    try:
        with pytest.raises(dbapi().Error) as info:
            for statement in sql:
                conn.execute(statement)
        return info.value
    finally:
        conn.close()


def test_a_write_lock_held_elsewhere_says_what_to_do(tmp_path):
    """It said only 'database stayed locked by another writer (database is locked)'."""
    db = tmp_path / "memory.db"
    holder = dbapi().connect(str(db), isolation_level=None)
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN IMMEDIATE")
    try:
        error = translate(_raised(db, "BEGIN IMMEDIATE"), db)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert isinstance(error, MemoryBusyError)
    assert str(error).startswith(f"{db}: database stayed locked by another writer") and "run again once" in str(error)


def test_malformed_json_in_a_cell_is_not_a_corrupt_file(tmp_path):
    db = tmp_path / "memory.db"
    error = translate(_raised(db, "SELECT * FROM json_each('[not json')"), db)
    assert not isinstance(error, MemoryCorruptError) and "malformed JSON" in str(error)
    db.write_bytes(b"this is not a database" * 100)  # control: a damaged file still is
    assert isinstance(translate(_raised(db, "SELECT * FROM sqlite_master"), db), MemoryCorruptError)
