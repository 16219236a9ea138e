"""The verdicts the off-corpus cutoff's range moves (``out_of_scope.unstable``) are counted
under one range at a time, carried across a restart, and said next to the rates they differ
from (session 39):

* the counts survive a state round trip while the range stays (a restart refits the same
  range: the totals' ``unstable_since`` is saved with them);
* a refresh whose range differs starts them again, saying since which scored question and
  event time; one that refits the same range keeps counting;
* a state kept before ``unstable_since`` (the thirty-eighth session's, whose unstable counts
  ran under a range it does not name, and an older one without unstable counts) starts them
  at its restore, so they never mix ranges or claim the verdicts counted before;
* the report's figures and sentence, the drift report's ``counts``, and the rates table's
  two named out-of-scope rows.

Every expected value is counted by hand from the planted annotations below.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from service.drift.stage import UNITS, DriftStage
from service.events import QueryLogEvent
from service.html.rates import refusals_section
from service.pipeline import Batch
from service.pipeline.totals import AnnotationTotals, unstable_counts
from service.refusals.scope import SHARE_COUNTS, unstable_text, windows_count

AT = datetime(2026, 12, 3, 1, 0, tzinfo=UTC)
BAND_A, BAND_B = "[0.2500, 0.4000]", "[0.2200, 0.3700]"


def _batch(notes: list[dict[str, Any]], start: datetime = AT) -> Batch:
    events = [QueryLogEvent(event_id=f"e-{start.timestamp()}-{i}",
                            timestamp=start + timedelta(seconds=i), question="q")
              for i in range(len(notes))]  # fmt: skip
    batch = Batch.of(events, "file")
    batch.annotations[:] = [dict(n) for n in notes]
    return batch


# 10 scored questions: 4 out of scope (2 of them unstable), 6 in scope (1 unstable); one
# event without a verdict. Under one range: scored 10, out_of_scope 4, unstable out 2, in 1.
NOTES = [
    {"out_of_scope": True, "scope_unstable": True},
    {"out_of_scope": True, "scope_unstable": True},
    {"out_of_scope": True, "scope_unstable": False},
    {"out_of_scope": True},
    {"out_of_scope": False, "scope_unstable": True},
    *({"out_of_scope": False, "scope_unstable": False} for _ in range(5)),
    {"out_of_scope": None},
]


def _round_trip(stage: AnnotationTotals) -> AnnotationTotals:
    restarted = AnnotationTotals()
    restarted.restore(json.loads(json.dumps(stage.state_snapshot())))
    return restarted


def test_the_unstable_counts_survive_a_restart_under_the_same_range() -> None:
    stage = AnnotationTotals()
    stage.band = BAND_A
    stage.process(_batch(NOTES))
    restarted = _round_trip(stage)
    restarted.band = BAND_A  # the restart refits the same range (4 places)
    restarted.process(_batch(NOTES, AT + timedelta(hours=1)))
    counts = unstable_counts(restarted.flags, restarted.unstable_since, restarted.band)
    # two batches of 10 scored: 20 scored, 8 out, unstable 4 out / 2 in, all since the start
    assert counts == {"out": 4, "in": 2, "scored": 20, "out_of_scope": 8, "since_scored": 0,
                      "since": AT.isoformat(), "band": BAND_A}  # fmt: skip


def test_a_refresh_that_moves_the_range_starts_the_counts_again_and_says_since_when() -> None:
    stage = AnnotationTotals()
    stage.band = BAND_A
    stage.process(_batch(NOTES))
    stage.band = BAND_A  # a refresh refitting the same range: keeps counting
    stage.process(_batch(NOTES, AT + timedelta(hours=1)))
    assert unstable_counts(stage.flags, stage.unstable_since, stage.band)["scored"] == 20
    later = AT + timedelta(hours=2)
    stage.band = BAND_B  # the range moved
    stage.process(_batch(NOTES[:5], later))  # 5 scored: 4 out (2 unstable), 1 in (unstable)
    counts = unstable_counts(stage.flags, stage.unstable_since, stage.band)
    assert counts == {"out": 2, "in": 1, "scored": 5, "out_of_scope": 4, "since_scored": 20,
                      "since": later.isoformat(), "band": BAND_B}  # fmt: skip
    # the all-time flags still hold every range's: 4 + 4 + 2 out, 2 + 1 in
    assert (stage.flags["unstable_out"], stage.flags["unstable_in"]) == (6, 3)
    restarted = _round_trip(stage)  # and the new range's start survives a restart
    restarted.band = BAND_B
    restarted.process(_batch([{"out_of_scope": False, "scope_unstable": True}], later))
    assert unstable_counts(restarted.flags, restarted.unstable_since, restarted.band)["in"] == 2


def test_a_moved_range_claims_no_count_before_a_batch_is_counted_under_it() -> None:
    # a refresh (or a restart with another gold set) moved the range; no batch since: the
    # counts kept are the old range's, and the reports state them under the new one's name
    # (review of s39-oos: a resumed replay with another gold set said "606 ... lie in" the
    # new range, counted under the old)
    stage = AnnotationTotals()
    stage.band = BAND_A
    stage.process(_batch(NOTES))
    stage.band = BAND_B
    assert unstable_counts(stage.flags, stage.unstable_since, stage.band) == {
        "out": 0, "in": 0, "scored": 0, "out_of_scope": 0, "since_scored": 10,
        "since": None, "band": None}  # fmt: skip
    restarted = _round_trip(stage)  # the same after a restart under the new range
    restarted.band = BAND_B
    assert unstable_counts(restarted.flags, restarted.unstable_since, restarted.band)["in"] == 0


def test_a_gap_without_a_range_starts_the_counts_again_when_it_is_back() -> None:
    # a refresh to a detector without the off-corpus range (band None), then back to the same
    # range: the questions scored in between were marked by no range, so they are no part of
    # its counts (review of s39-oos: they were, under "since the first start")
    stage = AnnotationTotals()
    stage.band = BAND_A
    stage.process(_batch(NOTES))
    stage.band = None
    stage.process(_batch([{"out_of_scope": True}] * 4, AT + timedelta(hours=1)))
    stage.band = BAND_A
    later = AT + timedelta(hours=2)
    stage.process(_batch(NOTES, later))
    assert unstable_counts(stage.flags, stage.unstable_since, stage.band) == {
        "out": 2, "in": 1, "scored": 10, "out_of_scope": 4, "since_scored": 14,
        "since": later.isoformat(), "band": BAND_A}  # fmt: skip


def test_a_state_kept_before_the_range_was_named_starts_the_counts_at_its_restore() -> None:
    # the thirty-eighth session's state: unstable counts under a range it does not name
    s38 = {"flags": {"scope_scored": 2881, "out_of_scope": 578, "unstable_out": 281,
                     "unstable_in": 128}, "pii": {}, "by_language": {},
           "counted_under": [{"detector": "embedding", "from_scored": 0}]}  # fmt: skip
    # and an older one, without unstable counts at all
    s37 = {"flags": {"scope_scored": 2881, "out_of_scope": 578}, "pii": {}}
    for old, out_before in ((s38, 281), (s37, 0)):
        stage = AnnotationTotals()
        stage.restore(old)
        assert stage.unstable_since is None
        # before any batch: nothing counted under the range, all 2881 counted before
        assert unstable_counts(stage.flags, None, None) == {
            "out": 0, "in": 0, "scored": 0, "out_of_scope": 0, "since_scored": 2881,
            "since": None, "band": None}  # fmt: skip
        stage.band = BAND_A
        stage.process(_batch(NOTES))
        counts = unstable_counts(stage.flags, stage.unstable_since, stage.band)
        assert counts == {"out": 2, "in": 1, "scored": 10, "out_of_scope": 4,
                          "since_scored": 2881, "since": AT.isoformat(),
                          "band": BAND_A}  # fmt: skip
        assert stage.flags["unstable_out"] == out_before + 2  # the all-time flag adds on


def test_the_sentence_says_since_when_and_the_stable_share() -> None:
    # the third test's figures after the upgrade: 3 of 10 lie in the range (2 out, 1 in);
    # the other 7 hold 4 - 2 = 2 out of scope: 2/7 = 28.6 %; count could reach 5 or fall to 2
    scope = {"scored": 2891, "out_of_scope": 582,
             "unstable": {"out": 2, "in": 1, "scored": 10, "out_of_scope": 4,
                          "since_scored": 2881, "since": AT.isoformat()},
             "support": {"band": (0.25, 0.4)}}  # fmt: skip
    text = " ".join(unstable_text(scope).split())
    assert text.startswith("3 of 10 questions scored since the range became [0.250, 0.400] "
                           "(event time 2026-12-03T01:00:00+00:00; the 2881 scored before "
                           "were judged under another range or before these counts were kept) "
                           "(30.0%) lie in")  # fmt: skip
    assert "2 of the 4 out of scope and 1 in scope" in text
    assert "could rise to 5 or fall toward 2" in text
    assert "nor does it cover the detector's regression" in text
    assert text.endswith("the out_of_scope drift dimension tests only the other 7 (out of "
                         "scope 2 of them, 28.6%)")  # fmt: skip
    # nothing scored under the range yet (a restored old state): no sentence
    assert unstable_text({**scope, "unstable": {**scope["unstable"], "scored": 0}}) == ""


def test_the_drift_report_says_what_each_rate_dimensions_windows_count() -> None:
    report = DriftStage({"language": {"en": 10}, "topic": {"a": 10}}).report()
    assert report["out_of_scope"]["counts"] == UNITS["out_of_scope"]
    assert "does not move" in report["out_of_scope"]["counts"]
    assert report["refusal"]["counts"] == "answers"
    assert windows_count("out_of_scope", report["out_of_scope"]) == (
        " of scored questions (verdicts the off-corpus cutoff's range does not move)"
    )
    assert windows_count("refusal", report["refusal"]) == ""
    assert SHARE_COUNTS.startswith("every verdict")


def _analytics(unstable: dict[str, Any] | None) -> dict[str, Any]:
    test = {"rate_reference": 0.05, "rate_current": 0.08, "ci_low": 0.01, "ci_high": 0.05,
            "p_value": 0.01, "state": "ok"}  # fmt: skip
    scope: dict[str, Any] = {"scored": 100, "out_of_scope": 20, "share": 0.2,
                             "over_refusals": 0, "under_refusals": 0}  # fmt: skip
    if unstable is not None:
        scope["unstable"] = unstable
    rate = {"state": "ok", "comparisons": {"baseline": test}}
    return {"refusals": {"answers": 50, "refused": 5, "rate": 0.1, "method": "patterns"},
            "out_of_scope": scope, "drift": {"refusal": rate, "out_of_scope": rate}}  # fmt: skip


def test_the_rates_table_names_the_share_of_every_verdict_and_of_the_stable_ones() -> None:
    # 100 scored, 20 out; 10 unstable (6 out, 4 in): stable 90, of them 14 out: 15.6 %
    html = str(refusals_section(_analytics({"out": 6, "in": 4, "scored": 100,
                                            "out_of_scope": 20, "since_scored": 0,
                                            "stable_share": 14 / 90}), None))  # fmt: skip
    assert "out-of-scope questions, every verdict" in html
    assert "– (the windows count the stable verdicts only)" in html
    assert ("out-of-scope questions, stable verdicts only (the off-corpus cutoff&#x27;s range "
            "moves none)") in html  # fmt: skip
    assert "15.6%" in html and "20.0%" in html
    assert "count only the stable verdicts" in html  # the chart's caption
    plain = str(refusals_section(_analytics(None), None))  # no range: one row, as before
    assert "every verdict" not in plain and "out-of-scope questions" in plain


def test_no_batch_under_the_range_is_said_not_drawn_as_a_zero_share() -> None:
    """Session 40: before a batch is counted under the range now in use (the first start,
    or a refresh or restart that moved the range: every count 0, ``since`` unset) the share of
    the stable verdicts is ``None``; the table and the chart say there was no batch yet under
    this range, where the chart drew a bar at 0."""
    moved = {"out": 0, "in": 0, "scored": 0, "out_of_scope": 0, "since_scored": 100,
             "since": None, "band": None, "stable_share": None}  # fmt: skip
    html = str(refusals_section(_analytics(moved), None))
    assert "– (no batch yet under this range)" in html  # the stable verdicts' row
    assert ">no batch yet under this range</text>" in html  # in the chart, for its group
    assert "20.0%" in html  # the share of every verdict stays in the table
    # counted, yet every verdict under the range is one it moves: said so
    lying = {**moved, "out": 1, "in": 3, "scored": 4, "since": "2026-12-03T01:00:00"}
    said = str(refusals_section(_analytics(lying), None))
    assert "no stable verdict yet under this range (all 4 scored lie in it)" in said
    counted = str(refusals_section(_analytics(
        {**moved, "scored": 10, "out_of_scope": 2, "since": "2026-12-03T01:00:00",
         "stable_share": 0.2}), None))  # fmt: skip
    assert "under this range" not in counted


def test_no_answers_yet_is_said_not_drawn_as_a_zero_bar(tmp_path: Path) -> None:
    """Session 41: a service on an empty log (no answer, no question scored: every rate
    ``None``) drew the refusal chart's axes with an invisible 0 bar and an "all events"
    legend. The status page says there is no chart yet and why, and the row says why it has
    no value; with some questions scored and no answer yet, the chart has the out-of-scope
    bar and the words "no answers yet" in place of the refusal bar."""
    from service.html import render_status_page
    from service.jobs.replay import run_replay
    from service.settings import load_settings
    from tests.acceptance.test_html_chromium import STATUS

    (tmp_path / "log.jsonl").write_text("", encoding="utf-8")
    doc = run_replay(load_settings(), tmp_path / "log.jsonl", None, tmp_path / "dlq.jsonl")
    assert doc["analytics"]["refusals"]["rate"] is None
    page = render_status_page(STATUS, doc["analytics"])
    section = page[page.index('<section id="refusals">') :]
    section = section[: section.index("</section>")]
    assert "<figure>" not in section and "<svg" not in section  # no axes, no 0 bar
    assert '<p class="muted">No chart yet: no answers yet.</p>' in section
    assert "<td>– (no answers yet)</td>" in section
    some = _analytics(None)
    some["refusals"] = {"answers": 0, "refused": 0, "rate": None, "method": "no answers yet"}
    html = str(refusals_section(some, None))
    assert "<svg" in html and ">no answers yet</text>" in html  # the note in place of a bar
    assert "20.0%" in html  # the out-of-scope share is drawn and listed
