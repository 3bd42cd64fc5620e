"""v11: a purge erases — the ledger may lose a purged memory's words, and FTS5 deletes for good.

A purge deleted the row, but its text stayed in the file: in every ledger image
of the memory (the ledger was strictly append-only) and in the FTS5 index,
which for an external-content table keeps a deleted row's terms in its
segments until a merge. Now:

- the ledger refuses every update except one that takes the words (``content``
  and ``tags``) out of the images of a memory that has been purged and is not
  held again: op, actor, time and every other field stay as they were, so the
  history still says what happened and when (memory/sqlite/mutations.py erases);
- the FTS5 index removes a row's terms when the row is deleted or re-worded
  (``secure-delete``, SQLite 3.42+), and is merged once here so terms deleted
  before this version go too.
"""

VERSION = 11
NAME = "purge_erases"

_UNCHANGED = " AND ".join(f"new.{c} IS old.{c}" for c in ("seq", "memory_id", "op", "actor", "at"))
_WORDS_ONLY = " AND ".join(
    f"json_remove(new.{c}, '$.content', '$.tags') IS json_remove(old.{c}, '$.content', '$.tags')" for c in ("before", "after")
)
_PURGED = (
    "NOT EXISTS (SELECT 1 FROM memories WHERE id = old.memory_id) "
    "AND EXISTS (SELECT 1 FROM memory_ledger p WHERE p.memory_id = old.memory_id AND p.op = 'purge')"
)

STATEMENTS = [
    "DROP TRIGGER memory_ledger_no_update",
    f"""
    CREATE TRIGGER memory_ledger_no_update BEFORE UPDATE ON memory_ledger
    WHEN NOT ({_UNCHANGED} AND {_WORDS_ONLY} AND {_PURGED}) BEGIN
        SELECT RAISE(ABORT, 'memory_ledger is append-only');
    END
    """,
]


def APPLY(raw) -> None:  # noqa: N802 — the runner's name for a migration's code step
    version = raw.execute("SELECT sqlite_version()").fetchone()[0]
    if tuple(int(part) for part in version.split(".")[:2]) >= (3, 42):
        raw.execute("INSERT INTO memories_fts (memories_fts, rank) VALUES ('secure-delete', 1)")
        raw.execute("INSERT INTO memories_fts (memories_fts) VALUES ('optimize')")
