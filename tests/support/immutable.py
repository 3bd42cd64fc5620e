"""A file made immutable (`chattr +i`) for the length of a block, and made mutable again whatever happens."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def immutable(path: Path) -> Iterator[Path]:
    """``path`` immutable inside the block; the test is skipped (with why) where that cannot be had."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed")
    if os.geteuid() != 0:
        pytest.skip("chattr +i needs root")
    done = subprocess.run(["chattr", "+i", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"this filesystem has no immutable flag: {done.stderr.strip()}")
    try:
        yield path
    finally:
        subprocess.run(["chattr", "-i", str(path)], check=True)
