"""Issue 18 item 1: the embedded demo data is used only when the user asks for it
(``--demo``); a user's gold set is never scored against the demo corpus, and replay and serve
without a gold set say so instead of measuring against the demo's."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.goldsets import write_squad2
from service.demo import demo_path
from tests.cli.goldwatch_cli import run_goldwatch


def _squad2(tmp_path: Path, shared_data: Path) -> tuple[Path, Path]:
    return write_squad2(tmp_path / "data", shared_data)


@pytest.mark.slow
def test_a_gold_set_without_a_corpus_is_an_error(tmp_path: Path, shared_data: Path) -> None:
    gold, _ = _squad2(tmp_path, shared_data)
    result = run_goldwatch(["eval", "--gold", str(gold), "--no-progress"], tmp_path)
    assert result.returncode == 2, result.stderr
    assert "no corpus" in result.stderr and "--corpus FILE" in result.stderr
    assert "corpus:" in result.stderr and "GOLDWATCH_CORPUS" in result.stderr
    assert result.stdout == ""  # no recall of 0 printed for a CI gate to pass on
    assert len(result.stderr.strip().splitlines()) == 1


@pytest.mark.slow
def test_no_gold_set_is_an_error_naming_the_ways_to_give_one(tmp_path: Path) -> None:
    result = run_goldwatch(["eval", "--no-progress"], tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    for hint in ("--gold FILE", "gold_set:", "GOLDWATCH_GOLD_SET", "--demo"):
        assert hint in result.stderr


@pytest.mark.slow
def test_a_corpus_holding_none_of_the_gold_ids_is_an_error(
    tmp_path: Path, shared_data: Path
) -> None:
    gold, _ = _squad2(tmp_path, shared_data)
    args = ["eval", "--gold", str(gold), "--corpus", str(demo_path("corpus.jsonl")),
            "--retriever", "bm25", "--no-progress"]  # fmt: skip
    result = run_goldwatch(args, tmp_path)
    assert result.returncode == 2 and result.stdout == ""
    cited = {g for line in gold.read_text().splitlines() for g in json.loads(line)["gold"]}
    assert len(cited) > 0
    assert f"none of its {len(cited)} gold passage id(s) is in corpus" in result.stderr


@pytest.mark.slow
def test_some_missing_gold_ids_are_one_warning_line(tmp_path: Path, shared_data: Path) -> None:
    gold, corpus = _squad2(tmp_path, shared_data)
    rows = [json.loads(line) for line in gold.read_text().splitlines()]
    cited = list(dict.fromkeys(g for row in rows for g in row["gold"]))
    dropped = set(cited[:30])
    citing = sum(1 for row in rows if dropped & set(row["gold"]))
    passages = [json.loads(line) for line in corpus.read_text().splitlines()]
    thinner = tmp_path / "thinner.jsonl"
    thinner.write_text(
        "".join(json.dumps(p) + "\n" for p in passages if p["id"] not in dropped),
        encoding="utf-8",
    )
    args = ["eval", "--gold", str(gold), "--corpus", str(thinner), "--retriever", "bm25",
            "--no-progress", "--format", "json"]  # fmt: skip
    result = run_goldwatch(args, tmp_path)
    assert result.returncode == 0, result.stderr
    warnings = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warnings) == 1, result.stderr
    assert f"30 gold id(s) of {citing} question(s) are not in corpus" in warnings[0]
    assert f"(first: {', '.join(repr(i) for i in cited[:5])}, …)" in warnings[0]
    assert json.loads(result.stdout)["retrievers"]["bm25"]["n_questions"] > 0
