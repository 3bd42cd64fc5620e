"""Human renderings shared by commands: ages, snippets, entry tables."""

from __future__ import annotations

from datetime import UTC, datetime

from memory.types import MemoryEntry, Visibility


def age(when: datetime | None, now: datetime | None = None) -> str:
    if when is None:
        return "-"
    seconds = max(0, int(((now or datetime.now(UTC)) - when).total_seconds()))
    for unit, size in (("y", 31_536_000), ("mo", 2_592_000), ("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def snippet(text: str, width: int = 72) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def entry_json(entry: MemoryEntry) -> dict:
    data = entry.model_dump(mode="json")
    if entry.score is not None:
        data["score"] = round(entry.score, 6)
    if entry.matched_by:
        data["matched_by"] = entry.matched_by
    if entry.tiers:
        data["tiers"] = entry.tiers
    if entry.snippet:
        data["snippet"] = entry.snippet
    if entry.sources:
        data["sources"] = entry.sources
    return data


RECALL_COLUMNS = ("score", "type", "imp", "age", "id", "memory")


def recall_rows(entries: list[MemoryEntry]) -> list[tuple]:
    return [
        (
            "-" if e.score is None else f"{e.score:.3f}",
            e.type.value,
            f"{e.importance:.2f}" + (" 📌" if e.pinned else ""),
            age(e.created_at),
            e.id[:8],
            snippet(e.snippet or e.content),
        )
        for e in entries
    ]


LIST_COLUMNS = ("id", "type", "imp", "vis", "age", "memory")


def version_mark(entry: MemoryEntry) -> str:
    """' superseded' for an ended version, ' conflict' for a claim held beside a user-confirmed fact."""
    if entry.valid_to is not None or entry.superseded_by:
        return " superseded"
    return " conflict" if entry.conflict_with else ""


def version_state(entry: MemoryEntry) -> str:
    """A version's state in a chain, marked as the web view marks it: hidden, private or archived
    (an operator's chain shows those too; "current" alone would say recall answers with it), then
    superseded or conflict; "current" when nothing else is said."""
    withheld = ([entry.visibility.value] if entry.visibility not in (None, Visibility.VISIBLE) else []) + (
        ["archived"] if entry.archived else [])
    return (" ".join(withheld) + version_mark(entry)).strip() or "current"


def version_json(entry: MemoryEntry) -> dict:
    """A chain's version in JSON: its ``state`` in the words of the text's column, and ``current`` only
    for a version recall answers with (a claim held beside a fact too), never a forgotten or hidden one."""
    state = version_state(entry)
    return {**entry_json(entry), "state": state, "current": state in ("current", "conflict")}


def list_rows(entries: list[MemoryEntry]) -> list[tuple]:
    return [
        (
            e.id[:8],
            e.type.value,
            f"{e.importance:.2f}" + (" pinned" if e.pinned else ""),
            (e.visibility.value if e.visibility else "visible") + (" archived" if e.archived else "") + version_mark(e),
            age(e.created_at),
            snippet(e.snippet or e.content),
        )
        for e in entries
    ]
