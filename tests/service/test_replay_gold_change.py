"""A replay resumed from ``--state`` after the gold set changed: the known-question figures of
gold rows the change left alone are carried over, those of the changed row dropped, and every
output says so (a trial saw 86 known questions reported after a gold row was appended, where
the first run alone had counted 50 of the 136: the first run's silently gone).

Hand-made logs on a copy of the demo gold set, each question a gold question word for word
(similarity 1.0 whatever the gold set's n-gram weights). Run 1: q-002 (production ranks its
gold p-0002 first: recall 1, RR 1), q-003 (gold p-0003 at rank 2: recall 1, RR 1/2), q-004
(gold p-0003 first). Then q-004's gold passage becomes p-0004 and a row q-900 is appended.
Run 2: q-002 again (recall 1, RR 1) and q-900 (no results logged: known, not scored). So
production: 2 carried over + 2 new = 4 known, 3 scored, recall 1, hit rate 1, MRR 2.5/3;
the change carried over 2 rows (2 events) and dropped 1 (1 event).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from service.demo import demo_path
from service.jobs.replay import render_text, run_replay
from service.settings import load_settings

pytestmark = pytest.mark.slow  # two replays with the demo gold set's models (~10 s)

SHUTTLE = "Is there a shuttle bus from Nagpur station to the campus on Sundays?"


def _log(path: Path, rows: list[tuple[str, str, list[str]]]) -> Path:
    events = [
        {"event_id": event_id, "timestamp": f"2026-11-20T10:{i:02d}:00Z", "question": question,
         "retrieval": {"results": [{"id": p, "rank": r} for r, p in enumerate(ranking, 1)]},
         "answer": {"text": "See the fee circular.", "refused": False}}
        for i, (event_id, question, ranking) in enumerate(rows)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


def _replay(tmp: Path, log: Path) -> Any:
    settings = load_settings(None, gold_set=tmp / "gold.jsonl", corpus=demo_path("corpus.jsonl"))
    return run_replay(settings, log, tmp / "state.sqlite", tmp / "dlq.jsonl")


def test_resumed_replay_after_a_gold_change_keeps_unchanged_rows_figures(tmp_path: Path) -> None:
    gold_path = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold_path)
    rows = {row["id"]: row for row in map(json.loads, gold_path.read_text().splitlines())}
    first = _replay(tmp_path, _log(tmp_path / "one.jsonl", [
        ("e-1", rows["q-002"]["question"], ["p-0002"]),
        ("e-2", rows["q-003"]["question"], ["p-0009", "p-0003"]),
        ("e-3", rows["q-004"]["question"], ["p-0003"]),
    ]))  # fmt: skip
    assert first["quality"]["known"]["production"]["n_known"] == 3
    before = first["quality"]["gold_set_version"]

    changed = [{**row, "gold": ["p-0004"]} if row["id"] == "q-004" else row
               for row in rows.values()]  # fmt: skip
    changed.append({"id": "q-900", "question": SHUTTLE, "gold": ["p-0002"], "kind": "plain"})
    gold_path.write_text("".join(json.dumps(row) + "\n" for row in changed), encoding="utf-8")
    second = _replay(tmp_path, _log(tmp_path / "two.jsonl", [
        ("e-4", rows["q-002"]["question"], ["p-0002"]),
        ("e-5", SHUTTLE, []),
    ]))  # fmt: skip

    quality = second["quality"]
    assert quality["known"] == {"production": {"n_known": 4, "n_scored": 3, "recall": 1.0,
                                         "hit_rate": 1.0, "mrr": 2.5 / 3}}  # fmt: skip
    after = quality["gold_set_version"]
    assert after != before
    assert quality["coverage"] == {
        "gold_set_version": after, "since": "2026-11-20T10:00:00+00:00", "rows": 3,
        "gold_rows": 62,  # the demo's 61 rows and q-900 (rows: those measured)
        "changes": [{"from": before, "to": after, "reason": "gold set changed",
                     "drops": "changed rows", "at": "2026-11-20T10:02:00+00:00",
                     "after_events": 3, "kept_rows": 2, "kept_events": 2, "dropped_rows": 1,
                     "dropped_events": 1}],
    }  # fmt: skip
    assert second["analytics"]["out_of_scope"]["gold_set_versions"] == [before, after]
    text = render_text(second)
    assert (f"  gold set changed ({before} -> {after}) at 2026-11-20 10:02 UTC (after 3 "
            "events): carried over 2 rows' measurements (2 known events, rows unchanged), "
            "dropped 1 rows' (1 known events, rows changed or removed)") in text  # fmt: skip
    assert f"cumulative over gold-set versions {before} -> {after}" in text
