"""Lateness judged per stream (a Kafka partition), against hand-worked windows.

A consumer catching up on a backlog of several partitions reads them in stretches, one
partition after another; against one watermark most of the backlog was late (a trial: 72 %)
though each partition was in order. See ``tests/acceptance/test_live_kafka_partitions.py``
for the same on a real broker.
"""

from __future__ import annotations

import types
from typing import Any

import pytest

from consumers.base import Origin, RawMessage
from consumers.engine import _streams
from service.drift import windows
from service.drift.windows import CategoryWindow, WindowUpdate
from service.pipeline import Batch

TIMES = [600.0 * k for k in range(11)]  # 0, 600, …, 6000


def _window() -> CategoryWindow:
    # 1 h window, 1 min buckets, 5 min lateness, 2 h kept: 121 slots
    return CategoryWindow(3600, 60, allowed_lateness_s=300, retention_s=7200)


def test_one_stream_read_after_another_is_late_against_one_watermark() -> None:
    w = _window()
    assert w.update_many(["en"] * 11, TIMES) == WindowUpdate(11, 0, 0, 0)
    # the second partition's stretch, no streams given: all older than 6000 − 300 = 5700 but
    # the last (6000) are late
    assert w.update_many(["hi"] * 11, TIMES) == WindowUpdate(1, 10, 0, 0)


def test_each_stream_is_late_only_against_its_own_watermark() -> None:
    w = _window()
    assert w.update_many(["en"] * 11, TIMES, streams=["q[0]"] * 11) == WindowUpdate(11, 0, 0, 0)
    assert w.update_many(["hi"] * 11, TIMES, streams=["q[1]"] * 11) == WindowUpdate(11, 0, 0, 0)
    # the window ends at the one watermark, 6000 (bucket 100): buckets 41..100, t in
    # [2460, 6060): 3000, 3600, 4200, 4800, 5400, 6000 of each stream
    assert w.watermark == 6000.0
    assert w.current() == {"en": 6, "hi": 6}
    # 5600 is more than 300 s behind q[0]'s and q[1]'s own 6000: late; a new stream's is not
    assert w.update_many(["en", "hi", "es"], [5600.0] * 3, streams=["q[0]", "q[1]", "q[2]"]) == (
        WindowUpdate(1, 2, 0, 0)
    )
    # but no window holds an event older than the history kept, 6000 − 7200 = −1200
    assert w.update("es", -1300.0) == WindowUpdate(0, 1, 0, 0)  # (one stream: as before)
    assert w.update_many(["es", "es"], [-1300.0, -1100.0], streams=["q[3]", "q[4]"]) == (
        WindowUpdate(1, 1, 0, 0)
    )
    # −1100 is in bucket −19, the oldest of the 120 buckets up to 100
    assert w.counts(7200) == {"en": 11, "hi": 11, "es": 2}


def test_a_batch_mixing_streams_judges_each_event_by_its_own_stream() -> None:
    w = _window()
    # interleaved in one batch: q[0] at 0, 3000, 6000 then q[1] at 0 (its first), 100, 5000
    got = w.update_many(
        ["a", "a", "a", "b", "b", "b", "a"],
        [0.0, 3000.0, 6000.0, 0.0, 100.0, 5000.0, 5500.0],
        streams=["q[0]", "q[0]", "q[0]", "q[1]", "q[1]", "q[1]", "q[0]"],
    )
    # only q[0]'s 5500 is late: 500 s behind q[0]'s 6000
    assert got == WindowUpdate(6, 1, 0, 0)


def test_stream_watermarks_survive_a_restart() -> None:
    w = _window()
    w.update_many(["en"] * 11, TIMES, streams=["q[0]"] * 11)
    back = _window().restore(w.snapshot())
    assert back.update("en", 5600.0).late == 1  # one stream: the watermark 6000
    assert back.update_many(["en"], [5600.0], streams=["q[0]"]) == WindowUpdate(0, 1, 0, 0)
    assert back.update_many(["en"], [5600.0], streams=["q[9]"]) == WindowUpdate(1, 0, 0, 0)
    # a snapshot of before stream watermarks were kept restores none
    old = w.snapshot()
    del old["streams"]
    assert _window().restore(old).update_many(["en"], [5600.0], streams=["q[0]"]).accepted == 1


def test_the_stream_read_least_recently_is_forgotten_beyond_the_bound(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(windows, "MAX_STREAMS", 2)
    w = _window()
    w.update_many(["x"] * 3, [6000.0, 6000.0, 6000.0], streams=["a", "b", "c"])
    # "a" was forgotten: its next event is judged as a new stream's, "b"'s is still late
    assert w.update_many(["x", "x"], [5000.0, 5000.0], streams=["a", "b"]) == WindowUpdate(
        1, 1, 0, 0
    )


def test_streams_must_match_the_events() -> None:
    with pytest.raises(ValueError, match="one stream per category"):
        _window().update_many(["en", "en"], [0.0, 1.0], streams=["q[0]"])
    with pytest.raises(ValueError, match="1 streams for 2 events"):
        Batch.of([None, None], "kafka", ["q[0]"])  # type: ignore[list-item]


def test_a_batch_keeps_its_streams_in_step_with_its_events() -> None:
    batch = Batch.of(["e1", "e2", "e3"], "kafka", ["t[0]", "t[1]", "t[2]"])  # type: ignore[list-item]
    batch.keep([True, False, True], "duplicate")
    assert (batch.events, batch.streams) == (["e1", "e3"], ["t[0]", "t[2]"])
    assert Batch.of(["e1"], "file").streams is None  # type: ignore[list-item]


def test_kafka_messages_name_their_partition_as_the_stream() -> None:
    def message(origin: Origin) -> tuple[RawMessage, None]:
        return RawMessage(b"{}", origin), None

    kafka = [message(Origin(topic="queries", partition=p, offset=7)) for p in (3, 0)]
    assert _streams(kafka) == ["queries[3]", "queries[0]"]  # type: ignore[arg-type]
    assert _streams([message(Origin(file="log.jsonl", line=1))]) is None  # type: ignore[arg-type]
    assert _streams([]) is None


def test_an_event_released_later_in_the_batch_moves_no_stream_watermark() -> None:
    """Held events (over ``max_ahead_s`` ahead) move no stream's watermark, released in the
    same batch or a later one: the counts do not depend on the split (a review's case)."""

    def window() -> CategoryWindow:
        w = CategoryWindow(3600, 60, allowed_lateness_s=300, max_ahead_s=600, ahead_confirm=2)
        w.update_many(["x"], [1001.0], streams=["a"])  # (ahead_confirm 2: held, not started)
        w.update_many(["x"], [1100.0], streams=["a"])  # a run of two starts the watermark
        return w

    # 5000 is held (3900 s ahead of 1100), 1002 is in order for "a" (its watermark 1100,
    # lateness 300), 5001 confirms the jump and releases 5000
    whole = window()
    got = whole.update_many(["x"] * 3, [5000.0, 1002.0, 5001.0], streams=["a"] * 3)
    assert got == WindowUpdate(3, 0, 0, 0)
    split = window()
    first = split.update_many(["x"], [5000.0], streams=["a"])
    second = split.update_many(["x"] * 2, [1002.0, 5001.0], streams=["a"] * 2)
    assert (first, second) == (WindowUpdate(0, 0, 0, 1), WindowUpdate(3, 0, 0, -1))
    assert whole.snapshot()["buckets"] == split.snapshot()["buckets"]


def _retest_windows() -> tuple[Any, list[tuple[float | None, dict[str, int]]]]:
    from service.drift.windows import ComparisonWindows, WindowConfig

    config = WindowConfig(window_s=3600, bucket_s=60, test_every_s=300, baseline="none")
    windows = ComparisonWindows(config, min_count=200, has_reference=False)
    tests: list[tuple[float | None, dict[str, int]]] = []
    return windows, tests


def test_a_partition_read_after_another_is_tested_again() -> None:
    """Partition a (400 events of x, every 10 s over 0…3990) read whole, then b (y, the
    same times). Ticks every 300 s of a's time: 0, 300, …, 3900 — 14 tests; the last at the
    watermark 3900: buckets 6…65 (t in [360, 3960)), 355 of a. b's events older than the
    history kept (3990 − 3600 = 390: 0…380, 39 of them) are late; the others at or before 3900
    (352) go to windows already tested: past min_count (200) they are tested again, at the
    watermark 3990: buckets 7…66 (t in [420, 4020)), 358 of a and 358 of b."""
    windows, tests = _retest_windows()

    def on_tick(_: int) -> None:
        tests.append((windows.window.watermark, windows.current()))

    times = [10.0 * k for k in range(400)]
    windows.ingest(["x"] * 400, times, None, on_tick, ["q[a]"] * 400)
    assert len(tests) == 14 and tests[-1] == (3900.0, {"x": 355})
    windows.ingest(["y"] * 400, times, None, on_tick, ["q[b]"] * 400)
    assert len(tests) == 15 and tests[-1] == (3990.0, {"x": 358, "y": 358})
    # in chunks of 100 (as the drift stage feeds it): 61 + 100 added behind after two chunks,
    # 261 after three: tested then, at 3990 (b up to 2990 in the window: 420…2990, 258); the
    # last chunk's 100, all at or before 3990, are not yet 200
    windows, tests = _retest_windows()
    windows.ingest(["x"] * 400, times, None, on_tick, ["q[a]"] * 400)
    for start in range(0, 400, 100):
        windows.ingest(["y"] * 100, times[start : start + 100], None, on_tick, ["q[b]"] * 100)
    assert len(tests) == 15 and tests[-1] == (3990.0, {"x": 358, "y": 258})
    # without streams b is one stream with a: late but its last 31 (3690…3990), no re-test
    windows, tests = _retest_windows()
    windows.ingest(["x"] * 400, times, None, on_tick)
    windows.ingest(["y"] * 400, times, None, on_tick)
    assert len(tests) == 14 and windows.current() == {"x": 358, "y": 31}


def test_a_re_test_survives_a_restart() -> None:
    from service.drift.windows import ComparisonWindows

    windows, tests = _retest_windows()
    times = [10.0 * k for k in range(400)]
    windows.ingest(["x"] * 400, times, None, lambda _: None, ["q[a]"] * 400)
    windows.ingest(["y"] * 150, times[100:250], None, lambda _: None, ["q[b]"] * 150)
    back = ComparisonWindows(windows.config, min_count=200, has_reference=False)
    back.restore(windows.snapshot())
    calls: list[int] = []
    back.ingest(["y"] * 49, times[250:299], None, lambda _: calls.append(1), ["q[b]"] * 49)
    assert calls == []  # 150 + 49 behind the last test (3900): not yet min_count
    back.ingest(["y"], times[299:300], None, lambda _: calls.append(1), ["q[b]"])
    assert calls == [1]  # 150 before the restart + 50 after reach it


def test_a_frozen_baseline_holds_the_same_events_in_any_partition_order() -> None:
    """Frozen baseline, warm-up 1200 s, 1 min buckets (20 of them), min_count 50, ticks every
    300 s. Partition a: x every 20 s over 60…4040; partition b: y every 20 s over 0…3980
    (interleaved in event time). A replay of both in time order starts the span at bucket 0:
    [0, 1200) holds x at 60…1180 (57) and y at 0…1180 (60). Read a then b (a Kafka backlog):
    a alone starts it at bucket 1, [60, 1260): its 60 x (60…1240); b's earlier events move it
    back to bucket 0, dropping x at 1200…1240 (3): 57 x, 60 y. Read b then a: 60 y, then x in
    [0, 1200): 57. With or without a gold set: without one, only 1200 s are held, and b's events
    before 4040 − 1200 = 2840 are late for the windows, yet in the baseline's span they count
    (the trial's refusal baseline held 748 of 1,500). A snapshot keeps it."""
    from service.drift.windows import ComparisonWindows, WindowConfig

    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, warmup_s=1200)
    a_times = [60.0 + 20 * k for k in range(200)]
    b_times = [20.0 * k for k in range(200)]
    expected = {"x": 57, "y": 60}
    for has_reference in (True, False):
        replay = ComparisonWindows(config, min_count=50, has_reference=has_reference)
        merged = sorted([(t, "x") for t in a_times] + [(t, "y") for t in b_times])
        replay.ingest([c for _, c in merged], [t for t, _ in merged], None, lambda _: None)
        assert replay.baseline() == expected, has_reference

        windows = ComparisonWindows(config, min_count=50, has_reference=has_reference)
        windows.ingest(["x"] * 200, a_times, None, lambda _: None, ["q[a]"] * 200)
        assert windows.baseline() == {"x": 60}
        windows.ingest(["y"] * 200, b_times, None, lambda _: None, ["q[b]"] * 200)
        assert windows.baseline() == expected, has_reference
        back = ComparisonWindows(config, min_count=50, has_reference=has_reference)
        back.restore(windows.snapshot())
        assert back.baseline() == expected

        windows = ComparisonWindows(config, min_count=50, has_reference=has_reference)
        windows.ingest(["y"] * 200, b_times, None, lambda _: None, ["q[b]"] * 200)
        assert windows.baseline() == {"y": 60}
        windows.ingest(["x"] * 200, a_times, None, lambda _: None, ["q[a]"] * 200)
        assert windows.baseline() == expected, has_reference


@pytest.mark.parametrize("test_every_s", [60.0, 300.0, 600.0, 1500.0])
def test_a_frozen_baseline_is_the_first_warmup_whatever_the_test_cadence(
    test_every_s: float,
) -> None:
    """The trial: one event every 10 s, refused false for the first 1200 s (the warm-up,
    from 0), true after, over 0…3990. The baseline is the 120 events in [0, 1200), all false,
    at any test cadence; it had frozen at the first tick at least 1200 s after the warm-up
    started and kept the last 1200 s up to it, swallowing up to test_every_s of true ones."""
    from service.drift.windows import ComparisonWindows, WindowConfig

    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=test_every_s, warmup_s=1200)
    times = [10.0 * k for k in range(400)]
    values = ["0" if t < 1200 else "1" for t in times]
    windows = ComparisonWindows(config, min_count=50, has_reference=False)
    windows.ingest(values, times, None, lambda _: None)
    assert windows.baseline() == {"0": 120}
    # in small batches too
    windows = ComparisonWindows(config, min_count=50, has_reference=False)
    for start in range(0, 400, 7):
        windows.ingest(values[start : start + 7], times[start : start + 7], None, lambda _: None)
    assert windows.baseline() == {"0": 120}


def test_a_quiet_source_tests_the_last_events_behind_at_once() -> None:
    """The chunked case above: after b's last chunk 100 events at or before 3990 wait (fewer
    than min_count); a flush (the drift stage's idle turn) tests them: b's 420…3990 in the
    window (358) beside a's 358. A second flush has nothing to test."""
    windows, tests = _retest_windows()

    def on_tick(_: int) -> None:
        tests.append((windows.window.watermark, windows.current()))

    times = [10.0 * k for k in range(400)]
    windows.ingest(["x"] * 400, times, None, on_tick, ["q[a]"] * 400)
    for start in range(0, 400, 100):
        windows.ingest(["y"] * 100, times[start : start + 100], None, on_tick, ["q[b]"] * 100)
    assert tests[-1] == (3990.0, {"x": 358, "y": 258})
    assert windows.flush(on_tick) and tests[-1] == (3990.0, {"x": 358, "y": 358})
    assert not windows.flush(on_tick) and len(tests) == 16
    # one stream: nothing is ever behind, a flush never tests
    windows, tests = _retest_windows()
    windows.ingest(["x"] * 400, times, None, on_tick)
    assert not windows.flush(on_tick)


def test_the_drift_stage_idle_turn_flushes_every_detector() -> None:
    from datetime import UTC, datetime
    from types import SimpleNamespace

    from service.drift.stage import DriftStage
    from service.drift.windows import WindowConfig

    config = WindowConfig(window_s=3600, bucket_s=60, test_every_s=300, baseline="previous")
    stage = DriftStage({"language": {"x": 10, "y": 10}}, windows=config, min_count=200,
                       clock=lambda: 2e9)  # fmt: skip
    times = [10.0 * k for k in range(400)]

    def feed(language: str, part: str, chunk: list[float]) -> None:
        events = [SimpleNamespace(timestamp=datetime.fromtimestamp(t, UTC)) for t in chunk]
        notes = [{"language": language} for _ in chunk]
        stage.process(Batch("kafka", events, notes, streams=[part] * len(chunk)))  # type: ignore[arg-type]

    feed("x", "q[a]", times)
    for start in range(0, 350, 100):  # b's first 350 (0…3490)
        feed("y", "q[b]", times[start : min(start + 100, 350)])
    # the reference window (24 h) holds everything; with 24 h kept none of b is late, so
    # b's first two chunks (200) reach min_count: that test, at 3990, saw a's 400 and 200 of
    # b; the next 150 (all at or before 3990) wait
    reference = stage.categorical["language"].reports["reference"]
    assert reference.n_current == 400 + 200
    stage.idle()
    reference = stage.categorical["language"].reports["reference"]
    assert reference.n_current == 400 + 350


def test_every_detector_of_the_stage_has_the_replay_baseline_from_two_partitions() -> None:
    """The trial's Kafka case through the drift stage: 3,000 events 20 s apart (0…59,980 s),
    keyed alternately to partitions 0 and 1, read partition 0 whole then partition 1. The
    frozen baseline (6 h = 21,600 s from the first event, at a minute's start) holds the
    1,080 events at 0…21,580 s in every detector, as one stream in time order (a replay)
    gives; language and topic (with a gold set) keep 24 h of history, refusal and out of scope
    only 6 h (the trial: topic 1,500, refusal 748); known_refusal (its windows the drift
    windows here: no known_windows given) and known_miss likewise."""
    from datetime import UTC, datetime, timedelta

    from service.drift.stage import DIMENSIONS, DriftStage

    start = datetime(2026, 1, 1, tzinfo=UTC)
    events = [types.SimpleNamespace(timestamp=start + timedelta(seconds=20 * i))
              for i in range(3000)]  # fmt: skip
    notes = [{"language": "en", "topic": "fees", "refused": i % 7 == 0,
              "out_of_scope": i % 5 == 0, "out_of_scope_stable": i % 5 == 0,
              "known_refused": i % 3 == 0, "known_missed": i % 4 == 0}
             for i in range(3000)]  # fmt: skip
    gold = {"language": {"en": 40}, "topic": {"fees": 40}}
    clock = (start + timedelta(days=30)).timestamp

    def baselines(order: list[int], streams: list[str] | None) -> dict[str, int]:
        drift = DriftStage(gold, clock=clock)
        drift.process(types.SimpleNamespace(
            events=[events[i] for i in order], annotations=[notes[i] for i in order],
            streams=streams))  # fmt: skip
        report = drift.report()
        return {dim: report[dim]["comparisons"]["baseline"]["n_reference"] for dim in DIMENSIONS}

    assert baselines(list(range(3000)), None) == dict.fromkeys(DIMENSIONS, 1080)
    kafka = [*range(0, 3000, 2), *range(1, 3000, 2)]
    streams = ["q[0]"] * 1500 + ["q[1]"] * 1500
    assert baselines(kafka, streams) == dict.fromkeys(DIMENSIONS, 1080)
    assert baselines(kafka[1500:] + kafka[:1500], streams[::-1]) == dict.fromkeys(DIMENSIONS, 1080)
