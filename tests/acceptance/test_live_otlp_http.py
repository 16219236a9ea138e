"""OpenTelemetry traces into a real ``goldwatch serve`` subprocess over OTLP/HTTP.

The OpenTelemetry Python SDK with its OTLP/HTTP exporter (one request per span as each ends,
so the root arrives last) emits traces shaped as each convention emits them: OpenInference
retriever + LLM + chain spans; GenAI retrieval + chat spans in the current shape and in the
pre-1.37 shape (with a retrieval span that has no ``gen_ai.operation.name`` but
``gen_ai.retrieval.top_k``); OpenLLMetry ``db.query.result`` events. The events serve builds
(written out by :class:`tests.acceptance.event_log_stage.EventLog`) equal the ones written
here by hand, field by field.

Provenance: a refused trace whose question holds an e-mail address becomes a harvest
suggestion; accepting it over the API appends a gold row that keeps the trace id, with the
address scrubbed, and ``goldwatch eval`` reads the file. With ``traces.evaluations`` on, the
refusal verdict reaches an OTLP/HTTP logs receiver as a ``gen_ai.evaluation.result`` event in
that trace.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.trace import Tracer

from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.events import Answer, QueryLogEvent, Retrieval, RetrievedPassage, User
from tests.acceptance.event_log_stage import ENV, read_events
from tests.acceptance.service_process import REPO_ROOT, TOKEN, ServiceProcess
from tests.service.api.test_traces_api import (
    AT_T0,
    _at,
    _expected,
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

EVENT_LOG = "tests.acceptance.event_log_stage:EventLog"
WAIT_S = 120.0  # a bound on waits for the service, not a timing assertion
ASSEMBLY = {"settle_s": 0.2, "timeout_s": 10.0}


def _genai_old_with_retrieval(tracer: Tracer) -> str:
    """Pre-1.37 GenAI: ``gen_ai.prompt.*`` / ``gen_ai.completion.*`` on the chat span, a
    retrieval span without an operation name (``gen_ai.retrieval.top_k``), citations and the
    role where this application records them (configured below)."""
    with tracer.start_as_current_span("handler", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({"user.id": "u-9", "langfuse.trace.metadata.role": "teacher",
                             "app.citations": ["d-7"]})  # fmt: skip
        with tracer.start_as_current_span("kb-2 search", start_time=_at(2), end_on_exit=False) as r:
            r.set_attributes({
                "gen_ai.data_source.id": "kb-2", "gen_ai.retrieval.top_k": 3,
                "gen_ai.retrieval.documents": json.dumps(
                    [{"id": "d-7", "score": 0.8}, {"id": "d-8", "score": 0.5}]
                ),
            })  # fmt: skip
            r.end(end_time=_at(5.5))
        with tracer.start_as_current_span("chat", start_time=_at(6), end_on_exit=False) as chat:
            chat.set_attributes({
                "gen_ai.system": "openai", "gen_ai.operation.name": "chat",
                "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Bus pass fee?",
                "gen_ai.completion.0.content": "120 rupees.",
                "gen_ai.response.finish_reasons": ["stop"],
            })  # fmt: skip
            chat.end(end_time=_at(9))
        root.end(end_time=_at(10))
        return format(root.get_span_context().trace_id, "032x")


def _wait(what: str, service: ServiceProcess, ready: Callable[[], Any]) -> Any:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if not service.alive:
            raise AssertionError(f"serve died waiting for {what}{service.log_tail()}")
        found = ready()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"{what} not reached in {WAIT_S}s{service.log_tail()}")


def _send(service: ServiceProcess, *emitters: Callable[[Tracer], str]) -> list[str]:
    auth = {"authorization": f"Bearer {TOKEN}"}
    exporter = OTLPSpanExporter(endpoint=service.base_url + "/v1/traces", headers=auth, timeout=30)
    provider, tracer = _provider(exporter)
    try:
        return [emit(tracer) for emit in emitters]
    finally:
        provider.shutdown()


@pytest.mark.slow
def test_sdk_traces_of_each_convention_become_the_expected_events(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    config = {
        "source": {"kind": "none", "dlq_path": str(tmp_path / "dead.jsonl")},
        "state": {"path": str(tmp_path / "state.sqlite")},
        "analytics": {"enabled": False},  # events exactly as mapped (no scrubbing, no ids)
        "pipeline": {"extra_stages": [EVENT_LOG], "max_batch_wait_ms": 50},
        "traces": {"assembly": ASSEMBLY,
                   "mapping": {"citations_attribute": "app.citations",
                               "role_metadata_key": "role"}},
    }  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config, env={ENV: str(log)})
    try:
        ids = _send(service, _openinference, _genai, _genai_old, _openllmetry,
                    _genai_old_with_retrieval)  # fmt: skip
        events = _wait("5 events", service, lambda: len(read_events(log)) >= 5 and read_events(log))
        expected = _expected(*ids[:4])
        fallbacks = ids[4]
        expected[fallbacks] = QueryLogEvent(
            event_id=fallbacks, trace_id=fallbacks, timestamp=AT_T0, question="Bus pass fee?",
            user=User(id="u-9", role="teacher"),
            retrieval=Retrieval(retriever="kb-2", latency_ms=3.5, results=(
                RetrievedPassage(id="d-7", score=0.8, rank=1),
                RetrievedPassage(id="d-8", score=0.5, rank=2))),
            answer=Answer(text="120 rupees.", citations=("d-7",)),
        )  # fmt: skip
        built = {event.event_id: event for event in events}
        assert len(events) == 5 and sorted(built) == sorted(expected)
        for trace_id, want in expected.items():  # field by field, to name the one that differs
            got = built[trace_id]
            for field in want.__dataclass_fields__:
                assert getattr(got, field) == getattr(want, field), (trace_id, field)
        totals = service.totals()
        assert totals["processed"] == 5 and totals["dead_lettered"] == {}
    finally:
        service.kill()


def _refused_with_email(tracer: Tracer) -> str:
    with tracer.start_as_current_span("query", end_on_exit=False) as root:
        root.set_attributes({
            "openinference.span.kind": "CHAIN",
            "input.value": "Is the swimming pool open on Sundays? write to asha.k@example.com",
            "output.value": "I can't help with that.",
        })  # fmt: skip
        with tracer.start_as_current_span("retrieve") as r:
            r.set_attributes({"openinference.span.kind": "RETRIEVER",
                              "retrieval.documents.0.document.id": "p-0001",
                              "retrieval.documents.0.document.score": 1.5})  # fmt: skip
        with tracer.start_as_current_span("llm") as llm:
            llm.set_attributes({"openinference.span.kind": "LLM",
                                "gen_ai.response.finish_reasons": ["content_filter"]})  # fmt: skip
        root.end()
        return format(root.get_span_context().trace_id, "032x")


class LogsReceiver:
    """An OTLP/HTTP logs endpoint on a thread: keeps every request's log records."""

    def __init__(self) -> None:
        self.records: list[Any] = []
        received = self.records

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["content-length"]))
                if self.headers.get("content-encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportLogsServiceRequest.FromString(body)
                for resource in request.resource_logs:
                    for scope in resource.scope_logs:
                        received.extend(scope.log_records)
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/v1/logs"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.mark.slow
def test_accepted_gold_question_keeps_its_trace_id(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_bytes(demo_path("gold.jsonl").read_bytes())
    log = tmp_path / "events.jsonl"
    receiver = LogsReceiver()
    config = {
        "gold_set": str(gold),
        "corpus": str(demo_path("corpus.jsonl")),
        "source": {"kind": "none", "dlq_path": str(tmp_path / "dead.jsonl")},
        "state": {"path": str(tmp_path / "state.sqlite")},
        "pipeline": {"extra_stages": [EVENT_LOG], "max_batch_wait_ms": 50},
        "harvest": {"flush_interval_s": 0},
        "traces": {"assembly": ASSEMBLY,
                   "evaluations": {"enabled": True, "endpoint": receiver.url}},
    }  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config, env={ENV: str(log)})
    try:
        (trace_id,) = _send(service, _refused_with_email)

        def suggestion() -> dict[str, Any] | None:
            items = service.get("/v1/gold-candidates").json()["items"]
            return next((i for i in items if i.get("trace_id") == trace_id), None)

        item = _wait("the suggestion", service, suggestion)
        assert "asha.k@example.com" not in json.dumps(item)
        # as the pipeline holds it: scrubbed, trace id kept (the log's stage runs after
        # harvest, which can publish the suggestion first: wait for it too)
        (event,) = _wait("the event in the log", service, lambda: read_events(log))
        assert event.trace_id == trace_id and event.answer is not None and event.answer.refused
        assert event.question == "Is the swimming pool open on Sundays? write to <EMAIL>"
        accepted = service.client.post(
            f"/v1/gold-candidates/{item['id']}/accept",
            json={"gold": ["p-0001"], "kind": "plain"},
            headers={"authorization": f"Bearer {TOKEN}"}, timeout=30,
        )  # fmt: skip
        assert accepted.status_code == 200, accepted.text
        # the refusal verdict, exported by the SDK's batch processor (every 5 s)
        records = _wait("the evaluation event", service, lambda: receiver.records)
    finally:
        service.kill()
        receiver.close()

    def name(record: Any) -> str:
        return next(a.value.string_value for a in record.attributes
                    if a.key == "gen_ai.evaluation.name")  # fmt: skip

    (verdict,) = [r for r in records if name(r) == "goldwatch.refusal"]
    assert verdict.event_name == "gen_ai.evaluation.result"
    assert verdict.trace_id.hex() == trace_id and not verdict.span_id.strip(b"\0")
    attributes = {a.key: a.value.string_value for a in verdict.attributes}
    assert attributes == {"gen_ai.evaluation.name": "goldwatch.refusal",
                          "gen_ai.evaluation.score.label": "refused",
                          "gen_ai.evaluation.explanation": "the answer is a refusal"}  # fmt: skip
    row = json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])
    assert row["trace_id"] == trace_id and row["harvest_id"] == item["id"]
    assert row["question"] == "Is the swimming pool open on Sundays? write to <EMAIL>"
    assert row["gold"] == ["p-0001"] and row["id"] == accepted.json()["gold_id"]
    # `goldwatch eval` reads the file with the provenance field in it
    done = subprocess.run(
        [sys.executable, "-m", "service.cli", "eval", "--gold", str(gold),
         "--corpus", str(demo_path("corpus.jsonl")), "--retriever", "bm25", "--format", "json",
         "--no-progress", "--misses", str(tmp_path / "misses.jsonl"),
         "--history", str(tmp_path / "runs.jsonl")],
        cwd=REPO_ROOT, capture_output=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    report = json.loads(done.stdout)
    demo_questions = len(load_gold_set(demo_path("gold.jsonl")).questions)
    assert report["gold_set"]["n_questions"] == demo_questions + 1
