"""Pure scoring helpers: trimming, distilling a durable clause, honest confidence, importance."""

from __future__ import annotations

import re

from memory.config import ExtractionSettings
from memory.extraction.signals import SignalPatterns, sentences
from memory.limits import content_size
from memory.types import MemoryEntry

ELLIPSIS = "…"


def trim_content(text: str, limit: int, max_bytes: int | None = None) -> str:
    """Collapse whitespace and cap at ``limit`` characters (and ``max_bytes`` UTF-8 bytes, the
    store's ``memory.max_content_bytes``), ending in an ellipsis when cut."""
    flat = " ".join(text.split())
    if len(flat) <= limit and (max_bytes is None or content_size(flat, max_bytes) <= max_bytes):
        return flat
    cut = flat[: max(0, limit - 1)].rstrip()
    if max_bytes is not None and content_size(cut + ELLIPSIS, max_bytes) > max_bytes:
        room = max_bytes - len(ELLIPSIS.encode())
        cut = cut.encode("utf-8", "surrogatepass")[:room].decode("utf-8", "ignore").rstrip()
    return cut + ELLIPSIS


def distil(text: str, signals: SignalPatterns, limit: int, max_bytes: int | None = None) -> str:
    """The clause worth storing from a durable user statement, framing stripped.

    "By the way, please remember that my project is called Arcana." becomes
    "My project is called Arcana." Never empty: if stripping leaves nothing, the
    whole trimmed text is kept.
    """
    bearing = next((s for s in sentences(text) if signals.states_preference(s)), None) or text
    clause = signals.strip_framing(bearing).strip(" ,;:")
    if not re.search(r"\w", clause):
        return trim_content(text, limit, max_bytes)
    return trim_content(clause[0].upper() + clause[1:], limit, max_bytes)


def agent_confidence(settings: ExtractionSettings, claimed: float | None = None) -> float:
    """Agent-asserted confidence: never above the cap, which is strictly below 1.0."""
    cap = settings.agent_confidence_cap
    return cap if claimed is None else max(0.0, min(float(claimed), cap))


def importance(base: float, text: str, signals: SignalPatterns, settings: ExtractionSettings) -> float:
    """Baseline for the kind of entry, raised when the user used emphatic ("remember", "always") language."""
    boost = settings.signal_boost if signals.is_imperative(text) else 0.0
    return round(min(1.0, base + boost), 3)


def storable(entries: list[MemoryEntry], settings: ExtractionSettings) -> list[MemoryEntry]:
    """Drop entries below ``min_confidence_to_store`` before anything is written."""
    return [e for e in entries if e.confidence >= settings.min_confidence_to_store]
