"""The shadow stage: offer each event to the candidates, then aggregate finished results.

Per batch, :meth:`ShadowStage.process` offers every event (with its ``language``/``topic``
annotations) to the :class:`~service.shadow.runner.ShadowRunner` — O(log queue_size) per event and
candidate, never waiting — writes ``annotations[i]["shadow"] = {candidate: outcome}``
(``"queued"`` or a skip reason), then drains the results finished since the last batch
(from earlier events: shadow calls are asynchronous) into per-candidate aggregates:

* counters: ``offered``, ``queued``, ``skipped`` by reason, ``completed`` (answered),
  ``errors`` by reason, ``in_flight`` (queued, no result yet). They always add up:
  ``offered = completed + sum(errors) + sum(skipped) + in_flight``, also across restarts:
  a queued event whose result was lost is moved from ``queued`` to a skip reason of
  :data:`LOST_REASONS` — ``interrupted`` (its call had not finished when a clean stop gave
  up waiting, :meth:`ShadowStage.finish`, or was in flight at the last checkpoint before a
  crash, so the restart cannot fold its result in) or ``result_dropped`` (the
  runner's result buffer, ``max_results``, overflowed) — or, displaced from a full queue by
  an event of lower sampling draw, to ``cpu_budget`` or ``queue_full``
  (:meth:`~service.shadow.runner.ShadowRunner.evicted_by`);
* ``compared_from`` and ``compared_to``: the event times (ISO 8601) of the earliest and the
  latest event compared (a result with agreement values), ``None`` before one: the span the
  agreement figures cover (a backlog read under the CPU budget may be compared on a part);
* latency: count, sum and max in seconds (means in the report, values for histograms);
* agreement means of ``overlap``, ``jaccard``, ``rbo``, ``kendall_tau``, ``top1`` (as 0/1)
  and ``citation_recall``, each over the results where it is defined (``counts``);
* the same means per language and per topic (at most ``max_label_values`` each; the rest
  are merged under ``other``). A question with no label is bucketed by why it has none, in
  a bucket never merged (at most two more)
  (:func:`breakdown_label`): :data:`UNJUDGED_LANGUAGE` (topic only: the topic stage gave it
  none, as no gold row is written in its language, ``topic_unjudged_language``) or
  :data:`NOT_DETECTED` (no annotation at all: the detection did not run — topic detection
  off, no topic model, or analytics off). The telemetry exports the same labels
  (:mod:`service.telemetry.shadow`), so "other" on a panel is only ever other labels (a
  review of session 35: every question given no topic was exported as topic ``other``).
  Aggregates saved before session 36 keep their topic bucket ``unknown`` (either reason, not
  told apart) unless it holds exactly their language bucket ``unknown``'s results, which
  is :data:`NOT_DETECTED` (no language stage, the only way a question had no language, and
  then no topic stage either: analytics off);
* ``disagreements``: the ``max_disagreements`` results with the lowest RBO, with both
  rankings, the question (PII-scrubbed upstream), event id and timestamp.

:meth:`ShadowStage.pending_observations` hands the telemetry layer what happened since its
last call (counter increments, latency and agreement values for histograms, runner gauges),
so Prometheus metrics are fed per batch without this module importing prometheus_client.

**Replays** (``synchronous=True``, with a runner built with ``backpressure``): every batch
waits for its own shadow calls and folds their results in the batch's event order (then
candidate order), so the same input gives the same aggregates, disagreements and listener
calls whatever the threads' timing; the report then leaves out the wall-clock latencies
and runner gauges (time-of-run values a replay's report must not carry).

Persistence: the aggregates (not the queues, not in-flight calls) are the stage snapshot, so
means and disagreements survive a restart. A clean stop of the service waits (boundedly) for
the calls queued and running and folds their results in before its last checkpoint
(:meth:`ShadowStage.finish`; a review of session 36: the results that completed after the
consumer's last checkpoint, 544 of 600 on a log read to its end, were never checkpointed);
the calls it gives up, and after a crash those in flight at the last checkpoint and the
results folded in since, are lost, which only thins the sample (they are counted as skipped
``interrupted``). Candidates no longer configured are dropped on restore.
"""

from __future__ import annotations

import heapq
import itertools
import math
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NotRequired

from typing_extensions import TypedDict

from service.pipeline import Batch
from service.shadow.not_compared import NotCompared, count
from service.shadow.runner import SKIP_REASONS, LaneStats, ShadowResult, ShadowRunner
from service.shadow.trend import AgreementTrend
from service.state import encoded_object

__all__ = [
    "BREAKDOWN_METRICS",
    "LOST_REASONS",
    "METRICS",
    "NOT_DETECTED",
    "NO_LABEL",
    "UNJUDGED_LANGUAGE",
    "CandidateReport",
    "CandidateSummary",
    "Disagreement",
    "FEW_RESULTS",
    "ShadowStage",
    "ShadowStageReport",
    "breakdown_label",
    "with_n",
]

#: Skip reasons of queued events whose result never arrived (see the module docstring).
LOST_REASONS: tuple[str, ...] = ("interrupted", "result_dropped")

#: Agreement measures aggregated, in report order.
METRICS: tuple[str, ...] = ("overlap", "jaccard", "rbo", "kendall_tau", "top1", "citation_recall")
#: Measures handed to telemetry per language and topic (bounded series).
BREAKDOWN_METRICS: tuple[str, ...] = ("overlap", "rbo", "citation_recall")
#: Breakdown label of a question the topic stage gave no topic because no gold row is
#: written in its language (``topic_unjudged_language``: :class:`~service.topics.stage.TopicStage`).
UNJUDGED_LANGUAGE = "unjudged_language"
#: Breakdown label of a question without the annotation (language or topic): the detection
#: did not run (topic detection off or no topic model; analytics off).
NOT_DETECTED = "not_detected"
#: Every breakdown label :func:`breakdown_label` gives for a question without a label.
NO_LABEL: tuple[str, ...] = (UNJUDGED_LANGUAGE, NOT_DETECTED)
_VERSION = 1

# The report's TypedDicts (module docstring), from typing_extensions: the API serves them
# (pydantic needs that on Python < 3.12). Keys in the order the report builds them.


class Disagreement(TypedDict):
    """A live event on which a candidate disagreed most with production: the event id, its
    time (ISO 8601), the question (PII-scrubbed upstream), language and topic annotations,
    RBO (extrapolated, in [0, 1]) and overlap@k, and both rankings (passage ids, best
    first)."""

    event_id: str
    timestamp: str
    question: str
    language: str | None
    topic: str | None
    rbo: float
    overlap: float
    production: list[str]
    candidate: list[str]
    #: ``GET /v1/shadow/disagreements`` by question: the kept rows that asked it
    repeats: NotRequired[int]


def disagreements_by_question(rows: Sequence[Disagreement]) -> list[Disagreement]:
    """``rows`` (lowest RBO first) with one row per question text, the first (lowest RBO),
    each with ``repeats``: the rows that asked it (>= 1); the order kept (``GET
    /v1/shadow/disagreements`` by default, and the status page's table: live traffic repeats
    its questions, so per event one question can fill the list — trial 24: 20 rows, 11
    questions).

    >>> rows = [{"question": "a", "rbo": 0.1}, {"question": "b", "rbo": 0.2},
    ...         {"question": "a", "rbo": 0.3}]
    >>> by_question = disagreements_by_question(rows)  # type: ignore[arg-type]
    >>> [(r["question"], r["repeats"]) for r in by_question]
    [('a', 2), ('b', 1)]
    """
    counts = Counter(row["question"] for row in rows)
    out: dict[str, Disagreement] = {}
    for row in rows:
        if row["question"] not in out:
            out[row["question"]] = {**row, "repeats": counts[row["question"]]}
    return list(out.values())


class LatencySummary(TypedDict):
    """Answered calls and their mean and max latency in seconds (``None`` before one)."""

    count: int
    mean: float | None
    max: float | None


class CandidateSummary(TypedDict):
    """One candidate's aggregates without its disagreement rows (``GET /v1/shadow``):
    the counters (``offered`` = ``completed`` + Σ ``errors`` + Σ ``skipped`` +
    ``in_flight``; ``queued`` of them sent to the candidate), the event times (ISO 8601) of
    the first and last event compared (``compared_from``, ``compared_to``; ``None`` before
    one), ``latency_seconds`` (left out
    of a replay's report), agreement ``{measure: mean or None}`` with the ``counts`` each
    mean is over, the same means per language and per topic (``{label: {"n": results,
    measure: mean, "counts": {measure: results}}}``: a label's Kendall's tau is often over far
    fewer results than its ``n``; a question without a label under ``unjudged_language`` or
    ``not_detected``, :func:`breakdown_label`) and, in the live service, the runner's
    gauges."""

    offered: int
    queued: int
    skipped: dict[str, int]
    completed: int
    in_flight: int
    errors: dict[str, int]
    compared_from: str | None
    compared_to: str | None
    latency_seconds: NotRequired[LatencySummary]
    agreement: dict[str, float | None]
    counts: dict[str, int]
    by_language: dict[str, dict[str, Any]]
    by_topic: dict[str, dict[str, Any]]
    runner: NotRequired[LaneStats]


class CandidateReport(CandidateSummary):
    """One candidate's aggregates with its ``disagreements`` (lowest RBO first; in the
    report they come before ``runner``)."""

    disagreements: list[Disagreement]


class ShadowStageReport(TypedDict):
    """:meth:`ShadowStage.report`: the RBO persistence ``rbo_p`` (in (0, 1)), results the
    runner's buffer dropped, and each candidate's :class:`CandidateReport`."""

    rbo_p: float
    results_dropped: int
    candidates: dict[str, CandidateReport]
    #: the live service's: each candidate's sustained verdict on its RBO over event time
    #: (:meth:`service.shadow.trend.AgreementTrend.verdicts`; ``None``: no run tested yet)
    sustained: NotRequired[dict[str, dict[str, Any] | None]]
    #: the status page's: the service's gold-set runs (``Runtime.gold_run_status``), for
    #: the latest run's paired comparisons beside the live agreement
    gold: NotRequired[Mapping[str, object]]


def breakdown_label(label: str | None, unjudged: bool = False) -> str:
    """The bucket of a result in a breakdown by language or topic: its ``label``; without
    one, :data:`UNJUDGED_LANGUAGE` when the topic stage left it out for its language
    (``unjudged``, the topic dimension only), else :data:`NOT_DETECTED`. Never raises.

    >>> breakdown_label("en"), breakdown_label(None, True), breakdown_label(None)
    ('en', 'unjudged_language', 'not_detected')
    """
    if label:
        return label
    return UNJUDGED_LANGUAGE if unjudged else NOT_DETECTED


class _Means:
    """Sums and counts of each agreement measure (JSON round-trip via ``state``).

    Each sum is kept exact, as Shewchuk's non-overlapping partials (the algorithm of
    :func:`math.fsum`, added to one value at a time), so a mean is the correctly rounded sum
    over the count whatever order the results came in: a live service folds results in as
    its calls finish, and two services on the same events gave means differing in the last
    digit (trial 47 L1, kendall_tau 0.046809928369148796 vs …79). A cell is
    ``[sum, count, *partials]``; a state written before (``[sum, count]``) starts from its
    sum."""

    def __init__(self, state: Mapping[str, list[float]] | None = None) -> None:
        self.sums: dict[str, list[float]] = {}
        for m in METRICS:
            cell = list(state.get(m, [0.0, 0])) if state else [0.0, 0]
            if len(cell) == 2:  # an older state: its sum is the one partial
                cell.append(cell[0])
            self.sums[m] = cell

    def add(self, values: Mapping[str, Any]) -> None:
        sums = self.sums
        for metric in METRICS:
            value = values[metric]
            if value is not None:
                cell = sums[metric]
                cell[1] += 1
                # Shewchuk's grow-expansion (math.fsum's loop) on the partials cell[2:]
                x, kept = float(value), 2  # a bool (top1) adds 0 or 1
                for i in range(2, len(cell)):
                    y = cell[i]
                    if abs(x) < abs(y):
                        x, y = y, x
                    hi = x + y
                    lo = y - (hi - x)
                    if lo:
                        cell[kept] = lo
                        kept += 1
                    x = hi
                del cell[kept:]
                cell.append(x)
                cell[0] = math.fsum(cell[2:])

    def means(self) -> dict[str, float | None]:
        return {m: (cell[0] / cell[1] if cell[1] else None) for m, cell in self.sums.items()}

    def counts(self) -> dict[str, int]:
        return {m: int(cell[1]) for m, cell in self.sums.items()}


class _Candidate:
    """Everything aggregated for one candidate."""

    def __init__(self, max_labels: int, max_disagreements: int) -> None:
        self.max_labels, self.max_disagreements = max_labels, max_disagreements
        self.offers: Counter[str] = Counter()
        self.errors: Counter[str] = Counter()
        self.completed = 0
        self.latency = [0, 0.0, 0.0]  # count, sum, max (seconds)
        self.means = _Means()
        self.by: dict[str, dict[str, _Means]] = {"language": {}, "topic": {}}
        self.worst: list[tuple[float, int, Disagreement]] = []  # max-heap on rbo via -rbo
        self._seq = itertools.count()
        self.span: list[datetime] = []  # [first, last] event time compared

    def add(self, result: ShadowResult) -> dict[str, Any] | None:
        """Fold one result in; return its agreement values (``None`` on error)."""
        self.latency[0] += 1
        self.latency[1] += result.latency_s
        self.latency[2] = max(self.latency[2], result.latency_s)
        if result.error is not None:
            self.errors[result.error] += 1
            return None
        self.completed += 1
        if result.agreement is None:
            return None
        values = result.agreement.as_dict()
        self.means.add(values)
        stamp, span = result.timestamp, self.span
        if not span:
            span.extend((stamp, stamp))
        elif stamp < span[0]:
            span[0] = stamp
        elif stamp > span[1]:
            span[1] = stamp
        for dimension, label in (("language", breakdown_label(result.language)),
                                 ("topic", breakdown_label(result.topic,
                                                           result.topic_unjudged))):  # fmt: skip
            self._bucket(dimension, label).add(values)
        rbo = values["rbo"]
        worst = self.worst
        if rbo is not None and self.max_disagreements:
            if len(worst) < self.max_disagreements or rbo < -worst[0][0]:
                self._keep(_disagreement(result, values))
        return values

    def _bucket(self, dimension: str, key: str) -> _Means:
        """The means of ``key`` (:func:`breakdown_label`), or of ``other`` once the
        dimension holds ``max_labels - 1`` other labels; the :data:`NO_LABEL` buckets (two
        values) are never merged nor count towards it, so a question without a label is
        never "other" (a review of session 36: with a full topic table, "no gold row in its
        language" was "other" again)."""
        table = self.by[dimension]
        if key not in table and key not in NO_LABEL:
            labels = len(table) - (UNJUDGED_LANGUAGE in table) - (NOT_DETECTED in table)
            if labels >= self.max_labels - 1:
                key = "other"  # one slot stays free for "other"
        return table.setdefault(key, _Means())

    def _keep(self, row: Disagreement) -> None:
        heapq.heappush(self.worst, (-row["rbo"], next(self._seq), row))
        if len(self.worst) > self.max_disagreements:
            heapq.heappop(self.worst)  # drops the highest RBO

    def report(self) -> CandidateReport:
        count, total, peak = self.latency
        offers = self.offers
        skipped = {r: offers[r] for r in (*SKIP_REASONS, *LOST_REASONS) if offers[r]}
        rows = sorted((row for _, _, row in self.worst), key=lambda r: (r["rbo"], r["event_id"]))
        return {
            "offered": sum(offers.values()),
            "queued": offers["queued"],
            "skipped": skipped,
            "completed": self.completed,
            "in_flight": self.in_flight(),
            "errors": dict(self.errors),
            "compared_from": self.span[0].isoformat() if self.span else None,
            "compared_to": self.span[1].isoformat() if self.span else None,
            "latency_seconds": {
                "count": int(count),  # an int: the float list holds the sums
                "mean": total / count if count else None,
                "max": peak if count else None,
            },
            "agreement": self.means.means(),
            "counts": self.means.counts(),
            "by_language": _table(self.by["language"]),
            "by_topic": _table(self.by["topic"]),
            "disagreements": rows,
        }

    def in_flight(self) -> int:
        """Queued events whose result has not been folded in yet (≥ 0)."""
        return max(0, self.offers["queued"] - self.completed - sum(self.errors.values()))

    def lose(self, reason: str, n: int) -> int:
        """Move ``n`` queued events (at most those in flight) whose result will never
        arrive to the skip reason ``reason`` (one of :data:`LOST_REASONS`, or ``cpu_budget``
        / ``queue_full`` for events displaced from a full queue); return how many moved."""
        n = min(n, self.in_flight())
        if n > 0:
            self.offers["queued"] -= n
            self.offers[reason] += n
        return max(n, 0)

    def state(self) -> dict[str, Any]:
        return {
            "offers": dict(self.offers),
            "errors": dict(self.errors),
            "completed": self.completed,
            "latency": self.latency,
            "span": [stamp.isoformat() for stamp in self.span],
            "means": self.means.sums,
            "by": {d: {k: m.sums for k, m in t.items()} for d, t in self.by.items()},
            "worst": [row for _, _, row in self.worst],
        }

    def load(self, state: Mapping[str, Any]) -> int:
        """Add the aggregates ``state`` saved; return how many events in flight at that
        checkpoint were moved to ``interrupted`` (lost in the crash or stop)."""
        self.offers.update(state.get("offers", {}))
        self.errors.update(state.get("errors", {}))
        self.completed = int(state.get("completed", 0))
        self.latency = list(state.get("latency", self.latency))
        self.span = [datetime.fromisoformat(stamp) for stamp in state.get("span", [])]
        self.means = _Means(state.get("means"))
        for dimension, table in state.get("by", {}).items():
            self.by[dimension] = {k: _Means(v) for k, v in table.items()}
        # saved before session 36: a question without a language had no language stage
        language, topic = self.by["language"], self.by["topic"]
        if "unknown" in language and NOT_DETECTED not in language:
            language[NOT_DETECTED] = language.pop("unknown")
        # ... and no topic stage: its results are in the old topic bucket; the same sums
        # there, the same results (analytics off), so that bucket is not_detected too
        old, none = topic.get("unknown"), language.get(NOT_DETECTED)
        if old is not None and none is not None and old.sums == none.sums \
                and NOT_DETECTED not in topic:  # fmt: skip
            topic[NOT_DETECTED] = topic.pop("unknown")
        for row in state.get("worst", []):
            self._keep(row)
        # calls in flight at the checkpoint belong to the process that stopped: their
        # results are gone, and their events (offsets committed) are not offered again
        return self.lose("interrupted", self.in_flight())


def _table(table: Mapping[str, _Means]) -> dict[str, dict[str, Any]]:
    return {
        label: {"n": means.counts()["rbo"], **means.means(), "counts": means.counts()}
        for label, means in sorted(table.items())
    }


#: An agreement figure that is a mean over fewer results than this is marked "few" where it
#: is shown (:func:`with_n`): the floor ``analytics.quality_min_class`` (default 10) puts on
#: the sample a detector's measured quality counts on
#: (:func:`service.evaluation.detector_quality.too_few`); the reports pass their own setting.
FEW_RESULTS = 10


def with_n(value: float | None, n: int | None, min_n: int = FEW_RESULTS) -> str:
    """A shadow agreement mean shown with the number of results ``n`` it is over (a label's
    Kendall's tau is often over a handful: only results sharing ≥ 2 passages have one):
    3 decimals, ``"(n N)"``, and ``", few"`` when ``n < min_n``; ``"–"`` for no value (``n`` 0);
    without ``n`` (a report written before counts were kept) the value alone.

    >>> with_n(0.59596, 132), with_n(1.0, 3), with_n(None, 0), with_n(0.5, None)
    ('0.596 (n 132)', '1.000 (n 3, few)', '– (n 0, few)', '0.500')
    """
    shown = "–" if value is None else f"{value:.3f}"
    if n is None:
        return shown
    return f"{shown} (n {n}{', few' if n < min_n else ''})"


def _disagreement(result: ShadowResult, values: Mapping[str, Any]) -> Disagreement:
    return {
        "event_id": result.event_id,
        "timestamp": result.timestamp.isoformat(),
        "question": result.question,
        "language": result.language,
        "topic": result.topic,
        "rbo": values["rbo"],
        "overlap": values["overlap"],
        "production": list(result.production),
        "candidate": list(result.ranking),
    }


class ShadowStage:
    """Pipeline stage feeding a :class:`ShadowRunner` and aggregating its results.

    Args:
        runner: the running shadow runner (its lifecycle belongs to the caller: call
            ``runner.close()`` at shutdown).
        listeners: called with every finished result, in order, on the pipeline's thread
            (e.g. the live-quality stage's ACL and known-question checks, the harvester's
            disagreement reason). A listener must not raise.

        synchronous: replay mode (module docstring): each batch waits for its shadow calls
            and folds their results in event order; the report has no latencies.
        trend: the live service's agreement over event time and its sustained verdict
            (:class:`~service.shadow.trend.AgreementTrend`; a replay's series keeps its
            own): fed every finished result, checkpointed with the stage, its verdicts in
            the report (``sustained``) and the pending observations.

    The configuration's ``max_disagreements`` and ``max_label_values`` bound the report.
    """

    name = "shadow"
    keeps_counts = True  # sets ``shadow`` only (see service.pipeline.Stage)

    def __init__(
        self,
        runner: ShadowRunner,
        listeners: Sequence[Callable[[ShadowResult], None]] = (),
        synchronous: bool = False,
        trend: AgreementTrend | None = None,
    ) -> None:
        self.runner = runner
        self.listeners = list(listeners)
        self.synchronous = synchronous
        self.trend = trend
        config = runner.config
        self._candidates = {
            name: _Candidate(config.max_label_values, config.max_disagreements)
            for name in runner.candidates
        }
        self._pending = self._empty_pending()
        self._dropped_seen = 0
        self._dropped_by_seen: Counter[str] = Counter()
        self._evicted_seen: Counter[tuple[str, str]] = Counter()
        self._not_compared: dict[str, NotCompared] = {}
        self._publish()

    def _publish(self) -> None:
        """Compute :meth:`not_compared` from the aggregates as they are now and swap it in
        (one attribute store): called by the pipeline's thread at the end of every change
        (:meth:`collect`, so every batch; :meth:`finish`; :meth:`restore`), so a reader on
        another thread gets one batch's consistent counts, never a mix (a review of
        session 46: reading ``offers``, ``errors`` and ``completed`` one after another, a
        batch folded in between gave ``offered != compared + not_compared``)."""
        self._not_compared = {
            name: count(dict(agg.offers), dict(agg.errors), agg.completed)
            for name, agg in self._candidates.items()
        }

    def _empty_pending(self) -> dict[str, Any]:
        names = self._candidates
        return {
            "offers": {name: Counter() for name in names},
            "displaced": {name: Counter() for name in names},
            "lost": {name: Counter() for name in names},
            "completed": dict.fromkeys(names, 0),
            "errors": {name: Counter() for name in names},
            "latency_seconds": {name: [] for name in names},
            "agreement": {name: {m: [] for m in METRICS} for name in names},
            "by_language": [],
            "by_topic": [],
        }

    def process(self, batch: Batch) -> None:
        """Offer every event of ``batch``, then fold in the results finished so far."""
        offer = self.runner.offer
        seen: Counter[tuple[str, str]] = Counter()
        for event, notes in zip(batch.events, batch.annotations, strict=True):
            outcomes = offer(event, notes)
            notes["shadow"] = outcomes
            seen.update(outcomes.items())
        offers = self._pending["offers"]
        for (name, outcome), n in seen.items():  # counted once per batch, not per event
            self._candidates[name].offers[outcome] += n
            offers[name][outcome] += n
        if not self.synchronous:
            self.collect()
            return
        while not self.runner.wait_idle(60.0):  # the watchdog ends every call by its deadline
            pass
        order = {event.event_id: i for i, event in enumerate(batch.events)}
        rank = {name: i for i, name in enumerate(self._candidates)}
        self.collect(key=lambda r: (order.get(r.event_id, -1), rank[r.candidate]))

    def collect(self, key: Callable[[ShadowResult], Any] | None = None) -> int:
        """Fold in the results finished since the last call, in arrival order or sorted by
        ``key``; return how many."""
        results = self.runner.drain()
        if key is not None:
            results.sort(key=key)
        dropped = self.runner.results_dropped_by()
        for name, total in dropped.items():
            if name in self._candidates and total > self._dropped_by_seen[name]:
                lost = self._candidates[name].lose(
                    "result_dropped", total - self._dropped_by_seen[name]
                )
                self._pending["lost"][name]["result_dropped"] += lost
                self._dropped_by_seen[name] = total
        for name, counts in self.runner.evicted_by().items():
            for reason, total in counts.items():
                seen = self._evicted_seen[name, reason]
                if name in self._candidates and total > seen:
                    self._candidates[name].lose(reason, total - seen)
                    self._pending["displaced"][name][reason] += total - seen
                    self._evicted_seen[name, reason] = total
        pending = self._pending
        for result in results:
            name = result.candidate
            values = self._candidates[name].add(result)
            for listener in self.listeners:
                listener(result)
            if self.trend is not None and result.error is None and result.agreement:
                self.trend.add(result.timestamp.timestamp(), name, result.agreement.rbo,
                               result.agreement.overlap, result.question)  # fmt: skip
            pending["latency_seconds"][name].append(result.latency_s)
            if result.error is not None:
                pending["errors"][name][result.error] += 1
                continue
            pending["completed"][name] += 1
            if not values:
                continue
            language = breakdown_label(result.language)
            topic = breakdown_label(result.topic, result.topic_unjudged)
            for metric, value in values.items():
                if metric in METRICS and value is not None:
                    pending["agreement"][name][metric].append(float(value))
                    if metric in BREAKDOWN_METRICS:
                        row = {"candidate": name, "measure": metric, "value": float(value)}
                        pending["by_language"].append({**row, "label": language})
                        pending["by_topic"].append({**row, "label": topic})
        self._publish()
        return len(results)

    def flush(self, timeout_s: float = 30.0) -> bool:
        """Wait (up to ``timeout_s``) until the runner has no queued or running call, then
        fold in every result; return whether it went idle. For replays that end: the live
        path never calls this."""
        idle = self.runner.wait_idle(timeout_s)
        self.collect()
        if self.trend is not None:  # the input ended: the latest bucket is judged too
            self.trend.close_input()
        return idle

    def settle(self, timeout_s: float, stop: threading.Event | None = None) -> int:
        """The live service's finite input has ended (the service goes on): let the calls
        queued and running finish, the CPU budget lifted meanwhile
        (:meth:`ShadowRunner.settle`: at most ``timeout_s`` seconds, less if ``stop`` is
        set). Folds nothing in, so it needs no pipeline lock (:meth:`flush` then does, at
        once). Returns the calls still queued or running (0: all finished)."""
        if self.runner.settle(timeout_s, stop):
            return 0
        return self.runner.busy_calls()

    def finish(self, timeout_s: float) -> int:
        """The live service stops (its consumer and API done, before its last checkpoint):
        wait up to ``timeout_s`` seconds for the calls queued and running, the CPU budget
        lifted (:meth:`ShadowRunner.finish`), stop the runner (no further call starts, its
        queue is dropped), fold in every result that finished, and move the queued events
        whose result did not come to the skip reason ``interrupted``, so the checkpoint that
        follows holds what completed and counts what was given up. Returns how many were
        given up, over all candidates (0: none). A call still running after this (hung) is
        left to :meth:`ShadowRunner.close`; its result is never folded in."""
        self.runner.finish(timeout_s)
        self.runner.close(timeout=0.0)  # no wait beyond timeout_s: what runs on is given up
        self.collect()
        lost = 0
        for name, aggregate in self._candidates.items():
            n = aggregate.lose("interrupted", aggregate.in_flight())
            self._pending["lost"][name]["interrupted"] += n
            lost += n
        self._publish()
        return lost

    def not_compared(self) -> dict[str, NotCompared]:
        """Per candidate, the events offered whose comparison did not complete, by cause
        (:func:`service.shadow.not_compared.count`), over the state's whole history (the
        aggregates are checkpointed), as of the end of the last batch folded in (or
        :meth:`finish`, :meth:`restore`). Safe without the pipeline lock: it reads one
        snapshot the pipeline swaps in whole (:meth:`_publish`), so every row adds up
        (``offered = compared + not_compared``). The rows are shared: do not modify them."""
        return dict(self._not_compared)

    def cut_off_notices(self) -> list[str]:
        """One line per candidate whose circuit breaker has opened: when it was first cut
        off (the event whose failed call opened it; in the live service also the wall time),
        how many of its offered events were not compared because of it (skip
        ``breaker_open``: refused at the offer or dropped from its queue, never called), the
        errors recorded until that first opening (a copy: later probes' errors are not in
        it) and the breaker's state now (open, half-open, or closed again since the event
        whose successful call closed it: recovered), with how many times it opened. A
        replay's line says that these counts depend on the calls' timing."""
        lines = []
        for name, cut in self.runner.cut_offs().items():
            aggregate = self._candidates.get(name)
            if aggregate is None:
                continue
            offers = dict(aggregate.offers)  # a copy made in C (the status page reads this
            # without the pipeline's lock: no iteration a batch could interleave)
            errors = ", ".join(f"{r} {n}" for r, n in sorted(cut.errors_before.items()))
            if cut.recovered is not None:
                state = f"closed again since {self._when(cut.recovered)}, recovered"
            else:
                state = "open" if cut.state == "open" else "half-open (probing)"
            times = "once" if cut.opened_total == 1 else f"{cut.opened_total} times"
            line = (f"shadow candidate {name!r} was cut off by its circuit breaker "
                    f"at {self._when(cut.first)}: {offers.get('breaker_open', 0)} of its "
                    f"{sum(offers.values())} offered events were not compared (skipped "
                    f"breaker_open, never called; errors before: {errors or 'none'}); "
                    f"breaker now {state}, opened {times}")  # fmt: skip
            if self.synchronous:
                line += (
                    "; which events were called before it opened depends on the calls' "
                    "timing (shadow.candidates[].failure_threshold, max_concurrency, "
                    "cooldown_s in wall seconds)"
                )
            lines.append(line)
        return lines

    def _when(self, mark: tuple[str, str, str]) -> str:
        """``event <id> (<event time>)``, with the wall time in the live service."""
        wall, event_id, stamp = mark
        return f"event {event_id} ({stamp})" + ("" if self.synchronous else f", {wall}")

    def pending_observations(self) -> dict[str, Any]:
        """Return and clear what happened since the last call, for the telemetry layer.

        Returns:
            ``{"offers": {cand: {outcome: n}}, "displaced": {cand: {reason: n}} (queued
            events a later one displaced from a full queue), "lost": {cand: {reason: n}}
            (queued events moved to a :data:`LOST_REASONS` reason), "completed": {cand: n},
            "errors": {cand: {reason: n}}, "latency_seconds": {cand: [s, ...]},
            "agreement": {cand: {metric: [value, ...]}}, "by_language": [{"candidate",
            "label", "measure", "value"}, ...], "by_topic": [...], "results_dropped": n,
            "runner": ShadowRunner.stats()}`` — counts are increments, lists are values to
            observe (breakdowns only for :data:`BREAKDOWN_METRICS`, each ``label`` a
            :func:`breakdown_label`), ``runner`` holds gauges (queue depth, workers, breaker
            state).
        """
        pending = self._pending
        self._pending = self._empty_pending()
        dropped = self.runner.results_dropped
        pending["results_dropped"] = dropped - self._dropped_seen
        self._dropped_seen = dropped
        pending["offers"] = {name: dict(c) for name, c in pending["offers"].items()}
        pending["displaced"] = {name: dict(c) for name, c in pending["displaced"].items()}
        pending["lost"] = {name: dict(c) for name, c in pending["lost"].items()}
        pending["errors"] = {name: dict(c) for name, c in pending["errors"].items()}
        pending["runner"] = self.runner.stats()
        if self.trend is not None:
            pending["sustained"] = self.trend.verdicts()
        return pending

    def report(self) -> ShadowStageReport:
        """Return the aggregates as JSON-able data (shape in the module docstring)."""
        stats = self.runner.stats()
        candidates = {}
        for name, aggregate in self._candidates.items():
            report = aggregate.report()
            if self.synchronous:  # a replay's report holds no time-of-run values
                report.pop("latency_seconds")
            else:
                report["runner"] = stats[name]  # a lane per candidate (runner.candidates)
            candidates[name] = report
        whole: ShadowStageReport = {
            "rbo_p": self.runner.config.rbo_p,
            "results_dropped": self.runner.results_dropped,
            "candidates": candidates,
        }
        if self.trend is not None:
            whole["sustained"] = self.trend.verdicts()
        return whole

    def state_snapshot(self) -> Any:
        """Return the aggregates of every candidate (JSON-able), with its JSON text
        (:class:`service.state.EncodedObject`): the trend's part is its own kept text
        (:meth:`service.shadow.trend.AgreementTrend.state`: only its changed buckets are
        encoded again)."""
        state: dict[str, Any] = {
            "version": _VERSION,
            "candidates": {name: agg.state() for name, agg in self._candidates.items()},
        }
        texts: dict[str, str] = {}
        if self.trend is not None:
            trend = state["trend"] = self.trend.state()
            if trend.text is not None:
                texts["trend"] = trend.text
        return encoded_object(state, texts)

    def restore(self, state: Any) -> None:
        """Load aggregates saved by :meth:`state_snapshot`; other versions are ignored."""
        if not isinstance(state, Mapping) or state.get("version") != _VERSION:
            return
        for name, saved in state.get("candidates", {}).items():
            if name in self._candidates:
                # in flight at the checkpoint: lost in the crash (or stop); counted once
                # here for goldwatch_shadow_not_compared_total (cause interrupted)
                lost = self._candidates[name].load(saved)
                self._pending["lost"][name]["interrupted"] += lost
        if self.trend is not None:
            self.trend.load(state.get("trend"), candidates=self._candidates)
        self._publish()
