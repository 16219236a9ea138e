"""The start gate of ``goldwatch serve`` (review of s47-start): while the deferred load runs,
a mutating request is authenticated before the 503 ``starting`` (401 without a token, 403
with a wrong one), neither the 503 nor ``/readyz`` shows a failed load's error text, and the
gate and ``/readyz`` open only once the pipeline is started (not merely loaded)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.runtime.process import Runtime
from service.settings import load_settings

TOKEN = "t0ken-for-tests"
SECRET = "/very/secret/path/model.bin: boom"


class Held:
    """A runtime whose load waits for ``load_go`` and whose start waits for ``start_go``."""

    def __init__(self, tmp_path: Path) -> None:
        settings = load_settings(
            state={"path": tmp_path / "state.sqlite"},
            analytics={"enabled": False},
            api={"token": TOKEN},
        )
        self.runtime = Runtime(settings, defer=True)
        self.load_go = threading.Event()
        self.start_go = threading.Event()
        self.loaded_and_waiting = threading.Event()
        real_load, real_start = self.runtime.load, self.runtime.start

        def load() -> None:
            assert self.load_go.wait(30)
            real_load()

        def start() -> None:
            self.loaded_and_waiting.set()
            assert self.start_go.wait(30)
            real_start()

        self.runtime.load = load  # type: ignore[method-assign]
        self.runtime.start = start  # type: ignore[method-assign]


@pytest.fixture
def held(tmp_path: Path) -> Iterator[tuple[Held, TestClient]]:
    h = Held(tmp_path)
    with TestClient(create_app(h.runtime.settings, h.runtime)) as client:
        yield h, client
        h.load_go.set()
        h.start_go.set()


def test_a_mutating_request_is_authenticated_before_the_503_starting(
    held: tuple[Held, TestClient],
) -> None:
    _, client = held
    event = {"event_id": "e-1", "question": "q?"}
    anonymous = client.post("/v1/events", json=event)
    assert anonymous.status_code == 401
    assert anonymous.headers["www-authenticate"] == "Bearer"
    assert client.post("/v1/events", json=event,
                       headers={"Authorization": "Bearer wrong"}).status_code == 403  # fmt: skip
    authorised = client.post("/v1/events", json=event,
                             headers={"Authorization": f"Bearer {TOKEN}"})  # fmt: skip
    assert authorised.status_code == 503
    assert authorised.json()["error"] == "starting"
    assert authorised.headers["retry-after"] == "5"
    assert client.get("/v1/status").status_code == 503  # a read needs no token: 503 at once
    assert client.get("/healthz").status_code == 200


def test_a_failed_load_shows_no_error_text_to_clients(held: tuple[Held, TestClient]) -> None:
    h, client = held
    h.runtime.load_error = SECRET  # what _load records when the load raised
    for response in (client.get("/v1/status"), client.get("/readyz"),
                     client.post("/v1/events", json={},
                                 headers={"Authorization": f"Bearer {TOKEN}"})):  # fmt: skip
        assert response.status_code == 503
        assert "secret" not in response.text and "boom" not in response.text
        assert "start-up failed" in response.text


def test_gate_and_readyz_open_only_once_the_pipeline_is_started(
    held: tuple[Held, TestClient],
) -> None:
    h, client = held
    h.load_go.set()
    assert h.loaded_and_waiting.wait(30)  # loaded, rt.start() not yet run
    assert h.runtime.loaded.is_set()
    ready = client.get("/readyz")
    assert ready.status_code == 503 and ready.json()["reasons"][0].startswith("starting:")
    candidates = client.get("/v1/gold-candidates")
    assert candidates.status_code == 503 and candidates.json()["error"] == "starting"
    h.start_go.set()
    for _ in range(300):
        if client.get("/readyz").status_code == 200:
            break
        threading.Event().wait(0.1)
    assert client.get("/readyz").status_code == 200
    assert client.get("/v1/gold-candidates").status_code == 404  # harvesting is off
    assert client.get("/v1/status").status_code == 200
