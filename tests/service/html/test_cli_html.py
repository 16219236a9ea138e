"""``--html`` on ``goldwatch eval`` (in process, with click's runner, on a two-passage corpus)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from service.cli import EXIT_USAGE, main
from tests.service.html.structure import parse


def _inputs(tmp_path: Path) -> list[str]:
    corpus = [{"id": "p-1", "text": "hostel fee is paid each semester", "doc": "fees.pdf"},
              {"id": "p-2", "text": "exam schedule for december", "doc": "exams.pdf"}]  # fmt: skip
    gold = [
        {"id": "q-1", "question": "hostel fee semester", "gold": ["p-1"]},
        {"id": "q-2", "question": "<b>library</b> hours", "gold": ["p-2"]},
    ]  # a miss
    for name, rows in (("corpus.jsonl", corpus), ("gold.jsonl", gold)):
        (tmp_path / name).write_text("".join(json.dumps(r) + "\n" for r in rows))
    files = ["--gold", str(tmp_path / "gold.jsonl"), "--corpus", str(tmp_path / "corpus.jsonl")]
    return ["eval", "--no-progress", "--retriever", "bm25", "--k", "1,2", *files]


@pytest.fixture(autouse=True)
def _in_tmp_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run in ``tmp_path``: eval writes its run history and misses to the working folder
    (``eval.history``/``eval.misses`` defaults), which was the checkout every session shares."""
    monkeypatch.chdir(tmp_path)


def test_eval_html_written(tmp_path: Path) -> None:
    out = tmp_path / "reports" / "eval.html"
    result = CliRunner().invoke(main, [*_inputs(tmp_path), "--html", str(out)])
    assert result.exit_code == 0, result.output
    assert f"goldwatch: HTML report written to {out}" in result.stderr
    page = out.read_text(encoding="utf-8")
    assert parse(page).sections == [
        "overall", "curves", "breakdown", "misses", "unanswerable", "comparison"
    ]  # fmt: skip
    assert "&lt;b&gt;library&lt;/b&gt; hours" in page and "<b>library" not in page
    assert (tmp_path / "goldwatch-runs.jsonl").is_file()  # here, not in the checkout


def test_eval_html_unwritable_path_is_a_usage_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("")
    result = CliRunner().invoke(main, [*_inputs(tmp_path), "--html", str(blocker / "x.html")])
    assert result.exit_code == EXIT_USAGE
    assert "goldwatch: error:" in result.stderr
