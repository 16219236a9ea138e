"""Shadow endpoints over real HTTP: agreement per candidate, disagreements, gold-set runs on
demand (auth, 202/409), and the metrics they export."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.demo import demo_path
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

# Production returned p1, p2, p3 (cited p1); the candidate "mirror" is an entry point that
# returns p1, p3, p9: overlap@3 = 2/3, top-1 agrees, citation recall = 1.
PRODUCTION = ["p1", "p2", "p3"]


def mirror(question: str, k: int) -> list[tuple[str, float]]:
    return [("p1", 3.0), ("p3", 2.0), ("p9", 1.0)][:k]


def _event(i: int) -> dict[str, Any]:
    return {
        "event_id": f"e-{i}", "timestamp": "2026-11-29T10:00:00Z",
        "question": f"When is the fee for hostel {i} due?",
        "retrieval": {"results": [{"id": pid, "rank": r} for r, pid in enumerate(PRODUCTION, 1)]},
        "answer": {"text": "On the tenth.", "citations": ["p1"]},
    }  # fmt: skip


def _settings(tmp_path: Path, **shadow: Any) -> Any:
    return load_settings(
        gold_set=demo_path("gold.jsonl"),  # gold-set runs need one configured
        corpus=demo_path("corpus.jsonl"),
        state={"path": tmp_path / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        analytics={"enabled": False},
        eval={"history": str(tmp_path / "runs.jsonl"), "misses": None},
        retrievers=[{"name": "mirror", "kind": "entrypoint",
                     "entrypoint": f"{__name__}:mirror"}],
        shadow=shadow,
    )  # fmt: skip


@pytest.fixture()
def server(tmp_path: Path) -> Iterator[Server]:
    settings = _settings(
        tmp_path, production="bm25", candidates=[{"name": "mirror", "k": 3}], max_disagreements=2
    )
    with Server(settings) as running:
        yield running


def _wait(predicate: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("condition not met in time")


def test_agreement_with_production_on_live_events(server: Server) -> None:
    assert server.post([_event(i) for i in range(4)]).json()["accepted"] == 4

    def done() -> dict[str, Any] | None:
        body = httpx.get(server.base + "/v1/shadow").json()
        mirror = body["candidates"]["mirror"]
        return body if mirror["completed"] == 4 else None

    body = _wait(done)
    mirror = body["candidates"]["mirror"]
    assert mirror["offered"] == 4 and mirror["queued"] == 4 and mirror["errors"] == {}
    agreement = mirror["agreement"]
    assert agreement["overlap"] == pytest.approx(2 / 3)
    assert agreement["jaccard"] == pytest.approx(2 / 4)  # {p1,p3} / {p1,p2,p3,p9}
    assert agreement["top1"] == 1.0 and agreement["citation_recall"] == 1.0
    assert "disagreements" not in mirror and body["rbo_p"] == 0.9
    assert body["topics_are"] is None  # analytics off: no topics, nothing to say of them
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_shadow_offers_total{outcome="queued",retriever="mirror"} 4.0' in metrics
    assert 'goldwatch_shadow_agreement_count{measure="overlap",retriever="mirror"} 4.0' in metrics
    assert 'goldwatch_shadow_request_duration_seconds_count{retriever="mirror"} 4.0' in metrics


def test_disagreements_are_bounded_and_filterable(server: Server) -> None:
    server.post([_event(i) for i in range(5)])
    _wait(lambda: httpx.get(server.base + "/v1/shadow").json()["candidates"]["mirror"]
          ["completed"] == 5)  # fmt: skip
    rows = httpx.get(server.base + "/v1/shadow/disagreements").json()["candidates"]["mirror"]
    assert len(rows) == 2  # shadow.max_disagreements
    assert rows[0]["production"] == PRODUCTION and rows[0]["candidate"] == ["p1", "p3", "p9"]
    one = httpx.get(server.base + "/v1/shadow/disagreements", params={"limit": 1}).json()
    assert len(one["candidates"]["mirror"]) == 1
    missing = httpx.get(server.base + "/v1/shadow/disagreements", params={"candidate": "nope"})
    assert missing.status_code == 404 and "nope" not in missing.text


def test_gold_run_on_demand_needs_the_token(server: Server) -> None:
    url = server.base + "/v1/shadow/evaluate"
    assert httpx.post(url).status_code == 401
    assert httpx.post(url, headers={"authorization": "Bearer wrong"}).status_code == 403
    started = httpx.post(url, headers={"authorization": f"Bearer {TOKEN}"})
    assert started.status_code == 202
    latest = _wait(lambda: httpx.get(url).json()["latest"])
    assert set(latest["retrievers"]) == {"bm25", "mirror"}
    assert latest["retrievers"]["bm25"]["role"] == "production"
    assert [row["metric"] for row in latest["comparisons"]["mirror"]][-1] == "mrr"
    metrics = httpx.get(server.base + "/metrics").text
    assert 'goldwatch_gold_runs_total{outcome="ok"} 1.0' in metrics
    assert 'goldwatch_gold_recall{k="10",kind="all",retriever="bm25"}' in metrics


def test_without_candidates_the_shadow_report_is_404(tmp_path: Path) -> None:
    with Server(_settings(tmp_path)) as running:
        response = httpx.get(running.base + "/v1/shadow")
        assert response.status_code == 404
        evaluate = httpx.post(running.base + "/v1/shadow/evaluate",
                              headers={"authorization": f"Bearer {TOKEN}"})  # fmt: skip
        assert evaluate.status_code == 404


def test_by_topic_says_the_topics_are_nearest_while_novelty_is_untrusted(
    server: Server,
) -> None:
    """Session 41: ``by_topic`` holds each question's nearest gold topic while the novelty
    detector is untrusted; ``/v1/shadow`` says so (``topics_are``) as ``/v1/drift`` does.
    The analytics are given trial 40's novelty quality (TPR 5 of 30, FPR 2 of 30: 0.477 at
    the Wilson bound, under 0.68; hand-worked in tests/service/topics/test_novelty_gate.py)."""
    from tests.service.topics.test_novelty_gate import _novelty

    analytics = server.runtime.live.analytics
    analytics.detector_quality = {"novelty": _novelty(5, 2)}
    analytics.min_balanced_accuracy, analytics.novelty_off = 0.68, None
    body = httpx.get(server.base + "/v1/shadow").json()
    assert body["topics_are"].startswith(
        "each question's nearest gold topic, questions on topics outside the gold set included "
        "(the novelty detector labels no question novel while it is uncalibrated: novelty "
        "balanced accuracy 0.550"
    )
