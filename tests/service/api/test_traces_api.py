"""``POST /v1/traces`` over real HTTP, fed by the OpenTelemetry Python SDK's OTLP/HTTP
exporter: each convention's trace shape becomes the event written out here by hand."""

from __future__ import annotations

import base64
import gzip
import http.client
import json
import random
import threading
import time
from collections.abc import Iterator
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn
from google.rpc.status_pb2 import Status
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from service.api import listen, trace_routes
from service.api.app import create_app
from service.api.serving import server_config
from service.api.trace_routes import InflatedTooLarge, partial_success, undo_encoding
from service.events import Answer, QueryLogEvent, Retrieval, RetrievedPassage, User
from service.pipeline import Batch
from service.runtime.process import Runtime
from service.settings import Settings, load_settings
from service.traces.assembly import Rejected
from service.traces.otlp import InvalidSpan, TraceDecodeError, decode_protobuf, encode_json
from service.traces.spans import Span
from tests.ports import free_port

TOKEN = "t0ken-for-traces"
T0 = 1_795_946_400_000_000_000  # 2026-11-29T10:00:00Z
AT_T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
MS = 1_000_000
WAIT_S = 60.0  # a bound on waits for the service, not a timing assertion


class Capture:
    """A pipeline stage keeping every event that reaches it."""

    name = "test-capture"

    def __init__(self) -> None:
        self.events: list[QueryLogEvent] = []

    def process(self, batch: Batch) -> None:
        self.events.extend(batch.events)

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


class Server:
    """The app on a uvicorn thread (as tests/service/api/test_app.py), with a capture stage."""

    def __init__(self, settings: Settings, guarded: bool = False) -> None:
        self.sock = listen.bind("127.0.0.1", settings.api.port, suspect="another test server?")
        self.capture = Capture()
        self.runtime = Runtime(settings, stages=[self.capture])
        app = create_app(settings, self.runtime)
        self.server = uvicorn.Server(  # guarded: the HTTP protocol of ``goldwatch serve``
            server_config(app, settings.api, log_level="warning")
            if guarded
            else uvicorn.Config(app, log_level="warning")
        )
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )
        self.base = f"http://127.0.0.1:{settings.api.port}"

    def __enter__(self) -> Server:
        self.thread.start()
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.base + "/healthz", timeout=2).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.05)
        raise RuntimeError("server did not start")

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(WAIT_S)
        self.sock.close()

    def wait_for(self, events: int) -> list[QueryLogEvent]:
        deadline = time.monotonic() + WAIT_S
        while len(self.capture.events) < events and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.capture.events

    def post(self, body: bytes, media: str, **headers: str) -> httpx.Response:
        return httpx.post(
            self.base + "/v1/traces",
            content=body,
            headers={"content-type": media, "authorization": f"Bearer {TOKEN}", **headers},
        )


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[Server]:
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"},
        api={"port": free_port(), "token": TOKEN, "max_request_bytes": 200_000},
        analytics={"enabled": False},
        traces={"assembly": {"settle_s": 0.2, "timeout_s": 5.0, "max_attribute_bytes": 4096,
                             "max_spans_per_trace": 4}},
    )  # fmt: skip
    with Server(settings) as running:
        yield running


def _provider(exporter: Any) -> tuple[TracerProvider, Tracer]:
    """SimpleSpanProcessor: every span is exported when it ends, in its own request, so the
    root (which ends last) arrives last: the case assembly exists for."""
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, provider.get_tracer("rag-app")


def _at(ms: float) -> int:
    return T0 + int(ms * MS)


def _openinference(tracer: Tracer) -> str:
    with tracer.start_as_current_span("query", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes(
            {
                "openinference.span.kind": "CHAIN",
                "input.value": "What is the refund window?",
                "user.id": "u-7",
            }
        )
        with tracer.start_as_current_span("retrieve", start_time=_at(10), end_on_exit=False) as r:
            r.set_attributes({
                "openinference.span.kind": "RETRIEVER", "input.value": "refund window",
                "retrieval.documents.0.document.id": "p-12",
                "retrieval.documents.0.document.score": 0.82,
                "retrieval.documents.1.document.id": "p-3",
                "retrieval.documents.1.document.score": 0.5,
            })  # fmt: skip
            r.end(end_time=_at(22.5))
        with tracer.start_as_current_span("llm", start_time=_at(30), end_on_exit=False) as llm:
            llm.set_attributes({
                "openinference.span.kind": "LLM",
                "llm.output_messages.0.message.role": "assistant",
                "llm.output_messages.0.message.content": "30 days.",
            })  # fmt: skip
            llm.end(end_time=_at(80))
        root.set_attribute("output.value", "30 days.")
        root.end(end_time=_at(90))
        return format(root.get_span_context().trace_id, "032x")


def _genai(tracer: Tracer) -> str:
    with tracer.start_as_current_span("POST /ask", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({"enduser.id": "e-1", "user.roles": ["staff", "admin"]})
        with tracer.start_as_current_span(
            "retrieval kb-main", start_time=_at(5), end_on_exit=False
        ) as r:
            r.set_attributes({
                "gen_ai.operation.name": "retrieval", "gen_ai.data_source.id": "kb-main",
                "gen_ai.request.top_k": 2.0, "gen_ai.retrieval.query.text": "library hours",
                "gen_ai.retrieval.documents": json.dumps(
                    [{"id": "d-1", "score": 0.91}, {"id": "d-2", "score": 0.4}]
                ),
            })  # fmt: skip
            r.end(end_time=_at(7))
        with tracer.start_as_current_span("chat", start_time=_at(10), end_on_exit=False) as chat:
            chat.set_attributes({
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps([{"role": "user", "parts": [
                    {"type": "text", "content": "Library hours?"}]}]),
                "gen_ai.output.messages": json.dumps([{"role": "assistant", "parts": [
                    {"type": "text", "content": "9 to 5."}], "finish_reason": "stop"}]),
            })  # fmt: skip
            chat.end(end_time=_at(50))
        root.end(end_time=_at(60))
        return format(root.get_span_context().trace_id, "032x")


def _genai_old(tracer: Tracer) -> str:
    with tracer.start_as_current_span("handler", start_time=_at(0), end_on_exit=False) as root:
        with tracer.start_as_current_span("chat", start_time=_at(1), end_on_exit=False) as chat:
            chat.set_attributes({
                "gen_ai.system": "openai", "gen_ai.operation.name": "chat",
                "gen_ai.prompt.0.role": "user", "gen_ai.prompt.0.content": "Pick a lock?",
                "gen_ai.completion.0.content": "I can't help with that.",
                "gen_ai.response.finish_reasons": ["content_filter"],
            })  # fmt: skip
            chat.end(end_time=_at(2))
        root.end(end_time=_at(3))
        return format(root.get_span_context().trace_id, "032x")


def _openllmetry(tracer: Tracer) -> str:
    with tracer.start_as_current_span("ask.workflow", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"question": "Visa?"}}),
            "traceloop.entity.output": json.dumps("60 EUR."),
        })  # fmt: skip
        with tracer.start_as_current_span(
            "chroma.query", start_time=_at(2), end_on_exit=False
        ) as q:
            q.set_attributes({"db.system": "chroma", "db.vector.query.top_k": 2})
            for pid, score in (("v-9", 0.3), ("v-2", 0.8)):
                result = {"db.query.result.id": pid, "db.query.result.score": score}
                q.add_event("db.query.result", result)
            q.end(end_time=_at(4))
        root.end(end_time=_at(5))
        return format(root.get_span_context().trace_id, "032x")


def _expected(oi: str, genai: str, old: str, llmetry: str) -> dict[str, QueryLogEvent]:
    def passages(*rows: tuple[str, float]) -> tuple[RetrievedPassage, ...]:
        return tuple(RetrievedPassage(id=i, score=s, rank=n) for n, (i, s) in enumerate(rows, 1))

    return {
        oi: QueryLogEvent(
            event_id=oi, trace_id=oi, timestamp=AT_T0, question="What is the refund window?",
            user=User(id="u-7"),
            retrieval=Retrieval(retriever="retrieve", latency_ms=12.5,
                                results=passages(("p-12", 0.82), ("p-3", 0.5))),
            answer=Answer(text="30 days."),
        ),
        genai: QueryLogEvent(
            event_id=genai, trace_id=genai, timestamp=AT_T0, question="Library hours?",
            user=User(id="e-1", role="staff"),
            retrieval=Retrieval(retriever="kb-main", latency_ms=2.0,
                                results=passages(("d-1", 0.91), ("d-2", 0.4))),
            answer=Answer(text="9 to 5."),
        ),
        old: QueryLogEvent(
            event_id=old, trace_id=old, timestamp=AT_T0, question="Pick a lock?",
            answer=Answer(text="I can't help with that.", refused=True),
        ),
        llmetry: QueryLogEvent(
            event_id=llmetry, trace_id=llmetry, timestamp=AT_T0, question="Visa?",
            retrieval=Retrieval(retriever="chroma", latency_ms=2.0,
                                results=passages(("v-9", 0.3), ("v-2", 0.8))),
            answer=Answer(text="60 EUR."),
        ),
    }  # fmt: skip


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_sdk_exporter_traces_become_the_expected_events(
    server: Server, compression: Compression
) -> None:
    exporter = OTLPSpanExporter(
        endpoint=server.base + "/v1/traces",
        headers={"authorization": f"Bearer {TOKEN}"},
        compression=compression,
    )
    provider, tracer = _provider(exporter)
    ids = (_openinference(tracer), _genai(tracer), _genai_old(tracer), _openllmetry(tracer))
    provider.shutdown()
    events = server.wait_for(4)
    assert {e.event_id: e for e in events} == _expected(*ids)
    assert len(events) == 4
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_traces_assembled_total{why="settled"} 4.0' in metrics
    assert "goldwatch_trace_spans_received_total 10.0"  # 3 + 3 + 2 + 2 in metrics


def _sdk_request() -> tuple[bytes, str]:
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    trace_id = _openinference(tracer)
    provider.shutdown()
    return encode_spans(memory.get_finished_spans()).SerializeToString(), trace_id


def test_otlp_json_and_a_resent_trace(server: Server) -> None:
    payload, trace_id = _sdk_request()
    body = encode_json(decode_protobuf(payload))  # the Collector's otlp_json shape
    response = server.post(body, "application/json")
    assert response.status_code == 200 and response.json() == {}
    (event,) = server.wait_for(1)
    assert event == _expected(trace_id, "b" * 32, "c" * 32, "d" * 32)[trace_id]
    # the same trace again after it was handed out (an exporter's retry: same trace and
    # span ids): a duplicate, as an event sent twice; nothing rejected or dead-lettered
    again = server.post(payload, "application/x-protobuf")
    assert again.status_code == 200
    assert ExportTraceServiceResponse.FromString(again.content) == ExportTraceServiceResponse()
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["processed"], totals["duplicates"]) == (2, 1, 1)
    assert totals["dead_lettered"] == {}
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_trace_spans_repeated_total{reason="duplicate"} 3.0' in metrics
    assert 'goldwatch_trace_spans_rejected_total{reason="late_span"} 0.0' in metrics
    assert 'goldwatch_events_duplicate_total{source="http"} 1.0' in metrics
    # a span of that trace never seen before stays a late span: dead-lettered, counted in
    # the totals and the events' dead-letter counter users alert on
    late = replace(decode_protobuf(payload)[0], span_id="0f" * 8)
    response = server.post(encode_json([late]), "application/json")
    assert response.json() == {"partialSuccess": {"rejectedSpans": "1",
                               "errorMessage": "spans dead-lettered: late_span (1)"}}  # fmt: skip
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["dead_lettered"]) == (3, {"late_span": 1})
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_events_dead_lettered_total{reason="late_span",source="http"} 1.0' in metrics
    assert len(server.capture.events) == 1


def test_a_lone_surrogate_escape_becomes_u_fffd_not_a_dead_trace(server: Server) -> None:
    """OTLP/JSON may carry ``\\ud800`` escapes (a producer cut a string inside an emoji):
    replaced by U+FFFD at decode, as the event decoder does, so the trace keeps its question
    (it was an ``invalid_value`` dead letter, "question: string_unicode") and the checkpoint
    that records it is written."""
    payload, trace_id = _sdk_request()
    body = encode_json(decode_protobuf(payload))
    for plain, escaped in (
        (b"What is the refund", b"What is the caf\\ud800 refund"),
        (b'"u-7"', b'"u-\\udc00"'),
        (b"30 days.", b"30 \\ud83d days."),
    ):
        assert plain in body
        body = body.replace(plain, escaped)
    response = server.post(body, "application/json")
    assert response.status_code == 200 and response.json() == {}
    (event,) = server.wait_for(1)
    expected = _expected(trace_id, "b" * 32, "c" * 32, "d" * 32)[trace_id]
    assert event == replace(
        expected,
        question="What is the caf\ufffd refund window?",
        user=User(id="u-\ufffd"),
        answer=Answer(text="30 \ufffd days."),
    )
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["processed"], totals["dead_lettered"]) == (1, 1, {})


def test_partial_success_reports_dropped_spans(server: Server, tmp_path: Path) -> None:
    payload, _ = _sdk_request()
    spans = decode_protobuf(payload)
    # 6 spans of one trace (fresh span ids), over max_spans_per_trace = 4
    extra = [replace(s, span_id=f"{i + 1:016x}") for i, s in enumerate(spans * 2)]
    response = server.post(encode_json(extra), "application/json")
    assert response.status_code == 200
    assert response.json() == {
        "partialSuccess": {"rejectedSpans": "2", "errorMessage": "spans dead-lettered: "
                           "too_many_spans (2)"}
    }  # fmt: skip
    dlq = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert [row["reason"] for row in dlq] == ["too_many_spans", "too_many_spans"]
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert totals["dead_lettered"] == {"too_many_spans": 2}


def test_protobuf_response_and_bad_payloads(server: Server, tmp_path: Path) -> None:
    payload, _ = _sdk_request()
    ok = server.post(
        gzip.compress(payload), "application/x-protobuf", **{"content-encoding": "gzip"}
    )
    assert ok.status_code == 200 and ok.headers["content-type"] == "application/x-protobuf"
    assert ExportTraceServiceResponse.FromString(ok.content) == ExportTraceServiceResponse()
    cut = server.post(payload[:-7], "application/x-protobuf")
    assert cut.status_code == 400
    problem = Status.FromString(cut.content)
    assert problem.code == 3 and problem.message.startswith("not_protobuf:")
    wrong = server.post(b'{"resourceSpans": [{"scopeSpans": {}}]}', "application/json")
    assert wrong.status_code == 400
    assert wrong.json()["message"].startswith("wrong_type: resourceSpans[0].scopeSpans")
    assert server.post(payload, "text/plain").status_code == 415
    assert (
        server.post(payload, "application/x-protobuf", **{"content-encoding": "br"}).status_code
        == 415
    )
    bomb = gzip.compress(b"\0" * 300_000)  # 300 kB inflated, over max_request_bytes (200 kB)
    big = server.post(bomb, "application/x-protobuf", **{"content-encoding": "gzip"})
    assert big.status_code == 413  # an OTLP Status too, not a letter (the bytes are not kept)
    assert Status.FromString(big.content).message == "decompressed body over 200000 bytes"
    assert Status.FromString(big.content).code == 8  # RESOURCE_EXHAUSTED, as the 429
    no_token = httpx.post(server.base + "/v1/traces", content=payload,
                          headers={"content-type": "application/x-protobuf"})  # fmt: skip
    assert no_token.status_code == 401
    dlq = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert [row["reason"] for row in dlq] == ["not_protobuf", "wrong_type", "bad_encoding"]
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_trace_payloads_rejected_total{reason="not_protobuf"} 1.0' in metrics
    # in the totals and counter every dead letter goes to
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert totals["dead_lettered"] == {"not_protobuf": 1, "wrong_type": 1, "bad_encoding": 1}
    assert 'goldwatch_events_dead_lettered_total{reason="not_protobuf",source="http"} 1.0' in (
        metrics
    )


def test_undecodable_encodings_are_dead_lettered_with_the_bytes_sent(
    server: Server, tmp_path: Path
) -> None:
    """Trial 47 MEDIUM 2: a body whose Content-Encoding cannot be undone is an undecodable
    payload like any other: an OTLP Status (400, or 415 with Accept-Encoding for another
    coding), one bad_encoding letter holding the bytes as sent, counted in the totals and
    both counters; nothing of the body in the answer. A gzip body of two members (RFC 1952
    2.2) is read whole."""
    payload, _ = _sdk_request()  # three spans of one trace, protobuf
    marker = b"zq-planted-7731"
    marked = json.dumps({"resourceSpans": [], "note": marker.decode() * 40}).encode()
    whole = gzip.compress(marked)
    member = gzip.compress(payload)
    sent = {
        "not gzip": (b"notgzip", "gzip", "application/json"),
        # the 8-byte trailer (CRC-32, size) and 12 bytes of deflate data cut off
        "cut short": (whole[:-20], "gzip", "application/json"),
        "trailing bytes": (member + b"garbage", "x-gzip", "application/x-protobuf"),
        "brotli": (payload, "br", "application/x-protobuf"),
        "made up": (payload, "x-" + marker.decode(), "application/json"),
    }
    answers = {name: server.post(body, media, **{"content-encoding": coding})
               for name, (body, coding, media) in sent.items()}  # fmt: skip
    assert {name: answer.status_code for name, answer in answers.items()} == {
        "not gzip": 400, "cut short": 400, "trailing bytes": 400, "brotli": 415, "made up": 415,
    }  # fmt: skip
    assert answers["not gzip"].json() == {
        "code": 3, "message": "bad_encoding: body not valid gzip (7 bytes sent)"}  # fmt: skip
    cut = answers["cut short"].json()["message"]
    assert cut.startswith(
        f"bad_encoding: gzip body cut short: no end of stream in {len(whole) - 20}"
    )
    trailing = Status.FromString(answers["trailing bytes"].content)
    assert trailing.message == (
        f"bad_encoding: 7 bytes after gzip member 1 not valid gzip ({len(member) + 7} bytes sent)"
    )
    brotli = Status.FromString(answers["brotli"].content)
    assert brotli.message == (
        "bad_encoding: Content-Encoding 'br' is not supported: send gzip or none"
    )
    assert answers["brotli"].headers["accept-encoding"] == "gzip"
    assert answers["made up"].json()["message"] == (
        "bad_encoding: Content-Encoding unregistered is not supported: send gzip or none"
    )
    for answer in answers.values():  # no byte of a body (or of a made-up header) echoed
        assert marker not in answer.content and b"notgzip" not in answer.content
    dlq = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert [row["reason"] for row in dlq] == ["bad_encoding"] * 5
    assert [base64.b64decode(row["value_b64"]) for row in dlq] == [
        body for body, _, _ in sent.values()
    ]
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["dead_lettered"]) == (5, {"bad_encoding": 5})
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_trace_payloads_rejected_total{reason="bad_encoding"} 5.0' in metrics
    assert 'goldwatch_events_dead_lettered_total{reason="bad_encoding",source="http"} 5.0' in (
        metrics
    )
    # two gzip members, each half of the protobuf request: one request, its trace kept
    half = len(payload) // 2
    two = gzip.compress(payload[:half]) + gzip.compress(payload[half:])
    ok = server.post(two, "application/x-protobuf", **{"content-encoding": "gzip"})
    assert ok.status_code == 200
    assert ExportTraceServiceResponse.FromString(ok.content) == ExportTraceServiceResponse()
    assert len(server.wait_for(1)) == 1


@pytest.mark.parametrize(
    ("chunks", "limit", "expected"),
    [
        ([b"a" * 10], 10, b"a" * 10),  # exactly the limit
        ([b"a" * 11], 10, None),  # one byte over
        ([b"a" * 6, b"b" * 4], 10, b"a" * 6 + b"b" * 4),  # two members, 10 in all
        ([b"a" * 6, b"b" * 5], 10, None),  # two members, 11 in all
    ],
)
def test_undo_encoding_bounds_the_inflated_size(
    chunks: list[bytes], limit: int, expected: bytes | None
) -> None:
    body = b"".join(gzip.compress(chunk) for chunk in chunks)
    if expected is None:
        with pytest.raises(InflatedTooLarge, match=f"over {limit} bytes"):
            undo_encoding(body, "gzip", limit)
    else:
        assert undo_encoding(body, "gzip", limit) == expected
    assert undo_encoding(body, "identity", limit) == body
    assert undo_encoding(body, "", limit) == body


def test_undo_encoding_caps_gzip_members_and_reads_members_across_chunks() -> None:
    """Review of trial 47's fix: 209,710 empty gzip members (4,194,200 bytes, under the 4 MiB
    body limit) took 492 s, one inflater and one copy of the rest per member. At most 64
    members are read; the 65th is a bad_encoding payload, found before reading further. A
    member larger than the inflater's input chunk (64 KiB) and the member after it are read
    whole."""
    empty = gzip.compress(b"", mtime=0)  # 20 bytes: 10 header, 2 deflate, 8 trailer
    body = empty * 209_710
    assert len(body) == 4_194_200
    with pytest.raises(TraceDecodeError) as too_many:
        undo_encoding(body, "gzip", 4 * 1024 * 1024)
    assert too_many.value.reason == "bad_encoding"
    assert too_many.value.detail == "too many gzip members: more than 64 in 4194200 bytes sent"
    assert undo_encoding(gzip.compress(b"ab") * 64, "gzip", 1000) == b"ab" * 64
    with pytest.raises(TraceDecodeError, match="more than 64 in 1300 bytes"):
        undo_encoding(empty * 65, "gzip", 1000)
    noise = random.Random(47).randbytes(200_000)  # incompressible: a member of > 3 chunks
    first = gzip.compress(noise)
    assert len(first) > 3 * 64 * 1024
    assert undo_encoding(first + gzip.compress(b"tail"), "gzip", 300_000) == noise + b"tail"
    with pytest.raises(TraceDecodeError, match="cut short: no end of stream in 200000 bytes"):
        undo_encoding(first[:200_000], "gzip", 300_000)


def test_healthz_answers_while_a_body_is_inflated(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review of trial 47's fix: a body was inflated on the event loop, so /healthz timed out
    while it ran. The inflating is held here until /healthz has answered: on the event loop,
    /healthz could not answer until the hold gave up."""
    started, release = threading.Event(), threading.Event()
    gave_up: list[bool] = []

    def held(body: bytes, coding: str, limit: int) -> bytes:
        started.set()
        gave_up.append(not release.wait(WAIT_S))
        return undo_encoding(body, coding, limit)

    monkeypatch.setattr(trace_routes, "undo_encoding", held)
    payload, _ = _sdk_request()
    answers: list[httpx.Response] = []
    gzipped = {"content-encoding": "gzip"}
    post = threading.Thread(target=lambda: answers.append(
        server.post(gzip.compress(payload), "application/x-protobuf", **gzipped)))  # fmt: skip
    post.start()
    assert started.wait(WAIT_S)
    health = httpx.get(server.base + "/healthz", timeout=WAIT_S)
    release.set()
    post.join(WAIT_S)
    assert health.status_code == 200
    assert gave_up == [False]  # /healthz answered while the body was still held
    assert answers[0].status_code == 200 and len(server.wait_for(1)) == 1


def test_partial_success_reports_a_cut_attribute_in_both_encodings(
    server: Server, tmp_path: Path
) -> None:
    """A span kept with an attribute cut (max_attribute_bytes 4096) is reported as OTLP's
    warning form: rejected_spans 0 and a message with the reason count, no content."""
    payload, _ = _sdk_request()
    spans = decode_protobuf(payload)
    root = next(s for s in spans if s.is_root)
    marker = "zq-planted-5120"
    big = replace(root, attributes={**root.attributes, "input.value": marker + "x" * 6000})
    expected = ("spans kept with attribute values cut, originals dead-lettered: "
                "attribute_too_large (1)")  # fmt: skip
    as_json = server.post(encode_json([big]), "application/json")
    assert as_json.status_code == 200
    assert as_json.json() == {"partialSuccess": {"errorMessage": expected}}
    assert marker not in as_json.text
    other = replace(big, trace_id="e" * 32)
    as_protobuf = server.post(encode_spans_request([other]), "application/x-protobuf")
    answer = ExportTraceServiceResponse.FromString(as_protobuf.content)
    assert answer.partial_success.rejected_spans == 0
    assert answer.partial_success.error_message == expected
    # dropped and cut in one request: both counted, the dropped ones as rejected
    many = [replace(s, trace_id="f" * 32, span_id=f"{i + 1:016x}") for i, s in
            enumerate([big, *spans, *spans])]  # fmt: skip
    both = server.post(encode_json(many), "application/json").json()["partialSuccess"]
    assert both == {
        "rejectedSpans": str(len(many) - 4),
        "errorMessage": f"spans dead-lettered: too_many_spans ({len(many) - 4}); {expected}",
    }
    dlq = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert [row["reason"] for row in dlq].count("attribute_too_large") == 3


JSON, PROTOBUF = "application/json", "application/x-protobuf"


def _assert_metric_lines(server: Server, *lines: str) -> None:
    """Assert that each of ``lines`` is in the server's ``/metrics`` text (read once)."""
    metrics = httpx.get(server.base + "/metrics").text
    for line in lines:
        assert line in metrics, line


def _with_a_bad_span(payload: bytes, media: str, keep: bool = True) -> bytes:
    """The SDK's request of one 3-span trace (``payload``) with a fourth span in the same
    scope, ``spans[3]``: a copy of the first with ``traceId`` ``"abcd"`` (the trial's span; 2
    bytes in protobuf) and its own span id. Without ``keep``, the bad span alone
    (``spans[0]``)."""
    if media == JSON:
        body = json.loads(encode_json(decode_protobuf(payload)))
        spans = body["resourceSpans"][0]["scopeSpans"][0]["spans"]
        bad = {**spans[0], "traceId": "abcd", "spanId": "ab" * 8}
        spans[:] = [*spans, bad] if keep else [bad]
        return json.dumps(body).encode()
    request = ExportTraceServiceRequest.FromString(payload)
    spans = request.resource_spans[0].scope_spans[0].spans
    assert len(spans) == 3
    added = spans.add()
    added.CopyFrom(spans[0])
    added.trace_id, added.span_id = b"\xab\xcd", b"\xab" * 8
    if not keep:
        del spans[:3]
    return request.SerializeToString()


@pytest.mark.parametrize("media", [JSON, PROTOBUF])
def test_an_unreadable_span_is_dead_lettered_and_the_rest_of_its_request_kept(
    server: Server, tmp_path: Path, media: str
) -> None:
    """A trial's request: a valid 3-span trace and a span with ``traceId: "abcd"``. Before:
    400 for the whole request (which exporters do not retry: the valid trace was lost), one
    ``invalid_value`` dead letter. Now OTLP's partial success: the trace becomes its event,
    the bad span one dead letter, 200 with ``rejectedSpans`` 1 and its position, never the
    id. A request with no readable span, or whose envelope cannot be read, still gets 400."""
    payload, trace_id = _sdk_request()
    response = server.post(_with_a_bad_span(payload, media), media)
    assert response.status_code == 200 and response.headers["content-type"] == media
    where = "resourceSpans[0].scopeSpans[0].spans[3].traceId"
    said = "4 hex characters, expected 32" if media == JSON else "2 bytes, expected 16"
    message = f"spans dead-lettered: invalid_value (1); unreadable spans: {where}: {said}"
    if media == JSON:
        assert response.json() == {
            "partialSuccess": {"rejectedSpans": "1", "errorMessage": message}
        }
    else:
        answer = ExportTraceServiceResponse.FromString(response.content)
        assert answer.partial_success.rejected_spans == 1
        assert answer.partial_success.error_message == message
    assert b"abcd" not in response.content and b"\xab\xcd" not in response.content
    (event,) = server.wait_for(1)
    assert event == _expected(trace_id, "b" * 32, "c" * 32, "d" * 32)[trace_id]
    assert event.question == "What is the refund window?"
    (row,) = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert (row["reason"], row["detail"]) == ("invalid_value", f"{where}: {said}")
    letter = base64.b64decode(row["value_b64"])  # the span alone, in the request's encoding
    if media == JSON:
        (alone,) = json.loads(letter)["resourceSpans"][0]["scopeSpans"][0]["spans"]
        assert alone["traceId"] == "abcd"
    else:
        request = ExportTraceServiceRequest.FromString(letter)
        (alone,) = request.resource_spans[0].scope_spans[0].spans
        assert alone.trace_id == b"\xab\xcd"
    # no span readable: 400 (google.rpc.Status INVALID_ARGUMENT), the span dead-lettered
    # alone as above; an envelope that cannot be read: 400, dead-lettered whole
    payload, _ = _sdk_request()
    unreadable = server.post(_with_a_bad_span(payload, media, keep=False), media)
    garbage = server.post(b"{not json" if media == JSON else payload[:-7], media)
    statuses = [
        unreadable.json() if media == JSON else _status(Status.FromString(unreadable.content)),
        garbage.json() if media == JSON else _status(Status.FromString(garbage.content)),
    ]
    assert (unreadable.status_code, garbage.status_code) == (400, 400)
    assert statuses[0] == {"code": 3, "message": message.replace("spans[3]", "spans[0]")}
    envelope = "not_json" if media == JSON else "not_protobuf"
    assert statuses[1]["code"] == 3 and statuses[1]["message"].startswith(f"{envelope}:")
    assert b"abcd" not in unreadable.content and b"\xab\xcd" not in unreadable.content
    rows = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert [r["reason"] for r in rows] == ["invalid_value", "invalid_value", envelope]
    # counted where every dead letter is: consumed = processed + duplicates + dead letters
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["processed"], totals["duplicates"]) == (4, 1, 0)
    assert totals["dead_lettered"] == {"invalid_value": 2, envelope: 1}
    _assert_metric_lines(
        server,
        'goldwatch_events_dead_lettered_total{reason="invalid_value",source="http"} 2.0',
        'goldwatch_trace_spans_rejected_total{reason="invalid_value"} 2.0',
        f'goldwatch_trace_payloads_rejected_total{{reason="{envelope}"}} 1.0',
        'goldwatch_trace_payloads_rejected_total{reason="invalid_value"} 0.0',
        "goldwatch_trace_spans_received_total 5.0",  # 3 + 1, then the unreadable one
    )


def test_partial_success_lists_the_first_unreadable_positions_and_counts_every_reason() -> None:
    """Many unreadable spans: every one counted, the first three positions named (the message
    stays short for a batch of 512); dropped by assembly and unreadable add up."""
    invalid = [InvalidSpan("wrong_type" if i % 2 else "invalid_value",
                           f"resourceSpans[0].scopeSpans[0].spans[{i}].name: expected string",
                           (0, 0, i)) for i in range(5)]  # fmt: skip
    late = Rejected("a" * 32, "late_span", "late", (_span(), _span()))
    answer = partial_success([late], invalid).partial_success
    assert answer.rejected_spans == 7
    assert answer.error_message == (
        "spans dead-lettered: invalid_value (3), late_span (2), wrong_type (2); unreadable "
        "spans (3 of 5 listed): resourceSpans[0].scopeSpans[0].spans[0].name: expected "
        "string; resourceSpans[0].scopeSpans[0].spans[1].name: expected string; "
        "resourceSpans[0].scopeSpans[0].spans[2].name: expected string"
    )


def _span() -> Span:
    return Span("a" * 32, "b" * 16, None, "s", 1, 2)


def _status(status: Status) -> dict[str, Any]:
    return {"code": status.code, "message": status.message}


def encode_spans_request(spans: list[Any]) -> bytes:
    """OTLP protobuf of decoded spans (through OTLP/JSON, the Collector's other encoding)."""
    from google.protobuf.json_format import Parse
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
        ExportTraceServiceRequest,
    )

    document = json.loads(encode_json(spans))
    for resource in document["resourceSpans"]:  # OTLP/JSON ids are hex, protobuf JSON base64
        for scope in resource["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if span.get(key):
                        span[key] = base64.b64encode(bytes.fromhex(span[key])).decode()
    return Parse(json.dumps(document), ExportTraceServiceRequest()).SerializeToString()


def test_a_full_assembler_answers_429_with_retry_after_and_evicts_nothing(
    tmp_path: Path,
) -> None:
    """max_open_traces 2, two traces open (their roots not sent yet): a request with a third
    new trace is refused (429, Retry-After, google.rpc.Status RESOURCE_EXHAUSTED), nothing of
    it kept; once the open traces are complete and handed out it is accepted. Before: 200,
    and the oldest open trace was evicted (dead-lettered)."""
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"},
        api={"port": free_port(), "token": TOKEN},
        analytics={"enabled": False},
        traces={"assembly": {"settle_s": 0.2, "timeout_s": 60.0, "max_open_traces": 2}},
    )
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    traces = []
    for _ in range(3):
        _openinference(tracer)
        traces.append(
            decode_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString())
        )
        memory.clear()
    provider.shutdown()
    kids = [encode_json([s for s in t if not s.is_root]) for t in traces]
    roots = [encode_json([s for s in t if s.is_root]) for t in traces]
    with Server(settings) as server:
        assert [server.post(k, "application/json").status_code for k in kids[:2]] == [200, 200]
        refused = server.post(kids[2], "application/json")
        assert refused.status_code == 429 and refused.headers["retry-after"] == "1"
        assert refused.json()["code"] == 8  # RESOURCE_EXHAUSTED
        assert refused.json()["message"] == "2 traces are being assembled (at most 2); retry later"
        for root in roots[:2]:
            assert server.post(root, "application/json").status_code == 200
        assert len(server.wait_for(2)) == 2
        assert server.post(kids[2], "application/json").status_code == 200  # the retry
        assert server.post(roots[2], "application/json").status_code == 200
        assert len(server.wait_for(3)) == 3
        metrics = httpx.get(server.base + "/metrics").text
        assert "goldwatch_trace_requests_throttled_total 1.0" in metrics
        assert 'goldwatch_trace_spans_rejected_total{reason="evicted"} 0.0' in metrics
        assert not (tmp_path / "goldwatch.dlq.jsonl").exists()


@pytest.mark.parametrize("chunked", [False, True])
def test_an_oversize_body_sent_whole_before_reading_gets_a_readable_413(
    tmp_path: Path, chunked: bool
) -> None:
    """A client that sends its whole 5 MB body before reading the answer (http.client, as
    urllib, which also asks ``Connection: close``) reads the 413, with and without
    Content-Length, on the HTTP protocol of ``goldwatch serve``; a kept-alive connection then
    carries the next request. Before: with ``Connection: close`` the server closed with the
    body unread, the client got a connection reset or a broken pipe and no answer."""
    port = free_port()
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"},
        analytics={"enabled": False},
        api={"port": port, "token": TOKEN, "max_request_bytes": 200_000},
    )
    with Server(settings, guarded=True):
        for close in (True, False):
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT_S)
            try:
                _post_whole_then_read(connection, chunked, close)
                if not close:
                    connection.request("GET", "/healthz")  # the same connection
                    again = connection.getresponse()
                    assert again.status == 200
                    again.read()
            finally:
                connection.close()


def _post_whole_then_read(
    connection: http.client.HTTPConnection, chunked: bool, close: bool
) -> None:
    headers = {"content-type": "application/x-protobuf", "authorization": f"Bearer {TOKEN}"}
    if close:
        headers["connection"] = "close"
    body = b"\0" * 5_000_000  # max_request_bytes is 200 kB
    if chunked:  # no Content-Length: read up to the limit, then 413
        chunks = (body[i : i + 65_536] for i in range(0, len(body), 65_536))
        connection.request("POST", "/v1/traces", body=chunks, headers=headers,
                           encode_chunked=True)  # fmt: skip
    else:
        connection.request("POST", "/v1/traces", body=body, headers=headers)
    answer = connection.getresponse()
    assert answer.status == 413
    assert json.loads(answer.read()) == {
        "error": "too_large",
        "detail": "request body over 200000 bytes",
    }


#: The reviewer's payload: a resource with a 100 kB attribute and 500 spans with a zero
#: trace id, next to the SDK's valid 3-span trace (its own resource).
BIG_ATTRIBUTE, ZERO_SPANS = 100_000, 500


def _amplifier(media: str, mixed: bool = False) -> bytes:
    """The SDK's request of one 3-span trace plus ``resourceSpans[1]``: a resource with a
    100 kB attribute and 500 spans with an all-zero trace id (with ``mixed``, every odd one
    has a valid trace id and a ``name`` that is not a string instead: ``wrong_type``)."""
    payload, _ = _sdk_request()
    if media == JSON:
        body = json.loads(encode_json(decode_protobuf(payload)))
        spans: list[Any] = []
        for i in range(ZERO_SPANS):
            span: dict[str, Any] = {"traceId": "0" * 32, "spanId": f"{i + 1:016x}", "name": "n"}
            if mixed and i % 2:
                span.update(traceId="e" * 32, name=7)
            spans.append(span)
        body["resourceSpans"].append({
            "resource": {"attributes": [
                {"key": "big", "value": {"stringValue": "x" * BIG_ATTRIBUTE}}]},
            "scopeSpans": [{"scope": {"name": "s"}, "spans": spans}],
        })  # fmt: skip
        return json.dumps(body).encode()
    request = ExportTraceServiceRequest.FromString(payload)
    resource_spans = request.resource_spans.add()
    attribute = resource_spans.resource.attributes.add()
    attribute.key, attribute.value.string_value = "big", "x" * BIG_ATTRIBUTE
    scope_spans = resource_spans.scope_spans.add()
    scope_spans.scope.name = "s"
    for i in range(ZERO_SPANS):
        span = scope_spans.spans.add()
        span.trace_id, span.span_id, span.name = bytes(16), (i + 1).to_bytes(8, "big"), "n"
    return request.SerializeToString()


@pytest.mark.parametrize("media", [JSON, PROTOBUF])
def test_the_unreadable_spans_of_a_request_are_one_letter_no_larger_than_it(
    server: Server, tmp_path: Path, media: str
) -> None:
    """The reviewer's payload. Before: one letter per span, each copying the 100 kB
    resource: 500 letters, a 66.8 MB dead-letter file for a 117 kB protobuf request (573x;
    JSON 66.9 MB for 146 kB). Now one letter for the resource's 500 spans, smaller than the
    request; every span still counted in rejectedSpans and the span metric, the letter once
    in the totals (consumed = processed + duplicates + dead letters)."""
    body = _amplifier(media)
    response = server.post(body, media)
    assert response.status_code == 200
    zero = "all zero (an id has a non-zero digit)" if media == JSON else (
        "all zero (an id has a non-zero byte)")  # fmt: skip
    listed = "; ".join(f"resourceSpans[1].scopeSpans[0].spans[{i}].traceId: {zero}"
                       for i in range(3))  # fmt: skip
    message = (f"spans dead-lettered: invalid_value (500); unreadable spans (3 of 500 listed): "
               f"{listed}")  # fmt: skip
    if media == JSON:
        assert response.json() == {
            "partialSuccess": {"rejectedSpans": "500", "errorMessage": message}
        }
    else:
        answer = ExportTraceServiceResponse.FromString(response.content)
        assert (answer.partial_success.rejected_spans, answer.partial_success.error_message) == (
            500, message)  # fmt: skip
    assert len(server.wait_for(1)) == 1  # the valid trace's event
    dlq = tmp_path / "goldwatch.dlq.jsonl"
    (row,) = [json.loads(line) for line in dlq.open()]
    assert (row["reason"], row["detail"]) == (
        "invalid_value", f"500 unreadable spans (3 of 500 listed): {listed}")  # fmt: skip
    letter = base64.b64decode(row["value_b64"])
    assert len(letter) <= len(body)  # the bound: the letters' payloads within the request's
    assert dlq.stat().st_size <= len(body) * 4 / 3 + 2048  # base64, one line's metadata
    if media == JSON:
        (resource,) = json.loads(letter)["resourceSpans"]
        spans = resource["scopeSpans"][0]["spans"]
        assert resource["resource"]["attributes"][0]["key"] == "big"
        assert {s["traceId"] for s in spans} == {"0" * 32} and len(spans) == 500
    else:
        (resource,) = ExportTraceServiceRequest.FromString(letter).resource_spans
        assert resource.resource.attributes[0].key == "big"
        assert {s.trace_id for s in resource.scope_spans[0].spans} == {bytes(16)}
        assert len(resource.scope_spans[0].spans) == 500
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["processed"], totals["duplicates"]) == (2, 1, 0)
    assert totals["dead_lettered"] == {"invalid_value": 1}
    _assert_metric_lines(
        server,
        'goldwatch_events_dead_lettered_total{reason="invalid_value",source="http"} 1.0',
        'goldwatch_trace_spans_rejected_total{reason="invalid_value"} 500.0',
        "goldwatch_trace_spans_received_total 503.0",
    )


def test_letters_larger_than_their_request_are_the_request_itself(
    server: Server, tmp_path: Path
) -> None:
    """The 100 kB resource's spans of two reasons (250 all-zero trace ids, 250 names that
    are not strings) would be two letters of 100 kB each, more than the request: the
    request itself is the one letter, saying so; every span counted by its reason. Its
    replay after the trace was handed out: the valid trace a duplicate, the unreadable spans
    one letter again."""
    body = _amplifier(JSON, mixed=True)
    response = server.post(body, JSON)
    assert response.status_code == 200
    assert response.json()["partialSuccess"]["rejectedSpans"] == "500"
    assert len(server.wait_for(1)) == 1
    where = "resourceSpans[1].scopeSpans[0].spans"
    zero = "traceId: all zero (an id has a non-zero digit)"
    dlq = tmp_path / "goldwatch.dlq.jsonl"
    (row,) = [json.loads(line) for line in dlq.open()]
    assert row["reason"] == "invalid_value"  # the first unreadable span's
    assert row["detail"] == (
        "the whole request: 500 of its 503 spans unreadable (invalid_value (250), wrong_type "
        "(250)); its 3 readable spans were kept (a replay of this letter counts them as spans "
        "sent again); a letter per resource and reason would take more than the request's "
        f"{len(body)} bytes; 500 unreadable spans (3 of 500 listed): {where}[0].{zero}; "
        f"{where}[1].name: expected string; {where}[2].{zero}"
    )
    assert base64.b64decode(row["value_b64"]) == body
    _assert_metric_lines(
        server,
        'goldwatch_trace_spans_rejected_total{reason="invalid_value"} 250.0',
        'goldwatch_trace_spans_rejected_total{reason="wrong_type"} 250.0',
        'goldwatch_events_dead_lettered_total{reason="invalid_value",source="http"} 1.0',
    )
    again = server.post(base64.b64decode(row["value_b64"]), JSON)  # the letter replayed
    assert again.status_code == 200
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["processed"], totals["duplicates"]) == (4, 1, 1)
    assert totals["dead_lettered"] == {"invalid_value": 2}
