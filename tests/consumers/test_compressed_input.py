"""A compressed or binary log is refused with what to do, not read as JSONL: a new user's
gzipped log gave exit 0, "1989 consumed, 0 processed, 1989 dead-lettered", a 1 MB dead-letter
file and an empty report."""

from __future__ import annotations

import bz2
import gzip
import lzma
import random
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from consumers.errors import SourceUnavailable
from consumers.file_source import FileSource, compression_of, wide_text_without_bom
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


def test_replay_of_binary_data_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    """Trial user 4: 20,000 random bytes replayed with exit 0, "87 consumed, 0 processed,
    87 dead-lettered" and a 37 KB dead-letter file. Seeded random bytes (a NUL byte in the
    first 8,000 is all but certain: 1 - (255/256)^8000; this seed has one) are refused up
    front, as compressed files are."""
    data = random.Random(4).randbytes(20_000)
    assert b"\x00" in data[:8000]
    path = tmp_path / "binary.bin"
    path.write_bytes(data)
    with pytest.raises(SourceUnavailable, match="is binary data, not JSONL text"):
        FileSource(path)
    result = CliRunner().invoke(main, ["replay", str(path)])
    assert result.exit_code == 2
    assert f"{path} is binary data, not JSONL text (a NUL byte in its first 8000 bytes" in (
        result.stderr
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["binary.bin"]


def test_utf16_text_is_refused_by_name_and_one_corrupt_line_is_not(tmp_path: Path) -> None:
    """A UTF-16 export of a log (Windows tools write it with a byte-order mark) is named;
    a UTF-8 log with one line of NUL bytes among JSON lines is read, the bad line
    dead-lettered (one corrupt line must not refuse the whole file)."""
    wide = tmp_path / "log16.jsonl"
    wide.write_bytes(LINES.decode("utf-8").encode("utf-16"))
    with pytest.raises(SourceUnavailable, match="is UTF-16 text, not the UTF-8 JSONL text"):
        FileSource(wide)
    mixed = tmp_path / "mixed.jsonl"
    line = LINES[: LINES.index(b"\n") + 1]
    mixed.write_bytes(line + b"\x00\x01\x02 torn write\n" + line)
    source = FileSource(mixed)
    messages = source.poll(10, 0)
    source.close()
    assert len(messages) == 3


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be", "utf-32-le", "utf-32-be"])
def test_wide_text_without_a_byte_order_mark_is_refused_by_name(
    tmp_path: Path, encoding: str
) -> None:
    """Trial user 5: a UTF-16LE log without a BOM replayed with exit 0, every line
    dead-lettered (not_json 47, not_utf8 4) and "refusals: none". Its '{' byte starts a
    "line" (the NUL after it is valid UTF-8), so the JSON-line escape hatch let it through.
    Refused up front like the BOM case, naming the byte order, and nothing is written."""
    path = tmp_path / "wide.jsonl"
    # a non-ASCII question too: 'é' is E9 00 in UTF-16LE, so the pattern holds beyond ASCII
    path.write_bytes((LINES.decode("utf-8").replace("fees?", "frais à payer?")).encode(encoding))
    assert not path.read_bytes().startswith((b"\xff\xfe", b"\xfe\xff", b"\x00\x00\xfe\xff"))
    name = encoding.upper().replace("-LE", "LE").replace("-BE", "BE")  # "UTF-16LE" etc.
    result = CliRunner().invoke(main, ["replay", str(path)])
    assert result.exit_code == 2
    assert f"{path} is {name} text (no byte-order mark" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["wide.jsonl"]


def test_nul_pattern_of_wide_text_is_not_found_in_utf8_or_binary() -> None:
    """The NUL-pattern rule calls only a regular pattern wide text: a UTF-8 line with a run of
    NULs (both parities), seeded random bytes (NULs ~1/256 at every offset) and too short a
    head are ``None``; one NUL in four at odd offsets (below half) is not UTF-16 either."""
    assert wide_text_without_bom(LINES[:80] + b"\x00" * 40 + LINES[:80]) is None
    assert wide_text_without_bom(random.Random(5).randbytes(8000)) is None
    assert wide_text_without_bom(b"{\x00") is None
    assert wide_text_without_bom(b"ab\x00cabcdabcdabcd") is None  # 1 of 8 odd bytes is NUL
    assert wide_text_without_bom("{}".encode("utf-16-le")) == "UTF-16LE"
