"""The language pipeline stage: the adapter from a batch of events to the detector
(:mod:`service.language.detector`), writing each question's language into its annotations
and keeping the live baseline's language mix as state, and — when the candidates leave
languages out — the count of questions that read as one of them."""

from __future__ import annotations

from collections import Counter
from typing import Any

from service.language.detector import UNDETERMINED, LanguageDetector, LanguageLabeler
from service.pipeline import Batch

__all__ = ["BASELINE_MIN_COUNT", "BASELINE_MIN_SHARE", "LanguageStage"]


#: A language is in the live baseline's mix once it makes at least this share of the
#: supported labels seen so far (and :data:`BASELINE_MIN_COUNT` of them).
BASELINE_MIN_SHARE = 0.05
BASELINE_MIN_COUNT = 5


class LanguageStage:
    """Pipeline stage: ``batch.annotations[i]["language"]`` = the language of event i's question.

    With a ``labeler`` it also writes ``"language_label"``, the bounded metric label. Never
    raises on any question text; events are never dropped.

    When the detector has no expected languages (``config.preferred`` empty: none configured
    and no gold set), the live baseline's mix is the prior of unsupported labels: the
    languages that make at least :data:`BASELINE_MIN_SHARE` (and :data:`BASELINE_MIN_COUNT`)
    of the supported labels of the events before, in arrival order — each event is judged
    with the prior of every event before it, updated event by event, so an event's label
    does not depend on how the events were batched (``pipeline.max_batch_size``, a serve's
    timing, a replay: the same file gives the same labels; until the forty-third session
    the prior was taken once per batch, and a file of 103 short questions came out en 103
    at batches of 7, en 63 / und 40 at 500). Measured on real short questions without a
    gold set (CLINC150, Hinglish-TOP test, XQuAD en/hi/es), this is the accuracy of the old
    rule at a batch of one, the best of the rules tried (a prior fixed at every 64th or
    256th event lost up to 13 points on the first 100 events). State: ``{"supported":
    {lang: count}}``, kept across restarts (a snapshot between batches holds every earlier
    event, so a restart labels as an unbroken run).

    With expected languages (the usual case: a gold set) a question's label depends on its
    text alone (asked of :meth:`LanguageDetector.detect`, the label without the support flag,
    which spares langdetect runs only the flag would need), so the labels of recent
    questions as asked are remembered (up to the
    detector's ``config.cache_size`` questions, then afresh; forgotten when the detector is
    replaced): a repeated question costs a look-up, not the normalisation and the detector's
    own cache (keyed by the normalised text).

    When the detector's candidates leave languages out (:attr:`LanguageDetector.excluded`,
    e.g. ``[en, de]``), every question is also judged for reading as one of them
    (:meth:`LanguageDetector.excluded_language`): ``annotations[i]["language_excluded"]``
    is set to that language on the questions that do, and :attr:`judged` and
    :attr:`excluded` count them since the first start, for the candidates they were counted
    under (a restart or gold-set refresh with other candidates starts them afresh). With
    candidates that leave nothing out (the default) nothing of this runs.
    """

    name = "language"

    def __init__(
        self, detector: LanguageDetector | None = None, labeler: LanguageLabeler | None = None
    ) -> None:
        self.detector = detector or LanguageDetector()
        self.labeler = labeler
        self._supported: dict[str, int] = {}
        self._total = 0  # sum of _supported
        self._prior: tuple[str, ...] = ()  # baseline_prior() of _supported
        self._labels: dict[str, str] = {}  # question as asked -> label (expected languages)
        self._labelled_by: LanguageDetector = self.detector
        #: questions judged for a left-out language, and those that read as one, by it
        self.judged = 0
        self.excluded: Counter[str] = Counter()
        self._counted_for: tuple[str, ...] = self.detector.config.candidates
        self._pending: Counter[str] = Counter()  # not yet taken by the metrics
        self._counts: tuple[int, dict[str, int]] = (0, {})  # read by other threads

    @property
    def supported(self) -> dict[str, int]:
        """The supported labels counted so far, ``{language: events}`` (a copy: set it
        whole, as :meth:`restore` does, to change it)."""
        return dict(self._supported)

    @supported.setter
    def supported(self, counts: dict[str, int]) -> None:
        self._supported = dict(counts)
        self._total = sum(self._supported.values())
        self._prior = self.baseline_prior()

    def baseline_prior(self) -> tuple[str, ...]:
        """The live baseline's languages, most frequent first (ties by code): those with at
        least :data:`BASELINE_MIN_COUNT` supported labels and :data:`BASELINE_MIN_SHARE` of
        all of them."""
        total = sum(self._supported.values())
        ranked = sorted(self._supported.items(), key=lambda item: (-item[1], item[0]))
        return tuple(lang for lang, n in ranked
                     if n >= BASELINE_MIN_COUNT and n >= BASELINE_MIN_SHARE * total)  # fmt: skip

    def _count(self, language: str) -> None:
        """Count one more supported ``language`` and bring the prior up to date.

        :meth:`baseline_prior` is computed again only when one more ``language`` could
        change it: ``language`` now qualifies and is not in it yet, or is in it behind a
        language it may now tie with or pass, or the prior's last language (its fewest)
        has fallen below :data:`BASELINE_MIN_SHARE` of the new total. Otherwise the order
        stands (``language`` stays behind a language with more), the last language still
        has the fewest and still makes the share, so every other one does
        (``tests/service/test_language_batching.py`` checks the prior against the rule
        before every event of random streams)."""
        counts = self._supported
        n = counts.get(language, 0) + 1
        counts[language] = n
        self._total = total = self._total + 1
        prior = self._prior
        if language in prior:
            place = prior.index(language)
            stale = place > 0 and counts[prior[place - 1]] <= n
        else:
            stale = n >= BASELINE_MIN_COUNT and n >= BASELINE_MIN_SHARE * total
        if stale or (prior and counts[prior[-1]] < BASELINE_MIN_SHARE * total):
            self._prior = self.baseline_prior()

    def process(self, batch: Batch) -> None:
        detector = self.detector
        if detector.config.preferred:
            self._label_known(batch)
        else:  # each event judged with the prior of the events before it (batch-independent)
            detect, labeler = detector.detect_with_support, self.labeler
            for event, annotation in zip(batch.events, batch.annotations, strict=True):
                language, supported = detect(event.question, self._prior)
                if supported and language != UNDETERMINED:
                    self._count(language)
                annotation["language"] = language
                if labeler is not None:
                    annotation["language_label"] = labeler.label(language)
        if detector.excluded:  # candidates narrower than the defaults (empty: no cost)
            self._judge_excluded(batch, detector)

    def _judge_excluded(self, batch: Batch, detector: LanguageDetector) -> None:
        """Count the batch's questions that read as a language the candidates leave out
        (annotated ``language_excluded``); the counts start afresh under other candidates."""
        if detector.config.candidates != self._counted_for:
            self._restart_counts(detector.config.candidates)
        check, excluded, pending = detector.excluded_language, self.excluded, self._pending
        for event, annotation in zip(batch.events, batch.annotations, strict=True):
            guess = check(event.question, annotation["language"])
            if guess is not None:
                annotation["language_excluded"] = guess
                excluded[guess] += 1
                pending[guess] += 1
        self.judged += len(batch.events)
        self._counts = (self.judged, dict(excluded.most_common()))

    def _restart_counts(self, candidates: tuple[str, ...]) -> None:
        self.judged, self.excluded, self._counted_for = 0, Counter(), candidates
        self._counts = (0, {})

    def excluded_counts(self) -> tuple[int, dict[str, int]]:
        """``(judged, {left-out language: questions})`` under the current detector's
        candidates, most first; ``(0, {})`` when they leave nothing out or nothing was
        judged under them yet. Safe to call from another thread (a snapshot per batch)."""
        judged, counts = self._counts
        if not self.detector.excluded or self.detector.config.candidates != self._counted_for:
            return 0, {}
        return judged, counts

    def take_pending(self) -> dict[str, int]:
        """The left-out-language counts since the last call (for the metrics), then none."""
        if not self._pending:
            return {}
        pending, self._pending = dict(self._pending), Counter()
        return pending

    def _label_known(self, batch: Batch) -> None:
        """:meth:`process` with expected languages: no prior, no baseline to learn, each
        label remembered by the question as asked."""
        detector = self.detector
        if detector is not self._labelled_by:  # replaced (a gold-set refresh): new labels
            self._labels, self._labelled_by = {}, detector
        labels, size, labeler = self._labels, detector.config.cache_size, self.labeler
        for event, annotation in zip(batch.events, batch.annotations, strict=True):
            question = event.question
            known = isinstance(question, str)  # anything else is und (never raises)
            language = labels.get(question) if known else None
            if language is None:
                language = detector.detect(question)
                if size and known:
                    if len(labels) >= size:
                        labels.clear()
                    labels[question] = language
            annotation["language"] = language
            if labeler is not None:
                annotation["language_label"] = labeler.label(language)

    def state_snapshot(self) -> Any:
        """The baseline's supported-label counts (the detector's cache is rebuilt) and, once
        questions were judged for a left-out language, ``"excluded"``: ``{"candidates",
        "judged", "by_language"}``."""
        state: dict[str, Any] = {"supported": dict(self._supported)}
        if self.judged:
            state["excluded"] = {"candidates": list(self._counted_for), "judged": self.judged,
                                 "by_language": dict(self.excluded)}  # fmt: skip
        return state

    def restore(self, state: Any) -> None:
        """Take back :meth:`state_snapshot`'s counts (``None`` or a malformed state: none);
        left-out-language counts only when kept under the current detector's candidates."""
        counts = state.get("supported") if isinstance(state, dict) else None
        self.supported = {}
        if isinstance(counts, dict):
            self.supported = {str(k): int(v) for k, v in counts.items()
                              if isinstance(v, int) and v > 0}  # fmt: skip
        self._restart_counts(self.detector.config.candidates)
        kept = state.get("excluded") if isinstance(state, dict) else None
        if not isinstance(kept, dict) or not isinstance(kept.get("judged"), int):
            return
        if tuple(kept.get("candidates") or ()) != self._counted_for:
            return  # counted under other candidates: no longer what this detector misses
        by_language = kept.get("by_language")
        self.judged = max(0, kept["judged"])
        if isinstance(by_language, dict):
            self.excluded = Counter({str(k): v for k, v in by_language.items()
                                     if isinstance(v, int) and v > 0})  # fmt: skip
        self._counts = (self.judged, dict(self.excluded.most_common()))
