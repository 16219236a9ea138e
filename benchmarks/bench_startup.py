"""Start-up to ready: seconds from starting ``goldwatch serve`` to ``GET /readyz`` → 200.

The service runs the embedded demo configuration (``service/demo/goldwatch.yaml``: analytics,
the hybrid shadow candidate, harvest; demo gold set and corpus) reading the demo query log
as a file source, in a fresh process with a fresh state directory each time. The clock starts
just before ``Popen`` (so interpreter start and imports count) and stops at the first 200 of
``/readyz``, polled every 20 ms. Each start is repeated; the table shows every run and the
median (the first run also pays for a cold page cache).

Two kinds of start (``state.model_cache``, on by default, keeps the analytics' fitted models
in ``model-cache/`` beside the state file):

* **cold**: an empty state folder — every model is fitted (a first start, or the first after
  the gold set, corpus, analytics settings or goldwatch changed);
* **warm**: a fresh state file beside a model cache that one earlier (untimed) start with
  the same inputs filled — every model is read back (a restart, or a replica whose state
  volume kept the cache). Its deferred loads (the WordLlama embedder, scikit-learn for the
  out-of-scope pipeline) are paid by the first batch instead: the table also shows the
  seconds from ``Popen`` to the first event counted in ``/v1/status``.

The table also shows the seconds to the port answering (the first ``GET /healthz`` 200):
``serve`` opens it before the pipeline loads, and ``POST /v1/traces`` acknowledges spans
into the state file from then on (trial t47 MEDIUM 1: an exporter gives up after 10 s).

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


#: The model cache's folder beside the state file (``service.settings.MODEL_CACHE_DIR``).
MODEL_CACHE = "model-cache"


def start_once(workdir: Path, timeout_s: float = TIMEOUT_S, cache: Path | None = None,
               first_event: bool = False,
               port_times: list[float] | None = None) -> tuple[float, float | None]:  # fmt: skip
    """Start serve on the demo configuration in ``workdir`` (its state folder seeded with a
    copy of the model cache ``cache``, if given), wait for ``/readyz`` 200 (and, with
    ``first_event``, the first event counted), stop it (SIGTERM); return
    ``(seconds to ready, seconds to the first event or None)``; ``port_times`` gets the
    seconds to the first ``/healthz`` 200 appended (:func:`start_times`).

    :raises RuntimeError: the process exited or was not ready within ``timeout_s``.
    """
    workdir.mkdir(parents=True, exist_ok=True)
    if cache is not None:
        seed_cache(cache, workdir / "state")
    port = free_port()
    config = demo_config(workdir, port)
    return start_times(serve_command(config), workdir / "serve.log", port, timeout_s,
                       first_event=first_event, port_times=port_times)  # fmt: skip


def seed_cache(cache: Path, state_dir: Path) -> None:
    """Copy the model cache folder ``cache`` into ``state_dir`` (modes kept: the service
    refuses entries others could write); nothing when there is none (code without one)."""
    state_dir.mkdir(parents=True, exist_ok=True)
    if cache.is_dir():
        shutil.copytree(cache, state_dir / MODEL_CACHE, dirs_exist_ok=True)


def cache_bytes(state_dir: Path) -> int:
    """Bytes of the model cache entries in ``state_dir`` (0 without one)."""
    folder = state_dir / MODEL_CACHE
    return sum(p.stat().st_size for p in folder.glob("*.pickle")) if folder.is_dir() else 0


def time_to_ready(command: list[str], log_path: Path, port: int, timeout_s: float,
                  stop_wait_s: float = 20.0,
                  env: dict[str, str] | None = None) -> float:  # fmt: skip
    """Seconds from ``Popen(command)`` (a serve process, output to ``log_path``) to its first
    ``/readyz`` 200 on ``port`` (polled every 20 ms); the process is stopped with SIGTERM
    after (killed if it has not stopped within ``stop_wait_s``). ``env``: the process's
    environment (default: this one's).

    :raises RuntimeError: the process exited or was not ready within ``timeout_s``.
    """
    return start_times(command, log_path, port, timeout_s, stop_wait_s, env)[0]


def cpu_seconds(pid: int) -> float | None:
    """CPU seconds (user + system, every thread) process ``pid`` has used so far, from
    ``/proc/<pid>/stat`` (fields 14 and 15, in clock ticks); ``None`` where there is no
    ``/proc``. Less sensitive to a shared machine's load than wall time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text("ascii")
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2 :].split()  # after the command name, from field 3
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start_times(command: list[str], log_path: Path, port: int, timeout_s: float,
                stop_wait_s: float = 20.0, env: dict[str, str] | None = None,
                first_event: bool = False,
                port_times: list[float] | None = None,
                cpu_times: list[float | None] | None = None,
                ) -> tuple[float, float | None]:  # fmt: skip
    """:func:`time_to_ready`, and with ``first_event`` also the seconds from ``Popen`` to
    the first event counted (``totals.processed`` > 0 in ``/v1/status``, polled every
    20 ms after ready); ``(ready_s, first_event_s or None)``. With ``port_times``, the
    seconds to the first ``/healthz`` 200 (the port answering: ``POST /v1/traces``
    acknowledges from then on, also before ready) are appended to it. With ``cpu_times``,
    the process's CPU seconds when ready was seen (:func:`cpu_seconds`; the command must
    be the Python process itself, as :func:`serve_command`'s is) are appended to it, and
    with ``first_event`` also those when the first event was seen counted (two a run).

    :raises RuntimeError: the process exited, or was not ready (or counted no event) within
        ``timeout_s``.
    """
    base = f"http://127.0.0.1:{port}"
    ready_s: float | None = None
    port_s: float | None = None if port_times is not None else 0.0
    with log_path.open("wb") as log:
        started = time.perf_counter()
        process = subprocess.Popen(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT,
                                   env=env)  # fmt: skip
        try:
            with httpx.Client(timeout=1.0) as client:
                while time.perf_counter() - started < timeout_s:
                    if process.poll() is not None:
                        raise RuntimeError(f"serve exited with {process.returncode}; "
                                           f"see {log_path}")  # fmt: skip
                    try:
                        if port_s is None and client.get(base + "/healthz").status_code == 200:
                            port_s = time.perf_counter() - started
                            assert port_times is not None
                            port_times.append(port_s)
                        if ready_s is None:
                            if client.get(base + "/readyz").status_code == 200:
                                ready_s = time.perf_counter() - started
                                if cpu_times is not None:
                                    cpu_times.append(cpu_seconds(process.pid))
                                if not first_event:
                                    return ready_s, None
                        elif client.get(base + "/v1/status").json()["totals"]["processed"]:
                            first_s = time.perf_counter() - started
                            if cpu_times is not None:
                                cpu_times.append(cpu_seconds(process.pid))
                            return ready_s, first_s
                    except httpx.HTTPError:
                        pass
                    time.sleep(0.02)
            raise RuntimeError(f"serve not ready (or no event counted) after {timeout_s} s")
        finally:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=stop_wait_s)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def run(runs: int = DEFAULT_RUNS, warm: bool = False) -> list[float]:
    """Seconds to ready of ``runs`` fresh starts, in order: cold (empty state folders), or
    ``warm`` (each state folder seeded with the model cache of one earlier, untimed start)."""
    return [ready for ready, _ in run_times(runs, warm)]


def run_times(
    runs: int = DEFAULT_RUNS,
    warm: bool = False,
    first_event: bool = False,
    port_times: list[float] | None = None,
) -> list[tuple[float, float | None]]:
    """:func:`run` with the seconds to the first event counted (``first_event``) and, in
    ``port_times``, to the first ``/healthz`` 200 of each timed run."""
    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-startup-"))
    try:
        cache = None
        if warm:
            start_once(tmp / "prime")
            cache = tmp / "prime" / "state" / MODEL_CACHE
        return [start_once(tmp / f"run-{i}", cache=cache, first_event=first_event,
                           port_times=port_times) for i in range(runs)]  # fmt: skip
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: Sequence[str] | None = None) -> None:
    """Print every run and the median against the target, cold and warm."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=DEFAULT_RUNS)
    args = parser.parse_args(argv)
    for label, warm in (("cold", False), ("warm", True)):
        port: list[float] = []
        times = run_times(args.runs, warm, first_event=True, port_times=port)
        ready = [r for r, _ in times]
        first = [f for _, f in times if f is not None]
        median = statistics.median(ready)
        verdict = "met" if median <= TARGET_S else "NOT met"
        print(f"{label}: runs (s) " + ", ".join(f"{s:.2f}" for s in ready)
              + f"; median {median:.2f} s to /readyz 200, target <= {TARGET_S:g} s: {verdict};"
              f" port answering (/healthz, POST /v1/traces) at median"
              f" {statistics.median(port):.2f} s ("
              + ", ".join(f"{s:.2f}" for s in port) + ");"
              f" first event counted at median {statistics.median(first):.2f} s"
              f" ({os.cpu_count()} CPUs)")  # fmt: skip


if __name__ == "__main__":
    main()
