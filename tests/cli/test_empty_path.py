"""An empty path option (``--history ''``) is a usage error naming the option.

``pathlib.Path("")`` is ``.``, the current folder: before the check ``goldwatch eval
--history ''`` failed after scoring with "error: .: not a regular file", about a path the
user never typed (the tenth new-user trial).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from service.cli import main


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["eval", "--demo", "--history", ""], "'--history'"),
        (["eval", "--demo", "--misses", " "], "'--misses'"),
        (["replay", ""], "'[FILE]'"),
        (["candidates", "export", "out.jsonl", "--state", ""], "'--state'"),
        (["config", "check", "--config", ""], "'--config'"),
    ],
)
def test_an_empty_path_is_a_usage_error_naming_the_option(
    args: list[str], option: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for {option}: an empty path names no file or folder" in result.output
    assert list(tmp_path.iterdir()) == []  # nothing was written before the refusal
