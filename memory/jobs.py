"""Background memory work (extraction, summaries, consolidation) off the answer's path, with load-shedding.

:class:`BackgroundJobQueue` never blocks a submitter: critical jobs (a
user-confirmed preference) are always accepted, non-critical ones are shed
once the backlog's drain estimate — depth × EWMA(service time) — reaches the
headroom. :func:`drain` is the consumer: it runs queued jobs after the answer
is out, within a time budget, so a process still exits promptly.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class JobKind(StrEnum):
    """What a job does — and, by nature, how sheddable it is."""

    EXTRACTION = "extraction"
    SUMMARY = "summary"
    CONSOLIDATION = "consolidation"


@dataclass
class MemoryJob:
    """A unit of deferred memory work; ``run`` is a coroutine factory the consumer awaits."""

    kind: JobKind
    run: Callable[[], Awaitable[Any]]
    critical: bool = False
    label: str = ""


@dataclass
class JobMetrics:
    accepted: int = 0
    shed: int = 0
    completed: int = 0
    failed: int = 0
    abandoned: int = 0
    max_depth: int = 0


class BackgroundJobQueue:
    def __init__(
        self,
        *,
        max_drain_seconds: float = 5.0,
        initial_service_seconds: float = 0.05,
        alpha: float = 0.3,
    ):
        if max_drain_seconds < 0 or initial_service_seconds < 0 or not 0 < alpha <= 1:
            raise ValueError("max_drain_seconds and initial_service_seconds must be >= 0, alpha in (0, 1]")
        self.max_drain_seconds = max_drain_seconds
        self.alpha = alpha
        self.ewma_service_seconds = initial_service_seconds
        self.metrics = JobMetrics()
        self._jobs: deque[MemoryJob] = deque()

    @property
    def depth(self) -> int:
        return len(self._jobs)

    @property
    def drain_estimate(self) -> float:
        """Seconds the current backlog would take at the observed service rate."""
        return self.depth * self.ewma_service_seconds

    def submit(self, job: MemoryJob) -> bool:
        """Enqueue without blocking. False means a non-critical job was shed."""
        if not job.critical and self.drain_estimate >= self.max_drain_seconds:
            self.metrics.shed += 1
            return False
        self._jobs.append(job)
        self.metrics.accepted += 1
        self.metrics.max_depth = max(self.metrics.max_depth, self.depth)
        return True

    def pop(self) -> MemoryJob | None:
        """The oldest job, or None when empty."""
        return self._jobs.popleft() if self._jobs else None

    def record_service_time(self, seconds: float) -> None:
        self.ewma_service_seconds += self.alpha * (max(0.0, seconds) - self.ewma_service_seconds)

    def snapshot(self) -> dict[str, Any]:
        return {
            "depth": self.depth,
            "drain_estimate_seconds": round(self.drain_estimate, 6),
            "ewma_service_seconds": round(self.ewma_service_seconds, 6),
            "max_drain_seconds": self.max_drain_seconds,
            **vars(self.metrics),
        }


@dataclass
class DrainReport:
    completed: int = 0
    failed: int = 0
    abandoned: list[str] = field(default_factory=list)


async def drain(
    queue: BackgroundJobQueue,
    *,
    budget_seconds: float,
    on_error: Callable[[MemoryJob, BaseException], None],
) -> DrainReport:
    """Run queued jobs oldest first until empty or the budget is spent.

    A failing job is reported to ``on_error`` and the rest still run; a job cut
    off by the budget, and any left queued, count as abandoned.
    """
    report = DrainReport()
    deadline = time.monotonic() + budget_seconds
    while (job := queue.pop()) is not None:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            report.abandoned.append(job.label or job.kind.value)
            continue
        started = time.monotonic()
        try:
            await asyncio.wait_for(job.run(), timeout=remaining)
        except TimeoutError:
            report.abandoned.append(job.label or job.kind.value)
            continue
        except Exception as exc:  # a job's failure is the job's; the consumer carries on
            report.failed += 1
            queue.metrics.failed += 1
            on_error(job, exc)
        else:
            report.completed += 1
            queue.metrics.completed += 1
        queue.record_service_time(time.monotonic() - started)
    queue.metrics.abandoned += len(report.abandoned)
    return report
