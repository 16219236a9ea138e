"""Every Prometheus metric goldwatch exports, built against an injectable registry.

Conventions (client_python ``metrics.py``, Prometheus naming docs): one ``goldwatch_``
namespace, base units (seconds, events), ``_total`` on counters, explicit histogram buckets,
and only bounded label values — :func:`bounded_label` maps anything unexpected to ``"other"``.
Question text, user ids and event ids never become labels.

Live-path metrics (updated once per batch by the poll loop, never per event):

=============================================== ======= =============================
name                                            type    labels
=============================================== ======= =============================
goldwatch_events_consumed_total                 counter source
goldwatch_events_processed_total                counter source
goldwatch_events_dead_lettered_total            counter source, reason (pre-initialised)
goldwatch_events_duplicate_total                counter source
goldwatch_event_fields_dropped_total            counter field, reason (bounded)
goldwatch_batch_size                            histo   (events per batch)
goldwatch_batch_processing_seconds              histo   (decode → commit, seconds)
goldwatch_consumer_lag                          gauge   topic (bounded), partition
goldwatch_consumer_offset_past_end              gauge   topic (bounded), partition
goldwatch_commits_total                         counter
goldwatch_commit_failures_total                 counter
goldwatch_rebalances_total                      counter
goldwatch_kafka_topic_recreations_total         counter
goldwatch_kafka_undecodable_batches_total       counter
goldwatch_last_event_timestamp_seconds          gauge   (newest event time, Unix s)
goldwatch_build_info                            gauge   version, python (always 1)
=============================================== ======= =============================

>>> from prometheus_client import CollectorRegistry
>>> registry = CollectorRegistry()
>>> metrics = build_metrics(registry)
>>> metrics.events_consumed.labels(source="file").inc(3)
>>> registry.get_sample_value("goldwatch_events_consumed_total", {"source": "file"})
3.0
>>> bounded_label("kafka", SOURCES), bounded_label("carrier-pigeon", SOURCES)
('kafka', 'other')
"""

from __future__ import annotations

import math
import platform
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from service import __version__
from service.events import OPTIONAL_FIELD_PATHS
from service.pii import PII_TYPES as _PII_TYPES
from service.pipeline.totals import count_annotations
from service.telemetry.conventions import NAMESPACE, OTHER, bounded_label
from service.telemetry.conventions import finite as _finite
from service.telemetry.conventions import metric_name as _name
from service.telemetry.harvest import (
    HARVEST_KNOWN_VIA,
    HARVEST_SINKS,
    HarvestMetrics,
    build_harvest_metrics,
)
from service.telemetry.shadow import (
    AGREEMENT_BUCKETS,
    ALL,
    BREAKER_STATES,
    GOLD_CUT_MEASURES,
    KNOWN_REFUSAL_KINDS,
    PRODUCTION,
    SHADOW_BREAKDOWN_MEASURES,
    SHADOW_ERRORS,
    SHADOW_MEASURES,
    SHADOW_OUTCOMES,
    SHADOW_SECONDS_BUCKETS,
    ShadowMetrics,
    build_shadow_metrics,
)
from service.telemetry.traces import (
    TRACE_ASSEMBLED_WHY,
    TRACE_PAYLOAD_REASONS,
    TRACE_REPEAT_REASONS,
    TRACE_SPAN_REJECT_REASONS,
    TRACE_UNMAPPED_REASONS,
    TraceMetrics,
    build_trace_metrics,
)

#: Source kinds (``Source.name`` up to the first ``:``, e.g. ``kafka:queries`` → ``kafka``).
SOURCES: tuple[str, ...] = ("kafka", "file", "stdin", "http")

#: Dead-letter reasons: the decoder's codes (consumers.decoding.REASONS, kept equal by a
#: test) plus ``processing_failed`` (a batch whose stage error was suppressed) and
#: ``undecodable_batch`` (records of a Kafka record batch the consumer could not decode).
DEAD_LETTER_REASONS: tuple[str, ...] = (
    "tombstone",
    "too_large",
    "not_utf8",
    "not_json",
    "not_object",
    "missing_field",
    "wrong_type",
    "invalid_value",
    "processing_failed",
    "undecodable_batch",
    # OpenTelemetry traces (issue 20): what assembly does not keep whole, and payloads
    # that are not OTLP (service.traces.assembly.REJECT_REASONS, service.traces.otlp.REASONS)
    "evicted",
    "too_many_spans",
    "attribute_too_large",
    "late_span",
    "not_protobuf",
    "bad_encoding",
)

#: Why a decoder dropped an optional field (consumers.decoding.DROP_REASONS, kept equal by a
#: test); the field label is one of service.events.OPTIONAL_FIELD_PATHS.
FIELD_DROP_REASONS: tuple[str, ...] = ("missing_field", "wrong_type", "invalid_value")

BATCH_SIZE_BUCKETS: tuple[float, ...] = (1, 5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 10_000)
BATCH_SECONDS_BUCKETS: tuple[float, ...] = (
    0.001,
    0.0025,
    0.005,
    0.01,
    0.025,
    0.05,
    0.1,
    0.25,
    0.5,
    1.0,
    2.5,
    5.0,
    10.0,
    30.0,
)


def source_label(source_name: str) -> str:
    """Return the bounded ``source`` label of a ``Source.name`` (``kafka:queries`` → ``kafka``)."""
    return bounded_label(source_name.split(":", 1)[0], SOURCES)


class BatchCounts(NamedTuple):
    """What one micro-batch did, for :meth:`Metrics.observe_batch`.

    Attributes:
        source: the ``Source.name`` (bounded to a :data:`SOURCES` kind for the label).
        consumed: messages polled; ``processed + sum(dead_lettered) + duplicates + other
            drops == consumed``.
        processed: events that went through the whole pipeline.
        dead_lettered: dead letters by reason code.
        duplicates: events dropped by dedup.
        seconds: wall time from decode to the end of the batch's commit, in seconds.
        newest_event_s: newest processed event timestamp, Unix seconds (``None``: none).
    """

    source: str
    consumed: int
    processed: int
    dead_lettered: Mapping[str, int]
    duplicates: int
    seconds: float
    newest_event_s: float | None


#: Cumulative counters of ``Source.status()`` mirrored into Prometheus counters.
STATUS_COUNTERS: tuple[str, ...] = (
    "commits", "commit_failures", "rebalances", "topic_recreations", "undecodable_batches",
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Metrics:
    """The metric objects; build with :func:`build_metrics`.

    Attributes:
        topics: the topic label values allowed on ``consumer_lag`` (others become ``other``).
        reasons: the dead-letter reasons allowed (and pre-initialised).
    """

    events_consumed: Counter
    events_processed: Counter
    events_dead_lettered: Counter
    events_duplicate: Counter
    event_fields_dropped: Counter
    batch_size: Histogram
    batch_processing_seconds: Histogram
    consumer_lag: Gauge
    consumer_offset_past_end: Gauge
    commits: Counter
    commit_failures: Counter
    rebalances: Counter
    topic_recreations: Counter
    undecodable_batches: Counter
    last_event_timestamp_seconds: Gauge
    build_info: Gauge
    topics: tuple[str, ...]
    reasons: tuple[str, ...]

    def lag_labels(self, topic: str, partition: int) -> Gauge:
        """Return the ``consumer_lag`` child for a bounded ``topic`` and a partition number."""
        return self.consumer_lag.labels(
            topic=bounded_label(topic, self.topics), partition=str(int(partition))
        )

    def observe_batch(self, counts: BatchCounts) -> None:
        """Update the event counters and batch histograms once for a whole batch."""
        source = source_label(counts.source)
        self.events_consumed.labels(source=source).inc(counts.consumed)
        self.events_processed.labels(source=source).inc(counts.processed)
        self.events_duplicate.labels(source=source).inc(counts.duplicates)
        for reason, n in counts.dead_lettered.items():
            self.dead_lettered(counts.source, reason).inc(n)
        self.batch_size.observe(counts.consumed)
        self.batch_processing_seconds.observe(counts.seconds)
        if counts.newest_event_s is not None:
            self.last_event_timestamp_seconds.set(counts.newest_event_s)

    def observe_status(self, status: Mapping[str, Any], previous: Mapping[str, Any]) -> None:
        """Mirror a ``Source.status()`` sample: counter deltas since ``previous``, and lag.

        ``status`` may hold the cumulative counts of :data:`STATUS_COUNTERS` (ints)
        and ``lag``: a list of ``{"topic", "partition", "lag", "past_end"}`` (``None`` =
        unknown, left as it was). Missing keys are ignored; counters never go backwards.
        """
        for key in STATUS_COUNTERS:
            delta = int(status.get(key) or 0) - int(previous.get(key) or 0)
            if delta > 0:
                getattr(self, key).inc(delta)
        for row in status.get("lag") or ():
            if row.get("lag") is not None:
                self.lag_labels(str(row["topic"]), int(row["partition"])).set(row["lag"])
            if row.get("past_end") is not None:
                self.consumer_offset_past_end.labels(
                    topic=bounded_label(str(row["topic"]), self.topics),
                    partition=str(int(row["partition"])),
                ).set(row["past_end"])

    def observe_dropped_fields(self, drops: Mapping[tuple[str, str], int]) -> None:
        """Count optional fields the decoder dropped (the events were kept): ``drops`` maps
        ``(field path, reason)`` to a count; labels outside the schema's become ``other``."""
        for (name, reason), n in drops.items():
            self.event_fields_dropped.labels(
                field=bounded_label(name, OPTIONAL_FIELD_PATHS),
                reason=bounded_label(reason, FIELD_DROP_REASONS),
            ).inc(n)

    def dead_lettered(self, source: str, reason: str) -> Counter:
        """Return the ``events_dead_lettered_total`` child with bounded labels."""
        return self.events_dead_lettered.labels(
            source=source_label(source), reason=bounded_label(reason, self.reasons)
        )


def _event_counters(registry: CollectorRegistry) -> dict[str, Counter]:
    def counter(name: str, doc: str, labels: Sequence[str] = ("source",)) -> Counter:
        return Counter(_name(name), doc, list(labels), registry=registry)

    return {
        "events_consumed": counter(
            "events_consumed", "Messages read from the source (before decoding)."
        ),
        "events_processed": counter(
            "events_processed", "Events that went through the whole pipeline."
        ),
        "events_dead_lettered": counter(
            "events_dead_lettered",
            "Messages written to the dead-letter destination, by reason.",
            ("source", "reason"),
        ),
        "events_duplicate": counter(
            "events_duplicate", "Events dropped because their event_id was seen recently."
        ),
        "event_fields_dropped": counter(
            "event_fields_dropped",
            "Optional event fields dropped for a wrong type or value (the event was kept).",
            ("field", "reason"),
        ),
    }


def _batch_metrics(registry: CollectorRegistry) -> dict[str, Histogram]:
    return {
        "batch_size": Histogram(
            _name("batch_size"),
            "Messages per polled micro-batch (events).",
            buckets=BATCH_SIZE_BUCKETS,
            registry=registry,
        ),
        "batch_processing_seconds": Histogram(
            _name("batch_processing_seconds"),
            "Time from decoding a batch to its checkpoint and commit, in seconds.",
            buckets=BATCH_SECONDS_BUCKETS,
            registry=registry,
        ),
    }


def _consumer_metrics(registry: CollectorRegistry) -> dict[str, Counter | Gauge]:
    return {
        "consumer_lag": Gauge(
            _name("consumer_lag"),
            "Messages between the committed offset and the end of the partition.",
            ["topic", "partition"],
            registry=registry,
        ),
        "consumer_offset_past_end": Gauge(
            _name("consumer_offset_past_end"),
            "Offsets the committed offset is beyond the end of the partition (0 normally; "
            "above 0 the group points at offsets the partition does not have, not ready).",
            ["topic", "partition"],
            registry=registry,
        ),
        "commits": Counter(_name("commits"), "Successful offset commits.", registry=registry),
        "commit_failures": Counter(
            _name("commit_failures"), "Offset commits that failed.", registry=registry
        ),
        "rebalances": Counter(
            _name("rebalances"), "Consumer-group rebalances seen.", registry=registry
        ),
        "topic_recreations": Counter(
            _name("kafka_topic_recreations"),
            "Times the consumed topic was found deleted and created again (new topic id); "
            "it is then read from its beginning.",
            registry=registry,
        ),
        "undecodable_batches": Counter(
            _name("kafka_undecodable_batches"),
            "Kafka record batches that could not be decoded (codec missing, corrupt); their "
            "records are dead-lettered as undecodable_batch.",
            registry=registry,
        ),
        "last_event_timestamp_seconds": Gauge(
            _name("last_event_timestamp_seconds"),
            "Timestamp of the newest processed event, in Unix seconds.",
            registry=registry,
        ),
        "build_info": Gauge(
            _name("build_info"),
            "Always 1; labels carry the goldwatch and Python versions.",
            ["version", "python"],
            registry=registry,
        ),
    }


def build_metrics(
    registry: CollectorRegistry,
    *,
    topics: Sequence[str] = (),
    reasons: Sequence[str] = DEAD_LETTER_REASONS,
    sources: Sequence[str] = SOURCES,
    version: str = __version__,
) -> Metrics:
    """Register every metric on ``registry`` and pre-initialise the bounded label sets.

    Args:
        registry: where to register (a fresh ``CollectorRegistry()`` per test).
        topics: configured topics; other topic labels on ``consumer_lag`` become ``other``.
        reasons: dead-letter reason codes, pre-initialised for every source in ``sources``.
        sources: source kinds whose event counters are pre-initialised at 0.
        version: the ``version`` label of ``goldwatch_build_info``.

    Raises:
        ValueError: a metric is already registered on ``registry`` (build once per registry).
    """
    objects: dict[str, object] = {
        **_event_counters(registry),
        **_batch_metrics(registry),
        **_consumer_metrics(registry),
    }
    metrics = Metrics(**objects, topics=tuple(topics), reasons=tuple(reasons))  # type: ignore[arg-type]
    per_source = (metrics.events_consumed, metrics.events_processed, metrics.events_duplicate)
    for source in sources:
        for counter in per_source:
            counter.labels(source=source)
        for reason in metrics.reasons:
            metrics.events_dead_lettered.labels(source=source, reason=reason)
    metrics.build_info.labels(version=version, python=platform.python_version()).set(1)
    return metrics


# -- live analytics (PII, language, topic, refusal, out-of-scope, drift) ----------------------

#: Drift dimensions and comparisons (bounded label values).
DRIFT_DIMENSIONS: tuple[str, ...] = ("language", "topic", "refusal", "out_of_scope")
DRIFT_COMPARISONS: tuple[str, ...] = ("reference", "baseline")
DRIFT_STATES: tuple[str, ...] = ("ok", "drift", "insufficient_data", "uncalibrated")
#: Detectors that report their measured quality (bounded label values).
DETECTORS: tuple[str, ...] = ("out_of_scope", "novelty")
#: Rates of a detector's operating point (``goldwatch_detector_operating_point_ratio``).
OPERATING_RATES: tuple[str, ...] = ("tpr", "fpr", "balanced_accuracy")
PII_TYPES: tuple[str, ...] = _PII_TYPES  # service.pii's fixed types: a bounded label set


@dataclass(frozen=True, slots=True)
class AnalyticsMetrics:
    """Metrics of the analytics stages; build with :func:`build_analytics_metrics`.

    ============================================ ======= ===============================
    name                                         type    labels
    ============================================ ======= ===============================
    goldwatch_pii_scrubbed_total                 counter type
    goldwatch_questions_by_language_total        counter language (allow-list + other)
    goldwatch_questions_by_topic_total           counter topic (model topics + novel)
    goldwatch_answers_total                      counter (events with an answer)
    goldwatch_refusals_total                     counter (answers that refused)
    goldwatch_scope_scored_total                 counter (questions with a scope score)
    goldwatch_out_of_scope_total                 counter (questions judged out of scope)
    goldwatch_over_refusals_total                counter (refused while in scope)
    goldwatch_under_refusals_total               counter (answered while out of scope)
    goldwatch_gold_share_ratio                   gauge   dimension, category
    goldwatch_drift_js_divergence                gauge   dimension, comparison
    goldwatch_drift_psi                          gauge   dimension, comparison
    goldwatch_drift_p_value                      gauge   dimension, comparison
    goldwatch_drift_state                        gauge   dimension, comparison, state (1/0)
    goldwatch_drift_rate_ratio                   gauge   dimension, window (current/compared)
    goldwatch_coverage_gap_ratio                 gauge   dimension, category
    goldwatch_detector_auc                       gauge   detector (ROC AUC on its
                                                         calibration data; NaN: unknown)
    goldwatch_detector_auc_bound                 gauge   detector, bound (low, high)
    goldwatch_detector_operating_point_ratio     gauge   detector, rate (tpr, fpr,
                                                         balanced_accuracy at its threshold)
    goldwatch_detector_trusted                   gauge   detector (1: AUC ≥ quality floor
                                                         and balanced accuracy ≥ its floor)
    ============================================ ======= ===============================
    """

    pii_scrubbed: Counter
    questions_by_language: Counter
    questions_by_topic: Counter
    answers: Counter
    refusals: Counter
    scope_scored: Counter
    out_of_scope: Counter
    over_refusals: Counter
    under_refusals: Counter
    gold_share: Gauge
    drift_js_divergence: Gauge
    drift_psi: Gauge
    drift_p_value: Gauge
    drift_state: Gauge
    drift_rate: Gauge
    coverage_gap: Gauge
    detector_auc: Gauge
    detector_auc_bound: Gauge
    detector_operating_point: Gauge
    detector_trusted: Gauge
    language_labels: tuple[str, ...]
    topic_labels: tuple[str, ...]

    def observe_annotations(self, annotations: Sequence[Mapping[str, Any]]) -> None:
        """Count one batch's annotations (one ``inc`` per label value, not per event)."""
        languages: dict[str, int] = {}
        topics: dict[str, int] = {}
        flags, pii = count_annotations(annotations)
        for notes in annotations:
            language = bounded_label(notes.get("language_label", notes.get("language")),
                                     self.language_labels)  # fmt: skip
            languages[language] = languages.get(language, 0) + 1
            topic = bounded_label(notes.get("topic"), self.topic_labels)
            topics[topic] = topics.get(topic, 0) + 1
        for kind, n in pii.items():
            self.pii_scrubbed.labels(type=bounded_label(kind, PII_TYPES)).inc(n)
        for language, n in languages.items():
            self.questions_by_language.labels(language=language).inc(n)
        for topic, n in topics.items():
            self.questions_by_topic.labels(topic=topic).inc(n)
        for key, counter in (
            ("answers", self.answers),
            ("refusals", self.refusals),
            ("scope_scored", self.scope_scored),
            ("out_of_scope", self.out_of_scope),
            ("over_refusals", self.over_refusals),
            ("under_refusals", self.under_refusals),
        ):
            counter.inc(flags[key])  # fmt: skip

    def observe_drift(self, report: Mapping[str, Any]) -> None:
        """Mirror a :meth:`service.drift.stage.DriftStage.report` into the drift gauges."""
        for dimension, body in report.items():
            if dimension not in DRIFT_DIMENSIONS:
                continue
            for comparison, test in (body.get("comparisons") or {}).items():
                if comparison not in DRIFT_COMPARISONS:
                    continue
                labels = {"dimension": dimension, "comparison": comparison}
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

    def set_gold_shares(self, gold_counts: Mapping[str, Mapping[str, int]]) -> None:
        """Export the gold set's share of every category (the drift references)."""
        for dimension, counts in gold_counts.items():
            total = sum(counts.values())
            allowed = self._allowed(dimension)
            shares: dict[str, float] = {}
            for category, n in counts.items():  # categories outside the labels sum into other
                label = bounded_label(category, allowed)
                shares[label] = shares.get(label, 0.0) + (n / total if total else 0.0)
            for label, share in shares.items():
                self.gold_share.labels(dimension=dimension, category=label).set(share)

    def set_detector_quality(
        self,
        qualities: Mapping[str, Mapping[str, Any]],
        floor: float,
        min_balanced_accuracy: float = 0.0,
    ) -> None:
        """Export each detector's measured quality: ``qualities`` maps a detector name (one
        of :data:`DETECTORS`; others are skipped) to ``{"auc", "auc_low", "auc_high", "tpr",
        "fpr", "balanced_accuracy"}`` as in
        :meth:`service.evaluation.detector_quality.DetectorQuality.as_dict` (``None`` or NaN exports
        NaN; the rates are optional: a detector without an operating point). ``trusted`` is 1
        when the AUC is known and ≥ ``floor`` and the balanced accuracy, when known, is
        ≥ ``min_balanced_accuracy``."""
        for detector, quality in qualities.items():
            if detector not in DETECTORS:
                continue
            auc = quality.get("auc")
            self.detector_auc.labels(detector=detector).set(_finite(
                float("nan") if auc is None else auc))  # fmt: skip
            for bound in ("low", "high"):
                value = quality.get(f"auc_{bound}")
                self.detector_auc_bound.labels(detector=detector, bound=bound).set(
                    float("nan") if value is None else _finite(value)
                )
            rates = {rate: quality.get(rate) for rate in OPERATING_RATES}
            for rate, value in rates.items():
                self.detector_operating_point.labels(detector=detector, rate=rate).set(
                    float("nan") if value is None else _finite(value)
                )
            ba = rates["balanced_accuracy"]
            point_ok = ba is None or not math.isfinite(ba) or float(ba) >= min_balanced_accuracy
            self.detector_trusted.labels(detector=detector).set(
                auc is not None and float(auc) >= floor and point_ok  # NaN >= floor is False
            )

    def _allowed(self, dimension: str) -> tuple[str, ...]:
        return self.language_labels if dimension == "language" else self.topic_labels


def _topic_help(descriptions: Mapping[str, str]) -> str:
    """``Questions by topic.`` plus ``Topics: topic-0 = fee, hostel; ...`` for the topics whose
    label says more than their name (at most 100, natural order: topic-2 before topic-10)."""
    from service.topics.model import topic_sort_key

    named = [label for name, label in sorted(descriptions.items(),
                                             key=lambda kv: topic_sort_key(kv[0]))
             if label != name][:100]  # fmt: skip
    return "Questions by topic." + (f" Topics: {'; '.join(named)}." if named else "")


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
        answers=counter("answers", "Events that carried an answer."),
        refusals=counter("refusals", "Answers that declined to answer."),
        scope_scored=counter("scope_scored", "Questions given an out-of-scope score."),
        out_of_scope=counter("out_of_scope", "Questions judged out of scope."),
        over_refusals=counter("over_refusals", "Refusals of questions judged in scope."),
        under_refusals=counter("under_refusals", "Answers to questions judged out of scope."),
        gold_share=gauge(
            "gold_share_ratio", "The gold set's share of a category.", ["dimension", "category"]
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
            "insufficient_data, uncalibrated: its detector is below the quality floor and "
            "raises no alarm), 0 for the others.", ["dimension", "comparison", "state"],
        ),
        drift_rate=gauge(
            "drift_rate_ratio", "Rate (refusals, out-of-scope) in the current window and in "
            "the window it is compared with.", ["dimension", "window"],
        ),
        coverage_gap=gauge(
            "coverage_gap_ratio", "Lower CI bound of live share minus gold-set share, for "
            "categories the gold set under-covers (the drift view's coverage gaps: live share "
            "at least twice the gold share; not harvest's coverage_gap reason).",
            ["dimension", "category"],
        ),
        detector_auc=gauge(
            "detector_auc", "ROC AUC of a detector (out-of-scope, novelty) on the data it was "
            "calibrated on (cross-validated or leave-one-out scores); NaN: not measured.",
            ["detector"],
        ),
        detector_auc_bound=gauge(
            "detector_auc_bound", "Bounds of the 95 % bootstrap interval of the detector's "
            "ROC AUC.", ["detector", "bound"],
        ),
        detector_operating_point=gauge(
            "detector_operating_point_ratio", "A detector's rates at the threshold its counts "
            "use, on its calibration data (cross-validated scores): tpr, fpr and "
            "balanced_accuracy = (tpr + 1 - fpr) / 2; NaN: no operating point reported.",
            ["detector", "rate"],
        ),
        detector_trusted=gauge(
            "detector_trusted", "1 when the detector's ROC AUC reaches analytics.quality_floor "
            "and, for a detector with an operating point (out-of-scope), its balanced accuracy "
            "at its threshold reaches analytics.scope_min_balanced_accuracy (its counts are "
            "calibrated and it may alarm), else 0.", ["detector"],
        ),
        language_labels=languages,
        topic_labels=topics,
    )  # fmt: skip
    for kind in PII_TYPES:
        metrics.pii_scrubbed.labels(type=kind)
    for language in languages:
        metrics.questions_by_language.labels(language=language)
    for topic in topics:
        metrics.questions_by_topic.labels(topic=topic)
    for dimension in DRIFT_DIMENSIONS:
        for comparison in DRIFT_COMPARISONS:
            for state in DRIFT_STATES:
                metrics.drift_state.labels(dimension=dimension, comparison=comparison, state=state)
    return metrics


#: Every name other modules import from ``service.telemetry`` (kept stable across the split
#: into one module per metric family), grouped by the module that defines it.
__all__ = [
    # conventions
    "NAMESPACE", "OTHER", "bounded_label",
    # engine: the poll loop and the engine (events, batches, consumer lag, commits)
    "SOURCES", "DEAD_LETTER_REASONS", "FIELD_DROP_REASONS", "BATCH_SIZE_BUCKETS",
    "BATCH_SECONDS_BUCKETS", "STATUS_COUNTERS", "source_label", "BatchCounts", "Metrics",
    "build_metrics",
    # analytics: PII, language, topic, refusal, out-of-scope, drift, detector quality
    "DRIFT_DIMENSIONS", "DRIFT_COMPARISONS", "DRIFT_STATES", "DETECTORS", "OPERATING_RATES",
    "PII_TYPES", "AnalyticsMetrics", "build_analytics_metrics",
    # shadow: shadow evaluation, gold-set runs, known questions, access control
    "SHADOW_MEASURES", "SHADOW_BREAKDOWN_MEASURES", "SHADOW_OUTCOMES", "SHADOW_ERRORS",
    "BREAKER_STATES", "AGREEMENT_BUCKETS", "SHADOW_SECONDS_BUCKETS", "GOLD_CUT_MEASURES",
    "KNOWN_REFUSAL_KINDS", "PRODUCTION", "ALL", "ShadowMetrics", "build_shadow_metrics",
    # harvest: suggested gold questions
    "HARVEST_KNOWN_VIA", "HARVEST_SINKS", "HarvestMetrics", "build_harvest_metrics",
    # traces: trace ingest (POST /v1/traces, OTLP topics)
    "TRACE_ASSEMBLED_WHY", "TRACE_SPAN_REJECT_REASONS", "TRACE_UNMAPPED_REASONS",
    "TRACE_REPEAT_REASONS", "TRACE_PAYLOAD_REASONS", "TraceMetrics", "build_trace_metrics",
]  # fmt: skip
