"""The lines of a session file, appended and (for a purge) rewritten under one lock.

A session file (``agents/{id}/sessions/{session}.jsonl``) keeps each turn's prompt and answer.
A purge must take a purged memory's text out of it too, so the file is rewritten whole: read,
written to a partial file, renamed over it. Both writers hold the file's own ``flock``: an append
waits for a rewrite, then writes to the file now under the name (never to the one it replaced,
where its line would be lost), and a rewrite never misses a line appended while it read.
"""

from __future__ import annotations

import fcntl
import json
import os
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from memory.home import PRIVATE_FILE
from memory.lines import append_line
from memory.locks import still_named

ERASED = "[purged]"
"""What a session file's text holds where a purged memory's text was."""

_TEXT_FIELDS = ("prompt", "response", "text")  # a turn's prompt and answer, a summary's text
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


@contextmanager
def _held(path: Path, flags: int) -> Iterator[int]:
    """``path`` open with ``flags`` and locked, reopened when a rewrite replaced it while we waited."""
    while True:
        fd = os.open(path, flags, PRIVATE_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if still_named(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)


def append(path: Path, line: str) -> None:
    """Append ``line`` to the session file at ``path`` (made if missing; FileNotFoundError when its folder is not there)."""
    with _held(path, os.O_RDWR | os.O_APPEND | os.O_CREAT) as fd:
        append_line(fd, line)


def erase(folder: Path, memory_id: str, text: str, says: Callable[[str], bool]) -> int:
    """Take a purged memory's ``text`` out of the session files under ``folder``; how many were rewritten.

    Every occurrence of ``text`` (in a turn's prompt or answer, a summary) becomes :data:`ERASED`, and
    so does each sentence that ``says`` holds its words in the turns that wrote the memory (its id
    among their ``written`` ids): an extraction may have stored those words reworded. A line that is
    no JSON (a torn one) has the text's bytes replaced."""
    needles = [n for n in {text.encode(), json.dumps(text, ensure_ascii=False)[1:-1].encode()} if n]
    if not needles or not folder.is_dir():
        return 0
    rewritten = 0
    for path in sorted(folder.glob("*.jsonl")):
        held = path.read_bytes()
        if memory_id.encode() in held or any(n in held for n in needles):
            rewritten += _rewrite(path, lambda lines: _erased(lines, memory_id, text, needles, says))
    return rewritten


def _rewrite(path: Path, change: Callable[[list[bytes]], list[bytes]]) -> int:
    """Rewrite the session file at ``path`` with its lines changed by ``change``, crash-safe: a partial
    file beside it, synced, then renamed over it, so a crash leaves the file whole, before or after."""
    with ExitStack() as stack:
        try:
            fd = stack.enter_context(_held(path, os.O_RDWR))
        except FileNotFoundError:
            return 0  # its agent was deleted meanwhile
        lines = os.pread(fd, os.fstat(fd).st_size, 0).split(b"\n")
        kept = change(lines)
        if kept == lines:
            return 0
        partial = path.with_name(path.name + ".purging")
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE), "wb") as out:
            out.write(b"\n".join(kept))
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    return 1


def _erased(lines: list[bytes], memory_id: str, text: str, needles: Sequence[bytes],
            says: Callable[[str], bool]) -> list[bytes]:
    events = [_event(line) for line in lines]
    turns = [i for i, event in enumerate(events) if event is not None and event.get("kind") == "turn"]
    wrote = {turns[e["turn"]] for e in events if e is not None and e.get("kind") == "written"
             and isinstance(e.get("turn"), int) and 0 <= e["turn"] < len(turns) and memory_id in (e.get("ids") or ())}
    kept = []
    for i, (line, event) in enumerate(zip(lines, events, strict=True)):
        if event is None:
            for needle in needles:
                line = line.replace(needle, ERASED.encode())
            kept.append(line)
            continue
        changed = dict(event)
        for field in _TEXT_FIELDS:
            if isinstance(changed.get(field), str):
                said = changed[field]
                if i in wrote:
                    said = " ".join(ERASED if says(part) else part for part in _SENTENCE.split(said))
                changed[field] = said.replace(text, ERASED)
        kept.append(line if changed == event else json.dumps(changed, ensure_ascii=False).encode())
    return kept


def _event(line: bytes) -> dict | None:
    try:
        event = json.loads(line)
    except ValueError:
        return None
    return event if isinstance(event, dict) else None
