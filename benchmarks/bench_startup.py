"""Start-up to ready: seconds from starting ``goldwatch serve`` to ``GET /readyz`` → 200.

The service runs the embedded demo configuration (``service/demo/goldwatch.yaml``: analytics,
the hybrid shadow candidate, harvest; demo gold set and corpus) reading the demo query log
as a file source, in a fresh process with a fresh state directory each time. The clock starts
just before ``Popen`` (so interpreter start and imports count) and stops at the first 200 of
``/readyz``, polled every 20 ms. Each start is repeated; the table shows every run and the
median (the first run also pays for a cold page cache).

Run: ``python -m benchmarks.bench_startup [--runs 3]``. Target: ≤ 3 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import httpx
import yaml

from service.demo import demo_data, demo_path

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 3.0
DEFAULT_RUNS = 3
TIMEOUT_S = 60.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    from tests.kafka_broker import free_port as _free_port

    return _free_port()


def serve_command(config: Path) -> list[str]:
    """``goldwatch serve --config <config>`` (the console script beside this interpreter, or
    ``python -m service.cli`` when it is not installed)."""
    script = Path(sys.executable).with_name("goldwatch")
    head = [str(script)] if script.exists() else [sys.executable, "-m", "service.cli"]
    return [*head, "serve", "--config", str(config)]


def demo_config(workdir: Path, port: int) -> Path:
    """Write the demo configuration with a file source, a state path and an API port."""
    config: dict[str, Any] = yaml.safe_load(demo_path("goldwatch.yaml").read_text("utf-8"))
    config.update({key: str(path) for key, path in demo_data().items()})
    config["source"] = {"kind": "file", "path": str(demo_path("querylog.jsonl")),
                        "dlq_path": str(workdir / "dlq.jsonl")}  # fmt: skip
    config["state"] = {"path": str(workdir / "state" / "goldwatch.sqlite")}
    config["api"] = {"host": "127.0.0.1", "port": port}
    path = workdir / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def start_once(workdir: Path, timeout_s: float = TIMEOUT_S) -> float:
    """Start serve, wait for ``/readyz`` 200, stop it (SIGTERM); return the seconds to ready.

    :raises RuntimeError: the process exited or was not ready within ``timeout_s``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port()
    config = demo_config(workdir, port)
    return time_to_ready(serve_command(config), workdir / "serve.log", port, timeout_s)


def time_to_ready(command: list[str], log_path: Path, port: int, timeout_s: float,
                  stop_wait_s: float = 20.0) -> float:  # fmt: skip
    """Seconds from ``Popen(command)`` (a serve process, output to ``log_path``) to its first
    ``/readyz`` 200 on ``port`` (polled every 20 ms); the process is stopped with SIGTERM
    after (killed if it has not stopped within ``stop_wait_s``).

    :raises RuntimeError: the process exited or was not ready within ``timeout_s``.
    """
    url = f"http://127.0.0.1:{port}/readyz"
    with log_path.open("wb") as log:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT)
        try:
            with httpx.Client(timeout=1.0) as client:
                while time.perf_counter() - started < timeout_s:
                    if process.poll() is not None:
                        raise RuntimeError(f"serve exited with {process.returncode}; "
                                           f"see {log_path}")  # fmt: skip
                    try:
                        if client.get(url).status_code == 200:
                            return time.perf_counter() - started
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.02)
            raise RuntimeError(f"serve not ready after {timeout_s} s")
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=stop_wait_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def run(runs: int = DEFAULT_RUNS) -> list[float]:
    """Seconds to ready of ``runs`` fresh starts, in order."""
    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-startup-"))
    try:
        return [start_once(tmp / f"run-{i}") for i in range(runs)]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Print every run and the median against the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    args = parser.parse_args(argv)
    seconds = run(args.runs)
    median = statistics.median(seconds)
    print("runs (s): " + ", ".join(f"{s:.2f}" for s in seconds))
    verdict = "met" if median <= TARGET_S else "NOT met"
    print(f"median {median:.2f} s to /readyz 200; target <= {TARGET_S:g} s: {verdict}"
          f" ({os.cpu_count()} CPUs)")  # fmt: skip


if __name__ == "__main__":
    main()
