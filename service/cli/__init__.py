"""The ``goldwatch`` command line: :func:`main`, the command group, assembled from one module
per command.

Exit codes: 0 success (serve: after a clean stop on SIGTERM/SIGINT); 1 a ``--fail-under``
gate failed, or serve's stop was not clean; 2 bad usage, configuration or input
(the message names the flag, file, line or field, never a question's text); 3 a retriever
failed while answering (unreachable, timed out, bad response).

Modules: :mod:`~service.cli.eval`, :mod:`~service.cli.serve`, :mod:`~service.cli.replay`,
:mod:`~service.cli.demo`, :mod:`~service.cli.topics`, :mod:`~service.cli.config` (``config
check``) and :mod:`~service.cli.candidates` hold one command (or group) each;
:mod:`service.settings.checks` holds the start-up file checks of ``config check`` and ``serve``;
:mod:`~service.cli.common` what they share (exit codes, options, error messages, start-up
signals). Each command imports what it needs when it runs, so ``goldwatch --help`` loads no
model, web server or Kafka client (``tests/cli/test_lazy_imports.py``).
"""

from __future__ import annotations

import logging
import sys

import click

from service import __version__
from service.cli.candidates import candidates_group
from service.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_RETRIEVER_FAILED,
    EXIT_STOP_FAILED,
    EXIT_USAGE,
    NO_PII_NOTICE,
    NO_TOKEN_NOTICE,
)
from service.cli.config import config_group
from service.cli.demo import demo_command
from service.cli.eval import eval_command
from service.cli.replay import replay_command
from service.cli.serve import serve_command
from service.cli.topics import topics_group

__all__ = [
    "EXIT_GATE_FAILED",
    "EXIT_RETRIEVER_FAILED",
    "EXIT_STOP_FAILED",
    "EXIT_USAGE",
    "NO_PII_NOTICE",
    "NO_TOKEN_NOTICE",
    "candidates_group",
    "config_group",
    "demo_command",
    "eval_command",
    "main",
    "replay_command",
    "serve_command",
    "topics_group",
]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="goldwatch")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """goldwatch: know, on live traffic, whether your RAG retrieval still works."""
    # Entry-point retrievers (and custom stages) live in the user's project: every command
    # imports them from the current folder first, then the Python path, as uvicorn and pytest
    # do (README, "entrypoint retriever"). The console script's sys.path[0] is its bin folder,
    # not the current one, so without this only `python -m` found them.
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Keep third-party chatter (HTTP clients, Kafka internals) quiet: their INFO lines (httpx
    # logs every request, e.g. each gold-set call of an `http` retriever) only with -vv, and
    # never their DEBUG.
    for name in ("httpx", "httpcore", "kafka"):
        logging.getLogger(name).setLevel(
            logging.INFO if verbose >= 2 else max(level, logging.WARNING)
        )


for _command in (eval_command, serve_command, replay_command, demo_command, topics_group,
                 config_group, candidates_group):  # fmt: skip
    main.add_command(_command)
