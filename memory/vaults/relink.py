"""Which notes' links an index pass resolves again, and the few notes they can resolve to.

A link is looked up by one key (:func:`lookup_key`) and can only resolve to
notes filed under it (:func:`filing_keys`). So after a pass that adds, removes,
renames or re-aliases a few notes, only the notes it read and the notes with a
link looked up by a key one of those notes is (or was) filed under can resolve
differently: a dangling link that now resolves, one that turns ambiguous, one
whose note went. Both are found by reading the manifest a page at a time, so a
pass that adds one note to a vault of 12,000 neither resolves 36,000 links
nor holds every note.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from memory.graph.wikilinks import LinkResolver, LinkSource, filed_under, lookup_key
from memory.vaults import manifest
from memory.vaults.manifest import FileRecord
from memory.vaults.plan import IndexPlan


def source(record: FileRecord) -> LinkSource:
    """A note as the resolver sees it."""
    return LinkSource(record.rel_path, record.id, record.aliases, record.targets)


def current(raw, plan: IndexPlan, *, targets: bool = False) -> Iterator[FileRecord]:
    """Every note after ``plan``, read a page at a time: the manifest less removed paths, overlaid with the
    notes read this pass (their records are written window by window, and a note left unwritten still counts)."""
    removed = set(plan.removed_paths)
    pending = dict(plan.read)
    for record, _ in manifest.rows(raw, targets=targets):
        if record.rel_path not in removed:
            yield pending.pop(record.rel_path, record)
    yield from pending.values()


def filed(records: Iterable[FileRecord], targets: Iterable[tuple[str, LinkSource]]) -> list[LinkSource]:
    """The notes among ``records`` that ``targets`` (each with the note it is written in) can resolve to:
    a resolver holding only them resolves those targets as one holding the whole vault."""
    keys = {key for key in (lookup_key(t, written_in) for t, written_in in targets) if key is not None}
    picked = (LinkSource(r.rel_path, r.id, r.aliases) for r in records)
    return [s for s in picked if filed_under(s, keys)] if keys else []


def affected(raw, plan: IndexPlan) -> list[LinkSource]:
    """The notes whose links may resolve differently after ``plan``: those it changed, and those with a link
    looked up by a key of a note it added, removed or re-aliased (``plan.moved``)."""
    changed = {r.rel_path for r in plan.changed}
    if not plan.moved:
        return [source(r) for r in plan.read.values() if r.rel_path in changed]
    notes = (source(r) for r in current(raw, plan, targets=True))
    return [n for n in notes if n.rel_path in changed or any(lookup_key(t, n) in plan.moved for t in n.targets)]


def resolver_for(raw, plan: IndexPlan, notes: list[LinkSource]) -> LinkResolver:
    """A resolver for ``notes``' links after ``plan``, holding only the notes they can resolve to."""
    targets = [(t, n) for n in notes for t in n.targets]
    return LinkResolver(filed(current(raw, plan), targets), plan.attachments)
