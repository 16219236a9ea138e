"""The reports of a live pipeline (:class:`~service.runtime.live.Live`), as ``goldwatch
replay`` prints them and ``GET /v1/analytics`` serves them: analytics (languages, topics,
refusals, scope, novelty, detector quality, PII, drift), shadow, live quality, harvest."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, cast

from prometheus_client import CollectorRegistry
from typing_extensions import TypedDict

from service.evaluation.detector_quality import (
    counts_uncalibrated_text,
    explained_by_versions,
    explained_by_versions_text,
    measured_on,
    scope_uncalibrated_text,
)
from service.harvest.config import HarvestConfig
from service.harvest.ranking import select
from service.harvest.store import GapSuggestions, SuggestionRecord
from service.harvest.suggestion import Suggestion
from service.language.detector import LanguageLabeler
from service.language.excluded import excluded_report
from service.language.gold import lacks_gold
from service.language.unlabelled import (
    UnlabelledLanguage,
    unlabelled_languages,
    unlabelled_text,
)
from service.pipeline.totals import AnnotationTotals, counted_by_version, unstable_counts
from service.quality.by_language import flag_agreement_rows, flag_agreement_text, rate_rows
from service.quality.stage import known_refusal_text
from service.refusals.detector import READER_NAMES, Reader, refusal_rate_method, text_reader
from service.refusals.families import (
    FAMILY_MIN_RISE,
    family_rows,
    family_text,
    harvest_family_text,
    since_text,
    under_refusal_family_text,
)
from service.refusals.recall import INHERITED, TextRecall, text_recall
from service.refusals.scope import SHARE_COUNTS, describe, unstable_text
from service.refusals.stage import RefusalStage
from service.runtime.analytics import (
    Analytics,
    counted_under_text,
    misjudged_of,
    misjudged_unanswerable_of,
    scope_families_of,
    scope_support,
)
from service.runtime.live import Live
from service.shadow.not_compared import NotCompared
from service.shadow.stage import ShadowStageReport
from service.telemetry import PII_TYPES
from service.topics.model import NOVEL
from service.topics.quality import (
    kappa_of,
    language_bias,
    language_split_text,
    topic_language_association,
)
from service.topics.stage import TopicStage

# TypedDicts from typing_extensions: pydantic (the API's response models) needs them on
# Python < 3.12. Key order is the order the reports are built in (the API keeps it).


class RefusalCounts(TypedDict):
    """Answers seen, how many were refusals, and their rate in [0, 1] (``None``: no
    answers yet); ``by_flag`` / ``by_patterns``: answers decided by the event's
    ``answer.refused`` / by their text (the phrase patterns, or a configured
    :class:`~service.refusals.detector.RefusalModel` alone or with them: ``method`` says
    which, :func:`~service.refusals.detector.text_reader`); ``refused_by_flag`` /
    ``refused_by_patterns``: of those, the refused ones (with ``refused`` minus their sum
    counted before this split was kept); ``method``: the sentence saying so
    (:func:`~service.refusals.detector.refusal_rate_method`); ``by_language``: the refusal
    rate per language label (:func:`~service.quality.by_language.rate_rows`: ``{"language",
    "n" (answers), "x" (refused), "rate", "low", "high" (Wilson 95 %), "few" (fewer than
    ``analytics.quality_min_class`` answers)}``, most answers first) and
    ``by_language_answers``: the answers they cover (fewer than ``answers`` when the totals
    were kept before session 37 counted them per language). Counts since the first start
    (persisted annotation totals). With a gold set, ``known_over_refusal``: the refusal rate
    of known answerable gold questions (each an over-refusal, no detector needed:
    :meth:`~service.quality.stage.LiveQualityStage.known_refusal`, ``{"n", "refused", "rate",
    "low", "high"}``, over the known questions the live-quality figures cover) with ``text``
    and ``brief`` (:func:`~service.quality.stage.known_refusal_text`, citing the drift
    stage's ``known_refusal`` comparison). ``against_flag``: the text reader (the phrase
    patterns, or the model as ``method`` names it) measured
    against the producer's own ``answer.refused`` on the answers that set it and have a text,
    per language (:func:`~service.quality.by_language.flag_agreement_rows`; ``[]`` when no
    answer sets it) and ``against_flag_text`` the sentence (``None`` without rows): where the
    patterns decide the other answers, this is how far to trust them in each language.
    ``text_recall`` (present when the text reader decided some answers and some language has
    a measured recall against the flag): :func:`~service.refusals.recall.text_recall` —
    whether the reader-judged refusals are a lower bound (recall's upper bound below 0.95),
    with an estimate of the true count labelled as one; ``refused`` and ``rate`` stay the
    refusals detected."""

    answers: int
    refused: int
    rate: float | None
    by_flag: int
    by_patterns: int
    refused_by_flag: int
    refused_by_patterns: int
    method: str
    by_language: list[dict[str, Any]]
    by_language_answers: int
    against_flag: list[dict[str, Any]]
    against_flag_text: str | None
    known_over_refusal: NotRequired[dict[str, Any]]
    text_recall: NotRequired[TextRecall]


class OutOfScopeReport(TypedDict):
    """Scope: events scored, those out of scope and their share in [0, 1] (``None``: none
    scored), over-refusals (refused while in scope), under-refusals (answered while out of
    scope), the detector's calibration (:func:`~service.refusals.scope.describe`), its
    measured quality (a :func:`detector_quality_report` entry), ``uncalibrated`` (why the
    counts are not facts, or ``None``: the detector now counting's reason, else
    ``counts_uncalibrated``'s, and both when both hold (other than for the same reason:
    :func:`~service.evaluation.detector_quality.scope_uncalibrated_text`) — a count is as
    trustworthy as the least trustworthy detector version that contributed to it), ``off``
    (why scope is off, or ``None``) and, with the
    ``off_corpus``: of the out-of-scope events, those farther from the corpus and from every
    gold question than any answerable gold question, and ``support``: that rule's
    :class:`~service.refusals.scope.SupportCheck` (cutoff and held-out rates; ``None``: no
    embedding detector), ``misjudged_answerable``: the answerable gold rows the detector
    judges out of scope on held-out data (``{"count", "of", "upper"}``,
    :func:`~service.evaluation.detector_quality.misjudged_answerable`; ``None``: unknown) and
    ``under_refusals_explained``: the under-refusals that error explains at most
    (``⌊upper · scored⌋`` summed over the versions that counted, each its own ``upper``:
    :func:`~service.evaluation.detector_quality.explained_by_versions`; ``None``: unknown),
    ``misjudged_unanswerable``: the unanswerable
    gold rows it judges in scope on held-out data (``{"count", "of", "upper"}``,
    :func:`~service.evaluation.detector_quality.misjudged_unanswerable`; ``None``: unknown)
    and ``over_refusals_explained``: the over-refusals that error explains at most
    (``⌊upper · scored refusals⌋``, summed likewise; ``None``: unknown), and, with the
    live-quality stage, ``gold_set_versions``: the gold-set versions the counts (cumulative
    since the first start) were judged under, oldest first — the detector is refitted on
    each, so more than one means they mix detectors
    (:meth:`~service.quality.stage.LiveQualityStage.gold_set_versions`); ``counted_under``:
    the detectors the counts were counted under since the first start, each with the scored
    total when it began (:class:`~service.pipeline.totals.AnnotationTotals`), and
    ``counted_under_notice``: the notice when there is more than one
    (:func:`~service.runtime.analytics.counted_under_text`; ``None``: one)."""

    scored: int
    out_of_scope: int
    share: float | None
    over_refusals: int
    under_refusals: int
    calibration: dict[str, Any] | None
    quality: dict[str, Any] | None
    uncalibrated: str | None
    off: str | None
    off_corpus: int
    support: dict[str, Any] | None
    misjudged_answerable: dict[str, float | int] | None
    under_refusals_explained: int | None
    misjudged_unanswerable: dict[str, float | int] | None
    over_refusals_explained: int | None
    off_corpus_by_language: dict[str, int]
    not_judged_by_language: dict[str, int]
    no_gold_rows_by_language: dict[str, int]
    #: of the questions given no verdict for want of a gold row in their language, those
    #: in a language the current gold set (and rule) judges, by language: counted by an
    #: earlier gold set or rule (:func:`split_by_gold`); absent when none
    no_gold_rows_covered_now: NotRequired[dict[str, int]]
    counted_under: list[dict[str, Any]]
    counted_under_notice: str | None
    #: the scope counts per detector version that made them, with the calibration and rates
    #: that judge each (:func:`~service.pipeline.totals.counted_by_version`)
    counted_by: list[dict[str, Any]]
    #: the shares of the counts made by an uncalibrated detector version, or one whose
    #: calibration was not recorded
    #: (:func:`~service.evaluation.detector_quality.counts_uncalibrated_text`; ``None``:
    #: none); ``uncalibrated`` names it when the detector now counting is calibrated, or
    #: is not for the same reason
    counts_uncalibrated: str | None
    #: how ``over_refusals_explained`` / ``under_refusals_explained`` sum each version's own
    #: rates over its own counts
    #: (:func:`~service.evaluation.detector_quality.explained_by_versions_text`; ``None``: one
    #: version)
    over_refusals_explained_by: str | None
    under_refusals_explained_by: str | None
    gold_set_versions: NotRequired[list[str]]
    #: what ``share`` counts: every verdict (:data:`SHARE_COUNTS`; the ``out_of_scope`` drift
    #: windows count only the stable ones: its ``counts``)
    share_counts: str
    #: the verdicts the off-corpus cutoff's range moves (``scope_unstable``:
    #: :func:`~service.refusals.scope.unstable_verdicts`), since the range now in use began
    #: (:func:`~service.pipeline.totals.unstable_counts`: ``out``, ``in`` judged out of scope
    #: / in scope, ``scored`` and ``out_of_scope`` under the range, ``since_scored`` the
    #: scored total before it, ``since`` its first event time, ``band``), ``stable_share``:
    #: the out-of-scope share of the other verdicts under it (what the drift windows count;
    #: ``None``: none), and ``text`` (:func:`~service.refusals.scope.unstable_text`); absent
    #: without the embedding detector's off-corpus rule
    unstable: NotRequired[dict[str, Any]]
    #: the verdicts by corpus family of the nearest passage and the families whose verdicts
    #: the calibration did not measure (:func:`families_report`); absent without families
    by_family: NotRequired[dict[str, Any]]
    #: the verdicts by language and the gold set's language confound
    #: (:func:`scope_languages_report`); absent without the embedding detector
    verdicts_by_language: NotRequired[dict[str, Any]]


class NoveltyReport(TypedDict):
    """The ``novel`` topic share with what it is worth (:func:`novelty_report`)."""

    novel: int
    share: float | None
    quality: dict[str, Any] | None
    uncalibrated: str | None
    off: str | None


class LanguageLabelsReport(TypedDict):
    """:func:`language_labels_report`: every ``language`` metric label value (``labels``,
    sorted, fixed at start), the most languages with their own (``limit``,
    ``analytics.language_label_limit``), the live languages exported as ``other`` that are
    worth naming (``unlabelled``, most questions first) and the line naming them with the
    fix (``notice``, ``None`` when none is named)."""

    labels: list[str]
    limit: int
    unlabelled: list[UnlabelledLanguage]
    notice: str | None


class AnalyticsReport(TypedDict):
    """:func:`analytics_report`: what ``goldwatch replay`` prints under ``analytics`` and
    ``GET /v1/drift`` and ``/v1/refusals`` serve parts of. ``languages``/``topics``: live
    counts per BCP 47 tag / topic, most common first; ``language_quality``: how far the
    language labels agree with the gold set's own; ``language_candidates`` (only when the
    language candidates leave languages out): those languages and the live questions that
    read as one of them (:func:`language_candidates_report`); ``topic_labels``: topic -> its
    description; ``pii_scrubbed``: count per PII type; ``drift``: the drift stage's report
    (per dimension its state, comparisons, counts and gaps; alarms; see
    :meth:`service.drift.stage.DriftStage.report`). The replay adds ``series`` (time series
    for its charts)."""

    languages: dict[str, int]
    #: the ``language`` metric label set and the live languages it exports as ``other`` that
    #: are worth naming (:func:`language_labels_report`); ``None`` without a labeler
    language_labels: LanguageLabelsReport | None
    #: the language stage's agreement with the gold set's ``language`` labels
    #: (:meth:`service.language.quality.LanguageAgreement.to_json`), ``None`` without a
    #: gold set
    language_quality: dict[str, Any] | None
    #: the languages the candidates leave out and the live questions reading as one
    #: (:func:`service.language.excluded.excluded_report`); absent when none is left out
    language_candidates: NotRequired[dict[str, Any]]
    topics: dict[str, int]
    #: live questions given no topic, per language: no gold row is written in their language
    #: (:class:`~service.topics.stage.TopicStage`); they are in no ``topics`` count
    topic_no_gold_rows_by_language: dict[str, int]
    #: of those, the ones in a language the current gold set (and rule) gives topics in:
    #: counted by an earlier gold set or rule (:func:`split_by_gold`); absent when none
    topic_no_gold_rows_covered_now: NotRequired[dict[str, int]]
    topic_labels: dict[str, str]
    #: the topic assignment's held-out agreement with the gold labels per language
    #: (:func:`topic_quality_report`), ``None`` without a topic model
    topic_quality: dict[str, Any] | None
    refusals: RefusalCounts
    out_of_scope: OutOfScopeReport
    novelty: NoveltyReport
    detector_quality: dict[str, dict[str, Any]]
    quality_floor: float
    quality_min_class: int
    pii_scrubbed: dict[str, int]
    drift: dict[str, Any]
    series: NotRequired[dict[str, Any]]


#: Suggestions shown per coverage gap in a report's ``in_gaps``, and gaps shown at most.
GAP_TOP = 3
GAP_GROUPS = 10


class HarvestSummary(TypedDict):
    """:func:`harvest_summary`: suggestions held, their count per reason, the first ``top``
    in the labellers' queue (:func:`service.harvest.ranking.select`'s order, as ``GET
    /v1/gold-candidates`` and ``candidates export`` give them; published records,
    :class:`~service.harvest.store.SuggestionRecord`),
    ``in_gaps`` (live only): per current coverage gap (the :data:`GAP_GROUPS` largest of
    ``n_gaps``) its suggestions' count and its best :data:`GAP_TOP`
    (:meth:`~service.harvest.stage.HarvestStage.best_records_in_gaps`); with a registry,
    ``shed`` (picked events whose new question was shed) and ``max_new_per_batch`` (the
    bound that sheds them); ``shadow_not_compared`` (with shadow candidates): per candidate,
    the events offered whose comparison did not complete, by cause
    (:mod:`service.shadow.not_compared`); ``documents`` (live, when the corpus names documents): the
    under-covered documents over all live traffic
    (:meth:`~service.harvest.stage.HarvestStage.document_gaps`, the :data:`GAP_GROUPS`
    largest)."""

    n_suggestions: int
    by_reason: dict[str, int]
    top: list[SuggestionRecord]
    in_gaps: NotRequired[list[GapSuggestions]]
    n_gaps: NotRequired[int]
    shed: NotRequired[int]
    max_new_per_batch: NotRequired[int | None]
    shadow_not_compared: NotRequired[dict[str, NotCompared]]
    documents: NotRequired[dict[str, Any]]


class LiveReports(TypedDict, total=False):
    """:func:`live_reports`: the reports of the stages that are on (a key per stage)."""

    shadow: ShadowStageReport
    quality: dict[str, Any]
    gold_candidates: HarvestSummary


def live_reports(live: Live, registry: CollectorRegistry | None = None) -> LiveReports:
    """The shadow, live-quality and harvest reports of ``live``, keyed as in the replay report;
    empty when those stages are off. With the ``registry`` ``live`` exports to, the harvest
    summary also carries ``shed`` (read from ``goldwatch_gold_candidates_shed_total``; call
    after :meth:`Live.finish`, which exports the last counts) and ``max_new_per_batch``."""
    reports: LiveReports = {}
    if live.shadow is not None:
        reports["shadow"] = live.shadow.report()
    if live.quality is not None:
        reports["quality"] = live.quality.report(reports.get("shadow"))
    if live.harvest is not None:
        harvest = live.harvest  # harvest_summary(harvest.records()), building 20 records only
        in_gaps, n_gaps = harvest.best_records_in_gaps(GAP_TOP, GAP_GROUPS)
        summary: HarvestSummary = {"n_suggestions": len(harvest.suggestions),
                                   "by_reason": harvest.reason_counts(),
                                   "top": harvest.best_records(20),
                                   "in_gaps": in_gaps, "n_gaps": n_gaps}  # fmt: skip
        documents = harvest.document_gaps(GAP_GROUPS)
        if documents is not None:
            summary["documents"] = documents
        if registry is not None:
            shed = registry.get_sample_value("goldwatch_gold_candidates_shed_total")
            summary["shed"] = int(shed or 0)
            summary["max_new_per_batch"] = live.harvest.config.max_new_per_batch
        if live.shadow is not None:  # said next to shed: comparisons skipped under load
            summary["shadow_not_compared"] = live.shadow.not_compared()
        reports["gold_candidates"] = summary
    return reports


def harvest_summary(
    records: Sequence[SuggestionRecord], top: int = 20, config: HarvestConfig | None = None
) -> HarvestSummary:
    """Suggestion counts by reason and the first ``top`` suggestions in the labellers' queue
    (:func:`service.harvest.ranking.select` over every record, as the labelling API lists
    them; records alone know no coverage gaps: ``in_gaps`` comes from the live stage,
    :func:`live_reports`). ``config``: the weights and quotas of the order (default
    :class:`~service.harvest.config.HarvestConfig`'s)."""
    config = config or HarvestConfig()
    by_reason: dict[str, int] = {}
    for row in records:
        for reason in row.get("reasons", ()):
            by_reason[reason] = by_reason.get(reason, 0) + 1
    by_id = {str(r["id"]): r for r in records}
    chosen = (
        select((Suggestion.from_json(r) for r in records), config, first=top) if top > 0 else []
    )
    return {"n_suggestions": len(records), "by_reason": by_reason,
            "top": [by_id[s.id] for s in chosen]}  # fmt: skip


def split_by_gold(
    counts: Mapping[str, int], known: bool, gold_languages: frozenset[str] | None
) -> tuple[dict[str, int], dict[str, int]]:
    """``counts`` (``{language: n}`` of questions left unjudged for want of a gold row in
    their language, all-time) split into ``(still lacking, covered now)``, each most first:
    a language the current gold set judges (:func:`~service.language.gold.lacks_gold` of
    ``gold_languages``; ``None``: every language) is covered now, its count kept from an
    earlier gold set or rule. ``known`` false (no stage applies the rule now): all lacking,
    as counted.

    >>> split_by_gold({"de": 4, "en": 617}, True, frozenset({"en"}))
    ({'de': 4}, {'en': 617})
    >>> split_by_gold({"de": 4}, False, None)
    ({'de': 4}, {})
    """
    lacking: dict[str, int] = {}
    covered: dict[str, int] = {}
    for language, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        if known and not lacks_gold(language, gold_languages):
            covered[language] = n
        else:
            lacking[language] = n
    return lacking, covered


def _topic_gold_languages(live: Live) -> tuple[bool, frozenset[str] | None]:
    """``(a topic stage runs, the languages its gold set judges)``
    (:attr:`~service.topics.stage.TopicStage.gold_languages`)."""
    stage = next((st for st in live.analytics.stages if isinstance(st, TopicStage)), None)
    return (False, None) if stage is None else (True, stage.gold_languages)


def _scope_gold_languages(live: Live) -> tuple[bool, frozenset[str] | None]:
    """``(an out-of-scope stage judges by language, the languages its gold set judges)``
    (the detector's ``gold_languages()``: ``None`` judges every language)."""
    for stage in live.analytics.stages:
        judged = getattr(getattr(stage, "detector", None), "gold_languages", None)
        if callable(judged):
            return True, judged()
    return False, None


def _text_reader(live: Live) -> Reader:
    """What reads the answers' texts in ``live`` (:func:`~service.refusals.detector.text_reader`
    of its :class:`~service.refusals.stage.RefusalStage`'s detector; ``"patterns"`` without
    one)."""
    stage = next((st for st in live.analytics.stages if isinstance(st, RefusalStage)), None)
    return "patterns" if stage is None else text_reader(stage.detector)


def analytics_report(live: Live) -> AnalyticsReport | None:
    """Summarise the analytics of a run from the drift stage and the persisted annotation
    totals (since the first start, not since this process's: the Prometheus counters
    restart at 0)."""
    drift = live.analytics.drift
    if drift is None:
        return None
    totals = live.analytics.totals or AnnotationTotals()
    flags = totals.flags
    answers, refused = flags["answers"], flags["refusals"]
    scored, out = flags["scope_scored"], flags["out_of_scope"]
    calibration = live.analytics.scope
    qualities = detector_quality_report(live.analytics)
    support = scope_support(live.analytics)
    misjudged = misjudged_of(live.analytics)  # as the gauge has it (Live, refresh)
    let_in = misjudged_unanswerable_of(live.analytics)  # (the same)
    # counted by an earlier gold set or language rule: a state kept across a gold-set edit or
    # an upgrade said "no gold row in their language (en 617)" of a language judged now
    topic_lacking, topic_covered = split_by_gold(totals.by_language["topic_no_gold_rows"],
                                                 *_topic_gold_languages(live))  # fmt: skip
    scope_lacking, scope_covered = split_by_gold(totals.by_language["no_gold_rows"],
                                                 *_scope_gold_languages(live))  # fmt: skip
    by_language = totals.by_language
    reader = _text_reader(live)
    # the scope counts per detector version that made them, each judged by its own rates
    versions = counted_by_version(totals.counted_under, flags)
    counts_uncalibrated = counts_uncalibrated_text(versions)
    agreement = flag_agreement_rows(
        {lang: (n, by_language["flag_refused"][lang], by_language["text_refused"][lang],
                by_language["both_refused"][lang])
         for lang, n in by_language["flag_checked"].items()},
        live.analytics.quality_min_class)  # fmt: skip
    report: AnalyticsReport = {
        "languages": dict(drift.live_counts["language"].most_common()),
        "language_labels": language_labels_report(live.analytics.language_labeler,
                                                  drift.live_counts["language"]),
        "language_quality": live.analytics.language_quality,
        "topics": dict(drift.live_counts["topic"].most_common()),
        "topic_no_gold_rows_by_language": topic_lacking,
        "topic_labels": dict(live.analytics.topic_descriptions),
        "topic_quality": topic_quality_report(live.analytics),
        "refusals": {"answers": answers, "refused": refused,
                     "rate": refused / answers if answers else None,
                     "by_flag": flags["answers_by_flag"],
                     "by_patterns": flags["answers_by_patterns"],
                     "refused_by_flag": flags["refusals_by_flag"],
                     "refused_by_patterns": flags["refusals_by_patterns"],
                     "method": refusal_rate_method(
                         flags["answers_by_flag"], flags["answers_by_patterns"], answers,
                         (flags["refusals_by_flag"], flags["refusals_by_patterns"]), refused,
                         reader, [row["language"] for row in agreement], agreement,
                     ),
                     "by_language": rate_rows(
                         {lang: (totals.by_language["refusals"][lang], n)
                          for lang, n in totals.by_language["answers"].items()},
                         live.analytics.quality_min_class),
                     "by_language_answers": sum(totals.by_language["answers"].values()),
                     "against_flag": agreement,
                     "against_flag_text": flag_agreement_text(
                         agreement, live.analytics.quality_min_class,
                         "the phrase patterns" if reader == "patterns" else READER_NAMES[reader],
                     )},
        "out_of_scope": {
            "scored": scored, "out_of_scope": out, "share": out / scored if scored else None,
            "share_counts": SHARE_COUNTS,
            "over_refusals": flags["over_refusals"], "under_refusals": flags["under_refusals"],
            "calibration": describe(calibration) if calibration else None,
            "quality": qualities.get("out_of_scope"),
            # the detector now counting, else the counts it did not make (trial 50 H2)
            "uncalibrated": scope_uncalibrated_text(
                qualities["out_of_scope"]["uncalibrated"] if "out_of_scope" in qualities
                else "no out-of-scope detector", versions),
            "counts_uncalibrated": counts_uncalibrated,
            "off": live.analytics.scope_off,
            "off_corpus": flags["off_corpus"],
            "support": support,
            "misjudged_answerable": None if misjudged is None else misjudged.as_dict(),
            "under_refusals_explained": (
                None if misjudged is None
                else explained_by_versions(versions, "under_refusals") if versions
                else misjudged.explains(scored)),
            "under_refusals_explained_by": explained_by_versions_text(versions,
                                                                      "under_refusals"),
            "misjudged_unanswerable": None if let_in is None else let_in.as_dict(),
            "over_refusals_explained": (
                None if let_in is None
                else explained_by_versions(versions, "over_refusals") if versions
                else let_in.explains(flags["scored_refusals"])),
            "over_refusals_explained_by": explained_by_versions_text(versions, "over_refusals"),
            "off_corpus_by_language": dict(totals.by_language["off_corpus"].most_common()),
            "not_judged_by_language": dict(totals.by_language["not_judged"].most_common()),
            "no_gold_rows_by_language": scope_lacking,
            "counted_under": [dict(row) for row in totals.counted_under],
            "counted_under_notice": counted_under_text(totals.counted_under, scored),
            "counted_by": versions,
        },
        "novelty": novelty_report(live.analytics, drift.live_counts["topic"], qualities),
        "detector_quality": qualities,
        "quality_floor": live.analytics.quality_floor,
        "quality_min_class": live.analytics.quality_min_class,
        "pii_scrubbed": {t: totals.pii[t] for t in PII_TYPES},
        "drift": drift.report(detectable=True),
    }  # fmt: skip
    recall = text_recall(
        agreement,
        {lang: (n, by_language["text_refusals"][lang])
         for lang, n in by_language["text_answers"].items()},
        flags["answers_by_patterns"], answers, refused,
        "the phrase patterns" if reader == "patterns" else READER_NAMES[reader],
        missed=totals.missed_shown(), read_refused=flags["refusals_by_patterns"])  # fmt: skip
    if recall is not None:  # the text reader decided answers and was measured on this traffic
        report["refusals"]["text_recall"] = recall
    if live.quality is not None:
        report["out_of_scope"]["gold_set_versions"] = live.quality.gold_set_versions()
        figure = live.quality.known_refusal()
        known = report["drift"].get("known_refusal")
        inherited = f" ({INHERITED})" if recall is not None and recall["lower_bound"] else ""
        text = known_refusal_text(figure, known)
        report["refusals"]["known_over_refusal"] = {
            **figure, "text": text + inherited if text else text,
            "brief": known_refusal_text(figure, known, brief=True)}  # fmt: skip
    if support is not None:  # the embedding detector's off-corpus rule
        scope = report["out_of_scope"]
        # since the range now in use began (a refresh that moves it starts them again)
        # (not yet, if the range moved and no batch was counted under the new one)
        unstable = unstable_counts(flags, totals.unstable_since, totals.band)
        stable = unstable["scored"] - unstable["out"] - unstable["in"]
        unstable["stable_share"] = ((unstable["out_of_scope"] - unstable["out"]) / stable
                                    if stable else None)  # fmt: skip
        scope["unstable"] = unstable
        unstable["text"] = unstable_text(scope)
    harvest_reasons = live.harvest.reason_counts() if live.harvest is not None else None
    if (families := families_report(live.analytics, totals, harvest_reasons)) is not None:
        report["out_of_scope"]["by_family"] = families
    scope_languages = scope_languages_report(live.analytics, totals, harvest_reasons)
    if scope_languages is not None:
        report["out_of_scope"]["verdicts_by_language"] = scope_languages
    if scope_covered:
        report["out_of_scope"]["no_gold_rows_covered_now"] = scope_covered
    if topic_covered:
        report["topic_no_gold_rows_covered_now"] = topic_covered
    candidates = language_candidates_report(live.analytics)
    if candidates is not None:  # right after language_quality, as the reports read them
        items = list(report.items())
        at = [key for key, _ in items].index("language_quality") + 1
        items.insert(at, ("language_candidates", candidates))
        report = cast(AnalyticsReport, dict(items))
    return report


def scope_languages_report(
    analytics: Analytics,
    totals: AnnotationTotals,
    harvest_reasons: Mapping[str, int] | None = None,
) -> dict[str, Any] | None:
    """The out-of-scope verdicts by language and the gold set's language confound
    (:mod:`service.refusals.languages`): ``{"rows": language_rows(...), "confounded":
    [languages], "confound": the measurement (``ScopeLanguages.confound``) or None,
    "text": :func:`~service.refusals.languages.confound_text` or None,
    "under_refusals_text", "harvest_text": the under-refusals / answered_out_of_scope events
    in the confounded languages, or None (with what the counts cover when language counting
    began after the first verdict: :func:`~service.refusals.families.since_text`),
    "from_scored": the verdicts counted before language counting began (0: none), "scored":
    every verdict}``; ``None`` when the running
    detector measured no languages (not the embedding detector)."""
    from service.refusals.languages import (
        confound_text,
        harvest_language_text,
        language_rows,
        under_refusal_language_text,
    )
    from service.runtime.analytics import scope_languages_of

    languages = scope_languages_of(analytics)
    if languages is None:
        return None
    rows = language_rows(totals.by_scope_language, languages, analytics.family_min_events)
    scored = int(totals.flags["scope_scored"])
    since = since_text(totals.scope_language_from_scored, scored, "language")
    gold = languages.confound["languages"] if languages.confound is not None else []
    harvest_text = None
    if harvest_reasons is not None:
        events = sum(totals.by_scope_language["harvest_out_of_scope"].values())
        suggestions = int(harvest_reasons.get("answered_out_of_scope", 0))
        harvest_text = harvest_language_text(rows, events, suggestions, gold, since)
    return {
        "rows": rows,
        "confounded": sorted(languages.confounded),
        "confound": languages.confound,
        "text": confound_text(languages),
        "under_refusals_text": under_refusal_language_text(rows, gold, since),
        "harvest_text": harvest_text,
        "from_scored": totals.scope_language_from_scored,
        "scored": scored,
    }


#: How the families of ``out_of_scope.by_family`` are made and judged, said with them.
FAMILY_RULE = (
    "a question's family is the doc_type of its nearest corpus passage (embeddings), a gold "
    "row's the same; a family is judged on at least {min_events} scored events "
    "(analytics.drift.min_count), and its verdicts are not measured when fewer than "
    "{min_rows} answerable gold rows lie in it and its out-of-scope share is above the other "
    "families' by at least {min_rise:.2f} (lower end of the 95 % Newcombe interval)"
)


def families_report(
    analytics: Analytics,
    totals: AnnotationTotals,
    harvest_reasons: Mapping[str, int] | None = None,
) -> dict[str, Any] | None:
    """The out-of-scope verdicts by corpus family (:mod:`service.refusals.families`):
    ``{"rows": family_rows(...), "unmeasured": [names], "rule", "min_rows", "min_rise",
    "min_events", "from_scored" (the verdicts counted before family counting began, 0:
    none), "scored" (every verdict), "since_text" (:func:`~service.refusals.families.
    since_text`, or None), "text": the warning or None, "under_refusals_text",
    "harvest_text": the under-refusals / answered_out_of_scope events among them, or None
    (``harvest_text`` also without ``harvest_reasons``: harvesting off), and with harvesting
    on "harvest": {"events" (behind answered_out_of_scope, counted by family),
    "events_unmeasured" (of those, in unmeasured families), "suggestions" (held with that
    reason)}}``; ``None`` without families. ``harvest_reasons``: the harvest stage's
    suggestions per reason (:meth:`~service.harvest.stage.HarvestStage.reason_counts`)."""
    families = scope_families_of(analytics)
    if families is None:
        return None
    min_rows, min_events = analytics.quality_min_class, analytics.family_min_events
    rows = family_rows(totals.by_family, families, min_rows, FAMILY_MIN_RISE, min_events)
    scored = int(totals.flags["scope_scored"])
    since = since_text(totals.family_from_scored, scored)
    text = family_text(rows, min_rows)
    harvest: dict[str, Any] = {"harvest_text": None}
    if harvest_reasons is not None:  # events by family; every family's, and those of none
        events = sum(totals.by_family["harvest_out_of_scope"].values())
        suggestions = int(harvest_reasons.get("answered_out_of_scope", 0))
        harvest = {
            "harvest_text": harvest_family_text(rows, events, suggestions, since),
            "harvest": {"events": events, "suggestions": suggestions,
                        "events_unmeasured": sum(row["harvest_out_of_scope"] for row in rows
                                                 if row["unmeasured"])},
        }  # fmt: skip
    return {
        "rows": rows,
        "unmeasured": [row["family"] for row in rows if row["unmeasured"]],
        "rule": FAMILY_RULE.format(
            min_rows=min_rows, min_rise=FAMILY_MIN_RISE, min_events=min_events
        ),  # fmt: skip
        "min_rows": min_rows,
        "min_rise": FAMILY_MIN_RISE,
        "min_events": min_events,
        "from_scored": totals.family_from_scored,
        "scored": scored,
        "since_text": since,
        "text": f"{text} ({since})" if text and since else text,
        "under_refusals_text": under_refusal_family_text(rows, since),
        **harvest,
    }


def topic_quality_report(analytics: Analytics) -> dict[str, Any] | None:
    """The topic assignment's quality per language, as the reports show it: ``{"supervised":
    bool, "agreement": the held-out agreement with the gold labels
    (:func:`service.topics.quality.topic_agreement`; ``None`` when unsupervised — no labels
    — or from a model saved before it was measured), "language_bias": why a language change
    alone moves the topic shares (:func:`service.topics.quality.language_bias` with
    ``analytics.quality_min_class``), or None, "kappa": its held-out Cohen's kappa and
    "chance": the chance agreement it corrects for (:func:`service.topics.quality.kappa_of`;
    ``None`` without labels or when undefined), "min_kappa": ``analytics.topics.min_kappa``,
    "uncalibrated": why the topic shares, topic drift and coverage gaps are not facts
    (kappa below ``min_kappa``: :meth:`Analytics.topic_uncalibrated`) or None,
    "language_split": how much the topics follow language
    (:func:`service.topics.quality.topic_language_association` of the fitted texts, languages
    with at least ``quality_min_class`` of them: ``{"v", "n", "languages", "topics"}`` plus
    "text", the notice of :func:`service.topics.quality.language_split_text` or None), or None
    (fewer than two such languages, or a model saved before it was kept)}``; ``None``
    without a topic stage."""
    stage = next((st for st in analytics.stages if isinstance(st, TopicStage)), None)
    if stage is None:
        return None
    found = kappa_of(analytics.topic_quality)
    return {
        "supervised": stage.model.supervised,
        "agreement": analytics.topic_quality,
        "language_bias": language_bias(analytics.topic_quality, analytics.quality_min_class),
        "kappa": None if found is None else found[0],
        "chance": None if found is None else found[1],
        "min_kappa": analytics.topic_min_kappa,
        "uncalibrated": analytics.topic_uncalibrated(),
        "language_split": language_split(stage.model, analytics.quality_min_class),
    }


def language_split(model: Any, min_rows: int) -> dict[str, Any] | None:
    """``model``'s topic-language association
    (:func:`service.topics.quality.topic_language_association` of its ``language_topics``,
    languages with at least ``min_rows`` fitted texts) with its notice under ``"text"``
    (:func:`service.topics.quality.language_split_text`, None at or below the threshold);
    ``None`` when not measurable (or a stand-in model without the attribute), and for a
    model of labelled topics: its topics are the user's labels, so the association would
    describe the labels, not the embedding (their per-language held-out agreement,
    :func:`service.topics.quality.language_bias`, says how the embedding serves each
    language)."""
    if getattr(model, "supervised", False):
        return None
    found = topic_language_association(getattr(model, "language_topics", None) or {}, min_rows)
    return None if found is None else {**found, "text": language_split_text(found)}


def language_labels_report(
    labeler: LanguageLabeler | None, counts: Mapping[str, int]
) -> LanguageLabelsReport | None:
    """The ``language`` metric label set of ``labeler`` and the languages of ``counts`` (live
    questions per language) it exports as ``other`` that are worth naming
    (:func:`~service.language.unlabelled.unlabelled_languages`), with the line naming them
    and the fix (:func:`~service.language.unlabelled.unlabelled_text`); ``None`` without a
    labeler."""
    if labeler is None:
        return None
    named = unlabelled_languages(counts, labeler)
    return {"labels": labeler.labels(), "limit": labeler.limit, "unlabelled": named,
            "notice": unlabelled_text(named, labeler)}  # fmt: skip


def language_candidates_report(analytics: Analytics) -> dict[str, Any] | None:
    """The languages the running language stage's candidates leave out and the live
    questions that read as one of them (:func:`~service.language.excluded.excluded_report`,
    with ``analytics.quality_min_class`` as its fewest questions), or ``None`` (no language
    stage, or candidates that leave nothing out). Safe without the pipeline lock."""
    stage = analytics.language_stage
    if stage is None or not stage.detector.excluded:
        return None
    detector = stage.detector
    judged, by_language = stage.excluded_counts()
    return excluded_report(detector.config.candidates, detector.excluded, judged, by_language,
                           analytics.quality_min_class)  # fmt: skip


def novelty_report(
    analytics: Analytics, topics: Mapping[str, int], qualities: Mapping[str, Any]
) -> NoveltyReport:
    """The ``novel`` topic share with what it is worth: ``{"novel": n, "share": n / all
    topic-annotated events or None, "quality": the novelty detector's
    :func:`detector_quality_report` entry or None, "uncalibrated": why the share is not a
    fact or None, "off": why novelty is off or None}``. A detector below its quality floor
    labels nothing (:func:`~service.runtime.analytics.novelty_labels`): its ``share`` is
    ``None``, not 0 — no share was measured (trial 49 L4)."""
    total = sum(topics.values())
    novel = int(topics.get(NOVEL, 0))
    off = analytics.novelty_off
    uncalibrated = None
    if off is None:
        uncalibrated = (qualities["novelty"]["uncalibrated"] if "novelty" in qualities
                        else analytics.uncalibrated("novelty"))  # fmt: skip
    labelling = analytics.topics_nearest() is None  # (novelty off: no question is novel, 0)
    return {
        "novel": novel,
        "share": novel / total if total and labelling else None,
        "quality": qualities.get("novelty"),
        "uncalibrated": uncalibrated,
        "off": off,
    }


def detector_quality_report(analytics: Analytics) -> dict[str, dict[str, Any]]:
    """Each detector's measured quality (:meth:`DetectorQuality.as_dict`: the AUC, and the
    operating point at its threshold where it has one; out-of-scope: ``tpr`` the share of
    answerable gold questions kept in scope, ``fpr`` of unanswerable ones judged in scope,
    :data:`~service.evaluation.detector_quality.RATE_WORDS`) with ``measured_on`` (its class sizes
    in the user's words, :func:`~service.evaluation.detector_quality.measured_on`: ``"5
    unanswerable / 45 answerable gold questions"``; the numbers are ``n_neg`` and ``n_pos``),
    ``trusted`` (AUC ≥ the floor, balanced accuracy at the threshold ≥ its floor, each class at
    least ``analytics.quality_min_class``) and ``uncalibrated`` (why not, or ``None``)."""
    return {
        name: {**quality.as_dict(), "measured_on": measured_on(name, quality),
               "trusted": analytics.uncalibrated(name) is None,
               "uncalibrated": analytics.uncalibrated(name),
               # what to add to calibrate it (out_of_scope; trial 41)
               **({"to_calibrate": advice} if (advice := analytics.to_calibrate(name)) else {})}
        for name, quality in sorted(analytics.detector_quality.items())
    }  # fmt: skip


def json_safe(value: Any) -> Any:
    """Replace NaN and infinities (not JSON) with ``None``, recursively."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(v) for v in value]
    return value
