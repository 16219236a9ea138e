"""Cost of keeping ``/v1/traces``' acknowledged spans durable (issue 20 item 2), next to the
in-memory path it replaced, in the same run.

Both sides run :class:`~service.api.trace_ingest.TraceIngest` on a real
:class:`~service.runtime.process.Runtime` (analytics off, state file on the disk under the system
temporary directory):

* durable: :meth:`~service.api.trace_ingest.TraceIngest.receive` as the route calls it before
  its 200: assembly, then one SQLite transaction (WAL, ``synchronous=FULL``: an fsync) writing
  the kept spans as OTLP/JSON, one key per trace and request;
* in-memory: the same with the write left out (what ``receive`` did before: assembly only).

Requests are the OpenTelemetry SDK's traces in the four shapes of the tests (2-3 spans each),
decoded before timing (decoding is the same on both sides): per trace its non-root spans in
one request and its root in a later one (``--per-request 1``, SimpleSpanProcessor's pattern,
the worst case), or the spans of 50 traces per request (BatchSpanProcessor's pattern). The
hand-over (``tick``: mapping, the pipeline, the checkpoint that now also deletes the traces'
pending keys) is timed per trace on both sides too.

Reference in the same run: one-event ``POST /v1/events`` (:meth:`Runtime.ingest`), which
makes its event durable by the same kind of transaction before its 200.

Run: ``python -m benchmarks.bench_trace_durability [--traces 2000] [--rounds 2] [--dir D]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from consumers.base import DeadLetter
from service.api.trace_ingest import TraceIngest
from service.runtime.process import Runtime
from service.settings import load_settings
from service.traces.otlp import decode_protobuf
from service.traces.spans import Span
from tests.service.api.test_traces_api import (
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

SETTLE_S = 1.0


class InMemoryIngest(TraceIngest):
    """The path before durability: spans are assembled, nothing is written."""

    def _persist(
        self,
        kept: Sequence[Span],
        letters: Sequence[DeadLetter],
        duplicates: int,
        again: Mapping[str, Mapping[str, int]] = {},  # noqa: B006 (read only)
    ) -> dict[str, int]:
        return {}


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def build(n: int, per_request: int) -> list[list[Span]]:
    """Requests: per group of ``per_request`` traces, their non-root spans, then their roots."""
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    shapes = (_openinference, _genai, _genai_old, _openllmetry)
    requests: list[list[Span]] = []
    for start in range(0, n, per_request):
        children: list[Span] = []
        roots: list[Span] = []
        for i in range(start, min(start + per_request, n)):
            shapes[i % 4](tracer)
            spans = decode_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString())
            memory.clear()
            children += [s for s in spans if not s.is_root]
            roots += [s for s in spans if s.is_root]
        requests += [children, roots]
    provider.shutdown()
    return requests


def _runtime(tmp: str) -> Runtime:
    settings = load_settings(
        state={"path": Path(tmp) / "state.sqlite"},
        analytics={"enabled": False},
        traces={"assembly": {"settle_s": SETTLE_S, "timeout_s": 600.0,
                             "max_open_traces": 100_000}},
    )  # fmt: skip
    return Runtime(settings)


def measure(
    kind: type[TraceIngest], requests: list[list[Span]], n: int, where: str | None
) -> tuple[float, float]:
    """(µs per request in ``receive``, µs per trace in ``tick``) on a fresh runtime whose
    state file is in a new directory under ``where`` (``None``: the temporary directory)."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-durable-", dir=where) as tmp:
        runtime = _runtime(tmp)
        clock = Clock()
        ingest = kind(runtime, runtime.trace_metrics, clock=clock)
        started = time.perf_counter()
        for spans in requests:
            ingest.receive(spans)
        receive_s = time.perf_counter() - started
        clock.now += SETTLE_S
        started = time.perf_counter()
        taken = ingest.tick()
        tick_s = time.perf_counter() - started
        assert taken == n and len(ingest.assembler) == 0, (taken, len(ingest.assembler))
        assert runtime.state.keys("traces/open/") == []
        runtime.state.close()
    return receive_s / len(requests) * 1e6, tick_s / n * 1e6


def events_reference(n: int, where: str | None) -> float:
    """µs per ``POST /v1/events`` of one event, as the route runs it
    (:meth:`~service.runtime.process.Runtime.ingest`: the pipeline, then the checkpoint)."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-durable-", dir=where) as tmp:
        runtime = _runtime(tmp)
        values = [(f'{{"event_id": "e-{i}", "timestamp": "2026-11-29T10:00:00Z", '
                   f'"question": "Library hours?"}}').encode() for i in range(n)]  # fmt: skip
        started = time.perf_counter()
        for value in values:
            runtime.ingest([value])
        seconds = time.perf_counter() - started
        assert runtime.engine.totals.processed == n
        runtime.state.close()
    return seconds / n * 1e6


def run(n: int, rounds: int, where: str | None) -> list[tuple[str, float, float, float]]:
    """Rows (what, spans per request on average, µs per request, µs per trace at hand-over);
    the median of ``rounds`` alternating runs of each side; last, the ``/v1/events``
    reference (µs per one-event request)."""
    rows: list[tuple[str, float, float, float]] = []
    for per_request in (1, 50):
        requests = build(n, per_request)
        spans = sum(len(r) for r in requests) / len(requests)
        got: dict[str, list[tuple[float, float]]] = {"in-memory": [], "durable": []}
        for _ in range(rounds):
            got["in-memory"].append(measure(InMemoryIngest, requests, n, where))
            got["durable"].append(measure(TraceIngest, requests, n, where))
        for what, values in got.items():
            receive = statistics.median(v[0] for v in values)
            tick = statistics.median(v[1] for v in values)
            rows.append((f"{what}, {per_request} trace(s)/request", spans, receive, tick))
    reference = events_reference(min(n, 500), where)
    rows.append(("reference: POST /v1/events, 1 event", 0.0, reference, float("nan")))
    return rows


def render(rows: Sequence[tuple[str, float, float, float]]) -> str:
    """The table of :func:`run`'s rows."""
    lines = [f"{'what':34} {'spans/req':>9} {'µs/POST':>9} {'+µs':>8} {'tick µs/trace':>14}"]
    for i, (what, spans, receive, tick) in enumerate(rows):
        extra = "" if i % 2 == 0 or i == len(rows) - 1 else f"{receive - rows[i - 1][2]:8.0f}"
        lines.append(f"{what:34} {spans:9.1f} {receive:9.0f} {extra:>8} {tick:14.0f}")
    lines.append("µs/POST: TraceIngest.receive (assembly; durable: + the SQLite write and "
                 "fsync); +µs: durable minus in-memory, same run; tick: mapping, pipeline, "
                 "checkpoint (durable: + deleting the pending keys)")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--traces", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--dir",
        default=None,
        help="where the state files go (default: the "
        "temporary directory; /dev/shm shows the cost without the disk's fsync)",
    )
    args = parser.parse_args(argv)
    print(render(run(args.traces, args.rounds, args.dir)))


if __name__ == "__main__":
    main()
