"""Running the real ``goldwatch`` command in tests: a clean environment (no ``GOLDWATCH_*``
variable of the caller's leaks in) plus the test's own variables."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

from service.demo import demo_path

#: The command line of ``goldwatch`` for this interpreter.
GOLDWATCH = [sys.executable, "-m", "service.cli"]


def clean_env(extra: Mapping[str, str] | None = None, **more: str) -> dict[str, str]:
    """This process's environment without its ``GOLDWATCH_*`` variables, plus ``extra`` and
    ``more``."""
    base = {k: v for k, v in os.environ.items() if not k.startswith("GOLDWATCH_")}
    return {**base, **(extra or {}), **more}


def run_goldwatch(
    args: list[str], cwd: Path, env: Mapping[str, str] | None = None, timeout_s: float = 120
) -> subprocess.CompletedProcess[str]:
    """Run ``goldwatch *args`` in ``cwd`` with :func:`clean_env` plus ``env``; text output.

    Raises:
        subprocess.TimeoutExpired: it ran longer than ``timeout_s`` (a bound, not a timing
            assertion).
    """
    return subprocess.run(
        [*GOLDWATCH, *args], cwd=cwd, env=clean_env(env), capture_output=True, text=True,
        timeout=timeout_s, check=False,
    )  # fmt: skip


def demo_log_and_config(tmp_path: Path, events: int) -> tuple[Path, Path]:
    """The demo query log's first ``events`` lines as ``tmp_path/events.jsonl`` and a config
    naming the demo gold set and corpus (``tmp_path/goldwatch.yaml``): ``(log, config)``."""
    log = tmp_path / "events.jsonl"
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines()[:events]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        f"gold_set: {demo_path('gold.jsonl')}\ncorpus: {demo_path('corpus.jsonl')}\n",
        encoding="utf-8",
    )
    return log, config
