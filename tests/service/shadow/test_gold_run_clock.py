"""A gold-set run's ``duration_s`` when the wall clock is stepped back during the run (an NTP
correction): it is measured on the monotonic clock, so it stays the run's real length, while
``started_at``/``finished_at`` keep reporting the wall clock as it was read."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from service.settings import Settings
from service.shadow import gold_runs
from tests.service.shadow.test_gold_runs import settings  # noqa: F401  (the fixture)

STEP_BACK_S = 3600.0


@pytest.fixture
def stepped_clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[float]]:
    """``time.time`` as ``gold_runs`` sees it: true time until the first reading, then one
    hour behind (the step happens right after the run read its start)."""
    readings: list[float] = []
    real = time.time

    def wall() -> float:
        value = real() - (STEP_BACK_S if readings else 0.0)
        readings.append(value)
        return value

    monkeypatch.setattr(gold_runs.time, "time", wall)
    yield readings


def test_duration_stays_real_when_the_wall_clock_steps_back(
    settings: Settings,  # noqa: F811
    stepped_clock: list[float],
) -> None:
    started = time.monotonic()
    run = gold_runs.run_gold_set(settings, "test")
    elapsed = time.monotonic() - started
    assert run["finished_at"] < run["started_at"]  # the step is visible in the wall times
    assert run["started_at"] - run["finished_at"] > STEP_BACK_S - elapsed - 1
    assert 0 <= run["duration_s"] <= elapsed + 0.001
