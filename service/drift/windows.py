"""Event-time windows of category counts: per-bucket counts in a bounded ring.

Events are ``(category, timestamp)`` pairs; timestamps are Unix seconds of EVENT time (when the
question was asked), never arrival time. Each accepted event is counted in the bucket
``floor(timestamp / bucket_s)``. The *watermark* is the largest accepted timestamp so far; a
window of ``window_s`` ending at the watermark is the sum of the ``ceil(window_s / bucket_s)``
buckets up to and including the watermark's bucket (so it slides one bucket at a time).

Arrival rules (counts always balance: ``accepted + late + future + ahead == events seen``):

* out of order is fine: an event older than the watermark is counted in its own bucket;
* late: an event older than ``watermark − allowed_lateness_s`` (the watermark as it was when
  the event arrived) is counted under ``late`` and NOT added; it does not move the watermark.
  When the caller says which *stream* each event was read from (a Kafka ``topic[partition]``),
  an event is late against its own stream's watermark instead (the largest timestamp accepted
  from that stream so far; a stream's first event is never late by it), or when it is older
  than the history kept (``watermark − retention_s``): a consumer catching up on a backlog of
  several partitions reads them one stretch after another, hours apart in event time, and
  against one watermark most of the backlog would be late (a trial's 4-partition backlog:
  72 %) though every partition is in order. The window still ends at the (one) watermark;
  an event of a stream that is behind is added to its own, older bucket;
* future: when the caller passes ``now`` (wall clock, seconds), an event newer than
  ``now + future_tolerance_s`` is counted under ``future`` and REJECTED, not clamped — one bad
  clock must not drag the watermark ahead and turn every later event into a late one.
  Without ``now`` event times are trusted.
* ahead: an event more than ``max_ahead_s`` ahead of the watermark is HELD and counted under
  ``ahead``; it does not move the watermark, so one outlier (a clock days ahead yet still in
  the wall clock's past, e.g. in a replay) cannot turn every later event into a late one.
  Traffic really did jump (e.g. it resumed after a gap) once held events (this one included)
  lying within ``max_ahead_s`` of each other are at least ``ahead_confirm`` AND at least as
  many as the *in-time* events (neither held when they came nor future; late ones included)
  that arrived since the oldest of them — all of them, not a recent run (a chance run of a
  steady skew would do): an old held event near a later real jump delays it until the held
  outnumber the in-time events since it, or until :data:`MAX_HELD` newer ones push it out
  (pushed out, it stays counted as ``ahead``, never in a bucket; the held events of the jump
  are released when it is confirmed). After a real jump
  nothing arrives in time between the held events (the traffic left the old time); a
  skewed producer's events come interleaved with the others' (trial 14: 10 events stamped
  27 days ahead, one every 5 lines, 5 within ``max_ahead_s`` of one another confirmed a
  "jump" and 2,398 of 3,011 events were late), so they stay held. Consecutive skewed
  events (``ahead_confirm`` of them in a row, none in time between) cannot be told from a
  jump and still move the watermark (the ``starved`` report then says so), and nothing
  undoes a confirmed jump yet. The rule is
  one for all streams: a partition's events that jumped are confirmed once they are as
  many as the in-time events of every stream read since (a consumer reads one partition's
  stretch at a time, so they usually come in a row). The confirmed events are released — added
  to their buckets, moved from ``ahead`` to ``accepted`` — and the watermark moves to the
  newest of them. Held events are never released otherwise (the watermark catching up with
  one leaves it counted as ``ahead``). At most :data:`MAX_HELD` are held; the oldest goes.
  Before the first watermark every event is ahead of it: the first events are held until
  ``ahead_confirm`` of them form a run in which each is within ``max_ahead_s`` of the next
  (sparse traffic of a few events per ``max_ahead_s`` starts it too, as it keeps it moving),
  which releases them and starts the watermark — so a first event stamped days off stays
  held instead of becoming the watermark that makes every later event late (with
  ``ahead_confirm`` 1 the first event starts it, as before; no event is in time before the
  watermark starts, so the count of in-time events plays no part there). Each held event
  keeps how many in-time events arrived after it (snapshots keep it; a snapshot written
  before session 32 has none, so those held then count from the restore). Decisions depend
  only on the events and their order, never on the wall clock.
* gap rule (``ahead_gap_factor`` > 0, default 4): a skew under ``max_ahead_s`` (a trial's
  one event 2 h ahead, within the default 6 h) would still move the watermark, and the ~60
  events after it, in true order, were late. So once :data:`GAP_EVENTS` in-time events are
  known, an event is held (counted ``ahead``) as well when it is more than
  ``ahead_gap_factor`` times the largest advance of the watermark over the last
  :data:`GAP_EVENTS` in-time events ahead of the watermark, and more than
  ``allowed_lateness_s`` (a smaller advance makes no event late): :func:`gap_limit`. Such a
  held event confirms a jump as above with the held events within ``max_ahead_s`` of it,
  leaving out the *lone* ones — those after which ``ahead_confirm`` or more in-time events
  came (the traffic went on in the old time): a real jump (traffic resumed after a pause,
  a backlog) is confirmed by ``ahead_confirm`` events in a row and released, nothing late
  and nothing lost; a lone outlier stays held, counted under ``ahead``, and is forgotten
  once the watermark passes it (never added, never late). One the watermark passes (an
  in-time event or a confirmed jump beyond it) before ``ahead_confirm`` in-time events came
  after it was not refuted: it is released then, into the bucket of its own time, as it was
  accepted without the rule (a quiet team's last events of an evening, held over a night
  longer than ``max_ahead_s``, passed by the morning's confirmed jump; session 42).
  Freshness: after a pause over that limit the watermark waits for ``ahead_confirm`` − 1
  more events (sparse traffic's largest recent pause is long, so it seldom holds; a pause
  longer than ``max_ahead_s`` waited so before). The history is the watermark after each
  in-time event (snapshots keep it; one written before session 41 has none, and the rule
  waits for :data:`GAP_EVENTS` events after the restore).

Memory is bounded: ``ceil(retention_s / bucket_s) + 1`` buckets × at most
``max_categories + 1`` columns (categories beyond ``max_categories`` are counted as
:data:`OTHER`).

>>> w = CategoryWindow(window_s=120, bucket_s=60, allowed_lateness_s=60)
>>> _ = w.update_many(["en", "hi", "en"], [0.0, 61.0, 125.0])
>>> w.current()  # buckets 1 and 2
{'en': 1, 'hi': 1}
>>> w.update("en", 1.0).late
1
>>> w = CategoryWindow(120, 60, allowed_lateness_s=60, max_ahead_s=600, ahead_confirm=2)
>>> _ = w.update_many(["en", "xx", "hi"], [0.0, 9000.0, 61.0])  # 9000: held, ahead
>>> w.current(), w.ahead, w.watermark
({'en': 1, 'hi': 1}, 1, 61.0)
>>> w.update_many(["hi"], [9100.0])  # a second one near it confirms the jump
WindowUpdate(accepted=2, late=0, future=0, ahead=-1)
>>> w.current(), w.ahead, w.watermark
({'hi': 1, 'xx': 1}, 0, 9100.0)
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise
from typing import Any, Literal, NamedTuple, Self, cast

import numpy as np
from numpy.typing import ArrayLike, NDArray

__all__ = [
    "OTHER",
    "CategoryWindow",
    "ComparisonWindows",
    "Now",
    "OnTick",
    "Watermarks",
    "WindowConfig",
    "WindowUpdate",
    "running_watermark",
]

Now = float | NDArray[np.float64] | None
"""A wall-clock reading (Unix seconds) for a whole update, one per event, or ``None``."""
Watermarks = tuple[
    NDArray[np.float64], NDArray[np.bool_], NDArray[np.bool_], list[int], list[int], list[bool]
]
"""What :func:`running_watermark` returns: ``(watermark after each event, future mask, ahead
mask, released, held, held by the gap rule alone: one flag per held)``."""
OnTick = Callable[[int], None]
"""Called at each test of :meth:`ComparisonWindows.ingest` with after how many of its events
the test runs (``0`` from :meth:`ComparisonWindows.flush`, which adds none)."""

OTHER = "__other__"
"""Column that absorbs categories beyond ``max_categories``."""

_EMPTY = np.iinfo(np.int64).min
_NONE: NDArray[np.float64] = np.zeros(0, dtype=np.float64)
_NO_MASK: NDArray[np.bool_] = np.zeros(0, dtype=np.bool_)
SNAPSHOT_VERSION = 1
MAX_HELD = 64
"""Events held ahead of the watermark at most (the oldest is dropped, staying ``ahead``)."""
SMALL_UPDATE = 16
"""Events of one update at most that :meth:`CategoryWindow.update_many` adds in plain Python."""
_MAX_SHIFT = 64
"""Buckets a span's running sums move by at most before they are summed afresh instead."""
MAX_STREAMS = 4096
"""Streams (e.g. Kafka partitions) whose own watermarks are kept at most."""
GAP_EVENTS = 32
"""In-time events whose watermarks the gap rule reads (the last this many; the rule waits
until this many are known, so it is off for a stream's first events)."""


class WindowUpdate(NamedTuple):
    """How many events of one update were accepted, late (dropped), future (rejected) or
    ahead (held); ``ahead`` is negative when held events of earlier updates were released
    (they are then in ``accepted``)."""

    accepted: int
    late: int
    future: int
    ahead: int = 0


def running_watermark(
    timestamps: NDArray[np.float64],
    prior: float | None,
    now: Now = None,
    future_tolerance_s: float = math.inf,
    *,
    max_ahead_s: float = math.inf,
    ahead_confirm: int = 1,
    held: Sequence[float] = (),
    held_since: Sequence[int] = (),
    held_gap: Sequence[bool] = (),
    recent: Sequence[float] = (),
    gap_factor: float = 0.0,
    min_jump_s: float = 0.0,
) -> Watermarks:
    """Return ``(watermark after each event, future mask, ahead mask, released, held,
    held_gap)``.

    ``now``: the wall clock (seconds) for every event, or one reading per event (an array as
    long as ``timestamps``), or ``None`` (event times trusted).
    Future events (``> now + future_tolerance_s``) do not move the watermark; before any
    event the watermark is ``prior`` (``-inf`` when ``None``). ``held`` are the timestamps
    held ahead before this batch (oldest first); an event more than ``max_ahead_s`` ahead of
    the watermark — with no watermark yet, every event — is held (``ahead`` mask) until
    ``ahead_confirm`` held events lie within ``max_ahead_s`` of one another (with no
    watermark: form a run with steps of at most ``max_ahead_s``) and all of them, with this
    one, are at least as many as the in-time events that arrived since the oldest of them
    (:func:`_confirms`; see the module docstring). ``held_since``: for each of ``held``, how
    many in-time events (neither held when they came nor future) arrived after it before this
    batch (missing: 0).
    Gap rule (``gap_factor`` > 0): once ``recent`` and this batch give :data:`GAP_EVENTS`
    in-time events, an event is held as well when it is more than
    ``min(max_ahead_s, max(min_jump_s, gap_factor × g))`` ahead of the watermark, ``g`` the
    largest advance of the watermark over the last :data:`GAP_EVENTS` in-time events
    (``recent``: the watermarks after the in-time events before this batch, oldest first;
    :func:`gap_limit`). Such an event (not more than ``max_ahead_s`` ahead) confirms a jump
    with the held events within ``max_ahead_s`` of it that fewer than ``ahead_confirm`` in-time
    events came after (those that more came after were lone: the traffic went on in the old
    time), under :func:`_confirms`; a lone one stays held, counted ``ahead``. An event held
    by the gap rule alone (within ``max_ahead_s``, when it came, of the watermark it had
    without the rule: the later of the watermark and the newest event held by the gap rule
    alone that fewer than ``ahead_confirm`` in-time events came after; ``held_gap``: whether
    each of ``held`` was, missing: ``False``) is released as soon as
    the watermark passes it (an in-time event or a confirmed jump beyond it) if fewer than
    ``ahead_confirm`` in-time events came after it before the one that passed it: the rule
    only delayed it (a quiet evening's last events held over the night, passed by the
    morning's jump); it is added as it was without the rule, in its own bucket, neither late
    nor ahead. One after which more came is a refuted lone outlier and stays ``ahead``; one
    held beyond ``max_ahead_s`` is forgotten when passed, as before the rule.
    ``released``: indices into ``[*held, *timestamps]`` of the events released by a confirmed
    jump (a released event of this batch is not in the ``ahead`` mask); ``held``: indices
    likewise of the events still held after the batch, oldest first; ``held_gap``: for each
    of those, whether the gap rule alone held it.
    """
    future = timestamps > (now + future_tolerance_s) if now is not None else timestamps > math.inf
    start = -math.inf if prior is None else prior
    moves = np.where(future, -math.inf, timestamps)
    marks = np.maximum.accumulate(np.concatenate([[start], moves]))[1:]
    ahead = np.zeros(len(timestamps), dtype=np.bool_)
    if ahead_confirm <= 1 or not math.isfinite(max_ahead_s):
        return marks, future, ahead, [], [], []
    prev = np.concatenate([[start], marks[:-1]])
    gaps = gap_factor > 0 and min_jump_s < max_ahead_s
    # (nothing held: each event's watermark before it is prev; none is held when none steps
    # past it by more than the least limit the gap rule can set, min_jump_s)
    jumps = ~future & (moves > prev + (min_jump_s if gaps else max_ahead_s))
    if not (held or jumps.any()):
        return marks, future, ahead, [], [], []
    items, pending, released = [*held, *map(float, timestamps)], list(range(len(held))), []
    # in-time events (neither held when they came nor future) before each held one, counted
    # from the batch's start (those held before it: minus those that came after them)
    came = [-int(held_since[k]) if k < len(held_since) else 0 for k in range(len(held))]
    came += [0] * len(timestamps)
    seen, mark = 0, start  # seen: this batch's in-time events so far
    rec = list(recent[-GAP_EVENTS:]) if gaps else []  # watermarks after in-time events
    # held by the gap rule alone (within max_ahead_s when they came): released when passed
    gap = [bool(held_gap[k]) if k < len(held_gap) else False for k in range(len(held))]
    gap += [False] * len(timestamps)
    low = min((items[k] for k in pending if gap[k]), default=math.inf)  # the least of them

    def passed() -> float:
        """Release the gap-held events the watermark has passed that fewer than
        ``ahead_confirm`` in-time events came after; return the least gap-held left."""
        nonlocal pending
        out = [k for k in pending
               if gap[k] and items[k] < mark and seen - came[k] < ahead_confirm]  # fmt: skip
        if out:
            released.extend(out)
            pending = [k for k in pending if k not in out]
        return min((items[k] for k in pending if gap[k] and items[k] >= mark), default=math.inf)

    for i, t in enumerate(map(float, timestamps)):
        limit = max_ahead_s
        if gaps and not future[i] and t > mark + min_jump_s and len(rec) >= GAP_EVENTS:
            limit = gap_limit(rec[-GAP_EVENTS:], gap_factor, min_jump_s, max_ahead_s)
        if not future[i] and t > mark + limit:
            if t <= mark + max_ahead_s:  # (gap rule) lone held events and those the
                # watermark has passed left out: a passed one is dropped from ``pending`` at
                # the batch's end, so counting it here would make the result batch-dependent
                near = [k for k in pending if mark <= items[k] <= t + max_ahead_s
                        and seen - came[k] < ahead_confirm]  # fmt: skip
            elif math.isfinite(mark):
                near = [k for k in pending if abs(items[k] - t) <= max_ahead_s]
            else:  # no watermark yet: the held events linked to t by steps of max_ahead_s
                near = _run(items, pending, t, max_ahead_s)
            if _confirms([seen - came[k] for k in near], ahead_confirm):  # traffic moved
                released += near
                pending = [k for k in pending if k not in near]
                mark = max([t, *(items[k] for k in near)])
                if mark > low:  # (before this event counts: it did not refute them)
                    low = passed()
                seen += 1
                rec.append(mark)
            else:
                ahead[i], came[len(held) + i] = True, seen
                # against the watermark it had without the rule: the newest held by the rule
                # alone and not refuted counts as passed (the rule held a quiet evening, the
                # watermark stayed before it; a night event within max_ahead_s of the evening's
                # last, accepted without the rule, is not beyond max_ahead_s: review s42)
                was = max([mark, *(items[k] for k in pending
                                   if gap[k] and seen - came[k] < ahead_confirm)])  # fmt: skip
                gap[len(held) + i] = t <= was + max_ahead_s
                # those the watermark has passed first (see below): else they would take
                # places from one still held, unlike the same events in other batches
                kept = [k for k in pending if items[k] >= mark]
                pending = [*kept, len(held) + i][-MAX_HELD:]
                low = min((items[k] for k in pending if gap[k]), default=math.inf)
        elif not future[i]:
            mark = max(mark, t)
            if mark > low:  # (before this event counts: it did not refute them)
                low = passed()
            seen += 1
            rec.append(mark)
            if len(rec) > 4 * GAP_EVENTS:
                del rec[:-GAP_EVENTS]
        marks[i] = mark
    for k in released:
        if k >= len(held):
            ahead[k - len(held)] = False
    # a held event the watermark has passed can never be near a later held one (that one
    # is more than max_ahead_s past the watermark): forget it, so that batches after one
    # outlier return to the vectorised path once traffic has caught up with it
    pending = [k for k in pending if items[k] >= mark]
    return marks, future, ahead, released, pending, [gap[k] for k in pending]


def gap_limit(
    recent: Sequence[float], gap_factor: float, min_jump_s: float, max_ahead_s: float
) -> float:
    """How far (seconds) an event may be ahead of the watermark before the gap rule holds it:
    ``min(max_ahead_s, max(min_jump_s, gap_factor × g))``, ``g`` the largest step between
    consecutive values of ``recent`` (the watermark after each of the last in-time events,
    oldest first: non-decreasing; out-of-order events step by 0). The largest step, not a
    typical one: a pause the traffic had among its last events is one it may have again,
    so it is not held (fewer holds, never more).

    >>> gap_limit([0.0, 10.0, 15.0, 15.0, 40.0], 4.0, 60.0, 3600.0)  # 4 × 25 s
    100.0
    >>> gap_limit([0.0, 10.0], 4.0, 60.0, 3600.0), gap_limit([0.0, 5000.0], 4.0, 60.0, 3600.0)
    (60.0, 3600.0)
    """
    step = max((b - a for a, b in pairwise(recent)), default=0.0)
    return min(max_ahead_s, max(min_jump_s, gap_factor * step))


def _confirms(since: Sequence[int], ahead_confirm: int) -> bool:
    """Whether an event held ahead confirms a jump with the held events near it: ``since``
    holds, for each of those (oldest first), the in-time events that arrived after it. It
    does when all of them and this event are at least ``ahead_confirm`` and at least as many
    as the in-time events that arrived since the oldest of them (the module docstring says
    why). All of them, not the best recent run of them: a producer skewing a steady few per
    cent of the traffic makes chance runs of ``ahead_confirm`` held among fewer in-time
    events (a review: 3 % of 20,000 events stamped +27 d confirmed a "jump" in 1 of 5 seeds
    with the run rule), while the whole held set stays a few per cent of what came since.

    >>> _confirms([0, 0], 3), _confirms([0, 0], 4)  # a run of three: the third confirms
    (True, False)
    >>> _confirms([12, 8, 4, 0], 3)  # one in 5 ahead: 5 held < 12 in time since the first
    False
    >>> _confirms([9, 1, 0], 3), _confirms([9] + [0] * 8, 3)  # an old one near: 10 needed
    (False, True)
    """
    return bool(since) and len(since) + 1 >= max(ahead_confirm, since[0])


def _widened(sums: NDArray[np.int64], width: int) -> NDArray[np.int64]:
    """``sums`` with zeros appended up to ``width`` columns (itself when that wide)."""
    if len(sums) >= width:
        return sums
    return np.concatenate([sums, np.zeros(width - len(sums), dtype=np.int64)])


def _part(watermarks: Watermarks, start: int, end: int) -> Watermarks:
    """The watermarks of the events ``start:end`` when none is held or released."""
    marks, future, ahead, _, _, _ = watermarks
    return marks[start:end], future[start:end], ahead[start:end], [], [], []


def _first_in_last_part(rows: list[int], splits: Sequence[int]) -> int:
    """Of ``rows`` (a stream's events in a batch, increasing), the first in the last part of
    the batch they are in (the parts end after ``splits`` events, increasing)."""
    ends_before = bisect_right(splits, rows[-1])  # the parts before the last row's
    part_start = splits[ends_before - 1] if ends_before else 0
    return rows[bisect_left(rows, part_start)]


def _run(items: Sequence[float], pending: Sequence[int], t: float, gap: float) -> list[int]:
    """The indices in ``pending`` whose times ``items[k]`` are linked to ``t`` by steps of at
    most ``gap`` seconds (a run of held events around ``t``, ``t`` itself excluded), in
    ``pending``'s order: what confirms the first events, so traffic of a few events per
    ``max_ahead_s`` starts the watermark as it keeps it moving.

    >>> _run([0.0, 100.0, 9000.0, 250.0], [0, 1, 2, 3], 400.0, 200.0)
    [0, 1, 3]
    """
    linked: set[int] = set()
    for side in (sorted((items[k], k) for k in pending if items[k] <= t)[::-1],
                 sorted((items[k], k) for k in pending if items[k] > t)):  # fmt: skip
        edge = t
        for time, k in side:
            if abs(time - edge) > gap:
                break
            linked.add(k)
            edge = time
    return [k for k in pending if k in linked]


class CategoryWindow:
    """Sliding event-time window of category counts (see the module docstring).

    Args:
        window_s: window length in seconds (> 0; rounded up to whole buckets).
        bucket_s: bucket length in seconds (> 0), e.g. 60 for per-minute buckets.
        allowed_lateness_s: how far behind the watermark an event may be, seconds (≥ 0,
            ≤ retention_s).
        future_tolerance_s: how far ahead of ``now`` an event may be, seconds (≥ 0).
        retention_s: how much history to keep, seconds (≥ window_s; default window_s), e.g.
            2 × window_s to also read the previous window.
        max_categories: distinct categories kept before the rest go to :data:`OTHER` (≥ 1).
        max_ahead_s: how far ahead of the watermark an event may be before it is held,
            seconds (> 0; default: no limit).
        ahead_confirm: held events within ``max_ahead_s`` of one another that confirm a jump
            (≥ 1; 1: never hold), if they are also at least as many as the in-time events
            since the first of them (see the module docstring).
        ahead_gap_factor: the gap rule (see the module docstring): an event more than this
            many times the largest watermark advance over the last :data:`GAP_EVENTS`
            in-time events (and more than ``allowed_lateness_s``) ahead is held too (≥ 0;
            0: off; default 4). Only with a finite ``max_ahead_s`` and ``ahead_confirm`` > 1.

    Raises:
        ValueError: an argument is out of range.
    """

    def __init__(
        self,
        window_s: float = 3600.0,
        bucket_s: float = 60.0,
        *,
        allowed_lateness_s: float = 300.0,
        future_tolerance_s: float = 60.0,
        retention_s: float | None = None,
        max_categories: int = 500,
        max_ahead_s: float = math.inf,
        ahead_confirm: int = 1,
        ahead_gap_factor: float = 4.0,
    ) -> None:
        retention = window_s if retention_s is None else retention_s
        if not (bucket_s > 0 and window_s > 0 and math.isfinite(window_s + bucket_s)):
            raise ValueError("window_s and bucket_s must be finite and > 0")
        if not (math.isfinite(retention) and retention >= window_s):
            raise ValueError(f"retention_s must be finite and >= window_s, got {retention}")
        if not 0 <= allowed_lateness_s <= retention:
            raise ValueError("allowed_lateness_s must be in [0, retention_s]")
        if future_tolerance_s < 0 or max_categories < 1:
            raise ValueError("future_tolerance_s must be >= 0 and max_categories >= 1")
        if not (max_ahead_s > 0 and ahead_confirm >= 1):
            raise ValueError("max_ahead_s must be > 0 and ahead_confirm >= 1")
        if not (ahead_gap_factor >= 0 and math.isfinite(ahead_gap_factor)):
            raise ValueError(f"ahead_gap_factor must be finite and >= 0, got {ahead_gap_factor}")
        self.max_ahead_s, self.ahead_confirm = float(max_ahead_s), int(ahead_confirm)
        self.ahead_gap_factor = float(ahead_gap_factor)
        self.window_s, self.bucket_s = float(window_s), float(bucket_s)
        self.allowed_lateness_s = float(allowed_lateness_s)
        self.future_tolerance_s = float(future_tolerance_s)
        self.retention_s, self.max_categories = float(retention), max_categories
        self._n_slots = math.ceil(retention / bucket_s) + 1
        self._reset()

    def _reset(self) -> None:
        self._names: list[str] = []
        self._codes: dict[str, int] = {}
        self._counts = np.zeros((self._n_slots, 8), dtype=np.int64)
        self._slot_bucket = np.full(self._n_slots, _EMPTY, dtype=np.int64)
        self.watermark: float | None = None
        self.accepted = self.late = self.future = self.ahead = 0
        self._held: list[tuple[float, str]] = []  # (timestamp, category) held ahead
        #: for each held event, the in-time events (neither held when they came nor future)
        #: that arrived after it: a jump is confirmed only when the traffic really moved
        self._since: list[int] = []
        #: for each held event, whether the gap rule alone held it (it came within
        #: max_ahead_s of the watermark): released when the watermark passes it, if unrefuted
        self._gap: list[bool] = []
        #: the watermark after each of the last GAP_EVENTS in-time events (the gap rule's)
        self._recent: list[float] = []
        #: running sums of the spans :meth:`counts` read, kept up to date as events are added
        #: (:meth:`_sum`): ``(buckets, buckets before the watermark's) -> [first, last, sums]``
        self._spans: dict[tuple[int, int], list[Any]] = {}
        self._streams: dict[str, float] = {}  # stream -> its watermark (streams given only)
        #: the timestamps the last update added (to the windows), for ComparisonWindows' re-test
        self.last_accepted: NDArray[np.float64] = _NONE
        #: their categories, in the same order (for a frozen baseline's span)
        self.last_accepted_categories: list[str] = []
        #: (streams only) the events of the last update counted late only because they were
        #: older than the history kept (not behind their own stream), and their categories: a
        #: frozen baseline's span takes them still (a partition read hours after another)
        self.last_too_old: NDArray[np.float64] = _NONE
        self.last_too_old_categories: list[str] = []
        #: which events of the last update were counted late / future (masks over its events)
        self.last_late: NDArray[np.bool_] = _NO_MASK
        self.last_future: NDArray[np.bool_] = _NO_MASK
        #: which events of the last update were held ahead when they came (released later in
        #: the same update or not: the same events whatever the batching)
        self.last_arrived_ahead: NDArray[np.bool_] = _NO_MASK
        #: which events of the last update were added to the buckets (in their order, before
        #: the released ones), the earlier-held events it released ``(timestamp, category)``
        #: (added after them), and (streams only) which of its events were counted late only
        #: for being older than the history kept (:attr:`last_too_old`): what a detector
        #: keeping other per-event data beside the counts (:mod:`service.drift.terms`) follows
        self.last_ok: NDArray[np.bool_] = _NO_MASK
        self.last_released: list[tuple[float, str]] = []
        self.last_too_old_mask: NDArray[np.bool_] = _NO_MASK

    @property
    def held(self) -> list[tuple[float, str]]:
        """The events held ahead of the watermark, ``(timestamp, category)``, oldest first."""
        return list(self._held)

    @property
    def held_since(self) -> list[int]:
        """For each of :attr:`held`, how many in-time events (neither held when they came nor
        future) arrived after it (what :func:`running_watermark` weighs a jump against)."""
        return list(self._since)

    @property
    def held_gap(self) -> list[bool]:
        """For each of :attr:`held`, whether the gap rule alone held it (it came within
        ``max_ahead_s`` of the watermark): such an event is added when the watermark passes
        it, unless ``ahead_confirm`` in-time events came after it first (see
        :func:`running_watermark`)."""
        return list(self._gap)

    def _code(self, category: str) -> int:
        code = self._codes.get(category)
        if code is None:
            name = category if len(self._names) < self.max_categories else OTHER
            code = self._codes.get(name)
            if code is None:
                code = self._codes[name] = len(self._names)
                self._names.append(name)
                if code >= self._counts.shape[1]:
                    grown = np.zeros((self._n_slots, 2 * self._counts.shape[1]), np.int64)
                    grown[:, : self._counts.shape[1]] = self._counts
                    self._counts = grown
            self._codes[category] = code
        return code

    def watermarks(self, timestamps: NDArray[np.float64], now: Now) -> Watermarks:
        """What :func:`running_watermark` gives for ``timestamps`` (and ``now``) from this
        window's present state (its watermark, held events and the gap rule's history)."""
        return running_watermark(
            timestamps, self.watermark, now, self.future_tolerance_s,
            max_ahead_s=self.max_ahead_s, ahead_confirm=self.ahead_confirm,
            held=[t for t, _ in self._held], held_since=self._since, held_gap=self._gap,
            recent=self._recent,
            gap_factor=self.ahead_gap_factor, min_jump_s=self.allowed_lateness_s,
        )  # fmt: skip

    def _remember(self, marks: NDArray[np.float64], in_time: NDArray[np.bool_]) -> None:
        """Keep the watermark after each in-time event (``in_time``: neither future nor held
        when it came) for the gap rule: the last :data:`GAP_EVENTS`."""
        if self.ahead_gap_factor > 0:
            taken = marks[in_time] if not in_time.all() else marks
            if len(taken) >= GAP_EVENTS:
                self._recent = taken[-GAP_EVENTS:].tolist()
            elif len(taken):
                self._recent = [*self._recent, *taken.tolist()][-GAP_EVENTS:]

    def update(self, category: str, timestamp: float, now: Now = None) -> WindowUpdate:
        """Add one event; see :meth:`update_many`."""
        return self.update_many([category], [timestamp], now)

    def update_many(
        self,
        categories: Sequence[str],
        timestamps: ArrayLike,
        now: Now = None,
        streams: Sequence[str] | None = None,
        *,
        watermarks: Watermarks | None = None,
        splits: Sequence[int] = (),
    ) -> WindowUpdate:
        """Add a micro-batch: ``categories[i]`` happened at ``timestamps[i]`` (Unix seconds),
        read from stream ``streams[i]`` (e.g. a Kafka ``topic[partition]``; ``None``: one
        stream, the whole batch's). Lateness is judged per stream (see the module docstring).
        ``now``: the wall clock, one reading or one per event (:func:`running_watermark`).
        ``watermarks``: what :func:`running_watermark` gives for these timestamps and ``now``
        from this window's state as it is (:meth:`ComparisonWindows.ingest` has it), so it
        is not computed again; ``None``: computed here. ``splits`` (increasing, inside the
        batch; with ``streams``): where the batch stands for several updates (after how many
        events each but the last ends): the streams are then remembered in the order those
        updates would leave them (:meth:`_stream_marks`); the caller makes sure no stream
        would be forgotten (:meth:`could_forget`).

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        ts = np.asarray(timestamps, dtype=np.float64).reshape(-1)
        if (
            streams is None and watermarks is not None and 0 < len(ts) <= SMALL_UPDATE
            and not (self._held or watermarks[3] or watermarks[4])
        ):  # fmt: skip
            return self._update_small(categories, ts, watermarks)
        if len(categories) != len(ts) or not np.all(np.isfinite(ts)):
            raise ValueError("need one finite timestamp per category")
        if streams is not None and len(streams) != len(ts):
            raise ValueError("need one stream per category")
        if len(ts) == 0:
            self.last_accepted, self.last_accepted_categories = _NONE, []
            self.last_too_old, self.last_too_old_categories = _NONE, []
            self.last_late, self.last_future = _NO_MASK, _NO_MASK
            self.last_ok, self.last_released, self.last_too_old_mask = _NO_MASK, [], _NO_MASK
            self.last_arrived_ahead = _NO_MASK
            return WindowUpdate(0, 0, 0, 0)
        held_ts = [t for t, _ in self._held]
        old_ts, old_categories = _NONE, []
        too_old_mask: NDArray[np.bool_] | None = None
        if watermarks is None:
            watermarks = self.watermarks(ts, now)
        marks, future, ahead, released, pending, pending_gap = watermarks
        before = np.concatenate([[-math.inf if self.watermark is None else self.watermark], marks])
        # an event held when it came, even if released later in this batch (as one released
        # in a later batch): results do not depend on where batches are split
        arrived_ahead = ahead
        if released or pending:
            arrived_ahead = ahead.copy()
            arrived_ahead[[k - len(held_ts) for k in released if k >= len(held_ts)]] = True
        if streams is None:
            late = ~future & ~ahead & (ts < before[:-1] - self.allowed_lateness_s)
        else:  # behind its own stream's watermark, or older than the history kept
            # an event held when it came moves no stream's watermark
            moves = np.where(future | arrived_ahead, -math.inf, ts)
            behind_own = ts < self._stream_marks(streams, moves, splits) - self.allowed_lateness_s
            too_old = ~future & ~ahead & ~behind_own & (ts < before[:-1] - self.retention_s)
            late = (~future & ~ahead & behind_own) | too_old
            if too_old.any():
                too_old_mask = too_old
                old_ts = ts[too_old]
                old_categories = [c for c, k in zip(categories, too_old, strict=True) if k]
        ok = ~future & ~late & ~ahead
        back: list[tuple[float, str]] = []
        if released or pending:  # (else, the common case, nothing is or was held)
            items = [*self._held, *zip(ts.tolist(), categories, strict=True)]
            back = [items[k] for k in released if k < len(held_ts)]  # released from earlier
            self._held = [items[k] for k in pending]
            # in-time events after each still held: this batch's after it (and, for one held
            # before it, all of this batch's on top of those counted before)
            after = np.cumsum((~future & ~arrived_ahead)[::-1])[::-1].tolist() + [0]
            self._since = [self._since[k] + after[0] if k < len(held_ts)
                           else after[k - len(held_ts) + 1] for k in pending]  # fmt: skip
            # held by the gap rule alone (running_watermark decides: within max_ahead_s of the
            # watermark it had without the rule when it came)
            self._gap = list(pending_gap)
        else:
            self._held, self._since, self._gap = [], [], []
        self.last_ok, self.last_released = ok, back
        self.last_too_old_mask = too_old_mask if too_old_mask is not None else _NO_MASK
        if ok.any() or back:
            self.watermark = float(marks[-1])
            kept = categories if ok.all() else [c for c, k in zip(categories, ok, strict=True) if k]
            kept = [*kept, *(c for _, c in back)]
            known = self._codes.get
            found = list(map(known, kept))  # categories seen before: one dict look-up each
            if None in found:
                found = [self._code(c) for c in kept]
            codes = np.array(found, dtype=np.int64)
            stamps = np.concatenate([ts[ok], np.array([t for t, _ in back], dtype=np.float64)])
            self._add(np.floor(stamps / self.bucket_s).astype(np.int64), codes)
            self.last_accepted, self.last_accepted_categories = stamps, kept
        else:
            self.last_accepted, self.last_accepted_categories = _NONE, []
        self.last_too_old, self.last_too_old_categories = old_ts, old_categories
        self.last_late, self.last_future = late, future
        self.last_arrived_ahead = arrived_ahead
        self._remember(marks, ~future & ~arrived_ahead)
        n_ahead = int(ahead.sum()) - len(back)
        result = WindowUpdate(
            int(ok.sum()) + len(back), int(late.sum()), int(future.sum()), n_ahead
        )
        self.accepted += result.accepted
        self.late += result.late
        self.future += result.future
        self.ahead += result.ahead
        return result

    def count_ahead(self, n: int) -> None:
        """Add ``n`` to ``ahead`` for events another window this one follows holds (``n`` > 0:
        newly held there; < 0: released there, and added here as they come): the
        known-question windows follow the ``language`` window's decisions."""
        self.ahead += int(n)

    def release_held(self) -> WindowUpdate:
        """The input ended (a replay's end): add the events the gap rule holds that no later
        event refuted, as if they had confirmed their jump; return what changed (``accepted``
        added, ``ahead`` negative). Released: each event held by the gap rule alone (it came
        within ``max_ahead_s`` of the watermark: :attr:`held_gap`) after which fewer than
        ``ahead_confirm`` in-time events came (a lone outlier, refuted by the traffic that
        went on, stays held and counted ``ahead``). Those that came more than ``max_ahead_s``
        ahead, or with no watermark yet, stay held as before session 41.

        Without it, a log that ends fewer than ``ahead_confirm`` events after a pause longer
        than the gap limit left those events held (100 events 60 s apart, a 1 h pause, 3 more:
        3 ahead; 103 accepted before the rule). ``last_*`` then describe the release: no
        event of an update (empty masks), ``last_released`` and ``last_accepted`` the events
        added. Not for a stream that goes on (serve): a later event may still refute them.
        """
        empty = WindowUpdate(0, 0, 0, 0)
        if self.watermark is None or not self._held:
            return empty
        mark = self.watermark
        out = [k for k in range(len(self._held))
               if self._gap[k] and self._since[k] < self.ahead_confirm]  # fmt: skip
        if not out:
            return empty
        back = [self._held[k] for k in out]
        self._held = [h for k, h in enumerate(self._held) if k not in out]
        self._since = [n for k, n in enumerate(self._since) if k not in out]
        self._gap = [g for k, g in enumerate(self._gap) if k not in out]
        stamps = np.array([t for t, _ in back], dtype=np.float64)
        kept = [c for _, c in back]
        self.watermark = max(mark, float(stamps.max()))
        if self.ahead_gap_factor > 0:
            self._recent = [*self._recent, *np.maximum.accumulate(
                np.concatenate([[mark], stamps]))[1:].tolist()][-GAP_EVENTS:]  # fmt: skip
        codes = np.array([self._code(c) for c in kept], dtype=np.int64)
        self._add(np.floor(stamps / self.bucket_s).astype(np.int64), codes)
        self.last_accepted, self.last_accepted_categories = stamps, kept
        self.last_too_old, self.last_too_old_categories = _NONE, []
        self.last_late, self.last_future = _NO_MASK, _NO_MASK
        self.last_ok, self.last_released, self.last_too_old_mask = _NO_MASK, back, _NO_MASK
        self.last_arrived_ahead = _NO_MASK
        self.accepted += len(back)
        self.ahead -= len(back)
        return WindowUpdate(len(back), 0, 0, -len(back))

    def _update_small(
        self, categories: Sequence[str], ts: NDArray[np.float64], watermarks: Watermarks
    ) -> WindowUpdate:
        """:meth:`update_many` of at most :data:`SMALL_UPDATE` events of one stream, with their
        ``watermarks``, when none is held nor released: the same state and result, worked out
        in plain floats and lists instead of ~30 NumPy calls on arrays of a few events (a
        batch is split at every test time, so a log of one question a minute and a half
        updates each window with ~3.5 events every 5 minutes of event time).

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        stamps = ts.tolist()
        if len(categories) != len(stamps) or not all(map(math.isfinite, stamps)):
            raise ValueError("need one finite timestamp per category")
        marks, future, ahead, _, _, _ = watermarks
        lateness, before = self.allowed_lateness_s, self.watermark
        mark = -math.inf if before is None else before  # the watermark before each event
        late: list[bool] = []
        kept: list[str] = []
        taken: list[float] = []
        in_time: list[float] = []  # the watermark after each in-time event (the gap rule's)
        for t, after, f, a, category in zip(stamps, marks.tolist(), future.tolist(),
                                            ahead.tolist(), categories, strict=True):  # fmt: skip
            dropped = not f and not a and t < mark - lateness
            late.append(dropped)
            if not (f or a or dropped):
                kept.append(category)
                taken.append(t)
            if not (f or a):
                in_time.append(after)
            mark = after
        if taken:
            self.watermark = float(marks[-1])
            found = [self._codes.get(c) for c in kept]  # (seen before: one look-up each)
            codes = [self._code(c) for c in kept] if None in found else cast(list[int], found)
            self._add_small([math.floor(t / self.bucket_s) for t in taken], codes)
            self.last_accepted = np.array(taken, dtype=np.float64)
            self.last_accepted_categories = kept
        else:
            self.last_accepted, self.last_accepted_categories = _NONE, []
        self.last_too_old, self.last_too_old_categories = _NONE, []
        self.last_late, self.last_future = np.array(late, dtype=np.bool_), future
        self.last_ok = ~self.last_late & ~future & ~ahead
        self.last_released, self.last_too_old_mask = [], _NO_MASK
        self.last_arrived_ahead = ahead
        if in_time and self.ahead_gap_factor > 0:
            self._recent = [*self._recent, *in_time][-GAP_EVENTS:]
        result = WindowUpdate(len(taken), sum(late), int(future.sum()), int(ahead.sum()))
        self.accepted += result.accepted
        self.late += result.late
        self.future += result.future
        self.ahead += result.ahead
        return result

    def _add_small(self, buckets: list[int], codes: list[int]) -> None:
        """:meth:`_add` of a few events, one at a time: the same resets (in increasing bucket
        order, before any count) and counts."""
        n, slot_bucket, counts = self._n_slots, self._slot_bucket, self._counts
        spans = list(self._spans.values())
        for span in spans:
            span[2] = _widened(span[2], counts.shape[1])
        for bucket in sorted(set(buckets)):
            slot = bucket % n
            old = int(slot_bucket[slot])
            if old < bucket:
                for first, last, sums in spans:
                    if first <= old <= last:
                        sums -= counts[slot]
                counts[slot] = 0
                slot_bucket[slot] = bucket
        for bucket, code in zip(buckets, codes, strict=True):
            slot = bucket % n
            if slot_bucket[slot] == bucket:  # else older than the retained history
                counts[slot, code] += 1
                for first, last, sums in spans:
                    if first <= bucket <= last:
                        sums[code] += 1

    def _stream_marks(
        self, streams: Sequence[str], moves: NDArray[np.float64], splits: Sequence[int] = ()
    ) -> NDArray[np.float64]:
        """Each event's stream watermark before it (``-inf`` for a stream's first event), and
        move each stream's watermark to the largest of ``moves`` (``-inf``: does not move it)
        of its events. At most :data:`MAX_STREAMS` streams are kept: beyond that the one read
        least recently is forgotten (if it comes back, its first event is judged as a new
        stream's).

        The streams are kept in the order of their last use, oldest first: one update
        re-inserts those with a watermark in the order of their first event in it. With
        ``splits`` (the batch stands for several updates ending there) a stream's place is
        that of its first event in the last of those updates it is in, as they would leave
        it; the caller makes sure none would be forgotten between them."""
        before = np.empty(len(moves), dtype=np.float64)
        marks = self._streams
        groups: dict[str, Any]
        if streams.count(streams[0]) == len(streams):  # one partition's stretch: the common case
            groups = {streams[0]: slice(None)}
        else:  # one pass (first-seen order); a NumPy compare per name cost twice as much
            groups = {}
            for i, name in enumerate(streams):
                rows = groups.get(name)
                if rows is None:
                    groups[name] = [i]
                else:
                    rows.append(i)
        moved: list[tuple[str, float]] = []
        for name, where in groups.items():
            prior = marks.get(name, -math.inf)
            run = np.maximum.accumulate(np.concatenate([[prior], moves[where]]))
            before[where] = run[:-1]
            if math.isfinite(run[-1]):
                moved.append((name, float(run[-1])))
        if splits and len(moved) > 1:  # (one stream: its place is the last either way)
            moved.sort(key=lambda item: _first_in_last_part(groups[item[0]], splits))
        for name, mark in moved:
            marks.pop(name, None)  # (re-inserted: the dict's order is last use, oldest first)
            marks[name] = mark
        while len(marks) > MAX_STREAMS:
            del marks[next(iter(marks))]
        return before

    def could_forget(self, streams: Sequence[str]) -> bool:
        """Whether an update read from ``streams`` could forget a stream's watermark: the
        streams known and these are more than :data:`MAX_STREAMS` together."""
        known = self._streams
        if len(known) + len(streams) <= MAX_STREAMS:  # (the common case: no set built)
            return False
        return len(known.keys() | set(streams)) > MAX_STREAMS

    def _add(self, buckets: NDArray[np.int64], codes: NDArray[np.int64]) -> None:
        slots = buckets % self._n_slots
        spans = self._spans.values()
        for span in spans:  # (a category new since a span's sums were taken: a new column)
            span[2] = _widened(span[2], self._counts.shape[1])
        for bucket in np.unique(buckets).tolist():
            slot = bucket % self._n_slots
            old = int(self._slot_bucket[slot])
            if old < bucket:
                for first, last, sums in spans:  # the old bucket leaves the sums it was in
                    if first <= old <= last:
                        sums -= self._counts[slot]
                self._counts[slot] = 0
                self._slot_bucket[slot] = bucket
        live = self._slot_bucket[slots] == buckets  # False: older than the retained history
        np.add.at(self._counts, (slots[live], codes[live]), 1)
        for first, last, sums in spans:  # the events in a span's buckets join its sums
            inside = live & (buckets >= first) & (buckets <= last)
            if inside.any():
                np.add.at(sums, codes[inside], 1)

    def _sum(self, span_s: float, offset_s: float) -> NDArray[np.int64]:
        """The counts of the span's buckets (one per column), a new array.

        Kept as running sums per span read (:attr:`_spans`): when the watermark's bucket
        moved by fewer buckets than the span holds, the buckets that left are subtracted and
        those that came are added, instead of summing every bucket of the span again (a
        24 h span is 1,440 buckets, ~20 µs a read; a test reads two or three spans, and a
        log of one question a minute is tested every 5 minutes per dimension whatever its
        few events). :meth:`_add` keeps the sums current: the events it counts in a span's
        buckets are added, a bucket whose slot a newer one takes is subtracted. The same
        integers as summing the buckets afresh."""
        if self.watermark is None:
            return np.zeros(0, dtype=np.int64)
        back, width = math.ceil(offset_s / self.bucket_s), math.ceil(span_s / self.bucket_s)
        hi = math.floor(self.watermark / self.bucket_s) - back
        lo = hi - width + 1
        span = self._spans.get((width, back))
        sums: NDArray[np.int64]
        if span is None or not 0 <= hi - span[1] < min(width, _MAX_SHIFT):  # new, back, far
            mask = (self._slot_bucket >= lo) & (self._slot_bucket <= hi)
            sums = self._counts[mask].sum(axis=0)
            self._spans[(width, back)] = [lo, hi, sums]
        else:
            sums = _widened(span[2], self._counts.shape[1])
            n, slot_bucket = self._n_slots, self._slot_bucket
            # the slots of the buckets that left the span and of those that came into it
            # (a bucket no event reached has no slot: another bucket's, or none, is there)
            left = [b % n for b in range(span[0], lo) if slot_bucket[b % n] == b]
            came = [b % n for b in range(span[1] + 1, hi + 1) if slot_bucket[b % n] == b]
            if left:
                sums -= self._counts[left].sum(axis=0)
            if came:
                sums += self._counts[came].sum(axis=0)
            span[:] = [lo, hi, sums]
        return sums[: len(self._names)].copy()

    def bucket_range(self, span_s: float) -> tuple[int, int] | None:
        """The buckets ``(first, last)`` of the ``span_s`` seconds ending in the watermark's
        bucket, as :meth:`counts` reads them (``None`` before the first watermark)."""
        if self.watermark is None:
            return None
        last = math.floor(self.watermark / self.bucket_s)
        return last - math.ceil(span_s / self.bucket_s) + 1, last

    def counts_between(self, first: int, last: int) -> dict[str, int] | None:
        """Counts of the buckets ``first`` to ``last`` (as :meth:`bucket_range` gives them),
        or ``None`` once the oldest of them may have left the retained history (a newer
        bucket took its slot)."""
        newest = int(self._slot_bucket.max())
        if newest != _EMPTY and first <= newest - self._n_slots:
            return None
        mask = (self._slot_bucket >= first) & (self._slot_bucket <= last)
        sums = self._counts[mask, : len(self._names)].sum(axis=0)
        return {self._names[i]: int(n) for i, n in enumerate(sums) if n > 0}

    def counts(self, span_s: float | None = None, offset_s: float = 0.0) -> dict[str, int]:
        """Counts of the ``span_s`` seconds (default ``window_s``) ending ``offset_s`` seconds
        before the watermark's bucket; only categories with a count > 0. Spans beyond
        ``retention_s`` see only what is retained.
        """
        totals = self._sum(self.window_s if span_s is None else span_s, offset_s).tolist()
        names = self._names
        return {names[i]: n for i, n in enumerate(totals) if n > 0}

    def current(self) -> dict[str, int]:
        """Counts of the current window (the last ``window_s`` up to the watermark)."""
        return self.counts()

    def previous(self) -> dict[str, int]:
        """Counts of the window before the current one (needs ``retention_s ≥ 2·window_s``)."""
        return self.counts(self.window_s, self.window_s)

    def snapshot(self) -> dict[str, Any]:
        """JSON-able state: config checks, counters, watermark and the non-empty buckets."""
        buckets: dict[str, dict[str, int]] = {}
        for slot in np.argsort(self._slot_bucket):
            if self._slot_bucket[slot] != _EMPTY:
                row = self._counts[slot, : len(self._names)]
                cells = {self._names[i]: int(n) for i, n in enumerate(row) if n > 0}
                if cells:
                    buckets[str(int(self._slot_bucket[slot]))] = cells
        return {
            "version": SNAPSHOT_VERSION,
            "bucket_s": self.bucket_s,
            "watermark": self.watermark,
            "accepted": self.accepted,
            "late": self.late,
            "future": self.future,
            "ahead": self.ahead,
            "held": [[t, c] for t, c in self._held],
            # (a key of its own: code before session 32 restores this snapshot too)
            "held_since": list(self._since),
            # (session 42; none before: those held count as held beyond max_ahead_s)
            "held_gap": list(self._gap),
            # (the gap rule's; a snapshot before session 41 has none: the rule waits for
            # GAP_EVENTS in-time events after the restore)
            "recent_marks": list(self._recent),
            "streams": dict(self._streams),
            "buckets": buckets,
        }

    def restore(self, state: dict[str, Any] | None) -> Self:
        """Replace this window's state by a :meth:`snapshot` (``None``: start empty).

        Buckets older than ``retention_s`` are dropped, so ``window_s`` may change between
        runs; ``bucket_s`` may not.

        Raises:
            ValueError: another snapshot version or ``bucket_s``, or a malformed snapshot.
        """
        self._reset()
        if state is None:
            return self
        if state.get("version") != SNAPSHOT_VERSION or state.get("bucket_s") != self.bucket_s:
            raise ValueError("window snapshot has another version or bucket_s")
        try:
            for bucket, cells in sorted(state["buckets"].items(), key=lambda kv: int(kv[0])):
                codes = np.repeat([self._code(c) for c in cells], [int(n) for n in cells.values()])
                self._add(np.full(len(codes), int(bucket), dtype=np.int64), codes)
            wm = state["watermark"]
            self.watermark = None if wm is None else float(wm)
            self.accepted, self.late = int(state["accepted"]), int(state["late"])
            self.future = int(state["future"])
            self.ahead = int(state.get("ahead", 0))  # (older snapshots: none held)
            self._held = [(float(t), str(c)) for t, c in state.get("held", ())][-MAX_HELD:]
            # older snapshots wrote no counts: the in-time events that came after those held
            # before the restore are unknown, so they count from it
            since = [int(n) for n in state.get("held_since", ())]
            since = since[max(0, len(since) - len(self._held)) :]
            self._since = [0] * (len(self._held) - len(since)) + since
            gap = [bool(g) for g in state.get("held_gap", ())]  # (older: beyond max_ahead_s)
            gap = gap[max(0, len(gap) - len(self._held)) :]
            self._gap = [False] * (len(self._held) - len(gap)) + gap
            self._recent = [float(m) for m in state.get("recent_marks", ())][-GAP_EVENTS:]
            streams = list(state.get("streams", {}).items())[-MAX_STREAMS:]  # (older: none)
            self._streams = {str(name): float(mark) for name, mark in streams}
        except (KeyError, TypeError, ValueError) as exc:
            self._reset()
            raise ValueError(f"malformed window snapshot: {exc}") from exc
        return self


@dataclass(frozen=True)
class WindowConfig:
    """Windowing of a drift detector (frozen). All durations in seconds of event time.

    Attributes:
        window_s: the current window compared with the baseline (default 1 h: a change is
            seen within the hour); bucket_s: the buckets of all windows (default 1 min).
        reference_window_s: the current window compared with a fixed reference such as the
            gold set (default 24 h). Longer, because the reference is one fixed, often small
            sample: against a short, noisy window, repeated tests would sooner or later
            catch the window's noise on top of the reference's own sampling error.
        test_every_s: one test each time the watermark crosses a multiple of this (5 min).
        baseline: ``"frozen"`` (the events with event time in the first ``warmup_s`` from the
            earliest event's bucket, whatever ``test_every_s``: see
            :class:`ComparisonWindows`), ``"previous"``
            (the window just before the current one) or ``"none"``.
        warmup_s: warm-up of a frozen baseline (default 6 h).
        alpha_period_s: a detector's ``alpha`` is its false-alarm budget per this much event
            time (default one day); see :meth:`ComparisonWindows.windows_per_period`.
        allowed_lateness_s, future_tolerance_s, max_categories, max_ahead_s, ahead_confirm,
            ahead_gap_factor: see :class:`CategoryWindow` (defaults: an event over 6 h ahead
            of the watermark is held until 5 such events within 6 h of one another confirm the
            jump; so is one over 4 times the largest advance of the last 32 in-time events and
            over ``allowed_lateness_s`` ahead).

    Raises:
        ValueError: a duration is not > 0 (lateness, tolerance: ≥ 0) or baseline is unknown.
    """

    window_s: float = 3600.0
    bucket_s: float = 60.0
    reference_window_s: float = 86_400.0
    test_every_s: float = 300.0
    baseline: Literal["frozen", "previous", "none"] = "frozen"
    warmup_s: float = 21_600.0
    alpha_period_s: float = 86_400.0
    allowed_lateness_s: float = 300.0
    future_tolerance_s: float = 60.0
    max_categories: int = 500
    max_ahead_s: float = 21_600.0
    ahead_confirm: int = 5
    ahead_gap_factor: float = 4.0

    def __post_init__(self) -> None:
        if self.baseline not in ("frozen", "previous", "none"):
            raise ValueError(f"baseline must be frozen, previous or none: {self.baseline!r}")
        durations = (self.test_every_s, self.warmup_s, self.reference_window_s, self.alpha_period_s)
        if min(durations) <= 0:
            raise ValueError("test_every_s, warmup_s, reference_window_s, alpha_period_s: > 0")
        self.window(True)  # validates the rest

    def retention_s(self, has_reference: bool) -> float:
        """History to keep: the reference window, 2 windows (previous), warm-up (frozen)."""
        needs = [self.window_s, self.reference_window_s if has_reference else 0.0]
        needs.append(2 * self.window_s if self.baseline == "previous" else 0.0)
        needs.append(self.warmup_s if self.baseline == "frozen" else 0.0)
        return max(needs)

    def window(self, has_reference: bool) -> CategoryWindow:
        """A new, empty window with this configuration."""
        retention = self.retention_s(has_reference)
        return CategoryWindow(
            self.window_s,
            self.bucket_s,
            allowed_lateness_s=min(self.allowed_lateness_s, retention),
            future_tolerance_s=self.future_tolerance_s,
            retention_s=retention,
            max_categories=self.max_categories,
            max_ahead_s=self.max_ahead_s,
            ahead_confirm=self.ahead_confirm,
            ahead_gap_factor=self.ahead_gap_factor,
        )


#: :meth:`ComparisonWindows._track_busiest` works bucket by bucket in plain ints when an
#: ingest's buckets lie within this many of each other and of the last ingest's watermark
_FEW_BUCKETS = 32


class ComparisonWindows:
    """The current window, its baseline, and the event-time test schedule.

    :meth:`ingest` splits each micro-batch where the watermark crosses a multiple of
    ``test_every_s`` and calls ``on_tick`` there (after adding the crossing event), so the
    tests — and their results — do not depend on how events were batched.
    With streams (Kafka partitions), a partition read after another adds its events behind the
    watermark, to windows already tested: once ``min_count`` events were added at or before the
    watermark of the last test, the windows are tested again (a *re-test*, at the end of that
    :meth:`ingest` or at one of its ``checks``; it freezes no baseline), so a backlog read one
    partition after another is tested on every partition's events, not only on the first one
    read (a trial: the last test of a 4-partition backlog saw 724 of 3,000 events, all of one
    partition, and missed the alarms a replay of the same log raised). Up to
    ``min_count − 1`` events added behind wait for the next test, or for :meth:`flush` (the
    source went quiet). Events of one stream never come behind it that way, so without
    streams there is no re-test.

    A frozen baseline is exactly the events with event time in ``[start, start + warmup_s)``:
    ``start`` is the start of the bucket (``bucket_s``) of the earliest event the window took,
    and ``warmup_s`` is rounded up to whole buckets. It is counted as the events come, apart
    from the windows, so it holds the same events whatever the test cadence (``test_every_s``),
    the batching, or the order partitions are read in: a partition read later adds its events
    of the span (even those older than the windows' history, ``retention_s``), and one with
    an earlier first event moves ``start`` back (the span's newest buckets then leave it), as
    a replay of the same events in time order would have it. The baseline is ready (frozen)
    at the first tick whose watermark is past the span, if the span holds ``min_count``
    events; if it holds fewer, a new warm-up starts with the bucket after the watermark's.
    Memory: at most ``ceil(warmup_s / bucket_s)`` buckets of counts.
    """

    def __init__(self, config: WindowConfig, min_count: int, has_reference: bool) -> None:
        self.config, self.min_count = config, min_count
        self.window = config.window(has_reference)
        #: the spans whose busiest window is kept (:attr:`busiest_held`): the windows tested
        self._sized = sorted({config.window_s, *([config.reference_window_s] * has_reference)})
        #: span (seconds) -> the most events any window of that span held, over the events'
        #: times (windows of whole buckets ending at each bucket up to the watermark),
        #: whatever the test cadence (:meth:`_track_busiest`); ``{}`` before any event (or
        #: after a restore of a snapshot written before session 41)
        self.busiest_held: dict[float, int] = {}
        #: the earliest bucket an event was added to (``None``: none yet, or an older
        #: snapshot), from which :meth:`mean_held` measures the rate
        self.first_bucket: int | None = None
        #: events were taken before :attr:`first_bucket` was kept (a snapshot written before
        #: session 41 restored): it stays ``None``, as the window's ``accepted`` counts
        #: events from before the buckets a first bucket set later would cover (the mean
        #: over the events since the restore read as if the service's every event came then)
        self._no_first = False
        #: the events added per bucket, all categories together, for :meth:`_track_busiest`:
        #: a ring of the ``retention_s`` buckets an event can still be accepted into plus the
        #: longest span's (the windows back from such an event) and 2, slot ``b % n`` holding
        #: bucket ``b`` (``_EMPTY``: none). Kept apart from the window's own ring, which
        #: forgets the buckets behind ``retention_s``: a window back from a lagging
        #: partition's event read there held what the batching left (trial 41 fix: 1,126
        #: fed in chunks, 1,148 at once, on the same events)
        n_held = math.ceil(self.window.retention_s / config.bucket_s)
        n_held += math.ceil(max(self._sized) / config.bucket_s) + 2
        self._held_bucket = np.full(n_held, _EMPTY, dtype=np.int64)
        self._held_total = np.zeros(n_held, dtype=np.int64)
        #: the watermark's bucket at the last :meth:`_track_busiest`, and span -> the events
        #: of the window ending there (``None``, ``{}``: none yet, or since a restore)
        self._held_top: int | None = None
        self._held_sums: dict[float, int] = {}
        self._span = math.ceil(config.warmup_s / config.bucket_s)  # the baseline's buckets
        self._base: dict[int, dict[str, int]] = {}  # bucket -> counts, within the span
        #: :meth:`_base_counts` of ``_base`` as it is (``None``: changed since)
        self._base_total: dict[str, int] | None = None
        self._base_first: int | None = None  # the span's first bucket
        self._base_fixed = False  # True: the span starts there (a new warm-up), never earlier
        self._ready = False  # the baseline is frozen (ready for tests)
        #: warm-ups that ended holding fewer than ``min_count`` events (each started again)
        #: since the baseline last froze or was rebaselined, and the events the last of them
        #: held: why a frozen baseline never froze
        self.short_warmups, self.short_warmup_count = 0, 0
        self._legacy: dict[str, int] | None = None  # a baseline restored without its buckets
        self._last_tick: float | None = None
        self._start: float | None = None  # watermark at the first tick
        self._tested_at: float | None = None  # watermark at the last test
        self._behind = 0  # events added at or before it since (streams only)
        #: the window updates' (late, future, held when they came, added) masks of the last
        #: ingest
        self._parts: list[tuple[NDArray[np.bool_], ...]] = []
        #: the timestamps of the earlier-held events the last ingest (or finish) released
        self._released: list[float] = []

    def ingest(
        self,
        categories: Sequence[str],
        timestamps: ArrayLike,
        now: Now,
        on_tick: OnTick,
        streams: Sequence[str] | None = None,
        *,
        watermarks: Watermarks | None = None,
        checks: Sequence[int] = (),
        on_added: Callable[[int, int], None] | None = None,
    ) -> None:
        """Add a micro-batch, calling ``on_tick(after)`` at each test time it crosses (``after``
        of these events added before the test); ``now``: the wall clock, one reading or one
        per event; ``streams``: see :meth:`CategoryWindow.update_many`; ``watermarks``: what
        :meth:`watermarks` gave for these timestamps and ``now`` in the window's present state
        (``None``: computed here). Afterwards :meth:`kept_out_masks` tells which of the events
        were late and future.

        ``checks`` (with ``streams``): after how many events the batch would have ended had it
        been ingested in parts: the result (tests, their ``after``, the state) is that of
        ingesting those parts one after another. A re-test (see the class) is due at a part's
        end, so the batch is split there where one could be due: only where the events
        stamped at or before the last test's watermark could reach ``min_count`` (:meth:`_due`),
        or at every end while events are held or released (the part's watermarks are then not
        the whole's) or when the streams would be more than the window keeps (which it forgets
        depends on the parts). Between splits the streams are remembered in the parts' order
        (``splits`` of :meth:`CategoryWindow.update_many`).

        ``on_added(start, end)``: called after each window update, with the events
        ``start:end`` it took (read :attr:`CategoryWindow.last_ok` and the other ``last_*``
        of :attr:`window`), before any test that follows it.

        Raises:
            ValueError: lengths differ or a timestamp is not finite.
        """
        ts = np.asarray(timestamps, dtype=np.float64).reshape(-1)
        if len(ts) != len(categories) or not np.all(np.isfinite(ts)):
            raise ValueError("need one finite timestamp per event")
        if watermarks is None:
            watermarks = self.watermarks(ts, now)
        marks = watermarks[0]
        ticks = np.floor(marks / self.config.test_every_s)
        previous = np.concatenate(
            [[-math.inf if self._last_tick is None else self._last_tick], ticks[:-1]]
        )
        each = isinstance(now, np.ndarray)  # one reading per event: sliced with the events
        # nothing held nor released (the common case): a part's watermarks are the slice of
        # the whole's (the window's watermark at its start is the running one before it)
        plain = not self.holds(watermarks)
        stops = sorted({int(c) for c in checks if 0 < c < len(ts)}) if streams else []
        every_stop = bool(stops) and (not plain or self.window.could_forget(streams or []))
        self._parts, self._released = [], []
        added: list[NDArray[np.float64]] = []

        def add(start: int, end: int) -> None:
            """Add the events ``start:end`` to the window and the baseline."""
            whole = start == 0 and end == len(ts)  # (the common case: no test inside)
            known = watermarks if whole else _part(watermarks, start, end) if plain else None
            inside = stops[bisect_right(stops, start) : bisect_left(stops, end)]
            self.window.update_many(
                categories[start:end], ts[start:end],
                now[start:end] if each else now,  # type: ignore[index]
                None if streams is None else streams[start:end], watermarks=known,
                splits=[stop - start for stop in inside],
            )  # fmt: skip
            self._added()
            self._count_behind(streams)
            added.append(self.window.last_accepted)
            self._take_baseline()
            if on_added is not None:
                on_added(start, end)

        start = 0
        for i in [*map(int, np.flatnonzero(np.isfinite(ticks) & (ticks > previous))), None]:
            limit = len(ts) if i is None else i + 1
            while (stop := self._due(ts, start, limit, stops, every_stop)) is not None:
                add(start, stop)
                start = stop
                if self._behind >= self.min_count:  # a re-test, as at the end below
                    self._test(on_tick, stop, freeze=False)
            if i is None:
                break
            add(start, i + 1)
            start, self._last_tick = i + 1, float(ticks[i])
            self._start = self.window.watermark if self._start is None else self._start
            self._test(on_tick, i + 1)
        add(start, len(ts))
        self._track_busiest(added[0] if len(added) == 1 else np.concatenate(added))
        if self._behind >= self.min_count:  # (streams only) a re-test, see the class
            self._test(on_tick, len(ts), freeze=False)

    def _due(
        self, ts: NDArray[np.float64], start: int, limit: int, stops: list[int], every: bool
    ) -> int | None:
        """Where to split the batch next (see :meth:`ingest`): the first of ``stops`` after
        ``start`` and before ``limit`` (the next test time's event, or the end) where a
        re-test may be due once the events ``ts[start:stop]`` are added; ``None``: none.

        With ``every``, each stop. Else a re-test is due once ``min_count`` events were added
        at or before the last test's watermark since that test; an event added is stamped
        at or before it, so counting the events so stamped (added or not) never misses a
        stop where it is due: the first stop where that count reaches ``min_count``."""
        due = stops[bisect_right(stops, start) : bisect_left(stops, limit)]
        if not due or every:
            return due[0] if due else None
        if self._tested_at is None:  # nothing is counted behind before the first test
            return None
        behind = self._behind + np.cumsum(ts[start:limit] <= self._tested_at)
        return next((stop for stop in due if behind[stop - start - 1] >= self.min_count), None)

    def watermarks(self, timestamps: NDArray[np.float64], now: Now) -> Watermarks:
        """What :func:`running_watermark` gives for ``timestamps`` (and ``now``, one reading
        or one per event) from the window's present state."""
        w = self.window
        return w.watermarks(timestamps, now)

    def holds(self, watermarks: Watermarks) -> bool:
        """Whether events are held ahead of the watermark now, or an update with these
        ``watermarks`` (:meth:`watermarks`) would hold or release any."""
        _, _, ahead, released, pending, _ = watermarks
        return bool(self.window.held or released or pending or ahead.any())

    def _added(self) -> None:
        """Keep the last window update's late, future and held masks for
        :meth:`kept_out_masks`."""
        w = self.window
        self._parts.append((w.last_late, w.last_future, w.last_arrived_ahead, w.last_ok))
        self._released.extend(t for t, _ in w.last_released)

    def kept_out_masks(self) -> tuple[NDArray[np.bool_], NDArray[np.bool_]]:
        """``(late, future)``: which events of the last :meth:`ingest` were counted late and
        future (boolean masks over its events, in their order)."""
        return self._masks(0), self._masks(1)

    def held_mask(self) -> NDArray[np.bool_]:
        """Which events of the last :meth:`ingest` were held ahead of the watermark when they
        came (a boolean mask over its events, in their order; released since or not)."""
        return self._masks(2)

    def added_mask(self) -> NDArray[np.bool_]:
        """Which events of the last :meth:`ingest` its window updates added to the buckets
        (a boolean mask over its events, in their order): neither late, future nor held when
        the update that took them ended (one held and released by a later part of the
        ingest is in :meth:`released` instead)."""
        return self._masks(3)

    def released(self) -> list[float]:
        """The timestamps (Unix seconds) of the events held before, by an earlier
        :meth:`ingest` or an earlier part of the last one, that the last :meth:`ingest` or
        :meth:`finish` released into the buckets."""
        return list(self._released)

    def _masks(self, which: int) -> NDArray[np.bool_]:
        """The ``which``-th mask of the last ingest's window updates, joined."""
        if len(self._parts) <= 1:
            return self._parts[0][which] if self._parts else _NO_MASK
        return np.concatenate([part[which] for part in self._parts])

    def flush(self, on_tick: OnTick) -> bool:
        """Re-test now (``on_tick``) if any event was added behind the last test's watermark
        since it (streams only; fewer than ``min_count``, else :meth:`ingest` did): the
        caller's source went quiet, e.g. the end of a backlog, so they would wait for the
        next event otherwise. Returns whether it tested."""
        if not self._behind:
            return False
        self._test(on_tick, 0, freeze=False)
        return True

    def finish(self, on_tick: OnTick, on_added: Callable[[int, int], None] | None = None) -> bool:
        """The input ended (a replay's end): release the held events no later event refuted
        (:meth:`CategoryWindow.release_held`) and, when that moved the watermark to a new test
        time, freeze a baseline that is due and test (``on_tick(0)``) as :meth:`ingest` would
        have; ``on_added(0, 0)`` after the release (see :meth:`ingest`). Returns whether it
        tested."""
        w = self.window
        self._released = []
        if not w.release_held().accepted:
            return False
        self._released = [t for t, _ in w.last_released]
        self._track_busiest(w.last_accepted)  # (the sizing counts every accepted event)
        self._parts = []
        self._take_baseline()
        if on_added is not None:
            on_added(0, 0)
        tick = math.floor(float(w.watermark or 0.0) / self.config.test_every_s)
        if self._last_tick is not None and tick <= self._last_tick:
            return False
        self._last_tick = float(tick)
        self._start = w.watermark if self._start is None else self._start
        self._test(on_tick, 0)
        return True

    def _track_busiest(self, stamps: NDArray[np.float64]) -> None:
        """Update :attr:`busiest_held` and :attr:`first_bucket` with the events an
        :meth:`ingest` added (their timestamps ``stamps``: every event the window accepted,
        each counted in its bucket as when it was accepted, even one the window's own ring
        then let a newer bucket of the same update take), once at its end. The windows (of
        each span tested) that could hold one of the events end between its earliest bucket
        ``lo`` and the watermark's ``top`` (a window ending later holds a part of the one
        ending at ``top``); they read the buckets from ``lo`` less the longest span to
        ``top``: those this ingest added to, plus those held before it (its own ring of
        totals, read before the ingest's events join it). Exact whatever the batching: an
        accepted event is at most ``retention_s`` behind the watermark before the ingest
        (its own stream's lateness, or older than the history kept and so late), and the
        ring holds that and the longest span behind it. Each span's window ending just
        before ``lo`` is the one ending at the last ingest's ``top`` (kept, :attr:`_held_sums`)
        moved over the buckets between the two, and the windows ending at ``lo ... top``
        follow by adding a bucket and dropping one: about ``top − lo`` buckets per span
        and ingest (reading each window's whole span cost a 2-a-second log ~1.7 µs an
        event, 7 % of its drift stage, with a 24 h span: 1,440 buckets), the whole span
        once after a restore."""
        w = self.window
        if not len(stamps) or w.watermark is None:
            return
        size = w.bucket_s
        added = np.floor(stamps / size).astype(np.int64)
        added = added[added <= (top := math.floor(w.watermark / size))]  # (all of them)
        lo = int(added.min())
        if not self._no_first:
            self.first_bucket = lo if self.first_bucket is None else min(self.first_bucket, lo)
        n = len(self._held_bucket)
        mine = np.bincount(added - lo, minlength=top - lo + 1)  # this ingest's, lo ... top

        def before(first: int, last: int) -> NDArray[np.int64]:
            """The ring's totals of the buckets ``first ... last`` (before this ingest's)."""
            buckets = np.arange(first, last + 1, dtype=np.int64)
            slots = buckets % n
            return np.where(self._held_bucket[slots] == buckets, self._held_total[slots], 0)

        prev = self._held_top
        if prev is not None and top - lo <= _FEW_BUCKETS and abs(lo - prev) <= _FEW_BUCKETS:
            self._track_few(lo, top, mine.tolist())  # (the usual ingest: a few buckets)
            return
        now = before(lo, top) + mine  # the buckets lo ... top with this ingest's events
        for span in self._sized:
            width = math.ceil(span / size)
            # the window ending at lo - 1 (no event of this ingest in it), from the one
            # ending at the last ingest's top (no bucket after that held any event yet)
            run = self._held_sums.get(span)
            if prev is None or run is None:  # (the first ingest, or after a restore)
                at = int(before(lo - width, lo - 1).sum())
            elif lo > prev:
                at = run - int(before(prev - width + 1, min(prev, lo - 1 - width)).sum())
            else:
                at = run - int(before(lo, prev).sum()) + int(before(lo - width, prev - width).sum())
            # the windows ending at lo ... top: each the one before, a bucket in, a bucket out
            if top - width < lo:
                out = before(lo - width, top - width)
            else:
                out = np.concatenate([before(lo - width, lo - 1), now[: top - width - lo + 1]])
            sums = at + np.cumsum(now - out)
            most = int(sums.max())
            if most > self.busiest_held.get(span, 0):
                self.busiest_held[span] = most
            self._held_sums[span] = int(sums[-1])
        self._held_top = top
        # the ingest's events join the ring (its buckets newer than top − n: distinct slots;
        # an older one's slot holds none of them, and no window will read it again)
        kept = np.flatnonzero(mine) + lo
        kept = kept[kept > top - n]
        at_slot = kept % n
        held = mine[kept - lo]
        same = self._held_bucket[at_slot] == kept
        self._held_total[at_slot] = np.where(same, self._held_total[at_slot] + held, held)
        self._held_bucket[at_slot] = kept

    def _track_few(self, lo: int, top: int, mine: list[int]) -> None:
        """:meth:`_track_busiest` of an ingest whose buckets ``lo ... top`` (its events per
        bucket ``mine``) lie within :data:`_FEW_BUCKETS` of each other and of the last
        ingest's ``top``: the same sums bucket by bucket in plain ints, instead of ~25 NumPy
        calls on arrays of a few buckets each (a 2-a-second log's 500-event batch spans
        ~5 one-minute buckets)."""
        n, prev = len(self._held_bucket), cast(int, self._held_top)
        buckets, totals = self._held_bucket, self._held_total

        def held(bucket: int) -> int:
            """The ring's total of ``bucket`` (before this ingest's events)."""
            slot = bucket % n
            return int(totals[slot]) if buckets[slot] == bucket else 0

        now = [held(b) + k for b, k in zip(range(lo, top + 1), mine, strict=True)]
        for span in self._sized:
            width = math.ceil(span / self.window.bucket_s)
            run = self._held_sums[span]
            if lo > prev:  # (as in _track_busiest)
                at = run - sum(map(held, range(prev - width + 1, min(prev, lo - 1 - width) + 1)))
            else:
                at = (run - sum(map(held, range(lo, prev + 1)))
                      + sum(map(held, range(lo - width, prev - width + 1))))  # fmt: skip
            most = 0
            for e in range(lo, top + 1):
                gone = e - width
                at += now[e - lo] - (now[gone - lo] if gone >= lo else held(gone))
                most = max(most, at)
            if most > self.busiest_held.get(span, 0):
                self.busiest_held[span] = most
            self._held_sums[span] = at
        self._held_top = top
        for b, k in zip(range(lo, top + 1), mine, strict=True):
            if k and b > top - n:
                slot = b % n
                same = buckets[slot] == b
                totals[slot] = totals[slot] + k if same else k
                buckets[slot] = b

    def mean_held(self, span_s: float) -> float:
        """The mean events a window of ``span_s`` seconds held over the events' times: the
        events added (:attr:`CategoryWindow.accepted`) over the buckets from
        :attr:`first_bucket` to the watermark's, times the span's buckets — the rate a
        window of that span holds on average, whatever the test cadence. ``0.0`` before
        the events span one whole window (too little time to say), or without
        :attr:`first_bucket` (an older snapshot)."""
        w = self.window
        if self.first_bucket is None or w.watermark is None:
            return 0.0
        width = math.ceil(span_s / w.bucket_s)
        covered = math.floor(w.watermark / w.bucket_s) - self.first_bucket + 1
        return w.accepted * width / covered if covered >= width else 0.0

    def _count_behind(self, streams: Sequence[str] | None) -> None:
        """Count the events the last update added at or before the last test's watermark."""
        if streams is not None and self._tested_at is not None:
            self._behind += int((self.window.last_accepted <= self._tested_at).sum())

    def _test(self, on_tick: OnTick, after: int, freeze: bool = True) -> None:
        """Freeze a baseline that is due (a tick, not a re-test: one would freeze the window
        it compares, all the backlog's latest events) and test (``on_tick(after)``; ``after``:
        the running ingest's events added) at the watermark."""
        if freeze:
            self._freeze()
        self._tested_at, self._behind = self.window.watermark, 0
        on_tick(after)

    def current(self, reference: bool = False) -> dict[str, int]:
        """Counts of the current window: the one compared with the fixed reference
        (``reference_window_s``) or with the baseline (``window_s``)."""
        return self.window.counts(self.config.reference_window_s if reference else None)

    def windows_per_period(self, reference: bool = False) -> float:
        """How many disjoint current windows fit in ``alpha_period_s`` (≥ 1).

        A window counts as long as the history seen so far when that is shorter. Tests of one
        window overlap and are strongly correlated, so one test per disjoint window is the
        Bonferroni count used (an approximation for the overlapping ones).
        """
        span = self.config.reference_window_s if reference else self.config.window_s
        if self.window.watermark is not None and self._start is not None:
            span = min(span, self.window.watermark - self._start + self.config.bucket_s)
        span = max(span, self.config.test_every_s)  # never more than one per test
        return max(1.0, self.config.alpha_period_s / span)

    def baseline_buckets(self) -> tuple[int, int] | None:
        """The buckets ``(first, last)`` the baseline's counts are of (:meth:`baseline`):
        a ready frozen baseline's span, or the window before the current one
        (``previous``); ``None`` while there is none (not ready, ``"none"``, or a frozen
        baseline restored from a snapshot without its buckets)."""
        if self.config.baseline == "previous":
            found = self.window.bucket_range(2 * self.config.window_s)
            width = math.ceil(self.config.window_s / self.config.bucket_s)
            return None if found is None else (found[1] - 2 * width + 1, found[1] - width)
        if not self._ready or self._legacy is not None or self._base_first is None:
            return None
        return self._base_first, self._base_first + self._span - 1

    def warmup_buckets(self) -> tuple[int, int] | None:
        """The buckets ``(first, last)`` of a frozen baseline's span as it stands (warming up
        or ready; the events of these buckets are its counts), ``None`` before its first
        event, for another baseline, or for one restored without its buckets."""
        if self.config.baseline != "frozen" or self._legacy is not None:
            return None
        if self._base_first is None:
            return None
        return self._base_first, self._base_first + self._span - 1

    def baseline(self) -> dict[str, int] | None:
        """Counts of the baseline, or ``None`` while it is not ready (or ``"none"``)."""
        if self.config.baseline == "previous":
            return self.window.previous()
        if self._legacy is not None:
            return dict(self._legacy)
        return self._base_counts() if self._ready else None

    def _base_counts(self) -> dict[str, int]:
        """The counts of the frozen baseline's span so far (categories with a count > 0), a
        new dict. Summed once per change of the span's buckets: every test of a frozen
        baseline reads it, and a span of 360 buckets took ~0.5 ms to sum."""
        if self._base_total is None:
            total: dict[str, int] = {}
            for cells in self._base.values():
                for category, n in cells.items():
                    total[category] = total.get(category, 0) + n
            self._base_total = total
        return dict(self._base_total)

    @property
    def warmup_held(self) -> int:
        """The events the frozen baseline's warm-up in progress holds so far (0 when none is:
        ready, restored without its buckets, or another baseline)."""
        if self.config.baseline != "frozen" or self._ready or self._legacy is not None:
            return 0
        return sum(self._base_counts().values())

    def _take_baseline(self) -> None:
        """Count the events the last window update took (and, with streams, those only older
        than its history) that fall in the frozen baseline's span (see the class)."""
        w = self.window
        if self.config.baseline != "frozen" or self._legacy is not None:
            return
        if not len(w.last_too_old):
            stamps = w.last_accepted
            # every bucket past the span (the common case once it is): nothing to count, and
            # nothing moves its start (the earliest bucket is the earliest stamp's, computed
            # as below, floor being monotone)
            if self._base_first is not None and (
                not len(stamps)
                or math.floor(float(stamps.min()) / self.config.bucket_s)
                >= self._base_first + self._span
            ):
                return
        else:
            stamps = np.concatenate([w.last_accepted, w.last_too_old])
        if not len(stamps):
            return
        buckets = np.floor(stamps / self.config.bucket_s).astype(np.int64)
        earliest = int(buckets.min())
        if self._base_first is None or (not self._base_fixed and earliest < self._base_first):
            self._base_first = earliest  # (an earlier event: the span starts with it)
            end = earliest + self._span
            self._base = {b: cells for b, cells in self._base.items() if b < end}
            self._base_total = None
        first = self._base_first
        inside = np.flatnonzero((buckets >= first) & (buckets < first + self._span))
        if not len(inside):  # (once the span is past: no per-event work)
            return
        names = [*w.last_accepted_categories, *w.last_too_old_categories]
        if len(inside) < len(names):
            names = [names[i] for i in inside.tolist()]
        # one count per distinct (bucket, category), in first-seen order: the same dicts,
        # in the same order, as adding the events one by one (a Python step per event cost
        # ~1 µs an event over the four dimensions while the span was filling)
        kept = buckets[inside]
        steps = np.diff(kept)
        groups: Iterable[tuple[int, Counter[str]]]
        if (steps >= 0).all():  # in bucket order (the common case): a Counter per bucket
            bounds = [0, *(np.flatnonzero(steps) + 1).tolist(), len(names)]
            groups = [(int(kept[a]), Counter(names[a:b])) for a, b in pairwise(bounds)]
        else:  # a Counter of (bucket, category) pairs, regrouped in first-seen order
            pairs = Counter(zip(kept.tolist(), names, strict=True))
            by_bucket: dict[int, Counter[str]] = {}
            for (bucket, name), n in pairs.items():
                by_bucket.setdefault(bucket, Counter())[name] = n
            groups = by_bucket.items()
        base, self._base_total = self._base, None
        for bucket, counts in groups:
            cells = base.setdefault(bucket, {})
            for name, n in counts.items():
                cells[name] = cells.get(name, 0) + n

    def _freeze(self) -> None:
        w = self.window
        if self.config.baseline != "frozen" or self._ready or self._legacy is not None:
            return
        if w.watermark is None or self._base_first is None:
            return
        if w.watermark >= (self._base_first + self._span) * self.config.bucket_s:
            held = sum(self._base_counts().values())
            if held >= self.min_count:
                self._ready = True
                self.short_warmups, self.short_warmup_count = 0, 0  # (they are past)
            else:  # too few: a new warm-up with the next bucket
                self.short_warmups, self.short_warmup_count = self.short_warmups + 1, held
                self._restart()

    def _restart(self) -> None:
        """Start a new warm-up with the bucket after the watermark's (or the first event's)."""
        wm = self.window.watermark
        self._base, self._ready, self._legacy = {}, False, None
        self._base_total = None
        self._base_fixed = wm is not None
        self._base_first = None if wm is None else math.floor(wm / self.config.bucket_s) + 1

    def rebaseline(self) -> None:
        """Drop a frozen baseline and start a new warm-up with the bucket after the
        watermark's (events from then on, see the class); the short warm-ups counted before
        are no longer the reason it is not ready."""
        self._restart()
        self.short_warmups, self.short_warmup_count = 0, 0

    def snapshot(self) -> dict[str, Any]:
        """JSON-able state: the window, the frozen baseline, warm-up start, last tick."""
        return {
            "window": self.window.snapshot(),
            "frozen": self.baseline() if self.config.baseline == "frozen" else None,
            "base": {str(b): dict(cells) for b, cells in sorted(self._base.items())},
            "base_first": self._base_first,
            "base_fixed": self._base_fixed,
            "last_tick": self._last_tick,
            "start": self._start,
            "tested_at": self._tested_at,
            "behind": self._behind,
            "short_warmups": [self.short_warmups, self.short_warmup_count],
            "busiest_held": [[span, n] for span, n in sorted(self.busiest_held.items())],
            "first_bucket": self.first_bucket,
            "busiest_buckets": self._busiest_buckets(),
        }

    def _busiest_buckets(self) -> list[list[int]]:
        """``[[bucket, events], ...]`` of the ring :meth:`_track_busiest` keeps, its live part
        only (the ``n`` buckets up to the watermark's: an older one left in a slot no newer
        bucket reached depends on the batching, and no window reads it again)."""
        w, n = self.window, len(self._held_bucket)
        if w.watermark is None:
            return []
        oldest = math.floor(w.watermark / w.bucket_s) - n + 1
        live = self._held_bucket[self._held_bucket >= oldest]
        return [[int(b), int(self._held_total[b % n])] for b in sorted(live.tolist())]

    def restore(self, state: dict[str, Any]) -> None:
        """Take back a :meth:`snapshot`.

        Raises:
            ValueError: malformed snapshot.
        """
        self.window.restore(state.get("window"))
        frozen = state.get("frozen")
        self._base, self._ready, self._legacy = {}, False, None
        self._base_total = None
        if "base" in state:
            self._base = {int(b): {str(c): int(n) for c, n in cells.items()}
                          for b, cells in state["base"].items()}  # fmt: skip
            first = state.get("base_first")
            self._base_first = None if first is None else int(first)
            self._base_fixed, self._ready = bool(state.get("base_fixed")), frozen is not None
        else:  # an older snapshot: its frozen counts stay as they are, or a new warm-up
            self._base_first, self._base_fixed = None, False
            if frozen is not None:
                self._legacy = {str(k): int(v) for k, v in frozen.items()}
        self._last_tick = state.get("last_tick")
        self._start = state.get("start")
        # (older snapshots: the last tick's watermark is unknown; none behind it yet)
        self._tested_at, self._behind = state.get("tested_at"), int(state.get("behind") or 0)
        short = state.get("short_warmups") or [0, 0]  # (older snapshots: none counted)
        self.short_warmups, self.short_warmup_count = int(short[0]), int(short[1])
        # (older snapshots: none kept; the detectors then size their advice by the windows
        # they tested, as before)
        # (keyed by the configured spans as they are: a snapshot's JSON turns 600 into 600.0)
        sized = {float(span): span for span in self._sized}
        self.busiest_held = {sized.get(float(span), float(span)): int(n)
                             for span, n in state.get("busiest_held") or []}  # fmt: skip
        first = state.get("first_bucket")
        self.first_bucket = None if first is None else int(first)
        # (events taken and no first bucket: an older snapshot, or one written since its
        # restore; the window's accepted count spans more than the next events' buckets)
        self._no_first = self.first_bucket is None and self.window.accepted > 0
        # (older snapshots: none kept; a window back from the next events then misses them)
        self._held_bucket[:] = _EMPTY
        self._held_total[:] = 0
        self._held_top, self._held_sums = None, {}  # (worked out again from the ring)
        for bucket, total in state.get("busiest_buckets") or []:
            slot = int(bucket) % len(self._held_bucket)
            if int(bucket) > self._held_bucket[slot]:
                self._held_bucket[slot], self._held_total[slot] = int(bucket), int(total)
