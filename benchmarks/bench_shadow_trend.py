"""What serve's shadow-agreement trend (:class:`service.shadow.trend.AgreementTrend`) costs the
pipeline at its bound: a checkpoint's ``state()`` and its encoding (what
:meth:`service.state.StateStore.checkpoint` writes, every ``checkpoint_interval_s``), and the
hourly re-judge (the sustained verdict worked out again when a result opens a new hour).

The trend is filled to its bound: ``--buckets`` (500) hourly buckets (the first 497 filled,
the 3 re-judges opening the last 3), in each ``--questions``
(200) distinct questions per candidate out of a pool of 2,000 (so they pair across hours),
one result each, for ``--candidates`` (1) candidate: 500 × 200 = 100,000 question cells a
candidate, ``max_questions``' default. Then, per round: the median of 5 checkpoints (each after
one more result in the open hour, as between two checkpoints of a live stream) and of 3
re-judges (each after one more result in a new hour).

With ``--reference DIR`` (a checkout of the code before, e.g. ``git worktree add --detach
/tmp/ref <commit>``) the same measurement runs with ``PYTHONPATH=DIR`` too, alternating with
this tree's, ``--rounds`` times each (this machine is noisy): the ratio is of the medians
measured in the same run.

Run: ``python -m benchmarks.bench_shadow_trend [--reference DIR] [--rounds 3]``. Measured
(session 46, 2 shared cores, load ~4.6; reference: the trend before, commit ce1a60bb):
checkpoint 2.1 ms against 495 ms (ratio 0.004; 4.0 MB either way), re-judge 304 against
804 ms (0.38; what is left is the run scan, :func:`service.quality.over_time._sustained`,
shared with the replay).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

T0 = 1795478400.0  # 2026-11-24 00:00 UTC


def measure(buckets: int, questions: int, candidates: int) -> dict[str, float]:
    """Seconds: ``checkpoint`` (state() + its encoding, median of 5), ``judge`` (one
    re-judge of every candidate, median of 3), and ``bytes`` of the encoded state."""
    import logging

    from service.shadow.trend import AgreementTrend
    from service.state import _text

    logging.getLogger("goldwatch").disabled = True
    rng = random.Random(7)
    pool = [f"question {i}" for i in range(2000)]
    names = [f"cand{c}" for c in range(candidates)]
    trend = AgreementTrend(max_buckets=buckets, clock=lambda: float("inf"))
    trend._dirty = False  # noqa: SLF001 - filled without judging each hour (same state)
    filled = buckets - 3  # the 3 re-judges open the last 3 buckets: the width never doubles
    for hour in range(filled):
        asked = rng.sample(pool, questions)
        for name in names:
            for k, q in enumerate(asked):
                trend.add(T0 + hour * 3600 + k * 10, name, rng.uniform(0.4, 0.9), 0.5, q)
        trend._dirty = False  # noqa: SLF001
    trend.close_input()
    checkpoints, size = [], 0
    for i in range(5):
        trend.add(T0 + (filled - 1) * 3600 + 3000 + i, names[0], 0.6, 0.5, pool[i])
        start = time.perf_counter()
        text = _text(trend.state())
        checkpoints.append(time.perf_counter() - start)
        size = len(text)
    judges = []
    for i in range(3):
        trend.add(T0 + (filled + i) * 3600, names[0], 0.6, 0.5, pool[i])
        start = time.perf_counter()
        trend.close_input()
        judges.append(time.perf_counter() - start)
    return {"checkpoint": statistics.median(checkpoints), "judge": statistics.median(judges),
            "bytes": float(size)}  # fmt: skip


def _child(root: str, args: argparse.Namespace) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": root}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--measure", "--buckets",
         str(args.buckets), "--questions", str(args.questions), "--candidates",
         str(args.candidates)],
        env=env, check=True, capture_output=True, text=True, cwd=root,
    )  # fmt: skip
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--buckets", type=int, default=500)
    parser.add_argument("--questions", type=int, default=200)
    parser.add_argument("--candidates", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--reference", default=None)
    parser.add_argument("--measure", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(args.buckets, args.questions, args.candidates)))
        return
    here = str(Path(__file__).resolve().parent.parent)
    trees = {"this tree": here} | ({"reference": args.reference} if args.reference else {})
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in trees}
    for _ in range(args.rounds):
        for name, root in trees.items():
            runs[name].append(_child(root, args))
    print(f"{args.buckets} hourly buckets x {args.questions} questions x {args.candidates} "
          f"candidates, medians of {args.rounds} rounds")  # fmt: skip
    medians = {name: {k: statistics.median(r[k] for r in rs) for k in rs[0]}
               for name, rs in runs.items()}  # fmt: skip
    for name, m in medians.items():
        print(f"{name:10s} checkpoint (state + encode) {m['checkpoint'] * 1000:8.1f} ms "
              f"({m['bytes'] / 1e6:.2f} MB)   re-judge {m['judge'] * 1000:8.1f} ms")  # fmt: skip
    if "reference" in medians:
        ref, new = medians["reference"], medians["this tree"]
        print(f"ratio this/reference: checkpoint {new['checkpoint'] / ref['checkpoint']:.3f}, "
              f"re-judge {new['judge'] / ref['judge']:.3f}")  # fmt: skip


if __name__ == "__main__":
    sys.path.insert(0, os.environ.get("PYTHONPATH", "").split(os.pathsep)[0] or ".")
    main()
