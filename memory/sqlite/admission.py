"""The one admission predicate every read path filters through.

Recall, search, context building and export all call :func:`admission`; a read
path that forgot it would have to build SQL by hand, which the tests forbid.
Operator reads (``arcana memory show``, ``list --all``) pass an explicit
:class:`Audience` to see private, hidden, archived or superseded rows.

Recall and listings see current versions only: not superseded (``valid_to``
unset) and not an unconfirmed claim held beside the fact it contradicts
(``conflict_with``). With an ``as_of`` time they see what was current then.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import Enum

from memory.types import MemoryQuery, Visibility


class Audience(Enum):
    """Who is reading."""

    RECALL = "recall"  # anything that can reach an agent or a prompt
    OPERATOR = "operator"  # a human inspecting the store on purpose
    LISTING = "listing"  # a human listing what recall may see (archived on request); not a recall hit


@dataclass(frozen=True)
class Clause:
    sql: str
    params: tuple


def current_version(alias: str = "m", as_of: datetime | None = None) -> Clause:
    """The version that answers now (or at ``as_of``): valid then, not yet superseded, not a held conflict.

    At ``as_of`` a row must also have been written by then, so a later fact
    never answers for an earlier time.
    """
    held = f"{alias}.conflict_with IS NULL"
    if as_of is None:
        return Clause(f"{alias}.valid_to IS NULL AND {held}", ())
    at = as_of.timestamp()
    return Clause(
        f"coalesce({alias}.valid_from, {alias}.created_at) <= ? AND {alias}.created_at <= ? "
        f"AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?) AND {held}",
        (at, at, at),
    )


def admission(
    alias: str = "m",
    *,
    audience: Audience = Audience.RECALL,
    include_archived: bool = False,
    as_of: datetime | None = None,
) -> Clause:
    """The SQL that decides whether a row may be read at all."""
    if audience is Audience.RECALL:
        version = current_version(alias, as_of)
        return Clause(
            f"{alias}.visibility = ? AND {alias}.archived = 0 AND {version.sql}",
            (Visibility.VISIBLE.value, *version.params),
        )
    if audience is Audience.LISTING:
        version = current_version(alias, as_of)
        archived = "" if include_archived else f" AND {alias}.archived = 0"
        return Clause(f"{alias}.visibility = ?{archived} AND {version.sql}", (Visibility.VISIBLE.value, *version.params))
    if include_archived:
        return Clause("1", ())
    return Clause(f"{alias}.archived = 0", ())


def query_filters(query: MemoryQuery, alias: str = "m") -> Clause:
    """The metadata filters of a query, AND-ed; always a valid expression."""
    parts: list[str] = []
    params: list = []
    if query.agent_id:
        parts.append(f"{alias}.agent_id = ?")
        params.append(query.agent_id)
    if query.scope is not None:
        parts.append(f"{alias}.scope = ?")
        params.append(query.scope.value)
    if query.pool_name is not None:
        parts.append(f"{alias}.pool_name = ?")
        params.append(query.pool_name)
    if query.types:
        parts.append(f"{alias}.type IN ({','.join('?' * len(query.types))})")
        params.extend(t.value for t in query.types)
    for tag in query.tags or ():
        parts.append(f"EXISTS (SELECT 1 FROM json_each({alias}.tags) WHERE value = ?)")
        params.append(tag)
    if query.min_confidence is not None:
        parts.append(f"{alias}.confidence >= ?")
        params.append(query.min_confidence)
    if query.since is not None:
        parts.append(f"{alias}.created_at >= ?")
        params.append(query.since.timestamp())
    if query.until is not None:
        parts.append(f"{alias}.created_at <= ?")
        params.append(query.until.timestamp())
    if query.exclude_conflicts:
        parts.append(f"{alias}.conflict_with IS NULL AND {alias}.superseded_by IS NULL")
    return Clause(" AND ".join(parts) or "1", tuple(params))


def where(
    query: MemoryQuery,
    alias: str = "m",
    *,
    audience: Audience = Audience.RECALL,
    include_archived: bool = False,
) -> Clause:
    """Admission AND the query's filters: the WHERE body of every read."""
    gate = admission(alias, audience=audience, include_archived=include_archived, as_of=query.as_of)
    filters = query_filters(query, alias)
    return Clause(f"({gate.sql}) AND ({filters.sql})", gate.params + filters.params)
