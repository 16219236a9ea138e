"""The pseudonym key is the same secret however it is supplied (fresh-user trial):
``GOLDWATCH_ANALYTICS__PII_KEY`` with a trailing newline used to be accepted and hashed with
the newline, while ``analytics.pii_key_file`` strips one final newline, so the same secret gave
other pseudonyms after switching and every redelivery was counted again. A key a person cannot
tell apart from another (surrounding whitespace, a control or non-ASCII character) is now a
configuration error naming the field, never the value, as ``api.token`` is; a key file may end
with one newline and nothing else around the key; an empty key-file path is an error, not the
current folder."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.settings import ConfigError, load_settings
from tests.cli.goldwatch_cli import run_goldwatch

KEY = "Zq7-" + "0123456789abcdef" * 2  # 36 characters; "Zq7" marks leaks of the value


_run = run_goldwatch


@pytest.mark.parametrize(
    ("key", "problem"),
    [
        (KEY + "\n", "must not begin or end with whitespace"),
        (KEY + "\r\n", "must not begin or end with whitespace"),
        (" " + KEY, "must not begin or end with whitespace"),
        (KEY + "\t", "must not begin or end with whitespace"),
        (KEY[:10] + "\x7f" + KEY[10:], "must be printable ASCII"),
        (KEY[:10] + "\x1b" + KEY[10:], "must be printable ASCII"),
        (KEY + "\u00e9", "must be printable ASCII"),  # é and e + U+0301 look alike
    ],
)
def test_indistinguishable_env_keys_are_refused_naming_the_field(
    monkeypatch: pytest.MonkeyPatch, key: str, problem: str
) -> None:
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__PII_KEY", key)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert f"  analytics.pii_key: {problem}" in message, message
    assert "Zq7" not in message


def test_config_check_exits_2_on_an_env_key_with_a_newline(tmp_path: Path) -> None:
    result = _run(["config", "check"], tmp_path, {"GOLDWATCH_ANALYTICS__PII_KEY": KEY + "\n"})
    assert result.returncode == 2, result.stderr
    assert "analytics.pii_key: must not begin or end with whitespace" in result.stderr
    assert "Zq7" not in result.stdout + result.stderr


def test_a_key_with_inner_spaces_is_accepted_and_kept_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = KEY[:16] + " " + KEY[16:]
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__PII_KEY", key)
    assert load_settings().analytics.pii_key_bytes() == key.encode("ascii")


@pytest.mark.parametrize("ending", ["\n", "\r\n", ""], ids=["lf", "crlf", "none"])
def test_a_key_file_with_one_final_newline_gives_the_env_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ending: str
) -> None:
    key_file = tmp_path / "pii-key"
    key_file.write_bytes((KEY + ending).encode("ascii"))
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__PII_KEY_FILE", str(key_file))
    from_file = load_settings().analytics.pii_key_bytes()
    monkeypatch.delenv("GOLDWATCH_ANALYTICS__PII_KEY_FILE")
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__PII_KEY", KEY)
    assert from_file == load_settings().analytics.pii_key_bytes() == KEY.encode("ascii")


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (" " + KEY + "\n", "must not begin or end with whitespace"),
        (KEY + " \n", "must not begin or end with whitespace"),
        (KEY + "\n\n", "must not begin or end with whitespace"),
        (KEY + "\t\n", "must not begin or end with whitespace"),
        (KEY[:10] + "\x07" + KEY[10:] + "\n", "must be printable ASCII"),
    ],
    ids=["leading-space", "space-before-newline", "two-newlines", "tab", "bell"],
)
def test_a_key_file_with_more_around_the_key_is_refused_naming_the_file(
    tmp_path: Path, content: str, problem: str
) -> None:
    key_file = tmp_path / "pii-key"
    key_file.write_text(content, encoding="utf-8", newline="")
    (tmp_path / "goldwatch.yaml").write_text(
        f"analytics:\n  pii_key_file: {key_file}\n", encoding="utf-8"
    )
    settings = load_settings(tmp_path / "goldwatch.yaml")
    with pytest.raises(ValueError, match=r"^analytics\.pii_key_file: ") as info:
        settings.analytics.pii_key_bytes()
    message = str(info.value)
    assert str(key_file) in message and problem in message, message
    assert "Zq7" not in message
    result = _run(["config", "check", "--config", "goldwatch.yaml"], tmp_path, {})
    assert result.returncode == 2, result.stderr
    assert f"analytics.pii_key_file: the key in {key_file} {problem}" in result.stderr
    assert "Zq7" not in result.stdout + result.stderr


@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_key_file_path_is_an_error_not_the_current_folder(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__PII_KEY_FILE", value)
    with pytest.raises(ConfigError) as info:
        load_settings()
    assert "  analytics.pii_key_file: must not be empty" in str(info.value), str(info.value)
