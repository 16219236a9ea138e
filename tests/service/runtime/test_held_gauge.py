"""Trial user6: ``goldwatch_gold_candidates_held`` was 0 right after a restart while 9
suggestions were held, and stayed 9 after two accepts when 7 were held, until the next
batch. The gauge is now set at restore and at each decision."""

from __future__ import annotations

from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

from service.demo import demo_path
from service.runtime.process import Runtime
from service.settings import load_settings
from tests.service.harvest.helpers import batch, event

REFUSED = {"refused": True, "topic": "fees", "language": "en"}
#: Nine questions no two of which are near-duplicates (trigram Jaccard < 0.6).
QUESTIONS = ["hostel fee refund", "library sunday hours", "bus pass renewal",
             "exam timetable sem 3", "scholarship form deadline", "canteen menu today",
             "wifi password for labs", "transcript request process",
             "parking permit cost"]  # fmt: skip


def _runtime(tmp_path: Path) -> Runtime:
    events = tmp_path / "events.jsonl"
    events.touch()
    settings = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"),
                             source={"kind": "file", "path": events},
                             state={"path": tmp_path / "state.sqlite"})  # fmt: skip
    return Runtime(settings, registry=CollectorRegistry())


def _held(runtime: Runtime) -> float | None:
    return runtime.registry.get_sample_value("goldwatch_gold_candidates_held")


@pytest.mark.slow  # two service starts (~9 s)
def test_the_held_gauge_is_set_at_restore_and_at_each_decision(tmp_path: Path) -> None:
    """Nine suggestions held and checkpointed; a restart shows 9 before any batch; two
    decisions show 7 at once (their suggestions still in the stage, queued)."""
    first = _runtime(tmp_path)
    try:
        harvest = first.live.harvest
        assert harvest is not None
        events = [event(f"h{i}-{k}", q, minute=k) for i, q in enumerate(QUESTIONS)
                  for k in range(3)]  # fmt: skip
        with first.engine.lock:
            harvest.process(batch(events, [REFUSED] * len(events)))
        assert len(harvest.suggestions) == 9
        first.engine.checkpoint()
    finally:
        first.stop()
    second = _runtime(tmp_path)
    try:
        harvest = second.live.harvest
        assert harvest is not None and len(harvest.suggestions) == 9
        assert _held(second) == 9.0  # before any batch (it was 0)
        ids = sorted(harvest.suggestions)
        second.live.decided(ids[0])
        second.live.decided(ids[1])
        assert _held(second) == 7.0  # before the next batch applies them (it stayed 9)
        second.live.decided(ids[1])  # a repeated call (a retried hook) counts once
        assert _held(second) == 7.0
        assert len(harvest.suggestions) == 9  # still queued: the count is not the dict's
    finally:
        second.stop()
