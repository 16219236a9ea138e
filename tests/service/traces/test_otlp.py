"""OTLP decoding: protobuf written by the OpenTelemetry SDK's own encoder, and OTLP/JSON."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from service.traces.otlp import TraceDecodeError, decode_json, decode_protobuf, encode_json
from service.traces.spans import Span, SpanEvent


def _sdk_spans() -> list:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    with tracer.start_as_current_span("chain", start_time=1_000) as root:
        root.set_attribute("input.value", "¿Cuánto cuesta?")
        with tracer.start_as_current_span("retrieve", start_time=2_000) as child:
            child.set_attribute("gen_ai.request.top_k", 5.0)
            child.set_attribute("tags", ["a", "b"])
            child.set_attribute("n", 7)
            child.add_event("db.query.result", {"db.query.result.id": "p-1"}, timestamp=2_500)
            child.end(end_time=3_000)
        root.end(end_time=4_000)
    return list(exporter.get_finished_spans())


def test_protobuf_from_the_sdk_encoder() -> None:
    finished = _sdk_spans()
    payload = encode_spans(finished).SerializeToString()
    spans = decode_protobuf(payload)
    by_name = {s.name: s for s in spans}
    root, child = by_name["chain"], by_name["retrieve"]
    trace_hex = format(finished[0].context.trace_id, "032x")
    assert root.trace_id == child.trace_id == trace_hex
    assert root.parent_span_id is None and root.is_root
    assert child.parent_span_id == format(finished[1].context.span_id, "016x")
    assert child.span_id == format(finished[0].context.span_id, "016x")
    assert (root.start_unix_nano, root.end_unix_nano) == (1_000, 4_000)
    assert root.attributes == {"input.value": "¿Cuánto cuesta?"}
    assert child.attributes == {"gen_ai.request.top_k": 5.0, "tags": ["a", "b"], "n": 7}
    assert child.events == (SpanEvent("db.query.result", 2_500, {"db.query.result.id": "p-1"}),)
    assert root.resource["service.name"] == "rag-app"


def test_truncated_protobuf_is_not_protobuf() -> None:
    payload = encode_spans(_sdk_spans()).SerializeToString()
    with pytest.raises(TraceDecodeError) as caught:
        decode_protobuf(payload[: len(payload) // 2])
    assert caught.value.reason == "not_protobuf"


def test_empty_protobuf_is_no_spans() -> None:
    assert decode_protobuf(b"") == []


TRACE = "5b8efff798038103d269b633813fc60c"
SPAN = "eee19b7ec3c1b174"
PARENT = "eee19b7ec3c1b173"


def _request(span: dict) -> bytes:
    body = {
        "resourceSpans": [
            {
                "resource": {
                    "attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]
                },
                "scopeSpans": [{"scope": {"name": "x"}, "spans": [span]}],
            }
        ]
    }
    return json.dumps(body).encode()


def test_json_values_of_every_kind() -> None:
    span = {
        "traceId": TRACE.upper(),  # hex is case-insensitive on input, lowercase on output
        "spanId": SPAN,
        "parentSpanId": PARENT,
        "name": "retrieve",
        "kind": 3,
        "startTimeUnixNano": "1544712660000000000",
        "endTimeUnixNano": 1544712661000000000,
        "attributes": [
            {"key": "s", "value": {"stringValue": "x"}},
            {"key": "i", "value": {"intValue": "-9223372036854775808"}},
            {"key": "d", "value": {"doubleValue": 0.5}},
            {"key": "b", "value": {"boolValue": True}},
            {"key": "raw", "value": {"bytesValue": "AAE="}},
            {"key": "arr", "value": {"arrayValue": {"values": [{"intValue": 1}, {}]}}},
            {
                "key": "kv",
                "value": {"kvlistValue": {"values": [{"key": "k", "value": {"stringValue": "v"}}]}},
            },
        ],
        "events": [{"timeUnixNano": "5", "name": "db.query.result", "attributes": []}],
        "status": {"code": 2},
    }
    assert decode_json(_request(span)) == [
        Span(
            trace_id=TRACE,
            span_id=SPAN,
            parent_span_id=PARENT,
            name="retrieve",
            start_unix_nano=1544712660000000000,
            end_unix_nano=1544712661000000000,
            attributes={
                "s": "x",
                "i": -(2**63),
                "d": 0.5,
                "b": True,
                "raw": b"\x00\x01",
                "arr": [1, None],
                "kv": {"k": "v"},
            },  # fmt: skip
            events=(SpanEvent("db.query.result", 5, {}),),
            resource={"service.name": "svc"},
            status_code=2,
        )
    ]


def test_json_root_span_has_no_parent() -> None:
    span = {"traceId": TRACE, "spanId": SPAN, "parentSpanId": "", "name": "r"}
    (decoded,) = decode_json(_request(span))
    assert decoded.parent_span_id is None and decoded.start_unix_nano == 0


@pytest.mark.parametrize(
    ("payload", "reason", "where"),
    [
        (b"\xff\xfe", "not_utf8", "UTF-8"),
        (b'{"resourceSpans": [', "not_json", "JSON"),
        (b"[]", "wrong_type", "$"),
        (b'{"resourceSpans": {}}', "wrong_type", "$.resourceSpans"),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "startTimeUnixNano": "12x"}),
            "wrong_type",
            "spans[0].startTimeUnixNano",
        ),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "startTimeUnixNano": 1.5}),
            "wrong_type",
            "spans[0].startTimeUnixNano",
        ),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "startTimeUnixNano": "-1"}),
            "invalid_value",
            "startTimeUnixNano",
        ),
        (_request({"traceId": "zz", "spanId": SPAN}), "invalid_value", "traceId"),
        (_request({"traceId": TRACE[:30], "spanId": SPAN}), "invalid_value", "traceId"),
        (_request({"traceId": "0" * 32, "spanId": SPAN}), "invalid_value", "traceId"),
        (_request({"spanId": SPAN}), "invalid_value", "traceId"),
        (
            _request(
                {
                    "traceId": TRACE,
                    "spanId": SPAN,
                    "attributes": [{"key": "n", "value": {"intValue": "secret text"}}],
                }
            ),
            "wrong_type",
            "attributes[0].value.intValue",
        ),
        (
            _request({"traceId": TRACE, "spanId": SPAN, "attributes": [{"key": 3, "value": {}}]}),
            "wrong_type",
            "attributes[0].key",
        ),
        (
            _request(
                {
                    "traceId": TRACE,
                    "spanId": SPAN,
                    "attributes": [{"key": "k", "value": {"stringValue": 1}}],
                }
            ),
            "wrong_type",
            "stringValue",
        ),
    ],
)
def test_json_errors_name_the_field_not_the_content(
    payload: bytes, reason: str, where: str
) -> None:
    with pytest.raises(TraceDecodeError) as caught:
        decode_json(payload)
    assert caught.value.reason == reason
    assert where in caught.value.detail
    assert "secret" not in caught.value.detail


def test_json_and_protobuf_agree_on_the_same_request() -> None:
    """The protobuf JSON mapping of the SDK's request, rewritten the OTLP way (hex ids, as
    the Collector's otlp_json encoding writes), decodes to the same spans."""
    request = encode_spans(_sdk_spans())
    body = MessageToDict(request)  # ids in base64 here; OTLP/JSON wants hex
    for resource_spans in body["resourceSpans"]:
        for scope in resource_spans["scopeSpans"]:
            for span in scope["spans"]:
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in span:
                        span[key] = base64.b64decode(span[key]).hex()
    assert decode_json(json.dumps(body).encode()) == decode_protobuf(request.SerializeToString())


def test_encode_json_round_trips_for_dead_letters() -> None:
    spans = decode_protobuf(encode_spans(_sdk_spans()).SerializeToString())
    odd = Span(
        TRACE,
        SPAN,
        None,
        "odd",
        1,
        2,
        {"b": b"\x00", "kv": {"k": [1, 2.5, None]}, "inf": float("-inf")},
        (SpanEvent("e", 3, {"x": True}),),
        {"service.name": "other"},
        1,
    )
    assert decode_json(encode_json([*spans, odd])) == [*spans, odd]
