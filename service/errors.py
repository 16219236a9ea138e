"""The base of goldwatch's own errors, and how an error is told to logs and ``/v1/status``.

Exception text can carry event text: a stage that fails on an event may put the question in
its message, and so may a library it calls. What goldwatch logs about an error, and what the
unauthenticated ``GET /v1/status`` shows, is therefore :func:`describe_error`: the error's
type and the stage it came from, as dead letters already do (``processing_failed``: "stage
'x' raised ValueError"). An error's own text is kept only where goldwatch wrote it from its own
values (a file, a field, an offset, the system's reason): error classes that promise that set
:attr:`GoldwatchError.safe_text`.

>>> describe_error(ValueError("cannot route 'Is my card 4111 1111 1111 1111 blocked?'"))
'ValueError'
>>> describe_error(FileNotFoundError(2, "No such file or directory", "/secret/questions.jsonl"))
'FileNotFoundError [ENOENT]'
>>> class DiskFull(GoldwatchError):
...     safe_text = True
>>> describe_error(DiskFull("state file /var/lib/goldwatch/state.sqlite: the disk is full"))
'DiskFull: state file /var/lib/goldwatch/state.sqlite: the disk is full'
"""

from __future__ import annotations

import errno

__all__ = ["GoldwatchError", "describe_error"]


class GoldwatchError(Exception):
    """Base class of the errors goldwatch raises itself (``except GoldwatchError`` catches
    them all, whatever builtin base each also keeps for older callers: ``ValueError`` for bad
    files, ``RuntimeError`` for state and stage failures).

    Attributes:
        safe_text: ``True`` when every message of the class is written by goldwatch from its
            own values (paths, field names, offsets, the system's reason) and never holds event
            text, so :func:`describe_error` may show it; ``False`` (the default) shows the type
            (and stage) only.
    """

    safe_text: bool = False


def describe_error(exc: BaseException) -> str:
    """One line about ``exc`` for logs and ``/v1/status`` that never holds event text.

    * a stage's failure (an exception with a ``stage`` name and a ``__cause__``, i.e.
      :class:`service.pipeline.StageError`): ``"stage 'pii' raised ValueError"``;
    * a :class:`GoldwatchError` with :attr:`~GoldwatchError.safe_text`: ``"Type: message"``;
    * an ``OSError`` with an errno: ``"Type [ENOSPC]"`` (the symbolic errno, no file name);
    * anything else: its type name.
    """
    stage = getattr(exc, "stage", None)
    cause = exc.__cause__
    if isinstance(stage, str) and cause is not None:
        return f"stage {stage!r} raised {type(cause).__name__}"
    name = type(exc).__name__
    if isinstance(exc, GoldwatchError) and exc.safe_text:
        return f"{name}: {exc}"
    code = exc.errno if isinstance(exc, OSError) else None
    if code is not None and code in errno.errorcode:
        return f"{name} [{errno.errorcode[code]}]"
    return name
