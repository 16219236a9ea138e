"""The live-quality stage shares the out-of-scope stage's known-question index (issue 22:
one n-gram transform and product per batch instead of two) only when both would match
alike: the same gold rows in the same order (the out-of-scope stage's canonical order,
:func:`~service.runtime.analytics.scope_gold`, whatever the file's order) and the same
threshold."""

from __future__ import annotations

from service.data.goldset import GoldQuestion, GoldSet
from service.quality.known import KnownQuestionIndex
from service.refusals.scope import KnownScope
from service.runtime.analytics import Analytics, scope_gold
from service.runtime.live import known_index


class _ScopeLike:
    """A stand-in out-of-scope stage: only its ``known`` attribute is read."""

    name = "scope"

    def __init__(self, known: KnownScope | None) -> None:
        self.known = known


GOLD = GoldSet((GoldQuestion("q-1", "Who founded the college?", ("p-1",)),
                GoldQuestion("q-2", "Who founded the college on Mars?", ())))  # fmt: skip


def test_same_gold_and_threshold_share_the_scope_index() -> None:
    known = KnownScope(scope_gold(GOLD), 0.9)  # as the scope stage builds it
    analytics = Analytics(stages=[_ScopeLike(None), _ScopeLike(known)])  # type: ignore[list-item]
    assert known_index(analytics, GOLD, 0.9) is known.index
    # the same rows in another order, or an equal copy: the same canonical rows
    assert known_index(analytics, GoldSet(GOLD.questions[::-1]), 0.9) is known.index
    assert known_index(analytics, GoldSet(tuple(GOLD)), 0.9) is known.index
    # the shared index answers as a fresh one would, and the scope verdicts are unchanged
    fresh = KnownQuestionIndex(GOLD, threshold=0.9)
    asked = ["who founded the college", "who founded the college on mars", "hello there"]
    assert known_index(analytics, GOLD, 0.9).match_many(asked) == fresh.match_many(asked)
    assert known.verdicts(asked) == [("q-1", True), ("q-2", False), (None, None)]


def test_another_threshold_or_gold_set_gets_its_own_index() -> None:
    known = KnownScope(scope_gold(GOLD), 0.9)
    analytics = Analytics(stages=[_ScopeLike(known)])  # type: ignore[list-item]
    other_threshold = known_index(analytics, GOLD, 0.8)
    assert other_threshold is not known.index and other_threshold.threshold == 0.8
    other = GoldSet((*GOLD, GoldQuestion("q-3", "Where is the library?", ("p-2",))))
    other_gold = known_index(analytics, other, 0.9)
    assert other_gold is not known.index and other_gold.gold == scope_gold(other)
    # an index on the rows in another order breaks ties otherwise: not shared
    in_file_order = KnownScope(GOLD, 0.9)
    assert [q.id for q in GOLD] != [q.id for q in scope_gold(GOLD)]
    unshared = Analytics(stages=[_ScopeLike(in_file_order)])  # type: ignore[list-item]
    assert known_index(unshared, GOLD, 0.9) is not in_file_order.index
    alone = known_index(Analytics(stages=[]), GOLD, 0.9)
    assert alone is not known.index and alone.gold == scope_gold(GOLD)


def test_a_tie_goes_to_the_same_gold_row_whatever_the_files_order() -> None:
    # two rows asking the same question (equal after normalisation): a live question equal
    # to them matches both with similarity 1.0, and the first in canonical order wins (by
    # question text: "when" sorts after "When"), with or without a scope stage
    rows = (GoldQuestion("q-b", "When are fees due?", ("p-1",)),
            GoldQuestion("q-a", "when are fees due", ("p-2",)))  # fmt: skip
    found = {
        known_index(Analytics(stages=[]), GoldSet(order), 0.9).match_many(["When are fees due"])[0]
        for order in (rows, rows[::-1])
    }
    assert len(found) == 1
    (match,) = found
    assert match is not None and match.gold_id == "q-b" and match.similarity == 1.0
