"""The port between event sources and the poll loop.

A source hands out raw messages (bytes plus where they came from); the loop decodes them,
runs the pipeline, dead-letters what cannot be used, checkpoints state, and only then tells
the source the messages are done (``commit``). Sources never decode and never run stages.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable


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
class OffsetRun:
    """Where one partition's messages lie in a :class:`PartitionRuns` list:
    ``messages[start:stop]``, all of ``topic[partition]``, offsets ``first_offset`` up to
    ``last_offset``, strictly rising when ``rising`` (false: the consumer handed them out of
    order, and whoever reads the run must go message by message)."""

    topic: str
    partition: int
    start: int
    stop: int
    first_offset: int
    last_offset: int
    rising: bool


class PartitionRuns(list[RawMessage]):
    """A poll's messages (a plain list of them) that also says, in :attr:`runs`, how they
    fall into runs of one partition each (the Kafka source builds it).

    The poll loop and the engine read what they need per partition from the runs (the last
    message to commit, the redelivery check) instead of each message's origin: about
    0.5 µs an event less on the Kafka path (issue 22 item 3). The runs describe the list as
    the source built it: a copy or a slice is a plain list (no runs), and nothing changes the
    list in place; a consumer checks ``type(x) is PartitionRuns`` and that the runs cover it.
    """

    __slots__ = ("runs",)

    def __init__(self, messages: Iterable[RawMessage] = (), runs: Sequence[OffsetRun] = ()):
        super().__init__(messages)
        self.runs: tuple[OffsetRun, ...] = tuple(runs)

    def covered(self) -> bool:
        """True when the runs cover the list exactly, one after the other (as built)."""
        at = 0
        for run in self.runs:
            if run.start != at or run.stop <= run.start:
                return False
            at = run.stop
        return at == len(self)


#: Dead-letter reason of a record the Kafka consumer could not decode with its record batch
#: (a compression codec whose library is missing, a corrupt batch): see
#: :class:`UndecodableRecord`.
UNDECODABLE_BATCH = "undecodable_batch"


@dataclass(frozen=True, slots=True)
class UndecodableRecord(RawMessage):
    """A record of a Kafka record batch that could not be decoded, so its value is unknown
    (``value`` is ``None``). The source skipped past the batch and hands out one of these per
    offset, so every record is dead-lettered as :data:`UNDECODABLE_BATCH` (``detail`` names
    the batch's offsets, its codec and the error type) rather than lost or crash-looped on."""

    detail: str = ""


#: Reason of the decoder's "letter" for a :class:`BlankLine`: not a dead letter (nothing is
#: written), the engine counts it as a blank line (``blank_lines``).
BLANK_LINE = "blank_line"


@dataclass(frozen=True, slots=True)
class BlankLine(RawMessage):
    """A blank (empty or whitespace-only) line of a JSONL input (the file source's, stdin's):
    no data, so no event and no dead letter, but a line all the same. The source hands it
    out (``value`` ``None``: off the decoder's per-event fast path) so it is counted
    (``blank_lines`` in the totals, the replay report and ``goldwatch_blank_lines_total``)
    and its position is committed like any other line's, rather than skipped unseen (trial
    22: 2,902 lines read as "2,901 consumed" and nothing said of the other one)."""


#: A slot setter: ``setter(instance, value)``, a member descriptor's ``__set__``.
SlotSetter = Callable[[Any, Any], None]
_ORIGIN_SLOTS = ("topic", "partition", "offset", "file", "line")
_MESSAGE_SLOTS = ("value", "origin", "key", "timestamp_ms")


def message_slot_setters() -> tuple[SlotSetter, ...] | None:
    """The slot setters of :class:`Origin` (topic, partition, offset, file, line), then of
    :class:`RawMessage` (value, origin, key, timestamp_ms), for the sources' fast builders.

    The frozen dataclasses' ``__init__`` pays one ``object.__setattr__`` per field (about
    2.5 µs for the pair); filling the slots of ``object.__new__`` instances through their
    descriptors builds equal objects in under half of that. ``None`` when the records no
    longer have exactly these fields: the builders then use the constructors.
    """
    if (Origin.__slots__, RawMessage.__slots__) != (_ORIGIN_SLOTS, _MESSAGE_SLOTS):
        return None
    origin = tuple(Origin.__dict__[name].__set__ for name in _ORIGIN_SLOTS)
    message = tuple(RawMessage.__dict__[name].__set__ for name in _MESSAGE_SLOTS)
    return origin + message


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

    Optional capabilities are the small protocols below; the loop and the runtime check them
    with ``isinstance`` (they are ``runtime_checkable``) and fall back as noted on each:
    :class:`SyncsDeadLetters`, :class:`HoldsDeadLetters`, :class:`Finite`,
    :class:`TracksTopicIds`, :class:`CheckpointsOnRevoke`, :class:`MarksFailure`,
    :class:`ExplainsNotReady`, :class:`Assigned`, :class:`WritesDeadLetterFile`.
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


@runtime_checkable
class SyncsDeadLetters(Protocol):
    """Dead letters become durable in ``sync_dead_letters()``, which the loop calls before
    every checkpoint (the file source fsyncs there). Without it, :meth:`Source.dead_letter`
    itself makes them durable."""

    def sync_dead_letters(self) -> None:
        """Make every dead letter written so far durable.

        Raises:
            OSError: the file cannot be synced; consumer errors or ``KafkaError``: the broker
                did not acknowledge yet (the letters stay queued).
        """
        ...


@runtime_checkable
class HoldsDeadLetters(SyncsDeadLetters, Protocol):
    """Dead letters are held in memory until :meth:`sync_dead_letters` (Kafka: until the
    ``<topic>.dlq`` acknowledgements). The loop then runs that sync before every engine
    checkpoint, HTTP ingest's included, and settles the engine only when none is pending."""

    @property
    def pending_dead_letters(self) -> int:
        """Dead letters handed over but not yet durable (≥ 0)."""
        ...


@runtime_checkable
class Finite(Protocol):
    """A source that can end (a file, stdin). Without it, an empty poll with ``until_eof``
    ends the loop."""

    @property
    def at_eof(self) -> bool:
        """True once the last read reached the end of input with no complete line left."""
        ...


@runtime_checkable
class TracksTopicIds(Protocol):
    """Kafka topic ids, so a topic deleted and created again is read from its beginning."""

    def topic_ids(self) -> dict[str, str]:
        """Topic name -> its current topic id, for the subscribed topics whose id is known."""
        ...

    def restart_topics(self, topics: Iterable[str]) -> None:
        """Read ``topics`` again from offset 0 (they were re-created)."""
        ...


@runtime_checkable
class CheckpointsOnRevoke(Protocol):
    """A consumer-group member that has the poll loop checkpoint before its partitions are
    revoked, so offsets of everything processed are committed before the next owner reads
    them (Kafka). Without it, a revocation commits only what the last checkpoint stored."""

    def checkpoint_on_revoke(self, checkpoint: Callable[[], None] | None) -> None:
        """Run ``checkpoint`` (blocking; on another thread than the consumer thread, which
        waits in the source meanwhile) at each revocation, before committing; ``None``
        unhooks it."""
        ...


@runtime_checkable
class MarksFailure(Protocol):
    """Told of a crash before :meth:`Source.close`, so close commits nothing (the next
    owner replays)."""

    def mark_failed(self) -> None:
        """Mark the source as failed: :meth:`Source.close` must then not commit."""
        ...


@runtime_checkable
class ExplainsNotReady(Protocol):
    """Says why :meth:`Source.ready` is false (shown by ``/readyz``); without it the runtime
    gives a generic reason."""

    def not_ready_reason(self) -> str | None:
        """Why the source is not ready (names the broker, topic or file), or ``None``."""
        ...


@runtime_checkable
class Assigned(Protocol):
    """A consumer-group member: the partitions it owns now."""

    def assignment(self) -> set[tuple[str, int]]:
        """``{(topic, partition)}`` currently assigned to this member."""
        ...


@runtime_checkable
class WritesDeadLetterFile(Protocol):
    """Dead letters go to a JSONL file (named in errors about writing them)."""

    dlq_path: Path
