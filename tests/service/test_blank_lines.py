"""Trial 22, LOW 6: a blank line of a JSONL log was neither consumed nor dead-lettered, and
nothing said so (2,902 lines read as "consumed 2,901"). Each blank (empty or whitespace-only)
line is now counted as ``blank_lines`` beside ``consumed``, so lines read = ``consumed +
blank_lines``: in the replay report (JSON, text, HTML), in ``/v1/status`` ``totals`` and on
the status page, and in ``goldwatch_blank_lines_total``. (The file source's position and its
resumption with blank lines: ``tests/consumers/test_loop.py``.)"""

from __future__ import annotations

import json
import time
from pathlib import Path

import httpx

from service.html import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

#: Seconds the served file source is given to reach its end (a bound on waiting, not a
#: timing assertion).
WAIT_S = 60.0


def _log(path: Path) -> tuple[Path, int, int]:
    """A log of 6 events and 3 blank lines (one of spaces, one a CRLF line's ``\\r``) and
    one dead letter: 10 lines."""
    rows = [json.dumps({"event_id": f"b-{i}", "timestamp": f"2026-11-20T10:0{i}:00Z",
                        "question": f"question number {i}"}) for i in range(6)]  # fmt: skip
    lines = [rows[0], "", rows[1], "   ", rows[2], "{not json", rows[3], "\r", rows[4], rows[5]]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path, len(lines), 3


def test_replay_states_its_blank_lines(tmp_path: Path) -> None:
    log, lines, blank = _log(tmp_path / "log.jsonl")
    settings = load_settings(None, analytics={"enabled": False})
    report = run_replay(settings, log, None, tmp_path / "dlq.jsonl")
    assert (report["consumed"], report["blank_lines"]) == (lines - blank, blank)
    assert report["processed"] + report["dead_lettered_total"] == report["consumed"]
    assert report["dead_lettered"] == {"not_json": 1}  # no dead letter for a blank line
    assert len((tmp_path / "dlq.jsonl").read_text().splitlines()) == 1
    text = render_text(report)
    assert "7 consumed, 6 processed, 0 duplicates, 1 dead-lettered, 3 blank lines (no data)" in text
    page = render_replay_html(report)
    assert "7 events consumed, 3 blank lines (no data)." in page
    assert "<td>blank lines (no data)</td>" in page.replace("\n", "")


def test_a_log_without_any_says_nothing_of_them(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"event_id": "x", "timestamp": "2026-11-20T10:00:00Z",
                               "question": "q"}) + "\n", encoding="utf-8")  # fmt: skip
    report = run_replay(load_settings(None, analytics={"enabled": False}), log, None,
                        tmp_path / "dlq.jsonl")  # fmt: skip
    assert report["blank_lines"] == 0  # always in the JSON
    assert "blank line" not in render_text(report)
    assert "blank line" not in render_replay_html(report)


def test_serve_counts_blank_lines_in_status_metrics_and_the_status_page(tmp_path: Path) -> None:
    log, lines, blank = _log(tmp_path / "log.jsonl")
    settings = load_settings(
        state={"path": tmp_path / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        source={"kind": "file", "path": log},
        analytics={"enabled": False},
    )
    with Server(settings) as server:
        deadline = time.monotonic() + WAIT_S
        totals: dict[str, object] = {}
        while time.monotonic() < deadline:
            totals = httpx.get(server.base + "/v1/status").json()["totals"]
            if totals["consumed"] + totals["blank_lines"] >= lines:  # type: ignore[operator]
                break
            time.sleep(0.1)
        assert (totals["consumed"], totals["blank_lines"]) == (lines - blank, blank)
        assert totals["dead_lettered"] == {"not_json": 1}
        metrics = httpx.get(server.base + "/metrics").text
        assert 'goldwatch_blank_lines_total{source="file"} 3.0' in metrics
        page = httpx.get(server.base + "/").text
        assert "blank_lines" in page
