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


def test_letters_written_before_a_kill_are_counted_once_and_not_written_again(
    tmp_path: Path,
) -> None:
    dlq = tmp_path / "dead.jsonl"
    config = {"source": {"kind": "none", "dlq_path": str(dlq)},
              "state": {"path": str(tmp_path / "state.sqlite")},
              "pipeline": {"extra_stages": [SPEC, RAISE_SPEC]},
              "api": {"ingest_chunk_events": CHUNK}}  # fmt: skip
    # the 2nd checkpoint dies before COMMIT: after the letters of that request are written
    service = ServiceProcess.start(tmp_path / "work", config, env={FAULT_ENV: "checkpoint:2"})
    try:
        first = service.post_events(None, raw=json.dumps(_events("a", 5)).encode())
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
        produced = 5 + BAD + FAILING + GOOD + 5
        assert totals["dead_lettered"] == {"wrong_type": BAD, "processing_failed": FAILING}
        assert totals["processed"] == 5 + GOOD + 5 and totals["duplicates"] == 0
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
