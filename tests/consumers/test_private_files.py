"""Dead-letter files keep the raw bytes of refused events (personal data, by design), so they
are created readable and writable by their owner only (0600), whatever the process umask
(fresh-user trial: they were created 0644, readable by every local user). The mode is checked
under umask 0, where a file created without an explicit mode would be 0666, and under the
usual 022 (0644)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.file_source import FileSource
from consumers.jsonl_dead_letters import JsonlDeadLetters
from service.files.append_only import append_whole, open_append
from service.files.private import PRIVATE_MODE


@pytest.fixture(params=[0o000, 0o022], ids=["umask-000", "umask-022"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    old = os.umask(request.param)
    try:
        yield int(request.param)
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _letter(line: int) -> DeadLetter:
    message = RawMessage(value=b"alice@example.com", origin=Origin(file="x", line=line))
    return DeadLetter(message=message, reason="not_json", detail="not JSON")


def test_private_mode_is_owner_read_write() -> None:
    assert PRIVATE_MODE == stat.S_IRUSR | stat.S_IWUSR == 0o600


def test_the_file_sources_dead_letters_are_0600(tmp_path: Path, umask: int) -> None:
    log = tmp_path / "log.jsonl"
    log.write_bytes(b'{"ok": 1}\nnot json\n')
    source = FileSource(log)
    source.dead_letter([_letter(2)])
    source.sync_dead_letters()
    source.close()
    assert source.dlq_path == tmp_path / "log.jsonl.dlq.jsonl"
    assert _mode(source.dlq_path) == 0o600
    assert source.dlq_path.read_bytes().count(b"\n") == 1


def test_http_ingest_dead_letters_are_0600(tmp_path: Path, umask: int) -> None:
    dlq = JsonlDeadLetters(tmp_path / "state" / "goldwatch.dlq.jsonl")
    dlq.write([_letter(1)])
    dlq.write([_letter(2)])
    assert _mode(dlq.path) == 0o600
    assert dlq.path.read_bytes().count(b"\n") == 2


def test_appending_keeps_the_content_and_an_existing_files_mode(tmp_path: Path) -> None:
    path = tmp_path / "dlq.jsonl"
    path.write_bytes(b"first\n")
    path.chmod(0o640)  # an operator's choice for a file that exists already is kept
    fd = open_append(path)
    try:
        append_whole(fd, b"second\n")
    finally:
        os.close(fd)
    assert path.read_bytes() == b"first\nsecond\n"
    assert _mode(path) == 0o640
