"""Throughput of the OTLP trace path against the same events sent as goldwatch JSON (issue 20).

Both sides run the service's poll loop (``consumers.loop.run`` with the engine, the pipeline
and the per-batch metrics export that ``build_live`` gives, SQLite checkpoints) on one thread
over the same traces, held in memory so no broker or disk read is timed on either side:

* traces: the Collector's ``kafka`` exporter messages (``ExportTraceServiceRequest`` protobuf;
  per trace its non-root spans in one message and its root in a later one, in groups of 50
  traces), read through :class:`~consumers.trace_source.TraceSource` as ``goldwatch serve``
  builds it (the corpus's content index; the engine's decoder wrapped by the source):
  protobuf decoding, assembly by trace id, mapping to the event.
* JSON: the events those traces map to, as canonical goldwatch JSON, one message each.

Two settings, each run on both sides:

* ``defaults``: the configuration a user runs (``load_settings`` defaults: analytics on, the
  PII, language, topic, refusal, out-of-scope, drift, harvest stages) with the gold set and
  corpus of ``benchmarks.bench_analytics`` (XQuAD + CLINC150 out-of-scope). This is what the
  issue's target ("assembled and processed", i.e. what serve does) is read on.
* ``analytics off``: ``analytics.enabled: false`` (dedup and counting only), the path where
  the trace decoding's own cost shows most.

Each pair runs 3 times, interleaved; the table gives the median wall and CPU seconds of each
row, the median of the 3 ratios (traces per CPU second over JSON events per CPU second of the
same repetition: "on one core", and steadier than wall time on a shared machine), and the
pipeline batches each side ran: each trace takes two messages here, and the trace source
asks for as many messages per event as traces have taken, so its batches hold about 500
traces as the JSON side's hold 500 events (with 500 messages a poll they held 250, and the
default analytics cost about 35 ms of CPU a batch on top of their cost per event). As
``run_replay`` does, the start-up heap is frozen before each timed run.

The traces come from the OpenTelemetry SDK (in-memory exporter) in the four shapes of the
tests (OpenInference, GenAI current and pre-1.37, OpenLLMetry), 2-3 spans each, with their
four fixed questions (so caches keyed by question text help both sides alike). The trace
source's clock advances by the settle time at every poll, so each trace is handed out one
poll after its root arrived (no waiting is timed). Target: traces/s >= 0.5 x events/s.

Run: ``python -m benchmarks.bench_traces [--traces 20000] [--repeat 3]``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry

from benchmarks.bench_analytics import settings_for, write_inputs
from consumers.base import DeadLetter, Origin, RawMessage
from consumers.engine import Engine
from consumers.loop import Report, make_decoder
from consumers.loop import run as run_loop
from consumers.trace_source import TraceSource
from service.runtime.live import build_live
from service.runtime.memory import freeze_heap
from service.settings import Settings
from service.state import StateStore
from service.telemetry import build_metrics
from service.traces.assembly import AssemblyLimits, TraceAssembler
from service.traces.mapping import TraceMapping, content_index, trace_to_event
from service.traces.otlp import decode_protobuf
from tests.service.api.test_traces_api import (
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

LIMITS = AssemblyLimits(settle_s=1.0, timeout_s=60.0, max_open_traces=100_000)
GROUP = 50
SIDES = ("goldwatch JSON events (reference)", "OTLP protobuf traces (2 messages each)")


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


@dataclass(frozen=True)
class Row:
    """One line: which settings and side, traces/events processed, median wall and CPU
    seconds, the median of the per-repetition CPU-time ratios to the JSON side (``None`` on
    the JSON row), pipeline batches."""

    setting: str
    side: str
    events: int
    seconds: float
    cpu_s: float
    ratio: float | None
    batches: int


def timed(source: Any, workdir: Path, settings: Settings) -> tuple[float, float, Report]:
    """(wall seconds, CPU seconds of the process, counts) of one run of the service's loop
    over ``source`` with ``settings``."""
    registry = CollectorRegistry()
    state = StateStore.open(workdir / f"{uuid.uuid4().hex[:6]}.sqlite")
    live = build_live(settings, registry, state)  # as serve: harvest's records there
    decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes)
    decode = getattr(source, "wrap_decoder", lambda d: d)(decoder)
    engine = Engine(live.pipeline, state, build_metrics(registry), decode, on_batch=live.observe)
    freeze_heap()
    started, cpu = time.perf_counter(), time.process_time()
    report = run_loop(source, live.pipeline, state, engine.metrics, threading.Event(),
                      config=settings.pipeline, until_eof=True, engine=engine)  # fmt: skip
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    gc.unfreeze()
    state.close()
    return seconds, cpu, report


def trace_source(messages: list[RawMessage], settings: Settings) -> TraceSource:
    """The trace source serve builds over ``messages``, with a clock one settle time per poll."""
    return TickingSource(MemorySource(messages), TraceAssembler(LIMITS), TraceMapping(),
                         "otlp_proto", clock=StepClock(LIMITS.settle_s),
                         content_index=content_index(settings.corpus))  # fmt: skip


def run(n: int, repeat: int = 3) -> list[Row]:
    """Rows for both settings: JSON (reference) then traces, medians of ``repeat`` runs."""
    otlp, events = build(n)
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="gw-bench-traces-") as tmp:
        workdir = Path(tmp)
        _, gold, corpus, _ = write_inputs(workdir, 1, 1.0)
        for setting, analytics in (("defaults", {}), ("analytics off", {"enabled": False})):
            settings = settings_for(gold, corpus, **analytics)
            runs: list[list[tuple[float, float, Report]]] = [[], []]
            for _ in range(repeat):
                runs[0].append(timed(MemorySource(events), workdir, settings))
                runs[1].append(timed(trace_source(otlp, settings), workdir, settings))
            for timings in runs:
                assert all(report.processed == n for _, _, report in timings), timings
            ratios = [j[1] / t[1] for j, t in zip(*runs, strict=True)]
            for side, timings, ratio in zip(SIDES, runs, (None, statistics.median(ratios)),
                                            strict=True):  # fmt: skip
                rows.append(Row(setting, side, n, statistics.median(t[0] for t in timings),
                                statistics.median(t[1] for t in timings), ratio,
                                timings[-1][2].batches))  # fmt: skip
    return rows


def render(rows: Sequence[Row]) -> str:
    lines = [f"{'settings':14} {'what':40} {'n':>6} {'batches':>7} {'wall s':>7} "
             f"{'CPU s':>7} {'CPU µs each':>11} {'per CPU s':>9} {'ratio':>6}"]  # fmt: skip
    for row in rows:
        ratio = "" if row.ratio is None else f"{row.ratio:6.2f}"
        lines.append(f"{row.setting:14} {row.side:40} {row.events:6d} {row.batches:7d} "
                     f"{row.seconds:7.2f} {row.cpu_s:7.2f} {row.cpu_s / row.events * 1e6:11.1f} "
                     f"{row.events / row.cpu_s:9,.0f} {ratio:>6}")  # fmt: skip
    lines.append("wall/CPU s: medians of the runs; ratio: median over runs of traces per CPU "
                 "second / JSON events per CPU second of the same run. Target >= 0.5, read on "
                 "the 'defaults' rows (what serve runs).")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(render(run(args.traces, args.repeat)))


if __name__ == "__main__":
    main()
