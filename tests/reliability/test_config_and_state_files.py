"""Hostile files at configured paths, met by real ``goldwatch`` processes: a YAML alias bomb
and deep nesting, a FIFO where a file is expected (gold set, corpus, state, token file, key
file, the configuration itself), a zero-byte state file, and a state path that is a symlink
to another serve's state file.

Before (issue 19): a 477-byte configuration used 0.95 GB; a FIFO hung the start (``open``
waits for a writer); a zero-byte state file was taken as a fresh database (every offset and
count lost); two serves through a symlink wrote one database (500 of 1,000 acknowledged
events lost). Expected now: exit 2 with one plain line naming the file and the problem.
Every wait below is a bound on a hang, never a timing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.settings import ConfigError, load_settings
from tests.acceptance.service_process import REPO_ROOT, TOKEN, ServiceProcess
from tests.kafka_broker import free_port

#: A refused start takes about as long as importing the service; a hang never ends.
EXIT_TIMEOUT_S = 120

BOMB = "\n".join(
    ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    + [
        f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]"
        for p, c in zip("abcdefgh", "bcdefghi", strict=True)
    ]
)


def _goldwatch(*args: str, timeout: float = EXIT_TIMEOUT_S) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "service.cli", *args],
        cwd=REPO_ROOT, env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
        capture_output=True, text=True, check=False, timeout=timeout,
    )  # fmt: skip


def _serve(tmp_path: Path, config: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    base: dict[str, Any] = {
        "source": {"kind": "none"},
        "state": {"path": str(tmp_path / "state.sqlite")},
        "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN},
    }
    path = tmp_path / "goldwatch.yaml"
    path.write_text(yaml.safe_dump({**base, **config}), encoding="utf-8")
    return _goldwatch("serve", "--config", str(path))


def _refused(done: subprocess.CompletedProcess[str], *words: str) -> str:
    assert done.returncode == 2, (done.returncode, done.stderr[-2000:])
    assert "Traceback" not in done.stderr, done.stderr[-2000:]
    for word in words:
        assert word in done.stderr, (word, done.stderr[-2000:])
    return done.stderr


def test_an_alias_bomb_is_refused_before_it_is_built() -> None:
    assert len(BOMB) < 600  # 9^9 = 387,420,489 strings once expanded
    with pytest.raises(ConfigError, match="expands to more than 100000 values"):
        load_settings_from_text(BOMB)


def test_deep_nesting_is_refused() -> None:
    with pytest.raises(ConfigError, match="nested more than 64 levels"):
        load_settings_from_text("a: " + "[" * 100 + "]" * 100)
    with pytest.raises(ConfigError, match="nested more than 64 levels"):
        load_settings_from_text("a: " + "[" * 5000 + "]" * 5000)  # past Python's recursion


def load_settings_from_text(text: str) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "goldwatch.yaml"
        path.write_text(text, encoding="utf-8")
        load_settings(path)


@pytest.mark.slow
def test_config_check_exits_2_on_a_bomb_and_on_fifos(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(BOMB, encoding="utf-8")
    _refused(_goldwatch("config", "check", "--config", str(bomb)), "expands to more than")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    _refused(_goldwatch("config", "check", "--config", str(fifo)), str(fifo), "not a regular")
    for section, field in (("api", "token_file"), ("analytics", "pii_key_file"),
                           ("analytics", "topics_model")):  # fmt: skip
        config = tmp_path / f"{field}.yaml"
        config.write_text(yaml.safe_dump({section: {field: str(fifo)}}), encoding="utf-8")
        _refused(_goldwatch("config", "check", "--config", str(config)),
                 f"{section}.{field}", "not a regular")  # fmt: skip
    config = tmp_path / "gold.yaml"
    config.write_text(yaml.safe_dump({"gold_set": str(fifo)}), encoding="utf-8")
    _refused(_goldwatch("config", "check", "--config", str(config)), "gold_set", "not a regular")


@pytest.mark.slow
@pytest.mark.parametrize("field", ["gold_set", "corpus"])
def test_serve_exits_2_on_a_fifo_data_file(tmp_path: Path, field: str) -> None:
    fifo = tmp_path / f"{field}.jsonl"
    os.mkfifo(fifo)
    _refused(_serve(tmp_path, {field: str(fifo)}), str(fifo), "not a regular file")


@pytest.mark.slow
def test_serve_exits_2_on_a_fifo_or_an_empty_state_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "state.sqlite")
    _refused(_serve(tmp_path, {}), "not a regular file")
    (tmp_path / "state.sqlite").unlink()
    (tmp_path / "state.sqlite").write_bytes(b"")  # a truncated state file
    _refused(_serve(tmp_path, {}), "state.sqlite", "is empty", "move it aside")
    assert (tmp_path / "state.sqlite").stat().st_size == 0  # left for the operator


@pytest.mark.slow
def test_a_second_serve_through_a_symlinked_state_path_is_refused(tmp_path: Path) -> None:
    state = tmp_path / "state" / "state.sqlite"
    config = {"source": {"kind": "none"}, "state": {"path": str(state)},
              "analytics": {"enabled": False},
              "api": {"host": "127.0.0.1", "port": free_port(), "token": TOKEN}}  # fmt: skip
    first = ServiceProcess.start(tmp_path / "first", config)
    try:
        link = tmp_path / "elsewhere" / "state.sqlite"
        link.parent.mkdir()
        link.symlink_to(state)
        (tmp_path / "second").mkdir()
        second = {"state": {"path": str(link)}, "analytics": {"enabled": False}}
        _refused(_serve(tmp_path / "second", second), "in use by another goldwatch process",
                 f"pid {first.process.pid}")  # fmt: skip
        assert first.totals()["processed"] == 0  # the first keeps serving
    finally:
        assert first.terminate() == 0
