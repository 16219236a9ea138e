"""A decided suggestion's record is never written over, whoever decided it and whenever:
the repositories refuse it in the publish's own transaction (a hold is no decision), the
stage then stops holding the suggestion and gives its record to no sink after the
repository (the Kafka topic); a failed read of the decisions loses nothing; an event is
counted once as known whichever of its pick and its shadow verdict comes first."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.harvest.store import CandidateRepository, MemoryCandidates, StateStoreCandidates
from service.harvest.text import candidate_id, comparison_form
from service.records import GoldQuestion
from service.shadow.agreement import compare
from service.shadow.runner import ShadowResult
from service.state import StateError, StateStore
from tests.service.harvest.helpers import T0, batch, event

REFUSED = {"refused": True, "topic": "fees", "language": "en"}
REJECT = {"status": "rejected", "reason": "no", "decided_at": "2026-12-02T12:00:00Z"}
LATE = "canteen menu today"
SID = candidate_id(comparison_form(LATE))


def _config(interval_s: float = 0.0) -> HarvestConfig:
    return HarvestConfig(max_suggestions=10, flush_interval_s=interval_s)


def _record(count: int) -> dict[str, Any]:
    return {"id": SID, "normalised": comparison_form(LATE), "count": count}


class _Recorder:
    """A sink after the repository (as the Kafka sink in serve): every record it was given."""

    def __init__(self) -> None:
        self.records: list[Mapping[str, Any]] = []

    def publish(self, records: Sequence[Mapping[str, Any]]) -> None:
        self.records.extend(records)


@pytest.fixture(params=["memory", "state-store"])
def repo(request: pytest.FixtureRequest) -> CandidateRepository:
    if request.param == "memory":
        return MemoryCandidates()
    return StateStoreCandidates(StateStore.in_memory())


def test_a_repository_refuses_to_write_over_a_decided_record_not_over_a_held_one(
    repo: CandidateRepository,
) -> None:
    """count 1 written; held (accept under way): count 2 written (a hold is no decision,
    and refusing it would lose counts if the accept fails); decided: count 3 refused (its
    id returned), the record stays count 2."""
    assert list(repo.publish([_record(1)])) == []
    repo.hold(SID, _record(1), "2026-12-02T12:00:00Z")
    assert list(repo.publish([_record(2)])) == []
    repo.decide(SID, dict(REJECT), _record(1))  # type: ignore[arg-type]
    other = {"id": "c-00000000000000ff", "normalised": "other", "count": 7}
    assert list(repo.publish([_record(3), other])) == [SID]
    assert repo.get(SID) == _record(2)
    assert repo.get(other["id"]) == other  # the rest of the publish is written


def test_a_suggestion_decided_elsewhere_goes_to_no_sink_after_the_repository() -> None:
    """Another process decides LATE in the state store (this stage is never told). The next
    ask changes it: the flush's repository write is refused, so the stage stops holding it,
    the Kafka-like sink after the repository never gets count 2, and the third ask counts
    as known via decided (1), no new suggestion."""
    repo, kafka = StateStoreCandidates(StateStore.in_memory()), _Recorder()
    stage = HarvestStage(_config(), sinks=[repo, kafka])
    stage.process(batch([event("l1", LATE, minute=1)], [REFUSED]))
    decided_on = repo.get(SID)
    assert decided_on is not None and decided_on["count"] == 1
    StateStoreCandidates(repo.store).decide(SID, dict(REJECT), decided_on)  # type: ignore[arg-type]
    stage.pending_observations()
    stage.process(batch([event("l2", LATE, minute=2)], [REFUSED]))
    assert SID not in stage.suggestions
    assert [(r["id"], r["count"]) for r in kafka.records] == [(SID, 1)]
    stage.process(batch([event("l3", LATE, minute=3)], [REFUSED]))
    seen = stage.pending_observations()
    assert seen["known"] == {"decided": 1} and seen["new_suggestions"] == 0
    assert SID not in stage.suggestions
    assert repo.get(SID) == decided_on


def test_a_snapshot_whose_record_write_is_refused_leaves_the_decided_suggestion_out() -> None:
    """Flush interval 60 s on a still clock: LATE's second ask waits (stale). Decided
    elsewhere, then the snapshot writes the stale records: refused, so the snapshot no
    longer lists LATE (remembered among the decided instead) and a restart from it holds
    exactly what the stage holds."""
    repo = StateStoreCandidates(StateStore.in_memory())
    stage = HarvestStage(_config(60.0), sinks=[repo], clock=lambda: 0.0)
    stage.process(batch([event("o1", "library sunday hours")], [REFUSED]))
    stage.process(batch([event("l1", LATE, minute=1)], [REFUSED]))
    stage.process(batch([event("l2", LATE, minute=2)], [REFUSED]))
    decided_on = repo.get(SID)
    assert decided_on is None  # the first flush took only the first batch
    stage.flush(force=True)
    decided_on = repo.get(SID)
    assert decided_on is not None and decided_on["count"] == 2
    stage.process(batch([event("l3", LATE, minute=3)], [REFUSED]))  # stale: count 3
    repo.decide(SID, dict(REJECT), decided_on)  # type: ignore[arg-type]
    snapshot = stage.state_snapshot()
    assert SID not in snapshot["ids"] and snapshot["decided_stored"]
    assert [SID, comparison_form(LATE)] in repo.remembered_decided()
    assert repo.get(SID) == decided_on
    restarted = HarvestStage(_config(60.0), sinks=[repo], clock=lambda: 0.0)
    restarted.restore(snapshot)
    assert restarted.records() == stage.records() and len(stage.suggestions) == 1


class _DecisionsUnreadable(MemoryCandidates):
    """A repository whose decisions cannot be read (``decided_of`` raises)."""

    def decided_of(self, candidate_ids: Sequence[str]) -> set[str]:
        raise StateError("cannot read state file x: disk I/O error")


def test_a_failed_read_of_the_decisions_is_counted_and_the_decided_record_still_kept() -> None:
    """A restarted stage (never told) cannot read the decisions when LATE is asked again: it
    counts a sink failure, starts the suggestion (new: 1), and the flush's refused write
    then drops it; the record decided on (count 1) stays."""
    repo = _DecisionsUnreadable()
    repo.publish([_record(1)])
    repo.decide(SID, dict(REJECT), _record(1))  # type: ignore[arg-type]
    stage = HarvestStage(_config(), sinks=[repo])
    stage.process(batch([event("l2", LATE, minute=2)], [REFUSED]))
    seen = stage.pending_observations()
    assert seen["sink_failures"] == {"_DecisionsUnreadable": 1} and seen["new_suggestions"] == 1
    assert SID not in stage.suggestions
    assert repo.get(SID) == _record(1)


def _verdict(event_id: str, question: str) -> ShadowResult:
    production, ranking = ("p-1", "p-2"), ("p-9", "p-8")  # RBO 0 < max_rbo 0.5: disagrees
    return ShadowResult(
        candidate="cand", event_id=event_id, timestamp=T0, question=question, language="en",
        topic="fees", channel="web", role="student", production=production, ranking=ranking,
        agreement=compare(production, ranking, k=2), latency_s=0.01, queue_s=0.0, attempts=1,
        error=None,
    )  # fmt: skip


def test_an_event_near_a_gold_question_counts_once_as_known_with_its_shadow_verdict() -> None:
    """One event asks the gold question (no ``known`` annotation: the stage's own gold
    look-up), then its shadow verdict disagrees: ``known{via="gold_set"}`` counts events: 1."""
    gold = [GoldQuestion("q-1", "When are the hostel fees due?", ("p-1",))]
    stage = HarvestStage(_config(), known_questions=gold)
    stage.process(batch([event("g1", "When are the hostel fees due?")], [REFUSED]))
    stage.observe_shadow(_verdict("g1", "When are the hostel fees due?"))
    assert stage.suggestions == {}
    assert stage.pending_observations()["known"] == {"gold_set": 1}


def test_a_verdict_before_its_event_counts_the_decided_question_once() -> None:
    """A replay's synchronous shadow stage runs before the harvest stage: the verdict of an
    event asking a decided question comes first, then the event: ``known{via="decided"}``
    is 1, and a different event asking it again is counted (2)."""
    stage = HarvestStage(_config())
    stage.decided("c-00000000000000aa", comparison_form(LATE))
    stage.observe_shadow(_verdict("d1", LATE))
    stage.process(batch([event("d1", LATE)], [REFUSED]))
    assert stage.pending_observations()["known"] == {"decided": 1}
    stage.process(batch([event("d2", LATE)], [REFUSED]))
    assert stage.pending_observations()["known"] == {"decided": 1}
    assert stage.suggestions == {}


class _CountingRemember(StateStoreCandidates):
    """The state store's repository counting (and, when ``fail``, failing) the writes of the
    remembered decisions."""

    def __init__(self, store: StateStore) -> None:
        super().__init__(store)
        self.writes = 0
        self.fail = False

    def remember_decided(self, rows: Sequence[Sequence[str]]) -> None:
        if self.fail:
            raise StateError("cannot write state file x: database or disk is full")
        self.writes += 1
        super().remember_decided(rows)


def test_the_decided_list_is_written_only_when_it_changed_and_a_kill_loses_none() -> None:
    """Two decisions, then three snapshots: the list is written once (before the first),
    the snapshots say ``decided_stored``. A third decision: the next snapshot writes it
    again (2 writes), but its checkpoint never happens (kill -9). The restart from the
    committed snapshot reads the newer list: all three remembered, in their order."""
    with StateStore.in_memory() as store:
        repo = _CountingRemember(store)
        stage = HarvestStage(_config(), sinks=[repo])
        stage.decided("c-000000000000000a", "hostel fee refund")
        stage.decided("c-000000000000000b", "library sunday hours")
        for _ in range(3):
            snapshot = stage.state_snapshot()
            store.checkpoint({"stage/harvest": snapshot})
            stage.checkpointed()
            assert snapshot["decided_stored"] and "decided" not in snapshot
        assert repo.writes == 1
        stage.decided("c-000000000000000c", "bus pass renewal")
        stage.state_snapshot()  # its checkpoint never happens
        assert repo.writes == 2
        restarted = HarvestStage(_config(), sinks=[_CountingRemember(store)])
        restarted.restore(store.get("stage/harvest"))
        assert list(restarted._decided) == ["c-000000000000000a", "c-000000000000000b",
                                            "c-000000000000000c"]  # fmt: skip
        restarted.process(batch([event("x1", "Bus pass renewal?")], [REFUSED]))
        assert restarted.suggestions == {}


def test_a_failed_write_of_the_decided_list_leaves_it_in_the_snapshot() -> None:
    """The repository cannot take the list: the snapshot carries it (and a sink failure is
    counted); the next snapshot, the store back, writes it and carries it no more."""
    with StateStore.in_memory() as store:
        repo = _CountingRemember(store)
        stage = HarvestStage(_config(), sinks=[repo])
        stage.decided("c-000000000000000a", "hostel fee refund")
        repo.fail = True
        snapshot = stage.state_snapshot()
        assert snapshot["decided"] == [["c-000000000000000a", "hostel fee refund"]]
        assert stage.pending_observations()["sink_failures"] == {"_CountingRemember": 1}
        restarted = HarvestStage(_config(), sinks=[repo])
        restarted.restore(snapshot)
        assert list(restarted._decided) == ["c-000000000000000a"]
        repo.fail = False
        assert stage.state_snapshot()["decided_stored"] and repo.writes == 1
