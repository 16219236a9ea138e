"""Trace ingest's dead letters and retries count in the totals users watch (trial findings 7
and 8): a trace that gives no event is in ``/v1/status`` ``totals.dead_lettered`` and
``goldwatch_events_dead_lettered_total`` with its reason, exactly once across a crash; a
trace sent again after it was assembled is a duplicate, also after a restart.

Same harness as ``test_trace_durability`` (the SDK's OpenInference trace, the test's
clocks, a crash = the state file closed without a flush).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from service.api.trace_ingest import EMITTED_PREFIX, Backpressure
from service.runtime.process import IngestUnavailable
from service.state import StateError, StateStore
from service.traces.otlp import InvalidSpan, UnreadableLetter
from service.traces.spans import Span
from tests.service.api.test_trace_durability import (
    SETTLE_S,
    Clocks,
    Process,
    _expected_event,
)
from tests.service.api.test_trace_durability import traces as traces_fixture

traces = traces_fixture  # the fixture, under its name

Traces = list[tuple[str, list[Span], list[Span]]]


def _dead(process: Process, reason: str) -> float:
    return process.metric("goldwatch_events_dead_lettered_total", source="http", reason=reason)


def _fill_disk(store: StateStore, monkeypatch: pytest.MonkeyPatch) -> Callable[..., int]:
    """Make ``store.checkpoint`` fail as on a full disk; return the real one (to put back)."""
    real = store.checkpoint

    def full(updates: Any) -> None:
        raise StateError(f"cannot write state file {store.label}: the disk is full")

    monkeypatch.setattr(store, "checkpoint", full)
    return real


def test_a_trace_without_a_question_is_a_dead_letter_in_the_totals_once(
    tmp_path: Path, traces: Traces
) -> None:
    clocks = Clocks()
    (a, a_kids, a_root), (b, b_kids, b_root), _ = traces
    # trace b's root without its question (no input.value; its children carry none either)
    bare = replace(b_root[0], attributes={k: v for k, v in b_root[0].attributes.items()
                                          if k != "input.value"})  # fmt: skip
    bare_kids = [replace(s, attributes={}) for s in b_kids]
    first = Process(tmp_path, clocks)
    first.ingest.receive(a_kids + a_root + bare_kids + [bare])
    clocks.advance(SETTLE_S)
    assert first.ingest.tick() == 1
    assert first.capture.events == [_expected_event(a)]
    totals = first.runtime.engine.totals
    assert (totals.consumed, totals.processed, totals.dead_lettered) == (
        2, 1, {"missing_field": 1},
    )  # fmt: skip
    assert _dead(first, "missing_field") == 1
    assert [row["reason"] for row in first.dead_letters(tmp_path)] == ["missing_field"]
    assert first.pending() == []
    first.crash()
    second = Process(tmp_path, clocks)  # checkpointed with the deletion of its spans
    assert second.runtime.engine.totals.dead_lettered == {"missing_field": 1}
    assert second.runtime.engine.totals.consumed == 2
    second.crash()


def test_a_full_assembler_refuses_at_receipt_and_evictions_at_restore_count(
    tmp_path: Path, traces: Traces
) -> None:
    """At receipt a full assembler refuses the request (429: nothing kept, nothing counted,
    no dead letter); at restore with ``max_open_traces`` lowered, the evicted trace is a
    dead letter counted in the checkpoint that deletes its spans, once across a crash."""
    clocks = Clocks()
    (a, a_kids, _), (b, b_kids, _), (c, c_kids, _) = traces
    first = Process(tmp_path, clocks, max_open=2)
    first.ingest.receive(a_kids)
    first.ingest.receive(b_kids)
    with pytest.raises(Backpressure):
        first.ingest.receive(c_kids)  # would evict a
    assert first.runtime.engine.totals.dead_lettered == {}
    assert first.runtime.engine.totals.consumed == 0
    assert first.dead_letters(tmp_path) == []
    assert {key.split("/")[2] for key in first.pending()} == {a, b}
    first.crash()
    second = Process(tmp_path, clocks, max_open=1)  # a (the oldest) evicted at restore
    assert second.runtime.engine.totals.dead_lettered == {"evicted": 1}
    assert second.runtime.engine.totals.consumed == 1
    assert _dead(second, "evicted") == 1
    second.crash()
    third = Process(tmp_path, clocks, max_open=1)
    assert third.runtime.engine.totals.dead_lettered == {"evicted": 1}
    assert [row["reason"] for row in third.dead_letters(tmp_path)] == ["evicted"]
    third.crash()


def test_a_retry_within_the_settle_time_is_kept_once(tmp_path: Path, traces: Traces) -> None:
    clocks = Clocks()
    (a, a_kids, a_root), _, _ = traces
    process = Process(tmp_path, clocks)
    process.ingest.receive(a_kids + a_root)
    again = process.ingest.receive(a_kids + a_root)  # the exporter's retry, before settling
    assert {r.reason for r in again} == {"repeated"}
    clocks.advance(SETTLE_S)
    assert process.ingest.tick() == 1
    assert process.capture.events == [_expected_event(a)]  # each passage once
    assert process.metric("goldwatch_trace_spans_repeated_total", reason="repeated") == 3
    totals = process.runtime.engine.totals
    assert (totals.consumed, totals.processed, totals.duplicates) == (1, 1, 0)
    assert process.dead_letters(tmp_path) == []
    process.crash()


def test_a_retry_after_assembly_is_a_duplicate_also_after_a_restart(
    tmp_path: Path, traces: Traces
) -> None:
    clocks = Clocks()
    (a, a_kids, a_root), (b, b_kids, b_root), _ = traces
    first = Process(tmp_path, clocks)
    first.ingest.receive(a_kids + a_root)
    clocks.advance(SETTLE_S)
    assert first.ingest.tick() == 1
    assert first.runtime.state.keys(EMITTED_PREFIX) == [EMITTED_PREFIX + a]
    first.ingest.receive(a_kids + a_root)  # retried 2 s after it was assembled
    assert first.runtime.engine.totals.duplicates == 1
    assert first.dead_letters(tmp_path) == []
    first.crash()

    second = Process(tmp_path, clocks)
    second.ingest.receive(a_root)  # once more, after the restart
    assert second.runtime.engine.totals.duplicates == 2
    late = replace(a_kids[0], span_id="0f" * 8)  # a span of trace a never seen
    assert [r.reason for r in second.ingest.receive([late])] == ["late_span"]
    clocks.advance(SETTLE_S)
    assert second.ingest.tick() == 0 and second.capture.events == []
    totals = second.runtime.engine.totals
    assert (totals.consumed, totals.processed, totals.duplicates) == (4, 1, 2)
    assert totals.dead_lettered == {"late_span": 1}
    second.crash()


def test_remembered_span_ids_are_bounded(tmp_path: Path, traces: Traces) -> None:
    """``remember_span_ids`` 3: each trace has 3 spans, so only the last one handed out is
    remembered; the older one's key leaves the state file, and its retry is late."""
    clocks = Clocks()
    (a, a_kids, a_root), (b, b_kids, b_root), _ = traces
    process = Process(tmp_path, clocks, remember_span_ids=3)
    process.ingest.receive(a_kids + a_root)
    clocks.advance(SETTLE_S)
    process.ingest.tick()
    process.ingest.receive(b_kids + b_root)
    clocks.advance(SETTLE_S)
    process.ingest.tick()
    assert process.runtime.state.keys(EMITTED_PREFIX) == [EMITTED_PREFIX + b]
    assert {r.reason for r in process.ingest.receive(b_root)} == {"duplicate"}
    assert {r.reason for r in process.ingest.receive(a_root)} == {"late_span"}
    process.crash()


def test_a_refused_request_keeps_nothing_and_its_retry_writes_its_letter_once(
    tmp_path: Path, traces: Traces, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request with a dead letter (an attribute over max_attribute_bytes, 65,536) whose
    checkpoint fails: nothing of it is held (the route's 503), its letter is on disk once; the
    retry stores the spans, does not write the letter again, and the letter counts once as
    dead-lettered (the refused try's count stays in memory and goes into the retry's
    checkpoint; the retry's repeat of the letter is a duplicate, as on ``/v1/events``)."""
    clocks = Clocks()
    (a, a_kids, a_root), _, _ = traces
    process = Process(tmp_path, clocks)
    big = replace(a_kids[0], attributes={**a_kids[0].attributes, "blob": "x" * 70_000})
    request = [big, *a_kids[1:], *a_root]
    store = process.runtime.state
    real = _fill_disk(store, monkeypatch)
    with pytest.raises(IngestUnavailable):
        process.ingest.receive(request)
    assert len(process.ingest.assembler) == 0
    assert process.pending() == []
    assert [row["reason"] for row in process.dead_letters(tmp_path)] == ["attribute_too_large"]
    assert process.metric("goldwatch_trace_spans_rejected_total",
                          reason="attribute_too_large") == 0  # fmt: skip
    monkeypatch.setattr(store, "checkpoint", real)
    rejected = process.ingest.receive(request)
    assert [r.reason for r in rejected] == ["attribute_too_large"]
    assert len(process.ingest.assembler) == 1
    assert len(process.pending()) == 1
    assert [row["reason"] for row in process.dead_letters(tmp_path)] == ["attribute_too_large"]
    totals = process.runtime.engine.totals
    assert (totals.dead_lettered, totals.duplicates) == ({"attribute_too_large": 1}, 1)
    process.crash()
    second = Process(tmp_path, clocks)  # the retry's checkpoint holds the count and the spans
    assert second.runtime.engine.totals.dead_lettered == {"attribute_too_large": 1}
    assert len(second.ingest.assembler) == 1
    clocks.advance(SETTLE_S)
    assert second.ingest.tick() == 1
    assert second.capture.events == [_expected_event(a)]
    second.crash()


def test_an_unreadable_span_is_counted_in_the_checkpoint_that_stores_its_requests_spans(
    tmp_path: Path, traces: Traces, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A request's unreadable span (OTLP partial success: the route answers 200 for the rest)
    is written and counted in the one checkpoint that stores the request's readable spans:
    when that checkpoint fails nothing is held and the letter is on disk once; the retry
    holds the spans and counts the letter once; a crash before the trace settles keeps both."""
    clocks = Clocks()
    (a, a_kids, a_root), _, _ = traces
    where = "resourceSpans[0].scopeSpans[0].spans[3].traceId"
    unreadable = InvalidSpan("invalid_value", f"{where}: 4 hex characters, expected 32")
    letter = UnreadableLetter("invalid_value", unreadable.detail, b'{"resourceSpans": []}',
                              {"invalid_value": 1})  # fmt: skip
    process = Process(tmp_path, clocks)
    store = process.runtime.state
    real = _fill_disk(store, monkeypatch)
    with pytest.raises(IngestUnavailable):
        process.ingest.receive(a_kids + a_root, [unreadable], [letter])
    assert len(process.ingest.assembler) == 0 and process.pending() == []
    assert [row["reason"] for row in process.dead_letters(tmp_path)] == ["invalid_value"]
    monkeypatch.setattr(store, "checkpoint", real)
    assert process.ingest.receive(a_kids + a_root, [unreadable], [letter]) == []  # the retry
    assert [row["reason"] for row in process.dead_letters(tmp_path)] == ["invalid_value"]
    assert _dead(process, "invalid_value") == 1
    process.crash()  # before the trace settled
    second = Process(tmp_path, clocks)  # the retry's checkpoint: its spans and the count
    totals = second.runtime.engine.totals
    # the letter once; its repeat by the retry a duplicate, as on /v1/events
    assert (totals.consumed, totals.duplicates, totals.dead_lettered) == (
        2, 1, {"invalid_value": 1},
    )  # fmt: skip
    assert len(second.ingest.assembler) == 1
    clocks.advance(SETTLE_S)
    assert second.ingest.tick() == 1
    assert second.capture.events == [_expected_event(a)]
    totals = second.runtime.engine.totals
    assert totals.consumed == totals.processed + totals.duplicates + 1 == 3
    second.crash()
