"""Unit tests of the HTTP dead-letter file's memory across restarts
(:meth:`consumers.jsonl_dead_letters.JsonlDeadLetters.recover`)."""

from __future__ import annotations

import os
from pathlib import Path

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.jsonl_dead_letters import DEAD_LETTER_MARK_KEY, JsonlDeadLetters


def _letter(value: bytes, reason: str = "wrong_type") -> DeadLetter:
    return DeadLetter(RawMessage(value, Origin(file="http", line=1)), reason, "detail")


def test_letters_after_the_mark_are_counted_but_not_written_again(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    before = JsonlDeadLetters(path)
    before.admit([_letter(b"a")])
    mark = before.checkpoint_mark()[DEAD_LETTER_MARK_KEY]  # "a" counted by a checkpoint
    before.admit([_letter(b"b"), _letter(b"c", "too_large")])  # then killed: not counted
    size = path.stat().st_size
    after = JsonlDeadLetters(path)
    assert after.recover(mark) == 2
    counted = after.admit([_letter(b"a"), _letter(b"b"), _letter(b"c", "too_large")])
    assert [c.message.value for c in counted] == [b"a", b"b", b"c"]  # all three counted
    # "b" and "c" were on disk already; "a" is a new letter (its first was counted)
    assert path.read_bytes().count(b"\n") == 4 and path.stat().st_size > size
    again = after.admit([_letter(b"b")])  # the memory is used up: a new letter
    assert len(again) == 1 and path.read_bytes().count(b"\n") == 5


def test_nothing_is_recovered_from_another_or_a_cut_file(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    first = JsonlDeadLetters(path)
    first.admit([_letter(b"a")])
    mark = first.checkpoint_mark()[DEAD_LETTER_MARK_KEY]
    first.admit([_letter(b"b")])
    assert JsonlDeadLetters(path).recover(None) == 0  # a state from before the mark
    assert JsonlDeadLetters(path).recover({**mark, "size": path.stat().st_size}) == 0
    os.rename(path, tmp_path / "old.jsonl")
    JsonlDeadLetters(path).admit([_letter(b"a"), _letter(b"b")])  # a new file (inode)
    assert JsonlDeadLetters(path).recover(mark) == 0
    absent = {"dev": None, "ino": None, "size": 0}  # no file at the checkpoint: all of it
    assert JsonlDeadLetters(path).recover(absent) == 2


def test_the_read_back_is_bounded_to_whole_lines_at_the_end(tmp_path: Path) -> None:
    path = tmp_path / "dead.jsonl"
    letters = JsonlDeadLetters(path)
    letters.admit([_letter(b"x" * 100 + bytes([65 + i])) for i in range(10)])
    line = path.stat().st_size // 10
    bounded = JsonlDeadLetters(path)
    bounded.MAX_RECOVERED_BYTES = 3 * line + line // 2  # 3.5 lines: the half one is skipped
    assert bounded.recover({"dev": None, "ino": None, "size": 0}) == 3
