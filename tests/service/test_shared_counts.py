"""The batch's annotation counts are counted once (issue 22): the totals stage keeps them on
the batch and the export reuses them, unless a later stage may have changed the annotations
(then the export counts the final annotations, as before). And the export's label counts
bounded per distinct value give what bounding each event gives. Expected values by hand."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from service.events import QueryLogEvent
from service.pipeline import Batch, CountingStage, Pipeline
from service.pipeline.totals import AnnotationTotals
from service.telemetry import build_analytics_metrics

AT = datetime(2026, 11, 29, tzinfo=UTC)


def _events(n: int) -> list[QueryLogEvent]:
    return [QueryLogEvent(event_id=str(i), timestamp=AT, question=f"q{i}") for i in range(n)]


class _Refuses:
    """A planted analytics stage: the first event refused (by the flag), the second answered."""

    name = "plant"
    keeps_counts = False  # it writes what is counted, but runs before the totals

    def process(self, batch: Batch) -> None:
        batch.annotations[0].update(refused=True, refused_by="flag")
        batch.annotations[1].update(refused=False, refused_by="flag")

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass


class _CustomRefusesAll(_Refuses):
    """A custom stage after the totals that marks every event refused (no ``keeps_counts``)."""

    name = "custom"

    def process(self, batch: Batch) -> None:
        for notes in batch.annotations:
            notes["refused"] = True


class _Drops(_Refuses):
    """A later stage that says it keeps the counts but drops the second event."""

    name = "drops"
    keeps_counts = True

    def process(self, batch: Batch) -> None:
        batch.keep([True, False, True], "planted")


def test_counts_after_the_totals_reach_the_export_through_built_in_stages() -> None:
    batch = Pipeline([_Refuses(), AnnotationTotals(), CountingStage()]).process(_events(3), "file")
    counts = batch.counts()
    assert counts is not None
    flags, pii = counts
    # 2 answers (rows 0, 1), 1 refusal (row 0), both decided by the flag; nothing else
    assert (flags["answers"], flags["refusals"], flags["answers_by_flag"]) == (2, 1, 2)
    assert pii == {}


def test_a_custom_stage_after_the_totals_makes_the_export_count_again() -> None:
    totals = AnnotationTotals()
    batch = Pipeline([_Refuses(), totals, _CustomRefusesAll()]).process(_events(3), "file")
    assert batch.counts() is None  # the custom stage may have changed them
    assert totals.flags["refusals"] == 1  # the totals counted before it: row 0 only
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry)
    metrics.observe_annotations(batch.annotations, batch.counts())
    # the export counts the final annotations: every row refused, so 3 answers judged
    # (refused not None) and 3 refusals
    assert registry.get_sample_value("goldwatch_refusals_total") == 3
    assert registry.get_sample_value("goldwatch_answers_total") == 3


def test_a_batch_whose_events_were_dropped_after_counting_counts_again() -> None:
    batch = Pipeline([_Refuses(), AnnotationTotals(), _Drops()]).process(_events(3), "file")
    assert batch.counts() is None  # the annotations list is no longer the counted one
    assert len(batch.annotations) == 2


def test_labels_bounded_per_distinct_value_as_per_event() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry, language_labels=("en", "hi", "und", "other"),
                                      topic_labels=("t0", "novel", "und", "other"))  # fmt: skip
    notes = [
        {"language": "en", "topic": "t0"},
        {"language_label": "hi", "language": "en", "topic": "t9"},  # the label wins; t9: other
        {"language": "fr", "topic": None},  # fr not allowed: other; no topic: und
        {"language": "en", "topic": "t0"},
        {"language": None, "topic": "novel"},  # no language: und
        {"language": "xx", "topic": "t0"},
    ]
    metrics.observe_annotations(notes)
    get = registry.get_sample_value
    # languages: en 2 (rows 0, 3), hi 1 (row 1), other 2 (fr, xx), und 1 (None: not annotated,
    # as the drift stage and the series count it; session 36, before: other 3, und 0)
    assert get("goldwatch_questions_by_language_total", {"language": "en"}) == 2
    assert get("goldwatch_questions_by_language_total", {"language": "hi"}) == 1
    assert get("goldwatch_questions_by_language_total", {"language": "other"}) == 2
    assert get("goldwatch_questions_by_language_total", {"language": "und"}) == 1
    # topics: t0 3 (rows 0, 3, 5), novel 1, other 1 (t9), und 1 (None; before: other 2)
    assert get("goldwatch_questions_by_topic_total", {"topic": "t0"}) == 3
    assert get("goldwatch_questions_by_topic_total", {"topic": "novel"}) == 1
    assert get("goldwatch_questions_by_topic_total", {"topic": "other"}) == 1
    assert get("goldwatch_questions_by_topic_total", {"topic": "und"}) == 1


def test_unhashable_label_values_are_bounded_too() -> None:
    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry, language_labels=("en", "und", "other"))
    metrics.observe_annotations([{"language": "en"}, {"language": ["en"]}, {"topic": {"a": 1}}])
    get = registry.get_sample_value
    # en 1; the list: other 1; the missing language: und 1; topics: the two missing und, the
    # dict other (session 36; before: the missing ones were other too)
    assert get("goldwatch_questions_by_language_total", {"language": "en"}) == 1
    assert get("goldwatch_questions_by_language_total", {"language": "other"}) == 1
    assert get("goldwatch_questions_by_language_total", {"language": "und"}) == 1
    assert get("goldwatch_questions_by_topic_total", {"topic": "und"}) == 2
    assert get("goldwatch_questions_by_topic_total", {"topic": "other"}) == 1
