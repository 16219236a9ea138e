"""A Kafka backlog of several partitions keeps its events in the drift windows (real Tansu).

A consumer catching up on a backlog gets each partition's records in stretches, one partition
after another: hours apart in event time though every partition is in order. Judged against one
watermark for the stream, a seventh trial's 4-partition backlog of 10 hours was 72 % late and
its drift alarms were gone. Lateness is now judged per partition (``service.drift.windows``):
here 6,000 events spread over 5 hours of event time and 4 partitions, each partition in order
(one event every 12 s), must all be in the windows — none late — however kafka-python hands
the partitions out. (An event further behind the newest one than the windows keep — 6 h
without a gold set, the frozen baseline's warm-up; 24 h with one — is still late: no window
holds it.)
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import uuid
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from benchmarks.streams import REFUSAL, TEST_MAX_EVENT_BYTES, encode, query_log_events
from tests.acceptance.conftest import kafka_config
from tests.acceptance.service_process import REPO_ROOT, ServiceProcess, accounted, write_config
from tests.kafka_broker import TansuBroker

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

N = 6_000
PARTITIONS = 4
SPAN_S = 18_000  # 5 h of event time, every partition across all of it
STEP_S = SPAN_S / N  # 3 s between events; 12 s between one partition's events


def _iso(seconds: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(seconds)) + "Z"


def _send_round_robin(
    broker: TansuBroker, topic: str, stamps: Sequence[float], partitions: int, seed: int
) -> None:
    """Produce one query-log event per stamp (Unix seconds), event ``i`` stamped ``stamps[i]``
    to partition ``i % partitions``, keyed by its id."""
    producer = broker.producer()
    try:
        for i, event in enumerate(query_log_events(len(stamps), seed=seed)):
            event["timestamp"] = _iso(stamps[i])
            producer.send(topic, value=encode(event), key=event["event_id"].encode(),
                          partition=i % partitions)  # fmt: skip
        producer.flush(timeout=120)
    finally:
        producer.close()


def test_a_multi_partition_backlog_is_not_late(broker: TansuBroker, tmp_path: Path) -> None:
    topic = f"backlog-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    start = time.time() - SPAN_S - 3_600  # all in the past: none stamped in the future
    # event i to partition i % 4: each partition in event-time order
    _send_round_robin(broker, topic, [start + i * STEP_S for i in range(N)], PARTITIONS, seed=21)

    config = kafka_config(broker, topic, state=tmp_path / "state.sqlite")
    service = ServiceProcess.start(tmp_path, config)
    stamps = [int(start + i * STEP_S) for i in range(N)]
    last = max(stamps) // 60
    in_window = sum(1 for t in stamps if last - 59 <= t // 60 <= last)  # 1,200 (one per 3 s)
    try:
        service.wait_until(lambda s: accounted(s["totals"]) >= N, timeout_s=180, what="consumed")
        # the idle turn once the backlog is read tests what still waited (under min_count)
        deadline = time.monotonic() + 30
        while True:
            report = service.get("/v1/drift").json()
            tested = report["language"]["comparisons"]["baseline"]["n_current"]
            if tested == in_window or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        service.terminate()
    event_time = report["event_time"]
    # every event in order within its partition: none late, none future, none held ahead
    assert (event_time["late"], event_time["future"], event_time["ahead"]) == (0, 0, 0), event_time
    assert report["events_seen"] == N
    # the watermark is the newest event's time (to the second: timestamps are whole seconds)
    assert event_time["watermark"] == max(stamps)
    # the last test saw every partition's events, not only the first partition read: the
    # current 1 h window ends in the watermark's 1 min bucket, 60 buckets back; partitions
    # read after the last tick are tested again once min_count (200) of them came, and the
    # rest at the first idle turn after the backlog
    assert tested == in_window, (tested, in_window)


def test_a_frozen_baseline_from_two_partitions_is_exactly_the_first_warmup(
    broker: TansuBroker, tmp_path: Path
) -> None:
    """Trial 11 (findings 1 and 5) on a real broker: a 2-partition backlog of 3 h, a frozen
    baseline with a 1 h warm-up. The baseline must be exactly the events stamped in
    ``[b0, b0 + 3600)``, ``b0`` the start of the earliest event's 1 min bucket, however
    kafka-python hands out the partitions: it had held about half of them (the windows keep
    1 h, so a partition read behind the other is late for the windows, yet its warm-up events
    count in the baseline). Counted here by hand from the stamps sent."""
    n, span_s, warmup_s = 2_000, 10_800, 3_600
    topic = f"baseline-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 2)
    start = time.time() - span_s - 3_600
    stamps = [int(start + i * span_s / n) for i in range(n)]
    _send_round_robin(broker, topic, stamps, 2, seed=23)
    b0 = min(stamps) // 60 * 60
    expected = sum(1 for t in stamps if b0 <= t < b0 + warmup_s)  # 556…667: start in its minute
    config = kafka_config(broker, topic, state=tmp_path / "state.sqlite")
    config["analytics"] = {"drift": {"window_s": 3_600, "warmup_s": warmup_s,
                                     "baseline": "frozen"}}  # fmt: skip
    service = ServiceProcess.start(tmp_path, config)
    try:
        service.wait_until(lambda s: accounted(s["totals"]) >= n, timeout_s=180, what="consumed")
        deadline = time.monotonic() + 30
        while True:
            report = service.get("/v1/drift").json()
            held = report["language"]["comparisons"]["baseline"]["n_reference"]
            if held == expected or time.monotonic() > deadline:
                break
            time.sleep(0.5)
    finally:
        service.terminate()
    assert report["events_seen"] == n
    assert held == expected, (held, expected, report["event_time"])


# -- s36: the partitions are aligned in event time --------------------------------------------

#: The s36 trial's shape: 1,200 events over 28.8 h (~42 an hour), keyed by event id over 4
#: partitions (and a 5th that stays empty), a refusal incident from 10 h to 20 h.
TRIAL_N, TRIAL_SPAN_S, TRIAL_PARTITIONS = 1_200, 103_680, 5
TRIAL_DRIFT = {"window_s": 14_400, "reference_window_s": 43_200, "warmup_s": 28_800,
               "test_every_s": 1_800, "min_count": 100}  # fmt: skip


def _trial_events(start: float) -> list[dict[str, object]]:
    """The trial-shaped log in time order: refusal rate 0.13, 0.7 from 10 h to 20 h."""
    rng = random.Random("s36-align")
    events: list[dict[str, object]] = []
    for i, event in enumerate(query_log_events(TRIAL_N, seed=36)):
        at = start + i * TRIAL_SPAN_S / TRIAL_N
        event["timestamp"] = _iso(at)
        incident = 36_000 <= at - start < 72_000
        refused = rng.random() < (0.7 if incident else 0.13)
        text = REFUSAL if refused else "Here is what I found."
        event["answer"] = {"text": text, "refused": refused, "citations": []}
        events.append(event)
    return events


def _refusal_baseline(report: dict[str, Any]) -> tuple[int, float]:
    baseline = report["refusal"]["comparisons"]["baseline"]
    return baseline["n_reference"], baseline["rate_reference"]


def test_a_trial_backlog_of_four_partitions_gives_the_replay_baseline(
    broker: TansuBroker, tmp_path: Path
) -> None:
    """s36 trial on a real broker: a backlog of 28.8 h over 4 partitions (keyed, so they
    interleave; a 5th partition empty) read by a fresh group. The partitions are aligned in
    event time (``kafka.max_event_time_skew_s``, default half the allowed lateness), so no
    event is late and the frozen refusal baseline is the replay's of the same events in time
    order (the trial's serve froze it on the incident: 0.354 against 0.129, and raised false
    alarms). The empty partition holds no one back."""
    start = time.time() - TRIAL_SPAN_S - 3_600
    events = _trial_events(start)
    topic = f"align-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, TRIAL_PARTITIONS)
    producer = broker.producer()
    try:
        for event in events:
            key = str(event["event_id"]).encode()
            producer.send(topic, value=encode(event), key=key,
                          partition=zlib.crc32(key) % (TRIAL_PARTITIONS - 1))  # fmt: skip
        producer.flush(timeout=120)
    finally:
        producer.close()

    path = tmp_path / "events.jsonl"
    path.write_bytes(b"".join(encode(event) + b"\n" for event in events))
    replay_config = write_config(tmp_path / "replay.yaml", {
        "pipeline": {"max_event_bytes": TEST_MAX_EVENT_BYTES},
        "analytics": {"drift": TRIAL_DRIFT}})  # fmt: skip
    run = subprocess.run([sys.executable, "-m", "service.cli", "replay", str(path), "--config",
                          str(replay_config), "--format", "json"],
                         cwd=REPO_ROOT, capture_output=True, timeout=300, check=False)  # fmt: skip
    assert run.returncode == 0, run.stderr.decode()[-3000:]
    replayed = json.loads(run.stdout)["analytics"]["drift"]
    expected = _refusal_baseline(replayed)
    assert expected[0] > 100 and expected[1] < 0.25, expected  # the first 8 h, not the incident

    config = kafka_config(broker, topic, state=tmp_path / "state.sqlite")
    config["analytics"] = {"drift": TRIAL_DRIFT}
    service = ServiceProcess.start(tmp_path, config)
    try:
        service.wait_until(lambda s: accounted(s["totals"]) >= TRIAL_N, timeout_s=180,
                           what="consumed")  # fmt: skip
        report = service.get("/v1/drift").json()
        alignment = service.status()["source"]["alignment"]
    finally:
        service.terminate()
    assert alignment["max_skew_s"] == 150.0 and alignment["held_polls"] > 0, alignment
    assert report["events_seen"] == TRIAL_N
    assert report["event_time"]["late"] == 0, report["event_time"]
    assert _refusal_baseline(report) == expected
