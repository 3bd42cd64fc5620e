"""The exact KNN of many vectors at once, reading the float index once instead of once per vector.

A reconciled import searches the store for every line of a window (1,024
lines) while no row changes. sqlite-vec's KNN reads every stored float per
search, so that window read the whole index 1,024 times. Here the index is
read once, numpy ranks every stored vector for every line in a matrix
product a block at a time, and the few best of each line are scored again the way
sqlite-vec scores them (``distance_cosine_float``: float32 sums taken in
order, square roots in double), so each line gets the rows and distances
:func:`memory.sqlite.vectors.knn` gives, in its order. A line whose k
nearest hold a tie gets None: sqlite-vec's order between equal distances is
its own, so that line is searched as before (and so is one whose k-th
nearest is crowded by more near-equal rows than were kept).

Memory stays bounded: the index is searched this way only below
:data:`memory.sqlite.compact.SEARCH_FROM` vectors (30 MB of floats), a
window's lines are ranked against one block of them at a time, and the best
:data:`SPARE` + k of each line are kept.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from functools import cache
from pathlib import Path

import numpy as np  # this module is imported only by a window's search (memory.adapters.sqlite)

BLOCK = 2048  # stored vectors ranked against every line at a time: a window's distances stay 8 MB
SPARE = 16  # rows kept per line beyond k while ranking, so rescoring can reorder near the k-th
MARGIN = 1e-4  # a matrix product's cosine is this close to sqlite-vec's (float32 rounding is ~1e-6)
RESCORE = 256  # lines whose near rows are scored again at a time (their gathered floats stay ~15 MB)


def knn_many(raw, table: str, blobs: Sequence[bytes], k: int) -> list[list[tuple[int, float]] | None]:
    """For each packed vector of ``blobs``: ``knn(raw, table, blob, k)``'s answer, or None (a tie).

    The index is read once and held for the rescoring: the caller asks only below
    :data:`memory.sqlite.compact.SEARCH_FROM` vectors (30 MB of floats at 384 dimensions).
    """
    queries = np.stack([np.frombuffer(b, dtype=np.float32) for b in blobs])
    rowids, vectors = _index(raw, table)
    keep = k + SPARE
    with _one_blas_thread():
        rows, dist = _kept(queries, vectors, keep)
    near = [_near(rows[i], dist[i], k, saturated=len(rowids) > keep) for i in range(len(queries))]
    scored = _rescored(queries, vectors, near)
    return [None if at is None else _ranked(scored[i], rowids[at], k) for i, at in enumerate(near)]


def _kept(queries: np.ndarray, vectors: np.ndarray, keep: int) -> tuple[np.ndarray, np.ndarray]:
    """Each line's ``keep`` nearest positions in ``vectors`` by the matrix product, with those distances.

    Ranked by the product of unit vectors, largest first, and only the kept ones turned into
    distances: dividing every product by both norms and subtracting it from one took most of
    a 20,000-line reconciled import's search time."""
    queries = queries / _norms(queries)[:, None]
    rows, near = [], []
    for start in range(0, len(vectors), BLOCK):
        block = vectors[start : start + BLOCK]
        similar = queries @ (block / _norms(block)[:, None]).T
        if similar.shape[1] > keep:
            top = np.argpartition(similar, -keep, axis=1)[:, -keep:]
            similar, top = np.take_along_axis(similar, top, axis=1), top + start
        else:
            top = np.broadcast_to(np.arange(start, start + similar.shape[1]), similar.shape)
        rows.append(top)
        near.append(similar)
    if not rows:
        return np.empty((len(queries), 0), dtype=np.int64), np.empty((len(queries), 0), dtype=np.float32)
    rows, near = np.concatenate(rows, axis=1), np.concatenate(near, axis=1)
    if near.shape[1] > keep:
        top = np.argpartition(near, -keep, axis=1)[:, -keep:]
        rows, near = np.take_along_axis(rows, top, axis=1), np.take_along_axis(near, top, axis=1)
    return rows, (1 - near).astype(np.float32)


_RANKING = threading.Lock()  # one window ranks at a time: each sets the thread count and puts it back


@contextmanager
def _one_blas_thread() -> Iterator[None]:
    """numpy's OpenBLAS on one thread while a window ranks, then as it was.

    The ranking runs beside the embedding model, which keeps both cores busy; OpenBLAS's
    second thread spins between one block's product and the next (a 19,000-row window:
    0.48 s of CPU on two threads, 0.29 s on one, and no slower). Set here, not for the whole
    process, so the compact index's k-means keeps every thread where no model runs beside it.
    Another BLAS (not the scipy-openblas numpy's wheels ship) is left as it is.
    """
    threads = _openblas_threads()
    if threads is None:
        yield
        return
    get, put = threads
    with _RANKING:
        before = get()
        put(1)
        try:
            yield
        finally:
            put(before)


@cache
def _openblas_threads() -> tuple | None:
    """(get, set) of the thread count of the OpenBLAS bundled with numpy's wheels, or None."""
    for path in sorted((Path(np.__file__).parent.parent / "numpy.libs").glob("libscipy_openblas*")):
        try:
            lib = ctypes.CDLL(str(path))  # loaded already by numpy: the same library, not a second copy
        except OSError:
            continue
        for suffix in ("64_", ""):
            get = getattr(lib, f"scipy_openblas_get_num_threads{suffix}", None)
            put = getattr(lib, f"scipy_openblas_set_num_threads{suffix}", None)
            if get is not None and put is not None:
                return get, put
    return None


def _near(rows: np.ndarray, approx: np.ndarray, k: int, *, saturated: bool) -> np.ndarray | None:
    """The rows within :data:`MARGIN` of the k-th nearest by the matrix product; None when the
    rows kept beyond k are all that close (a row not kept could belong among them)."""
    if len(rows) == 0:
        return rows
    cut = np.partition(approx, min(k, len(approx)) - 1)[min(k, len(approx)) - 1] + MARGIN
    near = rows[approx <= cut]
    return None if saturated and len(near) == len(rows) else near


def _rescored(queries: np.ndarray, vectors: np.ndarray, near: list[np.ndarray | None]) -> list[np.ndarray]:
    """Each line's near positions' distances as sqlite-vec gives them, :data:`RESCORE` lines at a time
    (each vector's own sum of squares taken once, not once per pair, and only for the vectors some
    line keeps: taking it for the whole index cost a 20,000-row window 0.09 s, a third of it)."""
    sizes = np.array([0 if n is None else len(n) for n in near], dtype=np.int64)
    own, theirs = _squares(queries), np.zeros(len(vectors), dtype=np.float64)
    kept = np.unique(np.concatenate([n for n in near if n is not None] or [np.empty(0, dtype=np.int64)]))
    if len(kept):
        theirs[kept] = _squares(vectors[kept])
    scored = []
    for start in range(0, len(near), RESCORE):
        counts = sizes[start : start + RESCORE]
        if not counts.sum():
            scored += [np.empty(0, dtype=np.float32)] * len(counts)
            continue
        lines = np.repeat(np.arange(start, start + len(counts)), counts)
        at = np.concatenate([n for n in near[start : start + RESCORE] if n is not None])
        dot = _in_order(vectors[at] * queries[lines])
        found = 1 - dot.astype(np.float64) / (np.sqrt(own[lines]) * np.sqrt(theirs[at]))
        scored += np.split(found.astype(np.float32), np.cumsum(counts)[:-1])
    return scored


def _ranked(distances: np.ndarray, rowids: np.ndarray, k: int) -> list[tuple[int, float]] | None:
    """The k nearest, nearest first; None when two of them (or the k-th and the next) are tied."""
    order = np.lexsort((rowids, distances))[: k + 1]
    distances, rowids = distances[order], rowids[order]
    if np.any(distances[1:] == distances[:-1]):
        return None
    return list(zip(rowids[:k].tolist(), distances[:k].tolist()))


def _squares(vectors: np.ndarray) -> np.ndarray:
    """Each vector's sum of squares as sqlite-vec's ``distance_cosine_float`` takes it (float32,
    in order), in double for the square root it takes next."""
    return _in_order(vectors * vectors).astype(np.float64)


def _in_order(terms: np.ndarray) -> np.ndarray:
    """Each row's float32 sum taken first column to last, as sqlite-vec's loop adds (numpy's
    ``sum`` adds pairwise, another rounding). Added a column at a time across all rows: the same
    additions in the same order as a row-wise ``cumsum``, bit for bit, at a third of its time
    (``cumsum`` along a row walks it one element at a time: 0.9 s of a 20,000-line import)."""
    columns = np.ascontiguousarray(terms.T, dtype=np.float32)
    total = columns[0].copy()
    for column in columns[1:]:
        total += column
    return total


def _norms(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=-1)
    return np.where(norms == 0, 1.0, norms)


def _index(raw, table: str) -> tuple[np.ndarray, np.ndarray]:
    """(rowids, float32 matrix) of the whole index in rowid order, in one scan: a query per block
    (``rowid > ? ORDER BY rowid LIMIT ?``) made vec0 scan and sort the whole index for each block."""
    rows = raw.execute(f"SELECT rowid, embedding FROM {table} ORDER BY rowid").fetchall()
    if not rows:
        return np.empty(0, dtype=np.int64), np.empty((0, 0), dtype=np.float32)
    ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
    return ids, np.frombuffer(b"".join(r[1] for r in rows), dtype=np.float32).reshape(len(rows), -1)
