"""Where the Kafka path's CPU goes, per event: consumer-thread CPU per phase, per thread, and
the broker requests of the timed window (issue 22 item 3).

Runs :mod:`benchmarks.bench_pipeline`'s Kafka set-up (Tansu broker, 4 partitions, the mixed
stream with 1 % poison pills, its ``PipelineConfig``) and, per round, its raw kafka-python
baseline and goldwatch's poll loop, with:

* **phases**: each function below is wrapped, in this process only, by a timer of the
  consumer thread's CPU (``time.thread_time``) that charges a call's time less its timed
  callees' to the phase (exclusive time). The wrappers run once per call, i.e. per batch or
  checkpoint, never per event (one per dead letter for the letter encoding); their own cost
  is under 0.1 µs an event. Only goldwatch's functions and kafka-python's public
  ``KafkaConsumer.poll``, ``commit`` and ``KafkaProducer.send``/``flush`` are wrapped:
  ``poll``'s phase holds kafka-python's record parsing (the ``ConsumerRecord`` of each record,
  the raw baseline's main cost too), its group-coordinator check and the hand-offs to its I/O
  thread.
* **threads**: each thread's CPU (user + system, from ``/proc/self/task``, to its clock
  tick: 10 ms) over the window, per event: the consumer thread, kafka-python's I/O thread
  and the DLQ producer's. What the phases leave of the consumer thread's CPU is taken from
  ``time.thread_time`` (exact).
* **requests**: the broker requests sent in the window, by type, counted by a handler on
  kafka-python's ``kafka.net.connection`` debug log (set to DEBUG for the run; a handler,
  nothing of kafka-python replaced).

The window is the one ``bench_pipeline`` times (first record received → last batch handled
and committed); ``cpu ratio`` is the raw baseline's CPU per event over goldwatch's in the same
round. The wrappers and the debug log make the instrumented rows slower than
``bench_pipeline``'s plain ones (a few per cent): read the phases as shares.

Run: ``python -m benchmarks.bench_kafka_phases [--events 50000] [--rounds 3]``.
"""

from __future__ import annotations

import argparse
import functools
import gc
import logging
import os
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import bench_pipeline as bp
from benchmarks.streams import mixed_stream

_MAIN = threading.main_thread()


class PhaseClock:
    """Exclusive consumer-thread CPU per phase while :attr:`on`; calls from other threads
    (kafka-python's I/O thread, the API) are not timed."""

    def __init__(self) -> None:
        self.on = False
        self.seconds: dict[str, float] = {}
        self.calls: Counter[str] = Counter()
        self._stack: list[list[float]] = []  # per open call: [time of its timed callees]
        self.gc_seconds = 0.0  # collections on the consumer thread while on (any phase)
        self._gc_started: float | None = None
        gc.callbacks.append(self._on_gc)

    def _on_gc(self, phase: str, info: dict[str, Any]) -> None:
        if not self.on or threading.current_thread() is not _MAIN:
            return
        if phase == "start":
            self._gc_started = time.thread_time()
        elif self._gc_started is not None:
            self.gc_seconds += time.thread_time() - self._gc_started
            self._gc_started = None

    def wrap(self, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        """``fn`` timed as phase ``name``."""

        @functools.wraps(fn)
        def timed(*args: Any, **kwargs: Any) -> Any:
            if not self.on or threading.current_thread() is not _MAIN:
                return fn(*args, **kwargs)
            started = time.thread_time()
            self._stack.append([0.0])
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.thread_time() - started
                callees = self._stack.pop()[0]
                self.seconds[name] = self.seconds.get(name, 0.0) + spent - callees
                self.calls[name] += 1
                if self._stack:
                    self._stack[-1][0] += spent

        return timed

    def patch(self, owner: Any, attribute: str, name: str) -> None:
        """Replace ``owner.attribute`` by its timed version (this process only)."""
        setattr(owner, attribute, self.wrap(name, getattr(owner, attribute)))


class RequestCounter(logging.Handler):
    """Counts the requests kafka-python logs as sent (``<conn> Request <id>: <request>``)."""

    def __init__(self, clock: PhaseClock) -> None:
        super().__init__(logging.DEBUG)
        self.clock = clock
        self.sent: Counter[str] = Counter()

    def emit(self, record: logging.LogRecord) -> None:
        if self.clock.on and str(record.msg).endswith("Request %d: %s") and record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            self.sent[type(args[-1]).__name__] += 1


def instrument(clock: PhaseClock) -> None:
    """Wrap the phases (see the module docstring)."""
    from kafka import KafkaConsumer, KafkaProducer

    import consumers.engine as engine
    import consumers.kafka_source as kafka_source
    import consumers.loop as loop
    import service.pipeline as pipeline
    import service.state as state

    patches: list[tuple[Any, str, str]] = [
        (KafkaConsumer, "poll", "kafka-python poll: record parsing, coordinator, I/O hand-offs"),
        (KafkaConsumer, "commit", "kafka-python commit (sync, per checkpoint)"),
        (KafkaProducer, "send", "kafka-python DLQ producer send"),
        (KafkaProducer, "flush", "kafka-python DLQ producer flush"),
        (kafka_source, "messages_from_records", "RawMessage build"),
        (kafka_source, "dead_letter_value", "DLQ letter encoding"),
        (kafka_source.KafkaSource, "poll", "KafkaSource.poll (own)"),
        (kafka_source.KafkaSource, "_maybe_probe", "lag sample / broker probe"),
        (kafka_source.KafkaSource, "_follow_partitions", "partition-set check"),
        (kafka_source.KafkaSource, "topic_ids", "topic-id check"),
        (kafka_source.KafkaSource, "commit", "offset store + due commit (own)"),
        (kafka_source.KafkaSource, "sync_dead_letters", "DLQ sync (own)"),
        (kafka_source.KafkaSource, "status", "source status"),
        (loop, "decode_batch", "decode (validation to events)"),
        (loop._Loop, "step", "loop step (own: freeing the batch)"),
        (loop._Loop, "handle", "loop handle (own: pending offsets, freeing)"),
        (loop._Loop, "maybe_checkpoint", "checkpoint due? (own)"),
        (loop._Loop, "checkpoint", "loop checkpoint (own)"),
        (loop._Loop, "sample_status", "status sample (own)"),
        (loop._Loop, "write_dead_letters", "queue dead letters"),
        (loop._Loop, "drop_recreated", "re-created topic check (own)"),
        (engine.Engine, "process", "engine (own: metrics, totals, freeing)"),
        (engine.Engine, "_drop_redelivered", "redelivery check"),
        (engine.Engine, "checkpoint", "engine checkpoint (own)"),
        (pipeline.Pipeline, "process", "stages: dedup, count"),
        (pipeline.Pipeline, "snapshot", "stage state snapshot"),
        (state.StateStore, "checkpoint", "SQLite checkpoint"),
    ]
    for owner, attribute, name in patches:
        clock.patch(owner, attribute, name)


def thread_cpu() -> dict[str, float]:
    """CPU seconds (user + system) of each live thread of this process, by thread name."""
    ticks = os.sysconf("SC_CLK_TCK")
    names = {t.native_id: t.name for t in threading.enumerate()}
    cpu: dict[str, float] = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{tid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
        except FileNotFoundError:
            continue
        name = names.get(int(tid), f"thread {tid}")
        cpu[name] = cpu.get(name, 0.0) + (int(fields[11]) + int(fields[12])) / ticks
    return cpu


def run(n: int, rounds: int) -> str:
    """Measure ``rounds`` rounds of ``n`` events; return the report."""
    from tests.kafka_broker import TansuBroker

    clock = PhaseClock()
    instrument(clock)
    counter = RequestCounter(clock)
    kafka_log = logging.getLogger("kafka.net.connection")
    kafka_log.setLevel(logging.DEBUG)
    kafka_log.addHandler(counter)
    kafka_log.propagate = False

    class Window(bp.TimedSource):
        """bench_pipeline's timed source that also switches the clock on for the window."""

        cpu_at_first: dict[str, float] = {}
        cpu_at_done: dict[str, float] = {}
        consumer_thread_cpu = 0.0  # time.thread_time: finer than /proc's clock ticks

        def _mark(self, first: float | None, done: float | None) -> None:
            if self.first is not None and first is None:
                Window.cpu_at_first = thread_cpu()
                Window.consumer_thread_cpu -= time.thread_time()
                clock.on = True
            if self.done is not None and done is None and clock.on:
                clock.on = False
                Window.consumer_thread_cpu += time.thread_time()
                Window.cpu_at_done = thread_cpu()

        def poll(self, max_records: int, timeout_ms: int) -> list[Any]:
            first, done = self.first, self.done
            messages = super().poll(max_records, timeout_ms)
            self._mark(first, done)
            return messages

        def commit(self, messages: Sequence[Any], force: bool = False) -> None:
            first, done = self.first, self.done
            super().commit(messages, force=force)
            self._mark(first, done)

    bp.TimedSource = Window  # type: ignore[misc]
    lines: list[str] = []
    threads: dict[str, float] = {}
    raw_cpu = gw_cpu = 0.0
    broker = TansuBroker.start()
    try:
        topic = f"bench-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, bp.PARTITIONS)
        broker.create_topic(f"{topic}.dlq", 1)
        items = mixed_stream(n, poison_share=0.01, seed=43)
        bp.produce_topic(broker.bootstrap_servers, topic, [value for value, _ in items])
        gc.collect()
        gc.freeze()
        with tempfile.TemporaryDirectory(prefix="gw-phases-") as tmp:
            for index in range(rounds):
                raw = bp.raw_consume(broker.bootstrap_servers, topic, n)
                counter.sent.clear()
                row, _ = bp.kafka_pipeline(broker.bootstrap_servers, topic, n, Path(tmp))
                if not (raw.cpu_seconds and row.cpu_seconds):
                    raise RuntimeError("a row was not timed")
                raw_cpu += raw.cpu_seconds
                gw_cpu += row.cpu_seconds
                for name, seconds in Window.cpu_at_done.items():
                    spent = seconds - Window.cpu_at_first.get(name, 0.0)
                    threads[name] = threads.get(name, 0.0) + spent
                lines.append(
                    f"round {index + 1}: raw {1e6 * raw.cpu_seconds / n:.1f} µs/event, goldwatch "
                    f"{1e6 * row.cpu_seconds / n:.1f}, cpu ratio "
                    f"{raw.cpu_seconds / row.cpu_seconds:.2f}, load {os.getloadavg()[0]:.2f}; "
                    f"requests {dict(sorted(counter.sent.items()))}"
                )
    finally:
        broker.stop()
    total = n * rounds
    lines.append(f"\nconsumer-thread CPU per phase, exclusive, µs/event (mean of {rounds} rounds)")
    for name, seconds in sorted(clock.seconds.items(), key=lambda item: -item[1]):
        lines.append(f"{1e6 * seconds / total:8.2f}  {name}")
    timed = sum(clock.seconds.values())
    collected = clock.gc_seconds  # mostly at gc_paused's exit, between the phases
    lines.append(f"{1e6 * collected / total:8.2f}  cyclic garbage collection (gc.callbacks)")
    rest = Window.consumer_thread_cpu - timed - collected
    lines.append(f"{1e6 * rest / total:8.2f}  the rest (loop top, gc_paused, the timer)")
    lines.append("\nCPU per thread over the window, µs/event")
    for name, seconds in sorted(threads.items(), key=lambda item: -item[1]):
        if seconds > 0:
            lines.append(f"{1e6 * seconds / total:8.2f}  {name}")
    raw_us, gw_us = 1e6 * raw_cpu / total, 1e6 * gw_cpu / total
    lines.append(f"\nprocess CPU: raw {raw_us:.1f}, goldwatch {gw_us:.1f} µs/event; "
                 f"cpu ratio {raw_cpu / gw_cpu:.2f}")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(run(args.events, args.rounds))


if __name__ == "__main__":
    main()
