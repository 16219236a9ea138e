"""The per-question LRU cache of the topic, out-of-scope and known-question stages: bounded,
right on hits, and forgotten when the model or gold set behind it is replaced."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from service.data.goldset import GoldSet
from service.events import QueryLogEvent
from service.pipeline import Batch
from service.pipeline.batch_cache import BatchCache
from service.quality.known import KnownMatch, KnownQuestionIndex
from service.records import GoldQuestion
from service.runtime.analytics import Analytics, apply_gold_references
from service.topics.model import TopicConfig, TopicModel
from service.topics.stage import TopicStage


class Lengths:
    """``compute`` for the cache: the length of each key, remembering every call."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, keys: list[str]) -> list[int]:
        self.calls.append(list(keys))
        return [len(key) for key in keys]


def test_hits_return_the_computed_values_and_compute_only_sees_misses() -> None:
    cache = BatchCache[int](size=10)
    compute = Lengths()
    assert cache.get_many(["ab", "c", "ab", "def"], compute) == [2, 1, 2, 3]
    assert cache.get_many(["def", "ab", "wxyz"], compute) == [3, 2, 4]
    assert compute.calls == [["ab", "c", "def"], ["wxyz"]]
    # first batch: 3 distinct misses, the repeated "ab" a hit; second: 2 hits, 1 miss
    assert (cache.hits, cache.misses) == (3, 4)


def test_none_values_are_remembered_too() -> None:
    cache = BatchCache[int | None](size=4)
    calls: list[list[str]] = []

    def nothing(keys: list[str]) -> list[int | None]:
        calls.append(list(keys))
        return [None] * len(keys)

    assert cache.get_many(["a", "b"], nothing) == [None, None]
    assert cache.get_many(["b", "a"], nothing) == [None, None]
    assert calls == [["a", "b"]]


def test_size_is_bounded_and_the_least_recently_used_goes_first() -> None:
    cache = BatchCache[int](size=3)
    compute = Lengths()
    cache.get_many(["a", "bb", "ccc"], compute)
    cache.get_many(["a"], compute)  # "a" is now the most recently used
    cache.get_many(["dddd", "eeeee"], compute)  # evicts "bb" then "ccc"
    assert len(cache) == 3
    compute.calls.clear()
    assert cache.get_many(["a", "dddd", "eeeee", "bb", "ccc"], compute) == [1, 4, 5, 2, 3]
    assert compute.calls == [["bb", "ccc"]]
    assert len(cache) == 3


def test_size_zero_remembers_nothing_but_still_deduplicates_a_batch() -> None:
    cache = BatchCache[int](size=0)
    compute = Lengths()
    assert cache.get_many(["x", "x", "yy"], compute) == [1, 1, 2]
    assert cache.get_many(["x"], compute) == [1]
    assert compute.calls == [["x", "yy"], ["x"]]
    assert len(cache) == 0


def test_bad_size_and_bad_compute_are_refused() -> None:
    with pytest.raises(ValueError, match="size"):
        BatchCache[int](size=-1)
    with pytest.raises(ValueError, match="different number"):
        BatchCache[int](size=2).get_many(["a", "b"], lambda keys: [1])


FEES = ["what is the hostel fee", "hostel fee per semester", "when is the tuition fee due",
        "late fee for tuition payment", "can I pay the fee in instalments"]  # fmt: skip
EXAMS = ["when is the exam timetable published", "exam hall ticket download",
         "supplementary exam dates", "exam results announcement",
         "marks to pass the exam"]  # fmt: skip
AT = datetime(2026, 11, 29, tzinfo=UTC)


def _batch(questions: list[str]) -> Batch:
    events = [QueryLogEvent(event_id=f"e-{i}", timestamp=AT, question=q)
              for i, q in enumerate(questions)]  # fmt: skip
    return Batch.of(events, "file")


def test_topic_cache_is_cleared_when_the_gold_set_refits_the_model() -> None:
    config = TopicConfig(n_topics=2, novelty_percentile=0)
    old = TopicModel.fit(FEES + EXAMS, config, labels=["fees"] * 5 + ["exams"] * 5)
    # the refitted model names its topics differently, so a stale answer would show
    new = TopicModel.fit(FEES + EXAMS, config, labels=["money"] * 5 + ["tests"] * 5)
    stage = TopicStage(old)
    analytics = Analytics(stages=[stage])
    questions = ["hostel fee per semester", "exam hall ticket download"]
    batch = _batch(questions)
    stage.process(batch)
    assert [n["topic"] for n in batch.annotations] == ["fees", "exams"]
    assert len(stage.cache) == 2

    apply_gold_references(analytics, new, {"topic": {"money": 5, "tests": 5}})
    assert stage.model is new and len(stage.cache) == 0
    batch = _batch(questions)
    stage.process(batch)
    assert [n["topic"] for n in batch.annotations] == ["money", "tests"]
    assert analytics.topic_model_version == new.version


def test_known_matches_come_from_the_new_index_after_a_gold_refresh() -> None:
    """The runtime swaps in a new :class:`KnownQuestionIndex` on a gold refresh: its cache
    starts empty, so a question cached as unknown matches once the gold set has it."""
    question = "When does the library close on Saturday?"
    before = KnownQuestionIndex(GoldSet((GoldQuestion("q-1", "Who won the 1990 World Cup?",
                                                      ()),)))  # fmt: skip
    assert before.match_many([question, question]) == [None, None]
    after = KnownQuestionIndex(GoldSet((GoldQuestion("q-1", "Who won the 1990 World Cup?", ()),
                                        GoldQuestion("q-2", question, ("p-5",)))))  # fmt: skip
    assert after.match_many([question]) == [KnownMatch("q-2", 1.0)]


def test_the_replaced_topic_model_is_freed_by_reference_counting_even_when_frozen() -> None:
    """The live path freezes its long-lived heap (``gc.freeze``) and the collector never walks
    frozen objects again: a model replaced at a gold refresh must hold no reference cycle,
    or it would stay in memory for good. Reference counting alone must free it."""
    import gc
    import weakref

    config = TopicConfig(n_topics=2, novelty_percentile=0)
    stage = TopicStage(TopicModel.fit(FEES + EXAMS, config, labels=["fees"] * 5 + ["exams"] * 5))
    analytics = Analytics(stages=[stage])
    stage.process(_batch(["hostel fee per semester"]))
    old = weakref.ref(stage.model)
    new = TopicModel.fit(FEES + EXAMS, config, labels=["money"] * 5 + ["tests"] * 5)
    was_enabled = gc.isenabled()
    gc.disable()
    gc.freeze()
    try:
        apply_gold_references(analytics, new, {"topic": {"money": 5, "tests": 5}})
        assert old() is None
    finally:
        gc.unfreeze()
        if was_enabled:
            gc.enable()
