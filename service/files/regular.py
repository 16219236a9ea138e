"""Opening configured input files (gold set, corpus, token, key and TLS files) so that a
FIFO, device, socket or folder at the path gets a plain error instead of a hang.

``open()`` of a FIFO blocks until a writer appears, and reading a character device such as
``/dev/zero`` never ends. :func:`open_regular` opens with ``O_NONBLOCK`` (which makes the open
of a FIFO return at once), checks with ``fstat`` that the file is a regular file, then turns
blocking reads back on.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = ["NOT_REGULAR", "describe_os_error", "not_utf8", "open_regular", "read_regular"]

#: ``strerror`` of the :class:`OSError` raised for a path that is not a regular file.
NOT_REGULAR = "not a regular file (a FIFO, device, socket or folder)"


def not_utf8(exc: UnicodeDecodeError) -> str:
    """The one wording of an input line that does not decode as UTF-8, for every line-based
    input (gold set, corpus, qrels, run): ``exc.start`` is the offset of the first bad byte
    within the line (0-based, in bytes).

    >>> try:
    ...     b"caf\\xe9".decode("utf-8")
    ... except UnicodeDecodeError as exc:
    ...     not_utf8(exc)
    'not UTF-8 (byte 3 of the line): a binary file, or another encoding'
    """
    return f"not UTF-8 (byte {exc.start} of the line): a binary file, or another encoding"


def open_regular(path: str | Path) -> BinaryIO:
    """Open ``path`` for binary reading if it is a regular file (symlinks followed).

    Returns:
        A buffered binary file object (the caller closes it).

    Raises:
        OSError: cannot be opened (``FileNotFoundError``, ``PermissionError``, ...), or
            ``EINVAL`` with :data:`NOT_REGULAR` as ``strerror`` when it is not a regular file.
    """
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, NOT_REGULAR, str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_regular(path: str | Path) -> bytes:
    """The bytes of the regular file ``path``.

    Raises:
        OSError: as :func:`open_regular`, or a read error.
    """
    with open_regular(path) as handle:
        return handle.read()


def describe_os_error(exc: OSError) -> str:
    """The one wording of a file that could not be opened or read, for an operator: a
    missing file by its absolute path (a relative name was opened from the working folder,
    and the message says so), a folder where a file was expected, else the file and the
    system's reason; ``str(exc)`` when the error names no file.

    >>> describe_os_error(IsADirectoryError(21, "Is a directory", "/srv"))
    'expected a file, got a folder: /srv'
    >>> describe_os_error(PermissionError(13, "Permission denied", "/srv/gold.jsonl"))
    '/srv/gold.jsonl: Permission denied'
    """
    if isinstance(exc, FileNotFoundError):
        return f"file not found: {_absolute(exc.filename)}"
    if isinstance(exc, IsADirectoryError):
        return f"expected a file, got a folder: {exc.filename}"
    if exc.filename:
        return f"{exc.filename}: {exc.strerror}"
    return str(exc)


def _absolute(name: object) -> str:
    """A missing file's absolute path; a relative name was opened from the working folder,
    so it is resolved from there and the message says so."""
    path = Path(str(name))
    if path.is_absolute():
        return str(path)
    return f"{path.absolute()} (relative to the working folder)"
