"""Scale-out: events/s with 1 and 2 ``goldwatch serve`` replicas in one consumer group.

A Tansu broker (``tests/kafka_broker.py``) serves one 4-partition topic per row;
``--events`` generated events (``benchmarks.streams.mixed_stream``: real NQ-open / CLINC150
questions, no poison pills) are produced round-robin over the partitions. The replicas are
real ``goldwatch serve`` subprocesses (the acceptance tests' ``ServiceProcess``), each with
its own state file, in a fresh consumer group.

How a row is timed, the same way for 1 and 2 replicas: every 0.1 s the benchmark reads each
replica's ``/v1/status`` (processed total, assigned partitions); the window starts when every
replica has its partitions and has processed 10 % of *its own* partitions' events, and ends
when the first replica has processed 90 % of its own (after that only the other one still
works: the tail of a finite topic, not scale-out). The rate is the group's processed events
in the window / its length. For 1 replica this is the topic's 10 %..90 %, as before.

Until 2026-11-30 the window was 10 %..90 % of the whole topic for both rows. Replicas do not
get their partitions at the same moment (here the second started consuming about a second
after the first), so the first one consumed alone while the other was still joining, often
half its own share of a 15,000-event ``--quick`` run: that join, absent from the 1-replica
row, sat inside the 2-replica window (2 replicas 8,895 ev/s vs 1 replica 17,120 ev/s in one
such run). A run too short for both replicas to be working at the same time now fails with
a message saying so instead of printing a rate; so does a rebalance during the run (each
replica's processed count would then include partitions it no longer owns).

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

from service.demo import demo_data, demo_path

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
    config.update({key: str(path) for key, path in demo_data().items()})
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


def shares(n: int) -> list[int]:
    """Events per partition when ``n`` events are produced round-robin (event ``i`` goes to
    partition ``i % PARTITIONS``)."""
    return [n // PARTITIONS + (1 if p < n % PARTITIONS else 0) for p in range(PARTITIONS)]


def measure(broker: Any, topic: str, n: int, workload: str, replicas: int, workdir: Path,
            timeout_s: float = 600) -> Row:  # fmt: skip
    """Start ``replicas`` serve processes in a fresh group; time the window of the module doc.

    :raises RuntimeError: timeout, a rebalance during the run, or no moment with every replica
        between 10 % and 90 % of its own share (the run is too short).
    """
    from tests.acceptance.service_process import ServiceProcess

    group = f"scale-{uuid.uuid4().hex[:8]}"
    started: list[Any] = []
    per_partition = shares(n)
    try:
        for i in range(replicas):
            where = workdir / f"{workload}-{replicas}-{i}"
            config = replica_config(broker.bootstrap_servers, topic, group, workload,
                                    where / "state.sqlite")  # fmt: skip
            started.append(ServiceProcess.start(where, config, wait=False))
        for service in started:
            service.wait_healthy(timeout_s=120)
        t_low = t_high = None
        p_low = p_high = 0
        per: list[int] = [0] * replicas
        deadline = time.monotonic() + timeout_s
        while t_high is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{workload} x{replicas}: {sum(per)} of {n} after {timeout_s}s")
            now = time.perf_counter()
            statuses = [service.status() for service in started]
            per = [int(st["totals"]["processed"]) for st in statuses]
            sources = [st["source"] or {} for st in statuses]
            if any(int(src.get("rebalances") or 0) > 1 for src in sources):
                raise RuntimeError(f"{workload} x{replicas}: a rebalance during the run")
            own = [sum(per_partition[p] for p in src.get("assigned_partitions") or [])
                   for src in sources]  # fmt: skip
            progress = [
                done / share if share else 0.0 for done, share in zip(per, own, strict=True)
            ]
            if t_low is None and sum(own) == n and min(progress) >= 0.1:
                if max(progress) >= 0.9:
                    raise RuntimeError(
                        f"{workload} x{replicas}: too short to measure, one replica passed 90 % "
                        f"of its partitions before another passed 10 % ({per} of {own})"
                    )
                t_low, p_low = now, sum(per)
            elif t_low is not None and max(progress) >= 0.9:
                t_high, p_high = now, sum(per)
            time.sleep(0.1)
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
    lines.append(f"{PARTITIONS} partitions, one consumer group per row; window = every replica "
                 "past 10 % of its own partitions .. the first past 90 %; broker and replicas "
                 "share this machine's cores")  # fmt: skip
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
