"""A question that asks when: the lines that say when something happened, lifted.

"When did Caroline go to the support group?" is answered by the line that
dates the event ("I went to a support group yesterday"), yet the lines that
rank first often talk about the group with no date in them. Among a hybrid
query's best candidates (:func:`memory.ranking.fusion.rerank`), when the
query asks for a time ("when", "how long", "what year / month / date / day"),
the lines that hold a date or a time expression ("yesterday", "last week",
"two years ago", "for three years", "on Saturday", "May 2023") gain
DATED_LIFT of their score; any other query ranks as before. English only,
like :mod:`memory.ranking.timeframe`.

LoCoMo dev through the federation, replayed, fitted on two conversations and
scored on the third (the folds chose 0.5, 0.5, 0.75): any@5 / any@10 /
MRR@10 0.830 / 0.890 / 0.664 -> 0.841 / 0.890 / 0.675, temporal MRR 0.795 ->
0.840 (man/benchmarks.md, "When it happened").
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from memory.ranking.speakers import speaker_of

DATED_LIFT = 0.5

_ASKS_WHEN = re.compile(r"^\W*(?:when|since when|how long|what (?:year|month|date|day|time))\b", re.IGNORECASE)
_COUNT = r"(?:\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|few|couple of|several)"
_UNIT = r"(?:days?|weeks?|months?|years?)"
_WEEKDAY = r"(?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?"
# Matched on the lower-cased line; a month name only capitalised, so "you may" is no date.
_DATED = re.compile(
    r"\b(?:"
    + "|".join((
        r"yesterday|today|tonight|last night|this morning|the other day",
        rf"(?:last|this|next|past)\s+(?:week|weekend|month|year|summer|winter|spring|fall|autumn|{_WEEKDAY})",
        rf"{_COUNT}\s+{_UNIT}\s+ago",
        rf"(?:for|over)\s+{_COUNT}\s+{_UNIT}",
        rf"on\s+{_WEEKDAY}",
        r"(?:19|20)\d\d",
    ))
    + r")\b"
)
_MONTH = re.compile(r"\b(?:January|February|March|April|May|June|July|August|September|October|November|December)\b")


def asks_when(query_text: str) -> bool:
    """Does the query ask for a time ("When did …", "How long ago …", "What year …")?"""
    return bool(_ASKS_WHEN.search(query_text))


def dated(text: str) -> bool:
    """Does a line (its speaker's prefix aside) say when, with a date or a time expression?"""
    said = speaker_of(text)[1]
    return bool(_DATED.search(said.lower()) or _MONTH.search(said))


def lift_dated_lines(
    scores: Mapping[str, float], content: Mapping[str, str], query_text: str, lift: float = DATED_LIFT
) -> dict[str, float]:
    """``scores`` with each line that says when times ``1 + lift``, if ``query_text`` asks when
    (``content``: each scored id's text)."""
    if not asks_when(query_text):
        return dict(scores)
    return {i: v * (1.0 + lift) if dated(content[i]) else v for i, v in scores.items()}
