"""FastAPI dependencies: the runtime and the bearer-token check."""

from __future__ import annotations

import hmac
from typing import Annotated

from fastapi import Depends, HTTPException, Request, status

from service.api.runtime import Runtime


def get_runtime(request: Request) -> Runtime:
    """Return the process runtime stored on the app by the lifespan."""
    return request.app.state.runtime  # type: ignore[no-any-return]


RuntimeDep = Annotated[Runtime, Depends(get_runtime)]


def require_token(request: Request, runtime: RuntimeDep) -> None:
    """Check ``Authorization: Bearer <token>`` in constant time.

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
