"""``api.token_file``: the API token from a file (a mounted Secret), as ``pii_key_file`` and the
Kafka SASL password can be (fresh-user trial: the token was the only secret without one).
Same rules as ``pii_key_file``: one final newline stripped and nothing else around the token,
not both ``token`` and ``token_file``, an empty path is an error, masked by ``config check``;
every message names the field and the file, never the token."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import ConfigError, load_settings
from tests.cli.goldwatch_cli import run_goldwatch

TOKEN = "Zq7-file-token"  # "Zq7" marks leaks of the value


_run = run_goldwatch


def _token_file(tmp_path: Path, content: str) -> Path:
    path = tmp_path / "api-token"
    path.write_text(content, encoding="utf-8", newline="")
    return path


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""], ids=["lf", "crlf", "none"])
def test_the_file_token_guards_the_mutating_routes(tmp_path: Path, ending: str) -> None:
    token_file = _token_file(tmp_path, TOKEN + ending)
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        f"state:\n  path: {tmp_path / 'state.sqlite'}\napi:\n  token_file: {token_file}\n",
        encoding="utf-8",
    )
    settings = load_settings(config)
    assert settings.api.token is not None
    assert settings.api.token.get_secret_value() == TOKEN
    with TestClient(create_app(settings)) as client:
        right = client.post("/v1/events", json=[], headers={"Authorization": f"Bearer {TOKEN}"})
        wrong = client.post("/v1/events", json=[], headers={"Authorization": "Bearer other"})
    assert right.status_code == 200 and right.json()["received"] == 0, right.text
    assert wrong.status_code == 403


@pytest.mark.slow
def test_config_check_masks_the_file_token(tmp_path: Path) -> None:
    token_file = _token_file(tmp_path, TOKEN + "\n")
    result = _run(["config", "check"], tmp_path, {"GOLDWATCH_API__TOKEN_FILE": str(token_file)})
    assert result.returncode == 0, result.stderr
    api = json.loads(result.stdout)["api"]
    assert api["token"] == "***" and api["token_file"] == str(token_file)
    assert "Zq7" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read"),
        ("\n", "must not be empty or blank"),
        (" " + TOKEN + "\n", "must not begin or end with whitespace"),
        (TOKEN + "\n\n", "must not begin or end with whitespace"),
        (TOKEN + " \n", "must not begin or end with whitespace"),
        (TOKEN + "\x07\n", "must be printable ASCII"),
    ],
    ids=["missing", "empty", "leading-space", "two-newlines", "space-before-newline", "bell"],
)
def test_an_unusable_token_file_exits_2_naming_the_field_and_file(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    token_file = tmp_path / "api-token"
    if content is not None:
        _token_file(tmp_path, content)
    result = _run(["config", "check"], tmp_path, {"GOLDWATCH_API__TOKEN_FILE": str(token_file)})
    assert result.returncode == 2, result.stderr
    assert "  api.token_file: " in result.stderr and str(token_file) in result.stderr
    assert problem in result.stderr, result.stderr
    assert "Zq7" not in result.stdout + result.stderr


def test_serve_exits_2_on_an_unusable_token_file_before_creating_the_state(
    tmp_path: Path,
) -> None:
    state = tmp_path / "state.sqlite"
    token_file = _token_file(tmp_path, TOKEN + "\n\n")
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"state:\n  path: {state}\n", encoding="utf-8")
    result = _run(
        ["serve", "--config", str(config), "--port", "0"],
        tmp_path,
        {"GOLDWATCH_API__TOKEN_FILE": str(token_file)},
    )
    assert result.returncode == 2, result.stderr
    assert f"api.token_file: the token in {token_file}" in result.stderr
    assert not state.exists()


def test_token_and_token_file_together_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    token_file = _token_file(tmp_path, TOKEN + "\n")
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"api:\n  token_file: {token_file}\n", encoding="utf-8")
    monkeypatch.setenv("GOLDWATCH_API__TOKEN", "Zq7-the-other")
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    message = str(info.value)
    assert "give token or token_file, not both" in message, message
    assert "Zq7" not in message


@pytest.mark.parametrize("value", ["", " "])
def test_an_empty_token_file_path_is_an_error(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("GOLDWATCH_API__TOKEN_FILE", value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "  api.token_file: must not be empty" in str(info.value), str(info.value)
