"""The harvest stage: picking, merging, known questions, pooling, shadow results,
idempotency across redelivery, restart and replicas, flushing, eviction."""

from __future__ import annotations

import gc
import html
import json
import math
from dataclasses import replace
from typing import Any

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates, StateStoreCandidates
from service.html.extras import candidates_section
from service.pipeline import Pipeline
from service.records import GoldQuestion
from service.shadow.agreement import compare
from service.shadow.runner import ShadowResult
from service.state import StateStore
from tests.service.harvest.helpers import T0, batch, event

CONFIG = HarvestConfig(flush_interval_s=0.0)
REFUSED = {"refused": True, "topic": "fees", "language": "en"}


def shadow(event_id: str, question: str, production: tuple[str, ...],
           ranking: tuple[str, ...], candidate: str = "cand") -> ShadowResult:  # fmt: skip
    return ShadowResult(
        candidate=candidate, event_id=event_id, timestamp=T0, question=question,
        language="en", topic="fees", channel="web", role="student", production=production,
        ranking=ranking, agreement=compare(production, ranking, k=len(production) or 1),
        latency_s=0.01, queue_s=0.0, attempts=1, error=None,
    )  # fmt: skip


def test_near_duplicates_merge_into_one_suggestion() -> None:
    repo = MemoryCandidates()
    stage = HarvestStage(CONFIG, sinks=[repo])
    stage.process(batch(
        [event("e1", "When are the hostel fees due?", minute=0),
         event("e2", "when are hostel fees due", minute=5),
         event("e3", "Library opening hours?", minute=9)],
        [REFUSED, REFUSED, {"refused": False}],
    ))  # fmt: skip
    [row] = repo.all()
    assert row["question"] == "When are the hostel fees due?"
    assert row["count"] == 2 and row["reasons"] == {"refused": 2}
    assert row["variants"] == ["When are the hostel fees due?", "when are hostel fees due"]
    assert (row["first_seen"], row["last_seen"]) == ("2026-11-29T10:00:00Z", "2026-11-29T10:05:00Z")
    assert row["pool"] == {"p-1": {"production": 1}, "p-2": {"production": 2}}
    assert row["primary_reason"] == "refused"
    assert row["priority"] == pytest.approx(2.0 * 2.0)  # weight 2, count 2 -> 1 + log2(2)


def test_known_questions_are_not_suggested() -> None:
    gold = [GoldQuestion("q-1", "When are the hostel fees due?", ("p-1",))]
    stage = HarvestStage(CONFIG, known_questions=gold)
    stage.process(batch(
        [event("e1", "when are hostel fees due"),  # no 'known' key: the gold fallback
         event("e2", "when are hostel fees due"),  # quality stage says known
         event("e3", "when are hostel fees due!")],  # quality stage says not known: trusted
        [REFUSED, {**REFUSED, "known": {"gold_id": "q-1", "similarity": 0.9}},
         {**REFUSED, "known": None}],
    ))  # fmt: skip
    assert [r["count"] for r in stage.records()] == [1]
    assert stage.pending_observations()["known"] == {"gold_set": 1, "annotation": 1}


def test_shadow_results_pool_and_disagree() -> None:
    stage = HarvestStage(CONFIG)
    stage.process(batch([event("e1", "hostel fee refund"), event("e2", "bus timings")],
                        [REFUSED, {}]))  # fmt: skip
    # agreeing candidate on a picked event: pooled, no new reason
    stage.observe_shadow(shadow("e1", "hostel fee refund", ("p-1", "p-2"), ("p-1", "p-2")))
    # disjoint ranking on an event that was not picked: a suggestion of its own
    stage.observe_shadow(shadow("e2", "bus timings", ("p-1", "p-2"), ("p-8", "p-9")))
    rows = {r["question"]: r for r in stage.records()}
    assert rows["hostel fee refund"]["pool"] == {"p-1": {"production": 1, "cand": 1},
                                                 "p-2": {"production": 2, "cand": 2}}  # fmt: skip
    assert rows["hostel fee refund"]["reasons"] == {"refused": 1}
    assert rows["bus timings"]["reasons"] == {"shadow_disagreement": 1}
    assert rows["bus timings"]["count"] == 1
    assert set(rows["bus timings"]["pool"]) == {"p-1", "p-2", "p-8", "p-9"}
    # a disagreeing second candidate on the picked event adds its reason, not a count
    stage.observe_shadow(shadow("e1", "hostel fee refund", ("p-1", "p-2"), ("p-7",), "other"))
    row = {r["question"]: r for r in stage.records()}["hostel fee refund"]
    assert row["count"] == 1 and row["reasons"] == {"refused": 1, "shadow_disagreement": 1}
    assert row["pool"]["p-7"] == {"other": 1}


def test_reasons_add_up_whatever_order_shadow_results_arrive_in() -> None:
    """A replay's shadow stage runs before harvesting: the verdict on e1 arrives before e1
    itself. The suggestion's reasons are the union over its events and their verdicts, each
    reason counted once per event (trial: 84 of 90 negatively rated questions kept only
    shadow_disagreement)."""
    repo = MemoryCandidates()
    stage = HarvestStage(CONFIG, sinks=[repo])
    disagree = ("p-1", "p-2"), ("p-8", "p-9")
    stage.observe_shadow(shadow("e1", "hostel fee refund", *disagree))
    stage.process(batch([event("e1", "hostel fee refund", rating=-1)], [REFUSED]))
    [row] = stage.records()
    assert row["count"] == 1
    assert row["reasons"] == {"refused": 1, "negative_feedback": 1, "shadow_disagreement": 1}
    # a second disagreeing candidate and a redelivery of e1 add no reason twice
    stage.observe_shadow(shadow("e1", "hostel fee refund", ("p-1", "p-2"), ("p-7",), "other"))
    stage.process(batch([event("e1", "hostel fee refund", rating=-1)], [REFUSED]))
    [row] = stage.records()
    assert row["count"] == 1
    assert row["reasons"] == {"refused": 1, "negative_feedback": 1, "shadow_disagreement": 1}
    assert row["pool"]["p-7"] == {"other": 1}
    # the usual serve order (event, then verdict) on a second event of the same question
    stage.process(batch([event("e2", "hostel fee refund", minute=1)], [REFUSED]))
    stage.observe_shadow(shadow("e2", "hostel fee refund", *disagree))
    [row] = stage.records()
    assert row["count"] == 2
    assert row["reasons"] == {"refused": 2, "negative_feedback": 1, "shadow_disagreement": 2}
    # a restart keeps what was counted per event: the redelivered events add nothing
    restarted = HarvestStage(CONFIG, sinks=[repo])
    restarted.restore(json.loads(json.dumps(stage.state_snapshot())))
    restarted.process(
        batch(
            [
                event("e1", "hostel fee refund", rating=-1),
                event("e2", "hostel fee refund", minute=1),
            ],
            [REFUSED, REFUSED],
        )
    )
    restarted.observe_shadow(shadow("e1", "hostel fee refund", *disagree))
    assert restarted.records() == [row]


def test_a_shed_events_reasons_join_the_suggestion_its_shadow_verdict_starts() -> None:
    """max_new_per_batch 1: of two new refused questions one is shed; a disagreeing verdict
    on it later starts its suggestion, with its refusal too (serve: 3 negatively rated
    questions had only shadow_disagreement)."""
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0, max_new_per_batch=1))
    questions = {"e1": "hostel fee refund", "e2": "bus timings kamptee"}
    stage.process(batch([event(e, q) for e, q in questions.items()], [REFUSED, REFUSED]))
    [kept] = stage.records()
    assert stage.pending_observations()["shed"] == 1
    [(shed_id, shed_question)] = [(e, q) for e, q in questions.items() if q != kept["question"]]
    stage.observe_shadow(shadow(shed_id, shed_question, ("p-1", "p-2"), ("p-8", "p-9")))
    row = {r["question"]: r for r in stage.records()}[shed_question]
    assert row["count"] == 1 and row["reasons"] == {"refused": 1, "shadow_disagreement": 1}


def test_an_uncalibrated_novel_topic_is_no_coverage_gap() -> None:
    """Gold: topic fees 4, language en 4. Live: 4 events, all en (language gap 0), topic
    'novel' (gold share 0, live share 1: a topic gap of 1.0 if the share were a fact)."""
    config = HarvestConfig(flush_interval_s=0.0, min_live_events=1)
    gold = {"topic": {"fees": 4}, "language": {"en": 4}}
    novel = {"topic": "novel", "language": "en", "novelty_calibrated": False}
    stage = HarvestStage(config, gold_counts=gold)
    stage.process(batch([event(f"e{i}", f"question number {i}") for i in range(4)], [novel] * 4))
    assert stage.records() == []  # neither coverage_gap nor novel: no reason at all
    # a disagreeing shadow result on a novel question: its gap is the language's, 0
    stage.observe_shadow(replace(shadow("e8", "late fee", ("p-1",), ("p-8",)), topic="novel"))
    [row] = stage.records()
    assert row["reasons"] == {"shadow_disagreement": 1} and row["gap"] == 0.0
    # calibrated: live share 1/1 against gold share 0 -> gap = the Wilson lower bound of
    # 1/1, 1 / (1 + z²) = 0.2065 ≥ min_gap 0.02
    calibrated = HarvestStage(config, gold_counts=gold)
    calibrated.process(batch([event("e1", "question number 1")],
                             [{**novel, "novelty_calibrated": True}]))  # fmt: skip
    [row] = calibrated.records()
    assert row["reasons"] == {"coverage_gap": 1, "novel": 1}
    assert row["gap"] == pytest.approx(1 / (1 + 1.959964**2))


def test_no_topic_is_a_coverage_gap_while_the_topic_assignment_is_uncalibrated() -> None:
    """Gold: topic fees 4, language en 4. Live: 4 en events read as 'hostel' (gold share 0,
    live 1: a topic gap if the share were a fact) by a topic model below
    analytics.topics.min_kappa (``topic_calibrated`` False): no coverage_gap, not for a
    shadow result either, and no gap in the report's groups; calibrated, the same events
    carry it."""
    config = HarvestConfig(flush_interval_s=0.0, min_live_events=1)
    gold = {"topic": {"fees": 4}, "language": {"en": 4}}
    hostel = {"topic": "hostel", "language": "en", "topic_calibrated": False}
    stage = HarvestStage(config, gold_counts=gold)
    stage.process(batch([event(f"e{i}", f"question number {i}") for i in range(4)], [hostel] * 4))
    assert stage.records() == []
    assert stage.best_records_in_gaps(3, 10) == ([], 0)
    stage.observe_shadow(replace(shadow("e8", "late fee", ("p-1",), ("p-8",)), topic="hostel"))
    [row] = stage.records()
    assert row["reasons"] == {"shadow_disagreement": 1} and row["gap"] == 0.0
    calibrated = HarvestStage(config, gold_counts=gold)
    calibrated.process(batch([event("e1", "question number 1")],
                             [{"topic": "hostel", "language": "en"}]))  # fmt: skip
    [row] = calibrated.records()
    assert row["reasons"] == {"coverage_gap": 1}
    assert row["gap"] == pytest.approx(1 / (1 + 1.959964**2))


def _events() -> tuple[list[Any], list[dict[str, Any]]]:
    questions = ["hostel fee refund", "Hostel fee refund?", "bus timings kamptee",
                 "scholarship date", "hostel fees refund"]  # fmt: skip
    events = [event(f"e{i}", q, minute=i) for i, q in enumerate(questions)]
    return events, [REFUSED] * len(events)


def test_redelivered_batch_counts_once() -> None:
    events, notes = _events()
    stage = HarvestStage(CONFIG)
    stage.process(batch(events, notes))
    first = stage.records()
    stage.process(batch(events, notes))
    assert stage.records() == first
    assert sorted(r["count"] for r in first) == [1, 1, 3]


def test_recent_events_bounds_the_events_remembered() -> None:
    """harvest.recent_events 2: of three picked events of one question only the last two
    keep their counted reasons (oldest out); the default (50,000) keeps all three. The
    suggestion counts all three either way."""
    events = [event(f"e{i}", "hostel fee refund", minute=i) for i in range(3)]
    bounded = HarvestStage(CONFIG.model_copy(update={"recent_events": 2}))
    default = HarvestStage(CONFIG)
    for stage in (bounded, default):
        stage.process(batch(events, [REFUSED] * 3))
        assert [r["count"] for r in stage.records()] == [3]
    assert list(bounded._recent) == ["e1", "e2"]
    assert list(default._recent) == ["e0", "e1", "e2"]


def test_events_with_the_same_reasons_share_one_reason_set() -> None:
    """Issue 22 item 5 (benchmarks.bench_memory): a remembered event's counted reasons are
    one shared tuple per distinct set (in REASONS order), not one set per event (~0.2 KB
    each), whatever the batch they came in; the sets themselves are the events' reasons."""
    events = [event(f"e{i}", f"hostel fee refund {i % 2}", minute=i) for i in range(4)]
    stage = HarvestStage(CONFIG)
    stage.process(batch(events[:2], [REFUSED] * 2))
    stage.process(batch(events[2:], [REFUSED] * 2))
    sets = [stage._recent[f"e{i}"][1] for i in range(4)]
    assert sets[0] == ("refused",)  # the refusal the annotations record
    assert all(s is sets[0] for s in sets)


def test_a_remembered_event_is_left_to_the_garbage_collector_once_seen() -> None:
    """Issue 22: each remembered event's (suggestion id, counted reasons) holds only
    strings, so the collector untracks it at its first collection and its full
    collections no longer walk the ``recent_events`` entries (a frozenset of reasons kept
    every entry tracked: ~28,000 of ~110,000 objects in benchmarks.bench_production)."""
    events = [event(f"e{i}", f"hostel fee refund {i}", minute=i) for i in range(3)]
    stage = HarvestStage(CONFIG)
    stage.process(batch(events, [REFUSED] * 3))
    gc.collect()
    assert [gc.is_tracked(stage._recent[f"e{i}"]) for i in range(3)] == [False] * 3


def test_restart_from_checkpoint_and_replay_gives_the_same_records() -> None:
    events, notes = _events()
    straight_repo = MemoryCandidates()
    straight = HarvestStage(CONFIG, sinks=[straight_repo])
    straight.process(batch(events[:2], notes[:2]))
    straight.process(batch(events[2:], notes[2:]))

    repo = MemoryCandidates()
    crashed = HarvestStage(CONFIG, sinks=[repo])
    crashed.process(batch(events[:2], notes[:2]))
    saved = json.loads(json.dumps(crashed.state_snapshot()))  # the checkpoint
    crashed.process(batch(events[2:], notes[2:]))  # published, then the process dies
    restarted = HarvestStage(CONFIG, sinks=[repo])
    restarted.restore(saved)
    restarted.process(batch(events[2:], notes[2:]))  # the source replays from the checkpoint
    # a suggestion the restored snapshot took from its record is republished once the next
    # checkpoint's snapshot carries it in full
    restarted.state_snapshot()
    restarted.checkpointed()  # the checkpoint committed
    restarted.flush()
    assert repo.all() == straight_repo.all()
    assert len(repo.all()) == 3


def test_two_replicas_never_duplicate_a_suggestion() -> None:
    events, notes = _events()
    shared = MemoryCandidates()  # stands for the compacted topic: last record per key wins
    for part in (slice(0, None, 2), slice(1, None, 2)):
        replica = HarvestStage(CONFIG, sinks=[shared])
        replica.process(batch(events[part], notes[part]))
    ids = [r["id"] for r in shared.all()]
    assert len(ids) == len(set(ids)) == 3


def test_flush_waits_for_its_interval_and_retries_a_failed_sink() -> None:
    now = [0.0]

    class Flaky:
        def __init__(self) -> None:
            self.calls, self.fail = 0, True

        def publish(self, records: Any) -> None:
            self.calls += 1
            if self.fail:
                raise ConnectionError("down")

    flaky, repo = Flaky(), MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=10.0), sinks=[repo, flaky],
                         clock=lambda: now[0])  # fmt: skip
    stage.process(batch([event("e1", "hostel fee refund")], [REFUSED]))
    assert flaky.calls == 1 and stage.pending_observations()["sink_failures"] == {"Flaky": 1}
    now[0] = 5.0
    assert stage.flush() == 0 and flaky.calls == 2  # failed flushes retry at once
    flaky.fail = False
    assert stage.flush() == 1 and flaky.calls == 3
    now[0] = 6.0
    stage.process(batch([event("e2", "bus timings")], [REFUSED]))
    assert flaky.calls == 3  # 1 s since the last flush < 10 s
    assert stage.flush(force=True) == 1 and len(repo.all()) == 2


def test_an_idle_pipeline_publishes_what_came_in_its_last_batch() -> None:
    """A seventh trial: the suggestions of the last batch reached the topic only at shutdown,
    as flushes ran only after a batch. The idle turn publishes them once the interval has
    passed, and not before."""
    now = [0.0]

    class Topic:
        def __init__(self) -> None:
            self.records: list[Any] = []

        def publish(self, records: Any) -> None:
            self.records.extend(records)

    topic = Topic()
    stage = HarvestStage(HarvestConfig(flush_interval_s=10.0), sinks=[topic],
                         clock=lambda: now[0])  # fmt: skip
    pipeline = Pipeline([stage])
    stage.process(batch([event("e1", "hostel fee refund")], [REFUSED]))
    now[0] = 1.0
    stage.process(batch([event("e2", "bus timings")], [REFUSED]))  # 1 s: not due yet
    assert [r["question"] for r in topic.records] == ["hostel fee refund"]
    now[0] = 5.0
    pipeline.idle()
    assert len(topic.records) == 1  # 5 s since the last flush < 10 s
    now[0] = 10.0
    pipeline.idle()
    assert [r["question"] for r in topic.records] == ["hostel fee refund", "bus timings"]


def test_an_idle_turn_retries_a_failed_sink_once_per_interval() -> None:
    """A review's case: a failed flush is due again at once, and idle turns come about every
    second, so a sink down on a quiet stream was tried (under the engine's lock) at each."""
    now = [0.0]

    class Down:
        calls = 0

        def publish(self, records: Any) -> None:
            Down.calls += 1
            raise ConnectionError("down")

    stage = HarvestStage(HarvestConfig(flush_interval_s=10.0), sinks=[Down()],
                         clock=lambda: now[0])  # fmt: skip
    stage.process(batch([event("e1", "hostel fee refund")], [REFUSED]))
    assert Down.calls == 1
    for second in range(1, 31):
        now[0] = float(second)
        stage.idle()
    assert Down.calls == 4  # the batch's flush at 0, then idle turns at 1, 11 and 21 (of 30)


def test_flush_writes_to_the_repository_only_records_its_snapshot_did_not() -> None:
    # the checkpoint's snapshot writes the repository the record of each changed suggestion
    # (so that it can rely on it); the last flush gives the other sinks every changed one but
    # the repository only what changed since: "hostel fee refund" again (count 3), not "bus
    # timings", whose record there is current
    class Counting(MemoryCandidates):
        def __init__(self) -> None:
            super().__init__()
            self.published: list[list[str]] = []

        def publish(self, records: Any) -> None:
            self.published.append([row["normalised"] for row in records])
            super().publish(records)

    class Topic:  # another sink, as the compacted Kafka topic
        def __init__(self) -> None:
            self.published: list[list[str]] = []

        def publish(self, records: Any) -> None:
            self.published.append([row["normalised"] for row in records])

    repo, topic = Counting(), Topic()
    stage = HarvestStage(HarvestConfig(flush_interval_s=10.0), sinks=[repo, topic],
                         clock=lambda: 0.0)  # fmt: skip
    stage.process(batch([event("e1", "hostel fee refund"), event("e2", "bus timings")],
                        [REFUSED, REFUSED]))  # fmt: skip
    assert repo.published == topic.published == [["bus timings", "hostel fee refund"]]
    again = [event("e3", "bus timings", minute=1), event("e4", "hostel fee refund", minute=1)]
    stage.process(batch(again, [REFUSED, REFUSED]))
    stage.state_snapshot()  # the checkpoint: both written to the repository, in held order
    assert repo.published[1:] == [["hostel fee refund", "bus timings"]]
    stage.process(batch([event("e5", "hostel fee refund", minute=2)], [REFUSED]))
    assert stage.flush(force=True) == 2
    assert repo.published[2:] == [["hostel fee refund"]]
    assert topic.published[1:] == [["bus timings", "hostel fee refund"]]
    assert [(r["normalised"], r["count"]) for r in sorted(repo.all(), key=lambda r: r["count"])
            ] == [("bus timings", 2), ("hostel fee refund", 3)]  # fmt: skip


def test_a_record_the_snapshot_wrote_reaches_the_other_sinks_at_the_next_flush() -> None:
    # "bus timings" starts between two flushes; the checkpoint's snapshot writes it to the
    # repository and relies on that record; unchanged, it is due for the other sinks at the
    # next flush (t = 10 s, interval 5 s), not only at shutdown (before: it stayed held)
    class Topic:
        def __init__(self) -> None:
            self.published: list[list[str]] = []

        def publish(self, records: Any) -> None:
            self.published.append([row["normalised"] for row in records])

    now = [0.0]
    repo, topic = MemoryCandidates(), Topic()
    stage = HarvestStage(HarvestConfig(flush_interval_s=5.0), sinks=[repo, topic],
                         clock=lambda: now[0])  # fmt: skip
    stage.process(batch([event("e1", "hostel fee refund")], [REFUSED]))
    now[0] = 1.0
    stage.process(batch([event("e2", "bus timings")], [REFUSED]))  # no flush: 1 s < 5 s
    stage.state_snapshot()
    assert [r["normalised"] for r in repo.all()] == ["bus timings", "hostel fee refund"]
    assert topic.published == [["hostel fee refund"]]
    now[0] = 10.0
    stage.process(batch([event("e3", "no reason here")], [{}]))
    assert topic.published == [["hostel fee refund"], ["bus timings"]]
    assert stage.unpublished == 0


def test_eviction_keeps_the_highest_priorities() -> None:
    stage = HarvestStage(HarvestConfig(max_suggestions=10, flush_interval_s=0.0))
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo"]  # fmt: skip
    events = [event(f"e{i}", w, minute=i) for i, w in enumerate(words)]
    notes = [{"acl_leaks": ["p"]}] + [REFUSED] * 10  # alpha weighs 3.0, the rest 2.0
    stage.process(batch(events, notes))
    assert len(stage.suggestions) == 11  # up to 10 % over the limit: kept
    stage.process(batch([event("e99", "mike", minute=99)], [{}]))  # no reason
    stage.process(batch([event("e98", "november", minute=98)], [REFUSED]))
    kept = sorted(s.normalised for s in stage.suggestions.values())
    # 12 > 11: back to 10, the lowest priority (2.0) with the oldest last_seen go first
    assert kept == ["alpha", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
                    "kilo", "november"]  # fmt: skip
    assert stage.pending_observations()["evicted"] == 2


def test_eviction_ranks_a_suggestion_by_its_priority_after_it_changed() -> None:
    # the first eviction ranks every suggestion; delta (2.0, among the oldest) then gets a
    # second event: count 2, priority 2.0 * (1 + log2 2) = 4.0, so the second eviction
    # (12 > 11 again) drops echo and foxtrot, the oldest of those still at 2.0, not delta
    stage = HarvestStage(HarvestConfig(max_suggestions=10, flush_interval_s=0.0))
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo", "november"]  # fmt: skip
    notes = [{"acl_leaks": ["p"]}] + [REFUSED] * 11
    stage.process(batch([event(f"e{i}", w, minute=i) for i, w in enumerate(words)], notes))
    assert "bravo" not in {s.normalised for s in stage.suggestions.values()}  # evicted
    stage.process(batch([event("e50", "delta", minute=50)], [REFUSED]))
    stage.process(batch([event("e51", "oscar", minute=51), event("e52", "papa", minute=52)],
                        [REFUSED, REFUSED]))  # fmt: skip
    kept = sorted(s.normalised for s in stage.suggestions.values())
    assert kept == ["alpha", "delta", "golf", "hotel", "india", "juliet", "kilo", "november",
                    "oscar", "papa"]  # fmt: skip
    assert stage.pending_observations()["evicted"] == 4


def test_eviction_after_a_kept_suggestion_was_decided() -> None:
    # the first eviction (12 > 11) drops bravo and charlie (2.0, oldest) and keeps the
    # rest ranked; delta, kept, is then decided: no longer held (10 → 9). Three more
    # (9 + 3 = 12 > 11) evict again down to 10: echo and foxtrot, the oldest at 2.0 of
    # those held (delta's old place in the ranking does not count)
    stage = HarvestStage(HarvestConfig(max_suggestions=10, flush_interval_s=0.0))
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel",
             "india", "juliet", "kilo", "november"]  # fmt: skip
    notes = [{"acl_leaks": ["p"]}] + [REFUSED] * 11
    stage.process(batch([event(f"e{i}", w, minute=i) for i, w in enumerate(words)], notes))
    [delta] = [s.id for s in stage.suggestions.values() if s.normalised == "delta"]
    stage.decided(delta)
    stage.process(batch([event(f"e{50 + i}", w, minute=50 + i)
                         for i, w in enumerate(["oscar", "papa", "quebec"])],
                        [REFUSED] * 3))  # fmt: skip
    kept = sorted(s.normalised for s in stage.suggestions.values())
    assert kept == ["alpha", "golf", "hotel", "india", "juliet", "kilo", "november", "oscar",
                    "papa", "quebec"]  # fmt: skip
    assert stage.pending_observations()["evicted"] == 4


def test_generated_channel_and_pii_are_kept_apart() -> None:
    stage = HarvestStage(CONFIG)
    stage.process(batch(
        [event("e1", "mail me at rahul@example.com about hostel fees", channel="synthetic"),
         event("e2", "mail me at priya@example.org about hostel fees")],
        [REFUSED, REFUSED],
    ))  # fmt: skip
    [row] = stage.records()
    assert row["source"] == "generated"
    assert row["question"] == "mail me at <EMAIL> about hostel fees"
    assert "@" not in json.dumps(stage.state_snapshot())


def test_a_question_the_pii_stage_found_nothing_in_is_kept_without_a_second_scrub(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The PII stage's empty counts (``pii: {}``) say its scrub found nothing in the event, so
    the question is what a scrub of it gives: the suggestion keeps it, and its variants,
    without scrubbing them again; so does a question the stage's own scrub found nothing in
    (no PII stage). When the PII stage found something, the question is scrubbed again as it
    is kept (a scrub that replaced something may have stopped at MAX_PASSES): here the
    e-mail it left is replaced."""
    from service.harvest import suggestion

    scrubbed: list[str] = []
    real = suggestion.scrub

    def counted(text: str) -> Any:
        scrubbed.append(text)
        return real(text)

    monkeypatch.setattr(suggestion, "scrub", counted)
    stage = HarvestStage(CONFIG)
    stage.process(batch(
        [event("e1", "when are the hostel fees due"),
         event("e2", "mail me at rahul@example.com about the library"),
         event("e3", "bus route to kamptee"),
         event("e4", "when are hostel fees due")],
        [{**REFUSED, "pii": {}}, {**REFUSED, "pii": {"email": 1}}, REFUSED,
         {**REFUSED, "pii": {}}],
    ))  # fmt: skip
    rows = {row["question"]: row["variants"] for row in stage.records()}
    assert rows == {
        "when are the hostel fees due": ["when are the hostel fees due",
                                         "when are hostel fees due"],
        "mail me at <EMAIL> about the library": ["mail me at <EMAIL> about the library"],
        "bus route to kamptee": ["bus route to kamptee"],
    }  # fmt: skip
    assert scrubbed == ["mail me at rahul@example.com about the library"]


def test_snapshot_carries_only_changed_suggestions_and_restart_rebuilds_the_rest() -> None:
    """Records in the state store stand in for the clean suggestions of a checkpoint; a
    suggestion changed after it is not republished before the next one, so a crash and a
    replay of more events than a suggestion remembers still count each event once."""
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot"]
    first = [event(f"a{i}", f"{w} hostel fees", minute=i) for i, w in enumerate(words)]
    # 12 later events on one question: more than the 8 event ids a suggestion keeps
    later = [event(f"b{i}", "alpha hostel fees", minute=10 + i) for i in range(12)]
    later.append(event("b99", "golf hostel fees", minute=30))

    def run_straight() -> list[dict[str, Any]]:
        repo = MemoryCandidates()
        stage = HarvestStage(CONFIG, sinks=[repo])
        stage.process(batch(first, [REFUSED] * len(first)))
        stage.process(batch(later, [REFUSED] * len(later)))
        return repo.all()

    with StateStore.in_memory() as store:
        repo = StateStoreCandidates(store)
        crashed = HarvestStage(CONFIG, sinks=[repo])
        crashed.process(batch(first, [REFUSED] * len(first)))  # published: all clean
        at_checkpoint = crashed.records()
        store.checkpoint({"stage/harvest": crashed.state_snapshot()})
        saved = store.get("stage/harvest")
        assert saved["suggestions"] == [] and len(saved["ids"]) == len(words)
        crashed.process(batch(later, [REFUSED] * len(later)))  # then the process dies
        alpha = repo.get(crashed._exact["alpha hostel fees"])
        assert alpha is not None and alpha["count"] == 1  # held back for the next snapshot
        assert {r["question"] for r in repo.all()} == {f"{w} hostel fees" for w in [*words, "golf"]}

        restarted = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
        restarted.restore(store.get("stage/harvest"))
        assert restarted.records() == at_checkpoint
        restarted.process(batch(later, [REFUSED] * len(later)))  # replayed from the checkpoint
        store.checkpoint({"stage/harvest": restarted.state_snapshot()})
        restarted.checkpointed()  # as the engine confirms a committed checkpoint
        restarted.flush()
        assert repo.all() == run_straight()
        assert {r["question"]: r["count"] for r in repo.all()}["alpha hostel fees"] == 13


def test_restore_reads_version_1_snapshots_and_skips_missing_records(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events, notes = _events()
    stage = HarvestStage(CONFIG)  # no repository sink: every suggestion in full
    stage.process(batch(events, notes))
    snapshot = json.loads(json.dumps(stage.state_snapshot()))
    version_1 = {k: v for k, v in snapshot.items() if k != "ids"} | {"version": 1}
    old = HarvestStage(CONFIG)
    old.restore(version_1)
    assert old.records() == stage.records()

    clean = HarvestStage(CONFIG, sinks=[MemoryCandidates()])
    clean.process(batch(events, notes))
    snapshot = json.loads(json.dumps(clean.state_snapshot()))
    assert snapshot["suggestions"] == []
    empty = HarvestStage(CONFIG, sinks=[MemoryCandidates()])  # its records are gone
    empty.restore(snapshot)
    assert empty.records() == [] and "3 suggestions had no published record" in caplog.text


def test_restore_seeds_the_gap_window_from_an_old_all_time_snapshot() -> None:
    """A snapshot written before the window held all-time counts (``events``, ``live``):
    the window starts from their mix (here 300 events, de 30 %: the window of 200 gets 60
    de, 140 en), so gaps go on across the upgrade; the next events push them out."""
    config = HarvestConfig(flush_interval_s=0.0, gap_window=200, min_live_events=100)
    gold = {"language": {"en": 4}}
    old = HarvestStage(config, gold_counts=gold).state_snapshot()
    live = {"language": {"en": 210, "de": 90}, "topic": {"und": 300}}
    old["coverage"] = {"events": 300, "live": live}
    stage = HarvestStage(config, gold_counts=gold)
    stage.restore(json.loads(json.dumps(old)))
    assert stage.coverage.live["language"] == {"en": 140, "de": 60}
    gap, dimension = stage._gap("fees", "de")
    assert gap > config.min_gap and dimension == "language"  # L(60 / 200) = .2405, no gold row
    stage.process(batch([event(f"e{i}", f"question {i}") for i in range(200)],
                        [{"language": "en"}] * 200))  # fmt: skip
    assert stage.coverage.live["language"] == {"en": 200}
    assert stage._gap("fees", "de") == (0.0, None)


def test_questions_over_max_question_chars_are_counted_not_suggested() -> None:
    """The user's 54,008-character question: not suggested, counted (``too_long``, apart
    from load shedding); one at the limit is kept whole."""
    repo = MemoryCandidates()
    config = HarvestConfig(flush_interval_s=0.0, max_question_chars=100)
    stage = HarvestStage(config, sinks=[repo])
    at_limit = "hostel fee " + "x" * 89  # 100 characters
    huge = "When is the fee due? " + "lorem ipsum " * 4_499  # 54,009 characters
    stage.process(batch([event("e1", at_limit), event("e2", huge), event("e3", "w" * 101)],
                        [REFUSED, REFUSED, REFUSED]))  # fmt: skip
    assert [row["question"] for row in repo.all()] == [at_limit]
    observed = stage.pending_observations()
    assert observed["too_long"] == 2 and observed["shed"] == 0
    assert observed["reasons"] == {"refused": 1}
    stage.observe_shadow(shadow("e9", "y" * 101, ("p-1", "p-2"), ("p-8", "p-9")))
    assert len(repo.all()) == 1 and stage.pending_observations()["too_long"] == 1
    assert HarvestConfig().max_question_chars == 2_000


class _FailsFirst:
    """A sink that raises on its first ``failures`` publishes, then keeps what it gets."""

    def __init__(self, failures: int) -> None:
        self.failures, self.calls = failures, 0
        self.kept = MemoryCandidates()

    def publish(self, records: Any) -> None:
        self.calls += 1
        if self.calls <= self.failures:
            raise OSError(28, "No space left on device")
        self.kept.publish(records)


def test_the_shutdown_flush_is_retried_until_the_sink_takes_the_suggestions() -> None:
    """Before: ``Live.close`` flushed once; a sink failing then (a full disk at shutdown)
    lost the changed suggestions with one warning naming only the exception type."""
    from service.runtime.analytics import Analytics
    from service.runtime.live import Live

    sink = _FailsFirst(failures=2)
    stage = HarvestStage(HarvestConfig(flush_interval_s=3600.0), sinks=[sink])
    stage.process(batch([event("e1", "hostel fee refund"), event("e2", "bus timings")],
                        [REFUSED, REFUSED]))  # fmt: skip
    assert sink.calls == 1 and stage.unpublished == 2  # the first flush failed
    waits: list[float] = []
    assert stage.flush_final(wait=waits.append) == 0
    assert waits == [0.5] and sink.calls == 3 and len(sink.kept.all()) == 2
    # through the service's shutdown path, one failure at shutdown (a 0.5 s wait)
    now = [0.0]
    sink = _FailsFirst(failures=0)
    stage = HarvestStage(HarvestConfig(flush_interval_s=3600.0), sinks=[sink],
                         clock=lambda: now[0])  # fmt: skip
    stage.process(batch([event("e1", "hostel fee refund")], [REFUSED]))  # published
    now[0] = 1.0
    stage.process(batch([event("e3", "exam dates")], [REFUSED]))  # waits for the interval
    assert stage.unpublished == 1 and sink.calls == 1
    sink.failures = 2  # the next publish (the shutdown's) fails once
    Live(None, Analytics(stages=[]), None, harvest=stage).close()  # type: ignore[arg-type]
    assert [r["question"] for r in sink.kept.all()].count("exam dates") == 1
    assert stage.unpublished == 0


def test_suggestions_a_sink_never_takes_are_counted_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    sink = _FailsFirst(failures=1_000)
    stage = HarvestStage(HarvestConfig(flush_interval_s=3600.0), sinks=[sink])
    stage.process(batch([event("e1", "hostel fee refund"), event("e2", "bus timings")],
                        [REFUSED, REFUSED]))  # fmt: skip
    waits: list[float] = []
    with caplog.at_level("ERROR", logger="service.harvest.stage"):
        assert stage.flush_final(wait=waits.append) == 2
    assert waits == [0.5, 1.0, 2.0, 4.0] and sink.calls == 1 + 5
    assert "harvest: 2 suggestions lost" in caplog.text


def test_report_summary_builds_the_top_records_only_and_matches_the_full_records() -> None:
    from service.harvest.text import candidate_id
    from service.runtime.reports import harvest_summary

    stage = HarvestStage(CONFIG)
    questions = ["hostel fee refund", "bus timings", "library hours", "exam dates", "wifi login"]
    stage.process(batch([event(f"e{i}", questions[i % 5], minute=i) for i in range(12)],
                        [REFUSED] * 12))  # fmt: skip
    # refused (weight 2) only; counts 3, 3, 2, 2, 2: priorities 2 * (1 + log2 3) twice, then 4
    tied = sorted(["hostel fee refund", "bus timings"], key=candidate_id)  # a tie goes by id
    top = stage.best_records(3)
    assert [r["normalised"] for r in top[:2]] == tied
    assert [r["priority"] for r in top] == [round(2 * (1 + math.log2(3)), 6)] * 2 + [4.0]
    assert stage.reason_counts() == {"refused": 5} and stage.best_records(0) == []
    whole = harvest_summary(stage.records(), top=3, config=CONFIG)
    assert whole["top"] == top and whole["by_reason"] == stage.reason_counts()


def test_suggestions_in_coverage_gaps_are_grouped_by_their_gap_with_each_gaps_best() -> None:
    """Trial 9 (F5): with German and Spanish gaps the report's top 20 were all English. The
    current gaps (harvest's window, set here): language de .3, es .1, en .01 (under min_gap
    .02: none), topic fees .05, novel .4 (uncalibrated: none). Suggestions set by hand, all
    ``refused`` (weight 2), priority 2 × (1 + log2 count) × (1 + gap): de count 4 gap .5 → 9;
    two de count 2 gap .5 → 6 each (a tie: by id); de count 3 without a gap → 2 × (1 +
    log2 3) = 5.17 (grouped by its own language all the same); es count 1 → 3; topic fees
    count 8 → 12; an en suggestion flagged in a language gap (a later Spanish wording brought
    it, trial 9's "Was ist das Engineering News-Record?") → in no group, en is no gap."""
    from service.harvest.suggestion import Suggestion
    from service.jobs.replay import harvest_lines

    def made(sid: str, language: str, count: int, dimension: str | None, topic: str = "x"
             ) -> Suggestion:  # fmt: skip
        return Suggestion(id=sid, question=f"q {sid}", normalised=f"q {sid}", language=language,
                          topic=topic, count=count, reasons={"refused": count},
                          gap=0.5 if dimension else 0.0, gap_dimension=dimension)  # fmt: skip

    stage = HarvestStage(CONFIG)
    assert stage.best_records_in_gaps(top=3, groups=10) == ([], 0)  # no gap yet
    for s in (
        made("c-6", "de", 2, "language"),
        made("c-1", "de", 4, "language"),
        made("c-2", "de", 2, "language"),
        made("c-3", "es", 1, "language"),
        made("c-4", "en", 8, "topic", topic="fees"),
        made("c-5", "de", 3, None),
        made("c-7", "en", 5, "language"),
    ):
        stage.suggestions[s.id] = s  # fmt: skip
    gaps = {"language": {"de": 0.3, "es": 0.1, "en": 0.01}, "topic": {"fees": 0.05, "novel": 0.4}}
    stage.coverage.gaps = lambda: gaps  # type: ignore[method-assign]
    stage._novel_uncalibrated = True
    groups, n_gaps = stage.best_records_in_gaps(top=2, groups=2)
    assert n_gaps == 3
    assert [(g["dimension"], g["value"], g["gap"], g["n"]) for g in groups] == [
        ("language", "de", 0.3, 4), ("language", "es", 0.1, 1)]  # fmt: skip
    assert [r["id"] for r in groups[0]["top"]] == ["c-1", "c-2"]
    assert [r["priority"] for r in groups[0]["top"]] == [9.0, 6.0]
    assert [r["priority"] for r in groups[1]["top"]] == [3.0]
    all_groups, _ = stage.best_records_in_gaps(top=4, groups=10)
    assert [(g["value"], g["n"]) for g in all_groups] == [("de", 4), ("es", 1), ("fees", 1)]
    assert [r["id"] for r in all_groups[0]["top"]] == ["c-1", "c-2", "c-6", "c-5"]
    assert all_groups[0]["top"][3]["priority"] == round(2 * (1 + math.log2(3)), 6)
    assert all_groups[2]["top"][0]["priority"] == 12.0
    assert stage.best_records_in_gaps(top=0, groups=0) == ([], 3)
    summary = {"n_suggestions": 7, "by_reason": {"refused": 7}, "top": [],
               "in_gaps": all_groups, "n_gaps": 3}  # fmt: skip
    seen = "  in the coverage gaps of the recent events (harvest.gap_window): "
    # session 41: the gaps count the questions judged out of scope, not the document shares
    scope = ("; questions judged out of scope count in the language and topic gaps (their "
             "language and topic are their own: gold rows there, unanswerable ones among them, "
             "measure the scope detector and the refusals on them) but in no document share "
             "(their document, production's first passage, does not cover them)")  # fmt: skip
    assert harvest_lines(summary)[1] == seen + "language de 4, language es 1, topic fees 1" + scope  # type: ignore[arg-type]
    summary["in_gaps"], summary["n_gaps"] = groups, n_gaps
    assert harvest_lines(summary)[1] == (
        seen + "language de 4, language es 1 (and 1 smaller gaps)" + scope
    )  # type: ignore[arg-type]
    summary["top"] = [{"id": "c-1", "question": "Wann ist die Gebühr fällig?"}]
    page = str(candidates_section(summary))  # the HTML reports and the status page say it too
    assert f"{html.escape(scope[2:])}).</p>" in page
    stage._novel_uncalibrated = False  # a calibrated novel topic is a gap like any other
    assert stage.best_records_in_gaps(top=1, groups=10)[1] == 3  # no suggestion is novel
