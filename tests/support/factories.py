"""Test data factories shared by the suite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import partial

from memory.types import ConfidenceSource, MemoryEntry, MemoryType, Visibility


def entry(content: str, agent_id: str = "a1", **fields) -> MemoryEntry:
    """A MemoryEntry with only what a test cares about spelled out."""
    return MemoryEntry(agent_id=agent_id, content=content, **fields)


def entries_for(agent_id: str):
    """``entry`` with another default agent: ``entry = entries_for("a")``."""
    return partial(entry, agent_id=agent_id)


T0 = datetime(2025, 3, 4, 5, 6, 7, 123456, tzinfo=UTC)


def varied(agent_id: str) -> list[MemoryEntry]:
    """Every field set to something other than its default somewhere."""
    a = MemoryEntry(agent_id=agent_id, content="Ada prefers tea over coffee", type=MemoryType.PREFERENCE,
                    importance=0.8, pinned=True, tags=["drinks", "ada"], confidence=0.7,
                    confidence_source=ConfidenceSource.AGENT, created_at=T0, updated_at=T0 + timedelta(days=1),
                    last_accessed_at=T0 + timedelta(days=2), access_count=5, source_session_id="s-1")
    b = MemoryEntry(agent_id=agent_id, content="Ada prefers coffee now", conflict_with=a.id,
                    created_at=T0 + timedelta(hours=1), updated_at=T0 + timedelta(hours=1))
    return [
        a,
        b,
        MemoryEntry(agent_id=agent_id, content="old fact, replaced", superseded_by=b.id, archived=True),
        MemoryEntry(agent_id=agent_id, content="the hidden launch code is 0000", visibility=Visibility.HIDDEN),
        MemoryEntry(agent_id=agent_id, content="a private diary line", visibility=Visibility.PRIVATE,
                    type=MemoryType.EPISODIC, confidence_source=ConfidenceSource.INFERRED),
        MemoryEntry(agent_id=agent_id, content="multi\nline\n\n  content with ünïcode 🦓 and --- dashes",
                    type=MemoryType.PROCEDURAL),
    ]


def operator_entries(home, card) -> list[MemoryEntry]:
    """Everything in the agent's private store, any visibility (an operator read)."""
    import asyncio

    from memory.adapters.sqlite import SQLiteAdapter
    from memory.types import Audience, MemoryQuery

    async def read():
        store = SQLiteAdapter.for_agent(card.id, home=home)
        try:
            return await store.search(MemoryQuery(limit=10_000), audience=Audience.OPERATOR)
        finally:
            await store.aclose()

    return asyncio.run(read())
