"""uvicorn's server for ``goldwatch serve``, ending with exit status 0 after a clean stop.

uvicorn's :meth:`uvicorn.Server.capture_signals` (0.54, as installed) records each SIGTERM or
SIGINT it handles and, once its graceful shutdown is over, raises the signal again with the
previous handler restored: the process then dies by the signal (status -15, or 143 in a shell) even
though it stopped cleanly and checkpointed, which Kubernetes, systemd and CI read as a
failure. :class:`GracefulServer` handles the signals the same way without recording them, so
:meth:`uvicorn.Server.run` returns and the caller picks the status from
:func:`shutdown_problem`: 0 after a clean stop, non-zero when the stop was not clean.
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import Protocol

import uvicorn


class GracefulServer(uvicorn.Server):
    """:class:`uvicorn.Server` that does not re-raise the stop signal after shutting down.

    The first SIGTERM or SIGINT starts the graceful shutdown (``should_exit``); a second
    SIGINT stops waiting for open connections and skips the application's shutdown
    (``force_exit``), as in uvicorn. The last signal handled is kept in :attr:`stopped_by`.
    """

    #: The last stop signal handled (``signal.SIGTERM``, ``signal.SIGINT``), or ``None``.
    stopped_by: int | None = None

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
    (:meth:`service.api.runtime.Runtime.stop_problem`: its consumer thread did not end, or
    its last checkpoint failed).
    """
    if server.force_exit:
        return "forced to exit before the shutdown finished (a second SIGINT)"
    lifespan = getattr(server, "lifespan", None)
    if lifespan is not None and (lifespan.shutdown_failed or lifespan.error_occurred):
        return "the application's shutdown failed (the log above says why)"
    return runtime.stop_problem()
