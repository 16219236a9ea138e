"""Issue 22 item 5: every structure that grows with traffic is bounded by a setting.

``benchmarks.bench_memory`` found two that grew over a 1,000,000-event production-shaped
replay bounded only by constants of the code: the PII stage's memos of scrubbed texts and
``user.id`` pseudonyms (65,536 each, at 47,589 texts and 20,000 ids by the end) and the live
quality stage's recently matched events (100,000; 25,211 by the end, still growing). They are
now ``analytics.pii_memo_size`` and ``shadow.known_recent_events``: set small, the live
pipeline holds no more than that; the memos are caches, so their size changes no result.
"""

from __future__ import annotations

import json
from itertools import islice
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.demo import demo_data, demo_path
from service.events import QueryLogEvent
from service.pii import PiiScrubStage, Pseudonymiser
from service.pipeline import Batch
from service.runtime.live import build_live
from service.settings import ConfigError, load_settings

STAMP = "2026-11-29T10:00:00Z"


def _events(n: int) -> list[QueryLogEvent]:
    """``n`` events with distinct questions (every fifth with an e-mail address in it),
    distinct answers and distinct ``user.id`` values (every third an e-mail address)."""
    return [
        QueryLogEvent.model_validate({
            "event_id": f"e-{i}", "timestamp": STAMP,
            "question": f"hostel fee {i}?" + (f" mail ana.{i}@example.com" if i % 5 == 0 else ""),
            "user": {"id": f"u.{i}@example.com" if i % 3 == 0 else f"u-{i}"},
            "answer": {"text": f"The fee is {i} rupees."},
        })
        for i in range(n)
    ]  # fmt: skip


def _scrubbed(stage: PiiScrubStage, events: list[QueryLogEvent]) -> tuple[list[Any], list[Any]]:
    batch = Batch.of(events, "test")
    stage.process(batch)
    return [e.model_dump(mode="json") for e in batch.events], batch.annotations


def test_pii_memo_size_bounds_both_memos_and_changes_no_result() -> None:
    events = _events(40)
    small = PiiScrubStage(Pseudonymiser(memo_size=3), memo_size=3)
    none = PiiScrubStage(Pseudonymiser(memo_size=0), memo_size=0)
    default = PiiScrubStage(Pseudonymiser())  # a fresh one: UNKEYED is shared
    out_small, out_none, out_default = (_scrubbed(s, events) for s in (small, none, default))
    assert out_small == out_none == out_default
    # 40 distinct questions + 40 distinct answers, 40 distinct ids: at most 3 of each kept
    assert 1 <= len(small.memo) <= 3 and 1 <= small.pseudonymiser.remembered <= 3
    assert len(none.memo) == 0 and none.pseudonymiser.remembered == 0
    # ids the pseudonymiser remembers: the 14 e-mail ids (i % 3 == 0) and the plain ids of
    # the 5 events whose question changed (i = 5, 10, 20, 25, 35: scrub_event's labels); a
    # plain id of an unchanged event is decided by its shape (scrub_events), not remembered
    assert len(default.memo) == 80 and default.pseudonymiser.remembered == 14 + 5
    # the scrubbing itself, worked out by hand for one event of each kind
    questions = [e["question"] for e in out_small[0]]
    assert questions[5] == "hostel fee 5? mail <EMAIL>" and questions[1] == "hostel fee 1?"
    assert out_small[1][5] == {"pii": {"email": 1}} and out_small[1][1] == {"pii": {}}
    users = [e["user"]["id"] for e in out_small[0]]
    assert users[1] == "u-1" and users[3].startswith("pii-") and users[3] != users[6]


@pytest.mark.parametrize(
    "section, name, least",
    [("analytics", "pii_memo_size", 0), ("shadow", "known_recent_events", 1)],
)  # fmt: skip
def test_the_bounds_are_validated(section: str, name: str, least: int) -> None:
    settings = load_settings(None, **{section: {name: least}})
    assert getattr(getattr(settings, section), name) == least
    with pytest.raises(ConfigError, match=rf"{section}\.{name}: Input should be greater than "
                                          rf"or equal to {least}"):  # fmt: skip
        load_settings(None, **{section: {name: least - 1}})


def test_the_defaults_are_the_documented_ones() -> None:
    settings = load_settings(None)
    assert settings.analytics.pii_memo_size == 65_536
    assert settings.shadow.known_recent_events == 100_000


@pytest.mark.slow  # builds the demo's live pipeline (its models): ~5 s
def test_the_live_pipeline_holds_no_more_than_the_settings_say() -> None:
    settings = load_settings(
        demo_path("goldwatch.yaml"), **demo_data(), shadow={"candidates": [],
        "known_recent_events": 2}, analytics={"pii_memo_size": 3},
    )  # fmt: skip
    live = build_live(settings, CollectorRegistry(), None)
    pii = next(stage for stage in live.pipeline.stages if stage.name == "pii")
    assert isinstance(pii, PiiScrubStage) and pii.memo.size == 3
    assert live.quality is not None and live.quality.max_events == 2
    with demo_path("querylog.jsonl").open(encoding="utf-8") as lines:
        events = [QueryLogEvent.model_validate(json.loads(line)) for line in islice(lines, 300)]
    live.pipeline.process(events, "test")
    assert len({e.question for e in events}) > 3  # more distinct texts than the bound
    assert len(pii.memo) <= 3 and pii.pseudonymiser.remembered <= 3
    assert len(live.quality._recent) <= 2  # the stage's eviction: tests/service/test_quality.py
