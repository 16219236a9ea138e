"""A ``novel`` share counted before the novelty detector turned uncalibrated is history, and
the reports say so (session 51 brief N item 1): after an upgrade that left the detector
uncalibrated, the first report listed "novel 6% (UNCALIBRATED: above)" under a line saying
the detector labels no question novel.

The state: the demo's first 700 events counted with the floors low enough that the detector
labels questions ``novel`` (as main's code did), then its next 700 at the demo's floors
(uncalibrated: it labels nothing). Every ``novel`` count is one of the first run's.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from service.demo import demo_path
from service.html import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.topics.model import NOVEL
from tests.service.topics.test_novelty_mode_restarts_topic_windows import _demo


@pytest.mark.slow
def test_a_novel_share_counted_before_the_detector_turned_uncalibrated_reads_as_history(
    tmp_path: Path,
) -> None:
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first.write_text("".join(lines[:700]), encoding="utf-8")
    second.write_text("".join(lines[700:1400]), encoding="utf-8")
    state = tmp_path / "state.db"
    old = run_replay(_demo(True), first, state, tmp_path / "a.dlq")
    novel = old["analytics"]["topics"][NOVEL]
    doc = run_replay(_demo(False), second, state, tmp_path / "b.dlq")
    assert doc["analytics"]["novelty"]["uncalibrated"] is not None
    topics = doc["analytics"]["topics"]
    assert topics[NOVEL] == novel  # none since: the lifetime count is the first run's
    # the 700th event's time, where the topic windows started afresh under nearest topics
    last = datetime.fromisoformat(json.loads(lines[699])["timestamp"])
    when = last.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    share = f"{novel / sum(topics.values()):.0%}"
    text = render_text(doc)
    (line,) = [x for x in text.splitlines() if x.startswith("topics (NEAREST")]
    assert "labels no question novel while it is uncalibrated" in line
    assert (f"novel {share} ({novel} of all {sum(topics.values())} questions so far, counted "
            f"before {when}, in the first 700 events; none since)") in line  # fmt: skip
    assert "UNCALIBRATED: above" not in text
    page = render_replay_html(doc)
    assert f"The novel row is history: counted before {when}, in the first 700 events" in page
    assert "<td>novel (history)</td>" in page
