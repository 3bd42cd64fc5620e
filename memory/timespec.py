"""Times a user names: a duration ago ('7d', '12h', '30m', '2w') or an ISO 8601 date/time (UTC without a zone)."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

from memory.errors import InvalidRequestError

_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str | None, what: str = "since") -> datetime | None:
    """``value`` as a UTC time (None stays None); an InvalidRequestError naming ``what`` otherwise."""
    if value is None:
        return None
    if value[-1:] in _UNITS and value[:-1].isascii() and value[:-1].isdigit():  # '²d' is digits to isdigit, not to int
        try:
            return datetime.now(UTC) - timedelta(**{_UNITS[value[-1]]: int(value[:-1])})
        except (OverflowError, ValueError):  # past timedelta's range, before the year 1, or past int()'s 4,300 digits
            raise InvalidRequestError(f"{what}: {value} reaches back past the year 1; use a shorter duration or an ISO date") from None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequestError(f"{what}: use a duration like 7d, 12h, 2w or an ISO date") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


_TIME_KEY = re.compile(r"(?:^|_)(?:at|since)$|^valid_(?:from|to)$")


def iso(moment: datetime | float) -> str:
    """A UTC time (a datetime, or epoch seconds as stored) in ISO 8601 with ``Z``, as every JSON answer gives it."""
    if not isinstance(moment, datetime):
        moment = datetime.fromtimestamp(moment, UTC)
    elif moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat().replace("+00:00", "Z")


def iso_times(value: Any) -> Any:
    """``value`` with every datetime, and every epoch number under a time key (``at``, ``*_at``,
    ``*_since``, ``valid_from``/``valid_to``: ledger images, vault state, watch events), as
    :func:`iso`; the rest unchanged."""
    if isinstance(value, datetime):
        return iso(value)
    if isinstance(value, dict):
        return {
            k: iso(v) if isinstance(k, str) and _TIME_KEY.search(k) and _epoch(v) else iso_times(v)
            for k, v in value.items()
        }
    if isinstance(value, (list, tuple)):
        return [iso_times(v) for v in value]
    return value


def _epoch(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
