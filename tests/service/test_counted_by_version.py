"""A count is as trustworthy as the least trustworthy out-of-scope detector version that
contributed to it (trial 50 H2): after an accept refitted an uncalibrated detector into a
calibrated one, ``/v1/refusals`` showed the 541 / 563 / 109 the old one counted with no
"UNCALIBRATED, not facts" label, and the over-refusals its error explains fell 683 → 375
because the bound used the new detector's FPR (1 of 11) instead of the old one's (4 of 10).

The annotation totals keep, per detector version that counted, its calibrated flag and the
rates that judge its error; the reports label the cumulative counts by the versions that made
them and sum each version's own bound over its own counts. Values below are worked out by
hand (Wilson 1927, z = 1.96)."""

from __future__ import annotations

import json
import math
import shutil
import time
import types
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.evaluation.detector_quality import (
    counts_uncalibrated_text,
    explained_by_versions,
    explained_by_versions_text,
)
from service.pipeline.totals import AnnotationTotals, counted_by_version

#: Wilson 95 % upper bounds, by hand: 4 of 10 → (0.4 + 0.19208 + 1.96·√(0.024 + 0.009604))
#: / 1.38416 = 0.68733; 1 of 11 → 0.37736 (the trial's 0.687 and 0.377).
UPPER_4_OF_10 = 0.68733
UPPER_1_OF_11 = 0.37736

OLD = {"calibrated": False, "uncalibrated": "balanced accuracy 0.786 below 0.80",
       "misjudged_unanswerable": {"count": 4, "of": 10, "upper": UPPER_4_OF_10},
       "misjudged_answerable": {"count": 2, "of": 34, "upper": 0.1909}}  # fmt: skip
NEW = {"calibrated": True, "uncalibrated": None,
       "misjudged_unanswerable": {"count": 1, "of": 11, "upper": UPPER_1_OF_11},
       "misjudged_answerable": {"count": 1, "of": 36, "upper": 0.10}}  # fmt: skip


def _note(out: bool, refused: bool) -> dict[str, Any]:
    """One scored answer: over-refusal = refused while in scope, under = answered while out."""
    return {"refused": refused, "out_of_scope": out, "over_refusal": refused and not out,
            "under_refusal": out and not refused}  # fmt: skip


def _batch(notes: list[dict[str, Any]]) -> types.SimpleNamespace:
    return types.SimpleNamespace(annotations=notes, events=[None] * len(notes), counted=None)


#: 20 scored: 5 out of scope (3 refused, 2 answered: under), 15 in scope (8 refused: over)
FIRST = (
    [_note(True, True)] * 3
    + [_note(True, False)] * 2
    + [_note(False, True)] * 8
    + [_note(False, False)] * 7
)
#: 10 scored: 2 out of scope (1 refused, 1 answered), 8 in scope (3 refused)
SECOND = (
    [_note(True, True), _note(True, False)] + [_note(False, True)] * 3 + [_note(False, False)] * 5
)


def _two_versions() -> AnnotationTotals:
    totals = AnnotationTotals()
    totals.detector, totals.judge = "threshold 0.1905", OLD
    totals.process(_batch(FIRST))  # type: ignore[arg-type]
    totals.detector, totals.judge = "threshold 0.3614", NEW  # the accept's refit
    totals.process(_batch(SECOND))  # type: ignore[arg-type]
    return totals


def _counts(versions: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    keys = ("detector", "calibrated", "scope_scored", "out_of_scope", "over_refusals",
            "under_refusals", "scored_refusals")  # fmt: skip
    return [tuple(v[k] for k in keys) for v in versions]


def test_two_versions_split_the_counts_and_each_is_judged_by_its_own_rates() -> None:
    totals = _two_versions()
    versions = counted_by_version(totals.counted_under, totals.flags)
    # scored refusals: 3 + 8 = 11 under the old one, 1 + 3 = 4 under the new one
    assert _counts(versions) == [("threshold 0.1905", False, 20, 5, 8, 2, 11),
                                 ("threshold 0.3614", True, 10, 2, 3, 1, 4)]  # fmt: skip
    # ⌊0.68733 · 11⌋ + ⌊0.37736 · 4⌋ = 7 + 1 = 8 (the new rates alone: ⌊0.37736 · 15⌋ = 5)
    assert explained_by_versions(versions, "over_refusals") == 8
    # ⌊0.1909 · 20⌋ + ⌊0.10 · 10⌋ = 3 + 1 = 4
    assert explained_by_versions(versions, "under_refusals") == 4
    assert explained_by_versions_text(versions, "over_refusals") == (
        "each detector's own rates over its own counts: up to 7 of 11 scored refusals under "
        "threshold 0.1905 (4 of 10, 95 % upper bound 68.7%), up to 1 of 4 under threshold "
        "0.3614 (1 of 11, 95 % upper bound 37.7%)"
    )
    assert counts_uncalibrated_text(versions) == (
        "out of scope 5 of 7, over-refusals 8 of 11, under-refusals 2 of 3 (scored 20 of 30) "
        "counted by an uncalibrated detector (threshold 0.1905)"
    )


def test_all_counts_by_the_uncalibrated_version_before_a_batch_of_the_new_one() -> None:
    """The trial's moment: the refit is in, no batch counted under it yet: every count is the
    old detector's (541 of 541), and its rates bound them."""
    totals = AnnotationTotals()
    totals.detector, totals.judge = "threshold 0.1905", OLD
    totals.process(_batch(FIRST))  # type: ignore[arg-type]
    totals.detector, totals.judge = "threshold 0.3614", NEW
    versions = counted_by_version(totals.counted_under, totals.flags)
    assert counts_uncalibrated_text(versions) == (
        "out of scope 5 of 5, over-refusals 8 of 8, under-refusals 2 of 2 (scored 20 of 20) "
        "counted by an uncalibrated detector (threshold 0.1905)"
    )
    assert explained_by_versions(versions, "over_refusals") == 7  # ⌊0.68733 · 11⌋
    assert explained_by_versions_text(versions, "over_refusals") is None  # one version


def test_counts_only_by_calibrated_versions_are_facts() -> None:
    totals = AnnotationTotals()
    totals.detector, totals.judge = "A", NEW
    totals.process(_batch(FIRST))  # type: ignore[arg-type]
    totals.detector, totals.judge = "B", {**NEW, "misjudged_unanswerable": None}
    versions = counted_by_version(totals.counted_under, totals.flags)
    assert counts_uncalibrated_text(versions) is None
    # a version with no rates yet counted nothing: ⌊0.37736 · 11⌋ = 4
    assert explained_by_versions(versions, "over_refusals") == 4


def test_a_refit_that_keeps_the_name_but_flips_the_calibration_is_another_version() -> None:
    totals = AnnotationTotals()
    totals.detector, totals.judge = "A", OLD
    totals.process(_batch(FIRST))  # type: ignore[arg-type]
    totals.judge = NEW
    totals.process(_batch(SECOND))  # type: ignore[arg-type]
    assert [(r["detector"], r["from_scored"], r["calibrated"]) for r in totals.counted_under] == [
        ("A", 0, False), ("A", 20, True)]  # fmt: skip


def test_the_versions_survive_a_restart() -> None:
    totals = _two_versions()
    state = json.loads(json.dumps(totals.state_snapshot()))  # as the state store keeps it
    restarted = AnnotationTotals()
    restarted.restore(state)
    assert counted_by_version(restarted.counted_under, restarted.flags) == counted_by_version(
        totals.counted_under, totals.flags
    )
    restarted.detector, restarted.judge = "threshold 0.3614", NEW  # the same start again
    restarted.process(_batch(SECOND))  # type: ignore[arg-type]
    assert len(restarted.counted_under) == 2  # no new version: the same name and judgement


def test_an_older_state_counts_by_a_detector_of_unknown_calibration() -> None:
    """A state kept before session 50: its rows name the detector, not its calibration or
    rates. Its counts are labelled as such, and bounded whole (upper 1: claims nothing)."""
    old = AnnotationTotals()
    old.restore({"flags": {"scope_scored": 7, "out_of_scope": 2, "over_refusals": 1,
                           "under_refusals": 1, "scored_refusals": 3},
                 "counted_under": [{"detector": "A", "from_scored": 0}]})  # fmt: skip
    old.detector, old.judge = "A", NEW  # the same detector, its calibration now known
    old.process(_batch(SECOND))  # type: ignore[arg-type]
    versions = counted_by_version(old.counted_under, old.flags)
    assert _counts(versions) == [("A", None, 7, 2, 1, 1, 3), ("A", True, 10, 2, 3, 1, 4)]
    assert counts_uncalibrated_text(versions) == (
        "out of scope 2 of 4, over-refusals 1 of 4, under-refusals 1 of 2 (scored 7 of 17) "
        "counted by a detector whose calibration was not recorded (A; counted by a version "
        "before session 50)"
    )
    # 3 (all of the unknown version's scored refusals) + ⌊0.37736 · 4⌋ = 3 + 1
    assert explained_by_versions(versions, "over_refusals") == 4
    # with no row at all: every count is the unknown head's
    bare = AnnotationTotals()
    bare.restore({"flags": {"scope_scored": 7, "out_of_scope": 2}})
    assert _counts(counted_by_version(bare.counted_under, bare.flags)) == [
        (None, None, 7, 2, 0, 0, 0)]  # fmt: skip


@pytest.mark.slow  # a served app with analytics (models)
def test_served_refusals_keep_the_old_detectors_label_and_rates_after_an_accept_refit(
    tmp_path: Path,
) -> None:
    """End to end: ``serve`` counts the demo log under the demo's uncalibrated detector, an
    unanswerable question is accepted into the gold file and the detector refitted; the
    counts ``/v1/refusals`` shows are still labelled by the detector that made them, their
    error bound uses its rates, and that stays so when the detector now counting is
    calibrated (here: its floors lowered in place, as a refit that clears them would)."""
    from service.demo import demo_path
    from service.runtime.analytics import apply_quality_floor
    from service.settings import load_settings
    from tests.service.api.test_app import TOKEN, Server, _free_port

    log = tmp_path / "log.jsonl"
    with demo_path("querylog.jsonl").open(encoding="utf-8") as handle:
        log.write_text("".join(line for _, line in zip(range(300), handle, strict=False)))
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    settings = load_settings(
        gold_set=gold, corpus=demo_path("corpus.jsonl"),
        source={"kind": "file", "path": str(log)}, state={"path": tmp_path / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
    )  # fmt: skip
    with Server(settings) as server:
        deadline = time.monotonic() + 300
        while not httpx.get(server.base + "/v1/status").json()["input_finished"]:
            assert time.monotonic() < deadline, "the log was not finished in time"
            time.sleep(0.2)
        before = httpx.get(server.base + "/v1/refusals", timeout=30).json()["out_of_scope"]
        assert before["uncalibrated"]  # the demo's detector (FPR 11 of 12)
        [version] = before["counted_by"]
        assert version["calibrated"] is False and version["scope_scored"] == before["scored"]
        assert version["out_of_scope"] == before["out_of_scope"] > 0
        old_rates = version["misjudged_unanswerable"]
        assert old_rates == before["misjudged_unanswerable"]

        row = {"id": "q-accepted", "kind": "unanswerable", "gold": [],
               "question": "Can I bring my pet iguana to the convocation ceremony?"}  # fmt: skip
        with gold.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        runtime = server.runtime
        runtime.gold_accepted(None)
        deadline = time.monotonic() + 300
        while runtime.gold_refreshes < 1 and runtime.gold_refresh_error is None:
            assert time.monotonic() < deadline, "the refresh did not end in time"
            time.sleep(0.2)
        assert runtime.gold_refresh_error is None
        analytics = runtime.live.analytics
        with runtime.engine.lock:  # the detector now counting clears its floors
            analytics.quality_floor = analytics.min_balanced_accuracy = 0.0
            analytics.quality_min_class = 1
            apply_quality_floor(analytics)
        after = httpx.get(server.base + "/v1/refusals", timeout=30).json()["out_of_scope"]
        assert after["quality"]["uncalibrated"] is None  # the new detector's own verdict
        assert after["misjudged_unanswerable"]["of"] == old_rates["of"] + 1  # refitted: 13
        # the counts are still the old detector's, and say so
        assert (after["scored"], after["out_of_scope"]) == (before["scored"],
                                                            before["out_of_scope"])  # fmt: skip
        assert (
            after["counts_uncalibrated"]
            == after["uncalibrated"]
            == (
                f"out of scope {before['out_of_scope']} of {before['out_of_scope']}, over-refusals "
                f"{before['over_refusals']} of {before['over_refusals']}, under-refusals "
                f"{before['under_refusals']} of {before['under_refusals']} (scored "
                f"{before['scored']} of {before['scored']}) counted by an uncalibrated detector "
                f"({version['detector']})"
            )
        )
        refused = version["scored_refusals"]
        assert after["over_refusals_explained"] == math.floor(old_rates["upper"] * refused)
        assert after["over_refusals_explained"] == before["over_refusals_explained"]
        status = httpx.get(server.base + "/v1/status").json()
        assert any(n.startswith("the out-of-scope counts are UNCALIBRATED, not facts: out of "
                                "scope") for n in status["notices"])  # fmt: skip
