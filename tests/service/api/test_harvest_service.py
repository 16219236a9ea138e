"""Harvesting inside the running service (real HTTP): the demo query log is consumed,
suggestions are listed with filters, one is accepted into a copy of the gold set — appended
with a fresh id, the known-question index and gold shares refreshed — and one rejected."""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.demo import demo_path
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

AUTH = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("harvest")
    gold = tmp / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    settings = load_settings(
        gold_set=gold,
        source={"kind": "file", "path": demo_path("querylog.jsonl")},
        state={"path": tmp / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        harvest={"flush_interval_s": 0},
    )
    with Server(settings) as running:
        deadline = time.monotonic() + 120
        while not httpx.get(running.base + "/v1/status").json()["input_finished"]:
            assert time.monotonic() < deadline, "the demo log was not consumed in time"
            time.sleep(0.2)
        yield running


def _list(server: Server, **params: Any) -> dict[str, Any]:
    response = httpx.get(server.base + "/v1/gold-candidates", params=params)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def test_suggestions_are_listed_with_reasons_and_filters(server: Server) -> None:
    page = _list(server, limit=5)
    assert page["total"] > 50 and len(page["items"]) == 5
    first = page["items"][0]
    assert first["status"] == "suggested" and first["reasons"] and first["pool"]
    refused = _list(server, reason="refused", limit=200)
    assert refused["items"] and all("refused" in row["reasons"] for row in refused["items"])
    hinglish = _list(server, language="hi-Latn", limit=200)
    assert hinglish["items"] and all(r["language"] == "hi-Latn" for r in hinglish["items"])
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_gold_candidates_total{reason="refused"}' in metrics


def test_accept_appends_to_the_gold_set_and_refreshes(server: Server) -> None:
    runtime = server.runtime
    gold_path = Path(runtime.settings.gold_set)  # type: ignore[arg-type]
    before = gold_path.read_text(encoding="utf-8").splitlines()
    item = _list(server, reason="refused", status="suggested", limit=1)["items"][0]
    passage = item["pool"][0]["id"]
    url = f"{server.base}/v1/gold-candidates/{item['id']}/accept"
    assert httpx.post(url, json={"gold": [passage], "kind": "plain"}).status_code == 401
    response = httpx.post(url, json={"gold": [passage], "kind": "plain"}, headers=AUTH)
    assert response.status_code == 200, response.text
    after = gold_path.read_text(encoding="utf-8").splitlines()
    assert after[: len(before)] == before and len(after) == len(before) + 1  # appended only
    row = json.loads(after[-1])
    assert row["gold"] == [passage] and row["source"] == "real"
    assert row["id"] not in {json.loads(line)["id"] for line in before}
    again = httpx.post(url, json={"gold": [], "kind": "unanswerable"}, headers=AUTH)
    assert again.status_code == 409
    deadline = time.monotonic() + 30
    while runtime.gold_refreshes < 1:
        assert time.monotonic() < deadline, "the gold set was not refreshed"
        time.sleep(0.1)
    index = runtime.live.quality.index  # type: ignore[union-attr]
    assert index is not None and len(index.gold) == len(after)
    assert index.match_many([row["question"]])[0].gold_id == row["id"]


def test_reject_keeps_the_decision_scrubbed(server: Server) -> None:
    item = _list(server, status="suggested", limit=1)["items"][0]
    url = f"{server.base}/v1/gold-candidates/{item['id']}/reject"
    planted = "call me on 9876543210 <script>"
    response = httpx.post(url, json={"reason": planted}, headers=AUTH)
    assert response.status_code == 200 and response.json()["status"] == "rejected"
    assert "9876543210" not in response.text  # the kept reason is scrubbed
    listed = _list(server, status="rejected", limit=50)
    assert item["id"] in {row["id"] for row in listed["items"]}
    bad = httpx.post(f"{server.base}/v1/gold-candidates/c-0000000000000000/reject",
                     json={"reason": planted}, headers=AUTH)  # fmt: skip
    assert bad.status_code == 404 and "9876543210" not in bad.text
