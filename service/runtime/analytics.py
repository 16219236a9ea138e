"""Compose the live analytics stages from the configuration and the gold set.

Order matters: PII scrubbing first (nothing downstream ever sees the raw text), then language,
refusal, out-of-scope (which needs the refusal flag), topic (whose novelty check takes the
out-of-scope detector's nearest gold similarities: :mod:`service.embeddings.nearest`), then
drift (which reads every annotation). The gold set gives the references: its languages (the
rows' ``language`` field, else detected), its topics (through the same assignment as live
traffic: cross-validated predictions of its labelled rows, or the model's assignment, with
leave-one-out novelty; see :meth:`~service.topics.model.TopicModel.gold_counts`) and, for
out-of-scope, the calibration of a built-in retriever's best score on its answerable vs
unanswerable questions.
"""

from __future__ import annotations

import functools
import logging
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

import numpy as np

from service.data.corpus import Corpus
from service.data.goldset import GoldSet, GoldSetError
from service.drift.stage import DriftStage, Labeller
from service.drift.windows import WindowConfig
from service.embeddings.config import english_model_notice
from service.embeddings.model import shared_embedder
from service.embeddings.protocol import Embedder
from service.evaluation.detector_quality import (
    DEFAULT_AUC_FLOOR,
    FEW_OFF_TOPIC_NEGATIVES,
    OFF_TOPIC_NEGATIVES,
    DetectorQuality,
    MisjudgedAnswerable,
    MisjudgedUnanswerable,
    balanced_accuracy_floor,
    class_rates_text,
    measure_auc,
    misjudged_answerable,
    misjudged_unanswerable,
    scope_calibration_advice,
    too_few,
)
from service.files.fit_cache import Memo, no_memo
from service.language.detector import (
    DEFAULT_FREQUENT,
    LABELS,
    LanguageConfig,
    LanguageDetector,
    LanguageLabeler,
)
from service.language.excluded import candidates_notice
from service.language.gold import gold_language_keys
from service.language.quality import language_agreement
from service.language.stage import LanguageStage
from service.language.tags import language_key
from service.pii import PiiScrubStage, Pseudonymiser
from service.pipeline import Stage
from service.pipeline.totals import AnnotationTotals
from service.records import KINDS, OFF_TOPIC, GoldQuestion, Passage
from service.refusals.detector import RefusalDetector
from service.refusals.families import ScopeFamilies, build_families
from service.refusals.languages import ScopeLanguages
from service.refusals.scope import (
    LINEAR_FORMAT,
    EmbeddingScope,
    KnownScope,
    ScopeCalibration,
    SupportCheck,
    band_text,
    best_score,
    calibrate_with_retriever,
    canonical_rows,
    corpus_sample,
    coverage_groups,
    off_topic_needed,
    scope_rows,
    support_change,
)
from service.refusals.stage import EmbeddingScopeStage, RefusalStage, ScopeStage
from service.retrievers.base import Retriever
from service.retrievers.registry import build_retrievers
from service.settings import AnalyticsConfig, DriftSettings, RetrieverConfig
from service.text.subject import has_placeholder, subject
from service.topics.config import TopicConfig
from service.topics.model import NOVEL, TopicModel
from service.topics.quality import (
    DEFAULT_MIN_KAPPA,
    kappa_of,
    kappa_uncalibrated,
    language_bias,
    unshown_languages,
)
from service.topics.stage import TopicStage

log = logging.getLogger(__name__)

UNDETERMINED = "und"


@dataclass
class Analytics:
    """The built stages and what telemetry and the API need to read them.

    Attributes:
        stages: in run order (PII, language, refusal, scope, topic, drift).
        drift: the drift stage (its :meth:`~service.drift.stage.DriftStage.report`).
        totals: refusal, out-of-scope and PII totals since the first start (persisted).
        language_labels, topic_labels: every bounded label value (pre-initialised series).
        scope: the out-of-scope calibration, or ``None``.
        topic_descriptions: ``{topic name: human-readable label}`` of the running topic model
            (:attr:`~service.topics.model.TopicInfo.label`: its top terms for a ``topic-<id>``).
        gold_counts: the gold set's category counts per dimension.
        detector_quality: measured quality per detector, each on the data it was calibrated
            on (``"out_of_scope"``: cross-validated; ``"novelty"``: the topic model's
            leave-one-topic-out ROC AUC).
        quality_floor: the AUC below which a detector's counts are uncalibrated and its drift
            dimension raises no alarm (``analytics.quality_floor``).
        min_balanced_accuracy: the balanced accuracy at its threshold below which the
            out-of-scope and novelty detectors are uncalibrated likewise
            (``analytics.scope_min_balanced_accuracy``:
            :data:`~service.evaluation.detector_quality.BALANCED_ACCURACY_FLOORED`).
        quality_min_class: the class size below which a detector's quality is no measurement
            and the detector is uncalibrated likewise (``analytics.quality_min_class``: e.g.
            fewer than 10 unanswerable gold questions for out-of-scope).
        family_min_events: the scored events a corpus family needs before its out-of-scope
            share is judged (:func:`~service.refusals.families.family_rows`; the events a
            drift window needs, ``analytics.drift.min_count``: both judge a live rate).
        novelty_off: why no question is called ``novel`` (e.g. :data:`NOVELTY_OFF_NO_GOLD`),
            or ``None`` while topic novelty is on.
        scope_off: why no question is judged out of scope (e.g. :data:`SCOPE_OFF_NO_GOLD`),
            or ``None`` while the out-of-scope detector runs.
        language_quality: the language stage's agreement with the gold set's ``language``
            labels (:meth:`~service.language.quality.LanguageAgreement.to_json`), or
            ``None`` without a language stage or a gold set.
        topic_quality: the supervised topic model's held-out agreement with the gold labels
            per language (:attr:`~service.topics.model.TopicModel.topic_agreement`), or
            ``None`` (no topic stage, or unsupervised topics: no labels to agree with).
        topic_min_kappa: the floor of its held-out Cohen's kappa
            (``analytics.topics.min_kappa``): below it the topic assignment is uncalibrated
            (:meth:`topic_uncalibrated`).
        language_stage: the language stage (its left-out-language counts), or ``None``.
        language_notice: the line naming the languages the language candidates leave out
            (:func:`~service.language.excluded.candidates_notice`), or ``None`` when they
            leave none out (the default) or there is no language stage; replaced when a
            gold-set refresh changes the candidates.
        scope_notice: the notice of the last gold-set change that moved the off-corpus
            cutoff (:func:`~service.refusals.scope.support_change`), or ``None``.
        unlabelled_notice: the line naming the live languages exported as ``other`` that
            are worth naming, with the fix (:func:`~service.language.unlabelled.unlabelled_text`),
            or ``None``; set after each batch and after a restore
            (:meth:`service.runtime.live.Live.name_unlabelled`), so ``GET /v1/status`` reads
            it without the pipeline lock.
    """

    stages: list[Stage]
    drift: DriftStage | None = None
    totals: AnnotationTotals | None = None
    language_labeler: LanguageLabeler | None = None
    topic_labels: tuple[str, ...] = ()
    scope: ScopeCalibration | None = None
    topic_model_version: str | None = None
    gold_counts: dict[str, dict[str, int]] = field(default_factory=dict)
    detector_quality: dict[str, DetectorQuality] = field(default_factory=dict)
    topic_descriptions: dict[str, str] = field(default_factory=dict)
    quality_floor: float = DEFAULT_AUC_FLOOR
    novelty_off: str | None = None
    scope_off: str | None = None
    min_balanced_accuracy: float = 0.0
    quality_min_class: int = 0
    family_min_events: int = 200
    language_quality: dict[str, Any] | None = None
    topic_quality: dict[str, Any] | None = None
    topic_min_kappa: float = DEFAULT_MIN_KAPPA
    language_stage: LanguageStage | None = None
    language_notice: str | None = None
    unlabelled_notice: str | None = None
    scope_notice: str | None = None

    def uncalibrated(self, detector: str) -> str | None:
        """Why ``detector``'s counts are not facts, or ``None`` when its measured quality
        reaches this service's floors (:attr:`quality_floor`, :attr:`min_balanced_accuracy`,
        :attr:`quality_min_class`): :func:`detector_uncalibrated`, the rule
        :func:`novelty_labels` applies to the novelty detector too. A detector without a
        measurement is uncalibrated."""
        return detector_uncalibrated(detector, self.detector_quality.get(detector),
                                     self.quality_floor, self.min_balanced_accuracy,
                                     self.quality_min_class)  # fmt: skip

    def to_calibrate(self, detector: str) -> str | None:
        """What to add to the gold set to calibrate ``detector`` while it is uncalibrated
        (:meth:`uncalibrated`): for ``out_of_scope``,
        :func:`~service.evaluation.detector_quality.scope_calibration_advice` (trial 41: its
        unanswerable rows were in-domain, and nothing said what to add); ``None`` when it is
        calibrated, unmeasured, or another detector."""
        quality = self.detector_quality.get(detector)
        if detector != "out_of_scope" or quality is None or self.uncalibrated(detector) is None:
            return None
        return scope_calibration_advice(
            quality, self.quality_floor, self.quality_min_class,
            balanced_accuracy_floor(detector, self.min_balanced_accuracy),
        )  # fmt: skip

    def topics_nearest(self) -> str | None:
        """What the topic shares are while the novelty detector is uncalibrated
        (:meth:`uncalibrated` of ``"novelty"``: :data:`NEAREST_TOPICS` with its reason), or
        ``None`` (novelty calibrated, off, or not measured: a model without 2 topics). An
        uncalibrated detector labels no question ``novel`` (:func:`novelty_labels`; trial 49
        L4: its 5 % ``novel`` share stood on every surface); a question on a topic the gold
        set lacks is counted under its nearest gold topic (t40: 63 % of pure off-topic
        questions under a Wikipedia article even while novel was applied), so no topic share
        is that topic's, and no topic coverage gap is exported, alerted on or given to a
        suggestion (the ``topic`` drift alarms stand, naming nearest topics)."""
        if self.novelty_off is not None or "novelty" not in self.detector_quality:
            return None
        why = self.uncalibrated("novelty")
        return None if why is None else NEAREST_TOPICS.format(why=why)

    def topic_uncalibrated(self) -> str | None:
        """Why the topic assignment is too poor to act on (its held-out Cohen's kappa below
        :attr:`topic_min_kappa`: :func:`~service.topics.quality.kappa_uncalibrated`), or
        ``None`` (at or above it, or no kappa: unsupervised topics, a model saved before it
        was measured)."""
        return kappa_uncalibrated(self.topic_quality, self.topic_min_kappa)

    def topic_trusted(self) -> bool | None:
        """``goldwatch_detector_trusted{detector="topic"}``: whether the topic assignment's
        held-out kappa reaches :attr:`topic_min_kappa`; ``None`` without a kappa (nothing to
        gate: unsupervised topics, a model saved before it was measured)."""
        if kappa_of(self.topic_quality) is None:
            return None
        return self.topic_uncalibrated() is None

    def language_label(self, language: str | None) -> str:
        """Bounded label of a language (``und`` when missing)."""
        if self.language_labeler is None or language is None:
            return UNDETERMINED
        return self.language_labeler.label(language)

    def topic_label(self, topic: str | None) -> str:
        """Bounded label of a topic: a known topic, ``novel``, else ``other``."""
        if topic is None:
            return UNDETERMINED
        return topic if topic in self.topic_labels else "other"


#: What the topic shares are while novelty is uncalibrated (:meth:`Analytics.topics_nearest`).
NEAREST_TOPICS = (
    "each question's nearest gold topic, questions on topics outside the gold set included "
    "(the novelty detector labels no question novel while it is uncalibrated: {why}); no "
    "topic coverage gap is a fact"
)


#: Fewest labelled gold rows for supervised topics (:meth:`TopicModel.fit` needs 3 texts).
MIN_LABELLED_ROWS = 3


class TopicLabelRule(NamedTuple):
    """What the gold set's ``topic`` labels make of the topics (:func:`topic_label_rule`).

    Attributes:
        supervised: the labels are the topics (learnt from the labelled rows).
        notice: labels are present but too few to be the topics: the topics are clusters,
            and this line says so (``None`` otherwise).
        problem: enough rows are labelled, all with one label: the gold set is refused
            with this message (``None`` otherwise).
    """

    supervised: bool
    notice: str | None
    problem: str | None


def topic_label_rule(questions: Iterable[GoldQuestion], use_gold_topics: bool = True,
                     where: str = "the gold set") -> TopicLabelRule:  # fmt: skip
    """Whether the gold rows' ``topic`` labels are the topics.

    The labels are the topics when ``use_gold_topics`` is on and the labelled rows are at
    least :data:`MIN_LABELLED_ROWS` (3) and at least as many as the answerable rows without
    a label that the user wrote (unanswerable rows often carry none; accepted suggestions,
    ``harvest_id`` set, are not counted), i.e. labels describe the gold set, and they carry
    at least 2 distinct labels. Rows without one are then counted by the model's prediction
    (an accepted suggestion written without a label), so no number of accepts without a
    label turns the user's labels into clusters.

    Fewer labelled rows (a gold set without labels that gained a few, e.g. an accept that
    set ``topic`` on a gold set of 55 unlabelled rows) cannot be the topics — 1 labelled row
    would make every live question that topic or ``novel`` — so the topics are clusters of
    all the gold questions, with a ``notice`` saying so and what to do. Enough labelled rows
    all with one label are a ``problem`` (the gold set is refused: the user labelled the set
    and supervised topics need 2), and so is a label equal to the reserved
    :data:`~service.topics.model.NOVEL` (:meth:`TopicModel.fit` refuses it: it is the verdict
    for questions far from every topic), so an accept checked by this rule never writes a
    file the reload refuses. Messages give counts, never the labels.

    >>> def q(i, topic=None):
    ...     return GoldQuestion(f"q-{i}", "?", ("p-1",), topic=topic)
    >>> topic_label_rule([q(1, "fees"), q(2, "fees"), q(3, "exams"), q(4)]).supervised
    True
    >>> rule = topic_label_rule([q(1, "library"), q(2), q(3), q(4)])
    >>> rule.supervised, rule.notice.split(",")[0]
    (False, 'the gold set: 1 of 4 gold rows carry a topic label')
    """
    rows = list(questions)
    labelled = [q for q in rows if q.topic]
    if not use_gold_topics or not labelled:
        return TopicLabelRule(False, None, None)
    # accepted rows (harvest_id) are counted by the model's prediction, never against the
    # labels: the labeller confirming no topic must not turn the user's labels into clusters
    unlabelled = sum(1 for q in rows if not q.topic and q.answerable and q.harvest_id is None)
    needed = max(MIN_LABELLED_ROWS, unlabelled)
    if len(labelled) < needed:
        return TopicLabelRule(False, (
            f"{where}: {len(labelled)} of {len(rows)} gold rows carry a topic label, too few "
            f"for supervised topics (they need {needed}: at least {MIN_LABELLED_ROWS}, and as "
            "many as the answerable rows without one); the topics are clusters of all the "
            "gold questions. Label more rows (at least 2 topics), or remove the labels"
        ), None)  # fmt: skip
    if len({q.topic for q in labelled}) < 2:
        # the label itself is not echoed: gold-set text stays out of logs and responses
        return TopicLabelRule(False, None, (
            f"{where}, field 'topic': supervised topics need at least 2 distinct labels, and "
            f"all {len(labelled)} labelled rows carry the same one; label rows of another "
            "topic, remove the labels, or set analytics.use_gold_topics: false (clusters)"
        ))  # fmt: skip
    reserved = sum(1 for q in labelled if q.topic == NOVEL)
    if reserved:  # TopicModel.fit's own check (_check_labels): the name is the novelty verdict
        return TopicLabelRule(False, None, (
            f"{where}, field 'topic': {reserved} labelled row(s) carry the name reserved for "
            "questions far from every topic, which cannot be a topic label; give them "
            "another label or none"
        ))  # fmt: skip
    return TopicLabelRule(True, None, None)


def fit_topic_model(
    gold: GoldSet,
    passages: Sequence[Passage] = (),
    config: TopicConfig | None = None,
    use_gold_topics: bool = True,
    *,
    embedder: Embedder | None = None,
    previous: TopicModel | Mapping[str, Any] | None = None,
) -> TopicModel:
    """Fit the topic model on the gold questions (plus passages when given).

    When the gold set's ``topic`` labels are the topics (:func:`topic_label_rule`: enough
    labelled rows, at least 2 labels, ``use_gold_topics`` on) the model is supervised,
    learnt from the rows that carry one; rows without one (an accepted suggestion written
    without a label, unanswerable rows) are not trained on and are counted by the model's
    prediction, as live traffic is (:meth:`TopicModel.gold_counts`), so one unlabelled row
    never turns the gold set's own labels into clusters. Passages are then not used, having
    no label. Otherwise (no labels, or too few: the rule's notice) the topics are clusters of
    all the questions and passages: fitted on the rows the user wrote (and the passages),
    the accepted suggestions (``harvest_id``) joining them (:meth:`TopicModel.fit`'s
    ``accepted``). ``previous`` (the model being replaced, or its identity from the state
    store) keeps unsupervised topic ids of before content ids.

    Raises:
        GoldSetError: enough rows are labelled, all with the same label (supervised topics
            need 2), naming the file and what to do.
        ValueError: too few texts to fit (from :meth:`TopicModel.fit`).
    """
    # the rows as the out-of-scope stage reads them, in canonical order (the model reads its
    # rows in canonical order whatever it is given: TopicModel.fit)
    questions = list(scope_gold(gold))
    where = str(gold.path) if gold.path else "the gold set"
    rule = topic_label_rule(questions, use_gold_topics, where)
    if rule.problem is not None:  # a clear start-up error naming the file and the way out
        raise GoldSetError(where, [rule.problem])
    if rule.supervised:
        labelled = [q for q in questions if q.topic]
        return TopicModel.fit([q.question for q in labelled], config,
                              labels=[q.topic for q in labelled],  # type: ignore[misc]
                              embedder=embedder, previous=previous)  # fmt: skip
    texts = [q.question for q in questions] + [p.text for p in passages]
    # accepted suggestions (harvest_id) join the topics fitted on the rows the user wrote
    accepted = [q.harvest_id is not None for q in questions] + [False] * len(passages)
    return TopicModel.fit(texts, config, embedder=embedder, previous=previous,
                          accepted=accepted)  # fmt: skip


def analysis_gold(gold: GoldSet) -> GoldSet:
    """``gold`` as the analysis reads it: each row's question its subject
    (:func:`~service.text.subject.subject`: without personal-data placeholders and the
    contact clauses around them), ids, labels and path kept. The topic model's fit and gold
    counts and the out-of-scope calibration and known questions read these rows, as their
    stages read live questions' subjects; the gold-set file and what is shown keep the text
    written (trial 12 F6: one accepted row ``My name is <NAME>, my email is <EMAIL> … How many
    points did the Panthers defense surrender?`` drew 59 of 60 scrubbed live questions into
    its topic). ``gold`` itself when no row holds a placeholder. A row that would be left
    empty (only placeholders) keeps its text.
    """
    if not any(has_placeholder(q.question) for q in gold):
        return gold
    rows = []
    for q in gold:
        text = subject(q.question)
        rows.append(q if text is q.question or not text else replace(q, question=text))
    return GoldSet(tuple(rows), gold.path)


def scope_gold(gold: GoldSet) -> GoldSet:
    """``gold``'s rows as the out-of-scope stage and the known-question index read them:
    :func:`analysis_gold` (the rows' subjects) in canonical order
    (:func:`~service.refusals.scope.canonical_rows`: by question text, passages, kind,
    language, id), so the detector's fit and the known questions' ties are those of the set
    of rows, not of the file's order or ids (trial 49, H1). The live-quality stage's index
    (:func:`~service.runtime.live.known_index`) is built on the same rows, so it is the
    scope stage's own: an equal :class:`GoldSet` for any order of ``gold``'s rows.

    >>> from service.records import GoldQuestion
    >>> a, b = GoldQuestion("q-1", "Why?", ()), GoldQuestion("q-2", "How?", ("p",))
    >>> scope_gold(GoldSet((a, b))) == scope_gold(GoldSet((b, a)))
    True
    """
    analysed = analysis_gold(gold)
    return GoldSet(tuple(canonical_rows(analysed)), analysed.path)


def _memo_topics(memo: Memo, embedder: Embedder, gold: GoldSet, passages: Sequence[Passage],
                 config: TopicConfig, use_gold_topics: bool,
                 previous: Mapping[str, Any] | None) -> TopicModel:  # fmt: skip
    """:func:`fit_topic_model` through ``memo`` (its state and version are kept)."""

    def fit() -> tuple[dict[str, Any], str]:
        model = fit_topic_model(gold, passages, config, use_gold_topics, embedder=embedder,
                                previous=previous)  # fmt: skip
        return model.fitted_state(), model.version

    # everything topic_label_rule reads: the labels, answerability and accepted rows, as a
    # sorted list (the fit is one of the set of rows: any order of them is one entry)
    inputs = [sorted(((q.question, q.topic, q.answerable, q.harvest_id is not None)
                      for q in analysis_gold(gold)), key=lambda r: (r[0], r[1] or "", r[2:])),
              [p.text for p in passages], config,
              use_gold_topics, embedder.name, previous]  # fmt: skip
    state, version = memo("topic-model", inputs, fit)
    return TopicModel(state, version, embedder)


def _language_counts(gold: GoldSet, detector: LanguageDetector) -> dict[str, int]:
    rows = list(gold)
    missing = [q.question for q in rows if not q.language]
    detected = iter(detector.detect_many(missing))
    return dict(Counter(q.language or next(detected) for q in rows))


def language_quality(gold: GoldSet, detector: LanguageDetector) -> dict[str, Any] | None:
    """The detector's agreement with the gold set's ``language`` labels
    (:func:`~service.language.quality.language_agreement`, as JSON), ``None`` for an empty
    gold set. A few ms per 100 labelled rows: call outside the pipeline lock."""
    if not len(gold):
        return None
    rows = [q for q in gold if q.language]
    detected = detector.detect_many([q.question for q in rows])
    return language_agreement([q.language for q in rows], detected).to_json()


def detector_uncalibrated(
    detector: str,
    quality: DetectorQuality | None,
    floor: float,
    min_balanced_accuracy: float,
    min_class: int,
) -> str | None:
    """Why ``detector``'s counts are not facts (e.g. ``"out_of_scope ROC AUC 0.991
    [0.960, 1.000] is measured on only 5 unanswerable gold questions; needs at least 10
    (analytics.quality_min_class)"``, ``"out_of_scope ROC AUC 0.596 [0.520, 0.670] is
    below the quality floor 0.75"``, or its balanced accuracy at its threshold, its FPR at
    the Wilson upper bound, below ``min_balanced_accuracy``
    (:func:`~service.evaluation.detector_quality.balanced_accuracy_floor`: the detectors it
    applies to)), or ``None`` when all three reach their floors
    (:meth:`~service.evaluation.detector_quality.DetectorQuality.trusted`); ``quality``
    ``None`` (no measurement) is uncalibrated. The one rule of
    :meth:`Analytics.uncalibrated` and :func:`novelty_labels` (``floor``:
    ``analytics.quality_floor``; ``min_balanced_accuracy``:
    ``analytics.scope_min_balanced_accuracy``; ``min_class``:
    ``analytics.quality_min_class``)."""
    if quality is None:
        return f"{detector} has no quality measurement"
    ba_floor = balanced_accuracy_floor(detector, min_balanced_accuracy)
    if quality.trusted(floor, ba_floor, min_class):
        return None
    if (few := too_few(detector, quality, min_class)) is not None:
        return (f"{detector} ROC AUC {quality.auc:.3f} [{quality.low:.3f}, "
                f"{quality.high:.3f}] is {few} (analytics.quality_min_class)")  # fmt: skip
    if not quality.trusted(floor):
        return (f"{detector} ROC AUC {quality.auc:.3f} "
                f"[{quality.low:.3f}, {quality.high:.3f}] is below the quality floor "
                f"{floor:.2f}")  # fmt: skip
    return (f"{detector} balanced accuracy {quality.balanced_accuracy:.3f} at its "
            f"threshold ({class_rates_text(quality.as_dict(), detector)}; ROC AUC "
            f"{quality.auc:.3f}), {quality.bounded_balanced_accuracy:.3f} with its false-"
            f"positive rate at its Wilson 95 % upper bound over {quality.n_neg} questions, "
            f"is below analytics.scope_min_balanced_accuracy "
            f"{min_balanced_accuracy:.2f}")  # fmt: skip


def novelty_labels(model: TopicModel, config: AnalyticsConfig) -> bool:
    """Whether ``model``'s novelty verdict labels questions ``novel``: its novelty quality
    (:attr:`~service.topics.model.TopicModel.novelty_quality`) reaches the floors
    :meth:`Analytics.uncalibrated` holds it to, by the same rule
    (:func:`detector_uncalibrated` of ``config``'s ``quality_floor``,
    ``scope_min_balanced_accuracy`` and ``quality_min_class``, the fields
    :func:`build_analytics` gives :class:`Analytics`), or it has no measurement
    (fewer than 2 topics, novelty off: nothing to gate, as :meth:`Analytics.topics_nearest`).
    False: the live topics (:class:`~service.topics.stage.TopicStage`) and the gold counts
    (:func:`_topic_counts`) are nearest gold topics, with no ``novel`` category."""
    quality = model.novelty_quality
    return quality is None or detector_uncalibrated(
        "novelty", quality, config.quality_floor, config.scope_min_balanced_accuracy,
        config.quality_min_class,
    ) is None  # fmt: skip


def _topic_counts(gold: GoldSet, model: TopicModel, novelty: bool = True) -> dict[str, int]:
    """Like-for-like: the gold rows through live traffic's assignment (cross-validated;
    ``novelty`` False: no row is ``novel``, as no live question then is —
    :func:`novelty_labels`)."""
    rows = list(analysis_gold(gold))
    return model.gold_counts([q.question for q in rows], [q.topic for q in rows], novelty)


def gold_topic_strata(gold: GoldSet, model: TopicModel, detector: LanguageDetector | None,
                      novelty: bool = True) -> dict[str, dict[str, int]]:  # fmt: skip
    """``{language: {topic: rows}}``: the gold rows' topics as :func:`_topic_counts` assigns
    them (``novelty`` as there), by each row's language as the language dimension's
    reference counts it
    (:func:`_language_counts`: its ``language`` field, else the detector's; ``und`` with no
    language stage): the strata of the topic comparison with the gold set
    (:meth:`~service.drift.stage.DriftStage.set_topic_strata`). CPU: an embedding of the
    gold rows, as :func:`_topic_counts`."""
    rows = list(analysis_gold(gold))
    topics = model.gold_assignments([q.question for q in rows], [q.topic for q in rows],
                                    novelty)  # fmt: skip
    originals = list(gold)
    missing = [q.question for q in originals if not q.language]
    detected = iter(detector.detect_many(missing) if detector is not None else
                    ["und"] * len(missing))  # fmt: skip
    languages = [q.language or next(detected) for q in originals]
    strata: dict[str, dict[str, int]] = {}
    for language, topic in zip(languages, topics, strict=True):
        cells = strata.setdefault(language, {})
        cells[topic] = cells.get(topic, 0) + 1
    return strata


def _window_config(drift: DriftSettings) -> WindowConfig:
    return WindowConfig(
        window_s=drift.window_s,
        bucket_s=drift.bucket_s,
        reference_window_s=drift.reference_window_s,
        test_every_s=drift.test_every_s,
        baseline=drift.baseline,
        warmup_s=drift.warmup_s,
        allowed_lateness_s=drift.allowed_lateness_s,
        future_tolerance_s=drift.future_tolerance_s,
        max_ahead_s=drift.max_ahead_s,
        ahead_confirm=drift.ahead_confirm,
        ahead_gap_factor=drift.ahead_gap_factor,
    )


def _known_window_config(drift: DriftSettings) -> WindowConfig:
    """The ``known_refusal`` dimension's windowing: the drift windows with the current window
    and the frozen baseline's warm-up both ``known_window_s`` (known questions are few)."""
    return replace(_window_config(drift), window_s=drift.known_window_s,
                   warmup_s=drift.known_window_s)  # fmt: skip


#: Which drift dimension (and category; ``None``: all of it) each quality-reporting detector
#: feeds: suppressed while the detector is below the floor. (Not novelty: below its floor it
#: labels nothing, so there is no ``novel`` category to suppress — the topic shares are
#: nearest gold topics, :meth:`Analytics.topics_nearest`; trial 49 L4.)
DETECTOR_DIMENSIONS: dict[str, tuple[str, str | None]] = {
    "out_of_scope": ("out_of_scope", None),
}


def _scope_stage(
    config: AnalyticsConfig,
    gold: GoldSet,
    corpus: Corpus,
    embedder: Embedder | None = None,
    retriever: Retriever | None = None,
    memo: Memo = no_memo,
) -> tuple[
    ScopeStage | EmbeddingScopeStage | None, ScopeCalibration | None, DetectorQuality | None
]:
    """The out-of-scope stage, its calibration and its measured quality (``scope_method``);
    three ``None`` when it is off (:func:`scope_off` says why).

    ``retriever``: the built-in ``config.scope_retriever`` already built on ``corpus`` (a
    gold-set refresh reuses the running one); ``None`` builds it. ``memo`` may keep the
    embedding detector's fit (:meth:`~service.refusals.scope.EmbeddingScope.fitted_state`)
    and a built-in ``bm25`` retriever's index."""
    method = config.scope_method
    off = scope_off(config, gold, corpus)
    if off is not None:
        if len(gold) and method != "off" and config.scope_retriever is not None:
            # (no gold set: said once, elsewhere)
            log.warning("out-of-scope detection is off: %s", off)
        return None, None, None
    name = config.scope_retriever
    assert name is not None  # scope_off returned None, so scope_retriever is set
    if retriever is None or retriever.name != name:
        retriever = build_retrievers(
            [name],
            lambda n: RetrieverConfig(name=n, kind=name),  # n is name: the only one asked for
            corpus.passages,
            memo=memo,
        )[name]
    # the rows' subjects, as the stage reads live questions, in canonical order: the fit,
    # its folds, groups and bootstrap, and the known questions' ties are then those of the
    # set of rows, whatever the file's order
    analysed = scope_gold(gold)
    # with enough kind: off-topic rows (quality_min_class), the detector is calibrated and
    # measured on them against the answerable rows, and the other gold: [] rows are measured
    # apart (trial 46 F5); with fewer, on every gold: [] row as before them, so a gold set
    # that wrote its off-topic rows kind: unanswerable keeps its negatives (review of s47-f5)
    needed = off_topic_needed(config.quality_min_class)
    questions, apart = scope_rows(list(analysed), needed)
    n_off = sum(1 for q in analysed if not q.answerable and q.kind == OFF_TOPIC)
    negatives = (
        "" if not n_off else OFF_TOPIC_NEGATIVES if n_off >= needed else FEW_OFF_TOPIC_NEGATIVES
    )
    # the gold: [] rows not marked off-topic: measured apart, or (too few off-topic rows)
    # among the negatives
    unmarked = apart or [q for q in questions if not q.answerable and q.kind != OFF_TOPIC]

    def about(quality: DetectorQuality, out: int) -> DetectorQuality:
        """``quality`` with the off-topic rows and the rows not marked off-topic (``out`` of
        them judged out of scope)."""
        return replace(quality, negatives=negatives, apart=len(unmarked), apart_out=out,
                       apart_kinds=_kinds(unmarked), off_topic=n_off,
                       off_topic_needed=needed)  # fmt: skip

    cache_size = config.question_cache_size
    known = KnownScope(analysed, config.scope_known_threshold, cache_size)
    if method == "retriever":
        calibration = calibrate_with_retriever(questions, retriever, min_tpr=config.scope_min_tpr)
        run = retriever.search_batch([q.question for q in questions], 1)
        scores = [best_score(found) for found in run]
        floor = min((s for s in scores if s is not None), default=1.0) - 1.0
        filled = [floor if s is None else s for s in scores]
        quality = measure_auc(
            [x for x, q in zip(filled, questions, strict=True) if q.answerable],
            [x for x, q in zip(filled, questions, strict=True) if not q.answerable],
            method=f"{retriever.name} best score on the gold set (no fitting)",
        ).at_threshold(calibration.threshold, calibration.tpr, calibration.fpr)
        if negatives:
            found_apart = retriever.search_batch([q.question for q in unmarked], 1)
            out = sum(calibration.in_scope(best_score(r)) is not True for r in found_apart)
            quality = about(quality, out)
        by_score = ScopeStage(calibration, retriever, k=1, known=known, cache_size=cache_size)
        return by_score, calibration, quality
    found = retriever.search_batch([q.question for q in questions], 1)
    embedder = embedder or shared_embedder(config.embeddings)
    every = corpus.passages
    sample = corpus_sample([p.id for p in every], config.scope_corpus_passages)
    passages = [every[i].text for i in sample]
    scores = [best_score(r) for r in found]

    # each gold row's language as the language stage labels a live question (its own
    # ``language`` first): the off-corpus rule's cutoffs are per language
    missing = [q.question for q in questions if not q.language]
    detected = iter(language_detector(config, gold).detect_many(missing))
    languages = [q.language or next(detected) for q in questions]

    def fit() -> dict[str, Any]:
        return EmbeddingScope(embedder, questions, passages, retriever_scores=scores,
                              retriever=retriever.name, min_tpr=config.scope_min_tpr,
                              languages=languages, min_rows=config.quality_min_class,
                              corpus_total=len(every), groups=groups,
                              negatives=negatives or "unanswerable").fitted_state()  # fmt: skip

    # the rows asking about one document (else one passage) do not see each other in the fit
    # (coverage_groups: trial 12, F1), the passages the corpus feature reads given theirs
    groups = coverage_groups(questions, {p.id: p.doc for p in every}, [every[i].id for i in sample])
    inputs = [questions, passages, scores, retriever.name, config.scope_min_tpr, embedder.name,
              languages, config.quality_min_class, len(every), groups]  # fmt: skip
    if negatives:  # (not before: the fits a memo kept before off-topic rows stay its)
        inputs.append(negatives)
    # the fitted state's format (the regression's arrays beside its pickle): an entry kept in
    # another format is another key, so it is fitted again, never misread
    inputs.append(LINEAR_FORMAT)
    detector = EmbeddingScope.restore(embedder, memo("embedding-scope", inputs, fit))
    stage = EmbeddingScopeStage(detector, retriever, known, cache_size)
    stage.families = scope_families(detector, [every[i].doc_type for i in sample])
    stage.languages = scope_languages(detector, languages)
    cal = detector.calibration  # its rates are those of the cross-validated scores
    quality = detector.quality.at_threshold(cal.threshold, cal.tpr, cal.fpr)
    if negatives == OFF_TOPIC_NEGATIVES:
        out = _judged_out(detector, apart, retriever, config, gold)
        quality = about(quality, out)
    elif negatives:  # among the negatives: judged at the scores it was measured on
        is_unmarked = np.array([not q.answerable and q.kind != OFF_TOPIC for q in questions])
        out = int(np.count_nonzero(detector.cv_scores[is_unmarked] < cal.threshold))
        quality = about(quality, out)
    return stage, cal, quality


def _kinds(rows: Sequence[GoldQuestion]) -> str:
    """The kinds of ``rows``, each once in :data:`~service.records.KINDS` order,
    ``", "``-joined (``"unanswerable, role-restricted"``; a ``gold: []`` row of another kind
    reads ``unanswerable``, as the loader names it); ``"unanswerable"`` for none."""
    present = {q.kind if q.kind == "role-restricted" else "unanswerable" for q in rows}
    return ", ".join(k for k in KINDS if k in present) or "unanswerable"


def _judged_out(
    detector: EmbeddingScope,
    rows: Sequence[GoldQuestion],
    retriever: Retriever,
    config: AnalyticsConfig,
    gold: GoldSet,
) -> int:
    """How many of ``rows`` (gold rows the detector was not fitted on: the in-domain
    unanswerable ones, :func:`~service.refusals.scope.scope_rows`) ``detector`` judges out of
    scope, each scored as a live question is (its retriever score, its language's off-corpus
    cutoff; probability in scope under the threshold, or off-corpus)."""
    if not rows:
        return 0
    texts = [q.question for q in rows]
    missing = [q.question for q in rows if not q.language]
    detected = iter(language_detector(config, gold).detect_many(missing))
    languages = [q.language or next(detected) for q in rows]
    scores = [best_score(r) for r in retriever.search_batch(texts, 1)]
    proba, off = detector.score_support(texts, scores, languages)
    return int(np.count_nonzero(off | (proba < detector.calibration.threshold)))


def scope_families(
    detector: EmbeddingScope, doc_types: Sequence[str | None]
) -> ScopeFamilies | None:
    """The corpus families the detector's verdicts are broken down by
    (:func:`~service.refusals.families.build_families`): ``doc_types`` of the detector's
    passages (its order), each gold row placed by its nearest passage, as a live question is,
    with its held-out verdict (the cross-validated probability, the off-corpus rule applied,
    at the threshold). ``None`` when the corpus labels fewer than two ``doc_type`` values or
    the detector reads no passage."""
    if not detector.use_corpus or len(doc_types) != detector.passage_vectors.shape[0]:
        return None
    from service.refusals.scope import nearest_with_index

    _, nearest = nearest_with_index(detector.gold_vectors, detector.passage_vectors)
    kept = np.asarray(detector.cv_scores) >= detector.calibration.threshold
    return build_families(doc_types, nearest, np.asarray(detector.gold_answerable), kept)


def scope_languages(
    detector: EmbeddingScope, languages: Sequence[str | None]
) -> ScopeLanguages | None:
    """The gold rows by language and the language confound check
    (:func:`~service.refusals.languages.build_languages`): ``languages``: each gold row's
    (gold order, as fitted), keyed as a live question's label is
    (:func:`~service.language.tags.language_key`; ``und`` without one), with its held-out
    verdict and score (the cross-validated probability, the off-corpus rule applied).
    ``None`` when the counts do not match the detector's rows."""
    from service.language.tags import language_key
    from service.refusals.languages import build_languages

    if len(languages) != len(detector.gold_answerable):
        return None
    scores = np.asarray(detector.cv_scores)
    keys = [language_key(str(lang or "und")) for lang in languages]
    kept = scores >= detector.calibration.threshold
    return build_languages(keys, np.asarray(detector.gold_answerable), kept, scores)


def scope_languages_of(analytics: Analytics) -> ScopeLanguages | None:
    """The running embedding detector's gold rows by language (:func:`scope_languages`),
    or ``None``."""
    stage = _running_scope(analytics)
    return getattr(stage, "languages", None) if isinstance(stage, EmbeddingScopeStage) else None


#: What follows the language bias of the topic assignment in the topic dimension's reason.
TOPIC_BY_LANGUAGE = ("a topic change cannot be told from a language change while the language "
                     "mix moves (label more gold questions of that language; "
                     "analytics.topics.language_centring may help: docs/topics.md)")  # fmt: skip


def apply_quality_floor(analytics: Analytics) -> dict[str, str]:
    """Suppress the drift alarms of every detector below ``analytics.quality_floor`` (and
    resume those at or above it): the whole ``out_of_scope`` dimension; a novelty detector
    below it labels nothing (the topic stage writes each question's nearest topic, never
    ``novel``: :func:`novelty_labels`; when that mode flips, the ``topic`` windows start
    afresh, its labeller's key carrying the mode: :func:`topic_labeller`), and the topic
    shares are nearest gold topics (:meth:`Analytics.topics_nearest`): the ``topic``
    coverage gaps are left out with that reason (``DriftStage.withhold_gaps``; its alarms
    stand) and the topic stage marks its topics uncalibrated, so harvesting finds no topic
    coverage gap. The whole
    ``topic`` dimension raises no alarm while a supervised model's held-out Cohen's kappa is
    below ``analytics.topics.min_kappa`` (:meth:`Analytics.topic_uncalibrated`; its coverage
    gaps are left out, and the topic stage marks its topics uncalibrated, so harvesting finds
    no topic coverage gap). The ``topic``
    dimension raises no alarm while ``language`` drifts when the topic assignment is
    measurably worse in one language than another
    (:func:`~service.topics.quality.language_bias` of :attr:`Analytics.topic_quality`, its
    languages with at least ``quality_min_class`` labelled gold rows), or, else, while the
    drifting language comparison moves a language the gold set does not show to be about
    as good as its best-measured one (:func:`~service.topics.quality.unshown_languages`:
    too few rows, or too weak). Return
    ``{dimension or "dimension (category share)": reason}`` of what is suppressed."""
    if analytics.totals is not None:  # the scope counts from now on are judged by this
        analytics.totals.judge = scope_judge(analytics)
    topics = next((st for st in analytics.stages if isinstance(st, TopicStage)), None)
    nearest = analytics.topics_nearest()
    if topics is not None:
        topics.novelty_calibrated = _labels_novel(analytics, topics)
        drift = analytics.drift
        known = drift.labellers.get("topic") if drift is not None else None
        if drift is not None and known is not None:
            # a flip of the labelling mode (the model unchanged) restarts the topic windows
            mode = topic_labeller(topics.model, novelty=topics.novelty_calibrated)["topic"]
            drift.set_labeller(
                "topic", mode._replace(older_differs=known.older_differs),
                _novelty_flip_why(analytics, topics.novelty_calibrated),
            )  # fmt: skip
    topic_why = analytics.topic_uncalibrated()
    if topics is not None:  # no topic is a coverage gap in harvesting either way
        topics.calibrated = topic_why is None and nearest is None
    if analytics.drift is None:
        return {}
    # nearest topics: a topic's live share above its gold share is no fact, a change of the
    # distribution still is one (t40: the surge on two articles no gold row covers moved
    # it), so the alarms stand and their categories read as nearest topics
    analytics.drift.withhold_gaps("topic", nearest)
    # the whole topic dimension (vs the gold set and vs earlier traffic, and its coverage gaps)
    analytics.drift.suppress("topic", None if topic_why is None else f"uncalibrated: {topic_why}")
    bias = language_bias(analytics.topic_quality, analytics.quality_min_class)
    languages = None  # any language change confounds topic (two languages measurably apart)
    if bias is None:  # else only a change of a language the gold set does not show as good
        bias, weak = unshown_languages(analytics.topic_quality, analytics.quality_min_class)
        languages = weak if bias is not None else None
    if bias is not None:
        bias += f"; {TOPIC_BY_LANGUAGE}"
    analytics.drift.confound("topic", "language", bias, languages)
    for detector, (dimension, category) in DETECTOR_DIMENSIONS.items():
        if detector not in analytics.detector_quality:
            continue
        why = analytics.uncalibrated(detector)
        reason = None if why is None else f"uncalibrated: {why}"
        if category is None:
            analytics.drift.suppress(dimension, reason)
        else:
            analytics.drift.suppress_category(dimension, category, reason)
    return dict(analytics.drift.report()["suppressed_dimensions"])


#: Why topic novelty is off when topics are fitted on the corpus (no gold set).
NOVELTY_OFF_NO_GOLD = (
    "novelty is off: with no gold set the topics are fitted on the corpus's passages, and "
    "questions are a different kind of text, so a question far from every passage is not "
    "novel; set gold_set: to have it"
)


#: Why out-of-scope detection is off without a gold set.
SCOPE_OFF_NO_GOLD = (
    "no gold set (the detector is calibrated on the gold set's answerable and unanswerable "
    "questions); set gold_set: to have it"
)


def scope_off(config: AnalyticsConfig, gold: GoldSet, corpus: Corpus) -> str | None:
    """Why the out-of-scope detector does not run (``None``: it runs): ``scope_method``
    off, no ``scope_retriever``, no gold set (:data:`SCOPE_OFF_NO_GOLD`), fewer than 2
    answerable or 2 unanswerable gold questions, or no corpus passages."""
    if config.scope_method == "off":
        return "analytics.scope_method is off"
    if config.scope_retriever is None:
        return "analytics.scope_retriever is not set"
    if not len(gold):
        return SCOPE_OFF_NO_GOLD
    if len(gold.unanswerable()) < 2 or len(gold.answerable()) < 2:
        return "the gold set has fewer than 2 answerable or 2 unanswerable questions"
    if not corpus.passages:  # never a stand-in corpus
        return "no corpus (corpus:) to score questions on"
    return None


def _novelty_off(model: TopicModel | None, has_gold: bool) -> str | None:
    """Why no question is called ``novel`` (``None``: novelty is on)."""
    if model is None:
        return "novelty is off: no topic model"
    if model.novelty_on:
        return None
    if not has_gold:
        return NOVELTY_OFF_NO_GOLD
    return "novelty is off (analytics.topics.novelty_percentile is 0)"


def pseudonymiser(config: AnalyticsConfig) -> Pseudonymiser:
    """The pseudonymiser of ``event_id`` and ``user.id``: keyed with ``pii_key`` (or its
    file) when one is set, else the unkeyed digest; it remembers up to ``pii_memo_size``
    pseudonyms of ``user.id``.

    Raises:
        ValueError: ``pii_key_file`` cannot be read or holds too short a key.
    """
    return Pseudonymiser(config.pii_key_bytes(), memo_size=config.pii_memo_size)


def language_detector(config: AnalyticsConfig, gold: GoldSet) -> LanguageDetector:
    """The language detector for ``gold``: its candidates are the configured ones plus the
    gold set's languages; its expected languages (the prior of short or ambiguous
    questions) are the configured ``analytics.language.preferred``, else the gold set's
    languages weighed by their row counts (a short question falls back to the dominant one).
    Built at start and again after an accepted gold question (:func:`gold_references`)."""
    gold_languages = sorted({q.language for q in gold if q.language})
    # a gold row's tag as the detector labels it (en-US -> en); one it can never give
    # (a language no script or profile of it knows) adds no candidate
    labels = (language_key(lang) for lang in gold_languages)
    candidates = tuple(dict.fromkeys([*config.language.candidates,
                                      *(lang for lang in labels if lang in LABELS)]))  # fmt: skip
    preferred = config.language.preferred or tuple(gold_languages)
    rows = Counter(q.language for q in gold if q.language)
    shares = (config.language.preferred_shares if config.language.preferred
              else tuple(float(rows[lang]) for lang in gold_languages))  # fmt: skip
    return LanguageDetector(LanguageConfig(**{**config.language.model_dump(),
                                              "candidates": candidates,
                                              "preferred": preferred,
                                              "preferred_shares": shares}))  # fmt: skip


def build_analytics(
    config: AnalyticsConfig,
    gold: GoldSet,
    corpus: Corpus,
    previous_topics: Mapping[str, Any] | None = None,
    memo: Memo = no_memo,
) -> Analytics:
    """Build the analytics stages for ``config`` against the gold set and corpus.

    ``previous_topics`` is the :meth:`~service.topics.model.TopicModel.identity` kept in the state
    store by the last run, so a restart keeps the unsupervised topic ids. ``memo`` may keep
    the fits between starts (:class:`service.files.fit_cache.FitCache`: the gold set's
    language and topic counts, the topic model, the embedding out-of-scope detector), which
    are then the same values as fitted.

    Raises:
        ValueError: a topic model or refusal pattern cannot be built, or the pseudonym key
            file cannot be read; the message says which.
        service.topics.model.ArtefactError: ``topics_model`` cannot be loaded.
    """
    if not config.enabled:
        return Analytics(stages=[])
    stages: list[Stage] = (
        [PiiScrubStage(pseudonymiser(config), config.pii_memo_size)] if config.pii else []
    )
    detector = language_detector(config, gold)
    language_counts = memo("language-counts", [[(q.question, q.language) for q in gold],
                                               detector.config],
                           lambda: _language_counts(gold, detector))  # fmt: skip
    labeler = LanguageLabeler(language_counts, DEFAULT_FREQUENT, config.language_label_limit,
                              configured=config.language_labels)  # fmt: skip
    language_stage = LanguageStage(detector, labeler)
    stages.append(language_stage)
    if notice := english_model_notice(config.embeddings, language_counts):
        log.warning("%s", notice)
    # One embedder for topics, novelty and out-of-scope (``analytics.embeddings``); the
    # ``tfidf`` backend is fitted on the gold questions and the corpus.
    embedder = shared_embedder(
        config.embeddings, [q.question for q in gold] + [p.text for p in corpus.passages]
    )
    model: TopicModel | None = None
    if config.topics_model is not None:
        model = TopicModel.load(config.topics_model, embedder)
    elif len(gold):
        model = _memo_topics(memo, embedder, gold, (), config.topics, config.use_gold_topics,
                             previous_topics)  # fmt: skip
    elif corpus.passages:  # no gold set: the user's own corpus, never a stand-in
        # Novelty off: questions are not passages, so "far from every passage" means nothing
        # (and its leave-one-topic-out AUC would be measured on passages, not questions).
        no_novelty = config.topics.model_copy(update={"novelty_percentile": 0.0})
        model = _memo_topics(memo, embedder, gold, corpus.passages, no_novelty, False,
                             previous_topics)  # fmt: skip
    # the flagged refusals' wordings the patterns miss are kept only when scrubbed (pii)
    stages.append(RefusalStage(RefusalDetector(extra_patterns=config.refusal_patterns),
                               keep_missed=config.pii))  # fmt: skip
    scope_stage, calibration, scope_quality = _scope_stage(config, gold, corpus, embedder,
                                                           memo=memo)  # fmt: skip
    if scope_stage is not None:
        if scope_quality is not None:
            scope_stage.calibrated = scope_quality.trusted(
                config.quality_floor, config.scope_min_balanced_accuracy, config.quality_min_class
            )
        stages.append(scope_stage)
    # after the out-of-scope stage, whose nearest gold similarities its novelty check takes
    # (service.embeddings.nearest); neither reads the other's annotations
    if model is not None:  # else no topics: nothing of the user's to fit them on
        # a question in a language no gold row is written in gets no topic (TopicStage)
        judged = gold_language_keys(language_counts) if len(gold) else None
        topic_stage = TopicStage(model, config.question_cache_size, judged)
        topic_stage.novelty_calibrated = novelty_labels(model, config)
        stages.append(topic_stage)
    # an uncalibrated novelty detector labels nothing: no novel gold row, live question or label
    novelty = model is not None and novelty_labels(model, config)
    gold_counts: dict[str, dict[str, int]] = {}
    topic_strata: dict[str, dict[str, int]] | None = None
    if len(gold):  # no gold set: no reference comparisons, the baseline only
        topic_counts: dict[str, int] = {}
        if model is not None:
            topic_inputs = [model.version, [(q.question, q.topic) for q in analysis_gold(gold)]]
            if not novelty:  # (the inputs, and so the cache keys, of a calibrated one as before)
                topic_inputs.append("no novelty")
            topic_counts = memo("topic-counts", topic_inputs,
                                lambda: _topic_counts(gold, model, novelty))  # fmt: skip
            strata_inputs = [*topic_inputs, [q.language for q in gold], detector.config]
            topic_strata = memo(
                "topic-strata", strata_inputs,
                lambda: gold_topic_strata(gold, model, detector, novelty),
            )  # fmt: skip
        gold_counts = {"language": language_counts, "topic": topic_counts}
    drift = DriftStage(
        gold_counts,
        windows=_window_config(config.drift),
        min_count=config.drift.min_count,
        alpha=config.drift.alpha,
        min_jsd=config.drift.min_jsd,
        min_share_change=config.drift.min_share_change,
        min_rate_change=config.drift.min_rate_change,
        terms=config.drift.terms,
        min_term_questions=config.drift.min_term_questions,
        max_terms=config.drift.max_terms,
        known_windows=_known_window_config(config.drift),
        known_min_count=config.drift.known_min_count,
        gold_topic_strata=topic_strata,
        labellers={
            **scope_labeller(scope_stage),
            **topic_labeller(model, fitted=config.topics_model is None, novelty=novelty),
        },
    )
    stages.append(drift)
    totals = AnnotationTotals()
    totals.detector = scope_detector_name(scope_stage)
    totals.band = scope_band_name(scope_stage)
    stages.append(totals)
    if scope_stage is not None:  # a state kept without labellers: the detector it counted under
        drift.recorded_labellers["out_of_scope"] = functools.partial(last_counted_under, totals)
    analytics = Analytics(
        stages=stages,
        drift=drift,
        totals=totals,
        language_labeler=labeler,
        topic_labels=(
            ()
            if model is None
            else (*model.names, NOVEL)
            if model.novelty_on and novelty
            else model.names
        ),
        novelty_off=_novelty_off(model, len(gold) > 0),
        scope_off=scope_off(config, gold, corpus) if scope_stage is None else None,
        scope=calibration,
        topic_model_version=model.version if model is not None else None,
        gold_counts=gold_counts,
        detector_quality=(
            {"novelty": model.novelty_quality}
            if model is not None and model.novelty_quality
            else {}
        ),
        topic_descriptions=model.labels() if model is not None else {},
        quality_floor=config.quality_floor,
        min_balanced_accuracy=config.scope_min_balanced_accuracy,
        quality_min_class=config.quality_min_class,
        family_min_events=config.drift.min_count,
        topic_min_kappa=config.topics.min_kappa,
        language_quality=language_quality(gold, detector),
        topic_quality=model.topic_agreement if model is not None else None,
        language_stage=language_stage,
        language_notice=candidates_notice(detector.config.candidates, detector.excluded),
    )
    if scope_quality is not None:
        analytics.detector_quality["out_of_scope"] = scope_quality
    apply_quality_floor(analytics)
    return analytics


#: State-store key of the unsupervised topic model's identity (ids and centroids).
TOPIC_IDENTITY_KEY = "topics/identity"


def topic_identity(analytics: Analytics) -> dict[str, Any] | None:
    """The running topic model's :meth:`~service.topics.model.TopicModel.identity` (``None``: no
    topic stage, or supervised topics), to keep under :data:`TOPIC_IDENTITY_KEY`."""
    stage = next((st for st in analytics.stages if isinstance(st, TopicStage)), None)
    return None if stage is None else stage.model.identity()


def gold_references(
    analytics: Analytics, config: AnalyticsConfig, gold: GoldSet
) -> tuple[TopicModel | None, dict[str, dict[str, int]], LanguageDetector | None]:
    """Recompute what the analytics derive from the gold set after it changed (an accepted
    suggestion): the topic model refitted on ``gold`` (the configured saved model is kept),
    the language detector rebuilt for the gold set's languages and mix
    (:func:`language_detector`: a question accepted in a new language makes that language
    expected), and the gold set's language and topic counts. CPU-heavy (a fit): call outside
    the pipeline lock, then :func:`apply_gold_references` under it.

    Returns:
        ``(topic model or None when there is no topic stage, gold counts, language detector
        or None when there is no language stage)``.

    Raises:
        ValueError: the model cannot be fitted (too few questions).
    """
    language = next((st for st in analytics.stages if isinstance(st, LanguageStage)), None)
    topics = next((st for st in analytics.stages if isinstance(st, TopicStage)), None)
    counts: dict[str, dict[str, int]] = {}
    detector = None
    if language is not None:
        detector = language_detector(config, gold)
        counts["language"] = _language_counts(gold, detector)
    model = None
    if topics is not None:
        model = (
            topics.model
            if config.topics_model is not None
            else fit_topic_model(
                gold,
                (),
                config.topics,
                config.use_gold_topics,
                embedder=topics.model.embedder,
                previous=topics.model,
            )
        )
        counts["topic"] = _topic_counts(gold, model, novelty_labels(model, config))
    return model, counts, detector


@dataclass(frozen=True)
class ScopeRefresh:
    """An out-of-scope detector recalibrated on a changed gold set (:func:`scope_references`).

    Attributes:
        stage: the rebuilt stage, whose detector, known questions and calibrated flag the
            running stage adopts.
        calibration: its calibration (threshold, rates).
        quality: its measured ROC AUC with interval, or ``None``.
    """

    stage: ScopeStage | EmbeddingScopeStage
    calibration: ScopeCalibration | None
    quality: DetectorQuality | None


def _running_scope(analytics: Analytics) -> ScopeStage | EmbeddingScopeStage | None:
    return next((st for st in analytics.stages
                 if isinstance(st, ScopeStage | EmbeddingScopeStage)), None)  # fmt: skip


def scope_families_of(analytics: Analytics) -> ScopeFamilies | None:
    """The running embedding detector's corpus families (:func:`scope_families`), or
    ``None`` (no such detector, or the corpus labels fewer than two ``doc_type`` values)."""
    stage = _running_scope(analytics)
    return getattr(stage, "families", None) if isinstance(stage, EmbeddingScopeStage) else None


def families_off_text(analytics: Analytics) -> str | None:
    """Why the running embedding detector's verdicts are not broken down by corpus family
    (:func:`scope_families`), or ``None`` (they are, or no embedding detector runs)."""
    stage = _running_scope(analytics)
    if not isinstance(stage, EmbeddingScopeStage) or stage.families is not None:
        return None
    why = ("the corpus labels fewer than two doc_type values (one family is the whole corpus, "
           "which the detector's own figures measure)" if stage.detector.use_corpus
           else "the detector reads no corpus passage")  # fmt: skip
    return f"out-of-scope verdicts are not broken down by corpus family: {why}"


def scope_detector_name(stage: Any) -> str | None:
    """The out-of-scope detector a scope stage applies, as the annotation totals label the
    counts with it (:attr:`~service.pipeline.totals.AnnotationTotals.counted_under`): its
    threshold and, for the embedding detector, its off-corpus cutoffs (4 places, the
    precision a restart or refresh that changes nothing keeps); ``None``: no stage.

    >>> from service.refusals.scope import ScopeCalibration
    >>> stage = ScopeStage.__new__(ScopeStage)
    >>> stage.calibration = ScopeCalibration(7.5, 1.0, 0.0, 1.0, 1.0, 4, 3, "bm25")
    >>> scope_detector_name(stage)
    'bm25 best score, threshold 7.5000'
    """
    if stage is None:
        return None
    detector = getattr(stage, "detector", None)
    if detector is None:
        calibration = stage.calibration
        return f"{calibration.retriever} best score, threshold {calibration.threshold:.4f}"
    support = detector.support
    cutoffs = (", ".join(f"{script} {c:.4f}" for script, c in sorted(support.by_script.items()))
               if support.by_language else f"{support.cutoff:.4f}")  # fmt: skip
    return (
        f"embedding, threshold {detector.calibration.threshold:.4f}, off-corpus cutoff "
        f"{cutoffs or 'none'}"
    )


def scope_labeller(stage: ScopeStage | EmbeddingScopeStage | None) -> dict[str, Labeller]:
    """``{"out_of_scope": labeller}`` of a scope stage (its
    :meth:`~service.refusals.stage.EmbeddingScopeStage.labeller_key` and
    :func:`scope_detector_name`), what the drift stage's ``out_of_scope`` windows count under
    (:meth:`~service.drift.stage.DriftStage.set_labeller`); ``{}`` without a stage."""
    if stage is None:
        return {}
    return {"out_of_scope": Labeller(stage.labeller_key(), scope_detector_name(stage) or "")}


def topic_labeller(model: TopicModel | None, fitted: bool = True, novelty: bool = True
                   ) -> dict[str, Labeller]:  # fmt: skip
    """``{"topic": labeller}`` of a topic model, what the drift stage's ``topic`` windows
    count under (:meth:`~service.drift.stage.DriftStage.set_labeller`): its
    :meth:`~service.topics.model.TopicModel.assignment_key` and, as its name, its kind and
    number of topics (``"unsupervised, 6 topics"``); ``{}`` without a model. An
    unsupervised model ``fitted`` at start (not a saved ``topics_model``) says
    :attr:`~service.drift.stage.Labeller.older_differs`: windows kept by a version before
    content ids counted under other topics (docs/topics.md "Topic ids").

    ``novelty`` False: the novelty detector labels nothing (:func:`novelty_labels`: below
    its quality floor), every question is counted under its nearest topic; the key then
    ends in :data:`NEAREST_KEY` and the name says so. Counts of the two modes are not
    comparable (a state written while ``novel`` was counted, resumed under nearest topics,
    saw the ``novel`` share fall to 0 and alarmed on unchanged traffic: review of s49-novel,
    event 1,311 of the demo), so an upgrade of such a state and a flip of the detector's
    calibration restart the topic windows. The labelling mode of a calibrated detector
    (and of a model whose novelty is off or unmeasured) keeps the bare key: it labels as
    every earlier version did, so its windows are kept."""
    if model is None:
        return {}
    kind = "supervised" if model.supervised else "unsupervised"
    name = f"{kind}, {len(model.names)} topics"
    key = model.assignment_key()
    if not novelty:
        key, name = key + NEAREST_KEY, f"{name}, nearest topics (novelty uncalibrated)"
    return {"topic": Labeller(key, name, older_differs=fitted and not model.supervised)}


#: What ends the topic labeller's key while the novelty detector labels nothing
#: (:func:`topic_labeller`).
NEAREST_KEY = "/nearest"


def _labels_novel(analytics: Analytics, stage: TopicStage) -> bool:
    """Whether the topic stage is to label questions ``novel`` (its
    :attr:`~service.topics.stage.TopicStage.novelty_calibrated`): the novelty detector's
    measured quality reaches its floors (:meth:`Analytics.uncalibrated`, the rule of
    :func:`novelty_labels`); without a measurement the stage's flag as it stands."""
    if "novelty" in analytics.detector_quality:
        return analytics.uncalibrated("novelty") is None
    return stage.novelty_calibrated


def _novelty_flip_why(analytics: Analytics, novelty: bool) -> str:
    """Why the topic windows restart when the novelty detector's calibration flips."""
    if novelty:
        return ("the novelty detector is calibrated now: questions far from the gold set are "
                "labelled novel again instead of under their nearest topic; counts made "
                "under the two are not comparable")  # fmt: skip
    return (f"the novelty detector is uncalibrated now ({analytics.uncalibrated('novelty')}): "
            "it labels no question novel, each is counted under its nearest topic; counts "
            "made under the two are not comparable")  # fmt: skip


def last_counted_under(totals: AnnotationTotals) -> str | None:
    """The out-of-scope detector the restored annotation totals counted under last (the name
    of :attr:`~service.pipeline.totals.AnnotationTotals.counted_under`'s last row, as
    :func:`scope_detector_name` gave it), ``None`` when none: what a drift snapshot kept
    without labellers counted its ``out_of_scope`` windows under
    (:meth:`~service.drift.stage.DriftStage.restored`)."""
    return str(totals.counted_under[-1]["detector"]) if totals.counted_under else None


def scope_restart_why(before: str | None, after: str, notice: str | None) -> str:
    """Why the ``out_of_scope`` drift windows start afresh after a gold-set refresh
    recalibrated the detector (``before``, ``after``: :func:`scope_detector_name`;
    ``notice``: the cutoffs' move, :func:`~service.refusals.scope.support_change`).

    >>> scope_restart_why("a", "b", None)  # doctest: +NORMALIZE_WHITESPACE
    'the out-of-scope detector was recalibrated on the changed gold set (a → b): counts made
    under the two are not comparable'
    >>> scope_restart_why("a", "a", "off-corpus cutoffs moved: Deva 0.668 → 0.515 (x): y")
    ... # doctest: +NORMALIZE_WHITESPACE
    'the out-of-scope detector was recalibrated on the changed gold set (off-corpus cutoffs
    moved: Deva 0.668 → 0.515 (x)): counts made under the two are not comparable'
    """
    if notice:  # (its own "…: live off-corpus … are not comparable" said once, here)
        what = notice.split("): ", 1)[0] + ")" if "): " in notice else notice
    elif before and before != after:
        what = f"{before} → {after}"
    else:  # (the regression or the known questions: the names show cutoffs and threshold)
        what = "its regression or known questions changed"
    return (
        f"the out-of-scope detector was recalibrated on the changed gold set ({what}): "
        "counts made under the two are not comparable"
    )


def scope_band_name(stage: Any) -> str | None:
    """The off-corpus cutoff's range an embedding scope stage marks unstable verdicts by, as
    the annotation totals name the range their unstable counts run under
    (:attr:`~service.pipeline.totals.AnnotationTotals.band`: 4 places, so a restart or
    refresh that refits the same range keeps counting); ``None``: no stage, a detector
    without an off-corpus rule, or a range not measured.

    >>> from service.refusals.scope import SupportCheck
    >>> stage = ScopeStage.__new__(ScopeStage)
    >>> support = SupportCheck(0.3, 0.0, 1.0, 40, 12, band=(0.25, 0.4))
    >>> stage.detector = type("Detector", (), {"support": support})()
    >>> scope_band_name(stage)
    '[0.2500, 0.4000]'
    """
    support = getattr(getattr(stage, "detector", None), "support", None)
    if support is None:
        return None
    return band_text(support._asdict(), places=4) or None


def counted_under_text(rows: Sequence[Mapping[str, Any]], scored: int) -> str | None:
    """The notice that the scope counts since the first start were counted under more than
    one out-of-scope detector (``rows``: :attr:`AnnotationTotals.counted_under`; ``scored``:
    the ``scope_scored`` total), or ``None`` (one detector, or none named).

    >>> print(counted_under_text([{"detector": "A", "from_scored": 0},
    ...                           {"detector": "B", "from_scored": 40}], 100))
    ... # doctest: +NORMALIZE_WHITESPACE
    out-of-scope counts since the first start come from 2 detectors: 40 scored under A, 60
    under B (now): the bounds on what their error explains sum each one's own rates over its
    own counts; the quality shown is the last one's
    """
    if not rows or (len(rows) == 1 and int(rows[0]["from_scored"]) == 0):
        return None
    parts = []
    if int(rows[0]["from_scored"]) > 0:
        parts.append(f"{rows[0]['from_scored']} scored before the detector was recorded")
    for i, row in enumerate(rows):
        end = int(rows[i + 1]["from_scored"]) if i + 1 < len(rows) else scored
        n = end - int(row["from_scored"])
        now = " (now)" if i + 1 == len(rows) else ""
        parts.append(f"{n} {'scored ' if i == 0 else ''}under {row['detector']}{now}")
    k = len(rows) + (int(rows[0]["from_scored"]) > 0)  # an unrecorded one before them
    return (
        f"out-of-scope counts since the first start come from {k} detectors: "
        f"{', '.join(parts)}: the bounds on what their error explains sum each one's own "
        "rates over its own counts; the quality shown is the last one's"
    )


def scope_support(analytics: Analytics) -> dict[str, Any] | None:
    """The running embedding detector's :class:`~service.refusals.scope.SupportCheck` as a
    JSON-able dict, or ``None`` (no detector, or the retriever-score one, which has none)."""
    stage = _running_scope(analytics)
    support = getattr(getattr(stage, "detector", None), "support", None)
    return None if support is None else support._asdict()


def misjudged_of(analytics: Analytics) -> MisjudgedAnswerable | None:
    """The running out-of-scope detector's misjudged answerable gold rows
    (:func:`~service.evaluation.detector_quality.misjudged_answerable`), or ``None`` (no
    detector, or no operating point)."""
    quality = analytics.detector_quality.get("out_of_scope")
    if quality is None:
        return None
    return misjudged_answerable(quality.as_dict(), scope_support(analytics))


def scope_judge(analytics: Analytics) -> dict[str, Any] | None:
    """What judges the running out-of-scope detector's counts, as the annotation totals keep
    it with each detector version (:attr:`~service.pipeline.totals.AnnotationTotals.judge`):
    ``{"calibrated": bool, "uncalibrated": why not (:meth:`Analytics.uncalibrated`) or None,
    "misjudged_unanswerable": {"count", "of", "upper"} or None, "misjudged_answerable":
    {"count", "of", "upper", "by_score", "by_off_corpus"} or None}``; ``None`` without a
    running scope stage."""
    if _running_scope(analytics) is None:
        return None
    why = analytics.uncalibrated("out_of_scope")
    let_in, misjudged = misjudged_unanswerable_of(analytics), misjudged_of(analytics)
    return {"calibrated": why is None, "uncalibrated": why,
            "misjudged_unanswerable": None if let_in is None else let_in.as_dict(),
            "misjudged_answerable": None if misjudged is None else misjudged.as_dict()}  # fmt: skip


def misjudged_unanswerable_of(analytics: Analytics) -> MisjudgedUnanswerable | None:
    """The running out-of-scope detector's misjudged unanswerable gold rows
    (:func:`~service.evaluation.detector_quality.misjudged_unanswerable`), or ``None`` (no
    detector, or no operating point)."""
    quality = analytics.detector_quality.get("out_of_scope")
    if quality is None:
        return None
    return misjudged_unanswerable(quality.as_dict())


def scope_references(
    analytics: Analytics, config: AnalyticsConfig, gold: GoldSet, corpus: Corpus
) -> ScopeRefresh | None:
    """Recalibrate the running out-of-scope detector on the changed ``gold`` set (an accepted
    suggestion: a new unanswerable row is a known out-of-scope question from now on, and the
    detector's features, threshold and measured quality include it). CPU-heavy (embeds the
    gold set and the corpus, cross-validates): call outside the pipeline lock, then
    :func:`apply_scope_references` under it. The running stage's retriever is reused.

    Returns:
        ``None`` when there is no running scope stage (a stage that was off at start — e.g.
        fewer than 2 unanswerable rows then — needs a restart to be added) or the new gold
        set no longer supports one (the running detector stays; logged).
    """
    running = _running_scope(analytics)
    if running is None:
        return None
    topics = next((st for st in analytics.stages if isinstance(st, TopicStage)), None)
    embedder = topics.model.embedder if topics is not None else None
    stage, calibration, quality = _scope_stage(config, gold, corpus, embedder, running.retriever)
    if stage is None or type(stage) is not type(running):
        log.warning("out-of-scope detector not recalibrated on the changed gold set; the "
                    "running one stays until a restart")  # fmt: skip
        return None
    if quality is not None:
        stage.calibrated = quality.trusted(config.quality_floor, config.scope_min_balanced_accuracy,
                                           config.quality_min_class)  # fmt: skip
    new = getattr(getattr(stage, "detector", None), "support", None)
    if isinstance(stage, EmbeddingScopeStage) and isinstance(new, SupportCheck):
        old = getattr(getattr(running, "detector", None), "support", None)
        change = support_change(old if isinstance(old, SupportCheck) else None, new,
                                f"gold-set refresh, {len(gold)} rows")  # fmt: skip
        stage.detector.support = new._replace(change=change)
        if change is not None:
            log.warning("%s", change)
    return ScopeRefresh(stage, calibration, quality)


def apply_scope_references(analytics: Analytics, refresh: ScopeRefresh) -> None:
    """Swap in what :func:`scope_references` computed (call with the pipeline lock held): the
    running stage adopts the new detector, ``analytics.scope`` and the detector's quality are
    replaced, and the quality floor is applied again (drift suppression follows the new AUC).

    Raises:
        TypeError: the running stage is of another method than ``refresh.stage``.
    """
    running = _running_scope(analytics)
    if running is None:
        return
    before = scope_detector_name(running)
    running.adopt(refresh.stage)  # type: ignore[arg-type]
    analytics.scope = refresh.calibration
    support = getattr(getattr(refresh.stage, "detector", None), "support", None)
    analytics.scope_notice = getattr(support, "change", None)
    if analytics.drift is not None:  # counts of two detectors are not comparable (trial 48 H1)
        for dim, labeller in scope_labeller(running).items():
            analytics.drift.set_labeller(
                dim, labeller, scope_restart_why(before, labeller.name, analytics.scope_notice)
            )
    if analytics.totals is not None:
        analytics.totals.detector = scope_detector_name(running)
        analytics.totals.band = scope_band_name(running)
    if refresh.quality is not None:
        analytics.detector_quality["out_of_scope"] = refresh.quality
    apply_quality_floor(analytics)


def apply_gold_references(
    analytics: Analytics,
    model: TopicModel | None,
    counts: dict[str, dict[str, int]],
    detector: LanguageDetector | None = None,
    agreement: dict[str, Any] | None = None,
    topic_strata: dict[str, dict[str, int]] | None = None,
) -> None:
    """Swap in what :func:`gold_references` computed (call with the pipeline lock held):
    the topic stage's model (its cache cleared), the language stage's detector, the drift
    stage's gold counts, and the notice of left-out languages (the candidates include the
    gold set's languages). (The language *label* set stays as at start, so the metric
    series stay bounded: a language new to the gold set is labelled ``other`` on the
    ``language`` metric label until a restart.) ``agreement``: the new detector's
    :func:`language_quality` on the changed gold set; ``topic_strata``: the changed gold
    set's :func:`gold_topic_strata` (``None`` with a new model: the topic comparison with
    the gold set is no longer standardised, its strata would name the old model's topics)."""
    if detector is not None and agreement is not None:
        analytics.language_quality = agreement
    if detector is not None:  # a new gold-set language is a candidate from now on
        analytics.language_notice = candidates_notice(detector.config.candidates,
                                                      detector.excluded)  # fmt: skip
    for stage in analytics.stages:
        if isinstance(stage, LanguageStage) and detector is not None:
            stage.detector = detector
        if isinstance(stage, TopicStage) and model is not None:
            stage.model = model
            stage.cache.clear()
        if isinstance(stage, TopicStage) and "language" in counts:
            stage.gold_languages = gold_language_keys(counts["language"])
    if model is not None and model.novelty_quality is not None:  # (its labelling mode below)
        analytics.detector_quality["novelty"] = model.novelty_quality
    if analytics.drift is not None:
        if model is not None:  # counts under two topic models are not comparable
            topics = next((s for s in analytics.stages if isinstance(s, TopicStage)), None)
            novelty = topics is None or _labels_novel(analytics, topics)
            for dim, labeller in topic_labeller(model, novelty=novelty).items():
                known = analytics.drift.labellers.get(dim)
                if known is not None and known.key.removesuffix(NEAREST_KEY) == (
                    labeller.key.removesuffix(NEAREST_KEY)
                ):  # the same topics: only the novelty verdict's mode may have flipped
                    why = _novelty_flip_why(analytics, novelty)
                else:
                    why = (f"the topic model changed ({len(model.names)} topics): the gold "
                           "set changed")  # fmt: skip
                analytics.drift.set_labeller(dim, labeller, why)
        analytics.drift.set_gold_counts(counts)
        if topic_strata is not None or model is not None:
            analytics.drift.set_topic_strata(topic_strata)
    analytics.gold_counts = {**analytics.gold_counts, **counts}
    if model is not None:
        analytics.topic_model_version = model.version
        analytics.topic_descriptions = model.labels()
        analytics.topic_quality = model.topic_agreement
        apply_quality_floor(analytics)  # the refitted model's novelty and language bias
