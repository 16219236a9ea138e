"""The JSONL file / stdin source: lines, positions, resume, follow, rotation, DLQ, speed."""

from __future__ import annotations

import base64
import json
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from consumers.base import BlankLine, DeadLetter, Origin, RawMessage
from consumers.errors import SourceUnavailable
from consumers.file_source import FileSource, message_factory
from service.pacing import TokenBucket


def lines_of(messages: list[RawMessage]) -> list[tuple[int | None, bytes | None]]:
    return [(m.origin.line, m.value) for m in messages]


def drain(source: FileSource, batch: int = 1000) -> list[RawMessage]:
    """Poll until end of file (a throttled poll may return [] before it)."""
    out: list[RawMessage] = []
    while (chunk := source.poll(batch, 0)) or not source.at_eof:
        out.extend(chunk)
    return out


def test_one_message_per_line_blank_lines_counted(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\n\n   \n{"a":2}\r\n{"a":3}')  # no trailing newline
    source = FileSource(path)
    messages = drain(source, batch=2)
    assert lines_of(messages) == [(1, b'{"a":1}'), (2, None), (3, None), (4, b'{"a":2}\r'),
                                  (5, b'{"a":3}')]  # fmt: skip
    # the blank lines are lines (counted, committed), not data (trial 22, LOW 6)
    assert [type(m) is BlankLine for m in messages] == [False, True, True, False, False]
    assert messages[0].origin == Origin(file=str(path), line=1)
    assert messages[1] == BlankLine(None, Origin(file=str(path), line=2))
    assert source.at_eof
    assert source.poll(10, 0) == []
    assert source.position_after(messages) == {
        "offset": path.stat().st_size,
        "line": 5,
        "head": source.position_after(messages)["head"],
        "dlq": {"dev": None, "ino": None, "size": 0},  # no dead letter written yet
        # the file its letters go to, as a restart without a configured one finds it
        "dlq_path": str((tmp_path / "log.jsonl.dlq.jsonl").absolute()),
        "file": str(path),  # the name its letters give (origin.file)
    }


def test_blank_lines_are_handed_out_wherever_they_fall(tmp_path: Path) -> None:
    """Leading, between events, CRLF-blank, trailing, and a whitespace-only last line
    without its newline: each is one :class:`BlankLine` at its own line number, in order,
    whatever the chunk and batch sizes, so the lines read are every line of the file."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'\n{"a":1}\n\r\n\t \n{"a":2}\n\n\n  ')
    want = [(1, None), (2, b'{"a":1}'), (3, None), (4, None), (5, b'{"a":2}'), (6, None),
            (7, None), (8, None)]  # fmt: skip
    for chunk, batch in ((1 << 20, 1000), (3, 1), (5, 2)):
        messages = drain(FileSource(path, chunk_bytes=chunk), batch=batch)
        assert lines_of(messages) == want, (chunk, batch)
        assert all((type(m) is BlankLine) == (m.value is None) for m in messages)


def test_small_chunks_split_lines_correctly(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    rows = [json.dumps({"i": i, "pad": "x" * (i % 13)}).encode() for i in range(300)]
    path.write_bytes(b"\n".join(rows) + b"\n")
    messages = drain(FileSource(path, chunk_bytes=7), batch=17)
    assert [m.value for m in messages] == rows


def test_fast_message_factory_builds_equal_messages() -> None:
    made = message_factory("q.jsonl")(b"{}", 7)
    assert made == RawMessage(b"{}", Origin(file="q.jsonl", line=7))
    assert hash(made.origin) == hash(Origin(file="q.jsonl", line=7))
    assert made.origin.describe() == "q.jsonl:7"


def test_missing_file() -> None:
    with pytest.raises(SourceUnavailable, match="cannot open"):
        FileSource("/nonexistent/queries.jsonl")


def test_resume_after_crash_no_loss_no_double(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"".join(b'{"i":%d}\n' % i for i in range(10)))
    first = FileSource(path)
    batch = first.poll(4, 0)
    stored = first.position_after(batch)  # what the loop checkpoints
    first.commit(batch)
    first.poll(3, 0)  # read but never committed: the process crashes here
    first.close()

    second = FileSource(path)
    second.restore(json.loads(json.dumps(stored)))
    rest = drain(second)
    assert [m.origin.line for m in batch + rest] == list(range(1, 11))


def test_truncated_file_starts_over(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n{"i":2}\n{"i":3}\n')
    first = FileSource(path)
    stored = first.position_after(first.poll(3, 0))
    path.write_bytes(b'{"i":9}\n')
    second = FileSource(path)
    second.restore(stored)
    assert lines_of(drain(second)) == [(1, b'{"i":9}')]
    assert "truncated or rotated" in caplog.text


def test_replaced_file_same_size_starts_over(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n{"i":2}\n')
    first = FileSource(path)
    stored = first.position_after(first.poll(1, 0))
    path.write_bytes(b'{"i":7}\n{"i":8}\n')
    second = FileSource(path)
    second.restore(stored)
    assert [m.origin.line for m in drain(second)] == [1, 2]


def test_follow_picks_up_appended_lines_and_waits_for_partial(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n')
    source = FileSource(path, follow=True, poll_interval_s=0.01)
    assert lines_of(source.poll(10, 0)) == [(1, b'{"i":1}')]
    started = time.monotonic()
    assert source.poll(10, 100) == []
    assert time.monotonic() - started >= 0.09
    with path.open("ab") as handle:
        handle.write(b'{"i":2}\n{"i":')
        handle.flush()
        assert lines_of(source.poll(10, 500)) == [(2, b'{"i":2}')]
        assert source.poll(10, 50) == []  # partial line is not emitted
        handle.write(b"3}\n")
    assert lines_of(source.poll(10, 500)) == [(3, b'{"i":3}')]


def test_follow_detects_truncation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n{"i":2}\n')
    source = FileSource(path, follow=True, poll_interval_s=0.01)
    assert len(source.poll(10, 0)) == 2
    path.write_bytes(b'{"n":1}\n')
    assert lines_of(source.poll(10, 500)) == [(1, b'{"n":1}')]
    assert "truncated or rotated" in caplog.text


def test_follow_follows_rotation(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n')
    source = FileSource(path, follow=True, poll_interval_s=0.01)
    assert len(source.poll(10, 0)) == 1
    path.rename(tmp_path / "log.jsonl.1")
    path.write_bytes(b'{"new":1}\n{"new":2}\n')
    assert lines_of(source.poll(10, 500)) == [(1, b'{"new":1}'), (2, b'{"new":2}')]


def test_overlong_line_is_cut_and_positions_stay_exact(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\n' + b"x" * 5000 + b'\n{"a":2}\n' + b"y" * 100)
    source = FileSource(path, chunk_bytes=64, max_line_bytes=100)
    messages = drain(source)
    assert [(m.origin.line, len(m.value or b"")) for m in messages] == [
        (1, 7),
        (2, 101),
        (3, 7),
        (4, 100),
    ]
    assert source.position_after(messages[:2])["offset"] == 8 + 5001


def test_dead_letters_written_as_jsonl(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"not json\n")
    source = FileSource(path)
    (message,) = source.poll(10, 0)
    tomb = RawMessage(None, Origin(file=str(path), line=9))
    source.dead_letter([DeadLetter(message, "not_json", "expected a JSON object")])
    source.dead_letter([DeadLetter(tomb, "tombstone", "null")])
    source.close()
    rows = [json.loads(x) for x in (tmp_path / "log.jsonl.dlq.jsonl").read_text().splitlines()]
    assert rows[0] == {
        "reason": "not_json",
        "detail": "expected a JSON object",
        "origin": {"file": str(path), "line": 1},
        "value_b64": base64.b64encode(b"not json").decode(),
    }
    assert rows[1]["value_b64"] is None


def test_dead_letters_are_flushed_per_batch_and_fsynced_once_per_sync(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"x\ny\n")
    source = FileSource(path)
    first, second = source.poll(10, 0)
    synced: list[int] = []
    monkeypatch.setattr(os, "fsync", synced.append)
    source.sync_dead_letters()
    assert synced == []  # nothing written yet: nothing to sync
    source.dead_letter([DeadLetter(first, "not_json", "d")])
    source.dead_letter([DeadLetter(second, "not_json", "d")])
    # written through to the file (a crash of the process keeps them) before any fsync
    assert len((tmp_path / "log.jsonl.dlq.jsonl").read_bytes().splitlines()) == 2
    assert synced == []
    source.sync_dead_letters()
    source.sync_dead_letters()
    assert len(synced) == 1  # one fsync for both batches, none when nothing is new
    source.close()


def in_thread(function: Callable[[], list[RawMessage]]) -> list[RawMessage]:
    """Run ``function`` in another thread and return its result. The 60 s join is a bound
    for a loaded machine, not a timing: a read that blocked would never return."""
    out: list[list[RawMessage]] = []
    thread = threading.Thread(target=lambda: out.append(function()), daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the poll blocked"
    return out[0]


def test_stdin_pipe_does_not_block_and_reads_to_eof(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(read_fd, "rb") as reader, os.fdopen(write_fd, "wb") as writer:
        source = FileSource("-", stream=reader, dlq_path=tmp_path / "dlq.jsonl")
        assert source.name == "stdin" and source.state_key is None
        # The writer stays open and silent: a poll blocked in a read would never return.
        assert in_thread(lambda: source.poll(10, 50)) == []
        assert not source.at_eof
        writer.write(b'{"i":1}\n{"i":2}\n')
        writer.flush()
        assert lines_of(source.poll(10, 500)) == [(1, b'{"i":1}'), (2, b'{"i":2}')]
        # The end of input comes while a poll waits: it returns then, not at its timeout.
        waiting, read = threading.Event(), source._input.read

        def read_and_tell() -> bytes | None:
            chunk = read()
            if chunk is None:  # the pipe had nothing yet: the poll now waits for input
                waiting.set()
            return chunk

        monkeypatch.setattr(source._input, "read", read_and_tell)
        polled: list[list[RawMessage]] = []
        poller = threading.Thread(
            target=lambda: polled.append(source.poll(10, 120_000)), daemon=True
        )
        poller.start()
        assert waiting.wait(60)  # 60 s: a bound, not a timing
        writer.close()
        poller.join(60)  # half the poll's own timeout: a poll that ended saw the end of input
        assert not poller.is_alive() and polled == [[]]
        assert source.at_eof
        assert source.status()["read_line"] == 2


def test_rate_limit_throttles() -> None:
    bucket = TokenBucket(rate=100, tokens=1.0)  # as FileSource builds it: one token at first
    taken, started = 0, time.monotonic()
    while taken < 30:
        n = bucket.wait(10, time.monotonic() + 1)
        bucket.spend(n)
        taken += n
    assert time.monotonic() - started >= 0.25
    with pytest.raises(ValueError, match="rate"):
        TokenBucket(0)


def test_rate_limited_source(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n' * 40)
    source = FileSource(path, rate=200)
    started = time.monotonic()
    assert len(drain(source, batch=100)) == 40
    assert time.monotonic() - started >= 0.15


def test_commit_and_status(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n{"i":2}\n')
    source = FileSource(path)
    batch = source.poll(1, 0)
    source.commit(batch)
    status = source.status()
    assert (status["offset"], status["line"], status["commits"]) == (8, 1, 1)
    with pytest.raises(ValueError, match="not pending"):
        source.position_after(batch)
    assert source.ready()
    source.close()
    assert not source.ready()


def test_streams_a_large_file_in_chunks(tmp_path: Path) -> None:
    """200k lines read in small chunks: every line once, in order, nothing held whole.

    (Throughput is measured in ``benchmarks/bench_pipeline.py``, not asserted here.)
    """
    row = json.dumps(
        {
            "event_id": "e-000123",
            "timestamp": "2026-11-29T10:00:00Z",
            "question": "Hostel ka fee semester wise dena hai ya yearly?",
        }
    ).encode()
    n = 200_000
    path = tmp_path / "big.jsonl"
    path.write_bytes((row + b"\n") * n)
    source = FileSource(path, chunk_bytes=64 * 1024)
    count, last_line = 0, 0
    while batch := source.poll(5000, 0):
        assert batch[0].origin.line == last_line + 1
        last_line = batch[-1].origin.line or 0
        count += len(batch)
        source.commit(batch)
    assert (count, last_line) == (n, n)


@pytest.mark.parametrize("follow", [False, True])
def test_a_cut_line_is_dead_lettered_with_its_whole_size_and_sha256(
    tmp_path: Path, follow: bool
) -> None:
    """A line over ``max_line_bytes`` keeps only a prefix in memory; its dead letter says it
    was truncated, with the whole line's size and SHA-256 (computed here with hashlib over the
    line as written), as the Kafka source's too-big letters do. Read in 256-byte chunks, so
    the skipped rest spans many reads; the last line has no newline (end of input)."""
    import hashlib

    from consumers.loop import make_decoder

    long_a = b'{"question": "' + b"a" * 4_980 + b'"}'  # 4,996 bytes
    long_b = b"x" * 3_001
    good = b'{"event_id": "e1", "timestamp": "2026-11-29T10:00:00Z", "question": "hi"}'
    path = tmp_path / "log.jsonl"
    tail = b"" if follow else long_b  # follow mode emits complete lines only
    path.write_bytes(good + b"\n" + long_a + b"\n" + good.replace(b"e1", b"e2") + b"\n" + tail)
    source = FileSource(path, follow=follow, chunk_bytes=256, max_line_bytes=1_000)
    messages = drain(source) if not follow else source.poll(100, 200)
    decoded, dead = make_decoder(max_event_bytes=500)(messages)
    assert len(decoded) == 2
    source.dead_letter(dead)
    source.close()
    letters = [json.loads(line) for line in source.dlq_path.read_bytes().splitlines()]
    expected = [(2, long_a)] + ([] if follow else [(4, long_b)])
    assert len(letters) == len(expected)
    for letter, (line, whole) in zip(letters, expected, strict=True):
        assert letter["origin"]["line"] == line
        assert letter["reason"] == "too_large"
        assert letter["truncated"] is True
        assert letter["value_bytes"] == len(whole)
        assert letter["value_sha256"] == hashlib.sha256(whole).hexdigest()
        assert base64.b64decode(letter["value_b64"]) == whole[:1_001]
        assert f"message is {len(whole)} bytes" in letter["detail"]


def test_a_line_within_the_limit_has_no_truncation_fields(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b"not json\n")
    source = FileSource(path)
    source.dead_letter([DeadLetter(m, "not_json", "x") for m in drain(source)])
    source.close()
    (letter,) = [json.loads(line) for line in source.dlq_path.read_bytes().splitlines()]
    assert "truncated" not in letter and "value_bytes" not in letter


def test_letters_written_before_a_crash_are_not_written_again_on_resume(tmp_path: Path) -> None:
    """A crash after a batch's letters were written and before its position was checkpointed:
    the resumed source reads those lines again; their letters are handed on (the engine
    counts them: its count died with the checkpoint) but not written a second time."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a":1}\nbad 2\n{"a":3}\nbad 4\nbad 5\n')
    first = FileSource(path)
    batch1 = first.poll(2, 0)
    first.dead_letter([DeadLetter(batch1[1], "not_json", "x")])
    checkpointed = first.position_after(batch1)  # stored by the checkpoint
    batch2 = first.poll(3, 0)
    first.dead_letter([DeadLetter(m, "not_json", "x") for m in batch2[1:]])  # then killed
    first.close()
    resumed = FileSource(path)
    resumed.restore(checkpointed)
    again = resumed.poll(3, 0)
    assert [m.origin.line for m in again] == [3, 4, 5]
    resumed.dead_letter([DeadLetter(m, "not_json", "x") for m in again[1:]])
    resumed.dead_letter([DeadLetter(again[1], "not_json", "x")])  # a new letter: written
    lines = [json.loads(x)["origin"]["line"] for x in first.dlq_path.read_bytes().splitlines()]
    assert lines == [2, 4, 5, 4]


def test_a_closed_file_source_says_why_in_file_terms(tmp_path: Path) -> None:
    """Trial user 3: right after ``serve`` started on a file it had read to its end,
    ``/v1/status`` said "source not ready (no assignment or broker unreachable)", Kafka's
    wording. A closed file source names the file and whether it was read to its end."""
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"i":1}\n')
    done = FileSource(path)
    assert done.not_ready_reason() is None
    assert len(done.poll(10, 0)) == 1 and not done.poll(10, 0) and done.at_eof
    done.close()
    assert done.not_ready_reason() == (
        f"input file {path} read to its end; publishing the final results"
    )
    cut = FileSource(path)
    cut.close()  # before its end: the run stopped on an error
    assert cut.not_ready_reason() == f"input file {path} closed (reopened after an error)"


@pytest.mark.parametrize(
    ("value", "cut", "file", "detail"),
    [
        (b'{"q": "\xc3\xa9t\xc3\xa9"', None, "events.jsonl", "not_json: expected ',' or '}'"),
        (None, None, 'log/é "quoted".jsonl', "message value is null (tombstone)"),
        (b"\xff\xfe" * 700, (1_000_000, "ab" * 32), "big.jsonl", "message is 1400 bytes"),
        (b"", None, "tab\there", "control \x01 and \u2028 in a detail"),
    ],
)
def test_dead_letter_line_is_json_dumps_of_its_record(
    value: bytes | None, cut: tuple[int, str] | None, file: str, detail: str
) -> None:
    """The spliced line is byte for byte ``json.dumps(record, ensure_ascii=False)`` of the
    documented record, keys in order, ``truncated`` and the sizes after ``value_b64``."""
    from consumers.file_source import dead_letter_line

    letter = DeadLetter(RawMessage(value, Origin(file=file, line=7)), "not_json", detail)
    record = {
        "reason": "not_json",
        "detail": detail if cut is None else detail.replace("1400 bytes", "1000000 bytes"),
        "origin": {"file": file, "line": 7},
        "value_b64": None if value is None else base64.b64encode(value).decode("ascii"),
    }
    if cut is not None:
        record.update(truncated=True, value_bytes=cut[0], value_sha256=cut[1])
    expected = json.dumps(record, ensure_ascii=False).encode("utf-8") + b"\n"
    assert dead_letter_line(letter, cut) == expected


@pytest.mark.parametrize("last", [False, True], ids=["newline", "last-without-newline"])
def test_a_17_mb_line_read_whole_is_cut_at_16_mib(tmp_path: Path, last: bool) -> None:
    """Trial 11: line 3 of huge.jsonl (17,000,055 bytes) was dead-lettered whole, without
    ``truncated``: with the default 1 MiB reads, the read that brought its end made the whole
    line complete in the buffer, and complete lines were never checked against the limit.
    The README's rule: its first 16 MiB + 1 = 16,777,217 bytes kept, ``"truncated": true``,
    the whole size and SHA-256 (hashlib over the line as written)."""
    import hashlib

    from consumers.loop import make_decoder

    good = b'{"event_id": "e%d", "timestamp": "2026-11-29T10:00:00Z", "question": "hi"}'
    huge = b'{"event_id": "big", "question": "' + b"q" * 16_999_999 + b'"}'
    assert len(huge) == 17_000_034
    path = tmp_path / "huge.jsonl"
    tail = b"" if last else b"\n" + good % 4 + b"\n"
    path.write_bytes(good % 1 + b"\n" + good % 2 + b"\n" + huge + tail)
    source = FileSource(path)  # the defaults: 1 MiB reads, 16 MiB lines
    messages = drain(source)
    assert [(m.origin.line, len(m.value or b"")) for m in messages][2] == (3, 16_777_217)
    decoded, dead = make_decoder()(messages)
    assert len(decoded) == (2 if last else 3)
    source.dead_letter(dead)
    source.close()
    (letter,) = [json.loads(x) for x in source.dlq_path.read_bytes().splitlines()]
    assert letter["origin"]["line"] == 3 and letter["reason"] == "too_large"
    assert letter["truncated"] is True
    assert letter["value_bytes"] == 17_000_034
    assert letter["value_sha256"] == hashlib.sha256(huge).hexdigest()
    assert base64.b64decode(letter["value_b64"]) == huge[:16_777_217]
    assert "message is 17000034 bytes" in letter["detail"] or "17,000,034" in letter["detail"]
