"""Bulk remember: a JSON Lines file of memories into an agent's federation, idempotently.

One JSON object per line: ``content`` (required), and optionally ``type``,
``importance``, ``tags``, ``session``, ``created_at`` (ISO 8601; without a
zone it is UTC), ``id`` and ``role`` (a chat export's speaker: see :data:`USER_ROLES`). Blank lines are skipped. A line that is not such
an object is reported by number and the rest of the file is still imported:
a chat history with one broken line loses that line only, and says so.

Idempotence: a line without ``id`` gets a deterministic one, a UUID5 of
(agent, session, created_at, content), so importing the same file twice
writes nothing the second time; a line without ``created_at`` takes the
import time when new and keeps the stored time when its memory already exists.

The file is read as a stream, a window of :data:`BATCH` entries (or
:data:`WINDOW_BYTES` of content) at a time, so memory stays bounded whatever
its size (the next window is read while one is written); a line longer than any
memory can be is skipped unread and named,
as is one whose content is over ``max_content_bytes``. Each window is written
in the file's order through the federation's batch write (the same routing,
promotion and ledger as ``arcana remember``): a history imported with one date
per session has every turn at the same instant, and its order (which turn
follows which, which fact came later) is then the order it is written in. The
embedder sorts its texts by length itself, so a batch is padded little. A
later line with an id already seen replaces it (in its window, or by the
upsert when it comes in a later one); either way the earlier copy is counted
once, in ``repeated``, so the counts add up to the lines wherever a window ends.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import numpy as np
from pydantic import ValidationError

from memory.limits import MAX_CONTENT_BYTES, content_size, nul_field, nul_refused, tags_size
from memory.lines import LineTooLong, decode, loads
from memory.redaction import redact
from memory.types import ConfidenceSource, MemoryEntry, MemoryType

BATCH = 1024  # entries per federation write: the vector store's own commit window
WINDOW_BYTES = 32 * 1024 * 1024  # content held before a window is written, whatever BATCH says
DECISIONS = ("add", "noop", "update", "delete")  # reconciliation's, counted over the new lines
REPORTED = 1000  # bad lines named one by one; past that only counted, so a file of bad lines stays bounded
FIELDS = ("content", "type", "importance", "tags", "session", "created_at", "id", "role")
USER_ROLES = ("user", "human")
"""A chat export's roles for what the user typed: stored as typed. Any other role's line (an assistant's,
a system prompt, a tool's output) is text the user did not type: its obvious secrets are redacted, and
it is an agent's words (:attr:`MemoryEntry.said_by_agent`)."""
_NAMESPACE = uuid.UUID("6f0c3a52-5b1e-4d55-9a2e-3f1a9c0d7b11")

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass
class Parsed:
    entries: list[MemoryEntry]
    bad: list[BadLine]
    dated: set[str]  # ids of entries whose line gave created_at
    lines: int = 0
    repeated: int = 0  # lines a later line of the window with the same id replaced


@dataclass
class BulkReport:
    lines: int = 0
    written: int = 0
    unchanged: int = 0
    restated: int = 0  # new lines reconciled as a noop: they reinforced the memory that says it, storing nothing
    repeated: int = 0  # lines whose id another line of the file gives too, bar the last (which stands)
    kept_removed: int = 0  # lines whose memory was deleted or purged here: it stays gone
    not_stored: int = 0  # lines of batches no tier stored (a server tier down mid-run): a re-run adds them
    held_by_others: int = 0  # lines no tier stored: their id is another agent's memory in the tier they go to
    carriers_withheld: int = 0  # digests and merges carrying the old words of a memory a line re-worded
    vectors_completed: int = 0  # unchanged rows a killed run had left without a vector, embedded now
    bad: list[BadLine] = field(default_factory=list)  # the first REPORTED of them
    bad_total: int = 0
    accepted: dict[str, int] = field(default_factory=dict)
    refused: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)
    decisions: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DECISIONS, 0))
    warnings: list[str] = field(default_factory=list)

    def add(self, batch: Sequence[MemoryEntry], result: Any, again: set[str] = frozenset()) -> None:
        """Count one batch's write (the federation's ``BatchWriteReport``); ``again``: its ids an earlier
        window of the file already wrote, each counted as one repeat rather than a second memory."""
        for kind, count in result.decisions.items():
            self.decisions[kind] = self.decisions.get(kind, 0) + count
        self.warnings += result.warnings
        self.vectors_completed += result.embedded_again
        for name, count in result.accepted.items():
            self.accepted[name] = self.accepted.get(name, 0) + count
        self.refused = sorted(set(self.refused) | set(result.refused))
        self.failed.update(result.failed)
        if result.failed and not result.accepted:  # every tier the batch routes to failed: none of it is stored
            self.not_stored += len(batch)
            return
        self.repeated += len(again)
        batch = [e for e in batch if e.id not in again]
        gone = sum(1 for e in batch if e.id in result.gone)
        unchanged = sum(1 for e in batch if e.id not in result.gone and result.changed.get(e.id) is False)
        # A line refused by a shared tier and taken by no other (a `--pool` line naming another agent's
        # memory) is not written; one the writer's private store took is (only its copy was refused).
        held = sum(1 for e in batch if e.id in result.held_by_others and e.id not in result.changed)
        restated = result.decisions.get("noop", 0)  # never in ``changed``: their own id is not written
        self.kept_removed += gone
        self.unchanged += unchanged
        self.restated += restated
        self.held_by_others += held
        self.written += len(batch) - unchanged - gone - held - restated

    def as_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "written": self.written,
            "unchanged": self.unchanged,
            "restated": self.restated,
            "repeated": self.repeated,
            "kept_removed": self.kept_removed,
            "not_stored": self.not_stored,
            "held_by_others": self.held_by_others,
            "carriers_withheld": self.carriers_withheld,
            "vectors_completed": self.vectors_completed,
            "decisions": self.decisions,
            "warnings": self.warnings,
            "bad": [{"line": b.line, "reason": b.reason} for b in self.bad],
            "bad_total": self.bad_total,
            "accepted": self.accepted,
            "refused": self.refused,
            "failed": self.failed,
        }


def deterministic_id(agent_id: str, session: str | None, created_at: datetime | None, content: str) -> str:
    key = json.dumps([agent_id, session, created_at.isoformat() if created_at else None, content], ensure_ascii=False)
    return str(uuid.uuid5(_NAMESPACE, key))


def _created_at(value: Any) -> datetime:
    if not isinstance(value, str):
        raise ValueError("'created_at' must be an ISO 8601 string, e.g. 2024-05-01T12:00:00Z")
    try:
        when = datetime.fromisoformat(value.replace("Z", "+00:00") if value.endswith("Z") else value)
    except ValueError:
        raise ValueError(f"'created_at' {value!r} is not an ISO 8601 time, e.g. 2024-05-01T12:00:00Z") from None
    try:
        return when.replace(tzinfo=UTC) if when.tzinfo is None else when.astimezone(UTC)
    except OverflowError:  # year 1 or 9999 moved across midnight by its offset
        raise ValueError(f"'created_at' {value!r} is outside the times a memory can hold") from None


def line_limit(max_content_bytes: int) -> int:
    """The longest line that could hold a memory of ``max_content_bytes``: JSON escapes take up
    to 6 bytes a byte (``\\u0000``), and the other fields fit in 64 KiB."""
    return 6 * max_content_bytes + 64 * 1024


def parse_line(text: str, agent_id: str, defaults: dict[str, Any], max_content_bytes: int = MAX_CONTENT_BYTES
               ) -> tuple[MemoryEntry, bool]:
    """One line's entry and whether it named its own time; ValueError says what is wrong with it."""
    data = loads(text)
    if not isinstance(data, dict):
        raise ValueError(f"expected a JSON object, got {type(data).__name__}")
    unknown = sorted(set(data) - set(FIELDS))
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (known: {', '.join(FIELDS)})")
    content = data.get("content")
    if not isinstance(content, str) or not content.strip():
        raise ValueError("'content' must be a non-empty string")
    if (size := content_size(content, max_content_bytes)) > max_content_bytes:
        raise ValueError(f"'content' is {size:,} bytes, over the limit of {max_content_bytes:,} (memory.max_content_bytes)")
    session = data.get("session")
    if session is not None and not isinstance(session, str):
        raise ValueError("'session' must be a string")
    tags = data.get("tags", [])
    if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
        raise ValueError("'tags' must be a list of strings")
    if (size := tags_size(tags, max_content_bytes)) > max_content_bytes:
        raise ValueError(f"'tags' are {size:,} bytes together, over the limit of {max_content_bytes:,} (memory.max_content_bytes)")
    if (field := nul_field(content, tags)) is not None:
        raise ValueError(str(nul_refused(field)))
    role = data.get("role")
    if role is not None and (not isinstance(role, str) or not role.strip()):
        raise ValueError("'role' must be a non-empty string")
    said_by_agent = role is not None and role.strip().lower() not in USER_ROLES
    if said_by_agent:
        content = redact(content)
    entry_id = data.get("id")
    if entry_id is not None and (not isinstance(entry_id, str) or not entry_id.strip()):
        raise ValueError("'id' must be a non-empty string")
    importance = data.get("importance", defaults.get("importance", 0.5))
    if isinstance(importance, bool) or not isinstance(importance, (int, float)) or not 0.0 <= importance <= 1.0:
        raise ValueError("'importance' must be a number from 0 to 1")
    try:
        kind = MemoryType(data.get("type", defaults.get("type", MemoryType.EPISODIC)))
    except ValueError:
        raise ValueError(f"'type' must be one of {', '.join(t.value for t in MemoryType)}") from None
    created = _created_at(data["created_at"]) if "created_at" in data else None
    fields: dict[str, Any] = {
        "id": entry_id or deterministic_id(agent_id, session, created, content),
        "agent_id": agent_id,
        "type": kind,
        "content": content,
        "importance": float(importance),
        "tags": tags,
        "source_session_id": session,
        "confidence_source": ConfidenceSource.IMPORTED,
        "imported": True,
        "said_by_agent": said_by_agent,
    }
    for key in ("scope", "pool_name"):
        if defaults.get(key) is not None:
            fields[key] = defaults[key]
    if created is not None:
        fields["created_at"] = fields["updated_at"] = created
    try:
        return MemoryEntry(**fields), created is not None
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise ValueError(f"{'.'.join(map(str, problem['loc']))}: {problem['msg']}") from None


class _Window:
    """Entries gathered until a write: a later duplicate id replaces an earlier one."""

    def __init__(self) -> None:
        self.by_id: dict[str, MemoryEntry] = {}
        self.dated: set[str] = set()
        self.bad: list[BadLine] = []
        self.content_bytes = 0
        self.repeated = 0

    def add(self, entry: MemoryEntry, has_time: bool) -> None:
        self.repeated += self.by_id.pop(entry.id, None) is not None
        self.by_id[entry.id] = entry
        self.content_bytes += len(entry.content)
        (self.dated.add if has_time else self.dated.discard)(entry.id)

    def full(self) -> bool:
        return len(self.by_id) >= BATCH or self.content_bytes >= WINDOW_BYTES

    def parsed(self, lines: int) -> Parsed:
        return Parsed(list(self.by_id.values()), self.bad, self.dated, lines, self.repeated)


class _SeenIds:
    """The ids earlier windows of one run wrote, 8 bytes each (their hash, in sorted runs), so a line
    repeating one is told apart wherever the window boundary fell. A hash collision (odds about
    n²/2⁶⁴) can only move a line from one count to ``repeated``; what is stored is the same."""

    def __init__(self) -> None:
        self.runs: list[np.ndarray] = []

    @staticmethod
    def _keys(ids: Sequence[str]) -> np.ndarray:
        return np.fromiter(map(hash, ids), dtype=np.int64, count=len(ids))

    def among(self, ids: Sequence[str]) -> set[str]:
        keys, hit = self._keys(ids), np.zeros(len(ids), dtype=bool)
        for run in self.runs:
            at = np.searchsorted(run, keys).clip(max=len(run) - 1)
            hit |= run[at] == keys
        return {i for i, seen in zip(ids, hit) if seen}

    def add(self, ids: Sequence[str]) -> None:
        self.runs.append(np.sort(self._keys(ids)))
        while len(self.runs) > 1 and len(self.runs[-2]) <= len(self.runs[-1]):  # at most log2(windows) runs
            last = self.runs.pop()
            self.runs.append(np.sort(np.concatenate([self.runs.pop(), last])))


def stream(
    lines: Iterable[str | bytes | LineTooLong | tuple[int, bytes | LineTooLong]],
    agent_id: str,
    *,
    max_content_bytes: int = MAX_CONTENT_BYTES,
    **defaults: Any,
) -> Iterator[Parsed]:
    """Windows of good entries and bad lines (number and reason), read lazily from ``lines``.

    ``lines`` are texts or bytes numbered from 1, or the ``(number, line)``
    pairs :func:`memory.lines.read_lines` gives. ``defaults`` (type,
    importance, scope, pool_name) apply where a line is silent. Each window's
    ``lines`` is the number of the last line read so far.
    """
    window = _Window()
    number = 0
    for item in lines:
        number, text = item if isinstance(item, tuple) else (number + 1, item)
        if isinstance(text, LineTooLong):
            window.bad.append(BadLine(number, str(text)))
            continue
        try:
            if isinstance(text, bytes):
                text = decode(text)
            text = text.lstrip("\ufeff") if number == 1 else text
            if not text.strip():
                continue
            window.add(*parse_line(text, agent_id, defaults, max_content_bytes))
        except ValueError as exc:
            window.bad.append(BadLine(number, str(exc)))
            continue
        if window.full():
            yield window.parsed(number)
            window = _Window()
    yield window.parsed(number)


def parse(lines: Iterable[str | bytes], agent_id: str, **defaults: Any) -> Parsed:
    """Every line's entries and bad lines at once (a small input; a file goes through :func:`stream`)."""
    merged = _Window()
    lines_read = 0
    for window in stream(lines, agent_id, **defaults):
        for entry in window.entries:
            merged.add(entry, entry.id in window.dated)
        merged.bad += window.bad
        merged.repeated += window.repeated
        lines_read = window.lines
    return merged.parsed(lines_read)


async def remember_many(
    federation: Any, parsed: Parsed | Iterable[Parsed], *, reconcile: bool = True, on_progress: Progress | None = None,
    copies: Any | None = None,
) -> BulkReport:
    """Write each window of ``parsed`` through ``federation.write_many``, in order, ``BATCH`` at a time.

    With ``reconcile`` every line not imported before is reconciled as a
    ``remember`` is (add / noop / update / delete, counted in ``decisions``);
    a line already imported is left to the upsert by id, so a re-run
    reinforces nothing. A line that re-words (or withholds) a stored memory
    withholds the consolidated memories carrying it as `import` and `memory set`
    do (:func:`memory.operator.edits.withhold_carriers_of`; ``copies``, the
    agent's :class:`GlobalCopies`, reaches those of its global copy).
    ``on_progress(entries written, lines read)``.

    Raises what the federation raises when the private tier fails; windows
    before it stay written (and are reported by a re-run as unchanged).
    """
    report = BulkReport()
    seen = _SeenIds()
    done = 0
    windows = _read_ahead([parsed] if isinstance(parsed, Parsed) else parsed)
    async with aclosing(windows), aclosing(_batches(windows)) as batches:
        # The model embeds each batch ahead, the next one while this one is decided and written.
        following = await anext(batches, None)
        if following is not None and following[1]:
            federation.embed_ahead(following[1], reconcile=reconcile)
        while following is not None:
            window, batch, first = following
            following = await anext(batches, None)
            if following is not None and following[1]:
                federation.embed_ahead(following[1], reconcile=reconcile)
            if first:
                report.lines = window.lines
                report.bad += window.bad[: REPORTED - len(report.bad)]
                report.bad_total += len(window.bad)
                report.repeated += window.repeated
            if batch:
                done += len(batch)
                ids = [e.id for e in batch]
                again = seen.among(ids)
                seen.add(ids)
                batch, gone, held = await _as_stored(federation, batch, window.dated, reconcile)
                report.kept_removed += gone
                if batch:
                    result = await federation.write_many(batch, reconcile=reconcile)
                    report.add(batch, result, again & {e.id for e in batch})
                    report.carriers_withheld += await _withhold_carriers(federation, held, batch, result, copies)
            if on_progress:
                on_progress(done, window.lines)
    return report


async def _batches(windows: AsyncIterator[Parsed]) -> AsyncIterator[tuple[Parsed, list[MemoryEntry], bool]]:
    """Each window's entries in the file's order, ``BATCH`` at a time, and whether the batch is its window's first.

    A window with no good line is one empty batch, so its bad lines and its line count are still reported."""
    async for window in windows:
        entries = window.entries
        for start in range(0, max(len(entries), 1), BATCH):
            yield window, entries[start : start + BATCH], start == 0


async def _read_ahead(windows: Iterable[Parsed]) -> AsyncIterator[Parsed]:
    """Each window of ``windows``, the next one read and parsed in a thread meanwhile.

    Trigger: a file of many lines. Why: parsing is Python work and a write
    mostly SQLite's, which lets go of the GIL; one after the other, a
    100,000-line import spent a quarter of its time parsing with the
    store idle. Outcome: at most one window more in memory.
    """
    lines = iter(windows)
    ahead = asyncio.ensure_future(asyncio.to_thread(next, lines, None))
    try:
        while (window := await ahead) is not None:
            ahead = asyncio.ensure_future(asyncio.to_thread(next, lines, None))
            yield window
    finally:
        if not ahead.done():  # the caller stopped early: let the thread finish before the file closes
            await asyncio.wait([ahead])
        if not ahead.cancelled():
            ahead.exception()  # retrieved, so a failure after the caller's own is not reported twice


async def _withhold_carriers(federation: Any, held: list[tuple[Any, Any, dict[str, MemoryEntry]]],
                             batch: Sequence[MemoryEntry], result: Any, copies: Any | None) -> int:
    """After a batch's write: in each tier that took it, what carries a memory a line changed (from
    ``held``, as :func:`_as_stored` read it) is withheld as that change withholds it. A line naming
    another agent's row (in a pool) was refused and changed nothing: what carries that row stays."""
    from memory.operator.edits import withhold_carriers_of

    reached = 0
    for tier, store, before in held:
        if tier.name in result.failed:  # nothing of the batch changed there
            continue
        written = [e for e in batch if e.id in before and before[e.id].agent_id == e.agent_id and e.id not in result.gone]
        reached += await withhold_carriers_of(
            store, before, written, "remembered", copies=copies if tier is federation.router.private else None
        )
    return reached


async def _as_stored(federation: Any, batch: Sequence[MemoryEntry], dated: set[str], reconcile: bool
                     ) -> tuple[list[MemoryEntry], int, list[tuple[Any, Any, dict[str, MemoryEntry]]]]:
    """``batch`` as the store already holds it, in one read of the tier each line is written to; the number
    left out; and per tier, (tier, its store, the memories it held that lines name).

    A line naming a stored memory (its ``id``, or the id its text derives)
    re-words it, but: undated, it keeps the time the memory was first stored
    (or a re-run would change it every time); it keeps the memory's
    restrictions, so routing never promotes a hidden or private one; and, with
    ``reconcile``, one deleted or purged there is left out before the
    reconciler decides on it, their number returned. The store itself makes
    sure of the last two when it writes (an entry is ``imported``: see
    memory.sqlite.mutations.upsert), so an operator's edit made after this
    read stands too, and without reconciliation that is the one check.
    """
    from memory.operator.edits import keep_restrictions
    from memory.protocols import admitting_of
    from memory.types import Audience, MemoryQuery

    by_tier: dict[int, tuple[Any, list[MemoryEntry]]] = {}
    for entry in batch:
        writable = [t for t in federation.router.route_write(entry) if not t.read_only]
        if writable:  # the first is where the memory lives: the private tier, or the pool's own store
            by_tier.setdefault(id(writable[0]), (writable[0], []))[1].append(entry)
    stored: dict[str, MemoryEntry] = {}
    removed: set[str] = set()
    per_tier: list[tuple[Any, Any, dict[str, MemoryEntry]]] = []
    for tier, entries in by_tier.values():
        store = admitting_of(tier.backend)
        if store is not None:
            ids = [e.id for e in entries]
            found = await store.admitted_by_id(MemoryQuery(), ids, audience=Audience.OPERATOR, include_archived=True)
            stored.update(found)
            per_tier.append((tier, store, found))
            if reconcile:  # else the write itself leaves them out (one read fewer a batch)
                removed |= await store.removed([i for i in ids if i not in found])
    kept = []
    for entry in batch:
        if entry.id in removed:
            continue
        held = stored.get(entry.id)
        if held is not None and held.agent_id == entry.agent_id:
            entry = keep_restrictions(held, entry)
            if entry.id not in dated:
                entry = entry.model_copy(update={"created_at": held.created_at, "updated_at": held.created_at})
        kept.append(entry)
    return kept, len(batch) - len(kept), per_tier
