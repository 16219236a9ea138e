"""Files that hold personal data are created readable and writable by their owner only.

Dead-letter files keep the raw bytes of refused events by design (docs/security.md), so
another local user must not be able to read them: a file created with Python's ``open`` gets
``0666`` minus the umask (usually ``0644``, world-readable). :func:`open_private_append`
creates a missing file with :data:`PRIVATE_MODE` instead, via ``os.open``'s mode argument, so
the file is never readable by others, not even between its creation and a ``chmod``.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO

#: Owner read and write (``0600``); the umask can only remove bits from it.
PRIVATE_MODE = stat.S_IRUSR | stat.S_IWUSR


def open_private_append(path: str | Path) -> BinaryIO:
    """Open ``path`` to append bytes, creating it with mode :data:`PRIVATE_MODE` (``0600``)
    when missing. An existing file keeps its mode (an operator's choice is not overridden;
    ``chmod 600`` files created by earlier versions).

    Returns:
        A binary file object in append mode (the caller closes it).

    Raises:
        OSError: the file cannot be opened or created (missing folder, permissions, a folder
            at ``path``).
    """
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, PRIVATE_MODE)
    try:
        return os.fdopen(fd, "ab")
    except BaseException:
        os.close(fd)
        raise
