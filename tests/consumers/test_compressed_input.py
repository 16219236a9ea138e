"""A compressed log is refused with what to do, not read as JSONL: a new user's gzipped log
gave exit 0, "1989 consumed, 0 processed, 1989 dead-lettered", a 1 MB dead-letter file and
an empty report."""

from __future__ import annotations

import bz2
import gzip
import lzma
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from consumers.errors import SourceUnavailable
from consumers.file_source import FileSource, compression_of
from service.cli import main

LINES = b'{"event_id": "e-1", "timestamp": "2026-11-20T10:00:00Z", "question": "fees?"}\n' * 50


def _zip(path: Path) -> None:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("log.jsonl", LINES)


@pytest.mark.parametrize(
    ("name", "write", "tool"),
    [
        ("gzip", lambda p: p.write_bytes(gzip.compress(LINES)), "zcat"),
        ("bzip2", lambda p: p.write_bytes(bz2.compress(LINES)), "bzcat"),
        ("xz", lambda p: p.write_bytes(lzma.compress(LINES)), "xzcat"),
        # RFC 8878 §3.1.1: a frame starts with the magic number 0xFD2FB528, little-endian
        ("zstd", lambda p: p.write_bytes(b"\x28\xb5\x2f\xfd" + b"\x00" * 20), "zstdcat"),
        ("zip", _zip, "unzip -p"),
    ],
)
def test_compressed_files_are_refused_naming_the_format(
    tmp_path: Path, name: str, write: object, tool: str
) -> None:
    path = tmp_path / "log.jsonl.x"
    write(path)  # type: ignore[operator]
    assert compression_of(str(path)) == (name, tool)
    with pytest.raises(SourceUnavailable, match=f"is {name}-compressed, not JSONL text"):
        FileSource(path)
    assert not Path(f"{path}.dlq.jsonl").exists()


def test_plain_jsonl_and_a_missing_file_are_not_compressed(tmp_path: Path) -> None:
    plain = tmp_path / "log.jsonl"
    plain.write_bytes(LINES)
    assert compression_of(str(plain)) is None
    FileSource(plain).close()
    assert compression_of(str(tmp_path / "missing.jsonl")) is None
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    assert compression_of(str(empty)) is None


def test_replay_of_a_gzipped_log_exits_2_with_what_to_do(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl.gz"
    path.write_bytes(gzip.compress(LINES))
    result = CliRunner().invoke(main, ["replay", str(path)])
    assert result.exit_code == 2
    assert f"is gzip-compressed, not JSONL text: decompress it first (e.g. `zcat {path} | " in (
        result.stderr
    )
    assert not Path(f"{path}.dlq.jsonl").exists()
