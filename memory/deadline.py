"""How long the current backend call may take, and how long a store may wait for another
process's write lock, for backends that can stop early.

Whoever imposes a budget (the federation's resilient tiers) sets the deadline; the
SQLite store turns it into a progress handler, so a call past its deadline is
stopped inside SQLite instead of merely abandoned by the awaiting coroutine.
"""

from __future__ import annotations

from contextvars import ContextVar

DEADLINE: ContextVar[float | None] = ContextVar("arcana_deadline", default=None)
"""``time.monotonic()`` value by which the current call must finish, or None."""

DEFAULT_LOCK_WAIT_SECONDS = 30.0  # a store's busy timeout when no lock wait was given
MAX_LOCK_WAIT_SECONDS = 3600.0

LOCK_WAIT: ContextVar[float | None] = ContextVar("arcana_lock_wait", default=None)
"""Seconds the current command may wait for another process's lock, as its caller gave it (``--lock-wait``,
``ARCANA_LOCK_WAIT``), or None: each wait keeps its own default. It bounds a SQLite store's busy timeout
(read when the store opens), a PostgreSQL session's ``lock_timeout`` (read when the pool opens) and every
wait for Arcana's own lock files (an agent being deleted, a vault being indexed, a second prune): a cron
job must not sit minutes on a lock it said it would not wait for.
A call with a deadline waits no longer than that either."""

WAIT_LONGER = "wait longer for it with --lock-wait SECONDS (ARCANA_LOCK_WAIT)"
"""How a lock wait that ran out says it can be lengthened."""


def lock_wait(default: float) -> float:
    """Seconds a wait for another process whose own default is ``default`` may take: the lock wait given
    for this command, else ``default``."""
    given = LOCK_WAIT.get()
    return default if given is None else given
