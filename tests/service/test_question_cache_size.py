"""``analytics.question_cache_size`` bounds the per-question caches of the topic and
out-of-scope stages and of the known-question index (the soak's memory bound)."""

from __future__ import annotations

import types

import pytest

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.refusals.stage import EmbeddingScopeStage, ScopeStage
from service.runtime.analytics import build_analytics
from service.runtime.live import known_index
from service.settings import AnalyticsConfig
from service.topics.stage import TopicStage

QUESTIONS = ["What is the annual tuition fee for the MCA programme?",
             "is there a bus from the railway station to campus",
             "Can I bring my pet iguana to the convocation ceremony?",
             "How do I apply for a room in the hostel?"]  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize("method", ["embedding", "retriever"])
def test_the_setting_bounds_every_question_cache(method: str) -> None:
    gold, corpus = load_gold_set(demo_path("gold.jsonl")), load_corpus(demo_path("corpus.jsonl"))
    config = AnalyticsConfig(scope_method=method, question_cache_size=2)
    analytics = build_analytics(config, gold, corpus)
    topic = next(st for st in analytics.stages if isinstance(st, TopicStage))
    scope = next(st for st in analytics.stages
                 if isinstance(st, ScopeStage | EmbeddingScopeStage))  # fmt: skip
    events = [types.SimpleNamespace(question=q, retrieval=None) for q in QUESTIONS]
    notes: list[dict[str, object]] = [{"refused": False} for _ in QUESTIONS]
    batch = types.SimpleNamespace(events=events, annotations=notes)
    topic.process(batch)  # type: ignore[arg-type]
    scope.process(batch)  # type: ignore[arg-type]
    # 4 distinct questions through caches of 2: the last two stay in each; the embedding
    # scope stage's retriever cache holds the questions it retrieved, those inside its
    # detector's support only (the iguana is off-corpus: never retrieved, never cached)
    assert list(topic.cache._data) == QUESTIONS[2:]
    if method == "embedding":
        assert list(scope.cache._data) == [QUESTIONS[1], QUESTIONS[3]]
    else:
        assert list(scope.cache._data) == QUESTIONS[2:]
    assert scope.known is not None
    assert scope.known.index._cache.size == 2
    assert len(scope.known.index._cache._data) == 2
    # live quality shares the scope stage's index; a new one gets the same bound
    assert known_index(analytics, gold, config.scope_known_threshold, 2) is scope.known.index
    assert known_index(analytics, gold, 0.5, 2)._cache.size == 2


def test_the_default_and_its_range() -> None:
    assert AnalyticsConfig().question_cache_size == 65_536
    assert AnalyticsConfig(question_cache_size=0).question_cache_size == 0
    with pytest.raises(ValueError, match="question_cache_size"):
        AnalyticsConfig(question_cache_size=-1)
