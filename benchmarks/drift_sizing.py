"""How many events a drift window needs to alarm on a given change, as goldwatch decides.

    python -m benchmarks.drift_sizing

For each case (a share or rate moving from ``p0`` to ``p1``) it feeds the drift detectors'
own decision (:func:`service.drift.sizing.decide`, the reusable core the reports' "smallest
change that can alarm" runs too, on :class:`~service.drift.detectors.CategoricalDriftDetector`
and :class:`~service.drift.detectors.RateDriftDetector`, built as
:class:`~service.drift.stage.DriftStage` builds them: 4 dimensions, a gold-set reference for
the categorical ones, ``analytics.drift`` defaults) with the expected counts of a window of
``n`` events — ``round(p1 · n)`` of the category, the rest in one other category — against a
reference of ``round(p0 · m)`` of ``m``, and finds the smallest ``n`` at which the detector
would raise an alarm (state ``ok`` → ``drift``: ``n ≥ min_count``, p below the comparison's
alpha and the 95 % Newcombe bound nearest zero of the change ≥ 5 points). ``m`` is the
frozen baseline's size, ``warmup_s / window_s × n`` at a steady traffic (6 n by default), or
``n`` for a ``previous`` baseline, or the gold set's fixed size (200 rows here). Expected
counts are rounded, so the decision can flip back once above the first ``n``; the table
gives the first ``n`` and, when it differs, the ``n`` from which every window up to 3 × that
alarms.

Two categories are the easiest case: with ``K`` categories whose other shares keep their
proportions, the chi-square statistic and the JSD are the same but the test has ``K − 1``
degrees of freedom, so more events are needed. Pure computation (no data, a few seconds).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import yaml

from service import demo
from service.drift.detectors import CategoricalDriftDetector, RateDriftDetector, WindowConfig
from service.drift.sizing import Decision
from service.drift.sizing import decide as detector_decides
from service.drift.stage import SHARED as DIMENSIONS  # (terms has a share of its own)
from service.settings.sections import DriftSettings

DEFAULTS = DriftSettings()
GOLD_ROWS = 200
MAX_N = 20_000


@dataclass(frozen=True)
class Case:
    """A change to detect: a category's share (``rate=False``) or a rate from p0 to p1."""

    name: str
    p0: float
    p1: float
    rate: bool = False
    categories: int = 2  # the others share the rest equally, in both windows
    min_change: float | None = None  # min_share_change / min_rate_change (None: default)


CASES = (
    Case("a language's share 1.5 % → 11 % (the trial)", 0.015, 0.11),
    Case("a share 5 % → 15 %", 0.05, 0.15),
    Case("a share 20 % → 30 %", 0.20, 0.30),
    Case("the refusal rate 5 % → 10 %", 0.05, 0.10, rate=True),
    Case("the same with `min_rate_change: 0.03`", 0.05, 0.10, rate=True, min_change=0.03),
)


def windows(window_s: float = DEFAULTS.window_s, warmup_s: float = DEFAULTS.warmup_s,
            baseline: str = "frozen") -> WindowConfig:  # fmt: skip
    """The detectors' windowing from ``analytics.drift`` defaults with these overrides."""
    return WindowConfig(window_s=window_s, reference_window_s=DEFAULTS.reference_window_s,
                        warmup_s=warmup_s, test_every_s=DEFAULTS.test_every_s,
                        baseline=baseline)  # type: ignore[arg-type]  # fmt: skip


def detector(
    case: Case, config: WindowConfig, min_count: int = DEFAULTS.min_count
) -> CategoricalDriftDetector | RateDriftDetector:
    """A detector as :class:`~service.drift.stage.DriftStage` builds it (4 dimensions; the
    categorical ones with a gold-set reference, the rates with the baseline only)."""
    common = {"windows": config, "min_count": min_count, "alpha": DEFAULTS.alpha,
              "n_dimensions": len(DIMENSIONS)}  # fmt: skip
    if case.rate:
        change = DEFAULTS.min_rate_change if case.min_change is None else case.min_change
        return RateDriftDetector(None, min_change=change, **common)  # type: ignore[arg-type]
    change = DEFAULTS.min_share_change if case.min_change is None else case.min_change
    return CategoricalDriftDetector({"gold": 1}, min_jsd=DEFAULTS.min_jsd,
                                    min_share_change=change, **common)  # type: ignore[arg-type]  # fmt: skip


def counts(case: Case, share: float, n: int) -> dict[str, int]:
    """Expected counts of a window of ``n`` events: ``round(share · n)`` of the category
    (``"1"`` for a rate, ``"x"`` otherwise), the rest in ``"0"`` or split as evenly as
    whole counts allow over ``case.categories − 1`` others (``"o0"``, ``"o1"``, …)."""
    x = round(share * n)
    if case.rate:
        return {"1": x, "0": n - x}
    k, rest = case.categories - 1, n - x
    return {"x": x, **{f"o{i}": rest // k + (i < rest % k) for i in range(k)}}


def decide(
    case: Case, config: WindowConfig, comparison: str, n: int, m: int,
    min_count: int = DEFAULTS.min_count,
) -> Decision:  # fmt: skip
    """The detector's own decision (:func:`service.drift.sizing.decide`) on a current window
    of ``n`` events against a reference of ``m`` (expected counts, :func:`counts`), as its
    first test after ``ok`` (``min_count`` 1: the tests alone); ``bound``: the Newcombe bound
    nearest 0 of the rate's change or of the category ``"x"``'s rise."""
    det = detector(case, config, min_count)
    ref, cur = counts(case, case.p0, m), counts(case, case.p1, n)
    return detector_decides(det, comparison, ref, cur, None if case.rate else "x")


def smallest_n(alarms: Callable[[int], bool], start: int = 1) -> tuple[int | None, int | None]:
    """``(first, steady)``: the smallest ``n ≥ start`` with ``alarms(n)`` and the smallest from
    which every ``n`` up to 3 × it alarms (``None``: none up to :data:`MAX_N`)."""
    first = next((n for n in range(start, MAX_N + 1) if alarms(n)), None)
    if first is None:
        return None, None
    steady = first
    for n in range(first, min(3 * first, MAX_N) + 1):
        if not alarms(n):
            steady = n + 1
    return first, steady


def _cell(alarms: Callable[[int, int], bool]) -> str:
    """``alarms(n, min_count)``'s smallest ``n`` with ``min_count`` (and the tests' alone
    when ``min_count`` decides it) as a table cell."""
    first, steady = smallest_n(lambda n: alarms(n, DEFAULTS.min_count))
    if first is None:
        return f"none ≤ {MAX_N:,}"
    cell = f"{first:,}" if steady == first else f"{first:,} (all from {steady:,})"
    if first == DEFAULTS.min_count:
        alone, steady = smallest_n(lambda n: alarms(n, 1))
        cell += f" (tests alone: {alone:,}" + ("" if steady == alone else f", all from {steady:,}")
        cell += ")"
    return cell


def _alarms(
    case: Case, config: WindowConfig, comparison: str, ratio: float | None
) -> Callable[[int, int], bool]:
    """``alarms(n, min_count)`` of :func:`decide`, the reference ``round(ratio · n)`` events
    (``None``: the gold set's :data:`GOLD_ROWS`)."""

    def alarms(n: int, min_count: int) -> bool:
        m = GOLD_ROWS if ratio is None else round(ratio * n)
        return decide(case, config, comparison, n, m, min_count).alarm

    return alarms


def table() -> list[str]:
    """The sizing table for the ``analytics.drift`` defaults (markdown lines)."""
    frozen, previous = windows(), windows(baseline="previous")
    ratio = DEFAULTS.warmup_s / DEFAULTS.window_s
    lines = [
        f"analytics.drift defaults: window_s {DEFAULTS.window_s:g}, warmup_s "
        f"{DEFAULTS.warmup_s:g}, reference_window_s {DEFAULTS.reference_window_s:g}, "
        f"min_count {DEFAULTS.min_count}, alpha {DEFAULTS.alpha:g}; gold set {GOLD_ROWS} rows",
        "",
        "| change | alpha (baseline) | events per 1 h window, frozen 6 h baseline (6 n) "
        "| same, `previous` baseline (n) | events per 24 h window vs a 200-row gold set "
        "(alpha 1.25e-04) |",
        "|---|---|---|---|---|",
    ]
    for case in CASES:
        alpha = detector(case, frozen).alpha_per_test("baseline")
        base = _cell(_alarms(case, frozen, "baseline", ratio))
        prev = _cell(_alarms(case, previous, "baseline", 1.0))
        gold = "no gold-set comparison"
        if not case.rate:
            gold = _cell(_alarms(case, frozen, "reference", None))
        lines.append(f"| {case.name} | {alpha:.3g} | {base} | {prev} | {gold} |")
    return lines


def demo_settings() -> DriftSettings:
    """The demo's ``analytics.drift`` (``service/demo/goldwatch.yaml``)."""
    text = (Path(demo.__file__).parent / "goldwatch.yaml").read_text(encoding="utf-8")
    return DriftSettings(**yaml.safe_load(text)["analytics"]["drift"])


def trial(rate_per_hour: float = 25.0, categories: int = 4) -> list[str]:
    """The trial's case (1.5 % → 11 %, ``categories`` languages) with the demo's settings:
    the events its baseline comparison needs, and the shortest whole-hour window (warm-up
    2 × it, as the demo's) that alarms at ``rate_per_hour`` questions an hour. The trial's
    figures (bound 0.040, p 0.0046) are those of about 100 questions in the 4 h window
    against 200 in the baseline, over 4 languages (bound 0.0398, p 0.0036)."""
    case, cfg = Case("trial", 0.015, 0.11, categories=categories), demo_settings()
    ratio = cfg.warmup_s / cfg.window_s
    config = windows(cfg.window_s, cfg.warmup_s)
    first, steady = smallest_n(
        lambda n: decide(case, config, "baseline", n, round(ratio * n), cfg.min_count).alarm
    )
    alpha = detector(case, config).alpha_per_test("baseline")
    out = [f"demo settings (window_s {cfg.window_s:g}, warmup_s {cfg.warmup_s:g}, min_count "
           f"{cfg.min_count}), {categories} languages: alpha {alpha:.3g}; 1.5 % -> 11 % "
           f"alarms from {first} events per window (all from {steady})"]  # fmt: skip
    hours, alarmed = round(cfg.window_s / 3600), 0
    while alarmed < 2 and hours <= 48:  # up to one hour past the first that alarms
        config = windows(hours * 3600.0, 2 * hours * 3600.0)
        n = round(rate_per_hour * hours)
        d = decide(case, config, "baseline", n, 2 * n, cfg.min_count)
        out.append(f"at {rate_per_hour:g}/h, window_s {hours * 3600} ({n} events, baseline "
                   f"{2 * n}): alpha {d.alpha:.3g}, p {d.p_value:.3g}, bound {d.bound:.4f} -> "
                   f"{'alarm' if d.alarm else 'no alarm'}")  # fmt: skip
        alarmed, hours = alarmed + (d.alarm or alarmed > 0), hours + 1
    return out


def main(argv: list[str] | None = None) -> None:
    """Print the sizing table and the trial's case."""
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    print("\n".join(table()))
    print()
    print("\n".join(trial()))


if __name__ == "__main__":
    main()
