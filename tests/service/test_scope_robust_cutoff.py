"""The off-corpus cutoff is a low quantile of the answerable gold rows' support similarity,
not their least, and the detector's quality figures are those of the rule in use (trial 11,
finding F3: one scrubbed answerable row, "What did ESPN report? ask Tom Baker at <EMAIL> or
<PHONE>", moved the least 0.352 → 0.208 and the live over-refusals 49 → 345 while the held-out
FPR and AUC shown stayed put).

The hand-built gold set: the gold rows are orthogonal to each other (cosine 0), so a row's
support similarity is its nearest-passage similarity, set by hand: 40 answerable rows at
0.30, 0.31, …, 0.69, an odd answerable row at 0.05, and unanswerable rows at 0.10, 0.20,
0.70, 0.80. Two folds: the answerable row at 0.30 + 0.01 i is held out in fold i mod 2; the
odd row and the unanswerable rows at 0.20 and 0.80 in fold 0, those at 0.10 and 0.70 in fold 1.
"""

from __future__ import annotations

import numpy as np
import pytest

from service.refusals.scope import (
    SupportCheck,
    calibrate_support,
    choose_trim,
    robust_cutoff,
    support_change,
    support_text,
)


def _gold_set(odd: bool) -> tuple[np.ndarray, np.ndarray, list[tuple[np.ndarray, np.ndarray]],
                                  list[str]]:  # fmt: skip
    """``(nearest-passage similarity, labels, folds, ids)`` of the set in the docstring."""
    rows = [(f"a{i}", round(0.30 + 0.01 * i, 2), True, i % 2) for i in range(40)]
    if odd:
        rows.append(("odd", 0.05, True, 0))
    rows += [("u10", 0.10, False, 1), ("u20", 0.20, False, 0), ("u70", 0.70, False, 1),
             ("u80", 0.80, False, 0)]  # fmt: skip
    near = np.array([r[1] for r in rows])
    labels = np.array([r[2] for r in rows])
    fold = np.array([r[3] for r in rows])
    everyone = np.arange(len(rows))
    folds = [(everyone[fold != f], everyone[fold == f]) for f in (0, 1)]
    return near, labels, folds, [r[0] for r in rows]


def _check(odd: bool, trim: float) -> SupportCheck:
    near, labels, folds, ids = _gold_set(odd)
    return calibrate_support(np.eye(len(ids)), near, labels, folds, trim=trim, ids=ids)


def test_robust_cutoff_is_the_trimmed_minimum_by_hand() -> None:
    values = np.array([0.5, 0.05, 0.3, 0.4] + [0.6] * 36)  # 40 values: ⌊0.05 · 40⌋ = 2
    assert robust_cutoff(values, 0.05) == (0.4, 3)  # sorted 0.05, 0.3, 0.4: the third
    assert robust_cutoff(values, 0.0) == (0.05, 1)  # no trim: the least
    assert robust_cutoff(values[:19], 0.05) == (0.05, 1)  # ⌊0.95⌋ = 0: a small set's least
    assert robust_cutoff(np.array([0.2]), 0.5) == (0.2, 0)  # k capped at n - 1
    with pytest.raises(ValueError, match="trim"):
        robust_cutoff(values, 1.0)
    with pytest.raises(ValueError, match="one value"):
        robust_cutoff(np.zeros(0), 0.05)


def test_one_odd_answerable_row_barely_moves_the_robust_cutoff() -> None:
    before, after = _check(odd=False, trim=0.05), _check(odd=True, trim=0.05)
    # 40 rows: ⌊0.05 · 40⌋ = 2 left out, the third least: 0.30, 0.31, [0.32]
    assert before.cutoff == pytest.approx(0.32) and before.set_by == "a2"
    assert before.below == ("a0", "a1") and before.least == pytest.approx(0.30)
    # 41 rows: ⌊2.05⌋ = 2: 0.05, 0.30, [0.31]: one step in sorted order
    assert after.cutoff == pytest.approx(0.31) and after.set_by == "a1"
    assert after.below == ("odd", "a0") and after.least == pytest.approx(0.05)
    # the least (the rule before F3) falls 0.30 → 0.05
    old_before, old_after = _check(odd=False, trim=0.0), _check(odd=True, trim=0.0)
    assert (old_before.cutoff, old_after.cutoff) == (pytest.approx(0.30), pytest.approx(0.05))


def test_the_held_out_rates_are_those_of_the_cutoff_rule_in_use() -> None:
    # Robust, without the odd row. Fold 0 (held out: even a-rows, u20, u80): training
    # a-rows 0.31, 0.33, …, 0.69 (20: ⌊1.0⌋ = 1 left out) → 0.33; held out 0.30, 0.32 below
    # (2 false positives), u20 caught. Fold 1: training 0.30, 0.32, …, 0.68 → 0.32; held
    # out 0.31 below (1), u10 caught. FPR 3/40, unanswerable caught 2/4.
    before = _check(odd=False, trim=0.05)
    assert (before.held_out_fpr, before.held_out_tpr) == (pytest.approx(3 / 40), 0.5)
    # Robust, with it (held out in fold 0): fold 0 as above plus the odd row below (3);
    # fold 1: training 0.05, 0.30, 0.32, … (21: ⌊1.05⌋ = 1) → 0.30: none below, u10 caught.
    after = _check(odd=True, trim=0.05)
    assert (after.held_out_fpr, after.held_out_tpr) == (pytest.approx(3 / 41), 0.5)
    # The least: without the odd row, fold 0 → 0.31 (0.30 below), fold 1 → 0.30 (none):
    # 1/40, u20 and u10 caught. With it: fold 0 → 0.31 (0.30 and the odd row below), fold 1
    # → 0.05 (none below; u10 no longer caught): 2/41 and 1/4 — the cutoff fell 0.30 → 0.05.
    old_before, old_after = _check(odd=False, trim=0.0), _check(odd=True, trim=0.0)
    assert (old_before.held_out_fpr, old_before.held_out_tpr) == (pytest.approx(1 / 40), 0.5)
    assert (old_after.held_out_fpr, old_after.held_out_tpr) == (pytest.approx(2 / 41), 0.25)


def test_the_report_names_the_rule_the_row_that_sets_it_and_a_move() -> None:
    after = _check(odd=True, trim=0.05)
    text = support_text(after._asdict())
    assert ("below 0.310, the least of the answerable gold questions once the lowest 2 of 41 "
            "are left out, set by a1; their least is 0.050" in text)  # fmt: skip
    old = _check(odd=False, trim=0.0)
    moved = support_change(old, _check(odd=True, trim=0.0), "accepted odd")
    assert moved is not None and "0.300 → 0.050 (accepted odd; now set by odd" in moved
    # the robust rule: 0.32 → 0.31, within the stated 0.02: no notice
    assert support_change(_check(odd=False, trim=0.05), after, "accepted odd") is None
    assert "off-corpus cutoff moved" in support_text(after._replace(change=moved)._asdict())


def test_the_trim_is_the_most_rows_that_keep_the_recall_target() -> None:
    # recall with the rule at j rows of 40 left out: 0.99 - 0.01 j (hand-made); target 0.95:
    # j = 4 → 0.95 is the most; the limit 0.2 allows up to ⌊8.0⌋ = 8 rows
    asked: list[float] = []

    def recall(trim: float) -> float:
        asked.append(trim)
        return 0.99 - 0.01 * round(trim * 40)

    assert choose_trim(40, 0.2, recall, 0.95) == pytest.approx(4 / 40)
    assert asked[0] == pytest.approx(8 / 40) and len(asked) <= 2 + 3  # the most, then bisection
    assert len(set(asked)) == len(asked)
    # the most allowed keeps it: no more asked
    asked.clear()
    assert choose_trim(40, 0.05, recall, 0.95) == pytest.approx(2 / 40) and len(asked) == 1
    # not even one row: the least (trim 0)
    assert choose_trim(40, 0.05, recall, 0.995) == 0.0
