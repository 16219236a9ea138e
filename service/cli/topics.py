"""``goldwatch topics fit`` and ``topics show``: fit the topic model drift is measured with
on the gold set (and corpus) and save it as a versioned artefact; show a saved one.

Both print a supervised model's held-out agreement with its Cohen's kappa and the gate the
service applies to it (``analytics.topics.min_kappa``, from ``--config``): the words of the
replay report and ``config check`` (:func:`kappa_lines`), so a model the service would run
UNCALIBRATED is not shown as if it were fine.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from service.cli.common import FilePath, _describe, _fail, _settings, config_option
from service.topics.bounds import N_TOPICS_MAX, N_TOPICS_MIN


@click.group("topics")
def topics_group() -> None:
    """Fit and inspect the topic model drift is measured with."""


@topics_group.command("fit")
@config_option
@click.option("--gold", type=FilePath(path_type=Path, dir_okay=False), help="Gold-set JSONL.")
@click.option(
    "--corpus",
    type=FilePath(path_type=Path, dir_okay=False),
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
    help="Use the gold set's own 'topic' labels when any row has one (rows without one "
    "are counted by the model's prediction).",
)
@click.option(
    "--previous",
    type=FilePath(path_type=Path, dir_okay=False, exists=True),
    default=None,
    help="A topic artefact this fit replaces: its unsupervised topic ids are kept where the "
    "topics barely moved (matched by centroid; every replica loads the saved model).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the topics as JSON.")
@click.option("--out", type=FilePath(path_type=Path, dir_okay=False), required=True)
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
        embedder = shared_embedder(
            settings.analytics.embeddings,
            [q.question for q in gold_set] + [p.text for p in passages],
        )
        before = None
        if previous is not None:
            # matched, whatever its scheme: a saved model is what every replica loads, so
            # keeping its ids costs no agreement between them (content ids would rename a
            # topic whose min-hash question moved)
            identity = TopicModel.load(previous, embedder).identity()
            before = None if identity is None else {**identity, "scheme": "matched"}
        model = fit_topic_model(gold_set, passages, topic_config, use_gold_topics,
                                embedder=embedder, previous=before)  # fmt: skip
        out.parent.mkdir(parents=True, exist_ok=True)
        model.save(out)
    except (ValueError, OSError) as exc:
        _fail(_describe(exc))
        return
    _print_topics(
        model,
        as_json,
        out,
        settings.analytics.topics.min_kappa,
        settings.analytics.quality_min_class,
    )


@topics_group.command("show")
@config_option
@click.argument("artefact", type=FilePath(path_type=Path, dir_okay=False, exists=True))
@click.option("--json", "as_json", is_flag=True, help="Print the topics as JSON.")
def topics_show(config: Path | None, artefact: Path, as_json: bool) -> None:
    """Show a saved topic model: its topics with their labels, sizes, top terms and most
    representative gold questions, the measured novelty quality, and a supervised model's
    held-out agreement with its Cohen's kappa against the floor of the configuration
    (analytics.topics.min_kappa): calibrated, or UNCALIBRATED and why."""
    from service.topics.model import TopicModel

    settings = _settings(config)
    min_kappa = settings.analytics.topics.min_kappa
    try:
        model = TopicModel.load(artefact)
    except (ValueError, OSError) as exc:
        _fail(_describe(exc))
        return
    _print_topics(model, as_json, artefact, min_kappa, settings.analytics.quality_min_class)


def kappa_lines(agreement: Mapping[str, Any] | None, min_kappa: float) -> list[str]:
    """A supervised model's kappa and gate, in the words of the replay report and
    ``config check``: its held-out Cohen's kappa with its 95 % interval
    (:func:`~service.topics.quality.kappa_text`), then ``topic assignment calibrated`` or
    ``topic assignment UNCALIBRATED (…): <why>``
    (:func:`~service.topics.quality.kappa_uncalibrated`); ``[]`` without a kappa (an
    unsupervised model, one saved before it was measured).

    >>> from service.topics.quality import topic_agreement
    >>> q = topic_agreement(["a"] * 20 + ["b"] * 24, ["a"] * 6 + ["b"] * 14 + ["a"] * 18
    ...                     + ["b"] * 6, ["en"] * 44)
    >>> for line in kappa_lines(q, 0.4):  # doctest: +NORMALIZE_WHITESPACE
    ...     print(line)
    Cohen's kappa -0.44 [-0.70, -0.18] (95 % interval on 44 rows; chance agreement 49.6%;
    floor 0.4, analytics.topics.min_kappa)
    topic assignment UNCALIBRATED (its shares are the model's reading, not facts; topic
    drift and coverage gaps raise no alarm): topic labels held out agree with 12 of 44
    (27.3%), chance 49.6%, Cohen's kappa -0.44 < 0.4 (analytics.topics.min_kappa): too low
    to act on
    """
    from service.topics.quality import kappa_of, kappa_text, kappa_uncalibrated

    found = kappa_of(agreement)
    if found is None or agreement is None:
        return []
    lines = [kappa_text(*found, min_kappa, int(agreement["n"]))]
    why = kappa_uncalibrated(agreement, min_kappa)
    if why is not None:
        gate = ("topic assignment UNCALIBRATED (its shares are the model's reading, not facts; "
                f"topic drift and coverage gaps raise no alarm): {why}")  # fmt: skip
    else:
        gate = (f"topic assignment calibrated: Cohen's kappa {found[0]:.2f} >= {min_kappa:g} "
                "(analytics.topics.min_kappa)")  # fmt: skip
    return [*lines, gate]


def _split_quiet(split: dict[str, Any]) -> str:
    """The topic-language association line when the topics do not follow language."""
    from service.topics.quality import LANGUAGE_SPLIT_V

    return (f"topic-language association: Cramér's V between topic and language "
            f"{split['v']:.2f} (bias-corrected; 0 a subject split, 1 each topic one language; "
            f"{split['n']} texts in {', '.join(split['languages'])}) <= {LANGUAGE_SPLIT_V:g}, "
            "no notice")  # fmt: skip


def _print_topics(model: Any, as_json: bool, path: Path, min_kappa: float,
                  min_rows: int = 10) -> None:  # fmt: skip
    """Print ``model`` (``min_rows``: ``analytics.quality_min_class``, the fewest fitted texts
    of a language for the topic-language association)."""
    from service.runtime.reports import language_split
    from service.topics.quality import (
        agreement_text,
        kappa_of,
        kappa_uncalibrated,
        language_bias,
    )

    quality = model.novelty_quality
    agreement = model.topic_agreement
    if as_json:
        found = kappa_of(agreement)
        click.echo(json.dumps({
            "version": model.version, "path": str(path), "embedder": model.embedder_name,
            "supervised": model.supervised, "novelty_threshold": model.threshold,
            "novelty_quality": quality.as_dict() if quality else None,
            "topic_agreement": agreement,
            # as the replay report's topic_quality: None without a kappa
            "kappa": None if found is None else found[0],
            "chance": None if found is None else found[1],
            "min_kappa": min_kappa,
            "uncalibrated": kappa_uncalibrated(agreement, min_kappa),
            "language_bias": language_bias(agreement),
            "language_split": language_split(model, min_rows),
            "topics": [{"name": t.name, "id": t.id, "label": t.label, "size": t.size,
                        "top_terms": list(t.top_terms), "label_note": t.label_note,
                        "examples": list(t.examples)}
                       for t in model.topics],
        }, ensure_ascii=False, indent=2))  # fmt: skip
        return
    kind = "supervised" if model.supervised else "unsupervised"
    click.echo(f"topic model {model.version}: {len(model.topics)} {kind} topics "
               f"({model.embedder_name}) -> {path}")  # fmt: skip
    if quality is not None:
        click.echo(f"novelty: ROC AUC {quality.auc:.3f} [{quality.low:.3f}, {quality.high:.3f}] "
                   f"({quality.method})")  # fmt: skip
    method = f" ({agreement['method']})" if agreement else ""
    click.echo(agreement_text(agreement, model.supervised) + method)
    for line in kappa_lines(agreement, min_kappa):
        click.echo(f"  {line}")
    if (bias := language_bias(agreement)) is not None:
        click.echo(f"  {bias}")
    if (split := language_split(model, min_rows)) is not None:  # measured, said either way
        click.echo(f"  {split['text'] or _split_quiet(split)}")
    for topic in model.topics:
        click.echo(f"  {topic.label}  (n={topic.size})")
        for example in topic.examples:
            click.echo(f"      e.g. {example}")
