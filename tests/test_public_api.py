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
