"""Shared fixtures: where the real data sets live (../shared/data beside the checkout)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("GOLDWATCH_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; the real data sets are required, never skipped silently."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data sets not found at {SHARED_DATA} (set GOLDWATCH_SHARED_DATA)")
    return SHARED_DATA
