"""A source of events assembled from OTLP trace messages (the Collector's ``kafka`` exporter).

:class:`TraceSource` wraps a message source (Kafka) whose values are
``ExportTraceServiceRequest`` payloads (``otlp_proto`` or ``otlp_json``; ``otlp`` detects each
message: JSON when its first non-blank byte is ``{``). It decodes every message into spans,
buffers them in a :class:`~service.traces.assembly.TraceAssembler` (position: the message's
``topic/partition`` and offset), and hands the poll loop one message per finished trace: the
event (:func:`~service.traces.mapping.trace_to_event`) as canonical goldwatch JSON, so the
loop, the engine and every stage run unchanged. "Consumed" therefore counts traces, not Kafka
messages.

Dead letters (written to the wrapped source's dead-letter destination at once, made durable
by its ``sync_dead_letters`` before every checkpoint, as the loop's own): undecodable messages
(the raw bytes, reason from :data:`service.traces.otlp.REASONS`), assembly's rejections
(spans as OTLP/JSON) and traces without a question.

Crash semantics: :meth:`TraceSource.commit` ignores the messages the loop passes (they are the
synthetic trace messages) and commits, per partition, only below the first message of the
oldest open trace (:meth:`~service.traces.assembly.TraceAssembler.low_watermarks`), else past
the last message polled. It is called after the checkpoint that holds every trace handed out
so far. After kill -9 the consumer group resumes at that offset: every span of an open trace
is read again, and a trace handed out before whose messages are read again comes out with the
same ``event_id`` (its trace id), which the checkpointed dedup window drops. A re-read part of
a handed-out trace that holds no question is dead-lettered (``missing_field``) a second time:
dead letters are at-least-once, as the loop says.

Not handled yet: a partition revoked in a rebalance keeps its open traces here until they time
out, while its new owner re-reads them (with ``partition_traces_by_id: true`` the dedup window
of each replica sees each trace once, but the two replicas may both count it).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any, Literal

from consumers.base import DeadLetter, Origin, RawMessage, Source
from service.telemetry import TraceMetrics
from service.traces.assembly import Completed, Rejected, TraceAssembler
from service.traces.mapping import TraceMapping, TraceMappingError, trace_to_event
from service.traces.otlp import TraceDecodeError, decode_json, decode_protobuf, encode_json
from service.traces.spans import Span

Encoding = Literal["otlp_proto", "otlp_json", "otlp"]


def decode_payload(value: bytes, encoding: Encoding) -> list[Span]:
    """Decode one message value in ``encoding`` (``otlp``: JSON if it starts with ``{``).

    Raises:
        TraceDecodeError: as :func:`~service.traces.otlp.decode_protobuf` /
            :func:`~service.traces.otlp.decode_json`.
    """
    if encoding == "otlp_json" or (encoding == "otlp" and value.lstrip()[:1] == b"{"):
        return decode_json(value)
    return decode_protobuf(value)


class TraceSource:
    """The wrapped source's OTLP messages as one event message per trace (module docstring).

    Args:
        inner: the message source (its ``dead_letter``, ``sync_dead_letters``, ``commit``,
            ``status``, ``ready`` and ``close`` are used).
        assembler: the open traces.
        mapping: trace -> event rules.
        encoding: the topic's encoding.
        clock: monotonic seconds.
        metrics: the trace metrics to count into (``None``: :attr:`counts` only).
    """

    def __init__(
        self,
        inner: Source,
        assembler: TraceAssembler,
        mapping: TraceMapping,
        encoding: Encoding = "otlp",
        clock: Callable[[], float] = time.monotonic,
        metrics: TraceMetrics | None = None,
    ) -> None:
        self.inner = inner
        self.metrics = metrics
        self.name = inner.name
        self.assembler = assembler
        self.mapping = mapping
        self.encoding = encoding
        self.clock = clock
        self._last: dict[tuple[str, int], int] = {}  # last offset polled per partition
        self._committed: dict[tuple[str, int], int] = {}  # last offset stored per partition
        #: Counts of what this source did: ``traces`` by why, ``rejected`` and ``unmapped``
        #: by reason, ``undecodable`` by reason, ``spans``.
        self.counts: dict[str, dict[str, int]] = {
            "traces": {}, "rejected": {}, "unmapped": {}, "undecodable": {}, "spans": {},
        }  # fmt: skip

    def __getattr__(self, name: str) -> Any:
        """Anything else (``lag``, ``refresh_lag``, ...) is the wrapped source's."""
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def _count(self, group: str, key: str, n: int = 1) -> None:
        self.counts[group][key] = self.counts[group].get(key, 0) + n
        metrics = self.metrics
        if metrics is None:
            return
        if group == "traces":
            if key == "without_root":
                metrics.without_root.inc(n)
            else:
                metrics.assembled.labels(why=key).inc(n)
        elif group == "spans":
            metrics.spans_received.inc(n)
        else:
            counter = {"rejected": metrics.spans_rejected, "unmapped": metrics.unmapped,
                       "undecodable": metrics.payloads_rejected}[group]  # fmt: skip
            counter.labels(reason=key).inc(n)

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        """Poll the wrapped source, buffer its spans, and return the traces now due as event
        messages (possibly none, while traces are open)."""
        letters: list[DeadLetter] = []
        for message in self.inner.poll(max_records, timeout_ms):
            letters += self._take(message)
        done = self.assembler.due(self.clock())
        if self.metrics is not None:
            self.metrics.open_traces.set(len(self.assembler))
        out = self._events(done, letters)
        if letters:
            self.inner.dead_letter(letters)
        return out

    def _take(self, message: RawMessage) -> list[DeadLetter]:
        origin = message.origin
        position = None
        if origin.topic is not None and origin.partition is not None and origin.offset is not None:
            key = (origin.topic, origin.partition)
            self._last[key] = max(self._last.get(key, -1), origin.offset)
            position = (f"{origin.topic}/{origin.partition}", origin.offset)
        if message.value is None:
            return [DeadLetter(message, "tombstone", "tombstone (no value)")]
        try:
            spans = decode_payload(message.value, self.encoding)
        except TraceDecodeError as exc:
            self._count("undecodable", exc.reason)
            return [DeadLetter(message, exc.reason, exc.detail)]
        self._count("spans", "received", len(spans))
        rejected = self.assembler.add(spans, now=self.clock(), position=position)
        return [self._rejected(item, origin) for item in rejected]

    def _rejected(self, item: Rejected, origin: Origin) -> DeadLetter:
        self._count("rejected", item.reason, len(item.spans) or 1)
        return DeadLetter(RawMessage(encode_json(item.spans), origin), item.reason, item.detail)

    def _events(self, done: Sequence[Completed], letters: list[DeadLetter]) -> list[RawMessage]:
        out: list[RawMessage] = []
        for trace in done:
            self._count("traces", trace.why)
            if not trace.has_root:
                self._count("traces", "without_root")
            origin = Origin(file=f"trace:{trace.trace_id}", line=1)
            try:
                built = trace_to_event(trace.spans, self.mapping)
            except TraceMappingError as exc:
                self._count("unmapped", exc.reason)
                value = encode_json(trace.spans)
                letters.append(DeadLetter(RawMessage(value, origin), exc.reason, exc.detail))
                continue
            value = built.event.model_dump_json().encode("utf-8", "surrogatepass")
            out.append(RawMessage(value, origin))
        return out

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        """Commit each partition below its oldest open trace (the ``messages``, synthetic,
        are ignored); see the module docstring."""
        marks = self.assembler.low_watermarks()
        safe: list[RawMessage] = []
        for (topic, partition), last in self._last.items():
            upto = min(marks.get(f"{topic}/{partition}", last + 1), last + 1) - 1
            if upto > self._committed.get((topic, partition), -1):
                self._committed[(topic, partition)] = upto
                safe.append(RawMessage(None, Origin(topic=topic, partition=partition, offset=upto)))
        commit: Any = self.inner.commit
        if force:
            commit(safe, force=True)
        else:
            commit(safe)

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        """Dead-letter through the wrapped source."""
        self.inner.dead_letter(letters)

    def sync_dead_letters(self) -> None:
        """The wrapped source's ``sync_dead_letters``, when it has one."""
        sync = getattr(self.inner, "sync_dead_letters", None)
        if sync is not None:
            sync()

    @property
    def pending_dead_letters(self) -> int:
        """The wrapped source's unacknowledged dead letters (0 if it does not defer them)."""
        return int(getattr(self.inner, "pending_dead_letters", 0))

    def status(self) -> dict[str, Any]:
        """The wrapped source's status plus ``traces``: open traces and spans, and counts."""
        status = dict(self.inner.status())
        status["traces"] = {
            "open": len(self.assembler),
            "open_spans": self.assembler.open_spans,
            **{group: dict(values) for group, values in self.counts.items()},
        }
        return status

    def ready(self) -> bool:
        """Whether the wrapped source is ready."""
        return self.inner.ready()

    def mark_failed(self) -> None:
        """Forward a crash mark (the loop calls it before :meth:`close` after an exception)."""
        mark = getattr(self.inner, "mark_failed", None)
        if mark is not None:
            mark()

    def close(self) -> None:
        """Close the wrapped source; open traces are dropped, uncommitted (re-read later)."""
        self.inner.close()
