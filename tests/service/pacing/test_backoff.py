"""The retry schedule: capped doubling, equal jitter (delays worked out by hand)."""

from __future__ import annotations

import math
from itertools import islice

import pytest

from service.pacing import Backoff


def test_capped_doubling_of_the_consumer_restart_and_dead_letter_loops() -> None:
    # 0.5 · 2**n: 0.5, 1, 2, 4, 8, 16, 32 → capped at 30 (restart) or 10 (dead letters)
    restart = list(islice(Backoff(0.5, max_s=30.0).delays(), 8))
    assert restart == [0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    dead_letters = list(islice(Backoff(0.5, max_s=10.0).delays(), 7))
    assert dead_letters == [0.5, 1.0, 2.0, 4.0, 8.0, 10.0, 10.0]


def test_no_cap_and_zero_first_delay() -> None:
    assert Backoff(0.05).delay(3) == pytest.approx(0.4)  # 0.05 · 8
    assert Backoff(0.0, max_s=1.0).delay(2000) == 0.0
    assert Backoff(1.0, max_s=5.0).delay(5000) == 5.0  # 2**5000 overflows a float: capped
    assert Backoff(1.0).delay(5000) == math.inf


def test_jitter_is_drawn_from_half_to_whole_capped_delay() -> None:
    drawn: list[tuple[float, float]] = []

    def uniform(a: float, b: float) -> float:
        drawn.append((a, b))
        return b

    backoff = Backoff(0.2, max_s=1.0, jitter=True)
    # d = min(0.2 · 2**n, 1.0): 0.2, 0.4, 0.8, 1.0 (1.6 capped), 1.0 (3.2 capped)
    assert [backoff.delay(n, uniform) for n in range(5)] == [0.2, 0.4, 0.8, 1.0, 1.0]
    assert drawn == [(0.1, 0.2), (0.2, 0.4), (0.4, 0.8), (0.5, 1.0), (0.5, 1.0)]
    for n in range(5):  # the real draw stays in [d/2, d]
        assert drawn[n][0] <= backoff.delay(n) <= drawn[n][1]


def test_no_jitter_ignores_the_draw() -> None:
    assert Backoff(0.5).delay(1, lambda a, b: -1.0) == 1.0


@pytest.mark.parametrize(
    ("first_s", "max_s"),
    [(-0.1, 1.0), (math.inf, 1.0), (math.nan, 1.0), (0.5, -1.0), (0.5, math.nan)],
)
def test_bad_schedules_are_refused(first_s: float, max_s: float) -> None:
    with pytest.raises(ValueError, match="backoff needs"):
        Backoff(first_s, max_s=max_s)


def test_negative_retry_is_refused() -> None:
    with pytest.raises(ValueError, match="retry must be >= 0"):
        Backoff(0.5).delay(-1)
