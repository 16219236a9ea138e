"""The harvest stage's C-level readings of a retrieval equal the general rules they stand in for.

``_production_ranking`` (the pool's ranking of a picked event) against
:func:`service.shadow.runner.production_ranking`, and ``_first_id`` (an event's document)
against the rule its docstring states, on results logged best first, out of order, with a
rank or score missing, with a repeated passage, and on none.
"""

from __future__ import annotations

from typing import Any

import pytest

from service.events import QueryLogEvent
from service.harvest.signals import _first_id
from service.harvest.stage import _production_ranking
from service.shadow.runner import production_ranking
from tests.service.harvest.helpers import T0

CASES: dict[str, list[dict[str, Any]]] = {
    "ranked best first": [{"id": "a", "rank": 1, "score": 3.0}, {"id": "b", "rank": 2},
                          {"id": "c", "rank": 3}],
    "ranked out of order": [{"id": "b", "rank": 2}, {"id": "a", "rank": 1}, {"id": "c", "rank": 3}],
    "a rank missing, scored": [{"id": "b", "rank": 1, "score": 0.2}, {"id": "a", "score": 0.9}],
    "neither everywhere": [{"id": "b", "rank": 2}, {"id": "a", "score": 0.5}],
    "a passage repeated": [{"id": "a", "rank": 1}, {"id": "b", "rank": 2}, {"id": "a", "rank": 3}],
    "rank 1 not first": [{"id": "x", "rank": 3}, {"id": "y", "rank": 1}, {"id": "z", "rank": 2}],
    "scores only": [{"id": "b", "score": 0.2}, {"id": "a", "score": 0.9},
                    {"id": "c", "score": 0.5}],
    "none": [],
}  # fmt: skip


def _event(results: list[dict[str, Any]] | None) -> QueryLogEvent:
    data: dict[str, Any] = {"event_id": "e", "timestamp": T0.isoformat(), "question": "q?"}
    if results is not None:
        data["retrieval"] = {"results": results}
    return QueryLogEvent.model_validate(data)


@pytest.mark.parametrize("case", sorted(CASES))
def test_production_ranking_is_the_shadow_runners(case: str) -> None:
    item = _event(CASES[case])
    assert _production_ranking(item) == production_ranking(item)


def test_production_ranking_without_retrieval_is_empty() -> None:
    assert _production_ranking(_event(None)) == production_ranking(_event(None)) == ()


def test_first_id_follows_rank_then_score_then_logged_order() -> None:
    # worked out by hand from the rule: rank 1 when every result is ranked, else the
    # highest score when every result is scored, else the first logged
    expected = {"ranked best first": "a", "ranked out of order": "a",
                "a rank missing, scored": "a", "neither everywhere": "b",
                "a passage repeated": "a", "rank 1 not first": "y", "scores only": "a"}  # fmt: skip
    for case, first in expected.items():
        item = _event(CASES[case])
        assert item.retrieval is not None
        assert _first_id(item.retrieval.results) == first, case
