"""v9: compact vector indexes — build one beside every float index that is already large.

A store written before v9 that holds :data:`memory.sqlite.compact.BUILD_FROM`
vectors or more gets its compact index now (memory/sqlite/compact.py), so its
next semantic search need not read every float; a smaller one gets it from the
write that crosses the threshold. Without sqlite-vec there are no float
indexes to read (and none could have been written), so there is nothing to do.
"""

from memory.sqlite import compact
from memory.sqlite.connection import load_vec
from memory.sqlite.vectors import vec_tables

VERSION = 9
NAME = "compact_vectors"

STATEMENTS: list[str] = []


def APPLY(raw) -> None:  # noqa: N802 — the runner's name for a migration's code step
    tables = vec_tables(raw)
    if not tables or load_vec(raw) is None:
        return
    for table in tables:
        if raw.execute(f"SELECT count(*) >= ? FROM {table}", (compact.BUILD_FROM,)).fetchone()[0]:
            compact.build(raw, table)
