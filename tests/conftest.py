"""Shared fixtures. Every test gets its own ARCANA_HOME under tmp_path."""

from __future__ import annotations

import os

import pytest

from memory.home import Home

# Each worker loads the offline model and may start its own PostgreSQL: past a few, more cores
# buy little and cost memory.
MAX_WORKERS = 4


def pytest_xdist_auto_num_workers(config) -> int:
    """``-n auto``: one worker per core this process may use and one more, at most MAX_WORKERS.

    Many tests wait (a process's start, a held lock's timeout, a watcher's debounce): with one
    worker a core, a waiting worker left its core idle. On 2 cores the whole run took ~780 s
    with 2 workers, 523 s with 3 and 498 s with 4 (2026-12-07, a quiet machine)."""
    return max(1, min(MAX_WORKERS, len(os.sched_getaffinity(0)) + 1))


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


@pytest.fixture
def model_server():
    """A loopback Ollama/OpenAI-speaking chat server; see tests/support/model_server.py."""
    from model_server import LoopbackModelServer

    with LoopbackModelServer() as server:
        yield server


# -- Markdown vaults (issue 4) ---------------------------------------------------


def _tree_digest(root) -> str:
    """A hash of every path, mode, and byte under ``root`` (symlinks by target, not followed)."""
    import hashlib
    import os

    digest = hashlib.sha256()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames.sort()
        for name in sorted(dirnames + filenames):
            path = os.path.join(dirpath, name)
            st = os.lstat(path)
            digest.update(f"{os.path.relpath(path, root)}\0{st.st_mode}\0{st.st_mtime_ns}\0".encode("utf-8", "surrogateescape"))
            if os.path.islink(path):
                digest.update(os.readlink(path).encode("utf-8", "surrogateescape"))
            elif name in filenames:
                try:
                    with open(path, "rb") as handle:
                        digest.update(handle.read())
                except OSError:
                    digest.update(b"<unreadable>")
    return digest.hexdigest()


@pytest.fixture
def make_vault(tmp_path):
    """make_vault({"a.md": "text", "sub/b.md": b"bytes"}) -> a folder of notes under tmp_path."""
    counter = iter(range(1000))

    def build(files: dict, name: str | None = None):
        root = tmp_path / (name or f"vault{next(counter)}")
        root.mkdir(parents=True)
        for rel, content in files.items():
            path = root / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                path.write_bytes(content)
            else:
                path.write_text(content, encoding="utf-8")
        return root

    return build


@pytest.fixture
def tree_digest():
    """tree_digest(root) -> hex digest of the whole tree (names, modes, mtimes, bytes)."""
    return _tree_digest


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


@pytest.fixture
def no_embedder(arcana_home):
    """A home whose config lists no embedding provider: keyword-only, no model load."""
    from runner import keyword_only

    keyword_only(arcana_home)
    return arcana_home


# -- PostgreSQL + pgvector (issue 14) --------------------------------------------


@pytest.fixture(scope="session")
def pg_server():
    """A throwaway PostgreSQL 16 + pgvector for the session (tests/support/pg_server.py).

    Skipped with a one-line reason only where no server can be had; under CI
    (``CI=true``) that is a failure instead.
    """
    import os

    import pg_server as pg

    try:
        server = pg.start_server()
    except pg.NoServer as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"CI needs a PostgreSQL server: {exc}")
        pytest.skip(f"no PostgreSQL server: {exc}")
    yield server
    pg.remove(server)


@pytest.fixture
def pg_url(pg_server):
    """A URL to an empty database on the session's server, emptied again for each test
    (dropping its schema takes ~50 ms; CREATE DATABASE ~300 ms)."""
    return pg_server.fresh_database("arcana_test")
