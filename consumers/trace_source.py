"""A source of events assembled from OTLP trace messages (the Collector's ``kafka`` exporter).

:class:`TraceSource` wraps a message source (Kafka) whose values are
``ExportTraceServiceRequest`` payloads (``otlp_proto`` or ``otlp_json``; ``otlp`` detects each
message: JSON when its first non-blank byte is ``{``). It decodes every message into spans,
buffers them in a :class:`~service.traces.assembly.TraceAssembler` (position: the message's
``topic/partition`` and offset), and hands the poll loop one message per finished trace
(:class:`ReadyEvent`): its event (:func:`~service.traces.mapping.trace_to_event`), whose
``value`` is the event's canonical goldwatch JSON, so the loop, the engine and every stage
run unchanged. "Consumed" therefore counts traces, not Kafka messages. The engine's decoder,
wrapped by :meth:`TraceSource.wrap_decoder`, takes the event as it is (it was validated when
built, and decoding its canonical JSON gives it back) instead of writing and parsing that
JSON; only an event that might exceed the decoder's ``max_event_bytes`` goes through the
decoder's own checks, so an oversized one is dead-lettered ``too_large`` as before.

Dead letters: undecodable messages (the raw bytes, reason from
:data:`service.traces.otlp.REASONS`), assembly's rejections (spans as OTLP/JSON) and traces
without a question go back to the loop as messages of their own, which the engine's decoder
(wrapped by :meth:`TraceSource.wrap_decoder`) turns into their dead letters: the engine counts
them in its totals and the loop writes them through the wrapped source's dead-letter
destination, as any other.

Crash semantics: :meth:`TraceSource.commit` ignores the messages the loop passes (they are the
synthetic ones) and commits, per partition, only below the first message of the oldest open
trace (:meth:`~service.traces.assembly.TraceAssembler.low_watermarks`), else past the last
message polled; the loop calls it after the checkpoint that holds every trace handed out so
far. With each checkpoint the engine also stores this source's position
(:meth:`TraceSource.position_after`): per partition the last offset read, and the recently
closed trace ids. After kill -9 the group resumes at the committed offset: every span of a
trace still open is read again and the trace is rebuilt; a message read before the checkpoint
gives its spans but not its dead letters again (they were counted); a span of a trace closed
before the checkpoint is a replay, dropped. What was read after the last checkpoint is
processed again from scratch, as the totals restored with that checkpoint do not hold it. So
processed + dead-lettered equals what was produced, with no duplicates, as long as no more
than ``max_open_traces`` traces close between a trace's first message and the commit past it.

Rebalances: at each poll, the open traces holding a message of a partition the wrapped source
no longer owns are forgotten (counted as ``revoked`` in the status), since its new owner reads
them again from below them. This is exact when each trace lives in one partition (the
Collector's ``partition_traces_by_id: true``); a trace spread over partitions owned by two
replicas is assembled in parts by both.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

from consumers.base import (
    Assigned,
    CheckpointsOnRevoke,
    DeadLetter,
    ExplainsNotReady,
    Finite,
    HoldsDeadLetters,
    MarksFailure,
    Origin,
    RawMessage,
    Source,
    SyncsDeadLetters,
    TracksTopicIds,
)
from consumers.decoding import note_dropped_fields
from consumers.engine import Decoder
from service.events import QueryLogEvent
from service.telemetry import TraceMetrics
from service.traces.assembly import REPEAT_REASONS, Completed, Rejected, TraceAssembler
from service.traces.mapping import (
    TraceMapping,
    TraceMappingError,
    stray_documents_message,
    trace_to_event,
)
from service.traces.otlp import (
    Decoded,
    TraceDecodeError,
    decode_json_request,
    decode_protobuf_request,
    encode_json,
)

log = logging.getLogger(__name__)
Encoding = Literal["otlp_proto", "otlp_json", "otlp"]
#: Most messages per trace :meth:`TraceSource.poll` asks the wrapped source for, per event
#: the loop asks for (a bound on one poll's decoding work: 8 x ``max_records`` messages).
MAX_MESSAGES_PER_TRACE = 8
#: Messages after which the messages-per-trace estimate is halved (weights recent traffic).
_PER_TRACE_WINDOW = 100_000
#: ``Origin.file`` of the stand-in messages that carry this source's dead letters to the loop.
TRACES_DEAD = "otlp-dead-letter"


class ReadyEvent(RawMessage):
    """The stand-in message of one assembled trace, carrying its event.

    ``value`` is the event's canonical JSON (``QueryLogEvent.model_dump_json``, UTF-8), made
    when first read: the wrapped decoder reads it only for an event that may be over the size
    limit, the loop only to dead-letter a failed batch. Built by :class:`TraceSource` only.
    """

    __slots__ = ("event", "dropped", "_json")
    event: QueryLogEvent
    #: what the trace carried that the event lost (:attr:`~service.traces.mapping.
    #: TraceEvent.dropped`), counted as dropped fields when the event is kept
    dropped: tuple[tuple[str, str], ...]
    _json: bytes | None

    def __init__(
        self, event: QueryLogEvent, origin: Origin, dropped: tuple[tuple[str, str], ...] = ()
    ) -> None:
        init = object.__setattr__  # RawMessage is frozen; its ``value`` slot stays unused
        init(self, "event", event)
        init(self, "dropped", dropped)
        init(self, "_json", None)
        init(self, "origin", origin)
        init(self, "key", None)
        init(self, "timestamp_ms", None)

    @property
    def value(self) -> bytes:
        """The event's canonical JSON, UTF-8 bytes."""
        text = self._json
        if text is None:
            text = self.event.model_dump_json().encode("utf-8", "surrogatepass")
            object.__setattr__(self, "_json", text)
        return text


def json_size_bound(event: QueryLogEvent) -> int:
    """An upper bound of ``len(event.model_dump_json().encode())``, in bytes: 6 bytes per
    character of every string (a ``\\uXXXX`` escape is the longest a character gets; UTF-8
    takes at most 4), plus 1,024 for the keys, numbers, timestamp and nulls of the record and
    256 per retrieved passage and per citation (tests/consumers/test_trace_events_pinned.py
    checks it against the JSON). A field added to the event must be counted here unless those
    1,024 bytes cover it (as they would a 32-character trace id)."""
    chars = len(event.event_id) + len(event.question) + len(event.channel or "")
    records = 0
    user = event.user
    if user is not None:
        chars += len(user.id or "") + len(user.role or "") + len(user.tenant or "")
    retrieval = event.retrieval
    if retrieval is not None:
        chars += len(retrieval.retriever or "")
        for passage in retrieval.results:
            chars += len(passage.id) + len(passage.doc or "") + len(passage.doc_type or "")
        records += len(retrieval.results)
    answer = event.answer
    if answer is not None:
        chars += len(answer.text or "") + sum(len(c) for c in answer.citations)
        records += len(answer.citations)
    return 6 * chars + 1024 + 256 * records


def decode_payload(value: bytes, encoding: Encoding) -> Decoded:
    """Decode one message value in ``encoding`` (``otlp``: JSON if it starts with ``{``):
    its readable spans, and its unreadable ones set apart with their dead letters (OTLP's
    partial success, as on ``POST /v1/traces``).

    Raises:
        TraceDecodeError: the envelope cannot be read (as
            :func:`~service.traces.otlp.decode_protobuf_request` /
            :func:`~service.traces.otlp.decode_json_request`).
    """
    if encoding == "otlp_json" or (encoding == "otlp" and value.lstrip()[:1] == b"{"):
        return decode_json_request(value)
    return decode_protobuf_request(value)


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
        content_index: corpus passage text key -> corpus id, for documents without an id
            (:func:`service.api.trace_ingest.content_index`).
    """

    def __init__(
        self,
        inner: Source,
        assembler: TraceAssembler,
        mapping: TraceMapping,
        encoding: Encoding = "otlp",
        clock: Callable[[], float] = time.monotonic,
        metrics: TraceMetrics | None = None,
        content_index: Mapping[str, str] | None = None,
    ) -> None:
        self.content_index = content_index or {}
        self.inner = inner
        self.metrics = metrics
        self.name = inner.name
        self.assembler = assembler
        self.mapping = mapping
        self.encoding = encoding
        self.clock = clock
        self._last: dict[tuple[str, int], int] = {}  # last offset polled per partition
        self._committed: dict[tuple[str, int], int] = {}  # last offset stored per partition
        self._replayed: dict[str, int] = {}  # "topic/partition" -> last offset read before
        self._letters: dict[int, DeadLetter] = {}  # id(message) -> its dead letter
        self._seen = [0, 0]  # messages polled, traces handed out (both halved now and then)
        self.state_key = "otlp_traces"
        self._stray_logged = False  # documents off a retrieval span logged (once)
        #: Counts of what this source did: ``traces`` by why, ``rejected`` and ``unmapped``
        #: by reason, ``undecodable`` by reason, ``spans``, ``repeated`` (spans sent again:
        #: ``repeated`` into an open trace, ``duplicate`` after their trace was handed out).
        self.counts: dict[str, dict[str, int]] = {
            "traces": {}, "rejected": {}, "unmapped": {}, "undecodable": {}, "spans": {},
            "repeated": {},
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
            if key == "revoked":
                return
            if key == "without_root":
                metrics.without_root.inc(n)
            else:
                metrics.assembled.labels(why=key).inc(n)
        elif group == "spans":
            metrics.spans_received.inc(n)
        else:
            counter = {"rejected": metrics.spans_rejected, "unmapped": metrics.unmapped,
                       "undecodable": metrics.payloads_rejected,
                       "repeated": metrics.spans_repeated}[group]  # fmt: skip
            counter.labels(reason=key).inc(n)

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        """Poll the wrapped source, buffer its spans, and return the traces now due as event
        messages (possibly none, while traces are open).

        ``max_records`` counts events, as for any source: the wrapped source is asked for
        ``max_records`` times the messages a trace has taken so far (between 1 and
        :data:`MAX_MESSAGES_PER_TRACE`), so that the loop's batches hold about ``max_records``
        traces in steady state rather than a fraction of them when each trace comes in
        several messages (the analytics stages cost about 35 ms a batch on top of their cost
        per event: benchmarks/bench_traces.py)."""
        letters: list[DeadLetter] = []
        polled = self.inner.poll(self._messages_for(max_records), timeout_ms)
        self._drop_revoked()
        for message in polled:
            letters += self._take(message)
        done = self.assembler.due(self.clock())
        self._seen[0] += len(polled)
        self._seen[1] += len(done)
        if self._seen[0] > _PER_TRACE_WINDOW:  # follow a change of the producers' batching
            self._seen = [self._seen[0] // 2, self._seen[1] // 2]
        self.assembler.forgotten()  # this path stores no span ids of handed-out traces
        if self.metrics is not None:
            self.metrics.open_traces.set(len(self.assembler))
        out = self._events(done, letters)
        for letter in letters:  # decoded into these dead letters by wrap_decoder
            # The loop gets a stand-in without Kafka coordinates: the engine's redelivery
            # check (offsets at or below the last applied one) must not drop a letter that
            # comes after a later offset of its partition (a late span, a second rejection
            # of one message); replays are this source's own business (restore). The dead
            # letter itself keeps the original origin, for the dead-letter topic.
            stand_in = RawMessage(letter.message.value, Origin(file=TRACES_DEAD, line=1))
            self._letters[id(stand_in)] = letter
            out.append(stand_in)
        return out

    def _messages_for(self, max_records: int) -> int:
        """Messages to ask the wrapped source for so that about ``max_records`` traces come
        out (see :meth:`poll`)."""
        messages, handed_out = self._seen
        traces = handed_out + len(self.assembler)  # handed out or still open
        per_trace = messages / traces if traces else 1.0
        return max(1, int(max_records * min(max(per_trace, 1.0), MAX_MESSAGES_PER_TRACE)))

    def wrap_decoder(self, decoder: Decoder) -> Decoder:
        """The engine's decoder, which also turns this source's dead-letter messages into
        their dead letters (so the engine counts and the loop writes them as its own) and
        takes a :class:`ReadyEvent`'s event as it is when :func:`json_size_bound` keeps it
        within the decoder's ``max_event_bytes`` (read from a :func:`consumers.loop.make_decoder`
        partial; another decoder decodes every event's JSON)."""
        keywords = getattr(decoder, "keywords", None)
        limit = keywords.get("max_event_bytes") if isinstance(keywords, dict) else None
        letters = self._letters

        def decode(
            messages: Sequence[RawMessage],
        ) -> tuple[list[tuple[RawMessage, QueryLogEvent]], list[DeadLetter]]:
            decoded: list[tuple[RawMessage, QueryLogEvent]] = []
            ours: list[DeadLetter] = []
            theirs: list[DeadLetter] = []
            rest: list[RawMessage] = []
            for message in messages:
                if type(message) is ReadyEvent and limit is not None:
                    event = message.event
                    if json_size_bound(event) <= limit:
                        decoded.append((message, event))
                    else:  # the decoder's own size check, in order with the others
                        one, dead = decoder([message])
                        decoded += one
                        theirs += dead
                        if not one:  # dead-lettered: no event to count drops of
                            continue
                        event = one[0][1]
                    if message.dropped:  # counted by the engine if the event is kept
                        note_dropped_fields(event, message.dropped)
                    continue
                letter = letters.pop(id(message), None) if letters else None
                if letter is not None:
                    ours.append(letter)
                else:
                    rest.append(message)
            if rest:
                one, dead = decoder(rest)
                for message, event in one:  # events decoded from their JSON: drops too
                    if type(message) is ReadyEvent and message.dropped:
                        note_dropped_fields(event, message.dropped)
                decoded += one
                theirs += dead
            return decoded, [*ours, *theirs]

        return decode

    # -- checkpointed state (consumers.loop.Resumable) ---------------------------------------

    def position_after(self, messages: Sequence[RawMessage]) -> dict[str, Any]:
        """What the engine checkpoints with each batch: per partition the last offset read
        (every dead letter of a message up to it is counted) and the recently closed trace
        ids (their re-read spans are replays, not late spans)."""
        read = {f"{t}/{p}": offset for (t, p), offset in self._last.items()}
        for stream, offset in self._replayed.items():
            read.setdefault(stream, offset)
        return {"read": read, "closed": self.assembler.closed_ids()}

    def restore(self, state: dict[str, Any] | None) -> None:
        """Resume after a restart: messages up to each partition's checkpointed offset are
        re-read for their spans only (their dead letters were written and counted)."""
        if not state:
            return
        self._replayed = {str(k): int(v) for k, v in dict(state.get("read", {})).items()}
        self.assembler.restore_closed(str(i) for i in state.get("closed", ()))

    def _drop_revoked(self) -> None:
        """Forget the partitions the wrapped source no longer owns (a rebalance): their open
        traces (the new owner reads them again from below them, as nothing past them was
        committed), the offsets read and the replay marks."""
        if not isinstance(self.inner, Assigned):
            return
        owned = self.inner.assignment()
        revoked = [key for key in self._last if key not in owned]
        if not revoked:
            return
        streams = [f"{topic}/{partition}" for topic, partition in revoked]
        self._count("traces", "revoked", self.assembler.discard(streams))
        for key, stream in zip(revoked, streams, strict=True):
            self._last.pop(key, None)
            self._committed.pop(key, None)
            self._replayed.pop(stream, None)

    def _take(self, message: RawMessage) -> list[DeadLetter]:
        origin = message.origin
        position, replay = None, False
        if origin.topic is not None and origin.partition is not None and origin.offset is not None:
            key = (origin.topic, origin.partition)
            self._last[key] = max(self._last.get(key, -1), origin.offset)
            position = (f"{origin.topic}/{origin.partition}", origin.offset)
            replay = origin.offset <= self._replayed.get(position[0], -1)
        if message.value is None:
            return [] if replay else [DeadLetter(message, "tombstone", "tombstone (no value)")]
        try:
            decoded = decode_payload(message.value, self.encoding)
        except TraceDecodeError as exc:
            if replay:
                return []
            self._count("undecodable", exc.reason)
            return [DeadLetter(message, exc.reason, exc.detail)]
        spans = decoded.spans
        self._count("spans", "received", len(spans) + len(decoded.invalid))
        rejected = self.assembler.add(spans, now=self.clock(), position=position)
        if replay:  # counted and dead-lettered before the restart
            return []
        # a message's unreadable spans are its dead letters, its readable ones kept (one bad
        # span used to dead-letter the whole message, every good trace in it lost)
        letters = []
        for unreadable in decoded.letters:
            for reason, n in unreadable.spans.items():
                self._count("rejected", reason, n)
            stand_in = RawMessage(unreadable.payload, origin, message.key, message.timestamp_ms)
            letters.append(DeadLetter(stand_in, unreadable.reason, unreadable.detail))
        for item in rejected:
            if item.reason in REPEAT_REASONS:  # sent again: kept once, not a dead letter
                self._count("repeated", item.reason, len(item.spans))
            else:
                letters.append(self._rejected(item, origin))
        return letters

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
                built = trace_to_event(trace.spans, self.mapping, self.content_index)
            except TraceMappingError as exc:
                self._count("unmapped", exc.reason)
                value = encode_json(trace.spans)
                letters.append(DeadLetter(RawMessage(value, origin), exc.reason, exc.detail))
                continue
            out.append(ReadyEvent(built.event, origin, built.dropped))
            if not self._stray_logged and (stray := stray_documents_message(built)):
                self._stray_logged = True  # once per process; every one counts (dropped)
                log.warning("trace source: %s", stray)
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
        if isinstance(self.inner, SyncsDeadLetters):
            self.inner.sync_dead_letters()

    @property
    def pending_dead_letters(self) -> int:
        """The wrapped source's unacknowledged dead letters (0 if it does not defer them)."""
        return self.inner.pending_dead_letters if isinstance(self.inner, HoldsDeadLetters) else 0

    # The loop's optional capabilities (consumers.base), forwarded with the loop's own
    # fallback when the wrapped source lacks one, so isinstance sees them on this class.

    @property
    def at_eof(self) -> bool:
        """The wrapped source's ``at_eof`` (``True`` when it cannot end)."""
        return self.inner.at_eof if isinstance(self.inner, Finite) else True

    def topic_ids(self) -> dict[str, str]:
        """The wrapped source's topic ids (none when it does not track them)."""
        return self.inner.topic_ids() if isinstance(self.inner, TracksTopicIds) else {}

    def restart_topics(self, topics: Iterable[str]) -> None:
        """Have the wrapped source read ``topics`` again from offset 0."""
        if isinstance(self.inner, TracksTopicIds):
            self.inner.restart_topics(topics)

    def checkpoint_on_revoke(self, checkpoint: Callable[[], None] | None) -> None:
        """The wrapped source's, when it has it (Kafka): the loop's checkpoint then runs
        this source's :meth:`commit` before a revocation, storing each revoked partition's
        offsets below its oldest open trace (the open traces are discarded at the next poll
        and read again by the new owner)."""
        if isinstance(self.inner, CheckpointsOnRevoke):
            self.inner.checkpoint_on_revoke(checkpoint)

    def not_ready_reason(self) -> str | None:
        """The wrapped source's reason for not being ready, or ``None``."""
        return self.inner.not_ready_reason() if isinstance(self.inner, ExplainsNotReady) else None

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
        if isinstance(self.inner, MarksFailure):
            self.inner.mark_failed()

    def close(self) -> None:
        """Close the wrapped source; open traces are dropped, uncommitted (re-read later)."""
        self.inner.close()
