"""The optional capabilities of a source (``consumers.base``) are declared protocols, checked
with ``isinstance``: which source has which, and that the trace source wrapping another one
exposes each with the loop's own fallback when the wrapped source lacks it."""

from __future__ import annotations

from pathlib import Path

from consumers.base import (
    Assigned,
    ExplainsNotReady,
    Finite,
    HoldsDeadLetters,
    MarksFailure,
    SyncsDeadLetters,
    TracksTopicIds,
    WritesDeadLetterFile,
)
from consumers.file_source import FileSource
from consumers.trace_source import TraceSource
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
        assert _has(source) == {"Finite", "SyncsDeadLetters", "WritesDeadLetterFile"}
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
