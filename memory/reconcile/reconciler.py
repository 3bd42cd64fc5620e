"""Write-time reconciliation: the one step between "a memory arrives" and "rows change".

Reconciliation is a decision taken before the write, applied by the
federation (:mod:`memory.federation.decisions`). :meth:`Reconciler.decide_write`
finds the candidates, resolves subjects to entities, decides (heuristic, or the
model with the heuristic's candidates) and applies the source rule, changing
no row. The federation then either has the restated row reinforced
(:meth:`~Reconciler.reinforce`, the noop) or fans the write out itself and
hands the decision back to :meth:`~Reconciler.settle`, which ends the versions
it replaces and links its entities — every effect through the ledger. Nothing
is ever removed: a superseded row keeps its content and answers ``--as-of``.

Failure is safe by construction: any error while deciding (an embedder
down, a model timeout) makes the write an ``add``. The write lands before the
old version is ended, so a crash between the two leaves two current facts,
never none; a write that fails ends nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cached_property
from typing import Any

from memory.config import ReconcileSettings
from memory.errors import MemoryStorageError, NotFoundError
from memory.federation.decisions import Decision, DecisionKind, ImportDecisions
from memory.federation.resilience import BreakerState, CircuitBreaker, ResilientTier
from memory.graph.edges import EdgeStore, MemoryEdge
from memory.operator.edits import Edit, EditReport, LiveCopyError, MemoryEditor, withheld_repeated_many
from memory.promotion import promotable
from memory.protocols import ledger_of, similar_of, withheld_of
from memory.reconcile import entities, restatements
from memory.reconcile.candidates import find_candidates
from memory.reconcile.change_cues import cued_update, not_now
from memory.reconcile.heuristic import Candidate, decide
from memory.reconcile.slots import Fact, SlotPatterns, Subject, parse
from memory.sqlite.admission import QUOTED_LINK
from memory.sqlite.consolidation import SOURCES
from memory.sqlite.rows import held_ids
from memory.types import DERIVED_TAG, ConfidenceSource, MemoryEntry, MemoryScope

REINFORCE_STEP = 0.05
_ASSERTED = (ConfidenceSource.AGENT, ConfidenceSource.INFERRED)


def _derived_rule(entry: MemoryEntry, decision: Decision) -> Decision:
    """A derived memory (a turn's echo, a session's summary) ends nothing and is held against nothing:
    it repeats what its turns said, whose own facts are reconciled. Its framing words ("Session of 1
    turn. User stated: I live in Lisbon now.") read as a change of the very fact it repeats, so every
    change a user stated in `arcana run` left two open conflicts for an operator to settle."""
    if DERIVED_TAG not in entry.tags or decision.kind not in (DecisionKind.UPDATE, DecisionKind.DELETE):
        return decision
    return Decision(reason="a derived memory: it ends nothing, its turns' facts do")


def _resolved(fact: Fact, key: str) -> Fact:
    return Fact(key, fact.attribute, fact.value, fact.multi, fact.negated, fact.changed)


@dataclass(frozen=True)
class Against:
    """The store a write is decided against and its effects land in: the agent's private store, or
    the pool the write goes to (``pool``), whose memories are every member's."""

    store: Any  # the ledgered store: keyword candidates, and the edits (through MemoryEditor)
    vectors: Any | None  # finds similar memories there, if it can
    tier: str  # the tier's name in a write's report
    pool: str | None = None
    timeout: float | None = None  # seconds a decision may take there: a pool tier's read budget
    reachable: bool = True  # False: the pool tier's breaker is not closed (its server down)


def _member_rule(entry: MemoryEntry, decision: Decision, by_id: dict[str, MemoryEntry]) -> Decision:
    """In a pool only the user's word ends another member's memory: an agent's claim ends its own
    agent's rows and is held beside anyone else's, as beside a user-confirmed fact (the source rule)."""
    if decision.kind not in (DecisionKind.UPDATE, DecisionKind.DELETE) or entry.confidence_source is ConfidenceSource.USER_CONFIRMED:
        return decision
    others = [t for t in decision.targets if by_id[t].agent_id != entry.agent_id]
    if not others:
        return decision
    return Decision(DecisionKind.ADD, [], "an agent's claim against another member's memory: held", others[0])


class Reconciler:
    """Reconciles writes against one agent's private store (``store``: its SQLiteAdapter;
    ``vectors``: the VectorAdapter over it, if any), and a write into a pool against that pool
    (``pools``: a pool's name to its writable tier, None if it has none).
    ``provider`` is the chat model of the ``llm`` strategy; without one ``llm`` decides like
    ``heuristic``."""

    def __init__(
        self,
        store: Any,
        vectors: Any | None = None,
        settings: ReconcileSettings | None = None,
        *,
        provider: Any | None = None,
        audit: Any | None = None,
        copies: Callable[[], Any] | None = None,
        pools: Callable[[str], ResilientTier | None] | None = None,
    ):
        self.store = store
        self.vectors = vectors
        self.settings = settings or ReconcileSettings()
        self.provider = provider
        self.audit = audit
        self.copies = copies  # opens the GlobalCopies that a supersession must end too
        self.pools = pools
        self._pool_stores: dict[str, tuple[ResilientTier, Any, Any]] = {}  # pool -> (its tier, ledgered store, similar)
        # The tiers' breaker, around the model: a model that keeps failing (a hung endpoint costs the
        # whole timeout) is not asked for every line of a `remember --from`; one probe once it resets.
        self.model_breaker = CircuitBreaker()

    def configure(self, settings: ReconcileSettings, provider: Any | None) -> None:
        """New settings and model (config.json changed under a long-running process); the slot
        patterns are compiled again for a new language."""
        if settings.language != self.settings.language:
            self.__dict__.pop("patterns", None)  # the cached_property's value
        self.settings, self.provider = settings, provider

    @cached_property
    def patterns(self) -> SlotPatterns:
        """The slot patterns of the settings' language. Compiled on the first write it decides,
        not at import: a command that only reads (``recall``) would spend 20 ms on them."""
        from memory.reconcile.languages import get_slots, slot_languages

        # A language with extraction signals but no slot patterns yet reconciles with English slots.
        language = self.settings.language if self.settings.language in slot_languages() else "en"
        return get_slots(language)

    @property
    def private(self) -> Against:
        """The agent's own store: where a private write is decided, and where its effects land."""
        return Against(self.store, self.vectors, "private")

    def against(self, entry: MemoryEntry) -> Against | None:
        """Where ``entry`` is decided: its agent's store, or the pool it is written to (None: a
        global write, or a pool with no writable store of ours, which is written as given)."""
        if entry.scope is MemoryScope.PRIVATE:
            return self.private
        if entry.scope is not MemoryScope.SHARED or self.pools is None or not entry.pool_name:
            return None
        tier = self.pools(entry.pool_name)
        if tier is None:
            return None
        found = self._pool_stores.get(entry.pool_name)
        if found is None or found[0] is not tier:  # looked up once per tier: an import asks for every line
            found = self._pool_stores[entry.pool_name] = (tier, ledger_of(tier.backend), similar_of(tier.backend))
        _, store, vectors = found
        if store is None:  # a server's stand-in keeps no ledger
            return None
        return Against(store, vectors, tier.name, entry.pool_name,
                       tier.budget.read_timeout_ms / 1000, tier.breaker.state is BreakerState.CLOSED)

    async def decide_write(self, entry: MemoryEntry) -> Decision:
        """What writing ``entry`` does; no row changes. Any failure decides ``add`` (audited).

        An agent's claim repeating a memory an operator withheld (:meth:`withheld_repeated`) is
        stored withheld as it is (:meth:`Decision.withheld`), whatever the strategy, and ends or
        reinforces nothing: it answers no one, so it replaces nothing that answers."""
        where = self.against(entry)
        if repeats := (await self.withheld_repeated([entry], where)).get(entry.id):
            return Decision.repeating(repeats)
        if self.settings.strategy == "off":
            return Decision()
        try:
            # Trigger: a pool whose server cannot be had, is down (breaker not closed) or holds a lock.
            # Why: its write waits on it anyway; deciding first waited a whole write budget more (a
            # locked server pool: 11.3 s to exit 5, not 5.8 s). Outcome: no decision, or one within
            # the tier's read budget; else written as given, and the tier's write says what failed.
            if where is None or not where.reachable:
                return Decision()
            async with asyncio.timeout(where.timeout):
                return await self.decide(entry, where=where)
        except Exception as exc:  # deciding is an optimisation of the store, never a reason to lose a write
            self._audit("reconcile_fallback", entry, f"{type(exc).__name__}: {exc}")
            return Decision(reason="reconciliation failed: added")

    async def withheld_repeated(self, entries: list[MemoryEntry], where: Against | None) -> dict[str, list[MemoryEntry]]:
        """The memories an operator withheld that each of ``entries`` (written to one tier, ``where``) repeats,
        by id (:func:`withheld_repeated_many`): in the agent's own store, whatever the tier (its words
        into a pool or the global tier answer every agent there), and in the pool they are written to,
        where an operator's hide or forget is every member's. One lookup a store for all of them.

        A pool that cannot answer (its breaker open) is asked nothing, and a failed lookup there is
        audited: its write goes on, checked against the agent's store only."""
        found = await withheld_repeated_many(self.store, entries)
        pool = withheld_of(where.store) if where is not None and where.pool is not None and where.reachable else None
        if pool is None or not entries:
            return found
        try:
            async with asyncio.timeout(where.timeout):
                there = await withheld_repeated_many(pool, entries)
        except Exception as exc:  # as a failed decision: never a reason to lose a write
            self._audit("reconcile_fallback", entries[0], f"{type(exc).__name__}: {exc}")
            return found
        return {i: found.get(i, []) + there.get(i, []) for i in found.keys() | there.keys()}

    async def reinforce(self, decision: Decision, entry: MemoryEntry) -> Any | None:
        """The noop: reinforce the restated memory here and its global copy (promoting it when it
        becomes promotable); the write's report, or None when it is gone, so the write is stored
        instead. An asserted restatement counts as an access but never lifts importance past the
        asserted cap."""
        from memory.federation.federation import WriteReport

        target = decision.targets[0]
        where = self.against(entry) or self.private
        confirm = entry.confidence if self._confirms(entry, decision.restated) else None
        report = WriteReport(target, accepted=[where.tier])
        reinforce = Edit("reinforce", (REINFORCE_STEP, confirm, entry.confidence_source in _ASSERTED))
        applied = await self._through_copies([target], reinforce, "reinforced", entry, report, where)
        if not applied:
            return None
        report.accepted += [c.tier for c in applied[0].copies if c.changed and c.op in ("reinforce", "promote")]
        if where.pool is None:
            await self.end_live_copies(target, entry, report)
        ended: list[str] = []
        held_against = decision.restated.conflict_with if confirm is not None else None
        if held_against:
            # The claim was held only because an agent may not end what the user said: the user
            # saying it herself is that update, so the fact it was held against ends here.
            ended = await self._supersede([held_against], entry.model_copy(update={"id": target}), report, where)
        self._annotate(report, decision, ended)
        return report

    async def settle(self, decision: Decision, entry: MemoryEntry, report: Any) -> None:
        """After ``entry`` was written (``report``, the fan-out's): end the versions it replaces,
        link its entities, and say on ``report`` what was decided and ended."""
        ended = decision.targets
        where = self.against(entry) or self.private
        if decision.targets and where.tier in report.accepted:
            ended = await self._supersede(decision.targets, entry, report, where)
        if decision.repeats and "private" in report.accepted:
            # Linked as a claim quoting what it repeats: `memory show` of it names them, and a hide
            # or forget of one of them (shown again meanwhile) reaches it as it reaches a quoter.
            await EdgeStore(self.store).upsert([MemoryEdge(entry.id, m.id, SOURCES, QUOTED_LINK) for m in decision.repeats])
        if where.pool is None:  # entity links live in the agent's own store, beside its own memories
            await self._link(entry, decision.subjects)
        self._annotate(report, decision, ended)

    @staticmethod
    def _annotate(report: Any, decision: Decision, ended: list[str]) -> None:
        report.decision = decision.kind.value
        ends = decision.kind in (DecisionKind.UPDATE, DecisionKind.DELETE, DecisionKind.NOOP)  # a noop: a confirmed claim's
        report.supersedes = list(ended) if ends else []
        report.conflict_with = decision.conflict_with
        report.reason = decision.reason

    async def settled(self, entry_ids: list[str]) -> set[str]:
        """The ids an import does not decide again: a row holds them, or they restated a memory before."""
        return await self.store.run(lambda raw: held_ids(raw, entry_ids) | restatements.recorded(raw, entry_ids))

    async def decide_many(self, entries: list[MemoryEntry]) -> ImportDecisions:
        """:meth:`decide_write` for a batch (``remember --from``): see :func:`memory.reconcile.batch.decide_many`."""
        from memory.reconcile.batch import decide_many

        return await decide_many(self, entries)

    async def settle_many(self, batch: ImportDecisions, report: Any) -> list[MemoryEntry]:
        """:meth:`settle` for a batch; the lines to store after all: see :func:`memory.reconcile.batch.settle_many`."""
        from memory.reconcile.batch import settle_many

        return await settle_many(self, batch, report)

    async def _supersede(self, targets: list[str], entry: MemoryEntry, report: Any, where: Against) -> list[str]:
        """End each target here and its promoted global copy: the old fact is no longer current anywhere.

        It ends when ``entry`` was said (its ``valid_from``, else ``created_at``), not when the row
        is written: a backdated import ends Berlin on the day "I moved to Lisbon" was said.
        """
        said = entry.valid_from or entry.created_at
        applied = await self._through_copies(targets, Edit("supersede", (entry.id, said)), "superseded", entry, report, where)
        return [a.entry_id for a in applied if a.changed]

    async def end_live_copies(self, target: str, entry: MemoryEntry, report: Any) -> None:
        """Restating ``target`` ends the global copies still current of the versions it replaced: a
        supersession whose global tier was out of reach left the old fact's copy answering every
        agent, and its warning says to run the same command again: a restatement, or a
        ``remember --from`` re-run of the same line."""
        if not self.copies:
            return
        ended = [v for v in await self.store.versions(target, include_archived=True)
                 if v.superseded_by == target and v.valid_to is not None and promotable(v)]  # others have no copy
        if not ended:
            return
        copies = self.copies()
        try:
            live = [v for v in ended if (copy := await copies.copy_of(v)) is not None and copy.superseded_by is None]
        except (MemoryStorageError, TimeoutError) as exc:
            report.warnings.append(f"the global copies of what {target} replaced were not checked ({exc}); run the "
                                   "same command again once the global tier is reachable")
            return
        finally:
            await copies.aclose()
        for old in live:
            await self._through_copies([old.id], Edit("supersede", (target, old.valid_to)), "superseded", entry, report,
                                       self.private)

    async def _through_copies(
        self, targets: list[str], edit: Edit, verb: str, entry: MemoryEntry, report: Any, where: Against
    ) -> list:
        """Apply ``edit`` to each target in ``where`` and (a private one) its global copy through
        the operator edits' one path; a pool's memories are never promoted, so have no copy.

        Returns the :class:`EditReport` of each target still there. A copy
        that cannot be reached keeps the private change (the write stands)
        and is reported as a warning and in the audit log, never silently.
        """
        copies = self.copies() if self.copies and where.pool is None else None
        editor = MemoryEditor(where.store, copies=copies)
        applied = []
        try:
            for target in targets:
                try:
                    applied.append(await editor.apply(target, edit, verb=verb))
                except NotFoundError:
                    continue  # purged meanwhile: nothing left to change
                except LiveCopyError as exc:
                    applied.append(EditReport(target, True, None))
                    report.warnings.append(str(exc))
                    self._audit("reconcile_live_copy", entry, str(exc))
        finally:
            await editor.aclose()
        return applied

    async def decide(
        self, entry: MemoryEntry, earlier: Any | None = None, *, search_store: bool = True, where: Against | None = None,
        stored: list[tuple[MemoryEntry, float | None]] | None = None,
    ) -> Decision:
        """The decision for ``entry``, with the subjects it is about (to link) and, for a noop, the
        memory it restates.

        ``earlier`` (a :class:`memory.reconcile.batch.Earlier`) adds the lines of
        the same import decided before this one, not yet in the store;
        ``search_store=False`` (an import into an empty store) looks only there;
        ``stored``: the store's candidates, searched ahead (:meth:`candidates`).
        ``where``: the store decided against (default the agent's own); in a pool
        every member's current memories are candidates, and the member rule holds.
        """
        where = where or self.private
        parsed, norm = parse(entry.content, self.patterns)
        found = list(stored) if stored is not None else await self._search(entry, parsed, where) if search_store else []
        if earlier is not None:
            found += earlier.candidates(entry, parsed, norm, {e.id for e, _ in found}, self.settings.candidates)
        if not found:
            return Decision(reason="no similar memory", subjects=[s for _, s in parsed])
        candidate_parses = [(e, sim, *parse(e.content, self.patterns)) for e, sim in found]
        subjects = [s for _, s in parsed] + [s for *_, facts, _ in candidate_parses for _, s in facts]
        names = [n for n in entities.all_names(subjects) if n != entities.SPEAKER]
        # A pool keeps no entity aliases: its members' words are resolved as said.
        known = await self.store.run(entities.load_aliases, entry.agent_id, names, inline=True) if names and where.pool is None else {}
        resolution = entities.Resolution(known)
        # Candidates first: their appositions ("my wife Sarah") teach the aliases the new statement may use.
        candidates = [
            Candidate(e, sim, [_resolved(f, resolution.key(s)) for f, s in facts], cnorm)
            for e, sim, facts, cnorm in candidate_parses
        ]
        new_facts = [_resolved(f, resolution.key(s)) for f, s in parsed]
        decision = decide(new_facts, norm, candidates, self.settings.duplicate_similarity)
        if decision.kind in (DecisionKind.UPDATE, DecisionKind.DELETE) and not_now(norm, self.patterns):
            decision = Decision(reason="a plan, a one-off or long ago: nothing ended")  # "if I moved to Lisbon, ..."
        if decision.kind is DecisionKind.ADD:  # "I switched dentists": a change the slots could not read
            decision = cued_update(entry.content, new_facts, [s for _, s in parsed], norm, candidates, self.patterns) or decision
        if self.settings.strategy == "llm" and self.provider is not None and decision.reason != "the same words":
            decision = await self._ask_model(entry, [c.entry for c in candidates])
        by_id = {e.id: e for e, _ in found}
        decision = self._source_rule(entry, _derived_rule(entry, decision), by_id)
        if where.pool is not None:
            decision = _member_rule(entry, decision, by_id)
        restated = by_id[decision.targets[0]] if decision.kind is DecisionKind.NOOP else None
        return replace(decision, subjects=[s for _, s in parsed], restated=restated)

    async def candidates(self, entry: MemoryEntry, where: Against) -> list[tuple[MemoryEntry, float | None]]:
        """The candidates ``where`` holds for ``entry``, as :meth:`decide` searches them: for an import
        to search ahead, many lines at once (a server pool's search is round trips, not work)."""
        return await self._search(entry, parse(entry.content, self.patterns)[0], where)

    async def _search(self, entry: MemoryEntry, parsed: list, where: Against) -> list[tuple[MemoryEntry, float | None]]:
        words = " ".join(
            [self.patterns.attribute_words.get(f.attribute, "") for f, _ in parsed]
            + [" ".join([s.key, *s.aliases]) for _, s in parsed if s.key != entities.SPEAKER]
        )
        return await find_candidates(
            where.store, where.vectors, entry, words, limit=self.settings.candidates,
            min_similarity=self.settings.min_similarity, shared=where.pool is not None,
        )

    async def _ask_model(self, entry: MemoryEntry, candidates: list[MemoryEntry]) -> Decision:
        from memory.reconcile.llm import llm_decide

        breaker = self.model_breaker
        if not breaker.allow():
            return Decision(reason="model not asked: it failed again and again (breaker open): added")
        try:
            decision = await llm_decide(self.provider, entry, candidates, timeout=self.settings.timeout_seconds)
        except Exception as exc:  # any model failure adds: never an update or delete on a guess
            breaker.record_failure()
            self._audit("reconcile_fallback", entry, str(exc))
            if breaker.state is BreakerState.OPEN:
                self._audit("reconcile_model_paused", entry, f"{breaker.failures} failures in a row; the model is "
                            f"asked again in {breaker.reset_after_seconds:g}s, every write adds meanwhile")
            return Decision(reason=f"model failed ({str(exc)[:120]}): added")
        breaker.record_success()
        return decision

    @staticmethod
    def _source_rule(entry: MemoryEntry, decision: Decision, by_id: dict[str, MemoryEntry]) -> Decision:
        """An agent- or model-asserted memory never ends a user-confirmed one: it is held beside it."""
        if decision.kind not in (DecisionKind.UPDATE, DecisionKind.DELETE) or entry.confidence_source not in _ASSERTED:
            return decision
        protected = [t for t in decision.targets if by_id[t].confidence_source is ConfidenceSource.USER_CONFIRMED]
        if not protected:
            return decision
        return Decision(DecisionKind.ADD, [], "an asserted claim against a user-confirmed fact: held", protected[0])

    @staticmethod
    def _confirms(entry: MemoryEntry, existing: MemoryEntry) -> bool:
        """The user restating what the agent had only asserted confirms it."""
        return entry.confidence_source is ConfidenceSource.USER_CONFIRMED and existing.confidence_source in _ASSERTED

    async def _link(self, entry: MemoryEntry, subjects: list[Subject]) -> None:
        if not any(s.key != entities.SPEAKER for s in subjects):
            return
        try:
            await self.store.run(entities.link, entry.agent_id, entry.id, subjects)
        except Exception as exc:  # the memory is stored; a missing entity link only weakens later matching
            self._audit("reconcile_link_failed", entry, str(exc))

    def _audit(self, event: str, entry: MemoryEntry, reason: str) -> None:
        if self.audit is not None:
            self.audit.append(event, memory_id=entry.id, agent_id=entry.agent_id, reason=reason[:300])
