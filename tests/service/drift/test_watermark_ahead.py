"""One event stamped far ahead of the rest must not switch drift detection off.

Every expected value below is counted by hand from the tiny logs (buckets of 60 s).
"""

from __future__ import annotations

import json

from service.drift.stage import STARVED, STARVED_RECENT_EVENTS, DriftStage
from service.drift.windows import CategoryWindow, ComparisonWindows, WindowConfig


def _window(**kw: object) -> CategoryWindow:
    args = {"allowed_lateness_s": 60.0, "retention_s": 86_400.0, "max_ahead_s": 3600.0,
            "ahead_confirm": 3} | kw  # fmt: skip
    return CategoryWindow(600.0, 60.0, **args)  # type: ignore[arg-type]


def test_one_outlier_is_held_and_later_events_are_not_late() -> None:
    w = _window()
    # a at 0, 100, 200; outlier z 3 days ahead; then b at 300, 400, 500
    cats = ["a", "a", "a", "z", "b", "b", "b"]
    stamps = [0.0, 100.0, 200.0, 259_200.0, 300.0, 400.0, 500.0]
    update = w.update_many(cats, stamps)
    assert update == (6, 0, 0, 1)
    assert (w.accepted, w.late, w.future, w.ahead) == (6, 0, 0, 1)
    assert w.watermark == 500.0
    # 600 s window up to bucket 8 (500 s): buckets -1..8 hold all six kept events
    assert w.current() == {"a": 3, "b": 3}
    assert w.held == [(259_200.0, "z")]


def test_without_a_bound_the_outlier_makes_everything_late() -> None:
    w = _window(max_ahead_s=float("inf"))
    w.update_many(["a", "z", "b", "b"], [0.0, 259_200.0, 300.0, 400.0])
    assert (w.accepted, w.late, w.ahead) == (2, 2, 0)  # the reported bug, for contrast


def test_a_gap_of_six_hours_advances_time_once_confirmed() -> None:
    w = _window()
    # the first events start the watermark once 3 lie within 1 h of one another (the third)
    assert w.update_many(["a", "a", "a"], [0.0, 60.0, 100.0]) == (3, 0, 0, 0)
    gap = 6 * 3600.0  # nothing for 6 h, then traffic resumes at 21 600 s
    assert w.update_many(["b"], [gap]) == (0, 0, 0, 1)  # held: 6 h > 1 h ahead
    assert w.update_many(["b"], [gap + 60]) == (0, 0, 0, 1)
    assert w.watermark == 100.0
    # the third within 1 h of the other two confirms the jump: all three added
    assert w.update_many(["c"], [gap + 120]) == (3, 0, 0, -2)
    assert (w.accepted, w.late, w.ahead, w.watermark) == (6, 0, 0, gap + 120)
    assert w.current() == {"b": 2, "c": 1}  # the a's are 6 h back, out of the 600 s window
    assert w.held == []
    assert w.update_many(["c"], [gap + 180]) == (1, 0, 0, 0)  # time moves on normally


def test_same_input_same_result_however_batched() -> None:
    cats = ["a", "a", "z", "b", "b", "c", "b", "c"]
    stamps = [0.0, 60.0, 500_000.0, 120.0, 21_600.0, 21_660.0, 21_700.0, 21_720.0]
    whole = _window()
    whole.update_many(cats, stamps)
    one_by_one = _window()
    for cat, stamp in zip(cats, stamps, strict=True):
        one_by_one.update(cat, stamp)
    restored = _window()
    restored.update_many(cats[:4], stamps[:4])
    restored = _window().restore(restored.snapshot())
    restored.update_many(cats[4:], stamps[4:])
    for w in (whole, one_by_one, restored):
        # z held for good; the b at 21 600 and 21 660 c held, confirmed by 21 700
        assert (w.accepted, w.late, w.future, w.ahead) == (7, 0, 0, 1)
        assert w.watermark == 21_720.0
        assert w.snapshot() == whole.snapshot()


def test_ticks_follow_the_held_watermark() -> None:
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, baseline="none",
                          max_ahead_s=3600, ahead_confirm=3)  # fmt: skip
    windows = ComparisonWindows(config, min_count=1, has_reference=False)
    ticks: list[float | None] = []
    stamps = [0.0, 30.0, 60.0, 259_200.0, 310.0, 620.0]
    windows.ingest(["a"] * 6, stamps, None, lambda _: ticks.append(windows.window.watermark))
    # the first tick when 0, 30 and 60 start the watermark (at 60); the outlier is no test time
    assert ticks == [60.0, 310.0, 620.0]
    assert windows.window.ahead == 1


def test_a_first_event_stamped_days_ahead_does_not_make_the_rest_late() -> None:
    # The first event is 3 days ahead (a test event with a bad clock, a stray line): with no
    # watermark yet, events wait until 3 lie within 1 h of one another, so it stays held and
    # the traffic after it starts the watermark instead of being all late.
    stamps = [259_200.0, 0.0, 100.0, 200.0, 300.0, 400.0]
    cats = ["z", "a", "a", "b", "b", "b"]
    whole = _window()
    assert whole.update_many(cats, stamps) == (5, 0, 0, 1)
    one_by_one = _window()
    got = [one_by_one.update(cat, stamp) for cat, stamp in zip(cats, stamps, strict=True)]
    # z held, a held, a held, b confirms (releases both a's: accepted 3, held -2), b, b
    assert got == [(0, 0, 0, 1), (0, 0, 0, 1), (0, 0, 0, 1), (3, 0, 0, -2), (1, 0, 0, 0),
                   (1, 0, 0, 0)]  # fmt: skip
    for w in (whole, one_by_one):
        assert (w.accepted, w.late, w.future, w.ahead, w.watermark) == (5, 0, 0, 1, 400.0)
        assert w.current() == {"a": 2, "b": 3}
        assert w.held == [(259_200.0, "z")]
    before = _window(ahead_confirm=1)  # no hold: the rule before, for contrast
    assert before.update_many(cats, stamps) == (1, 5, 0, 0)  # all but the outlier late


def _stage() -> DriftStage:
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, warmup_s=600,
                          reference_window_s=600, max_ahead_s=float("inf"))  # fmt: skip
    gold = {"language": {"en": 500}, "topic": {"t": 500}}
    return DriftStage(gold, windows=config, min_count=1, clock=lambda: 1e12)


NOTES = [{"language": "en", "topic": "t"}] * 10


def test_starved_windows_do_not_read_ok() -> None:
    stage = _stage()
    # 2 on time, then one far ahead (no hold configured), then 7 late: 7 / 10 kept out
    stage._update(NOTES, [0.0, 10.0, 100_000.0, *[20.0 + i for i in range(7)]])
    assert stage.kept_out() == (7, 0, 0, 0.7)
    report = stage.report()
    assert report["event_time"]["kept_out_share"] == 0.7
    assert report["event_time"]["recent_kept_out_share"] == 0.7
    assert report["event_time"]["recent_events"] == 10
    why = ("70% of the latest 10 events seen were kept out of the drift windows (7 late, 0 "
           "future, 0 ahead): an ok test saw too little of the traffic")  # fmt: skip
    assert report["event_time"]["starved"] == why
    for dim in ("language", "topic"):  # tested ok against the gold set, on 1 of 10 events
        assert (report[dim]["state"], report[dim]["tested_state"]) == (STARVED, "ok")
        assert report[dim]["starved"] == why
        assert report[dim]["comparisons"]["reference"]["state"] == STARVED
    assert stage.states()["language"] == STARVED


def test_few_kept_out_events_leave_ok_alone() -> None:
    stage = _stage()
    stage._update(NOTES, [float(i) for i in range(10)])
    assert stage.kept_out() == (0, 0, 0, 0.0)
    assert stage.starved() is None
    assert "starved" not in stage.report()["event_time"]
    assert stage.states()["language"] == "ok"


def test_held_events_the_watermark_passed_take_no_place_from_one_still_held() -> None:
    # A review's case (max_ahead_s 100): 100000 is held, then 150 (more than 100 past the
    # watermark 0), which 90 and 180 then pass; 63 more are held one by one (200 s apart, so
    # none near another) and 100050 confirms 100000. One by one, 150 is forgotten once passed,
    # and 100000 is among the 64 held (MAX_HELD); in one batch 150 still held a place and
    # pushed 100000 out, so nothing confirmed it.
    def window() -> CategoryWindow:
        return CategoryWindow(50.0, 10.0, allowed_lateness_s=10.0, retention_s=200.0,
                              max_ahead_s=100.0, ahead_confirm=2)  # fmt: skip

    stamps = [0.0, 100000.0, 150.0, 90.0, 180.0] + [1050.0 + 200 * i for i in range(63)]
    stamps.append(100050.0)
    whole, single = window(), window()
    whole.update_many(["a"] * len(stamps), stamps)
    for stamp in stamps:
        single.update("a", stamp)
    counts = [(w.accepted, w.late, w.future, w.ahead, w.watermark) for w in (whole, single)]
    assert counts[0] == counts[1]
    assert counts[0][4] == 100050.0  # the far one was confirmed by the last


def test_an_old_late_backlog_stops_starving_the_windows_once_enough_events_came_after() -> None:
    # 2 on time, then 3,000 late (a replayed backlog) then on-time traffic: the lifetime share
    # stays high, the share of the latest STARVED_RECENT_EVENTS (5,000) falls below 20 %
    stage = _stage()
    stage._update(NOTES[:2], [1000.0, 1001.0])
    for _ in range(30):  # 100 at a time, as process() feeds them
        stage._update([NOTES[0]] * 100, [10.0] * 100)
    assert stage.recent_kept_out() == (3002, 3000, 0, 0, 3000 / 3002)
    assert stage.starved() is not None
    # 4,000 on time: the latest updates cover 5,000+ events once the 2-event one is gone...
    for start in range(0, 4000, 100):
        stage._update([NOTES[0]] * 100, [1002.0 + (start + i) / 100 for i in range(100)])
    # ...: they are counted in blocks of the stream's events (0-99, 100-199, ...): the latest
    # 50 blocks and the 2 events of the 51st = 5,002 (the first 20 blocks forgotten): 10
    # blocks late (2,000-2,999) and the 2 late events 3,000-3,001 of the 31st = 1,002 /
    # 5,002 kept out, still starved
    assert stage.recent_kept_out() == (5002, 1002, 0, 0, 1002 / 5002)
    assert stage.starved() is not None
    stage._update([NOTES[0]] * 100, [1100.0 + i / 100 for i in range(100)])
    assert stage.recent_kept_out() == (5002, 902, 0, 0, 902 / 5002)
    assert stage.starved() is None
    assert stage.kept_out()[0] == 3000  # the lifetime count is still reported
    report = stage.report()["event_time"]
    # all: 3,000 late of 7,102 seen (2 + 3,000 + 4,100)
    assert (report["kept_out_share"], report["recent_kept_out_share"]) == (0.4224, 0.1803)
    assert "starved" not in report


def test_the_latest_kept_out_events_survive_a_restart() -> None:
    stage = _stage()
    stage._update(NOTES, [1000.0, 1001.0, *[1.0] * 8])  # 8 of 10 late (lateness 300 s)
    snapshot = json.loads(json.dumps(stage.state_snapshot()))
    again = _stage()
    again.restore(snapshot)
    assert again.recent_kept_out() == stage.recent_kept_out() == (10, 8, 0, 0, 0.8)
    # a snapshot written before the latest updates were kept: all its events as one update
    del snapshot["recent_kept_out"]
    old = _stage()
    old.restore(snapshot)
    assert old.recent_kept_out() == (10, 8, 0, 0, 0.8)
    old._update([NOTES[0]] * 100, [1002.0 + i for i in range(100)])
    assert old.recent_kept_out() == (110, 8, 0, 0, 8 / 110)


def _held_stage() -> DriftStage:
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, warmup_s=600,
                          reference_window_s=600, max_ahead_s=3600.0, ahead_confirm=3)  # fmt: skip
    return DriftStage({"language": {"en": 500}}, windows=config, min_count=1, clock=lambda: 1e12)


def test_old_held_events_near_a_later_jump_are_pushed_out_and_stay_counted() -> None:
    # A review's case: 2 held (far ahead), 5,000 on time, then traffic jumps there. With 5,000
    # in-time events since the 2 old ones, the held set near the jump (weighed from its oldest,
    # session 32) confirms only once MAX_HELD (64) newer held events have pushed the 2 old
    # ones out: the 65th new event confirms with the 64 held before it (none in time since
    # them); the 2 old ones stay counted as ahead (kept out, never in a bucket). Then 2 new
    # far-ahead events are held: 4 kept out among the latest events (the 2 pushed out, whose
    # holds the jump's release of 64 of 66 did not cancel, and the 2 new); the on-time events
    # are fed in updates of 100, as process() does, the jump's one at a time
    stage = _held_stage()
    window = stage.categorical["language"].window
    stage._update([NOTES[0]] * 100, [float(i) for i in range(100)])
    stage._update([NOTES[0]] * 2, [1e6, 1e6 + 1])
    assert window.ahead == 2
    for start in range(100, 5100, 100):
        stage._update([NOTES[0]] * 100, [float(start + i) for i in range(100)])
    for k in range(2, 66):
        stage._update([NOTES[0]], [1e6 + k])
        assert window.watermark == 5099.0  # held: 64 of them, the 2 old ones pushed out
    stage._update([NOTES[0]], [1e6 + 66])
    assert (window.watermark, window.ahead, window.accepted) == (1e6 + 66, 2, 5100 + 65)
    stage._update([NOTES[0]] * 2, [5e6, 5e6 + 1])
    assert window.ahead == 4
    events, late, future, ahead, share = stage.recent_kept_out()
    assert (late, future, ahead) == (0, 0, 4)
    assert 5000 <= events < 5100 + 100 and share == 4 / events


def test_events_fed_one_at_a_time_keep_a_short_list_of_updates() -> None:
    stage = _stage()
    for i in range(6000):
        stage._update([NOTES[0]], [float(i)])
    assert len(stage._recent) <= STARVED_RECENT_EVENTS // 100 + 1
    assert stage.recent_kept_out()[0] == 5000


def test_a_starved_window_short_of_events_blames_the_timestamps_not_the_window_size() -> None:
    # A trial's case: six first events days ahead start the watermark, the 3,000 after are all
    # late; each test is insufficient_data, and "raise window_s to about 80 h" was false advice
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, warmup_s=600,
                          reference_window_s=600)  # fmt: skip
    stage = DriftStage({"language": {"en": 500}, "topic": {"t": 500}}, windows=config,
                       min_count=200, clock=lambda: 1e12)  # fmt: skip
    stage._update([NOTES[0]] * 6, [259_200.0 + i for i in range(6)])
    for start in range(0, 3000, 100):
        stage._update([NOTES[0]] * 100, [float(start + i) for i in range(100)])
    assert stage.recent_kept_out() == (3006, 3000, 0, 0, 3000 / 3006)
    why = (
        "100% of the latest 3006 events seen were kept out of the drift windows (3000 late, "
        "0 future, 0 ahead): the events' timestamps, not the traffic, leave the windows "
        "short; check the clocks that stamp them and the order they are read in (events "
        "merged from several producers into one file or HTTP stream, or a Kafka partition "
        "further behind the others than the windows keep) (or "
        "analytics.drift.allowed_lateness_s)"
    )
    report = stage.report()
    for dim in ("language", "topic"):
        for test in report[dim]["comparisons"].values():
            assert (test["state"], test["insufficient"]) == ("insufficient_data", why)
    fine = DriftStage({"language": {"en": 500}}, windows=config, min_count=200,
                      clock=lambda: 1e12)  # fmt: skip
    fine._update([NOTES[0]] * 10, [float(i) for i in range(10)])  # thin traffic: the old advice
    assert (
        "raise analytics.drift"
        in fine.report()["language"]["comparisons"]["reference"]["insufficient"]
    )


def test_sparse_first_events_start_the_watermark_as_a_run() -> None:
    # A review's case: traffic of a few events per max_ahead_s never had 3 within 1 h of one
    # another, so the first events were held for good. Now 3 linked by steps of <= 1 h start
    # it: 0, 3000, 6000 (6000 is 6000 s from 0, but each step is 3000 s).
    w = _window()
    got = [w.update("a", t) for t in (259_200.0, 0.0, 3000.0, 6000.0, 9000.0)]
    assert got == [(0, 0, 0, 1), (0, 0, 0, 1), (0, 0, 0, 1), (3, 0, 0, -2), (1, 0, 0, 0)]
    assert (w.accepted, w.ahead, w.watermark) == (4, 1, 9000.0)
    assert w.held == [(259_200.0, "a")]
    whole = _window()
    whole.update_many(["a"] * 5, [259_200.0, 0.0, 3000.0, 6000.0, 9000.0])
    assert whole.snapshot() == w.snapshot()


def test_starved_windows_with_thin_traffic_say_both() -> None:
    # A review's case: 40 events on time, 15 late (23 % of the latest 65), 10 more: even all
    # 65 could not reach min_count 200, so the window advice stays, after the kept-out share
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, warmup_s=600,
                          reference_window_s=600)  # fmt: skip
    stage = DriftStage({"language": {"en": 500}}, windows=config, min_count=200,
                       clock=lambda: 1e12)  # fmt: skip
    stage._update([NOTES[0]] * 40, [1000.0 + i for i in range(40)])
    stage._update([NOTES[0]] * 15, [0.0] * 15)  # 1,039 - 0 > 300 s lateness: late
    stage._update([NOTES[0]] * 10, [1040.0 + i for i in range(10)])
    assert stage.recent_kept_out() == (65, 15, 0, 0, 15 / 65)
    why = stage.report()["language"]["comparisons"]["reference"]["insufficient"]
    assert why.startswith(
        "23% of the latest 65 events seen were kept out of the drift windows (15 late, 0 "
        "future, 0 ahead) (check the clocks that stamp them and the order they are read in "
        "(events merged from several producers into one file or HTTP stream, or a Kafka "
        "partition further behind the others than the windows keep), or "
        "analytics.drift.allowed_lateness_s); no 10 min window reached 200 questions; the "
        "busiest had 50: raise analytics.drift.reference_window_s to about 1 h"
    ), why  # the busiest over the events' times (trial 41): the 50 on time, 1,000-1,049 s, lie
    # in one 10 min window (the one test ran when the 5th event started the watermark, with 5
    # in it, and said 5 before); 200 at 50 per 600 s need 2,400 s: "about 1 h"
