"""Suggestion merging: a record once built never changes with later merges."""

from __future__ import annotations

import pytest

from service.harvest import suggestion as suggestion_module
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


def test_control_and_bidi_characters_are_taken_out_of_the_wordings() -> None:
    """Trial 11: c-c62ca6e7b593bbff kept "bell\\u0007 and nul\\u0000 and rtl \\u202e override"
    as its question, while reject reasons lose such characters. Taken out here: BEL, NUL,
    DEL, CR, the RTL override U+202E and the isolate U+2066; tab and newline stay, and so
    does every other character (the spaces around a removed one included)."""
    raw = "bell\u0007 and nul\u0000 and rtl \u202e override"
    first = _occurrence("e1", raw, {})
    suggestion = Suggestion.start("c-1", first)
    suggestion.add(first)
    suggestion.add(_occurrence("e2", "del\u007f,\r cr\tand \u2066isolate\u2069\nend", {}))
    assert suggestion.question == "bell and nul and rtl  override"
    assert suggestion.variants == ("bell and nul and rtl  override",
                                   "del, cr\tand isolate\nend")  # fmt: skip
    assert suggestion.to_json()["question"] == "bell and nul and rtl  override"
    # a wording its scrub left unchanged (scrubbed=True) is cleaned too
    assert (
        Suggestion.start("c-2", first._replace(scrubbed=True)).question
        == "bell and nul and rtl  override"
    )


def test_first_is_start_then_add_worked_out_by_hand() -> None:
    """Suggestion.first (issue 22: the stage starts most suggestions with it) gives what
    start then add give, each field worked out here: a repeated passage keeps its best
    rank, the pool takes only the top pool_k of each ranking, an email is scrubbed out of
    the question and its one variant, the gap and its dimension are the occurrence's."""
    occurrence = Occurrence(
        "e1", T0, "Mail ana@example.com the fees?", "mail the fees", ("refused", "novel"),
        {"production": ("p-1", "p-2", "p-1", "p-3"), "cand": ("p-4", "p-2")},
        language="en", topic="fees", role="student", gap=0.25, trace_id="t-1",
        gap_dimension="topic",
    )  # fmt: skip
    made = Suggestion.first("c-1", occurrence, max_variants=3, pool_k=3, max_pool=40)
    assert made.to_json() == {
        "id": "c-1", "question": "Mail <EMAIL> the fees?", "normalised": "mail the fees",
        "language": "en", "topic": "fees", "role": "student", "source": "real", "count": 1,
        "first_seen": "2026-11-29T10:00:00Z", "last_seen": "2026-11-29T10:00:00Z",
        "events": ["e1"], "reasons": {"refused": 1, "novel": 1},
        "variants": ["Mail <EMAIL> the fees?"],
        "pool": {"p-1": {"production": 1}, "p-2": {"production": 2, "cand": 2},
                 "p-4": {"cand": 1}},
        "gap": 0.25, "gap_dimension": "topic", "trace_id": "t-1",
    }  # fmt: skip
    reference = Suggestion.start("c-1", occurrence)
    assert reference.add(occurrence, max_variants=3, pool_k=3, max_pool=40)
    assert made == reference and vars(made) == vars(reference)  # _pooled, _started_from too
    # the same event again is a redelivery for both; a new wording is a variant for both
    assert not made.add(occurrence) and not reference.add(occurrence)
    again = occurrence._replace(event_id="e2", question="Mail the fees now",
                                normalised="mail the fees now", gap=0.0)  # fmt: skip
    assert made.add(again) and reference.add(again)
    assert vars(made) == vars(reference) and made.variants[1] == "Mail the fees now"


def test_first_takes_no_gap_below_zero_as_add_does_and_needs_a_counted_occurrence() -> None:
    occurrence = Occurrence("e1", T0, "q?", "q", ("refused",), gap=-1.0, gap_dimension="topic")
    made = Suggestion.first("c-1", occurrence)
    assert (made.gap, made.gap_dimension) == (0.0, None)
    try:
        Suggestion.first("c-1", occurrence._replace(counts=False))
    except ValueError:
        pass
    else:
        raise AssertionError("an uncounted occurrence started a suggestion")


def test_pools_hold_one_string_object_per_passage_id() -> None:
    """Two suggestions pooling the same passage ids, each event's ids its own string objects
    (as the decoder allocates them), hold one object per id: the checkpoint encodes their
    records from shared, cache-warm strings (``_shared_ids``). The pools and what was
    pooled are equal to the rankings, worked out by hand."""
    fresh = ["".join(["p-", str(i)]) for i in (1, 2)]  # new objects, equal to "p-1", "p-2"
    again = ["".join(["p-", str(i)]) for i in (2, 1, 3)]
    assert fresh[0] == again[1] and fresh[0] is not again[1]
    one = Suggestion.first("c-1", _occurrence("e1", "Hostel fees?", {"production": tuple(fresh)}))
    two = Suggestion.first("c-2", _occurrence("e2", "Bus pass?", {"production": tuple(again)}))
    assert one.pool == {"p-1": {"production": 1}, "p-2": {"production": 2}}
    assert two.pool == {"p-2": {"production": 1}, "p-1": {"production": 2},
                        "p-3": {"production": 3}}  # fmt: skip
    keys_one, keys_two = {k: k for k in one.pool}, {k: k for k in two.pool}
    assert keys_one["p-1"] is keys_two["p-1"] and keys_one["p-2"] is keys_two["p-2"]
    # a later merge's new passage is shared too, and the ranking remembered is its equal
    later = ("".join(["p-", "3"]), "".join(["p-", "1"]))
    assert one.add(_occurrence("e3", "hostel fees", {"production": later}))
    assert one.pool == {"p-1": {"production": 1}, "p-2": {"production": 2},
                        "p-3": {"production": 1}}  # fmt: skip
    assert {k: k for k in one.pool}["p-3"] is keys_two["p-3"]
    assert one._pooled == {"production": ("p-3", "p-1")}


def test_the_shared_passage_ids_stay_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    """At most ``_SHARED_IDS`` ids are remembered: the table is emptied when full (here 4),
    and pooling goes on with the same pools."""
    monkeypatch.setattr(suggestion_module, "_PASSAGE_IDS", {})
    monkeypatch.setattr(suggestion_module, "_SHARED_IDS", 4)
    ranking = tuple(f"p-{i}" for i in range(1, 4))
    first = Suggestion.first("c-1", _occurrence("e1", "Hostel fees?", {"production": ranking}))
    assert len(suggestion_module._PASSAGE_IDS) == 3
    more = tuple(f"q-{i}" for i in range(1, 4))
    other = Suggestion.first("c-2", _occurrence("e2", "Bus pass?", {"production": more}))
    assert len(suggestion_module._PASSAGE_IDS) == 6  # emptied only when 4 were held before
    third = Suggestion.first("c-3", _occurrence("e3", "Gym?", {"production": ("r-1",)}))
    assert suggestion_module._PASSAGE_IDS == {"r-1": "r-1"}
    assert list(first.pool) == list(ranking) and list(other.pool) == list(more)
    assert third.pool == {"r-1": {"production": 1}}
