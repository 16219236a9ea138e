"""What trial 13 sent to ``POST /v1/traces`` with the OpenTelemetry SDK (its
``otel/produce.py``, ``mime.py`` and ``variants.py``), over real HTTP:

* an OpenInference root ``input.value`` holding ``{"query": ...}`` without
  ``input.mime_type`` was kept as the question word for word (finding 2);
* GenAI documents sent as a span *event* ``gen_ai.retrieval.documents`` were ignored without
  a count (finding 3);
* a JSON body without ``resourceSpans`` answered 200 ``{}`` while the README promised 400
  (finding 8)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.trace import Tracer

from service.events import Retrieval, RetrievedPassage
from service.settings import load_settings
from tests.ports import free_port
from tests.service.api.test_traces_api import TOKEN, WAIT_S, Server, _at, _provider

QUESTION = "What modern city did Khanbaliq become?"
DOCS = [{"id": "sq-0093", "score": 9.0}, {"id": "sq-0001", "score": 8.0}]


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[Server]:
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"},
        api={"port": free_port(), "token": TOKEN},
        analytics={"enabled": False},
        traces={"assembly": {"settle_s": 0.2, "timeout_s": 5.0}},
    )
    with Server(settings) as running:
        yield running


def _exporter(server: Server) -> OTLPSpanExporter:
    return OTLPSpanExporter(endpoint=server.base + "/v1/traces",
                            headers={"authorization": f"Bearer {TOKEN}"})  # fmt: skip


def _chain(tracer: Tracer, value: str, mime: str | None = None) -> str:
    """An OpenInference root CHAIN span (trial 13's mime.py): ``input.value`` as given."""
    with tracer.start_as_current_span("root", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({"openinference.span.kind": "CHAIN", "input.value": value,
                             "output.value": "I don't know."})  # fmt: skip
        if mime is not None:
            root.set_attribute("input.mime_type", mime)
        root.end(end_time=_at(5))
        return format(root.get_span_context().trace_id, "032x")


def test_a_json_input_value_is_read_with_its_keys_whatever_the_mime_type(
    server: Server, tmp_path: Path
) -> None:
    provider, tracer = _provider(_exporter(server))
    wrapped = json.dumps({"query": QUESTION})
    without = _chain(tracer, wrapped)  # trial 13: kept verbatim as the question
    with_mime = _chain(tracer, wrapped, "application/json")
    as_text = _chain(tracer, wrapped, "text/plain")
    nested = _chain(tracer, json.dumps({"kwargs": {"question": QUESTION}}))
    plain = _chain(tracer, "Where is the Warsaw zoo?")  # not JSON: the text, as before
    unkeyed = _chain(tracer, json.dumps({"text": "Where is the Warsaw castle?"}))
    provider.shutdown()
    events = {e.event_id: e.question for e in server.wait_for(5)}
    assert events == {without: QUESTION, with_mime: QUESTION, as_text: QUESTION,
                      nested: QUESTION, plain: "Where is the Warsaw zoo?"}  # fmt: skip
    assert unkeyed not in events
    _wait_until(server, lambda totals: sum(totals["dead_lettered"].values()) >= 1)
    # the object with none of the keys is no question: dead-lettered, saying why, not kept
    dlq = [json.loads(line) for line in (tmp_path / "goldwatch.dlq.jsonl").open()]
    assert [row["reason"] for row in dlq] == ["missing_field"]
    assert ("root input.value is a JSON object with none of the keys query, question, input"
            in dlq[0]["detail"])  # fmt: skip
    assert "Warsaw castle" not in dlq[0]["detail"]
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["processed"], totals["dead_lettered"]) == (5, {"missing_field": 1})


def _wait_until(server: Server, done: Callable[[dict[str, Any]], bool]) -> None:
    """Wait (at most WAIT_S) until ``done`` holds for the ``/v1/status`` totals."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if done(httpx.get(server.base + "/v1/status").json()["totals"]):
            return
        time.sleep(0.05)


def _retrieval_trace(tracer: Tracer, name: str, documents: dict[str, str] | None,
                     on_span: bool = False) -> str:  # fmt: skip
    """Trial 13's variants.py: a GenAI retrieval span carrying the documents as an event
    named ``gen_ai.retrieval.documents`` (``documents``: its attributes) or as the span's
    own attribute (``on_span``), then a chat span holding the question."""
    with tracer.start_as_current_span("root", start_time=_at(0), end_on_exit=False) as root:
        with tracer.start_as_current_span("retrieval", start_time=_at(1),
                                          end_on_exit=False) as span:  # fmt: skip
            span.set_attributes({"gen_ai.operation.name": "retrieval",
                                 "gen_ai.retrieval.top_k": 2})  # fmt: skip
            if on_span and documents is not None:
                span.set_attributes(documents)
            elif documents is not None:
                span.add_event("gen_ai.retrieval.documents", documents, timestamp=_at(2))
            span.end(end_time=_at(3))
        with tracer.start_as_current_span("chat", start_time=_at(4), end_on_exit=False) as chat:
            chat.set_attributes(
                {
                    "gen_ai.operation.name": "chat",
                    "gen_ai.input.messages": json.dumps(
                        [
                            {
                                "role": "user",
                                "parts": [{"type": "text", "content": f"{name}: {QUESTION}"}],
                            }
                        ]
                    ),
                }
            )
            chat.end(end_time=_at(8))  # fmt: skip
        root.end(end_time=_at(9))
        return format(root.get_span_context().trace_id, "032x")


def test_genai_documents_on_an_event_are_read_and_unreadable_ones_counted(
    server: Server,
) -> None:
    provider, tracer = _provider(_exporter(server))
    as_event = _retrieval_trace(tracer, "A", {"gen_ai.retrieval.documents": json.dumps(DOCS)})
    on_span = _retrieval_trace(tracer, "B", {"gen_ai.retrieval.documents": json.dumps(DOCS)},
                               on_span=True)  # fmt: skip
    other_key = _retrieval_trace(tracer, "C", {"documents": json.dumps(DOCS)})
    not_json = _retrieval_trace(tracer, "E", {"gen_ai.retrieval.documents": "sq-0093, sq-0001"})
    no_ids = _retrieval_trace(tracer, "F", {"gen_ai.retrieval.documents": json.dumps(
        [{"score": 9.0}, {"id": "sq-0001", "score": 8.0}])})  # fmt: skip
    provider.shutdown()
    events = {e.event_id: e.retrieval for e in server.wait_for(5)}
    ranked = (RetrievedPassage(id="sq-0093", score=9.0, rank=1),
              RetrievedPassage(id="sq-0001", score=8.0, rank=2))  # fmt: skip
    assert events[as_event] == Retrieval(retriever="retrieval", latency_ms=2.0, results=ranked)
    assert events[on_span] == events[as_event]
    assert events[other_key] == Retrieval(retriever="retrieval", latency_ms=2.0, results=())
    assert events[not_json] == events[other_key]
    one = (RetrievedPassage(id="sq-0001", score=8.0, rank=1),)  # the one with an id
    assert events[no_ids] == Retrieval(retriever="retrieval", latency_ms=2.0, results=one)
    # by hand: C's event and F's first document have no documents/id (missing_field), E's
    # value is not JSON (wrong_type); A and B lost nothing
    expected = {"retrieval.results: missing_field": 2, "retrieval.results: wrong_type": 1}
    _wait_until(server, lambda totals: totals["processed"] >= 5)
    status = httpx.get(server.base + "/v1/status").json()
    assert status["totals"]["fields_dropped"] == expected
    assert status["totals"]["processed"] == 5
    metrics = httpx.get(server.base + "/metrics").text
    assert ('goldwatch_event_fields_dropped_total{field="retrieval.results",'
            'reason="missing_field"} 2.0') in metrics  # fmt: skip


def test_a_string_score_is_counted_over_http(server: Server) -> None:
    """Trial 24 (LOW 6, its ``bad_otlp.sh`` case): an OpenInference retriever span whose
    ``retrieval.documents.0.document.score`` is the string ``"high"`` (or ``"12.3"``) gave
    an event with ``fields_dropped`` still ``{}``. Now the passage is kept without a score
    and ``retrieval.results: wrong_type`` is counted, on /v1/status and /metrics."""
    provider, tracer = _provider(_exporter(server))
    ids = []
    for score in ("high", "12.3", 12.3):
        with tracer.start_as_current_span("rag", start_time=_at(0), end_on_exit=False) as root:
            root.set_attributes({"openinference.span.kind": "CHAIN",
                                 "input.value": f"{score}: {QUESTION}"})  # fmt: skip
            with tracer.start_as_current_span("ret", start_time=_at(1),
                                              end_on_exit=False) as ret:  # fmt: skip
                ret.set_attributes({"openinference.span.kind": "RETRIEVER",
                                    "retrieval.documents.0.document.id": "p-0001",
                                    "retrieval.documents.0.document.score": score})  # fmt: skip
                ret.end(end_time=_at(2))
            root.end(end_time=_at(5))
            ids.append(format(root.get_span_context().trace_id, "032x"))
    provider.shutdown()
    events = {e.event_id: e.retrieval for e in server.wait_for(3)}
    assert [events[i].results if events[i] else None for i in ids] == [
        (RetrievedPassage(id="p-0001", score=None, rank=1),),
        (RetrievedPassage(id="p-0001", score=None, rank=1),),
        (RetrievedPassage(id="p-0001", score=12.3, rank=1),),
    ]
    _wait_until(server, lambda totals: totals["processed"] >= 3)
    status = httpx.get(server.base + "/v1/status").json()
    assert status["totals"]["fields_dropped"] == {"retrieval.results: wrong_type": 2}
    metrics = httpx.get(server.base + "/metrics").text
    assert ('goldwatch_event_fields_dropped_total{field="retrieval.results",'
            'reason="wrong_type"} 2.0') in metrics  # fmt: skip


def _documents_trace(tracer: Tracer, name: str, kind: str | None,
                     operation: str | None = None) -> str:  # fmt: skip
    """Trial 51 ``kindless.py``: a CHAIN root holding the question and a child span with two
    OpenInference documents, its ``openinference.span.kind`` ``kind`` (``None``: none) and
    its ``gen_ai.operation.name`` ``operation`` (``None``: none)."""
    with tracer.start_as_current_span("rag", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({"openinference.span.kind": "CHAIN",
                             "input.value": f"{name}: {QUESTION}"})  # fmt: skip
        with tracer.start_as_current_span("vector_search", start_time=_at(1),
                                          end_on_exit=False) as span:  # fmt: skip
            if kind is not None:
                span.set_attribute("openinference.span.kind", kind)
            if operation is not None:
                span.set_attribute("gen_ai.operation.name", operation)
            span.set_attributes({"retrieval.documents.0.document.id": "sq-0093",
                                 "retrieval.documents.0.document.score": 9.0,
                                 "retrieval.documents.1.document.id": "sq-0001",
                                 "retrieval.documents.1.document.score": 8.0})  # fmt: skip
            span.end(end_time=_at(2))
        root.end(end_time=_at(5))
        return format(root.get_span_context().trace_id, "032x")


def test_openinference_documents_without_a_span_kind_are_read_and_stray_ones_counted(
    server: Server, caplog: pytest.LogCaptureFixture
) -> None:
    """Trial 51 (M1): a span with ``retrieval.documents.*`` but no
    ``openinference.span.kind`` was ignored (no passages, no count, no log) while a kindless
    GenAI documents span was read. Now the documents are the evidence: read as from a
    RETRIEVER. On a span of another kind (CHAIN) or another operation (chat) they stay
    unread, each such event counts ``retrieval.results: other_span_ignored``, and one log
    line says so."""
    caplog.set_level("WARNING", logger="service.api.trace_ingest")
    provider, tracer = _provider(_exporter(server))
    kindless = _documents_trace(tracer, "A", None)
    retriever = _documents_trace(tracer, "B", "RETRIEVER")
    chain = _documents_trace(tracer, "C", "CHAIN")
    chat = _documents_trace(tracer, "D", None, operation="chat")
    provider.shutdown()
    events = {e.event_id: e.retrieval for e in server.wait_for(4)}
    ranked = (RetrievedPassage(id="sq-0093", score=9.0, rank=1),
              RetrievedPassage(id="sq-0001", score=8.0, rank=2))  # fmt: skip
    assert events[kindless] == Retrieval(retriever="vector_search", latency_ms=1.0,
                                         results=ranked)  # fmt: skip
    assert events[retriever] == events[kindless]
    assert (events[chain], events[chat]) == (None, None)
    _wait_until(server, lambda totals: totals["processed"] >= 4)
    status = httpx.get(server.base + "/v1/status").json()
    assert status["totals"]["fields_dropped"] == {"retrieval.results: other_span_ignored": 2}
    metrics = httpx.get(server.base + "/metrics").text
    assert ('goldwatch_event_fields_dropped_total{field="retrieval.results",'
            'reason="other_span_ignored"} 2.0') in metrics  # fmt: skip
    lines = [r.getMessage() for r in caplog.records if "not its retrieval span" in r.getMessage()]
    assert len(lines) == 1, lines  # once, though two traces had stray documents
    assert (chain in lines[0]) != (chat in lines[0])  # the first one handed out, by trace id
    assert "openinference.span.kind RETRIEVER" in lines[0]
    assert QUESTION not in lines[0]  # never content


def test_a_json_body_without_resource_spans_is_an_empty_request_with_a_warning(
    server: Server,
) -> None:
    def post(body: bytes) -> httpx.Response:
        return httpx.post(server.base + "/v1/traces", content=body,
                          headers={"content-type": "application/json",
                                   "authorization": f"Bearer {TOKEN}"})  # fmt: skip

    foo = post(b'{"foo": 1, "zq-planted-key": "zq-planted-value"}')
    assert foo.status_code == 200
    assert foo.json() == {"partialSuccess": {"errorMessage": (
        "no span: the request has no resourceSpans, only 2 top-level keys OTLP does not "
        "define (ignored, as OTLP/JSON asks); nothing was kept")}}  # fmt: skip
    assert "zq-planted" not in foo.text  # never the body
    one = post(b'{"foo": 1}').json()["partialSuccess"]["errorMessage"]
    assert "only 1 top-level key OTLP" in one
    for empty in (b"{}", b'{"resourceSpans": []}'):  # valid empty export requests
        answer = post(empty)
        assert (answer.status_code, answer.json()) == (200, {})
    assert post(b"[1]").status_code == 400  # not an object: not OTLP at all
    totals = httpx.get(server.base + "/v1/status").json()["totals"]
    assert (totals["consumed"], totals["dead_lettered"]) == (1, {"wrong_type": 1})
