"""The suggestion store stays bounded by ``harvest.max_suggestions`` (issue 22 item 5).

Each checkpoint keeps the records of the suggestions its harvest snapshot holds and of the
decided ones, and deletes the others in its own transaction: stored = held + decided after
every checkpoint, whatever earlier ones left; a failed checkpoint deletes nothing; a
decision racing the checkpoint keeps its record; a restart restores exactly and sweeps what
the crashed run published after its last checkpoint; a replay exports what its report says
is held.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.labelling import (
    AlreadyDecided,
    GoldSetUnavailable,
    Labelling,
    LabellingError,
)
from service.harvest.stage import HarvestStage
from service.harvest.store import (
    CANDIDATE_PREFIX,
    DECISION_PREFIX,
    StateStoreCandidates,
    SuggestionRecord,
    candidate_sweep,
)
from service.state import StateError, StateStore, Sweep
from tests.service.harvest.helpers import batch, event

KEY = "stage/harvest"
NOW = "2026-12-02T10:00:00Z"
REFUSED = {"refused": True, "topic": "fees", "language": "en"}
#: max_suggestions 10: eviction starts past 11 (1.1 ×) and goes back to 10.
CONFIG = HarvestConfig(max_suggestions=10, flush_interval_s=0.0)


def word(i: int) -> str:
    """A distinct made-up question per ``i`` (20 consonants from the SHA-256 of ``i``): no two
    of the first 60 share more than 1/8 of their character trigrams, far below the 0.6 at
    which near-duplicates merge."""
    digest = hashlib.sha256(str(i).encode("ascii")).hexdigest()[:20]
    return "".join("bcdfghjklmnpqrstvwxz"[int(c, 16)] for c in digest)


def events(start: int, n: int) -> Any:
    """A batch of ``n`` refused questions ``start``…, one a minute, all of priority 2.0, so
    each eviction drops the oldest."""
    return batch([event(f"e{i}", word(i), minute=i) for i in range(start, start + n)],
                 [REFUSED] * n)  # fmt: skip


def stored_ids(store: StateStore) -> set[str]:
    return {key[len(CANDIDATE_PREFIX) :] for key in store.keys(CANDIDATE_PREFIX)}


def checkpoint(store: StateStore, stage: HarvestStage) -> None:
    """What the engine's checkpoint writes of the harvest stage (with the other stages'),
    and its confirmation once committed."""
    store.checkpoint({KEY: stage.state_snapshot(), "stage/count": {"processed": 1}})
    stage.checkpointed()


def swept_store(store: StateStore) -> StateStore:
    store.add_sweep(candidate_sweep(KEY))  # as build_live does for serve and replay
    return store


def test_checkpoints_keep_the_records_held_and_decided_only() -> None:
    store = swept_store(StateStore.in_memory())
    repo = StateStoreCandidates(store)
    stage = HarvestStage(CONFIG, sinks=[repo])
    stage.process(events(0, 5))
    first = stage._exact[word(0)]  # the oldest: evicted first
    repo.decide(first, {"status": "rejected", "reason": "dup", "decided_at": NOW})
    checkpoint(store, stage)
    evicted = 0
    for start in range(5, 60, 5):
        stage.process(events(start, 5))  # each flush publishes the new ones at once
        evicted += stage.pending_observations()["evicted"]
        checkpoint(store, stage)
        assert stored_ids(store) == set(stage.suggestions) | {first}
    # 60 questions seen, 10 or 11 held at a time: 49 or 50 evicted, each of them published
    assert evicted == 60 - len(stage.suggestions) and first not in stage.suggestions
    assert len(stored_ids(store)) == len(stage.suggestions) + 1 <= 11 + 1
    assert store.swept == evicted - 1  # every evicted record but the decided one
    assert repo.decision(first) is not None and repo.get(first) is not None


def test_a_sweep_keeps_other_namespaces_and_runs_only_with_its_snapshot() -> None:
    store = StateStore.in_memory()
    sweep = Sweep("stage/x", "x/r/", lambda value: value["ids"], "x/d/")
    store.add_sweep(sweep)
    store.add_sweep(sweep)  # once
    store.checkpoint({"x/r/a": 1, "x/r/b": 2, "x/r/c": 3, "x/d/c": "kept", "x/rr": 4,
                      "x/r": 5, "y/r/a": 6})  # fmt: skip
    assert store.keys("x/r/") == ["x/r/a", "x/r/b", "x/r/c"]  # no snapshot written: no sweep
    store.checkpoint({"stage/x": {"ids": ["b"]}})
    assert store.keys() == ["stage/x", "x/d/c", "x/r", "x/r/b", "x/r/c", "x/rr", "y/r/a"]
    assert store.swept == 1


class CommitFails(sqlite3.Connection):
    """A SQLite connection whose ``COMMIT`` fails while ``armed`` (a disk that fills up as
    the transaction is written), after every statement of it ran."""

    armed = False

    def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:
        if sql == "COMMIT" and self.armed:
            raise sqlite3.OperationalError("database or disk is full")
        return super().execute(sql, *args)


def commit_fails_connection(tmp_path: Path) -> tuple[Path, CommitFails]:
    """A state file with goldwatch's schema and a :class:`CommitFails` connection to it."""
    path = tmp_path / "state.sqlite"
    StateStore.open(path).close()  # the schema
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False,
                                 factory=CommitFails)  # fmt: skip
    assert isinstance(connection, CommitFails)
    return path, connection


def test_a_failed_checkpoint_deletes_nothing_and_the_next_sweeps_its_leftovers(
    tmp_path: Path,
) -> None:
    path, connection = commit_fails_connection(tmp_path)
    store = swept_store(StateStore(connection, str(path)))
    repo = StateStoreCandidates(store)
    stage = HarvestStage(CONFIG, sinks=[repo])
    stage.process(events(0, 11))
    checkpoint(store, stage)
    committed = {sid: repo.get(sid) for sid in stored_ids(store)}
    snapshot = store.get(KEY)
    stage.process(events(11, 6))  # 17 > 11: the 7 oldest evicted, their records stay
    leftovers = stored_ids(store) - set(stage.suggestions)
    assert len(leftovers) == 7
    before = {sid: repo.get(sid) for sid in stored_ids(store)}
    assert len(before) == 17

    assert isinstance(connection, CommitFails)
    connection.armed = True
    with pytest.raises(StateError, match="disk is full"):
        checkpoint(store, stage)
    assert {sid: repo.get(sid) for sid in stored_ids(store)} == before  # nothing deleted
    assert store.get(KEY) == snapshot and store.swept == 0
    restored = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    restored.restore(store.get(KEY))  # the last committed checkpoint is whole
    assert {r["id"]: r for r in restored.records()} == {
        sid: row for sid, row in committed.items() if sid in snapshot["ids"]
    }

    connection.armed = False
    checkpoint(store, stage)
    assert stored_ids(store) == set(stage.suggestions)
    assert store.swept == 7
    store.close()


class SweptWhileDeciding(StateStoreCandidates):
    """The labeller's repository; the consumer's checkpoint (``between``) runs right after
    the labelling read a record and before it decides — the API decides under its own lock,
    the checkpoint sweeps under the engine's."""

    def __init__(self, store: StateStore, between: Callable[[], None]) -> None:
        super().__init__(store)
        self.between = between

    def get(self, candidate_id: str) -> SuggestionRecord | None:
        row = super().get(candidate_id)
        self.between()
        return row


@pytest.mark.parametrize("decision", ["rejected", "accepted"])
def test_a_decision_on_a_suggestion_swept_meanwhile_keeps_its_record(
    tmp_path: Path, decision: str
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "fees?", "gold": ["p-1"], "kind": "plain"}\n',
                    encoding="utf-8")  # fmt: skip
    store = swept_store(StateStore.in_memory())
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(events(0, 11))
    checkpoint(store, stage)
    oldest = stage._exact[word(0)]
    stage.process(events(11, 1))  # 12 > 11: the two oldest evicted, their records stay
    assert oldest not in stage.suggestions and oldest in stored_ids(store)
    record = StateStoreCandidates(store).get(oldest)

    labelling = Labelling(SweptWhileDeciding(store, lambda: checkpoint(store, stage)), gold)
    if decision == "rejected":
        labelling.reject(oldest, "a duplicate of q-001")
    else:
        labelling.accept(oldest, ["p-1"], "plain")
    assert store.swept == 2  # the checkpoint did sweep both, the decided one too

    repo = StateStoreCandidates(store)
    assert repo.get(oldest) == record  # written back with the decision
    assert repo.decision(oldest)["status"] == decision  # type: ignore[index]
    assert [item["status"] for item in labelling.list(status=decision).items] == [decision]
    checkpoint(store, stage)  # decided: kept from now on
    assert stored_ids(store) == set(stage.suggestions) | {oldest}


def test_a_decision_never_overwrites_a_newer_record() -> None:
    store = swept_store(StateStore.in_memory())
    repo = StateStoreCandidates(store)
    stage = HarvestStage(CONFIG, sinks=[repo])
    stage.process(events(0, 1))
    sid = stage._exact[word(0)]
    older = repo.get(sid)
    assert older is not None
    stage.process(batch([event("e99", word(0), minute=99)], [REFUSED]))  # count 2, published
    repo.decide(sid, {"status": "rejected", "reason": "no", "decided_at": NOW}, older)
    assert repo.get(sid)["count"] == 2  # type: ignore[index]


def test_a_restart_restores_exactly_and_sweeps_what_the_crashed_run_left(tmp_path: Path) -> None:
    path = tmp_path / "state.sqlite"
    with swept_store(StateStore.open(path, exclusive=True)) as store:
        crashed = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
        for start in range(0, 30, 6):
            crashed.process(events(start, 6))
            checkpoint(store, crashed)
        at_checkpoint = crashed.records()
        crashed.process(events(30, 9))  # published at once, evicting; then kill -9
        assert len(stored_ids(store)) == len(at_checkpoint) + 9
    with swept_store(StateStore.open(path, exclusive=True)) as store:
        restarted = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
        restarted.restore(store.get(KEY))
        assert restarted.records() == at_checkpoint  # every record it relies on was kept
        leftovers = stored_ids(store) - set(restarted.suggestions)
        assert len(leftovers) == 9  # published after the last checkpoint
        checkpoint(store, restarted)
        assert stored_ids(store) == set(restarted.suggestions)
        again = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
        again.restore(store.get(KEY))
        assert again.records() == at_checkpoint


@pytest.mark.slow
def test_a_replay_exports_what_its_report_says_is_held(tmp_path: Path) -> None:
    """A new user's report said 50 suggestions held (``harvest.max_suggestions`` 50) while
    ``goldwatch candidates export`` listed 79: the records of evicted suggestions stayed."""
    from benchmarks.bench_production import write_configs, write_gold_and_corpus, write_log
    from service.harvest.export import export_rows
    from service.jobs.replay import run_replay
    from service.settings import load_settings

    gold, corpus = write_gold_and_corpus(tmp_path, seed=0)
    log = write_log(tmp_path / "events.jsonl", 1_500, seed=0)
    defaults, _ = write_configs(tmp_path, gold, corpus)
    settings = load_settings(defaults)
    settings = settings.model_copy(update={
        "harvest": settings.harvest.model_copy(update={"max_suggestions": 50}),
        "pipeline": settings.pipeline.model_copy(update={"commit_every": 500}),
    })  # fmt: skip
    state = tmp_path / "state.sqlite"
    report = run_replay(settings, log.path, state, tmp_path / "dlq.jsonl")
    summary = report["gold_candidates"]
    with StateStore.open(state) as store:
        exported = export_rows(StateStoreCandidates(store), settings.harvest, None)
        stored = len(store.keys(CANDIDATE_PREFIX))
    assert 50 <= summary["n_suggestions"] <= 55  # max_suggestions, up to 10 % over
    assert len(exported) == stored == summary["n_suggestions"]
    assert {row["id"] for row in exported} >= {row["id"] for row in summary["top"]}


def test_after_a_failed_checkpoint_a_flush_keeps_the_records_the_committed_one_relies_on(
    tmp_path: Path,
) -> None:
    """A suggestion clean at the last committed checkpoint and changed since waits for a
    snapshot that carries it in full — one that commits: a failed checkpoint's does not
    count, so the next flush must not overwrite the record a restart would read."""
    path, connection = commit_fails_connection(tmp_path)
    store = swept_store(StateStore(connection, str(path)))
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])  # flushes every batch
    stage.process(events(0, 3))
    checkpoint(store, stage)  # committed: relies on the three records
    at_checkpoint = stage.records()
    stage.process(batch([event("e50", word(0), minute=50)], [REFUSED]))  # changed: waits
    connection.armed = True
    with pytest.raises(StateError):
        checkpoint(store, stage)
    connection.armed = False
    stage.process(events(3, 1))  # a flush; then kill -9
    restarted = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    restarted.restore(store.get(KEY))
    assert restarted.records() == at_checkpoint  # word(0) counted once, as at the checkpoint
    store.close()


def test_the_engine_confirms_only_a_committed_checkpoint(tmp_path: Path) -> None:
    from prometheus_client import CollectorRegistry

    from consumers.engine import Engine
    from consumers.loop import make_decoder
    from service.pipeline import Pipeline
    from service.telemetry import build_metrics

    class Confirmed:
        name = "confirmed"

        def __init__(self) -> None:
            self.confirmed = 0

        def process(self, batch: Any) -> None:
            pass

        def state_snapshot(self) -> Any:
            return {"n": 1}

        def restore(self, state: Any) -> None:
            pass

        def checkpointed(self) -> None:
            self.confirmed += 1

    path, connection = commit_fails_connection(tmp_path)
    stage = Confirmed()
    metrics = build_metrics(CollectorRegistry())
    store = StateStore(connection, str(path))
    engine = Engine(Pipeline([stage]), store, metrics, make_decoder(max_event_bytes=65_536))
    engine.checkpoint()
    assert stage.confirmed == 1
    connection.armed = True
    with pytest.raises(StateError):
        engine.checkpoint()
    assert stage.confirmed == 1
    connection.close()


def test_failed_checkpoints_hold_back_only_the_committed_snapshot_and_the_last_one() -> None:
    """200 snapshots never confirmed (every checkpoint failing) held back 2,010 ids with 10
    suggestions held: the union of every snapshot taken. Only the last committed snapshot
    and the last one taken can be what a restart reads: at most 2 × 11 ids."""
    store = swept_store(StateStore.in_memory())
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(events(0, 10))
    checkpoint(store, stage)
    committed = set(stage.suggestions)  # all clean (published by the flush): relied on
    for start in range(10, 2010, 10):  # checkpoints keep failing: taken, never confirmed
        stage.process(events(start, 10))
        stage.state_snapshot()
    last = set(stage.suggestions)  # the last snapshot taken relies on all it holds
    assert stage._held == committed | last
    assert len(stage._held) <= 2 * 11


def stray(store: StateStore) -> None:
    """A record no snapshot names (as a crashed run or an evicted suggestion leaves)."""
    store.checkpoint({CANDIDATE_PREFIX + "c-stray": {"id": "c-stray"}})


def test_a_checkpoint_sweeps_only_after_an_eviction_or_a_start() -> None:
    """A sweep scans every record (100,000 held: 20-24 → 146-208 ms a checkpoint,
    docs/scaling.md), and HTTP ingest checkpoints once per request: a checkpoint sweeps
    only when a suggestion was evicted since the last committed sweep, or first after a
    start or restore."""
    store = swept_store(StateStore.in_memory())
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stray(store)
    stage.process(events(0, 5))
    checkpoint(store, stage)  # the first after the start: sweeps
    assert stored_ids(store) == set(stage.suggestions)
    stray(store)
    stage.process(events(5, 6))  # 11 held: none evicted
    checkpoint(store, stage)
    assert stored_ids(store) == set(stage.suggestions) | {"c-stray"}  # not swept
    stage.process(events(11, 1))  # 12 > 11: two evicted
    checkpoint(store, stage)
    assert stored_ids(store) == set(stage.suggestions)  # swept: the two and the stray
    assert store.swept == 1 + 3

    restarted = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    restarted.restore(store.get(KEY))
    stray(store)
    checkpoint(store, restarted)  # the first after a restore: sweeps
    assert stored_ids(store) == set(restarted.suggestions)


def test_a_failed_checkpoint_leaves_its_sweep_to_the_next(tmp_path: Path) -> None:
    path, connection = commit_fails_connection(tmp_path)
    store = swept_store(StateStore(connection, str(path)))
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(events(0, 11))
    checkpoint(store, stage)
    stage.process(events(11, 1))  # two evicted: the next checkpoint must sweep them
    connection.armed = True
    with pytest.raises(StateError):
        checkpoint(store, stage)
    connection.armed = False
    checkpoint(store, stage)  # nothing evicted since the failed one: still sweeps
    assert stored_ids(store) == set(stage.suggestions) and store.swept == 2
    store.close()


GOLD = '{"id": "q-001", "question": "fees?", "gold": ["p-1"], "kind": "plain"}\n'


class DecideFails(StateStoreCandidates):
    """The labeller's repository while the state's disk is full for the decision only (the
    gold row was appended): ``decide`` raises until ``fail`` is cleared."""

    fail = True

    def decide(self, candidate_id: str, decision: Any, record: Any = None) -> None:
        if self.fail:
            raise StateError("database or disk is full")
        super().decide(candidate_id, decision, record)


def gold_and_evicted(tmp_path: Path) -> tuple[Path, StateStore, HarvestStage, str]:
    """A gold-set file (:data:`GOLD`), a swept in-memory store and a stage that evicted and
    still lists a suggestion (:func:`evicted_and_listed`): ``(gold, store, stage, its id)``."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(GOLD, encoding="utf-8")
    store = swept_store(StateStore.in_memory())
    stage, oldest = evicted_and_listed(store)
    return gold, store, stage, oldest


def evicted_and_listed(store: StateStore) -> tuple[HarvestStage, str]:
    """A stage whose oldest suggestion was evicted after a checkpoint: its record is still
    stored (listed, so a labeller may accept it) until the next checkpoint sweeps it."""
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(events(0, 11))
    checkpoint(store, stage)
    oldest = stage._exact[word(0)]
    stage.process(events(11, 1))  # 12 > 11: the two oldest evicted
    assert oldest not in stage.suggestions and oldest in stored_ids(store)
    return stage, oldest


def harvest_ids(gold: Path) -> list[str]:
    return [row["harvest_id"] for row in map(json.loads, gold.read_text().splitlines())
            if "harvest_id" in row]  # fmt: skip


def test_an_accept_whose_decision_failed_can_be_retried_after_a_sweep(tmp_path: Path) -> None:
    """The 503 says "retry the accept"; a checkpoint committing before the retry swept the
    evicted suggestion's record, so the retry got 404 and the gold row had no decision."""
    gold, store, stage, oldest = gold_and_evicted(tmp_path)
    repo = DecideFails(store)
    labelling = Labelling(repo, gold)
    with pytest.raises(GoldSetUnavailable, match="retry the accept"):
        labelling.accept(oldest, ["p-1"], "plain")
    assert harvest_ids(gold) == [oldest]  # the row is in the file, its decision is not kept
    assert repo.decision(oldest) is None  # not decided: listed as suggested
    assert [item["status"] for item in labelling.list().items if item["id"] == oldest] == [
        "suggested"
    ]
    checkpoint(store, stage)  # sweeps the other evicted one, keeps the held one
    assert stored_ids(store) == set(stage.suggestions) | {oldest}
    repo.fail = False
    decision = labelling.accept(oldest, ["p-1"], "plain")  # the retry
    assert decision["gold_id"] == "q-002" and harvest_ids(gold) == [oldest]  # not appended
    assert repo.decision(oldest) == decision
    checkpoint(store, stage)
    assert stored_ids(store) == set(stage.suggestions) | {oldest}


class Killed(BaseException):
    """kill -9 of the process between the gold row's append and the decision."""


@pytest.mark.parametrize("then", ["accept", "reject"])
def test_a_restart_after_a_kill_between_the_append_and_the_decision(
    tmp_path: Path, then: str
) -> None:
    gold = tmp_path / "gold.jsonl"
    gold.write_text(GOLD, encoding="utf-8")
    path = tmp_path / "state.sqlite"
    with swept_store(StateStore.open(path, exclusive=True)) as store:
        _, oldest = evicted_and_listed(store)
        repo = StateStoreCandidates(store)
        repo.decide = lambda *_: (_ for _ in ()).throw(Killed())  # type: ignore[method-assign]
        with pytest.raises(Killed):
            Labelling(repo, gold).accept(oldest, ["p-1"], "plain")
    assert harvest_ids(gold) == [oldest]
    with swept_store(StateStore.open(path, exclusive=True)) as store:
        restarted = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
        restarted.restore(store.get(KEY))  # the last checkpoint's: the oldest still held
        restarted.process(events(11, 1))  # the events after it, redelivered: evicted again
        checkpoint(store, restarted)  # sweeps the other evicted one, not the held one
        assert stored_ids(store) == set(restarted.suggestions) | {oldest}
        labelling = Labelling(StateStoreCandidates(store), gold)
        if then == "accept":  # the retry reuses the row appended before the kill
            labelling.accept(oldest, ["p-1"], "plain")
        else:  # a reject finds that row and keeps its accept instead
            with pytest.raises(AlreadyDecided, match="accepted"):
                labelling.reject(oldest, "a duplicate")
        decision = StateStoreCandidates(store).decision(oldest)
        assert decision is not None and decision["status"] == "accepted"
        assert decision.get("gold_id") == "q-002" and decision.get("gold") == ["p-1"]
        assert harvest_ids(gold) == [oldest]


def test_an_accept_that_appended_nothing_releases_its_hold(tmp_path: Path) -> None:
    """The hold keeps a record only while a gold row may lack its decision."""
    gold, store, stage, oldest = gold_and_evicted(tmp_path)
    repo = StateStoreCandidates(store)
    labelling = Labelling(repo, gold)
    gold.unlink()  # moved away after the start: nothing appended
    with pytest.raises(GoldSetUnavailable, match="cannot be written"):
        labelling.accept(oldest, ["p-1"], "plain")
    assert store.get(DECISION_PREFIX + oldest) is None  # no hold left behind
    checkpoint(store, stage)  # evicted, undecided, not held: swept
    assert stored_ids(store) == set(stage.suggestions)


def fsync_and_truncate_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    """The disk fails after the write: ``fsync`` and the cut-back's ``ftruncate`` raise EIO,
    so the row stays in the file (the page cache holds it)."""

    def eio(*_: Any) -> None:
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fsync", eio)
    monkeypatch.setattr(os, "ftruncate", eio)


def close_fails_after_closing(monkeypatch: pytest.MonkeyPatch) -> None:
    """``close`` of the gold file reports EIO (NFS, a failed writeback) after the append."""
    real = os.close

    def close(fd: int) -> None:
        real(fd)
        monkeypatch.setattr(os, "close", real)
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "close", close)


def accepted_after_a_late_failure(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: Callable[[pytest.MonkeyPatch], None],
) -> tuple[Path, StateStore, HarvestStage, str, StateStoreCandidates, Labelling]:
    """An evicted suggestion's accept that fails (``failure``) after its row reached the
    gold file: 503 "retry the accept", the row landed, the suggestion still held.
    Returns ``(gold, store, stage, its id, repository, labelling)``."""
    gold, store, stage, oldest = gold_and_evicted(tmp_path)
    repo = StateStoreCandidates(store)
    labelling = Labelling(repo, gold)
    with monkeypatch.context() as patched:
        failure(patched)
        with pytest.raises(GoldSetUnavailable, match="retry the accept"):
            labelling.accept(oldest, ["p-1"], "plain")
    assert harvest_ids(gold) == [oldest]  # the row landed
    assert repo.pending(oldest)  # still held
    return gold, store, stage, oldest, repo, labelling


@pytest.mark.parametrize("failure", [fsync_and_truncate_fail, close_fails_after_closing])
def test_an_accept_failing_after_its_row_landed_keeps_its_hold(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    failure: Callable[[pytest.MonkeyPatch], None],
) -> None:
    """An error after the row reached the file is not "nothing appended": released, the
    record of an evicted suggestion was swept and the gold row had no decision."""
    gold, store, stage, oldest, repo, labelling = accepted_after_a_late_failure(
        tmp_path, monkeypatch, failure
    )
    checkpoint(store, stage)  # sweeps the other evicted one, not the held one
    assert stored_ids(store) == set(stage.suggestions) | {oldest}
    decision = labelling.accept(oldest, ["p-1"], "plain")  # the retry reuses the row
    assert decision["gold_id"] == "q-002" and harvest_ids(gold) == [oldest]
    assert repo.decision(oldest) == decision


def test_a_retry_failing_before_the_file_keeps_the_earlier_accepts_hold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hold an accept left after its row may have been written belongs to that accept: a
    retry that fails before reading the file (the lock not had in time) released it, so a
    sweep could take the record and a reject was kept while the file held the accepted row."""
    import service.harvest.labelling as labelling_module

    gold, store, stage, oldest, repo, labelling = accepted_after_a_late_failure(
        tmp_path, monkeypatch, fsync_and_truncate_fail
    )

    def locked(*args: Any, **kwargs: Any) -> int:
        raise OSError(errno.EAGAIN, "locked by another process for too long")

    with monkeypatch.context() as patched:
        patched.setattr(labelling_module, "open_append", locked)
        with pytest.raises(GoldSetUnavailable, match="cannot be written"):
            labelling.accept(oldest, ["p-1"], "plain")
    assert repo.pending(oldest)  # still the first accept's
    checkpoint(store, stage)
    assert oldest in stored_ids(store)  # not swept
    with pytest.raises(AlreadyDecided, match="accepted"):
        labelling.reject(oldest, "meh")  # settles the first accept: its row is in the file
    decision = repo.decision(oldest)
    assert decision is not None and decision["status"] == "accepted"


def test_a_reject_settling_a_failed_accept_refreshes_the_gold_set(tmp_path: Path) -> None:
    """A reject that finds the failed accept's row keeps that accept (409) and, as an
    accept's retry does, tells the running service (``on_accept``: the gold set it
    evaluates against), which otherwise missed the question until a restart."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(GOLD, encoding="utf-8")
    store = swept_store(StateStore.in_memory())
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(events(0, 3))
    checkpoint(store, stage)
    sid = stage._exact[word(0)]
    refreshed: list[Any] = []
    repo = DecideFails(store)
    labelling = Labelling(repo, gold, on_accept=refreshed.append)
    with pytest.raises(GoldSetUnavailable, match="retry the accept"):
        labelling.accept(sid, ["p-1"], "plain")
    assert refreshed == []  # not kept yet
    repo.fail = False
    with pytest.raises(AlreadyDecided, match="accepted"):
        labelling.reject(sid, "meh")
    assert [(q.id, list(q.gold), q.kind) for q in refreshed] == [("q-002", ["p-1"], "plain")]
    decision = repo.decision(sid)
    assert decision is not None and decision["status"] == "accepted"


def held_by_a_killed_accept(gold: Path) -> tuple[StateStoreCandidates, str, Labelling]:
    """A suggestion held by an accept killed right after its hold (no row appended), with
    ``gold`` as the gold-set file: ``(repository, its id, labelling)``."""
    store = swept_store(StateStore.in_memory())
    repo = StateStoreCandidates(store)
    stage = HarvestStage(CONFIG, sinks=[repo])
    stage.process(events(0, 3))
    checkpoint(store, stage)
    sid = stage._exact[word(0)]
    labelling = Labelling(repo, gold)
    record = repo.get(sid)
    assert record is not None
    repo.hold(sid, record, NOW)  # killed right after the hold
    return repo, sid, labelling


def test_a_reject_of_a_held_suggestion_before_the_gold_file_exists(tmp_path: Path) -> None:
    """A fresh gold path (created by the first accept): a hold left by a kill before that
    first append means no row can exist, so the reject is kept (it answered 503 ENOENT)."""
    gold = tmp_path / "new-gold.jsonl"
    repo, sid, labelling = held_by_a_killed_accept(gold)
    decision = labelling.reject(sid, "not a real question")
    assert decision["status"] == "rejected" and repo.decision(sid) == decision
    assert not repo.pending(sid) and not gold.exists()


def test_a_reject_of_a_held_suggestion_when_the_gold_file_went_missing(tmp_path: Path) -> None:
    """The file existed at start: gone, whether it held the row is unknown (503)."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(GOLD, encoding="utf-8")
    repo, sid, labelling = held_by_a_killed_accept(gold)
    gold.unlink()
    with pytest.raises(GoldSetUnavailable, match="ENOENT"):
        labelling.reject(sid, "not a real question")
    assert repo.pending(sid) and repo.decision(sid) is None


class SweptAfterRead(StateStoreCandidates):
    """A checkpoint commits (sweeping the evicted suggestions) right after the labeller
    read the record: the accept's hold writes it back."""

    def __init__(self, store: StateStore, stage: HarvestStage) -> None:
        super().__init__(store)
        self.stage = stage

    def get(self, candidate_id: str) -> SuggestionRecord | None:
        row = super().get(candidate_id)
        checkpoint(self.store, self.stage)
        return row


def test_a_released_hold_deletes_the_record_it_wrote_back(tmp_path: Path) -> None:
    """A hold that brought back a swept record, released (nothing appended), left a record
    neither held nor decided, listed and exported as suggested until the next sweep."""
    gold, store, stage, oldest = gold_and_evicted(tmp_path)
    repo = SweptAfterRead(store, stage)
    with pytest.raises(LabellingError, match="shorten reference_answer"):
        Labelling(repo, gold).accept(oldest, ["p-1"], "plain", {"reference_answer": "x" * 70_000})
    assert store.get(DECISION_PREFIX + oldest) is None  # released
    assert stored_ids(store) == set(stage.suggestions)  # as the sweep left it
    assert oldest not in {item["id"] for item in Labelling(repo, gold).list().items}


def test_a_released_hold_keeps_a_record_it_did_not_write(tmp_path: Path) -> None:
    """A record stored before the hold (or rewritten since) is the stage's: kept."""
    gold, store, stage, oldest = gold_and_evicted(tmp_path)
    repo = StateStoreCandidates(store)
    with pytest.raises(LabellingError, match="shorten reference_answer"):
        Labelling(repo, gold).accept(oldest, ["p-1"], "plain", {"reference_answer": "x" * 70_000})
    assert store.get(DECISION_PREFIX + oldest) is None and oldest in stored_ids(store)
    record = repo.get(oldest)
    assert record is not None
    swept = swept_store(StateStore.in_memory())
    assert StateStoreCandidates(swept).hold(oldest, record, NOW) is True  # written back
    newer = {**record, "events": 99}
    StateStoreCandidates(swept).publish([newer])  # rewritten by the stage since
    StateStoreCandidates(swept).release(oldest, record)
    assert StateStoreCandidates(swept).get(oldest) == newer
    assert not StateStoreCandidates(swept).pending(oldest)


def test_an_accept_finding_its_row_malformed_keeps_its_hold(tmp_path: Path) -> None:
    """The file holds a row carrying the suggestion's id (appended before a crash, then
    edited by hand) that is no valid gold row: the accept is refused (503) but the hold
    stays, since a row of it is in the file; a sweep keeps the evicted suggestion's record."""
    gold = tmp_path / "gold.jsonl"
    store = swept_store(StateStore.in_memory())
    stage, oldest = evicted_and_listed(store)
    broken = {"id": "q-002", "question": "fees?", "gold": [], "kind": "plain",
              "harvest_id": oldest}  # fmt: skip
    gold.write_text(GOLD + json.dumps(broken) + "\n", encoding="utf-8")
    repo = StateStoreCandidates(store)
    with pytest.raises(GoldSetUnavailable, match="not a valid gold row"):
        Labelling(repo, gold).accept(oldest, ["p-1"], "plain")
    assert repo.pending(oldest) and repo.decision(oldest) is None
    checkpoint(store, stage)  # sweeps the other evicted one, not the held one
    assert stored_ids(store) == set(stage.suggestions) | {oldest}


def test_a_restore_on_the_same_stage_sweeps_at_the_next_checkpoint() -> None:
    """The engine reloads its stages from the last checkpoint after a batch failed partway
    (the same stage objects): the next checkpoint sweeps, as after a start, although no
    suggestion was evicted since, so the store holds what the stage holds."""
    store = swept_store(StateStore.in_memory())
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(events(0, 5))
    checkpoint(store, stage)  # the first: sweeps, and remembers it did
    stage.process(events(5, 3))  # published, then the batch fails before its checkpoint
    stage.restore(store.get(KEY))  # the engine's reload
    checkpoint(store, stage)
    assert stored_ids(store) == set(stage.suggestions)


def test_a_sweep_judges_every_key_before_deleting_any_and_counts_characters() -> None:
    """The sweep's deletions, worked out by hand, where its protecting prefix lies inside
    the swept range and names are not ASCII: prefix ``ü/`` (2 characters, 3 bytes),
    protect ``ü/d/``, kept ``["b", "é"]``. ``ü/a`` stays (``ü/d/a`` exists when the sweep
    looks, though ``ü/d/a`` itself goes: its name ``d/a`` is not kept and ``ü/d/d/a`` does
    not exist), ``ü/b`` and ``ü/é`` stay (kept), ``ü/d/z`` and ``ü/ée`` go."""
    store = StateStore.in_memory()
    store.add_sweep(Sweep("stage/x", "ü/", lambda value: value["ids"], "ü/d/"))
    store.checkpoint({"ü/a": 1, "ü/b": 2, "ü/d/a": 3, "ü/d/z": 4, "ü/é": 5, "ü/ée": 6,
                      "ü": 7, "ý/a": 8})  # fmt: skip
    store.checkpoint({"stage/x": {"ids": ["b", "é"]}})
    assert store.keys() == ["stage/x", "ü", "ü/a", "ü/b", "ü/é", "ý/a"]
    assert store.swept == 3
