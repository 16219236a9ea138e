"""``goldwatch serve``: bind the port, build the runtime (source, pipeline, state) and serve
``/metrics`` and the HTTP API with uvicorn until SIGTERM/SIGINT. The uvicorn server and its
exit status after a stop are :mod:`service.api.serving`'s; the wiring is
:mod:`service.runtime.process`'s.
"""

from __future__ import annotations

import logging
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from service import __version__
from service.cli.common import (
    EXIT_STOP_FAILED,
    _fail,
    _notices,
    _settings,
    _stoppable_start_up,
    config_option,
)

if TYPE_CHECKING:
    from service.settings import Settings


log = logging.getLogger("goldwatch")


@click.command("serve")
@config_option
@click.option("--host", default=None, help="Override api.host.")
@click.option("--port", type=click.IntRange(0, 65535), default=None, help="Override api.port.")
def serve_command(config: Path | None, host: str | None, port: int | None) -> None:
    """Run the service: the configured source, the pipeline, /metrics and the HTTP API.

    Stops cleanly on SIGTERM/SIGINT: the current batch finishes, state is checkpointed and
    offsets committed.
    """
    from service.api import listen

    with _stoppable_start_up("service"):
        settings = _settings(config)
        overrides = {k: v for k, v in {"host": host, "port": port}.items() if v is not None}
        if overrides:
            api = settings.api.model_copy(update=overrides)
            settings = settings.model_copy(update={"api": api})
        try:  # before anything heavy: a taken port is one line and exit 2, not uvicorn's exit 3
            sock = listen.bind(settings.api.host, settings.api.port)
        except listen.ListenError as exc:
            _fail(str(exc))
            return
        with sock:
            _serve(settings, sock)


def _serve(settings: Settings, sock: socket.socket) -> None:
    """Start the runtime and serve on the bound socket until SIGTERM/SIGINT. The state file
    is opened first, then the port answers while the pipeline loads on a thread
    (:func:`service.api.app.create_app`: ``POST /v1/traces`` acknowledges spans into the
    state file meanwhile, ``/readyz`` says 503 until the pipeline is ready).

    Returns (exit status 0) after a clean stop: uvicorn would re-raise the signal and end
    with -15/143 (:mod:`service.api.serving`). Exits 2 when the runtime cannot be built or
    the app does not start (its lifespan failed; the log says why), 1 when the stop was not
    clean (:func:`service.api.serving.shutdown_problem`: state maybe not checkpointed)."""

    from service.api.app import create_app
    from service.api.serving import GracefulServer, server_config, shutdown_problem
    from service.runtime.process import Runtime
    from service.settings.checks import dead_letter_problems, secret_problems, state_problems
    from service.state import StateError

    # secrets and the state path first: the runtime creates the state file (and its folder)
    problems = secret_problems(settings) + state_problems(settings)
    problems += dead_letter_problems(settings)
    if problems:
        _fail("; ".join(problems))
    try:  # the state file now; the pipeline on a thread once the port answers
        runtime = Runtime(settings, defer=True)
    except (StateError, ValueError, OSError) as exc:
        _fail(str(exc))
        return
    stopping: list[GracefulServer] = []

    def load_failed() -> None:  # the loader thread: stop serving, exit 2 below
        for server in stopping:
            server.should_exit = True

    app = create_app(settings, runtime, on_load_failed=load_failed)
    click.echo(
        f"goldwatch {__version__}: source {settings.source.kind}; API, docs and metrics on "
        f"http://{settings.api.host}:{settings.api.port} (/docs, /metrics, /v1/status)",
        err=True,
    )
    for notice in _notices(settings):
        log.warning(notice)
    server = GracefulServer(server_config(
        app, settings.api, log_level="warning", timeout_graceful_shutdown=20, lifespan="on"
    ))  # fmt: skip
    stopping.append(server)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    if runtime.load_error is not None:
        _fail(runtime.load_error)
    if not server.started:
        _fail("the service did not start (the log above says why)")
    if not runtime.loaded.is_set():  # stopped while the pipeline was loading
        click.echo("goldwatch: stopped before the service started (nothing was consumed; "
                   "spans acknowledged on /v1/traces meanwhile are in the state file)",
                   err=True)  # fmt: skip
        return
    problem = shutdown_problem(server, runtime)
    if problem is not None:
        click.echo(f"goldwatch: error: stopped, but not cleanly: {problem}", err=True)
        sys.exit(EXIT_STOP_FAILED)
