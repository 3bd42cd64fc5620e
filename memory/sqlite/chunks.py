"""Chunk vectors: the extra vectors of a long memory, beside its own one.

A memory longer than the embedder's window keeps its one row and its one
vector in ``memory_vec_<N>`` (so counts, pins and dedup by id are unchanged);
its chunks past the first (the first is what the memory's own vector already
reads) get vectors in ``memory_chunkvec_<N>``, keyed by ``memory_chunks.id``.
Spans are cut from content whose hash they record, so a search never quotes
a span of text that has since changed, and a fill redoes only memories whose
content moved on. Everything here runs on the connection thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from memory.embedding.base import content_hash
from memory.embedding.chunking import CHUNK_CHARS, Span, split
from memory.sqlite.batches import batches, marks, select_in
from memory.sqlite import vec0
from memory.sqlite.connection import transaction

PREFIX = "memory_chunkvec_"


def chunk_table(vec_table: str) -> str:
    """The chunk-vector table that goes with the memory-vector table ``memory_vec_<N>``."""
    return PREFIX + vec_table.rsplit("_", 1)[-1]


@dataclass(frozen=True)
class ChunkWork:
    """One memory whose chunk vectors must be (re)made: ``spans[1:]`` get vectors."""

    seq: int
    entry_id: str
    content: str
    spans: tuple[Span, ...]

    @property
    def embedded(self) -> tuple[Span, ...]:
        return self.spans[1:]


def table_exists(raw, table: str) -> bool:
    return raw.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone() is not None


def chunk_tables(raw) -> list[str]:
    return [r[0] for r in raw.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table' AND name GLOB ? AND sql LIKE 'CREATE VIRTUAL TABLE%'",
        (PREFIX + "[0-9]*",),
    )]


_CANDIDATES = (
    "SELECT m.seq, m.id, m.content FROM memories m "
    "WHERE (length(m.content) > ? OR m.seq IN (SELECT seq FROM memory_chunks))"
)


def stale(raw, table: str, ids: Sequence[str], budget: int = CHUNK_CHARS) -> list[ChunkWork]:
    """The memories among ``ids`` whose chunk vectors in ``table`` are missing or cut from other content.

    A memory that became short but still has chunks is returned with one
    span, so its old chunks are removed.
    """
    return _work(raw, table, select_in(raw, f"{_CANDIDATES} AND m.id IN ({{marks}})", ids, before=(budget,)), budget)


def stale_page(raw, table: str, after: int, limit: int, budget: int = CHUNK_CHARS) -> tuple[list[ChunkWork], int | None]:
    """:func:`stale` over the whole store a page at a time: the work among the next ``limit`` long (or
    chunked) memories past seq ``after``, and the last seq read (None when none was left). Reading
    every long memory's text at once held ~3 KB a note (44 MiB at 15,000 notes) even with nothing to do."""
    rows = raw.execute(f"{_CANDIDATES} AND m.seq > ? ORDER BY m.seq LIMIT ?", (budget, after, limit)).fetchall()
    return _work(raw, table, rows, budget), (rows[-1][0] if rows else None)


def _work(raw, table: str, rows: list, budget: int) -> list[ChunkWork]:
    """Which of ``rows`` ((seq, id, content) of candidate memories) need their chunk vectors (re)made."""
    if not rows:
        return []
    has_table = table_exists(raw, table)
    seen: dict[int, tuple[str, int, int]] = {}  # seq -> (source hash, chunks, vectors)
    vectors = f"(SELECT count(*) FROM {table} v WHERE v.rowid = c.id)" if has_table else "0"
    for seq, digest, count, present in select_in(
        raw,
        f"SELECT c.seq, min(c.source_hash), count(*), sum({vectors}) FROM memory_chunks c "
        "WHERE c.seq IN ({marks}) GROUP BY c.seq",
        [r[0] for r in rows],
    ):
        seen[seq] = (digest, count, present or 0)
    work = []
    for seq, entry_id, content in rows:
        have = seen.get(seq)
        if have is not None and have[0] == content_hash(content) and have[2] == have[1] - 1:
            continue  # every chunk past the first has its vector, cut from this content
        spans = tuple(split(content, budget))
        if have is None and len(spans) < 2:
            continue  # nothing to embed, nothing to remove
        work.append(ChunkWork(seq, entry_id, content, spans))
    return work


def _create(raw, table: str, dimension: int) -> None:
    raw.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {table} USING vec0("
        f"embedding float[{int(dimension)}] distance_metric=cosine, +model text)"
    )


def forget(raw, seqs: Sequence[int]) -> None:
    """Remove the chunks of ``seqs`` and their vectors in every chunk table (inside the caller's transaction)."""
    tables = chunk_tables(raw)
    for chunk in batches(seqs):
        ids = [r[0] for r in raw.execute(f"SELECT id FROM memory_chunks WHERE seq IN ({marks(chunk)})", chunk)]
        for table in tables:
            for part in batches(ids):
                raw.execute(f"DELETE FROM {table} WHERE rowid IN ({marks(part)})", part)
        raw.execute(f"DELETE FROM memory_chunks WHERE seq IN ({marks(chunk)})", chunk)


def put_txn(raw, table: str, dimension: int, items: list[tuple[ChunkWork, list[bytes | None]]], model: str) -> int:
    """Replace the chunks of each memory and write their vectors, in one transaction.

    A chunk whose vector is None (its embedding failed) is still recorded, so
    the memory stays stale and the next fill retries it. A memory purged or
    rewritten meanwhile is skipped (its content hash no longer matches).
    """
    written = 0
    with transaction(raw):
        _create(raw, table, dimension)
        seqs = [work.seq for work, _ in items]
        live = dict(select_in(raw, "SELECT seq, content FROM memories WHERE seq IN ({marks})", seqs))
        current = [(w, v) for w, v in items if w.seq in live and live[w.seq] == w.content]
        forget(raw, [w.seq for w, _ in current])
        for work, blobs in current:
            if len(work.spans) < 2:
                continue
            digest = content_hash(work.content)
            for number, span in enumerate(work.spans):
                cursor = raw.execute(
                    "INSERT INTO memory_chunks (seq, chunk, char_start, char_end, source_hash) VALUES (?, ?, ?, ?, ?)",
                    (work.seq, number, span.start, span.end, digest),
                )
                blob = blobs[number - 1] if number else None
                if blob is not None:
                    raw.execute(f"INSERT INTO {table} (rowid, embedding, model) VALUES (?, ?, ?)", (cursor.lastrowid, blob, model))
                    written += 1
    return written


@dataclass(frozen=True)
class ChunkHit:
    seq: int
    distance: float
    start: int
    end: int
    source_hash: str


def nearest(raw, table: str, blob: bytes, k: int) -> tuple[list[ChunkHit], int]:
    """The best chunk per memory among the ``k`` nearest chunks, nearest first; and how many chunks answered."""
    if not table_exists(raw, table):
        return [], 0
    rows = raw.execute(
        f"SELECT v.rowid, v.distance FROM {table} v WHERE v.embedding MATCH ? AND k = ? ORDER BY v.distance",
        (blob, k),
    ).fetchall()
    spans = {
        row[0]: tuple(row[1:])
        for row in select_in(
            raw, "SELECT id, seq, char_start, char_end, source_hash FROM memory_chunks WHERE id IN ({marks})", [r[0] for r in rows]
        )
    }
    best: dict[int, ChunkHit] = {}
    for rowid, distance in rows:
        found = spans.get(rowid)
        if found is not None and found[0] not in best:
            best[found[0]] = ChunkHit(found[0], distance, found[1], found[2], found[3])
    return list(best.values()), len(rows)


def count(raw, table: str) -> int:
    return raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0] if table_exists(raw, table) else 0


def drop(raw, vec_table: str) -> None:
    """Drop the chunk vectors that belonged to ``vec_table`` (inside the caller's transaction)."""
    vec0.drop(raw, chunk_table(vec_table))
