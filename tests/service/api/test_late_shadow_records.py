"""Shadow verdicts that finish after the last HTTP ingest reach the listed suggestions (trial
47 L1: the same 4,000 traces sent fast and slowly to two fresh services listed the same 958
suggestions, but the ``shadow_disagreement`` count of 13 of them differed by one, 2,719 vs
2,722 events in all, so the priority order differed).

The harvest stage writes a changed suggestion's record only after the snapshot that carries
it; with events only over HTTP a checkpoint followed each ingest and nothing else, so the
results folded in after it changed the suggestions in memory and ``GET
/v1/gold-candidates`` kept listing their records from before them — which ones depended on
when the calls finished. Here the candidate's calls are held until the ingest has returned,
so every verdict comes after its checkpoint, on every machine."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.demo import demo_path
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

#: The candidate's calls wait for this (bounded: a failing test must not hang).
GATE = threading.Event()
GATE_WAIT_S = 60.0
PRODUCTION = ["p-0001", "p-0002", "p-0003"]
QUESTION = "Can I keep a bicycle in the hostel corridor overnight?"


def gated(question: str, k: int) -> list[tuple[str, float]]:
    """Passages production did not return at all: RBO 0 with production (< max_rbo 0.5),
    so each verdict is a disagreement."""
    GATE.wait(GATE_WAIT_S)
    return [("p-0007", 3.0), ("p-0008", 2.0), ("p-0009", 1.0)][:k]


def _event(i: int) -> dict[str, Any]:
    return {
        "event_id": f"late-{i}", "timestamp": f"2026-11-29T10:0{i}:00Z", "question": QUESTION,
        "retrieval": {"results": [{"id": pid, "rank": r} for r, pid in enumerate(PRODUCTION, 1)]},
        "answer": {"text": "I don't know."},  # a refusal: the reason refused, from the event
    }  # fmt: skip


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[Server]:
    GATE.clear()
    settings = load_settings(
        gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"),
        state={"path": tmp_path / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        source={"kind": "none"},
        harvest={"flush_interval_s": 0.0},
        retrievers=[{"name": "gated", "kind": "entrypoint", "entrypoint": f"{__name__}:gated"}],
        shadow={"production": "bm25", "candidates": [{"name": "gated", "k": 3}]},
    )  # fmt: skip
    try:
        with Server(settings) as running:
            yield running
    finally:
        GATE.set()


def _listed(server: Server) -> dict[str, Any]:
    body = httpx.get(server.base + "/v1/gold-candidates", params={"limit": 50}).json()
    [row] = [row for row in body["items"] if row["question"] == QUESTION]
    return row  # type: ignore[no-any-return]


def test_verdicts_after_the_last_ingest_reach_the_listed_record(server: Server) -> None:
    assert server.post([_event(0), _event(1)]).json()["accepted"] == 2
    # checkpointed with the ingest: two refused events (their own reasons), no verdict yet
    # (the calls are held)
    before = _listed(server)["reason_counts"]
    assert before["refused"] == 2 and "shadow_disagreement" not in before
    GATE.set()
    deadline = time.monotonic() + 30.0
    while time.monotonic() < deadline:  # both calls done and folded in (this read folds)
        shadow = httpx.get(server.base + "/v1/shadow").json()["candidates"]["gated"]
        if shadow["completed"] == 2:
            break
        time.sleep(0.1)
    assert shadow["completed"] == 2
    # each event's verdict disagrees: one shadow_disagreement per event, on the same
    # suggestion (the events' own reasons and verdicts, counted once each per event)
    want = {**before, "shadow_disagreement": 2}
    deadline = time.monotonic() + 30.0  # a few idle turns (1 s each); before: never
    while time.monotonic() < deadline and _listed(server)["reason_counts"] != want:
        time.sleep(0.2)
    row = _listed(server)
    assert row["reason_counts"] == want and row["count"] == 2
