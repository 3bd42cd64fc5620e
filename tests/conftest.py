"""Shared fixtures. Every test gets its own ARCANA_HOME under tmp_path."""

from __future__ import annotations

import pytest

from memory.home import Home


@pytest.fixture(autouse=True)
def arcana_home(tmp_path, monkeypatch) -> Home:
    root = tmp_path / "arcana-home"
    monkeypatch.setenv("ARCANA_HOME", str(root))
    monkeypatch.delenv("ARCANA_AGENT", raising=False)
    return Home(root)


@pytest.fixture
async def store(tmp_path):
    """A real SQLiteAdapter on a file under tmp_path, closed after the test."""
    from memory.adapters.sqlite import SQLiteAdapter

    adapter = SQLiteAdapter(tmp_path / "store" / "memory.db", actor="test")
    yield adapter
    await adapter.aclose()


@pytest.fixture
def cli():
    """Invoke the real Typer app in-process: cli("recall", "x", "--agent", "a", input=...)."""
    from typer.testing import CliRunner

    from arcana_cli.app import app

    runner = CliRunner()

    def invoke(*args: str, input: str | None = None):
        return runner.invoke(app, list(args), input=input)

    return invoke


@pytest.fixture(scope="session")
def offline_embedder(tmp_path_factory):
    """The real offline all-MiniLM-L6-v2 (int8) through fastembed, loaded once per session."""
    from memory.embedding.fastembed import FastEmbedEmbedder

    import asyncio

    embedder = FastEmbedEmbedder(models_root=tmp_path_factory.mktemp("models"))
    status = asyncio.run(embedder.health_check())
    assert status.healthy, status.message
    return embedder


@pytest.fixture
def embed_server():
    """Start loopback Ollama /api/embed servers: embed_server({"model": fn}, delay=0) -> server."""
    from embed_server import LoopbackEmbedServer

    started = []

    def start(models, **kwargs):
        server = LoopbackEmbedServer(models, **kwargs).__enter__()
        started.append(server)
        return server

    yield start
    for server in started:
        server.__exit__(None, None, None)


@pytest.fixture
def offline_like_ollama(embed_server, offline_embedder):
    """An OllamaEmbedder named 'all-minilm' (same family as the offline model) serving its real vectors."""
    import asyncio

    from memory.embedding.ollama import OllamaEmbedder

    def embed(texts):
        return asyncio.run(offline_embedder.embed(list(texts)))

    server = embed_server({"all-minilm": embed})
    embedder = OllamaEmbedder("all-minilm", url=server.url)
    return embedder
