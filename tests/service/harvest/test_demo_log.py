"""Harvesting the real demo query log through the real analytics stages: reasons found, no
near-duplicate suggestions, no planted personal data in any output, a replay adds nothing."""

from __future__ import annotations

import json
import re
from itertools import combinations

import pytest

from service.data.corpus import load_corpus
from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.demo.querylog import PII_EVENT_IDS
from service.events import QueryLogEvent
from service.harvest.config import HarvestConfig
from service.harvest.export import export_rows
from service.harvest.ranking import select
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates
from service.harvest.text import jaccard, trigrams
from service.pipeline import Pipeline
from service.pipeline.dedup import DedupStage
from service.runtime.analytics import build_analytics
from service.settings import load_settings
from service.text.wording import may_merge

# The digits and addresses of the planted items (planted_pii in service/demo/questions.yaml)
PLANTED = re.compile(r"@example\.|98765|[A-Z]{5}\d{4}[A-Z]|\d{4} \d{4} \d{4}")


@pytest.fixture(scope="module")
def harvested() -> tuple[HarvestStage, MemoryCandidates, list[QueryLogEvent], Pipeline]:
    settings = load_settings(None)
    gold = load_gold_set(demo_path("gold.jsonl"))
    analytics = build_analytics(settings.analytics, gold, load_corpus(demo_path("corpus.jsonl")))
    repo = MemoryCandidates()
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), analytics.gold_counts, list(gold),
                         sinks=[repo])  # fmt: skip
    pipeline = Pipeline([*analytics.stages, stage])
    with demo_path("querylog.jsonl").open("rb") as handle:
        events = [QueryLogEvent.model_validate_json(line) for line in handle]
    for start in range(0, len(events), 500):
        pipeline.process(events[start : start + 500], "file")
    return stage, repo, events, pipeline


@pytest.mark.slow
def test_reasons_of_the_planted_shifts_are_found(harvested: tuple) -> None:
    stage, repo, _, _ = harvested
    reasons = {r for row in repo.all() for r in row["reasons"]}
    assert {"coverage_gap", "refused", "negative_feedback", "low_confidence"} <= reasons
    # The demo's out-of-scope detector keeps 95 % of the answerable gold rows in scope only
    # by letting 11 of its 12 unanswerable rows pass too (balanced accuracy 0.53 < 0.68):
    # its verdicts are not facts, so they suggest nothing (trial finding 3).
    assert "answered_out_of_scope" not in reasons
    # phase C drops the SEE timetable: refused exam-schedule questions are suggested
    assert any(row["topic"] == "exams" and "refused" in row["reasons"] for row in repo.all())


def test_no_two_of_the_top_100_are_near_duplicates(harvested: tuple) -> None:
    stage, _, _, _ = harvested
    top = select(stage.suggestions.values(), stage.config, 100)
    assert len(top) == 100
    # near-duplicates by trigrams may both be there only when they ask different questions
    # (harvest's merge rule: "fee for 1st year" is not "fee")
    pairs = [(a.normalised, b.normalised) for a, b in combinations(top, 2)]
    assert not [(a, b) for a, b in pairs if jaccard(trigrams(a), trigrams(b))
                >= stage.config.similarity and may_merge(a, b)]  # fmt: skip


def test_planted_personal_data_reaches_no_output(harvested: tuple, caplog) -> None:
    stage, repo, events, _ = harvested
    planted = [e for e in events if e.event_id in PII_EVENT_IDS]
    assert planted and all(PLANTED.search(e.question) for e in planted)  # the raw log has them
    outputs = [
        json.dumps(repo.all(), ensure_ascii=False),
        json.dumps(stage.state_snapshot(), ensure_ascii=False),
        json.dumps(export_rows(repo, stage.config), ensure_ascii=False),
        json.dumps(stage.pending_observations()),
        caplog.text,
    ]
    assert not any(PLANTED.search(text) for text in outputs)


def test_replaying_the_log_changes_nothing(harvested: tuple) -> None:
    stage, repo, events, pipeline = harvested
    before = repo.all()
    replay = Pipeline([DedupStage(100_000), *pipeline.stages])
    replay.restore({"stage/dedup": [e.event_id for e in events]})  # as checkpointed
    for start in range(0, len(events), 500):  # the whole log delivered again
        replay.process(events[start : start + 500], "file")
    stage.flush(force=True)
    assert repo.all() == before
