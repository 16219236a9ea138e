"""Shadow agreement by language and topic: a question with no label is bucketed by why it has
none, the same in the report, the telemetry rows and /metrics (review of session 35).

The bug: every question given no topic — no gold row in its language (the topic stage's
``topic_unjudged_language``), or topic detection off — was bucketed ``unknown`` in the
report and exported as topic ``other`` on ``goldwatch_shadow_agreement_by_topic``, where a
Grafana panel showed an "other" agreement that was really "not given a topic"; a question
without a language (no language stage) likewise.
"""

from __future__ import annotations

import itertools
from typing import Any

from prometheus_client import CollectorRegistry

from service.pipeline import Batch
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
from service.shadow.stage import NO_LABEL, ShadowStage
from service.telemetry import SHADOW_NO_LABEL, build_shadow_metrics
from tests.service.shadow.shadow_fakes import Fixed, make_event

#: (language, topic, topic_unjudged_language) of each event; ``None``: not annotated.
NOTES: list[tuple[str | None, str | None, bool]] = [
    ("en", "fees", False),
    ("en", "fees", False),
    ("de", None, True),  # no gold row in German: no topic
    ("de", None, True),
    ("de", None, True),
    ("en", None, False),  # no topic stage ran
    (None, None, False),  # no analytics at all
]


def _run(notes: list[tuple[str | None, str | None, bool]], max_labels: int = 10) -> ShadowStage:
    """One synchronous batch through a candidate that ranks as production does (agreement 1),
    ``max_labels`` its ``max_label_values``."""
    config = ShadowConfig(max_cpu_share=None, candidates=(CandidateConfig(name="same"),),
                          max_label_values=max_labels)  # fmt: skip
    runner = ShadowRunner(config, {"same": Fixed()}, backpressure=True)
    stage = ShadowStage(runner, synchronous=True)
    batch = Batch.of([make_event(i) for i in range(len(notes))], source="test")
    for written, (language, topic, unjudged) in zip(batch.annotations, notes, strict=True):
        if language is not None:
            written["language"] = language
        if topic is not None:
            written["topic"] = topic
        if unjudged:
            written["topic_unjudged_language"] = True
    stage.process(batch)
    return stage


def test_the_report_buckets_a_question_without_a_label_by_why() -> None:
    stage = _run(NOTES)
    try:
        report = stage.report()["candidates"]["same"]
        assert report["completed"] == 7
        assert {k: v["n"] for k, v in report["by_topic"].items()} == {
            "fees": 2, "unjudged_language": 3, "not_detected": 2,
        }  # fmt: skip
        assert {k: v["n"] for k, v in report["by_language"].items()} == {
            "en": 3, "de": 3, "not_detected": 1,
        }  # fmt: skip
        pending = stage.pending_observations()
    finally:
        stage.runner.close()
    rbo = [(row["label"], row["value"]) for row in pending["by_topic"] if row["measure"] == "rbo"]
    assert rbo == [("fees", 1.0)] * 2 + [("unjudged_language", 1.0)] * 3 + [
        ("not_detected", 1.0)] * 2  # fmt: skip
    languages = [row["label"] for row in pending["by_language"] if row["measure"] == "rbo"]
    assert languages == ["en", "en", "de", "de", "de", "en", "not_detected"]


def test_metrics_export_the_same_labels_and_keep_other_for_other_labels() -> None:
    assert SHADOW_NO_LABEL == NO_LABEL
    stage = _run(NOTES)
    try:
        pending = stage.pending_observations()
    finally:
        stage.runner.close()
    registry = CollectorRegistry()
    metrics = build_shadow_metrics(registry, candidates=["same"], language_labels=["en"],
                                   topic_labels=["fees", "novel"])  # fmt: skip
    metrics.observe_shadow(pending)

    def count(family: str, dimension: str, label: str) -> Any:
        return registry.get_sample_value(
            f"goldwatch_shadow_agreement_by_{family}_count",
            {"retriever": "same", dimension: label, "measure": "rbo"},
        )

    assert count("topic", "topic", "fees") == 2
    assert count("topic", "topic", "unjudged_language") == 3  # before: under "other"
    assert count("topic", "topic", "not_detected") == 2  # before: under "other"
    assert count("topic", "topic", "other") is None  # no other topic was seen
    assert count("language", "language", "en") == 3
    assert count("language", "language", "other") == 3  # de: not a language label
    assert count("language", "language", "not_detected") == 1  # before: under "other"


def test_aggregates_saved_before_keep_what_they_can_tell() -> None:
    stage = _run(NOTES[:1])
    try:
        saved = stage.state_snapshot()
        means = saved["candidates"]["same"]["by"]["topic"]["fees"]
        # a snapshot of the old version: no-label buckets under "unknown", the topic one with
        # one result more than the language one (one given no topic for its language; the
        # same results in both: test_an_old_topic_bucket_of_the_results_without_a_language...)
        two = {m: [2 * s, 2 * n] for m, (s, n, *_) in means.items()}  # a pre-s47 cell
        by = {"language": {"en": means, "unknown": means},
              "topic": {"fees": means, "unknown": two}}  # fmt: skip
        saved["candidates"]["same"]["by"] = by
        stage.restore(saved)
        report = stage.report()["candidates"]["same"]
    finally:
        stage.runner.close()
    # no language: there was no language stage; no topic: either reason, not told apart
    assert set(report["by_language"]) == {"en", "not_detected"}
    assert set(report["by_topic"]) == {"fees", "unknown"}


def test_an_old_topic_bucket_of_the_results_without_a_language_is_not_detected() -> None:
    """A review of session 36: a service with analytics off saved every result under language
    and topic ``unknown``; restored, the language bucket became ``not_detected`` and the topic
    bucket stayed ``unknown``, so its report and /v1/shadow showed one cause under two names
    once new results came (``unknown`` 56 and ``not_detected`` 300 in a serve restart).
    A result without a language had no language stage, so no topic stage either: the results
    of the old language bucket are in the old topic bucket, and when the two hold the same
    sums they are the same results — all ``not_detected``. One more result in the topic
    bucket (e.g. given no topic for its language) leaves it ``unknown``."""
    stage = _run(NOTES[:1])
    try:
        saved = stage.state_snapshot()
        one = saved["candidates"]["same"]["by"]["topic"]["fees"]  # agreement 1, n = 1
        two = {m: [2 * s, 2 * n] for m, (s, n, *_) in one.items()}  # a pre-s47 cell
        saved["candidates"]["same"]["by"] = {"language": {"unknown": two},
                                             "topic": {"unknown": two}}  # fmt: skip
        stage.restore(saved)
        same = stage.report()["candidates"]["same"]
        saved["candidates"]["same"]["by"] = {"language": {"unknown": one},
                                             "topic": {"unknown": two}}  # fmt: skip
        stage.restore(saved)
        more = stage.report()["candidates"]["same"]
    finally:
        stage.runner.close()
    assert same["by_language"]["not_detected"]["n"] == 2
    assert list(same["by_topic"]) == ["not_detected"]
    assert same["by_topic"]["not_detected"]["n"] == 2
    # the topic bucket holds one result more than the language one: not told apart
    assert more["by_language"]["not_detected"]["n"] == 1
    assert list(more["by_topic"]) == ["unknown"]
    assert more["by_topic"]["unknown"]["n"] == 2


def test_a_full_breakdown_still_says_why_a_question_has_no_label() -> None:
    """A review of session 36: once a breakdown held ``max_label_values - 1`` labels (the
    default 32, fewer than the 50 topics a large gold set may give), a question given no
    topic came after them was merged into ``other``: the report said "other" for "no gold
    row in its language", the very mix-up the buckets are there to end. The two no-label
    buckets are bounded by themselves (two values) and are never merged. Here at most 2 labels:
    ``fees`` and ``other`` (one slot stays free for it)."""
    notes: list[tuple[str | None, str | None, bool]] = [
        ("en", "fees", False),
        ("en", "exams", False),  # the table is full: other
        ("de", None, True),  # no gold row in German: unjudged_language (before: other)
        ("en", None, False),  # no topic stage: not_detected (before: other)
        (None, None, False),  # no analytics: not_detected in both (before: other in both)
    ]
    stage = _run(notes, max_labels=2)
    try:
        report = stage.report()["candidates"]["same"]
    finally:
        stage.runner.close()
    topics = {label: cell["n"] for label, cell in report["by_topic"].items()}
    assert topics == {"fees": 1, "other": 1, "unjudged_language": 1, "not_detected": 2}
    languages = {label: cell["n"] for label, cell in report["by_language"].items()}
    assert languages == {"en": 3, "other": 1, "not_detected": 1}


def test_the_html_section_names_the_buckets_by_why() -> None:
    from service.html.extras import shadow_section

    stage = _run(NOTES)
    try:
        html = str(shadow_section(stage.report(), min_n=1))
    finally:
        stage.runner.close()
    assert "no topic: no gold row in its language" in html
    assert "no topic (not detected)" in html and "no language (not detected)" in html
    assert "unknown" not in html


def test_removing_a_topic_label_removes_its_series_for_every_retriever_and_measure() -> None:
    """``ShadowMetrics.remove_topic_label`` (the ``novel`` label once the novelty detector
    labels nothing) removes the label's summaries of each retriever and measure, leaves the
    other topics' alone, and a label added back starts from no observation."""
    registry = CollectorRegistry()
    metrics = build_shadow_metrics(registry, candidates=["cand"], topic_labels=("a", "novel"))
    keys = itertools.product(("cand", "production"), ("rbo", "overlap"), ("a", "novel"))
    rows = [{"candidate": c, "measure": m, "label": t, "value": 0.5} for c, m, t in keys]
    metrics.observe_shadow({"by_topic": rows})
    name = "goldwatch_shadow_agreement_by_topic_count"

    def count(retriever: str, topic: str, measure: str) -> float | None:
        labels = {"retriever": retriever, "topic": topic, "measure": measure}
        return registry.get_sample_value(name, labels)

    assert count("cand", "novel", "overlap") == 1.0
    assert metrics.remove_topic_label("novel")
    assert not metrics.remove_topic_label("novel")
    assert "novel" not in metrics.topic_labels
    for retriever in ("cand", "production"):
        for measure in ("rbo", "overlap"):
            assert count(retriever, "novel", measure) is None
            assert count(retriever, "a", measure) == 1.0
    assert metrics.add_topic_labels(["a", "novel"]) == ("novel",)
    metrics.observe_shadow({"by_topic": rows[:2]})  # cand, rbo: a then novel
    assert count("cand", "novel", "rbo") == 1.0
    assert count("cand", "a", "rbo") == 2.0
