"""Issue 22, "decide, then apply": a write is decided before any row changes, fanned out by the
federation, and only then settled (the old version ended). A fan-out that fails therefore ends
nothing; the same write once the tier is back ends the old fact (the positive control). Real
SQLite stores behind the real federation and reconciler; the fault sits at the tier boundary."""

from __future__ import annotations

import pytest
from federation_faults import FaultyTier

from memory.adapters.sqlite import SQLiteAdapter
from memory.config import ReconcileSettings
from memory.errors import MemoryStorageError
from memory.federation.federation import FederatedWriteError, MemoryFederation
from memory.federation.router import MemoryRouter
from memory.reconcile.reconciler import Reconciler
from memory.types import Audience, ConfidenceSource, MemoryEntry, MemoryType


class Probe(FaultyTier):
    """The private tier as the fan-out reaches it: which entries arrive, and whether ``watched`` is
    still current at that moment (``error`` set: the write fails before reaching the store)."""

    def __init__(self, inner: SQLiteAdapter):
        super().__init__(inner)
        self.watched: str | None = None
        self.seen: list[tuple[list[MemoryEntry], bool]] = []

    async def _arrive(self, entries: list[MemoryEntry]) -> None:
        await self._fault()
        current = self.watched is not None and await self.inner.get(self.watched) is not None
        self.seen.append((entries, current))

    async def write(self, entry: MemoryEntry):
        await self._arrive([entry])
        return await self.inner.write(entry)

    async def write_many(self, entries):
        await self._arrive(list(entries))
        return await self.inner.write_many(entries)


def said(text: str, source: ConfidenceSource = ConfidenceSource.USER_CONFIRMED) -> MemoryEntry:
    return MemoryEntry(agent_id="ada", content=text, type=MemoryType.SEMANTIC, confidence_source=source, confidence=0.6)


@pytest.fixture
async def home(tmp_path):
    store = SQLiteAdapter(tmp_path / "ada.db", actor="test")
    await store.connect()
    probe = Probe(store)
    federation = MemoryFederation(
        MemoryRouter(private=probe), on_degraded=lambda event: None, reconciler=Reconciler(store, None, ReconcileSettings())
    )
    yield store, probe, federation
    await store.aclose()


async def _is_current(store: SQLiteAdapter, entry_id: str) -> bool:
    return await store.get(entry_id) is not None


async def _ops(store: SQLiteAdapter, *ids: str) -> list[tuple[str, str]]:
    return [(r.memory_id, r.op) for r in await store.ledger(list(ids))]


async def test_the_write_lands_while_the_old_fact_is_current_and_ends_it_after(home):
    store, probe, federation = home
    berlin, lisbon = said("I live in Berlin."), said("I moved to Lisbon.")
    await federation.write(berlin)
    probe.watched = berlin.id
    report = await federation.write(lisbon)
    assert [([e.id for e in entries], current) for entries, current in probe.seen[1:]] == [([lisbon.id], True)]
    assert (report.decision, report.supersedes) == ("update", [berlin.id])
    assert not await _is_current(store, berlin.id) and await _is_current(store, lisbon.id)
    ops = await _ops(store, berlin.id, lisbon.id)
    assert ops.index((lisbon.id, "insert")) < ops.index((berlin.id, "supersede")), ops  # written, then ended


async def test_the_decision_reaches_the_fan_out_before_any_row_changes(home):
    """An agent's claim against a user-confirmed fact is held beside it: the entry the fan-out
    receives already names the conflict, so it was decided before the write."""
    store, probe, federation = home
    berlin, claim = said("I live in Berlin."), said("I moved to Lisbon.", ConfidenceSource.AGENT)
    await federation.write(berlin)
    probe.watched = berlin.id
    report = await federation.write(claim)
    (arrived,), current = probe.seen[-1]
    assert (arrived.id, arrived.conflict_with, current) == (claim.id, berlin.id, True)
    assert (report.decision, report.supersedes, report.conflict_with) == ("add", [], berlin.id)
    assert await _is_current(store, berlin.id) and await _is_current(store, claim.id)


@pytest.mark.parametrize("batch", [False, True], ids=["write", "write_many"])
async def test_a_failed_fan_out_leaves_the_old_fact_current_and_nothing_superseded(home, batch):
    store, probe, federation = home
    berlin, lisbon = said("I live in Berlin."), said("I moved to Lisbon.")
    await federation.write(berlin)

    async def write():
        if batch:
            return await federation.write_many([lisbon], reconcile=True)
        return await federation.write(lisbon)

    probe.error = MemoryStorageError("disk I/O error")
    with pytest.raises(FederatedWriteError, match="disk I/O error"):
        await write()
    assert await _is_current(store, berlin.id)
    assert await store.get(lisbon.id, audience=Audience.OPERATOR, include_archived=True) is None
    assert await _ops(store, berlin.id, lisbon.id) == [(berlin.id, "insert")]

    probe.error = None  # the positive control: the same write, the tier back, ends Berlin
    report = await write()
    assert (report.decisions["update"] if batch else report.decision) == (1 if batch else "update")
    assert not await _is_current(store, berlin.id) and await _is_current(store, lisbon.id)
    assert (berlin.id, "supersede") in await _ops(store, berlin.id)
