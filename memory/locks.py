"""Advisory file locks: for maintenance jobs (prune, reindex) run from cron, and around the
read-change-write of a shared file (config.json, the agents' names)."""

from __future__ import annotations

import fcntl
import os
import time
from contextlib import ExitStack, contextmanager
from pathlib import Path

from memory.errors import LockHeldError
from memory.home import private_dir


@contextmanager
def exclusive(path: Path, what: str):
    """Hold ``path`` exclusively or raise :class:`LockHeldError` at once (never wait)."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeldError(f"another {what} is running (lock {path}); try again later") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)


@contextmanager
def exclusive_within(path: Path, what: str, wait_seconds: float):
    """:func:`exclusive`, waiting up to ``wait_seconds`` for another holder to finish first."""
    deadline = time.monotonic() + wait_seconds
    while True:
        stack = ExitStack()
        try:
            stack.enter_context(exclusive(path, what))
            break
        except LockHeldError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(0.05)
    with stack:
        yield


@contextmanager
def waiting(path: Path):
    """Hold ``path`` exclusively, waiting for the holder: for a change that takes milliseconds."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)
