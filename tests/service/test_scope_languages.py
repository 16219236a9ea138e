"""Out-of-scope verdicts by language and the gold set's language confound (session 44; trial
43, M1: six languages answerable, every unanswerable gold row English, and the detector read
English as out of scope). Figures worked by hand."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from service.pipeline.totals import AnnotationTotals
from service.refusals.languages import (
    LANGUAGE_MIN_AUC,
    ScopeLanguages,
    build_languages,
    confound_text,
    language_rows,
)


def _batch(notes: list[dict[str, Any]]) -> Any:
    return types.SimpleNamespace(events=[], annotations=notes)


def test_a_score_that_tells_the_language_apart_is_a_confound() -> None:
    # en: 4 answerable rows (scores 0.1-0.4) and 2 unanswerable; de and fr: 4 answerable each
    # (0.6-0.95). Every other-language answerable row scores above every en one: AUC 1.0, and
    # every bootstrap replicate too, so the interval is [1, 1] >= 0.75. Threshold 0.35: en
    # rows 0.1, 0.2, 0.3 out of scope held out (3 of 4), 0 of 8 in the others.
    langs = ["en"] * 6 + ["de"] * 4 + ["fr"] * 4
    ans = np.array([True] * 4 + [False] * 2 + [True] * 8)
    scores = np.array([0.1, 0.2, 0.3, 0.4, 0.05, 0.05, 0.6, 0.7, 0.8, 0.9, 0.65, 0.75, 0.85,
                       0.95])  # fmt: skip
    out = build_languages(langs, ans, scores >= 0.35, scores)
    c = out.confound
    assert c is not None
    assert (c["languages"], c["others"]) == (["en"], ["de", "fr"])
    assert (c["in_out"], c["in_n"], c["rest_out"], c["rest_n"]) == (3, 4, 0, 8)
    assert (c["auc"], c["low"], c["high"]) == (1.0, 1.0, 1.0)
    assert c["present"] is True
    assert out.confounded == frozenset({"en"})
    text = confound_text(out)
    assert text is not None and text.startswith(
        "out-of-scope LANGUAGE CONFOUND: the unanswerable gold rows are in 1 of 3 languages (en)"
    )
    assert "judged 3 of 4 (75.0%) answerable en rows out of scope against 0 of 8 (0.0%)" in text
    assert text.endswith("add unanswerable gold rows in de, fr")


def test_a_score_that_does_not_tell_the_language_apart_is_no_confound() -> None:
    # en answerable 0.2, 0.5, 0.7; de 0.4, 0.9, 0.6: pairs with de above en: 0.4>0.2,
    # 0.9 above all three, 0.6>0.2, 0.6>0.5: 6 of 9, AUC 0.667; a bootstrap interval over 3
    # rows a side reaches below 0.75 and above 0.25
    langs = ["en", "en", "en", "en", "de", "de", "de"]
    ans = np.array([True, True, True, False, True, True, True])
    scores = np.array([0.2, 0.5, 0.7, 0.0, 0.4, 0.9, 0.6])
    out = build_languages(langs, ans, scores >= 0.3, scores)
    c = out.confound
    assert c is not None and c["auc"] == pytest.approx(6 / 9)
    assert c["low"] < LANGUAGE_MIN_AUC and c["high"] > 1 - LANGUAGE_MIN_AUC
    assert c["present"] is False and out.direction is None
    assert out.confounded == frozenset()
    text = confound_text(out)
    assert text is not None and text.startswith("out-of-scope language coverage:")
    assert "does not rank en below the others among answerable rows" in text
    assert "lower end < 0.75" in text


@pytest.mark.parametrize("rows", [1, 2])
def test_too_few_answerable_rows_in_the_language_are_not_measured(rows: int) -> None:
    # en's answerable rows score below all 40 others: AUC 1.0 with the interval [1, 1] (the
    # review's reproduction flagged 1 row); under 3 rows a side nothing is measured
    langs = ["en"] * (rows + 10) + ["de"] * 20 + ["fr"] * 20
    ans = np.array([True] * rows + [False] * 10 + [True] * 40)
    scores = np.concatenate([np.full(rows, 0.55), np.full(10, 0.1), np.linspace(0.6, 1, 40)])
    out = build_languages(langs, ans, scores >= 0.5, scores)
    c = out.confound
    assert c is not None and (c["in_n"], c["rest_n"]) == (rows, 40)
    assert (c["auc"], c["low"], c["high"], c["present"]) == (None, None, None, False)
    assert out.confounded == frozenset()
    text = confound_text(out)
    assert text is not None and text.startswith("out-of-scope language coverage:")
    assert f"(not measured: {rows} answerable en rows and 40 in the others, 3 needed" in text
    # 3 rows, every one below every other: AUC 1, interval [1, 1]: flagged
    langs3 = ["en"] * 13 + ["de"] * 20 + ["fr"] * 20
    ans3 = np.array([True] * 3 + [False] * 10 + [True] * 40)
    scores3 = np.concatenate([np.full(3, 0.55), np.full(10, 0.1), np.linspace(0.6, 1, 40)])
    assert build_languages(langs3, ans3, scores3 >= 0.5, scores3).confounded == {"en"}


def test_a_score_that_ranks_the_language_above_the_others_flags_the_others() -> None:
    # en answerable 0.9-0.99 (4 rows), de and fr 0.3-0.45 (8 rows): every other row below
    # every en row: AUC 0, every replicate too: [0, 0] <= 0.25; threshold 0.4: 0 of 4 en out
    # of scope, de 0.3, 0.35 and fr 0.3, 0.35: 4 of 8
    langs = ["en"] * 6 + ["de"] * 4 + ["fr"] * 4
    ans = np.array([True] * 4 + [False] * 2 + [True] * 8)
    scores = np.array([0.9, 0.93, 0.96, 0.99, 0.05, 0.05, 0.3, 0.35, 0.4, 0.45, 0.3, 0.35,
                       0.4, 0.45])  # fmt: skip
    out = build_languages(langs, ans, scores >= 0.4, scores)
    c = out.confound
    assert c is not None and (c["auc"], c["low"], c["high"]) == (0.0, 0.0, 0.0)
    assert (c["in_out"], c["rest_out"]) == (0, 4)
    assert c["present"] is True and out.direction == "others"
    assert out.confounded == frozenset({"de", "fr"})
    text = confound_text(out)
    assert text is not None and text.startswith("out-of-scope LANGUAGE CONFOUND:")
    assert "its score ranks the others (de, fr) below en among answerable rows" in text
    assert "it may read de, fr as out of scope" in text
    assert "does not" not in text


def test_unanswerable_rows_in_every_answerable_language_need_no_check() -> None:
    # the demo's shape: unanswerable rows in each language served
    langs = ["en", "en", "hi", "hi"]
    ans = np.array([True, False, True, False])
    out = build_languages(langs, ans, ans, ans.astype(float))
    assert out.confound is None and confound_text(out) is None
    assert out.unanswerable == {"en": 1, "hi": 1}


def test_language_rows_give_the_share_its_interval_and_the_confounded_ones() -> None:
    # en 60 of 100: Wilson 95 % [0.5020, 0.6906]; against de's 10 of 100 the rise is
    # 0.5 - sqrt((0.6 - 0.5020)² + (0.1744 - 0.1)²) = 0.3770 (families' worked example)
    langs = ScopeLanguages(("de", "en"), {"de": 8, "en": 8}, {"de": 8, "en": 6},
                           {"de": 0, "en": 10},
                           {"languages": ["en"], "present": True}, "languages")  # fmt: skip
    rows = language_rows({"scored": {"en": 100, "de": 100}, "out_of_scope": {"en": 60, "de": 10},
                          "under_refusals": {"en": 30, "de": 2},
                          "harvest_out_of_scope": {"en": 25, "de": 2}}, langs)  # fmt: skip
    by = {row["language"]: row for row in rows}
    assert by["en"]["low"] == pytest.approx(0.5020, abs=5e-5)
    assert by["en"]["high"] == pytest.approx(0.6906, abs=5e-5)
    assert by["en"]["rise"] == pytest.approx(0.3770, abs=5e-5)
    assert (by["en"]["confounded"], by["de"]["confounded"]) == (True, False)
    assert (by["en"]["unanswerable_gold"], by["de"]["answerable_gold"]) == (10, 8)


def test_totals_count_verdicts_by_language_key_and_survive_a_restart() -> None:
    totals = AnnotationTotals()
    totals.process(_batch([
        {"language": "en-US", "out_of_scope": True, "under_refusal": True},  # harvested, en
        {"language": "en", "out_of_scope": True, "under_refusal": True,
         "scope_unstable": True},  # unstable: not suggested
        {"language": "de", "out_of_scope": False, "under_refusal": False},
        {"out_of_scope": True},  # no language: und
        {"language": "de", "out_of_scope": None},  # no verdict: not counted
    ]))  # fmt: skip
    expected = {"scored": {"en": 2, "de": 1, "und": 1}, "out_of_scope": {"en": 2, "und": 1},
                "under_refusals": {"en": 2}, "harvest_out_of_scope": {"en": 1}}  # fmt: skip
    got = {k: {x: n for x, n in v.items() if n} for k, v in totals.by_scope_language.items()}
    assert got == expected
    restored = AnnotationTotals()
    restored.restore(totals.state_snapshot())
    assert restored.by_scope_language["scored"] == totals.by_scope_language["scored"]
    assert restored.scope_language_from_scored == 0
    old = AnnotationTotals()
    old.restore({"flags": {"scope_scored": 7}})  # kept before session 44: counting begins at 7
    assert old.scope_language_from_scored == 7


def test_the_report_block_counts_under_refusals_and_harvest_in_the_confounded_language(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from service.refusals.languages import scope_language_lines
    from service.runtime import analytics as analytics_module
    from service.runtime import reports

    langs = ScopeLanguages(("de", "en"), {"de": 40, "en": 8}, {"de": 40, "en": 6},
                           {"de": 0, "en": 10},
                           {"languages": ["en"], "others": ["de"], "in_out": 2, "in_n": 8,
                            "rest_out": 0, "rest_n": 40, "rise": 0.05, "auc": 0.978,
                            "low": 0.931, "high": 1.0, "present": True},
                           "languages")  # fmt: skip
    monkeypatch.setattr(analytics_module, "scope_languages_of", lambda analytics: langs)
    totals = AnnotationTotals()
    for kind, counts in {"scored": {"en": 1500, "de": 2494},
                         "out_of_scope": {"en": 400, "de": 166},
                         "under_refusals": {"en": 250, "de": 72},
                         "harvest_out_of_scope": {"en": 230, "de": 60}}.items():  # fmt: skip
        totals.by_scope_language[kind].update(counts)
    totals.flags["scope_scored"] = 3994
    analytics = types.SimpleNamespace(family_min_events=100)
    block = reports.scope_languages_report(analytics, totals, {"answered_out_of_scope": 196})  # type: ignore[arg-type]
    assert block is not None
    assert block["confounded"] == ["en"]
    assert block["under_refusals_text"] == (
        "250 of them in en (language confound: every unanswerable gold row is in en)"
    )
    # 230 + 60 events behind the reason
    assert block["harvest_text"].startswith(
        "230 of the 290 events behind answered_out_of_scope (196 suggestions) are in en"
    )
    lines = scope_language_lines(block)
    assert lines[0].startswith("  WARNING: out-of-scope LANGUAGE CONFOUND")
    # de 166/2,494 = 6.66 %; en 400/1,500 = 26.67 %
    assert lines[1].startswith("  out of scope by language: de 166/2,494 (6.7% [")
    assert "en 400/1,500 (26.7% [" in lines[1] and lines[1].endswith("only here)")
    monkeypatch.setattr(analytics_module, "scope_languages_of", lambda analytics: None)
    assert reports.scope_languages_report(analytics, totals) is None  # type: ignore[arg-type]


def test_scope_languages_reads_the_fitted_detectors_rows_in_gold_order() -> None:
    from service.refusals.stage import EmbeddingScopeStage
    from service.runtime.analytics import scope_languages, scope_languages_of
    from tests.service.test_scope_families import _detector

    detector = _detector()  # 5 answerable rows (a0..a4), then 4 unanswerable (u0..u3)
    # a0, a1 and every unanswerable row English; a2..a4 German ("de-DE" folds to "de")
    langs = ["en", "en-GB", "de-DE", "de", "de", "en", "en", "en", "en"]
    out = scope_languages(detector, langs)
    assert out is not None
    assert out.answerable == {"de": 3, "en": 2} and out.unanswerable == {"de": 0, "en": 4}
    # kept: the held-out probability at the threshold, as the detector's own rates count
    kept = np.asarray(detector.cv_scores) >= detector.calibration.threshold
    assert out.kept == {"en": int(kept[:2].sum()), "de": int(kept[2:5].sum())}
    c = out.confound
    assert c is not None and (c["languages"], c["others"]) == (["en"], ["de"])
    assert (c["in_n"], c["rest_n"]) == (2, 3)
    assert scope_languages(detector, langs[:-1]) is None  # not the detector's rows
    stage = EmbeddingScopeStage(detector)
    stage.languages = out
    assert scope_languages_of(types.SimpleNamespace(stages=[stage])) is out  # type: ignore[arg-type]


def test_language_counts_begun_after_a_restore_say_what_they_cover(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # main's state: 4,000 verdicts (300 under-refusals) counted without languages; then 3 en
    # under-refusals and 2 de verdicts: the language counts cover the last 5 of 4,005
    from service.html.rates import language_rows_html
    from service.jobs.replay import scope_language_lines
    from service.runtime import analytics as analytics_module
    from service.runtime import reports

    langs = ScopeLanguages(("de", "en"), {"de": 40, "en": 8}, {"de": 40, "en": 6},
                           {"de": 0, "en": 10},
                           {"languages": ["en"], "others": ["de"], "in_out": 2, "in_n": 8,
                            "rest_out": 0, "rest_n": 40, "rise": 0.05, "auc": 0.978,
                            "low": 0.931, "high": 1.0, "present": True},
                           "languages")  # fmt: skip
    monkeypatch.setattr(analytics_module, "scope_languages_of", lambda analytics: langs)
    totals = AnnotationTotals()
    totals.restore({"flags": {"scope_scored": 4000, "under_refusals": 300}})
    totals.process(_batch([{"language": "en", "out_of_scope": True, "under_refusal": True}] * 3
                          + [{"language": "de", "out_of_scope": False}] * 2))  # fmt: skip
    analytics = types.SimpleNamespace(family_min_events=1)
    block = reports.scope_languages_report(analytics, totals, {"answered_out_of_scope": 196})  # type: ignore[arg-type]
    assert block is not None
    since = ("counted over the last 5 of 4,005 verdicts (language counts began after a restore "
             "of a state kept without them)")  # fmt: skip
    assert block["under_refusals_text"] == (
        f"3 of them in en (language confound: every unanswerable gold row is in en) ({since})"
    )
    assert block["harvest_text"].endswith(f"({since})")
    lines = scope_language_lines(block)
    assert lines[-1].startswith("  out of scope by language: en 3/3") and lines[-1].endswith(
        f"; {since}"
    )
    assert ["out-of-scope language counts", since] in language_rows_html(block)


def test_live_verdicts_are_keyed_by_the_language_the_gold_row_rule_judges() -> None:
    # labelled en by candidates [en] but read as German (language_excluded): counted under de,
    # as by_language counts it
    totals = AnnotationTotals()
    totals.process(_batch([{"language": "en", "language_excluded": "de", "out_of_scope": True},
                           {"language": "en", "out_of_scope": False}]))  # fmt: skip
    assert dict(totals.by_scope_language["scored"]) == {"de": 1, "en": 1}
    assert dict(totals.by_scope_language["out_of_scope"]) == {"de": 1, "en": 0}
