"""The one language registry: per ISO 639 code, the cue sets each part reads a language with.

Extraction registers its signal patterns here, reconciliation its slot
patterns; a new language is one more :func:`register` per part, checked the
same way whichever part adds it. The registry holds compiled pattern objects
without knowing their types, so it sits below both parts.
"""

from __future__ import annotations

import re
from typing import Any

from memory.errors import ConfigError

_CODE = re.compile(r"[a-z]{2,3}")
_REGISTRY: dict[str, dict[str, Any]] = {}  # part ("signal", "slot") -> code -> patterns


def register(part: str, code: str, patterns: Any) -> None:
    """Register (or replace) ``part``'s patterns for ISO code ``code`` (e.g. ``"pt"``)."""
    if not _CODE.fullmatch(code):
        raise ConfigError(f"language code '{code}' must be 2-3 lower-case letters (ISO 639)")
    _REGISTRY.setdefault(part, {})[code] = patterns


def lookup(part: str, code: str) -> Any:
    """``part``'s patterns for ``code``; a ConfigError naming the registered codes when there are none."""
    try:
        return _REGISTRY[part][code]
    except KeyError:
        raise ConfigError(f"no {part} patterns for language '{code}' (registered: {', '.join(codes(part))})") from None


def codes(part: str) -> list[str]:
    return sorted(_REGISTRY.get(part, {}))
