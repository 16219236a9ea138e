"""Provenance of a harvested gold question: the OpenTelemetry trace id of the event it came
from goes through the suggestion, the export and the accepted gold row, which the gold-set
loader still reads."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from consumers.base import Origin, RawMessage
from consumers.decoding import decode
from service.data.goldset import load_gold_set
from service.events import FieldMapping, QueryLogEvent
from service.harvest.config import HarvestConfig
from service.harvest.export import export_rows
from service.harvest.labelling import Labelling
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates
from service.harvest.suggestion import Suggestion
from service.pii import PiiScrubStage
from tests.service.harvest.helpers import batch, event

TRACE_A = "0af7651916cd43dd8448eb211c80319c"
TRACE_B = "4bf92f3577b34da6a3ce929d0e0e4736"


def _traced(base: QueryLogEvent, trace_id: str | None) -> QueryLogEvent:
    return dataclasses.replace(base, trace_id=trace_id)


def _harvest(events: list[QueryLogEvent]) -> MemoryCandidates:
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo])
    stage.process(batch(events, [{"refused": True} for _ in events]))
    return repo


def test_trace_id_reaches_the_accepted_gold_row(tmp_path: Path) -> None:
    # the representative came from no trace, its paraphrase from trace B, a third from A:
    # the suggestion keeps the first trace seen (B), not the representative's missing one
    events = [
        _traced(event("e1", "hostel fee refund kab milega", minute=1), None),
        _traced(event("e2", "Hostel fee refund kab milega??", minute=2), TRACE_B),
        _traced(event("e3", "hostel fee refund kab milega", minute=3), TRACE_A),
    ]
    repo = _harvest(events)
    (record,) = repo.all()
    assert record["trace_id"] == TRACE_B
    assert Suggestion.from_json(json.loads(json.dumps(record))).trace_id == TRACE_B
    (exported,) = export_rows(repo, HarvestConfig())
    assert exported["trace_id"] == TRACE_B

    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "Fees?", "gold": ["p-1"]}\n', encoding="utf-8")
    Labelling(repo, gold, HarvestConfig()).accept(record["id"], ["p-1"], "plain")
    row = json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])
    assert row["trace_id"] == TRACE_B and row["harvest_id"] == record["id"]
    loaded = load_gold_set(gold)  # what `goldwatch eval` reads: the extra field is ignored
    assert [q.id for q in loaded.questions] == ["q-001", "q-002"]


def test_no_trace_no_field(tmp_path: Path) -> None:
    repo = _harvest([event("e1", "exam schedule for sem 3")])
    (record,) = repo.all()
    assert record["trace_id"] is None
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "Fees?", "gold": ["p-1"]}\n', encoding="utf-8")
    Labelling(repo, gold, HarvestConfig()).accept(record["id"], ["p-1"], "plain")
    assert "trace_id" not in json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])


def test_scrubbing_keeps_the_trace_id_and_scrubs_the_question() -> None:
    # a trace id of digits only (valid hex) must not be read as a phone or card number
    digits = "41111111111111111111111111111111"
    raw = {"event_id": "e-9", "timestamp": "2026-11-29T10:00:00Z", "trace_id": digits,
           "question": "mail me at asha@example.com about the fee"}  # fmt: skip
    decoded = decode(
        RawMessage(json.dumps(raw).encode(), Origin(file="x", line=1)), FieldMapping(), 10_000
    )
    live = batch([decoded])
    PiiScrubStage().process(live)
    (clean,) = live.events
    assert clean.trace_id == digits
    assert clean.question == "mail me at <EMAIL> about the fee"


def test_malformed_trace_ids_are_dropped_not_kept() -> None:
    # W3C trace-id: 32 lowercase hex, not all zeros; anything else is dropped as an
    # optional field (the event is kept)
    for bad in ("0" * 32, TRACE_A.upper(), TRACE_A[:-1], 7, TRACE_A + "\n"):
        raw = {"event_id": "e", "timestamp": 1, "question": "q", "trace_id": bad}
        message = RawMessage(json.dumps(raw).encode(), Origin(file="x", line=1))
        assert decode(message, FieldMapping(), 10_000).trace_id is None, bad
