"""Reconciling an import (``remember --from``): one batch decided line by line, written at once.

A line whose id the store already holds (in any state), or that restated a
memory on an earlier run (:mod:`memory.reconcile.restatements`), is a re-run:
it is not decided again, so a re-run reinforces nothing. Saying what its row
says (content, type, tags) it is skipped, so a re-run does not undo the
importance reinforcement or an operator gave the row since; a line edited
since is upserted by id, as without reconciliation. The other lines are
decided in the order they were said (``created_at``), each against the store
it is written to (the agent's, or for a ``--pool`` line that pool, with the
member rule: :meth:`Reconciler.decide_write` for one line) and against the lines of the batch decided before it (:class:`Earlier`: same
subject and attribute, or the same words), so a history that says "I live in
Berlin" and later "I moved to Lisbon" ends Berlin even when both arrive in
one file. Their texts are embedded for the store's candidate search in one
call (``VectorAdapter.prime``), not one per line; into an empty store there
is no such search, and no such embedding. :func:`decide_many` decides the
batch and changes no row; the federation writes its adds, updates and
deletes with one batch write; then :func:`settle_many` reinforces
restatements and ends replaced versions, in order, through the same paths a
single ``remember`` uses.
"""

from __future__ import annotations

import asyncio
import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from memory.federation.decisions import Decision, DecisionKind, ImportDecisions
from memory.reconcile import restatements
from memory.reconcile.slots import Fact, Subject, parse
from memory.types import Audience, MemoryEntry, MemoryQuery, MemoryScope


def _cosine(a: Sequence[float] | None, b: Sequence[float] | None) -> float | None:
    if a is None or b is None:
        return None
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norm if norm else None


class Earlier:
    """The lines of this batch decided so far (and to be written), as candidates for the next one.

    Each line is indexed by its normalised text and by each slot it states,
    so finding a line's candidates reads only the lines sharing one (a
    1,024-line window compared every line with every earlier one).
    """

    def __init__(self, patterns: Any, vectors: dict[str, list[float]]):
        self.patterns = patterns
        self.vectors = vectors  # text -> its primed vector (empty without an embedder)
        self.lines: list[MemoryEntry] = []
        # (normalised text,) or (subject key, attribute) -> positions in ``lines``
        self.sharing: dict[tuple[str, ...], list[int]] = defaultdict(list)

    def add(self, entry: MemoryEntry) -> None:
        parsed, norm = parse(entry.content, self.patterns)
        for key in {(norm,)} | {(s.key, f.attribute) for f, s in parsed}:
            self.sharing[key].append(len(self.lines))
        self.lines.append(entry)

    def candidates(
        self, entry: MemoryEntry, parsed: list[tuple[Fact, Subject]], norm: str, seen: set[str], limit: int
    ) -> list[tuple[MemoryEntry, float | None]]:
        """The latest ``limit`` earlier lines stating a slot ``entry`` states, or the same words."""
        keys = {(norm,)} | {(s.key, f.attribute) for f, s in parsed}
        positions = sorted({p for key in keys for p in self.sharing.get(key, ())}, reverse=True)
        found = []
        for line in (self.lines[p] for p in positions):
            if line.id in seen or line.agent_id != entry.agent_id:
                continue
            found.append((line, _cosine(self.vectors.get(entry.content), self.vectors.get(line.content))))
            if len(found) >= limit:
                break
        return found


def _same_line(line: MemoryEntry, row: MemoryEntry) -> bool:
    """The row this line imported before, as the line has it. Importance is not compared: what
    reinforcement or an operator made of it since is the store's, not the file's."""
    return (line.content, line.type, line.tags) == (row.content, row.type, row.tags)


async def _already(reconciler: Any, where: Any, entries: Sequence[MemoryEntry]
                   ) -> tuple[dict[str, MemoryEntry], set[str], set[str]]:
    """The rows ``where``'s store holds in any state (an operator read) by id, the ids of those the line
    still says the same of, and the ids that restated a memory there on an earlier run."""
    restated = await reconciler.store.run(restatements.recorded, [e.id for e in entries], where.pool)
    rows = await where.store.admitted_by_id(
        MemoryQuery(), [e.id for e in entries if e.id not in restated], audience=Audience.OPERATOR, include_archived=True
    )
    same = {e.id for e in entries if e.id in rows and _same_line(e, rows[e.id])}
    return rows, same, restated


async def _repeating(reconciler: Any, where: Any, new: list[MemoryEntry]) -> dict[str, Decision]:
    """The ``new`` lines (written to ``where``; None: a global line, a pool out of reach) that repeat a
    memory an operator withheld, and their decision (:meth:`Decision.repeating`), as
    :meth:`Reconciler.decide_write` decides one write: one lookup a store for the window."""
    found = await reconciler.withheld_repeated(new, where) if new else {}
    return {i: Decision.repeating(m) for i, m in found.items()}


SEARCH_AHEAD = 3  # a pool's candidate searches at once: a server pool's 4 connections, less its decision lock's


class _Place:
    """One store a batch's lines are decided against (the agent's, or a pool's), and what it knows of them."""

    def __init__(self, where: Any):
        self.where = where
        self.held: dict[str, MemoryEntry] = {}  # the rows the store holds of the batch's ids, by id
        self.same: set[str] = set()  # of those, the ids whose line still says what the row says
        self.restated: set[str] = set()  # the ids that restated a memory there on an earlier run
        self.search_store = False
        self.earlier: Earlier | None = None
        self.searched: dict[str, Any] = {}  # a pool line's id -> its candidates there (or why the search failed)

    async def ready(self, reconciler: Any, lines: list[MemoryEntry]) -> None:
        # Trigger: the first import into a fresh store. Why: nothing stored can be a candidate, and
        # embedding the batch for a search that cannot find anything would cost a second embedding pass.
        self.search_store = await self.where.store.count() > 0
        # Only the agent's own vectors are primed in one call; a pool's decisions embed line by line.
        primed = await _prime(reconciler, lines) if self.search_store and self.where.pool is None else {}
        self.earlier = Earlier(reconciler.patterns, primed)
        if self.search_store and self.where.pool is not None:
            self.searched = await _search_ahead(reconciler, self.where, lines)


async def _search_ahead(reconciler: Any, where: Any, lines: list[MemoryEntry]) -> dict[str, Any]:
    """Each line's candidates in the pool, :data:`SEARCH_AHEAD` searches at a time, each within the pool's
    read budget. Trigger: a server pool. Why: each search is three round trips, and one line after another a
    10,000-line import spent 12-20 ms a line waiting on them. Outcome: the same candidates (nothing is
    written until the batch is decided; the batch's own lines come from :class:`Earlier`), fetched at once."""
    gate = asyncio.Semaphore(SEARCH_AHEAD)

    async def search(entry: MemoryEntry) -> list[tuple[MemoryEntry, float | None]]:
        async with gate, asyncio.timeout(where.timeout):
            return await reconciler.candidates(entry, where)

    found = await asyncio.gather(*(search(entry) for entry in lines), return_exceptions=True)
    return {entry.id: result for entry, result in zip(lines, found, strict=True)}


async def decide_many(reconciler: Any, entries: list[MemoryEntry]) -> ImportDecisions:
    """Decide ``entries`` as one import; no row changes. What to write, and the lines to settle after.

    Each line is decided where :meth:`Reconciler.decide_write` decides one: a private line against the
    agent's store, a ``--pool`` line against that pool (its ids asked of the pool: the same file imported
    privately before is still new there), within the pool tier's read budget; a line with no such store
    (a global one, a pool out of reach) is written as given. A new line in an agent's words repeating a
    memory an operator withheld (in the agent's store, or in the pool it is written to) is stored
    withheld as it is, whatever the strategy, as a single write is."""
    if not entries:
        return ImportDecisions(as_given=True)
    places: dict[str, _Place | None] = {}  # by tier name ("private", "pool:NAME"); "" has no store
    groups: dict[str, list[MemoryEntry]] = defaultdict(list)
    place_of: dict[str, str] = {}
    for entry in entries:
        where = reconciler.against(entry)
        key = "" if where is None or not where.reachable else where.tier
        if key not in places:
            places[key] = _Place(where) if key else None
        groups[key].append(entry)
        place_of[entry.id] = key
    # A global line, or one for a pool out of reach, is checked against the agent's store alone.
    unplaced = await _repeating(reconciler, None, groups.get("", []))
    if reconciler.settings.strategy == "off":
        # Trigger: strategy off. Why: only an agent's words are checked, so a file of the user's own
        # lines costs no lookup. Outcome: those lines stored as given, the repeating ones withheld.
        repeating = unplaced
        for key, place in places.items():
            if place is not None and (agents := [e for e in groups[key] if e.said_by_agent]):
                held, _, restated = await _already(reconciler, place.where, agents)
                repeating |= await _repeating(reconciler, place.where,
                                              [e for e in agents if e.id not in held and e.id not in restated])
        lines = [(repeating[e.id].withheld(e), repeating[e.id]) for e in entries if e.id in repeating]
        withheld = {e.id: e for e, _ in lines}
        return ImportDecisions(written=[withheld.get(e.id, e) for e in entries], lines=lines, as_given=True)
    known: list[MemoryEntry] = []
    new: list[MemoryEntry] = []
    repeating: dict[str, Decision] = {}
    for key, place in places.items():
        if place is None:
            continue
        place.held, place.same, place.restated = await _already(reconciler, place.where, groups[key])
        known += [e for e in groups[key] if e.id in place.held and e.id not in place.same]  # an edited line: upserted by id
        fresh = [e for e in groups[key] if e.id not in place.held and e.id not in place.restated]
        repeating |= await _repeating(reconciler, place.where, fresh)
        await place.ready(reconciler, fresh)
        new += fresh
    lines: list[tuple[MemoryEntry, Decision]] = []
    for entry in sorted(new, key=lambda e: e.created_at):
        place = places[place_of[entry.id]]
        if entry.id in repeating:  # it answers no one, so it is no candidate for the lines after it
            lines.append((repeating[entry.id].withheld(entry), repeating[entry.id]))
            continue
        try:
            if isinstance(stored := place.searched.get(entry.id), BaseException):
                raise stored  # its search failed: decided as a failed decision is
            async with asyncio.timeout(place.where.timeout):
                decision = await reconciler.decide(entry, place.earlier, search_store=place.search_store,
                                                   where=place.where, stored=stored)
        except Exception as exc:  # as in Reconciler.decide_write: never a reason to lose a write
            reconciler._audit("reconcile_fallback", entry, f"{type(exc).__name__}: {exc}")
            decision = Decision(reason="reconciliation failed: added")
        if decision.conflict_with:
            entry = entry.model_copy(update={"conflict_with": decision.conflict_with})
        lines.append((entry, decision))
        if decision.kind is not DecisionKind.NOOP:
            place.earlier.add(entry)
    given = [unplaced[e.id].withheld(e) if e.id in unplaced else e for e in groups.get("", [])]
    written = known + given + [e for e, d in lines if d.kind is not DecisionKind.NOOP]
    decided = [place for place in places.values() if place is not None]
    private = places.get("private")
    return ImportDecisions(
        written, lines, given=given, skipped=set().union(*(p.restated | p.same for p in decided)),
        unchanged=private.same if private else set(),
        successors=[private.held[i] for i in sorted(private.same) if private.held[i].supersedes is not None] if private else [],
    )


async def settle_many(reconciler: Any, batch: ImportDecisions, report: Any) -> list[MemoryEntry]:
    """After ``batch.written`` was written (``report``, the fan-out's ``BatchWriteReport``): reinforce
    restatements and end replaced versions, in the order the lines were said, counting ``decisions``
    and collecting ``warnings`` on ``report``. Returns the restating lines whose memory went
    meanwhile: the caller stores them after all (as adds)."""
    from memory.federation.federation import WriteReport

    if batch.as_given:  # strategy off: each line a tier stored anew is an add; a re-run's lines are not
        report.decisions[DecisionKind.ADD.value] += sum(1 for entry in batch.written if entry.id in report.inserted)
        if "private" in report.accepted:
            for entry, decision in batch.lines:  # stored withheld: a private one linked to what it repeats
                if entry.scope is MemoryScope.PRIVATE:
                    await reconciler.settle(decision, entry, WriteReport(entry.id, accepted=["private"]))
        return []
    for entry_id in batch.skipped:
        report.changed[entry_id] = False  # imported (or restated) on an earlier run: nothing to do again
    if batch.unchanged and reconciler.vectors is not None:  # but a run killed between rows and vectors left some unembedded
        report.embedded_again = (await reconciler.vectors.complete(sorted(batch.unchanged))).embedded
    for row in batch.successors:  # a re-run finishes what a global tier out of reach left undone
        await reconciler.end_live_copies(row.id, row, report)
    # Lines with no store to decide them against: each one a tier stored anew is an add, as a single write's.
    report.decisions[DecisionKind.ADD.value] += sum(1 for entry in batch.given if entry.id in report.inserted)
    leftovers = []
    for entry, decision in batch.lines:
        where = reconciler.against(entry) or reconciler.private
        if where.tier not in report.accepted:  # that tier took none of the batch: nothing to settle there
            continue
        if decision.kind is DecisionKind.NOOP:
            single = await reconciler.reinforce(decision, entry)
            if single is None:
                leftovers.append(entry)  # the restated memory went meanwhile: store this line after all
                continue
            await restatements.record(reconciler.store, entry.id, decision.targets[0], where.pool)
            if where.pool is None:  # entity links live in the agent's own store, beside its own memories
                await reconciler._link(entry, decision.subjects)
        else:
            single = WriteReport(entry.id, accepted=[where.tier])
            await reconciler.settle(decision, entry, single)
        report.decisions[decision.kind.value] += 1
        report.warnings += single.warnings
    return leftovers


async def _prime(reconciler: Any, entries: list[MemoryEntry]) -> dict[str, list[float]]:
    """Embed the batch's texts in one call for its candidate searches; {} when that cannot run."""
    if reconciler.vectors is None or not entries:
        return {}
    try:
        return await reconciler.vectors.prime([e.content for e in entries], reconciler.settings.candidates)
    except Exception as exc:  # priming only saves time: each decision embeds on its own instead
        reconciler._audit("reconcile_fallback", entries[0], f"{type(exc).__name__}: {exc}")
        return {}
