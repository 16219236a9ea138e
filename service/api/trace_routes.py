"""``POST /v1/traces``: the OTLP/HTTP trace endpoint (opentelemetry-proto
``docs/specification.md``, "OTLP/HTTP").

* Request: ``ExportTraceServiceRequest`` as ``application/x-protobuf`` or ``application/json``
  (OTLP/JSON), optionally ``Content-Encoding: gzip``; the bearer token of ``/v1/events``;
  ``api.max_request_bytes`` bounds the body before and after decompression (413).
* 200: ``ExportTraceServiceResponse`` in the request's encoding, sent once the kept spans are
  in the state file (a crash after it loses none: ``service/api/trace_ingest.py``); spans not
  kept are counted in ``partial_success.rejected_spans`` with a reason summary in
  ``error_message`` (counts and reason codes only, never content).
* 400: an undecodable payload (dead-lettered with its reason and counted, as every dead
  letter of trace ingest, in ``/v1/status`` ``totals.dead_lettered`` and
  ``goldwatch_events_dead_lettered_total``); 415: another content type or
  encoding; 503: the dead-letter or state file cannot be written (nothing acknowledged:
  retry). Error bodies of 400 and 503 are a ``google.rpc.Status`` in the request's encoding,
  as OTLP asks.
"""

from __future__ import annotations

import zlib
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import Response
from google.protobuf.json_format import MessageToJson
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import TokenDep, TokenFirstRoute
from service.api.trace_ingest import TraceIngest, dead_letter
from service.runtime.process import EngineBusy
from service.state import StateError
from service.traces.otlp import TraceDecodeError, decode_json, decode_protobuf

router = APIRouter(route_class=TokenFirstRoute)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
#: Span rejections that drop the span (``attribute_too_large`` keeps it, cut; ``evicted``
#: concerns spans of earlier requests).
_DROPPED = frozenset({"too_many_spans", "late_span"})
_INVALID_ARGUMENT, _UNAVAILABLE = 3, 14  # google.rpc.Code


def get_traces(request: Request) -> TraceIngest:
    """The trace ingest stored on the app by the lifespan."""
    return request.app.state.traces  # type: ignore[no-any-return]


def _encode(message: Any, media: str, code: int = 200) -> Response:
    if media == PROTOBUF:
        return Response(message.SerializeToString(), status_code=code, media_type=PROTOBUF)
    return Response(MessageToJson(message, indent=None), status_code=code, media_type=JSON)


def _gunzip(body: bytes, limit: int) -> bytes:
    inflater = zlib.decompressobj(wbits=31)
    try:
        data = inflater.decompress(body, limit + 1)
    except zlib.error:
        raise HTTPException(status.HTTP_400_BAD_REQUEST, "body is not valid gzip") from None
    if len(data) > limit or inflater.unconsumed_tail:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE, f"decompressed body over {limit} bytes"
        )
    return data


@router.post(
    "/v1/traces",
    responses={
        200: {"description": "ExportTraceServiceResponse (partial_success when spans dropped)"},
        400: {"description": "undecodable payload (dead-lettered); google.rpc.Status"},
        401: {"description": "no bearer token"},
        403: {"description": "wrong token, or ingest disabled"},
        413: {"description": "body (or decompressed body) too large"},
        415: {"description": "not application/x-protobuf or application/json, or not gzip"},
        503: {"description": "dead letters or state cannot be written; retry"},
    },
    tags=["ingest"],
)
async def post_traces(request: Request, _: TokenDep) -> Response:
    """Accept OTLP spans; they are assembled per trace and each finished trace becomes one
    event through the live pipeline (see ``service/api/trace_ingest.py``)."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media not in (PROTOBUF, JSON):
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, f"use {PROTOBUF} or {JSON}")
    encoding = request.headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip"):
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, "use gzip or no encoding")
    traces = get_traces(request)
    body = await request.body()
    if encoding == "gzip":
        body = _gunzip(body, traces.runtime.settings.api.max_request_bytes)
    try:
        spans = decode_protobuf(body) if media == PROTOBUF else decode_json(body)
    except TraceDecodeError as exc:
        traces.metrics.payloads_rejected.labels(reason=exc.reason).inc()
        try:  # written, then counted in the totals (dead_lettered by reason)
            await run_in_threadpool(
                traces.runtime.ingest, [], None, [dead_letter(body, exc.reason, exc.detail)]
            )
        except (OSError, EngineBusy):
            return _encode(Status(code=_UNAVAILABLE, message="cannot write dead letters"),
                           media, 503)  # fmt: skip
        return _encode(Status(code=_INVALID_ARGUMENT, message=str(exc)), media, 400)
    try:
        rejected = await run_in_threadpool(traces.receive, spans)
    except OSError:
        return _encode(Status(code=_UNAVAILABLE, message="cannot write dead letters"), media, 503)
    except StateError:  # the spans are not durable: nothing acknowledged
        return _encode(Status(code=_UNAVAILABLE, message="cannot write state"), media, 503)
    except EngineBusy as exc:  # dead letters or totals not durable: nothing acknowledged
        message = "pipeline busy" if type(exc) is EngineBusy else "cannot write dead letters"
        return _encode(Status(code=_UNAVAILABLE, message=message), media, 503)
    response = ExportTraceServiceResponse()
    counts: dict[str, int] = {}
    for item in rejected:
        if item.reason in _DROPPED:
            counts[item.reason] = counts.get(item.reason, 0) + len(item.spans)
    if counts:
        response.partial_success.rejected_spans = sum(counts.values())
        response.partial_success.error_message = "spans dead-lettered: " + ", ".join(
            f"{reason} ({n})" for reason, n in sorted(counts.items())
        )
    return _encode(response, media)
