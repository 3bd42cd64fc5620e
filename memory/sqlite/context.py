"""The context a memory was said in, derived at write time from what the store holds.

A conversational turn ("Yeah, it was amazing!") often means nothing alone, and
a question about *when* ("in May 2023") has no word in common with the turn it
is about. So every memory is also indexed — keyword and vector, never returned
— with its date and, for a turn of a session (``source_session_id``), the
previous visible turn of that session. Derived in the write transaction, so
every writer (``arcana run``, ``remember``, bulk import, the library) gets it.
"""

from __future__ import annotations

from datetime import datetime

from memory.sqlite.admission import admission
from memory.types import MemoryEntry

PREVIOUS_CHARS = 300  # of the previous turn: enough to say what "it" was, within the model's window

# What the embedder sees for a row: its content, then the turn before it (so a
# long content is never cut in favour of its context by the model's window).
# The date is for the keyword index only: a shared date pulls every vector of a
# day together and measured worse for semantic recall.
EMBEDDED_TEXT_SQL = "content || CASE WHEN context = '' THEN '' ELSE char(10) || context END"


def render_date(when: datetime) -> str:
    """'8 May 2023 (Monday)': the words a question about that day or month uses."""
    return f"{when.day} {when:%B %Y} ({when:%A})"


def previous_turn(raw, entry: MemoryEntry) -> str | None:
    """The latest admitted memory of the same agent and session written before ``entry``."""
    if not entry.source_session_id:
        return None
    gate = admission("m")
    row = raw.execute(
        "SELECT m.content FROM memories m WHERE m.source_session_id = ? AND m.agent_id = ? AND m.id != ? "
        f"AND m.created_at <= ? AND {gate.sql} ORDER BY m.created_at DESC, m.seq DESC LIMIT 1",
        (entry.source_session_id, entry.agent_id, entry.id, entry.created_at.timestamp(), *gate.params),
    ).fetchone()
    return row[0][:PREVIOUS_CHARS] if row else None


def derive(raw, entry: MemoryEntry) -> dict[str, str]:
    """The derived, indexed columns of ``entry``: ``context`` (the turn before it) and ``dated``."""
    return {"context": previous_turn(raw, entry) or "", "dated": render_date(entry.created_at)}
