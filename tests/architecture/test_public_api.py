"""`from memory import X` works for every advertised name, and costs nothing until used."""

from __future__ import annotations

import subprocess
import sys

import memory


def test_every_exported_name_resolves():
    for name in memory.__all__:
        assert getattr(memory, name) is not None, name


def test_importing_a_submodule_does_not_load_the_core():
    probe = "import sys, memory.types; print(sorted(m for m in sys.modules if m.startswith('memory.')))"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert "memory.federation" not in loaded and "memory.adapters.vector" not in loaded
    assert "memory.types" in loaded  # control: what was asked for is there


def test_the_seeds_names_import_from_where_the_seed_puts_them():
    """The seed's examples import these from the package and from their adapters' modules."""
    from memory import (  # noqa: F401
        EdgeStore,
        EmbeddingGateway,
        MarkdownFolderAdapter,
        MemoryFederation,
        MemoryRouter,
        PoolConfig,
        SQLiteAdapter,
        VectorAdapter,
        WikilinkEdgeExtractor,
        build_federation,
    )
    from memory.adapters.markdown import MarkdownFolderAdapter as FromModule
    from memory.adapters.sqlite import SQLiteAdapter as SQLiteFromModule
    from memory.adapters.vector import VectorAdapter as VectorFromModule
    from memory.graph.wikilinks import WikilinkEdgeExtractor as ExtractorFromModule
    from memory.types import MemoryEntry, MemoryQuery, MemoryScope, MemoryType, PruneMode, PrunePolicy, RetrievalMode  # noqa: F401

    assert (FromModule, SQLiteFromModule, VectorFromModule, ExtractorFromModule) == (
        MarkdownFolderAdapter, SQLiteAdapter, VectorAdapter, WikilinkEdgeExtractor
    )


def test_the_run_path_loads_no_numpy_until_a_consolidation_is_due():
    """`arcana run` keyword-only must not pay for numpy (consolidation's) at import."""
    probe = "import sys, memory.runtime.agent, memory.runtime.upkeep; print('numpy' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False"
