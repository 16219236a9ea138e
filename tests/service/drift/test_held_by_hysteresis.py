"""A drift state held only by hysteresis says so (issue 18, item 6): ``held_by_hysteresis``
is true exactly when the same test, had the comparison not been in drift before, would have
answered ``ok``."""

from __future__ import annotations

import pytest

from service.drift.detectors import CategoricalDriftDetector, RateDriftDetector, WindowConfig

WINDOWS = WindowConfig(window_s=600, test_every_s=60, baseline="none")


def test_rate_drift_held_between_the_clear_and_alarm_thresholds() -> None:
    det = RateDriftDetector(reference=(50, 1000), min_count=50, windows=WINDOWS)
    ref = {"1": 50, "0": 950}  # 5 %
    strong = det._assess("reference", ref, {"1": 300, "0": 700}, "ok", 0.0, 1e-4)  # 30 %
    assert (strong.state, strong.held_by_hysteresis) == ("drift", False)
    # 10 % against 5 %: the change's CI bound nearest zero (about 2.8 points) is below the
    # 5-point alarm threshold and above the 2.5-point clear threshold
    middle = {"1": 100, "0": 900}
    fresh = det._assess("reference", ref, middle, "ok", 0.0, 1e-4)
    held = det._assess("reference", ref, middle, "drift", 0.0, 1e-4)
    assert fresh.state == "ok" and not fresh.held_by_hysteresis
    assert held.state == "drift" and held.held_by_hysteresis
    assert held.to_dict()["held_by_hysteresis"] is True
    cleared = det._assess("reference", ref, {"1": 52, "0": 948}, "drift", 0.0, 1e-4)
    assert (cleared.state, cleared.held_by_hysteresis) == ("ok", False)


def test_categorical_drift_held_when_the_test_alone_would_not_alarm() -> None:
    det = CategoricalDriftDetector(reference={"en": 900, "hi": 100}, min_count=50,
                                   windows=WINDOWS)  # fmt: skip
    ref = {"en": 900, "hi": 100}
    strong = det._assess("reference", ref, {"en": 500, "hi": 500}, "ok", 0.0, 1e-4)
    assert (strong.state, strong.held_by_hysteresis) == ("drift", False)
    middle = {"en": 840, "hi": 160}  # hi 10 % -> 16 %: between the clear and alarm levels
    fresh = det._assess("reference", ref, middle, "ok", 0.0, 1e-4)
    held = det._assess("reference", ref, middle, "drift", 0.0, 1e-4)
    assert fresh.state == "ok"
    assert held.state == "drift" and held.held_by_hysteresis


def test_effect_thresholds_below_the_old_fixed_clear_ones_build_and_clear_at_half() -> None:
    """A drift-sizing review: the clear thresholds were fixed at 0.025, so a configured
    ``min_rate_change`` (or share change, or JSD) below it stopped the drift stage at start
    with a bare "need 0 <= clear_change <= min_change". They are now half of each alarm
    threshold: 0.025 with the defaults, 0.01 for 0.02."""
    from service.drift.stage import DriftStage
    from service.settings import ConfigError, load_settings

    stage = DriftStage({}, min_rate_change=0.02, min_share_change=0.01, min_jsd=0.03)
    assert {dim: d.clear_change for dim, d in stage.rates.items()} == dict.fromkeys(
        stage.rates, 0.01
    )
    language = stage.categorical["language"]
    assert (language.clear_share_change, language.clear_jsd) == (0.005, 0.015)
    default = DriftStage({})
    assert default.rates["refusal"].clear_change == 0.025
    assert default.categorical["topic"].clear_share_change == 0.025
    assert default.categorical["topic"].clear_jsd == 0.025
    settings = load_settings(None, analytics={"drift": {"min_rate_change": 0.02}})
    assert settings.analytics.drift.min_rate_change == 0.02
    # 0 would clear below 0, never: refused at start, naming the field (a review)
    with pytest.raises(ConfigError, match="min_rate_change"):
        load_settings(None, analytics={"drift": {"min_rate_change": 0}})
