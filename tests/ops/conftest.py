"""Fixtures of the ops tests: promtool, and a Python >= 3.12 venv with helm-sdkpy.

promtool comes from Debian's ``prometheus`` package (CI installs it): without it the tests
FAIL, unless ``GOLDWATCH_ALLOW_NO_PROMTOOL`` is set (then they skip). The helm venv is created
once under ``~/.cache/goldwatch-helm`` (``GOLDWATCH_HELM_VENV`` overrides the folder) with a
3.12 interpreter (``GOLDWATCH_PYTHON312``, pyenv's 3.12.1, or ``python3.12`` on the PATH);
creating it needs PyPI. Without an interpreter the helm tests fail unless
``GOLDWATCH_ALLOW_NO_HELM`` is set.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

HELM_VENV = Path(
    os.environ.get("GOLDWATCH_HELM_VENV", Path.home() / ".cache" / "goldwatch-helm" / "venv")
)
PYTHON312_CANDIDATES = (
    os.environ.get("GOLDWATCH_PYTHON312", ""),
    "/root/.pyenv/versions/3.12.1/bin/python3.12",
    shutil.which("python3.12") or "",
    shutil.which("python3.13") or "",
)


@pytest.fixture(scope="session")
def promtool() -> str:
    path = shutil.which("promtool")
    if path:
        return path
    if os.environ.get("GOLDWATCH_ALLOW_NO_PROMTOOL"):
        pytest.skip("promtool not installed (GOLDWATCH_ALLOW_NO_PROMTOOL is set)")
    pytest.fail(
        "promtool not found: apt-get install -y prometheus (CI does), or set "
        "GOLDWATCH_ALLOW_NO_PROMTOOL=1 to skip these tests"
    )


def _works(python: Path) -> bool:
    if not python.is_file():
        return False
    probe = subprocess.run([python, "-c", "import helm_sdkpy"], capture_output=True, timeout=60)
    return probe.returncode == 0


@pytest.fixture(scope="session")
def helm_python() -> Path:
    """The interpreter of a venv where ``import helm_sdkpy`` works (created if missing)."""
    python = HELM_VENV / "bin" / "python"
    if _works(python):
        return python
    base = next((c for c in PYTHON312_CANDIDATES if c and Path(c).is_file()), None)
    if base is None:
        if os.environ.get("GOLDWATCH_ALLOW_NO_HELM"):
            pytest.skip("no Python >= 3.12 for helm-sdkpy (GOLDWATCH_ALLOW_NO_HELM is set)")
        pytest.fail("helm-sdkpy needs Python >= 3.12: set GOLDWATCH_PYTHON312 to one")
    HELM_VENV.parent.mkdir(parents=True, exist_ok=True)
    steps = ([base, "-m", "venv", "--clear", HELM_VENV],
             [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
              "helm-sdkpy"])  # fmt: skip
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{' '.join(map(str, step))} failed:\n{done.stderr[-3000:]}"
    assert _works(python), f"helm_sdkpy does not import in {HELM_VENV}"
    return python
