"""An agent's writes and its deletion, one at a time.

`arcana agent delete` withdraws the agent's global copies and then moves its
folder to the trash. A process already writing for the agent (`remember
--from`, an MCP server, `arcana run`) holds its store open, so without this
lock its next write went into the moved file and promoted a fresh global copy
that every other agent recalled after the delete had reported the copies
withdrawn. Each federated write holds ``locks/agent-<id>.lock`` shared and
checks the agent's card is still there; a deletion holds it exclusively from
the withdrawal to the move.

The lock files of a deleted agent are left in ``locks/`` on purpose. A process
may still hold one open (a writer refused after the delete, one waiting at the
gate); unlinking it would let the next process make a new file of that name
and lock that one, two holders at once, which is the race the lock is for.
Ids are random and never reused, the files are a few bytes, backups skip them.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from memory.errors import LockHeldError, MemoryStorageError, NotFoundError
from memory.home import Home, private_dir
from memory.locks import exclusive_within

WAIT_SECONDS = 30.0  # a deletion waits this long for writes in flight, a write this long for a deletion


def deleted_meanwhile(name: str) -> NotFoundError:
    """What a process using agent ``name`` says once the agent was deleted under it."""
    return NotFoundError(
        f"agent '{name}' was deleted while this process was using it (its memory is in the trash); "
        "nothing more is read or stored for it"
    )


def agent_subfolder(home: Home, agent_id: str, name: str, folder: Path) -> Path:
    """Make ``folder`` (0700, parents too) inside agent ``agent_id``'s folder, never that folder itself.

    A process writing a file there (a session, a host hook's offset) made the agent's folder again
    when `agent delete` had moved it to the trash meanwhile: a folder without a card.
    :func:`deleted_meanwhile` instead. A file opened in ``folder`` afterwards fails with
    FileNotFoundError if the folder moved in between, so it is never made again either.
    """
    top = home.agent_dir(agent_id)
    missing = []
    probe = folder
    while probe != top and not probe.exists():
        missing.append(probe)
        probe = probe.parent
    for made in reversed(missing):
        try:
            made.mkdir(mode=0o700)
            os.chmod(made, 0o700)
        except FileExistsError:
            pass
        except FileNotFoundError:
            raise deleted_meanwhile(name) from None
    return folder


def agent_lock_path(home: Home, agent_id: str, part: str = "") -> Path:
    return home.locks_dir / f"agent-{agent_id}{part}.lock"


@contextmanager
def deleting(home: Home, agent_id: str, wait_seconds: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold the agent's lock exclusively: no write of it is in flight, none starts. :class:`LockHeldError`
    when writes kept it for ``wait_seconds``.

    The gate is taken first: a writer passes it only on the way to its shared hold, so a `remember
    --from` writing batch after batch (its shared holds all but back to back) cannot keep a deletion
    out until it ends; it waits at the gate for the deletion instead.
    """
    with exclusive_within(agent_lock_path(home, agent_id, "-gate"), "deletion of this agent", wait_seconds), \
            exclusive_within(agent_lock_path(home, agent_id), "write for this agent", wait_seconds):
        yield


@contextmanager
def copying(home: Home, agent_id: str, wait_seconds: float = WAIT_SECONDS) -> Iterator[None]:
    """Hold the agent's lock shared, as a write does, while a backup copies its folder: a deletion
    moves the folder before or after, never between its card and its database.
    :class:`LockHeldError` when a deletion kept it for ``wait_seconds``."""
    path, gate_path = agent_lock_path(home, agent_id), agent_lock_path(home, agent_id, "-gate")
    private_dir(path.parent)
    deadline = time.monotonic() + wait_seconds
    busy = f"agent {agent_id} is being deleted (lock {path}); try again later"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        gate = os.open(gate_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            for held in (gate, fd):
                while True:
                    try:
                        fcntl.flock(held, fcntl.LOCK_SH | fcntl.LOCK_NB)
                        break
                    except BlockingIOError:
                        if time.monotonic() >= deadline:
                            raise LockHeldError(busy) from None
                        time.sleep(0.05)
        finally:
            os.close(gate)
        yield
    finally:
        os.close(fd)


async def _shared(fd: int, deadline: float, busy: str) -> None:
    """``flock(fd, LOCK_SH)``, polled so the event loop (an MCP server's) keeps running meanwhile."""
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise LockHeldError(busy) from None
            await asyncio.sleep(0.05)


class AgentPresence:
    """A federation's guard for the agent it writes for: writes only while the agent exists, and
    only into the store that is the agent's now.

    ``opened()`` is the (device, inode) of the private store file the process has open: after
    `arcana restore --force` the agent's path holds the restored file while the old one sits in
    the trash, and a long-lived process (an MCP server) acknowledged writes that went there.
    """

    def __init__(
        self, home: Home, agent_id: str, name: str, opened: Callable[[], tuple[int, int] | None] | None = None,
        wait_seconds: float = WAIT_SECONDS,
    ):
        self.home, self.agent_id, self.name, self.wait_seconds = home, agent_id, name, wait_seconds
        self.opened = opened

    def check(self) -> None:
        """:class:`NotFoundError` once the agent's card is gone (deleted, moved to the trash);
        :class:`MemoryStorageError` once its path holds another file than the one open here."""
        folder = self.home.agent_dir(self.agent_id)
        if not (folder / "agent.json").is_file():
            raise deleted_meanwhile(self.name)
        opened = self.opened() if self.opened is not None else None
        if opened is None:
            return
        try:
            now = os.stat(folder / "memory.db")
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != opened:
            raise MemoryStorageError(
                f"agent '{self.name}': its memory database was replaced while this process was using it "
                "(a restore --force, or the file moved); nothing more is read or stored through this process: "
                "start it again"
            )

    @asynccontextmanager
    async def writing(self) -> AsyncIterator[None]:
        """Hold the agent's lock shared around one write (waiting, without blocking the event loop,
        for a deletion to finish), after checking the agent is still there."""
        path, gate_path = agent_lock_path(self.home, self.agent_id), agent_lock_path(self.home, self.agent_id, "-gate")
        private_dir(path.parent)
        busy = f"agent '{self.name}' is being deleted (lock {path}); try again later"
        deadline = time.monotonic() + self.wait_seconds
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            gate = os.open(gate_path, os.O_RDWR | os.O_CREAT, 0o600)
            try:
                await _shared(gate, deadline, busy)  # a deletion waiting holds it: go after it, not before
                await _shared(fd, deadline, busy)
            finally:
                os.close(gate)
            self.check()
            yield
        finally:
            os.close(fd)


async def connect_agent_store(home: Home, agent_id: str, name: str, store) -> None:
    """Connect ``store``, agent ``agent_id``'s private store, only while the agent exists.

    A maintenance run (prune, reindex, consolidate --all) lists the agents and then opens each in
    turn; connecting made the store file, folders included, so an agent deleted meanwhile came back
    as an empty store without a card. :class:`NotFoundError` instead: the run leaves it out.
    """
    async with AgentPresence(home, agent_id, name).writing():
        await store.connect()
