"""ShadowStage: annotations, aggregates, bounded breakdowns and disagreements, persistence."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from service.pipeline import Batch, Pipeline, Stage
from service.records import ScoredDoc
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
from service.shadow.stage import METRICS, ShadowStage
from tests.service.shadow.shadow_fakes import (
    PRODUCTION,
    Fixed,
    Hanging,
    Switch,
    docs,
    make_event,
    wait_for,
)


class Rotating(Fixed):
    """Rotates production's ranking by the question's number mod 5 (varying agreement)."""

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        shift = int(question.split()[2].rstrip("?")) % 5
        return docs((PRODUCTION[shift:] + PRODUCTION[:shift])[:k])


def build(max_disagreements: int = 3, max_label_values: int = 3, **more: Any) -> ShadowStage:
    config = ShadowConfig(
        max_cpu_share=None,  # the CPU budget has its own tests
        candidates=(CandidateConfig(name="same"), CandidateConfig(name="rot", **more)),
        max_disagreements=max_disagreements,
        max_label_values=max_label_values,
    )
    return ShadowStage(ShadowRunner(config, {"same": Fixed(), "rot": Rotating()}))


def run_batch(stage: ShadowStage, n: int, languages: Sequence[str] = ("en",)) -> Batch:
    batch = Batch.of([make_event(i) for i in range(n)], source="test")
    for i, notes in enumerate(batch.annotations):
        notes["language"] = languages[i % len(languages)]
        notes["topic"] = "fees"
    stage.process(batch)
    return batch


def settle(stage: ShadowStage, expected: int) -> None:
    """Wait until ``expected`` results are folded in (by :meth:`ShadowStage.process`'s own
    collect too: counting only this loop's collects missed those and could wait forever)."""

    def finished() -> bool:
        stage.collect()
        report = stage.report()["candidates"]
        return sum(c["completed"] + sum(c["errors"].values()) for c in report.values()) >= expected

    assert wait_for(finished)


@pytest.fixture
def stage() -> Any:
    built = build()
    yield built
    built.runner.close()


def test_is_a_stage_and_annotates_each_event(stage: ShadowStage) -> None:
    assert isinstance(stage, Stage)
    batch = Pipeline([stage]).process([make_event(1)], source="test")
    assert batch.annotations[0]["shadow"] == {"same": "queued", "rot": "queued"}


def test_report_means_counts_and_breakdowns(stage: ShadowStage) -> None:
    run_batch(stage, 50, languages=("en", "hi", "es", "de", "zh"))
    settle(stage, 100)
    report = stage.report()
    json.dumps(report, allow_nan=False)  # JSON-able, no NaN
    same, rot = report["candidates"]["same"], report["candidates"]["rot"]
    assert same["offered"] == same["queued"] == same["completed"] == 50
    assert same["agreement"]["rbo"] == pytest.approx(1.0)
    assert same["agreement"]["top1"] == 1.0 and same["counts"]["rbo"] == 50
    assert rot["agreement"]["top1"] == pytest.approx(10 / 50)  # shift 0 for one question in 5
    assert rot["agreement"]["overlap"] == 1.0  # a rotation keeps the same set
    assert rot["agreement"]["rbo"] < 1.0 and rot["errors"] == {}
    # max_label_values = 3: two languages plus "other".
    assert set(rot["by_language"]) == {"en", "hi", "other"}
    assert sum(row["n"] for row in rot["by_language"].values()) == 50
    # each label carries the count of every mean (trial user6: a language's Kendall's tau was
    # shown without the handful it was over); the labels' counts add up to the candidate's
    for measure in ("overlap", "rbo", "kendall_tau", "top1"):
        total = sum(row["counts"][measure] for row in rot["by_language"].values())
        assert total == rot["counts"][measure], measure
    assert all(row["counts"]["rbo"] == row["n"] for row in rot["by_language"].values())
    assert set(rot["by_topic"]) == {"fees"}
    assert same["latency_seconds"]["count"] == 50 and same["runner"]["workers"] >= 1


def test_disagreements_keep_the_lowest_rbo(stage: ShadowStage) -> None:
    run_batch(stage, 50)
    settle(stage, 100)
    rows = stage.report()["candidates"]["rot"]["disagreements"]
    assert len(rows) == 3
    lowest = min(row["rbo"] for row in rows)
    assert [row["rbo"] for row in rows] == sorted(row["rbo"] for row in rows)
    assert all(row["rbo"] == pytest.approx(lowest) for row in rows)  # all from one worst shift
    row = rows[0]
    assert row["production"] == list(PRODUCTION) and row["candidate"] != list(PRODUCTION)
    assert row["question"].startswith("question number") and row["timestamp"].startswith("2026")


def test_pending_observations_are_increments(stage: ShadowStage) -> None:
    run_batch(stage, 20)
    settle(stage, 40)
    first = stage.pending_observations()
    assert first["offers"]["same"] == {"queued": 20}
    assert first["completed"]["rot"] == 20 and len(first["latency_seconds"]["rot"]) == 20
    assert len(first["agreement"]["rot"]["rbo"]) == 20
    assert set(first["agreement"]["same"]) == set(METRICS)
    assert first["results_dropped"] == 0 and "breaker_state" in first["runner"]["rot"]
    second = stage.pending_observations()
    assert second["offers"]["same"] == {} and second["latency_seconds"]["same"] == []


def test_errors_and_skips_are_counted() -> None:
    """Every sampled event's failure is an error and every other event a ``not_sampled``
    skip. The breaker is set so that it cannot open here (the most failures it allows,
    10,000): with a threshold of 2 it opened, under load, while the first batch was still
    being offered (its workers' first failures came back meanwhile), so fewer events were
    queued than sampled (a flaky run); its skips are counted in the next test, whose
    outcome no timing can change, and the breaker itself has its own tests
    (``test_runner.py``)."""
    config = ShadowConfig(
        max_cpu_share=None,  # the CPU budget has its own tests
        # the most failures a breaker allows, and the longest deadline (no call times out)
        candidates=(
            CandidateConfig(name="bad", failure_threshold=10_000, sample_rate=0.5, timeout_s=300),
        ),
    )
    stage = ShadowStage(ShadowRunner(config, {"bad": Switch()}))
    stage.process(Batch.of([make_event(i) for i in range(200)], source="test"))
    first = stage.report()["candidates"]["bad"]["queued"]
    stage.process(Batch.of([make_event(i) for i in range(200, 300)], source="test"))
    queued = stage.report()["candidates"]["bad"]["queued"]
    settle(stage, queued)
    report = stage.report()["candidates"]["bad"]
    stage.runner.close()
    assert 80 < first < 120 and 30 < queued - first < 70  # the sample: half, by event id
    assert report["errors"] == {"http_error": queued} and report["completed"] == 0
    assert report["offered"] == 300 and report["in_flight"] == 0 and _adds_up(report)
    assert report["skipped"] == {"not_sampled": 300 - queued}
    assert report["runner"]["breaker_state"] == "closed"
    assert report["agreement"]["rbo"] is None  # nothing compared: undefined, not NaN


def test_skips_of_an_open_breaker_are_counted() -> None:
    """A breaker that opens at the first failure and stays open (a day's cool-down): once a
    failure has come back, every sampled event of the next batch is a ``breaker_open`` skip,
    whenever the first batch's failures arrived. Of the first batch's sampled events only
    those called before it opened fail (at most N + c - 1 = 1 + 2 - 1 = 2: two workers); the
    others are ``breaker_open`` too, refused at the offer or dropped from the queue uncalled
    (trial 43 M3: the queued backlog used to be called through)."""
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(
            CandidateConfig(
                name="bad", failure_threshold=1, cooldown_s=86_400, sample_rate=0.5, timeout_s=300
            ),
        ),
    )
    switch = Switch()
    stage = ShadowStage(ShadowRunner(config, {"bad": switch}))
    stage.process(Batch.of([make_event(i) for i in range(200)], source="test"))

    def drained() -> bool:
        stage.collect()
        return stage.report()["candidates"]["bad"]["in_flight"] == 0

    assert wait_for(drained)  # the breaker learns of failures only as results come back
    before = stage.report()["candidates"]["bad"]
    assert before["runner"]["breaker_state"] == "open"
    failed = before["errors"]["http_error"]
    assert 1 <= failed <= 2 and before["queued"] == failed and switch.calls == failed
    sampled = 200 - before["skipped"]["not_sampled"]
    assert before["skipped"]["breaker_open"] == sampled - failed
    stage.process(Batch.of([make_event(i) for i in range(200, 300)], source="test"))
    report = stage.report()["candidates"]["bad"]
    stage.runner.close()
    assert report["queued"] == failed and report["errors"] == {"http_error": failed}
    assert report["offered"] == 300 and report["completed"] == 0 and _adds_up(report)
    newly = report["skipped"]["breaker_open"] - before["skipped"]["breaker_open"]
    assert 30 < newly < 70  # every sampled event of the second batch (half, by event id)
    assert newly + report["skipped"]["not_sampled"] - before["skipped"]["not_sampled"] == 100


def test_snapshot_round_trip(stage: ShadowStage) -> None:
    run_batch(stage, 30, languages=("en", "hi"))
    settle(stage, 60)
    saved = json.loads(json.dumps(stage.state_snapshot()))
    restored = build()
    restored.restore(saved)
    restored.restore(None)  # a first start: nothing to load
    before, after = stage.report(), restored.report()
    restored.runner.close()
    for name in ("same", "rot"):
        for section in ("agreement", "counts", "by_language", "disagreements", "skipped"):
            assert after["candidates"][name][section] == before["candidates"][name][section]
    restored_again = build()
    restored_again.restore({"version": 999, "candidates": {}})  # unknown version: ignored
    assert restored_again.report()["candidates"]["rot"]["offered"] == 0
    restored_again.runner.close()


def _adds_up(report: dict[str, Any]) -> bool:
    """offered = compared + errors + skipped by reason + in flight (issue 18 item 3)."""
    parts = report["completed"] + sum(report["errors"].values()) + sum(report["skipped"].values())
    return bool(report["offered"] == parts + report["in_flight"])


def test_offers_add_up_across_a_restart_with_calls_in_flight() -> None:
    config = ShadowConfig(max_cpu_share=None, candidates=(CandidateConfig(name="hang"),))
    hanging = Hanging()
    stage = ShadowStage(ShadowRunner(config, {"hang": hanging}))
    stage.process(Batch.of([make_event(i) for i in range(10)], source="test"))
    before = stage.report()["candidates"]["hang"]
    saved = json.loads(json.dumps(stage.state_snapshot()))  # a checkpoint, then a stop
    hanging.release.set()
    stage.runner.close()
    # 10 offered, all queued (default queue 1000), no result yet: 10 in flight
    assert (before["offered"], before["completed"], before["in_flight"]) == (10, 0, 10)
    assert _adds_up(before)
    restarted = ShadowStage(ShadowRunner(config, {"hang": Fixed()}))
    restarted.restore(saved)
    restarted.process(Batch.of([make_event(i) for i in range(10, 14)], source="test"))
    settle(restarted, 4)
    after = restarted.report()["candidates"]["hang"]
    restarted.runner.close()
    # the 10 lost calls are skipped as interrupted; the 4 new events compared
    assert after["offered"] == 14 and after["completed"] == 4 and after["in_flight"] == 0
    assert after["skipped"] == {"interrupted": 10} and after["queued"] == 4
    assert _adds_up(after)


def test_dropped_results_are_a_skip_reason() -> None:
    config = ShadowConfig(max_cpu_share=None, max_results=3,
                          candidates=(CandidateConfig(name="same"),))  # fmt: skip
    stage = ShadowStage(ShadowRunner(config, {"same": Fixed()}))
    stage.process(Batch.of([make_event(i) for i in range(8)], source="test"))
    assert wait_for(lambda: stage.runner.wait_idle(0.0))
    stage.collect()
    report = stage.report()["candidates"]["same"]
    stage.runner.close()
    # a buffer of 3 results, nothing drained while 8 calls finished: 5 dropped
    assert report["completed"] == 3 and report["skipped"] == {"result_dropped": 5}
    assert report["in_flight"] == 0 and _adds_up(report)
