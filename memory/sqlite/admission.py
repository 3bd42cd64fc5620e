"""The one admission predicate every read path filters through.

Recall, search, context building and export all call :func:`admission`; a read
path that forgot it would have to build SQL by hand, which the tests forbid.
Operator reads (``arcana memory show``, ``list --all``) pass an explicit
:class:`Audience` to see private, hidden, archived or superseded rows.

Recall and listings see current versions only: not superseded (``valid_to``
unset). With an ``as_of`` time they see what was current then.

This is the one definition for every engine: a :class:`Dialect` supplies the
few spellings that differ (an always-true expression, tag membership), and
clauses always use ``?`` placeholders, which the PostgreSQL store renumbers
(memory/postgres/admission.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from memory.types import Audience, MemoryQuery, MemoryType, Visibility


@dataclass(frozen=True)
class Dialect:
    """The spellings that differ between engines; ``has_tag`` takes the tags column as ``{col}``."""

    name: str
    true: str
    has_tag: str
    # At ``as_of``, whether a row consolidation archived (``{alias}``) still answered then (one ``?``: the
    # time); None where nothing is consolidated.
    consolidated_after: str | None = None
    # Whether row ``{alias}`` is a digest of episodes (so ``--type episodic`` finds what it carries); None
    # where nothing is consolidated.
    digest: str | None = None
    # The rows row ``{alias}`` consolidated and still answers for (``source``, to which a condition is
    # appended); None where nothing is consolidated.
    consolidated_sources: str | None = None


# ``archived`` values: 0 live; 1 archived by an operator or prune; 2 by consolidation (its content lives on in a
# merge or digest, so it still answers for a time before that).
CONSOLIDATED = 2
SOURCES = "consolidates"  # edge relation: consolidated memory -> a source whose content it carries

DIGEST_LINK = "digest"
"""The ``source`` of a digest's ``consolidates`` edges: what makes it a digest, and travels with its
sources through export and import (a merge's keeper also carries sources, but its text is its own)."""

QUOTED_LINK = "quoted"
"""The ``source`` of the edges from an agent's claim to the memories it repeats after being shown them
(:class:`memory.runtime.sessions.ShownMemories`): an edit of such a memory reaches the claim, but the
claim absorbed nothing, so what withdraws it never reaches them as a merge's restatements."""


def digest_sql(alias: str) -> str:
    """Whether row ``alias`` is a digest consolidation wrote: its edges say so (:data:`DIGEST_LINK`),
    or, for one written before they did, its ledger's ``consolidate`` insert. The ledger alone was
    lost by export and import: an imported digest was walked, merged and archived as a plain fact."""
    return (f"(EXISTS (SELECT 1 FROM memory_edges d WHERE d.src_id = {alias}.id AND d.relation = '{SOURCES}' "
            f"AND d.source = '{DIGEST_LINK}') OR EXISTS (SELECT 1 FROM memory_ledger l WHERE l.memory_id = {alias}.id "
            "AND l.op = 'consolidate' AND l.before IS NULL))")


_CARRIERS = (
    "FROM memory_edges carried JOIN memories carrier ON carrier.id = carried.src_id "
    f"WHERE carried.dst_id = {{alias}}.id AND carried.relation = '{SOURCES}'"
)
# A tags cell an outside edit left as invalid JSON holds no tag: json_each would fail the whole
# statement ('malformed JSON'), so one row would take down every read and prune of its store.
# A source answers for its carrier only while no carrier is withheld (hidden, private, or archived by
# an operator or prune): what an operator withheld stays so at every time, even in the words of a
# turn the digest archived that says more than it (so the hide did not reach it).
SQLITE = Dialect(
    "sqlite", "1", "EXISTS (SELECT 1 FROM json_each(CASE WHEN json_valid({col}) THEN {col} END) WHERE value = ?)",
    f"{{alias}}.archived = {CONSOLIDATED} AND (SELECT min(coalesce(carrier.valid_from, carrier.created_at)) "
    f"{_CARRIERS}) > ? AND NOT EXISTS (SELECT 1 {_CARRIERS} "
    f"AND (carrier.visibility != '{Visibility.VISIBLE.value}' OR carrier.archived = 1))",
    digest_sql("{alias}"),
    f"SELECT 1 FROM memory_edges said JOIN memories source ON source.id = said.dst_id WHERE said.src_id = {{alias}}.id "
    f"AND said.relation = '{SOURCES}' AND source.archived = {CONSOLIDATED}",
)
# tags is JSON text on both engines; jsonb containment, never the jsonb ``?`` operator
# (it would read as a placeholder); through arcana_tags (memory/postgres/migrations.py, v10): invalid
# JSON holds no tag there either.
POSTGRES = Dialect("postgres", "TRUE", "arcana_tags({col}) @> jsonb_build_array(?::text)")


@dataclass(frozen=True)
class Clause:
    sql: str
    params: tuple


def current_version(alias: str = "m", as_of: datetime | None = None) -> Clause:
    """The version that answers now (or at ``as_of``): valid then and not yet superseded.

    At ``as_of`` a row must also have been written by then, so a later fact
    never answers for an earlier time. A claim held beside a user-confirmed
    fact (``conflict_with``) is a current version too, marked; the query's
    ``exclude_conflicts`` filter is what drops it.
    """
    if as_of is None:
        return Clause(f"{alias}.valid_to IS NULL", ())
    at = as_of.timestamp()
    return Clause(
        f"coalesce({alias}.valid_from, {alias}.created_at) <= ? AND {alias}.created_at <= ? "
        f"AND ({alias}.valid_to IS NULL OR {alias}.valid_to > ?)",
        (at, at, at),
    )


def admission(
    alias: str = "m",
    *,
    audience: Audience = Audience.RECALL,
    include_archived: bool = False,
    as_of: datetime | None = None,
    dialect: Dialect = SQLITE,
) -> Clause:
    """The SQL that decides whether a row may be read at all."""
    if audience in (Audience.RECALL, Audience.LISTING):
        version = current_version(alias, as_of)
        live = Clause("", ()) if audience is Audience.LISTING and include_archived else _live(alias, as_of, dialect)
        return Clause(
            f"{alias}.visibility = ?{live.sql} AND {version.sql}", (Visibility.VISIBLE.value, *live.params, *version.params)
        )
    if audience is Audience.HISTORY:  # every version, but never a private or hidden one
        archived = "" if include_archived else f" AND {alias}.archived = 0"
        return Clause(f"{alias}.visibility = ?{archived}", (Visibility.VISIBLE.value,))
    if include_archived:
        return Clause(dialect.true, ())
    return Clause(f"{alias}.archived = 0", ())


def _live(alias: str, as_of: datetime | None, dialect: Dialect) -> Clause:
    """Not archived (an AND-ed clause); at ``as_of``, also a source consolidation archived whose
    carriers (the merge or digest holding it now) all began to hold after that time: it answered then,
    and nothing else carried it yet."""
    if as_of is None or dialect.consolidated_after is None:
        return Clause(f" AND {alias}.archived = 0", ())
    return Clause(f" AND ({alias}.archived = 0 OR {dialect.consolidated_after.format(alias=alias)})", (as_of.timestamp(),))


def query_filters(query: MemoryQuery, alias: str = "m", dialect: Dialect = SQLITE) -> Clause:
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
        typed = f"{alias}.type IN ({','.join('?' * len(query.types))})"
        # A digest (a semantic memory) carries the episodes it archived: `--type episodic` still finds them.
        if MemoryType.EPISODIC in query.types and dialect.digest is not None:
            typed = f"({typed} OR ({alias}.type = '{MemoryType.SEMANTIC.value}' AND {dialect.digest.format(alias=alias)}))"
        parts.append(typed)
        params.extend(t.value for t in query.types)
    for tag in query.tags or ():
        if "\x00" in tag:  # no stored tag holds a NUL (memory.limits.nul_field); PostgreSQL refuses it as a parameter
            parts.append(f"NOT {dialect.true}")
            continue
        parts.append(dialect.has_tag.format(col=f"{alias}.tags"))
        params.append(tag)
    if query.min_confidence is not None:
        parts.append(f"{alias}.confidence >= ?")
        params.append(query.min_confidence)
    if query.since is not None or query.until is not None:
        said = _said_within(query, alias, dialect)
        parts.append(said.sql)
        params.extend(said.params)
    if query.exclude_conflicts:
        parts.append(f"{alias}.conflict_with IS NULL AND {alias}.superseded_by IS NULL")
    return Clause(" AND ".join(parts) or dialect.true, tuple(params))


def _said_within(query: MemoryQuery, alias: str, dialect: Dialect) -> Clause:
    """Whether row ``alias`` was said between ``since`` and ``until``, or one of the sources it consolidated
    was (said by ``as_of``, if given): a merge keeps its keeper's ``created_at``, so "I like tea" said
    yesterday and merged into an older "I like tea with milk" answered no ``--since 7d`` at all."""
    bounds = [(op, at.timestamp()) for op, at in ((">=", query.since), ("<=", query.until)) if at is not None]

    def window(column: str) -> str:
        return " AND ".join(f"{column} {op} ?" for op, _ in bounds)

    own = Clause(window(f"{alias}.created_at"), tuple(at for _, at in bounds))
    if dialect.consolidated_sources is None:
        return own
    said_then = "" if query.as_of is None else " AND source.created_at <= ?"
    sources = (f"EXISTS ({dialect.consolidated_sources.format(alias=alias)}{said_then} "
               f"AND {window('source.created_at')})")
    then = () if query.as_of is None else (query.as_of.timestamp(),)
    return Clause(f"(({own.sql}) OR {sources})", own.params + then + own.params)


def where(
    query: MemoryQuery,
    alias: str = "m",
    *,
    audience: Audience = Audience.RECALL,
    include_archived: bool = False,
    dialect: Dialect = SQLITE,
) -> Clause:
    """Admission AND the query's filters: the WHERE body of every read."""
    gate = admission(alias, audience=audience, include_archived=include_archived, as_of=query.as_of, dialect=dialect)
    filters = query_filters(query, alias, dialect)
    return Clause(f"({gate.sql}) AND ({filters.sql})", gate.params + filters.params)
