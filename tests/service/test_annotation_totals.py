"""The analytics totals behind ``/v1/refusals`` and the reports: counted by hand from planted
annotations, carried across a restart (state round trip), and the same through a real
``goldwatch serve`` stopped and started again on its state."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.demo import demo_path
from service.events import QueryLogEvent
from service.pipeline import Batch
from service.pipeline.totals import FLAGS, AnnotationTotals, count_annotations
from service.refusals.detector import refusal_rate_method
from tests.acceptance.service_process import ServiceProcess

AT = datetime(2026, 11, 29, tzinfo=UTC)

NOTES = [
    {"refused": True, "refused_by": "flag", "out_of_scope": False, "over_refusal": True,
     "under_refusal": False, "pii": {"email": 2}},
    {"refused": False, "refused_by": "patterns", "out_of_scope": True, "over_refusal": False,
     "under_refusal": True},
    {"refused": True, "refused_by": "flag", "out_of_scope": True, "over_refusal": False,
     "under_refusal": False, "pii": {"phone": 1, "email": 1}, "off_corpus": True},
    {"refused": None, "out_of_scope": None},  # no answer, no verdict
    {},
]  # fmt: skip


def test_counts_follow_the_rules_worked_by_hand() -> None:
    flags, pii = count_annotations(NOTES)
    # answers: 3 judged (True, False, True); refusals: 2; scored: 3 (False, True, True);
    # out of scope: 2; over: 1; under: 1; pii: email 2 + 1, phone 1; of the 3 answers 2 were
    # decided by answer.refused (rows 1, 3), 1 by the patterns (row 2); off-corpus: row 3;
    # refusals with a scope verdict: rows 1, 3
    assert flags == {"answers": 3, "refusals": 2, "scope_scored": 3, "out_of_scope": 2,
                     "over_refusals": 1, "under_refusals": 1, "answers_by_flag": 2,
                     "answers_by_patterns": 1, "off_corpus": 1, "refusals_by_flag": 2,
                     "refusals_by_patterns": 0, "scored_refusals": 2, "unstable_out": 0,
                     "unstable_in": 0}  # fmt: skip
    assert pii == {"email": 3, "phone": 1}
    assert tuple(flags) == FLAGS


def test_scored_refusals_count_only_refusals_with_a_scope_verdict() -> None:
    """The over-refusal bound's base (``⌊upper · scored_refusals⌋``): a refusal without a
    scope verdict (row 1) cannot be an over-refusal, and an answer with one (row 3) is no
    refusal: 2 of these 4 rows (rows 2, 4)."""
    notes = [
        {"refused": True, "out_of_scope": None},
        {"refused": True, "out_of_scope": True},
        {"refused": False, "out_of_scope": False},
        {"refused": True, "out_of_scope": False},
    ]
    flags, _ = count_annotations(notes)
    assert (flags["refusals"], flags["scope_scored"], flags["scored_refusals"]) == (3, 3, 2)


def test_the_refused_count_is_split_by_who_decided_it() -> None:
    """Trial user6: 839 refused, with only the answers split by flag and patterns; the
    refused count could not be reconciled. Of these 6 answers, the flag decided 3 (2
    refused: rows 1, 2), the patterns 3 (1 refused: row 4): refused 3 = 2 + 1."""
    notes = [{"refused": True, "refused_by": "flag"}, {"refused": True, "refused_by": "flag"},
             {"refused": False, "refused_by": "flag"}, {"refused": True, "refused_by": "patterns"},
             {"refused": False, "refused_by": "patterns"},
             {"refused": False, "refused_by": "patterns"}]  # fmt: skip
    flags, _ = count_annotations(notes)
    assert (flags["refusals"], flags["refusals_by_flag"], flags["refusals_by_patterns"]) == (
        3,
        2,
        1,
    )
    assert refusal_rate_method(3, 3, 6, (2, 1), 3).startswith(
        "answer.refused decided 3 answers (2 refused), phrase patterns 3 (1 refused) (phrase "
    )
    # totals kept before the refused split: 5 refusals of which the split knows 3
    assert refusal_rate_method(3, 3, 6, (2, 1), 5).endswith(
        "; 2 refusals counted before their split was kept"
    )


def test_totals_survive_a_state_round_trip_and_keep_adding() -> None:
    events = [QueryLogEvent(event_id=f"e-{i}", timestamp=AT, question="q") for i in range(5)]
    batch = Batch.of(events, "file")
    batch.annotations[:] = [dict(n) for n in NOTES]
    stage = AnnotationTotals()
    stage.process(batch)
    saved = json.loads(json.dumps(stage.state_snapshot()))
    restarted = AnnotationTotals()
    restarted.restore(saved)
    assert restarted.flags == stage.flags and restarted.pii == stage.pii
    restarted.process(batch)
    assert restarted.flags["refusals"] == 4 and restarted.pii["email"] == 6
    fresh = AnnotationTotals()
    fresh.restore(None)
    assert set(fresh.flags.values()) == {0}


def test_totals_kept_before_scored_refusals_bound_them_by_every_refusal() -> None:
    """A review: a state saved before ``scored_refusals`` restored it as 0 while
    ``over_refusals`` kept its lifetime count, so the report's bound explained 0 of 182
    over-refusals ("182 beyond it"). Every refusal bounds the scored ones from above."""
    old = {"flags": {"refusals": 298, "scope_scored": 1803, "out_of_scope": 308,
                     "over_refusals": 182}}  # fmt: skip
    restored = AnnotationTotals()
    restored.restore(old)
    assert restored.flags["scored_refusals"] == 298
    kept = AnnotationTotals()
    kept.restore({"flags": {"refusals": 298, "scored_refusals": 250}})
    assert kept.flags["scored_refusals"] == 250  # stored: as it was


@pytest.mark.slow
def test_refusals_endpoint_keeps_its_totals_across_a_restart(tmp_path: Path) -> None:
    config = {
        "gold_set": str(demo_path("gold.jsonl")),
        "corpus": str(demo_path("corpus.jsonl")),
        "source": {"kind": "file", "path": str(demo_path("querylog.jsonl")),
                   "dlq_path": str(tmp_path / "dlq.jsonl")},
        "state": {"path": str(tmp_path / "state.sqlite")},
    }  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config)
    try:
        service.wait_until(lambda s: s["input_finished"], timeout_s=120, what="the demo log")
        before = service.get("/v1/refusals").json()
        assert before["refusals"]["answers"] > 0 and before["refusals"]["refused"] > 0
        assert before["out_of_scope"]["scored"] > 0
        service.terminate()
        service = service.restart()
        service.wait_until(lambda s: s["input_finished"], timeout_s=120, what="resumed")
        after = service.get("/v1/refusals").json()
        assert service.totals()["processed"] > 0  # persisted totals, as /v1/refusals now
        for part in ("refusals", "out_of_scope"):
            for key in ("answers", "refused", "scored", "out_of_scope", "over_refusals",
                        "under_refusals"):  # fmt: skip
                assert after[part].get(key) == before[part].get(key), (part, key)
        # the verdicts the off-corpus cutoff's range moves: checkpointed with their range
        # (session 39), the restart refits the same one and keeps counting
        assert after["out_of_scope"]["unstable"] == before["out_of_scope"]["unstable"]
    finally:
        service.kill()
