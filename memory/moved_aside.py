"""Stores this process moved aside as corrupt, oldest first.

Kept apart from the engine so a skin can ask, once a command is over, which
stores (agent, pool, vault index) it quarantined — and turn any into exit 5 —
without loading the store code.
"""

from __future__ import annotations

from pathlib import Path

_MOVED: list[Path] = []


def record(folder: Path) -> None:
    _MOVED.append(folder)


def count() -> int:
    return len(_MOVED)


def since(mark: int) -> list[Path]:
    """Folders this process quarantined after :func:`count` returned ``mark``."""
    return list(_MOVED[mark:])
