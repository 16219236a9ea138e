"""The API's defences against a busy pipeline thread (issue 9, ``/metrics`` under load).

* :class:`service.api.app.BodyLimit` is plain ASGI: driven here message by message, it must
  answer 400/413 before the route runs, and hand a chunked body on byte for byte.
* While the app serves, the GIL switch interval is :data:`service.api.app.SWITCH_INTERVAL_S`
  (a request waits at most that long per hand-over between threads); the previous value comes
  back at shutdown.

Response times themselves are measured by ``benchmarks/soak.py``, not asserted here.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from service.api.app import SWITCH_INTERVAL_S, BodyLimit, create_app
from service.runtime.process import Runtime
from service.settings import load_settings

LIMIT = 10


class Echo:
    """An ASGI app that reads the whole body and answers it back; remembers the calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.bodies: list[bytes] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.calls += 1
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        self.bodies.append(body)
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": body})


def _drive(
    method: str, headers: list[tuple[bytes, bytes]], messages: list[dict[str, Any]]
) -> tuple[Echo, list[dict[str, Any]]]:
    """Run ``BodyLimit(Echo)`` on one request; return the app and what was sent."""
    app = Echo()
    sent: list[dict[str, Any]] = []
    queue = list(messages)

    async def receive() -> dict[str, Any]:
        return queue.pop(0) if queue else {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = {"type": "http", "method": method, "path": "/v1/events", "headers": headers}
    asyncio.run(BodyLimit(app, limit=LIMIT)(scope, receive, send))
    return app, sent


def _status_and_json(sent: list[dict[str, Any]]) -> tuple[int, Any]:
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], json.loads(body)


def _chunks(*parts: bytes) -> list[dict[str, Any]]:
    return [
        {"type": "http.request", "body": part, "more_body": i < len(parts) - 1}
        for i, part in enumerate(parts)
    ]


def test_declared_length_over_the_limit_is_refused_before_the_route() -> None:
    app, sent = _drive("POST", [(b"content-length", b"11")], _chunks(b"x" * 11))
    assert app.calls == 0
    assert _status_and_json(sent) == (
        413,
        {"error": "too_large", "detail": "request body over 10 bytes"},
    )


def test_declared_length_at_the_limit_passes() -> None:
    app, sent = _drive("POST", [(b"content-length", b"10")], _chunks(b"0123456789"))
    assert app.bodies == [b"0123456789"]
    assert sent[0]["status"] == 200


def test_malformed_length_is_a_bad_request() -> None:
    app, sent = _drive("POST", [(b"content-length", b"12abc")], _chunks(b"x"))
    assert app.calls == 0
    assert _status_and_json(sent) == (
        400,
        {"error": "bad_request", "detail": "invalid Content-Length"},
    )


def test_chunked_body_within_the_limit_reaches_the_route_whole() -> None:
    app, sent = _drive("POST", [], _chunks(b"abc", b"", b"defg", b"hij"))
    assert app.bodies == [b"abcdefghij"]
    assert sent[1]["body"] == b"abcdefghij"


def test_chunked_body_over_the_limit_is_refused_before_the_route() -> None:
    app, sent = _drive("PUT", [], _chunks(b"abcdef", b"ghijk", b"never read"))
    assert app.calls == 0
    assert _status_and_json(sent)[0] == 413


def test_client_gone_mid_body_means_no_route_and_no_answer() -> None:
    app, sent = _drive("PATCH", [], _chunks(b"abc", b"def")[:1])  # more_body, then disconnect
    assert (app.calls, sent) == (0, [])


def test_get_without_length_is_passed_on_unread() -> None:
    app, sent = _drive("GET", [], _chunks(b""))
    assert app.bodies == [b""]
    assert sent[0]["status"] == 200


@pytest.fixture()
def restore_switch_interval() -> Iterator[float]:
    before = sys.getswitchinterval()
    yield before
    sys.setswitchinterval(before)


def test_switch_interval_is_short_while_serving_and_restored(
    tmp_path: Path, restore_switch_interval: float
) -> None:
    sys.setswitchinterval(0.005)  # CPython's default
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"}, analytics={"enabled": False}
    )
    with TestClient(create_app(settings, Runtime(settings))) as client:
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S)
        assert client.get("/metrics").status_code == 200
    assert sys.getswitchinterval() == pytest.approx(0.005)


def test_a_shorter_interval_set_by_the_operator_is_kept(
    tmp_path: Path, restore_switch_interval: float
) -> None:
    sys.setswitchinterval(SWITCH_INTERVAL_S / 2)
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"}, analytics={"enabled": False}
    )
    with TestClient(create_app(settings, Runtime(settings))):
        assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S / 2)
    assert sys.getswitchinterval() == pytest.approx(SWITCH_INTERVAL_S / 2)
