"""The SQLite side of memory/inspection.py: each summary is one aggregate statement."""

from __future__ import annotations

from memory.access import DAY_SECONDS
from memory.inspection import Census, Growth, RecallDay, day_date

CENSUS = (
    "SELECT count(*), "
    "coalesce(sum(visibility = 'visible' AND archived = 0 AND valid_to IS NULL), 0), "
    "coalesce(sum(archived != 0), 0), coalesce(sum(visibility = 'hidden'), 0), coalesce(sum(visibility = 'private'), 0), "
    "coalesce(sum(valid_to IS NOT NULL), 0) FROM memories"
)


def census(raw) -> Census:
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
