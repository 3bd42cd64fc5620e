"""The environment the benchmarks run `arcana` in: as a user's shell has it.

These machines export PYTHONDONTWRITEBYTECODE=1, so an editable install would
recompile every Arcana module on every command (~35 ms) while the libraries
of the floor load from the bytecode pip compiled at install. A user's install
caches bytecode like the libraries', so the variable is dropped here.
"""

from __future__ import annotations

import os
from pathlib import Path


def cli_env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["ARCANA_HOME"] = str(home)
    return env
