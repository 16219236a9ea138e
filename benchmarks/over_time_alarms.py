"""How often the over-time tests of :mod:`service.quality.over_time` call a stationary stream
"LOWER beyond noise", and how often they find a planted sustained drop (trial 41, M3).

Each simulated run is 5 days of production's scored known questions (``rate`` an hour,
Poisson, spread uniformly over the hour) over a gold set of ``rows`` rows asked with Zipf
popularity (``s`` 1.1: a few rows are asked far more often than the rest). Per row, a fixed
retriever: 60 % of the rows always hit, 10 % always miss, 30 % hit at random (p 0.5 per
event, a retriever whose index or cut-off makes the row flip). In one hour of every day one
user asks one row 12 times (trial 15's repeats). The stationary runs change nothing; the
planted runs, from day 3 00:00 to the end, replace each answerable hit by a miss with
probability 0.5 (trial 41's degradation: 176 of 353 hits). The agreement runs do the same
with a shadow candidate's RBO: per question a fixed RBO (Beta(5, 2)), 30 % of questions
with per-event noise (± 0.2 uniform, clipped), half the traffic new questions asked once.

Run: ``python -m benchmarks.over_time_alarms [--runs 200]``. Prints, per scenario, how many
runs the sustained test and the worst-point test called beyond noise, with a 95 % Wilson
interval; the family-wise level of each test is 0.05.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from service.drift.stats_tests import wilson_interval
from service.jobs.series import TimeSeries
from service.quality.over_time import over_time

HOUR, DAY = 3600.0, 86400.0
START = 1_793_577_600.0  # 2026-11-02 00:00 UTC


def known_run(seed: int, drop: bool, rate: float = 8.0, rows: int = 40,
              days: int = 5) -> dict[str, Any]:  # fmt: skip
    """One simulated run's series report (module docstring); ``drop``: the planted change."""
    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=rows, p=[0.6, 0.1, 0.3])  # 0 hit, 1 miss, 2 random
    weights = 1.0 / np.arange(1, rows + 1) ** 1.1
    weights /= weights.sum()
    series = TimeSeries(bucket_s=HOUR)
    for h in range(days * 24):
        t0 = START + h * HOUR
        n = int(rng.poisson(rate))
        asked = list(rng.choice(rows, size=n, p=weights))
        if h % 24 == 7:  # one user, one row, 12 times
            asked += [int(rng.integers(rows))] * 12
        for q in asked:
            hit = 1 if kind[q] == 0 else 0 if kind[q] == 1 else int(rng.random() < 0.5)
            if drop and h >= 2 * 24 and hit and rng.random() < 0.5:
                hit = 0
            t = t0 + float(rng.uniform(0, HOUR))
            series.add_known(t, {"recall": hit, "hit": hit, "rr": hit}, f"g{q}")
    return series.report()


def agreement_run(seed: int, drop: bool, rate: float = 30.0, rows: int = 300,
                  days: int = 5) -> dict[str, Any]:  # fmt: skip
    """One simulated run of a candidate's RBO (module docstring); ``drop``: from day 3, half
    the results lose 0.3 of RBO."""
    rng = np.random.default_rng(seed)
    fixed = rng.beta(5, 2, size=rows)
    noisy = rng.random(rows) < 0.3
    weights = 1.0 / np.arange(1, rows + 1) ** 1.1
    weights /= weights.sum()
    series = TimeSeries(bucket_s=HOUR)
    new = 0
    for h in range(days * 24):
        t0 = START + h * HOUR
        for _ in range(int(rng.poisson(rate))):
            t = t0 + float(rng.uniform(0, HOUR))
            if rng.random() < 0.5:
                new += 1
                question, rbo = f"new {new}", float(rng.beta(5, 2))
            else:
                q = int(rng.choice(rows, p=weights))
                rbo = float(fixed[q])
                if noisy[q]:
                    rbo = float(np.clip(rbo + rng.uniform(-0.2, 0.2), 0.0, 1.0))
                question = f"q {q}"
            if drop and h >= 2 * 24 and rng.random() < 0.5:
                rbo = max(rbo - 0.3, 0.0)
            series.add_agreement(t, "mine", rbo, rbo, question)
    return series.report()


def count(runs: int, drop: bool, agreement: bool) -> dict[str, int]:
    """How many of ``runs`` seeded runs each test called LOWER beyond noise."""
    found = {"sustained": 0, "worst": 0, "either": 0}
    for seed in range(runs):
        if agreement:
            track = over_time(agreement_run(seed, drop))["agreement"]["mine"]
        else:
            track = over_time(known_run(seed, drop))["known"]
        sustained = bool((track.get("sustained") or {}).get("beyond_noise"))
        worst = bool((track.get("worst") or {}).get("beyond_noise"))
        found["sustained"] += sustained
        found["worst"] += worst
        found["either"] += sustained or worst
    return found


def _share(k: int, n: int) -> str:
    low, high = wilson_interval(k, n)
    return f"{k}/{n} ({k / n:.1%}, 95 % {float(low):.1%}-{float(high):.1%})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    runs = parser.parse_args().runs
    for name, drop, agreement in (
        ("known, stationary", False, False),
        ("known, 50 % hit loss from day 3", True, False),
        ("agreement, stationary", False, True),
        ("agreement, RBO -0.3 on half from day 3", True, True),
    ):
        found = count(runs, drop, agreement)
        print(
            f"{name}: sustained {_share(found['sustained'], runs)}; worst point "
            f"{_share(found['worst'], runs)}; either {_share(found['either'], runs)}"
        )


if __name__ == "__main__":
    main()
