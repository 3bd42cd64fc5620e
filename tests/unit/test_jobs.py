"""BackgroundJobQueue: never blocks, critical always in, non-critical shed on the drain estimate."""

from __future__ import annotations

import asyncio
import time

import pytest

from memory.jobs import BackgroundJobQueue, JobKind, MemoryJob, drain


def job(critical=False, run=None, label=""):
    async def nothing():
        return None

    return MemoryJob(JobKind.EXTRACTION, run or nothing, critical=critical, label=label)


def test_sheds_non_critical_once_drain_estimate_reaches_headroom():
    queue = BackgroundJobQueue(max_drain_seconds=1.0, initial_service_seconds=0.25)
    accepted = [queue.submit(job()) for _ in range(6)]
    assert accepted == [True, True, True, True, False, False]  # 4 × 0.25 s = the 1 s headroom
    assert queue.depth == 4 and queue.metrics.shed == 2
    assert queue.submit(job(critical=True)) is True  # critical work is never shed
    assert queue.depth == 5 and queue.snapshot()["drain_estimate_seconds"] == 1.25


def test_zero_headroom_sheds_all_non_critical():
    queue = BackgroundJobQueue(max_drain_seconds=0.0)
    assert queue.submit(job()) is False
    assert queue.submit(job(critical=True)) is True


def test_submit_never_blocks():
    queue = BackgroundJobQueue(max_drain_seconds=0.0)
    started = time.perf_counter()
    for index in range(10_000):
        queue.submit(job(critical=index % 2 == 0))
    assert time.perf_counter() - started < 1.0
    assert queue.metrics.accepted == 5000 and queue.metrics.shed == 5000


def test_ewma_follows_observed_service_time():
    queue = BackgroundJobQueue(initial_service_seconds=1.0, alpha=0.5)
    queue.record_service_time(0.0)
    assert queue.ewma_service_seconds == 0.5
    queue.record_service_time(0.0)
    assert queue.ewma_service_seconds == 0.25


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError):
        BackgroundJobQueue(alpha=0)


async def test_drain_runs_fifo_reports_failures_and_learns_service_time():
    queue = BackgroundJobQueue(initial_service_seconds=5.0, max_drain_seconds=100)
    order, errors = [], []

    def step(name, fail=False):
        async def run():
            order.append(name)
            if fail:
                raise RuntimeError(f"{name} broke")

        return run

    for name, fail in (("a", False), ("b", True), ("c", False)):
        queue.submit(job(run=step(name, fail), label=name))
    report = await drain(queue, budget_seconds=5, on_error=lambda j, e: errors.append((j.label, str(e))))
    assert order == ["a", "b", "c"]
    assert (report.completed, report.failed, report.abandoned) == (2, 1, [])
    assert errors == [("b", "b broke")]
    assert queue.ewma_service_seconds < 5.0 and queue.depth == 0


async def test_drain_is_bounded_by_its_budget():
    queue = BackgroundJobQueue(max_drain_seconds=100)

    async def slow():
        await asyncio.sleep(5)

    queue.submit(job(run=slow, label="slow"))
    queue.submit(job(label="after"))
    started = time.perf_counter()
    report = await drain(queue, budget_seconds=0.2, on_error=lambda j, e: None)
    assert time.perf_counter() - started < 1.0
    assert report.abandoned == ["slow", "after"] and queue.metrics.abandoned == 2
