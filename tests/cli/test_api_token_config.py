"""An API token no request can match is a configuration error at start (fresh-user trial):
``GOLDWATCH_API__TOKEN=""`` or ``api.token: ""`` used to be accepted, after which every
``POST`` was refused. ``goldwatch serve`` and ``goldwatch config check`` now exit 2 naming
``api.token`` and the problem, never the value; an unset token still means "mutating routes
refused" (403), as documented."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.api.app import create_app
from service.settings import ConfigError, load_settings, token_problem
from tests.cli.goldwatch_cli import run_goldwatch

#: Part of the bad tokens below, to check that no message echoes the value.
MARK = "Zq7-visible-part"


_run = run_goldwatch


@pytest.mark.parametrize(
    ("token", "problem"),
    [
        ("", "must not be empty or blank"),
        ("   ", "must not be empty or blank"),
        ("\t\n", "must not be empty or blank"),
        (f"{MARK}\n", "must not begin or end with whitespace"),
        (f" {MARK}", "must not begin or end with whitespace"),
        (f"{MARK}\x00x", "must be printable ASCII"),
        (f"{MARK}é", "must be printable ASCII"),
    ],
)
def test_unusable_tokens_are_refused_naming_the_field(
    tmp_path: Path, token: str, problem: str
) -> None:
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"api:\n  token: {json.dumps(token)}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_settings(config)
    message = str(info.value)
    assert f"  api.token: {problem}" in message, message
    assert MARK not in message


def test_usable_tokens_and_unset_are_accepted(tmp_path: Path) -> None:
    # printable ASCII with inner spaces and every RFC 6750 b64token character
    for token in ("a", "tok en", "AZaz09-._~+/=", "!\"#$%&'()*,:;<>?@[\\]^`{|}"):
        assert token_problem(token) is None, token
    config = tmp_path / "goldwatch.yaml"
    config.write_text("api:\n  port: 8000\n", encoding="utf-8")
    assert load_settings(config).api.token is None


def test_config_check_exits_2_on_an_empty_yaml_token(tmp_path: Path) -> None:
    (tmp_path / "goldwatch.yaml").write_text('api:\n  token: ""\n', encoding="utf-8")
    result = _run(["config", "check", "--config", "goldwatch.yaml"], tmp_path, {})
    assert result.returncode == 2, result.stderr
    assert "api.token: must not be empty or blank" in result.stderr
    assert "Traceback" not in result.stderr


def test_config_check_exits_2_on_a_blank_env_token_without_echoing_it(tmp_path: Path) -> None:
    result = _run(["config", "check"], tmp_path, {"GOLDWATCH_API__TOKEN": f"{MARK} \n"})
    assert result.returncode == 2, result.stderr
    assert "api.token: must not begin or end with whitespace" in result.stderr
    assert MARK not in result.stderr + result.stdout


def test_serve_exits_2_on_an_empty_env_token_before_starting(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"state:\n  path: {state}\n", encoding="utf-8")
    result = _run(
        ["serve", "--config", str(config), "--port", "0"], tmp_path, {"GOLDWATCH_API__TOKEN": ""}
    )
    assert result.returncode == 2, result.stderr
    assert "api.token: must not be empty or blank" in result.stderr
    assert "API, docs and metrics" not in result.stderr  # no banner: it never started
    assert not state.exists()


def test_an_unset_token_still_refuses_mutating_routes(tmp_path: Path) -> None:
    config = tmp_path / "goldwatch.yaml"
    config.write_text(f"state:\n  path: {tmp_path / 'state.sqlite'}\n", encoding="utf-8")
    settings = load_settings(config)
    assert settings.api.token is None
    with TestClient(create_app(settings)) as client:
        answer = client.post("/v1/events", json=[], headers={"Authorization": "Bearer anything"})
    assert answer.status_code == 403
    assert answer.json()["detail"] == "mutating endpoints are disabled: set api.token"
