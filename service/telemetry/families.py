"""The metric families as one list, and the one entry point that registers all of them on a
registry: what ``docs/metrics.md`` (``docs/generate.py``) and the tests that compare the
dashboards and the docs with what the service exports read, so a new family is listed in one
place.

The service itself builds each family where it wires the part that feeds it (the wiring in
:mod:`service.runtime` passes the configured topics, candidates and labels), and only the
families its configuration enables; :func:`build_all_metrics` builds every family, each with
its builder's defaults, so every metric the service can export is on one registry.

>>> from prometheus_client import CollectorRegistry
>>> registry = CollectorRegistry()
>>> families = build_all_metrics(registry)
>>> list(families) == [family.key for family in FAMILIES]
True
>>> registry.get_sample_value("goldwatch_gold_runs_total", {"outcome": "failed"})
0.0
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from prometheus_client import CollectorRegistry

from service.harvest.config import REASONS as HARVEST_REASONS
from service.telemetry.analytics import build_analytics_metrics
from service.telemetry.engine import build_metrics
from service.telemetry.gold_refresh import build_gold_refresh_metrics
from service.telemetry.harvest import build_harvest_metrics
from service.telemetry.shadow import build_shadow_metrics
from service.telemetry.traces import build_trace_metrics


class MetricFamily(NamedTuple):
    """One metric family.

    Attributes:
        key: the module of :mod:`service.telemetry` that defines it (``engine``, ...).
        title: its section title in ``docs/metrics.md``.
        built_when: which builder, and when the service builds it (Markdown).
        build: registers the family on a registry, with the builder's defaults; returns the
            family's metrics object (:class:`~service.telemetry.engine.Metrics`, ...).
    """

    key: str
    title: str
    built_when: str
    build: Callable[[CollectorRegistry], object]


#: Every metric family, in the order ``docs/metrics.md`` lists them.
FAMILIES: tuple[MetricFamily, ...] = (
    MetricFamily("engine", "Pipeline and consumer",
                 "`build_metrics`: every process (serve and replay).", build_metrics),
    MetricFamily("analytics", "Live analytics",
                 "`build_analytics_metrics`: with `analytics.enabled` (default).",
                 build_analytics_metrics),
    MetricFamily("shadow", "Shadow, gold-set runs, known questions, ACL",
                 "`build_shadow_metrics`: with analytics or shadow candidates.",
                 build_shadow_metrics),
    MetricFamily("harvest", "Harvesting",
                 "`build_harvest_metrics`: with `harvest.enabled` (default).",
                 lambda registry: build_harvest_metrics(registry, HARVEST_REASONS)),
    MetricFamily("gold_refresh", "Gold-set refresh",
                 "`build_gold_refresh_metrics`: every `serve` (accepted suggestions).",
                 build_gold_refresh_metrics),
    MetricFamily("traces", "Trace ingest",
                 "`build_trace_metrics`: every `serve` (`POST /v1/traces`).",
                 build_trace_metrics),
)  # fmt: skip


def build_all_metrics(registry: CollectorRegistry) -> dict[str, object]:
    """Register every metric family of :data:`FAMILIES` on ``registry`` (each with its
    builder's defaults; harvesting with every harvest reason).

    Returns:
        ``{family key: the family's metrics object}``, in :data:`FAMILIES` order.

    Raises:
        ValueError: a metric is already registered on ``registry`` — also when two families
            defined the same metric name.
    """
    return {family.key: family.build(registry) for family in FAMILIES}
