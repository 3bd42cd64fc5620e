"""Version chains and open conflicts, read through the one admission predicate on either engine.

A chain is walked with one recursive query (``supersedes`` back and
``superseded_by`` forward from the start row) and only then filtered by
:func:`memory.sqlite.admission.admission`: links are followed through rows
the reader may not see, so a hidden middle version does not cut the chain,
but such a row is never returned. A cycle (only a crafted import can make
one) stops after :data:`MAX_LINKS` links each way and every id comes back
once. The SQL uses ``?`` placeholders; PostgreSQL renumbers them
(memory/postgres/admission.py), as for every other read.
"""

from __future__ import annotations

from collections.abc import Iterable

from memory.sqlite.admission import SQLITE, Clause, Dialect, admission, current_version
from memory.sqlite.fts import any_word_match
from memory.types import PRUNE_ACTOR, Audience, Visibility

MAX_LINKS = 1000

_CHAIN = f"""
WITH RECURSIVE
back(id, depth) AS (
    SELECT CAST(? AS TEXT), 0
    UNION ALL
    SELECT m.supersedes, back.depth - 1 FROM back JOIN memories m ON m.id = back.id
    WHERE m.supersedes IS NOT NULL AND back.depth > -{MAX_LINKS}
),
fwd(id, depth) AS (
    SELECT CAST(? AS TEXT), 0
    UNION ALL
    SELECT m.superseded_by, fwd.depth + 1 FROM fwd JOIN memories m ON m.id = fwd.id
    WHERE m.superseded_by IS NOT NULL AND fwd.depth < {MAX_LINKS}
),
walk(id, depth) AS (SELECT id, depth FROM back UNION ALL SELECT id, depth FROM fwd)
SELECT {{columns}} FROM (SELECT id, min(depth) AS depth FROM walk GROUP BY id) AS c
JOIN memories m ON m.id = c.id WHERE {{gate}} ORDER BY c.depth
"""


def chain(
    entry_id: str, columns: str, *, audience: Audience, include_archived: bool, dialect: Dialect = SQLITE
) -> Clause:
    """The query for the chain through ``entry_id``, oldest first, as ``audience`` may see it."""
    gate = admission("m", audience=audience, include_archived=include_archived, dialect=dialect)
    return Clause(_CHAIN.format(columns=columns, gate=gate.sql), (entry_id, entry_id, *gate.params))


def held_beside(entry_id: str, columns: str, dialect: Dialect = SQLITE) -> Clause:
    """The query for the claims held beside ``entry_id`` (``conflict_with`` names it), any visibility,
    archived too: what an operator's edit of that fact may reach."""
    gate = admission("m", audience=Audience.OPERATOR, include_archived=True, dialect=dialect)
    return Clause(f"SELECT {columns} FROM memories m WHERE m.conflict_with = ? AND {gate.sql}", (entry_id, *gate.params))


def withheld(words: Iterable[str] | None, columns: str, dialect: Dialect = SQLITE) -> Clause:
    """The query for the rows an operator withheld holding any of the content ``words`` (the keyword
    index finds them: a superset of those saying nothing else), any version: hidden, private, or
    forgotten; every such row when ``words`` is None. Not one prune archived (its newest ledger row is
    prune's: an agent saying its words again makes them worth keeping), nor one consolidation archived
    (it answers in its carrier). What an agent's claim repeating one is stored as
    (:func:`memory.operator.edits.withheld_repeated`). On PostgreSQL every such row: its text search
    stems words and drops stop words, so it is no superset of the rows saying them (an operator's
    withheld rows are few)."""
    if dialect is not SQLITE:
        words = None
    gate = admission("m", audience=Audience.OPERATOR, include_archived=True, dialect=dialect)
    pruned = ("coalesce((SELECT l.actor FROM memory_ledger l WHERE l.memory_id = m.id ORDER BY l.seq DESC LIMIT 1), '') "
              f"LIKE '%{PRUNE_ACTOR}'")
    condition = f"(m.visibility != ? OR (m.archived = 1 AND NOT {pruned})) AND {gate.sql}"
    if words is None:
        return Clause(f"SELECT {columns} FROM memories m WHERE {condition}", (Visibility.VISIBLE.value, *gate.params))
    return Clause(
        f"SELECT {columns} FROM memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid "
        f"WHERE memories_fts MATCH ? AND {condition}",
        (any_word_match(sorted(words)), Visibility.VISIBLE.value, *gate.params),
    )


def open_conflicts(dialect: Dialect = SQLITE) -> Clause:
    """Count of the claims held beside a user-confirmed fact, as ``memory list --all`` shows them:
    any visibility, not archived, still current."""
    gate = admission("m", audience=Audience.OPERATOR, dialect=dialect)
    return Clause(
        f"SELECT count(*) FROM memories m WHERE {gate.sql} AND m.conflict_with IS NOT NULL AND {current_version().sql}",
        gate.params,
    )
