"""Test data factories shared by the suite."""

from __future__ import annotations

from functools import partial

from memory.types import MemoryEntry


def entry(content: str, agent_id: str = "a1", **fields) -> MemoryEntry:
    """A MemoryEntry with only what a test cares about spelled out."""
    return MemoryEntry(agent_id=agent_id, content=content, **fields)


def entries_for(agent_id: str):
    """``entry`` with another default agent: ``entry = entries_for("a")``."""
    return partial(entry, agent_id=agent_id)
