"""The topic pipeline stage: the adapter from a batch of events to the topic model
(:mod:`service.topics.model`), one :meth:`~service.topics.model.TopicModel.assign_many` per
batch of distinct questions not seen recently."""

from __future__ import annotations

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
    A ``novel`` question also gets ``annotations[i]["novelty_calibrated"]``: whether the
    novelty detector reaches the quality floor (:attr:`novelty_calibrated`, set by the
    analytics), so harvesting suggests "novel" only on a calibrated verdict. The model reads
    each question's subject (:func:`~service.text.subject.subject`: a scrubbed
    self-introduction such as ``My name is <NAME>, …`` is no topic; trial 12 F6/F7). A model
    that centres per language (``analytics.topics.language_centring``) is handed each
    question's ``annotations[i]["language"]`` (the language stage's, which runs first).
    """

    name = "topic"

    def __init__(self, model: TopicModel, cache_size: int = 65_536) -> None:
        self.model = model
        self.cache: BatchCache[TopicAssignment] = BatchCache(cache_size)
        self.novelty_calibrated = True

    def process(self, batch: Batch) -> None:
        questions = [subject(event.question) for event in batch.events]
        model = self.model
        # each question's language, as the language stage read it (a stand-in model without
        # the attribute centres nothing)
        if getattr(model, "language_centring", False):
            # keyed by language and text: the same text read as another language is centred
            # on that language's mean (a review: keyed by text alone, the first reading won)
            keys = [f"{notes.get('language') or ''}{_SEP}{q}"
                    for q, notes in zip(questions, batch.annotations, strict=True)]  # fmt: skip

            def assign(found: list[str]) -> list[TopicAssignment]:
                pairs = [key.split(_SEP, 1) for key in found]
                return model.assign_many([q for _, q in pairs], [lang or None for lang, _ in pairs])

            assignments = self.cache.get_many(keys, assign)
        else:
            assignments = self.cache.get_many(questions, model.assign_many)
        calibrated = self.novelty_calibrated
        for notes, found in zip(batch.annotations, assignments, strict=True):
            notes["topic"] = found.topic
            notes["topic_similarity"] = found.similarity
            if found.topic == NOVEL:
                notes["novelty_calibrated"] = calibrated
