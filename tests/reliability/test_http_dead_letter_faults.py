"""HTTP ingest while the dead-letter file cannot be written, met by real ``goldwatch serve``
processes: a FIFO at ``source.dlq_path``, a full disk under the dead-letter file, a full disk
under the state file only.

Before (trial probe): with the dead-letter file unwritable, every ``POST /v1/events`` — also
all-good batches — answered 503 "nothing was acknowledged" while ``/readyz`` said ready; a
FIFO at ``source.dlq_path`` was accepted at start; and retrying as the 503 said wrote each
dead letter again (10 bad events sent 3 times: 30 lines) and counted it again. Expected now:
``serve`` refuses a FIFO at start; a request whose letters cannot be written is not applied
(nothing written, nothing counted) while all-good requests go on; ``/readyz`` is 503 naming
the file while it cannot be written; after a retry every letter is in the file once and
counted once (``consumed == processed + dead_lettered + duplicates``).
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from tests.acceptance.service_process import ServiceProcess, accounted
from tests.reliability.conftest import MountTmpfs, fill
from tests.reliability.test_config_and_state_files import _refused, _serve

BAD = 10
GOOD = 40


def _request(tag: str) -> bytes:
    """40 good events and 10 whose timestamp is no time (dead letters: ``wrong_type``)."""
    good = [{"event_id": f"{tag}-g-{n}", "timestamp": "2026-11-29T10:00:00Z",
             "question": f"when does library {n} open"} for n in range(GOOD)]  # fmt: skip
    bad = [{"event_id": f"{tag}-b-{n}", "timestamp": f"half past {n}",
            "question": "when does the pool open"} for n in range(BAD)]  # fmt: skip
    return json.dumps(good + bad).encode()


def _good_only(tag: str) -> bytes:
    events = [{"event_id": f"{tag}-{n}", "timestamp": "2026-11-29T10:00:00Z",
               "question": "when does the pool open"} for n in range(5)]  # fmt: skip
    return json.dumps(events).encode()


def _letters(path: Path) -> list[str]:
    """The ``event_id`` of every dead letter in the file (each line must parse)."""
    if not path.exists():
        return []
    return [json.loads(base64.b64decode(json.loads(line)["value_b64"]))["event_id"]
            for line in path.read_bytes().splitlines()]  # fmt: skip


def _readiness(service: ServiceProcess) -> tuple[int, list[str]]:
    response = service.get("/readyz")
    return response.status_code, list(response.json()["reasons"])


@pytest.fixture()
def small_fs(tmpfs: MountTmpfs) -> Path:
    return tmpfs("16m", "goldwatch-dlq", "smallfs")


@pytest.mark.slow
def test_serve_exits_2_on_a_fifo_at_the_dead_letter_path(tmp_path: Path) -> None:
    fifo = tmp_path / "dead.jsonl"
    os.mkfifo(fifo)
    _refused(_serve(tmp_path, {"source": {"kind": "none", "dlq_path": str(fifo)}}),
             "source.dlq_path", str(fifo), "not a regular file")  # fmt: skip


@pytest.mark.slow
def test_a_fifo_at_the_dead_letter_path_refuses_only_bad_batches_and_readyz_says_so(
    tmp_path: Path,
) -> None:
    dlq = tmp_path / "dead.jsonl"
    config = {"source": {"kind": "none", "dlq_path": str(dlq)},
              "state": {"path": str(tmp_path / "state.sqlite")}}  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config)
    try:
        assert _readiness(service) == (200, [])
        os.mkfifo(dlq)  # after start: the start refuses one
        refused = [service.post_events(None, raw=_request("a")) for _ in range(2)]
        for response in refused:
            assert response.status_code == 503, response.text
            assert response.json()["error"] == "unavailable"
        assert service.totals()["consumed"] == 0  # not applied, not counted
        code, reasons = _readiness(service)
        assert code == 503 and any(str(dlq) in r and "not a regular file" in r
                                   for r in reasons), reasons  # fmt: skip
        assert service.status()["ready"] is False
        good = service.post_events(None, raw=_good_only("g"))
        assert good.status_code == 200, good.text  # an all-good batch needs no dead letter
        dlq.unlink()
        assert _readiness(service) == (200, [])
        again = service.post_events(None, raw=_request("a"))
        assert again.status_code == 200, again.text
        totals = service.totals()
        assert totals["consumed"] == 5 + GOOD + BAD
        assert totals["processed"] == 5 + GOOD and totals["duplicates"] == 0
        assert totals["dead_lettered"] == {"wrong_type": BAD}
        assert sorted(_letters(dlq)) == sorted(f"a-b-{n}" for n in range(BAD))
    finally:
        service.kill()


@pytest.mark.slow
def test_retries_after_a_full_dead_letter_disk_write_and_count_each_letter_once(
    tmp_path: Path, small_fs: Path
) -> None:
    dlq = small_fs / "dead.jsonl"
    config = {"source": {"kind": "none", "dlq_path": str(dlq)},
              "state": {"path": str(tmp_path / "state.sqlite")}}  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config)
    try:
        filler = fill(small_fs)
        try:
            for _ in range(2):
                response = service.post_events(None, raw=_request("a"))
                assert response.status_code == 503, response.text
            code, reasons = _readiness(service)
            assert code == 503 and any(str(dlq) in r and "No space left" in r
                                       for r in reasons), reasons  # fmt: skip
            good = service.post_events(None, raw=_good_only("g"))
            assert good.status_code == 200, good.text  # the state has its own disk
        finally:
            filler.unlink()
        assert _readiness(service) == (200, [])  # room again
        assert service.post_events(None, raw=_request("a")).status_code == 200
        totals = service.totals()
        assert totals["consumed"] == 5 + GOOD + BAD  # the refused tries were not applied
        assert totals["dead_lettered"] == {"wrong_type": BAD}
        assert totals["processed"] == 5 + GOOD and totals["duplicates"] == 0
        assert sorted(_letters(dlq)) == sorted(f"a-b-{n}" for n in range(BAD))
    finally:
        service.kill()


@pytest.mark.slow
def test_retries_after_a_failed_checkpoint_do_not_write_letters_again(
    tmp_path: Path, small_fs: Path
) -> None:
    """The letters are written, then the state checkpoint fails (its disk is full): 503,
    nothing acknowledged. The retries count the same letters as duplicates, as they count
    the good events with an ``event_id``; the file holds each letter once."""
    dlq = tmp_path / "dead.jsonl"
    config = {"source": {"kind": "none", "dlq_path": str(dlq)},
              "state": {"path": str(small_fs / "state.sqlite")}}  # fmt: skip
    service = ServiceProcess.start(tmp_path / "work", config)
    try:
        assert service.post_events(None, raw=_good_only("before")).status_code == 200
        filler = fill(small_fs)
        try:
            for _ in range(2):
                response = service.post_events(None, raw=_request("a"))
                assert response.status_code == 503, response.text
        finally:
            filler.unlink()
        again = service.post_events(None, raw=_request("a"))
        assert again.status_code == 200, again.text
        answer = again.json()  # the client learns which events were bad, as on a first try
        assert answer["accepted"] == 0 and answer["duplicates"] == GOOD
        assert sorted(r["index"] for r in answer["dead_lettered"]) == list(range(GOOD, GOOD + BAD))
        assert sorted(_letters(dlq)) == sorted(f"a-b-{n}" for n in range(BAD))
        totals = service.totals()
        assert totals["dead_lettered"] == {"wrong_type": BAD}  # once, by the first try
        assert totals["processed"] == 5 + GOOD
        assert totals["consumed"] == 5 + 3 * (GOOD + BAD)
        assert totals["duplicates"] == 2 * (GOOD + BAD)  # both retries: all 50 seen before
        assert accounted(totals) + totals["duplicates"] == totals["consumed"]
        service.kill()
        service = service.restart()
        after = service.totals()
        assert after["dead_lettered"] == {"wrong_type": BAD}
        assert sorted(_letters(dlq)) == sorted(f"a-b-{n}" for n in range(BAD))
    finally:
        service.kill()
