"""The language pipeline stage: the adapter from a batch of events to the detector
(:mod:`service.language.detector`), writing each question's language into its annotations
and keeping the live baseline's language mix as state."""

from __future__ import annotations

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
    languages that make at least :data:`BASELINE_MIN_SHARE` of the supported labels seen so
    far, counted in event order (so a replay labels alike). State: ``{"supported": {lang:
    count}}``, kept across restarts.

    With expected languages (the usual case: a gold set) a question's label depends on its
    text alone, so the labels of recent questions as asked are remembered (up to the
    detector's ``config.cache_size`` questions, then afresh; forgotten when the detector is
    replaced): a repeated question costs a look-up, not the normalisation and the detector's
    own cache (keyed by the normalised text).
    """

    name = "language"

    def __init__(
        self, detector: LanguageDetector | None = None, labeler: LanguageLabeler | None = None
    ) -> None:
        self.detector = detector or LanguageDetector()
        self.labeler = labeler
        self.supported: dict[str, int] = {}
        self._labels: dict[str, str] = {}  # question as asked -> label (expected languages)
        self._labelled_by: LanguageDetector = self.detector

    def baseline_prior(self) -> tuple[str, ...]:
        """The live baseline's languages, most frequent first (ties by code)."""
        total = sum(self.supported.values())
        ranked = sorted(self.supported.items(), key=lambda item: (-item[1], item[0]))
        return tuple(lang for lang, n in ranked
                     if n >= BASELINE_MIN_COUNT and n >= BASELINE_MIN_SHARE * total)  # fmt: skip

    def process(self, batch: Batch) -> None:
        detector = self.detector
        learn = not detector.config.preferred
        if not learn:
            self._label_known(batch)
            return
        prior = self.baseline_prior()
        for event, annotation in zip(batch.events, batch.annotations, strict=True):
            language, supported = detector.detect_with_support(event.question, prior)
            if learn and supported and language != UNDETERMINED:
                self.supported[language] = self.supported.get(language, 0) + 1
            annotation["language"] = language
            if self.labeler is not None:
                annotation["language_label"] = self.labeler.label(language)

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
                language = detector.detect_with_support(question)[0]
                if size and known:
                    if len(labels) >= size:
                        labels.clear()
                    labels[question] = language
            annotation["language"] = language
            if labeler is not None:
                annotation["language_label"] = labeler.label(language)

    def state_snapshot(self) -> Any:
        """The baseline's supported-label counts (the detector's cache is rebuilt)."""
        return {"supported": dict(self.supported)}

    def restore(self, state: Any) -> None:
        """Take back :meth:`state_snapshot`'s counts (``None`` or a malformed state: none)."""
        counts = state.get("supported") if isinstance(state, dict) else None
        self.supported = {}
        if isinstance(counts, dict):
            self.supported = {str(k): int(v) for k, v in counts.items()
                              if isinstance(v, int) and v > 0}  # fmt: skip
