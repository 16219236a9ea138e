"""Slow and idle HTTP clients against a real ``goldwatch serve`` on loopback (issue 19 item 5).

The probe held 1,100 half-sent requests open from one client: nothing timed them out, the
process reached its 1,024 open files, and ``/healthz``, ``/metrics`` and the API stopped
answering. Here a bounded number of slow connections (silent ones, and ones that send part of
their headers) is opened while health and metrics are asked over fresh connections; each slow
connection must then be answered 408 and closed by the server (a positive marker: the bytes
arrive, no "sleep, then assert nothing happened").
"""

from __future__ import annotations

import resource
import select
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.api.serving import ACCEPT_FAILED
from tests.acceptance.service_process import TOKEN, ServiceProcess

pytestmark = [pytest.mark.slow]

#: Bound of the wait for the server's answer on a slow socket (the deadline is 2 s).
ANSWER_WAIT_S = 30.0
PARTIAL = b"GET /v1/status HTTP/1.1\r\nHost: goldwatch\r\nX-Slow: "


def _config(**api: Any) -> dict[str, Any]:
    return {"source": {"kind": "none"}, "analytics": {"enabled": False},
            "api": {"request_read_timeout_s": 2.0, "keep_alive_timeout_s": 2.0, **api}}  # fmt: skip


def _open(port: int, n: int, partial: bool) -> list[socket.socket]:
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=10)
        if partial:
            s.sendall(PARTIAL)
        socks.append(s)
    return socks


def _answer(s: socket.socket, timeout_s: float = ANSWER_WAIT_S) -> bytes:
    """Everything the server sends until it closes (``b""`` if it closed silently); fails
    when nothing ends within ``timeout_s``."""
    s.settimeout(timeout_s)
    chunks = []
    while chunk := s.recv(65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _closed_by_server(s: socket.socket) -> bool:
    """True when the server answered 408 and closed, or reset the connection (an evicted
    connection is closed at once: request bytes not read yet turn the close into a reset)."""
    try:
        return _answer(s).startswith(b"HTTP/1.1 408 ")
    except ConnectionResetError:
        return True


def _healthy(service: ServiceProcess) -> bool:
    with httpx.Client(base_url=service.base_url, timeout=10) as fresh:  # a new connection
        return (fresh.get("/healthz").status_code == 200
                and fresh.get("/metrics").status_code == 200)  # fmt: skip


@contextmanager
def _open_files_limit(soft: int) -> Iterator[None]:
    """Lower this process's soft ``RLIMIT_NOFILE`` (children started inside inherit it)."""
    before = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, before[1]))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, before)


def test_slow_and_silent_clients_get_408_and_health_answers(tmp_path: Path) -> None:
    """20 silent connections and 20 that sent part of their headers: health and metrics answer
    over fresh connections meanwhile, and every slow one gets ``408`` and is closed within the
    2 s read deadline (today: held open forever)."""
    service = ServiceProcess.start(tmp_path, _config())
    socks: list[socket.socket] = []
    try:
        socks = _open(service.port, 20, partial=False) + _open(service.port, 20, partial=True)
        assert _healthy(service)
        answers = [_answer(s) for s in socks]
        assert all(a.startswith(b"HTTP/1.1 408 ") for a in answers), answers[:3]
        assert _healthy(service)
        assert service.alive
    finally:
        for s in socks:
            s.close()
        service.kill()


def test_more_slow_clients_than_open_files_keep_health_answering(tmp_path: Path) -> None:
    """The probe's attack at a smaller scale: ``serve`` runs under a 256 open-files limit (so
    at most 256 - 128 = 128 HTTP connections) and one client opens 300 half-sent requests.
    Each connection past the bound evicts the oldest slow one (closed) and health and
    metrics keep answering (today: accept fails with EMFILE and health stops answering)."""
    with _open_files_limit(256):
        service = ServiceProcess.start(tmp_path, _config(request_read_timeout_s=600))
    socks: list[socket.socket] = []
    try:
        socks = _open(service.port, 300, partial=True)
        assert _healthy(service)
        # the 300 - 128 oldest were evicted, in order, plus one for each health request above
        evicted = [s for s in socks if select.select([s], [], [], 0)[0]]
        assert len(evicted) >= 300 - 128, len(evicted)
        assert all(_closed_by_server(s) for s in socks[: 300 - 128])
        assert socks[-1] not in evicted  # the newest slow one is still waiting
        assert service.alive
    finally:
        for s in socks:
            s.close()
        service.kill()


def test_failed_accepts_under_the_open_files_limit_are_logged_condensed(tmp_path: Path) -> None:
    """The trial probe's flood: under a 256 open-files limit, a burst of 400 connections (200
    sending part of an authenticated POST body) makes ``accept`` fail with EMFILE, and
    asyncio logged "socket.accept() out of system resource" with a traceback for each try
    (1,967 times in 14 s). Now: condensed lines with a count, no traceback; health answers."""
    with _open_files_limit(256):
        service = ServiceProcess.start(tmp_path, _config(request_read_timeout_s=600))
    socks: list[socket.socket] = []
    body = (b"POST /v1/events HTTP/1.1\r\nHost: goldwatch\r\nAuthorization: Bearer "
            + TOKEN.encode() + b"\r\nContent-Type: application/json\r\n"
            b"Content-Length: 100000\r\n\r\n[{\"a\":")  # fmt: skip
    try:
        for n in range(400):  # the kernel queues them (listen backlog): no wait on the server
            s = socket.create_connection(("127.0.0.1", service.port), timeout=10)
            s.sendall(body if n % 2 else PARTIAL)
            socks.append(s)
        assert _healthy(service)
        log_text = (tmp_path / "serve.log").read_text(encoding="utf-8", errors="replace")
        lines = [line for line in log_text.splitlines() if "could not accept a connection" in line]
        assert lines, log_text[-3000:]  # the descriptors did run out (a positive marker)
        assert "EMFILE" in lines[0] and "Raise the open-files limit" in lines[0], lines[0]
        assert ACCEPT_FAILED not in log_text and "Traceback" not in log_text, log_text[-3000:]
        assert service.alive
    finally:
        for s in socks:
            s.close()
        service.kill()
