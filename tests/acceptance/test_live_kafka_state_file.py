"""The state file deleted while ``goldwatch serve`` consumes Kafka (trial 47, F4): a real
Tansu broker and serve subprocesses.

On the trial's build, a replica whose state file was deleted kept checkpointing into the
unlinked file and committing offsets; restarted, its totals held only what came after the
restart while the group's offsets said everything before was consumed, and nothing said so.
Here every event produced is in the totals after the restart, the status and the metrics say
the file was recreated, a state directory gone stops the commits until it is back, and a start
with an empty state says how many committed offsets its totals leave out.

The expected totals are the counts of events produced (all good events, unique ids: each is
processed once); the expected offsets are the broker's (the group's committed offsets, asked
of the broker, not of serve).
"""

from __future__ import annotations

import os
import shutil
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from benchmarks.streams import mixed_stream
from tests.acceptance.conftest import kafka_config, produce
from tests.acceptance.service_process import ServiceProcess
from tests.kafka_broker import TansuBroker

pytestmark = [pytest.mark.kafka, pytest.mark.slow]

PARTITIONS = 2


def _processed(n: int) -> Any:
    return lambda s: s["totals"]["processed"] >= n


def _wait_committed(broker: TansuBroker, topic: str, group: str, timeout_s: float = 30) -> None:
    ends = broker.end_offsets(topic)
    deadline = time.monotonic() + timeout_s
    while (committed := broker.committed(topic, group)) != ends:
        assert time.monotonic() < deadline, f"committed {committed} != end offsets {ends}"
        time.sleep(0.3)


def test_a_state_file_deleted_while_serving_loses_no_event_across_a_restart(
    broker: TansuBroker, start_service: Any, tmp_path: Path
) -> None:
    topic = f"queries-statefile-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    group = f"gw-acc-{uuid.uuid4().hex[:10]}"
    state = tmp_path / "state" / "state.sqlite"
    config = kafka_config(broker, topic, group, state=state)
    items = mixed_stream(3_000, poison_share=0.0, seed=47)  # 3,000 good events, unique ids
    before, after, later = items[:1_000], items[1_000:2_000], items[2_000:]

    produce(broker, topic, before, partitions=PARTITIONS)
    first = start_service(tmp_path, config)
    first.wait_until(_processed(1_000), what="the first 1,000")
    _wait_committed(broker, topic, group)

    os.unlink(state)  # what the trial's user did, serve running
    produce(broker, topic, after, start=1_000, partitions=PARTITIONS)
    status = first.wait_until(_processed(2_000), what="1,000 more after the deletion")
    _wait_committed(broker, topic, group)
    status = first.wait_until(lambda s: s["state_file"]["recreated"] >= 1, what="recreated")
    recreated_metric = first.metric("goldwatch_state_file_recreated_total")
    assert first.terminate() == 0

    second = start_service(tmp_path, config)  # the same state path
    restarted = second.status()
    produce(broker, topic, later, start=2_000, partitions=PARTITIONS)
    final = second.wait_until(_processed(3_000), timeout_s=60, what="all 3,000")
    print(
        f"\nafter restart: processed {restarted['totals']['processed']} of 2,000 produced "
        f"before it (1,000 of them after the deletion); after 1,000 more: "
        f"{final['totals']['processed']} of 3,000; recreated {status['state_file']['recreated']}"
        f" (metric {recreated_metric}); started_empty "
        f"{restarted['state_file']['started_empty']}"
    )
    assert restarted["totals"]["processed"] == 2_000
    assert final["totals"]["processed"] == 3_000
    assert final["totals"]["duplicates"] == 0
    assert status["state_file"]["recreated"] == 1
    assert recreated_metric == 1
    assert any("recreated there with the whole current state" in n for n in status["notices"])
    assert status["state_file"]["lost"] is None
    assert restarted["state_file"]["started_empty"] is False
    assert restarted["state_file"]["uncounted_before"] == {}


def test_a_state_directory_gone_stops_the_commits_until_it_is_back(
    broker: TansuBroker, start_service: Any, tmp_path: Path
) -> None:
    topic = f"queries-statedir-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    group = f"gw-acc-{uuid.uuid4().hex[:10]}"
    folder = tmp_path / "state"
    config = kafka_config(broker, topic, group, state=folder / "state.sqlite")
    items = mixed_stream(2_000, poison_share=0.0, seed=48)

    produce(broker, topic, items[:800], partitions=PARTITIONS)
    service = start_service(tmp_path, config)
    service.wait_until(_processed(800), what="the first 800")
    _wait_committed(broker, topic, group)
    committed_before = broker.committed(topic, group)
    assert sum(committed_before.values()) == 800

    shutil.rmtree(folder)
    produce(broker, topic, items[800:1_400], start=800, partitions=PARTITIONS)
    lost = service.wait_until(
        lambda s: s["totals"]["processed"] >= 1_400 and s["state_file"]["lost"] is not None,
        what="the loss seen",
    )
    time.sleep(2.5)  # two more checkpoint intervals: still nothing committed
    assert broker.committed(topic, group) == committed_before
    assert service.metric("goldwatch_state_file_lost") == 1
    assert service.readyz() == 503
    assert any(n.startswith("STATE NOT DURABLE") for n in lost["notices"])

    folder.mkdir()  # the operator puts the directory back
    produce(broker, topic, items[1_400:], start=1_400, partitions=PARTITIONS)
    back = service.wait_until(
        lambda s: s["totals"]["processed"] >= 2_000 and s["state_file"]["lost"] is None,
        what="recreated once the directory is back",
    )
    _wait_committed(broker, topic, group)
    assert back["state_file"]["recreated"] == 1
    assert service.metric("goldwatch_state_file_lost") == 0
    assert service.terminate() == 0

    again = start_service(tmp_path, config)
    totals = again.status()["totals"]
    kept = sum(committed_before.values())
    print(f"\ndirectory gone: committed stayed at {kept} while it was; after it came back and "
          f"a restart, processed {totals['processed']} of 2,000")  # fmt: skip
    assert totals["processed"] == 2_000


def test_a_start_with_an_empty_state_says_which_offsets_its_totals_leave_out(
    broker: TansuBroker, start_service: Any, tmp_path: Path
) -> None:
    topic = f"queries-stateempty-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, PARTITIONS)
    group = f"gw-acc-{uuid.uuid4().hex[:10]}"
    state = tmp_path / "state" / "state.sqlite"
    config = kafka_config(broker, topic, group, state=state)
    items = mixed_stream(1_200, poison_share=0.0, seed=49)

    produce(broker, topic, items[:1_000], partitions=PARTITIONS)
    first = start_service(tmp_path, config)
    first.wait_until(_processed(1_000), what="the first 1,000")
    _wait_committed(broker, topic, group)
    assert first.terminate() == 0
    committed = broker.committed(topic, group)  # the broker's word: {0: 500, 1: 500}
    for side in ("", "-wal", "-shm"):  # the state lost while serve was down
        Path(f"{state}{side}").unlink(missing_ok=True)

    second = start_service(tmp_path, config)  # nothing produced: the topic is idle
    expected = {f"{topic}[{p}]": off for p, off in sorted(committed.items())}
    idle = second.wait_until(lambda s: s["state_file"]["uncounted_offsets"] > 0, timeout_s=30,
                             what="the empty start said with no event read")  # fmt: skip
    assert idle["state_file"]["started_empty"] is True
    assert idle["state_file"]["uncounted_before"] == expected
    assert idle["state_file"]["uncounted_offsets"] == 1_000
    assert idle["totals"]["processed"] == 0
    assert second.metric("goldwatch_state_uncounted_offsets") == 1_000
    assert any("the 1,000 events before them are not in these totals" in n
               for n in idle["notices"])  # fmt: skip

    # deleted while the topic is idle: no checkpoint comes, the status sample recreates it
    for side in ("", "-wal", "-shm"):
        Path(f"{state}{side}").unlink(missing_ok=True)
    deleted = time.monotonic()
    second.wait_until(lambda s: s["state_file"]["recreated"] >= 1, timeout_s=30,
                      what="recreated with no traffic")  # fmt: skip
    took = time.monotonic() - deleted
    assert state.exists()

    produce(broker, topic, items[1_000:], start=1_000, partitions=PARTITIONS)
    status = second.wait_until(_processed(200), what="the 200 new ones")
    state_file = status["state_file"]
    print(f"\nempty start, idle: uncounted_before {idle['state_file']['uncounted_before']} "
          f"(broker: {expected}); deleted idle, recreated after {took:.1f} s (status interval "
          f"0.5 s); processed {status['totals']['processed']} of 200 produced after")  # fmt: skip
    assert took < 5.0  # the status interval (0.5 s) and the status poll, with slack
    assert state_file["uncounted_before"] == expected  # the first events did not change it
    assert state_file["uncounted_offsets"] == 1_000
    assert state_file["recreated"] == 1
    assert status["totals"]["processed"] == 200
    assert isinstance(second, ServiceProcess)
