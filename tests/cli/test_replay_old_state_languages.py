"""Trial 20: an old state's per-language totals of questions left unjudged for want of a gold
row in their language (out of scope and topics) kept saying "no gold row is written in their
language (en 617)" after the gold-language rule (service/language/gold.py) judged en. The
report now says it only of the languages the current gold set does not judge, and names the
others as counted earlier. Through the real ``goldwatch replay --state``, resumed on a state
whose totals carry such counts (as a state written before the rule, or under a gold set
without English rows, holds them)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from tests.cli.goldwatch_cli import demo_log_and_config, run_goldwatch

# the demo's gold set has rows in en, hi-Latn and hi: it judges en, not de (by hand)
OLD = {"en": 617, "de": 4}


@pytest.mark.slow
def test_an_old_states_no_gold_row_counts_are_not_claimed_for_a_covered_language(
    tmp_path: Path,
) -> None:
    log, config = demo_log_and_config(tmp_path, 200)
    state = tmp_path / "state.sqlite"
    args = ["replay", str(log), "--config", str(config), "--state", str(state)]
    first = run_goldwatch([*args, "--format", "json"], tmp_path, timeout_s=300)
    assert first.returncode == 0, first.stderr
    with sqlite3.connect(state) as conn:
        (text,) = conn.execute(
            "SELECT value FROM state WHERE key = 'stage/annotation_totals'"
        ).fetchone()
        totals = json.loads(text)
        assert totals["by_language"]["no_gold_rows"] == {}  # the demo's languages: all judged
        totals["by_language"]["no_gold_rows"] = dict(OLD)
        totals["by_language"]["topic_no_gold_rows"] = dict(OLD)
        conn.execute(
            "UPDATE state SET value = ? WHERE key = 'stage/annotation_totals'",
            (json.dumps(totals),),
        )
    resumed = run_goldwatch([*args, "--format", "json"], tmp_path, timeout_s=300)
    assert resumed.returncode == 0, resumed.stderr
    analytics = json.loads(resumed.stdout)["analytics"]
    scope = analytics["out_of_scope"]
    assert scope["no_gold_rows_by_language"] == {"de": 4}
    assert scope["no_gold_rows_covered_now"] == {"en": 617}
    assert analytics["topic_no_gold_rows_by_language"] == {"de": 4}
    assert analytics["topic_no_gold_rows_covered_now"] == {"en": 617}
    text = run_goldwatch([*args], tmp_path, timeout_s=300)
    assert text.returncode == 0, text.stderr
    out = " ".join(text.stdout.split())
    lacking = "4 questions not judged for scope: no gold row is written in their language (de 4)"
    assert lacking in out
    assert (
        "617 questions not judged for scope earlier, when the gold set (or its language rule) "
        "had no row in their language (en 617): it has now, and questions in it are judged"
    ) in out
    assert "no gold row is written in their language (en" not in out
    assert "617 questions given no topic earlier" in out
