"""Live quality per gold-row kind/topic, the shadow's paired comparison by distinct question,
and the gold-set run's paired test on the status page (trial 39, MEDIUM 3 and 4).

Values are worked by hand; scipy's exact sign-flip test is a cross-check of one p-value.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest
from scipy import stats

from service.data.goldset import GoldSet
from service.events import QueryLogEvent
from service.html.extras import gold_run_tables, gold_run_text
from service.quality.acl import AccessPolicy
from service.quality.by_group import group_lines, group_rows, paired_by_question
from service.quality.known import KnownQuestionIndex
from service.quality.stage import LiveQualityStage, add_paired_tests
from service.records import GoldQuestion
from tests.service.test_quality import (
    CORPUS,
    EVENTS,
    GOLD,
    LIBRARY,
    MCA,
    build,
    candidate,
    run,
)

# gold id -> [n_known, n_scored, Σrecall, Σhit, Σrr]
CELLS = {
    "g1": [3, 3, 1.5, 1.0, 0.5],  # temporal, asked 3 times, hit once
    "g2": [2, 2, 2.0, 2.0, 2.0],  # temporal, hit both times
    "g3": [4, 4, 4.0, 4.0, 4.0],  # comparison
    "g4": [1, 0, 0.0, 0.0, 0.0],  # no topic, not scored
}
TOPIC = {"g1": "temporal", "g2": "temporal", "g3": "comparison"}


def test_group_rows_by_hand() -> None:
    rows = group_rows(CELLS, TOPIC.get, min_n=2)
    assert [(r["group"], r["n_known"], r["n_scored"], r["questions"], r["few"]) for r in rows] == [
        ("temporal", 5, 5, 2, False), ("comparison", 4, 4, 1, True), ("none", 1, 0, 0, True),
    ]  # fmt: skip
    temporal = rows[0]
    # hit 3 of 5, recall 3.5 / 5, RR 2.5 / 5; Wilson at z = 1.96: centre (0.6 + z²/10) /
    # (1 + z²/5) = 0.55655, half-width z √(0.6·0.4/5 + z²/100) / (1 + z²/5) = 0.32583
    assert (temporal["hit_rate"], temporal["recall"], temporal["mrr"]) == (0.6, 0.7, 0.5)
    assert temporal["hit_low"] == pytest.approx(0.230725, abs=1e-5)
    assert temporal["hit_high"] == pytest.approx(0.882381, abs=1e-5)
    assert rows[2]["hit_rate"] is None and rows[2]["hit_low"] is None


def test_group_rows_are_bounded_with_a_rest_row() -> None:
    rows = group_rows(CELLS, TOPIC.get, min_n=2, max_groups=1)
    assert [(r["group"], r["groups"], r["n_known"], r["n_scored"], r["questions"])
            for r in rows] == [("temporal", 1, 5, 5, 2), ("rest", 2, 5, 4, 1)]  # fmt: skip
    lines = group_lines(rows, "topic", 10, 2)
    assert lines[1].startswith("topic rest (2 groups): 4 scored (of 5 known) on 1 question: too")


def test_paired_by_question_weighs_each_question_once() -> None:
    """Four questions asked 3, 1, 2 and 4 times. Over events production hits 5 of 10 and
    the candidate 10 of 10 (+0.5); by question the differences are +1, +1, +1/2 and 0:
    mean +0.625, 3 wins, 1 tie, and the exact sign-flip test over the 3 non-zero ones: only
    all + or all − reach |sum| 2.5, so p = 2/8 = 0.25."""
    cells = {
        "q1": [3, 0.0, 0.0, 0.0, 3.0, 3.0, 3.0],
        "q2": [1, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0],
        "q3": [2, 1.0, 1.0, 1.0, 2.0, 2.0, 2.0],
        "q4": [4, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0],
    }
    out = paired_by_question(cells, "hybrid", 10)
    assert out is not None and (out["questions"], out["events"]) == (4, 10)
    hit = out["comparisons"][0]
    assert (hit["metric"], hit["a"], hit["b"], hit["n"]) == ("hit@10", "production", "hybrid", 4)
    assert (hit["mean_a"], hit["mean_b"], hit["mean_diff"]) == (0.375, 1.0, 0.625)
    assert (hit["wins"], hit["losses"], hit["ties"], hit["p_value"]) == (3, 0, 1, 0.25)
    assert hit["ci_low"] <= 0.625 <= hit["ci_high"] and "deltas" not in hit
    exact = stats.permutation_test((np.array([1.0, 1.0, 0.5]),), np.sum,
                                   permutation_type="samples").pvalue  # fmt: skip
    assert exact == pytest.approx(0.25)
    assert paired_by_question({"q1": [0, 0, 0, 0, 0, 0, 0]}, "hybrid", 10) is None


def test_stage_reports_by_kind_and_topic_all_time_and_recent() -> None:
    # test_quality's events: production scored on q-1 (plain: recall 1, hit 1, RR 1/2) and
    # q-2 (multi-passage: recall 1/2, hit 1, RR 1); q-3 (unanswerable) known, not scored
    stage = build(min_n=1)
    run(stage, EVENTS)
    report = stage.report()
    kinds = {r["group"]: r for r in report["by_group"]["kind"]}
    assert [r["group"] for r in report["by_group"]["kind"]] == [
        "multi-passage", "plain", "unanswerable"]  # fmt: skip
    assert (kinds["plain"]["n_scored"], kinds["plain"]["mrr"]) == (1, 0.5)
    assert (kinds["multi-passage"]["recall"], kinds["unanswerable"]["n_scored"]) == (0.5, 0)
    topics = report["by_group"]["topic"]
    assert [(r["group"], r["n_known"], r["n_scored"], r["mrr"]) for r in topics] == [
        ("none", 3, 2, 0.75)]  # fmt: skip
    recent = report["by_group_recent"]
    assert recent["window_s"] == 86_400.0 and recent["since"] == "2026-11-29T10:00:00+00:00"
    assert recent["until"] == "2026-11-29T11:00:00+00:00"  # one hour's bucket
    assert [(r["group"], r["n_scored"]) for r in recent["kind"]] == [
        ("multi-passage", 1), ("plain", 1)]  # fmt: skip
    # kept in the state: a restart reports the same
    fresh = build(min_n=1)
    fresh.restore(json.loads(json.dumps(stage.state_snapshot())))
    assert fresh.report() == report


def test_recent_window_keeps_only_the_latest_buckets_and_follows_gold_changes() -> None:
    stage = build(recent_window_s=2 * 3600.0, min_n=1)  # a 2-hour window: 5-minute buckets
    run(stage, EVENTS[:2])  # 10:00:01 and 10:00:02: 24 buckets before 12:00, out of it
    later = QueryLogEvent.model_validate(
        {"event_id": "e-7", "timestamp": "2026-11-29T12:00:07Z", "question": MCA,
         "user": {"role": "student"}, "retrieval": {"results": [{"id": "p-2", "rank": 1}]}}
    )  # fmt: skip
    run(stage, [later])
    recent = stage.report()["by_group_recent"]
    assert [(r["group"], r["n_scored"], r["mrr"]) for r in recent["kind"]] == [("plain", 1, 1.0)]
    plain = stage.report()["by_group"]["kind"][0]
    assert (plain["group"], plain["n_scored"]) == ("plain", 2)  # all time: both q-1 events
    # a gold-set change that alters q-1 drops its recent measurements with the others
    q2 = GoldQuestion("q-2", LIBRARY, ("p-5", "p-6"), kind="multi-passage")
    changed = GoldSet((GoldQuestion("q-1", MCA, ("p-2", "p-5")), q2))
    stage.index = KnownQuestionIndex(changed)
    assert stage.report()["by_group_recent"] is None


def test_bad_recent_window() -> None:
    with pytest.raises(ValueError, match="recent_window_s"):
        build(recent_window_s=0.0)


def test_stage_paired_by_question_in_the_report() -> None:
    stage = build()
    run(stage, EVENTS)
    stage.observe_candidate(candidate(1, ["p-2", "p-9"]))  # q-1: RR 1 against production's 1/2
    paired = stage.report()["known"]["cand"]["paired"]["by_question"]
    mrr = paired["comparisons"][2]
    # one differing question: both signs reach |d|, p exactly 1
    assert (paired["questions"], mrr["mean_diff"], mrr["p_value"]) == (1, 0.5, 1.0)


def test_paired_tests_can_run_after_the_report_is_taken() -> None:
    """``Runtime.quality_report`` takes the report under the pipeline's lock and runs the
    paired tests (seconds of resampling on thousands of questions) after releasing it:
    ``report_and_paired`` leaves them out and ``add_paired_tests`` adds the same as
    ``report``'s, on the cells taken with the report (an event observed in between is in
    neither)."""
    stage = build()
    run(stage, EVENTS)
    stage.observe_candidate(candidate(1, ["p-2", "p-9"]))
    report, paired = stage.report_and_paired()
    assert "by_question" not in report["known"]["cand"]["paired"] and set(paired.cells) == {"cand"}
    stage.observe_candidate(candidate(2, ["p-5", "p-6"], role="parent"))  # not in the report
    add_paired_tests(report, paired, stage.k, stage.production)
    tested = report["known"]["cand"]["paired"]
    assert tested["by_question"]["events"] == tested["n_scored"] == 1
    assert stage.report()["known"]["cand"]["paired"]["n_scored"] == 2


GOLD_RUN: dict[str, Any] = {"gold": {"latest": {
    "trigger": "start", "gold_set": {"version": "c49398a1b628"},
    "comparisons": {"hybrid": [
        {"metric": "recall@10", "a": "prod", "b": "hybrid", "n": 40, "mean_a": 0.7604,
         "mean_b": 0.7542, "mean_diff": -0.00625, "wins": 3, "losses": 3, "ties": 34,
         "p_value": 0.90625, "ci_low": -0.0458, "ci_high": 0.0333, "confidence": 0.95,
         "disagreement": ""}]}}}}  # fmt: skip


def test_the_status_page_shows_the_gold_set_runs_paired_test() -> None:
    html = "".join(gold_run_tables(GOLD_RUN))
    assert "Gold-set run (start, gold set c49398a1b628): hybrid − prod on 40" in html
    assert "-0.006" in html and "-0.046 … 0.033" in html and "0.906" in html
    assert gold_run_text(GOLD_RUN) == (
        "gold-set run: hybrid − prod recall@10 -0.006 [-0.046, 0.033] p 0.906 (n 40)"
    )
    assert gold_run_tables({}) == [] and gold_run_text({"gold": {"latest": None}}) is None


def _stage_with_languages(languages: dict[str, str]) -> LiveQualityStage:
    """``build``'s stage over test_quality's gold set with these rows' ``language``."""
    rows = tuple(GoldQuestion(q.id, q.question, q.gold, kind=q.kind, language=languages.get(q.id))
                 for q in GOLD.questions)  # fmt: skip
    return LiveQualityStage(KnownQuestionIndex(GoldSet(rows)), AccessPolicy.from_corpus(CORPUS),
                            min_n=1)  # fmt: skip


def test_stage_reports_by_language_when_the_gold_set_has_two() -> None:
    # trial 43 H1: the recent figure per gold-row language. q-1 (de): hit 1 of 1, RR 1/2;
    # q-2 (en): hit 1 of 1, RR 1; q-3 (en) unanswerable, known, not scored
    stage = _stage_with_languages({"q-1": "de", "q-2": "en", "q-3": "en"})
    run(stage, EVENTS)
    report = stage.report()
    # (the recent block counts scored events only: q-3 is not in it)
    for block, en_known in ((report["by_group"], 2), (report["by_group_recent"], 1)):
        rows = {r["group"]: r for r in block["language"]}
        assert (rows["de"]["n_scored"], rows["de"]["mrr"]) == (1, 0.5)
        assert (rows["en"]["n_known"], rows["en"]["n_scored"], rows["en"]["mrr"]) == (
            en_known, 1, 1.0)  # fmt: skip
    # one language (or none): no language breakdown, the report as before
    one = _stage_with_languages({"q-1": "en", "q-2": "en"})
    run(one, EVENTS)
    assert "language" not in one.report()["by_group"]
    assert "language" not in one.report()["by_group_recent"]
