"""What consolidation would do to a store's current memories, decided before anything is written.

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
is exactly as visible as each of its sources. Pinned memories are left alone.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memory.ranking.decay import DEFAULT_PROFILES, DecayProfile, should_consolidate
from memory.query_terms import STOPWORDS
from memory.types import DERIVED_TAG, ConfidenceSource, MemoryEntry, MemoryType

MERGE_SIMILARITY = 0.8  # close by meaning; the content-word rule is what keeps different facts apart
DIGEST_TURNS = 5  # contentful turns per digest: small enough to stay findable by meaning
REINFORCE_STEP = 0.05  # importance one more restatement adds
REINFORCE_CEILING = 0.85  # a merge never lifts importance to the promotion bar by repetition alone

_SPEAKER = re.compile(r"^\s*([A-Z][\w.'-]*(?: [A-Z][\w.'-]*)?):\s+")
_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
# Words that carry no fact of their own in a conversation: reactions, greetings, fillers.
SMALL_TALK = frozenset(
    """
    haha hahaha lol yeah yes yep yup no nope ok okay sure thanks thank thx appreciate welcome hi hey hello
    bye goodbye wow oh ah aw aww hmm um uh cool great nice awesome amazing wonderful fantastic incredible
    beautiful lovely sweet fun glad happy proud excited sounds sound looks look seems totally really
    definitely absolutely exactly true agree right same good well much lot also just like love care soon
    talk later chat catch glad congrats congratulations super pretty kind very always ever
    """.split()
)
_TRUST = {ConfidenceSource.USER_CONFIRMED: 0, ConfidenceSource.IMPORTED: 1, ConfidenceSource.AGENT: 2,
          ConfidenceSource.INFERRED: 3}


def speaker_of(text: str) -> tuple[str | None, str]:
    """("Caroline", "rest") for a chat line "Caroline: rest"; (None, text) otherwise."""
    match = _SPEAKER.match(text)
    return (match.group(1), text[match.end():]) if match else (None, text)


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that can carry a fact (lower-cased, a plural's "s" dropped)."""
    _, body = speaker_of(text)
    words = (w.lower() for w in _WORD.findall(body))
    return frozenset(w[:-1] if len(w) > 3 and w.endswith("s") else w
                     for w in words if w not in STOPWORDS and w not in SMALL_TALK and len(w) > 1)


def carried_text(text: str) -> str:
    """The sentences of ``text`` (speaker prefix removed) that have content words, joined."""
    _, body = speaker_of(text)
    kept = [s.strip() for s in _SENTENCE.split(body.strip()) if content_words(s)]
    return " ".join(kept)


@dataclass(frozen=True)
class Candidate:
    """A current memory as consolidation sees it."""

    entry: MemoryEntry
    vector: Sequence[float] | None = None


@dataclass
class Merge:
    keep: MemoryEntry
    sources: list[MemoryEntry]
    importance: float

    def as_dict(self) -> dict:
        return {"keep": self.keep.id, "content": self.keep.content, "importance": round(self.importance, 3),
                "sources": [s.id for s in self.sources]}


@dataclass
class Digest:
    entry: MemoryEntry
    sources: list[MemoryEntry]
    idle: list[MemoryEntry] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {"id": self.entry.id, "content": self.entry.content, "sources": [s.id for s in self.sources],
                "idle": [s.id for s in self.idle]}


@dataclass
class Plan:
    merges: list[Merge] = field(default_factory=list)
    digests: list[Digest] = field(default_factory=list)

    @property
    def archived(self) -> int:
        return sum(len(m.sources) for m in self.merges) + sum(len(d.sources) + len(d.idle) for d in self.digests)

    def counts(self) -> dict[str, int]:
        return {"merged": len(self.merges), "merged_sources": sum(len(m.sources) for m in self.merges),
                "digests": len(self.digests), "digested": sum(len(d.sources) for d in self.digests),
                "idle": sum(len(d.idle) for d in self.digests), "archived": self.archived}


def _group_key(entry: MemoryEntry) -> tuple:
    return (entry.agent_id, entry.scope, entry.pool_name, entry.visibility)


def _keeper(group: list[Candidate]) -> Candidate:
    """The member that says the most; among equals the most trusted, then the earliest. A derived
    memory (an echo, a summary) never keeps over what it was made from: no fact is archived into one."""
    return min(group, key=lambda c: (c.entry.derived, -len(content_words(c.entry.content)),
                                     _TRUST[c.entry.confidence_source], c.entry.created_at, c.entry.id))


def _carries(big: frozenset[str], small: frozenset[str]) -> bool:
    return bool(small) and small <= big


def plan_merges(candidates: Sequence[Candidate], merge_similarity: float = MERGE_SIMILARITY) -> list[Merge]:
    """Restatements: clusters of memories whose words one member carries, close by meaning."""
    pool = [c for c in candidates if not c.entry.pinned and content_words(c.entry.content)]
    parent = list(range(len(pool)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    words = [content_words(c.entry.content) for c in pool]
    for i, j in _close_pairs(pool, merge_similarity):
        a, b = pool[i].entry, pool[j].entry
        if _group_key(a) == _group_key(b) and (_carries(words[i], words[j]) or _carries(words[j], words[i])):
            parent[find(i)] = find(j)
    clusters: dict[int, list[int]] = {}
    for i in range(len(pool)):
        clusters.setdefault(find(i), []).append(i)
    merges = []
    for members in clusters.values():
        if len(members) < 2:
            continue
        group = [pool[i] for i in members]
        keep = _keeper(group)
        kept_words = content_words(keep.entry.content)
        # Union-find chains pairs; a source must be carried by the keeper itself.
        sources = [c.entry for c in group if c is not keep and _carries(kept_words, content_words(c.entry.content))]
        if not sources:
            continue
        top = max([keep.entry.importance, *(s.importance for s in sources)])
        lifted = min(top + REINFORCE_STEP * len(sources), max(top, REINFORCE_CEILING))
        merges.append(Merge(keep.entry, sources, lifted))
    return merges


def _close_pairs(pool: Sequence[Candidate], threshold: float, block: int = 512):
    """Index pairs (i < j) at or above ``threshold`` cosine; without vectors, equal content words."""
    with_vec = [i for i, c in enumerate(pool) if c.vector is not None]
    if with_vec:
        matrix = np.asarray([pool[i].vector for i in with_vec], dtype=np.float32)
        matrix /= np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)
        for start in range(0, len(with_vec), block):
            sims = matrix[start:start + block] @ matrix.T
            for a, b in zip(*np.nonzero(sims >= threshold)):
                i, j = with_vec[start + a], with_vec[b]
                if i < j:
                    yield i, j
    by_words: dict[frozenset[str], int] = {}
    for i, c in enumerate(pool):
        if c.vector is None:
            key = content_words(c.entry.content)
            if key in by_words:
                yield by_words[key], i
            else:
                by_words[key] = i


def _date_words(start: datetime, end: datetime) -> str:
    first = f"{start.day} {start:%B %Y}"
    return f"On {first}" if start.date() == end.date() else f"From {first} to {end.day} {end:%B %Y}"


def _digest_tags(turns: list[MemoryEntry]) -> list[str]:
    """Every tag of its turns; derived only when every turn is (a digest carrying a fact is not)."""
    tags = {tag for t in turns for tag in t.tags}
    return sorted(tags if all(t.derived for t in turns) else tags - {DERIVED_TAG})


def _digest_entry(turns: list[MemoryEntry], now: datetime) -> MemoryEntry:
    parts, speaker_last = [], None
    for turn in turns:
        speaker, _ = speaker_of(turn.content)
        text = carried_text(turn.content)
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
        tags=_digest_tags(turns),
        source_session_id=first.source_session_id,
        created_at=turns[0].created_at,
        updated_at=now,
        visibility=first.visibility,
    )


def plan_digests(
    candidates: Sequence[Candidate],
    now: datetime,
    profiles: Mapping[MemoryType, DecayProfile] = DEFAULT_PROFILES,
    turns_per_digest: int = DIGEST_TURNS,
) -> list[Digest]:
    """Aged-out episodes, by session and in order, as digests of ``turns_per_digest`` contentful turns."""
    profile = profiles[MemoryType.EPISODIC]
    sessions: dict[tuple, list[MemoryEntry]] = {}
    for c in candidates:
        e = c.entry
        if e.type is MemoryType.EPISODIC and not e.pinned and should_consolidate(e, profile, now):
            sessions.setdefault((*_group_key(e), e.source_session_id or e.created_at.date().isoformat()), []).append(e)
    digests = []
    for turns in sessions.values():
        turns.sort(key=lambda e: (e.created_at, e.id))
        made: list[Digest] = []
        window: list[MemoryEntry] = []
        idle: list[MemoryEntry] = []
        for turn in turns:
            (window if carried_text(turn.content) else idle).append(turn)
            if len(window) == turns_per_digest:
                made.append(Digest(_digest_entry(window, now), window, idle))
                window, idle = [], []
        if window:
            made.append(Digest(_digest_entry(window, now), window, idle))
        elif idle and made:  # small talk after the session's last fact goes with its last digest
            made[-1].idle.extend(idle)
        digests.extend(made)
    return digests


def plan(candidates: Sequence[Candidate], now: datetime,
         profiles: Mapping[MemoryType, DecayProfile] = DEFAULT_PROFILES,
         merge_similarity: float = MERGE_SIMILARITY) -> Plan:
    """Digests first (old episodes), then merges among what is left and the digests' neighbours."""
    digests = plan_digests(candidates, now, profiles)
    digested = {e.id for d in digests for e in (*d.sources, *d.idle)}
    rest = [c for c in candidates if c.entry.id not in digested]
    return Plan(merges=plan_merges(rest, merge_similarity), digests=digests)
