"""How often LanguageDrift / TopicDrift's hourly test fires on unchanged traffic, before and after
the size-aware threshold (dashboards/rules/goldwatch.rules.yaml, "the noise floor of the
divergence").

    python -m benchmarks.gold_noise [--reps 4000] [--seed 46]

Both sides are samples of one distribution ``pi`` over ``K`` categories: the hour's ``n``
questions and the gold set's ``n_g`` rows (multinomial draws; ``pi`` itself drawn per replicate
from a symmetric Dirichlet(2), so some categories are rare). For each ``K`` in 5..16 and
``n_g`` in 30, 45, 60, 200, at ``n`` = 200 (the alerts' minimum hour) and 2,000:

* ``E sim`` — the mean JSD (base 2, ``scipy.spatial.distance.jensenshannon(...) ** 2``);
* ``E formula`` — the noise floor the rules record,
  ``(K - 1) / (8 ln 2) * (1/n + 1/n_g)`` (the second-order expansion of JSD, the two-sample
  chi-square statistic over ``8 ln 2 * n_eff``, ``n_eff = n n_g / (n + n_g)``);
* ``before`` — the share of replicates with JSD >= 0.05 (the old flat threshold);
* ``after`` — the share with JSD >= the rules' bound, ``max(0.05, Wilson-Hilferty chi-square
  1 - 1e-3 quantile with K_obs - 1 degrees of freedom / (8 ln 2 n_eff))``, ``K_obs`` the
  categories seen on either side (what the rule counts).

Each replicate is one hour read against one gold set. The gold set is drawn once per deployment,
so "after" is also the share of deployments with an unlucky gold set whose hours cross the bound
more often than 1e-3; the false alarm is then standing, not hourly. Pure computation (seconds).
"""

from __future__ import annotations

import argparse
import math

import numpy as np
from scipy.spatial.distance import jensenshannon

#: Wilson-Hilferty z of the rules' bound: the standard normal's 1 - 1e-3 quantile.
Z = 3.090
#: The old flat threshold, kept as the bound's minimum effect.
FLOOR = 0.05


def noise_floor(k_categories: int, n: float, n_gold: float) -> float:
    """Expected JSD (base 2) of two samples of sizes ``n`` and ``n_gold`` from one distribution
    over ``k_categories`` (>= 1) categories, to second order: ``(K - 1) / (8 ln 2) * (1/n +
    1/n_gold)``. ``n``, ``n_gold`` > 0."""
    return (k_categories - 1) / (8 * math.log(2)) * (1 / n + 1 / n_gold)


def bound(k_categories: int, n: float, n_gold: float, z: float = Z) -> float:
    """The rules' threshold: ``max(0.05, q / (8 ln 2 n_eff))`` with ``q`` the Wilson-Hilferty
    approximation ``k (1 - 2/(9k) + z sqrt(2/(9k)))^3`` of the chi-square quantile at ``k =
    K - 1`` degrees of freedom (``K`` >= 2; ``z`` 3.090: 1 - 1e-3) and ``n_eff = n n_gold / (n +
    n_gold)``. Returns 0.05 for ``K`` < 2 (one category: JSD is 0)."""
    k = k_categories - 1
    if k < 1:
        return FLOOR
    quantile = k * (1 - 2 / (9 * k) + z * math.sqrt(2 / (9 * k))) ** 3
    n_eff = n * n_gold / (n + n_gold)
    return max(FLOOR, quantile / (8 * math.log(2) * n_eff))


def simulate(k: int, n_gold: int, n: int, reps: int, rng: np.random.Generator) -> dict[str, float]:
    """One table cell: ``reps`` replicates of (pi ~ Dirichlet(2,...,2), an hour of ``n``, a gold
    set of ``n_gold``), returning the mean JSD, the formula's, and the shares above 0.05 and above
    the bound."""
    pi = rng.dirichlet(np.full(k, 2.0), size=reps)
    live = np.array([rng.multinomial(n, p) for p in pi], dtype=float)
    gold = np.array([rng.multinomial(n_gold, p) for p in pi], dtype=float)
    jsd = jensenshannon(live / n, gold / n_gold, base=2, axis=1) ** 2
    k_obs = ((live > 0) | (gold > 0)).sum(axis=1)
    bounds = np.array([bound(int(kk), n, n_gold) for kk in k_obs])
    return {
        "e_sim": float(jsd.mean()),
        "e_formula": noise_floor(k, n, n_gold),
        "before": float((jsd >= FLOOR).mean()),
        "after": float((jsd >= bounds).mean()),
        "bound": float(np.median(bounds)),
    }


def main(argv: list[str] | None = None) -> None:
    """Print the table (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=4000)
    parser.add_argument("--seed", type=int, default=46)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    print(f"{args.reps} replicates a cell; pi ~ Dirichlet(2)")
    print("before: JSD >= 0.05; after: JSD >= the bound (both with n >= 200 questions)")
    print("    n  n_g   K  E sim   E formula  sim/formula  median bound  before   after")
    for n in (200, 2000):
        for n_gold in (30, 45, 60, 200):
            for k in range(5, 17):
                c = simulate(k, n_gold, n, args.reps, rng)
                print(
                    f"{n:5d} {n_gold:4d} {k:3d}  {c['e_sim']:.4f}  {c['e_formula']:.4f}"
                    f"     {c['e_sim'] / c['e_formula']:.2f}        {c['bound']:.4f}"
                    f"    {c['before']:6.1%}  {c['after']:6.2%}"
                )


if __name__ == "__main__":
    main()
