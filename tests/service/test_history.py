"""Run history rows: one per retriever per run, config hash stable under key order."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from service.evaluation.history import append_history, config_hash, history_row


def test_rows_append_and_hash_changes_with_config(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "runs.jsonl"
    when = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
    row1 = history_row(
        "bm25",
        {"kind": "bm25"},
        {"k": [10]},
        {"recall@10": 0.5},
        gold_set_version="abc",
        corpus_version="def",
        n_questions=4,
        now=when,
    )
    row2 = history_row(
        "bm25",
        {"kind": "bm25", "params": {"k1": 1.2}},
        {"k": [10]},
        {"recall@10": 0.6},
        gold_set_version="abc",
        corpus_version="def",
        n_questions=4,
        now=when,
    )
    append_history(path, [row1])
    append_history(path, [row2])
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    assert [r["metrics"]["recall@10"] for r in rows] == [0.5, 0.6]
    assert rows[0]["date"] == "2026-11-29T10:00:00+00:00"
    assert rows[0]["config_hash"] != rows[1]["config_hash"]
    assert len(rows[0]["config_hash"]) == 12
    assert config_hash({"a": 1}, {"b": 2}) != config_hash({"a": 1}, {"b": 3})
