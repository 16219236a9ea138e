"""Run ``goldwatch serve`` as a real subprocess and talk to it over HTTP, as an operator would.

Usage::

    service = ServiceProcess.start(tmp_path / "a", {"source": {"kind": "kafka"}, ...})
    service.wait_until(lambda s: s["totals"]["consumed"] >= 10_000, what="half-way")
    service.kill()                       # kill -9: no shutdown hook runs
    service = service.restart()          # same config, same state file
    service.metric("goldwatch_events_processed_total", source="kafka")
    service.terminate()                  # SIGTERM: graceful stop

The process is started with ``python -m service.cli serve --config <dir>/goldwatch.yaml`` from
the repository root (so ``tests.acceptance.*`` stages import), its output goes to
``<dir>/serve.log``, and every failure message ends with the tail of that log.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.kafka_broker import free_port

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Bound of the wait for the pipeline after a start (seconds): imports, the state restore and
#: the analytics' fit on the gold set come first, which a loaded 2-core machine stretches; the
#: wait ends once ``/readyz`` no longer says ``starting``, and at once if the process exits.
STARTUP_TIMEOUT_S = 120.0
#: Default bound of one HTTP request to the service (seconds). A bound, not a timing: an
#: answer the process is slow to give on a loaded machine must not fail a test that asserts
#: what the answer says (tests that assert promptness pass their own timeout).
REQUEST_TIMEOUT_S = 30.0
TOKEN = "acceptance-secret"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def write_config(path: Path, config: Mapping[str, Any]) -> Path:
    """Write ``config`` as YAML to ``path`` and return it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(config), sort_keys=False), encoding="utf-8")
    return path


def parse_metrics(text: str) -> Samples:
    """Prometheus text → ``{(sample name, frozenset(labels)): value}``."""
    samples: Samples = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            samples[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return samples


def metric_sum(samples: Samples, name: str, **labels: str) -> float:
    """Sum of the samples called ``name`` whose labels include ``labels``."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


def metric_by(samples: Samples, name: str, label: str, **labels: str) -> dict[str, float]:
    """``{value of label: sum}`` over the samples ``name`` matching ``labels``."""
    wanted = set(labels.items())
    out: dict[str, float] = {}
    for (n, ls), v in samples.items():
        if n == name and wanted <= ls:
            key = dict(ls).get(label, "")
            out[key] = out.get(key, 0.0) + v
    return out


@dataclass
class ServiceProcess:
    """One ``goldwatch serve`` subprocess; see the module docstring."""

    workdir: Path
    config: dict[str, Any]
    env: dict[str, str]
    process: subprocess.Popen[bytes]
    port: int
    started_at: float = field(default_factory=time.monotonic)
    _client: httpx.Client | None = field(default=None, repr=False)

    # -- lifecycle -------------------------------------------------------------------------

    @classmethod
    def start(
        cls,
        workdir: Path,
        config: Mapping[str, Any],
        env: Mapping[str, str] | None = None,
        wait: bool = True,
    ) -> ServiceProcess:
        """Write ``<workdir>/goldwatch.yaml`` and start serve; unless not ``wait``, wait until
        its pipeline is loaded and started (:meth:`wait_started`; serve's port answers before
        that, :meth:`wait_healthy` waits for the port only). ``config["api"]`` gets a free port
        and the test token unless it has them."""
        workdir.mkdir(parents=True, exist_ok=True)
        config = {**config, "api": {"host": "127.0.0.1", "token": TOKEN, **config.get("api", {})}}
        config["api"].setdefault("port", free_port())
        config_path = write_config(workdir / "goldwatch.yaml", config)
        hooks = _stack_dump_hook(workdir)
        full_env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join(
                filter(None, [str(hooks), str(REPO_ROOT), os.environ.get("PYTHONPATH")])
            ),
            "PYTHONUNBUFFERED": "1",
            **(env or {}),
        }
        with (workdir / "serve.log").open("ab") as log:
            log.write(f"\n=== start {time.strftime('%H:%M:%S')} ===\n".encode())
            log.flush()
            process = subprocess.Popen(
                [sys.executable, "-m", "service.cli", "-v", "serve", "--config", str(config_path)],
                cwd=REPO_ROOT,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=full_env,
            )
        service = cls(workdir, config, dict(env or {}), process, int(config["api"]["port"]))
        if wait:
            service.wait_started()
        return service

    def restart(self, wait: bool = True) -> ServiceProcess:
        """Start a new process with the same config, env and state file (after kill/terminate)."""
        if self.alive:
            raise RuntimeError("restart() needs the old process to be gone: kill() it first")
        return ServiceProcess.start(self.workdir, self.config, self.env, wait=wait)

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        """``kill -9``: no checkpoint, no commit, no goodbye."""
        if self.alive:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(timeout=10)
        self.close_client()

    def terminate(self, timeout_s: float = 20.0) -> int:
        """SIGTERM and wait; returns the exit code (kills after ``timeout_s``)."""
        if self.alive:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=10)
                raise AssertionError(
                    f"serve ignored SIGTERM for {timeout_s}s{self.log_tail()}"
                ) from None
        self.close_client()
        return int(self.process.returncode)

    def dump_stacks(self) -> None:
        """Have the process write every thread's stack to its log (SIGUSR1, faulthandler)."""
        if self.alive:
            self.process.send_signal(signal.SIGUSR1)
            time.sleep(0.5)

    def diagnose(self, chars: int = 6000) -> str:
        """Thread stacks, then the log tail: for the message of a failed wait."""
        self.dump_stacks()
        return self.log_tail(chars)

    def log_tail(self, chars: int = 3000) -> str:
        """The end of the process log, prefixed by a newline (for assertion messages)."""
        path = self.workdir / "serve.log"
        text = path.read_text(errors="replace") if path.exists() else ""
        return "\n--- serve.log tail ---\n" + text[-chars:]

    # -- HTTP ------------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def client(self) -> httpx.Client:
        """One kept-alive client per process: ``httpx.get`` builds a client per call, whose
        CA-bundle load costs 20-40 ms of CPU with the GIL held (it skews what the soak
        measures and slows every poll)."""
        if self._client is None:
            self._client = httpx.Client(base_url=self.base_url)
        return self._client

    def close_client(self) -> None:
        """Close the kept-alive client (a later request opens a new one)."""
        client, self._client = self._client, None
        if client is not None:
            client.close()

    def get(self, path: str, timeout_s: float = REQUEST_TIMEOUT_S) -> httpx.Response:
        return self.client.get(path, timeout=timeout_s)

    def post_events(
        self, body: Any, token: str | None = TOKEN, raw: bytes | None = None
    ) -> httpx.Response:
        """``POST /v1/events`` with ``body`` as JSON (or ``raw`` bytes) and a bearer token."""
        headers = {"Authorization": f"Bearer {token}"} if token is not None else {}
        if raw is not None:
            headers["Content-Type"] = "application/json"
            return self.client.post("/v1/events", content=raw, headers=headers, timeout=30)
        return self.client.post("/v1/events", json=body, headers=headers, timeout=30)

    def wait_healthy(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Block until ``GET /healthz`` answers 200 (liveness: the port is open, the pipeline
        may still be loading); fail with the log if the process died."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                raise AssertionError(
                    f"serve exited with {self.process.returncode}{self.log_tail()}"
                )
            try:
                if self.get("/healthz", timeout_s=5.0).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        raise AssertionError(f"serve not healthy after {timeout_s}s{self.log_tail()}")

    def wait_started(self, timeout_s: float = STARTUP_TIMEOUT_S) -> None:
        """Block until ``GET /readyz`` answers and no longer says ``starting`` (the pipeline
        is loaded and started; it may be 503 for another reason, e.g. a broker that is down,
        which tests of those faults assert); fail with the log if the process died."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.alive:
                raise AssertionError(
                    f"serve exited with {self.process.returncode}{self.log_tail()}"
                )
            try:
                response = self.get("/readyz", timeout_s=5.0)
                reasons = response.json().get("reasons", []) if response.status_code == 503 else []
                if response.status_code == 200 or (
                    response.status_code == 503
                    and not any(
                        str(r).startswith(("starting:", "start-up failed")) for r in reasons
                    )
                ):
                    return
            except (httpx.HTTPError, ValueError):
                pass
            time.sleep(0.1)
        raise AssertionError(f"serve not started after {timeout_s}s{self.log_tail()}")

    def status(self) -> dict[str, Any]:
        """``GET /v1/status`` as JSON (asserts 200)."""
        response = self.get("/v1/status")
        assert response.status_code == 200, f"/v1/status {response.status_code}{self.log_tail()}"
        return dict(response.json())

    def totals(self) -> dict[str, Any]:
        return dict(self.status()["totals"])

    def samples(self) -> Samples:
        """``GET /metrics`` parsed (asserts 200)."""
        response = self.get("/metrics")
        assert response.status_code == 200, f"/metrics {response.status_code}{self.log_tail()}"
        return parse_metrics(response.text)

    def metric(self, name: str, **labels: str) -> float:
        """Sum of the samples of ``name`` (full sample name, e.g. ``..._total``) with ``labels``."""
        return metric_sum(self.samples(), name, **labels)

    def readyz(self) -> int:
        """Status code of ``GET /readyz`` (0 when the request itself failed)."""
        try:
            return self.get("/readyz").status_code
        except httpx.HTTPError:
            return 0

    def wait_until(
        self,
        predicate: Callable[[dict[str, Any]], bool],
        timeout_s: float = 240.0,
        what: str = "condition",
        interval_s: float = 0.05,
    ) -> dict[str, Any]:
        """Poll ``/v1/status`` until ``predicate(status)``; return that status."""
        deadline = time.monotonic() + timeout_s
        last: dict[str, Any] | None = None
        while time.monotonic() < deadline:
            if not self.alive:
                raise AssertionError(f"serve died waiting for {what}{self.log_tail()}")
            try:
                last = self.status()
            except (httpx.HTTPError, AssertionError):
                last = None
            if last is not None and predicate(last):
                return last
            time.sleep(interval_s)
        totals = last.get("totals") if last else None
        source = {k: v for k, v in ((last or {}).get("source") or {}).items() if k != "lag"}
        raise AssertionError(
            f"{what} not reached in {timeout_s}s; totals={totals}; source={source}{self.diagnose()}"
        )


def _stack_dump_hook(workdir: Path) -> Path:
    """A ``sitecustomize`` that makes SIGUSR1 dump all thread stacks (test diagnostics only)."""
    hooks = workdir / "_hooks"
    hooks.mkdir(exist_ok=True)
    (hooks / "sitecustomize.py").write_text(
        "import faulthandler, signal\nfaulthandler.register(signal.SIGUSR1, all_threads=True)\n"
    )
    return hooks


def accounted(totals: Mapping[str, Any]) -> int:
    """``processed + Σ dead_lettered`` of a ``/v1/status`` totals object."""
    return int(totals["processed"]) + sum(int(n) for n in totals["dead_lettered"].values())
