"""The busiest window over the events' times counts the same events however they are batched.

Trial 41 fix: on three Kafka partitions (two lagging) fed to the drift stage at once the
busiest 30 min window held 1,148 events, fed in 100-event chunks 1,126. A lagging
partition's event is accepted up to ``retention_s`` behind the watermark, and the windows
back from it reach up to one span further: history the window's own ring had already let
go when an earlier chunk moved the watermark on, but still read (from before the update)
when the same events came in one batch. The busiest count now keeps its own ring of totals
covering both, so it counts every accepted event in its bucket whatever the batching.
"""

from __future__ import annotations

from service.drift.windows import ComparisonWindows, WindowConfig

T0 = 1_790_000_040.0  # the start of a 1 min bucket (29,833,334 · 60)
NOW = T0 + 86_400.0  # the wall clock: no event is in the future
# 10 min windows of 1 min buckets, history kept 10 min (the window; a 10 min warm-up), a
# partition may lag 10 min behind its own watermark; no test inside (one a year)
CONFIG = WindowConfig(window_s=600, bucket_s=60, warmup_s=600, allowed_lateness_s=600,
                      test_every_s=365 * 86_400.0)  # fmt: skip
# partition a: 4 events in minute 1 and one in minute 12 (its slot in the window's ring of
# 11 buckets is minute 1's); partition b, lagging: one in minute 10 (590 s behind the
# watermark, under retention_s 600: accepted)
EVENTS = [(T0 + 70 + k, "a") for k in range(4)] + [(T0 + 730, "a"), (T0 + 610, "b")]


def _busiest(parts: list[list[tuple[float, str]]]) -> tuple[int, float]:
    windows = ComparisonWindows(CONFIG, min_count=1, has_reference=False)
    for part in parts:
        windows.ingest(["x"] * len(part), [t for t, _ in part], NOW, lambda after: None,
                       [s for _, s in part])  # fmt: skip
    return windows.busiest_held[600], windows.mean_held(600)


def test_busiest_window_is_the_same_at_once_and_in_parts() -> None:
    # by hand, the 10 min windows (10 buckets) over the events' times: ending at minute 10,
    # minutes 1-10 hold a's 4 and b's 1: 5; ending at 12, minutes 3-12 hold b's and a's last:
    # 2; none holds more. The mean: 6 events over minutes 1-12 (12 buckets), times 10: 5.0
    at_once = _busiest([EVENTS])
    in_parts = _busiest([EVENTS[:4], EVENTS[4:5], EVENTS[5:]])  # minute 12 came before b's
    assert at_once == (5, 5.0)
    assert in_parts == (5, 5.0)  # before the fix: 4 (minute 1 forgotten when b's came)
