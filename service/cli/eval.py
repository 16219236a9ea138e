"""``goldwatch eval``: score retrievers (or TREC run files) on the gold set and print the
report (text or JSON, optionally HTML); ``--fail-under`` gates for CI. The work is
:mod:`service.evaluation.job`'s; this module parses the flags and renders the outcome.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import click

from service.cli.common import (
    EXIT_GATE_FAILED,
    EXIT_RETRIEVER_FAILED,
    FilePath,
    _describe,
    _fail,
    _settings,
    _write_html,
    config_option,
    html_option,
)


def _parse_ks(text: str | None) -> tuple[int, ...] | None:
    if text is None:
        return None
    try:
        ks = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise click.BadParameter(
            "expects comma-separated integers, e.g. 1,5,10,20", param_hint="--k"
        ) from None
    if not ks or min(ks) < 1:
        raise click.BadParameter("every k must be an integer >= 1", param_hint="--k")
    return ks


def _check_compare(
    ctx: click.Context, param: click.Parameter, value: tuple[str, str] | None
) -> tuple[str, str] | None:
    """Refuse ``--compare A --k 5``: click would take the next flag for B and leave its value
    as a stray argument."""
    flags = [v for v in value or () if v.startswith("-")]
    if flags:
        raise click.BadParameter(
            f"takes two names, A and B, but got the flag {flags[0]!r} as a name "
            "(write --compare A B, then the other flags)",
            param_hint="--compare",
        )
    return value


@click.command("eval")
@config_option
@click.option("--gold", type=FilePath(path_type=Path, dir_okay=False), help="Gold-set JSONL.")
@click.option("--corpus", type=FilePath(path_type=Path, dir_okay=False), help="Corpus JSONL.")
@click.option(
    "--demo", is_flag=True, help="Use the embedded demo corpus, and its gold set unless --gold."
)
@click.option(
    "--retriever",
    "retrievers",
    multiple=True,
    help="Built-in (bm25, tfidf, dense, hybrid, hybrid-lexical) or a name from the config; "
    "repeatable.",
)
@click.option("--k", "ks", default=None, help="Cut-offs, e.g. 1,5,10,20.")
@click.option("--qrels", type=FilePath(path_type=Path, dir_okay=False), help="TREC qrels.")
@click.option("--topics", type=FilePath(path_type=Path, dir_okay=False), help="TREC topics.")
@click.option(
    "--run",
    "runs",
    multiple=True,
    type=FilePath(path_type=Path, dir_okay=False),
    help="TREC run file (no retrieval); repeatable.",
)
@click.option("--compare", nargs=2, default=None, callback=_check_compare,
              help="Paired comparison: --compare A B (retriever or run-file names).")  # fmt: skip
@click.option("--trec-mean", is_flag=True,
              help="Average over every judged question, those with no relevant passage "
                   "scoring 0 (trec_eval -c), not over answerable questions only.")  # fmt: skip
@click.option(
    "--fail-under",
    "gates",
    multiple=True,
    help="Exit 1 when a metric is below a threshold: [retriever:]recall@10=0.8; repeatable.",
)
@click.option(
    "--answers",
    type=FilePath(path_type=Path, dir_okay=False),
    help="JSONL of production answers {id, answer, refused?} for the answer-level checks. "
    "An answer contains an answer_contains string when its words appear in the answer as "
    "whole words, in order (case, Unicode forms and punctuation ignored: 'No' is not in "
    '"I don\'t know"); a refused answer never counts.',
)
@click.option("--misses", type=FilePath(path_type=Path, dir_okay=False), help="Misses JSONL.")
@click.option("--history", type=FilePath(path_type=Path, dir_okay=False), help="Run-history JSONL.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@html_option
@click.option("--no-progress", is_flag=True, help="Hide the progress bar.")
def eval_command(
    config: Path | None,
    gold: Path | None,
    corpus: Path | None,
    demo: bool,
    retrievers: tuple[str, ...],
    ks: str | None,
    qrels: Path | None,
    topics: Path | None,
    runs: tuple[Path, ...],
    compare: tuple[str, str] | None,
    trec_mean: bool,
    gates: tuple[str, ...],
    answers: Path | None,
    misses: Path | None,
    history: Path | None,
    fmt: str,
    html_path: Path | None,
    no_progress: bool,
) -> None:
    """Score retrievers on the gold set: recall@k, hit rate, precision, MRR, nDCG, MAP.

    The gold set and corpus are --gold and --corpus (or gold_set: and corpus: of the
    configuration); --demo uses the embedded demo corpus, and its gold set unless --gold
    names one (a copy of it, e.g. in the demo's working folder). A gold set without a corpus
    is an error (exit 2), and so is a corpus holding none of its gold passages.

    Each retriever is asked for its top eval.depth passages (100 by default, at least the
    largest k): the uncut MRR, nDCG and MAP are over that list, ranked as trec_eval ranks
    (score descending, ties by passage id descending). Questions whose passages all scored
    alike are counted and named: their figures rest on that tie order, not on the retriever.
    """
    from service.evaluation import job as eval_job
    from service.evaluation.report import depth_line, gold_set_line, render_json, render_text
    from service.retrievers.base import RetrieverError

    settings = _settings(config)
    try:
        request = eval_job.EvalRequest(
            gold=gold,
            corpus=corpus,
            retrievers=retrievers,
            ks=_parse_ks(ks),
            qrels=qrels,
            topics=topics,
            runs=runs,
            compare=tuple(compare) if compare else None,  # type: ignore[arg-type]
            gates=tuple(eval_job.Gate.parse(g) for g in gates),
            answers=answers,
            misses=misses,
            history=history,
            progress=not no_progress,
            demo=demo,
            trec_mean=trec_mean,
        )
        outcome = eval_job.run_eval(request, settings)
    except RetrieverError as exc:
        click.echo(f"goldwatch: error: {exc}", err=True)
        sys.exit(EXIT_RETRIEVER_FAILED)
    except (ValueError, KeyError, OSError) as exc:
        _fail(_describe(exc))
        return
    for warning in outcome.warnings:
        click.echo(f"goldwatch: warning: {warning}", err=True)
    for label, path in (("misses", outcome.misses_path), ("run history", outcome.history_path)):
        if path is not None:
            click.echo(f"goldwatch: {label} written to {path}", err=True)
    if html_path is not None:
        from service.html import render_eval_html

        _write_html(html_path, render_eval_html(outcome))
    if fmt == "json":
        doc = render_json(
            outcome.reports,
            outcome.comparisons,
            gold_set=outcome.gold_set_summary(),
            ks=outcome.ks,
            answers=outcome.answers.to_json() if outcome.answers else None,
            failed_gates=outcome.failed_gates,
            depth=outcome.depth,
        )
        click.echo(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        click.echo(gold_set_line(outcome.gold_set_summary()))
        click.echo(depth_line(outcome.depth) + "\n")
        click.echo(render_text(outcome.reports, outcome.comparisons))
        if outcome.answers is not None:
            click.echo("\n" + _answers_text(outcome.answers.to_json()))
    for gate in outcome.failed_gates:  # on stderr in both formats: CI logs show why
        click.echo(
            f"FAIL {gate['retriever']}: {gate['metric']} = {gate['value']:.4f} "
            f"< {gate['threshold']}",
            err=True,
        )
    if outcome.failed_gates:
        sys.exit(EXIT_GATE_FAILED)


def _answers_text(doc: dict[str, Any]) -> str:
    def pct(value: float | None) -> str:
        return "n/a" if value is None else f"{value:.1%}"

    text = (
        f"Answer checks ({doc['n_answers']} answers): "
        f"answer_contains hit {pct(doc['contains_rate'])}, "
        f"unanswerable refused {pct(doc['unanswerable_refusal_rate'])}, "
        f"answerable refused (over-refusal) {pct(doc['over_refusal_rate'])}"
    )
    if doc.get("missing"):
        text += f"\n  {len(doc['missing'])} gold questions have no answer in the file"
    if doc.get("unknown"):
        from service.evaluation.answers import unknown_answers_text

        text += "\n  " + unknown_answers_text(doc["unknown"])
    return text
