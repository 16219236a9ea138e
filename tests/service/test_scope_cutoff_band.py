"""The off-corpus cutoff's range over draws of the answerable gold rows, and the live verdicts
it moves (trial 37b, findings H2 and M3).

The cutoff is an order statistic of 30-60 answerable rows' support similarities: one accepted
suggestion moved the trial's from 0.364 to 0.295 and the live out-of-scope count from 578 to
341 of 2,881 while the stated rates barely moved. The range (a percentile bootstrap of the
same rule) is stated with the cutoff, the verdicts it moves are counted, and the drift
dimension tests the others only.
"""

from __future__ import annotations

import types

import numpy as np
import pytest

from service.pipeline.totals import count_annotations
from service.refusals.scope import (
    EmbeddingScope,
    SupportCheck,
    band_edges,
    cutoff_band,
    robust_cutoff,
    unstable_text,
    unstable_verdicts,
)
from service.refusals.stage import EmbeddingScopeStage
from tests.service.test_scope_embedding import TableEmbedder, _events
from tests.service.test_scope_support import BANKING, _news_and_banking


def test_the_band_is_what_resampling_gives() -> None:
    # 40 distinct values, trim 1/40: the cutoff is a resample's second smallest. Resampled
    # 20,000 times by brute force, its empirical 2.5 % and 97.5 % points (inverted cdf) are
    # the least and the 6th value: by the binomial law the cdf is 0.264 at the least and
    # 0.968 / 0.988 at the 5th / 6th values, margins of 6 standard errors at this count.
    values = np.random.default_rng(1).permutation(np.linspace(0.20, 0.59, 40))
    draws = np.random.default_rng(2).integers(0, 40, size=(20_000, 40))
    cutoffs = np.sort(np.partition(values[draws], 1, axis=1)[:, 1])
    resampled = (float(np.quantile(cutoffs, 0.025, method="inverted_cdf")),
                 float(np.quantile(cutoffs, 0.975, method="inverted_cdf")))  # fmt: skip
    ordered = np.sort(values)
    assert cutoff_band(values, 1 / 40) == resampled == (ordered[0], ordered[5])
    # the rule's own cutoff is inside it
    low, high = resampled
    assert low <= robust_cutoff(values, 1 / 40)[0] <= high
    # and with trim 0 (the least) the range starts at the cutoff: no resample goes below
    assert cutoff_band(values, 0.0)[0] == ordered[0]


def test_the_band_of_the_trial_holds_the_cutoff_one_accepted_row_moved_to() -> None:
    # The trial's lowest Latin setter supports (40 English answerable rows; the rest above
    # 0.40): the cutoff is the second smallest, 0.364. Accepting one more row at 0.295 made it
    # 0.295 — inside the range the 40 rows give, which leaving one out cannot show (it only
    # moves the cutoff up, to 0.371).
    rest = np.linspace(0.40, 0.80, 34)
    before = np.r_[0.2878, 0.3637, 0.3713, 0.3887, 0.3984, 0.3988, rest]
    trim = 1 / 23  # the trial's: 2 of its 46 answerable rows
    assert robust_cutoff(before, trim)[0] == 0.3637
    after = robust_cutoff(np.r_[before, 0.2948], trim)[0]
    assert after == 0.2948
    low, high = cutoff_band(before, trim)
    assert low <= after <= high and low == 0.2878
    leave_one_out = [robust_cutoff(np.delete(before, i), trim)[0] for i in range(40)]
    assert min(leave_one_out) == 0.3637  # the jackknife never reaches 0.295


def test_the_band_ignores_the_order_and_checks_its_arguments() -> None:
    values = np.random.default_rng(0).uniform(size=30)
    assert cutoff_band(values, 0.05) == cutoff_band(values[::-1], 0.05)  # order-free
    assert cutoff_band(np.full(5, 0.3), 0.0) == (0.3, 0.3)
    for bad in ({"trim": 1.0}, {"trim": 0.05, "level": 1.0}, {"trim": 0.05, "level": 0.0}):
        with pytest.raises(ValueError):
            cutoff_band(values, **bad)  # type: ignore[arg-type]
    with pytest.raises(ValueError):
        cutoff_band(np.zeros(0), 0.0)


def test_band_edges_and_unstable_verdicts_by_hand() -> None:
    cutoffs = np.array([0.30, 0.30, 0.30, 0.30, 0.30, -np.inf, 0.60])
    low, high = band_edges(cutoffs, [(0.30, (0.25, 0.40)), (0.60, None)])
    assert low.tolist() == [0.25] * 5 + [-np.inf, 0.60]
    assert high.tolist() == [0.40] * 5 + [-np.inf, 0.60]
    support = np.array([0.27, 0.35, 0.35, 0.45, 0.20, 0.10, 0.60])
    off = support < cutoffs
    proba = np.array([0.0, 0.9, 0.2, 0.9, 0.0, 0.9, 0.9])
    # 0.27: off-corpus now, inside the range (in support at its low end) -> unstable;
    # 0.35 in scope now (0.9 >= 0.5), off-corpus at 0.40 -> unstable; 0.35 with 0.2: out of
    # scope by the regression at any cutoff -> stable; 0.45, 0.20: outside the range; not
    # judged (-inf) and a cutoff without a range: stable
    assert unstable_verdicts(support, low, high, off, proba, 0.5).tolist() == [
        True, True, False, False, False, False, False,
    ]  # fmt: skip


def test_unstable_verdicts_are_counted_and_stated() -> None:
    notes = [
        {"out_of_scope": True, "scope_unstable": True},
        {"out_of_scope": False, "scope_unstable": True},
        {"out_of_scope": True, "scope_unstable": False},
        {"out_of_scope": None},
    ]
    flags, _ = count_annotations(notes)
    assert (flags["unstable_out"], flags["unstable_in"], flags["out_of_scope"]) == (1, 1, 2)
    scope = {"scored": 3, "out_of_scope": 2, "unstable": {"out": 1, "in": 1},
             "support": {"band": (0.25, 0.4)}}  # fmt: skip
    text = unstable_text(scope)
    assert "2 of 3 scored questions" in text and "could rise to 3 or fall toward 1" in text
    assert unstable_text({**scope, "support": {"band": None}}) == ""
    assert unstable_text({**scope, "unstable": None}) == ""


def test_the_stage_marks_the_verdicts_the_range_moves_and_leaves_them_out_of_drift() -> None:
    table, passages, gold = _news_and_banking()
    det = EmbeddingScope(TableEmbedder(table), gold, passages, n_boot=50)
    assert det.support.band is not None  # measured by the fit
    low, high = det.support.band
    assert low <= det.support.cutoff <= high
    # the banking questions' support is 0.4 (test_scope_support): a range around it moves
    # their off-corpus verdict; one below it does not
    questions = [*BANKING, "answerable 0"]
    for band, moved in (((0.35, 0.45), True), ((0.1, 0.2), False)):
        det.support = det.support._replace(cutoff=0.42, band=band)
        stage = EmbeddingScopeStage(det)
        notes: list[dict[str, object]] = [{"refused": False} for _ in questions]
        stage.process(types.SimpleNamespace(events=_events(questions), annotations=notes))
        assert [n["out_of_scope"] for n in notes][:4] == [True] * 4  # off-corpus at 0.42
        assert [n["scope_unstable"] for n in notes][:4] == [moved] * 4
        assert [n["out_of_scope_stable"] for n in notes][:4] == [None if moved else True] * 4
        # a gold row's own question: support 1, far above the range
        assert notes[4]["scope_unstable"] is False and notes[4]["out_of_scope_stable"] is False


def test_a_fit_kept_before_the_range_judges_as_before() -> None:
    # a SupportCheck without a band (a restored state from before it): no range, nothing
    # unstable
    check = SupportCheck(0.3, 0.0, 0.0, 10, 10)
    assert check.band is None and check.band_by_script == {}
    low, high = band_edges(np.array([0.3]), [(0.3, check.band)])
    assert (low.tolist(), high.tolist()) == ([0.3], [0.3])
