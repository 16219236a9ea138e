"""A state written by many incremental checkpoints restores what one written whole does
(issue 22 item 2).

A checkpoint writes only what changed since the last one where a stage keeps such marks:
harvest publishes the records of the suggestions changed since (its ``_stale`` set; the
snapshot names the others by id and a restore reads their records back), and the drift
terms detector writes each term tally's text kept since its last change. A change that
missed its mark would leave an older record or text in the state file: the restore of a
replay checkpointed every 40 events would then differ from that of a replay checkpointed
once, at its end, and from the replay itself.

Each replay below is restored by a second run over the same log on its state file, which
reads no new event: its report is built from the restored state alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from service.demo import demo_path
from service.harvest.store import StateStoreCandidates
from service.jobs.replay import run_replay
from service.settings import Settings, load_settings
from service.state import StateStore

EVENTS = 1_200
BATCH = 40  # the demo log's events are minutes apart: a term tally changes over a few batches


def _settings(commit_every: int) -> Settings:
    """The demo's gold set and corpus; batches of :data:`BATCH` events (a replay
    checkpoints after the batch that reaches ``commit_every``)."""
    settings = load_settings(None, gold_set=demo_path("gold.jsonl"),
                             corpus=demo_path("corpus.jsonl"))  # fmt: skip
    pipeline = settings.pipeline.model_copy(
        update={"commit_every": commit_every, "max_batch_size": BATCH}
    )
    return settings.model_copy(update={"pipeline": pipeline})


def _comparable(report: Any) -> dict[str, Any]:
    """The report without what names this run's files or counts this run's input (the
    second run reads none), nor its timings."""
    out = dict(report)
    for key in ("file", "dlq_path", "resumed", "processed", "batches", "consumed"):
        out.pop(key, None)
    return out


def _restored(
    tmp_path: Path, log: Path, commit_every: int
) -> tuple[dict[str, Any], list[Any], dict[str, Any]]:
    """Replay ``log`` on a fresh state file checkpointing every ``commit_every`` events,
    then again on that state (no new event); return the second report, the harvest
    records the state file holds and its stages' snapshots but harvest's (which names the
    records it relies on: those of the suggestions unchanged since the last checkpoint)."""
    state, dlq = tmp_path / f"state-{commit_every}.sqlite", tmp_path / f"dlq-{commit_every}"
    first = run_replay(_settings(commit_every), log, state, dlq)
    assert first["processed"] == EVENTS
    again = run_replay(_settings(commit_every), log, state, dlq)
    assert again["processed"] == 0 and again["resumed"]["processed_in_all"] == EVENTS
    with StateStore.open(state) as store:
        records = sorted(StateStoreCandidates(store).all(), key=lambda r: r["id"])
        keys = [key for key in store.keys("stage/") if key != "stage/harvest"]
        # as text: NaN != NaN (a drift report's divergence)
        snapshots = {key: json.dumps(store.get(key)) for key in keys}
    return _comparable(again), records, snapshots


def test_incremental_checkpoints_restore_what_one_whole_checkpoint_does(tmp_path: Path) -> None:
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(lines[:EVENTS]), encoding="utf-8")
    straight = _comparable(run_replay(_settings(10_000), log, None, tmp_path / "dlq-straight"))
    whole, whole_records, whole_stages = _restored(tmp_path, log, 10_000)  # one, at the end
    # a checkpoint after every batch: 30
    incremental, incremental_records, incremental_stages = _restored(tmp_path, log, BATCH)
    assert whole_records and incremental_records == whole_records
    assert "stage/drift" in whole_stages and incremental_stages == whole_stages
    assert incremental == whole
    # and both are what the replay itself reported, but for the suggestions per coverage
    # gap: a restore resets harvest's uncalibrated-novel flag (HarvestStage.restore), which
    # the next batch sets again, and a run that reads none reports the novel gap meanwhile
    for report in (incremental, straight):
        report["gold_candidates"] = {key: value for key, value in report["gold_candidates"].items()
                                     if key not in ("in_gaps", "n_gaps")}  # fmt: skip
    assert incremental == straight
