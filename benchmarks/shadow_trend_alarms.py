"""How often serve's live sustained verdict on shadow agreement
(:class:`service.shadow.trend.AgreementTrend`) raises on a steady stream, per hourly look and
per stream, and how many consecutive looks a drop must stand at (trial 45 H2 review).

Each stream is 3 days of one candidate's RBO with production: 15 results an hour (every
200 s), 40 questions asked with popularity 1/rank, a fixed RBO per question (uniform 0.4-0.9)
plus Gaussian noise (sd 0.1, clipped to [0, 1]); nothing changes. The trend looks once an
event-time hour (as serve). Per N, a stream "alarms" when at some look the drop was beyond
noise, reached the latest judged hour and had its last quarter lower at N consecutive looks
(``looks >= N``; serve's ``CONFIRM_LOOKS`` is 3).

Run: ``python -m benchmarks.shadow_trend_alarms [--streams 200] [--first-seed 0]``
(about 2 s a stream: two trends). Measured (seeds 0-399, 26,410 looks): any run beyond
noise at some look 27/400 streams (347 looks); since session 46 a look counts when the run
chosen among those reaching the latest point is beyond noise and its last quarter lower too:
N=1 9/400 (11 looks); N=2 1/400 (2); N=3 1/400 (1 look); N=4 0/400; N=6 0/400 (before, counting the
lowest-p run when it reached the end: N=1 27/400 (47 looks), N=2 7/400 (11), N=3 1/400 (2),
N=4 1/400 (1), N=6 0/400). Since the s46 review a look counts toward N only when the last
tested point moved on, and a standing drop stays while its last quarter is lower at 0.05
(hysteresis); streams standing at some look: N=1 9/400, N=2 0/400, N=3 0/400, N=4 0/400,
N=6 0/400; looks standing under serve's rule (N=3) 0/26,410.
"""

from __future__ import annotations

import argparse
import logging
import random

from service.shadow.trend import CONFIRM_LOOKS, AgreementTrend, stands

T0 = 1795478400.0  # 2026-11-24 00:00 UTC
NS = (1, 2, 3, 4, 6)


def run(streams: int, first_seed: int = 0) -> dict[str, object]:
    """Counts over ``streams`` seeded streams (see the module docstring)."""
    logging.getLogger("goldwatch").disabled = True
    alarms = dict.fromkeys(NS, 0)
    standing = 0
    looks = raw_streams = raw_looks = 0
    for seed in range(first_seed, first_seed + streams):
        rng = random.Random(seed)
        questions = [f"q{i}" for i in range(40)]
        weights = [1 / (i + 1) for i in range(40)]
        base = {q: rng.uniform(0.4, 0.9) for q in questions}
        # a drop starts standing at its N-th strict look under every N, and only then does
        # the hysteresis (a standing drop's looser last-quarter level) change the looks: so
        # ``first`` (confirm_looks = max(NS)) says for every N <= max(NS) whether the stream
        # ever stands; ``serve`` (CONFIRM_LOOKS) counts the looks standing under serve's rule
        first = AgreementTrend(confirm_looks=max(NS), clock=lambda: float("inf"))
        serve = AgreementTrend(confirm_looks=CONFIRM_LOOKS, clock=lambda: float("inf"))
        hit, raw = dict.fromkeys(NS, False), False
        for hour in range(72):
            for k in range(15):
                q = rng.choices(questions, weights)[0]
                rbo = min(1.0, max(0.0, base[q] + rng.gauss(0, 0.1)))
                first.add(T0 + hour * 3600 + k * 200, "c", rbo, None, q)
                serve.add(T0 + hour * 3600 + k * 200, "c", rbo, None, q)
            verdict = first.verdicts().get("c")
            if verdict is None:
                continue
            looks += 1
            raw |= bool(verdict["beyond_noise"])
            raw_looks += bool(verdict["beyond_noise"])
            for n in NS:
                hit[n] |= verdict["looks"] >= n
            standing += stands(serve.verdicts().get("c"))
        raw_streams += raw
        for n in NS:
            alarms[n] += hit[n]
    return {
        "streams": streams,
        "looks": looks,
        "beyond_noise_streams": raw_streams,
        "beyond_noise_looks": raw_looks,
        "alarms": alarms,
        "standing_looks": standing,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0)
    args = parser.parse_args()
    out = run(args.streams, args.first_seed)
    print(
        f"{out['streams']} streams, {out['looks']} hourly looks; any run beyond noise: "
        f"{out['beyond_noise_streams']} streams, {out['beyond_noise_looks']} looks"
    )
    for n in NS:
        print(f"N={n}: streams standing at some look {out['alarms'][n]}/{out['streams']}")
    print(f"looks standing under serve's rule (N={CONFIRM_LOOKS}, hysteresis): "
          f"{out['standing_looks']}/{out['looks']}")  # fmt: skip


if __name__ == "__main__":
    main()
