"""The offline, deterministic decision: add, noop, update or delete.

Slots decide when both statements have them: the same subject and attribute
with an equal value is a restatement (noop); with a new value on a
single-valued attribute, an update; a retracted value, a delete. A candidate
is only ended when *every* fact it states is restated, replaced or retracted
by the new statement — a memory that also says something else stays current,
so nothing is lost to a partial match. Without slots, only a near-duplicate
(same normalised text, or vectors at least ``duplicate_similarity`` apart)
is a noop; anything else is added — unless a change said in everyday words
ends an old fact (:mod:`memory.reconcile.change_cues`, run after this).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.federation.decisions import Decision, DecisionKind
from memory.reconcile.slots import Fact
from memory.types import MemoryEntry

# Multi-valued attributes a stated change may still replace ("I prefer coffee now").
CHANGEABLE = frozenset({"likes", "dislikes", "use"})


@dataclass
class Candidate:
    """A current memory the new one may be about, its facts (subjects resolved) and normalised text."""

    entry: MemoryEntry
    similarity: float | None
    facts: list[Fact]
    norm: str


_WORD = re.compile(r"[\w@+.]+", re.UNICODE)
_NOISE = frozenset({"a", "an", "the", "my", "our", "called", "named", "of", "o", "a", "um", "uma"})


def stem(word: str) -> str:
    """The word as values are compared: lower-cased, outer dots off, a plural "s" off ("shifts" is "shift")."""
    word = word.lower().strip(".")
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _tokens(value: str) -> set[str]:
    return {word for word in map(stem, _WORD.findall(value.lower())) if word and word not in _NOISE}


def same_value(a: str, b: str) -> bool:
    """Equal values: the same digits (phone numbers), or one's words contain the other's."""
    digits_a, digits_b = re.sub(r"\D", "", a), re.sub(r"\D", "", b)
    if len(digits_a) >= 6 and len(digits_b) >= 6:
        return digits_a == digits_b
    ta, tb = _tokens(a), _tokens(b)
    return bool(ta and tb) and (ta <= tb or tb <= ta)


def adds_nothing(new: str, old: str) -> bool:
    """The new value says nothing the old one did not ("tea" after "tea with milk"; never the reverse)."""
    digits_new, digits_old = re.sub(r"\D", "", new), re.sub(r"\D", "", old)
    if len(digits_new) >= 6 and len(digits_old) >= 6:
        return digits_new == digits_old
    tn, to = _tokens(new), _tokens(old)
    return bool(tn) and tn <= to


def _touches(new: Fact, old: Fact) -> bool:
    if new.subject != old.subject:
        return False
    if new.attribute == old.attribute:
        return True
    return new.negated and "has" in (new.attribute, old.attribute)  # "I sold my bike" retracts any "bike" fact


def _relate(new_facts: list[Fact], old: Fact) -> str | None:
    """What the new statement does to one old fact: restated, replaced, retracted, or None."""
    for new in new_facts:
        if not _touches(new, old):
            continue
        equal = same_value(new.value, old.value)
        if new.negated:
            if equal:
                return "retracted"
            continue
        if equal:
            # "tea with milk" after "tea": the new statement covers the old one and says more.
            return "restated" if adds_nothing(new.value, old.value) else "refined"
        if not old.multi and not new.multi:
            return "replaced"
        if new.changed and old.attribute in CHANGEABLE and new.attribute == old.attribute:
            return "replaced"
    return None


def decide(new_facts: list[Fact], new_norm: str, candidates: list[Candidate], duplicate_similarity: float) -> Decision:
    ended: list[str] = []
    noop: Candidate | None = None
    retraction = bool(new_facts) and all(f.negated for f in new_facts)
    for candidate in candidates:
        if candidate.norm == new_norm:
            return Decision(DecisionKind.NOOP, [candidate.entry.id], "the same words")
        if not new_facts or not candidate.facts or any(f.negated for f in candidate.facts):
            continue
        outcome = [_relate(new_facts, old) for old in candidate.facts]
        if None in outcome:
            continue  # the candidate also says something this statement does not touch
        if "replaced" in outcome or "retracted" in outcome or "refined" in outcome:
            ended.append(candidate.entry.id)
        elif not retraction and all(any(_same(n, o) for o in candidate.facts) for n in new_facts):
            noop = noop or candidate
    if ended:
        kind = DecisionKind.DELETE if retraction else DecisionKind.UPDATE
        return Decision(kind, ended, "same subject and attribute" + (", retracted" if retraction else ", new value"))
    if noop is not None:
        return Decision(DecisionKind.NOOP, [noop.entry.id], "the same facts restated")
    for candidate in candidates:
        near = candidate.similarity is not None and candidate.similarity >= duplicate_similarity
        comparable = near and not (new_facts and candidate.facts)  # slots on both sides already decided
        # "ticket 4411 is fixed" is not "ticket 4412 is fixed", however close the vectors are.
        comparable = comparable and _identifiers(new_norm) == _identifiers(candidate.norm)
        # "the secondary cluster" is not "the primary cluster": a noop needs the new text to add no word.
        comparable = comparable and content_words(new_norm) <= content_words(candidate.norm)
        if comparable:
            return Decision(DecisionKind.NOOP, [candidate.entry.id], f"near-duplicate ({candidate.similarity:.2f})")
    return Decision(DecisionKind.ADD, [], "a new fact")


_FUNCTION = frozenset(
    "i me we us you he she it they is am are was were be been being do does did have has had to in on at for with"
    " and or but so that this these those there here just still really also now again too very some any"
    " dr mr mrs ms".split()  # a title is no content: "Dr. Patel" and "Dr. Okafor" share no word
)


def content_words(text: str) -> set[str]:
    """The words that carry content: the text's tokens less function words (identifiers kept whole)."""
    return {w for w in _tokens(re.sub(r"[/:#-]", " ", text)) | set(re.findall(r"\S*[/:#]\S*", text)) if w not in _FUNCTION}


def _identifiers(text: str) -> set[str]:
    return set(re.findall(r"\w*\d\w*", text))


def _same(new: Fact, old: Fact) -> bool:
    return new.subject == old.subject and new.attribute == old.attribute and adds_nothing(new.value, old.value)
