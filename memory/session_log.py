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
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from pathlib import Path

from memory.home import PRIVATE_FILE
from memory.lines import append_line

ERASED = "[purged]"
"""What a session file's text holds where a purged memory's text was."""

_TEXT_FIELDS = ("prompt", "response", "text")  # a turn's prompt and answer, a summary's text


@contextmanager
def _held(path: Path, flags: int) -> Iterator[int]:
    """``path`` open with ``flags`` and locked, reopened when a rewrite replaced it while we waited."""
    while True:
        fd = os.open(path, flags, PRIVATE_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if _named(fd, path):
                break
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)
    try:
        yield fd
    finally:
        os.close(fd)


def _named(fd: int, path: Path) -> bool:
    """Whether ``path`` still names the file open as ``fd``."""
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def append(path: Path, line: str) -> None:
    """Append ``line`` to the session file at ``path`` (made if missing; FileNotFoundError when its folder is not there)."""
    with _held(path, os.O_RDWR | os.O_APPEND | os.O_CREAT) as fd:
        append_line(fd, line)


def erase(folder: Path, texts: Sequence[str]) -> int:
    """Replace every occurrence of ``texts`` in the session files under ``folder`` with :data:`ERASED`;
    how many files were rewritten. A line that is no JSON (a torn one) has the texts' bytes replaced."""
    texts = [t for t in dict.fromkeys(texts) if t]
    if not texts or not folder.is_dir():
        return 0
    needles = [n for t in texts for n in {t.encode(), json.dumps(t, ensure_ascii=False)[1:-1].encode()}]
    rewritten = 0
    for path in sorted(folder.glob("*.jsonl")):
        if any(n in path.read_bytes() for n in needles):
            rewritten += _rewrite(path, texts, needles)
    return rewritten


def _rewrite(path: Path, texts: Sequence[str], needles: Sequence[bytes]) -> int:
    """Rewrite the session file at ``path`` without ``texts``, crash-safe: a partial file beside it,
    synced, then renamed over it, so a crash leaves the file whole, before or after."""
    with ExitStack() as stack:
        try:
            fd = stack.enter_context(_held(path, os.O_RDWR))
        except FileNotFoundError:
            return 0  # its agent was deleted meanwhile
        lines = os.pread(fd, os.fstat(fd).st_size, 0).split(b"\n")
        partial = path.with_name(path.name + ".purging")
        with os.fdopen(os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE), "wb") as out:
            out.write(b"\n".join(_erased(line, texts, needles) for line in lines))
            out.flush()
            os.fsync(out.fileno())
        os.replace(partial, path)
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)
        finally:
            os.close(folder)
    return 1


def _erased(line: bytes, texts: Sequence[str], needles: Sequence[bytes]) -> bytes:
    if not any(n in line for n in needles):
        return line
    try:
        event = json.loads(line)
    except ValueError:
        event = None
    if not isinstance(event, dict):
        for needle in needles:
            line = line.replace(needle, ERASED.encode())
        return line
    for field in _TEXT_FIELDS:
        if isinstance(event.get(field), str):
            for text in texts:
                event[field] = event[field].replace(text, ERASED)
    return json.dumps(event, ensure_ascii=False).encode()
