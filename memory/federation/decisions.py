"""What a write does, decided before any row changes: the reconciler decides, the federation applies.

The reconciler (``memory.reconcile``, a layer above) returns a
:class:`Decision` for one write, or an :class:`ImportDecisions` for a batch;
the federation then reinforces (noop) or fans the write out, and hands the
decision back to be settled (old versions ended, entities linked). Defined
here, below the reconciler, so the federation applies decisions without
importing it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from memory.types import MemoryEntry


class DecisionKind(StrEnum):
    ADD = "add"
    NOOP = "noop"
    UPDATE = "update"
    DELETE = "delete"


@dataclass
class Decision:
    """What a write does. ``targets``: the reinforced id (noop) or the ended ids (update/delete).

    ``conflict_with``: the user-confirmed memory an asserted claim is held beside;
    ``restated``: the memory a noop restates; ``subjects``: what the written memory
    is about, linked when it is settled (the reconciler's own values).
    """

    kind: DecisionKind = DecisionKind.ADD
    targets: list[str] = field(default_factory=list)
    reason: str = ""
    conflict_with: str | None = None
    subjects: list[Any] = field(default_factory=list)
    restated: MemoryEntry | None = None

    def restated_gone(self) -> Decision:
        """The noop whose restated memory went meanwhile: store this one instead (still linked)."""
        return Decision(reason="the restated memory is gone: added", subjects=self.subjects)


@dataclass
class ImportDecisions:
    """A batch decided (``remember --from``): ``written`` goes to the fan-out in one batch write;
    ``lines`` are settled after it, in the order they were said. ``skipped``: ids imported (or
    restated) on an earlier run, nothing to do again; ``unchanged``: those of them whose row is
    there, to embed when a killed run left them without a vector. ``as_given``: reconciliation
    off, every line stored as given."""

    written: list[MemoryEntry] = field(default_factory=list)
    lines: list[tuple[MemoryEntry, Decision]] = field(default_factory=list)
    skipped: set[str] = field(default_factory=set)
    unchanged: set[str] = field(default_factory=set)
    successors: list[MemoryEntry] = field(default_factory=list)
    """The rows of unchanged lines that replaced a version: a re-run ends the global copies that
    version's supersession could not reach then (:meth:`Reconciler.end_live_copies`)."""
    as_given: bool = False
