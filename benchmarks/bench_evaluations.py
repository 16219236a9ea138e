"""Benchmark: what emitting verdicts as ``gen_ai.evaluation.result`` events costs the live path
(:class:`service.traces.evaluations.EvaluationEmitter`), one core.

Batches of 500 traced events with analytics annotations, three cases: nothing flagged (the
stage only reads annotations), every event refused (one record each) and every event refused
and out of scope (two each). The emitter writes through the OpenTelemetry SDK as in serve
(``LoggerProvider`` + ``BatchLogRecordProcessor``) to an exporter that drops what it is given,
so the figure is goldwatch's side and the SDK's queueing, not the network. The time includes
the final flush (the processor's export thread shares the core). Columns: events, records,
µs per event (best of ``repeat`` runs). Usage: ``python -m benchmarks.bench_evaluations``.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter

from service.events import QueryLogEvent
from service.pipeline import Batch
from service.traces.evaluations import EvaluationEmitter, log_record_emitter

T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
BATCH = 500


class _Drop(LogRecordExporter):  # type: ignore[misc]
    """Counts what it is given and sends nothing."""

    def __init__(self) -> None:
        self.records = 0

    def export(self, batch: Sequence[Any]) -> Any:
        from opentelemetry.sdk._logs.export import LogRecordExportResult

        self.records += len(batch)
        return LogRecordExportResult.SUCCESS

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is held."""
        return True


def _batches(n: int, notes: dict[str, Any]) -> list[Batch]:
    events = [
        QueryLogEvent(event_id=f"e-{i}", timestamp=T0 + timedelta(seconds=i), question="q",
                      trace_id=f"{i + 1:032x}")
        for i in range(n)
    ]  # fmt: skip
    out = []
    for start in range(0, n, BATCH):
        batch = Batch.of(events[start : start + BATCH], "bench")
        for target in batch.annotations:
            target.update(notes)
        out.append(batch)
    return out


def run(n: int, notes: dict[str, Any]) -> tuple[int, float]:
    """Emit the verdicts of ``n`` events; return (records exported, seconds)."""
    batches = _batches(n, notes)
    exporter = _Drop()
    provider = LoggerProvider()
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter, max_queue_size=n * 2 + 1))
    emitter = EvaluationEmitter(log_record_emitter(provider.get_logger("bench")), 0.5)
    started = time.perf_counter()
    for batch in batches:
        emitter.process(batch)
    provider.force_flush()
    elapsed = time.perf_counter() - started
    provider.shutdown()
    return exporter.records, elapsed


CASES = {
    "none flagged": {"refused": False, "out_of_scope": False},
    "refused": {"refused": True, "out_of_scope": False},
    "refused+oos": {"refused": True, "out_of_scope": True, "scope_calibrated": True,
                    "scope_score": 0.1, "scope_known": None},
}  # fmt: skip


def main(n: int = 20_000, repeat: int = 3) -> None:
    print(f"{'case':<14}{'events':>8}{'records':>9}{'µs/event':>10}")
    for name, notes in CASES.items():
        results = [run(n, notes) for _ in range(repeat)]
        records = results[0][0]
        best = min(seconds for _, seconds in results)
        print(f"{name:<14}{n:>8}{records:>9}{best / n * 1e6:>10.2f}")


if __name__ == "__main__":
    main()
