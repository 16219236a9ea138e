"""The engine: decode → pipeline → metrics → persisted totals, shared by every ingest path.

The poll loop (Kafka, file, stdin) and HTTP ingest (``POST /v1/events``) both hand raw
messages to one :class:`Engine`; its lock serialises them, so the stages (which are not thread
safe) see one batch at a time.

Exactly-once effects for Kafka redeliveries: the engine remembers, per ``(topic, partition)``,
the last offset it applied, and checkpoints it with the stage states and the totals in one
transaction. After a crash the state and the remembered offsets roll back together, the
broker redelivers from the last commit, and a redelivered offset at or below the remembered
one is counted as ``redelivered`` (a duplicate) instead of being applied twice. Events sent
twice under the same ``event_id`` are caught by the dedup stage.

Remembered offsets belong to one *topic identity*, not to a topic name: a topic deleted and
created again under the same name starts its offsets at 0, and offsets remembered from the
old topic would drop its new events as "redelivered" (951 of 1,000 in the probe of issue 19).
The engine keeps the topic id (KIP-516, from the source's metadata) next to the applied
offsets; :meth:`Engine.note_topic_id` forgets a topic's offsets when its id changes, and the
poll loop then has the source read the new topic from its beginning.

All-time totals (``consumed``, ``processed``, ``dead_lettered`` by reason, ``duplicates``,
``redelivered``, ``dropped`` by reason, ``blank_lines`` and the optional ``fields_dropped`` of
kept events) are
persisted under ``totals`` so they survive restarts; Prometheus counters
restart at zero with the process, as counters do.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import groupby, islice
from operator import attrgetter, itemgetter, lt
from typing import Any, TypedDict

from consumers.base import BlankLine, DeadLetter, PartitionRuns, RawMessage
from consumers.decoding import DroppedFields, collect_dropped_fields, note_dropped_fields
from consumers.errors import ErrorCallback, default_on_error
from service.events import QueryLogEvent
from service.pipeline import Batch, Pipeline, StageError
from service.pipeline.dedup import DUPLICATE
from service.state import StateError, StateStore
from service.telemetry import BatchCounts, Metrics

PROCESSING_FAILED = "processing_failed"
REDELIVERED = "redelivered"
TOTALS_KEY = "totals"
APPLIED_KEY = "source/kafka-applied-offsets"
TOPIC_IDS_KEY = "source/kafka-topic-ids"

log = logging.getLogger(__name__)

# C-level accessors for the per-message passes (no Python call per message)
_topic_of = attrgetter("origin.topic")
_partition_of = attrgetter("origin.topic", "origin.partition")
_offset_of = attrgetter("origin.offset")
_event_of = itemgetter(1)


def _streams(
    decoded: Sequence[tuple[RawMessage, QueryLogEvent]],
    messages: Sequence[RawMessage] = (),
    dead: Sequence[DeadLetter] = (),
) -> list[str] | None:
    """The Kafka ``topic[partition]`` each decoded event was read from, or ``None`` when the
    first was not read from Kafka (a file, stdin or HTTP batch is one stream).

    ``messages`` and ``dead``: what ``decoded`` was decoded from and the decoder's dead
    letters of it (each message in exactly one of the two, in order). When ``messages`` is
    a poll that says where its partitions' runs are (:class:`~consumers.base.PartitionRuns`,
    the Kafka source's), the streams come from the runs: each run's label repeated for its
    messages less its dead letters (found by their partition), with no origin read or label
    built per event (about 1 µs an event on the Kafka path, issue 22 item 3: a
    :class:`~consumers.kafka_source.RecordMessage` builds its origin when asked). Any other
    list: each decoded message's origin, as before. The same labels either way.
    """
    if not decoded:
        return None
    if type(messages) is PartitionRuns and messages.covered():
        streams = _run_streams(messages, dead)
        if len(streams) == len(decoded):
            return streams
    if decoded[0][0].origin.partition is None:
        return None
    return [f"{m.origin.topic}[{m.origin.partition}]" for m, _ in decoded]


def _run_streams(messages: PartitionRuns, dead: Sequence[DeadLetter]) -> list[str]:
    """One ``topic[partition]`` label per message of ``messages`` that is not among the
    ``dead`` letters' messages, in order: each run's label times its length less the dead
    letters of its partition (a poll has one run per partition). O(runs + dead letters)
    Python steps; the list itself is built at C level."""
    dead_in: dict[tuple[str | None, int | None], int] = {}
    for letter in dead:
        origin = letter.message.origin
        key = (origin.topic, origin.partition)
        dead_in[key] = dead_in.get(key, 0) + 1
    streams: list[str] = []
    for run in messages.runs:
        kept = run.stop - run.start - dead_in.get((run.topic, run.partition), 0)
        streams += [f"{run.topic}[{run.partition}]"] * kept
    return streams


_timestamp_of = attrgetter("timestamp")

Decoder = Callable[
    [Sequence[RawMessage]], tuple[list[tuple[RawMessage, QueryLogEvent]], list[DeadLetter]]
]
#: HTTP ingest's hook: makes a batch's dead letters durable before it is applied and
#: returns those to count (see :meth:`Engine.process`); raises when they cannot be written.
AdmitDead = Callable[[list[DeadLetter]], list[DeadLetter]]


class TotalsJson(TypedDict):
    """:meth:`Totals.to_json`: the all-time counts as stored in the state and shown in
    ``/v1/status`` ``totals`` (``dead_lettered`` and ``dropped`` by reason; ``fields_dropped``
    by ``"<field>: <reason>"``, the optional fields the decoder or the trace mapping dropped
    from kept events)."""

    consumed: int
    processed: int
    duplicates: int
    redelivered: int
    dead_lettered: dict[str, int]
    dropped: dict[str, int]
    fields_dropped: dict[str, int]
    blank_lines: int


@dataclass
class Totals:
    """All-time counts; ``consumed == processed + Σ dead_lettered + duplicates + Σ dropped``
    (``duplicates`` includes the ``redelivered`` ones). ``dropped``: events a pipeline stage
    removed, by reason; ``fields_dropped``: optional fields dropped from events that were
    kept, ``{"<field>: <reason>": n}`` (not events, so outside that sum); ``blank_lines``:
    blank lines of a JSONL input (no data: neither consumed nor dead letters, so lines
    read = ``consumed + blank_lines``)."""

    consumed: int = 0
    processed: int = 0
    duplicates: int = 0
    redelivered: int = 0
    dead_lettered: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    fields_dropped: dict[str, int] = field(default_factory=dict)
    blank_lines: int = 0

    def add(self, counts: BatchCounts, redelivered: int, dropped: Mapping[str, int]) -> None:
        """Add one batch's counts."""
        self.consumed += counts.consumed
        self.processed += counts.processed
        self.duplicates += counts.duplicates
        self.redelivered += redelivered
        self.blank_lines += counts.blank_lines
        _merge(self.dead_lettered, counts.dead_lettered)
        _merge(self.dropped, dropped)

    def to_json(self) -> TotalsJson:
        """Return a JSON-able copy."""
        return {
            "consumed": self.consumed,
            "processed": self.processed,
            "duplicates": self.duplicates,
            "redelivered": self.redelivered,
            "dead_lettered": dict(self.dead_lettered),
            "dropped": dict(self.dropped),
            "fields_dropped": dict(sorted(self.fields_dropped.items())),
            "blank_lines": self.blank_lines,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> Totals:
        """Rebuild from :meth:`to_json` output (``None``: zeros)."""
        if not data:
            return cls()
        return cls(
            int(data.get("consumed", 0)),
            int(data.get("processed", 0)),
            int(data.get("duplicates", 0)),
            int(data.get("redelivered", 0)),
            {str(k): int(v) for k, v in dict(data.get("dead_lettered", {})).items()},
            {str(k): int(v) for k, v in dict(data.get("dropped", {})).items()},
            # absent from states written before the twenty-fifth session: zeros
            {str(k): int(v) for k, v in dict(data.get("fields_dropped", {})).items()},
            # absent from states written before the thirty-eighth session: zero
            blank_lines=int(data.get("blank_lines", 0)),
        )


def _merge(target: dict[str, int], source: Mapping[str, int]) -> None:
    for reason, n in source.items():
        target[reason] = target.get(reason, 0) + n


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one :meth:`Engine.process` call did with its messages."""

    batch: Batch | None
    dead: list[DeadLetter]
    counts: BatchCounts
    redelivered: int
    dropped: dict[str, int]
    #: Letters in ``dead`` already written and counted for an earlier, unacknowledged try of
    #: the same request (HTTP ingest's ``admit_dead``): in ``counts.duplicates``, not in
    #: ``counts.dead_lettered``.
    repeated: int = 0


class Engine:
    """Pipeline, state, metrics and totals behind one lock.

    Args:
        pipeline: the stages.
        state: the state store (checkpoints go there).
        metrics: Prometheus metrics, updated once per batch.
        decode: raw messages → ``(decoded, dead letters)``.
        on_error: quix-style error callback for decode/stage exceptions; ``True`` means
            dead-letter the batch as ``processing_failed`` and go on.
        on_batch: called with every processed batch (the analytics metrics read its
            annotations), under the lock.
        future_tolerance_s: events stamped more than this many seconds ahead of the wall
            clock do not count as the newest event time (as the drift windows keep them
            out); ≥ 0.
    """

    def __init__(
        self,
        pipeline: Pipeline,
        state: StateStore,
        metrics: Metrics,
        decode: Decoder,
        on_error: ErrorCallback = default_on_error,
        on_batch: Callable[[Batch], None] | None = None,
        future_tolerance_s: float = 60.0,
    ) -> None:
        self.pipeline, self.state, self.metrics = pipeline, state, metrics
        self.decode, self.on_error, self.on_batch = decode, on_error, on_batch
        self.lock = threading.RLock()
        self.future_tolerance_s = future_tolerance_s
        self.totals = Totals()
        self._totals_view: TotalsJson = self.totals.to_json()
        self._applied: dict[tuple[str, int], int] = {}
        self._topic_ids: dict[str, str] = {}  # topic -> the id its applied offsets belong to
        self._loaded = False
        self._settled = True
        #: The state held no totals when first loaded (no state file, or a new one): the
        #: totals start at zero here, whatever came before (see :meth:`uncounted_before`).
        self.started_empty = False
        #: ``{(topic, partition): offset}``: the first offset applied of each partition first
        #: read since an empty start, when above 0 (:meth:`uncounted_before`).
        self._first_read: dict[tuple[str, int], int] = {}
        #: Resume positions of resumable sources (files) after the last settled batch: newer
        #: than the checkpoint when a checkpoint failed. Cleared when the state is reloaded.
        self.positions: dict[str, Any] = {}
        #: ``time.monotonic()`` of the last successful checkpoint (``None``: none yet), so a
        #: caller can tell that an earlier state error has been recovered from.
        self.last_checkpoint_s: float | None = None
        #: Called under the lock before every checkpoint (whoever checkpoints: the poll loop
        #: or HTTP ingest): the poll loop sets it to its source's ``sync_dead_letters`` when
        #: that source keeps dead letters in memory until then (Kafka), so no checkpoint can
        #: cover a batch whose dead letters are not durable. It raises when they are not.
        self.before_checkpoint: Callable[[], None] | None = None
        #: Also called under the lock before every checkpoint, before
        #: :attr:`before_checkpoint` (the service's HTTP dead-letter file writes what it
        #: queued); one raising stops the checkpoint (nothing is written).
        self.checkpoint_guards: list[Callable[[], None]] = []
        #: Called under the lock at every checkpoint after the guards; what they return is
        #: written in the same transaction (e.g. how far a dead-letter file is counted).
        self.checkpoint_extras: list[Callable[[], Mapping[str, Any]]] = []
        self._admitting = False  # inside process's admit_dead call (under the lock)
        self._stages_touched = False  # the pipeline ran (and raised) before that call

    def restore(self) -> None:
        """Load stage states, totals and applied offsets from the state store.

        Once loaded, a further call keeps the memory when it is *settled* (every batch it
        applied ran to the end and its dead letters are durable, see :meth:`settle`): it is
        then the same as or newer than the last checkpoint (a checkpoint that failed on a full
        or read-only disk, a source that went away), and rolling it back would make the
        persisted totals go backwards and count the replayed messages twice in the Prometheus
        counters, which cannot go back. Redelivered Kafka offsets are then absorbed by the
        applied offsets, and file sources resume from :attr:`positions`. An unsettled memory
        (a stage raised mid-batch, dead letters not written) is reloaded from the store.

        Raises:
            service.state.StateError: a stored value has the wrong shape (names the file).
        """
        with self.lock:
            if self._loaded and self._settled:
                return
            try:
                if not self._loaded:
                    self.started_empty = not self.state.get_many([TOTALS_KEY, APPLIED_KEY])
                self.pipeline.restore(self.state.get_many(self.pipeline.state_keys()))
                self.totals = Totals.from_json(self.state.get(TOTALS_KEY))
                applied = self.state.get(APPLIED_KEY) or {}
                self._applied = {
                    (topic, int(part)): int(off)
                    for topic, parts in applied.items()
                    for part, off in parts.items()
                }
                self._topic_ids = {
                    str(topic): str(tid)
                    for topic, tid in dict(self.state.get(TOPIC_IDS_KEY) or {}).items()
                }
            except StateError:
                raise
            except (AttributeError, KeyError, TypeError, ValueError) as exc:
                raise StateError(
                    f"state file {self.state.label} holds a value of the wrong shape "
                    f"({type(exc).__name__}); move it aside to start afresh"
                ) from None
            self._totals_view = self.totals.to_json()
            self.positions = {}
            self._loaded = self._settled = True

    def idle(self) -> None:
        """A poll brought nothing: the stages' idle turn (:meth:`Pipeline.idle`), under the
        lock as a batch runs. A stage error is logged (the stage and the error's type),
        never raised: the next batch or idle turn tries again."""
        with self.lock:
            try:
                self.pipeline.idle()
            except StageError as exc:
                log.warning("idle turn of stage %s failed: %s", exc.stage,
                            type(exc.__cause__).__name__)  # fmt: skip

    def settle(self) -> None:
        """Record that the dead letters of every processed batch are durable (the poll loop
        calls this after writing them); see :meth:`restore`."""
        with self.lock:
            self._settled = True

    def unsettle(self) -> None:
        """Record that dead letters of processed batches may have been lost (a failed sync):
        the next :meth:`restore` reloads the last checkpoint instead of keeping the memory."""
        with self.lock:
            self._settled = False

    def process(
        self,
        messages: Sequence[RawMessage],
        source: str,
        admit_dead: AdmitDead | None = None,
        letters: Sequence[DeadLetter] = (),
        duplicates: int = 0,
        field_drops: Mapping[int, Sequence[tuple[str, str]]] | None = None,
    ) -> Outcome:
        """Decode and run one micro-batch; update metrics and totals.

        ``fields_dropped`` (totals and ``goldwatch_event_fields_dropped_total``) counts the
        optional fields dropped from the events the pipeline kept: not from an event the
        dedup stage drops as sent again (its first copy's were counted), nor from events
        that fail. ``field_drops``: ``id(message)`` -> ``(field path, reason)`` dropped from
        the event of that message before it was sent here (trace ingest: documents a trace
        carried that its event could not hold, :attr:`~service.traces.mapping.TraceEvent.
        dropped`), counted as the decoder's.

        ``letters`` are dead letters the caller made of input that is not among
        ``messages`` (trace ingest: spans and traces that give no event); they are handled
        as the decoder's (admitted, counted by reason, each one message in ``consumed``).
        ``duplicates`` counts input the caller dropped as repeated (trace ingest: a trace
        sent again after its event was built): added to ``consumed`` and ``duplicates``.

        Dead letters are returned, not written: the caller makes them durable before it
        checkpoints or commits. With ``admit_dead`` (HTTP ingest), the decoder's dead letters
        are handed to it after decoding and before anything is applied or counted: it makes
        them durable and returns those to count as dead letters (the rest count as
        duplicates: letters already written for an earlier, unacknowledged try of the same
        request). If it raises, the batch is not applied and nothing is counted (the caller
        acknowledges nothing); if the pipeline then fails, only the decoded events become
        ``processing_failed`` letters (the admitted ones are already written), and those go
        through ``admit_dead`` too before they are counted, so no path holds a counted
        letter in memory only (if it raises then, nothing of the batch is counted and the
        memory is marked unsettled: a stage may have changed its state before raising).

        Raises:
            Exception: whatever ``on_error`` did not suppress, or ``admit_dead`` raised.
        """
        with self.lock:
            settled = self._settled  # earlier batches' dead letters may still be in flight
            self._settled = False  # until the batch ran and its dead letters are durable
            started = time.perf_counter()
            applied = dict(self._applied) if admit_dead is not None else self._applied
            self._admitting = self._stages_touched = False
            try:
                fresh = self._drop_redelivered(messages)
                redelivered = len(messages) - len(fresh)
                batch, dead, counted, repeats, blank = self._run(fresh, source, admit_dead,
                                                                 letters, field_drops)  # fmt: skip
            except BaseException:
                if self._admitting:  # refused before it was counted: as if never sent
                    # (a stage that raised may have changed its state: reload it then)
                    self._applied = applied
                    self._settled = settled and not self._stages_touched
                raise
            dropped = dict(batch.dropped) if batch is not None else {}
            counts = BatchCounts(
                source=source,
                consumed=len(messages) + len(letters) + duplicates - blank,
                processed=len(batch) if batch is not None else 0,
                dead_lettered=_by_reason(counted),
                duplicates=dropped.pop(DUPLICATE, 0) + redelivered + repeats + duplicates,
                seconds=time.perf_counter() - started,
                newest_event_s=_newest(batch, self.future_tolerance_s),
                blank_lines=blank,
            )
            self.metrics.observe_batch(counts)
            if batch is not None and self.on_batch is not None:
                self.on_batch(batch)
            self.totals.add(counts, redelivered, dropped)
            self._totals_view = self.totals.to_json()
            self._settled = settled and not counted
            return Outcome(batch, dead, counts, redelivered, dropped, repeats)

    def totals_view(self) -> TotalsJson:
        """The totals after the last processed batch, without waiting for the lock (the API
        must answer while the loop is busy, e.g. retrying dead letters during an outage)."""
        return self._totals_view

    def checkpoint(self, extra: Mapping[str, Any] | None = None) -> None:
        """Write stage states, totals, applied offsets and ``extra`` in one transaction.

        Raises:
            service.state.StateError: the state cannot be written.
            Exception: whatever a guard or :attr:`before_checkpoint` raised (nothing is
                written).
        """
        with self.lock:
            for guard in self.checkpoint_guards:
                guard()
            if self.before_checkpoint is not None:
                self.before_checkpoint()
            updates = self.pipeline.snapshot()
            updates[TOTALS_KEY] = self.totals.to_json()
            applied: dict[str, dict[str, int]] = {}
            for (topic, part), offset in self._applied.items():
                applied.setdefault(topic, {})[str(part)] = offset
            updates[APPLIED_KEY] = applied
            updates[TOPIC_IDS_KEY] = dict(self._topic_ids)
            for more in self.checkpoint_extras:
                updates.update(more())
            updates.update(extra or {})
            try:
                self.state.checkpoint(updates)
            finally:  # the file found deleted: recreated (counted), or lost (no commits)
                self.metrics.observe_state_file(self.state.recreated, not self.state.durable)
            self.pipeline.checkpointed()  # committed: stages may let go of the older one
            self.last_checkpoint_s = time.monotonic()

    def uncounted_before(self) -> dict[tuple[str, int], int]:
        """``{(topic, partition): offset}``: after an empty start (:attr:`started_empty`),
        where each partition's reading starts — the group's committed offset at the first
        status sample after assignment (:meth:`note_committed`, no event needed), else the
        first offset read — where above 0: the events before it are
        not in these totals (counted by a state that is gone, by another replica of the
        consumer group, or never read: ``auto_offset_reset`` latest). A Kafka consumer
        starts at its group's committed offset, so these are the group's offsets at the
        start (trial 47, F4: a replica whose state file was deleted restarted at offsets
        its lost state had counted up to, its totals from zero, and nothing said so).
        ``{}`` after a start from a state with totals, and for sources without offsets
        (a JSONL file resumes from the state's byte offset, so without it reads from the
        start: nothing is left out)."""
        with self.lock:
            return dict(self._first_read)

    def note_committed(self, offsets: dict[tuple[str, int], int]) -> None:
        """After an empty start (:attr:`started_empty`), take the group's committed offset of
        each assigned partition not yet read (``{(topic, partition): offset}``, as the source
        fetched them at assignment) as where its reading starts: an idle topic says what the
        totals leave out at the first status sample after assignment, not at its first event
        (a Kafka consumer's first read is at its group's committed offset, so the figure is
        the one the first event would give). No-op after a start with totals."""
        if not self.started_empty:
            return
        with self.lock:
            for key, offset in sorted(offsets.items()):
                if key not in self._applied:
                    self._note_first_read(key, offset)

    def _note_first_read(self, key: tuple[str, int], offset: int) -> None:
        """A partition's first message read (none applied) since an empty start."""
        if offset > 0 and key not in self._first_read:
            self._first_read[key] = offset
            log.warning(
                "the state started empty and %s[%d] is read from offset %d on: the %d "
                "offsets before it are not in these totals (counted by a state that is gone, "
                "by another replica, or never read)", key[0], key[1], offset, offset,
            )  # fmt: skip
            self.metrics.state_uncounted_offsets.set(sum(self._first_read.values()))

    def note_topic_id(self, topic: str, topic_id: str) -> bool:
        """Record that ``topic`` now has the id ``topic_id`` (a UUID as text).

        Returns ``True`` when a different id was remembered: the topic was deleted and created
        again, so the offsets applied from the old one are forgotten (the new topic's offsets
        restart at 0 and must not be taken for redeliveries). The change is checkpointed with
        the next checkpoint; a crash before it rolls back to the old id, and the change is
        found again. ``False`` for the first id seen or the same one.
        """
        with self.lock:
            known = self._topic_ids.get(topic)
            self._topic_ids[topic] = topic_id
            if known is None or known == topic_id:
                return False
            for key in [key for key in self._applied if key[0] == topic]:
                del self._applied[key]
            log.warning("topic %s was re-created (id %s, was %s): offsets applied from the "
                        "old topic forgotten", topic, topic_id, known)  # fmt: skip
            return True

    def _drop_redelivered(self, messages: Sequence[RawMessage]) -> list[RawMessage]:
        """``messages`` without those at or below their partition's applied offset, each
        kept one raising the applied offset to its own (in order, one by one). A run of one
        partition's messages whose offsets all rise from above the applied one (what a Kafka
        poll hands out: consecutive records per partition) is kept whole without a Python
        step per message (about 1 µs an event otherwise); any other run goes one by one."""
        if type(messages) is PartitionRuns and messages.covered():  # Kafka: no message read
            return self._drop_redelivered_runs(messages)
        if set(map(_topic_of, messages)) <= {None}:  # files, stdin, HTTP: no offsets
            return list(messages)
        applied = self._applied
        fresh: list[RawMessage] = []
        for (topic, partition), group in groupby(messages, _partition_of):
            run = list(group)
            if topic is not None and partition is not None:
                offsets = list(map(_offset_of, run))
                if self.started_empty and (topic, partition) not in applied and offsets[0]:
                    self._note_first_read((topic, partition), offsets[0])
                if (
                    None not in offsets
                    and offsets[0] > applied.get((topic, partition), -1)
                    and (all(map(lt, offsets, islice(offsets, 1, None))))
                ):
                    applied[topic, partition] = offsets[-1]
                    fresh += run
                    continue
            fresh += self._drop_redelivered_one_by_one(run)
        return fresh

    def _drop_redelivered_runs(self, messages: PartitionRuns) -> list[RawMessage]:
        """:meth:`_drop_redelivered` of a poll that says where its partitions' runs are
        (the Kafka source's): the same check per run, from the run's first and last offset,
        without reading the messages; the list itself when every run is kept whole."""
        applied = self._applied
        fresh: list[RawMessage] | None = None  # None: every run so far kept whole
        for run in messages.runs:
            key = (run.topic, run.partition)
            if self.started_empty and key not in applied:
                self._note_first_read(key, run.first_offset)
            if run.rising and run.first_offset > applied.get(key, -1):
                applied[key] = run.last_offset
                if fresh is not None:
                    fresh += messages[run.start : run.stop]
                continue
            if fresh is None:
                fresh = messages[: run.start]
            fresh += self._drop_redelivered_one_by_one(messages[run.start : run.stop])
        return messages if fresh is None else fresh

    def _drop_redelivered_one_by_one(self, messages: list[RawMessage]) -> list[RawMessage]:
        fresh = []
        for message in messages:
            origin = message.origin
            if origin.topic is None or origin.partition is None or origin.offset is None:
                fresh.append(message)
                continue
            key = (origin.topic, origin.partition)
            if self.started_empty and key not in self._applied:
                self._note_first_read(key, origin.offset)
            if origin.offset <= self._applied.get(key, -1):
                continue
            self._applied[key] = origin.offset
            fresh.append(message)
        return fresh

    def _run(
        self,
        messages: list[RawMessage],
        source: str,
        admit_dead: AdmitDead | None,
        letters: Sequence[DeadLetter] = (),
        field_drops: Mapping[int, Sequence[tuple[str, str]]] | None = None,
    ) -> tuple[Batch | None, list[DeadLetter], list[DeadLetter], int, int]:
        """Decode and run ``messages``: ``(batch, dead letters, those to count, repeats,
        blank lines)`` (with ``admit_dead``, the letters it did not admit are repeats: in the
        dead letters, not counted). ``letters`` (the caller's) come first among the dead
        letters. A :class:`~consumers.base.BlankLine` is in none of them: it is counted
        among the blank lines, also when the batch fails. The fields dropped from the events
        kept are counted (:meth:`process`)."""
        if not messages and not letters:
            return None, [], [], 0, 0
        try:
            with collect_dropped_fields() as dropped:
                decoded, dead = self.decode(messages) if messages else ([], [])
                if field_drops:
                    for message, event in decoded:
                        found = field_drops.get(id(message))
                        if found:
                            note_dropped_fields(event, found)
        except Exception as exc:
            failed, blank = _blank_out(self._failed(exc, messages))
            failed = [*letters, *failed]
            return None, failed, failed, 0, blank
        streams = _streams(decoded, messages, dead)  # before the caller's letters join dead
        dead, blank = _blank_out(dead) if dead else (dead, 0)  # no letter written for those
        if letters:
            dead = [*letters, *dead]
        counted = dead
        if admit_dead is not None:
            self._admitting = True
            counted = admit_dead(dead)  # raises: nothing applied, nothing counted
            self._admitting = False
        repeats = len(dead) - len(counted)
        try:
            events = list(map(_event_of, decoded))
            batch = self.pipeline.process(events, source, streams)
            if dropped:
                # counted once, in the counter and the persisted totals alike (same labels)
                kept = _kept_drops(dropped, events, batch)
                _merge(self.totals.fields_dropped, self.metrics.observe_dropped_fields(kept))
            return batch, dead, counted, repeats, blank
        except Exception as exc:
            if admit_dead is None:
                failed = [*letters, *_blank_out(self._failed(exc, messages))[0]]
                return None, failed, failed, 0, blank
            failed = self._failed(exc, [m for m, _ in decoded])
            # as durable as the decoder's letters: written (or known from an unacknowledged
            # try) before they are counted; raising, nothing of the batch is counted
            self._admitting, self._stages_touched = True, True
            admitted = admit_dead(failed)
            self._admitting = False
            return (None, dead + failed, counted + admitted, repeats + len(failed) - len(admitted),
                    blank)  # fmt: skip

    def _failed(self, exc: Exception, messages: Sequence[RawMessage]) -> list[DeadLetter]:
        """``messages`` as ``processing_failed`` letters, when ``on_error`` suppresses
        ``exc`` (else it is raised again)."""
        if not messages or not self.on_error(exc, messages[0], log):
            raise exc
        detail = _failure_detail(exc)
        return [DeadLetter(m, PROCESSING_FAILED, detail) for m in messages]


def _kept_drops(
    dropped: DroppedFields, events: Sequence[QueryLogEvent], batch: Batch
) -> dict[tuple[str, str], int]:
    """The drops of the events ``batch`` kept of ``events`` (what it was made of): all of
    them when it dropped none, else those of the events at its :attr:`Batch.positions` (a
    stage may have replaced a kept event by a copy, e.g. a pseudonymised id), or, for a
    stage that dropped events without :meth:`Batch.keep`, those of the events it holds."""
    positions = batch.positions
    if positions is None and len(batch.events) == len(events):
        return dropped
    if positions is None:
        return dropped.kept(batch.events)
    return dropped.kept(events[i] for i in positions)


def _blank_out(letters: list[DeadLetter]) -> tuple[list[DeadLetter], int]:
    """``letters`` without those of blank lines (:class:`~consumers.base.BlankLine`: the
    decoder's ``blank_line``, or a failed batch's), and how many those were. Only batches
    with letters get here: never a Python step per event."""
    kept = [letter for letter in letters if not isinstance(letter.message, BlankLine)]
    return kept, len(letters) - len(kept)


def _by_reason(dead: Sequence[DeadLetter]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for letter in dead:
        counts[letter.reason] = counts.get(letter.reason, 0) + 1
    return counts


def _newest(batch: Batch | None, future_tolerance_s: float) -> float | None:
    """The newest event time of ``batch`` (Unix seconds), leaving out events stamped more
    than ``future_tolerance_s`` ahead of the wall clock (a client's clock years ahead must
    not set ``goldwatch_last_event_timestamp_seconds`` to year 9999); ``None``: none left."""
    if not batch or not batch.events:
        return None
    # attrgetter is typed Any: the events' timestamps are datetimes, so this is a float
    newest: float = max(map(_timestamp_of, batch.events)).timestamp()
    limit = time.time() + future_tolerance_s
    if newest <= limit:
        return newest
    stamps = [s for s in (e.timestamp.timestamp() for e in batch.events) if s <= limit]
    return max(stamps, default=None)


def _failure_detail(exc: Exception) -> str:
    """Name the stage and exception types only: the message may echo event content."""
    if isinstance(exc, StageError) and exc.__cause__ is not None:
        return f"stage {exc.stage!r} raised {type(exc.__cause__).__name__}; error suppressed"
    return f"{type(exc).__name__} while processing the batch; error suppressed"
