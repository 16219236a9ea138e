"""Scale-out: events/s with 1 and 2 ``goldwatch serve`` replicas in one consumer group.

A Tansu broker (``tests/kafka_broker.py``) holds a 4-partition topic of ``--events``
generated events (``benchmarks.streams.mixed_stream``: real NQ-open / CLINC150 questions,
no poison pills). For each replica count a fresh consumer group reads the topic from the
start; the replicas are real ``goldwatch serve`` subprocesses (the acceptance tests'
``ServiceProcess``), each with its own state file. Every 0.25 s the benchmark reads each
replica's ``/v1/status`` totals; the rate is the group's processed events between the
moment it passed 10 % of the topic and the moment it passed 90 % (so process start-up,
the group join and the tail are excluded alike for both counts).

Workloads: ``live`` — the live stages of the demo configuration minus shadow (PII,
language, topic, refusal, scope, drift, quality, harvest; harvest suggestions also go to
the compacted Kafka topic); ``none`` — analytics off (decode, dedup, count, checkpoints).

On this machine the replicas, the broker and the benchmark share 2 CPU cores, so 2 replicas
can at best double the rate of a CPU-bound workload, and only if the broker and the status
polling take little CPU. Each replica is one Python process: its stages run under one GIL,
so one replica never uses more than about one core for the pipeline, and a second replica
is the way to use the second core.

Run: ``python -m benchmarks.bench_scaleout [--events 40000] [--workloads live,none]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from service.demo import demo_path

PARTITIONS = 4
DEFAULT_EVENTS = 40_000
KAFKA_TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 6000,
    "heartbeat_interval_ms": 600,
    "max_poll_interval_ms": 60_000,
    "request_timeout_ms": 10_000,
    "commit_interval_s": 0,
}
PIPELINE: dict[str, Any] = {"max_batch_size": 500, "max_batch_wait_ms": 200,
                            "commit_interval_s": 1.0, "status_interval_s": 0.5}  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One measurement: workload, replicas, events in the window, window seconds, per-replica
    share of the processed events."""

    workload: str
    replicas: int
    events: int
    seconds: float
    shares: tuple[int, ...]

    @property
    def rate(self) -> float:
        """Events per second of the whole group in the 10 %–90 % window."""
        return self.events / self.seconds if self.seconds > 0 else 0.0


def replica_config(bootstrap: str, topic: str, group: str, workload: str,
                   state: Path) -> dict[str, Any]:  # fmt: skip
    """A serve config: the demo's analytics/harvest settings minus shadow, Kafka source."""
    config: dict[str, Any] = yaml.safe_load(demo_path("goldwatch.yaml").read_text("utf-8"))
    config["shadow"] = {**config.get("shadow", {}), "candidates": [],
                        "evaluate_on_start": False}  # fmt: skip
    if workload == "none":
        config["analytics"] = {"enabled": False}
    config["source"] = {"kind": "kafka"}
    config["kafka"] = {"bootstrap_servers": bootstrap, "topic": topic, "consumer_group": group,
                       **KAFKA_TIMINGS}  # fmt: skip
    config["pipeline"] = dict(PIPELINE)
    config["state"] = {"path": str(state)}
    return config


def measure(broker: Any, topic: str, n: int, workload: str, replicas: int, workdir: Path,
            timeout_s: float = 600) -> Row:  # fmt: skip
    """Start ``replicas`` serve processes in a fresh group; time 10 % → 90 % of ``n``."""
    from tests.acceptance.service_process import ServiceProcess

    group = f"scale-{uuid.uuid4().hex[:8]}"
    started: list[Any] = []
    try:
        for i in range(replicas):
            where = workdir / f"{workload}-{replicas}-{i}"
            config = replica_config(broker.bootstrap_servers, topic, group, workload,
                                    where / "state.sqlite")  # fmt: skip
            started.append(ServiceProcess.start(where, config, wait=False))
        for service in started:
            service.wait_healthy(timeout_s=120)
        low, high = 0.1 * n, 0.9 * n
        t_low = t_high = None
        p_low = p_high = 0
        per: list[int] = [0] * replicas
        deadline = time.monotonic() + timeout_s
        while t_high is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workload} x{replicas}: {sum(per)} of {n} after {timeout_s}s")
            now = time.perf_counter()
            for i, service in enumerate(started):
                try:
                    per[i] = int(service.totals()["processed"])
                except Exception:  # not serving yet
                    continue
            total = sum(per)
            if t_low is None and total >= low:
                t_low, p_low = now, total
            if total >= high:
                t_high, p_high = now, total
            time.sleep(0.25)
        assert t_low is not None
        return Row(workload, replicas, p_high - p_low, t_high - t_low, tuple(per))
    finally:
        for service in started:
            service.kill()


def run(n: int = DEFAULT_EVENTS, workloads: Sequence[str] = ("live", "none"),
        counts: Sequence[int] = (1, 2)) -> list[Row]:  # fmt: skip
    """Start a broker, produce the topic once, measure every workload × replica count."""
    from benchmarks.bench_pipeline import produce_topic
    from benchmarks.streams import mixed_stream
    from tests.kafka_broker import TansuBroker

    broker = TansuBroker.start()
    rows = []
    try:
        topic = f"scale-{uuid.uuid4().hex[:8]}"
        broker.create_topic(topic, PARTITIONS)
        items = mixed_stream(n, poison_share=0.0, seed=44)
        produce_topic(broker.bootstrap_servers, topic, [value for value, _ in items])
        with tempfile.TemporaryDirectory(prefix="gw-bench-scale-") as tmp:
            for workload in workloads:
                for replicas in counts:
                    rows.append(measure(broker, topic, n, workload, replicas, Path(tmp)))
    finally:
        broker.stop()
    return rows


def render(rows: Sequence[Row]) -> str:
    """The table: group events/s, speed-up over 1 replica, each replica's processed count."""
    lines = [f"{'workload':9} {'replicas':>8} {'events':>8} {'seconds':>8} {'events/s':>9} "
             f"{'speed-up':>8}  processed per replica"]  # fmt: skip
    one: dict[str, float] = {}
    for row in rows:
        one.setdefault(row.workload, row.rate)
        lines.append(f"{row.workload:9} {row.replicas:8d} {row.events:8d} {row.seconds:8.2f} "
                     f"{row.rate:9,.0f} {row.rate / one[row.workload]:8.2f}  "
                     f"{', '.join(str(s) for s in row.shares)}")  # fmt: skip
    lines.append(f"{PARTITIONS} partitions, one consumer group per row; window = 10 %..90 % "
                 "of the topic; broker and replicas share this machine's cores")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the scale-out table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--workloads", default="live,none")
    args = parser.parse_args(argv)
    print(render(run(args.events, args.workloads.split(","))))


if __name__ == "__main__":
    main()
