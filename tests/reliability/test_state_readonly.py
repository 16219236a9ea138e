"""The state directory is read-only when ``goldwatch serve`` starts.

Two ways it happens in production, both reproduced here:

* the volume is mounted read-only (a ``readOnly`` volume, a file system remounted ``ro`` after
  disk errors): a read-only bind mount of the state folder, EROFS even for root (needs mount
  rights, as in CI; skipped elsewhere);
* the folder belongs to someone else (a volume without the pod's ``fsGroup``, a ``chmod``):
  mode 0555 and serve run as ``nobody`` through ``setpriv`` (root ignores modes; skipped when
  it cannot be done here).

Each on an empty folder (first start) and on a folder holding the state of an earlier run.

Expected: serve does not start, and does not hang or crash-loop silently: it exits promptly with
status 2 and one line on stderr naming the state file and saying it is not writable (not that
it is corrupt: the advice to move a healthy state file aside would throw the state away). Once
the folder is writable again the earlier state is there, untouched. What the service does when
the folder turns read-only while it runs is ``test_state_faults.py``'s subject.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.acceptance.service_process import REPO_ROOT, TOKEN, ServiceProcess
from tests.kafka_broker import free_port

NOBODY = ("setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
#: A refused start takes about as long as importing the service; a served one never ends.
EXIT_TIMEOUT_S = 60
EVENTS = 5


def _mount(*args: str) -> bool:
    done = subprocess.run(["mount", *args], capture_output=True, check=False, timeout=10)
    return done.returncode == 0


def _can_run_as_nobody() -> bool:
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        return False
    probe = [*NOBODY, sys.executable, "-c", "import service.cli"]
    done = subprocess.run(probe, cwd=REPO_ROOT, capture_output=True, check=False, timeout=60)
    return done.returncode == 0


def _config(state_dir: Path) -> dict[str, Any]:
    return {
        "source": {"kind": "none"},
        "state": {"path": str(state_dir / "state.sqlite")},
        "analytics": {"enabled": False},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
    }


def _serve(
    config: dict[str, Any], workdir: Path, as_nobody: bool
) -> subprocess.CompletedProcess[str]:
    """Run serve until it exits (fails the test if it is still serving after the timeout)."""
    path = workdir / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    path.chmod(0o644)
    command = [sys.executable, "-m", "service.cli", "serve", "--config", str(path)]
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        return subprocess.run(
            [*NOBODY, *command] if as_nobody else command, cwd=REPO_ROOT, env=env,
            capture_output=True, text=True, check=False, timeout=EXIT_TIMEOUT_S,
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        raise AssertionError(f"serve kept running on a read-only state folder: {exc}") from None


def _earlier_run(workdir: Path, state_dir: Path) -> dict[str, Any]:
    """Start serve on ``state_dir``, post a few events, stop it gracefully; its totals."""
    service = ServiceProcess.start(workdir / "earlier", _config(state_dir))
    try:
        events = [
            {"event_id": f"ro-{i}", "timestamp": "2026-11-29T10:00:00Z", "question": "Fee?"}
            for i in range(EVENTS)
        ]
        assert service.post_events(events).json()["accepted"] == EVENTS
        totals = service.totals()
    finally:
        service.terminate()  # graceful: checkpoint, close, exit 0
    return totals


def _new_workdir() -> Path:
    """A folder ``nobody`` can read (pytest's own temporary folders are root-only)."""
    path = Path(tempfile.mkdtemp(prefix="goldwatch-ro-"))
    path.chmod(0o755)
    return path


def _cleanup(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path / "state")], capture_output=True, check=False)
    for root, dirs, _ in os.walk(path):
        for name in dirs:
            os.chmod(os.path.join(root, name), 0o755)
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def workdir() -> Iterator[Path]:
    """A fresh folder ``nobody`` can read, removed (and unmounted) afterwards."""
    path = _new_workdir()
    try:
        yield path
    finally:
        _cleanup(path)


def _make_read_only(state_dir: Path, how: str) -> None:
    if how == "mount":
        if not _mount("--bind", str(state_dir), str(state_dir)):
            pytest.skip("no mount rights here")
        if not _mount("-o", "remount,ro,bind", str(state_dir)):
            subprocess.run(["umount", "-l", str(state_dir)], check=False)
            pytest.skip("cannot remount read-only here")
    else:
        state_dir.chmod(0o555)


def _make_writable(state_dir: Path, how: str) -> None:
    if how == "mount":
        subprocess.run(["umount", "-l", str(state_dir)], check=True, timeout=10)
    else:
        state_dir.chmod(0o755)


def _assert_refused(done: subprocess.CompletedProcess[str], state_file: Path) -> None:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    lines = [line for line in done.stderr.splitlines() if line.startswith("goldwatch: error:")]
    assert len(lines) == 1 and str(state_file) in lines[0], done.stderr[-2000:]
    assert "Traceback" not in done.stderr, done.stderr[-2000:]


HOW = [
    pytest.param("mount", id="read-only-mount-as-root"),
    pytest.param("chmod", id="chmod-0555-as-nobody"),
]


def _skip_unless_possible(how: str) -> None:
    if how == "chmod" and not _can_run_as_nobody():
        pytest.skip("cannot run serve as nobody here (needs root and setpriv)")


@pytest.mark.parametrize("how", HOW)
def test_first_start_on_read_only_folder_exits_naming_the_file(workdir: Path, how: str) -> None:
    _skip_unless_possible(how)
    state_dir = workdir / "state"
    state_dir.mkdir(mode=0o755)
    _make_read_only(state_dir, how)
    done = _serve(_config(state_dir), workdir, as_nobody=how == "chmod")
    _assert_refused(done, state_dir / "state.sqlite")
    assert "not writable" in done.stderr, done.stderr[-2000:]
    assert not (state_dir / "state.sqlite").exists()


@pytest.fixture(scope="module", params=HOW)
def restart(request: pytest.FixtureRequest) -> Iterator[dict[str, Any]]:
    """An earlier run's state; the folder made read-only; serve started on it; the folder made
    writable again and serve started once more."""
    how = request.param
    _skip_unless_possible(how)
    workdir = _new_workdir()
    try:
        state_dir = workdir / "state"
        state_dir.mkdir(mode=0o755)
        before = _earlier_run(workdir, state_dir)
        _make_read_only(state_dir, how)
        refused = _serve(_config(state_dir), workdir, as_nobody=how == "chmod")
        _make_writable(state_dir, how)
        service = ServiceProcess.start(workdir / "after", _config(state_dir))
        try:
            after = service.totals()
        finally:
            service.kill()
        yield {"before": before, "refused": refused, "after": after, "state_dir": state_dir}
    finally:
        _cleanup(workdir)


def test_restart_on_read_only_folder_exits_naming_the_file(restart: dict[str, Any]) -> None:
    _assert_refused(restart["refused"], restart["state_dir"] / "state.sqlite")


def test_state_intact_once_the_folder_is_writable(restart: dict[str, Any]) -> None:
    assert restart["before"]["processed"] == EVENTS
    assert restart["after"] == restart["before"]


def test_restart_on_read_only_folder_says_not_writable(restart: dict[str, Any]) -> None:
    stderr = restart["refused"].stderr
    assert "not writable" in stderr and "move it aside" not in stderr, stderr
