"""``goldwatch config check``: validate the configuration, print the effective values
(secrets masked), run the start-up file checks (:mod:`service.settings.checks`) and say what serve
would start from.
"""

from __future__ import annotations

import contextlib
import json
import math
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING

import click

from service.cli.common import _fail, _notices, _settings, config_option

if TYPE_CHECKING:
    from service.runtime.analytics import Analytics
    from service.settings import Settings


@click.group("config")
def config_group() -> None:
    """Inspect the configuration."""


@config_group.command("check")
@config_option
def config_check(config: Path | None) -> None:
    """Validate the configuration and print the effective values (secrets masked).

    Notes on stderr when api.token is unset (the mutating endpoints are then disabled),
    when personal data is not scrubbed (analytics or its PII stage off) and when it is
    scrubbed with no pseudonym key (analytics.pii_key unset: unkeyed pseudonyms).
    Also checks what serve and replay would fail on later: the files it names exist, the
    gold set and corpus load (every row valid), every declared entrypoint retriever's
    module imports and has its attribute (used or not; the module's import-time code runs,
    which may take time or connect; its class is not instantiated nor searched), the
    pseudonym key file holds a key, with
    the Kafka source the secret and TLS files it names can be read, and state.path is a file
    or can be created (nothing is created). Then it builds what serve builds before it
    consumes, fitting the models (a few seconds; nothing written, nothing connected to), so
    a gold set the fits refuse or an embedding model that does not load fails here too.
    Exit 2 on any problem, naming the field and file. When all is well it ends (stderr) with
    what serve would start from: the gold set's rows, the corpus's passages, the topics,
    each detector's measured quality (calibrated or why not), the source and the state path.
    """
    from service.settings import effective_config
    from service.settings.checks import file_problems

    settings = _settings(config)
    loaded: dict[str, object] = {}
    problems = file_problems(settings, loaded, config) + retriever_problems(settings)
    click.echo(f"# configuration from {config or 'defaults and environment'}", err=True)
    for notice in _notices(settings):
        click.echo(f"# note: {notice}", err=True)
    click.echo(json.dumps(effective_config(settings), indent=2, ensure_ascii=False))
    if problems:
        _fail("; ".join(problems))
    analytics, notices, problem = _build(settings)
    if problem:
        _fail(problem)
    for notice in notices:  # what serve logs at start and replay puts in its report
        click.echo(f"# note: {notice}", err=True)
    click.echo("# ok: every check passed; serve and replay would start from:", err=True)
    for line in _check_summary(settings, loaded, analytics):
        click.echo(f"#   {line}", err=True)


def retriever_problems(settings: Settings) -> list[str]:
    """One ``"retrievers[i].entrypoint: <problem>"`` per declared ``entrypoint`` retriever
    whose entry point does not resolve: its module does not import or has no such attribute
    (:func:`~service.retrievers.entrypoint.load_entrypoint`), or the attribute is neither
    callable nor has ``search``. Every declared one, used or not: a retriever nothing uses
    yet passed the check and ``eval --retriever`` then failed (trial 48 L4). The module is
    imported, so its import-time code runs as serve's would: a module that builds an index
    or connects somewhere when imported does so here too (time, network). What the entry
    point names is not called: a class is not instantiated, nothing is searched."""
    from service.retrievers.entrypoint import load_entrypoint

    problems = []
    for i, retriever in enumerate(settings.retrievers):
        if retriever.kind != "entrypoint" or not retriever.entrypoint:
            continue
        field = f"retrievers[{i}].entrypoint ({retriever.name})"
        try:
            target = load_entrypoint(retriever.entrypoint)
        except ValueError as exc:
            problems.append(f"{field}: {exc}")
            continue
        if not (callable(target) or callable(getattr(target, "search", None))):
            problems.append(f"{field}: {retriever.entrypoint!r} is neither callable nor has "
                            "search()")  # fmt: skip
    return problems


def _build(settings: Settings) -> tuple[Analytics | None, list[str], str | None]:
    """Build what serve builds before it consumes — the analytics stages with their fitted
    models (topic model, out-of-scope detector, novelty calibration), live quality, harvest
    and the shadow candidates — so a gold set the fits refuse, or an embedding model that
    does not load, fails the check as it would fail the start.

    Fits from scratch (seconds on a few hundred gold questions) with an in-memory state and
    no model cache and no source (nothing is written, nothing is connected to).

    Returns:
        ``(analytics, notices, None)`` when the build succeeds (``None`` analytics when
        they are off; ``notices``: what serve would warn about at start, e.g. gold passage
        ids missing from the corpus), else ``(None, [], the problem)``: the message serve
        would print (exit 2).
    """
    from prometheus_client import CollectorRegistry

    from service.cli.common import _describe
    from service.errors import GoldwatchError
    from service.runtime.live import build_live
    from service.state import StateStore

    offline = settings.model_copy(
        update={"source": settings.source.model_copy(update={"kind": "none"})}
    )
    state = StateStore.in_memory()
    try:
        live = build_live(offline, CollectorRegistry(), state)
        live.close()
    except (GoldwatchError, ValueError, OSError) as exc:
        return None, [], _describe(exc)
    finally:
        state.close()
    return (live.analytics if settings.analytics.enabled else None), live.notices, None


def _dead_letter_line(settings: Settings) -> str:
    """The file source's dead-letter file as serve and ``replay --state`` would use it:
    ``source.dlq_path``, else the file the state's stored position (or run mark) names
    (:func:`consumers.file_source.state_dead_letters`: a state that read the file before
    session 51 keeps ``<file>.dlq.jsonl``), else the state's own ``<state.path>.dlq.jsonl``.
    The state file is read without writing (SQLite ``mode=ro``); one it cannot read so is
    said, beside the state's own file."""
    from consumers.file_source import state_dead_letters, state_keys

    source = settings.source
    if source.dlq_path is not None:
        return f"dead letters {source.dlq_path} (appended; source.dlq_path)"
    own = settings.state.dead_letter_path()
    state_file = Path(settings.state.path)
    stored: dict[str, object] = {}
    if state_file.is_file():
        keys = [key for key in state_keys(str(source.path)) if key is not None]
        uri = f"{state_file.resolve().as_uri()}?mode=ro"
        try:
            with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
                rows = conn.execute(
                    f"SELECT key, value FROM state WHERE key IN ({','.join('?' * len(keys))})",
                    keys,
                ).fetchall()
            stored = {key: json.loads(value) for key, value in rows}
        except (sqlite3.Error, ValueError) as exc:
            return (f"dead letters {own} (appended; one file per state), unless the state "
                    f"already names one: {state_file} could not be read ({exc})")  # fmt: skip
    dead = state_dead_letters(str(source.path), stored.get, own)
    if dead != own:
        return f"dead letters {dead} (appended; the file the state {state_file} names)"
    return f"dead letters {dead} (appended; one file per state)"


def _check_summary(
    settings: Settings, loaded: dict[str, object], built: Analytics | None = None
) -> list[str]:
    """``config check``'s closing lines: gold set N rows, corpus M passages, topics K (how
    they are made), each detector's measured quality (with ``built``: the analytics
    :func:`_build` built), source, state path. ``loaded``: what
    :func:`service.settings.checks.file_problems` loaded."""
    from service.runtime.analytics import fit_topic_model, topic_label_rule
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
    elif built is not None and built.topic_descriptions:  # the model _build fitted
        supervised = topic_label_rule(gold or (), analytics.use_gold_topics).supervised  # type: ignore[arg-type]
        how = "the gold set's topic labels" if supervised else "fitted on the gold set"
        lines.append(f"topics {len(built.topic_descriptions)} ({how})")
    elif gold is not None:
        model = fit_topic_model(gold, (), analytics.topics, analytics.use_gold_topics)  # type: ignore[arg-type]
        how = "the gold set's topic labels" if model.supervised else "fitted on the gold set"
        lines.append(f"topics {len(model.names)} ({how})")
    if built is not None:
        lines.extend(_detector_lines(built))
    lines.append(_harvest_line(settings))
    source = settings.source
    if source.kind == "file":
        lines.append(f"source file {source.path}")
        lines.append(_dead_letter_line(settings))
    elif source.kind == "kafka" and settings.kafka is not None:
        kafka = settings.kafka
        lines.append(f"source kafka topic {kafka.topic} at {kafka.bootstrap_servers}")
    elif source.kind == "stdin":
        lines.append("source stdin")
    else:
        lines.append("source none: events arrive only through POST /v1/events and POST /v1/traces")
    lines.append(f"state {settings.state.path}")
    return lines


def _harvest_line(settings: Settings) -> str:
    """Where harvest's per-batch bound applies: ``harvest.max_new_per_batch`` sheds new
    questions in serve; a replay applies it only when the configuration sets it (see
    :func:`service.jobs.replay.run_replay`), so the effective value printed above is not a
    replay's when it is a default."""
    harvest = settings.harvest
    if not harvest.enabled:
        return "harvest off (harvest.enabled false)"
    if not settings.analytics.enabled:
        return "harvest off (analytics off)"
    if settings.gold_set is None:
        return "harvest off (no gold set to compare questions with)"
    bound = harvest.max_new_per_batch
    if bound is None:
        shed = "no harvest.max_new_per_batch: no new question is shed"
    elif "max_new_per_batch" in harvest.model_fields_set:
        shed = f"harvest.max_new_per_batch {bound} (serve and replay)"
    else:
        shed = (f"harvest.max_new_per_batch {bound} in serve (the default; a replay sheds "
                "nothing unless it is set)")  # fmt: skip
    return f"harvest: at most {harvest.max_suggestions} suggestions held; {shed}"


def _detector_lines(analytics: Analytics) -> list[str]:
    """One line per detector with a quality measurement: calibrated, with its ROC AUC and 95 %
    interval on the gold questions it is measured on (``"on 12 unanswerable / 48 answerable
    gold questions"``; for out-of-scope, the calibration's limit and its off-corpus rule on the
    next lines), or
    uncalibrated with the reason
    (:meth:`~service.runtime.analytics.Analytics.uncalibrated`, the text the reports show);
    then why a detector is off, if one is; then the topic assignment's held-out kappa
    (:func:`_topic_lines`)."""
    from service.evaluation.detector_quality import (
        apart_text,
        measured_on,
        operating_point_summary,
    )
    from service.refusals.families import gold_families_text
    from service.refusals.languages import confound_text
    from service.refusals.scope import calibration_limit, support_by_language_text, support_text
    from service.runtime.analytics import (
        families_off_text,
        scope_families_of,
        scope_languages_of,
        scope_support,
    )

    lines = []
    for name, quality in sorted(analytics.detector_quality.items()):
        why = analytics.uncalibrated(name)
        on = measured_on(name, quality)
        if why is None:
            point = ""
            if not math.isnan(quality.balanced_accuracy):
                point = f"; at its threshold {operating_point_summary(quality.as_dict(), name)}"
            interval = f"[{quality.low:.3f}, {quality.high:.3f}]"
            lines.append(f"{name} detector calibrated: ROC AUC {quality.auc:.3f} {interval} "
                         f"on {on}{point}")  # fmt: skip
        else:
            also = "" if "measured on only" in why else f" (measured on {on})"
            lines.append(f"{name} detector UNCALIBRATED (its counts are not facts and raise "
                         f"no drift alarm): {why}{also}")  # fmt: skip
            if advice := analytics.to_calibrate(name):
                lines.append(f"  to calibrate it: {advice}")
        if name == "out_of_scope":
            if (apart := apart_text(quality.as_dict())) is not None:
                lines.append(f"  {apart}")
            lines.append(f"  out-of-scope calibration: {calibration_limit(quality.as_dict())}")
            support = scope_support(analytics)
            if support:
                lines.append(f"  {support_text(support)}")
                lines += [f"    {line}" for line in support_by_language_text(support)]
            if (families := scope_families_of(analytics)) is not None:
                lines.append(f"  {gold_families_text(families, analytics.quality_min_class)}")
            elif (off := families_off_text(analytics)) is not None:
                lines.append(f"  {off}")
            languages = scope_languages_of(analytics)
            if languages is not None and (said := confound_text(languages)) is not None:
                lines.append(f"  {said}")
    for name, off in (("out_of_scope", analytics.scope_off), ("novelty", analytics.novelty_off)):
        if off:
            lines.append(f"{name} detector off: {off}")
    lines += _topic_lines(analytics)
    return lines


def _topic_lines(analytics: Analytics) -> list[str]:
    """The topic assignment's line: with a supervised model's held-out kappa
    (:func:`~service.topics.quality.kappa_of`), calibrated with it, or UNCALIBRATED with why
    (:meth:`~service.runtime.analytics.Analytics.topic_uncalibrated`); ``[]`` without one
    (no topic model, unsupervised topics: no labels to measure it on). Before it, while
    novelty is uncalibrated, the line saying the shares are nearest gold topics
    (:meth:`~service.runtime.analytics.Analytics.topics_nearest`), and the notice that the
    topics follow language when they do (:func:`~service.runtime.reports.language_split`)."""
    from service.topics.quality import kappa_of, kappa_text

    nearest = analytics.topics_nearest()
    shares = (
        []
        if nearest is None
        else [
            f"topic shares are by NEAREST gold topic (not facts; no topic coverage gap; topic "
            f"drift still alarms on a change of the distribution): {nearest}"
        ]
    )
    from service.runtime.reports import language_split
    from service.topics.stage import TopicStage

    stage = next((st for st in analytics.stages if isinstance(st, TopicStage)), None)
    split = None if stage is None else language_split(stage.model, analytics.quality_min_class)
    # the topics follow language (trial 43 M4)
    follow = [split["text"]] if split is not None and split["text"] else []
    shares += follow
    found = kappa_of(analytics.topic_quality)
    if found is None or analytics.topic_quality is None:
        return shares
    why = analytics.topic_uncalibrated()
    if why is not None:
        return [*follow, "topic assignment UNCALIBRATED (its shares are the model's reading, "
                f"not facts; topic drift and coverage gaps raise no alarm): {why}"]  # fmt: skip
    quality = analytics.topic_quality
    return shares + [f"topic assignment calibrated: held out {quality['agree']} of {quality['n']} "
            f"labelled gold questions keep their topic ({quality['share']:.1%}); "
            f"{kappa_text(*found, analytics.topic_min_kappa, int(quality['n']))}"]  # fmt: skip
