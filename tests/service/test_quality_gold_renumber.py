"""LiveQualityStage across a renumbered (and reordered) gold set: a row's measurement belongs to
its content, not its id (trial 50, M2: renumbering the 47 rows `n-001…` in a shuffled order
while ``serve`` ran left ``known: {}`` and ``dropped_rows 45, dropped_events 350``).

Expected values are worked out by hand from the 4-question gold set of ``test_quality``: its
five events give q-1 (recall 1, hit 1, RR 1/2; answered), q-2 (recall 1/2, hit 1, RR 1;
refused while answerable), q-3 (unanswerable, not scored; answered). Summed: n_known 3,
n_scored 2, recall (1 + 1/2)/2 = 0.75, hit 1, MRR (1/2 + 1)/2 = 0.75; refusals: answerable 2
(q-1, q-2), refused answerable 1 (q-2), unanswerable 1 (q-3), answered unanswerable 1 (q-3).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from service.data.goldset import GoldSet, row_content
from service.evaluation.compare import paired_comparison
from service.quality.acl import AccessPolicy
from service.quality.by_group import paired_by_question
from service.quality.known import KnownQuestionIndex
from service.quality.stage import LiveQualityStage, PairedCells, add_paired_tests
from service.records import GoldQuestion
from tests.service.test_quality import CORPUS, EVENTS, GOLD, LIBRARY, candidate, event, run

#: q-1 -> n-003, q-2 -> n-001, q-3 -> n-004, q-4 -> n-002, written in another order
NEW_IDS = {"q-1": "n-003", "q-2": "n-001", "q-3": "n-004", "q-4": "n-002"}
RENUMBERED = GoldSet(tuple(dataclasses.replace(GOLD.by_id[old], id=NEW_IDS[old])
                           for old in ("q-3", "q-1", "q-4", "q-2")))  # fmt: skip
# renumbered, and q-2's row (now n-001) relabelled to one gold passage: a changed row
EDITED = GoldSet(tuple(dataclasses.replace(q, gold=("p-5",)) if q.id == "n-001" else q
                       for q in RENUMBERED))  # fmt: skip
KNOWN = {"production": {"n_known": 3, "n_scored": 2, "recall": 0.75, "hit_rate": 1.0,
                        "mrr": 0.75}}  # fmt: skip
REFUSALS = {"known_answerable": 2, "refused_answerable": 1, "known_unanswerable": 1,
            "answered_unanswerable": 1}  # fmt: skip
LAST = "2026-11-29T10:00:05+00:00"


def stage_on(gold: GoldSet) -> LiveQualityStage:
    return LiveQualityStage(KnownQuestionIndex(gold), AccessPolicy.from_corpus(CORPUS))


def change(to: GoldSet, kept: tuple[int, int], dropped: tuple[int, int], renamed: int) -> Any:
    """The expected change record from ``GOLD`` after ``EVENTS`` (rows, events)."""
    reason = "gold set changed" + (
        f"; {renamed} measured rows renumbered (same content, new id), kept" if renamed else ""
    )
    return {"from": GOLD.version, "to": to.version, "reason": reason,
            "drops": "changed rows", "at": LAST,
            "after_events": 5, "kept_rows": kept[0], "kept_events": kept[1],
            "dropped_rows": dropped[0], "dropped_events": dropped[1]}  # fmt: skip


def test_a_renumbered_shuffled_gold_set_keeps_the_live_figures_in_the_service_reload() -> None:
    assert RENUMBERED.version != GOLD.version  # the version names the ids: a change
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.observe_candidate(candidate(1, ["p-2"]))  # e-1 (q-1): recall 1, hit 1, RR 1
    stage.index = KnownQuestionIndex(RENUMBERED)
    report = stage.report()
    assert report["known"]["production"] == KNOWN["production"]
    assert report["refusals"] == REFUSALS
    assert report["coverage"]["changes"] == [change(RENUMBERED, (3, 3), (0, 0), renamed=3)]
    assert report["coverage"]["rows"] == 3
    assert report["coverage"]["since"] == "2026-11-29T10:00:01+00:00"
    # the rows' cells now sit under their new ids
    cells = stage.state_snapshot()["known"]["production"]
    assert cells == {"n-003": [1, 1, 1.0, 1.0, 0.5], "n-001": [1, 1, 0.5, 1.0, 1.0],
                     "n-004": [1, 0, 0.0, 0.0, 0.0]}  # fmt: skip
    # a candidate's result in flight for e-1 is scored on q-1's row under its new id
    stage.observe_candidate(candidate(1, ["p-2"]))
    cand = stage.report()["known"]["cand"]
    assert (cand["n_known"], cand["n_scored"], cand["recall"], cand["mrr"]) == (2, 2, 1.0, 1.0)
    assert cand["paired"]["n_scored"] == 2
    assert cand["paired"]["production"]["mrr"] == 0.5  # production's e-1 twice: RR 1/2
    # a new event on q-2's question counts on n-001, on top of the carried figures:
    # recall 1/2, hit 1, RR 1 (p-5 at 1, p-6 absent); answered, answerable
    batch = run(stage, [event(6, LIBRARY, ["p-5"], role="parent", refused=False)])
    assert batch.annotations[0]["known"]["gold_id"] == "n-001"
    assert stage.report()["known"]["production"] == {
        "n_known": 4, "n_scored": 3, "recall": 2 / 3, "hit_rate": 1.0, "mrr": 2.5 / 3
    }  # fmt: skip
    assert stage.report()["refusals"]["known_answerable"] == 3


def test_an_edited_row_in_a_renumbering_is_the_only_one_dropped() -> None:
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(EDITED)
    report = stage.report()
    # q-2's row changed: its event (recall 1/2, hit 1, RR 1; refused) dropped; q-1, q-3 kept
    assert report["known"]["production"] == {
        "n_known": 2, "n_scored": 1, "recall": 1.0, "hit_rate": 1.0, "mrr": 0.5
    }  # fmt: skip
    assert report["refusals"] == {"known_answerable": 1, "refused_answerable": 0,
                                  "known_unanswerable": 1, "answered_unanswerable": 1}  # fmt: skip
    assert report["coverage"]["changes"] == [change(EDITED, (2, 2), (1, 1), renamed=2)]


def test_two_rows_swapping_ids_swap_their_measurements() -> None:
    swapped = GoldSet(tuple(dataclasses.replace(q, id={"q-1": "q-2", "q-2": "q-1"}.get(q.id, q.id))
                            for q in GOLD))  # fmt: skip
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.index = KnownQuestionIndex(swapped)
    cells = stage.state_snapshot()["known"]["production"]
    assert cells == {"q-2": [1, 1, 1.0, 1.0, 0.5], "q-1": [1, 1, 0.5, 1.0, 1.0],
                     "q-3": [1, 0, 0.0, 0.0, 0.0]}  # fmt: skip
    assert stage.report()["coverage"]["changes"] == [change(swapped, (3, 3), (0, 0), renamed=2)]


def test_rows_alike_but_for_their_ids_are_not_told_apart() -> None:
    """Two rows of one content cannot be matched to their new ids: neither moves."""
    twin = dataclasses.replace(GOLD.by_id["q-3"], id="q-5")
    doubled = GoldSet((*GOLD, twin))
    renumbered = GoldSet(tuple(dataclasses.replace(q, id=f"n-{i}") for i, q in enumerate(doubled)))
    stage = stage_on(doubled)
    run(stage, EVENTS)  # e-3 matches one of q-3 and q-5
    stage.index = KnownQuestionIndex(renumbered)
    [record] = stage.report()["coverage"]["changes"]
    assert (record["kept_rows"], record["dropped_rows"], record["dropped_events"]) == (2, 1, 1)


def test_a_restore_treats_rows_alike_but_for_their_ids_as_the_reload_does() -> None:
    """Review of session 51, NIT 3: two old rows of one content (q-3 and its twin q-5, one
    of them measured) do not move at a reload, even when the new set holds that content once;
    the state lists the unmeasured twin's version and content too, so a restore decides the
    same (before, it listed only the measured row and moved it)."""
    twin = dataclasses.replace(GOLD.by_id["q-3"], id="q-5")
    doubled = GoldSet((*GOLD, twin))
    renumbered = GoldSet(tuple(dataclasses.replace(q, id=f"n-{i}") for i, q in enumerate(doubled)))
    once = GoldSet(tuple(q for q in renumbered if q.id != "n-4"))  # the content once
    first = stage_on(doubled)
    run(first, EVENTS)  # e-3 matches one of q-3 and q-5
    saved = json.loads(json.dumps(first.state_snapshot()))
    assert saved["row_contents"].keys() == saved["rows"].keys() == {"q-1", "q-2", "q-3", "q-5"}
    for new in (renumbered, once):
        reloaded = stage_on(doubled)
        run(reloaded, EVENTS)
        reloaded.index = KnownQuestionIndex(new)
        restored = stage_on(new)
        restored.restore(saved)
        reports = [reloaded.report(), restored.report()]
        records = [
            {k: r["coverage"]["changes"][-1][k] for k in ("kept_rows", "dropped_rows",
                                                        "dropped_events", "reason")}
            for r in reports
        ]  # fmt: skip
        assert records[0] == records[1] == {"kept_rows": 2, "dropped_rows": 1,
                                            "dropped_events": 1, "reason": "gold set "
                                            "changed; 2 measured rows renumbered (same "
                                            "content, new id), kept"}  # fmt: skip
        assert reports[0]["known"] == reports[1]["known"]
        assert reports[0]["refusals"] == reports[1]["refusals"] == {
            "known_answerable": 2, "refused_answerable": 1, "known_unanswerable": 0,
            "answered_unanswerable": 0}  # fmt: skip


def test_a_state_resumed_on_the_renumbered_gold_set_keeps_its_figures() -> None:
    first = stage_on(GOLD)
    run(first, EVENTS)
    saved = json.loads(json.dumps(first.state_snapshot()))
    assert saved["row_contents"].keys() == {"q-1", "q-2", "q-3"}
    resumed = stage_on(RENUMBERED)
    resumed.restore(saved)
    report = resumed.report()
    assert report["known"] == KNOWN
    assert report["refusals"] == REFUSALS
    assert report["coverage"]["changes"] == [change(RENUMBERED, (3, 3), (0, 0), renamed=3)]
    edited = stage_on(EDITED)
    edited.restore(saved)
    assert edited.report()["coverage"]["changes"] == [change(EDITED, (2, 2), (1, 1), renamed=2)]
    # the renamed state resumes as it was on the same file
    again = stage_on(RENUMBERED)
    again.restore(json.loads(json.dumps(resumed.state_snapshot())))
    assert again.report() == report


def test_a_state_written_before_contents_were_kept_matches_rows_by_id_only() -> None:
    """A state from before session 51 has no ``row_contents``: its rows' versions name their
    ids, so a renumbering drops them as before (said in the change record)."""
    first = stage_on(GOLD)
    run(first, EVENTS)
    saved = json.loads(json.dumps(first.state_snapshot()))
    del saved["row_contents"]
    resumed = stage_on(RENUMBERED)
    resumed.restore(saved)
    assert resumed.report()["known"] == {}
    assert resumed.report()["coverage"]["changes"] == [change(RENUMBERED, (0, 0), (3, 3), 0)]


def test_a_renumbering_during_a_batch_counts_its_matches_under_the_new_ids() -> None:
    class Racing(KnownQuestionIndex):
        def lookup_many(self, questions: Any) -> Any:
            matches = super().lookup_many(questions)
            holder["stage"].index = KnownQuestionIndex(RENUMBERED)
            return matches

    holder: dict[str, LiveQualityStage] = {}
    stage = holder["stage"] = LiveQualityStage(Racing(GOLD), AccessPolicy.from_corpus(CORPUS))
    batch = run(stage, EVENTS[:2])  # e-1 on q-1, e-2 on q-2: matched on the old ids
    assert [notes["known"]["gold_id"] for notes in batch.annotations] == ["n-003", "n-001"]
    assert stage.report()["known"]["production"] == {
        "n_known": 2, "n_scored": 2, "recall": 0.75, "hit_rate": 1.0, "mrr": 0.75
    }  # fmt: skip


def test_the_paired_tests_by_question_do_not_move_with_a_renumbering() -> None:
    """The paired tests' seeded resampling runs over the questions in content order
    (:func:`~service.data.goldset.row_content`), not id order, so a renumbered, shuffled gold
    set gives the same bootstrap interval, randomization p-value and means, to the last digit
    (review of session 51, B1: MRR p 0.1866 -> 0.1912 at a reload). 16 questions of which 15
    differ: 2^15 > 10,000 resamples, so the p-value is a Monte-Carlo estimate and, like the
    interval, depends on the order the questions are drawn in."""
    questions = [GoldQuestion(f"q-{i:02d}", f"question number {i}", (f"p-{i}",))
                 for i in range(16)]  # fmt: skip
    # [n, production's Σrecall, Σhit, Σrr, the candidate's Σrecall, Σhit, Σrr]
    cells = {q.id: [1 + i % 3, 0.0, float(i % 2), 0.1 * (i % 5), (i % 4) / 3, 1.0, 1 / (1 + i)]
             for i, q in enumerate(questions)}  # fmt: skip
    contents = {q.id: row_content(q) for q in questions}
    renamed = {q.id: f"n-{(7 * i) % 16:03d}" for i, q in enumerate(questions)}
    shuffled = [questions[(5 * i + 3) % 16].id for i in range(16)]
    new_cells = {renamed[g]: list(cells[g]) for g in shuffled}
    new_contents = {renamed[g]: contents[g] for g in reversed(shuffled)}
    assert row_content(dataclasses.replace(questions[3], id=renamed["q-03"])) == contents["q-03"]

    before = paired_by_question(cells, "cand", 10, "production", contents)
    after = paired_by_question(new_cells, "cand", 10, "production", new_contents)
    assert before is not None and after == before
    mrr = before["comparisons"][2]
    assert (mrr["metric"], mrr["n"], mrr["wins"] + mrr["losses"]) == ("MRR@10", 16, 16)
    # the same through the stage's path (the cells and contents taken with the report)
    reports = []
    for paired in (PairedCells({"cand": cells}, contents),
                   PairedCells({"cand": new_cells}, new_contents)):  # fmt: skip
        report: dict[str, Any] = {"known": {"cand": {"paired": {}}}}
        add_paired_tests(report, paired, 10, "production")
        reports.append(report)
    assert reports[0] == reports[1]
    assert reports[0]["known"]["cand"]["paired"]["by_question"] == before

    # in id order (as before the fix) the renumbering moves the resampled figures
    def by_id(table: dict[str, list[Any]], j: int) -> dict[str, Any]:
        metric = "MRR@10"
        a = {g: {metric: c[1 + j] / c[0]} for g, c in table.items()}
        b = {g: {metric: c[4 + j] / c[0]} for g, c in table.items()}
        found = paired_comparison("production", a, "cand", b, metric).to_json()
        return {k: v for k, v in found.items() if k in ("p_value", "ci_low", "ci_high")}

    assert by_id(cells, 2) != by_id(new_cells, 2)


def test_the_stage_takes_each_paired_questions_content_with_its_cells() -> None:
    """``report_and_paired`` hands :func:`add_paired_tests` the content of every gold row in
    the paired cells, under the ids the cells use (after a renumbering: the new ids)."""
    stage = stage_on(GOLD)
    run(stage, EVENTS)
    stage.observe_candidate(candidate(1, ["p-2"]))  # e-1 (q-1)
    stage.index = KnownQuestionIndex(RENUMBERED)
    _, paired = stage.report_and_paired()
    assert paired.cells == {"cand": {"n-003": [1, 1.0, 1.0, 0.5, 1.0, 1.0, 1.0]}}
    assert paired.contents == {"n-003": row_content(RENUMBERED.by_id["n-003"])}
    assert paired.contents["n-003"] == row_content(GOLD.by_id["q-1"])
