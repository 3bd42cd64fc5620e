"""MemoryFederation: many tiers presented as one MemoryAdapter.

Writes fan out concurrently and come back with an honest per-tier split;
reads fan out concurrently, drop (and report) failed tiers, de-duplicate, and
only then rank — ranking duplicates would spend two of ``limit`` slots on one
fact. Failure policy follows the durability anchor: a failed private write
raises, a failed shared or global leg degrades with a visible event.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from memory.access import deferred_access
from memory.agent_lock import AgentPresence
from memory.audit import AuditLog
from memory.config import ExtractionSettings, RecallConfig
from memory.errors import MemoryStorageError, MemoryWriteError, TierWriteFailed
from memory.federation.decisions import DecisionKind
from memory.federation.events import DegradedSink, MemoryDegradedEvent, audit_sink
from memory.federation.resilience import BreakerState, ResilientTier, TierRead, describe_failure, failure_reason
from memory.federation.router import MemoryRouter
from memory.home import Home
from memory.promotion import as_claimed, global_copy
from memory.protocols import (
    Closeable, EmbedsAhead, Prunable, access_buffer_of, admitting_of, provenance_of, serialising_of,
)
from memory.ranking import timeframe
from memory.ranking.neighbours import expand
from memory.types import MAX_QUERY_LIMIT, Audience, HealthStatus, MemoryEntry, MemoryQuery, MemoryScope, PrunePolicy, PruneReport


@dataclass
class WriteReport:
    """Where one write landed, per tier.

    ``accepted`` committed; ``refused`` are read-only tiers that declined by
    declaration (never counted as stored); ``failed`` maps a tier to why. An
    operator replays ``failed``, never ``refused``.
    """

    entry_id: str
    accepted: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    decision: str = "add"  # reconciliation: add | noop | update | delete
    supersedes: list[str] = field(default_factory=list)
    conflict_with: str | None = None
    reason: str = ""
    warnings: list[str] = field(default_factory=list)  # e.g. a superseded global copy that could not be ended

    @property
    def promoted(self) -> bool:
        return "global" in self.accepted

    def as_dict(self) -> dict:
        return {
            "id": self.entry_id, "accepted": self.accepted, "refused": self.refused, "failed": self.failed,
            "decision": self.decision, "supersedes": self.supersedes, "conflict_with": self.conflict_with,
            "warnings": self.warnings,
        }


@dataclass
class BatchWriteReport:
    """Where a batch landed: rows accepted per tier, read-only tiers refused, failures per tier.

    ``changed`` maps an entry id to whether any tier that reports its ops
    (SQLite and vector stores do) inserted or updated it; ``False`` means
    every such tier already held it exactly (a re-import).
    """

    accepted: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    changed: dict[str, bool] = field(default_factory=dict)
    decisions: Counter = field(default_factory=Counter)  # reconciliation: entries per add | noop | update | delete
    warnings: list[str] = field(default_factory=list)
    embedded_again: int = 0  # vectors written for unchanged rows that had none (a re-run after a kill)
    gone: set[str] = field(default_factory=set)  # imported ids a tier had deleted or purged: left out there
    inserted: set[str] = field(default_factory=set)  # ids a tier stored anew (not held there before)
    held_by_others: set[str] = field(default_factory=set)  # ids a tier refused: another agent's memory there


class FederatedWriteError(MemoryWriteError):
    """The private (durability-anchor) leg failed; ``report`` says what the other legs did."""

    def __init__(self, message: str, report: WriteReport):
        super().__init__(message)
        self.report = report


def private_failed(failure: BaseException, report) -> FederatedWriteError:
    """The error for a failed private write: what failed and, for a timeout (whose cause the tier
    cannot see: most often another process's write holding the store's lock), what to do."""
    message = f"private memory write failed; nothing was lost silently: {describe_failure(failure)}"
    if failure_reason(failure) == "timeout":
        message += ("; another process may be writing this store: run again once it is done, or raise "
                    "private.write_timeout_ms in connections/memory-adapters.json")
    error = FederatedWriteError(message, report)
    error.__cause__ = failure.cause if isinstance(failure, TierWriteFailed) else failure  # as `raise ... from`
    return error


@dataclass
class RecallReport:
    """A federated read: ranked entries, the tiers asked, and the ones that dropped out."""

    entries: list[MemoryEntry]
    tiers: list[str]
    degraded: list[MemoryDegradedEvent]


@dataclass
class TierHealth:
    name: str
    scope: str
    healthy: bool
    message: str
    breaker: str
    read_only: bool


def _content_key(entry: MemoryEntry) -> str:
    return " ".join(entry.content.split())


RELEVANCE_FLOOR = 0.05


def tier_relevance(entries: list[MemoryEntry]) -> dict[str, float]:
    """Each entry's backend score as a fraction of its tier's best, floored at 0.05.

    Per tier, because BM25, cosine and fused scores live on different scales;
    a fraction rather than a rank, so a semantic neighbour that barely relates
    to the query stays far below the one that answers it. Entries without a
    score (filter-only reads) are not discounted.
    """
    top = max((e.score for e in entries if e.score is not None), default=0.0)
    if top <= 0:
        return {}
    return {e.id: max(RELEVANCE_FLOOR, e.score / top) for e in entries if e.score is not None}


def dedupe(results: list[tuple[str, list[MemoryEntry]]]) -> list[tuple[MemoryEntry, list[str]]]:
    """Merge per-tier results, most local tier first.

    Two entries are the same fact when they share an id or identical content
    (whitespace-normalised). The first copy seen survives, untouched, paired
    with every tier that held one, in routing order. (Nothing is copied here:
    only the few that rank get copied, with their tiers, in ``recall``.)
    """
    survivors: list[tuple[MemoryEntry, list[str]]] = []
    by_id: dict[str, tuple[MemoryEntry, list[str]]] = {}
    by_content: dict[str, tuple[MemoryEntry, list[str]]] = {}
    for tier_name, entries in results:
        for entry in entries:
            content = _content_key(entry)
            survivor = by_id.get(entry.id)
            if survivor is not None and _other_vault(survivor[1][0], tier_name):
                survivor = None
            survivor = survivor or by_content.get(content)
            if survivor is None:
                survivor = (entry, [tier_name])
                survivors.append(survivor)
            elif tier_name not in survivor[1]:
                survivor[1].append(tier_name)
            by_id.setdefault(entry.id, survivor)
            by_content.setdefault(content, survivor)
    return survivors


def _other_vault(first_tier: str, tier_name: str) -> bool:
    """Vault note ids are uuid5 of the note's path inside its vault, so two vaults'
    ``README.md`` share an id without being the same note: an id match between
    two different vaults is not a match (identical content still is). A vault
    note and an ingested copy in any other store do share an id on purpose."""
    return first_tier != tier_name and first_tier.startswith("vault:") and tier_name.startswith("vault:")


def _seen(tier: ResilientTier, entries: list[MemoryEntry]) -> list[MemoryEntry]:
    """``entries`` of ``tier`` with the read hits its store still buffers: ranked by the age the
    last recall of this process refreshed, as a new process would read it."""
    buffered = access_buffer_of(tier.backend)
    return entries if buffered is None else buffered.seen(entries)


async def with_sources(entries: list[MemoryEntry], tiers: Sequence[ResilientTier]) -> None:
    """Give each consolidated entry its ``sources``, from the tier it was read from (one read per
    tier): recall's results, and a memory read by id, name what a merge or digest carries alike."""
    for tier in tiers:
        store = provenance_of(tier.backend)
        mine = [e for e in entries if tier.name in e.tiers and not e.sources]
        if store is None or not mine:
            continue
        try:
            found = await store.sources([e.id for e in mine])
        except MemoryStorageError:  # provenance is an annotation: never fail a read over it
            continue
        for entry in mine:
            entry.sources = found.get(entry.id, [])


class MemoryFederation:
    """Implements the MemoryAdapter protocol over a :class:`MemoryRouter`'s tiers.

    ``on_degraded`` receives every degraded event; it defaults to the audit
    log of the home resolved now (``ARCANA_HOME`` or ``~/.arcana``).
    """

    def __init__(
        self,
        router: MemoryRouter,
        *,
        on_degraded: DegradedSink | None = None,
        reconciler: Any | None = None,
        confidence_cap: float = ExtractionSettings().agent_confidence_cap,
        recall: RecallConfig | None = None,
    ):
        self.router = router
        self.recall_settings = recall or RecallConfig()  # session-neighbour expansion
        self.confidence_cap = confidence_cap  # the agent's: what its own claims are stored at, at most
        self.reconciler = reconciler  # memory.reconcile.Reconciler: decides add/noop/update/delete, settles after
        self.on_degraded = on_degraded or audit_sink(AuditLog(Home.resolve().audit_log))
        self.presence: AgentPresence | None = None  # set for a stored agent: writes stop once it is deleted
        self.open_global: Callable[[Any], Any] | None = None  # opens the global tier from a config (when it may have one)
        # A reader's, built before its agent had a store: opens it once made (None: not made yet).
        self.open_private: Callable[[], Awaitable[Any]] | None = None
        self._closed = False

    def _emit(self, events: list[MemoryDegradedEvent]) -> None:
        for event in events:
            self.on_degraded(event)

    # -- lifecycle -------------------------------------------------------

    async def connect(self) -> None:
        """Open the private tier now (migrations, quarantine); other tiers open on first use."""
        await self.router.private.backend.connect()

    async def aclose(self) -> None:
        """Close every backend once. Safe to call again."""
        if self._closed:
            return
        self._closed = True
        seen: set[int] = set()
        errors = []
        for tier in self.router.tiers:
            backend = tier.backend
            if id(backend) in seen or not isinstance(backend, Closeable):
                continue
            seen.add(id(backend))
            try:
                await backend.aclose()
            except Exception as exc:  # close the rest, then report
                errors.append(exc)
        if errors:
            raise errors[0]

    # -- writes ----------------------------------------------------------

    async def write(self, entry: MemoryEntry, *, reconcile: bool = True) -> WriteReport:
        """Reconcile ``entry`` with what the agent already knows, then write it; return the split.

        With a reconciler (and ``reconcile``) the write is decided first, changing
        no row (:mod:`memory.federation.decisions`): a noop reinforces the existing
        memory instead (stored after all when that memory went meanwhile); anything
        else is fanned out here, and only then settled by the reconciler, which ends
        the versions it replaces (update / delete): a failed write ends nothing. See
        :mod:`memory.reconcile`. An agent's claim is stored capped
        (:func:`memory.promotion.as_claimed`) whoever sends it.
        """
        entry = as_claimed(entry, self.confidence_cap)
        if not reconcile or self.reconciler is None:
            return await self._fan_out(entry)
        async with self.deciding(entry):
            decision = await self.reconciler.decide_write(entry)
            if decision.kind is DecisionKind.NOOP:
                reinforced = await self.reconciler.reinforce(decision, entry)
                if reinforced is not None:
                    return reinforced
                decision = decision.restated_gone()
            if decision.conflict_with:
                entry = entry.model_copy(update={"conflict_with": decision.conflict_with})
            entry = decision.withheld(entry)
            report = await self._fan_out(entry)
            await self.reconciler.settle(decision, entry, report)
            return report

    @contextlib.asynccontextmanager
    async def deciding(self, *entries: MemoryEntry) -> AsyncIterator[None]:
        """Held from a reconciled write's decision to its settling: another process's write for the agent,
        or (``entries`` written into a pool) any member's write into that pool, decides only after this one
        is stored. The agent's lock (:meth:`AgentPresence.deciding`) is per agent, so two members writing
        one fact into a pool at once each decided ``add``; the pool's own lock
        (:class:`~memory.protocols.SerialisesDecisions`) is taken after it, pools by name, so two writers
        never wait on each other. Re-entrant in a task, so a caller may hold it around a check and the
        write that depends on it."""
        notify = self.presence.notify if self.presence is not None else None
        async with contextlib.AsyncExitStack() as held:
            if self.presence is not None:
                await held.enter_async_context(self.presence.deciding())
            for store in self._pools_deciding(entries):
                try:
                    await held.enter_async_context(store.deciding(notify))
                except MemoryStorageError:
                    # Trigger: the pool's server cannot be had for its lock. Why: its decision and write
                    # fail on it anyway, and say so as a degraded tier. Outcome: decided unlocked, as given.
                    continue
            yield

    def _pools_deciding(self, entries: Sequence[MemoryEntry]) -> list[Any]:
        """The stores of the pools ``entries`` are written into whose decisions they serialise, by pool
        name; a pool whose tier's breaker is open is decided against nothing (written as given)."""
        names = sorted({e.pool_name for e in entries if e.scope is MemoryScope.SHARED and e.pool_name})
        tiers = [self.router.pool_tier(name) for name in names]
        stores = [serialising_of(t.backend) for t in tiers if t is not None and t.breaker.state is BreakerState.CLOSED]
        return [store for store in stores if store is not None]

    def _writing(self):
        """Held around each fan-out: the agent's lock shared, so `agent delete` never withdraws the
        agent's global copies while a write is promoting one, and a write after it finds the agent gone."""
        return self.presence.writing() if self.presence is not None else contextlib.nullcontext()

    async def _fan_out(self, entry: MemoryEntry) -> WriteReport:
        """Write ``entry`` to every routed tier concurrently; return the split.

        A tier whose scope differs from the entry's gets a scope-rewritten copy
        with the same id and no pool (the promotion of an important private
        entry to global). Not transactional across tiers. Raises
        :class:`FederatedWriteError` when the private leg fails.
        """
        async with self._writing():
            return await self._fan_out_now(entry)

    async def _fan_out_now(self, entry: MemoryEntry) -> WriteReport:
        targets = self.router.route_write(entry)
        report = WriteReport(entry.id)
        writable = [t for t in targets if not t.read_only]
        report.refused = [t.name for t in targets if t.read_only]
        outcomes = await asyncio.gather(
            *(tier.write(self._copy_for(tier, entry)) for tier in writable), return_exceptions=True
        )
        events = []
        private_failure: BaseException | None = None
        for tier, outcome in zip(writable, outcomes, strict=True):
            if outcome is None:
                report.accepted.append(tier.name)
                continue
            if not isinstance(outcome, Exception):
                raise outcome
            report.failed[tier.name] = f"{failure_reason(outcome)}: {describe_failure(outcome)}"
            if tier.scope is MemoryScope.PRIVATE:
                private_failure = outcome
            else:
                op = "promote" if tier.scope is not entry.scope else "write"
                events.append(
                    MemoryDegradedEvent(
                        tier=tier.name,
                        scope=tier.scope.value,
                        op=op,
                        reason=failure_reason(outcome),
                        detail=f"memory {entry.id}: {describe_failure(outcome)}",
                    )
                )
        self._emit(events)
        if private_failure is not None:
            raise private_failed(private_failure, report)
        return report

    async def write_many(self, entries: Sequence[MemoryEntry], *, reconcile: bool = False) -> BatchWriteReport:
        """Write a batch the way :meth:`write` writes one entry, one backend call per tier.

        With ``reconcile`` (and a reconciler) the batch is first decided as
        :meth:`write` decides one entry (``remember --from``), then written with
        one fan-out, then settled; see :mod:`memory.reconcile.batch`.
        """
        entries = [as_claimed(entry, self.confidence_cap) for entry in entries]
        if not reconcile or self.reconciler is None:
            return await self._fan_out_many(entries)
        backend = self.router.private.backend
        if isinstance(backend, EmbedsAhead):  # the model's time for these texts is spent before the lock
            await backend.embedded_ahead(entries)
        async with self.deciding(*entries):
            batch = await self.reconciler.decide_many(entries)
            report = await self._fan_out_many(batch.written) if batch.written else BatchWriteReport()
            leftovers = await self.reconciler.settle_many(batch, report)
            if leftovers:  # restatements whose memory went meanwhile: stored after all
                more = await self._fan_out_many(leftovers)
                report.decisions[DecisionKind.ADD.value] += len(leftovers)
                for name, count in more.accepted.items():
                    report.accepted[name] = report.accepted.get(name, 0) + count
        return report

    def embed_ahead(self, entries: Sequence[MemoryEntry], *, reconcile: bool = False) -> None:
        """Let the private store embed the private ``entries`` the next :meth:`write_many` brings (an
        import's next batch) while this one is decided and written; lines a reconciled re-run will
        not decide again (imported, or restated, before) are left out."""
        backend = self.router.private.backend
        if isinstance(backend, EmbedsAhead):
            settled = self.reconciler.settled if reconcile and self.reconciler is not None else None
            backend.embed_ahead([e for e in entries if e.scope is MemoryScope.PRIVATE], settled)

    async def _fan_out_many(self, entries: Sequence[MemoryEntry]) -> BatchWriteReport:
        """Write a batch to every routed tier, one backend call per tier.

        Entries are grouped by the tiers they route to (promotion, pools),
        each tier gets its copies in one ``write_many``. Raises
        :class:`FederatedWriteError` when the private leg fails (its report
        is the batch's first entry's); other tiers' failures are reported and
        emitted as degraded events, as for a single write.
        """
        async with self._writing():
            return await self._fan_out_many_now(entries)

    async def _fan_out_many_now(self, entries: Sequence[MemoryEntry]) -> BatchWriteReport:
        report = BatchWriteReport()
        groups: dict[tuple[int, ...], list[MemoryEntry]] = {}
        tiers: dict[int, ResilientTier] = {}
        for entry in entries:
            targets = self.router.route_write(entry)
            for tier in targets:
                tiers[id(tier)] = tier
                if tier.read_only and tier.name not in report.refused:
                    report.refused.append(tier.name)
            groups.setdefault(tuple(id(t) for t in targets if not t.read_only), []).append(entry)
        per_tier: dict[int, list[MemoryEntry]] = {}
        for key, members in groups.items():
            for tier_id in key:
                per_tier.setdefault(tier_id, []).extend(self._copy_for(tiers[tier_id], e) for e in members)
        order = list(per_tier)
        outcomes = await asyncio.gather(
            *(tiers[t].write_many(per_tier[t]) for t in order), return_exceptions=True
        )
        events = []
        private_failure: BaseException | None = None
        for tier_id, outcome in zip(order, outcomes, strict=True):
            tier = tiers[tier_id]
            if isinstance(outcome, BaseException) and not isinstance(outcome, Exception):
                raise outcome
            if not isinstance(outcome, Exception):
                report.accepted[tier.name] = len(per_tier[tier_id])
                for entry, op in zip(per_tier[tier_id], outcome or (), strict=False):
                    if op == "refused":  # not accepted: the tier left that row as it was
                        report.accepted[tier.name] -= 1
                        report.held_by_others.add(entry.id)
                        report.warnings.append(
                            f"memory {entry.id}: the {tier.name} tier holds that id for another agent; its memory was left as it was"
                        )
                        continue
                    if op == "gone":  # the tier removed it after the import read it (mutations.upsert): it stays gone
                        report.gone.add(entry.id)
                        continue
                    report.changed[entry.id] = report.changed.get(entry.id, False) or op != "noop"
                    if op == "insert":
                        report.inserted.add(entry.id)
                continue
            report.failed[tier.name] = f"{failure_reason(outcome)}: {describe_failure(outcome)}"
            if tier.scope is MemoryScope.PRIVATE:
                private_failure = outcome
            else:
                events.append(
                    MemoryDegradedEvent(
                        tier=tier.name, scope=tier.scope.value, op="write", reason=failure_reason(outcome),
                        detail=f"{len(per_tier[tier_id])} memories: {describe_failure(outcome)}",
                    )
                )
        self._emit(events)
        if private_failure is not None:
            single = WriteReport(entries[0].id if entries else "", list(report.accepted), report.refused, report.failed)
            raise private_failed(private_failure, single)
        return report

    @staticmethod
    def _copy_for(tier: ResilientTier, entry: MemoryEntry) -> MemoryEntry:
        if tier.scope is entry.scope:
            return entry
        if tier.scope is MemoryScope.GLOBAL:
            return global_copy(entry)
        return entry.model_copy(update={"scope": tier.scope, "pool_name": tier.pool_name})

    # -- reads -----------------------------------------------------------

    @staticmethod
    def _query_for(tier: ResilientTier, query: MemoryQuery, limit: int | None = None) -> MemoryQuery:
        """The query as one tier should see it.

        Shared and global tiers hold many agents' memories, so the agent filter
        goes; the pool filter goes too, because routing already chose the pool.
        Each tier is asked for ``limit``, no more: with several tiers the pool
        of candidates is already a multiple of ``limit``, and over-fetching
        cost more (rows to convert) than it ever changed the top results. (A
        listing left short of ``limit`` by entries that aged out asks again,
        for more: see :meth:`recall`.)
        """
        if limit is not None and limit != query.limit:
            query = query.model_copy(update={"limit": limit})
        if tier.scope is MemoryScope.PRIVATE:
            return query
        return query.model_copy(update={"agent_id": None, "pool_name": None})

    async def recall(self, query: MemoryQuery) -> RecallReport:
        """Fan ``query`` out, drop failed tiers, de-duplicate, then rank and truncate.

        For a text query each tier's own relevance feeds the rank (see
        :func:`tier_relevance`); a copy held by several tiers keeps its best
        factor, and relevance, not age, decides (see :meth:`MemoryRouter.rank`);
        a time expression in the text ("last week", "in May 2023") lifts what
        was written then. Only the entries returned count as read (their
        access hit and, with ``refresh_on_access``, their decay clock): a
        candidate a tier read but the ranking left out is untouched.
        """
        with deferred_access() as read:
            report = await self._recall(query)
        for store, ids in read.values():  # only what the user is shown refreshes its decay and counts a hit
            await store.record_access([entry for entry in report.entries if entry.id in ids])
        return report

    async def _recall(self, query: MemoryQuery) -> RecallReport:
        tiers = self.router.route_read(query)
        # --as-of answers as recall would have then: age and "last week" are measured from that time.
        now = self.router.clock() if query.as_of is None else min(query.as_of, self.router.clock())
        asked = query.limit
        place = {tier.name: i for i, tier in enumerate(tiers)}  # routing order: how local each tier is
        outcomes = [TierRead([]) for _ in tiers]
        again = list(range(len(tiers)))
        while True:
            reads = [tiers[i].read(self._query_for(tiers[i], query, asked)) for i in again]
            # One tier (a zero-config agent) needs no task; gather costs an event-loop turn per task.
            for i, outcome in zip(again, [await reads[0]] if len(reads) == 1 else await asyncio.gather(*reads), strict=True):
                outcomes[i] = outcome
            per_tier = [(tier.name, _seen(tier, o.entries)) for tier, o in zip(tiers, outcomes, strict=True)]
            relevance: dict[str, float] | None = None
            if query.text:
                relevance = {}
                for _, entries in per_tier:
                    for entry_id, factor in tier_relevance(entries).items():
                        relevance[entry_id] = max(factor, relevance.get(entry_id, 0.0))
                relevance = relevance or None  # no word to match (e.g. only punctuation): a listing
            merged = await self._without_own_withheld(query, tiers, dedupe(per_tier))
            span = timeframe.window(query.text, now) if relevance is not None else None
            ranked = self.router.rank([entry for entry, _ in merged], query.limit, now, relevance=relevance, window=span,
                                      locality=[place[names[0]] for _, names in merged])
            # A listing drops what aged out: when that leaves it short of ``limit``, the tiers
            # that may hold more rows than they were asked for are asked again for more (never
            # past the query cap); the others' reads stand.
            again = [i for i, o in enumerate(outcomes) if o.degraded is None and len(o.entries) >= asked]
            if relevance is not None or len(ranked) >= query.limit or not again or asked >= MAX_QUERY_LIMIT:
                break
            asked = min(asked * 4, MAX_QUERY_LIMIT)
        degraded = [o.degraded for o in outcomes if o.degraded is not None]
        self._emit(degraded)
        tiers_of = {id(entry): names for entry, names in merged}  # by identity: vault notes may share an id
        if relevance is not None and self.recall_settings.neighbour_depth:
            ranked = await self._with_neighbours(query, tiers, ranked, tiers_of, degraded)
        entries = [entry.model_copy(update={"score": score, "tiers": tiers_of[id(entry)]}) for entry, score in ranked]
        await with_sources(entries, tiers)
        return RecallReport(entries, [t.name for t in tiers], degraded)

    async def _without_own_withheld(
        self, query: MemoryQuery, tiers: list[ResilientTier], merged: list[tuple[MemoryEntry, list[str]]]
    ) -> list[tuple[MemoryEntry, list[str]]]:
        """``merged`` without the global copies of the asking agent's own memories that its own store
        does not admit (see :meth:`_withheld_by_own_store`)."""
        own = self.router.private.name
        global_names = {t.name for t in tiers if t.scope is MemoryScope.GLOBAL}
        copies = [e.id for e, names in merged
                  if e.agent_id == query.agent_id and own not in names and global_names.intersection(names)]
        withheld = await self._withheld_by_own_store(copies, query.as_of) if copies and query.agent_id else set()
        return [(e, names) for e, names in merged if e.id not in withheld or own in names]

    async def _withheld_by_own_store(self, ids: list[str], as_of: datetime | None = None) -> set[str]:
        """Of ``ids``, those the agent's own store holds but does not admit (archived, hidden,
        superseded; at ``as_of`` if asked).

        The agent's store is where its memory is decided: a copy promotion made in the global tier
        can be left behind by a change that does not follow copies (consolidation archiving a
        restatement into the memory that says more; a global tier out of reach during an edit), and
        it then answered the agent beside what replaced it. Other agents have no such store and
        still read the copy.
        """
        store = admitting_of(self.router.private.backend)
        if store is None:
            return set()
        try:
            held = await store.admitted_by_id(MemoryQuery(), ids, audience=Audience.OPERATOR, include_archived=True)
            admitted = await store.admitted_by_id(MemoryQuery(as_of=as_of), list(held)) if held else {}
        except MemoryStorageError:  # the private tier's own read reports it: the copies stand
            return set()
        return set(held) - set(admitted)

    async def _with_neighbours(
        self, query: MemoryQuery, tiers: list[ResilientTier], ranked: list[tuple[MemoryEntry, float]],
        tiers_of: dict[int, list[str]], degraded: list[MemoryDegradedEvent],
    ) -> list[tuple[MemoryEntry, float]]:
        """Session-neighbour expansion (:mod:`memory.ranking.neighbours`): the turns next to the best
        few, then ``recall.neighbour_reach`` - 1 rings of the turns next to those, each read through
        the admission predicate of the tiers that returned the turn it is next to (a tier that failed
        a read returned nothing, so it costs no second budget), merged in just below."""
        top = [entry for entry, _ in ranked[: self.recall_settings.neighbour_depth]]
        rings: dict[str, list[list[MemoryEntry]]] = {entry.id: [] for entry in top}
        origin = {entry.id: entry.id for entry in top}  # a turn reached -> the hit it was reached from
        held = {entry.id: tiers_of[id(entry)] for entry in top}  # a turn's id -> the tiers holding it
        frontier = list(origin)
        for _ in range(self.recall_settings.neighbour_reach):
            by_tier = {tier.name: [i for i in frontier if tier.name in held[i]] for tier in tiers}
            reading = [tier for tier in tiers if by_tier[tier.name]]
            reads = await asyncio.gather(*(t.session_neighbours(self._query_for(t, query), by_tier[t.name]) for t in reading))
            events = [event for _, event in reads if event is not None]
            self._emit(events)
            degraded += events
            for ring in rings.values():
                ring.append([])
            frontier = []
            for tier, (found, _) in zip(reading, reads, strict=True):  # most local first: its copy is kept
                for at, entries in found.items():
                    for entry in entries:
                        if entry.id in origin and entry.id not in frontier:
                            continue  # a hit, or a turn an earlier ring brought
                        if entry.id not in frontier:
                            origin[entry.id] = origin[at]
                            frontier.append(entry.id)
                        if tier.name not in held.setdefault(entry.id, []):
                            held[entry.id].append(tier.name)
                        rings[origin[at]][-1].append(entry.model_copy(update={"matched_by": ["neighbour"]}))
            if not frontier:
                break
        expanded = expand(ranked, [rings[entry.id] for entry in top], share=self.recall_settings.neighbour_share,
                          limit=query.limit, key=lambda entry: entry.id)
        for entry, _ in expanded:
            tiers_of.setdefault(id(entry), held.get(entry.id, []))
        return expanded

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        return (await self.recall(query)).entries

    async def stream_search(self, query: MemoryQuery) -> AsyncIterator[MemoryEntry]:
        """The same ranked sequence as :meth:`search`, one entry at a time.

        Ranking needs every candidate, so the fan-out happens up front; the
        caller can still stop consuming as soon as its context budget is full.
        """
        for entry in await self.search(query):
            yield entry

    async def get(self, entry_id: str) -> MemoryEntry | None:
        """The most local copy of ``entry_id``; a failing tier is skipped and reported."""
        return (await self._first_holding(entry_id, self.router.tiers))[0]

    async def get_shared(
        self, entry_id: str, *, audience: Audience | None = None
    ) -> tuple[MemoryEntry | None, Any, list[MemoryDegradedEvent]]:
        """``entry_id`` in the first shared tier that admits it (recall's rules, or ``audience``'s), with
        that tier; and the tiers that could not be read, so the caller can name them rather than answer
        "no memory". A read-only tier (a vault) is read too, through its own admission: recall answers
        with its notes. The global copy of a memory the agent's own store holds but does not admit is
        not read either (see :meth:`_withheld_by_own_store`)."""
        shared = [t for t in self.router.tiers if t.scope is not MemoryScope.PRIVATE]
        if await self._withheld_by_own_store([entry_id]):
            shared = [t for t in shared if t.scope is not MemoryScope.GLOBAL]
        return await self._first_holding(entry_id, shared, audience)

    async def _first_holding(
        self, entry_id: str, tiers: Sequence[ResilientTier], audience: Audience | None = None
    ) -> tuple[MemoryEntry | None, Any, list[MemoryDegradedEvent]]:
        """The first of ``tiers`` that admits ``entry_id`` (its copy named by that tier), the tier, and
        each tier that could not be read, reported (audit) as recall reports them."""
        unread: list[MemoryDegradedEvent] = []
        for tier in tiers:
            found, event = await tier.get(entry_id, audience=audience)
            if event is not None:
                self._emit([event])
                unread.append(event)
            if found is not None:
                return found.model_copy(update={"tiers": [tier.name]}), tier, unread
        return None, None, unread

    async def get_many(self, entry_ids: Sequence[str]) -> dict[str, MemoryEntry]:
        """:meth:`get` of each of ``entry_ids``, one read per tier: a bulk import's lookup."""
        found: dict[str, MemoryEntry] = {}
        for tier in self.router.tiers:
            missing = [entry_id for entry_id in entry_ids if entry_id not in found]
            if not missing:
                break
            hits, event = await tier.get_many(missing)
            if event is not None:
                self._emit([event])
            found.update((i, e.model_copy(update={"tiers": [tier.name]})) for i, e in hits.items())
        return found

    async def reworded(self, since: Mapping[str, datetime]) -> set[str]:
        """Of ``since`` (memory id -> a time), those whose text an edit changed after that time in
        any tier holding them (a promoted copy is changed with its original)."""
        found: set[str] = set()
        for tier in self.router.tiers:
            found |= await tier.reworded({i: at for i, at in since.items() if i not in found})
        return found

    # -- health and maintenance -------------------------------------------

    async def tier_health(self) -> list[TierHealth]:
        tiers = self.router.tiers
        statuses = await asyncio.gather(*(tier.health_check() for tier in tiers))
        return [
            TierHealth(t.name, t.scope.value, s.healthy, s.message, t.breaker.describe(), t.read_only)
            for t, s in zip(tiers, statuses, strict=True)
        ]

    async def health_check(self) -> HealthStatus:
        """Healthy while at least one tier is; unhealthy tiers are named. Never raises."""
        health = await self.tier_health()
        down = [h for h in health if not h.healthy]
        healthy = len(down) < len(health)
        if not down:
            return HealthStatus(healthy=True, message=f"{len(health)} tier(s) healthy")
        names = "; ".join(f"{h.name}: {h.message}" for h in down)
        return HealthStatus(healthy=healthy, message=f"{len(down)}/{len(health)} tier(s) down — {names}")

    async def prune(self, policy: PrunePolicy) -> PruneReport:
        """Prune every writable tier whose backend can; sum the reports.

        Pruning is destructive maintenance, so it bypasses the resilience
        wrapper on purpose: a tier failure propagates instead of degrading.
        """
        total = PruneReport(dry_run=policy.dry_run)
        seen: set[int] = set()
        for tier in self.router.tiers:
            backend = tier.backend
            if tier.read_only or id(backend) in seen or not isinstance(backend, Prunable):
                continue
            seen.add(id(backend))
            report = await backend.prune(policy)
            total.scanned += report.scanned
            total.archived += report.archived
            total.purged += report.purged
            total.victim_ids += report.victim_ids
        return total
