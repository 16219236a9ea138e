"""Consumer exceptions and the injected error policy.

The poll loop never decides on its own whether an error is fatal: it asks an
:data:`ErrorCallback`, which logs ``topic[partition] offset`` and returns ``True`` to suppress
the error (skip and go on) or ``False`` to re-raise it (quix-streams ``error_callbacks.py``).

>>> import logging
>>> from consumers.base import Origin, RawMessage
>>> msg = RawMessage(value=b"{}", origin=Origin(topic="queries", partition=2, offset=41))
>>> default_on_error(ValueError("boom"), msg, logging.getLogger("doctest"))
False
>>> describe_message(msg)
'partition="queries[2]" offset=41'
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from consumers.base import RawMessage
from service.errors import GoldwatchError, describe_error

__all__ = [
    "DeadLetterError",
    "ErrorCallback",
    "GoldwatchConsumerError",
    "InvalidStoredOffset",
    "SourceUnavailable",
    "default_on_error",
    "describe_message",
    "suppress_on_error",
]


class GoldwatchConsumerError(GoldwatchError):
    """Base class of every error raised by ``consumers``; their messages name sources,
    partitions, offsets, files and the broker's or system's reason, never event text."""

    safe_text = True


class SourceUnavailable(GoldwatchConsumerError):
    """The source cannot be reached (broker down, authentication failed, file missing)."""


class InvalidStoredOffset(GoldwatchConsumerError):
    """An offset was stored that is not greater than the last one stored for its partition."""


class DeadLetterError(GoldwatchConsumerError):
    """Dead letters could not be written durably; the batch must not be committed."""


ErrorCallback = Callable[[Exception, RawMessage | None, logging.Logger], bool]
"""``(error, message or None, logger) -> suppress?``: ``True`` skips the error, ``False``
re-raises it."""


def describe_message(message: RawMessage | None) -> str:
    """Return ``partition="topic[p]" offset=N`` (Kafka) or ``line="file:N"`` for logs."""
    if message is None:
        return "message=None"
    origin = message.origin
    if origin.topic is not None:
        return f'partition="{origin.topic}[{origin.partition}]" offset={origin.offset}'
    return f'line="{origin.file}:{origin.line}"'


def default_on_error(exc: Exception, message: RawMessage | None, logger: logging.Logger) -> bool:
    """Log the error with ``topic[partition] offset`` and return ``False`` (re-raise). The
    log names the error's type and stage, never its text (:func:`service.errors.describe_error`:
    it can hold event text)."""
    logger.error("failed to process %s: %s", describe_message(message), describe_error(exc))
    return False


def suppress_on_error(exc: Exception, message: RawMessage | None, logger: logging.Logger) -> bool:
    """Log the error with ``topic[partition] offset`` and return ``True`` (skip and go on);
    as :func:`default_on_error`, the error's type and stage only."""
    logger.warning("skipping %s after error: %s", describe_message(message), describe_error(exc))
    return True
