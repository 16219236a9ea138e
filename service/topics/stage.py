"""The topic pipeline stage: the adapter from a batch of events to the topic model
(:mod:`service.topics.model`), one :meth:`~service.topics.model.TopicModel.assign_many` per
batch of distinct questions not seen recently."""

from __future__ import annotations

from typing import Any

from service.events import QueryLogEvent
from service.language.gold import judged_language, lacks_gold
from service.pipeline import Batch, StatelessStage
from service.pipeline.batch_cache import BatchCache
from service.text.subject import subject
from service.topics.model import NOVEL, TopicAssignment, TopicModel

__all__ = ["TopicStage"]

#: Between a question's language and its text in the cache keys of a centring model (a
#: character no normalised question holds: the unit separator).
_SEP = "\x1f"


class TopicStage(StatelessStage):
    """Pipeline stage writing ``annotations[i]["topic"]`` (a name or ``"novel"``) and
    ``annotations[i]["topic_similarity"]`` (float), one :meth:`TopicModel.assign_many` per batch.
    A question is ``novel`` only while the novelty detector reaches its quality floor
    (:attr:`novelty_calibrated`, set by the analytics); below it the detector labels nothing:
    every question gets its nearest gold topic
    (:attr:`~service.topics.model.TopicAssignment.nearest`; trial 49 L4: an uncalibrated
    detector's ``novel`` share, 5 %, stood in the shares, the metric and the status page while
    the reports said the shares were nearest topics). While the topic
    assignment itself is below its floor (:attr:`calibrated` False, set by the analytics:
    :func:`~service.topics.quality.kappa_uncalibrated`), or while novelty is uncalibrated
    (the topics are then nearest gold topics:
    :meth:`~service.runtime.analytics.Analytics.topics_nearest`), every question given a
    topic also gets ``annotations[i]["topic_calibrated"] = False``, so harvesting counts no
    topic coverage gap for it (nothing is written while calibrated). The model reads
    each question's subject (:func:`~service.text.subject.subject`: a scrubbed
    self-introduction such as ``My name is <NAME>, …`` is no topic; trial 12 F6/F7). A model
    that centres per language (``analytics.topics.language_centring``) is handed each
    question's ``annotations[i]["language"]`` (the language stage's, which runs first).

    A question in a language no gold row is written in (not in :attr:`gold_languages`; its
    ``annotations[i]["language"]``, or the left-out language it reads as:
    :func:`~service.language.gold.judged_language`, folded by
    :func:`~service.language.tags.language_key`;
    ``und``, no language read, is judged) gets no topic: ``annotations[i]["topic"]`` is not
    written and ``annotations[i]["topic_unjudged_language"]`` is ``True``. Neither the topic
    assignment nor novelty was measured on a gold question of that language, and an
    English-first embedding reads most such questions as far from every gold question
    (trial 16: an English-only gold set read 82 % of the German and 76 % of the Spanish
    in-scope questions as ``novel``, of the English 10 %, and a day of German and Spanish
    questions about the same articles raised a topic drift alarm). The drift stage leaves
    them out of the topic shares and the totals count them per language, as the
    out-of-scope rule's questions in a language without gold rows are
    (:class:`~service.refusals.stage.EmbeddingScopeStage`).
    """

    name = "topic"

    def __init__(self, model: TopicModel, cache_size: int = 65_536,
                 gold_languages: frozenset[str] | None = None) -> None:  # fmt: skip
        """``gold_languages``: the live language keys the gold set's rows judge
        (:func:`~service.language.gold.gold_language_keys`; ``None``: every question is
        judged, e.g. topics fitted on the corpus without a gold set)."""
        self.model = model
        self.cache: BatchCache[TopicAssignment] = BatchCache(cache_size)
        #: False while the novelty detector is below its quality floor (set by the
        #: analytics): no question is then ``novel``
        self.novelty_calibrated = True
        #: False while the supervised model's held-out kappa is below
        #: ``analytics.topics.min_kappa`` (set by the analytics)
        self.calibrated = True
        self.gold_languages = gold_languages

    def unjudged(self, annotations: list[dict[str, Any]]) -> list[bool] | None:
        """Per event, ``True`` when its language
        (:func:`~service.language.gold.judged_language`) has no gold row
        (:func:`~service.language.gold.lacks_gold` of :attr:`gold_languages`); ``None`` when
        every event's language has one (the common case) or every language is judged."""
        gold = self.gold_languages
        if gold is None:
            return None
        seen: dict[Any, bool] = {}
        flags = []
        for notes in annotations:
            language = judged_language(notes)
            lacking = seen.get(language)
            if lacking is None:
                lacking = seen[language] = lacks_gold(language, gold)
            flags.append(lacking)
        return flags if True in seen.values() else None

    def process(self, batch: Batch) -> None:
        unjudged = self.unjudged(batch.annotations)
        if unjudged is None:
            self._assign(batch.events, batch.annotations)
            return
        rows = [i for i, lacking in enumerate(unjudged) if not lacking]
        for i, lacking in enumerate(unjudged):
            if lacking:
                batch.annotations[i]["topic_unjudged_language"] = True
        # the judged events alone (their annotation dicts are the batch's own)
        self._assign([batch.events[i] for i in rows], [batch.annotations[i] for i in rows])

    def _assign(self, events: list[QueryLogEvent], annotations: list[dict[str, Any]]) -> None:
        """Write each event's topic (and similarity) into its ``annotations`` dict."""
        if not events:
            return
        questions = [subject(event.question) for event in events]
        model = self.model
        # each question's language, as the language stage read it (a stand-in model without
        # the attribute centres nothing)
        if getattr(model, "language_centring", False):
            # keyed by language and text: the same text read as another language is centred
            # on that language's mean (a review: keyed by text alone, the first reading won)
            keys = [f"{notes.get('language') or ''}{_SEP}{q}"
                    for q, notes in zip(questions, annotations, strict=True)]  # fmt: skip

            def assign(found: list[str]) -> list[TopicAssignment]:
                pairs = [key.split(_SEP, 1) for key in found]
                return model.assign_many([q for _, q in pairs], [lang or None for lang, _ in pairs])

            assignments = self.cache.get_many(keys, assign)
        else:
            assignments = self.cache.get_many(questions, model.assign_many)
        novelty = self.novelty_calibrated
        for notes, found in zip(annotations, assignments, strict=True):
            # an uncalibrated novelty verdict labels nothing: the nearest topic stands
            notes["topic"] = found.topic if novelty or found.topic != NOVEL else found.nearest
            notes["topic_similarity"] = found.similarity
        if not self.calibrated:  # (the common, calibrated case writes nothing more)
            for notes in annotations:
                notes["topic_calibrated"] = False
