"""Metrics of trace ingest: OTLP spans assembled into traces, then mapped to events
(``POST /v1/traces`` and the OTLP Kafka topics, issue 20). Updated by
:mod:`service.api.trace_ingest` (and its routes) and :mod:`consumers.trace_source` from what
:mod:`service.traces.assembly` reports.
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from service.telemetry.conventions import metric_name as _name


@dataclass(frozen=True, slots=True)
class TraceMetrics:
    """Metrics of trace ingest (``POST /v1/traces``, issue 20); build with
    :func:`build_trace_metrics`.

    ========================================== ======= ====================================
    name                                       type    labels
    ========================================== ======= ====================================
    goldwatch_traces_assembled_total           counter why (settled, timeout, flushed)
    goldwatch_traces_without_root_total        counter (handed out with no root span)
    goldwatch_traces_unmapped_total            counter reason (no question: dead-lettered)
    goldwatch_trace_spans_received_total       counter (spans of decodable payloads)
    goldwatch_trace_spans_rejected_total       counter reason (invalid_value, wrong_type:
                                                       unreadable; evicted, too_many_spans,
                                                       attribute_too_large, late_span)
    goldwatch_trace_payloads_rejected_total    counter reason (undecodable payloads)
    goldwatch_trace_spans_repeated_total       counter reason (repeated, duplicate: spans
                                                       sent again, not dead letters)
    goldwatch_open_traces                      gauge   (traces being assembled)
    goldwatch_traces_restored_total            counter (open traces read back from the state
                                                       file at start, ``/v1/traces``)
    goldwatch_trace_requests_throttled_total   counter (``/v1/traces`` requests answered 429:
                                                       the open traces were full)
    ========================================== ======= ====================================
    """

    assembled: Counter
    without_root: Counter
    unmapped: Counter
    spans_received: Counter
    spans_rejected: Counter
    payloads_rejected: Counter
    spans_repeated: Counter
    open_traces: Gauge
    restored: Counter
    throttled: Counter


#: Label values of the trace metrics (pre-initialised).
TRACE_ASSEMBLED_WHY: tuple[str, ...] = ("settled", "timeout", "flushed")
TRACE_SPAN_REJECT_REASONS: tuple[str, ...] = (
    "invalid_value", "wrong_type", "evicted", "too_many_spans", "attribute_too_large",
    "late_span",
)  # fmt: skip
TRACE_UNMAPPED_REASONS: tuple[str, ...] = ("missing_field", "invalid_value")
TRACE_REPEAT_REASONS: tuple[str, ...] = ("repeated", "duplicate")
TRACE_PAYLOAD_REASONS: tuple[str, ...] = (
    "not_protobuf", "not_utf8", "not_json", "wrong_type", "invalid_value", "bad_encoding",
)  # fmt: skip


def build_trace_metrics(registry: CollectorRegistry) -> TraceMetrics:
    """Register the trace-ingest metrics on ``registry``, labels pre-initialised.

    Raises:
        ValueError: already registered on ``registry``.
    """
    metrics = TraceMetrics(
        assembled=Counter(_name("traces_assembled"), "Traces handed out for mapping, by why: "
                          "settled (root seen, then quiet for traces.assembly.settle_s), "
                          "timeout (traces.assembly.timeout_s after the first span), flushed "
                          "(at shutdown, only with traces.flush_on_stop: else open traces stay "
                          "in the state file for the next start).", ["why"], registry=registry),
        without_root=Counter(_name("traces_without_root"), "Traces handed out without a root "
                             "span (the earliest orphan span stands in for it).",
                             registry=registry),
        unmapped=Counter(_name("traces_unmapped"), "Assembled traces that gave no event (no "
                         "question), dead-lettered.", ["reason"], registry=registry),
        spans_received=Counter(_name("trace_spans_received"), "Spans of the OTLP payloads "
                               "that could be decoded (unreadable spans included).",
                               registry=registry),
        spans_rejected=Counter(_name("trace_spans_rejected"), "Spans not kept whole: "
                               "unreadable in a decodable /v1/traces payload (invalid_value, "
                               "wrong_type: a bad id, timestamp or attribute; its other spans "
                               "are kept), or by assembly (evicted with their trace, over the "
                               "per-trace bound, an attribute cut, late), dead-lettered.",
                               ["reason"], registry=registry),
        payloads_rejected=Counter(_name("trace_payloads_rejected"), "OTLP payloads that could "
                                  "not be decoded, dead-lettered.", ["reason"],
                                  registry=registry),
        spans_repeated=Counter(_name("trace_spans_repeated"), "Spans received again (same "
                               "trace and span id: an exporter's retry), not kept twice: "
                               "repeated (its trace still open), duplicate (its trace "
                               "already handed out; the trace counts as one duplicate event per "
                               "retry, however its spans are split across requests).",
                               ["reason"], registry=registry),
        open_traces=Gauge(_name("open_traces"), "Traces being assembled (held in memory).",
                          registry=registry),
        restored=Counter(_name("traces_restored"), "Open traces of /v1/traces read back from "
                         "the state file at start (spans acknowledged before a stop or crash, "
                         "not yet assembled).", registry=registry),
        throttled=Counter(_name("trace_requests_throttled"), "POST /v1/traces requests "
                          "answered 429 with Retry-After: their new traces would have taken "
                          "the open traces over traces.assembly.max_open_traces (nothing "
                          "kept; the exporter sends them again).", registry=registry),
    )  # fmt: skip
    for why in TRACE_ASSEMBLED_WHY:
        metrics.assembled.labels(why=why)
    for reason in TRACE_SPAN_REJECT_REASONS:
        metrics.spans_rejected.labels(reason=reason)
    for reason in TRACE_UNMAPPED_REASONS:
        metrics.unmapped.labels(reason=reason)
    for reason in TRACE_PAYLOAD_REASONS:
        metrics.payloads_rejected.labels(reason=reason)
    for reason in TRACE_REPEAT_REASONS:
        metrics.spans_repeated.labels(reason=reason)
    return metrics
