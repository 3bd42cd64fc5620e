"""Reconciling an import (``remember --from``): one batch decided line by line, written at once.

A line whose id the store already holds (in any state), or that restated a
memory on an earlier run (:mod:`memory.reconcile.restatements`), is a re-run:
it is not decided again, so a re-run reinforces nothing. Saying what its row
says (content, type, tags) it is skipped, so a re-run does not undo the
importance reinforcement or an operator gave the row since; a line edited
since is upserted by id, as without reconciliation. The other lines are
decided in the order they were said (``created_at``), each against the store
and against the lines of the batch decided before it (:class:`Earlier`: same
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

import math
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from memory.federation.decisions import Decision, DecisionKind, ImportDecisions
from memory.operator.edits import withheld_repeated_many
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


async def _already(store: Any, entries: Sequence[MemoryEntry]) -> tuple[dict[str, MemoryEntry], set[str], set[str]]:
    """The rows the store holds in any state (an operator read) by id, the ids of those the line
    still says the same of, and the ids that restated a memory on an earlier run."""
    restated = await store.run(restatements.recorded, [e.id for e in entries])
    rows = await store.admitted_by_id(
        MemoryQuery(), [e.id for e in entries if e.id not in restated], audience=Audience.OPERATOR, include_archived=True
    )
    same = {e.id for e in entries if e.id in rows and _same_line(e, rows[e.id])}
    return rows, same, restated


async def _repeating(reconciler: Any, entries: list[MemoryEntry], held: dict[str, MemoryEntry], restated: set[str]
                     ) -> dict[str, Decision]:
    """The new lines (none ``held`` or ``restated``) that repeat a memory an operator withheld, and their
    decision (:meth:`Decision.repeating`), as :meth:`Reconciler.decide_write` decides one write."""
    new = [e for e in entries if e.id not in held and e.id not in restated]
    return {i: Decision.repeating(m) for i, m in (await withheld_repeated_many(reconciler.store, new)).items()}


async def decide_many(reconciler: Any, entries: list[MemoryEntry]) -> ImportDecisions:
    """Decide ``entries`` as one import; no row changes. What to write, and the lines to settle after.

    A new line in an agent's words repeating a memory an operator withheld is stored withheld as it is,
    whatever the strategy, as a single write is (:meth:`Reconciler.decide_write`)."""
    if not entries:
        return ImportDecisions(as_given=True)
    # Only the private lines are asked about: the store is the agent's own, and a `--pool` line whose
    # id it holds (the same file imported privately before) is still new to the pool.
    private = [e for e in entries if e.scope is MemoryScope.PRIVATE]
    if reconciler.settings.strategy == "off":
        # Trigger: strategy off. Why: only an agent's words are checked, so a file of the user's own
        # lines costs no lookup. Outcome: those lines stored as given, the repeating ones withheld.
        agents = [e for e in private if e.said_by_agent]
        held, _, restated = await _already(reconciler.store, agents) if agents else ({}, set(), set())
        repeating = await _repeating(reconciler, agents, held, restated) if agents else {}
        lines = [(repeating[e.id].withheld(e), repeating[e.id]) for e in entries if e.id in repeating]
        withheld = {e.id: e for e, _ in lines}
        return ImportDecisions(written=[withheld.get(e.id, e) for e in entries], lines=lines, as_given=True)
    held, same, restated = await _already(reconciler.store, private)
    repeating = await _repeating(reconciler, private, held, restated)
    known = [e for e in entries if e.id in held and e.id not in same]  # an edited line: upserted by id, as before
    new = sorted((e for e in entries if e.id not in held and e.id not in restated), key=lambda e: e.created_at)
    # Trigger: the first import into a fresh store. Why: nothing stored can be a candidate, and
    # embedding the batch for a search that cannot find anything would cost a second embedding pass.
    search_store = await reconciler.store.count() > 0
    private = [e for e in new if e.scope is MemoryScope.PRIVATE]
    earlier = Earlier(reconciler.patterns, await _prime(reconciler, private) if search_store else {})
    lines: list[tuple[MemoryEntry, Decision]] = []
    for entry in new:
        if entry.scope is not MemoryScope.PRIVATE:
            lines.append((entry, Decision(reason="not a private memory")))
            continue
        if entry.id in repeating:  # it answers no one, so it is no candidate for the lines after it
            lines.append((repeating[entry.id].withheld(entry), repeating[entry.id]))
            continue
        try:
            decision = await reconciler.decide(entry, earlier, search_store=search_store)
        except Exception as exc:  # as in Reconciler.decide_write: never a reason to lose a write
            reconciler._audit("reconcile_fallback", entry, f"{type(exc).__name__}: {exc}")
            decision = Decision(reason="reconciliation failed: added")
        if decision.conflict_with:
            entry = entry.model_copy(update={"conflict_with": decision.conflict_with})
        lines.append((entry, decision))
        if decision.kind is not DecisionKind.NOOP:
            earlier.add(entry)
    written = known + [e for e, d in lines if d.kind is not DecisionKind.NOOP]
    successors = [held[i] for i in sorted(same) if held[i].supersedes is not None]
    return ImportDecisions(written, lines, skipped=restated | same, unchanged=same, successors=successors)


async def settle_many(reconciler: Any, batch: ImportDecisions, report: Any) -> list[MemoryEntry]:
    """After ``batch.written`` was written (``report``, the fan-out's ``BatchWriteReport``): reinforce
    restatements and end replaced versions, in the order the lines were said, counting ``decisions``
    and collecting ``warnings`` on ``report``. Returns the restating lines whose memory went
    meanwhile: the caller stores them after all (as adds)."""
    from memory.federation.federation import WriteReport

    if batch.as_given:  # strategy off: each line a tier stored anew is an add; a re-run's lines are not
        report.decisions[DecisionKind.ADD.value] += sum(1 for entry in batch.written if entry.id in report.inserted)
        if "private" in report.accepted:
            for entry, decision in batch.lines:  # stored withheld: linked to what it repeats
                await reconciler.settle(decision, entry, WriteReport(entry.id, accepted=["private"]))
        return []
    for entry_id in batch.skipped:
        report.changed[entry_id] = False  # imported (or restated) on an earlier run: nothing to do again
    if batch.unchanged and reconciler.vectors is not None:  # but a run killed between rows and vectors left some unembedded
        report.embedded_again = (await reconciler.vectors.complete(sorted(batch.unchanged))).embedded
    # Trigger: a `--pool` import. Why: its lines are not decided (not private) and no private tier
    # accepts them, yet each one a tier stored anew is an add, as `remember --pool` reports one.
    report.decisions[DecisionKind.ADD.value] += sum(
        1 for entry, _ in batch.lines if entry.scope is not MemoryScope.PRIVATE and entry.id in report.inserted
    )
    for row in batch.successors:  # a re-run finishes what a global tier out of reach left undone
        await reconciler.end_live_copies(row.id, row, report)
    if "private" not in report.accepted:
        return []
    leftovers = []
    for entry, decision in batch.lines:
        if entry.scope is not MemoryScope.PRIVATE:
            continue
        if decision.kind is DecisionKind.NOOP:
            single = await reconciler.reinforce(decision, entry)
            if single is None:
                leftovers.append(entry)  # the restated memory went meanwhile: store this line after all
                continue
            await restatements.record(reconciler.store, entry.id, decision.targets[0])
            await reconciler._link(entry, decision.subjects)
        else:
            single = WriteReport(entry.id, accepted=["private"])
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
