"""Trial 46 F5: the out-of-scope detector is calibrated and measured on ``kind: off-topic`` gold
rows against the answerable ones; the in-domain unanswerable rows (``kind: unanswerable``: on the
corpus's subjects, their answer missing) are measured apart, not counted against it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.data.corpus import Corpus
from service.data.goldset import GoldSet, GoldSetError, kind_problem, load_gold_set
from service.evaluation.detector_quality import (
    DetectorQuality,
    apart_text,
    class_rates_text,
    measured_on,
    scope_calibration_advice,
    too_few,
)
from service.records import GoldQuestion, Passage, ScoredDoc
from service.refusals.scope import (
    CALIBRATION_LIMIT,
    OFF_TOPIC_CALIBRATION_LIMIT,
    calibration_limit,
    scope_rows,
)
from service.settings import AnalyticsConfig


def _rows() -> list[GoldQuestion]:
    return [
        GoldQuestion("a1", "When was the abbey built?", ("p1",)),
        GoldQuestion("a2", "Who founded the abbey?", ("p1",)),
        GoldQuestion("a3", "Where is the abbey?", ("p2",)),
        GoldQuestion("u1", "When was the abbey not built?", (), kind="unanswerable"),
        GoldQuestion("u2", "Who demolished the abbey's tower?", (), kind="unanswerable"),
        GoldQuestion("o1", "Book me a taxi to the airport", (), kind="off-topic"),
        GoldQuestion("o2", "What is my card's overdraft fee?", (), kind="off-topic"),
    ]


def test_scope_rows_splits_only_with_two_off_topic_rows() -> None:
    rows = _rows()
    fitted, apart = scope_rows(rows)
    assert [q.id for q in fitted] == ["a1", "a2", "a3", "o1", "o2"]
    assert [q.id for q in apart] == ["u1", "u2"]
    # one off-topic row: no split (the fit needs two of a class), every gold: [] row negative
    fitted, apart = scope_rows(rows[:6])
    assert [q.id for q in fitted] == ["a1", "a2", "a3", "u1", "u2", "o1"] and apart == []
    # no in-domain row: every row fitted, none apart
    fitted, apart = scope_rows(rows[:3] + rows[5:])
    assert len(fitted) == 5 and apart == []


def test_off_topic_is_a_kind_with_no_gold_passage(tmp_path: Path) -> None:
    assert kind_problem("off-topic", []) is None
    assert kind_problem("off-topic", ["p1"]) == ("kind", "'off-topic' but gold is not empty")
    path = tmp_path / "gold.jsonl"
    path.write_text(json.dumps({"id": "o1", "question": "Tell me a joke", "gold": [],
                                "kind": "off-topic"}) + "\n", encoding="utf-8")  # fmt: skip
    (row,) = load_gold_set(path)
    assert row.kind == "off-topic" and not row.answerable
    path.write_text(json.dumps({"id": "o1", "question": "Tell me a joke", "gold": ["p1"],
                                "kind": "off-topic"}) + "\n", encoding="utf-8")  # fmt: skip
    with pytest.raises(GoldSetError, match="'off-topic' but gold is not empty"):
        load_gold_set(path)


def test_the_words_name_the_off_topic_rows() -> None:
    quality = DetectorQuality(0.947, 0.858, 1.0, 0.95, 30, 10, negatives="off-topic",
                              apart=15, apart_out=3).at_threshold(0.3, 28 / 30, 0.0)  # fmt: skip
    assert measured_on("out_of_scope", quality) == (
        "10 off-topic / 30 answerable gold questions; 15 not marked off-topic measured apart"
    )
    assert class_rates_text(quality.as_dict(), "out_of_scope") == (
        "answerable kept in scope 28 of 30 (TPR 0.933); off-topic judged in scope 0 of 10 "
        "(FPR 0.000)"
    )
    few = DetectorQuality(0.99, 0.9, 1.0, 0.95, 30, 4, negatives="off-topic")
    assert too_few("out_of_scope", few, 10) == (
        "measured on only 4 off-topic gold questions; needs at least 10"
    )
    # 3 of 15: 20 %
    # 3 of 15: 20 %; Wilson 95 % (z = 1.96, z^2 = 3.8416): centre 0.2 + 3.8416/30 = 0.32805,
    # half 1.96 * sqrt(0.2 * 0.8 / 15 + 3.8416 / 900) = 1.96 * 0.12221 = 0.23953, scale
    # 1 + 3.8416/15 = 1.25611: [0.07047, 0.45186]
    assert (apart_text(quality.as_dict()) or "").startswith(
        "gold: [] rows not marked off-topic (kind: unanswerable), measured apart: it judges 3 of "
        "15 out of scope (20%; Wilson 95 % [7.0%, 45.2%]); not in its ROC AUC or rates: those "
        "on the corpus's subjects"
    )
    assert calibration_limit(quality.as_dict()) == OFF_TOPIC_CALIBRATION_LIMIT
    # without off-topic rows the entry and the words are as before (replay goldens unchanged)
    before = DetectorQuality(0.432, 0.244, 0.633, 0.95, 30, 15)
    assert "negatives" not in before.as_dict() and "apart" not in before.as_dict()
    assert measured_on("out_of_scope", before) == "15 unanswerable / 30 answerable gold questions"
    assert apart_text(before.as_dict()) is None
    assert calibration_limit(before.as_dict()) == CALIBRATION_LIMIT


class _Retriever:
    """A retriever of fixed best scores by question (the retriever-score detector's input)."""

    name = "bm25"

    def __init__(self, scores: dict[str, float]) -> None:
        self.scores = scores

    def search_batch(self, questions: list[str], k: int) -> list[list[ScoredDoc]]:
        return [[ScoredDoc("p1", self.scores[q])] for q in questions]


def test_the_retriever_detector_is_measured_on_off_topic_rows_and_counts_the_rest_apart() -> None:
    from service.runtime.analytics import _scope_stage

    rows = _rows()
    # answerable 9, 8, 7; off-topic 1, 2: the highest threshold with Youden's J = 1 is 7
    # (TPR 3/3, FPR 0/2), ROC AUC 1 (6 of 6 pairs ordered). In-domain: u1 at 7.5 >= 7 reads
    # in scope, u2 at 3 < 7 out of scope: 1 of 2 apart judged out.
    scores = {"a1": 9.0, "a2": 8.0, "a3": 7.0, "u1": 7.5, "u2": 3.0, "o1": 1.0, "o2": 2.0}
    retriever = _Retriever({q.question: scores[q.id] for q in rows})
    corpus = Corpus((Passage("p1", "The abbey was built in 1090."),
                     Passage("p2", "The abbey stands in Kent.")))  # fmt: skip
    config = AnalyticsConfig(scope_method="retriever", quality_min_class=2)
    _, calibration, quality = _scope_stage(config, GoldSet(tuple(rows)), corpus,
                                           retriever=retriever)  # type: ignore[arg-type]  # fmt: skip
    assert calibration is not None and quality is not None
    assert calibration.threshold == 7.0
    assert (quality.n_pos, quality.n_neg, quality.auc) == (3, 2, 1.0)
    assert (quality.negatives, quality.apart, quality.apart_out) == ("off-topic", 2, 1)
    # the same gold set with its off-topic rows labelled unanswerable: all four are negatives
    # (answerable 9, 8, 7 vs 7.5, 3, 1, 2): u1 at 7.5 beats a3 at 7 only, so 11 of 12 pairs
    # are ordered, AUC 11/12
    plain = [q if q.kind != "off-topic" else GoldQuestion(q.id, q.question, (), "unanswerable")
             for q in rows]  # fmt: skip
    _, _, quality = _scope_stage(config, GoldSet(tuple(plain)), corpus,
                                 retriever=retriever)  # type: ignore[arg-type]  # fmt: skip
    assert quality is not None
    assert (quality.n_neg, quality.negatives, quality.apart) == (4, "", 0)
    assert quality.auc == pytest.approx(11 / 12)


def test_over_refusals_explained_count_every_unanswerable_row() -> None:
    from service.evaluation.detector_quality import misjudged_unanswerable

    # 0 of 10 off-topic rows and 15 - 3 = 12 of the 15 in-domain rows judged in scope: 12 of 25.
    # Wilson 95 % upper bound of 12/25 (z = 1.96): centre (0.48 + 3.8416/50) / (1 + 3.8416/25)
    # = 0.48267, half-width 1.96 * sqrt(0.48 * 0.52 / 25 + 3.8416 / 2500) / 1.15366 = 0.18235,
    # upper 0.66502
    got = misjudged_unanswerable({"fpr": 0.0, "n_neg": 10, "negatives": "off-topic",
                                  "apart": 15, "apart_out": 3})  # fmt: skip
    assert got is not None and (got.count, got.n) == (12, 25)
    assert got.upper == pytest.approx(0.66502, abs=1e-4)
    # measured on every unanswerable row (no off-topic rows): as before, fpr * n_neg of n_neg
    plain = misjudged_unanswerable({"fpr": 7 / 12, "n_neg": 12})
    assert plain is not None and (plain.count, plain.n) == (7, 12)


def test_too_few_off_topic_rows_keep_every_unanswerable_row_a_negative() -> None:
    """Review of s47-f5: off-topic rows become the only negatives at
    ``quality_min_class`` of them; fewer keep every ``gold: []`` row a negative (a gold set
    that wrote its off-topic rows ``kind: unanswerable``, as main's advice said, keeps what it
    was measured on), and the rows not marked off-topic are counted by their kind."""
    from service.runtime.analytics import _scope_stage

    rows = [
        GoldQuestion("a1", "When was the abbey built?", ("p1",)),
        GoldQuestion("a2", "Who founded the abbey?", ("p1",)),
        GoldQuestion("a3", "Where is the abbey?", ("p2",)),
        GoldQuestion("u1", "When was the abbey not built?", (), kind="unanswerable"),
        GoldQuestion("u2", "What is the weather in Oslo?", (), kind="unanswerable"),
        GoldQuestion("r1", "What did the abbot earn?", (), kind="role-restricted"),
        GoldQuestion("o1", "Book me a taxi to the airport", (), kind="off-topic"),
    ]
    more = [GoldQuestion("o2", "What is my card's overdraft fee?", (), kind="off-topic"),
            GoldQuestion("o3", "Tell me a joke", (), kind="off-topic")]  # fmt: skip
    scores = {"a1": 9.0, "a2": 8.0, "a3": 7.0, "u1": 7.5, "u2": 3.0, "r1": 2.5, "o1": 1.0,
              "o2": 2.0, "o3": 0.5}  # fmt: skip
    retriever = _Retriever({q.question: scores[q.id] for q in rows + more})
    corpus = Corpus((Passage("p1", "The abbey was built in 1090."),
                     Passage("p2", "The abbey stands in Kent.")))  # fmt: skip
    config = AnalyticsConfig(scope_method="retriever", quality_min_class=3)
    # 1 off-topic row of the 3 needed: the negatives are all 4 gold: [] rows (7.5, 3, 2.5, 1)
    # against 9, 8, 7: u1 at 7.5 beats a3 only, 11 of 12 pairs ordered. Keeping every
    # answerable row in scope (scope_min_tpr 0.95) puts the threshold at 7: u1 reads in scope,
    # u2 and r1 out, 2 of the 3 not marked off-topic.
    _, calibration, quality = _scope_stage(config, GoldSet(tuple(rows)), corpus,
                                           retriever=retriever)  # type: ignore[arg-type]  # fmt: skip
    assert calibration is not None and quality is not None
    assert calibration.threshold == 7.0
    assert (quality.n_pos, quality.n_neg) == (3, 4)
    assert quality.auc == pytest.approx(11 / 12)
    assert (quality.negatives, quality.off_topic, quality.off_topic_needed) == (
        "unanswerable and off-topic", 1, 3)  # fmt: skip
    assert (quality.apart, quality.apart_out, quality.apart_kinds) == (
        3, 2, "unanswerable, role-restricted")  # fmt: skip
    # 2 of 3: Wilson 95 %: centre 2/3 + 3.8416/6 = 1.30693, half 1.96 * sqrt(2/27 + 3.8416/36)
    # = 0.83337, scale 1 + 3.8416/3 = 2.28053: [20.8%, 93.9%]; most of them out: relabel
    assert apart_text(quality.as_dict()) == (
        "1 kind: off-topic gold row, fewer than the 3 that make them its only negatives: it is "
        "measured, as before them, on all 4 gold: [] rows; of the 3 not marked off-topic "
        "(kind: unanswerable, role-restricted) it judges 2 out of scope (67%; Wilson 95 % "
        "[20.8%, 93.9%]) at the scores it was measured on: they look off-topic — those the "
        "corpus is not about belong in kind: off-topic (relabelled, 4 off-topic rows: it is "
        "then measured on them alone)"
    )
    # the advice counts the 1 off-topic row there is: 3 - 1 = 2 more for the class size
    advice = scope_calibration_advice(quality, 0.75, 3)
    assert advice.startswith("add at least 2 off-topic questions"), advice
    assert "in-domain unanswerable rows" not in advice
    # 3 off-topic rows: they are the negatives (1, 2, 0.5, all under 7: AUC 1), the other 3
    # apart, 2 of them judged out of scope at the threshold 7
    _, calibration, quality = _scope_stage(config, GoldSet(tuple(rows + more)), corpus,
                                           retriever=retriever)  # type: ignore[arg-type]  # fmt: skip
    assert calibration is not None and quality is not None
    assert calibration.threshold == 7.0
    assert (quality.n_neg, quality.auc, quality.negatives) == (3, 1.0, "off-topic")
    assert (quality.apart, quality.apart_out, quality.apart_kinds) == (
        3, 2, "unanswerable, role-restricted")  # fmt: skip
    assert measured_on("out_of_scope", quality) == (
        "3 off-topic / 3 answerable gold questions; 3 not marked off-topic measured apart"
    )


def test_the_on_topic_flag_rate_sits_beside_the_out_of_scope_share() -> None:
    from service.evaluation.detector_quality import on_topic_flag_text

    # 28 of 30 answerable kept in scope: 2 of 30 read out of scope; Wilson 95 %: centre
    # 0.06667 + 3.8416/60 = 0.13069, half 1.96 * sqrt(0.06667 * 0.93333 / 30 + 3.8416/3600)
    # = 0.10209, scale 1.12805: [1.8%, 21.3%]
    quality = DetectorQuality(0.947, 0.858, 1.0, 0.95, 30, 10, negatives="off-topic")
    text = on_topic_flag_text(quality.at_threshold(0.3, 28 / 30, 0.0).as_dict())
    assert text is not None and "2 of 30 (7%; Wilson 95 % [1.8%, 21.3%])" in text
    # without off-topic rows the reports read as before
    plain = DetectorQuality(0.947, 0.858, 1.0, 0.95, 30, 10).at_threshold(0.3, 28 / 30, 0.0)
    assert on_topic_flag_text(plain.as_dict()) is None
