"""Session 39: the verdicts the off-corpus cutoff's range moves (``out_of_scope.unstable``)
are counted in the checkpointed totals with the range they run under, so a resumed replay
states the same counts, and a state kept before the range was named (the thirty-eighth
session's: unstable counts under a range it does not name) claims none of its verdicts for
the range now in use. Through the real ``goldwatch replay --state``."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from service.demo import demo_path
from tests.cli.goldwatch_cli import demo_log_and_config, run_goldwatch

KEY = "stage/annotation_totals"


@pytest.mark.slow
def test_the_unstable_counts_resume_with_their_range_and_an_old_state_claims_none(
    tmp_path: Path,
) -> None:
    log, config = demo_log_and_config(tmp_path, 300)
    state = tmp_path / "state.sqlite"
    args = ["replay", str(log), "--config", str(config), "--state", str(state), "--format",
            "json"]  # fmt: skip
    first = run_goldwatch(args, tmp_path, timeout_s=300)
    assert first.returncode == 0, first.stderr
    scope = json.loads(first.stdout)["analytics"]["out_of_scope"]
    unstable = scope["unstable"]
    # one run from an empty state: counted under one range from the first scored question
    assert unstable["since_scored"] == 0
    assert (unstable["scored"], unstable["out_of_scope"]) == (scope["scored"],
                                                              scope["out_of_scope"])  # fmt: skip
    assert unstable["band"] and unstable["since"]
    with sqlite3.connect(state) as conn:
        (text,) = conn.execute("SELECT value FROM state WHERE key = ?", (KEY,)).fetchone()
    saved = json.loads(text)
    assert saved["unstable_since"]["band"] == unstable["band"]
    resumed = run_goldwatch(args, tmp_path, timeout_s=300)  # a restart: the same range
    assert resumed.returncode == 0, resumed.stderr
    again = json.loads(resumed.stdout)["analytics"]["out_of_scope"]
    assert again["scored"] == scope["scored"]  # nothing counted twice
    assert again["unstable"] == unstable
    # the thirty-eighth session's state: its unstable counts, no range named
    del saved["unstable_since"]
    with sqlite3.connect(state) as conn:
        conn.execute("UPDATE state SET value = ? WHERE key = ?", (json.dumps(saved), KEY))
    old = run_goldwatch(args, tmp_path, timeout_s=300)
    assert old.returncode == 0, old.stderr
    upgraded = json.loads(old.stdout)["analytics"]["out_of_scope"]
    assert upgraded["scored"] == scope["scored"]
    # no batch counted under the range yet: none claimed, all counted before it
    assert {k: upgraded["unstable"][k] for k in ("out", "in", "scored", "since_scored")} == {
        "out": 0, "in": 0, "scored": 0, "since_scored": scope["scored"]}  # fmt: skip
    assert upgraded["unstable"]["text"] == ""
    # a restart with another gold set (every fourth row left out: the range moves) and no
    # new event: the kept counts are the old range's, claimed by none (review of s39-oos)
    with sqlite3.connect(state) as conn:  # the first run's totals, counted under its range
        conn.execute("UPDATE state SET value = ? WHERE key = ?", (text, KEY))
    gold = tmp_path / "gold.jsonl"
    rows = demo_path("gold.jsonl").read_text(encoding="utf-8").splitlines()
    gold.write_text("\n".join(r for i, r in enumerate(rows, 1) if i % 4) + "\n", "utf-8")
    config.write_text(f"gold_set: {gold}\ncorpus: {demo_path('corpus.jsonl')}\n", "utf-8")
    moved = run_goldwatch(args, tmp_path, timeout_s=300)
    assert moved.returncode == 0, moved.stderr
    other = json.loads(moved.stdout)["analytics"]["out_of_scope"]
    assert other["support"] != scope["support"]  # the range did move
    assert {k: other["unstable"][k] for k in ("out", "in", "scored", "since_scored")} == {
        "out": 0, "in": 0, "scored": 0, "since_scored": scope["scored"]}  # fmt: skip
    assert other["unstable"]["text"] == ""
