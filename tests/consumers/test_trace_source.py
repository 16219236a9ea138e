"""TraceSource over a fake message source: assembly across messages, dead letters, and
commits held below the oldest open trace."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.engine import Engine
from consumers.loop import make_decoder
from consumers.trace_source import TraceSource
from service.events import QueryLogEvent, Retrieval
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.state import StateStore
from service.telemetry import build_metrics
from service.traces.assembly import AssemblyLimits, TraceAssembler
from service.traces.mapping import TraceMapping
from service.traces.otlp import encode_json
from service.traces.spans import Span, SpanEvent

A, B, C = "a" * 32, "b" * 32, "c" * 32
T0 = 1_795_946_400_000_000_000


class FakeSource:
    name = "kafka"

    def __init__(self, batches: list[list[RawMessage]]) -> None:
        self.batches = batches
        self.dead: list[DeadLetter] = []
        self.commits: list[list[tuple[str | None, int | None, int | None]]] = []

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        return self.batches.pop(0) if self.batches else []

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        self.dead.extend(letters)

    def commit(self, messages: Sequence[RawMessage]) -> None:
        self.commits.append(
            [(m.origin.topic, m.origin.partition, m.origin.offset) for m in messages]
        )

    def status(self) -> dict[str, Any]:
        return {"kind": "fake"}

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        pass


def root(trace: str, question: str) -> Span:
    return Span(trace, "0" * 15 + "1", None, "chain", T0, T0 + 9, {"input.value": question})


def child(trace: str, n: int) -> Span:
    return Span(trace, f"{n + 1:016x}", "0" * 15 + "1", "step", T0 + 1, T0 + 2)


def msg(offset: int, spans: list[Span] | None, partition: int = 0) -> RawMessage:
    value = None if spans is None else encode_json(spans)
    return RawMessage(value, Origin(topic="otlp_spans", partition=partition, offset=offset))


class Clock:
    now = 0.0

    def __call__(self) -> float:
        return self.now


def _source(batches: list[list[RawMessage]]) -> tuple[TraceSource, FakeSource, Clock]:
    inner, clock = FakeSource(batches), Clock()
    limits = AssemblyLimits(settle_s=1.0, timeout_s=10.0)
    return TraceSource(inner, TraceAssembler(limits), TraceMapping(), "otlp", clock), inner, clock


def test_spans_over_several_messages_become_one_event_per_trace() -> None:
    source, inner, clock = _source(
        [
            [
                msg(0, [child(A, 1), child(A, 2)]),
                msg(1, [root(B, "B?"), child(B, 1)]),
                msg(2, [root(A, "A?")]),
            ]
        ]  # fmt: skip
    )
    assert source.poll(100, 0) == []  # every trace still settling
    source.commit([])
    assert inner.commits == [[]]  # nothing below the open traces' first messages (0 and 1)
    clock.now = 1.0
    events = [QueryLogEvent.model_validate_json(m.value or b"") for m in source.poll(100, 0)]
    assert sorted((e.event_id, e.question) for e in events) == [(A, "A?"), (B, "B?")]
    source.commit([])
    assert inner.commits[-1] == [("otlp_spans", 0, 2)]
    assert source.counts["traces"] == {"settled": 2}
    assert source.counts["spans"] == {"received": 5}


def test_commit_stops_below_the_oldest_open_trace_per_partition() -> None:
    source, inner, clock = _source(
        [
            [
                msg(0, [root(A, "A?")]),
                msg(1, [Span(C, "2" * 16, "f" * 16, "orphan", T0, T0 + 1, {"input.value": "C?"})]),
                msg(2, [root(B, "B?")]),
                msg(7, [root(B, "x")], partition=1),
            ]
        ]  # fmt: skip
    )
    source.poll(100, 0)
    clock.now = 1.0
    assert len(source.poll(100, 0)) == 2  # A and B settled; C (no root) stays open
    source.commit([])
    assert inner.commits[-1] == [("otlp_spans", 0, 0), ("otlp_spans", 1, 7)]
    clock.now = 10.0  # C times out: handed out without a root, its message committed
    (late,) = source.poll(100, 0)
    assert late.origin.file == f"trace:{C}"
    source.commit([])
    assert inner.commits[-1] == [("otlp_spans", 0, 2)]
    assert source.counts["traces"] == {"settled": 2, "timeout": 1, "without_root": 1}


def _decode(source: TraceSource, messages: list[RawMessage]) -> tuple[list[str], list[Any]]:
    decoded, dead = source.wrap_decoder(make_decoder())(messages)
    return [event.event_id for _, event in decoded], [
        (d.reason, d.message.origin.offset) for d in dead
    ]


def test_bad_messages_and_traces_without_a_question_are_dead_lettered() -> None:
    nameless = Span(C, "0" * 15 + "1", None, "db", T0, T0 + 1, {"db.system": "x"})
    source, inner, clock = _source(
        [[msg(0, None), RawMessage(b"\x0a\xff", Origin("otlp_spans", 0, 1)),
          RawMessage(b'{"resourceSpans": 1}', Origin("otlp_spans", 0, 2)), msg(3, [nameless]),
          msg(4, [root(A, "A?")])]]
    )  # fmt: skip
    assert _decode(source, source.poll(100, 0)) == (
        [], [("tombstone", 0), ("not_protobuf", 1), ("wrong_type", 2)]
    )  # fmt: skip
    clock.now = 1.0
    assert _decode(source, source.poll(100, 0)) == ([A], [("missing_field", None)])
    assert source.counts["undecodable"] == {"not_protobuf": 1, "wrong_type": 1}
    assert source.counts["unmapped"] == {"missing_field": 1}
    source.commit([])
    assert inner.commits[-1] == [("otlp_spans", 0, 4)]


def test_restart_rebuilds_open_traces_without_recounting() -> None:
    """kill -9 after a checkpoint: the group resumes at the committed offset (0, below the
    open trace B), so messages 0-3 are read again: B is rebuilt and completed with its root
    from message 4, A (closed before) and the bad message 2 (counted before) are not again."""
    bad = RawMessage(b"\x0a\xff", Origin("otlp_spans", 0, 2))
    stream = [msg(0, [child(B, 1)]), msg(1, [root(A, "A?")]), bad, msg(3, [child(A, 2)]),
              msg(4, [root(B, "B?")])]  # fmt: skip
    first, _, clock = _source([stream[:3]])
    assert _decode(first, first.poll(100, 0)) == ([], [("not_protobuf", 2)])
    clock.now = 1.0
    assert _decode(first, first.poll(100, 0)) == ([A], [])
    first.commit([])
    checkpoint = first.position_after([])
    assert checkpoint == {"read": {"otlp_spans/0": 2}, "closed": [A]}

    second, inner, clock = _source([stream[:4], stream[4:]])  # re-read from offset 0
    second.restore(checkpoint)
    assert _decode(second, second.poll(100, 0)) == ([], [("late_span", 3)])  # 3 is new
    assert _decode(second, second.poll(100, 0)) == ([], [])
    clock.now = 1.0
    assert _decode(second, second.poll(100, 0)) == ([B], [])
    assert second.counts["rejected"] == {"late_span": 1}


def test_dead_letters_out_of_offset_order_are_not_taken_for_redeliveries() -> None:
    """A rejection at offset 5, then a late span from the earlier offset 3: the engine's
    redelivery check (by Kafka offset) must see none of them (the stand-ins carry no offset),
    while the dead letters keep their origin for the dead-letter topic."""
    big = Span(
        A, "1" * 16, None, "r", T0, T0 + 1, {"input.value": "A?", "x": "y" * 100, "z": "w" * 100}
    )
    source, _, clock = _source([[msg(5, [big])], [], [msg(3, [child(A, 2)])]])
    source.assembler = TraceAssembler(AssemblyLimits(settle_s=1, max_attribute_bytes=64))
    stand_ins = source.poll(100, 0)
    assert {m.origin.topic for m in stand_ins} == {None}
    clock.now = 1.0
    stand_ins += source.poll(100, 0)  # A settles
    stand_ins += source.poll(100, 0)
    assert _decode(source, stand_ins) == ([A], [("attribute_too_large", 5), ("late_span", 3)])


def test_a_revoked_partition_forgets_its_open_traces() -> None:
    source, inner, clock = _source(
        [
            [msg(0, [child(A, 1)]), msg(4, [child(B, 1)], partition=1)],
            [],
            [msg(5, [root(B, "B?")], partition=1)],
        ]
    )
    owned = {("otlp_spans", 0), ("otlp_spans", 1)}
    inner.assignment = lambda: set(owned)  # type: ignore[attr-defined]
    source.poll(100, 0)
    assert len(source.assembler) == 2
    owned.discard(("otlp_spans", 0))  # a rebalance gives partition 0 to another replica
    source.poll(100, 0)
    assert len(source.assembler) == 1 and source.counts["traces"] == {"revoked": 1}
    source.poll(100, 0)
    clock.now = 1.0
    assert [m.origin.file for m in source.poll(100, 0)] == [f"trace:{B}"]
    source.commit([])
    assert inner.commits[-1] == [("otlp_spans", 1, 5)]  # nothing for the revoked partition


def test_spans_sent_again_are_not_dead_letters() -> None:
    """The Collector retrying a message: A's child again while A is open is kept once; A's
    root again after A was handed out is a duplicate; neither is a dead letter (before: a
    ``late_span``); a span of A never seen stays late."""
    stream = [msg(0, [child(A, 2)]), msg(1, [child(A, 2), root(A, "A?")])]
    later = [[msg(2, [root(A, "A?")])], [msg(3, [child(A, 3)])]]
    source, _, clock = _source([stream, [], *later])
    assert _decode(source, source.poll(100, 0)) == ([], [])
    clock.now = 1.0
    assert _decode(source, source.poll(100, 0)) == ([A], [])
    assert _decode(source, source.poll(100, 0)) == ([], [])
    assert _decode(source, source.poll(100, 0)) == ([], [("late_span", 3)])
    assert source.counts["repeated"] == {"repeated": 1, "duplicate": 1}
    assert source.counts["rejected"] == {"late_span": 1}


def test_one_unreadable_span_costs_only_itself() -> None:
    """A message of a good 2-span trace and one span whose trace id is 4 hex characters:
    the trace becomes its event, the bad span one ``invalid_value`` letter holding only it
    (the message used to be dead-lettered whole, the good trace lost)."""
    good = json.loads(encode_json([root(A, "A?"), child(A, 1)]))
    bad = json.loads(encode_json([child(B, 2)]))["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    bad["traceId"] = "abcd"
    good["resourceSpans"][0]["scopeSpans"][0]["spans"].append(bad)
    raw = RawMessage(json.dumps(good).encode(), Origin("otlp_spans", 0, 5))
    source, _, clock = _source([[raw]])
    decoded, dead = source.wrap_decoder(make_decoder())(source.poll(100, 0))
    assert (decoded, [(d.reason, d.message.origin.offset) for d in dead]) == (
        [], [("invalid_value", 5)]
    )  # fmt: skip
    letter = json.loads(dead[0].message.value or b"")  # the bad span alone
    assert [s["traceId"] for r in letter["resourceSpans"] for sc in r["scopeSpans"]
            for s in sc["spans"]] == ["abcd"]  # fmt: skip
    clock.now = 1.0  # the trace settles
    assert _decode(source, source.poll(100, 0)) == ([A], [])
    assert source.counts["spans"] == {"received": 3}
    assert source.counts["rejected"] == {"invalid_value": 1}
    assert not source.counts["undecodable"]


def test_documents_a_trace_carried_unread_count_once_for_the_event_kept() -> None:
    """Trial 13 (finding 3): an event ``gen_ai.retrieval.documents`` without that attribute
    (its variant C) gave no results and no count. Now ``retrieval.results: missing_field``
    is counted through the engine, once: the same trace read again by a restarted source
    (its closed traces not restored) is a duplicate of the dedup stage, adding none."""
    docs = SpanEvent("gen_ai.retrieval.documents", T0 + 2, {"documents": '[{"id": "p-1"}]'})
    retrieval = Span(A, "0" * 15 + "2", "0" * 15 + "1", "retrieval", T0 + 1, T0 + 3,
                     {"gen_ai.operation.name": "retrieval"}, (docs,))  # fmt: skip
    message = msg(0, [retrieval, root(A, "A?")])
    metrics = build_metrics(CollectorRegistry(), topics=["otlp_spans"])
    engine = Engine(default_pipeline(PipelineConfig()), StateStore.in_memory(), metrics,
                    make_decoder())  # fmt: skip
    for run in range(2):  # the second: a restart that reads the message again
        source, _, clock = _source([[message]])
        engine.decode = source.wrap_decoder(make_decoder())
        assert source.poll(100, 0) == []
        clock.now = 1.0
        outcome = engine.process(source.poll(100, 0), "kafka")
        assert (outcome.counts.processed, outcome.counts.duplicates) == (1 - run, run)
        if run == 0:
            assert outcome.batch is not None
            no_results = Retrieval(retriever="retrieval", latency_ms=2e-6, results=())
            assert outcome.batch.events[0].retrieval == no_results
        assert engine.totals.fields_dropped == {"retrieval.results: missing_field": 1}


def test_documents_off_a_retrieval_span_are_counted_and_logged_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Trial 51 (M1) on the Kafka path: OpenInference documents on a CHAIN span are not read;
    each such event counts ``retrieval.results: other_span_ignored`` through the engine, and
    the source logs the first such trace only. The same documents on a span without a kind
    are read (a retriever's)."""
    docs = {"retrieval.documents.0.document.id": "p-1",
            "retrieval.documents.0.document.score": 2.0}  # fmt: skip

    def trace(trace_id: str, kind: str | None) -> list[Span]:
        attrs = docs if kind is None else {"openinference.span.kind": kind, **docs}
        step = Span(trace_id, "0" * 15 + "2", "0" * 15 + "1", "search", T0 + 1, T0 + 3, attrs)
        return [step, root(trace_id, f"{trace_id[0]}?")]

    caplog.set_level(logging.WARNING, logger="consumers.trace_source")
    metrics = build_metrics(CollectorRegistry(), topics=["otlp_spans"])
    engine = Engine(default_pipeline(PipelineConfig()), StateStore.in_memory(), metrics,
                    make_decoder())  # fmt: skip
    source, _, clock = _source([[msg(0, trace(A, "CHAIN")), msg(1, trace(B, "CHAIN")),
                                 msg(2, trace(C, None))]])  # fmt: skip
    engine.decode = source.wrap_decoder(make_decoder())
    assert source.poll(100, 0) == []
    clock.now = 1.0
    outcome = engine.process(source.poll(100, 0), "kafka")
    assert outcome.batch is not None and outcome.counts.processed == 3
    by_id = {event.event_id: event.retrieval for event in outcome.batch.events}
    assert (by_id[A], by_id[B]) == (None, None)
    assert by_id[C] == Retrieval(retriever="search", latency_ms=2e-6,
                                 results=({"id": "p-1", "score": 2.0, "rank": 1},))  # fmt: skip
    assert engine.totals.fields_dropped == {"retrieval.results: other_span_ignored": 2}
    lines = [r.getMessage() for r in caplog.records if "not its retrieval span" in r.getMessage()]
    assert len(lines) == 1 and (A in lines[0]) != (B in lines[0]), lines
