"""The bounded recent-id window and the dedup stage, including across a restart."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.pipeline import Batch, Pipeline
from service.pipeline.dedup import DedupStage, RecentIds, pack, unpack
from service.state import StateStore

AT = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def events(*ids: str) -> list[SimpleNamespace]:
    return [SimpleNamespace(event_id=i, timestamp=AT) for i in ids]


def test_capacity_evicts_oldest() -> None:
    recent = RecentIds(3)
    for event_id in ["a", "b", "c", "d"]:
        assert recent.add(event_id)
    assert recent.snapshot() == ["b", "c", "d"]
    assert "a" not in recent
    assert recent.add("a")  # forgotten, so new again


def test_repeat_refreshes() -> None:
    recent = RecentIds(2, ["a", "b"])
    assert not recent.add("a")
    recent.add("c")
    assert recent.snapshot() == ["a", "c"]


def test_bad_capacity() -> None:
    with pytest.raises(ValueError, match="capacity"):
        RecentIds(0)


@given(st.lists(st.sampled_from("abcdefghij"), max_size=60), st.integers(1, 12))
def test_window_never_exceeds_capacity_and_keeps_newest(ids: list[str], capacity: int) -> None:
    recent = RecentIds(capacity)
    for event_id in ids:
        recent.add(event_id)
    newest_first = list(dict.fromkeys(reversed(ids)))
    assert recent.snapshot() == list(reversed(newest_first[:capacity]))


def test_stage_drops_in_batch_and_cross_batch_duplicates() -> None:
    stage = DedupStage(window=10)
    first = Batch.of(events("a", "b", "a"), source="file")
    stage.process(first)
    assert [e.event_id for e in first.events] == ["a", "b"]
    second = Batch.of(events("b", "c"), source="file")
    stage.process(second)
    assert [e.event_id for e in second.events] == ["c"]
    assert first.dropped["duplicate"] == 1 and second.dropped["duplicate"] == 1


def test_redelivery_after_restart_is_not_counted_twice(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    pipeline = Pipeline([DedupStage(window=100)])
    pipeline.process(events("e-1", "e-2", "e-3"), source="kafka")
    with StateStore.open(path) as store:
        store.checkpoint(pipeline.snapshot())
    # crash before the source committed; a new process replays the same batch
    restarted = Pipeline([DedupStage(window=100)])
    with StateStore.open(path) as store:
        restarted.restore(store.get_many(restarted.state_keys()))
    batch = restarted.process(events("e-1", "e-2", "e-3", "e-4"), source="kafka")
    assert [e.event_id for e in batch.events] == ["e-4"]
    assert batch.dropped["duplicate"] == 3


def test_restore_into_smaller_window_keeps_newest() -> None:
    stage = DedupStage(window=2)
    stage.restore(["a", "b", "c"])  # the list format written before the joined one
    assert stage.state_snapshot() == {"ids": "b\nc"}
    stage.restore({"ids": "x\ny\nz"})
    assert list(stage.recent) == ["y", "z"]


def test_snapshot_is_the_ids_joined_by_newlines_and_survives_json(tmp_path: Path) -> None:
    stage = DedupStage(window=3)
    stage.process(Batch.of(events("e-1", "e-2", "e-3", "e-4"), source="kafka"))
    assert stage.state_snapshot() == {"ids": "e-2\ne-3\ne-4"}
    with StateStore.open(tmp_path / "state.db") as store:
        store.checkpoint({"stage/dedup": stage.state_snapshot()})
        saved = store.get("stage/dedup")
    restarted = DedupStage(window=3)
    restarted.restore(saved)
    assert list(restarted.recent) == ["e-2", "e-3", "e-4"]


def test_an_id_with_a_newline_keeps_the_list_format() -> None:
    stage = DedupStage(window=5)
    stage.process(Batch.of(events("a", "line\nbreak", "c"), source="http"))
    assert stage.state_snapshot() == ["a", "line\nbreak", "c"]
    restarted = DedupStage(window=5)
    restarted.restore(stage.state_snapshot())
    assert list(restarted.recent) == ["a", "line\nbreak", "c"]


def test_empty_window_round_trips() -> None:
    assert pack([]) == {"ids": ""} and unpack({"ids": ""}) == []
    stage = DedupStage(window=2)
    stage.restore(None)
    assert stage.state_snapshot() == {"ids": ""}


def test_unpack_rejects_other_shapes() -> None:
    with pytest.raises(ValueError, match="dedup state"):
        unpack({"ids": ["a"]})
    with pytest.raises(ValueError, match="dedup state"):
        unpack("a\nb")


@given(st.lists(st.text(max_size=8), max_size=20))
def test_pack_unpack_round_trip(ids: list[str]) -> None:
    assert unpack(pack(ids)) == ids


@given(
    capacity=st.integers(1, 6),
    ids=st.lists(st.sampled_from("abcdefghij"), max_size=60),
    split=st.integers(0, 60),
)
def test_window_matches_a_plain_list_model(capacity: int, ids: list[str], split: int) -> None:
    model: list[str] = []  # oldest first
    expected = []
    for event_id in ids:
        expected.append(event_id not in model)
        if event_id in model:
            model.remove(event_id)
        model.append(event_id)
        del model[:-capacity]
    recent = RecentIds(capacity)
    got = recent.add_all(ids[:split]) + [recent.add(i) for i in ids[split:]]
    assert got == expected
    assert recent.snapshot() == model and len(recent) == len(model)
    assert RecentIds(capacity, ids).snapshot() == model


def test_ids_are_pseudonymised_only_with_the_pii_stage_on() -> None:
    """The service builds its dedup stage with ``pseudonymise_ids`` = PII stage on: off, an
    id is kept as sent, like every other field when nothing is scrubbed."""
    import hashlib
    from datetime import UTC, datetime

    from service.events import QueryLogEvent
    from service.pipeline import Batch

    raw = "ivan.1@example.com"
    expected = "pii-" + hashlib.sha256(raw.encode()).hexdigest()[:32]
    for on, want in ((True, expected), (False, raw)):
        stage = DedupStage(10, pseudonymise_ids=on)
        batch = Batch.of([QueryLogEvent(event_id=raw, timestamp=datetime(2026, 11, 29,
                                                                            tzinfo=UTC),
                                        question="q")], "file")  # fmt: skip
        stage.process(batch)
        assert [e.event_id for e in batch.events] == [want]
