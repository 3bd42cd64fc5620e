"""Consolidate across stores under one lock: restatements merged, old episodes digested, sources archived.

Each store is walked in bounded memory (:mod:`memory.consolidation.store`), each
decision applied in batches, each batch one transaction with its ledger rows
(:func:`memory.sqlite.consolidation.apply_txn`). Sources are archived, never
purged, so ``memory restore`` brings any of them back; the digests a batch
wrote are embedded after it like any other new row. A server tier
(PostgreSQL) is not consolidated yet: ``--all`` leaves it out (``skipped``,
with the reason), and naming it (``--pool``, ``--global``) fails that store
with what to do instead. Copies that
promotion made in the global tier are left as they are: the global tier is
consolidated on its own (``--global``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory import moved_aside
from memory.adapters.opener import configured_on_server, open_store, open_tier, vector_adapter
from memory.agent_lock import connect_agent_store
from memory.agents import UnreadableCard
from memory.audit import AuditLog
from memory.consolidation.plan import Plan
from memory.consolidation.store import consolidate_store
from memory.deadline import lock_wait
from memory.errors import MemoryStorageError, NotFoundError
from memory.home import Home
from memory.locks import exclusive_within
from memory.operator.targets import Selection, Target, reindex_targets, unreadable_cards
from memory.store_kinds import StoreKind
from memory.types import now_utc

ON_SERVER = "on a PostgreSQL server, which consolidate does not reach yet"

Progress = Callable[[str, int, int], None]
"""``on_progress(label, done, total)``: rows read, then decisions applied, in the store named ``label``."""


@dataclass
class StoreConsolidation:
    target: Target
    plan: Plan | None = None
    scanned: int = 0
    error: str | None = None
    quarantined: str | None = None  # the folder a corrupt store was moved to; the counts are the fresh store's

    @property
    def name(self) -> str:
        return self.target.shown

    def as_dict(self) -> dict:
        moved = {} if self.quarantined is None else {"quarantined": self.quarantined}
        if self.error is not None:
            return {**self.target.fields, "error": self.error, **moved}
        data = {**self.target.fields, "scanned": self.scanned, **self.plan.counts(), **moved}
        if self.plan.keep:
            data["decisions"] = {"merges": self.plan.merges, "digests": self.plan.digests}
        return data


@dataclass
class ConsolidationRun:
    dry_run: bool
    stores: list[StoreConsolidation] = field(default_factory=list)
    unreadable: list[UnreadableCard] = field(default_factory=list)  # agents --all could not consolidate
    skipped: list[Target] = field(default_factory=list)  # server tiers --all left out (ON_SERVER)

    @property
    def archived(self) -> int:
        return sum(s.plan.archived for s in self.stores if s.plan is not None)

    @property
    def failed(self) -> list[StoreConsolidation]:
        return [s for s in self.stores if s.error is not None]

    def as_dict(self) -> dict:
        """The shape ``arcana consolidate --json`` prints; a dry run asked for them lists every decision."""
        shown = [s.as_dict() for s in self.stores]
        return {
            "dry_run": self.dry_run,
            "agents": [d for s, d in zip(self.stores, shown) if s.target.kind is StoreKind.PRIVATE],
            "tiers": [d for s, d in zip(self.stores, shown) if s.target.kind is not StoreKind.PRIVATE],
            "unreadable": [str(card) for card in self.unreadable],
            "skipped": [{**target.fields, "reason": ON_SERVER} for target in self.skipped],
        }


async def consolidate_home(
    home: Home,
    config: Any,
    selection: Selection,
    *,
    dry_run: bool = False,
    decisions: bool = False,
    now: datetime | None = None,
    on_progress: Progress | None = None,
    actor: str = "library",
) -> ConsolidationRun:
    """Consolidate every store ``selection`` names (the stores reindex would), under
    ``<home>/locks/consolidate.lock``; a second run of the same home fails with :class:`LockHeldError`,
    at once unless the command's lock wait lets it wait for the first. A dry run only reads: no lock, no audit line, the home left as it was.
    ``decisions``: a dry run lists each one (as large as what it prints).
    ``now`` decides which episodes aged out (tests and benchmarks pass one)."""
    from memory.embedding.factory import build_gateway

    targets = reindex_targets(home, config, selection, "consolidate")
    gateway = None if dry_run else build_gateway(config.embedding, home)
    run = ConsolidationRun(dry_run, unreadable=unreadable_cards(home, selection))
    audit = AuditLog(home.audit_log)
    with nullcontext() if dry_run else exclusive_within(home.locks_dir / "consolidate.lock", "consolidate", lock_wait(0.0)):
        for target in targets:
            done = StoreConsolidation(target)
            if configured_on_server(config, target.kind, target.name):
                # Trigger: a server tier. Why: consolidation runs on SQLite only, and a cron `--all` on a home
                # with a server pool must not fail every night. Outcome: --all leaves it out (said, exit 0);
                # a store named on its own fails, saying what bounds it instead.
                if not _named(selection, target):
                    run.skipped.append(target)
                    continue
                done.error = (f"{target.shown} is {ON_SERVER}; leave it out (`consolidate --all` skips it) and "
                              f"bound it with `arcana prune {_flag(target)}`")
                run.stores.append(done)
                continue
            progress = (lambda d, t, label=done.name: on_progress(label, d, t)) if on_progress else None
            mark = moved_aside.count()
            try:
                if not await _consolidate_one(home, config, done, gateway, now or now_utc(), dry_run, progress,
                                              actor, decisions=dry_run and decisions):
                    continue  # the agent was deleted since the run listed it
            except MemoryStorageError as exc:
                done.error = str(exc)
            # Trigger: the store was found corrupt and moved aside. Why: the run went on in a fresh, empty store,
            # so its counts alone read as a clean store while the command exits 5. Outcome: it names the folder.
            done.quarantined = next((str(folder) for folder in moved_aside.since(mark)), None)
            run.stores.append(done)
            if done.plan is not None and done.plan.archived and not dry_run:
                audit.append("consolidate", store=target.label, **done.plan.counts())
    return run


async def _consolidate_one(home, config, done: StoreConsolidation, gateway, now, dry_run, progress, actor, *,
                           decisions: bool) -> bool:
    """Consolidate ``done.target`` into ``done``; False when it is an agent deleted since the run listed it."""
    target = done.target
    if target.kind is StoreKind.PRIVATE:
        store = open_store(home, target.kind, target.name, actor=actor)
        try:
            await connect_agent_store(home, target.name, target.shown, store)
        except NotFoundError:
            return False
    else:
        store = open_tier(home, target.kind, target.name, config=config, actor=actor)
    try:
        embed = None
        if not dry_run:
            embed = vector_adapter(store, config.embedding, home, gateway=gateway).complete
        done.scanned, done.plan = await consolidate_store(store, now, dry_run=dry_run, decisions=decisions, embed=embed,
                                                          actor=actor, on_progress=progress)
    finally:
        await store.aclose()
    return True


def _named(selection: Selection, target: Target) -> bool:
    """Whether the operator named this tier itself (``--pool``, ``--global``), not through ``--all``."""
    return target.name in selection.pools if target.kind is StoreKind.POOL else selection.global_


def _flag(target: Target) -> str:
    return f"--pool {target.name}" if target.kind is StoreKind.POOL else "--global"
