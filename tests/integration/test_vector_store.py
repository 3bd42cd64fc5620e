"""VectorAdapter over a real SQLite file with real sqlite-vec and the real offline model."""

from __future__ import annotations

import math

import pytest
from embed_server import hashed_vectors
from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.query_terms import terms
from memory.audit import AuditLog
from memory.embedding.gateway import EmbeddingGateway
from memory.embedding.ollama import OllamaEmbedder
from memory.errors import MemoryStorageError
from memory.types import MemoryQuery, MemoryType, PruneMode, PrunePolicy, RetrievalMode, Visibility
from factories import entries_for

AGENT = "agent-1"
SEMANTIC = RetrievalMode.semantic


entry = entries_for(AGENT)


def query(text: str, mode=SEMANTIC, **kw) -> MemoryQuery:
    return MemoryQuery(agent_id=AGENT, text=text, retrieval_mode=mode, **kw)


@pytest.fixture
async def vectors(tmp_path, offline_embedder):
    adapter = VectorAdapter(
        SQLiteAdapter(tmp_path / "memory.db", actor="test", audit=AuditLog(tmp_path / "audit.jsonl")),
        EmbeddingGateway([offline_embedder]),
    )
    yield adapter
    await adapter.aclose()


async def vec_rows(adapter: VectorAdapter, table: str = "memory_vec_1") -> dict[int, tuple]:
    return dict(
        await adapter.store.run(
            lambda raw: [(r[0], (r[1], r[2], r[3])) for r in raw.execute(
                f"SELECT rowid, content_hash, model, vec_to_json(embedding) FROM {table}"
            )]
        )
    )


async def test_first_embedded_write_creates_the_index_and_pins(vectors):
    assert await vectors.meta() is None
    await vectors.write(entry("The user prefers metric units."))
    meta = await vectors.meta()
    assert (meta.model, meta.family, meta.dimension, meta.vec_table) == (
        "sentence-transformers/all-MiniLM-L6-v2", "all-minilm-l6-v2", 384, "memory_vec_1"
    )
    [(hash_, model, blob)] = (await vec_rows(vectors)).values()
    assert model == meta.model and len(hash_) == 32
    import json

    values = json.loads(blob)
    assert math.isclose(math.sqrt(sum(v * v for v in values)), 1.0, rel_tol=1e-5)  # stored L2-normalised


async def test_semantic_search_ranks_by_meaning(vectors):
    await vectors.write_many([entry(t) for t in (
        "The user prefers metric units.", "The cat sat on the mat.", "Deploys happen on Fridays."
    )])
    result = await vectors.recall(query("units the user likes", limit=2))
    assert result.legs == ("semantic",)
    assert result.entries[0].content == "The user prefers metric units."
    assert result.entries[0].matched_by == ["semantic"]
    assert result.entries[0].score > 0.6 > result.entries[1].score
    # the keyword leg alone cannot find it with other words: semantic is doing the work
    q = query("what scale for lengths and weights")
    assert (await vectors.store.keyword_leg(q, terms(q.text), 5))[0] == []
    found = await vectors.search(query("what scale for lengths and weights", limit=1))
    assert found[0].content == "The user prefers metric units."


async def test_vector_of_the_wrong_width_is_refused_and_nothing_is_written(vectors):
    bad = entry("sized wrong")
    with pytest.raises(MemoryStorageError, match="10 dimensions"):
        await vectors.write(bad, vector=[0.1] * 10)
    assert await vectors.store.get(bad.id) is None
    good = entry("sized right")  # positive control: the pinned width is accepted
    await vectors.write(good, vector=[0.0] * 383 + [2.0])
    assert await vectors.store.get(good.id) is not None
    with pytest.raises(MemoryStorageError, match="dimensions but the index holds 384"):
        await vectors.write(entry("pinned now"), vector=[1.0] * 12)


async def test_filters_and_admission_apply_to_semantic_results(vectors):
    await vectors.write_many([
        entry("The user prefers metric units.", type=MemoryType.PREFERENCE, tags=["units"]),
        entry("The user likes kilometres and kilograms.", type=MemoryType.EPISODIC),
        entry("The user measures everything in centimetres.", type=MemoryType.PREFERENCE, visibility=Visibility.HIDDEN),
        entry("The user thinks in metres.", type=MemoryType.PREFERENCE, archived=True),
    ])
    q = "units the user likes"
    everything = {e.content for e in await vectors.search(query(q, limit=10))}
    assert everything == {"The user prefers metric units.", "The user likes kilometres and kilograms."}  # hidden, archived out
    prefs = await vectors.search(query(q, types=[MemoryType.PREFERENCE], limit=10))
    assert [e.content for e in prefs] == ["The user prefers metric units."]
    tagged = await vectors.search(query(q, tags=["units"], limit=10))
    assert [e.content for e in tagged] == ["The user prefers metric units."]
    episodic = await vectors.search(query(q, types=[MemoryType.EPISODIC], limit=10))
    assert [e.content for e in episodic] == ["The user likes kilometres and kilograms."]


@pytest.mark.parametrize("knn_max", [4096, 40])  # 40: forces the filtered scan past sqlite-vec's k ceiling
async def test_selective_filters_do_not_starve_the_limit(vectors, monkeypatch, knn_max):
    import memory.sqlite.semantic as semantic_module

    monkeypatch.setattr(semantic_module, "KNN_MAX", knn_max)
    near = [entry(f"The user prefers metric units, note {i}.") for i in range(120)]
    rare = [entry(t, type=MemoryType.PROCEDURAL) for t in (
        "To bake bread, knead the dough for ten minutes.",
        "Restart the router by holding the button.",
        "File taxes before the April deadline.",
    )]
    await vectors.write_many(near + rare)
    found = await vectors.search(query("units the user likes", types=[MemoryType.PROCEDURAL], limit=3))
    assert sorted(e.content for e in found) == sorted(e.content for e in rare)


async def test_purge_removes_vectors(vectors):
    keep, gone = entry("The user prefers metric units."), entry("The cat sat on the mat.")
    await vectors.write_many([keep, gone])
    assert len(await vec_rows(vectors)) == 2
    assert await vectors.purge([gone.id]) == 1
    rows = await vec_rows(vectors)
    assert len(rows) == 1  # the kept entry's vector stays (positive control)
    assert [e.id for e in await vectors.search(query("cat on a mat", limit=5))] == [keep.id]
    low = entry("Unimportant scribble.", importance=0.1)
    await vectors.write(low)
    report = await vectors.prune(PrunePolicy(min_importance=0.2, mode=PruneMode.PURGE))
    assert report.purged == 1 and len(await vec_rows(vectors)) == 1


async def test_no_compatible_embedder_falls_back_to_keyword_with_one_notice(tmp_path, offline_embedder, embed_server):
    path = tmp_path / "memory.db"
    first = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]))
    await first.write(entry("The user prefers metric units."))
    await first.aclose()
    server = embed_server({"nomic-embed-text": hashed_vectors(384)})
    notices = []
    audit = AuditLog(tmp_path / "audit.jsonl")
    other = VectorAdapter(
        SQLiteAdapter(path, audit=audit), EmbeddingGateway([OllamaEmbedder("nomic-embed-text", url=server.url)]),
        notify=notices.append,
    )
    try:
        for _ in range(3):
            result = await other.recall(query("metric units", mode=RetrievalMode.hybrid))
            assert result.legs == ("keyword",) and "pinned model" in result.fallback
            assert [e.content for e in result.entries] == ["The user prefers metric units."]
        assert len(notices) == 1 and "sentence-transformers/all-MiniLM-L6-v2" in notices[0]
        assert "embedding_degraded" in (tmp_path / "audit.jsonl").read_text()
        await other.write(entry("Written while degraded."))  # stored, just without a vector
        assert (await other.status()).missing == 1
    finally:
        await other.aclose()


async def test_same_family_substitute_serves_a_pinned_database(tmp_path, offline_embedder, offline_like_ollama):
    path = tmp_path / "memory.db"
    first = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]))
    await first.write_many([entry("The user prefers metric units."), entry("The cat sat on the mat.")])
    await first.aclose()
    substitute = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_like_ollama]))
    try:
        result = await substitute.recall(query("units the user likes", limit=1))
        assert result.legs == ("semantic",) and result.entries[0].content == "The user prefers metric units."
        await substitute.write(entry("Written by the substitute."))
        assert (await substitute.meta()).model == "sentence-transformers/all-MiniLM-L6-v2"  # pin unchanged
        models = {m for _, m, _ in (await vec_rows(substitute)).values()}
        assert models == {"sentence-transformers/all-MiniLM-L6-v2", "all-minilm"}
    finally:
        await substitute.aclose()


async def test_bad_items_are_skipped_and_reported_the_rest_commit(tmp_path, embed_server):
    def picky(texts):
        if any("POISON" in t for t in texts):
            raise ValueError("input length exceeds the context length")
        return hashed_vectors(16)(texts)

    server = embed_server({"picky": picky})
    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "m.db"), EmbeddingGateway([OllamaEmbedder("picky", url=server.url)]), commit_batch=4)
    try:
        items = [entry(f"memory number {i}") for i in range(10)]
        items[5] = entry("POISON pill")
        report = await adapter.write_many(items)
        assert report.embedded == 9 and [i for i, _ in report.skipped] == [items[5].id]
        assert "400" in report.skipped[0][1]
        assert await adapter.store.count() == 10  # the bad item's row is kept
        status = await adapter.status()
        assert (status.rows, status.embedded, status.missing) == (10, 9, 1)
        lone = entry("POISON alone")  # a single rejected write is stored and reported, not raised
        assert (await adapter.write_many([lone])).skipped[0][0] == lone.id
        assert await adapter.store.get(lone.id) is not None
        assert any("stored without a vector" in n for n in adapter.notices)
    finally:
        await adapter.aclose()


async def test_rerun_embeds_only_what_changed(vectors):
    items = [entry(f"The user visited city number {i}.") for i in range(6)]
    assert (await vectors.write_many(items)).embedded == 6
    assert (await vectors.write_many(items)).embedded == 0
    items[2].content = "The user moved to Lisbon."
    assert (await vectors.write_many(items)).embedded == 1
    assert (await vectors.backfill()).embedded == 0


async def test_interrupted_bulk_write_keeps_committed_batches(tmp_path, offline_embedder):
    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "m.db"), EmbeddingGateway([offline_embedder]), commit_batch=10)

    def crash(done, total):
        raise KeyboardInterrupt

    try:
        with pytest.raises(KeyboardInterrupt):
            await adapter.write_many([entry(f"Fact number {i} about the garden.") for i in range(25)], on_progress=crash)
        status = await adapter.status()
        assert (status.rows, status.embedded) == (10, 10)
    finally:
        await adapter.aclose()


async def test_a_window_is_embedded_shortest_first_with_progress_inside_it(tmp_path, offline_embedder):
    from memory.adapters.vector import EMBED_CHUNK

    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "m.db"), EmbeddingGateway([offline_embedder]), commit_batch=300)
    lengths = [(i * 37) % 11 for i in range(300)]  # interleaved lengths: sorting must not mix up rows
    entries = [entry(f"Note {i} about topic{i}" + " filler" * n) for i, n in enumerate(lengths)]
    seen = []
    try:
        report = await adapter.write_many(entries, on_progress=lambda done, total: seen.append(done))
        assert report.embedded == 300
        assert seen == [EMBED_CHUNK, 2 * EMBED_CHUNK, 300]  # inside the window, then once it committed
        for probe in (0, 150, 299):  # each row kept its own vector
            found = await adapter.search(MemoryQuery(text=entries[probe].content, retrieval_mode=RetrievalMode.semantic, limit=1))
            assert [e.id for e in found] == [entries[probe].id]
    finally:
        await adapter.aclose()


async def test_a_backfill_checks_the_store_a_page_at_a_time(tmp_path, offline_embedder):
    """A backfill (reindex) and `embeddings status` read the store :attr:`commit_batch` rows at a time
    against the index's hashes, not every stale row's text at once (282 MB at 300,000 rows):
    progress moves per page of rows checked, and only the rows without a current vector are embedded."""
    path = tmp_path / "m.db"
    bare = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([]))
    written = [entry(f"The user likes fruit number {i}.") for i in range(5)]
    await bare.write_many(written[:2])
    await bare.aclose()
    full = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]), commit_batch=2)
    try:
        assert (await full.backfill()).embedded == 2
        bare = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([]))
        await bare.write_many(written[2:])
        await bare.store.update(written[0].id, content="The user likes fruit number zero.")  # its vector is stale now
        await bare.aclose()
        assert (await full.status()).missing == 4  # a re-worded row and three new ones
        seen = []
        report = await full.backfill(on_progress=lambda d, t: seen.append((d, t)))
        assert (report.total, report.embedded) == (4, 4) and seen == [(2, 5), (4, 5), (5, 5)]
        assert (await full.status()).missing == 0 and (await full.backfill()).embedded == 0
    finally:
        await full.aclose()


async def test_backfill_embeds_rows_written_without_an_embedder(tmp_path, offline_embedder):
    path = tmp_path / "m.db"
    down = OllamaEmbedder("all-minilm", url="http://127.0.0.1:9")  # nothing listens on port 9
    bare = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([down]))
    await bare.write_many([entry(f"The user likes fruit number {i}.") for i in range(5)])
    assert (await bare.status()).meta is None
    assert any("no healthy embedder" in n for n in bare.notices)
    await bare.aclose()
    # Keyword-only by configuration (no embedder at all) is a choice, not a degradation: no notice.
    chosen = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([]))
    await chosen.write_many([entry("The user likes fruit number 5.")])
    assert chosen.notices == []
    await chosen.aclose()
    full = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]))
    try:
        seen = []
        report = await full.backfill(on_progress=lambda d, t: seen.append((d, t)))
        assert report.embedded == 6 and seen[-1] == (6, 6)
        status = await full.status()
        assert status.meta.dimension == 384 and status.missing == 0
    finally:
        await full.aclose()
