"""The live service's shadow agreement over event time, and the replay's "sustained" verdict
on it (trial 45 H2, trial 43 H1: a candidate's RBO with production fell for good, and only
the offline replay's text said so).

:class:`AgreementTrend` keeps what :class:`service.jobs.series.TimeSeries` keeps of the
shadow results in a replay, and only that: per event-time bucket (an hour to start with,
doubled with neighbours merged past ``max_buckets``, as the replay's series) and candidate,
the sums of RBO and overlap@k (:data:`service.quality.over_time.AGREEMENT_FIELDS`) and, per
question (:func:`service.quality.over_time.question_key`), its results and RBO sum. Its
:meth:`AgreementTrend.series` has the shape of the replay series' report, so
:func:`service.quality.over_time.over_time` gives serve the replay's verdict on the same
results: the run of consecutive points most clearly below the points before it, by the
paired t-test on per-question mean RBOs, beyond noise when ``p < level / runs tested``
(Bonferroni over the runs scanned; ``level`` 0.05; the module docstring of
:mod:`service.quality.over_time` gives its measured false-alarm rate). The verdict is worked
out again each time a result opens a new bucket (an hour of event time: a live stream's
hour), on the buckets before it, and when the input ends; never on a read.

Bounded state: at most ``max_buckets`` buckets, and at most ``max_questions`` question cells
per candidate. Past that, the questions are *sampled by key* (a question is kept when its
key's first 8 hex digits, as a number, are below a threshold, halved each time the cells
would exceed the bound): a question is kept or dropped at every point together, so the
pairs of the test stay pairs, and the test runs on a random subset of questions (less
power, the same false-alarm level). ``sampled`` in the verdict says the share kept.

A live verdict is re-tested every hour, so over the life of a service it is looked at many
times; each look holds the replay's level, the looks together are not bounded by it
(consecutive looks share all but an hour of their data): in steady 3-day streams
(:mod:`benchmarks.shadow_trend_alarms`) 27 of 400 were beyond noise at some look. So a drop
*stands* (:func:`stands`: the gauge, the alert, "RBO lower since") only when, at
:data:`CONFIRM_LOOKS` (3) consecutive looks, the run chosen among those reaching the latest
tested point is beyond noise and its last quarter is lower than the points before the run
too (:meth:`AgreementTrend._recent`), at the Bonferroni level of the scan; looks that
re-judge the same last tested point count once. Once standing, a drop stays while the run
reaching the latest point is beyond noise and its last quarter lower at ``level`` (0.05:
hysteresis, s46 review: at ~20 questions an hour by day and ~3 at night a lasting drop's
last quarter, on 20-40 pairs, missed ``level / tests`` at single looks and the alert stood,
fell and stood 3-5 times a seed; now it stands without a gap, and steady streams stand at 0
of 400). The two start conditions are the review's (s45, blocker 3): the paired t
is blind to dilution, so after a drop recovered the run from its start to the latest point
could stay beyond noise on the recovered points and stand again (5 of 68 looks after the
recovery in its scenario; 0 now, the gauge lifting within 8 h of the recovery, once the
last quarter of the run from the drop holds no dropped hour; 4 h before the hysteresis);
and a drop
on some questions only, lasting, lost the lowest p to runs ending earlier by noise (every
run over it has about the same t), so it stood at 0 of 68 looks once a day old (68 of 68
now). A drop that ended before the latest point is shown as past.

What a look's verdict depends on, exactly: the shadow results *counted* before it (each in
its event-time bucket at the width then; a look judges the buckets before the one whose
first result set it off), which questions the sample keeps (set by the order in which
distinct questions came, once the cells pass the bound; ``sampled`` says the share),
``min_n`` and ``level``; ``looks`` and ``stands`` depend on the looks before it too. Which
results are counted depends on more than the log: on the candidate's ``sample_rate``
(deterministic per event id: a replay samples the same events) and on what a live service
did not finish: events skipped for the rate limit, a full queue, the CPU budget or an open
breaker (``GET /v1/shadow``'s skips), failed calls, and results stamped beyond
``future_tolerance_s`` ahead of the wall clock. Two services on the same log give the same
verdicts only when they counted the same results. A *late* result (its hour already judged:
a later hour had opened) is counted in its own hour, whose checkpoint text is encoded again
once; the next look judges it, the looks already made are not made again, so ``looks`` (when
a drop first stands) can differ from a run that had it in time, and that next look's verdict
cannot. After :meth:`AgreementTrend.close_input`, the ``sustained`` figures are the replay's
(:func:`service.quality.over_time.over_time` on :meth:`AgreementTrend.series`) on the same
counted results while no question is sampled out; ``looks``, ``stands`` and ``recent`` are
serve's own. A restart from a checkpoint goes on as the uninterrupted run, look for look
(``tests/service/shadow/test_trend_checkpoint.py``: a process killed with SIGKILL).

>>> from datetime import UTC, datetime
>>> trend = AgreementTrend(bucket_s=3600.0)
>>> t0 = datetime(2026, 11, 24, 0, tzinfo=UTC).timestamp()
>>> trend.add(t0, "tfidf", 0.5, 0.4, "card lost?")
True
>>> trend.add(t0 + 60, "tfidf", 0.7, None, "Card  lost?")  # the same question, same hour
False
>>> bucket = trend.series()["buckets"][0]
>>> bucket["agreement"]["tfidf"]["n"], list(bucket["agreement_questions"]["tfidf"].values())
(2, [[2, 1.2]])
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any

from service.quality.over_time import (
    AGREEMENT_FIELDS,
    LEVEL,
    MIN_N,
    paired_lower,
    question_key,
    sustained_agreement,
)
from service.state import EncodedObject, encoded_object, json_text

__all__ = ["AgreementTrend", "CONFIRM_LOOKS", "stands", "sustained_line"]

_VERSION = 1
_LOG = logging.getLogger("goldwatch")
#: Key space of the question sample (the first 8 hex digits of a :func:`question_key`).
_KEY_SPACE = 16**8
#: Consecutive hourly looks a drop must be beyond noise, reach the latest judged point and
#: have its last quarter lower at before it stands (gauge 1, the alert, "RBO lower since"):
#: the live false-alarm rate (:mod:`benchmarks.shadow_trend_alarms`: 400 steady 3-day
#: streams) falls from 27 of 400 streams beyond noise at some look to 9 at 1 look, 0 of 400
#: at 2, 3, 4 and 6 (a look counting only on a later tested point, s46; before it N=2: 1,
#: N=3: 1). The hysteresis does not change when a drop first stands.
CONFIRM_LOOKS = 3


class AgreementTrend:
    """Shadow agreement per event-time bucket and candidate, and its sustained verdict (see
    the module docstring). Not thread-safe: the shadow stage calls it on the pipeline's
    thread.

    Args:
        bucket_s: starting bucket width in seconds (> 0; the replay's series: 3600).
        max_buckets: most buckets kept (>= 2; past it the width doubles).
        max_questions: most question cells kept per candidate (>= 1; past it, questions are
            sampled by key).
        min_n: fewest results a point is drawn on and distinct questions a point (or pairs a
            run) is tested on (>= 2; the replay's ``analytics.quality_min_class``).
        level: the verdict's family-wise false-alarm rate per look, in (0, 1).
        confirm_looks: consecutive looks a drop reaching the latest judged point must be
            beyond noise at before it stands (>= 1; :data:`CONFIRM_LOOKS`).
        clock: wall clock (Unix seconds); a result stamped more than ``future_tolerance_s``
            ahead of it is not counted (one skewed clock must not open an hour far ahead
            and stop the hourly re-judging), as the drift windows' future events.
        future_tolerance_s: seconds a result may be stamped ahead of ``clock``
            (``analytics.drift.future_tolerance_s``).

    Raises:
        ValueError: a bound out of range.
    """

    def __init__(self, bucket_s: float = 3600.0, max_buckets: int = 500,
                 max_questions: int = 100_000, min_n: int = MIN_N,
                 level: float = LEVEL, confirm_looks: int = CONFIRM_LOOKS,
                 clock: Callable[[], float] = time.time,
                 future_tolerance_s: float = 60.0) -> None:  # fmt: skip
        if (bucket_s <= 0 or max_buckets < 2 or max_questions < 1 or min_n < 2
                or not 0.0 < level < 1.0 or confirm_looks < 1):  # fmt: skip
            raise ValueError("need bucket_s > 0, max_buckets >= 2, max_questions >= 1, "
                             "min_n >= 2, 0 < level < 1 and confirm_looks >= 1")  # fmt: skip
        self.confirm_looks = confirm_looks
        self._clock, self.future_tolerance_s = clock, future_tolerance_s
        #: results not counted: stamped beyond ``future_tolerance_s`` ahead of the clock
        self.future = 0
        self._start_bucket_s = self.bucket_s = float(bucket_s)
        self.max_buckets, self.max_questions = max_buckets, max_questions
        self.min_n, self.level = min_n, level
        #: bucket key → candidate → [sums (AGREEMENT_FIELDS), {question key: [n, RBO sum]}]
        self._buckets: dict[int, dict[str, list[Any]]] = {}
        self._cells: dict[str, int] = {}  # candidate → question cells held
        self._threshold: dict[str, int] = {}  # candidate → keys below it are kept
        self._latest: int | None = None  # the latest bucket key (current width) a result fell in
        self._dirty = False
        self._verdicts: dict[str, dict[str, Any] | None] = {}
        #: bucket key → the JSON text of ``[key, bucket]`` in :meth:`state`, kept while the
        #: bucket is unchanged; a bucket with a text is *frozen* (the last snapshot holds it):
        #: a change copies it first (:meth:`_thaw`), so a snapshot never changes after it
        self._texts: dict[int, str] = {}

    def add(self, timestamp: float, candidate: str, rbo: float | None,
            overlap: float | None, question: str) -> bool:  # fmt: skip
        """Count one finished shadow result at its event's ``timestamp`` (Unix seconds;
        non-finite, or neither measure defined: ignored), as
        :meth:`service.jobs.series.TimeSeries.add_agreement`. Returns True when it opened a
        bucket later than every bucket before (the verdict was then worked out again, on
        the buckets before it)."""
        if not math.isfinite(timestamp) or (rbo is None and overlap is None):
            return False
        if timestamp > self._clock() + self.future_tolerance_s:
            self.future += 1
            return False
        key = math.floor(timestamp / self.bucket_s)
        opened = self._latest is None or key > self._latest
        if opened and self._dirty:
            self.refresh()  # the buckets before this result's: a closed hour's verdict
        bucket = self._bucket(timestamp)
        bucket = self._thaw(math.floor(timestamp / self.bucket_s))
        cell = bucket.setdefault(candidate, [[0.0] * len(AGREEMENT_FIELDS), {}])
        sums, questions = cell
        if rbo is not None:
            _add(sums, (1.0, rbo, rbo * rbo, 0.0, 0.0, 0.0))
            qkey = question_key(question)
            if self._kept(candidate, qkey):
                if qkey not in questions:
                    questions[qkey] = [0.0, 0.0]
                    self._cells[candidate] = self._cells.get(candidate, 0) + 1
                questions[qkey][0] += 1.0
                questions[qkey][1] += rbo
                while self._cells[candidate] > self.max_questions:
                    self._halve(candidate)
        if overlap is not None:
            _add(sums, (0.0, 0.0, 0.0, 1.0, overlap, overlap * overlap))
        key = math.floor(timestamp / self.bucket_s)  # _bucket may have doubled the width
        self._latest = key if self._latest is None else max(self._latest, key)
        self._dirty = True
        return opened

    def _thaw(self, key: int) -> dict[str, list[Any]]:
        """Bucket ``key``, to be changed: a copy in its place when a snapshot holds it (its
        text is dropped: the next :meth:`state` encodes it again)."""
        bucket = self._buckets[key]
        if self._texts.pop(key, None) is not None:
            bucket = self._buckets[key] = {
                name: [list(sums), {q: list(v) for q, v in questions.items()}]
                for name, (sums, questions) in bucket.items()
            }  # fmt: skip
        return bucket

    def _kept(self, candidate: str, qkey: str) -> bool:
        return int(qkey[:8], 16) < self._threshold.get(candidate, _KEY_SPACE)

    def _halve(self, candidate: str) -> None:
        """Keep half as many questions of ``candidate``: drop its cells above the new
        threshold, at every point."""
        self._threshold[candidate] = self._threshold.get(candidate, _KEY_SPACE) // 2
        held = 0
        for key in list(self._buckets):
            if candidate not in self._buckets[key]:
                continue
            cell = self._thaw(key)[candidate]
            cell[1] = {q: v for q, v in cell[1].items() if self._kept(candidate, q)}
            held += len(cell[1])
        self._cells[candidate] = held

    def _bucket(self, timestamp: float) -> dict[str, list[Any]]:
        key = math.floor(timestamp / self.bucket_s)
        while key not in self._buckets and len(self._buckets) >= self.max_buckets:
            self._coarsen()
            key = math.floor(timestamp / self.bucket_s)
        return self._buckets.setdefault(key, {})

    def _coarsen(self) -> None:
        """Double the bucket width, merging neighbours (as the replay's series)."""
        self.bucket_s *= 2
        merged: dict[int, dict[str, list[Any]]] = {}
        for key, bucket in sorted(self._buckets.items()):
            target = merged.setdefault(key // 2, {})
            for name, (sums, questions) in bucket.items():
                cell = target.setdefault(name, [[0.0] * len(AGREEMENT_FIELDS), {}])
                _add(cell[0], sums)
                for q, (n, total) in questions.items():
                    into = cell[1].setdefault(q, [0.0, 0.0])
                    into[0] += n
                    into[1] += total
        self._buckets = merged
        self._texts = {}  # every bucket is new (the merged ones hold fresh containers)
        if self._latest is not None:
            self._latest //= 2
        self._cells = {name: sum(len(b[name][1]) for b in merged.values() if name in b)
                       for name in self._cells}  # fmt: skip

    def series(self, before: int | None = None) -> dict[str, Any]:
        """The buckets (those with a key below ``before``, when given) in the shape of
        :meth:`service.jobs.series.TimeSeries.report` that
        :func:`service.quality.over_time.over_time` reads: ``{"bucket_s",
        "quality_partial": False, "buckets": [{"start" (Unix s), "agreement": {candidate:
        {field: sum}}, "agreement_questions": {candidate: {key: [results, RBO sum]}}}]}``."""
        return {
            "bucket_s": self.bucket_s,
            "quality_partial": False,
            "buckets": [
                {"start": key * self.bucket_s,
                 "agreement": {name: _sums(cell[0]) for name, cell in sorted(bucket.items())},
                 "agreement_questions": {
                     name: {q: [int(n), total] for q, (n, total) in sorted(cell[1].items())}
                     for name, cell in sorted(bucket.items()) if cell[1]}}
                for key, bucket in sorted(self._buckets.items())
                if before is None or key < before
            ],
        }  # fmt: skip

    def refresh(self) -> None:
        """Work the verdict out again on the buckets closed so far (every bucket before the
        latest one a result fell in) and, once the input has ended (:meth:`close_input`),
        on all of them; a no-op when nothing was added since."""
        if not self._dirty:
            return
        self._dirty = False
        before = self._verdicts
        self._verdicts = self._judge()
        for name, verdict in self._verdicts.items():  # say when a verdict starts or lifts
            line = sustained_line(verdict)
            if stands(verdict) != stands(before.get(name)):
                through = _when(verdict["through"]) if verdict and verdict.get("through") else "-"
                _LOG.warning("shadow candidate %r, data through %s: %s", name, through,
                             line or "no sustained RBO drop stands any more")  # fmt: skip

    def close_input(self) -> None:
        """The input ended (a replay's, or a live service's finite input): the verdict on
        every bucket, the latest included."""
        self._dirty = True
        self.refresh()

    def _judge(self) -> dict[str, dict[str, Any] | None]:
        """Each candidate's verdict on every bucket held: the replay's ``sustained``
        (:func:`service.quality.over_time.sustained_agreement`, equal to
        :func:`~service.quality.over_time.over_time`'s on :meth:`series`) with ``latest``,
        the run chosen among those reaching the last tested point (a lasting drop on some
        questions can lose the replay's lowest p, by noise, to a run ending earlier); when
        that one is beyond noise, whether its last quarter is lower too (:meth:`_recent`),
        and when it is, the verdict's figures are that run's (``to_end`` True): the drop
        this look confirms. The last quarter is held to the run's Bonferroni level to start
        standing and to ``level`` once standing (hysteresis; review of s45-shadowlive, s46: at
        ~20 questions an hour by day and 3 at night the last quarter has 20-40 pairs, and at
        ``level / tests`` ~ 4e-5 a lasting drop missed single looks and the alert flapped 3-5
        times a seed; it still needs the run reaching the latest point beyond noise, so a
        recovery lifts it). A look counts toward ``looks`` only when the last tested point
        moved on since the look before (a night hour below ``min_n`` re-judges the same
        point; it keeps the count, adds nothing); a look that does not confirm resets it."""
        keys = sorted(self._buckets)
        series = {"bucket_s": self.bucket_s, "buckets": [  # a view: the cells not copied
            {"start": key * self.bucket_s,
             "agreement": {name: _sums(cell[0]) for name, cell in self._buckets[key].items()},
             "agreement_questions": {name: cell[1] for name, cell in self._buckets[key].items()}}
            for key in keys]}  # fmt: skip
        through = (keys[-1] + 1) * self.bucket_s if keys else None
        verdicts: dict[str, dict[str, Any] | None] = {}
        for name in sorted({name for bucket in self._buckets.values() for name in bucket}):
            width, run = sustained_agreement(series, name, min_n=self.min_n, level=self.level,
                                             latest=True)  # fmt: skip
            if run is None:
                verdicts[name] = None
                continue
            verdict = {**run, "bucket_s": width, "through": through,
                       "sampled": self._threshold.get(name, _KEY_SPACE) / _KEY_SPACE}  # fmt: skip
            latest = run.get("latest")
            was = self._verdicts.get(name) or {}
            holding = bool(was.get("stands"))
            current = bool(latest and latest["beyond_noise"])
            if latest and current:
                verdict["recent"] = self._recent(name, latest, width,
                                                 self.level if holding else None)  # fmt: skip
                current = verdict["recent"]["lower"]
                if current:  # the drop now: from its start to the latest tested point
                    verdict.update(latest, to_end=True)
            tested_end = float(latest["end"]) if latest else None
            moved = tested_end is None or tested_end != was.get("tested_end")
            looks = int(was.get("looks", 0)) + (1 if moved else 0) if current else 0
            verdicts[name] = {**verdict, "tested_end": tested_end, "looks": looks,
                              "stands": looks >= self.confirm_looks}  # fmt: skip
        return verdicts

    def _recent(self, name: str, run: Mapping[str, Any], width: float,
                threshold: float | None = None) -> dict[str, Any]:  # fmt: skip
        """Whether the last quarter of a run reaching the latest point is lower than the
        points before the run too (review of s45, blocker 3: the paired t is blind to
        dilution, so after a drop recovers the run from its start to the latest point can
        stay beyond noise, the recovered points diluting it; the last part of such a run is
        the recovered one). The last quarter: ``[start + floor(3 m / 4) · width, end)``, ``m =
        (end − start) / width`` points in the run's span (all of a 1-point run, the last
        point of 2 to 4; a quarter, not a half: in the review's scenario a half kept a
        24-h drop standing 14 h into its recovery, a quarter lifts it within 4 h, 8 h with
        the hysteresis, and the lasting drop stands as often); each
        question's mean there against its mean before the run, by the paired t-test
        (:func:`service.quality.over_time.paired_lower`): lower when ``min_n`` questions
        pair, the mean difference is below 0 and ``p`` is below ``threshold`` (default the
        run's own, ``level / runs tested``; a drop already standing passes ``level``, the
        hysteresis of :meth:`_judge`). Returns ``{"start" (Unix s), "questions" (pairs),
        "difference" (mean RBO difference), "p_value", "lower"}``."""
        start, end = float(run["start"]), float(run["end"])
        mid = start + math.floor(round((end - start) / width) * 3 / 4) * width
        before: dict[str, list[float]] = {}
        recent: dict[str, list[float]] = {}
        for key, bucket in self._buckets.items():
            at, cell = key * self.bucket_s, bucket.get(name)
            target = before if at < start else recent if mid <= at < end else None
            if cell is None or target is None:
                continue
            for q, (n, total) in cell[1].items():
                into = target.setdefault(q, [0.0, 0.0])
                into[0] += n
                into[1] += total
        pairs, difference, p_value = paired_lower(
            {q: t / n for q, (n, t) in before.items() if n},
            {q: t / n for q, (n, t) in recent.items() if n},
        )
        limit = float(run["threshold"]) if threshold is None else threshold
        lower = pairs >= self.min_n and difference < 0 and p_value < limit
        return {"start": mid, "questions": pairs,
                "difference": None if math.isnan(difference) else difference,
                "p_value": p_value, "lower": bool(lower)}  # fmt: skip

    def verdicts(self) -> dict[str, dict[str, Any] | None]:
        """Each candidate's latest verdict (:meth:`refresh`): ``None`` when no run of points
        was tested yet, else the replay's ``sustained`` dict (``found``, ``beyond_noise``,
        ``p_value``, ``tests``, ``threshold``; when ``found``: ``start``, ``end``,
        ``to_end``, ``points``, ``questions``, ``question_rbo``, ``before_question_rbo``,
        ``test``) with ``bucket_s`` (the point width, s), ``through`` (the end of the data
        judged, Unix s), ``sampled`` (the share of questions kept, 1.0: all), ``looks``
        (consecutive looks the drop was beyond noise, reached the latest judged point and
        had its last quarter lower; a look re-judging the same last tested point, as a night
        hour below ``min_n`` questions, keeps the count without adding), ``tested_end`` (the
        end of the last tested point, Unix s, or ``None``) and ``stands`` (``looks >=
        confirm_looks``: the gauge, the alert, "RBO lower since"; :func:`stands`)."""
        return dict(self._verdicts)

    def state(self) -> EncodedObject:
        """JSON-able state (``version`` 1): the buckets, their width, the sample and the
        verdicts (so a restarted service shows the verdict it had), with its JSON text
        (:class:`service.state.EncodedObject`: the checkpoint writes that text).

        Incremental: each bucket's text is encoded once and kept while the bucket does not
        change (:attr:`_texts`), so a checkpoint encodes only the buckets changed since the
        last one (the open hour's; a late result's closed hour, once; every bucket after
        the width doubles or the question sample halves) and joins the kept texts: at the
        bound (500 hourly buckets × 200 questions) 2 MB a checkpoint, from 0.23 s to a few
        ms (``python -m benchmarks.bench_shadow_trend``). The dictionary holds the buckets
        themselves, not copies: a bucket a snapshot holds is copied before it changes
        (:meth:`_thaw`), so a snapshot stays as it was taken."""
        keys = sorted(self._buckets)
        texts = []
        for key in keys:
            text = self._texts.get(key)
            if text is None:
                text = self._texts[key] = json_text([key, self._buckets[key]])
            texts.append(text)
        members = {
            "version": _VERSION,
            "start_bucket_s": self._start_bucket_s,
            "bucket_s": self.bucket_s,
            "latest": self._latest,
            "threshold": dict(sorted(self._threshold.items())),
            "buckets": [[key, self._buckets[key]] for key in keys],
            "verdicts": self._verdicts,
        }
        return encoded_object(members, {"buckets": "[" + ",".join(texts) + "]"})

    def load(self, state: Any, candidates: Any = None) -> None:
        """Take :meth:`state`'s output (``None``, another version or bucket width: start
        empty). With ``candidates`` (the configured names), another candidate's buckets,
        sample and verdict are dropped (a removed candidate must not keep its alert). The
        latest bucket is the newest one held (a saved ``latest`` is not trusted)."""
        if (not isinstance(state, Mapping) or state.get("version") != _VERSION
                or state.get("start_bucket_s") != self._start_bucket_s):  # fmt: skip
            return
        self.bucket_s = float(state["bucket_s"])
        keep = (lambda name: True) if candidates is None else set(candidates).__contains__
        self._threshold = {str(k): int(v) for k, v in (state.get("threshold") or {}).items()
                           if keep(str(k))}  # fmt: skip
        buckets = {
            int(key): {name: [[float(v) for v in sums],
                              {q: [float(n), float(t)] for q, (n, t) in questions.items()}]
                       for name, (sums, questions) in bucket.items() if keep(name)}
            for key, bucket in state.get("buckets", [])
        }  # fmt: skip
        self._buckets = {key: bucket for key, bucket in buckets.items() if bucket}
        self._texts = {}
        self._latest = max(self._buckets) if self._buckets else None
        self._cells = {}
        for bucket in self._buckets.values():
            for name, cell in bucket.items():
                self._cells[name] = self._cells.get(name, 0) + len(cell[1])
        self._verdicts = {name: verdict for name, verdict in (state.get("verdicts") or {}).items()
                          if keep(name)}  # fmt: skip
        self._dirty = bool(self._buckets)  # the latest bucket's results were not judged yet


def _add(target: list[float], values: Any) -> None:
    for i, value in enumerate(values):
        target[i] += value


def _sums(values: list[float]) -> dict[str, float | int]:
    return {name: int(v) if name in ("n", "n_overlap") else v
            for name, v in zip(AGREEMENT_FIELDS, values, strict=True)}  # fmt: skip


def _when(unix_s: float) -> str:
    return datetime.fromtimestamp(unix_s, UTC).strftime("%m-%d %H:%M")


def stands(verdict: Mapping[str, Any] | None) -> bool:
    """Whether a drop stands now: to start, at :data:`CONFIRM_LOOKS` (the trend's
    ``confirm_looks``) consecutive looks on a later tested point each, the run reaching the
    latest tested point was beyond noise and its last quarter lower than the points before
    the run at the run's Bonferroni level (``level / runs tested``); once standing, it stays
    while at each look that run is beyond noise and its last quarter lower at ``level``
    (hysteresis, :meth:`AgreementTrend._judge`). ``False`` for ``None``."""
    return bool(verdict and verdict.get("found") and verdict.get("beyond_noise")
                and verdict.get("to_end") and verdict.get("stands"))  # fmt: skip


def sustained_line(verdict: Mapping[str, Any] | None) -> str | None:
    """The status page's one line on a candidate's sustained verdict, ``None`` while none
    is beyond noise: while it stands (:func:`stands`) ``"RBO lower since 11-24 20:00: 0.602
    against 0.638 before, p 1.3e-18 < 0.05/N (paired t-test on per-question mean RBOs, 40
    questions)"``; a drop that ended (recovered) before the latest judged point: ``"RBO was
    lower from 11-24 20:00 to 11-25 04:00: ..."``; one not yet confirmed: ``None``.

    >>> verdict = {"found": True, "beyond_noise": True, "start": 1795550400.0,
    ...     "end": 1795579200.0, "to_end": True, "stands": True,
    ...     "question_rbo": 0.6021, "before_question_rbo": 0.6381, "p_value": 1.3e-18,
    ...     "threshold": 0.05 / 1000, "tests": 1000, "questions": 40, "sampled": 1.0,
    ...     "test": "paired t-test on per-question mean RBOs"}
    >>> sustained_line(verdict)[:74]
    'RBO lower since 11-24 20:00: 0.602 against 0.638 before, p 1.3e-18 < 0.05/'
    >>> sustained_line({**verdict, "to_end": False})[:50]
    'RBO was lower from 11-24 20:00 to 11-25 04:00: 0.6'
    """
    if not verdict or not verdict.get("found") or not verdict.get("beyond_noise"):
        return None
    if stands(verdict):
        when = f"RBO lower since {_when(verdict['start'])}"
    elif not verdict.get("to_end"):
        when = f"RBO was lower from {_when(verdict['start'])} to {_when(verdict['end'])}"
    else:
        return None
    level = verdict["threshold"] * verdict["tests"]
    sampled = verdict.get("sampled", 1.0)
    sample = f", {sampled:.0%} of questions sampled" if sampled < 1.0 else ""
    return (f"{when}: {verdict['question_rbo']:.3f} "
            f"against {verdict['before_question_rbo']:.3f} before, p "
            f"{verdict['p_value']:.2g} < {level:g}/{verdict['tests']} ({verdict['test']}, "
            f"{verdict['questions']} questions{sample})")  # fmt: skip
