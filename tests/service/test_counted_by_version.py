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

import gzip
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


#: the row a state kept before session 51 has: the detector's name, not its calibration
OLDER = {"flags": {"scope_scored": 7, "out_of_scope": 2, "over_refusals": 1,
                   "under_refusals": 1, "scored_refusals": 3},
         "counted_under": [{"detector": "A", "from_scored": 0}]}  # fmt: skip


def test_an_older_states_row_naming_the_detector_now_counting_takes_its_calibration() -> None:
    """Session 51: a state kept before it names the detector that counted, not its calibration.
    The name carries the threshold and cutoffs, so the same name now is the same fit: the row
    takes its calibration and rates, and the first batch adds no second row."""
    old = AnnotationTotals()
    old.detector, old.judge = "A", NEW  # the start builds the detector before the restore
    old.restore(json.loads(json.dumps(OLDER)))
    # at once, before any batch (a report right after the resume says so too)
    assert [(r["detector"], r["from_scored"], r["calibrated"]) for r in old.counted_under] == [
        ("A", 0, True)]  # fmt: skip
    assert old.counted_under[0]["from"] == dict.fromkeys(
        ("scope_scored", "out_of_scope", "over_refusals", "under_refusals", "scored_refusals"), 0
    )
    old.process(_batch(SECOND))  # type: ignore[arg-type]
    assert len(old.counted_under) == 1  # no second row for the same detector
    versions = counted_by_version(old.counted_under, old.flags)
    # 7 + 10 scored, 2 + 2 out, 1 + 3 over, 1 + 1 under, 3 + 4 scored refusals
    assert _counts(versions) == [("A", True, 17, 4, 4, 2, 7)]
    assert counts_uncalibrated_text(versions) is None  # a calibrated detector made them all
    assert explained_by_versions(versions, "over_refusals") == 2  # ⌊0.37736 · 7⌋
    assert explained_by_versions(versions, "under_refusals") == 1  # ⌊0.10 · 17⌋
    # the row kept so, across a restart
    again = AnnotationTotals()
    again.restore(json.loads(json.dumps(old.state_snapshot())))
    assert again.counted_under == old.counted_under


def test_the_adoption_waits_for_the_judge_when_the_restore_comes_first() -> None:
    old = AnnotationTotals()
    old.restore(json.loads(json.dumps(OLDER)))
    assert "calibrated" not in old.counted_under[0]  # nothing known to adopt yet
    old.detector, old.judge = "A", OLD
    old.process(_batch(SECOND))  # type: ignore[arg-type]
    versions = counted_by_version(old.counted_under, old.flags)
    assert _counts(versions) == [("A", False, 17, 4, 4, 2, 7)]
    assert counts_uncalibrated_text(versions) == (
        "out of scope 4 of 4, over-refusals 4 of 4, under-refusals 2 of 2 (scored 17 of 17) "
        "counted by an uncalibrated detector (A)"
    )
    assert explained_by_versions(versions, "over_refusals") == 4  # ⌊0.68733 · 7⌋


def test_an_older_states_row_naming_another_detector_stays_of_unknown_calibration() -> None:
    """A row naming another detector than the one now counting: its calibration is not known
    (the detector now counting is another fit), so its counts keep that label, and are bounded
    whole (upper 1: claims nothing)."""
    old = AnnotationTotals()
    old.detector, old.judge = "B", NEW
    old.restore(json.loads(json.dumps(OLDER)))
    assert old.counted_under == [{"detector": "A", "from_scored": 0}]  # left as it was
    old.process(_batch(SECOND))  # type: ignore[arg-type]
    versions = counted_by_version(old.counted_under, old.flags)
    assert _counts(versions) == [("A", None, 7, 2, 1, 1, 3), ("B", True, 10, 2, 3, 1, 4)]
    assert counts_uncalibrated_text(versions) == (
        "out of scope 2 of 4, over-refusals 1 of 4, under-refusals 1 of 2 (scored 7 of 17) "
        "counted by a detector whose calibration was not recorded (A; a state kept before "
        "session 51 named the detectors that counted, not their calibration, and only a last "
        "one named as the detector now counting takes its calibration)"
    )
    # 3 (all of the unknown version's scored refusals) + ⌊0.37736 · 4⌋ = 3 + 1
    assert explained_by_versions(versions, "over_refusals") == 4
    # 7 (all of its scored questions) + ⌊0.10 · 10⌋ = 7 + 1
    assert explained_by_versions(versions, "under_refusals") == 8
    # with no row at all: every count is the unknown head's
    bare = AnnotationTotals()
    bare.restore({"flags": {"scope_scored": 7, "out_of_scope": 2}})
    assert _counts(counted_by_version(bare.counted_under, bare.flags)) == [
        (None, None, 7, 2, 0, 0, 0)]  # fmt: skip


def test_an_older_states_last_row_after_another_is_adopted_from_the_resume_on() -> None:
    """Two rows kept without calibration, the last naming the detector now counting: the
    older state kept no per-flag totals where the second began, so what either counted before
    the resume cannot be split and stays of unknown calibration; the second row takes the
    calibration from the resume on (still one row)."""
    old = AnnotationTotals()
    old.detector, old.judge = "B", NEW
    old.restore({"flags": OLDER["flags"], "counted_under": [
        {"detector": "A", "from_scored": 0}, {"detector": "B", "from_scored": 4}]})  # fmt: skip
    old.process(_batch(SECOND))  # type: ignore[arg-type]
    assert [(r["detector"], r["from_scored"], r.get("calibrated")) for r in old.counted_under] == [
        ("A", 0, None), ("B", 4, True)]  # fmt: skip
    versions = counted_by_version(old.counted_under, old.flags)
    assert _counts(versions) == [("A; B before its calibration was recorded", None, 7, 2, 1, 1, 3),
                                 ("B", True, 10, 2, 3, 1, 4)]  # fmt: skip


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
        # the status page's sentence beside that figure quotes the same old rates (RC B1)
        page = httpx.get(server.base + "/", timeout=60).text
        assert (
            f"up to {after['over_refusals_explained']} explained by the detector that counted "
            f"them ({version['detector']}) judging unanswerable questions in scope: "
            f"{old_rates['count']} of {old_rates['of']} unanswerable gold questions"
        ) in page
        status = httpx.get(server.base + "/v1/status").json()
        assert any(n.startswith("the out-of-scope counts are UNCALIBRATED, not facts: out of "
                                "scope") for n in status["notices"])  # fmt: skip


#: A state main's code wrote before session 51 (tests/service/fixtures/SOURCE.md): the demo
#: log's first 300 events, counted under one detector, its row without calibration.
OLDER_STATE = Path(__file__).parent / "fixtures" / "state_before_s51_demo300.sqlite.gz"
OLDER_DETECTOR = "embedding, threshold 0.1926, off-corpus cutoff Latn 0.2626"
#: its totals (scope_scored, out_of_scope, over_refusals, under_refusals, scored_refusals)
OLDER_TOTALS = (300, 21, 6, 13, 14)


def _wilson_upper(k: int, n: int, z: float = 1.96) -> float:
    """Wilson (1927) score interval's upper end, written out here (not the service's)."""
    p = k / n
    return (p + z * z / (2 * n) + z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))) / (
        1 + z * z / n
    )


def _resume_older_state(tmp_path: Path, gold_rows: list[str]) -> dict[str, Any]:
    """Resume the older state with this branch's ``goldwatch replay`` on the demo log's first
    400 events (the 300 it counted are dropped as duplicates) and the demo gold set plus
    ``gold_rows``; the report's ``out_of_scope`` section."""
    from service.demo import demo_path
    from tests.cli.goldwatch_cli import demo_log_and_config, run_goldwatch

    log, config = demo_log_and_config(tmp_path, 400)
    gold = tmp_path / "gold.jsonl"
    # the demo gold set the fixture was written with: the 59 rows before the fifty-first
    # session added q-060 and q-061 (service/demo/README.md), so the same fit and name
    rows = [line for line in demo_path("gold.jsonl").read_text(encoding="utf-8").splitlines()
            if line.strip() and json.loads(line)["id"] not in {"q-060", "q-061"}]  # fmt: skip
    assert len(rows) == 59
    gold.write_text("".join(row + "\n" for row in rows + gold_rows), encoding="utf-8")
    config.write_text(f"gold_set: {gold}\ncorpus: {demo_path('corpus.jsonl')}\n", "utf-8")
    state = tmp_path / "state.sqlite"
    state.write_bytes(gzip.decompress(OLDER_STATE.read_bytes()))
    done = run_goldwatch(["replay", str(log), "--config", str(config), "--state", str(state),
                          "--format", "json"], tmp_path, timeout_s=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    scope: dict[str, Any] = json.loads(done.stdout)["analytics"]["out_of_scope"]
    assert scope["scored"] == 400  # 300 restored + 100 new
    return scope


@pytest.mark.slow  # two replays with analytics (models)
def test_an_older_state_resumed_under_the_same_detector_is_one_calibration_recorded_row(
    tmp_path: Path,
) -> None:
    """The same gold set, so the same fit and name: the one row takes the detector's
    calibration (the demo's is uncalibrated: FPR 11 of 12), all 400 counts are its, and its
    rates bound them (before session 51's fix: a second row for it, the first 300 labelled
    "calibration not recorded" and bounded whole: under-refusals explained 300 + 22 = 322)."""
    scope = _resume_older_state(tmp_path, [])
    [row] = scope["counted_under"]
    assert (row["detector"], row["from_scored"], row["calibrated"]) == (OLDER_DETECTOR, 0, False)
    assert set(row["from"].values()) == {0}
    [version] = scope["counted_by"]
    assert version["scope_scored"] == 400 and version["out_of_scope"] == scope["out_of_scope"]
    assert version["misjudged_unanswerable"]["count"] == 11
    assert version["misjudged_unanswerable"]["of"] == 12
    assert (version["misjudged_answerable"]["count"], version["misjudged_answerable"]["of"]) == (
        5, 47)  # fmt: skip
    assert scope["counts_uncalibrated"] == (
        f"out of scope {scope['out_of_scope']} of {scope['out_of_scope']}, over-refusals "
        f"{scope['over_refusals']} of {scope['over_refusals']}, under-refusals "
        f"{scope['under_refusals']} of {scope['under_refusals']} (scored 400 of 400) counted "
        f"by an uncalibrated detector ({OLDER_DETECTOR})"
    )
    assert "not recorded" not in scope["uncalibrated"]
    # ⌊0.22594 · 400⌋ = 90 (5 of 47: (0.10638 + 0.04087 + 0.09716) / 1.08174 = 0.22594)
    assert scope["under_refusals_explained"] == math.floor(_wilson_upper(5, 47) * 400) == 90
    assert scope["over_refusals_explained"] == math.floor(
        _wilson_upper(11, 12) * version["scored_refusals"]
    )
    assert scope["counted_under_notice"] is None  # one detector


@pytest.mark.slow  # two replays with analytics (models)
def test_an_older_state_resumed_under_another_detector_keeps_its_unknown_calibration(
    tmp_path: Path,
) -> None:
    """One unanswerable question accepted into the gold set: the refit has another threshold,
    so another name; the older row is another fit, and its 300 counts stay "calibration not
    recorded", bounded whole; the new detector's 100 are judged by its own rates."""
    question = "Can I bring my pet iguana to the convocation ceremony?"
    accepted = json.dumps({"id": "q-accepted", "kind": "unanswerable", "gold": [],
                           "question": question})  # fmt: skip
    scope = _resume_older_state(tmp_path, [accepted])
    older, newer = scope["counted_under"]
    assert older == {"detector": OLDER_DETECTOR, "from_scored": 0}  # kept as it was
    assert newer["detector"] != OLDER_DETECTOR and newer["from_scored"] == 300
    first, second = scope["counted_by"]
    keys = ("scope_scored", "out_of_scope", "over_refusals", "under_refusals", "scored_refusals")
    assert (first["detector"], first["calibrated"]) == (OLDER_DETECTOR, None)
    assert tuple(first[k] for k in keys) == OLDER_TOTALS
    assert second["scope_scored"] == 100
    assert second["out_of_scope"] == scope["out_of_scope"] - 21
    assert second["misjudged_unanswerable"]["of"] == 13  # the accepted row judged too
    # (the new detector is uncalibrated too, FPR 9 of 13: all of them)
    assert scope["counts_uncalibrated"] == (
        f"out of scope {scope['out_of_scope']} of {scope['out_of_scope']}, over-refusals "
        f"{scope['over_refusals']} of {scope['over_refusals']}, under-refusals "
        f"{scope['under_refusals']} of {scope['under_refusals']} (scored 400 of 400) counted "
        f"by an uncalibrated detector ({newer['detector']}) or a detector whose calibration "
        f"was not recorded ({OLDER_DETECTOR}; a state kept before session 51 named the "
        "detectors that counted, not their calibration, and only a last one named as the "
        "detector now counting takes its calibration)"
    )
    # the detector now counting is uncalibrated too: the label names its reason and the
    # shares, the unrecorded one among them (RC NIT 2)
    assert scope["uncalibrated"] == (
        f"{scope['quality']['uncalibrated']}; and {scope['counts_uncalibrated']}"
    )
    rates = second["misjudged_answerable"]
    # its 300 whole + ⌊upper · 100⌋ of the new one's own rate
    assert scope["under_refusals_explained"] == 300 + math.floor(
        _wilson_upper(rates["count"], rates["of"]) * 100
    )
    let_in = second["misjudged_unanswerable"]
    assert scope["over_refusals_explained"] == 14 + math.floor(
        _wilson_upper(let_in["count"], let_in["of"]) * second["scored_refusals"]
    )


# -- the "explained by its own error" sentence beside the figure (RC B1) ----------------------
#
# One version counted every scope count, and it is not the detector now counting (a refit
# before any batch; an older state resumed under another detector): the figure is that
# version's own bound, so the sentence must quote its rates, not the new detector's.

#: The trial's counts (3990 scored, 995 scored refusals) all by the old detector (``OLD``).
TRIAL_VERSION = {"detector": "threshold 0.1905", **OLD, "scope_scored": 3990,
                 "out_of_scope": 541, "over_refusals": 563, "under_refusals": 109,
                 "scored_refusals": 995}  # fmt: skip


def _scope_report(version: dict[str, Any], over: int, under: int,
                  now: dict[str, Any] = NEW) -> dict[str, Any]:  # fmt: skip
    """The sample replay report with ``version`` the one that counted every scope count,
    ``now`` the detector counting now, ``over`` / ``under`` the explained figures."""
    import copy

    from tests.service.html.samples import replay_report

    report = copy.deepcopy(replay_report(extras=False))
    report["analytics"]["out_of_scope"] |= {
        "scored": version["scope_scored"], "out_of_scope": version["out_of_scope"],
        "share": version["out_of_scope"] / version["scope_scored"],
        "over_refusals": version["over_refusals"], "under_refusals": version["under_refusals"],
        "misjudged_unanswerable": now["misjudged_unanswerable"],
        "misjudged_answerable": now["misjudged_answerable"],
        "over_refusals_explained": over, "under_refusals_explained": under,
        "over_refusals_explained_by": None, "under_refusals_explained_by": None,
        "counted_by": [version],
    }  # fmt: skip
    return report


#: ⌊0.68733 · 995⌋ = 683 (4 of 10; the new detector's 0.37736 · 995 = 375 is not it);
#: ⌊0.1909 · 3990⌋ = 761 (2 of 34)
TRIAL_OVER = ("over-refusals 563 (up to 683 explained by the detector that counted them "
              "(threshold 0.1905) judging unanswerable questions in scope: 4 of 10 "
              "unanswerable gold questions on held-out data, 95 % upper bound 68.7% of the "
              "scored refusals; within its error")  # fmt: skip
TRIAL_UNDER = ("under-refusals 109 (up to 761 explained by the detector that counted them "
               "(threshold 0.1905) judging answerable questions out of scope: 2 of 34 "
               "answerable gold questions on held-out data, 95 % upper bound 19.1% of the "
               "scored questions; within its error: no evidence of made-up answers, nor of "
               "none)")  # fmt: skip


def test_the_text_report_quotes_the_rates_of_the_one_version_that_counted() -> None:
    from service.jobs.replay import render_text

    text = render_text(_scope_report(TRIAL_VERSION, 683, 761))  # type: ignore[arg-type]
    [line] = [x for x in text.splitlines() if x.startswith("out of scope")]
    assert TRIAL_OVER in line and TRIAL_UNDER in line
    assert "1 of 11" not in line and "37.7%" not in line  # the new detector's rates


def test_the_html_report_quotes_the_rates_of_the_one_version_that_counted() -> None:
    from service.html.rates import _both_directions

    analytics = _scope_report(TRIAL_VERSION, 683, 761)["analytics"]
    html = str(_both_directions(analytics))
    over = TRIAL_OVER.removeprefix("over-refusals 563 (")
    under = TRIAL_UNDER.removeprefix("under-refusals 109 (").removesuffix(")")
    assert f"over-refusals the detector&#x27;s own error explains</td><td>{over}" in html
    assert f"under-refusals the detector&#x27;s own error explains</td><td>{under}<" in html
    assert "1 of 11" not in html and "37.7%" not in html


#: An older state's 300 counts (under-refusals 13, 14 scored refusals, 6 over) by a detector
#: whose rates were not recorded, resumed under another with no new event: bounded whole.
UNRECORDED_VERSION = {"detector": OLDER_DETECTOR, "calibrated": None, "uncalibrated": None,
                      "misjudged_unanswerable": None, "misjudged_answerable": None,
                      "scope_scored": 300, "out_of_scope": 21, "over_refusals": 6,
                      "under_refusals": 13, "scored_refusals": 14}  # fmt: skip


def test_the_reports_say_a_version_with_no_rates_recorded_is_bounded_whole() -> None:
    from service.html.rates import _both_directions
    from service.jobs.replay import render_text

    report = _scope_report(UNRECORDED_VERSION, 14, 300)
    under = (f"up to 300 explained by the detector that counted them ({OLDER_DETECTOR}): its "
             "rates were not recorded, so all of them; within its error: no evidence of "
             "made-up answers, nor of none")  # fmt: skip
    over = (f"up to 14 explained by the detector that counted them ({OLDER_DETECTOR}): its "
            "rates were not recorded, so all of them; within its error")  # fmt: skip
    [line] = [x for x in render_text(report).splitlines()  # type: ignore[arg-type]
              if x.startswith("out of scope")]  # fmt: skip
    assert f"under-refusals 13 ({under})" in line and f"over-refusals 6 ({over}" in line
    assert "1 of 36" not in line and "1 of 11" not in line
    html = str(_both_directions(report["analytics"]))
    assert f"</td><td>{under}<" in html and f"</td><td>{over}" in html


def test_one_version_that_is_the_detector_now_counting_reads_as_before() -> None:
    """Its rates are the ones now: the sentence is the one every report had."""
    from service.jobs.replay import render_text

    version = {**TRIAL_VERSION, **NEW, "detector": "threshold 0.3614"}
    # ⌊0.37736 · 995⌋ = 375, ⌊0.10 · 3990⌋ = 399
    [line] = [x for x in render_text(_scope_report(version, 375, 399)).splitlines()  # type: ignore[arg-type]
              if x.startswith("out of scope")]  # fmt: skip
    # 563 − 375 = 188 beyond the bound
    assert ("over-refusals 563 (up to 375 explained by the detector judging unanswerable "
            "questions in scope: 1 of 11 unanswerable gold questions on held-out data, 95 % "
            "upper bound 37.7% of the scored refusals; 188 beyond it)") in line  # fmt: skip
    assert ("under-refusals 109 (up to 399 explained by the detector judging answerable "
            "questions out of scope: 1 of 36 answerable gold questions on held-out data, "
            "95 % upper bound 10.0% of the scored questions;") in line  # fmt: skip


def test_the_status_page_says_the_calibrated_detector_may_alarm_after_its_warm_up() -> None:
    """RC NIT 1: after a refit the out-of-scope drift windows start afresh, so the calibrated
    detector now counting alarms only once its baseline has warmed up again."""
    from service.html.rates import _both_directions

    analytics = _scope_report(TRIAL_VERSION, 683, 761)["analytics"]
    analytics["out_of_scope"] |= {"quality": {"auc": 0.914, "uncalibrated": None},
                                  "uncalibrated": "out of scope 541 of 541 counted by an "
                                  "uncalibrated detector (threshold 0.1905)"}  # fmt: skip
    html = str(_both_directions(analytics))
    assert ("(out of scope 541 of 541 counted by an uncalibrated detector (threshold 0.1905)); "
            "the detector now counting is calibrated: its out-of-scope drift may alarm once "
            "its baseline has warmed up.") in html  # fmt: skip
    assert "its drift alarms" not in html


def test_the_label_names_the_unrecorded_share_when_the_one_now_is_uncalibrated_too() -> None:
    """RC NIT 2: both reasons hold; both are said. One uncalibrated detector still counting:
    its own reason says it all."""
    from service.evaluation.detector_quality import scope_uncalibrated_text

    now = "FPR 9 of 13"
    older = {**UNRECORDED_VERSION}
    newer = {"detector": "threshold 0.2", "calibrated": False, "uncalibrated": now,
             "misjudged_unanswerable": None, "misjudged_answerable": None,
             "scope_scored": 100, "out_of_scope": 4, "over_refusals": 2,
             "under_refusals": 1, "scored_refusals": 5}  # fmt: skip
    assert scope_uncalibrated_text(now, [newer]) == now
    assert scope_uncalibrated_text(None, [newer]) == (
        "out of scope 4 of 4, over-refusals 2 of 2, under-refusals 1 of 1 (scored 100 of 100) "
        "counted by an uncalibrated detector (threshold 0.2)"
    )
    assert scope_uncalibrated_text(now, [older, newer]) == (
        f"{now}; and out of scope 25 of 25, over-refusals 8 of 8, under-refusals 14 of 14 "
        f"(scored 400 of 400) counted by an uncalibrated detector (threshold 0.2) or a "
        f"detector whose calibration was not recorded ({OLDER_DETECTOR}; a state kept "
        "before session 51 named the detectors that counted, not their calibration, and only "
        "a last one named as the detector now counting takes its calibration)"
    )
    # an older uncalibrated version for another reason is named too
    other = {**newer, "detector": "threshold 0.1", "uncalibrated": "AUC 0.6"}
    assert scope_uncalibrated_text(now, [other, newer]).startswith(
        f"{now}; and out of scope 8 of 8"
    )
