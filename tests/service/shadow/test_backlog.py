"""A backlog read under the CPU budget is compared across its whole span, not on its first
batch (trial 15, MEDIUM 3: serve reading a log already on disk compared 500 events, all from
the first of five days, and skipped the other 1,989 as ``cpu_budget``)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

import service.shadow.runner as runner_module
from service.events import QueryLogEvent
from service.pipeline import Batch
from service.shadow.runner import ShadowResult
from service.shadow.stage import ShadowStage
from tests.service.shadow.shadow_fakes import make_event, wait_for
from tests.service.shadow.test_runner import FakeTime, GatedBurner, _lowest, runner_for

DAY0 = datetime(2026, 11, 30, tzinfo=UTC)


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    """The runner's clock and thread CPU are the test's (:class:`FakeTime`)."""
    fake = FakeTime()
    monkeypatch.setattr(runner_module, "time", fake)
    return fake


def _day(i: int) -> int:
    return i // 100  # events 0-99 on day 0, 100-199 on day 1, ...


def _event(i: int) -> QueryLogEvent:
    data = make_event(i).model_dump()
    data["timestamp"] = DAY0 + timedelta(days=_day(i), minutes=i % 100)
    return QueryLogEvent.model_validate(data)


def test_a_five_day_backlog_under_the_budget_is_compared_on_every_day(
    fake_time: FakeTime,
) -> None:
    burner = GatedBurner(fake_time, 0.0625)  # 1/16 CPU-s a call against 0.02 core-s/s
    seen: list[ShadowResult] = []
    runner = runner_for(burner, max_cpu_share=0.02, max_concurrency=1, timeout_s=300,
                        queue_size=50)  # fmt: skip
    stage = ShadowStage(runner, listeners=[seen.append])
    try:
        assert wait_for(lambda: fake_time.watchdog_reads >= 1)
        stage.process(Batch.of([_event(0)], source="log"))
        assert wait_for(lambda: burner.started == 1)  # the worker holds e-0
        burner.tokens.release()  # its CPU puts the runner over the budget
        assert wait_for(lambda: runner.cpu_throttled)
        reads = fake_time.watchdog_reads
        assert wait_for(lambda: fake_time.watchdog_reads >= reads + 3)
        started = burner.started
        assert started in (1, 2), started  # e-1 only if taken before the tick saw the CPU
        # the rest of the backlog, a batch a day, read while the calls are held back
        for day in range(5):
            first = max(1, day * 100)
            stage.process(Batch.of([_event(i) for i in range(first, (day + 1) * 100)], "log"))
        assert runner.cpu_throttled and burner.started == started
        fake_time.now += 10.0  # the backlog read, the budget frees up
        for _ in range(60):
            burner.tokens.release()
        assert runner.wait_idle(60)  # a bound for a loaded machine, not a timing
        stage.collect()
    finally:
        runner.close()
    per_day = Counter(_day(int(r.event_id.split("-")[1])) for r in seen)
    assert set(per_day) == {0, 1, 2, 3, 4}, per_day  # before: {0: 1}, e-0 alone
    # the queue kept the 50 lowest draws of the events offered after the calls started
    # (worked out with a sorted list); each day has some
    offered = [f"e-{i}" for i in range(started, 500)]
    kept, _ = _lowest([], offered, 50)
    expected = Counter(_day(int(e.split("-")[1])) for _, e in kept)
    assert sorted(r.event_id for r in seen) == sorted(
        [f"e-{i}" for i in range(started)] + [e for _, e in kept]
    )
    assert all(expected[d] >= 5 for d in range(5))
    report = stage.report()["candidates"]["cand"]
    assert report["compared_from"] == DAY0.isoformat()  # e-0
    assert report["compared_to"][:10] == "2026-12-04"  # the fifth day
    # the counts still add up: the displaced events are skipped, none is left in flight
    skipped = report["skipped"]
    assert report["in_flight"] == 0 and report["completed"] == started + 50
    assert report["offered"] == 500 == report["completed"] + sum(skipped.values())
