"""Suggestion merging: a record once built never changes with later merges."""

from __future__ import annotations

from service.harvest.store import MemoryCandidates
from service.harvest.suggestion import Occurrence, Suggestion
from tests.service.harvest.helpers import T0


def _occurrence(event_id: str, question: str, rankings: dict[str, tuple[str, ...]]) -> Occurrence:
    return Occurrence(event_id, T0, question, question.lower().rstrip("?"), ("refused",), rankings)


def test_records_keep_their_pool_when_the_suggestion_pools_more() -> None:
    first = _occurrence("e1", "Hostel fees?", {"production": ("p-1", "p-2")})
    suggestion = Suggestion.start("c-1", first)
    suggestion.add(first)
    built = suggestion.to_json()
    repository = MemoryCandidates()
    repository.publish([{**built, "priority": 2.0, "primary_reason": "refused"}])
    # a better production rank for p-2, a candidate's ranks, a new passage
    later = _occurrence("e2", "hostel fees", {"production": ("p-2", "p-1"),
                                              "cand": ("p-3", "p-2")})  # fmt: skip
    assert suggestion.add(later)
    assert suggestion.pool == {"p-1": {"production": 1}, "p-2": {"production": 1, "cand": 2},
                               "p-3": {"cand": 1}}  # fmt: skip
    assert built["pool"] == {"p-1": {"production": 1}, "p-2": {"production": 2}}
    stored = repository.get("c-1")
    assert stored is not None and stored["pool"] == built["pool"]


def test_the_first_variant_is_the_scrubbed_question() -> None:
    first = _occurrence("e1", "Mail me at ana@example.com?", {})
    suggestion = Suggestion.start("c-1", first)
    suggestion.add(first)
    suggestion.add(_occurrence("e2", "Mail me at bo@example.com?", {}))  # another wording
    assert suggestion.question == "Mail me at <EMAIL>?"
    assert suggestion.variants == ("Mail me at <EMAIL>?", "Mail me at <EMAIL>?")
