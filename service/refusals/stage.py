"""The refusal and out-of-scope pipeline stages: adapters from a batch of events to the
refusal detector (:mod:`service.refusals.detector`) and to the out-of-scope detectors
(:mod:`service.refusals.scope`), writing each event's verdicts into its annotations."""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import blake2b
from typing import TYPE_CHECKING, Any

import numpy as np

from service.language.gold import judged_language, lacks_gold
from service.pipeline import Batch, StatelessStage
from service.pipeline.batch_cache import BatchCache
from service.refusals.detector import RefusalDetector, answer_text
from service.refusals.families import ScopeFamilies
from service.refusals.languages import ScopeLanguages
from service.refusals.recall import missed_wording
from service.refusals.scope import (
    EmbeddingScope,
    KnownScope,
    ScopeCalibration,
    best_score,
    crossed,
    event_score,
    unstable_verdicts,
)
from service.text.subject import subject

if TYPE_CHECKING:
    from service.events import QueryLogEvent
    from service.retrievers.base import Retriever

__all__ = ["EmbeddingScopeStage", "RefusalStage", "ScopeStage", "annotate_scope"]


class RefusalStage(StatelessStage):
    """Pipeline stage writing ``annotations[i]["refused"]``: ``True``/``False``, or ``None``
    when the event has no answer at all. ``answer.refused`` wins when set; otherwise the
    detector reads ``answer.text`` (empty text counts as a refusal), one batched call.
    ``annotations[i]["refused_by"]`` says which decided an answer: ``"flag"`` or
    ``"patterns"`` (absent without an answer). An answer that sets ``answer.refused`` and
    has a non-blank text gets ``annotations[i]["text_refused"]`` too: what the detector reads
    in its text (the same batched call), so the totals can measure the patterns against the
    producer's own flag per language (trial 23: German refusals the patterns missed while
    the reports quoted NoMIRACL's English figures); it changes no verdict. With
    ``keep_missed`` (the PII stage runs first, so texts are scrubbed), a flagged refusal whose
    text the detector does not read as one gets ``annotations[i]["missed_text"]``: its
    wording (:func:`~service.refusals.recall.missed_wording`), which the totals count so the
    report can name the app's wordings the patterns lack (trial 40), and
    ``annotations[i]["missed_to"]``: its asker, as a 16-hex-digit BLAKE2b digest of ``user.id``
    as the PII stage left it (else of the event's id: its own asker), which the totals keep
    instead of the id, so a wording is named only once said to several askers (a
    refusal addressing its asker by a name the scrubber keeps is said to one).
    """

    name = "refusal"

    def __init__(self, detector: RefusalDetector | None = None, keep_missed: bool = False) -> None:
        self.detector = detector or RefusalDetector()
        self.keep_missed = keep_missed

    def process(self, batch: Batch) -> None:
        parsed = [answer_text(event) for event in batch.events]
        todo = [i for i, (has, _, flag) in enumerate(parsed) if has and flag is None]
        checked = [i for i, (has, text, flag) in enumerate(parsed)
                   if has and flag is not None and text is not None and text.strip()]  # fmt: skip
        verdicts = self.detector.is_refusal_many([parsed[i][1] for i in (*todo, *checked)])
        for notes, (has, _, flag) in zip(batch.annotations, parsed, strict=True):
            notes["refused"] = flag if has else None
            if has and flag is not None:
                notes["refused_by"] = "flag"
        for i, verdict in zip(todo, verdicts, strict=False):
            batch.annotations[i]["refused"] = verdict
            batch.annotations[i]["refused_by"] = "patterns"
        keep = self.keep_missed
        for i, verdict in zip(checked, verdicts[len(todo) :], strict=True):
            batch.annotations[i]["text_refused"] = verdict
            if keep and not verdict and parsed[i][2] is True:  # a flagged refusal missed
                batch.annotations[i]["missed_text"] = missed_wording(parsed[i][1] or "")
                event = batch.events[i]  # who it was said to: a digest, never the id itself
                user = event.user.id if event.user is not None else None
                asker = f"user {user}" if user else f"event {event.event_id}"
                batch.annotations[i]["missed_to"] = blake2b(asker.encode(),
                                                            digest_size=8).hexdigest()  # fmt: skip


class ScopeStage(StatelessStage):
    """Pipeline stage writing, per event, ``scope_score`` (float or ``None``),
    ``out_of_scope`` (bool, or ``None`` without a score), ``over_refusal`` and
    ``under_refusal`` (see :func:`crossed`; reads ``annotations[i]["refused"]``).

    Args:
        calibration: from :func:`calibrate_from_run` / :func:`calibrate_with_retriever`.
        retriever: score questions with this retriever (one ``search_batch`` per batch)
            instead of the events' own production scores; it must be the calibrated one.
        k: depth asked of ``retriever``.
        known: known questions that decide their own scope (:class:`KnownScope`); ``None``:
            none.
        cache_size: distinct questions whose score is remembered (LRU,
            ``analytics.question_cache_size``; 0: none).

    Raises:
        ValueError: ``retriever`` is not the one ``calibration`` was made with, or ``k < 1``.
    """

    name = "scope"

    def __init__(
        self,
        calibration: ScopeCalibration,
        retriever: Retriever | None = None,
        k: int = 10,
        known: KnownScope | None = None,
        cache_size: int = 65_536,
    ) -> None:
        if k < 1:
            raise ValueError(f"k must be >= 1, got {k}")
        if retriever is not None and calibration.retriever not in (None, retriever.name):
            raise ValueError(
                f"calibrated on {calibration.retriever!r}, asked to score with {retriever.name!r}"
            )
        self.calibration = calibration
        self.retriever = retriever
        self.k = k
        self.known = known
        self.calibrated = True  # False: below the quality floor (see annotate_scope)
        self.cache: BatchCache[float | None] = BatchCache(cache_size)

    def adopt(self, rebuilt: ScopeStage) -> None:
        """Take ``rebuilt``'s calibration, known questions and calibrated flag (a gold-set
        refresh: same retriever and corpus, so the cached retriever scores stay valid).

        Raises:
            TypeError: ``rebuilt`` is not a :class:`ScopeStage` (the method changed: restart).
        """
        if not isinstance(rebuilt, ScopeStage):
            raise TypeError(f"cannot adopt a {type(rebuilt).__name__} into a ScopeStage")
        self.calibration, self.known = rebuilt.calibration, rebuilt.known
        self.calibrated = rebuilt.calibrated

    def labeller_key(self) -> str:
        """What this stage's verdicts depend on (16 hex chars): the retriever and the
        calibrated threshold, and the known questions (:attr:`KnownScope.key`); the drift
        stage's ``out_of_scope`` windows restart when it changes
        (:meth:`~service.drift.stage.DriftStage.set_labeller`)."""
        calibration = self.calibration
        known = self.known.key if self.known is not None else ""
        blob = f"retriever\t{calibration.retriever}\t{calibration.threshold!r}\t{known}"
        return blake2b(blob.encode("utf-8"), digest_size=8).hexdigest()

    def scores(self, events: Sequence[QueryLogEvent]) -> list[float | None]:
        """Best score per event, from the built-in retriever or the events themselves."""
        if self.retriever is None:
            return [event_score(e, self.calibration.retriever) for e in events]
        retriever, k = self.retriever, self.k
        fast = getattr(retriever, "best_scores", None)

        def best(questions: list[str]) -> list[float | None]:
            if fast is not None:  # the best score without building result lists
                return list(fast(questions))
            return [best_score(found) for found in retriever.search_batch(questions, k)]

        return self.cache.get_many([subject(e.question) for e in events], best) if events else []

    def process(self, batch: Batch) -> None:
        scores = self.scores(batch.events)
        known = (self.known.verdicts([subject(e.question) for e in batch.events]) if self.known
                 else [(None, None)] * len(scores))  # fmt: skip
        for notes, score, k in zip(batch.annotations, scores, known, strict=True):
            inside = self.calibration.in_scope(score)
            annotate_scope(notes, score, None if inside is None else not inside, k,
                           self.calibrated)  # fmt: skip


def annotate_scope(
    notes: dict[str, Any],
    score: float | None,
    out: bool | None,
    known: tuple[str | None, bool | None],
    calibrated: bool = True,
) -> None:
    """Write one event's ``scope_score``, ``scope_known``, ``out_of_scope`` (a known
    question's own answerability wins over ``out``; ``out_of_scope_stable`` the same, the
    verdict the drift dimension tests), :func:`crossed`, and
    ``scope_calibrated``: whether the verdict is a fact — the detector reaches the quality
    floor (``calibrated``), or the gold set itself decided (a known question). Harvesting
    suggests "answered out of scope" only on calibrated verdicts."""
    gold_id, inside = known
    notes["scope_score"] = score
    notes["scope_known"] = gold_id
    notes["out_of_scope"] = (not inside) if inside is not None else out
    # what the out_of_scope drift dimension tests: the verdict, unless the off-corpus
    # cutoff's range moves it (EmbeddingScopeStage sets None then: scope_unstable)
    notes["out_of_scope_stable"] = notes["out_of_scope"]
    notes["scope_calibrated"] = calibrated or inside is not None
    notes.update(crossed(notes.get("refused"), notes["out_of_scope"]))


#: a question's ``(probability in scope, off-corpus, judged by the off-corpus rule, known
#: verdict, its language has gold rows, its verdict depends on the off-corpus cutoff's draw,
#: its family or ``None``)``
Verdict = tuple[float, bool, bool, tuple[str | None, bool | None], bool, bool, str | None]


class EmbeddingScopeStage(StatelessStage):
    """Pipeline stage of :class:`EmbeddingScope`: writes per event ``scope_score``
    (probability in scope), ``out_of_scope`` (bool), ``scope_known`` (the near-duplicated gold
    question's id, or ``None``), ``off_corpus`` (bool: outside the detector's support, so out
    of scope whatever the regression says: :class:`~service.refusals.scope.SupportCheck`),
    ``scope_calibrated`` (:func:`annotate_scope`) and
    ``over_refusal`` / ``under_refusal`` (:func:`crossed`,
    reading ``annotations[i]["refused"]``: run :class:`RefusalStage`
    first).

    A question in a language no gold row is written in gets no verdict
    (``out_of_scope`` ``None``, ``scope_unjudged_language`` ``True``) unless a known question
    decides it: the rule the topic stage follows (:mod:`service.language.gold`: a ``zh-Hans``
    gold row judges live ``zh``; a question is in the left-out language it reads as,
    ``language_excluded``, before its ``language`` label).

    Args:
        detector: the calibrated detector.
        retriever: the built-in retriever whose best score is the detector's fourth feature
            (required when the detector uses one; must be the one it was calibrated with).
        known: known questions that decide their own scope (:class:`KnownScope`); ``None``:
            none.
        cache_size: distinct questions whose score is remembered (LRU,
            ``analytics.question_cache_size``; 0: none).

    Raises:
        ValueError: the detector needs a retriever and none (or another one) is given.
    """

    name = "scope"

    def __init__(
        self,
        detector: EmbeddingScope,
        retriever: Retriever | None = None,
        known: KnownScope | None = None,
        cache_size: int = 65_536,
    ) -> None:
        if detector.use_retriever and (retriever is None or retriever.name != detector.retriever):
            raise ValueError(f"the detector was calibrated with retriever {detector.retriever!r}")
        self.detector = detector
        self.retriever = retriever if detector.use_retriever else None
        self.known = known
        self.calibrated = True  # False: below the quality floor (see annotate_scope)
        self.cache: BatchCache[float | None] = BatchCache(cache_size)
        # question -> (probability in scope, known verdict): both depend on the question
        # alone (its retriever score too) for one detector and set of known questions, so a
        # repeated question is scored once; forgotten when either is replaced. (The BLAS
        # product gives a row's probability to within 1 ulp of where it sits in its batch:
        # 31 of 40,000 production-shaped questions differed by <= 2.2e-16 from scoring each
        # in its own batch, no verdict changed; the topic stage's cache has the same trait.)
        self.verdicts: BatchCache[Verdict] = BatchCache(cache_size)
        self._scored_by: tuple[EmbeddingScope, KnownScope | None] = (detector, known)
        #: the corpus families the verdicts are broken down by (``scope_family``:
        #: :mod:`service.refusals.families`); ``None``: none (set by the builder)
        self.families: ScopeFamilies | None = None
        #: the gold rows by language and the measured language confound
        #: (:mod:`service.refusals.languages`); ``None``: not measured (set by the builder)
        self.languages: ScopeLanguages | None = None

    def adopt(self, rebuilt: EmbeddingScopeStage) -> None:
        """Take ``rebuilt``'s detector, known questions and calibrated flag (a gold-set
        refresh: the cached retriever scores stay valid, as the corpus did not change).

        Raises:
            TypeError: ``rebuilt`` is not an :class:`EmbeddingScopeStage` (restart instead).
        """
        if not isinstance(rebuilt, EmbeddingScopeStage):
            raise TypeError(f"cannot adopt a {type(rebuilt).__name__} into an "
                            "EmbeddingScopeStage")  # fmt: skip
        if rebuilt.retriever is not None and self.retriever is None:
            self.retriever = rebuilt.retriever
        self.detector, self.known = rebuilt.detector, rebuilt.known
        self.calibrated = rebuilt.calibrated
        self.families = rebuilt.families
        self.languages = rebuilt.languages

    def labeller_key(self) -> str:
        """What this stage's verdicts depend on (16 hex chars): the detector's
        (:meth:`~service.refusals.scope.EmbeddingScope.verdict_key`) and the known questions'
        (:attr:`KnownScope.key`); the drift stage's ``out_of_scope`` windows restart when it
        changes (:meth:`~service.drift.stage.DriftStage.set_labeller`)."""
        known = self.known.key if self.known is not None else ""
        blob = f"embedding\t{self.detector.verdict_key()}\t{known}"
        return blake2b(blob.encode("utf-8"), digest_size=8).hexdigest()

    def _retriever_scores(self, questions: list[str]) -> list[float | None] | None:
        """The built-in retriever's best score per question (remembered in ``cache``), or
        ``None`` when the detector does not read it (the retriever is not run)."""
        if self.retriever is None or not self.detector.reads_retriever:
            return None  # the chosen features leave the retriever's score out: not run
        return self._best_scores(questions)

    def _best_scores(self, questions: list[str]) -> list[float | None]:
        """The built-in retriever's best score per question, remembered in ``cache``.

        Raises:
            ValueError: the stage has no retriever.
        """
        retriever = self.retriever
        if retriever is None:
            raise ValueError("the stage has no retriever")
        fast = getattr(retriever, "best_scores", None)

        def best(batch: list[str]) -> list[float | None]:
            if fast is not None:
                return list(fast(batch))
            return [best_score(found) for found in retriever.search_batch(batch, 1)]

        return self.cache.get_many(questions, best)

    def _verdicts(self, asked: list[str]) -> list[Verdict]:
        """``(probability in scope, off-corpus, judged by the off-corpus rule, known
        verdict, its language has gold rows, unstable, family)`` (:data:`Verdict`; the family
        of its nearest passage with :attr:`families`, else ``None``) of distinct ``asked`` keys
        ``"language\tquestion"`` (the language it is judged in,
        :func:`~service.language.gold.judged_language`; the off-corpus cutoff is its language's:
        :meth:`~service.refusals.scope.EmbeddingScope.cutoffs`; a language label has no
        tab): one embedding call, one product per feature and one known-question match for
        all."""
        pairs = [key.split("\t", 1) for key in asked]
        questions = [question for _, question in pairs]
        languages: list[str | None] = [language or None for language, _ in pairs]
        cutoffs = self.detector.cutoffs(questions, languages)
        detector = self.detector
        families = self.families
        nearest: list[np.ndarray] | None = [] if families is not None else None
        # the nearest passages only asked for with families (the same call without them)
        extra: dict[str, Any] = {} if nearest is None else {"nearest_out": nearest}
        if self.retriever is None or not detector.reads_retriever:
            proba, off, support = detector.score_with_support(questions, None, languages,
                                                              cutoffs, **extra)  # fmt: skip
        else:  # retrieved for the questions inside the detector's support only
            proba, off, support = detector.score_with_support(
                questions, None, languages, cutoffs, retrieve=self._best_scores, **extra
            )
        family: list[str | None] = (families.family_of(nearest[0]) if families and nearest
                                    else [None] * len(questions))  # fmt: skip
        judged = np.isfinite(cutoffs)
        # verdicts the off-corpus cutoff's range moves (scope.unstable_verdicts)
        unstable = unstable_verdicts(support, *detector.bands(cutoffs), off, proba,
                                     detector.calibration.threshold)  # fmt: skip
        known = self.known.verdicts(questions) if self.known else [(None, None)] * len(proba)
        gold_languages = self.detector.gold_languages()
        has_gold = [not lacks_gold(language, gold_languages) for language in languages]
        return list(zip(proba.tolist(), off.tolist(), judged.tolist(), known, has_gold,
                        unstable.tolist(), family, strict=True))  # fmt: skip

    def process(self, batch: Batch) -> None:
        threshold = self.detector.calibration.threshold
        scorers = (self.detector, self.known)
        if scorers[0] is not self._scored_by[0] or scorers[1] is not self._scored_by[1]:
            self.verdicts.clear()  # scored by the detector or known questions replaced
            self._scored_by = scorers
        # each question in the language it is judged in (a left-out one it reads as first:
        # the topic stage's rule, service.language.gold)
        asked = [f"{judged_language(notes) or ''}\t{subject(e.question)}"
                 for e, notes in zip(batch.events, batch.annotations, strict=True)]  # fmt: skip
        found = self.verdicts.get_many(asked, self._verdicts)
        calibrated = self.calibrated
        with_family = self.families is not None
        for notes, (p, off, judged, k, has_gold, unstable, family) in zip(
            batch.annotations, found, strict=True
        ):
            inside = k[1]
            if with_family:  # the family of its nearest passage (service.refusals.families)
                notes["scope_family"] = family
            # unjudged: a language no gold row is written in: neither the regression nor the
            # off-corpus rule was fitted on it (trial 12: 300 answerable Hindi questions
            # to an English/Spanish gold set were all "out of scope", and a rise of German
            # raised an out-of-scope drift alarm). Not judged, and counted as such.
            unjudged = not has_gold and inside is None
            annotate_scope(notes, p, None if unjudged else off or p < threshold, k, calibrated)
            if unjudged:
                notes["off_corpus"] = False
                notes["off_corpus_judged"] = None
                notes["scope_unjudged_language"] = True
                continue
            # off-corpus: outside the detector's support (SupportCheck), unless a known
            # question decided its scope
            notes["off_corpus"] = off and inside is None
            # not judged by the off-corpus rule: its language (and script) has no cutoff
            notes["off_corpus_judged"] = judged or inside is not None
            # a verdict the off-corpus cutoff's range moves (another draw of as many
            # answerable gold rows would give another: trial 37b, M3): counted, and left out
            # of the out_of_scope drift dimension, which tests the verdicts that stand
            notes["scope_unstable"] = unstable = unstable and inside is None
            if unstable:
                notes["out_of_scope_stable"] = None
