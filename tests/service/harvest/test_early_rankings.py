"""A suggestion pools the passages of every candidate that ran on its events, also when the
candidates' results came before the event was picked (trial 15, LOW 6: in a replay the
synchronous shadow stage runs before the harvest stage, and 352 of 362 suggestions without
``shadow_disagreement`` listed only production's passages though both candidates ran; the
README promises "the passages production and the candidate returned")."""

from __future__ import annotations

from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from tests.service.harvest.helpers import batch, event
from tests.service.harvest.test_stage import REFUSED, shadow

CONFIG = HarvestConfig(flush_interval_s=0.0)
PROD = ("p-1", "p-2")


def test_agreeing_results_before_the_event_are_pooled_with_it() -> None:
    stage = HarvestStage(CONFIG)
    # the replay's order: both candidates' results on e1 first, both agreeing (RBO_ext,
    # p 0.9: 1 and (0.1/0.9)(0.9 + 0.81/2) + 0.81/2 = 0.55, not below max_rbo 0.5)
    stage.observe_shadow(shadow("e1", "hostel fee refund", PROD, PROD, "mine"))
    stage.observe_shadow(shadow("e1", "hostel fee refund", PROD, ("p-1", "p-3"), "hybrid"))
    stage.process(batch([event("e1", "hostel fee refund")], [REFUSED]))
    [row] = stage.records()
    assert row["reasons"] == {"refused": 1}  # agreement adds no reason
    # each passage with its rank in each ranking that holds it (worked out from the lists)
    assert row["pool"] == {
        "p-1": {"production": 1, "mine": 1, "hybrid": 1},
        "p-2": {"production": 2, "mine": 2},
        "p-3": {"hybrid": 2},
    }


def test_a_disagreeing_result_starts_a_suggestion_with_the_agreeing_ones_before_it() -> None:
    stage = HarvestStage(CONFIG)
    stage.observe_shadow(shadow("e1", "bus timings", PROD, PROD, "mine"))
    stage.observe_shadow(shadow("e1", "bus timings", PROD, ("p-8", "p-9"), "hybrid"))
    [row] = stage.records()
    assert row["reasons"] == {"shadow_disagreement": 1}
    assert row["pool"] == {
        "p-1": {"production": 1, "mine": 1}, "p-2": {"production": 2, "mine": 2},
        "p-8": {"hybrid": 1}, "p-9": {"hybrid": 2},
    }  # fmt: skip


def test_results_kept_for_a_batch_are_dropped_after_it() -> None:
    """An agreeing result on an event not picked is not kept past the batch (bounded)."""
    stage = HarvestStage(CONFIG)
    stage.observe_shadow(shadow("e1", "bus timings", PROD, PROD, "mine"))
    stage.process(batch([event("e1", "bus timings")], [{}]))  # no reason: not picked
    assert stage.records() == [] and stage._early == {}
