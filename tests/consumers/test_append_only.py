"""The shared append mechanism (service/files/append_only.py): whatever fails — a short write, the
write, the fsync — the file holds what it held before, or that plus the whole record; a torn
tail is cut or refused; nothing is written after a failure by a close.

Failures are injected by replacing ``os.write``/``os.fsync`` in this module's namespace only
(a unit test of one module); the real ENOSPC on a tmpfs is in
tests/reliability/test_append_faults.py.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

import pytest

import service.files.append_only as append_only
from service.files.append_only import (
    AppendOnlyFile,
    TornTail,
    append_whole,
    open_append,
    prepare_tail,
    torn_tail,
)
from service.files.regular import describe_os_error

BEFORE = b'{"id": 1}\n{"id": 2}\n'
RECORD = b'{"id": 3, "text": "' + b"x" * 5000 + b'"}\n'


def _file(tmp_path: Path, content: bytes = BEFORE) -> Path:
    path = tmp_path / "f.jsonl"
    path.write_bytes(content)
    return path


def test_a_short_write_then_enospc_leaves_the_file_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path)
    real_write = os.write
    calls = []

    def short_then_full(fd: int, data: bytes) -> int:
        calls.append(len(data))
        if len(calls) == 1:
            return real_write(fd, bytes(data[:100]))  # the disk had room for 100 bytes
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(append_only.os, "write", short_then_full)
    fd = open_append(path)
    try:
        with pytest.raises(OSError) as info:
            append_whole(fd, RECORD)
    finally:
        os.close(fd)  # a plain descriptor: closing writes nothing
    assert info.value.errno == errno.ENOSPC
    assert calls == [len(RECORD), len(RECORD) - 100]  # the rest was tried, not dropped
    assert path.read_bytes() == BEFORE


def test_a_failed_fsync_cuts_the_written_record_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path)
    real_fsync = os.fsync
    failed = []

    def fsync_fails_once(fd: int) -> None:
        if not failed:
            failed.append(fd)
            raise OSError(errno.EIO, "Input/output error")
        real_fsync(fd)

    monkeypatch.setattr(append_only.os, "fsync", fsync_fails_once)
    fd = open_append(path)
    try:
        with pytest.raises(OSError):
            append_whole(fd, RECORD)
        assert path.read_bytes() == BEFORE
        assert append_whole(fd, RECORD) == len(BEFORE) + len(RECORD)  # a retry is whole
    finally:
        os.close(fd)
    assert path.read_bytes() == BEFORE + RECORD


def test_short_writes_are_continued_until_the_record_is_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _file(tmp_path)
    real_write = os.write
    monkeypatch.setattr(append_only.os, "write", lambda fd, data: real_write(fd, data[:777]))
    fd = open_append(path)
    try:
        append_whole(fd, RECORD)
    finally:
        os.close(fd)
    assert path.read_bytes() == BEFORE + RECORD


def test_torn_tail_finds_the_unterminated_last_line_and_its_number(tmp_path: Path) -> None:
    fd = open_append(_file(tmp_path, BEFORE + b'{"id": 3, "te'))
    try:
        assert torn_tail(fd) == (b'{"id": 3, "te', 3)
    finally:
        os.close(fd)
    fd = open_append(_file(tmp_path, BEFORE))
    try:
        assert torn_tail(fd) == (b"", 0)
    finally:
        os.close(fd)


def test_a_torn_tail_is_refused_naming_the_line_not_the_content(tmp_path: Path) -> None:
    path = _file(tmp_path, BEFORE + b'{"id": 3, "secret": "zq-77')
    fd = open_append(path)
    try:
        with pytest.raises(TornTail) as info:
            prepare_tail(fd, path, "refuse")
    finally:
        os.close(fd)
    assert info.value.line == 3 and info.value.size == len(b'{"id": 3, "secret": "zq-77')
    assert "line 3" in str(info.value) and "zq-77" not in str(info.value)
    assert path.read_bytes() == BEFORE + b'{"id": 3, "secret": "zq-77'


def test_a_torn_tail_is_cut_and_a_whole_json_last_line_completed(tmp_path: Path) -> None:
    path = _file(tmp_path, BEFORE + b'{"id": 3, "te')
    fd = open_append(path)
    try:
        append_whole(fd, prepare_tail(fd, path, "cut") + b'{"id": 4}\n')
    finally:
        os.close(fd)
    assert path.read_bytes() == BEFORE + b'{"id": 4}\n'
    path = _file(tmp_path, BEFORE + b'{"id": 3}')  # a hand edit without the last newline
    fd = open_append(path)
    try:
        append_whole(fd, prepare_tail(fd, path, "refuse") + b'{"id": 4}\n')
    finally:
        os.close(fd)
    assert path.read_bytes() == BEFORE + b'{"id": 3}\n{"id": 4}\n'


def test_append_only_file_cuts_unsynced_records_when_the_sync_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "dlq.jsonl"
    letters = AppendOnlyFile(path)
    letters.append(b'{"n": 1}\n')  # synced
    letters.append(b'{"n": 2}\n', sync=False)

    def fsync_fails(fd: int) -> None:
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patch:
        patch.setattr(append_only.os, "fsync", fsync_fails)
        with pytest.raises(OSError):
            letters.sync()
    assert path.read_bytes() == b'{"n": 1}\n'
    letters.append(b'{"n": 2}\n')
    letters.close()
    assert path.read_bytes() == b'{"n": 1}\n{"n": 2}\n'
    assert stat.S_IMODE(path.stat().st_mode) & 0o077 == 0  # created 0600: raw event bytes


def test_a_fifo_gets_a_plain_error_not_a_hang(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OSError) as info:
        open_append(fifo)
    assert info.value.errno == errno.EINVAL and "not a regular file" in str(info.value)
    assert info.value.filename == str(fifo)  # the CLI's message names it (a trial's
    # `eval --history /dev/null` said only "[Errno 22] not a regular file")


def test_a_device_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(OSError) as info:
        open_append("/dev/null")
    assert (info.value.errno, info.value.filename) == (errno.EINVAL, "/dev/null")
    assert describe_os_error(info.value) == (
        "/dev/null: not a regular file (a FIFO, device, socket or folder)"
    )
