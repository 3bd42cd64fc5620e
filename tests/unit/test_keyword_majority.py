"""A large store's keyword search leaves words in most rows out of the match (memory/sqlite/fts.py,
``without_majority``) and ranks as the whole query does; a small store searches the whole query.

One real store of MAJORITY_FROM rows, built once: "often" is in 90% of the rows (bm25 clamps its
idf), "sometimes" in 40% (a real idf, so it is kept), "kettle" in 200 rows of distinct lengths
(no two score alike), "zebra" in 3. The oracle is a plain FTS5 bm25 over the whole OR query.
Rows whose kept words score exactly alike may be ordered otherwise than the oracle orders them (the
left-out word moved their scores by ~1e-6), so the kettle rows are built to score apart.
"""

from __future__ import annotations

import asyncio

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.query_terms import terms
from memory.sqlite import fts
from memory.types import MemoryEntry, MemoryQuery

ROWS = fts.MAJORITY_FROM
ORACLE = (
    "SELECT m.id FROM memories_fts f JOIN memories m ON m.seq = f.rowid WHERE memories_fts MATCH ? "
    "ORDER BY bm25(memories_fts, 1.0, 1.0, 0.5, 1.0), m.seq LIMIT ?"
)


def content(i: int) -> str:
    words = [f"filler{i % 97}", f"word{i % 89}"]
    if i % 10:
        words.append("often")
    if i % 5 < 2:
        words.append("sometimes")
    if i % 100 == 7:
        words += ["kettle"] + [f"pad{j}" for j in range(i // 100)]  # a distinct length per kettle row
    if i in (3, 9_003, 17_003):
        words.append("zebra")
    return " ".join(words)


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    path = tmp_path_factory.mktemp("majority") / "memory.db"
    loop = asyncio.new_event_loop()
    adapter = SQLiteAdapter(path, actor="test")
    loop.run_until_complete(adapter.write_many([MemoryEntry(agent_id="a", content=content(i)) for i in range(ROWS)]))
    yield loop, adapter
    loop.run_until_complete(adapter.aclose())
    loop.close()


def search(store, text: str, limit: int = 10) -> list[str]:
    loop, adapter = store
    return [e.id for e in loop.run_until_complete(adapter.search(MemoryQuery(agent_id="a", text=text, limit=limit)))]


def oracle(store, text: str, limit: int = 10) -> list[str]:
    loop, adapter = store
    match = fts.match_expression(terms(text))
    return loop.run_until_complete(adapter.run(lambda raw: [r[0] for r in raw.execute(ORACLE, (match, limit))]))


def narrowed(store, text: str):
    loop, adapter = store
    return loop.run_until_complete(adapter.run(fts.without_majority, terms(text)))


def test_a_majority_word_is_left_out_and_the_ranking_agrees(store):
    assert narrowed(store, "often kettle").tokens == ("kettle",)
    assert search(store, "often kettle") == oracle(store, "often kettle")
    assert search(store, "often kettle", limit=50) == oracle(store, "often kettle", limit=50)


def test_a_word_in_fewer_than_half_the_rows_is_kept(store):
    # the positive control: "sometimes" (40%) has a real idf, so it stays in the match
    assert narrowed(store, "often sometimes kettle").tokens == ("sometimes", "kettle")
    assert narrowed(store, "sometimes kettle") is None
    assert search(store, "sometimes kettle") == oracle(store, "sometimes kettle")


def test_too_few_rows_without_the_majority_word_run_the_whole_query(store):
    assert narrowed(store, "often zebra").tokens == ("zebra",)  # 3 rows: fewer than the limit
    found = search(store, "often zebra")
    assert len(found) == 10
    assert set(found[:3]) == set(oracle(store, "often zebra")[:3])  # the three score alike: compared as a set
    assert set(oracle(store, "zebra", limit=10)) < set(found)  # the tail is rows holding only "often"


def test_a_query_of_one_majority_word_is_searched_whole(store):
    assert narrowed(store, "often") is None
    assert len(search(store, "often")) == 10


async def test_a_small_store_searches_the_whole_query(tmp_path):
    adapter = SQLiteAdapter(tmp_path / "small.db", actor="test")
    try:
        await adapter.write_many([MemoryEntry(agent_id="a", content=content(i)) for i in range(ROWS // 10)])
        # the same words that are sampled on the large store: "often" would be left out there
        assert await adapter.run(fts.without_majority, terms("often kettle")) is None
    finally:
        await adapter.aclose()
