"""Reading a request's parameters: anything malformed is a 400 with a one-line reason."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException

MAX_FORM_BYTES = 8 * 1024


def bad(reason: str, status: int = 400) -> HTTPException:
    return HTTPException(status, reason)


def whole(raw: str) -> bool:
    """ASCII digits only: '²' and '٣' are digits to ``isdigit`` but not what a URL's number is ('²' breaks ``int``)."""
    return raw.isascii() and raw.isdigit()


def once(pairs: Iterable[tuple[str, str]]) -> dict[str, str]:
    """A query's or form's parameters, each given once: of ``agent=alice&agent=bob`` one would be
    taken in silence (the last), and a page or an action about bob shown for a link naming alice."""
    given: dict[str, str] = {}
    for name, value in pairs:
        if name in given:
            raise bad(f"{name[:40]}: given more than once; give it once")
        given[name] = value
    return given


def text(params: Mapping, name: str, default: str = "", *, limit: int = 1000) -> str:
    value = params.get(name, default)
    if len(value) > limit:
        raise bad(f"{name}: at most {limit} characters")
    return value


def choice(params: Mapping, name: str, choices: Iterable[str], default: str) -> str:
    value = params.get(name) or default
    allowed = tuple(choices)
    if value not in allowed:
        raise bad(f"{name}: one of {', '.join(allowed)}, not '{value[:40]}'")
    return value


def integer(params: Mapping, name: str, default: int, low: int, high: int) -> int:
    raw = params.get(name)
    if raw in (None, ""):
        return default
    # More digits than int() converts (4,300) raised its own message, naming neither the parameter nor its range.
    digits = raw.lstrip("0") or "0"
    if not whole(raw) or len(digits) > len(str(high)) or not low <= int(digits) <= high:
        raise bad(f"{name}: a whole number from {low} to {high}, not '{raw[:40]}'")
    return int(digits)


def flag(params: Mapping, name: str) -> bool:
    return choice(params, name, ("", "0", "1"), "") == "1"


def moment(params: Mapping, name: str) -> datetime | None:
    """An ISO date or date-time (a date input's value); UTC when it names no zone."""
    raw = params.get(name)
    if not raw:
        return None
    try:
        parsed = datetime.fromisoformat(raw)
    except ValueError:
        raise bad(f"{name}: an ISO date like 2026-01-31, not '{raw[:40]}'") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


async def form(request) -> dict[str, str]:
    """A small urlencoded form; a larger body is refused before it is read whole."""
    if request.headers.get("content-type", "").split(";")[0].strip() != "application/x-www-form-urlencoded":
        raise bad("send the form as application/x-www-form-urlencoded", 415)
    declared = request.headers.get("content-length")
    if declared is None or not whole(declared) or int(declared) > MAX_FORM_BYTES:
        raise bad(f"a form of at most {MAX_FORM_BYTES} bytes, with its Content-Length", 413)
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise bad(f"a form of at most {MAX_FORM_BYTES} bytes", 413)
    try:
        pairs = parse_qsl(body.decode("utf-8"), keep_blank_values=True, strict_parsing=bool(body))
    except (UnicodeDecodeError, ValueError):
        raise bad("the form is not valid urlencoded UTF-8") from None
    return once(pairs)
