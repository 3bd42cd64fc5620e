"""The deadline of the current backend call, for backends that can stop early.

Whoever imposes a budget (the federation's resilient tiers) sets it; the
SQLite store turns it into a progress handler, so a call past its deadline is
stopped inside SQLite instead of merely abandoned by the awaiting coroutine.
"""

from __future__ import annotations

from contextvars import ContextVar

DEADLINE: ContextVar[float | None] = ContextVar("arcana_deadline", default=None)
"""``time.monotonic()`` value by which the current call must finish, or None."""
