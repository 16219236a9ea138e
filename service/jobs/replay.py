"""The ``goldwatch replay`` job: a whole query log through the live pipeline, and its report.

The report (``--format json``)::

    {"notices": [str, ...], "file", "consumed", "blank_lines", "processed", "duplicates",
     "dead_lettered": {reason: n},
     "dead_lettered_total", "dropped": {"<field>: <reason>": n}, "batches", "dlq_path",
     "analytics": {"languages": {lang: n},
                   "language_labels": {"labels", "limit", "unlabelled": [...], "notice"},
                   "topics": {topic: n},
                   "topic_labels": {topic: label},
                   "refusals": {"answers", "refused", "rate"},
                   "out_of_scope": {"scored", "out_of_scope", "share", "over_refusals",
                                    "under_refusals", "calibration": {...},
                                    "quality": {"auc", "auc_low", "auc_high", ...} | None,
                                    "uncalibrated": reason | None,
                                    "off": why no detector runs | None},
                   "novelty": {"novel", "share", "quality": {...} | None,
                               "uncalibrated": reason | None, "off": reason | None},
                   "detector_quality": {detector: {"auc", "auc_low", "auc_high", "level",
                                        "n_pos", "n_neg", "method", "measured_on", "trusted",
                                        "uncalibrated"}},
                   "quality_floor": 0.75, "quality_min_class": 10,
                   "pii_scrubbed": {type: n},
                   "drift": {dimension: {"state", "comparisons", ...}, "alarms": [...]},
                   "series": {"bucket_s", "buckets": [{"start", "languages", "topics",
                                                       "answers", "refused", "known",
                                                       "agreement"}],
                              "over_time": {"min_n", "level", "known", "agreement"}}},
     "shadow": {...}, "quality": {...},
     "gold_candidates": {"n_suggestions", "by_reason": {reason: n}, "top": [record, ...],
                         "in_gaps": [{"dimension", "value", "gap", "n", "top": [...]}],
                         "n_gaps", "shed", "max_new_per_batch",
                         "shadow_not_compared": {candidate: {"offered", "compared",
                                                             "not_compared", "by_cause"}}}}

``blank_lines`` counts the log's blank (empty or whitespace-only) lines: no data, so neither
events consumed nor dead letters, but lines all the same (lines read = ``consumed +
blank_lines``; trial 22 read 2,902 lines as "2,901 consumed" and said nothing of the blank one).
The text and HTML reports name them when there are any.

``dropped`` counts what was dropped while its event was kept: optional fields with a wrong
type or value (``"feedback.rating: wrong_type"``: the field path and reason, as the labels of
``goldwatch_event_fields_dropped_total``, which ``serve`` exports) and events a pipeline
stage removed, by the stage's reason (none today: duplicates have their own count).

``notices`` comes first and says what the numbers do not cover: without a configured gold
set it holds :data:`service.settings.GOLD_SET_OFF` (gold-set comparisons are off, and which
setting turns them on); the text and HTML reports show it at their top.

``analytics.language_labels`` is the ``language`` metric label set (fixed at start) and the
live languages it exports as ``other`` that are worth naming, with the line naming them and
the setting that labels them (:mod:`service.language.unlabelled`); the text and HTML reports
show that line under the language shares and mark those languages' coverage gaps.

``gold_candidates.in_gaps`` lists, per coverage gap of the recent events at the end
(``harvest.gap_window``), its ``gap``, the suggestions of its language or topic and their
first 3 in the labellers' queue, the 10 largest of ``n_gaps`` gaps: the ``top`` list ranks
across reasons, so a gap's own can all fall below it.

``gold_candidates.shed`` counts the picked events whose new question harvesting shed
(``goldwatch_gold_candidates_shed_total``: over ``harvest.max_new_per_batch`` new questions
in their batch, not kept); ``max_new_per_batch`` is the bound in effect (``None``: none).
A replay sets no bound unless ``harvest.max_new_per_batch`` is set explicitly (config file,
environment): it has no live latency to protect, and its full 500-event batches would
otherwise shed far more than the live service's small ones (the demo log: 218 suggestions
kept with the bound of 48, 489 without; the live demo keeps 482).

``gold_candidates.shadow_not_compared`` (with shadow candidates) counts, per candidate, the
events offered whose comparison did not complete, by cause (:mod:`service.shadow.not_compared`):
none of them can give a suggestion the reason ``shadow_disagreement``. A replay waits for every
comparison, so only the configuration's causes (``scrubbed``, ``not_sampled`` …) and a failing
candidate's appear; ``serve`` under load adds ``cpu_budget``/``queue_full`` (trial 45).
"""

from __future__ import annotations

import fcntl
import math
import os
import threading
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NotRequired, TypedDict, cast

from prometheus_client import CollectorRegistry

from consumers.engine import Engine
from consumers.file_source import FileSource, state_dead_letters
from consumers.loop import make_decoder, run
from service.coverage import OUT_OF_SCOPE_COUNTED
from service.document_groups import all_tied_note, grouped_note, uncovered_note
from service.drift.stage import (
    adjusted_note,
    alarm_kind,
    counted_before_text,
    rate_moves,
    restart_text,
    silenced_verb,
    untested_text,
)
from service.embeddings.config import english_model_notice
from service.evaluation.detector_quality import (
    apart_text,
    on_topic_flag_text,
    operating_point_summary,
    over_refusals_explained_text,
    under_refusals_explained_text,
)
from service.harvest.shed_note import not_compared_note, shed_note
from service.jobs.series import TimeSeries
from service.language.detector import OTHER as OTHER_LANGUAGE
from service.language.excluded import excluded_text
from service.language.quality import agreement_text
from service.pipeline import CountingStage, Pipeline
from service.quality.by_group import LIVE_VS_GOLD, group_text_lines, paired_by_question_text
from service.quality.by_language import rate_text
from service.quality.over_time import MIN_N, agreement_line, known_line, over_time
from service.quality.stage import language_lines, rejected_note
from service.quality.where import missing_rows_text, missing_window_text
from service.refusals.families import shown_families
from service.refusals.languages import scope_language_lines
from service.refusals.recall import INHERITED, recall_lines
from service.refusals.scope import (
    calibration_limit,
    live_by_language_text,
    no_gold_rows_text,
    support_by_language_text,
    support_text,
    unstable_text,
    windows_count,
)
from service.runtime.live import build_live
from service.runtime.memory import freeze_heap
from service.runtime.reports import (
    AnalyticsReport,
    HarvestSummary,
    LiveReports,
    analytics_report,
    json_safe,
    live_reports,
)
from service.runtime.threads import native_threads
from service.settings import GOLD_SET_OFF, Settings, gold_set_notice
from service.shadow.stage import FEW_RESULTS, ShadowStageReport, with_n
from service.state import StateStore
from service.telemetry import build_metrics
from service.topics.model import NOVEL
from service.topics.quality import DEFAULT_MIN_KAPPA, by_topic_text, kappa_text, near_chance_text
from service.topics.quality import agreement_text as topic_agreement_text
from service.topics.quality import no_gold_rows_text as topic_no_gold_rows_text


class ReplayReport(LiveReports):
    """:func:`run_replay`'s report (``goldwatch replay --format json``): its ``notices``
    (what the numbers do not cover), the ``file`` replayed, the counts of the run
    (``dead_lettered`` by reason; ``dropped``: optional fields by field and reason), the
    dead-letter file, the ``analytics``
    (:class:`~service.runtime.reports.AnalyticsReport` with its ``series``; ``None`` when
    analytics are off) and the reports of the stages that are on (``shadow``, ``quality``,
    ``gold_candidates``: :class:`~service.runtime.reports.LiveReports`). NaN and infinities
    are ``None`` (:func:`~service.runtime.reports.json_safe`)."""

    notices: list[str]
    file: str
    consumed: int
    blank_lines: int
    processed: int
    duplicates: int
    dead_lettered: dict[str, int]
    dead_lettered_total: int
    dropped: dict[str, int]
    batches: int
    dlq_path: str
    analytics: AnalyticsReport | None
    resumed: NotRequired[ResumedFrom]


class ResumedFrom(TypedDict):
    """In a replay resumed from ``--state`` (a state file that had processed events): the
    ``state`` file and the events ``processed_in_all`` its runs processed — what the analytics,
    the series and the suggestions cover, where ``consumed``/``processed`` count this run."""

    state: str
    processed_in_all: int


def replay_dlq_path(file: Path) -> Path:
    """The dead-letter file of a replay without ``--state`` nor ``--dlq``:
    ``<file>.replay.dlq.jsonl`` beside the log (``stdin.replay.dlq.jsonl`` in the current
    folder for ``-``). Not the file source's ``<file>.dlq.jsonl`` (nor ``source.dlq_path``):
    a fresh replay empties its dead-letter file first, and that one may hold the letters of a
    ``goldwatch serve`` reading the same log (a tenth trial: a replay wiped them)."""
    if str(file) == "-":
        return Path("stdin.replay.dlq.jsonl")
    return Path(f"{file}.replay.dlq.jsonl")


class DeadLetterLock:
    """An exclusive, non-blocking ``flock`` on a fresh replay's dead-letter file, held from
    before the replay empties it until the replay ends (:meth:`release`; the process's end
    releases it too, however it ends).

    Two fresh replays of stdin in one folder (or of one file) would write one
    ``*.replay.dlq.jsonl``, each emptying it first: the second would wipe the first's
    letters. The lock makes the second fail at start instead. A writer that does not lock
    (``goldwatch serve`` appending to its own file) is not held off: only replays take it.
    A file the lock had to create and no letter was written to is removed again, so a clean
    replay leaves no empty dead-letter file behind.

    Args:
        path: the dead-letter file (created, with its folder, if missing).

    Raises:
        ValueError: another process holds the lock (the message names the file and the way
            out, ``--dlq``), or the file cannot be created or opened.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.created = not path.exists()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:  # the wording of the loop's own failure to write there
            raise ValueError(f"cannot write dead letters to {path}: {exc.strerror or exc}"
                             ) from None  # fmt: skip
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ValueError(f"another replay is writing the dead-letter file {path}: wait for "
                             "it, or give this one its own with --dlq") from None  # fmt: skip
        except BaseException:
            os.close(fd)
            raise
        self._fd: int | None = fd

    def release(self) -> None:
        """Remove the file if this lock created it and it is still empty, then unlock.
        Idempotent."""
        if self._fd is None:
            return
        try:
            if self.created and os.fstat(self._fd).st_size == 0:
                self.path.unlink(missing_ok=True)
        finally:
            os.close(self._fd)
            self._fd = None


def run_replay(
    settings: Settings, file: Path, state_path: Path | None, dlq_path: Path | None
) -> ReplayReport:
    """Replay ``file`` (``-``: stdin) to its end and return the report.

    Without ``state_path`` the replay starts fresh, and so does its dead-letter file:
    ``dlq_path``, else its own :func:`replay_dlq_path` (never the file source's or
    ``source.dlq_path``, which a ``goldwatch serve`` of the same log writes). With
    ``state_path`` it resumes and appends to ``dlq_path``, else ``source.dlq_path``, else
    the state's own file, as serve does (:func:`~consumers.file_source.state_dead_letters`:
    ``<state>.dlq.jsonl``, or the file the state already names — ``<file>.dlq.jsonl`` for a
    state that read the log before session 51). The
    shadow CPU budget (``shadow.max_cpu_share``) is off: a replay has no live path to
    protect, so every sampled shadow call runs. For the same reason harvesting sheds no new
    question (``harvest.max_new_per_batch`` is ``None``) unless that setting was given
    explicitly (in ``settings.harvest.model_fields_set``): the bound is per batch, and a
    replay's batches are full (``pipeline.max_batch_size``) where the live service's are small.

    Raises:
        service.state.StateError: the state file is unusable.
        ValueError, OSError: an input or the analytics set-up is unusable, or another fresh
            replay is writing the same dead-letter file (:class:`DeadLetterLock`).
    """
    # A replay has no live traffic to protect: every sampled shadow call runs, and every new
    # question is considered by harvesting (unless the bound was asked for explicitly).
    harvest = settings.harvest
    if "max_new_per_batch" not in harvest.model_fields_set:
        harvest = harvest.model_copy(update={"max_new_per_batch": None})
    settings = settings.model_copy(
        update={
            "shadow": settings.shadow.model_copy(update={"max_cpu_share": None}),
            "harvest": harvest,
        }
    )
    registry = CollectorRegistry()
    if dlq_path is None and not state_path:  # never takes (nor empties) serve's dead letters
        dlq_path = replay_dlq_path(file)
    if state_path:
        Path(state_path).parent.mkdir(parents=True, exist_ok=True)  # as serve does
        state = StateStore.open(state_path, exclusive=True)
        # the state's own file (or the one it already counts letters in), as serve does
        dlq_path = (
            dlq_path
            or settings.source.dlq_path
            or state_dead_letters(
                str(file), state.get, settings.state.dead_letter_path(Path(state_path))
            )
        )
    else:
        state = StateStore.in_memory()
    try:
        cache = settings.state.model_cache_dir(Path(state_path)) if state_path else None
        live = build_live(settings, registry, state, replay=True, model_cache=cache)
    except BaseException:
        state.close()  # and its writer's lock
        raise
    freeze_heap()
    # the counts over event time: a last stage, so a resumed replay restores them too
    series = TimeSeries()
    if live.shadow is not None:  # each candidate's agreement, by its event's time
        live.shadow.listeners.append(series.observe_shadow)
    pipeline = Pipeline([*live.pipeline.stages, series])
    dlq_lock: DeadLetterLock | None = None
    try:
        source = FileSource(str(file), dlq_path=dlq_path)
        if state_path is None:  # a fresh replay empties its dead-letter file: never under
            dlq_lock = DeadLetterLock(source.dlq_path)  # another fresh replay's feet
            source.dlq_path.write_bytes(b"")
        decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes,
                               records=live.pipeline.reads_records)  # fmt: skip
        metrics = build_metrics(registry)
        engine = Engine(pipeline, state, metrics, decoder, on_batch=live.observe,
                        future_tolerance_s=settings.analytics.drift.future_tolerance_s)  # fmt: skip
        with native_threads(settings.pipeline.native_threads):  # the models are loaded
            report = run(
                source,
                pipeline,
                state,
                engine.metrics,
                threading.Event(),
                # checkpoints by count only: the harvest sinks are written at checkpoints
                # (replay_clock), so their timing must follow from the events
                config=settings.pipeline.model_copy(update={"commit_interval_s": math.inf}),
                until_eof=True,
                engine=engine,
            )
            if (drift := live.analytics.drift) is not None:
                drift.finish()  # the events held at the log's end that nothing refuted
            live.finish()
    finally:
        live.close()
        state.close()
        if dlq_lock is not None:
            dlq_lock.release()
    notices = [
        gold_set_notice(settings),
        *live.notices,
        *(live.shadow.cut_off_notices() if live.shadow is not None else ()),
        english_model_notice(settings.analytics.embeddings,
                             live.analytics.gold_counts.get("language", {})),
    ]  # fmt: skip
    doc: dict[str, Any] = {  # a ReplayReport (the cast below)
        "notices": [notice for notice in notices if notice],
        "file": str(file),
        "consumed": report.consumed,
        "blank_lines": report.blank_lines,
        "processed": report.processed,
        "duplicates": report.duplicates,
        "dead_lettered": report.dead_lettered,
        "dead_lettered_total": report.dead_lettered_total,
        "dropped": {**report.dropped, **metrics.fields_dropped()},
        "batches": report.batches,
        "dlq_path": str(source.dlq_path),
        "analytics": _with_series(analytics_report(live), series),
        **live_reports(live, registry),
    }
    counted = next((st for st in pipeline.stages if isinstance(st, CountingStage)), None)
    if state_path and counted is not None and counted.processed > report.processed:
        # resumed: the analytics cover every run on this state file, the counts above this run
        doc["resumed"] = {"state": str(state_path), "processed_in_all": counted.processed}
    return cast(ReplayReport, json_safe(doc))  # the same keys, NaN and infinities as None


def _with_series(analytics: AnalyticsReport | None, series: TimeSeries) -> AnalyticsReport | None:
    """The analytics report with its counts per event-time bucket (``series``) and, in it,
    live quality and shadow agreement regrouped over time (``over_time``:
    :func:`service.quality.over_time.over_time`, its points of at least
    ``analytics.quality_min_class`` results and distinct questions)."""
    if analytics is None:
        return None
    counts = series.report()
    min_n = max(2, int(analytics.get("quality_min_class", MIN_N)))
    return {**analytics, "series": {**counts, "over_time": over_time(counts, min_n=min_n)}}


def family_cell(row: Mapping[str, Any], min_events: int, flag: str = "; NOT MEASURED") -> str:
    """One family's verdicts and the gold rows measuring them (a row of
    ``out_of_scope.by_family.rows``): ``"pdf 12/400 (3.0%; 19 answerable gold rows, 18 kept
    in scope held out)"``; a family of fewer than ``min_events`` scored events says so.

    >>> print(family_cell({"family": "p-0037", "scored": 1, "out_of_scope": 1, "share": 1.0,
    ...     "answerable_gold": 0, "kept_held_out": 0, "too_few": True, "unmeasured": False},
    ...     200))  # doctest: +NORMALIZE_WHITESPACE
    p-0037 1/1 (100.0%; 0 answerable gold rows, 0 kept in scope held out; too few events to
    judge (n < 200))
    """
    share = "-" if row["share"] is None else f"{row['share']:.1%}"
    note = flag if row["unmeasured"] else ""
    if row.get("too_few"):
        note = f"; too few events to judge (n < {min_events})"
    return (f"{row['family']} {row['out_of_scope']:,}/{row['scored']:,} ({share}; "
            f"{row['answerable_gold']} answerable gold rows, {row['kept_held_out']} "
            f"kept in scope held out{note})")  # fmt: skip


def family_lines(families: Mapping[str, Any]) -> list[str]:
    """The out-of-scope block's family lines (``out_of_scope.by_family``,
    :func:`~service.runtime.reports.families_report`): the warning naming the families whose
    verdicts the calibration did not measure (first, when any), then the
    :data:`~service.refusals.families.FAMILIES_SHOWN` largest families and the flagged ones
    with their verdicts and the gold rows measuring them (``and N more``), what the counts
    cover, and the rule.

    >>> for line in family_lines({"text": None, "rule": "R", "min_events": 200, "rows": [
    ...     {"family": "news", "scored": 10, "out_of_scope": 1, "share": 0.1,
    ...      "answerable_gold": 26, "kept_held_out": 25, "unanswerable_gold": 3,
    ...      "too_few": True, "unmeasured": False}]}):
    ...     print(line)  # doctest: +NORMALIZE_WHITESPACE
      out of scope by family: news 1/10 (10.0%; 26 answerable gold rows, 25 kept in scope held
      out; too few events to judge (n < 200))
        (R)
    """
    lines = []
    if families.get("text"):
        lines.append(f"  WARNING: {families['text']}")
    min_events = int(families.get("min_events", 0))
    shown, more = shown_families(families.get("rows") or [])
    cells = [family_cell(row, min_events) for row in shown]
    if cells:
        since = f"; {families['since_text']}" if families.get("since_text") else ""
        lines.append("  out of scope by family: " + ", ".join(cells)
                     + (f" and {more} more" if more else "") + since)  # fmt: skip
        lines.append(f"    ({families['rule']})")
    return lines


def quality_text(quality: dict[str, Any] | None, detector: str | None = None) -> str:
    """``"ROC AUC 0.912 [0.880, 0.941] on 12 unanswerable / 48 answerable gold questions; at
    its threshold answerable kept in scope 38 of 40 (TPR 0.950); unanswerable judged in scope
    0 of 12 (FPR 0.000); balanced accuracy 0.975"`` of ``detector``'s
    :func:`detector_quality_report` entry (the operating point only when it has one)."""
    if not quality or quality.get("auc") is None:
        return "ROC AUC not measured"
    low, high = quality.get("auc_low"), quality.get("auc_high")
    interval = f" [{low:.3f}, {high:.3f}]" if low is not None and high is not None else ""
    return (f"ROC AUC {quality['auc']:.3f}{interval}{measured_on_text(quality)}"
            f"{operating_point_text(quality, detector)}")  # fmt: skip


def measured_on_text(quality: dict[str, Any] | None) -> str:
    """``" on 12 unanswerable / 48 answerable gold questions"`` of a
    :func:`detector_quality_report` entry (its ``measured_on``), or ``""`` without one."""
    return f" on {quality['measured_on']}" if quality and quality.get("measured_on") else ""


def operating_point_text(quality: dict[str, Any] | None, detector: str | None = None) -> str:
    """``"; at its threshold answerable kept in scope 38 of 40 (TPR 0.950); unanswerable
    judged in scope 0 of 12 (FPR 0.000); balanced accuracy 0.975"`` of ``detector``'s
    :func:`detector_quality_report` entry
    (:func:`~service.evaluation.detector_quality.operating_point_summary`: the classes named
    for a detector of :data:`~service.evaluation.detector_quality.RATE_WORDS`), or ``""``
    without an operating point."""
    if not quality or quality.get("balanced_accuracy") is None:
        return ""
    return f"; at its threshold {operating_point_summary(quality, detector)}"


def _language_shares(counts: Mapping[str, int], shown: int = 6) -> str:
    """``"en 80%, hi-Latn 8%, …, 3 more 4% (zh, ru, pt)"``: the ``shown`` most frequent
    languages (``counts`` most common first), then the rest as one share naming them (the
    first five; the bounded label ``other`` as ``other``), so the line sums to 100 % (±
    rounding) and no language hides behind a name it does not carry on ``/metrics``; a rest
    of one language is shown by its name. ``""`` without counts.

    >>> _language_shares({"en": 80, "hi": 8, "es": 7, "de": 5}, shown=2)
    'en 80%, hi 8%, 2 more 12% (es, de)'
    >>> _language_shares({"en": 90, "hi": 9, "zh": 1}, shown=2)
    'en 90%, hi 9%, zh 1%'
    """
    total = sum(counts.values()) or 1
    named = [(k, v) for k, v in counts.items() if k != OTHER_LANGUAGE][:shown]
    parts = [f"{k} {v / total:.0%}" for k, v in named]
    kept = {k for k, _ in named}
    rest = [(k, v) for k, v in counts.items() if k not in kept and v]
    if len(rest) == 1:
        parts.append(f"{rest[0][0]} {rest[0][1] / total:.0%}")
    elif rest:
        names = ", ".join(k for k, _ in rest[:5]) + (", …" if len(rest) > 5 else "")
        parts.append(f"{len(rest)} more {sum(v for _, v in rest) / total:.0%} ({names})")
    return ", ".join(parts)


def blank_lines_text(n: int) -> str:
    """``", 1 blank line (no data)"``: the blank lines of a replayed log, for the text and
    HTML reports (``""`` without any).

    >>> blank_lines_text(2), blank_lines_text(0)
    (', 2 blank lines (no data)', '')
    """
    if not n:
        return ""
    return f", {n} blank line{'' if n == 1 else 's'} (no data)"


def render_text(doc: ReplayReport) -> str:
    """A short human summary of :func:`run_replay`'s report (its notices first)."""
    lines = [f"NOTE: {notice}" for notice in doc.get("notices", ())]
    lines += [
        f"{doc['file']}: {doc['consumed']} consumed, {doc['processed']} processed, "
        f"{doc['duplicates']} duplicates, {doc['dead_lettered_total']} dead-lettered"
        + blank_lines_text(doc.get("blank_lines", 0))
        + (" in this run" if "resumed" in doc else "")
    ]
    # this run's dead letters and dropped fields first: a resumed report's totals follow
    lines += [f"  dead-lettered {r}: {n}" for r, n in sorted(doc["dead_lettered"].items())]
    if doc["dead_lettered_total"]:
        lines.append(f"dead letters in {doc['dlq_path']}")
    if doc.get("dropped"):
        dropped = ", ".join(f"{key} {n}" for key, n in sorted(doc["dropped"].items()))
        this_run = ", in this run" if "resumed" in doc else ""
        lines.append(f"dropped (the events kept{this_run}): {dropped}")
    if resumed := doc.get("resumed"):
        lines.append(f"resumed from {resumed['state']}: what follows covers every run on it "
                     f"({resumed['processed_in_all']} events processed in all)")  # fmt: skip
    analytics = doc.get("analytics")
    min_n = analytics.get("quality_min_class", FEW_RESULTS) if analytics else FEW_RESULTS
    lines += _shadow_lines(doc.get("shadow"), min_n)
    over = ((analytics.get("series") if analytics else None) or {}).get("over_time")
    shadow = doc.get("shadow")
    for name in shadow["candidates"] if shadow else ():
        line = agreement_line(over, name)  # its RBO over time: the worst point
        lines += [line] if line else []
    if not analytics:
        return "\n".join(lines + harvest_lines(doc.get("gold_candidates")))
    langs = _language_shares(analytics["languages"])
    names = analytics.get("topic_labels") or {}
    novelty = analytics.get("novelty") or {}
    caveat = {}  # the novel share next to what it is worth
    topic_drift = (analytics.get("drift") or {}).get("topic") or {}
    nearest = topic_drift.get("categories_are")
    kappa_why = (analytics.get("topic_quality") or {}).get("uncalibrated")
    if nearest and novelty.get("uncalibrated"):
        # the detector labels nothing now: a novel count is the lifetime totals' history (a
        # state counted while it labelled), not a share of this traffic; the share is of
        # every question counted so far, not of those counted before
        novel_n, all_n = analytics["topics"].get(NOVEL, 0), sum(analytics["topics"].values())
        before = counted_before_text(topic_drift.get("windows_restarted"))
        caveat[NOVEL] = f" ({novel_n} of all {all_n} questions so far, {before})"
    elif novelty.get("uncalibrated"):
        on = measured_on_text(novelty.get("quality"))
        caveat[NOVEL] = (f" (UNCALIBRATED, not facts: {novelty['uncalibrated']}"
                         f"{f'; measured{on}' if on else ''})")  # fmt: skip
    elif (novelty.get("quality") or {}).get("auc") is not None:
        caveat[NOVEL] = f" (novelty detector {quality_text(novelty['quality'], 'novelty')})"
    ranked = list(analytics["topics"].items())
    listed = ranked[:6] + [(k, v) for k, v in ranked[6:] if k == NOVEL]  # novel always shown
    # shares of the questions given a topic (one in a language without gold rows is given none)
    judged = sum(analytics["topics"].values()) or 1
    topics = "; ".join(f"{names.get(k, k)} {v / judged:.0%}{caveat.get(k, '')}"
                       for k, v in listed)  # fmt: skip
    if len(ranked) > len(listed):
        topics += f"; {len(ranked) - len(listed)} more in the JSON report"
    if novelty.get("off") and not set(analytics["topics"]) <= {"und"}:
        topics += f"; {novelty['off']}"
    elif nearest and kappa_why and novelty.get("uncalibrated"):  # (else the nearest line says)
        topics += f"; no question is labelled novel: {novelty['uncalibrated']}"
    refusals = analytics["refusals"]
    topics_off = not names and set(analytics["topics"]) <= {"und"}
    if topics_off:  # no model: nothing to fit on
        topics = ("off (no topic model: set gold_set:, corpus: or analytics.topics_model to "
                  "have one)")  # fmt: skip
    elif not ranked:  # a model, but no event to assign
        topics = f"none (no events processed; {len(names)} topics in the model)"
    langs = langs or "none (no events processed)"
    left_out = analytics.get("language_candidates")  # candidates narrower than the defaults
    if left_out is not None and left_out.get("unreliable"):
        named = ", ".join(list(left_out["by_language"])[:3])
        lines.append(f"languages (UNRELIABLE, not facts: the candidates leave out {named}, "
                     f"read in {left_out['share']:.1%} of the questions): {langs}")  # fmt: skip
    else:
        lines.append(f"languages: {langs}")
    labels: Mapping[str, Any] = analytics.get("language_labels") or {}
    if labels.get("notice"):  # a language /metrics exports as "other", worth naming
        lines.append(f"  {labels['notice']}")
    if analytics.get("language_quality") is not None:  # with a gold set: measured on it
        agreement = agreement_text(analytics["language_quality"], analytics["languages"],
                                   analytics.get("quality_min_class", 10))  # fmt: skip
        lines.append(f"  {agreement}")
    if left_out is not None:
        lines.append(f"  {excluded_text(left_out)}")
    topic_quality = analytics.get("topic_quality")
    if (topic_why := (topic_quality or {}).get("uncalibrated")) and not topics_off and ranked:
        # near chance held out: the shares are what the model read, not what was asked
        lines += [f"topics (UNCALIBRATED, the model's reading, not facts: {topic_why}; no "
                  f"alarm): {topics}"]  # fmt: skip
    elif nearest and not topics_off and ranked:
        # novelty uncalibrated: most questions on other topics read as their nearest one
        lines += [f"topics (NEAREST gold topic, not facts: {nearest}): {topics}"]
    else:
        lines += [f"topics: {topics}"]
    if topic_quality is not None:  # a topic model
        agreement = topic_agreement_text(topic_quality["agreement"], topic_quality["supervised"],
                                         analytics.get("quality_min_class", 10))  # fmt: skip
        kappa = kappa_text(topic_quality.get("kappa"), topic_quality.get("chance"),
                           topic_quality.get("min_kappa", DEFAULT_MIN_KAPPA),
                           (topic_quality["agreement"] or {}).get("n"))  # fmt: skip
        lines.append(f"  {agreement}" + (f"; {kappa}" if kappa else ""))
        if not topic_why and (near := near_chance_text(
                topic_quality["agreement"], topic_quality.get("chance"),
                analytics.get("quality_min_class", 10))):  # fmt: skip
            lines.append(f"  {near}")
        if by_topic := by_topic_text(topic_quality["agreement"], limit=6):
            lines.append(f"  {by_topic}")
        if split := (topic_quality.get("language_split") or {}).get("text"):
            lines.append(f"  {split}")
    if no_topic := topic_no_gold_rows_text(
        analytics.get("topic_no_gold_rows_by_language") or {},
        analytics.get("topic_no_gold_rows_covered_now"),
    ):
        lines.append(f"  {no_topic}")
    recall: Mapping[str, Any] = refusals.get("text_recall") or {}
    if refusals["rate"] is not None:
        lower = recall.get("lower_bound")  # the text reader misses refusals (measured)
        if lower:  # headline, estimate, why, fix: short lines; then how they were counted
            said = recall_lines(recall)
            lines.append(f"refusals: {said[0]}")
            lines += [f"  {line}" for line in said[1:]]
            lines.append(f"  counted: {refusals['method']}")
        else:
            lines.append(f"refusals: {refusals['refused']}/{refusals['answers']} "
                         f"({refusals['rate']:.1%}; {refusals['method']})")  # fmt: skip
        lines += refusal_language_lines(refusals, analytics.get("quality_min_class", 10))
    else:
        lines.append("refusals: none (no answers in this log)")
    known_over = refusals.get("known_over_refusal") or {}
    if known_over.get("text"):
        lines.append(f"  {known_over['text']}")
    scope = analytics["out_of_scope"]
    if scope.get("off"):
        lines.append(f"out of scope: off: {scope['off']}")
    elif scope["share"] is not None:
        support = scope.get("support")
        of = " of their script's measured languages" if (support or {}).get("by_language") else ""
        if support and float(support.get("trim") or 0.0) > 0:  # (robust_cutoff)
            of += " but the lowest the cutoff leaves out"
        off_corpus = (f"; {scope.get('off_corpus', 0)} farther from the corpus than any "
                      f"answerable gold question{of}" if support else "")  # fmt: skip
        # the share counts every verdict; the drift windows only the stable ones (say so
        # where the range marks some: a user compares this share with the alarm's rates)
        every = " of every verdict" if scope.get("unstable") else ""
        counts = (
            f"{scope['out_of_scope']}/{scope['scored']} ({scope['share']:.1%}{every}"
            f"{off_corpus}); "
            f"over-refusals {scope['over_refusals']}"
            f"{_cite_known(over_refusals_explained_text(scope), scope, known_over)}, "
            f"under-refusals {scope['under_refusals']}"
        )
        counts += under_refusals_explained_text(scope)
        families = scope.get("by_family") or {}
        if families.get("under_refusals_text"):  # in families the calibration did not measure
            counts += f" ({families['under_refusals_text']})"
        scope_languages = scope.get("verdicts_by_language") or {}
        if scope_languages.get("under_refusals_text"):  # in the confounded languages
            counts += f" ({scope_languages['under_refusals_text']})"
        if recall.get("lower_bound"):  # over- and under-refusals inherit the missed refusals
            counts += f"; over- and under-refusals {INHERITED}"
        quality = quality_text(scope.get("quality"), "out_of_scope")
        if scope.get("uncalibrated"):
            why = str(scope["uncalibrated"])
            on = measured_on_text(scope.get("quality"))
            if on and "measured on only" not in why:  # (too few: the reason says on what)
                counts += f"; detector measured{on}"
            # (the detector now counting calibrated: earlier ones made counts, it alarms)
            alarm = ("; no alarm" if (scope.get("quality") or {}).get("uncalibrated")
                     or not scope.get("quality") else "; the detector now counting is "
                     f"calibrated: {quality}")  # fmt: skip
            lines.append(f"out of scope (UNCALIBRATED, not facts: {why}{alarm}): {counts}")
            if advice := (scope.get("quality") or {}).get("to_calibrate"):
                lines.append(f"  to calibrate it: {advice}")
        else:
            lines.append(f"out of scope: {counts}; detector {quality}")
            if (on_topic := on_topic_flag_text(scope.get("quality"))) is not None:
                lines.append(f"  {on_topic}")
        if lacking := no_gold_rows_text(scope):
            lines.append(f"  {lacking}")
        if families:
            lines += family_lines(families)
        if scope_languages:
            lines += scope_language_lines(scope_languages)
        versions = scope.get("gold_set_versions") or []
        if len(versions) > 1:  # cumulative counts judged by detectors of several gold sets
            lines.append(f"  out-of-scope counts are cumulative over gold-set versions "
                         f"{' -> '.join(versions)} (the detector was refitted on each; its "
                         "quality above is the current one's)")  # fmt: skip
        if scope.get("counted_under_notice"):
            lines.append(f"  {scope['counted_under_notice']}")
        if (apart := apart_text(scope.get("quality"))) is not None:
            lines.append(f"  {apart}")
        lines.append(f"  out-of-scope calibration: {calibration_limit(scope.get('quality'))}")
        if fit := (scope.get("quality") or {}).get("method"):  # which gold rows hid which
            lines.append(f"  out-of-scope fit: {fit}")
        if support:
            lines.append(f"  {support_text(support)}")
            lines += [f"    {line}" for line in support_by_language_text(support)]
            live = live_by_language_text(scope)
            if live:
                lines.append(f"    {live}")
            if unstable := unstable_text(scope):
                lines.append(f"    {unstable}")
    scrubbed = {k: v for k, v in analytics["pii_scrubbed"].items() if v}
    if scrubbed:
        lines.append(
            "personal data scrubbed: " + ", ".join(f"{k} {v}" for k, v in scrubbed.items())
        )
    drift = analytics["drift"]
    shown = {dim: drift[dim]["state"]
             for dim in ("language", "topic", "refusal", "out_of_scope", "known_refusal",
                         "known_miss", "terms")
             if dim in drift}  # fmt: skip
    if scope.get("off"):  # no detector: no data to be insufficient
        shown["out_of_scope"] = "off"
    for dim in ("known_refusal", "known_miss"):
        if dim in shown and not (doc.get("quality") or {}).get("threshold"):
            shown[dim] = "off"  # no gold set: no known question to refuse or to score
    if topics_off:  # every question "und": no topic to test (trial 9 read insufficient_data)
        shown["topic"] = "off"
    states = ", ".join(f"{dim} {state}{_untested_note(drift.get(dim), state)}"
                       for dim, state in shown.items())  # fmt: skip
    against = ("baseline comparisons" if GOLD_SET_OFF in doc.get("notices", ())
               else "worst of gold set and baseline comparisons")  # fmt: skip
    lines.append(f"drift now ({against}): {states}")
    block = (doc.get("quality") or {}).get("known_miss_rows")
    if shown.get("known_miss") == "drift" and (rows := missing_rows_text(block)):
        # which gold rows started missing (trial 51 M3), and over which window
        window = missing_window_text(block)
        lines.append(f"  known_miss gold rows, misses/asks in its window vs before"
                     f"{f' ({window})' if window else ''}: {rows}")  # fmt: skip
    lines += [f"  {dim} {silenced_verb(dim)}: {why}"
              for dim, why in sorted(drift.get("suppressed_dimensions", {}).items())]  # fmt: skip
    # windows started afresh under a new labeller (trial 48 H1: a recalibrated detector)
    lines += [f"  {restart_text(dim, drift[dim]['windows_restarted'])}"
              for dim in shown if (drift.get(dim) or {}).get("windows_restarted")]  # fmt: skip
    if terms_line := terms_quality_text(drift.get("terms")):
        lines.append(f"  {terms_line}")
    unlabelled = [u["language"] for u in labels.get("unlabelled") or ()]
    scope_on = not (analytics.get("out_of_scope") or {}).get("off")  # judged out of scope
    lines += coverage_gap_lines(drift, analytics.get("topic_labels") or {}, unlabelled,
                                scope_on=scope_on)  # fmt: skip
    untested: dict[tuple[str, str], list[str]] = {}  # (comparison, why) -> dimensions
    tested = [dim for dim, state in shown.items() if state != "off"]
    for dim in tested:
        for name, test in (drift.get(dim) or {}).get("comparisons", {}).items():
            if test.get("state") == "insufficient_data" and test.get("insufficient"):
                untested.setdefault((name, test["insufficient"]), []).append(dim)
    lines += [f"  {', '.join(dims)} vs {name} not tested (insufficient_data): {why}"
              for (name, why), dims in untested.items()]  # fmt: skip
    # an open alarm its latest test alone would not open (trial 24, MEDIUM 2: it flapped)
    # (a drift that opened none, held by hysteresis: trial 46 F3)
    lines += [f"  {dim} vs {name} "
              f"{'opens no alarm' if test.get('held_because') == 'quiet_hold' else 'drift held'}"
              f": {test['held']}"
              for dim in tested
              for name, test in (drift.get(dim) or {}).get("comparisons", {}).items()
              if test.get("held")]  # fmt: skip
    # the smallest change each comparison can alarm on at its sizes (trial 18: "ok" said
    # nothing of a 60-row gold set and 52 questions an hour seeing no planted change)
    lines += [f"  detectable: {test['detectable']['text']}"
              for dim in tested
              for test in (drift.get(dim) or {}).get("comparisons", {}).values()
              if (test.get("detectable") or {}).get("text")]  # fmt: skip
    lines += [f"  {dim} vs {name} cannot alarm: {test['cannot_alarm']}"
              for dim in tested
              for name, test in (drift.get(dim) or {}).get("comparisons", {}).items()
              if test.get("cannot_alarm")]  # fmt: skip
    timing = drift["event_time"]
    late, future, ahead = timing["late"], timing["future"], timing.get("ahead", 0)
    if late or future or ahead:
        lines.append(
            f"  kept out of the drift windows: {late} late event{'' if late == 1 else 's'}, "
            f"{future} stamped in the "
            f"future, {ahead} too far ahead of the others "
            f"({timing.get('kept_out_share', 0.0):.0%} of the events seen"
            + (f", {timing['recent_kept_out_share']:.0%} of the latest {timing['recent_events']}"
               if timing.get("recent_events") else "")
            + ")"
        )  # fmt: skip
    if timing.get("starved"):
        lines.append(f"  starved: {timing['starved']}")
    for alarm in drift["alarms"]:
        when = datetime.fromtimestamp(alarm["timestamp"], UTC).strftime("%Y-%m-%d %H:%M")
        where = (
            f"{alarm['dimension']} vs {alarm['comparison']} at {when} UTC "
            f"(after {alarm['after_events']} events)"
        )
        if alarm.get("widened"):  # an open alarm: something it did not name rose too
            if "rising_terms" in alarm:
                moved = rising_terms_text(alarm)
            else:  # (a silenced category said as the alarm's own line says it)
                silenced = drift.get(alarm["dimension"], {}).get("suppressed_categories") or {}
                moved = _categorical_moves(alarm, silenced)
            lines.append(f"  DRIFT+ {where}: now also rising {', '.join(alarm['widened'])} "
                         f"({moved})")  # fmt: skip
        elif alarm.get("tested_state") == "drift":  # kept quiet: the other dimension drifts
            moved = (moves_text(alarm.get("rising") or (), alarm.get("falling") or ())
                     if "rising" in alarm else "")  # fmt: skip
            lines.append(f"  quiet  {where}: tested drift{': ' + moved if moved else ''}; no "
                         f"alarm while {alarm.get('confounded_by')} drifts")  # fmt: skip
        elif alarm.get("suppressed"):  # the whole dimension stopped alarming: not "cleared"
            lines.append(f"  ended  {where}: the dimension raises no alarm now "
                         f"({alarm['suppressed']})")  # fmt: skip
        elif alarm.get("restarted"):  # its windows started afresh under a new labeller
            lines.append(f"  ended  {where}: its windows started afresh ({alarm['restarted']})")
        elif alarm_kind(alarm) == "untested":  # not cleared: too few events came (trial 51)
            lines.append(f"  ended  {where}: {untested_text(alarm).removeprefix('ended ')}")
        elif alarm["state"] != "drift":
            why = "cleared"
            # (a gold-set comparison's: what its clearing means, trial 41)
            lines.append(f"  ended  {where}: {why}" + (f" ({alarm['reads']})"
                                                      if alarm.get("reads") else ""))  # fmt: skip
        elif "rate_current" in alarm:
            rates = rate_moves(alarm)
            # out_of_scope's windows: only the stable verdicts, not the share's every one
            rates += windows_count(alarm["dimension"], drift.get(alarm["dimension"]) or {})
            lines.append(f"  DRIFT  {where}: {rates}")
        elif "rising_terms" in alarm:
            lines.append(f"  DRIFT  {where}: {rising_terms_text(alarm)}")
        else:
            silenced = drift.get(alarm["dimension"], {}).get("suppressed_categories") or {}
            # topics read as nearest topics (novelty uncalibrated): the change is a fact, the
            # names are the nearest gold topics to what moved
            nearest = (" (by nearest gold topic)"
                       if drift.get(alarm["dimension"], {}).get("categories_are")
                       else "")  # fmt: skip
            lines.append(f"  DRIFT  {where}{nearest}: {_categorical_moves(alarm, silenced)}"
                         + adjusted_note(alarm))  # fmt: skip
        if alarm.get("reads") and alarm["state"] == "drift":
            # a gold-set comparison's alarm: a standing gap found, not a change (trial 41)
            lines.append(f"         ({alarm['reads']})")
    lines += quality_lines(doc.get("quality"), over, bool(recall.get("lower_bound")),
                           (analytics.get("drift") or {}).get("known_miss"))  # fmt: skip
    harvest = harvest_lines(doc.get("gold_candidates"))
    families = (analytics.get("out_of_scope") or {}).get("by_family") or {}
    if harvest and families.get("harvest_text"):  # suggestions kept, and said
        harvest.insert(1, f"  {families['harvest_text']}")
    by_language = (analytics.get("out_of_scope") or {}).get("verdicts_by_language") or {}
    if harvest and by_language.get("harvest_text"):  # in the confounded languages
        harvest.insert(1, f"  {by_language['harvest_text']}")
    return "\n".join(lines + harvest)


def _categorical_moves(alarm: Mapping[str, Any], silenced: Mapping[str, str]) -> str:
    """A categorical alarm's ``"rising de, falling en"``, each rising category whose rise
    alone raises no alarm (``silenced``: ``{category: why}``) said after it."""
    rising = [c for c in alarm.get("rising") or () if c not in silenced]
    quiet = "".join(f"; {c} rising too raises no alarm ({silenced[c]})"
                    for c in alarm.get("rising") or () if c in silenced)  # fmt: skip
    return moves_text(rising, alarm.get("falling") or (), other=bool(quiet)) + quiet


def moves_text(rising: Sequence[str], falling: Sequence[str], *, other: bool = False) -> str:
    """The categories an alarm names: ``"rising de, falling en"``; a side with no category
    whose share changed beyond noise (its 95 % interval of the change clear of 0) is said
    in words, never as a ``"-"`` that reads as a category's name (trial 45 M2: "rising -,
    falling other"). ``other``: some category left out of ``rising`` did rise (one whose rise
    alone raises no alarm, said after this text), so an empty rising side reads "no other
    category rose".

    >>> moves_text(["de"], ["en", "fr"])
    'rising de, falling en, fr'
    >>> moves_text([], ["other"])
    'falling other (no category rose beyond noise)'
    >>> moves_text(["currency"], [])
    'rising currency (no category fell beyond noise)'
    >>> moves_text([], ["other"], other=True)
    'falling other (no other category rose beyond noise)'
    >>> moves_text([], [])
    'no single category moved beyond noise (the shares did as a whole)'
    """
    no = "no other" if other else "no"
    if rising and falling:
        return f"rising {', '.join(rising)}, falling {', '.join(falling)}"
    if rising:
        return f"rising {', '.join(rising)} (no category fell beyond noise)"
    if falling:
        return f"falling {', '.join(falling)} ({no} category rose beyond noise)"
    return f"{no} single category moved beyond noise (the shares did as a whole)"


def _untested_note(body: Mapping[str, Any] | None, state: str) -> str:
    """``" (baseline not tested)"`` after a dimension read ``ok`` while one of its
    comparisons was never tested (``insufficient_data``): its ``ok`` is the other one's
    alone (trial 18: "language ok, topic ok" at ~52 questions an hour, where no baseline
    window ever reached ``min_count`` and the planted changes raised nothing); ``""``
    otherwise.

    >>> _untested_note({"comparisons": {"reference": {"state": "ok"},
    ...                                 "baseline": {"state": "insufficient_data"}}}, "ok")
    ' (baseline not tested)'
    >>> _untested_note({"comparisons": {"reference": {"state": "insufficient_data"},
    ...                                 "baseline": {"state": "ok"}}}, "ok")
    ' (gold set not tested)'
    >>> _untested_note({"comparisons": {"baseline": {"state": "insufficient_data"}}}, "drift")
    ''
    """
    if state != "ok" or not body:
        return ""
    names = {"reference": "gold set", "baseline": "baseline"}
    untested = [names.get(name, name) for name, test in (body.get("comparisons") or {}).items()
                if test.get("state") == "insufficient_data"]  # fmt: skip
    return f" ({', '.join(untested)} not tested)" if untested else ""


def rising_terms_text(alarm: dict[str, Any]) -> str:
    """A ``terms`` alarm's rising terms (``alarm["rising_terms"]``, the most significant
    first), e.g. ``"rising doctor (0.2 % → 13.7 % of questions, 41 vs 1), apollo (...)
    (of 212 terms tested)"``."""
    rows = ", ".join(
        f"{row['surface']} ({row['reference_share']:.1%} → {row['current_share']:.1%} of "
        f"questions, {row['current_count']} vs {row['reference_count']})"
        for row in alarm.get("rising_terms") or ()
    )
    return (f"rising {rows or '-'} (Bonferroni over {alarm.get('terms_tested', 0)} terms, "
            "exact conditional p)")  # fmt: skip


def terms_quality_text(body: dict[str, Any] | None) -> str:
    """The rising-terms test's budget and size, e.g. ``"terms: false-alarm budget 0.00025 a
    day (its own Bonferroni share of analytics.drift.alpha), split over the 212 terms in >= 10
    questions of the current and baseline windows at the latest test (level per term
    ...)"``; ``""`` without the dimension or before a test."""
    if not body:
        return ""
    test = (body.get("comparisons") or {}).get("baseline") or {}
    if test.get("state") in (None, "insufficient_data"):
        return ""
    return (
        f"terms: false-alarm budget {body.get('alpha_per_day', 0):g} a day (its own "
        f"Bonferroni share of analytics.drift.alpha), split over the "
        f"{test.get('terms_tested', 0)} terms in >= {body.get('min_term_questions', 0)} "
        f"questions of the current and baseline windows at the latest test (level per term "
        f"{test.get('alpha', 0):.1e}; exact conditional p)"
    )


#: The drift view's coverage-gap rule (:func:`service.drift.stats_tests.coverage_gaps`), as
#: the text report states it.
COVERAGE_GAP_RULE = "live share ≥ 2 × gold share, its 95 % lower bound ≥ gold share + 2 points"


def coverage_gap_lines(
    drift: dict[str, Any], topic_names: dict[str, str], unlabelled: Sequence[str] = (),
    *, scope_on: bool = True,
) -> list[str]:  # fmt: skip
    """The drift report's coverage gaps (``{dim: {"coverage_gaps": [...], "gold_counts":
    {...}, "coverage_gaps_left_out": {category: why}}}``; the why is shown with the
    suppressed categories), one line for the language and
    topic dimensions that have gold counts: ``"  coverage gaps vs gold (rule): language de
    11.1 % live / 0.0 % gold, …; topic none"``; ``[]`` when no dimension has gold counts.
    Topics are named by ``topic_names`` (id → "topic-1: warsaw") where known; a language of
    ``unlabelled`` (exported as ``other``: :mod:`service.language.unlabelled`) says so. A
    second line says the questions judged out of scope count in these gaps, not in the
    document shares (:data:`~service.coverage.OUT_OF_SCOPE_COUNTED`), unless ``scope_on`` is
    false (the out-of-scope detector off: no question is judged out of scope)."""
    parts = []
    for dim in ("language", "topic"):
        body = drift.get(dim) or {}
        if not body.get("gold_counts"):
            continue
        names = topic_names if dim == "topic" else {}
        other = set(unlabelled) if dim == "language" else set()
        gaps = [f"{names.get(g['category'], g['category'])} {g['live_share']:.1%} live / "
                f"{g['gold_share']:.1%} gold"
                + (' (language="other" on /metrics)' if g["category"] in other else "")
                for g in body.get("coverage_gaps") or []]  # fmt: skip
        gaps += [
            f"{names.get(c, c)} left out (its share is not a fact: above)"
            for c in sorted(body.get("coverage_gaps_left_out") or {})
        ]
        parts.append(f"{dim} {', '.join(gaps) or 'none'}")
    if not parts:
        return []
    line = f"  coverage gaps vs gold ({COVERAGE_GAP_RULE}): {'; '.join(parts)}"
    return [line, f"    ({OUT_OF_SCOPE_COUNTED})"] if scope_on else [line]


def _paired_lines(name: str, cell: dict[str, Any], known: dict[str, Any], k: Any) -> list[str]:
    """The paired comparison of candidate ``name`` (production and it on the events both
    were scored on), when those events are not all that either was scored on."""
    paired = cell.get("paired")
    if not paired or not paired.get("n_scored"):
        return []
    n = paired["n_scored"]
    test = paired_by_question_text(paired.get("by_question"))
    tested = [f"    {test}; {LIVE_VS_GOLD}"] if test else []
    if all(c.get("n_scored") == n for c in known.values()):
        return tested

    def figures(means: dict[str, float]) -> str:
        return (f"recall@{k} {means['recall']:.3f}, hit rate {means['hit_rate']:.3f}, "
                f"MRR {means['mrr']:.3f}")  # fmt: skip

    return [f"    like for like, on the {n} known questions both were scored on: production "
            f"{figures(paired['production'])}; {name} {figures(paired['candidate'])}",
            *tested]  # fmt: skip


def refusal_language_lines(refusals: Mapping[str, Any], min_n: int = 10) -> list[str]:
    """The refusal rate per language of the text report (``by_language`` of the analytics'
    ``refusals``: :func:`~service.quality.by_language.rate_rows`), one line; a note when
    the languages cover fewer answers than the total (totals kept before they were counted
    per language); none without rows. A second line with ``against_flag_text`` (what read
    the texts, the patterns or a refusal model, against ``answer.refused`` per language)
    when the answers set it.

    >>> from service.quality.by_language import rate_rows
    >>> print(refusal_language_lines({"answers": 10, "by_language_answers": 10,
    ...     "by_language": rate_rows({"en": (3, 6), "hi": (2, 4)})})[0])
    ... # doctest: +NORMALIZE_WHITESPACE
      refusals by language (Wilson 95 %; few: fewer than 10 answers): en 50.0% [18.8%, 81.2%]
      (n 6, few), hi 50.0% [15.0%, 85.0%] (n 4, few)
    """
    rows = refusals.get("by_language") or []
    if not rows:
        return []
    line = (f"  refusals by language (Wilson 95 %; few: fewer than {min_n} answers): "
            f"{rate_text(rows)}")  # fmt: skip
    covered = refusals.get("by_language_answers")
    if covered is not None and covered < refusals.get("answers", 0):
        line += (f" (of {covered} answers: the {refusals['answers'] - covered} counted before "
                 "refusals were counted per language are in no language)")  # fmt: skip
    against = refusals.get("against_flag_text")
    return [line, f"  {against}"] if against else [line]


def _cite_known(explained: str, scope: Mapping[str, Any], known: Mapping[str, Any]) -> str:
    """The over-refusal verdict (``explained``: :func:`over_refusals_explained_text`'s) with,
    when the out-of-scope detector is uncalibrated, the refusal rate of known answerable gold
    questions, which needs no detector (``known``: the analytics' ``known_over_refusal``).

    >>> _cite_known(" (nor of none)", {"uncalibrated": "AUC 0.59"}, {"brief": "x: 4% → 63%"})
    ' (nor of none; but x: 4% → 63%)'
    >>> _cite_known("", {"uncalibrated": "AUC 0.59"}, {"brief": "x: 4% → 63%"})
    ' (x: 4% → 63%)'
    """
    if not scope.get("uncalibrated") or not known.get("brief"):
        return explained
    if explained.endswith(")"):
        return f"{explained[:-1]}; but {known['brief']})"
    return f"{explained} ({known['brief']})"


def quality_lines(
    quality: dict[str, Any] | None, over: Mapping[str, Any] | None = None,
    refusals_lower: bool = False, known_miss: Mapping[str, Any] | None = None,
) -> list[str]:  # fmt: skip
    """The live-quality block of the text report, from
    :meth:`~service.quality.stage.LiveQualityStage.report`'s dict (empty without one), with
    production's quality over time under the retrievers' lines when ``over`` (the series'
    ``over_time``: :func:`~service.quality.over_time.known_line`) has it.

    Known questions (live questions matching a gold question at cosine similarity ≥
    ``threshold``): per retriever, the events scored of those matched and the means of
    recall@k, hit rate@k and MRR@k over the scored ones (trec_eval's semantics, see
    :func:`service.quality.known.live_scores`); a candidate scored on fewer known questions
    than production says so and why, with both on the questions both were scored on (the
    paired comparison); refusals of known questions both ways; then
    access control when the corpus has ACLs: leaks (a passage the asker's role may not read
    cited in an answer) and retrieval violations per retriever and role label (a role some
    ACL names, ``other`` for the rest, ``unknown`` without a role), as events (passages). A
    known question is unanswerable *for its asker* when it has no gold passage or none the
    asker's role may read (:mod:`service.quality.stage`). ``refusals_lower``: the refusals
    detected are a lower bound (:func:`~service.refusals.recall.text_recall`), which the
    refusals of known questions inherit, and say. ``known_miss``: the drift report's
    ``known_miss`` dimension, which the over-time line cites while it alarms
    (:func:`~service.quality.over_time.known_line`).
    """
    if not quality:
        return []
    k, threshold = quality.get("k"), quality.get("threshold")
    known = quality.get("known") or {}
    if threshold is None:
        return ["live quality: off (no gold set to match live questions with)"]
    lines = [f"live quality on known questions (a gold question matched at similarity >= "
             f"{threshold:g}; first {k} passages):"]  # fmt: skip
    lines += coverage_lines(quality.get("coverage"))
    if not any(cell.get("n_known") for cell in known.values()):
        changes = (quality.get("coverage") or {}).get("changes") or []
        if any(change.get("dropped_events") for change in changes):
            lines.append("  no known-question measurement left: a change above dropped them, "
                         "and no live question has matched a gold question since")  # fmt: skip
        else:
            lines.append("  no live question matched a gold question")
    for name, cell in known.items():
        scored = f"{cell['n_scored']} scored of {cell['n_known']} known"
        if not cell.get("n_scored"):
            lines.append(f"  {name}: {scored}")
        else:
            lines.append(f"  {name}: {scored}; recall@{k} {cell['recall']:.3f}, hit rate "
                         f"{cell['hit_rate']:.3f}, MRR {cell['mrr']:.3f}")  # fmt: skip
        if cell.get("coverage_note"):
            lines.append(f"    {cell['coverage_note']}: not the questions production's "
                         "figures are over")  # fmt: skip
        lines += _paired_lines(name, cell, known, k)
    line = known_line(over, k, known_miss)  # the worst point against the run: a bad day shows
    lines += [line] if line else []
    by_language = quality.get("by_language") or []
    if by_language and (quality.get("known") or {}):
        partial = (" (covers part: the known questions counted before they were counted per "
                   "language are in no language)" if quality.get("by_language_partial")
                   else "")  # fmt: skip
        min_n = quality.get("by_language_min_n", 10)
        lines.append(f"  production by language (the question's language; Wilson 95 % "
                     f"intervals; few: fewer than {min_n} scored){partial}:")  # fmt: skip
        lines += [f"    {line}" for line in language_lines(by_language, k, min_n)]
    lines += group_text_lines(quality, k)
    refusals = quality.get("refusals") or {}
    if refusals.get("known_answerable") or refusals.get("known_unanswerable"):
        lines.append(
            f"  refusals of known questions: {refusals['refused_answerable']} of "
            f"{refusals['known_answerable']} answerable refused, "
            f"{refusals['answered_unanswerable']} of {refusals['known_unanswerable']} "
            "unanswerable for their asker answered (no gold passage, or none the asker's "
            "role may read)" + (f"; {INHERITED}" if refusals_lower else "")
        )
    note = rejected_note(quality.get("near_matches_rejected"))
    lines += [f"  {note}"] if note else []
    acl = quality.get("acl") or {}
    if not acl.get("passages_with_acl"):
        return lines
    if acl.get("since"):
        since = f"every event since {_utc_minute(acl['since'])}, whatever the gold-set version; "
    elif "since" in acl and (acl.get("leaks") or acl.get("violations")):  # counts from version 1
        since = ("every event since an unknown time (counts from a state from before version "
                 "2), whatever the gold-set version; ")  # fmt: skip
    else:
        since = ""
    lines.append(f"  access control ({since}{acl['passages_with_acl']} passages with an ACL, "
                 f"{acl.get('restricted_passages', 0)} of them closed to a role some ACL "
                 "names; role 'other': roles no ACL names, which may read none of them; "
                 "'unknown': no role on the event):")  # fmt: skip
    for kind, what in (("leaks", "LEAKS (cited in answers to a role that may not read them)"),
                       ("violations", "retrieved for a role that may not read them")):  # fmt: skip
        rows = acl.get(kind) or []
        cells = ", ".join(f"{row['retriever']} {row['role']} {row['events']} events "
                          f"({row['passages']} passages)" for row in rows)  # fmt: skip
        lines.append(f"    {what}: {cells or 'none'}")
    named = acl.get("roles") or []
    if named and any(row["role"] == "other" for k in ("leaks", "violations")
                     for row in acl.get(k) or []):  # fmt: skip
        lines.append(f"    role 'other' has violations; the ACLs name {', '.join(named)}: a live "
                     "role spelled otherwise (another case, a synonym) is 'other', and every "
                     "restricted passage retrieved for it a violation; map it in the events "
                     "or the corpus")  # fmt: skip
    return lines


def coverage_lines(coverage: dict[str, Any] | None) -> list[str]:
    """What the known-question figures cover (``coverage`` of
    :meth:`~service.quality.stage.LiveQualityStage.report`): the gold-set version and the
    first event they count, then each change: of the gold set (measurements of unchanged
    rows carried over, of changed or removed rows dropped), of ``k`` (recall, hit and RR
    dropped, refusal counts kept) or of the threshold (all dropped). A version-1 state's
    figures have no first event and are not per row: "unknown". Empty without one."""
    if not coverage:
        return []
    since, rows = coverage.get("since"), coverage.get("rows")
    if rows is None:
        start = "an unknown time (state from before version 2: its figures are not per gold row)"
    else:
        start = f"{_utc_minute(since) if since else '-'} ({rows} gold rows measured)"
    lines = [f"  covers known questions asked since {start}, gold-set version "
             f"{coverage['gold_set_version']}"]  # fmt: skip
    for change in coverage.get("changes") or []:
        lines.append(f"  {_change_name(change)} {_change_when(change)}: {_change_effect(change)}")
    return lines


def _change_when(change: dict[str, Any]) -> str:
    """``"at 2026-11-29 10:00 UTC (after 5 events)"``, or why there is no time."""
    if change.get("at"):
        return f"at {_utc_minute(change['at'])} (after {change['after_events']} events)"
    if change.get("after_events") is None:
        return "at an unknown time (state from before version 2)"
    return "before any event"


def _change_effect(change: dict[str, Any]) -> str:
    """What a change carried over and dropped, by what it invalidates (``drops``)."""
    drops = change.get("drops", "changed rows")
    dropped, events = change["dropped_rows"], change["dropped_events"]
    rows = f"{dropped} rows'" if dropped is not None else "a version-1 state's (not per gold row)"
    if drops == "scores":
        return (
            f"dropped {rows} recall, hit and RR ({events} known events, scored at the old k), "
            "kept the refusal counts of known questions (they do not depend on k)"
        )
    if drops == "all":
        return (f"dropped {rows} measurements ({events} known events, matched at the old "
                "threshold)")  # fmt: skip
    kept = (f"carried over {change['kept_rows']} rows' measurements ({change['kept_events']} "
            "known events, rows unchanged), ")  # fmt: skip
    if dropped is None:
        return (f"{kept}dropped the measurements of {events} known events (a version-1 "
                "state's are not per gold row, so none could be carried over)")  # fmt: skip
    return f"{kept}dropped {rows} ({events} known events, rows changed or removed)"


def _change_name(change: dict[str, Any]) -> str:
    """``"gold set changed (a -> b)"``: the reason, and the versions when they differ."""
    versions = f" ({change['from']} -> {change['to']})" if change["from"] != change["to"] else ""
    return f"{change['reason']}{versions}"


def _utc_minute(iso: str) -> str:
    """``"2026-11-29 12:27 UTC"`` from an ISO 8601 time."""
    return datetime.fromisoformat(iso).astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")


def harvest_lines(summary: HarvestSummary | None) -> list[str]:
    """The harvest summary of the text report: suggestions by reason, per coverage gap, then
    what was shed (:func:`service.harvest.shed_note.shed_note`); empty without a summary."""
    if not summary:
        return []
    reasons = ", ".join(f"{r} {n}" for r, n in sorted(summary["by_reason"].items(),
                                                      key=lambda item: -item[1]))  # fmt: skip
    lines = [f"harvested gold-question suggestions: {summary['n_suggestions']}"
             + (f" ({reasons})" if reasons else "")]  # fmt: skip
    gaps = summary.get("in_gaps") or []
    if gaps:
        more = summary.get("n_gaps", len(gaps)) - len(gaps)
        listed = ", ".join(f"{g['dimension']} {g['value']} {g['n']}" for g in gaps)
        lines.append(f"  in the coverage gaps of the recent events (harvest.gap_window): {listed}"
                     + (f" (and {more} smaller gaps)" if more > 0 else "")
                     + f"; {OUT_OF_SCOPE_COUNTED}")  # fmt: skip
    lines += document_gap_lines(summary.get("documents"))
    for note in (shed_note(summary), not_compared_note(summary)):
        if note is not None:
            lines.append(f"  {note}")
    return lines


def document_gap_lines(documents: Mapping[str, Any] | None) -> list[str]:
    """The under-covered documents of a harvest summary (its ``documents``,
    :meth:`~service.harvest.stage.HarvestStage.document_gaps`): one line, ``"  documents
    under-covered by the gold set (rule; over all traffic): faq-topup.html 21.3 % live (562 of
    2,640 questions) / 0.0 % gold (0 of 46), …"``; ``[]`` without ``documents``."""
    if not documents:
        return []
    gaps = documents.get("gaps") or []
    listed = ", ".join(
        f"{g['document']} {g['live'] / g['live_total']:.1%} live ({g['live']:,} of "
        f"{g['live_total']:,} questions) / {g['gold'] / g['gold_total']:.1%} gold "
        f"({g['gold']} of {g['gold_total']})"
        for g in gaps
        if g.get("live_total") and g.get("gold_total")
    )
    more = int(documents.get("n_gaps", len(gaps))) - len(gaps)
    return [f"  documents under-covered by the gold set ({COVERAGE_GAP_RULE}; a question's "
            "document: its first production passage's; over all traffic): "
            + (listed or "none")
            + (f" (and {more} smaller gaps)" if more > 0 else "")
            + f"; the gold set asks about {documents.get('gold_documents', 0)} of "
            f"{documents.get('documents', 0)} documents{grouped_note(documents)}"
            f"{all_tied_note(documents)}"
            ] + [f"  {line}" for line in uncovered_note(documents.get("uncovered"))]  # fmt: skip


def _shadow_lines(shadow: ShadowStageReport | None, min_n: int = FEW_RESULTS) -> list[str]:
    """One line per shadow candidate; every agreement mean with the number of results it
    is over, marked "few" under ``min_n`` (:func:`~service.shadow.stage.with_n`)."""
    if not shadow:
        return []
    lines = []
    for name, body in shadow["candidates"].items():
        agreement, counts = body["agreement"], body.get("counts") or {}
        skipped = ", ".join(f"{r} {n}" for r, n in body["skipped"].items()) or "none"
        errors = ", ".join(f"{r} {n}" for r, n in body["errors"].items()) or "none"

        def fmt(key: str, agreement: dict[str, float | None] = agreement,
                counts: dict[str, int] = counts) -> str:  # fmt: skip
            return with_n(agreement.get(key), counts.get(key), min_n)

        lines.append(
            f"shadow {name}: {body['completed']} compared of {body['offered']} offered"
            + (f" ({body['in_flight']} in flight)" if body.get("in_flight") else "")
            + f"; overlap@k {fmt('overlap')}, RBO {fmt('rbo')}, Kendall's tau "
            f"{fmt('kendall_tau')}, citation recall {fmt('citation_recall')}; skipped: "
            f"{skipped}; errors: {errors}"
        )
    return lines
