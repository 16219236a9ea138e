"""Kafka source: one member of a consumer group, reading the query-log topic.

Thread model: every method except :meth:`KafkaSource.status` and :meth:`KafkaSource.ready`
runs on the one consumer thread (kafka-python's consumer is not thread safe); those two only
read snapshots and may be called from the API thread.

Delivery: at least once. ``commit(messages)`` stores ``offset`` per partition and commits
``last + 1`` every ``commit_interval_s`` seconds (or with ``force=True``), only for partitions
still assigned. A failed commit (``CommitFailedError``, rebalance in progress, timeout) is
counted and logged, never raised: the next owner replays, and duplicates are removed
downstream by ``event_id``. Revoked partitions get their processed offsets committed by
:class:`~consumers.rebalance.CommitOnRevoke`, unless :meth:`KafkaSource.mark_failed` was called.

Rebalances: the poll loop registers its checkpoint with :meth:`KafkaSource.checkpoint_on_revoke`;
a revocation then runs it (on a worker thread, while the consumer thread waits inside
kafka-python's ``poll`` or ``close``) before committing, so every message processed on a
revoked partition is checkpointed and committed before the next owner reads it: nothing is
counted twice or lost (see :mod:`consumers.rebalance`; a timed-out checkpoint falls back to
at least once). While it runs, :meth:`KafkaSource.commit` only stores (the listener commits the
revoked partitions, the next due commit the others). :meth:`KafkaSource.poll` never hands out a
record of a partition no longer assigned (kafka-python drops them too).

Dead letters: ``dead_letter`` queues them in this process and ``sync_dead_letters`` (called
by the poll loop before every checkpoint, hence before every commit) hands them to the DLQ
producer and waits for the acknowledgements, so a checkpoint costs one DLQ produce request
and round trip instead of one per batch that had a dead letter.

Undecodable record batches: a batch the consumer cannot decode (its compression codec's
library is missing, a corrupt compressed payload, a failed CRC) makes kafka-python's ``poll``
raise at the same offset every time, which used to crash-loop the consumer with nothing
dead-lettered and the lag frozen. ``poll`` instead finds the batch (partition, first and last
offset) in the raising frame, seeks past it, counts it and hands out one
:class:`~consumers.base.UndecodableRecord` per skipped offset, so each record becomes a dead
letter (``undecodable_batch``, with partition and offset) and the offsets are committed. The
records' bytes stay in the topic for a consumer that has the codec.

Re-created topics: :meth:`KafkaSource.topic_ids` gives the topic's id (KIP-516, from
metadata v10+, refreshed at least every ``probe_interval_s``) while partitions of it are
assigned; the poll loop compares it with the id the state remembers and, when the topic was
deleted and created again, calls :meth:`KafkaSource.restart_topics`: the group's offsets of
the assigned partitions are committed as 0 (they pointed into the old topic), the re-creation
is counted and the consumer subscribes again, so the group assigns every partition of the new
topic (read from 0: offset 0 committed, or no offset and ``auto_offset_reset``).

Changed partition sets: kafka-python rejoins the group when the topic's partition set in
metadata changes, but Tansu keeps the member in generation 0 and answers the leader's
SyncGroup (assigning partitions 0-3) with the member's previous assignment (partition 0), or
the rejoin ends with nothing assigned; kafka-python then sees its assignment snapshot equal
the metadata and never rejoins again (1 of 4 partitions of a re-created topic read until a
restart). So when the partition set in metadata differs from the one last seen (at an
assignment or a poll; an empty set, a topic being deleted, does not count),
:meth:`KafkaSource.poll` commits the offsets processed so far, leaves the group and
subscribes again: a new member id gets a new generation and a fresh assignment.

Event-time alignment (``event_times`` and ``max_skew_s`` > 0; serve's default with analytics
on): fetched records wait in a buffer per partition and a poll hands out only those within
the bound of the other partitions that still have records (see :mod:`consumers.align`);
partitions with records held back are paused. Held records were fetched but not handed out,
so nothing of them is processed or committed (a partition's committed offset is never past
its first held record). A rebalance releases the held records of the revoked partitions;
kafka-python keeps the position of a partition it assigns again at once (an eager rebalance
that keeps it), which is past them, so :meth:`KafkaSource._on_assigned` seeks such a
partition back to its first held record; a partition revoked for good, and every partition
after a re-subscription, is read again from its committed offset.

Time budget: the loop must call ``poll`` again within ``max_poll_interval_ms``, so keep
``max_poll_records`` x (per-message processing time, shadow timeouts included) well under it
(e.g. 500 records x 50 ms = 25 s < 300 s default).
"""

from __future__ import annotations

import base64
import hashlib
import json
import logging
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import FrozenInstanceError
from itertools import islice, repeat
from operator import attrgetter, lt
from typing import Any

import msgspec
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError
from kafka.producer.future import FutureRecordMetadata

from consumers.align import EventTimeAligner, EventTimes, LogPosition
from consumers.base import (
    DeadLetter,
    OffsetRun,
    Origin,
    PartitionRuns,
    RawMessage,
    UndecodableRecord,
)
from consumers.checkpoint import Checkpoint
from consumers.errors import DeadLetterError, SourceUnavailable
from consumers.lag import LagSampler
from consumers.rebalance import (
    CommitOnRevoke,
    PartitionHook,
    RevokeCheckpoint,
    revoke_abandoned,
    to_kafka_offsets,
)
from service.settings.kafka import KafkaSourceConfig

log = logging.getLogger(__name__)

#: DLQ producer ``linger_ms``: letters wait for the flush that follows them (see
#: ``KafkaSource._dlq_producer``); the flush sends them at once whatever this is.
DLQ_LINGER_MS = 1000

#: DLQ producer ``batch_size`` (bytes): room for a checkpoint's letters in one batch (100
#: letters of 1 kB events are ~150 kB), under the broker's default ``message.max.bytes``
#: (1 MiB) and the producer's ``max_request_size`` (1 MiB).
DLQ_BATCH_BYTES = 512 * 1024


#: Seconds between two reads of the end offsets of caught-up partitions that hold records
#: back (see :mod:`consumers.align`): at most this many ListOffsets requests a second, and a
#: record held so waits at most this long plus a round trip while the broker answers.
END_CHECK_INTERVAL_S = 0.05


#: Consumer ``fetch_max_bytes``: record data per fetch response, all partitions together.
#: kafka-python's defaults (50 MiB, and 1 MiB per partition) let a consumer that is behind
#: take ~1 MiB per partition per response: 3.7 MB on average, 5.3 MB at most (4
#: partitions, Tansu, 40,000 queued soak events of ~0.8 kB; 0.97 and 1.06 MB with these
#: limits), and a response is held more than once (read buffer, decoded records) while its
#: records are handed out. The service's live memory then followed its backlog, which
#: grows over a long run at 99 % of the offered rate. One poll takes ``max_poll_records``
#: (500) such events, ~400 kB, so 1 MiB still serves more than a poll per response. A first
#: record batch larger than the limit is still returned (KIP-74), so a big message never
#: stalls the consumer.
FETCH_MAX_BYTES = 1024 * 1024
#: Consumer ``max_partition_fetch_bytes``: a quarter of :data:`FETCH_MAX_BYTES`, so a
#: response carries several partitions' records rather than one partition's.
MAX_PARTITION_FETCH_BYTES = 256 * 1024

#: Largest DLQ message value in bytes. The producer refuses a record over its
#: ``max_request_size`` and the broker one over ``message.max.bytes`` (1 MiB each by
#: default, record overhead included). A letter carries its message base64-encoded (4/3 of
#: its size), so without a bound a ``too_large`` message of ~780 kB made a letter no one
#: would take, and an unsendable letter blocks every later checkpoint.
DLQ_MAX_LETTER_BYTES = 1_000_000
#: An original key longer than this (bytes) is not the letter's record key (partitioning
#: then falls back to the producer's default); the body still carries it, cut if need be.
DLQ_MAX_KEY_BYTES = 16_384


#: Record headers of a dead letter, after Kafka Connect's ``__connect.errors.*`` (reason and
#: where the message was), so a DLQ consumer can route or count without parsing the body.
DLQ_HEADERS = ("goldwatch.dlq.reason", "goldwatch.dlq.topic", "goldwatch.dlq.partition",
               "goldwatch.dlq.offset")  # fmt: skip


def dead_letter_headers(letter: DeadLetter) -> list[tuple[str, bytes]]:
    """The dead letter's record headers: :data:`DLQ_HEADERS` with the reason and the
    original topic, partition and offset as UTF-8 text (a missing one is left out). The
    detail stays in the body only (it can be long)."""
    origin = letter.message.origin
    values = (letter.reason, origin.topic, origin.partition, origin.offset)
    return [(name, str(value).encode()) for name, value in zip(DLQ_HEADERS, values, strict=True)
            if value is not None]  # fmt: skip


def dead_letter_value(letter: DeadLetter, max_bytes: int = DLQ_MAX_LETTER_BYTES) -> bytes:
    """The DLQ message value: UTF-8 JSON with reason, detail, origin and base64 bytes.

    ``{"reason", "detail", "origin": {"topic", "partition", "offset"}, "value_b64",
    "key_b64", "timestamp_ms"}``; ``value_b64``/``key_b64`` are ``None`` for a missing value
    or key. A letter that would be longer than ``max_bytes`` (>= 1,024) keeps a prefix of
    the value and key that fits (the key gets at most half the room) and says so:
    ``"truncated": true``, and for each of value and key present, its full size
    (``value_bytes``, ``key_bytes``) and the SHA-256 of all of it (``value_sha256``,
    ``key_sha256``, hex), so the original can still be found and matched in the topic.

    The bytes are those of ``json.dumps(body, separators=(",", ":"))`` with the base64 as
    strings (see :func:`_dumps`, which writes the value and key's base64 itself). Time and
    memory are linear in the message's size: one base64 pass and one copy into the output
    (a ``too_large`` letter of a 64 KiB message: ~45 µs, against ~80 for the base64 string
    built first and then scanned and copied by the JSON encoder).

    Raises:
        ValueError: ``max_bytes < 1024`` (no room for the fixed fields).
    """
    if max_bytes < 1024:
        raise ValueError(f"max_bytes must be >= 1024, got {max_bytes}")
    msg = letter.message
    value, key = msg.value, msg.key
    origin = msg.origin
    body: dict[str, Any] = {
        "reason": letter.reason,
        "detail": letter.detail,
        "origin": {"topic": origin.topic, "partition": origin.partition, "offset": origin.offset},
        "value_b64": value,  # bytes: written as their base64 string (see _dumps)
        "key_b64": key,
        "timestamp_ms": msg.timestamp_ms,
    }
    encoded = _dumps(body)
    if len(encoded) <= max_bytes:
        return encoded
    body["truncated"] = True
    for name, raw in (("value", value), ("key", key)):
        if raw is not None:
            body[f"{name}_b64"] = b""
            body[f"{name}_bytes"] = len(raw)
            body[f"{name}_sha256"] = hashlib.sha256(raw).hexdigest()
    room = max(max_bytes - len(_dumps(body)), 0)  # base64 characters for the two prefixes
    if key is not None:
        body["key_b64"] = key[: (room // 2 // 4) * 3]  # 4 characters per 3 bytes
        room -= _b64_length(len(body["key_b64"]))
    if value is not None:
        body["value_b64"] = value[: (room // 4) * 3]
    return _dumps(body)


#: Names of the Kafka compression codecs by attribute code (the low 3 bits).
CODECS = {0: "uncompressed", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def undecodable_batch(exc: BaseException) -> tuple[TopicPartition, int, int, str] | None:
    """Where ``exc`` was raised while kafka-python unpacked a fetched record batch:
    ``(topic partition, base offset, last offset, codec name)``, or ``None`` when it was not.

    kafka-python raises such errors (``UnsupportedCodecError``, ``CorruptRecordError``, a
    codec library's own error) from its record generator without the batch's position; the
    generator's frame (``_unpack_records``, kafka-python 3.0) holds the partition ``tp`` and
    the ``batch`` being read. For a legacy (v0/v1) batch the last offset is its base offset.
    """
    tb = exc.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_code.co_name == "_unpack_records":
            tp, batch = frame.f_locals.get("tp"), frame.f_locals.get("batch")
            if isinstance(tp, TopicPartition) and batch is not None:
                base = int(batch.base_offset)
                last = int(getattr(batch, "last_offset", base))
                codec = CODECS.get(int(batch.compression_type), "unknown codec")
                return tp, base, last, codec
        tb = tb.tb_next
    return None


def consumer_kwargs(config: KafkaSourceConfig) -> dict[str, Any]:
    """``KafkaConsumer`` kwargs: the configured ones, with the fetch limits
    :data:`FETCH_MAX_BYTES` and :data:`MAX_PARTITION_FETCH_BYTES` and a metadata refresh every
    ``probe_interval_s`` (at least 1 s) unless they set them."""
    return {
        "fetch_max_bytes": FETCH_MAX_BYTES,
        "max_partition_fetch_bytes": MAX_PARTITION_FETCH_BYTES,
        # a re-created topic's new id is seen within a probe interval, not 5 minutes
        "metadata_max_age_ms": max(1000, int(config.probe_interval_s * 1000)),
        **config.consumer_kwargs(),
    }


def _b64_length(size: int) -> int:
    """Characters of the padded base64 of ``size`` bytes."""
    return 4 * ((size + 2) // 3)


def _b64_str(raw: object) -> str:
    """``json.dumps``'s ``default``: a ``bytes`` value as its padded standard base64."""
    if isinstance(raw, bytes | bytearray | memoryview):
        return base64.b64encode(raw).decode("ascii")
    raise TypeError(f"Object of type {type(raw).__name__} is not JSON serializable")


def _plain(text: object) -> bool:
    """``text`` is a ``str`` of ASCII characters without DEL (U+007F), or ``None``: what
    msgspec and ``json.dumps`` (``ensure_ascii``) write the same way."""
    return text is None or (type(text) is str and text.isascii() and "\x7f" not in text)


def _dumps(body: dict[str, Any]) -> bytes:
    """A dead letter's body as ``json.dumps(body, separators=(",", ":")).encode("utf-8")``
    writes it with each ``bytes`` value replaced by its padded standard base64 string: the
    same bytes.

    msgspec writes bytes as that string, integers, booleans and ``None`` as ``json.dumps``
    does, and strings too when they are ASCII without DEL (``json.dumps``'s
    ``ensure_ascii`` escapes U+007F and up, msgspec does not; controls both escape alike).
    So when the body's strings (``reason``, ``detail``, the origin's ``topic``) are such, msgspec
    writes it; anything else (a non-ASCII detail, a lone surrogate, a type msgspec writes
    otherwise) goes to ``json.dumps``. A letter holds strings, integers, a boolean, bytes and
    ``None``, no float. Not asking the strings first but scanning msgspec's output, as this
    did before, read a ``too_large`` letter's 88 kB of base64 twice more (~4 µs).
    """
    if _plain(body["reason"]) and _plain(body["detail"]) and _plain(body["origin"]["topic"]):
        try:
            return _encode_json(body)
        except (TypeError, ValueError, OverflowError):  # not a letter's types: json.dumps
            pass
    return json.dumps(body, separators=(",", ":"), default=_b64_str).encode("utf-8")


_encode_json = msgspec.json.encode


#: RawMessage's ``origin`` slot: a :class:`RecordMessage` keeps its origin there once built.
_ORIGIN_SLOT = RawMessage.__dict__["origin"]


class RecordMessage(RawMessage):
    """A :class:`~consumers.base.RawMessage` over one kafka-python ``ConsumerRecord``: the
    value is read at once (the decoder reads it), the origin, key and timestamp from the
    record when asked (the origin built once, then kept). Equal to, and hashed as,
    ``RawMessage(value, Origin(topic, partition, offset), key, timestamp)``.

    Building the two frozen records of every message (an ``Origin`` and a ``RawMessage``,
    nine slots) was 1.5 µs an event of the Kafka path's ~11 of goldwatch's own (in-process,
    50,000 mixed-stream events); the loop and the engine read the partition runs of a poll
    (:class:`~consumers.base.PartitionRuns`) instead of each message's origin, so only dead
    letters and each run's last message (committed) ever build one.
    """

    __slots__ = ("record",)
    record: Any

    def __init__(self, record: Any) -> None:  # messages_from_records builds them without it
        _set_value(self, record.value)
        _set_record(self, record)

    @property
    def origin(self) -> Origin:
        try:
            origin: Origin = _ORIGIN_SLOT.__get__(self, RecordMessage)
        except AttributeError:  # not built yet
            record = self.record
            origin = Origin(record.topic, record.partition, record.offset)
            _ORIGIN_SLOT.__set__(self, origin)
        return origin

    @property
    def key(self) -> bytes | None:
        key: bytes | None = self.record.key
        return key

    @property
    def timestamp_ms(self) -> int | None:
        stamp: int | None = self.record.timestamp
        return stamp

    def __eq__(self, other: object) -> bool:
        if type(other) is RawMessage or type(other) is RecordMessage:
            mine = (self.value, self.origin, self.key, self.timestamp_ms)
            return mine == (other.value, other.origin, other.key, other.timestamp_ms)
        return NotImplemented

    __hash__ = RawMessage.__hash__  # hash((value, origin, key, timestamp_ms)), as RawMessage

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")  # frozen, as RawMessage

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        """Copied or pickled as the equal plain RawMessage (no kafka-python record)."""
        return RawMessage, (self.value, self.origin, self.key, self.timestamp_ms)


_set_value = RawMessage.__dict__["value"].__set__
_set_record = RecordMessage.__dict__["record"].__set__
_new = object.__new__
_value_of = attrgetter("value")


def messages_from_records(records: Sequence[Any]) -> list[RawMessage]:
    """kafka-python ``ConsumerRecord``\\ s (anything with ``topic``, ``partition``,
    ``offset``, ``key``, ``value``, ``timestamp``) as raw messages (:class:`RecordMessage`),
    equal to ``RawMessage(value, Origin(topic, partition, offset), key, timestamp)`` each.

    Built a column at a time with C-level ``map`` (no Python step per record): ~0.1 µs a
    record, against ~0.7 for the two frozen records filled slot by slot.
    """
    n = len(records)
    messages: list[RawMessage] = list(map(_new, repeat(RecordMessage, n)))
    deque(map(_set_value, messages, map(_value_of, records)), 0)
    deque(map(_set_record, messages, records), 0)
    return messages


_record_offset = attrgetter("offset")


def partition_runs(record_lists: Iterable[Sequence[Any]]) -> PartitionRuns:
    """The messages of kafka-python's record lists (one list per partition, as ``poll``
    gives them), in that order, with one :class:`~consumers.base.OffsetRun` per list (no
    runs at all should a record lack its topic, partition or offset: then the loop and the
    engine read each message's origin)."""
    messages = PartitionRuns()
    runs: list[OffsetRun] | None = []
    for records in record_lists:
        if not records:
            continue
        start = len(messages)
        messages += messages_from_records(records)
        if runs is None:
            continue
        offsets = list(map(_record_offset, records))
        topic, partition = records[0].topic, records[0].partition  # one partition a list
        if topic is None or partition is None or None in offsets:
            runs = None
            continue
        rising = all(map(lt, offsets, islice(offsets, 1, None)))
        runs.append(OffsetRun(topic, partition, start, len(messages), offsets[0], offsets[-1],
                              rising))  # fmt: skip
    messages.runs = tuple(runs or ())
    return messages


class KafkaSource:
    """A :class:`~consumers.base.Source` over a Kafka consumer group (kafka-python).

    :param config: the frozen source settings.
    :param on_assign: hook run on kafka-python's I/O thread after an assignment.
    :param on_revoke: hook run on kafka-python's I/O thread after a revocation.
    :param event_times: the event time of each message (decoded from its value); with
        ``max_skew_s`` > 0 the partitions are aligned in event time (see
        :mod:`consumers.align`): a poll hands out only records at most ``max_skew_s``
        seconds past the slowest partition that still has records, the others are held
        back (their partitions paused) until the slower ones caught up.
    :param max_skew_s: the alignment's bound in event-time seconds; 0 (or no
        ``event_times``): no alignment, records are handed out as fetched.
    :raises SourceUnavailable: the brokers cannot be reached at construction.
    """

    #: event-time alignment of the partitions (None: off), see consumers.align; a class
    #: default too, for sources built without ``__init__`` (tests of the poll alone)
    _aligner: EventTimeAligner[TopicPartition] | None = None

    def __init__(
        self,
        config: KafkaSourceConfig,
        on_assign: PartitionHook | None = None,
        on_revoke: PartitionHook | None = None,
        event_times: EventTimes | None = None,
        max_skew_s: float = 0.0,
    ) -> None:
        self.config = config
        self.name = f"kafka:{config.topic}"
        self._checkpoint = Checkpoint(config.commit_interval_s)
        self._lag = LagSampler(config.lag_interval_s, config.probe_timeout_ms)
        self._failed = False
        self._closed = False
        self._producer: KafkaProducer | None = None
        #: dead letters sent (or not yet, ``None``) but not acknowledged: see sync_dead_letters
        self._dlq_pending: list[tuple[DeadLetter, FutureRecordMetadata | None]] = []
        self._last_ok = float("-inf")
        self._last_probe = float("-inf")
        self.commits = 0
        self.commit_failures = 0
        self.dead_letters = 0
        #: record batches skipped because they could not be decoded (see the module docstring)
        self.undecodable_batches = 0
        #: topics found deleted and created again (see :meth:`restart_topics`)
        self.topic_recreations = 0
        #: times the consumer subscribed again for a changed partition set or a re-created topic
        self.resubscribes = 0
        #: the topic's partitions in metadata as last seen by an assignment or a poll, and
        #: whether a change of them calls for subscribing again (see _note_partitions)
        self._partitions_seen: frozenset[int] | None = None
        self._resubscribe_due = False
        #: revoke checkpoints running now: commits wait (see checkpoint_on_revoke); set
        #: when none runs: poll waits for it (a late one must not run beside the caller)
        self._holding_commits = 0
        self._holding_lock = threading.Lock()
        self._no_revoke_worker = threading.Event()
        self._no_revoke_worker.set()
        self._user_on_assign = on_assign
        self._aligner = None
        self._event_times = event_times
        if event_times is not None and max_skew_s > 0:
            self._aligner = EventTimeAligner(max_skew_s)
        #: the first held offset of each partition revoked while it held records, until the
        #: next assignment seeks the kept ones back to it (see _on_revoked, _on_assigned)
        self._rewind: dict[TopicPartition, int] = {}
        #: kept partitions moved back to their first held record at an assignment
        self.rewinds = 0
        #: end offsets of caught-up partitions read for the aligner, and the aligner's clock
        #: when each was read (see _check_ends); reads done and failed
        self._ends: dict[TopicPartition, int] = {}
        self._checked_at: dict[TopicPartition, float] = {}
        self._last_check = float("-inf")
        self.end_checks = 0
        self.end_check_failures = 0
        #: the client that reads them (its own connection, see _check_ends), made at first use
        self._offsets: KafkaConsumer | None = None
        self._user_on_revoke = on_revoke
        self._holding = False  # the last aligned poll held records back (logged on change)
        try:
            self._consumer = KafkaConsumer(**consumer_kwargs(config))
        except KafkaError as exc:
            raise SourceUnavailable(f"cannot reach {config.bootstrap_servers}: {exc!r}") from exc
        self._listener = CommitOnRevoke(
            self._consumer,
            self._checkpoint,
            self._lag,
            lambda: self._failed,
            self._on_assigned,
            self._on_revoked,
            revoke_timeout_s=config.revoke_timeout_ms() / 1000,
        )
        self._consumer.subscribe([config.topic], listener=self._listener)
        log.info(
            "kafka source topic=%s group=%s servers=%s",
            config.topic,
            config.consumer_group,
            config.bootstrap_servers,
        )

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        """Return up to ``max_records`` messages, waiting at most ``timeout_ms`` ms.

        Also samples lag and probes the broker when due. Retriable Kafka errors give ``[]``.
        A record batch that cannot be decoded is skipped and returned as one
        :class:`~consumers.base.UndecodableRecord` per offset (see the module docstring).

        :raises SourceUnavailable: on a non-retriable Kafka error.
        """
        try:
            batches = self._poll_batches(max_records, timeout_ms)
        except Exception as exc:
            skipped = self._skip_undecodable(exc)
            if skipped and self._aligner is not None:
                # records of that partition held back come first: offsets stay in order
                origin = skipped[0].origin
                held = self._aligner.flush(TopicPartition(origin.topic, origin.partition))
                return [*partition_runs([held]), *skipped] if held else skipped
            if skipped:
                return skipped
            if not isinstance(exc, KafkaError):
                raise
            if getattr(exc, "retriable", False):
                log.warning("poll failed (retriable): %r", exc)
                return []
            raise SourceUnavailable(f"poll failed: {exc!r}") from exc
        # a revoke checkpoint the listener gave up waiting for may still run (on its worker
        # thread, holding the loop's lock): the caller must not go on beside it (a trace
        # source changes its open traces after this returns, which that checkpoint reads)
        self._no_revoke_worker.wait()
        assigned = self._listener.assigned()
        messages = partition_runs(records for tp, records in batches.items()
                                  if (tp.topic, tp.partition) in assigned)  # fmt: skip
        if messages:
            self._last_ok = time.monotonic()
        self._maybe_probe()
        self._follow_partitions()
        return messages

    def checkpoint_on_revoke(self, checkpoint: RevokeCheckpoint | None) -> None:
        """Have a revocation run ``checkpoint`` (the poll loop's, which hands this source its
        processed messages through :meth:`commit`) before the revoked partitions' offsets are
        committed and forgotten; ``None`` unhooks it. The listener runs it on a worker thread
        and waits for it at most ``revoke_checkpoint_timeout_ms`` (see
        :mod:`consumers.rebalance`); meanwhile :meth:`commit` stores without committing."""
        if checkpoint is None:
            self._listener.set_revoke_checkpoint(None)
            return

        def holding_commits() -> None:
            with self._holding_lock:
                self._holding_commits += 1
                self._no_revoke_worker.clear()
            try:
                checkpoint()
            finally:
                with self._holding_lock:
                    self._holding_commits -= 1
                    if not self._holding_commits:
                        self._no_revoke_worker.set()

        self._listener.set_revoke_checkpoint(holding_commits)

    def _on_assigned(self, keys: list[tuple[str, int]]) -> None:
        """Assignment hook (kafka-python's I/O thread, the consumer thread waiting in
        ``poll``): seek the kept partitions back to their first held record (see
        :meth:`_rewind_kept`); when the topic's partition set in metadata changed since the
        last assignment, this assignment may be stale (see the module docstring), so have
        :meth:`poll` subscribe again; then run the caller's hook."""
        self._rewind_kept(keys)
        self._note_partitions()
        if self._user_on_assign is not None:
            self._user_on_assign(keys)

    def _on_revoked(self, keys: list[tuple[str, int]]) -> None:
        """Revocation hook (kafka-python's I/O thread, the consumer thread waiting in
        ``poll`` or ``close``; after the revoked partitions' processed offsets were
        committed, and also for lost partitions): release the records the aligner holds for
        them, remembering each one's first held offset for :meth:`_rewind_kept`; then run
        the caller's hook."""
        if self._aligner is not None:
            tps = [TopicPartition(topic, partition) for topic, partition in keys]
            for tp, records in self._aligner.release(tps).items():
                first = int(records[0].offset)
                self._rewind[tp] = min(first, self._rewind.get(tp, first))
            for tp in tps:  # its end is read again when it holds records back
                self._ends.pop(tp, None)
                self._checked_at.pop(tp, None)
        if self._user_on_revoke is not None:
            self._user_on_revoke(keys)

    def _rewind_kept(self, keys: list[tuple[str, int]]) -> None:
        """Seek each partition of ``keys`` revoked while it held records back to its first
        held offset when kafka-python kept its position (an eager rebalance revokes every
        partition and keeps the ``TopicPartitionState`` of those it assigns again: their
        position is past the held records, which would be skipped, and later commits would
        move past them). A partition whose state is new (revoked for good before, or lost)
        has no position yet: kafka-python reads it from the committed offset, which is at
        most its first held offset (held records are never committed), so it is left
        alone. Every remembered offset is dropped: a partition not assigned again belongs
        to another member now."""
        rewind, self._rewind = self._rewind, {}
        if not rewind:
            return
        assignment = getattr(getattr(self._consumer, "_subscription", None), "assignment", {})
        for topic, partition in keys:
            tp = TopicPartition(topic, partition)
            first = rewind.get(tp)
            position = getattr(getattr(assignment.get(tp), "position", None), "offset", None)
            if first is None or position is None or position <= first:
                continue
            self._consumer.seek(tp, first)
            self.rewinds += 1
            log.info("partition %s[%d] kept at a rebalance: reading again from offset %d, its "
                     "first record held back (the position was %d)", topic, partition, first,
                     position)  # fmt: skip

    def _metadata_partitions(self) -> frozenset[int]:
        """The topic's partitions in the consumer's last metadata (empty when unknown)."""
        cluster = getattr(getattr(self._consumer, "_client", None), "cluster", None)
        partitions_for_topic = getattr(cluster, "partitions_for_topic", None)
        found = partitions_for_topic(self.config.topic) if callable(partitions_for_topic) else None
        return frozenset(found or ())

    def _note_partitions(self) -> None:
        """Compare the topic's partitions in metadata with the set last seen (an empty set,
        a topic being deleted, is no change); on a change, remember the new set and mark a
        re-subscription due."""
        now = self._metadata_partitions()
        if not now:
            return
        if self._partitions_seen is not None and now != self._partitions_seen:
            log.warning("topic %s has partitions %s, was %s: subscribing again",
                        self.config.topic, sorted(now), sorted(self._partitions_seen))  # fmt: skip
            self._resubscribe_due = True
        self._partitions_seen = now

    def _follow_partitions(self) -> None:
        """Subscribe again when the topic's partition set changed (partitions added, or the
        topic re-created with another count), so the group assigns every partition."""
        self._note_partitions()
        if self._resubscribe_due:
            self._resubscribe()

    def _resubscribe(self) -> None:
        """Commit the offsets processed so far, leave the group and join it again
        (``unsubscribe`` calls no rebalance listener, so the assignment is forgotten here)."""
        self._resubscribe_due = False
        if self._aligner is not None:
            self._aligner.clear()  # read again from the committed offsets
            self._rewind.clear()
            self._ends.clear()
            self._checked_at.clear()
        self._commit_stored()
        self._consumer.unsubscribe()
        self._listener.forget_all()
        if self._aligner is not None:
            self._drop_parked()  # nothing is paused now: a new assignment must be fetched
        self._consumer.subscribe([self.config.topic], listener=self._listener)
        self.resubscribes += 1

    def _poll_batches(self, max_records: int, timeout_ms: int) -> dict[Any, list[Any]]:
        """kafka-python's ``poll``: once without waiting, then (if nothing came) once with
        ``timeout_ms``.

        Why not one ``poll(timeout_ms)``: kafka-python 3.0 sleeps ``retry_backoff_ms``
        (100 ms) inside ``poll`` when it sees no buffered record and no fetch in flight. A
        fetch response that lands between its buffer check and its fetch bookkeeping
        (``fetch_records`` → ``send_fetches``) looks like that, and records already in its
        buffer then wait up to 100 ms. It lands there most often on the first poll after a
        batch was processed (kafka-python's I/O thread only gets the GIL back then): 5 of 9
        instrumented 50,000-event runs of ``benchmarks/bench_pipeline.py`` slept 1 to 3
        times (100-300 ms of a ~1.5 s run). A ``timeout_ms=0`` poll never sleeps, and the
        second one finds the records buffered: no sleep in 6 runs. The cost: one more call
        (a round trip to the I/O thread, ~0.3 ms) when the buffer is empty, about 1 % of a
        core more on an idle topic (0.9 → 1.1 %, 10 s of 200 ms polls).
        """
        if self._aligner is not None:
            return self._poll_aligned(self._aligner, max_records, timeout_ms)
        poll = self._consumer.poll
        batches: dict[Any, list[Any]] = poll(timeout_ms=0, max_records=max_records)
        if not batches and timeout_ms > 0:
            batches = poll(timeout_ms=timeout_ms, max_records=max_records)
        return batches

    def _poll_aligned(
        self, aligner: EventTimeAligner[TopicPartition], max_records: int, timeout_ms: int
    ) -> dict[Any, list[Any]]:
        """:meth:`_poll_batches` with the partitions aligned in event time (see
        :mod:`consumers.align`): fetched records go to the aligner's buffers, the records it
        hands out are returned (one list per partition, the earliest partition first), and
        the partitions with records buffered are paused, the others resumed. Waits up to
        ``timeout_ms`` only when nothing can be handed out without it."""
        poll = self._consumer.poll
        self._buffer(aligner, poll(timeout_ms=0, max_records=max_records))
        taken = self._take(aligner, max_records)
        if not taken and timeout_ms > 0:
            self._sync_pauses(aligner)  # a partition at the frontier must be fetched
            wait_ms = timeout_ms
            if self._wanted:  # records wait for an end check: poll until it is due
                due_in = self._last_check + END_CHECK_INTERVAL_S - time.monotonic()
                wait_ms = max(0, min(timeout_ms, int(due_in * 1000) + 1))
            self._buffer(aligner, poll(timeout_ms=wait_ms, max_records=max_records))
            taken = self._take(aligner, max_records)
        self._sync_pauses(aligner)
        holding = bool(aligner.buffered())
        if holding != self._holding:
            self._holding = holding
            if holding:
                log.info("aligning partitions in event time: holding back %d records of "
                         "partitions more than %g s ahead of the slowest one that has records",
                         aligner.buffered_count(), aligner.max_skew_s)  # fmt: skip
            else:
                log.info("partitions aligned in event time: no record held back")
        return dict(taken)

    #: caught-up partitions whose end check the last :meth:`_take` wanted (none: no record
    #: waits for one)
    _wanted: frozenset[TopicPartition] = frozenset()

    def _take(
        self, aligner: EventTimeAligner[TopicPartition], max_records: int
    ) -> list[tuple[TopicPartition, list[Any]]]:
        """``aligner.take`` after reading the end offsets of the caught-up partitions that
        hold records back (:meth:`EventTimeAligner.checks_wanted`) when the last read is
        :data:`END_CHECK_INTERVAL_S` old (else they wait for a later poll)."""
        logs = self._log_positions()
        wanted = aligner.checks_wanted(logs)
        if wanted and time.monotonic() - self._last_check >= END_CHECK_INTERVAL_S:
            self._check_ends(aligner, wanted)
            logs = self._log_positions()
            wanted = aligner.checks_wanted(logs)
        self._wanted = frozenset(wanted)
        return aligner.take(logs, max_records)

    def _check_ends(
        self, aligner: EventTimeAligner[TopicPartition], tps: Iterable[TopicPartition]
    ) -> None:
        """Read the end offsets of ``tps`` (one ListOffsets request; at most
        ``probe_timeout_ms``) and remember each with the aligner's clock before the request
        was sent, which :meth:`_log_positions` gives as ``checked_at``. Tansu answers the last
        record batch's base offset + 1 (see :mod:`consumers.lag`): still above the position
        exactly when a batch starts at or past it, which is all "records left" needs. A
        failed read is counted and logged, and ``tps`` hold no one and are not read for
        ``IDLE_HOLD_S`` (:meth:`EventTimeAligner.end_unreadable`): one partition whose leader
        is away fails the whole request after ``probe_timeout_ms``, and holding every live
        record ``IDLE_HOLD_S`` with its partition paused cut a 1,000/s stream to ~80/s.

        The read goes through a client of its own (no group; made at the first read, closed
        with the source): a broker answers a connection's requests in order, and on the
        consumer's connection the read waited behind its fetch in flight, which a broker
        holds up to ``fetch_max_wait_ms`` (500 ms) when there is nothing new — as long as
        the timeout, so every read of a quiet partition failed (a test, s40)."""
        asked = list(tps)
        self._last_check = time.monotonic()
        now = aligner.now()
        try:
            if self._offsets is None:
                self._offsets = KafkaConsumer(**self.config.client_kwargs(), group_id=None,
                                              enable_auto_commit=False)  # fmt: skip
            ends = self._offsets.end_offsets(asked, self.config.probe_timeout_ms)
        except KafkaError as exc:
            self.end_check_failures += 1
            aligner.end_unreadable(asked)
            log.info("reading the end offsets of caught-up partitions failed: %r", exc)
            return
        self.end_checks += 1
        for tp, end in ends.items():
            if end is not None:
                self._ends[tp] = max(int(end), self._ends.get(tp, 0))
                self._checked_at[tp] = now

    def _buffer(
        self, aligner: EventTimeAligner[TopicPartition], batches: dict[Any, list[Any]]
    ) -> None:
        """Add a consumer poll's records of the assigned partitions to the aligner's
        buffers with their event times (a rebalance inside the poll released the revoked
        partitions' buffers, see :meth:`_on_revoked`)."""
        assert self._event_times is not None  # set with the aligner
        assigned = self._listener.assigned()
        for tp, records in batches.items():
            if records and (tp.topic, tp.partition) in assigned:
                aligner.add(tp, records, self._event_times(messages_from_records(records)))

    def _log_positions(self) -> dict[TopicPartition, LogPosition]:
        """Position and high watermark of each assigned partition, as the consumer knows
        them (no request: kafka-python's subscription state, its last fetch responses, and
        the end offsets :meth:`_check_ends` read, with when)."""
        assignment = getattr(getattr(self._consumer, "_subscription", None), "assignment", {})
        logs: dict[TopicPartition, LogPosition] = {}
        for topic, partition in self._listener.assigned():
            tp = TopicPartition(topic, partition)
            state = assignment.get(tp)
            position = getattr(getattr(state, "position", None), "offset", None)
            highwater = getattr(state, "highwater", None)
            end = self._ends.get(tp)
            if end is not None and (highwater is None or end > highwater):
                highwater = end
            logs[tp] = LogPosition(position, highwater, self._checked_at.get(tp))
        return logs

    def _sync_pauses(self, aligner: EventTimeAligner[TopicPartition]) -> None:
        """Pause the assigned partitions with records buffered (nothing more is fetched for
        them until they are handed out) but those only a pending end read holds
        (:meth:`EventTimeAligner.held_for_reads`), resume the other paused ones, and drop the fetch
        data kafka-python parked for partitions not paused (:meth:`_drop_parked`)."""
        assigned = self._listener.assigned()
        reading = aligner.held_for_reads(self._log_positions())  # fetched on: see there
        want = {tp for tp in aligner.buffered() - reading if (tp.topic, tp.partition) in assigned}
        paused = {tp for tp in self._consumer.paused() if (tp.topic, tp.partition) in assigned}
        for tp in want - paused:
            try:
                self._consumer.pause(tp)
            except KeyError:  # revoked meanwhile (kafka-python's I/O thread): nothing to pause
                pass
        for tp in paused - want:
            try:
                self._consumer.resume(tp)
            except KeyError:
                continue
        self._drop_parked()

    def _drop_parked(self) -> None:
        """Drop what kafka-python's fetcher parked for every partition that is not paused
        now, so it fetches them again from their position.

        kafka-python 3.0.12 parks a paused partition's fetched records (KAFKA-7548) and
        restores them after ``resume`` only when its in-line slot is ``None``, but leaves an
        exhausted record set there (falsy, not ``None``), and never fetches a partition
        with parked data: a partition with parked data that is not paused stalls for good.
        Not only one this source resumed (seen: 3 of 4 partitions stuck at 1,000 of 1,500
        records, nothing buffered, nothing paused): the fetcher keeps parked data when the
        partition's state goes (a re-subscription, a partition revoked and assigned again,
        a lost one), so the partition assigned afresh, not paused, was never read again (a
        review: one of 2 partitions read 0 of 300 records after a re-subscription). Hence
        every aligned poll drops the parked data of every partition not paused, whatever
        made it so: by construction none is left to block a fetch. It is safe: parked data
        was never handed out (the fetcher parks before handing out) and starts at the
        partition's position (or at an old one, which the fetcher would drop anyway), so
        dropping it costs one fetch again. Only kafka-python's poll touches these dicts,
        and this runs on the consumer thread outside it."""
        fetcher = getattr(self._consumer, "_fetcher", None)
        records = getattr(fetcher, "_paused_partition_records", None)
        fetches = getattr(fetcher, "_paused_completed_fetches", None)
        if not records and not fetches:
            return
        paused = self._consumer.paused()
        if isinstance(records, dict):
            for tp in [tp for tp in records if tp not in paused]:
                records.pop(tp).drain()
        if isinstance(fetches, dict):
            for tp in [tp for tp in fetches if tp not in paused]:
                del fetches[tp]

    def topic_ids(self) -> dict[str, str]:
        """``{topic: topic id}`` (UUID text) of the subscribed topic while some of its
        partitions are assigned, as the consumer's last metadata gave it; ``{}`` when none
        are assigned or the broker gives no topic ids (metadata before v10)."""
        if not self._listener.assigned():
            return {}
        cluster = getattr(getattr(self._consumer, "_client", None), "cluster", None)
        topic_id = getattr(cluster, "topic_id", None)
        found = topic_id(self.config.topic) if callable(topic_id) else None
        return {} if found is None else {self.config.topic: str(found)}

    def restart_topics(self, topics: Iterable[str]) -> None:
        """The ``topics`` were deleted and created again: forget the offsets stored and
        sampled for their assigned partitions, commit offset 0 for them (the group's offsets
        point into the old topics), count each re-creation and subscribe again, so the group
        assigns every partition the new topics have (a re-created topic may have more).
        A failed commit is logged and counted: the partition's ``past_end`` then shows it."""
        wanted = set(topics)
        parts = sorted(key for key in self._listener.assigned() if key[0] in wanted)
        self._checkpoint.drop(parts)
        self._lag.drop(parts)
        if parts:
            try:
                self._consumer.commit(to_kafka_offsets(dict.fromkeys(parts, 0)),
                                      timeout_ms=self.config.request_timeout_ms)  # fmt: skip
            except KafkaError as exc:
                self.commit_failures += 1
                log.warning("committing offset 0 of re-created %s failed: %r", parts, exc)
        self.topic_recreations += len(wanted)
        log.warning("topics %s were re-created: %d partitions restart at offset 0; subscribing "
                    "again for all partitions", sorted(wanted), len(parts))  # fmt: skip
        self._resubscribe()

    def _skip_undecodable(self, exc: BaseException) -> list[RawMessage]:
        """Seek past the record batch whose decoding raised ``exc`` and return one
        :class:`UndecodableRecord` per skipped offset; ``[]`` when ``exc`` was not raised while
        kafka-python unpacked a batch of an assigned partition (a network error, say)."""
        found = undecodable_batch(exc)
        if found is None:
            return []
        tp, base, last, codec = found
        if (tp.topic, tp.partition) not in self._listener.assigned():
            return []
        try:
            position = int(self._consumer.position(tp, timeout_ms=self.config.request_timeout_ms))
        except (KafkaError, TypeError, ValueError):
            position = base
        first = max(position, base)
        last = max(last, first)  # a legacy batch may not say where it ends: skip one record
        detail = (f"record batch at offsets {base}..{last} ({codec}) could not be decoded "
                  f"({type(exc).__name__}); its records were skipped")  # fmt: skip
        log.error("skipping undecodable record batch %s[%d] offsets %d..%d (%s): %s",
                  tp.topic, tp.partition, first, last, codec, type(exc).__name__)  # fmt: skip
        self._consumer.seek(tp, last + 1)
        self.undecodable_batches += 1
        return [
            UndecodableRecord(None, Origin(tp.topic, tp.partition, offset), detail=detail)
            for offset in range(first, last + 1)
        ]

    def _maybe_probe(self) -> None:
        now = time.monotonic()
        probe_due = now - max(self._last_ok, self._last_probe) >= self.config.probe_interval_s
        assigned = self._listener.assigned()
        if not assigned or not (probe_due or self._lag.due()):
            return
        self._last_probe = now
        if self._lag.sample(self._consumer, assigned):
            self._last_ok = time.monotonic()

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        """Store the offsets of processed ``messages``; commit ``last + 1`` when due.

        A commit happens when ``commit_interval_s`` passed since the last one, or ``force``,
        except while a revoke checkpoint runs (see :meth:`checkpoint_on_revoke`): then the
        offsets are only stored. Messages of partitions no longer assigned are skipped (their
        new owner replays them).
        Kafka commit errors are counted and logged, never raised.

        :raises InvalidStoredOffset: an offset is not greater than one stored before.
        """
        if revoke_abandoned():  # a late revoke checkpoint: its assignment was forgotten
            log.warning("not storing the offsets of %d messages: the checkpoint before a "
                        "revoke finished after its timeout (the next owner replays them)",
                        len(messages))  # fmt: skip
            return
        last: dict[tuple[str, int], int] = {}
        first: dict[tuple[str, int], int] = {}
        for msg in messages:
            o = msg.origin
            if o.topic is not None and o.partition is not None and o.offset is not None:
                key = (o.topic, o.partition)
                last[key] = max(last.get(key, -1), o.offset)
                first[key] = min(first.get(key, o.offset), o.offset)
        assigned = self._listener.assigned()
        for (topic, partition), offset in last.items():
            if (topic, partition) in assigned:
                self._checkpoint.store(topic, partition, offset, first[topic, partition])
            else:
                log.info(
                    "not storing %s[%d] offset=%d: partition revoked", topic, partition, offset
                )
        if (force or self._checkpoint.due()) and not self._holding_commits:
            self._commit_stored()

    def _commit_stored(self) -> None:
        offsets = self._checkpoint.to_commit(self._listener.assigned())
        if not offsets:
            self._checkpoint.mark_committed({})
            return
        try:
            self._consumer.commit(
                to_kafka_offsets(offsets), timeout_ms=self.config.request_timeout_ms
            )
        except KafkaError as exc:
            self.commit_failures += 1
            for (t, p), off in sorted(offsets.items()):
                log.warning(
                    "commit failed %s[%d] offset=%d (next owner replays): %r", t, p, off, exc
                )
            return
        self._checkpoint.mark_committed(offsets)
        self._lag.set_committed(offsets)
        self._last_ok = time.monotonic()
        self.commits += 1

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        """Queue ``letters`` for ``dlq_topic``; :meth:`sync_dead_letters` sends them.

        Nothing is produced here: the poll loop syncs before every checkpoint, so no offset
        behind a dead letter is committed before the broker acknowledged the letter, and the
        producer is woken once per checkpoint instead of once per batch (each wake-up hands
        the GIL to its network thread). Until then the letters live only in this process:
        :attr:`pending_dead_letters` tells the loop not to treat their batches as settled.
        """
        self._dlq_pending.extend((letter, None) for letter in letters)

    @property
    def pending_dead_letters(self) -> int:
        """Dead letters queued or sent but not acknowledged yet."""
        return len(self._dlq_pending)

    def _send(self, producer: KafkaProducer, unsent: list[int]) -> None:
        """Hand the letters at ``unsent`` (indexes into the queue, in order) to the producer
        (acks=all, key = original key), replacing each one's ``None`` by its future; stop at
        the first the producer cannot take (no metadata for the topic within
        ``request_timeout_ms``): it and those after it wait for the next sync.

        A DLQ topic of one partition gets each letter with that partition named: where the
        producer's partitioner puts every letter then (a key's murmur2 modulo one, or the one
        partition there is without a key), without its pure-Python murmur2 of the key (~1 µs
        for a 5-byte key, 5 µs for a 36-byte one: ~0.13 µs a byte) and, without a key, its
        sticky-partition pass. A topic of more partitions leaves the choice to the partitioner
        as before.
        """
        topic = self.config.dlq_topic
        pending = self._dlq_pending
        try:
            partitions = producer.partitions_for(topic)  # no wait once metadata is known
            partition = next(iter(partitions)) if len(partitions) == 1 else None
            for i in unsent:
                letter = pending[i][0]
                key = letter.message.key
                if key is not None and len(key) > DLQ_MAX_KEY_BYTES:
                    key = None  # the body carries it; a record key this long may not fit
                future = producer.send(topic, value=dead_letter_value(letter), key=key,
                                       headers=dead_letter_headers(letter),
                                       partition=partition)  # fmt: skip
                pending[i] = (letter, future)
        except KafkaError as exc:
            log.warning("dead letter not sent (retried at the next sync): %r", exc)

    def sync_dead_letters(self) -> None:
        """Wait until every queued dead letter is acknowledged (``request_timeout_ms``).

        Letters not sent yet or refused by the broker are sent again; unacknowledged ones
        stay queued. Calling again after a failure retries without losing any letter (one
        may then land twice: dead letters are at least once).

        :raises DeadLetterError: some letters are not acknowledged yet; nothing of their
            batches may be checkpointed or committed until a later call succeeds.
        """
        if not self._dlq_pending:
            return
        producer = self._dlq_producer()
        unsent = [i for i, (_, future) in enumerate(self._dlq_pending) if future is None]
        if unsent:
            self._send(producer, unsent)
        try:
            producer.flush(timeout=self.config.request_timeout_ms / 1000)
        except KafkaError as exc:
            log.warning("dead-letter flush incomplete: %r", exc)
        left: list[tuple[DeadLetter, FutureRecordMetadata | None]] = []
        for letter, future in self._dlq_pending:
            if future is None or not future.is_done:
                left.append((letter, future))
            elif future.failed():  # refused: send again at the next sync
                log.warning("dead letter refused (sent again): %r", future.exception)
                left.append((letter, None))
            else:
                self.dead_letters += 1
        self._dlq_pending = left
        if left:
            raise DeadLetterError(f"{len(self._dlq_pending)} dead letters not acknowledged")

    def _dlq_producer(self) -> KafkaProducer:
        """The DLQ producer (created on first use). Letters are only sent by
        :meth:`sync_dead_letters`, which flushes right after, so it lingers
        (:data:`DLQ_LINGER_MS`) and batches up to :data:`DLQ_BATCH_BYTES`: a checkpoint's
        letters then leave in one produce request when the flush starts, instead of the
        sender thread draining the first few alone and the 16 KiB default batches the rest."""
        if self._producer is None:
            self._producer = KafkaProducer(
                **self.config.client_kwargs(),
                acks="all",
                max_block_ms=self.config.request_timeout_ms,
                linger_ms=DLQ_LINGER_MS,
                batch_size=DLQ_BATCH_BYTES,
            )
        return self._producer

    def mark_failed(self) -> None:
        """Mark the source failed (after a crash): revoke and close commit nothing more."""
        self._failed = True

    def lag(self) -> list[dict[str, Any]]:
        """Per partition ``{topic, partition, end_offset, committed_offset, position, lag}``
        from the last sample: ``lag`` is ``end_offset - committed_offset`` (``position`` only
        while nothing is committed; ``None`` when unknown), never ``end_offset - position``.
        Thread-safe."""
        return [p.as_dict() for p in self._lag.snapshot()]

    def refresh_lag(self) -> bool:
        """Sample lag now (consumer thread only); ``True`` when the broker answered."""
        ok = self._lag.sample(self._consumer, self._listener.assigned())
        if ok:
            self._last_ok = time.monotonic()
        return ok

    def assignment(self) -> set[tuple[str, int]]:
        """The partitions assigned now, as ``{(topic, partition)}``. Thread-safe."""
        return self._listener.assigned()

    def ready(self) -> bool:
        """True when partitions are assigned, the broker answered within
        ``ready_stale_after_s`` seconds and no committed offset is past its partition's end
        (see :mod:`consumers.lag`). Thread-safe."""
        return self.not_ready_reason() is None

    def not_ready_reason(self) -> str | None:
        """Why :meth:`ready` is false (no partition or offset content), ``None`` when ready.
        Thread-safe."""
        if not self._listener.assigned():
            return "source not ready (no partition assigned)"
        if time.monotonic() - self._last_ok >= self.config.ready_stale_after_s:
            return "source not ready (broker unreachable)"
        past = [f"{p.topic}[{p.partition}] by {p.past_end}" for p in self._lag.snapshot()
                if p.past_end]  # fmt: skip
        if past:
            return ("consumer offset past the end of the log (the group points at offsets "
                    f"the partition does not have): {', '.join(past)}")  # fmt: skip
        return None

    def status(self) -> dict[str, Any]:
        """JSON-able status: assignment, commit/rebalance counters, lag. Thread-safe.

        ``committed_offsets`` (``{"topic[partition]": offset}``) is the group's committed
        offset of each held partition where one is known — this replica's last successful
        commit, else the group's offset fetched at assignment — the same value as each
        ``lag`` entry's ``committed_offset``.
        """
        assigned = sorted(self._listener.assigned())
        alignment = None
        if self._aligner is not None:  # its status, and the kept partitions read again
            alignment = {**self._aligner.status(), "rewinds": self.rewinds,
                         "end_checks": self.end_checks,
                         "end_check_failures": self.end_check_failures}  # fmt: skip
        return {
            "source": self.name,
            "topic": self.config.topic,
            "consumer_group": self.config.consumer_group,
            "ready": self.ready(),
            "failed": self._failed,
            "assigned_partitions": [p for _, p in assigned],
            "assigned_count": len(assigned),
            "commits": self.commits + self._listener.revoke_commits,
            "commit_failures": self.commit_failures + self._listener.revoke_commit_failures,
            "rebalances": self._listener.rebalances,
            "revoke_checkpoints": self._listener.revoke_checkpoints,
            "revoke_checkpoint_timeouts": self._listener.revoke_checkpoint_timeouts,
            "revoke_checkpoint_failures": self._listener.revoke_checkpoint_failures,
            "dead_letters": self.dead_letters,
            "undecodable_batches": self.undecodable_batches,
            "topic_recreations": self.topic_recreations,
            "resubscribes": self.resubscribes,
            "alignment": alignment,
            # the group's committed offsets, as the lag list has them (not only this run's
            # commits: a restarted replica's said {} beside a lag list committed to the end)
            "committed_offsets": {
                f"{t}[{p}]": off for (t, p), off in self._lag.committed().items()
            },
            "uncommitted_offsets": self._checkpoint.uncommitted(assigned),
            "lag": self.lag(),
        }

    def close(self) -> None:
        """Leave the group and release connections.

        Commits nothing the loop did not hand to :meth:`commit`: offsets already stored are
        committed by the revoke listener (skipped after :meth:`mark_failed`); positions of
        fetched but unprocessed messages never are (``close(autocommit=False)``).
        """
        if self._closed:
            return
        self._closed = True
        try:
            self._consumer.close(autocommit=False, timeout_ms=self.config.request_timeout_ms)
        except KafkaError as exc:
            log.warning("consumer close failed (%s); connections dropped", type(exc).__name__)
        finally:
            self._close_producer()
            if self._offsets is not None:
                try:
                    self._offsets.close()
                except KafkaError as exc:
                    log.warning("end-offset client close failed (%s)", type(exc).__name__)

    def _close_producer(self) -> None:
        """Close the DLQ producer; if the broker is gone, drop its unsent batches rather than
        leave a sender thread retrying them forever (they were never acknowledged, so the
        offsets behind them were never committed and the messages will be redelivered)."""
        if self._producer is None:
            return
        producer, self._producer = self._producer, None
        try:
            producer.close(timeout=self.config.request_timeout_ms / 1000)
        except KafkaError as exc:
            log.warning("DLQ producer close timed out (%s); closing now", type(exc).__name__)
            try:
                producer.close(timeout=0)
            except KafkaError:
                log.warning("DLQ producer could not close cleanly; abandoned")
