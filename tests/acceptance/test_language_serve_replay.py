"""``goldwatch serve`` of a file gives the languages a ``goldwatch replay`` of it gives.

A serve's batches depend on timing (how much of the file a poll finds, ``max_batch_wait_ms``);
the language stage's prior without a gold set was taken once per batch, so the language
shares of a served file moved from run to run and from a replay's (forty-third session).
Here the 320 real short questions of ``tests/service/test_language_batching.py`` are served
at batches of at most 7 and replayed at 500: the language counts must be equal (the old rule:
serve en 181 / und 1, replay en 162 / und 24 without a gold set).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.acceptance.conftest import file_config
from tests.service.test_language_batching import _log, _questions, _replay

pytestmark = pytest.mark.slow


@pytest.mark.parametrize("gold", [False, True], ids=["no gold set", "demo gold set"])
def test_serve_of_a_file_counts_the_languages_a_replay_of_it_counts(
    start_service: Any, shared_data: Path, tmp_path: Path, gold: bool
) -> None:
    from service.demo import demo_path

    log = _log(tmp_path / "questions.jsonl", _questions(shared_data))
    replayed = _replay(log, tmp_path / "replay", 500, gold)["analytics"]["languages"]
    config = file_config(log, state=tmp_path / "state.sqlite",
                         pipeline={"max_batch_size": 7, "max_batch_wait_ms": 5})  # fmt: skip
    if gold:
        config |= {"gold_set": str(demo_path("gold.jsonl")),
                   "corpus": str(demo_path("corpus.jsonl"))}  # fmt: skip
    service = start_service(tmp_path / "serve", config)
    service.wait_until(lambda s: s["totals"]["processed"] >= 320, what="file read")
    drift = service.get("/v1/drift").json()
    served = drift["language"]["live_counts"]
    assert served == replayed
    assert sum(served.values()) == 320 and served.get("en", 0) > 150
