"""The micro-batch pipeline: an ordered list of stages run over each batch of decoded events.

A :class:`Batch` carries the events of one poll plus one annotation dict per event, so later
stages (PII scrub, language, topic, refusal, drift windows, shadow, harvest) add fields
without touching the sources or the loop. A stage may drop events (e.g. duplicates); the
batch counts drops by reason so the loop's totals stay exact::

    consumed == processed + dead_lettered + sum(dropped.values())

Stages that keep state expose it as JSON-able data through ``state_snapshot()`` and take it
back through ``restore()``; the loop persists it under ``stage/<name>`` at each checkpoint.

>>> from datetime import datetime, timezone
>>> from types import SimpleNamespace
>>> at = datetime(2026, 11, 29, tzinfo=timezone.utc)
>>> events = [SimpleNamespace(event_id="e-1", timestamp=at)] * 2
>>> pipeline = Pipeline([CountingStage()])
>>> batch = pipeline.process(events, source="file")
>>> len(batch), dict(batch.dropped)
(2, {})

The live path's pipeline (dedup → stages → count) is built by
:func:`service.runtime.live.default_pipeline`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from service.errors import GoldwatchError

if TYPE_CHECKING:
    from service.events import QueryLogEvent

__all__ = [
    "Batch",
    "CountingStage",
    "Pipeline",
    "PipelineConfig",
    "Stage",
    "StageError",
    "StatelessStage",
    "state_key",
]


class PipelineConfig(BaseModel):
    """Settings of the live path (frozen).

    Attributes:
        max_batch_size: most messages per poll (N); also the micro-batch size.
        max_batch_wait_ms: longest a poll waits for its first message (T), in milliseconds.
        dedup_window: how many recent event ids the dedup stage remembers (W).
        max_event_bytes: larger messages are dead-lettered as ``too_large``, in bytes.
        commit_interval_s: checkpoint state and commit at most this often, in seconds
            (0: after every batch); stop and end of input always checkpoint. ``goldwatch
            replay`` ignores it and checkpoints by ``commit_every`` only, so what it writes
            follows from the events, not from the wall clock.
        commit_every: also checkpoint once this many messages are pending (30,000: a
            checkpoint costs ~110-140 ms with a full harvest pool, mostly the suggestions
            changed since the last one; at 10,000 it was ~11 µs an event at full speed, at
            30,000 ~5.5. At full speed, ~6,000 events/s here, 30,000 is about 5 s of work,
            the most a crash redoes — the span ``commit_interval_s`` already allows live
            and Kafka's own auto-commit interval; below ~6,000 events/s serve checkpoints
            by ``commit_interval_s`` first, and a replay's reports do not depend on it).
        status_interval_s: how often the loop samples ``source.status()`` (lag, rebalances).
        extra_stages: custom stages, ``module:Class`` built with no arguments, run after the
            built-in analytics and before counting.
        native_threads: threads of the native maths libraries (OpenBLAS, MKL, OpenMP) while
            the live path runs (``goldwatch serve``, ``replay``, ``demo``); 1 by default —
            more only burn CPU on the live path's small matrix products
            (:func:`service.runtime.threads.native_threads`); ``null``: the libraries' own
            default (one thread per core).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    max_batch_size: int = Field(default=500, ge=1, le=100_000)
    max_batch_wait_ms: int = Field(default=1_000, ge=0, le=60_000)
    dedup_window: int = Field(default=100_000, ge=1, le=10_000_000)
    max_event_bytes: int = Field(default=1_048_576, ge=64)
    commit_interval_s: float = Field(default=5.0, ge=0, le=3_600)
    commit_every: int = Field(default=30_000, ge=1)
    status_interval_s: float = Field(default=5.0, ge=0, le=3_600)
    extra_stages: tuple[str, ...] = Field(
        default=(), description="Custom stages as 'module:Class' (built with no arguments)."
    )
    native_threads: int | None = Field(default=1, ge=1, le=1_024)


@dataclass(eq=False)
class Batch:
    """The events of one micro-batch, mutable while the stages run.

    Attributes:
        source: the source's name (``kafka``, ``file``, ``stdin``), for labels.
        events: surviving events, in arrival order.
        annotations: one dict per surviving event (same index), filled by stages.
        dropped: how many events each stage removed, by reason (e.g. ``duplicate``).
        streams: the stream each surviving event was read from (same index), e.g. a Kafka
            ``topic[partition]``, within which events come in the order they were written;
            ``None`` when the source is one stream (a file, stdin, HTTP). Event-time windows
            judge lateness per stream (:mod:`service.drift.windows`).
        counted: ``(annotations, flags, pii)``: what
            :func:`service.pipeline.totals.count_annotations` gave on the list
            ``annotations`` (the batch's own list object then), kept by the stage that
            counted it (:class:`~service.pipeline.totals.AnnotationTotals`) so the batch's
            export does not count again; :meth:`Pipeline.process` drops it (``None``) after
            any later stage that does not say it leaves the counted annotations as they are
            (``keeps_counts = True``, see :class:`Stage`). ``None``: not counted.
        positions: the index, among the events the batch was made of, of each surviving
            event (same index as ``events``), kept by :meth:`keep`; ``None`` while no event
            was dropped (event ``i`` is input ``i``). The engine counts the fields the
            decoder dropped only for the events kept (``fields_dropped``).
    """

    source: str
    events: list[QueryLogEvent]
    annotations: list[dict[str, Any]]
    dropped: Counter[str] = field(default_factory=Counter)
    streams: list[str] | None = None
    counted: tuple[list[dict[str, Any]], dict[str, int], dict[str, int]] | None = None
    positions: list[int] | None = None

    def counts(self) -> tuple[dict[str, int], dict[str, int]] | None:
        """``(flags, pii)`` of :attr:`counted` when they are this batch's current counts
        (counted on the list it holds now, and no stage since may have changed them), else
        ``None``."""
        counted = self.counted
        if counted is None or counted[0] is not self.annotations:
            return None
        return counted[1], counted[2]

    @classmethod
    def of(
        cls, events: Sequence[QueryLogEvent], source: str, streams: Sequence[str] | None = None
    ) -> Batch:
        """Return a batch of ``events`` with empty annotations (``streams``: see the class).

        Raises:
            ValueError: ``streams`` is not as long as ``events``.
        """
        if streams is not None and len(streams) != len(events):
            raise ValueError(f"{len(streams)} streams for {len(events)} events")
        return cls(
            source=source,
            events=list(events),
            annotations=[{} for _ in events],
            streams=None if streams is None else list(streams),
        )

    def __len__(self) -> int:
        return len(self.events)

    def keep(self, mask: Sequence[bool], reason: str) -> int:
        """Keep the events whose ``mask`` entry is true; count the others under ``reason``.

        Returns:
            How many events were dropped.

        Raises:
            ValueError: ``mask`` is not as long as the batch.
        """
        if len(mask) != len(self.events):
            raise ValueError(f"mask has {len(mask)} entries, batch has {len(self.events)}")
        if all(mask):  # the common batch drops nothing: one C-level pass, no index list
            return 0
        kept = [i for i, flag in enumerate(mask) if flag]
        dropped = len(self.events) - len(kept)
        if dropped:
            self.events = [self.events[i] for i in kept]
            self.annotations = [self.annotations[i] for i in kept]
            if self.streams is not None:
                self.streams = [self.streams[i] for i in kept]
            positions = self.positions
            self.positions = kept if positions is None else [positions[i] for i in kept]
            self.dropped[reason] += dropped
        return dropped


@runtime_checkable
class Stage(Protocol):
    """One step of the pipeline.

    ``process`` reads and annotates (or drops from) the batch in place. ``state_snapshot``
    returns JSON-able data to persist, or ``None`` for a stateless stage; ``restore`` gets back
    what was persisted (``None`` on a first start).

    A stage that reads none of the events' ``user``, ``retrieval``, ``answer`` and
    ``feedback`` may say so with a class attribute ``reads_records = False``; when every
    stage of a pipeline does (:attr:`Pipeline.reads_records`), the decoder does not build
    them (``consumers.decoding.decode_batch(records=False)``: they are ``None``). A stage
    without the attribute reads them.

    A stage that changes none of the annotations :func:`service.pipeline.totals.
    count_annotations` reads (``refused``, ``refused_by``, ``out_of_scope``, ``off_corpus``,
    ``over_refusal``, ``under_refusal``, ``pii``: it neither sets, replaces nor mutates
    them, nor swaps the batch's annotation dicts) may say so with ``keeps_counts = True``;
    a stage without it after the counting one makes the batch's export count again
    (:attr:`Batch.counted`).
    """

    name: str

    def process(self, batch: Batch) -> None: ...

    def state_snapshot(self) -> Any: ...

    def restore(self, state: Any) -> None: ...


class StatelessStage:
    """Base class giving a stage the no-op state hooks."""

    name: str = "stateless"

    def process(self, batch: Batch) -> None:  # pragma: no cover - overridden
        raise NotImplementedError

    def state_snapshot(self) -> Any:
        """Nothing to persist."""
        return None

    def restore(self, state: Any) -> None:
        """Nothing to restore."""


_timestamp_of = attrgetter("timestamp")


class CountingStage:
    """Counts the events that reach it and remembers the newest event time.

    State: ``{"processed": int, "last_event_timestamp": float | None}`` (Unix seconds).
    """

    name = "count"
    reads_records = False  # timestamps only (see Stage)
    keeps_counts = True  # writes no annotation (see Stage)

    def __init__(self) -> None:
        self.processed = 0
        self.last_event_timestamp: float | None = None

    def process(self, batch: Batch) -> None:
        self.processed += len(batch)
        if not batch.events:
            return
        # the newest datetime's POSIX time: the events' timestamps are aware (UTC), so the
        # order of datetimes is that of their timestamps (one .timestamp() call, not one each)
        newest = max(map(_timestamp_of, batch.events)).timestamp()
        if (self.last_event_timestamp or 0.0) < newest:
            self.last_event_timestamp = newest

    def state_snapshot(self) -> Any:
        return {"processed": self.processed, "last_event_timestamp": self.last_event_timestamp}

    def restore(self, state: Any) -> None:
        if state:
            self.processed = int(state.get("processed", 0))
            self.last_event_timestamp = state.get("last_event_timestamp")


class StageError(GoldwatchError, RuntimeError):
    """A stage raised while processing a batch; ``stage`` names it, ``__cause__`` is the error."""

    def __init__(self, stage: str, cause: BaseException) -> None:
        super().__init__(f"stage {stage!r} failed: {type(cause).__name__}: {cause}")
        self.stage = stage


def state_key(stage_name: str) -> str:
    """Return the state-store key of a stage's snapshot: ``stage/<name>``."""
    return f"stage/{stage_name}"


class Pipeline:
    """Runs stages, in order, over each micro-batch.

    Raises:
        ValueError: two stages share a name, or a stage has an empty name.
    """

    def __init__(self, stages: Sequence[Stage]) -> None:
        names = [stage.name for stage in stages]
        if any(not name for name in names):
            raise ValueError("every stage needs a non-empty name")
        dupes = sorted({name for name in names if names.count(name) > 1})
        if dupes:
            raise ValueError(f"duplicate stage names: {', '.join(dupes)}")
        self._stages = tuple(stages)
        #: per stage: it leaves the counted annotations alone (``keeps_counts``, see Stage)
        self._keeps_counts = tuple(getattr(stage, "keeps_counts", False) is True
                                   for stage in self._stages)  # fmt: skip

    @property
    def stages(self) -> tuple[Stage, ...]:
        """The stages, in run order."""
        return self._stages

    @property
    def reads_records(self) -> bool:
        """False when every stage says it reads none of the events' ``user``,
        ``retrieval``, ``answer`` and ``feedback`` (``reads_records = False``, see
        :class:`Stage`): the decoder may then leave them out."""
        return any(getattr(stage, "reads_records", True) for stage in self._stages)

    def process(
        self, events: Sequence[QueryLogEvent], source: str, streams: Sequence[str] | None = None
    ) -> Batch:
        """Run every stage over a new batch of ``events`` (read from ``streams``, see
        :class:`Batch`) and return it.

        Raises:
            ValueError: ``streams`` is not as long as ``events``.
            StageError: a stage raised; earlier stages' effects on their own state remain.
        """
        batch = Batch.of(events, source, streams)
        for stage, keeps_counts in zip(self._stages, self._keeps_counts, strict=True):
            try:
                stage.process(batch)
            except Exception as exc:
                raise StageError(stage.name, exc) from exc
            if not keeps_counts:
                batch.counted = None
        return batch

    def state_keys(self) -> list[str]:
        """Return the state-store keys of every stage, ``stage/<name>``."""
        return [state_key(stage.name) for stage in self._stages]

    def snapshot(self) -> dict[str, Any]:
        """Return ``{"stage/<name>": snapshot}`` for the stages that have state."""
        snapshots = {state_key(s.name): s.state_snapshot() for s in self._stages}
        return {key: value for key, value in snapshots.items() if value is not None}

    def idle(self) -> None:
        """Give the stages that ask (an ``idle()`` method) a turn while no batch comes, so
        what they publish on a clock goes out on a quiet stream too (harvest's
        ``flush_interval_s``: a seventh trial's suggestions topic held 50 of 404 suggestions
        for as long as serve was idle, the rest only at shutdown).

        Raises:
            StageError: a stage's ``idle`` raised (later stages get no turn this time).
        """
        for stage in self._stages:
            turn = getattr(stage, "idle", None)
            if turn is not None:
                try:
                    turn()
                except Exception as exc:
                    raise StageError(stage.name, exc) from exc

    def checkpointed(self) -> None:
        """Tell the stages that ask (a ``checkpointed()`` method) that the snapshots of the
        last :meth:`snapshot` were committed (not called when the checkpoint failed)."""
        for stage in self._stages:
            confirm = getattr(stage, "checkpointed", None)
            if confirm is not None:
                confirm()

    def restore(self, states: Mapping[str, Any]) -> None:
        """Give each stage its persisted state (``None`` when there is none), then tell the
        stages that ask (a ``restored()`` method) that every stage has its state: one that
        reads another's restored state (the drift stage reads the annotation totals' detector
        for a snapshot kept without its labellers) does it there, whatever the stage order."""
        for stage in self._stages:
            stage.restore(states.get(state_key(stage.name)))
        for stage in self._stages:
            done = getattr(stage, "restored", None)
            if done is not None:
                done()
