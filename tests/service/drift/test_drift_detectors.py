"""Detector contract: river shape, validation, batching invariance, snapshots, hysteresis."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from service.drift import CategoricalDriftDetector, RateDriftDetector, WindowConfig

FAST = WindowConfig(window_s=600, bucket_s=60, test_every_s=60, warmup_s=1200)
DETECTORS: dict[str, Callable[[], Any]] = {
    "categorical": lambda: CategoricalDriftDetector({"en": 80, "hi": 20}, windows=FAST),
    "rate": lambda: RateDriftDetector(reference=(5, 100), windows=FAST),
}


def events(kind: str, n: int, seed: int = 0, shift_at: int | None = None) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    ts = np.arange(n) * 2.0 + rng.uniform(0, 2.0, n)
    drifted = np.arange(n) >= (shift_at if shift_at is not None else n)
    if kind == "rate":
        return rng.random(n) < np.where(drifted, 0.3, 0.05), ts
    before = rng.choice(["en", "hi"], n, p=[0.8, 0.2])
    after = rng.choice(["en", "hi", "zh"], n, p=[0.4, 0.2, 0.4])
    return [str(c) for c in np.where(drifted, after, before)], ts


@pytest.mark.parametrize("kind", DETECTORS)
def test_river_shape(kind: str) -> None:
    det = DETECTORS[kind]()
    xs, ts = events(kind, 5)
    assert det.update(xs[0], ts[0]) is det
    assert det.update_many(xs[1:], ts[1:]) is det
    assert det.drift_detected is False
    with pytest.raises(AttributeError):
        det.drift_detected = True
    with pytest.raises(ValueError):
        det.update_many(xs[:2], ts[:1])


@pytest.mark.parametrize("kind", DETECTORS)
def test_update_and_update_many_agree_whatever_the_batching(kind: str) -> None:
    xs, ts = events(kind, 1500, shift_at=900)
    one, many = DETECTORS[kind](), DETECTORS[kind]()
    for x, t in zip(xs, ts, strict=True):
        one.update(x, t)
    for i in range(0, 1500, 97):
        many.update_many(xs[i : i + 97], ts[i : i + 97])
    assert one.snapshot() == many.snapshot()
    assert one.reports == many.reports
    assert one.n_alarms == many.n_alarms >= 1


@pytest.mark.parametrize("kind", DETECTORS)
def test_snapshot_restore_continues_like_an_uninterrupted_run(kind: str) -> None:
    xs, ts = events(kind, 1500, seed=3, shift_at=1000)
    whole, first = DETECTORS[kind](), DETECTORS[kind]()
    whole.update_many(xs, ts)
    first.update_many(xs[:700], ts[:700])
    state = json.loads(json.dumps(first.snapshot()))  # JSON-able for the state store
    second = DETECTORS[kind]().restore(state)
    second.update_many(xs[700:], ts[700:])
    assert second.snapshot() == whole.snapshot()
    assert second.states == whole.states and second.drift_detected
    for report in second.reports.values():
        json.dumps(report.to_dict())
    with pytest.raises(ValueError):
        DETECTORS[kind]().restore({"version": 99})
    assert DETECTORS[kind]().restore(None).n_tests == 0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"alpha": 0.0},
        {"alpha": 1.0},
        {"min_count": 0},
        {"min_reference_count": 0},
        {"n_dimensions": 0},
        {"confidence": 1.0},
        {"min_jsd": 0.01, "clear_jsd": 0.02},
        {"min_share_change": 0.01, "clear_share_change": 0.02},
    ],
)
def test_categorical_bad_arguments_raise(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        CategoricalDriftDetector({"en": 1}, **kwargs)


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((), {"windows": WindowConfig(baseline="none")}),  # nothing to compare with
        (((5, 3),), {}),
        (((1, 10),), {"min_change": 0.01, "clear_change": 0.02}),
    ],
)
def test_rate_bad_arguments_raise(args: tuple, kwargs: dict) -> None:
    with pytest.raises(ValueError):
        RateDriftDetector(*args, **kwargs)


def test_insufficient_reference_never_alarms() -> None:
    det = CategoricalDriftDetector({"en": 10}, windows=FAST)  # below min_reference_count
    det.update_many(["zh"] * 600, np.arange(600) * 2.0)
    assert det.states["reference"] == "insufficient_data"


def test_hysteresis_holds_between_the_thresholds_then_clears() -> None:
    config = WindowConfig(window_s=600, reference_window_s=600, test_every_s=60, baseline="none")

    def phase(det: RateDriftDetector, start: float, rate: float) -> None:
        """Exactly ``rate`` refused, spread evenly (no sampling noise); 2,400 per window."""
        t = start + np.arange(0, 1200, 0.25)
        det.update_many(
            np.floor(np.arange(len(t)) * rate) != np.floor((np.arange(len(t)) + 1) * rate), t
        )

    det = RateDriftDetector(reference=(500, 10_000), windows=config)  # 5 %
    phase(det, 0, 0.30)
    assert det.drift_detected and det.n_alarms == 1
    phase(det, 1200, 0.10)  # +5 points: CI bound ~ +3.7, between clear (2.5) and alarm (5)
    assert det.drift_detected and det.n_alarms == 1
    fresh = RateDriftDetector(reference=(500, 10_000), windows=config)
    phase(fresh, 1200, 0.10)
    assert fresh.state == "ok"  # the same traffic does not raise a new alarm
    phase(det, 2400, 0.05)
    assert det.state == "ok" and det.n_alarms == 1


def test_previous_window_baseline_alarms_on_change_then_settles() -> None:
    config = WindowConfig(window_s=600, test_every_s=60, baseline="previous")
    det = CategoricalDriftDetector(windows=config)
    xs, ts = events("categorical", 3000, seed=4, shift_at=1500)
    det.update_many(xs, ts)
    assert det.n_alarms == 1 and det.state == "ok"  # the new mix is now the previous window


def test_rebaseline_starts_a_new_warm_up() -> None:
    det = CategoricalDriftDetector(windows=FAST)
    xs, ts = events("categorical", 2000, seed=5, shift_at=1000)
    det.update_many(xs[:1100], ts[:1100])
    det.rebaseline()
    det.update_many(xs[1100:1400], ts[1100:1400])
    assert det.states["baseline"] == "insufficient_data"  # warming up again
    det.update_many(xs[1400:], ts[1400:])
    assert det.states["baseline"] == "ok"


def test_jsd_bound_is_bootstrapped_only_when_it_can_decide(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:  # fmt: skip
    """The JSD's bootstrap lower bound decides a test only when the share changes do not:
    English 80 % -> 0 % is a share change far above ``min_share_change`` (its CI bound is
    near -0.8), so the bound is never computed and the detector still alarms; 40 categories
    of 2.5 % each replaced by 40 others is JSD 1 with every share change below 5 points, so
    there the bound runs and decides the alarm."""
    import service.drift.detectors as detectors

    calls: list[float] = []
    bound = detectors.js_divergence_lower_bound

    def counting(table: Any, confidence: float = 0.95) -> float:
        calls.append(confidence)
        return bound(table, confidence)

    monkeypatch.setattr(detectors, "js_divergence_lower_bound", counting)
    config = WindowConfig(window_s=600, test_every_s=60, baseline="none")
    det = CategoricalDriftDetector({"en": 800, "hi": 200}, windows=config)
    det.update_many(["zh"] * 600, np.arange(600) * 2.0)
    assert det.states["reference"] == "drift"
    assert calls == []
    many = CategoricalDriftDetector({f"a{i}": 25 for i in range(40)}, windows=config)
    many.update_many([f"b{i % 40}" for i in range(1200)], np.arange(1200) * 1.0)
    assert many.states["reference"] == "drift"
    assert calls  # the bound was needed: no single share moved 5 points


def test_a_language_the_gold_set_lacks_raises_the_reference_alarm() -> None:
    """Trial user5 (s14 finding 2): gold en 45, es 10; one window of en 809, es 68,
    hi-Latn 123. The full 2 x 3 table meets Cochran's rule (one expected cell of 6 below 5,
    es's 4.07), so chi2 = 15.905 on 2 dof, p = exp(-15.905 / 2) = 3.52e-4 < alpha 0.001
    (one window per alpha period, one comparison); hi-Latn's share change (12.3 points,
    Newcombe CI from 5.5) is above 5 points, so the detector alarms. Pooling hi-Latn into
    es gave p = 0.866 and `ok`."""
    cats = ["en"] * 808 + ["es"] * 68 + ["hi-Latn"] * 123
    order = np.random.default_rng(0).permutation(len(cats))
    xs = [cats[i] for i in order] + ["en"]  # the last event (t = 600 s) triggers the test
    config = WindowConfig(window_s=600, reference_window_s=600, test_every_s=600,
                          alpha_period_s=600, baseline="none")  # fmt: skip
    det = CategoricalDriftDetector({"en": 45, "es": 10}, windows=config, min_count=1000)
    det.update_many(xs, np.r_[60 + np.arange(999) * 0.54, 600.0])
    report = det.reports["reference"]
    assert (report.n_reference, report.n_current) == (55, 1000)
    assert report.method == "asymptotic" and report.alpha == pytest.approx(0.001)
    assert report.p_value == pytest.approx(np.exp(-15.905068 / 2), rel=1e-5)
    assert report.state == "drift" and [s.category for s in report.rising] == ["hi-Latn"]
