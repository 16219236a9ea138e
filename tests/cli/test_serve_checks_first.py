"""What serve would refuse, config check refuses, and serve refuses it before it creates
anything (fresh-user trial):

* ``state.path`` naming a folder (``/tmp``) passed ``config check`` and then failed serve
  ("not a regular file"); config check now names it, without creating anything.
* a bad ``analytics.pii_key_file`` made serve exit 2 only after it had created the state file
  (and its folder); the secrets are now checked before the state is opened.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.goldwatch_cli import run_goldwatch

KEY = "Zq7-" + "0123456789abcdef" * 2


_run = run_goldwatch


def _config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "goldwatch.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.slow
def test_config_check_refuses_a_state_path_that_is_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "state-folder"
    folder.mkdir()
    config = _config(tmp_path, f"state:\n  path: {folder}\n")
    result = _run(["config", "check", "--config", str(config)], tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"state.path: {folder} is not a regular file" in result.stderr, result.stderr
    assert list(folder.iterdir()) == []  # nothing created in it
    # serve refuses the same path for the same reason
    served = _run(["serve", "--config", str(config), "--port", "0"], tmp_path)
    assert served.returncode == 2 and "not a regular file" in served.stderr, served.stderr


def test_config_check_refuses_a_state_folder_below_a_file(tmp_path: Path) -> None:
    blocker = tmp_path / "plain-file"
    blocker.write_text("x", encoding="utf-8")
    config = _config(tmp_path, f"state:\n  path: {blocker / 'sub' / 'state.sqlite'}\n")
    result = _run(["config", "check", "--config", str(config)], tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"state.path: cannot create {blocker / 'sub'}: {blocker} is not a folder" in (
        result.stderr
    ), result.stderr


@pytest.mark.slow
def test_config_check_creates_nothing_for_a_state_path_to_be_made(tmp_path: Path) -> None:
    state = tmp_path / "new" / "deeper" / "state.sqlite"
    config = _config(tmp_path, f"state:\n  path: {state}\n")
    result = _run(["config", "check", "--config", str(config)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_serve_checks_the_key_file_before_creating_the_state(tmp_path: Path) -> None:
    state = tmp_path / "state-dir" / "state.sqlite"
    key_file = tmp_path / "pii-key"
    key_file.write_text(KEY + "\n\n", encoding="utf-8")  # a second newline: refused
    config = _config(tmp_path, f"state:\n  path: {state}\nanalytics:\n  pii_key_file: {key_file}\n")
    result = _run(["serve", "--config", str(config), "--port", "0"], tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"analytics.pii_key_file: the key in {key_file}" in result.stderr, result.stderr
    assert "Zq7" not in result.stderr
    assert not state.exists() and not state.parent.exists()
    missing = tmp_path / "missing-key"
    config = _config(tmp_path, f"state:\n  path: {state}\nanalytics:\n  pii_key_file: {missing}\n")
    result = _run(["serve", "--config", str(config), "--port", "0"], tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"analytics.pii_key_file: cannot read {missing}" in result.stderr, result.stderr
    assert not state.parent.exists()
