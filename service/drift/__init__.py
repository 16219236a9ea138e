"""Drift of live question categories (topics, languages) and refusal rates.

Pure domain code, no I/O: :mod:`.distances` (JSD, PSI), :mod:`.stats_tests` (chi-square
homogeneity, Newcombe CIs, two proportions, coverage gaps), :mod:`.windows` (event-time
windows) and :mod:`.detectors` (river-shaped detectors with ``update``/``update_many``,
``drift_detected``, ``snapshot``/``restore``); :mod:`.sizing` (the smallest change a
comparison can alarm on, by the detectors' own decision on expected counts).
"""

from service.drift.detectors import (
    CategoricalDriftDetector,
    CategoricalDriftReport,
    RateDriftDetector,
    RateDriftReport,
    State,
)
from service.drift.distances import js_distance, js_divergence, psi, share_vectors
from service.drift.stats_tests import (
    Chi2Result,
    CoverageGap,
    ProportionTest,
    ShareChange,
    chi2_homogeneity,
    coverage_gaps,
    newcombe_interval,
    share_differences,
    two_proportion_test,
    wilson_interval,
)
from service.drift.windows import OTHER, CategoryWindow, WindowConfig, WindowUpdate

__all__ = [
    "OTHER",
    "CategoricalDriftDetector",
    "CategoricalDriftReport",
    "CategoryWindow",
    "Chi2Result",
    "CoverageGap",
    "ProportionTest",
    "RateDriftDetector",
    "RateDriftReport",
    "ShareChange",
    "State",
    "WindowConfig",
    "WindowUpdate",
    "chi2_homogeneity",
    "coverage_gaps",
    "js_distance",
    "js_divergence",
    "newcombe_interval",
    "psi",
    "share_differences",
    "share_vectors",
    "two_proportion_test",
    "wilson_interval",
]
