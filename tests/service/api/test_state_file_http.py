"""The state file deleted under HTTP ingest (trial 47, F4), over real HTTP: recreated whole and
said on /v1/status, the status page and /metrics; while it cannot be written at its path,
ingest is not acknowledged (503) and /readyz says why; once it can, nothing is missing.

The expected totals are the events posted (each with its own id); the resent one is a
duplicate because its first try was counted, though not acknowledged."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import httpx

from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _event, _free_port


def _metric(server: Server, name: str) -> float:
    for line in httpx.get(server.base + "/metrics").text.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


def test_http_ingest_with_its_state_file_deleted_then_its_directory(tmp_path: Path) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    state = folder / "state.sqlite"
    settings = load_settings(
        state={"path": state},
        source={"dlq_path": tmp_path / "dlq.jsonl"},
        api={"port": _free_port(), "token": TOKEN},
        analytics={"enabled": False},
    )
    with Server(settings) as server:
        assert server.post(_event("a")).status_code == 200
        os.unlink(state)
        assert server.post(_event("b")).json()["accepted"] == 1
        status = httpx.get(server.base + "/v1/status").json()
        assert status["state_file"]["recreated"] == 1
        assert status["state_file"]["lost"] is None
        assert "recreated there with the whole current state" in status["notices"][0]
        assert "recreated there with the whole current state" in httpx.get(server.base).text
        assert _metric(server, "goldwatch_state_file_recreated_total") == 1.0

        shutil.rmtree(folder)
        refused = server.post(_event("c"))
        assert refused.status_code == 503
        assert "cannot be written there again" in refused.text
        ready = httpx.get(server.base + "/readyz")
        assert ready.status_code == 503
        status = httpx.get(server.base + "/v1/status").json()
        assert status["state_file"]["lost"] is not None
        assert status["notices"][0].startswith("STATE NOT DURABLE")
        assert _metric(server, "goldwatch_state_file_lost") == 1.0

        folder.mkdir()
        resent = server.post(_event("c")).json()  # counted on its first try: a duplicate
        assert (resent["accepted"], resent["duplicates"]) == (0, 1)
        assert server.post(_event("d")).json()["accepted"] == 1
        status = httpx.get(server.base + "/v1/status").json()
        assert (status["state_file"]["lost"], status["state_file"]["recreated"]) == (None, 2)
        assert _metric(server, "goldwatch_state_file_lost") == 0.0
        assert httpx.get(server.base + "/readyz").status_code == 200
    with Server(settings) as again:
        totals = httpx.get(again.base + "/v1/status").json()["totals"]
        assert (totals["processed"], totals["duplicates"]) == (4, 1)
        assert httpx.get(again.base + "/v1/status").json()["state_file"]["started_empty"] is False
