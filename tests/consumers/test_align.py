"""The event-time alignment decision of :mod:`consumers.align` (no broker: partitions are
plain keys, records plain strings, the clock a list)."""

from __future__ import annotations

import math

import pytest

from consumers.align import EventTimeAligner, LogPosition, event_times_from
from consumers.base import DeadLetter, Origin, RawMessage

DONE = LogPosition(10, 10, checked_at=0.0)  # nothing left to read (its end read at time 0)
MORE = LogPosition(3, 10)  # records left in the log
UNKNOWN = LogPosition(None, None)  # not fetched yet


def _aligner(skew: float = 100.0, idle: float = 5.0) -> tuple[EventTimeAligner[str], list[float]]:
    now = [0.0]
    return EventTimeAligner(skew, idle_hold_s=idle, clock=lambda: now[0]), now


def _add(aligner: EventTimeAligner[str], key: str, stamps: list[float | None]) -> None:
    aligner.add(key, [f"{key}@{s}" for s in stamps], stamps)


def test_partitions_go_out_together_in_event_time() -> None:
    aligner, _ = _aligner(skew=100)
    _add(aligner, "a", [0, 50, 100, 150, 200, 300])  # a whole stretch of one partition
    _add(aligner, "b", [10, 60, 110, 400])
    logs = {"a": DONE, "b": DONE}
    first = aligner.take(logs, 100)
    # a up to b's head + 100, b up to a's head + 100; a first (its first record is earliest)
    assert first == [("a", ["a@0", "a@50", "a@100"]), ("b", ["b@10", "b@60"])]
    assert aligner.buffered() == {"a", "b"}  # held back: the source pauses them
    assert aligner.take(logs, 100) == [("b", ["b@110"]), ("a", ["a@150", "a@200"])]
    assert aligner.take(logs, 100) == [("a", ["a@300"]), ("b", ["b@400"])]
    assert aligner.buffered() == set() and aligner.held_polls == 2


def test_a_partition_alone_is_not_held() -> None:
    aligner, _ = _aligner(skew=10)
    _add(aligner, "a", [0, 1_000, 50_000])
    assert aligner.take({"a": DONE, "b": DONE}, 100) == [("a", ["a@0", "a@1000", "a@50000"])]
    assert aligner.held_polls == 0


def test_a_partition_not_read_yet_with_records_holds_the_others() -> None:
    aligner, _ = _aligner(skew=100)
    _add(aligner, "a", [0, 1_000])
    # b has records left and nothing was read of it: a waits (its head is past -inf + skew)
    assert aligner.take({"a": DONE, "b": MORE}, 100) == []
    _add(aligner, "b", [5])
    assert aligner.take({"a": DONE, "b": MORE}, 100) == [("a", ["a@0"]), ("b", ["b@5"])]
    # b read up to 5 and still has records: a's 1,000 waits for b to get there
    assert aligner.take({"a": DONE, "b": MORE}, 100) == []
    # b has nothing left (caught up, quiet): it holds no one
    assert aligner.take({"a": DONE, "b": DONE}, 100) == [("a", ["a@1000"])]


def test_an_empty_or_unfetched_partition_does_not_block() -> None:
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "a", [0, 1_000])
    empty = LogPosition(0, 0, checked_at=0.0)
    assert aligner.take({"a": DONE, "e": empty}, 100) == [("a", ["a@0", "a@1000"])]
    assert aligner.frontier({"a": DONE, "e": empty}) == math.inf
    # a partition never fetched (unknown end) holds the others, for idle_hold_s only
    _add(aligner, "a", [2_000])
    assert aligner.take({"a": DONE, "u": UNKNOWN}, 100) == []
    now[0] = 5.0
    assert aligner.take({"a": DONE, "u": UNKNOWN}, 100) == [("a", ["a@2000"])]


def test_a_partition_that_gives_nothing_stops_holding_after_idle_hold() -> None:
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "b", [0])
    assert aligner.take({"b": MORE}, 10) == [("b", ["b@0"])]
    _add(aligner, "a", [500])
    assert aligner.take({"a": DONE, "b": MORE}, 10) == []  # b has records: a waits
    now[0] = 4.9
    assert aligner.take({"a": DONE, "b": MORE}, 10) == []
    now[0] = 5.0  # b gave nothing for 5 s though it says it has records: a goes
    assert aligner.take({"a": DONE, "b": MORE}, 10) == [("a", ["a@500"])]


def test_records_without_event_time_go_with_the_one_before() -> None:
    aligner, _ = _aligner(skew=10)
    _add(aligner, "a", [0, None, 5, None, 100])
    _add(aligner, "b", [50])
    assert aligner.take({"a": DONE, "b": DONE}, 10) == [("a", ["a@0", "a@None", "a@5", "a@None"])]


def test_at_most_max_records_the_earliest_first() -> None:
    aligner, _ = _aligner(skew=1_000)
    _add(aligner, "a", [0, 2, 4, 6, 8])
    _add(aligner, "b", [1, 3, 5, 7, 9])
    assert aligner.take({"a": DONE, "b": DONE}, 5) == [("a", ["a@0", "a@2", "a@4"]),
                                                       ("b", ["b@1", "b@3"])]  # fmt: skip
    assert aligner.buffered_count() == 5


def test_buffers_of_partitions_not_assigned_are_dropped_and_clear_forgets_all() -> None:
    aligner, _ = _aligner(skew=10)
    _add(aligner, "a", [0, 100])
    _add(aligner, "b", [0, 100])
    # b revoked: its records go, and a alone is not held
    assert aligner.take({"a": DONE}, 10) == [("a", ["a@0", "a@100"])]
    assert aligner.buffered() == set()
    _add(aligner, "a", [200])
    aligner.clear()
    assert aligner.buffered() == set() and aligner.frontier({"a": DONE}) == math.inf


def test_release_gives_back_what_revoked_partitions_held_and_forgets_them() -> None:
    """The source seeks a partition it keeps back to the first record released (s37: the
    buffers were dropped while kafka-python kept the position past them: records lost)."""
    aligner, _ = _aligner(skew=10)
    _add(aligner, "a", [0, 100, 200])
    _add(aligner, "b", [5])
    assert aligner.take({"a": MORE, "b": MORE}, 10) == [("a", ["a@0"]), ("b", ["b@5"])]
    assert aligner.first_held() == {"a": "a@100"}
    assert aligner.release(["a", "b", "c"]) == {"a": ["a@100", "a@200"]}
    assert aligner.buffered() == set() and aligner.first_held() == {}
    # a's newest handed-out time is forgotten too: read again, it holds b from its first
    _add(aligner, "b", [50])
    assert aligner.take({"a": UNKNOWN, "b": MORE}, 10) == []


def test_the_bound_must_be_positive() -> None:
    with pytest.raises(ValueError, match="max_skew_s"):
        EventTimeAligner(0.0)


def test_event_times_from_a_decoder() -> None:
    from datetime import UTC, datetime

    good = RawMessage(b"x", Origin("t", 0, 0))
    bad = RawMessage(b"y", Origin("t", 0, 1))

    class Event:
        timestamp = datetime(2026, 1, 1, tzinfo=UTC)

    def decode(messages: object) -> tuple[list[tuple[RawMessage, Event]], list[DeadLetter]]:
        return [(good, Event())], [DeadLetter(bad, "not_json", "")]

    assert event_times_from(decode)([good, bad]) == [Event.timestamp.timestamp(), None]


def test_flush_hands_out_a_partition_at_once() -> None:
    aligner, _ = _aligner(skew=10)
    _add(aligner, "a", [0])
    _add(aligner, "b", [0, None, 500])
    assert aligner.flush("b") == ["b@0", "b@None", "b@500"]
    assert aligner.flush("b") == [] and aligner.buffered() == {"a"}
    assert aligner.marks({"a": DONE, "b": MORE}) == {"a": 0.0, "b": 500.0}


def test_event_times_from_leave_out_a_time_in_the_future() -> None:
    from datetime import UTC, datetime, timedelta

    now = datetime.now(UTC)
    messages = [RawMessage(b"x", Origin("t", 0, i)) for i in range(3)]

    class Event:
        def __init__(self, at: datetime) -> None:
            self.timestamp = at

    stamps = [now - timedelta(hours=1), now + timedelta(seconds=30), now + timedelta(days=400)]

    def decode(batch: object) -> tuple[list[tuple[RawMessage, Event]], list[DeadLetter]]:
        return [(m, Event(at)) for m, at in zip(messages, stamps, strict=True)], []

    got = event_times_from(decode, future_tolerance_s=60)(messages)
    assert got[:2] == [stamps[0].timestamp(), stamps[1].timestamp()] and got[2] is None


def test_a_caught_up_partition_holds_records_fetched_after_its_last_end_check() -> None:
    """s40 (a trial): a backlog produced at once while the consumer is live; one fetch gave
    partition a 30 h of events while b still showed its old high watermark ("caught up"):
    a's records went out at once and b's came hours behind them (8 % late). b now holds
    what was fetched after its end was last read, at its newest handed-out time, until a
    fresh read shows it has nothing left."""
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "b", [0])
    assert aligner.take({"b": MORE}, 10) == [("b", ["b@0"])]
    now[0] = 1.0
    _add(aligner, "a", [50, 90_000, 100_000])  # the burst: hours ahead of b
    stale = LogPosition(10, 10, checked_at=0.5)  # b "caught up", its end read before a's fetch
    assert aligner.checks_wanted({"a": DONE, "b": stale}) == {"b"}
    # within the bound of b's newest (0 + 100) only; b has no mark for the firm rule
    assert aligner.take({"a": DONE, "b": stale}, 10) == [("a", ["a@50"])]
    assert aligner.marks({"a": DONE, "b": stale}) == {"a": 90_000}
    assert aligner.unchecked({"a": DONE, "b": stale}) == {"b": (0.0, 0.5)}
    # a fresh read finds b's records: b has more, holds as a partition with records left
    more = LogPosition(10, 20, checked_at=1.0)
    assert aligner.checks_wanted({"a": DONE, "b": more}) == set()
    assert aligner.take({"a": DONE, "b": more}, 10) == []
    _add(aligner, "b", [89_950, 95_000])
    assert aligner.take({"a": DONE, "b": LogPosition(20, 20, checked_at=1.0)}, 10) == [
        ("b", ["b@89950"]),
        ("a", ["a@90000"]),
    ]
    caught_up = LogPosition(20, 20, checked_at=1.0)
    assert aligner.take({"a": DONE, "b": caught_up}, 10) == [("b", ["b@95000"])]
    # b read to its end; a's last record was fetched by b's last read: b holds it no more
    assert aligner.take({"a": DONE, "b": caught_up}, 10) == [("a", ["a@100000"])]


def test_a_fresh_end_check_that_finds_nothing_lets_the_records_go() -> None:
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "b", [0])
    assert aligner.take({"b": MORE}, 10) == [("b", ["b@0"])]
    now[0] = 2.0
    _add(aligner, "a", [500, 600])
    never = LogPosition(10, 10)  # caught up, end never read: holds everything fetched
    assert aligner.take({"a": DONE, "b": never}, 10) == []
    assert aligner.checks_wanted({"a": DONE, "b": never}) == {"b"}
    before = LogPosition(10, 10, checked_at=1.9)  # read before a's records came: no proof
    assert aligner.take({"a": DONE, "b": before}, 10) == []
    now[0] = 2.1
    fresh = LogPosition(10, 10, checked_at=2.05)  # read after: b really has nothing left
    assert aligner.checks_wanted({"a": DONE, "b": fresh}) == set()
    assert aligner.take({"a": DONE, "b": fresh}, 10) == [("a", ["a@500", "a@600"])]
    assert aligner.held_polls == 2


def test_a_caught_up_partition_holds_within_the_bound_and_for_idle_hold_only() -> None:
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "b", [1_000])
    assert aligner.take({"b": MORE}, 10) == [("b", ["b@1000"])]
    now[0] = 1.0
    _add(aligner, "a", [1_050, 1_100, 1_101])  # live traffic: within the bound of b's newest
    never = LogPosition(10, 10)
    assert aligner.checks_wanted({"a": DONE, "b": never}) == {"b"}  # 1,101 > 1,000 + 100
    assert aligner.take({"a": DONE, "b": never}, 10) == [("a", ["a@1050", "a@1100"])]
    assert aligner.checks_wanted({"a": DONE, "b": never}) == {"b"}
    now[0] = 5.9  # the end cannot be read (broker away): the record waits ...
    assert aligner.take({"a": DONE, "b": never}, 10) == []
    now[0] = 6.0  # ... idle_hold_s after it was fetched at most
    assert aligner.checks_wanted({"a": DONE, "b": never}) == set()
    assert aligner.take({"a": DONE, "b": never}, 10) == [("a", ["a@1101"])]


def test_an_empty_partition_holds_only_until_its_end_is_read() -> None:
    """A partition that never had a record (its mark minus infinity) holds what was fetched
    after its last end read; each new fetch of the others needs a read after it."""
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "a", [0, 10])
    empty_unread = LogPosition(0, 0)
    assert aligner.take({"a": DONE, "e": empty_unread}, 10) == []
    assert aligner.take({"a": DONE, "e": LogPosition(0, 0, checked_at=0.0)}, 10) == [
        ("a", ["a@0", "a@10"])
    ]
    now[0] = 0.3
    _add(aligner, "a", [20])
    assert aligner.take({"a": DONE, "e": LogPosition(0, 0, checked_at=0.0)}, 10) == []
    assert aligner.take({"a": DONE, "e": LogPosition(0, 0, checked_at=0.3)}, 10) == [
        ("a", ["a@20"])
    ]


def test_add_wants_one_event_time_per_record() -> None:
    aligner, _ = _aligner()
    with pytest.raises(ValueError, match="event times"):
        aligner.add("a", ["x", "y"], [1.0])


def test_a_failed_end_read_lets_the_records_go_and_is_not_retried_for_idle_hold() -> None:
    """A caught-up partition whose end cannot be read (its leader gone: kafka-python's
    ListOffsets for it times out, and with it the whole request) must not hold every record
    of the live partitions idle_hold_s each: with their partition paused meanwhile, the
    source handed out ~1,200 of 15,900 records produced at 1,000/s in 15 s (s40 review).
    After a failed read it holds no one (the rule before s40) for idle_hold_s, and no read
    of it is wanted meanwhile; then it holds, and wants a read, again."""
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "b", [0])
    assert aligner.take({"b": MORE}, 10) == [("b", ["b@0"])]
    now[0] = 1.0
    _add(aligner, "a", [1_000])
    never = LogPosition(10, 10)
    assert aligner.checks_wanted({"a": DONE, "b": never}) == {"b"}
    aligner.end_unreadable(["b"])  # the read failed
    assert aligner.checks_wanted({"a": DONE, "b": never}) == set()
    assert aligner.take({"a": DONE, "b": never}, 10) == [("a", ["a@1000"])]
    now[0] = 5.9
    _add(aligner, "a", [2_000])
    assert aligner.take({"a": DONE, "b": never}, 10) == [("a", ["a@2000"])]
    now[0] = 6.0  # idle_hold_s after the failure: b holds what is fetched again
    _add(aligner, "a", [3_000])
    assert aligner.checks_wanted({"a": DONE, "b": never}) == {"b"}
    assert aligner.take({"a": DONE, "b": never}, 10) == []
    assert aligner.take({"a": DONE, "b": LogPosition(10, 10, checked_at=6.0)}, 10) == [
        ("a", ["a@3000"])
    ]
    aligner.end_unreadable(["b"])
    aligner.release(["b"])  # revoked: its next assignment starts afresh
    _add(aligner, "a", [4_000])
    assert aligner.checks_wanted({"a": DONE, "b": never}) == {"b"}


def test_records_held_only_for_an_end_read_leave_their_partition_fetched() -> None:
    """A partition whose records only a caught-up partition's pending end read holds is
    not paused by the source (paused, a quiet partition's fetch in flight made it wait up
    to fetch_max_wait_ms: p99 0.9-1.8 s, s40 review); one a partition with a mark holds is."""
    aligner, now = _aligner(skew=100, idle=5)
    _add(aligner, "b", [0])
    assert aligner.take({"b": MORE}, 10) == [("b", ["b@0"])]
    now[0] = 1.0
    _add(aligner, "a", [1_000])
    assert aligner.held_for_reads({"a": DONE, "b": LogPosition(10, 10)}) == {"a"}
    assert aligner.held_for_reads({"a": DONE, "b": MORE}) == set()  # b has records left
    assert aligner.held_for_reads({"a": DONE, "b": LogPosition(10, 10, checked_at=1.0)}) == set()


def test_a_lone_outlier_at_a_partition_head_does_not_set_its_mark() -> None:
    # s41 (trial 40, LOW 1): a's second record is stamped 2 h ahead of the records around it
    aligner, _ = _aligner(skew=100)
    _add(aligner, "a", [0, 7_200, 60, 120, 180, 240])
    _add(aligner, "b", [30, 90, 150, 210, 7_000])
    logs = {"a": DONE, "b": DONE}
    # 7,200 is more than 100 after all 4 records after it: lone, ordered as one without a
    # time (out with a@0). Marks: a 0, b 30; a goes up to 30 + 100 = 130, b up to 100
    assert aligner.take(logs, 100) == [("a", ["a@0", "a@7200", "a@60", "a@120"]),
                                       ("b", ["b@30", "b@90"])]  # fmt: skip
    # marks: a 180 (not 7,200), b 150: a up to 250, b up to 280 (b@7000 waits)
    assert aligner.take(logs, 100) == [("b", ["b@150", "b@210"]), ("a", ["a@180", "a@240"])]
    assert aligner.take(logs, 100) == [("b", ["b@7000"])]


def test_before_the_rule_the_outlier_let_the_other_partition_run_two_hours_ahead() -> None:
    # for contrast, what a's mark at 7,200 did (the same log, the outlier taken at its
    # stamp): b's records up to 7,300 went before a's records after the outlier
    aligner, _ = _aligner(skew=100)
    aligner.add("a", ["a@0", "a@7200", "a@60"], [0, 7_200, None])  # 60 without a time: no rule
    _add(aligner, "b", [30, 90, 150, 210, 7_000])
    logs = {"a": DONE, "b": DONE}
    assert aligner.take(logs, 100) == [("a", ["a@0"]), ("b", ["b@30", "b@90"])]
    # a's head is 7,200 now: b's records up to 7,300 all go at once
    assert aligner.take(logs, 100) == [("b", ["b@150", "b@210", "b@7000"])]


def test_a_real_jump_at_a_partition_head_is_taken_at_its_time() -> None:
    aligner, _ = _aligner(skew=100)
    _add(aligner, "a", [0, 7_200, 7_260, 7_320])  # traffic moved on: not lone
    _add(aligner, "b", [30, 7_100, 7_250])
    logs = {"a": DONE, "b": DONE}
    assert aligner.take(logs, 100) == [("a", ["a@0"]), ("b", ["b@30"])]
    # marks: a 7,200 (its head, at its time), b 7,100: a up to 7,200, b up to 7,300
    assert aligner.take(logs, 100) == [("b", ["b@7100", "b@7250"]), ("a", ["a@7200"])]
    assert aligner.take(logs, 100) == [("a", ["a@7260", "a@7320"])]
