"""Drift's per-test shortcuts give what the plain computation gives.

A log of ~1,000 questions a day is tested every 5 minutes of event time per dimension with
~3.5 new events a test (trial 12), so the tests were most of its cost. Four shortcuts, each
checked here against a computation that does not use it:

* a window span's counts are running sums (:meth:`CategoryWindow._sum`), kept as events are
  added and buckets leave: checked against the sum of the snapshot's buckets in the span,
  worked out here, on random streams (out of order, late, jumps past the span, the ring's
  slots reused, new categories after the sums were taken, a restore);
* an update of a few events of one stream is worked out in plain Python
  (:meth:`CategoryWindow._update_small`): checked against the NumPy path (the small path
  switched off) on the same parts — same state, result and last-update arrays;
* the JSD lower bound of a table the detector saw lately is remembered
  (:meth:`CategoricalDriftDetector._jsd_bound`): the same float, and no second bootstrap;
* the reference side of the share changes' Newcombe interval is remembered
  (:func:`service.drift.stats_tests._newcombe_against`): the same floats as
  :func:`newcombe_interval`.

The stage's reports and snapshots against the code before (main 62180f0) were compared by
``benchmarks/drift_differential.py`` (700 seeded streams, run with each copy of the code:
no difference; CHANGELOG, thirtieth session).
"""

from __future__ import annotations

import json
import math
import random
from collections import Counter

import numpy as np
import pytest

from service.drift import detectors, windows
from service.drift.detectors import CategoricalDriftDetector
from service.drift.distances import js_divergence_lower_bound
from service.drift.stats_tests import (
    _newcombe_against,
    auto_is_asymptotic,
    chi2_from_table,
    newcombe_interval,
)
from service.drift.windows import CategoryWindow, ComparisonWindows, WindowConfig


def _expected(window: CategoryWindow, span_s: float, offset_s: float) -> dict[str, int]:
    """The span's counts from the window's snapshot: its buckets from ``watermark's bucket
    − ceil(offset / bucket) − ceil(span / bucket) + 1`` to ``watermark's bucket −
    ceil(offset / bucket)``, summed here."""
    snap = window.snapshot()
    if snap["watermark"] is None:
        return {}
    last = math.floor(snap["watermark"] / window.bucket_s) - math.ceil(offset_s / window.bucket_s)
    first = last - math.ceil(span_s / window.bucket_s) + 1
    total: Counter[str] = Counter()
    for bucket, cells in snap["buckets"].items():
        if first <= int(bucket) <= last:
            total.update(cells)
    return {name: n for name, n in total.items() if n > 0}


SMALL = windows.SMALL_UPDATE  # (the tests below set it)
SPANS = ((600.0, 0.0), (3600.0, 0.0), (600.0, 600.0), (120.0, 0.0), (1800.0, 60.0))


@pytest.mark.parametrize("seed", range(12))
def test_running_span_sums_equal_the_buckets_summed_afresh(seed: int) -> None:
    rng = random.Random(seed)
    window = CategoryWindow(600.0, 60.0, allowed_lateness_s=900.0, retention_s=3600.0,
                            max_categories=rng.choice([3, 50]))  # fmt: skip
    t = 1_790_000_000.0
    checked = 0
    for step in range(400):
        # mostly ~1 event a minute and a half; now and then a burst, a gap past every span
        # (the sums are taken afresh), events far behind (late) or a little behind (out of
        # order, into buckets already summed)
        t += rng.choice([rng.expovariate(1 / 86.4)] * 8 + [0.5, 7200.0 * rng.random() * 3])
        size = rng.choice([1, 1, 2, 3, 5, 20, 40])
        stamps = [t - rng.choice([0.0, 0.0, 0.0, rng.uniform(0, 800), rng.uniform(0, 5000)])
                  for _ in range(size)]  # fmt: skip
        categories = [rng.choice(["en", "hi", "es", f"new{step // 40}"]) for _ in range(size)]
        if step % 2:  # with its watermarks, as ComparisonWindows.ingest: the small path
            marks = windows.running_watermark(np.array(stamps), window.watermark, None,
                                              window.future_tolerance_s)  # fmt: skip
            window.update_many(categories, stamps, watermarks=marks)
        else:
            window.update_many(categories, stamps)
        for span_s, offset_s in rng.sample(SPANS, 3):
            assert window.counts(span_s, offset_s) == _expected(window, span_s, offset_s)
            checked += 1
        if step == 200:  # a restore starts the sums afresh
            state = json.loads(json.dumps(window.snapshot()))
            size = window.max_categories
            window = CategoryWindow(600.0, 60.0, allowed_lateness_s=900.0, retention_s=3600.0,
                                    max_categories=size).restore(state)  # fmt: skip
    assert checked == 1200


def _replay_parts(small: int, seed: int, monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Feed a seeded stream to a ComparisonWindows (test every minute: parts of a few events)
    with ``SMALL_UPDATE`` = ``small``; each part's window state and last-update arrays."""
    monkeypatch.setattr(windows, "SMALL_UPDATE", small)
    rng = random.Random(seed)
    config = WindowConfig(window_s=600, bucket_s=60, reference_window_s=1800, test_every_s=60,
                          warmup_s=1200, allowed_lateness_s=300, future_tolerance_s=60,
                          max_ahead_s=1200, ahead_confirm=3)  # fmt: skip
    comparison = ComparisonWindows(config, min_count=5, has_reference=True)
    seen: list[object] = []
    window = comparison.window

    def on_tick(after: int) -> None:
        seen.append((after, comparison.current(), comparison.current(reference=True),
                     comparison.baseline(), window.last_accepted.tolist(),
                     window.last_accepted_categories, window.last_late.tolist(),
                     window.last_future.tolist()))  # fmt: skip

    t, now = 1_790_000_000.0, 1_790_000_000.0 + 2 * 86_400
    newest = t  # of the stamps not in the future: the watermark (nothing is held)
    for _ in range(150):
        size = rng.choice([1, 3, 8, 30])
        stamps = []
        for _ in range(size):
            t += rng.expovariate(1 / 40)
            kind = rng.random()
            # late, in the future, or at the lateness limit (300 s behind: kept; 300.5: late)
            stamp = (t - 600 if kind < 0.05 else now + 500 if kind < 0.07
                     else newest - rng.choice([300.0, 300.5]) if kind < 0.12 else t)  # fmt: skip
            stamps.append(stamp)
            newest = max(newest, stamp) if stamp < now else newest
        categories = [rng.choice(["a", "b", "c", "d"]) for _ in stamps]
        comparison.ingest(categories, stamps, now, on_tick)
        seen.append((window.snapshot(), comparison.snapshot(),
                     [m.tolist() for m in comparison.kept_out_masks()]))  # fmt: skip
    return seen


@pytest.mark.parametrize("seed", range(6))
def test_a_small_update_in_python_equals_the_numpy_path(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    taken: list[int] = []
    original = CategoryWindow._update_small

    def counted(self: CategoryWindow, *args: object) -> object:
        taken.append(1)
        return original(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(CategoryWindow, "_update_small", counted)
    plain = _replay_parts(0, seed, monkeypatch)  # never the small path
    assert not taken
    small = _replay_parts(SMALL, seed, monkeypatch)
    assert len(taken) > 100  # (most parts are a few events)
    assert small == plain


def test_a_small_update_still_refuses_a_timestamp_that_is_not_finite() -> None:
    window = CategoryWindow(600.0, 60.0)
    marks = (np.array([math.nan]), np.array([False]), np.array([False]), [], [])
    with pytest.raises(ValueError, match="finite"):
        window.update_many(["a"], [math.nan], watermarks=marks)


def test_the_jsd_bound_of_a_table_seen_lately_is_the_same_float_without_a_new_bootstrap(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    calls: list[bytes] = []

    def counted(table: np.ndarray, confidence: float = 0.95) -> float:
        calls.append(table.tobytes())
        return js_divergence_lower_bound(table, confidence)

    monkeypatch.setattr(detectors, "js_divergence_lower_bound", counted)
    detector = CategoricalDriftDetector({"en": 60, "hi": 20}, confidence=0.9)
    rng = np.random.default_rng(3)
    tables = [np.array([[60.0, 20.0, 0.0], rng.integers(1, 400, 3).astype(float)])
              for _ in range(detectors.JSD_BOUNDS_KEPT + 4)]  # fmt: skip
    for table in tables:
        assert detector._jsd_bound(table) == js_divergence_lower_bound(table, 0.9)
    assert len(calls) == len(tables)
    for table in tables[-detectors.JSD_BOUNDS_KEPT :]:  # remembered: no second bootstrap
        assert detector._jsd_bound(table.copy()) == js_divergence_lower_bound(table, 0.9)
    assert len(calls) == len(tables)
    assert detector._jsd_bound(tables[0]) == js_divergence_lower_bound(tables[0], 0.9)
    assert len(calls) == len(tables) + 1  # the oldest was forgotten: computed again


@pytest.mark.parametrize("seed", range(20))
def test_the_remembered_reference_side_gives_newcombes_floats(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 12))
    reference = rng.integers(0, 50, k).astype(float) * (seed % 5 != 0)  # some all-zero rows
    for _ in range(3):  # the same reference against several current rows
        current = rng.integers(0, 500, k).astype(float)
        n_ref, n_cur = reference.sum(), current.sum()
        lo, hi = _newcombe_against(current, n_cur, reference, n_ref, 0.95)
        want_lo, want_hi = newcombe_interval(current, n_cur, reference, n_ref, 0.95)
        assert lo.tobytes() == want_lo.tobytes() and hi.tobytes() == want_hi.tobytes()


@pytest.mark.parametrize("seed", range(40))
def test_auto_is_asymptotic_says_when_auto_gives_the_asymptotic_test(seed: int) -> None:
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 9))
    size = rng.choice([3, 20, 400])
    table = rng.integers(0, size, (2, k)).astype(float)
    table[:, rng.random(k) < 0.2] = 0.0  # empty columns
    if rng.random() < 0.1:
        table[0] = 0.0  # an empty row: degenerate
    names = [f"c{i}" for i in range(k)]
    auto = chi2_from_table(names, table, "auto", n_resamples=199)
    asymptotic = chi2_from_table(names, table, "asymptotic", n_resamples=199)
    if auto_is_asymptotic(table):
        assert auto == asymptotic
    else:  # pooled, conditional or Monte-Carlo: another test
        assert auto.method in ("pooled", "conditional", "monte_carlo")


def _bootstraps(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []

    def counted(table: np.ndarray, confidence: float = 0.95) -> float:
        calls.append(1)
        return js_divergence_lower_bound(table, confidence)

    monkeypatch.setattr(detectors, "js_divergence_lower_bound", counted)
    return calls


def test_no_bootstrap_where_the_jsd_bound_cannot_change_the_report(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # a 30-row gold set against 288 live questions: JSD 0.064 >= 0.05, no share change's CI
    # bound reaches 5 points, p 0.019: not below alpha 1e-4, so no alarm whatever the bound
    # (and the table meets Cochran's rule: the test is asymptotic either way)
    calls = _bootstraps(monkeypatch)
    detector = CategoricalDriftDetector({"a": 1}, min_count=100)
    reference, current = {"a": 14, "b": 6, "c": 5, "d": 5}, {"a": 78, "b": 29, "c": 90, "d": 91}
    report = detector._assess("reference", reference, current, "ok", 0.0, 1e-4)
    assert report.js_divergence >= 0.05 and report.p_value >= 1e-4
    assert all(max(s.ci_low, -s.ci_high) < 0.05 for s in (*report.rising, *report.falling))
    assert report.state == "ok" and not calls
    # at alpha 0.05 the same p-value is significant: the bound decides, and is computed
    report = detector._assess("reference", reference, current, "ok", 0.0, 0.05)
    assert report.p_value < 0.05 and len(calls) == 1
