"""The compact vector index: one-bit codes grouped in cells, so semantic search need not read every float.

sqlite-vec's KNN reads every stored float (about 45 ms per 100,000 vectors of
384 dimensions here). Beside a large float index ``memory_vec_<N>`` this keeps

- ``memory_vec_<N>_cells``: a few hundred centroids (spherical k-means over a
  sample of the stored vectors) and how many codes each cell holds;
- ``memory_vec_<N>_codes``: every vector's sign bits (``vec_quantize_binary``,
  48 bytes for 384 dimensions), clustered by cell.

A search ranks the centroids, reads the codes of the nearest cells only,
keeps the best candidates by hamming distance and rescores them exactly with
their stored floats, in one statement that also applies the admission
predicate and the query's filters (:func:`search`).

Why not a ``vec0`` table with a ``bit[N]`` column: its KNN measured slower
than the float scan once k is a few hundred candidates (100,000 codes: 5 ms
at k=40, 59 ms at k=400, 184 ms at k=1000), while ``ORDER BY
vec_distance_hamming(...) LIMIT`` over a plain table keeps a heap (12 ms for
all 100,000 codes, 8 ms for 62,500 codes in four cells out of a million).

The index is built once a float index holds :data:`BUILD_FROM` vectors (on
the write that crosses it, or by migration v9 for an existing store) and is
kept by every write of vectors (:func:`put`), every delete (:func:`forget`) and
dropped with its float index (:func:`drop`). Searches use it from
:data:`SEARCH_FROM` vectors: below that the exact scan is as fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np

from memory.sqlite.batches import batches, marks, select_in

BUILD_FROM = 20_000  # vectors in a float index before its compact index is built
SEARCH_FROM = 20_000  # vectors before a search uses it (bench_scale.py: the crossover)
CELLS = 256
TRAIN_SAMPLE = 16_384  # vectors k-means learns the cells from
TRAIN_ROUNDS = 8
RESCORE = 4  # candidates rescored with their floats, per neighbour asked for
PROBE_SHARE = 16  # the nearest cells read hold at least 1/PROBE_SHARE of all codes ...
PROBE_PER_CANDIDATE = 8  # ... and at least this many codes per candidate
_BATCH = 10_000


def cells_table(table: str) -> str:
    return f"{table}_cells"


def codes_table(table: str) -> str:
    return f"{table}_codes"


def built(raw, table: str) -> bool:
    row = raw.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (cells_table(table),)).fetchone()
    return row is not None


def size(raw, table: str) -> int:
    """Codes in ``table``'s compact index (0 when it has none): a sum over the cells, not a scan."""
    if not built(raw, table):
        return 0
    return raw.execute(f"SELECT coalesce(sum(size), 0) FROM {cells_table(table)}").fetchone()[0]


def _floats(blobs: Sequence[bytes], dimension: int) -> np.ndarray:
    import numpy as np

    return np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), dimension)


def _train(sample: np.ndarray, cells: int) -> np.ndarray:
    """Spherical k-means: unit centroids that the sample's vectors are nearest to by cosine."""
    import numpy as np

    rng = np.random.default_rng(0)  # the same vectors give the same cells
    sample = sample / np.maximum(np.linalg.norm(sample, axis=1, keepdims=True), 1e-12)
    centroids = sample[rng.choice(len(sample), cells, replace=False)].copy()
    for _ in range(TRAIN_ROUNDS):
        nearest = np.argmax(sample @ centroids.T, axis=1)
        sums = _sums(sample, nearest, cells)
        empty = ~sums.any(axis=1)
        sums[empty] = sample[rng.choice(len(sample), int(empty.sum()), replace=False)]
        centroids = sums / np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return centroids.astype(np.float32)


def _sums(sample: np.ndarray, nearest: np.ndarray, cells: int) -> np.ndarray:
    """Each cell's sum of the sample's vectors nearest to it: a sort and one ``reduceat``
    (``np.add.at`` adds row by row, 4x slower, half of a build's training)."""
    import numpy as np

    order = np.argsort(nearest, kind="stable")
    starts = np.searchsorted(nearest[order], np.arange(cells))
    filled = np.bincount(nearest, minlength=cells) > 0
    sums = np.zeros((cells, sample.shape[1]), dtype=sample.dtype)
    sums[filled] = np.add.reduceat(sample[order], starts[filled], axis=0)
    return sums


def build(raw, table: str) -> int:
    """Build ``table``'s compact index from its stored floats (inside the caller's transaction); codes written."""
    drop(raw, table)
    dimension = raw.execute(f"SELECT vec_length(embedding) FROM {table} LIMIT 1").fetchone()
    if dimension is None or dimension[0] % 8:
        return 0  # nothing stored yet, or a width that does not pack into bytes: the exact scan serves it
    dimension = dimension[0]
    total = raw.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    cells = min(CELLS, max(1, total // 64))
    step = max(1, total // TRAIN_SAMPLE)
    sample = raw.execute(f"SELECT rowid, embedding FROM {table} WHERE rowid % ? = 0", (step,)).fetchall()
    if len(sample) < cells:
        sample = raw.execute(f"SELECT rowid, embedding FROM {table} LIMIT ?", (TRAIN_SAMPLE,)).fetchall()
    centroids = _train(_floats([r[1] for r in sample], dimension), cells)
    raw.execute(f"CREATE TABLE {cells_table(table)} (cell INTEGER PRIMARY KEY, centroid BLOB NOT NULL, size INTEGER NOT NULL)")
    raw.execute(
        f"CREATE TABLE {codes_table(table)} (cell INTEGER NOT NULL, seq INTEGER NOT NULL, code BLOB NOT NULL, "
        "PRIMARY KEY (cell, seq)) WITHOUT ROWID"
    )
    raw.execute(f"CREATE UNIQUE INDEX {codes_table(table)}_seq ON {codes_table(table)} (seq)")
    raw.executemany(f"INSERT INTO {cells_table(table)} VALUES (?, ?, 0)", [(i, c.tobytes()) for i, c in enumerate(centroids)])
    if len(sample) == total:
        # Trigger: a small index (the write that crosses BUILD_FROM), sampled whole. Why: reading
        # it again, a window per query, had vec0 scan and sort it all for each window (2 of the
        # 2.3 s such a build took). Outcome: the codes are filed from the rows in hand.
        return sum(_insert(raw, table, centroids, sample[i : i + _BATCH], dimension) for i in range(0, total, _BATCH))
    written, after = 0, -1
    while True:  # a window of floats at a time: bounded memory at any size
        rows = raw.execute(
            f"SELECT rowid, embedding FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, _BATCH)
        ).fetchall()
        if not rows:
            return written
        written += _insert(raw, table, centroids, rows, dimension)
        after = rows[-1][0]


def _centroids(raw, table: str) -> tuple[np.ndarray, int]:
    blobs = [r[0] for r in raw.execute(f"SELECT centroid FROM {cells_table(table)} ORDER BY cell")]
    dimension = len(blobs[0]) // 4
    return _floats(blobs, dimension), dimension


def _insert(raw, table: str, centroids: np.ndarray, rows: Sequence[tuple[int, bytes]], dimension: int) -> int:
    """File ``rows`` ((seq, float blob)) under their nearest centroid, as sign bits."""
    import numpy as np

    cells = np.argmax(_floats([r[1] for r in rows], dimension) @ centroids.T, axis=1)
    raw.executemany(
        f"INSERT INTO {codes_table(table)} (cell, seq, code) VALUES (?, ?, vec_quantize_binary(?))",
        [(int(cell), seq, blob) for cell, (seq, blob) in zip(cells, rows, strict=True)],
    )
    counts = np.bincount(cells, minlength=len(centroids))
    raw.executemany(
        f"UPDATE {cells_table(table)} SET size = size + ? WHERE cell = ?",
        [(int(n), i) for i, n in enumerate(counts) if n],
    )
    return len(rows)


def put(raw, table: str, rows: Sequence[tuple[int, bytes]]) -> None:
    """Keep the compact index in step with float vectors just (re)written (inside their transaction).

    Without an index yet, builds one once the float index reaches :data:`BUILD_FROM`.
    """
    if not rows:
        return
    if not built(raw, table):
        if raw.execute(f"SELECT count(*) >= ? FROM {table}", (BUILD_FROM,)).fetchone()[0]:
            build(raw, table)
        return
    forget(raw, table, [seq for seq, _ in rows])
    centroids, dimension = _centroids(raw, table)
    _insert(raw, table, centroids, rows, dimension)


def forget(raw, table: str, seqs: Sequence[int]) -> None:
    """Remove the codes of ``seqs`` (a delete, a purge, a vector about to be replaced)."""
    if not seqs or not built(raw, table):
        return
    codes = codes_table(table)
    gone = select_in(raw, f"SELECT cell, count(*) FROM {codes} WHERE seq IN ({{marks}}) GROUP BY cell", list(seqs))
    counts: dict[int, int] = {}
    for cell, n in gone:
        counts[cell] = counts.get(cell, 0) + n
    raw.executemany(f"UPDATE {cells_table(table)} SET size = size - ? WHERE cell = ?", [(n, c) for c, n in counts.items()])
    for chunk in batches(seqs):
        raw.execute(f"DELETE FROM {codes} WHERE seq IN ({marks(chunk)})", chunk)


def drop(raw, table: str) -> None:
    raw.execute(f"DROP TABLE IF EXISTS {codes_table(table)}")
    raw.execute(f"DROP TABLE IF EXISTS {cells_table(table)}")


def _probe(raw, table: str, blob: bytes, candidates: int) -> list[int]:
    """The nearest cells to the query that together hold enough codes to choose ``candidates`` from."""
    ranked = raw.execute(
        f"SELECT cell, size FROM {cells_table(table)} ORDER BY vec_distance_cosine(centroid, ?)", (blob,)
    ).fetchall()
    total = sum(n for _, n in ranked)
    wanted = max(total // PROBE_SHARE, PROBE_PER_CANDIDATE * candidates)
    chosen, covered = [], 0
    for cell, n in ranked:
        if covered >= wanted:
            break
        if n:
            chosen.append(cell)
            covered += n
    return chosen


def _rescore_sql(table: str, cells: Sequence[int], clause_sql: str) -> str:
    """The search statement over ``cells`` probed cells: hamming candidates, rescored exactly, admitted.

    The candidates' floats are read through ``m.seq IN (…)``, so in seq order:
    ``vec0`` keeps them in chunks of about 1.5 MB, and reading 800 of them in
    hamming order measured 4-6x slower (each read walks into its chunk anew).
    """
    return (
        f"WITH c AS (SELECT seq FROM {codes_table(table)} WHERE cell IN ({marks(cells)}) "
        "ORDER BY vec_distance_hamming(vec_bit(code), vec_quantize_binary(?)) LIMIT ?) "
        f"SELECT m.seq, vec_distance_cosine(v.embedding, ?) AS d FROM memories m CROSS JOIN {table} v ON v.rowid = m.seq "
        f"WHERE m.seq IN (SELECT seq FROM c) AND {clause_sql} ORDER BY d LIMIT ?"
    )


def search(raw, table: str, blob: bytes, k: int, clause_sql: str, params: tuple) -> list[tuple[int, float]]:
    """The ``k`` nearest admitted rows by exact cosine, among the best hamming candidates of the nearest cells.

    ``clause_sql`` (alias ``m``) is the admission predicate and the query's
    filters, so a row the exact path would not admit never comes back here.
    """
    candidates = RESCORE * k
    cells = _probe(raw, table, blob, candidates)
    if not cells:
        return []
    rows = raw.execute(_rescore_sql(table, cells, clause_sql), (*cells, blob, candidates, blob, *params, k))
    return [(r[0], r[1]) for r in rows]
