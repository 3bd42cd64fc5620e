"""Reading a JSON Lines file one bounded line at a time, for ``remember --from`` and ``import``;
appending a whole line to one (the audit log, a session's turns).

A bulk load must not let one line decide its fate or its memory: a line
longer than any record can be is skipped in chunks without being held or
parsed, a line that is not UTF-8 or nests too deeply to parse is named, and
every other line still loads. Memory stays bounded by the longest line
allowed, whatever the file's size.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import IO, Any

from memory import strict_json

CHUNK = 1 << 20  # how much of an over-long line is read at a time while skipping it


class LineTooLong:
    """Stands for a line that was skipped unread; ``size`` is its length in bytes."""

    def __init__(self, size: int, limit: int):
        self.size, self.limit = size, limit

    def __str__(self) -> str:
        return f"{self.size:,} bytes, longer than any record can be ({self.limit:,}); skipped unread"


def read_lines(handle: IO[bytes], max_bytes: int, *, first: int = 1) -> Iterator[tuple[int, bytes | LineTooLong]]:
    """(line number, the line's bytes without its newline, or :class:`LineTooLong`) for every line."""
    number = first - 1
    while True:
        line = handle.readline(max_bytes + 1)
        if not line:
            return
        number += 1
        if len(line) <= max_bytes or line.endswith(b"\n"):
            yield number, line.rstrip(b"\n").removesuffix(b"\r")
            continue
        size = len(line)
        while not line.endswith(b"\n"):
            line = handle.readline(CHUNK)
            if not line:
                break
            size += len(line)
        yield number, LineTooLong(size - line.endswith(b"\n"), max_bytes)


def decode(raw: bytes) -> str:
    """A line's text; ValueError naming the first byte that is not UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})") from None


def loads(text: str) -> Any:
    """One line's JSON value; ValueError saying why it is not one (nesting too deep included)."""
    try:
        return strict_json.loads(text)
    except strict_json.JSONRefused as exc:  # NaN, a 5,000-digit number or a key twice, as much as bad JSON
        raise ValueError(f"not JSON ({exc})") from None


def append_line(fd: int, line: str) -> None:
    """Append ``line`` to the file open at ``fd`` (``O_APPEND``). After a torn last line (a writer killed
    mid-line) it starts on a line of its own: glued onto the torn one, it would be lost with it."""
    size = os.fstat(fd).st_size
    if size and os.pread(fd, 1, size - 1) != b"\n":
        line = "\n" + line
    os.write(fd, line.encode())
