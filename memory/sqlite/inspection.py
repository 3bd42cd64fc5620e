"""The SQLite side of memory/inspection.py: each summary is one aggregate statement."""

from __future__ import annotations

from memory.access import DAY_SECONDS
from memory.inspection import Census, Growth, RecallDay, day_date

CENSUS = "SELECT total, recallable, archived, hidden, private, superseded FROM memory_census WHERE id = 1"


def census(raw) -> Census:
    """One row kept by triggers (migration v10): the web view's first page asks every store listed."""
    return Census.of(raw.execute(CENSUS).fetchone())


def growth(raw, after: int = 0) -> Growth:
    """Per-day adds and removals of the ledger rows past seq ``after``."""
    newest = raw.execute("SELECT coalesce(max(seq), 0) FROM memory_ledger").fetchone()[0]
    if newest <= after:
        return Growth(after)
    rows = raw.execute(
        f"SELECT CAST(at / {DAY_SECONDS} AS INTEGER) AS day, sum(before IS NULL), sum(after IS NULL) "
        "FROM memory_ledger WHERE seq > ? AND seq <= ? GROUP BY day ORDER BY day",
        (after, newest),
    ).fetchall()
    return Growth(newest, tuple((r[0], r[1], r[2]) for r in rows))


def recalls(raw) -> list[RecallDay]:
    rows = raw.execute("SELECT day, recalls, hits FROM recall_activity ORDER BY day").fetchall()
    return [RecallDay(day_date(r[0]), r[1], r[2]) for r in rows]
