"""Which memories a capped prune removes first, in both engines: the least worth keeping.

In order, first to go:

1. what costs nothing to lose: a memory a live consolidated memory carries as a
   source (its content survives there; only SQLite keeps the edges), and one
   with no content words ("haha, yes!");
2. a derived memory (an echo, a summary) that is nobody's only record: none of
   the memories it carries is archived;
3. the rest by worth: importance, lifted by how often recall returned the
   memory (up to ACCESS_LIFT at ACCESS_SATURATION hits) and by how many
   memories it carries (up to CARRIES_LIFT at CARRIES_SATURATION); among
   equals the least recently used.

Under a byte budget, when the walk reaches the last tier and the bytes are
still over, digests are condensed first (:mod:`memory.sqlite.condense`, on
SQLite; the caller passes ``shorten``): the least worth first, only as much
as the budget needs. Only then is the only record of a fact archived.

A row cap and a byte budget (content bytes of live memories) take from one
order until both are met; with a byte budget, the last tier is ranked by worth
times content words per byte: what says the most in the fewest bytes (a
digest of the facts of five turns, a terse fact) outlives the chattiest. The engine reads the candidates
(:func:`candidates_sql`); each one's key is decided here, in Python, because "no
content words" is the consolidation's own test (:mod:`memory.sqlite.fact_words`);
SQLite then sorts the keys itself (:func:`staged_order`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from itertools import islice
from typing import NamedTuple

from memory.sqlite.admission import Dialect
from memory.sqlite.condense import DIGEST_SQL
from memory.sqlite.consolidation import SOURCES
from memory.sqlite.fact_words import content_words
from memory.sqlite.rows import UNREADABLE
from memory.types import DERIVED_TAG

ACCESS_LIFT, ACCESS_SATURATION = 0.1, 10
CARRIES_LIFT, CARRIES_SATURATION = 0.1, 5


class Candidate(NamedTuple):
    """A live, unpinned memory as the prune order sees it (the columns of :func:`candidates_sql`)."""

    id: str
    content: str
    derived: bool
    importance: float
    access_count: int
    used_at: object  # last access, else creation: comparable within one engine
    nbytes: int
    carries: int  # sources it carries
    covered: bool  # a live consolidated memory, not derived, carries it
    only_record: bool  # it carries a source that is archived
    digest: bool  # consolidation wrote it from its sources: prune may condense it


def _bytes(dialect: Dialect, col: str) -> str:
    return f"length(CAST({col} AS BLOB))" if dialect.name == "sqlite" else f"octet_length({col})"


def candidates_sql(dialect: Dialect) -> tuple[str, tuple]:
    """``(sql, params)`` selecting every live, unpinned memory as a :class:`Candidate` row."""
    derived = dialect.has_tag.format(col="tags")
    if dialect.name == "sqlite":  # the consolidation edges
        carries = (f"(SELECT count(*) FROM memory_edges e WHERE e.src_id = memories.id "
                   f"AND e.relation = '{SOURCES}')")
        # "+c.archived": from the edge to its carrier by id; on the archived column the planner would
        # walk every live row for each candidate (a 100k-row prune ran for over ten minutes).
        covered = (f"EXISTS (SELECT 1 FROM memory_edges e JOIN memories c ON c.id = e.src_id "
                   f"WHERE e.dst_id = memories.id AND e.relation = '{SOURCES}' AND +c.archived = 0 "
                   f"AND NOT {dialect.has_tag.format(col='c.tags')})")
        only = (f"EXISTS (SELECT 1 FROM memory_edges e JOIN memories s ON s.id = e.dst_id "
                f"WHERE e.src_id = memories.id AND e.relation = '{SOURCES}' AND +s.archived != 0)")
        params: tuple = (DERIVED_TAG, DERIVED_TAG)
        digest = DIGEST_SQL
        # A row an outside edit left unreadable (a time as text failed the sort, a traceback) has no place
        # in the order: prune leaves it be, as reads do; doctor names it.
        timed = f" AND NOT {UNREADABLE}"
    else:
        carries, covered, only, digest, params, timed = "0", "FALSE", "FALSE", "FALSE", (DERIVED_TAG,), ""
    sql = (f"SELECT id, content, {derived}, importance, access_count, coalesce(last_accessed_at, created_at), "
           f"{_bytes(dialect, 'content')}, {carries}, {covered}, {only}, {digest} "
           f"FROM memories WHERE archived = 0 AND pinned = 0{timed}")
    return sql, params


def totals_sql(dialect: Dialect) -> str:
    """``(rows, content bytes)`` of every live memory, pinned ones included: what a budget counts."""
    return f"SELECT count(*), coalesce(sum({_bytes(dialect, 'content')}), 0) FROM memories WHERE archived = 0"


LAST_TIER = 2  # the only records of facts: what a byte budget condenses digests to spare


def _tier(c: Candidate) -> int:
    if c.covered or not content_words(c.content):
        return 0
    return 1 if c.derived and not c.only_record else LAST_TIER


def _worth(c: Candidate) -> float:
    return (c.importance + ACCESS_LIFT * min(c.access_count, ACCESS_SATURATION) / ACCESS_SATURATION
            + CARRIES_LIFT * min(c.carries, CARRIES_SATURATION) / CARRIES_SATURATION)


def _worth_per_byte(c: Candidate) -> float:
    """Under a byte budget: worth for each content word it holds, per byte; a consolidated memory
    holds its words once for each source it is the record of."""
    return _worth(c) * len(content_words(c.content)) * max(1, c.carries) / max(1, c.nbytes)


class Key(NamedTuple):
    """A candidate's place in the order (its fields sort in turn), then all else prune keeps of a row:
    a million live rows' contents are never held at once."""

    tier: int
    worth: float
    used_at: object
    id: str
    nbytes: int
    digest: bool


def sort_key(row: tuple, by_bytes: bool) -> Key:
    """A :func:`candidates_sql` row's :class:`Key`."""
    c = Candidate(*row)
    return Key(_tier(c), (_worth_per_byte if by_bytes else _worth)(c), c.used_at, c.id, c.nbytes, c.digest)


Shorten = Callable[[list[tuple[str, int]], int], dict[str, int]]
"""``shorten(digests, excess)``: condense ``digests`` ((id, bytes), least worth first) to save
``excess`` bytes; the new size of each one it rewrote."""


def overflow(ordered: Iterable[Key], totals: tuple[int, int], max_entries: int | None, max_bytes: int | None,
             shorten: Shorten | None = None,
             last_digests: Callable[[], list[tuple[str, int]]] | None = None) -> list[str]:
    """The ids to remove from ``ordered`` (the keys, sorted: least worth first), until ``totals``
    (rows, bytes) meet both budgets; ``shorten`` is asked once, as the walk reaches the last tier,
    for the bytes still over, with ``last_digests()``: that tier's digests as (id, bytes), in order."""
    count, nbytes = totals
    victims: list[str] = []
    sizes: dict[str, int] = {}
    for key in ordered:
        if key.tier == LAST_TIER and shorten is not None and max_bytes is not None and nbytes > max_bytes:
            digests = last_digests()
            sizes = shorten(digests, nbytes - max_bytes)
            nbytes -= sum(size - sizes[mid] for mid, size in digests if mid in sizes)
            shorten = None
        if (max_entries is None or count <= max_entries) and (max_bytes is None or nbytes <= max_bytes):
            break
        victims.append(key.id)
        count, nbytes = count - 1, nbytes - sizes.get(key.id, key.nbytes)
    return victims


STAGE_TABLE = "prune_order_keys"  # both engines sort the keys in a temporary table of this name
STAGE_PAGE = 2_000


@contextmanager
def staged_order(raw, read: Callable[[], Iterable[tuple]], by_bytes: bool) -> Iterator[tuple[Iterator[Key], Callable]]:
    """SQLite: the :func:`candidates_sql` rows ``read()`` gives, as :class:`Key` s least worth first,
    and the ``last_digests`` :func:`overflow` asks for, sorted by SQLite in a TEMP table (spilled to
    disk past the cache), so a million rows' keys are never held in Python at once (about 300 bytes
    a row were). Columns without a type keep each value as Python gave it, and TEXT compares as
    Python's ``str`` does, so the order is the one ``sorted`` gives. The table is made before
    ``read()`` starts (a schema change would abort a statement in progress) and dropped after."""
    raw.execute(f"CREATE TEMP TABLE IF NOT EXISTS {STAGE_TABLE} (tier, worth, used_at, id, nbytes, digest)")
    cursor = None
    try:
        insert = f"INSERT INTO temp.{STAGE_TABLE} VALUES (?, ?, ?, ?, ?, ?)"
        rows = iter(read())
        while page := [sort_key(row, by_bytes) for row in islice(rows, STAGE_PAGE)]:
            raw.executemany(insert, page)
        order = " ORDER BY tier, worth, used_at, id"
        cursor = raw.execute(f"SELECT * FROM temp.{STAGE_TABLE}{order}")

        def last_digests() -> list[tuple[str, int]]:
            sql = f"SELECT id, nbytes FROM temp.{STAGE_TABLE} WHERE tier = ? AND digest{order}"
            return [(mid, size) for mid, size in raw.execute(sql, (LAST_TIER,))]

        yield (Key(*r) for r in cursor), last_digests
    finally:
        if cursor is not None:
            cursor.close()  # an unfinished read would keep the table from being dropped
        raw.execute(f"DROP TABLE IF EXISTS temp.{STAGE_TABLE}")
