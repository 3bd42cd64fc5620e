"""CircuitBreaker transitions, driven by a fake monotonic clock (no sleeping)."""

from __future__ import annotations

import pytest

from memory.federation.resilience import BreakerState, CircuitBreaker


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock():
    return FakeClock()


def test_stays_closed_below_threshold_and_success_resets_the_count(clock):
    breaker = CircuitBreaker(fail_threshold=3, reset_after_seconds=10, clock=clock)
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED and breaker.allow()
    breaker.record_success()
    breaker.record_failure()
    breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED  # not 4 in a row: the success broke the run


def test_trips_at_threshold_and_fails_fast_until_reset(clock):
    breaker = CircuitBreaker(fail_threshold=3, reset_after_seconds=10, clock=clock)
    for _ in range(3):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert not breaker.allow()
    clock.now += 9.99
    assert not breaker.allow()
    assert breaker.state is BreakerState.OPEN


def test_one_half_open_probe_after_reset_and_success_closes(clock):
    breaker = CircuitBreaker(fail_threshold=1, reset_after_seconds=10, clock=clock)
    breaker.record_failure()
    clock.now += 10
    assert breaker.allow()  # the probe
    assert breaker.state is BreakerState.HALF_OPEN
    assert not breaker.allow()  # only one probe in flight
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED and breaker.failures == 0
    assert breaker.allow()


def test_failed_probe_reopens_and_restarts_the_timer(clock):
    breaker = CircuitBreaker(fail_threshold=5, reset_after_seconds=10, clock=clock)
    for _ in range(5):
        breaker.record_failure()
    clock.now += 10
    assert breaker.allow()
    breaker.record_failure()  # one failure while half-open is enough
    assert breaker.state is BreakerState.OPEN
    clock.now += 5
    assert not breaker.allow()  # the timer restarted at the failed probe
    clock.now += 5
    assert breaker.allow()


def test_forced_open_is_session_long(clock):
    breaker = CircuitBreaker(fail_threshold=3, reset_after_seconds=10, clock=clock)
    breaker.force_open("corruption")
    assert breaker.state is BreakerState.OPEN
    clock.now += 10_000
    assert not breaker.allow()  # never half-opens: retrying a corrupt store is pointless
    assert breaker.describe() == "open (corruption)"
