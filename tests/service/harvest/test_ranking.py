"""Priority and balanced selection, on hand-worked values."""

from __future__ import annotations

import math

import pytest

from service.harvest.config import REASONS, HarvestConfig
from service.harvest.ranking import primary_reason, priority, select
from service.harvest.suggestion import Suggestion


def s(sid: str, reasons: dict[str, int], count: int = 1, topic: str = "t", language: str = "en",
      gap: float = 0.0) -> Suggestion:  # fmt: skip
    return Suggestion(sid, sid, sid, language=language, topic=topic, count=count,
                      reasons=reasons, gap=gap)  # fmt: skip


def test_priority_hand_worked() -> None:
    config = HarvestConfig()
    # acl 3.0 + novel 1.5 = 4.5; count 8 -> 1 + 3 = 4; gap 0.2 -> 1.2: 4.5 * 4 * 1.2 = 21.6
    assert priority(s("a", {"acl_violation": 1, "novel": 8}, 8, gap=0.2), config) == pytest.approx(
        21.6
    )
    assert priority(s("b", {"coverage_gap": 1}), config) == 1.0
    assert priority(s("c", {}), config) == 0.0
    custom = HarvestConfig(weights={"refused": 10.0})
    assert priority(s("d", {"refused": 2}, 2), custom) == 20.0


def test_primary_reason_is_the_heaviest_with_fixed_ties() -> None:
    config = HarvestConfig()
    assert primary_reason(s("a", {"novel": 1, "acl_violation": 1}), config) == "acl_violation"
    # refused and negative_feedback both weigh 2.0: REASONS order decides
    assert primary_reason(s("b", {"negative_feedback": 1, "refused": 1}), config) == "refused"
    assert primary_reason(s("c", {}), config) is None


def test_remembered_weight_sums_keep_each_order_of_reasons_float() -> None:
    # 0.1 + 0.2 + 0.3 in that order is 0.6000000000000001, in reverse 0.6: the weight sum is
    # remembered by the reasons in their order, so each suggestion keeps its own float, on
    # the first call and the next; and a change of reasons is a new sum
    config = HarvestConfig(weights={"refused": 0.1, "novel": 0.2, "coverage_gap": 0.3})
    forward = s("a", {"refused": 1, "novel": 1, "coverage_gap": 1})
    backward = s("b", {"coverage_gap": 1, "novel": 1, "refused": 1})
    for _ in range(2):
        assert priority(forward, config) == 0.6000000000000001
        assert priority(backward, config) == 0.6
        assert primary_reason(forward, config) == primary_reason(backward, config) == "coverage_gap"
    forward.reasons.pop("coverage_gap")
    assert priority(forward, config) == pytest.approx(0.3)
    assert primary_reason(forward, config) == "novel"
    with pytest.raises(KeyError):
        priority(s("c", {"not_a_reason": 1}), config)


def test_select_round_robins_over_strata() -> None:
    config = HarvestConfig(quotas={})
    rows = [
        s("a1", {"refused": 1}, 4, topic="fees"),  # 2 * 3 = 6
        s("a2", {"refused": 1}, 2, topic="fees"),  # 2 * 2 = 4
        s("a3", {"refused": 1}, 1, topic="fees"),  # 2
        s("b1", {"novel": 1}, 1, topic="hostel", language="hi"),  # 1.5
        s("c1", {"coverage_gap": 1}, 1, topic="exams"),  # 1
    ]
    assert [x.id for x in select(rows, config, 3)] == ["a1", "b1", "c1"]
    assert [x.id for x in select(rows, config)] == ["a1", "b1", "c1", "a2", "a3"]
    assert select(rows, config, 0) == []


def test_select_caps_primary_reasons_then_fills() -> None:
    config = HarvestConfig(quotas={"refused": 0.5})  # floor(0.5 * 4) = 2 refused first
    rows = [s(f"r{i}", {"refused": 1}, 8 - i, topic=f"t{i}") for i in range(4)]
    rows.append(s("n", {"novel": 1}, 1, topic="tn"))
    # round 1 visits strata by best priority: r0, r1 taken, r2 r3 set aside (cap 2), n taken;
    # the remaining slot is filled from the set-aside ones by priority: r2
    assert [x.id for x in select(rows, config, 4)] == ["r0", "r1", "n", "r2"]


def test_select_rejects_negative_limit() -> None:
    with pytest.raises(ValueError, match="limit"):
        select([], HarvestConfig(), -1)


def test_config_validation() -> None:
    with pytest.raises(ValueError, match="unknown reasons"):
        HarvestConfig(weights={"bogus": 1.0})
    with pytest.raises(ValueError, match="quotas"):
        HarvestConfig(quotas={"refused": 1.5})
    with pytest.raises(ValueError, match="nothing can be harvested"):
        HarvestConfig(weights=dict.fromkeys(REASONS, 0.0))
    assert math.isclose(HarvestConfig().weight("acl_violation"), 3.0)


def test_select_drops_near_duplicates_the_index_missed() -> None:
    config = HarvestConfig(quotas={})
    rows = [
        Suggestion("a", "q", "hostel gate closing time", topic="t1", count=2,
                   reasons={"refused": 2}),
        Suggestion("b", "q", "hostel gate closng time", topic="t2", reasons={"refused": 1}),
        Suggestion("c", "q", "library hours", topic="t3", reasons={"refused": 1}),
        Suggestion("d", "q", "hostel gate closing time for this year", topic="t4",
                   reasons={"refused": 1}),
    ]  # fmt: skip
    # "a" vs "b": " hostel gate closing time " has 24 trigrams, " hostel gate closng time "
    # 23 (" ho" ... "los", then "osn", "sng", "ng ", ..., "me "), 21 shared: 21 / 26 = 0.808
    # >= 0.6, and one slip apart: the same question, dropped. "a" vs "d": 24 shared of 38 =
    # 0.632 >= 0.6, but "year" is asked only by "d" (the merge rule): another question, kept.
    assert [s.id for s in select(rows, config)] == ["a", "c", "d"]
    assert [s.id for s in select(rows, config, distinct=False)] == ["a", "b", "c", "d"]


def test_select_first_is_the_selections_prefix() -> None:
    # quotas (set-aside ones filling in at the end), strata, near duplicates: each prefix of
    # the whole selection, of a limited one too, is what ``first`` gives (quotas of the whole)
    config = HarvestConfig(quotas={"refused": 0.3})
    rows = [s(f"r{i}", {"refused": 1}, 9 - i, topic=f"t{i % 3}") for i in range(9)]
    rows += [s(f"n{i}", {"novel": 1}, 3 - i, topic="tn", language="hi") for i in range(3)]
    rows += [
        Suggestion("d1", "q", "hostel gate closing time", topic="t0", reasons={"refused": 3}),
        Suggestion("d2", "q", "hostel gate closng time", topic="t1", reasons={"refused": 2}),
    ]  # fmt: skip
    for limit in (None, 5):
        whole = [x.id for x in select(rows, config, limit)]
        assert "d2" not in whole and whole[-1].startswith("r")  # dropped; set aside, filled
        for first in range(len(rows) + 2):
            assert [x.id for x in select(rows, config, limit, first=first)] == whole[:first]
    with pytest.raises(ValueError, match="first"):
        select(rows, config, first=-1)
