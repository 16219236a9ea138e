"""Freshness on Kafka, per event: send time -> counted in ``/v1/status`` and ``/metrics``.

Issue 22 item 4: the delay from an event's arrival at Kafka to its being counted, at a steady
``--rate`` (2,000 events/s) for ``--seconds`` (120 s), with the *default* configuration: a
``goldwatch serve`` process whose configuration sets only the source (``kind: kafka``,
bootstrap servers, topic, consumer group) and the state path; every other setting
(analytics, batch size and wait, checkpoint and status cadence, the Kafka client's timeouts)
is the default a user runs.

Set-up: a Tansu broker (``tests/kafka_broker.py``) with a 4-partition topic and its
``.dlq``; serve started as a subprocess and waited for until ``/readyz`` is 200 (partitions
assigned; the group join on Tansu takes ~30 s with the default 45 s session timeout, which is
the test broker's, see issue 22); then a producer *process* (the measuring side must not
steal the GIL of the sampler) sends events at the rate, each stamped with its send time, round
robin over the partitions, and records when it handed each one to the client (``time.time()``
just before ``send``; ``acks`` 1 and ``--linger-ms`` 5 unless told). The events are
production-shaped (:func:`benchmarks.bench_production.write_log`: real multilingual questions,
10 retrieved passages, answers with citations, feedback, 3 % duplicate deliveries, 0.5 % bad
lines but the ``too_large`` ones, which a default producer refuses), cycled with fresh event
ids and timestamps.

Measuring: a sampler thread in this process reads ``/v1/status`` every ``--status-every-s``
(20 ms) and ``/metrics`` every ``--metrics-every-s`` (250 ms) over one kept-alive connection
each, and keeps ``(time the answer was read, totals.consumed)`` (``/metrics``: the sum of
``goldwatch_events_consumed_total``). Every message is counted in ``consumed`` once (processed,
duplicate or dead-lettered), so the ``k``-th event sent (0-based) is taken as counted at the
first answer whose count is ``> k``; its delay is that time minus its send time. Per event,
not a sample of the newest timestamp: p50, p99 and max over every event sent.

What the count cannot tell: which events a count holds. Taking the ``k``-th sent as the
``k``-th counted is exact while events are counted in send order; across the 4 partitions a
batch may count a later event of one partition before an earlier one of another, which moves
a delay between two events but never changes the sum of the delays (the mean is exact) and
only by how far the partitions' progress differs. Each delay includes up to one sampling
interval (the answer's read time is used, never earlier than the count), so the figures lean
high, never low.

The producer's ``linger_ms`` (``--linger-ms``, default 5): the default of the Java client
since Kafka 4.0 (KIP-1030) and of librdkafka since 1.5, the clients a RAG service's producer
is most likely built on; kafka-python's own default is 0. It decides what this test broker
delivers: with small batches (0 or 5 ms at 500 events/s a partition) Tansu's in-memory
engine grows dearer as a partition's batches pile up (its CPU per second and its fetch
latency rise through a run at a constant rate), and every consumer, a bare kafka-python one
included, falls seconds behind (a bare client's p99 2.35 s over 120 s with 5); with
``--linger-ms 50`` (batches of ~25 events) it stays flat (0.31 s). See docs/scaling.md,
"Freshness", for the measurements per setting.

Reference in the same run (``--before PATH``): the same measurement against a serve started
from another checkout (e.g. ``git archive <commit> | tar -x -C PATH``), on its own topic,
on the same broker, right before. And (``--raw``) the floor: a plain kafka-python group
consumer (default settings) reading a topic produced the same way, its delay = receive time
minus send time.

``--floor`` measures only that bare client, assigned the partitions (no group), under the
producer and consumer settings of :data:`FLOOR_VARIATIONS`, a fresh topic each, with the
delay's p99 per 10 s and the broker's CPU per 10 s (the tables of docs/scaling.md).

Run: ``python -m benchmarks.bench_freshness [--rate 2000] [--seconds 120] [--before PATH]
[--raw] [--linger-ms 5] [--floor]``.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.kafka_broker import TansuBroker, free_port

PARTITIONS = 4
POOL = 20_000  # production-shaped lines cycled through (event ids made unique per cycle)
REPO_ROOT = Path(__file__).resolve().parents[1]


def production_lines(n: int, seed: int = 7) -> list[bytes]:
    """``n`` lines of :func:`benchmarks.bench_production.write_log` (its ``too_large`` bad
    lines left out: over a default producer's ``max_request_size``)."""
    from benchmarks.bench_production import MAX_EVENT_BYTES, write_log

    with tempfile.TemporaryDirectory(prefix="gw-fresh-") as tmp:
        path = Path(tmp) / "log.jsonl"
        write_log(path, n, seed=seed)
        lines = path.read_bytes().splitlines()
    return [line for line in lines if len(line) <= MAX_EVENT_BYTES]


def restamp(line: bytes, cycle: int) -> bytes:
    """``line`` with ``timestamp`` = now (UTC, ms) and, from the second cycle on, the event
    id suffixed with the cycle; a line that is not a JSON object with an ``event_id`` is
    sent as it is (a bad line stays bad)."""
    try:
        event = json.loads(line)
    except ValueError:
        return line
    if not isinstance(event, dict) or "event_id" not in event:
        return line
    if cycle:
        event["event_id"] = f"{event['event_id']}-c{cycle}"
    event["timestamp"] = datetime.now(UTC).isoformat(timespec="milliseconds")
    return json.dumps(event, separators=(",", ":")).encode()


def _produce(bootstrap: str, topic: str, lines: list[bytes], total: int, rate: float,
             ready: Any, go: Any, out: str, linger_ms: int = 5,
             acks: int | str = 1) -> None:  # fmt: skip
    """Producer process: ``total`` events at ``rate``/s, round robin over the partitions,
    ``acks`` and ``linger_ms`` (ms); writes the send times (Unix seconds, in send order) as
    JSON to ``out``."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=acks, linger_ms=linger_ms,
                             max_request_size=4 << 20)  # fmt: skip
    ready.set()
    go.wait()
    sent: list[float] = []
    started = time.monotonic()
    try:
        for i in range(total):
            delay = started + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            value = restamp(lines[i % len(lines)], i // len(lines))
            sent.append(time.time())
            producer.send(topic, value=value, partition=i % PARTITIONS)
        producer.flush(timeout=60)
    finally:
        producer.close()
    Path(out).write_text(json.dumps(sent))


@dataclass
class Counts:
    """``(read time, consumed)`` pairs as the sampler saw them, per endpoint."""

    status: list[tuple[float, int]] = field(default_factory=list)
    metrics: list[tuple[float, int]] = field(default_factory=list)
    errors: int = 0


def _consumed_in_metrics(text: str) -> int:
    prefix = "goldwatch_events_consumed_total"
    return int(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                   if line.startswith(prefix) and line[len(prefix)] in " {"))  # fmt: skip


def _sample(base_url: str, every_s: float, path: str, stop: threading.Event,
            out: list[tuple[float, int]], counts: Counts) -> None:  # fmt: skip
    with httpx.Client(base_url=base_url, timeout=10) as client:
        while not stop.is_set():
            began = time.monotonic()
            try:
                response = client.get(path)
                if path == "/metrics":
                    consumed = _consumed_in_metrics(response.text)
                else:
                    consumed = int(response.json()["totals"]["consumed"])
                out.append((time.time(), consumed))
            except (httpx.HTTPError, KeyError, ValueError):
                counts.errors += 1
            stop.wait(max(0.0, every_s - (time.monotonic() - began)))


def delays(sent: Sequence[float], seen: Sequence[tuple[float, int]]) -> list[float]:
    """Per event: the first read time whose count exceeds its 0-based send rank, minus its
    send time (seconds); events never seen counted are left out (the caller checks that
    none is). ``seen`` must be in read order; counts never go down."""
    out: list[float] = []
    j = 0
    for k, at in enumerate(sent):
        while j < len(seen) and seen[j][1] <= k:
            j += 1
        if j == len(seen):
            break
        out.append(seen[j][0] - at)
    return out


def _pct(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summary(values: Sequence[float]) -> dict[str, float]:
    """p50, p99, max and mean of ``values`` (seconds, 3 decimals)."""
    return {"p50_s": round(_pct(values, 0.5), 3), "p99_s": round(_pct(values, 0.99), 3),
            "max_s": round(max(values, default=float("nan")), 3),
            "mean_s": round(sum(values) / len(values), 3) if values else float("nan")}  # fmt: skip


def _serve(
    repo: Path, workdir: Path, config: dict[str, Any]
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``goldwatch serve`` from the checkout ``repo``; wait for ``/readyz`` 200."""
    port = free_port()
    config = {**config, "api": {"host": "127.0.0.1", "port": port}}
    path = workdir / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(repo), "PYTHONUNBUFFERED": "1"}
    log = (workdir / "serve.log").open("ab")
    process = subprocess.Popen([sys.executable, "-m", "service.cli", "serve", "--config",
                                str(path)], cwd=repo, stdout=log, stderr=subprocess.STDOUT,
                               env=env)  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"serve exited with {process.returncode}; see {workdir}/serve.log")
        try:
            if httpx.get(f"{base}/readyz", timeout=2).status_code == 200:
                return process, base
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    process.terminate()
    raise RuntimeError(f"serve not ready in 240 s; see {workdir}/serve.log")


def measure(broker: TansuBroker, repo: Path, lines: list[bytes], rate: float, seconds: float,
            status_every_s: float, metrics_every_s: float, linger_ms: int = 5
            ) -> dict[str, Any]:  # fmt: skip
    """One serve from ``repo`` on a fresh topic: the per-event delays (see the module doc);
    the producer lingers ``linger_ms`` (ms)."""
    topic = f"fresh-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    broker.create_topic(f"{topic}.dlq", 1)
    total = int(rate * seconds)
    with tempfile.TemporaryDirectory(prefix="gw-fresh-") as tmp:
        workdir = Path(tmp)
        config = {
            "source": {"kind": "kafka"},
            "kafka": {"bootstrap_servers": broker.bootstrap_servers, "topic": topic,
                      "consumer_group": f"fresh-{uuid.uuid4().hex[:8]}"},
            "state": {"path": str(workdir / "state.sqlite")},
        }  # fmt: skip
        process, base = _serve(repo, workdir, config)
        try:
            sent, counts = _drive(broker, topic, lines, total, rate, workdir, base,
                                  status_every_s, metrics_every_s, linger_ms)  # fmt: skip
            batches = batch_figures(httpx.get(f"{base}/metrics", timeout=10).text)
        finally:
            process.terminate()
            try:
                process.wait(30)
            except subprocess.TimeoutExpired:
                process.kill()
    by_status, by_metrics = delays(sent, counts.status), delays(sent, counts.metrics)
    if len(by_status) != total or len(by_metrics) != total:
        raise RuntimeError(f"only {len(by_status)}/{len(by_metrics)} of {total} counted")
    return {"events": total, "status": summary(by_status), "metrics": summary(by_metrics),
            "batches": batches, "sampler_errors": counts.errors}  # fmt: skip


def batch_figures(text: str) -> dict[str, float]:
    """Batches handled, their mean size (events) and mean processing time (s), from the
    ``goldwatch_batch_size`` and ``goldwatch_batch_processing_seconds`` histograms."""
    values: dict[str, float] = {}
    for line in text.splitlines():
        for name in ("goldwatch_batch_size_count", "goldwatch_batch_size_sum",
                     "goldwatch_batch_processing_seconds_sum"):  # fmt: skip
            if line.startswith(name + " "):
                values[name] = float(line.rsplit(" ", 1)[1])
    n = values.get("goldwatch_batch_size_count", 0.0)
    return {"batches": n,
            "mean_size": round(values.get("goldwatch_batch_size_sum", 0.0) / n, 1) if n else 0.0,
            "mean_seconds": round(values.get("goldwatch_batch_processing_seconds_sum", 0.0) / n, 4)
            if n else 0.0}  # fmt: skip


def _drive(broker: TansuBroker, topic: str, lines: list[bytes], total: int, rate: float,
           workdir: Path, base: str, status_every_s: float, metrics_every_s: float,
           linger_ms: int) -> tuple[list[float], Counts]:  # fmt: skip
    """Produce ``total`` events while sampling; wait until all are counted (or 120 s more)."""
    spawn = multiprocessing.get_context("spawn")
    ready, go = spawn.Event(), spawn.Event()
    out = workdir / "sent.json"
    producer = spawn.Process(target=_produce, args=(broker.bootstrap_servers, topic, lines,
                                                    total, rate, ready, go, str(out),
                                                    linger_ms))  # fmt: skip
    producer.start()
    if not ready.wait(120):
        raise RuntimeError("the producer process did not connect")
    counts, stop = Counts(), threading.Event()
    samplers = [threading.Thread(target=_sample, args=(base, status_every_s, "/v1/status", stop,
                                                       counts.status, counts)),
                threading.Thread(target=_sample, args=(base, metrics_every_s, "/metrics", stop,
                                                       counts.metrics, counts))]  # fmt: skip
    for sampler in samplers:
        sampler.start()
    go.set()
    producer.join()
    if producer.exitcode != 0:
        stop.set()
        raise RuntimeError(f"the producer process exited with {producer.exitcode}")
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        done = [c[-1][1] >= total if c else False for c in (counts.status, counts.metrics)]
        if all(done):
            break
        time.sleep(0.2)
    time.sleep(0.3)
    stop.set()
    for sampler in samplers:
        sampler.join()
    return json.loads(out.read_text()), counts


def _send_and_receive(client: Any, broker: TansuBroker, topic: str, lines: list[bytes],
                      total: int, rate: float, seconds: float, linger_ms: int,
                      acks: int | str = 1, tick: Callable[[], None] | None = None,
                      ) -> tuple[dict[int, float], list[float]]:  # fmt: skip
    """Run the producer process (``total`` events of ``lines`` at ``rate``/s, ``linger_ms``,
    ``acks``) while the bare kafka-python ``client`` polls ``topic``: ``({send rank: receive
    time}, send times)`` in Unix seconds (send rank = offset · partitions + partition, as the
    producer sends round robin). ``tick`` runs after each poll."""
    received: dict[int, float] = {}
    with tempfile.TemporaryDirectory(prefix="gw-fresh-") as tmp:
        spawn = multiprocessing.get_context("spawn")
        ready, go = spawn.Event(), spawn.Event()
        out = Path(tmp) / "sent.json"
        producer = spawn.Process(target=_produce, args=(broker.bootstrap_servers, topic, lines,
                                 total, rate, ready, go, str(out), linger_ms, acks))  # fmt: skip
        producer.start()
        ready.wait(120)
        go.set()
        end = time.monotonic() + seconds + 120
        while len(received) < total and time.monotonic() < end:
            for tp, records in client.poll(timeout_ms=100).items():
                now = time.time()
                for record in records:
                    received[record.offset * PARTITIONS + tp.partition] = now
            if tick is not None:
                tick()
        producer.join()
        sent = json.loads(out.read_text())
    return received, sent


def raw_reference(broker: TansuBroker, lines: list[bytes], rate: float, seconds: float,
                  linger_ms: int = 5) -> dict[str, Any]:  # fmt: skip
    """The floor: a kafka-python group consumer (defaults) receiving a topic produced the
    same way; delay = receive time - send time, per event."""
    from kafka import KafkaConsumer

    topic = f"fresh-raw-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    total = int(rate * seconds)
    consumer = KafkaConsumer(topic, bootstrap_servers=broker.bootstrap_servers,
                             group_id=f"raw-{uuid.uuid4().hex[:8]}",
                             auto_offset_reset="earliest")  # fmt: skip
    try:
        deadline = time.monotonic() + 240
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(timeout_ms=200)
        received, sent = _send_and_receive(consumer, broker, topic, lines, total, rate, seconds,
                                           linger_ms)  # fmt: skip
    finally:
        consumer.close()
    values = [received[k] - at for k, at in enumerate(sent) if k in received]
    if len(values) != total:
        raise RuntimeError(f"raw consumer received {len(values)} of {total}")
    return {"events": total, "received": summary(values)}


#: ``--floor``: (name, producer linger_ms, producer acks, consumer kwargs) per row.
FLOOR_VARIATIONS: tuple[tuple[str, int, int | str, dict[str, int]], ...] = (
    ("linger 0, acks 1; consumer defaults", 0, 1, {}),
    ("linger 0, acks all", 0, "all", {}),
    ("linger 0; fetch_max_wait_ms 100", 0, 1, {"fetch_max_wait_ms": 100}),
    ("linger 5", 5, 1, {}),
    ("linger 5, acks all", 5, "all", {}),
    ("linger 5; goldwatch's fetch bounds", 5, 1,
     {"fetch_max_bytes": 1 << 20, "max_partition_fetch_bytes": 256 << 10}),
    ("linger 5; fetch_max_wait_ms 100", 5, 1, {"fetch_max_wait_ms": 100}),
    ("linger 50", 50, 1, {}),
    ("linger 50; fetch_max_wait_ms 100", 50, 1, {"fetch_max_wait_ms": 100}),
)  # fmt: skip


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` (``/proc/<pid>/stat``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def floor_row(broker: TansuBroker, lines: list[bytes], rate: float, seconds: float,
              linger_ms: int, acks: int | str, consumer: dict[str, int]
              ) -> dict[str, Any]:  # fmt: skip
    """A bare kafka-python consumer *assigned* the partitions of a fresh topic (no group
    join, so rows are quick) receiving it as the producer process sends at ``rate``: the
    per-event delay (receive - send, s), its p99 per 10 s of send time, and the broker's CPU
    seconds per second per 10 s (``broker_cores``)."""
    from kafka import KafkaConsumer, TopicPartition

    topic = f"floor-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    total = int(rate * seconds)
    client = KafkaConsumer(bootstrap_servers=broker.bootstrap_servers,
                           auto_offset_reset="earliest", **consumer)  # fmt: skip
    client.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    client.poll(timeout_ms=200)
    cores: list[float] = []
    clock = {"window": time.monotonic() + 10, "cpu": _cpu_seconds(broker.process.pid)}

    def broker_cpu() -> None:  # the broker's CPU seconds per second, per 10 s window
        if time.monotonic() >= clock["window"]:
            now_cpu = _cpu_seconds(broker.process.pid)
            cores.append(round((now_cpu - clock["cpu"]) / 10, 2))
            clock["window"], clock["cpu"] = clock["window"] + 10, now_cpu

    try:
        received, sent = _send_and_receive(client, broker, topic, lines, total, rate, seconds,
                                           linger_ms, acks, broker_cpu)  # fmt: skip
    finally:
        client.close()
    values = [received[k] - at for k, at in enumerate(sent) if k in received]
    if len(values) != total:
        raise RuntimeError(f"the bare consumer received {len(values)} of {total}")
    by_window: dict[int, list[float]] = {}
    for k, at in enumerate(sent):
        by_window.setdefault(int((at - sent[0]) // 10), []).append(received[k] - at)
    return {"received": summary(values),
            "p99_by_10s": [summary(v)["p99_s"] for _, v in sorted(by_window.items())],
            "broker_cores_by_10s": cores}  # fmt: skip


def render_floor(rows: dict[str, dict[str, Any]], rate: float, seconds: float) -> str:
    """The ``--floor`` table: per variation, the delay's p50/p99/max and its trend."""
    out = [f"bare kafka-python consumer (assigned), {rate:,.0f} events/s for {seconds:.0f} s, "
           "send -> received", f"{'variation':44} {'p50 s':>6} {'p99 s':>6} {'max s':>6}  "
           "p99 per 10 s | broker cores per 10 s"]  # fmt: skip
    for name, row in rows.items():
        fig = row["received"]
        out.append(f"{name:44} {fig['p50_s']:6.2f} {fig['p99_s']:6.2f} {fig['max_s']:6.2f}  "
                   f"{row['p99_by_10s']} | {row['broker_cores_by_10s']}")  # fmt: skip
    return "\n".join(out)


def render(results: dict[str, dict[str, Any]], rate: float, seconds: float,
           linger_ms: int = 5) -> str:  # fmt: skip
    """One table: per run, p50/p99/max/mean of the per-event delay (s) by endpoint."""
    rows = [
        f"freshness at {rate:,.0f} events/s for {seconds:.0f} s, default configuration, "
        f"per event (send -> counted); producer acks 1, linger_ms {linger_ms}",
        f"{'run':28} {'counted in':12} {'p50 s':>7} {'p99 s':>7} {'max s':>7} {'mean s':>7}",
    ]
    for name, result in results.items():
        for where in ("status", "metrics", "received"):
            if where in result:
                fig = result[where]
                label = {"status": "/v1/status", "metrics": "/metrics",
                         "received": "poll"}[where]  # fmt: skip
                rows.append(
                    f"{name:28} {label:12} {fig['p50_s']:7.3f} {fig['p99_s']:7.3f} "
                    f"{fig['max_s']:7.3f} {fig['mean_s']:7.3f}"
                )
        if "batches" in result:
            b = result["batches"]
            rows.append(
                f"{'':28} {b['batches']:.0f} batches, mean {b['mean_size']} events, "
                f"{1000 * b['mean_seconds']:.0f} ms each"
            )
    rows.append("target: p99 <= 1 s (issue 22 item 4); raw = plain kafka-python group consumer")
    return "\n".join(rows)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=2000.0)
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--status-every-s", type=float, default=0.02)
    parser.add_argument("--metrics-every-s", type=float, default=0.25)
    parser.add_argument(
        "--before",
        type=Path,
        default=None,
        help="another checkout to measure first, as the same-run reference",
    )
    parser.add_argument("--raw", action="store_true", help="also measure a raw consumer")
    parser.add_argument("--linger-ms", type=int, default=5,
                        help="the producer's linger_ms (see the module doc)")  # fmt: skip
    parser.add_argument("--floor", action="store_true",
                        help="only a bare client under FLOOR_VARIATIONS")  # fmt: skip
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    lines = production_lines(POOL)
    broker = TansuBroker.start()
    results: dict[str, dict[str, Any]] = {}
    if args.floor:
        try:
            rows = {name: floor_row(broker, lines, args.rate, args.seconds, linger, acks, kw)
                    for name, linger, acks, kw in FLOOR_VARIATIONS}  # fmt: skip
        finally:
            broker.stop()
        print(json.dumps(rows, indent=1) if args.json
              else render_floor(rows, args.rate, args.seconds))  # fmt: skip
        return
    try:
        if args.raw:
            results["kafka-python (raw)"] = raw_reference(broker, lines, args.rate, args.seconds,
                                                          args.linger_ms)  # fmt: skip
        if args.before is not None:
            results[f"before ({args.before.name})"] = measure(
                broker, args.before, lines, args.rate, args.seconds, args.status_every_s,
                args.metrics_every_s, args.linger_ms)  # fmt: skip
        results["goldwatch serve (this tree)"] = measure(
            broker, REPO_ROOT, lines, args.rate, args.seconds, args.status_every_s,
            args.metrics_every_s, args.linger_ms)  # fmt: skip
    finally:
        broker.stop()
    print(json.dumps(results, indent=1) if args.json
          else render(results, args.rate, args.seconds, args.linger_ms))  # fmt: skip


if __name__ == "__main__":
    main()
