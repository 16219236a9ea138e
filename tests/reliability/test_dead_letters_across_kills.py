"""Dead letters across a kill -9 between writing them and the checkpoint that counts them,
met by real ``goldwatch serve`` processes (HTTP ingest, the state and dead-letter files on
disk, ``tests.reliability.faults`` to die inside the checkpoint's SQLite transaction).

Before (issue 19, left open): a goldwatch stage error answered 500 and dead-lettered nothing
(the runbook promised ``processing_failed`` letters); ``processing_failed`` letters, once
there, went through an in-memory queue instead of the writer that makes the other letters
durable before they are counted; and the memory of which letters were already written (so a
retry does not write them twice) was lost with the process: after a restart, the client's
retry of a request killed before its checkpoint wrote every letter a second time.

Expected now: every letter is on disk before it is counted; after kill -9 and restart, the
retry counts each letter once (the count died with the checkpoint) and the file holds each
once: ``processed + dead-lettered == produced``, no duplicates.
"""

from __future__ import annotations

import base64
import collections
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.acceptance.service_process import ServiceProcess
from tests.reliability.faults import FAULT_ENV, RAISE_MARKER, RAISE_SPEC, SPEC

pytestmark = pytest.mark.slow  # serve processes started twice

BAD = 10  # wrong_type: a timestamp that is no time (the decoder's letters)
FAILING = 20  # with the 10 bad, one chunk whose stage raised: processing_failed letters
GOOD = 20  # the request's second chunk: processed
CHUNK = BAD + FAILING  # api.ingest_chunk_events


def _events(tag: str, n: int, question: str = "when does the library open") -> list[dict[str, Any]]:
    return [{"event_id": f"{tag}-{i}", "timestamp": "2026-11-29T10:00:00Z", "question": question}
            for i in range(n)]  # fmt: skip


def _killed_request() -> bytes:
    """10 undecodable events and 20 whose chunk makes a stage raise (one carries the marker),
    then a chunk of 20 good ones."""
    bad = [{"event_id": f"b-{i}", "timestamp": f"half past {i}", "question": "pool?"}
           for i in range(BAD)]  # fmt: skip
    failing = _events("f", FAILING)
    failing[7]["question"] = f"{RAISE_MARKER} when is the exam"
    return json.dumps(bad + failing + _events("g", GOOD)).encode()


def _letters(path: Path) -> collections.Counter[tuple[str, str]]:
    """``(reason, event_id)`` of each line of the dead-letter file (each line must parse)."""
    out: collections.Counter[tuple[str, str]] = collections.Counter()
    for line in path.read_bytes().splitlines():
        record = json.loads(line)
        out[(record["reason"], json.loads(base64.b64decode(record["value_b64"]))["event_id"])] += 1
    return out


@pytest.mark.parametrize("first_request", [True, False])
def test_letters_written_before_a_kill_are_counted_once_and_not_written_again(
    tmp_path: Path, first_request: bool
) -> None:
    """``first_request`` False: the killed checkpoint is the state's first (trial 49, M1: no
    mark was stored, so the retry wrote all 30 letters again)."""
    dlq = tmp_path / "dead.jsonl"
    config = {"source": {"kind": "none", "dlq_path": str(dlq)},
              "state": {"path": str(tmp_path / "state.sqlite")},
              "pipeline": {"extra_stages": [SPEC, RAISE_SPEC]},
              "api": {"ingest_chunk_events": CHUNK}}  # fmt: skip
    # the request's checkpoint dies before COMMIT: after the letters of that request are written
    fault = "checkpoint:2" if first_request else "checkpoint:1"
    service = ServiceProcess.start(tmp_path / "work", config, env={FAULT_ENV: fault})
    try:
        before = 5 if first_request else 0
        if first_request:
            first = service.post_events(None, raw=json.dumps(_events("a", before)).encode())
            assert first.status_code == 200, first.text
        with pytest.raises(httpx.HTTPError):  # the process dies inside the request
            service.post_events(None, raw=_killed_request())
        service.process.wait(timeout=30)
        assert service.process.returncode == -9
        written = _letters(dlq)
        assert sum(written.values()) == BAD + FAILING  # on disk before the checkpoint
        service = ServiceProcess.start(tmp_path / "work", config)  # no fault armed
        assert service.totals()["dead_lettered"] == {}  # rolled back with the checkpoint
        again = service.post_events(None, raw=_killed_request())  # the client's retry
        assert again.status_code == 200, again.text
        assert len(again.json()["dead_lettered"]) == BAD + FAILING
        last = service.post_events(None, raw=json.dumps(_events("c", 5)).encode())
        assert last.status_code == 200, last.text
        totals = service.totals()
        produced = before + BAD + FAILING + GOOD + 5
        assert totals["dead_lettered"] == {"wrong_type": BAD, "processing_failed": FAILING}
        assert totals["processed"] == before + GOOD + 5 and totals["duplicates"] == 0
        assert totals["processed"] + BAD + FAILING == produced == totals["consumed"]
        letters = _letters(dlq)
        assert letters == written  # nothing written twice
        assert set(letters.values()) == {1}
        assert sorted(r for r, _ in letters.elements()).count("processing_failed") == FAILING
        service.kill()
        service = ServiceProcess.start(tmp_path / "work", config)  # and once more: all counted
        assert service.totals()["dead_lettered"] == {"wrong_type": BAD,
                                                     "processing_failed": FAILING}  # fmt: skip
    finally:
        service.kill()


def _file_input(path: Path, n: int) -> tuple[int, int]:
    """``n`` lines: every 25th not JSON (``not_json``), one batch's marker (a stage error on
    its batch); returns (not_json lines, the marker's line number)."""
    lines, bad, marker = [], 0, 430
    for i in range(1, n + 1):
        if i % 25 == 0:
            lines.append(f"not json {i}")
            bad += 1
            continue
        question = f"{RAISE_MARKER} exam {i}" if i == marker else f"library hours {i}"
        lines.append(json.dumps({"event_id": f"l-{i}", "timestamp": "2026-11-29T10:00:00Z",
                                 "question": question}))  # fmt: skip
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return bad, marker


def test_a_file_replay_killed_at_a_checkpoint_writes_each_letter_once(tmp_path: Path) -> None:
    """serve reading a file, killed inside its 4th checkpoint (the letters of 400 lines are in
    the dead-letter file, 300 lines' worth checkpointed): after the restart the file is read
    again from line 301. Before, the letters of lines 301-400 were written a second time."""
    source = tmp_path / "queries.jsonl"
    dlq = tmp_path / "queries.dlq.jsonl"
    n = 1_000
    bad, marker = _file_input(source, n)
    config = {"source": {"kind": "file", "path": str(source), "dlq_path": str(dlq)},
              "state": {"path": str(tmp_path / "state.sqlite")}, "analytics": {"enabled": False},
              "pipeline": {"extra_stages": [SPEC, RAISE_SPEC], "max_batch_size": 100,
                           "commit_every": 100, "commit_interval_s": 3600}}  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config, env={FAULT_ENV: "checkpoint:4"},
                                   wait=False)  # fmt: skip
    try:
        service.process.wait(timeout=120)
        assert service.process.returncode == -9, service.log_tail()
        before = [json.loads(line)["origin"]["line"] for line in dlq.read_bytes().splitlines()]
        assert max(before) > 300  # letters of the batch whose checkpoint died are on disk
        service = ServiceProcess.start(tmp_path / "work", config)  # no fault armed
        service.wait_until(lambda s: s["input_finished"], timeout_s=120, what="end of input")
        totals = service.totals()
        assert 400 < marker <= 500
        # the marker's batch, lines 401-500, all of it (its 4 not_json lines too: the poll
        # loop dead-letters a failed batch whole)
        failing, bad = 100, bad - 4
        assert totals["dead_lettered"] == {"not_json": bad, "processing_failed": failing}
        assert totals["processed"] + bad + failing == n == totals["consumed"]
        assert totals["duplicates"] == 0
        lines = [json.loads(line)["origin"]["line"] for line in dlq.read_bytes().splitlines()]
        assert len(lines) == len(set(lines)) == bad + failing  # each letter once
    finally:
        service.kill()


@pytest.mark.parametrize(
    ("fault", "written_upto"),
    [("batch:5", 400),  # a kill mid-pipeline of batch 5: no checkpoint ever ran
     ("checkpoint:1", 100)],  # a kill inside the first checkpoint: it rolls back
)  # fmt: skip
def test_a_kill_before_the_first_checkpoint_writes_each_letter_once(
    tmp_path: Path, fault: str, written_upto: int
) -> None:
    """serve reading a file, killed before any checkpoint holds a position (trial 49, M1:
    8 lines for 6 letters): the restart reads the file from the top, and the letters of the
    lines already dead-lettered must not be written again. The last line is also torn in
    half first, as a kill in the middle of an append leaves it: it is cut off and its letter
    written again, so the file is whole. Before, every letter before the kill was in the file
    twice (and the torn half stayed glued to the next letter)."""
    source = tmp_path / "queries.jsonl"
    dlq = tmp_path / "queries.dlq.jsonl"
    n = 1_000
    bad, _ = _file_input(source, n)  # the marker's batch (401-500) raises: processing_failed
    config = {"source": {"kind": "file", "path": str(source), "dlq_path": str(dlq)},
              "state": {"path": str(tmp_path / "state.sqlite")}, "analytics": {"enabled": False},
              "pipeline": {"extra_stages": [SPEC, RAISE_SPEC], "max_batch_size": 100,
                           "commit_every": 100 if fault.startswith("checkpoint") else 100_000,
                           "commit_interval_s": 3600}}  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config, env={FAULT_ENV: fault}, wait=False)
    try:
        service.process.wait(timeout=120)
        assert service.process.returncode == -9, service.log_tail()
        data = dlq.read_bytes()
        before = [json.loads(line)["origin"]["line"] for line in data.splitlines()]
        assert before == list(range(25, written_upto + 1, 25))  # every 25th line: not JSON
        dlq.write_bytes(data[: len(data) - 20])  # a torn last letter (line 400 or 100)
        service = ServiceProcess.start(tmp_path / "work", config)  # no fault armed
        service.wait_until(lambda s: s["input_finished"], timeout_s=120, what="end of input")
        totals = service.totals()
        failing, bad = 100, bad - 4  # lines 401-500 whole, their 4 not_json lines included
        assert totals["dead_lettered"] == {"not_json": bad, "processing_failed": failing}
        assert totals["processed"] + bad + failing == n == totals["consumed"]
        lines = [json.loads(line)["origin"]["line"] for line in dlq.read_bytes().splitlines()]
        assert len(lines) == len(set(lines)) == bad + failing  # each letter once, all whole
        assert dlq.read_bytes().endswith(b"\n")
    finally:
        service.kill()


def test_a_fresh_state_writes_the_letters_of_a_body_sent_before(tmp_path: Path) -> None:
    """Review (c) of trial 49's M1 fix: last week's serve wrote 3 letters of a client's
    malformed event; the state is deleted for a fresh start, the dead-letter file kept, and
    the client sends the same malformed event 3 more times. A fresh state reads nothing back
    (its mark is the file's size when it starts): 3 counted, 3 more lines (was 3 counted, 0
    written: the whole file was read back as if a crash had left it)."""
    dlq = tmp_path / "dead.jsonl"
    state = tmp_path / "state.sqlite"
    config = {"source": {"kind": "none", "dlq_path": str(dlq)}, "state": {"path": str(state)}}
    body = json.dumps([{"event_id": "m-1", "timestamp": "half past", "question": "pool?"}])
    service = ServiceProcess.start(tmp_path / "work", config)
    try:
        for _ in range(3):
            sent = service.post_events(None, raw=body.encode())
            assert sent.status_code == 400, sent.text  # all of it dead-lettered
        assert service.totals()["dead_lettered"] == {"wrong_type": 3}
        service.kill()
        assert sum(_letters(dlq).values()) == 3
        for stale in tmp_path.glob("state.sqlite*"):
            stale.unlink()
        service = ServiceProcess.start(tmp_path / "work", config)
        for _ in range(3):
            sent = service.post_events(None, raw=body.encode())
            assert sent.status_code == 400, sent.text  # all of it dead-lettered
            assert len(sent.json()["dead_lettered"]) == 1
        assert service.totals()["dead_lettered"] == {"wrong_type": 3}
        assert _letters(dlq) == {("wrong_type", "m-1"): 6}
    finally:
        service.kill()
