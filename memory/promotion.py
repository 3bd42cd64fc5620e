"""The promotion policy: which private memories get a copy in the global tier.

One rule for every writer — the federation's router, the seed's
``global_store=`` option of the SQLite adapter and operator edits all ask
:func:`promotable`. A promoted copy is the same memory (same id, same agent)
with scope ``global``; only the user's own statements and operator writes may
be promoted. Whatever a model or an agent asserts stays private however
important it claims to be, the way its confidence stays below 1.0.
"""

from __future__ import annotations

from collections.abc import Sequence

from memory.protocols import MemoryAdapter
from memory.types import ConfidenceSource, LedgerRecord, MemoryEntry, MemoryScope, Visibility

PROMOTION_THRESHOLD = 0.9
ASSERTED_IMPORTANCE_CAP = 0.89
"""The most importance an agent- or model-asserted memory is stored with: below the threshold."""

ASSERTED_SOURCES = frozenset({ConfidenceSource.AGENT, ConfidenceSource.INFERRED})
"""Sources that never promote: the agent's (or its model's) own claims and what it inferred.
``user_confirmed`` (the user's statements, operator writes — the default of a
library write) and ``imported`` (the user's own notes) may."""


def asserted_importance(importance: float) -> float:
    """Importance for an agent- or model-asserted memory: clamped to 0..1 and capped below the threshold."""
    return max(0.0, min(float(importance), ASSERTED_IMPORTANCE_CAP))


def as_claimed(entry: MemoryEntry, confidence_cap: float) -> MemoryEntry:
    """``entry`` as an agent's claim may be stored: confidence at most ``confidence_cap``, importance
    below the promotion threshold, never pinned (only a user or operator pins). Other sources pass as given.

    Applied by the federation to every write, the one way an agent (run, MCP, a
    session summary, ``remember --from`` of agent lines) stores, so no way in skips it.
    """
    if entry.confidence_source not in ASSERTED_SOURCES:
        return entry
    changes: dict = {}
    if entry.confidence > confidence_cap:
        changes["confidence"] = confidence_cap
    if entry.importance > ASSERTED_IMPORTANCE_CAP:
        changes["importance"] = ASSERTED_IMPORTANCE_CAP
    if entry.pinned:
        changes["pinned"] = False
    return entry.model_copy(update=changes) if changes else entry


def users_own(entry: MemoryEntry) -> bool:
    """Whether ``entry`` is the user's (said, written by an operator, or the user's notes imported), not an
    agent's claim: what may be promoted, so what only the user or an operator changes (an agent's
    edit would reach every agent through its copy)."""
    return entry.confidence_source not in ASSERTED_SOURCES


def promotable(entry: MemoryEntry) -> bool:
    """True when ``entry`` belongs in the global tier too: private, important enough, and not self-asserted."""
    visibility = None if entry.visibility is None else Visibility(entry.visibility).value
    return _qualifies(entry.scope, entry.importance, entry.confidence_source, visibility)


def ever_promotable(history: Sequence[LedgerRecord]) -> bool:
    """Whether any version of a memory in its ledger ``history`` was promotable: a copy may exist
    even though the memory as it stands would not be promoted (its importance was lowered since)."""
    return any(
        _qualifies(
            MemoryScope(image["scope"]), image["importance"], ConfidenceSource(image["confidence_source"]),
            image.get("visibility"),
        )
        for record in history
        for image in (record.before, record.after)
        if image
    )


def _qualifies(scope: MemoryScope, importance: float, source: ConfidenceSource, visibility: str | None) -> bool:
    """Private, important, not self-asserted, and visible (``None``: a new row, visible): a private or
    hidden memory never sits in a shared database, however important."""
    return (
        scope is MemoryScope.PRIVATE and importance >= PROMOTION_THRESHOLD and source not in ASSERTED_SOURCES
        and visibility in (None, Visibility.VISIBLE.value)
    )


def global_copy(entry: MemoryEntry) -> MemoryEntry:
    """The promoted copy of ``entry``: same id, same agent, scope global, no pool."""
    return entry.model_copy(update={"scope": MemoryScope.GLOBAL, "pool_name": None})


async def promote(entries: Sequence[MemoryEntry], global_store: MemoryAdapter) -> list[tuple[MemoryEntry, Exception]]:
    """Write the global copy of every promotable entry; return the ones that failed, with why.

    For writers that hold the global store directly (the seed's
    ``global_store=``); the federation routes through :func:`promotable` and
    writes :func:`global_copy` itself, concurrently with the private leg.
    """
    failures = []
    for entry in entries:
        if promotable(entry):
            try:
                await global_store.write(global_copy(entry))
            except Exception as exc:  # the private write committed; promotion degrades
                failures.append((entry, exc))
    return failures
