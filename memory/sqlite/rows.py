"""Conversion between stored rows and :class:`MemoryEntry`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from memory.errors import UnreadableRowError
from memory.types import ConfidenceSource, MemoryEntry, MemoryScope, MemoryType, Visibility

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
    "valid_from",
    "valid_to",
    "supersedes",
)
# The columns as stored: what the ledger's images hold.
STORED_COLUMNS = ", ".join(f"m.{c}" for c in COLUMNS)
# The columns an entry is read from: ``archived`` as a flag, 1 (an operator's or prune's) and 2
# (consolidation's, admission.CONSOLIDATED) alike.
SELECT_COLUMNS = STORED_COLUMNS.replace("m.archived", "(m.archived != 0) AS archived")


def keyset_page(raw, after_seq: int, clause_sql: str, params: tuple, limit: int):
    """The first ``limit`` rows past ``after_seq`` admitted by ``clause_sql`` (alias ``m``), in seq order:
    a keyset page, one index seek however far the walk has gone (an OFFSET sorts and skips every row before)."""
    sql = f"SELECT {SELECT_COLUMNS}, m.seq FROM memories m WHERE m.seq > ? AND {clause_sql} ORDER BY m.seq LIMIT ?"
    return raw.execute(sql, (after_seq, *params, limit)).fetchall()


def _ts(value: datetime | None) -> float | None:
    return None if value is None else value.timestamp()


def tags_text(tags: Sequence[str]) -> str:
    """The ``tags`` column's JSON (most rows have none: "[]" without json.dumps saves 5 µs a row)."""
    return json.dumps(list(tags), ensure_ascii=False) if tags else "[]"


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
        "tags": tags_text(entry.tags),
        "source_session_id": entry.source_session_id,
        "created_at": _ts(entry.created_at),
        "updated_at": _ts(entry.updated_at),
        "last_accessed_at": _ts(entry.last_accessed_at),
        "access_count": entry.access_count,
        "archived": int(entry.archived),
        "visibility": entry.visibility.value if entry.visibility else None,
        "valid_from": _ts(entry.valid_from),
        "valid_to": _ts(entry.valid_to),
        "supersedes": entry.supersedes,
    }


def row_image(row) -> dict[str, Any]:
    """A stored row as a plain dict (the ledger's before/after image)."""
    return {c: row[c] for c in COLUMNS}


def row_to_entry(row, **annotations: Any) -> MemoryEntry:
    """The entry for a row that starts with :data:`SELECT_COLUMNS`.

    Half the cost of a keyword search is here, so pydantic's own (Rust) lax
    conversion does the work: 0/1 to bool, epoch floats to UTC datetimes,
    strings to enums. Only ``tags`` (JSON text) needs decoding first.
    """
    data = dict(zip(COLUMNS, row[: len(COLUMNS)]))
    try:
        data["tags"] = [] if data["tags"] == "[]" else json.loads(data["tags"])
    except (TypeError, ValueError):
        pass  # not JSON (an outside edit): left as text, so validation fails and names the row
    data.update(annotations)
    try:
        return MemoryEntry.model_validate(data)
    except ValidationError:  # only an outside edit of the file gets here: off the hot path
        return _clamped(data)


def entry_or_none(row, **annotations: Any) -> MemoryEntry | None:
    """:func:`row_to_entry`, or None for a row an outside edit left unreadable: a listing or search leaves
    that row out rather than fail on it (``arcana doctor`` names it; the file keeps it)."""
    try:
        return row_to_entry(row, **annotations)
    except UnreadableRowError:
        return None


def readable(rows, annotate: Any = None) -> list[MemoryEntry]:
    """The entries of ``rows`` (``annotate(row)``: each one's annotations), unreadable rows left out."""
    entries = (entry_or_none(r, **annotate(r)) if annotate else entry_or_none(r) for r in rows)
    return [e for e in entries if e is not None]


# Numbers a row may hold out of range only through an outside edit, and their bounds.
BOUNDS = {"importance": (0.0, 1.0), "confidence": (0.0, 1.0)}
# The times a row holds (the first two always), as epoch seconds a datetime can hold: years 1 to 9999.
TIMES = ("created_at", "updated_at", "last_accessed_at", "valid_from", "valid_to")
_EPOCH_RANGE = (-62135596800, 253402300799)


def _clamped(data: dict[str, Any]) -> MemoryEntry:
    """The entry with its out-of-range numbers read as the nearest bound (the row itself is left as it
    is: ``arcana doctor`` names it, see :func:`out_of_range`). Anything else invalid fails in one line
    naming the row, not the whole read in pydantic's many."""
    for column, (low, high) in BOUNDS.items():
        value = data[column]
        if isinstance(value, (int, float)):
            data[column] = low if value != value else min(max(value, low), high)  # NaN reads as the low bound
    try:
        return MemoryEntry.model_validate(data)
    except ValidationError as exc:
        error = exc.errors()[0]
        field = ".".join(str(part) for part in error["loc"])
        raise UnreadableRowError(
            f"memory {data['id']} cannot be read ({field}: {error['msg']}); see `arcana doctor`"
        ) from None


def repaired(current: dict[str, Any], image: dict[str, Any], taken: Sequence[str]) -> dict[str, Any]:
    """The columns to write to the stored row ``current`` (an outside edit left it unreadable) so it
    reads again: ``taken`` from ``image`` (a ledger row's after image of it, what a revert restores),
    and from ``image`` too each column that still stops it reading; every other column stays as it is.
    :class:`UnreadableRowError` when ``image`` itself leaves the row unreadable."""
    row = {**current, **{k: image[k] for k in taken}}
    for _ in COLUMNS:
        data = {**row, "archived": row["archived"] != 0}
        try:
            data["tags"] = json.loads(data["tags"])
        except (TypeError, ValueError):
            pass
        try:
            MemoryEntry.model_validate(data)
            return {k: row[k] for k in COLUMNS if row[k] != current[k]}
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            column = str(loc[0]) if loc else ""  # a whole-entry rule (no column) is not this repair's to mend
            if column not in image or row[column] == image[column]:
                raise UnreadableRowError(
                    f"memory {current['id']} cannot be read as that ledger row left it either ({column}); "
                    "give an earlier one"
                ) from None
            row[column] = image[column]
    raise UnreadableRowError(f"memory {current['id']} cannot be read as that ledger row left it either")


def _checks() -> list[tuple[str, str]]:
    """(SQL true for a bad row, what is wrong): the numbers out of range first (read as their nearest
    bound), then what no entry can hold (:data:`UNREADABLE`)."""
    checks = [(f"{c} NOT BETWEEN {low} AND {high}", f"{c} outside {low}..{high}") for c, (low, high) in BOUNDS.items()]
    for column, kind in (("type", MemoryType), ("scope", MemoryScope), ("confidence_source", ConfidenceSource),
                         ("visibility", Visibility)):
        checks.append((f"{column} NOT IN ({', '.join(repr(v.value) for v in kind)})", f"unknown {column}"))
    checks.append(("pinned NOT IN (0, 1)", "pinned neither 0 nor 1"))
    # json_type() of text that is not JSON is an error ("malformed JSON"), and an OR need not stop at its first term
    checks.append(("CASE WHEN json_valid(tags) THEN json_type(tags) != 'array' ELSE 1 END", "tags not a JSON list"))
    low, high = _EPOCH_RANGE
    for column in TIMES:  # NULL is no time (the optional ones): it passes
        checks.append((f"typeof({column}) NOT IN ('integer', 'real', 'null') OR {column} NOT BETWEEN {low} AND {high}",
                       f"{column} not a time"))
    return checks


UNREADABLE = "coalesce(" + " OR ".join(f"({sql})" for sql, _ in _checks()[len(BOUNDS):]) + ", 0)"
"""SQL true for a ``memories`` row no entry can be read from (what :func:`row_to_entry` refuses): what
acts on rows (prune) leaves it be, as reads leave it out, until an operator repairs it."""


def out_of_range(raw, limit: int = 5) -> list[tuple[str, str]]:
    """Up to ``limit`` rows (id, what is wrong) whose numbers are out of range, or whose enums, flags,
    tags or times no entry can hold: what :func:`row_to_entry` clamps or cannot read. One scan, in SQL."""
    cases = " ".join(f"WHEN {sql} THEN '{what}'" for sql, what in _checks())
    return [tuple(r) for r in raw.execute(f"SELECT id, CASE {cases} END AS what FROM memories WHERE what IS NOT NULL LIMIT ?", (limit,))]


def unreadable_ledger(raw, limit: int = 5) -> list[tuple[int, str]]:
    """Up to ``limit`` ledger rows (seq, memory id) an outside edit left unreadable: an image that is
    not a JSON object or a time that is not a number, what :meth:`LedgerRecord.from_row` refuses. One scan."""
    bad_image = "({c} IS NOT NULL AND {c} != '' AND (NOT json_valid({c}) OR json_type({c}) != 'object'))"
    sql = (f"SELECT seq, memory_id FROM memory_ledger WHERE {bad_image.format(c='before')} OR {bad_image.format(c='after')} "
           f"OR typeof(at) NOT IN ('integer', 'real') OR at NOT BETWEEN {_EPOCH_RANGE[0]} AND {_EPOCH_RANGE[1]} "
           "ORDER BY seq LIMIT ?")
    return [tuple(r) for r in raw.execute(sql, (limit,))]


def listed(column: str) -> str:
    """A FROM clause for the ``memories`` rows (alias ``m``) whose ``column`` (seq or id) is in a JSON
    list (one ``?``: :func:`keys`), each looked up by itself.

    ``m.id IN (…) AND m.agent_id = ?`` let SQLite, with no statistics, drive
    from the agent_id index instead, and an agent's own store is all one
    agent: 30 ids took 14.5 ms at 40,000 rows, a scan of every row. The
    CROSS JOIN fixes the list as the outer loop.
    """
    return f"json_each(?) AS k CROSS JOIN memories m ON m.{column} = k.value"


def keys(values: Sequence) -> str:
    """The parameter for :func:`listed`: ``values`` as a JSON list, each once."""
    return json.dumps(list(dict.fromkeys(values)))


def held_ids(raw, ids: Sequence[str]) -> set[str]:
    """Those of ``ids`` the store has a row for, in any state: an operator's fact, read by no one else."""
    return {row[0] for row in raw.execute(f"SELECT m.id FROM {listed('id')}", (keys(ids),))}


def admitted_rows(raw, column: str, values: Sequence, clause_sql: str, params: tuple) -> list:
    """Rows whose ``column`` (seq or id) is among ``values`` and that ``clause_sql`` (the admission
    predicate and the query's filters, from :func:`memory.sqlite.admission.where`) admits, in the
    order they were written (whatever the order of ``values``: callers break ties by it)."""
    sql = f"SELECT {SELECT_COLUMNS}, m.seq FROM {listed(column)} WHERE {clause_sql} ORDER BY m.seq"
    return raw.execute(sql, (keys(values), *params)).fetchall()
