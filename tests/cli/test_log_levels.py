"""The CLI's log levels: -v shows goldwatch's INFO lines, not every HTTP request httpx logs
(trial 24: one httpx INFO line per gold-set call of an ``http`` retriever); -vv shows both."""

from __future__ import annotations

import logging

import pytest

from service.cli import main


@pytest.mark.parametrize(
    ("flags", "goldwatch", "third_party"),
    [([], logging.WARNING, logging.WARNING), (["-v"], logging.INFO, logging.WARNING),
     (["-vv"], logging.DEBUG, logging.INFO)],
)  # fmt: skip
def test_verbosity_sets_the_root_and_third_party_levels(
    flags: list[str], goldwatch: int, third_party: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = logging.getLogger()
    monkeypatch.setattr(root, "handlers", [])  # basicConfig configures only a bare root
    monkeypatch.setattr(root, "level", root.level)
    saved = {name: logging.getLogger(name).level for name in ("httpx", "httpcore", "kafka")}
    try:
        main.callback(verbose=len(flags[0]) - 1 if flags else 0)  # type: ignore[misc]  # the group's body
        assert root.level == goldwatch
        for name in ("httpx", "httpcore", "kafka"):
            assert logging.getLogger(name).level == third_party, name
    finally:
        for name, level in saved.items():
            logging.getLogger(name).setLevel(level)
