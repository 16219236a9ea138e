"""``GET /``: the built-in status page (HTML, rendered on each request, reloads itself).

Included in the app with ``app.include_router(status_page.router)``. It shows the runtime's
status and analytics, its shadow report (when the runtime has ``shadow_report``) and the top
harvested suggestions (when the app holds a labelling service as ``app.state.harvest``), with
the totals by status and how many picked events harvesting shed.
"""

from __future__ import annotations

from typing import Any, TypedDict

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import RuntimeDep
from service.harvest.labelling import CandidateItem
from service.html.status import SectionCache, render_status_page
from service.runtime.process import EngineBusy, Runtime
from service.shadow.not_compared import NotCompared
from service.shadow.stage import ShadowStageReport

router = APIRouter()
#: Suggestions shown (the full, filterable list is at /v1/gold-candidates).
SUGGESTIONS = 20


class Shed(TypedDict, total=False):
    """:func:`shed_counts`: picked events whose new question harvesting shed, and the bound."""

    shed: int
    max_new_per_batch: int | None
    live: bool
    shadow_not_compared: dict[str, NotCompared]


class Documents(TypedDict, total=False):
    """:func:`_documents`: the documents the gold set under-covers."""

    documents: dict[str, Any]


class CandidatesPanel(Shed, Documents):
    """The suggestions panel: the top undecided ones, how many are undecided and listed
    (``n_suggestions``) and left out of the listing as near-duplicates of one listed
    (``near_duplicates``), the counts by status (stored: near-duplicates included), what
    harvesting shed (:class:`Shed`, when the runtime harvests) and the documents the gold
    set under-covers (``documents``: ``Runtime.document_gaps``, when the corpus names
    documents)."""

    suggestions: list[CandidateItem]
    n_suggestions: int
    near_duplicates: int
    by_status: dict[str, int]


class Extras(TypedDict, total=False):
    """The status page's sections beyond status and analytics, each when it is on."""

    shadow: ShadowStageReport | None
    gold_candidates: CandidatesPanel
    quality: dict[str, Any]


def _extras(runtime: Runtime, harvest: Any) -> Extras:
    extras: Extras = {}
    shadow_report = getattr(runtime, "shadow_report", None)
    if callable(shadow_report):
        shadow = shadow_report()
        gold_run_status = getattr(runtime, "gold_run_status", None)
        if shadow is not None and callable(gold_run_status):  # the gold-set run's paired test
            shadow = {**shadow, "gold": gold_run_status()}
        extras["shadow"] = shadow
    quality_report = getattr(runtime, "quality_report", None)
    quality = quality_report() if callable(quality_report) else None
    if quality is not None:  # the live-quality stage runs (analytics on, a gold set)
        extras["quality"] = quality
    if harvest is not None:
        page = harvest.list(status="suggested", limit=SUGGESTIONS)
        extras["gold_candidates"] = {
            "suggestions": page.items,
            "n_suggestions": page.total,  # all undecided ones, not the SUGGESTIONS shown
            # undecided ones the listing leaves out as near-duplicates of one listed, which
            # by_status counts: by_status["suggested"] = n_suggestions + near_duplicates
            "near_duplicates": page.near_duplicates,
            "by_status": harvest.counts(),
            **shed_counts(runtime),
            **_documents(runtime),
        }
    return extras


def _documents(runtime: Runtime) -> Documents:
    """``{"documents": …}``: the documents the gold set under-covers (``Runtime.document_gaps``);
    empty when the runtime does not harvest or its corpus names no document."""
    document_gaps = getattr(runtime, "document_gaps", None)
    documents = document_gaps() if callable(document_gaps) else None
    return {} if documents is None else {"documents": documents}


def shed_counts(runtime: Runtime) -> Shed:
    """``{"shed": n, "max_new_per_batch": bound, "live": True}``: picked events whose new
    question harvesting shed since this process started
    (``goldwatch_gold_candidates_shed_total``) and the bound that sheds them; ``live``: the
    count depends on how fast events arrived (:data:`service.harvest.shed_note.LIVE_CAVEAT`),
    which the page says; ``shadow_not_compared`` (with shadow candidates): per candidate the
    events offered whose comparison did not complete, by cause, over the state's whole
    history (:meth:`~service.shadow.stage.ShadowStage.not_compared`, read without the
    pipeline's lock: one consistent snapshot). Empty when the runtime does
    not harvest."""
    live = getattr(runtime, "live", None)
    stage = getattr(live, "harvest", None)
    registry = getattr(runtime, "registry", None)
    if stage is None or registry is None:
        return {}
    shed = registry.get_sample_value("goldwatch_gold_candidates_shed_total")
    panel: Shed = {"shed": int(shed or 0), "max_new_per_batch": stage.config.max_new_per_batch,
                   "live": True}  # fmt: skip
    shadow = getattr(live, "shadow", None)
    if shadow is not None:  # next to shed: events whose shadow comparison did not complete
        panel["shadow_not_compared"] = shadow.not_compared()
    return panel


def _render(runtime: Runtime, refresh_s: int, cache: SectionCache, harvest: Any) -> str:
    status = runtime.status()
    try:
        analytics, extras, busy = runtime.analytics_report(), _extras(runtime, harvest), False
    except EngineBusy:
        analytics, extras, busy = None, None, True
    return render_status_page(
        status, analytics, refresh_s=refresh_s, busy=busy, extras=extras, cache=cache
    )


@router.get("/", response_class=HTMLResponse, tags=["ops"])
async def status_page(
    request: Request,
    runtime: RuntimeDep,
    refresh: int = Query(15, ge=0, le=3600, description="Seconds between reloads; 0: never."),
) -> HTMLResponse:
    """The status page: process status, then languages and topics against the gold set,
    drift with its alarms, refusals, shadow agreement and suggested gold questions.

    Self-contained HTML (inline CSS and SVG charts, no script); it reloads every
    ``refresh`` seconds. When the pipeline is too busy to be read, the page says so and
    shows the process status only.
    """
    state = request.app.state
    if getattr(state, "status_page_cache", None) is None:
        state.status_page_cache = SectionCache()  # one per app: charts redrawn on change only
    # analytics waits on the pipeline lock and charts take CPU: keep them off the event loop
    harvest = getattr(state, "harvest", None)
    page = await run_in_threadpool(_render, runtime, refresh, state.status_page_cache, harvest)
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})
