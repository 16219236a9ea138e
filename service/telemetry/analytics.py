"""Metrics of the live analytics stages: PII scrubbed, questions by language and topic,
answers, refusals and out-of-scope verdicts, drift tests, the gold set's shares and coverage
gaps, and the measured quality of the detectors. Fed once per batch by
:meth:`service.runtime.live.Live.observe` (annotations, the drift report), and when the
gold set or a detector's calibration changes (gold shares, detector quality).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge

from service.evaluation.detector_quality import balanced_accuracy_floor, quality_trusted
from service.pii import PII_TYPES as _PII_TYPES
from service.pipeline.totals import count_annotations
from service.telemetry.conventions import NEAREST_HELP, OTHER, bounded_label
from service.telemetry.conventions import finite as _finite
from service.telemetry.conventions import metric_name as _name

#: Drift dimensions and comparisons (bounded label values).
DRIFT_DIMENSIONS: tuple[str, ...] = ("language", "topic", "refusal", "out_of_scope",
                                     "known_refusal", "known_miss", "terms")  # fmt: skip
DRIFT_COMPARISONS: tuple[str, ...] = ("reference", "baseline")
DRIFT_STATES: tuple[str, ...] = ("ok", "drift", "insufficient_data", "uncalibrated", "starved")
#: Why the drift stage kept an event out of its windows for good (bounded label values of
#: ``goldwatch_drift_events_kept_out_total``; events held ahead are a gauge, they may return).
DRIFT_KEPT_OUT_REASONS: tuple[str, ...] = ("late", "future")
#: Detectors that report their measured quality (bounded label values).
DETECTORS: tuple[str, ...] = ("out_of_scope", "novelty")
#: Rates of a detector's operating point (``goldwatch_detector_operating_point_ratio``).
OPERATING_RATES: tuple[str, ...] = ("tpr", "fpr", "balanced_accuracy")
PII_TYPES: tuple[str, ...] = _PII_TYPES  # service.pii's fixed types: a bounded label set
#: Topic labels a process adds at most after its start (gold-set refreshes whose refitted
#: model has topics new since then, :meth:`AnalyticsMetrics.add_topic_labels`); a topic
#: beyond them is exported as ``other`` until a restart (the series stay bounded).
MAX_ADDED_TOPIC_LABELS = 32
#: What a topic label holds beyond the start's topics (the help of the topic metrics).
NEW_TOPICS_HELP = (
    "A topic a gold-set refresh's refitted model gained after the start (the status page "
    f"names it, e.g. topic-7) has its own label, at most {MAX_ADDED_TOPIC_LABELS} such "
    "topics a process; a later one, until a restart, is counted under other."
)


def _bounded(value: Any, allowed: tuple[str, ...]) -> str:
    """:func:`bounded_label` of a language or topic annotation, ``None`` (not annotated: no
    language stage, no topic model) as ``und`` — what the drift stage and the replay's time
    series count it as — instead of ``other``, a label outside the set (session 36: with no
    topic model every question was exported as topic ``other``). Never raises on a hashable
    value."""
    return bounded_label("und" if value is None else value, allowed)


def _bound_counts(raw: Mapping[Any, int], allowed: tuple[str, ...]) -> dict[str, int]:
    """``raw`` (value -> n) by bounded label (:func:`_bounded`), summed, labels in the order
    their first value comes in ``raw``."""
    counts: dict[str, int] = {}
    for value, n in raw.items():
        label = _bounded(value, allowed)
        counts[label] = counts.get(label, 0) + n
    return counts


class _LabelCounts(NamedTuple):
    """A batch's counts by bounded label (:meth:`AnalyticsMetrics._label_counts`)."""

    languages: dict[str, int]
    topics: dict[str, int]
    no_topic: dict[str, int]
    answered: dict[str, int]
    refused: dict[str, int]


@dataclass(frozen=True, slots=True)
class AnalyticsMetrics:
    """Metrics of the analytics stages; build with :func:`build_analytics_metrics`.

    ============================================ ======= ===============================
    name                                         type    labels
    ============================================ ======= ===============================
    goldwatch_pii_scrubbed_total                 counter type
    goldwatch_questions_by_language_total        counter language (allow-list + other)
    goldwatch_questions_by_topic_total           counter topic (model topics, + novel
                                                         only while novelty is calibrated); a
                                                         question given no topic (no gold
                                                         row in its language) is in none;
                                                         one with no topic annotation (no
                                                         topic model) is und, as is one
                                                         with no language in the language
                                                         counts
    goldwatch_questions_no_topic_total           counter language (allow-list + other): given
                                                         no topic, no gold row in its
                                                         language
    goldwatch_questions_excluded_language_total  counter language (allow-list + other): the
                                                         left-out language a question reads
                                                         as (narrowed candidates only)
    goldwatch_answers_total                      counter (events with an answer)
    goldwatch_refusals_total                     counter (answers detected as refusals:
                                                         answer.refused, else the text
                                                         reader; a lower bound where the
                                                         reader misses refusals)
    goldwatch_answers_by_language_total          counter language (allow-list + other)
    goldwatch_refusals_by_language_total         counter language (allow-list + other)
    goldwatch_scope_scored_total                 counter (questions with a scope score)
    goldwatch_out_of_scope_total                 counter (questions judged out of scope:
                                                         every verdict)
    goldwatch_over_refusals_total                counter (refused while in scope)
    goldwatch_under_refusals_total               counter (answered while out of scope)
    goldwatch_gold_share_ratio                   gauge   dimension, category
    goldwatch_gold_share_rows                    gauge   dimension (gold rows behind the
                                                         shares: their sampling noise)
    goldwatch_drift_js_divergence                gauge   dimension, comparison
    goldwatch_drift_psi                          gauge   dimension, comparison
    goldwatch_drift_p_value                      gauge   dimension, comparison
    goldwatch_drift_state                        gauge   dimension, comparison, state (1/0)
    goldwatch_drift_rate_ratio                   gauge   dimension, window (current/compared;
                                                         out_of_scope: stable verdicts only)
    goldwatch_drift_events_kept_out_total        counter reason (late, future)
    goldwatch_drift_events_held_ahead            gauge   (events held ahead of the watermark)
    goldwatch_drift_alarms_total                 counter dimension, comparison (alarms
                                                         raised: moves into drift)
    goldwatch_drift_alarm_ended_untested         gauge   dimension, comparison (1: the latest
                                                         alarm ended for lack of data)
    goldwatch_coverage_gap_ratio                 gauge   dimension, category
    goldwatch_detector_auc                       gauge   detector (ROC AUC on its
                                                         calibration data; absent: unknown)
    goldwatch_detector_auc_bound                 gauge   detector, bound (low, high)
    goldwatch_detector_operating_point_ratio     gauge   detector, rate (tpr, fpr,
                                                         balanced_accuracy at its threshold)
    goldwatch_detector_trusted                   gauge   detector (1: AUC ≥ quality floor
                                                         and balanced accuracy ≥ its floor;
                                                         topic: held-out kappa ≥ min_kappa)
    goldwatch_detector_misjudged_answerable_upper_ratio
                                                 gauge   detector (out_of_scope: 95 % upper
                                                         bound of the answerable gold share
                                                         it judges out of scope)
    goldwatch_detector_misjudged_unanswerable_upper_ratio
                                                 gauge   detector (out_of_scope: 95 % upper
                                                         bound of the unanswerable gold
                                                         share it judges in scope)
    ============================================ ======= ===============================
    """

    pii_scrubbed: Counter
    questions_by_language: Counter
    questions_by_topic: Counter
    questions_excluded_language: Counter
    questions_no_topic: Counter
    answers: Counter
    refusals: Counter
    answers_by_language: Counter
    refusals_by_language: Counter
    scope_scored: Counter
    out_of_scope: Counter
    over_refusals: Counter
    under_refusals: Counter
    gold_share: Gauge
    gold_share_rows: Gauge
    drift_js_divergence: Gauge
    drift_psi: Gauge
    drift_p_value: Gauge
    drift_state: Gauge
    drift_rate: Gauge
    drift_kept_out: Counter
    drift_held_ahead: Gauge
    drift_alarms: Counter
    drift_alarm_untested: Gauge
    coverage_gap: Gauge
    detector_auc: Gauge
    detector_auc_bound: Gauge
    detector_operating_point: Gauge
    detector_trusted: Gauge
    misjudged_answerable_upper: Gauge
    misjudged_unanswerable_upper: Gauge
    language_labels: tuple[str, ...]
    topic_labels: tuple[str, ...]
    #: the ``(dimension, comparison)`` drift series set so far (:meth:`observe_drift`)
    drift_compared: set[tuple[str, str]] = field(default_factory=set)
    #: the topic labels registered at the start, once :meth:`add_topic_labels` added some
    topic_labels_at_start: tuple[str, ...] = ()

    def observe_annotations(
        self,
        annotations: Sequence[Mapping[str, Any]],
        counted: tuple[Mapping[str, int], Mapping[str, int]] | None = None,
    ) -> None:
        """Count one batch's annotations (one ``inc`` per label value, not per event).

        ``counted``: ``count_annotations(annotations)`` when already known (the batch's
        :meth:`~service.pipeline.Batch.counts`), else it is counted here."""
        flags, pii = counted if counted is not None else count_annotations(annotations)
        languages, topics, no_topic, answered, refused = self._label_counts(annotations)
        for kind, n in pii.items():
            self.pii_scrubbed.labels(type=bounded_label(kind, PII_TYPES)).inc(n)
        for language, n in languages.items():
            self.questions_by_language.labels(language=language).inc(n)
        for topic, n in topics.items():
            self.questions_by_topic.labels(topic=topic).inc(n)
        for language, n in no_topic.items():
            self.questions_no_topic.labels(language=language).inc(n)
        for key, counter in (
            ("answers", self.answers),
            ("refusals", self.refusals),
            ("scope_scored", self.scope_scored),
            ("out_of_scope", self.out_of_scope),
            ("over_refusals", self.over_refusals),
            ("under_refusals", self.under_refusals),
        ):
            counter.inc(flags[key])  # fmt: skip
        for language, n in answered.items():
            self.answers_by_language.labels(language=language).inc(n)
        for language, n in refused.items():
            self.refusals_by_language.labels(language=language).inc(n)

    def _label_counts(self, annotations: Sequence[Mapping[str, Any]]) -> _LabelCounts:
        """``({language label: n}, {topic label: n}, {language label: n given no topic},
        {language label: answers}, {language label: refused})`` of a batch, labels bounded
        (:func:`_bounded`: no label is ``und``, as the drift stage and the replay series
        count it, not ``other``), each dictionary in the order its labels first occur. A
        question the topic stage gave no topic (``topic_unjudged_language``: no gold row in
        its language) is in no topic's count and in the third, under its language. Answers
        are the events with ``refused`` True or False, as ``count_annotations`` counts them
        (the refused ones: True), under the language label of the first.

        The raw values are counted first and each distinct one bounded once: the label sets
        are tuples (a linear ``in``), and a batch holds a few distinct values for hundreds of
        events. The first event of a bounded label is the first of the first raw value
        mapped to it, so the order is the one per-event bounding gives. A value that cannot
        be a dictionary key (a custom stage's) makes it bound per event instead. One pass
        over the batch (the answers by language were a second one until session 40)."""
        raw_languages: dict[Any, int] = {}
        raw_topics: dict[Any, int] = {}
        raw_no_topic: dict[Any, int] = {}
        raw_answered: dict[Any, int] = {}
        raw_refused: dict[Any, int] = {}
        try:
            for notes in annotations:
                get = notes.get
                language = get("language_label", get("language"))
                raw_languages[language] = raw_languages.get(language, 0) + 1
                verdict = get("refused")
                if verdict is not None:
                    raw_answered[language] = raw_answered.get(language, 0) + 1
                    if verdict is True:
                        raw_refused[language] = raw_refused.get(language, 0) + 1
                value = get("topic")
                if value is None and get("topic_unjudged_language") is True:
                    # given no topic (no gold row in its language): in no topic
                    raw_no_topic[language] = raw_no_topic.get(language, 0) + 1
                    continue
                raw_topics[value] = raw_topics.get(value, 0) + 1
        except TypeError:  # unhashable
            raw_languages, raw_topics, raw_no_topic = {}, {}, {}
            raw_answered, raw_refused = {}, {}
            for notes in annotations:
                language = _bounded(notes.get("language_label", notes.get("language")),
                                    self.language_labels)  # fmt: skip
                raw_languages[language] = raw_languages.get(language, 0) + 1
                verdict = notes.get("refused")
                if verdict is not None:
                    raw_answered[language] = raw_answered.get(language, 0) + 1
                    if verdict is True:
                        raw_refused[language] = raw_refused.get(language, 0) + 1
                if notes.get("topic") is None and notes.get("topic_unjudged_language") is True:
                    raw_no_topic[language] = raw_no_topic.get(language, 0) + 1
                    continue
                topic = _bounded(notes.get("topic"), self.topic_labels)
                raw_topics[topic] = raw_topics.get(topic, 0) + 1
        languages, topics = self.language_labels, self.topic_labels
        return _LabelCounts(
            _bound_counts(raw_languages, languages), _bound_counts(raw_topics, topics),
            _bound_counts(raw_no_topic, languages), _bound_counts(raw_answered, languages),
            _bound_counts(raw_refused, languages),
        )  # fmt: skip

    def observe_excluded_languages(self, counts: Mapping[str, int]) -> None:
        """Count questions that read as a language the language candidates leave out
        (:meth:`~service.language.stage.LanguageStage.take_pending`), by that language."""
        for language, n in counts.items():
            label = bounded_label(language, self.language_labels)
            self.questions_excluded_language.labels(language=label).inc(n)

    def _untested(self, dimension: str, tested: Mapping[str, Any]) -> None:
        """The comparisons of ``dimension`` its windows, started afresh for a new labeller
        (:meth:`~service.drift.stage.DriftStage.restart`), have not tested yet (absent from
        ``tested``): their series read ``insufficient_data``, p-value 1 and divergences 0 (a
        series kept from before the restart would hold a ``drift`` and page on windows that
        no longer exist). Only the series set before (:attr:`drift_compared`): a comparison
        the dimension never had gets none."""
        for comparison in DRIFT_COMPARISONS:
            if comparison in tested or (dimension, comparison) not in self.drift_compared:
                continue
            labels = {"dimension": dimension, "comparison": comparison}
            self.drift_p_value.labels(**labels).set(1.0)
            self.drift_js_divergence.labels(**labels).set(0.0)
            self.drift_psi.labels(**labels).set(0.0)
            for state in DRIFT_STATES:
                self.drift_state.labels(**labels, state=state).set(state == "insufficient_data")

    def _alarms_untested(self, report: Mapping[str, Any]) -> None:
        """``goldwatch_drift_alarm_ended_untested``: 1 for each comparison whose latest alarm
        ended for lack of data and whose tests still lack events
        (:func:`service.drift.stage.ended_untested`), 0 for every other one."""
        from service.drift.stage import ended_untested  # (numpy: not before the port binds)

        ended = {(str(a["dimension"]), str(a["comparison"])) for a in ended_untested(report)}
        for dimension in DRIFT_DIMENSIONS:
            for comparison in DRIFT_COMPARISONS:
                self.drift_alarm_untested.labels(dimension=dimension, comparison=comparison).set(
                    (dimension, comparison) in ended
                )

    def observe_drift(self, report: Mapping[str, Any]) -> None:
        """Mirror a :meth:`service.drift.stage.DriftStage.report` into the drift gauges
        (its ``event_time.ahead`` into ``goldwatch_drift_events_held_ahead``)."""
        ahead = (report.get("event_time") or {}).get("ahead")
        if ahead is not None:
            self.drift_held_ahead.set(int(ahead))
        self._alarms_untested(report)
        for dimension, body in report.items():
            if dimension not in DRIFT_DIMENSIONS:
                continue
            if body.get("windows_restarted"):  # (a restart's comparisons untested yet)
                self._untested(dimension, body.get("comparisons") or {})
            for comparison, test in (body.get("comparisons") or {}).items():
                if comparison not in DRIFT_COMPARISONS:
                    continue
                labels = {"dimension": dimension, "comparison": comparison}
                self.drift_compared.add((dimension, comparison))
                for gauge, key in (
                    (self.drift_js_divergence, "js_divergence"),
                    (self.drift_psi, "psi"),
                    (self.drift_p_value, "p_value"),
                ):
                    if key in test:
                        gauge.labels(**labels).set(_finite(test[key]))  # fmt: skip
                for state in DRIFT_STATES:
                    self.drift_state.labels(**labels, state=state).set(test["state"] == state)
                if "rate_current" in test:
                    self.drift_rate.labels(dimension=dimension, window="current").set(
                        _finite(test["rate_current"])
                    )
                    self.drift_rate.labels(dimension=dimension, window=comparison).set(
                        _finite(test["rate_reference"])
                    )
            allowed = self._allowed(dimension)
            if "coverage_gaps" not in body:
                continue
            gaps: dict[str, float] = dict.fromkeys(allowed, 0.0)  # closed gaps go back to 0
            for gap in body["coverage_gaps"]:
                category = bounded_label(gap["category"], allowed)
                gaps[category] = max(gaps.get(category, 0.0), float(gap["ci_low"]))
            for category, value in gaps.items():
                self.coverage_gap.labels(dimension=dimension, category=category).set(value)

    def count_kept_out(self, counts: Mapping[str, int]) -> None:
        """Count the events the drift stage kept out of its windows since the last call,
        ``{"late": n, "future": n}`` (:meth:`service.drift.stage.DriftStage.take_kept_out`;
        a reason outside :data:`DRIFT_KEPT_OUT_REASONS` counts under ``other``)."""
        for reason, n in counts.items():
            if n:
                label = bounded_label(reason, DRIFT_KEPT_OUT_REASONS)
                self.drift_kept_out.labels(reason=label).inc(n)

    def count_alarms(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Count the drift alarms raised since the last call, ``{(dimension, comparison):
        n}`` (:meth:`service.drift.stage.DriftStage.take_alarms`; a dimension or comparison
        outside :data:`DRIFT_DIMENSIONS` / :data:`DRIFT_COMPARISONS` counts under
        ``other``)."""
        for (dimension, comparison), n in counts.items():
            if n:
                self.drift_alarms.labels(
                    dimension=bounded_label(dimension, DRIFT_DIMENSIONS),
                    comparison=bounded_label(comparison, DRIFT_COMPARISONS),
                ).inc(n)

    def set_gold_shares(self, gold_counts: Mapping[str, Mapping[str, int]]) -> None:
        """Export the gold set's share of every category (the drift references):
        ``gold_counts`` as :attr:`~service.runtime.analytics.Analytics.gold_counts` holds them
        (``{dimension: {category: rows}}``; topic: every gold row through live traffic's
        assignment, :meth:`~service.topics.model.TopicModel.gold_assignments`, so a topic's
        share is not its label's and ``novel`` has one), each divided by its dimension's row
        total (shares in [0, 1] summing to 1 per dimension; a category outside the label
        allow-list sums into ``other``), and each dimension's row total (the ``n_gold``
        behind its shares, >= 0: the recording rules size TopicDrift's and LanguageDrift's
        noise floor with it). A dimension given replaces its shares: a category it no
        longer counts (a refreshed gold set without its rows) loses its series, which would
        otherwise add a category to the rules' K and, times the rows, to their ``n_gold``; a
        dimension not given keeps its shares (a refresh merges counts per dimension)."""
        for dimension, counts in gold_counts.items():
            total = sum(counts.values())
            self.gold_share_rows.labels(dimension=dimension).set(total)
            allowed = self._allowed(dimension)
            shares: dict[str, float] = {}
            for category, n in counts.items():  # categories outside the labels sum into other
                label = bounded_label(category, allowed)
                shares[label] = shares.get(label, 0.0) + (n / total if total else 0.0)
            for label, share in shares.items():
                self.gold_share.labels(dimension=dimension, category=label).set(share)
            for label in {*allowed, OTHER} - shares.keys():  # every label it could have set
                try:
                    self.gold_share.remove(dimension, label)
                except KeyError:  # never set: nothing to remove
                    pass

    def set_detector_quality(
        self,
        qualities: Mapping[str, Mapping[str, Any]],
        floor: float,
        min_balanced_accuracy: float = 0.0,
        min_class: int = 0,
    ) -> None:
        """Export each detector's measured quality: ``qualities`` maps a detector name (one
        of :data:`DETECTORS`; others are skipped) to ``{"auc", "auc_low", "auc_high", "tpr",
        "fpr", "balanced_accuracy"}`` as in
        :meth:`service.evaluation.detector_quality.DetectorQuality.as_dict` (a value ``None``
        or not finite removes its series, see :func:`_set_or_remove`; the rates are optional: a
        detector without an operating point exports none). ``trusted`` is
        :func:`~service.evaluation.detector_quality.quality_trusted` of the same numbers
        (the rule the reports ask through ``DetectorQuality.trusted``): 1 when the AUC is
        known and ≥ ``floor``, the balanced accuracy at the threshold, when known, ≥
        ``min_balanced_accuracy`` with the FPR at its Wilson 95 % upper bound over ``n_neg``,
        and both classes (``n_pos``, ``n_neg``, when given) hold at least ``min_class``
        scores (``analytics.quality_min_class``)."""
        for detector, quality in qualities.items():
            if detector not in DETECTORS:
                continue
            auc = quality.get("auc")
            _set_or_remove(self.detector_auc, auc, detector)
            for bound in ("low", "high"):
                _set_or_remove(self.detector_auc_bound, quality.get(f"auc_{bound}"), detector,
                               bound)  # fmt: skip
            rates = {rate: quality.get(rate) for rate in OPERATING_RATES}
            for rate, value in rates.items():
                _set_or_remove(self.detector_operating_point, value, detector, rate)
            self.detector_trusted.labels(detector=detector).set(
                quality_trusted(
                    quality,
                    floor,
                    balanced_accuracy_floor(detector, min_balanced_accuracy),
                    min_class,
                )  # fmt: skip
            )

    def set_topic_trusted(self, trusted: bool | None) -> None:
        """Export ``goldwatch_detector_trusted{detector="topic"}``: 1 while a supervised topic
        model's held-out Cohen's kappa reaches ``analytics.topics.min_kappa``, 0 below it
        (the topic drift, topic coverage gaps and the rules gated on it stay quiet);
        ``None`` (unsupervised topics or no kappa: nothing to gate) removes the series, so
        a rule that silences on ``== 0`` keeps its behaviour."""
        if trusted is None:
            try:
                self.detector_trusted.remove("topic")
            except KeyError:  # never set: nothing to remove
                pass
            return
        self.detector_trusted.labels(detector="topic").set(1 if trusted else 0)

    def set_misjudged_answerable(self, upper: float | None) -> None:
        """Export the out-of-scope detector's misjudged-answerable upper bound, a share in
        [0, 1] (:class:`service.evaluation.detector_quality.MisjudgedAnswerable`'s ``upper``);
        ``None`` or not finite removes the series (unknown, not 0)."""
        _set_or_remove(self.misjudged_answerable_upper, upper, "out_of_scope")

    def set_misjudged_unanswerable(self, upper: float | None) -> None:
        """Export the out-of-scope detector's misjudged-unanswerable upper bound, a share in
        [0, 1] (:class:`service.evaluation.detector_quality.MisjudgedUnanswerable`'s
        ``upper``); ``None`` or not finite removes the series (unknown, not 0)."""
        _set_or_remove(self.misjudged_unanswerable_upper, upper, "out_of_scope")

    def add_topic_labels(self, topics: Sequence[str]) -> tuple[str, ...]:
        """Let the topic label take ``topics`` not among :attr:`topic_labels` yet (a gold-set
        refresh's refitted model: a topic new since the start, e.g. ``topic-7`` after an
        accept, was exported as ``other`` while the status page named it, trial 48 L1), at
        most :data:`MAX_ADDED_TOPIC_LABELS` over the process's life so the series stay
        bounded (beyond that a new topic stays ``other``, which docs/metrics.md says). A
        topic once added keeps its label (its counter series stay, as counters must).
        Returns the labels added now, in ``topics``' order; their questions_by_topic series
        start at 0."""
        have = set(self.topic_labels)
        room = MAX_ADDED_TOPIC_LABELS - self._added_topics()
        added = tuple(t for t in dict.fromkeys(topics) if t not in have)[: max(0, room)]
        if added:  # (a frozen dataclass: the label set is the one field that grows)
            object.__setattr__(self, "topic_labels", (*self.topic_labels, *added))
            start = self.topic_labels_at_start or self.topic_labels[: -len(added)]
            object.__setattr__(self, "topic_labels_at_start", start)
            for topic in added:
                self.questions_by_topic.labels(topic=topic)
        return added

    def remove_topic_label(self, topic: str) -> bool:
        """Take ``topic`` off the topic label (the refreshed label set no longer has it: the
        ``novel`` label once the novelty detector labels nothing, a gold-set refresh having
        left it uncalibrated) and remove its series, ``questions_by_topic`` and the topic
        ``gold_share`` and ``coverage_gap`` (a gauge no later report sets once the label is
        gone: it would keep its last gap; review of s50-novel): the counter of a category no
        question can be counted under any more
        would stand flat with its old total and read as a measured 0 % share (review of
        s49-novel), as :meth:`set_gold_shares` removes a category a dimension no longer
        counts. A label added again later (:meth:`add_topic_labels`, the detector calibrated
        again) starts its counter at 0. Returns whether ``topic`` was a label."""
        if topic not in self.topic_labels:
            return False
        labels = tuple(t for t in self.topic_labels if t != topic)
        start = tuple(t for t in self.topic_labels_at_start if t != topic)
        object.__setattr__(self, "topic_labels", labels)
        object.__setattr__(self, "topic_labels_at_start", start)
        for series, names in ((self.questions_by_topic, (topic,)),
                              (self.gold_share, ("topic", topic)),
                              (self.coverage_gap, ("topic", topic))):  # fmt: skip
            try:
                series.remove(*names)
            except KeyError:  # never set: nothing to remove
                pass
        return True

    def _added_topics(self) -> int:
        """Topic labels added since the start (:meth:`add_topic_labels`)."""
        start = self.topic_labels_at_start
        return 0 if not start else len(self.topic_labels) - len(start)

    def _allowed(self, dimension: str) -> tuple[str, ...]:
        return self.language_labels if dimension == "language" else self.topic_labels


def _set_or_remove(gauge: Gauge, value: Any, *labels: str) -> None:
    """Set the labelled series to ``value``, or remove it while ``value`` is undefined
    (``None``, NaN, ±infinity): a NaN sample (a novelty detector's TPR without unanswerable
    gold questions) poisons alert arithmetic (``NaN < 0.7`` is false, ``min`` of NaN and a
    number depends on the order) and draws nothing in Grafana, where an absent series is
    what ``absent()`` and "no data" are for. ``detector_trusted`` stays exported (0)."""
    number = math.nan if value is None else _finite(value)
    if math.isfinite(number):
        gauge.labels(*labels).set(number)
        return
    try:
        gauge.remove(*labels)
    except KeyError:  # never set: nothing to remove
        pass


def _topic_help(descriptions: Mapping[str, str]) -> str:
    """``Questions by topic.`` plus ``Topics: topic-0 = fee, hostel; ...`` for the topics whose
    label says more than their name (at most 100, natural order: topic-2 before topic-10)."""
    from service.topics.model import topic_sort_key

    named = [label for name, label in sorted(descriptions.items(),
                                             key=lambda kv: topic_sort_key(kv[0]))
             if label != name][:100]  # fmt: skip
    return f"Questions by topic. {NEAREST_HELP} {NEW_TOPICS_HELP}" + (
        f" Topics: {'; '.join(named)}." if named else ""
    )


def build_analytics_metrics(
    registry: CollectorRegistry,
    *,
    language_labels: Sequence[str] = ("und", OTHER),
    topic_labels: Sequence[str] = ("novel", "und", OTHER),
    topic_descriptions: Mapping[str, str] | None = None,
) -> AnalyticsMetrics:
    """Register the analytics metrics on ``registry`` and pre-initialise bounded label sets.

    Args:
        language_labels: every language label value (allow-list, ``und``, ``other``).
        topic_labels: every topic label value (model topics, ``novel``, ``und``, ``other``).
        topic_descriptions: ``{topic: human-readable label}`` appended to the help text of
            ``questions_by_topic`` (what ``topic-3`` is about), in natural topic order.

    Raises:
        ValueError: already registered on ``registry``.
    """

    def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(_name(name), doc, list(labels), registry=registry)

    def gauge(name: str, doc: str, labels: Sequence[str]) -> Gauge:
        return Gauge(_name(name), doc, list(labels), registry=registry)

    languages = tuple(dict.fromkeys([*language_labels, "und", OTHER]))
    topics = tuple(dict.fromkeys([*topic_labels, "und", OTHER]))
    metrics = AnalyticsMetrics(
        pii_scrubbed=counter("pii_scrubbed", "Personal-data items scrubbed, by type.", ["type"]),
        questions_by_language=counter(
            "questions_by_language", "Questions by detected language.", ["language"]
        ),
        questions_by_topic=counter(
            "questions_by_topic", _topic_help(topic_descriptions or {}), ["topic"]
        ),
        questions_excluded_language=counter(
            "questions_excluded_language", "Questions whose text reads as a language the "
            "language candidates (analytics.language.candidates and the gold set's languages) "
            "leave out, by that language; each was labelled as a candidate or und instead. "
            "Counted only while the candidates leave languages out (never with the default "
            "ones); its share of questions_by_language is the share the language figures "
            "miss.", ["language"],
        ),
        questions_no_topic=counter(
            "questions_no_topic", "Questions given no topic, by language: no gold row is "
            "written in their language, so neither the topic assignment nor novelty was "
            "measured on it (docs/topics.md). They are in no questions_by_topic count: the "
            "topic shares are of the questions given one.", ["language"],
        ),
        answers=counter("answers", "Events that carried an answer."),
        refusals=counter(
            "refusals", "Answers detected as refusals: answer.refused when the event sets "
            "it, else the answer text's reader (the phrase patterns, or a refusal model). "
            "Detected only: where the reader misses refusals worded otherwise this is a lower "
            "bound; /v1/refusals text_recall says when it is measured to be, with an "
            "estimate.",
        ),
        answers_by_language=counter(
            "answers_by_language", "Events that carried an answer, by the question's detected "
            "language (the refusal rate per language: refusals_by_language over this).",
            ["language"],
        ),
        refusals_by_language=counter(
            "refusals_by_language", "Answers detected as refusals (as refusals_total: a "
            "lower bound where the text reader misses refusals), by the question's detected "
            "language.", ["language"],
        ),
        scope_scored=counter("scope_scored", "Questions given an out-of-scope score."),
        out_of_scope=counter(
            "out_of_scope", "Questions judged out of scope (every verdict; the out_of_scope "
            "drift windows, goldwatch_drift_rate_ratio, count only the stable ones)."
        ),
        over_refusals=counter("over_refusals", "Refusals (detected, as refusals_total) of "
                              "questions judged in scope."),
        under_refusals=counter("under_refusals", "Answers (not detected as refusals) to "
                               "questions judged out of scope."),
        gold_share=gauge(
            "gold_share_ratio",
            "The gold set's share of a category, as the service's own drift test compares "
            "live traffic with (its reference before the language-mix adjustment): every "
            "gold row counts, unanswerable and unlabelled ones too (live traffic holds such "
            "questions). language: each row's language field, else the detected language. "
            "topic: each row's topic as live traffic's assignment reads it, not its topic "
            "label: a labelled row its held-out (cross-validated) prediction (a label with "
            "fewer than analytics.topics.cv_min_class rows: the fitted model's own), an "
            "unlabelled row its nearest topic, and any row novel when its leave-one-out novelty "
            "similarity is below the threshold (docs/topics.md, 'Like-for-like comparison "
            "with the gold set'). While the novelty detector is untrusted the recording "
            f"rules leave novel out of the gold and the live topic shares alike. {NEW_TOPICS_HELP}",
            ["dimension", "category"],
        ),
        gold_share_rows=gauge(
            "gold_share_rows",
            "The number of gold rows behind a dimension's goldwatch_gold_share_ratio shares "
            "(every gold row, as those shares count them). The shares are a sample of that "
            "many rows, so their own sampling noise adds to the Jensen-Shannon divergence "
            "the recording rules compute: LanguageDrift and TopicDrift size their threshold "
            "with it (docs/runbook.md#topicdrift).",
            ["dimension"],
        ),
        drift_js_divergence=gauge(
            "drift_js_divergence",
            "Jensen-Shannon divergence (base 2) of the current window vs the comparison.",
            ["dimension", "comparison"],
        ),
        drift_psi=gauge(
            "drift_psi", "Population stability index, current vs comparison.",
            ["dimension", "comparison"],
        ),
        drift_p_value=gauge(
            "drift_p_value", "p-value of the latest drift test.", ["dimension", "comparison"]
        ),
        drift_state=gauge(
            "drift_state", "1 for the current state of the drift test (ok, drift, "
            "insufficient_data, uncalibrated: raises no alarm (detector below its quality "
            "floor, a confound, or a held drift that opened none)), 0 for the others.",
            ["dimension", "comparison", "state"],
        ),
        drift_rate=gauge(
            "drift_rate_ratio", "Rate (refusals, out-of-scope) in the current window and in "
            "the window it is compared with. The refusal rate counts detected refusals (as "
            "goldwatch_refusals_total: a lower bound where the text reader misses refusals). "
            "out_of_scope's windows count only the stable "
            "verdicts (those the off-corpus cutoff's range does not move), not every verdict "
            "as goldwatch_out_of_scope_total / goldwatch_scope_scored_total does.",
            ["dimension", "window"],
        ),
        drift_kept_out=counter(
            "drift_events_kept_out", "Events the drift stage kept out of its windows for "
            "good, by reason: late = older than the watermark of its stream (Kafka "
            "partition; file, stdin and HTTP are one stream) minus "
            "analytics.drift.allowed_lateness_s, or older than the history the windows keep; "
            "future = stamped more than analytics.drift.future_tolerance_s after the wall "
            "clock. Each event counts once, as GET /v1/drift event_time.late and .future "
            "count them (over every event the drift stage sees, after deduplication); "
            "counted from the process start (a restart restores those totals, not this "
            "counter).", ["reason"],
        ),
        drift_held_ahead=gauge(
            "drift_events_held_ahead", "Events the drift stage holds out of its windows now "
            "because they were stamped more than analytics.drift.max_ahead_s (or the gap "
            "rule's limit, analytics.drift.ahead_gap_factor) ahead of the watermark, plus "
            "those dropped while held (beyond 64 held): GET /v1/drift "
            "event_time.ahead. Falls when analytics.drift.ahead_confirm of them confirm a "
            "jump in event time and are released into the windows.", [],
        ),
        drift_alarms=counter(
            "drift_alarms", "Drift alarms raised: moves of a dimension's comparison into the "
            "drift state (GET /v1/drift alarms without the widenings and clearings), counted "
            "when raised, so an alarm raised and cleared within minutes of wall time (a log "
            "or a backlog read faster than real time) still counts once. Not restored on a "
            "restart: a restored open alarm was counted by the process that raised it.",
            ["dimension", "comparison"],
        ),
        drift_alarm_untested=gauge(
            "drift_alarm_ended_untested", "1 while the latest drift alarm of a dimension's "
            "comparison ended for lack of data, not cleared: its windows stayed under "
            "analytics.drift.min_count events for longer than an open alarm is held untested "
            "(a lull in the traffic), so drift_state reads insufficient_data and DriftDetected "
            "resolves though the drift was never seen to end; back to 0 once a test has "
            "enough events again (it then reads ok or drift) or a new alarm opens. GET "
            "/v1/drift alarms: the entry with untested (its counts).",
            ["dimension", "comparison"],
        ),
        coverage_gap=gauge(
            "coverage_gap_ratio", "Live share's 95 % Wilson lower bound minus gold-set share, "
            "for categories the gold set under-covers (the drift view's coverage gaps, over all "
            "live traffic: live share at least twice the gold share and that bound at least "
            "0.02; harvest's coverage_gap rule, which uses recent traffic).",
            ["dimension", "category"],
        ),
        detector_auc=gauge(
            "detector_auc", "ROC AUC of a detector (out-of-scope, novelty) on the data it was "
            "calibrated on (cross-validated or leave-one-out scores); absent while not "
            "measured.",
            ["detector"],
        ),
        detector_auc_bound=gauge(
            "detector_auc_bound", "Bounds of the 95 % bootstrap interval of the detector's "
            "ROC AUC; absent while not measured.", ["detector", "bound"],
        ),
        detector_operating_point=gauge(
            "detector_operating_point_ratio", "A detector's rates at the threshold its counts "
            "use, on its calibration data: tpr, fpr and balanced_accuracy = (tpr + 1 - fpr) / 2 "
            "(out_of_scope, cross-validated scores: tpr the share of answerable gold questions "
            "kept in scope, fpr of unanswerable ones judged in scope; novelty, leave-one-topic-"
            "out: tpr the share of gold questions read novel with their topic held out, fpr "
            "with every topic kept); a rate is absent while undefined (no operating point, a "
            "sampled measurement, or a class without calibration scores).",
            ["detector", "rate"],
        ),
        detector_trusted=gauge(
            "detector_trusted", "1 when the detector's ROC AUC reaches analytics.quality_floor "
            "and its balanced accuracy "
            "at its threshold (its FPR at the Wilson 95 % upper bound) reaches "
            "analytics.scope_min_balanced_accuracy, measured on at "
            "least analytics.quality_min_class questions of each class (its counts are "
            "calibrated and it may alarm), else 0; detector=\"topic\" (supervised topics "
            "only): 1 when the topic assignment's held-out Cohen's kappa reaches "
            "analytics.topics.min_kappa, else 0 (its drift and coverage gaps raise nothing).",
            ["detector"],
        ),
        misjudged_answerable_upper=gauge(
            "detector_misjudged_answerable_upper_ratio", "95 % Wilson upper bound of the "
            "share of answerable gold questions the out-of-scope detector judges out of scope "
            "on held-out data (its regression and its off-corpus rule): under-refusals up to "
            "this share of the scored questions are explained by the detector's own error "
            "(the UnderRefusal alert needs more); absent while unknown.", ["detector"],
        ),
        misjudged_unanswerable_upper=gauge(
            "detector_misjudged_unanswerable_upper_ratio", "95 % Wilson upper bound of the "
            "share of unanswerable gold questions (every gold: [] row) the out-of-scope "
            "detector judges in scope on held-out data (its cross-validated fpr; the "
            "off-corpus rule only moves questions out of scope); measured on kind: off-topic "
            "rows, the rows not marked off-topic it judges in scope count too, over all of "
            "them, which raises the bound and the bar the OverRefusal alert must clear when "
            "in-domain unanswerable rows read in scope: over-refusals up to this share of the "
            "scored refusals are explained by the detector's own error (the OverRefusal alert "
            "needs more); absent while unknown.", ["detector"],
        ),
        language_labels=languages,
        topic_labels=topics,
    )  # fmt: skip
    for kind in PII_TYPES:
        metrics.pii_scrubbed.labels(type=kind)
    for language in languages:
        metrics.questions_by_language.labels(language=language)
        metrics.answers_by_language.labels(language=language)
        metrics.refusals_by_language.labels(language=language)
    for topic in topics:
        metrics.questions_by_topic.labels(topic=topic)
    for dimension in DRIFT_DIMENSIONS:
        for comparison in DRIFT_COMPARISONS:
            for state in DRIFT_STATES:
                metrics.drift_state.labels(dimension=dimension, comparison=comparison, state=state)
    for reason in DRIFT_KEPT_OUT_REASONS:
        metrics.drift_kept_out.labels(reason=reason)
    for dimension in DRIFT_DIMENSIONS:  # at 0: increase() needs a sample before the first alarm
        for comparison in DRIFT_COMPARISONS:
            metrics.drift_alarms.labels(dimension=dimension, comparison=comparison)
    return metrics
