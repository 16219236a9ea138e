"""Gold-set runs of production and the shadow candidates, on a schedule and on demand.

One run is ``goldwatch eval`` over the configured gold set and corpus (the same functions:
:func:`service.evaluation.job.retrieved_runs`, :func:`service.evaluation.evaluate.evaluate_run`,
:func:`service.evaluation.compare.compare_all`, the run history), for the production retriever
(``shadow.production``, when declared callable) and every candidate's retriever. Its JSON:

``{"trigger", "started_at", "finished_at" (Unix s, wall clock), "duration_s" (monotonic
clock: never negative when the wall clock is stepped during a run), "gold_set":
{"version", "n_questions", "n_unanswerable"}, "ks", "retrievers": {label: {"retriever",
"role": "production"|"candidate", "overall", "by_kind": {kind|"all": {measure: mean}},
"n_by_kind": {kind|"all": n}, "by_language": {language: {measure: mean, "n"}}
(when gold rows carry a language), "unanswerable", "n_misses", "misses": [first 20],
"acl": {"n": violations, "by_role": {role: n}, "questions": [...]}}}, "comparisons":
{candidate label: [PairedComparison JSON without deltas]}, "warnings"}``.

``label`` is the candidate's name, or the production retriever's name. The paired comparison
(randomization test and bootstrap CI, :mod:`service.evaluation.compare`) is candidate minus
production
on ``recall@k`` for every k and ``mrr``.

Role-restricted gold rows are evaluated as their role: every passage in a retriever's top
``max(k)`` for such a row that the role may not read (:class:`service.quality.acl.AccessPolicy`)
counts as an ACL violation of that retriever.

:class:`GoldRuns` keeps the latest run, runs one at a time in a background thread (so an
HTTP request never waits on a slow production endpoint), and runs on a schedule.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from service.data.goldset import content_order
from service.evaluation.compare import compare_all
from service.evaluation.evaluate import RetrieverReport, evaluate_run
from service.evaluation.history import append_history, history_row
from service.evaluation.job import EvalRequest, load_gold, retrieved_runs, retriever_config
from service.files.private import PRIVATE_MODE
from service.quality.acl import AccessPolicy
from service.records import Run
from service.retrievers.base import failed_retriever
from service.settings import Settings

__all__ = ["GoldRuns", "failure_line", "run_gold_set"]

log = logging.getLogger(__name__)

MAX_MISSES = 20
MAX_ACL_ROWS = 20
ALL = "all"


def _labels(settings: Settings) -> dict[str, tuple[str, str]]:
    """``{label: (retriever name, role)}``: production first, then candidates."""
    labels: dict[str, tuple[str, str]] = {}
    if settings.shadow.production is not None:
        labels[settings.shadow.production] = (settings.shadow.production, "production")
    for candidate in settings.shadow.candidates:
        labels.setdefault(candidate.name, (candidate.retriever_name, "candidate"))
    return labels


def _by_kind(report: RetrieverReport) -> tuple[dict[str, dict[str, float]], dict[str, int]]:
    by_kind: dict[str, dict[str, float]] = {ALL: dict(report.overall)}
    counts: dict[str, int] = {ALL: report.n_questions}
    for kind, row in report.by.get("kind", {}).items():
        by_kind[kind] = {k: v for k, v in row.items() if k != "n"}
        counts[kind] = int(row.get("n", 0))
    return by_kind, counts


def _acl(run: Run, policy: AccessPolicy, questions: list[Any], depth: int) -> dict[str, Any]:
    by_role: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    for question in questions:
        if question.role is None:
            continue
        ranking = [doc.doc_id for doc in run.get(question.id, [])[:depth]]
        bad = policy.violations(ranking, question.role)
        if bad:
            by_role[question.role] += len(bad)
            if len(rows) < MAX_ACL_ROWS:
                rows.append({"id": question.id, "role": question.role, "passages": bad})
    return {"n": sum(by_role.values()), "by_role": dict(by_role), "questions": rows}


def run_gold_set(settings: Settings, trigger: str = "on_demand") -> dict[str, Any]:
    """Score production and every candidate on the gold set (see the module docstring).

    Returns:
        The run's JSON (shape in the module docstring).

    Raises:
        ValueError: nothing to run (no ``shadow.production`` and no candidates).
        service.data.goldset.GoldSetError, service.data.corpus.CorpusError: unreadable inputs.
        service.retrievers.base.RetrieverError: a retriever failed.
        OSError: the history file cannot be written.
    """
    labels = _labels(settings)
    if not labels:
        raise ValueError("no retriever to run: declare shadow.production or candidates")
    started, started_mono = time.time(), time.monotonic()
    request = EvalRequest(progress=False)
    gold = load_gold(request, settings)
    names = list(dict.fromkeys(name for name, _ in labels.values()))
    runs, corpus, warnings, _ = retrieved_runs(request, settings, gold, names)
    ks = tuple(settings.eval.k)
    questions = list(gold)
    reports = {
        name: evaluate_run(name, questions, run, ks, settings.eval.relevance_level)
        for name, run in runs.items()
    }
    policy = AccessPolicy.from_corpus(corpus) if corpus is not None else None
    body: dict[str, Any] = {}
    for label, (name, role) in labels.items():
        report = reports[name]
        by_kind, n_by_kind = _by_kind(report)
        acl = _acl(runs[name], policy, questions, max(ks)) if policy else {}
        body[label] = {
            "retriever": name,
            "role": role,
            "overall": report.overall,
            "by_kind": by_kind,
            "n_by_kind": n_by_kind,
            "by_language": report.by.get("language", {}),
            "unanswerable": report.unanswerable,
            "n_misses": len(report.misses),
            "misses": [miss.to_json() for miss in report.misses[:MAX_MISSES]],
            "acl": acl,
        }
    comparisons: dict[str, list[dict[str, Any]]] = {}
    production = settings.shadow.production
    if production is not None:
        measures = [f"recall@{k}" for k in ks] + ["mrr"]
        base = reports[production]
        for label, (name, role) in labels.items():
            if role != "candidate" or name == production:
                continue
            pairs = compare_all(production, base.per_query, label, reports[name].per_query,
                                measures, order=content_order(questions))  # fmt: skip
            comparisons[label] = [
                {k: v for k, v in pair.to_json().items() if k != "deltas"} for pair in pairs
            ]
    finished = time.time()
    history = settings.shadow.history or settings.state.path.parent / "gold-runs.jsonl"
    if history is not None:
        eval_config = settings.eval.model_dump(mode="json", exclude={"history", "misses"})
        append_history(history, [
            history_row(
                label, {**retriever_config(settings, name, False), "trigger": trigger},
                eval_config, reports[name].overall, gold_set_version=gold.version,
                corpus_version=corpus.version if corpus else None,
                n_questions=reports[name].n_questions,
            )
            for label, (name, _) in labels.items()
        ], mode=PRIVATE_MODE)  # fmt: skip
    return {
        "trigger": trigger,
        "started_at": started,
        "finished_at": finished,
        "duration_s": round(time.monotonic() - started_mono, 3),
        "gold_set": {
            "version": gold.version,
            "n_questions": len(gold),
            "n_unanswerable": len(gold.unanswerable()),
        },  # fmt: skip
        "ks": list(ks),
        "retrievers": body,
        "comparisons": comparisons,
        "warnings": list(warnings),
    }


def failure_line(exc: BaseException) -> str:
    """The log line's text for a failed gold-set run: which retriever, the exception's class
    and its cause's class, and — only for a retriever that failed while being imported,
    configured or built — the message.

    What is logged is decided by where the run failed, not by the exception's type: a
    retriever's build stage (:func:`~service.retrievers.base.mark_failed_retriever`, stage
    ``"build"``) has seen no question, and its messages are goldwatch's own (entry point, module,
    params, the import error); anything raised while retrieving (stage ``"search"``) or
    outside a retriever may carry a question or other user data in its message (a user's
    retriever raising ``KeyError(question)``), so only class names are logged.

    Returns:
        e.g. ``"retriever 'mine' failed while loading: ValueError: entrypoint 'm:f': cannot
        import 'm' (ModuleNotFoundError: No module named 'm')"``, ``"retriever 'mine' failed
        while retrieving: RetrieverError (cause: KeyError)"`` or ``"OSError"``.
    """
    kind = type(exc).__name__
    cause = exc.__cause__ or exc.__context__
    marked = failed_retriever(exc)
    if marked is not None and marked[1] == "build":
        return f"retriever {marked[0]!r} failed while loading: {kind}: {exc}"
    text = kind if cause is None else f"{kind} (cause: {type(cause).__name__})"
    if marked is not None:
        return f"retriever {marked[0]!r} failed while retrieving: {text}"
    return text


class GoldRuns:
    """The latest gold-set run; one run at a time, in a background thread.

    Args:
        settings: the frozen configuration (``shadow`` and ``eval`` sections).
        on_run: called with each finished run's JSON (e.g. the telemetry gauges).
        on_failure: called with the exception's type name when a run fails.
        runner: the function doing one run (tests inject one).
    """

    def __init__(
        self,
        settings: Settings,
        on_run: Callable[[Mapping[str, Any]], None] = lambda run: None,
        on_failure: Callable[[str], None] = lambda reason: None,
        runner: Callable[[Settings, str], dict[str, Any]] = run_gold_set,
    ) -> None:
        self.settings = settings
        self._on_run, self._on_failure, self._runner = on_run, on_failure, runner
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self.latest: dict[str, Any] | None = None
        self.last_error: str | None = None
        self.runs = 0

    @property
    def enabled(self) -> bool:
        """Whether there is anything to run: a gold set (``gold_set``; never a stand-in) and
        production or a candidate."""
        shadow = self.settings.shadow
        return self.settings.gold_set is not None and (
            shadow.production is not None or bool(shadow.candidates)
        )

    @property
    def running(self) -> bool:
        """Whether a run is in progress."""
        thread = self._thread
        return thread is not None and thread.is_alive()

    def start(self, trigger: str = "on_demand") -> bool:
        """Start a run in the background; ``False`` when one is already running."""
        with self._lock:
            if self.running or not self.enabled or self._stop.is_set():
                return False
            self._thread = threading.Thread(target=self._run, args=(trigger,),
                                            name="goldwatch-gold-run", daemon=True)  # fmt: skip
            self._thread.start()
            return True

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the current run; return whether none is running afterwards."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout_s)
        return not self.running

    def _run(self, trigger: str) -> None:
        try:
            run = self._runner(self.settings, trigger)
        except Exception as exc:  # a failed run is reported, never kills the service
            self.last_error = type(exc).__name__
            log.error("gold-set run failed: %s", failure_line(exc))
            self._on_failure(self.last_error)
            return
        self.latest, self.last_error = run, None
        self.runs += 1
        self._on_run(run)

    def schedule(self, ready: Callable[[], bool] = lambda: True, ready_wait_s: float = 60.0
                 ) -> None:  # fmt: skip
        """Start the scheduler thread (``shadow.evaluate_every_s``; a first run with
        ``shadow.evaluate_on_start`` once ``ready()`` holds or ``ready_wait_s`` passed, so the
        run's CPU does not delay the service becoming ready). No-op when neither is set or
        nothing is declared."""
        every = self.settings.shadow.evaluate_every_s
        if not self.enabled or (every is None and not self.settings.shadow.evaluate_on_start):
            return

        def loop() -> None:
            if self.settings.shadow.evaluate_on_start:
                deadline = time.monotonic() + ready_wait_s
                while not ready() and time.monotonic() < deadline:
                    if self._stop.wait(0.2):
                        return
                self.start("start")
            while every is not None and not self._stop.wait(every):
                self.start("schedule")

        threading.Thread(target=loop, name="goldwatch-gold-schedule", daemon=True).start()

    def stop(self) -> None:
        """Stop the scheduler and refuse new runs; a run in progress goes on (see
        :meth:`close`)."""
        with self._lock:  # a start racing this either ran first (``close`` joins it) or refuses
            self._stop.set()

    def close(self, timeout_s: float = 15.0) -> bool:
        """:meth:`stop`, then wait up to ``timeout_s`` seconds for a run in progress to finish
        (its result and history rows are kept).

        The wait is what makes the process's exit safe: a daemon thread still inside a
        native call that released the GIL (scipy's pybind11 kernels, for one) when the
        interpreter finalises is ended with ``pthread_exit``, whose forced unwinding through
        a ``noexcept`` C++ frame aborts the whole process ("terminate called without an
        active exception", exit status -6).

        Returns:
            Whether no run is in progress afterwards; ``False`` (and an error in the log)
            when one outlived ``timeout_s`` and is abandoned.
        """
        self.stop()
        if self.wait(timeout_s):
            return True
        log.error("gold-set run still in progress %.1f s after the stop; abandoned (its result "
                  "is not kept)", timeout_s)  # fmt: skip
        return False
