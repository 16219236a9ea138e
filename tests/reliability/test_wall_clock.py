"""The service's own wall clock jumps (libfaketime) while a file source feeds it.

``test_event_time.py`` moves the *events'* clock; here the *process's* ``CLOCK_REALTIME`` is
stepped, as an NTP correction or a badly set host clock would: the real ``goldwatch serve``
runs under libfaketime with ``FAKETIME_TIMESTAMP_FILE`` re-read on every call, and the
offset goes ``+0 → +6 h → +3 d → −2 d → −20 d → +0``; in each phase 200 lines (1 % poison
pills overall) are appended to the JSONL file serve follows. ``CLOCK_MONOTONIC`` is left alone
(``FAKETIME_DONT_FAKE_MONOTONIC=1``): a real clock step does not move it, and the service
times its intervals, deadlines, rate limits and budgets with it. In each phase a few events
are also posted over HTTP. One shadow candidate (an in-process entrypoint retriever,
:func:`twin`) is rate-limited to 10 calls/s with a burst of 5.

Checked: the process's clock really moved (the ``Date`` header of its answers); serve stays
up; ``/readyz`` answers 200 and ``/metrics`` answers in every phase; no counter goes
backwards (the reliability ``Monitor``); no counter, histogram or summary sample and no
duration, lag or age gauge is negative or not finite; each phase's lines are read and
checkpointed (the checkpoint interval runs on monotonic time); ``processed + dead-lettered +
deduplicated == produced`` at the end; and the one analytic that reads the wall clock, the
drift windows' ``future_tolerance_s`` (``service/drift/stage.py``), counts as ``future``
exactly the events read while the clock stood behind their stamps (all events are stamped
ten days back: only the −20 d phase is behind them) and none as late. The shadow runner's
token bucket, deadlines and CPU window run on monotonic time: in every phase the candidate
gets calls and rate-limit skips, no call times out, and every offer ends queued or skipped
and every queued call completed.

libfaketime 0.9.10 (Debian bookworm) mishandles ``clock_nanosleep(CLOCK_MONOTONIC,
TIMER_ABSTIME)`` when monotonic time is not faked (wolfcw/libfaketime#426), which is how
``time.sleep`` waits since Python 3.11: it fails with ``EINVAL``. The serve process therefore
gets a ``sitecustomize`` that makes ``time.sleep`` wait in ``select()`` (a relative timeout),
which a real clock step cannot break either. The test skips when libfaketime is not installed
(``apt-get install faketime``).
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from benchmarks.streams import file_stream
from tests.acceptance.conftest import PIPELINE
from tests.acceptance.service_process import REPO_ROOT, ServiceProcess, accounted, parse_metrics
from tests.reliability.conftest import Monitor, assert_invariant, assert_metrics_balance, wait_for

LIBFAKETIME = Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1")
pytestmark = pytest.mark.skipif(
    not LIBFAKETIME.exists(), reason=f"libfaketime not installed ({LIBFAKETIME}; apt faketime)"
)

PER_PHASE_LINES = 200
TWIN_RPS, TWIN_BURST = 10.0, 5.0
PER_PHASE_HTTP = 4
FUTURE_S = 600.0
LATENESS_S = 3600.0
STAMPED_BACK = timedelta(days=10)  # every event's stamp: ten days before the true time
#: (libfaketime offset, seconds it adds to the true time)
PHASES = (
    ("+0", 0.0),
    ("+6h", 6 * 3600.0),
    ("+3d", 3 * 86400.0),
    ("-2d", -2 * 86400.0),
    ("-20d", -20 * 86400.0),
    ("+0", 0.0),
)
SITECUSTOMIZE = '''\
"""Test hook of tests/reliability/test_wall_clock.py (see its docstring)."""
import faulthandler
import select
import signal
import time

faulthandler.register(signal.SIGUSR1, all_threads=True)


def _sleep(seconds, _select=select.select):
    if seconds < 0:
        raise ValueError("sleep length must be non-negative")
    _select([], [], [], seconds)


time.sleep = _sleep
'''


def twin(question: str, k: int) -> list[tuple[str, float]]:
    """The shadow candidate: a fixed ranking (an ``entrypoint`` retriever, in serve)."""
    return [("p-00011", 3.0), ("p-00021", 2.0), ("p-00031", 1.0)][:k]


def _twin(service: ServiceProcess) -> dict[str, Any]:
    """The candidate's block of ``GET /v1/shadow`` (which also folds in finished calls)."""
    return dict(service.get("/v1/shadow", timeout_s=10).json()["candidates"]["twin"])


def _file_lines(first: datetime) -> tuple[list[bytes], list[int]]:
    """The lines to append (one phase's share after the other), good events restamped from
    ``first``, 0.5 s apart; and how many good events each phase's share holds."""
    lines: list[bytes] = []
    good = 0
    per_phase = [0] * len(PHASES)
    for value, reason in file_stream(PER_PHASE_LINES * len(PHASES), poison_share=0.01, seed=91):
        if reason is None:
            event = json.loads(value)
            event["timestamp"] = (first + timedelta(seconds=0.5 * good)).isoformat()
            value = json.dumps(event, separators=(",", ":")).encode()
            per_phase[len(lines) // PER_PHASE_LINES] += 1
            good += 1
        assert value is not None and b"\n" not in value and value.strip()
        lines.append(value + b"\n")
    return lines, per_phase


def _served_clock(service: ServiceProcess) -> float:
    """The serve process's wall clock minus the true one, seconds (from its ``Date``)."""
    try:
        date = service.get("/healthz", timeout_s=10).headers["date"]
    except httpx.HTTPError:
        return math.nan
    return parsedate_to_datetime(date).timestamp() - time.time()


def _bad_samples(text: str) -> list[str]:
    """Samples that must never be negative or non-finite and are: counters, histograms,
    summaries, and gauges of durations, lags or ages (timestamps excepted)."""
    bad = []
    for (name, labels), value in parse_metrics(text).items():
        kinds = ("_total", "_count", "_sum", "_bucket", "_created", "seconds", "lag", "age")
        if not any(k in name for k in kinds) or name.endswith("timestamp_seconds"):
            continue
        if value < 0 or not math.isfinite(value):
            bad.append(f"{name}{dict(labels)} = {value}")
    return bad


@pytest.fixture(scope="module")
def jump_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """Replay the file through every clock phase; what the service reported in each."""
    workdir = tmp_path_factory.mktemp("wall-clock")
    hooks = workdir / "_faketime_hooks"
    hooks.mkdir()
    (hooks / "sitecustomize.py").write_text(SITECUSTOMIZE, encoding="utf-8")
    offset_file = workdir / "faketime"
    offset_file.write_text("+0\n", encoding="utf-8")
    path = workdir / "events.jsonl"
    path.touch()
    first = datetime.now(UTC) - STAMPED_BACK
    lines, good = _file_lines(first)
    config = {
        "source": {"kind": "file", "path": str(path), "follow": True},
        "pipeline": PIPELINE,
        "state": {"path": str(workdir / "state" / "state.sqlite")},
        "retrievers": [{"name": "twin", "kind": "entrypoint", "entrypoint": f"{__name__}:twin"}],
        "shadow": {
            "candidates": [{"name": "twin", "k": 3, "max_rps": TWIN_RPS, "burst": TWIN_BURST}],
            "max_cpu_share": 0.5,
        },
        "analytics": {
            "scope_retriever": None,
            "drift": {"allowed_lateness_s": LATENESS_S, "future_tolerance_s": FUTURE_S},
        },
    }
    env = {
        "LD_PRELOAD": str(LIBFAKETIME),
        "FAKETIME_TIMESTAMP_FILE": str(offset_file),
        "FAKETIME_NO_CACHE": "1",
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",
        "PYTHONPATH": os.pathsep.join([str(hooks), str(REPO_ROOT)]),
    }
    monitor = Monitor(interval_s=0.3)
    service = monitor.watch(ServiceProcess.start(workdir, config, env=env))
    phases: list[dict[str, Any]] = []
    written = posted = 0
    try:
        for spelling, shift in PHASES:
            offset_file.write_text(spelling + "\n", encoding="utf-8")
            wait_for(
                lambda shift=shift: abs(_served_clock(service) - shift) < 60,
                timeout_s=15,
                what=f"serve's clock at {spelling}",
            )
            before, shadow_before = service.status(), _twin(service)
            with path.open("ab") as out:
                out.writelines(lines[written : written + PER_PHASE_LINES])
            written += PER_PHASE_LINES
            newest = first + timedelta(seconds=0.5 * sum(good[: len(phases) + 1]))
            events = [
                {"event_id": f"http-{posted + i}", "timestamp": newest.isoformat(),
                 "question": "When does the library open on Sundays?"}
                for i in range(PER_PHASE_HTTP)
            ]  # fmt: skip
            answer = service.post_events(events)
            posted += len(events)
            service.wait_until(
                lambda s, n=written + posted: accounted(s["totals"]) >= n,
                timeout_s=60,
                what=f"the lines of phase {spelling}",
            )
            # The file source's committed line, not a commit count: a commit of the previous
            # phase's tail after ``before`` was read would satisfy "commits went up" before
            # this phase's lines were checkpointed.
            service.wait_until(
                lambda s, n=written: s["source"]["line"] >= n,
                timeout_s=60,
                what=f"a checkpoint of the lines of phase {spelling}",
            )
            metrics = service.get("/metrics", timeout_s=10)
            after, shadow_after = service.status(), _twin(service)
            phases.append({
                "spelling": spelling, "shift": shift, "served_shift": _served_clock(service),
                "ingest": answer.status_code, "accepted": answer.json().get("accepted"),
                "ready": service.readyz(), "metrics": metrics.status_code,
                "bad_samples": _bad_samples(metrics.text), "before": before, "after": after,
                "shadow_before": shadow_before, "shadow_after": shadow_after,
            })  # fmt: skip
        wait_for(
            lambda: (t := _twin(service))["completed"] + sum(t["errors"].values()) == t["queued"],
            timeout_s=20,
            what="the shadow calls to finish",
        )
        monitor.sample(service)
        yield {
            "shadow": _twin(service),
            "lines": len(lines), "good": good, "posted": posted, "phases": phases,
            "totals": service.totals(), "samples": service.samples(), "monitor": monitor,
            "drift": service.get("/v1/drift").json(), "alive": service.alive,
            "ready": service.readyz(), "log": service.log_tail(),
            "log_text": (workdir / "serve.log").read_text(errors="replace"),
        }  # fmt: skip
    finally:
        monitor.stop()
        service.kill()


def test_the_process_clock_really_jumped(jump_run: dict[str, Any]) -> None:
    for phase in jump_run["phases"]:
        assert abs(phase["served_shift"] - phase["shift"]) < 60, phase["spelling"]


def test_serve_keeps_answering_through_every_jump(jump_run: dict[str, Any]) -> None:
    for phase in jump_run["phases"]:
        assert phase["ready"] == 200, (phase["spelling"], phase["after"].get("not_ready_reasons"))
        assert phase["metrics"] == 200, phase["spelling"]
        assert phase["ingest"] == 200 and phase["accepted"] == PER_PHASE_HTTP, phase
    assert jump_run["alive"] and jump_run["ready"] == 200, jump_run["log"]
    logged = [
        line for line in jump_run["log_text"].splitlines() if "Traceback" in line or "ERROR" in line
    ]
    assert logged == [], jump_run["log"]


def test_no_negative_or_infinite_sample(jump_run: dict[str, Any]) -> None:
    for phase in jump_run["phases"]:
        assert phase["bad_samples"] == [], phase["spelling"]
    assert _bad_samples_of(jump_run["samples"]) == []


def _bad_samples_of(samples: dict[Any, float]) -> list[str]:
    text = "\n".join(f"{n} {v}" for (n, labels), v in samples.items() if not labels)
    return _bad_samples(text + "\n") if text else []


def test_every_phase_is_read_and_checkpointed(jump_run: dict[str, Any]) -> None:
    """The fixture waited for each phase's lines and a checkpoint after them (the checkpoint
    interval runs on monotonic time); here the counts of each phase are exact."""
    for phase in jump_run["phases"]:
        before, after = phase["before"]["totals"], phase["after"]["totals"]
        gained = after["consumed"] - before["consumed"]
        assert gained == PER_PHASE_LINES + PER_PHASE_HTTP, phase["spelling"]
        assert phase["after"]["source"]["commits"] > phase["before"]["source"]["commits"]


def test_every_event_accounted_once(jump_run: dict[str, Any]) -> None:
    run = jump_run
    totals = run["totals"]
    assert_invariant(totals, run["lines"] + run["posted"])
    assert totals["processed"] == sum(run["good"]) + run["posted"], totals
    assert_metrics_balance(run["samples"], "file")
    assert_metrics_balance(run["samples"], "http")
    run["monitor"].assert_monotonic()
    assert run["monitor"].samples_taken > 10


def test_only_events_ahead_of_the_stepped_back_clock_are_future(jump_run: dict[str, Any]) -> None:
    """Events are ``future`` when stamped more than ``future_tolerance_s`` after the process's
    wall clock: exactly the good lines and HTTP events of the phase whose clock stood more
    than ten days back (−20 d); none at −2 d, +0 or ahead."""
    back = -STAMPED_BACK.total_seconds() - FUTURE_S
    behind = sum(
        good + PER_PHASE_HTTP
        for good, p in zip(jump_run["good"], jump_run["phases"], strict=True)
        if p["shift"] < back
    )
    assert behind == jump_run["good"][4] + PER_PHASE_HTTP  # the −20 d phase only
    seen = jump_run["drift"]["event_time"]
    assert (seen["future"], seen["late"]) == (behind, 0), seen
    assert jump_run["drift"]["events_seen"] == jump_run["totals"]["processed"]


def test_shadow_limits_and_deadlines_ignore_the_wall_clock(jump_run: dict[str, Any]) -> None:
    """A token bucket or deadline on the wall clock would starve the candidate after the clock
    steps back (no refill for days) and time calls out after it steps forward; on monotonic
    time each phase gets calls and rate-limit skips (its 200 lines arrive faster than 10/s)."""
    for phase in jump_run["phases"]:
        before, after = phase["shadow_before"], phase["shadow_after"]
        assert after["queued"] > before["queued"], phase["spelling"]
        limited = after["skipped"].get("rate_limited", 0) - before["skipped"].get("rate_limited", 0)
        assert limited > 0, (phase["spelling"], after["skipped"])
    twin = jump_run["shadow"]
    assert twin["errors"] == {}, twin["errors"]
    assert twin["offered"] == twin["queued"] + sum(twin["skipped"].values()), twin
    assert twin["completed"] == twin["queued"] > 0, twin
    latency = twin["latency_seconds"]
    assert latency["count"] == twin["completed"] and 0 <= latency["mean"] <= latency["max"]


def test_uptime_never_negative_nor_jumps(jump_run: dict[str, Any]) -> None:
    """``uptime_s`` is on the monotonic clock (it went to −172,777 s at −2 d on the wall
    clock before ``service/runtime/process.py`` was fixed): it only grows, by less than a day."""
    uptimes = [
        u for p in jump_run["phases"] for u in (p["before"]["uptime_s"], p["after"]["uptime_s"])
    ]
    assert uptimes == sorted(uptimes) and 0 <= uptimes[0] and uptimes[-1] < 86_400, uptimes
