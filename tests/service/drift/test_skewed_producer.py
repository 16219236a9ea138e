"""A few mis-stamped events must not blind drift (trial 14, items 3 and 4, session 32).

Item 3: ten events stamped 2026-11-28, one every 5 lines of a 2026-11-01..05 log, were held
ahead of the watermark and, 5 of them lying within ``max_ahead_s`` of one another, confirmed
a jump though ~20 in-time events came between them: the watermark moved to 11-28 and 2,398 of
3,011 events were late. A jump is now confirmed only when the held events near the new one,
with it, are at least ``ahead_confirm`` and at least as many as the in-time events that came
since the oldest of them.
Item 4: an ``insufficient_data`` reason advised a longer window when late events (9 %, not
starved) were what left it short.

Every expected value is worked out by hand from the tiny logs (buckets of 60 s, windows of
600 s, ``max_ahead_s`` 3600 s, ``ahead_confirm`` 3, lateness 60 s).
"""

from __future__ import annotations

import json
import math

from service.drift.stage import _READ_ORDER, DriftStage
from service.drift.windows import MAX_HELD, CategoryWindow, ComparisonWindows, WindowConfig

Z = 259_200.0  # 3 days after 0: a skewed producer's clock


def _window(**kw: object) -> CategoryWindow:
    args = {"allowed_lateness_s": 60.0, "retention_s": 86_400.0, "max_ahead_s": 3600.0,
            "ahead_confirm": 3} | kw  # fmt: skip
    return CategoryWindow(600.0, 60.0, **args)  # type: ignore[arg-type]


#: a at 0..900 s every 100 s (0, 100, 200 start the watermark: a run of 3 with steps <= 1 h);
#: then a z stamped 3 days ahead before every second a
CATS = ["a", "a", "a", "z", "a", "a", "z", "a", "a", "z", "a", "a", "z", "a"]
STAMPS = [0.0, 100.0, 200.0, Z, 300.0, 400.0, Z, 500.0, 600.0, Z, 700.0, 800.0, Z, 900.0]


def _states(w: CategoryWindow) -> tuple[object, ...]:
    return w.accepted, w.late, w.future, w.ahead, w.watermark


def test_interleaved_skewed_events_confirm_no_jump() -> None:
    # each z is near the held z's, but the in-time events since them outnumber them: z2 (2
    # in time since z1: 2 held < 3), z3 (the latest 2 held: 2 < 3; all 3: 3 < 4 in time since
    # z1), z4 (z3..z4: 2 < 3; z2..z4: 3 < 4; z1..z4: 4 < 6): all held. Before the fix z3
    # confirmed (3 within 1 h): the watermark jumped to z, and 700, 800, 900 were late.
    w = _window()
    assert w.update_many(CATS, STAMPS) == (10, 0, 0, 4)
    assert _states(w) == (10, 0, 0, 4, 900.0)
    assert w.current() == {"a": 6}  # buckets 6..15 ([360, 960) s): 400..900
    assert w.held == [(Z, "z")] * 4
    # in-time events after each held z: 300..900 (7), 500..900 (5), 700..900 (3), 900 (1)
    assert w.held_since == [7, 5, 3, 1]


def test_the_same_however_batched_and_restored() -> None:
    whole = _window()
    whole.update_many(CATS, STAMPS)
    one_by_one = _window()
    for cat, stamp in zip(CATS, STAMPS, strict=True):
        one_by_one.update(cat, stamp)
    restored = _window()
    restored.update_many(CATS[:6], STAMPS[:6])
    restored = _window().restore(json.loads(json.dumps(restored.snapshot())))
    restored.update_many(CATS[6:], STAMPS[6:])
    for w in (one_by_one, restored):
        assert _states(w) == (10, 0, 0, 4, 900.0)
        assert w.snapshot() == whole.snapshot()
    assert whole.snapshot()["held"] == [[Z, "z"]] * 4
    assert whole.snapshot()["held_since"] == [7, 5, 3, 1]


def test_with_streams_the_rule_is_the_same() -> None:
    # the events read from two partitions alternately (the z's all from p1): lateness is per
    # partition, the jump rule one for all, so the same events are held. Before the fix z3
    # confirmed and 700, 800, 900, older than the history kept (1 day) behind the watermark
    # at z, were late though in order in their own partitions.
    streams = [f"t[{i % 2}]" if c == "a" else "t[1]" for i, c in enumerate(CATS)]
    w = _window()
    assert w.update_many(CATS, STAMPS, streams=streams) == (10, 0, 0, 4)
    assert _states(w) == (10, 0, 0, 4, 900.0)
    single = _window()
    for cat, stamp, stream in zip(CATS, STAMPS, streams, strict=True):
        single.update_many([cat], [stamp], streams=[stream])
    assert single.snapshot() == w.snapshot()


def test_comparison_windows_agree_one_event_at_a_time_and_at_once() -> None:
    # ingest passes the watermarks it worked out (the plain-Python path of small updates
    # when nothing is held): the same windows either way
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, baseline="none",
                          allowed_lateness_s=60, max_ahead_s=3600, ahead_confirm=3)  # fmt: skip
    whole = ComparisonWindows(config, min_count=1, has_reference=False)
    ticks: list[float | None] = []
    whole.ingest(CATS, STAMPS, None, lambda _: ticks.append(whole.window.watermark))
    single = ComparisonWindows(config, min_count=1, has_reference=False)
    for cat, stamp in zip(CATS, STAMPS, strict=True):
        single.ingest([cat], [stamp], None, lambda _: None)
    assert _states(whole.window) == _states(single.window) == (10, 0, 0, 4, 900.0)
    assert whole.window.snapshot() == single.window.snapshot()
    assert ticks == [200.0, 300.0, 600.0, 900.0]  # 200 starts it; then each 300 s tick


def test_many_interleaved_skewed_events_never_confirm_and_stay_bounded() -> None:
    # 100 z's, each after 2 a's (a at 0, 10, 20, ...; a at 20 starts the watermark with 0
    # and 10): held, never confirmed (the latest k held have at least 2k-2 in time since the
    # first of them: k >= 2k-2 only for k <= 2 < 3); at most MAX_HELD (64) kept, the 36
    # oldest dropped stay counted ahead.
    cats, stamps = [], []
    for i in range(100):
        cats += ["a", "a", "z"]
        stamps += [20.0 * i, 20.0 * i + 10, Z]
    w = _window()
    w.update_many(cats, stamps)
    assert _states(w) == (200, 0, 0, 100, 1990.0)
    assert len(w.held) == MAX_HELD == 64


def test_a_real_jump_still_moves_time_on() -> None:
    # traffic resumes after a gap of 2 days: 3 in a row, none in time between, confirm (the
    # third), and time moves on; a straggler in time between them does not stop 3 of them
    # (1 in time since the first: 3 >= 1)
    w = _window()
    w.update_many(["a"] * 3, [0.0, 60.0, 100.0])
    gap = 2 * 86_400.0
    assert w.update_many(["b", "b"], [gap, gap + 60]) == (0, 0, 0, 2)
    assert w.update_many(["b"], [gap + 120]) == (3, 0, 0, -2)
    assert _states(w) == (6, 0, 0, 0, gap + 120)
    s = _window()
    s.update_many(["a"] * 3, [0.0, 60.0, 100.0])
    got = [s.update(c, t) for c, t in [("b", gap), ("a", 110.0), ("b", gap + 60),
                                       ("b", gap + 120)]]  # fmt: skip
    assert got == [(0, 0, 0, 1), (1, 0, 0, 0), (0, 0, 0, 1), (3, 0, 0, -2)]
    assert _states(s) == (7, 0, 0, 0, gap + 120)


def test_an_old_held_event_near_a_real_jump_delays_it_and_loses_nothing() -> None:
    # z at 5000 (held: 4900 s past 100) before 10 in-time events (200..1100); then traffic
    # jumps to 6000, near z (1000 s <= 3600): the held near the new events, z among them, must
    # outnumber the 10 in time since z. b's at 6000, 6060, ..., 6480 (9): the first 8 held
    # (with z 2..9 held + the new one < 10); the 9th makes 10 >= 10: z and the 8 b's are
    # released with it (a run rule confirmed at the third b, which a chance run of a steady
    # skew also passes: a review)
    w = _window()
    w.update_many(["a"] * 3, [0.0, 60.0, 100.0])
    w.update("z", 5000.0)
    w.update_many(["a"] * 10, [200.0 + 100 * i for i in range(10)])
    assert w.update_many(["b"] * 8, [6000.0 + 60 * i for i in range(8)]) == (0, 0, 0, 8)
    assert w.held_since == [10] + [0] * 8
    assert w.update("b", 6480.0) == (10, 0, 0, -9)
    assert _states(w) == (23, 0, 0, 0, 6480.0)


def test_a_steady_skew_confirms_no_jump_and_one_in_two_does() -> None:
    # a review: 5 a's start the watermark (0..120 s), then z a z a z a z a z (z three days
    # ahead): at the fifth z the held set, counted from the first z, is 4 + 1 = 5 against
    # 4 in time since it: 5 >= max(5, 4), a jump — a producer skewing every other event
    # cannot be told from traffic that moved (the in-time ones could be the stragglers)
    cats = ["a"] * 5 + ["z", "a"] * 4 + ["z"]
    stamps = [0.0, 30.0, 60.0, 90.0, 120.0]
    stamps += [x for i in range(4) for x in (Z, 130.0 + 10 * i)] + [Z]
    w = _window(ahead_confirm=5)
    w.update_many(cats, stamps)
    assert w.watermark == Z
    # one event in three: z a a z a a ... (5 z's, then 100 a's): at the k-th z, k held
    # against 2k - 2 in time since the first (k >= 2k - 2 only for k <= 2 < 5): never a
    # jump, whatever comes after (the run rule of before took any 5 held with at most as
    # many in time since the first of them: with 20,000 events 3-5 % of them skewed at
    # random, such a chance run came in 1-3 of 5 seeds, the review found)
    cats = ["a"] * 5 + ["z", "a", "a"] * 5 + ["a"] * 100
    stamps = [0.0, 30.0, 60.0, 90.0, 120.0]
    stamps += [x for i in range(5) for x in (Z, 130.0 + 10 * i, 135.0 + 10 * i)]
    stamps += [200.0 + i for i in range(100)]
    w = _window(ahead_confirm=5)
    w.update_many(cats, stamps)
    assert _states(w) == (115, 0, 0, 5, 299.0)


def test_consecutive_skewed_events_look_like_a_jump() -> None:
    # three z's in a row, none in time between: nothing tells them from traffic resuming after
    # a gap, so they move the watermark and the in-time events after them are late (the
    # starved report then says so)
    w = _window()
    w.update_many(["a"] * 3 + ["z"] * 3 + ["a"] * 2, [0.0, 100.0, 200.0, Z, Z, Z, 300.0, 400.0])
    assert _states(w) == (6, 2, 0, 0, Z)


def test_a_snapshot_of_the_old_code_counts_in_time_events_from_the_restore() -> None:
    # written before session 32: held with no "held_since" counts; how many came
    # in time after them is unknown, so they count from the restore: 4 in time since then
    # outnumber the 3 held z's (2 restored + the new one), which confirmed before the fix
    old = _window().snapshot() | {
        "watermark": 200.0,
        "accepted": 3,
        "ahead": 2,
        "held": [[Z, "z"], [Z, "z"]],
        "buckets": {"0": {"a": 1}, "1": {"a": 1}, "3": {"a": 1}},
    }
    del old["held_since"]
    w = _window().restore(old)
    w.update_many(["a"] * 4, [300.0, 400.0, 500.0, 600.0])
    assert w.update("z", Z) == (0, 0, 0, 1)
    assert _states(w) == (7, 0, 0, 3, 600.0)
    assert w.held_since == [4, 4, 0]
    # with nothing in time after the restore, the third confirms (traffic jumped across it)
    jump = _window().restore(old)
    assert jump.update("z", Z + 1) == (3, 0, 0, -2)
    assert jump.watermark == Z + 1


def _stage(min_count: int) -> DriftStage:
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, warmup_s=600,
                          reference_window_s=600, max_ahead_s=math.inf)  # fmt: skip
    return DriftStage({"language": {"en": 500}}, windows=config, min_count=min_count,
                      clock=lambda: 1e12)  # fmt: skip


NOTE = {"language": "en"}


def test_late_events_under_the_starved_share_are_named_when_they_left_the_window_short() -> None:
    # 1,000 on time (0..999 s), then traffic at 10,000 s (5 events; the test at the 300 s tick
    # 10,000 sees its 600 s window [9420, 10020) hold 1), then 150 late (stamped 500..649,
    # 9,400 s behind): 150 of the latest 1,155 kept out = 13 %, not starved (20 %), yet more
    # than the 1 the window holds. They are named, but they did not leave the window short:
    # given its share of them back (1 / (1 - 0.13) = 1.15) it would still hold far fewer than
    # 100 — traffic fell too (since the thirty-fifth session; before, 1 + 150 >= 100 blamed
    # the timestamps alone, and trial 17's 407 late events over six days at 25 an hour
    # blamed the clocks for a window thin by traffic). The window's advice follows: 1 in
    # 600 s, 100 need 600 x 100 / 1 s = 16.7 h, about 17 h. The earlier window is the busiest
    # over the events' times (trial 41): one event a second, 10 full minutes of 60 = 600
    stage = _stage(min_count=100)
    stage._update([NOTE] * 1000, [float(i) for i in range(1000)])
    stage._update([NOTE] * 5, [10_000.0 + i for i in range(5)])
    stage._update([NOTE] * 150, [500.0 + i for i in range(150)])
    assert stage.recent_kept_out() == (1155, 150, 0, 0, 150 / 1155)
    assert stage.starved() is None
    detector = stage.categorical["language"]
    for name, test in stage.report()["language"]["comparisons"].items():
        key = "reference_window_s" if name == "reference" else "window_s"
        why = (
            "13% of the latest 1155 events seen were kept out of the drift windows (150 late, "
            f"0 future, 0 ahead), more than the current window's 1 (check the clocks that "
            f"stamp them and {_READ_ORDER}, or analytics.drift.allowed_lateness_s); traffic "
            "fell: the current 10 min window holds 1 questions, fewer than 100, though an "
            "earlier one held 600; if it stays this low, raise "
            f"analytics.drift.{key} to about 17 h (or lower analytics.drift.min_count)"
        )
        assert detector.busiest[name] >= 100, name
        assert test["n_current"] == 1, name
        assert (test["state"], test["insufficient"]) == ("insufficient_data", why), name


def test_few_late_events_leave_the_window_advice() -> None:
    # the same, but 1 late event: not more than the window's 1, so thin traffic is the cause
    stage = _stage(min_count=100)
    stage._update([NOTE] * 1000, [float(i) for i in range(1000)])
    stage._update([NOTE] * 5, [10_000.0 + i for i in range(5)])
    stage._update([NOTE], [500.0])
    reason = stage.report()["language"]["comparisons"]["reference"]["insufficient"]
    assert reason.startswith("traffic fell: the current 10 min window holds 1 questions"), reason
    assert "kept out" not in reason


def test_a_full_window_is_not_said_to_be_left_short_by_the_events_kept_out() -> None:
    """Review s35 (since before the session's rule): a comparison is ``insufficient_data``
    for its baseline too, not only its window. Starved windows (25 % late) whose current
    window held 3 times ``min_count`` while the frozen baseline warmed up read "the events'
    timestamps, not the traffic, leave the windows short", and the warm-up, the reason it
    was untested, was not said. With a full window the kept-out share is said, then the
    comparison's own reason."""
    stage = _stage(min_count=100)
    stage._update([NOTE] * 500, [float(i) for i in range(500)])  # 0..499 s: a full window
    stage._update([NOTE] * 250, [float(i) for i in range(250)])  # then 250 stamped 0..249 s
    stage._update([NOTE] * 50, [500.0 + i for i in range(50)])  # (most of them late)
    _, late, *_, share = stage.recent_kept_out()
    assert late > 150 and share >= 0.2 and stage.starved() is not None
    test = stage.report()["language"]["comparisons"]["baseline"]
    assert (test["state"], test["n_reference"]) == ("insufficient_data", 0)
    assert test["n_current"] >= 100
    assert test["insufficient"].endswith(
        "; the baseline is still warming up: it is the first 10 min of traffic "
        "(analytics.drift.warmup_s), ready once those hold 100 questions"
    ), test["insufficient"]
    assert "leave the windows short" not in test["insufficient"]
