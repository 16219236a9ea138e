"""The minimal instrumentation example of docs/traces.md (*A minimal instrumentation, end to
end*), run as written against a real ``goldwatch serve`` subprocess, so the example cannot rot
(trial 51, L2): its ``yaml`` block is merged into serve's configuration, its ``python`` block
runs in a fresh interpreter with the OTLP endpoint and token in the environment (as the
block's comment says), and the event serve builds (written out by
:class:`tests.acceptance.event_log_stage.EventLog`) equals the one the section describes,
written here by hand: the timestamp is the root span's start (trial 51, L1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from service.events import Answer, QueryLogEvent, Retrieval, RetrievedPassage
from tests.acceptance.event_log_stage import ENV, read_events
from tests.acceptance.service_process import REPO_ROOT, TOKEN, ServiceProcess

SECTION = "## A minimal instrumentation, end to end"
EVENT_LOG = "tests.acceptance.event_log_stage:EventLog"
WAIT_S = 120.0  # a bound on waits for the service, not a timing assertion
#: Appended to the example (which leaves ``root`` bound): its start and trace id, to compare.
REPORT = ('\nimport json\nprint(json.dumps({"start": root.start_time, '
          '"trace_id": format(root.get_span_context().trace_id, "032x")}))\n')  # fmt: skip


def _blocks() -> dict[str, str]:
    """The section's fenced blocks by language (``yaml``, ``python``); one of each."""
    text = (REPO_ROOT / "docs/traces.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    section = text[start : end if end > 0 else None]
    found = re.findall(r"```(\w+)\n(.*?)```", section, flags=re.DOTALL)
    blocks = dict(found)
    assert sorted(blocks) == ["python", "yaml"] and len(found) == 2, found
    return blocks


@pytest.mark.slow
def test_the_minimal_instrumentation_example_gives_the_event_the_docs_describe(
    tmp_path: Path,
) -> None:
    blocks = _blocks()
    documented: dict[str, Any] = yaml.safe_load(blocks["yaml"])
    assert documented == {"traces": {"mapping": {"refusal_attribute": "app.refused"}}}
    log = tmp_path / "events.jsonl"
    config = {
        "source": {"kind": "none", "dlq_path": str(tmp_path / "dead.jsonl")},
        "state": {"path": str(tmp_path / "state.sqlite")},
        "analytics": {"enabled": False},  # the event exactly as mapped
        "pipeline": {"extra_stages": [EVENT_LOG], "max_batch_wait_ms": 50},
        "traces": {"assembly": {"settle_s": 0.2, "timeout_s": 10.0},
                   **documented["traces"]},
    }  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config, env={ENV: str(log)})
    try:
        env = {**os.environ,
               "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": service.base_url + "/v1/traces",
               "OTEL_EXPORTER_OTLP_TRACES_HEADERS": f"authorization=Bearer {TOKEN}"}  # fmt: skip
        code = blocks["python"] + REPORT
        run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, timeout=WAIT_S, check=False)  # fmt: skip
        assert run.returncode == 0, run.stderr
        root = json.loads(run.stdout.splitlines()[-1])
        deadline = time.monotonic() + WAIT_S
        while not read_events(log):
            assert service.alive and time.monotonic() < deadline, service.log_tail()
            time.sleep(0.1)
        (event,) = read_events(log)
        trace_id = root["trace_id"]
        started = datetime(1970, 1, 1, tzinfo=UTC) + timedelta(microseconds=root["start"] // 1000)
        retrieval = event.retrieval
        assert retrieval is not None and retrieval.latency_ms is not None
        assert event == QueryLogEvent(
            event_id=trace_id, trace_id=trace_id, timestamp=started,
            question="How long is the refund window?",
            retrieval=Retrieval(retriever="retrieve", latency_ms=retrieval.latency_ms, results=(
                RetrievedPassage(id="p-0012", score=0.82, rank=1),
                RetrievedPassage(id="p-0007", score=0.51, rank=2))),
            answer=Answer(text="I can't answer that from our documents.", refused=True),
        )  # fmt: skip
        status = service.wait_until(lambda s: s["totals"]["processed"] >= 1, timeout_s=WAIT_S,
                                    what="the event counted")  # fmt: skip
        totals = status["totals"]
        assert (totals["processed"], totals["dead_lettered"], totals["fields_dropped"]) == (
            1, {}, {})  # fmt: skip
    finally:
        service.kill()
