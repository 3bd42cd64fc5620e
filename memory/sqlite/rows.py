"""Conversion between stored rows and :class:`MemoryEntry`."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from memory.types import MemoryEntry, Visibility

COLUMNS = (
    "id",
    "agent_id",
    "type",
    "content",
    "scope",
    "pool_name",
    "importance",
    "pinned",
    "confidence",
    "confidence_source",
    "conflict_with",
    "superseded_by",
    "tags",
    "source_session_id",
    "created_at",
    "updated_at",
    "last_accessed_at",
    "access_count",
    "archived",
    "visibility",
)
SELECT_COLUMNS = ", ".join(f"m.{c}" for c in COLUMNS)
_TIMES = ("created_at", "updated_at", "last_accessed_at")


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def _dt(value: float | None) -> datetime | None:
    return None if value is None else datetime.fromtimestamp(value, UTC)


def entry_values(entry: MemoryEntry) -> dict[str, Any]:
    """Column values for ``entry``; visibility stays None when the caller left it unset."""
    return {
        "id": entry.id,
        "agent_id": entry.agent_id,
        "type": entry.type.value,
        "content": entry.content,
        "scope": entry.scope.value,
        "pool_name": entry.pool_name,
        "importance": entry.importance,
        "pinned": int(entry.pinned),
        "confidence": entry.confidence,
        "confidence_source": entry.confidence_source.value,
        "conflict_with": entry.conflict_with,
        "superseded_by": entry.superseded_by,
        "tags": json.dumps(entry.tags, ensure_ascii=False),
        "source_session_id": entry.source_session_id,
        "created_at": _ts(entry.created_at),
        "updated_at": _ts(entry.updated_at),
        "last_accessed_at": _ts(entry.last_accessed_at),
        "access_count": entry.access_count,
        "archived": int(entry.archived),
        "visibility": entry.visibility.value if entry.visibility else None,
    }


def row_image(row) -> dict[str, Any]:
    """A stored row as a plain dict (the ledger's before/after image)."""
    return {c: row[c] for c in COLUMNS}


def row_to_entry(row, **annotations: Any) -> MemoryEntry:
    data = row_image(row)
    data["tags"] = json.loads(data["tags"])
    data["pinned"] = bool(data["pinned"])
    data["archived"] = bool(data["archived"])
    data["visibility"] = Visibility(data["visibility"])
    for key in _TIMES:
        data[key] = _dt(data[key])
    return MemoryEntry(**data, **annotations)
