"""A query's search words, parsed once for every part of a recall that reads them.

The keyword leg of either engine, word-pair re-ranking and the vault
connector all search for the same words: letters and digits only (the
notion of a word FTS5's unicode61 tokenizer uses, so no operator or column
syntax survives), lower-cased, distinct, stop words dropped (OR-ing "the"
across 100k rows is what makes raw FTS5 slow, and measured keyword recall
rose when they went), at most :data:`MAX_TOKENS`.

A number is a date only where the query says one ("7 May", "May 7th",
"in 2023"): each row is indexed beside its date in words ("7 May 2023"),
so a bare "7" in "room 7" otherwise matched every row written on a 7th.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

# unicode61 separates on anything that is not a letter, number or the private-use
# "Co" category; \w is close enough and never yields an operator character.
_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
MAX_TOKENS = 32

MONTHS = {
    name: number
    for number, names in enumerate(
        [("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may",), ("june", "jun"),
         ("july", "jul"), ("august", "aug"), ("september", "sep", "sept"), ("october", "oct"),
         ("november", "nov"), ("december", "dec")],
        1,
    )
    for name in names
}
MONTH_PATTERN = "|".join(sorted(MONTHS, key=len, reverse=True))
# The numbers a query says as a date: a day beside a month name ("7 May", "7th of May", "May 7"), a year
# after a month or day ("May 2023", "May 7, 2023") or after a word that places it in time ("in 2023").
_DATE_NUMBERS = (
    re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{MONTH_PATTERN})\b"),
    re.compile(rf"\b(?:{MONTH_PATTERN})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b"),
    re.compile(rf"\b(?:{MONTH_PATTERN}|\d{{1,2}}(?:st|nd|rd|th)?)\.?,?\s+((?:19|20)\d\d)\b"),
    re.compile(r"\b(?:in|during|since|from|until|by|before|after|of)\s+((?:19|20)\d\d)\b"),
    # "on the 7th" said alone ("on the 7th floor" is no date)
    re.compile(r"\b(?:on|by|since|until|before|after)\s+the\s+(\d{1,2})(?:st|nd|rd|th)(?=\s*(?:$|[?.!,;]))"),
)
_ORDINAL = re.compile(r"(\d{1,2})(?:st|nd|rd|th)")
_MONTH_STARTS = frozenset(name[:3] for name in MONTHS)

STOPWORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been
    before being below between both but by can could did do does doing down during
    each few for from further had has have having he her here hers herself him
    himself his how i if in into is it its itself just me more most my myself no
    nor not now of off on once only or other our ours ourselves out over own same
    she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when
    where which while who whom why will with would you your yours yourself
    yourselves s t d ll m re ve don
    """.split()
)


@dataclass(frozen=True)
class QueryTerms:
    """The search words of one query text, in order; ``pairs`` are its adjacent search words;
    ``plain_numbers`` are its number words the text does not say as a date (a row's date
    in words is not searched for them)."""

    tokens: tuple[str, ...]
    plain_numbers: frozenset[str] = frozenset()

    @property
    def pairs(self) -> list[tuple[str, str]]:
        return list(zip(self.tokens, self.tokens[1:]))

    def narrowed(self, tokens: tuple[str, ...]) -> QueryTerms:
        """These terms less some words: the ``tokens`` kept are each read as they were."""
        return QueryTerms(tokens, self.plain_numbers & frozenset(tokens))

    @property
    def only_stopwords(self) -> bool:
        return bool(self.tokens) and all(t in STOPWORDS for t in self.tokens)


def terms(text: str | None) -> QueryTerms:
    """The terms of ``text``: stop words are dropped unless nothing else is left, so "who am I"
    still searches for something."""
    if not text:
        return QueryTerms(())
    lowered = text.lower()
    said_as_dates = {m[1] for pattern in _DATE_NUMBERS for m in pattern.finditer(lowered)}
    distinct = list(dict.fromkeys(_with_days([w.lower() for w in _TOKEN.findall(text)], said_as_dates)))
    content = [w for w in distinct if w not in STOPWORDS]
    tokens = tuple((content or distinct)[:MAX_TOKENS])
    return QueryTerms(tokens, frozenset(t for t in tokens if t.isdecimal() and t not in said_as_dates))


def _with_days(words: list[str], said_as_dates: set[str]) -> list[str]:
    """``words``, each ordinal said as a date ("7th") followed by its day ("7"): a row's date in
    words has the day without one ("7 May 2023")."""
    out = []
    for word in words:
        out.append(word)
        if (m := _ORDINAL.fullmatch(word)) and m[1] in said_as_dates:
            out.append(m[1])
    return out


def dates_may_hold(token: str) -> bool:
    """Whether a row's date in words ("7 June 2024", stemmed) can hold ``token``: a number can, and a
    word that begins as a month's name ("june", "marches", "Julie": stemmed as "juli" like "July"),
    accents aside. An engine keeping the date words apart need not look there for any other word."""
    folded = "".join(c for c in unicodedata.normalize("NFD", token) if not unicodedata.combining(c))
    return token.isdecimal() or folded[:3] in _MONTH_STARTS


def query_tokens(text: str | None) -> list[str]:
    """Distinct lower-cased content words of ``text``, in order (see :func:`terms`)."""
    return list(terms(text).tokens)


# A focused search (write-time reconciliation's keyword candidates, on either engine): a word in
# more than DF_CAP memories is common; words are kept rarest first while their counted memories
# stay within DF_BUDGET, at most FOCUS_TERMS of them. On a 10k store whose every word is common,
# OR-ing all of a statement's words ranked most of the store (SQLite: 32 of 39 ms per decision;
# PostgreSQL: 74 ms per pool write). A common word is never OR-ed with the rare ones: its count
# stops at DF_CAP + 1, so it fitted the budget while the ranking then scored every row holding it
# (most of a keyword-only `remember` at 300,000 rows, where "prefers" is in 30,000). The rarest
# common word only fills what the rare words leave of the candidates, from the newest DF_BUDGET
# rows holding it.
DF_CAP = 300
DF_BUDGET = 600
FOCUS_TERMS = 6


@dataclass(frozen=True)
class Focus:
    rare: tuple[str, ...]  # OR-ed and ranked first (may be empty)
    common: str | None  # the rarest common word: fills what ``rare`` leaves, from its newest rows


def focus(counted: list[tuple[str, int]]) -> Focus | None:
    """The words a focused search asks, from each word's memory count (counted no further than
    ``DF_CAP + 1``): one rule, so both engines pick the same words for the same rows. Words no
    memory holds are dropped (they can find nothing); ties go to the longer word. None when no
    word is held."""
    rare: list[str] = []
    common, total = None, 0
    for df, _, token in sorted((df, -len(token), token) for token, df in counted if df):
        if df > DF_CAP:
            common = token
            break
        if rare and (len(rare) == FOCUS_TERMS or total + df > DF_BUDGET):
            break
        rare.append(token)
        total += df
    return Focus(tuple(rare), common) if rare or common else None
