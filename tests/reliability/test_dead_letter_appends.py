"""Dead-letter files stay whole: HTTP ingest's letters retried after a full disk (a real
tmpfs), and a torn tail a crash left in the file source's dead-letter file.

Before (issue 19): retried letters were glued onto a torn fragment — one a crash (or a
failed cut-back) left at the end of the file; the two torn-tail tests fail on that code. The
full-disk test guards the invariant through the real ENOSPC path (the old code's cut-back held
in this scenario; the gold-set file's did not, tests/reliability/test_gold_file_faults.py).
Now every line of the file parses and every letter is there exactly once.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.file_source import FileSource, dead_letter_line
from consumers.jsonl_dead_letters import JsonlDeadLetters
from tests.reliability.conftest import MountTmpfs, fill

PAGE = 4096  # tmpfs allocates whole pages: a file's last page has room up to its end


@pytest.fixture()
def small_fs(tmpfs: MountTmpfs) -> Path:
    return tmpfs("64k", "goldwatch-dlq")


def _letter(n: int, size: int = 1500) -> DeadLetter:
    value = (f'{{"event_id": "e-{n}", "question": "' + "x" * size + '"').encode()
    return DeadLetter(RawMessage(value, Origin(file="http", line=n)), "bad_json", "cut short")


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


def test_http_dead_letters_retried_after_a_full_disk_are_whole(small_fs: Path) -> None:
    letters = JsonlDeadLetters(small_fs / "goldwatch.dlq.jsonl")
    size = next(n for n in range(PAGE, 0, -3) if len(dead_letter_line(_letter(1, n))) < PAGE - 150)
    letters.write([_letter(1, size)])  # the file ends 150-160 bytes before a page boundary
    before = letters.path.read_bytes()
    room = PAGE - len(before) % PAGE
    assert 150 <= room < 170, room
    filler = fill(small_fs)
    try:
        with pytest.raises(OSError):
            letters.write([_letter(2), _letter(3)])  # more than the room left
        assert letters.queued == 2
        assert letters.path.read_bytes() == before  # nothing of them stayed
    finally:
        filler.unlink()
    assert letters.path.read_bytes() == before  # nor was written later
    letters.flush()  # the retry, as the next checkpoint runs it
    assert letters.queued == 0
    assert [row["origin"]["line"] for row in _lines(letters.path)] == [1, 2, 3]


def test_a_torn_tail_in_the_file_sources_dead_letters_is_cut(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"not json\n")
    dlq = tmp_path / "log.jsonl.dlq.jsonl"
    whole = b'{"reason": "bad_json", "detail": "x", "origin": {"file": "a", "line": 1}}\n'
    dlq.write_bytes(whole + b'{"reason": "bad_js')  # a crash mid-append
    source = FileSource(str(log), dlq_path=str(dlq))
    try:
        batch = source.poll(10, 100)
        source.dead_letter([DeadLetter(batch[0], "bad_json", "not JSON")])
        source.sync_dead_letters()
    finally:
        source.close()
    rows = _lines(dlq)  # every line parses: the fragment is gone, not glued to
    assert len(rows) == 2 and rows[0]["origin"] == {"file": "a", "line": 1}
    assert rows[1]["origin"]["line"] == 1 and rows[1]["reason"] == "bad_json"


def test_a_torn_tail_in_the_http_dead_letters_is_cut_before_a_retry(tmp_path: Path) -> None:
    letters = JsonlDeadLetters(tmp_path / "goldwatch.dlq.jsonl")
    letters.write([_letter(1, 50)])
    with letters.path.open("ab") as handle:  # a kill -9 in the middle of the next append
        handle.write(dead_letter_line(_letter(2, 50))[:40])
    letters.write([_letter(2, 50)])  # the letter, sent again after the restart
    assert [row["origin"]["line"] for row in _lines(letters.path)] == [1, 2]
