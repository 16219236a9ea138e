"""Trial 41 L2: an uncalibrated out-of-scope detector says what to add to calibrate it: off-topic
questions as gold rows, and at least how many. Trial 46 F5: as ``kind: off-topic`` rows, on which
it is then measured (the counts below are of off-topic rows, ``negatives="off-topic"``); before
any, the in-domain unanswerable rows set no count (the class size and the operating point do)."""

from __future__ import annotations

import copy
import html

from service.evaluation.detector_quality import DetectorQuality, scope_calibration_advice
from service.html.rates import refusals_section
from service.jobs.replay import render_text
from service.runtime.analytics import Analytics
from tests.service.html import samples


def _quality(auc: float, n_pos: int, n_neg: int, negatives: str = "off-topic") -> DetectorQuality:
    return DetectorQuality(auc, max(0.0, auc - 0.15), min(1.0, auc + 0.15), 0.95, n_pos, n_neg,
                           negatives=negatives)  # fmt: skip


def test_the_count_lifts_the_auc_to_the_floor() -> None:
    # trial 41's figures as off-topic rows: 18, AUC 0.617, floor 0.75. An AUC is the mean
    # over the negative rows, so k rows scored beyond every answerable one give
    # (18 * 0.617 + k) / (18 + k): k = 9 gives 20.106 / 27 = 0.7447 < 0.75, k = 10 gives
    # 21.106 / 28 = 0.7538 >= 0.75
    advice = scope_calibration_advice(_quality(0.617, 40, 18), 0.75, 10)
    assert advice.startswith("add at least 10 off-topic questions as gold rows with kind: "
                             "off-topic and gold: []")  # fmt: skip
    assert "(10 such rows, each read out of scope, would bring the 28 off-topic rows" in advice
    # too few rows, good AUC: the class size sets it (10 - 4 = 6), no AUC sentence
    few = scope_calibration_advice(_quality(0.95, 40, 4), 0.75, 10)
    assert few.startswith("add at least 6 off-topic questions")
    # both: 4 rows at 0.5 need 4 * 0.25 / 0.25 = 4 for the AUC, 6 for the class size: 6
    assert scope_calibration_advice(_quality(0.5, 40, 4), 0.75, 10).startswith("add at least 6 ")
    # 30 rows at 0.5: 30 * 0.25 / 0.25 = 30 (60 rows: (15 + 30) / 60 = 0.75)
    assert scope_calibration_advice(_quality(0.5, 40, 30), 0.75, 10).startswith("add at least 30 ")


def test_the_count_lifts_the_bounded_balanced_accuracy_to_its_floor() -> None:
    # the demo's operating point: 45 of 47 answerable kept in scope, 9 of 12 unanswerable
    # judged in scope (AUC 0.808 passes). With k new rows judged out of scope the FPR is
    # 9 / (12 + k); the floor 0.68 needs its Wilson 95 % upper bound u with
    # (45/47 + 1 - u) / 2 >= 0.68, u <= 0.5974. By hand (z = 1.96): k = 10, 9/22, u = 0.6127
    # (too high); k = 11, 9/23: centre (0.3913 + 3.8416/46) / (1 + 3.8416/23) = 0.4069,
    # half-width 1.96 * sqrt(0.3913 * 0.6087 / 23 + 3.8416 / 2116) / 1.1670 = 0.1853,
    # u = 0.5921 (enough): 11
    demo = DetectorQuality(0.8076, 0.65, 0.95, 0.95, 47, 12, tpr=45 / 47, fpr=9 / 12,
                           negatives="off-topic")  # fmt: skip
    advice = scope_calibration_advice(demo, 0.75, 10, 0.68)
    assert advice.startswith("add at least 11 off-topic questions"), advice
    assert "(11 such rows, each read out of scope, would bring the 23 off-topic rows" in advice
    # an answerable side too short for the floor: (0.3 + 1) / 2 = 0.65 < 0.68; no unanswerable
    # count lifts it (AUC 0.8 and 12 rows pass their floors: none asked), and it says why:
    # 0.3 * 40 = 12 answerable questions kept in scope
    short = DetectorQuality(0.8, 0.65, 0.95, 0.95, 40, 12, tpr=0.3, fpr=0.1, negatives="off-topic")
    advice = scope_calibration_advice(short, 0.75, 10, 0.68)
    assert advice.startswith("add off-topic questions"), advice
    assert ("the answerable side falls short too: at its threshold the detector keeps 12 of the "
            "40 answerable gold questions in scope (TPR 0.300)") in advice  # fmt: skip
    # the same short side with a low AUC keeps the AUC's count (review s42): 20 rows at 0.6
    # need 20 * 0.15 / 0.25 = 12
    both = DetectorQuality(0.6, 0.45, 0.75, 0.95, 40, 20, tpr=0.3, fpr=0.1, negatives="off-topic")
    advice = scope_calibration_advice(both, 0.75, 10, 0.68)
    assert advice.startswith("add at least 12 off-topic questions"), advice
    assert "the answerable side falls short too" in advice


def test_before_any_off_topic_row_the_in_domain_rows_set_no_count() -> None:
    # trial 46 F5: 15 in-domain unanswerable rows (SQuAD "impossible"), AUC 0.432. They will
    # not be the negatives once off-topic rows are there, so their AUC asks nothing: the class
    # size asks 10 - 0 = 10. At TPR 28/30 with 0 of 10 off-topic rows judged in scope, the
    # Wilson 95 % upper bound of 0/10 is z^2 / (10 + z^2) = 3.8416 / 13.8416 = 0.2775, and
    # (0.9333 + 1 - 0.2775) / 2 = 0.828 >= 0.68: 10
    user = DetectorQuality(0.432, 0.244, 0.633, 0.95, 30, 15, tpr=28 / 30, fpr=0.6)
    advice = scope_calibration_advice(user, 0.75, 10, 0.68)
    assert advice.startswith("add at least 10 off-topic questions as gold rows with kind: "
                             "off-topic and gold: []"), advice  # fmt: skip
    assert "the 15 unanswerable rows not marked off-topic (kind: unanswerable" in advice
    assert "would bring the 10 off-topic rows to the quality floors" in advice
    # a floor of 0.85 asks (1.9333 - u) / 2 >= 0.85, u <= 0.2333: z^2 / (m + z^2) <= 0.2333
    # gives m >= 3.8416 / 0.2333 - 3.8416 = 12.62: 13 rows (u(13) = 0.2280, u(12) = 0.2425)
    assert scope_calibration_advice(user, 0.75, 10, 0.85).startswith("add at least 13 ")


def test_too_few_answerable_rows_are_asked_for_by_count() -> None:
    # review s42 BLOCKER: 5 answerable rows under quality_min_class 10 left the detector
    # untrusted, and the advice asked for unanswerable rows. 20 unanswerable rows at AUC 0.95
    # pass; at its threshold 1 of 20 let through: the Wilson upper bound of 1/20 is 0.236, so
    # (0.95 + 1 - 0.236) / 2 = 0.857 >= 0.68 - nothing to add on that side; 10 - 5 = 5
    few = DetectorQuality(0.95, 0.85, 1.0, 0.95, 5, 20, tpr=0.95, fpr=0.05, negatives="off-topic")
    assert scope_calibration_advice(few, 0.75, 10, 0.68) == (
        "add at least 5 answerable gold questions with their passages (it was measured on 5; "
        "each class needs at least 10)"
    )


def test_only_an_uncalibrated_scope_detector_gets_advice() -> None:
    analytics = Analytics(stages=[], quality_min_class=10)
    analytics.detector_quality["out_of_scope"] = _quality(0.617, 40, 18)
    analytics.detector_quality["novelty"] = _quality(0.6, 40, 18)
    assert (analytics.to_calibrate("out_of_scope") or "").startswith("add at least 10 ")
    assert analytics.to_calibrate("novelty") is None  # (its advice is not this one)
    analytics.detector_quality["out_of_scope"] = _quality(0.9, 40, 18)
    assert analytics.to_calibrate("out_of_scope") is None


def test_the_reports_print_it() -> None:
    advice = scope_calibration_advice(_quality(0.617, 40, 18), 0.75, 10)
    doc = copy.deepcopy(samples.replay_report())
    doc["gold_candidates"] = None
    scope = doc["analytics"]["out_of_scope"]
    scope["uncalibrated"] = (
        "out_of_scope ROC AUC 0.617 [0.454, 0.765] is below the quality floor 0.75"
    )
    scope["quality"] = {**_quality(0.617, 40, 18).as_dict(), "to_calibrate": advice}
    lines = render_text(doc).splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("out of scope (UNCALIBRATED"))
    assert f"  to calibrate it: {advice}" in lines[at + 1 : at + 4]
    page = html.unescape(str(refusals_section(doc["analytics"], None)))
    assert f"To calibrate it: {advice}." in page
