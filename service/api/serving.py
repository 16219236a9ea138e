"""uvicorn's server for ``goldwatch serve``: exit status 0 after a clean stop, and an HTTP
protocol that survives slow and idle clients.

uvicorn's :meth:`uvicorn.Server.capture_signals` (0.54, as installed) records each SIGTERM or
SIGINT it handles and, once its graceful shutdown is over, raises the signal again with the
previous handler restored: the process then dies by the signal (status -15, or 143 in a shell) even
though it stopped cleanly and checkpointed, which Kubernetes, systemd and CI read as a
failure. :class:`GracefulServer` handles the signals the same way without recording them, so
:meth:`uvicorn.Server.run` returns and the caller picks the status from
:func:`shutdown_problem`: 0 after a clean stop, non-zero when the stop was not clean.

Slow and idle clients (:class:`GuardedH11Protocol`, built by :func:`server_config`): uvicorn
times out only idle keep-alive connections (``timeout_keep_alive``), after a response. A
connection that sends nothing, or a request's headers or body a byte at a time, was held open
forever, and 1,100 of them from one client used up the process's 1,024 file descriptors, so
``/healthz``, ``/metrics`` and the API stopped answering. Here every request must be read
whole (headers and body) within ``api.request_read_timeout_s`` of its first byte (of the
connection, for the first request), or the connection gets ``408`` and is closed; idle
keep-alive connections close after ``api.keep_alive_timeout_s``; and at most
``api.max_connections`` connections are open at once (also kept under the process's
open-files limit). A connection past the bound first evicts the oldest one still being read
(a slow client; a health check sends its request at once), and only when every connection is
running a request is it answered ``503`` with ``Retry-After`` and closed. h11 caps the header
block (``h11_max_incomplete_event_size``, 16 KiB by default: ``431``/``400`` past it).

Failed accepts (:class:`AcceptFailureLog`): when the process runs out of file descriptors
(``EMFILE``) asyncio logs "socket.accept() out of system resource" with a traceback for every
``accept`` it tries in a tick — up to the listen backlog (2,048) at a time, 1,967 times in
14 s in the trial probe. :class:`GracefulServer` condenses them into one line per
:data:`ACCEPT_LOG_INTERVAL_S` with the count.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import resource
import signal
import socket
from collections.abc import Callable
from types import FrameType
from typing import Any, Protocol

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

#: Seconds a connection answered 503 stays half-open, reading and dropping its request.
REFUSE_LINGER_S = 1.0

#: Seconds between two log lines about failed accepts (the first is logged at once).
ACCEPT_LOG_INTERVAL_S = 10.0
#: The message asyncio's event loop reports a failed ``accept`` with (EMFILE, ENFILE,
#: ENOBUFS, ENOMEM), ``asyncio.selector_events`` of CPython 3.8-3.13.
ACCEPT_FAILED = "socket.accept() out of system resource"

#: File descriptors kept free of HTTP connections: the state database and its journal,
#: Kafka sockets, log and dead-letter files, the listening socket, imports.
RESERVED_FDS = 128


def _response(status: bytes, body: bytes, extra: bytes = b"") -> bytes:
    return (b"HTTP/1.1 " + status + b"\r\ncontent-type: text/plain; charset=utf-8\r\n"
            + extra + b"connection: close\r\ncontent-length: " + str(len(body)).encode()
            + b"\r\n\r\n" + body)  # fmt: skip


REQUEST_TIMEOUT = _response(b"408 Request Timeout", b"request not received in time\n")
BUSY = _response(b"503 Service Unavailable", b"too many connections; retry shortly\n",
                 b"retry-after: 1\r\n")  # fmt: skip


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a read deadline per request and a bound on connections.

    Configure through :func:`server_config` (class attributes of a subclass it makes):
    ``read_timeout_s`` (seconds from a request's first byte, or the connection's start, until
    its headers and body are read) and ``max_connections`` (≥ 1). See the module docstring.
    """

    read_timeout_s: float = 10.0
    max_connections: int = 512
    _read_timer: asyncio.TimerHandle | None = None
    _opened: float = 0.0
    _refused: bool = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Admit the connection (evicting the oldest slow one, or answering 503 when every
        connection runs a request) and start its read deadline."""
        super().connection_made(transport)
        self._opened = self.loop.time()
        admitted = sum(1 for c in self.connections if not getattr(c, "_refused", False))
        if admitted > self.max_connections and not self._evict_one():
            log.warning("HTTP connection refused with 503: %d open", admitted - 1)
            self._refuse()
            return
        self._arm()

    def _refuse(self) -> None:
        """Answer 503, half-close, and close after :data:`REFUSE_LINGER_S`: closing at once
        with the client's request unread would send a reset that can discard the answer."""
        self._refused = True
        self.transport.write(BUSY)
        if self.transport.can_write_eof():
            self.transport.write_eof()
            self.loop.call_later(REFUSE_LINGER_S, self.transport.close)
        else:
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        """Feed uvicorn, then keep the deadline only while a request is being read."""
        if self._refused:
            return  # answered 503: the request is read and dropped until the close
        super().data_received(data)
        if self.transport.is_closing():
            self._disarm()
        elif self.reading():
            if self._read_timer is None:
                self._arm()  # the first byte of a new request on a kept-alive connection
        else:
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        """As uvicorn, and drop the deadline."""
        self._disarm()
        super().connection_lost(exc)

    def reading(self) -> bool:
        """True while the connection waits for (more of) a request: no request yet, its
        headers or body incomplete, or nothing sent since the last response."""
        cycle = self.cycle
        return cycle is None or cycle.response_complete or cycle.more_body

    def _arm(self) -> None:
        self._disarm()
        self._read_timer = self.loop.call_later(self.read_timeout_s, self._read_timed_out)

    def _disarm(self) -> None:
        if self._read_timer is not None:
            self._read_timer.cancel()
            self._read_timer = None

    def _read_timed_out(self) -> None:
        self._read_timer = None
        if not self.transport.is_closing() and self.reading():
            self._close_slow()

    def _close_slow(self) -> None:
        """Answer 408 (unless a response is under way) and close; uvicorn's
        ``connection_lost`` then tells an app still waiting for the body "disconnect"."""
        self._disarm()
        cycle = self.cycle
        if cycle is None or cycle.response_complete or not cycle.response_started:
            self.transport.write(REQUEST_TIMEOUT)
        self.transport.close()

    def _evict_one(self) -> bool:
        """Close the oldest other connection still reading a request; ``False`` if none."""
        slow = [c for c in self.connections if c is not self and isinstance(c, GuardedH11Protocol)
                and not c._refused and c.reading() and not c.transport.is_closing()]  # fmt: skip
        if not slow:
            return False
        min(slow, key=lambda c: c._opened)._close_slow()
        return True


def connection_bound(configured: int, soft_limit: int | None = None) -> int:
    """``configured`` capped so that HTTP connections leave :data:`RESERVED_FDS` of the
    process's open-files limit (``RLIMIT_NOFILE`` soft limit unless given) to the rest;
    at least 16. A limit of ``RLIM_INFINITY`` leaves ``configured`` as it is."""
    if soft_limit is None:
        soft_limit = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    if soft_limit == resource.RLIM_INFINITY or soft_limit <= 0:
        return configured
    return max(16, min(configured, soft_limit - RESERVED_FDS))


def server_config(app: Any, api: Any, **kwargs: Any) -> uvicorn.Config:
    """The :class:`uvicorn.Config` of ``goldwatch serve``: ``app`` with the slow-client guard
    of ``api`` (a :class:`service.settings.ApiConfig`: ``request_read_timeout_s``,
    ``keep_alive_timeout_s``, ``max_connections``, ``max_header_bytes``); ``kwargs`` go to
    uvicorn (log level, graceful-shutdown timeout, lifespan)."""
    bound = connection_bound(api.max_connections)
    if bound < api.max_connections:
        log.warning("api.max_connections %d capped at %d by the open-files limit",
                    api.max_connections, bound)  # fmt: skip
    protocol = type("GoldwatchH11Protocol", (GuardedH11Protocol,),
                    {"read_timeout_s": api.request_read_timeout_s,
                     "max_connections": bound})  # fmt: skip
    return uvicorn.Config(
        app,
        http=protocol,
        timeout_keep_alive=api.keep_alive_timeout_s,
        h11_max_incomplete_event_size=api.max_header_bytes,
        **kwargs,
    )


ExceptionHandler = Callable[[asyncio.AbstractEventLoop, dict[str, Any]], object]


class AcceptFailureLog:
    """An event-loop exception handler that condenses failed accepts.

    A context whose message is :data:`ACCEPT_FAILED` is counted instead of logged with a
    traceback: the first is logged at once as one line (no traceback), then at most one line
    per ``interval_s`` with the number of failed accepts since the previous line, the errno
    name and what to do; a line for the last ones is logged ``interval_s`` after the previous
    line. Every other context goes to ``previous`` (the loop's default handler when
    ``None``).

    Args:
        interval_s: seconds between two lines (> 0).
        previous: the handler that was installed before.
    """

    def __init__(
        self, interval_s: float = ACCEPT_LOG_INTERVAL_S, previous: ExceptionHandler | None = None
    ) -> None:
        self.interval_s, self.previous = interval_s, previous
        self.unlogged = 0  # failed accepts not in a log line yet
        self.logged = 0  # failed accepts reported so far
        self._last_line: float | None = None  # loop.time() of the last line
        self._reason = ""
        self._flush_pending = False

    def __call__(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """Handle one context (see the class docstring)."""
        if context.get("message") != ACCEPT_FAILED:
            if self.previous is not None:
                self.previous(loop, context)
            else:
                loop.default_exception_handler(context)
            return
        exc = context.get("exception")
        code = getattr(exc, "errno", None)
        self._reason = errno.errorcode.get(code, "error") if isinstance(code, int) else "error"
        self.unlogged += 1
        now = loop.time()
        if self._last_line is None or now - self._last_line >= self.interval_s:
            self.flush(loop)
        elif not self._flush_pending:
            self._flush_pending = True
            loop.call_later(self._last_line + self.interval_s - now, self.flush, loop)

    def flush(self, loop: asyncio.AbstractEventLoop) -> None:
        """Log one line for the failed accepts not logged yet (nothing when none)."""
        self._flush_pending = False
        if not self.unlogged:
            return
        last = self._last_line
        first = last is None
        since = "" if last is None else f" in the last {loop.time() - last:.0f} s"
        log.error(
            "HTTP server could not accept a connection (%d failed accepts%s; %s: out of file "
            "descriptors or memory); connections wait in the listen backlog. Raise the "
            "open-files limit or lower api.max_connections%s", self.unlogged, since,
            self._reason,
            f"; at most one such line per {self.interval_s:g} s" if first else "",
        )  # fmt: skip
        self.logged += self.unlogged
        self.unlogged = 0
        self._last_line = loop.time()


class GracefulServer(uvicorn.Server):
    """:class:`uvicorn.Server` that does not re-raise the stop signal after shutting down.

    The first SIGTERM or SIGINT starts the graceful shutdown (``should_exit``); a second
    SIGINT stops waiting for open connections and skips the application's shutdown
    (``force_exit``), as in uvicorn. The last signal handled is kept in :attr:`stopped_by`.
    """

    #: The last stop signal handled (``signal.SIGTERM``, ``signal.SIGINT``), or ``None``.
    stopped_by: int | None = None

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """As uvicorn, with failed accepts condensed in the log (:class:`AcceptFailureLog`)."""
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(AcceptFailureLog(previous=loop.get_exception_handler()))
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Ask the server to stop (see the class docstring); the signal is not re-raised."""
        self.stopped_by = sig
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True
        else:
            self.should_exit = True


class StopReport(Protocol):
    """What :func:`shutdown_problem` asks the runtime: why its stop was not clean."""

    def stop_problem(self) -> str | None:
        """``None`` after a clean stop, else why not (never user data)."""
        ...


def shutdown_problem(server: uvicorn.Server, runtime: StopReport) -> str | None:
    """Why the shutdown of a server that started was not clean, or ``None`` when it was.

    Not clean: a second SIGINT forced the exit (the application's shutdown, which
    checkpoints, was skipped); the application's shutdown raised (uvicorn logged it as
    "Application shutdown failed"); or the runtime reports a problem with its own stop
    (:meth:`service.runtime.process.Runtime.stop_problem`: its consumer thread did not end, or
    its last checkpoint failed).
    """
    if server.force_exit:
        return "forced to exit before the shutdown finished (a second SIGINT)"
    lifespan = getattr(server, "lifespan", None)
    if lifespan is not None and (lifespan.shutdown_failed or lifespan.error_occurred):
        return "the application's shutdown failed (the log above says why)"
    return runtime.stop_problem()
