"""Times a user names: a duration ago ('7d', '12h', '30m', '2w') or an ISO 8601 date/time (UTC without a zone)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memory.errors import InvalidRequestError

_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}


def parse_since(value: str | None, what: str = "since") -> datetime | None:
    """``value`` as a UTC time (None stays None); an InvalidRequestError naming ``what`` otherwise."""
    if value is None:
        return None
    if value[-1:] in _UNITS and value[:-1].isdigit():
        return datetime.now(UTC) - timedelta(**{_UNITS[value[-1]]: int(value[:-1])})
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        raise InvalidRequestError(f"{what}: use a duration like 7d, 12h, 2w or an ISO date") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
