"""The semantic leg of a recall, answered in one call on the connection thread.

KNN by cosine distance over the float index (or its compact index, from a
size), merged with the nearest chunks (a memory scores its best vector,
whichever it is), admitted and filtered, over-fetching until ``wanted`` rows
pass; a selective filter ends in an exact scan of only the rows it admits.
One call, not one per step: a recall used to enter the store once for the
KNN, once for the chunks and once per admission window.
"""

from __future__ import annotations

from memory.embedding.base import content_hash
from memory.sqlite import chunks
from memory.sqlite.rows import admitted_rows, entry_or_none
from memory.sqlite.vectors import KNN_FLOOR, OVERFETCH, filtered_scan, nearest
from memory.types import MemoryEntry

KNN_MAX = 4096  # sqlite-vec's ceiling on k


# (store_version when found, k, the k nearest rows, the window's :data:`Read` rows shared by all its lines)
Prefetched = tuple[tuple[int, int], int, list[tuple[int, float]], "Read"]
# (admission clause, params, seq) -> the row's entry, or None when the clause does not admit it (or it is
# unreadable): what the lines of one window searched before read, valid while the store_version holds.
Read = dict[tuple[str, tuple, int], MemoryEntry | None]


def store_version(raw) -> tuple[int, int]:
    """Changes to the database since: another connection's commits (``data_version``) and this one's."""
    return raw.execute("PRAGMA data_version").fetchone()[0], raw.total_changes


def first_k(wanted: int) -> int:
    """How many nearest rows :func:`semantic_leg` reads first for ``wanted`` memories."""
    return min(max(OVERFETCH * wanted, KNN_FLOOR), KNN_MAX)


def ahead_k(wanted: int) -> int:
    """How many nearest rows a window's search finds ahead for ``wanted`` memories. Fewer than
    :func:`first_k`: an import's rows are nearly all admitted, and each row found ahead is scored
    again exactly (the window's dearest step); a first round that admits too few goes on as any does."""
    return min(2 * wanted, KNN_MAX)


def semantic_leg(
    raw, table: str, blob: bytes, wanted: int, clause_sql: str, params: tuple, min_similarity: float, compact_from: int,
    first: Prefetched | None = None, ahead_only: bool = False,
) -> list[MemoryEntry] | None:
    """The ``wanted`` nearest admitted memories to ``blob``, scored by cosine, nearest first.

    ``first``: the exact scan's :func:`ahead_k` nearest rows, when a window's search
    (:mod:`memory.sqlite.window_knn`) found them already; used only if nothing was written
    since (:func:`store_version`), so the rest is the same as without it. Its rows read by
    the window's earlier lines are taken from there, admitted as they were then (the same
    clause, nothing written since), instead of read and validated again for every line.
    ``ahead_only``: None when ``first`` no longer holds (``table`` too may be another pin's by then).
    """
    k = first_k(wanted)
    if first is not None and first[0] != store_version(raw):
        if ahead_only:
            return None
        first = None
    read: Read | None = None
    while True:
        if first is not None:
            (_, k, hits, read), admitted, first = first, False, None
        else:
            hits, admitted = nearest(raw, table, blob, k, clause_sql, params, compact_from)
        hits, spans, exhausted = _with_chunks(raw, table, blob, k, hits)
        exhausted = exhausted and not admitted  # admitted hits fall short of k on a filter, not an empty index
        results = _admit(raw, hits, wanted, clause_sql, params, min_similarity, spans, read)
        if len(results) >= wanted or exhausted:  # enough, or the index is exhausted
            break
        if hits and 1.0 - hits[-1][1] < min_similarity:  # nearest-first: nothing further can pass
            break
        if k >= KNN_MAX:  # selective filters: scan only the rows that pass them
            hits = filtered_scan(raw, table, blob, clause_sql, params, wanted)
            results = _admit(raw, hits, wanted, clause_sql, params, min_similarity, {}, read)
            break
        k = min(4 * k, KNN_MAX)
    return results[:wanted]


def _with_chunks(raw, table: str, blob: bytes, k: int, hits: list[tuple[int, float]]):
    """``hits`` merged with the nearest chunks: (hits nearest first, seq -> the winning chunk and
    the memory's own distance, whether both indexes are exhausted). A memory without chunk
    vectors is unaffected."""
    found, answered = chunks.nearest(raw, chunks.chunk_table(table), blob, k)
    exhausted = len(hits) < k and answered < k
    if not found:
        return hits, {}, exhausted
    best = dict(hits)
    spans = {}
    for hit in found:
        if hit.distance < best.get(hit.seq, 2.0):
            spans[hit.seq] = (hit, best.get(hit.seq))
            best[hit.seq] = hit.distance
    return sorted(best.items(), key=lambda item: (item[1], item[0])), spans, exhausted


def _admit(
    raw, hits: list[tuple[int, float]], wanted: int, clause_sql: str, params: tuple, min_similarity: float, spans: dict,
    read: Read | None = None,
) -> list[MemoryEntry]:
    """Hits that pass admission and filters, nearest first; reads rows only until ``wanted`` are found.

    KNN found candidate rowids; admission decides which may be read. A hit
    won by a chunk carries that chunk as its snippet, unless the content
    changed since the chunk was cut: then only the memory's own vector counts.
    """
    results: list[MemoryEntry] = []
    start, step = 0, wanted
    while start < len(hits) and len(results) < wanted:
        window = hits[start : start + step]
        admitted = _admitted(raw, [seq for seq, _ in window], clause_sql, params, {} if read is None else read)
        for seq, distance in window:
            stored = admitted.get(seq)
            if stored is None:  # not admitted, or a row an outside edit left unreadable: left out, not the whole leg
                continue
            snippet = None
            won = spans.get(seq)
            if won is not None:
                hit, own = won
                if hit.source_hash == content_hash(stored.content):
                    snippet = stored.content[hit.start : hit.end]
                elif own is None:
                    continue
                else:
                    distance = own
            if 1.0 - distance >= min_similarity:
                extra = {"snippet": snippet} if snippet is not None else {}
                results.append(stored.model_copy(update={"score": 1.0 - distance, "matched_by": ["semantic"], **extra}))
        start, step = start + len(window), step * 4
    results.sort(key=lambda e: -(e.score or 0.0))
    return results


def _admitted(raw, seqs: list[int], clause_sql: str, params: tuple, read: Read) -> dict[int, MemoryEntry | None]:
    """The entries of ``seqs`` the clause admits (None: unreadable), reading only those ``read`` lacks, into it."""
    missing = [seq for seq in seqs if (clause_sql, params, seq) not in read]
    if missing:
        rows = {r["seq"]: r for r in admitted_rows(raw, "seq", missing, clause_sql, params)}
        for seq in missing:
            row = rows.get(seq)
            read[clause_sql, params, seq] = None if row is None else entry_or_none(row)
    return {seq: read[clause_sql, params, seq] for seq in seqs}
