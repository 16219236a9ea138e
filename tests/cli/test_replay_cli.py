"""``goldwatch replay`` end to end through the console entry point (subprocess)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from service.demo import demo_path
from tests.cli.goldwatch_cli import GOLDWATCH, clean_env, run_goldwatch
from tests.cli.test_eval_cli import run

GOOD = '{"event_id": "e%d", "timestamp": "2026-11-20T10:%02d:00Z", "question": "hostel fee?"}'


def _log(tmp_path: Path, lines: list[str]) -> Path:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.slow
def test_demo_replay_reports_the_planted_shifts(tmp_path: Path) -> None:
    result = run(["replay", "--demo", "--format", "json"], tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)  # strict JSON: no NaN
    assert (doc["consumed"], doc["processed"], doc["dead_lettered_total"]) == (3000, 3000, 0)
    alarms = {(a["dimension"], a["state"]) for a in doc["analytics"]["drift"]["alarms"]}
    # service/demo/README.md: Hinglish and exam questions rise in phase B, refusals in C
    assert {("language", "drift"), ("topic", "drift"), ("refusal", "drift")} <= alarms
    first = {a["dimension"]: a for a in reversed(doc["analytics"]["drift"]["alarms"])}
    assert "hi-Latn" in first["language"]["rising"] and "exams" in first["topic"]["rising"]
    assert first["language"]["after_events"] > 1350  # never before phase B starts
    assert first["refusal"]["after_events"] > 2250  # never before phase C starts
    scrubbed = doc["analytics"]["pii_scrubbed"]  # 8 planted events, 9 items
    assert sum(scrubbed.values()) == 9


@pytest.mark.slow
def test_counts_dead_letters_and_bad_inputs(tmp_path: Path) -> None:
    log = _log(tmp_path, [GOOD % (1, 1), GOOD % (1, 1), "not json", GOOD % (2, 2)])
    result = run(["replay", str(log), "--format", "json"], tmp_path)
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert (doc["consumed"], doc["processed"], doc["duplicates"]) == (4, 2, 1)
    assert doc["dead_lettered"] == {"not_json": 1}
    rows = [json.loads(x) for x in
            (tmp_path / "events.jsonl.replay.dlq.jsonl").read_text().splitlines()]  # fmt: skip
    assert [(r["reason"], r["origin"]["line"]) for r in rows] == [("not_json", 3)]
    assert doc["dlq_path"] == str(tmp_path / "events.jsonl.replay.dlq.jsonl")
    missing = run(["replay", "nowhere.jsonl"], tmp_path)
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    assert "nowhere.jsonl" in missing.stderr
    unwritable = run(["replay", str(log), "--dlq", "/proc/no/such/dir/x.jsonl"], tmp_path)
    assert unwritable.returncode == 2
    assert "cannot write dead letters to /proc/no/such/dir/x.jsonl" in unwritable.stderr


@pytest.mark.slow
def test_a_future_timestamp_does_not_freeze_drift(tmp_path: Path) -> None:
    future = '{"event_id": "f", "timestamp": "2099-01-01T00:00:00Z", "question": "hostel fee?"}'
    log = _log(tmp_path, [future] + [GOOD % (i, i) for i in range(1, 6)])
    config = tmp_path / "goldwatch.yaml"  # the demo's gold set: its languages are the prior
    config.write_text(f"gold_set: {demo_path('gold.jsonl')}\ncorpus: {demo_path('corpus.jsonl')}\n",
                      encoding="utf-8")  # fmt: skip
    args = ["replay", str(log), "--config", str(config), "--format", "json"]
    doc = json.loads(run(args, tmp_path).stdout)
    event_time = doc["analytics"]["drift"]["event_time"]
    assert (event_time["future"], event_time["late"]) == (1, 0)
    assert doc["analytics"]["drift"]["language"]["live_counts"] == {"en": 6}


@pytest.mark.slow
def test_damaged_state_value_is_a_clear_error(tmp_path: Path) -> None:
    log = _log(tmp_path, [GOOD % (1, 1)])
    state = tmp_path / "state.sqlite"
    assert run(["replay", str(log), "--state", str(state)], tmp_path).returncode == 0
    with sqlite3.connect(state) as conn:
        conn.execute("UPDATE state SET value = '{broken' WHERE key = 'totals'")
    result = run(["replay", str(log), "--state", str(state)], tmp_path)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert str(state) in result.stderr and "'totals'" in result.stderr
    with sqlite3.connect(state) as conn:
        conn.execute("UPDATE state SET value = '[1, 2]' WHERE key = 'totals'")
    shape = run(["replay", str(log), "--state", str(state)], tmp_path)
    assert shape.returncode == 2 and "wrong shape" in shape.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("state", "key", "noted"),
    [(True, None, True), (True, "k" * 40, False), (False, None, False)],
    ids=["state-unkeyed", "state-keyed", "no-state"],
)
def test_replay_with_state_notes_unkeyed_pseudonyms(
    tmp_path: Path, state: bool, key: str | None, noted: bool
) -> None:
    """Trial 11: a replay with --state and no analytics.pii_key stored
    ``pii-`` + sha256("carol.secret@example.net")[:32] in the state file and said nothing;
    serve and config check say so, and so must a replay that stores anything."""
    user = "carol.secret@example.net"
    line = json.dumps({"event_id": user, "timestamp": "2026-11-20T10:01:00Z",
                       "question": "hostel fee?", "user": {"id": user}})  # fmt: skip
    log = _log(tmp_path, [line])
    args = ["replay", str(log), "--format", "json"]
    if state:
        args += ["--state", str(tmp_path / "state.db")]
    env = {"GOLDWATCH_ANALYTICS__PII_KEY": key} if key is not None else None
    result = run_goldwatch(args, tmp_path, env)
    assert result.returncode == 0, result.stderr
    notes = [x for x in result.stderr.splitlines() if "analytics.pii_key is unset" in x]
    assert len(notes) == (1 if noted else 0), result.stderr
    if noted:
        assert notes[0].startswith("goldwatch: warning: ") and "unkeyed SHA-256" in notes[0]
        # what the note warns about: the state holds the plain-hash pseudonym
        # (sha256 of the address, first 32 hex digits: a guessable pseudonym)
        guessable = "pii-" + hashlib.sha256(user.encode()).hexdigest()[:32]
        assert guessable.encode() in (tmp_path / "state.db").read_bytes()


@pytest.mark.slow
def test_a_second_stdin_replay_in_one_folder_never_wipes_the_firsts_dead_letters(
    tmp_path: Path,
) -> None:
    """Two fresh replays of stdin in one folder share ``stdin.replay.dlq.jsonl``, which a fresh
    replay empties first: the second must fail at start naming the file and ``--dlq``, and
    the first's dead letter must survive it."""
    first = subprocess.Popen(
        [*GOLDWATCH, "replay", "-", "--format", "json"], cwd=tmp_path, env=clean_env(None),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        dlq = tmp_path / "stdin.replay.dlq.jsonl"
        deadline = time.monotonic() + 120
        while not dlq.exists() and first.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(0.5)  # os.open, then flock: the lock follows the file within microseconds
        assert dlq.exists() and first.poll() is None
        second = subprocess.run(
            [*GOLDWATCH, "replay", "-"], cwd=tmp_path, env=clean_env(None), input="",
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert second.returncode == 2 and "Traceback" not in second.stderr
        assert "another replay is writing the dead-letter file stdin.replay.dlq.jsonl" in (
            second.stderr
        )
        assert "--dlq" in second.stderr
        out, err = first.communicate(GOOD % (1, 1) + "\nnot json\n", timeout=120)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err
    assert json.loads(out)["dead_lettered"] == {"not_json": 1}
    rows = [json.loads(line) for line in dlq.read_text().splitlines()]
    assert [row["reason"] for row in rows] == ["not_json"]
    # the lock went with the first replay: a third starts (and empties the file, as it says)
    third = subprocess.run(
        [*GOLDWATCH, "replay", "-", "--format", "json"], cwd=tmp_path, env=clean_env(None),
        input="", capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert third.returncode == 0, third.stderr
    assert dlq.read_text() == ""
