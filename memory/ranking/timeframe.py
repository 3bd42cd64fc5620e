"""Time in the question: the span a query's time expression names, for ranking.

"What did I say yesterday", "the trip last week", "in May 2023": such a
question is about memories written then (``created_at``). :func:`window`
finds the first such expression and returns its span relative to "now";
recall lifts the matches written inside it (a boost, not a filter: a date
said loosely must not hide the answer). English only; anything else is None.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from memory.query_terms import MONTH_PATTERN, MONTHS

_UNITS = {"day": 1, "week": 7, "month": 30, "year": 365}
_AGO = re.compile(r"\b(\d+|a|an|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b")
_WORD_NUMBERS = {"a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+({MONTH_PATTERN})\.?,?\s+(\d{{4}})\b")
_MONTH_DAY_YEAR = re.compile(rf"\b({MONTH_PATTERN})\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b")
_MONTH_YEAR = re.compile(rf"\b({MONTH_PATTERN})\.?,?\s+(\d{{4}})\b")
_IN_MONTH = re.compile(rf"\b(?:in|during|since|back in)\s+({MONTH_PATTERN})\b")
_YEAR = re.compile(r"\b(?:in|during)\s+((?:19|20)\d{2})\b")


def _day(when: datetime) -> datetime:
    return when.replace(hour=0, minute=0, second=0, microsecond=0)


def _month_span(year: int, month: int, tz) -> tuple[datetime, datetime]:
    start = datetime(year, month, 1, tzinfo=tz)
    end = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
    return start, end


def window(text: str | None, now: datetime) -> tuple[datetime, datetime] | None:
    """``(start, end)`` of the first time expression in ``text``, relative to ``now``; else None.

    One that names no real time ("31 February 2024", "dec 9999", "99999999 years ago") is None too:
    nothing to lift, and never an error in a recall."""
    if not text:
        return None
    try:
        return _window(text, now)
    except (ValueError, OverflowError):
        return None


def _window(text: str, now: datetime) -> tuple[datetime, datetime] | None:
    t = text.lower()
    tz = now.tzinfo
    today = _day(now)
    if m := _DAY_MONTH_YEAR.search(t):
        start = datetime(int(m[3]), MONTHS[m[2]], int(m[1]), tzinfo=tz)
        return start, start + timedelta(days=1)
    if m := _MONTH_DAY_YEAR.search(t):
        start = datetime(int(m[3]), MONTHS[m[1]], int(m[2]), tzinfo=tz)
        return start, start + timedelta(days=1)
    if m := _MONTH_YEAR.search(t):
        return _month_span(int(m[2]), MONTHS[m[1]], tz)
    if m := _AGO.search(t):
        count = _WORD_NUMBERS.get(m[1]) or int(m[1])
        days = count * _UNITS[m[2]]
        slack = max(1, days // 4)  # "two weeks ago" is about then, give or take
        center = today - timedelta(days=days)
        return center - timedelta(days=slack), center + timedelta(days=slack + 1)
    if re.search(r"\byesterday\b", t):
        return today - timedelta(days=1), today
    if re.search(r"\b(?:today|this morning|tonight|earlier today)\b", t):
        return today, now + timedelta(seconds=1)
    if re.search(r"\blast (?:week|few days)\b", t):
        return today - timedelta(days=14), today
    if re.search(r"\bthis week\b", t):
        return today - timedelta(days=7), now + timedelta(seconds=1)
    if re.search(r"\blast month\b", t):
        previous = today.replace(day=1) - timedelta(days=1)
        return _month_span(previous.year, previous.month, tz)
    if re.search(r"\bthis month\b", t):
        return _month_span(now.year, now.month, tz)
    if re.search(r"\blast year\b", t):
        return datetime(now.year - 1, 1, 1, tzinfo=tz), datetime(now.year, 1, 1, tzinfo=tz)
    if m := _IN_MONTH.search(t):  # the latest such month not after now
        month = MONTHS[m[1]]
        year = now.year if month <= now.month else now.year - 1
        return _month_span(year, month, tz)
    if m := _YEAR.search(t):
        year = int(m[1])
        return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)
    return None
