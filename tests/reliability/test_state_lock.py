"""Two ``goldwatch serve`` processes pointed at one state file (a copy-pasted config, a second
replica without its own volume).

Before: both started, each restored the same state and checkpointed over the other; after a
restart only the last writer's counts and dedup window were left (a fresh-user trial: 3 + 4
events sent, ``consumed: 4`` after the restart). Expected now: the second exits promptly with
status 2 and one line naming the state file and the first one's pid; the first keeps serving
and counting; once it has stopped, a new serve starts on the same file with every count.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.acceptance.service_process import REPO_ROOT, TOKEN, ServiceProcess
from tests.kafka_broker import free_port

#: A refused start takes about as long as importing the service; a served one never ends.
EXIT_TIMEOUT_S = 120


def _config(state: Path) -> dict[str, Any]:
    return {
        "source": {"kind": "none"},
        "state": {"path": str(state)},
        "analytics": {"enabled": False},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
    }


def _events(prefix: str, n: int) -> list[dict[str, str]]:
    return [
        {"event_id": f"{prefix}-{i}", "timestamp": "2026-11-29T10:00:00Z", "question": "Fee?"}
        for i in range(n)
    ]


def test_a_second_serve_on_the_same_state_file_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state" / "state.sqlite"
    first = ServiceProcess.start(tmp_path / "first", _config(state))
    try:
        assert first.post_events(_events("a", 3)).json()["accepted"] == 3
        second_config = tmp_path / "second.yaml"
        second_config.write_text(yaml.safe_dump(_config(state)), encoding="utf-8")
        refused = subprocess.run(
            [sys.executable, "-m", "service.cli", "serve", "--config", str(second_config)],
            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True, text=True, check=False, timeout=EXIT_TIMEOUT_S,
        )  # fmt: skip
        assert refused.returncode == 2, (refused.stdout, refused.stderr)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert str(state) in lines[0] and f"pid {first.process.pid}" in lines[0], lines[0]
        assert "in use by another goldwatch process" in lines[0]
        assert first.post_events(_events("b", 4)).json()["accepted"] == 4  # still serving
        assert first.totals()["processed"] == 7
    finally:
        assert first.terminate() == 0
    again = ServiceProcess.start(tmp_path / "again", _config(state))
    try:
        totals = again.totals()
        assert totals["processed"] == 7 and totals["consumed"] == 7
        assert again.post_events(_events("a", 3)).json()["duplicates"] == 3  # window kept
    finally:
        assert again.terminate() == 0


def test_a_second_serve_on_a_hard_link_to_the_state_file_is_refused(tmp_path: Path) -> None:
    """Before (issue 19, left open): the lock was ``<name>.lock`` beside each name, so a hard
    link (another name of the same file, no path from one to the other) gave each serve its
    own lock and both wrote one database. Now the writer also locks the file's identity."""
    state = tmp_path / "first" / "state" / "state.sqlite"
    first = ServiceProcess.start(tmp_path / "first", _config(state))
    try:
        assert first.post_events(_events("a", 3)).json()["accepted"] == 3
        linked = tmp_path / "second" / "state" / "other-name.sqlite"
        linked.parent.mkdir(parents=True)
        os.link(state, linked)
        assert os.stat(linked).st_ino == os.stat(state).st_ino
        second_config = tmp_path / "second.yaml"
        second_config.write_text(yaml.safe_dump(_config(linked)), encoding="utf-8")
        refused = subprocess.run(
            [sys.executable, "-m", "service.cli", "serve", "--config", str(second_config)],
            cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
            capture_output=True, text=True, check=False, timeout=EXIT_TIMEOUT_S,
        )  # fmt: skip
        assert refused.returncode == 2, (refused.stdout, refused.stderr)
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert str(linked) in lines[0] and f"pid {first.process.pid}" in lines[0], lines[0]
        assert "in use by another goldwatch process" in lines[0] and "hard link" in lines[0]
        assert first.post_events(_events("b", 4)).json()["accepted"] == 4  # still serving
        assert first.totals()["processed"] == 7
    finally:
        assert first.terminate() == 0
    again = ServiceProcess.start(tmp_path / "again", _config(linked))  # the link, alone now
    try:
        assert again.totals()["processed"] == 7
    finally:
        assert again.terminate() == 0
