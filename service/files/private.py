"""Files that hold personal data are created readable and writable by their owner only.

Dead-letter files keep the raw bytes of refused events by design (docs/security.md), so
another local user must not be able to read them: a file created with Python's ``open`` gets
``0666`` minus the umask (usually ``0644``, world-readable).
:func:`service.files.append_only.open_append` creates a missing file with :data:`PRIVATE_MODE`
instead, via ``os.open``'s mode argument, so the file is never readable by others, not even
between its creation and a ``chmod``. (Appends go through :mod:`service.files.append_only` only:
a buffered append file could write part of a record after a failure was cut back.)
"""

from __future__ import annotations

import stat

#: Owner read and write (``0600``); the umask can only remove bits from it.
PRIVATE_MODE = stat.S_IRUSR | stat.S_IWUSR
