"""The gold-set file under faults, through a real served app (uvicorn on a real socket): disk
full mid-append, a torn last line, another process's lock, a row a killed accept appended.

Before (issue 19): an accept that hit ENOSPC answered 503 but left part of its row in the file
(the buffered file's close wrote the rest after the truncate), the next start refused the file
while ``/readyz`` and ``/v1/status`` showed nothing wrong; 45 accepts blocked by another
process's ``flock`` took ``/healthz`` and ``/v1/status`` down (every worker thread waited);
a row appended before a kill -9 without a ``kind`` answered 500 after keeping the decision.

The gold-set file lives on its own tmpfs (``mount -t tmpfs``, root with CAP_SYS_ADMIN as in
CI; skipped with the reason where mounting is refused). One server for the module: the demo
log's first 600 events give the suggestions each test accepts (a different one each).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.settings import load_settings
from tests.reliability.conftest import fill, tmpfs_at
from tests.service.api.test_app import TOKEN, Server, _free_port

pytestmark = pytest.mark.slow  # a served app that harvests the demo log first

AUTH = {"authorization": f"Bearer {TOKEN}"}
REFRESH_THREAD = "goldwatch-gold-refresh"
#: Bound of a wait for an answer that must come (seconds): a hang fails, a slow machine not.
ANSWER_TIMEOUT_S = 120.0
PAGE = 4096
#: ``harvest.gold_lock_timeout_s`` of the served app: the whole wait an accept may have.
LOCK_TIMEOUT_S = 3.0  # tmpfs allocates whole pages: a file's last page has room up to its end


@pytest.fixture(scope="module")
def gold_fs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    with tmpfs_at(tmp_path_factory.mktemp("goldfs"), "256k", "goldwatch-gold") as where:
        yield where


@pytest.fixture(scope="module")
def server(gold_fs: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    tmp = tmp_path_factory.mktemp("goldserve")
    gold = gold_fs / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    log = tmp / "querylog.jsonl"
    lines = demo_path("querylog.jsonl").read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines[:600]))
    settings = load_settings(
        gold_set=gold,
        source={"kind": "file", "path": log},
        state={"path": tmp / "state.sqlite"},
        api={"port": _free_port(), "token": TOKEN},
        harvest={
            "flush_interval_s": 0,
            "gold_lock_timeout_s": LOCK_TIMEOUT_S,
            "min_live_events": 50,
        },
    )
    with Server(settings) as running:
        deadline = time.monotonic() + ANSWER_TIMEOUT_S
        while not httpx.get(running.base + "/v1/status").json()["input_finished"]:
            assert time.monotonic() < deadline, "the log was not consumed in time"
            time.sleep(0.2)
        yield running


@pytest.fixture()
def candidate(server: Server) -> Iterator[str]:
    """An undecided suggestion; afterwards, every gold-set refresh has ended."""
    page = httpx.get(server.base + "/v1/gold-candidates",
                     params={"status": "suggested", "limit": 1}).json()  # fmt: skip
    assert page["items"], "no suggestion left to accept"
    yield page["items"][0]["id"]
    deadline = time.monotonic() + ANSWER_TIMEOUT_S
    while running := [t for t in threading.enumerate() if t.name == REFRESH_THREAD]:
        assert time.monotonic() < deadline, "gold-set refresh still running"
        running[0].join(1.0)


def _accept(server: Server, cid: str, gold: list[str] | None = None) -> httpx.Response:
    body: dict[str, Any] = {"gold": gold or [], "kind": "plain" if gold else "unanswerable"}
    return httpx.post(f"{server.base}/v1/gold-candidates/{cid}/accept", json=body,
                      headers=AUTH, timeout=ANSWER_TIMEOUT_S)  # fmt: skip


def _pad_to_page_end(gold: Path, room: int) -> None:
    """Append one valid gold row so the file ends ``room`` bytes before a page boundary."""
    passage = json.loads(gold.read_bytes().splitlines()[0])["gold"][0]
    base = json.dumps({"id": "pad-1", "question": "", "gold": [passage], "kind": "plain"})
    size = gold.stat().st_size + len(base) + 1  # with its newline
    fill = (PAGE - room - size) % PAGE
    row = {"id": "pad-1", "question": "p" * fill, "gold": [passage], "kind": "plain"}
    with gold.open("ab") as handle:
        handle.write(json.dumps(row).encode() + b"\n")
    assert gold.stat().st_size % PAGE == PAGE - room


def test_accept_on_a_full_disk_answers_503_and_the_gold_file_stays_whole(
    server: Server, gold_fs: Path, candidate: str
) -> None:
    gold = gold_fs / "gold.jsonl"
    _pad_to_page_end(gold, room=100)  # the new row (over 100 bytes) fits only in part
    before = gold.read_bytes()
    filler = fill(gold_fs)
    try:
        refused = _accept(server, candidate)
        assert refused.status_code == 503, refused.text
        assert "No space left on device" in refused.json()["detail"]
        assert gold.read_bytes() == before  # not one byte of the row left behind
    finally:
        filler.unlink()
    assert gold.read_bytes() == before  # nothing written later (a buffered close did)
    assert httpx.get(server.base + "/readyz").status_code == 200
    accepted = _accept(server, candidate)  # the same accept, retried, has room now
    assert accepted.status_code == 200, accepted.text
    after = gold.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    row = json.loads(after[len(before) :])
    assert row["id"] == accepted.json()["gold_id"] and row["harvest_id"] == candidate
    load_gold_set(gold)  # the next start reads it


def test_a_torn_gold_line_is_refused_and_shown_by_readyz_and_status(
    server: Server, gold_fs: Path, candidate: str
) -> None:
    gold = gold_fs / "gold.jsonl"
    whole = gold.read_bytes()
    lines = whole.count(b"\n")
    torn = b'{"id": "q-950", "question": "zq-torn-4417 what is the hostel fe'
    with gold.open("ab") as handle:  # as a crash in the middle of an older append left it
        handle.write(torn)
    try:
        ready = httpx.get(server.base + "/readyz")
        assert ready.status_code == 503
        reasons = " ".join(ready.json()["reasons"])
        assert f"line {lines + 1}" in reasons and str(gold) in reasons
        assert "zq-torn-4417" not in ready.text
        status = httpx.get(server.base + "/v1/status").json()
        assert status["ready"] is False and f"line {lines + 1}" in status["gold_file_error"]
        refused = _accept(server, candidate)
        assert refused.status_code == 503, refused.text
        assert f"line {lines + 1} is incomplete" in refused.json()["detail"]
        assert "zq-torn-4417" not in refused.text
        assert gold.read_bytes() == whole + torn  # nothing glued onto the fragment
    finally:
        os.truncate(gold, len(whole))  # the operator's repair
    assert httpx.get(server.base + "/readyz").status_code == 200
    assert httpx.get(server.base + "/v1/status").json()["gold_file_error"] is None
    assert _accept(server, candidate).status_code == 200


def test_a_bad_row_mid_file_refuses_accepts_as_readiness_says(
    server: Server, gold_fs: Path, candidate: str
) -> None:
    """Before: ``/readyz`` said 503 for a bad row in the middle of the gold set, but an accept
    still appended after it (200), a row the next start would refuse with the whole file."""
    gold = gold_fs / "gold.jsonl"
    whole = gold.read_bytes()
    lines = whole.splitlines(keepends=True)
    bad = b'{"id": "q-960", "question": "zq-midrow-5521 fees?", "gold": 7}\n'  # gold: a number
    damaged = b"".join([*lines[:2], bad, *lines[2:]])
    gold.write_bytes(damaged)
    try:
        ready = httpx.get(server.base + "/readyz")
        assert ready.status_code == 503
        reasons = " ".join(ready.json()["reasons"])
        assert f"{gold}, line 3" in reasons
        refused = _accept(server, candidate)
        assert refused.status_code == 503, refused.text
        detail = refused.json()["detail"]
        assert f"{gold}, line 3" in detail and "no longer loads" in detail
        assert "zq-midrow-5521" not in refused.text
        assert gold.read_bytes() == damaged  # nothing appended after the bad row
    finally:
        gold.write_bytes(whole)  # the operator's repair
    assert httpx.get(server.base + "/readyz").status_code == 200
    assert _accept(server, candidate).status_code == 200
    load_gold_set(gold)


def test_accepts_blocked_by_another_process_answer_503_and_healthz_stays_up(
    server: Server, gold_fs: Path, candidate: str
) -> None:
    gold = gold_fs / "gold.jsonl"
    before = gold.read_bytes()
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys\n"
         f"f = open({str(gold)!r}, 'rb'); fcntl.flock(f, fcntl.LOCK_EX)\n"
         "print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        answers: list[int] = []
        threads = [
            threading.Thread(target=lambda: answers.append(_accept(server, candidate).status_code))
            for _ in range(45)  # more than the 40 worker threads
        ]
        for thread in threads:
            thread.start()
        # while the lock is still held and the accepts wait or were refused
        assert httpx.get(server.base + "/healthz", timeout=ANSWER_TIMEOUT_S).status_code == 200
        status = httpx.get(server.base + "/v1/status", timeout=ANSWER_TIMEOUT_S)
        assert status.status_code == 200
        for thread in threads:
            thread.join(ANSWER_TIMEOUT_S)
        assert not any(t.is_alive() for t in threads), "accepts still waiting on the lock"
        assert answers == [503] * 45
        assert holder.poll() is None  # every answer came while the lock was held
    finally:
        holder.communicate("", timeout=30)
    assert gold.read_bytes() == before
    assert _accept(server, candidate).status_code == 200  # the lock released: it goes in


def _hold_lock(gold: Path) -> subprocess.Popen[str]:
    """Another process holding ``flock(LOCK_EX)`` on ``gold`` until its stdin closes."""
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl, sys\n"
         f"f = open({str(gold)!r}, 'rb'); fcntl.flock(f, fcntl.LOCK_EX)\n"
         "print('locked', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
    return holder


def test_an_accept_queued_behind_another_waits_one_deadline_in_all(
    server: Server, gold_fs: Path, candidate: str
) -> None:
    """Before: the queue behind another accept and the lock wait each had the timeout, so an
    accept queued behind one waiting for the lock answered after almost twice it (5.5 s of a
    3 s setting here); the documented bound is the setting itself."""
    gold = gold_fs / "gold.jsonl"
    holder = _hold_lock(gold)
    try:
        first: list[int] = []
        waiting = threading.Thread(
            target=lambda: first.append(_accept(server, candidate).status_code)
        )
        waiting.start()  # takes the queue, then waits for the lock
        time.sleep(LOCK_TIMEOUT_S / 6)  # the second arrives while the first waits
        sent = time.monotonic()
        second = _accept(server, candidate)
        took = time.monotonic() - sent
        waiting.join(ANSWER_TIMEOUT_S)
        assert second.status_code == 503 and first == [503], second.text
        assert holder.poll() is None  # both answered while the lock was held
        # the deadline, with room for a loaded machine; the old bound was 2 x 3 s - 0.5 s
        assert took < LOCK_TIMEOUT_S + 1.25, f"{took:.2f} s for a {LOCK_TIMEOUT_S} s deadline"
    finally:
        holder.communicate("", timeout=30)


def test_a_row_a_killed_accept_appended_is_reused_and_answers_200(
    server: Server, gold_fs: Path, candidate: str
) -> None:
    gold = gold_fs / "gold.jsonl"
    passage = json.loads(gold.read_bytes().splitlines()[0])["gold"][0]
    # as an accept killed between its append and its decision left it; no "kind" (the
    # loader reads it as "plain") and graded gold, both valid gold-set rows
    row = {"id": "q-951", "question": "when is the library open", "gold": {passage: 2},
           "harvest_id": candidate}  # fmt: skip
    with gold.open("ab") as handle:
        handle.write(json.dumps(row).encode() + b"\n")
    before = gold.read_bytes()
    answer = _accept(server, candidate)
    assert answer.status_code == 200, answer.text
    decision = answer.json()
    assert decision["gold_id"] == "q-951"
    assert decision["gold"] == [passage] and decision["kind"] == "plain"  # the row's, kept
    assert gold.read_bytes() == before  # not appended twice
    assert _accept(server, candidate).status_code == 409
