"""A window's exact KNN (memory/sqlite/window_knn.py) against sqlite-vec's own, on a real vec0 table."""

from __future__ import annotations

import numpy as np
import pytest

from memory.sqlite.connection import dbapi, load_vec
from memory.sqlite.vectors import knn
from memory.sqlite.window_knn import knn_many

DIM = 384


@pytest.fixture
def index():
    raw = dbapi().connect(":memory:")
    if load_vec(raw) is None:
        pytest.skip("sqlite-vec cannot load here")
    raw.execute(f"CREATE VIRTUAL TABLE v USING vec0(embedding float[{DIM}] distance_metric=cosine)")
    yield raw
    raw.close()


def fill(raw, vectors: np.ndarray) -> None:
    raw.executemany("INSERT INTO v (rowid, embedding) VALUES (?, ?)", [(i + 1, v.tobytes()) for i, v in enumerate(vectors)])


def unit(rng, n: int) -> np.ndarray:
    vectors = rng.standard_normal((n, DIM)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("stored", [5, 300, 9_000])  # fewer than k, a block's share, several blocks
def test_each_answer_is_sqlite_vecs_own(index, stored):
    rng = np.random.default_rng(stored)
    vectors = unit(rng, stored)
    fill(index, vectors)
    near = vectors[rng.integers(0, stored, 40)] + 0.1 * unit(rng, 40)  # queries with near neighbours
    queries = [q.tobytes() for q in np.concatenate([near.astype(np.float32), unit(rng, 40)])]
    answers = knn_many(index, "v", queries, 40)
    own = [knn(index, "v", q, 40) for q in queries]
    # rows, order and distances to the bit; None (left to sqlite-vec) only where float32 distances
    # tie or crowd the k-th, which random vectors in 384 dimensions do now and then
    assert [a for a, o in zip(answers, own) if a is not None and a != o] == []
    assert sum(a is None for a in answers) <= len(queries) // 20


def test_a_tie_among_the_nearest_is_left_to_sqlite_vec(index):
    rng = np.random.default_rng(7)
    vectors = unit(rng, 500)
    vectors[10] = vectors[20] = vectors[30]  # one text stored three times
    fill(index, vectors)
    tied, plain = knn_many(index, "v", [vectors[30].tobytes(), vectors[31].tobytes()], 40)
    assert tied is None  # sqlite-vec's order between equal distances is its own
    assert plain == knn(index, "v", vectors[31].tobytes(), 40)  # positive control


def test_an_empty_index_has_no_neighbours(index):
    assert knn_many(index, "v", [unit(np.random.default_rng(1), 1)[0].tobytes()], 40) == [[]]


def test_sums_are_taken_in_order_as_sqlite_vec_adds():
    from memory.sqlite.window_knn import _in_order

    terms = np.random.default_rng(3).standard_normal((2_000, DIM)).astype(np.float32)
    in_order = np.cumsum(terms, axis=1, dtype=np.float32)[:, -1]  # one addition after another, along each row
    assert np.array_equal(_in_order(terms), in_order)  # bit for bit
    assert not np.array_equal(terms.sum(axis=1, dtype=np.float32), in_order)  # control: pairwise sums round otherwise



def test_a_window_ranks_on_one_blas_thread_and_puts_the_count_back(index):
    from memory.sqlite.window_knn import _one_blas_thread, _openblas_threads

    threads = _openblas_threads()
    if threads is None:
        pytest.skip("numpy here is not built with the scipy-openblas its wheels ship")
    get, put = threads
    before = get()
    put(2)
    try:
        with _one_blas_thread():
            assert get() == 1
        assert get() == 2  # control: put back as it was, for the compact index's k-means
        vectors = unit(np.random.default_rng(5), 300)
        fill(index, vectors)
        assert knn_many(index, "v", [vectors[3].tobytes()], 10) == [knn(index, "v", vectors[3].tobytes(), 10)]
        assert get() == 2
    finally:
        put(before)
