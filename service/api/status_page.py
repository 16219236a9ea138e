"""``GET /``: the built-in status page (HTML, rendered on each request, reloads itself).

Included in the app with ``app.include_router(status_page.router)``.
"""

from __future__ import annotations

from fastapi import APIRouter, Query, Request
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from service.api.deps import RuntimeDep
from service.api.runtime import EngineBusy, Runtime
from service.html.status import SectionCache, render_status_page

router = APIRouter()


def _render(runtime: Runtime, refresh_s: int, cache: SectionCache) -> str:
    status = runtime.status()
    try:
        analytics, busy = runtime.analytics_report(), False
    except EngineBusy:
        analytics, busy = None, True
    return render_status_page(status, analytics, refresh_s=refresh_s, busy=busy, cache=cache)


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
    page = await run_in_threadpool(_render, runtime, refresh, state.status_page_cache)
    return HTMLResponse(page, headers={"Cache-Control": "no-store"})
