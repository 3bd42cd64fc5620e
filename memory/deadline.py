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

DEFAULT_LOCK_WAIT_SECONDS = 30.0
MAX_LOCK_WAIT_SECONDS = 3600.0

LOCK_WAIT: ContextVar[float] = ContextVar("arcana_lock_wait", default=DEFAULT_LOCK_WAIT_SECONDS)
"""Seconds a SQLite store opened now waits for another process's write lock (its busy timeout)
before the write fails as busy. A call with a deadline waits no longer than that either. The CLI
sets it per command (``--lock-wait``, ``ARCANA_LOCK_WAIT``): a cron job must not sit 30 s on a lock."""
