"""Acceptance of the live file path and HTTP ingest: ``goldwatch serve`` as a subprocess.

The file is 20,000 lines of real-question events with 1 % poison pills of every kind a line
can hold (no tombstones in a file). Every line must end processed or in the state's dead-letter
file (``<state>.dlq.jsonl``, the default with a state since the fifty-first session) with its
reason, also across a kill -9 and a restart on the same state file.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.streams import file_stream, query_log_events, write_jsonl
from tests.acceptance.conftest import PIPELINE, b64, file_config
from tests.acceptance.service_process import ServiceProcess, accounted, metric_by, metric_sum

pytestmark = pytest.mark.slow

N = 20_000


def _expected(lines: list[tuple[bytes | None, str | None]]) -> tuple[int, dict[str, int]]:
    dead: dict[str, int] = {}
    for _, reason in lines:
        if reason is not None:
            dead[reason] = dead.get(reason, 0) + 1
    return sum(1 for _, r in lines if r is None), dead


def _dlq_rows(path: Path) -> list[dict[str, Any]]:
    """The dead letters of a service reading ``path`` with the state ``state.sqlite`` beside it
    and no ``source.dlq_path``: they go to the state's own file."""
    dlq = path.with_name("state.sqlite.dlq.jsonl")
    return [json.loads(line) for line in dlq.read_text().splitlines()]


def _nonzero(counts: dict[str, Any]) -> dict[str, int]:
    return {k: int(v) for k, v in counts.items() if v}


def test_file_every_line_processed_or_dead_lettered(start_service: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = write_jsonl(path, file_stream(N, poison_share=0.01, seed=21))
    good, dead = _expected(lines)
    service = start_service(tmp_path, file_config(path, state=tmp_path / "state.sqlite"))
    status = service.wait_until(lambda s: accounted(s["totals"]) >= len(lines), what="file read")
    totals = status["totals"]
    assert totals["consumed"] == len(lines) == N
    assert totals["processed"] == good
    assert _nonzero(totals["dead_lettered"]) == dead
    samples = service.samples()
    assert metric_sum(samples, "goldwatch_events_consumed_total", source="file") == N
    assert metric_sum(samples, "goldwatch_events_processed_total", source="file") == good
    by_reason = metric_by(samples, "goldwatch_events_dead_lettered_total", "reason", source="file")
    assert _nonzero(by_reason) == dead
    rows = _dlq_rows(path)
    assert {row["origin"]["line"]: row["reason"] for row in rows} == {
        i + 1: r for i, (_, r) in enumerate(lines) if r is not None
    }
    assert len(rows) == sum(dead.values())
    for row in rows:
        assert row["value_b64"] == b64(lines[row["origin"]["line"] - 1][0])
    assert service.readyz() in (200, 503)  # a finished, non-following file may say either


def test_file_kill_9_half_way_then_restart(start_service: Any, tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    lines = write_jsonl(path, file_stream(N, poison_share=0.01, seed=22))
    good, dead = _expected(lines)
    config = file_config(path, state=tmp_path / "state.sqlite", rate=4000)
    first = start_service(tmp_path, config)
    at_kill = first.wait_until(lambda s: s["totals"]["consumed"] >= N // 2, what="half-way")
    first.kill()
    assert at_kill["totals"]["consumed"] < N
    second = start_service(tmp_path, {**config, "source": {**config["source"], "rate": None}})
    status = second.wait_until(lambda s: accounted(s["totals"]) >= N, what="file read")
    totals = status["totals"]
    assert totals["processed"] == good, totals
    assert _nonzero(totals["dead_lettered"]) == dead, totals
    assert totals["consumed"] == N + totals["duplicates"], totals
    # Dead letters are at least once: every poison line is there with its reason.
    reasons: dict[int, set[str]] = {}
    for row in _dlq_rows(path):
        reasons.setdefault(row["origin"]["line"], set()).add(row["reason"])
    assert reasons == {i + 1: {r} for i, (_, r) in enumerate(lines) if r is not None}
    print(f"\nfile killed at consumed={at_kill['totals']['consumed']}; final totals {totals}")


def test_http_ingest(start_service: Any, tmp_path: Path) -> None:
    config = {
        "source": {"kind": "none"},
        "pipeline": PIPELINE,
        "state": {"path": str(tmp_path / "state.sqlite")},
    }
    service: ServiceProcess = start_service(tmp_path, config)
    events = query_log_events(5, seed=31)
    assert service.post_events(events[0], token=None).status_code == 401
    assert service.post_events(events[0], token="wrong").status_code in (401, 403)

    one = service.post_events(events[0])
    assert one.status_code == 200, one.text
    assert one.json()["accepted"] == 1 and one.json()["dead_lettered"] == []

    missing = {k: v for k, v in events[2].items() if k != "question"}
    batch = [
        events[1],
        events[0],
        missing,
        {**events[3], "timestamp": "yesterday"},
        [1, 2],
        events[4],
    ]
    response = service.post_events(batch)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["accepted"] == 2  # events[1] and events[4]
    assert body["duplicates"] == 1  # events[0] again
    assert [(d["index"], d["reason"]) for d in body["dead_lettered"]] == [
        (2, "missing_field"),
        (3, "wrong_type"),
        (4, "not_object"),
    ]
    for letter in body["dead_lettered"]:
        assert events[2]["question"] not in letter["detail"]  # never echoes content

    totals = service.totals()
    assert totals["processed"] == 3 and totals["duplicates"] == 1
    assert _nonzero(totals["dead_lettered"]) == {
        "missing_field": 1,
        "wrong_type": 1,
        "not_object": 1,
    }
    assert service.metric("goldwatch_events_processed_total", source="http") == 3

    # Persisted: a restart (kill -9 even) keeps the acknowledged totals.
    service.kill()
    again = start_service(tmp_path, config)
    assert again.totals()["processed"] == 3
    assert again.post_events(events[1]).json()["duplicates"] == 1  # dedup window survived
