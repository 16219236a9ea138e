"""The harvest stage's pending observations become the right metric increments."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from service.telemetry import build_harvest_metrics


def test_observe_exports_each_count() -> None:
    registry = CollectorRegistry()
    metrics = build_harvest_metrics(registry, reasons=["refused", "novel"])
    pending = {"reasons": {"refused": 4, "novel": 1}, "known": {"gold_set": 2},
               "new_suggestions": 3, "evicted": 1, "shed": 5, "too_long": 2,
               "sink_failures": {}, "suggestions": 7}  # fmt: skip
    metrics.observe(pending)
    metrics.observe({"too_long": 1, "shed": 0})
    value = registry.get_sample_value
    assert value("goldwatch_gold_candidates_total", {"reason": "refused"}) == 4
    assert value("goldwatch_gold_candidates_known_total", {"via": "gold_set"}) == 2
    assert value("goldwatch_gold_candidates_new_total") == 3
    assert value("goldwatch_gold_candidates_shed_total") == 5
    assert value("goldwatch_gold_candidates_too_long_total") == 3
    assert value("goldwatch_gold_candidates_held") == 7
