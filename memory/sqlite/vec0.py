"""Damage to a sqlite-vec (``vec0``) index: finding it, and dropping a damaged index.

A ``vec0`` table keeps its data in shadow tables. An outside edit that drops
or empties one leaves the index unreadable (writes fail, a KNN errors or finds
nothing) while ``PRAGMA quick_check`` still says ok, so this is checked by
reading the index itself. Vectors are derived from the rows: a damaged index
is rebuilt beside the live one by a re-embed, never by touching the rows.
"""

from __future__ import annotations

import struct

from memory.sqlite.connection import dbapi

# The shadow tables of the indexes Arcana creates (one float vector column plus auxiliary columns).
SHADOWS = ("info", "chunks", "rowids", "vector_chunks00", "auxiliary")


def damage(raw, table: str, dimension: int) -> str | None:
    """What is wrong with the vector index ``table`` (of ``dimension``-float vectors), or None when it
    reads whole. Read-only and without reading every vector (doctor and every index run ask): its
    tables exist, it lists as many rows as it holds auxiliary rows for, one row reads back whole,
    and one nearest-neighbour search finds a row exactly when it lists some."""
    names = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE name GLOB ?", (f"{table}_*",))}
    missing = [f"{table}_{s}" for s in SHADOWS if f"{table}_{s}" not in names]
    if missing:
        return f"vector index {table} is damaged: its table {', '.join(missing)} is missing"
    try:
        count = raw.execute(f"SELECT count(*) FROM {table}_rowids").fetchone()[0]
        extra = raw.execute(f"SELECT count(*) FROM {table}_auxiliary").fetchone()[0]
        raw.execute(f"SELECT content_hash, vec_length(embedding) FROM {table} LIMIT 1").fetchall()
        probe = struct.pack(f"{int(dimension)}f", *[1.0] * int(dimension))
        found = raw.execute(f"SELECT rowid FROM {table} WHERE embedding MATCH ? AND k = 1", (probe,)).fetchall()
    except dbapi().Error as exc:
        return f"vector index {table} is damaged: {exc}"
    if count != extra:
        return f"vector index {table} is damaged: it lists {count} vector(s) but holds {extra} rows of their columns"
    if bool(count) != bool(found):
        return f"vector index {table} is damaged: it lists {count} vector(s) but a search finds {len(found)}"
    return None


def drop(raw, table: str) -> None:
    """``DROP TABLE table``, also when one of its shadow tables is missing: sqlite-vec drops each
    one and fails at the first that is gone, so stand-ins are created for the missing ones and the
    drop retried (inside the caller's transaction)."""
    raw.execute("SAVEPOINT vec0_drop")
    try:
        raw.execute(f"DROP TABLE IF EXISTS {table}")
    except dbapi().Error:
        raw.execute("ROLLBACK TO vec0_drop")
        names = {r[0] for r in raw.execute("SELECT name FROM sqlite_master WHERE name GLOB ?", (f"{table}_*",))}
        stand_ins = [f"{table}_{s}" for s in SHADOWS if f"{table}_{s}" not in names]
        for name in stand_ins:
            raw.execute(f"CREATE TABLE {name} (stand_in)")
        raw.execute(f"DROP TABLE {table}")
        for name in stand_ins:  # one sqlite-vec did not drop (an index of another shape): not left behind
            raw.execute(f"DROP TABLE IF EXISTS {name}")
    raw.execute("RELEASE vec0_drop")
