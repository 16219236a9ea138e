"""A lone UTF-16 surrogate escape (``"\\ud800"``: legal JSON, a JavaScript producer that cut a
string inside an emoji) in an event's question, answer or ids, through the real
``goldwatch replay`` with a state file: the events are processed with U+FFFD in its place
(the data contract: consumers/decoding.py check 4), the checkpoint is written and resumed,
and nothing in the state holds a lone surrogate. Before session 37 ``StateStore.checkpoint``
raised UnicodeEncodeError on such a value (SQLite takes only UTF-8 text)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from service.demo import demo_path
from tests.cli.goldwatch_cli import run_goldwatch

# written by hand, with the escapes as a producer sends them (ASCII JSON text)
LINES = [
    r'{"event_id": "e-1", "timestamp": "2026-11-20T10:00:00Z", "question": "hostel fee?"}',
    r'{"event_id": "e-2\ud801", "timestamp": "2026-11-20T10:01:00Z",'
    r' "question": "hostel fee caf\ud800 bill", "user": {"id": "u-\udc00"},'
    r' "answer": {"text": "I do not know \udfff", "refused": true}}',
    r'{"event_id": "e-3", "timestamp": "2026-11-20T10:02:00Z", "question": "mess \ud83d menu?",'
    r' "answer": "no idea \ud83d\ude00"}',
]


@pytest.mark.slow
def test_replay_with_state_takes_lone_surrogates_as_u_fffd(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("\n".join(LINES) + "\n", encoding="ascii")
    config = tmp_path / "goldwatch.yaml"
    config.write_text(
        f"gold_set: {demo_path('gold.jsonl')}\ncorpus: {demo_path('corpus.jsonl')}\n",
        encoding="utf-8",
    )
    state = tmp_path / "state.sqlite"
    args = ["replay", str(log), "--config", str(config), "--state", str(state)]
    first = run_goldwatch([*args, "--format", "json"], tmp_path, timeout_s=300)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    doc = json.loads(first.stdout)
    assert (doc["consumed"], doc["processed"], doc["dead_lettered"]) == (3, 3, {})
    # the checkpoint holds the three events: the dedup window has their ids, U+FFFD in place
    with sqlite3.connect(state) as conn:
        values = dict(conn.execute("SELECT key, value FROM state").fetchall())
    assert "e-2\ufffd" in json.loads(values["stage/dedup"])["ids"].split("\n")
    text = "\n".join(values.values())
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in text)
    assert "\\ud8" not in text.lower() and "\\udc" not in text.lower()
    # resumed: nothing new read, so the checkpoint of the first run was written whole
    second = run_goldwatch([*args, "--format", "json"], tmp_path, timeout_s=300)
    assert second.returncode == 0, second.stderr
    assert json.loads(second.stdout)["consumed"] == 0
