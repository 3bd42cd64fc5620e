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

from memory.types import MemoryEntry, Visibility


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
    is about, linked when it is settled (the reconciler's own values); ``repeats``: the
    memories an operator withheld that an agent's claim repeats, so it is stored as they are
    (:meth:`withheld`) and linked to them.
    """

    kind: DecisionKind = DecisionKind.ADD
    targets: list[str] = field(default_factory=list)
    reason: str = ""
    conflict_with: str | None = None
    subjects: list[Any] = field(default_factory=list)
    restated: MemoryEntry | None = None
    repeats: list[MemoryEntry] = field(default_factory=list)

    @classmethod
    def repeating(cls, repeats: list[MemoryEntry]) -> Decision:
        """An agent's words repeating memories an operator withheld (``repeats``): stored withheld as they
        are, ending and reinforcing nothing (it answers no one, so it replaces nothing that answers)."""
        return cls(reason="it repeats a memory an operator withheld: stored withheld as it is", repeats=repeats)

    def restated_gone(self) -> Decision:
        """The noop whose restated memory went meanwhile: store this one instead (still linked)."""
        return Decision(reason="the restated memory is gone: added", subjects=self.subjects, repeats=self.repeats)

    def withheld(self, entry: MemoryEntry) -> MemoryEntry:
        """``entry`` as it is stored: withheld as what it repeats (:attr:`repeats`) is: hidden (or
        private) as a hidden one, archived as a forgotten one; as given when it repeats none."""
        if not self.repeats:
            return entry
        hidden = [m.visibility for m in self.repeats if m.visibility is not Visibility.VISIBLE]
        return entry.model_copy(update={"visibility": hidden[0] if hidden else entry.visibility,
                                        "archived": entry.archived or any(m.archived for m in self.repeats)})


@dataclass
class ImportDecisions:
    """A batch decided (``remember --from``): ``written`` goes to the fan-out in one batch write;
    ``lines`` are settled after it, in the order they were said. ``skipped``: ids imported (or
    restated) on an earlier run, nothing to do again; ``unchanged``: those of them whose row is
    there, to embed when a killed run left them without a vector. ``as_given``: reconciliation
    off, every line stored as given."""

    written: list[MemoryEntry] = field(default_factory=list)
    lines: list[tuple[MemoryEntry, Decision]] = field(default_factory=list)
    given: list[MemoryEntry] = field(default_factory=list)
    """Lines written as given: no store of ours to decide them against (a global line, a pool out of reach)."""
    skipped: set[str] = field(default_factory=set)
    unchanged: set[str] = field(default_factory=set)
    successors: list[MemoryEntry] = field(default_factory=list)
    """The rows of unchanged lines that replaced a version: a re-run ends the global copies that
    version's supersession could not reach then (:meth:`Reconciler.end_live_copies`)."""
    as_given: bool = False
