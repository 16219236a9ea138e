"""The cheaper paths of the harvest stage (issue 22) give what the plain ones give.

Each test works its expected value out by the plain path the cheap one replaces: the record
text as ``json.dumps`` writes :func:`record`; the eviction key as
:func:`eviction_keys` computes it; the exact-text look-up as "the texts of the suggestions
held or decided"; the low-confidence verdicts as one :func:`production_score` and
:meth:`ScoreWindow.is_low` call per event.
"""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

from service.events import QueryLogEvent
from service.harvest.config import HarvestConfig
from service.harvest.ranking import eviction_keys
from service.harvest.signals import ScoreWindow, production_score
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates, record, record_text
from service.harvest.suggestion import Occurrence, Suggestion
from service.state import StateStore
from tests.service.harvest.helpers import T0, batch, event

REFUSED = {"refused": True}


def _dumps(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _started(**changes: Any) -> Suggestion:
    fields: dict[str, Any] = {
        "event_id": "e-1", "timestamp": T0, "question": "Hostel ka fee — कब? \"q\"\n😀",
        "normalised": "hostel ka fee कब q", "reasons": ("refused", "novel"),
        "rankings": {"production": ("Geology#2", "x", "y")}, "language": "hi",
        "gap": 0.18467518262432125, "gap_dimension": "language", "scrubbed": True,
    }  # fmt: skip
    fields.update(changes)
    return Suggestion.first("c-0003e25eb37c2542", Occurrence(**fields))


def test_record_text_is_the_text_json_dumps_writes_of_the_record() -> None:
    config = HarvestConfig()
    merged = _started()
    merged.add(Occurrence("e-2", T0 + timedelta(minutes=3), "hostel fee when", "hostel fee when",
                          ("low_confidence",), {"production": ("z", "x")}, gap=0.5))  # fmt: skip
    for suggestion in (
        _started(),
        merged,  # count 2, its pool and reasons grown, gap 0.5
        _started(gap=1e-05),  # a gap json writes as 1e-05 (msgspec: 0.00001)
        _started(gap=0.0, reasons=()),  # priority 0.0, no primary reason
        _started(question="broken \ud800 text"),  # msgspec refuses it: json.dumps writes it
    ):
        assert record_text(suggestion, config) == _dumps(record(suggestion, config))


def test_publish_json_leaves_a_decided_record_as_publish_does() -> None:
    store = StateStore.in_memory()
    sink, config = StateStoreCandidates(store), HarvestConfig()
    kept, other = _started(), _started(event_id="e-9")
    other.id = "c-other"
    sink.publish([record(kept, config)])
    sink.decide(kept.id, {"status": "rejected", "decided_at": "2026-12-04T00:00:00Z"})
    kept.count = 7  # changed after the decision: its record must stay the one decided on
    refused = sink.publish_json({sid: record_text(s, config) for sid, s in
                                 ((kept.id, kept), (other.id, other))})  # fmt: skip
    assert refused == [kept.id]
    stored = sink.get(kept.id)
    assert stored is not None and stored["count"] == 1
    assert sink.get(other.id) == json.loads(_dumps(record(other, config)))


def test_a_started_suggestion_is_keyed_as_eviction_keys_keys_it() -> None:
    # German is 1 of the gold set's 10 rows and most of the live events: a coverage gap
    config = HarvestConfig(max_suggestions=10, flush_interval_s=0.0, min_live_events=1)
    stage = HarvestStage(config, {"language": {"en": 9, "de": 1}})
    words = ["alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf"]
    notes = [REFUSED, {"acl_leaks": ["p"]}, {"refused": True, "acl_leaks": ["p"]},
             {"topic": "novel"}, REFUSED, {"under_refusal": True}, REFUSED]  # fmt: skip
    for extra in notes[2:]:
        extra["language"] = "de"
    stage.process(batch([event(f"e{i}", w, minute=i) for i, w in enumerate(words)], notes))
    stage.process(batch([event("e9", "alpha", minute=9)], [REFUSED]))  # alpha changed
    assert set(stage._order) == set(stage.suggestions) - {stage._exact["alpha"]}
    assert {s.gap > 0 for s in stage.suggestions.values()} == {True, False}
    for sid, key in stage._order.items():
        assert key == eviction_keys([stage.suggestions[sid]], config)[0]


def test_after_each_eviction_the_exact_texts_are_those_of_suggestions_held_or_decided() -> None:
    stage = HarvestStage(HarvestConfig(max_suggestions=10, flush_interval_s=0.0))
    words = [f"question number {w}" for w in
             ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
              "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen")]  # fmt: skip
    minute = 0
    for round_ in range(4):
        events, notes = [], []
        for i, text in enumerate(words):
            minute += 1
            # each round asks four of them again (their count grows) and a variant
            if round_ and i % 4:
                text = f"{text} please {round_}"
            events.append(event(f"r{round_}-{i}", text, minute=minute))
            notes.append(REFUSED)
        stage.process(batch(events, notes))
        if round_:
            stage.decided(next(iter(stage.suggestions)))
        held, decided = stage.suggestions, stage._decided
        assert stage.pending_observations()["evicted"] > 0
        assert {sid for sid in stage._exact.values() if sid not in held and sid not in decided
                } == set()  # fmt: skip
        # and every suggestion held is still found by its own text
        assert all(stage._exact.get(s.normalised) == sid for sid, s in held.items())


def _scored(event_id: str, scores: list[float | None], retriever: str | None) -> QueryLogEvent:
    results = [{"id": f"p{i}", "rank": i + 1, **({"score": s} if s is not None else {})}
               for i, s in enumerate(scores)]  # fmt: skip
    retrieval: dict[str, Any] = {"results": results}
    if retriever is not None:
        retrieval["retriever"] = retriever
    return QueryLogEvent.model_validate({"event_id": event_id, "timestamp": T0.isoformat(),
                                         "question": "q?", "retrieval": retrieval})  # fmt: skip


def test_lows_are_production_score_then_is_low_for_each_event_in_order() -> None:
    events = [event("no-retrieval", "q?", retrieval=False), _scored("none", [None, None], "a")]
    for i in range(60):  # three retrievers (one unnamed: "production"), scores in a cycle
        name = ("a", "b", None)[i % 3]
        events.append(_scored(f"e{i}", [float((7 * i) % 11), float(i % 5), None], name))
    plain, batched = ScoreWindow(size=8, min_count=5), ScoreWindow(size=8, min_count=5)
    want = []
    for item in events:
        scored = production_score(item)
        want.append(scored is not None and (
            scored[1] is None or plain.is_low(scored[0], scored[1], 0.25)))  # fmt: skip
    got = batched.lows(events, 0.25)
    assert got == want and 3 < sum(got) < len(got) - 3  # some low, most not
    assert batched.state() == plain.state()
