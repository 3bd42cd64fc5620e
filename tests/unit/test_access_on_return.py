"""Only what a federated recall returns counts as read: a candidate a tier read but the
ranking left out (here an aged-out episode in a listing) keeps its
decay clock and gains no hit. On real SQLite tiers, reopened between reads so the
buffered hits are folded in."""

from __future__ import annotations

from datetime import timedelta

from memory.adapters.sqlite import SQLiteAdapter
from memory.federation.federation import MemoryFederation
from memory.federation.router import MemoryRouter
from memory.types import MemoryEntry, MemoryQuery, MemoryType, now_utc


def _federation(path) -> MemoryFederation:
    return MemoryFederation(MemoryRouter(private=SQLiteAdapter(path)), on_degraded=lambda event: None)


async def _stored(path, entry_id: str) -> MemoryEntry:
    store = SQLiteAdapter(path)
    try:
        found = await store.get(entry_id)
        assert found is not None
        return found
    finally:
        await store.aclose()


async def test_a_listing_does_not_revive_what_aged_out_of_it(tmp_path):
    path = tmp_path / "private.db"
    now = now_utc()
    old = MemoryEntry(agent_id="a", type=MemoryType.EPISODIC, importance=0.9, content="we shipped v1",
                      created_at=now - timedelta(days=60))  # 0.5 ** (60 / 7): far below the 10% threshold
    fresh = MemoryEntry(agent_id="a", type=MemoryType.SEMANTIC, importance=0.5, content="the target is eu-west")
    federation = _federation(path)
    for entry in (old, fresh):
        await federation.write(entry, reconcile=False)
    listed = [e.id for e in await federation.search(MemoryQuery(agent_id="a", limit=10))]
    await federation.aclose()
    assert listed == [fresh.id]

    federation = _federation(path)
    again = [e.id for e in await federation.search(MemoryQuery(agent_id="a", limit=10))]
    await federation.aclose()
    assert again == [fresh.id]  # was [old, fresh]: the first listing had reset the episode's clock
    assert (await _stored(path, old.id)).access_count == 0
    shown = await _stored(path, fresh.id)  # the control: what was returned is counted
    assert shown.access_count == 2 and shown.last_accessed_at is not None

