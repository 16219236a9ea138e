"""Scale-out: events/s with 1, 2 and 4 ``goldwatch serve`` replicas in one consumer group.

A Tansu broker (``tests/kafka_broker.py``) serves one fresh topic per row, with 4 or 8
partitions (``--partitions``); ``--events`` generated events (``benchmarks.streams.mixed_stream``:
real NQ-open / CLINC150 questions, no poison pills) are produced round-robin over its
partitions. The replicas are real ``goldwatch serve`` subprocesses (the acceptance tests'
``ServiceProcess``), each with its own state file, in a fresh consumer group.

How a row is run and timed, the same way for every replica count: the replicas start on the
row's *empty* topic; the events are produced only once every replica is healthy, the group's
assignment covers every partition and has not changed for a second (so no replica consumes
alone while the others are still joining, and nothing is consumed twice after a join's
rebalance), and the replicas are stopped (``SIGSTOP``) while the topic fills and continued
together (``SIGCONT``) after it (so all of them start from a full topic at the same moment).
Then every 0.1 s the benchmark reads each replica's ``/v1/status`` (processed total, assigned
partitions); the window starts when every replica has processed 10 % of *its
own* partitions' events, and ends when the first replica has processed 90 % of its own (after
that only the others still work: the tail of a finite topic, not scale-out). The rate is the
group's processed events in the window / its length; the speed-up is that rate over the
1-replica rate of the same workload and partition count in the same run. A run too short for
every replica to be working at the same time fails with a message saying so; so does a
rebalance during the measurement. The replicas' CPU seconds (user + system, ``/proc``) over
the window give events per CPU second — events/s per core, a figure that other load on the
machine changes far less than the wall-clock rate. At the end of a row each replica's
``/metrics`` is scraped and its samples counted (Prometheus series per replica, histogram
buckets included).

Until 2026-11-30 the window was 10 %..90 % of the whole topic (one replica's join inside the
2-replica window); until 2026-12-01 the topic was produced before the replicas started, so the
first replica to join consumed alone until the others had joined (a rebalance the 4-replica
rows, started on a loaded machine seconds apart, could not avoid); on 2026-12-01 the
replicas consumed while the topic filled (the ``defaults`` rows of that day's docs table), which
left analytics off too little to measure after production.

Workloads: ``defaults`` — the default configuration (only ``gold_set`` and ``corpus`` set, the
demo's; every analytics stage at its default; no shadow candidate, since none is configured by
default); ``none`` — the same with ``analytics.enabled: false`` (decode, dedup, count,
checkpoints); ``live`` — the demo configuration's live stages minus shadow (the row measured
until 2026-12-01). Every workload gets the same Kafka group timings (``KAFKA_TIMINGS``: a
session timeout of 30 s, above the pause while the topic fills, below the 45 s default) and
``pipeline.status_interval_s: 0.5`` (so ``/v1/status`` shows the assignment promptly).

On this machine the replicas, the broker and the benchmark share 2 CPU cores (with whatever
else runs: the load average at the start and end of each row is printed), so 2 replicas can at
best double the rate of a CPU-bound workload, and 4 replicas cannot be faster than 2: they
split the same 2 cores. Each replica is one Python process: its stages run under one GIL, so
one replica never uses more than about one core for the pipeline, and a second replica is the
way to use a second core.

Run: ``python -m benchmarks.bench_scaleout [--events 24000] [--workloads defaults,none]
[--replicas 1,2,4] [--partitions 4,8]``.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from service.demo import demo_data, demo_path

PARTITIONS = (4, 8)
REPLICAS = (1, 2, 4)
WORKLOADS = ("defaults", "none")
DEFAULT_EVENTS = 24_000
KAFKA_TIMINGS: dict[str, Any] = {
    "session_timeout_ms": 30_000,
    "heartbeat_interval_ms": 1000,
    "max_poll_interval_ms": 60_000,
    "request_timeout_ms": 10_000,
}
#: The ``live`` workload's pipeline settings (as measured until 2026-12-01); the other
#: workloads keep the defaults except ``status_interval_s``.
LIVE_PIPELINE: dict[str, Any] = {"max_batch_size": 500, "max_batch_wait_ms": 200,
                                 "commit_interval_s": 1.0}  # fmt: skip
STATUS_INTERVAL_S = 0.5
#: Analytics off runs about 5x faster than the defaults: 5x the events, so that its window
#: lasts seconds, not a few of the 0.1 s status polls.
NONE_FACTOR = 5


@dataclass(frozen=True)
class Row:
    """One measurement: workload, partitions, replicas, events in the window, window seconds,
    per-replica processed counts at the end, per-replica Prometheus series (samples on
    ``/metrics``) and the 1-minute load average at the row's start and end."""

    workload: str
    partitions: int
    replicas: int
    events: int
    seconds: float
    shares: tuple[int, ...]
    series: tuple[int, ...]
    load: tuple[float, float]
    cpu_seconds: float

    @property
    def rate(self) -> float:
        """Events per second of the whole group in the 10 %–90 % window."""
        return self.events / self.seconds if self.seconds > 0 else 0.0

    @property
    def per_cpu_second(self) -> float:
        """Events per CPU second of the replica processes in the window (user + system time,
        all their threads): events/s per core, whatever else shares the machine."""
        return self.events / self.cpu_seconds if self.cpu_seconds > 0 else 0.0


def replica_config(bootstrap: str, topic: str, group: str, workload: str,
                   state: Path) -> dict[str, Any]:  # fmt: skip
    """A serve config for ``workload`` (see the module doc) reading ``topic`` as ``group``."""
    data = {key: str(path) for key, path in demo_data().items()}
    config: dict[str, Any]
    if workload == "live":
        config = yaml.safe_load(demo_path("goldwatch.yaml").read_text("utf-8"))
        config.update(data)
        config["shadow"] = {**config.get("shadow", {}), "candidates": [],
                            "evaluate_on_start": False}  # fmt: skip
        config["pipeline"] = {**LIVE_PIPELINE, "status_interval_s": STATUS_INTERVAL_S}
        kafka_extra: dict[str, Any] = {"commit_interval_s": 0}
    elif workload in ("defaults", "none"):
        config = dict(data)
        if workload == "none":
            config["analytics"] = {"enabled": False}
        config["pipeline"] = {"status_interval_s": STATUS_INTERVAL_S}
        kafka_extra = {}
    else:
        raise ValueError(f"unknown workload {workload!r}: defaults, none or live")
    config["source"] = {"kind": "kafka"}
    config["kafka"] = {"bootstrap_servers": bootstrap, "topic": topic, "consumer_group": group,
                       **KAFKA_TIMINGS, **kafka_extra}  # fmt: skip
    config["state"] = {"path": str(state)}
    return config


def shares(n: int, partitions: int) -> list[int]:
    """Events per partition when ``n`` events are produced round-robin (event ``i`` goes to
    partition ``i % partitions``)."""
    return [n // partitions + (1 if p < n % partitions else 0) for p in range(partitions)]


def produce(bootstrap: str, topic: str, values: Sequence[bytes], partitions: int) -> None:
    """Produce ``values`` round-robin over ``partitions`` partitions, batched, keyed."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5,
                             batch_size=256 * 1024, max_request_size=4 << 20)  # fmt: skip
    try:
        for i, value in enumerate(values):
            producer.send(topic, value=value, key=b"k-%d" % i, partition=i % partitions)
        producer.flush(timeout=300)
    finally:
        producer.close()


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` so far (Linux ``/proc/<pid>/stat`` fields
    14 and 15, in clock ticks; proc(5))."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rindex(")") + 2 :].split()  # after "pid (comm) "; field 3 is fields[0]
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _sources(started: Sequence[Any]) -> list[dict[str, Any]]:
    return [service.status()["source"] or {} for service in started]


def wait_assigned(started: Sequence[Any], partitions: int, timeout_s: float) -> list[int]:
    """Block until the replicas' assignments cover ``partitions`` partitions, each replica has
    one, and neither assignments nor rebalance counts changed for 1 s; return the rebalance
    counts.

    :raises RuntimeError: not so within ``timeout_s`` seconds.
    """
    deadline = time.monotonic() + timeout_s
    seen: tuple[Any, ...] | None = None
    since = time.monotonic()
    while time.monotonic() < deadline:
        sources = _sources(started)
        assigned = [sorted(src.get("assigned_partitions") or []) for src in sources]
        key = (tuple(map(tuple, assigned)), tuple(int(src.get("rebalances") or 0)
                                                  for src in sources))  # fmt: skip
        complete = (sorted(p for a in assigned for p in a) == list(range(partitions))
                    and all(assigned))  # fmt: skip
        if key != seen:
            seen, since = key, time.monotonic()
        elif complete and time.monotonic() - since >= 1.0:
            return list(key[1])
        time.sleep(0.2)
    raise RuntimeError(f"group assignment not complete and stable after {timeout_s}s: {seen}")


def measure(broker: Any, values: Sequence[bytes], workload: str, partitions: int,
            replicas: int, workdir: Path, timeout_s: float = 600) -> Row:  # fmt: skip
    """Start ``replicas`` serve processes on a fresh empty topic in a fresh group, produce
    ``values`` once the group is stable, time the window of the module doc.

    :raises RuntimeError: timeout, a rebalance during the measurement, or no moment with every
        replica between 10 % and 90 % of its own share (the run is too short).
    """
    from tests.acceptance.service_process import ServiceProcess

    load_start = os.getloadavg()[0]
    n = len(values)
    topic = f"scale-{partitions}-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, partitions)
    group = f"scale-{uuid.uuid4().hex[:8]}"
    started: list[Any] = []
    per_partition = shares(n, partitions)
    what = f"{workload} {partitions}p x{replicas}"
    try:
        for i in range(replicas):
            where = workdir / f"{workload}-{partitions}-{replicas}-{i}"
            config = replica_config(broker.bootstrap_servers, topic, group, workload,
                                    where / "state.sqlite")  # fmt: skip
            started.append(ServiceProcess.start(where, config, wait=False))
        for service in started:
            service.wait_healthy(timeout_s=180)
        rebalances = wait_assigned(started, partitions, timeout_s=180)
        # Stopped while the topic fills: analytics off consumes about as fast as this loaded
        # machine produces, so the replicas would be near the end before the window opens.
        # The session timeout (KAFKA_TIMINGS) must outlast the pause, or the group rebalances
        # (and the row fails, saying so).
        for service in started:
            os.kill(service.process.pid, signal.SIGSTOP)
        try:
            produce(broker.bootstrap_servers, topic, values, partitions)
        finally:
            for service in started:
                os.kill(service.process.pid, signal.SIGCONT)
        t_low = t_high = None
        p_low = p_high = 0
        cpu_low = cpu_high = 0.0
        per: list[int] = [0] * replicas
        deadline = time.monotonic() + timeout_s
        while t_high is None:
            if time.monotonic() > deadline:
                raise RuntimeError(f"{what}: {sum(per)} of {n} after {timeout_s}s")
            now = time.perf_counter()
            statuses = [service.status() for service in started]
            per = [int(st["totals"]["processed"]) for st in statuses]
            sources = [st["source"] or {} for st in statuses]
            if [int(src.get("rebalances") or 0) for src in sources] != rebalances:
                raise RuntimeError(f"{what}: a rebalance during the run")
            own = [sum(per_partition[p] for p in src.get("assigned_partitions") or [])
                   for src in sources]  # fmt: skip
            progress = [
                done / share if share else 0.0 for done, share in zip(per, own, strict=True)
            ]
            if t_low is None and sum(own) == n and min(progress) >= 0.1:
                if max(progress) >= 0.9:
                    raise RuntimeError(
                        f"{what}: too short to measure, one replica passed 90 % of its "
                        f"partitions before another passed 10 % ({per} of {own})"
                    )
                t_low, p_low = now, sum(per)
                cpu_low = sum(cpu_seconds(service.process.pid) for service in started)
            elif t_low is not None and max(progress) >= 0.9:
                t_high, p_high = now, sum(per)
                cpu_high = sum(cpu_seconds(service.process.pid) for service in started)
            time.sleep(0.1)
        assert t_low is not None
        series = tuple(len(service.samples()) for service in started)
        return Row(workload, partitions, replicas, p_high - p_low, t_high - t_low, tuple(per),
                   series, (load_start, os.getloadavg()[0]), cpu_high - cpu_low)  # fmt: skip
    finally:
        for service in started:
            service.kill()


def run(n: int = DEFAULT_EVENTS, workloads: Sequence[str] = WORKLOADS,
        counts: Sequence[int] = REPLICAS,
        partitions: Sequence[int] = PARTITIONS) -> list[Row]:  # fmt: skip
    """Start a broker, generate the events once, measure every workload × partition count ×
    replica count (replica counts above the partition count are skipped: those replicas
    would sit idle). ``none`` gets ``NONE_FACTOR`` × ``n`` events."""
    from benchmarks.streams import mixed_stream
    from tests.kafka_broker import TansuBroker

    values = [value for value, _ in mixed_stream(n * NONE_FACTOR, poison_share=0.0, seed=44)]
    broker = TansuBroker.start()
    rows = []
    try:
        with tempfile.TemporaryDirectory(prefix="gw-bench-scale-") as tmp:
            for workload in workloads:
                for count in partitions:
                    for replicas in counts:
                        if replicas <= count:
                            events = values[: n * (NONE_FACTOR if workload == "none" else 1)]
                            rows.append(measure(broker, events, workload, count, replicas,
                                                Path(tmp)))  # fmt: skip
                            print(render(rows).splitlines()[-2], flush=True)
    finally:
        broker.stop()
    return rows


def render(rows: Sequence[Row]) -> str:
    """The table: group events/s, speed-up over 1 replica of the same workload and partition
    count, each replica's processed count and Prometheus series, load average."""
    lines = [f"{'workload':9} {'parts':>5} {'replicas':>8} {'events':>7} {'seconds':>7} "
             f"{'events/s':>9} {'speed-up':>8} {'ev/cpu-s':>8} {'cores':>5} {'series/replica':>15} "
             f"{'load':>11}  "
             "processed per replica"]  # fmt: skip
    one: dict[tuple[str, int], float] = {}
    for row in rows:
        if row.replicas == 1:
            one[(row.workload, row.partitions)] = row.rate
        base = one.get((row.workload, row.partitions))
        ratio = f"{row.rate / base:8.2f}" if base else f"{'-':>8}"
        series = f"{min(row.series)}-{max(row.series)}" if row.series else "-"
        lines.append(f"{row.workload:9} {row.partitions:5d} {row.replicas:8d} {row.events:7d} "
                     f"{row.seconds:7.2f} {row.rate:9,.0f} {ratio} {row.per_cpu_second:8,.0f} "
                     f"{row.cpu_seconds / row.seconds if row.seconds else 0:5.2f} "
                     f"{series:>15} "
                     f"{row.load[0]:5.1f}-{row.load[1]:<5.1f}  "
                     f"{', '.join(str(s) for s in row.shares)}")  # fmt: skip
    lines.append(f"one consumer group and one fresh topic per row, events produced once the group "
                 f"is stable; window = every replica past 10 % of its own partitions .. the first "
                 f"past 90 %; broker and replicas share this machine's {os.cpu_count()} cores; "
                 "load = 1-minute load average at the row's start-end; ev/cpu-s = events in "
                 "the window per CPU second the replicas used in it; cores = those CPU seconds "
                 "/ the window's seconds (how much CPU the group got)")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the scale-out table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--workloads", default=",".join(WORKLOADS))
    parser.add_argument("--replicas", default=",".join(map(str, REPLICAS)))
    parser.add_argument("--partitions", default=",".join(map(str, PARTITIONS)))
    args = parser.parse_args(argv)

    def ints(text: str) -> list[int]:
        return [int(part) for part in text.split(",")]

    rows = run(args.events, args.workloads.split(","), ints(args.replicas), ints(args.partitions))
    print(render(rows))


if __name__ == "__main__":
    main()
