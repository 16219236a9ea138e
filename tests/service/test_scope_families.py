"""Out-of-scope verdicts by corpus family and the families the calibration did not measure
(session 43; trial 42, MEDIUM 1): the rule's numbers worked by hand, the stage's family of
a question, the totals, and the report's lines."""

from __future__ import annotations

import types
from typing import Any

import numpy as np
import pytest

from service.pipeline.totals import AnnotationTotals
from service.records import GoldQuestion
from service.refusals.families import (
    FAMILY_MIN_RISE,
    ScopeFamilies,
    build_families,
    family_rows,
    family_text,
    harvest_family_text,
    under_refusal_family_text,
)
from service.refusals.scope import EmbeddingScope, nearest_similarity, nearest_with_index
from service.refusals.stage import EmbeddingScopeStage
from service.runtime.analytics import scope_families
from tests.service.test_scope_embedding import TableEmbedder, _events, _unit


def _families(answerable: dict[str, int]) -> ScopeFamilies:
    names = tuple(sorted(answerable))
    return ScopeFamilies(names, np.arange(len(names)), dict(answerable), dict(answerable),
                         dict.fromkeys(names, 0))  # fmt: skip


def _counts(**families: tuple[int, int]) -> dict[str, dict[str, int]]:
    return {"scored": {name: n for name, (_, n) in families.items()},
            "out_of_scope": {name: o for name, (o, _) in families.items()}}  # fmt: skip


def test_trial_42_encyclopedia_is_flagged_and_news_is_not() -> None:
    # trial 42's replay: encyclopedia 901 of 1,317 out of scope, news 380 of 3,082; 6 and 24
    # answerable gold rows. p1 = 0.68413, Wilson lower end of 901/1317 = 0.65852; p2 =
    # 0.12330, Wilson upper end of 380/3082 = 0.13538; rise = 0.56083 - sqrt(0.02561² +
    # 0.01208²) = 0.53252 >= 0.10, and 6 < 10 rows: not measured
    rows = family_rows(_counts(encyclopedia=(901, 1317), news=(380, 3082)),
                       _families({"encyclopedia": 6, "news": 24}), min_rows=10)  # fmt: skip
    assert [row["family"] for row in rows] == ["news", "encyclopedia"]  # most scored first
    by = {row["family"]: row for row in rows}
    assert by["encyclopedia"]["rise"] == pytest.approx(0.53252, abs=5e-6)
    assert by["encyclopedia"]["unmeasured"] is True
    assert by["encyclopedia"]["share"] == pytest.approx(901 / 1317)
    assert by["news"]["unmeasured"] is False  # its share is below the other's
    text = family_text(rows, 10)
    assert text is not None
    assert "family encyclopedia" in text and "901 of 1,317 (68.4%)" in text
    assert "only 6 answerable gold rows" in text
    assert text.endswith("add 4 answerable gold rows from encyclopedia")  # 10 - 6


def test_the_demo_html_family_rise_is_below_the_floor() -> None:
    # the demo: html 76 of 805 against the other families' 109 of 2,195, 9 answerable rows
    # (fewer than 10 here, so only the rise decides): p1 = 0.09441, l1 = 0.07609; p2 =
    # 0.04966, u2 = 0.05956; rise = 0.04475 - sqrt(0.01832² + 0.00990²) = 0.02393 < 0.10
    rows = family_rows(_counts(html=(76, 805), pdf=(109, 2195)),
                       _families({"html": 9, "pdf": 19}), min_rows=10)  # fmt: skip
    html = next(row for row in rows if row["family"] == "html")
    assert html["rise"] == pytest.approx(0.02393, abs=5e-6)
    assert html["unmeasured"] is False
    assert family_text(rows, 10) is None


@pytest.mark.parametrize(("out", "rise", "flagged"), [(73, 0.09633, False), (74, 0.10107, True)])
def test_the_rise_floor_by_hand(out: int, rise: float, flagged: bool) -> None:
    # a: out of 200, the rest 200 of 1,000 (p2 = 0.2, Wilson upper end 0.22592).
    # 73/200: p1 = 0.365, l1 = 0.30141, rise = 0.165 - sqrt(0.06359² + 0.02592²) = 0.09633;
    # 74/200: p1 = 0.370, l1 = 0.30613, rise = 0.170 - sqrt(0.06387² + 0.02592²) = 0.10107
    assert FAMILY_MIN_RISE == 0.10
    rows = family_rows(_counts(a=(out, 200), b=(200, 1000)), _families({"a": 2, "b": 40}), 10)
    a = next(row for row in rows if row["family"] == "a")
    assert a["rise"] == pytest.approx(rise, abs=5e-6)
    assert a["unmeasured"] is flagged


def test_a_family_with_min_rows_answerable_rows_is_measured_whatever_its_share() -> None:
    counts = _counts(a=(150, 200), b=(100, 1000))  # a rise far above the floor
    assert family_rows(counts, _families({"a": 10, "b": 40}), 10)[1]["unmeasured"] is False
    assert family_rows(counts, _families({"a": 9, "b": 40}), 10)[1]["unmeasured"] is True


def test_a_family_alone_or_without_verdicts_has_no_rise() -> None:
    rows = family_rows(_counts(a=(10, 10)), _families({"a": 0, "b": 3}), 10)
    assert {row["family"]: row["rise"] for row in rows} == {"a": None, "b": None}
    assert not any(row["unmeasured"] for row in rows)


def test_under_refusals_and_harvest_events_in_unmeasured_families_are_said() -> None:
    rows = [{"family": "e", "unmeasured": True, "under_refusals": 371, "harvest_out_of_scope": 339},
            {"family": "n", "unmeasured": False, "under_refusals": 144,
             "harvest_out_of_scope": 100}]  # fmt: skip
    assert under_refusal_family_text(rows) == (
        "371 of them in family e, whose out-of-scope verdicts are not measured"
    )
    # the events next to the events, the suggestions named as such (blocker 2 of the review:
    # "answered_out_of_scope 291" then "339 of its events" read as 339 of 291)
    assert harvest_family_text(rows, 479, 291) == (
        "339 of the 479 events behind answered_out_of_scope (291 suggestions) lie in family e, "
        "whose out-of-scope verdicts are not measured (kept: a labeller decides)"
    )
    assert under_refusal_family_text(rows[1:]) is None
    assert harvest_family_text(rows[1:], 479, 291) is None


def test_one_event_does_not_raise_the_family_warning() -> None:
    # review blocker 1: a 1 of 1 against 100 of 1,000. Wilson (95 %) lower end of 1/1 =
    # 1 / (1 + 1.96²) = 0.20654; upper end of 100/1000 = (0.1019208 + 1.96 ·
    # sqrt(0.00009 + 0.00000096)) / 1.0038416 = 0.12015; rise = 0.9 - sqrt(0.79346² +
    # 0.02015²) = 0.10628 >= 0.10: flagged without a minimum count, not with 200 (drift.min_count)
    counts, fam = _counts(a=(1, 1), b=(100, 1000)), _families({"a": 0, "b": 40})
    before = next(row for row in family_rows(counts, fam, 10) if row["family"] == "a")
    assert before["rise"] == pytest.approx(0.10628, abs=5e-5)
    assert before["unmeasured"] is True  # min_events 1: the behaviour the review found
    a = next(row for row in family_rows(counts, fam, 10, min_events=200) if row["family"] == "a")
    assert a["rise"] == before["rise"] and a["too_few"] is True and a["unmeasured"] is False
    assert family_text([a], 10) is None
    from service.jobs.replay import family_lines

    line = family_lines({"rows": [a], "rule": "R", "min_events": 200})[0]
    assert "a 1/1 (100.0%; 0 answerable gold rows" in line
    assert line.endswith("too few events to judge (n < 200))")


@pytest.mark.parametrize(("n", "flagged"), [(199, False), (200, True)])
def test_a_family_is_judged_from_min_events_scored_events(n: int, flagged: bool) -> None:
    # n - 50 of n out of scope (p1 0.749 / 0.75) against 100 of 1,000: a rise far above 0.10
    rows = family_rows(_counts(a=(n - 50, n), b=(100, 1000)), _families({"a": 2, "b": 40}), 10,
                       min_events=200)  # fmt: skip
    a = next(row for row in rows if row["family"] == "a")
    assert a["rise"] > 0.5
    assert a["too_few"] is (not flagged) and a["unmeasured"] is flagged


def test_build_families_places_gold_rows_by_their_nearest_passage() -> None:
    # passages: 0 wiki, 1 news, 2 (none), 3 news; gold rows nearest 0, 3, 2, 1, 0:
    # answerable kept, answerable not kept, answerable (no family), unanswerable, unanswerable
    fam = build_families(["wiki", "news", None, "news"], np.array([0, 3, 2, 1, 0]),
                         np.array([True, True, True, False, False]),
                         np.array([True, False, True, False, False]))  # fmt: skip
    assert fam is not None
    assert fam.names == ("news", "wiki")
    assert fam.answerable == {"news": 1, "wiki": 1}
    assert fam.kept == {"news": 0, "wiki": 1}
    assert fam.unanswerable == {"news": 1, "wiki": 1}
    assert fam.family_of(np.array([3, 2, -1, 0])) == ["news", None, None, "wiki"]
    assert (
        build_families([None, "news"], np.array([1]), np.array([True]), np.array([True])) is None
    )  # one family: the whole corpus


def test_nearest_with_index_gives_nearest_similarity_bits() -> None:
    rng = np.random.default_rng(0)
    queries = rng.standard_normal((37, 16)).astype(np.float32)
    rows = rng.standard_normal((53, 16)).astype(np.float32)
    sims, at = nearest_with_index(queries, rows)
    assert sims.tobytes() == nearest_similarity(queries, rows).tobytes()
    assert at.tolist() == np.argmax(queries @ rows.T, axis=1).tolist()
    empty_sims, empty_at = nearest_with_index(queries[:2], rows[:0])
    assert empty_sims.tolist() == [-1.0, -1.0] and empty_at.tolist() == [-1, -1]


def _detector() -> EmbeddingScope:
    # answerable gold rows at 0°, 5°, 10°, 15° (near the wiki passage at 10°) and one at 80°
    # (near the news passage at 80°); unanswerable at 40°, 42°, 50°, 130°
    questions, table = [], {}
    for i, angle in enumerate((0, 5, 10, 15, 80)):
        questions.append(GoldQuestion(f"a{i}", f"in {i}", (f"p{i}",)))
        table[f"in {i}"] = _unit(angle)
    for i, angle in enumerate((40, 42, 50, 130)):
        questions.append(GoldQuestion(f"u{i}", f"out {i}", ()))
        table[f"out {i}"] = _unit(angle)
    table |= {"wiki passage": _unit(10), "news passage": _unit(80), "near wiki": _unit(12),
              "near news": _unit(75), "between": _unit(44)}  # fmt: skip
    return EmbeddingScope(TableEmbedder(table), questions, ["wiki passage", "news passage"],
                          n_boot=0)  # fmt: skip


def test_the_stage_writes_the_family_of_the_nearest_passage() -> None:
    detector = _detector()
    families = scope_families(detector, ["wiki", "news"])
    assert families is not None
    # gold rows: 0°, 5°, 10°, 15° nearest the wiki passage (10°); 80° the news one; the
    # unanswerable 40° and 42° wiki (30° and 32° from 10°, 40° and 38° from 80°), 50° and
    # 130° news (40° and 120° from 10°, 30° and 50° from 80°)
    assert families.answerable == {"news": 1, "wiki": 4}
    assert families.unanswerable == {"news": 2, "wiki": 2}
    stage = EmbeddingScopeStage(detector)
    stage.families = families
    questions = ["near wiki", "near news", "between"]  # 12°: 2° from wiki; 75°: 5° from news
    notes: list[dict[str, Any]] = [{"refused": False} for _ in questions]
    stage.process(types.SimpleNamespace(events=_events(questions), annotations=notes))
    assert [n["scope_family"] for n in notes] == ["wiki", "news", "wiki"]  # 44°: 34° vs 36°
    plain = EmbeddingScopeStage(detector)  # no families: no key, the same verdicts
    again: list[dict[str, Any]] = [{"refused": False} for _ in questions]
    plain.process(types.SimpleNamespace(events=_events(questions), annotations=again))
    assert all("scope_family" not in n for n in again)
    assert [n["scope_score"] for n in again] == [n["scope_score"] for n in notes]


def test_scope_families_needs_two_doc_types() -> None:
    assert scope_families(_detector(), ["wiki", None]) is None
    assert scope_families(_detector(), ["wiki"]) is None  # not one per passage


def _batch(notes: list[dict[str, Any]]) -> Any:
    return types.SimpleNamespace(events=[], annotations=notes)


def test_totals_count_by_family_and_survive_a_restart() -> None:
    totals = AnnotationTotals()
    totals.process(_batch([
        {"scope_family": "e", "out_of_scope": True, "under_refusal": True},  # harvested
        {"scope_family": "e", "out_of_scope": True, "under_refusal": True,
         "scope_calibrated": False},  # uncalibrated: not suggested
        {"scope_family": "e", "out_of_scope": True, "under_refusal": True,
         "scope_unstable": True},  # unstable: not suggested
        {"scope_family": "e", "out_of_scope": False, "under_refusal": False},
        {"scope_family": "n", "out_of_scope": True, "under_refusal": False},
        {"scope_family": "n", "out_of_scope": None},  # no verdict: not counted
        {"out_of_scope": True, "under_refusal": True},  # no family: not counted
    ]))  # fmt: skip
    expected = {"scored": {"e": 4, "n": 1}, "out_of_scope": {"e": 3, "n": 1},
                "under_refusals": {"e": 3}, "harvest_out_of_scope": {"e": 1}}  # fmt: skip
    assert {k: dict(v) for k, v in totals.by_family.items()} == expected
    state = totals.state_snapshot()
    assert state["by_family"] == expected
    restored = AnnotationTotals()
    restored.restore(state)
    assert {k: dict(v) for k, v in restored.by_family.items()} == expected


def test_totals_without_families_keep_their_state_shape() -> None:
    totals = AnnotationTotals()
    totals.process(_batch([{"out_of_scope": True}]))
    assert "by_family" not in totals.state_snapshot()
    restored = AnnotationTotals()
    restored.restore({"flags": {"scope_scored": 1}})  # a state kept before session 43
    assert all(not v for v in restored.by_family.values())


def _report_totals() -> AnnotationTotals:
    totals = AnnotationTotals()
    for kind, counts in {
        "scored": {"encyclopedia": 1317, "news": 3082},
        "out_of_scope": {"encyclopedia": 901, "news": 380},
        "under_refusals": {"encyclopedia": 371, "news": 144},
        "harvest_out_of_scope": {"encyclopedia": 339, "news": 120, "": 20},
    }.items():
        totals.by_family[kind].update(counts)  # fmt: skip
    totals.flags["scope_scored"] = 1317 + 3082 + 25  # 25 verdicts in no family
    return totals


def _analytics(min_events: int = 200) -> Any:
    return types.SimpleNamespace(quality_min_class=10, family_min_events=min_events)


def test_the_report_block_names_the_unmeasured_family_and_its_events(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from service.jobs.replay import family_lines
    from service.runtime import reports

    fam = _families({"encyclopedia": 6, "news": 24})
    monkeypatch.setattr(reports, "scope_families_of", lambda analytics: fam)
    totals = _report_totals()
    block = reports.families_report(_analytics(), totals, {"answered_out_of_scope": 291})
    assert block is not None
    assert block["unmeasured"] == ["encyclopedia"]
    assert block["under_refusals_text"] == (
        "371 of them in family encyclopedia, whose out-of-scope verdicts are not measured"
    )
    # 339 + 120 + 20 (no family) = 479 events behind the reason; 291 suggestions held
    assert block["harvest"] == {"events": 479, "suggestions": 291, "events_unmeasured": 339}
    assert block["harvest_text"].startswith(
        "339 of the 479 events behind answered_out_of_scope (291 suggestions) lie in family "
        "encyclopedia"
    )
    assert block["since_text"] is None and block["from_scored"] == 0
    assert block["text"].endswith("and 0 unanswerable: how many answerable questions it "
                                  "judges out of scope there is not measured; add 4 answerable "
                                  "gold rows from encyclopedia")  # fmt: skip
    lines = family_lines(block)
    assert lines[0].startswith("  WARNING: out-of-scope verdicts outside what the calibration")
    assert "encyclopedia 901/1,317 (68.4%; 6 answerable gold rows" in lines[1]
    assert lines[1].endswith("NOT MEASURED)")
    off = reports.families_report(_analytics(), totals, None)  # harvesting off: no harvest text
    assert off is not None and off["harvest_text"] is None and "harvest" not in off
    monkeypatch.setattr(reports, "scope_families_of", lambda analytics: None)
    assert reports.families_report(_analytics(), totals) is None


def test_family_counts_begun_after_a_restore_say_what_they_cover(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # review blocker 3: a state saved by main (no by_family) with 4,000 verdicts; 3 events
    # with a family after the upgrade: the family counts cover the last 3 of 4,003 verdicts
    from service.runtime import reports

    totals = AnnotationTotals()
    totals.restore({"flags": {"scope_scored": 4000, "out_of_scope": 900}})
    assert totals.family_from_scored == 4000
    totals.process(_batch([{"scope_family": "e", "out_of_scope": True},
                           {"scope_family": "e", "out_of_scope": False},
                           {"scope_family": "n", "out_of_scope": False}]))  # fmt: skip
    assert totals.flags["scope_scored"] == 4003
    assert dict(totals.by_family["scored"]) == {"e": 2, "n": 1}
    monkeypatch.setattr(reports, "scope_families_of",
                        lambda analytics: _families({"e": 2, "n": 40}))  # fmt: skip
    block = reports.families_report(_analytics(1), totals, {})
    assert block is not None
    assert (block["from_scored"], block["scored"]) == (4000, 4003)
    assert block["since_text"].startswith("counted over the last 3 of 4,003 verdicts")
    from service.jobs.replay import family_lines

    assert family_lines(block)[-2].endswith(block["since_text"])
    # kept across a save and a restore; a state of this version counted from its start
    again = AnnotationTotals()
    again.restore(totals.state_snapshot())
    assert again.family_from_scored == 4000
    fresh = AnnotationTotals()
    fresh.process(_batch([{"scope_family": "e", "out_of_scope": True}]))
    assert "family_from_scored" not in fresh.state_snapshot()
    restored = AnnotationTotals()
    restored.restore(fresh.state_snapshot())
    assert restored.family_from_scored == 0


def test_the_largest_ten_families_and_the_flagged_ones_are_listed() -> None:
    from service.refusals.families import shown_families

    rows = [{"family": f"f{i:02d}", "unmeasured": i == 13} for i in range(15)]
    shown, more = shown_families(rows)
    assert [row["family"] for row in shown] == [f"f{i:02d}" for i in range(10)] + ["f13"]
    assert more == 4  # 15 - 11


def test_config_check_names_ten_families_and_says_why_there_are_none() -> None:
    from service.refusals.families import gold_families_text
    from service.runtime.analytics import families_off_text

    # 12 families: f00 with 30 answerable rows, f01..f11 with 11 - i (10 down to 0)
    names = [f"f{i:02d}" for i in range(12)]
    fam = _families({name: 30 if i == 0 else 11 - i for i, name in enumerate(names)})
    text = gold_families_text(fam, 10)
    # the ten of most rows: f00 (30) and f01..f09 (10..2); f10 (1) and f11 (0) left out
    assert text.startswith(
        "out-of-scope families (doc_type of the nearest passage): f00 30 "
        "answerable gold rows (30 kept in scope held out), f01 10 (10), "
    )
    assert "f09 2 (2) and 2 more;" in text and "f10 1" not in text
    # fewer than 10: f02..f11 (10 families, all named), f01 has 10
    assert "fewer than 10 in families f02, f03, f04, f05, f06, f07, f08, f09, f10, f11:" in text
    assert "more families" not in text
    assert gold_families_text(fam, 10, top=3).endswith(
        "(add 1 answerable gold rows from f02, 2 answerable gold rows from f03, 3 answerable "
        "gold rows from f04, and 7 more families)"
    )
    stage = EmbeddingScopeStage(_detector())  # families None: the corpus's one doc_type
    analytics: Any = types.SimpleNamespace(stages=[stage])
    assert families_off_text(analytics) == (
        "out-of-scope verdicts are not broken down by corpus family: the corpus labels fewer "
        "than two doc_type values (one family is the whole corpus, which the detector's own "
        "figures measure)"
    )
    stage.families = scope_families(_detector(), ["wiki", "news"])
    assert families_off_text(analytics) is None
