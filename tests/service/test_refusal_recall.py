"""Trial 40 (MEDIUM 2): the refusal count when the phrase patterns are measured, against the
producer's own ``answer.refused``, to miss refusals on this traffic
(:mod:`service.refusals.recall`). Figures worked by hand in each test's docstring."""

from __future__ import annotations

import html
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.events import Answer, QueryLogEvent, User
from service.html import render_replay_html
from service.html.status import moved_section
from service.jobs.replay import render_text, run_replay
from service.pipeline import Batch
from service.pipeline.totals import AnnotationTotals
from service.quality.by_language import flag_agreement_rows
from service.refusals.detector import (
    _PATTERNS_CAVEAT,
    RefusalDetector,
    patterns_caveat,
    refusal_rate_method,
)
from service.refusals.recall import (
    FIX,
    INHERITED,
    RECALL_LEVEL,
    WORDING_CHARS,
    WORDINGS_KEPT,
    estimate_rate,
    missed_wording,
    shown_wordings,
    text_recall,
)
from service.refusals.stage import RefusalStage
from service.settings import load_settings

#: Trial 40's English figures: against the flag 737 of 1,083 flagged refusals read as
#: refusals, none of the 2,254 − 1,083 = 1,171 flagged answers; 490 refusals read in the
#: 1,592 answers without the flag; 1,156 flagged refusals; 4,000 answers, 1,646 refusals.
TRIAL = flag_agreement_rows({"en": (2254, 1083, 737, 737)})


def test_the_estimate_is_rogan_gladen_and_its_bounds_the_corners_of_the_intervals() -> None:
    """``q = (p − f) / (r − f)``: p 30/100, f 5/50, r 70/100 → (0.3 − 0.1) / (0.7 − 0.1) = 1/3
    (z 0: no interval). With z 2: p 6/12's Wilson interval is (0.5 + 4/24 ∓ 4/12) / (4/3) =
    [0.25, 0.75]; f 0/96's [0, 4/100 = 0.04]; r 96/96's [96/100 = 0.96, 1]. q falls with f (p
    < r) and with r, rises with p: low (0.25 − 0.04) / (1 − 0.04) = 0.21875, high 0.75 / 0.96
    = 0.78125, point 0.5 / 1 = 0.5."""
    rate, low, high = estimate_rate((30, 100), (5, 50), (70, 100), 0.0) or (0, 0, 0)
    assert (rate, low, high) == pytest.approx((1 / 3, 1 / 3, 1 / 3))
    assert estimate_rate((6, 12), (0, 96), (96, 96), 2.0) == pytest.approx((0.5, 0.21875, 0.78125))
    # a reader that does not separate refusals from answers (recall's low end 0.25 at or
    # below the false-positive rate's high end 0.75): no estimate; nor without counts
    assert estimate_rate((6, 12), (6, 12), (6, 12), 2.0) is None
    assert estimate_rate((0, 0), (0, 96), (96, 96), 2.0) is None


def test_trial_40_reads_as_a_lower_bound_with_an_estimate_near_the_truth() -> None:
    """Recall 737/1,083 = 0.681, Wilson upper 0.708 < 0.95: a lower bound. Point estimate of
    the unflagged refusals 490 / (737/1,083) = 490 · 1,083 / 737 = 720.04 (f 0), so 1,156 +
    720.04 = 1,876.04 of 4,000 (46.9 %). The trial's truth, 1,911 (47.8 %: 755 unflagged),
    lies inside the joint 95 % interval. The sentence gives the fix."""
    out = text_recall(TRIAL, {"en": (1592, 490)}, 1592, 4000, 1646)
    assert out is not None and out["lower_bound"] and out["below"] == ["en"]
    estimate = out["estimate"]
    assert estimate is not None
    assert estimate["refused"] == pytest.approx(1156 + 490 * 1083 / 737)
    assert estimate["rate"] == pytest.approx((1156 + 490 * 1083 / 737) / 4000)
    assert estimate["low"] < 1911 < estimate["high"]
    assert 1646 < estimate["low"]  # the detected count is below even the estimate's low end
    assert estimate["unmeasured_answers"] == 0 and estimate["confidence"] == 0.95
    # session 41: four short lines (a ~950-character paragraph before): headline, estimate,
    # why, fix; the same facts
    head, said, why, fix = out["lines"]
    assert head == "at least 1646 of 4000 answers refused (41.1%, a lower bound)"
    assert said.startswith("ESTIMATE, not a count: 1876 [")  # 1,876.04
    assert "of 4000 answers refused (46.9% [" in said and "95 % jointly" in said
    assert said.endswith(", if the phrase patterns miss unflagged refusals as often as flagged "
                         "ones (Rogan–Gladen, Bonferroni-adjusted Wilson intervals)")  # fmt: skip
    assert why == ("why: the phrase patterns read only 737 of the 1083 refusals answer.refused "
                   "flags in en (recall 0.681 [0.652, 0.708]): Wilson 95 %, its upper bound "
                   "below 0.95; so the 490 refusals they read in the 1592 answers without "
                   "answer.refused are a lower bound (answer.refused's own are exact)")  # fmt: skip
    assert fix == f"fix: {FIX}"  # (no wordings given: none named)
    assert max(map(len, out["lines"])) < 300
    assert out["text"] == (f"At least 1646 of 4000 answers refused (41.1%, a lower bound). "
                           f"{said}. W{why[1:]}. F{fix[1:]}.")  # fmt: skip


def test_the_level_needs_the_whole_interval_below_it_and_enough_flagged_refusals() -> None:
    """19 of 20 flagged refusals read: recall 0.95, Wilson upper 0.991 ≥ 0.95: no lower bound
    (nor at 10 of 10, upper 1.0); 80 of 100: upper 0.867 < 0.95: a lower bound; 5 of 9: too
    few flagged refusals (< 10), recall not measured: no figure at all. No answer read by
    the patterns: none either."""

    def out(both: int, flagged: int) -> Any:
        rows = flag_agreement_rows({"en": (flagged + 50, flagged, both, both)})
        return text_recall(rows, {"en": (100, 10)}, 100, 200, 60)

    assert RECALL_LEVEL == 0.95
    assert out(19, 20)["lower_bound"] is False and out(19, 20)["text"] is None
    assert out(10, 10)["lower_bound"] is False
    assert out(80, 100)["lower_bound"] is True
    assert out(5, 9) is None
    rows = flag_agreement_rows({"en": (150, 100, 80, 80)})
    assert text_recall(rows, {}, 0, 100, 50) is None


def test_totals_kept_before_the_per_language_counts_give_no_estimate() -> None:
    """The patterns decided 1,592 answers but the per-language counts hold 92 (a state kept
    before session 40 counted them): the lower bound stands, no estimate, and it says why."""
    out = text_recall(TRIAL, {"en": (92, 30)}, 1592, 4000, 1646)
    assert out is not None and out["lower_bound"] and out["estimate"] is None
    assert "No estimate: the totals were kept before" in (out["text"] or "")
    assert out["lines"][1] == ("no estimate: the totals were kept before the answers the text "
                               "reader decided were counted per language")  # fmt: skip


def test_totals_kept_before_the_per_language_counts_say_every_refusal_read() -> None:
    """Review of session 40: a state kept before the per-language counts (92 of the 1,592
    answers, 30 of the 490 refusals counted per language) said "the 30 refusals they read in
    the 1592 answers": the per-language sum beside the whole count. The sentence gives the
    490 the patterns read in all (``read_refused``, the report's refusals_by_patterns)."""
    out = text_recall(TRIAL, {"en": (92, 30)}, 1592, 4000, 1646, read_refused=490)
    text = (out["text"] if out is not None else None) or ""
    assert "the 490 refusals they read in the 1592 answers without answer.refused" in text


def test_a_measured_language_with_no_estimate_is_not_called_unmeasured() -> None:
    """Review of session 40: en as the trial; de measured (recall 50/100, upper 0.596 < 0.95)
    but its text reads 100 of 100 flagged answers as refused (f 1.0 ≥ recall): no estimate
    there, and its 50 answers were said to be "in languages with no measured recall". They
    are counted as read with the reason. And an app that sets answer.refused only on
    refusals (no flagged answer: the false-positive rate unmeasured) was told "the recall's
    lower bound does not clear the false-positive rate's upper bound"."""
    rows = flag_agreement_rows({"en": (2254, 1083, 737, 737), "de": (200, 100, 150, 50)})
    out = text_recall(rows, {"en": (1592, 490), "de": (50, 20)}, 1642, 4000, 1666)
    assert out is not None and out["below"] == ["en", "de"]
    estimate = out["estimate"] or {}
    assert estimate["refused"] == pytest.approx(1666 - 490 + 490 * 1083 / 737)
    assert estimate["unmeasured_answers"] == 50
    text = out["text"] or ""
    assert "no measured recall" not in text
    assert out["lines"][1].endswith(
        "; 50 answers without answer.refused counted as read (in de the recall's lower bound "
        "does not clear the false-positive rate's upper bound)")  # fmt: skip
    assert ("read only 737 of the 1083 refusals answer.refused flags in en (recall 0.681 "
            "[0.652, 0.708]), 50 of the 100 in de (recall 0.500 [0.404, 0.596]): Wilson 95 %, "
            "each upper bound below 0.95") in out["lines"][2]  # fmt: skip
    only_refused = flag_agreement_rows({"en": (1083, 1083, 737, 737)})
    out = text_recall(only_refused, {"en": (1592, 490)}, 1592, 4000, 1646)
    assert out is not None and out["estimate"] is None
    assert out["no_estimate"] == ("no estimate: in en no answer sets answer.refused false, so "
                                  "the false-positive rate is not measured")  # fmt: skip


def test_a_language_without_a_measured_recall_is_counted_as_read() -> None:
    """en measured (as the trial), es read in 100 answers (20 refusals) but with 5 flagged
    refusals only (few): es's 20 stay as read; the estimate adds en's 720.04 to the 1,646 −
    490 = 1,156 others (es's 20 among them), and names the 100 answers counted as read."""
    rows = flag_agreement_rows({"en": (2254, 1083, 737, 737), "es": (20, 5, 5, 5)})
    out = text_recall(rows, {"en": (1592, 490), "es": (100, 20)}, 1692, 4000, 1666)
    assert out is not None and out["below"] == ["en"]
    estimate = out["estimate"] or {}
    assert estimate["refused"] == pytest.approx(1666 - 490 + 490 * 1083 / 737)
    assert estimate["unmeasured_answers"] == 100
    assert out["lines"][1].endswith(
        "; 100 answers without answer.refused in languages with no measured recall counted "
        "as read")  # fmt: skip


def test_the_method_sentence_states_the_measurement_never_not_measured_beside_it() -> None:
    """With rows against the flag the patterns' caveat gives this traffic's recall and
    precision (and which languages had too few flagged refusals) instead of "not measured
    on this traffic"; without rows, the former caveat."""
    method = refusal_rate_method(2408, 1592, 4000, (1156, 490), 1646, "patterns", ["en"],
                                 TRIAL)  # fmt: skip
    assert "not measured on this traffic" not in method
    assert ("phrase patterns measured against answer.refused on this traffic (against_flag): "
            "en recall 737/1083 0.681 [0.652, 0.708], precision 1.000; not measured in any "
            "other language; precision 0.99, recall 1.00 on NoMIRACL's") in method  # fmt: skip
    few = flag_agreement_rows({"en": (3, 2, 1, 1)})
    assert patterns_caveat(few).startswith(
        "phrase patterns measured against answer.refused on this traffic (against_flag): too "
        "few flagged refusals to measure recall in en; "
    )
    assert refusal_rate_method(0, 5, refused_by=(0, 1)).endswith(f"({_PATTERNS_CAVEAT})")


def test_the_totals_count_the_answers_the_text_reader_decided_per_language() -> None:
    """Four answers: en by the patterns (refused), en by the patterns (answered), en by the
    flag (refused), es by the patterns (refused): text_answers en 2, es 1; text_refusals en
    1, es 1; kept across a state round trip."""
    notes = [{"refused": True, "refused_by": "patterns", "language": "en"},
             {"refused": False, "refused_by": "patterns", "language": "en"},
             {"refused": True, "refused_by": "flag", "language": "en"},
             {"refused": True, "refused_by": "patterns", "language": "es"}]  # fmt: skip
    at = datetime(2026, 11, 29, tzinfo=UTC)
    batch = Batch.of([QueryLogEvent(event_id=f"e-{i}", timestamp=at, question="q")
                      for i in range(4)], "file")  # fmt: skip
    batch.annotations[:] = notes
    stage = AnnotationTotals()
    stage.process(batch)
    assert dict(stage.by_language["text_answers"]) == {"en": 2, "es": 1}
    assert dict(stage.by_language["text_refusals"]) == {"en": 1, "es": 1}
    restored = AnnotationTotals()
    restored.restore(json.loads(json.dumps(stage.state_snapshot())))
    assert restored.by_language["text_answers"] == stage.by_language["text_answers"]


#: 80 English questions, distinct in wording.
TOPICS = ("library", "canteen", "hostel", "gym", "parking", "laboratory", "auditorium",
          "bookshop", "clinic", "stadium")  # fmt: skip
KINDS = ("open on Sunday mornings", "closed during the winter break",
         "reachable by the campus shuttle bus", "run by the students' union",
         "accessible to wheelchair users", "staffed after eight in the evening",
         "allowed to host birthday parties", "equipped with free drinking water")  # fmt: skip


def _log(path: Path) -> Path:
    """40 events set ``answer.refused`` (20 refusals: 10 "I don't know.", 10 "The articles
    do not cover this.", a wording in no pattern; 20 answers), 40 do not (the same mix)."""
    questions = [f"Is the {t} {k}?" for t in TOPICS for k in KINDS]
    texts = ["I don't know."] * 10 + ["The articles do not cover this."] * 10
    texts += [f"Yes, it is, according to notice {i}." for i in range(20)]
    rows = []
    for i, question in enumerate(questions):
        answer: dict[str, Any] = {"text": texts[i % 40]}
        if i < 40:
            answer["refused"] = i % 40 < 20
        rows.append({"event_id": f"t-{i}", "question": question, "answer": answer,
                     "timestamp": f"2026-11-20T{10 + i // 60}:{i % 60:02d}:00Z"})  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_a_replay_whose_patterns_miss_half_the_flagged_refusals_says_at_least(
    tmp_path: Path,
) -> None:
    """Flagged: 20 refusals, the patterns read 10 (recall 10/20 = 0.5, Wilson upper 0.701 <
    0.95), none of the 20 answers. Unflagged: 10 of 40 read as refusals (p 0.25; f 0/20, r
    0.5): q = 0.25 / 0.5 = 0.5, 20 of the 40; so 20 flagged + 20 = 40 of 80 (50.0 %; the
    truth: 40) against 30 detected (37.5 %). The headline says "at least" and "a lower
    bound", the next line why, with the estimate and the fix; the JSON's ``rate`` stays the
    detected 30/80; the HTML says it too."""
    doc = run_replay(load_settings(), _log(tmp_path / "log.jsonl"), None,
                     tmp_path / "dlq.jsonl")  # fmt: skip
    refusals = doc["analytics"]["refusals"]
    assert [r["language"] for r in refusals["against_flag"]] == ["en"]  # (all read as en)
    assert (refusals["answers"], refusals["refused"], refusals["rate"]) == (80, 30, 30 / 80)
    recall = refusals["text_recall"]
    assert recall["lower_bound"] and recall["below"] == ["en"]
    assert recall["estimate"]["refused"] == pytest.approx(40.0)
    assert recall["estimate"]["rate"] == pytest.approx(0.5)
    lines = render_text(doc).splitlines()
    at = lines.index("refusals: at least 30 of 80 answers refused (37.5%, a lower bound)")
    # session 41: headline, then the estimate, why and the fix on short lines of their own
    # (a ~950-character paragraph before), then how the refusals were counted
    said, why, fix, counted = lines[at + 1 : at + 5]
    assert said == ("  ESTIMATE, not a count: 40 [20, 60] of 80 answers refused (50.0% [25.0%, "
                    "75.0%], 95 % jointly), if the phrase patterns miss unflagged refusals as "
                    "often as flagged ones (Rogan–Gladen, Bonferroni-adjusted Wilson "
                    "intervals)")  # fmt: skip
    assert why == ("  why: the phrase patterns read only 10 of the 20 refusals answer.refused "
                   "flags in en (recall 0.500 [0.299, 0.701]): Wilson 95 %, its upper bound "
                   "below 0.95; so the 10 refusals they read in the 40 answers without "
                   "answer.refused are a lower bound (answer.refused's own are exact)")  # fmt: skip
    # the app's wording the patterns lack, seen 10 times among the flagged refusals: named
    assert recall["missed"] == [{"text": "The articles do not cover this.", "seen": 10}]
    assert fix == (f"  fix: {FIX}; missed most often: \"The articles do not cover this.\" (10 "
                   "times)")  # fmt: skip
    assert counted.startswith("  counted: answer.refused decided 40 answers (20 refused), phrase "
                              "patterns 40 (10 refused) (phrase patterns measured against "
                              "answer.refused on this traffic (against_flag): en recall 10/20 "
                              "0.500 [0.299, 0.701]")  # fmt: skip
    assert all(len(line) < 300 for line in lines[at : at + 4])
    page = render_replay_html(doc)
    assert "Refused answers (a lower bound): " in page
    assert ('<p class="warn">At least 30 of 80 answers refused (37.5%, a lower bound).<br>'
            "ESTIMATE, not a count: 40 [20, 60] of 80") in page  # fmt: skip
    assert (f"<br>{html.escape(why.strip().capitalize()[:40])}") in page
    assert f"<br>{html.escape('F' + fix.strip()[1:])}.</p>" in page
    assert "refused, ESTIMATED (not a count; 95 % jointly)" in page
    moved = str(moved_section(doc["analytics"]))  # the status page's row
    row = moved[moved.index("at least 30 of 80") :]
    row = html.unescape(row[: row.index("</td>")])
    # review of session 40 and session 41: the row gave the whole sentence beside the method
    # (~2,900 characters on trial 40, then ~2,200 with a brief): now the same four lines
    assert row.split("<br>") == [
        "at least 30 of 80 answers refused (37.5%, a lower bound); refusal drift: "
        "insufficient_data",
        said.strip(), why.strip(), fix.strip()]  # fmt: skip
    assert "answer.refused decided 40 answers" not in row  # the method: in the section


def test_a_replay_whose_patterns_read_every_flagged_refusal_is_unchanged(tmp_path: Path) -> None:
    """The same log with "The articles do not cover this." added as a refusal pattern
    (``analytics.refusal_patterns``, the fix the sentence suggests): recall 10/10, no lower
    bound, 40 of 80 counted, the headline as before; only the method states the measurement."""
    config = tmp_path / "config.yaml"
    config.write_text("analytics:\n  refusal_patterns: ['\\bthe articles do not cover "
                      "this\\b']\n", encoding="utf-8")  # fmt: skip
    settings = load_settings(config)
    doc = run_replay(settings, _log(tmp_path / "log.jsonl"), None, tmp_path / "dlq.jsonl")
    refusals = doc["analytics"]["refusals"]
    assert (refusals["refused"], refusals["text_recall"]["lower_bound"]) == (40, False)
    head = next(line for line in render_text(doc).splitlines()
                if line.startswith("refusals: "))  # fmt: skip
    assert head.startswith("refusals: 40/80 (50.0%; answer.refused decided 40 answers (20 "
                           "refused), phrase patterns 40 (20 refused) (phrase patterns "
                           "measured against answer.refused on this traffic")  # fmt: skip
    assert INHERITED not in render_text(doc)


def test_only_repeated_short_scrubbed_wordings_of_missed_refusals_are_named(
    tmp_path: Path,
) -> None:
    """A wording is named only when seen at least 5 times (a template, not one asker's
    answer), at most 3, cut to 80 characters; the totals keep at most 256 distinct ones. In a
    replay the texts are the PII stage's: an e-mail in a flagged refusal the patterns miss is
    kept as ``<EMAIL>`` (12 such refusals, recall 0/12: a lower bound over the 12 unflagged
    answers; no flagged answer measures a false-positive rate, so no estimate); with
    ``analytics.pii: false`` none is kept."""
    kept = {"Ask at the desk.": 7, "Not in our files.": 5, "Try the office.": 9,
            "Mail ravi@example.com.": 1, "Other.": 6}  # fmt: skip
    assert shown_wordings(kept) == [{"text": "Try the office.", "seen": 9},
                                    {"text": "Ask at the desk.", "seen": 7},
                                    {"text": "Other.", "seen": 6}]  # fmt: skip
    assert missed_wording("a  b\n" + "c" * 100).endswith("…")
    assert len(missed_wording("a" * 100)) == WORDING_CHARS
    stage = AnnotationTotals()
    at = datetime(2026, 11, 29, tzinfo=UTC)
    notes = [{"refused": True, "refused_by": "flag", "language": "en", "text_refused": False,
              "missed_text": f"wording {i}"} for i in range(WORDINGS_KEPT + 10)]  # fmt: skip
    batch = Batch.of([QueryLogEvent(event_id=f"e-{i}", timestamp=at, question="q")
                      for i in range(len(notes))], "file")  # fmt: skip
    batch.annotations[:] = notes
    stage.process(batch)
    assert len(stage.missed_refusals) == WORDINGS_KEPT
    restored = AnnotationTotals()
    restored.restore(json.loads(json.dumps(stage.state_snapshot())))
    assert restored.missed_refusals == stage.missed_refusals
    rows = [{"event_id": f"p-{i}", "timestamp": f"2026-11-20T10:{i:02d}:00Z",
             "question": f"Is room {i} of the east wing free on Monday?",
             "answer": {"text": "Write to ravi.kumar@example.com about it.", "refused": True}
                        if i < 12 else {"text": f"Yes, from {i} am."}}
            for i in range(24)]  # fmt: skip
    log = tmp_path / "pii.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    doc = run_replay(load_settings(), log, None, tmp_path / "dlq.jsonl")
    recall = doc["analytics"]["refusals"]["text_recall"]
    assert recall["lower_bound"] and recall["estimate"] is None
    assert recall["missed"] == [{"text": "Write to <EMAIL> about it.", "seen": 12}]
    assert "ravi" not in json.dumps(doc["analytics"]["refusals"])
    config = tmp_path / "nopii.yaml"
    config.write_text("analytics:\n  pii: false\n", encoding="utf-8")
    off = run_replay(load_settings(config), log, None, tmp_path / "dlq2.jsonl")
    assert off["analytics"]["refusals"]["text_recall"]["missed"] == []
    assert off["analytics"]["refusals"]["text_recall"]["lower_bound"] is True


def test_a_missed_wording_said_to_one_asker_is_never_named(tmp_path: Path) -> None:
    """Review of session 40: the floor counted times seen, so a flagged refusal addressing its
    asker by a name the scrubber keeps ("Sorry Ravi Kumar, …": a name without a cue such as
    "my name is") was named on the report once that asker had 5 refusals. It is named only
    when said to 5 distinct askers (``user.id``): 12 to one asker, not named; the same wording
    to 12 askers (no name in it), named."""

    def log(name: str, text: str, users: list[str]) -> Path:
        rows = [{"event_id": f"p-{i}", "timestamp": f"2026-11-20T10:{i:02d}:00Z",
                 "question": f"Is room {i} of the east wing free on Monday?",
                 "user": {"id": users[i % len(users)]},
                 "answer": {"text": text, "refused": True} if i < 12
                 else {"text": f"Yes, from {i} am."}}
                for i in range(24)]  # fmt: skip
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    named = log("one.jsonl", "Sorry Ravi Kumar, no notice covers this.", ["u-7"])
    one = run_replay(load_settings(), named, None, tmp_path / "d1.jsonl")
    recall = one["analytics"]["refusals"]["text_recall"]
    assert recall["lower_bound"] and recall["missed"] == []
    assert "Ravi" not in json.dumps(one["analytics"]["refusals"])
    many = run_replay(load_settings(), log("many.jsonl", "No notice covers this.",
                                           [f"u-{i}" for i in range(12)]), None,
                      tmp_path / "d2.jsonl")  # fmt: skip
    missed = many["analytics"]["refusals"]["text_recall"]["missed"]
    assert missed == [{"text": "No notice covers this.", "seen": 12}]


def test_a_template_missed_after_the_table_is_full_is_still_counted() -> None:
    """Review of session 40: the totals kept the first 256 distinct missed wordings for good,
    so after 256 free-text refusals (each seen once) a template the app started later was
    never counted, and the report named a rarer earlier wording as the one "missed most
    often". A new wording now takes the place of the oldest seen once: the template, said 6
    times to 6 askers between 300 more one-off wordings, is kept with its 6; the table stays
    at 256; a wording seen twice is never dropped."""
    stage = AnnotationTotals()
    at = datetime(2026, 11, 29, tzinfo=UTC)

    def note(text: str, asker: str) -> dict[str, Any]:
        return {"refused": True, "refused_by": "flag", "language": "en", "text_refused": False,
                "missed_text": text, "missed_to": asker}  # fmt: skip

    notes = [note("Seen twice.", "u-a"), note("Seen twice.", "u-b")]
    notes += [note(f"one-off {i}", f"u-{i}") for i in range(WORDINGS_KEPT)]
    for i in range(300):
        notes.append(note(f"later one-off {i}", f"v-{i}"))
        if i % 50 == 0:
            notes.append(note("No notice covers this.", f"w-{i}"))
    batch = Batch.of([QueryLogEvent(event_id=f"e-{i}", timestamp=at, question="q")
                      for i in range(len(notes))], "file")  # fmt: skip
    batch.annotations[:] = notes
    stage.process(batch)
    assert len(stage.missed_refusals) == WORDINGS_KEPT
    assert stage.missed_refusals["No notice covers this."] == 6
    assert stage.missed_refusals["Seen twice."] == 2
    assert set(stage.missed_askers) == set(stage.missed_refusals)
    assert shown_wordings(stage.missed_shown()) == [{"text": "No notice covers this.", "seen": 6}]
    # the order (which one-off is oldest) survives a state round trip: a replay in two parts
    # with --state drops the same wordings as one replay
    restored = AnnotationTotals()
    restored.restore(json.loads(json.dumps(stage.state_snapshot())))
    assert list(restored.missed_refusals.items()) == list(stage.missed_refusals.items())
    assert restored.missed_askers == stage.missed_askers


def test_the_totals_keep_a_digest_of_the_asker_not_the_id() -> None:
    """Review of session 40: the askers kept per missed wording (to name only wordings said
    to 5 of them) are 16-hex-digit digests, never ``user.id`` itself, so the state file gains
    no id; two events of one asker give one digest, of two askers two."""
    at = datetime(2026, 11, 29, tzinfo=UTC)
    events = [QueryLogEvent(event_id=f"e-{i}", timestamp=at, question="q", user=User(id=who),
                            answer=Answer(text="No notice covers this.", refused=True))
              for i, who in enumerate(["u-7", "u-7", "u-8"])]  # fmt: skip
    batch = Batch.of(events, "file")
    RefusalStage(RefusalDetector(), keep_missed=True).process(batch)
    askers = [notes["missed_to"] for notes in batch.annotations]
    assert askers[0] == askers[1] != askers[2]
    assert all(len(a) == 16 and "u-" not in a for a in askers)
