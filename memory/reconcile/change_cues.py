"""Changes said in everyday words: "I switched dentists, I see Dr. Okafor now" ends "My dentist is Dr. Patel".

The slots miss most such phrasings (a change verb, not "my X is Y"), and the
heuristic then adds a second current fact beside the old one. This rule runs
only when the heuristic would add, and ends at most one candidate, when all
of these hold:

- the new text carries a change cue (the language's ``change_cues``:
  "switched", "gave up", "from now on"), or a weaker hint (``change_hints``:
  "now", "new") — a hint never ends a many-valued fact ("I like pizza" is
  not ended by "I'm eating pizza now");
- it has no additive word (``additive``: "I now also like jazz" keeps
  "I like rock") and is no question; a cue is not negated or intended ("I
  won't quit", "I want to move": the language's ``change_cues`` say so);
- the candidate is short (one clause, at most ``MAX_OLD_WORDS`` content
  words), so nothing else it says is lost;
- they share a content word (or the candidate's slot topic: "address" for a
  residence, an e-mail's shape) within ``WINDOW`` words of the cue — the
  changed thing sits next to the change ("Maria left", "I gave up tennis"),
  while "I left my keys at the gym" is about keys, not the gym; the person
  the new text is about ("my manager moved") and an aside in parentheses
  are no link;
- "from A to B" / "instead of A" name the old value: the candidate must
  contain A; a new value named ("from A to B", "moved to B", "replaced it
  with B") must not be all the candidate says already ("moved to Acme" does
  not end "visited Acme");
- the new text is about the same subject (not "my sister's dentist"), the
  slots have not already told the two apart (same subject, different named
  attributes: "pottery class" is not "yoga class"), and it adds a word the
  candidate lacks (else it is a restatement, not a change).

Among several, the one with most words linked to a cue, then the one the
new text covers most, then the nearest vector, is ended.
"""

from __future__ import annotations

import re

from memory.federation.decisions import Decision, DecisionKind
from memory.reconcile.entities import SPEAKER
from memory.reconcile.heuristic import Candidate, content_words, stem
from memory.reconcile.slots import Fact, SlotPatterns, Subject

WINDOW = 3  # words between the cue and the thing it changes
MAX_OLD_WORDS = 6  # content words of a candidate this rule may end: one short fact
MAX_NEW_WORDS = 16  # a long turn that mentions a change is a story, not a correction
# Slot attributes too generic to tell two facts apart ("has", "likes": anything can be had or liked).
_GENERIC = frozenset({"has", "is a", "use", "likes", "dislikes"})
_CLAUSES = re.compile(r"[.;!?]\s+\S")


def cued_update(
    text: str, new_facts: list[Fact], subjects: list[Subject], norm: str, candidates: list[Candidate], patterns: SlotPatterns
) -> Decision | None:
    """The update a change cue in ``text`` (normalised: ``norm``) makes, or None (the write stays an add).

    ``new_facts`` have their subjects resolved to entity keys, as the candidates' facts do;
    ``subjects`` are the same facts' subjects as said ("my friend lena")."""
    cues = [(m, True) for m in patterns.change_cues.finditer(norm)] + [(m, False) for m in patterns.change_hints.finditer(norm)]
    if not cues or patterns.additive.search(norm) or "?" in text:  # "did you switch jobs?" states nothing
        return None
    cue_words = {stem(w) for m, _ in cues for w in m.group(0).split()}
    new_words = content_words(norm) - cue_words
    if len(new_words) > MAX_NEW_WORDS:
        return None
    strong = any(is_cue for _, is_cue in cues)
    spans = _spans(norm, cues)
    old_named, new_named, named_at = _named_values(norm, patterns, [m for m, is_cue in cues if is_cue])
    named_near = named_at is not None and any(first - WINDOW <= named_at <= last + WINDOW for first, last in spans)
    people = {w for s in subjects if s.key in patterns.relations for w in content_words(" ".join([s.key, *s.aliases]))}
    best: tuple[tuple, Candidate, str] | None = None
    for candidate in candidates:
        old_words = content_words(candidate.norm)
        if not old_words or len(old_words) > MAX_OLD_WORDS or _CLAUSES.search(candidate.norm):
            continue
        if not new_words - old_words or _told_apart(new_facts, candidate.facts):
            continue  # a restatement, or the slots already tell them apart
        if not strong and any(f.multi for f in candidate.facts):
            continue
        if (old_named and not old_named & old_words) or (new_named - old_named and new_named - old_named <= old_words):
            continue  # "from tea to coffee" ends the tea, never the coffee; "moved to Acme" not "visited Acme"
        # Linked by what the candidate says, not by whom: "Lena moved" does not end "my friend Lena likes sushi".
        # Nor by the person the new text is about: "my manager moved to Oslo" does not end "my manager visited Kyoto".
        said = {w for f in candidate.facts for w in content_words(f"{f.attribute} {f.value}")} if candidate.facts else old_words
        links = _links(norm, candidate, patterns, said - cue_words - people, cue_words)
        near = {word for word, at in links if any(first - WINDOW <= at <= last + WINDOW for first, last in spans)}
        if named_near:  # "I ported my number from Vodafone": the old value named beside the cue is the link
            near |= old_named & old_words
        if not near or not _same_subject(new_facts, subjects, norm, candidate, patterns):
            continue
        score = (len(near), len(old_words & content_words(norm)) / len(old_words), candidate.similarity or 0.0)
        if best is None or score > best[0]:
            best = (score, candidate, sorted(near)[0])
    if best is None:
        return None
    cue = next(m.group(0) for m, _ in cues)
    return Decision(DecisionKind.UPDATE, [best[1].entry.id], f"a change cue ('{cue}') about '{best[2]}'")


def _tokens(norm: str) -> list[tuple[int, str]]:
    """Each word of ``norm`` with its start offset (punctuation off the ends)."""
    return [(m.start(), m.group(0).strip(".,;:!?\"'()")) for m in re.finditer(r"\S+", norm)]


def _spans(norm: str, cues: list) -> list[tuple[int, int]]:
    """The index of each cue's first and last word."""
    starts = [start for start, _ in _tokens(norm)]
    out = []
    for match, _ in cues:
        inside = [i for i, start in enumerate(starts) if match.start() <= start < match.end()]
        if inside:
            out.append((inside[0], inside[-1]))
    return out


def _links(norm: str, candidate: Candidate, patterns: SlotPatterns, old_words: set[str], cue_words: set[str]) -> list[tuple[str, int]]:
    """Where in ``norm`` the candidate is named: its content words, its slot topics' words, its values' shapes."""
    topics = {stem(w) for f in candidate.facts for w in patterns.attribute_words.get(f.attribute, "").split()} - cue_words
    shapes = [patterns.value_shapes[f.attribute] for f in candidate.facts if f.attribute in patterns.value_shapes]
    asides = [(m.start(), m.end()) for m in re.finditer(r"\([^)]*\)?", norm)]  # "(note 12)" changes nothing
    links = []
    for at, (start, word) in enumerate(_tokens(norm)):
        if any(a <= start < b for a, b in asides):
            continue
        hit = {stem(word), *map(stem, re.split(r"[/:#-]", word))} & (old_words | topics)
        if hit:
            links.append((sorted(hit)[0], at))
        elif any(shape.search(word) for shape in shapes):
            links.append((word, at))
    return links


def _named_values(norm: str, patterns: SlotPatterns, cues: list[re.Match]) -> tuple[set[str], set[str], int | None]:
    """The old and new values the text names ("from A to B", "instead of A", "<cue> ... to B"), as content
    words, and the index of the word where "from A" / "instead of A" starts."""
    match = patterns.change_from.search(norm)
    groups = match.groupdict() if match else {}
    old = groups.get("old") or groups.get("old2") or ""
    new = groups.get("new") or next((m.group("new") for m in (patterns.change_to.match(norm, c.end()) for c in cues) if m), "")
    at = sum(start < match.start() for start, _ in _tokens(norm)) if match else None
    return content_words(old), content_words(new), at


def _told_apart(new_facts: list[Fact], old_facts: list[Fact]) -> bool:
    """The slots already say these are different things: the same subject, different named attributes."""
    named = [(n, o) for n in new_facts for o in old_facts if n.subject == o.subject]
    return bool(named) and all(
        n.attribute != o.attribute and n.attribute not in _GENERIC and o.attribute not in _GENERIC for n, o in named
    )


def _same_subject(new_facts: list[Fact], subjects: list[Subject], norm: str, candidate: Candidate, patterns: SlotPatterns) -> bool:
    """The new text is about the candidate's subject: each it names (besides the speaker) is the
    candidate's, and a speaker's change ("I switched barbers") never ends someone else's fact."""
    attributes = {w for f in candidate.facts for w in content_words(f.attribute)}
    for fact, subject in zip(new_facts, subjects):
        if fact.subject == SPEAKER:
            continue
        names = content_words(" ".join([subject.key, *subject.aliases]))
        if candidate.facts:  # the same entity, or what it names is the candidate's attribute ("the office" moved)
            if not (any(f.subject == fact.subject for f in candidate.facts) or names & attributes):
                return False
        elif not names & content_words(candidate.norm):
            return False
    speaker = any(f.subject == SPEAKER for f in new_facts) or norm.split(" ", 1)[0] in patterns.self_subjects
    return not (speaker and candidate.facts and all(f.subject != SPEAKER for f in candidate.facts))
