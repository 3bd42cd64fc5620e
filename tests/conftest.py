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
