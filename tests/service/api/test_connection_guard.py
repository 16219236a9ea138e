"""The slow-client guard of ``service/api/serving.py`` on a real uvicorn server on loopback,
with a tiny ASGI app whose ``/block`` route waits until the test lets it go."""

from __future__ import annotations

import asyncio
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn

from service.api.serving import RESERVED_FDS, GuardedH11Protocol, connection_bound
from tests.ports import free_port

RELEASE = threading.Event()
#: ``/block`` requests the app has entered (their requests were read whole).
ENTERED: list[str] = []


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    if scope["path"] == "/block":
        ENTERED.append(scope["path"])
        while not RELEASE.is_set():
            await asyncio.sleep(0.01)
    await send({"type": "http.response.start", "status": 200,
                "headers": [(b"content-type", b"text/plain")]})  # fmt: skip
    await send({"type": "http.response.body", "body": b"ok"})


class TwoConnections(GuardedH11Protocol):
    read_timeout_s = 600.0
    max_connections = 2


@pytest.fixture
def server() -> Iterator[int]:
    port = free_port()
    config = uvicorn.Config(app, host="127.0.0.1", port=port, http=TwoConnections,
                            log_level="warning", lifespan="off")  # fmt: skip
    running = uvicorn.Server(config)
    thread = threading.Thread(target=running.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not running.started:
        assert time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    RELEASE.clear()
    ENTERED.clear()
    try:
        yield port
    finally:
        RELEASE.set()
        running.should_exit = True
        thread.join(10)


def _request(port: int, path: str) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    s.sendall(f"GET {path} HTTP/1.1\r\nHost: t\r\n\r\n".encode())
    return s


def _wait_entered(n: int) -> None:
    deadline = time.monotonic() + 20
    while len(ENTERED) < n:
        assert time.monotonic() < deadline, "the app did not get the requests"
        time.sleep(0.01)


def _read_all(s: socket.socket) -> bytes:
    chunks = []
    while chunk := s.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _closed_by_server(s: socket.socket) -> bool:
    """True when the server answered 408 and closed, or reset the connection (it closes an
    evicted one at once, so request bytes it had not read yet turn the close into a reset)."""
    try:
        answer = _read_all(s)
    except ConnectionResetError:
        return True
    return answer.startswith(b"HTTP/1.1 408 ")


def test_past_the_bound_with_every_connection_busy_answers_503(server: int) -> None:
    """Two connections run requests (the app holds them): a third connection gets ``503``
    with ``Retry-After`` and is closed; once the two are answered, new ones are served."""
    busy = [_request(server, "/block"), _request(server, "/block")]
    _wait_entered(2)  # both requests read whole: running, so not evictable
    refused = _request(server, "/")
    answer = _read_all(refused)
    assert answer.startswith(b"HTTP/1.1 503 "), answer
    assert b"retry-after: 1" in answer.lower()
    RELEASE.set()
    for s in busy:
        s.settimeout(20)
        assert s.recv(65536).startswith(b"HTTP/1.1 200 ")
        s.close()
    served = _request(server, "/")
    served.settimeout(20)
    assert served.recv(65536).startswith(b"HTTP/1.1 200 ")
    served.close()


def test_past_the_bound_the_oldest_slow_connection_makes_room(server: int) -> None:
    """One connection runs a request, one sent half its headers: a third connection evicts the
    half-sent one (closed) and is served."""
    busy = _request(server, "/block")
    _wait_entered(1)
    slow = socket.create_connection(("127.0.0.1", server), timeout=20)
    slow.sendall(b"GET / HTTP/1.1\r\nHost: t\r\n")  # accepted before the next one (FIFO)
    fresh = _request(server, "/")
    fresh.settimeout(20)
    assert fresh.recv(65536).startswith(b"HTTP/1.1 200 ")
    assert _closed_by_server(slow)
    RELEASE.set()
    busy.close()
    slow.close()
    fresh.close()


def test_connection_bound_leaves_room_under_the_open_files_limit() -> None:
    assert connection_bound(512, soft_limit=1024) == 512
    assert connection_bound(2000, soft_limit=1024) == 1024 - RESERVED_FDS
    assert connection_bound(512, soft_limit=100) == 16
