"""The replay wires the series' quality and agreement over time end to end: the shadow
stage's results reach the series (its agreement counts equal the shadow report's), and the
text report and the HTML page show the over-time lines (s33 review: unwiring any of the three
broke no fast test)."""

from __future__ import annotations

from pathlib import Path

from service.demo import demo_data, demo_path
from service.html import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.settings import load_settings


def test_demo_replay_reports_agreement_and_quality_over_time(tmp_path: Path) -> None:
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    log = tmp_path / "log.jsonl"
    log.write_text("".join(lines[:1500]), encoding="utf-8")
    settings = load_settings(demo_path("goldwatch.yaml")).model_copy(update=demo_data())
    report = run_replay(settings, log, None, tmp_path / "dlq.jsonl")
    series = report["analytics"]["series"]  # type: ignore[index]
    shadow = report["shadow"]["candidates"]
    assert shadow  # the demo configures a candidate
    for name, cell in shadow.items():
        results = sum(b["agreement"].get(name, {}).get("n", 0) for b in series["buckets"])
        assert results == cell["completed"] > 0  # every finished result, by its event's time
        assert series["over_time"]["agreement"][name]["all"]["n"] == results
    scored = sum(b["known"]["n"] for b in series["buckets"])
    assert scored == report["quality"]["known"]["production"]["n_scored"] > 0
    text = render_text(report)
    assert "  production over time" in text
    assert all(f"  {name} over time" in text for name in shadow)
    page = render_replay_html(report)
    assert "<h3>Production over time</h3>" in page and "<h3>Agreement over time</h3>" in page
