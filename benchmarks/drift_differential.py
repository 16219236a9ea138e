"""Differential of the drift stage between two copies of the code: one digest per stream.

Seeded random streams through :class:`service.drift.stage.DriftStage`: dense to sparse (an
event every 0.5 s to every 15 min on average), languages and topics that shift, refusals and
scope flags on some events, late, future and held-ahead events, batches of 1 to 500 events,
one stream or Kafka-like partitions (``t[0]``..``t[3]``), frozen and previous baselines,
idle turns, a restore from a JSON round trip of the snapshot at a random batch. Each
stream's digest hashes the report after every batch, the final snapshot (its key order
included) and the kept-out counts. Run it with each copy on ``PYTHONPATH`` and compare::

    PYTHONPATH=/path/to/main python -m benchmarks.drift_differential 0 700 > before.txt
    PYTHONPATH=. python -m benchmarks.drift_differential 0 700 > after.txt
    diff before.txt after.txt

The thirtieth session ran 0..700 against main 62180f0 (the per-test shortcuts of drift):
no difference. About 0.5 s a stream.
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from datetime import UTC, datetime
from types import SimpleNamespace
from typing import Any

from service.drift.stage import DriftStage
from service.drift.windows import WindowConfig


class E:
    """An event as the stage reads it: its timestamp only."""

    __slots__ = ("timestamp",)

    def __init__(self, t: float) -> None:
        self.timestamp = datetime.fromtimestamp(t, UTC)


def stream(seed: int) -> tuple[list[tuple[float, dict[str, Any]]], float]:
    """``([(timestamp, annotations)], wall clock)`` of stream ``seed``."""
    rng = random.Random(seed)
    T0 = 1_790_000_000.0
    gap = rng.choice([0.5, 3.0, 20.0, 86.0, 300.0, 900.0])  # dense to very sparse
    n = rng.choice([300, 1500, 4000])
    langs = rng.choice([["en"] * 9 + ["es"], ["en", "hi", "es", "de", "fr"], ["en"]])
    topics = [f"t{k}" for k in range(rng.choice([2, 6, 20]))]
    late_p = rng.choice([0.0, 0.02, 0.2])
    fut_p = rng.choice([0.0, 0.01])
    ahead_p = rng.choice([0.0, 0.002])
    shift_at = rng.random()
    t, out = T0, []
    for i in range(n):
        t += rng.expovariate(1 / gap)
        shifted = i > shift_at * n
        note = {
            "language": rng.choice(langs + (["hi", "xx"] if shifted else [])),
            "topic": rng.choice(topics[: max(1, len(topics) // (1 if shifted else 2))]),
        }
        if rng.random() < 0.1:
            note["language"] = None
        if rng.random() < 0.7:
            note["refused"] = rng.random() < (0.3 if shifted else 0.05)
        if rng.random() < 0.5:
            note["out_of_scope"] = rng.random() < 0.1
        stamp = t
        r = rng.random()
        if r < late_p:
            stamp = t - rng.uniform(100, 5000)
        elif r < late_p + fut_p:
            stamp = T0 + 400 * 86400 + rng.uniform(0, 1e5)
        elif r < late_p + fut_p + ahead_p:
            stamp = t + rng.uniform(3 * 3600, 3 * 86400)
        out.append((round(stamp, 3), note))
    return out, T0 + 300 * 86400


def config(rng: random.Random) -> WindowConfig:
    """A random window configuration."""
    base = rng.choice(["frozen", "previous"])
    w = rng.choice([600.0, 3600.0])
    return WindowConfig(
        window_s=w,
        bucket_s=rng.choice([60.0, 30.0]),
        reference_window_s=rng.choice([1800.0, 86400.0]),
        test_every_s=rng.choice([60.0, 300.0]),
        baseline=base,
        warmup_s=rng.choice([1200.0, 21600.0]),
        allowed_lateness_s=rng.choice([300.0, 3600.0]),
        max_ahead_s=rng.choice([1200.0, 21600.0]),
        ahead_confirm=rng.choice([1, 3, 5]),
    )


def run(seed: int) -> str:
    """The digest of stream ``seed`` through a fresh stage (see the module docstring)."""
    rng = random.Random(f"cfg-{seed}")
    events, now = stream(seed)
    cfg = config(rng)
    gold = {"language": {"en": 90, "es": 10, "hi": 5}, "topic": {"t0": 40, "t1": 30, "t2": 20}}
    if rng.random() < 0.2:
        gold = {"language": {"en": 90, "es": 10}}
    min_count = rng.choice([30, 100, 200])

    def make() -> DriftStage:
        return DriftStage(gold, windows=cfg, min_count=min_count, clock=lambda: now)

    stage = make()
    parts = rng.random() < 0.4
    h = hashlib.sha256()
    i = 0
    restore_at = rng.randrange(len(events)) if rng.random() < 0.5 else -1
    while i < len(events):
        size = rng.choice([1, 5, 37, 100, 250, 500])
        chunk = events[i : i + size]
        streams = [f"t[{rng.randrange(4)}]" for _ in chunk] if parts else None
        if parts and rng.random() < 0.5:  # one partition's stretch
            streams = [streams[0]] * len(chunk)
        batch = SimpleNamespace(
            events=[E(s) for s, _ in chunk],
            annotations=[dict(n) for _, n in chunk],
            streams=streams,
        )
        stage.process(batch)
        if rng.random() < 0.05:
            stage.idle()
        h.update(json.dumps(stage.report(), sort_keys=True, default=str).encode())
        if i <= restore_at < i + size:
            snap = json.loads(json.dumps(stage.state_snapshot()))
            stage = make()
            stage.restore(snap)
        i += size
    h.update(json.dumps(stage.state_snapshot(), default=str).encode())  # key order too
    h.update(json.dumps(stage.take_kept_out()).encode())
    return h.hexdigest()[:20]


def main(argv: list[str] | None = None) -> None:
    """Print ``seed digest`` for each seed of ``START END`` (the command line)."""
    args = sys.argv[1:] if argv is None else argv
    for seed in range(int(args[0]), int(args[1])):
        print(seed, run(seed), flush=True)


if __name__ == "__main__":
    main()
