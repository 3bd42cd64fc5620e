"""The first architecture rule: the core never loads the CLI layer or its libraries."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import importlib, pkgutil, sys
import memory
names = sorted(m.name for m in pkgutil.walk_packages(memory.__path__, "memory."))
for name in names:
    importlib.import_module(name)
print(len(names))
print(" ".join(sorted(m for m in ("typer", "rich", "arcana_cli", "click", "mcp", "starlette", "uvicorn", "jinja2") if m in sys.modules)))
"""


def test_importing_every_core_module_loads_no_cli_library():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, _, loaded = done.stdout.partition("\n")
    assert int(count) >= 40  # positive control: the walk really imported the core
    assert loaded.strip() == ""


def test_capabilities_are_declared_protocols_not_probed_names():
    """Outside the driver probes of sqlite3 itself, no core module asks ``hasattr`` what a tier can do."""
    import re
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "memory"
    probe = re.compile(r"hasattr\((?!conn, \"enable_load_extension\"|raw, \"enable_load_extension\")")
    offenders = [
        f"{p.relative_to(root)}:{n}"
        for p in root.rglob("*.py")
        for n, line in enumerate(p.read_text().splitlines(), 1)
        if probe.search(line)
    ]
    assert offenders == []
    assert probe.search('hasattr(backend, "prune")')  # control: the pattern catches a probe


async def test_each_store_declares_the_capabilities_the_federation_uses(tmp_path, offline_embedder):
    from memory.adapters.markdown import MarkdownFolderAdapter
    from memory.adapters.opener import scratch_store, with_vectors
    from memory.embedding.gateway import EmbeddingGateway
    from memory.protocols import (
        BatchWriter,
        Closeable,
        FileBacked,
        Layered,
        MemoryAdapter,
        PreparesWrites,
        Prunable,
        is_read_only,
    )

    store = scratch_store(tmp_path / "s.db")
    vectors = with_vectors(store, EmbeddingGateway([offline_embedder]))
    folder = MarkdownFolderAdapter(tmp_path, "agent")
    for adapter in (store, vectors, folder):
        assert isinstance(adapter, MemoryAdapter) and isinstance(adapter, Closeable)
    for adapter in (store, vectors):
        assert isinstance(adapter, Prunable) and isinstance(adapter, BatchWriter) and not is_read_only(adapter)
    assert isinstance(vectors, PreparesWrites) and not isinstance(store, PreparesWrites)
    assert isinstance(vectors, Layered) and vectors.store is store and not isinstance(store, Layered)
    assert isinstance(store, FileBacked) and not isinstance(folder, FileBacked)
    assert is_read_only(folder) and not isinstance(folder, Prunable)


def test_the_web_view_is_a_skin_that_never_imports_a_cli_command():
    """arcana_cli/ui/ reaches the core directly (and shared helpers of arcana_cli), never a command module."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "arcana_cli" / "ui"
    modules = sorted(root.rglob("*.py"))
    imported = set()
    for path in modules:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module:
                imported.add(node.module)
            elif isinstance(node, ast.Import):
                imported.update(a.name for a in node.names)
    assert len(modules) >= 5 and "memory.operator.edits" in imported  # control: the walk saw the package
    assert sorted(m for m in imported if m.startswith("arcana_cli.commands")) == []
