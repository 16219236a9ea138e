"""Session 37 (trial 37, MEDIUM 2 and 3): per-language refusal and live-quality figures, and
the refusal rate of known answerable gold questions with its own drift comparison.

Expected values are worked out by hand (the Wilson bounds from the formula
``(p̂ + z²/2n ± z √(p̂(1−p̂)/n + z²/4n²)) / (1 + z²/n)``, z = 1.95996, written out in the
comments), not read from the code's output.
"""

from __future__ import annotations

import json
import types
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from service.drift.stage import KNOWN_REFUSAL, DriftStage
from service.drift.windows import WindowConfig
from service.jobs.replay import refusal_language_lines
from service.pipeline import Batch
from service.pipeline.totals import AnnotationTotals
from service.quality.by_language import (
    flag_agreement_rows,
    flag_agreement_text,
    rate_rows,
    wilson,
)
from service.quality.stage import known_refusal_text, language_lines
from tests.service.test_quality import EVENTS, build, run

# 1 of 1: centre 1 + z²/2 = 2.92073, half z²/2 = 1.92073, scale 1 + z² = 4.84146
ONE_OF_ONE = (1 / 4.841459, 1.0)
# 0 of 1: low 0, high (z²/2 + z²/2) / (1 + z²) = 3.84146 / 4.84146
NONE_OF_ONE = (0.0, 3.841459 / 4.841459)
# 1 of 2: centre 0.5 + z²/4 = 1.460365, half z √(0.125 + z²/16) = 1.184263, scale 2.920730
ONE_OF_TWO = (0.276102 / 2.920730, 2.644628 / 2.920730)


def _run_with_languages() -> tuple[Any, Batch]:
    """The live-quality stage's hand-worked events (tests/service/test_quality.py), e-1 and
    e-3 asked in English, e-2 in Hindi, e-4 and e-5 without a language."""
    stage = build()
    languages = ["en", "hi", "en", None, None]
    batch = Batch.of(EVENTS, source="test")
    for notes, e, language in zip(batch.annotations, EVENTS, languages, strict=True):
        notes["refused"] = e.answer.refused if e.answer else None
        if language is not None:
            notes["language"] = language
    stage.process(batch)
    return stage, batch


def test_known_refused_annotation_only_on_known_answerable_questions() -> None:
    """e-1: q-1, answerable for the student, answered → False; e-2: q-2, answerable for the
    parent, refused → True; e-3: q-3 has no gold passage (unanswerable): none; e-4, e-5: not
    known questions: none."""
    _, batch = _run_with_languages()
    assert [notes.get("known_refused") for notes in batch.annotations] == [
        False, True, None, None, None]  # fmt: skip
    assert "known_refused" not in batch.annotations[2]


def test_per_language_rows_and_the_known_refusal_figure_by_hand() -> None:
    """en: e-1 (scored: recall 1, hit 1, RR 1/2; answered) and e-3 (unanswerable: known, not
    scored) → 2 known, 1 scored, hit rate 1 [1/4.8415, 1], MRR 0.5, 0 of 1 answerable refused
    [0, 0.7934]; hi: e-2 (recall 1/2, hit 1, RR 1; refused) → 1 of 1 refused [0.2066, 1].
    Both under 10: few. Overall 1 of 2 answerable refused, Wilson [0.0945, 0.9055]."""
    stage, _ = _run_with_languages()
    report = stage.report()
    rows = {row["language"]: row for row in report["by_language"]}
    assert [row["language"] for row in report["by_language"]] == ["en", "hi"]  # most known first
    en, hi = rows["en"], rows["hi"]
    assert (en["n_known"], en["n_scored"], en["hit_rate"], en["recall"], en["mrr"]) == (
        2, 1, 1.0, 1.0, 0.5)  # fmt: skip
    assert (en["hit_low"], en["hit_high"]) == pytest.approx(ONE_OF_ONE, abs=1e-6)
    assert (en["known_answerable"], en["refused_answerable"], en["refused_rate"]) == (1, 0, 0.0)
    assert (en["refused_low"], en["refused_high"]) == pytest.approx(NONE_OF_ONE, abs=1e-6)
    assert (hi["n_known"], hi["n_scored"], hi["recall"], hi["mrr"]) == (1, 1, 0.5, 1.0)
    assert (hi["refused_answerable"], hi["known_answerable"], hi["refused_rate"]) == (1, 1, 1.0)
    assert (hi["refused_low"], hi["refused_high"]) == pytest.approx(ONE_OF_ONE, abs=1e-6)
    assert en["few"] and hi["few"] and en["refused_few"] and hi["refused_few"]
    figure = report["known_refusal"]
    assert (figure["n"], figure["refused"], figure["rate"]) == (2, 1, 0.5)
    assert (figure["low"], figure["high"]) == pytest.approx(ONE_OF_TWO, abs=1e-6)
    assert stage.known_refusal() == figure
    assert report["by_language_partial"] is False and report["by_language_min_n"] == 10
    json.dumps(report)
    # the per-language sums are the totals
    assert sum(r["n_known"] for r in report["by_language"]) == report["known"]["production"][
        "n_known"]  # fmt: skip


def test_min_n_marks_few_rows() -> None:
    stage = build(min_n=1)
    batch = run(stage, EVENTS)  # no language annotation: und
    assert all(notes.get("language") is None for notes in batch.annotations)
    rows = stage.report()["by_language"]
    assert [(r["language"], r["n_known"], r["few"]) for r in rows] == [("und", 3, False)]


def test_language_lines_say_the_intervals_and_few() -> None:
    stage, _ = _run_with_languages()
    lines = language_lines(stage.report()["by_language"], 10)
    assert lines == [
        "en: 1 scored of 2 known (few: < 10); hit rate 1.000 [0.207, 1.000], recall@10 1.000, "
        "MRR 0.500; refused 0 of 1 answerable (0.0% [0.0%, 79.3%], few)",
        "hi: 1 scored of 1 known (few: < 10); hit rate 1.000 [0.207, 1.000], recall@10 0.500, "
        "MRR 1.000; refused 1 of 1 answerable (100.0% [20.7%, 100.0%], few)",
    ]  # fmt: skip


def test_snapshot_restore_keeps_per_language_figures_and_marks_an_older_state() -> None:
    stage, _ = _run_with_languages()
    state = json.loads(json.dumps(stage.state_snapshot()))
    again = build()
    again.restore(state)
    assert again.report()["by_language"] == stage.report()["by_language"]
    assert again.report()["by_language_partial"] is False
    older = {key: value for key, value in state.items() if key != "by_language"}
    before = build()
    before.restore(older)  # a state kept before session 37: its known questions in no language
    report = before.report()
    assert report["by_language"] == [] and report["by_language_partial"] is True
    assert report["known_refusal"]["n"] == 2  # the totals are kept


def test_a_gold_set_change_drops_the_changed_rows_per_language_too() -> None:
    from service.data.goldset import GoldSet
    from service.quality.known import KnownQuestionIndex
    from service.records import GoldQuestion
    from tests.service.test_quality import GOLD

    stage, _ = _run_with_languages()
    rows = tuple(q if q.id != "q-2" else GoldQuestion("q-2", q.question, ("p-5",)) for q in GOLD)
    stage.index = KnownQuestionIndex(GoldSet(rows))  # q-2 changed: its Hindi figures go
    assert [r["language"] for r in stage.report()["by_language"]] == ["en"]


def test_rate_rows_order_few_and_exact_edges() -> None:
    """1 of 4: centre 0.25 + z²/8 = 0.730182, half z √(0.046875 + z²/64) = 0.640816, scale
    1.960365 → [0.045586, 0.699359]; 0 of 20: low exactly 0."""
    rows = rate_rows({"hi": (1, 4), "en": (0, 20), "tr": (0, 0)}, min_n=5)
    assert [(r["language"], r["n"], r["x"], r["few"]) for r in rows] == [
        ("en", 20, 0, False), ("hi", 4, 1, True)]  # fmt: skip
    assert rows[0]["low"] == 0.0 and rows[0]["rate"] == 0.0
    assert (rows[1]["low"], rows[1]["high"]) == pytest.approx((0.045586, 0.699359), abs=1e-5)
    assert wilson(3, 3)[1] == 1.0


def test_annotation_totals_count_answers_and_refusals_per_language() -> None:
    totals = AnnotationTotals()
    notes = [{"refused": True, "language": "hi"}, {"refused": False, "language": "hi"},
             {"refused": True, "language": "en"}, {"refused": None, "language": "en"},
             {"refused": False}]  # fmt: skip
    totals.process(types.SimpleNamespace(annotations=notes, counted=None))  # type: ignore[arg-type]
    assert dict(totals.by_language["answers"]) == {"hi": 2, "en": 1, "und": 1}
    assert +totals.by_language["refusals"] == {"hi": 1, "en": 1}
    again = AnnotationTotals()
    again.restore(json.loads(json.dumps(totals.state_snapshot())))
    assert again.by_language["answers"] == totals.by_language["answers"]


def test_totals_measure_the_patterns_against_the_flag_per_language() -> None:
    """de: 2 flagged answers read, both flagged refused, the text reads 1 as refused (both
    1); en: 1 read, flagged answered, text refused. Precision de 1/1, recall 1/2 (Wilson
    [0.0945, 0.9055]: centre 0.5, half-width 1.96·√(0.125 + 0.2401)/2.9208 = 0.4055); en
    precision 0/1, recall undefined (no flagged refusal)."""
    totals = AnnotationTotals()
    notes = [{"refused": True, "language": "de", "text_refused": True},
             {"refused": True, "language": "de", "text_refused": False},
             {"refused": False, "language": "en", "text_refused": True},
             {"refused": True, "language": "de"}]  # fmt: skip
    totals.process(types.SimpleNamespace(annotations=notes, counted=None))  # type: ignore[arg-type]
    by = totals.by_language
    assert (+by["flag_checked"], +by["flag_refused"], +by["text_refused"], +by["both_refused"]) == (
        {"de": 2, "en": 1}, {"de": 2}, {"de": 1, "en": 1}, {"de": 1})  # fmt: skip
    again = AnnotationTotals()
    again.restore(json.loads(json.dumps(totals.state_snapshot())))
    assert again.by_language["both_refused"] == by["both_refused"]
    rows = flag_agreement_rows(
        {lang: (n, by["flag_refused"][lang], by["text_refused"][lang], by["both_refused"][lang])
         for lang, n in by["flag_checked"].items()}, min_n=2)  # fmt: skip
    de, en = rows
    assert (de["language"], de["precision"], de["recall"], de["few"]) == ("de", 1.0, 0.5, False)
    assert (de["recall_low"], de["recall_high"]) == pytest.approx((0.0945, 0.9055), abs=1e-4)
    assert (en["precision"], en["recall"], en["few"]) == (0.0, None, True)
    text = flag_agreement_text(rows, min_n=2)
    assert text is not None
    assert (
        "de precision 1/1 1.000 [0.207, 1.000], recall 1/2 0.500 [0.095, 0.905] (2 answers)" in text
    )
    assert "en precision 0/1 0.000 [0.000, 0.793], recall 0/0 (too few flagged refusals" in text
    assert flag_agreement_text([]) is None


def test_refusal_language_lines_say_what_they_cover() -> None:
    refusals = {"answers": 12, "by_language_answers": 10,
                "by_language": rate_rows({"en": (3, 6), "hi": (2, 4)})}  # fmt: skip
    (line,) = refusal_language_lines(refusals, 10)
    assert "en 50.0% [18.8%, 81.2%] (n 6, few)" in line
    assert line.endswith("(of 10 answers: the 2 counted before refusals were counted per "
                         "language are in no language)")  # fmt: skip


# ---- the known_refusal drift dimension ---------------------------------------------------

START = datetime(2026, 11, 28, tzinfo=UTC)


def _stage(min_count: int = 20) -> DriftStage:
    """Drift windows of 1 h (the other dimensions), the known-refusal windows of 6 h (its
    baseline: the first 6 h), ``min_count`` known answerable questions a window."""
    known = WindowConfig(window_s=6 * 3600, warmup_s=6 * 3600, test_every_s=1800)
    return DriftStage({}, windows=WindowConfig(test_every_s=1800), min_count=50,
                      terms=False, known_windows=known, known_min_count=min_count,
                      clock=lambda: (START + timedelta(days=30)).timestamp())  # fmt: skip


def _feed(drift: DriftStage, hours: int, per_hour: int,
          note: Callable[[int], dict[str, Any]], offset: int = 0) -> None:  # fmt: skip
    gap = 3600.0 / per_hour
    for start in range(offset, offset + hours * per_hour, 50):
        idx = range(start, min(offset + hours * per_hour, start + 50))
        events = [types.SimpleNamespace(timestamp=START + timedelta(seconds=gap * i)) for i in idx]
        drift.process(types.SimpleNamespace(events=events, annotations=[note(i) for i in idx],
                                            streams=None))  # fmt: skip


def _notes(known_every: int, refused_every: int) -> Callable[[int], dict[str, Any]]:
    """Every ``known_every``-th event is a known answerable question, refused when its own
    count is a multiple of ``refused_every`` (0: never)."""

    def note(i: int) -> dict[str, Any]:
        notes: dict[str, Any] = {"language": "en", "topic": "t", "refused": False}
        if i % known_every == 0:
            k = i // known_every
            notes["known_refused"] = refused_every > 0 and k % refused_every == 0
        return notes

    return note


def test_known_refusal_alarms_on_a_rise_of_refused_known_questions() -> None:
    """12 h of 60 events an hour, 1 in 6 a known answerable question (10 an hour): the first
    6 h baseline holds 60, 1 in 20 refused (3 of 60, 5 %); from hour 12 every second one is
    refused (50 %): within the next 6 h window the rate test (z, Bonferroni level) alarms."""
    drift = _stage()
    _feed(drift, 12, 60, _notes(6, 20))
    assert drift.report()[KNOWN_REFUSAL]["state"] == "ok"
    _feed(drift, 6, 60, _notes(6, 2), offset=12 * 60)
    report = drift.report(detectable=True)
    body = report[KNOWN_REFUSAL]
    test = body["comparisons"]["baseline"]
    assert body["state"] == "drift" and test["n_reference"] == 60
    assert test["rate_reference"] == pytest.approx(3 / 60)
    # the last test, at 17:30 (tests every 30 min; the last event at 17:59): its 6 h window
    # from 11:30 holds the old regime's 5 known questions of 11:30-12:00 (k 115..119, none a
    # multiple of 20) and the new regime's 55 of 12:00-17:30 (k 120..174, 28 even): 28 of 60
    assert (test["n_current"], test["rate_current"]) == (60, pytest.approx(28 / 60))
    alarms = [a for a in report["alarms"] if a["dimension"] == KNOWN_REFUSAL]
    assert [a["state"] for a in alarms] == ["drift"]
    assert "reference" not in body["comparisons"]  # baseline only
    assert test["detectable"]["text"].startswith(
        "known_refusal vs baseline: with ~60 known answerable questions a 6 h window"
    )
    text = known_refusal_text({"n": 150, "refused": 33, "rate": 0.22, "low": 0.16,
                               "high": 0.29}, body, brief=True)  # fmt: skip
    assert text == ("over-refusal of known answerable gold questions (no detector needed): "
                    "5.0% → 46.7%, in drift")  # fmt: skip


def test_too_few_known_questions_say_they_cannot_alarm() -> None:
    """2 known answerable questions an hour: 12 a 6 h window, under known_min_count 20: not
    tested, and the detectable line says it cannot alarm, naming the known-refusal settings
    (the advice is sized at the mean since s37-trust). By hand: the known questions are
    events 0, 30, ..., 1410 (one a minute), 48 of them, one at the start of each 30th 1 min
    bucket; the known window's watermark is the last one's, 23:30, so the events span
    buckets 0 to 1410, 1,411 buckets. Busiest: any 360 consecutive buckets hold exactly 12
    multiples of 30. Mean (events over the buckets spanned, times a window's 360 buckets):
    48 · 360 / 1411 = 12.25 (12.2 printed). 20 needs 6 · 20 / 12.25 = 9.8 h: about 10 h."""
    drift = _stage()
    _feed(drift, 24, 60, _notes(30, 2))
    report = drift.report(detectable=True)
    test = report[KNOWN_REFUSAL]["comparisons"]["baseline"]
    assert test["state"] == "insufficient_data"
    assert test["detectable"] == {"cannot_alarm": True, "text": (
        "known_refusal vs baseline: cannot alarm: its 6 h windows hold fewer than "
        "known_min_count (20) known answerable questions (the busiest had 12, 12.2 on "
        "average); raise analytics.drift.known_window_s to about 10 h (at the mean; or lower "
        "analytics.drift.known_min_count)")}  # fmt: skip
    assert "analytics.drift.known_window_s" in test["insufficient"]
    line = known_refusal_text({"n": 48, "refused": 24, "rate": 0.5, "low": 0.36, "high": 0.64},
                              report[KNOWN_REFUSAL])  # fmt: skip
    assert line is not None and "cannot alarm" in line and "nan" not in line
    assert "vs baseline not tested: no 6 h window reached 20" in line


def test_the_other_dimensions_keep_their_levels() -> None:
    """known_refusal has its own Bonferroni share (as terms): the refusal rate's level is the
    one four shared dimensions give (alpha / 4 / 24 one-hour windows a day)."""
    drift = _stage()
    _feed(drift, 30, 60, _notes(6, 20))
    refusal = drift.report()["refusal"]["comparisons"]["baseline"]
    assert refusal["alpha"] == pytest.approx(0.001 / 4 / 24)
    known = drift.report()[KNOWN_REFUSAL]["comparisons"]["baseline"]
    assert known["alpha"] == pytest.approx(0.001 / 4 / 4)  # four 6 h windows a day


def test_refusal_metrics_per_language_keep_a_bounded_label_set() -> None:
    """goldwatch_answers_by_language_total / goldwatch_refusals_by_language_total: the
    questions' language labels (the allow-list, und, other), a language outside it is
    ``other``; events without an answer count in neither."""
    from prometheus_client import CollectorRegistry

    from service.telemetry.analytics import build_analytics_metrics

    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry, language_labels=("en", "hi"), topic_labels=())
    notes = [{"language": "hi", "refused": True}, {"language": "hi", "refused": False},
             {"language": "ru", "refused": True}, {"language": "en", "refused": None},
             {"refused": False}]  # fmt: skip
    metrics.observe_annotations(notes)

    def value(name: str, language: str) -> float | None:
        return registry.get_sample_value(f"goldwatch_{name}_total", {"language": language})

    assert [value("answers_by_language", la) for la in ("hi", "other", "und", "en")] == [
        2.0, 1.0, 1.0, 0.0]  # fmt: skip
    assert [value("refusals_by_language", la) for la in ("hi", "other", "und", "en")] == [
        1.0, 1.0, 0.0, 0.0]  # fmt: skip
    labels = {s.labels["language"] for m in registry.collect()
              if m.name == "goldwatch_answers_by_language" for s in m.samples}  # fmt: skip
    assert labels == {"en", "hi", "und", "other"}
