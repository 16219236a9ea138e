"""LiveQualityStage across gold-set changes: measurements are per gold row, so those of rows a
new gold-set version leaves unchanged are carried over (in the running service's reload and in
a resumed state), those of changed or removed rows dropped, and the report says which.

Expected values are worked out by hand from the 4-question gold set of ``test_quality``: its
five events give q-1 (recall 1, hit 1, RR 1/2; answered), q-2 (recall 1/2, hit 1, RR 1;
refused while answerable), q-3 (unanswerable, not scored; answered) — n_known 3, n_scored 2.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from service.data.goldset import GoldSet
from service.events import QueryLogEvent
from service.html.quality_section import quality_section
from service.jobs.replay import quality_lines
from service.quality.acl import AccessPolicy
from service.quality.known import KnownQuestionIndex
from service.quality.stage import LiveQualityStage
from service.records import GoldQuestion
from tests.service.test_quality import CORPUS, EVENTS, GOLD, candidate, event, run

HOSTEL = "Is there a hostel for first year girls?"
APPENDED = GoldSet((*GOLD, GoldQuestion("q-5", HOSTEL, ("p-6",))))
# q-2 relabelled (one gold passage instead of two): its old measurement is not of this row
CHANGED = GoldSet(
    tuple(GoldQuestion("q-2", q.question, ("p-5",)) if q.id == "q-2" else q for q in GOLD)
)
REMOVED = GoldSet(tuple(q for q in GOLD if q.id != "q-3"))  # q-3 gone
FIRST = "2026-11-29T10:00:01+00:00"  # EVENTS' first and last event times
LAST = "2026-11-29T10:00:05+00:00"


def stage_on(gold: GoldSet) -> LiveQualityStage:
    return LiveQualityStage(KnownQuestionIndex(gold), AccessPolicy.from_corpus(CORPUS))


def change(to: GoldSet, kept: tuple[int, int], dropped: tuple[int, int]) -> dict[str, Any]:
    """The expected change record from ``GOLD`` after ``EVENTS`` (rows, events)."""
    return {"from": GOLD.version, "to": to.version, "reason": "gold set changed",
            "drops": "changed rows", "at": LAST,
            "after_events": 5, "kept_rows": kept[0], "kept_events": kept[1],
            "dropped_rows": dropped[0], "dropped_events": dropped[1]}  # fmt: skip


def test_appended_row_keeps_every_measurement_in_the_service_reload() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    before = stage.report()
    stage.index = KnownQuestionIndex(APPENDED)  # what the service's gold-set refresh does
    after = stage.report()
    assert after["known"] == before["known"]
    assert after["known"] == {
        "production": {"n_known": 3, "n_scored": 2, "recall": 0.75, "hit_rate": 1.0, "mrr": 0.75}
    }
    assert after["refusals"] == before["refusals"]
    assert after["gold_set_version"] == APPENDED.version
    # rows: the gold rows measured (3), not the gold set's size: gold_rows (trial 24)
    assert len(APPENDED) == 5
    assert after["coverage"] == {"gold_set_version": APPENDED.version, "since": FIRST, "rows": 3,
                                 "gold_rows": 5,
                                 "changes": [change(APPENDED, (3, 3), (0, 0))]}  # fmt: skip
    # the appended row is a new known question: counted on top of the carried-over ones
    run(stage, [event(6, HOSTEL, ["p-6"])])
    assert stage.report()["known"]["production"] == {
        "n_known": 4, "n_scored": 3, "recall": 2.5 / 3, "hit_rate": 1.0, "mrr": 2.5 / 3
    }  # fmt: skip


def test_changed_row_drops_its_measurement_and_says_so() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(CHANGED)
    report = stage.report()
    # q-1 and q-3 kept: 2 known, q-1 scored (recall 1, hit 1, RR 1/2)
    assert report["known"] == {
        "production": {"n_known": 2, "n_scored": 1, "recall": 1.0, "hit_rate": 1.0, "mrr": 0.5}
    }
    assert report["refusals"] == {"known_answerable": 1, "refused_answerable": 0,
                                  "known_unanswerable": 1, "answered_unanswerable": 1}  # fmt: skip
    assert report["coverage"]["changes"] == [change(CHANGED, (2, 2), (1, 1))]
    assert report["coverage"]["rows"] == 2


def test_removed_row_drops_its_measurement() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(REMOVED)
    report = stage.report()
    assert report["known"]["production"]["n_known"] == 2  # q-1 and q-2; q-3's event dropped
    assert report["refusals"]["known_unanswerable"] == 0
    assert report["coverage"]["changes"] == [change(REMOVED, (2, 2), (1, 1))]


def test_resumed_state_on_a_new_gold_set_version_carries_unchanged_rows() -> None:
    """``goldwatch replay --state`` after a gold row was appended (a trial saw 86 known
    questions reported against 136 before: the first run's 50 silently gone)."""
    first = stage_on(GOLD)
    run(first, EVENTS)
    saved = json.loads(json.dumps(first.state_snapshot()))
    resumed = stage_on(APPENDED)
    resumed.restore(saved)
    report = resumed.report()
    assert report["known"] == first.report()["known"]
    assert report["refusals"] == first.report()["refusals"]
    assert report["coverage"]["changes"] == [change(APPENDED, (3, 3), (0, 0))]
    changed = stage_on(CHANGED)
    changed.restore(saved)
    assert changed.report()["known"]["production"]["n_known"] == 2
    assert changed.report()["coverage"]["changes"] == [change(CHANGED, (2, 2), (1, 1))]
    # the change is state too: a restart on the same version neither repeats nor loses it
    again = stage_on(APPENDED)
    again.restore(json.loads(json.dumps(resumed.state_snapshot())))
    assert again.report() == report


def test_acl_counts_are_cumulative_over_gold_set_versions_and_say_since_when() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    acl = stage.report()["acl"]
    assert acl["since"] == FIRST
    stage.index = KnownQuestionIndex(CHANGED)
    assert stage.report()["acl"] == acl  # not restarted by the gold set
    run(stage, [event(7, "Is there a bus to the railway station?", ["p-9"], cited=["p-9"])])
    leaks = stage.report()["acl"]["leaks"]
    assert leaks == [{"retriever": "production", "role": "student", "events": 2, "passages": 2}]


def test_gold_set_versions_list_what_cumulative_counts_were_judged_under() -> None:
    stage = stage_on(GOLD)
    assert stage.gold_set_versions() == [GOLD.version]
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(APPENDED)
    stage.index = KnownQuestionIndex(CHANGED)
    assert stage.gold_set_versions() == [GOLD.version, APPENDED.version, CHANGED.version]


def test_a_candidate_result_in_flight_across_a_change_is_not_scored_on_the_new_set() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(REMOVED)
    stage.observe_candidate(candidate(3, ["p-9"], role=None))  # e-3 matched the removed q-3
    assert "cand" not in stage.report()["known"]


def test_version_1_state_keeps_known_figures_only_on_the_same_gold_set() -> None:
    legacy = {"version": 1, "k": 10, "gold_set_version": GOLD.version,
              "known": {"production": [3, 2, 1.5, 2.0, 1.5]},
              "refusals": {"known_answerable": 2, "refused_answerable": 1,
                           "known_unanswerable": 1, "answered_unanswerable": 1},
              "acl": [["leaks", "production", "student", 1]], "review": {}}  # fmt: skip
    same = stage_on(GOLD)
    same.restore(legacy)
    assert same.report()["known"] == {
        "production": {"n_known": 3, "n_scored": 2, "recall": 0.75, "hit_rate": 1.0, "mrr": 0.75}
    }
    assert same.report()["coverage"]["changes"] == []
    other = stage_on(APPENDED)
    other.restore(legacy)  # not per row: cannot tell which rows it measured
    assert other.report()["known"] == {}
    assert other.report()["acl"]["leaks"][0]["events"] == 1
    [dropped] = other.report()["coverage"]["changes"]
    assert (dropped["dropped_events"], dropped["kept_events"]) == (3, 0)


LEGACY = {"version": 1, "k": 10, "gold_set_version": GOLD.version,
          "known": {"production": [3, 2, 1.5, 2.0, 1.5]},
          "refusals": {"known_answerable": 2, "refused_answerable": 1,
                       "known_unanswerable": 1, "answered_unanswerable": 1},
          "acl": [["leaks", "production", "student", 1]], "review": {}}  # fmt: skip
BUS = "Is there a bus to the railway station?"  # matches no gold question


def test_a_version_1_state_reports_since_unknown_and_keeps_saying_so_after_a_restart() -> None:
    stage = stage_on(GOLD)
    stage.restore(LEGACY)
    run(stage, [event(6, BUS, ["p-6"])])  # after the restart: no match, no ACL finding
    again = stage_on(GOLD)
    again.restore(json.loads(json.dumps(stage.state_snapshot())))
    for report in (stage.report(), again.report()):
        assert (report["coverage"]["since"], report["coverage"]["rows"]) == (None, None)
        assert report["acl"]["since"] is None  # the legacy leak's time is unknown
        lines = quality_lines(report)
        assert lines[1] == ("  covers known questions asked since an unknown time (state from "
                            "before version 2: its figures are not per gold row), gold-set "
                            f"version {GOLD.version}")  # fmt: skip
        assert "access control (every event since an unknown time (counts from a state from " \
               "before version 2), whatever the gold-set version;" in "\n".join(lines)  # fmt: skip
        page = str(quality_section(report))
        assert "asked since an unknown time (state from before version 2" in page
        assert "Counted over every event since an unknown time" in page


def test_a_threshold_change_in_the_service_drops_every_measurement_and_in_flight_match() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(GOLD, threshold=0.95)  # same gold set, another threshold
    report = stage.report()
    assert report["known"] == {} and report["refusals"]["known_answerable"] == 0
    [record] = report["coverage"]["changes"]
    assert record["reason"] == "known-question threshold changed from 0.9 to 0.95"
    assert (record["drops"], record["dropped_rows"], record["dropped_events"]) == ("all", 3, 3)
    stage.observe_candidate(candidate(1, ["p-2"]))  # e-1 was matched at 0.9
    assert stage.report()["known"] == {}
    saved = json.loads(json.dumps(stage.state_snapshot()))
    assert saved["threshold"] == 0.95


def test_a_k_and_gold_set_change_at_one_restart_are_two_records() -> None:
    first = LiveQualityStage(KnownQuestionIndex(GOLD), AccessPolicy.from_corpus(CORPUS), k=5)
    run(first, EVENTS)
    resumed = stage_on(CHANGED)  # k 10, q-2 relabelled
    resumed.restore(json.loads(json.dumps(first.state_snapshot())))
    report = resumed.report()
    gold, k = report["coverage"]["changes"]
    assert gold == change(CHANGED, (2, 2), (1, 1))  # q-2 dropped whole, refusals too
    assert (k["reason"], k["drops"], k["from"], k["to"]) == (
        "k changed from 5 to 10", "scores", CHANGED.version, CHANGED.version)  # fmt: skip
    assert (k["dropped_rows"], k["dropped_events"]) == (2, 2)  # q-1 and q-3
    assert report["known"] == {}
    # q-1 answerable answered, q-3 unanswerable answered: kept; q-2's refusal went with q-2
    assert report["refusals"] == {"known_answerable": 1, "refused_answerable": 0,
                                  "known_unanswerable": 1, "answered_unanswerable": 1}  # fmt: skip


def test_the_first_gold_set_version_survives_a_restart_after_many_changes() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    for n in range(21):
        extra = GoldQuestion(f"q-x{n}", f"Which form do I fill for request {n}?", ("p-6",))
        stage.index = KnownQuestionIndex(last := GoldSet((*GOLD, extra)))
    again = stage_on(last)
    again.restore(json.loads(json.dumps(stage.state_snapshot())))
    versions = again.gold_set_versions()
    assert versions[0] == GOLD.version and len(versions) == 21  # first + the newest 20 "to"


def test_a_gold_change_during_a_batch_keeps_matches_on_unchanged_rows() -> None:
    class Racing(KnownQuestionIndex):
        def lookup_many(self, questions: Any) -> Any:
            matches = super().lookup_many(questions)
            holder["stage"].index = KnownQuestionIndex(CHANGED)  # q-2 changed, q-1 not
            return matches

    holder: dict[str, LiveQualityStage] = {}
    stage = holder["stage"] = LiveQualityStage(Racing(GOLD), AccessPolicy.from_corpus(CORPUS))
    run(stage, EVENTS[:2])  # e-1 on q-1 (recall 1, RR 1/2), e-2 on q-2 (changed: not counted)
    assert stage.report()["known"]["production"] == {
        "n_known": 1, "n_scored": 1, "recall": 1.0, "hit_rate": 1.0, "mrr": 0.5
    }  # fmt: skip


def test_a_threshold_change_during_a_batch_counts_none_of_its_matches() -> None:
    class Racing(KnownQuestionIndex):
        def lookup_many(self, questions: Any) -> Any:
            matches = super().lookup_many(questions)
            holder["stage"].index = KnownQuestionIndex(GOLD, threshold=0.95)
            return matches

    holder: dict[str, LiveQualityStage] = {}
    stage = holder["stage"] = LiveQualityStage(Racing(GOLD), AccessPolicy.from_corpus(CORPUS))
    run(stage, EVENTS[:2])  # both matched at 0.9, the threshold the batch no longer runs at
    assert stage.report()["known"] == {}


def test_an_event_stamped_in_the_future_never_dates_the_coverage_or_a_change() -> None:
    """Trial 12 F5: one event stamped in year 5138 (epoch milliseconds read as seconds) was
    kept out of drift as ``future`` but became the ``at`` of the next gold-set change. With the
    wall clock at the events' last second, an event stamped a day ahead is scored (n_known
    counts it) but the coverage keeps FIRST…LAST."""
    clock = datetime.fromisoformat(LAST).timestamp()
    stage = LiveQualityStage(KnownQuestionIndex(GOLD), AccessPolicy.from_corpus(CORPUS),
                             future_tolerance_s=60.0, clock=lambda: clock)  # fmt: skip
    ahead = QueryLogEvent.model_validate(
        {"event_id": "e-6", "timestamp": "2026-11-30T10:00:05Z", "question": HOSTEL,
         "retrieval": {"results": [{"id": "p-6", "rank": 1}]}}
    )  # fmt: skip
    run(stage, [*EVENTS, ahead])
    run(stage, [ahead])  # alone in its batch too
    stage.index = KnownQuestionIndex(APPENDED)
    coverage = stage.report()["coverage"]
    assert coverage["since"] == FIRST
    assert coverage["changes"][0]["at"] == LAST
    assert coverage["changes"][0]["after_events"] == 7


def test_snapshot_lists_measured_rows_in_id_order_whatever_the_hash_seed() -> None:
    """The state file's ``rows`` map is written in gold-id order, not in the order a set of
    ids happens to iterate (which moves with ``PYTHONHASHSEED``): the same input gives the
    same state file (session 48: two replays of one log differed in this map's order)."""
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    rows = stage.state_snapshot()["rows"]
    # EVENTS measure q-1, q-2 and q-3 (module docstring): in that order, whatever the seed
    assert list(rows) == ["q-1", "q-2", "q-3"]
    assert json.dumps(rows) == json.dumps(dict(sorted(rows.items())))
