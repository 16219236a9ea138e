"""A shadow verdict and its event give the same suggestion whichever comes first, also for a
question near a gold question (trial 47 L1's class of bug: serve folds a result in before
its event's batch reaches the harvest stage when the call finishes fast, after it when
slow; a replay always before).

The event's question is judged by the live-quality stage (its ``known`` annotation), the
verdict's by the same annotation carried on the result (``ShadowResult.known``). Before, a
verdict that came first ran the harvest's own gold near-duplicate check, which the quality
stage had not found: "when are hostel fees due" is a trigram near-duplicate of the gold
"When are the hostel fees due?", so the disagreement was counted ``gold_set`` and lost, and
the same text's later verdicts with it."""

from __future__ import annotations

import dataclasses

import pytest

from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.records import GoldQuestion
from tests.service.harvest.helpers import batch, event
from tests.service.harvest.test_stage import REFUSED, shadow

GOLD = [GoldQuestion("q-1", "When are the hostel fees due?", ("p-1",))]
TEXT = "when are hostel fees due"
DISAGREES = (("p-1", "p-2"), ("p-8", "p-9"))  # RBO 0 < max_rbo 0.5


def _run(order: tuple[str, ...], known: dict[str, object] | None) -> HarvestStage:
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), known_questions=GOLD)
    verdict = dataclasses.replace(shadow("e1", TEXT, *DISAGREES), known=known is not None)
    for step in order:
        if step == "event":
            stage.process(batch([event("e1", TEXT)], [{**REFUSED, "known": known}]))
        else:
            stage.observe_shadow(verdict)
    return stage


@pytest.mark.parametrize("order", [("event", "verdict"), ("verdict", "event")])
def test_a_question_the_quality_stage_did_not_know_keeps_its_verdict(
    order: tuple[str, ...],
) -> None:
    stage = _run(order, None)  # the quality stage looked and found no gold question
    [row] = stage.records()
    # one event: its own reason and its verdict, each counted once
    assert row["count"] == 1
    assert row["reasons"] == {"refused": 1, "shadow_disagreement": 1}
    assert stage.pending_observations()["known"] == {}


@pytest.mark.parametrize("order", [("event", "verdict"), ("verdict", "event")])
def test_a_known_question_is_not_suggested_and_counted_once(order: tuple[str, ...]) -> None:
    stage = _run(order, {"gold_id": "q-1", "similarity": 0.9})
    assert stage.records() == []
    assert stage.pending_observations()["known"] == {"annotation": 1}
