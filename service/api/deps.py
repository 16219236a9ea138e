"""FastAPI dependencies: the runtime and the bearer-token check, and the route class that
checks the token of a mutating request before its body is read."""

from __future__ import annotations

import hmac
from collections.abc import Callable, Coroutine
from typing import Annotated, Any

from fastapi import Depends, HTTPException, Request, Response, status
from fastapi.routing import APIRoute

from service.runtime.process import Runtime

#: Methods that change something: their routes answer 401/403 before looking at the body.
MUTATING_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def get_runtime(request: Request) -> Runtime:
    """Return the process runtime stored on the app by the lifespan."""
    return request.app.state.runtime  # type: ignore[no-any-return]


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def require_token(request: Request, runtime: RuntimeDep) -> None:
    """Check ``Authorization: Bearer <token>`` in constant time (as a dependency it documents
    the check in OpenAPI; :class:`TokenFirstRoute` runs it before the body is parsed).

    Raises:
        HTTPException: 401 without a bearer token, 403 with a wrong one or when no token is
            configured (mutating endpoints are then disabled).
    """
    configured = runtime.settings.api.token
    header = request.headers.get("authorization", "")
    scheme, _, supplied = header.partition(" ")
    if scheme.lower() != "bearer" or not supplied:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "bearer token required",
            headers={"WWW-Authenticate": "Bearer"},
        )
    if configured is None:
        raise HTTPException(
            status.HTTP_403_FORBIDDEN, "mutating endpoints are disabled: set api.token"
        )
    expected = configured.get_secret_value().encode("utf-8")
    if not hmac.compare_digest(supplied.strip().encode("utf-8"), expected):
        raise HTTPException(status.HTTP_403_FORBIDDEN, "invalid token")


TokenDep = Annotated[None, Depends(require_token)]


def require_json(request: Request) -> None:
    """Check that the request says its body is JSON: media type ``application/json`` (any
    case, parameters such as ``charset`` allowed).

    Raises:
        HTTPException: 415 for any other or a missing ``Content-Type``.
    """
    content_type = request.headers.get("content-type", "")
    if content_type.split(";")[0].strip().lower() != "application/json":
        raise HTTPException(status.HTTP_415_UNSUPPORTED_MEDIA_TYPE, "use application/json")


class TokenFirstRoute(APIRoute):
    """An ``APIRoute`` that, for a mutating method (:data:`MUTATING_METHODS`), checks the
    bearer token (:func:`require_token`) before FastAPI reads and validates the request
    body, path and query: FastAPI parses a JSON body before it solves any dependency, so
    with ``TokenDep`` alone an unauthenticated request with a malformed body got a 422
    listing the schema instead of 401. A route with a declared body then answers 415 to
    a body that is not ``application/json`` (:func:`require_json`), as ``/v1/events`` does,
    instead of a 422 from parsing it. Use as ``APIRouter(route_class=TokenFirstRoute)``;
    other methods are untouched.
    """

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()
        if not (self.methods and self.methods & MUTATING_METHODS):
            return handler
        has_body = self.body_field is not None

        async def token_first(request: Request) -> Response:
            if request.method in MUTATING_METHODS:
                require_token(request, get_runtime(request))
                if has_body:
                    require_json(request)
            return await handler(request)

        return token_first
