"""Operator edits of a memory, applied to every copy promotion made of it.

A promoted copy is the same memory — same id, same agent — in the global tier
(see :mod:`memory.promotion`). So whatever an operator does to an agent's
memory (hide, pin, archive, restore, purge, re-word, re-type, re-tag,
re-score, make current again) is done to that copy in the same call, each
store's change in its own ledger; so is the supersession reconciliation makes
when a newer fact replaces a promoted one (the old fact is no longer current
anywhere). Lowering importance below the promotion threshold withdraws the
copy; raising a promotable memory above it promotes one. Hidden means hidden
everywhere: a copy that cannot be reached makes the edit fail loudly
(:class:`LiveCopyError`) instead of reporting success while the copy is live.
Every operator mutator goes through :meth:`MemoryEditor.apply`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory import session_log
from memory.adapters.opener import made_yet, open_store, open_tier, server_url
from memory.adapters.sqlite import SQLiteAdapter
from memory.config import ArcanaConfig
from memory.deadline import DEADLINE
from memory.errors import InvalidRequestError, MemoryStorageError, NotFoundError, UnreadableRowError
from memory.home import Home
from memory.promotion import ever_promotable, global_copy, promotable, users_own
from memory.protocols import FindsWithheld, provenance_of
from memory.sqlite.admission import CONSOLIDATED
from memory.sqlite.fact_words import content_words
from memory.sqlite.mutations import REFUSED
from memory.store_kinds import StoreKind, store_path
from memory.types import RESTRICTION, Audience, MemoryEntry, MemoryQuery, MemoryScope, Visibility

MUTATORS = (
    "archive", "restore", "purge", "set_visibility", "set_pinned", "update", "make_current", "supersede", "reinforce"
)
"""Every operator mutation, by the :class:`SQLiteAdapter` method that performs it
(``supersede``, with the successor's (id, valid time) as its value, and ``reinforce``,
with its (step, confirm, asserted), are reconciliation's)."""

EDITABLE = ("content", "tags", "type", "importance", "pinned", "visibility")
"""The fields an operator's ``update`` sets (`memory set`, a revert, an import's line)."""

GUARDED = ("archive", "restore", "set_visibility", "set_pinned")
"""The edits a ledger seq can guard (see :attr:`Edit.expect_seq`): the web view's actions."""


@dataclass
class Edit:
    """One operator mutation: ``op`` from :data:`MUTATORS`, with its ``value``
    (a visibility, a pinned flag, a successor's (id, valid time), a reinforce's (step, confirm, asserted)) or, for
    ``update``, the field ``changes``."""

    op: str
    value: Any = None
    changes: Mapping[str, Any] = field(default_factory=dict)
    expect_seq: int | None = None
    """The memory's newest ledger seq as its editor saw it: the edit is refused
    (:class:`StaleEditError`) if the memory changed since. Copies are not checked."""

    def __post_init__(self) -> None:
        if self.op not in MUTATORS:
            raise ValueError(f"unknown operator edit '{self.op}'; one of {', '.join(MUTATORS)}")
        if self.expect_seq is not None and self.op not in GUARDED:
            raise ValueError(f"an operator edit '{self.op}' cannot be checked against a ledger seq; one of {', '.join(GUARDED)}")

    async def on(self, store: SQLiteAdapter, entry_id: str, *, guarded: bool = False) -> bool:
        """Apply to ``entry_id`` in ``store`` (ledgered there); True when something changed.
        ``guarded``: this is the edited memory itself, so ``expect_seq`` is checked."""
        if guarded and self.expect_seq is not None:
            args = () if self.value is None else (self.value,)
            return bool(await getattr(store, self.op)([entry_id], *args, expect_seq=self.expect_seq))
        if self.op == "update":
            before = await _operator_get(store, entry_id)
            after = await store.update(entry_id, **self.changes)
            return before is None or before.model_dump() != after.model_dump()
        if self.op == "make_current":
            return bool(await store.make_current(entry_id))
        if self.op == "reinforce":
            return bool(await store.reinforce(entry_id, *self.value))
        if self.op == "supersede":
            return bool(await store.supersede([entry_id], *self.value))
        args = () if self.value is None else (self.value,)
        return bool(await getattr(store, self.op)([entry_id], *args))


@dataclass
class CopyChange:
    """What an edit did to one copy: ``op`` is the edit's own, or ``withdraw`` / ``promote``, or
    ``refused`` (a promotion the global tier refused: it holds that id for another agent)."""

    tier: str
    op: str
    changed: bool
    count: int | None = None  # how many copies, for a bulk change (a prune, an agent's removal)

    def as_dict(self) -> dict:
        data = {"tier": self.tier, "op": self.op, "changed": self.changed}
        return data if self.count is None else {**data, "count": self.count}


@dataclass
class EditReport:
    """An applied edit: the entry as it now stands (None once purged) and what happened to its copies."""

    entry_id: str
    changed: bool
    entry: MemoryEntry | None
    copies: list[CopyChange] = field(default_factory=list)
    carriers: list[EditReport] = field(default_factory=list)  # consolidated memories the edit reached


def withheld_count(reports: Iterable[EditReport]) -> int:
    """How many memories a withholding edit changed through ``reports`` (its ``carriers``), at every
    depth: a digest that carries a digest is withheld too, and counted."""
    return sum(int(r.changed) + withheld_count(r.carriers) for r in reports)


class LiveCopyError(MemoryStorageError):
    """The edit committed where it could, but a copy could not be reached and is still live."""


async def _operator_get(store: SQLiteAdapter, entry_id: str) -> MemoryEntry | None:
    return await store.get(entry_id, audience=Audience.OPERATOR, include_archived=True)


async def resolve(store: SQLiteAdapter, prefix: str) -> MemoryEntry:
    """Exact id, or a unique prefix of 6+ characters (operator read: any visibility, archived too)."""
    entry = await _operator_get(store, prefix)
    if entry is not None:
        return entry
    matches = await store.find_by_prefix(_long_enough(prefix), PREFIX_MATCHES)
    if len(matches) == 1:
        return matches[0]
    _ambiguous(prefix, matches)
    raise NotFoundError(f"no memory with id '{prefix}'")


async def resolve_recorded(store: SQLiteAdapter, prefix: str) -> str:
    """The id ``prefix`` names among the memories the ledger has recorded, purged ones too (their history stays)."""
    try:
        return (await resolve(store, prefix)).id  # a prefix too short is refused here
    except (NotFoundError, UnreadableRowError):  # gone, or a row an outside edit left unreadable
        ids = await store.ledger_ids(prefix, PREFIX_MATCHES)
        if len(ids) == 1:
            return ids[0]
        _ambiguous(prefix, ids)
        raise


MIN_PREFIX = 6  # a shorter id must match exactly (the CLI and MCP alike)
PREFIX_MATCHES = 50  # most matches a prefix lookup reads: enough to say how ambiguous, never a whole store


def _long_enough(prefix: str) -> str:
    if len(prefix) < MIN_PREFIX:
        raise InvalidRequestError(
            f"'{prefix}' is too short for a memory id prefix; use at least {MIN_PREFIX} characters (or the full id)"
        )
    return prefix


def ambiguous_prefix(prefix: str, found: int) -> str:
    """The answer for a prefix ``found`` (at most :data:`PREFIX_MATCHES`) memories start with: at the
    cap, "50 or more", since the lookup stopped there and there may be many more."""
    count = f"{found} or more" if found >= PREFIX_MATCHES else str(found)
    return f"memory id prefix '{prefix}' is ambiguous ({count} matches); give more characters"


def _ambiguous(prefix: str, matches: list) -> None:
    if len(matches) > 1:
        raise NotFoundError(ambiguous_prefix(prefix, len(matches)))


def keep_restrictions(stored: MemoryEntry, incoming: MemoryEntry) -> MemoryEntry:
    """``incoming`` for a row that ``stored`` already is, never less restricted: the stricter
    visibility, archived if either is. An import of a file written before an operator hid or
    archived a memory must not undo that; lifting one is ``memory set`` / ``memory restore``."""
    visibility = max(
        (v for v in (stored.visibility, incoming.visibility) if v is not None),
        key=RESTRICTION.__getitem__,
        default=None,
    )
    return incoming.model_copy(update={"visibility": visibility, "archived": stored.archived or incoming.archived})


async def _ever_promoted(source: SQLiteAdapter, entry_ids: Sequence[str]) -> bool:
    """Whether any of ``entry_ids`` was promotable in some version ``source``'s ledger holds: only
    then can the global tier hold a copy (asked when that tier cannot be reached)."""
    return ever_promotable(await source.ledger(entry_ids))


LEDGER_PAGE = 5_000  # ledger rows read at a time over a whole store (memory stays bounded)
ALIGN_PAGE = 500  # copies a restore checks at a time (GlobalCopies.align)


async def _agent_ever_promoted(source: SQLiteAdapter) -> bool:
    """:func:`_ever_promoted` over an agent's whole store, a page at a time, stopping at the first
    promotable version; a store that cannot be read may have been promoted."""
    after = 0
    try:
        while page := await source.ledger(None, after=after, limit=LEDGER_PAGE):
            if ever_promotable(page):
                return True
            after = page[-1].seq
    except MemoryStorageError:
        return True
    return False


async def embed_rows(store: Any, ids: Sequence[str], home: Home, config: ArcanaConfig) -> None:
    """Give the rows of ``ids`` that an edit wrote or re-worded in ``store`` (opened bare, so stored
    without) their vectors now: else semantic recall missed them, and `doctor` failed, until an
    `arcana reindex`. Rows whose vector is current are left as they are; with no embedder
    configured, or one that fails, `reindex` does it later."""
    from memory.embedding.factory import build_gateway, embedder_names

    if not ids or not embedder_names(config.embedding):
        return
    from memory.adapters.opener import vector_adapter

    gateway = build_gateway(config.embedding, home)
    token = DEADLINE.set(None)  # the edit is done: a tier's write budget does not cover a model's load
    try:
        if isinstance(store, SQLiteAdapter):
            await vector_adapter(store, config.embedding, home, gateway=gateway).complete(list(ids))
        else:
            await store.complete(list(ids), gateway=gateway)
    except MemoryStorageError:
        pass  # the row stands; `doctor` names the rows without vectors and `reindex` embeds them
    finally:
        DEADLINE.reset(token)


class GlobalCopies:
    """The global tier as seen from one agent's memories: the copies its promotion made.

    Opened on first need, never created: no ``global.db`` means no copies.
    Each call is bounded by ``timeout`` seconds (the global tier's write
    budget), lock waits included, so a global tier held by another writer
    fails the edit quickly instead of stalling it.
    """

    TIER = "global"

    def __init__(self, home: Home, *, actor: str, timeout: float, promote: bool = True, config: ArcanaConfig | None = None):
        self.home = home
        self.config = config or ArcanaConfig()
        self.on_server = server_url(self.config, StoreKind.GLOBAL) is not None
        self.path = home.global_db
        self.actor = actor
        self.timeout = timeout
        self.promote = promote
        self._store: SQLiteAdapter | None = None

    @classmethod
    def of_home(cls, home: Home, config: ArcanaConfig, *, actor: str) -> GlobalCopies:
        """The home's global tier with its configured write budget; promotes only while global memory is on."""
        from memory.budgets import ConnectionsConfig

        budget = ConnectionsConfig.load(home.connections_path).global_
        return cls(
            home, actor=actor, timeout=budget.write_timeout_ms / 1000, promote=config.memory.global_ != "none", config=config
        )

    async def aclose(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            await store.aclose()

    async def _open(self) -> Any:
        if self._store is None:
            self._store = open_tier(self.home, StoreKind.GLOBAL, config=self.config, actor=self.actor)
            self.path = self._store.path  # a server's URL is shown masked
        await self._store.connect()
        return self._store

    async def copy_of(self, entry: MemoryEntry) -> MemoryEntry | None:
        """The copy promotion made of ``entry`` (same id, same agent; any visibility, archived
        too), or None: what an operator is shown beside the memory."""
        if not self.may_hold_copies:
            return None
        token = DEADLINE.set(time.monotonic() + self.timeout)
        try:
            copy = await _operator_get(await self._open(), entry.id)
        finally:
            DEADLINE.reset(token)
        return copy if copy is not None and copy.agent_id == entry.agent_id else None

    async def _embedded(self, store: Any, ids: Sequence[str]) -> None:
        """Copies written or re-worded here get their vectors now, as a promotion at write time does."""
        await embed_rows(store, ids, self.home, self.config)

    @staticmethod
    async def _free_absorbed(store: Any, ids: Sequence[str], said: Mapping[str, str] | None = None) -> None:
        """After copies ``ids`` were withheld, purged or re-worded: the copies `consolidate --global`
        archived into them answer as themselves again when no live copy carries them any more (one
        withheld, or another live copy carrying it, stays), or when new text took words they say out of
        the one carrying them (``said``: id to its words before). Why: they answered nobody while their
        originals still answered the agent, so every other agent lost the fact. One step for a single
        edit, a prune and an import alike."""
        if not ids or (held := provenance_of(store)) is None:
            return
        absorbed = await held.sources(ids, quoted=False)
        await held.stand_alone(sorted({source for found in absorbed.values() for source in found}))
        for carrier_id, old in (said or {}).items():
            carrier = await _operator_get(store, carrier_id)
            lost = content_words(old) - content_words(carrier.content if carrier is not None else "")
            carried = await held.carried(absorbed.get(carrier_id, []))
            worded_out = [i for i in sorted(carried)
                          if (row := await _operator_get(store, i)) is not None and content_words(row.content) & lost]
            if worded_out:
                await store.restore(worded_out)

    @property
    def may_hold_copies(self) -> bool:
        """False when there is no global tier at all (no server configured, no ``global.db``)."""
        return self.on_server or self.path.exists()

    async def follow_many(
        self, source: SQLiteAdapter, agent_id: str, entry_ids: Sequence[str], op: str, verb: str,
        *, dry_run: bool = False,
    ) -> CopyChange | None:
        """Archive or purge (``op``) the copies of ``agent_id``'s ``entry_ids`` (memories of ``source``):
        what a prune does to them.

        One bulk change in the global tier's ledger; None when there is no
        global tier. A tier that cannot be reached raises :class:`LiveCopyError`,
        unless none of the memories was ever promotable. ``dry_run`` changes
        nothing and counts what the change would (an archived copy is not archived again),
        so a prune's dry run reports the copies its real run takes.
        """
        if op not in ("archive", "purge"):
            raise ValueError(f"copies follow an archive or a purge, not '{op}'")
        if not entry_ids or not self.may_hold_copies:
            return None
        token = DEADLINE.set(time.monotonic() + self.timeout)
        try:
            store = await self._open()
            copies = await store.admitted_by_id(
                MemoryQuery(agent_id=agent_id), entry_ids, audience=Audience.OPERATOR, include_archived=True
            )
            mine = list(copies)
            if dry_run:
                changed = sum(op == "purge" or not copy.archived for copy in copies.values())
            else:
                changed = await getattr(store, op)(mine) if mine else 0
                if changed:
                    await self._free_absorbed(store, mine)
            return CopyChange(self.TIER, op, bool(changed), count=changed)
        except (MemoryStorageError, TimeoutError) as exc:
            if not await _ever_promoted(source, entry_ids):
                return None  # nothing of these memories can be there
            raise LiveCopyError(
                f"{len(entry_ids)} memories are to be {verb} in the agent's store, but the global tier at "
                f"{self.path} could not be reached ({exc}), so their copies may still be live; nothing was "
                "changed in the agent's store: run the same command again once the global tier is reachable"
            ) from exc
        finally:
            DEADLINE.reset(token)

    async def mirror(
        self, source: SQLiteAdapter, entries: Sequence[MemoryEntry], verb: str,
        before: Mapping[str, MemoryEntry] | None = None, *, dry_run: bool = False,
    ) -> CopyChange | None:
        """Bring the copies of ``entries`` (what memories of ``source`` are about to become) in line
        first: rewritten, never less restricted than they are, or withdrawn when no longer promotable.
        With ``before`` (the memories as ``source`` holds them now), a copy gets only what changes
        from that to the entry (:func:`_followed`), as an operator edit reaches it: an unchanged
        line of an import leaves it as it is, words an operator gave the copy itself included.

        Before ``source`` changes, so a tier that cannot be reached leaves
        the agent's memories as they were (:class:`LiveCopyError`) unless
        none of them was ever promotable; None when nothing was there.
        ``dry_run`` changes nothing and counts the copies that would be withdrawn
        or given new text, so a prune's dry run reports the copies its condensing rewrites.
        """
        if not entries or not self.may_hold_copies:
            return None
        token = DEADLINE.set(time.monotonic() + self.timeout)
        try:
            store = await self._open()
            by_agent: dict[str, list[MemoryEntry]] = {}
            for entry in entries:
                by_agent.setdefault(entry.agent_id, []).append(entry)
            changed = 0
            for agent_id, mine in by_agent.items():
                copies = await store.admitted_by_id(
                    MemoryQuery(agent_id=agent_id), [e.id for e in mine], audience=Audience.OPERATOR, include_archived=True
                )
                gone = [e.id for e in mine if e.id in copies and not promotable(e)]
                kept = [
                    keep_restrictions(copies[e.id], _followed(copies[e.id], (before or {}).get(e.id), e))
                    for e in mine if e.id in copies and promotable(e)
                ]
                if dry_run:
                    changed += len(gone) + sum(k.content != copies[k.id].content for k in kept)
                    continue
                changed += await store.withdraw(gone) if gone else 0
                ops = await store.write_many(kept) if kept else []
                rewritten = [k.id for k, op in zip(kept, ops, strict=True) if op != "noop"]
                changed += len(rewritten)
                await self._embedded(store, [e.id for e in kept])
                await self._free_absorbed(store, [*gone, *rewritten], {i: copies[i].content for i in rewritten})
            return CopyChange(self.TIER, "update", bool(changed), count=changed) if changed else None
        except (MemoryStorageError, TimeoutError) as exc:
            if not await _ever_promoted(source, [e.id for e in entries]):
                return None  # nothing of these memories can be there
            raise LiveCopyError(
                f"{len(entries)} memories are to be {verb} in the agent's store, but the global tier at {self.path} "
                f"could not be reached ({exc}), so their copies would be left as they were; nothing was changed in "
                "the agent's store: run the same command again once the global tier is reachable"
            ) from exc
        finally:
            DEADLINE.reset(token)

    async def withdraw_agent(self, agent_id: str, source: SQLiteAdapter | None) -> CopyChange | None:
        """Withdraw every copy ``agent_id``'s memories have (any visibility, archived too): the agent is going.

        ``source`` is the agent's store (None if it has none): a tier that
        cannot be reached fails the deletion unless no memory in its ledger was
        ever promotable.
        """
        if not self.may_hold_copies:
            return None
        token = DEADLINE.set(time.monotonic() + self.timeout)
        withdrawn = 0
        try:
            store = await self._open()
            query = MemoryQuery(agent_id=agent_id, limit=10_000)
            while batch := await store.search(query, audience=Audience.OPERATOR, include_archived=True):
                removed = await store.withdraw([e.id for e in batch if e.agent_id == agent_id])
                withdrawn += removed
                if not removed:
                    break
            return CopyChange(self.TIER, "withdraw", bool(withdrawn), count=withdrawn)
        except (MemoryStorageError, TimeoutError) as exc:
            if source is None or not await _agent_ever_promoted(source):
                return None  # nothing of this agent's can be there
            raise LiveCopyError(
                f"the global tier at {self.path} could not be reached ({exc}), so the agent's promoted copies "
                "may still be live; the agent was not deleted: run the same command again once it is reachable"
            ) from exc
        finally:
            DEADLINE.reset(token)

    async def align(self, source: SQLiteAdapter, agent_id: str, *, page: int = ALIGN_PAGE,
                    replaced: SQLiteAdapter | None = None) -> dict[str, int]:
        """Bring every copy ``agent_id`` has here in line with its original in ``source``, the agent's
        store: what a restore must do, since a backup holds the agent's store but not a server's copies.

        A copy whose original is no longer promotable (hidden, private, lowered, an agent's claim) or
        was purged is withdrawn, and so is one whose original only ``replaced`` (the agent's store the
        restore moved to the trash) recorded: a memory made after the backup, which the restore took
        away; an archived or superseded original archives or supersedes a copy still live, unless
        consolidation archived it into a memory that still answers for it (its copy is left live, as
        consolidation leaves it). Everything else is left: an original no ledger recorded is a memory
        written to this tier directly.
        Copies are read a page at a time, each past the last (no page reads the ones before it
        again), and each page costs one read of the originals, one of their ledger, one of what
        consolidation still carries and one bulk change per kind, each bounded by the tier's write
        budget. Returns the count per change; a tier that cannot be reached raises
        :class:`LiveCopyError`.
        """
        done = {"withdraw": 0, "archive": 0, "supersede": 0}
        after = 0
        try:
            store = await self._open()
            while True:
                token = DEADLINE.set(time.monotonic() + self.timeout)
                try:
                    copies, last = await store.page_after(MemoryQuery(agent_id=agent_id, limit=page), after,
                                                          audience=Audience.OPERATOR, include_archived=True)
                    if last == after:
                        return done
                    mine = [c for c in copies if c.agent_id == agent_id]
                    originals = await source.admitted_by_id(
                        MemoryQuery(agent_id=agent_id), [c.id for c in mine], audience=Audience.OPERATOR,
                        include_archived=True)
                    missing = [c.id for c in mine if c.id not in originals]
                    recorded = {r.memory_id for r in await source.ledger(missing)} if missing else set()
                    if replaced is not None and (unrecorded := [i for i in missing if i not in recorded]):
                        recorded |= {r.memory_id for r in await replaced.ledger(unrecorded)}
                    gone = [c.id for c in mine if c.id in recorded or (c.id in originals and not promotable(originals[c.id]))]
                    live = [(c, originals[c.id]) for c in mine if c.id in originals and c.id not in gone]
                    withdrawn = await store.withdraw(gone) if gone else 0
                    ended = [c.id for c, o in live if o.archived and not c.archived]
                    # A restatement a merge (or a digest) still answers for: consolidation leaves its copy live.
                    carried = await held.carried(ended) if ended and (held := provenance_of(source)) else set()
                    archived = [i for i in ended if i not in carried]
                    done["archive"] += await store.archive(archived) if archived else 0
                    for c, o in live:  # rare: a fact superseded in the backup, made current again since
                        if o.valid_to is not None and o.superseded_by and c.valid_to is None:
                            done["supersede"] += len(await store.supersede([c.id], o.superseded_by, o.valid_to))
                finally:
                    DEADLINE.reset(token)
                done["withdraw"] += withdrawn
                after = last
        except (MemoryStorageError, TimeoutError) as exc:
            raise LiveCopyError(
                f"the copies of agent {agent_id} on the global tier at {self.path} could not be checked ({exc})"
            ) from exc

    async def reach_carriers(self, source: SQLiteAdapter, entry_id: str, edit: Edit, verb: str,
                             *, ended: bool = True, successor: str | None = None,
                             origin: MemoryEntry | None = None) -> list[EditReport]:
        """A hide, forget or purge of ``entry_id`` (a memory of ``source``) reaches the consolidated
        memories of the global tier that carry its copy (a digest ``consolidate --global`` made of it),
        as it reaches those of the agent's store; so does a supersession that ``ended`` it, and
        making it current again (its old ``successor``), as in the agent's store: the global digest
        of "my sister lives in Lisbon" kept answering every agent after "she lives in Porto now".
        [] when the edit reaches no carrier or no tier is there.

        The copy's edges outlive a withdrawn or purged copy, so they are found after it went. A tier
        that cannot be reached raises :class:`LiveCopyError` unless the memory was never promotable.
        """
        versioning = edit.op in ("supersede", "make_current")
        if (_withholding(edit) is None and not versioning) or not self.may_hold_copies:
            return []
        token = DEADLINE.set(time.monotonic() + self.timeout)
        try:
            report = EditReport(entry_id, False, None)
            await MemoryEditor(await self._open())._reach_carriers(
                entry_id, edit, verb, report, {entry_id}, ended=ended, successor=successor, origin=origin)
            return report.carriers
        except (MemoryStorageError, TimeoutError) as exc:
            if not await _ever_promoted(source, [entry_id]):
                return []  # no copy of this memory can have been consolidated there
            raise LiveCopyError(
                f"memory {entry_id} was {verb} in the agent's store, but the global tier at {self.path} could not "
                f"be reached ({exc}), so what carries its copy there may still be live; run the same command "
                "again once the global tier is reachable"
            ) from exc
        finally:
            DEADLINE.reset(token)

    async def follow(
        self, source: SQLiteAdapter, before: MemoryEntry, after: MemoryEntry | None, edit: Edit, verb: str,
        *, first: bool = False,
    ) -> CopyChange | None:
        """Bring the copy of ``before`` (a memory of ``source``) in line with ``after`` (None: purged);
        None when there is no copy to touch.

        ``first``: the agent's store is edited after this (a purge), so a copy
        that cannot be reached leaves the agent's memory as it was. An
        unreachable tier fails the edit unless no version of the memory in
        ``source``'s ledger was ever promotable: a run that failed after
        lowering the importance must fail again, not report the copy gone.
        """
        # Promotion needs a user-confirmed or operator write: never an asserted restatement.
        asserted = edit.op == "reinforce" and edit.value[2]
        raised = self.promote and (
            edit.op in ("update", "reinforce", "set_visibility") and not asserted
            and after is not None and promotable(after) and not promotable(before)
        )
        if not self.may_hold_copies and not raised:  # a home's first promotion makes its global tier
            return None
        at_stake = promotable(before) or (after is not None and promotable(after))
        copy: MemoryEntry | None = None
        token = DEADLINE.set(time.monotonic() + self.timeout)
        try:
            store = await self._open()
            copy = await _operator_get(store, before.id)
            if copy is not None and copy.agent_id != before.agent_id:
                copy = None  # the same id from another agent is not this agent's copy
            if copy is None:
                if raised:
                    if await store.write_many([await _promoted(source, after)]) == [REFUSED]:
                        return CopyChange(self.TIER, REFUSED, False)  # the id is another agent's copy there
                    await self._embedded(store, [after.id])
                    return CopyChange(self.TIER, "promote", True)
                return None
            if after is None:
                change = CopyChange(self.TIER, "purge", bool(await store.purge([before.id])))
            elif not promotable(after):
                change = CopyChange(self.TIER, "withdraw", bool(await store.withdraw([before.id])))
            else:
                change = CopyChange(self.TIER, edit.op, await edit.on(store, before.id))
                await self._embedded(store, [before.id])
            if change.changed:
                reworded = after is not None and edit.op == "update" and "content" in edit.changes
                await self._free_absorbed(store, [before.id], {before.id: copy.content} if reworded else None)
            return change
        except (MemoryStorageError, TimeoutError) as exc:
            if copy is None and not at_stake and not await _ever_promoted(source, [before.id]):
                return None  # nothing of this memory can be there: the edit stands on its own
            state = "is still live, unchanged" if copy is not None else "may still be live"
            done = f"was not {verb}: " if first else f"was {verb} in the agent's store, but "
            raise LiveCopyError(
                f"memory {before.id} {done}its global copy in {self.path} "
                f"{state} ({exc}); run the same command again once the global tier is reachable"
            ) from exc
        finally:
            DEADLINE.reset(token)


class MemoryEditor:
    """Operator edits of one store's memories; with ``copies``, of the agent's promoted copies too;
    with ``originals`` (the global tier's editor), of the agents' memories its copies were promoted from;
    with ``quoters``, of the other agents' claims quoting a shared memory it withholds."""

    def __init__(self, store: SQLiteAdapter, *, copies: GlobalCopies | None = None,
                 embedding: tuple[Home, ArcanaConfig] | None = None, originals: Originals | None = None,
                 quoters: Quoters | None = None, sessions: Path | None = None):
        self.store = store
        self.sessions = sessions  # the agent's session files: a purge takes the memory's text out of them
        self.copies = copies
        self.embedding = embedding  # re-worded rows are embedded with the home's configured model
        self.originals = originals
        self.quoters = quoters

    async def resolve(self, prefix: str) -> MemoryEntry:
        """The memory ``prefix`` names, any visibility, with its ``sources`` if it is consolidated."""
        entry = await resolve(self.store, prefix)
        await self.name_sources([entry])
        return entry

    async def name_sources(self, entries: list[MemoryEntry]) -> None:
        """Give each consolidated one of ``entries`` its ``sources`` (one read): `memory list` names what
        a merge or digest carries as `memory show`, recall and the MCP tools do."""
        if entries and (store := provenance_of(self.store)) is not None:
            found = await store.sources([e.id for e in entries])
            for entry in entries:
                entry.sources = found.get(entry.id, [])

    async def resolve_recorded(self, prefix: str) -> str:
        return await resolve_recorded(self.store, prefix)

    async def apply(
        self, entry_id: str, edit: Edit, *, verb: str | None = None, seen: set[str] | None = None, sources: bool = True
    ) -> EditReport:
        """Apply ``edit`` to ``entry_id`` here, then to every copy and to what carries it
        (:meth:`_reach_carriers`); raise :class:`LiveCopyError` when a copy stays live. ``verb``
        names the edit in that error."""
        before = await _operator_get(self.store, entry_id)
        if before is None:
            raise NotFoundError(f"no memory with id '{entry_id}'")
        if edit.op == "update" and edit.changes.get("content", before.content) == before.content:
            # The text it already has (a revert of other fields): no old words to withdraw (_withholding).
            edit = Edit("update", changes={k: v for k, v in edit.changes.items() if k != "content"})
        # Trigger: an edit that changes a copy before the agent's own memory (every edit of a copy, a
        # purge through the agent). Why: another writer holding the agent's store failed it after the
        # copy had changed: hidden, forgotten or purged for every other agent while the original
        # answered its own (after a purge, with nothing a re-run could find); checking the store
        # first still let a writer in between the two. Outcome: the agent's store is write-locked
        # before anything changes and until both have, so a writer there fails it with neither
        # changed, or waits for both.
        if self.originals is not None:
            held = self.originals.held([before])
        else:
            held = self.store.write_locked() if edit.op == "purge" and self.copies is not None else nullcontext()
        async with held:
            return await self._apply(entry_id, before, edit, verb, seen, sources)

    async def _apply(self, entry_id: str, before: MemoryEntry, edit: Edit, verb: str | None, seen: set[str] | None,
                     sources: bool) -> EditReport:
        change = None
        if edit.op == "purge" and self.copies is not None:
            # The copy first: once the row is gone a re-run could not find it to try the copy again.
            change = await self.copies.follow(self.store, before, None, edit, verb or edit.op, first=True)
        if edit.op == "purge" and self.sessions is not None:
            # Before the row: once it is gone a re-run could not find the text to take out.
            words = content_words(before.content)
            session_log.erase(self.sessions, entry_id, before.content, lambda said: bool(words & content_words(said)))
        changed = await edit.on(self.store, entry_id, guarded=True)
        if changed and _visibility_set(edit) is Visibility.VISIBLE and (held := provenance_of(self.store)) is not None:
            # Trigger: a restatement a merge archived, shown again. Why: its hide reached the keeper
            # carrying it, which stays hidden, so its words answered nowhere. Outcome: it stands on its
            # own, as a restored source does; one whose carrier answers stays carried.
            await held.stand_alone([entry_id])
        after = await _operator_get(self.store, entry_id)
        if self.embedding is not None and after is not None and after.content != before.content:
            await embed_rows(self.store, [entry_id], *self.embedding)
        if edit.op != "purge" and self.copies is not None:
            change = await self.copies.follow(self.store, before, after, edit, verb or edit.op)
        report = EditReport(entry_id, changed, after)
        if change is not None:
            report.copies.append(change)
        seen = seen or {entry_id}
        await self._reach_carriers(entry_id, edit, verb, report, seen, ended=changed, successor=before.superseded_by,
                                   origin=before)
        down = edit if edit.op == "supersede" else _withholding(edit)
        if down is not None and changed:
            await self._reach_words(before, down, verb or edit.op, report, seen, sources=sources)
        if edit.op == "make_current" and changed and sources:
            await self._bring_back_restatements(before, edit, verb, report, seen)
        if edit.op == "restore" and changed and sources:
            await self._restore_what_it_carries(before, edit, verb or edit.op, report, seen)
        if changed and sources and _withholding(edit) is None and _visibility_set(edit) is Visibility.VISIBLE:
            await self._show_what_its_hide_reached(before, verb or edit.op, report, seen)
        if self.copies is not None:  # and what carries its copy in the global tier
            report.carriers += await self.copies.reach_carriers(
                self.store, entry_id, edit, verb or edit.op,
                ended=changed or any(c.changed for c in report.copies), successor=before.superseded_by, origin=before,
            )
        if changed and edit.op == "purge" and (held := provenance_of(self.store)) is not None:
            # Trigger: a purged digest or merge (or one a purge of its source reached). Why: the turns it
            # carried stayed archived by consolidation with nothing carrying them, answering nowhere.
            # Outcome: each stands on its own again, as a restored source does.
            await held.stand_alone((await held.sources([entry_id], quoted=False)).get(entry_id, []))
        if self.originals is not None and (original := await self.originals.apply(before, edit, verb or edit.op)):
            report.copies += [CopyChange("private", edit.op, original.changed), *(c for c in original.copies if c.changed)]
            report.carriers += original.carriers
        if self.quoters is not None and changed and (withheld := _withholding(edit)) is not None and (
                before.scope is not MemoryScope.PRIVATE or any(c.changed for c in report.copies)):
            report.carriers += await self.quoters.reach(entry_id, withheld, verb or edit.op)
        return report

    async def withhold_carriers(self, before: MemoryEntry, edit: Edit, verb: str) -> list[EditReport]:
        """For ``edit`` already made by another writer (an import's upsert) to the memory ``before``
        was: what carries it here, what else says its words (:meth:`_reach_words`) and what carries
        its copy in the global tier get what the edit withholds, as :meth:`apply` gives them."""
        report = EditReport(before.id, False, None)
        seen = {before.id}
        await self._reach_carriers(before.id, edit, verb, report, seen, origin=before)
        await self._reach_words(before, edit, verb, report, seen)
        if self.copies is not None:
            report.carriers += await self.copies.reach_carriers(self.store, before.id, edit, verb)
        return report.carriers

    async def _reach_words(self, before: MemoryEntry, down: Edit, verb: str, report: EditReport, seen: set[str],
                           *, sources: bool = True) -> None:
        """``down`` (a supersession, or what an edit withholds) reaches the other rows holding the words
        ``before`` held: the newer versions repeating them, and unless this row is itself a carrier an
        edit of its source reached (``sources`` False), its restatements and its sources' copies."""
        if down.op != "supersede":
            await self._reach_later_versions(before, down, verb, report, seen)
        if sources:
            await self._reach_restatements(before, down, verb, report, seen)
            if down.op != "supersede" and self.copies is not None:
                await self._withhold_source_copies(before.id, down, verb, report, seen)

    async def _reach_carriers(self, entry_id: str, edit: Edit, verb: str | None, report: EditReport, seen: set[str],
                              ended: bool = True, successor: str | None = None, origin: MemoryEntry | None = None) -> None:
        """A hide or forget of a memory reaches the consolidated memories that carry its content
        (and their copies): a digest is never more visible than what it carries; a purge purges those
        quoting its words (:func:`_quotes`). Of ``origin``
        (the memory as it was), never the user's own statement a merge kept over it (:func:`reaches`).

        So does a supersession that ended it (``ended``): a session's summary or a turn's echo saying
        "I live in Berlin" kept answering beside "I live in Lisbon now" once the fact itself was
        replaced. They end with it (kept for ``--as-of`` and history), never before they began; and
        making it current again (``--current``) brings back those its ``successor`` ended with it."""
        follow = _withholding(edit)
        if edit.op in ("supersede", "make_current"):
            follow = edit if ended and (edit.op == "supersede" or successor is not None) else None
        store = provenance_of(self.store)
        if follow is None or store is None:
            return
        for carrier in await store.carriers([entry_id]):
            if carrier in seen:
                continue
            carried = await _carried(store, carrier, follow, successor, origin)
            if carried is None:
                continue
            if edit.op == "purge" and origin is not None and await _quotes(store, carrier, origin):
                carried = edit  # archived, it would keep the purged words in its row, ledger and copy
            seen.add(carrier)
            reached = await self.apply(carrier, carried, verb=verb, seen=seen, sources=False)
            report.carriers.append(reached)
            if reached.changed and origin is not None and (carried.op == "supersede" or _withholding(carried)):
                await self._free_other_sources(carrier, origin)

    async def _free_other_sources(self, carrier_id: str, origin: MemoryEntry) -> None:
        """The other sources of ``carrier_id``, which an edit of ``origin`` withheld or ended, answer as
        themselves again, as after a purge: forgetting "I live in Berlin" lost "My dog is called Rex" from
        every recall with the digest carrying both. One that says nothing ``origin`` did not (it repeats
        the withheld words) stays archived into the carrier."""
        store = provenance_of(self.store)
        words = content_words(origin.content)
        others = [s for s in (await store.sources([carrier_id], quoted=False)).get(carrier_id, []) if s != origin.id]
        own = [s for s in others if (row := await _operator_get(self.store, s)) is not None
               and not content_words(row.content) <= words]
        if own:
            await store.stand_alone(own)

    async def _reach_later_versions(self, withheld: MemoryEntry, edit: Edit, verb: str | None, report: EditReport,
                                    seen: set[str]) -> None:
        """The newer versions that repeat every content word of ``withheld`` get ``edit`` (what it
        withholds), as a digest carrying it does: hiding "My locker code is 4471" left the code
        answering recall in "My locker code is 4471 at the downtown gym", the version that replaced
        it (:func:`repeating_versions`)."""
        for version in await repeating_versions(self.store, withheld):
            if version.id not in seen and reaches(withheld, version):
                seen.add(version.id)
                report.carriers.append(await self.apply(version.id, edit, verb=verb, seen=seen, sources=False))

    async def _reach_restatements(self, ended: MemoryEntry, edit: Edit, verb: str | None, report: EditReport,
                                  seen: set[str]) -> None:
        """A memory's sources that say nothing it does not (a merge's restatements, each archived, a
        promoted one with its global copy still live) follow what withdraws it, copy and all: what
        ends, hides or forgets a fact does the same to its restatements. A restatement said after
        the fact that supersedes it is left as it is. A withholding edit also reaches the earlier
        versions ``ended`` restates (:func:`restated_versions`); a supersession leaves them ended."""
        said = None
        if edit.op == "supersede":
            said = edit.value[1].timestamp() if edit.value[1] is not None else time.time()
        earlier = [] if edit.op == "supersede" else await restated_versions(self.store, ended)
        for source in [*await restatements(self.store, ended, said), *earlier]:
            if source.id in seen or (edit.op != "supersede" and not reaches(ended, source)):
                continue
            seen.add(source.id)
            report.carriers.append(await self.apply(source.id, edit, verb=verb, seen=seen))

    async def _bring_back_restatements(self, before: MemoryEntry, edit: Edit, verb: str | None, report: EditReport,
                                       seen: set[str]) -> None:
        """``--current`` of a merge undoes what its supersession did to the restatements it absorbed
        (:meth:`_reach_restatements`): those the same successor ended answer again, global copy and all
        (left ended, Berlin never answered another agent again after the undo)."""
        store = provenance_of(self.store)
        if store is None or before.superseded_by is None:
            return
        for source_id in (await store.sources([before.id], quoted=False)).get(before.id, []):
            source = await _operator_get(self.store, source_id)
            if source_id not in seen and source is not None and source.superseded_by == before.superseded_by:
                seen.add(source_id)
                report.carriers.append(await self.apply(source_id, edit, verb=verb, seen=seen))

    async def _restore_what_it_carries(self, before: MemoryEntry, edit: Edit, verb: str, report: EditReport,
                                       seen: set[str]) -> None:
        """A restored merge or digest undoes what its forget did to its sources: the restatements that
        forget archived (:meth:`_reach_restatements`) are archived into it again, and the global copies
        it withheld (:meth:`_withhold_source_copies`) answer again, as consolidation left them (left
        archived, another agent never read the fact again after the undo). A source the operator forgot
        on its own stays forgotten, copy and all."""
        store = provenance_of(self.store)
        if store is None:
            return
        ids = [i for i in (await store.sources([before.id], quoted=False)).get(before.id, []) if i not in seen]
        archived_at = max((r.seq for r in await self.store.ledger([before.id]) if r.op == "archive"), default=None)
        again = [i for i in ids
                 if archived_at is not None and await _changed_after(self.store, i, archived_at, "archived", CONSOLIDATED, 1)]
        if again:
            await store.carry_again(again)
        for source_id in sorted(await store.carried(ids)):
            seen.add(source_id)
            source = await _operator_get(self.store, source_id)
            reached = EditReport(source_id, source_id in again, source)
            if self.copies is not None and (copy := await self.copies.follow(self.store, source, source, edit, verb)):
                reached.copies.append(copy)
            if reached.changed or any(c.changed for c in reached.copies):
                report.carriers.append(reached)

    async def _show_what_its_hide_reached(self, before: MemoryEntry, verb: str, report: EditReport,
                                          seen: set[str]) -> None:
        """A memory shown again undoes what its last hide (or making it private) did to the rows that say
        nothing it does not (:meth:`_reach_restatements`): they are shown again, global copy and all, as
        a restore undoes a forget (left hidden, a restatement said before its keeper never answered
        `--as-of` again, nor its copy another agent). One the operator withheld on its own stays so."""
        hides = [r for r in await self.store.ledger([before.id]) if r.before and r.after
                 and r.before.get("visibility") == Visibility.VISIBLE.value != r.after.get("visibility")]
        if not hides:
            return
        hid, show = hides[-1], Edit("set_visibility", Visibility.VISIBLE)
        for row in [*await restatements(self.store, before), *await restated_versions(self.store, before)]:
            if row.id not in seen and await _changed_after(self.store, row.id, hid.seq, "visibility",
                                                           Visibility.VISIBLE.value, hid.after["visibility"]):
                seen.add(row.id)
                report.carriers.append(await self.apply(row.id, show, verb=verb, seen=seen))

    async def _withhold_source_copies(self, carrier_id: str, edit: Edit, verb: str, report: EditReport,
                                      seen: set[str]) -> None:
        """The global copies of the archived sources of a withheld merge or digest get what it got.
        Consolidation leaves a source's copy live, and the admission predicate withholds the source
        itself once its carrier is withheld (even a turn that says more than the digest kept, which
        no restatement rule reaches): its copy must not go on answering the same words to every
        agent. A source restored since stands on its own and is left as it is."""
        store = provenance_of(self.store)
        if store is None:
            return
        for source_id in (await store.sources([carrier_id])).get(carrier_id, []):
            source = await _operator_get(self.store, source_id)
            if source_id in seen or source is None or not source.archived:
                continue
            seen.add(source_id)
            withheld = source.model_copy(update={"archived": True} if edit.op == "archive" else {"visibility": edit.value})
            reached = EditReport(source_id, False, source)
            if (change := await self.copies.follow(self.store, source, withheld, edit, verb)) is not None:
                reached.copies.append(change)
            reached.carriers = await self.copies.reach_carriers(self.store, source_id, edit, verb)
            if reached.copies or reached.carriers:
                report.carriers.append(reached)

    async def aclose(self) -> None:
        if self.copies is not None:
            await self.copies.aclose()


async def _changed_after(store: SQLiteAdapter, entry_id: str, seq: int, field: str, was: Any, now: Any) -> bool:
    """Whether ``entry_id`` was last changed after ledger row ``seq`` (an edit of the memory carrying or
    restating it, which reached it) from ``was`` to ``now`` in ``field``: not by an operator's edit of
    its own before (a forget or a hide it got on its own stays)."""
    records = await store.ledger([entry_id])
    last = records[-1] if records else None
    return (last is not None and last.seq > seq and last.before is not None and last.after is not None
            and last.before.get(field) == was and last.after.get(field) == now)


async def _promoted(source: SQLiteAdapter, entry: MemoryEntry) -> MemoryEntry:
    """The copy an edit promoting ``entry`` writes: live when consolidation archived ``entry`` into a memory
    of ``source`` that still answers for it, as consolidation leaves a promoted restatement's copy
    (archived, it answered nobody: no merge carries it in the global tier)."""
    if entry.archived and (held := provenance_of(source)) is not None and await held.carried([entry.id]):
        entry = entry.model_copy(update={"archived": False})
    return global_copy(entry)


def reaches(origin: MemoryEntry, row: MemoryEntry) -> bool:
    """Whether what withholds ``origin`` may withhold ``row``, which repeats or restates it (a version,
    a held claim, a merge's or a summary's source). The reach runs from a memory to what is derived
    from or restates it, never from an agent's claim or a derived row (a summary, an echo) to the
    user's own statement: forgetting the session summary "User stated: My locker code is 4471 at
    the downtown gym" archived the fact the user typed, which stands on its own."""
    return _users_statement(origin) or not _users_statement(row)


def _users_statement(entry: MemoryEntry) -> bool:
    return users_own(entry) and not entry.derived


async def restatements(store: SQLiteAdapter, ended: MemoryEntry, said: float | None = None) -> list[MemoryEntry]:
    """The sources of ``ended`` (a merge or digest) that an edit withdrawing it reaches too
    (:meth:`MemoryEditor._reach_restatements`): current, saying nothing ``ended`` does not, and,
    for a supersession at ``said`` (a timestamp), said no later than it."""
    provenance = provenance_of(store)
    carried = content_words(ended.content)
    if provenance is None or not carried:
        return []
    found = []
    for source_id in (await provenance.sources([ended.id], quoted=False)).get(ended.id, []):
        source = await _operator_get(store, source_id)
        if source is None or source.valid_to is not None:
            continue
        words = content_words(source.content)
        if not words or not words <= carried:
            continue
        if said is not None and (source.valid_from or source.created_at).timestamp() > said:
            continue
        found.append(source)
    return found


async def restated_versions(store: SQLiteAdapter, ended: MemoryEntry) -> list[MemoryEntry]:
    """The versions ``ended`` replaced that say nothing it does not: what a hide, forget or new text
    of ``ended`` withholds too (:meth:`MemoryEditor._reach_restatements`).

    A reconciled write that says more than a stored fact supersedes it, and the older row answers
    `recall --as-of` and the history tools as a version: hiding "My locker code is 4471 at the gym"
    left "My locker code is 4471" answering there. Decided by content containment, the rule a merge's
    restatements follow, since a version chain records replacement, not what was repeated: an
    earlier version with words of its own ("I live in Berlin" before "I live in Lisbon now") is
    history in its own right and is left as it is."""
    carried = content_words(ended.content)
    if ended.supersedes is None or not carried:
        return []
    # Walked from the version it replaced: a purge has removed ``ended`` itself by now.
    chain = await store.versions(ended.supersedes, audience=Audience.OPERATOR, include_archived=True)
    earlier = next((chain[:i + 1] for i, version in enumerate(chain) if version.id == ended.supersedes), [])
    return [v for v in earlier if (words := content_words(v.content)) and words <= carried]


async def repeating_versions(store: SQLiteAdapter, withheld: MemoryEntry) -> list[MemoryEntry]:
    """The versions that replaced ``withheld``, and the claims held beside it (an agent's new text for
    a user's fact), that still say every content word of it: they carry its words as a digest carries
    its sources' (the other way round from :func:`restated_versions`). A claim is reached from the
    fact, never the fact from a claim: a user's words stand on their own."""
    words = content_words(withheld.content)
    if not words:
        return []
    later = await store.held_beside(withheld.id)
    if withheld.superseded_by is not None:
        # Walked from its successor: a purge has removed ``withheld`` itself by now.
        chain = await store.versions(withheld.superseded_by, audience=Audience.OPERATOR, include_archived=True)
        later += next((chain[i:] for i, version in enumerate(chain) if version.id == withheld.superseded_by), [])
    return [v for v in later if words <= content_words(v.content)]


async def withheld_repeated(store: SQLiteAdapter, entry: MemoryEntry) -> list[MemoryEntry]:
    """The memories an operator withheld (hidden, private, forgotten) whose every content word the
    agent's claim ``entry`` says, the rule a hide reaches the versions repeating it by
    (:func:`repeating_versions`): stored visible, "The user's locker code is 4471 at the gym" made the
    code hidden in "My locker code is 4471" answer recall again. The user's own words are her choice
    and stand on their own (:func:`reaches`): none for them."""
    return (await withheld_repeated_many(store, [entry])).get(entry.id, [])


INDEXED_WORDS = 64
"""The most content words a withheld-repeat check looks up in the keyword index; past them it reads every
withheld row (:func:`withheld_repeated_many`)."""


async def withheld_repeated_many(store: FindsWithheld, entries: Sequence[MemoryEntry]) -> dict[str, list[MemoryEntry]]:
    """:func:`withheld_repeated` for each of ``entries`` that repeats one in ``store``, by id: one lookup for
    all of them (a `remember --from` window), not one a line. An agent's words are its claims, and a chat
    export's lines of a role other than the user's (:attr:`MemoryEntry.said_by_agent`), whatever tier
    they are written to: the caller picks the stores (the agent's, and a pool's own, for a pool write)."""
    said = {e.id: words for e in entries if (e.said_by_agent or not users_own(e)) and (words := content_words(e.content))}
    if not said:
        return {}
    # Trigger: a window's many words. Why: they reach most of the keyword index, and an OR of thousands of
    # words costs more than reading every withheld row (1,024 lines against 20,000 rows and 200 withheld
    # of them: 0.6-5 s, against 4 ms). Outcome: the keyword index for a few words, else the rows whole.
    asked = set().union(*said.values())
    withheld = await store.withheld(asked if len(asked) <= INDEXED_WORDS else None)
    # Each withheld memory is filed under one of its words: only a claim saying that word can hold them all.
    filed: dict[str, list[tuple[int, frozenset[str]]]] = {}
    for at, (_, content) in enumerate(withheld):
        if held := content_words(content):
            filed.setdefault(min(held), []).append((at, held))
    repeating = {}
    for entry_id, words in said.items():
        if at := sorted(i for w in words for i, held in filed.get(w, ()) if withheld[i][0] != entry_id and held <= words):
            repeating[entry_id] = [withheld[i][0] for i in at]
    if not repeating:
        return {}
    rows = await store.admitted_by_id(MemoryQuery(), sorted({i for ids in repeating.values() for i in ids}),
                                      audience=Audience.OPERATOR, include_archived=True)
    return {entry_id: [rows[i] for i in ids if i in rows] for entry_id, ids in repeating.items()}


async def carries_users_fact(store: SQLiteAdapter, entry: MemoryEntry, *, archived_only: bool = False,
                             seen: set[str] | None = None) -> bool:
    """Whether ending ``entry`` ends the user's own fact (:func:`users_own`): it is one, or a restatement
    it carries (and a supersession of it would reach, :func:`restatements`) is, at any depth. An agent
    never ends such a memory: its new text is held beside it (the source rule, man/facts.md).

    ``archived_only``: only restatements a merge or digest archived, the ones whose global copies a
    forget of it withdraws too (:meth:`MemoryEditor._withhold_source_copies`); a session summary's
    sources stand on their own, so forgetting the summary leaves them answering."""
    if users_own(entry):
        return True
    seen = seen if seen is not None else {entry.id}
    for source in await restatements(store, entry):
        if source.id not in seen and (source.archived or not archived_only):
            seen.add(source.id)
            if await carries_users_fact(store, source, archived_only=archived_only, seen=seen):
                return True
    return False


async def withhold_carriers_of(
    store: Any, before: Mapping[str, MemoryEntry], written: Iterable[MemoryEntry], verb: str,
    *, copies: GlobalCopies | None = None,
) -> int:
    """The one path for a write that changed stored memories outside :meth:`MemoryEditor.apply` (an
    import's upsert, a `remember --from` line naming a stored memory by id): each of ``written`` whose
    ``before`` it withholds content from (:func:`withheld_by`: new words, an archive, a stricter
    visibility) has what carries it or repeats its words here, and its global copy's carriers through
    ``copies``, withheld as `memory set` would. How many carriers that withheld; 0 for a store that keeps no provenance."""
    if provenance_of(store) is None:
        return 0
    editor = MemoryEditor(store, copies=copies)
    reached = 0
    for entry in written:
        edit = withheld_by(before[entry.id], entry) if entry.id in before else None
        if edit is not None:
            reached += withheld_count(await editor.withhold_carriers(before[entry.id], edit, verb))
    return reached


def withheld_by(before: MemoryEntry, after: MemoryEntry) -> Edit | None:
    """The operator edit a write from ``before`` to ``after`` amounts to when it withholds content
    (new text, an archive, a stricter visibility), else None."""
    if after.content != before.content or (after.archived and not before.archived):
        return Edit("archive")
    if after.visibility is not before.visibility and after.visibility is not Visibility.VISIBLE:
        return Edit("set_visibility", after.visibility)
    return None


_NOT_MIRRORED = frozenset({"id", "agent_id", "scope", "pool_name", "updated_at", "last_accessed_at", "access_count"})


def _followed(copy: MemoryEntry, before: MemoryEntry | None, after: MemoryEntry) -> MemoryEntry:
    """What ``copy`` becomes when its original goes from ``before`` to ``after``: the fields that
    change, and no other (None ``before``: the copy is rewritten from ``after`` whole)."""
    if before is None:
        return global_copy(after)
    changed = {k: getattr(after, k) for k in type(after).model_fields if k not in _NOT_MIRRORED
               and getattr(before, k) != getattr(after, k)}
    return copy.model_copy(update=changed)


def _withholding(edit: Edit) -> Edit | None:
    """The edit a carrier of the edited memory gets when ``edit`` withdraws content (a forget, a
    purge, a visibility other than visible, new text), else None: a carrier is archived by it, unless a
    purge's words are in its row (:func:`_quotes`): then it is purged too.

    New text withdraws the old words: a digest or merge carrying the memory still holds them, and so
    does a restatement a merge absorbed, so each is archived (restorable) as a forget would."""
    if edit.op in ("archive", "purge") or (edit.op == "update" and "content" in edit.changes):
        return Edit("archive")
    visibility = _visibility_set(edit)
    if visibility is None or visibility is Visibility.VISIBLE:
        return None
    return Edit("set_visibility", visibility)


def _visibility_set(edit: Edit) -> Visibility | None:
    """The visibility ``edit`` gives, None when it gives none."""
    visibility = edit.value if edit.op == "set_visibility" else edit.changes.get("visibility") if edit.op == "update" else None
    return None if visibility is None else Visibility(visibility)


async def _quotes(store: SQLiteAdapter, carrier_id: str, origin: MemoryEntry) -> bool:
    """Whether a purge of ``origin`` purges its carrier ``carrier_id`` rather than archiving it: a row
    made from it (a digest, a session summary, an echo or claim quoting it) that holds any of its
    content words. A merge's keeper of the user's own is a statement in its own right: archived."""
    carrier = await _operator_get(store, carrier_id)
    if carrier is None or not content_words(origin.content) & content_words(carrier.content):
        return False
    return not _users_statement(carrier) or bool(await provenance_of(store).digests([carrier_id]))


async def _carried(store: SQLiteAdapter, carrier_id: str, edit: Edit, successor: str | None,
                   origin: MemoryEntry | None = None) -> Edit | None:
    """``edit`` as the carrier ``carrier_id`` gets it, None for none. A supersession ends it no earlier
    than it began (one ending a memory before its start would make the successor its predecessor:
    :func:`memory.sqlite.mutations.split_by_time`); ``make_current`` reaches only a carrier the same
    ``successor`` ended, never one a fact of its own replaced; what withholds ``origin`` never the
    user's statement a merge kept over an agent's or derived row (:func:`reaches`)."""
    if edit.op not in ("supersede", "make_current"):
        if origin is None:
            return edit
        carrier = await _operator_get(store, carrier_id)
        return None if carrier is not None and not reaches(origin, carrier) else edit
    carrier = await _operator_get(store, carrier_id)
    if carrier is None:
        return None
    if edit.op == "make_current":
        return edit if carrier.superseded_by == successor else None
    new_id, said = edit.value
    return edit if said is None else Edit("supersede", (new_id, max(said, carrier.valid_from or carrier.created_at)))


@dataclass
class AgentRemoval:
    """A deleted agent: where its folder went and what became of its promoted copies."""

    agent_id: str
    name: str
    moved_to: Path
    copies: CopyChange | None = None

    def as_dict(self) -> dict:
        data = {"id": self.agent_id, "name": self.name, "moved_to": str(self.moved_to)}
        return data if self.copies is None else {**data, "copies": self.copies.as_dict()}


async def delete_agent(home: Home, config: ArcanaConfig, name_or_id: str, *, actor: str = "library") -> AgentRemoval:
    """Withdraw the agent's promoted copies from the global tier, then move its folder to the trash.

    In that order: a global tier out of reach raises :class:`LiveCopyError`
    and the agent stays, so the same call can be made again; otherwise its
    memories would stay recallable by every other agent after it is gone.
    Both under the agent's lock (:mod:`memory.agent_lock`): a write another
    process has in flight finishes first (:class:`LockHeldError` if writes hold
    it 30 s), and its next write finds the agent gone instead of promoting a
    copy nobody withdraws.
    """
    from memory.agent_lock import deleting
    from memory.agents import AgentRegistry

    registry = AgentRegistry(home)
    card = registry.resolve(name_or_id)
    with deleting(home, card.id):  # no write of the agent promotes a copy between the withdrawal and the move
        copies = GlobalCopies.of_home(home, config, actor=actor)
        path = store_path(home, StoreKind.PRIVATE, card.id)
        source = open_store(home, StoreKind.PRIVATE, card.id, actor=actor, repair=False) if path.exists() else None
        try:
            change = await copies.withdraw_agent(card.id, source)
        finally:
            await copies.aclose()
            if source is not None:
                await source.aclose()
        return AgentRemoval(card.id, card.name, registry.delete(card.id), change)


async def discard_unused_agent(home: Home, card_id: str, *, actor: str = "library") -> Path | None:
    """Move an agent to the trash if it holds nothing: no memory row and no session; where it went, else None.

    For a command that created the agent and then failed before storing anything (`arcana run`'s
    first turn, its model unreachable): the agent was made only to hold what that run stored, so
    leaving it made a typo an agent. Checked under the agent's lock (:func:`memory.agent_lock.deleting`),
    so a write another process made to it meanwhile keeps it.
    """
    from memory.agent_lock import deleting
    from memory.agents import AgentRegistry

    with deleting(home, card_id):
        if any((home.agent_dir(card_id) / "sessions").glob("*")):
            return None
        path = store_path(home, StoreKind.PRIVATE, card_id)
        if path.exists():
            store = open_store(home, StoreKind.PRIVATE, card_id, actor=actor, repair=False)
            try:
                if await store.count(include_archived=True):
                    return None
            finally:
                await store.aclose()
        return AgentRegistry(home).delete(card_id)


@dataclass(frozen=True)
class OperatorTarget:
    """Which store an operator command works on: an agent's private memory, a pool, or the global tier."""

    agent: str | None = None
    pool: str | None = None
    global_: bool = False

    def check(self) -> None:
        if self.pool and self.global_:
            raise InvalidRequestError("give --pool or --global, not both; a memory lives in one of them")
        if not (self.pool or self.global_ or self.agent):
            raise InvalidRequestError("say whose memory: give --agent (or --pool / --global)")


class Originals:
    """The agents' memories the global tier's copies were promoted from. A copy is the same memory
    (same id, same agent), so an operator's edit of it (``--global``, the web view's global pages) is
    made to its original too, as an edit through ``--agent`` (which brings the copy in line): hidden
    or forgotten on the copy alone, the original went on answering its agent."""

    def __init__(self, home: Home, config: ArcanaConfig, *, actor: str):
        self.home, self.config, self.actor = home, config, actor
        self._held: dict[str, tuple[Any, MemoryEditor]] = {}  # agent id -> (card, editor) while held()

    @asynccontextmanager
    async def _editor_of(self, agent_id: str):
        """(the agent's card, its editor), or None when the agent or its store is gone; the one
        :meth:`held` holds, while it does."""
        from memory.agents import AgentRegistry

        if agent_id in self._held:
            yield self._held[agent_id]
            return
        card = AgentRegistry(self.home).get(agent_id)
        if card is None or not self.home.agent_db(card.id).exists():
            yield None
            return
        async with open_editor(self.home, self.config, OperatorTarget(card.id), actor=self.actor, quoters=False) as editor:
            yield card, editor

    @staticmethod
    async def _original(editor: MemoryEditor, copy: MemoryEntry) -> MemoryEntry | None:
        """The original of ``copy`` in ``editor``'s store, or None (written to the global tier directly,
        or its original gone)."""
        if copy.scope is not MemoryScope.GLOBAL:
            return None
        original = await _operator_get(editor.store, copy.id)
        mine = original is not None and original.agent_id == copy.agent_id and original.scope is MemoryScope.PRIVATE
        return original if mine else None

    async def find(self, copy: MemoryEntry) -> tuple[Any, MemoryEntry] | None:
        """The agent's card and the original of ``copy`` (shown beside it), or None."""
        async with self._editor_of(copy.agent_id) as found:
            if found is None or (original := await self._original(found[1], copy)) is None:
                return None
            return found[0], original

    @asynccontextmanager
    async def held(self, copies: Iterable[MemoryEntry]) -> AsyncIterator[None]:
        """Within the block, the stores holding the originals of ``copies`` are each opened once and
        write-locked (:meth:`SQLiteAdapter.write_locked`), and :meth:`apply` and :meth:`follow` edit
        through them: taken before the copies change, so a store another writer keeps fails the
        edit with nothing changed, and held until the originals have changed too, so no writer gets
        in between (a re-run of an import finds the copies changed already and would never reach an
        original left behind). Stores are taken in agent-id order (two imports never wait on each
        other crosswise); a copy with no original here takes no lock."""
        by_agent: dict[str, list[MemoryEntry]] = {}
        for copy in copies:
            by_agent.setdefault(copy.agent_id, []).append(copy)
        async with AsyncExitStack() as stack:
            for agent_id in sorted(by_agent.keys() - self._held.keys()):
                found = await stack.enter_async_context(self._editor_of(agent_id))
                if found is None:
                    continue
                for copy in by_agent[agent_id]:
                    if await self._original(found[1], copy) is not None:
                        await stack.enter_async_context(found[1].store.write_locked())
                        break
                self._held[agent_id] = found
                stack.callback(self._held.pop, agent_id)
            yield

    def changed(self, before: Mapping[str, MemoryEntry], written: Iterable[MemoryEntry]) -> list[MemoryEntry]:
        """The copies in ``before`` that ``written`` changes: whose originals :meth:`follow` edits."""
        return [old for edits in self._edits(before, written).values() for old, _ in edits]

    async def follow(self, before: Mapping[str, MemoryEntry], written: Iterable[MemoryEntry], verb: str) -> None:
        """What a write into the global tier (an import) changed of the copies ``before`` held, made
        to their originals as :meth:`apply` makes an operator's edit. One editor per agent: opening
        one per changed line made an import of 2,000 changed copies take a minute."""
        for agent_id, edits in self._edits(before, written).items():
            async with self._editor_of(agent_id) as found:
                if found is None:
                    continue
                for old, edit in edits:
                    await self._apply_in(found[1], old, edit, verb)

    @staticmethod
    def _edits(before: Mapping[str, MemoryEntry], written: Iterable[MemoryEntry]) -> dict[str, list[tuple[MemoryEntry, Edit]]]:
        """Per agent, the copies ``written`` changed of those ``before`` held, each with its edit."""
        by_agent: dict[str, list[tuple[MemoryEntry, Edit]]] = {}
        for copy in written:
            old = before.get(copy.id)
            if old is None:
                continue
            changes = {k: getattr(copy, k) for k in EDITABLE if getattr(copy, k) != getattr(old, k)}
            edits = [Edit("update", changes=changes)] if changes else []
            if copy.archived != old.archived:
                edits.append(Edit("archive" if copy.archived else "restore"))
            if edits:
                by_agent.setdefault(old.agent_id, []).extend((old, edit) for edit in edits)
        return by_agent

    async def apply(self, copy: MemoryEntry, edit: Edit, verb: str) -> EditReport | None:
        """``edit`` (unguarded: its seq was the copy's) made to the original of ``copy``, or None."""
        async with self._editor_of(copy.agent_id) as found:
            return None if found is None else await self._apply_in(found[1], copy, edit, verb)

    async def _apply_in(self, editor: MemoryEditor, copy: MemoryEntry, edit: Edit, verb: str) -> EditReport | None:
        if await self._original(editor, copy) is None:
            return None
        return await editor.apply(copy.id, Edit(edit.op, edit.value, edit.changes), verb=verb)


class Quoters:
    """The agents' claims quoting a shared memory (a pool's, the global tier's, a promoted fact's copy)
    they were shown over MCP (:class:`memory.runtime.sessions.ShownMemories`). The link is kept in
    the claim's store, beside no row of the memory it quotes, so an edit withholding that memory
    walks each agent's store for it: hidden in the pool, it went on answering in an agent's words.
    ``besides``: the agent whose own editor this is (its carriers are reached there)."""

    def __init__(self, home: Home, config: ArcanaConfig, *, actor: str, besides: str | None = None):
        self.home, self.config, self.actor, self.besides = home, config, actor, besides

    async def reach(self, shown_id: str, edit: Edit, verb: str) -> list[EditReport]:
        """``edit`` (what withholding ``shown_id`` withholds) made to every claim quoting it in the
        other agents' stores; the reports of those it changed."""
        from memory.agents import AgentRegistry

        reached = []
        for card in AgentRegistry(self.home).list():
            if card.id == self.besides or not self.home.agent_db(card.id).exists():
                continue
            async with open_editor(self.home, self.config, OperatorTarget(card.id), actor=self.actor, quoters=False) as editor:
                store = provenance_of(editor.store)
                for claim in await store.carriers([shown_id]) if store is not None else []:
                    report = await editor.apply(claim, edit, verb=verb, sources=False)
                    if report.changed or report.carriers or report.copies:  # a claim its original's store reached already is no news
                        reached.append(report)
        return reached


class NoStoreYet(NotFoundError):
    """The store an operator names has not been made yet: there is nothing in it to read or edit."""


@asynccontextmanager
async def open_editor(home: Home, config: ArcanaConfig, target: OperatorTarget, *, actor: str = "library",
                      quoters: bool = True):
    """A connected :class:`MemoryEditor` on ``target``; a pool or the global tier wins over an agent.

    An agent's editor reaches the global copies its promotion made, and with ``quoters`` (an
    operator's own edit, not one another editor makes for it) the other agents' claims quoting a
    shared memory it withholds (:class:`Quoters`). Shared
    tiers can hold a poisoned or wrong memory too; this is how an operator
    hides, fixes or purges it there. An unknown agent or pool is
    :class:`NotFoundError`; a store not made yet (an agent's, a shared tier's)
    is :class:`NoStoreYet`, never made here: a read must leave the home as it was.
    """
    from memory.agent_lock import connect_agent_store
    from memory.agents import AgentRegistry

    target.check()
    card = None
    if not (target.pool or target.global_):
        card = AgentRegistry(home).resolve(target.agent)
        if not home.agent_db(card.id).exists():  # opening it made it: a web view page or `memory list` left a store
            raise NoStoreYet(f"agent {card.name} has no memories yet ({home.agent_db(card.id)})")
        store = open_store(home, StoreKind.PRIVATE, card.id, actor=actor)
        editor = MemoryEditor(store, copies=GlobalCopies.of_home(home, config, actor=actor), embedding=(home, config),
                              quoters=Quoters(home, config, actor=actor, besides=card.id) if quoters else None,
                              sessions=home.agent_dir(card.id) / "sessions")
    else:
        if target.pool:
            from memory.federation.pools import PoolRegistry

            PoolRegistry(home).show_settings(target.pool)  # NotFoundError for an unknown pool
        kind = StoreKind.POOL if target.pool else StoreKind.GLOBAL
        store = open_tier(home, kind, target.pool, config=config, actor=actor)
        if not made_yet(home, config, kind, target.pool):
            raise NoStoreYet(f"{'pool ' + target.pool if target.pool else 'the global tier'} has no memories yet ({store.path})")
        originals = None if target.pool else Originals(home, config, actor=actor)
        editor = MemoryEditor(store, embedding=(home, config), originals=originals,
                              quoters=Quoters(home, config, actor=actor) if quoters else None)
    try:
        if card is not None:  # an agent deleted since it was resolved is not made again, card-less and empty
            await connect_agent_store(home, card.id, card.name, store)
        else:
            await store.connect()
        yield editor
    finally:
        await editor.aclose()
        await store.aclose()
