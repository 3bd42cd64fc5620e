"""The admission predicate for PostgreSQL: memory/sqlite/admission.py's one
definition, rendered with PostgreSQL's spellings and ``$n`` placeholders."""

from __future__ import annotations

import re

from memory.sqlite.admission import POSTGRES, Clause, admission
from memory.sqlite.admission import where as _where
from memory.types import Audience, MemoryQuery

_MARK = re.compile(r"\?")


def numbered(sql: str, start: int = 1) -> str:
    """``?`` placeholders as ``$start, $start+1, ...`` (clauses never contain a literal ``?``)."""
    counter = iter(range(start, start + sql.count("?") + 1))
    return _MARK.sub(lambda _: f"${next(counter)}", sql)


def where(
    query: MemoryQuery,
    alias: str = "m",
    *,
    audience: Audience = Audience.RECALL,
    include_archived: bool = False,
    start: int = 1,
) -> Clause:
    """Admission AND the query's filters, numbered from ``$start``."""
    clause = _where(query, alias, audience=audience, include_archived=include_archived, dialect=POSTGRES)
    return Clause(numbered(clause.sql, start), clause.params)


def gate(alias: str, start: int) -> Clause:
    """The admission predicate alone for ``alias`` (a neighbouring row, no query filters), numbered from ``$start``."""
    clause = admission(alias, dialect=POSTGRES)
    return Clause(numbered(clause.sql, start), clause.params)
