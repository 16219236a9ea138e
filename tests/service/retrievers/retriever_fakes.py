"""Test doubles for the retriever tests: a hand corpus and a real local HTTP server."""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from service.records import Passage

#: Token counts (tokenize, no stop words): p1 9, p2 9, p3 11, p4 9 -> avgdl 9.5.
HAND_CORPUS: tuple[Passage, ...] = (
    Passage("p1", "The university offers a scholarship for first year students."),
    Passage("p2", "Students pay the tuition fee before the first term."),
    Passage("p3", "The library opens at nine and closes at midnight for students."),
    Passage("p4", "Parking permits for students cost forty euros per term."),
)


@dataclass
class Reply:
    """One scripted answer: HTTP status, raw body and a delay before answering (seconds)."""

    status: int = 200
    body: bytes = b'{"results": []}'
    delay_s: float = 0.0


def default_responder(payload: dict[str, Any]) -> Reply:
    """Answer with five fixed results, best first, cut to the requested k."""
    results = [{"id": f"d{i}", "score": 1.0 / i} for i in range(1, 6)][: int(payload["k"])]
    return Reply(200, json.dumps({"results": results}).encode())


@dataclass
class FakeServer:
    """A real HTTP server on 127.0.0.1 (ephemeral port) speaking the retriever protocol.

    ``script`` replies are used first, in order; then ``responder`` answers.
    ``requests`` records every received JSON body, ``headers`` every request's headers.
    """

    url: str = ""
    script: deque[Reply] = field(default_factory=deque)
    responder: Callable[[dict[str, Any]], Reply] = default_responder
    requests: list[dict[str, Any]] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)


def _handler(server: FakeServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 (http.server API)
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            payload = json.loads(body)
            server.requests.append(payload)
            server.headers.append({k.lower(): v for k, v in self.headers.items()})
            reply = server.script.popleft() if server.script else server.responder(payload)
            time.sleep(reply.delay_s)
            try:
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply.body)))
                self.end_headers()
                self.wfile.write(reply.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (timeout test)

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

    return Handler


@contextmanager
def serve() -> Iterator[FakeServer]:
    """Run a :class:`FakeServer` on 127.0.0.1, port 0, in a thread, for the ``with`` block."""
    state = FakeServer()
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(state))
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}/search"
    thread = threading.Thread(target=httpd.serve_forever, args=(0.01,), daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
