"""Event-time windows: lateness, future events, out of order, bounded memory, snapshots."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.drift.windows import OTHER, CategoryWindow, ComparisonWindows, WindowConfig


def test_sliding_window_sums_whole_buckets_up_to_the_watermark() -> None:
    w = CategoryWindow(window_s=120, bucket_s=60, allowed_lateness_s=60)
    w.update_many(["en", "hi", "en", "zh"], [0.0, 61.0, 125.0, 179.0])
    assert w.watermark == 179.0
    assert w.current() == {"en": 1, "hi": 1, "zh": 1}  # buckets 1 and 2
    w.update("en", 180.0)
    assert w.current() == {"en": 2, "zh": 1}  # buckets 2 and 3
    assert w.counts(span_s=60, offset_s=60) == {"en": 1, "zh": 1}


def test_out_of_order_events_are_counted_late_ones_are_not() -> None:
    w = CategoryWindow(window_s=600, bucket_s=60, allowed_lateness_s=120)
    result = w.update_many(["a", "b", "c", "d"], [500.0, 400.0, 379.0, 520.0])
    assert result == (3, 1, 0, 0)  # 379 < 500 - 120: late
    assert w.current() == {"a": 1, "b": 1, "d": 1}
    assert (w.accepted, w.late, w.future) == (3, 1, 0)


def test_future_events_are_rejected_and_do_not_move_the_watermark() -> None:
    w = CategoryWindow(window_s=600, bucket_s=60, future_tolerance_s=30)
    result = w.update_many(["a", "b", "c"], [1000.0, 99_999.0, 1010.0], now=1020.0)
    assert result == (2, 0, 1, 0)
    assert w.watermark == 1010.0 and w.current() == {"a": 1, "c": 1}
    w.update_many(["x"], [99_999.0])  # without `now`, event times are trusted
    assert w.watermark == 99_999.0


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abc"), st.floats(0, 10_000)), max_size=60))
def test_counts_balance_and_batching_does_not_matter(events: list) -> None:
    cats, ts = [c for c, _ in events], [t for _, t in events]
    one, many = CategoryWindow(600, 60), CategoryWindow(600, 60)
    for c, t in events:
        one.update(c, t, now=5_000.0)
    result = many.update_many(cats, ts, now=5_000.0)
    assert sum(result) == len(events)
    assert one.snapshot() == many.snapshot()


def test_memory_is_bounded_in_time_and_categories() -> None:
    w = CategoryWindow(window_s=600, bucket_s=60, max_categories=3)
    rng = np.random.default_rng(0)
    for day in range(5):
        cats = [f"c{i}" for i in rng.integers(0, 50, 1000)]
        w.update_many(cats, day * 86_400 + np.sort(rng.uniform(0, 86_400, 1000)))
    assert w._counts.shape[0] == 11  # ceil(600 / 60) + 1 slots, never more
    assert len(w._names) == 4 and OTHER in w._names
    assert sum(w.current().values()) <= 1000


def test_snapshot_round_trips_through_json() -> None:
    w = CategoryWindow(window_s=3600, bucket_s=60, retention_s=7200)
    rng = np.random.default_rng(1)
    w.update_many(
        [str(c) for c in rng.choice(["en", "hi"], 500)], np.sort(rng.uniform(0, 9000, 500))
    )
    w.update("en", 0.0)  # late
    restored = CategoryWindow(window_s=1800, bucket_s=60, retention_s=7200)
    restored.restore(json.loads(json.dumps(w.snapshot())))
    assert restored.snapshot() == w.snapshot()
    assert restored.previous() == w.counts(1800, 1800) or restored.window_s == 1800
    assert CategoryWindow().restore(None).snapshot()["buckets"] == {}


@pytest.mark.parametrize(
    "state",
    [{"version": 2}, {"version": 1, "bucket_s": 30.0}, {"version": 1, "bucket_s": 60.0}],
)
def test_restore_rejects_foreign_or_malformed_snapshots(state: dict) -> None:
    w = CategoryWindow()
    with pytest.raises(ValueError):
        w.restore(state)
    assert w.watermark is None  # left empty, not half-restored


@pytest.mark.parametrize(
    "kwargs",
    [
        {"window_s": 0},
        {"bucket_s": -1},
        {"window_s": 60, "retention_s": 30},
        {"allowed_lateness_s": -1},
        {"future_tolerance_s": -1},
        {"max_categories": 0},
        {"window_s": float("inf")},
    ],
)
def test_bad_window_arguments_raise(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        CategoryWindow(**kwargs)


def test_bad_updates_raise() -> None:
    w = CategoryWindow()
    with pytest.raises(ValueError):
        w.update_many(["a", "b"], [1.0])
    with pytest.raises(ValueError):
        w.update_many(["a"], [float("nan")])


@pytest.mark.parametrize(
    "kwargs", [{"baseline": "rolling"}, {"test_every_s": 0}, {"warmup_s": -1}, {"bucket_s": 0}]
)
def test_bad_window_config_raises(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        WindowConfig(**kwargs)


def test_comparison_windows_tick_on_event_time_whatever_the_batching() -> None:
    config = WindowConfig(window_s=600, test_every_s=300, warmup_s=900)
    ts = np.arange(0, 3000, 7.0)
    cats = ["a"] * len(ts)
    ticks: list[list[float]] = [[], []]
    for seen, batch in zip(ticks, (1, len(ts)), strict=True):
        cw = ComparisonWindows(config, min_count=10, has_reference=False)
        for i in range(0, len(ts), batch):
            cw.ingest(cats[i : i + batch], ts[i : i + batch], None, lambda _, s=seen: s.append(0))
        assert cw.baseline() is not None and sum(cw.baseline().values()) >= 10
    assert len(ticks[0]) == len(ticks[1]) == 10  # 0, 300, ..., 2700


def test_baseline_counts_each_bucket_by_hand_whatever_the_batching() -> None:
    # 60 s buckets, a 300 s warm-up from the first event's bucket (t = 0): buckets 0-4 only.
    # Events: bucket 0: b a b; bucket 1: b; bucket 3: a c a; bucket 5 (past the span): a.
    config = WindowConfig(bucket_s=60, window_s=600, test_every_s=120, warmup_s=300)
    ts = [1.0, 10.0, 20.0, 70.0, 185.0, 190.0, 200.0, 305.0]
    cats = ["b", "a", "b", "b", "a", "c", "a", "a"]
    by_hand = {"0": {"b": 2, "a": 1}, "1": {"b": 1}, "3": {"a": 2, "c": 1}}
    snapshots = []
    for batch in (1, 3, len(ts)):  # one by one, across ticks (every 120 s), all at once
        cw = ComparisonWindows(config, min_count=1, has_reference=False)
        for i in range(0, len(ts), batch):
            cw.ingest(cats[i : i + batch], ts[i : i + batch], None, lambda _: None)
        snapshots.append(cw.snapshot())
        assert cw.snapshot()["base"] == by_hand
        assert list(cw.snapshot()["base"]["0"]) == ["b", "a"]  # first-seen order
    assert snapshots[0] == snapshots[1] == snapshots[2]


def test_baseline_of_events_out_of_bucket_order_keeps_first_seen_order_by_hand() -> None:
    # 60 s buckets, a 300 s warm-up from the earliest event's bucket (0): buckets 0-4.
    # Events (bucket, category): (4 v) alone (the first test time, every 120 s), then
    # (2 w) (0 y) (1 z) (0 x) (1 y) behind it (within the 300 s lateness: one update, its
    # buckets out of order), then one at 370 s (bucket 6, past the span) whose test time
    # freezes the baseline. Buckets first seen 4, 2, 0, 1; in bucket 0 y before x, in 1 z
    # before y: the baseline's counts in that order (v w y x z), whatever the batching.
    config = WindowConfig(bucket_s=60, window_s=600, test_every_s=120, warmup_s=300,
                          ahead_confirm=1)  # fmt: skip
    ts = [250.0, 130.0, 10.0, 80.0, 20.0, 75.0, 370.0]
    cats = ["v", "w", "y", "z", "x", "y", "u"]
    for batch in (1, 2, len(ts)):
        cw = ComparisonWindows(config, min_count=1, has_reference=False)
        for i in range(0, len(ts), batch):
            cw.ingest(cats[i : i + batch], ts[i : i + batch], None, lambda _: None)
        assert cw.snapshot()["base"] == {"0": {"y": 1, "x": 1}, "1": {"z": 1, "y": 1},
                                         "2": {"w": 1}, "4": {"v": 1}}  # fmt: skip
        assert [list(cells) for cells in cw.snapshot()["base"].values()] == [
            ["y", "x"],
            ["z", "y"],
            ["w"],
            ["v"],
        ]
        baseline = cw.baseline()
        assert baseline is not None
        assert list(baseline.items()) == [("v", 1), ("w", 1), ("y", 2), ("x", 1), ("z", 1)]
