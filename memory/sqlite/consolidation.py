"""The SQL behind consolidation: old episodes in digest order, current memories page by page with the
rows that could restate each, the ``consolidates`` edges from a consolidated memory (or a session
summary) to the memories whose content it carries, and the derived memories prune takes with
their sources.

Reads here are the operator's (every current row, whatever its visibility, as
prune sees them); what consolidation makes of hidden or private rows is
decided above, never widened (:mod:`memory.consolidation.plan`).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from memory.sqlite import mutations
from memory.sqlite.admission import CONSOLIDATED, DIGEST_LINK, QUOTED_LINK, SOURCES, SQLITE, digest_sql
from memory.sqlite.batches import select_in
from memory.sqlite.connection import transaction
from memory.sqlite.fts import every_word_match
from memory.sqlite.rows import SELECT_COLUMNS, entry_or_none, tags_text
from memory.sqlite.vectors import read_meta, table_exists
from memory.types import DERIVED_TAG, MemoryEntry, Visibility

_CURRENT = "m.archived = 0 AND m.valid_to IS NULL"
# What consolidation leaves alone: a pinned memory, and a claim held beside a user's fact (an open
# conflict: archived into a restatement, or taking one in, it closed with no operator deciding).
_LEFT_ALONE = "m.pinned = 0 AND m.conflict_with IS NULL"
# A digest gathers one session's turns: its id, or for a turn with none the day it was said.
_SESSION = "COALESCE(m.source_session_id, date(m.created_at, 'unixepoch'))"
_STAGE = "temp.consolidation_order"
# What a dry run digested: the merge walk passes over it as a real run would (there it is archived).
_SKIP = "temp.consolidation_skip"
_UNSKIPPED = f"m.id NOT IN (SELECT id FROM {_SKIP})"


def current_extent(raw) -> tuple[int, int]:
    """(how many current rows, the highest seq now): the merge walk stops at the rows that were
    there when it began, so neither a digest it wrote nor a concurrent write joins it."""
    count = raw.execute(f"SELECT count(*) FROM memories m WHERE {_CURRENT}").fetchone()[0]
    return count, raw.execute("SELECT coalesce(max(seq), 0) FROM memories").fetchone()[0]


def stage_episodes(raw) -> int:
    """Line up every current episode not left alone in digest order (agent, scope, pool, visibility,
    session, time) in a TEMP table, beside an empty one of what a dry run sets aside; return how
    many. Only seqs are sorted, and a TEMP table is the connection's own, so a dry run writes
    nothing to the store and holds nothing in memory."""
    drop_stage(raw)
    raw.execute("CREATE TEMP TABLE consolidation_order (n INTEGER PRIMARY KEY, seq INTEGER NOT NULL, "
                "session TEXT NOT NULL)")
    raw.execute("CREATE TEMP TABLE consolidation_skip (id TEXT PRIMARY KEY) WITHOUT ROWID")
    raw.execute(
        f"INSERT INTO {_STAGE} (seq, session) SELECT m.seq, {_SESSION} FROM memories m "
        f"WHERE {_CURRENT} AND m.type = 'episodic' AND {_LEFT_ALONE} "
        f"ORDER BY m.agent_id, m.scope, m.pool_name, m.visibility, {_SESSION}, m.created_at, m.id"
    )
    return raw.execute(f"SELECT count(*) FROM {_STAGE}").fetchone()[0]


def staged_episodes(raw, after: int, limit: int) -> list[tuple[int, str, MemoryEntry]]:
    """The next ``limit`` staged episodes after position ``after``: (position, session key, entry)."""
    rows = raw.execute(
        f"SELECT o.n, o.session, {SELECT_COLUMNS} FROM {_STAGE} o JOIN memories m ON m.seq = o.seq "
        "WHERE o.n > ? ORDER BY o.n LIMIT ?",
        (after, limit),
    ).fetchall()
    return [(r[0], r[1], entry_or_none(r[2:])) for r in rows]  # None: unreadable, left out by the caller


def skip(raw, ids: Sequence[str]) -> None:
    """Set ``ids`` aside for the rest of a dry run (they were digested)."""
    raw.executemany(f"INSERT OR IGNORE INTO {_SKIP} (id) VALUES (?)", [(i,) for i in ids])


def drop_stage(raw) -> None:
    raw.execute(f"DROP TABLE IF EXISTS {_STAGE}")
    raw.execute(f"DROP TABLE IF EXISTS {_SKIP}")


def digests_among(raw, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` are digests (an export marks them, so the import's edges say so again)."""
    return {row[0] for row in select_in(raw, f"SELECT m.id FROM memories m WHERE {digest_sql('m')} "
                                             "AND m.id IN ({marks})", ids)}


def consolidated_among(raw, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` consolidation archived (an export marks them, so in the store they are imported
    into they still answer ``--as-of`` a time before what carries them, unlike an operator's archive)."""
    return {row[0] for row in select_in(raw, f"SELECT id FROM memories WHERE archived = {CONSOLIDATED} "
                                             "AND id IN ({marks})", ids)}


def mark_consolidated(raw, ids: Sequence[str], actor: str) -> None:
    """Archive ``ids``, rows an import just wrote archived, as consolidation's (inside the caller's transaction)."""
    if ids:
        mutations.update(raw, ids, "import", actor, f"archived = {CONSOLIDATED}")


# A digest never merges: the walk that wrote it cannot see it (nor can a dry run), so a fact it
# restates merged into it on the next run, and a second run was never a no-op.
# The ledger is asked only of a row that carries sources (the primary key's src_id prefix): asked of
# every row, it made the walk 6x slower (3.1 s against 0.5 s over 200,000 rows).
_NO_DIGEST = (f"NOT (EXISTS (SELECT 1 FROM memory_edges e WHERE e.src_id = m.id AND e.relation = '{SOURCES}') "
              f"AND {digest_sql('m')})")
# The rows the merge walk takes, a page at a time: current, not left alone, not set aside, there when it began,
# no digest.
# Unary + keeps the archived/pinned index out: through it each page sorted every live row (1.5 s a
# page at a million rows); by seq a page reads only itself.
_WALKED = (f"m.seq > ? AND m.seq <= ? AND +m.archived = 0 AND m.valid_to IS NULL AND +m.pinned = 0 "
           f"AND m.conflict_with IS NULL AND {_UNSKIPPED} "
           f"AND {_NO_DIGEST} ORDER BY m.seq LIMIT ?")


def unpinned_page(raw, after_seq: int, upto: int, limit: int) -> list[tuple[int, MemoryEntry, list[float] | None]]:
    """Up to ``limit`` walked rows with ``after_seq < seq <= upto``, with their stored vectors."""
    rows = raw.execute(f"SELECT m.seq, {SELECT_COLUMNS} FROM memories m WHERE {_WALKED}", (after_seq, upto, limit)).fetchall()
    vectors = vectors_of(raw, [r[0] for r in rows])
    return [(r[0], entry_or_none(r[1:]), vectors.get(r[0])) for r in rows]  # None: unreadable, left out by the caller


def unpinned_contents(raw, after_seq: int, upto: int, limit: int) -> list[tuple[int, str]]:
    """The same rows as :func:`unpinned_page`, ``(seq, content)`` only: counting words reads no more."""
    return raw.execute(f"SELECT m.seq, m.content FROM memories m WHERE {_WALKED}", (after_seq, upto, limit)).fetchall()


def vectors_of(raw, seqs: Sequence[int]) -> dict[int, list[float]]:
    """The stored vectors of ``seqs`` (none for a store without a vector index)."""
    meta = read_meta(raw)
    if not seqs or meta is None or not table_exists(raw, meta.vec_table):
        return {}
    sql = f"SELECT rowid, embedding FROM {meta.vec_table} WHERE rowid IN ({{marks}})"
    return {seq: list(struct.unpack(f"{len(blob) // 4}f", blob)) for seq, blob in select_in(raw, sql, seqs)}


# CROSS JOIN keeps the index as the outer loop: a plain join let the planner walk the agent's rows
# and run the MATCH once per row (14 s against 0.02 s on one conversation's store).
_CARRIERS = (
    "SELECT m.seq, m.content FROM memories_fts CROSS JOIN memories m ON m.seq = memories_fts.rowid "
    f"WHERE memories_fts MATCH ? AND m.seq <= ? AND m.seq != ? AND {_CURRENT} AND {_LEFT_ALONE} AND {_UNSKIPPED} "
    f"AND {_NO_DIGEST} AND m.agent_id = ? AND m.scope = ? AND m.pool_name IS ? AND m.visibility = ? AND m.type = ? LIMIT ?"
)


def carrier_rows(
    raw, asks: Sequence[tuple[int, MemoryEntry, Sequence[str], int]], upto: int, cap: int
) -> dict[int, list[tuple[int, str]]]:
    """For each ask ``(seq, entry, words, first)``, ``words`` rarest first: the other current
    rows (seq <= ``upto``) of the entry's agent, scope, pool, visibility and type, not left alone
    nor set aside, that hold the fewest of its rarest words (``first`` of them or more) that leave at most ``cap`` of them, as
    ``(seq, content)``; when even every word leaves more, the first ``cap`` in store order.

    The keyword index finds them (a superset of what carries the entry's words: the caller
    checks), so no pair of rows is ever compared blind. Unranked on purpose: bm25 reads every
    asked word's whole posting list (5.7 ms a lookup at a million rows, 0.27 ms this way)."""
    found = {}
    for seq, entry, words, first in asks:
        for asked in range(first, len(words) + 1):
            params = (every_word_match(words[:asked]), upto, seq, entry.agent_id, entry.scope.value,
                      entry.pool_name, entry.visibility.value, entry.type.value, cap + 1)
            rows = raw.execute(_CARRIERS, params).fetchall()
            if len(rows) <= cap:
                break
        found[seq] = rows[:cap]
    return found


def unembedded_digests(raw) -> list[str]:
    """The current digests without a vector in the store's index: a run killed between a batch's
    transaction and its embedding (or whose embedder failed) left them, and no run writes them again."""
    meta = read_meta(raw)
    if meta is None or not table_exists(raw, meta.vec_table):
        return []  # no index yet: nothing is embedded, and the first embedding write or reindex fills it
    return [row[0] for row in raw.execute(
        f"SELECT DISTINCT m.id FROM memory_edges e JOIN memories m ON m.id = e.src_id WHERE e.relation = '{SOURCES}' "
        f"AND e.source = '{DIGEST_LINK}' AND m.archived = 0 AND m.valid_to IS NULL "
        f"AND NOT EXISTS (SELECT 1 FROM {meta.vec_table} v WHERE v.rowid = m.seq)")]


def entries_of(raw, seqs: Sequence[int]) -> dict[int, MemoryEntry]:
    sql = f"SELECT m.seq, {SELECT_COLUMNS} FROM memories m WHERE m.seq IN ({{marks}})"
    found = ((r[0], entry_or_none(r[1:])) for r in select_in(raw, sql, seqs))
    return {seq: entry for seq, entry in found if entry is not None}  # an unreadable row is left out


def sources_of(raw, ids: Sequence[str], quoted: bool = True) -> dict[str, list[str]]:
    """For each id among ``ids`` that is a consolidated memory, the ids of its sources (sorted);
    without ``quoted``, not those it only quotes (:data:`QUOTED_LINK`)."""
    found: dict[str, list[str]] = {}
    only = "" if quoted else f" AND source != '{QUOTED_LINK}'"
    sql = f"SELECT src_id, dst_id FROM memory_edges WHERE relation = '{SOURCES}'{only} AND src_id IN ({{marks}})"
    for src, dst in select_in(raw, sql, ids):
        found.setdefault(src, []).append(dst)
    return {k: sorted(v) for k, v in found.items()}


def link_sources(raw, links: Sequence[tuple[str, str]], source: str) -> None:
    """Record that each (consolidated memory, source) pair's first carries the second's content
    (inside the caller's transaction); a pair already recorded is left as it is."""
    now = time.time()
    raw.executemany(
        "INSERT OR IGNORE INTO memory_edges (src_id, dst_id, relation, source, confidence, created_at) "
        f"VALUES (?, ?, '{SOURCES}', ?, 1.0, ?)",
        [(src, dst, source, now) for src, dst in links],
    )


def carriers_of(raw, ids: Sequence[str]) -> list[str]:
    """The consolidated memories that carry any of ``ids`` (an operator's edit of a source reaches them)."""
    sql = f"SELECT DISTINCT src_id FROM memory_edges WHERE relation = '{SOURCES}' AND dst_id IN ({{marks}})"
    return sorted({row[0] for row in select_in(raw, sql, ids)})


# Row ``m`` has a carrier that answers for it: visible, not withheld by an operator or prune, current.
_ANSWERED_FOR = (f"EXISTS (SELECT 1 FROM memory_edges e JOIN memories c ON c.id = e.src_id WHERE e.dst_id = m.id "
                 f"AND e.relation = '{SOURCES}' AND e.source != '{QUOTED_LINK}' "
                 f"AND c.visibility = '{Visibility.VISIBLE.value}' AND c.archived != 1 AND c.valid_to IS NULL)")


def uncarried_sources(raw, ids: Sequence[str]) -> list[str]:
    """Which of ``ids`` consolidation archived that are visible while every memory carrying them is
    withheld (hidden, private or archived by an operator or prune, as the admission predicate counts a
    carrier withheld) or ended by a newer fact: left so, they answer nowhere now."""
    sql = (f"SELECT m.id FROM memories m WHERE m.archived = {CONSOLIDATED} AND m.visibility = "
           f"'{Visibility.VISIBLE.value}' AND m.id IN ({{marks}}) AND NOT {_ANSWERED_FOR}")
    return sorted(row[0] for row in select_in(raw, sql, ids))


def carried_sources(raw, ids: Sequence[str]) -> set[str]:
    """Which of ``ids`` consolidation archived into a memory that still answers for them: their words
    live on there, so it was no operator's archive (a promoted one's copy stays live)."""
    sql = f"SELECT m.id FROM memories m WHERE m.archived = {CONSOLIDATED} AND m.id IN ({{marks}}) AND {_ANSWERED_FOR}"
    return {row[0] for row in select_in(raw, sql, ids)}


DERIVED = SQLITE.has_tag.format(col="tags")  # one parameter: DERIVED_TAG


# ``+archived``: the planner otherwise went through ``memories_order`` and read every live row of the
# store to find one session's (650 ms at 300,000 rows on each session close); it goes by ``memories_session``.
WRITTEN_IN_SESSION = (
    "SELECT m.id FROM memories m WHERE m.source_session_id = ? AND +m.archived = 0 AND m.valid_to IS NULL "
    f"AND NOT {SQLITE.has_tag.format(col='m.tags')} ORDER BY m.seq"
)


def written_in_session(raw, session_id: str, summary_tag: str) -> list[str]:
    """Ids of the current rows whose ``source_session_id`` is ``session_id``, those tagged ``summary_tag`` left out."""
    return [row[0] for row in raw.execute(WRITTEN_IN_SESSION, (session_id, summary_tag))]


def derived_from(raw, ids: Sequence[str], *, live_only: bool) -> list[str]:
    """The unpinned derived memories (live ones only with ``live_only``) that carry any of the live,
    not derived, memories among ``ids``: what prune must take with the facts it removes."""
    # "+archived": the planner would otherwise walk memories_order's live rows once per batch of ids
    # (387 ms a batch at 30k rows: a capped prune grew with the square of the store) instead of the id index.
    facts = select_in(raw, f"SELECT id FROM memories WHERE +archived = 0 AND NOT {DERIVED} AND id IN ({{marks}})",
                      ids, before=(DERIVED_TAG,))
    carriers = carriers_of(raw, [row[0] for row in facts])
    live = " AND +archived = 0" if live_only else ""
    sql = f"SELECT id FROM memories WHERE pinned = 0{live} AND {DERIVED} AND id IN ({{marks}})"
    return [row[0] for row in select_in(raw, sql, carriers, before=(DERIVED_TAG,))]


@dataclass
class Change:
    """One consolidation decision as the store applies it: whole, or not at all when a memory it was
    decided on has changed since it was read."""

    read: dict[str, datetime]  # every memory the decision was made on -> its updated_at when read
    links: list[tuple[str, str]]  # (consolidated memory, source)
    archive: list[str]
    write: MemoryEntry | None = None  # a digest
    keep: tuple[str, float, list[str]] | None = None  # a merge's keeper, the importance and tags it gets


def apply_txn(raw, changes: Sequence[Change], actor: str) -> list[bool]:
    """One batch of consolidation decisions in one transaction: new consolidated memories, the
    importance and tags a merge gives its keeper, the ``consolidates`` edges, and the sources archived.
    Whether each was applied.

    All or nothing, so a killed run leaves either the sources current and no
    consolidated memory, or both done: a re-run never digests a source twice.
    A decision any of whose memories an operator (or a write) changed, removed
    or archived since it was read — every such edit stamps ``updated_at`` — is
    left out whole: a run reads for minutes on a large store, and a memory
    pinned, hidden or re-worded meanwhile must not be archived into what it
    said before. The next run decides on it afresh.
    """
    with transaction(raw):
        stamped = {i: at for i, at in select_in(raw, "SELECT id, updated_at FROM memories WHERE archived = 0 "
                                                     "AND id IN ({marks})", [i for c in changes for i in c.read])}
        applied = [all(i in stamped and abs(stamped[i] - at.timestamp()) < 1e-5 for i, at in c.read.items())
                   for c in changes]
        kept = [c for c, ok in zip(changes, applied, strict=True) if ok]
        writes = [c.write for c in kept if c.write is not None]
        if writes:
            mutations.upsert(raw, writes, actor, op="consolidate")
        for entry_id, value, tags in (c.keep for c in kept if c.keep is not None):
            mutations.update(raw, [entry_id], "reinforce", actor, "importance = ?, tags = ?", (value, tags_text(tags)))
        link_sources(raw, [link for c in kept if c.write is not None for link in c.links], DIGEST_LINK)
        link_sources(raw, [link for c in kept if c.write is None for link in c.links], "consolidation")
        archive = [i for c in kept for i in c.archive]
        if archive:
            mutations.update(raw, archive, "archive", actor, f"archived = {CONSOLIDATED}")
    return applied
