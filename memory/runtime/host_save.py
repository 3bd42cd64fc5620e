"""Store what a coding-agent session decided, from the transcript its host names in a hook's input.

The host hands over JSON on stdin (``session_id``, ``transcript_path``); nothing
in it is trusted. The path must name a regular file (opened without blocking,
checked on the open descriptor), the transcript is read a bounded line at a
time up to a byte budget, and a line that is not a transcript line is skipped
and counted. Only what was said is kept: the person's words and the
assistant's text, never tool calls or their output.

The exchanges become one Arcana session (``arcana session show`` lists what
was taken), closed with its summary memory as ``arcana session close`` does;
each statement of a lasting fact or preference becomes a semantic memory as
well. Everything is stored as the agent's claim (source ``agent``, confidence
and importance capped): a transcript is a file on disk the agent itself can
write. How far a transcript was read is kept per host session, with the
uuids of the lines stored, so a second hook (another compaction, then the
session's end) stores only what is new, even from a transcript rewritten
meanwhile, and a resumed session's copy of the lines of a session saved
before is not stored again, while the tail that session never saved is.
"""

from __future__ import annotations

import json
import os
import re
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from memory import strict_json
from memory.agent_lock import agent_subfolder, deleted_meanwhile
from memory.agents import AgentCard
from memory.audit import AuditLog
from memory.config import ArcanaConfig
from memory.deadline import lock_wait
from memory.errors import InvalidRequestError, MemoryWriteError, NotFoundError
from memory.extraction.scoring import agent_confidence, distil, storable
from memory.home import Home, replace_file
from memory.hosts import Host
from memory.hosts.claude_code import Exchange, read_transcript
from memory.hosts.records import read_record
from memory.redaction import redact
from memory.locks import exclusive_within
from memory.models.context import HEADER
from memory.promotion import asserted_importance
from memory.protocols import MemoryAdapter
from memory.runtime.agent import session_manager
from memory.runtime.sessions import SessionManager
from memory.types import ConfidenceSource, MemoryEntry, MemoryType, Session

MAX_HOOK_INPUT = 1 << 20
MAX_TRANSCRIPT_BYTES = 64 << 20  # read per hook; a longer stretch is finished by the next hook
MAX_STORED_LINES = 4096  # uuids of the person's lines already stored, kept per host session (the latest)
_SESSION_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")


@dataclass(frozen=True)
class HookInput:
    session_id: str
    transcript: Path | None  # None: the host keeps no transcript (its session persistence is off)
    event: str | None = None


def parse_hook_input(raw: bytes) -> HookInput:
    """The hook's JSON: an object with a ``session_id`` and an absolute ``transcript_path`` (empty when
    the host keeps no transcript, as Claude Code does with session persistence off)."""
    fix = "a host hook passes JSON with session_id and transcript_path on stdin"
    if len(raw) > MAX_HOOK_INPUT:
        raise InvalidRequestError(f"the hook input is over {MAX_HOOK_INPUT >> 20} MiB; {fix}")
    try:
        data = strict_json.loads(strict_json.decode(raw))
    except strict_json.JSONRefused as exc:
        raise InvalidRequestError(f"the hook input is not JSON Arcana takes: {exc}; {fix}") from None
    if not isinstance(data, dict):
        raise InvalidRequestError(f"the hook input is not a JSON object; {fix}")
    session_id, path = data.get("session_id"), data.get("transcript_path")
    if not isinstance(session_id, str) or not _SESSION_ID.fullmatch(session_id):
        raise InvalidRequestError(f"the hook input's session_id is missing or not an id; {fix}")
    if not isinstance(path, str) or (path and ("\0" in path or not os.path.isabs(path))):
        raise InvalidRequestError(f"the hook input's transcript_path is missing or not an absolute path; {fix}")
    event = data.get("hook_event_name")
    return HookInput(session_id, Path(path) if path else None, event if isinstance(event, str) else None)


@dataclass
class SaveReport:
    host: str
    host_session: str
    transcript: str
    event: str | None = None  # the hook that ran: PreCompact, SessionEnd, …
    start: int = 0
    end: int = 0
    exchanges: int = 0
    malformed_lines: int = 0
    ignored_lines: int = 0
    truncated: bool = False
    session_id: str | None = None
    stored: list[str] = field(default_factory=list)
    summary_memory_id: str | None = None
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


async def save_transcript(home: Home, config: ArcanaConfig, card: AgentCard, memory: MemoryAdapter, hook: HookInput, *,
                          host: Host = Host.CLAUDE_CODE, audit: AuditLog | None = None,
                          max_bytes: int = MAX_TRANSCRIPT_BYTES) -> SaveReport:
    """Store the exchanges of ``hook``'s transcript not stored yet, through ``memory`` (the agent's
    federation, so reconciliation and the ledger apply); then remember how far it was read."""
    # Two hooks at once (a compaction as the session ends) must not both store the same stretch.
    if hook.transcript is None:
        # Trigger: session persistence off. Why: refused with exit 2, which a PreCompact hook returns to
        # block the compaction. Outcome: nothing to save, said on stderr, exit 0.
        return SaveReport(host.value, hook.session_id, "", hook.event, warnings=[
            f"the host keeps no transcript of session {hook.session_id} (its transcript_path is empty): nothing to save"])
    with exclusive_within(home.locks_dir / f"host-save-{card.id}.lock", "save for this agent", lock_wait(30.0)):
        return await _save(home, config, card, memory, hook, host, audit, max_bytes)


async def _save(home, config, card, memory, hook, host, audit, max_bytes) -> SaveReport:
    state_path = home.agent_dir(card.id) / "hosts" / host.value / f"{hook.session_id}.json"
    record = read_record(state_path)
    start, stored_lines = record.offset, record.stored
    report = SaveReport(host.value, hook.session_id, str(hook.transcript), hook.event)
    with _open_regular(hook.transcript) as handle:
        size = os.fstat(handle.fileno()).st_size
        if start > size:  # the file was replaced by a shorter one: read it whole
            start = 0
        handle.seek(start)
        read = read_transcript(handle, start, max_bytes=max_bytes)
    said = _not_stored(read.exchanges, stored_lines, state_path, hook.session_id)
    # Every write below (turns, facts, the summary) takes its text from here: a pasted key never reaches one.
    said = [replace(e, prompt=redact(e.prompt), response=redact(e.response)) for e in said]
    taken, session = said, None
    if said:
        manager = session_manager(home, config, card, with_model=True, audit=audit)
        session, said = _unfinished(manager, record.session, said)
    report.start, report.end, report.exchanges = read.start, read.end, len(said)
    report.malformed_lines, report.truncated = read.malformed, read.truncated
    report.ignored_lines = read.ignored + len(read.exchanges) - len(said)
    if said:
        settings, signals = manager.settings, manager.extractor.signals
        if session is None:
            session = manager.create()
            # Named before anything is written: a save killed from here on is continued in it by the next.
            _save_record(home, card, state_path, record.offset, record.stored, session=session.id)
        report.session_id = session.id
        resumed = len(session.turns)
        for number, exchange in enumerate(said):
            # The host's model answered with the agent's memory in context (the session-start briefing,
            # the MCP recall tool): its answers are no evidence for the summary, which would keep a
            # memory's words after an operator hides it (Turn.briefed).
            turn = number if number < resumed else manager.record_turn(
                session, exchange.prompt, exchange.response, briefed=True)
            if not signals.states_preference(exchange.prompt):
                continue
            entry = MemoryEntry(
                agent_id=card.id,
                type=MemoryType.SEMANTIC,
                content=distil(exchange.prompt, signals, settings.max_content, settings.max_content_bytes),
                importance=asserted_importance(settings.durable_importance),
                confidence=agent_confidence(settings),
                confidence_source=ConfidenceSource.AGENT,
                source_session_id=session.id,
                tags=[host.value],
            )
            if not storable([entry], settings):
                continue
            written = await memory.write(entry)
            if not written.accepted:
                raise MemoryWriteError(f"memory not stored: the private tier failed ({written.failed}); "
                                       "the transcript is read again by the next hook")
            report.warnings += written.warnings
            report.stored.append(written.entry_id)
            if written.entry_id not in session.turns[turn].written_ids:  # a resumed turn's may be noted
                manager.record_written(session, turn, [written.entry_id])
        summary = await manager.close_and_summarise(session, memory=memory)
        report.summary_memory_id = summary.id if summary else None
    stored_lines += [e.line for e in taken if e.line is not None]
    _save_record(home, card, state_path, read.end, stored_lines[-MAX_STORED_LINES:])
    return report


class _open_regular:
    """``path`` opened for reading only when it is a regular file: no FIFO to hang on, no device."""

    def __init__(self, path: Path):
        self.path = path

    def __enter__(self):
        fix = "the hook input's transcript_path must name the session's transcript file"
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NONBLOCK)
        except FileNotFoundError:
            raise InvalidRequestError(f"{self.path}: no such file; {fix}") from None
        except OSError as exc:
            raise InvalidRequestError(f"{self.path}: cannot read it ({exc.strerror}); {fix}") from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise InvalidRequestError(f"{self.path}: not a regular file; {fix}")
        os.set_blocking(fd, True)
        self.handle = os.fdopen(fd, "rb")
        return self.handle

    def __exit__(self, *exc) -> None:
        self.handle.close()


def _not_stored(exchanges: list[Exchange], stored: list[str], state_path: Path, session_id: str) -> list[Exchange]:
    """The exchanges to store. Our own briefing echoed back is not said; nor is an exchange whose line
    was stored (a rewritten transcript, read whole or on from inside a line). A resumed session's
    transcript begins with the lines of the session it resumed, still naming it: when that session
    was saved, its lines up to the last one stored (by it, or by another session resuming it) are its
    own, and those after it are the tail it never saved (killed before its SessionEnd hook), stored here."""
    records = {}
    for owner in {e.owner for e in exchanges} - {None, session_id}:
        if _SESSION_ID.fullmatch(owner) and (path := state_path.parent / f"{owner}.json").is_file():
            records[owner] = read_record(path).stored
    seen = set(stored).union(*records.values())
    last = {e.owner: number for number, e in enumerate(exchanges) if e.owner in records and e.line in seen}
    # A copy none of whose lines its session's record names (a host that renumbered them) is taken as
    # stored whole: a lost tail is better than every exchange of that session stored twice.
    last.update({owner: len(exchanges) for owner, lines in records.items() if lines and owner not in last})
    said = []
    for number, exchange in enumerate(exchanges):
        if HEADER in exchange.prompt or exchange.line in seen or number <= last.get(exchange.owner, -1):
            continue
        said.append(exchange)
        if exchange.line is not None:  # a line without a uuid cannot be told apart: it is said
            seen.add(exchange.line)
    return said


def _unfinished(manager: SessionManager, session_id: str | None,
                said: list[Exchange]) -> tuple[Session | None, list[Exchange]]:
    """The session a killed save left (named by the record) when its turns are the first of ``said``,
    and what of ``said`` is left to store: an open one is continued with all of it, a closed one
    stored its turns (only the rest is left). None and ``said`` when there is none, or it holds other
    turns (the transcript was rewritten since)."""
    if session_id is None:
        return None, said
    try:
        session = manager.load(session_id)
    except NotFoundError:
        return None, said
    turns = session.turns
    if len(turns) > len(said) or any((t.prompt, t.response) != (e.prompt, e.response) for t, e in zip(turns, said)):
        return None, said
    return (None, said[len(turns):]) if session.closed else (session, said)


def _save_record(home: Home, card: AgentCard, path: Path, offset: int, stored: list[str], *,
                 session: str | None = None) -> None:
    """Write how far the transcript was read, and the session a save is writing until it is done
    (atomically and synced: an empty file after a crash would have the next save read the whole
    transcript again); never making the agent's folder again once it was deleted."""
    agent_subfolder(home, card.id, card.name, path.parent)
    try:
        replace_file(path, json.dumps({"offset": offset, "stored": stored} | ({"session": session} if session else {})))
    except FileNotFoundError:
        raise deleted_meanwhile(card.name) from None
