"""Prune across stores under one lock, with an audit line per store that lost (or condensed) memories.

An agent's memory that goes takes its promoted copy in the global tier with
it (archived or purged alike), so nothing an operator prunes stays
recallable by every other agent. The copies go first: a global tier that
cannot be reached fails the store before the agent's memories change, so
running the same prune again still finds them. So do the copies of digests
a byte budget condenses: rewritten to the condensed text first. The digests
are re-embedded after their store's prune, like any other new text.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from memory.adapters.opener import on_server, open_store, open_tier, vector_adapter
from memory.agent_lock import connect_agent_store
from memory.agents import UnreadableCard
from memory.audit import AuditLog
from memory.deadline import lock_wait
from memory.errors import NotFoundError
from memory.home import Home
from memory.locks import exclusive_within
from memory.operator.edits import CopyChange, GlobalCopies, LiveCopyError
from memory.operator.targets import Selection, Target, prune_targets, unreadable_cards
from memory.store_kinds import StoreKind
from memory.types import Audience, MemoryEntry, MemoryQuery, PrunePolicy, PruneReport

_VERB = {"archive": "archived", "purge": "purged"}
_LISTS = ("victim_ids", "condensations")  # what --json shows and the audit line only counts


@dataclass
class StorePrune:
    """One store's prune: what it scanned and removed, and what that did to the global copies."""

    target: Target
    report: PruneReport
    copies: CopyChange | None = None  # the copies of what it removed
    condensed_copies: CopyChange | None = None  # the copies of the digests it condensed, rewritten

    @property
    def name(self) -> str:
        return self.target.shown

    def as_dict(self) -> dict:
        data = {**self.target.fields, **self.report.as_dict()}
        if self.copies is not None:
            data["copies"] = self.copies.as_dict()
        if self.condensed_copies is not None:
            data["condensed_copies"] = self.condensed_copies.as_dict()
        return data


@dataclass
class PruneRun:
    policy: PrunePolicy
    stores: list[StorePrune] = field(default_factory=list)
    unreadable: list[UnreadableCard] = field(default_factory=list)  # agents --all could not prune

    @property
    def removed(self) -> int:
        return sum(s.report.archived + s.report.purged for s in self.stores)

    @property
    def condensed(self) -> int:
        return sum(s.report.condensed for s in self.stores)

    def as_dict(self) -> dict:
        """The shape ``arcana prune --json`` prints: private stores under ``agents``, shared tiers under ``tiers``."""
        return {
            "policy": self.policy.model_dump(mode="json"),
            "removed": self.removed,
            "condensed": self.condensed,
            "agents": [s.as_dict() for s in self.stores if s.target.kind is StoreKind.PRIVATE],
            "tiers": [s.as_dict() for s in self.stores if s.target.kind is not StoreKind.PRIVATE],
            "unreadable": [str(card) for card in self.unreadable],
        }


async def prune_home(
    home: Home, config: Any, selection: Selection, policy: PrunePolicy, *, actor: str = "library",
    on_progress: Callable[[str, int, int], None] | None = None,
) -> PruneRun:
    """Prune every store ``selection`` names (see :func:`prune_targets`) with ``policy``, under
    ``<home>/locks/prune.lock``: a second prune of the same home fails with :class:`LockHeldError`,
    at once unless the command's lock wait (:func:`memory.deadline.lock_wait`) lets it wait for the first.
    A dry run only reads: it takes no lock and writes no audit line, so the home stays as it was.
    ``on_progress(label, done, total)``: rows read, then rows removed, in the store named ``label``."""
    targets = prune_targets(home, config, selection)
    run = PruneRun(policy, unreadable=unreadable_cards(home, selection))
    audit = AuditLog(home.audit_log)
    with nullcontext() if policy.dry_run else exclusive_within(home.locks_dir / "prune.lock", "prune", lock_wait(0.0)):
        copies = GlobalCopies.of_home(home, config, actor=actor)
        try:
            for target in targets:
                progress = (lambda d, t, label=target.shown: on_progress(label, d, t)) if on_progress else None
                done = await _prune_one(home, config, target, policy, copies, actor, progress)
                if done is None:
                    continue
                run.stores.append(done)
                if not policy.dry_run and (done.report.archived or done.report.purged or done.report.condensed):
                    fields = {k: v for k, v in done.report.as_dict().items() if k not in _LISTS}
                    if done.copies is not None:
                        fields["copies"] = done.copies.as_dict()
                    audit.append("prune", store=target.label, **fields)
        finally:
            await copies.aclose()
    return run


async def _prune_one(
    home: Home, config: Any, target: Target, policy: PrunePolicy, copies: GlobalCopies, actor: str, progress
) -> StorePrune | None:
    if target.kind is StoreKind.PRIVATE:
        store = open_store(home, StoreKind.PRIVATE, target.name, actor=actor)
        try:
            await connect_agent_store(home, target.name, target.shown, store)
        except NotFoundError:
            return None  # deleted since the run listed it: nothing of it to prune
    else:
        store = open_tier(home, target.kind, target.name, config=config, actor=actor)
    try:
        op = policy.mode.value
        if target.agent_id is None or not copies.may_hold_copies:
            done = StorePrune(target, await store.prune(policy, progress))
        elif policy.dry_run:  # the copies the real run would take, counted: a script trusts what it is told
            report = await store.prune(policy, progress)
            change = await copies.follow_many(store, target.agent_id, report.victim_ids, op, _VERB[op], dry_run=True)
            rewritten = await copies.mirror(store, await _condensed(store, report.condensations), "condensed",
                                            dry_run=True)
            done = StorePrune(target, report, change, rewritten)
        else:
            plan = await store.prune(policy.model_copy(update={"dry_run": True}), progress)
            planned = plan.victim_ids
            change = await copies.follow_many(store, target.agent_id, planned, op, _VERB[op])
            rewritten = await copies.mirror(store, await _condensed(store, plan.condensations), "condensed")
            # Exactly the planned rows: one that became a victim since has a copy nobody followed
            # (the next prune takes it).
            report = await store.prune(policy.model_copy(update={"within": frozenset(planned)}), progress)
            # A digest condensed otherwise than planned (the store changed between): its copy follows now.
            late = await _condensed(store, [c for c in report.condensations if c not in plan.condensations])
            try:
                await copies.mirror(store, late, "condensed")
            except LiveCopyError as exc:  # the store has changed by now: say so, not mirror's "nothing was changed"
                raise LiveCopyError(
                    f"{len(late)} digests were condensed in the agent's store, but their global copies could not be "
                    f"rewritten ({exc.__cause__ or exc}) and still hold the text from before"
                ) from exc
            done = StorePrune(target, report, change, rewritten)
        await _embed_condensed(home, config, store, done.report)
        return done
    finally:
        await store.aclose()


async def _condensed(store, condensations: list[dict]) -> list[MemoryEntry]:
    """The digests of ``condensations`` as each becomes: its stored row with the condensed text (a hidden
    or private one's is not listed: its copy is withdrawn for its visibility, whatever its text)."""
    if not condensations:
        return []
    stored = await store.admitted_by_id(
        MemoryQuery(), [c["id"] for c in condensations], audience=Audience.OPERATOR, include_archived=True
    )
    return [stored[c["id"]].model_copy(update={"content": c["content"]} if c["content"] is not None else {})
            for c in condensations if c["id"] in stored]


async def _embed_condensed(home: Home, config: Any, store, report: PruneReport) -> None:
    """A condensed digest's vector was made from its old text: embed the new one, as a write would
    (without sqlite-vec or a model it stays stale until ``arcana reindex``)."""
    if report.dry_run or not report.condensations or on_server(store):
        return
    await vector_adapter(store, config.embedding, home).complete([c["id"] for c in report.condensations])

