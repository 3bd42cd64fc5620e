"""The words of a memory that can carry a fact: what consolidation merges and digests by, and what
prune reads to tell a fact from small talk ("haha, yes!" carries nothing).

Here, in the engine layer, because both engines' prune order needs it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from memory.query_terms import STOPWORDS
from memory.ranking.speakers import speaker_of

# A number is one word with its inner separators ("$5,000", "3.11", "9:45", "2023-05-08"): in
# pieces, "$5" was carried by "$5,000" (its "5"), and "version 3" by "version 3.11".
_WORD = re.compile(r"\d+(?:[.,:/-]\d+)*[^\W_]*|[^\W_]+", re.UNICODE)
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


def fact_word(word: str) -> str | None:
    """``word`` as a content word (lower-cased, a plural's "s" dropped), or None when it carries no fact.

    A word with a digit is a fact whatever its length and kept as written: "room 4" is not "room 5",
    nor "the 1990s" "1990", so a number never lets two different facts pass as restatements."""
    lowered = word.lower()
    if any(c.isdigit() for c in lowered):
        return lowered
    if lowered in STOPWORDS or lowered in SMALL_TALK or len(lowered) < 2:
        return None
    return lowered[:-1] if len(lowered) > 3 and lowered.endswith("s") else lowered


def spelled_words(text: str) -> list[tuple[str, str | None]]:
    """Each word of ``text`` after its speaker prefix, as written, with its :func:`fact_word`."""
    return [(word, fact_word(word)) for word in _WORD.findall(speaker_of(text)[1])]


def content_words(text: str) -> frozenset[str]:
    """The words of ``text`` that can carry a fact (lower-cased, a plural's "s" dropped)."""
    return frozenset(key for _, key in spelled_words(text) if key is not None)


# Stop words that turn a statement around: "I don't like tea" is not "I like tea", nor "price went
# up 5%" "down 5%". The stop list drops them from content words, so a restatement test keeps them.
# "t" is what is left of an "n't", "n" of a French "n'"; "without" turns "with" around.
NEGATIONS = frozenset(
    """
    not no nor never t cannot neither none nothing nobody nowhere without
    não nunca nem jamais sem ninguém nada nenhum nenhuma
    ni jamás tampoco sin nadie ninguno ninguna
    ne n pas aucun aucune personne rien sans
    nicht kein keine keinen keinem keiner keines nie niemals ohne nichts niemand
    non mai senza nessuno niente
    niet geen nooit zonder
    """.split()
)
DIRECTIONS = frozenset(
    "to from into up down before after above below over under on off in out more most against through".split()
)
# Stop words that put a statement in another time or mood: "Tom was my manager" is not "Tom is my
# manager", nor "I will move to Berlin" "I moved to Berlin". A contraction's stem ("wasn", "won") counts.
MOODS = {
    **dict.fromkeys("was were had did been wasn weren hadn didn".split(), "past"),
    **dict.fromkeys("will shall ll wo".split(), "future"),
    **dict.fromkeys("would could might should wouldn couldn shouldn".split(), "conditional"),
}
_SAYS_NOTHING = STOPWORDS | SMALL_TALK


@dataclass(frozen=True)
class Claim:
    """What a memory asserts, as far as a restatement test needs: its content words, their order
    (first occurrences), how many negations it holds, each direction word with the content word
    it points at ("to berlin", "up 5"; alone when none follows: "off"), and the times and moods its
    stop words put it in (see :data:`MOODS`)."""

    words: frozenset[str]
    order: tuple[str, ...]
    negations: int
    bound: frozenset[str]
    moods: frozenset[str]


def _mood(word: str) -> str | None:
    """The time or mood ``word`` marks: an auxiliary, or the past of a word that says nothing on its
    own ("liked" of "like": "I liked tea" is not "I like tea", though "like" is no content word)."""
    if word in MOODS:
        return MOODS[word]
    if word.endswith("ed") and any(len(base) > 2 and base in _SAYS_NOTHING for base in (word[:-1], word[:-2])):
        return "past"
    return None


def claim(text: str) -> Claim:
    """The :class:`Claim` of ``text``. A contraction's stem ("isn" of "isn't") is not a content word:
    "isn't" reads as "is not"."""
    spelled = spelled_words(text)
    lowered = [word.lower() for word, _ in spelled]
    order: dict[str, None] = {}
    negations, bound, pending, moods = 0, set(), [], set()
    for i, (_, key) in enumerate(spelled):
        word, stem = lowered[i], lowered[i + 1:i + 2] == ["t"] and lowered[i].endswith("n")
        if mood := _mood(word):
            moods.add(mood)
        if word in NEGATIONS or (word == "used" and lowered[i + 1:i + 2] == ["to"]):
            negations += 1  # "I used to live in Paris" says I no longer do
        elif word in DIRECTIONS:
            pending.append(word)
        elif key is not None and not stem:
            order.setdefault(key, None)
            bound.update(f"{direction} {key}" for direction in pending)
            pending = []
    bound.update(pending)
    return Claim(frozenset(order), tuple(order), negations, frozenset(bound), frozenset(moods))


def carries(big: Claim, small: Claim) -> bool:
    """True when ``big`` says all ``small`` says (and it says something): every content word, in
    the same order and one run, as many negations, in the same times and moods, and every direction
    the same way. "I like tea with milk" carries "I like tea"; "I don't like tea", "Bob is Alice's
    manager", "shipped from Berlin", "the flight goes from Berlin to Paris" and "I liked tea" carry
    neither "I like tea", "Alice is Bob's manager", "shipped to Berlin", "... from Paris to Berlin"
    nor "I like tea"."""
    if not small.words or not small.words <= big.words or small.negations != big.negations:
        return False
    if small.moods != big.moods or not small.bound <= big.bound:
        return False
    # One run, not scattered: a word inside it changes what the words say ("my sister is Anna" is
    # not "my sister's friend is Anna", nor "Tom is the CEO" "Tom is the former CEO").
    n = len(small.order)
    return any(big.order[i:i + n] == small.order for i in range(len(big.order) - n + 1))
