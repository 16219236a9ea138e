"""``_Tally.add_many`` counts a group of questions at once when none can overflow the tally
(issue 22): the counts, errors, holders and their insertion order must be those of adding the
questions one after the other with the Space-Saving rule written out here on its own."""

from __future__ import annotations

import random

from service.drift.terms import _Tally


def _one_by_one(size: int, floor: int, counts: dict[str, int], errors: dict[str, int],
                holders: dict[str, int] | None, questions: list[tuple[str, ...]]
                ) -> tuple[dict[str, int], dict[str, int], dict[str, int] | None, int]:  # fmt: skip
    """The rule by hand: a new term starts at floor + 1 with error floor (and one holder
    more); over 2 * size terms after a question, the size most counted (ties by term) stay
    and the floor rises to the count of the first one dropped."""
    counts, errors = dict(counts), dict(errors)
    holders = None if holders is None else dict(holders)
    for terms in questions:
        for term in terms:
            if term in counts:
                counts[term] += 1
            else:
                counts[term] = floor + 1
                if floor:
                    errors[term] = floor
                if holders is not None:
                    holders[term] = holders.get(term, 0) + 1
        if len(counts) > 2 * size:
            ranked = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
            floor = max(floor, ranked[size][1])
            counts = dict(ranked[:size])
            errors = {t: e for t, e in errors.items() if t in counts}
            if holders is not None:
                for term, _ in ranked[size:]:
                    holders[term] -= 1
                    if not holders[term]:
                        del holders[term]
    return counts, errors, holders, floor


def test_add_many_equals_the_rule_one_question_at_a_time() -> None:
    rng = random.Random(7)
    words = [f"w{i}" for i in range(60)]
    for case in range(400):
        size = rng.choice([3, 8, 40, 200])
        floor = rng.choice([0, 0, 2, 5])
        kept = rng.sample(words, rng.randint(0, min(size, 40)))
        start = {w: floor + rng.randint(1, 4) for w in kept}
        errors = {w: floor for w in start if floor and rng.random() < 0.5}
        holders = {w: rng.randint(1, 3) for w in rng.sample(words, 30)} if case % 2 else None
        if holders is not None:
            for w in start:
                holders[w] = holders.get(w, 0) + 1
        questions = [tuple(rng.sample(words, rng.randint(0, 6))) for _ in range(rng.randint(0, 12))]
        tally = _Tally(size, dict(start), dict(errors), floor)
        tally.holders = None if holders is None else dict(holders)
        tally.add_many(questions)
        want = _one_by_one(size, floor, start, errors, holders, questions)
        got = (tally.counts, tally.errors, tally.holders, tally.floor)
        assert got == want
        assert list(tally.counts) == list(want[0])  # the snapshot's order too
        assert list(tally.errors) == list(want[1])
        if holders is not None:
            assert list(tally.holders or {}) == list(want[2] or {})
        assert tally.version == len(questions)


def test_add_many_in_runs_equals_the_rule_over_many_truncations() -> None:
    # long groups (a warm-up's summary): runs counted at once between truncations
    rng = random.Random(11)
    words = [f"w{i}" for i in range(400)]
    weights = [1 / (i + 1) for i in range(len(words))]  # (Zipf-like: some terms repeat)
    for case in range(40):
        size = rng.choice([5, 20, 60])
        holders: dict[str, int] | None = {} if case % 2 else None
        questions = [tuple(dict.fromkeys(rng.choices(words, weights, k=rng.randint(0, 7))))
                     for _ in range(rng.randint(100, 600))]  # fmt: skip
        tally = _Tally(size)
        tally.holders = None if holders is None else dict(holders)
        tally.add_many(questions)
        want = _one_by_one(size, 0, {}, {}, holders, questions)
        assert (tally.counts, tally.errors, tally.holders, tally.floor) == want
        assert list(tally.counts) == list(want[0])
        assert list(tally.errors) == list(want[1])
        assert tally.floor > 0  # (it did truncate)
        assert tally.version == len(questions)
