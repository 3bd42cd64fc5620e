"""Agent sessions: an append-only JSONL record per session, and its consolidated summary.

Each session is ``agents/{id}/sessions/{session_id}.jsonl``; every event (opened,
turn, written, summary, closed) is one appended line, so two processes adding
to a session never overwrite each other and a crash loses at most the line
being written. The session is the fold of its lines. Only a purge rewrites a file
(:mod:`memory.session_log`), under the lock every append takes.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Iterable, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memory import session_log, strict_json
from memory.agent_lock import agent_subfolder, deleted_meanwhile
from memory.config import ExtractionSettings
from memory.errors import InvalidRequestError, NotFoundError
from memory.extraction.scoring import agent_confidence, storable
from memory.federation.federation import MemoryFederation, WriteReport
from memory.home import Home, private_dir
from memory.promotion import asserted_importance
from memory.protocols import Rewords
from memory.redaction import redact
from memory.sqlite.admission import QUOTED_LINK
from memory.sqlite.fact_words import content_words
from memory.types import (
    DERIVED_TAG, ConfidenceSource, MemoryEntry, MemoryScope, MemoryType, Session, Turn, Visibility, now_utc,
)

if TYPE_CHECKING:
    from memory.adapters.sqlite import SQLiteAdapter
    from memory.extraction.extractors import MemoryExtractor
    from memory.protocols import GetsMany, MemoryAdapter

SUMMARY_TAG = "session-summary"
SUMMARY_ATTEMPTS = 3
"""How many times a summary is asked for when its turns' memories are withdrawn while it is written."""
_SESSION_ID = re.compile(r"[0-9A-Za-z-]{1,64}")


class SessionClosedError(InvalidRequestError):
    """A closed session cannot take more turns; start a new one."""


def _append(path: Path, event: dict[str, Any], *, agent: tuple[Home, str, str] | None = None) -> None:
    """Append ``event`` to the session file at ``path``.

    For a stored agent (``agent``: home, id, name) the agent's own folder is never made: it is gone
    when `agent delete` moved it to the trash, and making it again left a folder without a card.
    :class:`NotFoundError` then.
    """
    line = json.dumps({"at": now_utc().isoformat(), **event}, ensure_ascii=False) + "\n"
    if agent is None:
        private_dir(path.parent)
    else:
        agent_subfolder(*agent, path.parent)
    try:
        session_log.append(path, line)  # under the file's lock: a purge may be rewriting it
    except FileNotFoundError:
        if agent is None:
            raise
        raise deleted_meanwhile(agent[2]) from None


def _fold(path: Path, agent_id: str) -> Session:
    session: Session | None = None
    for raw in path.read_bytes().split(b"\n"):
        if not raw.strip():
            continue
        try:
            event = strict_json.loads(strict_json.decode(raw))
            at = datetime.fromisoformat(event["at"])
            at = at if at.tzinfo else at.replace(tzinfo=UTC)  # one written by hand without a zone
            kind = event["kind"]
            turn = _turn(event, at) if kind == "turn" else None
        except (ValueError, KeyError, TypeError):  # JSONRefused too: nested however deep, a key given twice
            continue  # a torn line from a crash (or one edited by hand): the rest still stands
        if session is None:
            session = Session(id=path.stem, agent_id=agent_id, path=path, created_at=at)
        if turn is not None:
            session.turns.append(turn)
        elif kind == "written" and _index(event.get("turn")) < len(session.turns):
            session.turns[event["turn"]].written_ids.extend(_ids(event.get("ids")))
        elif kind == "summary" and isinstance(event.get("text"), str):
            session.summary = event["text"]
        elif kind == "summary_memory" and isinstance(event.get("memory_id"), str):
            session.summary_memory_id = event["memory_id"]
        elif kind == "closed":
            session.closed_at = at
    if session is None:
        raise NotFoundError(f"session file {path} has no readable line, so no turn; `arcana session list` leaves it out")
    return session


def _turn(event: dict[str, Any], at: datetime) -> Turn:
    prompt, response, model = event["prompt"], event["response"], event.get("model")
    if not isinstance(prompt, str) or not isinstance(response, str) or not isinstance(model, str | None):
        raise TypeError("not a turn")
    return Turn(prompt, response, at, model, _ids(event.get("recalled_ids")), replayed_ids=_ids(event.get("replayed_ids")),
                briefed=event.get("briefed") is True)


def _index(value: object) -> int:
    """A ``written`` event's turn index, or one past any turn when it is not one."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 1 << 62


def _ids(value: object) -> list[str]:
    return [i for i in value if isinstance(i, str)] if isinstance(value, list) else []


def _touched(turn: Turn) -> list[str]:
    """The memories ``turn`` recalled, wrote or was answered beside (recalled by a turn replayed with it)."""
    return list(dict.fromkeys([*turn.recalled_ids, *turn.written_ids, *turn.replayed_ids]))


async def withdrawn(turns: Sequence[Turn], memory: GetsMany) -> set[str]:
    """The memories ``turns`` touched that admission no longer lets through, in one read of them all.

    ``memory.get_many`` is the admission rule's way in (as ``get``, for many),
    so a memory hidden, made private, archived or purged since a turn was said
    keeps that turn out of every replay (:func:`left_out_by`): its answer may
    quote what it recalled as much as what it wrote, or repeat an earlier
    answer that quoted it.
    """
    first = {}
    for turn in turns:
        for i in _touched(turn):
            first.setdefault(i, turn.at)
    return await _not_admitted_since(first, memory)


async def _not_admitted_since(first: dict[str, datetime], memory: GetsMany) -> set[str]:
    """Those of ``first`` (a memory id -> when its words were taken) that admission no longer lets
    through, or that were re-worded since (`memory set --content`: admitted still, but what was taken
    quotes words an operator removed; only a memory changed after that time can have been)."""
    if not first:
        return set()
    found = await memory.get_many(list(first))
    if missing := [i for i in first if i not in found]:
        found |= await _only_superseded(memory, missing)
    gone = set(first) - set(found)
    since = {i: first[i] for i, entry in found.items() if entry.updated_at > first[i]}
    if since and isinstance(memory, Rewords):
        gone |= await memory.reworded(since)
    return gone


async def _only_superseded(memory: GetsMany, ids: list[str]) -> dict[str, MemoryEntry]:
    """Of ``ids``, the agent's own memories that a later fact replaced and nothing else withdrew
    (visible, not archived, not purged: the history audience, ``superseded_by`` set).

    A replaced fact is not an operator's withdrawal: the turn that recalled "I live in Berlin" and
    said "I moved to Lisbon" was left out of its own session's replay and summary, once its own
    write superseded what it recalled."""
    from memory.types import Audience, MemoryQuery

    store = _private_sqlite(memory)
    if store is None:
        return {}
    found = await store.admitted_by_id(MemoryQuery(), ids, audience=Audience.HISTORY)
    return {i: entry for i, entry in found.items() if entry.superseded_by is not None}


async def withheld_summaries(sessions: Sequence[Session], memory: MemoryAdapter, store: SQLiteAdapter) -> dict[str, dict[str, str]]:
    """For an operator's listing: the sessions (by id) whose summary text is not shown, with the memory
    and why. A summary's text is its summary memory's words: once that memory is withdrawn (a hide or
    forget of what the session wrote reaches it) the session file must not print them either. A
    summary with no memory is judged by the turns it was made from (:func:`left_out_by`)."""
    summarised = [s for s in sessions if s.summary is not None]
    first = {s.summary_memory_id: s.closed_at or s.created_at for s in summarised if s.summary_memory_id}
    gone = await _not_admitted_since(first, memory)
    turns_gone = await withdrawn([t for s in summarised if not s.summary_memory_id for t in s.turns], memory)
    withheld = {}
    for session in summarised:
        memory_id = session.summary_memory_id
        if memory_id is None:
            memory_id = next((i for t in session.turns if (i := left_out_by(t, turns_gone))), None)
        elif memory_id not in gone:
            memory_id = None
        if memory_id is not None:
            withheld[session.id] = {"memory_id": memory_id, "reason": await _why_not_admitted(store, memory, memory_id)}
    return withheld


def left_out_by(turn: Turn, gone: set[str]) -> str | None:
    """The first memory ``turn`` touched that is among ``gone`` (:func:`withdrawn`), else None; a turn
    that touched no memory has nothing to withdraw."""
    return next((i for i in _touched(turn) if i in gone), None)


async def replayable(session: Session, memory: MemoryAdapter, limit: int) -> list[Turn]:
    """The last ``limit`` turns of ``session`` that admission lets back into a prompt, oldest first."""
    gone = await withdrawn(session.turns, memory)
    return [turn for turn in session.turns if left_out_by(turn, gone) is None][-limit:] if limit else []


def within(turns: list[Turn], chars: int) -> list[Turn]:
    """The latest of ``turns`` whose prompts and answers fit in ``chars`` together, oldest first.

    A replay is resent with every later turn of its session: one runaway answer (a model may send
    megabytes) went to the model again and again until its context overflowed. Older turns go
    first; the latest turn alone over the budget is kept cut (its prompt's and answer's starts)."""
    kept: list[Turn] = []
    for turn in reversed(turns):
        size = len(turn.prompt) + len(turn.response)
        if size <= chars:
            kept.append(turn)
            chars -= size
            continue
        if not kept:
            prompt = _cut(turn.prompt, chars // 2)
            kept.append(replace(turn, prompt=prompt, response=_cut(turn.response, chars - len(prompt))))
        break
    return kept[::-1]


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: max(chars - len(CUT), 0)] + CUT


CUT = " […]"  # where a replayed text was cut


async def replay_exclusions(session: Session, memory: MemoryAdapter, store: SQLiteAdapter) -> dict[int, dict[str, str]]:
    """For an operator: every turn (by index) a replay through ``memory`` (the agent's federation, as
    ``arcana run`` replays) leaves out, with the memory and why — never its text. ``store`` is the
    agent's private store, which says why for its own memories."""
    gone = await withdrawn(session.turns, memory)
    excluded = {}
    for index, turn in enumerate(session.turns):
        memory_id = left_out_by(turn, gone)
        if memory_id is not None:
            excluded[index] = {"memory_id": memory_id, "reason": await _why_not_admitted(store, memory, memory_id)}
    return excluded


async def _why_not_admitted(store: SQLiteAdapter, memory: GetsMany, memory_id: str) -> str:
    from memory.types import Audience

    entry = await store.get(memory_id, audience=Audience.OPERATOR, include_archived=True)
    if entry is None:
        if memory_id in await store.removed([memory_id]):
            return "purged"
        # A shared tier's memory (a pool's, a promoted copy) it still admits was left out for its new text.
        shared = memory_id in await memory.get_many([memory_id])
        return "re-worded" if shared else "not admitted by the shared tier holding it"
    if entry.visibility not in (None, Visibility.VISIBLE):
        return entry.visibility.value
    if entry.archived:
        return "archived"
    return "not admitted" if entry.valid_to is not None else "re-worded"  # admitted, its text changed since


class SessionManager:
    """Create, continue, summarise and close one agent's sessions."""

    def __init__(
        self,
        home: Home,
        agent_id: str,
        *,
        extractor: MemoryExtractor | None = None,
        settings: ExtractionSettings | None = None,
        agent_name: str | None = None,
    ):
        """``agent_name``: a stored agent's (from its card); its sessions are then written only while
        its folder is there, never making it again once `agent delete` moved it to the trash."""
        self.dir = home.agent_dir(agent_id) / "sessions"
        self._agent = None if agent_name is None else (home, agent_id, agent_name)
        self.agent_id = agent_id
        self.settings = settings or ExtractionSettings()
        self._extractor = extractor

    @property
    def extractor(self) -> MemoryExtractor:
        if self._extractor is None:
            from memory.extraction.extractors import HeuristicExtractor

            self._extractor = HeuristicExtractor(self.settings)
        return self._extractor

    def create(self) -> Session:
        session_id = f"{now_utc():%Y%m%d-%H%M%S}-{secrets.token_hex(3)}"
        path = self.dir / f"{session_id}.jsonl"
        _append(path, {"kind": "opened", "agent_id": self.agent_id}, agent=self._agent)
        return _fold(path, self.agent_id)

    def load(self, session_id: str) -> Session:
        """A session by id or unique id prefix."""
        if not _SESSION_ID.fullmatch(session_id):
            raise NotFoundError(f"'{session_id}' is not a session id; see `arcana session list`")
        exact = self.dir / f"{session_id}.jsonl"
        if exact.exists():
            return _fold(exact, self.agent_id)
        matches = sorted(self.dir.glob(f"{session_id}*.jsonl"))
        if len(matches) == 1:
            return _fold(matches[0], self.agent_id)
        hint = "it matches several sessions" if matches else "see `arcana session list`"
        raise NotFoundError(f"no session '{session_id}' for this agent; {hint}")

    def list(self) -> list[Session]:
        if not self.dir.exists():
            return []
        sessions = []
        for path in self.dir.glob("*.jsonl"):
            try:
                sessions.append(_fold(path, self.agent_id))
            except NotFoundError:
                continue  # no readable line (a crash before its first): no turn to list, the file is left be
        return sorted(sessions, key=lambda s: s.created_at)

    def record_turn(
        self,
        session: Session,
        prompt: str,
        response: str,
        *,
        model: str | None = None,
        recalled_ids: list[str] | None = None,
        replayed: list[Turn] | None = None,
        briefed: bool = False,
    ) -> int:
        """Append a turn; returns its index (for :meth:`record_written`). ``replayed``: the earlier
        turns the model was given with it (their recalled memories become its ``replayed_ids``);
        ``briefed``: see :attr:`Turn.briefed`."""
        if session.closed:
            raise SessionClosedError(f"session {session.id} is closed; start a new one")
        carried = list(dict.fromkeys(i for t in replayed or () for i in (*t.recalled_ids, *t.replayed_ids)))
        turn = Turn(prompt, response, now_utc(), model, list(recalled_ids or []), replayed_ids=carried, briefed=briefed)
        event = {"kind": "turn", "prompt": prompt, "response": response, "model": model,
                 "recalled_ids": turn.recalled_ids, "replayed_ids": carried}
        _append(session.path, {**event, "briefed": True} if briefed else event, agent=self._agent)
        session.turns.append(turn)
        return len(session.turns) - 1

    def record_written(self, session: Session, turn: int, ids: list[str]) -> None:
        """Note which memories a turn's extraction wrote (it may finish after the turn is recorded)."""
        if ids:
            _append(session.path, {"kind": "written", "turn": turn, "ids": ids}, agent=self._agent)
            session.turns[turn].written_ids.extend(ids)

    def close(self, session: Session) -> None:
        """Mark the session closed. Synchronous and model-free on purpose; idempotent."""
        if not session.closed:
            _append(session.path, {"kind": "closed"}, agent=self._agent)
            session.closed_at = now_utc()

    async def close_and_summarise(self, session: Session, *, memory: MemoryAdapter,
                                  within: float | None = None) -> MemoryEntry | None:
        """Summarise, write one consolidated memory, then close. No turns: just close. ``within``: the
        seconds a model may take over the summary, every attempt together, before the heuristic's is taken.

        Only the turns a replay would still give a model are summarised
        (:func:`withdrawn`): a turn whose memory was hidden, made private,
        archived or purged since is left out of the summary as it is left out
        of every replay; with none left, the session just closes.

        The entry is SEMANTIC when the session stated a durable fact, else
        EPISODIC, at ``summary_importance`` (below a user-stated fact's); like
        all agent-written text its confidence is capped and it obeys
        ``min_confidence_to_store``. It is derived (:data:`DERIVED_TAG`) and
        links to the memories the session wrote by ``consolidates`` edges, so
        prune never keeps it after removing one of them. A summary that
        restates a memory already held is that memory (returned, and named as
        the session's summary), never linked to turns it did not come from.
        """
        entry = None
        summary, turns = await self._summary_of_admitted(session, memory, within) if not session.closed else (None, [])
        if summary is not None:
            _append(session.path, {"kind": "summary", "text": summary}, agent=self._agent)
            session.summary = summary
            durable = any(self.extractor.signals.states_preference(t.prompt) for t in turns)
            entry = MemoryEntry(
                agent_id=session.agent_id,
                type=MemoryType.SEMANTIC if durable else MemoryType.EPISODIC,
                content=summary,
                importance=asserted_importance(self.settings.summary_importance),
                confidence=agent_confidence(self.settings),
                confidence_source=ConfidenceSource.AGENT,
                source_session_id=session.id,
                tags=[SUMMARY_TAG, DERIVED_TAG],
            )
            if storable([entry], self.settings):
                held = held_id(await memory.write(entry), entry)
                if held == entry.id:
                    await _link_sources(memory, held, session, turns)
                else:  # a restatement: the memory already holding it is the summary, derived from none of these turns
                    entry = await memory.get(held)
                if entry is not None:
                    _append(session.path, {"kind": "summary_memory", "memory_id": entry.id}, agent=self._agent)
                    session.summary_memory_id = entry.id
            else:
                entry = None
        self.close(session)
        return entry

    async def _summary_of_admitted(self, session: Session, memory: MemoryAdapter,
                                   within: float | None) -> tuple[str | None, list[Turn]]:
        """A summary of the turns admission still lets through, and those turns; ``None`` when none is left.

        A model takes a while to summarise: a memory an operator withdrew meanwhile (hidden,
        archived, purged) would otherwise come back as the summary's text. So admission is asked
        again once the summary is in, and what is left is summarised again, a bounded number of
        times; a session whose turns keep being withdrawn closes without a summary.
        """
        gone = await withdrawn(session.turns, memory)
        turns = [t for t in session.turns if left_out_by(t, gone) is None]
        deadline = None if within is None else time.monotonic() + within
        for _ in range(SUMMARY_ATTEMPTS):
            if not turns:
                return None, []
            left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
            # Turns are recorded redacted; one recorded before that, in a session still open, is not.
            said = [replace(t, prompt=redact(t.prompt), response=redact(t.response)) for t in turns]
            summary = await self.extractor.summarise(replace(session, turns=said), within=left)
            gone = await withdrawn(turns, memory)
            if all(left_out_by(t, gone) is None for t in turns):
                return summary, turns
            turns = [t for t in turns if left_out_by(t, gone) is None]
        return None, []


def held_id(report: object, entry: MemoryEntry) -> str:
    """The id of the memory that holds ``entry`` after its write: a restatement reconciled as a noop
    reinforces one already stored (the federation's report names it), else ``entry`` itself."""
    return report.entry_id if isinstance(report, WriteReport) else entry.id


async def _link_sources(memory: MemoryAdapter, summary_id: str, session: Session, turns: list[Turn]) -> None:
    """``consolidates`` edges from a summary to its sources, in the private SQLite store that holds
    both (the same relation :mod:`memory.operations.consolidate` writes).

    The sources are the memories ``turns`` recorded writing and, since a process killed between a
    write and its ``written`` line leaves the store holding rows the session file does not name,
    the session's other rows there that admission still lets through (without them, prune would
    remove a fact and keep the summary carrying it).
    """
    store = _private_sqlite(memory)
    if store is None:
        return
    source_ids = [i for t in turns for i in t.written_ids]
    recorded = {i for t in session.turns for i in t.written_ids}
    unrecorded = [i for i in await store.written_in_session(session.id, SUMMARY_TAG) if i not in recorded]
    if unrecorded:
        admitted = await memory.get_many(unrecorded)
        source_ids += [i for i in unrecorded if i in admitted]
    await link_carried(memory, summary_id, source_ids)


async def link_carried(memory: MemoryAdapter, carrier_id: str, source_ids: Sequence[str], link: str = "session") -> None:
    """``consolidates`` edges (their ``source``: ``link``) from ``carrier_id`` to ``source_ids`` in the
    agent's private SQLite store, so an operator's hide, forget or new text of a source reaches the
    memory that repeats its words (:meth:`memory.operator.edits.MemoryEditor.apply`), and prune takes
    them together."""
    from memory.graph.edges import EdgeStore, MemoryEdge
    from memory.sqlite.consolidation import SOURCES

    store = _private_sqlite(memory)
    source_ids = [i for i in dict.fromkeys(source_ids) if i != carrier_id]
    if store is not None and source_ids:
        await EdgeStore(store).upsert([MemoryEdge(carrier_id, i, SOURCES, link) for i in source_ids])


SHOWN_LIMIT = 2_000
"""How many memories :class:`ShownMemories` keeps (the latest shown): a long connection stays bounded."""


class ShownMemories:
    """The memories a long-lived skin (the MCP server) has shown its agent, so that what the agent
    writes next repeating one of them is linked to it (:func:`link_carried`).

    An `arcana run` turn never stores an answer given with recalled memories (:attr:`Turn.evidence`),
    but an agent over MCP recalls "My locker code is 4471" and may `remember` "The user's locker code
    4471 opens locker twelve": with no link, an operator's hide of the fact left the code answering in
    the claim. A claim is linked to a shown memory only when it holds every content word of it (the
    restatement rule), so one that merely came after a recall is not withheld with all it saw. The
    link runs one way (:data:`QUOTED_LINK`): withdrawing the claim leaves what it quoted.
    """

    def __init__(self, limit: int = SHOWN_LIMIT):
        self.limit = limit
        self._words: dict[str, frozenset[str]] = {}

    def saw(self, entries: Iterable[MemoryEntry]) -> None:
        for entry in entries:
            self._words.pop(entry.id, None)  # seen again: the latest
            self._words[entry.id] = content_words(entry.content)
        while len(self._words) > self.limit:
            del self._words[next(iter(self._words))]

    async def link(self, memory: MemoryAdapter, written: MemoryEntry, report: object) -> None:
        """Link ``written``, just stored through ``memory`` (``report``: its write's), to the shown
        memories it repeats. A restatement an older memory holds is not ``written``'s row, and a
        shared one lives where the agent's private edges do not reach: both are left."""
        if written.scope is not MemoryScope.PRIVATE or held_id(report, written) != written.id:
            return
        words = content_words(written.content)
        quoted = [i for i, shown in self._words.items() if shown and shown <= words]
        await link_carried(memory, written.id, quoted, QUOTED_LINK)


def _private_sqlite(memory: MemoryAdapter) -> SQLiteAdapter | None:
    """The private SQLite store behind ``memory`` (a federation, or the store itself), else None."""
    from memory.adapters.sqlite import SQLiteAdapter
    from memory.runtime.assembly import private_store

    store = private_store(memory) if isinstance(memory, MemoryFederation) else memory
    return store if isinstance(store, SQLiteAdapter) else None
