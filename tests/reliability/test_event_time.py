"""Event time against a jumping clock, through the real service (HTTP ingest, analytics on).

The service's wall clock is years away from the events: the stream is stamped in June 2019 and
jumps forwards and backwards by hours and days, in several time-zone spellings and as Unix
seconds; a few events claim to come from days ahead of the wall clock; half-way the process is
killed (``kill -9``) and restarted; then the stream's clock jumps to the present and back to
2019. The drift windows are configured with ``allowed_lateness_s: 3600``,
``future_tolerance_s: 600`` and ``ahead_confirm: 1`` (no hold of events far ahead).

Expected (``service/drift/windows.py``): windows advance by event time only (the watermark is
the largest accepted event time, never the wall clock); an event more than an hour behind the
watermark is counted ``late`` and left out of the windows; an event more than ten minutes ahead
of the wall clock is counted ``future`` and rejected without moving the watermark; the counts
and the watermark survive the restart; every event is still processed or dead-lettered exactly
once. ``test_hostile_http.py`` covers odd timestamp values with the default settings; this
module checks the exact late/future counts and the watermark against a model of the rules.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest

from tests.acceptance.service_process import ServiceProcess
from tests.reliability.conftest import Monitor, assert_invariant, assert_metrics_balance

LATENESS_S = 3600.0
FUTURE_S = 600.0
BASE = datetime(2019, 6, 1, tzinfo=UTC)
IST = timezone(timedelta(hours=5, minutes=30))
MIN, HOUR, DAY = timedelta(minutes=1), timedelta(hours=1), timedelta(days=1)


def _stamp(when: datetime, spelling: str = "utc") -> Any:
    """``when`` as an ISO string in UTC, as an ISO string at +05:30, or as Unix seconds."""
    if spelling == "ist":
        return when.astimezone(IST).isoformat()
    if spelling == "epoch":
        return int(when.timestamp())
    return when.isoformat().replace("+00:00", "Z")


def _phase_one(now: datetime) -> list[tuple[Any, datetime]]:
    """(timestamp as sent, instant) of the first part of the stream, all in 2019 but two."""
    return [
        (_stamp(BASE), BASE),
        (_stamp(BASE + MIN), BASE + MIN),
        (_stamp(BASE + 2 * DAY), BASE + 2 * DAY),  # two days forward
        (_stamp(BASE + 2 * DAY - 30 * MIN, "ist"), BASE + 2 * DAY - 30 * MIN),  # out of order
        (_stamp(BASE + 2 * DAY - 3 * HOUR), BASE + 2 * DAY - 3 * HOUR),  # late
        (_stamp(BASE + DAY, "epoch"), BASE + DAY),  # a day back: late
        (_stamp(now + 3 * DAY), now + 3 * DAY),  # ahead of the wall clock: future
        (_stamp(now + 30 * DAY, "ist"), now + 30 * DAY),  # future
        (_stamp(BASE + 2 * DAY + 10 * MIN, "ist"), BASE + 2 * DAY + 10 * MIN),
        (_stamp(BASE + 2 * DAY + 5 * MIN, "epoch"), BASE + 2 * DAY + 5 * MIN),
        (_stamp(BASE + 2 * DAY + 10 * MIN - 59 * MIN), BASE + 2 * DAY - 49 * MIN),  # in time
        (_stamp(BASE + 2 * DAY + 10 * MIN - 61 * MIN), BASE + 2 * DAY - 51 * MIN),  # late
        (_stamp(BASE + 5 * DAY), BASE + 5 * DAY),  # three days forward
        (_stamp(BASE), BASE),  # five days back: late
    ]


def _phase_two(now: datetime) -> list[tuple[Any, datetime]]:
    """After the restart: around the persisted watermark, then the present, then 2019."""
    return [
        (_stamp(BASE + 5 * DAY - 10 * MIN), BASE + 5 * DAY - 10 * MIN),  # in time
        (_stamp(BASE + 5 * DAY - 2 * HOUR, "epoch"), BASE + 5 * DAY - 2 * HOUR),  # late
        (_stamp(now - MIN), now - MIN),  # the stream's clock jumps years forward
        (_stamp(now - 30 * MIN, "ist"), now - 30 * MIN),  # in time
        (_stamp(BASE + 5 * DAY), BASE + 5 * DAY),  # back to 2019: late now
        (_stamp(now + 5 * MIN), now + 5 * MIN),  # ahead, within the tolerance
    ]


def model(
    stamps: Sequence[float], now: float, watermark: float | None = None
) -> tuple[int, int, float | None]:
    """``(late, future, watermark)`` by the rules of ``service/drift/windows.py``."""
    late = future = 0
    for ts in stamps:
        if ts > now + FUTURE_S:
            future += 1
        elif watermark is not None and ts < watermark - LATENESS_S:
            late += 1
        else:
            watermark = ts if watermark is None else max(watermark, ts)
    return late, future, watermark


def _events(prefix: str, stamps: Sequence[tuple[Any, datetime]]) -> list[dict[str, Any]]:
    return [
        {"event_id": f"{prefix}-{i}", "timestamp": sent,
         "question": f"When is the hostel fee for semester {i} due?"}
        for i, (sent, _) in enumerate(stamps)
    ]  # fmt: skip


@pytest.fixture(scope="module")
def clock_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Both phases, a ``kill -9`` and a restart between them; what the service reported."""
    workdir = tmp_path_factory.mktemp("event-time")
    config = {
        "source": {"kind": "none"},
        "state": {"path": str(workdir / "state" / "state.sqlite")},
        "analytics": {
            "scope_retriever": None,
            # ahead_confirm 1: no hold of events far ahead of the watermark, the rule this
            # module models; the stream's single jumps of days would each be held (ahead)
            # under the defaults, which tests/service/drift/test_watermark_ahead.py checks
            "drift": {
                "allowed_lateness_s": LATENESS_S,
                "future_tolerance_s": FUTURE_S,
                "ahead_confirm": 1,
            },
        },
    }
    monitor = Monitor(interval_s=0.5)
    service = monitor.watch(ServiceProcess.start(workdir, config))
    try:
        now = datetime.now(UTC)
        one, two = _phase_one(now), _phase_two(now)
        bad = [{"event_id": "bad-stamp", "timestamp": "the 31st of Smarch", "question": "fee?"}]
        first = service.post_events([*_events("one", one), *bad]).json()
        drift_one = service.get("/v1/drift").json()
        service.kill()
        service = monitor.watch(service.restart())
        restored = service.get("/v1/drift").json()
        second = service.post_events(_events("two", two)).json()
        monitor.sample(service)
        yield {
            "now": now.timestamp(), "one": one, "two": two, "first": first, "second": second,
            "drift_one": drift_one, "restored": restored, "drift": service.get("/v1/drift").json(),
            "totals": service.totals(), "samples": service.samples(), "monitor": monitor,
            "alive": service.alive, "ready": service.readyz(),
        }  # fmt: skip
    finally:
        monitor.stop()
        service.kill()


def _seconds(stamps: Sequence[tuple[Any, datetime]]) -> list[float]:
    return [when.timestamp() for _, when in stamps]


def test_late_and_future_counted_exactly_by_event_time(clock_run: dict[str, Any]) -> None:
    run = clock_run
    late, future, watermark = model(_seconds(run["one"]), run["now"])
    assert (late, future) == (4, 2)  # the stream is what its comments say
    assert watermark == (BASE + 5 * DAY).timestamp()
    seen = run["drift_one"]["event_time"]
    assert (seen["late"], seen["future"]) == (late, future), seen
    assert seen["watermark"] == watermark, (seen, "the watermark must be event time, 2019")
    assert run["drift_one"]["events_seen"] == len(run["one"])


def test_event_time_state_survives_a_kill(clock_run: dict[str, Any]) -> None:
    assert clock_run["restored"]["event_time"] == clock_run["drift_one"]["event_time"]
    assert clock_run["restored"]["events_seen"] == len(clock_run["one"])


def test_jump_to_the_present_and_back(clock_run: dict[str, Any]) -> None:
    run = clock_run
    before = run["drift_one"]["event_time"]
    late, future, watermark = model(_seconds(run["two"]), run["now"], before["watermark"])
    assert (late, future) == (2, 0)
    assert watermark is not None and math.isclose(watermark, run["now"] + 300)
    seen = run["drift"]["event_time"]
    assert seen["late"] == before["late"] + late, seen
    assert seen["future"] == before["future"] + future, seen
    assert math.isclose(seen["watermark"], watermark, abs_tol=1e-3), seen


def test_counts_stay_exact_and_nothing_crashed(clock_run: dict[str, Any]) -> None:
    run = clock_run
    sent = len(run["one"]) + 1 + len(run["two"])
    assert run["first"]["accepted"] == len(run["one"])
    assert [d["reason"] for d in run["first"]["dead_lettered"]] == ["wrong_type"]
    assert run["second"]["accepted"] == len(run["two"])
    totals = run["totals"]
    assert_invariant(totals, sent)
    assert totals["processed"] == len(run["one"]) + len(run["two"])
    assert run["drift"]["events_seen"] == totals["processed"]
    assert_metrics_balance(run["samples"], "http")  # this process's counters only
    run["monitor"].assert_monotonic()
    assert run["alive"] and run["ready"] == 200
