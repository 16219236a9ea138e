"""A candidate's agreement means do not depend on the order its results came in (trial 47
L1: the same events sent fast and slowly to two services gave kendall_tau
0.046809928369148796 and …79: a live service folds results in as its calls finish)."""

from __future__ import annotations

import math

from service.shadow.stage import METRICS, _Means

# 0.1 + 0.2 + 0.3 is 0.6000000000000001 left to right and 0.6 right to left (IEEE 754
# doubles); the sum correctly rounded is 0.6 (math.fsum, Shewchuk's exact partials)
VALUES = [0.1, 0.2, 0.3]


def _means(order: list[float]) -> _Means:
    means = _Means()
    for value in order:
        means.add(dict.fromkeys(METRICS, value))
    return means


def test_the_mean_is_the_correctly_rounded_sum_over_the_count_in_any_order() -> None:
    assert (0.1 + 0.2) + 0.3 != (0.3 + 0.2) + 0.1  # the orders differ when summed naively
    forward, backward = _means(VALUES), _means(VALUES[::-1])
    assert forward.means() == backward.means()
    assert forward.means()["rbo"] == 0.6 / 3 == math.fsum(VALUES) / 3
    assert forward.counts()["rbo"] == 3


def test_a_state_saved_before_keeps_its_sum_and_adds_exactly() -> None:
    """An older checkpoint's cell is ``[sum, count]``; it restores and goes on."""
    means = _Means({m: [0.5, 2] for m in METRICS})
    means.add(dict.fromkeys(METRICS, 0.25))
    assert means.means()["rbo"] == 0.75 / 3 and means.counts()["rbo"] == 3
    again = _Means(means.sums)  # the new state round-trips
    assert again.means() == means.means()
