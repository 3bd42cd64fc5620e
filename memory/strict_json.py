"""The one JSON reader for files a user or another machine can write (config, cards, manifests, state).

Python's ``json`` reads more than JSON and fails in ways that are not
``JSONDecodeError``: ``NaN``/``Infinity`` and ``1e400`` are read (and written
back as non-JSON), a key given twice silently keeps only the last, a whole
number past ``int()``'s 4,300 digits raises a bare ValueError, and deep
nesting raises RecursionError. Each became a traceback or a quiet rewrite.
Here every one is a :class:`JSONRefused` whose text says what is wrong, for
the caller to prefix with the file's name and how to fix it.
"""

from __future__ import annotations

import json
import math
import re
from itertools import accumulate
from typing import Any


class JSONRefused(ValueError):
    """Text that is not JSON Arcana can keep; ``str()`` says why, without the file's name; ``fix`` is
    the remedy when this reason has its own (else None: the caller's)."""

    fix: str | None = None


class DuplicateKeyError(JSONRefused):
    """A key given twice in one JSON object (``args[0]`` is the key)."""

    def __str__(self) -> str:
        return f"the key {self.args[0]!r} is given twice in one object (only the last would count)"

    fix = "merge the two into one"


class NotJSON(JSONRefused):
    """Text that is not JSON at all (as opposed to JSON Arcana will not keep)."""


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A ``json.loads`` object hook that raises DuplicateKeyError on a key given twice in one object."""
    seen: dict[str, Any] = {}
    for key, value in pairs:
        if key in seen:
            raise DuplicateKeyError(key)
        seen[key] = value
    return seen


def _no_constant(name: str):
    raise NotJSON(f"{name} is not a JSON value")


def _finite(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise JSONRefused(f"the number {text[:40]} is too large to keep (it would be written as Infinity, not JSON)")
    return value


def _whole(text: str) -> int:
    try:
        return int(text)
    except ValueError:  # more digits than int() converts
        raise JSONRefused(f"the number {text[:20]}… has {len(text)} digits, too many to keep") from None


# Built once: ``json.loads`` with any hook builds a new decoder per call, which made reading a
# `remember --from` line twice as slow as plain ``json.loads``.
_DECODER = json.JSONDecoder(parse_constant=_no_constant, parse_float=_finite, parse_int=_whole,
                            object_pairs_hook=unique_keys)


MAX_DEPTH = 200
"""The deepest nesting kept: far past any file or answer Arcana reads, far short of Python's limit."""
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_BRACKET = re.compile(r"[\[\]{}]")


def _too_deep(text: str) -> bool:
    """Whether ``text`` nests past :data:`MAX_DEPTH`, read without recursion. The decoder recurses once
    a level: at Python's limit a garbage collection running in the middle of it failed in finalizers
    ("Exception ignored in sys.unraisablehook", a screenful on stderr) before the RecursionError came.
    Only a text with that many brackets at all is read bracket by bracket."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return False
    steps = (1 if b in "[{" else -1 for b in _BRACKET.findall(_STRING.sub("", text)))
    return max(accumulate(steps), default=0) > MAX_DEPTH


def loads(text: str) -> Any:
    """``text`` as JSON, or :class:`JSONRefused` (invalid JSON, NaN/Infinity, a number too large, a key
    given twice, nesting too deep)."""
    if text.startswith("\ufeff"):  # json's own words were "Unexpected UTF-8 BOM (decode using utf-8-sig)"
        refused = JSONRefused("starts with a byte-order mark (an editor's \"UTF-8 with BOM\")")
        refused.fix = "re-save it as plain UTF-8"
        raise refused
    if _too_deep(text):
        raise JSONRefused(f"nested too deeply to be an Arcana file (more than {MAX_DEPTH} levels)")
    try:
        return _DECODER.decode(text)
    except json.JSONDecodeError as exc:
        raise NotJSON(f"invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise JSONRefused("nested too deeply to be an Arcana file") from None


def decode(raw: bytes) -> str:
    """``raw`` as UTF-8 text, or :class:`JSONRefused` naming the first byte that is not."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        hint = ", a UTF-16 byte-order mark" if raw[:2] in (b"\xff\xfe", b"\xfe\xff") else ""
        raise JSONRefused(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at offset {exc.start}{hint})") from None
