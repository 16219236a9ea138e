"""``create_app(settings)``: the FastAPI app, its lifespan (runtime + consumer thread), the
``/metrics`` endpoint, a request-size limit and error bodies that never echo user input."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException

from service import __version__
from service.api import status_page
from service.api.harvest_routes import router as harvest_router
from service.api.routes import router
from service.api.runtime import EngineBusy, Runtime
from service.api.shadow_routes import router as shadow_router
from service.corpus import load_corpus
from service.demo import demo_path
from service.harvest import StateStoreCandidates
from service.harvest.labelling import Labelling
from service.settings import Settings


def create_app(settings: Settings, runtime: Runtime | None = None) -> FastAPI:
    """Build the app. The runtime (engine, state, source thread) is created at start-up
    unless one is given (tests), started in the lifespan and stopped on shutdown.

    Raises:
        service.state.StateError: at start-up, when the state file is unusable.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        rt = runtime or Runtime(settings)
        app.state.runtime = rt
        app.state.harvest = _labelling(settings, rt)
        rt.start()
        try:
            yield
        finally:
            rt.stop()

    app = FastAPI(
        title="goldwatch",
        version=__version__,
        summary="Watch a RAG system's live traffic against its gold set.",
        lifespan=lifespan,
    )
    app.include_router(router)
    app.include_router(shadow_router)
    app.include_router(harvest_router)
    app.include_router(status_page.router)
    _add_metrics_route(app)
    _add_body_limit(app, settings.api.max_request_bytes)
    _add_error_handlers(app)
    return app


def _labelling(settings: Settings, runtime: Runtime) -> Labelling | None:
    """Accept/reject of harvested suggestions: needs harvesting on and a gold-set file of
    the user's own (the packaged demo gold set is never written to)."""
    if runtime.live.harvest is None or settings.gold_set is None:
        return None
    corpus = load_corpus(settings.corpus or demo_path("corpus.jsonl"))
    return Labelling(StateStoreCandidates(runtime.state), settings.gold_set, settings.harvest,
                     on_accept=runtime.gold_accepted,
                     passages=[passage.id for passage in corpus])  # fmt: skip


def _add_metrics_route(app: FastAPI) -> None:
    @app.get("/metrics", tags=["ops"], response_class=Response)
    def metrics(request: Request) -> Response:
        """Prometheus exposition of this process's metrics."""
        registry = request.app.state.runtime.registry
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def _add_body_limit(app: FastAPI, limit: int) -> None:
    @app.middleware("http")
    async def limit_body(
        request: Request, call_next: Callable[[Request], Awaitable[Response]]
    ) -> Response:
        length = request.headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                return _problem(400, "bad_request", "invalid Content-Length")
            if int(length) > limit:
                return _problem(413, "too_large", f"request body over {limit} bytes")
        elif request.method in ("POST", "PUT", "PATCH"):
            body = b""
            async for chunk in request.stream():
                body += chunk
                if len(body) > limit:
                    return _problem(413, "too_large", f"request body over {limit} bytes")
            request._body = body  # starlette caches the body here; the route reads it
        return await call_next(request)


def _problem(code: int, error: str, detail: Any) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=code)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        # Only where and what: FastAPI's default body echoes the submitted input.
        detail = [
            {"loc": list(err.get("loc", ())), "msg": err.get("msg", ""), "type": err.get("type")}
            for err in exc.errors()
        ]
        return _problem(422, "validation_error", detail)

    @app.exception_handler(EngineBusy)
    async def engine_busy(request: Request, exc: EngineBusy) -> JSONResponse:
        response = _problem(503, "busy", str(exc))
        response.headers["Retry-After"] = "5"
        return response

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = _problem(exc.status_code, _error_code(exc.status_code), str(exc.detail))
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response


def _error_code(status_code: int) -> str:
    return {
        400: "bad_request",
        401: "unauthorized",
        403: "forbidden",
        404: "not_found",
        405: "method_not_allowed",
        409: "conflict",
        413: "too_large",
        415: "unsupported_media_type",
        422: "unprocessable",
        503: "unavailable",
    }.get(status_code, "error")
