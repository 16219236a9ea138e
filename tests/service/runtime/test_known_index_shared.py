"""The live-quality stage shares the out-of-scope stage's known-question index (issue 22:
one n-gram transform and product per batch instead of two) only when both would match
alike: the same gold set object and the same threshold."""

from __future__ import annotations

from service.data.goldset import GoldQuestion, GoldSet
from service.quality.known import KnownQuestionIndex
from service.refusals.scope import KnownScope
from service.runtime.analytics import Analytics
from service.runtime.live import known_index


class _ScopeLike:
    """A stand-in out-of-scope stage: only its ``known`` attribute is read."""

    name = "scope"

    def __init__(self, known: KnownScope | None) -> None:
        self.known = known


GOLD = GoldSet((GoldQuestion("q-1", "Who founded the college?", ("p-1",)),
                GoldQuestion("q-2", "Who founded the college on Mars?", ())))  # fmt: skip


def test_same_gold_and_threshold_share_the_scope_index() -> None:
    known = KnownScope(GOLD, 0.9)
    analytics = Analytics(stages=[_ScopeLike(None), _ScopeLike(known)])  # type: ignore[list-item]
    assert known_index(analytics, GOLD, 0.9) is known.index
    # the shared index answers as a fresh one would, and the scope verdicts are unchanged
    fresh = KnownQuestionIndex(GOLD, threshold=0.9)
    asked = ["who founded the college", "who founded the college on mars", "hello there"]
    assert known_index(analytics, GOLD, 0.9).match_many(asked) == fresh.match_many(asked)
    assert known.verdicts(asked) == [("q-1", True), ("q-2", False), (None, None)]


def test_another_threshold_or_gold_set_gets_its_own_index() -> None:
    known = KnownScope(GOLD, 0.9)
    analytics = Analytics(stages=[_ScopeLike(known)])  # type: ignore[list-item]
    other_threshold = known_index(analytics, GOLD, 0.8)
    assert other_threshold is not known.index and other_threshold.threshold == 0.8
    copy = GoldSet(tuple(GOLD))
    other_gold = known_index(analytics, copy, 0.9)
    assert other_gold is not known.index and other_gold.gold is copy
    assert known_index(Analytics(stages=[]), GOLD, 0.9) is not known.index
