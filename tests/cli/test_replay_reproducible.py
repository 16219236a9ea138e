"""Issue 18 item 3: a replay offers every event to every candidate (backpressure, never
``queue_full``) and the same input gives the same report, byte for byte."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from service.cli.common import _emit_replay_report
from service.demo import demo_path
from service.jobs.replay import render_text, run_replay
from service.settings import load_settings
from tests.cli.goldwatch_cli import run_goldwatch

#: A candidate whose queue holds one event with one worker: a live service skips most events
#: as ``queue_full`` here, a replay must wait instead.
CONFIG = """\
gold_set: {gold}
corpus: {corpus}
analytics:
  drift: {{window_s: 14400, reference_window_s: 43200, warmup_s: 28800, test_every_s: 1800,
          min_count: 100}}
shadow:
  production: bm25
  candidates:
    - {{name: hybrid, retriever: hybrid, k: 10, sample_rate: 1.0, queue_size: 1,
       max_concurrency: 2}}
"""
N_EVENTS = 400


def _setup(tmp_path: Path) -> tuple[Path, Path]:
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines()[:N_EVENTS]
    log = tmp_path / "log.jsonl"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        CONFIG.format(gold=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl")),
        encoding="utf-8",
    )
    return log, config


def _replay(tmp_path: Path, log: Path, config: Path, fmt: str, html: str) -> str:
    args = ["replay", str(log), "--config", str(config), "--format", fmt, "--html", html]
    result = run_goldwatch(args, tmp_path, timeout_s=300)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.slow
def test_the_same_log_gives_the_same_report_byte_for_byte(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    log, config = _setup(tmp_path)
    first = _replay(tmp_path, log, config, "json", "a.html")
    text = _replay(tmp_path, log, config, "text", "b.html")
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    # A third replay of the same log, in this process (its own hash seed, a later clock, the
    # models fitted again), emitted by the command's own tail: its JSON, text and HTML must be
    # the two commands' byte for byte, nothing stripped (a replay's report holds no
    # time-of-run value). Each format is thus compared across two processes as before, with
    # one ~6 s command start-up (imports) fewer per pair.
    for name in [k for k in os.environ if k.startswith("GOLDWATCH_")]:
        monkeypatch.delenv(name)  # as clean_env does for the commands
    again = run_replay(load_settings(config), log, None, None)
    capsys.readouterr()
    _emit_replay_report(again, "json", tmp_path / "c.html", render_text)
    assert capsys.readouterr().out == first
    _emit_replay_report(again, "text", None, render_text)
    assert capsys.readouterr().out == text
    assert (tmp_path / "c.html").read_bytes() == (tmp_path / "a.html").read_bytes()
    doc = json.loads(first)
    hybrid = doc["shadow"]["candidates"]["hybrid"]
    # worked out from the log: every event is offered once; those without a production
    # ranking are skipped as no_production (nothing to compare with), all others compared,
    # whatever the queue size
    events = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    without = sum(not (e.get("retrieval") or {}).get("results") for e in events)
    assert doc["processed"] == len({e["event_id"] for e in events}) == N_EVENTS
    assert hybrid["offered"] == N_EVENTS
    # and two questions hold personal data (read in the log: e-000121 an e-mail address,
    # e-000391 a phone number), both with a production ranking: skipped as scrubbed, since
    # production ranked the raw text (trial 15)
    assert hybrid["skipped"] == {"no_production": without, "scrubbed": 2} and without == 4
    assert hybrid["errors"] == {} and hybrid["completed"] == N_EVENTS - without - 2
    assert doc["shadow"]["results_dropped"] == 0
