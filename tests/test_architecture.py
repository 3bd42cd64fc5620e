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
print(" ".join(sorted(m for m in ("typer", "rich", "arcana_cli", "click", "mcp") if m in sys.modules)))
"""


def test_importing_every_core_module_loads_no_cli_library():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    count, _, loaded = done.stdout.partition("\n")
    assert int(count) >= 40  # positive control: the walk really imported the core
    assert loaded.strip() == ""
