"""Acceptance of the live Kafka path: a real Tansu broker and ``goldwatch serve`` subprocesses.

The stream is 20,000 real-question events over 4 partitions with 1 % poison pills of every
kind (``benchmarks/streams.py``), each with the dead-letter reason it must get. Whatever
happens (kill -9, a second replica, a frozen broker, a stuck handler), every produced
message must end up processed or dead-lettered exactly once in the persisted totals, the
dead-letter topic must hold every pill with its reason, and the group's committed offsets
must reach the end of every partition.
"""

from __future__ import annotations

import base64
import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from benchmarks.streams import TEST_MAX_EVENT_BYTES, mixed_stream, write_jsonl
from service.events import parse_timestamp
from tests.acceptance.conftest import (
    Produced,
    b64,
    dlq_by_origin,
    kafka_config,
    produce,
)
from tests.acceptance.service_process import (
    REPO_ROOT,
    ServiceProcess,
    accounted,
    metric_by,
    metric_sum,
    write_config,
)
from tests.kafka_broker import TansuBroker

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

N = 20_000
SLOW = "tests.acceptance.slow_stage:SlowStage"
THROTTLE = "tests.acceptance.slow_stage:ThrottleStage"

StartService = Callable[..., ServiceProcess]


@pytest.fixture(scope="module")
def shared(broker: TansuBroker) -> Produced:
    """The 20,000-message topic every test of this module reads with its own group."""
    topic = f"queries-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 4)
    items = mixed_stream(N, poison_share=0.01, seed=11)
    return Produced(topic, items, produce(broker, topic, items))


def _accounted(produced: int) -> Callable[[dict[str, Any]], bool]:
    return lambda s: accounted(s["totals"]) >= produced


def _wait_committed(broker: TansuBroker, topic: str, group: str, timeout_s: float = 30) -> None:
    """Wait until the group's committed offsets (asked of the broker) equal the end offsets."""
    ends = broker.end_offsets(topic)
    deadline = time.monotonic() + timeout_s
    while (committed := broker.committed(topic, group)) != ends:
        assert time.monotonic() < deadline, f"committed {committed} != end offsets {ends}"
        time.sleep(0.5)


def _consume_all(
    service: ServiceProcess,
    broker: TansuBroker,
    topic: str,
    group: str,
    produced: int,
    timeout_s: float = 90,
) -> dict[str, Any]:
    """Wait until ``produced`` messages are accounted for and committed; return the status."""
    service.wait_until(_accounted(produced), timeout_s=timeout_s, what="all consumed")
    _wait_committed(broker, topic, group)
    return service.status()


def _nonzero(counts: dict[str, int]) -> dict[str, int]:
    return {k: v for k, v in counts.items() if v}


def _assert_exact(totals: dict[str, Any], produced: Produced, extra_good: int = 0) -> None:
    assert totals["processed"] == produced.good + extra_good, totals
    assert _nonzero(totals["dead_lettered"]) == produced.dead, totals
    dup = totals["duplicates"]
    assert totals["consumed"] == totals["processed"] + sum(totals["dead_lettered"].values()) + dup
    assert dup == totals["redelivered"], (
        "no event id repeats in the stream: duplicates are redeliveries"
    )


def _assert_metrics_match(service: ServiceProcess, totals: dict[str, Any]) -> None:
    """/metrics (this process) equals /v1/status totals (valid for a never-restarted process)."""
    samples = service.samples()
    kafka = {"source": "kafka"}
    assert metric_sum(samples, "goldwatch_events_consumed_total", **kafka) == totals["consumed"]
    assert metric_sum(samples, "goldwatch_events_processed_total", **kafka) == totals["processed"]
    assert metric_sum(samples, "goldwatch_events_duplicate_total", **kafka) == totals["duplicates"]
    dead = metric_by(samples, "goldwatch_events_dead_lettered_total", "reason", **kafka)
    assert _nonzero({k: int(v) for k, v in dead.items()}) == _nonzero(totals["dead_lettered"])


@pytest.fixture(scope="module")
def kafka_run(broker: TansuBroker, shared: Produced, tmp_path_factory: pytest.TempPathFactory):
    """One serve process consuming the shared topic to its end; what it reported, then SIGTERM."""
    workdir = tmp_path_factory.mktemp("kafka-run")
    group = f"gw-acc-{uuid.uuid4().hex[:10]}"
    config = kafka_config(broker, shared.topic, group, state=workdir / "state.sqlite")
    ends = broker.end_offsets(shared.topic)
    started = time.monotonic()
    service = ServiceProcess.start(workdir, config)
    try:
        status = _consume_all(service, broker, shared.topic, group, N)
        seconds = time.monotonic() - started
        samples = service.samples()
        readyz = service.readyz()
        exit_code = service.terminate()
    finally:
        service.kill()
    return {
        "status": status,
        "samples": samples,
        "readyz": readyz,
        "exit_code": exit_code,
        "seconds": seconds,
        "group": group,
        "ends": ends,
        "service": service,
    }


def test_every_message_is_processed_or_dead_lettered_exactly_once(
    kafka_run: dict[str, Any], shared: Produced
) -> None:
    totals = kafka_run["status"]["totals"]
    assert totals["consumed"] == N
    assert accounted(totals) == N
    _assert_exact(totals, shared)
    assert totals["duplicates"] == 0
    assert kafka_run["readyz"] == 200
    assert kafka_run["exit_code"] == 0  # a clean stop on SIGTERM (service/api/serving.py)
    print(f"\n20,000 messages consumed in {kafka_run['seconds']:.1f} s (start-up included)")


def test_metrics_agree_with_status(kafka_run: dict[str, Any], shared: Produced) -> None:
    samples, totals = kafka_run["samples"], kafka_run["status"]["totals"]
    kafka = {"source": "kafka"}
    assert metric_sum(samples, "goldwatch_events_consumed_total", **kafka) == N
    assert metric_sum(samples, "goldwatch_events_processed_total", **kafka) == totals["processed"]
    assert metric_sum(samples, "goldwatch_events_duplicate_total", **kafka) == 0
    dead = metric_by(samples, "goldwatch_events_dead_lettered_total", "reason", **kafka)
    assert _nonzero({k: int(v) for k, v in dead.items()}) == shared.dead
    lag = metric_by(samples, "goldwatch_consumer_lag", "partition", topic=shared.topic)
    assert lag == {"0": 0, "1": 0, "2": 0, "3": 0}
    assert metric_sum(samples, "goldwatch_commits_total") >= 1
    assert 1 <= metric_sum(samples, "goldwatch_rebalances_total") <= 2
    assert metric_sum(samples, "goldwatch_build_info") == 1
    newest = max(
        parse_timestamp(json.loads(value)["timestamp"]).timestamp()
        for value, reason in shared.items
        if reason is None and value is not None
    )
    assert metric_sum(samples, "goldwatch_last_event_timestamp_seconds") == pytest.approx(newest)


def test_dead_letter_topic_holds_every_pill_with_its_reason(
    broker: TansuBroker, kafka_run: dict[str, Any], shared: Produced
) -> None:
    letters = dlq_by_origin(broker, f"{shared.topic}.dlq")
    expected = shared.expected_reason
    assert set(letters) == set(expected)
    values = {w: v for w, (v, _) in zip(shared.where, shared.items, strict=True)}
    for where, reason in expected.items():
        (letter,) = letters[where]  # no crash here: exactly one dead letter each
        assert letter["reason"] == reason, (where, letter["detail"])
        assert letter["origin"]["topic"] == shared.topic
        assert letter["value_b64"] == b64(values[where])
        assert base64.b64decode(letter["key_b64"]).startswith(b"k-")
        assert letter["detail"] and isinstance(letter["timestamp_ms"], int)


def test_committed_offsets_reach_the_end(
    broker: TansuBroker, kafka_run: dict[str, Any], shared: Produced
) -> None:
    assert broker.committed(shared.topic, kafka_run["group"]) == kafka_run["ends"]
    assert kafka_run["ends"] == dict.fromkeys(range(4), N // 4)


def test_kill_9_half_way_then_restart_counts_exactly(
    broker: TansuBroker, shared: Produced, start_service: StartService, tmp_path: Path
) -> None:
    dlq = f"{shared.topic}.dlq.kill9"
    config = kafka_config(
        broker,
        shared.topic,
        state=tmp_path / "state.sqlite",
        dlq_topic=dlq,
        pipeline={"extra_stages": [THROTTLE], "max_batch_size": 250},
    )
    env = {"GOLDWATCH_TEST_THROTTLE_MS": "40"}  # ≤ 6,000 events/s: half-way is catchable
    ends = broker.end_offsets(shared.topic)
    first = start_service(tmp_path, config, env=env)
    at_kill = first.wait_until(lambda s: s["totals"]["consumed"] >= N // 2, what="half-way")
    first.kill()
    assert at_kill["totals"]["consumed"] < N, "the whole topic was consumed before the kill"

    second = start_service(tmp_path, config, env=env)
    status = _consume_all(second, broker, shared.topic, config["kafka"]["consumer_group"], N)
    totals = status["totals"]
    assert accounted(totals) == N, totals
    _assert_exact(totals, shared)
    assert broker.committed(shared.topic, config["kafka"]["consumer_group"]) == ends
    # Counters restart with the process; the persisted totals include the first life too.
    assert second.metric("goldwatch_events_processed_total", source="kafka") <= totals["processed"]
    # Dead letters are at least once: every pill is there, a replayed one may be twice.
    letters = dlq_by_origin(broker, dlq)
    assert set(letters) == set(shared.expected_reason)
    for where, reason in shared.expected_reason.items():
        assert {letter["reason"] for letter in letters[where]} == {reason}
    print(f"\nkilled at consumed={at_kill['totals']['consumed']}; final totals {totals}")


def test_two_replicas_split_the_partitions(
    broker: TansuBroker, start_service: StartService, tmp_path: Path
) -> None:
    topic = f"queries-replicas-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 4)
    group = f"gw-acc-{uuid.uuid4().hex[:10]}"
    replicas = [
        start_service(
            tmp_path / name,
            kafka_config(broker, topic, group, state=tmp_path / name / "state.sqlite"),
        )
        for name in ("a", "b")
    ]

    def assigned(service: ServiceProcess) -> set[int]:
        return set((service.status().get("source") or {}).get("assigned_partitions") or ())

    deadline = time.monotonic() + 45
    while time.monotonic() < deadline:
        parts = [assigned(r) for r in replicas]
        if all(len(p) == 2 for p in parts) and parts[0] | parts[1] == {0, 1, 2, 3}:
            break
        time.sleep(0.2)
    else:
        raise AssertionError(f"replicas did not split the partitions: {parts}")

    items = mixed_stream(8_000, poison_share=0.01, seed=12)
    produced = Produced(topic, items, produce(broker, topic, items))
    deadline = time.monotonic() + 60
    while sum(accounted(r.totals()) for r in replicas) < len(items):
        assert time.monotonic() < deadline, [r.totals() for r in replicas]
        time.sleep(0.2)
    _wait_committed(broker, topic, group)
    ends = broker.end_offsets(topic)
    statuses = [r.status() for r in replicas]
    samples = [r.samples() for r in replicas]
    per = [metric_sum(s, "goldwatch_events_processed_total", source="kafka") for s in samples]
    assert all(n > 0 for n in per), per
    assert sum(per) == produced.good
    dead: dict[str, int] = {}
    for s in samples:
        for reason, n in metric_by(s, "goldwatch_events_dead_lettered_total", "reason").items():
            dead[reason] = dead.get(reason, 0) + int(n)
    assert _nonzero(dead) == produced.dead
    consumed = sum(metric_sum(s, "goldwatch_events_consumed_total") for s in samples)
    assert consumed == len(items)
    for replica, status in zip(replicas, statuses, strict=True):
        _assert_metrics_match(replica, status["totals"])
    assert broker.committed(topic, group) == ends
    print(f"\nreplicas processed {per}")


def test_broker_pause_not_ready_then_resumes_without_loss(
    broker: TansuBroker, start_service: StartService, tmp_path: Path
) -> None:
    topic = f"queries-pause-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 4)
    first = mixed_stream(6_000, poison_share=0.01, seed=13)
    produced = produce(broker, topic, first)
    config = kafka_config(
        broker,
        topic,
        state=tmp_path / "state.sqlite",
        pipeline={"extra_stages": [THROTTLE], "max_batch_size": 200},
    )
    service = start_service(tmp_path, config, env={"GOLDWATCH_TEST_THROTTLE_MS": "100"})
    service.wait_until(lambda s: s["totals"]["consumed"] >= 1_000, what="mid-stream")

    broker.pause()
    paused_at = time.monotonic()
    try:
        codes = []
        while time.monotonic() - paused_at < 20:
            codes.append(service.readyz())
            assert service.get("/healthz").status_code == 200
            time.sleep(0.5)
        during = service.status()  # the API answers while the broker is frozen
    finally:
        broker.resume()
    assert 503 in codes, f"/readyz never said 503 while the broker was frozen: {codes}"
    assert codes[-1] == 503 and not during["ready"], codes

    recovered_at = time.monotonic()
    while service.readyz() != 200:
        assert time.monotonic() - recovered_at < 45, f"not ready again{service.diagnose()}"
        time.sleep(0.2)

    second = mixed_stream(2_000, poison_share=0.01, seed=14)
    where = produce(broker, topic, second, start=len(first))
    everything = Produced(topic, first + second, produced + where)
    status = _consume_all(service, broker, topic, config["kafka"]["consumer_group"], 8_000)
    totals = status["totals"]
    assert accounted(totals) == 8_000, totals
    _assert_exact(totals, everything)
    _assert_metrics_match(service, totals)
    print(f"\nready again {time.monotonic() - recovered_at:.1f} s after resume; totals {totals}")


def test_slow_handler_does_not_cause_a_rebalance_loop(
    broker: TansuBroker, shared: Produced, start_service: StartService, tmp_path: Path
) -> None:
    config = kafka_config(
        broker,
        shared.topic,
        state=tmp_path / "state.sqlite",
        dlq_topic=f"{shared.topic}.dlq.slow",
        max_poll_interval_ms=5000,
        pipeline={"extra_stages": [SLOW]},
    )
    service = start_service(tmp_path, config, env={"GOLDWATCH_TEST_SLOW_MS": "8000"})
    ends = broker.end_offsets(shared.topic)
    group = config["kafka"]["consumer_group"]
    status = _consume_all(service, broker, shared.topic, group, N, timeout_s=120)
    totals = status["totals"]
    assert accounted(totals) == N, totals
    _assert_exact(totals, shared)
    rebalances = service.metric("goldwatch_rebalances_total")
    assert rebalances <= 2, f"{rebalances} rebalances{service.log_tail()}"
    assert status["source"]["rebalances"] <= 2
    _assert_metrics_match(service, totals)
    assert broker.committed(shared.topic, config["kafka"]["consumer_group"]) == ends


def test_replay_of_the_same_events_gives_the_same_counts(
    kafka_run: dict[str, Any], shared: Produced, tmp_path: Path
) -> None:
    path = tmp_path / "events.jsonl"
    lines = write_jsonl(path, shared.items)  # tombstones cannot be lines
    config = write_config(
        tmp_path / "goldwatch.yaml", {"pipeline": {"max_event_bytes": TEST_MAX_EVENT_BYTES}}
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "service.cli",
            "replay",
            str(path),
            "--config",
            str(config),
            "--format",
            "json",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        timeout=120,
        check=False,
    )
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    report = json.loads(run.stdout)
    kafka = kafka_run["status"]["totals"]
    tombstones = shared.dead["tombstone"]
    assert report["consumed"] == len(lines) == N - tombstones
    assert report["processed"] == kafka["processed"]
    assert report["duplicates"] == 0
    expected_dead = {k: v for k, v in _nonzero(kafka["dead_lettered"]).items() if k != "tombstone"}
    assert _nonzero(report["dead_lettered"]) == expected_dead
    rows = [
        json.loads(line)
        for line in path.with_name("events.jsonl.replay.dlq.jsonl").read_text().splitlines()
    ]
    by_line = {row["origin"]["line"]: row["reason"] for row in rows}
    assert by_line == {i + 1: r for i, (_, r) in enumerate(lines) if r is not None}
