"""OTLP trace payloads (``ExportTraceServiceRequest``) to :class:`~service.traces.spans.Span`.

Two encodings, the ones ``POST /v1/traces`` and the Collector's ``kafka`` exporter use
(``otlp_proto`` and ``otlp_json``):

* protobuf: parsed by the ``opentelemetry-proto`` package's generated classes
  (``ExportTraceServiceRequest``; the Collector's ``TracesData`` has the same wire layout:
  field 1, repeated ``ResourceSpans``).
* OTLP/JSON (opentelemetry-proto ``docs/specification.md``, "JSON Protobuf Encoding"): the
  proto3 JSON mapping with OTLP's deviations: ``traceId``/``spanId``/``parentSpanId`` are hex
  strings (not base64), enums are integers, 64-bit integers (``intValue``,
  ``startTimeUnixNano``) are decimal strings or numbers, keys are lowerCamelCase (the proto
  field names, ``trace_id``, are accepted too), unknown fields are ignored. ``bytesValue``
  is base64. A ``\\ud800``-style escape of a lone UTF-16 surrogate (a producer that cut a
  string inside an emoji) is replaced by U+FFFD at decode, in keys and values, as the event
  decoder does (``consumers.decoding``, check 4): the trace keeps its question and is not
  dead-lettered for it, and no lone surrogate reaches the state, the reports or the metrics.

Errors carry a bounded ``reason`` (:data:`REASONS`) and a detail naming the field path and
what is wrong with it (expected type, length, not hex, all zero), never the content. A
payload whose envelope cannot be read (not protobuf, not UTF-8 or JSON, ``resourceSpans``,
``scopeSpans`` or ``spans`` of the wrong type) raises :class:`TraceDecodeError`;
:func:`decode_protobuf_request` and :func:`decode_json_request` keep the readable spans of a
readable envelope and set the others apart as :class:`InvalidSpan` (OTLP's partial success:
``POST /v1/traces`` keeps the valid spans of a request), with their dead letters
(:class:`UnreadableLetter`, bounded by the payload's size: :func:`unreadable_letters`).
:func:`decode_protobuf` and :func:`decode_json` raise on the first unreadable span instead.
``bad_encoding`` is a body whose ``Content-Encoding`` cannot be undone (not gzip, cut short,
another coding: ``service.api.trace_routes.undo_encoding``).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from google.protobuf.message import DecodeError as ProtobufDecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from service.errors import GoldwatchError
from service.traces.spans import Attributes, Span, SpanEvent

#: Every reason :class:`TraceDecodeError` carries (a bounded metric label).
REASONS: tuple[str, ...] = (
    "not_protobuf", "not_utf8", "not_json", "wrong_type", "invalid_value", "bad_encoding",
)  # fmt: skip
#: Largest value an OTLP 64-bit unsigned field (timestamps) may hold.
_U64_MAX = 2**64 - 1
_I64 = (-(2**63), 2**63 - 1)
_SURROGATE = re.compile("[\ud800-\udfff]")
#: may start a lone surrogate's escape (or a pair's): JSON text worth :func:`without_surrogates`
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class TraceDecodeError(GoldwatchError):
    """A trace payload that cannot be decoded.

    Attributes:
        reason: one of :data:`REASONS`.
        detail: field path and expected type or size; never payload content.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


@dataclass(frozen=True, slots=True)
class InvalidSpan:
    """A span that cannot be read, in a payload whose envelope (and other spans) can.

    Attributes:
        reason: ``invalid_value`` or ``wrong_type`` (:data:`REASONS`).
        detail: the span's position and the field that is wrong, and how
            (``resourceSpans[0].scopeSpans[0].spans[3].traceId: 4 hex characters, expected
            32``); never content.
        position: ``(resource, scope, span)`` indexes of the span in the payload.
    """

    reason: str
    detail: str
    position: tuple[int, int, int] = (0, 0, 0)


@dataclass(frozen=True, slots=True)
class UnreadableLetter:
    """One dead letter of a payload's unreadable spans (:func:`unreadable_letters`).

    Attributes:
        reason: the bounded reason (:data:`REASONS`) of its spans (of the first unreadable
            span when it is the whole payload and their reasons differ).
        detail: how many spans, the positions and problems of the first
            :data:`LETTER_LISTED` of them, and for the whole payload why; never content.
        payload: the replayable request in the payload's encoding (protobuf or OTLP/JSON):
            one resource with its scopes and the unreadable spans of that reason under it,
            or the whole payload.
        spans: the unreadable spans it stands for, by reason (sums to at least 1).
        whole: ``payload`` is the whole request (its readable spans were kept too: a
            replay of it counts them as spans sent again).
    """

    reason: str
    detail: str
    payload: bytes
    spans: dict[str, int]
    whole: bool = False


@dataclass(frozen=True, slots=True)
class Decoded:
    """The spans of one payload: those read and those that cannot be.

    Attributes:
        spans: the spans read, in payload order.
        invalid: the spans that cannot be read, in payload order (one each, for counts and
            positions).
        letters: the dead letters of ``invalid`` (:func:`unreadable_letters`); empty when
            ``invalid`` is.
    """

    spans: list[Span]
    invalid: list[InvalidSpan]
    letters: list[UnreadableLetter] = field(default_factory=list)


#: Unreadable spans whose position a letter's detail names (the rest are counted).
LETTER_LISTED = 3
#: Most letters the unreadable spans of one payload become before the payload itself is
#: the one letter (each letter also costs a line's detail and metadata, ~0.5 kB).
LETTERS_MAX = 64


def unreadable_letters(
    payload: bytes,
    invalid: Sequence[InvalidSpan],
    read: int,
    build: Callable[[int, list[InvalidSpan]], bytes],
) -> list[UnreadableLetter]:
    """The dead letters of a payload's unreadable spans, bounded by the payload's own size.

    One letter per resource (``resourceSpans`` entry) and reason, holding that resource
    once, each scope with such spans once and all its unreadable spans of that reason
    (``build(resource index, its spans)`` makes the request bytes). Guarantee: the letters'
    payloads total at most ``len(payload)`` bytes and there are at most :data:`LETTERS_MAX`
    of them; otherwise (a resource repeated per reason or under many scopes, JSON written
    back larger than it came, many resources) the payload itself is the one letter
    (``whole``), its detail saying how many spans were unreadable and that the ``read``
    readable ones were kept. Letters are built one at a time and building stops at the
    bound, so memory stays within about twice the payload. Each detail is bounded: counts
    and the first :data:`LETTER_LISTED` positions.

    Returns:
        the letters, in payload order of their first span (empty without ``invalid``).
    """
    if not invalid:
        return []
    groups: dict[tuple[int, str], list[InvalidSpan]] = {}
    for item in invalid:
        groups.setdefault((item.position[0], item.reason), []).append(item)
    letters: list[UnreadableLetter] = []
    total = 0
    if len(groups) <= LETTERS_MAX:
        for (r, reason), items in groups.items():
            body = build(r, items)
            total += len(body)
            if total > len(payload):
                break
            letters.append(UnreadableLetter(reason, _listed(items), body, {reason: len(items)}))
        else:
            return letters
    del letters  # over the bound: the payload itself
    by_reason: dict[str, int] = {}
    for item in invalid:
        by_reason[item.reason] = by_reason.get(item.reason, 0) + 1
    counts = ", ".join(f"{reason} ({n})" for reason, n in sorted(by_reason.items()))
    why = (f"more than {LETTERS_MAX} letters" if len(groups) > LETTERS_MAX
           else f"more than the request's {len(payload)} bytes")  # fmt: skip
    detail = (
        f"the whole request: {len(invalid)} of its {len(invalid) + read} spans unreadable "
        f"({counts}); its {read} readable spans were kept (a replay of this letter counts "
        f"them as spans sent again); a letter per resource and reason would take {why}; "
        + _listed(list(invalid))
    )
    return [UnreadableLetter(invalid[0].reason, detail, payload, by_reason, whole=True)]


def _listed(items: Sequence[InvalidSpan]) -> str:
    """The detail of a letter of ``items``: the span's own detail for one, else the count
    and the first :data:`LETTER_LISTED` details."""
    if len(items) == 1:
        return items[0].detail
    more = f" ({LETTER_LISTED} of {len(items)} listed)" if len(items) > LETTER_LISTED else ""
    return (f"{len(items)} unreadable spans{more}: "
            + "; ".join(item.detail for item in items[:LETTER_LISTED]))  # fmt: skip


def _strict(decoded: Decoded) -> list[Span]:
    """The spans of ``decoded``; raises the first unreadable span's error."""
    if decoded.invalid:
        first = decoded.invalid[0]
        raise TraceDecodeError(first.reason, first.detail)
    return decoded.spans


# --- protobuf -------------------------------------------------------------------------------


def decode_protobuf(payload: bytes) -> list[Span]:
    """Decode ``ExportTraceServiceRequest`` (or ``TracesData``) protobuf bytes into spans,
    all or none (:func:`decode_protobuf_request` keeps the readable ones).

    Returns:
        every span of every resource and scope, in payload order (possibly empty).

    Raises:
        TraceDecodeError: as :func:`decode_protobuf_request`, and ``invalid_value`` for the
            first span whose ids cannot be read.
    """
    return _strict(decode_protobuf_request(payload))


def decode_protobuf_request(payload: bytes) -> Decoded:
    """Decode ``ExportTraceServiceRequest`` (or ``TracesData``) protobuf bytes into spans,
    setting apart the spans whose ids cannot be read (``invalid_value``: a trace id that is
    not 16 bytes or is all zero, a span id not 8 bytes or all zero, a parent span id neither
    empty, all zero nor 8 bytes). The wire format types every other field.

    Reads the upb-backed message objects directly, one pass; a resource's attributes are
    decoded once per distinct resource (:data:`_RESOURCES`, keyed by its serialised bytes)
    and shared by its spans, as within one request.

    Returns:
        every span of every resource and scope, in payload order (possibly none), and the
        spans set apart.

    Raises:
        TraceDecodeError: ``not_protobuf`` (truncated or not protobuf).
    """
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(payload)
    except ProtobufDecodeError:
        raise TraceDecodeError(
            "not_protobuf", f"not an ExportTraceServiceRequest ({len(payload)} bytes)"
        ) from None
    spans: list[Span] = []
    invalid: list[InvalidSpan] = []
    append = spans.append
    # the last valid trace id (None before one: an empty id is checked like any other)
    last_trace: bytes | None = None
    last_hex = ""
    for r, resource_spans in enumerate(request.resource_spans):
        resource = _pb_resource(resource_spans.resource)
        for s, scope_spans in enumerate(resource_spans.scope_spans):
            for i, span in enumerate(scope_spans.spans):
                trace_id, span_id, parent = span.trace_id, span.span_id, span.parent_span_id
                if trace_id != last_trace:  # spans of one trace come together
                    if len(trace_id) != 16 or trace_id == _ZERO_16:
                        invalid.append(_pb_invalid(span, r, s, i))
                        continue
                    last_trace, last_hex = trace_id, trace_id.hex()
                if len(span_id) != 8 or span_id == _ZERO_8:
                    invalid.append(_pb_invalid(span, r, s, i))
                    continue
                if not parent or parent == _ZERO_8:
                    parent_hex = None
                elif len(parent) == 8:
                    parent_hex = parent.hex()
                else:
                    invalid.append(_pb_invalid(span, r, s, i))
                    continue
                events = span.events
                append(
                    _new_span(
                        last_hex,
                        span_id.hex(),
                        parent_hex,
                        span.name,
                        span.start_time_unix_nano,
                        span.end_time_unix_nano,
                        _pb_attributes(span.attributes),
                        tuple(
                            SpanEvent(e.name, e.time_unix_nano, _pb_attributes(e.attributes))
                            for e in events
                        )
                        if events
                        else (),
                        resource,
                        span.status.code,
                        _remote(span.flags),
                    )
                )
    if not invalid:
        return Decoded(spans, invalid)

    def build(r: int, items: list[InvalidSpan]) -> bytes:
        return _pb_letter(request.resource_spans[r], items)

    return Decoded(spans, invalid, unreadable_letters(payload, invalid, len(spans), build))


_ZERO_16, _ZERO_8 = bytes(16), bytes(8)
#: OTLP ``SpanFlags`` (opentelemetry-proto >= 1.1): the parent's remoteness is known, and
#: it is remote.
HAS_IS_REMOTE, IS_REMOTE = 0x100, 0x200


def _remote(flags: int) -> bool | None:
    """:attr:`Span.parent_is_remote` from a span's ``flags``: ``None`` without HAS_IS_REMOTE."""
    return bool(flags & IS_REMOTE) if flags & HAS_IS_REMOTE else None


def _flags(remote: bool | None) -> int:
    """The ``flags`` remoteness bits of :attr:`Span.parent_is_remote` (0: unknown)."""
    return 0 if remote is None else HAS_IS_REMOTE | (IS_REMOTE if remote else 0)


#: Decoded resource attributes by the resource's serialised bytes (a process sees few
#: distinct resources: one per service instance); emptied when it reaches 1,024 entries.
_RESOURCES: dict[bytes, Attributes] = {}
_RESOURCES_MAX = 1024


def _pb_resource(resource: Any) -> Attributes:
    key = resource.SerializeToString()
    found = _RESOURCES.get(key)
    if found is None:
        if len(_RESOURCES) >= _RESOURCES_MAX:
            _RESOURCES.clear()
        found = _RESOURCES[key] = _pb_attributes(resource.attributes)
    return found


def _span_builder() -> Any:
    """``build(trace_id, ..., status_code) -> Span``: fills the slots of a bare instance
    through their descriptors, equal to ``Span(...)`` without the frozen dataclass's
    ``object.__setattr__`` per field (about half the cost); ``Span`` itself when its fields
    are not exactly these."""
    names = ("trace_id", "span_id", "parent_span_id", "name", "start_unix_nano",
             "end_unix_nano", "attributes", "events", "resource", "status_code",
             "parent_is_remote")  # fmt: skip
    if Span.__slots__ != names:
        return Span
    setters = [getattr(Span, name).__set__ for name in names]
    new = object.__new__
    (a, b, c, d, e, f, g, h, i, j, k) = setters

    def build(
        trace_id: str, span_id: str, parent: str | None, name: str, start: int, end: int,
        attributes: Attributes, events: tuple[SpanEvent, ...], resource: Attributes, code: int,
        remote: bool | None,
    ) -> Span:  # fmt: skip
        span = new(Span)
        a(span, trace_id), b(span, span_id), c(span, parent), d(span, name), e(span, start)
        f(span, end), g(span, attributes), h(span, events), i(span, resource), j(span, code)
        k(span, remote)
        return span

    return build


_new_span = _span_builder()


def _pb_invalid(span: Any, r: int, s: int, i: int) -> InvalidSpan:
    """The :class:`InvalidSpan` of a span whose ids :func:`decode_protobuf_request` refused
    (the same rules): the first bad id named."""
    where = f"resourceSpans[{r}].scopeSpans[{s}].spans[{i}]"
    parent = span.parent_span_id
    problem = (
        _pb_id_problem(span.trace_id, 16, f"{where}.traceId")
        or _pb_id_problem(span.span_id, 8, f"{where}.spanId")
        or (None if not parent or parent == _ZERO_8
            else _pb_id_problem(parent, 8, f"{where}.parentSpanId"))
        or f"{where}: invalid id"  # not reached: called for a refused span only
    )  # fmt: skip
    return InvalidSpan("invalid_value", problem, (r, s, i))


def _pb_letter(resource_spans: Any, items: Sequence[InvalidSpan]) -> bytes:
    """One resource of a protobuf request with only the spans ``items`` (its scopes that
    hold them, in order) as a request of its own: the resource copied once."""
    alone = ExportTraceServiceRequest()
    resource = alone.resource_spans.add()
    if resource_spans.HasField("resource"):  # an absent one stays absent: no larger
        resource.resource.CopyFrom(resource_spans.resource)
    resource.schema_url = resource_spans.schema_url
    scope: Any = None
    last = -1
    for item in items:
        _, s, i = item.position
        if s != last:
            scope_spans = resource_spans.scope_spans[s]
            scope = resource.scope_spans.add()
            if scope_spans.HasField("scope"):
                scope.scope.CopyFrom(scope_spans.scope)
            scope.schema_url = scope_spans.schema_url
            last = s
        scope.spans.add().CopyFrom(resource_spans.scope_spans[s].spans[i])
    encoded: bytes = alone.SerializeToString(deterministic=True)
    return encoded


def _pb_id_problem(raw: bytes, size: int, where: str) -> str | None:
    """What is wrong with a protobuf id of ``size`` bytes (its length or all zero), or
    ``None``; never its value."""
    if len(raw) != size:
        return f"{where}: {len(raw)} bytes, expected {size}"
    if not any(raw):
        return f"{where}: all zero (an id has a non-zero byte)"
    return None


#: ``AnyValue`` fields read as they are.
_SCALARS = frozenset({"bool_value", "int_value", "double_value", "bytes_value"})


def _pb_attributes(pairs: Any) -> Attributes:
    out: Attributes = {}
    for pair in pairs:
        value = pair.value
        kind = value.WhichOneof("value")
        if kind == "string_value":
            out[pair.key] = value.string_value
        elif kind in _SCALARS:
            out[pair.key] = getattr(value, kind)
        else:
            out[pair.key] = _pb_value(value)
    return out


def _pb_value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    if kind is None:
        return None
    if kind == "array_value":
        return [_pb_value(item) for item in value.array_value.values]
    if kind == "kvlist_value":
        return {pair.key: _pb_value(pair.value) for pair in value.kvlist_value.values}
    if kind == "string_value_strindex":  # profiles only; not meaningful in traces
        return None
    return getattr(value, kind)


# --- OTLP/JSON ------------------------------------------------------------------------------


def decode_json(payload: bytes) -> list[Span]:
    """Decode OTLP/JSON ``ExportTraceServiceRequest`` bytes into spans, all or none
    (:func:`decode_json_request` keeps the readable ones).

    Returns:
        every span, in payload order (possibly empty).

    Raises:
        TraceDecodeError: as :func:`decode_json_request`, and ``wrong_type`` or
            ``invalid_value`` for the first span that cannot be read.
    """
    return _strict(decode_json_request(payload))


def decode_json_request(payload: bytes) -> Decoded:
    """Decode OTLP/JSON ``ExportTraceServiceRequest`` bytes into spans, setting apart the
    spans that cannot be read: ``wrong_type`` (e.g. ``intValue`` not an integer string, a
    span not an object), ``invalid_value`` (ids not hex of the right length or all zero, an
    integer out of range). A resource that cannot be read sets apart every span under it.

    Returns:
        every span read, in payload order (possibly none), and the spans set apart.

    Raises:
        TraceDecodeError: the envelope cannot be read: ``not_utf8``, ``not_json``,
            ``wrong_type`` (the document not an object; ``resourceSpans``, ``scopeSpans`` or
            ``spans`` not an array, or an item of the first two not an object).
    """
    try:
        text = payload.decode("utf-8")
    except UnicodeDecodeError:
        raise TraceDecodeError("not_utf8", "payload is not UTF-8") from None
    try:
        top = json.loads(text)
        if SURROGATE_ESCAPE.search(text) is not None:
            top = without_surrogates(top)
    except (ValueError, RecursionError):
        raise TraceDecodeError("not_json", f"not one JSON text ({len(payload)} bytes)") from None
    _expect(top, dict, "object", "$")
    spans: list[Span] = []
    invalid: list[InvalidSpan] = []
    for r, resource_spans in enumerate(_list(top, "resourceSpans", "resource_spans", "$")):
        where_r = f"resourceSpans[{r}]"
        _expect(resource_spans, dict, "object", where_r)
        scopes = []  # the envelope first: an error in it is the whole payload's
        for s, scope_spans in enumerate(
            _list(resource_spans, "scopeSpans", "scope_spans", where_r)
        ):
            where_s = f"{where_r}.scopeSpans[{s}]"
            _expect(scope_spans, dict, "object", where_s)
            scopes.append((where_s, scope_spans, _list(scope_spans, "spans", "spans", where_s)))
        resource: Attributes = {}
        unreadable: TraceDecodeError | None = None
        try:
            resource_obj = _field(resource_spans, "resource", "resource") or {}
            _expect(resource_obj, dict, "object", f"{where_r}.resource")
            resource = _json_attributes(resource_obj, f"{where_r}.resource")
        except TraceDecodeError as exc:  # the spans under it are set apart
            unreadable = exc
        for s, (where_s, _, items) in enumerate(scopes):
            for i, span in enumerate(items):
                try:
                    if unreadable is not None:
                        raise unreadable
                    spans.append(_json_span(span, resource, f"{where_s}.spans[{i}]"))
                except TraceDecodeError as exc:
                    invalid.append(InvalidSpan(exc.reason, exc.detail, (r, s, i)))
    if not invalid:
        return Decoded(spans, invalid)
    resources = _field(top, "resourceSpans", "resource_spans")

    def build(r: int, items: list[InvalidSpan]) -> bytes:
        return _json_letter(resources[r], items)

    return Decoded(spans, invalid, unreadable_letters(payload, invalid, len(spans), build))


def without_surrogates(node: Any) -> Any:
    """``node`` (parsed JSON: str, dict, list, other scalars) with every lone surrogate in
    its strings and keys replaced by U+FFFD; a string without one is returned as it is.

    Raises:
        RecursionError: nesting deeper than the interpreter's limit.
    """
    if type(node) is str:
        return _SURROGATE.sub("\ufffd", node) if _SURROGATE.search(node) else node
    if type(node) is dict:
        return {without_surrogates(k): without_surrogates(v) for k, v in node.items()}
    if type(node) is list:
        return [without_surrogates(item) for item in node]
    return node


def _json_letter(resource_spans: dict[str, Any], items: Sequence[InvalidSpan]) -> bytes:
    """One resource of an OTLP/JSON request with only the spans ``items`` (its scopes that
    hold them, in order) as a request of its own, the resource's and scopes' other fields
    kept: compact ASCII JSON, the same bytes for the same spans."""
    scopes_in = _field(resource_spans, "scopeSpans", "scope_spans")
    scopes: list[dict[str, Any]] = []
    last = -1
    for item in items:
        _, s, i = item.position
        scope_spans = scopes_in[s]
        if s != last:
            scope = {k: v for k, v in scope_spans.items() if k != "spans"}
            scope["spans"] = []
            scopes.append(scope)
            last = s
        scope["spans"].append(scope_spans["spans"][i])
    resource = {k: v for k, v in resource_spans.items() if k not in ("scopeSpans", "scope_spans")}
    resource["scopeSpans"] = scopes
    return json.dumps({"resourceSpans": [resource]}, separators=(",", ":")).encode("ascii")


def _json_span(span: Any, resource: Attributes, where: str) -> Span:
    _expect(span, dict, "object", where)
    events = []
    for e, event in enumerate(_list(span, "events", "events", where)):
        at = f"{where}.events[{e}]"
        _expect(event, dict, "object", at)
        events.append(
            SpanEvent(
                name=_string(event, "name", "name", at),
                time_unix_nano=_uint64(event, "timeUnixNano", "time_unix_nano", at),
                attributes=_json_attributes(event, at),
            )
        )
    status = _field(span, "status", "status") or {}
    _expect(status, dict, "object", f"{where}.status")
    code = _field(status, "code", "code")
    if code is None:
        code = 0
    elif type(code) is not int:
        raise TraceDecodeError("wrong_type", f"{where}.status.code: expected integer")
    parent = _hex_id(span, "parentSpanId", "parent_span_id", 8, where, required=False)
    flags = _json_flags(_field(span, "flags", "flags"))
    return Span(
        trace_id=_hex_id(span, "traceId", "trace_id", 16, where) or "",
        span_id=_hex_id(span, "spanId", "span_id", 8, where) or "",
        parent_span_id=parent,
        name=_string(span, "name", "name", where),
        start_unix_nano=_uint64(span, "startTimeUnixNano", "start_time_unix_nano", where),
        end_unix_nano=_uint64(span, "endTimeUnixNano", "end_time_unix_nano", where),
        attributes=_json_attributes(span, where),
        events=tuple(events),
        resource=resource,
        status_code=code,
        parent_is_remote=_remote(flags),
    )


def _field(obj: dict[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def _expect(value: Any, kind: type, name: str, where: str) -> None:
    if type(value) is not kind:
        raise TraceDecodeError("wrong_type", f"{where}: expected {name}")


def _list(obj: dict[str, Any], camel: str, snake: str, where: str) -> list[Any]:
    value = _field(obj, camel, snake)
    if value is None:
        return []
    _expect(value, list, "array", f"{where}.{camel}")
    return value  # type: ignore[no-any-return]


def _string(obj: dict[str, Any], camel: str, snake: str, where: str) -> str:
    value = _field(obj, camel, snake)
    if value is None:
        return ""
    _expect(value, str, "string", f"{where}.{camel}")
    return value  # type: ignore[no-any-return]


def _json_flags(value: Any) -> int:
    """A span's OTLP/JSON ``flags`` (a fixed32: a number, or a decimal string), 0 when absent
    or unreadable: they only hint at the parent's remoteness, so a producer's odd spelling
    (``256.0``, which protobuf's own JSON parser takes) costs the hint, never the span (a
    review)."""
    if type(value) is float and value.is_integer():
        value = int(value)
    try:
        return _integer(value, 0, 2**32 - 1, "flags") if value is not None else 0
    except TraceDecodeError:
        return 0


def _integer(value: Any, low: int, high: int, where: str) -> int:
    """An OTLP/JSON 64-bit integer: a decimal string or a JSON integer, within [low, high]."""
    if type(value) is str:
        text = value.strip()
        if not text or not text.lstrip("-").isdigit() or not text.isascii() or len(text) > 21:
            raise TraceDecodeError("wrong_type", f"{where}: expected integer or integer string")
        number = int(text)
    elif type(value) is int:
        number = value
    else:
        raise TraceDecodeError("wrong_type", f"{where}: expected integer or integer string")
    if not low <= number <= high:
        raise TraceDecodeError("invalid_value", f"{where}: integer out of range")
    return number


def _uint64(obj: dict[str, Any], camel: str, snake: str, where: str) -> int:
    value = _field(obj, camel, snake)
    return 0 if value is None else _integer(value, 0, _U64_MAX, f"{where}.{camel}")


def _hex_id(
    obj: dict[str, Any], camel: str, snake: str, size: int, where: str, required: bool = True
) -> str | None:
    value = _field(obj, camel, snake)
    if value is None or value == "":
        if required:
            raise TraceDecodeError("invalid_value", f"{where}.{camel}: missing")
        return None
    _expect(value, str, "hex string", f"{where}.{camel}")
    try:
        raw = bytes.fromhex(value)
    except ValueError:
        raw = b""
    if len(raw) != size:
        raise TraceDecodeError("invalid_value", f"{where}.{camel}: {_hex_problem(value, size)}")
    if not any(raw):
        if required:
            raise TraceDecodeError(
                "invalid_value", f"{where}.{camel}: all zero (an id has a non-zero digit)"
            )
        return None
    return raw.hex()


_HEX_DIGITS = frozenset("0123456789abcdefABCDEF")


def _hex_problem(value: str, size: int) -> str:
    """Why ``value`` is not an id of ``size`` bytes in hex: not hex, or how many hex
    characters it has; never the value itself."""
    digits = sum(c in _HEX_DIGITS for c in value)
    if digits + sum(c.isspace() for c in value) != len(value):  # fromhex skips whitespace
        return f"not hex (expected {2 * size} hex characters)"
    return f"{digits} hex characters, expected {2 * size}"


def _json_attributes(obj: dict[str, Any], where: str) -> Attributes:
    out: Attributes = {}
    for k, pair in enumerate(_list(obj, "attributes", "attributes", where)):
        at = f"{where}.attributes[{k}]"
        _expect(pair, dict, "object", at)
        key = pair.get("key")
        _expect(key, str, "string", f"{at}.key")
        out[key] = _json_value(pair.get("value"), f"{at}.value")
    return out


def _json_value(value: Any, where: str) -> Any:
    """One ``AnyValue`` object (``{"stringValue": ...}`` etc.) to its Python value."""
    if value is None:
        return None
    _expect(value, dict, "AnyValue object", where)
    if not value:
        return None
    if len(value) != 1:
        raise TraceDecodeError("wrong_type", f"{where}: expected exactly one value field")
    ((kind, inner),) = value.items()
    if kind in ("stringValue", "string_value"):
        _expect(inner, str, "string", f"{where}.{kind}")
        return inner
    if kind in ("boolValue", "bool_value"):
        _expect(inner, bool, "boolean", f"{where}.{kind}")
        return inner
    if kind in ("intValue", "int_value"):
        return _integer(inner, *_I64, f"{where}.{kind}")
    if kind in ("doubleValue", "double_value"):
        return _double(inner, f"{where}.{kind}")
    if kind in ("bytesValue", "bytes_value"):
        _expect(inner, str, "base64 string", f"{where}.{kind}")
        try:
            return base64.b64decode(inner, validate=True)
        except binascii.Error:
            raise TraceDecodeError("invalid_value", f"{where}.{kind}: expected base64") from None
    if kind in ("arrayValue", "array_value"):
        _expect(inner, dict, "object", f"{where}.{kind}")
        items = _list(inner, "values", "values", f"{where}.{kind}")
        return [_json_value(item, f"{where}.{kind}.values[{i}]") for i, item in enumerate(items)]
    if kind in ("kvlistValue", "kvlist_value"):
        _expect(inner, dict, "object", f"{where}.{kind}")
        return _json_attributes({"attributes": inner.get("values")}, f"{where}.{kind}")
    raise TraceDecodeError("wrong_type", f"{where}: unknown AnyValue field")


def _double(value: Any, where: str) -> float:
    if type(value) is float or type(value) is int:
        return float(value)
    if type(value) is str and value in ("NaN", "Infinity", "-Infinity"):  # proto3 JSON
        return float(value.replace("Infinity", "inf"))
    raise TraceDecodeError("wrong_type", f"{where}: expected number")


# --- encoding (dead letters) ----------------------------------------------------------------


def encode_json(spans: Sequence[Span]) -> bytes:
    """Encode spans as one OTLP/JSON ``ExportTraceServiceRequest`` (one ``resourceSpans``
    per distinct resource), so a dead-lettered trace can be replayed to ``/v1/traces``.

    Round trip: ``decode_json(encode_json(spans)) == list(spans)`` for spans whose float
    attributes are finite.
    """
    groups: dict[str, list[Span]] = {}
    resources: dict[str, Attributes] = {}
    for span in spans:
        key = json.dumps(_json_attrs_out(span.resource), sort_keys=True)
        groups.setdefault(key, []).append(span)
        resources[key] = span.resource
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": _json_attrs_out(resources[key])},
                "scopeSpans": [{"spans": [_json_span_out(span) for span in group]}],
            }
            for key, group in groups.items()
        ]
    }
    return json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _json_span_out(span: Span) -> dict[str, Any]:
    out: dict[str, Any] = {
        "traceId": span.trace_id,
        "spanId": span.span_id,
        "name": span.name,
        "startTimeUnixNano": str(span.start_unix_nano),
        "endTimeUnixNano": str(span.end_unix_nano),
        "attributes": _json_attrs_out(span.attributes),
        "events": [
            {
                "timeUnixNano": str(event.time_unix_nano),
                "name": event.name,
                "attributes": _json_attrs_out(event.attributes),
            }
            for event in span.events
        ],
        "status": {"code": span.status_code},
    }
    if span.parent_span_id is not None:
        out["parentSpanId"] = span.parent_span_id
    if span.parent_is_remote is not None:
        out["flags"] = _flags(span.parent_is_remote)
    return out


def _json_attrs_out(attributes: Attributes) -> list[dict[str, Any]]:
    return [{"key": key, "value": _json_value_out(value)} for key, value in attributes.items()]


def _json_value_out(value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return {"doubleValue": value}
        return {"doubleValue": "NaN" if value != value else ("-" if value < 0 else "") + "Infinity"}
    if isinstance(value, bytes):
        return {"bytesValue": base64.b64encode(value).decode("ascii")}
    if isinstance(value, list):
        return {"arrayValue": {"values": [_json_value_out(item) for item in value]}}
    if isinstance(value, dict):
        return {"kvlistValue": {"values": _json_attrs_out(value)}}
    return {"stringValue": str(value)}
