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

import fcntl
import os
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

from memory.deadline import WAIT_LONGER, lock_wait
from memory.errors import MemoryStorageError, NotFoundError
from memory.home import Home
from memory.locks import DECIDE_WAIT_SECONDS, exclusive_within, lock_files, queued, took

# Unless the command gave a lock wait (memory.deadline.lock_wait):
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
def deleting(home: Home, agent_id: str) -> Iterator[None]:
    """Hold the agent's lock exclusively: no write of it is in flight, none starts. :class:`LockHeldError`
    when writes kept it for the lock wait (:data:`WAIT_SECONDS` by default).

    The gate is taken first: a writer passes it only on the way to its shared hold, so a `remember
    --from` writing batch after batch (its shared holds all but back to back) cannot keep a deletion
    out until it ends; it waits at the gate for the deletion instead.
    """
    wait = lock_wait(WAIT_SECONDS)
    deadline = time.monotonic() + wait  # one wait for both locks, not one each
    with exclusive_within(agent_lock_path(home, agent_id, "-gate"), "deletion of this agent", wait), \
            exclusive_within(agent_lock_path(home, agent_id), "write for this agent",
                             max(0.0, deadline - time.monotonic())):
        yield


@contextmanager
def copying(home: Home, agent_id: str) -> Iterator[None]:
    """Hold the agent's lock shared, as a write does, while a backup copies its folder: a deletion
    moves the folder before or after, never between its card and its database.
    :class:`LockHeldError` when a deletion kept it for the lock wait (:data:`WAIT_SECONDS` by default)."""
    deadline = time.monotonic() + lock_wait(WAIT_SECONDS)
    busy = f"agent {agent_id} is being deleted (lock {agent_lock_path(home, agent_id)}); try again later, or {WAIT_LONGER}"
    with lock_files(agent_lock_path(home, agent_id)) as (gate, fd):
        for held in (gate, fd):
            while not took(held, fcntl.LOCK_SH, deadline, busy):
                time.sleep(0.05)
        fcntl.flock(gate, fcntl.LOCK_UN)  # past the gate: a deletion may queue there now
        yield


class AgentPresence:
    """A federation's guard for the agent it writes for: writes only while the agent exists, and
    only into the store that is the agent's now.

    ``opened()`` is the (device, inode) of the private store file the process has open: after
    `arcana restore --force` the agent's path holds the restored file while the old one sits in
    the trash, and a long-lived process (an MCP server) acknowledged writes that went there.
    """

    def __init__(
        self, home: Home, agent_id: str, name: str, opened: Callable[[], tuple[int, int] | None] | None = None,
        notify: Callable[[str], None] | None = None,
    ):
        self.home, self.agent_id, self.name = home, agent_id, name
        self.opened, self.notify = opened, notify

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
        path = agent_lock_path(self.home, self.agent_id)
        wait = lock_wait(WAIT_SECONDS)
        busy = f"agent '{self.name}' is being deleted (lock {path}); try again later, or {WAIT_LONGER}"
        waiting = (f"waiting for agent '{self.name}' to be deleted or restored by another process "
                   f"(lock {path}; at most {wait:g}s)")
        async with queued(path, fcntl.LOCK_SH, wait, busy, waiting, self.notify):  # behind a deletion waiting, not before
            self.check()
            yield

    @asynccontextmanager
    async def deciding(self) -> AsyncIterator[None]:
        """Hold the agent's decision lock exclusively from a reconciled write's decision to its settling.

        Two processes remembering the same fact at once (a cron import, an MCP server) each decided
        ``add`` against a store holding neither row yet, and the fact was stored twice. Writers queue
        at a gate, as for :meth:`writing`, so an import's batches back to back cannot starve a
        `remember`; :class:`LockHeldError` when another write kept deciding for the lock wait
        (:data:`DECIDE_WAIT_SECONDS` by default).
        """
        path = agent_lock_path(self.home, self.agent_id, "-decide")
        wait = lock_wait(DECIDE_WAIT_SECONDS)
        busy = (f"another write for agent '{self.name}' kept deciding for {wait:g}s "
                f"(lock {path}); try again once it is done, or {WAIT_LONGER}")
        waiting = (f"waiting for another process's write for agent '{self.name}' to be stored first "
                   f"(lock {path}; at most {wait:g}s)")
        async with queued(path, fcntl.LOCK_EX, wait, busy, waiting, self.notify):
            yield


async def connect_agent_store(home: Home, agent_id: str, name: str, store) -> None:
    """Connect ``store``, agent ``agent_id``'s private store, only while the agent exists.

    A maintenance run (prune, reindex, consolidate --all) lists the agents and then opens each in
    turn; connecting made the store file, folders included, so an agent deleted meanwhile came back
    as an empty store without a card. :class:`NotFoundError` instead: the run leaves it out.
    """
    async with AgentPresence(home, agent_id, name).writing():
        await store.connect()
