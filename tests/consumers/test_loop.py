"""The poll loop over fakes at the Source port, real files, real SQLite, a real registry."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.consumer.fetcher import ConsumerRecord
from kafka.errors import KafkaTimeoutError
from prometheus_client import CollectorRegistry

from consumers.base import DeadLetter, OffsetRun, Origin, PartitionRuns, RawMessage
from consumers.engine import Engine, _streams
from consumers.errors import DeadLetterError, suppress_on_error
from consumers.file_source import FileSource
from consumers.kafka_source import partition_runs
from consumers.loop import (
    PROCESSING_FAILED,
    DeadLetterWriteAborted,
    Report,
    _Loop,
    make_decoder,
    replay,
    run,
)
from service.pipeline import Batch, CountingStage, Pipeline, PipelineConfig, StageError
from service.runtime.live import default_pipeline
from service.state import StateError, StateStore
from service.telemetry import Metrics, build_metrics

EVERY_BATCH = PipelineConfig(
    max_batch_size=4, max_batch_wait_ms=20, commit_interval_s=0, status_interval_s=0
)


def event(i: int, event_id: str | None = None) -> bytes:
    body = {"event_id": event_id or f"e-{i}", "timestamp": 1_795_946_400 + i, "question": f"q{i}"}
    return json.dumps(body).encode()


def kafka_messages(values: Sequence[bytes | None], start: int = 0) -> list[RawMessage]:
    return [
        RawMessage(v, Origin(topic="queries", partition=0, offset=start + n))
        for n, v in enumerate(values)
    ]


class FakeSource:
    """A Source over fixed batches; records the order of calls into ``calls``."""

    name = "kafka:queries"

    def __init__(self, batches: list[list[RawMessage]], calls: list[str] | None = None) -> None:
        self.batches = list(batches)
        self.calls = calls if calls is not None else []
        self.committed: list[RawMessage] = []
        self.dead: list[DeadLetter] = []
        self.closed = self.failed = False
        self.commit_error: Exception | None = None
        self.stop_on_poll: threading.Event | None = None

    @property
    def at_eof(self) -> bool:
        return not self.batches

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        self.calls.append("poll")
        if self.stop_on_poll is not None:
            self.stop_on_poll.set()  # a stop request arrives while this batch is in flight
        return self.batches.pop(0) if self.batches else []

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        self.calls.append("dead_letter")
        self.dead.extend(letters)

    def commit(self, messages: Sequence[RawMessage]) -> None:
        self.calls.append("commit")
        if self.commit_error is not None:
            raise self.commit_error
        self.committed.extend(messages)

    def status(self) -> dict[str, Any]:
        return {"commits": self.calls.count("commit"), "rebalances": 0}

    def ready(self) -> bool:
        return not self.closed

    def mark_failed(self) -> None:
        self.failed = True

    def close(self) -> None:
        self.calls.append("close")
        self.closed = True


class RecordingState(StateStore):
    calls: list[str]

    def checkpoint(self, updates: Any) -> None:
        self.calls.append("checkpoint")
        super().checkpoint(updates)


def recording_state(calls: list[str]) -> RecordingState:
    store = StateStore.in_memory()
    recorder = RecordingState(store._conn, ":memory:")
    recorder.calls = calls
    return recorder


def fresh_metrics() -> tuple[CollectorRegistry, Metrics]:
    registry = CollectorRegistry()
    return registry, build_metrics(registry, topics=["queries"])


def pipeline(window: int = 1000) -> Pipeline:
    return default_pipeline(PipelineConfig(dedup_window=window))


class RecordSeer(CountingStage):
    """Remembers the retrieval of each event it sees; reads the records (unless a test
    says otherwise)."""

    name = "record_seer"
    reads_records = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def process(self, batch: Batch) -> None:
        self.seen += [e.retrieval for e in batch.events]


def test_counts_are_exact_and_bad_messages_are_dead_letters() -> None:
    batches = [
        kafka_messages([event(1), b"not json", event(2), None], 0),
        kafka_messages([event(1), b"[1]", b'{"event_id": "x"}', event(3)], 4),
        kafka_messages([event(3), event(4)], 8),
    ]
    source = FakeSource(batches)
    registry, metrics = fresh_metrics()
    report = run(
        source,
        pipeline(),
        StateStore.in_memory(),
        metrics,
        threading.Event(),
        config=EVERY_BATCH,
        until_eof=True,
    )
    assert report == Report(
        consumed=10,
        processed=4,
        dead_lettered={"not_json": 1, "tombstone": 1, "not_object": 1, "missing_field": 1},
        duplicates=2,
        dropped={},
        batches=3,
        checkpoints=3,
    )
    assert report.balanced
    assert [d.reason for d in source.dead] == [
        "not_json",
        "tombstone",
        "not_object",
        "missing_field",
    ]
    assert len(source.committed) == 3  # the newest message of partition 0, per checkpoint
    assert source.committed[-1].origin.offset == 9
    value = registry.get_sample_value
    assert value("goldwatch_events_consumed_total", {"source": "kafka"}) == 10
    assert value("goldwatch_events_processed_total", {"source": "kafka"}) == 4
    assert value("goldwatch_events_duplicate_total", {"source": "kafka"}) == 2
    dead = {"source": "kafka", "reason": "not_json"}
    assert value("goldwatch_events_dead_lettered_total", dead) == 1
    assert value("goldwatch_commits_total") == 3
    assert value("goldwatch_last_event_timestamp_seconds") == 1_795_946_404


def test_mistyped_optional_fields_keep_the_event_and_are_counted() -> None:
    """Issue 18: ``"feedback": {"rating": "bad"}`` and ``"retrieval": {"results": "oops"}``
    used to dead-letter the event and its question; now both are processed and the dropped
    fields counted in goldwatch_event_fields_dropped_total{field, reason}."""
    bad_rating = {"event_id": "r", "timestamp": 1_795_946_400, "question": "q?",
                  "feedback": {"rating": "bad"}}  # fmt: skip
    bad_results = {"event_id": "s", "timestamp": 1_795_946_401, "question": "q?",
                   "retrieval": {"results": "oops"}}  # fmt: skip
    values = [json.dumps(bad_rating).encode(), json.dumps(bad_results).encode(), event(3)]
    dropped = "goldwatch_event_fields_dropped_total"
    rating = {"field": "feedback.rating", "reason": "wrong_type"}
    results = {"field": "retrieval.results", "reason": "wrong_type"}
    for reader, counted in ((RecordSeer(), 1), (None, None)):
        # issue 22: a pipeline none of whose stages reads the records does not decode them,
        # so their problems are not looked for (the events are processed all the same)
        source = FakeSource([kafka_messages(values, 0)])
        registry, metrics = fresh_metrics()
        stages = default_pipeline(PipelineConfig(dedup_window=10), [reader] if reader else [])
        report = run(source, stages, StateStore.in_memory(), metrics, threading.Event(),
                     config=EVERY_BATCH, until_eof=True)  # fmt: skip
        assert (report.processed, report.dead_lettered, source.dead) == (3, {}, [])
        assert registry.get_sample_value(dropped, rating) == counted
        assert registry.get_sample_value(dropped, results) == counted


def test_metrics_update_once_per_batch() -> None:
    source = FakeSource(
        [kafka_messages([event(i) for i in range(4)], 0)] * 1
        + [kafka_messages([event(i) for i in range(4, 7)], 4)]
    )
    registry, metrics = fresh_metrics()
    run(
        source,
        pipeline(),
        StateStore.in_memory(),
        metrics,
        threading.Event(),
        config=EVERY_BATCH,
        until_eof=True,
    )
    assert registry.get_sample_value("goldwatch_batch_size_count") == 2
    assert registry.get_sample_value("goldwatch_batch_size_sum") == 7
    assert registry.get_sample_value("goldwatch_batch_processing_seconds_count") == 2


def test_commit_only_after_dead_letters_and_checkpoint_and_no_poll_during_batch() -> None:
    calls: list[str] = []
    source = FakeSource([kafka_messages([event(1), b"x"], 0), kafka_messages([event(2)], 2)], calls)
    run(
        source,
        pipeline(),
        recording_state(calls),
        fresh_metrics()[1],
        threading.Event(),
        config=EVERY_BATCH,
        until_eof=True,
    )
    assert calls == [
        "poll",
        "dead_letter",
        "checkpoint",
        "commit",
        "poll",
        "dead_letter",
        "checkpoint",
        "commit",
        "poll",
        "close",
    ]


def test_checkpoints_on_a_schedule_and_at_the_end() -> None:
    calls: list[str] = []
    batches = [kafka_messages([event(i)], i) for i in range(5)]
    config = PipelineConfig(commit_interval_s=3600, commit_every=2, status_interval_s=3600)
    source = FakeSource(batches, calls)
    report = run(
        source,
        pipeline(),
        recording_state(calls),
        fresh_metrics()[1],
        threading.Event(),
        config=config,
        until_eof=True,
    )
    assert calls.count("checkpoint") == calls.count("commit") == 3  # after 2, after 4, final
    assert report.checkpoints == 3
    assert source.committed[-1].origin.offset == 4


def test_redelivery_after_crash_between_checkpoint_and_commit(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    values = [event(i) for i in range(6)]
    crashing = FakeSource([kafka_messages(values[:3], 0), kafka_messages(values[3:], 3)])
    crashing.commit_error = RuntimeError("killed after the checkpoint")
    with StateStore.open(path) as state, pytest.raises(RuntimeError, match="killed"):
        run(
            crashing,
            pipeline(),
            state,
            fresh_metrics()[1],
            threading.Event(),
            config=EVERY_BATCH,
            until_eof=True,
        )
    assert crashing.failed and crashing.closed and crashing.committed == []

    # the broker redelivers everything since the last commit (nothing was committed)
    redelivered = FakeSource([kafka_messages(values[:3], 0), kafka_messages(values[3:], 3)])
    restarted = pipeline()
    with StateStore.open(path) as state:
        report = run(
            redelivered,
            restarted,
            state,
            fresh_metrics()[1],
            threading.Event(),
            config=EVERY_BATCH,
            until_eof=True,
        )
        assert state.get("stage/count")["processed"] == 6
    assert (report.consumed, report.processed, report.duplicates) == (6, 3, 3), report


def write_events(path: Path, ids: range) -> None:
    with path.open("ab") as handle:
        handle.write(b"".join(event(i) + b"\n" for i in ids))


class Crash(Exception):
    pass


class CrashAt:
    """A stage that raises on its n-th batch (simulates the process dying mid-run)."""

    name = "crash"

    def __init__(self, n: int) -> None:
        self.n = n

    def process(self, batch: Batch) -> None:
        self.n -= 1
        if self.n == 0:
            raise Crash("power cut")

    def state_snapshot(self) -> Any:
        return None

    def restore(self, state: Any) -> None:
        pass


def test_file_resume_after_crash_no_loss_no_double_count(tmp_path: Path) -> None:
    log_file, state_file = tmp_path / "queries.jsonl", tmp_path / "state.db"
    write_events(log_file, range(30))
    config = PipelineConfig(max_batch_size=4, commit_interval_s=0, status_interval_s=0)
    first = Pipeline([CrashAt(3), CountingStage()])
    with StateStore.open(state_file) as state, pytest.raises(StageError, match="power cut"):
        run(
            FileSource(log_file), first, state, fresh_metrics()[1], threading.Event(), config=config
        )
    with StateStore.open(state_file) as state:
        assert state.get("stage/count")["processed"] == 8  # two batches checkpointed
        stored = state.get(FileSource(log_file).state_key)
        assert stored["line"] == 8
        second = default_pipeline(config)
        report = run(
            FileSource(log_file),
            second,
            state,
            fresh_metrics()[1],
            threading.Event(),
            config=config,
            until_eof=True,
        )
        assert state.get("stage/count")["processed"] == 30
    assert (report.consumed, report.processed, report.duplicates) == (22, 22, 0)


def test_default_error_policy_reraises_and_marks_failed() -> None:
    class Boom(CrashAt):
        name = "boom"

    source = FakeSource([kafka_messages([event(1)], 0)])
    with pytest.raises(StageError, match="boom"):
        run(
            source,
            Pipeline([Boom(1)]),
            StateStore.in_memory(),
            fresh_metrics()[1],
            threading.Event(),
            config=EVERY_BATCH,
        )
    assert source.failed and source.closed and source.committed == []


def test_suppressed_stage_error_dead_letters_the_batch() -> None:
    source = FakeSource([kafka_messages([event(1), b"bad"], 0), kafka_messages([event(2)], 2)])
    registry, metrics = fresh_metrics()
    report = run(
        source,
        Pipeline([CrashAt(1), CountingStage()]),
        StateStore.in_memory(),
        metrics,
        threading.Event(),
        config=EVERY_BATCH,
        on_error=suppress_on_error,
        until_eof=True,
    )
    assert report.dead_lettered == {PROCESSING_FAILED: 2}
    assert report.processed == 1 and report.balanced
    assert "CrashAt" not in source.dead[0].detail and "'crash'" in source.dead[0].detail
    labels = {"source": "kafka", "reason": PROCESSING_FAILED}
    assert registry.get_sample_value("goldwatch_events_dead_lettered_total", labels) == 2


def test_a_failed_batch_dead_letters_its_events_not_its_blank_lines(tmp_path: Path) -> None:
    """A suppressed stage error dead-letters the batch's messages as ``processing_failed``;
    its blank lines stay blank lines (no letter of no data), so the accounting is still
    whole: 4 lines = 2 failed + 1 processed + 1 blank."""
    log_file = tmp_path / "queries.jsonl"
    log_file.write_bytes(event(1) + b"\n\n" + event(2) + b"\n" + event(3) + b"\n")
    report = run(FileSource(log_file), Pipeline([CrashAt(1), CountingStage()]),
                 StateStore.in_memory(), fresh_metrics()[1], threading.Event(),
                 config=PipelineConfig(max_batch_size=3, commit_interval_s=0,
                                       status_interval_s=0),
                 on_error=suppress_on_error, until_eof=True)  # fmt: skip
    assert report.dead_lettered == {PROCESSING_FAILED: 2}
    assert (report.processed, report.blank_lines, report.consumed) == (1, 1, 3)
    assert report.balanced
    letters = (tmp_path / "queries.jsonl.dlq.jsonl").read_text().splitlines()
    assert [json.loads(row)["origin"]["line"] for row in letters] == [1, 3]


def test_stop_event_finishes_the_current_batch() -> None:
    stop = threading.Event()
    source = FakeSource([kafka_messages([event(1), event(2)], 0), kafka_messages([event(3)], 2)])
    source.stop_on_poll = stop
    config = PipelineConfig(commit_interval_s=3600, status_interval_s=3600)
    report = run(
        source, pipeline(), StateStore.in_memory(), fresh_metrics()[1], stop, config=config
    )
    assert report.consumed == report.processed == 2
    assert [m.origin.offset for m in source.committed] == [1]
    assert source.calls == ["poll", "dead_letter", "commit", "close"]
    assert not source.failed


class StopWatchedFileSource(FileSource):
    """A FileSource that records the ``timeout_ms`` of every poll started after ``stop`` was set."""

    def __init__(self, *args: Any, stop: threading.Event, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.stop = stop
        self.polls_after_stop: list[int] = []

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        if self.stop.is_set():
            self.polls_after_stop.append(timeout_ms)
        return super().poll(max_records, timeout_ms)


def test_follow_mode_picks_up_appended_lines_and_stops_in_bounded_time(tmp_path: Path) -> None:
    log_file = tmp_path / "queries.jsonl"
    write_events(log_file, range(3))
    stop, state = threading.Event(), StateStore.open(tmp_path / "state.db")
    config = PipelineConfig(max_batch_wait_ms=200, commit_interval_s=0, status_interval_s=0)
    registry, metrics = fresh_metrics()
    reports: list[Report] = []
    source = StopWatchedFileSource(log_file, follow=True, poll_interval_s=0.01, stop=stop)
    worker = threading.Thread(
        target=lambda: reports.append(run(source, pipeline(), state, metrics, stop, config=config))
    )
    worker.start()
    processed = "goldwatch_events_processed_total"
    wait_for(lambda: registry.get_sample_value(processed, {"source": "file"}) == 3)
    write_events(log_file, range(3, 7))
    wait_for(lambda: registry.get_sample_value(processed, {"source": "file"}) == 7)
    stop.set()
    worker.join(timeout=60)  # a bound for a loaded machine, not a timing
    assert not worker.is_alive()  # stopped although a followed file never ends
    # Bounded: after the stop at most one poll started, the one between the loop's check and
    # its poll, and it waited at most max_batch_wait_ms; then the batch, checkpoint, close.
    assert source.polls_after_stop in ([], [200])
    assert reports[0].processed == 7
    assert state.get(source.state_key)["line"] == 7
    state.close()


def wait_for(condition: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.01)


def test_state_error_stops_before_commit(tmp_path: Path) -> None:
    state = StateStore.open(tmp_path / "state.db")
    state._conn.execute("PRAGMA query_only=ON")
    source = FakeSource([kafka_messages([event(1)], 0)])
    with pytest.raises(StateError, match="not writable"):
        run(source, pipeline(), state, fresh_metrics()[1], threading.Event(), config=EVERY_BATCH)
    assert source.committed == [] and source.failed
    state.close()


#: A log with blank lines before, between and after its events (trial 22, LOW 6): 40 lines,
#: 30 events (ids 0-29), 10 blank (empty, spaces, a lone ``\\r``).
BLANKS = {0: b"", 4: b"   ", 9: b"\r", 10: b"", 17: b"\t", 25: b"", 36: b"", 37: b" ", 38: b"",
          39: b""}  # fmt: skip


def write_with_blanks(path: Path, first_id: int = 0) -> tuple[int, int]:
    """Append :data:`BLANKS`'s 40 lines (events ``first_id``..``first_id + 29``); return
    ``(events, blank lines)`` written."""
    ids = iter(range(first_id, first_id + 30))
    rows = [BLANKS[n] if n in BLANKS else event(next(ids)) for n in range(40)]
    with path.open("ab") as handle:
        handle.write(b"".join(row + b"\n" for row in rows))
    return 30, len(BLANKS)


def test_blank_lines_resume_exactly_after_a_crash_and_across_runs(tmp_path: Path) -> None:
    """Blank lines are counted once each and their positions committed like any line's: a
    run that crashes mid-file, its resumption, a run over the unchanged file and one over
    lines appended later leave the all-time totals at exactly the file's lines (consumed +
    blank_lines), with no dead letter of a blank line; the trailing blank lines are in the
    stored position (a resumed run does not read them again)."""
    log_file, state_file = tmp_path / "queries.jsonl", tmp_path / "state.db"
    events, blanks = write_with_blanks(log_file)
    config = PipelineConfig(max_batch_size=4, commit_interval_s=0, status_interval_s=0)
    key = FileSource(log_file).state_key
    assert key is not None
    with StateStore.open(state_file) as state, pytest.raises(StageError, match="power cut"):
        run(FileSource(log_file), Pipeline([CrashAt(4), CountingStage()]), state,
            fresh_metrics()[1], threading.Event(), config=config)  # fmt: skip
    with StateStore.open(state_file) as state:
        stored, totals = state.get(key), state.get("totals")
        assert stored["line"] == 12  # three batches of 4 lines checkpointed
        assert totals["consumed"] + totals["blank_lines"] == 12
        assert totals["blank_lines"] == 4  # lines 1, 5, 10, 11
        report = run(FileSource(log_file), default_pipeline(config), state, fresh_metrics()[1],
                     threading.Event(), config=config, until_eof=True)  # fmt: skip
        assert (report.consumed, report.blank_lines) == (events - 8, blanks - 4)
        assert state.get(key)["line"] == 40  # past the trailing blank lines
        assert state.get("totals")["consumed"] == events
        assert state.get("totals")["blank_lines"] == blanks
        again = run(FileSource(log_file), default_pipeline(config), state, fresh_metrics()[1],
                    threading.Event(), config=config, until_eof=True)  # fmt: skip
        assert (again.consumed, again.blank_lines) == (0, 0)  # nothing read twice
        more_events, more_blanks = write_with_blanks(log_file, first_id=100)
        later = run(FileSource(log_file), default_pipeline(config), state, fresh_metrics()[1],
                    threading.Event(), config=config, until_eof=True)  # fmt: skip
        assert (later.consumed, later.blank_lines) == (more_events, more_blanks)
        totals = state.get("totals")
        assert (totals["consumed"], totals["blank_lines"]) == (60, 20)
        assert totals["processed"] == 60 and not totals["dead_lettered"]
    assert not (tmp_path / "queries.jsonl.dlq.jsonl").exists()  # no dead letter of a blank


def test_replay_reports_counts_of_a_file(tmp_path: Path) -> None:
    log_file = tmp_path / "queries.jsonl"
    write_events(log_file, range(5))
    with log_file.open("ab") as handle:
        handle.write(event(0) + b"\n" + b"{oops\n\n" + b'{"event_id":"z","question":"q"}\n')
    registry, metrics = fresh_metrics()
    report = replay(FileSource(log_file), pipeline(), metrics=metrics)
    assert report.consumed == 8
    assert report.blank_lines == 1  # line 8: counted, neither consumed nor dead-lettered
    assert report.consumed + report.blank_lines == 9  # every line of the file
    assert (report.processed, report.duplicates) == (5, 1)
    assert report.dead_lettered == {"not_json": 1, "missing_field": 1}
    assert report.balanced
    assert registry.get_sample_value("goldwatch_blank_lines_total", {"source": "file"}) == 1
    dlq = (tmp_path / "queries.jsonl.dlq.jsonl").read_text().splitlines()
    assert [json.loads(row)["origin"]["line"] for row in dlq] == [7, 9]


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.integers(0, 15), st.sampled_from([b"{", b"[]", b"", None])), max_size=40),
    st.integers(1, 7),
    st.integers(1, 10),
)
def test_every_message_is_accounted_for_once(
    items: list[int | bytes | None], batch_size: int, window: int
) -> None:
    values = [event(x) if isinstance(x, int) else x for x in items]
    messages = kafka_messages(values)
    batches = [messages[i : i + batch_size] for i in range(0, len(messages), batch_size)]
    registry, metrics = fresh_metrics()
    report = replay(FakeSource(batches), pipeline(window), metrics=metrics, config=EVERY_BATCH)
    assert report.balanced and report.consumed == len(messages)
    total = sum(
        registry.get_sample_value(f"goldwatch_events_{name}_total", {"source": "kafka"}) or 0
        for name in ("processed", "duplicate")
    ) + sum(report.dead_lettered.values())
    assert total == len(messages)


@pytest.mark.kafka
def test_loop_over_a_real_broker_commits_everything_it_counted(
    kafka_broker: Any, make_topic: Any, source_config: Any, consumer_group: str
) -> None:
    from consumers.kafka_source import KafkaSource

    topic = make_topic(2)
    values = [event(i) for i in range(20)] + [b"not json", None] + [event(3), event(7)]
    keys = [b"k-%d" % n for n in range(len(values))]  # a tombstone needs a key
    kafka_broker.produce(topic, values, keys=keys)
    registry = CollectorRegistry()
    metrics = build_metrics(registry, topics=[topic])
    stop, reports = threading.Event(), []
    source = KafkaSource(source_config())
    config = PipelineConfig(max_batch_wait_ms=200, commit_interval_s=0, status_interval_s=0)
    worker = threading.Thread(
        target=lambda: reports.append(
            run(source, pipeline(), StateStore.in_memory(), metrics, stop, config=config)
        )
    )
    worker.start()
    consumed = "goldwatch_events_consumed_total"
    wait_for(lambda: registry.get_sample_value(consumed, {"source": "kafka"}) == 24, 30)
    stop.set()
    worker.join(timeout=30)
    assert not worker.is_alive()
    (report,) = reports
    assert (report.consumed, report.processed, report.duplicates) == (24, 20, 2)
    assert report.dead_lettered == {"not_json": 1, "tombstone": 1} and report.balanced
    assert kafka_broker.committed(topic, consumer_group) == kafka_broker.end_offsets(topic)
    assert (registry.get_sample_value("goldwatch_commits_total") or 0) >= 1
    assert (registry.get_sample_value("goldwatch_rebalances_total") or 0) >= 1


@pytest.mark.kafka
def test_a_member_joining_mid_stream_makes_no_event_count_twice(
    kafka_broker: Any, make_topic: Any, source_config: Any, consumer_group: str
) -> None:
    """Two loops in one group, the second joining while the first has processed hundreds of
    events it has not checkpointed (checkpoints are an hour apart): the revocation
    checkpoints and commits them first, so between them every event counts once and every
    dead letter is sent once (a new user's trial counted 3,450 of 3,004)."""
    from consumers.kafka_source import KafkaSource
    from tests.acceptance.conftest import read_topic

    topic = make_topic(4)
    first_half = [event(i) for i in range(600)] + [b"not json"] * 5
    second_half = [event(i) for i in range(600, 1000)] + [b"not json"] * 5
    total, valid = len(first_half) + len(second_half), 1000
    kafka_broker.produce(topic, first_half)
    # hour-long checkpoint and commit intervals: nothing is checkpointed before the revocation
    config = PipelineConfig(max_batch_size=50, max_batch_wait_ms=100, commit_interval_s=3600,
                            commit_every=1_000_000, status_interval_s=0)  # fmt: skip
    source_settings = {"commit_interval_s": 3600.0, "max_poll_interval_ms": 20_000}
    registries = [CollectorRegistry(), CollectorRegistry()]
    stops = [threading.Event(), threading.Event()]
    sources: list[Any] = []
    reports: list[list[Report]] = [[], []]
    errors: list[BaseException] = []

    def member(i: int) -> None:
        try:
            source = KafkaSource(source_config(client_id=f"member-{i}", **source_settings))
            sources.append(source)
            metrics = build_metrics(registries[i], topics=[topic])
            reports[i].append(run(source, pipeline(), StateStore.in_memory(), metrics, stops[i],
                                  config=config))  # fmt: skip
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    def consumed(i: int) -> float:
        value = registries[i].get_sample_value(
            "goldwatch_events_consumed_total", {"source": "kafka"}
        )
        return value or 0.0

    threads = [threading.Thread(target=member, args=(i,)) for i in range(2)]
    threads[0].start()
    try:
        wait_for(lambda: consumed(0) >= len(first_half) or bool(errors), 90)
        assert not errors and kafka_broker.committed(topic, consumer_group) == dict.fromkeys(
            range(4)
        )  # all of it processed, none of it committed
        threads[1].start()  # joining revokes the first member's partitions
        kafka_broker.produce(topic, second_half)

        def revoked() -> bool:  # the join may come after the first read the second half too
            return sources[0].status()["revoke_checkpoints"] >= 1

        # (a full CI run once stopped both before the join's revocation: 0 revoke checkpoints)
        wait_for(lambda: (consumed(0) + consumed(1) >= total and revoked()) or bool(errors), 120)
    finally:
        for stop in stops:
            stop.set()
        for thread in threads:
            if thread.ident is not None:
                thread.join(timeout=60)
    assert not errors and not any(thread.is_alive() for thread in threads)
    (first,), (second,) = reports
    assert first.consumed + second.consumed == total
    assert first.processed + second.processed == valid
    assert first.dead_lettered_total + second.dead_lettered_total == 10
    assert first.duplicates == second.duplicates == 0
    assert len(read_topic(kafka_broker, f"{topic}.dlq")) == 10  # none sent twice
    assert kafka_broker.committed(topic, consumer_group) == kafka_broker.end_offsets(topic)
    status = sources[0].status()
    assert status["revoke_checkpoints"] >= 1 and status["revoke_checkpoint_timeouts"] == 0


class FlakyDeadLetters(FakeSource):
    """Its dead-letter destination fails ``failures`` times (a paused broker), then works."""

    def __init__(self, batches: list[list[RawMessage]], failures: int) -> None:
        super().__init__(batches)
        self.failures = failures

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        if letters and self.failures > 0:
            self.failures -= 1
            self.calls.append("dead_letter_failed")
            raise OSError("destination unavailable")
        super().dead_letter(letters)


class NoWaitStop(threading.Event):
    """A stop event whose ``wait`` returns at once (the loop's retry backoff waits on its stop
    event, so the retries run without sleeping); only this event is affected, not every
    ``threading.Event`` of the process (kafka-python's, the test runner's)."""

    def wait(self, timeout: float | None = None) -> bool:
        return self.is_set()


class StopOnWait(NoWaitStop):
    """A stop event set by the first ``wait``: the operator stops the service during the
    outage the loop is backing off from."""

    def wait(self, timeout: float | None = None) -> bool:
        self.set()
        return super().wait(timeout)


def test_dead_letters_are_retried_in_place_until_written() -> None:
    source = FlakyDeadLetters([kafka_messages([event(1), b"not json", event(2)])], failures=2)
    _, metrics = fresh_metrics()
    report = run(source, pipeline(), StateStore.in_memory(), metrics, NoWaitStop(),
                 config=PipelineConfig(commit_interval_s=0), until_eof=True)  # fmt: skip
    assert source.calls.count("dead_letter_failed") == 2
    assert [d.reason for d in source.dead] == ["not_json"]
    assert (report.processed, report.dead_lettered_total) == (2, 1)
    # the loop commits the last message of each partition (offset 2 here: all three done)
    assert [m.origin.offset for m in source.committed] == [2] and not source.failed


class BrokerPausedDeadLetters(FlakyDeadLetters):
    """Its dead-letter topic's broker times out ``failures`` times (kafka-python's error)."""

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        if letters and self.failures > 0:
            self.failures -= 1
            self.calls.append("dead_letter_failed")
            raise KafkaTimeoutError("dead-letter topic not acknowledged")
        FakeSource.dead_letter(self, letters)


def test_kafka_errors_of_the_dead_letter_topic_are_retried() -> None:
    # the loop no longer imports kafka-python itself (issue 22): a Kafka source that did
    # must still have its errors retried, not stop the consumer
    source = BrokerPausedDeadLetters([kafka_messages([b"not json", event(1)])], failures=3)
    report = run(source, pipeline(), StateStore.in_memory(), fresh_metrics()[1], NoWaitStop(),
                 config=PipelineConfig(commit_interval_s=0), until_eof=True)  # fmt: skip
    assert source.calls.count("dead_letter_failed") == 3
    assert [d.reason for d in source.dead] == ["not_json"]
    assert (report.processed, report.dead_lettered_total) == (1, 1)
    assert [m.origin.offset for m in source.committed] == [1] and not source.failed


def test_stop_while_dead_letters_fail_commits_nothing() -> None:
    stop = StopOnWait()
    source = FlakyDeadLetters([kafka_messages([b"not json"])], failures=10**6)
    _, metrics = fresh_metrics()
    with pytest.raises(Exception, match="stopped while dead letters were pending"):
        run(source, pipeline(), StateStore.in_memory(), metrics, stop,
            config=PipelineConfig(commit_interval_s=0))  # fmt: skip
    assert source.committed == [] and source.failed and source.closed


class DeferredDeadLetters(FakeSource):
    """Writes dead letters per batch and makes them durable in ``sync_dead_letters``."""

    def __init__(self, batches: list[list[RawMessage]], calls: list[str], fail: bool) -> None:
        super().__init__(batches, calls)
        self.fail = fail

    def sync_dead_letters(self) -> None:
        self.calls.append("sync")
        if self.fail:
            raise OSError(5, "Input/output error")


def test_deferred_dead_letters_are_synced_before_each_checkpoint() -> None:
    calls: list[str] = []
    batches = [kafka_messages([b"x", event(1)], 0), kafka_messages([event(2)], 2)]
    source = DeferredDeadLetters(batches, calls, fail=False)
    config = PipelineConfig(commit_interval_s=3600, commit_every=3, status_interval_s=3600)
    run(source, pipeline(), recording_state(calls), fresh_metrics()[1], threading.Event(),
        config=config, until_eof=True)  # fmt: skip
    # one checkpoint for both batches (3 messages): one sync, before it, then the commit
    assert calls == [
        "poll", "dead_letter", "poll", "dead_letter", "sync", "checkpoint", "commit", "poll",
        "close",
    ]  # fmt: skip


def test_failed_dead_letter_sync_checkpoints_and_commits_nothing() -> None:
    calls: list[str] = []
    source = DeferredDeadLetters([kafka_messages([b"x", event(1)], 0)], calls, fail=True)
    state = recording_state(calls)
    with pytest.raises(Exception, match="cannot sync dead letters.*Input/output error"):
        run(source, pipeline(), state, fresh_metrics()[1], threading.Event(),
            config=EVERY_BATCH, until_eof=True)  # fmt: skip
    assert "checkpoint" not in calls and source.committed == []
    assert source.failed and source.closed
    assert state.get("totals") is None  # nothing of the batch reached the state file


def test_gc_paused_restores_the_collector_and_catches_up() -> None:
    import gc

    from consumers.loop import gc_paused

    collected: list[int] = []

    def note(phase: str, info: dict[str, int]) -> None:
        if phase == "stop":
            collected.append(info["generation"])

    old = gc.get_threshold()
    gc.callbacks.append(note)
    try:
        gc.set_threshold(50, 1_000_000, 1_000_000)  # gen0 only, after 50 net allocations
        with gc_paused():
            assert not gc.isenabled()
            collected.clear()  # (entering may have triggered one, the collector was still on)
            kept = [[] for _ in range(200)]  # 200 container objects still alive at exit
            assert collected == []
        at_exit = list(collected)
        assert gc.isenabled() and at_exit == [0] and len(kept) == 200
        gc.disable()
        with gc_paused():
            pass
        assert not gc.isenabled()  # off on entry: left off
    finally:
        gc.enable()
        gc.set_threshold(*old)
        gc.callbacks.remove(note)


def test_gc_paused_freezes_what_outlives_a_full_collection() -> None:
    import gc
    import weakref

    from consumers.loop import gc_paused

    class Box:
        pass

    def step(freeze: bool) -> tuple[list[Box], int]:
        before = gc.get_freeze_count()
        # no thaw: a thaw unfreezes and collects whatever earlier tests froze (freeze_heap),
        # and the garbage among it would make the frozen count's difference depend on them
        with gc_paused(freeze_survivors=freeze, freeze_interval_s=0.0,
                       thaw_interval_s=float("inf")):  # fmt: skip
            gc.collect(1)
            gc.collect(1)  # generation 2's count is now 2, over its threshold of 1
            kept = [Box() for _ in range(200)]
        return kept, gc.get_freeze_count() - before

    old = gc.get_threshold()
    try:
        gc.set_threshold(50, 1, 1)
        kept, frozen = step(freeze=True)
        assert frozen >= 200  # the boxes and the list, with whatever else was young
        tracked = {id(o) for o in gc.get_objects()}
        assert not any(id(box) in tracked for box in kept)  # frozen: no collection walks them
        alive = weakref.ref(kept[0])
        del kept
        assert alive() is None  # frozen objects are still freed by reference counting
        kept, frozen = step(freeze=False)
        # nothing frozen: the permanent generation does not grow (it may shrink: an object
        # frozen earlier, by this test or another, freed by reference counting meanwhile —
        # a CI run read -4), and the new boxes are still tracked, walked by collections
        assert frozen <= 0 and len(kept) == 200
        tracked = {id(o) for o in gc.get_objects()}
        assert all(id(box) in tracked for box in kept)
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


class QueuedDeadLetters(FakeSource):
    """Keeps dead letters in memory until ``sync_dead_letters`` (as the Kafka source does);
    the sync fails ``failures`` times (a broker that does not acknowledge), then delivers."""

    def __init__(self, batches: list[list[RawMessage]], calls: list[str], failures: int) -> None:
        super().__init__(batches, calls)
        self.failures = failures
        self.queued: list[DeadLetter] = []

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        self.calls.append("dead_letter")
        self.queued.extend(letters)

    @property
    def pending_dead_letters(self) -> int:
        return len(self.queued)

    def sync_dead_letters(self) -> None:
        if not self.queued:
            return
        if self.failures > 0:
            self.failures -= 1
            self.calls.append("sync_failed")
            raise DeadLetterError("not acknowledged")
        self.calls.append("sync")
        self.dead.extend(self.queued)
        self.queued.clear()


def test_queued_dead_letters_are_synced_with_retries_before_the_checkpoint() -> None:
    calls: list[str] = []
    source = QueuedDeadLetters([kafka_messages([b"x", event(1)], 0)], calls, failures=2)
    report = run(source, pipeline(), recording_state(calls), fresh_metrics()[1],
                 NoWaitStop(), config=EVERY_BATCH, until_eof=True)  # fmt: skip
    assert calls == [
        "poll", "dead_letter", "sync_failed", "sync_failed", "sync", "checkpoint", "commit",
        "poll", "close",
    ]  # fmt: skip
    assert [d.reason for d in source.dead] == ["not_json"] and report.dead_lettered_total == 1
    assert [m.origin.offset for m in source.committed] == [1]


def test_stop_while_queued_dead_letters_are_unacknowledged_commits_nothing() -> None:
    stop = StopOnWait()
    calls: list[str] = []
    source = QueuedDeadLetters([kafka_messages([b"x", event(1)], 0)], calls, failures=10**6)
    state = recording_state(calls)
    engine = Engine(pipeline(), state, fresh_metrics()[1], make_decoder())
    with pytest.raises(DeadLetterWriteAborted, match="stopped while dead letters were unack"):
        run(source, pipeline(), state, engine.metrics, stop, config=EVERY_BATCH,
            engine=engine)  # fmt: skip
    assert "checkpoint" not in calls and source.committed == [] and source.dead == []
    assert source.failed and source.closed and engine.before_checkpoint is None
    # the letters died with the source: the engine's memory is reloaded from the (empty)
    # checkpoint, so the broker's redelivery is applied and dead-lettered again
    assert engine.totals_view()["consumed"] == 2
    engine.restore()
    assert engine.totals_view()["consumed"] == 0


def test_any_checkpoint_syncs_queued_dead_letters_first() -> None:
    """HTTP ingest checkpoints the engine between two loop batches: the Kafka batch it covers
    must not be checkpointed before its dead letters are acknowledged."""
    calls: list[str] = []
    source = QueuedDeadLetters([kafka_messages([b"x", event(1)], 0)], calls, failures=1)
    state = recording_state(calls)
    engine = Engine(pipeline(), state, fresh_metrics()[1], make_decoder())
    config = PipelineConfig(commit_interval_s=3600, status_interval_s=3600)
    loop = _Loop(source, engine, config)
    loop.restore()
    loop.step(until_eof=False)
    assert calls == ["poll", "dead_letter"] and source.pending_dead_letters == 1
    with pytest.raises(DeadLetterError):
        engine.checkpoint()  # what HTTP ingest does; the broker does not acknowledge yet
    assert "checkpoint" not in calls
    engine.checkpoint()
    assert calls[-2:] == ["sync", "checkpoint"] and source.pending_dead_letters == 0
    loop.detach()
    assert engine.before_checkpoint is None


def test_a_clean_batch_does_not_settle_an_earlier_batch_with_dead_letters() -> None:
    engine = Engine(pipeline(), StateStore.in_memory(), fresh_metrics()[1], make_decoder())
    engine.restore()
    engine.process(kafka_messages([b"x"], 0), "kafka:queries")
    engine.process(kafka_messages([event(1)], 1), "kafka:queries")
    assert engine.totals_view()["consumed"] == 2
    engine.restore()  # nobody said the first batch's dead letter is durable: reload
    assert engine.totals_view()["consumed"] == 0
    engine.process(kafka_messages([b"x"], 0), "kafka:queries")
    engine.settle()  # the poll loop wrote it
    engine.process(kafka_messages([event(1)], 1), "kafka:queries")
    engine.restore()  # settled and newer than the checkpoint: kept
    assert engine.totals_view()["consumed"] == 2


def test_an_event_from_the_future_does_not_set_the_newest_event_time() -> None:
    """A client clock far ahead (year 9999) would pin ``goldwatch_last_event_timestamp_seconds``
    there: events stamped more than ``future_tolerance_s`` ahead of the wall clock are left
    out of it (they are still processed, and counted as ``future`` by the drift windows)."""
    registry, metrics = fresh_metrics()
    engine = Engine(pipeline(), StateStore.in_memory(), metrics, make_decoder(),
                    future_tolerance_s=60.0)  # fmt: skip
    far = json.dumps({"event_id": "far", "timestamp": "9999-12-31T23:59:59Z", "question": "q"})
    soon = int(time.time()) + 30  # within the tolerance: counts
    outcome = engine.process(kafka_messages([event(1), far.encode()], 0), "kafka")
    assert outcome.counts.processed == 2
    assert registry.get_sample_value("goldwatch_last_event_timestamp_seconds") == 1_795_946_401
    engine.process(kafka_messages([far.replace("far", "far-2").encode()], 2), "kafka")
    assert registry.get_sample_value("goldwatch_last_event_timestamp_seconds") == 1_795_946_401
    near = json.dumps({"event_id": "near", "timestamp": soon, "question": "q"})
    engine.process(kafka_messages([near.encode()], 3), "kafka")
    assert registry.get_sample_value("goldwatch_last_event_timestamp_seconds") == soon


def test_gc_paused_freezes_at_most_once_per_interval() -> None:
    """A freeze also takes other threads' in-flight objects: it is rate-limited."""
    import gc
    import math

    from consumers.loop import gc_paused

    def step(interval_s: float) -> int:
        before = gc.get_freeze_count()
        with gc_paused(freeze_interval_s=interval_s):
            gc.collect(1)
            gc.collect(1)  # generation 2's count is now 2, over its threshold of 1
            kept = [object() for _ in range(10)]  # noqa: F841 - alive at the freeze
        return gc.get_freeze_count() - before

    old = gc.get_threshold()
    try:
        gc.set_threshold(50, 1, 1)
        assert step(0.0) > 0
        assert step(math.inf) == 0  # not due: the full collection ran, nothing was frozen
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()


class RecreatingSource(FakeSource):
    """A Kafka-like source whose topic is deleted and created again: each batch comes with the
    topic id the metadata shows at that poll; ``restarted`` records restart_topics calls."""

    def __init__(self, batches: list[tuple[str, list[RawMessage]]]) -> None:
        super().__init__([messages for _, messages in batches])
        self.ids = [topic_id for topic_id, _ in batches]
        self.current = self.ids[0]
        self.restarted: list[set[str]] = []

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        if self.ids:
            self.current = self.ids.pop(0)
        return super().poll(max_records, timeout_ms)

    def topic_ids(self) -> dict[str, str]:
        return {"queries": self.current}

    def restart_topics(self, topics: set[str]) -> None:
        self.restarted.append(set(topics))


def test_recreated_topic_is_read_again_not_taken_for_redeliveries(tmp_path: Path) -> None:
    """Offsets 0-4 of topic id A applied and checkpointed; the topic is re-created (id B)
    and a poll still returns offsets 5-6 from the consumer's old position: those are dropped
    (neither processed nor committed) and the source restarts the topic; offsets 0-4 of B
    are then processed, not dropped as redeliveries. A restart on the same state with the
    same id B restarts nothing."""
    path = tmp_path / "state.db"
    old = kafka_messages([event(i) for i in range(5)], 0)
    stale = kafka_messages([event(i) for i in range(100, 102)], 5)
    new = kafka_messages([event(i) for i in range(200, 205)], 0)
    source = RecreatingSource([("A", old), ("B", stale), ("B", new)])
    with StateStore.open(path) as state:
        report = run(source, pipeline(), state, fresh_metrics()[1], threading.Event(),
                     config=EVERY_BATCH, until_eof=True)  # fmt: skip
        assert state.get("source/kafka-topic-ids") == {"queries": "B"}
        assert state.get("source/kafka-applied-offsets") == {"queries": {"0": 4}}
    assert source.restarted == [{"queries"}]
    assert (report.consumed, report.processed, report.duplicates) == (10, 10, 0), report
    # the last offset per partition is committed: 4 of A, then 4 of B; 5-6 never
    assert [m.origin.offset for m in source.committed] == [4, 4]

    again = RecreatingSource([("B", kafka_messages([event(i) for i in range(200, 206)], 0))])
    with StateStore.open(path) as state:
        report = run(again, pipeline(), state, fresh_metrics()[1], threading.Event(),
                     config=EVERY_BATCH, until_eof=True)  # fmt: skip
    assert again.restarted == []
    assert (report.processed, report.duplicates) == (1, 5), report  # 0-4 already applied


def test_the_default_decoder_builds_records_only_for_a_pipeline_that_reads_them() -> None:
    value = json.dumps({"event_id": "e-1", "timestamp": "2026-11-29T10:00:00Z", "question": "q",
                        "retrieval": {"results": [{"id": "p-1", "rank": 1}]}}).encode()  # fmt: skip
    seen = {}
    for reads in (False, True):
        seer = RecordSeer()
        seer.reads_records = reads
        config = PipelineConfig(dedup_window=10)
        report = replay(FakeSource([kafka_messages([value], 0)]), default_pipeline(config, [seer]))
        assert report.processed == 1
        seen[reads] = seer.seen
    assert seen[False] == [None]
    assert [r.results[0].id for r in seen[True]] == ["p-1"]


def redelivered_reference(
    messages: list[RawMessage], applied: dict[tuple[str, int], int]
) -> list[RawMessage]:
    """The rule, one message at a time: a message with a topic, partition and offset is
    kept when its offset is above its partition's applied one, which it then becomes."""
    kept = []
    for m in messages:
        o = m.origin
        if o.topic is not None and o.partition is not None and o.offset is not None:
            if o.offset <= applied.get((o.topic, o.partition), -1):
                continue
            applied[o.topic, o.partition] = o.offset
        kept.append(m)
    return kept


origins = st.builds(
    Origin,
    topic=st.sampled_from(["a", "b", None]),
    partition=st.one_of(st.none(), st.integers(0, 2)),
    offset=st.one_of(st.none(), st.integers(0, 12)),
)


# issue 22: whole runs of a partition are kept at once; the rule is the one-by-one rule
@settings(max_examples=300, deadline=None)
@given(
    st.lists(st.lists(origins, max_size=8), max_size=4),
    st.dictionaries(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2)),
                    st.integers(-1, 12)),
)  # fmt: skip
def test_redelivered_messages_are_dropped_as_one_by_one(
    batches: list[list[Origin]], applied: dict[tuple[str, int], int]
) -> None:
    engine = Engine(pipeline(), StateStore.in_memory(), fresh_metrics()[1], make_decoder())
    engine._applied = dict(applied)
    expected_applied = dict(applied)
    for origins_ in batches:
        messages = [RawMessage(b"{}", origin) for origin in origins_]
        expected = redelivered_reference(messages, expected_applied)
        assert engine._drop_redelivered(messages) == expected
        assert engine._applied == expected_applied


def test_a_polled_run_of_rising_offsets_is_kept_whole_and_a_replayed_one_dropped() -> None:
    engine = Engine(pipeline(), StateStore.in_memory(), fresh_metrics()[1], make_decoder())
    engine._applied = {("queries", 0): 4}
    first = kafka_messages([event(i) for i in range(3)], 5) + kafka_messages([event(9)], 0)
    assert engine._drop_redelivered(first) == first[:3]  # 0 <= 4: a redelivery
    assert engine._applied == {("queries", 0): 7}
    again = kafka_messages([event(i) for i in range(4)], 6)  # 6, 7 applied; 8, 9 fresh
    assert engine._drop_redelivered(again) == again[2:]
    assert engine._applied == {("queries", 0): 9}


def records(topic: str, partition: int, offsets: Sequence[int]) -> list[ConsumerRecord]:
    """kafka-python's records of one partition (as its ``poll`` lists them)."""
    return [ConsumerRecord(topic, partition, -1, offset, 1_700_000_000_000 + offset, 0, None,
                           b"{}", [], None, -1, 2, -1) for offset in offsets]  # fmt: skip


runs_of_a_poll = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2),
              st.lists(st.integers(0, 12), min_size=1, max_size=6)),
    max_size=4,
)  # fmt: skip


# issue 22: a Kafka poll's runs are checked per run, without reading the messages' origins
@settings(max_examples=300, deadline=None)
@given(
    st.lists(runs_of_a_poll, max_size=4),
    st.dictionaries(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2)),
                    st.integers(-1, 12)),
)  # fmt: skip
def test_a_polls_partition_runs_drop_redeliveries_as_one_by_one(
    polls: list[list[tuple[str, int, list[int]]]], applied: dict[tuple[str, int], int]
) -> None:
    engine = Engine(pipeline(), StateStore.in_memory(), fresh_metrics()[1], make_decoder())
    engine._applied = dict(applied)
    expected_applied = dict(applied)
    for poll in polls:
        messages = partition_runs([records(t, p, offsets) for t, p, offsets in poll])
        assert type(messages) is PartitionRuns and messages.covered()
        expected = redelivered_reference(list(messages), expected_applied)
        assert engine._drop_redelivered(messages) == expected
        assert engine._applied == expected_applied


def test_partition_runs_say_where_each_partitions_messages_are() -> None:
    polled = partition_runs([records("q", 2, [7, 8, 9]), [], records("q", 0, [3, 1])])
    assert [m.origin for m in polled] == [
        Origin("q", 2, 7), Origin("q", 2, 8), Origin("q", 2, 9), Origin("q", 0, 3),
        Origin("q", 0, 1),
    ]  # fmt: skip
    assert polled.runs == (
        OffsetRun("q", 2, 0, 3, 7, 9, True),
        OffsetRun("q", 0, 3, 5, 3, 1, False),
    )
    assert polled.covered()
    assert type(polled[1:]) is list and type(polled + []) is list  # copies carry no runs
    assert not PartitionRuns(list(polled), polled.runs[:1]).covered()


def test_the_loop_commits_the_last_message_of_each_partition_run() -> None:
    polls = [
        partition_runs([records("queries", 0, [0, 1, 2]), records("queries", 1, [5, 6])]),
        partition_runs([records("queries", 1, [7]), records("queries", 0, [3, 4])]),
    ]
    source = FakeSource(list(polls))
    report = run(source, pipeline(), StateStore.in_memory(), fresh_metrics()[1],
                 threading.Event(), config=PipelineConfig(commit_interval_s=3600),
                 until_eof=True)  # fmt: skip
    assert report.consumed == 8
    assert sorted((m.origin.partition, m.origin.offset) for m in source.committed) == [
        (0, 4),
        (1, 7),
    ]


class StreamSeer(CountingStage):
    """Remembers the streams of each batch it sees."""

    name = "stream_seer"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[list[str] | None] = []

    def process(self, batch: Batch) -> None:
        self.seen.append(None if batch.streams is None else list(batch.streams))
        super().process(batch)


def valued(topic: str, partition: int, values: dict[int, bytes | None]) -> list[ConsumerRecord]:
    """kafka-python's records of one partition, ``{offset: value}``."""
    return [ConsumerRecord(topic, partition, -1, offset, 1_700_000_000_000 + offset, 0, None,
                           value, [], None, -1, 2, -1)
            for offset, value in values.items()]  # fmt: skip


# issue 22: a Kafka poll's streams come from its runs, its dead letters counted out
def test_a_polls_streams_name_each_decoded_events_partition_less_its_dead_letters() -> None:
    seer = StreamSeer()
    engine = Engine(Pipeline([seer]), StateStore.in_memory(), fresh_metrics()[1],
                    make_decoder())  # fmt: skip
    poll = partition_runs([
        valued("q", 2, {7: event(1), 8: b"not json", 9: event(2)}),
        valued("q", 0, {3: None, 4: event(3)}),
        valued("r", 2, {5: event(4)}),
    ])  # fmt: skip
    outcome = engine.process(poll, "kafka")
    assert [letter.message.origin.offset for letter in outcome.dead] == [8, 3]
    # worked out by hand: q[2] offsets 7 and 9, q[0] offset 4, r[2] offset 5
    assert seer.seen == [["q[2]", "q[2]", "q[0]", "r[2]"]]
    assert engine.process(partition_runs([valued("q", 1, {0: b"[]"})]), "kafka").dead
    assert seer.seen[1:] == [None]  # nothing decoded: no streams, as for any empty batch


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 2),
                       st.lists(st.booleans(), min_size=1, max_size=6)),
             max_size=4, unique_by=lambda run: run[:2]),
)  # fmt: skip
def test_a_polls_streams_are_each_decoded_messages_origin(
    poll: list[tuple[str, int, list[bool]]],
) -> None:
    lists = [valued(t, p, {k: event(k) if good else b"{" for k, good in enumerate(goods)})
             for t, p, goods in poll]  # fmt: skip
    messages = partition_runs(lists)
    decoded, dead = make_decoder()(messages)
    expected = [f"{m.origin.topic}[{m.origin.partition}]" for m, _ in decoded] or None
    assert _streams(decoded, messages, dead) == expected


class IdleRecorder(CountingStage):
    """Records its idle turns in the shared call list; raises in them if told to."""

    name = "idle_recorder"

    def __init__(self, calls: list[str], fail: bool = False) -> None:
        super().__init__()
        self.calls, self.fail = calls, fail

    def idle(self) -> None:
        self.calls.append("idle")
        if self.fail:
            raise RuntimeError("sink down")


@pytest.mark.parametrize("fail", [False, True])
def test_an_empty_poll_gives_the_stages_their_idle_turn(fail: bool) -> None:
    """Harvest publishes on a clock (flush_interval_s) from its idle turn too, so a quiet
    stream's last suggestions are not held until the next batch or shutdown (a seventh
    trial); a failing idle turn is logged and the loop goes on."""
    calls: list[str] = []
    batches = [kafka_messages([event(1)], 0), [], kafka_messages([event(2)], 1)]
    source = FakeSource(batches, calls)
    stage = IdleRecorder(calls, fail=fail)
    report = run(source, Pipeline([stage]), StateStore.in_memory(), fresh_metrics()[1],
                 threading.Event(), config=EVERY_BATCH, until_eof=True)  # fmt: skip
    assert [c for c in calls if c in ("poll", "idle")] == ["poll", "poll", "idle", "poll", "poll"]
    assert stage.processed == 2 and report.processed == 2
