"""Routes: health, readiness, status and HTTP ingest (``/metrics`` is mounted in app.py)."""

from __future__ import annotations

import json
from typing import Any

from fastapi import APIRouter, HTTPException, Request, status
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import RuntimeDep, TokenDep, TokenFirstRoute, require_json
from service.api.schemas import (
    BUSY,
    DriftReport,
    Health,
    IngestResult,
    Problem,
    QualityReport,
    Readiness,
    RefusalDrift,
    RefusalsReport,
    Rejected,
    Status,
    not_found,
)
from service.runtime.process import StatusReport

router = APIRouter(route_class=TokenFirstRoute)
#: ``POST /v1/events``' ``note`` when the request had duplicates and carried feedback
#: (trial t42 L1: a thumbs-down posted later with a traced answer's id was silently dropped).
DUPLICATE_FEEDBACK_NOTE = (
    "an event whose event_id was seen recently is dropped whole: its feedback is not added "
    "to the event already processed (events are not updated). Send the rating with the "
    "event; for a traced answer, on a span of its trace (traces.mapping.feedback_attribute, "
    "docs/traces.md 'User feedback and refusal flags on traces')"
)


@router.get("/healthz", response_model=Health, tags=["ops"])
def healthz() -> Health:
    """The process is alive (no dependency is checked)."""
    return Health()


@router.get(
    "/readyz",
    response_model=Readiness,
    responses={503: {"model": Readiness}},
    tags=["ops"],
)
def readyz(request: Request, runtime: RuntimeDep) -> Any:
    """Ready when the pipeline is built and started, the state open and the source open /
    assigned; 503 ``starting: …`` while ``serve`` loads the pipeline."""
    started = getattr(request.app.state, "started", None)
    if started is not None and not started.is_set():  # loaded, or not: not started yet
        ready, reasons = False, [runtime.starting_reason()]
    else:
        ready, reasons = runtime.ready()
    body = Readiness(ready=ready, reasons=reasons)
    if ready:
        return body
    return JSONResponse(body.model_dump(), status_code=status.HTTP_503_SERVICE_UNAVAILABLE)


@router.get("/v1/status", response_model=Status, tags=["ops"])
def get_status(runtime: RuntimeDep) -> StatusReport:
    """Sources, offsets, lag, persisted totals, uptime."""
    return runtime.status()


@router.get("/v1/drift", response_model=DriftReport, tags=["analytics"],
            responses={**not_found("analytics are disabled"), **BUSY})  # fmt: skip
def get_drift(runtime: RuntimeDep) -> dict[str, Any]:
    """Drift per dimension (language, topic, refusal, out-of-scope, known_refusal, known_miss,
    terms):
    state, latest test of each comparison (gold set, baseline), live vs gold counts, coverage
    gaps, alarm history."""
    report = runtime.analytics_report()
    if report is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "analytics are disabled")
    return dict(report["drift"])


@router.get("/v1/refusals", tags=["analytics"],
            responses={**not_found("analytics are disabled"), **BUSY})  # fmt: skip
def get_refusals(runtime: RuntimeDep) -> RefusalsReport:
    """Refusals in both directions: the refusal rate and its drift, out-of-scope share,
    over-refusals (refused while in scope) and under-refusals (answered while out of scope),
    with the out-of-scope calibration and the detector's measured quality (ROC AUC with its
    bootstrap interval and the gold questions it is measured on); below
    ``analytics.quality_floor``, or measured on fewer than ``analytics.quality_min_class``
    questions of a class, ``out_of_scope.uncalibrated`` says
    why the counts are not facts and its drift raises no alarm."""
    report = runtime.analytics_report()
    if report is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "analytics are disabled")
    drift = report["drift"]
    refusal_drift: RefusalDrift = {
        "refusal": drift["refusal"],
        "out_of_scope": drift["out_of_scope"],
    }
    if "known_refusal" in drift:
        refusal_drift["known_refusal"] = drift["known_refusal"]
    return {
        "refusals": report["refusals"],
        "out_of_scope": report["out_of_scope"],
        "drift": refusal_drift,
        "detector_quality": report.get("detector_quality", {}),
        "quality_floor": report.get("quality_floor"),
        "quality_min_class": report.get("quality_min_class"),
        "refusals_method": report["refusals"]["method"],
    }


@router.get("/v1/quality", response_model=QualityReport, tags=["analytics"],
            responses={**not_found("no gold set: quality checks are off"), **BUSY})  # fmt: skip
def get_quality(runtime: RuntimeDep) -> dict[str, Any]:
    """Known questions (live questions that near-duplicate a gold question) scored per
    retriever — recall@k, hit rate, MRR against the gold row's passages — with refusals of
    answerable and answers to unanswerable ones; ACL violations (results the asker's role may
    not read) and leaks (answers citing them) per retriever and role, with scrubbed review
    rows."""
    report = runtime.quality_report()
    if report is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no gold set: quality checks are off")
    return report


def _split_events(body: bytes, limit: int) -> list[bytes]:
    """A JSON array becomes one message per element; anything else is one message."""
    try:
        parsed = json.loads(body)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return [body]  # the decoder dead-letters it with its precise reason
    if not isinstance(parsed, list):
        return [body]
    if len(parsed) > limit:
        raise HTTPException(
            status.HTTP_413_CONTENT_TOO_LARGE,
            f"at most {limit} events per request",
        )
    # ASCII escapes keep a lone surrogate (a producer cut an emoji) encodable: the decoder
    # turns it into U+FFFD as it does for a single event.
    try:
        return [json.dumps(item).encode("ascii") for item in parsed]
    except RecursionError:
        return [body]  # too deep to re-encode: dead-lettered whole


@router.post(
    "/v1/events",
    response_model=IngestResult,
    response_model_exclude_none=True,  # ``note`` only when it says something
    responses={
        400: {"description": "nothing in the body could be used (all dead-lettered)"},
        401: {"description": "no bearer token"},
        403: {"description": "wrong token, or ingest disabled"},
        413: {"description": "body or batch too large"},
        415: {"description": "not application/json"},
        503: {"model": Problem, "description": "busy, or the state or dead letters cannot be "
              "written: nothing acknowledged, retry later"},
    },
    tags=["ingest"],
    # the body is read raw (each event is decoded, or dead-lettered, on its own)
    openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
        "schema": {"oneOf": [{"type": "object"}, {"type": "array", "items": {}}]}}}}},
)  # fmt: skip
async def post_events(request: Request, runtime: RuntimeDep, _: TokenDep) -> Any:
    """Ingest one event object or a JSON array of them, through the live pipeline.

    Unusable events are dead-lettered (with their reason) and reported by index; the
    response never echoes their content.
    """
    require_json(request)
    body = await request.body()
    values = _split_events(body, runtime.settings.api.max_events_per_request)
    # ingest may wait for the consumer's batch: keep it off the event loop
    outcome = await run_in_threadpool(runtime.ingest, values)
    rejected = [
        Rejected(index=(letter.message.origin.line or 1) - 1, reason=letter.reason,
                 detail=letter.detail)
        for letter in outcome.dead
    ]  # fmt: skip
    result = IngestResult(
        received=len(values),
        accepted=outcome.counts.processed,
        duplicates=outcome.counts.duplicates - outcome.repeated,  # those are listed below
        dead_lettered=rejected,
    )
    if result.duplicates and any(b'"feedback"' in value for value in values):
        result.note = DUPLICATE_FEEDBACK_NOTE
    if values and len(rejected) == len(values):
        return JSONResponse(result.model_dump(exclude_none=True),
                            status_code=status.HTTP_400_BAD_REQUEST)  # fmt: skip
    return result
