"""The drift stage: feed each micro-batch's annotations to the drift detectors.

Dimensions (each with its own detector, windows over event time):

* ``language`` — categorical, reference = the gold set's language counts;
* ``topic`` — categorical, reference = the gold set's topic counts;
* ``refusal`` — binary rate of refused answers (events with an answer only);
* ``out_of_scope`` — binary rate of questions judged out of scope (events with a score
  that the off-corpus cutoff's range does not move: ``out_of_scope_stable``);
* ``known_refusal`` — binary rate of refused answers to known answerable gold questions
  (``annotations[i]["known_refused"]``, written by the live-quality stage, which runs
  before this one: a live question matched to an answerable gold row the asker may read;
  its refusal is an over-refusal, no detector needed). Known questions are a small part of
  the traffic: its windows are ``known_windows`` (the current window and the frozen
  baseline's warm-up both ``analytics.drift.known_window_s``, one day by default) and
  ``known_min_count`` known questions make a window testable. They take exactly the known
  questions the ``language`` window takes (not late nor future; one it holds ahead of the
  whole stream's watermark waits, counted ``ahead`` as there, until it releases it, in this
  batch or a later one, or drops it: :meth:`DriftStage._known_taken`), whatever the batch
  sizes, and hold none ahead themselves: a few a day, hours apart, each
  read as a jump ahead of their own watermark by the guard sized for the whole stream, so
  most were held and dropped (trial 48: 10 of 32 taken, "the busiest had 10" at 24, 72 and
  216 h; :func:`known_window_config`). Its own Bonferroni share of
  ``alpha``, as ``terms``: the other dimensions keep their levels. Baseline only (the gold
  set has no refusal rate to compare with);
* ``known_miss`` — binary rate at which production's ranking misses every relevant passage
  in its top k on a known question (``annotations[i]["known_missed"]``, the live-quality
  stage's hit@k negated: 1 - hit rate@k, on the known questions it scored): production's
  own retrieval on live traffic, with no gold-set run of production needed (trial 38: a
  12-hour collapse of hit rate@10 to 0 raised nothing on the live service). The windows,
  ``min_count`` and level of ``known_refusal`` (its own Bonferroni share: the family's budget
  per day is 7/4 of ``alpha``, the shared four keep their levels; 8/4 while it is tested per
  language too: two or more languages meet its minimums, a family with a share of its own,
  :class:`~service.drift.detectors.LanguageRateDriftDetector`). Baseline only;
* ``terms`` — rising terms: the content-word stems of the (scrubbed) questions whose share
  rose against the baseline, stratified by language (:mod:`service.drift.terms`; baseline
  only, none with ``baseline: none``). Its own Bonferroni share of the family's ``alpha``, the
  same as each other dimension's: the other four keep their levels (with ``known_refusal``'s
  and ``known_miss``'s shares too, the family's budget per day is 7/4 of ``alpha``; 8/4 while
  ``known_miss`` is tested per language too).

Each is compared with the reference (when there is one) and with a baseline of earlier
traffic (:mod:`service.drift.detectors`). A dimension fed by a detector whose measured
quality is below the floor (:mod:`service.evaluation.detector_quality`) is *suppressed*
(:meth:`DriftStage.suppress`): still tested, it reports state ``uncalibrated`` with the reason
and raises no alarm. A dimension *confounded* by another (:meth:`DriftStage.confound`: topic
by language, when the topic assignment is measurably worse in one language) raises no alarm
while the same comparison of the other dimension drifts too. When at least
:data:`STARVED_SHARE` of the events seen were kept out of the windows (late, stamped in the
future, or held too far ahead of the others) among the latest
:data:`STARVED_RECENT_EVENTS` seen, a comparison that tested ``ok`` reads ``starved`` instead,
with the share (``starved`` in the report): its windows are blind to most traffic. The share
is of the latest events, not of all: an old backlog that arrived late stops starving the
windows once that many events came after it. The stage also keeps all-time counts per
category for the coverage-gap report. Its state (detectors and counts) is persisted with the
other stages, so a restart keeps the windows and baselines.
"""

from __future__ import annotations

import logging
import math
import re
import time
from collections import Counter, deque
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, NamedTuple, cast

import numpy as np
from numpy.typing import NDArray

from service.drift.detectors import (
    CategoricalDriftDetector,
    LanguageRateDriftDetector,
    RateDriftDetector,
    TestLog,
    WindowConfig,
)
from service.drift.distances import Counts
from service.drift.sizing import (
    NEW_CATEGORY,
    Detectable,
    expected_counts,
    hardest_share_rise,
    smallest_rate_rise,
)
from service.drift.stats_tests import coverage_gaps
from service.drift.strata import joint_key
from service.drift.terms import TermsDriftDetector, question_terms
from service.pipeline import Batch

log = logging.getLogger(__name__)

CATEGORICAL = ("language", "topic")
#: The rate of refusals of known answerable gold questions (module docstring).
KNOWN_REFUSAL = "known_refusal"
#: The rate at which production's top k misses every relevant passage of a known question
#: (``annotations[i]["known_missed"]``, the live-quality stage's hit@k of production's
#: ranking, negated: 1 - hit rate@k; module docstring).
KNOWN_MISS = "known_miss"
#: The key in a state snapshot's ``detectors`` of the ``known_miss`` detector, whose windows
#: keep joint keys (flag, language): not ``known_miss``, so a version before it (which reads
#: ``"1\x1fde"`` as no miss and whose report takes no ``languages``) finds none and warms up
#: afresh on a downgrade; a snapshot of such a version (plain flags under ``known_miss``) is
#: restored here (its windows' flags count as language ``""``, tested pooled only).
KNOWN_MISS_STATE = "known_miss_by_language"
#: The dimensions on the known questions' own windows (``known_window_s``, ``known_min_count``).
KNOWN = (KNOWN_REFUSAL, KNOWN_MISS)
#: Each rate dimension's annotation: ``out_of_scope`` tests the verdicts the off-corpus
#: cutoff's range does not move (``out_of_scope_stable``:
#: :class:`~service.refusals.stage.EmbeddingScopeStage`; trial 37b, H2: an in-corpus surge
#: the gold set does not cover sat in that range and raised an out-of-scope alarm).
RATES = {"refusal": "refused", "out_of_scope": "out_of_scope_stable",
         KNOWN_REFUSAL: "known_refused", KNOWN_MISS: "known_missed"}  # fmt: skip
TERMS = "terms"
#: The annotation of a question the topic stage gave no topic: no gold row is written in its
#: language (:class:`service.topics.stage.TopicStage`); it is in no topic share.
UNJUDGED_TOPIC = "topic_unjudged_language"
#: Marks a snapshot whose topic windows were counted under that rule: a topic detector kept
#: before it (its baseline may hold such questions as ``novel`` or another topic) is not
#: restored (:meth:`DriftStage.restore`).
TOPIC_RULE = "gold_languages"
#: Saved with the state: the ``out_of_scope`` windows count the verdicts the off-corpus
#: cutoff's range does not move (``out_of_scope_stable``). A state kept before (its windows
#: count every verdict) restores no ``out_of_scope`` detector (:meth:`DriftStage.restore`).
SCOPE_RULE = "stable_verdicts"
#: The dimensions whose windows a saved state holds only under a counting rule:
#: ``dimension -> (state key, rule, what differed)``. A state saved under another rule (or
#: none) restores no detector of that dimension, which warms up afresh
#: (:meth:`DriftStage.restore`): its old windows count other events than the new ones.
RESTORE_RULES: dict[str, tuple[str, str, str]] = {
    "topic": ("topic_rule", TOPIC_RULE,
              "before questions in a language without gold rows were left out"),
    "out_of_scope": ("scope_rule", SCOPE_RULE,
                     "before they counted only the verdicts the off-corpus cutoff's range "
                     "does not move"),
}  # fmt: skip
#: What each dimension's labeller is called in the words of a restart
#: (:meth:`DriftStage.set_labeller`): the detector or model that turns a question into the
#: category or flag its windows count.
LABELLER_NAMES = {"topic": "the topic model", "out_of_scope": "the out-of-scope detector"}
#: The dimensions whose labeller may be told (:meth:`DriftStage.set_labeller`): those whose
#: labeller is derived from the gold set and can change while the windows keep counts.
#: Not ``language``: its windows are the stream's event-time clock and kept-out counts
#: (:attr:`DriftStage._kept_out_counter`), which a restart would lose, and the gold set
#: moves its detector's labels little (docs/drift.md). Not ``known_refusal`` and
#: ``known_miss``: their flags are the answer's refusal and production's ranking against the
#: matched row's gold passages, the same for an event whatever other rows the gold set
#: holds; a grown gold set adds known questions to their population as a change of the
#: traffic would (docs/drift.md).
LABELLED = tuple(LABELLER_NAMES)


class Labeller(NamedTuple):
    """The labeller a dimension's windows count under (:meth:`DriftStage.set_labeller`).

    Attributes:
        key: what its labels depend on, hashed (equal keys: every question gets the same
            label), e.g. :meth:`~service.refusals.stage.EmbeddingScopeStage.labeller_key`.
        name: the labeller in words, said when it changes (e.g. ``"embedding, threshold
            0.4169, off-corpus cutoff Deva 0.6680, Latn 0.2700"``); ``""``: none.
        older_differs: windows of a snapshot that names no labeller of this dimension (kept
            by a version before it was saved) counted under another one: they start afresh
            too (the unsupervised topic model, whose topics are fitted on the written rows
            and named by content since then: review s48-f2, an upgrade kept 37–90 % of
            traffic's topics). Not saved in the snapshot.
    """

    key: str
    name: str = ""
    older_differs: bool = False


#: The most languages the topic windows keep apart (:attr:`DriftStage.topic_strata`); the
#: questions of any other language are counted together (stratum ``""``).
TOPIC_STRATA = 16
#: The dimensions whose Bonferroni shares split ``alpha`` (``terms`` has one more share of its
#: own, so adding it moved none of these levels).
SHARED = (*CATEGORICAL, "refusal", "out_of_scope")
DIMENSIONS = (*SHARED, *KNOWN, TERMS)
#: The dimensions whose comparisons say the smallest change that can alarm (``detectable``).
SIZED = (*SHARED, *KNOWN)
MAX_ALARMS = 100
#: What a dimension's windows count (the unit of an ``insufficient_data`` reason).
UNITS = {"language": "questions", "topic": "questions given a topic", "refusal": "answers",
         "out_of_scope": "scored questions (verdicts the off-corpus cutoff's range does not "
                         "move)",
         KNOWN_REFUSAL: "known answerable questions",
         KNOWN_MISS: "scored known questions", TERMS: "questions"}  # fmt: skip
#: Where the windows and ``min_count`` are set (``analytics.drift`` of the configuration).
SETTINGS = "analytics.drift"
#: State of a suppressed dimension (its detector is below the quality floor).
UNCALIBRATED = "uncalibrated"
#: State of a comparison that tested ``ok`` while a large share of the events seen were kept
#: out of the windows (late, future or ahead): the windows are starved, ``ok`` means little.
STARVED = "starved"
#: Share of the events seen kept out of the windows from which the windows are starved.
STARVED_SHARE = 0.2
#: The other cause of events kept out late: the order they are read in. Each Kafka partition
#: is judged against its own watermark (a consumer catching up a backlog reads its partitions
#: one stretch after another: a trial's 4-partition backlog of 10 hours was 72 % late against
#: one watermark); a file, stdin or HTTP is one stream, and no partition's event may be older
#: than the history the windows keep.
_READ_ORDER = ("the order they are read in (events merged from several producers into one "
               "file or HTTP stream, or a Kafka partition further behind the others than the "
               "windows keep)")  # fmt: skip
#: The latest events seen over which that share is measured (in blocks of
#: :data:`ALARM_RESOLUTION` events of the whole stream, so between this and this +
#: ALARM_RESOLUTION - 1 events; the same blocks whatever the batching).
STARVED_RECENT_EVENTS = 5_000
#: Inputs whose smallest detectable change the stage remembers (:meth:`DriftStage.report`).
DETECTABLE_KEPT = 32
#: Events of a batch per wall-clock reading (and per check for a Kafka partition's re-test);
#: the block of the stream's events the share kept out is counted in. Alarms are recorded at
#: their tests, whatever the batching (:meth:`DriftStage.process`).
ALARM_RESOLUTION = 100


class _Column(NamedTuple):
    """A dimension's values in a batch (:func:`_columns`)."""

    dimension: str
    #: a categorical dimension's categories, a rate's flags
    values: list[Any]
    #: the batch's rows the values are of, increasing (``None``: every row)
    rows: list[int] | None
    #: what the live counts take (``None``: ``values``): the topics of the topic column,
    #: whose ``values`` are joint keys of topic and language (:meth:`DriftStage._joint`)
    counted: list[Any] | None = None


class _Feed(NamedTuple):
    """One detector's update of :meth:`DriftStage._process_at_once`."""

    column: _Column
    detector: CategoricalDriftDetector | RateDriftDetector | TermsDriftDetector
    timestamps: NDArray[np.float64]  # of the column's rows (Unix seconds)
    now: NDArray[np.float64]  # their chunks' clock readings
    streams: list[str] | None  # theirs
    checks: list[int]  # after how many of the column's values each chunk ends


def _columns(
    annotations: list[dict[str, Any]], questions: list[str] | None = None
) -> list[_Column]:
    """Each dimension's values in a batch's annotations, categorical ones first: a categorical
    dimension's category (``"und"`` when none) for every event; a rate's flag (``refused``,
    ``out_of_scope``) for the events that have one, left out when none has; with
    ``questions`` (the events' scrubbed questions), last, ``terms``: ``(language, terms)``
    per event (:func:`~service.drift.terms.question_terms`)."""
    columns = [
        _Column(dim, list(map(str, [notes.get(dim) or "und" for notes in annotations])), None)
        for dim in CATEGORICAL
    ]
    # a question the topic stage did not judge (no gold row in its language) is in no topic
    # share: its topic is not "und", it is not known (service.topics.stage.TopicStage)
    unjudged = [i for i, notes in enumerate(annotations) if notes.get(UNJUDGED_TOPIC)]
    if unjudged:
        skip = set(unjudged)
        rows = [i for i in range(len(annotations)) if i not in skip]
        topics = columns[1].values
        if rows:
            columns[1] = _Column("topic", [topics[i] for i in rows], rows)
        else:
            del columns[1]
    languages = [str(notes.get("language") or "und") for notes in annotations]
    for dim, key in RATES.items():
        rows = [i for i, notes in enumerate(annotations) if notes.get(key) is not None]
        if rows and dim == KNOWN_MISS:  # tested per language too: joint keys (flag, language)
            columns.append(_Column(dim, [joint_key("1" if annotations[i][key] else "0",
                                                   languages[i]) for i in rows], rows))  # fmt: skip
        elif rows:
            columns.append(_Column(dim, [bool(annotations[i][key]) for i in rows], rows))
    if questions is not None:
        languages = columns[0].values
        columns.append(
            _Column(
                TERMS,
                [
                    (language, question_terms(q))
                    for language, q in zip(languages, questions, strict=True)
                ],
                None,
            )
        )
    return columns


def _joint_windows(windows: WindowConfig) -> WindowConfig:
    """The topic windows' configuration: ``windows`` keeping as many topics apart in each
    of the :data:`TOPIC_STRATA` languages and the rest (joint keys, :mod:`service.drift.strata`)
    as ``windows`` keeps categories."""
    return replace(windows, max_categories=windows.max_categories * (TOPIC_STRATA + 1))


def _pick(streams: list[str] | None, rows: list[int]) -> list[str] | None:
    """The streams of ``rows`` (``None``: one stream)."""
    return None if streams is None else [streams[i] for i in rows]


def known_window_config(windows: WindowConfig) -> WindowConfig:
    """The known-question dimensions' windowing: ``windows`` without the guard against
    events ahead of the watermark (``max_ahead_s`` infinite, ``ahead_confirm`` 1, no gap
    rule). Known questions are a few a day; against their own watermark each came hours
    ahead, beyond ``max_ahead_s`` (6 h by default) and the gap rule's limit, and was held
    until ``ahead_confirm`` of them within ``max_ahead_s`` of one another confirmed a jump,
    which at that rate they seldom do: held, then dropped (trial 48: 22 of 32 known
    questions, so no ``known_window_s`` made a window testable). The whole stream's
    ``language`` window judges them instead: the stage feeds these windows the events it
    added (:func:`_accepted`) and, when it releases them, those it held
    (:meth:`DriftStage._feed_known`)."""
    return replace(windows, max_ahead_s=math.inf, ahead_confirm=1, ahead_gap_factor=0.0)


def _accepted(column: _Column, ok: NDArray[np.bool_]) -> _Column | None:
    """A known-question ``column`` restricted to the rows the ``language`` window added in
    their own update (``ok``: a mask over the batch's events, the ``added_mask`` of its
    detector; those it held wait: :meth:`DriftStage._known_taken`); ``None`` when none is
    left. Other columns are returned as they are."""
    if column.dimension not in KNOWN or column.rows is None or bool(ok.all()):
        return column
    kept = [(row, value) for row, value in zip(column.rows, column.values, strict=True)
            if ok[row]]  # fmt: skip
    if not kept:
        return None
    return _Column(column.dimension, [v for _, v in kept], [r for r, _ in kept], column.counted)


class DriftStage:
    """Pipeline stage updating one detector per dimension from the annotations.

    Args:
        gold_counts: ``{"language": {...}, "topic": {...}}`` category counts of the gold set
            (the fixed references); a missing dimension has no reference.
        windows: windowing shared by the detectors.
        min_count: events a window needs before it is tested.
        alpha: false-alarm budget per day for the whole family of detectors.
        min_jsd, min_share_change, min_rate_change: effect-size thresholds; an alarm clears
            below half of each (hysteresis; 0.025 with the defaults).
        terms: test rising terms (``terms``; never with ``baseline: none``).
        min_term_questions: questions of the current window a term must be in to be tested
            and reported (the privacy floor too); max_terms: terms kept per bucket and
            language. A term alarms with its pooled share up by ``min_share_change / 2``
            and a Mantel–Haenszel odds ratio of 2 (:mod:`service.drift.terms`).
        clock: wall clock (Unix seconds); events stamped further in its future than the
            windows' ``future_tolerance_s`` are counted and rejected, so one bad clock cannot
            drag the watermark years ahead.

    Raises:
        ValueError: a threshold is out of range (from the detectors).
    """

    name = "drift"

    def __init__(
        self,
        gold_counts: Mapping[str, Counts],
        *,
        windows: WindowConfig | None = None,
        min_count: int = 200,
        alpha: float = 0.001,
        min_jsd: float = 0.05,
        min_share_change: float = 0.05,
        min_rate_change: float = 0.05,
        terms: bool = True,
        min_term_questions: int = 10,
        max_terms: int = 2000,
        known_windows: WindowConfig | None = None,
        known_min_count: int = 30,
        clock: Callable[[], float] = time.time,
        gold_topic_strata: Mapping[str, Counts] | None = None,
        labellers: Mapping[str, Labeller] | None = None,
    ) -> None:
        windows = windows or WindowConfig()
        #: the labeller each dimension of :data:`LABELLED` counts under (absent: not told;
        #: :meth:`set_labeller`), in the snapshot: a restart under another one warms the
        #: dimension up afresh (:meth:`restore`)
        self.labellers: dict[str, Labeller] = dict(labellers or {})
        #: dimension -> when and why its windows last started afresh for a new labeller
        #: (``{"after_events", "timestamp", "why"}``, :meth:`set_labeller`), in the report
        #: as ``windows_restarted``; kept in the snapshot
        self.restarts: dict[str, dict[str, Any]] = {}
        #: dimension -> the name (:attr:`Labeller.name`) of the labeller the stored counts
        #: were made under, as another stage's restored state records it (set by whoever
        #: builds the stage: the annotation totals' last ``counted_under`` detector), read
        #: for a snapshot kept without ``labellers`` once every stage restored (:meth:`restored`)
        self.recorded_labellers: dict[str, Callable[[], str | None]] = {}
        #: the last :meth:`restore` was of a snapshot kept without ``labellers``
        self._unlabelled_restore = False
        self.clock = clock
        common = {"windows": windows, "min_count": min_count, "alpha": alpha,
                  "n_dimensions": len(SHARED)}  # fmt: skip
        self.gold_counts = {dim: dict(counts) for dim, counts in gold_counts.items()}
        #: the languages the topic windows keep apart (the strata of the topic test's
        #: standardisation, :mod:`service.drift.strata`): the gold set's topic rows'
        #: languages (most rows first), then the languages live topic questions come in, in
        #: the order first seen, at most TOPIC_STRATA; any other language is stratum ""
        self.topic_strata: list[str] = []
        # topic: joint topic × language keys in its windows, its reference standardised to
        # the window's language mix (service.drift.strata)
        # ("und", a question whose language was not told, is no language of its own: its
        # events use the gold set's pooled topics, review s43)
        joint = {"windows": _joint_windows(windows), "strata": "language",
                 "pooled_strata": ("und",)}  # fmt: skip
        settings = {dim: {**common, **(joint if dim == "topic" else {})}
                    for dim in CATEGORICAL}  # fmt: skip

        def categorical(dim: str) -> CategoricalDriftDetector:
            return CategoricalDriftDetector(
                self.gold_counts.get(dim),
                min_jsd=min_jsd,
                min_share_change=min_share_change,
                clear_jsd=min_jsd / 2,
                clear_share_change=min_share_change / 2,
                **settings[dim],  # type: ignore[arg-type]
            )

        self._new_categorical = categorical
        self.categorical = {dim: categorical(dim) for dim in CATEGORICAL}
        self.set_topic_strata(gold_topic_strata)
        # known_refusal and known_miss: their own windows and min_count (known questions are
        # few), the same level as each shared dimension's (each its own Bonferroni share, as
        # terms)
        #: the current window of known_refusal and known_miss, seconds (recent_known)
        self.known_window_s = float((known_windows or windows).window_s)
        #: per known dimension, the known questions the language window holds ahead, waiting
        #: for its decision: ``(timestamp, stream, value)``, oldest first (:meth:`_settle_known`)
        self._known_waiting: dict[str, list[tuple[float, str | None, Any]]] = {}
        known = {**common, "windows": known_window_config(known_windows or windows),
                 "min_count": known_min_count,
                 "min_reference_count": min(30, known_min_count)}  # fmt: skip

        def rate(dim: str) -> RateDriftDetector:
            made = (LanguageRateDriftDetector if dim == KNOWN_MISS else RateDriftDetector)(
                None,
                min_change=min_rate_change,
                clear_change=min_rate_change / 2,
                **(known if dim in KNOWN else common),  # type: ignore[arg-type]
            )
            if dim in KNOWN:  # (a revert clears one short window later, not a known day)
                made.clear_window_s = float(windows.window_s)
            return made

        self._new_rate = rate
        self.rates = {dim: rate(dim) for dim in RATES}
        self.terms: TermsDriftDetector | None = None
        if terms and windows.baseline != "none":
            self.terms = TermsDriftDetector(
                min_share_up=min_share_change / 2, clear_share_up=min_share_change / 4,
                min_reference_count=min_count, min_term_questions=min_term_questions,
                max_terms=max_terms, **common,  # type: ignore[arg-type]
            )  # fmt: skip
        self.live_counts: dict[str, Counter[str]] = {dim: Counter() for dim in CATEGORICAL}
        self.events_seen = 0
        #: per block of ALARM_RESOLUTION events of the stream (:meth:`_remember_events`),
        #: oldest first: (events, late, future, newly held), covering the latest
        #: STARVED_RECENT_EVENTS
        self._recent: deque[tuple[int, int, int, int]] = deque()
        self._recent_sums = [0, 0, 0, 0]
        #: events kept out late and future since the metrics last took them (not persisted:
        #: a restarted process counts only the events it saw, as a counter must)
        self._pending_kept_out = {"late": 0, "future": 0}
        #: (dimension, comparison) -> alarms raised (moves into ``drift``) since the metrics
        #: last took them (not persisted, as :attr:`_pending_kept_out`: a restored open alarm
        #: was counted by the process that raised it)
        self._pending_alarms: dict[tuple[str, str], int] = {}
        self.alarms: list[dict[str, Any]] = []  # the last MAX_ALARMS state changes to drift
        self._last_state: dict[str, str] = {}
        #: Why each comparison's drift opened no alarm (``"dim/name"`` -> ``"confounded by
        #: language"``, ``"only novel rose"``), kept while its detector reads ``drift``, for
        #: the held quiet row (``held_because: quiet_hold``); in the snapshot (``quiet_why``),
        #: so a restarted process says the same why.
        self._quiet_why: dict[str, str] = {}
        #: "dimension/comparison" of a categorical dimension in drift -> the categories its
        #: open alarm named so far: one rising later is recorded as a widening (_record_alarms)
        self._named: dict[str, list[str]] = {}
        self.suppressed: dict[str, str] = {}  # dimension -> why it raises no alarm
        # categorical dimension -> {category: why a rise of it alone raises no alarm}
        self.suppressed_categories: dict[str, dict[str, str]] = {}
        # dimension -> (the dimension whose drift it cannot be told from, why)
        self.confounded: dict[str, tuple[str, str]] = {}
        # dimension -> the categories of the other whose move alone confounds it (absent: any)
        self.confounded_categories: dict[str, frozenset[str]] = {}
        # categorical dimension -> what its categories are when they are not what they are
        # named (topic while novelty is uncalibrated: each question's nearest gold topic);
        # its coverage gaps are left out with it, its alarms stand (withhold_gaps)
        self.gaps_withheld: dict[str, str] = {}
        self._detectable_memo: dict[tuple[Any, ...], dict[str, Any] | None] = {}

    def _detectors(
        self,
    ) -> dict[str, CategoricalDriftDetector | RateDriftDetector | TermsDriftDetector]:
        """Every dimension's detector, categorical ones first, ``terms`` last (when on)."""
        found: dict[str, CategoricalDriftDetector | RateDriftDetector | TermsDriftDetector]
        found = {**self.categorical, **self.rates}
        if self.terms is not None:
            found[TERMS] = self.terms
        return found

    @property
    def _kept_out_counter(self) -> CategoricalDriftDetector:
        """The detector whose window counts the events kept out of the windows (late, future,
        ahead) and gives the event-time watermark: the ``language`` one, which every event
        reaches (an event without a language is ``und``), unlike a rate's."""
        return self.categorical["language"]

    def suppress(self, dimension: str, reason: str | None) -> None:
        """Stop (``reason``: why, e.g. ``"uncalibrated: out_of_scope AUC 0.60 < floor
        0.75"``) or resume (``None``) alarms of ``dimension``. A suppressed dimension is still
        tested, but its state and its comparisons' states read ``uncalibrated`` and no alarm
        is recorded. An alarm in progress ends there (the whole dimension is no longer a
        fact): its entry in :attr:`alarms` reads ``uncalibrated`` with ``suppressed``, the
        reason, recorded at the next test or the end of the next batch.

        Raises:
            ValueError: ``dimension`` is not one of :data:`DIMENSIONS`.
        """
        if dimension not in DIMENSIONS:
            raise ValueError(f"unknown drift dimension {dimension!r}")
        if reason is None:
            self.suppressed.pop(dimension, None)
        else:
            self.suppressed[dimension] = reason

    def suppress_category(self, dimension: str, category: str, reason: str | None) -> None:
        """As :meth:`suppress` for one category of a categorical dimension (e.g. ``novel``
        of ``topic`` while the novelty detector is uncalibrated): a comparison in drift whose
        rising categories are all suppressed reads ``uncalibrated`` and raises no alarm; one
        where another category rises too still alarms.

        Raises:
            ValueError: ``dimension`` is not categorical.
        """
        if dimension not in CATEGORICAL:
            raise ValueError(f"not a categorical drift dimension: {dimension!r}")
        silenced = self.suppressed_categories.setdefault(dimension, {})
        if reason is None:
            silenced.pop(category, None)
        else:
            silenced[category] = reason

    def withhold_gaps(self, dimension: str, reason: str | None) -> None:
        """Leave out (``reason``: what the dimension's categories are instead, e.g. ``"each
        question's nearest gold topic, …"``) or restore (``None``) the coverage gaps of a
        categorical dimension whose categories are not what they are named, while its drift
        is still tested and alarms as before: a change of its distribution is a change of the
        traffic, a category's live share above its gold share is no fact about that category
        (topic while the novelty detector is uncalibrated: questions on topics the gold set
        lacks are counted under their nearest gold topic). The report says ``reason`` as the
        dimension's ``categories_are`` and as each left-out gap's why.

        Raises:
            ValueError: ``dimension`` is not categorical.
        """
        if dimension not in CATEGORICAL:
            raise ValueError(f"not a categorical drift dimension: {dimension!r}")
        if reason is None:
            self.gaps_withheld.pop(dimension, None)
        else:
            self.gaps_withheld[dimension] = reason

    def confound(self, dimension: str, by: str, reason: str | None,
                 categories: Collection[str] | None = None) -> None:  # fmt: skip
        """Stop (``reason``: why) or resume (``None``) the alarms of ``dimension`` while
        ``by`` drifts: a comparison of ``dimension`` in drift reads ``uncalibrated`` and
        raises no alarm while the same comparison (``reference`` or ``baseline``) of ``by``
        tests ``drift`` too (e.g. ``topic`` by ``language`` when the topic assignment is
        measurably worse in one language: a change of the language mix alone moves the topic
        shares, :func:`service.topics.quality.language_bias`). It alarms as before while
        ``by`` does not drift. With ``categories`` (of ``by``), only while ``by``'s drifting
        comparison moved one of them (rising or falling): e.g. the languages whose topic
        assignment the gold set does not show about as good
        (:func:`service.topics.quality.unshown_languages`).

        Raises:
            ValueError: either is not one of :data:`DIMENSIONS`, or they are the same.
        """
        if dimension not in DIMENSIONS or by not in DIMENSIONS or dimension == by:
            raise ValueError(f"cannot confound drift dimension {dimension!r} by {by!r}")
        if reason is None:
            self.confounded.pop(dimension, None)
            self.confounded_categories.pop(dimension, None)
        else:
            self.confounded[dimension] = (by, reason)
            if categories is None:
                self.confounded_categories.pop(dimension, None)
            else:
                self.confounded_categories[dimension] = frozenset(categories)

    def kept_out(self) -> tuple[int, int, int, float]:
        """``(late, future, ahead, share of the events seen)`` kept out of the windows (as
        the window every event reaches counts them, :attr:`_kept_out_counter`)."""
        window = self._kept_out_counter.window
        out = window.late + window.future + window.ahead
        seen = out + window.accepted
        return window.late, window.future, window.ahead, (out / seen if seen else 0.0)

    def take_kept_out(self) -> dict[str, int]:
        """``{"late": n, "future": n}``: the events kept out of the windows late and future
        since the last call (for the metrics; counted as :meth:`kept_out` counts them), then
        zero. Events restored from a snapshot are not among them. Held events (``ahead``)
        are not counted here: their count falls when a confirmed jump releases them
        (:meth:`kept_out`)."""
        taken, self._pending_kept_out = self._pending_kept_out, {"late": 0, "future": 0}
        return taken

    def recent_known(self) -> tuple[dict[str, Any] | None, str, float]:
        """``(test, state, window_s)`` of the ``known_miss`` dimension: its baseline
        comparison's latest test as a dict (``None`` before one, or without a baseline), the
        dimension's state and its current window's span in seconds
        (:func:`service.quality.stage.recent_known_hits` turns them into the live hit rate
        of the latest window)."""
        detector = self.rates[KNOWN_MISS]
        report = detector.reports.get("baseline")
        state = self._states_of(KNOWN_MISS, detector).get("baseline", "insufficient_data")
        return (report.to_dict() if report else None), str(state), self.known_window_s

    def take_alarms(self) -> dict[tuple[str, str], int]:
        """``{(dimension, comparison): n}``: the alarms raised (a comparison's move into
        ``drift``; not a widening, nor a drift the confound keeps quiet) since the last call,
        for ``goldwatch_drift_alarms_total``, then none. An alarm raised and cleared between
        two calls is still counted (trial 38: alarms of a log read faster than real time
        never held the drift state long enough to become an alert)."""
        taken, self._pending_alarms = self._pending_alarms, {}
        return taken

    def recent_kept_out(self) -> tuple[int, int, int, int, float]:
        """``(events, late, future, ahead, share kept out)`` of the latest events seen (about
        :data:`STARVED_RECENT_EVENTS`; fewer before that many came). ``ahead``: those of them
        held, at most as many as are held (or were dropped held) now — an event released since
        is in the windows, not kept out."""
        events, late, future, held = self._recent_sums
        ahead = min(held, self._kept_out_counter.window.ahead)
        out = late + future + ahead
        return events, late, future, ahead, (min(1.0, out / events) if events else 0.0)

    def starved(self) -> str | None:
        """Why the windows are starved (``None``: they are not): at least
        :data:`STARVED_SHARE` of the latest events seen were kept out, e.g. ``"83% of the
        latest 5000 events seen were kept out of the drift windows (4150 late, 0 future, 0
        ahead): an ok test saw too little of the traffic"``."""
        kept = self._kept_out_text()
        return None if kept is None else f"{kept}: an ok test saw too little of the traffic"

    def _kept_out_text(self, always: bool = False) -> str | None:
        """``"83% of the latest 5000 events seen were kept out of the drift windows (4150 late,
        0 future, 0 ahead)"`` when the windows are starved (or, with ``always``, whenever any
        was kept out), else ``None``."""
        events, late, future, ahead, share = self.recent_kept_out()
        if share < STARVED_SHARE and not (always and late + future + ahead):
            return None
        return (f"{share:.0%} of the latest {events} events seen were kept out of the drift "
                f"windows ({late} late, {future} future, {ahead} ahead)")  # fmt: skip

    def starved_windows(self, reason: str, n_current: int, min_count: int) -> str | None:
        """Why a test lacks events when the events kept out of the windows are what left it
        short (``None``: they are not): the windows are starved (:meth:`starved`), or the
        events kept out of the latest seen are more than the ``n_current`` its window holds
        (a trial: 301 late of the latest 3,340, 9 %, while a 12 h window held 5 and the
        reason advised a 240 h window); the latter is then said after the share, e.g.
        ``"9% of ... (301 late, 0 future, 0 ahead), more than the current window's 5: ..."``.

        When the events kept out would have filled the window (``n_current`` in it, with the
        share kept out of the latest events given back, ``n_current / (1 − share)``, reaches
        ``min_count``: the kept-out events are taken as spread over time like the others, as
        the latest events may span many windows) and the window holds fewer than
        ``min_count`` (a full one lacks its baseline or reference, which ``reason`` names),
        the events' timestamps are the cause and
        :func:`insufficient_reason`'s advice on the windows' sizes (``reason``) would mislead:
        only the timestamps are named, e.g. ``"100% of the latest 3006 events seen were kept
        out of the drift windows (3000 late, 0 future, 0 ahead): the events' timestamps, not
        the traffic, leave the windows short; check the clocks that stamp them and the order
        they are read in (a backlog of several Kafka partitions comes one partition after
        another) (or analytics.drift.allowed_lateness_s)"``. Otherwise the traffic is thin too: the
        kept-out share is said first, then ``reason``. The setting named is the one of the
        most kept-out kind (late: ``allowed_lateness_s``; future: ``future_tolerance_s``;
        ahead: ``max_ahead_s``).
        """
        _, late, future, ahead, share = self.recent_kept_out()
        kept = self._kept_out_text()
        if kept is None and late + future + ahead > n_current:  # not starved, yet the cause
            kept = f"{self._kept_out_text(always=True)}, more than the current window's {n_current}"
        if kept is None:
            return None
        setting = max((late, "allowed_lateness_s"), (future, "future_tolerance_s"),
                      (ahead, "max_ahead_s"))[1]  # fmt: skip
        # the window as it would be with its share of the kept-out events back: the latest
        # events seen may span far more than one window (trial 17: 407 late of 3,600 over six
        # days at 25 an hour; 25 + 407 >= 200 blamed the clocks for a window thin by traffic)
        filled = n_current / (1.0 - share) if share < 1.0 else math.inf
        # (a window holding min_count is not short: the comparison lacks its baseline or
        # reference, and ``reason`` says so; review s35)
        if n_current < min_count <= filled:
            return (f"{kept}: the events' timestamps, not the traffic, leave the windows short; "
                    f"check the clocks that stamp them and {_READ_ORDER} (or "
                    f"{SETTINGS}.{setting})")  # fmt: skip
        return (f"{kept} (check the clocks that stamp them and {_READ_ORDER}, or "
                f"{SETTINGS}.{setting}); {reason}")  # fmt: skip

    def _state_of(self, dim: str, state: str, report: Any, name: str = "",
                  reports: Mapping[str, Mapping[str, Any]] | None = None) -> str:  # fmt: skip
        """A comparison's ``state`` after suppression (``uncalibrated`` when silenced, or
        confounded by a dimension whose comparison ``name`` drifts too, :meth:`confound`) and
        starvation (``starved`` instead of ``ok``); ``report`` is its latest test (``None``
        before the first one after a restore); ``reports``: each dimension's latest reports
        per comparison (default: its detector's). A ``drift`` the detector holds by hysteresis
        (``held_by_hysteresis``) reads ``drift`` only while its alarm is open; otherwise
        ``uncalibrated``: an alarm opens only at a test that meets the alarm rule."""
        if dim in self.suppressed:
            return UNCALIBRATED
        if state == "ok" and self.starved():
            return STARVED
        if self._last_state.get(f"{dim}/{name}") == "drift" and (
                state == "drift" or (state == "insufficient_data" and report is not None
                                     and report.held_by_hysteresis)):  # fmt: skip
            return "drift"  # an open alarm: held by the detector's hysteresis alone (held)
        if state == "drift" and self._quieted(dim, report, name, reports):
            return UNCALIBRATED
        if state == "drift" and getattr(report, "held_by_hysteresis", False):
            # a drift its detector holds from a test that opened no alarm (quieted, or its
            # dimension suppressed then): this test alone does not meet the alarm rule, so it
            # opens none — only a test that meets it does, with its own figures (trial 46 F3:
            # an alarm opened at p 0.0276, JSD 0.017 when a weak test's rising topic-0 ended
            # the "only novel rises" quiet of a drift novel alone had opened 7 h before)
            return UNCALIBRATED
        return state

    def _quieted(self, dim: str, report: Any, name: str,
                 reports: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:  # fmt: skip
        """Why a test of ``dim``'s comparison ``name`` that reads ``drift`` opens no alarm
        (``None``: it would): the dimension is confounded by another that drifts too
        (:meth:`confound`), or every category rising in it is suppressed
        (:meth:`suppress_category`, e.g. an uncalibrated ``novel``). ``report``: the test
        (``None`` before the first one after a restore); ``reports``: as :meth:`_state_of`."""
        quiet = self._quieted_by(dim, report, name, reports)
        return None if quiet is None else quiet[1]

    def _quieted_by(self, dim: str, report: Any, name: str,
                    reports: Mapping[str, Mapping[str, Any]] | None = None,
                    ) -> tuple[str, str] | None:  # fmt: skip
        """:meth:`_quieted` as ``(kind, why)``, ``kind`` one of :data:`HELD_BECAUSE`'s
        ``"confounded"`` or ``"suppressed_categories"``."""
        if self._confounded_now(dim, name, reports):
            return "confounded", f"confounded: {self.confounded[dim][0]} drifts too"
        silenced = self.suppressed_categories.get(dim)
        if silenced and report is not None:
            rising = {change.category for change in getattr(report, "rising", ())}
            if rising and rising <= silenced.keys():
                named = ", ".join(f"{c} ({silenced[c]})" for c in sorted(rising))
                return ("suppressed_categories",
                        f"only {named} rises, which alone raises no alarm")  # fmt: skip
        return None

    def _quiet_words(
        self, dim: str, report: Any, name: str,
        reports: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> str | None:  # fmt: skip
        """Why a ``drift`` test of ``dim``'s comparison ``name`` opens no alarm now, in a few
        words (``"confounded by language"``, ``"only novel rose"``; ``None``: it is not kept
        quiet so, :meth:`_quieted_by`)."""
        quiet = self._quieted_by(dim, report, name, reports)
        if quiet is None:
            return None
        if quiet[0] == "confounded":
            return f"confounded by {self.confounded[dim][0]}"
        rising = sorted({str(change.category) for change in getattr(report, "rising", ())})
        return f"only {', '.join(rising)} rose"

    def quiet_held(self, dim: str, name: str, test: Mapping[str, Any], report: Any) -> str | None:
        """Why the comparison ``name`` of ``dim`` reads ``uncalibrated`` though its detector
        holds a ``drift`` by hysteresis (``test``: its report's dict after suppression,
        ``report``: the detector's report), or ``None`` when it does not: a drift that
        opened no alarm (confounded, or only a suppressed category rose), held by the
        detector's hysteresis, whose latest test does not meet the alarm rule either (trial
        46 F3), e.g. ``"a drift that opened no alarm (confounded by language), held by
        hysteresis: this test (JSD 0.005, p 0.003) does not meet the alarm rule; an alarm
        opens only at a test that does, else it clears"``. The why is the latest one that
        kept the drift quiet (kept in the snapshot: a restored process says it too)."""
        if (report is None or test.get("state") != UNCALIBRATED or dim in self.suppressed
                or test.get("tested_state") != "drift"
                or not report.held_by_hysteresis):  # fmt: skip
            return None
        why = (self._quiet_words(dim, report, name)
               or self._quiet_why.get(f"{dim}/{name}"))  # fmt: skip
        return (
            f"a drift that opened no alarm{f' ({why})' if why else ''}, held by "
            f"hysteresis: this test ({figures_text(test)}) does not meet the alarm rule; "
            "an alarm opens only at a test that does, else it clears"
        )

    def held(self, dim: str, name: str, report: Any,
             reports: Mapping[str, Mapping[str, Any]] | None = None) -> str | None:  # fmt: skip
        """Why the open alarm of ``dim``'s comparison ``name`` is held although its latest
        test (``report``) would not open one (``None``: it is not held this way), e.g.
        ``"only novel (uncalibrated: …) rises, which alone raises no alarm; the alarm stays
        open until every test shows the effect below half the threshold for 1 h"``; once a
        test reads the effect below half the threshold (``clearing_since``, whatever else
        holds it), when it may end: ``"effect below half the threshold since 2026-01-01
        10:40 UTC; the alarm ends once every test stays so for 1 h (2026-01-01 11:40 UTC at
        the earliest)"``.

        The rule (trial 24, MEDIUM 2): a category suppression or a confound decides only
        whether a move into ``drift`` *opens* an alarm. Once open, the alarm ends only by the
        detector's clearing rule (its hysteresis), whatever the calibration of the categories
        rising at a later test or a confound says — such a test is strong, so it is held for
        that reason, not by hysteresis (its report's ``held_because``, review s40) — and
        through tests too short of events (``insufficient_data``: not tested is not cleared;
        the report says so in ``held``, ``held_because: not_tested``, ``last_test``;
        for at most the detector's ``hold_untested_s``, a day or the window span, since the
        latest test with enough events: a lasting fall of the traffic ends it not tested):
        it ends when every test over the detector's ``clear_span`` (one short current window)
        shows the effect below the ``clear_*`` thresholds (half the alarm's), or when the whole
        dimension is suppressed (:meth:`suppress`: the entry that ends it says why).
        Before, an open topic alarm whose only rising category at one test was the
        uncalibrated ``novel`` read ``uncalibrated`` there, left drift, and opened a new alarm
        at the next test where another topic's rise was significant again: 3 alarms (and 3
        "left drift" marks) for one growing change."""
        if (report is None or report.state != "drift" or dim in self.suppressed
                or self._last_state.get(f"{dim}/{name}") != "drift"):  # fmt: skip
            return None
        span_s = self._detectors()[dim].clear_span(name)
        if getattr(report, "clearing_since", 0.0):  # weak already: when it may end
            return clearing_text(report.clearing_since, span_s)
        why = self._quieted(dim, report, name, reports)
        return None if why is None else f"{why}; {_until_clear(span_s)}"

    def _confounded_now(
        self, dim: str, name: str, reports: Mapping[str, Mapping[str, Any]] | None = None
    ) -> bool:
        """Whether ``dim`` is confounded (:meth:`confound`, not suppressed) and the other
        dimension's comparison ``name`` tests ``drift`` now (``reports``: each dimension's
        latest reports per comparison; default: its detector's)."""
        if dim not in self.confounded or dim in self.suppressed:
            return False
        by = self.confounded[dim][0]
        other = (self._detectors()[by].reports if reports is None
                 else reports.get(by, {})).get(name)  # fmt: skip
        if other is None or other.state != "drift":
            return False
        categories = self.confounded_categories.get(dim)
        if categories is None:
            return True
        moved = _what_moved(other.to_dict())
        shares = [*(moved.get("rising") or ()), *(moved.get("falling") or ())]
        return not categories.isdisjoint(shares)

    def _states_of(self, dim: str, det: Any) -> dict[str, str]:
        """Every comparison's state of ``dim`` after suppression."""
        return {name: self._state_of(dim, state, det.reports.get(name), name)
                for name, state in det.states.items()}  # fmt: skip

    def set_topic_strata(self, gold_topic_strata: Mapping[str, Counts] | None) -> None:
        """Replace the gold set's topic rows by language, ``{language: {topic: rows}}``
        (``None``: none), the strata of the topic comparison with the gold set: its reference
        is the one the gold set would have had under the live window's language mix
        (:func:`~service.drift.strata.standardised_reference`). The gold set's languages are
        kept apart in the topic windows from now on (most rows first, at most
        :data:`TOPIC_STRATA` with the live languages seen so far)."""
        self.categorical["topic"].set_reference_strata(gold_topic_strata)
        if gold_topic_strata:
            rows = {lang: sum(cells.values()) for lang, cells in gold_topic_strata.items()}
            gold = sorted((lang for lang, n in rows.items() if n > 0), key=lambda g: -rows[g])
            kept = [*gold, *(lang for lang in self.topic_strata if lang not in rows)]
            self.topic_strata = kept[:TOPIC_STRATA]
        self._stratum_of = set(self.topic_strata)

    def _joint(self, columns: list[_Column]) -> list[_Column]:
        """``columns`` with the topic column's values as joint keys of topic and the
        question's language (its stratum: the language when among :attr:`topic_strata`, a
        new language joining them while they are fewer than :data:`TOPIC_STRATA`, else
        ``""``), its topics kept for the live counts (``counted``)."""
        languages = columns[0].values  # (every event's, "und" when none)
        for i, column in enumerate(columns):
            if column.dimension != "topic":
                continue
            rows = column.rows
            langs = languages if rows is None else [languages[r] for r in rows]
            kept, strata = self._stratum_of, self.topic_strata
            seen = dict.fromkeys(langs)  # (in the order first seen: new strata join so)
            for lang in seen:
                if lang not in kept and len(strata) < TOPIC_STRATA:
                    strata.append(lang)
                    kept.add(lang)
            suffix = {lang: joint_key("", lang if lang in kept else "") for lang in seen}
            keys = [topic + suffix[lang] for topic, lang in zip(column.values, langs, strict=True)]
            columns[i] = _Column("topic", keys, rows, column.values)
        return columns

    def set_labeller(self, dim: str, labeller: Labeller, why: str) -> bool:
        """The labeller of ``dim`` (one of :data:`LABELLED`) is now ``labeller``. When it is
        another one than the windows counted under (another :attr:`Labeller.key`), the
        dimension's windows start afresh (:meth:`restart`): counts made under two labellers
        are not comparable (trial 48 H1: 17 accepted gold rows moved the off-corpus cutoffs,
        Deva 0.668 → 0.515, and a frozen baseline of 13.3 % judged by the old detector
        alarmed against 4.5 % of unchanged traffic judged by the new one). ``why``: the
        change, said in the report (``windows_restarted``). Not restarted: the same key (a
        gold-set change that leaves every label as it was), or a stage not told its labeller
        before (it is then told). Returns whether the windows started afresh.

        Raises:
            ValueError: ``dim`` is not one of :data:`LABELLED`.
        """
        if dim not in LABELLED:
            raise ValueError(f"drift dimension {dim!r} has no labeller to set")
        known = self.labellers.get(dim)
        self.labellers[dim] = labeller
        if known is None or known.key == labeller.key:
            return False
        self.restart(dim, why)
        return True

    def restart(self, dim: str, why: str) -> None:
        """Start the windows of ``dim`` (one of :data:`LABELLED`) afresh, as at a first start:
        a new detector (a categorical one keeps its gold-set reference and strata), so the
        current window, the frozen baseline and the tests go and the baseline warms up again
        (``analytics.drift.warmup_s``); an alarm of it still open ends there, its entry in
        :attr:`alarms` reading ``insufficient_data`` with ``restarted`` (``why``). When and
        why are kept in :attr:`restarts` (the report's ``windows_restarted``): the events
        seen so far and the event-time watermark (``None`` before any event). The other
        dimensions keep theirs.

        Raises:
            ValueError: ``dim`` is not one of :data:`LABELLED`.
        """
        if dim not in LABELLED:
            raise ValueError(f"drift dimension {dim!r} has no labeller to restart for")
        watermark = self._kept_out_counter.window.watermark
        at = None if watermark is None else float(watermark)
        prefix = f"{dim}/"
        for key, state in list(self._last_state.items()):
            if not key.startswith(prefix):
                continue
            if state == "drift":  # an open alarm ends with the windows it was tested on
                entry = {"dimension": dim, "comparison": key[len(prefix):],
                         "state": "insufficient_data", "after_events": self.events_seen,
                         "timestamp": at or 0.0, "restarted": why}  # fmt: skip
                self.alarms = [*self.alarms, entry][-MAX_ALARMS:]
            del self._last_state[key]
        for kept in (self._named, self._quiet_why):
            for key in [k for k in kept if k.startswith(prefix)]:
                del kept[key]
        if dim in self.categorical:
            old = self.categorical[dim]
            fresh = self._new_categorical(dim)
            fresh.set_reference_strata(getattr(old, "_reference_strata", None))
            self.categorical[dim] = fresh
        else:
            self.rates[dim] = self._new_rate(dim)
        self.restarts[dim] = {"after_events": self.events_seen, "timestamp": at, "why": why}

    def set_gold_counts(self, gold_counts: Mapping[str, Counts]) -> None:
        """Replace the gold-set reference counts (the gold set grew); live windows are kept,
        the next tests compare against the new reference."""
        for dim, counts in gold_counts.items():
            self.gold_counts[dim] = dict(counts)
            if dim in self.categorical:
                self.categorical[dim].set_reference(counts)

    def process(self, batch: Batch) -> None:
        """Add the batch's annotated events to every detector and record each comparison's
        move into (or out of) ``drift`` at the test that made it.

        Batching plays no part in the tests nor in the alarms of events read in event-time
        order: the detectors test where event time crosses a multiple of ``test_every_s``
        (:class:`~service.drift.windows.ComparisonWindows`), and an alarm is recorded at that
        test, with ``after_events`` the events seen up to the one whose time set it off and
        ``timestamp`` the test's watermark, whatever batch it came in (the alarms were read
        once per 100-event chunk before: a test's alarm waited for its chunk's end, and a
        replay of a log at ~33 events an hour, 500-event batches, reported them 1.5–2 h later
        than the live service's small batches did, trial 36). The share of the latest events
        kept out of the windows (``starved``) is counted in blocks of
        :data:`ALARM_RESOLUTION` events of the whole stream, not of the batch, so it is the
        same at each test too. What depends on arrival, by design: the wall clock (read once
        per ``ALARM_RESOLUTION`` events of a batch, before it: an event more than
        ``future_tolerance_s`` past it is kept out ``future``), and with several Kafka
        partitions, the order their events are read in (an event late against its own
        partition's watermark; a partition's re-test, decided at each ``ALARM_RESOLUTION``
        events of a batch, :class:`~service.drift.windows.ComparisonWindows`). A change of
        state no test made (a dimension :meth:`suppress`-ed or :meth:`confound`-ed between
        batches) is recorded at the end of the batch.

        A batch with no event held ahead of a watermark (nor one held before) is fed to each
        detector at once (:meth:`_process_at_once`), with each event's chunk's clock reading;
        the tests' alarms and the kept-out shares are read off the tests' log and the late and
        future masks; a Kafka partition's re-test (decided at the end of each update) is
        checked at each chunk's end, and the partitions' watermarks are remembered in the
        order the chunks would leave them (split at each chunk's end when more partitions
        than a window keeps are read): the same detectors, reports, alarms and state (key
        order included) as chunk by chunk, with one update per detector instead of one per
        chunk (~2 µs an event less on 500-event batches). Batches that hold or release events
        go chunk by chunk.
        """
        stamps = [event.timestamp.timestamp() for event in batch.events]
        if not stamps:
            return
        ends = [*range(ALARM_RESOLUTION, len(stamps), ALARM_RESOLUTION), len(stamps)]
        nows = [self.clock() for _ in ends]  # one per chunk
        # (an event without a question, e.g. a stand-in of a test, has no terms)
        questions = (None if self.terms is None
                     else [getattr(event, "question", "") for event in batch.events])  # fmt: skip
        if not self._process_at_once(batch.annotations, stamps, ends, nows, batch.streams,
                                     questions):  # fmt: skip
            streams, start = batch.streams, 0
            for end, now in zip(ends, nows, strict=True):
                part = None if streams is None else streams[start:end]
                self._update(batch.annotations[start:end], stamps[start:end], part, now,
                             None if questions is None else questions[start:end])  # fmt: skip
                start = end
        self._record_alarms()  # (a state no test changed: suppressed or confounded since)

    def _process_at_once(
        self,
        annotations: list[dict[str, Any]],
        stamps: list[float],
        ends: list[int],
        nows: list[float],
        streams: list[str] | None = None,
        questions: list[str] | None = None,
    ) -> bool:
        """Feed a batch to each detector in one update, as :meth:`process` says; ``ends``: the
        chunks' ends, ``nows``: their clock readings, ``streams``: the batch's. Returns
        ``False``, having changed nothing, when some detector holds events or would hold or
        release some (then the caller goes chunk by chunk). Same cost in memory: a few arrays
        of the batch's length."""
        sizes = np.diff([0, *ends])
        ts = np.array(stamps, dtype=np.float64)
        now = np.repeat(np.array(nows, dtype=np.float64), sizes)
        detectors = self._detectors()
        feeds: list[_Feed] = []
        for column in self._joint(_columns(annotations, questions)):
            rows = column.rows
            if rows is None:
                feeds.append(_Feed(column, detectors[column.dimension], ts, now, streams, ends))
            else:  # a chunk without such an event updated nothing: its end checks nothing more
                checks = sorted(set(np.searchsorted(rows, ends).tolist()))
                feeds.append(_Feed(column, detectors[column.dimension], ts[rows], now[rows],
                                   _pick(streams, rows), checks))  # fmt: skip
        marks = [feed.detector.watermarks(feed.timestamps, feed.now) for feed in feeds]
        if any(feed.detector.holds(wm) for feed, wm in zip(feeds, marks, strict=True)):
            return False
        latest = {dim: det.reports for dim, det in detectors.items()}  # before the batch
        # each detector's reports after each of its tests, at the batch's event it followed
        logs: dict[str, TestLog] = {}
        counter = self._kept_out_counter
        ok: NDArray[np.bool_] | None = None  # the events the language window accepted
        for feed, wm in zip(feeds, marks, strict=True):
            if ok is not None and (kept := _accepted(feed.column, ok)) is not feed.column:
                if kept is None:  # (a known column: none of its events accepted)
                    continue
                rows = cast(list[int], kept.rows)
                checks = sorted(set(np.searchsorted(rows, ends).tolist()))
                feed = _Feed(kept, feed.detector, ts[rows], now[rows], _pick(streams, rows),
                             checks)  # fmt: skip
                wm = feed.detector.watermarks(feed.timestamps, feed.now)
            dim, values, rows, counted = feed.column
            tests: TestLog = []
            feed.detector.update_many(values, feed.timestamps, feed.now, feed.streams,
                                      watermarks=wm, tests=tests, checks=feed.checks)  # fmt: skip
            logs[dim] = [(after if rows is None else rows[after - 1] + 1, reports)
                         for after, reports in tests]  # fmt: skip
            if dim in self.live_counts:  # (values: of the column's rows)
                self.live_counts[dim].update(values if counted is None else counted)
            if feed.detector is counter:  # (language: the first feed; nothing held here)
                ok = counter.added_mask()
        late, future = self._kept_out_counter.kept_out_masks()
        self._record_tests(logs, latest, late, future, None)
        return True

    def _record_tests(
        self,
        logs: Mapping[str, TestLog],
        latest: dict[str, Any],
        late: NDArray[np.bool_],
        future: NDArray[np.bool_],
        held: NDArray[np.bool_] | None,
    ) -> None:
        """Count an update's events seen and kept out (:meth:`_remember_events`) and record
        the alarms of its tests (``logs``: each dimension's ``(after how many of the update's
        events, reports after the test)``, in order; ``latest``: each dimension's reports
        before the update, updated here) at each test's event, in event order: the tests of
        several dimensions after the same event are recorded together. ``late``, ``future``,
        ``held``: masks over the update's events (``None``: none held)."""
        self._pending_kept_out["late"] += int(late.sum())
        self._pending_kept_out["future"] += int(future.sum())
        masks = (late, future) if held is None else (late, future, held)
        counts = [np.concatenate([[0], np.cumsum(mask, dtype=np.int64)]).tolist()
                  for mask in masks]  # fmt: skip
        if held is None:
            counts.append([0] * (len(late) + 1))
        read = dict.fromkeys(logs, 0)  # each log's tests taken so far
        done = 0
        for at in sorted({after for log in logs.values() for after, _ in log}):
            self._remember_events(done, at, counts)
            done = at
            for dim, log in logs.items():
                while read[dim] < len(log) and log[read[dim]][0] <= at:
                    latest[dim] = log[read[dim]][1]
                    read[dim] += 1
            self._record_alarms(latest)
        self._remember_events(done, len(late), counts)

    def _remember_events(self, start: int, end: int, counts: list[list[int]]) -> None:
        """Add an update's events ``start:end`` to :attr:`events_seen` and to the latest ones
        (:meth:`_remember`), in blocks of the whole stream's events (the ``k``-th holds its
        events ``k·R`` to ``(k+1)·R − 1``, ``R`` = :data:`ALARM_RESOLUTION`), so the latest
        blocks are the same whatever the batching; ``counts``: the running sums of the
        update's late, future and held events (each ``[0, …]``, one more than its events)."""
        while start < end:
            room = ALARM_RESOLUTION - self.events_seen % ALARM_RESOLUTION
            stop = min(end, start + room)
            late, future, held = (c[stop] - c[start] for c in counts)
            self._remember((stop - start, late, future, held),
                           new=self.events_seen % ALARM_RESOLUTION == 0)  # fmt: skip
            self.events_seen += stop - start
            start = stop

    def idle(self) -> None:
        """The pipeline's idle turn (no event came): test again the windows a later-read
        Kafka partition added events to behind the last test, fewer than ``min_count`` of
        them (the end of a backlog: the last test would otherwise miss them until the next
        event), and record what that changed."""
        tested = [detector.flush() for detector in self._detectors().values()]
        if any(tested):
            self._record_alarms()

    def finish(self) -> None:
        """The input ended (a replay's end): each detector releases the events its windows
        hold that no later event refuted (a log that ended a few events after a pause), tests
        if that reached a new test time, and what that changed is recorded. Not in serve: a
        later event may still refute them (they wait, counted ``ahead``)."""
        counter = self._kept_out_counter
        tested = [counter.finish()]  # (first: the known windows take what it releases)
        tested += [self._feed_known(dim, None, [], None, self.clock(), None)
                   for dim in list(self._known_waiting)]  # fmt: skip
        tested += [d.finish() for d in self._detectors().values() if d is not counter]
        if any(tested):
            self._record_alarms()

    def _update(
        self,
        annotations: list[dict[str, Any]],
        stamps: list[float],
        streams: list[str] | None = None,
        now: float | None = None,
        questions: list[str] | None = None,
    ) -> None:
        """Feed one chunk to every detector (``now``: its clock reading; ``None``: read
        here; ``questions``: the events' scrubbed questions, for ``terms``), count its events
        seen and kept out, and record its tests' alarms (:meth:`_record_tests`)."""
        now = self.clock() if now is None else now
        detectors = self._detectors()
        latest = {dim: det.reports for dim, det in detectors.items()}  # before the chunk
        logs: dict[str, TestLog] = {}
        counter = self._kept_out_counter
        ok: NDArray[np.bool_] | None = None  # the events the language window added
        waiting: NDArray[np.bool_] | None = None  # those it still holds (or held and dropped)
        settled: set[str] = set()  # the known dimensions fed
        for whole in self._joint(_columns(annotations, questions)):
            column = whole if ok is None else _accepted(whole, ok)
            if waiting is not None and whole.dimension in KNOWN and whole.rows is not None:
                pairs = zip(whole.rows, whole.values, strict=True)
                held = [(stamps[r], None if streams is None else streams[r], v)
                        for r, v in pairs if waiting[r]]  # fmt: skip
                self._known_waiting.setdefault(whole.dimension, []).extend(held)
                self.rates[whole.dimension].count_ahead(len(held))  # (as language counts them)
                self._feed_known(whole.dimension, column, stamps, streams, now, logs)
                settled.add(whole.dimension)
                continue
            if column is None:
                continue
            dim, values, rows, counted = column
            tests: TestLog = []
            if rows is None:
                detectors[dim].update_many(values, stamps, now, streams, tests=tests)
            else:
                detectors[dim].update_many(values, [stamps[i] for i in rows], now,
                                           _pick(streams, rows), tests=tests)  # fmt: skip
            logs[dim] = [(after if rows is None else rows[after - 1] + 1, reports)
                         for after, reports in tests]  # fmt: skip
            if dim in self.live_counts:
                self.live_counts[dim].update(values if counted is None else counted)
            if detectors[dim] is counter:  # (language: the first column)
                ok = counter.added_mask()
                waiting = counter.held_mask() & ~ok
        for dim in [d for d in self._known_waiting if d not in settled]:
            self._feed_known(dim, None, stamps, streams, now, logs)
        late, future = counter.kept_out_masks()
        self._record_tests(logs, latest, late, future, counter.held_mask())

    def _known_taken(self, dim: str) -> list[tuple[float, str | None, Any]]:
        """The known questions of ``dim`` waiting for the ``language`` window's decision
        (:attr:`_known_waiting`, ``(timestamp, stream, value)``) that it has now released
        (:meth:`released`), oldest first. Each waiting one is counted ``ahead`` in ``dim``'s
        windows from when it came, as the language window counts it: one released moves to
        ``accepted`` (fed by :meth:`_feed_known`); one it dropped (no longer held, not
        released: pushed out or a refuted lone outlier) stays ``ahead``, as there; one it
        still holds waits. Events are matched by timestamp, oldest
        first (an event released at a known question's second while that one stays held
        could be taken for it: both came at the same second, so they are nearly always
        decided together)."""
        entries = self._known_waiting.get(dim, [])
        if not entries:
            return []
        counter = self._kept_out_counter
        released, held = Counter(counter.released()), Counter(counter.held_stamps())
        taken: list[tuple[float, str | None, Any]] = []
        kept: list[tuple[float, str | None, Any]] = []
        for entry in entries:
            if released[entry[0]] > 0:
                released[entry[0]] -= 1
                taken.append(entry)
            elif held[entry[0]] > 0:
                held[entry[0]] -= 1
                kept.append(entry)
        self.rates[dim].count_ahead(-len(taken))
        self._known_waiting[dim] = kept
        return sorted(taken, key=lambda entry: entry[0])

    def _feed_known(
        self,
        dim: str,
        column: _Column | None,
        stamps: list[float],
        streams: list[str] | None,
        now: float,
        logs: dict[str, TestLog] | None,
    ) -> bool:
        """Feed a known dimension's windows the batch's known questions the ``language``
        window added (``column``, its rows; ``None``: none) and those it held before and has
        released since (:meth:`_known_taken`), each of those before the first of the batch's
        that is later than it, so the known windows take exactly the known questions the
        language window took, whatever the batch sizes (trial 48 review: a known question
        held at a batch's end was never fed). Tests are logged in ``logs`` (``None``: not)
        after the batch's event they followed. Returns whether a window tested."""
        taken = self._known_taken(dim)
        batch = [] if column is None or column.rows is None else list(
            zip(column.rows, column.values, strict=True))  # fmt: skip
        merged: list[tuple[float, str | None, Any, int]] = []  # (…, batch rows before it)
        j = 0
        for row, value in batch:
            while j < len(taken) and taken[j][0] < stamps[row]:
                merged.append((*taken[j], row))
                j += 1
            merged.append((stamps[row], None if streams is None else streams[row], value, row + 1))
        merged += [(*entry, len(stamps) if batch else 0) for entry in taken[j:]]
        if not merged:
            return False
        named = [m[1] for m in merged]
        tests: TestLog = []
        self.rates[dim].update_many([m[2] for m in merged], [m[0] for m in merged], now,
                                    None if None in named else [str(n) for n in named],
                                    tests=tests)  # fmt: skip
        if logs is not None:
            logs[dim] = [(merged[after - 1][3], reports) for after, reports in tests]
        return bool(tests)

    def _remember(self, update: tuple[int, ...], new: bool | None = None) -> None:
        """Add one update's ``(events, late, future, ahead)`` to the latest ones and forget
        the oldest while the rest still cover :data:`STARVED_RECENT_EVENTS` events.

        ``ahead``: the events newly held (a release is read off the held count in
        :meth:`recent_kept_out`, so one held before the latest events cannot cancel one held
        among them); a negative one (a snapshot's) counts as none. ``new``: whether the
        update starts a new entry (:meth:`_remember_events`: at each block of the stream's
        events); ``None`` (a restored snapshot's entries): an update of fewer than
        :data:`ALARM_RESOLUTION` events is merged into the one before while that one is as
        small.
        """
        events, late, future, ahead = update
        added = (events, late, future, max(0, ahead))
        last = self._recent[-1] if self._recent else None
        merge = last is not None and (last[0] < ALARM_RESOLUTION if new is None else not new)
        if merge and last is not None:
            self._recent[-1] = (last[0] + events, last[1] + late, last[2] + future,
                                last[3] + added[3])  # fmt: skip
        else:
            self._recent.append(added)
        sums = self._recent_sums
        for i, value in enumerate(added):
            sums[i] += value
        while len(self._recent) > 1 and sums[0] - self._recent[0][0] >= STARVED_RECENT_EVENTS:
            for i, value in enumerate(self._recent.popleft()):
                sums[i] -= value

    def _record_alarms(self, reports: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        """Remember each comparison's move into ``drift`` (and out of it) with what moved,
        and its move into a drift :meth:`confound` keeps quiet (state ``uncalibrated``,
        ``tested_state`` ``"drift"``, ``confounded_by`` the other dimension: no alarm, but
        on record); ``reports``: each dimension's latest report per comparison (default: its
        detector's). An open alarm is held while its detector stays in ``drift`` or holds it
        open untested, whatever the calibration of the categories rising at a later test or
        a confound says (:meth:`held`); one ended by the whole dimension's suppression says
        so (``suppressed``: why). So :attr:`alarms` holds an alarm's opening (state
        ``drift``), its widenings (``widened``), its end (the state it moved to: ``ok``, or
        ``starved`` for an ok test on starved windows; ``insufficient_data`` where the windows
        started afresh, e.g. a detector a restore left out, or where they stayed too short of
        events longer than the detector's ``hold_untested_s``; ``uncalibrated`` with
        ``suppressed``) and the quiet drifts of a confound (``tested_state``), nothing
        else."""
        for dim, det in self._detectors().items():
            latest = det.reports if reports is None else reports[dim]
            for name, report in latest.items():
                key = f"{dim}/{name}"
                before = self._last_state.get(key)
                now = self._state_of(dim, report.state, report, name, reports)
                self._last_state[key] = now
                if report.state != "drift":
                    self._quiet_why.pop(key, None)
                elif now == UNCALIBRATED and (
                        why := self._quiet_words(dim, report, name, reports)):  # fmt: skip
                    self._quiet_why[key] = why
                # a drift the confound keeps quiet is recorded too, marked (a review: a real
                # topic shift with a language shift left no trace once both had ended)
                quiet = (now == UNCALIBRATED and report.state == "drift"
                         and self._confounded_now(dim, name, reports))  # fmt: skip
                if now == before == "drift":
                    if dim in CATEGORICAL:
                        self._record_widening(dim, name, key, report)
                    continue
                if now != "drift":
                    self._named.pop(key, None)
                if now == before or ("drift" not in (now, before) and not quiet):
                    continue
                entry = {
                    "dimension": dim,
                    "comparison": name,
                    "state": now,
                    "after_events": self.events_seen,
                    "timestamp": report.timestamp,
                }
                if quiet:
                    entry["tested_state"] = "drift"
                    entry["confounded_by"] = self.confounded[dim][0]
                if before == "drift" and dim in self.suppressed:  # ended: why, not "cleared"
                    entry["suppressed"] = self.suppressed[dim]
                if now == "insufficient_data" and before == "drift" and "suppressed" not in entry:
                    # ended for lack of data: nothing moved (the test measured nothing), so the
                    # entry says how short the window was, never null figures (trial 51 H1)
                    entry["untested"] = self._untested_end(dim, name, det, report)
                else:
                    entry.update(_what_moved(report.to_dict()))  # fmt: skip
                if now == "drift" or quiet:  # the rule it met, so the entry can be checked
                    entry.update(_alarm_rule(det, report))
                if now == "drift" and dim in CATEGORICAL:
                    self._named[key] = self._rising_named(dim, entry)
                if now == "drift":
                    self._pending_alarms[dim, name] = self._pending_alarms.get((dim, name), 0) + 1
                self.alarms = [*self.alarms, entry][-MAX_ALARMS:]

    def _untested_end(self, dim: str, name: str, det: Any, report: Any) -> dict[str, Any]:
        """What an alarm ended for lack of data records under ``untested``: ``n_current``
        (events in the current window at the ending test), ``min_count`` (what a test needs),
        ``unit`` (:data:`UNITS`), ``window_s`` (the current window's span, seconds),
        ``hold_untested_s`` (how long tests too short of events hold an open alarm) and
        ``last_test`` (event time of the latest test with enough events; ``None``: not known,
        a snapshot from before it was kept)."""
        last = det.last_tested(name)
        windows = det.windows
        span = windows.reference_window_s if name == "reference" else windows.window_s
        return {
            "n_current": int(getattr(report, "n_current", 0) or 0),
            "min_count": int(det.min_count),
            "unit": UNITS.get(dim, "events"),
            "window_s": float(span),
            "hold_untested_s": float(det.hold_untested_s(name)),
            "last_test": None if last is None else float(last.timestamp),
        }

    def _rising_named(self, dim: str, moved: Mapping[str, Any]) -> list[str]:
        """The rising categories of an alarm entry or :func:`_what_moved` output of a
        categorical dimension that raise an alarm (a suppressed category does not)."""
        silenced = self.suppressed_categories.get(dim, {})
        return [str(c) for c in moved.get("rising") or () if c not in silenced]

    def _record_widening(self, dim: str, name: str, key: str, report: Any) -> None:
        """While a categorical comparison (language, topic) stays in drift, record an entry
        when a category its open alarm did not name rises: trial 17's "language vs
        reference: rising de" stayed open for two days and the day Spanish rose too was
        never named. Each category is named once per open alarm (``widened``: the new ones),
        when its rise is as strong as an alarm needs (the CI of its share change at least
        ``min_share_change`` above 0; the alarm's own ``rising``, a CI above 0 at 95 %, is
        crossed by chance by a share that never moved within a day of tests); the entry
        carries what moved, as an alarm's does. A state restored without the named
        list takes them from the open alarm's entries in the history (:func:`_named_by`), or,
        its opening entry gone from it, the current rising ones as named (no entry for what
        the alarm may already have said). Not for ``terms``: an open alarm's subject brings
        its own words one test after another (the demo's exam change named 20 terms in 6
        more entries)."""
        moved = _what_moved(report.to_dict())
        rising = self._rising_named(dim, moved)
        named = self._named.get(key)
        if named is None:
            self._named[key] = rising
            return
        # a rise as strong as an alarm's (its CI bound at min_share_change): ``rising`` is
        # any CI above 0, at 95 % and tested every few minutes while the alarm stays open
        # (review s35: each of five languages whose share never moved was named by chance
        # within a day of an open alarm)
        strong = {change.category for change in getattr(report, "rising", ())
                  if change.ci_low >= self.categorical[dim].min_share_change}  # fmt: skip
        new = [c for c in rising if c not in named and c in strong]
        if not new:
            return
        named.extend(new)
        entry = {"dimension": dim, "comparison": name, "state": "drift",
                 "after_events": self.events_seen, "timestamp": report.timestamp,
                 "widened": new, **moved}  # fmt: skip
        self.alarms = [*self.alarms, entry][-MAX_ALARMS:]

    def states(self) -> dict[str, str]:
        """Overall state per dimension: ``drift`` if any comparison drifts, else ``ok`` if
        any comparison could be tested, else ``insufficient_data``."""
        detectors = self._detectors()
        return {dim: _overall(dim in self.suppressed, list(self._states_of(dim, det).values()))
                for dim, det in detectors.items()}  # fmt: skip

    def report(self, detectable: bool = False) -> dict[str, Any]:
        """JSON-able drift report: per dimension its state, each comparison's latest test,
        the live and gold shares and the coverage gaps (categorical dimensions:
        ``coverage_gaps``, :func:`~service.drift.stats_tests.coverage_gaps` without the
        suppressed categories, or of a suppressed dimension, none; those that would be gaps
        are in ``coverage_gaps_left_out``, ``{category: why}``, only when there are some; a
        dimension of :meth:`withhold_gaps` has none either and says what its categories are
        in ``categories_are``).
        With ``detectable`` (the reports a user reads; not the per-batch metrics, it runs a
        few dozen tests), each comparison of the four shared dimensions says the smallest
        change that can alarm at its sizes (``detectable``, :func:`detectable_change`) when
        it has seen events. Each rate dimension says what its windows count in ``counts``
        (:data:`UNITS`: ``out_of_scope``'s are the verdicts the off-corpus cutoff's range does
        not move, not every verdict the out-of-scope share counts)."""
        out: dict[str, Any] = {}
        for dim, det in self.categorical.items():
            live = dict(self.live_counts[dim])
            gold = self.gold_counts.get(dim, {})
            # a suppressed category's share is no fact (e.g. an uncalibrated 'novel'): it is
            # left out of the coverage gaps, with the reason
            muted = self.suppressed_categories.get(dim, {})
            gaps = coverage_gaps(live, gold) if gold else []
            if dim in self.suppressed:  # (e.g. a topic model near chance): no share is a fact
                muted = dict.fromkeys((g.category for g in gaps), self.suppressed[dim])
            elif dim in self.gaps_withheld:  # categories that are not what they are named
                muted = {**dict.fromkeys((g.category for g in gaps), self.gaps_withheld[dim]),
                         **muted}  # fmt: skip
            out[dim] = {
                "state": det.state,
                "comparisons": {name: r.to_dict() for name, r in det.reports.items()},
                "live_counts": live,
                "gold_counts": gold,
                "coverage_gaps": [g._asdict() for g in gaps if g.category not in muted],
            }
            left_out = {g.category: muted[g.category] for g in gaps if g.category in muted}
            if left_out:
                out[dim]["coverage_gaps_left_out"] = left_out
            if dim in self.gaps_withheld:
                out[dim]["categories_are"] = self.gaps_withheld[dim]
        for dim, rate in self.rates.items():
            out[dim] = {
                "state": rate.state,
                "comparisons": {name: r.to_dict() for name, r in rate.reports.items()},
                # what the windows count (UNITS): out_of_scope's only the stable verdicts,
                # which the all-verdict share beside them is not (a user comparing them)
                "counts": UNITS[dim],
            }
        for dim, restarted in self.restarts.items():  # (labellers: set_labeller)
            if dim in out:
                out[dim]["windows_restarted"] = dict(restarted)
        if self.terms is not None:  # the test's budget said with it (its quality)
            out[TERMS] = {
                "state": self.terms.state,
                "comparisons": {name: r.to_dict() for name, r in self.terms.reports.items()},
                "alpha_per_day": self.terms.budget_per_day,
                "min_term_questions": self.terms.min_term_questions,
            }
        silenced: dict[str, str] = {}
        for dim, detector in self._detectors().items():
            body = out[dim]
            states = self._states_of(dim, detector)
            for name, test in body["comparisons"].items():
                if test["state"] == "insufficient_data":
                    reason = insufficient_reason(dim, name, detector, test)
                    n_current = int(test.get("n_current") or 0)
                    test["insufficient"] = (
                        self.starved_windows(reason, n_current, detector.min_count) or reason
                    )
                if detectable and dim in SIZED:
                    found = self._detectable(dim, name, detector, test)  # type: ignore[arg-type]
                    if found is not None and dim in self.suppressed:  # (its own line says why)
                        found["text"] += "; but the dimension raises no alarm while suppressed"
                    if found is not None:
                        test["detectable"] = found
                state = self._state_of(dim, test["state"], detector.reports[name], name)
                if state != test["state"]:
                    test["tested_state"], test["state"] = test["state"], state
                report = detector.reports[name]
                held = self.held(dim, name, report)
                quiet = self._quieted_by(dim, report, name) if held is not None else None
                because = ("hysteresis" if report.held_by_hysteresis
                           else quiet[0] if quiet is not None else None)  # fmt: skip
                if test.get("tested_state") == "insufficient_data" and state == "drift":
                    last = detector.last_tested(name)
                    held, because = _untested_held(test, last, detector.hold_untested_s(name),
                                                   detector.clear_span(name))  # fmt: skip
                    if last is not None:
                        test["last_test"] = last.to_dict()
                if held is None and (quiet_held := self.quiet_held(dim, name, test, report)):
                    held, because = quiet_held, "quiet_hold"  # (no alarm open: trial 46 F3)
                if held is not None:  # open, though this test alone would open no alarm
                    # (held_by_hysteresis stays the detector's own: an open alarm held while
                    # only a suppressed category rises has a strong test, review s40)
                    test["held"], test["held_because"] = held, because
            state = _overall(dim in self.suppressed, list(states.values()))
            if state != body["state"]:
                body["tested_state"], body["state"] = body["state"], state
            if dim in self.suppressed:
                body["suppressed"] = silenced[dim] = self.suppressed[dim]
            for category, reason in self.suppressed_categories.get(dim, {}).items():
                body.setdefault("suppressed_categories", {})[category] = reason
                silenced[f"{dim} ({category} share)"] = reason
            if dim in self.confounded:
                by, reason = self.confounded[dim]
                body["confounded"] = {"by": by, "reason": reason}
                categories = self.confounded_categories.get(dim)
                # the confound keeps a new alarm from opening; one open before it stays open,
                # held (trial 45 L2: "topic ... raises no alarm" beside an open topic alarm)
                kept = [name for name, test in body["comparisons"].items()
                        if test["state"] == "drift" and self._confounded_now(dim, name)
                        ]  # fmt: skip
                one = len(kept) == 1
                said = reason + (
                    f"; its {' and '.join(f'{dim} vs {name}' for name in kept)} "
                    f"{'alarm' if one else 'alarms'}, opened before this confound applied, "
                    f"{'stays' if one else 'stay'} open (held: an open alarm ends only "
                    "when its tests clear)" if kept else "")  # fmt: skip
                if categories is None:
                    silenced[f"{dim} (while {by} drifts)"] = said
                else:  # only while those categories of it move
                    body["confounded"]["categories"] = sorted(categories)
                    named = ", ".join(sorted(categories))
                    silenced[f"{dim} (while {by} drifts in {named})"] = said
        out["suppressed_dimensions"] = silenced
        spans = {dim: det.windows.reference_window_s for dim, det in self._detectors().items()}
        out["alarms"] = [reference_reading(alarm, spans.get(alarm.get("dimension", "")))
                         for alarm in self.alarms]  # fmt: skip
        out["events_seen"] = self.events_seen
        window = self._kept_out_counter.window
        # events outside the allowed lateness / ahead of the wall clock / held too far ahead of
        # the other events stay out of the windows
        late, future, ahead, share = self.kept_out()
        recent, *_, recent_share = self.recent_kept_out()
        out["event_time"] = {"late": late, "future": future, "ahead": ahead,
                             "kept_out_share": round(share, 4),
                             "recent_events": recent,
                             "recent_kept_out_share": round(recent_share, 4),
                             "watermark": window.watermark}  # fmt: skip
        starved = self.starved()
        if starved:
            out["event_time"]["starved"] = starved
            for dim in DIMENSIONS:
                if dim in out and out[dim]["state"] == STARVED:
                    out[dim]["starved"] = starved
        return out

    def _detectable(
        self, dim: str, name: str, detector: CategoricalDriftDetector | RateDriftDetector,
        test: Mapping[str, Any],
    ) -> dict[str, Any] | None:  # fmt: skip
        """:func:`detectable_change`, remembered for the latest :data:`DETECTABLE_KEPT`
        inputs (a report repeats them while the windows do not move: ``GET /v1/drift``, the
        status page)."""
        # (what the tests compare: a topic reference standardised to the window's language
        # mix is of its effective size, smaller than the gold set, review s43)
        current, compared, adjusted = detector.compared(name)
        n_current = int(test.get("n_current") or 0)
        # (the current window's counts matter only while there is nothing to compare with:
        # keyed on them otherwise, a live service's every new event missed the memo)
        key = (dim, name, n_current, detector.busiest.get(name, 0), detector.busiest_window(name),
               detector.mean_window(name), detector.n_tests,
               tuple(sorted(current.items())) if compared is None or not sum(compared.values())
               else None,
               None if compared is None else tuple(sorted(compared.items())),
               detector.alpha_per_test(name), adjusted)  # fmt: skip
        if key not in self._detectable_memo:
            self._detectable_memo[key] = detectable_change(dim, name, detector, n_current,
                                                           current, compared,
                                                           adjusted)  # fmt: skip
            if len(self._detectable_memo) > DETECTABLE_KEPT:
                del self._detectable_memo[next(iter(self._detectable_memo))]
        found = self._detectable_memo[key]
        return None if found is None else dict(found)

    def state_snapshot(self) -> Any:
        """Detectors, live counts and alarm history, JSON-able."""
        return {
            "events_seen": self.events_seen,
            "alarms": self.alarms,
            "last_state": self._last_state,
            "named": self._named,
            "quiet_why": self._quiet_why,
            "detectors": {
                (KNOWN_MISS_STATE if dim == KNOWN_MISS else dim): det.snapshot()
                for dim, det in self._detectors().items()
            },  # fmt: skip
            "live_counts": {dim: dict(c) for dim, c in self.live_counts.items()},
            "recent_kept_out": [list(update) for update in self._recent],
            "topic_strata": list(self.topic_strata),
            "labellers": {
                dim: {"key": labeller.key, "name": labeller.name}
                for dim, labeller in self.labellers.items()
            },  # fmt: skip
            "restarts": {dim: dict(restarted) for dim, restarted in self.restarts.items()},
            # the known questions waiting for the language window's decision (it keeps the
            # events it holds, so a release after a restart reaches the known windows too)
            "known_waiting": {
                dim: [list(entry) for entry in entries]
                for dim, entries in self._known_waiting.items()
                if entries
            },
            **{key: rule for key, rule, _ in RESTORE_RULES.values()},
        }

    def restore(self, state: Any) -> None:
        """Restore :meth:`state_snapshot` output (``None``: keep the fresh state).

        A snapshot kept before a question in a language without gold rows was left out of the
        topic windows (no ``topic_rule``) restores no ``topic`` detector: its frozen baseline
        counted those questions under a topic (mostly ``novel``), and a window of the others
        compared with it alarmed on unchanged traffic (a review: ``falling novel`` 28 % → 2 %
        at the first test after the upgrade). The topic dimension warms up afresh, as at a
        first start; its live counts and the alarm history are kept. Likewise a snapshot kept
        before the ``out_of_scope`` dimension tested only the verdicts the off-corpus cutoff's
        range does not move (no ``scope_rule``): its windows counted every verdict, and a
        window of the stable ones compared with them alarmed on unchanged traffic (review
        s38-rev-oos: 40 % vs 29 %, an alarm at the first test after the upgrade). Such a
        dimension is restarted (:meth:`restart`, its ``windows_restarted`` saying why): an
        alarm of it open at the snapshot ends there, ``restarted``, rather than ending
        ``untested`` at the first test of the fresh windows (review of s51-lull B1).

        The ``known_miss`` detector is saved under :data:`KNOWN_MISS_STATE` (its windows keep
        the language); a snapshot of a version before it (``known_miss``: plain flags) is
        restored, its flags in no language: the per-language tests run on the windows as
        they fill with languages (the frozen baseline's: after a rebaseline)."""
        self._unlabelled_restore = bool(state) and "labellers" not in state
        if not state:
            return
        detectors = dict(state.get("detectors", {}))
        if KNOWN_MISS_STATE in detectors:  # (else: a snapshot before, plain flags: kept)
            detectors[KNOWN_MISS] = detectors[KNOWN_MISS_STATE]
        changed = self._labellers_changed(state)
        for dim, det in self._detectors().items():
            if dim in changed:
                log.info("drift: the %s windows of a state kept under another labeller are "
                         "not restored: the dimension warms up afresh", dim)  # fmt: skip
                continue
            if dim in RESTORE_RULES:
                key, rule, differed = RESTORE_RULES[dim]
                if state.get(key) != rule:
                    if detectors.get(dim) is not None:
                        log.info("drift: the %s windows of a state kept %s are not restored: "
                                 "the dimension warms up afresh", dim, differed)  # fmt: skip
                    kept_states = (state.get("last_state") or {}).items()
                    opened = any(k.startswith(f"{dim}/") and v == "drift" for k, v in kept_states)
                    if detectors.get(dim) is not None or opened:
                        # (as a new labeller's: an alarm of it still open ends, ``restarted``,
                        # not ``untested`` when its next test finds the fresh windows short)
                        changed[dim] = (f"the windows kept were counted by an earlier rule "
                                        f"({differed}): counts made under the two are not "
                                        "comparable")  # fmt: skip
                    continue
            det.restore(detectors.get(dim))
        self.events_seen = int(state.get("events_seen", 0))
        # (a snapshot from before: none waiting; its known windows held their own events)
        self._known_waiting = {
            str(dim): [(float(t), None if stream is None else str(stream), value)
                       for t, stream, value in entries]
            for dim, entries in state.get("known_waiting", {}).items() if dim in self.rates
        }  # fmt: skip
        saved = [str(lang) for lang in state.get("topic_strata", ())]  # (older: none)
        merged = [*saved, *(lang for lang in self.topic_strata if lang not in saved)]
        self.topic_strata = list(dict.fromkeys(merged))[:TOPIC_STRATA]
        self._stratum_of = set(self.topic_strata)
        # (rows from before session 51: an end for lack of data kept null figures)
        self.alarms = [upgraded_alarm(row) for row in state.get("alarms", [])][-MAX_ALARMS:]
        self._last_state = dict(state.get("last_state", {}))
        named = state.get("named")
        if named is None:  # a snapshot from before: what the open alarms' entries named
            named = _named_by(self.alarms, self._last_state)
        self._named = {str(k): [str(c) for c in v] for k, v in named.items()}
        # (a snapshot from before: no why kept; the held quiet row then says it without one)
        self._quiet_why = {str(k): str(v) for k, v in state.get("quiet_why", {}).items()}
        self.restarts = {str(dim): dict(kept)
                         for dim, kept in (state.get("restarts") or {}).items()}  # fmt: skip
        for dim, why in changed.items():  # (after the alarms: an open one of it ends)
            self.restart(dim, why)
        for dim, counts in state.get("live_counts", {}).items():
            if dim in self.live_counts:
                self.live_counts[dim] = Counter({str(k): int(v) for k, v in counts.items()})
        self._recent, self._recent_sums = deque(), [0, 0, 0, 0]
        recent = state.get("recent_kept_out")
        if recent is None:  # a snapshot from before: all its events as one (the oldest) update
            window = self._kept_out_counter.window
            late, future, ahead = window.late, window.future, window.ahead
            recent = [[late + future + ahead + window.accepted, late, future, ahead]]
        for update in recent:
            self._remember(tuple(int(value) for value in update))

    def restored(self) -> None:
        """Every stage restored (:meth:`~service.pipeline.Pipeline.restore`): after a snapshot
        kept without ``labellers`` (a version before session 48), restart each dimension
        whose labeller the stored counts were made under (:attr:`recorded_labellers`, by
        name) differs from the one this stage is told (:attr:`labellers`): such a snapshot
        is otherwise restored whole, and a state kept under the original gold set upgraded
        on a grown one alarmed on unchanged traffic (review of trial 48 H1: 13.3 % -> 4.5 %).
        Nothing recorded, or the same name: kept. Runs once per such restore."""
        if not self._unlabelled_restore:
            return
        self._unlabelled_restore = False
        for dim, recorded in self.recorded_labellers.items():
            labeller, was = self.labellers.get(dim), recorded()
            if labeller is None or not was or was == labeller.name:
                continue
            self.restart(dim, (f"{LABELLER_NAMES[dim]} differs from the one the stored counts "
                               f"were made under ({was} → {labeller.name or 'unnamed'}): "
                               "counts made under the two are not comparable"))  # fmt: skip

    def _labellers_changed(self, state: Mapping[str, Any]) -> dict[str, str]:
        """``{dimension: why}`` of the dimensions whose labeller the snapshot ``state`` was
        kept under differs from the one this stage is told (:attr:`labellers`): their windows
        are not restored, they start afresh (:meth:`restart`), e.g. ``"the out-of-scope
        detector changed while the service was stopped (embedding, … → embedding, …): counts
        made under the two are not comparable"``. A snapshot kept without a labeller of a
        dimension (before they were saved) restores it as before unless its labeller says
        :attr:`Labeller.older_differs`; a dimension this stage is not told the labeller of
        restores as before."""
        saved = state.get("labellers") or {}
        changed: dict[str, str] = {}
        for dim, labeller in self.labellers.items():
            kept = saved.get(dim)
            if not isinstance(kept, Mapping) and labeller.older_differs:
                changed[dim] = (f"{LABELLER_NAMES[dim]} changed with the upgrade (now "
                                f"{labeller.name or 'unnamed'}; the windows kept do not say "
                                "theirs): counts made under the two are not "
                                "comparable")  # fmt: skip
                continue
            if not isinstance(kept, Mapping) or kept.get("key") in (None, labeller.key):
                continue
            was, now = str(kept.get("name") or ""), labeller.name
            names = f" ({was or 'unnamed'} → {now or 'unnamed'})" if was or now else ""
            changed[dim] = (f"{LABELLER_NAMES[dim]} changed while the service was stopped"
                            f"{names}: counts made under the two are not comparable")  # fmt: skip
        return changed


def _named_by(alarms: list[dict[str, Any]], last_state: Mapping[str, str]
              ) -> dict[str, list[str]]:  # fmt: skip
    """``{"dimension/comparison": categories}`` each open categorical alarm (``last_state``
    ``drift``) named in ``alarms`` (the rising of the entry that opened it and of its
    widenings), for a state kept before :attr:`DriftStage._named` was: without it, a
    category that rose before the restart was never named (that version named none), and
    the first test after it took it as named. An open alarm whose opening entry is no
    longer among the last :data:`MAX_ALARMS` is left out: it takes the categories rising
    at its next test (:meth:`DriftStage._record_widening`)."""
    named: dict[str, list[str]] = {}
    for key, state in last_state.items():
        dim, _, name = key.partition("/")
        if state != "drift" or dim not in CATEGORICAL:
            continue
        found: list[str] = []
        for alarm in reversed(alarms):
            if (alarm.get("dimension"), alarm.get("comparison")) != (dim, name):
                continue
            if alarm.get("state") != "drift":
                break  # (an entry of an earlier alarm's end: its opener is not here)
            found = [*(str(c) for c in alarm.get("rising") or ()), *found]
            if not alarm.get("widened"):  # the entry that opened it
                named[key] = list(dict.fromkeys(found))
                break
    return named


#: Why an open alarm is held although its latest test alone would open none (a report's
#: ``held_because``, with ``held`` saying it in words): ``hysteresis`` — the test's effect is
#: below the alarm threshold (or its p-value not below alpha) but not below half of it
#: (a row held so with nothing else to say has ``held_by_hysteresis`` and no ``held``);
#: ``suppressed_categories`` — the test is strong, but every category rising is suppressed
#: (an uncalibrated ``novel``), which alone opens no alarm; ``confounded`` — the test is
#: strong, but the dimension is confounded by one that drifts too; ``not_tested`` — the
#: window had too few events, so no test ran (``last_test``: the latest test that did);
#: ``quiet_hold`` — no alarm is open: a drift that opened none (confounded, or only a
#: suppressed category rose) is held by hysteresis, the row reads ``uncalibrated`` and its
#: test does not meet the alarm rule (trial 46 F3; :meth:`DriftStage.quiet_held`).
HELD_BECAUSE = ("hysteresis", "suppressed_categories", "confounded", "not_tested", "quiet_hold")


def _until_clear(span_s: float) -> str:
    """How an open alarm ends by the clear rule, in words (``span_s``: the detector's
    ``clear_span``): ``"the alarm stays open until every test shows the effect below half
    the threshold for 1 h"``."""
    return (f"the alarm stays open until every test shows the effect below half the "
            f"threshold for {_duration(span_s)}")  # fmt: skip


def clearing_text(since: float, span_s: float) -> str:
    """An open alarm whose tests read the effect below half the threshold since ``since``
    (``clearing_since``), not yet for ``span_s`` seconds (the clear span), in words.

    >>> clearing_text(1767264000.0, 14400.0)
    'effect below half the threshold since 2026-01-01 10:40 UTC; the alarm ends once every \
test stays so for 4 h (2026-01-01 14:40 UTC at the earliest)'
    """
    return (f"effect below half the threshold since {_utc(since)}; the alarm ends once "
            f"every test stays so for {_duration(span_s)} ({_utc(since + span_s)} at the "
            "earliest)")  # fmt: skip


def restart_text(dim: str, restarted: Mapping[str, Any]) -> str:
    """A dimension's windows started afresh for a new labeller (the report's
    ``windows_restarted``: :meth:`DriftStage.restart`), in words.

    >>> restart_text("out_of_scope", {"after_events": 3000, "timestamp": 1764460620.0,
    ...                               "why": "the out-of-scope detector changed"})
    ... # doctest: +NORMALIZE_WHITESPACE
    'out_of_scope windows started afresh at 2025-11-29 23:57 UTC (after 3000 events): the
    out-of-scope detector changed; its baseline warms up again, and no count from before is
    compared with one from after'
    """
    stamp = restarted.get("timestamp")
    at = f" at {_utc(float(stamp))}" if stamp is not None else ""
    return (f"{dim} windows started afresh{at} (after {restarted.get('after_events', 0)} "
            f"events): {restarted.get('why', '')}; its baseline warms up again, and no count "
            "from before is compared with one from after")  # fmt: skip


def counted_before_text(restarted: Mapping[str, Any] | None) -> str:
    """When the lifetime counts of ``novel`` were made while the novelty detector labels
    nothing now (uncalibrated: :func:`~service.runtime.analytics.novelty_labels`): before the
    topic windows last started afresh (``windows_restarted``, :meth:`DriftStage.restart`; the
    flip into nearest topics restarts them, so every ``novel`` count precedes its latest
    restart), or, without a restart on record, before the detector turned uncalibrated. The
    share beside it is history, not this traffic's (session 51: "novel 6 %" listed under a
    line saying no question is labelled novel).

    >>> counted_before_text({"after_events": 700, "timestamp": 1794839760.0})
    'counted before 2026-11-16 14:36 UTC, in the first 700 events; none since'
    >>> counted_before_text(None)
    'counted before the novelty detector turned uncalibrated; none since'
    """
    stamp = (restarted or {}).get("timestamp")
    if restarted is None or stamp is None:
        return "counted before the novelty detector turned uncalibrated; none since"
    return (f"counted before {_utc(float(stamp))}, in the first "
            f"{restarted.get('after_events', 0)} events; none since")  # fmt: skip


def _untested_held(test: Mapping[str, Any], last: Any, bound_s: float,
                   span_s: float = 3600.0) -> tuple[str, str]:  # fmt: skip
    """``(held, "not_tested")`` for a comparison whose open alarm a test too short of events
    holds (``test``: its report's dict, with ``insufficient``, the reason; ``last``: its
    latest report with enough events, ``None`` when not known; ``bound_s``: how long, seconds
    since that test, tests too short of events hold it), e.g. ``"not tested at 2026-01-01
    16:15 UTC: <why>. Its latest test with enough events, at 2026-01-01 10:40 UTC, read drift
    (JSD 0.249, p 1.37e-202); the alarm stays open until every test shows the effect below
    half the threshold for 1 h, or 24 h pass since that test (it then ends, not tested)"``;
    ``span_s``: the detector's ``clear_span``. When the tests read the effect below half the
    threshold already (``clearing_since`` on ``test``), it says since when and when the alarm
    may end (:func:`clearing_text`) instead. The figures are the latest test's, never the
    untested one's (review s40: "JSD nan, p 1.000")."""
    why = test.get("insufficient") or "too few events"
    bound = _duration(bound_s)
    now = f"not tested at {_utc(float(test['timestamp']))}: {why}"
    since = float(test.get("clearing_since") or 0.0)
    until = clearing_text(since, span_s) if since else _until_clear(span_s)
    if last is None:  # (a snapshot written before the latest test was kept)
        return (f"{now}; {until}, or {bound} pass since its latest test with enough events "
                "(it then ends, not tested)", "not_tested")  # fmt: skip
    return (f"{now}. Its latest test with enough events, at {_utc(last.timestamp)}, read "
            f"{last.state} ({figures_text(last.to_dict())}); {until}, or {bound} pass since "
            "that test (it then ends, not tested)", "not_tested")  # fmt: skip


def figures_text(test: Mapping[str, Any]) -> str:
    """What a test measured, in words: ``"JSD 0.249, p 1.37e-202"`` (categorical),
    ``"rate 5.0% → 20.0%, p 0.000123"`` (a rate), ``"3 terms tested, p 0.0400"`` (terms);
    p as the status page's table writes it (3 decimals, or 3 significant digits below 0.001).

    >>> figures_text({"js_divergence": 0.25, "p_value": 1e-9})
    'JSD 0.250, p 1.00e-09'
    >>> figures_text({"rate_reference": 0.05, "rate_current": 0.2, "p_value": 0.5})
    'rate 5.0% → 20.0%, p 0.500'
    """
    p = float(test["p_value"])
    said = f"{p:.2e}" if p != 0 and abs(p) < 1e-3 else f"{p:.3f}"
    if "js_divergence" in test:
        return f"JSD {float(test['js_divergence']):.3f}, p {said}"
    if "terms_tested" in test:
        return f"{test['terms_tested']} terms tested, p {said}"
    return (f"rate {float(test['rate_reference']):.1%} → {float(test['rate_current']):.1%}, "
            f"p {said}")  # fmt: skip


def _utc(timestamp: float) -> str:
    """Unix seconds as ``"2026-01-01 10:40 UTC"``."""
    return datetime.fromtimestamp(timestamp, UTC).strftime("%Y-%m-%d %H:%M UTC")


def adjusted_note(test: Mapping[str, Any]) -> str:
    """What a categorical test's or alarm's reference was standardised to, as the reports say
    it after what moved (``""`` when compared as it is; :mod:`service.drift.strata`):

    >>> adjusted_note({"adjusted_for": "language"})
    ' (adjusted for the language mix)'
    >>> adjusted_note({})
    ''
    """
    by = test.get("adjusted_for")
    return f" (adjusted for the {by} mix)" if by else ""


def silenced_verb(key: str) -> str:
    """How a report says what a ``suppressed_dimensions`` entry keeps quiet: a whole
    dimension (``"out_of_scope"``) ``"raises no alarm"`` (its open alarms end with it); a
    category or confound of one (``"topic (novel share)"``, ``"topic (while language drifts
    in hi)"``) ``"opens no alarm"``: it keeps a move into drift from opening one, and an
    alarm open before stays open, held (:meth:`DriftStage.held`; trial 45 L2 read "raises no
    alarm" beside an open topic alarm).

    >>> silenced_verb("out_of_scope"), silenced_verb("topic (while language drifts)")
    ('raises no alarm', 'opens no alarm')
    """
    return "raises no alarm" if key in DIMENSIONS else "opens no alarm"


#: The kinds of row :attr:`DriftStage.alarms` holds (:func:`alarm_kind`).
ALARM_KINDS = ("widened", "quiet", "suppressed", "restarted", "opened", "untested", "cleared")
#: What every row of the history has, whatever its kind.
_ALARM_IDENTITY = ("dimension", "comparison", "state", "after_events", "timestamp")


def alarm_kind(alarm: Mapping[str, Any]) -> str:
    """Which of :data:`ALARM_KINDS` an entry of :attr:`DriftStage.alarms` is: an open
    alarm's ``widened`` (it names one more category), a drift a confound kept ``quiet`` (no
    alarm), an alarm ended because its whole dimension was ``suppressed``, or because its
    windows ``restarted`` under a new labeller, an alarm ``opened`` (state ``drift``), one
    ended ``untested`` (state ``insufficient_data``: too few events came to test it for
    longer than its detector holds an open alarm untested; the drift was not seen to end,
    trial 51 L5) or ``cleared`` (its tests read the effect gone: ``ok`` or ``starved``).
    Only ``opened``, ``widened``, ``quiet`` and ``suppressed`` rows carry what moved.

    >>> alarm_kind({"state": "insufficient_data"}), alarm_kind({"state": "ok"})
    ('untested', 'cleared')
    >>> alarm_kind({"state": "insufficient_data", "restarted": "a new labeller"})
    'restarted'
    """
    if alarm.get("widened"):
        return "widened"
    if alarm.get("tested_state") == "drift":
        return "quiet"
    if alarm.get("suppressed"):
        return "suppressed"
    if alarm.get("restarted"):
        return "restarted"
    if alarm.get("state") == "drift":
        return "opened"
    if alarm.get("state") == "insufficient_data":
        return "untested"
    return "cleared"


def upgraded_alarm(alarm: Mapping[str, Any]) -> dict[str, Any]:
    """An entry of a kept :attr:`DriftStage.alarms` as this version writes it: an end for
    lack of data (:func:`alarm_kind` ``untested``) written before session 51 kept the empty
    test's figures (``rate_current``/``rate_compared``/``js_divergence`` ``null``, p 1,
    nothing rising) as if they had moved (trial 51 H1: the status page formatted them and
    answered 500); it keeps only what every row has, with ``untested`` ``{}`` (its counts
    were not kept). Other entries are returned as they are (a new dict).

    >>> upgraded_alarm({"dimension": "refusal", "comparison": "baseline", "state":
    ...     "insufficient_data", "after_events": 9, "timestamp": 0.0, "rate_current": None,
    ...     "rate_compared": None, "p_value": 1.0})["untested"]
    {}
    """
    if alarm_kind(alarm) != "untested" or "untested" in alarm:
        return dict(alarm)
    kept = {key: alarm[key] for key in _ALARM_IDENTITY if key in alarm}
    return {**kept, "untested": {}}


def untested_text(alarm: Mapping[str, Any]) -> str:
    """Why an alarm ended for lack of data (:func:`alarm_kind` ``untested``), in words: not
    that the drift ended, but that too few events came to test it, e.g. ``"ended for lack of
    data, not cleared (the drift was not seen to end): the current 6 h window held 5 answers,
    fewer than the 100 a test needs, and no test had enough for 24 h 19 min (the latest at
    2026-12-05 23:30 UTC; an open alarm is held untested for 24 h)"``: the gap is the row's
    ``timestamp`` minus ``last_test``, in whole minutes (:func:`_gap`); without ``last_test``
    it says the hold only. One event reads singular ("held 1 answer"). An entry kept from
    before its counts were (``untested`` ``{}``) says ``"too few events came to test it"``.

    >>> untested_text({"timestamp": 87540.0, "untested": {"n_current": 5, "min_count": 100,
    ...     "unit": "answers", "window_s": 21600.0, "hold_untested_s": 86400.0,
    ...     "last_test": 0.0}})[67:]  # doctest: +NORMALIZE_WHITESPACE
    ': the current 6 h window held 5 answers, fewer than the 100 a test needs, and no test \
had enough for 24 h 19 min (the latest at 1970-01-01 00:00 UTC; an open alarm is held \
untested for 24 h)'
    >>> untested_text({"untested": {"n_current": 1, "min_count": 30, "window_s": 3600.0,
    ...     "unit": "scored known questions", "hold_untested_s": 86400.0}})[67:]
    ': the current 1 h window held 1 scored known question, fewer than the 30 a test needs, \
and no test had enough for the 24 h an open alarm is held untested'
    >>> untested_text({})[67:]
    ': too few events came to test it'
    """
    head = "ended for lack of data, not cleared (the drift was not seen to end)"
    kept = alarm.get("untested") or {}
    if "n_current" not in kept:
        return f"{head}: too few events came to test it"
    count = int(kept["n_current"])
    unit = str(kept["unit"])
    if count == 1:  # "questions given a topic" -> "question given a topic"
        unit = re.sub(r"\b(question|answer)s\b", r"\1", unit, count=1)
    hold = _duration(float(kept["hold_untested_s"]))
    last = kept.get("last_test")
    stamp = alarm.get("timestamp")
    if last is None or stamp is None:
        since = f"the {hold} an open alarm is held untested"
    else:
        since = (f"{_gap(float(stamp) - float(last))} (the latest at {_utc(float(last))}; an "
                 f"open alarm is held untested for {hold})")  # fmt: skip
    return (f"{head}: the current {_duration(float(kept['window_s']))} window held "
            f"{count} {unit}, fewer than the {kept['min_count']} a test needs, and no test "
            f"had enough for {since}")  # fmt: skip


def _gap(seconds: float) -> str:
    """A gap between two event times in whole minutes, rounded down: ``87540`` →
    ``"24 h 19 min"``, ``86400`` → ``"24 h"``, ``600`` → ``"10 min"``, ``59`` → ``"0 min"``."""
    minutes = max(int(seconds // 60), 0)
    hours, rest = divmod(minutes, 60)
    if not hours:
        return f"{rest} min"
    return f"{hours} h" + (f" {rest} min" if rest else "")


def ended_untested(drift: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The alarms of a drift report (:meth:`DriftStage.report`: its dimensions and
    ``alarms``) that ended for lack of data and are still untested: each comparison whose
    latest history row is an end for lack of data (:func:`alarm_kind` ``untested``) and
    whose latest test still reads ``insufficient_data`` (a test with enough events since
    reads ``ok`` or ``drift`` again, and the end is then history only). In history order.

    >>> ended_untested({"refusal": {"comparisons": {"baseline": {
    ...     "state": "insufficient_data"}}}, "alarms": [
    ...     {"dimension": "refusal", "comparison": "baseline", "state": "drift"},
    ...     {"dimension": "refusal", "comparison": "baseline", "state": "insufficient_data"}]})
    [{'dimension': 'refusal', 'comparison': 'baseline', 'state': 'insufficient_data'}]
    """
    latest: dict[tuple[str, str], Mapping[str, Any]] = {}
    for alarm in drift.get("alarms") or ():
        if alarm_kind(alarm) not in ("quiet", "widened"):
            latest[str(alarm.get("dimension")), str(alarm.get("comparison"))] = alarm
    ended = []
    for (dim, name), alarm in latest.items():
        test = ((drift.get(dim) or {}).get("comparisons") or {}).get(name) or {}
        if alarm_kind(alarm) == "untested" and test.get("state") == "insufficient_data":
            ended.append(dict(alarm))
    return ended


def _pct_or_dash(value: Any) -> str:
    """``0.25`` → ``"25.0%"``; ``None`` (not measured) → ``"–"``."""
    return "–" if value is None else f"{value:.1%}"


def rate_moves(alarm: Mapping[str, Any], arrow: str = "->") -> str:
    """A rate alarm's move, the newest part of its window first when the window holds two
    rates (:func:`service.drift.detectors.newest_part`; trial 41: "0.0% -> 9.7%" over a 24 h
    window holding 5 h of a ~50 % miss rate), else the window's:

    >>> rate_moves({"rate_compared": 0.0, "rate_current": 0.097, "recent_s": 18000.0,
    ...             "window_s": 86400.0, "n_recent": 40, "rate_recent": 0.475})
    '0.0% -> 47.5% in the newest 5 h (40 events), 9.7% over the whole 24 h window'
    >>> rate_moves({"rate_compared": 0.283, "rate_current": 0.489}, "→")
    '28.3% → 48.9%'
    >>> rate_moves({"rate_compared": 0.033, "rate_current": 0.117, "languages": [
    ...     {"language": "de", "rate_reference": 0.077, "n_reference": 39,
    ...      "rate_current": 0.69, "n_current": 42}]})
    '3.3% -> 11.7%; rising in de: 7.7% of 39 -> 69.0% of 42'

    A rate not measured (``None``: a test of too few events, e.g. the figures an alarm
    ended by suppression kept) reads ``–``, never a ``TypeError`` (trial 51 H1):

    >>> rate_moves({"rate_compared": None, "rate_current": None})
    '– -> –'
    """
    moved = f"{_pct_or_dash(alarm.get('rate_compared'))} {arrow} "
    languages = language_moves(alarm.get("languages", ()), arrow)
    if not alarm.get("recent_s"):
        return moved + _pct_or_dash(alarm.get("rate_current")) + languages
    recent = _pct_or_dash(alarm.get("rate_recent"))
    current = _pct_or_dash(alarm.get("rate_current"))
    return (f"{moved}{recent} in the newest {_duration(alarm['recent_s'])} "
            f"({alarm['n_recent']} events), {current} over the whole "
            f"{_duration(alarm['window_s'])} window{languages}")  # fmt: skip


def language_moves(rows: Iterable[Mapping[str, Any]], arrow: str = "->") -> str:
    """The per-language rows of a ``known_miss`` test or alarm (each with ``language``,
    ``rate_reference``, ``n_reference``, ``rate_current``, ``n_current``) as the text after
    its pooled move: ``"; rising in de: 7.7% of 39 -> 69.0% of 42"`` (``""``: none).

    >>> language_moves([{"language": "de", "rate_reference": 0.5, "n_reference": 40,
    ...                  "rate_current": 0.1, "n_current": 30}], "→")
    '; falling in de: 50.0% of 40 → 10.0% of 30'
    """
    return "".join(
        f"; {'rising' if row['rate_current'] > row['rate_reference'] else 'falling'} in "
        f"{row['language']}: {row['rate_reference']:.1%} of {row['n_reference']} {arrow} "
        f"{row['rate_current']:.1%} of {row['n_current']}"
        for row in rows
    )


def _duration(seconds: float) -> str:
    """``3600`` → ``"1 h"``, ``600`` → ``"10 min"``, ``90`` → ``"90 s"``."""
    for size, unit in ((3600, "h"), (60, "min")):
        if seconds >= size and seconds % size == 0:
            return f"{int(seconds // size)} {unit}"
    return f"{seconds:g} s"


def _hours_to_hold(span_s: float, min_count: int, per_window: float) -> int:
    """Whole hours of a window that holds ``min_count`` events at ``per_window`` events per
    ``span_s`` seconds (``0`` when ``per_window`` is 0): ``⌈span_s · min_count /
    per_window / 3600⌉``, rounded to 9 places first so an exact multiple is not one more."""
    if per_window <= 0:
        return 0
    return math.ceil(round(span_s * min_count / per_window / 3600, 9))


def _about(seconds: float) -> str:
    """A duration as :func:`_duration` writes it, with hours or days beside an odd count of
    seconds: ``999999`` → ``"999999 s, about 11.6 days"``, ``3600`` → ``"1 h"``."""
    text = _duration(seconds)
    if not text.endswith(" s") or seconds < 3600:
        return text
    days = seconds / 86_400
    return f"{text}, about " + (f"{days:.1f} days" if days >= 2 else f"{seconds / 3600:.1f} h")


def sparse_tests(
    detector: CategoricalDriftDetector | RateDriftDetector | TermsDriftDetector, span_s: float
) -> str:
    """What to change when the detector's tests are sparser than the ``span_s``-second window
    they test (``analytics.drift.test_every_s`` longer than it), else ``""``. A test runs
    each time the events' time crosses a multiple of ``test_every_s`` (and at the first
    events), so with a longer period most windows are never tested; with one longer than
    the events' whole span only the first events' window is, and no test falls inside the
    data (trial 41: ``test_every_s`` 999999 over 46 h of events, the advice read "the
    busiest had 5: raise window_s to about 40 h" and named nowhere the setting at fault),
    e.g. ``"analytics.drift.test_every_s (999999 s, about 11.6 days) is longer than
    the 1 h window it tests: tested once in 46 h of events, at their start (no test fell
    inside them): lower analytics.drift.test_every_s to at most 1 h (default 5 min)"``."""
    every = detector.windows.test_every_s
    if every <= span_s:
        return ""
    first, last = detector.test_times()
    seen = detector.event_span_s()
    length = _duration(seen) if seen < 3600 or seen % 3600 == 0 else f"{seen / 3600:.1f} h"
    held = f" in {length} of events" if seen else ""
    if detector.n_tests <= 1 or first == last:
        how = f"tested once{held}, at their start (no test fell inside them)"
    else:
        how = f"tested {detector.n_tests} times{held}, so most windows were never tested"
    return (f"{SETTINGS}.test_every_s ({_about(every)}) is longer than the "
            f"{_duration(span_s)} window it tests: {how}: lower {SETTINGS}.test_every_s to "
            f"at most {_duration(span_s)} (default 5 min)")  # fmt: skip


def _setting_keys(dim: str) -> tuple[str, str, str]:
    """The settings (of ``analytics.drift``) that size ``dim``'s windows: its current
    window's, its frozen baseline's warm-up's and its ``min_count``'s (``known_refusal`` and
    ``known_miss`` have their own: ``known_window_s`` for both spans, ``known_min_count``).

    >>> _setting_keys("refusal"), _setting_keys("known_miss")
    (('window_s', 'warmup_s', 'min_count'), ('known_window_s', 'known_window_s', 'known_min_count'))
    """
    if dim in KNOWN:
        return "known_window_s", "known_window_s", "known_min_count"
    return "window_s", "warmup_s", "min_count"


def insufficient_reason(
    dim: str, comparison: str,
    detector: CategoricalDriftDetector | RateDriftDetector | TermsDriftDetector,
    test: Mapping[str, Any],
) -> str:  # fmt: skip
    """Why ``comparison`` (``reference`` or ``baseline``) of ``dim`` is ``insufficient_data``
    and what to change, from its latest report ``test`` (``n_reference``, ``n_current``)
    and the detector's tested windows, e.g. ``"no 1 h window reached 200 answers; the
    busiest had 70, 53.5 on average: raise analytics.drift.window_s to about 4 h (at the
    mean; or lower analytics.drift.min_count)"``: the window advised is the one that holds
    ``min_count`` at the mean window's count
    (:meth:`~service.drift.detectors.CategoricalDriftDetector.mean_window`; the busiest
    window's while there is none, e.g. before a whole window was tested), not at the
    busiest's, which on Poisson traffic of 53.5 an hour said 3 h where about 4 h are needed
    (session 37). The busiest is at least the report's own ``n_current`` (a snapshot written
    before ``busiest`` was kept restores 0). When a tested window did reach ``min_count``, the
    reason says traffic fell, with the longer window the current rate would need, e.g.
    ``"traffic fell: the current 1 h window holds 4 answers, fewer than 200, though an
    earlier one held 355; if it stays this low, raise analytics.drift.window_s to about 50 h
    (or lower analytics.drift.min_count)"`` — when the drop is beyond Poisson noise (more
    than two standard deviations, ``2 √busiest``, below the busiest); a smaller one says
    traffic hovers at the threshold. A frozen baseline whose warm-ups held too few events
    says so, with the warm-up that would hold ``min_count`` (``short_warmups``), unless the
    warm-up in progress holds ``min_count`` already (it freezes at its end).
    """
    unit, cfg = UNITS.get(dim, "events"), detector.windows
    window_key, warmup_key, count_key = _setting_keys(dim)
    reasons = []
    n_ref, n_cur = int(test.get("n_reference") or 0), int(test.get("n_current") or 0)
    if n_cur < detector.min_count:
        span, key = ((cfg.reference_window_s, "reference_window_s") if comparison == "reference"
                     else (cfg.window_s, window_key))  # fmt: skip
        # the busiest window over the events' times, tested or not (trial 41: the busiest
        # tested one, with tests every 999,999 s, was the first events' 5 of a busiest 65)
        busiest = max(detector.busiest_window(comparison), n_cur)
        fell = max(detector.busiest.get(comparison, 0), n_cur) >= detector.min_count
        between = not fell and busiest >= detector.min_count  # only an untested one did
        sparse = sparse_tests(detector, span)
        mean = detector.mean_window(comparison)
        # the rate the advice is sized at: the current window's when traffic fell, else the
        # mean window's (the busiest's while there is none: it was lucky, s37)
        rate = n_cur if fell else mean or busiest
        hours = _hours_to_hold(span, detector.min_count, rate)
        about = f" to about {hours} h" if 0 < hours * 3600 > span else ""
        at_mean = "at the mean; " if not fell and mean and about else ""
        advice = f"raise {SETTINGS}.{key}{about} ({at_mean}or lower {SETTINGS}.{count_key})"
        # "traffic fell" only for a drop beyond Poisson noise (two standard deviations of the
        # busier count): 201 then 197 is traffic hovering at min_count (trial 17)
        dropped = n_cur < busiest - 2 * math.sqrt(busiest)
        current = f"the current {_duration(span)} window holds {n_cur} {unit}"
        if fell and dropped:
            # topic: the questions given one fall when a language without gold rows rises
            # (a review: "traffic fell" while traffic held and half went to German)
            what = ("the questions given a topic fell (one in a language without gold rows is "
                    "given none)" if dim == "topic" else "traffic fell")  # fmt: skip
            reasons.append(f"{what}: {current}, fewer than {detector.min_count}, "
                           f"though an earlier one held {busiest}; if it stays this low, "
                           f"{advice}")  # fmt: skip
        elif fell:
            reasons.append(f"traffic hovers at the threshold: {current}, fewer than "
                           f"{detector.min_count} (an earlier one held {busiest}); "
                           f"{advice}")  # fmt: skip
        elif between and sparse:  # the windows were full enough: the tests missed them
            reasons.append(f"no {_duration(span)} window tested reached "
                           f"{detector.min_count} {unit}, though one held {busiest} between "
                           f"tests: {sparse}")  # fmt: skip
        elif between:
            reasons.append(f"traffic hovers at the threshold: no {_duration(span)} window "
                           f"tested reached {detector.min_count} {unit}, though one held "
                           f"{busiest} between tests; {advice}")  # fmt: skip
        else:
            seen = f"the busiest had {busiest}" + (f", {mean:.1f} on average" if mean else "")
            reasons.append(f"no {_duration(span)} window reached {detector.min_count} {unit}; "
                           f"{seen}: {advice}" + (f"; and {sparse}" if sparse else ""))  # fmt: skip
    mix = adjusted_note(test).replace(" (", " (effective, ", 1)
    if comparison == "reference" and n_ref < detector.min_reference_count:
        reasons.append(f"the gold set gives {n_ref} rows{mix} to compare with, fewer than the "
                       f"{detector.min_reference_count} needed: add gold questions")  # fmt: skip
    elif comparison == "baseline" and cfg.baseline == "frozen" and n_ref == 0:
        short, held = detector.short_warmups
        # (one holding min_count already freezes at its end, whatever those before held: a
        # quiet start then a gap ended one short, and 1,200 answers into the next it said
        # "never froze ... raise warmup_s to about 60 h", review s35)
        if short and detector.warmup_held < detector.min_count:
            # (trial 17: 25 questions an hour, 150 a 6 h warm-up, and it said "still
            # warming up: the first 6 h of traffic" for 6 days)
            hours = math.ceil(cfg.warmup_s * detector.min_count / held / 3600) if held else 0
            about = f" to about {hours} h" if hours * 3600 > cfg.warmup_s else ""
            times = "once" if short == 1 else f"{short} times"
            reasons.append(
                f"the baseline never froze: its {_duration(cfg.warmup_s)} warm-up "
                f"({SETTINGS}.{warmup_key}) held fewer than {detector.min_count} {unit} {times} "
                f"(the last {held}), and each short one starts again: raise "
                f"{SETTINGS}.{warmup_key}{about} (or lower {SETTINGS}.{count_key})"
            )
        else:
            reasons.append(f"the baseline is still warming up: it is the first "
                           f"{_duration(cfg.warmup_s)} of traffic ({SETTINGS}.{warmup_key}), ready "
                           f"once those hold {detector.min_count} {unit}")  # fmt: skip
    elif comparison == "baseline" and n_ref < detector.min_reference_count:
        reasons.append(f"the baseline of earlier traffic holds {n_ref} {unit}{mix}, fewer than "
                       f"the {detector.min_reference_count} needed")  # fmt: skip
    return "; ".join(reasons) or "too few events to test"


def _pct(share: float) -> str:
    """``0.1`` → ``"10.0%"``."""
    return f"{share:.1%}"


def detectable_change(
    dim: str, comparison: str, detector: CategoricalDriftDetector | RateDriftDetector,
    n_current: int, current: Counts, compared: Counts | None, adjusted_for: str = "",
) -> dict[str, Any] | None:  # fmt: skip
    """The smallest change of ``dim`` that ``comparison`` (``reference``: the gold set;
    ``baseline``) can alarm on at the user's own sizes, by the detector's own decision on
    expected counts (:mod:`service.drift.sizing`; the formula's source is there):

    * the current window's size: ``n_current`` (the latest test's) when it reaches
      ``min_count``, else the busiest window tested (``detector.busiest``, "typical"), else
      no change can alarm: ``{"cannot_alarm": True, "text": ...}`` with the window that
      would hold ``min_count`` at the mean window's count (the busiest's while there is
      none), as :func:`insufficient_reason` says it;
    * what it is compared with: ``compared`` (the gold set's counts, a ready baseline's)
      or, while a baseline is not ready, the current window's shares (``current``) over the
      baseline it will have (``warmup_s / window_s`` windows frozen, one ``previous``);
      a gold set below ``min_reference_count`` rows, or a warm-up that would hold fewer
      than ``min_count``, cannot alarm either; ``compared`` is what the test compares
      (a topic reference standardised to the window's language mix: its effective rows,
      said so in the text by ``adjusted_for``);
    * the change: of a categorical dimension's categories up to 50 % of what it is compared
      with (the gold set, the baseline or the current window, said in the text), the one
      whose smallest alarming rise is the largest
      (:func:`~service.drift.sizing.hardest_share_rise`), rising from its share there, the
      others keeping their proportions; a rate rising from the baseline's rate (the current
      window's while there is none). The text adds that a window at exactly the stated
      share alarms at about half its tests (expected counts; a real window's noise moves
      the p-value either way).

    Returns ``{"text", "category", "share_from", "share_to", "n_current", "n_reference",
    "p_value", "alpha", "bound", "share_of"}`` (shares in [0, 1]; ``category`` ``None`` for
    a rate), the ``cannot_alarm`` form, or ``None`` before any event reached the window.
    """
    unit, cfg = UNITS.get(dim, "events"), detector.windows
    window_key, warmup_key, count_key = _setting_keys(dim)
    label = "gold set" if comparison == "reference" else comparison
    head = f"{dim} vs {label}"
    span, key = ((cfg.reference_window_s, "reference_window_s") if comparison == "reference"
                 else (cfg.window_s, window_key))  # fmt: skip
    # (the busiest window over the events' times, tested or not: trial 41)
    busiest = max(detector.busiest_window(comparison), n_current)
    n = n_current if n_current >= detector.min_count else busiest
    if busiest == 0:
        return None

    def cannot(why: str) -> dict[str, Any]:
        return {"cannot_alarm": True, "text": f"{head}: cannot alarm: {why}"}

    sparse = sparse_tests(detector, span)
    if n < detector.min_count:
        mean = detector.mean_window(comparison)
        hours = _hours_to_hold(span, detector.min_count, mean or busiest)
        about = f" to about {hours} h" if hours * 3600 > span else ""
        held = f"the busiest had {busiest}" + (f", {mean:.1f} on average" if mean else "")
        at_mean = "at the mean; " if mean and about else ""
        return cannot(f"its {_duration(span)} windows hold fewer than {count_key} "
                      f"({detector.min_count}) {unit} ({held}); raise "
                      f"{SETTINGS}.{key}{about} ({at_mean}or lower "
                      f"{SETTINGS}.{count_key})"
                      + (f"; and {sparse}" if sparse else ""))  # fmt: skip
    if sparse and max(detector.busiest.get(comparison, 0), n_current) < detector.min_count:
        # (the windows hold enough, but no test fell where one did)
        return cannot(f"its {_duration(span)} windows hold up to {busiest} {unit}, but "
                      f"none was tested while it held {count_key} ({detector.min_count}): "
                      f"{sparse}")  # fmt: skip
    of = {"reference": "gold-set", "baseline": "baseline"}.get(comparison, comparison)
    reference = compared
    if reference is None or not sum(reference.values()):
        if comparison == "reference" or not sum(current.values()):
            return None
        ratio = cfg.warmup_s / cfg.window_s if cfg.baseline == "frozen" else 1.0
        m = round(ratio * n)
        if m < detector.min_count:  # (a frozen warm-up holding fewer starts again)
            hours = math.ceil(cfg.warmup_s * detector.min_count / m / 3600) if m else 0
            return cannot(f"a {_duration(cfg.warmup_s)} warm-up of the baseline would hold "
                          f"about {m} {unit}, fewer than {count_key} ({detector.min_count}); "
                          f"raise {SETTINGS}.{warmup_key} to about {hours} h")  # fmt: skip
        reference, of = expected_counts(current, m), "current"
    m = int(sum(reference.values()))
    mix = f" (effective, {adjusted_note({'adjusted_for': adjusted_for}).strip(' ()')})"
    mix = mix if adjusted_for else ""
    if m < detector.min_reference_count:
        whose = "the gold set" if comparison == "reference" else "the baseline"
        return cannot(f"{whose} gives {m} rows{mix} to compare with, fewer than the "
                      f"{detector.min_reference_count} needed"
                      + (": add gold questions" if comparison == "reference" else ""))  # fmt: skip
    window = f"~{n:,} {unit} a {_duration(span)} window"
    if comparison == "reference":
        sizes = f"{m:,} gold rows{mix} and {window}"
    elif of == "current":  # (the baseline it will have, at this window's traffic)
        sizes = f"{window} and a baseline of about {m:,} once ready"
    else:
        sizes = f"{window} and {m:,} in the baseline{mix}"
    found: Detectable | None
    if isinstance(detector, RateDriftDetector):
        rate = reference.get("1", 0) / m
        found = smallest_rate_rise(detector, comparison, rate, n, m)
        what = f"the {dim.replace('_', '-')} rate"
        whose = "the baseline's rate" if of == "baseline" else "the current window's rate"
        start = _pct(rate)
    else:
        category, found = hardest_share_rise(detector, comparison, reference, n)
        share = reference.get(category, 0) / m
        what = f"the share of {category}"
        rise = 0.0 if found is None else found.share_to - found.share_from
        # (the largest share up to 50 % is not always the hardest to see: against a small
        # gold set a smaller one's noise can need a larger rise, review s36)
        whose = (f"{100 * rise:.1f} points: of the categories up to 50 % of the "
                 f"{of.replace('-', ' ')}{' window' * (of == 'current')}, the one that needs "
                 "the largest rise" if category != NEW_CATEGORY
                 else "all those compared with are of one category")  # fmt: skip
        start = _pct(share)
    if found is None:
        return cannot(f"with {sizes}, no rise of {what} from {start} can "
                      "alarm, not even to 100 %")  # fmt: skip
    # (expected counts: a real window at exactly that share alarms at about half its tests)
    text = (f"{head}: with {sizes}, the smallest rise that can alarm is {what} "
            f"{start} -> {_pct(found.share_to)} ({whose}; a window at exactly that "
            "alarms at about half its tests)")  # fmt: skip
    return {"text": text, **found.to_dict(), "share_of": of}


def _overall(suppressed: bool, states: list[str]) -> str:
    """A dimension's state from its comparisons' (after suppression): ``uncalibrated`` when
    the whole dimension is suppressed, else ``drift`` if any drifts, ``uncalibrated`` if any is
    silenced, ``starved`` if any tested ok on starved windows, ``ok`` if any was tested, else
    ``insufficient_data``."""
    if suppressed:
        return UNCALIBRATED
    for state in ("drift", UNCALIBRATED, STARVED, "ok"):
        if state in states:
            return state
    return "insufficient_data"


#: What a gold-set (``reference``) comparison in drift means, in a line (the status page's
#: "What moved"; the alarms carry the long form, :func:`reference_reading`)
REFERENCE_GAP = "a standing gap to the gold set, not a dated change"


def reference_reading(alarm: Mapping[str, Any], span_s: float | None) -> dict[str, Any]:
    """``alarm`` (an entry of :attr:`DriftStage.alarms`), with what it means under ``reads``
    when it is a gold-set (``reference``) comparison's alarm opening or clearing: the
    comparison tests the traffic of the last ``span_s`` seconds (``reference_window_s``)
    against the gold set, so its alarm time is when a gap was first found — once enough
    traffic was seen for the test to show it, and the gap may have stood from the start —
    which need not be when the traffic changed (trial 41: on a stationary stream, Hindi 23 % of the
    traffic against 45 % of the gold set, "DRIFT language vs reference at 10:00" read like a
    change two hours before the real one, and "cleared" at 16:00 was that change moving
    the traffic toward the gold set's mix). The baseline comparison dates changes. Other
    entries (a baseline comparison's, a widening, a confounded or suppressed one, an end
    for too few events) are returned as they are. A new dict; the stored entry is left
    alone, so a state saved before session 41 reads the same.

    >>> reference_reading({"comparison": "reference", "state": "drift"}, 86400)["reads"][:40]
    'a standing gap between the traffic of th'
    """
    if (alarm.get("comparison") != "reference" or alarm.get("widened")
            or "tested_state" in alarm or alarm.get("suppressed")
            or alarm.get("state") not in ("drift", "ok")):  # fmt: skip
        return dict(alarm)
    span = f"the last {_duration(span_s)}" if span_s else "the latest window"
    if alarm["state"] == "drift":
        reads = (f"a standing gap between the traffic of {span} and the gold set, found "
                 "once enough traffic was seen for the test to show it (it may have stood "
                 "from the start): the gold set does not represent the traffic; this is "
                 "when the gap was found, which need not be when the traffic changed (the "
                 "baseline comparison dates changes)")  # fmt: skip
    else:
        reads = (f"the gap to the gold set closed: the traffic of {span} is now near "
                 "enough the gold set's mix; traffic changing toward the gold set closes it "
                 "too (the baseline comparison dates changes)")  # fmt: skip
    return {**alarm, "reads": reads}


def _alarm_rule(detector: Any, report: Any) -> dict[str, Any]:
    """The alarm rule a test that opened an alarm met, for its entry in the history (trial 46
    F3's leftover: an entry recorded p and JSD but not the alpha or the effect thresholds, so
    it could not be checked from the entry alone): ``alpha`` (the test's own, after the
    dimension's Bonferroni split), and ``min_jsd`` and ``min_share_change`` of a categorical
    detector (the effect: JSD or one share change's confidence bound at or above its
    threshold) or ``min_change`` of a rate detector (the rate change's bound), all in [0, 1];
    ``{}`` for a detector without them (rising terms record their ``alpha`` already).

    >>> from types import SimpleNamespace
    >>> det = RateDriftDetector(reference=(5, 100), min_count=50)
    >>> _alarm_rule(det, SimpleNamespace(alpha=0.001))
    {'alpha': 0.001, 'min_change': 0.05}
    """
    rule: dict[str, Any] = {}
    if isinstance(detector, CategoricalDriftDetector):
        rule = {"min_jsd": detector.min_jsd, "min_share_change": detector.min_share_change}
    elif isinstance(detector, RateDriftDetector):
        rule = {"min_change": detector.min_change}
    else:
        return rule
    return {"alpha": float(report.alpha), **rule}


def _what_moved(test: Mapping[str, Any]) -> dict[str, Any]:
    """The categories that rose / fell (categorical) or the two rates (binary)."""
    if "rate_current" in test:
        recent = {key: test[key] for key in ("recent_s", "window_s", "n_recent", "rate_recent")
                  if key in test}  # fmt: skip
        # the languages whose own test drifts (known_miss: LanguageRateDriftDetector)
        keys = ("language", "rate_current", "rate_reference", "n_current", "n_reference",
                "p_value")  # fmt: skip
        drifting = [row for row in test.get("languages", ()) if row.get("state") == "drift"]
        languages = [{key: row[key] for key in keys} for row in drifting]
        return {"rate_current": test["rate_current"], "rate_compared": test["rate_reference"],
                "p_value": test["p_value"], **recent,
                **({"languages": languages} if languages else {})}  # fmt: skip
    if "terms_tested" in test:  # rising terms: each with its shares and counts
        keys = ("term", "surface", "current_share", "reference_share", "current_count",
                "reference_count")  # fmt: skip
        return {"rising_terms": [{key: row[key] for key in keys} for row in test["rising"]],
                "terms_tested": test["terms_tested"], "p_value": test["p_value"],
                "alpha": test["alpha"]}  # fmt: skip
    moved = {
        "rising": [row["category"] for row in test.get("rising", ())],
        "falling": [row["category"] for row in test.get("falling", ())],
        "js_divergence": test.get("js_divergence"),
        "p_value": test.get("p_value"),
    }
    if test.get("adjusted_for"):  # the reference standardised to the window's mix of it
        moved["adjusted_for"] = test["adjusted_for"]
    return moved
