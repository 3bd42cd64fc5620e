"""The exact KNN of many vectors at once, reading the float index once instead of once per vector.

A reconciled import searches the store for every line of a window (1,024
lines) while no row changes. sqlite-vec's KNN reads every stored float per
search, so that window read the whole index 1,024 times. Here the index is
read a block at a time, numpy ranks every stored vector for every line in a
matrix product, and the few best of each line are scored again the way
sqlite-vec scores them (``distance_cosine_float``: float32 sums taken in
order, square roots in double), so each line gets the rows and distances
:func:`memory.sqlite.vectors.knn` gives, in its order. A line whose k
nearest hold a tie gets None: sqlite-vec's order between equal distances is
its own, so that line is searched as before (and so is one whose k-th
nearest is crowded by more near-equal rows than were kept).

Memory stays bounded whatever the store's size: a window's lines against
one block of stored vectors, and the best :data:`SPARE` + k of each line.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np  # this module is imported only by a window's search (memory.adapters.sqlite)

BLOCK = 2048  # stored vectors read (and ranked against every line) at a time: 3 MB of floats at 384 dimensions
SPARE = 16  # rows kept per line beyond k while ranking, so rescoring can reorder near the k-th
MARGIN = 1e-4  # a matrix product's cosine is this close to sqlite-vec's (float32 rounding is ~1e-6)


def knn_many(raw, table: str, blobs: Sequence[bytes], k: int) -> list[list[tuple[int, float]] | None]:
    """For each packed vector of ``blobs``: ``knn(raw, table, blob, k)``'s answer, or None (a tie)."""
    queries = np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs])
    keep = k + SPARE
    rows = np.empty((len(queries), 0), dtype=np.int64)
    dist = np.empty((len(queries), 0), dtype=np.float32)
    stored = 0
    for rowids, vectors in _blocks(raw, table):
        stored += len(rowids)
        block = (1 - (queries @ vectors.T) / np.outer(_norms(queries), _norms(vectors))).astype(np.float32)
        rows = np.concatenate([rows, np.broadcast_to(rowids, block.shape)], axis=1)
        dist = np.concatenate([dist, block], axis=1)
        if dist.shape[1] > keep:
            top = np.argpartition(dist, keep - 1, axis=1)[:, :keep]
            rows, dist = np.take_along_axis(rows, top, axis=1), np.take_along_axis(dist, top, axis=1)
    near = [_near(rows[i], dist[i], k, saturated=stored > keep) for i in range(len(queries))]
    scored = _rescored(raw, table, queries, near)
    return [None if candidates is None else _ranked(scored[i], k) for i, candidates in enumerate(near)]


def _near(rows: np.ndarray, approx: np.ndarray, k: int, *, saturated: bool) -> np.ndarray | None:
    """The rows within :data:`MARGIN` of the k-th nearest by the matrix product; None when the
    rows kept beyond k are all that close (a row not kept could belong among them)."""
    if len(rows) == 0:
        return rows
    cut = np.partition(approx, min(k, len(approx)) - 1)[min(k, len(approx)) - 1] + MARGIN
    near = rows[approx <= cut]
    return None if saturated and len(near) == len(rows) else near


def _rescored(raw, table: str, queries: np.ndarray, near: list[np.ndarray | None]) -> list[list[tuple[float, int]]]:
    """Each line's near rows with the distance sqlite-vec gives them, read in one more pass over the
    index (in rowid order: vec0 reads its floats chunk by chunk, so scattered reads cost several times as much)."""
    scored: list[list[tuple[float, int]]] = [[] for _ in near]
    for rowids, vectors in _blocks(raw, table):
        for i, candidates in enumerate(near):
            if candidates is None or len(candidates) == 0:
                continue
            at = np.minimum(np.searchsorted(rowids, candidates), len(rowids) - 1)  # rowids ascend
            here = at[rowids[at] == candidates]
            if len(here):
                found = _sqlite_vec_cosine(queries[i], vectors[here])
                scored[i] += zip(found.tolist(), rowids[here].tolist())
    return scored


def _ranked(scored: list[tuple[float, int]], k: int) -> list[tuple[int, float]] | None:
    """The k nearest, nearest first; None when two of them (or the k-th and the next) are tied."""
    scored.sort()
    if any(a[0] == b[0] for a, b in zip(scored, scored[1 : k + 1])):
        return None
    return [(row, distance) for distance, row in scored[:k]]


def _sqlite_vec_cosine(query: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Cosine distances exactly as sqlite-vec's ``distance_cosine_float`` computes them."""
    dot = np.cumsum(rows * query, axis=1, dtype=np.float32)[:, -1]
    own = np.cumsum(query * query, dtype=np.float32)[-1]
    theirs = np.cumsum(rows * rows, axis=1, dtype=np.float32)[:, -1]
    return (1 - dot.astype(np.float64) / (np.sqrt(np.float64(own)) * np.sqrt(theirs.astype(np.float64)))).astype(np.float32)


def _norms(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1)
    return np.where(norms == 0, 1.0, norms)


def _blocks(raw, table: str):
    """(rowids, float32 matrix) of the index, :data:`BLOCK` rows at a time, in rowid order."""
    after = -1
    while rows := raw.execute(
        f"SELECT rowid, embedding FROM {table} WHERE rowid > ? ORDER BY rowid LIMIT ?", (after, BLOCK)
    ).fetchall():
        after = rows[-1][0]
        yield (np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)),
               np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1))
