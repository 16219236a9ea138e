"""``goldwatch topics fit`` / ``topics show``: labels, natural order, novelty quality, and
``--previous`` keeping the topic ids of an earlier artefact."""

from __future__ import annotations

import json
import re
from pathlib import Path

from click.testing import CliRunner

from service.cli import main
from service.topics.model import topic_sort_key
from tests.service.test_topic_ids_service import _gold
from tests.service.test_topics import BUSES, EXAMS, FEES, _content_name
from tests.service.topics.test_kappa_gate import _write


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
    expected = [_content_name(FEES), _content_name(EXAMS), _content_name(BUSES)]
    assert [t["name"] for t in doc["topics"]] == sorted(expected, key=topic_sort_key)
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


def test_show_states_the_kappa_and_its_gate_as_the_replay_report(tmp_path: Path) -> None:
    """``topics show`` printed a supervised model's agreement but not its Cohen's kappa nor
    the gate the service applies to it (s38): now the replay report's words, against the
    floor of ``--config`` (``analytics.topics.min_kappa``). The same model is calibrated
    under the default floor (0.4) and UNCALIBRATED under a floor above its kappa; the JSON
    has the replay report's ``kappa``, ``chance``, ``min_kappa`` and ``uncalibrated``."""
    config = _write(tmp_path, rotated=False)  # 30 rows, three clearly separate topics
    out = tmp_path / "topics.model"
    fitted = CliRunner().invoke(main, ["topics", "fit", "--config", str(config), "--out",
                                       str(out)])  # fmt: skip
    assert fitted.exit_code == 0, fitted.output
    replay = CliRunner().invoke(main, ["replay", str(tmp_path / "log.jsonl"), "--config",
                                       str(config)])  # fmt: skip
    assert replay.exit_code == 0, replay.output
    stated = re.search(r"Cohen's kappa [-0-9.]+ \[[^]]+\] \(95 % interval[^)]*\)", replay.output)
    assert stated is not None
    shown = CliRunner().invoke(main, ["topics", "show", str(out), "--config", str(config)])
    assert shown.exit_code == 0, shown.output
    assert stated.group(0) in shown.output  # the replay report's figure and words
    assert "topic assignment calibrated: Cohen's kappa" in shown.output
    strict = tmp_path / "strict.yaml"
    strict.write_text(config.read_text() + "  topics:\n    min_kappa: 0.99\n")
    doc = json.loads(CliRunner().invoke(main, ["topics", "show", str(out), "--config",
                                               str(strict), "--json"]).output)  # fmt: skip
    assert doc["min_kappa"] == 0.99 and doc["kappa"] < 0.99 and 0 < doc["chance"] < 1
    assert doc["uncalibrated"].endswith("< 0.99 (analytics.topics.min_kappa): too low to act on")
    text = CliRunner().invoke(main, ["topics", "show", str(out), "--config", str(strict)])
    assert "topic assignment UNCALIBRATED (its shares are the model's reading" in text.output


def test_show_json_gives_each_topic_its_label_note(tmp_path: Path) -> None:
    # a topic whose terms are of one question each says so: the note is a field of its own
    # (None when there is none) as well as part of the label
    from service.topics.model import TopicModel

    gold = _gold(tmp_path / "gold.jsonl", FEES + EXAMS + BUSES)
    out = tmp_path / "topics.model"
    _fit("--gold", str(gold), "--n-topics", "3", "--out", str(out))
    model = TopicModel.load(out)
    state = model.fitted_state()
    ids = [t.id for t in model.topics]
    state["label_notes"] = {ids[1]: "each term in one of its 6 questions"}
    TopicModel(state, model.version).save(out)
    shown = CliRunner().invoke(main, ["topics", "show", str(out), "--json"])
    assert shown.exit_code == 0, shown.output
    topics = {t["id"]: t for t in json.loads(shown.output)["topics"]}
    assert [topics[i]["label_note"] for i in ids] == [
        None, "each term in one of its 6 questions", None]  # fmt: skip
    terms = ", ".join(topics[ids[1]]["top_terms"][:3])
    assert topics[ids[1]]["label"] == (
        f"topic-{ids[1]}: {terms} (each term in one of its 6 questions)"
    )
