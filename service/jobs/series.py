"""Per-bucket counts of a replay over event time, for the "over time" charts of the report.

:class:`TimeSeries` folds each batch's events into fixed buckets of event time (``bucket_s``,
default one hour): per bucket, question counts by language and by topic (bounded label
values, as exported to Prometheus), answers and refusals, production's live quality on known
questions (``known``: the scores the quality stage annotates, :mod:`service.quality.stage`)
and each shadow candidate's agreement with production (``agreement``: RBO and overlap@k of
its finished results, by their event's time; :meth:`TimeSeries.observe_shadow`, a shadow
listener). Quality and agreement are kept as sums (and sums of squares), so buckets add up,
and per question too (known: events and hits per gold row; agreement: results and RBO sum per
:func:`question_key`), so a question asked again counts once in the test of a point;
:mod:`service.quality.over_time` regroups them into points wide enough to mean something and
names the worst. When the buckets exceed
``max_buckets`` the bucket width doubles and neighbours merge, so a long replay stays bounded
(at most ``max_buckets`` buckets, each at most ``max_labels`` labels + ``other``).

It is a pipeline stage (``"series"``, last in a replay's pipeline): its counts are
checkpointed with the other stages' state, so a replay resumed from ``--state`` reports the
buckets of every run on that state file, as its totals do.

>>> from datetime import UTC, datetime
>>> series = TimeSeries(bucket_s=3600)
>>> t = datetime(2026, 11, 29, 10, 5, tzinfo=UTC).timestamp()
>>> series.add(t, "en", "fees", refused=False)
>>> series.add(t + 3600, "hi-Latn", "exams", refused=True)
>>> [(b["languages"], b["answers"], b["refused"]) for b in series.report()["buckets"]]
[({'en': 1}, 1, 0), ({'hi-Latn': 1}, 1, 1)]
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from service.pipeline import Batch
from service.quality.over_time import AGREEMENT_FIELDS, KNOWN_FIELDS, question_key
from service.shadow.runner import ShadowResult

__all__ = ["TimeSeries", "question_key"]

_VERSION = 3

OTHER = "other"


def _empty() -> dict[str, Any]:
    return {"languages": Counter(), "topics": Counter(), "answers": 0, "refused": 0,
            "known": [0.0] * len(KNOWN_FIELDS), "agreement": {}, "known_q": {},
            "agreement_q": {}}  # fmt: skip


def _add_question(cells: dict[str, list[float]], key: str, value: float) -> None:
    cell = cells.setdefault(key, [0.0, 0.0])
    cell[0] += 1.0
    cell[1] += value


def _merge_questions(target: dict[str, list[float]], source: Mapping[str, Sequence[float]]
                     ) -> None:  # fmt: skip
    for key, (n, total) in source.items():
        cell = target.setdefault(key, [0.0, 0.0])
        cell[0] += n
        cell[1] += total


def _add_into(target: list[float], values: Sequence[float]) -> None:
    for i, value in enumerate(values):
        target[i] += value


def _sums(values: Sequence[float], fields: Sequence[str]) -> dict[str, float | int]:
    """The sums as a dict, counts (``n``, ``hit``, ``n_overlap``) as ints."""
    return {name: int(v) if name in ("n", "hit", "n_overlap") else v
            for name, v in zip(fields, values, strict=True)}  # fmt: skip


class TimeSeries:
    """Counts per event-time bucket (see the module docstring).

    Args:
        bucket_s: starting bucket width in seconds (> 0); doubles when needed.
        max_buckets: most buckets kept (>= 2).
        max_labels: most distinct labels per dimension (the rest count as ``other``).

    Raises:
        ValueError: a bound out of range.
    """

    name = "series"
    keeps_counts = True  # reads the annotations only (see service.pipeline.Stage)
    reads_records = False  # timestamps and annotations only (see service.pipeline.Stage)

    def __init__(self, bucket_s: float = 3600.0, max_buckets: int = 500, max_labels: int = 40
                 ) -> None:  # fmt: skip
        if bucket_s <= 0 or max_buckets < 2 or max_labels < 1:
            raise ValueError("need bucket_s > 0, max_buckets >= 2, max_labels >= 1")
        self.bucket_s = float(bucket_s)
        self.max_buckets, self.max_labels = max_buckets, max_labels
        self._start_bucket_s = self.bucket_s
        self._buckets: dict[int, dict[str, Any]] = {}
        self._labels: dict[str, set[str]] = {"languages": set(), "topics": set()}
        #: True when restored from a snapshot older than version 3: its quality was dropped.
        self.quality_partial = False

    def process(self, batch: Batch) -> None:
        """Count the batch's events (:meth:`add_batch`) by their event time."""
        self.add_batch([e.timestamp.timestamp() for e in batch.events], batch.annotations)

    def state_snapshot(self) -> dict[str, Any]:
        """The buckets, their width and the labels seen (JSON-able, ``version`` 3)."""
        return {
            "version": _VERSION,
            "quality_partial": self.quality_partial,
            "start_bucket_s": self._start_bucket_s,
            "bucket_s": self.bucket_s,
            "labels": {dim: sorted(seen) for dim, seen in self._labels.items()},
            "buckets": [
                [key, dict(b["languages"]), dict(b["topics"]), b["answers"], b["refused"],
                 list(b["known"]), {name: list(v) for name, v in sorted(b["agreement"].items())},
                 {q: list(v) for q, v in sorted(b["known_q"].items())},
                 {name: {q: list(v) for q, v in sorted(cells.items())}
                  for name, cells in sorted(b["agreement_q"].items())}]
                for key, b in sorted(self._buckets.items())
            ],
        }  # fmt: skip

    def restore(self, state: Any) -> None:
        """Take the buckets of :meth:`state_snapshot` (``None``, an unknown version, or one
        started at another bucket width: start empty). A version-1 or -2 snapshot (from before
        quality and agreement were kept per question) restores its counts without them: its
        buckets then have no known question nor shadow result, and :attr:`quality_partial`
        (in :meth:`report`) says the run's quality covers only the runs since."""
        if (not isinstance(state, dict) or state.get("version") not in (1, 2, _VERSION)
                or state.get("start_bucket_s") != self._start_bucket_s):  # fmt: skip
            return
        self.bucket_s = float(state["bucket_s"])
        self._labels = {dim: set(state["labels"].get(dim, ())) for dim in self._labels}
        self._buckets = {}
        for key, languages, topics, answers, refused, *rest in state["buckets"]:
            bucket = _empty()
            bucket.update(languages=Counter(languages), topics=Counter(topics),
                          answers=int(answers), refused=int(refused))  # fmt: skip
            if len(rest) == 4:  # version 3
                bucket["known"] = [float(v) for v in rest[0]]
                bucket["agreement"] = {name: [float(v) for v in values]
                                       for name, values in rest[1].items()}  # fmt: skip
                bucket["known_q"] = {q: [float(v) for v in values]
                                     for q, values in rest[2].items()}  # fmt: skip
                bucket["agreement_q"] = {
                    name: {q: [float(v) for v in values] for q, values in cells.items()}
                    for name, cells in rest[3].items()}  # fmt: skip
            self._buckets[int(key)] = bucket
        self.quality_partial = state["version"] != _VERSION or bool(state.get("quality_partial"))

    def _bucket(self, timestamp: float) -> dict[str, Any]:
        """The bucket of a finite ``timestamp`` (Unix seconds), made (coarsening) if new."""
        key = math.floor(timestamp / self.bucket_s)
        while key not in self._buckets and len(self._buckets) >= self.max_buckets:
            self._coarsen()
            key = math.floor(timestamp / self.bucket_s)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = self._buckets[key] = _empty()
        return bucket

    def add_known(self, timestamp: float, scores: Mapping[str, float], gold_id: str) -> None:
        """Count one scored known question of production at ``timestamp`` (Unix seconds;
        non-finite: ignored): ``scores`` has ``recall`` and ``rr`` in [0, 1] and ``hit`` 0 or
        1 (:func:`service.quality.known.live_scores` at the stage's k); ``gold_id`` the gold
        row it matched (its hits are also kept per row: a row asked again is one question)."""
        if not math.isfinite(timestamp):
            return
        recall, hit, rr = float(scores["recall"]), float(scores["hit"]), float(scores["rr"])
        bucket = self._bucket(timestamp)
        _add_into(bucket["known"], (1.0, recall, hit, rr, recall**2, rr**2))
        _add_question(bucket["known_q"], gold_id, hit)

    def add_agreement(self, timestamp: float, candidate: str, rbo: float | None,
                      overlap: float | None, question: str) -> None:  # fmt: skip
        """Count one shadow result of ``candidate`` at its event's ``timestamp`` (Unix
        seconds; non-finite, or neither measure defined: ignored); ``rbo`` and ``overlap`` in
        [0, 1] or ``None`` (undefined); ``question`` the event's (its RBO is also kept per
        :func:`question_key`: a question asked again is one question)."""
        if not math.isfinite(timestamp) or (rbo is None and overlap is None):
            return
        bucket = self._bucket(timestamp)
        cells = bucket["agreement"]
        cell = cells.setdefault(candidate, [0.0] * len(AGREEMENT_FIELDS))
        if rbo is not None:
            _add_into(cell, (1.0, rbo, rbo**2, 0.0, 0.0, 0.0))
            questions = bucket["agreement_q"].setdefault(candidate, {})
            _add_question(questions, question_key(question), rbo)
        if overlap is not None:
            _add_into(cell, (0.0, 0.0, 0.0, 1.0, overlap, overlap**2))

    def observe_shadow(self, result: ShadowResult) -> None:
        """A shadow stage listener (:class:`~service.shadow.stage.ShadowStage`'s
        ``listeners``): fold a finished result's RBO and overlap@k in by its event's time; a
        failed call, or one without agreement (production returned nothing), is not counted.
        A replay's shadow stage is synchronous, so its results come in event order and the
        same input gives the same sums."""
        if result.error is not None or result.agreement is None:
            return
        agreement = result.agreement
        self.add_agreement(result.timestamp.timestamp(), result.candidate, agreement.rbo,
                           agreement.overlap, result.question)  # fmt: skip

    def _label(self, dimension: str, value: str | None) -> str:
        label = value or "und"
        seen = self._labels[dimension]
        if label not in seen:
            if len(seen) >= self.max_labels:
                return OTHER
            seen.add(label)
        return label

    def add(self, timestamp: float, language: str | None, topic: str | None,
            refused: bool | None, topic_judged: bool = True) -> None:  # fmt: skip
        """Count one event (Unix seconds; ``refused`` ``None``: no answer; ``topic_judged``
        false: the topic stage gave it no topic, no gold row being written in its language,
        so it is in no topic's count); a non-finite timestamp is ignored."""
        if not math.isfinite(timestamp):
            return
        bucket = self._bucket(timestamp)
        bucket["languages"][self._label("languages", language)] += 1
        if topic_judged:
            bucket["topics"][self._label("topics", topic)] += 1
        if refused is not None:
            bucket["answers"] += 1
            bucket["refused"] += int(refused)

    def add_batch(self, timestamps: Sequence[float], annotations: Sequence[Mapping[str, Any]]
                  ) -> None:  # fmt: skip
        """Count a batch: ``annotations[i]`` gives ``language_label`` (else ``language``),
        ``topic`` (none counted with ``topic_unjudged_language``), ``refused`` and ``known``
        (its production ``scores``, when scored).

        What :meth:`add` and :meth:`add_known` do per event, with the bucket of the previous
        event kept while the next falls in it too (a batch's events are mostly of one hour;
        only a new bucket can coarsen the others) and a label already seen taken as it is:
        the same counts, in the same order (a week of 50,000 events in batches of 500, on a
        loaded machine: 0.8-1.0 against 1.1-1.25 µs an event)."""
        isfinite, floor = math.isfinite, math.floor
        seen_languages, seen_topics = self._labels["languages"], self._labels["topics"]
        width, key, bucket = self.bucket_s, None, None
        for stamp, notes in zip(timestamps, annotations, strict=True):
            if not isfinite(stamp):
                continue
            get = notes.get
            if floor(stamp / width) != key or bucket is None:
                bucket = self._bucket(stamp)  # may coarsen: the width then doubles
                width = self.bucket_s
                key = floor(stamp / width)
            language = get("language_label", get("language")) or "und"
            if language not in seen_languages:
                language = self._label("languages", language)
            bucket["languages"][language] += 1
            if get("topic_unjudged_language") is not True:
                topic = get("topic") or "und"
                if topic not in seen_topics:
                    topic = self._label("topics", topic)
                bucket["topics"][topic] += 1
            refused = get("refused")
            if refused is not None:
                bucket["answers"] += 1
                bucket["refused"] += int(refused)
            known = get("known") or {}
            if known.get("scores") is not None:
                self.add_known(stamp, known["scores"], str(known["gold_id"]))

    def _coarsen(self) -> None:
        """Double the bucket width, merging neighbours."""
        self.bucket_s *= 2
        merged: dict[int, dict[str, Any]] = {}
        for key, bucket in self._buckets.items():
            target = merged.setdefault(key // 2, _empty())
            target["languages"].update(bucket["languages"])
            target["topics"].update(bucket["topics"])
            target["answers"] += bucket["answers"]
            target["refused"] += bucket["refused"]
            _add_into(target["known"], bucket["known"])
            for name, values in bucket["agreement"].items():
                _add_into(target["agreement"].setdefault(name, [0.0] * len(values)), values)
            _merge_questions(target["known_q"], bucket["known_q"])
            for name, cells in bucket["agreement_q"].items():
                _merge_questions(target["agreement_q"].setdefault(name, {}), cells)
        self._buckets = merged

    def report(self) -> dict[str, Any]:
        """``{"bucket_s", "quality_partial", "buckets": [{"start", "languages", "topics",
        "answers", "refused", "known", "agreement", "known_questions",
        "agreement_questions"}]}``, buckets in time order, ``start`` in Unix seconds;
        ``known``: :data:`KNOWN_FIELDS` → sum (``n`` 0: no scored known question),
        ``agreement``: candidate → :data:`AGREEMENT_FIELDS` → sum (candidates by name);
        ``known_questions``: gold id → ``[events, hits]``; ``agreement_questions``:
        candidate → :func:`question_key` → ``[results with an RBO, sum of RBO]`` (keys sorted).
        ``quality_partial``: the quality of runs on a state older than version 3 was
        dropped (:meth:`restore`)."""
        return {
            "bucket_s": self.bucket_s,
            "quality_partial": self.quality_partial,
            "buckets": [
                {"start": key * self.bucket_s, "languages": dict(b["languages"]),
                 "topics": dict(b["topics"]), "answers": b["answers"], "refused": b["refused"],
                 "known": _sums(b["known"], KNOWN_FIELDS),
                 "agreement": {name: _sums(values, AGREEMENT_FIELDS)
                               for name, values in sorted(b["agreement"].items())},
                 "known_questions": {q: [int(n), int(hits)]
                                     for q, (n, hits) in sorted(b["known_q"].items())},
                 "agreement_questions": {
                     name: {q: [int(n), total] for q, (n, total) in sorted(cells.items())}
                     for name, cells in sorted(b["agreement_q"].items())}}
                for key, b in sorted(self._buckets.items())
            ],
        }  # fmt: skip
