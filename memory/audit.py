"""The audit log: one JSON object per line, rotated so it cannot grow without limit."""

from __future__ import annotations

import fcntl
import json
import os
import time
from pathlib import Path

from memory import strict_json
from memory.home import private_dir
from memory.lines import append_line

MAX_BYTES = 5 * 1024 * 1024
KEEP = 3


class AuditLog:
    def __init__(self, path: Path, *, max_bytes: int = MAX_BYTES, keep: int = KEEP):
        self.path = path
        self.max_bytes = max_bytes
        self.keep = keep

    def append(self, event: str, **fields) -> None:
        """Append one event. Never raises: an unwritable log must not fail the caller."""
        record = {"at": time.time(), "event": event, **fields}
        line = json.dumps(record, ensure_ascii=False, default=str) + "\n"
        try:
            private_dir(self.path.parent)
            self._rotate_if_needed(len(line))
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                append_line(fd, line)
            finally:
                os.close(fd)
        except OSError:
            pass

    def _rotate_if_needed(self, incoming: int) -> None:
        """Rotate once the log is full, holding the full file's lock and checking again under it.

        Processes that all found the log full (cron's prune beside writers) each rotated: the second
        moved the first's fresh ``.1`` on and dropped the oldest file, or found no log to move and its
        line was lost. A process that waited for the lock now finds the log already rotated.
        """
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return
        if size + incoming <= self.max_bytes:
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:  # rotated meanwhile
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            held = os.fstat(fd)
            try:
                now = self.path.stat()
            except FileNotFoundError:
                return
            if (now.st_dev, now.st_ino) != (held.st_dev, held.st_ino) or now.st_size + incoming <= self.max_bytes:
                return  # another process rotated it while this one waited
            self._rotate()
        finally:
            os.close(fd)

    def _rotate(self) -> None:
        for index in range(self.keep - 1, 0, -1):
            older = self.path.with_name(f"{self.path.name}.{index}")
            if older.exists():
                older.replace(self.path.with_name(f"{self.path.name}.{index + 1}"))
        self.path.replace(self.path.with_name(f"{self.path.name}.1"))
        stale = self.path.with_name(f"{self.path.name}.{self.keep + 1}")
        stale.unlink(missing_ok=True)

    def newest(self, skip: int = 0, limit: int = 50) -> list[dict]:
        """Events newest first, after the ``skip`` newest, through the rotated files too.

        Each file is read backwards from its end in blocks, so a page costs
        the lines up to it, not the log's size. A line that is not a JSON
        object (a torn write) is shown as such, not raised.
        """
        found: list[dict] = []
        files = [self.path, *(self.path.with_name(f"{self.path.name}.{i}") for i in range(1, self.keep + 1))]
        for path in files:
            for line in _lines_backwards(path):
                if skip:
                    skip -= 1
                    continue
                found.append(_event(line))
                if len(found) >= limit:
                    return found
        return found

    def read(self) -> list[dict]:
        if not self.path.exists():
            return []
        return [json.loads(line) for line in self.path.read_text().splitlines() if line.strip()]


_BLOCK = 64 * 1024


def _lines_backwards(path: Path):
    """The non-blank lines of ``path``, last first (nothing if it does not exist)."""
    try:
        handle = open(path, "rb")
    except FileNotFoundError:
        return
    with handle:
        end = handle.seek(0, os.SEEK_END)
        tail = b""
        while end > 0:
            start = max(0, end - _BLOCK)
            handle.seek(start)
            chunk = handle.read(end - start) + tail
            end = start
            lines = chunk.split(b"\n")
            tail = lines.pop(0) if end > 0 else b""
            for line in reversed(lines):
                if line.strip():
                    yield line.decode("utf-8", "replace")
        if tail.strip():
            yield tail.decode("utf-8", "replace")


def _event(line: str) -> dict:
    try:
        record = strict_json.loads(line)
    except strict_json.JSONRefused:  # nested past the parser's depth was a 500 from the web view's /audit
        record = None
    return record if isinstance(record, dict) else {"event": "unreadable line", "line": line[:200]}
