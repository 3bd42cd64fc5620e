"""The data model shared by every adapter: entries, queries, prune policy and reports."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from enum import Enum, StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from memory.timespec import iso


def now_utc() -> datetime:
    return datetime.now(UTC)


class MemoryType(StrEnum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    PREFERENCE = "preference"


class MemoryScope(StrEnum):
    PRIVATE = "private"
    SHARED = "shared"
    GLOBAL = "global"


def pool_scope(scope: MemoryScope | str | None, pool: str | None, default: MemoryScope | None) -> MemoryScope | None:
    """The scope a write or read means: naming a pool implies shared (any other scope with it is
    refused); with neither, ``default`` (private for a write, every tier for a read)."""
    scope = MemoryScope(scope) if scope else None
    if pool:
        if scope not in (None, MemoryScope.SHARED):
            from memory.errors import InvalidRequestError

            raise InvalidRequestError(
                f"a pool is a shared tier: it cannot be combined with scope {scope.value}; drop the scope or the pool"
            )
        return MemoryScope.SHARED
    return scope or default


class RetrievalMode(StrEnum):
    keyword = "keyword"
    semantic = "semantic"
    hybrid = "hybrid"


# The one default, for the library, the CLI, MCP and ``arcana run``: hybrid
# (vector and keyword fused, confidence-weighted) measured best on real
# conversations through the federation (man/benchmarks.md, "Recall quality");
# with no healthy embedder it is served by keyword, with a notice.
DEFAULT_RETRIEVAL_MODE = RetrievalMode.hybrid


class Visibility(StrEnum):
    """Who may read an entry.

    ``visible`` entries are recalled; ``private`` ones are kept but never reach
    recall or any context builder; ``hidden`` is an operator quarantine. Only
    explicit operator reads show the latter two.
    """

    VISIBLE = "visible"
    PRIVATE = "private"
    HIDDEN = "hidden"


RESTRICTION = {Visibility.VISIBLE: 0, Visibility.PRIVATE: 1, Visibility.HIDDEN: 2}
"""How far each visibility keeps readers out: a write that must not loosen keeps the higher."""


class ConfidenceSource(StrEnum):
    USER_CONFIRMED = "user_confirmed"
    AGENT = "agent"
    INFERRED = "inferred"
    IMPORTED = "imported"


class PruneMode(StrEnum):
    ARCHIVE = "archive"
    PURGE = "purge"


def _agent_str(value: Any) -> Any:
    return str(value) if isinstance(value, uuid.UUID) else value


# Times are stored as epoch seconds (a double): from 1700 to 2199 every microsecond comes back
# exactly; further out they would not (and pydantic reads a number past 2e10 as milliseconds:
# 0001-01-01 came back as 1968-01-12). A time outside is refused, never rewritten.
EARLIEST, LATEST = datetime(1700, 1, 1, tzinfo=UTC), datetime(2200, 1, 1, tzinfo=UTC)


def stored_moment(at: object) -> float | None:
    """``at`` when it is a time (epoch seconds a memory could hold), else None ("?"/"never"): a damaged
    status file ("at": "2024-05-01", or 1e300) failed `quarantine list`, `doctor` and `vault status`
    with a traceback."""
    if isinstance(at, (int, float)) and not isinstance(at, bool) and EARLIEST.timestamp() <= at < LATEST.timestamp():
        return float(at)
    return None


TIME_FIELDS = ("created_at", "updated_at", "last_accessed_at", "valid_from", "valid_to")
"""A memory's times: stored as epoch seconds, given and shown as ISO 8601."""


def aware_utc(value: datetime | None) -> datetime | None:
    """``value`` with UTC assumed when it names no zone: stores and filters take ``timestamp()``,
    which reads a naive time in the process's TZ, so the same data would answer differently per TZ."""
    return value if value is None or value.tzinfo is not None else value.replace(tzinfo=UTC)


def storable_time(value: datetime) -> datetime:
    """``value`` in UTC (UTC when it names no zone) when a store keeps it exactly; ValueError otherwise."""
    aware = aware_utc(value)
    if not EARLIEST <= aware < LATEST:
        raise ValueError(f"{value.isoformat()} is outside the times a memory can hold exactly "
                         f"({EARLIEST.year}-01-01 to {LATEST.year - 1}-12-31)")
    return aware.astimezone(UTC)


class Audience(Enum):
    """Who is reading."""

    RECALL = "recall"  # anything that can reach an agent or a prompt
    OPERATOR = "operator"  # a human inspecting the store on purpose
    LISTING = "listing"  # a human listing what recall may see (archived on request); not a recall hit
    HISTORY = "history"  # an agent reading the past of its own memories: visible versions only, superseded too


PRUNE_ACTOR = ":prune"
"""How the ledger rows a prune writes end their actor (``{actor}:prune``): a memory prune archived
was not forgotten by an operator."""

DERIVED_TAG = "derived"
"""Tags a memory made from other memories or from what the model said (a turn's echo, a session
summary), not from what the user stated. A tag, so the mark travels through every export format;
derived memories rank below (:mod:`memory.federation.router`) and are pruned before the facts
they come from (man/memory.md, "Derived memories")."""


MAX_ACCESS_COUNT = 2**63 - 1
"""What SQLite's INTEGER (and PostgreSQL's bigint) holds: a larger access_count is a bad input, and
counting a read saturates here (past it SQLite turns the sum into a float no read could take back)."""


def normalise_tags(value: list[str]) -> list[str]:
    """Tags as they are stored: trimmed, without a leading ``#``, blanks and repeats dropped. A
    query's tags are read the same way, or ``--tag " work"`` or ``#work`` found nothing stored under it."""
    seen: dict[str, None] = {}
    for tag in value:
        tag = tag.strip().lstrip("#")
        if tag:
            seen.setdefault(tag, None)
    return list(seen)


def _required_tags(value: list[str] | None) -> list[str] | None:
    """A query's tags read as stored ones are; none left (``--tag ""``) is no tag filter."""
    return normalise_tags(value) or None if value is not None else None


def _distinct_types(value: list[MemoryType] | None) -> list[MemoryType] | None:
    """Each type once: a filter of 300,000 repeats (an MCP argument) became as many SQL variables,
    failed in SQLite, and the failures opened the store's breaker for every recall after it."""
    return list(dict.fromkeys(value)) if value is not None else None


class MemoryEntry(BaseModel):
    """One remembered thing.

    ``visibility=None`` on a write means "keep what is stored" (``visible`` for a
    new entry), so an automatic re-save can never lift an operator's quarantine.
    A superseded version keeps its row: ``valid_to`` ends it and
    ``superseded_by`` names its successor, which carries ``supersedes`` (and
    ``valid_from``). ``conflict_with`` marks an unconfirmed claim held beside
    the user-confirmed fact it contradicts. ``score``, ``matched_by``,
    ``tiers`` and ``snippet`` annotate search results and are never persisted.
    """

    model_config = ConfigDict(validate_assignment=True)

    id: str = Field(default_factory=lambda: str(uuid.uuid4()))
    agent_id: str
    type: MemoryType = MemoryType.EPISODIC
    content: str = Field(min_length=1)
    scope: MemoryScope = MemoryScope.PRIVATE
    pool_name: str | None = None
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    pinned: bool = False
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    confidence_source: ConfidenceSource = ConfidenceSource.USER_CONFIRMED
    conflict_with: str | None = None
    superseded_by: str | None = None
    tags: list[str] = Field(default_factory=list)
    source_session_id: str | None = None
    created_at: datetime = Field(default_factory=now_utc)
    updated_at: datetime = Field(default_factory=now_utc)
    last_accessed_at: datetime | None = None
    access_count: int = Field(default=0, le=MAX_ACCESS_COUNT)  # more is a bad input, not an OverflowError
    archived: bool = False
    visibility: Visibility | None = None
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    supersedes: str | None = None

    score: float | None = Field(default=None, exclude=True)
    matched_by: list[str] = Field(default_factory=list, exclude=True)
    tiers: list[str] = Field(default_factory=list, exclude=True)
    snippet: str | None = Field(default=None, exclude=True)  # the part of a long memory that matched
    sources: list[str] = Field(default_factory=list, exclude=True)  # a consolidated memory's: ids it carries
    # Written by an import (``remember --from``, ``import``): the store's upsert keeps what an operator set on
    # the row and leaves out an id it deleted or purged, in the write's own transaction (mutations.upsert).
    imported: bool = Field(default=False, exclude=True)
    # A `remember --from` line a chat export gives to a role other than the user's (an assistant's turn): stored
    # as imported, yet an agent's words, so one repeating a memory an operator withheld is stored withheld too.
    said_by_agent: bool = Field(default=False, exclude=True)

    _agent = field_validator("agent_id", mode="before")(_agent_str)

    @field_validator(*TIME_FIELDS)
    @classmethod
    def _storable_time(cls, value: datetime | None) -> datetime | None:
        return None if value is None else storable_time(value)

    @field_validator("content")
    @classmethod
    def _content_not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("content must not be blank")
        return value

    _tags = field_validator("tags")(normalise_tags)

    @property
    def derived(self) -> bool:
        """True for a memory made from other memories or from a model's answer (:data:`DERIVED_TAG`)."""
        return DERIVED_TAG in self.tags


MAX_QUERY_LIMIT = 10_000
"""The most rows one query may ask for: a read materialises every row up to its limit."""

MAX_QUERY_TAGS = 100
"""The most tags one query may require: each is a clause of the statement, and SQLite refuses a
statement nested past 1,000 levels, which a read would report as its tier failing."""


class MemoryQuery(BaseModel):
    """What to recall. Filters compose with AND; ``tags`` requires every tag.

    Recall reads current versions; ``as_of`` reads what was believed then
    (written by then, valid then, not yet superseded).
    """

    agent_id: str | None = None
    text: str | None = None
    retrieval_mode: RetrievalMode = DEFAULT_RETRIEVAL_MODE
    scope: MemoryScope | None = None
    pool_name: str | None = None
    types: list[MemoryType] | None = None
    tags: list[str] | None = Field(default=None, max_length=MAX_QUERY_TAGS)
    min_confidence: float | None = Field(default=None, ge=0.0, le=1.0)
    since: datetime | None = None
    until: datetime | None = None
    exclude_conflicts: bool = False
    as_of: datetime | None = None
    limit: int = Field(default=10, ge=1, le=MAX_QUERY_LIMIT)

    _agent = field_validator("agent_id", mode="before")(_agent_str)
    _times = field_validator("since", "until", "as_of")(aware_utc)
    _tags = field_validator("tags")(_required_tags)
    _types = field_validator("types")(_distinct_types)


class PrunePolicy(BaseModel):
    """Which entries a prune removes.

    The importance floor and the budgets compose into one victim set: an entry
    goes if it is below the floor *or* outside what the least-worth-first order
    (:mod:`memory.sqlite.prune_order`) keeps within ``max_entries`` live entries
    and ``max_bytes`` of their content. Pinned entries are never victims.
    """

    min_importance: float | None = Field(default=None, ge=0.0, le=1.0)
    max_entries: int | None = Field(default=None, ge=0)
    max_bytes: int | None = Field(default=None, ge=0)
    """Keep at most this many content bytes (UTF-8) of live entries, taken from the same order as the cap."""
    mode: PruneMode = PruneMode.ARCHIVE
    dry_run: bool = False
    within: frozenset[str] | None = Field(default=None, exclude=True)
    """Only these ids may go: a prune whose copies were followed first removes no more than it planned."""

    def restrict(self, victims: list[str]) -> list[str]:
        return victims if self.within is None else [v for v in victims if v in self.within]

    @model_validator(mode="after")
    def _has_a_rule(self) -> PrunePolicy:
        if self.min_importance is None and self.max_entries is None and self.max_bytes is None:
            raise ValueError("a prune policy needs min_importance, max_entries or max_bytes")
        return self


class PruneReport(BaseModel):
    scanned: int = 0
    archived: int = 0
    purged: int = 0
    condensed: int = 0
    """Digests rewritten shorter to meet a byte budget (SQLite: :mod:`memory.sqlite.condense`)."""
    dry_run: bool = False
    victim_ids: list[str] = Field(default_factory=list)
    condensations: list[dict] = Field(default_factory=list)
    """Each condensed digest: ``{"id", "bytes": [before, after], "content"}`` (its new text; null for a
    hidden or private one)."""

    def as_dict(self) -> dict:
        return self.model_dump(mode="json")


class HealthStatus(BaseModel):
    healthy: bool
    message: str = ""


class LedgerRecord(BaseModel):
    """One row of the append-only mutation ledger."""

    seq: int
    memory_id: str
    op: str
    actor: str
    at: datetime
    before: dict[str, Any] | None
    after: dict[str, Any] | None

    def changed_fields(self) -> list[str]:
        """The names of the fields this row changed (``updated_at`` aside), or ``(created)`` /
        ``(removed)``: what `memory history`, the web view and MCP `history` say, never the images."""
        if self.before is None or self.after is None:
            return ["(created)" if self.before is None else "(removed)"]
        return sorted(k for k in self.after if self.before.get(k) != self.after[k] and k != "updated_at")

    def typed(self) -> LedgerRecord:
        """This row with its images as `memory show --json` gives a memory (tags a list, pinned and
        archived booleans), not as the engine stored them; an image that does not read as a memory
        (an outside edit, a column a later schema added) is left as stored, so nothing is lost."""
        return self.model_copy(update={"before": _typed_image(self.before), "after": _typed_image(self.after)})

    @classmethod
    def from_row(cls, row: Any) -> LedgerRecord:
        """A ledger row as either engine returns it, its images parsed from JSON; one an outside edit
        left unreadable (an image that is not a JSON object, a time that is not one) is
        :class:`~memory.errors.UnreadableRowError` naming it, not a traceback."""
        from pydantic import ValidationError

        from memory.errors import UnreadableRowError

        try:
            return cls(
                seq=row["seq"], memory_id=row["memory_id"], op=row["op"], actor=row["actor"], at=row["at"],
                before=json.loads(row["before"]) if row["before"] else None,
                after=json.loads(row["after"]) if row["after"] else None,
            )
        except (ValueError, TypeError, ValidationError) as exc:  # JSONDecodeError is a ValueError
            what = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
            raise UnreadableRowError(
                f"ledger row {row['seq']} of memory {row['memory_id']} cannot be read ({what}); see `arcana doctor`"
            ) from None


def _typed_image(image: dict[str, Any] | None) -> dict[str, Any] | None:
    from pydantic import ValidationError

    if image is None:
        return None
    tags = image.get("tags")
    try:
        entry = MemoryEntry.model_validate({**image, "tags": json.loads(tags) if isinstance(tags, str) else tags})
    except (ValueError, ValidationError):  # JSONDecodeError is a ValueError
        return image
    return entry.model_dump(mode="json", include=set(image))


@dataclass
class FillReport:
    """What an embedding pass did: vectors written, rows skipped (with reasons)."""

    vec_table: str | None = None
    model: str | None = None
    total: int = 0
    embedded: int = 0
    chunks: int = 0  # chunk vectors written for long memories (see memory.sqlite.chunks)
    ops: list[str] = field(default_factory=list)  # per written entry: insert/update/noop/...
    skipped: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class Turn:
    prompt: str
    response: str
    at: datetime
    model: str | None = None
    recalled_ids: list[str] = field(default_factory=list)
    written_ids: list[str] = field(default_factory=list)
    replayed_ids: list[str] = field(default_factory=list)
    """Memories recalled by the earlier turns replayed to the model with this one (and theirs in
    turn): their answers, in its context, may have quoted them."""
    briefed: bool = False
    """Answered with the agent's memory in context though which memories is not known: a host's
    session, which began with `arcana context`'s briefing and may call the MCP recall tool."""

    @property
    def evidence(self) -> str | None:
        """The answer as something that may be remembered: None when recalled memories were in the
        model's context, directly or quoted by a replayed earlier answer, since the answer may restate
        them and, stored again, would read as new evidence of what it quoted (and outlive their hide)."""
        return None if self.recalled_ids or self.replayed_ids or self.briefed else self.response


@dataclass
class Session:
    id: str
    agent_id: str
    path: Path
    created_at: datetime
    turns: list[Turn] = field(default_factory=list)
    summary: str | None = None
    summary_memory_id: str | None = None
    closed_at: datetime | None = None

    @property
    def closed(self) -> bool:
        return self.closed_at is not None

    def as_dict(self, *, with_turns: bool = False, left_out: dict[int, dict[str, str]] | None = None,
                summary_left_out: dict[str, str] | None = None) -> dict[str, Any]:
        """The session as data. With ``left_out`` (see :func:`replay_exclusions`) a left-out
        turn carries ``left_out`` instead of its prompt and response; with ``summary_left_out``
        (see :func:`withheld_summaries`) the summary is None and that says why."""
        data: dict[str, Any] = {
            "id": self.id,
            "agent_id": self.agent_id,
            "created_at": iso(self.created_at),
            "closed_at": iso(self.closed_at) if self.closed_at else None,
            "turns": len(self.turns),
            "summary": None if summary_left_out else self.summary,
            "summary_memory_id": self.summary_memory_id,
            "summary_left_out": summary_left_out,
        }
        if with_turns:
            left_out = left_out or {}
            data["turns"] = [
                {
                    "prompt": None if i in left_out else t.prompt,
                    "response": None if i in left_out else t.response,
                    "at": iso(t.at),
                    "model": t.model,
                    "recalled_ids": t.recalled_ids,
                    "replayed_ids": t.replayed_ids,
                    "written_ids": t.written_ids,
                    "left_out": left_out.get(i),
                }
                for i, t in enumerate(self.turns)
            ]
        return data
