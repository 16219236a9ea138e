"""Throughput of the live path (no analytics stages): events per second, file and Kafka.

Each goldwatch figure is set against a baseline that does the least anyone could do with the
same input, measured in the same run on the same data, so the ratio survives a noisy machine:

* file: ``consumers.loop.replay`` over a JSONL file (FileSource → decode/validate → dedup →
  count → dead letters, fsynced before each checkpoint → SQLite checkpoints) vs a loop that
  only ``json.loads`` each line of the same file.
* Kafka: ``consumers.loop.run`` over a :class:`~consumers.kafka_source.KafkaSource` (consumer
  group, dead letters produced to ``<topic>.dlq`` and acknowledged before each checkpoint,
  checkpoint-then-commit every second) vs a raw kafka-python consumer that only counts the
  same topic's records, 500 records per poll. Target ratio ≥ 0.5.

The pipeline is the service's with analytics off (``analytics.enabled: false``): none of its
stages reads the events' ``user``, ``retrieval``, ``answer`` or ``feedback``, so the decoder
does not build them (``decode_batch(records=False)``, as ``serve`` does), and its dedup
stage does not pseudonymise event ids (that goes with the PII stage; ~5 µs an event, measured
by ``benchmarks.bench_pii``-style timing of ``service.pii.pseudonymise`` on these ids).
goldwatch's Kafka source bounds its fetches (1 MiB, 256 KiB a partition); the raw consumer
reads the topic with kafka-python's defaults and, in a third row, with goldwatch's bounds,
and the CPU ratio takes the cheapest baseline. The bounds make kafka-python cheaper, not
dearer: 7.3-7.4 against 7.8-8.0 µs an event of process CPU (its I/O thread 1.8-2.0 against
2.6, its poll 5.4 against 5.2; 3 interleaved rounds of 50,000 events, 2026-12-04, load ~1.3),
so without that row the ratio favoured goldwatch by ~6 %.

Each Kafka row also gives the process's CPU time over the same window (``time.process_time``:
every thread, kafka-python's network thread and the DLQ producer's included), per event, and
its ratio: on a machine shared with other work the wall-clock rate follows the load, the CPU
spent per event much less. Before the Kafka rows the benchmark's own set-up heap (the stream,
~100,000 objects) is collected and frozen (``gc.freeze``), as ``goldwatch serve`` freezes its
start-up heap (``service.runtime.memory.freeze_heap``): otherwise the full collections the
loop runs between batches (``consumers.loop.gc_paused``) walk the benchmark's list, which
a served process does not hold (about 6 µs an event of 42 in one run).

The stream is ``benchmarks.streams.mixed_stream`` (real NQ-open/CLINC150 questions, 1 % poison
pills of every kind). Kafka times run from the first record received to the end of the last
batch (group join and connection set-up excluded for both sides). A Tansu broker is started
for the run (``tests/kafka_broker.py``); the topic is produced with normal batching, since
end offsets are not needed here, and its dead-letter topic is created beforehand, as a
deployment would (auto-created by the first dead letter, it added ~100 ms of metadata
retries to the timed window).

One such run compares one goldwatch window with one raw read: on a shared machine either
may land on a busy moment (the raw read with goldwatch's bounds spread 5.3-6.1 µs an event
over three runs within five minutes on 2026-12-05, load ~4.5), so one run's ratio moves by
several hundredths (0.41-0.53 over five runs within five minutes, load ~7). ``--kafka-pairs
K`` then times K more pairs on the same topic in the same process: the raw read with
goldwatch's fetch bounds and goldwatch's loop, one right after the other, the order
alternating (raw first in odd pairs), and prints each pair's CPU per event and ratio and the
median ratio: the "median of interleaved rounds" without a broker start and a produce per
round (docs/scaling.md, 2026-12-05).

Run: ``python -m benchmarks.bench_pipeline [--events 100000] [--skip-kafka] [--kafka-pairs K]``.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from prometheus_client import CollectorRegistry

from benchmarks.streams import TEST_MAX_EVENT_BYTES, file_stream, mixed_stream, write_jsonl
from consumers.base import DeadLetter, RawMessage
from consumers.file_source import FileSource
from consumers.kafka_source import (
    FETCH_MAX_BYTES,
    MAX_PARTITION_FETCH_BYTES,
    KafkaSource,
    KafkaSourceConfig,
)
from consumers.loop import Report, gc_paused, make_decoder, replay
from consumers.loop import run as run_loop
from service.pipeline import PipelineConfig
from service.runtime.live import default_pipeline
from service.state import StateStore
from service.telemetry import build_metrics

DEFAULT_EVENTS = 100_000
PARTITIONS = 4
CONFIG = PipelineConfig(
    max_batch_size=500,
    max_batch_wait_ms=200,
    commit_interval_s=1.0,
    dedup_window=100_000,
    max_event_bytes=TEST_MAX_EVENT_BYTES,
)


@dataclass(frozen=True)
class Row:
    """One line of the table: what ran, how many events, how long (s)."""

    path: str
    what: str
    events: int
    seconds: float
    #: process CPU seconds (all threads) over the same window; ``None``: not measured
    cpu_seconds: float | None = None

    @property
    def rate(self) -> float:
        return self.events / self.seconds if self.seconds > 0 else float("inf")


# -- file ---------------------------------------------------------------------------------------


def json_only(path: Path) -> Row:
    """Baseline: read the file line by line and ``json.loads`` each line (errors counted)."""
    started = time.perf_counter()
    n = 0
    with path.open("rb") as lines:
        for line in lines:
            try:
                json.loads(line)
            except ValueError:
                pass
            n += 1
    return Row("file", "json.loads per line (baseline)", n, time.perf_counter() - started)


def decode_only(path: Path) -> Row:
    """goldwatch's decoder alone (validation to v1 events), no stages or state; each batch
    polled and decoded with the collector paused, as the poll loop does (``gc_paused``).
    Decoded as the pipeline's loop decodes: without the records no stage of it reads."""
    source = FileSource(path, dlq_path=path.with_suffix(".decode-only.dlq"))
    records = default_pipeline(CONFIG, pseudonymise_ids=False).reads_records
    decode = make_decoder(max_event_bytes=CONFIG.max_event_bytes, records=records)

    def step() -> int:
        batch = source.poll(CONFIG.max_batch_size, 0)
        decode(batch)
        return len(batch)

    started = time.perf_counter()
    n, got = 0, 1
    while got:
        with gc_paused():
            got = step()
        n += got
    source.close()
    return Row("file", "FileSource + decode only", n, time.perf_counter() - started)


def file_pipeline(path: Path, state_dir: Path) -> tuple[Row, Report]:
    """goldwatch replay: the whole live path over the file, state in SQLite."""
    dlq = path.with_suffix(".dlq.jsonl")
    dlq.unlink(missing_ok=True)
    state = StateStore.open(state_dir / f"file-{uuid.uuid4().hex[:6]}.sqlite")
    source = FileSource(path, dlq_path=dlq)
    started = time.perf_counter()
    pipeline = default_pipeline(CONFIG, pseudonymise_ids=False)  # analytics off: see above
    report = replay(source, pipeline, state=state, config=CONFIG)
    seconds = time.perf_counter() - started
    state.close()
    return Row("file", "goldwatch replay (dedup+count, SQLite)", report.consumed, seconds), report


# -- Kafka --------------------------------------------------------------------------------------


def produce_topic(bootstrap: str, topic: str, values: Sequence[bytes | None]) -> None:
    """Produce ``values`` round-robin over the partitions, batched, keyed (tombstones legal)."""
    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        linger_ms=5,
        batch_size=256 * 1024,
        max_request_size=4 << 20,
    )
    try:
        for i, value in enumerate(values):
            producer.send(topic, value=value, key=b"k-%d" % i, partition=i % PARTITIONS)
        producer.flush(timeout=300)
    finally:
        producer.close()


def raw_consume(
    bootstrap: str, topic: str, n: int, timeout_s: float = 300, fetch_bounds: bool = False
) -> Row:
    """Baseline: a kafka-python consumer (assigned, no group) counting ``n`` records; with
    ``fetch_bounds``, goldwatch's fetch limits (:data:`~consumers.kafka_source.FETCH_MAX_BYTES`,
    :data:`~consumers.kafka_source.MAX_PARTITION_FETCH_BYTES`), else kafka-python's."""
    bounds = (
        {"fetch_max_bytes": FETCH_MAX_BYTES, "max_partition_fetch_bytes": MAX_PARTITION_FETCH_BYTES}
        if fetch_bounds
        else {}
    )
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=CONFIG.max_batch_size,
        **bounds,
    )
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    count, first, first_cpu = 0, None, 0.0
    deadline = time.monotonic() + timeout_s
    try:
        while count < n and time.monotonic() < deadline:
            batches = consumer.poll(
                timeout_ms=CONFIG.max_batch_wait_ms, max_records=CONFIG.max_batch_size
            )
            got = sum(len(records) for records in batches.values())
            if got and first is None:
                first, first_cpu = time.perf_counter(), time.process_time()
            count += got
        end, end_cpu = time.perf_counter(), time.process_time()
    finally:
        consumer.close()
    cpu = end_cpu - first_cpu if first is not None else None
    what = "kafka-python, goldwatch's fetch bounds (baseline)" if fetch_bounds else (
        "kafka-python poll only (baseline)")  # fmt: skip
    return Row("kafka", what, count, end - (first or end), cpu)


class TimedSource:
    """A Source wrapper that stops the loop after ``n`` messages and times first → last."""

    def __init__(self, inner: KafkaSource, n: int, stop: threading.Event) -> None:
        self.inner, self.n, self.stop = inner, n, stop
        self.name = inner.name
        self.count = 0
        self.first: float | None = None
        self.done: float | None = None
        self.first_cpu = self.done_cpu = 0.0

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        if self.count >= self.n and self.done is None:
            self.done = time.perf_counter()  # the previous batch is fully handled
            self.done_cpu = time.process_time()
        messages = self.inner.poll(max_records, timeout_ms)
        if messages and self.first is None:
            self.first, self.first_cpu = time.perf_counter(), time.process_time()
        self.count += len(messages)
        if self.count >= self.n:
            self.stop.set()
        return messages

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        self.inner.dead_letter(letters)

    def sync_dead_letters(self) -> None:
        self.inner.sync_dead_letters()

    @property
    def pending_dead_letters(self) -> int:
        return self.inner.pending_dead_letters

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        self.inner.commit(messages, force=force)
        if force and self.done is None:
            self.done = time.perf_counter()  # the final checkpoint-and-commit returned
            self.done_cpu = time.process_time()

    def status(self) -> dict[str, Any]:
        return self.inner.status()

    def ready(self) -> bool:
        return self.inner.ready()

    def mark_failed(self) -> None:
        self.inner.mark_failed()

    def close(self) -> None:
        self.inner.close()


def kafka_pipeline(bootstrap: str, topic: str, n: int, state_dir: Path) -> tuple[Row, Report]:
    """goldwatch's poll loop over a KafkaSource (group member) until ``n`` messages."""
    source_config = KafkaSourceConfig(
        bootstrap_servers=bootstrap,
        topic=topic,
        consumer_group=f"bench-{uuid.uuid4().hex[:8]}",
        session_timeout_ms=6000,
        heartbeat_interval_ms=600,
        max_poll_interval_ms=60_000,
        request_timeout_ms=10_000,
        commit_interval_s=0.0,
        max_poll_records=CONFIG.max_batch_size,
    )
    stop = threading.Event()
    source = TimedSource(KafkaSource(source_config), n, stop)
    state = StateStore.open(state_dir / f"kafka-{uuid.uuid4().hex[:6]}.sqlite")
    report = run_loop(
        source,
        default_pipeline(CONFIG, pseudonymise_ids=False),
        state,
        build_metrics(CollectorRegistry()),
        stop,
        config=CONFIG,
    )
    state.close()
    end = source.done or time.perf_counter()
    seconds = end - (source.first or end)
    cpu = source.done_cpu - source.first_cpu if source.first and source.done else None
    return Row(
        "kafka", "goldwatch loop (dedup+count, DLQ, SQLite)", report.consumed, seconds, cpu
    ), report


# -- driver -------------------------------------------------------------------------------------


def run_file(n: int, workdir: Path) -> list[Row]:
    path = workdir / "events.jsonl"
    lines = write_jsonl(path, file_stream(n, poison_share=0.01, seed=42))
    rows = [json_only(path), decode_only(path)]
    row, report = file_pipeline(path, workdir)
    good = sum(1 for _, reason in lines if reason is None)
    if report.processed != good or report.consumed != len(lines):
        raise RuntimeError(f"file replay counts wrong: {report} vs {good} good of {len(lines)}")
    return [*rows, row]


@dataclass(frozen=True)
class Pair:
    """One interleaved pair of ``--kafka-pairs``: process CPU per event (µs) of the raw read
    with goldwatch's fetch bounds and of goldwatch's loop, and which of the two ran first."""

    raw_us: float
    goldwatch_us: float
    raw_first: bool

    @property
    def ratio(self) -> float:
        """The raw read's CPU per event over goldwatch's (the table's cpu ratio)."""
        return self.raw_us / self.goldwatch_us


def kafka_pairs(bootstrap: str, topic: str, n: int, workdir: Path, pairs: int) -> list[Pair]:
    """``pairs`` pairs over the same topic (see the module docstring): the raw read with
    goldwatch's fetch bounds and goldwatch's loop (a new consumer group each time), raw first
    in the first pair and then alternating.

    Raises:
        RuntimeError: a run was not timed or goldwatch's counts are wrong.
    """
    good = None
    out: list[Pair] = []
    for index in range(pairs):
        raw_first = index % 2 == 0
        cpu: dict[str, float] = {}
        for side in ("raw", "goldwatch") if raw_first else ("goldwatch", "raw"):
            if side == "raw":
                row = raw_consume(bootstrap, topic, n, fetch_bounds=True)
            else:
                row, report = kafka_pipeline(bootstrap, topic, n, workdir)
                if good is None:
                    good = report.processed
                if report.consumed != n or report.processed != good:
                    raise RuntimeError(f"kafka counts wrong in pair {index + 1}: {report}")
            if not row.cpu_seconds or row.events != n:
                raise RuntimeError(f"pair {index + 1}: the {side} run was not timed: {row}")
            cpu[side] = 1e6 * row.cpu_seconds / n
        out.append(Pair(cpu["raw"], cpu["goldwatch"], raw_first))
    return out


def render_pairs(pairs: Sequence[Pair]) -> str:
    """One line per pair, then the median ratio and the range (empty for no pairs)."""
    if not pairs:
        return ""
    lines = ["kafka pairs (process CPU µs an event: raw read with goldwatch's fetch bounds, "
             "goldwatch loop; cpu ratio = raw / goldwatch)"]  # fmt: skip
    for index, pair in enumerate(pairs, start=1):
        order = "raw first" if pair.raw_first else "goldwatch first"
        lines.append(f"pair {index:2d} ({order:15}): raw {pair.raw_us:5.2f}, goldwatch "
                     f"{pair.goldwatch_us:5.2f}, cpu ratio {pair.ratio:4.2f}")  # fmt: skip
    ratios = sorted(pair.ratio for pair in pairs)
    lines.append(f"median cpu ratio of {len(pairs)} pairs {statistics.median(ratios):.2f} "
                 f"(range {ratios[0]:.2f}-{ratios[-1]:.2f}); goldwatch median "
                 f"{statistics.median(p.goldwatch_us for p in pairs):.2f}, raw median "
                 f"{statistics.median(p.raw_us for p in pairs):.2f} µs an event")  # fmt: skip
    return "\n".join(lines)


def run_kafka(
    n: int, workdir: Path, pairs: int = 0, pairs_out: list[Pair] | None = None
) -> list[Row]:
    """The Kafka rows (see the module docstring); with ``pairs`` > 0, that many interleaved
    pairs more on the same topic, appended to ``pairs_out``."""
    from tests.kafka_broker import TansuBroker

    broker = TansuBroker.start()
    try:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, PARTITIONS)
        broker.create_topic(f"{topic}.dlq", 1)  # as a deployment would, not auto-created
        items = mixed_stream(n, poison_share=0.01, seed=43)
        started = time.perf_counter()
        produce_topic(broker.bootstrap_servers, topic, [value for value, _ in items])
        produce_s = time.perf_counter() - started
        gc.collect()
        gc.freeze()  # the set-up heap, as serve's start-up heap (see the module docstring)
        try:
            raw = raw_consume(broker.bootstrap_servers, topic, n)
            row, report = kafka_pipeline(broker.bootstrap_servers, topic, n, workdir)
            raw_again = raw_consume(broker.bootstrap_servers, topic, n)  # the broker warmed up
            raw_bounded = raw_consume(broker.bootstrap_servers, topic, n, fetch_bounds=True)
            if pairs > 0 and pairs_out is not None:
                pairs_out += kafka_pairs(broker.bootstrap_servers, topic, n, workdir, pairs)
        finally:
            gc.unfreeze()
        good = sum(1 for _, reason in items if reason is None)
        if report.processed != good or report.consumed != n:
            raise RuntimeError(f"kafka counts wrong: {report} vs {good} good of {n}")
        produced = Row("kafka", "produce (batched, acks=all; setup)", n, produce_s)
        return [produced, raw, row, raw_again, raw_bounded]
    finally:
        broker.stop()


def render(rows: Sequence[Row]) -> str:
    """The table: per path, each row's rate and its ratio to that path's faster baseline;
    where measured, CPU µs per event and the baseline's (lowest) CPU per event over it."""
    lines = [f"{'path':6} {'what':50} {'events':>8} {'seconds':>8} {'events/s':>10} {'ratio':>6}"
             f" {'cpu us/ev':>9} {'cpu ratio':>9}"]  # fmt: skip
    baselines: dict[str, float] = {}
    cpu_baselines: dict[str, float] = {}
    for row in rows:
        if "baseline" in row.what:
            baselines[row.path] = max(baselines.get(row.path, 0.0), row.rate)
            if row.cpu_seconds and row.events:
                per_event = row.cpu_seconds / row.events
                cpu_baselines[row.path] = min(cpu_baselines.get(row.path, per_event), per_event)
    for row in rows:
        base = baselines.get(row.path)
        ratio = f"{row.rate / base:6.2f}" if base and "produce" not in row.what else ""
        cpu, cpu_ratio = "", ""
        if row.cpu_seconds and row.events:
            per_event = row.cpu_seconds / row.events
            cpu = f"{1e6 * per_event:9.1f}"
            cpu_base = cpu_baselines.get(row.path)
            cpu_ratio = f"{cpu_base / per_event:9.2f}" if cpu_base else ""
        lines.append(
            f"{row.path:6} {row.what:50} {row.events:8d} {row.seconds:8.2f} "
            f"{row.rate:10,.0f} {ratio:>6} {cpu:>9} {cpu_ratio:>9}"
        )
    lines.append("ratio = events/s / the faster baseline of the same path (same data, same run); "
                 "cpu ratio = the baseline's lowest CPU per event / the row's")  # fmt: skip
    return "\n".join(lines)


def run(
    n: int = DEFAULT_EVENTS,
    kafka: bool = True,
    pairs: int = 0,
    pairs_out: list[Pair] | None = None,
) -> list[Row]:
    """Run the benchmark and return its rows (file rows, then Kafka rows); ``pairs``: see
    :func:`run_kafka`."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-") as tmp:
        workdir = Path(tmp)
        rows = run_file(n, workdir)
        if kafka:
            rows += run_kafka(n, workdir, pairs, pairs_out)
    return rows


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--skip-kafka", action="store_true")
    parser.add_argument(
        "--kafka-pairs",
        type=int,
        default=0,
        metavar="K",
        help="K more interleaved pairs (raw read, goldwatch) on the same topic",
    )
    args = parser.parse_args(argv)
    pairs: list[Pair] = []
    print(render(run(args.events, kafka=not args.skip_kafka, pairs=args.kafka_pairs,
                     pairs_out=pairs)))  # fmt: skip
    if pairs:
        print(render_pairs(pairs))


if __name__ == "__main__":
    main()
