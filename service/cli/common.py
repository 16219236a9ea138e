"""What the ``goldwatch`` commands share: exit codes, the notices about a valid configuration,
the ``--config`` and ``--html`` options, loading the settings, error messages (one line on
stderr naming the flag, file or field, never a question's text) and the start-up signal
handling of the two commands that serve (``serve``, ``demo``).

Light on purpose: it imports click and the standard library only (the settings under
``TYPE_CHECKING``), so ``goldwatch --help`` stays fast.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:  # the commands import what they need: `goldwatch --help` loads no models
    from service.settings import Settings


class FilePath(click.Path):
    """:class:`click.Path` that refuses an empty value (``--history ''``), which
    :class:`pathlib.Path` would read as the current folder ``.`` and a command would then
    report as "not a regular file" about a path the user never typed. Exit code 2 (usage),
    naming the option.
    """

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        """``value`` as :class:`click.Path` converts it; an empty string fails (exit 2)."""
        if isinstance(value, str) and not value.strip():
            self.fail("an empty path names no file or folder", param, ctx)
        return super().convert(value, param, ctx)


EXIT_GATE_FAILED = 1
EXIT_STOP_FAILED = 1  # serve: the stop was not clean (a failed shutdown or last checkpoint)
EXIT_USAGE = 2
EXIT_RETRIEVER_FAILED = 3


#: What serve logs at start, and config check prints, while ``api.token`` is unset.
NO_PII_NOTICE = (
    "personal-data scrubbing is off ({why}): questions, answers, ids and labels are stored, "
    "logged and exported as they arrive, e-mail addresses and phone numbers included"
)


def _notices(settings: Settings) -> list[str]:
    """What an operator should know about a valid configuration: no gold set (gold-set
    comparisons off), the mutating endpoints are disabled (no token), or personal data is
    not scrubbed."""
    from service.settings import GOLD_SET_OFF

    notices = [GOLD_SET_OFF] if settings.gold_set is None else []
    if settings.api.token is None:
        notices.append(NO_TOKEN_NOTICE)
    if not settings.analytics.enabled:
        notices.append(NO_PII_NOTICE.format(why="analytics.enabled is false"))
    elif not settings.analytics.pii:
        notices.append(NO_PII_NOTICE.format(why="analytics.pii is false"))
    elif _unkeyed_pseudonyms(settings):
        notices.append(UNKEYED_PSEUDONYM_NOTICE)
    return notices


#: What serve logs at start, and config check prints, while personal data is scrubbed with
#: no pseudonym key (a tenth trial: ``zoe.k@proton.me`` became the first 32 hex digits of its
#: plain SHA-256, and nothing said so).
UNKEYED_PSEUDONYM_NOTICE = (
    "analytics.pii_key is unset: event_id and user.id values holding personal data become "
    "unkeyed SHA-256 pseudonyms, which anyone can check a guessed id (an e-mail address) "
    "against; set GOLDWATCH_ANALYTICS__PII_KEY or analytics.pii_key_file (e.g. openssl rand "
    "-hex 32) and keep it (docs/security.md)"
)


def _unkeyed_pseudonyms(settings: Settings) -> bool:
    """Whether personal data is scrubbed into unkeyed (guessable) SHA-256 pseudonyms:
    analytics and its scrubbing on, and neither ``analytics.pii_key`` nor its file set."""
    analytics = settings.analytics
    return (
        analytics.enabled
        and analytics.pii
        and analytics.pii_key is None
        and analytics.pii_key_file is None
    )


NO_TOKEN_NOTICE = (
    "api.token is unset: the mutating endpoints (POST /v1/events, POST /v1/traces, "
    "POST /v1/shadow/evaluate, POST /v1/gold-candidates/{id}/accept and /reject) are refused "
    "(401 or 403) until it is set (GOLDWATCH_API__TOKEN or api.token_file)"
)


def _fail(message: str) -> None:
    click.echo(f"goldwatch: error: {message}", err=True)
    sys.exit(EXIT_USAGE)


def _settings(config: Path | None) -> Settings:
    from service.settings import ConfigError, load_settings

    try:
        return load_settings(config)
    except ConfigError as exc:
        _fail(str(exc))
        raise AssertionError("unreachable") from None


config_option = click.option(
    "--config",
    "config",
    type=FilePath(path_type=Path, dir_okay=False),
    envvar="GOLDWATCH_CONFIG",
    default=None,
    help="YAML configuration file (env GOLDWATCH_CONFIG).",
)


html_option = click.option(
    "--html",
    "html_path",
    type=FilePath(path_type=Path, dir_okay=False),
    default=None,
    help="Also write a self-contained HTML report (charts inline, opens offline).",
)


def _describe(exc: BaseException) -> str:
    from service.files.regular import describe_os_error

    if isinstance(exc, KeyError) and exc.args:
        return str(exc.args[0])
    if isinstance(exc, OSError):
        return describe_os_error(exc)
    return str(exc)


def _write_html(path: Path, page: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page, encoding="utf-8")
    except OSError as exc:
        _fail(_describe(exc))
    click.echo(f"goldwatch: HTML report written to {path}", err=True)


def _emit_replay_report(doc: Any, fmt: str, html_path: Path | None,
                        text: Callable[[Any], str]) -> None:  # fmt: skip
    """The tail ``goldwatch replay`` and ``goldwatch demo --fast`` share: the HTML report to
    ``html_path`` (when given), then the report on stdout as indented JSON (``fmt ==
    "json"``; NaN refused) or as ``text(doc)``."""
    if html_path is not None:
        from service.html import render_replay_html

        _write_html(html_path, render_replay_html(doc))
    if fmt == "json":
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False, default=str, allow_nan=False))
    else:
        click.echo(text(doc))


@contextlib.contextmanager
def _stoppable_start_up(what: str) -> Iterator[None]:
    """Let SIGTERM and SIGINT stop a start-up before uvicorn takes over the signals (a
    rollout stopping a pod still loading its models): nothing was consumed, so one line and
    exit 0. SIGINT too when it was inherited ignored (a background job of a script): uvicorn
    listens to it once serving, so the start-up must not be the one moment it is ignored."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    except KeyboardInterrupt:  # only before serving: uvicorn handles the signals while it runs
        click.echo(f"goldwatch: stopped before the {what} started (nothing was consumed)",
                   err=True)  # fmt: skip
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)


def _interrupt(signum: int, frame: FrameType | None) -> None:
    """SIGTERM handler for serve's start-up: stop it as SIGINT does."""
    raise KeyboardInterrupt
