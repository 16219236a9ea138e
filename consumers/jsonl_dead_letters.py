"""Dead letters of HTTP ingest (and stdin) in a JSONL file: durable appends, retries that
do not write a letter twice, and the file's problem for ``/readyz``."""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import json
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consumers.base import DeadLetter
from consumers.file_source import dead_letter_line
from service.files.append_only import (
    append_whole,
    file_mark,
    lines_after,
    open_append,
    prepare_tail,
)

__all__ = ["DEAD_LETTER_MARK_KEY", "JsonlDeadLetters"]

log = logging.getLogger(__name__)

#: State key of the HTTP dead-letter file's identity and size at the last checkpoint.
DEAD_LETTER_MARK_KEY = "http-dead-letters/checkpointed"


class JsonlDeadLetters:
    """Dead letters of HTTP ingest (and stdin), appended to a JSONL file and fsynced.

    HTTP ingest writes a request's letters with :meth:`admit` before the pipeline applies
    the request: if they cannot be written (disk full, read-only, a FIFO at the path),
    nothing of that request is applied or counted, the client gets a 503 and the letters are
    not kept. Letters written for a request that was then not acknowledged (a later chunk or
    the checkpoint failed) are remembered by identity (:meth:`unacknowledged`), so the
    client's retry counts them as duplicates instead of writing and counting them again.

    Every letter the engine counts goes through :meth:`admit`, ``processing_failed`` ones
    (a stage raised) included: on disk before it is counted. Letters handed to
    :meth:`write` (trace ingest's rejected spans and traces, which the engine does not
    count) that cannot be written stay queued in memory and go out with the next write; the
    runtime runs :meth:`flush` before every engine checkpoint.

    Across a restart (a kill -9 between writing a request's letters and the checkpoint that
    counts them), the memory is rebuilt from the file: every checkpoint notes the file's
    identity and size (:meth:`checkpoint_mark`), and at start the letters after that size —
    written, never counted — are read back (:meth:`recover`, at most
    :attr:`MAX_RECOVERED_BYTES` from the end): a retry of their request counts them as dead
    letters once more (the count was lost with the checkpoint) without writing them again.

    While the file cannot be written, :meth:`problem` says why (``/readyz``)."""

    #: Identities of unacknowledged letters remembered at most (oldest forgotten first):
    #: 100 requests of the API's largest size (1,000 events).
    MAX_UNACKNOWLEDGED = 100_000
    #: Most bytes read back from the end of the file at start (:meth:`recover`).
    MAX_RECOVERED_BYTES = 64 << 20

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._queued: list[DeadLetter] = []
        self._unacknowledged: OrderedDict[bytes, int] = OrderedDict()  # identity -> letters
        # identity -> letters on disk from before a restart that no checkpoint counted
        self._uncounted: OrderedDict[bytes, int] = OrderedDict()
        # (errno, bytes the failed append needed, message) of the last failed append
        self._failure: tuple[int, int, str] | None = None

    @property
    def queued(self) -> int:
        """Letters accepted but not yet on disk (≥ 0)."""
        return len(self._queued)

    def admit(self, letters: Sequence[DeadLetter]) -> list[DeadLetter]:
        """Append ``letters`` (and any queued ones) durably, except those already written
        for an unacknowledged try (:meth:`unacknowledged`), which are not written again.

        Returns:
            The letters to count as dead letters (a sub-list of ``letters``, in order): those
            written now and those on disk from before a restart that no checkpoint counted
            (:meth:`recover`; not written again); the others are repeats, for the caller to
            count as duplicates.

        Raises:
            OSError: the file cannot be written: nothing was written (a partly written
                append is cut back), none of ``letters`` is kept, the remembered identities
                are as before.
        """
        with self._lock:
            fresh: list[DeadLetter] = []
            counted: list[DeadLetter] = []
            repeats: list[bytes] = []
            recovered: list[bytes] = []
            for letter in letters:
                key = _letter_identity(letter)
                if _take(self._unacknowledged, key):
                    repeats.append(key)
                elif _take(self._uncounted, key):
                    recovered.append(key)
                    counted.append(letter)
                else:
                    fresh.append(letter)
                    counted.append(letter)
            try:
                self._append([*self._queued, *fresh])
            except OSError:
                self._remember(repeats)
                for key in recovered:
                    self._uncounted[key] = self._uncounted.get(key, 0) + 1
                raise
            self._queued.clear()
            return counted

    def checkpoint_mark(self) -> dict[str, Any]:
        """``{DEAD_LETTER_MARK_KEY: {"dev", "ino", "size"}}``: the file as a checkpoint
        counts it (:func:`service.files.append_only.file_mark`), for :meth:`recover`. Called
        under the engine lock after :meth:`flush`, so every counted letter is in it."""
        return {DEAD_LETTER_MARK_KEY: file_mark(self.path)}

    def recover(self, mark: Any, origin: str | None = None) -> int:
        """Read back the letters after the last checkpoint's ``mark``
        (:meth:`checkpoint_mark`): written by a process that died before a checkpoint
        counted them. A retry of their request then counts them without writing them again
        (:meth:`admit`). A fresh state has its mark written when the service starts, before
        any letter (trial 49, M1), so a kill -9 before the first checkpoint recovers that
        run's letters only. ``origin``: only letters whose ``origin.file`` is this are read
        back (``None``: all; the file may be shared with a file source's letters). Nothing
        is read without a mark (a state from before this version),
        when the file is another one or not longer than the mark
        (:func:`service.files.append_only.lines_after`); at most :attr:`MAX_RECOVERED_BYTES`
        from the end, at most :attr:`MAX_UNACKNOWLEDGED` identities. Lines that do not parse
        are skipped.

        Returns:
            the number of letters read back (≥ 0).
        """
        found = 0
        with self._lock:
            for line in lines_after(self.path, mark, self.MAX_RECOVERED_BYTES):
                key = _line_identity(line, origin)
                if key is None:
                    continue
                self._uncounted[key] = self._uncounted.get(key, 0) + 1
                self._uncounted.move_to_end(key)
                found += 1
            while len(self._uncounted) > self.MAX_UNACKNOWLEDGED:
                self._uncounted.popitem(last=False)
        if found:
            log.info("%d dead letters in %s were written after the last checkpoint: a retry "
                     "of their events counts them without writing them again", found,
                     self.path)  # fmt: skip
        return found

    def unacknowledged(self, letters: Sequence[DeadLetter]) -> None:
        """Remember ``letters`` (on disk, counted) as belonging to a request that was not
        acknowledged: the next :meth:`admit` of the same letters (same reason and bytes: the
        client's retry) does not write them again."""
        with self._lock:
            self._remember([_letter_identity(letter) for letter in letters])

    def _remember(self, keys: Sequence[bytes]) -> None:
        for key in keys:
            self._unacknowledged[key] = self._unacknowledged.get(key, 0) + 1
            self._unacknowledged.move_to_end(key)
        while len(self._unacknowledged) > self.MAX_UNACKNOWLEDGED:
            self._unacknowledged.popitem(last=False)

    def write(self, letters: Sequence[DeadLetter]) -> None:
        """Queue ``letters`` and append every queued letter durably (flush + fsync).

        Raises:
            OSError: the file cannot be written; every letter stays queued (a partly written
                append is cut back, so a retry never leaves a torn line).
        """
        with self._lock:
            self._queued.extend(letters)
            self._flush()

    def flush(self) -> None:
        """Write the queued letters (see :meth:`write`); nothing to do when none is queued.

        Raises:
            OSError: as :meth:`write`.
        """
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        self._append(self._queued)
        self._queued.clear()

    def _append(self, letters: Sequence[DeadLetter]) -> None:
        if not letters:
            return
        data = b"".join(dead_letter_line(letter) for letter in letters)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_append(self.path)  # 0600: raw bytes of events
            try:  # a torn tail (a crash mid-append) is cut: its letters were never checkpointed
                append_whole(fd, prepare_tail(fd, self.path, on_torn="cut") + data)
            finally:
                os.close(fd)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self._failure = (
                exc.errno or 0,
                len(data),
                f"dead-letter file {self.path} cannot be written: {reason}",
            )
            raise
        self._failure = None

    def problem(self) -> str | None:
        """Why dead letters cannot be written now, or ``None``. After a failed append the
        file is checked again at each call (opened for appending — a FIFO, folder, read-only
        file system or missing folder still fails —, and after ``ENOSPC``/``EDQUOT`` the
        file system must have room for the failed append); the problem clears when the
        check passes or an append succeeds. Names the file and the system's reason only."""
        failure = self._failure
        if failure is None:
            return None
        code, needed, message = failure
        try:
            fd = open_append(self.path)
        except OSError:
            return message
        try:
            if code in (errno.ENOSPC, errno.EDQUOT):
                space = os.fstatvfs(fd)
                if space.f_bavail * space.f_frsize < needed:
                    return message
        finally:
            os.close(fd)
        if self._failure is failure:
            self._failure = None
        return None


def _take(memory: OrderedDict[bytes, int], key: bytes) -> bool:
    """Take one of ``key`` from ``memory`` (a count per identity); ``False`` if none."""
    if memory.get(key, 0) <= 0:
        return False
    memory[key] -= 1
    if not memory[key]:
        del memory[key]
    return True


def _line_identity(line: bytes, origin: str | None = None) -> bytes | None:
    """The :func:`_letter_identity` of one dead-letter line (``dead_letter_line``), or
    ``None`` for a blank or unreadable line, a cut letter (its value is a prefix) or, when
    ``origin`` is given, a letter whose ``origin.file`` is another."""
    try:
        record = json.loads(line)
        if not isinstance(record, dict) or record.get("truncated"):
            return None
        if origin is not None:
            where = record.get("origin")
            if not isinstance(where, dict) or where.get("file") != origin:
                return None
        raw = record.get("value_b64")
        value = base64.b64decode(raw, validate=True) if raw is not None else b""
        reason = record["reason"]
    except (ValueError, KeyError, TypeError, binascii.Error):
        return None
    if not isinstance(reason, str):
        return None
    digest = hashlib.blake2b(reason.encode("utf-8") + b"\0", digest_size=16)
    digest.update(value)
    return digest.digest()


def _letter_identity(letter: DeadLetter) -> bytes:
    """A dead letter's identity for retries: BLAKE2b-128 of its reason and raw bytes (the
    event's bytes as sent; the same bytes in a retry are the same letter)."""
    digest = hashlib.blake2b(letter.reason.encode("utf-8") + b"\0", digest_size=16)
    digest.update(letter.message.value or b"")
    return digest.digest()
