"""The end of ``serve``'s file source adds the events the drift windows' gap rule still
holds, as a replay's end does, so the counts a user reads at ``input_finished`` are the
replay's of the same file (session 43; before it serve left them ``ahead`` until more events
came, which a finished file never brings).

The log, by hand: 100 questions a minute apart, a 1 h pause, then 3 more a minute apart.
The gap rule (``ahead_gap_factor`` 4: limit max(4 × 60 s, ``allowed_lateness_s`` 300 s) =
300 s) holds each of the 3 (3,600 s and more ahead of the watermark) until ``ahead_confirm``
(5) in a row confirm the jump; the log ends after 3, and no event came in time after them,
so nothing refuted them: at the end all 103 are accepted, 0 ahead, 0 late — in the replay
and now in serve.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from service.jobs.replay import run_replay
from service.runtime.process import Runtime
from service.settings import load_settings
from tests.service.test_replay_job import QUESTIONS

START = 1_795_000_000  # 2026-11-18 11:06:40 UTC


def _log(path: Path) -> Path:
    rows = [{"event_id": f"p-{i:03d}", "timestamp": START + 60 * i + (3_600 if i >= 100 else 0),
             "question": QUESTIONS[i % len(QUESTIONS)]} for i in range(103)]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def _served(settings: Any) -> tuple[dict[str, Any], float | None]:
    """The analytics report (``/v1/analytics``'s body) at ``input_finished`` and the
    ``goldwatch_drift_events_held_ahead`` gauge then."""
    runtime = Runtime(settings, registry=CollectorRegistry())
    try:
        runtime.start()
        deadline = time.monotonic() + 120
        while not runtime.status()["input_finished"]:
            assert time.monotonic() < deadline, "the log was not finished in time"
            time.sleep(0.1)
        report = runtime.analytics_report()
        assert report is not None
        gauge = runtime.registry.get_sample_value("goldwatch_drift_events_held_ahead")
        return dict(report), gauge
    finally:
        runtime.stop()


def test_serve_at_the_end_of_a_file_counts_the_held_events_as_the_replay_does(
    tmp_path: Path,
) -> None:
    log = _log(tmp_path / "pause.jsonl")
    settings = load_settings(source={"kind": "file", "path": log},
                             state={"path": tmp_path / "serve" / "state.sqlite"},
                             pipeline={"max_batch_size": 7})  # fmt: skip
    served, gauge = _served(settings)
    # the same batches: without a gold set the language prior is the live traffic's so far,
    # so the short questions' labels depend on the batching (not this test's matter)
    replayed = run_replay(load_settings(pipeline={"max_batch_size": 7}), log, None,
                          tmp_path / "dlq.jsonl")["analytics"]  # fmt: skip
    timing = served["drift"]["event_time"]
    assert (timing["late"], timing["future"], timing["ahead"]) == (0, 0, 0)  # was ahead 3
    assert gauge == 0.0
    assert timing == replayed["drift"]["event_time"]
    # the whole drift report: each dimension's counts, its tests (their n_current), the
    # sizing advice's busiest window (the released events join it) and the alarms
    assert served["drift"] == replayed["drift"]
    assert served["drift"]["language"]["comparisons"]["baseline"]["n_current"] == 3
