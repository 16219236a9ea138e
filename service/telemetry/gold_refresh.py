"""Metrics of the gold-set refresh: after an accepted suggestion, ``serve`` reloads the
gold-set file and refits what depends on it in the background
(:meth:`service.runtime.process.Runtime.gold_accepted`); a refresh that fails keeps the old
gold set in use, so the accepted question is not gold yet and the next start may refuse the
file. Built by every ``serve`` (:class:`~service.runtime.process.Runtime`).

======================================== ======= ====================================
name                                     type    labels
======================================== ======= ====================================
goldwatch_gold_refreshes_total           counter outcome (ok, failed; pre-initialised)
goldwatch_gold_refresh_failing           gauge   (1 while the newest refresh failed)
======================================== ======= ====================================

>>> from prometheus_client import CollectorRegistry
>>> registry = CollectorRegistry()
>>> metrics = build_gold_refresh_metrics(registry)
>>> metrics.observe(ok=False)
>>> registry.get_sample_value("goldwatch_gold_refreshes_total", {"outcome": "failed"})
1.0
>>> registry.get_sample_value("goldwatch_gold_refresh_failing")
1.0
>>> metrics.observe(ok=True)
>>> registry.get_sample_value("goldwatch_gold_refresh_failing")
0.0
"""

from __future__ import annotations

from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Gauge

from service.telemetry.conventions import metric_name as _name

#: Outcomes of a gold-set refresh.
GOLD_REFRESH_OUTCOMES: tuple[str, ...] = ("ok", "failed")


@dataclass(frozen=True, slots=True)
class GoldRefreshMetrics:
    """Metrics of the gold-set refresh; build with :func:`build_gold_refresh_metrics`."""

    refreshes: Counter
    failing: Gauge

    def observe(self, ok: bool) -> None:
        """Count one finished refresh; ``failing`` becomes 0 after a success, 1 after a
        failure (the gold set in use is then older than the file)."""
        self.refreshes.labels(outcome="ok" if ok else "failed").inc()
        self.failing.set(0 if ok else 1)


def build_gold_refresh_metrics(registry: CollectorRegistry) -> GoldRefreshMetrics:
    """Register the gold-set refresh metrics on ``registry`` (both outcomes at 0, the gauge
    at 0).

    Raises:
        ValueError: already registered on ``registry``.
    """
    refreshes = Counter(
        _name("gold_refreshes"),
        "Gold-set refreshes after accepted suggestions, by outcome (failed: the old gold set "
        "stays in use; GET /v1/status gold_refresh_error says why).",
        ["outcome"],
        registry=registry,
    )
    for outcome in GOLD_REFRESH_OUTCOMES:
        refreshes.labels(outcome=outcome)
    failing = Gauge(
        _name("gold_refresh_failing"),
        "1 while the newest gold-set refresh failed (accepted questions are not gold yet and "
        "the next start may refuse the file), else 0.",
        registry=registry,
    )
    failing.set(0)
    return GoldRefreshMetrics(refreshes, failing)
