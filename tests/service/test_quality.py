"""LiveQualityStage: known questions scored live, refusals both ways, ACL violations and leaks.

Values are worked out by hand from a 3+1-question gold set and a 4-passage corpus; the last
tests run the demo query log and check the planted ACL leaks are found exactly.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from consumers.base import Origin, RawMessage
from consumers.decoding import decode_batch
from service.data.corpus import Corpus, load_corpus
from service.data.goldset import GoldSet, load_gold_set
from service.demo import demo_path
from service.demo.querylog import ACL_LEAK_EVENT_IDS, generate_with_meta
from service.events import FieldMapping, QueryLogEvent
from service.pipeline import Batch, Pipeline, Stage
from service.quality.acl import AccessPolicy
from service.quality.known import KnownQuestionIndex
from service.quality.stage import LiveQualityStage, coverage_note
from service.records import GoldQuestion, Passage
from service.refusals.stage import RefusalStage
from service.shadow.runner import ShadowResult

MCA = "What is the annual tuition fee for the MCA programme?"
LIBRARY = "When does the library close on Saturday?"
CUP = "Who won the 1990 World Cup?"
DA = "What is the new DA rate for staff?"

GOLD = GoldSet(
    (
        GoldQuestion("q-1", MCA, ("p-2",)),
        GoldQuestion("q-2", LIBRARY, ("p-5", "p-6"), kind="multi-passage"),
        GoldQuestion("q-3", CUP, (), kind="unanswerable"),
        GoldQuestion("q-4", DA, ("p-9",), kind="role-restricted", role="staff"),
    )
)
CORPUS = Corpus(
    (
        Passage("p-2", "MCA fee.", acl=("student", "parent", "staff")),
        Passage("p-5", "Library hours.", acl=("student", "parent", "staff")),
        Passage("p-6", "Saturday hours."),
        Passage("p-9", "Salary circular.", acl=("staff",)),
    )
)


def event(
    n: int,
    question: str,
    results: Sequence[str],
    *,
    role: str | None = "student",
    refused: bool | None = None,
    cited: Sequence[str] = (),
) -> QueryLogEvent:
    return QueryLogEvent.model_validate(
        {
            "event_id": f"e-{n}",
            "timestamp": f"2026-11-29T10:00:{n:02d}Z",
            "question": question,
            "user": {"role": role},
            "retrieval": {"results": [{"id": p, "rank": r} for r, p in enumerate(results, 1)]},
            "answer": {"text": "...", "refused": refused, "citations": list(cited)},
        }
    )


def candidate(n: int, ranking: Sequence[str], role: str | None = "student", **more: Any) -> Any:
    fields: dict[str, Any] = {
        "candidate": "cand", "event_id": f"e-{n}", "question": "q", "language": None,
        "topic": None, "channel": None, "production": (), "agreement": None,
        "latency_s": 0.1, "queue_s": 0.0, "attempts": 1, "error": None,
        "timestamp": datetime(2026, 11, 29, 10, 0, n % 60, tzinfo=UTC),
    }  # fmt: skip
    fields.update(more)
    return ShadowResult(role=role, ranking=tuple(ranking), **fields)


def build(**kwargs: Any) -> LiveQualityStage:
    return LiveQualityStage(KnownQuestionIndex(GOLD), AccessPolicy.from_corpus(CORPUS), **kwargs)


def run(stage: LiveQualityStage, events: Sequence[QueryLogEvent]) -> Batch:
    batch = Batch.of(events, source="test")
    for notes, e in zip(batch.annotations, events, strict=True):
        notes["refused"] = e.answer.refused if e.answer else None  # as RefusalStage would
    stage.process(batch)
    return batch


EVENTS = [
    # typo of q-1; production: staff-only p-9 at 1, gold p-2 at 2 → recall 1, hit 1, RR 1/2
    event(1, "What is the anual tuition fee for the MCA programme?", ["p-9", "p-2", "p-3"],
          refused=False, cited=["p-2"]),
    # q-2 exactly, parent; one of two gold passages at rank 1 → recall 1/2, RR 1; refused
    event(2, LIBRARY, ["p-5", "p-1"], role="parent", refused=True),
    # q-3 unanswerable, no role: answered → answered_unanswerable; no ACL check
    event(3, CUP, ["p-9"], role=None, refused=False),
    # unrelated; answer cites staff-only p-9 to a student → a violation and a leak
    event(4, "Is there a bus to the railway station?", ["p-9", "p-6"], cited=["p-9"]),
    # unrelated; a role no ACL names → label "other"
    event(5, "Is there a bus to the railway station?", ["p-9"], role="alumni"),
]  # fmt: skip


def test_is_a_pipeline_stage_named_quality() -> None:
    stage = build()
    assert isinstance(stage, Stage) and stage.name == "quality"
    Pipeline([RefusalStage(), stage])  # no name clash


def test_annotations_by_hand() -> None:
    batch = run(build(), EVENTS)
    known = [notes["known"] for notes in batch.annotations]
    assert [k and k["gold_id"] for k in known] == ["q-1", "q-2", "q-3", None, None]
    assert 0.9 <= known[0]["similarity"] < 1.0 and known[1]["similarity"] == 1.0
    # production's scores, by hand (EVENTS' comments); q-3 is unanswerable: not scored
    assert [k and k["scores"] for k in known] == [
        {"recall": 1.0, "hit": 1.0, "rr": 0.5}, {"recall": 0.5, "hit": 1.0, "rr": 1.0}, None,
        None, None]  # fmt: skip
    assert [n["acl_violations"] for n in batch.annotations] == [["p-9"], [], [], ["p-9"], ["p-9"]]
    assert [n["acl_leaks"] for n in batch.annotations] == [[], [], [], ["p-9"], []]


def test_known_scores_refusals_and_acl_counts_by_hand() -> None:
    stage = build()
    run(stage, EVENTS)
    report = stage.report()
    assert report["known"] == {
        "production": {"n_known": 3, "n_scored": 2, "recall": 0.75, "hit_rate": 1.0, "mrr": 0.75}
    }
    assert report["refusals"] == {
        "known_answerable": 2, "refused_answerable": 1,
        "known_unanswerable": 1, "answered_unanswerable": 1,
    }  # fmt: skip
    assert report["acl"]["violations"] == [
        {"retriever": "production", "role": "other", "events": 1, "passages": 1},
        {"retriever": "production", "role": "student", "events": 2, "passages": 2},
    ]
    assert report["acl"]["leaks"] == [
        {"retriever": "production", "role": "student", "events": 1, "passages": 1}
    ]
    assert [(r["event_id"], r["leaked"]) for r in report["review"]] == [
        ("e-4", ["p-9"]),
        ("e-5", []),
        ("e-1", []),
    ]  # leaks first, then the newest violations
    assert report["review"][0] == {
        "event_id": "e-4", "timestamp": "2026-11-29T10:00:04+00:00", "role": "student",
        "retriever": "production", "passage_ids": ["p-9"], "leaked": ["p-9"],
        "question": "Is there a bus to the railway station?",
    }  # fmt: skip
    json.dumps(report)


def test_role_restricted_gold_is_unanswerable_for_other_roles() -> None:
    stage = build()
    run(stage, [event(1, DA, ["p-9"], refused=False, cited=["p-9"]),  # student: a leak
                event(2, DA, ["p-9"], role="staff", refused=False),  # staff: scored, fine
                event(3, DA, ["p-2"], role="staff", refused=True)])  # fmt: skip
    report = stage.report()
    assert report["known"]["production"] == {
        "n_known": 3, "n_scored": 2, "recall": 0.5, "hit_rate": 0.5, "mrr": 0.5
    }  # fmt: skip
    assert report["refusals"] == {
        "known_answerable": 2, "refused_answerable": 1,
        "known_unanswerable": 1, "answered_unanswerable": 1,
    }  # fmt: skip
    assert [r["event_id"] for r in report["review"]] == ["e-1"]


def test_refused_none_counts_in_neither_direction_and_no_results_are_not_scored() -> None:
    stage = build()
    run(stage, [event(1, MCA, [], refused=None), event(2, CUP, [], refused=None)])
    report = stage.report()
    assert report["known"]["production"]["n_known"] == 2
    assert report["known"]["production"]["n_scored"] == 0
    assert report["known"]["production"]["recall"] is None
    assert report["refusals"]["refused_answerable"] == 0
    assert report["refusals"]["answered_unanswerable"] == 0


def test_pending_observations_shape_and_reset() -> None:
    stage = build()
    run(stage, EVENTS)
    assert stage.pending_observations() == {
        "known": {"production": 3},
        "known_recall": {"production": [1.0, 0.5]},
        "known_hit": {"production": [1.0, 1.0]},
        "known_rr": {"production": [0.5, 1.0]},
        "acl_violations": [
            {"retriever": "production", "role": "other", "events": 1, "passages": 1},
            {"retriever": "production", "role": "student", "events": 2, "passages": 2},
        ],
        "acl_leaks": [{"retriever": "production", "role": "student", "events": 1, "passages": 1}],
        "known_refused_answerable": 1,
        "known_answered_unanswerable": 1,
    }
    empty = stage.pending_observations()
    assert empty["known"] == {} and empty["acl_violations"] == [] and empty["known_recall"] == {}
    assert empty["known_refused_answerable"] == 0


def test_observe_candidate_scores_known_events_and_counts_violations() -> None:
    stage = build()
    run(stage, EVENTS)
    stage.pending_observations()
    stage.observe_candidate(candidate(1, ["p-2", "p-9"]))  # known q-1: recall 1, RR 1; p-9
    stage.observe_candidate(candidate(2, ["p-1", "p-6"], role="parent"))  # q-2: 1/2, RR 1/2
    stage.observe_candidate(candidate(4, ["p-9"]))  # not known: only the violation
    stage.observe_candidate(candidate(3, ["p-9"], role=None))  # known, unanswerable; no role
    stage.observe_candidate(candidate(1, [], error="timeout"))  # ignored
    stage.observe_candidate(candidate(99, ["p-2"]))  # never seen: nothing
    stage.observe_candidate(candidate(1, [], candidate="empty"))  # ran, found nothing: 0
    pending = stage.pending_observations()
    assert pending["known"] == {"cand": 3, "empty": 1}
    assert pending["known_recall"] == {"cand": [1.0, 0.5], "empty": [0.0]}
    assert pending["known_rr"] == {"cand": [1.0, 0.5], "empty": [0.0]}
    assert pending["acl_violations"] == [
        {"retriever": "cand", "role": "student", "events": 2, "passages": 2}
    ]
    assert pending["acl_leaks"] == []
    # paired: e-1 and e-2, the events both were scored on; production there: recall 1 and
    # 1/2, RR 1/2 and 1 (test above); cand: recall 1 and 1/2, RR 1 and 1/2
    same = {"recall": 0.75, "hit_rate": 1.0, "mrr": 0.75}
    cell = stage.report()["known"]["cand"]
    by_question = cell["paired"].pop("by_question")
    assert cell == {
        "n_known": 3, "n_scored": 2, "recall": 0.75, "hit_rate": 1.0, "mrr": 0.75,
        "paired": {"n_scored": 2, "production": same, "candidate": same},
    }  # fmt: skip
    # by distinct question (q-1, q-2): RR +1/2 on q-1, -1/2 on q-2: mean 0, and each sign
    # flip of the two reaches |sum| >= 0: p exactly 1
    assert (by_question["questions"], by_question["events"]) == (2, 2)
    mrr = by_question["comparisons"][2]
    assert (mrr["metric"], mrr["mean_diff"], mrr["wins"], mrr["losses"], mrr["p_value"]) == (
        "MRR@10", 0.0, 1, 1, 1.0)  # fmt: skip


def test_a_candidate_skipped_on_some_known_questions_is_compared_like_for_like() -> None:
    """Trial user 5: serve showed hybrid at 54 known / recall 0.824 next to production at
    157 / 0.817 with no note; hybrid had been skipped on 550 events for cpu_budget, so the two
    rows were over different questions. Here production is scored on e-1 (recall 1, RR 1/2)
    and e-2 (recall 1/2, RR 1), the candidate only on e-1 (recall 1, RR 1; e-2 skipped):
    its own row (MRR 1.0 of 1 known) would beat production's (0.75 of 3 known); on e-1 both,
    production's MRR is 0.5, and the note says why the counts differ."""
    stage = build()
    run(stage, EVENTS)
    stage.observe_candidate(candidate(1, ["p-2", "p-9"]))
    shadow = {"candidates": {"cand": {"skipped": {"cpu_budget": 4}, "errors": {},
                                      "in_flight": 0}}}  # fmt: skip
    cand = stage.report(shadow)["known"]["cand"]
    assert (cand["n_known"], cand["n_scored"], cand["mrr"]) == (1, 1, 1.0)
    assert cand["paired"].pop("by_question")["questions"] == 1
    assert cand["paired"] == {
        "n_scored": 1,
        "production": {"recall": 1.0, "hit_rate": 1.0, "mrr": 0.5},
        "candidate": {"recall": 1.0, "hit_rate": 1.0, "mrr": 1.0},
    }
    assert cand["coverage_note"] == (
        "scored on 1 known question, results for 1 of production's 3 (cpu_budget skipped 4 events)"
    )
    assert "coverage_note" not in stage.report()["known"]["cand"]  # without the shadow report
    # kept in the state; a gold-set change that alters q-1 drops its paired cell with it
    saved = json.loads(json.dumps(stage.state_snapshot()))
    fresh = build()
    fresh.restore(saved)
    assert fresh.report(shadow) == stage.report(shadow)
    changed = GoldSet((GoldQuestion("q-1", MCA, ("p-2", "p-5")), *list(GOLD)[1:]))
    fresh.index = KnownQuestionIndex(changed)
    assert "cand" not in fresh.report()["known"]


def test_coverage_note_names_every_reason_or_none() -> None:
    assert coverage_note(3, 3, 3, {"skipped": {"cpu_budget": 9}}) is None
    assert coverage_note(2, 2, 5, {"skipped": {"not_sampled": 7, "queue_full": 1},
                                   "errors": {"timeout": 2}, "in_flight": 1}) == (
        "scored on 2 known questions, results for 2 of production's 5 (not_sampled skipped 7 "
        "events, queue_full skipped 1 event, 2 timeout errors, 1 result in flight)")  # fmt: skip
    assert coverage_note(0, 0, 1, {"skipped": {}, "errors": {}}) == (
        "scored on 0 known questions, results for 0 of production's 1 (no skip or error recorded)"
    )
    # trial 11: results for 376 known-question events, 58 of them unanswerable for the
    # asker's role, so 376 - 58 = 318 scored: the note names 318, not 376
    assert coverage_note(376, 318, 1639, {"skipped": {"cpu_budget": 2}}) == (
        "scored on 318 known questions, results for 376 of production's 1639 (cpu_budget "
        "skipped 2 events)"
    )


def test_recent_matches_are_bounded_oldest_evicted() -> None:
    stage = build(max_events=2)
    run(stage, EVENTS[:3])  # e-1, e-2, e-3 known; e-1 evicted
    stage.observe_candidate(candidate(1, ["p-2"]))
    stage.observe_candidate(candidate(2, ["p-5"], role="parent"))
    assert stage.pending_observations()["known"] == {"production": 3, "cand": 1}


def test_review_is_bounded_and_role_labels_are_bounded() -> None:
    stage = build(max_review=2, max_roles=1)  # roles by name: parent only; others → other
    run(stage, [event(i, "bus?", ["p-9"], role=r) for i, r in enumerate(
        ["student", "parent", "staff", None, "student"], 1)])  # fmt: skip
    report = stage.report()
    assert [r["event_id"] for r in report["review"]] == ["e-5", "e-2"]
    assert report["acl"]["violations"] == [
        {"retriever": "production", "role": "other", "events": 2, "passages": 2},
        {"retriever": "production", "role": "parent", "events": 1, "passages": 1},
    ]
    assert [stage.role_label(r) for r in ("parent", "staff", None)] == [
        "parent", "other", "unknown"
    ]  # fmt: skip
    assert build(max_review=0).report()["review"] == []


def test_without_index_or_policy() -> None:
    stage = LiveQualityStage(None, None)
    batch = run(stage, EVENTS)
    assert all(n["known"] is None and n["acl_violations"] == [] for n in batch.annotations)
    assert stage.report()["known"] == {} and stage.report()["acl"]["violations"] == []
    stage.observe_candidate(candidate(1, ["p-9"]))
    assert stage.pending_observations()["known"] == {}


@pytest.mark.parametrize(
    "kwargs", [{"k": 0}, {"max_review": -1}, {"max_roles": 0}, {"max_events": 0}]
)
def test_bad_bounds(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ValueError):
        build(**kwargs)


def test_snapshot_restore_round_trip_through_json() -> None:
    stage = build()
    run(stage, EVENTS)
    stage.observe_candidate(candidate(1, ["p-2", "p-9"]))
    saved = json.loads(json.dumps(stage.state_snapshot()))
    assert saved["version"] == 2
    fresh = build()
    fresh.restore(saved)
    assert fresh.report() == stage.report()
    assert fresh.pending_observations()["known"] == {}  # increments are not state
    other_k = build(k=5)
    other_k.restore(saved)  # known means at another k would mix: dropped, ACL kept
    assert other_k.report()["known"] == {}
    [dropped] = other_k.report()["coverage"]["changes"]
    assert (dropped["reason"], dropped["dropped_rows"], dropped["dropped_events"]) == (
        "k changed from 10 to 5", 3, 3)  # fmt: skip
    assert other_k.report()["acl"] == stage.report()["acl"]
    for junk in (None, {}, {"version": 99}, "x"):
        untouched = build()
        untouched.restore(junk)
        assert untouched.report() == build().report()


# ---- the demo data -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def demo() -> tuple[LiveQualityStage, list[Batch]]:
    index = KnownQuestionIndex(load_gold_set(demo_path("gold.jsonl")))
    policy = AccessPolicy.from_corpus(load_corpus(demo_path("corpus.jsonl")))
    stage = LiveQualityStage(index, policy, production="prod-bm25")
    pipeline = Pipeline([RefusalStage(), stage])
    lines = demo_path("querylog.jsonl").read_bytes().splitlines()
    raw = [RawMessage(line, Origin(file="querylog.jsonl", line=i)) for i, line in enumerate(lines)]
    decoded, dead = decode_batch(raw, FieldMapping(), 1_048_576)
    assert not dead
    events = [event for _, event in decoded]
    batches = [pipeline.process(events[i : i + 500], source="file") for i in range(0, 3000, 500)]
    return stage, batches


def test_demo_finds_exactly_the_planted_acl_leaks(demo: Any) -> None:
    stage, batches = demo
    leaked = [
        e.event_id
        for b in batches
        for e, n in zip(b.events, b.annotations, strict=True)
        if n["acl_leaks"]
    ]
    assert leaked == list(ACL_LEAK_EVENT_IDS)
    report = stage.report()
    assert sum(row["events"] for row in report["acl"]["leaks"]) == 20
    assert {row["role"] for row in report["acl"]["leaks"]} <= {"student", "parent"}
    assert report["review"][0]["event_id"] == ACL_LEAK_EVENT_IDS[-1]  # newest leak first
    assert len(report["review"]) == 50


def test_demo_retrieval_violations_match_a_direct_count(demo: Any) -> None:
    stage, batches = demo
    staff_only = {p.id for p in load_corpus(demo_path("corpus.jsonl")) if p.acl == ("staff",)}
    expected = sum(
        1 for b in batches for e in b.events
        if e.user.role != "staff" and staff_only & {r.id for r in e.retrieval.results}
    )  # fmt: skip
    flagged = sum(1 for b in batches for n in b.annotations if n["acl_violations"])
    assert flagged == expected > 0
    rows = stage.report()["acl"]["violations"]
    assert sum(row["events"] for row in rows) == expected
    assert {row["role"] for row in rows} == {"student", "parent"}
    # restricted means kept from some role: the 7 staff-only passages (salary circular 4,
    # invigilation note 3), not the 58 that list their roles (it said 58)
    acl = stage.report()["acl"]
    assert (acl["restricted_passages"], acl["passages_with_acl"]) == (7, 58)


def test_demo_known_questions_agree_with_the_generators_truth(demo: Any) -> None:
    stage, batches = demo
    gold = load_gold_set(demo_path("gold.jsonl"))
    _, meta = generate_with_meta()
    topic_of = {m.event_id: m.topic for m in meta}
    pairs = [
        (e.event_id, n["known"])
        for b in batches
        for e, n in zip(b.events, b.annotations, strict=True)
    ]
    known = [(event_id, match) for event_id, match in pairs if match]
    for event_id, match in known:
        assert gold.by_id[match["gold_id"]].topic == topic_of[event_id]
        assert 0.9 <= match["similarity"] <= 1.0
    assert stage.report().get("known", {}).get("prod-bm25", {}).get("n_known", 0) == len(known)
    # The demo log's only near-duplicates of a gold question above 0.9 are "what time does
    # the college bus leave in the evening" (five events, three spellings) for q-045 "...
    # leave the campus in the evening?": the gold question with "campus" left out and
    # nothing added, so known (session 31; session 30's symmetric rule turned them down)
    bus = "what time does the college bus leave in the evening"
    asked = [e.event_id for b in batches for e in b.events
             if " ".join(re.findall(r"\w+", e.question.lower())) == bus]  # fmt: skip
    assert len(asked) == 5
    assert [event_id for event_id, _ in known] == asked
    assert {match["gold_id"] for _, match in known} == {"q-045"}
    assert stage.report()["near_matches_rejected"]["events"] == 0


def test_demo_looser_threshold_still_matches_within_the_true_topic() -> None:
    gold = load_gold_set(demo_path("gold.jsonl"))
    events, meta = generate_with_meta()
    matches = KnownQuestionIndex(gold, threshold=0.7).match_many([e["question"] for e in events])
    pairs = [(m, truth.topic) for m, truth in zip(matches, meta, strict=True) if m]
    assert all(gold.by_id[m.gold_id].topic == topic for m, topic in pairs)
    # 40 near-duplicates at 0.7 (5 at the default 0.9). By hand, 22 are turned down: 8 by
    # numbers (a number the gold row lacks: "to third year" for "... to next year", 7; the
    # bus question "in 2026" for q-045, 1), 14 by words (a word the gold row lacks: "tech
    # fest" for "annual fest", 2; "starting basic pay" for "basic pay ... at SIT", 4, and its
    # Hinglish wording, 1; "arrears be credited" for "... be paid", 2; "tihrd year" for "next
    # year", 1; "library kitne baje tak khuli hai" for q-042 "library saturday ko kitne baje
    # tak khuli rehti hai", 4: "saturday" and "rehti" are 2 of its 5 content words, more than
    # the third a re-asking may leave out, and Saturday's hours are not the weekdays'). The
    # other 18 leave a detail of the gold row out and add nothing: the bus without "the
    # campus" (q-045, 1 of 6 content words, 9), "end semester exams start" without "odd" and
    # "2026" (q-027, 1 of 5, 9). The two Hinglish exam rows the fifty-first session added
    # (q-060 "end sem exam kab se start ho rahe hai odd sem ke", q-061 "hall ticket ERP pe kab
    # se download hoga") add 12: "odd sem ke exam kab se start hai" matches q-060 (2: it
    # leaves out only "end"), "end sem exam kab se hai" is turned down by words (2: "start"
    # and "odd" are 2 of its 5 content words), and the English "when can we download the hall
    # ticket" and its spellings for q-061 by words (8: a different wording in another
    # language, "ERP" left out).
    found = KnownQuestionIndex(gold, threshold=0.7).lookup_many([e["question"] for e in events])
    reasons = Counter(f.rejected.reason for f in found if f.rejected is not None)
    assert Counter(m.gold_id for m, _ in pairs) == {"q-045": 9, "q-027": 9, "q-060": 2}
    assert reasons == {"words": 24, "numbers": 8}
