"""The ``out_of_scope`` drift windows follow the out-of-scope detector they count under
(trial 48 H1): a gold-set change that recalibrates it to other verdicts starts them afresh,
with when and why in the report; one that leaves its verdicts as they were (a row's topic,
reference answer or source edited) or a rebuild on the same gold set (a restart) keeps
them."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.runtime.analytics import (
    Analytics,
    apply_scope_references,
    build_analytics,
    scope_references,
)
from service.settings import AnalyticsConfig


def _labeller() -> Any:
    from service.drift.stage import Labeller

    return Labeller("k")


#: Nothing like it is in the demo gold set or corpus (as tests/service/test_scope_refresh.py).
NEW_QUESTION = "Can I bring my pet iguana to the convocation ceremony?"


def _rows() -> list[dict[str, Any]]:
    return [json.loads(line) for line in demo_path("gold.jsonl").read_text("utf-8").splitlines()
            if line.strip()]  # fmt: skip


def _write(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def _refresh(analytics: Analytics, config: AnalyticsConfig, gold_path: Path) -> None:
    refresh = scope_references(analytics, config, load_gold_set(gold_path),
                               load_corpus(demo_path("corpus.jsonl")))  # fmt: skip
    assert refresh is not None
    apply_scope_references(analytics, refresh)


@pytest.mark.parametrize("method", ["embedding", "retriever"])
def test_the_out_of_scope_windows_restart_only_when_the_verdicts_may_change(
    tmp_path: Path, method: str
) -> None:
    config = AnalyticsConfig(scope_method=method)
    corpus = load_corpus(demo_path("corpus.jsonl"))
    rows = _rows()
    gold_path = _write(tmp_path / "gold.jsonl", rows)
    analytics = build_analytics(config, load_gold_set(gold_path), corpus)
    drift = analytics.drift
    assert drift is not None
    first = drift.labellers["out_of_scope"]
    assert first.name.startswith("embedding" if method == "embedding" else "bm25")
    # a rebuild on the same gold set (a restart): the same labeller
    again = build_analytics(config, load_gold_set(gold_path), corpus).drift
    assert again is not None and again.labellers["out_of_scope"] == first
    # fields the detector does not read: the same labeller, nothing restarted
    edited = [dict(row) for row in rows]
    edited[0] = {**edited[0], "topic": "hostel", "reference_answer": "changed", "source": "written"}
    _refresh(analytics, config, _write(tmp_path / "gold.jsonl", edited))
    assert drift.labellers["out_of_scope"] == first and drift.restarts == {}
    # an accepted unanswerable row: known out of scope from now on, and a refit
    accepted = [*rows, {"id": "q-accepted", "question": NEW_QUESTION, "gold": [],
                        "kind": "unanswerable", "harvest_id": "h-1"}]  # fmt: skip
    _refresh(analytics, config, _write(tmp_path / "gold.jsonl", accepted))
    assert drift.labellers["out_of_scope"].key != first.key
    restarted = drift.report()["out_of_scope"]["windows_restarted"]
    assert restarted["after_events"] == 0 and restarted["timestamp"] is None  # no event yet
    assert restarted["why"].startswith(
        "the out-of-scope detector was recalibrated on the changed gold set ("
    )
    assert restarted["why"].endswith("counts made under the two are not comparable")


def test_the_service_restarts_the_out_of_scope_windows_after_an_accept(tmp_path: Path) -> None:
    """Through the runtime's gold-set refresh (an accept over the API): ``/v1/drift``'s report
    says the restart."""
    from prometheus_client import CollectorRegistry

    from service.api.harvest_routes import drift_restart_cost
    from service.runtime.process import Runtime
    from service.settings import load_settings

    gold_path = _write(tmp_path / "gold.jsonl", _rows())
    events = tmp_path / "events.jsonl"
    events.write_text("", encoding="utf-8")
    settings = load_settings(gold_set=gold_path, corpus=demo_path("corpus.jsonl"),
                             source={"kind": "file", "path": events},
                             state={"path": tmp_path / "state.sqlite"})  # fmt: skip
    runtime = Runtime(settings, registry=CollectorRegistry())
    try:
        drift = runtime.live.analytics.drift
        assert drift is not None and drift.restarts == {}
        # the accept's answer says the cost (the default warm-up: 21,600 s, 6 h)
        assert drift_restart_cost(runtime) == (
            "an accept that changes the out-of-scope detector (the gold-set reload "
            "recalibrates it) restarts the out_of_scope drift warm-up: no out_of_scope drift "
            "test for the next 6 h of traffic (analytics.drift.warmup_s), and an open "
            "out_of_scope alarm ends (docs/drift.md)"
        )
        assert drift_restart_cost(None) is None
        row = {"id": "q-accepted", "question": NEW_QUESTION, "gold": [], "kind": "unanswerable"}
        with gold_path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(row) + "\n")
        runtime.gold_accepted(None)
        for thread in [t for t in threading.enumerate() if t.name == "goldwatch-gold-refresh"]:
            thread.join(120)
        assert runtime.gold_refresh_error is None and runtime.gold_refreshes == 1
        said = drift.report()["out_of_scope"]["windows_restarted"]["why"]
        assert said.startswith("the out-of-scope detector was recalibrated")
    finally:
        runtime.stop()


def test_a_new_gold_language_restarts_nothing_and_an_unlabelled_row_keeps_the_topics(
    tmp_path: Path,
) -> None:
    """A row in a language the gold set lacked changes the language detector's expected
    languages: that restarts no windows (the language windows carry the stream's event-time
    clock; docs/drift.md). The demo's topics are its labels; the row has none, so the topic
    model and its windows stay (the topic windows restart only with the model's assignment,
    tests/service/drift/test_topic_model_restart.py)."""
    from service.runtime.analytics import apply_gold_references, gold_references

    config = AnalyticsConfig(scope_method="off")
    corpus = load_corpus(demo_path("corpus.jsonl"))
    rows = _rows()
    analytics = build_analytics(config, load_gold_set(_write(tmp_path / "g.jsonl", rows)), corpus)
    drift = analytics.drift
    assert drift is not None and "out_of_scope" not in drift.labellers  # (scope off)
    german = {"id": "q-de", "question": "Wie hoch sind die Studiengebühren im ersten Jahr?",
              "gold": ["p-0002"], "kind": "plain", "language": "de"}  # fmt: skip
    gold = load_gold_set(_write(tmp_path / "g.jsonl", [*rows, german]))
    apply_gold_references(analytics, *gold_references(analytics, config, gold))
    assert drift.restarts == {}
    with pytest.raises(ValueError, match="no labeller"):
        drift.set_labeller("language", drift.labellers.get("x") or _labeller(), "x")
