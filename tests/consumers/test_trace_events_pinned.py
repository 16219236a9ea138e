"""The events the Kafka trace path builds, pinned (issue 20's throughput work must not change
them): the four convention shapes give the events written out by hand in
tests/service/api/test_traces_api.py; every event handed to the loop equals what the
canonical JSON of it decodes to (the path before the events were handed over ready), also
when the event-size limit dead-letters some; protobuf decoding gives what the OpenTelemetry
SDK recorded."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer
from prometheus_client import CollectorRegistry

from consumers.base import Origin, RawMessage
from consumers.loop import make_decoder, run
from consumers.trace_source import MAX_MESSAGES_PER_TRACE, TraceSource, json_size_bound
from service.events import (
    Answer,
    Feedback,
    QueryLogEvent,
    Retrieval,
    RetrievedPassage,
    User,
)
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.state import StateStore
from service.telemetry import build_metrics
from service.traces.assembly import AssemblyLimits, TraceAssembler
from service.traces.mapping import TraceMapping
from service.traces.otlp import TraceDecodeError, decode_protobuf, encode_json
from service.traces.spans import Span
from tests.consumers.test_trace_source import T0, Clock, FakeSource
from tests.service.api.test_traces_api import (
    _at,
    _expected,
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999, UTC)  # the longest timestamp
SHAPES: tuple[Callable[[Tracer], str], ...] = (_openinference, _genai, _genai_old, _openllmetry)


def _collector_messages(
    traces: list[Callable[[Tracer], str]], exporter: InMemorySpanExporter, tracer: Tracer
) -> tuple[list[str], list[RawMessage]]:
    """Run each trace builder; per trace its child spans in one message, and all roots in
    later messages (the Collector's ``kafka`` exporter, root last)."""
    ids, children, roots = [], [], []
    for build in traces:
        ids.append(build(tracer))
        spans = list(exporter.get_finished_spans())
        exporter.clear()
        children.append(encode_spans([s for s in spans if s.parent]).SerializeToString())
        roots.append(encode_spans([s for s in spans if not s.parent]).SerializeToString())
    values = children + roots
    origins = [Origin("otlp_spans", 0, offset) for offset in range(len(values))]
    return ids, [RawMessage(v, o) for v, o in zip(values, origins, strict=True)]


def _through_source(
    messages: list[RawMessage], max_event_bytes: int = 1_048_576
) -> tuple[list[RawMessage], list[tuple[RawMessage, QueryLogEvent]], list[Any]]:
    """Poll the trace source once after all messages (clock past the settle time) and decode
    what it hands out with the loop's decoder, wrapped as serve wraps it."""
    clock = Clock()
    inner = FakeSource([messages])
    limits = AssemblyLimits(settle_s=1.0, timeout_s=10.0)
    source = TraceSource(inner, TraceAssembler(limits), TraceMapping(), "otlp_proto", clock)
    assert source.poll(1000, 0) == []
    clock.now = 1.0
    out = source.poll(1000, 0)
    decoded, dead = source.wrap_decoder(make_decoder(max_event_bytes=max_event_bytes))(out)
    return out, decoded, dead


def test_the_four_conventions_on_kafka_give_the_hand_written_events() -> None:
    exporter = InMemorySpanExporter()
    provider, tracer = _provider(exporter)
    ids, messages = _collector_messages(list(SHAPES), exporter, tracer)
    provider.shutdown()
    _, decoded, dead = _through_source(messages)
    assert dead == []
    assert {event.event_id: event for _, event in decoded} == _expected(*ids)
    assert len(decoded) == 4


def _varied(n: int) -> Callable[[Tracer], str]:
    """An OpenInference trace whose size and content vary with ``n``: non-ASCII and control
    characters, integer and metadata ids, a content-hashed passage, a long answer."""

    def build(tracer: Tracer) -> str:
        with tracer.start_as_current_span("q", start_time=_at(n), end_on_exit=False) as root:
            root.set_attributes({
                "openinference.span.kind": "CHAIN", "input.mime_type": "application/json",
                "input.value": json.dumps({"query": f"¿Cuánto sale {n}?\t\"quoted\"\u2028"}),
                "enduser.id": n, "user.roles": ["parent"],
            })  # fmt: skip
            with tracer.start_as_current_span("r", start_time=_at(n + 1), end_on_exit=False) as r:
                r.set_attribute("openinference.span.kind", "RETRIEVER")
                for i in range(n % 7 * 4):
                    prefix = f"retrieval.documents.{i}.document."
                    if i % 3 == 0:
                        r.set_attribute(prefix + "id", i)
                    elif i % 3 == 1:
                        r.set_attribute(prefix + "metadata", json.dumps({"chunk_id": f"c{i}"}))
                    else:
                        r.set_attribute(prefix + "content", f"passage  text {i}\n")
                    r.set_attribute(prefix + "score", 1 / (i + 1))
                r.end(end_time=_at(n + 2.25))
            root.set_attribute("output.value", "ответ " * (n % 5) * 40 or " ")
            root.end(end_time=_at(n + 3))
        return format(root.get_span_context().trace_id, "032x")

    return build


def test_events_handed_over_equal_their_canonical_json_decoded() -> None:
    """A mixed batch: each event the loop gets equals what its canonical JSON decodes to,
    and with a small event-size limit the same traces are dead-lettered ``too_large``."""
    exporter = InMemorySpanExporter()
    provider, tracer = _provider(exporter)
    builders = [*SHAPES, *(_varied(n) for n in range(24))]
    ids, messages = _collector_messages(builders, exporter, tracer)
    provider.shutdown()
    for limit in (1_048_576, 1_500):
        out, decoded, dead = _through_source(messages, max_event_bytes=limit)
        values = [m.value or b"" for m in out]
        reference, reference_dead = make_decoder(max_event_bytes=limit)(
            [RawMessage(v, Origin(file="x", line=1)) for v in values]
        )
        assert [event for _, event in decoded] == [event for _, event in reference]
        assert [(d.reason, d.detail) for d in dead] == [
            (d.reason, d.detail) for d in reference_dead
        ]
        assert [d.message.value for d in dead] == [d.message.value for d in reference_dead]
        assert len(decoded) + len(dead) == len(ids)
        if limit < 1_048_576:
            assert {d.reason for d in dead} == {"too_large"} and len(dead) >= 3
            assert all(len(v) > limit for v in (d.message.value or b"" for d in dead))
        else:
            assert dead == []
            assert sorted(event.event_id for _, event in decoded) == sorted(ids)


def _plain(value: Any) -> Any:
    """The SDK's attribute values as the decoder gives them (tuples are OTLP arrays)."""
    return [_plain(v) for v in value] if isinstance(value, tuple) else value


def test_protobuf_decoding_gives_what_the_sdk_recorded() -> None:
    """Every field of every span of the four shapes, and two resources in one request."""
    exporter = InMemorySpanExporter()
    provider, tracer = _provider(exporter)
    for build in SHAPES:
        build(tracer)
    other = TracerProvider(resource=Resource.create({"service.name": "other", "k": 3}))
    other.add_span_processor(SimpleSpanProcessor(exporter))
    with other.get_tracer("x").start_as_current_span("solo") as solo:
        solo.set_attribute("flags", [True, False])
    provider.shutdown()
    other.shutdown()
    finished = list(exporter.get_finished_spans())
    for payload in (encode_spans(finished).SerializeToString(),) * 2:  # twice: caches
        decoded = {span.span_id: span for span in decode_protobuf(payload)}
        assert len(decoded) == len(finished) == 11
        for sdk in finished:
            span = decoded[format(sdk.context.span_id, "016x")]
            assert span.trace_id == format(sdk.context.trace_id, "032x")
            parent = format(sdk.parent.span_id, "016x") if sdk.parent else None
            assert span.parent_span_id == parent
            assert (span.name, span.start_unix_nano, span.end_unix_nano) == (
                sdk.name, sdk.start_time, sdk.end_time,
            )  # fmt: skip
            assert span.attributes == {k: _plain(v) for k, v in (sdk.attributes or {}).items()}
            assert [(e.name, e.time_unix_nano, e.attributes) for e in span.events] == [
                (e.name, e.timestamp, {k: _plain(v) for k, v in (e.attributes or {}).items()})
                for e in sdk.events
            ]
            assert span.resource == dict(sdk.resource.attributes)
            assert span.status_code == sdk.status.status_code.value


def test_the_json_size_bound_is_never_below_the_json() -> None:
    """The bound that lets an event skip the size check, against the JSON of the mixed
    batch and of events made of the characters JSON writes longest (``\\u0001``: 6 bytes;
    4-byte UTF-8) in every string field, with the longest numbers."""
    exporter = InMemorySpanExporter()
    provider, tracer = _provider(exporter)
    _, messages = _collector_messages([*SHAPES, *(_varied(n) for n in range(12))], exporter, tracer)
    provider.shutdown()
    events = [event for _, event in _through_source(messages)[1]]
    worst = []
    for text in ("\x01", "\U0001f600", '"', ""):
        s = text * 5 or None
        worst.append(
            QueryLogEvent(
                event_id="e" + (text * 3), timestamp=LATEST,
                question="q" + text * 50, channel=s,
                user=User(id=s, role=s, tenant=s),
                retrieval=Retrieval(retriever=s, latency_ms=1.2345678901234567e-300, results=tuple(
                    RetrievedPassage(id="p" + text * i, score=-1.2345678901234567e-300,
                                     rank=2**62, doc=s, doc_type=s) for i in range(30))),
                answer=Answer(text=s, refused=False, citations=tuple("c" + text * i
                                                                     for i in range(9))),
                feedback=Feedback(rating=-1.2345678901234567e-300),
            )
        )  # fmt: skip
    for event in [*events, *worst]:
        assert len(event.model_dump_json().encode("utf-8")) <= json_size_bound(event)


def test_a_bad_protobuf_id_is_named_by_its_place() -> None:
    """Ids are checked per span (the trace id once per run of one trace): the error names
    the first bad id's field and place, as a check of every id in order would."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    good = {"trace_id": b"\x01" * 16, "span_id": b"\x02" * 8, "name": "s"}
    cases = [
        ({"span_id": b"\x03" * 7}, "spans[1].spanId"),
        ({"span_id": bytes(8)}, "spans[1].spanId"),
        ({"trace_id": bytes(16)}, "spans[1].traceId"),
        ({"trace_id": b"\x01" * 15}, "spans[1].traceId"),
        ({"parent_span_id": b"\x04" * 9}, "spans[1].parentSpanId"),
    ]
    for change, where in cases:
        del spans[:]
        spans.add(**good)
        spans.add(**{**good, **change})
        with pytest.raises(TraceDecodeError) as caught:
            decode_protobuf(request.SerializeToString())
        assert caught.value.reason == "invalid_value"
        assert caught.value.detail.startswith(f"resourceSpans[0].scopeSpans[0].{where}: ")
    del spans[:]
    spans.add(**good)
    spans.add(**{**good, "span_id": b"\x05" * 8, "parent_span_id": bytes(8)})  # zero: a root
    assert [s.parent_span_id for s in decode_protobuf(request.SerializeToString())] == [None] * 2


class _Finite(FakeSource):
    """A fake source whose input ends after its batches."""

    @property
    def at_eof(self) -> bool:
        return not self.batches

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        super().commit(messages)


class _Failing:
    """A stage that fails every batch."""

    name = "failing"

    def process(self, batch: Any) -> None:
        raise RuntimeError("stage down")

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        """Stateless."""


def test_a_failed_batch_dead_letters_each_trace_as_its_event_json() -> None:
    """An event handed over ready has no JSON until one is needed: a batch a stage fails on
    (suppressed by ``on_error``) is dead-lettered ``processing_failed`` with each event's
    canonical JSON, nothing lost."""
    exporter = InMemorySpanExporter()
    provider, tracer = _provider(exporter)
    ids, messages = _collector_messages(list(SHAPES), exporter, tracer)
    provider.shutdown()
    clock = Clock()
    inner = _Finite([messages, []])
    source = TraceSource(inner, TraceAssembler(AssemblyLimits(settle_s=1.0, timeout_s=10.0)),
                         TraceMapping(), "otlp_proto", clock)  # fmt: skip
    original_poll = source.poll

    def poll(max_records: int, timeout_ms: int) -> list[RawMessage]:
        clock.now += 1.0
        return original_poll(max_records, timeout_ms)

    source.poll = poll  # type: ignore[method-assign]
    config = PipelineConfig(max_batch_size=10, max_batch_wait_ms=0)
    report = run(source, default_pipeline(config, extra=[_Failing()]), StateStore.in_memory(),
                 build_metrics(CollectorRegistry()), threading.Event(), config=config,
                 decode=source.wrap_decoder(make_decoder()), on_error=lambda *_: True,
                 until_eof=True)  # fmt: skip
    assert report.dead_lettered == {"processing_failed": 4}
    letters = [QueryLogEvent.model_validate_json(d.message.value or b"") for d in inner.dead]
    assert {event.event_id: event for event in letters} == _expected(*ids)


class _Recording(FakeSource):
    """Serves a list of messages ``max_records`` at a time and records what was asked."""

    def __init__(self, messages: list[RawMessage]) -> None:
        super().__init__([])
        self.messages, self.asked = messages, []

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        self.asked.append(max_records)
        batch, self.messages = self.messages[:max_records], self.messages[max_records:]
        return batch


def test_batches_fill_up_when_each_trace_takes_two_messages() -> None:
    """With each trace in two messages, the trace source asks for twice the events the loop
    wants once a trace has come out, so batches hold ``max_records`` traces, not half."""
    roots = [Span(f"{t + 1:032x}", "0" * 15 + "1", None, "q", T0, T0 + 9, {"input.value": "Q?"})
             for t in range(60)]  # fmt: skip
    children = [Span(r.trace_id, "0" * 15 + "2", r.span_id, "llm", T0 + 1, T0 + 2) for r in roots]
    values = [encode_json([span]) for pair in zip(children, roots, strict=True) for span in pair]
    inner = _Recording([RawMessage(v, Origin("otlp_spans", 0, i)) for i, v in enumerate(values)])
    clock = Clock()
    source = TraceSource(inner, TraceAssembler(AssemblyLimits(settle_s=1.0, timeout_s=10.0)),
                         TraceMapping(), "otlp_json", clock)  # fmt: skip
    sizes = []
    for _ in range(6):
        clock.now += 1.0
        sizes.append(len(source.poll(10, 0)))
    assert inner.asked == [10, 20, 20, 20, 20, 20]  # after the first poll: 10 messages, 5 traces
    assert sizes == [0, 5, 10, 10, 10, 10]
    assert MAX_MESSAGES_PER_TRACE == 8
