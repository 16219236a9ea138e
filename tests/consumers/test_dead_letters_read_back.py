"""Which dead letters a file source reads back at start so it does not write them twice
(trial 49, M1, and its review's blocker B3).

Only the letters of a run that died before a checkpoint counted them are read back: after
the stored position's ``dlq`` mark, or, before the first checkpoint, after the run mark the run
stored before its first letter (:meth:`FileSource.run_mark`). A fresh state reads nothing back, so
a letter identical to one of an earlier run (a new file under the same name, a rotated
file, the same run again on a new state) is written. Before (s49-t49's first fix), every
start without a position read the whole dead-letter file back and dropped such letters:
1 line for 2 letters, 3 for 6.
"""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from consumers.base import DeadLetter
from consumers.file_source import FileSource
from consumers.loop import run
from service.pipeline import Batch, CountingStage, Pipeline, PipelineConfig, StageError
from service.state import StateStore
from service.telemetry import build_metrics

#: no checkpoint before the end of input (or a crash): commit_every and the interval too high
NO_CHECKPOINT = PipelineConfig(max_batch_size=2, commit_interval_s=3600, commit_every=10**6,
                               status_interval_s=3600)  # fmt: skip


def _event(i: int) -> str:
    return json.dumps({"event_id": f"e-{i}", "timestamp": 1_795_946_400 + i, "question": f"q{i}"})


class Crash(Exception):
    pass


class CrashAt(CountingStage):
    """Counts events; raises on its n-th batch (the process dying before a checkpoint)."""

    name = "crash"

    def __init__(self, n: int) -> None:
        super().__init__()
        self.n = n

    def process(self, batch: Batch) -> None:
        self.n -= 1
        if self.n == 0:
            raise Crash("kill -9")
        super().process(batch)


def _run(source: str | Path, state: Path, dlq: Path, crash_at: int = 0) -> int:
    """One run of ``source`` on the state file ``state`` (the poll loop, a real SQLite
    store), to the end of input or to a crash at batch ``crash_at`` (then nothing was
    checkpointed); returns the dead letters the run counted."""
    stages = Pipeline([CrashAt(crash_at) if crash_at else CountingStage()])
    file_source = FileSource(str(source), dlq_path=dlq)
    metrics = build_metrics(CollectorRegistry(), topics=["queries"])
    with StateStore.open(state) as store:
        if crash_at:
            with pytest.raises(StageError, match="kill -9"):
                run(file_source, stages, store, metrics, threading.Event(), config=NO_CHECKPOINT,
                    until_eof=True)  # fmt: skip
            assert store.get(str(file_source.state_key)) is None  # no position
        else:
            run(file_source, stages, store, metrics, threading.Event(), config=NO_CHECKPOINT,
                until_eof=True)  # fmt: skip
    file_source.close()
    return file_source.dead_letters


def _origin_lines(dlq: Path) -> list[int]:
    return [json.loads(line)["origin"]["line"] for line in dlq.read_bytes().splitlines()]


def test_a_new_file_under_the_same_name_on_a_fresh_state_writes_its_letters(
    tmp_path: Path,
) -> None:
    """Review (a): day 1 and day 2 share a name, a bad first line and the dead-letter file;
    each day is a fresh ``replay FILE --state <new>``: 2 letters, 2 lines (was 1)."""
    source, dlq = tmp_path / "events.jsonl", tmp_path / "events.jsonl.dlq.jsonl"
    source.write_text(f"#header\n{_event(1)}\n")
    assert _run(source, tmp_path / "day1.db", dlq) == 1
    source.write_text(f"#header\n{_event(2)}\n")
    assert _run(source, tmp_path / "day2.db", dlq) == 1
    assert _origin_lines(dlq) == [1, 1]


def test_a_kill_before_the_first_checkpoint_writes_each_letter_once(tmp_path: Path) -> None:
    """The case the read-back is for: the restart reads the file from the top; the letters
    the dead run wrote after its start mark are not written again, and a letter from an
    earlier run on another state (same bytes: same file, same line) is not one of them."""
    source, dlq = tmp_path / "events.jsonl", tmp_path / "events.jsonl.dlq.jsonl"
    lines = [_event(i) if i % 3 else f"not json {i}" for i in range(1, 13)]
    source.write_text("\n".join(lines) + "\n")  # bad: lines 3, 6, 9, 12
    assert _run(source, tmp_path / "earlier.db", dlq) == 4  # yesterday, its own state
    earlier_size = dlq.stat().st_size
    state = tmp_path / "state.db"
    _run(source, state, dlq, crash_at=4)  # batches of 2: letters of lines 3 and 6 written
    with StateStore.open(state) as store:  # the mark the run stored before its first letter
        mark = store.get(str(FileSource(str(source)).run_mark_key))
    assert mark["dlq"]["size"] == earlier_size
    assert mark["file"] == str(source)
    assert _origin_lines(dlq) == [3, 6, 9, 12, 3, 6]
    assert _run(source, state, dlq) == 4  # counted again: the count died with the run
    assert _origin_lines(dlq) == [3, 6, 9, 12, 3, 6, 9, 12]


def test_a_restart_with_the_path_spelled_otherwise_writes_each_letter_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review nit: the state key is the resolved path, the letters give the path as given;
    a restart naming the file relative to the working directory found the position but
    wrote every letter again."""
    source, dlq = tmp_path / "events.jsonl", tmp_path / "events.jsonl.dlq.jsonl"
    source.write_text("not json 1\n" + _event(2) + "\nnot json 3\n" + _event(4) + "\n")
    state = tmp_path / "state.db"
    _run(source, state, dlq, crash_at=2)  # the first batch's letter (line 1) written
    assert _origin_lines(dlq) == [1]
    monkeypatch.chdir(tmp_path)
    assert _run("events.jsonl", state, dlq) == 2
    records = [json.loads(line) for line in dlq.read_bytes().splitlines()]
    assert [(r["origin"]["file"], r["origin"]["line"]) for r in records] == [
        (str(source), 1),  # the dead run's letter, as it wrote it
        ("events.jsonl", 3),
    ]


def _drain(source: FileSource, polls: int) -> None:
    for _ in range(polls):
        messages = source.poll(100, 20)
        bad = [
            DeadLetter(m, "not_json", "x")
            for m in messages
            if not (m.value or b"").startswith(b"{")
        ]
        source.dead_letter(bad)
        source.sync_dead_letters()


def test_follow_mode_writes_the_letters_of_rotated_files(tmp_path: Path) -> None:
    """Review (b): three earlier days' letters in the dead-letter file; today's serve (a
    fresh state, following) sees the file rotated twice, each new file with the same bad
    first line: 3 letters written, 6 lines (was 3)."""
    source, dlq = tmp_path / "events.jsonl", tmp_path / "events.jsonl.dlq.jsonl"
    for day in range(3):
        source.write_text(f"#header\n{_event(day)}\n")
        earlier = FileSource(str(source), dlq_path=dlq)
        earlier.restore(None)
        _drain(earlier, 3)
        earlier.close()
    source.write_text(f"#header\n{_event(10)}\n")
    today = FileSource(str(source), dlq_path=dlq, follow=True, poll_interval_s=0.01)
    today.restore(None)
    _drain(today, 3)
    for rotation in range(2):
        os.rename(source, tmp_path / f"old{rotation}")
        source.write_text(f"#header\n{_event(20 + rotation)}\n")
        for _ in range(200):  # until the new file's letter is read (no fixed sleep)
            _drain(today, 1)
            if today.dead_letters == rotation + 2:
                break
    today.close()
    assert today.dead_letters == 3
    assert _origin_lines(dlq) == [1] * 6


def test_a_rotation_after_a_restart_forgets_the_letters_read_back(tmp_path: Path) -> None:
    """A kill before the first checkpoint, then a restart in follow mode: the dead run's
    letter (line 1) is not written again, but the rotated file's line 1, with the same
    bytes, is another letter and is written."""
    source, dlq = tmp_path / "events.jsonl", tmp_path / "events.jsonl.dlq.jsonl"
    source.write_text(f"#header\n{_event(1)}\n")
    dead = FileSource(str(source), dlq_path=dlq)
    dead.restore(None)
    mark = dead.run_mark()  # what the poll loop stores before the first letter
    _drain(dead, 2)
    dead.close()  # no checkpoint: the state holds only the mark
    again = FileSource(str(source), dlq_path=dlq, follow=True, poll_interval_s=0.01)
    again.restore(None)
    assert again.resume_run(mark)
    _drain(again, 2)
    assert _origin_lines(dlq) == [1]  # not written again, counted again
    assert again.dead_letters == 1
    os.rename(source, tmp_path / "old")
    source.write_text(f"#header\n{_event(2)}\n")
    for _ in range(200):
        _drain(again, 1)
        if again.dead_letters == 2:
            break
    again.close()
    assert _origin_lines(dlq) == [1, 1]


def test_a_batch_whose_letters_come_in_two_calls_is_written_once(tmp_path: Path) -> None:
    """A batch's letters reach the source in more than one call (the decoder's, then the
    whole batch as ``processing_failed`` when a stage raised): the letters read back are kept
    until a checkpoint passes them, not dropped after the first call reaches their last line."""
    source, dlq = tmp_path / "events.jsonl", tmp_path / "events.jsonl.dlq.jsonl"
    source.write_text(f"{_event(1)}\nnot json 2\n")

    def one_run(mark: dict[str, Any] | None) -> FileSource:
        reader = FileSource(str(source), dlq_path=dlq)
        reader.restore(None)
        if mark is not None:
            assert reader.resume_run(mark)
        messages = reader.poll(10, 0)
        reader.dead_letter([DeadLetter(messages[1], "not_json", "x")])
        reader.dead_letter([DeadLetter(m, "processing_failed", "boom") for m in messages])
        reader.sync_dead_letters()
        reader.close()
        return reader

    mark = FileSource(str(source), dlq_path=dlq).run_mark()
    one_run(None)  # killed before its checkpoint
    assert _origin_lines(dlq) == [2, 1, 2]
    assert one_run(mark).dead_letters == 3  # counted again
    assert _origin_lines(dlq) == [2, 1, 2]  # written once


# -- review of trial 49's M1 fix (session 50): the run mark's identity, its end, a rollback --

#: 12 lines, lines 3, 6, 9 and 12 not JSON: 4 letters
TWELVE = "\n".join(_event(i) if i % 3 else f"not json {i}" for i in range(1, 13)) + "\n"


def _killed_after_two_letters(source: Path, state: Path, dlq: Path) -> None:
    """A run on a fresh state killed before its first checkpoint, in its 4th batch of 2:
    the letters of lines 3 and 6 are in the file, lines 9 and 12 never read."""
    _run(source, state, dlq, crash_at=4)
    assert _origin_lines(dlq) == [3, 6]


@pytest.mark.parametrize("how", ["new file", "rewritten in place"])
def test_an_input_replaced_before_the_restart_has_all_its_letters_written(
    tmp_path: Path, how: str
) -> None:
    """Review (a): the run mark names its input (st_dev/st_ino, head): a restart on
    another input reads nothing back, even when its bad lines are byte for byte the dead
    run's. The dead run wrote 2 letters (3, 6); the new input's 4 letters (3, 6, 9, 12) are
    all written: 2 + 4 = 6 lines (the s49 mark, without the input, skipped the first two:
    4 lines). "new file": the same bytes under a new inode; "rewritten in place": the same
    inode, another first line."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    if how == "new file":
        (tmp_path / "next").write_text(TWELVE)
        os.replace(tmp_path / "next", source)
    else:
        with source.open("r+") as handle:  # same inode, same size, another head
            handle.write(_event(99)[:20])
    assert _run(source, state, dlq) == 4
    assert _origin_lines(dlq) == [3, 6, 3, 6, 9, 12]


def test_a_dead_letter_file_missing_at_start_gets_an_identity_in_the_mark(
    tmp_path: Path,
) -> None:
    """Review (a), the worse case: no dead-letter file when the run started. The mark is
    stored before the first letter, with the file created first, so it holds the file's
    inode (s49's held dev/ino None, size 0: any file matched). The file moved away and
    copied back (same bytes, another inode) is another file: nothing read back, 2 + 4 = 6
    lines."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    assert not dlq.exists()
    _killed_after_two_letters(source, state, dlq)
    with StateStore.open(state) as store:
        mark = store.get(str(FileSource(str(source)).run_mark_key))
    moved = tmp_path / "e.dlq.jsonl.1"
    assert mark["dlq"] == {"dev": dlq.stat().st_dev, "ino": dlq.stat().st_ino, "size": 0}
    assert mark["input"]["ino"] == source.stat().st_ino
    assert mark["input"]["head_bytes"] == source.stat().st_size < 1024  # all of it: 553 B
    os.rename(dlq, moved)
    dlq.write_bytes(moved.read_bytes())
    assert _run(source, state, dlq) == 4
    assert _origin_lines(dlq) == [3, 6, 3, 6, 9, 12]


def test_the_same_input_grown_since_the_kill_is_still_the_marked_one(tmp_path: Path) -> None:
    """The identity is the inode and the head, not the size: an input appended to after the
    kill (a log still written) is the dead run's. Its letters 3 and 6 are not written again;
    9, 12 and the appended line 13's are: 2 + 3 = 5 lines, each once."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    with source.open("a") as handle:
        handle.write("not json 13\n")
    assert _run(source, state, dlq) == 5
    assert _origin_lines(dlq) == [3, 6, 9, 12, 13]


def test_two_kills_before_a_checkpoint_then_a_clean_run_write_each_letter_once(
    tmp_path: Path,
) -> None:
    """The second run takes up the first run's mark (same input, same file) and keeps it,
    so the third reads back the letters of both: 4 letters, 4 lines. The second run is
    killed in its 6th batch (lines 11-12): lines 3 and 6 read back, 9 written."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    _run(source, state, dlq, crash_at=6)
    assert _origin_lines(dlq) == [3, 6, 9]
    assert _run(source, state, dlq) == 4
    assert _origin_lines(dlq) == [3, 6, 9, 12]
    with StateStore.open(state) as store:  # the end's checkpoint: a position, no mark
        assert store.get(str(FileSource(str(source)).run_mark_key)) is None
        assert store.get(str(FileSource(str(source)).state_key))["line"] == 12


def test_a_clean_end_that_read_nothing_leaves_no_run_mark(tmp_path: Path) -> None:
    """Review (b): a mark outlived a clean run that read no messages and later passed
    another run's letters off as its own. Here a run killed after 2 letters leaves a mark;
    its input is then replaced by an empty file; the next run (another input: its mark
    does not fit) reads nothing and ends cleanly: the mark is deleted. Then another state
    dead-letters line 1 of the file's new content, and a run on the first state writes it
    too: 2 + 1 + 1 = 4 lines (with the mark left, its read-back would have skipped it)."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    key = str(FileSource(str(source)).run_mark_key)
    source.unlink()
    source.write_text("")
    assert _run(source, state, dlq) == 0
    with StateStore.open(state) as store:
        assert store.get(key) is None  # the clean end dropped the stale mark
    with source.open("a") as handle:
        handle.write("not json 1\n")
    assert _run(source, tmp_path / "other.db", dlq) == 1
    assert _run(source, state, dlq) == 1
    assert _origin_lines(dlq) == [3, 6, 1, 1]


def test_a_clean_end_before_the_read_back_letters_keeps_the_mark(tmp_path: Path) -> None:
    """A clean end (a stop) before the restart has read anything keeps the mark it took
    up: the dead run's letters are still to be recognised. Stopped run: 0 letters; the
    next run: 4 letters, 2 + 2 = 4 lines."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    key = str(FileSource(str(source)).run_mark_key)
    with StateStore.open(state) as store:
        mark = store.get(key)
        stopped = threading.Event()
        stopped.set()  # stop asked before the first poll
        file_source = FileSource(str(source), dlq_path=dlq)
        run(file_source, Pipeline([CountingStage()]), store,
            build_metrics(CollectorRegistry(), topics=["queries"]), stopped,
            config=NO_CHECKPOINT)  # fmt: skip
        assert file_source.dead_letters == 0
        assert store.get(key) == mark
    assert _run(source, state, dlq) == 4
    assert _origin_lines(dlq) == [3, 6, 9, 12]


def test_a_run_mark_is_not_a_position_to_a_version_without_run_marks(tmp_path: Path) -> None:
    """Review (c): main's file source read the position key and failed on a mark stored
    there (``KeyError: 'offset'``), so a rollback after a kill could not start. The mark has
    its own key: the position key is absent, as on a fresh state, and a file source given
    what an older version reads (``restore(None)``) starts from the top and writes the 4
    letters, the dead run's 2 again: 6 lines (the downgrade rule, docs/security.md)."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    older = FileSource(str(source), dlq_path=dlq)
    with StateStore.open(state) as store:
        assert store.get(str(older.state_key)) is None
        assert store.get(str(older.run_mark_key)) is not None
    older.restore(None)  # what a version without run marks does with that state
    _drain(older, 3)
    older.close()
    assert older.dead_letters == 4
    assert _origin_lines(dlq) == [3, 6, 3, 6, 9, 12]


def test_a_restart_killed_after_its_first_checkpoint_writes_each_letter_at_least_once(
    tmp_path: Path,
) -> None:
    """The re-review's case (i), documented as at least once (README, docs/security.md):
    the first run is killed before any checkpoint after the letters of lines 3 and 6; the
    restart (a checkpoint every 2 events) reads them back, checkpoints at line 2 — the
    position's ``dlq`` mark is the file's size then, past lines 3 and 6 — and is killed in
    its 2nd batch of events, having written no letter. The third run reads nothing back
    after that mark and writes all 4 letters: 2 + 4 = 6 lines, 3 and 6 twice, none lost."""
    source, dlq, state = tmp_path / "e.jsonl", tmp_path / "e.dlq.jsonl", tmp_path / "s.db"
    source.write_text(TWELVE)
    _killed_after_two_letters(source, state, dlq)
    every_two = PipelineConfig(max_batch_size=2, commit_interval_s=3600, commit_every=2,
                               status_interval_s=3600)  # fmt: skip
    restart = FileSource(str(source), dlq_path=dlq)
    with StateStore.open(state) as store:
        with pytest.raises(StageError, match="kill -9"):
            run(restart, Pipeline([CrashAt(2)]), store,
                build_metrics(CollectorRegistry(), topics=["queries"]), threading.Event(),
                config=every_two, until_eof=True)  # fmt: skip
        assert store.get(str(restart.state_key))["line"] == 2
        assert store.get(str(restart.run_mark_key)) is None  # the checkpoint deleted it
    restart.close()
    assert _origin_lines(dlq) == [3, 6]
    assert _run(source, state, dlq) == 4
    assert _origin_lines(dlq) == [3, 6, 3, 6, 9, 12]
