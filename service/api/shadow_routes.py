"""Shadow evaluation routes: agreement with production, disagreements, gold-set runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, HTTPException, Query, status

from service.api.deps import RuntimeDep, TokenDep, TokenFirstRoute
from service.api.schemas import BUSY, Disagreements, GoldRunStarted, ShadowReport, not_found
from service.runtime.process import GoldRunStatus
from service.settings import GOLD_SET_OFF
from service.shadow.stage import disagreements_by_question

router = APIRouter(prefix="/v1/shadow", tags=["shadow"], route_class=TokenFirstRoute)


def _report(runtime: Any) -> dict[str, Any]:
    report = runtime.shadow_report()
    if report is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no shadow candidates are configured")
    return report  # type: ignore[no-any-return]


@router.get("", response_model=ShadowReport,
            responses={**not_found("no shadow candidates are configured"), **BUSY})  # fmt: skip
def get_shadow(runtime: RuntimeDep) -> dict[str, Any]:
    """Per candidate: offers by outcome (queued or skip reason), completed calls, errors by
    reason, latency, agreement with production (RBO_ext of production's ranking as logged and
    the candidate's k passages; overlap@k, Jaccard@k, Kendall's tau, top-1, citation recall
    at k = min(candidate k, production depth): means and counts), the same by language and
    topic, circuit breaker and queue; plus the latest gold-set run, ``topics_are`` when
    the topics are nearest gold topics (the novelty detector untrusted), and ``sustained``:
    per candidate, the replay's "over time ... sustained" verdict on its RBO, worked out
    each event-time hour (``found``, ``beyond_noise``, ``start``, ``question_rbo`` against
    ``before_question_rbo``, ``p_value`` against ``threshold``; ``None``: no run tested
    yet)."""
    report = _report(runtime)
    candidates = {
        name: {k: v for k, v in body.items() if k != "disagreements"}
        for name, body in report["candidates"].items()
    }
    return {**report, "candidates": candidates, "gold": runtime.gold_run_status(),
            "topics_are": runtime.topics_nearest(),
            "sustained": report.get("sustained") or {}}  # fmt: skip


@router.get(
    "/disagreements",
    response_model=Disagreements,
    responses={**not_found("no shadow candidates are configured, or unknown candidate"), **BUSY},
)
def get_disagreements(
    runtime: RuntimeDep,
    candidate: Annotated[str | None, Query(max_length=64)] = None,
    limit: Annotated[int, Query(ge=1, le=1_000)] = 20,
    distinct: bool = True,
) -> dict[str, Any]:
    """The live events with the lowest RBO per candidate (both rankings, the scrubbed
    question), lowest first; ``candidate`` restricts to one. ``distinct`` (default): one row
    per question, the one with the lowest RBO, with ``repeats``: how many of the kept rows
    (the ``shadow.max_disagreements`` lowest of all traffic) asked it (trial 39: 20 rows were
    11 questions, one of them 6 times); ``distinct=false``: every kept event, no
    ``repeats``."""
    report = _report(runtime)
    rows = {
        name: (
            disagreements_by_question(body["disagreements"]) if distinct else body["disagreements"]
        )[:limit]
        for name, body in report["candidates"].items()
        if candidate is None or name == candidate
    }
    if candidate is not None and not rows:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "unknown candidate")
    return {"rbo_p": report["rbo_p"], "candidates": rows}


@router.get("/evaluate")
def get_gold_run(runtime: RuntimeDep) -> GoldRunStatus:
    """The latest gold-set run of production and the candidates (recall@k, hit rate, MRR,
    nDCG per retriever and kind; paired comparisons; ACL violations), and whether one is
    running."""
    return runtime.gold_run_status()


@router.post(
    "/evaluate",
    status_code=status.HTTP_202_ACCEPTED,
    response_model=GoldRunStarted,
    responses={
        401: {"description": "no bearer token"},
        403: {"description": "wrong token, or mutating endpoints disabled"},
        404: {"description": "no production retriever and no candidates configured"},
        409: {"description": "a gold-set run is already in progress"},
    },
)
def post_gold_run(runtime: RuntimeDep, _: TokenDep) -> Any:
    """Start a gold-set run now, in the background; poll ``GET /v1/shadow/evaluate``."""
    if runtime.settings.gold_set is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, GOLD_SET_OFF)
    if not runtime.gold_runs.enabled:
        raise HTTPException(status.HTTP_404_NOT_FOUND, "no retriever to evaluate")
    if not runtime.gold_runs.start("on_demand"):
        raise HTTPException(status.HTTP_409_CONFLICT, "a gold-set run is already in progress")
    return {"started": True}
