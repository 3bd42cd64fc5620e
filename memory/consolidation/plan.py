"""What consolidation decides, one decision at a time: which memories restate each other, and what an
old session's digest says (the store is walked by :mod:`memory.consolidation.store`).

Three decisions, each about content words (a memory's words less stop words,
small talk and a chat speaker's "Name:" prefix):

- **merge**: memories that say the same thing (vectors at or above
  ``merge_similarity``, and one's content words contain the other's) become
  the one that says the most; the rest are its sources. "I like tea" and "I
  like tea with milk" merge into the second; "primary cluster" and "secondary
  cluster" never do, however close their vectors.
- **digest**: episodes that aged out of recall (their type's decay profile)
  are gathered by session, in order, into semantic memories that carry each
  turn's contentful sentences and the date they were said; the turns whose
  sentences a digest carries are its sources.
- **idle**: an aged-out episode with no content words ("haha, yes!", "thanks,
  you too") carries nothing; it is archived with its session's digest, and is
  nobody's source.

Groups never cross agent, scope, pool or visibility, so a consolidated memory
is exactly as visible as each of its sources; a merge never crosses type
either, so ``recall --type preference`` still finds a merged preference.
Pinned memories are left alone, and so are claims held beside a user's fact (an open conflict is
the operator's to decide).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory.ranking.decay import DEFAULT_PROFILES, DecayProfile, should_consolidate
from memory.sqlite.fact_words import Claim, carries, claim, content_words, speaker_of
from memory.types import DERIVED_TAG, ConfidenceSource, MemoryEntry, MemoryType, Visibility

MERGE_SIMILARITY = 0.8  # close by meaning; the content-word rule is what keeps different facts apart
DIGEST_TURNS = 5  # contentful turns per digest: small enough to stay findable by meaning
REINFORCE_STEP = 0.05  # importance one more restatement adds
REINFORCE_CEILING = 0.85  # a merge never lifts importance to the promotion bar by repetition alone

_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_CLAUSE = re.compile(r"(?<=,)\s+")
_TRUST = {ConfidenceSource.USER_CONFIRMED: 0, ConfidenceSource.IMPORTED: 1, ConfidenceSource.AGENT: 2,
          ConfidenceSource.INFERRED: 3}


def carried_text(text: str) -> str:
    """The sentences of ``text`` (speaker prefix removed) that have content words, joined."""
    _, body = speaker_of(text)
    kept = [s.strip() for s in _SENTENCE.split(body.strip()) if content_words(s)]
    return " ".join(kept)


def compact_text(text: str, names: frozenset[str] = frozenset()) -> str:
    """What a digest writes of a turn: its statements with content words, less what says nothing.

    Dropped: a clause whose only content words are the speakers' names ("Wow, that's cool,
    Caroline!"), and a question whose every word the turn's statements say ("I paint sunsets.
    What do you paint?"). A question with words of its own stays: "Did you know my sister lives
    in Oslo? She is a nurse." and "I moved to Lisbon, right?" hold facts the turn says nowhere
    else, and the turn is archived into the digest. Every content word of what is kept is the
    turn's own; a turn left with nothing this way keeps its :func:`carried_text`.
    """
    def says(part: str) -> bool:
        return bool(content_words(part) - names)

    sentences = [s.strip() for s in _SENTENCE.split(speaker_of(text)[1].strip()) if says(s)]
    stated = frozenset().union(*(content_words(s) for s in sentences if not s.endswith("?")))
    statements = [s for s in sentences if not s.endswith("?") or not content_words(s) - names <= stated]
    kept = []
    for sentence in statements:
        clauses = [c for c in _CLAUSE.split(sentence) if says(c)]
        clause = ", ".join(c.rstrip(",") for c in clauses)
        kept.append(clause if clause[-1:] in ".!?" else clause + sentence[-1:] * (sentence[-1:] in ".!?"))
    return " ".join(kept) or carried_text(text)


def _shown(entry: MemoryEntry) -> str | None:
    """What a listed decision says of ``entry``: its text only when it is visible. A hidden or private
    memory's text leaves a store only by an explicit operator read (``memory list --all``), never in a
    dry run's plan, which cron and CI log; its ids and counts still say what the run would do."""
    return entry.content if entry.visibility in (None, Visibility.VISIBLE) else None


@dataclass(frozen=True, slots=True)
class Read:
    """A memory as a decision read it: what the store checks before applying it (an edit since
    stamps ``updated_at``). A merge holds its sources as these, so one fact said 50,000 times is
    a decision of ids, never 50,000 memories in hand."""

    id: str
    updated_at: datetime

    @classmethod
    def of(cls, entry: MemoryEntry) -> Read:
        return cls(entry.id, entry.updated_at)


@dataclass
class Merge:
    """A merge: whole, one transaction, however many sources (in parts, a run stopped between two
    left the keeper without the tags of the sources archived first)."""

    keep: MemoryEntry
    sources: list[Read]
    importance: float
    tags: list[str] = field(default_factory=list)  # the keeper's after the merge: every member's

    def as_dict(self) -> dict:
        return {"keep": self.keep.id, "content": _shown(self.keep), "importance": round(self.importance, 3),
                "tags": self.tags, "sources": [s.id for s in self.sources]}


@dataclass
class Digest:
    entry: MemoryEntry
    sources: list[MemoryEntry]
    idle: list[MemoryEntry] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"id": self.entry.id, "content": _shown(self.entry), "sources": [s.id for s in self.sources],
                "idle": [s.id for s in self.idle]}


@dataclass
class Plan:
    """What consolidation decided: counts always; the decisions only when ``keep`` (a dry run that
    lists them), each as its ids and (a visible one's) text, so a run over a million rows holds one batch of
    entries."""

    keep: bool = True
    merges: list[dict] = field(default_factory=list)
    digests: list[dict] = field(default_factory=list)
    tally: Counter = field(default_factory=Counter)

    def add(self, decision: Merge | Digest) -> None:
        if isinstance(decision, Merge):
            self.tally.update(merged=1, merged_sources=len(decision.sources))
            if self.keep:
                self.merges.append(decision.as_dict())
        else:
            self.tally.update(digests=1, digested=len(decision.sources), idle=len(decision.idle))
            if self.keep:
                self.digests.append(decision.as_dict())

    @property
    def archived(self) -> int:
        return self.tally["merged_sources"] + self.tally["digested"] + self.tally["idle"]

    def counts(self) -> dict[str, int]:
        names = ("merged", "merged_sources", "digests", "digested", "idle", "changed")
        return {**{name: self.tally[name] for name in names}, "archived": self.archived}


def keeper(group: Sequence[MemoryEntry]) -> MemoryEntry:
    """The member that says the most; among equals the most trusted, then the earliest. A derived
    memory (an echo, a summary) never keeps over what it was made from: no fact is archived into one.
    A total order (ids break ties), so the keeper of keepers of parts is the keeper of the whole."""
    return min(group, key=lambda e: (e.derived, -len(content_words(e.content)), _TRUST[e.confidence_source],
                                     e.created_at, e.id))


def restates(said: Claim, vector, other: Claim, other_vector, merge_similarity: float = MERGE_SIMILARITY) -> bool:
    """Whether two memories of the same agent, scope, pool, visibility and type say the same thing: one
    :func:`carries` the other, and their vectors are close (without vectors, equal claims)."""
    if vector is None or other_vector is None:
        return vector is None and other_vector is None and said == other
    a, b = np.asarray(vector, dtype=np.float32), np.asarray(other_vector, dtype=np.float32)
    cosine = float(a @ b) / max(float(np.linalg.norm(a) * np.linalg.norm(b)), 1e-12)
    return cosine >= merge_similarity and (carries(said, other) or carries(other, said))


def merge_of(group: Sequence[MemoryEntry]) -> Merge | None:
    """A cluster of restatements (chained pairs) as one merge: its keeper, and the members the
    keeper itself carries as sources, importance lifted by how often it was said."""
    keep = keeper(group)
    sources = sources_for(keep, group)
    if not sources:
        return None
    return Merge(keep, [Read.of(s) for s in sources],
                 lifted(max([keep.importance, *(s.importance for s in sources)]), len(sources)),
                 union_tags([keep, *sources]))


def sources_for(keep: MemoryEntry, members: Sequence[MemoryEntry]) -> list[MemoryEntry]:
    """The members (in order) other than ``keep`` that ``keep`` carries and that are trusted no more
    than it: a user's "I like tea" archived into an inference "I like tea with a little milk" (0.5)
    was lost to ``recall --min-confidence 0.9``, and lifting the inference's confidence would claim
    its extra words with more than anyone said them."""
    kept = claim(keep.content)
    return [e for e in members if e.id != keep.id and _trusted_no_more(e, keep) and carries(kept, claim(e.content))]


def _trusted_no_more(source: MemoryEntry, keep: MemoryEntry) -> bool:
    return (source.confidence <= keep.confidence
            and _TRUST[source.confidence_source] >= _TRUST[keep.confidence_source])


def lifted(top: float, sources: int) -> float:
    """A keeper's importance after a merge: the highest of the merged, lifted by how often it was said."""
    return min(top + REINFORCE_STEP * sources, max(top, REINFORCE_CEILING))


def _date_words(start: datetime, end: datetime) -> str:
    first = f"{start.day} {start:%B %Y}"
    return f"On {first}" if start.date() == end.date() else f"From {first} to {end.day} {end:%B %Y}"


def union_tags(members: Sequence[MemoryEntry]) -> list[str]:
    """Every tag of what a digest or merge carries, so `recall --tag` still finds each; derived only
    when every member is (a memory carrying a fact is not)."""
    tags = {tag for m in members for tag in m.tags}
    return sorted(tags if all(m.derived for m in members) else tags - {DERIVED_TAG})


def _digest_entry(turns: list[MemoryEntry], now: datetime) -> MemoryEntry:
    parts, speaker_last = [], None
    names = frozenset(w for t in turns for w in content_words(speaker_of(t.content)[0] or ""))
    for turn in turns:
        speaker, _ = speaker_of(turn.content)
        text = compact_text(turn.content, names) or speaker_of(turn.content)[1].strip()  # an answer: "No."
        parts.append(f"{speaker}: {text}" if speaker and speaker != speaker_last else text)
        speaker_last = speaker
    first = turns[0]
    return MemoryEntry(
        agent_id=first.agent_id,
        type=MemoryType.SEMANTIC,
        content=f"{_date_words(turns[0].created_at, turns[-1].created_at)}: " + " ".join(parts),
        scope=first.scope,
        pool_name=first.pool_name,
        importance=max(t.importance for t in turns),
        confidence=min(t.confidence for t in turns),
        confidence_source=max((t.confidence_source for t in turns), key=lambda s: _TRUST[s]),
        tags=union_tags(turns),
        source_session_id=first.source_session_id,
        created_at=turns[0].created_at,
        # It holds once its last turn was said: --as-of an earlier time never answers with a later turn.
        valid_from=turns[-1].created_at if turns[-1].created_at > turns[0].created_at else None,
        updated_at=now,
        visibility=first.visibility,
    )


def aged_out(entry: MemoryEntry, now: datetime,
             profiles: Mapping[MemoryType, DecayProfile] = DEFAULT_PROFILES) -> bool:
    """An unpinned episode past its decay profile's consolidation point: what digests gather."""
    return (entry.type is MemoryType.EPISODIC and not entry.pinned
            and should_consolidate(entry, profiles[MemoryType.EPISODIC], now))


def _asks(text: str) -> bool:
    """Whether a turn ends on a question: the turn after it, however short, is its answer."""
    return speaker_of(text)[1].rstrip().endswith("?")


def session_digests(turns: Sequence[MemoryEntry], now: datetime, turns_per_digest: int = DIGEST_TURNS) -> list[Digest]:
    """One session's aged-out turns, in order, as digests of ``turns_per_digest`` contentful turns;
    small talk goes with the digest it falls in (after the last fact: with the last digest).

    A turn without content words that answers the question just before it ("Did you finish the
    vase?" "No.") is no small talk: it is carried, in its digest, after the question, and is one of
    its sources (archived as idle, the digest read as if the question had no answer)."""
    made: list[Digest] = []
    window: list[MemoryEntry] = []
    idle: list[MemoryEntry] = []
    contentful, previous = 0, None
    for turn in turns:
        carried = bool(carried_text(turn.content))
        answers = not carried and bool(window) and previous is window[-1] and _asks(previous.content)
        previous = turn
        if carried and contentful == turns_per_digest:  # a full window closes only now: its question's answer joins it
            made.append(Digest(_digest_entry(window, now), window, idle))
            window, idle, contentful = [], [], 0
        if carried or answers:
            window.append(turn)
            contentful += carried
        else:
            idle.append(turn)
    if window:
        made.append(Digest(_digest_entry(window, now), window, idle))
    elif idle and made:
        made[-1].idle.extend(idle)
    return made
