"""The end of a file source settles the shadow calls before ``input_finished``: what the API
lists then is what a clean stop keeps and a restart lists (trial 41 L5), and the reports are
not held "busy" while the calls run (trial 41 L4).

Trial 41: the end of input waited for the shadow calls under the pipeline lock with the CPU
budget in force (a few calls a second), gave up after 30 s with calls still queued, and the
reports answered 503 "busy" meanwhile. The calls left were folded in only at the stop:
``1000 suggested`` at the end of input, ``1015`` after a clean restart with nothing new.

Here each of the ``N`` events asks a distinct question (``bus route {i}``: different numbers,
never one suggestion, harvest's rule) and the candidate ``burner`` returns passages
production did not (p7, p8, p9 against p1, p2, p3): rank-biased overlap 0, below
``harvest.max_rbo``, so every event is a ``shadow_disagreement`` (by hand). Each call burns
about 20 ms of CPU against a budget of 0.001 core-seconds per second: under the budget the
runner starts a call or two a second, so the ``N`` = 150 calls outlast the old 30 s wait
(before the fix this test saw 503 "busy" answers and fewer than ``N`` compared at the end of
input); with the budget lifted they take about 3 s of CPU.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.demo import demo_path
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

pytestmark = pytest.mark.slow  # a served app with analytics (models), twice

N = 150
PRODUCTION = ("p1", "p2", "p3")


def burner(question: str, k: int) -> list[tuple[str, float]]:
    """A candidate that spends ~20 ms of CPU and disagrees with production entirely."""
    end = time.thread_time() + 0.02
    while time.thread_time() < end:
        pass
    return [("p7", 3.0), ("p8", 2.0), ("p9", 1.0)][:k]


def _event(i: int) -> dict[str, Any]:
    return {
        "event_id": f"e-{i}", "timestamp": f"2026-11-29T{10 + i // 60}:{i % 60:02d}:00Z",
        "question": f"Which stops does bus route {i + 100} make near the old lighthouse?",
        "retrieval": {"results": [{"id": pid, "rank": r} for r, pid in enumerate(PRODUCTION, 1)]},
        "answer": {"text": "It stops at the pier and the market.", "citations": ["p1"]},
    }  # fmt: skip


def _settings(tmp_path: Path) -> Any:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(_event(i)) + "\n" for i in range(N)))
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    return load_settings(
        gold_set=gold,
        corpus=demo_path("corpus.jsonl"),
        source={"kind": "file", "path": str(log)},
        state={"path": tmp_path / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        retrievers=[{"name": "burner", "kind": "entrypoint",
                     "entrypoint": f"{__name__}:burner"}],
        shadow={"candidates": [{"name": "burner", "k": 3, "timeout_s": 10}],
                "max_cpu_share": 0.001, "evaluate_on_start": False},
        harvest={"flush_interval_s": 0, "max_new_per_batch": None},  # none shed
    )  # fmt: skip


def _listing(server: Server) -> dict[str, Any]:
    response = httpx.get(server.base + "/v1/gold-candidates", params={"limit": 500})
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _completed(server: Server) -> int:
    return int(httpx.get(server.base + "/v1/shadow").json()["candidates"]["burner"]["completed"])


def test_a_clean_restart_lists_what_the_end_of_input_listed(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    busy: list[str] = []
    with Server(settings) as server:
        deadline = time.monotonic() + 180
        while not httpx.get(server.base + "/v1/status").json()["input_finished"]:
            assert time.monotonic() < deadline, "the log was not finished in time"
            # the reports answer while the calls settle (the lock is not held for them)
            response = httpx.get(server.base + "/v1/refusals", timeout=30)
            if response.status_code != 200:
                busy.append(response.text)
            time.sleep(0.2)
        status = httpx.get(server.base + "/v1/status").json()
        assert not any("shadow calls queued" in n for n in status["notices"])
        finished = _listing(server)
        completed = _completed(server)
    assert busy == []
    # every event compared by the end of input, each its own suggestion disagreeing
    assert completed == N
    assert finished["total"] == N
    assert all("shadow_disagreement" in item["reasons"] for item in finished["items"])
    with Server(settings) as server:  # a clean stop, a restart, nothing new to read
        restarted = _listing(server)
        assert _completed(server) == N
    assert restarted["total"] == N
    assert [i["id"] for i in restarted["items"]] == [i["id"] for i in finished["items"]]
