"""Append-only JSONL files that stay whole whatever fails mid-write.

Every append-only file goldwatch writes (the gold set's accepted rows, the dead-letter files
of HTTP ingest, stdin and file sources, the evaluation history) goes through this module, so
one mechanism gives one guarantee: after an append, whatever failed (``write``, ``fsync``,
``close``), the file holds exactly the lines it held before, or those plus the complete new
record.

How:

* :func:`append_whole` writes the record with unbuffered ``os.write`` calls until every byte
  is out (a short write continues where it stopped), then ``fsync``. On any failure it
  ``ftruncate``s the file back to its size before the append and re-raises. There is no
  buffered file object, so nothing can be written later by a ``close`` (Python's buffered
  ``close`` flushes whatever the failed ``write`` left in its buffer, *after* a truncate).
* A *torn tail* — a last line without its newline, as left by a crash or power loss in the
  middle of an earlier append — is found by :func:`torn_tail` before the next append. A last
  line that is a whole JSON value (a hand edit without the final newline) is completed with a
  newline; anything else is either cut off (``on_torn="cut"``: files whose records are
  written again after a crash, such as dead letters, which are fsynced before the
  checkpoint that would skip them) or refused with :class:`TornTail` (``on_torn="refuse"``:
  the gold set, whose rows a person decided; the operator repairs it).

Limits: the truncate is what restores the file, so it needs a single writer at a time (a
process-wide lock, or ``flock`` across processes, as the gold set uses); a power loss between
``write`` and ``fsync`` can leave a torn tail, which the next append detects; on NFS,
``fsync`` and ``ftruncate`` semantics depend on the server and ``flock`` may be emulated or
local only (docs/runbook.md).
"""

from __future__ import annotations

import errno
import json
import logging
import os
import stat
from pathlib import Path
from typing import Any, Literal

from service.files.private import PRIVATE_MODE
from service.files.regular import NOT_REGULAR

__all__ = ["AppendOnlyFile", "MaybeWritten", "TornTail", "append_whole", "cut_back",
           "file_mark", "lines_after", "open_append", "prepare_tail", "torn_tail"]  # fmt: skip

log = logging.getLogger(__name__)

#: What to do with a torn last line: cut it off, or refuse to append (:class:`TornTail`).
OnTorn = Literal["cut", "refuse"]
_CHUNK = 65_536
#: Most bytes :func:`lines_after` reads back from the end of a file.
MAX_LINES_AFTER_BYTES = 64 << 20


class MaybeWritten(OSError):
    """An append failed and was not cut back: some or all of its bytes may be in the file
    (e.g. ``fsync`` failed and the truncate failed too). An :class:`OSError` with the
    original error's ``errno`` and ``strerror``; callers that must know whether a record
    may have landed (the labeller's hold) catch it before ``OSError``."""


class TornTail(Exception):
    """The file's last line has no newline and is not a whole JSON value (an append cut
    short by a crash or power loss, or a bad edit). The message names the file and the line
    number, never the content.

    Attributes:
        path: the file.
        line: 1-based number of the torn line.
        size: bytes in the torn line.
    """

    def __init__(self, path: str | Path, line: int, size: int) -> None:
        super().__init__(
            f"{path}: line {line} is incomplete ({size} bytes without a newline at the end of "
            "the file: an append cut short by a crash?); fix or remove that line"
        )
        self.path, self.line, self.size = str(path), line, size


def open_append(path: str | Path, mode: int = PRIVATE_MODE, *, create: bool = True) -> int:
    """Open ``path`` for appending (``O_RDWR | O_APPEND | O_CLOEXEC``, plus ``O_CREAT``
    with ``mode`` when ``create``; an existing file keeps its mode) without blocking on a
    FIFO, and check it is a regular file.

    Returns:
        The file descriptor (the caller closes it).

    Raises:
        OSError: cannot be opened or created; ``EINVAL`` (``NOT_REGULAR``, naming ``path``)
            for a FIFO, device, socket or folder at ``path`` (``O_NONBLOCK`` keeps a FIFO
            without a reader from hanging the open).
    """
    flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC | os.O_NONBLOCK
    try:
        fd = os.open(path, flags | (os.O_CREAT if create else 0), mode)
    except OSError as exc:
        if exc.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without a reader; a folder
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path)) from None
        raise
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def torn_tail(fd: int) -> tuple[bytes, int]:
    """The bytes after the file's last newline and the 1-based number of that line.

    Returns:
        ``(b"", 0)`` when the file is empty or ends with a newline; else ``(tail, line)``.

    Raises:
        OSError: the file cannot be read (``fd`` must be open for reading: ``os.pread``).
    """
    size = os.fstat(fd).st_size
    if size == 0 or os.pread(fd, 1, size - 1) == b"\n":
        return b"", 0
    tail, end = b"", size
    while end > 0:
        start = max(0, end - _CHUNK)
        block = os.pread(fd, end - start, start)
        newline = block.rfind(b"\n")
        if newline >= 0:
            tail = block[newline + 1 :] + tail
            break
        tail, end = block + tail, start
    line = _count_lines(fd, size - len(tail)) + 1
    return tail, line


def _count_lines(fd: int, upto: int) -> int:
    count, offset = 0, 0
    while offset < upto:
        block = os.pread(fd, min(_CHUNK, upto - offset), offset)
        if not block:
            break
        count += block.count(b"\n")
        offset += len(block)
    return count


def prepare_tail(fd: int, path: str | Path, on_torn: OnTorn) -> bytes:
    """Make the file ready for the next record: return the bytes to write before it.

    Returns:
        ``b""`` when the file is empty or ends with a newline; ``b"\\n"`` when its last line
        is a whole JSON value without a newline (a hand edit); ``b""`` after cutting a torn
        last line off (``on_torn="cut"``, logged with its size).

    Raises:
        TornTail: a torn last line and ``on_torn="refuse"``.
        OSError: the file cannot be read or truncated (``fd`` must be open read-write for a
            cut).
    """
    tail, line = torn_tail(fd)
    if not tail:
        return b""
    try:
        json.loads(tail)
    except ValueError:
        pass
    else:
        return b"\n"
    if on_torn == "refuse":
        raise TornTail(path, line, len(tail))
    size = os.fstat(fd).st_size
    os.ftruncate(fd, size - len(tail))
    os.fsync(fd)
    log.warning("%s: cut off an incomplete last line %d (%d bytes, left by a crash "
                "mid-append)", path, line, len(tail))  # fmt: skip
    return b""


def append_whole(fd: int, data: bytes, *, sync: bool = True) -> int:
    """Append ``data`` to the file at ``fd`` (opened with ``O_APPEND``) whole or not at all.

    Writes with unbuffered ``os.write`` until every byte is out, then ``fsync`` (when
    ``sync``). On any failure the file is truncated back to its size before the call and
    the error re-raised.

    Returns:
        The file's size after the append (bytes).

    Raises:
        OSError: the write or fsync failed (e.g. ``ENOSPC``); the file is as it was.
        MaybeWritten: the write or fsync failed and the truncate failed too (logged): some
            or all of ``data`` may be in the file; the next append finds a torn tail
            (:func:`prepare_tail`), or the whole record.
    """
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if sync:
            os.fsync(fd)
    except OSError as exc:
        if not cut_back(fd, start):
            raise MaybeWritten(exc.errno, exc.strerror) from exc
        raise
    except BaseException:
        cut_back(fd, start)
        raise
    return start + len(data)


def cut_back(fd: int, size: int) -> bool:
    """Truncate the file back to ``size`` bytes after a failed append, and fsync (best
    effort: a failure is logged, never raised over the error that caused the cut).

    Returns:
        Whether the file was cut back (``False``: the truncate failed, so the record may be
        in the file; a failed fsync after it is logged only: the file read now ends at
        ``size``).
    """
    try:
        os.ftruncate(fd, size)
    except OSError as exc:
        log.error("could not cut a partly written record off (%s): the next append will find "
                  "an incomplete last line", exc.strerror)  # fmt: skip
        return False
    try:
        os.fsync(fd)
    except OSError as exc:
        log.error("cut a partly written record off but could not fsync the cut (%s)",
                  exc.strerror)  # fmt: skip
    return True


class AppendOnlyFile:
    """A long-lived append-only JSONL file (the file source's dead letters): records are
    appended whole (:func:`append_whole`), and fsynced now or by :meth:`sync`.

    The file is opened at the first append (created with ``mode``); a torn tail found then
    is handled by ``on_torn`` (:func:`prepare_tail`). If :meth:`sync` fails, everything
    appended since the last good sync is cut off again, since whether it reached the disk is
    unknown — the caller commits nothing after it, so it is written again.

    Args:
        path: the file.
        mode: permission bits of a created file (``0600`` by default: dead letters hold raw
            event bytes).
        on_torn: ``"cut"`` or ``"refuse"``.
    """

    def __init__(self, path: str | Path, mode: int = PRIVATE_MODE, on_torn: OnTorn = "cut"):
        self.path = Path(path)
        self._mode, self._on_torn = mode, on_torn
        self._fd: int | None = None
        self._synced = 0  # size after the last fsync

    def _open(self) -> int:
        if self._fd is None:
            rw = open_append(self.path, self._mode)
            try:
                prepare = prepare_tail(rw, self.path, self._on_torn)
                if prepare:
                    append_whole(rw, prepare)
            except BaseException:
                os.close(rw)
                raise
            self._fd = rw
            self._synced = os.fstat(rw).st_size
        return self._fd

    def append(self, data: bytes, *, sync: bool = True) -> None:
        """Append ``data`` (whole lines) whole or not at all; fsync when ``sync``.

        Raises:
            OSError: the file cannot be opened, written or synced (it holds what it held).
            TornTail: at the first append, with ``on_torn="refuse"``.
        """
        fd = self._open()
        append_whole(fd, data, sync=False)
        if sync:
            self.sync()

    def sync(self) -> None:
        """fsync what was appended since the last sync (a no-op when nothing is open).

        Raises:
            OSError: the fsync failed; the unsynced records were cut off again.
        """
        if self._fd is None:
            return
        try:
            os.fsync(self._fd)
        except OSError:
            cut_back(self._fd, self._synced)
            raise
        self._synced = os.fstat(self._fd).st_size

    def close(self) -> None:
        """Close the file (idempotent); nothing is written by closing."""
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)


def file_mark(path: str | Path) -> dict[str, Any]:
    """``{"dev", "ino", "size"}`` of ``path`` now (``dev``/``ino`` ``None`` and ``size`` 0
    when it does not exist): how far a checkpoint has counted an append-only file, so a
    restart can tell the records appended after it (:func:`lines_after`)."""
    try:
        st = os.stat(path)
    except OSError:
        return {"dev": None, "ino": None, "size": 0}
    return {"dev": st.st_dev, "ino": st.st_ino, "size": st.st_size}


def lines_after(path: str | Path, mark: Any, max_bytes: int = MAX_LINES_AFTER_BYTES) -> list[bytes]:
    """The whole lines of ``path`` after ``mark`` (:func:`file_mark`, stored by the last
    checkpoint): the records appended by a process that died before a checkpoint counted
    them. Empty without a mark, when the file is another one (device or inode changed),
    not longer than the mark (replaced or cut), or not a regular file. At most ``max_bytes``
    from the end are read; a line cut by that bound is left out, and so is a torn last line
    (without its newline).
    """
    if not isinstance(mark, dict):
        return []
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return []
    try:
        st = os.fstat(fd)
        start = int(mark.get("size") or 0)
        if mark.get("dev") is not None and (mark.get("dev"), mark.get("ino")) != (
            st.st_dev, st.st_ino
        ):  # fmt: skip
            return []
        if not stat.S_ISREG(st.st_mode) or st.st_size <= start:
            return []
        begin = max(start, st.st_size - max_bytes)
        tail = os.pread(fd, st.st_size - begin, begin)
    finally:
        os.close(fd)
    if begin > start:  # cut into a line: start at the next whole one
        tail = tail[tail.find(b"\n") + 1 :] if b"\n" in tail else b""
    return tail.split(b"\n")[:-1]  # the part after the last newline is not a whole line
