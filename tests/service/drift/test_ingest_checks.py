"""``ComparisonWindows.ingest(checks=…)``: one batch standing for several, against hand-worked
tests and against ingesting the parts one after another.

The drift stage feeds a Kafka batch to each detector at once and says where its 100-event
chunks end (``checks``): a re-test is due at a chunk's end once ``min_count`` events came
behind the last test, and the streams' watermarks are remembered in the order the chunks
would leave them. The scenario: partition ``a`` at 10 s and 610 s (``x``), then partition
``b`` at 100, 110, …, 160 s (``y``, 7 events): every ``b`` event comes behind the test at
610 s, none late against its own partition. ``min_count`` 3, tests every 600 s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from service.drift import windows
from service.drift.windows import CategoryWindow, ComparisonWindows, WindowConfig

STAMPS = [10.0, 610.0, 100.0, 110.0, 120.0, 130.0, 140.0, 150.0, 160.0]
CATEGORIES = ["x", "x", *["y"] * 7]
STREAMS = ["q[a]", "q[a]", *["q[b]"] * 7]
CHECKS = [3, 5, 8]  # the parts: 0:3, 3:5, 5:8, 8:9
PLAIN = WindowConfig(window_s=3600, bucket_s=60, test_every_s=600, baseline="none",
                     ahead_confirm=1)  # fmt: skip
#: the first event is held (no watermark yet) until the second confirms it (600 s apart,
#: within max_ahead_s): released in the batch, so the part's watermarks are not the slice
HELD = WindowConfig(window_s=3600, bucket_s=60, test_every_s=600, baseline="none",
                    max_ahead_s=1200, ahead_confirm=2)  # fmt: skip

Tests = list[tuple[int, float | None, dict[str, int]]]


def _windows(config: WindowConfig) -> tuple[ComparisonWindows, Tests, list[int]]:
    """Windows whose tests are logged as ``(after, watermark, current counts)`` and whose
    window updates' sizes are recorded."""
    cw = ComparisonWindows(config, min_count=3, has_reference=False)
    update, sizes = cw.window.update_many, []

    def spied(categories: Sequence[str], *args: Any, **kwargs: Any) -> Any:
        sizes.append(len(categories))
        return update(categories, *args, **kwargs)

    cw.window.update_many = spied  # type: ignore[method-assign]
    return cw, [], sizes


def _ingest(config: WindowConfig, checks: Sequence[int] | None) -> tuple[Tests, Any, list[int]]:
    """Ingest the scenario at once with ``checks``, or (``None``) in the parts they mark."""
    cw, tests, sizes = _windows(config)
    offset = [0]

    def on_tick(after: int) -> None:
        tests.append((offset[0] + after, cw.window.watermark, cw.current()))

    if checks is not None:
        cw.ingest(CATEGORIES, STAMPS, None, on_tick, STREAMS, checks=checks)
    else:
        for start, end in zip([0, *CHECKS], [*CHECKS, len(STAMPS)], strict=True):
            offset[0] = start
            cw.ingest(CATEGORIES[start:end], STAMPS[start:end], None, on_tick, STREAMS[start:end])
    return tests, cw.snapshot(), sizes


def test_checks_re_test_where_a_part_would_have_ended() -> None:
    # tests at the first event (the first test time, watermark 10) and at 610 (the next);
    # then b's events behind 610: 1 after the first part, 3 after the second (a re-test at
    # 5 events), 3 more after the third (a re-test at 8), 1 at the end (fewer than 3)
    want = [(1, 10.0, {"x": 1}), (2, 610.0, {"x": 2}), (5, 610.0, {"x": 2, "y": 3}),
            (8, 610.0, {"x": 2, "y": 6})]  # fmt: skip
    tests, snapshot, sizes = _ingest(PLAIN, CHECKS)
    assert tests == want
    # split only at the test times and where a re-test was due, not at the first check
    assert sizes == [1, 1, 3, 3, 1]
    parts, parts_snapshot, _ = _ingest(PLAIN, None)
    assert parts == want and snapshot == parts_snapshot
    # without checks: the one re-test at the end, all 7 of b's events behind
    assert _ingest(PLAIN, [])[0] == [*want[:2], (9, 610.0, {"x": 2, "y": 7})]


def test_with_an_event_held_every_check_splits_the_batch() -> None:
    # the event at 10 s is held, released by the one at 610 s (the first test time: both in
    # the window); b's re-tests as without holding
    want = [(2, 610.0, {"x": 2}), (5, 610.0, {"x": 2, "y": 3}), (8, 610.0, {"x": 2, "y": 6})]
    tests, snapshot, sizes = _ingest(HELD, CHECKS)
    assert tests == want
    assert sizes == [2, 1, 2, 3, 1]  # the test time, then every check: 3, 5, 8
    parts, parts_snapshot, _ = _ingest(HELD, None)
    assert parts == want and snapshot == parts_snapshot


def test_streams_are_remembered_in_the_order_the_parts_leave_them() -> None:
    # one update re-inserts its streams in the order of their first event in it (the dict's
    # order is last use, oldest first): A B C, then C A → B, C, A. One update of A B C C A:
    # A, B, C. Not by each stream's last event either: one update of A B A leaves A, B.
    stamps = [1.0, 2.0, 3.0, 4.0, 5.0]
    names = ["A", "B", "C", "C", "A"]
    split = CategoryWindow(600, 60)
    split.update_many(["x"] * 5, stamps, streams=names, splits=[3])
    assert list(split.snapshot()["streams"]) == ["B", "C", "A"]
    whole = CategoryWindow(600, 60)
    whole.update_many(["x"] * 5, stamps, streams=names)
    assert list(whole.snapshot()["streams"]) == ["A", "B", "C"]
    once = CategoryWindow(600, 60)
    once.update_many(["x"] * 3, stamps[:3], streams=["A", "B", "A"])
    assert list(once.snapshot()["streams"]) == ["A", "B"]
    # through ingest's checks, the parts a a b | b a | a b b | a (the first test time splits
    # the first after one event): b's last part is the third, a's the fourth → b, a; one
    # update after the test would leave a, b
    streams = ["a", "a", "b", "b", "a", "a", "b", "b", "a"]
    cw = ComparisonWindows(PLAIN, min_count=100, has_reference=False)
    cw.ingest(CATEGORIES, [10.0 * k for k in range(9)], None, lambda _: None, streams,
              checks=CHECKS)  # fmt: skip
    assert list(cw.snapshot()["window"]["streams"]) == ["b", "a"]


def test_past_max_streams_every_check_splits_the_batch(monkeypatch: pytest.MonkeyPatch) -> None:
    # 2 streams kept: the first part reads A, B, C (A forgotten after it), the second A at
    # 400-404 s, behind A's own 600 s but judged as a new stream's (not late); one update
    # of all would remember A at 600 s and count the five late
    monkeypatch.setattr(windows, "MAX_STREAMS", 2)
    config = WindowConfig(window_s=3600, bucket_s=60, test_every_s=3600, baseline="none",
                          allowed_lateness_s=60, ahead_confirm=1)  # fmt: skip
    stamps = [600.0, 601.0, 602.0, *(400.0 + k for k in range(5))]
    streams = ["A", "B", "C", *["A"] * 5]
    cw = ComparisonWindows(config, min_count=100, has_reference=False)
    cw.ingest(["x"] * 8, stamps, None, lambda _: None, streams, checks=[3])
    assert cw.window.late == 0 and cw.window.accepted == 8
    assert cw.snapshot()["window"]["streams"] == {"C": 602.0, "A": 404.0}
    late, _ = cw.kept_out_masks()
    assert not np.any(late) and len(late) == 8
