"""Metrics of the live path: the poll loop, the engine and the consumer (events, micro-batches,
consumer lag, offset commits), updated once per batch by :mod:`consumers.loop` and
:mod:`consumers.engine`, never per event; :func:`build_metrics` builds them in every process
(serve and replay).

=============================================== ======= =============================
name                                            type    labels
=============================================== ======= =============================
goldwatch_events_consumed_total                 counter source
goldwatch_events_processed_total                counter source
goldwatch_events_dead_lettered_total            counter source, reason (pre-initialised)
goldwatch_events_duplicate_total                counter source
goldwatch_blank_lines_total                     counter source (file, stdin)
goldwatch_event_fields_dropped_total            counter field, reason (bounded)
goldwatch_batch_size                            histo   (events per batch)
goldwatch_batch_processing_seconds              histo   (decode → commit, seconds)
goldwatch_consumer_lag                          gauge   topic (bounded), partition
goldwatch_consumer_offset_past_end              gauge   topic (bounded), partition
goldwatch_consumer_uncommitted_offsets          gauge   (checkpointed, not committed)
goldwatch_commits_total                         counter
goldwatch_commit_failures_total                 counter
goldwatch_rebalances_total                      counter
goldwatch_kafka_topic_recreations_total         counter
goldwatch_kafka_undecodable_batches_total       counter
goldwatch_last_event_timestamp_seconds          gauge   (newest event time, Unix s)
goldwatch_state_file_recreated_total            counter (found deleted/replaced, rewritten)
goldwatch_state_file_lost                       gauge   (1: cannot be rewritten, no commits)
goldwatch_state_uncounted_offsets               gauge   (offsets before an empty start)
goldwatch_build_info                            gauge   version, python (always 1;
                                                        :mod:`~service.telemetry.build_info`)
=============================================== ======= =============================

>>> from prometheus_client import CollectorRegistry
>>> registry = CollectorRegistry()
>>> metrics = build_metrics(registry, topics=["queries"])
>>> metrics.observe_batch(BatchCounts("kafka:queries", consumed=5, processed=3,
...     dead_lettered={"not_json": 1}, duplicates=1, seconds=0.02, newest_event_s=None))
>>> registry.get_sample_value("goldwatch_events_processed_total", {"source": "kafka"})
3.0
>>> registry.get_sample_value("goldwatch_events_dead_lettered_total",
...                           {"source": "kafka", "reason": "not_json"})
1.0
>>> metrics.lag_labels("deleted-topic", 0).set(7)
>>> registry.get_sample_value("goldwatch_consumer_lag", {"topic": "other", "partition": "0"})
7.0
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from service import __version__
from service.events import OPTIONAL_FIELD_PATHS
from service.telemetry.build_info import build_info_gauge
from service.telemetry.conventions import bounded_label
from service.telemetry.conventions import metric_name as _name

#: Source kinds (``Source.name`` up to the first ``:``, e.g. ``kafka:queries`` → ``kafka``).
SOURCES: tuple[str, ...] = ("kafka", "file", "stdin", "http")
#: The source kinds that read lines, so have blank lines (``goldwatch_blank_lines_total``).
LINE_SOURCES: tuple[str, ...] = ("file", "stdin")

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

#: Why an optional field was dropped from a kept event: the decoder's reasons
#: (consumers.decoding.DROP_REASONS, kept equal by a test), then trace ingest's own
#: ``other_span_ignored`` (retrieved documents on a span that is not the trace's retrieval
#: span, ignored: service.traces.mapping.OTHER_SPAN_IGNORED); the field label is one of
#: service.events.OPTIONAL_FIELD_PATHS.
FIELD_DROP_REASONS: tuple[str, ...] = (
    "missing_field",
    "wrong_type",
    "invalid_value",
    "other_span_ignored",
)

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
        consumed: messages polled, blank lines left out; ``processed + sum(dead_lettered)
            + duplicates + other drops == consumed``.
        processed: events that went through the whole pipeline.
        dead_lettered: dead letters by reason code.
        duplicates: events dropped by dedup.
        seconds: wall time from decode to the end of the batch's commit, in seconds.
        newest_event_s: newest processed event timestamp, Unix seconds (``None``: none).
        blank_lines: blank lines of a JSONL input (:class:`~consumers.base.BlankLine`): no
            data, neither consumed events nor dead letters; lines read = ``consumed +
            blank_lines``.
    """

    source: str
    consumed: int
    processed: int
    dead_lettered: Mapping[str, int]
    duplicates: int
    seconds: float
    newest_event_s: float | None
    blank_lines: int = 0


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
    blank_lines: Counter
    event_fields_dropped: Counter
    batch_size: Histogram
    batch_processing_seconds: Histogram
    consumer_lag: Gauge
    consumer_offset_past_end: Gauge
    consumer_uncommitted_offsets: Gauge
    commits: Counter
    commit_failures: Counter
    rebalances: Counter
    topic_recreations: Counter
    undecodable_batches: Counter
    last_event_timestamp_seconds: Gauge
    state_file_recreated: Counter
    state_file_lost: Gauge
    state_uncounted_offsets: Gauge
    build_info: Gauge
    topics: tuple[str, ...]
    reasons: tuple[str, ...]
    #: ``(topic label, partition)`` of the lag series exported now (the partitions assigned at
    #: the last status sample); one no longer assigned is removed, see :meth:`observe_status`
    lag_series: set[tuple[str, str]] = field(default_factory=set)
    #: the state store's ``recreated`` count mirrored so far (``{"recreated": n}``)
    state_seen: dict[str, int] = field(default_factory=dict)

    def observe_state_file(self, recreated: int, lost: bool) -> None:
        """Mirror the state store's :attr:`~service.state.StateStore.recreated` count (its
        increase since the last call) and whether its file is lost (:attr:`~service.state.
        StateStore.durable` false: 1, else 0)."""
        delta = recreated - self.state_seen.get("recreated", 0)
        if delta > 0:
            self.state_file_recreated.inc(delta)
            self.state_seen["recreated"] = recreated
        self.state_file_lost.set(1 if lost else 0)

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
        if counts.blank_lines:
            self.blank_lines.labels(source=source).inc(counts.blank_lines)
        for reason, n in counts.dead_lettered.items():
            self.dead_lettered(counts.source, reason).inc(n)
        self.batch_size.observe(counts.consumed)
        self.batch_processing_seconds.observe(counts.seconds)
        if counts.newest_event_s is not None:
            self.last_event_timestamp_seconds.set(counts.newest_event_s)

    def observe_status(self, status: Mapping[str, Any], previous: Mapping[str, Any]) -> None:
        """Mirror a ``Source.status()`` sample: counter deltas since ``previous``, and lag.

        ``status`` may hold the cumulative counts of :data:`STATUS_COUNTERS` (ints)
        ``uncommitted_offsets`` (an int, the gauge's value), and ``lag``: a list of
        ``{"topic", "partition", "lag", "past_end"}`` (``None`` =
        unknown, left as it was), and ``assigned_partitions`` (partition numbers). The lag and
        past-end series of a partition neither in ``lag`` nor assigned in this sample or in
        ``previous`` are removed: a replica that lost a partition in a rebalance must not keep
        exporting its last lag, which ``max`` over replicas on the dashboard and in
        ``ConsumerLagHigh`` would read as the partition's. Two samples, not one: kafka-python
        revokes every partition at a rebalance and assigns them again, and lag is sampled a
        few seconds after; a series that vanished for that moment would reset the alert's
        ``for``. Missing keys are ignored (no ``lag``: nothing removed); counters never go
        backwards.
        """
        for key in STATUS_COUNTERS:
            delta = int(status.get(key) or 0) - int(previous.get(key) or 0)
            if delta > 0:
                getattr(self, key).inc(delta)
        uncommitted = status.get("uncommitted_offsets")
        if uncommitted is not None:
            self.consumer_uncommitted_offsets.set(uncommitted)
        rows = status.get("lag")
        if rows is None:
            return
        assigned: set[tuple[str, str]] = set()
        for row in rows:
            series = (bounded_label(str(row["topic"]), self.topics), str(int(row["partition"])))
            assigned.add(series)
            if row.get("lag") is not None:
                self.consumer_lag.labels(*series).set(row["lag"])
            if row.get("past_end") is not None:
                self.consumer_offset_past_end.labels(*series).set(row["past_end"])
        owned = {int(number) for sample in (status, previous)
                 for number in sample.get("assigned_partitions") or ()}  # fmt: skip
        assigned |= {series for series in self.lag_series if int(series[1]) in owned}
        for series in self.lag_series - assigned:
            for gauge in (self.consumer_lag, self.consumer_offset_past_end):
                try:
                    gauge.remove(*series)
                except KeyError:  # never set (its lag was always unknown)
                    pass
        self.lag_series.clear()
        self.lag_series.update(assigned)

    def observe_dropped_fields(self, drops: Mapping[tuple[str, str], int]) -> dict[str, int]:
        """Count optional fields the decoder dropped (the events were kept): ``drops`` maps
        ``(field path, reason)`` to a count; labels outside the schema's become ``other``.
        Returns what was counted as ``{"<field>: <reason>": n}`` (the bounded labels, as
        :meth:`fields_dropped` names them), for the persisted totals."""
        counted: dict[str, int] = {}
        for (name, reason), n in drops.items():
            label = bounded_label(name, OPTIONAL_FIELD_PATHS)
            why = bounded_label(reason, FIELD_DROP_REASONS)
            self.event_fields_dropped.labels(field=label, reason=why).inc(n)
            key = f"{label}: {why}"
            counted[key] = counted.get(key, 0) + n
        return counted

    def fields_dropped(self) -> dict[str, int]:
        """``{"<field>: <reason>": n}``, sorted: the optional fields the decoder dropped (the
        events kept) since this process started, as ``event_fields_dropped_total`` counts
        them (not persisted: a restart starts from 0)."""
        dropped: dict[str, int] = {}
        for metric in self.event_fields_dropped.collect():
            for sample in metric.samples:
                if sample.name.endswith("_total") and sample.value:
                    key = f"{sample.labels['field']}: {sample.labels['reason']}"
                    dropped[key] = int(sample.value)
        return dict(sorted(dropped.items()))

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
        "blank_lines": counter(
            "blank_lines",
            "Blank (empty or whitespace-only) lines of a JSONL input: no data, so neither "
            "events consumed nor dead letters; lines read = events consumed + blank lines.",
        ),
        "event_fields_dropped": counter(
            "event_fields_dropped",
            "Optional event fields dropped (the event was kept): missing, of a wrong type or "
            "an invalid value, or other_span_ignored (retrieved documents on a trace span that "
            "is not its retrieval span: ignored).",
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
            "Messages between the end of the partition and this replica's committed offset (its "
            "consumer position only while nothing is committed), as /v1/status source.lag; set "
            "every pipeline.status_interval_s, kept at its last value while unknown, removed "
            "once the partition is no longer assigned to this replica.",
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
        "consumer_uncommitted_offsets": Gauge(
            _name("consumer_uncommitted_offsets"),
            "Offsets this replica checkpointed but has not committed yet, summed over its "
            "partitions: were it to die now, the next owner would read them again and count "
            "them a second time (at-least-once). Usually 0; up to about "
            "kafka.commit_interval_s of events while commits succeed. Set every "
            "pipeline.status_interval_s.",
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
    }


def _state_metrics(registry: CollectorRegistry) -> dict[str, Counter | Gauge]:
    return {
        "state_file_recreated": Counter(
            _name("state_file_recreated"),
            "Times a checkpoint found the state file deleted, moved or replaced at its path "
            "(not the file being written) and wrote it there again with the whole current "
            "state, before committing offsets; the status says when, until restart.",
            registry=registry,
        ),
        "state_file_lost": Gauge(
            _name("state_file_lost"),
            "1 while the state file is gone from its path and cannot be written there again "
            "(directory gone, read-only): offsets are not committed and HTTP ingest is not "
            "acknowledged meanwhile (a restart re-reads from the last commit); 0 otherwise.",
            registry=registry,
        ),
        "state_uncounted_offsets": Gauge(
            _name("state_uncounted_offsets"),
            "After a start with an empty state (no state file, or a new one), the offsets "
            "before the first one read, summed over the partitions: events the consumer "
            "group had committed, whose counts are not in this replica's totals (0: none).",
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
        **_state_metrics(registry),
        "build_info": build_info_gauge(registry, version),
    }
    metrics = Metrics(**objects, topics=tuple(topics), reasons=tuple(reasons))  # type: ignore[arg-type]
    per_source = (metrics.events_consumed, metrics.events_processed, metrics.events_duplicate)
    for source in sources:
        for counter in per_source:
            counter.labels(source=source)
        if source in LINE_SOURCES:
            metrics.blank_lines.labels(source=source)
        for reason in metrics.reasons:
            metrics.events_dead_lettered.labels(source=source, reason=reason)
    return metrics
