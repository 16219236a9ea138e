"""Open traces of ``POST /v1/traces`` across a clean stop (SIGTERM) of a real ``goldwatch
serve``, against the same steps with kill -9 (t39 HIGH 1). The OpenTelemetry SDK's OTLP/HTTP
exporter sends, as two traces of a news-QA RAG app in the OpenInference shape:

* trace A: its LLM span (whose user message holds the question) before the stop, its root
  (the question, ``user.id``, the ``app.refused`` flag, the answer) after the restart;
* trace B: its retriever span only before the stop, its root after the restart (it never
  gets an LLM span).

Both are acknowledged (200) and open at the stop. Each must become one event built from the
root and the child, none lost or counted twice, whether the process was stopped with SIGTERM
or killed. Before (1299279) SIGTERM flushed both: A became an event from its LLM span alone
(no user, no refusal flag) and its root a ``late_span`` dead letter; B, with no question
without its root, a ``missing_field`` dead letter and its root a ``late_span``: lost whole.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from service.events import QueryLogEvent
from tests.acceptance.conftest import PIPELINE
from tests.acceptance.service_process import TOKEN, ServiceProcess
from tests.service.api.test_traces_api import _at, _provider

RECORD = "tests.acceptance.slow_stage:RecordStage"
QUESTION = "Which company did TechCrunch say was accused by news publishers?"


def _news_trace(tracer: Tracer, n: int) -> str:
    """One trace: a CHAIN root, a RETRIEVER span with two documents and an LLM span; the
    root ends last, as in the app."""
    with tracer.start_as_current_span("rag.answer", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({
            "openinference.span.kind": "CHAIN", "input.value": f"{QUESTION} ({n})",
            "user.id": f"u-{n:03d}", "app.refused": True, "output.value": "I cannot say.",
        })  # fmt: skip
        with tracer.start_as_current_span("retrieve", start_time=_at(5), end_on_exit=False) as r:
            r.set_attributes({
                "openinference.span.kind": "RETRIEVER",
                "retrieval.documents.0.document.id": "p-0002",
                "retrieval.documents.0.document.score": 12.4,
                "retrieval.documents.1.document.id": "p-0107",
                "retrieval.documents.1.document.score": 9.1,
            })  # fmt: skip
            r.end(end_time=_at(50))
        with tracer.start_as_current_span("llm", start_time=_at(60), end_on_exit=False) as llm:
            llm.set_attributes({
                "openinference.span.kind": "LLM",
                "llm.input_messages.0.message.role": "user",
                "llm.input_messages.0.message.content": f"{QUESTION} ({n})",
                "output.value": "Google",
            })  # fmt: skip
            llm.end(end_time=_at(900))
        root.end(end_time=_at(1000))
        return format(root.get_span_context().trace_id, "032x")


def _spans() -> dict[str, dict[str, ReadableSpan]]:
    """Trace id -> span name -> span, of trace A then trace B."""
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    out: dict[str, dict[str, ReadableSpan]] = {}
    for n in (1, 2):
        trace_id = _news_trace(tracer, n)
        out[trace_id] = {s.name: s for s in memory.get_finished_spans()}
        memory.clear()
    provider.shutdown()
    return out


def _export(service: ServiceProcess, spans: Sequence[ReadableSpan]) -> None:
    """One OTLP/HTTP request of the SDK's exporter; acknowledged (200) or the test fails."""
    exporter = OTLPSpanExporter(
        endpoint=f"{service.base_url}/v1/traces", headers={"authorization": f"Bearer {TOKEN}"}
    )
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]


def _config(workdir: Path) -> dict[str, Any]:
    return {
        "source": {"kind": "none"},
        "pipeline": {**PIPELINE, "extra_stages": [RECORD]},
        "state": {"path": str(workdir / "state.sqlite")},
        "analytics": {"enabled": False},
        "traces": {"assembly": {"settle_s": 1.0, "timeout_s": 120.0},
                   "mapping": {"refusal_attribute": "app.refused"}},
    }  # fmt: skip


def _recorded(workdir: Path) -> list[QueryLogEvent]:
    path = workdir / "events.jsonl"
    if not path.exists():
        return []
    return [QueryLogEvent.model_validate_json(line) for line in path.open(encoding="utf-8")]


@pytest.mark.parametrize("stop", ["sigterm", "kill9"])
def test_open_traces_survive_a_stop_and_their_roots_join_them_after_the_restart(
    stop: str, start_service: Callable[..., ServiceProcess], tmp_path: Path
) -> None:
    spans = _spans()
    (a, a_spans), (b, b_spans) = spans.items()
    env = {"GOLDWATCH_TEST_RECORD": str(tmp_path / "events.jsonl")}
    config = _config(tmp_path)
    first = start_service(tmp_path, config, env=env)
    _export(first, [a_spans["llm"]])  # trace A: the LLM span (repro 1)
    _export(first, [b_spans["retrieve"]])  # trace B: the retriever span alone (repro 2)
    assert first.metric("goldwatch_open_traces") == 2  # acknowledged, neither settled
    if stop == "sigterm":
        assert first.terminate() == 0
        log = (tmp_path / "serve.log").read_text(errors="replace")
        assert "trace ingest: kept 2 open traces (2 spans) in the state file at stop" in log
    else:
        first.kill()
    assert _recorded(tmp_path) == []  # nothing was handed out at the stop

    second = start_service(tmp_path, config, env=env)
    assert second.metric("goldwatch_traces_restored_total") == 2
    _export(second, [a_spans["rag.answer"], b_spans["rag.answer"]])  # the roots, after it
    status = second.wait_until(lambda s: s["totals"]["processed"] >= 2, what="2 events")
    samples = second.samples()
    assert second.terminate() == 0

    totals = status["totals"]
    assert (totals["processed"], totals["duplicates"], totals["dead_lettered"]) == (2, 0, {})
    assert not (tmp_path / "goldwatch.dlq.jsonl").exists()  # no late_span, no missing_field
    assembled = {why: samples[("goldwatch_traces_assembled_total", frozenset({("why", why)}))]
                 for why in ("settled", "timeout", "flushed")}  # fmt: skip
    assert assembled == {"settled": 2, "timeout": 0, "flushed": 0}
    events = {e.event_id: e for e in _recorded(tmp_path)}
    assert sorted(events) == sorted([a, b]) and len(_recorded(tmp_path)) == 2
    for trace_id, n in ((a, 1), (b, 2)):  # the root's fields: question, user, refusal flag
        event = events[trace_id]
        assert event.question == f"{QUESTION} ({n})"
        assert event.user is not None and event.user.id == f"u-{n:03d}"
        assert event.answer is not None and event.answer.refused is True
        assert event.answer.text == "I cannot say."
    retrieval = events[b].retrieval  # B's child: the retriever's documents
    assert retrieval is not None and [p.id for p in retrieval.results] == ["p-0002", "p-0107"]
    assert events[a].retrieval is None  # A never sent its retriever span
