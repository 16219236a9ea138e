"""``gc_paused`` thaws what it froze: a reference cycle that was in flight at a freeze (as
another thread's request or fetch is in a served process) is collected once it is garbage,
instead of never (issue 9's soak RSS creep)."""

from __future__ import annotations

import gc
import math
import weakref

import pytest

from consumers.loop import gc_paused


class Node:
    peer: Node


def _cycle() -> Node:
    a, b = Node(), Node()
    a.peer, b.peer = b, a
    return a


def _step(thaw_interval_s: float) -> None:
    """One loop step that ends with a full collection, hence a freeze."""
    with gc_paused(thaw_interval_s=thaw_interval_s, freeze_interval_s=0.0):
        gc.collect(1)
        gc.collect(1)  # generation 2's count is now 2, over its threshold of 1


def test_a_cycle_frozen_while_in_flight_is_collected_at_the_next_thaw() -> None:
    old = gc.get_threshold()
    try:
        gc.set_threshold(50, 1, 1)
        node = _cycle()  # held by "another thread" while the loop freezes
        alive = weakref.ref(node)
        _step(math.inf)
        del node  # garbage now, but frozen: no collection walks it
        gc.collect()
        assert alive() is not None
        for _ in range(3):
            _step(math.inf)  # no thaw due: it stays, however many steps run
        assert alive() is not None
        _step(0.0)  # a thaw is due
        assert alive() is None
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
        gc.collect()


@pytest.mark.slow
def test_frozen_garbage_stays_bounded_over_many_steps_with_thaws() -> None:
    """Ten steps, each freezing a fresh in-flight cycle that dies right after; with a thaw
    every step at most the newest one is left, without thaws all ten are.

    Ten steps are enough (it was 100): each thaw step costs full collections of the whole
    test process's heap (bigger in a full-suite run than alone), and the property is "does not grow
    with the number of steps". A thaw that never unfreezes, or only on the first step, leaves
    10 instead of 1; a thaw every other step leaves 2; a freeze that takes nothing
    leaves 0 in the second round instead of 10 — all still fail the exact counts below."""
    steps = 10
    old = gc.get_threshold()
    try:
        gc.set_threshold(50, 1, 1)
        for thaw_s, left in ((0.0, 1), (math.inf, steps)):
            refs = []
            for _ in range(steps):
                node = _cycle()
                refs.append(weakref.ref(node))
                _step(thaw_s)
                del node
            assert sum(r() is not None for r in refs) == left
            gc.unfreeze()
            gc.collect()
            assert all(r() is None for r in refs)
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
        gc.collect()
