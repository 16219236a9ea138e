"""The optional capabilities of a source (``consumers.base``) are declared protocols, checked
with ``isinstance``: which source has which, and that the trace source wrapping another one
exposes each with the loop's own fallback when the wrapped source lacks it."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from consumers.base import (
    Assigned,
    ExplainsNotReady,
    Finite,
    HoldsDeadLetters,
    MarksFailure,
    Origin,
    RawMessage,
    SyncsDeadLetters,
    TracksTopicIds,
    WritesDeadLetterFile,
)
from consumers.file_source import FileSource
from consumers.loop import Capabilities, replay
from consumers.trace_source import TraceSource
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.traces.assembly import AssemblyLimits, TraceAssembler
from service.traces.mapping import TraceMapping
from tests.consumers.test_trace_source import FakeSource

CAPABILITIES = (Assigned, ExplainsNotReady, Finite, HoldsDeadLetters, MarksFailure,
                SyncsDeadLetters, TracksTopicIds, WritesDeadLetterFile)  # fmt: skip


def _has(source: object) -> set[str]:
    return {cap.__name__ for cap in CAPABILITIES if isinstance(source, cap)}


def test_file_source_can_end_syncs_its_dead_letter_file_and_holds_none(tmp_path: Path) -> None:
    log = tmp_path / "queries.jsonl"
    log.write_text("")
    source = FileSource(log)
    try:
        assert _has(source) == {"ExplainsNotReady", "Finite", "SyncsDeadLetters",
                                "WritesDeadLetterFile"}  # fmt: skip
        assert source.dlq_path == tmp_path / "queries.jsonl.dlq.jsonl"
    finally:
        source.close()


def test_a_source_with_only_the_required_methods_has_no_capability() -> None:
    assert _has(FakeSource([])) == set()


def test_trace_source_forwards_with_the_loops_fallbacks() -> None:
    """Over a source that has none of the capabilities: it can end (at_eof True, as the loop
    assumes of a source that cannot say), tracks no topic id, gives no not-ready reason and
    holds no dead letter; its sync and failure mark do nothing."""
    limits = AssemblyLimits(settle_s=1.0, timeout_s=10.0)
    source = TraceSource(FakeSource([]), TraceAssembler(limits), TraceMapping(), "otlp")
    assert _has(source) == {"ExplainsNotReady", "Finite", "HoldsDeadLetters", "MarksFailure",
                            "SyncsDeadLetters", "TracksTopicIds"}  # fmt: skip
    assert source.at_eof is True
    assert source.topic_ids() == {}
    assert source.not_ready_reason() is None
    assert source.pending_dead_letters == 0
    source.sync_dead_letters()
    source.restart_topics({"otlp_spans"})
    source.mark_failed()


class _CountingSource(FakeSource):
    """A source with none of the optional capabilities that records every attribute looked
    up on it and not found (what a protocol ``isinstance`` check does for each member)."""

    def __init__(self, batches: list[list[RawMessage]]) -> None:
        super().__init__(batches)
        self.missing: Counter[str] = Counter()

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        self.missing[name] += 1
        raise AttributeError(name)


def _event(i: int) -> RawMessage:
    value = json.dumps({"event_id": f"e{i}", "timestamp": 1795946400 + i, "question": "q"})
    return RawMessage(value.encode(), Origin(topic="queries", partition=0, offset=i))


def _missing_lookups(batches: int) -> Counter[str]:
    source = _CountingSource([[_event(b * 2), _event(b * 2 + 1)] for b in range(batches)])
    report = replay(source, default_pipeline(PipelineConfig(), pseudonymise_ids=False),
                    config=PipelineConfig(max_batch_size=2))  # fmt: skip
    assert report.processed == 2 * batches
    return source.missing


def test_the_loop_checks_a_sources_capabilities_per_run_not_per_batch() -> None:
    """The capabilities are looked up when the loop starts (and once more as it detaches),
    however many batches it runs: each protocol check costs tens of µs, once or more per
    batch before. Same lookups for 1 batch as for 25."""
    once, many = _missing_lookups(1), _missing_lookups(25)
    # which member of a protocol is probed first varies (a set, hashed per process); that
    # some are probed at all shows the counting works
    assert once and many == once


def test_loop_capabilities_name_the_source_where_it_has_them(tmp_path: Path) -> None:
    log = tmp_path / "queries.jsonl"
    log.write_text("")
    source = FileSource(log)
    try:
        can = Capabilities.of(source)
        assert (can.holds, can.topic_ids) == (None, None)
        assert can.syncs is source and can.resumable is source and can.finite is source
    finally:
        source.close()
    none = Capabilities.of(FakeSource([]))
    assert (none.holds, none.syncs, none.resumable, none.finite, none.topic_ids) == (None,) * 5
