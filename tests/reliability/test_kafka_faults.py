"""Faults on the live Kafka path: a real Tansu broker and ``goldwatch serve`` subprocesses.

After every fault the accounting invariant holds exactly (``conftest.assert_invariant``), the
group's committed offsets reach the end of every partition, and no counter or persisted total
went backwards within a process (``conftest.Monitor``). Streams are small (2,000-3,000
messages, 1 % poison pills of every kind) and group timings short, so each test takes seconds.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.conftest import Produced
from tests.acceptance.service_process import ServiceProcess, accounted, metric_sum
from tests.kafka_broker import TansuBroker, free_port
from tests.kafka_fixtures import StartBroker
from tests.reliability.conftest import (
    Monitor,
    StartService,
    assert_invariant,
    assert_metrics_balance,
    kafka_serve_config,
    new_topic,
    produce_stream,
    wait_committed,
    wait_for,
)
from tests.reliability.faults import FAULT_ENV, SPEC, THROTTLE_ENV

pytestmark = [pytest.mark.kafka]

THROTTLED = {"extra_stages": [SPEC], "max_batch_size": 100}


def _all_accounted(n: int) -> Any:
    return lambda s: accounted(s["totals"]) >= n


def _finish(
    service: ServiceProcess, broker: TansuBroker, topic: str, group: str, produced: int
) -> dict[str, Any]:
    """Wait until every produced message is accounted for and committed; return the totals."""
    service.wait_until(_all_accounted(produced), timeout_s=60, what="all accounted")
    wait_committed(broker, topic, group)
    return service.totals()


@pytest.mark.timeout(900)  # ~40 s quiet (a 5 s pause, 2,500 throttled events)
def test_broker_paused_then_resumed(
    broker: TansuBroker, start_service: StartService, monitor: Monitor, tmp_path: Path
) -> None:
    """SIGSTOP the broker mid-stream for longer than the session timeout: the service says
    not-ready but keeps answering, then recovers; nothing is lost or counted twice."""
    topic = new_topic(broker, "rel-pause")
    first = produce_stream(broker, topic, 2_000, seed=41)
    config = kafka_serve_config(broker, topic, tmp_path / "state.sqlite", pipeline=THROTTLED)
    service = start_service(tmp_path, config, env={THROTTLE_ENV: "100"})
    service.wait_until(lambda s: s["totals"]["consumed"] >= 400, what="mid-stream")

    broker.pause()
    try:
        paused_at, codes = time.monotonic(), []
        while time.monotonic() - paused_at < 5:  # > session_timeout_ms (3 s)
            codes.append(service.readyz())
            assert service.get("/metrics").status_code == 200
            time.sleep(0.3)
        during = service.status()
    finally:
        broker.resume()
    assert codes[-1] == 503 and not during["ready"], codes
    assert service.alive
    wait_for(lambda: service.readyz() == 200, 45, "ready after resume")

    second = produce_stream(broker, topic, 500, seed=42, start=2_000)
    totals = _finish(service, broker, topic, config["kafka"]["consumer_group"], 2_500)
    assert_invariant(totals, len(first.items) + len(second.items))
    assert totals["processed"] == first.good + second.good
    assert_metrics_balance(service.samples(), "kafka")
    monitor.sample(service)
    monitor.assert_monotonic()


def test_broker_unreachable_at_start(
    start_service: StartService, start_broker: StartBroker, monitor: Monitor, tmp_path: Path
) -> None:
    """No broker listening at start: the process stays up, not-ready (no crash loop), the API
    answers; once a broker comes up on that address it becomes ready and consumes exactly."""
    port = free_port()
    config = kafka_serve_config(f"127.0.0.1:{port}", "rel-late-topic", tmp_path / "state.sqlite")
    service = start_service(tmp_path, config)
    pid = service.process.pid
    started = time.monotonic()
    while time.monotonic() - started < 3:
        assert service.readyz() == 503
        assert service.get("/metrics").status_code == 200
        time.sleep(0.3)
    status = service.status()
    assert not status["ready"] and status["not_ready_reasons"], status
    assert service.alive and service.process.pid == pid

    late = start_broker(port)
    try:
        late.create_topic("rel-late-topic", 4)
        produced = produce_stream(late, "rel-late-topic", 2_000, seed=43)
        wait_for(lambda: service.readyz() == 200, 60, "ready once the broker is up")
        totals = _finish(service, late, "rel-late-topic", config["kafka"]["consumer_group"], 2_000)
        assert_invariant(totals, 2_000)
        assert totals["processed"] == produced.good
        assert_metrics_balance(service.samples(), "kafka")
    finally:
        service.kill()
    monitor.assert_monotonic()


#: One life per fault point, in this order, then a clean life: (point, n-th occurrence).
KILLS = (("batch", 4), ("checkpoint", 3), ("commit", 2))


def test_sigkill_at_each_point_then_restart_counts_exactly(
    broker: TansuBroker, start_service: StartService, monitor: Monitor, tmp_path: Path
) -> None:
    """The process SIGKILLs itself (``tests/reliability/faults.py``) in the middle of a batch,
    inside a state checkpoint's transaction, and between a durable checkpoint and the Kafka
    commit, restarting on the same state file each time; in the end every message is accounted
    for exactly once: what was not checkpointed is replayed, what was checkpointed but not
    committed is absorbed as ``redelivered``."""
    topic = new_topic(broker, "rel-kill")
    produced = produce_stream(broker, topic, 3_000, seed=44)
    config = kafka_serve_config(
        broker,
        topic,
        tmp_path / "state.sqlite",
        pipeline={**THROTTLED, "commit_interval_s": 0.3},
    )
    consumed_at_death = []
    for point, nth in KILLS:
        life = start_service(
            tmp_path, config, env={FAULT_ENV: f"{point}:{nth}", THROTTLE_ENV: "50"}, wait=False
        )
        life.process.wait(timeout=60)
        assert life.process.returncode == -9, f"not killed at {point}{life.log_tail()}"
        consumed_at_death.append(_persisted_totals(life)["consumed"])
    assert consumed_at_death[-1] < 3_000, consumed_at_death

    last = start_service(tmp_path, config)
    group = config["kafka"]["consumer_group"]
    totals = _finish(last, broker, topic, group, 3_000)
    assert_invariant(totals, 3_000)
    assert totals["processed"] == produced.good, totals
    assert totals["redelivered"] > 0, "the commit kill left no checkpointed-but-uncommitted span"
    assert_metrics_balance(last.samples(), "kafka")
    monitor.sample(last)
    monitor.assert_monotonic()
    print(f"\npersisted consumed at each death {consumed_at_death}; final totals {totals}")


def test_two_replicas_one_killed_partitions_move(
    broker: TansuBroker, start_service: StartService, monitor: Monitor, tmp_path: Path
) -> None:
    """Two replicas share four partitions; one is SIGKILLed mid-batch; the survivor takes over
    its partitions and the sum over both state files is exact."""
    topic = new_topic(broker, "rel-replicas")
    group = "gw-rel-replicas-" + topic[-8:]
    replicas = []
    for name, env in (("a", {THROTTLE_ENV: "50"}), ("b", {THROTTLE_ENV: "50"})):
        config = kafka_serve_config(
            broker, topic, tmp_path / name / "state.sqlite", group=group, pipeline=THROTTLED
        )
        replicas.append(start_service(tmp_path / name, config, env=env))

    def assigned(service: ServiceProcess) -> set[int]:
        return set((service.status().get("source") or {}).get("assigned_partitions") or ())

    wait_for(lambda: [len(assigned(r)) for r in replicas] == [2, 2], 45, "partitions split 2 + 2")
    items: Produced = produce_stream(broker, topic, 3_000, seed=45)
    victim, survivor = replicas
    victim.wait_until(lambda s: s["totals"]["consumed"] >= 300, what="victim mid-stream")
    victim.kill()  # SIGKILL: whatever batch it was in is neither checkpointed nor committed
    wait_for(lambda: assigned(survivor) == {0, 1, 2, 3}, 45, "survivor owns every partition")

    def both() -> int:
        return accounted(survivor.totals()) + accounted(_persisted_totals(victim))

    wait_for(lambda: both() >= 3_000, 60, "all accounted over both replicas")
    wait_committed(broker, topic, group)
    after = survivor.totals()
    dead_victim = _persisted_totals(victim)
    combined = {
        k: after[k] + dead_victim[k] for k in ("consumed", "processed", "duplicates", "redelivered")
    }
    combined["dead_lettered"] = {
        r: after["dead_lettered"].get(r, 0) + dead_victim["dead_lettered"].get(r, 0)
        for r in set(after["dead_lettered"]) | set(dead_victim["dead_lettered"])
    }
    combined["dropped"] = {}
    assert_invariant(combined, 3_000)
    assert combined["processed"] == items.good, (after, dead_victim)
    assert_metrics_balance(survivor.samples(), "kafka")
    assert metric_sum(survivor.samples(), "goldwatch_rebalances_total") >= 2
    monitor.assert_monotonic()


def _persisted_totals(service: ServiceProcess) -> dict[str, Any]:
    """The totals in a dead replica's state file (what it checkpointed before it died)."""
    from consumers.engine import TOTALS_KEY
    from service.state import StateStore

    with StateStore.open(service.config["state"]["path"]) as store:
        return dict(
            store.get(TOTALS_KEY)
            or {
                "consumed": 0,
                "processed": 0,
                "duplicates": 0,
                "redelivered": 0,
                "dead_lettered": {},
                "dropped": {},
            }
        )
