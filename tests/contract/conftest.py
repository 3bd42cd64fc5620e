"""Contract tests: one ``store`` fixture, parametrised over both engines, so every test here holds for
SQLite and PostgreSQL alike. A test that holds for SQLite only says why with ``@pytest.mark.sqlite_only``."""

from __future__ import annotations

import pytest
from engines import ENGINES, open_store


@pytest.fixture(params=ENGINES)
async def store(request, tmp_path):
    marker = request.node.get_closest_marker("sqlite_only")
    if request.param != "sqlite" and marker is not None:
        pytest.skip(f"SQLite only: {marker.args[0] if marker.args else 'an engine detail'}")
    adapter = open_store(request.param, tmp_path, request)
    yield adapter
    await adapter.aclose()
