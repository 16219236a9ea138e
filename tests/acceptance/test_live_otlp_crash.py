"""``POST /v1/traces`` across a kill -9 of ``goldwatch serve`` (issue 20 item 2): the
OpenTelemetry SDK's OTLP/HTTP exporter sends traces in the OpenInference, GenAI (both shapes)
and OpenLLMetry shapes, every trace's children in one request and its root in a later one;
the process is killed after some of those requests were acknowledged and before their traces
settled, and started again on the same state file. Every acknowledged trace must become
exactly one event (or, without a question, one dead letter): none lost, none counted twice.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from service.events import QueryLogEvent
from service.traces.otlp import decode_json
from tests.acceptance.conftest import PIPELINE
from tests.acceptance.service_process import TOKEN, ServiceProcess
from tests.service.api.test_traces_api import (
    _at,
    _expected,
    _genai,
    _genai_old,
    _openinference,
    _openllmetry,
    _provider,
)

pytestmark = pytest.mark.slow

GOOD, NAMELESS = 48, 4  # traces with a question (12 per shape), traces without one
RECORD = "tests.acceptance.slow_stage:RecordStage"


class Trace:
    """One SDK trace: its id, its spans without the root, its root, and (with a question)
    the event written out by hand in ``test_traces_api._expected``."""

    def __init__(self, spans: Sequence[ReadableSpan], expected: QueryLogEvent | None) -> None:
        self.children = [s for s in spans if s.parent is not None]
        self.roots = [s for s in spans if s.parent is None]
        self.trace_id = format(self.roots[0].context.trace_id, "032x")
        self.expected = expected


def _nameless(tracer: Tracer) -> str:
    """A trace with no question in any convention: a root with one child."""
    with tracer.start_as_current_span("job", start_time=_at(0), end_on_exit=False) as root:
        with tracer.start_as_current_span("db", start_time=_at(1), end_on_exit=False) as s:
            s.set_attribute("db.system", "postgresql")
            s.end(end_time=_at(2))
        root.end(end_time=_at(3))
        return format(root.get_span_context().trace_id, "032x")


def _traces() -> list[Trace]:
    """GOOD traces of the four shapes and NAMELESS ones, interleaved."""
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    shapes: tuple[Callable[[Tracer], str], ...] = (_openinference, _genai, _genai_old,
                                                    _openllmetry)  # fmt: skip
    traces: list[Trace] = []
    for group in range(GOOD // 4):
        ids = []
        spans = []
        for shape in shapes:
            ids.append(shape(tracer))
            spans.append(list(memory.get_finished_spans()))
            memory.clear()
        expected = _expected(*ids)
        traces += [Trace(s, expected[i]) for i, s in zip(ids, spans, strict=True)]
        if group % 3 == 0:
            _nameless(tracer)
            traces.append(Trace(list(memory.get_finished_spans()), None))
            memory.clear()
    provider.shutdown()
    assert len(traces) == GOOD + NAMELESS
    return traces


def _export(service: ServiceProcess, spans: list[ReadableSpan]) -> None:
    """One OTLP/HTTP request of the SDK's exporter; acknowledged (200) or the test fails."""
    exporter = OTLPSpanExporter(
        endpoint=f"{service.base_url}/v1/traces", headers={"authorization": f"Bearer {TOKEN}"}
    )
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()  # type: ignore[no-untyped-call]


def _config(workdir: Path, settle_s: float, timeout_s: float) -> dict[str, Any]:
    return {
        "source": {"kind": "none"},
        "pipeline": {**PIPELINE, "extra_stages": [RECORD]},
        "state": {"path": str(workdir / "state.sqlite")},
        "analytics": {"enabled": False},
        "traces": {"assembly": {"settle_s": settle_s, "timeout_s": timeout_s}},
    }


def _dead_trace_ids(workdir: Path) -> list[tuple[str, str]]:
    """(reason, trace id) of every trace dead letter in the dead-letter file, in order."""
    path = workdir / "goldwatch.dlq.jsonl"
    if not path.exists():
        return []
    out = []
    for line in path.open(encoding="utf-8"):
        row = json.loads(line)
        spans = decode_json(base64.b64decode(row["value_b64"]))
        out.append((row["reason"], spans[0].trace_id))
    return out


def _recorded(workdir: Path) -> list[QueryLogEvent]:
    path = workdir / "events.jsonl"
    if not path.exists():
        return []
    return [QueryLogEvent.model_validate_json(line) for line in path.open(encoding="utf-8")]


def _wait_accounted(service: ServiceProcess, workdir: Path, good: int, dead: int) -> None:
    service.wait_until(lambda s: s["totals"]["processed"] >= good, what=f"{good} events")
    deadline = time.monotonic() + 60  # a bound on the wait, not a timing assertion
    while len(_dead_trace_ids(workdir)) < dead and time.monotonic() < deadline:
        time.sleep(0.1)


def test_kill_9_after_acknowledged_spans_then_restart_counts_every_trace_once(
    start_service: Callable[..., ServiceProcess], tmp_path: Path
) -> None:
    traces = _traces()
    half = len(traces) // 2
    env = {"GOLDWATCH_TEST_RECORD": str(tmp_path / "events.jsonl")}
    config = _config(tmp_path, settle_s=8.0, timeout_s=120.0)
    first = start_service(tmp_path, config, env=env)
    for start in range(0, len(traces), 13):  # the children of every trace, 4 requests
        _export(first, [s for t in traces[start : start + 13] for s in t.children])
    for start in range(0, half, 13):  # the roots of the first half, 2 requests
        _export(first, [s for t in traces[start : min(start + 13, half)] for s in t.roots])
    open_at_kill = first.metric("goldwatch_open_traces")
    processed_at_kill = first.totals()["processed"]
    first.kill()
    # every trace had spans acknowledged, and (settle_s = 8 s) none had settled
    assert (open_at_kill, processed_at_kill) == (len(traces), 0)

    second = start_service(tmp_path, config, env=env)
    assert second.metric("goldwatch_traces_restored_total") == len(traces)
    for start in range(half, len(traces), 13):  # the other roots, after the restart
        _export(second, [s for t in traces[start : start + 13] for s in t.roots])
    _wait_accounted(second, tmp_path, GOOD, NAMELESS)
    totals = second.wait_until(
        lambda s: sum(s["totals"]["dead_lettered"].values()) >= NAMELESS, what="dead letters"
    )["totals"]
    # then the app sends every trace again, cut as before (children, then roots, 13 traces a
    # request: replaying its export): each trace, processed or dead-lettered, is one
    # duplicate, 52 (trial t42 MEDIUM 2: before, one per request holding its spans, 104)
    for start in range(0, len(traces), 13):
        _export(second, [s for t in traces[start : start + 13] for s in t.children])
    for start in range(0, len(traces), 13):
        _export(second, [s for t in traces[start : start + 13] for s in t.roots])
    again = second.totals()
    spans = sum(len(t.children) + len(t.roots) for t in traces)
    assert (again["processed"], again["duplicates"]) == (GOOD, len(traces))
    assert again["consumed"] == len(traces) + len(traces)  # each once, then each a duplicate
    assert again["dead_lettered"] == {"missing_field": NAMELESS}
    assert second.metric("goldwatch_trace_spans_repeated_total", reason="duplicate") == spans
    assert second.metric("goldwatch_events_duplicate_total", source="http") == len(traces)
    assert second.terminate() == 0

    events = _recorded(tmp_path)
    expected = {t.trace_id: t.expected for t in traces if t.expected is not None}
    assert len(events) == GOOD  # none processed twice
    assert {e.event_id: e for e in events} == expected  # field by field, children included
    dead = _dead_trace_ids(tmp_path)
    assert sorted(dead) == sorted(("missing_field", t.trace_id) for t in traces if t.expected
                                  is None)  # fmt: skip
    assert totals["processed"] == GOOD and totals["duplicates"] == 0
    # the question-less traces count where event dead letters do, once (trial finding 7)
    assert totals["dead_lettered"] == {"missing_field": NAMELESS}
    assert len(events) + len(dead) == len(traces)
    print(f"\nacknowledged {len(traces)} traces; at kill: {open_at_kill:.0f} open, "
          f"{processed_at_kill} processed; after restart: {len(events)} processed, "
          f"{len(dead)} dead-lettered, 0 duplicates; all {len(traces)} sent again in 8 "
          f"requests: {again['duplicates']} duplicates")  # fmt: skip


def test_settle_time_and_timeout_pass_while_down(
    start_service: Callable[..., ServiceProcess], tmp_path: Path
) -> None:
    """Traces complete (root acknowledged) and traces whose root never comes, all open at a
    kill -9; the service stays down for longer than the timeout. At the restart the complete
    ones are handed out as settled, the rootless ones as timed out without a root; each
    becomes one event or one dead letter."""
    traces = _traces()[:12]  # the 4 shapes, a nameless trace, the 4 shapes, 3 shapes
    rooted, rootless = traces[:6], traces[6:]
    env = {"GOLDWATCH_TEST_RECORD": str(tmp_path / "events.jsonl")}
    timeout_s = 8.0
    config = _config(tmp_path, settle_s=6.0, timeout_s=timeout_s)
    first = start_service(tmp_path, config, env=env)
    _export(first, [s for t in rooted for s in t.children + t.roots])
    _export(first, [s for t in rootless for s in t.children])
    killed_at = time.monotonic()
    processed_at_kill = first.totals()["processed"]
    first.kill()
    assert processed_at_kill == 0  # settle_s = 6 s: nothing was handed out yet
    time.sleep(max(0.0, timeout_s + 1 - (time.monotonic() - killed_at)))  # down past timeout

    second = start_service(tmp_path, config, env=env)
    second.wait_until(
        lambda s: s["totals"]["processed"] + len(_dead_trace_ids(tmp_path)) >= len(traces),
        what="every trace",
    )
    samples = second.samples()
    assert second.terminate() == 0
    assembled = {why: samples[("goldwatch_traces_assembled_total", frozenset({("why", why)}))]
                 for why in ("settled", "timeout", "flushed")}  # fmt: skip
    assert assembled == {"settled": len(rooted), "timeout": len(rootless), "flushed": 0}
    assert samples[("goldwatch_traces_without_root_total", frozenset())] == len(rootless)
    recorded, dead_rows = _recorded(tmp_path), _dead_trace_ids(tmp_path)
    events = {e.event_id: e for e in recorded}
    dead = {trace_id: reason for reason, trace_id in dead_rows}
    assert (len(events), len(dead)) == (len(recorded), len(dead_rows))  # none twice
    assert sorted([*events, *dead]) == sorted(t.trace_id for t in traces)  # each once
    for trace in rooted:  # complete traces give the events written out by hand
        if trace.expected is None:
            assert dead[trace.trace_id] == "missing_field"
        else:
            assert events[trace.trace_id] == trace.expected
    print(
        f"\nrootless: {sum(t.trace_id in events for t in rootless)} mapped, "
        f"{sum(t.trace_id in dead for t in rootless)} dead-lettered"
    )
