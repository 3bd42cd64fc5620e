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
