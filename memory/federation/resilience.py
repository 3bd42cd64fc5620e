"""Timeouts and circuit breakers around one tier, so a slow, locked or corrupt
store can never stall or sink a whole session.

Reads are total (a failing tier answers ``[]`` plus a degraded event); writes
are partial (they raise :class:`TierWriteFailed` carrying the tier's scope and
let the federation decide the blast radius).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from enum import StrEnum
from typing import Any

from memory.budgets import TierBudget
from memory.deadline import DEADLINE
from memory.errors import MemoryCorruptError, TierWriteFailed
from memory.federation.events import DegradedSink, MemoryDegradedEvent
from memory.protocols import (
    BatchWriter, GetsMany, MemoryAdapter, PreparesWrites, SessionNeighbours, admitting_of, is_read_only, ledger_of,
)
from memory.types import Audience, HealthStatus, MemoryEntry, MemoryQuery, MemoryScope, RetrievalMode

Clock = Callable[[], float]
BULK_BUDGET_ROWS = 8  # a batch write gets one write budget per this many rows: 64 timed out embedding 1,024 rows on a loaded 2-core machine


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class CircuitBreaker:
    """Trips after ``fail_threshold`` consecutive failures; recovers via one probe.

    Tripped by failures seen in real traffic, not by polling. While OPEN it
    fails fast; once ``reset_after_seconds`` pass, exactly one call is let
    through (HALF_OPEN) and its outcome closes or re-opens the breaker.
    :meth:`force_open` is for session-long conditions (corruption): such a
    breaker never half-opens. ``clock`` is a monotonic source of seconds,
    injected so tests move time without sleeping.
    """

    def __init__(self, fail_threshold: int = 3, reset_after_seconds: float = 30.0, clock: Clock = time.monotonic):
        self.fail_threshold = fail_threshold
        self.reset_after_seconds = reset_after_seconds
        self.clock = clock
        self.state = BreakerState.CLOSED
        self.failures = 0
        self.opened_at: float | None = None
        self.forced_reason: str | None = None

    def allow(self) -> bool:
        """May a call go to the backend now? Moves OPEN → HALF_OPEN when due."""
        if self.state is BreakerState.CLOSED:
            return True
        if self.state is BreakerState.HALF_OPEN or self.forced_reason is not None:
            return False  # the single probe is already in flight, or quarantined
        if self.clock() - (self.opened_at or 0.0) >= self.reset_after_seconds:
            self.state = BreakerState.HALF_OPEN
            return True
        return False

    def record_success(self) -> None:
        self.state = BreakerState.CLOSED
        self.failures = 0
        self.opened_at = None

    def record_failure(self) -> None:
        """Count a failure; a failed HALF_OPEN probe re-opens at once."""
        self.failures += 1
        if self.state is BreakerState.HALF_OPEN or self.failures >= self.fail_threshold:
            self._open()

    def force_open(self, reason: str) -> None:
        """Open for the rest of the session, whatever the count (e.g. corruption)."""
        self.forced_reason = reason
        self._open()

    def _open(self) -> None:
        self.state = BreakerState.OPEN
        self.opened_at = self.clock()

    def describe(self) -> str:
        if self.forced_reason:
            return f"open ({self.forced_reason})"
        if self.state is BreakerState.CLOSED and self.failures:
            return f"closed ({self.failures}/{self.fail_threshold} failures)"
        return self.state.value


@dataclass
class TierRead:
    """What one tier answered: its entries, or why it had none."""

    entries: list[MemoryEntry]
    degraded: MemoryDegradedEvent | None = None


class _BreakerOpen(Exception):
    pass


class ResilientTier:
    """One backend behind a timeout and a circuit breaker.

    Semantic and hybrid reads get their own (longer) budget because they may
    wait on an embedder. The budget is also published as :data:`DEADLINE`, so
    the SQLite store stops its own work in time; a backend that cannot stop is
    left to finish on its thread, so a timed-out write's outcome is unknown,
    which is why it is reported as failed rather than assumed lost or kept.
    """

    def __init__(
        self,
        adapter: MemoryAdapter,
        *,
        name: str,
        scope: MemoryScope,
        pool_name: str | None = None,
        budget: TierBudget | None = None,
        clock: Clock = time.monotonic,
        read_only: bool | None = None,
        on_degraded: DegradedSink | None = None,
    ):
        self.backend = adapter
        self.name = name
        self.scope = scope
        self.pool_name = pool_name
        self.budget = budget or TierBudget()
        self.read_only = is_read_only(adapter) if read_only is None else read_only
        self.on_degraded = on_degraded
        self.breaker = CircuitBreaker(self.budget.fail_threshold, self.budget.reset_after_seconds, clock)

    def _read_timeout(self, query: MemoryQuery) -> float:
        budget = self.budget.semantic_timeout_ms if _semantic(query) else self.budget.read_timeout_ms
        return budget / 1000

    async def _guarded(self, call: Callable[[], Awaitable[Any]], timeout: float) -> Any:
        """Run ``call`` if the breaker allows, within ``timeout``; feed the breaker."""
        if not self.breaker.allow():
            raise _BreakerOpen(self.breaker.describe())
        settled = False
        token = DEADLINE.set(time.monotonic() + timeout)  # lets the backend itself stop in time
        try:
            async with asyncio.timeout(timeout):  # no extra task, unlike wait_for
                result = await call()
            self.breaker.record_success()
            settled = True
            return result
        except MemoryCorruptError:
            self.breaker.force_open("corruption")
            settled = True
            raise
        except Exception:
            self.breaker.record_failure()
            settled = True
            raise
        finally:
            DEADLINE.reset(token)
            if not settled:  # cancelled from outside: release a half-open probe
                self.breaker.record_failure()

    def _event(self, op: str, exc: BaseException) -> MemoryDegradedEvent:
        return MemoryDegradedEvent(
            tier=self.name, scope=self.scope.value, op=op, reason=failure_reason(exc), detail=describe_failure(exc)
        )

    async def read(self, query: MemoryQuery) -> TierRead:
        """Search within budget. Never raises: a failure is an empty read plus its event.

        Trigger: a semantic or hybrid read timed out (typically a cold model
        load on a busy machine). Why: an empty read would hide what the keyword
        index can still find. Outcome: one keyword read on the keyword budget;
        its results come back with the timeout event, marked as answered by keyword.
        """
        try:
            entries = await self._guarded(lambda: self.backend.search(query), self._read_timeout(query))
            return TierRead(list(entries))
        except Exception as exc:
            event = self._event("read", exc)
            retry = isinstance(exc, TimeoutError) and _semantic(query)
        if retry:
            keyword = query.model_copy(update={"retrieval_mode": RetrievalMode.keyword})
            try:
                entries = await self._guarded(lambda: self.backend.search(keyword), self.budget.read_timeout_ms / 1000)
                return TierRead(list(entries), replace(event, detail=f"{event.detail}; answered by keyword instead"))
            except Exception:
                pass
        return TierRead([], event)

    async def search(self, query: MemoryQuery) -> list[MemoryEntry]:
        """Total search for callers using the tier alone; emits its degraded event."""
        outcome = await self.read(query)
        if outcome.degraded is not None and self.on_degraded is not None:
            self.on_degraded(outcome.degraded)
        return outcome.entries

    async def get(
        self, entry_id: str, *, audience: Audience | None = None
    ) -> tuple[MemoryEntry | None, MemoryDegradedEvent | None]:
        """``entry_id`` as the backend's own get admits it (recall's rules), or as ``audience`` may read
        it: an agent's history of a shared fact reaches its replaced versions (a backend that cannot
        admit by audience, or cannot be reached, answers by its own get)."""

        async def read() -> MemoryEntry | None:
            store = None if audience is None else admitting_of(self.backend)
            if store is None:
                return await self.backend.get(entry_id)
            return (await store.admitted_by_id(MemoryQuery(), [entry_id], audience=audience)).get(entry_id)

        try:
            found = await self._guarded(read, self.budget.read_timeout_ms / 1000)
            return found, None
        except Exception as exc:
            return None, self._event("get", exc)

    async def get_many(self, entry_ids: Sequence[str]) -> tuple[dict[str, MemoryEntry], MemoryDegradedEvent | None]:
        """:meth:`get` of many ids, in one backend read where the backend can (:class:`GetsMany`)."""
        backend = self.backend

        async def read() -> dict[str, MemoryEntry]:
            if isinstance(backend, GetsMany):
                return await backend.get_many(entry_ids)
            found = {entry_id: await backend.get(entry_id) for entry_id in entry_ids}
            return {entry_id: entry for entry_id, entry in found.items() if entry is not None}

        try:
            return await self._guarded(read, self.budget.read_timeout_ms / 1000), None
        except Exception as exc:
            return {}, self._event("get", exc)

    async def reworded(self, since: Mapping[str, datetime]) -> set[str]:
        """Of ``since`` (memory id -> a time), those this tier's ledger shows re-worded after that
        time: any change whose text differs, whatever op it is ledgered as (`memory set --content` and
        a revert write an ``update``, an import of an edited export an ``import``). A tier that cannot
        say counts every one of them: the caller leaves out what quoted them rather than give back
        words an operator removed."""
        store = ledger_of(self.backend)
        if store is None or not since:
            return set()

        async def read() -> set[str]:
            found = set()
            for memory_id, at in since.items():
                for record in await store.history(memory_id):
                    if record.at > at and record.before and record.after \
                            and record.before.get("content") != record.after.get("content"):
                        found.add(memory_id)
                        break
            return found

        try:
            return await self._guarded(read, self.budget.read_timeout_ms / 1000)
        except Exception:
            return set(since)

    async def session_neighbours(
        self, query: MemoryQuery, entry_ids: Sequence[str]
    ) -> tuple[dict[str, list[MemoryEntry]], MemoryDegradedEvent | None]:
        """The turns next to ``entry_ids`` in their sessions, within the read budget ({} when the
        backend cannot tell). Never raises: a failure is {} plus its event."""
        if not isinstance(self.backend, SessionNeighbours) or not entry_ids:
            return {}, None
        backend = self.backend
        try:
            found = await self._guarded(lambda: backend.session_neighbours(query, entry_ids), self.budget.read_timeout_ms / 1000)
            return found, None
        except Exception as exc:
            return {}, self._event("read", exc)

    async def _prepare_write(self) -> None:
        """What a backend does once before its first write (a model load), outside the write budget."""
        if isinstance(self.backend, PreparesWrites):
            await self.backend.prepare_write()

    async def write(self, entry: MemoryEntry) -> None:
        """Write within budget, or raise :class:`TierWriteFailed` (scope + reason)."""
        if self.read_only:
            raise TierWriteFailed(self.scope.value, "read_only", None)
        try:
            await self._prepare_write()
            await self._guarded(lambda: self.backend.write(entry), self.budget.write_timeout_ms / 1000)
        except Exception as exc:
            raise TierWriteFailed(self.scope.value, failure_reason(exc), exc) from exc

    async def write_many(self, entries: Sequence[MemoryEntry]) -> list[str] | None:
        """Write a batch within budget (one write budget per :data:`BULK_BUDGET_ROWS` rows).

        Returns the backend's op per entry when it reports them (SQLite and
        vector stores do), else None. Raises :class:`TierWriteFailed` like
        :meth:`write`; a backend without ``write_many`` is written one by one.
        """
        if self.read_only:
            raise TierWriteFailed(self.scope.value, "read_only", None)
        timeout = self.budget.write_timeout_ms / 1000 * max(1, -(-len(entries) // BULK_BUDGET_ROWS))

        async def call() -> Any:
            if isinstance(self.backend, BatchWriter):
                return await self.backend.write_many(list(entries))
            for entry in entries:
                await self.backend.write(entry)
            return None

        try:
            await self._prepare_write()
            result = await self._guarded(call, timeout)
        except Exception as exc:
            raise TierWriteFailed(self.scope.value, failure_reason(exc), exc) from exc
        ops = result if isinstance(result, list) else getattr(result, "ops", None)
        return ops if ops is not None and len(ops) == len(entries) else None

    async def health_check(self) -> HealthStatus:
        """The backend's own health, bounded by the read budget. Never raises."""
        if self.breaker.forced_reason:
            return HealthStatus(healthy=False, message=f"{self.name}: shut for this session ({self.breaker.forced_reason})")
        try:
            status = await asyncio.wait_for(self.backend.health_check(), self.budget.read_timeout_ms / 1000)
        except Exception as exc:
            return HealthStatus(healthy=False, message=f"{self.name}: {describe_failure(exc)}")
        return status


def _semantic(query: MemoryQuery) -> bool:
    return bool(query.text) and query.retrieval_mode is not RetrievalMode.keyword


def failure_reason(exc: BaseException) -> str:
    if isinstance(exc, TierWriteFailed):
        return exc.reason
    if isinstance(exc, _BreakerOpen):
        return "breaker_open"
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, MemoryCorruptError):
        return "corruption"
    return "backend_error"


def describe_failure(exc: BaseException) -> str:
    if isinstance(exc, TierWriteFailed) and exc.cause is not None:
        return describe_failure(exc.cause)
    if isinstance(exc, _BreakerOpen):
        return f"circuit breaker {exc}"
    if isinstance(exc, TimeoutError):
        return "timed out"
    return str(exc) or type(exc).__name__
