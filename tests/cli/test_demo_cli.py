"""``goldwatch demo`` end to end, through the console entry point (subprocess).

What the demo must show comes from the generator's documented plan
(``service/demo/querylog.py``, ``CHANGES``): Hinglish (``hi-Latn``) and exam questions rise
from phase B (event 1,351), refusals jump in phase C (event 2,251).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_eval_cli import GOLDWATCH, run
from tests.ports import free_port

TOKEN = "demo-test-token"
#: Upper bound of every wait on the live demo (a bound, not a timing assertion).
WAIT_S = 120.0


def _get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def _post(url: str, body: dict[str, Any], token: str) -> tuple[int, dict[str, Any]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {token}"},
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def _wait_for(condition: Callable[[], bool], what: str, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"demo exited ({proc.returncode}) while waiting for {what}")
        try:
            if condition():
                return
        except (OSError, ValueError):
            pass  # not listening yet, or a half-written answer
        time.sleep(0.2)
    pytest.fail(f"gave up waiting for {what} after {WAIT_S:.0f} s")


@pytest.mark.slow
def test_fast_demo_detects_every_planted_change(tmp_path: Path) -> None:
    result = run(["demo", "--fast", "--format", "json", "--workdir", "wd"], tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)  # strict JSON: no NaN
    assert (doc["consumed"], doc["processed"], doc["dead_lettered_total"]) == (3000, 3000, 0)
    alarms = [a for a in doc["analytics"]["drift"]["alarms"] if a["state"] == "drift"]
    language = [a for a in alarms if a["dimension"] == "language"]
    topic = [a for a in alarms if a["dimension"] == "topic"]
    refusal = [a for a in alarms if a["dimension"] == "refusal"]
    assert any("hi-Latn" in a["rising"] for a in language)
    assert any("exams" in a["rising"] for a in topic)
    assert any(a["rate_current"] > a["rate_compared"] for a in refusal)
    # never before the change is planted
    assert min(a["after_events"] for a in language + topic) > 1350
    assert min(a["after_events"] for a in refusal) > 2250
    planted = {p["dimension"]: p for p in doc["demo"]["planted"]}
    assert set(planted) == {"language", "topic", "refusal"}
    assert all(p["detected"] and p["delay_h"] > 0 for p in planted.values())
    # shadow agreement of the 'hybrid' candidate against production's live rankings
    hybrid = doc["shadow"]["candidates"]["hybrid"]
    assert hybrid["completed"] > 0
    assert 0.0 < hybrid["agreement"]["rbo"] <= 1.0
    # harvested suggestions, with reasons
    candidates = doc["gold_candidates"]
    assert candidates["n_suggestions"] > 0 and candidates["top"]
    assert {"refused", "coverage_gap"} <= set(candidates["by_reason"])
    # the working folder holds the gold-set copy and nothing was written beside it
    assert (tmp_path / "wd" / "gold.jsonl").is_file()
    assert not (tmp_path / "goldwatch-runs.jsonl").exists()


@pytest.mark.slow
def test_fast_demo_text_and_html(tmp_path: Path) -> None:
    result = run(["demo", "--fast", "--workdir", "wd", "--html", "demo.html"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("detected vs ") == 3 and "NOT DETECTED" not in result.stdout
    assert "harvested gold-question suggestions" in result.stdout
    page = (tmp_path / "demo.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page


@pytest.fixture
def live_demo(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[str], str, Path]]:
    """A live ``goldwatch demo`` on a free port; killed if a test leaves it running."""
    port = free_port()
    workdir = tmp_path / "wd"
    env = {**os.environ, "GOLDWATCH_API__TOKEN": TOKEN}
    args = ["demo", "--port", str(port), "--rate", "200", "--workdir", str(workdir)]
    proc = subprocess.Popen(
        [*GOLDWATCH, *args],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc, f"http://127.0.0.1:{port}", workdir
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=WAIT_S)


@pytest.mark.slow
def test_live_demo_serves_and_stops_on_ctrl_c(
    live_demo: tuple[subprocess.Popen[str], str, Path],
) -> None:
    proc, base, workdir = live_demo
    _wait_for(lambda: _get(f"{base}/readyz", 2)[0] == 200, "/readyz", proc)
    code, page = _get(f"{base}/")
    assert code == 200 and b"<html" in page
    code, body = _get(f"{base}/v1/status")
    status = json.loads(body)
    assert code == 200 and status["source_kind"] == "file" and status["ready"]
    code, metrics = _get(f"{base}/metrics")
    assert code == 200 and b"goldwatch_events_processed_total" in metrics

    # accept a harvested suggestion into the working folder's gold set
    def listed() -> bool:
        return json.loads(_get(f"{base}/v1/gold-candidates?limit=1")[1])["total"] > 0

    _wait_for(listed, "a harvested suggestion", proc)
    item = json.loads(_get(f"{base}/v1/gold-candidates?limit=1")[1])["items"][0]
    gold_before = (workdir / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    gold = [row["id"] for row in item["pool"]][:1]  # the labeller's verdict
    code, accepted = _post(
        f"{base}/v1/gold-candidates/{item['id']}/accept",
        {"gold": gold, "kind": "plain" if gold else "unanswerable"},
        TOKEN,
    )
    assert code == 200, accepted
    gold_after = (workdir / "gold.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(gold_after) == len(gold_before) + 1

    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0, stderr
    assert "Traceback" not in stderr and "status page" in stderr


@pytest.mark.slow
def test_sigterm_stops_cleanly_and_a_taken_port_fails_clearly(
    live_demo: tuple[subprocess.Popen[str], str, Path], tmp_path: Path
) -> None:
    proc, base, _ = live_demo
    _wait_for(lambda: _get(f"{base}/healthz", 2)[0] == 200, "/healthz", proc)
    port = base.rsplit(":", 1)[1]
    taken = run(["demo", "--port", port, "--workdir", "other"], tmp_path)
    assert taken.returncode == 2
    assert f"port {port}" in taken.stderr and "--port" in taken.stderr
    assert "Traceback" not in taken.stderr
    proc.send_signal(signal.SIGTERM)
    proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 0
