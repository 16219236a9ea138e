"""A :class:`~consumers.base.Source` over a JSONL file or stdin (``-``).

One :class:`~consumers.base.RawMessage` per line: ``value`` is the line's bytes without the
``\\n`` (a ``\\r`` before it is kept; JSON treats it as whitespace), ``origin`` is
``Origin(file=<path or "-">, line=<1-based>)``. A blank line (empty or whitespace only) is
handed out as a :class:`~consumers.base.BlankLine` (``value`` ``None``): it holds no data, so
it is neither an event nor a dead letter, but it is counted (``blank_lines``) and its
position committed like any line's. A last line without ``\\n`` is emitted at end of input,
except in ``follow`` mode, where only complete lines are emitted and the rest waits for its
newline.

The file is read in binary chunks (``chunk_bytes``), never wholly: memory is bounded by the
chunk plus the longest line, and a line longer than ``max_line_bytes`` is cut to its first
``max_line_bytes + 1`` bytes (so the decoder dead-letters it as ``too_large``). Its dead letter
keeps that prefix and says so, as the Kafka source's too-big letters do: ``"truncated": true``,
the whole line's size (``value_bytes``) and the SHA-256 of all of it (``value_sha256``),
hashed while the rest is skipped; the detail gives the whole line's size.

Position and resume: :meth:`FileSource.position_after` gives ``{"offset": bytes, "line": n,
"head": sha256-hex of the first ≤1024 bytes}``; the poll loop stores it in the state store
under :attr:`FileSource.state_key` at each checkpoint and hands it back to
:meth:`FileSource.restore` on restart. A file now smaller than the stored offset, or whose
head changed, was truncated or replaced: reading starts over from the top, with a warning.

Dead letters are appended to ``dlq_path`` — the service's default is one file per state,
:func:`state_dead_letters` — else to ``<file>.dlq.jsonl`` (``stdin.dlq.jsonl`` for stdin) as
``{"reason", "detail", "origin": {"file", "line"}, "value_b64"}``. Each batch's letters are
written and flushed to the operating system at once (they survive a crash of the process);
the fsync that makes them survive a power loss is :meth:`FileSource.sync_dead_letters`, which
the poll loop calls before every checkpoint, so it is paid once per checkpoint (about 3-4 ms
on a plain disk) rather than once per batch, and still precedes the checkpoint that stores
the file position past those lines.
"""

from __future__ import annotations

import base64
import collections
import hashlib
import json
import logging
import os
import select
import sys
import time
from array import array
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, BinaryIO

from consumers.base import BlankLine, DeadLetter, Origin, RawMessage, message_slot_setters
from consumers.errors import SourceUnavailable
from service.files.append_only import AppendOnlyFile, file_mark, lines_after
from service.pacing import TokenBucket

#: Most cut lines whose size and digest wait for their dead letter (one per overlong line
#: polled and not yet dead-lettered: a few at most; the bound only guards memory).
MAX_CUT_LINES = 1_024

log = logging.getLogger(__name__)

STDIN = "-"
HEAD_BYTES = 1024


#: Magic numbers of compressed files: (leading bytes, format, the tool that writes it to stdout).
_COMPRESSED = (
    (b"\x1f\x8b", "gzip", "zcat"),
    (b"BZh", "bzip2", "bzcat"),
    (b"\xfd7zXZ\x00", "xz", "xzcat"),
    (b"\x28\xb5\x2f\xfd", "zstd", "zstdcat"),
    (b"PK\x03\x04", "zip", "unzip -p"),
)


def state_keys(path: str | Path) -> tuple[str | None, str | None]:
    """The state keys of a file source on ``path``: its position's and its run mark's
    (:attr:`FileSource.state_key`, :attr:`FileSource.run_mark_key`; ``None`` for stdin)."""
    if str(path) == STDIN:
        return None, None
    resolved = Path(path).resolve()
    return f"source/file:{resolved}", f"source/file-run:{resolved}"


def state_dead_letters(path: str | Path, stored: Callable[[str], Any], own: Path) -> Path:
    """The dead-letter file of a file source on ``path`` reading into a state that has no
    configured one: the file the state's stored position (else its run mark) names (its
    ``dlq_path``, stored from session 51 on), so a restart keeps the file its letters are
    counted in; ``<path>.dlq.jsonl`` for a position or run mark stored before then (the
    default of those versions: its letters, and those a kill left after the last checkpoint,
    are there, so it is read back and appended to as before); ``own`` (the service's
    ``<state>.dlq.jsonl``, beside the state) for a fresh state or stdin, whose position is
    not kept. Two states on one log so get two files, as a file's run marks and positions
    need (trial 50, L2: every state appended to ``<log>.dlq.jsonl``).

    ``stored``: the state's value of a key (``None``: none).
    """
    for key in state_keys(path):
        mark = stored(key) if key is not None else None
        if isinstance(mark, dict):
            named = mark.get("dlq_path")
            return Path(named) if isinstance(named, str) and named else Path(f"{path}.dlq.jsonl")
    return own


def compression_of(path: str) -> tuple[str, str] | None:
    """``(format, tool)`` when the file at ``path`` starts with a compressed format's magic
    number (gzip RFC 1952, bzip2, xz, zstd RFC 8878, zip), else ``None`` (also when it cannot
    be read: opening it says why). Such a file read as JSONL is a dead letter per "line",
    and a replay of it looks like a run that found nothing."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(6)
    except OSError:
        return None
    for magic, name, tool in _COMPRESSED:
        if head.startswith(magic):
            return name, tool
    return None


#: Bytes of a file's start looked at for a NUL byte: git's rule for "binary" (``FIRST_FEW_BYTES``
#: = 8000 in ``xdiff-interface.c`` ``buffer_is_binary``).
BINARY_HEAD_BYTES = 8000

#: Byte-order marks of UTF-16 and UTF-32 text (Unicode §23.8): text, but not the UTF-8 a JSONL
#: log must be, and NUL-laden when read as bytes.
_WIDE_BOMS = (
    (b"\xff\xfe\x00\x00", "UTF-32"), (b"\x00\x00\xfe\xff", "UTF-32"),
    (b"\xff\xfe", "UTF-16"), (b"\xfe\xff", "UTF-16"),
)  # fmt: skip


def binary_problem(path: str) -> str | None:
    """Why the file at ``path`` is not JSONL text, when its first :data:`BINARY_HEAD_BYTES`
    bytes say so, else ``None`` (also when it cannot be read: opening it says why).

    A file is binary when that head holds a NUL byte (git's rule; JSON text never holds
    one, RFC 8259 §7) and not one complete line in it is a UTF-8 JSON object's start
    (``{``): a log with one corrupt line keeps being read, its bad lines dead-lettered.
    UTF-16/32 text (by its byte-order mark, or without one by its NUL pattern:
    :func:`wide_text_without_bom`) is named as such. Read as JSONL, a binary file
    is a dead letter per "line" and its replay looks like a run that found nothing.

    >>> import os, tempfile
    >>> with tempfile.NamedTemporaryFile(delete=False) as f:
    ...     _ = f.write(bytes(range(256)) * 4)
    >>> binary_problem(f.name)
    'binary data, not JSONL text (a NUL byte in its first 8000 bytes, no JSON line)'
    >>> os.unlink(f.name)
    """
    try:
        with open(path, "rb") as handle:
            head = handle.read(BINARY_HEAD_BYTES)
    except OSError:
        return None
    for bom, name in _WIDE_BOMS:
        if head.startswith(bom):
            return f"{name} text, not the UTF-8 JSONL text expected"
    if b"\x00" not in head:
        return None
    wide = wide_text_without_bom(head)
    if wide is not None:
        return (f"{wide} text (no byte-order mark: NUL bytes in a regular pattern), "
                "not the UTF-8 JSONL text expected")  # fmt: skip
    lines = head.split(b"\n")[:-1]  # complete lines only (the last may be cut)
    if any(_json_line(line) for line in lines):
        return None
    return (f"binary data, not JSONL text (a NUL byte in its first {BINARY_HEAD_BYTES} "
            "bytes, no JSON line)")  # fmt: skip


#: Share of the bytes at one position modulo 2 (or 4) that must be NUL, and most share at the
#: others, for :func:`wide_text_without_bom` to call a head UTF-16/32 text.
_WIDE_NUL_SHARE, _NARROW_NUL_SHARE = 0.5, 0.02


def wide_text_without_bom(head: bytes) -> str | None:
    """``"UTF-16LE"``, ``"UTF-16BE"``, ``"UTF-32LE"`` or ``"UTF-32BE"`` when ``head`` (a file's
    first bytes, no byte-order mark) is that encoding by its NUL pattern, else ``None``.

    JSON text never holds a NUL (RFC 8259 §7), but the ASCII characters of a JSON object
    (its braces, quotes, keys) encoded as UTF-16LE are ``X 00``, as UTF-32LE ``X 00 00 00``
    (Unicode §3.10). So a UTF-16LE head has NULs at (at least half of) its odd offsets and
    almost none (at most 2%) at its even ones, UTF-16BE the mirror; UTF-32LE has them at
    (half of) offsets 4k+2 and 4k+3 and almost none at 4k, UTF-32BE the mirror. A UTF-8 log
    with a torn line of NULs, or random binary data, has NULs at both parities and is not
    matched (the same idea as the heuristics of ``file(1)``'s ``encoding.c`` and ICU's
    charset detector, with thresholds of our own).

    :param head: at least 4 bytes to say anything (fewer give ``None``); the share is taken
        over the first ``len(head) // 4 * 4`` bytes.
    """
    size = len(head) // 4 * 4
    if size == 0:
        return None
    quarter = size // 4
    share = [head[r:size:4].count(0) / quarter for r in range(4)]

    def wide(*at: int) -> bool:
        return all(share[r] >= _WIDE_NUL_SHARE for r in at)

    def narrow(*at: int) -> bool:
        return all(share[r] <= _NARROW_NUL_SHARE for r in at)

    if wide(2, 3) and narrow(0):
        return "UTF-32LE"
    if wide(0, 1) and narrow(3):
        return "UTF-32BE"
    if wide(1, 3) and narrow(0, 2):
        return "UTF-16LE"
    if wide(0, 2) and narrow(1, 3):
        return "UTF-16BE"
    return None


def _json_line(line: bytes) -> bool:
    try:
        return line.decode("utf-8").lstrip().startswith("{")
    except UnicodeDecodeError:
        return False


class FileSource:
    """JSONL file (or stdin) source; see the module docstring for the line and position rules.

    :param path: the JSONL file, or ``"-"`` for stdin.
    :param follow: tail the file: at end of file, ``poll`` waits up to its timeout for more.
    :param rate: most events per second (a token bucket with a one-second burst), for demos;
        ``None`` reads as fast as possible.
    :param dlq_path: dead-letter JSONL file (default ``<path>.dlq.jsonl``).
    :param chunk_bytes: bytes per read.
    :param max_line_bytes: longer lines are cut (see module docstring).
    :param stream: binary stream to read instead of ``sys.stdin.buffer`` when ``path == "-"``.
    :raises SourceUnavailable: the file does not exist or cannot be opened, or it is a
        compressed file (:func:`compression_of`) or binary data (:func:`binary_problem`).
    """

    def __init__(
        self,
        path: str | Path,
        *,
        follow: bool = False,
        rate: float | None = None,
        dlq_path: str | Path | None = None,
        chunk_bytes: int = 1 << 20,
        max_line_bytes: int = 16 << 20,
        poll_interval_s: float = 0.05,
        stream: BinaryIO | None = None,
    ) -> None:
        self.path = str(path)
        self.is_stdin = self.path == STDIN
        self.name = "stdin" if self.is_stdin else "file"
        self.follow = follow
        #: State key of the position; of the run mark (:meth:`run_mark`), apart from the
        #: position's key so a version without run marks finds no position rather than a
        #: position it cannot read
        self.state_key, self.run_mark_key = state_keys(path)
        self.dlq_path = Path(
            dlq_path or ("stdin.dlq.jsonl" if self.is_stdin else f"{path}.dlq.jsonl")
        )
        self._dlq_name = str(self.dlq_path.absolute())  # stored with positions and run marks
        self._max_line = max_line_bytes
        self._poll_interval_s = poll_interval_s
        # starts with one token, not full: the first poll reads one line, then ``rate``/s
        self._bucket = TokenBucket(rate, tokens=1.0) if rate else None
        self._input = self._open(stream, chunk_bytes)
        self._make = message_factory(self.path)
        self._dlq: AppendOnlyFile | None = None
        self._unsynced = False  # dead letters written but not yet fsynced
        #: SHA-256 of dead-letter lines written after the last checkpoint (or after the start
        #: of a run that died before its first) by a process that died before it: when their
        #: lines are read again, those letters are not written a second time
        #: (:meth:`restore`). Forgotten once a commit passes their last line
        #: (:attr:`_on_disk_through`: every letter of those lines is then written) or the
        #: input is rotated.
        self._on_disk: collections.Counter[bytes] = collections.Counter()
        self._on_disk_through = 0
        #: the input's name as the dead process wrote it in its letters' ``origin.file``
        #: (the state key is the resolved path; a restart may spell it otherwise)
        self._on_disk_as = self.path
        self._reset(offset=0, line=0)
        self.commits = 0
        self.dead_letters = 0
        self._committed: dict[str, Any] = {"offset": 0, "line": 0}

    def _open(self, stream: BinaryIO | None, chunk_bytes: int) -> InputStream:
        if self.is_stdin:
            return InputStream.over(stream or sys.stdin.buffer, chunk_bytes)
        try:
            opened = InputStream.open(self.path, chunk_bytes)
        except OSError as exc:
            raise SourceUnavailable(f"cannot open {self.path}: {exc.strerror}") from exc
        compressed = compression_of(self.path)
        if compressed is not None:
            opened.close()
            name, tool = compressed
            raise SourceUnavailable(
                f"{self.path} is {name}-compressed, not JSONL text: decompress it first "
                f"(e.g. `{tool} {self.path} | goldwatch replay -`)"
            )
        problem = binary_problem(self.path)
        if problem is not None:
            opened.close()
            raise SourceUnavailable(
                f"{self.path} is {problem}: give a JSONL file, one UTF-8 JSON object a line"
            )
        return opened

    def _reset(self, offset: int, line: int) -> None:
        self._buf = b""
        self._pos = 0  # index in _buf of the first unconsumed byte
        self._buf_start = offset  # file offset of _buf[0]
        self._line = line  # last line number read
        self._ends = array("q")  # end offset of lines _ends_first.. _line
        self._ends_first = line + 1
        self._oversized: bytes | None = None  # prefix of a too-long line being skipped
        self._over_hash = hashlib.sha256()  # of all of the too-long line being skipped
        self._over_bytes = 0
        #: line number -> (whole size, sha256 hex) of cut lines not yet dead-lettered
        self._cut_lines: dict[int, tuple[int, str]] = {}
        self._at_eof = False

    # -- the Source port -------------------------------------------------------------------

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        """Return up to ``max_records`` lines as messages, waiting at most ``timeout_ms``.

        Returns ``[]`` at end of input (check :attr:`at_eof`) or, in follow mode / on a pipe,
        when nothing complete arrived in time.
        """
        deadline = time.monotonic() + timeout_ms / 1000
        limit = self._bucket.wait(max_records, deadline) if self._bucket else max_records
        out = self._take(limit) if limit else []
        while not out and limit and self._should_wait() and time.monotonic() < deadline:
            time.sleep(max(0.0, min(self._poll_interval_s, deadline - time.monotonic())))
            if self.follow and self._at_eof:
                self._check_rotation()
            out = self._take(limit)
        if self._bucket:
            self._bucket.spend(len(out))
        return out

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        """Append ``letters`` to :attr:`dlq_path` as JSON lines, all of them or none (a failed
        write is cut off again: :class:`service.files.append_only.AppendOnlyFile`).

        They are on disk after :meth:`sync_dead_letters` (the poll loop calls it before each
        checkpoint). :raises OSError: the file cannot be opened or written.
        """
        if not letters:
            return
        if self._dlq is None:
            self._dlq = AppendOnlyFile(self.dlq_path)  # 0600: raw bytes of events
        cut = self._cut_lines
        lines = [
            dead_letter_line(letter, cut.get(letter.message.origin.line or 0) if cut else None)
            for letter in letters
        ]
        if self._on_disk:  # written before a crash, after the position resumed from
            lines = self._not_on_disk(letters, lines)
        self._dlq.append(b"".join(lines), sync=False)  # whole, or not at all
        if cut:
            for letter in letters:
                cut.pop(letter.message.origin.line or 0, None)
        self._unsynced = True
        self.dead_letters += len(letters)

    def sync_dead_letters(self) -> None:
        """fsync the dead letters written since the last call (a no-op when there are none).

        :raises OSError: the fsync failed; the letters may be lost, so nothing after them may
            be committed.
        """
        if self._unsynced and self._dlq is not None:
            self._dlq.sync()  # a failed sync cuts the unsynced letters off again
        self._unsynced = False

    def commit(self, messages: Sequence[RawMessage]) -> None:
        """Mark everything up to the last of ``messages`` (in read order) as done."""
        if not messages:
            return
        self._committed = self.position_after(messages)
        if self._on_disk and self._committed["line"] >= self._on_disk_through:
            self._forget_on_disk()  # the catch-up has passed every letter read back (a
            # batch's letters may come in more than one call: decoder's, then a stage's)
        drop = self._committed["line"] - self._ends_first + 1
        if drop > 0:
            del self._ends[:drop]
            self._ends_first += drop
        self.commits += 1

    def status(self) -> dict[str, Any]:
        """Committed and read positions, end-of-input flag, counts."""
        return {
            "source": self.name,
            "path": self.path,
            "follow": self.follow,
            "offset": self._committed["offset"],
            "line": self._committed["line"],
            "read_offset": self._buf_start + self._pos,
            "read_line": self._line,
            "at_eof": self._at_eof,
            "commits": self.commits,
            "commit_failures": 0,
            "dead_letters": self.dead_letters,
            "dlq_path": str(self.dlq_path),
        }

    def ready(self) -> bool:
        """True while the input is open."""
        return not self._input.closed

    def not_ready_reason(self) -> str | None:
        """Why :meth:`ready` is false (names the file), or ``None`` while the input is open.

        The poll loop closes the input when its run ends: read to its end (a file not
        followed; ``serve`` then publishes the final results and reports the input finished)
        or stopped by an error (``serve`` reopens it)."""
        if not self._input.closed:
            return None
        if self._at_eof:
            return f"input file {self.path} read to its end; publishing the final results"
        return f"input file {self.path} closed (reopened after an error)"

    def close(self) -> None:
        """Close the input (unless it is stdin) and the dead-letter file; commits nothing."""
        self._input.close()
        if self._dlq is not None:
            self._dlq.close()
            self._dlq = None

    # -- resume ----------------------------------------------------------------------------

    @property
    def at_eof(self) -> bool:
        """True when the last read reached end of input with no complete line left."""
        return self._at_eof

    def position_after(self, messages: Sequence[RawMessage]) -> dict[str, Any]:
        """Return the resume position after the last of ``messages`` (read order).

        :raises ValueError: the message's line was already committed or never read.
        """
        line = messages[-1].origin.line or 0
        index = line - self._ends_first
        if not 0 <= index < len(self._ends):
            raise ValueError(f"line {line} of {self.path} is not pending")
        offset = self._ends[index]
        return {"offset": offset, "line": line, "head": self._input.head_hash(offset),
                "dlq": file_mark(self.dlq_path), "dlq_path": self._dlq_name,
                "file": self.path}  # fmt: skip

    def run_mark(self) -> dict[str, Any]:
        """The run mark to store, durably, before the first dead letter of a run that started
        without a stored position (a fresh state), under :attr:`run_mark_key`::

            {"dlq": {"dev", "ino", "size"}, "dlq_path": path, "file": name,
             "input": {"dev", "ino", "head_bytes", "head"}}

        ``dlq``: the dead-letter file's identity and size now
        (:func:`service.files.append_only.file_mark`; the file is created first, empty, so
        its identity is known); ``dlq_path``: its absolute path (which file a restart
        without a configured one writes to: :func:`state_dead_letters`); ``file``: this
        input's name as its letters give it (``origin.file``); ``input``: the input file's
        ``st_dev``/``st_ino`` and the SHA-256 (hex) of its first ``head_bytes`` bytes
        (``min(size, 1024)``, the head a stored position holds). A restart that finds it
        (no checkpoint followed: a kill -9 before the first) reads back the letters appended
        after that size, if the input and the dead-letter file are the same files
        (:meth:`resume_run`).

        :raises OSError: the dead-letter file cannot be created.
        """
        if self._dlq is None:
            self._dlq = AppendOnlyFile(self.dlq_path)  # 0600: raw bytes of events
        self._dlq.append(b"")  # creates it: a mark of a missing file would fit any file
        return {"dlq": file_mark(self.dlq_path), "dlq_path": self._dlq_name, "file": self.path,
                "input": self._input.identity()}  # fmt: skip

    def resume_run(self, mark: Any) -> bool:
        """Take up a run mark found at start (:meth:`run_mark`; call after
        :meth:`restore` ``(None)``): when its input is this file (same ``st_dev``/``st_ino``,
        same head) and its dead-letter file is :attr:`dlq_path` (same ``st_dev``/``st_ino``,
        not shorter), read back the letters of this input after it, so the letters a run
        killed before its first checkpoint wrote are counted again but not written again.

        Returns:
            ``True`` when the mark was taken up (it stays the run's mark); ``False`` when
            there is none, or it is another input's or another dead-letter file's (an input
            replaced, a file rotated or deleted before the restart): nothing is read back,
            and this run needs a mark of its own.
        """
        if self.is_stdin or not isinstance(mark, dict):
            return False
        dlq, identity = mark.get("dlq"), mark.get("input")
        if not isinstance(dlq, dict) or not isinstance(identity, dict):
            return False
        now = file_mark(self.dlq_path)
        if dlq.get("dev") is None or (dlq.get("dev"), dlq.get("ino")) != (now["dev"], now["ino"]):
            log.info("%s is not the dead-letter file of the run mark: nothing read back",
                     self.dlq_path)  # fmt: skip
            return False
        if now["size"] < int(dlq.get("size") or 0) or not self._input.is_same(identity):
            log.info("%s or its dead-letter file is not the run mark's: nothing read back",
                     self.path)  # fmt: skip
            return False
        self._recognise_written(dlq, mark.get("file"))
        return True

    @property
    def reads_back(self) -> bool:
        """True while letters read back at start wait for their lines (:meth:`restore`)."""
        return bool(self._on_disk)

    def restore(self, state: dict[str, Any] | None) -> None:
        """Resume from a stored position (``None``: from the top). Call before :meth:`poll`.

        Dead letters already in :attr:`dlq_path` for the lines read again are not written a
        second time (each is counted again: the count died with the checkpoint). Only the
        letters of a process that died before a checkpoint counted them are read back: the
        whole lines after the ``dlq`` mark of the stored position (written after the last
        checkpoint), or, without a position, after the run mark of a run killed before its
        first checkpoint (:meth:`resume_run`). Of those, only letters of this input
        (``origin.file`` as the dead run named it) are kept, and a letter is skipped only
        when it matches one of them exactly — same line number, reason, detail and bytes —
        until a checkpoint passes the last of their lines or the input is rotated; each
        read-back line skips one letter at most. Without a position nor a run mark (a fresh
        state) nothing is read back: every letter is written (trial 49, M1). A torn last
        line (a kill mid-append) is cut off here, and its letter written again."""
        if self.is_stdin:
            return
        if not state or "offset" not in state:
            self._recognise_written(None, None)  # nothing to read back; a torn tail cut
            return
        offset, line = int(state["offset"]), int(state["line"])
        size = self._input.size()
        if size < offset:
            log.warning(
                "%s is smaller (%d B) than its stored position (%d B): truncated or "
                "rotated, reading from the top",
                self.path,
                size,
                offset,
            )
            return
        if state.get("head") != self._input.head_hash(offset):
            log.warning(
                "%s changed before byte %d (replaced or rotated): reading from the top",
                self.path,
                offset,
            )
            return
        self._input.seek(offset)
        self._reset(offset, line)
        self._committed = {"offset": offset, "line": line, "head": state.get("head")}
        log.info("resuming %s at line %d (byte %d)", self.path, line, offset)
        # letters of the lines after the position, written before a crash: not again
        self._recognise_written(state.get("dlq"), state.get("file"))

    def _recognise_written(self, mark: Any, written_as: Any) -> None:
        """Remember the dead-letter lines of this input after ``mark`` (:func:`file_mark`;
        ``None``: none) so :meth:`dead_letter` does not write them again, and cut a torn
        last line off the file (its letter is written again when its line is).
        ``written_as``: the input's name in those letters (``None``: :attr:`path`)."""
        self._on_disk_as = written_as if isinstance(written_as, str) else self.path
        self._forget_on_disk()
        for raw in lines_after(self.dlq_path, mark):
            origin = _origin_of(raw)
            if origin is None or origin[0] != self._on_disk_as:
                continue  # another input's letter, HTTP ingest's, or unreadable
            self._on_disk[hashlib.sha256(raw + b"\n").digest()] += 1
            self._on_disk_through = max(self._on_disk_through, origin[1])
        if self._on_disk:
            log.info("%d dead letters in %s are from lines read again: they are counted "
                     "again but not written again", sum(self._on_disk.values()),
                     self.dlq_path)  # fmt: skip
        if self._dlq is None and self.dlq_path.is_file():
            self._dlq = AppendOnlyFile(self.dlq_path)  # opening it cuts a torn tail
            self._dlq.append(b"")

    def _forget_on_disk(self) -> None:
        self._on_disk.clear()
        self._on_disk_through = 0

    def _not_on_disk(self, letters: Sequence[DeadLetter], lines: list[bytes]) -> list[bytes]:
        """``lines`` (of ``letters``) without those read back by :meth:`restore`; each
        read-back line is used once. Compared as the dead run wrote them (its name of the
        input, :attr:`_on_disk_as`)."""
        kept: list[bytes] = []
        renamed = self._on_disk_as != self.path
        cut = self._cut_lines
        for letter, line in zip(letters, lines, strict=True):
            same = line
            if renamed:
                at = letter.message.origin.line or 0
                same = dead_letter_line(letter, cut.get(at) if cut else None, self._on_disk_as)
            if not _take(self._on_disk, same):
                kept.append(line)
        return kept

    # -- reading ---------------------------------------------------------------------------

    def _should_wait(self) -> bool:
        return self.follow or not self._at_eof

    def _check_rotation(self) -> None:
        if self._input.replaced(self._buf_start + len(self._buf)):
            log.warning("%s was truncated or rotated: reading the new file from the top", self.path)
            self._forget_on_disk()  # its line numbers start again: other lines, other letters
            self._input = self._input.reopen()
            self._reset(offset=0, line=0)

    def _fill(self) -> bool:
        """Append one chunk to the buffer; ``False`` when no bytes came (EOF or no data yet)."""
        chunk = self._input.read()
        if not chunk:
            self._at_eof = chunk is not None
            return False
        self._at_eof = False
        self._buf = self._buf[self._pos :] + chunk
        self._buf_start += self._pos
        self._pos = 0
        return True

    def _take(self, limit: int) -> list[RawMessage]:
        out: list[RawMessage] = []
        while len(out) < limit:
            if self._scan(out, limit):
                continue
            if len(self._buf) - self._pos > self._max_line:
                self._cut_overlong()
            if self._fill():
                continue
            tail = self._tail_line()
            if tail is None:
                break
            self._line += 1
            self._ends.append(tail[1])
            if tail[0] and not tail[0].isspace():
                out.append(self._make(tail[0], self._line))
            else:
                out.append(self._blank(self._line))
        return out

    def _blank(self, line: int) -> RawMessage:
        """The :class:`~consumers.base.BlankLine` of line ``line`` (rare: the constructor)."""
        return BlankLine(None, Origin(file=self.path, line=line))

    def _scan(self, out: list[RawMessage], limit: int) -> bool:
        """Move complete buffered lines into ``out`` (up to ``limit``); False if there were none.

        The hot loop: everything it touches is a local.
        """
        buf, pos, base, line = self._buf, self._pos, self._buf_start, self._line
        make, append, ends_append, find = self._make, out.append, self._ends.append, buf.find
        first_line, room = line, limit - len(out)
        if self._oversized is not None:
            nl = find(b"\n", pos)
            if nl < 0:
                return False
            self._end_overlong(buf[pos:nl], line + 1)
            pos, line = nl + 1, line + 1
            ends_append(base + pos)
            append(make(self._oversized, line))
            self._oversized, room = None, room - 1
        max_line = self._max_line
        while room > 0:
            nl = find(b"\n", pos)
            if nl < 0:
                break
            value = buf[pos:nl]
            pos, line = nl + 1, line + 1
            ends_append(base + pos)
            if len(value) > max_line:
                # whole in the buffer (one read brought its end): cut as a line that spans
                # reads is (trial 11: a 17,000,055-byte line was dead-lettered whole)
                value = self._cut_whole(value, line)
            if value and not value.isspace():
                append(make(value, line))
            else:  # no data, but a line: counted and committed as one (trial 22)
                append(self._blank(line))
            room -= 1
        self._pos, self._line = pos, line
        return line != first_line

    def _cut_overlong(self) -> None:
        """Keep the first ``max_line_bytes + 1`` bytes of an overlong line; drop the rest
        (hashed and counted for its dead letter)."""
        rest = self._buf[self._pos :]
        if self._oversized is None:
            self._oversized = rest[: self._max_line + 1]
            self._over_hash, self._over_bytes = hashlib.sha256(), 0
        self._over_hash.update(rest)
        self._over_bytes += len(rest)
        self._buf_start += len(self._buf)
        self._buf, self._pos = b"", 0

    def _end_overlong(self, last: bytes, line: int) -> None:
        """The cut line ``line`` ends with ``last``: remember its whole size and SHA-256 for
        its dead letter (at most :data:`MAX_CUT_LINES` remembered; the oldest go first)."""
        self._over_hash.update(last)
        self._remember_cut(line, self._over_bytes + len(last), self._over_hash.hexdigest())

    def _cut_whole(self, value: bytes, line: int) -> bytes:
        """A line over ``max_line_bytes`` found whole in the buffer: remember its size and
        SHA-256 (:meth:`_end_overlong`'s record) and return its first ``max_line_bytes + 1``
        bytes, as a line cut across reads keeps."""
        self._remember_cut(line, len(value), hashlib.sha256(value).hexdigest())
        return value[: self._max_line + 1]

    def _remember_cut(self, line: int, size: int, digest: str) -> None:
        if len(self._cut_lines) >= MAX_CUT_LINES:
            del self._cut_lines[next(iter(self._cut_lines))]
        self._cut_lines[line] = (size, digest)

    def _tail_line(self) -> tuple[bytes, int] | None:
        """At end of input (not following), return the last line if it has no newline."""
        pending = len(self._buf) - self._pos
        if not self._at_eof or self.follow or (pending == 0 and self._oversized is None):
            return None
        value = self._oversized or self._buf[self._pos :]
        if self._oversized is not None:
            self._end_overlong(self._buf[self._pos :], self._line + 1)
        end = self._buf_start + len(self._buf)
        self._oversized, self._buf_start, self._buf, self._pos = None, end, b"", 0
        return value, end


def message_factory(file: str) -> Callable[[bytes, int], RawMessage]:
    """Return ``(value, line) -> RawMessage(value, Origin(file=file, line=line))``, fast.

    Builds through :func:`consumers.base.message_slot_setters` (about 1 µs per message
    instead of 2.5 through the constructors), which is what lets one thread read over 200k
    lines/s; the constructors if the records ever gain a field.
    """
    setters = message_slot_setters()
    if setters is None:
        return lambda value, line: RawMessage(value, Origin(file=file, line=line))
    new = object.__new__
    (set_topic, set_partition, set_offset, set_file, set_line,
     set_value, set_origin, set_key, set_timestamp) = setters  # fmt: skip

    def make(value: bytes, line: int) -> RawMessage:
        origin = new(Origin)
        set_topic(origin, None)
        set_partition(origin, None)
        set_offset(origin, None)
        set_file(origin, file)
        set_line(origin, line)
        message = new(RawMessage)
        set_value(message, value)
        set_origin(message, origin)
        set_key(message, None)
        set_timestamp(message, None)
        return message

    return make


def _take(on_disk: collections.Counter[bytes], line: bytes) -> bool:
    """Take ``line`` from the letters already on disk; ``False`` if it is not one."""
    key = hashlib.sha256(line).digest()
    if on_disk[key] <= 0:
        return False
    on_disk[key] -= 1
    return True


def _origin_of(raw: bytes) -> tuple[str, int] | None:
    """``(origin.file, origin.line)`` of one dead-letter line, ``None`` if it has none."""
    try:
        origin = json.loads(raw).get("origin")
        file, line = origin["file"], origin["line"]
    except (ValueError, AttributeError, KeyError, TypeError):
        return None
    if not isinstance(file, str) or not isinstance(line, int):
        return None
    return file, line


def dead_letter_line(
    letter: DeadLetter, cut: tuple[int, str] | None = None, file: str | None = None
) -> bytes:
    """One dead-letter JSON line (``\n``-terminated UTF-8): ``{"reason", "detail", "origin":
    {"file", "line"}, "value_b64"}``. ``cut``: the value is the prefix of a longer line, whose
    whole size in bytes and SHA-256 (hex) these are: the record then also has ``"truncated":
    true``, ``value_bytes`` and ``value_sha256``, and a size in the detail is the whole line's.
    ``file``: the name to give as ``origin.file`` instead of the letter's own."""
    origin = letter.message.origin
    value = letter.message.value
    detail = letter.detail
    if cut is not None and value is not None:
        detail = detail.replace(f"message is {len(value)} bytes", f"message is {cut[0]} bytes")
    head = {"reason": letter.reason, "detail": detail,
            "origin": {"file": origin.file if file is None else file,
                       "line": origin.line}}  # fmt: skip
    # json.dumps(record, ensure_ascii=False) with "value_b64" fourth, spliced in as bytes:
    # base64 is ASCII with nothing JSON escapes, so scanning and copying it again through
    # json.dumps (a 1 MB line's 1.4 MB of text: ~4 ms, more than the encoding) adds nothing
    parts = [json.dumps(head, ensure_ascii=False)[:-1].encode("utf-8"), b', "value_b64": ']
    parts += (b"null",) if value is None else (b'"', base64.b64encode(value), b'"')
    if cut is None:
        parts.append(b"}\n")
    else:
        tail = {"truncated": True, "value_bytes": cut[0], "value_sha256": cut[1]}
        parts += (b", ", json.dumps(tail, ensure_ascii=False)[1:].encode("utf-8"), b"\n")
    return b"".join(parts)


class InputStream:
    """Chunked binary reads over a file (seekable, re-openable) or a pipe (select-guarded)."""

    def __init__(self, raw: BinaryIO, path: str | None, chunk_bytes: int) -> None:
        self._raw, self._path, self._chunk = raw, path, chunk_bytes
        self._head: str | None = None
        try:
            self._fd: int | None = raw.fileno()
        except (OSError, AttributeError, ValueError):
            self._fd = None
        self._pipe = path is None and self._fd is not None and not raw.seekable()

    @classmethod
    def open(cls, path: str, chunk_bytes: int) -> InputStream:
        """Open ``path`` for unbuffered binary reads. :raises OSError: cannot open."""
        return cls(open(path, "rb", buffering=0), path, chunk_bytes)  # noqa: SIM115

    @classmethod
    def over(cls, stream: BinaryIO, chunk_bytes: int) -> InputStream:
        """Wrap a stream we do not own (stdin): it is never closed or re-opened."""
        return cls(stream, None, chunk_bytes)

    @property
    def closed(self) -> bool:
        return bool(self._raw.closed)

    def read(self) -> bytes | None:
        """Return the next chunk: ``b""`` at end of input, ``None`` when a pipe has no data yet."""
        fd = self._fd
        if self._pipe and fd is not None:  # a pipe always has a descriptor (see __init__)
            if not select.select([fd], [], [], 0)[0]:
                return None
            read1 = getattr(self._raw, "read1", None)
            return read1(self._chunk) if read1 else os.read(fd, self._chunk)
        return self._raw.read(self._chunk)

    def size(self) -> int:
        return os.fstat(self._fd).st_size if self._fd is not None else 0

    def seek(self, offset: int) -> None:
        self._raw.seek(offset)

    def head_hash(self, offset: int) -> str | None:
        """sha256 (hex) of the file's first ``min(offset, 1024)`` bytes; ``None`` for pipes."""
        if self._path is None or self._fd is None:
            return None
        if self._head is not None and offset >= HEAD_BYTES:
            return self._head
        digest = hashlib.sha256(os.pread(self._fd, min(offset, HEAD_BYTES), 0)).hexdigest()
        if offset >= HEAD_BYTES:
            self._head = digest
        return digest

    def identity(self) -> dict[str, Any]:
        """``{"dev", "ino", "head_bytes", "head"}``: the file's ``st_dev``/``st_ino`` and the
        :meth:`head_hash` of its first ``head_bytes = min(size, 1024)`` bytes (all ``None``
        and 0 for a pipe)."""
        if self._path is None or self._fd is None:
            return {"dev": None, "ino": None, "head_bytes": 0, "head": None}
        st = os.fstat(self._fd)
        size = min(st.st_size, HEAD_BYTES)
        return {"dev": st.st_dev, "ino": st.st_ino, "head_bytes": size,
                "head": self.head_hash(size)}  # fmt: skip

    def is_same(self, identity: Any) -> bool:
        """True when ``identity`` (:meth:`identity`, taken earlier) is this file's: same
        ``st_dev``/``st_ino``, at least ``head_bytes`` long, and the same first
        ``head_bytes`` bytes (by SHA-256). A file replaced under its name, or rewritten in
        place with another head, is not the same; a file grown by appends is."""
        if self._path is None or self._fd is None or not isinstance(identity, dict):
            return False
        st = os.fstat(self._fd)
        head_bytes = identity.get("head_bytes")
        if not isinstance(head_bytes, int) or not 0 <= head_bytes <= HEAD_BYTES:
            return False
        return (
            (identity.get("dev"), identity.get("ino")) == (st.st_dev, st.st_ino)
            and st.st_size >= head_bytes
            and identity.get("head") == self.head_hash(head_bytes)
        )

    def replaced(self, read_offset: int) -> bool:
        """True if the file shrank below ``read_offset`` or its path now names another file."""
        if self._path is None or self._fd is None:
            return False
        try:
            at_path = os.stat(self._path)
        except FileNotFoundError:
            return False  # rotated, the new file is not there yet
        mine = os.fstat(self._fd)
        return at_path.st_ino != mine.st_ino or mine.st_size < read_offset

    def reopen(self) -> InputStream:
        """Close this file and return a stream over the file now at the same path."""
        self.close()
        return InputStream.open(self._path or STDIN, self._chunk)

    def close(self) -> None:
        if self._path is not None:
            self._raw.close()
