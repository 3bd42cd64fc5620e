"""Which memories a capped prune removes first, in both engines: the least worth keeping.

Worth, lowest first: a derived memory (an echo, a summary) before any fact;
then importance, lifted by how often recall returned the memory (up to
ACCESS_LIFT at ACCESS_SATURATION hits) and by how many memories it carries (a
consolidated memory's sources, up to CARRIES_LIFT at CARRIES_SATURATION, where
the engine keeps edges: SQLite); then the least recently used.
"""

from __future__ import annotations

from memory.sqlite.admission import Dialect
from memory.sqlite.consolidation import SOURCES

ACCESS_LIFT, ACCESS_SATURATION = 0.1, 10
CARRIES_LIFT, CARRIES_SATURATION = 0.1, 5


def overflow_sql(dialect: Dialect) -> str:
    """``SELECT id`` of the live, unpinned memories beyond a cap, least worth first.

    Parameters, in order: the derived tag, then the cap (``?`` marks; PostgreSQL numbers them).
    """
    least = "min" if dialect.name == "sqlite" else "least"
    worth = f"importance + {ACCESS_LIFT} * {least}(access_count, {ACCESS_SATURATION}) / {ACCESS_SATURATION}.0"
    if dialect.name == "sqlite":
        carried = (f"(SELECT {least}(count(*), {CARRIES_SATURATION}) FROM memory_edges e "
                   f"WHERE e.src_id = memories.id AND e.relation = '{SOURCES}')")
        worth += f" + {CARRIES_LIFT} * {carried} / {CARRIES_SATURATION}.0"
    cap = "max" if dialect.name == "sqlite" else "greatest"
    return (
        "SELECT id FROM memories WHERE archived = 0 AND pinned = 0 "
        f"ORDER BY {dialect.has_tag.format(col='tags')} DESC, {worth} ASC, "
        "coalesce(last_accessed_at, created_at) ASC "
        f"LIMIT {cap}(0, (SELECT count(*) FROM memories WHERE archived = 0) - ?)"
    )
