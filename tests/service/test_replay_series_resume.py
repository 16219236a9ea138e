"""A replay resumed from ``--state`` reports the event-time buckets of every run on that
state file (the counts are checkpointed with the other stages): a new user's resumed replay
showed no "over time" charts at all, while its totals covered both runs."""

from __future__ import annotations

import json
import math
from collections import Counter
from datetime import datetime
from pathlib import Path

from service.demo import demo_path
from service.html import render_replay_html
from service.jobs.replay import render_text, run_replay
from service.jobs.series import TimeSeries
from service.settings import load_settings


def _settings() -> object:
    return load_settings(None, gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))


def test_a_resumed_replay_reports_the_buckets_of_both_runs(tmp_path: Path) -> None:
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    lines = lines[:1200]
    log, state = tmp_path / "log.jsonl", tmp_path / "state.sqlite"
    log.write_text("".join(lines[:700]), encoding="utf-8")
    first = run_replay(_settings(), log, state, tmp_path / "dlq.jsonl")  # type: ignore[arg-type]
    with log.open("a", encoding="utf-8") as out:  # the log grows; the second run reads the rest
        out.write("".join(lines[700:]))
    second = run_replay(_settings(), log, state, tmp_path / "dlq.jsonl")  # type: ignore[arg-type]
    assert (first["processed"], second["processed"]) == (700, 500)  # read by each run
    # expected by hand from the log: events per hour of event time (the default bucket, 1 h;
    # the demo's three days stay under the 500-bucket bound, so no bucket merges)
    stamps = [json.loads(line)["timestamp"].replace("Z", "+00:00") for line in lines]
    hours = Counter(math.floor(datetime.fromisoformat(s).timestamp() / 3600) for s in stamps)
    series = second["analytics"]["series"]  # type: ignore[index]
    assert series["bucket_s"] == 3600.0
    got = {round(b["start"] / 3600): sum(b["languages"].values()) for b in series["buckets"]}
    assert got == dict(hours)
    # the resumed report says what it covers: the header counts this run, the rest all runs
    assert "resumed" not in first
    assert second["resumed"] == {"state": str(state), "processed_in_all": 1200}
    text = render_text(second).splitlines()
    assert text[0].endswith("0 dead-lettered in this run") and text[0].startswith(str(log))
    assert text[1] == (f"resumed from {state}: what follows covers every run on it (1200 "
                       "events processed in all)")  # fmt: skip
    page = render_replay_html(second)
    assert "Resumed from " in page and "(1200 events processed in all)" in page
    # the same as one replay of the whole log from a fresh state
    whole = run_replay(_settings(), log, None, tmp_path / "whole.dlq.jsonl")  # type: ignore[arg-type]
    assert second["analytics"]["series"] == whole["analytics"]["series"]  # type: ignore[index]
    assert "resumed" not in whole


def test_restore_takes_only_its_own_version_and_bucket_width() -> None:
    series = TimeSeries(bucket_s=3600)
    series.add(7200.0, "en", "fees", refused=True)
    series.add(7300.0, "hi", "exams", refused=None)
    snapshot = json.loads(json.dumps(series.state_snapshot()))  # as the state store keeps it
    again = TimeSeries(bucket_s=3600)
    again.restore(snapshot)
    assert again.report() == series.report() == {
        "bucket_s": 3600.0,
        "quality_partial": False,
        "buckets": [{"start": 7200.0, "languages": {"en": 1, "hi": 1},
                     "topics": {"fees": 1, "exams": 1}, "answers": 1, "refused": 1,
                     "known": {"n": 0, "recall": 0.0, "hit": 0, "rr": 0.0, "recall_sq": 0.0,
                               "rr_sq": 0.0}, "agreement": {}, "known_questions": {},
                     "agreement_questions": {}}],
    }  # fmt: skip
    for other in ({**snapshot, "version": 4}, None, "x"):
        fresh = TimeSeries(bucket_s=3600)
        fresh.restore(other)
        assert fresh.report() == {"bucket_s": 3600.0, "quality_partial": False, "buckets": []}
    wider = TimeSeries(bucket_s=60)
    wider.restore(snapshot)
    assert wider.report()["buckets"] == []
