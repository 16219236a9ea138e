"""Buffer spans by trace id until the trace is complete; bounded memory, nothing dropped silently.

Spans of one trace arrive in several requests or Kafka messages, the root usually last (it ends
last, and exporters batch finished spans). :class:`TraceAssembler` keeps one open trace per
trace id and hands it out as a :class:`Completed` trace when

* ``settled``: its root span has arrived (spans are exported when they end, so the root has
  ended) and no span of the trace arrived for :attr:`AssemblyLimits.settle_s` seconds; or
* ``timeout``: :attr:`AssemblyLimits.timeout_s` seconds passed since its first span, root or
  not (a trace whose root never comes, or that keeps growing); counted by the caller. A trace
  for which both hold when :meth:`TraceAssembler.due` is called (it was not called for a
  while: a restart of HTTP ingest) is ``settled``.

Bounds (each breach is a :class:`Rejected` record with its reason, for the dead-letter
destination and a counter; never a silent drop):

* ``evicted``: a new trace beyond :attr:`AssemblyLimits.max_open_traces` evicts the open trace
  that started first, whole.
* ``too_many_spans``: spans beyond :attr:`AssemblyLimits.max_spans_per_trace` of one trace are
  rejected; the trace keeps its first spans.
* ``attribute_too_large``: a string or bytes attribute value over
  :attr:`AssemblyLimits.max_attribute_bytes` (UTF-8 bytes) is cut to that size at a character
  boundary, a list or map value over it is removed; the span is kept, the record names the key
  and the original size (the value itself is not kept: it is what would exhaust memory).
* ``late_span``: a span of a trace handed out within the last ``max_open_traces`` traces
  (it would otherwise open a second, partial trace of the same id).

Spans sent again (an exporter's retry: same trace id, same span id) are not kept twice and
are reported as :class:`Rejected` records that are *not* dead letters (:data:`REPEAT_REASONS`):

* ``repeated``: the span is already in its open trace (a retry within the settle time): the
  trace keeps it once; its event is built once.
* ``duplicate``: the span was in a trace handed out recently (a retry after assembly): the
  caller counts the trace as a duplicate, as the dedup window counts an event sent twice.
  A trace counts once per time it is sent again, however its spans are split across
  requests or messages (an SDK's batch processor cuts traces at batch boundaries): the
  assembler counts, per remembered span, how often it came again after the hand-out, and
  the trace counts one more duplicate each time one of its spans comes again more often
  than any of its spans had (:attr:`Rejected.counts_duplicate`). A trace sent again whole,
  in one request or three, is one duplicate; sent again twice, two; a retry of part of it,
  one. A retry that began while the trace was open (its first spans ``repeated``) counts
  once if its other spans come after the hand-out. The span ids of the last handed-out
  traces (and these counts) are remembered up to :attr:`AssemblyLimits.remember_span_ids`
  ids (oldest trace forgotten first); a span of a handed-out trace with an id not
  remembered stays a ``late_span``.

Memory: at most ``max_open_traces * max_spans_per_trace`` spans, each attribute value at most
``max_attribute_bytes`` bytes.

Crash semantics (kept by the caller, which owns offsets): open traces are *not* checkpointed.
Each :meth:`TraceAssembler.add` names the message's position (a stream key such as
``"topic/partition"`` and an offset); :meth:`TraceAssembler.low_watermarks` gives, per stream,
the offset of the first message of the oldest open trace. The consumer commits only offsets
below it, so after a crash every message holding a span of an open trace is read again and the
trace is rebuilt. Traces already handed out whose messages are read again come out again with
the same ``event_id`` (the trace id), which the checkpointed dedup window drops: none is lost
or counted twice. HTTP ingest, whose requests cannot be read again, keeps the acknowledged
spans of its open traces in the state store instead (``service/api/trace_ingest.py``).

Time is passed in (``now``: seconds of a monotonic clock), so tests need no sleeps.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from service.pipeline.dedup import RecentIds
from service.traces.spans import Span

#: Reasons a :class:`Rejected` record carries (bounded metric labels).
REJECT_REASONS: tuple[str, ...] = ("evicted", "too_many_spans", "attribute_too_large", "late_span")
#: Reasons of :class:`Rejected` records for spans sent again: not dead letters (module
#: docstring).
REPEAT_REASONS: tuple[str, ...] = ("repeated", "duplicate")
#: Why a :class:`Completed` trace was handed out.
COMPLETE_REASONS: tuple[str, ...] = ("settled", "timeout", "flushed")


class AssemblyLimits(BaseModel):
    """Settle timing and memory bounds of :class:`TraceAssembler`.

    Attributes:
        settle_s: quiet period after the root span, seconds (> 0).
        timeout_s: longest a trace stays open after its first span, seconds (>= settle_s;
            default 120: above most LLM calls — a trace whose root ends later goes out
            without its later spans, which become ``late_span`` dead letters, so raise it for
            answers of minutes; a trace without a parentless root, such as a service called
            with W3C ``traceparent``, waits this long unless ``remote_parent_is_root``, and
            ``max_open_traces`` then bounds such traffic at about max_open_traces / timeout_s
            traces per second).
        max_open_traces: open traces kept at once (>= 1).
        max_spans_per_trace: spans kept per trace (>= 1).
        max_attribute_bytes: largest attribute value kept whole, UTF-8 bytes (>= 64).
        remember_span_ids: span ids of recently handed-out traces remembered, so that a
            retry of a trace after it was assembled is a ``duplicate``, not ``late_span``
            dead letters (>= 0; 0: none; about 100 bytes each, about 100 more for a span
            sent again after the hand-out: how often it was, so that a trace split across
            requests counts one duplicate per retry).
        remote_parent_is_root: a span whose parent is flagged remote (OTLP ``flags``
            0x100|0x200, set by the Python SDK for a span started from an incoming
            ``traceparent``) is its trace's root, so the trace settles ``settle_s`` after its
            last span. Set it when goldwatch receives only the RAG service's spans: with
            several services' spans, a downstream service's entry span (its parent is the
            caller's client span) would close the trace before the caller's root came.

    Raises:
        pydantic.ValidationError: a bound out of range, or ``timeout_s < settle_s``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    settle_s: float = Field(default=2.0, gt=0)
    timeout_s: float = Field(default=120.0, gt=0)
    max_open_traces: int = Field(default=10_000, ge=1)
    max_spans_per_trace: int = Field(default=1_000, ge=1)
    max_attribute_bytes: int = Field(default=65_536, ge=64)
    remember_span_ids: int = Field(default=100_000, ge=0)
    remote_parent_is_root: bool = False

    def model_post_init(self, context: Any, /) -> None:
        if self.timeout_s < self.settle_s:
            raise ValueError("timeout_s must be >= settle_s")


@dataclass(frozen=True, slots=True)
class Completed:
    """A trace handed out for mapping.

    Attributes:
        trace_id: 32 hex characters.
        spans: its spans in arrival order.
        why: ``settled``, ``timeout`` or ``flushed`` (:meth:`TraceAssembler.flush`).
        has_root: whether a root span arrived.
    """

    trace_id: str
    spans: tuple[Span, ...]
    why: Literal["settled", "timeout", "flushed"]
    has_root: bool


@dataclass(frozen=True, slots=True)
class Rejected:
    """Spans not kept (or kept cut), with the reason, for the dead-letter destination.

    Attributes:
        trace_id: the trace they belong to.
        reason: one of :data:`REJECT_REASONS` (dead letters) or :data:`REPEAT_REASONS`
            (spans sent again: not dead letters).
        detail: counts, sizes and attribute keys; never content.
        spans: the spans concerned (for ``attribute_too_large``: the span as kept, cut).
        counts_duplicate: for ``duplicate``: this span makes its trace count once more as
            a duplicate (it came again more often than any span of its trace had since
            the hand-out); ``False`` for a span that joins a retry already counted, and
            for every other reason.
    """

    trace_id: str
    reason: str
    detail: str
    spans: tuple[Span, ...] = ()
    counts_duplicate: bool = False


@dataclass(slots=True)
class Preview:
    """What :meth:`TraceAssembler.add` would do with some spans (:meth:`TraceAssembler.preview`).

    Attributes:
        rejected: the rejections ``add`` would return, evictions aside (spans sent again,
            :data:`REPEAT_REASONS`, included).
        kept: the spans it would keep, in order (attribute values cut), spans sent again
            left out.
        new_traces: traces it would open (each evicts one when the assembler is full).
        again: per handed-out trace some of whose spans come again, how often each of
            them will have come again after the hand-out (span id -> times, >= 1), for a
            caller that stores them with the duplicates it counts
            (:meth:`TraceAssembler.restore_again`).
    """

    rejected: list[Rejected] = field(default_factory=list)
    kept: list[Span] = field(default_factory=list)
    new_traces: int = 0
    again: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass(slots=True)
class _Again:
    """How often the spans of one handed-out trace came again after its hand-out (span id
    -> times), and the most of those (``top``): the duplicates the trace counted."""

    times: dict[str, int] = field(default_factory=dict)
    top: int = 0

    def copy(self) -> _Again:
        return _Again(dict(self.times), self.top)


@dataclass(slots=True)
class _Open:
    first_seen: float
    last_seen: float
    spans: list[Span] = field(default_factory=list)
    span_ids: set[str] = field(default_factory=set)
    has_root: bool = False
    starts: dict[str, int] = field(default_factory=dict)  # stream -> offset of first message


class TraceAssembler:
    """Open traces keyed by trace id (module docstring: rules, bounds, crash semantics).

    Not thread-safe: one consumer thread (or one lock) drives it.

    >>> from service.traces.spans import Span
    >>> a = TraceAssembler(AssemblyLimits(settle_s=1, timeout_s=10))
    >>> a.add([Span("ab" * 16, "01" * 8, None, "root", 1, 2)], now=0.0)
    []
    >>> a.due(now=0.5), [c.why for c in a.due(now=1.0)]
    ([], ['settled'])
    """

    def __init__(self, limits: AssemblyLimits) -> None:
        self._limits = limits
        self._remote_roots = limits.remote_parent_is_root
        self._open: OrderedDict[str, _Open] = OrderedDict()  # by first arrival
        self._rooted: OrderedDict[str, None] = OrderedDict()  # rooted, by last arrival
        self._closed = RecentIds(capacity=limits.max_open_traces)
        #: the handed-out traces closed by ``timeout`` (not checkpointed: after a restart
        #: their late spans get the general detail), so a late span can say why
        self._timed_out = RecentIds(capacity=limits.max_open_traces)
        #: span ids of recently handed-out traces, oldest first, and how many in all
        self._emitted: OrderedDict[str, frozenset[str]] = OrderedDict()
        self._emitted_ids = 0
        #: of remembered traces sent again after their hand-out: how often each span came
        self._again: dict[str, _Again] = {}
        self._forgotten: list[str] = []

    def __len__(self) -> int:
        """Number of open traces."""
        return len(self._open)

    @property
    def open_spans(self) -> int:
        """Spans held in open traces."""
        return sum(len(t.spans) for t in self._open.values())

    def add(
        self, spans: Iterable[Span], now: float, position: tuple[str, int] | None = None
    ) -> list[Rejected]:
        """Buffer the spans of one message.

        Args:
            spans: decoded spans, any traces.
            now: monotonic seconds.
            position: (stream, offset) of the message, for :meth:`low_watermarks`.

        Returns:
            what was not kept whole (evictions, span overflow, cut attributes, late spans)
            and the spans sent again (:data:`REPEAT_REASONS`).
        """
        rejected: list[Rejected] = []
        limits = self._limits
        for span in spans:
            trace_id = span.trace_id
            late = self._handed_out(span, self._again)
            if late is not None:
                rejected.append(late)
                continue
            trace = self._open.get(trace_id)
            if trace is None:
                if len(self._open) >= limits.max_open_traces:
                    rejected.append(self._evict())
                trace = self._open[trace_id] = _Open(first_seen=now, last_seen=now)
            refused, kept = self._admit(span, trace.span_ids)
            rejected.extend(refused)
            if kept is None:
                continue
            trace.spans.append(kept)
            trace.span_ids.add(kept.span_id)
            trace.last_seen = now
            if position is not None:
                trace.starts.setdefault(position[0], position[1])
            if kept.is_root or (self._remote_roots and kept.parent_is_remote is True):
                trace.has_root = True
            if trace.has_root:
                self._rooted[trace_id] = None
                self._rooted.move_to_end(trace_id)
        return rejected

    def preview(self, spans: Iterable[Span]) -> Preview:
        """What :meth:`add` of ``spans`` would do now, changing nothing: the rejections it
        would return other than evictions, the spans it would keep (attributes cut), and how
        many traces it would open. A caller that must make the dead letters durable before
        it keeps anything (HTTP ingest: a 503 means nothing was accepted) writes them, then
        calls :meth:`add`, which returns the same rejections as long as no trace is evicted
        (``len(self) + preview.new_traces <= max_open_traces``) and nothing changed between.
        """
        result = Preview()
        held: dict[str, set[str]] = {}  # trace -> span ids it would hold
        again: dict[str, _Again] = {}  # handed-out trace -> its counts after these spans
        stored = self._again
        for span in spans:
            trace_id = span.trace_id
            if stored and trace_id in stored and trace_id not in again:
                again[trace_id] = stored[trace_id].copy()
            late = self._handed_out(span, again)
            if late is not None:
                result.rejected.append(late)
                continue
            ids = held.get(span.trace_id)
            if ids is None:
                trace = self._open.get(span.trace_id)
                result.new_traces += trace is None
                ids = held[span.trace_id] = set() if trace is None else set(trace.span_ids)
            refused, kept = self._admit(span, ids)
            result.rejected.extend(refused)
            if kept is not None:
                ids.add(kept.span_id)
                result.kept.append(kept)
        result.again = {trace_id: dict(state.times) for trace_id, state in again.items()}
        return result

    def _handed_out(self, span: Span, again: dict[str, _Again]) -> Rejected | None:
        """The rejection of a span whose trace is not open but was handed out (``duplicate``
        when this very span was in it, else ``late_span``); ``None`` for any other span.
        A ``duplicate`` is counted in ``again`` (trace id -> its counts: the assembler's own
        for :meth:`add`, a copy for :meth:`preview`), and counts its trace once more when
        this span has now come again more often than any of its trace's spans had. The one
        rule :meth:`add` and :meth:`preview` share for it."""
        trace_id = span.trace_id
        if trace_id in self._open or (
            trace_id not in self._closed and trace_id not in self._emitted
        ):
            return None
        if span.span_id in self._emitted.get(trace_id, ()):
            state = again.get(trace_id)
            if state is None:
                state = again[trace_id] = _Again()
            times = state.times[span.span_id] = state.times.get(span.span_id, 0) + 1
            counts = times > state.top
            if counts:
                state.top = times
            detail = "span sent again after its trace was handed out"
            return Rejected(trace_id, "duplicate", detail, (span,), counts_duplicate=counts)
        detail = "span after its trace was handed out"
        if trace_id in self._timed_out:
            detail += (
                f" at timeout_s ({self._limits.timeout_s:g} s after its first span): its"
                " event went out without this span; raise traces.assembly.timeout_s when"
                " calls (e.g. an LLM's) end later than that"
            )
        return Rejected(trace_id, "late_span", detail, (span,))

    def _admit(self, span: Span, held: AbstractSet[str]) -> tuple[list[Rejected], Span | None]:
        """Whether an open trace already holding the span ids ``held`` keeps ``span``: the
        rejections (``repeated``, ``too_many_spans``, ``attribute_too_large``) and the span
        kept with its attribute values cut, or ``None`` when it is not kept. The one rule
        :meth:`add` and :meth:`preview` share for open traces."""
        trace_id = span.trace_id
        limits = self._limits
        if span.span_id in held:
            detail = "span sent again while its trace is open; kept once"
            return [Rejected(trace_id, "repeated", detail, (span,))], None
        if len(held) >= limits.max_spans_per_trace:
            detail = f"trace already holds {limits.max_spans_per_trace} spans"
            return [Rejected(trace_id, "too_many_spans", detail, (span,))], None
        kept, cut = _cap_attributes(span, limits.max_attribute_bytes)
        if cut:
            return [Rejected(trace_id, "attribute_too_large", "; ".join(cut), (kept,))], kept
        return [], kept

    def due(self, now: float) -> list[Completed]:
        """Hand out the traces complete at ``now``: timed out first (oldest first), then
        settled (quietest first)."""
        done: list[Completed] = []
        timeout, settle = self._limits.timeout_s, self._limits.settle_s
        while self._open:
            trace_id, trace = next(iter(self._open.items()))
            if now - trace.first_seen < timeout:
                break
            # both passed since the last call (a restart, a stalled ticker): a rooted, quiet
            # trace is complete, not timed out
            quiet = trace.has_root and now - trace.last_seen >= settle
            done.append(self._close(trace_id, "settled" if quiet else "timeout"))
        while self._rooted:
            trace_id = next(iter(self._rooted))
            if now - self._open[trace_id].last_seen < settle:
                break
            done.append(self._close(trace_id, "settled"))
        return done

    def flush(self) -> list[Completed]:
        """Hand out every open trace (``flushed``): HTTP ingest's stop with
        ``traces.flush_on_stop`` or a state in memory (``service/api/trace_ingest.py``;
        by default its open traces stay in the state file for the next start)."""
        return [self._close(trace_id, "flushed") for trace_id in list(self._open)]

    def low_watermarks(self) -> dict[str, int]:
        """Per stream, the offset of the first message of any open trace: commit only below
        it (module docstring, crash semantics). Streams without open traces are absent."""
        marks: dict[str, int] = {}
        for trace in self._open.values():
            for stream, offset in trace.starts.items():
                if offset < marks.get(stream, offset + 1):
                    marks[stream] = offset
        return marks

    def discard(self, streams: Iterable[str]) -> int:
        """Forget the open traces that hold a message of one of ``streams`` (partitions
        revoked in a rebalance: their new owner reads them again from below these traces).
        Nothing is dead-lettered or counted as closed.

        Returns:
            the number of traces forgotten.
        """
        gone = set(streams)
        drop = [tid for tid, trace in self._open.items() if gone & trace.starts.keys()]
        for trace_id in drop:
            del self._open[trace_id]
            self._rooted.pop(trace_id, None)
        return len(drop)

    def holds(self, trace_id: str, span_id: str) -> bool:
        """Whether the open trace ``trace_id`` holds the span ``span_id`` (kept by
        :meth:`add`: not rejected, its trace not evicted or handed out since)."""
        trace = self._open.get(trace_id)
        return trace is not None and span_id in trace.span_ids

    def closed_ids(self) -> list[str]:
        """Trace ids handed out or evicted recently (oldest first; at most
        ``max_open_traces``): their spans are ``late_span``. Checkpointed by the Kafka path."""
        return self._closed.snapshot()

    def restore_closed(self, ids: Iterable[str]) -> None:
        """Restore :meth:`closed_ids` from a checkpoint (oldest first)."""
        self._closed = RecentIds(capacity=self._limits.max_open_traces, ids=ids)

    def _close(self, trace_id: str, why: Literal["settled", "timeout", "flushed"]) -> Completed:
        trace = self._open.pop(trace_id)
        self._rooted.pop(trace_id, None)
        self._closed.add(trace_id)
        if why == "timeout":
            self._timed_out.add(trace_id)
        self._remember(trace_id, trace.span_ids)
        return Completed(trace_id, tuple(trace.spans), why, trace.has_root)

    def _remember(self, trace_id: str, span_ids: set[str]) -> None:
        """Remember the span ids of a handed-out trace (``duplicate``), within the bound."""
        bound = self._limits.remember_span_ids
        if len(span_ids) > bound:
            return
        known = self._emitted.pop(trace_id, None)
        if known is not None:
            self._emitted_ids -= len(known)
        self._again.pop(trace_id, None)  # handed out anew: its retries count from here
        self._emitted[trace_id] = frozenset(span_ids)
        self._emitted_ids += len(span_ids)
        while self._emitted_ids > bound:
            gone, ids = self._emitted.popitem(last=False)
            self._emitted_ids -= len(ids)
            self._again.pop(gone, None)
            self._forgotten.append(gone)

    def forgotten(self) -> list[str]:
        """The handed-out traces whose span ids were forgotten (the bound) since the last
        call, so a caller that stores them (HTTP ingest) can delete them."""
        gone, self._forgotten = self._forgotten, []
        return gone

    def emitted(self) -> dict[str, list[str]]:
        """The remembered span ids of handed-out traces (oldest first): trace id -> span
        ids. For a checkpoint (:meth:`restore_emitted`)."""
        return {trace_id: sorted(ids) for trace_id, ids in self._emitted.items()}

    def restore_emitted(self, emitted: Iterable[tuple[str, Iterable[str]]]) -> None:
        """Remember handed-out traces' span ids again after a restart (oldest first); each
        trace id is also marked handed out (its other spans are ``late_span``)."""
        for trace_id, span_ids in emitted:
            self._closed.add(trace_id)
            self._remember(trace_id, set(span_ids))

    def again(self) -> dict[str, dict[str, int]]:
        """Of the remembered handed-out traces sent again since: how often each span came
        again (trace id -> span id -> times). For a checkpoint (:meth:`restore_again`)."""
        return {trace_id: dict(state.times) for trace_id, state in self._again.items()}

    def restore_again(self, trace_id: str, times: Mapping[str, int]) -> None:
        """Restore how often the spans of the remembered handed-out trace ``trace_id`` came
        again (:meth:`again`, :attr:`Preview.again`), after :meth:`restore_emitted`; counts
        of span ids not remembered for it, and counts below 1, are left out, and so is a
        trace not remembered (forgotten by the bound)."""
        ids = self._emitted.get(trace_id)
        if ids is None:
            return
        kept = {span_id: int(n) for span_id, n in times.items() if span_id in ids and n >= 1}
        if kept:
            self._again[trace_id] = _Again(kept, max(kept.values()))
        else:
            self._again.pop(trace_id, None)

    def _evict(self) -> Rejected:
        trace_id, trace = self._open.popitem(last=False)
        self._rooted.pop(trace_id, None)
        self._closed.add(trace_id)
        detail = (
            f"{self._limits.max_open_traces} traces open; evicted the oldest "
            f"({len(trace.spans)} spans, root {'seen' if trace.has_root else 'not seen'})"
        )
        return Rejected(trace_id, "evicted", detail, tuple(trace.spans))


def _size(value: Any) -> int:
    """UTF-8 bytes of a value (strings, bytes), recursively summed for lists and maps."""
    if isinstance(value, str):
        return len(value) if value.isascii() else len(value.encode("utf-8", "surrogatepass"))
    if isinstance(value, bytes):
        return len(value)
    if isinstance(value, list):
        return sum(_size(item) for item in value)
    if isinstance(value, dict):
        return sum(len(key) + _size(item) for key, item in value.items())
    return 8


def _cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` UTF-8 bytes, at a character boundary."""
    return text.encode("utf-8", "surrogatepass")[:limit].decode("utf-8", "ignore")


def _cap_attributes(span: Span, limit: int) -> tuple[Span, list[str]]:
    """The span with every attribute value (of the span and of its events) of over ``limit``
    bytes cut (text, bytes) or removed (lists, maps), and one note per change (key and
    original size)."""
    attributes, notes = _cap(span.attributes, limit)
    events = span.events
    for i, event in enumerate(span.events):
        capped, event_notes = _cap(event.attributes, limit)
        if event_notes:
            events = (*events[:i], replace(event, attributes=capped), *events[i + 1 :])
            notes += [f"event {event.name!r}: {note}" for note in event_notes]
    if not notes:
        return span, notes
    return replace(span, attributes=attributes, events=events), notes


#: Attribute value types whose :func:`_size` is 8 bytes, below any limit.
_NUMBERS = frozenset({int, float, bool, type(None)})


def _cap(attributes: dict[str, Any], limit: int) -> tuple[dict[str, Any], list[str]]:
    notes: list[str] = []
    original = attributes
    quarter = limit // 4
    for key, value in original.items():
        kind = type(value)
        # len() is a lower bound of the UTF-8 size and at most a quarter of it: cheap screen;
        # a number or boolean counts 8 bytes (limit >= 64)
        if (kind is str and len(value) <= quarter) or kind in _NUMBERS:
            continue
        if isinstance(value, str | bytes) and len(value) * 4 <= limit:
            continue
        size = _size(value)
        if size <= limit:
            continue
        if attributes is original:
            attributes = dict(attributes)
        if isinstance(value, str):
            attributes[key] = _cut(value, limit)
            notes.append(f"attribute {key!r} of {size} bytes cut to {limit}")
        elif isinstance(value, bytes):
            attributes[key] = value[:limit]
            notes.append(f"attribute {key!r} of {size} bytes cut to {limit}")
        else:
            del attributes[key]
            notes.append(f"attribute {key!r} of {size} bytes removed")
    return attributes, notes
