"""OTLP decoding: protobuf written by the OpenTelemetry SDK's own encoder, and OTLP/JSON."""

from __future__ import annotations

import base64
import json

import pytest
from google.protobuf.json_format import MessageToDict
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from service.traces.otlp import (
    TraceDecodeError,
    decode_json,
    decode_json_request,
    decode_protobuf,
    decode_protobuf_request,
    encode_json,
)
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


# --- per-span validation: a readable envelope keeps its readable spans ----------------------


def _valid(n: int) -> list[dict]:
    """``n`` valid OTLP/JSON spans of trace :data:`TRACE` (the first is the root)."""
    return [
        {"traceId": TRACE, "spanId": f"{i + 1:016x}", "name": f"s{i}",
         **({"parentSpanId": "0" * 15 + "1"} if i else {})}
        for i in range(n)
    ]  # fmt: skip


def test_json_request_keeps_the_valid_spans_and_sets_the_bad_one_apart() -> None:
    """The trial's request: a valid 3-span trace and a span with ``traceId: "abcd"``."""
    bad = {"traceId": "abcd", "spanId": "ab" * 8, "name": "bad",
           "attributes": [{"key": "k", "value": {"stringValue": "secret text"}}]}  # fmt: skip
    decoded = decode_json_request(_request_of([*_valid(3), bad]))
    assert [s.name for s in decoded.spans] == ["s0", "s1", "s2"]
    assert decoded.spans[0].resource == {"service.name": "svc"}
    (invalid,) = decoded.invalid
    assert invalid.reason == "invalid_value"
    assert invalid.detail == (
        "resourceSpans[0].scopeSpans[0].spans[3].traceId: 4 hex characters, expected 32"
    )
    # the dead letter: the span alone with its resource and scope, as sent
    (letter,) = decoded.letters
    assert (letter.reason, letter.detail, letter.spans, letter.whole) == (
        "invalid_value", invalid.detail, {"invalid_value": 1}, False,
    )  # fmt: skip
    alone = json.loads(letter.payload)
    assert alone == {"resourceSpans": [{
        "resource": {"attributes": [{"key": "service.name", "value": {"stringValue": "svc"}}]},
        "scopeSpans": [{"scope": {"name": "x"}, "spans": [bad]}],
    }]}  # fmt: skip
    with pytest.raises(TraceDecodeError) as caught:  # all or none: the first bad span
        decode_json(_request_of([*_valid(3), bad]))
    assert (caught.value.reason, caught.value.detail) == (invalid.reason, invalid.detail)


def _request_of(spans: list) -> bytes:
    body = json.loads(_request({}))
    body["resourceSpans"][0]["scopeSpans"][0]["spans"] = spans
    return json.dumps(body).encode()


@pytest.mark.parametrize(
    ("field", "value", "reason", "said"),
    [
        ("traceId", "abcd", "invalid_value", "traceId: 4 hex characters, expected 32"),
        ("traceId", TRACE[:31], "invalid_value", "traceId: 31 hex characters, expected 32"),
        ("traceId", "zz" * 16, "invalid_value", "traceId: not hex (expected 32 hex characters)"),
        ("traceId", "0" * 32, "invalid_value", "traceId: all zero (an id has a non-zero digit)"),
        ("traceId", 7, "wrong_type", "traceId: expected hex string"),
        ("traceId", None, "invalid_value", "traceId: missing"),
        ("spanId", "abcd", "invalid_value", "spanId: 4 hex characters, expected 16"),
        ("spanId", "0" * 16, "invalid_value", "spanId: all zero (an id has a non-zero digit)"),
        ("parentSpanId", "abc", "invalid_value", "parentSpanId: 3 hex characters, expected 16"),
        ("parentSpanId", "0" * 8, "invalid_value", "parentSpanId: 8 hex characters, expected 16"),
        ("startTimeUnixNano", "-1", "invalid_value", "startTimeUnixNano: integer out of range"),
        ("endTimeUnixNano", "soon", "wrong_type", "endTimeUnixNano: expected integer or integer"),
        ("name", ["secret text"], "wrong_type", "name: expected string"),
        ("status", {"code": "secret text"}, "wrong_type", "status.code: expected integer"),
        ("events", [{"name": "e", "timeUnixNano": 1.5}], "wrong_type",
         "events[0].timeUnixNano: expected integer or integer string"),
        ("attributes", [{"key": "n", "value": {"intValue": "secret text"}}], "wrong_type",
         "attributes[0].value.intValue: expected integer or integer string"),
    ],
)  # fmt: skip
def test_json_span_errors_say_what_is_wrong_not_the_value(
    field: str, value: object, reason: str, said: str
) -> None:
    span = {**_valid(2)[1], field: value}
    if value is None:
        del span[field]
    decoded = decode_json_request(_request_of([*_valid(1), span]))
    assert [s.name for s in decoded.spans] == ["s0"]
    (invalid,) = decoded.invalid
    assert invalid.reason == reason
    assert invalid.detail.startswith(f"resourceSpans[0].scopeSpans[0].spans[1].{said}")
    assert "secret" not in invalid.detail and "abcd" not in invalid.detail
    assert "zz" not in invalid.detail and "not zero" not in invalid.detail


def test_json_zero_or_empty_parent_is_a_root() -> None:
    root = {**_valid(1)[0], "parentSpanId": "0" * 16}
    (decoded,) = decode_json_request(_request_of([root])).spans
    assert decoded.is_root


def test_json_span_not_an_object_and_an_unreadable_resource() -> None:
    """A span that is not an object is set apart alone; a resource that cannot be read sets
    apart every span under it (one letter for them), other resources' spans are kept."""
    body = {"resourceSpans": [
        {"resource": {"attributes": [{"key": "k", "value": {"intValue": "x"}}]},
         "scopeSpans": [{"spans": _valid(2)}]},
        {"scopeSpans": [{"spans": [_valid(1)[0], "secret text"]}]},
    ]}  # fmt: skip
    decoded = decode_json_request(json.dumps(body).encode())
    assert [s.name for s in decoded.spans] == ["s0"]
    assert [(i.reason, i.detail) for i in decoded.invalid] == [
        ("wrong_type", "resourceSpans[0].resource.attributes[0].value.intValue: expected "
                       "integer or integer string"),
        ("wrong_type", "resourceSpans[0].resource.attributes[0].value.intValue: expected "
                       "integer or integer string"),
        ("wrong_type", "resourceSpans[1].scopeSpans[0].spans[1]: expected object"),
    ]  # fmt: skip
    said = "resourceSpans[0].resource.attributes[0].value.intValue: expected integer or " \
        "integer string"  # fmt: skip
    assert [(x.reason, x.spans, x.detail) for x in decoded.letters] == [
        ("wrong_type", {"wrong_type": 2}, f"2 unreadable spans: {said}; {said}"),
        ("wrong_type", {"wrong_type": 1}, "resourceSpans[1].scopeSpans[0].spans[1]: expected "
                                          "object"),
    ]  # fmt: skip
    first, second = (json.loads(x.payload)["resourceSpans"] for x in decoded.letters)
    assert first == [{**body["resourceSpans"][0], "scopeSpans": [{"spans": _valid(2)}]}]
    assert second == [{"scopeSpans": [{"spans": ["secret text"]}]}]


@pytest.mark.parametrize(
    ("payload", "reason", "where"),
    [
        (b"\xff\xfe", "not_utf8", "UTF-8"),
        (b"{", "not_json", "JSON"),
        (b"[]", "wrong_type", "$"),
        (b'{"resourceSpans": {}}', "wrong_type", "$.resourceSpans"),
        (b'{"resourceSpans": [3]}', "wrong_type", "resourceSpans[0]"),
        (b'{"resourceSpans": [{"scopeSpans": {}}]}', "wrong_type", "resourceSpans[0].scopeSpans"),
        (b'{"resourceSpans": [{"scopeSpans": [{"spans": {}}]}]}', "wrong_type",
         "resourceSpans[0].scopeSpans[0].spans"),
    ],
)  # fmt: skip
def test_json_envelope_errors_still_refuse_the_whole_payload(
    payload: bytes, reason: str, where: str
) -> None:
    with pytest.raises(TraceDecodeError) as caught:
        decode_json_request(payload)
    assert caught.value.reason == reason and where in caught.value.detail


def test_protobuf_request_keeps_the_valid_spans_and_sets_bad_ids_apart() -> None:
    request = encode_spans(_sdk_spans())
    spans = request.resource_spans[0].scope_spans[0].spans
    good = len(spans)
    template = ProtoSpan()
    template.CopyFrom(spans[0])
    for trace_id, span_id, parent in [
        (b"\xab\xcd", b"\x01" * 8, b""),  # trace id too short
        (bytes(16), b"\x02" * 8, b""),  # trace id all zero
        (b"\x05" * 16, b"\x03" * 7, b""),  # span id too short
        (b"\x05" * 16, bytes(8), b""),  # span id all zero
        (b"\x05" * 16, b"\x04" * 8, bytes(4)),  # parent neither empty, zero nor 8 bytes
        (b"\x05" * 16, b"\x06" * 8, bytes(8)),  # a zero parent: a root, kept
    ]:
        span = spans.add()
        span.CopyFrom(template)
        span.trace_id, span.span_id, span.parent_span_id = trace_id, span_id, parent
    decoded = decode_protobuf_request(request.SerializeToString())
    assert len(decoded.spans) == good + 1 and decoded.spans[-1].is_root
    where = "resourceSpans[0].scopeSpans[0].spans"
    assert [(i.reason, i.detail) for i in decoded.invalid] == [
        ("invalid_value", f"{where}[{good}].traceId: 2 bytes, expected 16"),
        ("invalid_value", f"{where}[{good + 1}].traceId: all zero (an id has a non-zero byte)"),
        ("invalid_value", f"{where}[{good + 2}].spanId: 7 bytes, expected 8"),
        ("invalid_value", f"{where}[{good + 3}].spanId: all zero (an id has a non-zero byte)"),
        ("invalid_value", f"{where}[{good + 4}].parentSpanId: 4 bytes, expected 8"),
    ]
    # one dead letter: a request holding the five spans, their resource and scope once
    (letter,) = decoded.letters
    assert (letter.reason, letter.spans, letter.whole) == ("invalid_value", {"invalid_value": 5},
                                                           False)  # fmt: skip
    listed = "; ".join(i.detail for i in decoded.invalid[:3])
    assert letter.detail == f"5 unreadable spans (3 of 5 listed): {listed}"
    alone = ExportTraceServiceRequest.FromString(letter.payload)
    (resource_spans,) = alone.resource_spans
    assert resource_spans.resource == request.resource_spans[0].resource
    (scope_spans,) = resource_spans.scope_spans
    assert scope_spans.scope == request.resource_spans[0].scope_spans[0].scope
    assert [s.trace_id for s in scope_spans.spans] == [b"\xab\xcd", bytes(16), *[b"\x05" * 16] * 3]
    with pytest.raises(TraceDecodeError) as caught:  # all or none: the first bad span
        decode_protobuf(request.SerializeToString())
    assert caught.value.detail == decoded.invalid[0].detail


def test_more_resources_with_unreadable_spans_than_letters_max_are_one_letter() -> None:
    """65 resources of one zero-trace-id span each would be 65 letters (> LETTERS_MAX 64),
    each with a line's metadata: the request itself is the one letter."""
    request = ExportTraceServiceRequest()
    for r in range(65):
        span = request.resource_spans.add().scope_spans.add().spans.add()
        span.trace_id, span.span_id = bytes(16), (r + 1).to_bytes(8, "big")
    body = request.SerializeToString()
    decoded = decode_protobuf_request(body)
    assert decoded.spans == [] and len(decoded.invalid) == 65
    (letter,) = decoded.letters
    assert (letter.reason, letter.spans, letter.whole, letter.payload) == (
        "invalid_value", {"invalid_value": 65}, True, body,
    )  # fmt: skip
    zero = "traceId: all zero (an id has a non-zero byte)"
    assert letter.detail == (
        "the whole request: 65 of its 65 spans unreadable (invalid_value (65)); its 0 readable "
        "spans were kept (a replay of this letter counts them as spans sent again); a letter "
        "per resource and reason would take more than 64 letters; 65 unreadable spans (3 of 65 "
        f"listed): resourceSpans[0].scopeSpans[0].spans[0].{zero}; "
        f"resourceSpans[1].scopeSpans[0].spans[0].{zero}; "
        f"resourceSpans[2].scopeSpans[0].spans[0].{zero}"
    )
    request.resource_spans.pop()  # 64: one letter each, each no larger than its resource
    letters = decode_protobuf_request(request.SerializeToString()).letters
    assert len(letters) == 64 and not any(x.whole for x in letters)


def test_protobuf_empty_trace_ids_are_refused_before_and_after_a_valid_span() -> None:
    """Before: the comparison with the last trace id started from b"", so empty trace ids
    before the first valid span were kept as trace '' and a later one refused."""
    request = ExportTraceServiceRequest()
    spans = request.resource_spans.add().scope_spans.add().spans
    for trace_id, n in [(b"", 1), (b"", 2), (b"\x05" * 16, 3), (b"", 4)]:
        span = spans.add()
        span.trace_id, span.span_id = trace_id, n.to_bytes(8, "big")
    decoded = decode_protobuf_request(request.SerializeToString())
    assert [(s.trace_id, s.span_id) for s in decoded.spans] == [("05" * 16, f"{3:016x}")]
    where = "resourceSpans[0].scopeSpans[0].spans"
    assert [i.detail for i in decoded.invalid] == [
        f"{where}[{i}].traceId: 0 bytes, expected 16" for i in (0, 1, 3)
    ]


def test_a_span_whose_parent_is_remote_can_be_the_local_root() -> None:
    """A service called through a gateway that propagates W3C traceparent: its root's
    parent is the gateway's span, in another process. The SDK marks it in ``flags``
    (0x100 HAS_IS_REMOTE | 0x200 IS_REMOTE). With ``remote_parent_is_root`` the trace settles
    ``settle_s`` after it instead of waiting ``timeout_s``; by default (several services'
    spans may come: a downstream entry span has a remote parent too, a review) it waits."""
    from dataclasses import replace

    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    from service.traces.assembly import AssemblyLimits, TraceAssembler

    exporter = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "rag-app"}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("t")
    gateway = SpanContext(0x5 << 100, 0x77, is_remote=True, trace_flags=TraceFlags(1))
    with tracer.start_as_current_span("rag", trace.set_span_in_context(NonRecordingSpan(gateway))):
        with tracer.start_as_current_span("llm"):
            pass
    with tracer.start_as_current_span("alone"):
        pass
    request = encode_spans(exporter.get_finished_spans())
    (scope,) = request.resource_spans[0].scope_spans
    # the SDK's flags (opentelemetry-exporter-otlp-proto-common's _span_flags): the parent's
    # remoteness known (0x100) on every span, remote (0x200) for rag only
    assert [(s.name, s.flags) for s in scope.spans] == [
        ("llm", 0x100), ("rag", 0x300), ("alone", 0x100)
    ]  # fmt: skip
    spans = decode_protobuf(request.SerializeToString())
    assert [(s.name, s.parent_span_id, s.parent_is_remote, s.is_root) for s in spans] == [
        ("llm", spans[1].span_id, False, False),
        ("rag", f"{0x77:016x}", True, False),
        ("alone", None, False, True),
    ]  # fmt: skip
    assert decode_json(encode_json(spans)) == spans  # OTLP/JSON keeps the flags
    assert json.loads(encode_json(spans[1:2]))["resourceSpans"][0]["scopeSpans"][0]["spans"][
        0
    ]["flags"] == 0x300  # fmt: skip
    limits = AssemblyLimits(settle_s=1.0, timeout_s=300.0, remote_parent_is_root=True)
    assembler = TraceAssembler(limits)
    assembler.add(spans[:2], now=0.0)
    (done,) = assembler.due(1.0)
    assert (done.why, done.has_root, len(done.spans)) == ("settled", True, 2)
    # without the flags (a producer that does not set them): no root, open until timeout_s
    assembler = TraceAssembler(limits)
    assembler.add([replace(s, parent_is_remote=None) for s in spans[:2]], now=0.0)
    assert assembler.due(1.0) == [] and assembler.due(299.9) == []
    (done,) = assembler.due(300.0)
    assert (done.why, done.has_root) == ("timeout", False)
    # by default a remote parent makes no root: the trace waits for timeout_s
    assembler = TraceAssembler(AssemblyLimits(settle_s=1.0, timeout_s=300.0))
    assembler.add(spans[:2], now=0.0)
    assert assembler.due(299.9) == [] and [d.why for d in assembler.due(300.0)] == ["timeout"]


@pytest.mark.parametrize(
    ("flags", "remote"), [(None, None), (0, None), (0x200, None), (0x101, False), ("769", True)]
)
def test_json_flags_say_whether_the_parent_is_remote(flags: object, remote: bool | None) -> None:
    """IS_REMOTE counts only with HAS_IS_REMOTE; a fixed32 in JSON is a number (a string is
    read too, and a whole float, which protobuf's JSON parser takes); anything else costs the
    hint, never the span (a review: a float flags value dropped a valid span)."""
    span = {**_valid(2)[1], **({} if flags is None else {"flags": flags})}
    (decoded,) = decode_json_request(_request_of([span])).spans
    assert decoded.parent_is_remote is remote and decoded.is_root is False
    for odd, hint in (([1], None), ("x", None), (768.0, True), (-1, None), (2**33, None)):
        read = decode_json_request(_request_of([{**span, "flags": odd}]))
        assert read.invalid == [] and read.spans[0].parent_is_remote is hint, odd
