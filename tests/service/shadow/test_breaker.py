"""Circuit breaker and token bucket, driven by a fake clock."""

from __future__ import annotations

import threading

import pytest

from service.pacing import TokenBucket
from service.shadow.breaker import CircuitBreaker


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def fail(breaker: CircuitBreaker, times: int) -> None:
    for _ in range(times):
        assert breaker.allow()
        breaker.record_failure()


def test_opens_after_n_consecutive_failures(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=3, cooldown_s=10, clock=clock)
    fail(breaker, 2)
    breaker.record_success()  # resets the streak: failures must be consecutive
    fail(breaker, 2)
    assert breaker.state == "closed"
    fail(breaker, 1)
    assert breaker.state == "open" and breaker.opened_total == 1
    assert not breaker.allow()


def test_half_open_after_cooldown_admits_m_probes(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=10, half_open_probes=2, clock=clock)
    fail(breaker, 1)
    clock.now += 9.99
    assert not breaker.allow() and breaker.state == "open"
    clock.now += 0.01
    assert breaker.state == "half_open"
    assert breaker.allow() and breaker.allow()
    assert not breaker.allow()  # only M probes
    breaker.release()  # one probe never ran: its slot comes back
    assert breaker.allow()


def test_probe_success_closes(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=5, clock=clock)
    fail(breaker, 2)
    clock.now += 5
    assert breaker.allow()
    breaker.record_success()
    assert breaker.state == "closed"
    fail(breaker, 1)  # the failure count started again from zero
    assert breaker.state == "closed"


def test_probe_failure_reopens_with_a_new_cooldown(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=2, cooldown_s=5, clock=clock)
    fail(breaker, 2)
    clock.now += 5
    assert breaker.allow()
    breaker.record_failure()
    assert breaker.state == "open" and breaker.opened_total == 2
    clock.now += 4.9
    assert not breaker.allow()
    clock.now += 0.1
    assert breaker.allow()


def test_outcomes_while_open_are_ignored(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=1, cooldown_s=5, clock=clock)
    fail(breaker, 1)
    breaker.record_success()
    breaker.record_failure()
    assert breaker.state == "open" and breaker.opened_total == 1


def test_thread_safe_counting(clock: FakeClock) -> None:
    breaker = CircuitBreaker(failure_threshold=8_000, cooldown_s=5, clock=clock)

    def hammer() -> None:
        for _ in range(1_000):
            breaker.allow()
            breaker.record_failure()

    threads = [threading.Thread(target=hammer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert breaker.state == "open" and breaker.opened_total == 1


@pytest.mark.parametrize(
    "kwargs", [{"failure_threshold": 0}, {"cooldown_s": 0}, {"half_open_probes": 0}]
)
def test_bad_breaker_arguments(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        CircuitBreaker(**kwargs)  # type: ignore[arg-type]


def test_token_bucket_rate_and_burst(clock: FakeClock) -> None:
    bucket = TokenBucket(rate=10, burst=3, clock=clock)
    assert [bucket.try_take() for _ in range(4)] == [True, True, True, False]
    clock.now += 0.1  # one token
    assert bucket.try_take() and not bucket.try_take()
    clock.now += 100  # refills to burst, not beyond
    assert sum(bucket.try_take() for _ in range(10)) == 3


def test_token_bucket_default_burst_is_one_second(clock: FakeClock) -> None:
    assert TokenBucket(rate=0.5, clock=clock).burst == 1.0
    assert TokenBucket(rate=50, clock=clock).burst == 50.0
    with pytest.raises(ValueError):
        TokenBucket(rate=0, clock=clock)
