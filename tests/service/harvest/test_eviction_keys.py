"""The harvest stage's eviction key (issue 22: ranking.eviction_keys), on hand-worked values."""

from __future__ import annotations

from service.harvest.config import HarvestConfig
from service.harvest.ranking import eviction_keys, priority
from service.harvest.suggestion import Suggestion


def test_eviction_keys_are_priority_last_seen_and_id_worked_out_by_hand() -> None:
    """The stage's eviction key: (2.0 + 1.5) * (1 + log2 4) * (1 + 0.5) = 15.75 (the module
    docstring's weights: refused 2.0, novel 1.5); a count below 1 counts as 1."""
    config = HarvestConfig()
    four = Suggestion("c-1", "q", "q", count=4, reasons={"refused": 4, "novel": 1}, gap=0.5,
                      last_seen="2026-11-29T10:00:00Z")  # fmt: skip
    none = Suggestion("c-2", "r", "r", count=0, reasons={"refused": 1})
    assert eviction_keys([four, none], config) == [
        (15.75, "2026-11-29T10:00:00Z", "c-1"),
        (2.0, "", "c-2"),
    ]
    assert [key[0] for key in eviction_keys([four, none], config)] == [
        priority(four, config),
        priority(none, config),
    ]
