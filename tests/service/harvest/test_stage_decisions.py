"""The harvest stage and labelling decisions: a decided suggestion leaves the held set (no
place under ``max_suggestions``), its question is not suggested again (bounded), restores
leave out what was decided; and :meth:`HarvestStage.restore` on the same stage after a
batch failed partway is a full reset (the stage then equals a clean run)."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.labelling import GoldSetUnavailable, Labelling
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates, StateStoreCandidates
from service.records import GoldQuestion
from service.state import StateError, StateStore
from tests.service.harvest.helpers import batch, event

REFUSED = {"refused": True, "topic": "fees", "language": "en"}
#: Eighteen questions no two of which are near-duplicates (trigram Jaccard < 0.6).
QUESTIONS = ["hostel fee refund", "library sunday hours", "bus pass renewal",
             "exam timetable sem 3", "scholarship form deadline", "canteen menu today",
             "wifi password for labs", "transcript request process", "parking permit cost",
             "gym membership for staff", "lost id card replacement", "thesis submission format",
             "placement drive companies", "medical leave application", "sports quota admission",
             "alumni meet registration", "how to appeal a grade",
             "convocation gown pickup"]  # fmt: skip


def _limit_10() -> HarvestConfig:
    return HarvestConfig(max_suggestions=10, flush_interval_s=0.0)


def _hot(stage: HarvestStage, asks: int = 4) -> dict[str, str]:
    """Ten questions asked ``asks`` times each (refused): ``{question: suggestion id}``."""
    events = [event(f"h{i}-{k}", q, minute=k)
              for i, q in enumerate(QUESTIONS[:10]) for k in range(asks)]  # fmt: skip
    stage.process(batch(events, [REFUSED] * len(events)))
    return {s.question: s.id for s in stage.suggestions.values()}


def test_decided_suggestions_leave_the_held_set_so_new_questions_keep_their_counts() -> None:
    """The trial's finding: ``max_suggestions`` 10, all 10 held suggestions decided, then a
    new question asked twice in each of 4 batches with 2 one-off questions. Held before the
    fix: 10 decided (priority 2·(1 + log2 4) = 6) + 3 new = 13 > 11, so back to 10 and the
    new ones go (the target at 2·(1 + log2 2) = 4), every batch: never listed. Now the 10
    decided hold no place: the target is kept with 2 × 4 = 8 asks, the 8 one-offs too."""
    repo = MemoryCandidates()
    stage = HarvestStage(_limit_10(), sinks=[repo])
    hot = _hot(stage)
    assert len(hot) == 10
    for sid in hot.values():
        stage.decided(sid)
    for b in range(4):
        events = [event(f"t{b}{k}", "when do the chemistry labs close", minute=10 * b + k)
                  for k in range(2)]  # fmt: skip
        events += [event(f"f{b}{k}", QUESTIONS[10 + 2 * b + k],
                         minute=10 * b + 5 + k) for k in range(2)]  # fmt: skip
        stage.process(batch(events, [REFUSED] * len(events)))
    counts = {s.question: s.count for s in stage.suggestions.values()}
    assert counts.pop("when do the chemistry labs close") == 8
    assert sorted(counts.values()) == [1] * 8
    assert stage.pending_observations()["evicted"] == 0
    target = next(r for r in repo.all() if r["question"].startswith("when do the chemistry"))
    assert target["count"] == 8


def test_a_decided_question_asked_again_is_not_suggested_and_its_record_stays() -> None:
    """A rejected question asked again (its exact text, and a near-duplicate wording) is
    counted as known via ``decided``, starts nothing and does not change the record it was
    decided on; the same after a restart from the snapshot (its ``decided`` list, which the
    repository keeps)."""
    repo = MemoryCandidates()
    stage = HarvestStage(_limit_10(), sinks=[repo])
    hot = _hot(stage)
    sid = hot["hostel fee refund"]
    at_decision = repo.get(sid)
    stage.decided(sid)
    stage.pending_observations()
    again = [event("a1", "hostel fee refund", minute=50),
             event("a2", "Hostel fee refunds??", minute=51)]  # fmt: skip
    stage.process(batch(again, [REFUSED, REFUSED]))
    assert sid not in stage.suggestions and len(stage.suggestions) == 9
    assert stage.pending_observations()["known"] == {"decided": 2}
    assert repo.get(sid) == at_decision and at_decision is not None
    assert at_decision["count"] == 4

    snapshot = json.loads(json.dumps(stage.state_snapshot()))
    assert snapshot["decided_stored"] and "decided" not in snapshot  # the repository has it
    assert repo.remembered_decided() == [[sid, "hostel fee refund"]]
    restarted = HarvestStage(_limit_10(), sinks=[repo])
    restarted.restore(snapshot)
    restarted.process(batch([event("a3", "hostel fees refund!", minute=52)], [REFUSED]))
    assert sid not in restarted.suggestions
    assert restarted.pending_observations()["known"] == {"decided": 1}


def test_a_decision_on_a_suggestion_no_longer_held_suppresses_its_question() -> None:
    """Decided after it was evicted: the stage takes the question from the decision (the
    labelling passes the record's normalised text)."""
    stage = HarvestStage(_limit_10())
    stage.decided("c-0000000000000001", "bus pass renewal")
    stage.process(batch([event("b1", "Bus pass renewal?")], [REFUSED]))
    assert stage.suggestions == {}
    assert stage.pending_observations()["known"] == {"decided": 1}


def test_the_decided_questions_remembered_are_bounded_by_max_suggestions() -> None:
    """11 decisions with ``max_suggestions`` 10: the oldest is forgotten (its question asked
    again starts a suggestion), the 10 others are still suppressed."""
    stage = HarvestStage(_limit_10())
    for k, question in enumerate(QUESTIONS[:11]):
        stage.decided(f"c-{k:016x}", question)
    stage.process(batch([event(f"x{k}", q, minute=k)
                         for k, q in enumerate(QUESTIONS[:11])], [REFUSED] * 11))  # fmt: skip
    assert [s.question for s in stage.suggestions.values()] == ["hostel fee refund"]
    assert list(stage._decided) == [f"c-{k:016x}" for k in range(1, 11)]
    assert stage.pending_observations()["known"] == {"decided": 10}


def test_restore_leaves_out_suggestions_decided_after_the_snapshot() -> None:
    """The kill path: a decision kept in the store after the checkpoint, the process killed
    before the stage was told. The restart finds the decision (``decided_of``), does not
    hold the suggestion, and suppresses its question; the snapshot after drops it."""
    with StateStore.in_memory() as store:
        repo = StateStoreCandidates(store)
        stage = HarvestStage(_limit_10(), sinks=[repo])
        hot = _hot(stage)
        store.checkpoint({"stage/harvest": stage.state_snapshot()})
        stage.checkpointed()
        sid = hot["library sunday hours"]
        repo.decide(sid, {"status": "rejected", "reason": "no",
                          "decided_at": "2026-12-01T00:00:00Z"})  # fmt: skip
        held = "bus pass renewal"
        repo.hold(hot[held], repo.get(hot[held]) or {}, "2026-12-01T00:00:00Z")  # not decided
        restarted = HarvestStage(_limit_10(), sinks=[repo])
        restarted.restore(store.get("stage/harvest"))
        assert sid not in restarted.suggestions and hot[held] in restarted.suggestions
        assert len(restarted.suggestions) == 9
        restarted.process(batch([event("r1", "library sunday hours")], [REFUSED]))
        assert restarted.pending_observations()["known"] == {"decided": 1}
        snapshot = restarted.state_snapshot()
        assert sid not in snapshot["ids"] and snapshot["decided_stored"]
        assert [sid, "library sunday hours"] in repo.remembered_decided()


def test_the_labelling_tells_the_stage_of_each_kept_decision(tmp_path: Path) -> None:
    """Accept and reject through :class:`Labelling` with ``on_decide`` wired as the service
    wires it: both suggestions leave the stage at its next batch; a failed accept (the gold-set
    file moved away) tells nothing."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "When are fees due?", "gold": ["p-1"], '
                    '"kind": "plain"}\n', encoding="utf-8")  # fmt: skip
    with StateStore.in_memory() as store:
        repo = StateStoreCandidates(store)
        stage = HarvestStage(_limit_10(), sinks=[repo])
        hot = _hot(stage)
        told: list[tuple[str, str]] = []

        def on_decide(cid: str, normalised: str) -> None:
            told.append((cid, normalised))
            stage.decided(cid, normalised)

        labelling = Labelling(repo, gold, _limit_10(), on_decide=on_decide)
        labelling.accept(hot["hostel fee refund"], ["p-1"], "plain")
        labelling.reject(hot["library sunday hours"], "not a gold question")
        gold.rename(tmp_path / "moved.jsonl")  # missing although it existed: refused
        with pytest.raises(GoldSetUnavailable):
            labelling.accept(hot["exam timetable sem 3"], ["p-1"], "plain")
        assert told == [
            (hot["hostel fee refund"], "hostel fee refund"),
            (hot["library sunday hours"], "library sunday hours"),
        ]
        assert len(stage.suggestions) == 10  # applied by the consumer's thread, not here
        stage.process(batch([event("n1", "hostel fee refund")], [REFUSED]))
        assert len(stage.suggestions) == 8 and hot["exam timetable sem 3"] in stage.suggestions


# -- restore after a batch failed partway -------------------------------------------------


def _traffic(part: int) -> tuple[list[Any], list[dict[str, Any]]]:
    """Events touching every tracker: retrieval scores (score window), topics and languages
    (coverage), repeats (merges), a known question, one too long, and more new questions
    than ``max_new_per_batch`` (shed) and ``max_suggestions`` (eviction)."""
    events, notes = [], []
    for k in range(30):
        rng = random.Random(f"{part}-{k % 11}")  # 11 texts a part, none near another
        words = ("".join(rng.choice(string.ascii_lowercase) for _ in range(6)) for _ in range(3))
        question = " ".join(words) if k % 3 else "bus pass renewal"
        if k == 7:
            question = "x" * 3_000
        events.append(event(f"p{part}-{k}", question, minute=part * 40 + k,
                            results=(("p-1", 1.0 + k % 5), ("p-2", 0.5)),
                            rating=-1.0 if k % 4 == 0 else None))  # fmt: skip
        notes.append({"refused": k % 2 == 0, "topic": ["fees", "exams", "transport"][k % 3],
                      "language": "en" if k % 5 else "hi", "known": k == 11})  # fmt: skip
    return events, notes


def _config() -> HarvestConfig:
    return HarvestConfig(max_suggestions=10, max_new_per_batch=6, max_question_chars=2_000,
                         flush_interval_s=0.0, min_live_events=10, score_window=10)  # fmt: skip


def _state(stage: HarvestStage) -> dict[str, Any]:
    """Every piece of state the stage holds, comparable (the index by key and text)."""
    skip = {"config", "sinks", "clock", "_repository", "index", "coverage", "scores",
            "_lsh", "_embedder", "_gold_probes", "_normal", "_reason_weights",
            "_decisions_in"}  # fmt: skip
    state = {name: value for name, value in vars(stage).items() if name not in skip}
    state["suggestions"] = {sid: s.to_json() for sid, s in stage.suggestions.items()}
    state["index"] = sorted((key, entry[3]) for key, entry in stage.index._grams.items())
    state["coverage"] = stage.coverage.state()
    state["scores"] = stage.scores.state()
    return state


def _checkpointed(stage: HarvestStage, store: StateStore) -> None:
    store.checkpoint({"stage/harvest": stage.state_snapshot()})
    stage.checkpointed()


def _stage(store: StateStore | None = None) -> HarvestStage:
    gold = [GoldQuestion("q-1", "when are hostel fees due", ("p-1",))]
    sinks = [StateStoreCandidates(store)] if store is not None else []
    return HarvestStage(_config(), known_questions=gold, sinks=sinks, clock=lambda: 0.0)


@pytest.mark.parametrize("fail_after", [1, 3, 6])
def test_restore_on_the_same_stage_after_a_partial_batch_equals_a_clean_run(
    monkeypatch: pytest.MonkeyPatch, fail_after: int
) -> None:
    """A batch fails in the stage after ``fail_after`` merges; the engine reloads the last
    checkpoint into the same stage and the batch is redelivered. Every piece of state equals
    that of a new stage restarted from the same checkpoint and given the batch; the records,
    the next snapshot and the telemetry increments also equal those of a run that never
    failed (a restart's known differences, rebuilt caches and the shed events' reasons,
    which are not snapshotted, change none of these here)."""
    first, second = _traffic(1), _traffic(2)
    with (StateStore.in_memory() as clean_store, StateStore.in_memory() as store,
          StateStore.in_memory() as restart_store):  # fmt: skip
        clean = _stage(clean_store)
        clean.process(batch(*first))
        _checkpointed(clean, clean_store)
        clean.pending_observations()
        clean.process(batch(*second))

        stage = _stage(store)
        stage.process(batch(*first))
        _checkpointed(stage, store)
        saved = store.get("stage/harvest")
        stage.pending_observations()
        real_add, calls = HarvestStage._add, []

        def failing_add(self: HarvestStage, sid: str, occurrence: Any) -> None:
            calls.append(sid)
            if len(calls) > fail_after:
                raise RuntimeError("disk gone")
            real_add(self, sid, occurrence)

        monkeypatch.setattr(HarvestStage, "_add", failing_add)
        with pytest.raises(RuntimeError):
            stage.process(batch(*second))
        monkeypatch.setattr(HarvestStage, "_add", real_add)
        # the restart compared with: the same store content, a new stage
        restart_store.checkpoint({key: store.get(key) for key in store.keys("")})
        restarted = _stage(restart_store)
        restarted.restore(saved)
        restarted.process(batch(*second))
        stage.restore(store.get("stage/harvest"))
        stage.process(batch(*second))

        assert _state(stage) == _state(restarted)
        pending = stage.pending_observations()
        assert pending == restarted.pending_observations() == clean.pending_observations()
        assert pending["new_suggestions"] > 0 and pending["evicted"] > 0 and pending["shed"] > 0
        assert stage.records() == clean.records()
        assert json.dumps(stage.state_snapshot()) == json.dumps(clean.state_snapshot())


def test_restore_with_no_checkpoint_resets_to_empty() -> None:
    """Reloading before the first checkpoint (``None``) empties the stage, as constructed."""
    stage = _stage()
    fresh = _state(_stage())
    stage.process(batch(*_traffic(1)))
    assert stage.suggestions
    stage.restore(None)
    assert _state(stage) == fresh


class _Unreadable(MemoryCandidates):
    def get_many(self, candidate_ids: Any) -> Any:
        raise StateError("state file unreadable")


def test_a_restore_whose_read_fails_changes_nothing() -> None:
    """The repository read raises: the stage keeps everything it held (the reset comes
    only after the reads)."""
    repo = _Unreadable()
    stage = HarvestStage(_config(), sinks=[repo], clock=lambda: 0.0)
    stage.process(batch(*_traffic(1)))
    snapshot = json.loads(json.dumps(stage.state_snapshot()))
    stage.checkpointed()
    assert snapshot["ids"] and not snapshot["suggestions"]  # records to read back
    stage.process(batch(*_traffic(2)))
    before = _state(stage)
    with pytest.raises(StateError):
        stage.restore(snapshot)
    assert _state(stage) == before
