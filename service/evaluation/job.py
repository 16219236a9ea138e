"""The ``goldwatch eval`` job: load, retrieve (or read TREC runs), score, compare, gate, record.

Composition only: every step is a call into a domain module. The CLI parses flags into an
:class:`EvalRequest` and prints the :class:`EvalOutcome`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm import tqdm

from service.data.corpus import Corpus, load_corpus
from service.data.goldset import (
    GoldSet,
    content_order,
    corpus_coverage,
    load_gold_set,
    load_trec_gold_set,
    personal_data,
    repeated_questions,
)
from service.demo import demo_path
from service.errors import GoldwatchError
from service.evaluation.answers import (
    AnswerCheckReport,
    check_answers,
    load_answers,
    unknown_answers_text,
)
from service.evaluation.compare import PairedComparison, compare_all
from service.evaluation.evaluate import (
    RetrieverReport,
    evaluate_run,
    retrieve_run,
    trec_complete_means,
)
from service.evaluation.history import append_history, history_row
from service.evaluation.ir_metrics import parse_measure
from service.evaluation.report import FailedGate, GoldSetSummary, breakdown_k
from service.evaluation.trec import read_qrels, read_run
from service.records import Run
from service.retrievers.base import mark_failed_retriever
from service.retrievers.registry import build_retrievers
from service.settings import Settings

log = logging.getLogger(__name__)

DEFAULT_RETRIEVERS: tuple[str, ...] = ("bm25", "tfidf", "hybrid")


class EvalUsageError(GoldwatchError, ValueError):
    """The request is inconsistent (e.g. ``--run`` without a gold set or qrels)."""


@dataclass(frozen=True)
class Gate:
    """A ``--fail-under`` threshold: ``metric`` must be ≥ ``threshold`` (for ``retriever``,
    or for every retriever when ``None``)."""

    metric: str
    threshold: float
    retriever: str | None = None

    @classmethod
    def parse(cls, text: str) -> Gate:
        """Parse ``[retriever:]metric=threshold``, e.g. ``recall@10=0.8``.

        Raises:
            ValueError: malformed text, unknown metric, or a threshold outside [0, 1].
        """
        spec, sep, value = text.partition("=")
        if not sep:
            raise ValueError(f"--fail-under expects metric=threshold, got {text!r}")
        retriever, _, metric = spec.rpartition(":")
        try:
            threshold = float(value)
        except ValueError:
            raise ValueError(f"--fail-under threshold is not a number in {text!r}") from None
        if not 0.0 <= threshold <= 1.0:
            raise ValueError(f"--fail-under threshold must be in [0, 1] in {text!r}")
        return cls(parse_measure(metric.strip()).label, threshold, retriever.strip() or None)


@dataclass(frozen=True)
class EvalRequest:
    """What ``goldwatch eval`` was asked to do (paths already resolved)."""

    gold: Path | None = None
    corpus: Path | None = None
    retrievers: tuple[str, ...] = ()
    ks: tuple[int, ...] | None = None
    qrels: Path | None = None
    topics: Path | None = None
    runs: tuple[Path, ...] = ()
    compare: tuple[str, str] | None = None
    gates: tuple[Gate, ...] = ()
    answers: Path | None = None
    misses: Path | None = None
    history: Path | None = None
    progress: bool = True
    demo: bool = False
    trec_mean: bool = False


@dataclass(frozen=True)
class EvalOutcome:
    """Everything one eval run produced (``breakdown_k``: the cut-off the HTML breakdowns
    are charted at, :func:`service.evaluation.report.breakdown_k`; ``None``: its default rule;
    ``n_unjudged``: topics of the topics file with no line in the qrels, in no mean, as in
    trec_eval; ``trec_mean``: the means are trec_eval ``-c``'s, ``--trec-mean``; ``depth``:
    the results asked of each retriever, ``eval.depth`` or the largest k if larger, ``None``
    for TREC run files)."""

    gold_set: GoldSet
    ks: tuple[int, ...]
    reports: tuple[RetrieverReport, ...]
    comparisons: tuple[PairedComparison, ...]
    answers: AnswerCheckReport | None
    failed_gates: tuple[FailedGate, ...]
    warnings: tuple[str, ...] = field(default=())
    misses_path: Path | None = None
    history_path: Path | None = None
    from_qrels: bool = False
    breakdown_k: int | None = None
    n_unjudged: int = 0
    trec_mean: bool = False
    depth: int | None = None

    def gold_set_summary(self) -> GoldSetSummary:
        """Return the ``gold_set`` block of the JSON report."""
        return {
            "path": str(self.gold_set.path) if self.gold_set.path else None,
            "version": self.gold_set.version,
            "n_questions": len(self.gold_set),
            "n_unanswerable": len(self.gold_set.unanswerable()),
            "n_unjudged": self.n_unjudged,
            "from_qrels": self.from_qrels,
            "mean": "trec_eval -c" if self.trec_mean else "answerable",
        }


#: What a request without a gold set is told.
NO_GOLD_SET = (
    "no gold set: give --gold FILE (or --qrels FILE with --topics FILE), set gold_set: in "
    "the configuration (or GOLDWATCH_GOLD_SET), or run --demo for the embedded demo data"
)
#: What a gold set without a corpus is told (the built-in retrievers search a corpus).
NO_CORPUS = (
    "a gold set but no corpus: the retrievers search the corpus your gold passages come "
    "from; give --corpus FILE, set corpus: in the configuration (or GOLDWATCH_CORPUS), or "
    "score your own retriever's results with --run FILE"
)


def _check_demo(request: EvalRequest) -> None:
    if request.demo and (request.corpus or request.qrels or request.runs):
        raise EvalUsageError(
            "--demo scores on the embedded demo corpus: leave out --corpus, --qrels and --run "
            "(or leave out --demo)"
        )


def load_gold(request: EvalRequest, settings: Settings) -> GoldSet:
    """Return the gold set the request names: qrels/topics, ``--gold``, the configured one,
    or with ``--demo`` (and no ``--gold``: a copy of the demo's gold set, e.g. the demo's
    working folder, may be scored on the demo corpus) the embedded demo gold set. Never a
    stand-in the user did not ask for.

    Raises:
        EvalUsageError: no gold set is named (:data:`NO_GOLD_SET`), or ``--demo`` with
            files of the user's own.
        service.data.goldset.GoldSetError, service.evaluation.trec.TrecFormatError: unreadable file.
    """
    _check_demo(request)
    if request.demo and request.gold is None:
        return load_gold_set(demo_path("gold.jsonl"))
    if request.qrels is not None and request.gold is None:
        return load_trec_gold_set(request.qrels, request.topics)
    path = request.gold or settings.gold_set
    if path is None:
        raise EvalUsageError(NO_GOLD_SET)
    return load_gold_set(path)


def load_corpus_for(request: EvalRequest, settings: Settings) -> Corpus:
    """Return the corpus the request names (``--corpus``, the configured one, or with
    ``--demo`` the embedded demo corpus).

    Raises:
        EvalUsageError: no corpus is named (:data:`NO_CORPUS`).
        service.data.corpus.CorpusError: unreadable file.
    """
    if request.demo:
        return load_corpus(demo_path("corpus.jsonl"))
    path = request.corpus or settings.corpus
    if path is None:
        raise EvalUsageError(NO_CORPUS)
    return load_corpus(path)


def retrieved_runs(
    request: EvalRequest, settings: Settings, gold: GoldSet, names: Sequence[str]
) -> tuple[dict[str, Run], Corpus | None, list[str], dict[str, tuple[int, int]]]:
    """Return ``(runs, corpus, warnings, orders)``: each named retriever's run over the gold
    set (``settings.eval.depth`` deep), or the request's TREC run files (corpus ``None``);
    ``orders``: per entrypoint or HTTP retriever, ``(rising, ordered)`` of its lists as it
    returned them (:class:`~service.retrievers.base.ReturnedOrder`; its run is sorted).

    Raises:
        EvalUsageError: two run files share a name.
        service.retrievers.base.RetrieverError: a retriever failed.
    """
    warnings: list[str] = []
    if request.runs:
        runs = {path.name: read_run(path) for path in request.runs}
        if len(runs) != len(request.runs):
            raise EvalUsageError("two --run files share a file name; rename one")
        return runs, None, warnings, {}
    corpus = load_corpus_for(request, settings)
    coverage = corpus_coverage(gold, corpus)  # none of the gold ids in it: an error
    if coverage is not None:
        warnings.append(coverage)
    retrievers = build_retrievers(names, settings, corpus.passages)
    depth = eval_depth(request, settings)
    runs = {}
    orders: dict[str, tuple[int, int]] = {}
    questions = list(gold)
    for name in names:
        with tqdm(
            total=len(questions),
            desc=f"retrieving {name}",
            unit="q",
            disable=None if request.progress else True,
            leave=False,
        ) as bar:
            try:
                runs[name] = retrieve_run(
                    retrievers[name], questions, depth, settings.eval.batch_size, bar.update
                )
            except Exception as exc:
                mark_failed_retriever(exc, name, "search")
                raise
        order = getattr(retrievers[name], "returned_order", None)
        if order is not None:  # an entrypoint or HTTP retriever: lists as returned, unsorted
            orders[name] = (order.rising, order.ordered)
    for retriever in retrievers.values():
        close = getattr(retriever, "close", None)
        if callable(close):
            close()
    return runs, corpus, warnings, orders


def _check_gates(reports: Sequence[RetrieverReport], gates: Sequence[Gate]) -> list[FailedGate]:
    failed: list[FailedGate] = []
    names = {r.retriever for r in reports}
    for gate in gates:
        if gate.retriever is not None and gate.retriever not in names:
            raise EvalUsageError(
                f"--fail-under names retriever {gate.retriever!r}, which was not evaluated"
            )
        for report in reports:
            if gate.retriever not in (None, report.retriever):
                continue
            if gate.metric not in report.overall:
                raise EvalUsageError(
                    f"--fail-under metric {gate.metric} is not computed; add its k to --k"
                )
            if report.n_averaged == 0:
                raise EvalUsageError(
                    f"--fail-under {gate.metric} cannot be checked for {report.retriever}: the "
                    f"gold set has no answerable question ({report.n_unanswerable} "
                    "unanswerable), so the mean is undefined"
                )
            value = report.overall[gate.metric]
            if value < gate.threshold:
                failed.append(
                    {
                        "retriever": report.retriever,
                        "metric": gate.metric,
                        "value": value,
                        "threshold": gate.threshold,
                    }
                )
    return failed


def _write_misses(path: Path, reports: Sequence[RetrieverReport]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for report in reports:
            for miss in report.misses:
                handle.write(json.dumps(miss.to_json(), ensure_ascii=False) + "\n")


def run_eval(request: EvalRequest, settings: Settings) -> EvalOutcome:
    """Run one evaluation.

    Raises:
        EvalUsageError: inconsistent flags (names the flag).
        service.data.goldset.GoldSetError, service.data.corpus.CorpusError,
        service.evaluation.trec.TrecFormatError:
            unreadable inputs (naming file, line and field).
        service.retrievers.base.RetrieverError: a retriever failed.
    """
    if request.runs and request.retrievers:
        raise EvalUsageError("use either --retriever or --run, not both")
    if request.runs and request.qrels is None and request.gold is None:
        raise EvalUsageError("--run needs --qrels or --gold")
    if request.qrels is not None and request.gold is not None:
        raise EvalUsageError("use either --qrels or --gold, not both")
    if request.qrels is not None and not request.runs and request.topics is None:
        raise EvalUsageError(
            "--qrels needs --run (TREC run files to score), or --topics (the questions) "
            "with a corpus (--corpus) to retrieve with --retriever"
        )
    if request.qrels is not None and not request.runs and request.corpus is None:
        if settings.corpus is None:
            raise EvalUsageError(
                "--qrels with --topics retrieves from a corpus: add --corpus "
                "(or corpus in the config), or score TREC run files with --run"
            )
    if request.topics is not None and request.qrels is None:
        raise EvalUsageError("--topics goes with --qrels")
    ks = tuple(sorted(set(request.ks or settings.eval.k)))
    gold = load_gold(request, settings)
    names = list(dict.fromkeys(request.retrievers or DEFAULT_RETRIEVERS))
    if request.compare and not request.runs:
        names.extend(n for n in request.compare if n not in names)
    runs, corpus, warnings, orders = retrieved_runs(request, settings, gold, names)
    if (repeated := repeated_questions(gold)) is not None:
        warnings.append(repeated)
    if (personal := personal_data(gold)) is not None:
        warnings.append(personal)
    questions = list(gold)
    reports = tuple(
        evaluate_run(
            name, questions, run, ks, settings.eval.relevance_level, ascending=orders.get(name)
        )  # fmt: skip
        for name, run in runs.items()
    )
    # trec_eval -c averages over the topics in the qrels: a topic of the topics file with no
    # judgment at all is in no mean; one judged with no relevant document scores 0
    n_judged = len(read_qrels(request.qrels)) if request.qrels is not None else len(gold)
    if request.trec_mean:
        reports = tuple(trec_complete_means(r, n_judged) for r in reports)
    comparisons: tuple[PairedComparison, ...] = ()
    if request.compare:
        a, b = request.compare
        by_name = {r.retriever: r for r in reports}
        missing = [n for n in (a, b) if n not in by_name]
        if missing:
            raise EvalUsageError(f"--compare names unknown retriever(s): {', '.join(missing)}")
        comparisons = tuple(
            compare_all(
                a,
                by_name[a].per_query,
                b,
                by_name[b].per_query,
                by_name[a].measures,
                order=content_order(questions),
            )
        )
    warnings += [warning for r in reports if (warning := r.order_warning())]
    answer_report = None
    if request.answers is not None:
        answer_report = check_answers(questions, load_answers(request.answers))
        if answer_report.unknown:
            warnings.append(unknown_answers_text(list(answer_report.unknown)))
    misses_path = request.misses or settings.eval.misses
    if misses_path is not None:
        _write_misses(misses_path, reports)
    history_path = request.history or settings.eval.history
    if history_path is not None:
        eval_config = settings.eval.model_dump(mode="json", exclude={"history", "misses"})
        eval_config["k"] = list(ks)
        rows = [
            history_row(
                r.retriever,
                retriever_config(settings, r.retriever, bool(request.runs)),
                eval_config,
                r.defined_overall(),
                gold_set_version=gold.version,
                corpus_version=corpus.version if corpus else None,
                n_questions=r.n_questions,
            )
            for r in reports
        ]
        append_history(history_path, rows)
    return EvalOutcome(
        gold_set=gold,
        ks=ks,
        reports=reports,
        comparisons=comparisons,
        answers=answer_report,
        failed_gates=tuple(_check_gates(reports, request.gates)),
        warnings=tuple(warnings),
        misses_path=misses_path,
        history_path=history_path,
        from_qrels=request.qrels is not None,
        breakdown_k=breakdown_k(ks, [gate.metric for gate in request.gates]),
        n_unjudged=len(gold) - n_judged,
        trec_mean=request.trec_mean,
        depth=None if request.runs else eval_depth(request, settings),
    )


def eval_depth(request: EvalRequest, settings: Settings) -> int:
    """The results asked of each retriever: ``eval.depth``, or the largest k when larger."""
    return max(settings.eval.depth, max(request.ks or settings.eval.k))


def retriever_config(settings: Settings, name: str, from_run_file: bool) -> dict[str, Any]:
    """The retriever's configuration as recorded in the run history (headers left out)."""
    if from_run_file:
        return {"name": name, "kind": "trec-run"}
    return settings.retriever(name).model_dump(mode="json", exclude={"headers"})
