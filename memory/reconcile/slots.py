"""Subject / attribute / value slots read from a statement, per language.

Reconciliation needs to know what a memory is *about* ("where the user
lives", "who my manager is") to tell an update from a new fact. A language
is a :class:`SlotPatterns` of plain regexes registered under its ISO code with
:func:`register_slots` (the same codes as the extraction signals); the parser
never changes to learn one. English and Portuguese ship.

A statement is normalised (contractions, spelling, framing), a retraction is
rewritten to the proposition it retracts ("I no longer have a cat" → "I have
a cat", marked negated), and each clause is matched against the fact
patterns in order; the first that matches a clause wins.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

_FLAGS = re.IGNORECASE | re.UNICODE


@dataclass(frozen=True)
class Fact:
    """One slot a statement fills. ``multi`` attributes hold many values at once
    (pets, likes); ``negated`` facts are retracted, not asserted."""

    subject: str
    attribute: str
    value: str
    multi: bool = False
    negated: bool = False
    changed: bool = False  # the statement says the value changed ("now", "switched")


@dataclass(frozen=True)
class FactPattern:
    """``regex`` names groups ``val`` and optionally ``subj`` / ``attr``;
    ``attribute`` is used when the regex has no ``attr`` group."""

    regex: re.Pattern
    attribute: str | None = None
    multi: bool = False
    changed: bool = False
    named: bool = False  # the value must be a name, capitalised as said ("we're in Leeds now", not "in a meeting now")


@dataclass(frozen=True, eq=False)  # hashed by identity: :func:`parse` caches per language object
class SlotPatterns:
    language: str
    rewrites: tuple[tuple[re.Pattern, str], ...]  # contractions, spelling, apposition: applied first
    framing: re.Pattern  # leading wrappers removed ("btw, as of June,")
    retractions: tuple[tuple[re.Pattern, str], ...]  # retraction → the proposition it retracts
    clause_split: re.Pattern
    facts: tuple[FactPattern, ...]
    self_subjects: frozenset[str]  # words that mean the speaker
    possessive: re.Pattern  # "my sister" → group 1 = "sister"
    relations: frozenset[str]  # nouns that name a person by relation ("wife" in "my wife Sarah")
    attribute_aliases: dict[str, str] = field(default_factory=dict)
    attribute_fillers: re.Pattern = re.compile(r"(?!)")
    value_fillers: re.Pattern = re.compile(r"(?!)")
    change_markers: re.Pattern = re.compile(r"(?!)")
    # Slot-less changes (memory.reconcile.change_cues): words that report a change ("switched", "gave up"),
    # weaker hints that need the topic beside them ("standup is now", "a new therapist"), words that add
    # instead ("also": "I now also like jazz" keeps "I like rock"), "from <old> to <new>", and the new value
    # a cue leads to ("moved to <new>", "replaced my laptop with <new>"), matched right after the cue.
    change_cues: re.Pattern = re.compile(r"(?!)")
    change_hints: re.Pattern = re.compile(r"(?!)")
    additive: re.Pattern = re.compile(r"(?!)")
    change_from: re.Pattern = re.compile(r"(?!)")
    change_to: re.Pattern = re.compile(r"(?!)")
    # Cues that end the thing right beside them ("cancelled the course", "the offsite was called off"), and the
    # marks of a correction ("sorry, I meant", "turns out"), read on the text before framing strips them.
    ending_cues: re.Pattern = re.compile(r"(?!)")
    corrections: re.Pattern = re.compile(r"(?!)")
    # A change that has not happened ("thinking about switching", "if I ever quit"), one that happened long
    # before ("back in college I sold my guitar"), and one occasion of something that goes on ("the 8:15 was
    # cancelled this morning", "my phone died at lunch"): none ends a fact.
    unreal: re.Pattern = re.compile(r"(?!)")
    long_ago: re.Pattern = re.compile(r"(?!)")
    one_off: re.Pattern = re.compile(r"(?!)")
    # A time ("on May 7", "Tuesdays at 5", "10:15"): a change to one ("moved to Thursday") changes when, so it
    # ends only a fact that says when.
    when: re.Pattern = re.compile(r"(?!)")
    attribute_words: dict[str, str] = field(default_factory=dict)  # extra keyword-search words per attribute
    value_shapes: dict[str, re.Pattern] = field(default_factory=dict)  # "phone" needs digits: "my phone is a Pixel" is a device


def compile_slots(
    language: str,
    *,
    rewrites: list[tuple[str, str]],
    framing: str,
    retractions: list[tuple[str, str]],
    clause_split: str,
    facts: list[tuple],
    self_subjects: list[str],
    possessive: str,
    relations: list[str],
    attribute_aliases: dict[str, str],
    attribute_fillers: str,
    value_fillers: str,
    change_markers: str,
    change_cues: str = r"(?!)",
    change_hints: str = r"(?!)",
    additive: str = r"(?!)",
    change_from: str = r"(?!)",
    change_to: str = r"(?!)",
    ending_cues: str = r"(?!)",
    corrections: str = r"(?!)",
    unreal: str = r"(?!)",
    long_ago: str = r"(?!)",
    one_off: str = r"(?!)",
    when: str = r"(?!)",
    attribute_words: dict[str, str] | None = None,
    value_shapes: dict[str, str] | None = None,
) -> SlotPatterns:
    """Build :class:`SlotPatterns` from plain regex strings (case-insensitive).

    ``facts`` items are ``(regex, attribute_or_None, multi[, changed[, named]])``; the
    placeholder ``{S}`` in a regex is the subject group; ``change_from`` names groups
    ``old`` and optionally ``new`` (or ``old2``, or ``was`` / ``was2``: an old value the candidate must
    say whole, "used to play chess" is not "play tennis"), ``change_to`` the group ``new``.
    """
    subject = r"(?P<subj>i|we|(?:my|our|minha|meu|minhas|meus|a minha|o meu) [\w'-]+(?: [\w'-]+){0,2}?|[\w'-]+(?: [\w'-]+){0,2}?)"
    compiled = []
    for item in facts:
        regex, attribute, multi, *rest = item
        compiled.append(
            FactPattern(
                re.compile("^" + regex.replace("{S}", subject) + "$", _FLAGS), attribute, multi,
                bool(rest and rest[0]), bool(rest[1:] and rest[1]),
            )
        )
    return SlotPatterns(
        language=language,
        rewrites=tuple((re.compile(p, _FLAGS), r) for p, r in rewrites),
        framing=re.compile(framing, _FLAGS),
        retractions=tuple((re.compile(p, _FLAGS), r) for p, r in retractions),
        clause_split=re.compile(clause_split, _FLAGS),
        facts=tuple(compiled),
        self_subjects=frozenset(self_subjects),
        possessive=re.compile(possessive, _FLAGS),
        relations=frozenset(relations),
        attribute_aliases=attribute_aliases,
        attribute_fillers=re.compile(attribute_fillers, _FLAGS),
        value_fillers=re.compile(value_fillers, _FLAGS),
        change_markers=re.compile(change_markers, _FLAGS),
        change_cues=re.compile(change_cues, _FLAGS),
        change_hints=re.compile(change_hints, _FLAGS),
        additive=re.compile(additive, _FLAGS),
        change_from=re.compile(change_from, _FLAGS),
        change_to=re.compile(change_to, _FLAGS),
        ending_cues=re.compile(ending_cues, _FLAGS),
        corrections=re.compile(corrections, _FLAGS),
        unreal=re.compile(unreal, _FLAGS),
        long_ago=re.compile(long_ago, _FLAGS),
        one_off=re.compile(one_off, _FLAGS),
        when=re.compile(when, _FLAGS),
        attribute_words=dict(attribute_words or {}),
        value_shapes={k: re.compile(v, _FLAGS) for k, v in (value_shapes or {}).items()},
    )


_PUNCT = re.compile(r"[^\w@+.' -]+", re.UNICODE)


def normalise(text: str, patterns: SlotPatterns) -> str:
    """Lower-cased, contractions expanded, framing and trailing punctuation removed."""
    text = " ".join(text.replace("’", "'").replace("‘", "'").split()).lower()
    for regex, replacement in patterns.rewrites:
        text = regex.sub(replacement, text)
    previous = None
    while previous != text:
        previous, text = text, patterns.framing.sub("", text, count=1).strip()
    return text.strip(" .!?;:,")


def _clean_value(value: str, patterns: SlotPatterns) -> str:
    value = _PUNCT.sub(" ", value)
    previous = None
    while previous != value:
        previous, value = value, patterns.value_fillers.sub("", value).strip(" .,'")
    return " ".join(value.split())


def _clean_attribute(attr: str, patterns: SlotPatterns) -> str:
    attr = _clean_value(attr, patterns)  # "best friend these days" → "best friend"
    attr = " ".join(patterns.attribute_fillers.sub(" ", f" {attr} ").split())
    return patterns.attribute_aliases.get(attr, attr)


@dataclass(frozen=True)
class Subject:
    """Who or what a fact is about: the speaker, or an alias plus any apposed aliases
    ("my wife sarah" → key "wife", also "sarah")."""

    key: str
    aliases: tuple[str, ...] = ()


def subject_of(text: str | None, patterns: SlotPatterns) -> Subject:
    if not text:
        return Subject("user")
    text = " ".join(text.strip(" ,").split())
    if text in patterns.self_subjects or {text.split()[0], text.split()[-1]} & patterns.self_subjects:
        return Subject("user")  # "i started working at" parses its subject as "i started", "finally we moved" as "finally we"
    mine = patterns.possessive.fullmatch(text)
    if mine:
        words = mine.group(1).split()
        if len(words) >= 2 and words[0] in patterns.relations:
            return Subject(words[0], (" ".join(words[1:]),))  # "my wife sarah"
        return Subject(" ".join(words))
    return Subject(text)


def _capitalised(value: str, text: str) -> bool:
    """``value``'s first word is written with a capital in ``text``: a name, not "a meeting"."""
    said = re.search(r"(?<!\w)" + re.escape(value.split()[0]), text, re.IGNORECASE)
    return bool(said) and said.group(0)[:1].isupper()


def retracted(text: str, patterns: SlotPatterns) -> tuple[str, bool]:
    """The proposition a retraction retracts, and whether ``text`` was one."""
    for regex, replacement in patterns.retractions:
        rewritten, count = regex.subn(replacement, text, count=1)
        if count:
            return " ".join(rewritten.split()).strip(" ,"), True
    return text, False


def parse(text: str, patterns: SlotPatterns) -> tuple[list[tuple[Fact, Subject]], str]:
    """The facts ``text`` states (each with its parsed subject) and its normalised form."""
    found, norm = _parse(text, patterns)
    return list(found), norm


# Trigger: reconciling an import, where each line is compared with up to 2 x candidates
# stored or earlier lines. Why: each was parsed again for every line it was a candidate
# of, half of the import's reconciling (8,000 sample lines); facts and subjects are frozen.
@lru_cache(maxsize=16_384)
def _parse(text: str, patterns: SlotPatterns) -> tuple[tuple[tuple[Fact, Subject], ...], str]:
    norm = normalise(text, patterns)
    proposition, negated = retracted(norm, patterns)
    # "I now also like jazz" adds a taste: an additive word cancels the change marker.
    changed = bool(patterns.change_markers.search(norm)) and not patterns.additive.search(norm)
    found: list[tuple[Fact, Subject]] = []
    for clause in patterns.clause_split.split(proposition):
        clause = clause.strip(" ,.")
        if not clause:
            continue
        for pattern in patterns.facts:
            match = pattern.regex.match(clause)
            if not match:
                continue
            groups = match.groupdict()
            value = _clean_value(groups.get("val") or "", patterns)
            if not value or (pattern.named and not _capitalised(value, text)):
                continue
            attribute = _clean_attribute(groups.get("attr") or pattern.attribute or "", patterns)
            subject = subject_of(groups.get("subj"), patterns)
            if "'s " in attribute:  # "my sister's phone" → subject sister, attribute phone
                owner, _, attribute = attribute.partition("'s ")
                subject = Subject(owner if subject.key == "user" else f"{subject.key}'s {owner}")
                attribute = _clean_attribute(attribute, patterns)
            shape = patterns.value_shapes.get(attribute)
            if shape is not None and not shape.search(value):
                attribute = f"{attribute} (not {attribute} shaped)"
            fact = Fact(
                subject.key, attribute, value, pattern.multi, negated, changed or pattern.changed
            )
            found.append((fact, subject))
            break
    return tuple(found), norm
