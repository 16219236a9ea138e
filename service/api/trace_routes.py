"""``POST /v1/traces``: the OTLP/HTTP trace endpoint (opentelemetry-proto
``docs/specification.md``, "OTLP/HTTP").

* Request: ``ExportTraceServiceRequest`` as ``application/x-protobuf`` or ``application/json``
  (OTLP/JSON), optionally ``Content-Encoding: gzip``; the bearer token of ``/v1/events``;
  ``api.max_request_bytes`` bounds the body before and after decompression (413:
  :func:`undo_encoding`).
* 200: ``ExportTraceServiceResponse`` in the request's encoding, sent once the kept spans are
  in the state file (a crash after it loses none: ``service/api/trace_ingest.py``); spans
  dropped are counted in ``partial_success.rejected_spans``, and ``error_message`` gives the
  counts per reason, also of spans kept with an attribute cut, and the positions of the first
  unreadable spans (:func:`partial_success`; reason codes, counts and field paths only, never
  content). OTLP's partial success: a span that cannot be read (a bad id, timestamp or
  attribute: :class:`~service.traces.otlp.InvalidSpan`) in a request whose envelope can is
  dead-lettered (reason ``invalid_value`` or ``wrong_type``: one letter per resource and
  reason, or the whole request when those would be larger than it,
  :func:`~service.traces.otlp.unreadable_letters`) and the request's other spans are kept,
  in the same checkpoint; exporters do not retry a 400, so one bad span
  answered with 400 lost every good trace of its batch. A request with no span is valid
  (OTLP/HTTP: an empty ``ExportTraceServiceRequest``; OTLP/JSON receivers "MUST ignore
  message fields with unknown names"): 200, nothing kept or counted; an OTLP/JSON body with
  no ``resourceSpans`` but other top-level keys (``{"foo": 1}``: most likely not OTLP) gets
  OTLP's warning form, ``error_message`` saying how many keys were ignored (never which).
* 400: a payload whose envelope cannot be decoded (not protobuf, JSON or UTF-8, a JSON
  document not an object; ``resourceSpans``, ``scopeSpans`` or ``spans`` of the wrong type):
  dead-lettered whole with its reason; or a request with spans none of which can be read:
  each dead-lettered as above. Either
  is counted, as every dead letter of trace ingest, in ``/v1/status`` ``totals.dead_lettered``
  and ``goldwatch_events_dead_lettered_total``. A body whose ``Content-Encoding`` cannot be
  undone is such a payload, reason ``bad_encoding``, its letter the body as sent: 400 when
  it is not gzip or is cut short, 415 with ``Accept-Encoding: gzip`` for a coding other
  than gzip (RFC 9110 15.5.16; before session 47 (trial 47) a bad gzip body was a plain
  400 neither dead-lettered nor counted, a cut one decoded as far as it went). 415: another
  content type; 429
  with ``Retry-After``: the request's new traces would take the open traces over
  ``traces.assembly.max_open_traces`` (OTLP/HTTP throttling: the exporter waits and sends it
  again; a pipeline that is behind keeps traces open, so this is also its backpressure);
  503 with ``Retry-After``: the dead-letter or state file cannot be written, or the
  pipeline stayed busy. After a 429 or 503 nothing of the request was kept: its dead
  letters are written (and counted) in the checkpoint that stores its spans, and its spans
  are stored before they join their traces. Error bodies of 400, 429 and 503, of the 415 of
  an encoding and the 413 of a decompressed body are a ``google.rpc.Status`` in the
  request's encoding, as OTLP asks; their messages hold reason codes, sizes and field paths,
  never the body.
"""

from __future__ import annotations

import json
import zlib
from collections.abc import Sequence
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import Response
from google.protobuf.json_format import MessageToJson
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import TokenDep, TokenFirstRoute
from service.api.trace_ingest import Backpressure, TooManyTraces, TraceIngest, dead_letter
from service.runtime.process import EngineBusy, IngestUnavailable
from service.state import StateError
from service.traces.assembly import Rejected
from service.traces.otlp import (
    InvalidSpan,
    TraceDecodeError,
    decode_json_request,
    decode_protobuf_request,
)

router = APIRouter(route_class=TokenFirstRoute)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: Span rejections that drop the span (``attribute_too_large`` keeps it, cut; a request
#: that would evict a trace is refused with 429).
_DROPPED = frozenset({"too_many_spans", "late_span"})
#: Unreadable spans whose position ``error_message`` names (the rest are counted).
_LISTED = 3
_INVALID_ARGUMENT, _RESOURCE_EXHAUSTED, _UNAVAILABLE = 3, 8, 14  # google.rpc.Code
#: ``Content-Encoding`` values undone before decoding (RFC 9110 8.4.1.3: ``x-gzip`` is gzip).
_GZIP = frozenset({"gzip", "x-gzip"})
#: The most gzip members (RFC 1952 2.2) one body may have: an exporter sends one; each
#: member costs a new inflater, so a body of 209,710 empty members (4 MB) was minutes of CPU
#: (review of trial 47's fix). More: 400 ``bad_encoding``.
MAX_GZIP_MEMBERS = 64
#: Bytes handed to the inflater at a time (its ``unused_data`` copy is at most this).
_GZIP_CHUNK = 64 * 1024
#: Content codings of the IANA registry (and the Collector's ``snappy``, ``lz4``, ``zstd``)
#: a ``bad_encoding`` letter names; any other value is client input, never echoed.
_REGISTERED_CODINGS = frozenset(
    {"br", "compress", "x-compress", "deflate", "zstd", "dcb", "dcz", "exi", "pack200-gzip",
     "aes128gcm", "snappy", "lz4", "zlib"}
)  # fmt: skip

#: The 200 body in both encodings: OTLP/JSON's ``ExportTraceServiceResponse`` (proto3 JSON
#: mapping: camelCase names, int64 as a decimal string, empty fields left out) or its
#: protobuf bytes.
EXPORT_RESPONSE_CONTENT: dict[str, Any] = {
    JSON: {"schema": {
        "title": "ExportTraceServiceResponse",
        "type": "object",
        "properties": {"partialSuccess": {
            "type": "object",
            "description": "spans dropped (rejectedSpans) and counts per reason, with the "
                           "positions of the first unreadable spans (errorMessage: reason "
                           "codes, counts and field paths only, never content)",
            "properties": {
                "rejectedSpans": {"type": "string", "pattern": "^[0-9]+$"},
                "errorMessage": {"type": "string"},
            },
        }},
    }},
    PROTOBUF: {"schema": {"type": "string", "format": "binary"}},
}  # fmt: skip


def get_traces(request: Request) -> TraceIngest:
    """The trace ingest stored on the app by the lifespan."""
    return request.app.state.traces  # type: ignore[no-any-return]


def _encode(message: Any, media: str, code: int = 200) -> Response:
    if media == PROTOBUF:
        return Response(message.SerializeToString(), status_code=code, media_type=PROTOBUF)
    return Response(MessageToJson(message, indent=None), status_code=code, media_type=JSON)


class InflatedTooLarge(Exception):
    """A gzip body that decompresses to more than ``api.max_request_bytes`` (413)."""


class UnsupportedEncoding(TraceDecodeError):
    """A ``Content-Encoding`` other than ``identity`` and ``gzip`` (415; reason
    ``bad_encoding``)."""


def undo_encoding(body: bytes, coding: str, limit: int) -> bytes:
    """The payload of a body sent with ``Content-Encoding: coding`` (OTLP/HTTP: a client
    "MAY gzip the content"; RFC 9110 8.4.1.3: ``x-gzip`` is ``gzip``).

    Args:
        body: the request's bytes, at most ``limit`` (the body limit of ``service.api.app``).
        coding: the header's value, stripped and lower-cased; ``""`` or ``identity``: none.
        limit: the most bytes the decompressed payload may have (``api.max_request_bytes``).

    Returns:
        The decompressed bytes (every gzip member of the body, RFC 1952 2.2, in order).

    Raises:
        UnsupportedEncoding: another coding (``br``, ``zstd``, ``deflate``, ...).
        TraceDecodeError: reason ``bad_encoding``: the body is not gzip, ends before its
            end of stream (cut short), has bytes after it that are not gzip, or has more
            than :data:`MAX_GZIP_MEMBERS` members. The detail
            holds sizes and the coding's name when it is a registered one, never the body.
        InflatedTooLarge: the payload would be over ``limit`` bytes (a "gzip bomb": at
            most ``limit + 1`` bytes are ever inflated).
    """
    if coding in ("", "identity"):
        return body
    if coding not in _GZIP:
        name = f"'{coding}'" if coding in _REGISTERED_CODINGS else "unregistered"
        raise UnsupportedEncoding(
            "bad_encoding", f"Content-Encoding {name} is not supported: send gzip or none"
        )
    payload = bytearray()
    view = memoryview(body)  # members are read at an offset: no copy of the rest per member
    offset, member = 0, 0
    while True:
        if member == MAX_GZIP_MEMBERS:
            raise TraceDecodeError(
                "bad_encoding",
                f"too many gzip members: more than {MAX_GZIP_MEMBERS} in {len(body)} bytes sent",
            )
        inflater = zlib.decompressobj(wbits=31)  # gzip header and trailer, CRC-32 checked
        start = offset
        while not inflater.eof:
            if offset >= len(body):
                raise TraceDecodeError(
                    "bad_encoding",
                    f"gzip body cut short: no end of stream in {len(body)} bytes sent "
                    f"({len(payload)} decompressed)",
                )
            chunk = view[offset : offset + _GZIP_CHUNK]  # unused_data stays under a chunk
            try:
                payload += inflater.decompress(chunk, limit + 1 - len(payload))
            except zlib.error:
                where = "body" if member == 0 else (
                    f"{len(body) - start} bytes after gzip member {member}")  # fmt: skip
                raise TraceDecodeError(
                    "bad_encoding", f"{where} not valid gzip ({len(body)} bytes sent)"
                ) from None
            if len(payload) > limit or inflater.unconsumed_tail:
                raise InflatedTooLarge(f"decompressed body over {limit} bytes")
            offset += len(chunk)
        offset -= len(inflater.unused_data)  # the next member's first bytes, read again
        member += 1
        if offset >= len(body):
            return bytes(payload)


@router.post(
    "/v1/traces",
    responses={
        200: {
            "description": "ExportTraceServiceResponse (partial_success when spans dropped)",
            "content": EXPORT_RESPONSE_CONTENT,
        },
        400: {
            "description": "undecodable payload (bad_encoding: not gzip or cut short), or no "
            "span of it readable (dead-lettered); google.rpc.Status"
        },
        401: {"description": "no bearer token"},
        403: {"description": "wrong token, or ingest disabled"},
        413: {
            "description": "body (or decompressed body) too large, or more traces than "
            "traces.assembly.max_open_traces"
        },
        415: {
            "description": "not application/x-protobuf or application/json; or a "
            "Content-Encoding other than gzip (dead-lettered, bad_encoding; google.rpc.Status, "
            "Accept-Encoding: gzip)"
        },
        429: {
            "description": "the open traces are full (nothing kept): retry after "
            "Retry-After; google.rpc.Status"
        },
        503: {
            "description": "dead letters or state cannot be written (nothing kept): retry "
            "after Retry-After; google.rpc.Status"
        },
    },
    tags=["ingest"],
)
async def post_traces(request: Request, _: TokenDep) -> Response:
    """Accept OTLP spans; they are assembled per trace and each finished trace becomes one
    event through the live pipeline (see ``service/api/trace_ingest.py``)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, f"use {PROTOBUF} or {JSON}")
    coding = request.headers.get("content-encoding", "").strip().lower()
    traces = get_traces(request)
    body = await request.body()
    payload = body
    decode = decode_protobuf_request if media == PROTOBUF else decode_json_request
    try:  # CPU-bound (inflating, parsing up to the body limit): off the event loop
        if coding not in ("", "identity"):
            limit = traces.runtime.settings.api.max_request_bytes
            payload = await run_in_threadpool(undo_encoding, body, coding, limit)
        decoded = await run_in_threadpool(decode, payload)
    except InflatedTooLarge as exc:
        return _encode(Status(code=_RESOURCE_EXHAUSTED, message=str(exc)), media, 413)
    except TraceDecodeError as exc:  # bad_encoding: the body as sent; else the payload
        traces.metrics.payloads_rejected.labels(reason=exc.reason).inc()
        letter = dead_letter(payload, exc.reason, exc.detail)
        try:  # written, then counted in the totals (dead_lettered by reason)
            await run_in_threadpool(traces.runtime.ingest, [], None, [letter])
        except IngestUnavailable as unavailable:
            return _unavailable(_not_durable(unavailable), media)
        except EngineBusy:
            return _unavailable(_busy(traces), media)
        if isinstance(exc, UnsupportedEncoding):  # RFC 9110 15.5.16: say what is accepted
            response = _encode(Status(code=_INVALID_ARGUMENT, message=str(exc)), media, 415)
            response.headers["Accept-Encoding"] = "gzip"
            return response
        return _encode(Status(code=_INVALID_ARGUMENT, message=str(exc)), media, 400)
    try:
        rejected = await run_in_threadpool(
            traces.receive, decoded.spans, decoded.invalid, decoded.letters
        )
    except Backpressure as exc:  # OTLP/HTTP throttling: retryable, after Retry-After
        response = _encode(Status(code=_RESOURCE_EXHAUSTED, message=str(exc)), media, 429)
        response.headers["Retry-After"] = str(exc.retry_after_s)
        return response
    except TooManyTraces as exc:
        raise HTTPException(status.HTTP_413_CONTENT_TOO_LARGE, str(exc)) from None
    except IngestUnavailable as exc:  # dead letters, spans or totals not durable: nothing kept
        return _unavailable(_not_durable(exc), media)
    except EngineBusy:
        return _unavailable(_busy(traces), media)
    except StateError:  # the spans are not durable: nothing kept
        return _unavailable("cannot write state", media)
    answer = partial_success(rejected, decoded.invalid)
    if decoded.invalid and not decoded.spans:  # nothing of it readable: the request is bad
        message = answer.partial_success.error_message
        return _encode(Status(code=_INVALID_ARGUMENT, message=message), media, 400)
    if media == JSON and not decoded.spans and not decoded.invalid:
        unknown = unknown_keys(payload)
        if unknown:  # OTLP's warning form: a 200, nothing rejected, a message
            answer.partial_success.error_message = (
                f"no span: the request has no resourceSpans, only {unknown} top-level "
                f"key{'s' if unknown > 1 else ''} OTLP does not define (ignored, as OTLP/JSON "
                "asks); nothing was kept"
            )
    return _encode(answer, media)


def unknown_keys(body: bytes) -> int:
    """How many top-level keys of an OTLP/JSON body that decoded to no span are not
    ``resourceSpans`` (or ``resource_spans``), when it has neither: ``{"foo": 1}``. 0 for
    any other body, ``{}`` included (an empty export request, valid in OTLP/HTTP). Counts
    only: the keys are the client's input, never echoed."""
    try:
        top = json.loads(body)
    except (ValueError, RecursionError):  # pragma: no cover - the decoder read it
        return 0
    if not isinstance(top, dict) or {"resourceSpans", "resource_spans"} & top.keys():
        return 0
    return len(top)


def partial_success(
    rejected: Sequence[Rejected], invalid: Sequence[InvalidSpan] = ()
) -> ExportTraceServiceResponse:
    """The OTLP answer to a request whose spans were not all readable or kept whole.

    ``partial_success.rejected_spans``: spans dropped (dead-lettered, not kept: unreadable
    ones, ``invalid_value`` or ``wrong_type``, and ``too_many_spans``, ``late_span``).
    ``error_message``: counts per reason, then the positions of the first :data:`_LISTED`
    unreadable spans with what is wrong (``resourceSpans[0].scopeSpans[0].spans[3].traceId:
    4 hex characters, expected 32``), also the count of spans kept with an attribute cut
    (``attribute_too_large``: their full values are in the dead-letter file) — with none
    dropped, that is OTLP's warning form (``rejected_spans`` 0, a message). Reason codes,
    counts and field paths only, never content. Empty when everything was kept whole.
    """
    dropped: dict[str, int] = {}
    for unreadable in invalid:
        dropped[unreadable.reason] = dropped.get(unreadable.reason, 0) + 1
    cut = 0
    for item in rejected:
        if item.reason in _DROPPED:
            dropped[item.reason] = dropped.get(item.reason, 0) + len(item.spans)
        elif item.reason == "attribute_too_large":
            cut += len(item.spans)
    response = ExportTraceServiceResponse()
    parts = []
    if dropped:
        response.partial_success.rejected_spans = sum(dropped.values())
        parts.append("spans dead-lettered: " + ", ".join(
            f"{reason} ({n})" for reason, n in sorted(dropped.items())))  # fmt: skip
    if invalid:
        listed = "; ".join(unreadable.detail for unreadable in invalid[:_LISTED])
        more = f" ({_LISTED} of {len(invalid)} listed)" if len(invalid) > _LISTED else ""
        parts.append(f"unreadable spans{more}: {listed}")
    if cut:
        parts.append(f"spans kept with attribute values cut, originals dead-lettered: "
                     f"attribute_too_large ({cut})")  # fmt: skip
    if parts:
        response.partial_success.error_message = "; ".join(parts)
    return response


def _not_durable(exc: IngestUnavailable) -> str:
    """The 503 message of a request :meth:`Runtime.ingest` could not make durable: which file
    failed (the runtime raises it ``from`` an ``OSError`` of the dead-letter file or a
    ``StateError``; the context is kept). Fixed text: never input or paths."""
    if isinstance(exc.__context__, OSError):
        return "cannot write dead letters"
    return "cannot write state"


def _busy(traces: TraceIngest) -> str:
    """The 503 message when the pipeline could not take a request: still loading (serve's
    start: spans that need no counting are acknowledged meanwhile), or busy."""
    return "pipeline busy" if traces.runtime.loaded.is_set() else "starting: pipeline loading"


def _unavailable(message: str, media: str) -> Response:
    """503 (retryable in OTLP/HTTP) with ``Retry-After``, as ``/v1/events``' 503."""
    response = _encode(Status(code=_UNAVAILABLE, message=message), media, 503)
    response.headers["Retry-After"] = "5"
    return response
