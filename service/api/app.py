"""``create_app(settings)``: the FastAPI app, its lifespan (runtime + consumer thread), the
``/metrics`` endpoint, a request-size limit and error bodies that never echo user input.

Responsiveness under load (issue 9): the consumer thread runs the pipeline in pure Python and
holds the GIL nearly all the time at full rate, so every request waits for the GIL at each
hand-over between threads (event loop, thread pool) — up to ``sys.getswitchinterval()`` each
(5 ms by default). While serving, the interval is :data:`SWITCH_INTERVAL_S`, and the body
limit is plain ASGI (no extra event-loop turns per request).
"""

from __future__ import annotations

import logging
import sys
import threading
import typing
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI, Request
from fastapi.dependencies.models import Dependant
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from pydantic import BaseModel
from starlette.datastructures import Headers
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.requests import ClientDisconnect
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service import __version__
from service.api import status_page
from service.api.deps import MUTATING_METHODS, require_token
from service.api.harvest_routes import router as harvest_router
from service.api.routes import router
from service.api.shadow_routes import router as shadow_router
from service.api.trace_ingest import TraceIngest
from service.api.trace_routes import router as trace_router
from service.data.corpus import load_corpus
from service.harvest import StateStoreCandidates
from service.harvest.labelling import Labelling
from service.runtime.process import EngineBusy, Runtime
from service.settings import Settings

#: GIL switch interval while the app serves, in seconds (CPython's default: 0.005). A thread
#: asking for the GIL gets it after at most this long; a request crosses 3-6 such hand-overs.
#: Soak at 2,000 events/s, two pairs of runs on one machine: ``/metrics`` p50 27.1 and 28.6 ms
#: at 5 ms, 17.1 and 24.5 ms at 1 ms (a bare async route: 10.3 and 12.4 -> 6.3 and 9.6 ms);
#: throughput unchanged within noise (forced switches happen only while a thread waits).
SWITCH_INTERVAL_S = 0.001

_log = logging.getLogger("goldwatch")


def create_app(
    settings: Settings,
    runtime: Runtime | None = None,
    on_load_failed: Callable[[], None] = lambda: None,
) -> FastAPI:
    """Build the app. The runtime (engine, state, source thread) is created at start-up
    unless one is given (tests, serve), started in the lifespan and stopped on shutdown.

    A runtime given with its load deferred (``Runtime(settings, defer=True)``: ``serve``) is
    loaded on a thread once the lifespan started, so the port answers at once: ``/healthz``,
    ``/metrics``, ``/readyz`` (503 until loaded) and ``POST /v1/traces`` (spans acknowledged
    into the state file, :mod:`service.api.trace_ingest`); every other route answers 503
    ``starting`` with ``Retry-After`` meanwhile (:class:`StartGate`). When the load fails,
    :attr:`Runtime.load_error <service.runtime.process.Runtime.load_error>` says why and
    ``on_load_failed`` is called (serve stops itself and exits 2).

    Raises:
        service.state.StateError: at start-up, when the state file is unusable.
    """

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        rt = runtime or Runtime(settings)
        app.state.runtime = rt
        app.state.harvest = None
        #: Set once the pipeline is built AND started (harvest, consumer, trace ticker): what
        #: StartGate and /readyz read, so no route answers from a half-started process.
        app.state.started = threading.Event()
        switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(min(switch_interval, SWITCH_INTERVAL_S))
        # the pending spans come back first: acknowledged ones (also while loading) join them
        app.state.traces = TraceIngest(rt, rt.trace_metrics)

        def finish_start() -> None:
            app.state.harvest = _labelling(settings, rt)
            rt.start()
            app.state.traces.start()
            app.state.started.set()

        loader: threading.Thread | None = None
        if rt.loaded.is_set():
            finish_start()
        else:  # serve: the port answers now, the pipeline is built on a thread
            loader = threading.Thread(target=_load, args=(rt, finish_start, on_load_failed),
                                      name="goldwatch-load", daemon=True)  # fmt: skip
            loader.start()
        try:
            yield
        finally:
            # a stop while loading does not wait for the load (a rollout stopping a pod that
            # is not ready): the spans acknowledged meanwhile are in the state file, which
            # rt.stop() closes; the abandoned load ends with the process
            app.state.traces.stop()  # due traces through the pipeline; the rest stay in the state
            rt.stop()
            sys.setswitchinterval(switch_interval)

    app = FastAPI(
        title="goldwatch",
        version=__version__,
        summary="Watch a RAG system's live traffic against its gold set.",
        lifespan=lifespan,
    )
    app.include_router(router)
    app.include_router(shadow_router)
    app.include_router(harvest_router)
    app.include_router(trace_router)
    app.include_router(status_page.router)
    _add_metrics_route(app)
    _add_body_limit(app, settings.api.max_request_bytes, settings.api.max_header_bytes)
    app.add_middleware(HeadAsGet)
    app.add_middleware(StartGate)
    _add_error_handlers(app)
    return app


def _load(runtime: Runtime, then: Callable[[], None], failed: Callable[[], None]) -> None:
    """Run a deferred :meth:`Runtime.load`, then ``then`` (start the consumer and the trace
    ticker); on failure record :attr:`Runtime.load_error` (the message of the failures the
    constructor raises; else the type only, as the consumer's errors), log it and call
    ``failed``. After a stop (the runtime's ``stop_event``: the process is stopping while it
    loads) nothing is started and a failure (the stop closed the state file) is not one."""
    from service.errors import describe_error
    from service.state import StateError

    try:
        runtime.load()
        if not runtime.stop_event.is_set():
            then()
        return
    except (StateError, ValueError, OSError) as exc:
        error = str(exc)
    except Exception as exc:  # noqa: BLE001 - logged; the process stops
        error = describe_error(exc)
    if runtime.stop_event.is_set():
        return
    runtime.load_error = error
    _log.error("the pipeline could not be loaded (%s); stopping", error)
    failed()


#: Paths that answer while a deferred load runs (everything else: 503 ``starting``).
EARLY_PATHS = frozenset({"/healthz", "/readyz", "/metrics", "/v1/traces", "/docs",
                         "/docs/oauth2-redirect", "/redoc", "/openapi.json"})  # fmt: skip


class StartGate:
    """Until the deferred load has built and started the pipeline (``serve``: the app's
    ``started`` event, set after the consumer and the trace ticker started), answer 503
    ``starting`` with ``Retry-After: 5`` on every path but :data:`EARLY_PATHS`: the reports,
    events and suggestions need the pipeline. A mutating request is authenticated first
    (:func:`~service.api.deps.require_token`: 401 without a token, 403 with a wrong one), as
    once started. The 503's detail never carries the load's error text (nor does ``/readyz``'s:
    both answer unauthenticated clients; the log and serve's exit message say it). Plain ASGI
    (see :class:`BodyLimit`)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] not in EARLY_PATHS:
            state = scope["app"].state
            runtime = getattr(state, "runtime", None)
            started = getattr(state, "started", None)
            if runtime is not None and started is not None and not started.is_set():
                response = _start_gate_answer(scope, runtime)
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _start_gate_answer(scope: Scope, runtime: Runtime) -> Response:
    """StartGate's answer: the token check's 401/403 for a mutating request, else 503."""
    if scope["method"] in MUTATING_METHODS:
        try:
            require_token(Request(scope), runtime)
        except StarletteHTTPException as exc:
            refused = _problem(exc.status_code, _error_code(exc.status_code), str(exc.detail))
            for key, value in (exc.headers or {}).items():
                refused.headers[key] = value
            return refused
    response = _problem(503, "starting", runtime.starting_reason())
    response.headers["Retry-After"] = "5"
    return response


class HeadAsGet:
    """Answer ``HEAD`` on every route that answers ``GET`` (RFC 9110 section 9.3.2: the same
    status and headers, ``content-length`` included, without the body). FastAPI routes
    declare ``GET`` only, so ``HEAD`` got 405 (load balancers and uptime checks use it).

    The request runs as a ``GET``; every body chunk the app sends is dropped, and one empty
    final chunk ends the response. A route without ``GET`` still answers 405."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] != "HEAD":
            await self.app(scope, receive, send)
            return

        async def headers_only(message: Any) -> None:
            if message["type"] == "http.response.body":
                if message.get("more_body", False):
                    return
                message = {"type": "http.response.body", "body": b"", "more_body": False}
            await send(message)

        await self.app({**scope, "method": "GET"}, receive, headers_only)


def _labelling(settings: Settings, runtime: Runtime) -> Labelling | None:
    """Accept/reject of harvested suggestions: needs harvesting on and a gold-set file of
    the user's own (the packaged demo gold set is never written to)."""
    if runtime.live.harvest is None or settings.gold_set is None:
        return None
    passages = [p.id for p in load_corpus(settings.corpus)] if settings.corpus else None
    return Labelling(StateStoreCandidates(runtime.state), settings.gold_set, settings.harvest,
                     on_accept=runtime.gold_accepted, passages=passages,
                     gold_check=runtime.gold_check,
                     on_decide=runtime.live.decided,
                     gold_rule=runtime.gold_set_problem)  # fmt: skip


def _add_metrics_route(app: FastAPI) -> None:
    @app.get("/metrics", tags=["ops"], response_class=Response, responses={200: {
        "description": "Prometheus text exposition format",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    }})  # fmt: skip
    async def metrics(request: Request) -> Response:
        """Prometheus exposition of this process's metrics.

        ``async``: rendered on the event loop (about 1 ms for ~370 series), not handed to
        the thread pool and back, two fewer GIL hand-overs per scrape (issue 9). Soak at
        2,000 events/s, 120,000 events, interleaved runs on one machine: p50 / p99 11.0 /
        50.9 ms sync -> 9.7 / 25.4 ms async quiet; under load (5) 18.1 / 120.2 and 19.3 /
        267.3 ms sync -> 14.9 / 85.7 and 16.9 / 126.3 ms async."""
        registry = request.app.state.runtime.registry
        return Response(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)


def _add_body_limit(app: FastAPI, limit: int, header_limit: int | None = None) -> None:
    app.add_middleware(BodyLimit, limit=limit, header_limit=header_limit)


#: Bytes of an over-size request body read and dropped after its 413 is sent (on top of the
#: limit): a client that sends its whole body before reading the answer (Python's urllib,
#: many exporters' blocking clients) then reads the 413 instead of a broken pipe or a
#: connection reset, and the connection stays usable. Past it the connection is closed.
DRAIN_BYTES = 64 * 1_048_576


class BodyLimit:
    """Reject request bodies over ``limit`` bytes (413), malformed ``Content-Length`` (400)
    and, with ``header_limit``, a request line and headers over that many bytes (431, RFC
    6585) before the route runs; a body without a length (chunked POST/PUT/PATCH) is read up
    to the limit and handed on.

    A 413 is answered at once (from ``Content-Length`` before any of the body is read), then
    the rest of the body is read and dropped (at most :data:`DRAIN_BYTES`; bounded in time by
    the server's request read deadline, ``api.request_read_timeout_s``) before the answer is
    ended: closing a connection with unread request bytes makes the kernel send a reset,
    which a client still sending reads as a broken pipe, never seeing the 413 (trial probe 2:
    an uncompressed 5 MB ``/v1/traces`` body). A client that asked ``Expect: 100-continue``
    has sent no body: nothing is read.

    Plain ASGI, not ``@app.middleware("http")``: Starlette's ``BaseHTTPMiddleware`` runs each
    request through a task group and memory streams, several more event-loop turns per
    request; every turn waits for the GIL while the pipeline thread holds it (issue 9).
    """

    def __init__(self, app: ASGIApp, limit: int, header_limit: int | None = None) -> None:
        self.app = app
        self.limit = limit
        self.header_limit = header_limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if self.header_limit is not None and _head_bytes(scope) > self.header_limit:
            detail = f"request line and headers over {self.header_limit} bytes"
            await _problem(431, "headers_too_large", detail)(scope, receive, send)
            return
        length = Headers(scope=scope).get("content-length")
        if length is not None:
            if not length.isdigit():
                await _problem(400, "bad_request", "invalid Content-Length")(scope, receive, send)
                return
            if int(length) > self.limit:
                drain = int(length) <= self.limit + DRAIN_BYTES
                await self._too_large(scope, receive, send, drain)
                return
        elif scope["method"] in ("POST", "PUT", "PATCH"):
            body = bytearray()
            more = True
            while more:
                message = await receive()
                if message["type"] != "http.request":  # the client went away
                    return
                body += message.get("body", b"")
                if len(body) > self.limit:
                    await self._too_large(scope, receive, send, more)
                    return
                more = message.get("more_body", False)
            receive = _replay(bytes(body), receive)
        await self.app(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send, drain: bool) -> None:
        """Send the 413; with ``drain`` (more body to come), read and drop it before the
        answer's end (class docstring)."""
        response = _problem(413, "too_large", f"request body over {self.limit} bytes")
        expect = Headers(scope=scope).get("expect", "").lower()
        if not drain or expect == "100-continue":
            await response(scope, receive, send)
            return

        async def drained(message: Message) -> None:
            if message["type"] != "http.response.body" or message.get("more_body", False):
                await send(message)
                return
            await send({**message, "more_body": True})  # the whole answer, not yet ended
            budget = DRAIN_BYTES
            while budget > 0:
                request = await receive()
                if request["type"] != "http.request":
                    return  # the client went away (or the read deadline closed it)
                budget -= len(request.get("body", b""))
                if not request.get("more_body", False):
                    break
            await send({"type": "http.response.body", "body": b"", "more_body": False})

        await response(scope, receive, drained)


def _head_bytes(scope: Scope) -> int:
    """The request head's size as sent (HTTP/1.1): ``METHOD SP target SP HTTP/x.y CRLF``,
    ``name: value CRLF`` per header, then ``CRLF`` (``api.max_header_bytes``). h11's
    own limit (``h11_max_incomplete_event_size``) bounds only what it buffers while a head is
    incomplete: a 20 KB head that arrived in one read passed a 16 KB limit (a trial)."""
    target = len(scope.get("raw_path") or b"") + len(scope.get("query_string") or b"")
    if scope.get("query_string"):
        target += 1  # the "?"
    size = len(scope["method"]) + target + len(scope.get("http_version", "1.1")) + 9
    for name, value in scope["headers"]:
        size += len(name) + len(value) + 4
    return size + 2  # the empty line ending the head


def _replay(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that yields the already-read ``body`` once, then defers to ``receive``."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def _problem(code: int, error: str, detail: Any) -> JSONResponse:
    return JSONResponse({"error": error, "detail": detail}, status_code=code)


def _add_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        return _problem(422, "validation_error", validation_detail(request, exc.errors()))

    @app.exception_handler(EngineBusy)
    async def engine_busy(request: Request, exc: EngineBusy) -> JSONResponse:
        response = _problem(503, exc.code, str(exc))
        response.headers["Retry-After"] = "5"
        return response

    @app.exception_handler(ClientDisconnect)
    async def client_gone(request: Request, exc: ClientDisconnect) -> JSONResponse:
        # the connection closed before the body was read whole (the client left, or the
        # slow-client guard closed it with 408): nothing to answer, no traceback to log
        return _problem(408, "client_disconnected", "the request body was not received whole")

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        response = _problem(exc.status_code, _error_code(exc.status_code), str(exc.detail))
        for key, value in (exc.headers or {}).items():
            response.headers[key] = value
        return response


#: Token standing for a loc part the API does not declare (a key the client made up).
UNDECLARED = "<extra field>"

#: Where a request value comes from: the first part of every FastAPI error ``loc``.
_LOC_ROOTS = frozenset({"body", "query", "path", "header", "cookie"})

#: ``ctx`` keys whose values come from the schema (limits, patterns, choices) or are counts:
#: a message rendered from only these cannot carry submitted text. Any other key (``error``
#: of a ``value_error``, ``tag`` of a union, ...) may hold the input itself.
_SAFE_CTX = frozenset({
    "expected", "pattern", "min_length", "max_length", "actual_length", "field_type", "ge",
    "gt", "le", "lt", "multiple_of", "max_digits", "decimal_places", "whole_digits",
})  # fmt: skip

#: Fixed messages for error types whose own message may quote the input.
_FIXED_MSG = {"json_invalid": "JSON decode error", "value_error": "invalid value"}


def validation_detail(
    request: Request, errors: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The 422 ``detail``: per error its ``loc``, ``msg`` and ``type``, none of them able to
    carry what the client sent.

    ``input``, ``ctx`` and ``url`` are dropped. A ``loc`` part is kept when it is a list index
    (an int) or a name the matched route declares (a parameter, a body field at any depth,
    their aliases, see :func:`declared_names`); any other part (a key the client made up, as
    in an ``extra_forbidden`` error) becomes :data:`UNDECLARED`. ``msg`` is pydantic's when
    it is rendered from schema values only (:data:`_SAFE_CTX`), else a fixed text per type.
    """
    route = request.scope.get("route")
    names = declared_names(route) if isinstance(route, APIRoute) else frozenset()
    detail = []
    for err in errors:
        loc = list(err.get("loc", ()))
        safe_loc: list[str | int] = [
            part if _declared(part, names, first=index == 0 and part in _LOC_ROOTS)
            else UNDECLARED
            for index, part in enumerate(loc)
        ]  # fmt: skip
        kind = str(err.get("type", "invalid"))
        ctx = err.get("ctx") or {}
        if kind in _FIXED_MSG:
            msg = _FIXED_MSG[kind]
        elif set(ctx) <= _SAFE_CTX:
            msg = str(err.get("msg", ""))
        else:
            msg = "invalid value"
        detail.append({"loc": safe_loc, "msg": msg, "type": kind})
    return detail


def _declared(part: object, names: frozenset[str], *, first: bool) -> bool:
    if first:
        return True
    if isinstance(part, int) and not isinstance(part, bool):
        return True
    return isinstance(part, str) and part in names


def declared_names(route: APIRoute) -> frozenset[str]:
    """Every name a route declares: its path, query, header and cookie parameters and body
    fields (names and aliases), with the fields of the pydantic models they nest, at any
    depth, across its sub-dependencies. Cached on the route (routes are not hashable)."""
    cached: frozenset[str] | None = getattr(route, "_goldwatch_declared_names", None)
    if cached is not None:
        return cached
    names: set[str] = set()
    stack: list[Dependant] = [route.dependant]
    while stack:
        current = stack.pop()
        stack.extend(current.dependencies)
        params = (*current.path_params, *current.query_params, *current.header_params,
                  *current.cookie_params, *current.body_params)  # fmt: skip
        for param in params:
            names.update(n for n in (param.name, param.alias) if isinstance(n, str))
            _model_names(getattr(param.field_info, "annotation", None), names, set())
    cached = frozenset(names)
    route._goldwatch_declared_names = cached  # type: ignore[attr-defined]
    return cached


def _model_names(annotation: Any, names: set[str], seen: set[int]) -> None:
    """Add the field names and aliases of every pydantic model in ``annotation``."""
    if annotation is None or id(annotation) in seen:
        return
    seen.add(id(annotation))
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        for name, field in annotation.model_fields.items():
            names.add(name)
            names.update(a for a in (field.alias, field.validation_alias) if isinstance(a, str))
            _model_names(field.annotation, names, seen)
        return
    for arg in typing.get_args(annotation):
        _model_names(arg, names, seen)


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
