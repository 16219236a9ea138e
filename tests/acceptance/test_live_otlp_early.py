"""``POST /v1/traces`` while ``goldwatch serve`` is still starting (trial t47 MEDIUM 1): the
port answers before the pipeline is built, and the OpenTelemetry SDK's OTLP/HTTP exporter's
requests are acknowledged into the state file meanwhile, so a restart slower than the
exporter's 10 s timeout loses no batch. An acknowledgement still means durable: a kill -9
before the pipeline is ready loses none of the traces acknowledged while starting.

The pipeline's load is made slow on purpose (a stage that sleeps when built,
``GOLDWATCH_TEST_LOAD_SLOW_MS``), so "before ready" is not a race with the machine's speed.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.acceptance.service_process import ServiceProcess
from tests.acceptance.test_live_otlp_crash import (
    GOOD,
    NAMELESS,
    RECORD,
    _config,
    _dead_trace_ids,
    _export,
    _recorded,
    _traces,
    _wait_accounted,
)

pytestmark = pytest.mark.slow

SLOW_LOAD = "tests.acceptance.slow_stage:SlowLoadStage"


def _wait_port(service: ServiceProcess, timeout_s: float = 60.0) -> float:
    """Seconds from the process's start until ``/healthz`` answered 200."""
    service.wait_healthy(timeout_s)
    return time.monotonic() - service.started_at


def test_traces_sent_while_starting_are_kept_across_a_kill_9_and_processed_once(
    start_service: Callable[..., ServiceProcess], tmp_path: Path
) -> None:
    traces = _traces()
    half = len(traces) // 2
    config = _config(tmp_path, settle_s=1.0, timeout_s=120.0)
    config["pipeline"]["extra_stages"] = [RECORD, SLOW_LOAD]
    env = {"GOLDWATCH_TEST_RECORD": str(tmp_path / "events.jsonl"),
           "GOLDWATCH_TEST_LOAD_SLOW_MS": "60000"}  # fmt: skip

    # 1. the load takes a minute: the first half is sent (whole traces) while it runs
    first = start_service(tmp_path, config, env=env, wait=False)
    _wait_port(first)
    assert first.readyz() == 503
    reasons = first.get("/readyz").json()["reasons"]
    assert len(reasons) == 1 and reasons[0].startswith("starting:")
    assert first.get("/v1/status").status_code == 503  # the reports need the pipeline
    for start in range(0, half, 13):
        batch = traces[start : min(start + 13, half)]
        _export(first, [s for t in batch for s in t.children + t.roots])
    assert first.metric("goldwatch_open_traces") == half  # acknowledged, not yet built
    assert first.readyz() == 503  # still loading: every 200 above came before ready
    first.kill()

    # 2. a restart whose load takes 8 s: the other half is sent while it runs
    env["GOLDWATCH_TEST_LOAD_SLOW_MS"] = "8000"
    second = start_service(tmp_path, config, env=env, wait=False)
    _wait_port(second)
    assert second.metric("goldwatch_traces_restored_total") == half
    for start in range(half, len(traces), 13):
        batch = traces[start : start + 13]
        _export(second, [s for t in batch for s in t.children + t.roots])
    assert second.readyz() == 503
    second.wait_until(lambda s: s["ready"], what="ready")
    _wait_accounted(second, tmp_path, GOOD, NAMELESS)
    totals = second.totals()
    assert second.terminate() == 0

    events = _recorded(tmp_path)
    expected = {t.trace_id: t.expected for t in traces if t.expected is not None}
    assert len(events) == GOOD  # none lost, none processed twice
    assert {e.event_id: e for e in events} == expected  # field by field
    dead = _dead_trace_ids(tmp_path)
    assert sorted(dead) == sorted(("missing_field", t.trace_id) for t in traces if t.expected
                                  is None)  # fmt: skip
    assert (totals["processed"], totals["duplicates"]) == (GOOD, 0)
    assert totals["dead_lettered"] == {"missing_field": NAMELESS}
