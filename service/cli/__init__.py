"""The ``goldwatch`` command line.

Exit codes: 0 success (serve: after a clean stop on SIGTERM/SIGINT); 1 a ``--fail-under``
gate failed, or serve's stop was not clean; 2 bad usage, configuration or input
(the message names the flag, file, line or field, never a question's text); 3 a retriever
failed while answering (unreachable, timed out, bad response).
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import TYPE_CHECKING

import click

from service import __version__
from service.cli.candidates import candidates_group
from service.cli.checks import _file_problems, _state_problems
from service.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_RETRIEVER_FAILED,
    EXIT_STOP_FAILED,
    EXIT_USAGE,
    NO_PII_NOTICE,
    NO_TOKEN_NOTICE,
    _fail,
    _notices,
    _settings,
    config_option,
)
from service.cli.demo import demo_command
from service.cli.eval import eval_command
from service.cli.replay import replay_command
from service.cli.serve import serve_command
from service.cli.topics import topics_group

if TYPE_CHECKING:  # the commands import what they need: `goldwatch --help` loads no models
    from service.settings import Settings

__all__ = ["EXIT_GATE_FAILED", "EXIT_RETRIEVER_FAILED", "EXIT_STOP_FAILED", "EXIT_USAGE",
           "NO_PII_NOTICE", "NO_TOKEN_NOTICE", "main"]


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="goldwatch")
@click.option("-v", "--verbose", count=True, help="More log output (-vv for debug).")
def main(verbose: int) -> None:
    """goldwatch: know, on live traffic, whether your RAG retrieval still works."""
    level = logging.WARNING - 10 * min(verbose, 2)
    logging.basicConfig(level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    # Keep third-party chatter (HTTP clients, Kafka internals) at INFO or quieter.
    for name in ("httpx", "httpcore", "kafka"):
        logging.getLogger(name).setLevel(max(level, logging.INFO))


@main.group("config")
def config_group() -> None:
    """Inspect the configuration."""


@config_group.command("check")
@config_option
def config_check(config: Path | None) -> None:
    """Validate the configuration and print the effective values (secrets masked).

    Notes on stderr when api.token is unset (the mutating endpoints are then disabled) and
    when personal data is not scrubbed (analytics or its PII stage off).
    Also checks what serve and replay would fail on later: the files it names exist, the
    gold set and corpus load (every row valid), the pseudonym key file holds a key, with
    the Kafka source the secret and TLS files it names can be read, and state.path is a file
    or can be created (nothing is created). Exit 2 on any problem, naming the field and
    file. When all is well it ends (stderr) with what serve would start from: the gold
    set's rows, the corpus's passages, the topics, the source and the state path.
    """
    from service.settings import effective_config

    settings = _settings(config)
    loaded: dict[str, object] = {}
    problems = _file_problems(settings, loaded, config)
    click.echo(f"# configuration from {config or 'defaults and environment'}", err=True)
    for notice in _notices(settings):
        click.echo(f"# note: {notice}", err=True)
    click.echo(json.dumps(effective_config(settings), indent=2, ensure_ascii=False))
    if problems:
        _fail("; ".join(problems))
    click.echo("# ok: every check passed; serve and replay would start from:", err=True)
    for line in _check_summary(settings, loaded):
        click.echo(f"#   {line}", err=True)


def _check_summary(settings: Settings, loaded: dict[str, object]) -> list[str]:
    """``config check``'s closing lines: gold set N rows, corpus M passages, topics K (how
    they are made), source, state path. ``loaded``: what :func:`_file_problems` loaded."""
    from service.runtime.analytics import fit_topic_model
    from service.topics.model import TopicModel

    gold, corpus = loaded.get("gold_set"), loaded.get("corpus")
    lines = [
        f"gold set {len(gold)} rows ({settings.gold_set})"  # type: ignore[arg-type]
        if gold is not None else "gold set: none configured (set gold_set)",
        f"corpus {len(corpus.passages)} passages ({settings.corpus})"  # type: ignore[attr-defined]
        if corpus is not None else "corpus: none configured (set corpus)",
    ]  # fmt: skip
    analytics = settings.analytics
    if not analytics.enabled:
        lines.append("topics: analytics off")
    elif analytics.topics_model is not None:
        model = TopicModel.load(analytics.topics_model)
        lines.append(f"topics {len(model.names)} (analytics.topics_model)")
    elif gold is not None:
        model = fit_topic_model(gold, (), analytics.topics, analytics.use_gold_topics)  # type: ignore[arg-type]
        how = "the gold set's topic labels" if model.supervised else "fitted on the gold set"
        lines.append(f"topics {len(model.names)} ({how})")
    source = settings.source
    if source.kind == "file":
        lines.append(f"source file {source.path}")
    elif source.kind == "kafka" and settings.kafka is not None:
        kafka = settings.kafka
        lines.append(f"source kafka topic {kafka.topic} at {kafka.bootstrap_servers}")
    elif source.kind == "stdin":
        lines.append("source stdin")
    else:
        lines.append("source none: events arrive only through POST /v1/events")
    lines.append(f"state {settings.state.path}")
    return lines


main.add_command(eval_command)
main.add_command(serve_command)
main.add_command(replay_command)
main.add_command(demo_command)
main.add_command(topics_group)
main.add_command(candidates_group)
