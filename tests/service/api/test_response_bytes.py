"""The response models keep the bytes (issue 21, item 3): a report built by its real
producer is served through its route, now with a response model, exactly as the route
wrote it before, when FastAPI serialised the ``dict[str, Any]`` return annotation
(``TypeAdapter(dict[str, Any]).dump_json``). A model whose fields are out of the
producer's order, that drops a key, or that turns an int into a float fails here."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from pydantic import SecretStr, TypeAdapter

from service.api.harvest_routes import router as harvest_router
from service.api.shadow_routes import router as shadow_router
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates
from service.shadow.stage import ShadowStage
from tests.service.harvest.helpers import batch, event
from tests.service.shadow.test_stage import build, run_batch, settle

AUTH = {"Authorization": "Bearer secret"}
_AS_BEFORE = TypeAdapter(dict[str, Any])


def before(body: Any) -> bytes:
    """What the route answered before it declared a model."""
    return _AS_BEFORE.dump_json(body)


def _app(runtime: Any, labelling: Labelling | None = None) -> TestClient:
    app = FastAPI()
    app.include_router(harvest_router)
    app.include_router(shadow_router)
    app.state.harvest = labelling
    app.state.runtime = runtime
    return TestClient(app)


@pytest.fixture
def labelling(tmp_path: Path) -> Labelling:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "When are fees due?", "gold": ["p-1"], '
                    '"kind": "plain"}\n', encoding="utf-8")  # fmt: skip
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo])
    stage.process(batch(
        [event("e1", "hostel fee refund kab milega", minute=1),
         event("e2", "Hostel fee refund kab milega??", minute=2),
         event("e3", "bus pass for sem 3", minute=3, rating=-1.0),
         event("e4", "exam schedule for sem 3", minute=4, citations=["p-9"])],
        [{"refused": True, "language": "hi-Latn", "topic": "hostel"}, {"refused": True},
         {"language": "en", "topic": "transport"}, {"language": "en", "topic": "exams"}],
    ))  # fmt: skip
    return Labelling(repo, gold, HarvestConfig())


def test_gold_candidates_keep_their_bytes(labelling: Labelling) -> None:
    runtime = SimpleNamespace(settings=SimpleNamespace(api=SimpleNamespace(
        token=SecretStr("secret"))))  # fmt: skip
    client = _app(runtime, labelling)
    page = labelling.list()
    assert page.total >= 3
    listed = client.get("/v1/gold-candidates")
    assert listed.content == before({"total": page.total, "offset": 0, "limit": 50,
                                     "items": page.items})  # fmt: skip
    first, second, third = (item["id"] for item in page.items[:3])
    assert client.get(f"/v1/gold-candidates/{first}").content == before(labelling.get(first))
    accepted = client.post(f"/v1/gold-candidates/{first}/accept", headers=AUTH,
                           json={"gold": [], "kind": "unanswerable", "topic": "fees"})  # fmt: skip
    rejected = client.post(f"/v1/gold-candidates/{second}/reject", headers=AUTH,
                           json={"reason": "not a question"})  # fmt: skip
    assert accepted.status_code == rejected.status_code == 200
    assert accepted.content == before(labelling.repository.decision(first))
    assert rejected.content == before(labelling.repository.decision(second))
    # decided items carry their decision: read back as the route served it before
    assert client.get(f"/v1/gold-candidates/{first}").content == before(labelling.get(first))
    decided = client.get("/v1/gold-candidates", params={"status": "rejected"})
    rejected_items = labelling.list(status="rejected").items
    assert decided.content == before(
        {"total": 1, "offset": 0, "limit": 50, "items": rejected_items}
    )
    assert third not in decided.text


@pytest.fixture
def shadow() -> Iterator[ShadowStage]:
    stage = build()
    try:
        run_batch(stage, 40, languages=("en", "hi"))
        settle(stage, 80)
        yield stage
    finally:
        stage.runner.close()


def test_shadow_reports_keep_their_bytes(shadow: ShadowStage) -> None:
    report = shadow.report()  # live (not a replay): latency and runner gauges included
    assert {"latency_seconds", "runner"} <= set(report["candidates"]["rot"])
    gold = {"enabled": True, "running": False, "runs": 0, "last_error": None, "latest": None}
    runtime = SimpleNamespace(shadow_report=lambda: report, gold_run_status=lambda: gold,
                              topics_nearest=lambda: None)  # fmt: skip
    client = _app(runtime)
    served = client.get("/v1/shadow")
    summaries = {name: {k: v for k, v in body.items() if k != "disagreements"}
                 for name, body in report["candidates"].items()}  # fmt: skip
    # session 41: topics_are added (None: the topics are the model's, novel included);
    # session 45: sustained added (a stage without a trend: none)
    assert served.content == before({**report, "candidates": summaries, "gold": gold,
                                     "topics_are": None, "sustained": {}})  # fmt: skip
    # every kept event (distinct=false) as before; by question (the default) adds repeats
    rows = client.get("/v1/shadow/disagreements", params={"limit": 2, "distinct": "false"})
    lowest = {name: body["disagreements"][:2] for name, body in report["candidates"].items()}
    assert rows.content == before({"rbo_p": report["rbo_p"], "candidates": lowest})
    distinct = client.get("/v1/shadow/disagreements", params={"limit": 2}).json()
    assert distinct["candidates"] == {
        name: [{**row, "repeats": 1} for row in body] for name, body in lowest.items()
    }  # distinct questions here
    assert client.get("/v1/shadow/evaluate").content == before(gold)
