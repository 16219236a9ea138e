"""``fields_dropped`` counts the optional fields dropped from the events *kept* (trial 13,
finding 4): one event sent three times printed "1 processed, 2 duplicates" and "dropped (the
events kept): feedback.rating 3, retrieval.results 3". The decoder's drops now go with their
event, and the engine counts those of the events the pipeline kept, in replay, serve and
the Kafka path alike (one :class:`~consumers.engine.Engine`)."""

from __future__ import annotations

import json
from pathlib import Path

from prometheus_client import CollectorRegistry

from consumers.base import Origin, RawMessage
from consumers.engine import Engine
from consumers.loop import make_decoder
from service.demo import demo_path
from service.jobs.replay import render_text, run_replay
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.settings import load_settings
from service.state import StateStore
from service.telemetry import build_metrics

#: trial 13's t_dup/log.jsonl line: ``contexts`` holds a passage text (ignored: the results
#: are dropped, ``wrong_type``) and ``feedback.rating`` a word (dropped, ``wrong_type``)
LINE = {"id": "d-1", "ts": 1796400000000, "query": "What modern city did Khanbaliq become?",
        "contexts": ["some passage text"], "feedback": {"rating": "bad"}}  # fmt: skip
#: by hand: the one event kept lost these two fields, once each
ONCE = {"feedback.rating: wrong_type": 1, "retrieval.results: wrong_type": 1}


def _messages(line: dict[str, object], copies: int) -> list[RawMessage]:
    value = json.dumps(line).encode()
    return [RawMessage(value, Origin(file="log", line=i + 1)) for i in range(copies)]


def _engine(state: StateStore) -> Engine:
    metrics = build_metrics(CollectorRegistry(), topics=["queries"])
    engine = Engine(default_pipeline(PipelineConfig(dedup_window=100)), state, metrics,
                    make_decoder())  # fmt: skip
    engine.restore()
    return engine


def test_a_duplicate_in_the_batch_and_in_a_later_one_drops_no_field_again() -> None:
    engine = _engine(StateStore.in_memory())
    outcome = engine.process(_messages(LINE, 3), "file")
    assert (outcome.counts.processed, outcome.counts.duplicates) == (1, 2)
    assert engine.totals.fields_dropped == ONCE
    assert engine.metrics.fields_dropped() == ONCE  # the counter, as the totals
    engine.process(_messages(LINE, 2), "file")  # sent again later: duplicates only
    assert engine.totals.fields_dropped == ONCE
    assert engine.metrics.fields_dropped() == ONCE


def test_a_pseudonymised_id_still_counts_its_kept_event_once() -> None:
    """An ``event_id`` holding an e-mail address is replaced (the dedup stage keeps a copy
    of the event under its pseudonym): the drops follow the event by position."""
    engine = _engine(StateStore.in_memory())
    line = {**LINE, "id": "ivan@example.com"}
    other = {**LINE, "id": "d-2", "feedback": {"rating": 1.0}}  # kept, nothing dropped but
    engine.process([*_messages(line, 3), *_messages(other, 1)], "file")  # its contexts
    assert engine.totals.fields_dropped == {"feedback.rating: wrong_type": 1,
                                            "retrieval.results: wrong_type": 2}  # fmt: skip


def test_the_counted_drops_survive_a_restart_and_its_resend_adds_none(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    first = _engine(StateStore.open(path))
    first.process(_messages(LINE, 3), "file")
    first.checkpoint()
    first.state.close()
    second = _engine(StateStore.open(path))
    assert second.totals.fields_dropped == ONCE  # restored with the totals
    second.process(_messages(LINE, 3), "file")  # the dedup window was restored too
    assert second.totals.to_json()["fields_dropped"] == ONCE
    assert (second.totals.processed, second.totals.duplicates) == (1, 5)
    assert second.metrics.fields_dropped() == {}  # this process counted none
    second.state.close()


def test_replay_of_trial_13_t_dup_counts_the_kept_event_only(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text((json.dumps(LINE) + "\n") * 3, encoding="utf-8")
    settings = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    doc = run_replay(settings, log, tmp_path / "state.sqlite", tmp_path / "dlq.jsonl")
    assert (doc["processed"], doc["duplicates"]) == (1, 2)
    assert doc["dropped"] == ONCE
    assert ("dropped (the events kept): feedback.rating: wrong_type 1, "
            "retrieval.results: wrong_type 1") in render_text(doc).splitlines()  # fmt: skip
    log.write_text((json.dumps(LINE) + "\n") * 4, encoding="utf-8")  # one more line
    again = run_replay(settings, log, tmp_path / "state.sqlite", tmp_path / "dlq.jsonl")
    assert (again["processed"], again["duplicates"]) == (0, 1)  # resumed: the new line
    assert again["dropped"] == {}
