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
from typing import TYPE_CHECKING, Any

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
    _describe,
    _fail,
    _notices,
    _settings,
    config_option,
)
from service.cli.demo import demo_command
from service.cli.eval import eval_command
from service.cli.replay import replay_command
from service.cli.serve import serve_command
from service.topics.config import N_TOPICS_MAX, N_TOPICS_MIN

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


@main.group("topics")
def topics_group() -> None:
    """Fit and inspect the topic model drift is measured with."""


@topics_group.command("fit")
@config_option
@click.option("--gold", type=click.Path(path_type=Path, dir_okay=False), help="Gold-set JSONL.")
@click.option(
    "--corpus",
    type=click.Path(path_type=Path, dir_okay=False),
    help="Also fit on the corpus passages.",
)
@click.option(
    "--n-topics",
    type=click.IntRange(N_TOPICS_MIN, N_TOPICS_MAX),
    default=None,
    help="Clusters (default: sqrt rule, <= 50).",
)
@click.option(
    "--use-gold-topics/--cluster",
    default=True,
    help="Use the gold set's own 'topic' labels when every answerable row has one.",
)
@click.option(
    "--previous",
    type=click.Path(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="A topic artefact this fit replaces: its unsupervised topic ids are kept where the "
    "topics barely moved.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the topics as JSON.")
@click.option("--out", type=click.Path(path_type=Path, dir_okay=False), required=True)
def topics_fit(
    config: Path | None,
    gold: Path | None,
    corpus: Path | None,
    n_topics: int | None,
    use_gold_topics: bool,
    previous: Path | None,
    as_json: bool,
    out: Path,
) -> None:
    """Fit the topic model on the gold set and save it as a versioned artefact."""
    from service.data.corpus import load_corpus
    from service.data.goldset import load_gold_set
    from service.embeddings.model import shared_embedder
    from service.runtime.analytics import fit_topic_model
    from service.topics.model import TopicModel

    settings = _settings(config)
    try:
        gold_path = gold or settings.gold_set
        if gold_path is None:
            _fail("no gold set to fit topics on: give --gold FILE or set gold_set: in the "
                  "configuration (or GOLDWATCH_GOLD_SET)")  # fmt: skip
            return
        gold_set = load_gold_set(gold_path)
        passages = load_corpus(corpus).passages if corpus else ()
        topic_config = settings.analytics.topics
        if n_topics is not None:
            topic_config = topic_config.model_copy(update={"n_topics": n_topics})
        embedder = shared_embedder(settings.analytics.embeddings,
                                   [q.question for q in gold_set] + [p.text for p in passages])
        before = TopicModel.load(previous, embedder) if previous is not None else None
        model = fit_topic_model(gold_set, passages, topic_config, use_gold_topics,
                                embedder=embedder, previous=before)  # fmt: skip
        out.parent.mkdir(parents=True, exist_ok=True)
        model.save(out)
    except (ValueError, OSError) as exc:
        _fail(_describe(exc))
        return
    _print_topics(model, as_json, out)


@topics_group.command("show")
@click.argument("artefact", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the topics as JSON.")
def topics_show(artefact: Path, as_json: bool) -> None:
    """Show a saved topic model: its topics with their labels, sizes, top terms and most
    representative gold questions, and the measured novelty quality."""
    from service.topics.model import TopicModel

    try:
        model = TopicModel.load(artefact)
    except (ValueError, OSError) as exc:
        _fail(_describe(exc))
        return
    _print_topics(model, as_json, artefact)


def _print_topics(model: Any, as_json: bool, path: Path) -> None:
    quality = model.novelty_quality
    if as_json:
        click.echo(json.dumps({
            "version": model.version, "path": str(path), "embedder": model.embedder_name,
            "supervised": model.supervised, "novelty_threshold": model.threshold,
            "novelty_quality": quality.as_dict() if quality else None,
            "topics": [{"name": t.name, "id": t.id, "label": t.label, "size": t.size,
                        "top_terms": list(t.top_terms), "examples": list(t.examples)}
                       for t in model.topics],
        }, ensure_ascii=False, indent=2))  # fmt: skip
        return
    kind = "supervised" if model.supervised else "unsupervised"
    click.echo(f"topic model {model.version}: {len(model.topics)} {kind} topics "
               f"({model.embedder_name}) -> {path}")  # fmt: skip
    if quality is not None:
        click.echo(f"novelty: ROC AUC {quality.auc:.3f} [{quality.low:.3f}, {quality.high:.3f}] "
                   f"({quality.method})")  # fmt: skip
    for topic in model.topics:
        click.echo(f"  {topic.label}  (n={topic.size})")
        for example in topic.examples:
            click.echo(f"      e.g. {example}")


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
main.add_command(candidates_group)
