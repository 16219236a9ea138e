"""``goldwatch topics fit`` / ``topics show``: labels, natural order, novelty quality, and
``--previous`` keeping the topic ids of an earlier artefact."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from service.cli import main
from tests.service.test_topic_ids_service import _gold
from tests.service.test_topics import BUSES, EXAMS, FEES


def _fit(*args: str) -> str:
    result = CliRunner().invoke(main, ["topics", "fit", "--cluster", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_fit_then_show_lists_labelled_topics_and_the_novelty_quality(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    out = tmp_path / "topics.model"
    text = _fit("--gold", str(gold), "--n-topics", "3", "--out", str(out))
    assert "3 unsupervised topics" in text and "novelty: ROC AUC" in text
    shown = CliRunner().invoke(main, ["topics", "show", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    doc = json.loads(shown.output)
    assert [t["name"] for t in doc["topics"]] == ["topic-0", "topic-1", "topic-2"]
    assert sum(t["size"] for t in doc["topics"]) == 18
    for topic in doc["topics"]:
        assert topic["label"] == f"{topic['name']}: {', '.join(topic['top_terms'][:3])}"
        assert topic["label"] in text and topic["examples"]
    assert 0.5 <= doc["novelty_quality"]["auc"] <= 1.0


def test_fit_with_previous_keeps_the_topic_ids(tmp_path: Path) -> None:
    first, second = tmp_path / "a.model", tmp_path / "b.model"
    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    _fit("--gold", str(gold), "--n-topics", "3", "--out", str(first))
    _gold(gold, [*(FEES + EXAMS + BUSES)[::-1], "bus pass renewal"])
    _fit("--gold", str(gold), "--n-topics", "3", "--previous", str(first), "--out", str(second))
    labels = []
    for path in (first, second):
        doc = json.loads(CliRunner().invoke(main, ["topics", "show", str(path), "--json"]).output)
        labels.append({t["name"]: set(t["examples"]) for t in doc["topics"]})
    for name, examples in labels[0].items():
        assert examples & labels[1][name], name  # the same topic under the same id
