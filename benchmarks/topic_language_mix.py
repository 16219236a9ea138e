"""Level and power of the topic drift test when the language mix changes (direct
standardisation, :mod:`service.drift.strata`; docs/topics.md).

Seeded streams through :class:`~service.drift.stage.DriftStage` alone (annotations given,
no model): 3 topics, 2 languages, ``P(topic | en) = (.6, .3, .1)``, ``P(topic | hi) = (.1,
.2, .7)``; a gold set of 40 en + 20 hi rows drawn from them; ~40 questions an hour for 4
days with trial 41's drift windows (4 h window, 12 h reference window, 8 h warm-up, a test
every 30 min, ``min_count`` 100). Scenarios, each change at hour 48:

* ``lang`` — only the Hindi share changes, 25 % → 55 % (``P(topic | lang)`` fixed): every
  topic alarm is false (the level);
* ``lang+shift`` — the same, and English questions move to ``(.3, .3, .4)`` (power with a
  language change);
* ``shift`` — that English move with the Hindi share steady at 25 % (power, steady mix);
* ``steady`` — nothing changes.

Prints, per scenario, the streams with a topic alarm (either comparison; the first one's
hours after the change, median). Runs the code on ``PYTHONPATH``: the same command with
``PYTHONPATH=<a copy of main>`` gives the unadjusted test's figures on the same streams
(a tree whose :class:`DriftStage` takes no ``gold_topic_strata`` is run without it).

Run: ``python -m benchmarks.topic_language_mix [--streams 200] [--scenarios lang,shift]``
(about 1 s a stream).
"""

from __future__ import annotations

import argparse
import inspect
import statistics
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import numpy as np

from service.drift.stage import DriftStage
from service.drift.windows import WindowConfig
from service.pipeline import Batch

P = {"en": [0.6, 0.3, 0.1], "hi": [0.1, 0.2, 0.7]}
P_SHIFT_EN = [0.3, 0.3, 0.4]
TOPICS = ["t0", "t1", "t2"]
START = datetime(2026, 11, 2, tzinfo=UTC).timestamp()
CHANGE_H = 48.0
SCENARIOS = ("lang", "lang+shift", "shift", "steady")


class _Event:
    question = ""

    def __init__(self, ts: float) -> None:
        self.timestamp = datetime.fromtimestamp(ts, UTC)


def run(seed: int, scenario: str) -> dict[str, float]:
    """``{comparison: hours from the stream's start to its first topic alarm}``."""
    rng = np.random.default_rng(seed)
    gold: dict[str, dict[str, int]] = {"en": {}, "hi": {}}
    for lang, n in (("en", 40), ("hi", 20)):
        for t in rng.choice(3, n, p=P[lang]):
            gold[lang][TOPICS[t]] = gold[lang].get(TOPICS[t], 0) + 1
    topic_counts: dict[str, int] = {}
    for cells in gold.values():
        for t, n in cells.items():
            topic_counts[t] = topic_counts.get(t, 0) + n
    kw: dict[str, Any] = {
        "windows": WindowConfig(window_s=14400, reference_window_s=43200, warmup_s=28800,
                                test_every_s=1800),
        "min_count": 100, "terms": False, "clock": lambda: 4e9,
    }  # fmt: skip
    if "gold_topic_strata" in inspect.signature(DriftStage).parameters:
        kw["gold_topic_strata"] = gold
    stage = DriftStage({"language": {"en": 40, "hi": 20}, "topic": topic_counts}, **kw)
    n = int(rng.poisson(40 * 96))
    ts = np.sort(rng.uniform(0, 96 * 3600, n)) + START
    after = ts >= START + CHANGE_H * 3600
    rises = scenario in ("lang", "lang+shift")
    langs = np.where(rng.random(n) < np.where(after & rises, 0.55, 0.25), "hi", "en")
    u = rng.random(n)
    topics = []
    for i in range(n):
        p = P[str(langs[i])]
        if scenario in ("lang+shift", "shift") and after[i] and langs[i] == "en":
            p = P_SHIFT_EN
        topics.append(TOPICS[int(np.searchsorted(np.cumsum(p), u[i]))])
    for s in range(0, n, 500):
        part = range(s, min(n, s + 500))
        stage.process(Batch(source="file", events=[_Event(ts[i]) for i in part],  # type: ignore[misc]
                            annotations=[{"language": str(langs[i]), "topic": topics[i]}
                                         for i in part]))  # fmt: skip
    out: dict[str, float] = {}
    for alarm in stage.alarms:
        if alarm["dimension"] == "topic" and alarm["state"] == "drift" and not alarm.get("widened"):
            out.setdefault(alarm["comparison"], (alarm["timestamp"] - START) / 3600)
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    args = parser.parse_args(argv)
    for scenario in args.scenarios.split(","):
        results = [run(seed, scenario) for seed in range(args.streams)]
        hit = [min(r.values()) for r in results if r]
        delays = [h - CHANGE_H for h in hit if h >= CHANGE_H]
        before = sum(1 for h in hit if h < CHANGE_H)
        by = {c: sum(1 for r in results if c in r) for c in ("baseline", "reference")}
        print(f"{scenario:11s} {len(hit)} of {args.streams} streams with a topic alarm "
              f"(baseline {by['baseline']}, reference {by['reference']}; {before} before the "
              f"change); median {statistics.median(delays) if delays else float('nan'):.1f} h "
              "after it", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
