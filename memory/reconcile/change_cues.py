"""Changes said in everyday words: "I switched dentists, I see Dr. Okafor now" ends "My dentist is Dr. Patel".

The slots miss most such phrasings (a change verb, not "my X is Y"), and the
heuristic then adds a second current fact beside the old one. This rule runs
only when the heuristic would add, and ends at most one candidate, when all
of these hold:

- the new text carries a change cue (the language's ``change_cues``:
  "switched", "gave up", "from now on", "used to"), an ending cue
  (``ending_cues``: "cancelled", "called off", "traded in", "sold"), a
  correction (``corrections``: "sorry, I meant", "turns out"), or a weaker
  hint (``change_hints``: "now", "new") — a hint or a correction alone never
  ends a many-valued fact ("I like pizza" is not ended by "I'm eating pizza
  now");
- it has no additive word (``additive``: "I now also like jazz" keeps
  "I like rock") and is no question; a cue is not negated or intended ("I
  won't quit", "I want to move": the language's ``change_cues`` say so);
- the candidate is short (one clause, at most ``MAX_OLD_WORDS`` content
  words), so nothing else it says is lost;
- they share a content word (or the candidate's slot topic: "address" for a
  residence, an e-mail's shape) within ``WINDOW`` words of the cue — the
  changed thing sits next to the change ("Maria left", "I gave up tennis"),
  while "I left my keys at the gym" is about keys, not the gym; the person
  the new text is about ("my manager moved", as a word or as a slot's topic)
  and an aside in parentheses are no link; a verb that moves or replaces a
  thing ("switched dentists", "moved the dentist appointment") reaches only
  that thing, which the candidate must name as its own and not to qualify
  another ("the dentist appointment" is no dentist), and one that ends what
  it names ("quit", "stopped") ends its head ("quit the school choir" ends
  no school, "the piano teacher's Saturday group" no piano), not a thing had
  for it ("gave up yoga" ends a yoga class, not "I have a yoga mat"), nor,
  said of an activity, its doer ("Maria stopped doing the ironing"); "left"
  with a place after its object puts it there ("I left the car at the
  garage" ends no car), with a thing after it gives it ("I left my manager a
  voicemail"); an ending cue links only the
  phrase beside it, said whole by the candidate ("cancelled the Spanish
  course", not "the Napa wine tour was called off" for an offsite in Napa);
  a correction reaches the whole text
  but must name the old value (", not Lyon"), share two words, or swap one;
- "used to A but now" / ", not A" name an old value the candidate says whole;
- a new time ("moved to the first Thursday") ends only a fact that says when
  (the language's ``when``), and a thing replaced with no time said ("we
  switched cleaners") no fact that says when ("The cleaner comes on
  Tuesdays"), unless the old value is named;
- "from A to B" / "instead of A" name the old value: the candidate must
  contain A; a new value named ("from A to B", "moved to B", "replaced it
  with B") must not be all the candidate says already ("moved to Acme" does
  not end "visited Acme");
- the new text is about the same subject (not "my sister's dentist", nor
  "my wife cut out coffee" for the speaker's coffee, nor "Sam quit the
  netball club" in a clause that says nothing of the speaker), the
  slots have not already told the two apart (same subject, different named
  attributes: "pottery class" is not "yoga class"), and it adds a word the
  candidate lacks (else it is a restatement, not a change); an ending ("I
  gave up yoga") is such a word, unless the candidate says one too.

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
    ending = list(patterns.ending_cues.finditer(norm))
    correction = bool(patterns.corrections.search(" ".join(text.lower().split())))
    if not (cues or ending or correction) or patterns.additive.search(norm) or "?" in text:  # "did you switch jobs?"
        return None
    if not_now(norm, patterns):
        return None
    cue_words = {stem(w) for m in [*(m for m, _ in cues), *ending] for w in m.group(0).split()}
    new_words = content_words(norm) - cue_words
    if len(new_words) > MAX_NEW_WORDS:
        return None
    ends = _endings(norm, patterns)
    strong = any(is_cue for _, is_cue in cues) or bool(ending)  # a correction alone never ends one of many tastes
    (ranges, things, qualifiers, ended), phrases = _ranges(norm, cues, correction, patterns.when), _phrases(norm, ending)
    old_named, new_value, named_at, whole = _named_values(norm, patterns, [m for m, is_cue in cues if is_cue] + ending)
    new_named, rescheduled = content_words(new_value), _when(new_value, patterns)
    replaced = bool(things) and not patterns.when.search(norm)  # a thing replaced, with no time said
    # "from A" beside the cue, or right after the thing it moves ("moved my accounts from HSBC to Monzo").
    named_near = named_at is not None and any(lo <= named_at <= hi for lo, hi in [*ranges, *((h, h + 1) for h in things)])
    lead = _lead_person(norm, patterns)
    people = {w for s in subjects if _head(s.key) in patterns.relations for w in content_words(" ".join([s.key, *s.aliases]))}
    people |= {lead} - {None}
    # A weak hint said with someone else in it is theirs: "got my dad a new phone" is no new phone of mine.
    others = {stem(w) for w in norm.split() if w in patterns.relations}
    actors = _actors(text, norm, [m for m, is_cue in cues if is_cue] + ending, patterns)
    best: tuple[tuple, Candidate, str] | None = None
    for candidate in candidates:
        old_words = content_words(candidate.norm)
        if not old_words or len(old_words) > MAX_OLD_WORDS or _CLAUSES.search(candidate.norm):
            continue
        if actors and not actors & old_words:
            continue  # "Tom quit the running club": Tom's change, unless the candidate is about Tom
        # The ending is news in itself ("I gave up yoga" after "I take a yoga class"), unless the candidate
        # says an ending too ("I quit smoking" after "I quit smoking in May": a restatement).
        news = new_words | (ends if not _endings(candidate.norm, patterns) else set())
        if not news - old_words or _told_apart(new_facts, candidate.facts):
            continue  # a restatement, or the slots already tell them apart
        if not strong and (any(f.multi for f in candidate.facts) or others - {stem(w) for w in old_words}):
            continue
        if (old_named and not old_named & old_words) or (new_named - old_named and new_named - old_named <= old_words):
            continue  # "from tea to coffee" ends the tea, never the coffee; "moved to Acme" not "visited Acme"
        if whole and not whole <= old_words:
            continue  # "I used to play chess but now ..." is not about "I play tennis"
        if rescheduled and not patterns.when.search(candidate.norm):
            continue  # "book club moved to Thursdays" changes when it meets, not what it reads
        if replaced and patterns.when.search(candidate.norm) and not old_named & old_words:
            continue  # "we switched cleaners" changes who comes, not "The cleaner comes on Tuesdays"
        # Linked by what the candidate says, not by whom: "Lena moved" does not end "my friend Lena likes sushi".
        # Nor by the person the new text is about: "my manager moved to Oslo" does not end "my manager visited Kyoto".
        said = {w for f in candidate.facts for w in content_words(f"{f.attribute} {f.value}")} if candidate.facts else old_words
        links = _links(norm, candidate, patterns, said - cue_words - people, cue_words | people)
        near = {
            word for word, at in links if any(lo <= at <= hi for lo, hi in ranges) and at not in qualifiers
            and not (at in things and _qualifies(candidate.entry.content, word, things[at]))
            and not (at in ended and _for_it(candidate.facts, word))
        }
        linked = dict((at, word) for word, at in links)
        # An ending cue ends a phrase the candidate says whole: "dropped spin class", not "dropped the yoga class".
        near |= {linked[at] for phrase in phrases if all(at in linked for at in phrase) for at in phrase}
        if named_near:  # "I ported my number from Vodafone": the old value named beside the cue is the link
            near |= old_named & old_words
        if not (cues or ending) and not _corrects(near, old_named & old_words, new_words, old_words):
            continue
        if not near or not _same_subject(new_facts, subjects, norm, candidate, patterns, lead):
            continue
        score = (len(near), len(old_words & content_words(norm)) / len(old_words), candidate.similarity or 0.0)
        if best is None or score > best[0]:
            best = (score, candidate, sorted(near)[0])
    if best is None:
        return None
    cue = next((m.group(0) for m in [*(m for m, _ in cues), *ending]), "a correction")
    return Decision(DecisionKind.UPDATE, [best[1].entry.id], f"a change cue ('{cue}') about '{best[2]}'")


def _endings(norm: str, patterns: SlotPatterns) -> set[str]:
    """The words of the cues in ``norm`` that end what they name ("gave up", "quit", "cancelled")."""
    found = [m for m in patterns.change_cues.finditer(norm) if m.group(0) in _ENDERS] + list(patterns.ending_cues.finditer(norm))
    return {stem(w) for m in found for w in m.group(0).split()}


def not_now(norm: str, patterns: SlotPatterns) -> bool:
    """``norm`` changes nothing that holds now, whatever its words: a plan or a hypothetical ("if I ever
    quit"), a change long before ("back in college I sold my guitar"), one occasion of something that goes
    on ("five-a-side got cancelled this week", "my phone died at lunch")."""
    return any(p.search(norm) for p in (patterns.unreal, patterns.long_ago, patterns.one_off))


def _tokens(norm: str) -> list[tuple[int, str]]:
    """Each word of ``norm`` with its start offset (punctuation off the ends)."""
    return [(m.start(), m.group(0).strip(".,;:!?\"'()")) for m in re.finditer(r"\S+", norm)]


_AUXILIARY = frozenset("was were is are got get gets been be has have had just".split())
_DETERMINER = frozenset("the a an my our his her their its your this that".split())
# Verbs whose object is the thing that changes ("moved the meeting to 3pm"), unlike "left" or "quit",
# whose subject does ("Claire left the company").
_MOVERS = frozenset("moved moving changed changing switched switching replaced replacing renamed renaming upgraded".split())
# Verbs that may end the thing said right after them: "quit the school choir" ends a choir, not a school.
_ENDERS = frozenset("quit quitting left leaving stopped stopping".split()) | {"gave up", "given up", "giving up"}
_LEAVERS = frozenset("left leaving".split())
# Between a gerund and its object: "stopped paying for phone insurance", "gave up going to the gym"; not a
# place or a time ("stopped smoking in March": smoking).
_GERUND_LINKS = frozenset("for to".split())
# After "left someone a ...", a time ("left the band a year ago", "some time ago") rather than a thing given.
_DURATIONS = frozenset(
    "few couple while time hour hours day days week weeks month months year years fortnight decade ago later".split()
)
# What an activity is done in: giving up yoga ends the yoga class, not the yoga mat.
_OCCASIONS = frozenset(
    "class classes lesson lessons course courses practice session sessions team club group league training membership".split()
)
# After a thing left, a place or a person it is left with ("at the garage", "with my sister"); not "for"
# or "to" ("left Google for Amazon" is a leaving).
_PLACES = frozenset("at in on with behind outside inside near under by".split())
_TIMES = frozenset("end start beginning middle spring summer autumn fall winter".split())  # "at the end of"
_QUANTIFIERS = frozenset("all both every some".split())
_NUMBERS = frozenset("one two three four five six seven eight nine ten eleven twelve few several".split())
_PARTICLES = frozenset("back over out up down away around off again".split())  # "moved back to Leeds"
_PRONOUNS = frozenset("it them him her me us everything something".split())  # "moved him to St. Anne's"
_INDEFINITE = frozenset("a an one another other some any each every".split())
_PHRASE_END = frozenset(
    "for with and to so but in on at because since after then by from"
    " last this next yesterday today tonight tomorrow ago earlier"  # "sold the Civic last weekend": the Civic
    .split()
)
_NOT_A_THING = _PHRASE_END | _PARTICLES | _PRONOUNS | _NUMBERS  # words that end a thing said after a verb


def _ranges(
    norm: str, cues: list, correction: bool, when: re.Pattern
) -> tuple[list[tuple[int, int]], dict[int, set[str]], set[int], set[int]]:
    """The word indexes each cue reaches: ``WINDOW`` words about a change cue, the whole text for a
    correction ("sorry, I meant ..."); by the index of its head, the words of each thing a cue moves
    or replaces, which it alone reaches ("Tom moved the sofa": the sofa, not Tom; "switched dentists": the
    dentist, not the dentist appointment); and the indexes of the words that only qualify a thing a cue
    ends, which are no link ("quit the school choir" ends a choir, not a school), and of the heads of the
    things a cue ends ("gave up yoga": yoga). A thing left somewhere ("left the car at the garage") is
    reached by no cue."""
    tokens = _tokens(norm)
    ranges, things, qualifiers, ended = [], {}, set(), set()
    for match, is_cue in cues:
        span = _span(tokens, match)
        if not span or _said_of_another(norm, tokens, span[0]):
            continue
        if match.group(0) == "new":  # "new running shoes": the shoes are new, not the running
            head = _head_after(norm, tokens, span[1])
            ranges += [(head, head)] if head is not None else []
            continue
        cue = match.group(0)
        # "Maria left, our new nanny ...": what follows a cue's comma is not its object.
        acts = is_cue and cue in _MOVERS | _ENDERS and not _ends_phrase(norm, tokens, span[1])
        thing = _object(norm, tokens, span[1]) if acts else []
        if thing and cue in _LEAVERS and _placed(norm, tokens, thing[-1], when):
            continue  # the car is put at the garage, not given up
        if thing and cue in _MOVERS:
            ranges.append((thing[-1], thing[-1]))
            things[thing[-1]] = {stem(tokens[at][1]) for at in thing}
            continue
        # All before the head only qualifies it: "quit the piano teacher's Saturday group" ends no piano.
        qualifiers.update(range(span[1] + 1, thing[-1]) if thing else ())
        ended.update(thing[-1:])
        if thing and tokens[span[1] + 1][1].endswith("ing") and span[1] + 1 < thing[0]:
            # "Maria stopped doing the ironing": an activity stops, not its doer.
            ranges.append((span[1] + 1, thing[-1]))
            continue
        ranges.append((span[0] - WINDOW, span[1] + WINDOW))
    return ranges + ([(0, len(tokens))] if correction else []), things, qualifiers, ended


def _placed(norm: str, tokens: list[tuple[int, str]], last: int, when: re.Pattern) -> bool:
    """The thing ending at ``last``, said after "left", is put somewhere or with someone ("left the car at
    the garage", "leaving my car with my sister"), or is someone given something ("left my manager a
    voicemail"), not left for good: a time after it ("left the choir in
    March", "at Christmas", "at the end of the season") or nothing is a leaving; a time that only
    qualifies a place ("at the Christmas market") is a place."""
    if _ends_phrase(norm, tokens, last) or last + 1 >= len(tokens):
        return False
    if tokens[last + 1][1] in {"a", "an", "some"}:  # "left my manager a voicemail": something given them
        return not {word for _, word in tokens[last + 2:last + 5]} & _DURATIONS
    if tokens[last + 1][1] not in _PLACES:
        return False
    at = last + 2
    while at < len(tokens) and tokens[at][1] in _DETERMINER:
        at += 1
    if at >= len(tokens):
        return False
    time = when.match(norm, tokens[at][0])
    after = norm[time.end():].split(maxsplit=1) if time else []
    said_whole = time is not None and (not after or norm[time.end():][:1] in ",;.!?" or after[0] in _PHRASE_END)
    return not (tokens[at][1][:1].isdigit() or tokens[at][1] in _TIMES or said_whole)


def _for_it(facts: list[Fact], word: str) -> bool:
    """The candidate's slots say ``word`` only as what a thing it has or describes is for ("I have a
    purple yoga mat", "my yoga mat is purple"): giving up yoga leaves the mat, though it ends a yoga class."""
    named = []
    for fact in facts:
        thing = (fact.value if fact.attribute == "has" else fact.attribute).split()
        if word in map(stem, thing):
            phrase = thing[:next((i for i, w in enumerate(thing) if i and w in _PHRASE_END), len(thing))]
            named.append(phrase[-1])
    return bool(named) and all(stem(head) != word and head not in _OCCASIONS for head in named)


def _ends_phrase(norm: str, tokens: list[tuple[int, str]], at: int) -> bool:
    """The word at ``at`` is said with a punctuation mark after it."""
    return norm[tokens[at][0]:].split(" ", 1)[0][-1:] in {",", ";", ".", "!", "?"}


# Words that open a sentence with a capital and are no one: "Then switched to decaf", "Honestly ...".
_OPENERS = frozenset(
    "then so and but also just now today yesterday tonight recently finally eventually anyway well ok okay oh yeah"
    " yes no sadly luckily honestly actually basically apparently officially".split()
)
_FIRST_PERSON = re.compile(r"\b(?:i|me|my|mine|myself|we|us|our|ours|ourselves)\b")


_CLAUSE_END = re.compile(r"[,;.!?]|\b(?:so|and|but|because|then)\b")


def _clause(norm: str, match: re.Match) -> str:
    """The clause a cue is in: from the boundary before it to the one after it."""
    before = [m.end() for m in _CLAUSE_END.finditer(norm, 0, match.start())]
    after = _CLAUSE_END.search(norm, match.end())
    return norm[before[-1] if before else 0:after.start() if after else len(norm)]


def _actors(text: str, norm: str, cues: list[re.Match], patterns: SlotPatterns) -> set[str]:
    """The people named as making every cue's change in a clause that says nothing of the speaker
    ("Tom quit the running club", "Sam quit the netball club, so I need a new partner"); empty
    when a cue's clause has a first person in it, or a cue's maker is not named with a capital."""
    if not cues or any(_FIRST_PERSON.search(_clause(norm, m)) for m in cues):
        return set()
    tokens, actors = _tokens(norm), set()
    for match in cues:
        span = _span(tokens, match)
        at = span[0] - 1 if span else -1
        while at >= 0 and (tokens[at][1] in _AUXILIARY or tokens[at][1] in _OPENERS or tokens[at][1].endswith("ly")):
            at -= 1
        word = tokens[at][1] if at >= 0 else ""
        named = word.isalpha() and re.search(rf"\b{word.capitalize()}\b", text) is not None
        if not named or word in _OPENERS or word in patterns.relations:
            return set()
        actors.add(stem(word))
    return actors


def _said_of_another(norm: str, tokens: list[tuple[int, str]], first: int) -> bool:
    """The cue's clause opens with someone or something indefinite: "a guy on my team left Dell",
    "one of the English teachers left" change nothing of the speaker's."""
    opening = first
    while opening > 0 and norm[tokens[opening - 1][0]:].split(" ", 1)[0][-1:] not in {",", ";", "."}:
        opening -= 1
    return opening < first and tokens[opening][1] in _INDEFINITE


def _head_after(norm: str, tokens: list[tuple[int, str]], last: int) -> int | None:
    """The index of the noun a modifier ending at ``last`` qualifies: the last of the (at most two) words
    after it, before a phrase ends ("a new hairdresser, Alex": hairdresser)."""
    head = None
    for at in range(last + 1, min(last + 3, len(tokens))):
        if tokens[at][1] in _PHRASE_END:
            break
        head = at
        if norm[tokens[at][0]:].split(" ", 1)[0][-1:] in {",", ";", "."}:
            break
    return head


def _object(norm: str, tokens: list[tuple[int, str]], last: int) -> list[int]:
    """The indexes of the thing a verb ending at ``last`` moves or replaces, said right after it
    ("switched dentists", "moved the guinea pigs' hutch into the shed": the hutch, a possessor is not the
    thing); none when it goes somewhere or is someone ("moved to Leeds", "moved back", "moved him")."""
    at = last + 1
    if at + 1 < len(tokens) and tokens[at][1].endswith("ing") and tokens[at + 1][1] in _DETERMINER | _GERUND_LINKS:
        at += 1  # "stopped using my Barclays card": the card
        at += tokens[at][1] in _GERUND_LINKS  # "stopped paying for phone insurance": the insurance
    while at < len(tokens) and tokens[at][1] in _DETERMINER | _QUANTIFIERS:
        at += 1
    words: list[int] = []
    said_words = 0
    while at < len(tokens) and said_words < WINDOW:
        start, word = tokens[at]
        if word in _NOT_A_THING or word[:1].isdigit() or word.endswith("ly") or not content_words(word):
            break  # "moved back to Leeds", "quit smoking three weeks ago": smoking
        said = norm[start:].split(" ", 1)[0]
        possessor = said.rstrip(",.;:!?").endswith(("'", "'s"))
        words, said_words = ([], 0) if possessor else ([*words, at], said_words + 1)  # "pigs' hutch": the hutch
        if _ends_phrase(norm, tokens, at):
            break
        at += 1
    return words


def _qualifies(text: str, word: str, thing: set[str]) -> bool:
    """``text`` says ``word`` only to qualify another thing than ``thing``: "the dentist appointment", "my
    phone contract", "the car's MOT" say no dentist, phone or car. A name ("Kindle Paperwhite", "iPhone
    12") or a verb ("my shift starts", "the gym closes") after it is no other thing."""
    said = re.findall(r"[\w'-]+|[^\w\s]", text.replace("’", "'"))
    found = [i for i, token in enumerate(said) if _loose(token.lower().removesuffix("'s")) == _loose(word)]
    if not found:
        return False  # a slot's topic, not a word of the text

    def qualifier(i: int) -> bool:
        if said[i].lower().endswith("'s"):
            return True
        after = said[i + 1] if i + 1 < len(said) else ""
        lower = after.lower()
        return (after.isalpha() and after[0].islower() and bool(content_words(lower)) and lower not in _PHRASE_END
                and not lower.endswith(("s", "ed")) and stem(lower) not in thing)

    return all(qualifier(i) for i in found)


def _phrases(norm: str, ending: list[re.Match]) -> list[list[int]]:
    """The word indexes of the noun phrase beside each ending cue ("the Napa offsite was called off" ends
    the Napa offsite, "the Napa wine tour was called off" no offsite)."""
    tokens = _tokens(norm)
    spans = [span for span in (_span(tokens, m) for m in ending) if span]
    return [phrase for phrase in (_phrase_beside(norm, tokens, *span) for span in spans) if phrase]


def _corrects(near: set[str], named: set[str], new_words: set[str], old_words: set[str]) -> bool:
    """A correction reaches the whole sentence, so it ends a candidate only when it names the old value
    (", not Lyon"), shares two words, or swaps one word ("I meant the meeting is at 4pm", after 3pm)."""
    return bool(named) or len(near) >= 2 or (bool(near) and len(old_words - new_words) <= 1 and len(new_words - old_words) <= 1)


def _span(tokens: list[tuple[int, str]], match: re.Match) -> tuple[int, int] | None:
    """The index of a cue's first and last word."""
    inside = [i for i, (start, _) in enumerate(tokens) if match.start() <= start < match.end()]
    return (inside[0], inside[-1]) if inside else None


def _phrase_beside(norm: str, tokens: list[tuple[int, str]], first: int, last: int) -> list[int]:
    """The content words of what an ending cue ends: the phrase before it when passive ("the offsite
    was called off"), else the phrase after it ("cancelled the Spanish course"), adverbs aside."""
    before = first - 1
    if before >= 0 and tokens[before][1] in _AUXILIARY:
        while before >= 0 and tokens[before][1] in _AUXILIARY:
            before -= 1
        words = []
        while before >= 0 and len(words) < 3 and tokens[before][1] not in _DETERMINER | _PHRASE_END:
            words.insert(0, before)
            before -= 1
        return words
    words = []
    for at in range(last + 1, min(last + 5, len(tokens))):
        word = tokens[at][1]
        if word in _PHRASE_END:
            break
        if word not in _DETERMINER and not word.endswith("ly") and content_words(word):
            words.append(at)
        if norm[tokens[at][0] + len(word):][:1] in {",", ";", "."}:
            break  # "Priya cancelled Saturday, so ..."
    return words


def _head(phrase: str) -> str:
    """A compound's head word: "office manager" is a manager, not an office."""
    return phrase.split()[-1] if phrase.split() else phrase


def _lead_person(norm: str, patterns: SlotPatterns) -> str | None:
    """The person a text opens with ("my wife cut out coffee", "my brother's car"), when the slots could
    not read it: a change of theirs is no change of the speaker's."""
    mine = patterns.possessive.match(norm)
    first = mine.group(1).split()[0] if mine and mine.group(1).split() else ""
    owner = first[:-2] if first.endswith("'s") else first
    return stem(owner) if owner in patterns.relations or first.endswith("'s") else None


def _loose(word: str) -> str:
    """A word's root for linking only: "smoking" and "smoke", "running" and "run" are one thing."""
    word = stem(word)
    if len(word) > 5 and word.endswith("ing"):
        word = word[:-3]
        if len(word) > 2 and word[-1] == word[-2] and word[-1] not in "aeiouls":
            word = word[:-1]  # "running" → "run"
    return word[:-1] if len(word) > 3 and word.endswith("e") else word


def _links(norm: str, candidate: Candidate, patterns: SlotPatterns, old_words: set[str], unlinked: set[str]) -> list[tuple[str, int]]:
    """Where in ``norm`` the candidate is named: its content words, its slot topics' words (none of ``unlinked``:
    the cue's own, the person the text is about: "my manager moved" names no manager fact), its values' shapes."""
    topics = {stem(w) for f in candidate.facts for w in patterns.attribute_words.get(f.attribute, "").split()} - unlinked
    shapes = [patterns.value_shapes[f.attribute] for f in candidate.facts if f.attribute in patterns.value_shapes]
    asides = [(m.start(), m.end()) for m in re.finditer(r"\([^)]*\)?", norm)]  # "(note 12)" changes nothing
    loose = {_loose(w): w for w in old_words | topics if not re.search(r"[/:#\d]", w)}
    links = []
    for at, (start, word) in enumerate(_tokens(norm)):
        if any(a <= start < b for a, b in asides):
            continue
        hit = {stem(word), *map(stem, re.split(r"[/:#-]", word))} & (old_words | topics)
        hit = hit or ({loose[_loose(word)]} if _loose(word) in loose and _loose(word) not in unlinked else set())
        if hit:
            links.append((sorted(hit)[0], at))
        elif any(shape.search(word) for shape in shapes):
            links.append((word, at))
    return links


def _named_values(norm: str, patterns: SlotPatterns, cues: list[re.Match]) -> tuple[set[str], str, int | None, set[str]]:
    """The old value the text names ("from A to B", "instead of A"), as content words, the new one ("to B",
    "<cue> ... to B") as said, the index of the word where "from A" / "instead of A" starts, and an old
    value the candidate must say whole ("used to A but now", ", not A")."""
    match = patterns.change_from.search(norm)
    groups = match.groupdict() if match else {}
    whole = content_words(groups.get("was") or groups.get("was2") or "")
    old = groups.get("old") or groups.get("old2") or ""
    new = groups.get("new") or next((m.group("new") for m in (patterns.change_to.match(norm, c.end()) for c in cues) if m), "")
    at = sum(start < match.start() for start, _ in _tokens(norm)) if match else None
    return content_words(old) | whole, new, at, whole


_ORDINALS = frozenset("first second third fourth last".split())


def _when(value: str, patterns: SlotPatterns) -> bool:
    """The named new value is a time ("to the first Thursday of the month", "to May 9", "to 10:15")."""
    words = value.split()
    while words and words[0] in _DETERMINER | _PHRASE_END | _ORDINALS | _QUANTIFIERS:
        words = words[1:]
    return bool(words) and patterns.when.match(" ".join(words)) is not None


def _told_apart(new_facts: list[Fact], old_facts: list[Fact]) -> bool:
    """The slots already say these are different things: the same subject, different named attributes."""
    named = [(n, o) for n in new_facts for o in old_facts if n.subject == o.subject]
    return bool(named) and all(
        n.attribute != o.attribute and n.attribute not in _GENERIC and o.attribute not in _GENERIC for n, o in named
    )


def _same_subject(
    new_facts: list[Fact], subjects: list[Subject], norm: str, candidate: Candidate, patterns: SlotPatterns, lead: str | None
) -> bool:
    """The new text is about the candidate's subject: each it names (besides the speaker) is the
    candidate's, a speaker's change ("I switched barbers") never ends someone else's fact, and a
    change the text opens with someone else making ("my wife cut out coffee") never ends the speaker's."""
    attributes = {w for f in candidate.facts for w in content_words(f.attribute)}
    if lead is not None and not new_facts and lead not in content_words(candidate.norm):
        return False
    for fact, subject in zip(new_facts, subjects):
        if fact.subject == SPEAKER:
            continue
        names = content_words(" ".join([_head(subject.key), *subject.aliases]))
        if candidate.facts:  # the same entity, or what it names is the candidate's attribute ("the office" moved)
            if not (any(f.subject == fact.subject for f in candidate.facts) or names & attributes):
                return False
        elif not names & content_words(candidate.norm):
            return False
    speaker = any(f.subject == SPEAKER for f in new_facts) or norm.split(" ", 1)[0] in patterns.self_subjects
    if speaker and not candidate.facts and _lead_person(candidate.norm, patterns):
        return False  # "I stopped jogging" is not "my neighbour stopped jogging"
    return not (speaker and candidate.facts and all(f.subject != SPEAKER for f in candidate.facts))
