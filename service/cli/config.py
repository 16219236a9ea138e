"""``goldwatch config check``: validate the configuration, print the effective values
(secrets masked), run the start-up file checks (:mod:`service.settings.checks`) and say what serve
would start from.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from service.cli.common import _fail, _notices, _settings, config_option

if TYPE_CHECKING:
    from service.settings import Settings


@click.group("config")
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
    from service.settings.checks import file_problems

    settings = _settings(config)
    loaded: dict[str, object] = {}
    problems = file_problems(settings, loaded, config)
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
    they are made), source, state path. ``loaded``: what
    :func:`service.settings.checks.file_problems` loaded."""
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
