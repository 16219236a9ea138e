"""A graceful stop of the real ``goldwatch serve`` process ends with exit status 0.

uvicorn re-raises the stop signal after its graceful shutdown, so serve used to die by SIGTERM
(status -15, 143 in a shell) although it had stopped cleanly and checkpointed (fresh-user
trial). Each test starts ``python -m service.cli serve`` on a free port with the file source in
follow mode and checkpoints only on stop (``commit_interval_s`` one hour, ``commit_every``
above the log's size), waits for ``/readyz`` and the whole demo log, and sends the signal:
the state file holds no totals before it and the full count after, so the checkpoint seen is
the one the stop wrote. When that last checkpoint fails, the status is 1, not 0.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from service.demo import demo_path
from tests.acceptance.service_process import ServiceProcess
from tests.cli.stop_stage import MARKER_ENV

#: Lines of the demo query log (``service/demo/querylog.jsonl``), each one event.
DEMO_EVENTS = 3000
STOP_TIMEOUT_S = 60.0


def _config(tmp_path: Path, extra_stages: list[str] | None = None) -> dict[str, Any]:
    return {
        "source": {"kind": "file", "path": str(demo_path("querylog.jsonl")), "follow": True,
                   "dlq_path": str(tmp_path / "dlq.jsonl")},
        "state": {"path": str(tmp_path / "state.sqlite")},
        "analytics": {"enabled": False},
        "pipeline": {"commit_interval_s": 3600, "commit_every": 1_000_000,
                     "extra_stages": extra_stages or []},
    }  # fmt: skip


def _saved_totals(path: Path) -> dict[str, Any] | None:
    """The ``totals`` the state file holds (read-only; ``None`` when none was saved)."""
    if not path.exists():
        return None
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        row = conn.execute("SELECT value FROM state WHERE key = 'totals'").fetchone()
    return None if row is None else dict(json.loads(row[0]))


def _ready_with_the_whole_log(service: ServiceProcess) -> dict[str, Any]:
    deadline = time.monotonic() + 120
    while service.readyz() != 200:
        assert time.monotonic() < deadline, "serve never became ready" + service.log_tail()
        time.sleep(0.1)
    status = service.wait_until(
        lambda s: s["totals"]["consumed"] == DEMO_EVENTS, timeout_s=120, what="the demo log"
    )
    return dict(status["totals"])


def _stop(service: ServiceProcess, sig: signal.Signals) -> int:
    service.process.send_signal(sig)
    try:
        return int(service.process.wait(timeout=STOP_TIMEOUT_S))
    except subprocess.TimeoutExpired:
        service.kill()
        raise AssertionError(f"serve ignored {sig.name}" + service.log_tail()) from None
    finally:
        service.close_client()


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_graceful_stop_checkpoints_and_exits_0(tmp_path: Path, sig: signal.Signals) -> None:
    state = tmp_path / "state.sqlite"
    service = ServiceProcess.start(tmp_path / "work", _config(tmp_path))
    try:
        served = _ready_with_the_whole_log(service)
        assert _saved_totals(state) is None  # nothing checkpointed yet: only the stop will
        status = _stop(service, sig)
    finally:
        service.kill()
    assert status == 0, f"exit status {status}" + service.log_tail()
    saved = _saved_totals(state)
    assert saved is not None, "the stop did not checkpoint" + service.log_tail()
    assert saved["consumed"] == served["consumed"] == DEMO_EVENTS
    assert saved["processed"] == served["processed"]
    assert "not cleanly" not in service.log_tail()


@pytest.mark.slow
def test_a_failed_last_checkpoint_exits_1(tmp_path: Path) -> None:
    marker = tmp_path / "fail-now"
    config = _config(tmp_path, ["tests.cli.stop_stage:FailCheckpointAfterMarker"])
    service = ServiceProcess.start(tmp_path / "work", config, env={MARKER_ENV: str(marker)})
    try:
        _ready_with_the_whole_log(service)
        marker.touch()
        status = _stop(service, signal.SIGTERM)
    finally:
        service.kill()
    assert status == 1, f"exit status {status}" + service.log_tail()
    tail = service.log_tail()
    assert "goldwatch: error: stopped, but not cleanly: the consumer had failed" in tail, tail
    assert _saved_totals(tmp_path / "state.sqlite") is None  # the failed checkpoint wrote nothing


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_during_start_up_exits_0_and_releases_the_state(
    tmp_path: Path, sig: signal.Signals
) -> None:
    """A stop while the runtime is still being built (a rollout stopping a pod that is not
    ready yet): nothing was consumed, so nothing is lost; serve says it stopped before
    serving and exits 0 (was: killed by SIGTERM, -15, or click's "Aborted!" and 1 on
    SIGINT), releasing the state file: the next serve starts on it at once."""
    from tests.cli.stop_stage import BUILDING_ENV

    building = tmp_path / "building"
    config = _config(tmp_path, ["tests.cli.stop_stage:HoldStartUp"])
    service = ServiceProcess.start(
        tmp_path / "work", config, env={BUILDING_ENV: str(building)}, wait=False
    )
    try:
        deadline = time.monotonic() + 120
        while not building.exists():
            assert service.alive, "serve ended before building its pipeline" + service.log_tail()
            assert time.monotonic() < deadline, (
                "serve never reached its pipeline" + service.log_tail()
            )
            time.sleep(0.05)
        status = _stop(service, sig)
    finally:
        service.kill()
    tail = service.log_tail()
    assert status == 0, f"exit status {status}" + tail
    assert "goldwatch: stopped before the service started" in tail, tail
    assert "Traceback" not in tail and "Aborted" not in tail, tail
    again = ServiceProcess.start(tmp_path / "again", _config(tmp_path))
    try:
        assert _ready_with_the_whole_log(again)["consumed"] == DEMO_EVENTS
    finally:
        assert _stop(again, signal.SIGTERM) == 0


@pytest.mark.slow
def test_ctrl_c_during_start_up_works_when_sigint_was_inherited_ignored(tmp_path: Path) -> None:
    """A background job of a non-interactive shell (``goldwatch serve &`` in a script) starts
    with SIGINT ignored; uvicorn listens to it once serving, so start-up was the one moment a
    SIGINT was lost: serve then started and ran on (fresh-user trial). Now it stops, exit 0."""
    import os
    import sys

    import yaml

    from tests.acceptance.service_process import REPO_ROOT
    from tests.cli.stop_stage import BUILDING_ENV
    from tests.ports import free_port

    building = tmp_path / "building"
    config = {
        **_config(tmp_path, ["tests.cli.stop_stage:HoldStartUp"]),
        "api": {"host": "127.0.0.1", "port": free_port()},
    }
    path = tmp_path / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), BUILDING_ENV: str(building)}
    process = subprocess.Popen(
        [sys.executable, "-m", "service.cli", "serve", "--config", str(path)], cwd=REPO_ROOT,
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),  # noqa: PLW1509
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while not building.exists():
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "serve never reached its pipeline"
            time.sleep(0.05)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=STOP_TIMEOUT_S)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate(timeout=STOP_TIMEOUT_S)
    assert process.returncode == 0, stderr
    assert "goldwatch: stopped before the service started" in stderr, stderr
