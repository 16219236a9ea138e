"""Throughput of the OTLP trace path against the same events sent as goldwatch JSON (issue 20).

Both sides run ``consumers.loop.replay`` (the poll loop, decoding, the pipeline with analytics
off, SQLite checkpoints) on one thread over the same traces, held in memory so no broker or
disk read is timed on either side:

* traces: the Collector's ``kafka`` exporter messages (``ExportTraceServiceRequest`` protobuf;
  per trace its non-root spans in one message and its root in a later one, in groups of 50
  traces), read through :class:`~consumers.trace_source.TraceSource`: protobuf decoding,
  assembly by trace id, mapping to the event, the event's JSON, its decoding.
* JSON: the events those traces map to, as canonical goldwatch JSON, one message each.

The traces come from the OpenTelemetry SDK (in-memory exporter) in the four shapes of the
tests (OpenInference, GenAI current and pre-1.37, OpenLLMetry), 2-3 spans each. The trace
source's clock advances by the settle time at every poll, so each trace is handed out one poll
after its root arrived (no waiting is timed). Target: traces/s >= 0.5 x events/s.

Run: ``python -m benchmarks.bench_traces [--traces 20000]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.loop import Report, make_decoder, replay
from consumers.trace_source import TraceSource
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.state import StateStore
from service.traces.assembly import AssemblyLimits, TraceAssembler
from service.traces.mapping import TraceMapping, trace_to_event
from service.traces.otlp import decode_protobuf
from tests.service.api.test_traces_api import (
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

CONFIG = PipelineConfig(max_batch_size=500, max_batch_wait_ms=0, commit_interval_s=1.0,
                        dedup_window=100_000)  # fmt: skip
LIMITS = AssemblyLimits(settle_s=1.0, timeout_s=60.0, max_open_traces=100_000)
GROUP = 50


class MemorySource:
    """Messages from a list, ``max_records`` at a time; dead letters kept in memory."""

    name = "kafka"

    def __init__(self, messages: Sequence[RawMessage]) -> None:
        self.messages, self.at = list(messages), 0
        self.dead: list[DeadLetter] = []

    @property
    def at_eof(self) -> bool:
        return self.at >= len(self.messages)

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        batch = self.messages[self.at : self.at + max_records]
        self.at += len(batch)
        return batch

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        self.dead.extend(letters)

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        pass

    def status(self) -> dict[str, Any]:
        return {}

    def ready(self) -> bool:
        return True

    def close(self) -> None:
        pass


class StepClock:
    """Advances by ``step`` seconds at each call of :meth:`tick` (one per poll)."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        return self.now


class TickingSource(TraceSource):
    """A trace source whose clock moves one settle time per poll."""

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        self.clock.now += self.clock.step  # type: ignore[attr-defined]
        return super().poll(max_records, timeout_ms)


def build(n: int) -> tuple[list[RawMessage], list[RawMessage]]:
    """(OTLP messages as the Collector writes them, the same traces' events as JSON)."""
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    shapes = (_openinference, _genai, _genai_old, _openllmetry)
    otlp: list[bytes] = []
    events: list[bytes] = []
    mapping = TraceMapping()
    for start in range(0, n, GROUP):
        roots = []
        for i in range(start, min(start + GROUP, n)):
            shapes[i % 4](tracer)
            spans = list(memory.get_finished_spans())
            memory.clear()
            otlp.append(encode_spans([s for s in spans if s.parent]).SerializeToString())
            roots.append(encode_spans([s for s in spans if not s.parent]).SerializeToString())
            built = trace_to_event(decode_protobuf(otlp[-1]) + decode_protobuf(roots[-1]), mapping)
            events.append(built.event.model_dump_json().encode())
        otlp += roots
    provider.shutdown()

    def messages(values: list[bytes]) -> list[RawMessage]:
        return [RawMessage(v, Origin("otlp_spans", 0, i)) for i, v in enumerate(values)]

    return messages(otlp), messages(events)


def timed(source: Any, workdir: Path) -> tuple[float, Report]:
    state = StateStore.open(workdir / f"{uuid.uuid4().hex[:6]}.sqlite")
    pipeline = default_pipeline(CONFIG, pseudonymise_ids=False)  # analytics off
    started = time.perf_counter()
    decode = getattr(source, "wrap_decoder", lambda d: d)(make_decoder())
    report = replay(source, pipeline, state=state, config=CONFIG, decode=decode)
    seconds = time.perf_counter() - started
    state.close()
    return seconds, report


def run(n: int) -> list[tuple[str, int, float]]:
    """Rows (what, events processed, seconds): JSON first, then traces."""
    otlp, events = build(n)
    with tempfile.TemporaryDirectory(prefix="gw-bench-traces-") as tmp:
        json_s, json_report = timed(MemorySource(events), Path(tmp))
        source = TickingSource(MemorySource(otlp), TraceAssembler(LIMITS), TraceMapping(),
                               "otlp_proto", clock=StepClock(LIMITS.settle_s))  # fmt: skip
        trace_s, trace_report = timed(source, Path(tmp))
    assert json_report.processed == trace_report.processed == n, (json_report, trace_report)
    return [("goldwatch JSON events (reference)", n, json_s),
            ("OTLP protobuf traces (2 messages/trace)", n, trace_s)]  # fmt: skip


def render(rows: Sequence[tuple[str, int, float]]) -> str:
    lines = [f"{'what':42} {'events':>7} {'seconds':>8} {'per s':>9} {'ratio':>6}"]
    base = rows[0][1] / rows[0][2]
    for what, n, seconds in rows:
        lines.append(f"{what:42} {n:7d} {seconds:8.2f} {n / seconds:9,.0f} "
                     f"{n / seconds / base:6.2f}")  # fmt: skip
    lines.append("ratio = per second / the JSON reference (same traces, same run); target >= 0.5")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    args = parser.parse_args(argv)
    print(render(run(args.traces)))


if __name__ == "__main__":
    main()
