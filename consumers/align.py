"""Event-time alignment of a consumer's partitions (the Kafka source's, issue s36).

A consumer catching up on a backlog of several partitions reads one partition's stretch
after another: a poll hands out up to ``max_poll_records`` records of the first partition
fetched, and a fetch holds up to 256 KiB of one partition (hundreds of events: at a few
events an hour, a day of event time). The drift windows judge lateness per partition, but
they test windows and freeze the baseline as the *fastest* partition's event time passes
them, before the slower partitions' events of that time came (a trial's 4-partition
backlog: a baseline on the wrong stretch and two false alarms; on another start 62 % of the
events late). Pausing partitions between polls cannot fix it: one poll already spans hours.

So, as Kafka Streams does (a buffer per partition, the record with the lowest timestamp
next) and as Flink's watermark alignment bounds the skew between sources, the source keeps
the records it fetched in a buffer per partition, with their *event* time (decoded from the
value; the Kafka record timestamp is the send time, the same for a backlog produced at
once), and each poll hands out of each partition only the records whose event time is at
most ``max_skew_s`` past the least *mark* of the other partitions; a partition's mark is

* the event time of its next buffered record, when it has records buffered;
* else, when it has records left to read in the log (its position below its high
  watermark), or was not fetched yet, the newest event time handed out of it, or minus
  infinity when nothing was (an unread partition with records holds the others until it
  has been read);

a partition with nothing buffered and nothing left to read (an empty or quiet partition, a
caught-up one) has no mark for the records that were fetched *before* its log end was last
read (its :attr:`LogPosition.checked_at`); for those fetched after, it holds the others at
the newest event time handed out of it (minus infinity when none was) until a fresh read of
its end shows it really has nothing left (or has more: then it is read and holds as above),
and for :data:`IDLE_HOLD_S` seconds at most. Its high watermark is only as fresh as the last
fetch response that carried it: a backlog produced at once while the consumer is live (a
trial, s40: 2,034 events of 5 days on 2 partitions) lands on the partitions a few ms apart,
and one fetch gave one partition's 500 records, 30 hours of event time, while the other
still showed its old high watermark, "caught up": they went out at once and 149 + 116 of
the other's events came more than the drift windows' history behind them (8 % late; a
replay of the same lines: 0). The source reads the end offsets of the partitions that
hold records so (:meth:`EventTimeAligner.checks_wanted`; rate-limited, see
:mod:`consumers.kafka_source`), which costs one ListOffsets round trip when a partition is
quiet for more than ``max_skew_s`` while another has records, nothing while every partition
has traffic within ``max_skew_s`` of the others. A partition that has (or may have) records
left but gave none for :data:`IDLE_HOLD_S` seconds holds no one either (a partition the
consumer cannot fetch must not stop the others forever), nor for :data:`IDLE_HOLD_S` one
whose end read failed (:meth:`EventTimeAligner.end_unreadable`). A partition alone is not held.
The partition with the least mark always has its next record handed out (or is being
fetched), and a caught-up partition's hold ends at a fresh end read or after
:data:`IDLE_HOLD_S`, so there is no deadlock, and every poll's
records lie within twice ``max_skew_s`` of the least mark. A record without an event time
(one that will be a dead letter) goes out with the record before it. A partition's records
keep their order, and each partition's records of a poll are one run (the engine reads the
poll's partition runs).

A record stamped more than ``max_skew_s`` after most of the (up to :data:`LONE_FOLLOWERS`)
records that follow it in its fetch is a *lone* outlier (a clock 2 h ahead, s41): it is
ordered as a record without an event time is — it goes out with the record before it and
sets neither its partition's mark nor the newest time handed out of it. Taken at its stamp,
its partition's mark went 2 h ahead while it was the head, and the other partitions' records
of those 2 h went out before this partition's own records after it, which then came hours
behind the drift windows' time. A real jump (records after it near or after it) is not lone;
the last record of a fetch has no followers and is taken at its stamp. The record itself
goes out unchanged: the drift windows judge its stamp (their gap rule holds it ``ahead``).

Records held back were fetched (the consumer's position is past them) but not handed out,
so they are neither processed nor committed (a partition's records go out in log order, so
its committed offset is never past its first held record): a partition with buffered
records is paused (no more fetched until its buffer is empty), but one whose records only a
caught-up partition's pending end read holds (:meth:`EventTimeAligner.held_for_reads`).
When partitions are revoked their buffers are released (:meth:`EventTimeAligner.release`);
the source moves a partition it keeps back to its first held record (kafka-python keeps a
kept partition's position, past them), and a partition revoked for good or a
re-subscription starts again from the committed offset.

This module holds the decision only (pure Python, no Kafka); :class:`~consumers.
kafka_source.KafkaSource` feeds it.
"""

from __future__ import annotations

import heapq
import math
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import repeat
from typing import Any, Generic, TypeVar

from consumers.base import RawMessage

K = TypeVar("K", bound=Hashable)

#: Seconds a partition with records left in the log (position below its high watermark) and
#: none buffered may give nothing before it stops holding the others back (a partition whose
#: leader is away, a stale high watermark).
IDLE_HOLD_S = 5.0

#: Records after a record (in its fetch) that tell whether it is a lone outlier: it is when
#: more than half of those with an event time are more than ``max_skew_s`` before it.
LONE_FOLLOWERS = 4

#: ``messages -> event time (Unix seconds) of each, None where it has none``: what the
#: aligner orders by (see :func:`event_times_from`).
EventTimes = Callable[[Sequence[RawMessage]], list[float | None]]


def event_times_from(
    decode: Callable[[Sequence[RawMessage]], tuple[list[tuple[RawMessage, Any]], list[Any]]],
    future_tolerance_s: float | None = None,
) -> EventTimes:
    """An :data:`EventTimes` from a batch decoder (``messages -> (decoded pairs, dead
    letters)``, :func:`consumers.loop.make_decoder`'s): the decoded event's ``timestamp``
    (a timezone-aware ``datetime``) as Unix seconds, ``None`` for a message that is a dead
    letter, and (with ``future_tolerance_s``) for one stamped more than that many seconds
    after the wall clock: the drift windows keep it out as ``future``, and as the time of
    its partition it would hold that partition back behind it until every other one caught
    up. Outside :func:`~consumers.decoding.collect_dropped_fields` the decoder counts no
    dropped field, so the engine's own decode of the same messages later counts them once."""

    def times(messages: Sequence[RawMessage]) -> list[float | None]:
        decoded, _ = decode(messages)
        found = {id(message): event.timestamp.timestamp() for message, event in decoded}
        stamps = [found.get(id(message)) for message in messages]
        if future_tolerance_s is None:
            return stamps
        limit = time.time() + future_tolerance_s
        return [None if stamp is None or stamp > limit else stamp for stamp in stamps]

    return times


@dataclass(frozen=True, slots=True)
class LogPosition:
    """Where a partition's consumer stands in its log: ``position`` (next offset to fetch)
    and ``highwater`` (the log's end as the last fetch response or end-offset read gave it);
    ``None`` unknown. ``checked_at``: the aligner's clock (monotonic seconds) when the end
    offset that ``highwater`` is at least was last read (the request sent at or after it), so
    the log had no record past ``highwater`` then; ``None``: never read (a fetch response's
    high watermark is of an unknown moment)."""

    position: int | None
    highwater: int | None
    checked_at: float | None = None

    @property
    def has_more(self) -> bool | None:
        """Records are left to read (position < high watermark); ``None`` when either is
        unknown (not fetched yet)."""
        if self.position is None or self.highwater is None:
            return None
        return self.position < self.highwater


class EventTimeAligner(Generic[K]):
    """Per-partition buffers of fetched records and the hand-out rule of the module docstring.

    Args:
        max_skew_s: event-time seconds a handed-out record may be past the frontier (> 0).
        idle_hold_s: seconds a partition with records left but none buffered holds the
            others without giving any (:data:`IDLE_HOLD_S`).
        clock: monotonic seconds (for ``idle_hold_s`` only).

    Raises:
        ValueError: ``max_skew_s`` is not > 0.
    """

    def __init__(
        self,
        max_skew_s: float,
        idle_hold_s: float = IDLE_HOLD_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not max_skew_s > 0:
            raise ValueError(f"max_skew_s must be > 0, got {max_skew_s}")
        self.max_skew_s = float(max_skew_s)
        self.idle_hold_s = idle_hold_s
        self._clock = clock
        #: records fetched, not handed out yet: ``(event time or None, record, clock time
        #: added)`` in log order
        self._buffers: dict[K, deque[tuple[float | None, Any, float]]] = {}
        #: newest event time handed out per partition
        self._handed: dict[K, float] = {}
        #: monotonic time a partition last gave records (or was first seen)
        self._last_gave: dict[K, float] = {}
        #: monotonic time a read of a caught-up partition's end last failed (it holds no one
        #: for ``idle_hold_s`` after, see :meth:`end_unreadable`)
        self._unreadable: dict[K, float] = {}
        #: polls that held back records (while catching up); records held back at most once
        self.held_polls = 0

    def add(self, key: K, records: Sequence[Any], times: Sequence[float | None]) -> None:
        """Buffer ``records`` of partition ``key`` (log order) with their event times, fetched
        now (the clock's time, see :attr:`LogPosition.checked_at`).

        Raises:
            ValueError: ``times`` and ``records`` differ in length.
        """
        if records:
            if len(times) != len(records):
                raise ValueError(f"{len(records)} records, {len(times)} event times")
            now = self._clock()
            buffer = self._buffers.setdefault(key, deque())
            ordered = lone_as_untimed(times, self.max_skew_s)
            buffer.extend(zip(ordered, records, repeat(now)))  # noqa: B905 (lengths checked)
            self._last_gave[key] = now

    def end_unreadable(self, keys: Iterable[K]) -> None:
        """A read of the ends of the caught-up partitions ``keys`` failed (a leader away:
        kafka-python fails the whole request when one partition's does): for
        ``idle_hold_s`` they hold no one (the rule for a caught-up partition before its end
        reads, s40) and no read of them is wanted (:meth:`checks_wanted`), so live records
        go out at once instead of waiting ``idle_hold_s`` each with their partition paused
        (a review, s40: ~1,200 of 15,900 records handed out in 15 s at 1,000/s)."""
        now = self._clock()
        for key in keys:
            self._unreadable[key] = now

    def now(self) -> float:
        """The aligner's clock (monotonic seconds), the one :attr:`LogPosition.checked_at`
        is read on."""
        return self._clock()

    def buffered(self) -> set[K]:
        """Partitions with records buffered (the source pauses them)."""
        return {key for key, buffer in self._buffers.items() if buffer}

    def first_held(self) -> dict[K, Any]:
        """The first record buffered of each partition that has some (``{key: record}``)."""
        return {key: buffer[0][1] for key, buffer in self._buffers.items() if buffer}

    def buffered_count(self) -> int:
        """Records buffered, all partitions."""
        return sum(map(len, self._buffers.values()))

    def flush(self, key: K) -> list[Any]:
        """Hand out every record buffered for ``key`` at once, in log order (the source
        skipped an undecodable batch of that partition: its records, later in the log, must
        not go out before these)."""
        buffer = self._buffers.pop(key, None)
        if not buffer:
            return []
        stamps = [stamp for stamp, _, _ in buffer if stamp is not None]
        if stamps:
            self._handed[key] = max(self._handed.get(key, -math.inf), *stamps)
        self._last_gave[key] = self._clock()
        return [record for _, record, _ in buffer]

    def release(self, keys: Iterable[K]) -> dict[K, list[Any]]:
        """Drop the buffers and the state of the partitions ``keys`` (revoked: the source
        reads them again from their first record not handed out, see
        :class:`~consumers.kafka_source.KafkaSource`) and return the records each held, in
        log order (``{key: records}``, partitions that held none left out)."""
        released: dict[K, list[Any]] = {}
        for key in keys:
            buffer = self._buffers.pop(key, None)
            self._handed.pop(key, None)
            self._last_gave.pop(key, None)
            self._unreadable.pop(key, None)
            if buffer:
                released[key] = [record for _, record, _ in buffer]
        return released

    def clear(self) -> None:
        """Drop every buffer and what was handed out (the consumer left its group: every
        partition is read again from its committed offset, which no held record is below)."""
        self._buffers.clear()
        self._handed.clear()
        self._last_gave.clear()
        self._unreadable.clear()

    def marks(self, logs: Mapping[K, LogPosition]) -> dict[K, float]:
        """The event time each assigned partition (``logs``' keys) that still has something
        to give holds the others to (see the module docstring); a partition that holds no
        one, or only records fetched after its last end check (:meth:`unchecked`), is left
        out."""
        now = self._clock()
        marks: dict[K, float] = {}
        for key, log_position in logs.items():
            buffer = self._buffers.get(key)
            if buffer:
                head = buffer[0][0]
                marks[key] = head if head is not None else self._handed.get(key, -math.inf)
                continue
            more = log_position.has_more
            if more is False or (more is None and key in self._handed):
                self._last_gave[key] = now  # nothing to give: idle counts once it has
                continue
            # records left, or not fetched yet (holds only until first read)
            since = self._last_gave.setdefault(key, now)
            if now - since < self.idle_hold_s:  # else: gave nothing for a while, holds no one
                marks[key] = self._handed.get(key, -math.inf)
        return marks

    def unchecked(self, logs: Mapping[K, LogPosition]) -> dict[K, tuple[float, float]]:
        """The caught-up partitions of ``logs`` (nothing buffered, nothing left to read as
        far as the consumer knows): ``{key: (its mark, when its end was last checked)}`` —
        the newest event time handed out of it (``-inf`` when none was) and
        :attr:`LogPosition.checked_at` (``-inf`` when never). Such a partition holds the
        others' records fetched after that check (and less than ``idle_hold_s`` ago) to its
        mark (see the module docstring). One whose end read failed less than
        ``idle_hold_s`` ago (:meth:`end_unreadable`) is left out."""
        found: dict[K, tuple[float, float]] = {}
        now = self._clock()
        for key, log_position in logs.items():
            if self._buffers.get(key):
                continue
            failed = self._unreadable.get(key)
            if failed is not None and now - failed < self.idle_hold_s:
                continue
            more = log_position.has_more
            if more is False or (more is None and key in self._handed):
                checked = log_position.checked_at
                found[key] = (self._handed.get(key, -math.inf),
                              -math.inf if checked is None else checked)  # fmt: skip
        return found

    def frontier(self, logs: Mapping[K, LogPosition]) -> float:
        """The least of :meth:`marks`; ``inf`` when no partition holds the others."""
        return min(self.marks(logs).values(), default=math.inf)

    def checks_wanted(self, logs: Mapping[K, LogPosition]) -> set[K]:
        """The caught-up partitions (:meth:`unchecked`) whose end, read now, could let
        buffered records go: each holds back a record (of another partition) that the
        partitions with a mark would let go. Empty when none does (the common case: every
        partition's records lie within ``max_skew_s`` of the others')."""
        unchecked = self.unchecked(logs)
        if not unchecked or not any(self._buffers.values()):
            return set()
        wanted: set[K] = set()
        for _, _, blockers in self._prefixes(logs, unchecked):
            wanted |= blockers
        return wanted

    def held_for_reads(self, logs: Mapping[K, LogPosition]) -> set[K]:
        """The partitions whose next buffered record only a caught-up partition's pending
        end read holds back (:meth:`checks_wanted`'s blockers), not a partition with a mark:
        the source keeps fetching them (not paused), as the read comes within
        the source's interval (0.05 s) plus a round trip (or fails, see :meth:`end_unreadable`),
        and ``idle_hold_s`` at most. Paused, the fetch kafka-python keeps in flight for the
        quiet partitions alone waited its ``fetch_max_wait_ms`` (500 ms) at the broker
        before they were fetched again (a review, s40: p99 hand-out latency 0.9-1.8 s with
        one quiet partition, 0.55 s before the end reads)."""
        unchecked = self.unchecked(logs)
        if not unchecked or not any(self._buffers.values()):
            return set()
        return {key for key, _, blockers in self._prefixes(logs, unchecked) if blockers}

    def _prefixes(
        self, logs: Mapping[K, LogPosition], unchecked: Mapping[K, tuple[float, float]]
    ) -> Iterable[tuple[K, list[tuple[float, Any]], set[K]]]:
        """Per partition with records buffered: ``(key, the records that may go now as
        (event time, record), the caught-up partitions that hold back the next one)`` (the
        last empty when a partition with a mark holds it, or none does)."""
        marks = self.marks(logs)
        least = heapq.nsmallest(2, ((mark, i) for i, mark in enumerate(marks.values())))
        keys = list(marks)
        recent = self._clock() - self.idle_hold_s  # records fetched before: not held so
        for key, buffer in self._buffers.items():
            if not buffer:
                continue
            others = [mark for mark, i in least if keys[i] != key]
            limit = (others[0] if others else math.inf) + self.max_skew_s
            # caught-up partitions: (checked at, mark), the earliest checked first
            tentative = sorted((checked, mark, other) for other, (mark, checked)
                               in unchecked.items() if other != key)  # fmt: skip
            last = self._handed.get(key, -math.inf)
            out: list[tuple[float, Any]] = []
            blockers: set[K] = set()
            seen, floor = math.nan, math.inf  # floor: least mark of those checked before seen
            for stamp, record, fetched in buffer:
                at = last if stamp is None else stamp
                if at > limit:
                    break
                if tentative and fetched > recent:
                    if fetched != seen:  # the caught-up partitions checked before its fetch
                        seen = fetched
                        floor = min((mark for checked, mark, _ in tentative if checked < fetched),
                                    default=math.inf)  # fmt: skip
                    if at > floor + self.max_skew_s:
                        bound = at - self.max_skew_s
                        blockers = {other for checked, mark, other in tentative
                                    if checked < fetched and mark < bound}  # fmt: skip
                        break
                out.append((at, record))
                last = max(last, at)
            yield key, out, blockers

    def take(self, logs: Mapping[K, LogPosition], max_records: int) -> list[tuple[K, list[Any]]]:
        """Hand out up to ``max_records`` buffered records of the partitions in ``logs``
        (the assignment: buffers of others are dropped): of each partition, the records
        whose event time is at most ``max_skew_s`` past the least mark of the *other*
        partitions (:meth:`marks`, and for a record fetched after a caught-up partition's
        last end check, less than ``idle_hold_s`` ago, that partition's mark too, see
        :meth:`unchecked`; a partition alone is not held), in log order, the earliest first
        when more are eligible. All records of a poll then lie within twice ``max_skew_s``
        of the least mark. ``[(key, records)]``, one entry per partition, ordered by the
        event time of its first record."""
        for key in [k for k in self._buffers if k not in logs]:
            del self._buffers[key]
            self._handed.pop(key, None)
        eligible: dict[K, list[tuple[float, Any]]] = {}
        held = False
        for key, out, _ in self._prefixes(logs, self.unchecked(logs)):
            held = held or len(out) < len(self._buffers[key])
            if out:
                eligible[key] = out
        self.held_polls += held
        if sum(map(len, eligible.values())) > max_records:
            eligible = self._earliest(eligible, max_records)
        taken: list[tuple[float, K, list[Any]]] = []
        for key, out in eligible.items():
            buffer = self._buffers[key]
            for _ in range(len(out)):
                buffer.popleft()
            stamps = [at for at, _ in out]
            self._handed[key] = max(self._handed.get(key, -math.inf), max(stamps))
            if not buffer:  # emptied: idle counts from now (it was paused until now)
                self._last_gave[key] = self._clock()
            taken.append((stamps[0], key, [record for _, record in out]))
        taken.sort(key=lambda item: item[0])
        return [(key, records) for _, key, records in taken]

    @staticmethod
    def _earliest(
        eligible: dict[K, list[tuple[float, Any]]], max_records: int
    ) -> dict[K, list[tuple[float, Any]]]:
        """The first ``max_records`` of ``eligible``'s records in event-time order (each
        partition's kept a prefix: a record goes only after the ones before it)."""
        counts = dict.fromkeys(eligible, 0)
        # each partition's running maximum keeps its sequence sorted for the merge
        streams: list[Iterable[tuple[float, int, K]]] = []
        for rank, (key, out) in enumerate(eligible.items()):
            streams.append(_running_max(out, rank, key))
        for _, _, key in heapq.merge(*streams):
            counts[key] += 1
            max_records -= 1
            if max_records == 0:
                break
        return {key: out[: counts[key]] for key, out in eligible.items() if counts[key]}

    def status(self) -> dict[str, Any]:
        """JSON-able: ``{"max_skew_s", "buffered_records", "buffered_partitions",
        "held_polls"}``. Safe from another thread than the one feeding the aligner (the
        source's status is read by the API): it reads a copy of the buffers (``list`` of a
        dict's values is one step under the GIL), never iterates the dict itself."""
        buffers = list(self._buffers.values())
        return {
            "max_skew_s": self.max_skew_s,
            "buffered_records": sum(map(len, buffers)),
            "buffered_partitions": sum(1 for buffer in buffers if buffer),
            "held_polls": self.held_polls,
        }


def lone_as_untimed(times: Sequence[float | None], max_skew_s: float) -> list[float | None]:
    """``times`` (event times of a fetch's records, log order; ``None``: none) with each lone
    outlier's replaced by ``None``: a time more than ``max_skew_s`` after more than half of
    the times among the next :data:`LONE_FOLLOWERS` records (those that have one; a record
    with none after it is kept). See the module docstring.

    >>> lone_as_untimed([0.0, 7200.0, 60.0, 120.0, 180.0, 240.0], 100.0)
    [0.0, None, 60.0, 120.0, 180.0, 240.0]
    >>> lone_as_untimed([0.0, 7200.0, 7260.0, 7320.0], 100.0)  # a jump: kept
    [0.0, 7200.0, 7260.0, 7320.0]
    >>> lone_as_untimed([0.0, 7200.0, 60.0, 7260.0], 100.0)  # 1 of 2 before it: kept
    [0.0, 7200.0, 60.0, 7260.0]
    """
    out = list(times)
    for i, stamp in enumerate(times):
        if stamp is None:
            continue
        after = [t for t in times[i + 1 : i + 1 + LONE_FOLLOWERS] if t is not None]
        if after and 2 * sum(t < stamp - max_skew_s for t in after) > len(after):
            out[i] = None
    return out


def _running_max(out: list[tuple[float, Any]], rank: int, key: K) -> Iterable[tuple[float, int, K]]:
    """``(running maximum of the event times, rank, key)`` per record of ``out``."""
    top = -math.inf
    for at, _ in out:
        top = max(top, at)
        yield top, rank, key
