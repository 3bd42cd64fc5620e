"""Changing models: a new index built beside the live one, re-pinned only when complete."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from embed_server import hashed_vectors
from memory.adapters.sqlite import SQLiteAdapter
from memory.adapters.vector import VectorAdapter
from memory.embedding.gateway import EmbeddingGateway
from memory.embedding.ollama import OllamaEmbedder
from memory.types import MemoryEntry, MemoryQuery, RetrievalMode

ROOT = Path(__file__).resolve().parents[2]
AGENT = "agent-1"


def tables(adapter):
    return adapter.store.run(
        lambda raw: [r[0] for r in raw.execute(
            "SELECT name FROM sqlite_master WHERE name GLOB 'memory_vec_[0-9]*' AND sql LIKE 'CREATE VIRTUAL%' ORDER BY name"
        )]
    )


async def test_reembed_interrupted_keeps_the_old_index_then_resumes(tmp_path, offline_embedder, embed_server):
    server = embed_server({"fake-embed": hashed_vectors(16)})
    path = tmp_path / "memory.db"
    adapter = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]), commit_batch=10)
    await adapter.write_many([MemoryEntry(agent_id=AGENT, content=f"Fact {i}: the user likes colour {i}.") for i in range(25)])
    await adapter.write(MemoryEntry(agent_id=AGENT, content="The user prefers metric units."))
    new_model = OllamaEmbedder("fake-embed", url=server.url)

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await adapter.reembed(new_model, on_progress=interrupt)
    meta = await adapter.meta()
    assert (meta.model, meta.vec_table, meta.dimension) == ("sentence-transformers/all-MiniLM-L6-v2", "memory_vec_1", 384)
    assert await tables(adapter) == ["memory_vec_1", "memory_vec_2"]
    # the live index still answers semantically while the new one is half built
    hit = await adapter.search(MemoryQuery(agent_id=AGENT, text="units the user likes", retrieval_mode=RetrievalMode.semantic, limit=1))
    assert hit[0].content == "The user prefers metric units."
    partial = await adapter.store.run(lambda raw: raw.execute("SELECT count(*) FROM memory_vec_2").fetchone()[0])
    assert partial == 10

    requests_before = len(server.requests)
    report = await adapter.reembed(new_model)
    assert report.embedded == 16  # only what the interrupted run had not done
    embedded_texts = sum(len(r["input"]) for r in server.requests[requests_before:])
    assert embedded_texts == 16 + 1  # plus the health check
    meta = await adapter.meta()
    assert (meta.model, meta.family, meta.vec_table, meta.dimension) == ("fake-embed", "fake-embed", "memory_vec_2", 16)
    assert await tables(adapter) == ["memory_vec_2"]
    assert (await adapter.status()).missing == 0
    await adapter.aclose()


async def test_an_abandoned_build_for_another_model_is_replaced(tmp_path, offline_embedder, embed_server):
    server = embed_server({"model-a": hashed_vectors(8), "model-b": hashed_vectors(12)})
    adapter = VectorAdapter(SQLiteAdapter(tmp_path / "m.db"), EmbeddingGateway([offline_embedder]), commit_batch=5)
    await adapter.write_many([MemoryEntry(agent_id=AGENT, content=f"note {i}") for i in range(12)])

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        await adapter.reembed(OllamaEmbedder("model-a", url=server.url), on_progress=interrupt)
    report = await adapter.reembed(OllamaEmbedder("model-b", url=server.url))
    assert report.embedded == 12 and (await adapter.meta()).dimension == 12
    assert await tables(adapter) == ["memory_vec_2"]
    await adapter.aclose()


def test_without_sqlite_vec_search_falls_back_to_keyword_once(tmp_path, offline_embedder):
    """No sqlite-vec to load: keyword, one notice, nothing fails.

    The child removes the capability itself (the extension cannot be imported),
    so this holds on any interpreter, including one whose stdlib sqlite3 can load extensions.
    """
    import asyncio

    path = tmp_path / "memory.db"

    async def seed():
        adapter = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]))
        await adapter.write(MemoryEntry(agent_id=AGENT, content="The user prefers metric units."))
        await adapter.aclose()

    asyncio.run(seed())
    script = textwrap.dedent(f"""
        import sys, asyncio
        sys.modules["sqlite_vec"] = None  # the extension cannot be loaded, whatever this SQLite can do
        from memory.adapters.sqlite import SQLiteAdapter
        from memory.adapters.vector import VectorAdapter
        from memory.embedding.factory import build_gateway
        from memory.config import EmbeddingConfig
        from memory.home import Home
        from memory.types import MemoryEntry, MemoryQuery, RetrievalMode

        async def main():
            notices = []
            adapter = VectorAdapter(SQLiteAdapter({str(path)!r}), build_gateway(EmbeddingConfig(), Home.resolve()), notify=notices.append)
            for mode in ("semantic", "hybrid"):
                r = await adapter.recall(MemoryQuery(agent_id="{AGENT}", text="metric units", retrieval_mode=mode))
                print(mode, r.legs, [e.content for e in r.entries])
            await adapter.write(MemoryEntry(agent_id="{AGENT}", content="Written without sqlite-vec."))
            print(len(notices), notices[0])
            print("fastembed" in sys.modules)
            await adapter.aclose()

        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "semantic ('keyword',) ['The user prefers metric units.']"
    assert lines[1] == "hybrid ('keyword',) ['The user prefers metric units.']"
    assert lines[2].startswith("2 sqlite-vec is unavailable")  # one for search, one for writes; never repeated
    assert lines[3] == "False"  # nothing was embedded, so the model was never loaded


def test_reembed_killed_mid_run_leaves_the_live_index_and_resumes(tmp_path, offline_embedder, embed_server):
    """A real crash (the process dies without cleanup) during a re-embed loses nothing."""
    import asyncio

    server = embed_server({"fake-embed": hashed_vectors(16)})
    path = tmp_path / "memory.db"

    async def seed():
        adapter = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]))
        await adapter.write_many([MemoryEntry(agent_id=AGENT, content=f"Fact {i} about the user.") for i in range(30)])
        await adapter.aclose()

    asyncio.run(seed())
    script = textwrap.dedent(f"""
        import asyncio, os
        from memory.adapters.sqlite import SQLiteAdapter
        from memory.adapters.vector import VectorAdapter
        from memory.embedding.gateway import EmbeddingGateway
        from memory.embedding.ollama import OllamaEmbedder

        def die(done, total):
            os._exit(9)  # no cleanup, no rollback handlers: like kill -9 after the first batch

        async def main():
            adapter = VectorAdapter(SQLiteAdapter({str(path)!r}), EmbeddingGateway([]), commit_batch=8)
            await adapter.reembed(OllamaEmbedder("fake-embed", url={server.url!r}), on_progress=die)

        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 9, done.stderr

    async def check():
        adapter = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]), commit_batch=8)
        try:
            assert (await adapter.meta()).vec_table == "memory_vec_1"
            assert (await adapter.status()).missing == 0  # the live index is whole
            assert await adapter.store.run(lambda raw: raw.execute("PRAGMA integrity_check").fetchone()[0]) == "ok"
            report = await adapter.reembed(OllamaEmbedder("fake-embed", url=server.url))
            assert report.embedded == 22  # 8 were committed before the crash
            assert (await adapter.meta()).model == "fake-embed"
        finally:
            await adapter.aclose()

    asyncio.run(check())


def test_a_stopped_re_embed_shows_in_embeddings_status_and_doctor(arcana_home, cli, offline_embedder, embed_server):
    """A re-embed stopped part way left its new index beside the live one, and neither `embeddings status`
    nor `doctor` said so: the home looked re-embedded (the other stores may be) while this one still
    recalled with the old model. Both name it now, with the command that finishes it; bob's store, never
    re-embedded, and ada's once finished, are the controls."""
    import asyncio
    import json

    from memory.agents import AgentRegistry

    server = embed_server({"fake-embed": hashed_vectors(16)})
    for name, count in (("ada", 5), ("bob", 2)):
        for i in range(count):
            assert cli("remember", f"{name} fact {i}: the user likes colour {i}.", "--agent", name).exit_code == 0
    path = arcana_home.agent_db(AgentRegistry(arcana_home).resolve("ada").id)

    async def reembed(on_progress=None) -> None:
        adapter = VectorAdapter(SQLiteAdapter(path), EmbeddingGateway([offline_embedder]), commit_batch=2)
        try:
            await adapter.reembed(OllamaEmbedder("fake-embed", url=server.url), on_progress=on_progress)
        finally:
            await adapter.aclose()

    def interrupt(done, total):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        asyncio.run(reembed(interrupt))

    def seen() -> tuple[dict, list[dict]]:
        status = {r["agent"]: r for r in json.loads(cli("embeddings", "status", "--json").stdout)["databases"] if r["agent"]}
        return status, [c for c in json.loads(cli("doctor", "--json").stdout)["checks"] if c["name"].startswith("re-embed")]

    status, checks = seen()
    assert status["ada"]["building"] == {"model": "fake-embed", "vectors": 2}
    assert "re-embed to fake-embed stopped at 2 of 5 rows" in status["ada"]["note"]
    [check] = checks
    assert check["name"] == "re-embed ada" and not check["ok"]
    assert "`arcana reindex --agent ada --re-embed --model fake-embed`" in check["detail"]
    assert status["bob"]["building"] is None and "re-embed" not in status["bob"]["note"]
    asyncio.run(reembed())
    status, checks = seen()
    assert status["ada"]["building"] is None and status["ada"]["model"] == "fake-embed" and checks == []
