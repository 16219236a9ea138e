"""Detector acceptance on seeded synthetic streams (pilot traffic: one question every ~10 s).

Figures (seeded, deterministic) are printed with ``pytest -s`` and summed up in the commit.
"""

from __future__ import annotations

import numpy as np
import pytest

from service.drift import CategoricalDriftDetector, RateDriftDetector

GAP_S = 10.0  # mean seconds between questions: 360 an hour, the window holds ~360
LANGS, LANG_SHARES = ["en", "es", "hi", "fr"], np.array([0.6, 0.2, 0.15, 0.05])
NEW_LANGS = ["zh", "ar", "de", "pt"]
TOPICS, TOPIC_SHARES = ["billing", "admissions", "hostel"], np.array([0.5, 0.3, 0.2])


def stream(
    rng: np.random.Generator, cats: list[str], shares: np.ndarray, n: int, t0: float = 0.0
) -> tuple[list[str], np.ndarray]:
    """``n`` events drawn from ``shares``, one every ~GAP_S seconds, slightly out of order."""
    drawn = [str(c) for c in rng.choice(cats, size=n, p=shares)]
    return drawn, t0 + np.arange(n) * GAP_S + rng.uniform(0, GAP_S, n)


def counts(items: list[str]) -> dict[str, int]:
    return {c: items.count(c) for c in set(items)}


def first_alarm(det: CategoricalDriftDetector | RateDriftDetector, xs, ts, batch: int = 10):  # noqa: ANN001, ANN201
    """Feed micro-batches; return how many events it took to alarm (None: never)."""
    for i in range(0, len(ts), batch):
        det.update_many(xs[i : i + batch], ts[i : i + batch])
        if det.drift_detected:
            return min(i + batch, len(ts))
    return None


def test_language_shift_alarms_within_300_events_and_names_the_new_languages() -> None:
    rng = np.random.default_rng(2026)
    gold, _ = stream(rng, LANGS, LANG_SHARES, 300)
    det = CategoricalDriftDetector(counts(gold))
    before, t1 = stream(rng, LANGS, LANG_SHARES, 3000)
    assert first_alarm(det, before, t1) is None  # silent on the first 3,000 events
    assert det.states == {"reference": "ok", "baseline": "ok"}
    shares = np.concatenate([LANG_SHARES * 0.7, [0.075] * 4])
    after, t2 = stream(rng, LANGS + NEW_LANGS, shares, 3000, t0=3000 * GAP_S)
    delay = first_alarm(det, after, t2)
    print(f"language shift: alarm after {delay} events")
    assert delay is not None and delay <= 300
    report = det.reports["baseline"]
    assert report.state == "drift"
    assert set(NEW_LANGS) <= {s.category for s in report.rising}
    assert set(report.new_categories) == set(NEW_LANGS)
    assert {s.category for s in report.falling} <= set(LANGS)
    assert all(s.ci_low > 0 for s in report.rising)


def test_topic_shift_alarms() -> None:
    rng = np.random.default_rng(7)
    det = CategoricalDriftDetector()  # baseline only: the first 6 h, frozen
    before, t1 = stream(rng, TOPICS, TOPIC_SHARES, 3000)
    assert first_alarm(det, before, t1) is None
    shares = np.concatenate([TOPIC_SHARES * 0.6, [0.2, 0.2]])
    after, t2 = stream(rng, [*TOPICS, "visa", "loans"], shares, 3000, t0=3000 * GAP_S)
    delay = first_alarm(det, after, t2)
    print(f"topic shift: alarm after {delay} events")
    assert delay is not None and delay <= 300
    assert {s.category for s in det.reports["baseline"].rising} == {"visa", "loans"}


@pytest.mark.slow
def test_no_false_alarm_on_100k_events_from_one_mixture() -> None:
    rng = np.random.default_rng(11)
    gold, _ = stream(rng, TOPICS, TOPIC_SHARES, 200)
    det = CategoricalDriftDetector(counts(gold))
    xs, ts = stream(rng, TOPICS, TOPIC_SHARES, 100_000)  # 11.6 days of event time
    for i in range(0, len(ts), 500):
        det.update_many(xs[i : i + 500], ts[i : i + 500])
    print(f"100k stationary events: {det.n_alarms} false alarms in {det.n_tests} tests")
    assert det.n_tests > 3000
    assert det.n_alarms == 0


def test_refusal_rate_5_to_20_percent_alarms() -> None:
    rng = np.random.default_rng(5)
    det = RateDriftDetector()
    flags = np.concatenate([rng.random(3000) < 0.05, rng.random(3000) < 0.20])
    ts = np.arange(6000) * GAP_S
    assert first_alarm(det, flags[:3000], ts[:3000]) is None
    delay = first_alarm(det, flags[3000:], ts[3000:])
    print(f"refusals 5 % -> 20 %: alarm after {delay} events")
    assert delay is not None and delay <= 400
    report = det.reports["baseline"]
    assert report.rate_current > 0.1 and report.ci_low > 0.05


def test_constant_refusal_rate_never_alarms() -> None:
    rng = np.random.default_rng(6)
    det = RateDriftDetector(reference=(25, 500))
    flags, ts = rng.random(100_000) < 0.05, np.arange(100_000) * GAP_S
    for i in range(0, len(ts), 500):
        det.update_many(flags[i : i + 500], ts[i : i + 500])
    print(f"constant 5 % refusals, 100k events: {det.n_alarms} false alarms")
    assert det.n_alarms == 0 and det.state == "ok"


def test_a_window_of_8_events_never_alarms() -> None:
    cat = CategoricalDriftDetector({"en": 1000})
    rate = RateDriftDetector(reference=(0, 1000))
    for day in range(3):  # 8 events a day, all "drifted"
        ts = day * 86_400 + np.arange(8) * 600.0
        cat.update_many(["zh"] * 8, ts)
        rate.update_many([True] * 8, ts)
        assert cat.state == rate.state == "insufficient_data"
        assert not (cat.drift_detected or rate.drift_detected)
    assert cat.n_alarms == rate.n_alarms == 0
