"""Entities, lightly: who or what a fact is about, with aliases, per agent.

"My wife Sarah works at Apple" makes one entity with the aliases ``wife`` and
``sarah``, so a later "Sarah moved to Paris" resolves to the same subject as
"my wife lives in Rome". Entities and aliases live in the agent's own
database; a memory is linked to the entity it is about by a ``memory_edges``
edge (relation ``about``), which graph expansion can follow.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable, Sequence

from memory.reconcile.slots import Subject
from memory.sqlite.connection import transaction

ABOUT = "about"
EDGE_SOURCE = "reconcile"
SPEAKER = "user"


def _aliases(subject: Subject) -> list[str]:
    return [subject.key, *subject.aliases]


class Resolution:
    """Subject aliases → one key per entity: a stored entity id, or a provisional ``alias:`` key."""

    def __init__(self, known: dict[str, str]):
        self.known = dict(known)

    def key(self, subject: Subject) -> str:
        if subject.key == SPEAKER:
            return SPEAKER
        names = _aliases(subject)
        found = next((self.known[n] for n in names if n in self.known), None) or f"alias:{subject.key}"
        for name in names:
            self.known.setdefault(name, found)
        return found


def load_aliases(raw, agent_id: str, names: Sequence[str]) -> dict[str, str]:
    names = [n for n in dict.fromkeys(names) if n != SPEAKER]
    if not names:
        return {}
    marks = ",".join("?" * len(names))
    rows = raw.execute(
        f"SELECT alias, entity_id FROM entity_aliases WHERE agent_id = ? AND alias IN ({marks})", (agent_id, *names)
    )
    return {alias: entity for alias, entity in rows}


def all_names(subjects: Iterable[Subject]) -> list[str]:
    return [name for subject in subjects for name in _aliases(subject)]


def link(raw, agent_id: str, memory_id: str, subjects: Sequence[Subject]) -> list[str]:
    """Make sure each subject (not the speaker) is an entity with its aliases; link the memory to it.

    Runs in one transaction on the store's connection; returns the entity ids linked.
    """
    now = time.time()
    linked: list[str] = []
    with transaction(raw):
        for subject in subjects:
            if subject.key == SPEAKER:
                continue
            names = _aliases(subject)
            known = load_aliases(raw, agent_id, names)
            entity = next((known[n] for n in names if n in known), None)
            if entity is None:
                entity = str(uuid.uuid4())
                raw.execute(
                    "INSERT INTO entities (id, agent_id, name, created_at) VALUES (?, ?, ?, ?)",
                    (entity, agent_id, subject.aliases[0] if subject.aliases else subject.key, now),
                )
            raw.executemany(
                "INSERT OR IGNORE INTO entity_aliases (agent_id, alias, entity_id) VALUES (?, ?, ?)",
                [(agent_id, n, entity) for n in names],
            )
            raw.execute(
                "INSERT OR IGNORE INTO memory_edges (src_id, dst_id, relation, source, confidence, created_at) "
                "VALUES (?, ?, ?, ?, 1.0, ?)",
                (memory_id, entity, ABOUT, EDGE_SOURCE, now),
            )
            linked.append(entity)
    return linked
