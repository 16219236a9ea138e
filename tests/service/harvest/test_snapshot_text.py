"""The harvest snapshot is written as the text it carries (issue 22, checkpoint cost).

``HarvestStage.state_snapshot`` returns an :class:`~service.state.EncodedObject`: the
suggestions it carries in full are encoded as ``json.dumps`` writes them
(:func:`~service.harvest.store.records_json`) and not decoded again to be checked, and the
state store writes that text. What a restart reads back must still be the snapshot itself:
the suggestion changed since the last checkpoint with its new count, the one no longer held
gone, and a failed checkpoint's text never.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates, records_json
from service.harvest.text import candidate_id, comparison_form
from service.state import EncodedObject, StateStore, Sweep
from tests.service.harvest.helpers import batch, event

CONFIG = HarvestConfig(flush_interval_s=3600.0)  # the checkpoints publish, no flush
REFUSED = {"refused": True, "topic": "fees", "language": "en"}
FEES, BUS = "hostel fee refund", "bus timings kamptee"


def _sid(question: str) -> str:
    return candidate_id(comparison_form(question))


def _checkpoint(store: StateStore, stage: HarvestStage) -> dict[str, Any]:
    """The engine's order: snapshot, one committed checkpoint, then ``checkpointed``."""
    snapshot = stage.state_snapshot()
    store.checkpoint({"stage/harvest": snapshot})
    stage.checkpointed()
    return dict(snapshot)


def _restored(store: StateStore) -> dict[str, int]:
    """``{question: count}`` of a stage restarted from ``store``'s last checkpoint."""
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.restore(store.get("stage/harvest"))
    return {row["question"]: row["count"] for row in stage.records()}


def test_a_changed_suggestion_is_carried_with_its_new_state_and_read_back() -> None:
    store = StateStore.in_memory()
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(batch([event("e1", FEES), event("e2", BUS)], [REFUSED] * 2))
    first = _checkpoint(store, stage)
    # both new: their records were written for this snapshot, which carries none in full
    assert first["suggestions"] == [] and first["ids"] == [_sid(FEES), _sid(BUS)]
    stage.process(batch([event("e3", "Hostel fee refund?", minute=3)], [REFUSED]))
    second = _checkpoint(store, stage)
    # the fees suggestion changed after the first snapshot relied on its record: carried in
    # full, count 2 (e1, e3), its record left as it was (count 1)
    stored = store.get("stage/harvest")
    assert [(row["id"], row["count"]) for row in stored["suggestions"]] == [(_sid(FEES), 2)]
    assert stored["suggestions"][0]["events"] == ["e1", "e3"]
    assert store.get(f"harvest/candidate/{_sid(FEES)}")["count"] == 1
    assert stored == json.loads(json.dumps(second))  # the text is the snapshot's own
    assert _restored(store) == {FEES: 2, BUS: 1}


def test_a_suggestion_no_longer_held_is_not_restored() -> None:
    store = StateStore.in_memory()
    repo = StateStoreCandidates(store)
    stage = HarvestStage(CONFIG, sinks=[repo])
    stage.process(batch([event("e1", FEES), event("e2", BUS)], [REFUSED] * 2))
    _checkpoint(store, stage)
    stage.process(batch([event("e3", "Hostel fee refund?", minute=3)], [REFUSED]))
    stage.decided(_sid(FEES), FEES)  # a reviewer decided it: the stage lets it go
    repo.decide(_sid(FEES), {"status": "rejected", "reason": "dup",
                             "decided_at": "2026-11-29T10:05:00Z"}, None)  # fmt: skip
    _checkpoint(store, stage)
    stored = store.get("stage/harvest")
    assert stored["ids"] == [_sid(BUS)] and stored["suggestions"] == []
    assert _restored(store) == {BUS: 1}


def test_a_failed_checkpoint_leaves_the_last_committed_text() -> None:
    store = StateStore.in_memory()
    stage = HarvestStage(CONFIG, sinks=[StateStoreCandidates(store)])
    stage.process(batch([event("e1", FEES)], [REFUSED]))
    _checkpoint(store, stage)
    committed = store.get("stage/harvest")
    stage.process(batch([event("e3", "Hostel fee refund?", minute=3)], [REFUSED]))

    def refuse(_: Any) -> list[str]:
        raise RuntimeError("disk gone")

    store.add_sweep(Sweep("stage/harvest", "other/", refuse, "none/"))
    with pytest.raises(RuntimeError):
        store.checkpoint({"stage/harvest": stage.state_snapshot()})  # never confirmed
    assert store.get("stage/harvest") == committed
    assert _restored(store) == {FEES: 1}  # the source replays e3 from the committed offsets


@pytest.mark.parametrize("gap", [0.25, 1e-05, 2e16, math.inf, 0.0])
def test_records_json_is_json_dumps_of_the_list(gap: float) -> None:
    rows = [
        {"id": "c-1", "question": "é\n\"x\"", "gap": gap, "pool": {"p": {"production": 1}},
         "events": ["e1"], "trace_id": None},
        {"id": "c-2", "question": "b", "gap": 0.5, "pool": {}, "events": [], "trace_id": "t"},
    ]  # fmt: skip
    assert records_json(rows) == json.dumps(rows, separators=(",", ":"), ensure_ascii=False)


def test_records_json_writes_by_hand() -> None:
    # msgspec alone would write 1e-05 as 0.00001 and NaN as null
    rows = [{"id": "c-1", "gap": 1e-05}, {"id": "c-2", "gap": math.nan}, {"id": "c-3", "gap": 0.5}]
    assert (
        records_json(rows)
        == '[{"id":"c-1","gap":1e-05},{"id":"c-2","gap":NaN},{"id":"c-3","gap":0.5}]'
    )
    assert records_json([]) == "[]"
    # a lone surrogate: msgspec refuses it, json writes it as before
    assert records_json([{"q": "a\ud800"}]) == '[{"q":"a\ud800"}]'


def test_the_snapshot_is_an_encoded_object_whose_text_reads_back_as_itself() -> None:
    stage = HarvestStage(CONFIG)  # no repository: every suggestion carried in full
    stage.process(batch([event("e1", FEES), event("e2", BUS)], [REFUSED] * 2))
    snapshot = stage.state_snapshot()
    assert type(snapshot) is EncodedObject and snapshot.text is not None
    assert json.loads(snapshot.text) == json.loads(json.dumps(snapshot))
    assert [(row["id"], row["count"]) for row in json.loads(snapshot.text)["suggestions"]] == [
        (_sid(FEES), 1), (_sid(BUS), 1)]  # fmt: skip
