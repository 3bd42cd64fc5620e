"""The compact vector index (memory/sqlite/compact.py) on a real store: real SQLite, sqlite-vec, offline model.

The store is small, so the thresholds are lowered to put it on the compact
path; ``compact_from`` far above the store's size is the exact scan beside it.
"""

from __future__ import annotations

import pytest

from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.ranking.fusion import hybrid_pool
from memory.embedding.gateway import EmbeddingGateway
from memory.migrations.runner import head_version
from memory.sqlite import compact
from memory.sqlite.admission import where
from memory.sqlite.vectors import KNN_FLOOR, nearest, pack
from memory.types import MemoryQuery, PruneMode, PrunePolicy, RetrievalMode, Visibility
from factories import entries_for

AGENT = "agent-1"
entry = entries_for(AGENT)
SUBJECTS = ("the printer", "the garden", "deploys", "the laptop", "invoices", "coffee", "backups", "lunch")
EVENTS = ("broke down", "was fixed", "moved to Tuesday", "needs attention", "got cheaper", "is late again",
          "was discussed at the standup", "surprised everyone", "went well", "was cancelled")
QUERIES = ("when do we deploy", "the garden plants need water", "coffee machine", "late invoices", "laptop battery")


def corpus() -> list:
    return [entry(f"{s} {e} (note {i})", importance=0.5) for i, (s, e) in
            enumerate((s, e) for s in SUBJECTS for e in EVENTS for _ in range(2))]


def query(text: str, **kw) -> MemoryQuery:
    return MemoryQuery(agent_id=AGENT, text=text, retrieval_mode=RetrievalMode.semantic, limit=10, **kw)


@pytest.fixture
def small_thresholds(monkeypatch):
    monkeypatch.setattr(compact, "BUILD_FROM", 100)


@pytest.fixture
async def pair(tmp_path, offline_embedder, small_thresholds):
    """(compact, exact): two adapters over one store file, one on each path."""
    store = SQLiteAdapter(tmp_path / "memory.db", actor="test")
    fast = VectorAdapter(store, EmbeddingGateway([offline_embedder]), compact_from=1)
    exact = VectorAdapter(store, EmbeddingGateway([offline_embedder]), compact_from=10**9)
    await fast.write_many(corpus())
    yield fast, exact
    await store.aclose()


async def ids(adapter: VectorAdapter, q: MemoryQuery) -> list[str]:
    return [e.id for e in await adapter.search(q)]


async def codes(adapter: VectorAdapter) -> int:
    meta = await adapter.meta()
    return await adapter.store.run(compact.size, meta.vec_table)


async def on_compact_path(adapter: VectorAdapter, offline_embedder, q: MemoryQuery) -> bool:
    meta = await adapter.meta()
    [vector] = await offline_embedder.embed([q.text])
    clause = where(q)
    _, used = await adapter.store.run(nearest, meta.vec_table, pack(vector), 10, clause.sql, clause.params, 1)
    return used


async def test_the_write_that_crosses_the_threshold_builds_it_and_top_k_matches_the_exact_scan(pair, offline_embedder):
    fast, exact = pair
    assert await codes(fast) == len(corpus())  # built by the write path, one code per vector
    for text in QUERIES:
        assert await on_compact_path(fast, offline_embedder, query(text))
        assert await ids(fast, query(text)) == await ids(exact, query(text))


async def test_an_inadmissible_row_never_comes_back_beside_an_admitted_twin(pair, offline_embedder):
    fast, exact = pair
    text = "The user keeps a spare key under the blue flowerpot"
    visible, hidden, archived, other = (entry(text + f" ({tag})") for tag in ("visible", "hidden", "archived", "other"))
    other = other.model_copy(update={"agent_id": "agent-2"})
    await fast.write_many([visible, hidden, archived, other])
    await fast.store.set_visibility([hidden.id], Visibility.HIDDEN)
    await fast.store.archive([archived.id])
    q = query("where is the spare key")
    assert await on_compact_path(fast, offline_embedder, q)
    found = await ids(fast, q)
    assert found[0] == visible.id  # positive control: the admitted twin is the best hit
    assert not {hidden.id, archived.id, other.id} & set(found)
    assert found == await ids(exact, q)
    # the same rule at the SQL level, before the adapter reads any row
    meta = await fast.meta()
    [vector] = await offline_embedder.embed([q.text])
    clause = where(q)
    hits, _ = await fast.store.run(nearest, meta.vec_table, pack(vector), 200, clause.sql, clause.params, 1)
    seqs = dict(await fast.store.run(lambda raw: raw.execute("SELECT id, seq FROM memories").fetchall()))
    assert seqs[visible.id] in {s for s, _ in hits}
    assert not {seqs[hidden.id], seqs[archived.id], seqs[other.id]} & {s for s, _ in hits}


async def test_it_follows_writes_edits_deletes_and_purges(pair, offline_embedder):
    fast, exact = pair
    n = len(corpus())
    fresh = entry("The user's passport expires in March")
    await fast.write(fresh)
    assert await codes(fast) == n + 1
    assert (await ids(fast, query("when does the passport expire")))[0] == fresh.id
    edited = fresh.model_copy(update={"content": "The user's bicycle has a flat tyre"})
    await fast.write(edited)  # new text, new vector: its code is replaced, not added
    assert await codes(fast) == n + 1
    assert (await ids(fast, query("bike puncture")))[0] == fresh.id
    assert await fast.store.delete(fresh.id)
    assert await codes(fast) == n
    assert fresh.id not in await ids(fast, query("bike puncture"))
    low = [entry(f"a throwaway note about the weather number {i}", importance=0.01) for i in range(3)]
    await fast.write_many(low)
    assert await codes(fast) == n + 3
    report = await fast.prune(PrunePolicy(min_importance=0.05, mode=PruneMode.PURGE))
    assert report.purged == 3 and await codes(fast) == n
    assert not {e.id for e in low} & set(await ids(fast, query("weather")))
    for text in QUERIES:
        assert await ids(fast, query(text)) == await ids(exact, query(text))


async def test_a_reindex_builds_the_new_index_its_compact_twin_and_drops_the_old(pair, offline_embedder):
    fast, exact = pair
    old = (await fast.meta()).vec_table
    await fast.reembed(offline_embedder)
    meta = await fast.meta()
    assert meta.vec_table != old
    tables = {r[0] for r in await fast.store.run(lambda raw: raw.execute("SELECT name FROM sqlite_master").fetchall())}
    assert compact.codes_table(meta.vec_table) in tables and compact.codes_table(old) not in tables
    assert await codes(fast) == len(corpus())
    for text in QUERIES:
        assert await on_compact_path(fast, offline_embedder, query(text))
        assert await ids(fast, query(text)) == await ids(exact, query(text))


async def test_migration_9_builds_it_for_an_existing_store(tmp_path, offline_embedder, small_thresholds):
    path = tmp_path / "memory.db"
    store = SQLiteAdapter(path, actor="test")
    adapter = VectorAdapter(store, EmbeddingGateway([offline_embedder]), compact_from=1)
    await adapter.write_many(corpus())
    table = (await adapter.meta()).vec_table

    def back_to_v8(raw):  # the store as v8 left it: float vectors, no compact index (nor v10's census)
        compact.drop(raw, table)
        for trigger in ("insert", "delete", "update"):
            raw.execute(f"DROP TRIGGER memory_census_{trigger}")
        raw.execute("DROP TABLE memory_census")
        raw.execute("DELETE FROM schema_migrations WHERE version >= 9")
        raw.execute("PRAGMA user_version = 8")

    await store.run(back_to_v8)
    assert await codes(adapter) == 0
    await adapter.aclose()
    reopened = VectorAdapter(SQLiteAdapter(path, actor="test"), EmbeddingGateway([offline_embedder]), compact_from=1)
    assert await reopened.store.schema_version() == head_version()
    assert await codes(reopened) == len(corpus())
    assert await on_compact_path(reopened, offline_embedder, query(QUERIES[0]))
    await reopened.aclose()


async def test_a_small_store_keeps_the_exact_scan(tmp_path, offline_embedder):
    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "memory.db", actor="test"), EmbeddingGateway([offline_embedder]))
    await adapter.write_many(corpus()[:20])
    assert await codes(adapter) == 0  # below BUILD_FROM: nothing built, nothing to maintain
    assert not await on_compact_path(adapter, offline_embedder, query(QUERIES[0]))
    assert (await adapter.search(query("printer jammed")))[0].content.startswith("the printer")
    await adapter.aclose()


async def test_the_rescoring_reads_the_candidates_floats_in_seq_order(pair, offline_embedder):
    """vec0 keeps floats in ~1.5 MB chunks: read in hamming order, 800 candidates took 4-6x as long
    (bench_scale.py's hybrid leg); so the candidate list drives the read, in seq order."""
    fast, exact = pair
    meta = await fast.meta()
    q = query(QUERIES[0])
    [vector] = await offline_embedder.embed([q.text])
    clause = where(q)

    def plan_of_the_search(raw):
        statements: list[str] = []
        raw.set_trace_callback(statements.append)
        try:
            hits = compact.search(raw, meta.vec_table, pack(vector), 10, clause.sql, clause.params)
        finally:
            raw.set_trace_callback(None)
        [rescore] = [s for s in statements if "vec_distance_cosine(v.embedding" in s]
        return hits, [r[3] for r in raw.execute(f"EXPLAIN QUERY PLAN {rescore}")]

    hits, plan = await fast.store.run(plan_of_the_search)
    assert len(hits) == 10  # positive control: the traced statement is the one that answered
    assert any(step.startswith("LIST SUBQUERY") for step in plan), plan
    assert not any(step == "SCAN c" for step in plan), plan
    assert await ids(fast, q) == await ids(exact, q)


async def test_a_hybrid_leg_asks_the_compact_index_for_its_pool_not_four_times_it(pair, offline_embedder):
    """The compact index admits inside its statement, so the exact scan's over-fetch is not applied
    on top of its own: a hybrid leg of 50 rescores RESCORE x 50 floats, not RESCORE x 200."""
    fast, exact = pair
    statements: list[str] = []
    await fast.store.run(lambda raw: raw.set_trace_callback(statements.append))
    try:
        hybrid = await ids(fast, query(QUERIES[1]).model_copy(update={"retrieval_mode": RetrievalMode.hybrid}))
        semantic = await ids(fast, query(QUERIES[1]))
    finally:
        await fast.store.run(lambda raw: raw.set_trace_callback(None))
    rescores = [s for s in statements if "vec_distance_cosine(v.embedding" in s]
    limits = [int(s.rsplit("LIMIT", 1)[1]) for s in rescores]
    assert limits == [hybrid_pool(10), KNN_FLOOR]  # positive control: a semantic query of 10 keeps its floor
    assert len(hybrid) == len(semantic) == 10
    assert semantic == await ids(exact, query(QUERIES[1]))


async def test_the_hashes_of_a_whole_index_are_held_in_one_copy(store):
    """A whole-store check holds every vector's hash (40 bytes a row); gathering them in pages, then joining
    and reordering, held two or three copies at the peak (88 bytes a row: 26 MB at 300,000 rows, now 15).
    That end phase outweighs the 10,000-row fetch only past ~85,000 rows, hence the sizes."""
    import random
    import tracemalloc

    from memory.sqlite.vectors import StoredHashes, _create_table, content_hash

    await store.ensure_vec()
    seqs = list(range(1, 200_001))
    random.Random(7).shuffle(seqs)  # rowids out of order, so the sort is needed

    def add(raw, part):
        _create_table(raw, "memory_vec_9", 2)
        raw.executemany("INSERT INTO memory_vec_9 (rowid, embedding, content_hash, model) VALUES (?, ?, ?, 'm')",
                        [(s, pack([1.0, float(s)]), content_hash(f"text {s}")) for s in part])
        raw.commit()

    def peak(raw):
        tracemalloc.start()
        try:
            held = StoredHashes(raw, "memory_vec_9")
            return held, tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    await store.run(add, seqs[:100_000])
    _, small = await store.run(peak)
    await store.run(add, seqs[100_000:])
    held, large = await store.run(peak)
    assert (large - small) / 100_000 < 60, (small, large)  # bytes a row held at the peak
    rows = [(5, "a", "text 5"), (6, "b", "edited"), (200_001, "c", "text 200001")]  # control: it still answers
    assert held.stale(rows) == rows[1:] and len(held.ids) == 200_000
