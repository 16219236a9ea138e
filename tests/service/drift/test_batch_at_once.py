"""A batch fed to the detectors at once must give what feeding it chunk by chunk gives.

:meth:`DriftStage.process` feeds a one-stream batch to each detector in one update and reads
each 100-event chunk's alarms and kept-out counts off the tests' log and the late and future
masks (:meth:`DriftStage._process_at_once`). The reference here is the chunk-by-chunk path
(one update per ``ALARM_RESOLUTION`` events, what the stage did before), on an adversarial
stream: late events (a stretch late enough to starve the windows), future events, events
held ahead of the watermark (the stage then falls back), rates given on some events only,
test times and alarms (in and out of drift) inside batches of uneven sizes. Everything must
match: report, state snapshot, alarms with ``after_events``, the metrics' kept-out counts.

Independently of that path, the alarms must also be those worked out from feeding the
events one at a time: read each comparison's state after every event; an alarm is a move
into or out of ``drift`` at the event whose test made it, with that test's time and p-value
(session 36: they were read at the end of every 100-event chunk of a batch,
:data:`ALARM_RESOLUTION`, and dated by its last test; a replay's full batches reported the
alarms hours of event time later than the live service's small ones).
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from service.drift import windows
from service.drift.stage import ALARM_RESOLUTION, DriftStage
from service.drift.windows import ComparisonWindows, WindowConfig
from service.events import QueryLogEvent
from service.pipeline import Batch

T0 = 1_790_000_000.0
NOW = T0 + 30 * 86_400.0  # the wall clock: constant, a month after the stream starts
GOLD = {"language": {"en": 90, "es": 10}, "topic": {"a": 50, "b": 50}}
CONFIG = WindowConfig(window_s=600, bucket_s=60, reference_window_s=1800, test_every_s=60,
                      warmup_s=1200, allowed_lateness_s=300, future_tolerance_s=60,
                      max_ahead_s=1200, ahead_confirm=3)  # fmt: skip
SIZES = (1, 7, 99, 100, 101, 250, 500, 733)


def _stream(n: int = 6000, seed: int = 7) -> tuple[list[float], list[dict[str, Any]]]:
    """``n`` events about 1.5 s apart: the languages and topics drift from 35 % to 80 % of the
    stream, refusals from 60 %; 3 % come late (400-2000 s behind), 60 % from 45 % to 75 % of
    the stream (the windows starve from about 64 %: the alarms out of drift read ``starved``);
    1 % are stamped 1000 s past the clock (future); one is 1300 s ahead (held)."""
    rng = random.Random(seed)
    t, stamps, notes = T0, [], []
    for i in range(n):
        t += rng.expovariate(1 / 1.5)
        shifted = 0.35 * n <= i < 0.8 * n
        language = rng.choice(["hi", "en", "es"] if shifted else ["en"] * 9 + ["es"])
        topic = rng.choice(["c", "a"] if shifted else ["a", "b"])
        refused = rng.random() < (0.3 if 0.6 * n <= i < 0.8 * n else 0.05)
        note: dict[str, Any] = {"language": language, "topic": topic}
        if rng.random() < 0.7:  # an answer: refused or not
            note["refused"] = refused
        if rng.random() < 0.5:  # a scope score
            note["out_of_scope"] = rng.random() < 0.1
        stamp = t
        late_share = 0.6 if 0.45 * n <= i < 0.75 * n else 0.03
        if rng.random() < late_share:
            stamp = t - rng.uniform(400, 2000)
        elif rng.random() < 0.01:
            stamp = NOW + 1000
        if i == int(0.7 * n):
            stamp = t + 1300  # held ahead until the watermark passes it
        stamps.append(round(stamp, 3))
        notes.append(note)
    return stamps, notes


def _batches(stamps: list[float], notes: list[dict[str, Any]], sizes: tuple[int, ...]
             ) -> list[tuple[int, int]]:  # fmt: skip
    rng, bounds, start = random.Random(11), [], 0
    while start < len(stamps):
        end = min(len(stamps), start + rng.choice(sizes))
        bounds.append((start, end))
        start = end
    return bounds


def _run(stage: DriftStage, stamps: list[float], notes: list[dict[str, Any]],
         bounds: list[tuple[int, int]], streams: list[str] | None = None,
         ) -> tuple[list[dict[str, Any]], dict[str, int]]:  # fmt: skip
    kept = {"late": 0, "future": 0}
    for start, end in bounds:
        events = [QueryLogEvent(event_id=str(i), question="q",
                                timestamp=datetime.fromtimestamp(stamps[i], UTC))
                  for i in range(start, end)]  # fmt: skip
        batch = Batch.of(events, "file" if streams is None else "kafka",
                         None if streams is None else streams[start:end])  # fmt: skip
        batch.annotations = [dict(note) for note in notes[start:end]]
        stage.process(batch)
        for key, n in stage.take_kept_out().items():
            kept[key] += n
    state = json.loads(json.dumps([stage.report(), stage.state_snapshot()]))
    return state, kept


def _stage(config: WindowConfig = CONFIG) -> DriftStage:
    return DriftStage(GOLD, windows=config, min_count=40, clock=lambda: NOW)


@pytest.fixture(scope="module")
def stream() -> tuple[list[float], list[dict[str, Any]], list[tuple[int, int]]]:
    stamps, notes = _stream()
    return stamps, notes, _batches(stamps, notes, SIZES)


def test_at_once_equals_chunk_by_chunk(
    stream: tuple[list[float], list[dict[str, Any]], list[tuple[int, int]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stamps, notes, bounds = stream
    at_once = _stage()
    taken = _at_once(at_once, monkeypatch)
    chunked = _stage()
    monkeypatch.setattr(chunked, "_process_at_once", lambda *args: False)
    got, got_kept = _run(at_once, stamps, notes, bounds)
    want, want_kept = _run(chunked, stamps, notes, bounds)
    # the stream did what it is for: most batches at once, some held back to chunks; tests
    # and alarms (into and out of drift) inside batches; late, future, held and starved
    assert taken.count(True) > 20 and taken.count(False) > 2
    report = want[0]
    assert {alarm["state"] for alarm in report["alarms"]} == {"drift", "starved"}
    assert len(report["alarms"]) >= 6
    assert {alarm["after_events"] % ALARM_RESOLUTION for alarm in report["alarms"]} != {0}
    event_time = report["event_time"]
    assert event_time["late"] > 1000 and event_time["future"] > 30 and event_time["ahead"] == 1
    assert want_kept["late"] == event_time["late"] and "starved" in event_time
    assert json.dumps(got) == json.dumps(want)  # the keys' order too (e.g. the partitions')
    assert got_kept == want_kept


def test_at_once_equals_chunk_by_chunk_on_kafka_partitions(
    stream: tuple[list[float], list[dict[str, Any]], list[tuple[int, int]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the same events read from 3 partitions, the second 150 s and the third 280 s behind
    # the first in event time, tested every 10 min: most of theirs come behind the last
    # test, so re-tests (after min_count such events, decided at each chunk's end) run
    # inside batches
    stamps, notes, bounds = stream
    streams = [f"q[{i % 3}]" for i in range(len(stamps))]
    shifted = [t - (0.0, 150.0, 280.0)[i % 3] for i, t in enumerate(stamps)]
    retests: list[int] = []
    test = ComparisonWindows._test

    def counted(self: ComparisonWindows, on_tick: Any, after: int, freeze: bool = True) -> None:
        retests.append(not freeze)
        test(self, on_tick, after, freeze)

    monkeypatch.setattr(ComparisonWindows, "_test", counted)
    config = replace(CONFIG, test_every_s=600)
    at_once = _stage(config)
    taken = _at_once(at_once, monkeypatch)
    chunked = _stage(config)
    monkeypatch.setattr(chunked, "_process_at_once", lambda *args: False)
    got, got_kept = _run(at_once, shifted, notes, bounds, streams)
    n_retests = sum(retests)
    want, want_kept = _run(chunked, shifted, notes, bounds, streams)
    assert taken.count(True) > 20 and taken.count(False) > 2
    assert n_retests > 20 and sum(retests) == 2 * n_retests
    assert len(want[0]["alarms"]) >= 6
    assert json.dumps(got) == json.dumps(want)  # the keys' order too (e.g. the partitions')
    assert got_kept == want_kept


def test_alarms_are_the_moves_of_one_event_at_a_time(
    stream: tuple[list[float], list[dict[str, Any]], list[tuple[int, int]]],
) -> None:
    stamps, notes, bounds = stream
    batched, _ = _run(_stage(), stamps, notes, bounds)
    single = _stage()
    states: dict[tuple[str, str], bool] = {}
    want: list[tuple[Any, ...]] = []
    for i in range(len(stamps)):
        _run_one(single, stamps[i], notes[i], i)
        report = single.report()
        for dim in ("language", "topic", "refusal", "out_of_scope"):
            for name, test in report[dim]["comparisons"].items():
                now, before = test["state"] == "drift", states.get((dim, name), False)
                states[dim, name] = now
                if now != before:
                    want.append((i + 1, dim, name, now, test["timestamp"], test["p_value"]))
    got = [(a["after_events"], a["dimension"], a["comparison"], a["state"] == "drift",
            a["timestamp"], a["p_value"]) for a in batched[0]["alarms"]]  # fmt: skip
    assert len(got) >= 6 and any(not alarm[3] for alarm in got)
    assert got == want


def _run_one(stage: DriftStage, stamp: float, note: dict[str, Any], i: int) -> None:
    event = QueryLogEvent(event_id=str(i), question="q",
                          timestamp=datetime.fromtimestamp(stamp, UTC))  # fmt: skip
    batch = Batch.of([event], "file")
    batch.annotations = [dict(note)]
    stage.process(batch)


def _at_once(stage: DriftStage, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Record whether each batch went at once (``True``) or chunk by chunk."""
    taken: list[bool] = []
    fast = stage._process_at_once

    def counted(*args: Any) -> bool:
        taken.append(fast(*args))
        return taken[-1]

    monkeypatch.setattr(stage, "_process_at_once", counted)
    return taken


#: No event is held ahead (one is enough to start the watermark), so a first batch goes at once.
UNHELD = WindowConfig(window_s=600, bucket_s=60, reference_window_s=600, test_every_s=300,
                      ahead_confirm=1)  # fmt: skip


@pytest.mark.parametrize(
    ("crossing", "bounds"),
    [(99, [(0, 200)]), (100, [(0, 200)]), (150, [(0, 50), (50, 200)]),
     (150, [(0, 149), (149, 200)]), (150, [(0, 151), (151, 200)])],
)  # fmt: skip
def test_an_alarm_inside_a_batch_is_dated_by_its_test(
    crossing: int, bounds: list[tuple[int, int]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # 200 events of a language the gold set lacks, one a second from a test time (a
    # multiple of 300 s: the first event's test finds too few); the event at `crossing` is
    # the first past the next test time, so the test there (the first with >= 50 events)
    # alarms: after that event, at its time, wherever the batches end (session 36: at the
    # end of the chunk of 100 from its batch's start holding it)
    start = 300.0 * 5_966_667
    stamps = [start + i if i < crossing else start + 300 + i for i in range(200)]
    stage = DriftStage({"language": {"en": 100}}, windows=UNHELD, min_count=50,
                       clock=lambda: NOW)  # fmt: skip
    taken = _at_once(stage, monkeypatch)
    _run(stage, stamps, [{"language": "hi"}] * 200, bounds)
    assert taken == [True] * len(bounds)
    assert [(a["dimension"], a["comparison"], a["after_events"], a["timestamp"])
            for a in stage.alarms] == [("language", "reference", crossing + 1,
                                        start + 300 + crossing)]  # fmt: skip


def test_each_chunk_is_judged_by_its_own_clock_reading(monkeypatch: pytest.MonkeyPatch) -> None:
    # 300 events one a second from t; the clock reads t + 1000, then t + 100 (stepped back),
    # then t + 1000: only the second chunk's events past t + 100 + 60 s (161..199: 39 of
    # them) are in the future; one reading for the whole batch would make none future
    t = 1_790_000_000.0
    readings = iter([t + 1000, t + 100, t + 1000])
    stage = DriftStage({"language": {"en": 100}}, windows=UNHELD, min_count=50,
                       clock=lambda: next(readings))  # fmt: skip
    taken = _at_once(stage, monkeypatch)
    _, kept = _run(stage, [t + i for i in range(300)], [{"language": "en"}] * 300, [(0, 300)])
    assert taken == [True]
    assert kept == {"late": 0, "future": 39}
    assert stage.kept_out()[:3] == (0, 39, 0)
    assert stage.state_snapshot()["recent_kept_out"] == [[100, 0, 0, 0], [100, 0, 39, 0],
                                                         [100, 0, 0, 0]]  # fmt: skip


def test_past_max_streams_a_batch_is_judged_as_chunk_by_chunk(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # 2 partitions kept. The first chunk reads B (alone until the first test time splits
    # it), then A, B, C in turn up to 1099 s: A is forgotten at its end (read least
    # recently). The second chunk's 100 events of A at 400-499 s are behind A's own
    # watermark (1097 s) by more than the 60 s allowed, but A was forgotten: judged as a new
    # partition's, none late; the partitions kept: C (1099 s), then A (499 s)
    monkeypatch.setattr(windows, "MAX_STREAMS", 2)
    config = WindowConfig(window_s=3600, bucket_s=60, test_every_s=300, allowed_lateness_s=60,
                          ahead_confirm=1)  # fmt: skip
    stamps = [T0 + 1000 + i for i in range(100)] + [T0 + 400 + i for i in range(100)]
    streams = ["B"] + [("A", "B", "C")[i % 3] for i in range(99)] + ["A"] * 100
    results = []
    for at_once in (True, False):
        stage = DriftStage({"language": {"en": 100}}, windows=config, min_count=5,
                           clock=lambda: NOW)  # fmt: skip
        taken = _at_once(stage, monkeypatch)
        if not at_once:
            monkeypatch.setattr(stage, "_process_at_once", lambda *args: False)
        state, kept = _run(stage, stamps, [{"language": "en"}] * 200, [(0, 200)], streams)
        assert taken == ([True] if at_once else [])
        assert kept == {"late": 0, "future": 0} and stage.kept_out()[:3] == (0, 0, 0)
        marks = state[1]["detectors"]["language"]["windows"]["window"]["streams"]
        assert list(marks.items()) == [("C", T0 + 1099), ("A", T0 + 499)]
        results.append(json.dumps(state))
    assert results[0] == results[1]
