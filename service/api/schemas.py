"""Public response models of the HTTP API (they define the OpenAPI schema)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class Health(BaseModel):
    """``GET /healthz``: the process is alive."""

    status: str = "ok"


class Readiness(BaseModel):
    """``GET /readyz``: ready to consume (200) or not (503), with the reasons."""

    ready: bool
    reasons: list[str] = Field(default_factory=list)


class Rejected(BaseModel):
    """One posted event that was dead-lettered: its position in the request and why.

    ``detail`` names the field and the problem, never the submitted value.
    """

    index: int = Field(description="0-based position in the posted batch")
    reason: str
    detail: str


class IngestResult(BaseModel):
    """``POST /v1/events``: what happened to the posted events."""

    received: int
    accepted: int = Field(description="processed by the pipeline")
    duplicates: int = Field(description="already seen (same event_id)")
    dead_lettered: list[Rejected]


class Totals(BaseModel):
    """All-time counts, persisted in the state store (they survive restarts)."""

    consumed: int
    processed: int
    duplicates: int
    redelivered: int
    dead_lettered: dict[str, int]
    dropped: dict[str, int]


class Status(BaseModel):
    """``GET /v1/status``: source, offsets, lag, counts, uptime."""

    #: What the numbers do not cover, first: without a configured gold set, that gold-set
    #: comparisons are off and which setting turns them on (``gold_set:`` /
    #: ``GOLDWATCH_GOLD_SET``); empty otherwise.
    notices: list[str] = []
    version: str
    ready: bool
    not_ready_reasons: list[str]
    uptime_s: float
    source_kind: str
    source: dict[str, Any] | None
    input_finished: bool
    totals: Totals
    last_error: str | None
    #: Why the last gold-set refresh (after an accepted suggestion) failed; ``None`` after a
    #: successful one. The old gold set stays in use meanwhile.
    gold_refresh_error: str | None = None
    #: Why the configured gold-set file no longer loads (file, line and problem, never its
    #: content), e.g. a torn last line; ``None`` when it loads. The next start would stop on
    #: it, so ``/readyz`` is 503 meanwhile.
    gold_file_error: str | None = None


class Problem(BaseModel):
    """An error body: a code and a message that never echoes submitted content."""

    error: str
    detail: str | list[dict[str, Any]]


#: OpenAPI ``responses`` entries of the errors routes answer with a :class:`Problem` body.
BUSY: dict[int | str, dict[str, Any]] = {
    503: {"model": Problem, "description": "the pipeline is busy (retry after Retry-After)"}
}


def not_found(what: str) -> dict[int | str, dict[str, Any]]:
    """A ``404`` OpenAPI response entry with a :class:`Problem` body, described by ``what``."""
    return {404: {"model": Problem, "description": what}}
