"""goldwatch's verdicts as OpenTelemetry ``gen_ai.evaluation.result`` events: which verdicts,
their attributes, and the log records the OpenTelemetry SDK exports (its in-memory exporter)
in the trace's context; off by default and refused without analytics."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from prometheus_client import CollectorRegistry

from service.events import QueryLogEvent
from service.pipeline import Batch
from service.runtime.live import build_live
from service.settings import load_settings
from service.shadow.agreement import Agreement
from service.shadow.runner import ShadowResult
from service.traces.evaluations import (
    EVENT_NAME,
    EvaluationEmitter,
    log_record_emitter,
)

TRACE = "0af7651916cd43dd8448eb211c80319c"
ASKED = datetime(2026, 11, 29, 10, 0, 0, 250_000, tzinfo=UTC)
ASKED_NS = 1_795_946_400_250_000_000  # the same instant in Unix nanoseconds


def _event(trace_id: str | None = TRACE) -> QueryLogEvent:
    return QueryLogEvent(event_id="e-1", timestamp=ASKED, question="q", trace_id=trace_id)


def _emitter() -> tuple[EvaluationEmitter, InMemoryLogRecordExporter, LoggerProvider]:
    exporter = InMemoryLogRecordExporter()
    provider = LoggerProvider()
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))
    emitter = EvaluationEmitter(log_record_emitter(provider.get_logger("goldwatch")), 0.5)
    return emitter, exporter, provider


def _exported(exporter: InMemoryLogRecordExporter) -> list[tuple[str | None, int, int, dict]]:
    out = []
    for item in exporter.get_finished_logs():
        record = item.log_record
        out.append((record.event_name, record.trace_id, record.timestamp,
                    dict(record.attributes or {})))  # fmt: skip
    return out


def _batch(events: list[QueryLogEvent], notes: list[dict[str, Any]]) -> Batch:
    batch = Batch.of(events, "test")
    for target, extra in zip(batch.annotations, notes, strict=True):
        target.update(extra)
    return batch


def test_refusal_and_calibrated_out_of_scope_become_records_in_the_trace() -> None:
    emitter, exporter, provider = _emitter()
    notes = {"refused": True, "out_of_scope": True, "scope_calibrated": True,
             "scope_score": 0.125, "scope_known": None}  # fmt: skip
    emitter.process(_batch([_event()], [notes]))
    provider.shutdown()
    assert _exported(exporter) == [
        (EVENT_NAME, int(TRACE, 16), ASKED_NS, {
            "gen_ai.evaluation.name": "goldwatch.refusal",
            "gen_ai.evaluation.score.label": "refused",
            "gen_ai.evaluation.explanation": "the answer is a refusal",
        }),
        (EVENT_NAME, int(TRACE, 16), ASKED_NS, {
            "gen_ai.evaluation.name": "goldwatch.out_of_scope",
            "gen_ai.evaluation.score.label": "out_of_scope",
            "gen_ai.evaluation.score.value": 0.125,
            "gen_ai.evaluation.explanation":
                "the out-of-scope detector's probability in scope is below its threshold",
        }),
    ]  # fmt: skip
    assert (emitter.emitted, emitter.failed) == (2, 0)


@pytest.mark.parametrize(
    ("trace_id", "notes"),
    [
        (None, {"refused": True}),  # no trace to attach to
        (TRACE, {"refused": False, "out_of_scope": False}),  # nothing flagged
        (TRACE, {"refused": None}),  # unknown is no verdict
        (TRACE, {"out_of_scope": True, "scope_calibrated": False}),  # detector below floor
    ],
)
def test_nothing_emitted(trace_id: str | None, notes: dict[str, Any]) -> None:
    emitter, exporter, provider = _emitter()
    emitter.process(_batch([_event(trace_id)], [notes]))
    provider.shutdown()
    assert _exported(exporter) == []


def test_a_known_unanswerable_question_has_no_detector_score() -> None:
    emitter, exporter, provider = _emitter()
    notes = {"out_of_scope": True, "scope_calibrated": True, "scope_score": 0.9,
             "scope_known": "q-009"}  # fmt: skip
    emitter.process(_batch([_event()], [notes]))
    provider.shutdown()
    ((_, _, _, attributes),) = _exported(exporter)
    assert attributes == {
        "gen_ai.evaluation.name": "goldwatch.out_of_scope",
        "gen_ai.evaluation.score.label": "out_of_scope",
        "gen_ai.evaluation.explanation": "the gold set marks this question unanswerable",
    }


def _shadow(rbo: float | None, trace_id: str | None = TRACE, error: str | None = None) -> Any:
    agreement = Agreement(depth=1, shared=0, overlap=0.0, jaccard=0.0, rbo=rbo,
                          kendall_tau=None, top1=False, citation_recall=None)  # fmt: skip
    return ShadowResult(
        candidate="hybrid", event_id="e-1", timestamp=ASKED, question="q", language=None,
        topic=None, channel=None, role=None, production=("p-1",), ranking=("p-2",),
        agreement=agreement, latency_s=0.01, queue_s=0.0, attempts=1, error=error,
        trace_id=trace_id,
    )  # fmt: skip


def test_shadow_disagreement_below_max_rbo() -> None:
    emitter, exporter, provider = _emitter()
    for result in (_shadow(0.25), _shadow(0.5), _shadow(0.9), _shadow(0.1, trace_id=None),
                   _shadow(0.1, error="timeout"), _shadow(None)):  # fmt: skip
        emitter.observe_shadow(result)
    provider.shutdown()
    assert _exported(exporter) == [
        (EVENT_NAME, int(TRACE, 16), ASKED_NS, {
            "gen_ai.evaluation.name": "goldwatch.shadow_agreement",
            "gen_ai.evaluation.score.label": "disagree",
            "gen_ai.evaluation.score.value": 0.25,
            "gen_ai.evaluation.explanation":
                "candidate hybrid: RBO with production's ranking below 0.5",
        }),
    ]  # fmt: skip


def test_a_failing_exporter_never_stops_the_stage() -> None:
    def broken(_: Any) -> None:
        raise ConnectionError("collector down")

    emitter = EvaluationEmitter(broken, 0.5)
    emitter.process(_batch([_event(), _event()], [{"refused": True}, {"refused": True}]))
    assert (emitter.emitted, emitter.failed) == (0, 2)


def test_off_by_default_and_needs_analytics() -> None:
    assert load_settings().traces.evaluations.enabled is False
    on = {"evaluations": {"enabled": True}}
    settings = load_settings(analytics={"enabled": False}, traces=on)
    with pytest.raises(ValueError, match=r"traces\.evaluations\.enabled needs analytics"):
        build_live(settings, CollectorRegistry())


def test_sdk_not_imported_when_off() -> None:
    # the settings and the stage import no OpenTelemetry SDK code (only the emitters do,
    # lazily); the protobuf package for decoding traces is a core dependency, the SDK is not
    code = ("import sys; import service.traces.evaluations, service.settings; "
            "print([m for m in sys.modules if m.startswith(('opentelemetry.sdk', "
            "'opentelemetry.exporter', 'opentelemetry._logs'))])")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, timeout=120)  # fmt: skip
    assert done.stdout.strip() == "[]"


def test_records_carry_the_trace_but_no_span() -> None:
    emitter, exporter, provider = _emitter()
    emitter.process(_batch([_event()], [{"refused": True}]))
    provider.shutdown()
    (item,) = exporter.get_finished_logs()
    assert item.log_record.trace_id == int(TRACE, 16)
    assert not item.log_record.span_id  # goldwatch keeps the trace, not the span
