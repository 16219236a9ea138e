"""The port between event sources and the poll loop.

A source hands out raw messages (bytes plus where they came from); the loop decodes them,
runs the pipeline, dead-letters what cannot be used, checkpoints state, and only then tells
the source the messages are done (``commit``). Sources never decode and never run stages.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a raw message came from.

    Kafka messages set ``topic``, ``partition`` and ``offset``; file messages set ``file`` and
    ``line`` (1-based); HTTP-ingested messages set ``file="http"`` and ``line`` to the
    position in the request batch.
    """

    topic: str | None = None
    partition: int | None = None
    offset: int | None = None
    file: str | None = None
    line: int | None = None

    def describe(self) -> str:
        """Return ``topic[partition]@offset`` or ``file:line`` for logs and dead letters."""
        if self.topic is not None:
            return f"{self.topic}[{self.partition}]@{self.offset}"
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class RawMessage:
    """One undecoded message: ``value`` is ``None`` for a Kafka tombstone."""

    value: bytes | None
    origin: Origin
    key: bytes | None = None
    timestamp_ms: int | None = None


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """A message that could not be used, with its reason code and a human-readable detail.

    ``reason`` is a bounded code (``not_utf8``, ``not_json``, ``tombstone``, ``missing_field``,
    ``wrong_type``, ``too_large``, ...) usable as a metric label; ``detail`` names the field
    and problem but never echoes the message's content.
    """

    message: RawMessage
    reason: str
    detail: str


class Source(Protocol):
    """An event source (Kafka consumer group, JSONL file, stdin).

    Thread model: every method is called from the one consumer thread.
    """

    name: str

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        """Return up to ``max_records`` messages, waiting at most ``timeout_ms`` for the first."""
        ...

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        """Write dead letters (Kafka ``<topic>.dlq`` or a JSONL file); they must be durable
        before the loop checkpoints. A source may defer that to an optional
        ``sync_dead_letters()`` method, which the loop calls before every checkpoint (the file
        source fsyncs there); without it, ``dead_letter`` itself must make them durable."""
        ...

    def commit(self, messages: Sequence[RawMessage]) -> None:
        """Mark ``messages`` (all processed or dead-lettered) as done: commit offsets/positions."""
        ...

    def status(self) -> dict[str, Any]:
        """Return JSON-able status: assignment, positions, committed offsets, lag."""
        ...

    def ready(self) -> bool:
        """True when the source is connected/assigned (Kafka) or open (file)."""
        ...

    def close(self) -> None:
        """Release resources; must not commit anything not already committed."""
        ...
