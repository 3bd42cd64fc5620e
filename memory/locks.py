"""Advisory file locks: for maintenance jobs (prune, reindex) run from cron, around the
read-change-write of a shared file (config.json, the agents' names), and on a file written whole
before it is renamed into place (an export)."""

from __future__ import annotations

import asyncio
import fcntl
import os
import signal
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import ExitStack, asynccontextmanager, contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import IO

from memory.deadline import LOCK_WAIT, WAIT_LONGER
from memory.errors import LockHeldError
from memory.home import PRIVATE_FILE, private_dir


@contextmanager
def exclusive(path: Path, what: str):
    """Hold ``path`` exclusively or raise :class:`LockHeldError` at once (never wait): for a job that leaves
    the work to the run in progress (the consolidation `arcana run` queues)."""
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise LockHeldError(f"another {what} is running (lock {path}); try again once it ends, or {WAIT_LONGER}") from None
        os.ftruncate(fd, 0)
        os.write(fd, str(os.getpid()).encode())
        yield
    finally:
        os.close(fd)


@contextmanager
def exclusive_within(path: Path, what: str, wait_seconds: float):
    """:func:`exclusive`, waiting up to ``wait_seconds`` for another holder to finish first (a caller passes
    :func:`memory.deadline.lock_wait` of its default)."""
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


NOTICE_AFTER_SECONDS = 1.0  # a lock wait this long says what it waits for


class WaitNotice:
    """Says ``message`` once through ``notify`` when a lock wait passes :data:`NOTICE_AFTER_SECONDS`: a
    command waiting minutes for another process's lock with nothing on stderr looked hung."""

    def __init__(self, notify: Callable[[str], None] | None, message: str):
        self.notify, self.message, self.since = notify, message, time.monotonic()

    def still_waiting(self) -> None:
        if self.notify is not None and time.monotonic() - self.since >= NOTICE_AFTER_SECONDS:
            self.notify(self.message)
            self.notify = None


DECIDE_WAIT_SECONDS = 300.0  # a reconciled write waits this long for another's (an import's batch embeds ~1,000 lines)


def gate_of(path: Path) -> Path:
    """The gate beside lock ``path`` (``x.lock`` -> ``x-gate.lock``)."""
    return path.with_name(f"{path.stem}-gate{path.suffix}")


@contextmanager
def lock_files(path: Path) -> Iterator[tuple[int, int]]:
    """Lock ``path``'s gate and the lock itself, open (made if missing), closed at the end (their locks with them).

    A holder takes the gate, then the lock, and lets go of the gate at once: a waiter for the other mode
    (an agent's deletion) holds the gate, so takers queue behind it instead of keeping it out with
    back-to-back holds of the lock.
    """
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        gate = os.open(gate_of(path), os.O_RDWR | os.O_CREAT, 0o600)
        try:
            yield gate, fd
        finally:
            os.close(gate)
    finally:
        os.close(fd)


def took(fd: int, mode: int, deadline: float, busy: str) -> bool:
    """``flock(fd, mode)`` if free now; False to try again later, :class:`LockHeldError` past ``deadline``."""
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        if time.monotonic() >= deadline:
            raise LockHeldError(busy) from None
        return False


_HELD: ContextVar[frozenset[str]] = ContextVar("arcana_held_locks", default=frozenset())
"""The lock files the running task holds through :func:`queued`: taking one again within it is a
no-op, where a second flock on a new descriptor would wait on itself."""


@asynccontextmanager
async def queued(
    path: Path, mode: int, wait_seconds: float, busy: str, waiting: str, notify: Callable[[str], None] | None = None,
) -> AsyncIterator[None]:
    """Hold lock ``path`` in ``mode`` (shared or exclusive) behind its gate (:func:`lock_files`), without
    blocking the event loop; :class:`LockHeldError` (``busy``) after ``wait_seconds``; a long wait is said
    once through ``notify`` (``waiting``). Re-entrant in a task."""
    key, held = str(path), _HELD.get()
    if key in held:
        yield
        return
    deadline, notice = time.monotonic() + wait_seconds, WaitNotice(notify, waiting)
    with lock_files(path) as (gate, fd):
        for lock in (gate, fd):
            while not took(lock, mode, deadline, busy):
                notice.still_waiting()
                await asyncio.sleep(0.05)
        fcntl.flock(gate, fcntl.LOCK_UN)
        token = _HELD.set(held | {key})
        try:
            yield
        finally:
            _HELD.reset(token)


@contextmanager
def waiting(path: Path, what: str):
    """Hold ``path`` exclusively, waiting for the holder: for a change that takes milliseconds. As long as
    that takes, unless the command gave a lock wait (:data:`memory.deadline.LOCK_WAIT`): a holder stopped
    mid-change (suspended, on a hung disk) kept a cron job waiting forever whatever it had said."""
    if (given := LOCK_WAIT.get()) is not None:
        with exclusive_within(path, what, given):
            yield
        return
    private_dir(path.parent)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


@contextmanager
def replaced_when_complete(path: Path, partial: Path, what: str) -> Iterator[IO[str]]:
    """A text handle on ``partial`` (0600), renamed over ``path`` when the block ends and removed when it
    fails, so ``path`` is never seen half-written.

    ``partial`` is held (flock) while it is written. Two writers of one path used to share it: the second
    truncated or unlinked the first's, the first renamed the second's unfinished file into place and said
    done. Now the second gets :class:`LockHeldError` naming ``what`` at once; a partial a killed writer
    left (its lock went with it) is taken over and truncated.
    """
    with _removed_on_sigterm():
        yield from _replaced_when_complete(path, partial, what)


@contextmanager
def _removed_on_sigterm() -> Iterator[None]:
    """Within the block, SIGTERM (``kill``, ``timeout``, a service manager) raises instead of ending the
    process where it stands, so the partial file is removed (it held every memory written so far, hidden
    ones too, under a visible name); the process then dies of the signal as it did. Only the main thread
    can take a signal handler: elsewhere the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    received: list[int] = []

    def stop(signum: int, _frame) -> None:
        received.append(signum)
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
        if received:
            signal.raise_signal(signal.SIGTERM)


def _replaced_when_complete(path: Path, partial: Path, what: str) -> Iterator[IO[str]]:
    while True:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW, PRIVATE_FILE)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise LockHeldError(f"another {what} is running (it writes {partial}); try again when it ends") from None
        if still_named(fd, partial):
            break
        os.close(fd)  # its holder renamed it into place meanwhile: what we locked is its finished file
    try:
        os.ftruncate(fd, 0)
        os.fchmod(fd, PRIVATE_FILE)
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n", closefd=False) as handle:
            yield handle
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)  # still ours: nobody else takes the name while we hold its lock
        raise
    finally:
        os.close(fd)


def still_named(fd: int, path: Path) -> bool:
    """Whether ``path`` is still the file open as ``fd``."""
    try:
        named = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    held = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
