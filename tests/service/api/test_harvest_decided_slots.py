"""The trial's finding in the running service (real HTTP): with ``harvest.max_suggestions``
10 and every held suggestion decided through the API, a new question asked twice in each of
4 requests is still held with all 8 asks (decided suggestions hold no place), a rejected
question asked again is not suggested again, and the held gauge counts undecided ones only.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.demo import demo_path
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

AUTH = {"authorization": f"Bearer {TOKEN}"}
HOT = ["hostel fee refund", "library sunday hours", "bus pass renewal", "exam timetable sem 3",
       "scholarship form deadline", "canteen menu today", "wifi password for labs",
       "transcript request process", "parking permit cost", "gym membership for staff"]  # fmt: skip
FILLERS = ["lost id card replacement", "thesis submission format", "placement drive companies",
           "medical leave application", "sports quota admission", "alumni meet registration",
           "how to appeal a grade", "convocation gown pickup"]  # fmt: skip
TARGET = "when do the chemistry labs close"

pytestmark = pytest.mark.slow  # a served app (its runtime fits the demo gold set)


def _event(event_id: str, question: str, hour: int, k: int) -> dict[str, Any]:
    return {"event_id": event_id, "timestamp": f"2026-12-01T{hour:02d}:{k // 60:02d}:{k % 60:02d}Z",
            "question": question, "answer": {"text": "I don't know", "refused": True},
            "feedback": {"rating": -1}}  # fmt: skip


def _post(server: Server, events: list[dict[str, Any]]) -> None:
    response = httpx.post(server.base + "/v1/events", json=events, headers=AUTH, timeout=60)
    assert response.status_code == 200, response.text


def _metric(text: str, name: str) -> float:
    return float(next(line for line in text.splitlines() if line.startswith(name)).split()[-1])


def test_decided_suggestions_hold_no_place_and_stay_decided(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    settings = load_settings(
        gold_set=gold, source={"kind": "file", "path": empty},
        state={"path": tmp_path / "state.sqlite"}, api={"port": _free_port(), "token": TOKEN},
        harvest={"flush_interval_s": 0, "max_suggestions": 10},
    )  # fmt: skip
    with Server(settings) as server:
        _post(server, [_event(f"hot-{k}", HOT[k % 10], 10, k) for k in range(40)])
        listed = httpx.get(server.base + "/v1/gold-candidates",
                           params={"status": "suggested", "limit": 50}).json()["items"]  # fmt: skip
        ids = {row["question"]: row["id"] for row in listed}
        assert set(ids) == set(HOT)
        for k, question in enumerate(HOT):
            url = f"{server.base}/v1/gold-candidates/{ids[question]}/"
            response = (httpx.post(url + "accept", json={"gold": ["p-1"], "kind": "plain"},
                                   headers=AUTH, timeout=60) if k % 2 else
                        httpx.post(url + "reject", json={"reason": "not for the gold set"},
                                   headers=AUTH, timeout=60))  # fmt: skip
            assert response.status_code == 200, response.text
        for b in range(4):
            events = [_event(f"t{b}-{k}", TARGET, 11 + b, k) for k in range(2)]
            events += [_event(f"f{b}-{k}", FILLERS[2 * b + k], 11 + b, 10 + k) for k in range(2)]
            events.append(_event(f"again-{b}", HOT[0], 11 + b, 20))  # rejected, asked again
            _post(server, events)
        harvest = server.runtime.live.harvest
        assert harvest is not None
        with server.runtime.engine.lock:
            held = {s.question: s.count for s in harvest.suggestions.values()}
        assert held == {TARGET: 8} | dict.fromkeys(FILLERS, 1)
        rows = httpx.get(server.base + "/v1/gold-candidates", params={"limit": 50}).json()["items"]
        status = {row["question"]: (row["status"], row["count"]) for row in rows}
        assert status[HOT[0]] == ("rejected", 4)  # the record it was decided on, unchanged
        assert status[TARGET][0] == "suggested"
        metrics = httpx.get(server.base + "/metrics").text
        assert _metric(metrics, "goldwatch_gold_candidates_held") == 9
        assert _metric(metrics, 'goldwatch_gold_candidates_known_total{via="decided"}') == 4
        assert _metric(metrics, "goldwatch_gold_candidates_evicted_total") == 0
