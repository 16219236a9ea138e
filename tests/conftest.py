"""Shared fixtures: where the real data sets live (../shared/data beside the checkout)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: Hypothesis defaults for the whole suite, loaded before any test module builds its own
#: ``settings(...)`` (which inherit what they leave unset): no per-example deadline and no
#: ``too_slow`` health check. Both measure wall-clock time, which a loaded 2-core CI machine
#: stretches; they then fail a property that holds (hypothesis reports a deadline exceeded
#: once and met on the replay as ``Flaky``). Timings belong in ``benchmarks/``.
settings.register_profile("goldwatch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("goldwatch")

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("GOLDWATCH_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; the real data sets are required, never skipped silently."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data sets not found at {SHARED_DATA} (set GOLDWATCH_SHARED_DATA)")
    return SHARED_DATA
