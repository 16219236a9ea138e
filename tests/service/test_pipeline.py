"""The pipeline: stage order, annotations, drops, state hooks, and its config."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from types import SimpleNamespace
from typing import Any

import pytest
from pydantic import ValidationError

from service.pipeline import (
    Batch,
    CountingStage,
    Pipeline,
    PipelineConfig,
    Stage,
    StageError,
    StatelessStage,
)
from service.runtime.live import default_pipeline

AT = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def events(*ids: str) -> list[SimpleNamespace]:
    return [
        SimpleNamespace(event_id=i, timestamp=AT + timedelta(seconds=n), question=f"q {i}")
        for n, i in enumerate(ids)
    ]


class Tagger(StatelessStage):
    name = "tagger"

    def process(self, batch: Batch) -> None:
        for event, note in zip(batch.events, batch.annotations, strict=True):
            note["length"] = len(event.question)


class Reader(StatelessStage):
    name = "reader"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def process(self, batch: Batch) -> None:
        self.seen.extend(batch.annotations)


class Boom(StatelessStage):
    name = "boom"

    def process(self, batch: Batch) -> None:
        raise RuntimeError("bad stage")


def test_stages_run_in_order_and_share_annotations() -> None:
    reader = Reader()
    pipeline = Pipeline([Tagger(), reader])
    batch = pipeline.process(events("a", "b"), source="file")
    assert len(batch) == 2
    assert reader.seen == [{"length": 3}, {"length": 3}]
    assert isinstance(reader, Stage)


def test_default_pipeline_dedups_then_counts() -> None:
    pipeline = default_pipeline(PipelineConfig(dedup_window=5))
    pipeline.process(events("a", "b", "a"), source="file")
    counter = pipeline.stages[-1]
    assert isinstance(counter, CountingStage)
    assert counter.processed == 2
    assert counter.last_event_timestamp == (AT + timedelta(seconds=1)).timestamp()


def test_keep_filters_annotations_in_lockstep() -> None:
    batch = Batch.of(events("a", "b", "c"), source="file")
    batch.annotations[2]["x"] = 1
    assert batch.keep([False, True, True], reason="filtered") == 1
    assert [e.event_id for e in batch.events] == ["b", "c"]
    assert batch.annotations == [{}, {"x": 1}]
    assert batch.dropped == {"filtered": 1}
    with pytest.raises(ValueError, match="mask"):
        batch.keep([True], reason="filtered")


def test_snapshot_and_restore_round_trip() -> None:
    pipeline = default_pipeline(PipelineConfig())
    pipeline.process(events("a", "b"), source="file")
    snapshot = pipeline.snapshot()
    assert set(snapshot) == {"stage/dedup", "stage/count"}
    fresh = default_pipeline(PipelineConfig())
    assert fresh.state_keys() == ["stage/dedup", "stage/count"]
    fresh.restore(snapshot)
    assert fresh.snapshot() == snapshot


def test_stateless_stages_persist_nothing() -> None:
    assert Pipeline([Tagger()]).snapshot() == {}


def test_stage_error_names_the_stage() -> None:
    with pytest.raises(StageError, match="'boom'") as info:
        Pipeline([Tagger(), Boom()]).process(events("a"), source="file")
    assert info.value.stage == "boom"
    assert isinstance(info.value.__cause__, RuntimeError)


def test_duplicate_stage_names_rejected() -> None:
    with pytest.raises(ValueError, match="duplicate stage names: tagger"):
        Pipeline([Tagger(), Tagger()])


def test_config_is_frozen_and_validated() -> None:
    config = PipelineConfig(max_batch_size=10)
    with pytest.raises(ValidationError):
        config.max_batch_size = 20  # type: ignore[misc]
    with pytest.raises(ValidationError):
        PipelineConfig(max_batch_size=0)
    with pytest.raises(ValidationError):
        PipelineConfig(unknown=1)  # type: ignore[call-arg]


def test_reads_records_unless_every_stage_says_it_does_not() -> None:
    assert default_pipeline(PipelineConfig()).reads_records is False  # dedup, count
    assert default_pipeline(PipelineConfig(), extra=[Tagger()]).reads_records is True
    assert Pipeline([]).reads_records is False
