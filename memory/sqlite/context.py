"""The context a memory was said in, derived at write time from what the store holds.

A conversational turn ("Yeah, it was amazing!") often means nothing alone, and
a question about *when* ("in May 2023") has no word in common with the turn it
is about. So every memory is also indexed — keyword and vector, never returned
— with its date and, for a turn of a session (``source_session_id``), the
previous visible turn of that session. Derived in the write transaction, so
every writer (``arcana run``, ``remember``, bulk import, the library) gets it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import UTC, date, datetime
from functools import cache

from memory.sqlite.admission import admission
from memory.sqlite.rows import keys, listed
from memory.types import MemoryEntry

PREVIOUS_CHARS = 300  # of the previous turn: enough to say what "it" was, within the model's window

# What the embedder sees for a row: its content, then the turn before it (so a
# long content is never cut in favour of its context by the model's window).
# The date is for the keyword index only: a shared date pulls every vector of a
# day together and measured worse for semantic recall.
EMBEDDED_TEXT_SQL = "content || CASE WHEN context = '' THEN '' ELSE char(10) || context END"


def render_date(when: datetime) -> str:
    """'8 May 2023': the words a question about that day or month uses.

    No weekday: "the deploy runs on Tuesdays" would otherwise match every
    memory written on a Tuesday. The UTC day, as the store keeps the time
    (and as a PostgreSQL tier renders it): a writer's offset would otherwise
    move a row to another day when it is re-written.
    """
    when = when.astimezone(UTC)
    return f"{when.day} {_month(when.year, when.month)}"


@cache
def _month(year: int, month: int) -> str:
    """'May 2023', formatted once a month: a bulk import renders the same month for every row."""
    return f"{date(year, month, 1):%B %Y}"


# The turn before row ``c``: the latest admitted memory of the same agent and
# session before ``c`` in the store's order, date then insertion (``seq``): a
# history imported with one date per session has every turn at the same
# instant, and its order is then the order it was written in. One definition
# for the context derived at write and for scoring neighbours at read;
# ``AFTER`` is its mirror, the turn after ``c``. PostgreSQL reads neighbours by the same definition
# (memory/postgres/search.py).
def _next_to(after: bool) -> str:
    """The turn next to row ``c`` (before it, or ``after``), as a scalar subquery to format."""
    reach, tie, order = (">=", "<=", "ASC") if after else ("<=", ">=", "DESC")
    return (
        "SELECT p.{column} FROM memories p WHERE p.source_session_id = {c}source_session_id "
        f"AND p.agent_id = {{c}}agent_id AND p.created_at {reach} {{c}}created_at "
        f"AND NOT (p.created_at = {{c}}created_at AND p.seq {tie} {{c}}seq) AND {{gate}} "
        f"ORDER BY p.created_at {order}, p.seq {order} LIMIT 1"
    )


BEFORE, AFTER = _next_to(False), _next_to(True)
# A row not yet written comes after every row: the seq it will get.
_NOT_YET = 9223372036854775807


def previous_turn(raw, entry: MemoryEntry) -> str | None:
    """The content of the turn before ``entry`` in its session, cut to PREVIOUS_CHARS."""
    if not entry.source_session_id:
        return None
    gate = admission("p")
    sql = (
        f"SELECT ({BEFORE.format(column='content', c='m.', gate=gate.sql)}) "
        "FROM (SELECT ? AS source_session_id, ? AS agent_id, ? AS created_at, "
        "coalesce((SELECT seq FROM memories WHERE id = ?), ?) AS seq) AS m"
    )
    row = raw.execute(
        sql, (*gate.params, entry.source_session_id, entry.agent_id, entry.created_at.timestamp(), entry.id, _NOT_YET)
    ).fetchone()
    return row[0][:PREVIOUS_CHARS] if row and row[0] is not None else None


def previous_ids(raw, ids: list[str], clause_sql: str, params: tuple) -> dict[str, str]:
    """For each of ``ids`` admitted by ``clause_sql`` (alias ``m``), the id of the turn before it."""
    gate = admission("p")
    before = BEFORE.format(column="id", c="m.", gate=gate.sql)
    sql = f"SELECT m.id, ({before}) FROM {listed('id')} WHERE m.source_session_id IS NOT NULL AND {clause_sql}"
    return {a: b for a, b in raw.execute(sql, (*gate.params, keys(ids), *params)) if b is not None}


def rederived(raw, sessions: Iterable[tuple[str, str]], purged: Iterable[str] = ()) -> list[tuple[str, int]]:
    """(context, seq) of each readable turn of ``sessions`` ((agent_id, session_id)) whose stored
    context is no longer the turn before it now: that turn was hidden, forgotten, purged or
    re-worded since. A turn no one can read is left as it is (its own restore re-derives it), unless
    its context is the text of a turn just purged (``purged``): a purge leaves no word in the file."""
    gate, readable = admission("p"), admission("m")
    before = BEFORE.format(column="content", c="m.", gate=gate.sql)
    sql = (
        f"SELECT m.seq, m.context, coalesce(substr(({before}), 1, {PREVIOUS_CHARS}), '') FROM memories m "
        f"WHERE m.source_session_id = ? AND m.agent_id = ? AND ({readable.sql} "
        "OR m.context IN (SELECT substr(value, 1, ?) FROM json_each(?)))"
    )
    erased = (PREVIOUS_CHARS, json.dumps(list(purged)))
    stale: list[tuple[str, int]] = []
    for agent_id, session_id in sessions:
        rows = raw.execute(sql, (*gate.params, session_id, agent_id, *readable.params, *erased))
        stale += [(new, seq) for seq, old, new in rows if old != new]
    return stale


def derive(raw, entry: MemoryEntry) -> dict[str, str]:
    """The derived, indexed columns of ``entry``: ``context`` (the turn before it) and ``dated``."""
    return {"context": previous_turn(raw, entry) or "", "dated": render_date(entry.created_at)}


def adjacent_ids(raw, ids: list[str], clause_sql: str, params: tuple) -> dict[str, list[str]]:
    """For each of ``ids`` admitted by ``clause_sql`` (alias ``m``), the ids of the turns before and after it."""
    gate = admission("p")
    before = BEFORE.format(column="id", c="m.", gate=gate.sql)
    after = AFTER.format(column="id", c="m.", gate=gate.sql)
    sql = f"SELECT m.id, ({before}), ({after}) FROM {listed('id')} WHERE m.source_session_id IS NOT NULL AND {clause_sql}"
    rows = raw.execute(sql, (*gate.params, *gate.params, keys(ids), *params))
    return {a: [n for n in (b, c) if n is not None] for a, b, c in rows}
