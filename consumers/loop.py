"""The poll loop: source → decode → pipeline → dead letters → checkpoint → commit.

One iteration handles one micro-batch, on the one consumer thread::

    messages = source.poll(max_batch_size, max_batch_wait_ms)
    decoded, dead = decode(messages)              # bad messages become dead letters
    batch = pipeline.process(events)              # stages; duplicates dropped and counted
    source.dead_letter(dead)                      # written before anything is committed
    when due: source.sync_dead_letters() (if any); state.checkpoint(stage states + source
              position); source.commit(pending)
    metrics.observe_batch(...)                    # once per batch, never per event

Guarantees:

* Back-pressure by construction: the source is not polled again until the batch is done.
* Commit only after effects: offsets/positions are committed after the dead letters are
  durable and the state holding the same batches is checkpointed. A source may write its
  dead letters per batch and make them durable in one ``sync_dead_letters()`` that the loop
  calls before each checkpoint (the file source: one fsync per checkpoint, not per batch).
  A checkpoint is due every ``commit_interval_s`` seconds or ``commit_every`` messages, and
  always at stop / end of input. A crash replays at most what followed the last checkpoint,
  and the dedup window (checkpointed with it) drops what was already counted. Dead letters
  are at-least-once.
* No commit without the state file at its path: a checkpoint that finds the state file
  deleted, moved or replaced writes it there again whole before anything is committed
  (:meth:`service.state.StateStore.check_place`); while it cannot (directory gone,
  read-only), nothing is committed, and a restart reads those messages again.
* Automatic cyclic garbage collection is paused during each poll-and-handle step (see
  :func:`gc_paused`) and caught up between steps.
* Never dies on a bad message. A stage exception goes to ``on_error`` (quix-style,
  ``(exc, message, logger) -> suppress?``); the default logs ``topic[partition] offset`` and
  re-raises. A suppressed batch is dead-lettered as ``processing_failed``, never lost.
* Graceful stop: set ``stop_event``; the loop finishes the current batch, checkpoints,
  commits and closes the source within ``max_batch_wait_ms`` plus one batch.
* After a crash (any exception) the source is marked failed (if it supports it) and closed
  without committing anything further.
* Rebalances (sources with ``checkpoint_on_revoke``: Kafka): before partitions are revoked,
  the source runs the loop's checkpoint (:meth:`_Loop.revoke_checkpoint`) on a worker thread
  while the consumer thread waits inside the source's ``poll``/``close``; the loop's lock
  serializes it with the consumer thread's steps, so a batch being handled is finished and
  included. Everything processed on a revoked partition is thus checkpointed and its offset
  committed before the next owner reads it (no double count at a rebalance). A failure of
  that checkpoint is raised on the consumer thread at its next step, as if it had failed there.

Counts are exact: ``consumed == processed + dead_lettered + duplicates + other drops``, and
a JSONL input's blank lines (no data: :class:`~consumers.base.BlankLine`) are counted apart,
``blank_lines``, so every line read is in one count or the other.
"""

from __future__ import annotations

import gc
import inspect
import logging
import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from operator import attrgetter
from typing import Any, Protocol, runtime_checkable

from prometheus_client import CollectorRegistry

from consumers.base import (
    CheckpointsOnRevoke,
    DeadLetter,
    Finite,
    HoldsDeadLetters,
    MarksFailure,
    PartitionRuns,
    RawMessage,
    Source,
    SyncsDeadLetters,
    TracksTopicIds,
    WritesDeadLetterFile,
)
from consumers.decoding import decode_batch
from consumers.engine import PROCESSING_FAILED, Decoder, Engine
from consumers.errors import ErrorCallback, GoldwatchConsumerError, default_on_error
from service.events import FieldMapping
from service.pacing import Backoff
from service.pipeline import Pipeline, PipelineConfig
from service.state import StateError, StateStore
from service.telemetry import BatchCounts, Metrics, build_metrics

log = logging.getLogger(__name__)


class DeadLetterWriteAborted(GoldwatchConsumerError):
    """Dead letters could not be written (stopped during an outage, or a disk that keeps
    failing); nothing of the batch was checkpointed or committed."""


#: Attempts at a dead-letter file before giving up (a broker outage is retried until stop).
MAX_DISK_ATTEMPTS = 3
#: Waits between in-place retries of dead-letter writes and syncs: 0.5, 1, 2, 4, 8, 10, 10... s.
DEAD_LETTER_BACKOFF = Backoff(0.5, max_s=10.0)


__all__ = ["PROCESSING_FAILED", "Decoder", "Report", "make_decoder", "replay", "run"]


def make_decoder(
    mapping: FieldMapping | None = None, max_event_bytes: int = 1_048_576, records: bool = True
) -> Decoder:
    """Return ``decode_batch`` bound to a field mapping, a size limit (bytes) and whether
    to build the events' records (``records=False``: for a pipeline whose
    :attr:`~service.pipeline.Pipeline.reads_records` is false)."""
    return partial(decode_batch, mapping=mapping or FieldMapping(), max_event_bytes=max_event_bytes,
                   records=records)  # fmt: skip


def _source_errors(*others: type[Exception]) -> tuple[type[Exception], ...]:
    """The errors of a source worth retrying: ``GoldwatchConsumerError``, ``others``, and
    kafka-python's ``KafkaError`` once a Kafka source has loaded kafka-python.

    Only code that imported ``kafka.errors`` can raise its errors, so a file, stdin or HTTP
    source never needs the class: looking it up in :data:`sys.modules` instead of importing
    it keeps kafka-python (0.14 s) out of ``serve``'s start-up without Kafka (issue 22)."""
    kafka_errors = sys.modules.get("kafka.errors")
    kafka: tuple[type[Exception], ...] = () if kafka_errors is None else (kafka_errors.KafkaError,)
    return (GoldwatchConsumerError, *others, *kafka)


@runtime_checkable
class Resumable(Protocol):
    """A source whose position lives in the state store (files); Kafka keeps its own offsets.

    ``state_key`` is ``None`` when the position cannot be resumed (stdin).
    """

    state_key: str | None

    def position_after(self, messages: Sequence[RawMessage]) -> dict[str, Any]: ...

    def restore(self, state: dict[str, Any] | None) -> None: ...


@runtime_checkable
class MarksRuns(Protocol):
    """A :class:`Resumable` source that, without a stored position, stores a run mark under
    ``run_mark_key`` before its first dead letter (where its letters start, and which input
    and dead-letter file they are of), so a restart after a kill -9 before the first
    checkpoint does not write them again (trial 49, M1). The mark is not a position: a
    version without run marks does not read that key, and starts afresh."""

    run_mark_key: str | None

    @property
    def reads_back(self) -> bool: ...

    def run_mark(self) -> dict[str, Any]: ...

    def resume_run(self, mark: Any) -> bool: ...


def _pending_dead_letters(source: Source) -> int:
    """Dead letters ``source`` holds in memory, not yet durable (0 unless it
    :class:`~consumers.base.HoldsDeadLetters`)."""
    return source.pending_dead_letters if isinstance(source, HoldsDeadLetters) else 0


def _dead_letter_place(source: Source) -> object:
    """Where ``source`` writes dead letters, for an error message."""
    return source.dlq_path if isinstance(source, WritesDeadLetterFile) else "the dead-letter file"


@dataclass(frozen=True, slots=True)
class Report:
    """Counts of a run. ``dead_lettered`` and ``dropped`` are by reason; ``blank_lines``:
    blank lines of a JSONL input, outside ``consumed`` (lines read = ``consumed +
    blank_lines``)."""

    consumed: int
    processed: int
    dead_lettered: dict[str, int]
    duplicates: int
    dropped: dict[str, int]
    batches: int
    checkpoints: int
    blank_lines: int = 0

    @property
    def dead_lettered_total(self) -> int:
        return sum(self.dead_lettered.values())

    @property
    def balanced(self) -> bool:
        """True when every consumed message is accounted for exactly once."""
        accounted = self.processed + self.dead_lettered_total + self.duplicates
        return self.consumed == accounted + sum(self.dropped.values())


@dataclass
class _Tally:
    consumed: int = 0
    processed: int = 0
    duplicates: int = 0
    batches: int = 0
    checkpoints: int = 0
    dead_lettered: dict[str, int] = field(default_factory=dict)
    dropped: dict[str, int] = field(default_factory=dict)
    blank_lines: int = 0

    def add(self, counts: BatchCounts, dropped: dict[str, int]) -> None:
        self.batches += 1
        self.consumed += counts.consumed
        self.blank_lines += counts.blank_lines
        self.processed += counts.processed
        self.duplicates += counts.duplicates
        for target, source in ((self.dead_lettered, counts.dead_lettered), (self.dropped, dropped)):
            for reason, n in source.items():
                target[reason] = target.get(reason, 0) + n

    def report(self) -> Report:
        return Report(
            self.consumed,
            self.processed,
            dict(self.dead_lettered),
            self.duplicates,
            dict(self.dropped),
            self.batches,
            self.checkpoints,
            self.blank_lines,
        )


#: ``message -> (topic, partition, file)``: where a commit goes (C-level, no Python call).
_commit_key = attrgetter("origin.topic", "origin.partition", "origin.file")


#: Seconds between two thaws in :func:`gc_paused` (what it froze is unfrozen and collected).
#: A thaw is one full collection of the whole heap with the GIL held: 221-225 ms on a quiet
#: machine for a served process after 60,000 events (329,000 tracked objects, 193,000 of
#: them the start-up heap); thawing every minute put 12 of 2,012 soak scrapes of
#: ``/metrics`` over 100 ms. Every 10 minutes bounds the other threads' frozen garbage (about
#: 0.6 MB of fetch buffers a minute at 2,000 events/s) at a few MB for one such pause.
THAW_INTERVAL_S = 600.0
_last_thaw = [time.monotonic()]
#: Least seconds between two freezes in :func:`gc_paused`. Each freeze also takes the other
#: threads' objects in flight at that moment; kafka-python's per-partition record holders
#: are reference cycles (the holder, its ``dropwhile`` and its generator's frame), so one
#: frozen with its fetch buffer is kept until the next thaw. Freezing after every older
#: collection (every few seconds) grew the soak's RSS 23 MB from 100,000 to 400,000 events
#: with thaws every 10 minutes; at most once a minute, after a full collection: 17 MB then
#: level from 200,000 (one 400,000-event run each, 2,000 events/s).
FREEZE_INTERVAL_S = 60.0
_last_freeze = [0.0]  # when gc_paused last thawed (one process-wide schedule)


@contextmanager
def gc_paused(
    freeze_survivors: bool = True,
    thaw_interval_s: float = THAW_INTERVAL_S,
    freeze_interval_s: float = FREEZE_INTERVAL_S,
) -> Iterator[None]:
    """Pause CPython's automatic cyclic garbage collection for one poll-and-handle step.

    A micro-batch keeps thousands of container objects alive at once (about a dozen per
    event: the event records, tuples, datetimes, messages). With the collector running, a
    young-generation collection every 700 allocations scans them, the survivors are promoted
    and end up in full collections of the whole heap: about 18 % of the CPU time of a file
    replay (measured with ``gc.callbacks``, 30,000 events). Events hold no reference cycles,
    so the batch is freed by reference counting as soon as the step returns, and the
    collector, re-enabled then, has nothing of it to scan.

    On exit, if the allocation counts passed their thresholds meanwhile, the oldest
    generation over its threshold is collected (what the interpreter would have done at the
    next allocation; a busy loop may allocate nothing between two steps), and the collector
    is re-enabled. Nothing changes when automatic collection was off on entry.

    After a full (generation-2) collection, at most once per ``freeze_interval_s`` seconds
    (:data:`FREEZE_INTERVAL_S`), what survived it is frozen (``gc.freeze``, as
    :func:`service.runtime.memory.freeze_heap` does at start-up; not when ``freeze_survivors``
    is false): the step's batch is gone by then, so what is still reachable is long-lived
    state (cache entries, harvested suggestions), and frozen it is never walked again.
    Without it, full collections walked ~40,000 such objects once the caches were warm, and
    a collection holds the GIL throughout, so the API's threads wait for it.
    ``benchmarks/gc_freeze.py`` (100,000 soak events, 250 per step): longest collection
    54.4 ms plain, 3.6 ms frozen (a gen-0 one: no full collection is due any more); in the
    soak on a loaded 2-core machine full collections took 45-147 ms of wall time. Frozen
    objects are still freed by reference counting when dropped (an evicted cache entry);
    only a reference cycle that was reachable at a freeze and became garbage later is never
    collected. The loop's own batches hold none (the benchmark unfreezes at the end and
    collects 0 unreachable objects), but a freeze also takes whatever the other threads of a
    served process hold at that moment: kafka-python's in-flight futures, tasks and timeout
    errors with their tracebacks, fetch responses (up to MBs of records), uvicorn's
    connections. In the soak (2,000 events/s, 200 s) 7,994 such objects were garbage once
    unfrozen (8 fetch responses among them) and held 2.1 MB of mmapped blocks. Hence the thaw: at
    most every ``thaw_interval_s`` seconds, before a freeze, everything frozen is unfrozen
    and fully collected (then frozen again): one full collection every ten minutes instead of one
    that never comes (thawing every 30 s in the soak freed 155-518 objects each time), at
    the price of one pause (see :data:`THAW_INTERVAL_S`).
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        counts, thresholds = gc.get_count(), gc.get_threshold()
        if thresholds[0]:
            for generation in (2, 1, 0):
                if counts[generation] > thresholds[generation]:
                    gc.collect(generation)  # still paused: no automatic one on top of it
                    if generation == 2 and freeze_survivors and _freeze_due(freeze_interval_s):
                        _thaw_if_due(thaw_interval_s)
                        gc.freeze()  # what outlived its step: long-lived
                    break
        gc.enable()


def _freeze_due(interval_s: float) -> bool:
    """True at most once per ``interval_s`` seconds (then the caller freezes)."""
    now = time.monotonic()
    if now - _last_freeze[0] < interval_s:
        return False
    _last_freeze[0] = now
    return True


def _thaw_if_due(interval_s: float) -> None:
    """Unfreeze and fully collect when ``interval_s`` seconds passed since the last thaw
    (see :func:`gc_paused`); the caller freezes again right after."""
    now = time.monotonic()
    if now - _last_thaw[0] < interval_s:
        return
    _last_thaw[0] = now
    gc.unfreeze()
    gc.collect()


@dataclass(frozen=True, slots=True)
class Capabilities:
    """Which optional capabilities (the protocols of :mod:`consumers.base`) a source has,
    checked once when a loop starts instead of once or more per batch.

    ``isinstance`` against a ``runtime_checkable`` protocol looks up each of its members on
    the object: 16-46 µs a check on this machine (loaded), and the loop made three to five
    per batch; at a steady 2,000 events/s a batch holds tens of events, so that was a few
    µs an event on the consumer thread. A source's class does not change while a loop runs.
    """

    #: the source, where it has the capability; ``None`` where it has not
    holds: HoldsDeadLetters | None
    syncs: SyncsDeadLetters | None
    resumable: Resumable | None
    finite: Finite | None
    topic_ids: TracksTopicIds | None
    revokes: CheckpointsOnRevoke | None = None

    @classmethod
    def of(cls, source: Source) -> Capabilities:
        """The capabilities of ``source``: :class:`~consumers.base.HoldsDeadLetters`,
        :class:`~consumers.base.SyncsDeadLetters`, :class:`Resumable`,
        :class:`~consumers.base.Finite`, :class:`~consumers.base.TracksTopicIds`,
        :class:`~consumers.base.CheckpointsOnRevoke`."""
        return cls(
            holds=source if isinstance(source, HoldsDeadLetters) else None,
            syncs=source if isinstance(source, SyncsDeadLetters) else None,
            resumable=source if isinstance(source, Resumable) else None,
            finite=source if isinstance(source, Finite) else None,
            topic_ids=source if isinstance(source, TracksTopicIds) else None,
            revokes=source if isinstance(source, CheckpointsOnRevoke) else None,
        )


class _Loop:
    """The state of one :func:`run`; every method runs on the consumer thread."""

    def __init__(
        self,
        source: Source,
        engine: Engine,
        config: PipelineConfig,
        stop_event: threading.Event | None = None,
    ) -> None:
        self.source, self.engine, self.config = source, engine, config
        self.stop_event = stop_event or threading.Event()
        self.tally = _Tally()
        self.pending: dict[tuple[Any, ...], RawMessage] = {}  # last message per partition/file
        self.pending_count = 0
        self.last_checkpoint = self.last_status = time.monotonic()
        self.status: dict[str, Any] = {}
        self.can = Capabilities.of(source)
        #: held by whoever changes the loop's state: the consumer thread for each step and
        #: checkpoint, a revoke checkpoint's worker thread for its checkpoint
        self.busy = threading.Lock()
        #: what a revoke checkpoint raised, raised again on the consumer thread
        self.revoke_failure: BaseException | None = None
        #: the source's run mark (:class:`MarksRuns`), while there is no stored position:
        #: its key (deleted by the first checkpoint, or at a clean end that read nothing
        #: back), and whether it is still to be stored before this run's first dead letter
        self.marks: MarksRuns | None = None
        self.run_mark_key: str | None = None
        self.mark_due = False
        self.mark_stored = False  # the state holds a run mark under run_mark_key

    def pending_dead_letters(self) -> int:
        """Dead letters the source holds in memory, not yet durable (0 unless it
        :class:`~consumers.base.HoldsDeadLetters`)."""
        holds = self.can.holds
        return holds.pending_dead_letters if holds is not None else 0

    def restore(self) -> None:
        """Load the engine (a no-op when its memory is settled and newer, see
        :meth:`Engine.restore`) and resume a resumable source where that memory ends.

        A source that keeps dead letters in memory until ``sync_dead_letters`` (it has
        ``pending_dead_letters``: Kafka) gets that sync run before every engine checkpoint,
        HTTP ingest's included, until :meth:`detach`."""
        self.engine.restore()
        if self.can.holds is not None:
            self.engine.before_checkpoint = self.can.holds.sync_dead_letters
        if self.can.revokes is not None:
            self.can.revokes.checkpoint_on_revoke(self.revoke_checkpoint)
        resumable = self.can.resumable
        if resumable is not None and resumable.state_key:
            key = resumable.state_key
            position = self.engine.positions.get(key)
            if position is None:
                position = self.engine.state.get(key)
            resumable.restore(position)
            if position is None and isinstance(resumable, MarksRuns) and resumable.run_mark_key:
                # no position: a run killed before its first checkpoint left a run mark, or
                # this run stores one before its first dead letter (write_dead_letters)
                self.marks = resumable
                self.run_mark_key = resumable.run_mark_key
                found = self.engine.state.get(self.run_mark_key)
                self.mark_stored = found is not None
                self.mark_due = not resumable.resume_run(found)

    def step(self, until_eof: bool) -> bool:
        """Poll once and handle what came; False when ``until_eof`` and the input has ended.

        Everything of the batch is local here, so it is freed when this returns (before
        :func:`gc_paused` lets the collector run again).
        """
        messages = self.source.poll(self.config.max_batch_size, self.config.max_batch_wait_ms)
        with self.busy:
            self.raise_revoke_failure()
            messages = self.drop_recreated(messages)
            if messages:
                self.handle(messages)
            elif until_eof and (self.can.finite is None or self.can.finite.at_eof):
                return False
            else:
                self.engine.idle()
                self.maybe_checkpoint()
        return True

    def revoke_checkpoint(self) -> None:
        """The checkpoint a source runs before partitions are revoked (see the module
        docstring): on the source's worker thread, after the consumer thread's current
        batch or checkpoint (``busy``). Everything handled so far is then durable and its
        offsets stored with the source; nothing after a failed one (see
        :meth:`raise_revoke_failure`).

        :raises Exception: whatever :meth:`checkpoint` raised (also kept for the consumer
            thread).
        """
        with self.busy:
            if self.revoke_failure is not None:
                raise self.revoke_failure
            try:
                self.checkpoint()
            except BaseException as exc:
                self.revoke_failure = exc
                raise

    def raise_revoke_failure(self) -> None:
        """Raise, on the consumer thread, what a revoke checkpoint raised (the loop then
        stops as after any failed checkpoint).

        :raises Exception: the revoke checkpoint's error, if there was one.
        """
        failure = self.revoke_failure
        if failure is not None:
            raise failure

    def drop_recreated(self, messages: list[RawMessage]) -> list[RawMessage]:
        """Check the source's topic ids (sources with ``topic_ids()``: Kafka) against the
        engine's; for a topic deleted and created again, have the source read it from the
        beginning (``restart_topics``) and drop what was polled or is pending from it: those
        offsets belong to positions in the old topic and must be neither processed nor
        committed (the new topic is read again from offset 0)."""
        tracker = self.can.topic_ids
        if tracker is None:
            return messages
        ids = tracker.topic_ids()
        changed = {t for t, tid in ids.items() if self.engine.note_topic_id(t, tid)}
        if not changed:
            return messages
        tracker.restart_topics(changed)
        self.pending = {k: m for k, m in self.pending.items() if m.origin.topic not in changed}
        return [m for m in messages if m.origin.topic not in changed]

    def handle(self, messages: list[RawMessage]) -> None:
        """Process one polled batch end to end (metrics are updated once, by the engine)."""
        with self.engine.lock:  # dead letters durable before anyone can checkpoint the batch
            outcome = self.engine.process(messages, self.source.name)
            self.write_dead_letters(outcome.dead)
            resumable = self.can.resumable
            if resumable is not None and resumable.state_key:
                self.engine.positions[resumable.state_key] = resumable.position_after(messages)
            if not self.pending_dead_letters():
                self.engine.settle()  # else settled by the checkpoint that syncs them
        # the last message per key wins; a poll that says where its partitions' runs are
        # (Kafka's) gives each run's last message without reading the others' origins
        if type(messages) is PartitionRuns and messages.covered():
            for run in messages.runs:
                last = messages[run.stop - 1]
                self.pending[_commit_key(last)] = last
        else:
            self.pending.update(zip(map(_commit_key, messages), messages, strict=True))
        self.pending_count += len(messages)
        self.maybe_checkpoint()
        self.tally.add(outcome.counts, outcome.dropped)

    def write_dead_letters(self, dead: list[DeadLetter]) -> None:
        """Make ``dead`` durable, retrying in place with capped backoff while the destination
        is down (a broker pause must not tear the consumer down). On stop, give up: the batch
        is then neither checkpointed nor committed, and is redelivered after a restart.

        :raises DeadLetterWriteAborted: stopped before the dead letters were written.
        """
        delays, disk_failures = DEAD_LETTER_BACKOFF.delays(), 0
        while True:
            try:
                if self.mark_due and dead:
                    self.store_run_mark()
                self.source.dead_letter(dead)
                return
            except _source_errors(OSError) as exc:
                if self.stop_event.is_set():
                    raise DeadLetterWriteAborted("stopped while dead letters were pending") from exc
                if isinstance(exc, OSError):
                    disk_failures += 1
                    if disk_failures >= MAX_DISK_ATTEMPTS:  # a full or read-only disk stays so
                        where = _dead_letter_place(self.source)
                        raise DeadLetterWriteAborted(
                            f"cannot write dead letters to {where}: {exc.strerror or exc}"
                        ) from None
                delay = next(delays)
                log.warning(
                    "writing %d dead letters failed (%s); retrying in %.1f s",
                    len(dead),
                    type(exc).__name__,
                    delay,
                )
                self.stop_event.wait(delay)

    def store_run_mark(self) -> None:
        """Store the source's run mark durably (before this run's first dead letter: a kill
        after it leaves the letters it marks).

        :raises OSError: the dead-letter file cannot be created (retried as a write is).
        :raises StateError: the state cannot be written.
        """
        if self.marks is not None and self.run_mark_key is not None:
            self.engine.state.write_unless({self.run_mark_key: self.marks.run_mark()}, {})
            self.mark_stored = True
        self.mark_due = False

    def drop_run_mark(self) -> None:
        """At a clean end without a checkpointed position: delete the run mark, unless it
        still marks letters read back from a dead run that this run has not reached (trial
        49, M1 review: a mark left by a clean run that read nothing could later pass another
        run's letters off as its own)."""
        key, marks = self.run_mark_key, self.marks
        if key is None or marks is None or not self.mark_stored or marks.reads_back:
            return
        try:
            self.engine.state.write_unless({key: None}, {})
        except StateError as exc:  # the run's work is done: a mark left is no reason to fail
            log.warning("could not delete the run mark %s: %s", key, exc)
            return
        self.run_mark_key, self.mark_due, self.mark_stored = None, False, False

    def maybe_checkpoint(self) -> None:
        elapsed = time.monotonic() - self.last_checkpoint
        if self.pending_count >= self.config.commit_every or (
            self.pending and elapsed >= self.config.commit_interval_s
        ):
            self.checkpoint()
        if time.monotonic() - self.last_status >= self.config.status_interval_s:
            self.sample_status()

    def checkpoint(self, final: bool = False) -> None:
        """Checkpoint stage states and the source position, then commit the pending messages."""
        messages = list(self.pending.values())
        if messages:
            self.sync_dead_letters()
            if not self.pending_dead_letters():
                self.engine.settle()  # every dead letter durable (the checkpoint may still fail)
            extra: dict[str, Any] = {}
            resumable = self.can.resumable
            if resumable is not None and resumable.state_key:
                extra[resumable.state_key] = resumable.position_after(messages)
            mark_key = self.run_mark_key
            if mark_key is not None:  # a position from now on: the run mark is done
                extra[mark_key] = None
            self.engine.checkpoint(extra)
            if mark_key is not None:
                self.run_mark_key, self.mark_due, self.mark_stored = None, False, False
            if self.engine.state.durable:
                _commit(self.source, messages, final)
            # else the state file is gone from its path and cannot be written there again
            # (logged by the store): no offset is committed, so a restart reads these again
            self.tally.checkpoints += 1
        self.pending.clear()
        self.pending_count = 0
        self.last_checkpoint = time.monotonic()
        self.sample_status()

    def detach(self) -> None:
        """Unhook the source from the engine's checkpoints and its revocations (the loop is
        ending: closing the source revokes its partitions, and what the final checkpoint
        stored is committed then). Dead letters it still holds are lost with it: the engine
        is marked unsettled, so the next :meth:`restore` reloads the last checkpoint and
        their batches are replayed."""
        if self.can.revokes is not None:
            self.can.revokes.checkpoint_on_revoke(None)
        source = self.source
        if isinstance(source, SyncsDeadLetters) and (
            source.sync_dead_letters == self.engine.before_checkpoint
        ):
            self.engine.before_checkpoint = None
        if _pending_dead_letters(source):
            self.engine.unsettle()

    def sync_dead_letters(self) -> None:
        """Make the dead letters written since the last checkpoint durable, for sources that
        defer that (``sync_dead_letters``: the file source's fsync, the Kafka source's wait
        for the DLQ acknowledgements).

        A broker that does not acknowledge yet (``KafkaError`` or a consumer error) is
        retried in place with capped backoff, as :meth:`write_dead_letters` does: the source
        keeps the letters queued, so nothing is lost while it is down.

        :raises DeadLetterWriteAborted: the sync failed on disk, or the loop was stopped while
            the broker had not acknowledged. The letters may be lost, so nothing is
            checkpointed or committed, and the engine's memory is marked unsettled (a
            restart reloads the last checkpoint and writes them again).
        """
        if self.can.syncs is None:
            return
        sync = self.can.syncs.sync_dead_letters
        delays = DEAD_LETTER_BACKOFF.delays()
        while True:
            try:
                with self.engine.lock:  # HTTP ingest may sync the same letters (see restore)
                    sync()
                return
            except OSError as exc:
                self.engine.unsettle()
                where = _dead_letter_place(self.source)
                raise DeadLetterWriteAborted(
                    f"cannot sync dead letters to {where}: {exc.strerror or exc}"
                ) from None
            except _source_errors() as exc:
                if self.stop_event.is_set():
                    self.engine.unsettle()
                    raise DeadLetterWriteAborted(
                        "stopped while dead letters were unacknowledged"
                    ) from exc
                delay = next(delays)
                log.warning(
                    "dead letters not acknowledged (%s); retrying in %.1f s",
                    type(exc).__name__,
                    delay,
                )
                self.stop_event.wait(delay)

    def sample_status(self) -> None:
        state = self.engine.state
        # one stat: a state file deleted while no checkpoint comes (an idle stream) is
        # recreated within a status interval, and a lost one is tried again
        state.check_place()
        self.engine.metrics.observe_state_file(state.recreated, not state.durable)
        status = self.source.status()
        if self.engine.started_empty:  # an idle topic's committed offsets, said at start
            self.engine.note_committed({
                (entry["topic"], entry["partition"]): entry["committed_offset"]
                for entry in status.get("lag") or ()
                if entry.get("committed_offset") is not None
            })  # fmt: skip
        self.engine.metrics.observe_status(status, self.status)
        self.status, self.last_status = status, time.monotonic()


def _commit(source: Source, messages: list[RawMessage], final: bool) -> None:
    """Commit; on the final commit ask sources that batch commits (Kafka) to commit now."""
    if final and "force" in inspect.signature(source.commit).parameters:
        source.commit(messages, force=True)  # type: ignore[call-arg]
    else:
        source.commit(messages)


def run(
    source: Source,
    pipeline: Pipeline,
    state: StateStore,
    metrics: Metrics,
    stop_event: threading.Event,
    *,
    decode: Decoder | None = None,
    config: PipelineConfig | None = None,
    on_error: ErrorCallback = default_on_error,
    until_eof: bool = False,
    engine: Engine | None = None,
) -> Report:
    """Consume ``source`` through ``pipeline`` until ``stop_event`` is set (or end of input).

    :param decode: raw messages → ``(decoded, dead)``; default :func:`make_decoder` with the
        default field mapping, ``config.max_event_bytes`` and the pipeline's
        ``reads_records``.
    :param config: batch size, poll wait, checkpoint cadence (default :class:`PipelineConfig`).
    :param on_error: called with ``(exc, first message of the batch, logger)`` when decoding or
        a stage raises; ``True`` dead-letters the batch as ``processing_failed`` and goes on.
    :param until_eof: stop at the first empty poll at end of input (sources without an
        ``at_eof`` attribute: the first empty poll).
    :param engine: a shared :class:`~consumers.engine.Engine` (the service shares one with
        HTTP ingest); when given, its pipeline, state, metrics and decoder are used and the
        ``pipeline``/``state``/``metrics``/``decode``/``on_error`` arguments are ignored.
    :returns: the run's counts.
    :raises StateError: the state cannot be read or written (nothing more is committed).
    :raises Exception: whatever ``on_error`` did not suppress, or the source raised.
    """
    config = config or PipelineConfig()
    if engine is None:
        decoder = decode or make_decoder(
            max_event_bytes=config.max_event_bytes, records=pipeline.reads_records
        )
        engine = Engine(pipeline, state, metrics, decoder, on_error)
    loop = _Loop(source, engine, config, stop_event)
    try:
        loop.restore()
        while not stop_event.is_set():
            with gc_paused():
                if not loop.step(until_eof):
                    break
        # paused as a step is: the stages' snapshots build (and free, by reference counting)
        # hundreds of thousands of objects, and the collections they set off found nothing
        # (bench_production, 50,000 events: a full one of 71 ms among them; the replay's
        # collections took 217 ms of CPU in all, 167 ms with this pause)
        with gc_paused(), loop.busy:
            loop.raise_revoke_failure()
            loop.checkpoint(final=True)
            loop.drop_run_mark()
    except BaseException:
        if isinstance(source, MarksFailure):
            source.mark_failed()
        raise
    finally:
        loop.detach()
        source.close()
    return loop.tally.report()


def replay(
    source: Source,
    pipeline: Pipeline,
    *,
    decode: Decoder | None = None,
    state: StateStore | None = None,
    metrics: Metrics | None = None,
    config: PipelineConfig | None = None,
    on_error: ErrorCallback = default_on_error,
) -> Report:
    """Run ``source`` to its end and return the counts (``goldwatch replay``).

    State defaults to an in-memory store (a fresh start) and metrics to a private registry.
    """
    return run(
        source,
        pipeline,
        state if state is not None else StateStore.in_memory(),
        metrics if metrics is not None else build_metrics(CollectorRegistry()),
        threading.Event(),
        decode=decode,
        config=config,
        on_error=on_error,
        until_eof=True,
    )
