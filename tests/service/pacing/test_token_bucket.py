"""The token bucket both rate limits use (counts worked out by hand on a fake clock)."""

from __future__ import annotations

import pytest

from service.pacing import TokenBucket


class Clock:
    """A settable monotonic clock whose ``sleep`` moves it (and records the sleeps)."""

    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_try_take_starts_full_and_refills_at_rate_up_to_burst() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=4, burst=2, clock=clock)
    assert [bucket.try_take() for _ in range(3)] == [True, True, False]
    clock.now += 0.25  # 4/s · 0.25 s = one token
    assert [bucket.try_take() for _ in range(2)] == [True, False]
    clock.now += 10.0  # 40 tokens earned, 2 kept
    assert bucket.tokens == 2.0


def test_one_period_of_float_dust_still_gives_a_token() -> None:
    clock = Clock()
    clock.now = 0.6
    bucket = TokenBucket(rate=10, burst=1, clock=clock)
    assert bucket.try_take()
    clock.now = 0.7  # (0.7 - 0.6) · 10 = 0.9999999999999998 in floats: one token
    assert (clock.now - 0.6) * 10 < 1
    assert bucket.try_take()
    assert bucket.wait(1, deadline=0.7, sleep=clock.sleep) == 0  # spent: none left


def test_wait_sleeps_for_the_missing_fraction_then_counts_whole_tokens() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=10, tokens=1.0, clock=clock)  # burst max(1, 10) = 10
    assert bucket.wait(5, deadline=clock.now + 1, sleep=clock.sleep) == 1  # one at the start
    bucket.spend(1)
    clock.now += 0.05  # half a token: wait (1 - 0.5) / 10 = 0.05 s more
    assert bucket.wait(5, deadline=clock.now + 1, sleep=clock.sleep) == 1
    assert clock.slept == [pytest.approx(0.05)]
    bucket.spend(0)  # nothing was read: the token stays
    clock.now += 0.35  # 1 + 3.5 tokens
    assert bucket.wait(3, deadline=clock.now + 1, sleep=clock.sleep) == 3  # want caps it
    assert bucket.wait(9, deadline=clock.now + 1, sleep=clock.sleep) == 4
    assert clock.slept == [pytest.approx(0.05)]


def test_wait_stops_at_the_deadline() -> None:
    clock = Clock()
    bucket = TokenBucket(rate=1, tokens=0.0, clock=clock)
    assert bucket.wait(1, deadline=clock.now + 0.25, sleep=clock.sleep) == 0
    assert clock.slept == [0.25]  # needed 1 s, the deadline allowed 0.25 s
    assert bucket.tokens == pytest.approx(0.25)


def test_default_burst_is_one_second_of_rate() -> None:
    assert TokenBucket(rate=0.5).burst == 1.0
    assert TokenBucket(rate=50).burst == 50.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"rate": 0},
        {"rate": -1},
        {"rate": 1, "burst": 0.5},
        {"rate": 1, "tokens": 2.0},
        {"rate": 1, "tokens": -0.1},
    ],
)
def test_bad_arguments_are_refused(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="token bucket needs"):
        TokenBucket(**kwargs)
