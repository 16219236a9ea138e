"""The normal quantile a start reads without scipy (:data:`service.drift.stats_tests.KNOWN_Z`)
is scipy's to the bit, and an interval at another confidence still reads scipy's."""

from __future__ import annotations

import pytest
from scipy import special

from service.drift import stats_tests
from service.drift.stats_tests import KNOWN_Z, wilson_interval


@pytest.mark.parametrize("confidence", sorted(KNOWN_Z))
def test_known_quantiles_are_scipys_own(confidence: float) -> None:
    assert KNOWN_Z[confidence] == float(special.ndtri(0.5 + confidence / 2))


def test_other_confidences_are_computed_by_scipy() -> None:
    stats_tests._z.cache_clear()
    assert stats_tests._z(0.9) == float(special.ndtri(0.95))
    # Wilson 1927 at z = 1.6449 (90 %): 8 of 10 -> (0.5408, 0.9314), worked out by hand from
    # (p + z²/2n ± z·sqrt(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    low, high = wilson_interval(8, 10, confidence=0.9)
    assert float(low) == pytest.approx(0.5408, abs=1e-4)
    assert float(high) == pytest.approx(0.9314, abs=1e-4)
    with pytest.raises(ValueError, match="confidence"):
        stats_tests._z(1.0)
