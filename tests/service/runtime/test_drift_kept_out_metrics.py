"""The drift stage's late, future and held-ahead events reach ``/metrics`` as
``goldwatch_drift_events_kept_out_total{reason}`` and ``goldwatch_drift_events_held_ahead``,
fed by :meth:`service.runtime.live.Live.observe` like the other drift metrics (they were only
in ``GET /v1/drift`` and the replay report).

Every expected value is worked out by hand from the tiny logs below: windows of 600 s in
buckets of 60 s (baseline: the window before), lateness 60 s, future tolerance 60 s against
a wall clock fixed at 10 000 s, events more than 3 600 s ahead of the watermark held until 2
confirm a jump.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

from prometheus_client import CollectorRegistry

from service.drift.stage import DriftStage
from service.drift.windows import WindowConfig
from service.events import QueryLogEvent
from service.pipeline import Pipeline
from service.runtime.analytics import Analytics
from service.runtime.live import Live
from service.telemetry import build_analytics_metrics

NOW = 10_000.0
KEPT_OUT = "goldwatch_drift_events_kept_out_total"
HELD = "goldwatch_drift_events_held_ahead"


def _stage() -> DriftStage:
    config = WindowConfig(window_s=600, bucket_s=60, test_every_s=300, baseline="previous",
                          allowed_lateness_s=60, future_tolerance_s=60, max_ahead_s=3600,
                          ahead_confirm=2)  # fmt: skip
    return DriftStage({"language": {"en": 10}}, windows=config, min_count=1, clock=lambda: NOW)


def _live(stage: DriftStage) -> tuple[Live, CollectorRegistry]:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry, language_labels=["en"])
    analytics = Analytics(stages=[stage], drift=stage)
    return Live(pipeline=Pipeline([stage]), analytics=analytics,
                analytics_metrics=metrics), registry  # fmt: skip


def _events(stamps: list[float]) -> list[QueryLogEvent]:
    return [QueryLogEvent.model_validate({
        "event_id": f"e-{i}-{stamp:g}", "question": "hostel fee?",
        "timestamp": datetime.fromtimestamp(stamp, UTC).isoformat(),
    }) for i, stamp in enumerate(stamps)]  # fmt: skip


def _run(live: Live, stamps: list[float]) -> None:
    """One batch through the pipeline (the drift stage), then the batch observer."""
    live.observe(live.pipeline.process(_events(stamps), "test"))


def _exported(registry: CollectorRegistry) -> tuple[float | None, float | None, float | None]:
    late = registry.get_sample_value(KEPT_OUT, {"reason": "late"})
    future = registry.get_sample_value(KEPT_OUT, {"reason": "future"})
    return late, future, registry.get_sample_value(HELD)


def test_late_future_and_held_events_are_exported_per_batch() -> None:
    stage = _stage()
    live, registry = _live(stage)
    assert _exported(registry) == (0.0, 0.0, 0.0)  # pre-initialised: rate() works at once
    # 1000 held (no watermark yet), 1010 within 3600 s of it: both released, watermark
    # 1010; 1020 in; 900 < 1020 - 60: late; 20 000 > 10 000 + 60: future; 5000 > 1020 +
    # 3600: held ahead
    _run(live, [1000.0, 1010.0, 1020.0, 900.0, 20_000.0, 5000.0])
    assert _exported(registry) == (1.0, 1.0, 1.0)
    # 5010 lies within 3600 s of the held 5000: 2 confirm the jump, both released (held
    # falls to 0), watermark 5010; 950 < 5010 - 60: late; 30 000: future
    _run(live, [5010.0, 950.0, 30_000.0])
    assert _exported(registry) == (2.0, 2.0, 0.0)
    event_time = stage.report()["event_time"]
    assert (event_time["late"], event_time["future"], event_time["ahead"]) == (2, 2, 0)
    # a batch with nothing kept out adds nothing
    _run(live, [5020.0, 5030.0])
    assert _exported(registry) == (2.0, 2.0, 0.0)


def test_a_restarted_process_counts_only_the_events_it_saw() -> None:
    """The restored totals stay in /v1/drift; the new process's counter starts at 0 (a
    counter reset, which rate() handles) and counts its own events once."""
    first = _stage()
    live, _ = _live(first)
    _run(live, [1000.0, 1010.0, 1020.0, 900.0, 20_000.0, 5000.0])  # 1 late, 1 future, 1 held
    again = _stage()
    again.restore(json.loads(json.dumps(first.state_snapshot())))
    assert again.take_kept_out() == {"late": 0, "future": 0}
    live, registry = _live(again)
    _run(live, [1030.0, 500.0])  # 500 < 1030 - 60: late; the held 5000 stays held
    assert _exported(registry) == (1.0, 0.0, 1.0)
    event_time = again.report()["event_time"]
    assert (event_time["late"], event_time["future"], event_time["ahead"]) == (2, 1, 1)


def test_an_unknown_reason_counts_under_other() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    metrics.count_kept_out({"late": 3, "future": 0, "sideways": 2})
    assert registry.get_sample_value(KEPT_OUT, {"reason": "late"}) == 3.0
    assert registry.get_sample_value(KEPT_OUT, {"reason": "future"}) == 0.0
    assert registry.get_sample_value(KEPT_OUT, {"reason": "other"}) == 2.0
