"""Every Prometheus metric goldwatch exports, built against an injectable registry: the one
place metrics are defined, one module per metric family. Domain code never imports this
package (an import-linter contract); the wiring and the adapters build the families and feed
them what the stages report (once per batch, never per event).

================ ===========================================================================
module           what it owns
================ ===========================================================================
``conventions``  the ``goldwatch_`` namespace, bounded labels (``other``), finite gauge values
``engine``       events, micro-batches, consumer lag, commits: :func:`build_metrics`
``build_info``   ``goldwatch_build_info`` (versions as labels), registered by ``build_metrics``
``analytics``    PII, language, topic, refusals, scope, drift, detector quality:
                 :func:`build_analytics_metrics`
``shadow``       shadow agreement, gold-set runs, known questions, ACL checks:
                 :func:`build_shadow_metrics`
``harvest``      suggested gold questions: :func:`build_harvest_metrics`
``gold_refresh`` the gold-set refresh after accepts: :func:`build_gold_refresh_metrics`
``traces``       OTLP trace ingest: :func:`build_trace_metrics`
``families``     :data:`FAMILIES` and :func:`build_all_metrics`: every family on one registry
                 (what ``docs/metrics.md`` lists)
================ ===========================================================================

Conventions (client_python ``metrics.py``, Prometheus naming docs): one ``goldwatch_``
namespace, base units (seconds, events), ``_total`` on counters, explicit histogram buckets,
and only bounded label values — :func:`bounded_label` maps anything unexpected to ``"other"``.
Question text, user ids and event ids never become labels. Every builder raises
``ValueError`` when its metrics are already registered on the registry (build once per
registry). Import from here (``from service.telemetry import build_metrics``): the names in
:data:`__all__` stay stable whichever module defines them.

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

from service.telemetry.analytics import (
    DETECTORS,
    DRIFT_COMPARISONS,
    DRIFT_DIMENSIONS,
    DRIFT_KEPT_OUT_REASONS,
    DRIFT_STATES,
    OPERATING_RATES,
    PII_TYPES,
    AnalyticsMetrics,
    build_analytics_metrics,
)
from service.telemetry.build_info import build_info_gauge
from service.telemetry.conventions import NAMESPACE, OTHER, bounded_label
from service.telemetry.engine import (
    BATCH_SECONDS_BUCKETS,
    BATCH_SIZE_BUCKETS,
    DEAD_LETTER_REASONS,
    FIELD_DROP_REASONS,
    SOURCES,
    STATUS_COUNTERS,
    BatchCounts,
    Metrics,
    build_metrics,
    source_label,
)
from service.telemetry.families import FAMILIES, MetricFamily, build_all_metrics
from service.telemetry.gold_refresh import (
    GOLD_REFRESH_OUTCOMES,
    GoldRefreshMetrics,
    build_gold_refresh_metrics,
)
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
    SHADOW_NO_LABEL,
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

#: Every name other modules import from ``service.telemetry`` (kept stable across the split
#: into one module per metric family), grouped by the module that defines it.
__all__ = [
    # conventions
    "NAMESPACE", "OTHER", "bounded_label",
    # engine: the poll loop and the engine (events, batches, consumer lag, commits)
    "SOURCES", "DEAD_LETTER_REASONS", "FIELD_DROP_REASONS", "BATCH_SIZE_BUCKETS",
    "BATCH_SECONDS_BUCKETS", "STATUS_COUNTERS", "source_label", "BatchCounts", "Metrics",
    "build_metrics", "build_info_gauge",
    # analytics: PII, language, topic, refusal, out-of-scope, drift, detector quality
    "DRIFT_DIMENSIONS", "DRIFT_COMPARISONS", "DRIFT_STATES", "DRIFT_KEPT_OUT_REASONS",
    "DETECTORS", "OPERATING_RATES",
    "PII_TYPES", "AnalyticsMetrics", "build_analytics_metrics",
    # shadow: shadow evaluation, gold-set runs, known questions, access control
    "SHADOW_MEASURES", "SHADOW_BREAKDOWN_MEASURES", "SHADOW_OUTCOMES", "SHADOW_ERRORS",
    "BREAKER_STATES", "AGREEMENT_BUCKETS", "SHADOW_SECONDS_BUCKETS", "GOLD_CUT_MEASURES",
    "KNOWN_REFUSAL_KINDS", "PRODUCTION", "ALL", "ShadowMetrics", "build_shadow_metrics",
    "SHADOW_NO_LABEL",
    # harvest: suggested gold questions
    "HARVEST_KNOWN_VIA", "HARVEST_SINKS", "HarvestMetrics", "build_harvest_metrics",
    # gold_refresh: the gold-set refresh after accepted suggestions
    "GOLD_REFRESH_OUTCOMES", "GoldRefreshMetrics", "build_gold_refresh_metrics",
    # traces: trace ingest (POST /v1/traces, OTLP topics)
    "TRACE_ASSEMBLED_WHY", "TRACE_SPAN_REJECT_REASONS", "TRACE_UNMAPPED_REASONS",
    "TRACE_REPEAT_REASONS", "TRACE_PAYLOAD_REASONS", "TraceMetrics", "build_trace_metrics",
    # families: every family, and the one entry point that registers them all
    "FAMILIES", "MetricFamily", "build_all_metrics",
]  # fmt: skip
