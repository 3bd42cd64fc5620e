"""Statements over a list of ids or seqs of any length, in bounded ``IN (?, …)`` batches.

SQLite caps the host parameters of one statement (999 before 3.32), so a long
list is cut into batches of :data:`BATCH`, each with its own placeholders.
This is the one place that cuts them.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

BATCH = 500  # values per IN list, leaving room under the cap for a statement's other parameters


def batches(values: Sequence, size: int = BATCH) -> Iterator[list]:
    """``values`` in lists of at most ``size`` (:data:`BATCH`: an IN list's worth)."""
    values = list(values)
    for start in range(0, len(values), size):
        yield values[start : start + size]


def marks(values: Sequence) -> str:
    """The placeholders of an IN list for ``values``: ``?,?,?``."""
    return ",".join("?" * len(values))


def select_in(raw, sql: str, values: Sequence, *, before: Sequence = (), after: Sequence = ()) -> list:
    """Every row of ``sql`` over ``values``, a batch at a time.

    ``sql`` holds ``{marks}`` where the IN list goes; ``before`` and ``after``
    are the statement's parameters ahead of and behind that list.
    """
    rows: list = []
    for batch in batches(values):
        rows += raw.execute(sql.replace("{marks}", marks(batch)), (*before, *batch, *after)).fetchall()
    return rows
