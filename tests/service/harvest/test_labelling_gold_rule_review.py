"""Review of s14-t1: an accept is checked by ``Runtime.gold_set_problem`` (the topic labels'
rule) before it appends, so that "an accept never leaves a file that the refresh, the next
start and ``config check`` refuse". The reload refuses more than that rule does."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from service.data.goldset import load_gold_set
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates
from service.runtime.analytics import fit_topic_model
from service.runtime.process import Runtime
from service.settings.sections import AnalyticsConfig
from service.state import StateStore
from tests.service.harvest.helpers import batch, event
from tests.service.harvest.test_labelling_api import AUTH, ids_by_question, labelling_client


def test_an_accept_labelled_with_the_reserved_novel_topic_is_refused_before_append(
    tmp_path: Path,
) -> None:
    gold = tmp_path / "gold.jsonl"
    rows = [{"id": f"q-{i:03d}", "question": f"question {i}", "gold": ["p-1"], "kind": "plain",
             "topic": "fees" if i < 3 else "exams"} for i in range(6)]  # fmt: skip
    gold.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    # the service's own rule, as serve wires it (analytics on, topics fitted on the gold set)
    service = SimpleNamespace(settings=SimpleNamespace(analytics=AnalyticsConfig(),
                                                       gold_set=gold))  # fmt: skip
    store = StateStore.in_memory()
    repo = StateStoreCandidates(store)
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo])
    stage.process(batch([event("e1", "hostel fee refund kab milega", minute=1)],
                        [{"refused": True}]))  # fmt: skip
    labelling = Labelling(repo, gold, HarvestConfig(),
                          gold_rule=lambda qs: Runtime.gold_set_problem(service, qs))  # fmt: skip
    client = labelling_client(labelling)
    cid = ids_by_question(client)["hostel fee refund kab milega"]
    before = gold.read_bytes()
    answer = client.post(f"/v1/gold-candidates/{cid}/accept", headers=AUTH,
                         json={"gold": ["p-1"], "kind": "plain", "topic": "novel"})  # fmt: skip
    # what the reload does with the file as the accept left it (the refresh and the next
    # start fit the topics on it: TopicModel.fit refuses 'novel' as a label)
    try:
        fit_topic_model(load_gold_set(gold), (), AnalyticsConfig().topics, True)
        reload_refuses = False
    except ValueError:
        reload_refuses = True
    assert not reload_refuses, "the accept left a gold-set file the reload refuses"
    assert answer.status_code == 422 and gold.read_bytes() == before
    assert "novel" not in answer.text.lower()  # the 4xx never echoes the label


def test_one_unlabelled_accept_does_not_turn_the_labels_into_clusters() -> None:
    from service.records import GoldQuestion
    from service.runtime.analytics import topic_label_rule

    labelled = [GoldQuestion(f"q-{i}", f"question {i}", ("p-1",),
                             topic="fees" if i < 3 else "exams") for i in range(6)]  # fmt: skip
    unlabelled = [GoldQuestion(f"q-{i}", f"question {i}", ("p-1",)) for i in range(6, 12)]
    assert topic_label_rule([*labelled, *unlabelled]).supervised  # 6 labelled >= 6 unlabelled
    # an accepted suggestion written without a label (the labeller confirmed no topic); the
    # accept writes its harvest_id into the row (labelling._gold_row), the loader reads it
    accepted = GoldQuestion("q-012", "hostel fee refund", ("p-1",), harvest_id="c-1")
    # fit_topic_model: "rows without one (an accepted suggestion written without a label ...)
    # are counted by the model's prediction ... so one unlabelled row never turns the gold
    # set's own labels into clusters"
    assert topic_label_rule([*labelled, *unlabelled, accepted]).supervised
    # any number of them: 6 labelled rows against the user's 6 unlabelled ones, as before
    many = [GoldQuestion(f"a-{i}", "fee", ("p-1",), harvest_id=f"c-{i}") for i in range(20)]
    assert topic_label_rule([*labelled, *unlabelled, *many]).supervised
    # a row the user wrote without a label still counts: 6 labelled < 7 unlabelled → clusters
    written = GoldQuestion("q-012", "hostel fee refund", ("p-1",))
    assert not topic_label_rule([*labelled, *unlabelled, written]).supervised


def test_an_unlabelled_accept_keeps_the_file_s_topics_supervised_through_the_loader(
    tmp_path: Path,
) -> None:
    """End to end: the row an accept writes (with ``harvest_id``), read back by the loader,
    leaves a 6-labelled / 6-unlabelled gold set's topics supervised (the labels' names)."""
    from service.harvest.labelling import _gold_row
    from service.runtime.analytics import topic_label_rule

    gold = tmp_path / "gold.jsonl"
    rows = [{"id": f"q-{i:03d}", "question": f"question {i}", "gold": ["p-1"]} for i in range(12)]
    for i in range(6):
        rows[i]["topic"] = "fees" if i < 3 else "exams"
    accepted = _gold_row("q-012", {"id": "c-7", "question": "hostel fee refund"}, ["p-1"],
                         "plain", {})  # fmt: skip
    gold.write_text("".join(json.dumps(r) + "\n" for r in [*rows, accepted]), encoding="utf-8")
    loaded = load_gold_set(gold)
    assert [q.harvest_id for q in loaded][-2:] == [None, "c-7"]
    assert topic_label_rule(list(loaded)).supervised
    model = fit_topic_model(loaded, (), AnalyticsConfig().topics, True)
    assert sorted(model.names) == ["exams", "fees"]
