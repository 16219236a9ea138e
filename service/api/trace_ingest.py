"""HTTP trace ingest: OTLP spans -> assembly -> events through the live pipeline (issue 20).

:class:`TraceIngest` owns one :class:`~service.traces.assembly.TraceAssembler`. Each
``POST /v1/traces`` adds its spans (:meth:`TraceIngest.receive`); a ticker thread hands out
the traces that are due, maps each to one event (:func:`~service.traces.mapping.trace_to_event`)
and runs them through :meth:`service.runtime.process.Runtime.ingest`, the path of
``POST /v1/events``: dedup on ``event_id`` (the trace id), PII scrubbing, analytics, shadow,
harvest, metrics, checkpoint. Everything not kept goes to the HTTP dead-letter file with its
reason (the spans as OTLP/JSON, replayable): undecodable payloads, unreadable spans of a
decodable payload (:class:`~service.traces.otlp.UnreadableLetter`: one letter per resource and
reason holding its unreadable spans, or the whole request when those would outgrow it),
rejected spans (:data:`~service.traces.assembly.REJECT_REASONS`), traces without a question;
each is counted by that runtime path too (``Runtime.ingest``'s ``letters``:
``totals.dead_lettered`` and ``goldwatch_events_dead_lettered_total`` by reason, in the
checkpoint that deletes the spans' keys). Those totals count letters (lines of the
dead-letter file, each one consumed message, so ``consumed = processed + duplicates +
dead_lettered``); the spans in them are counted in ``goldwatch_trace_spans_rejected_total``
(and ``partial_success.rejected_spans``). Spans sent again
(:data:`~service.traces.assembly.REPEAT_REASONS`) are no dead letters: kept once while their
trace is open; after it was handed out the trace counts as a duplicate, once per time it is
sent again however its spans are split across requests (the assembler's rule:
:attr:`~service.traces.assembly.Rejected.counts_duplicate`). The span ids of handed-out
traces are kept in the state store (:data:`EMITTED_PREFIX`, written with the trace's
checkpoint), and how often each came again (:data:`AGAIN_PREFIX`, written in the checkpoint
that counts the duplicate), so that this holds across a restart.

Durability (the same guarantee as ``/v1/events``: once the 200 is sent, a crash loses
nothing and counts nothing twice):

* Before :meth:`TraceIngest.receive` returns, the request's dead letters are on disk and the
  spans it keeps are written to the state store (:class:`~service.state.StateStore`, the
  SQLite file ``/v1/events`` checkpoints into: one transaction, WAL, ``synchronous=FULL``;
  with dead letters or duplicates, that transaction is the engine's checkpoint that counts
  them): one key ``traces/open/<trace id>/<request>`` per trace and request
  (:data:`PENDING_PREFIX`), holding the spans and the wall time they arrived; only then do
  they join their open traces. A failed step leaves nothing of the request (503). A request
  that would evict an open trace is refused instead (:class:`Backpressure`, 429).
* A handed-out trace's keys are deleted in the checkpoint that records its event (the
  ``extra`` of :meth:`~service.runtime.process.Runtime.ingest`: dedup window, totals and the
  deletion are one transaction), or, for a trace dead-lettered by the mapping, after its dead
  letter is on disk. A crash before that checkpoint leaves the keys: the trace is built
  again and processed once; a crash after it leaves none.
* At start, :meth:`TraceIngest.restore` reads every pending key back into the assembler with
  its age (wall time now minus the time it arrived), so a trace whose settle time or timeout
  passed while the process was down is handed out (``settled`` or ``timeout``) at the first
  tick. Counted in ``goldwatch_traces_restored_total``.
* A clean stop (:meth:`TraceIngest.stop`: SIGTERM, SIGINT) hands out the traces that are due
  and keeps the other open traces in the state file, as a crash does, so the next start
  restores them and their spans that arrive after it (a root ending late, a rolling deploy)
  join them; one log line says how many were kept. Before the thirty-ninth session every
  open trace was handed out at the stop (``flushed``): a root that came after the restart
  was a ``late_span`` dead letter and the event lost it (a trace without it: lost whole).
  ``traces.flush_on_stop`` (a state file that does not outlive the process), or a state
  store in memory, still hands them out.

As on the Kafka path, a dead letter written just before a crash whose checkpoint did not
happen is written again after the restart (dead-letter files are at-least-once; the events
and the totals are exactly-once). The pending spans are raw (not yet scrubbed: the mapping
needs them) until their trace is assembled; the state file is private to its owner (0600).
Traces handed out but not yet processed (the engine busy, the dead-letter or state file
failing) wait in memory, never dropped; no further trace is handed out meanwhile
(:meth:`TraceIngest.tick`).
"""

from __future__ import annotations

import itertools
import json
import logging
import math
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from consumers.base import DeadLetter, Origin, RawMessage
from service.errors import describe_error
from service.runtime.process import EngineBusy, Runtime
from service.state import StateError
from service.telemetry import TraceMetrics
from service.traces.assembly import REPEAT_REASONS, Rejected, TraceAssembler
from service.traces.mapping import (
    TraceMappingError,
    content_index,
    stray_documents_message,
    trace_to_event,
)
from service.traces.otlp import (
    SURROGATE_ESCAPE,
    InvalidSpan,
    TraceDecodeError,
    UnreadableLetter,
    decode_json,
    encode_json,
    without_surrogates,
)
from service.traces.spans import Span, SpanEvent

log = logging.getLogger(__name__)
#: ``Origin.file`` of dead letters of trace ingest.
TRACES_SOURCE = "http-traces"
#: State-store namespace of the acknowledged spans of open traces (module docstring).
PENDING_PREFIX = "traces/open/"
#: State-store namespace of the span ids of handed-out traces (at most
#: ``traces.assembly.remember_span_ids`` ids), so a retry after a restart is a duplicate.
EMITTED_PREFIX = "traces/emitted/"
#: State-store namespace of how often the spans of a handed-out trace came again since
#: (``{span id: times}``), so a retry split across requests counts once, also across a
#: restart; one key per remembered trace sent again.
AGAIN_PREFIX = "traces/again/"


class Backpressure(RuntimeError):
    """``POST /v1/traces`` is refused for now (429 with ``Retry-After``): its new traces
    would take the open traces over ``traces.assembly.max_open_traces``. The message holds
    counts only.

    Attributes:
        retry_after_s: seconds the exporter should wait (≥ 1): the settle time, after which
            the oldest complete traces have left.
    """

    def __init__(self, message: str, retry_after_s: int) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TooManyTraces(ValueError):
    """One request holds more traces than ``traces.assembly.max_open_traces`` (413: it can
    never be accepted whole). The message holds counts only."""


def dead_letter(value: bytes, reason: str, detail: str) -> DeadLetter:
    """A dead letter of trace ingest (``Origin(file="http-traces")``)."""
    return DeadLetter(RawMessage(value, Origin(file=TRACES_SOURCE, line=1)), reason, detail)


class TraceIngest:
    """Assembly and hand-over of posted spans (module docstring).

    The spans acknowledged before the last stop or crash are restored first
    (:meth:`restore`).

    Args:
        runtime: the process runtime (pipeline, state store, dead-letter file, settings).
        metrics: the trace metrics (:func:`service.telemetry.build_trace_metrics`).
        clock: monotonic seconds (tests pass their own).
        wall: Unix time in seconds, stored with pending spans to age them across a restart
            (tests pass their own).

    Raises:
        service.state.StateError: the state file cannot be read or written.
    """

    def __init__(
        self,
        runtime: Runtime,
        metrics: TraceMetrics,
        clock: Callable[[], float] = time.monotonic,
        wall: Callable[[], float] = time.time,
    ) -> None:
        self.runtime = runtime
        self.metrics = metrics
        self.config = runtime.settings.traces
        self.assembler = TraceAssembler(self.config.assembly)
        self.clock = clock
        self.wall = wall
        self._lock = threading.Lock()
        self._values: list[bytes] = []  # events of handed-out traces, not yet processed
        #: per value: what its trace carried that the event lost (TraceEvent.dropped)
        self._dropped: list[tuple[tuple[str, str], ...]] = []
        self._letters: list[DeadLetter] = []  # dead letters not yet written
        #: whether the first trace with documents on a span that is not a retrieval span
        #: was logged (once per process; every such event counts in ``fields_dropped``)
        self._stray_logged = False
        self._keys: dict[str, list[str]] = {}  # open trace id -> its pending keys
        #: pending keys of handed-out (or evicted) traces: deleted by the next checkpoint
        #: that covers their events and dead letters
        self._deletes: dict[str, None] = {}
        #: ``traces/emitted/<trace id>`` -> ``{"t": wall time, "ids": span ids}`` of a
        #: handed-out trace (``None``: forgotten), written with the next checkpoint
        self._remembered: dict[str, dict[str, Any] | None] = {}
        #: remembered traces with an ``AGAIN_PREFIX`` key in the state store (or written
        #: with the next checkpoint), deleted when the trace is forgotten or handed out anew
        self._again_keys: set[str] = set()
        self._waiting: float | None = None  # monotonic time the waiting hand-over failed
        self._run = f"{time.time_ns():x}"  # with _seq: unique pending keys across restarts
        self._seq = itertools.count()
        #: corpus passage text (:func:`~service.traces.mapping.content_key`) -> corpus id,
        #: read at the first hand-over (:meth:`tick`): not on the way to an open port
        self._content_index: dict[str, str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.restore()

    @property
    def content_index(self) -> dict[str, str]:
        """corpus passage text -> corpus id (:func:`~service.traces.mapping.content_index`),
        read from the corpus file once, when first needed."""
        if self._content_index is None:
            self._content_index = content_index(self.runtime.settings.corpus)
        return self._content_index

    def receive(
        self,
        spans: Sequence[Span],
        invalid: Sequence[InvalidSpan] = (),
        unreadable: Sequence[UnreadableLetter] = (),
    ) -> list[Rejected]:
        """Keep decoded spans for assembly; dead-letter the request's ``invalid`` spans (the
        decoder's ``unreadable`` letters: :attr:`~service.traces.otlp.Decoded.letters`, at
        most the request's size) and what assembly does not keep whole, counting each
        unreadable span in ``goldwatch_trace_spans_received_total`` and
        ``goldwatch_trace_spans_rejected_total`` and each letter in the totals. In the
        order of ``/v1/events``: the request's dead letters are made durable and counted, and
        its kept spans written to the state store, in one
        :meth:`~service.runtime.process.Runtime.ingest` (module docstring); only then do they
        join their open traces. When a step fails, nothing of the request is kept (the route
        answers 503 or 429 and the exporter sends it again; letters already written for the
        failed try are not written again for the retry, as on ``/v1/events``).

        Returns:
            the rejections of these spans (the route reports them in ``partial_success``),
            spans sent again included (:data:`~service.traces.assembly.REPEAT_REASONS`);
            never ``evicted``: a request that would evict is refused.

        Raises:
            Backpressure: the request's new traces would take the open traces over
                ``max_open_traces`` (429, retry after :attr:`Backpressure.retry_after_s`).
            TooManyTraces: the request alone holds more traces than ``max_open_traces``.
            EngineBusy: the pipeline stayed busy, or the dead letters or the state could not
                be written (``IngestUnavailable``); StateError: the state file cannot be
                written (503 either way: nothing kept).
        """
        self.metrics.spans_received.inc(len(spans) + len(invalid))
        limit = self.config.assembly.max_open_traces
        with self._lock:  # a trace cannot be handed out between its spans' check and add
            plan = self.assembler.preview(spans)
            if plan.new_traces > limit:
                raise TooManyTraces(
                    f"the request holds {plan.new_traces} traces, more than "
                    f"traces.assembly.max_open_traces ({limit}): send smaller batches"
                )
            if len(self.assembler) + plan.new_traces > limit:
                self.metrics.throttled.inc()
                raise Backpressure(
                    f"{len(self.assembler)} traces are being assembled (at most {limit}); "
                    "retry later",
                    retry_after_s=max(1, math.ceil(self.config.assembly.settle_s)),
                )
            letters, duplicates = _sort_out(plan.rejected)
            # the spans each letter stands for, by reason (a previewed rejection: one span)
            weights = [u.spans for u in unreadable] + [{r.reason: 1} for r in letters]
            letters = [dead_letter(u.payload, u.reason, u.detail) for u in unreadable] + letters
            counted = self._persist(plan.kept, letters, duplicates, plan.again)
            rejected = self.assembler.add(spans, now=self.clock())
            self.metrics.open_traces.set(len(self.assembler))
        # the spans of the letters counted now (a retry's letters written by the failed try
        # count as duplicates, not again here; of a reason's letters, the first ones counted)
        for letter, weight in zip(letters, weights, strict=True):
            if counted.get(letter.reason, 0) > 0:
                counted[letter.reason] -= 1
                for reason, n in weight.items():
                    self.metrics.spans_rejected.labels(reason=reason).inc(n)
        self._count_repeats(plan.rejected)
        if [r.reason for r in rejected] != [r.reason for r in plan.rejected]:  # pragma: no cover
            log.error("trace ingest: assembly rejected other spans than it previewed")
        return plan.rejected

    def _persist(
        self,
        kept: Sequence[Span],
        letters: Sequence[DeadLetter],
        duplicates: int,
        again: Mapping[str, Mapping[str, int]] = {},  # noqa: B006 (read only)
    ) -> dict[str, int]:
        """Write ``kept`` (spans as the assembler will keep them: attributes cut) under one
        new key per trace, in one state transaction (caller holds the lock). With
        ``letters`` or ``duplicates``, that transaction is the engine's checkpoint
        (:meth:`Runtime.ingest`): the dead letters are on disk first (written once) and
        counted in the totals it writes (``dead_lettered`` by reason; a trace sent again
        after it was handed out: one of ``duplicates``), with ``again`` (how often the
        spans of handed-out traces will have come again: :attr:`Preview.again
        <service.traces.assembly.Preview.again>`) under :data:`AGAIN_PREFIX`.

        Returns:
            the letters counted as dead letters now, by reason (``{}`` without letters).

        Raises:
            StateError: the transaction failed (nothing written).
            EngineBusy: the pipeline stayed busy, or the dead letters or the state could not
                be written (``IngestUnavailable``); nothing acknowledged.
        """
        by_trace: dict[str, list[Span]] = {}
        for span in kept:
            by_trace.setdefault(span.trace_id, []).append(span)
        updates: dict[str, Any] = {}
        now = self.wall()
        added: list[tuple[str, str]] = []
        for trace_id, trace_spans in by_trace.items():
            key = f"{PENDING_PREFIX}{trace_id}/{self._run}.{next(self._seq)}"
            updates[key] = {"t": now, **_stored(trace_spans)}
            added.append((trace_id, key))
        for trace_id, times in again.items():
            updates[f"{AGAIN_PREFIX}{trace_id}"] = dict(times)
        counted: dict[str, int] = {}
        if letters or duplicates:
            outcome = self.runtime.ingest([], extra=updates, letters=letters,
                                          duplicates=duplicates)  # fmt: skip
            counted = dict(outcome.counts.dead_lettered)
        elif updates:
            self.runtime.state.checkpoint(updates)
        for trace_id, key in added:
            self._keys.setdefault(trace_id, []).append(key)
        for trace_id in again:  # written now: a deletion queued before must not undo it
            self._remembered.pop(f"{AGAIN_PREFIX}{trace_id}", None)
        self._again_keys.update(again)
        return counted

    def _count_repeats(self, rejected: Sequence[Rejected]) -> None:
        """Count spans sent again (:data:`~service.traces.assembly.REPEAT_REASONS`) in
        ``goldwatch_trace_spans_repeated_total``."""
        for item in rejected:
            if item.reason in REPEAT_REASONS:
                self.metrics.spans_repeated.labels(reason=item.reason).inc(len(item.spans))

    def _restore_emitted(self) -> None:
        """Remember again the span ids of the traces handed out before the last stop
        (:data:`EMITTED_PREFIX`), oldest first, so that a retry of one is a ``duplicate``;
        a value that cannot be read is skipped (only retries of that trace are affected)."""
        keys = self.runtime.state.keys(EMITTED_PREFIX)
        stored: dict[str, Any] = {}
        for start in range(0, len(keys), 500):
            stored.update(self.runtime.state.get_many(keys[start : start + 500]))
        rows = sorted(
            (float(value["t"]), key[len(EMITTED_PREFIX) :], [str(i) for i in value["ids"]])
            for key, value in stored.items()
            if isinstance(value, dict) and isinstance(value.get("t"), int | float)
            and isinstance(value.get("ids"), list)
        )  # fmt: skip
        self.assembler.restore_emitted((trace_id, ids) for _, trace_id, ids in rows)
        self._remembered.update(
            (f"{EMITTED_PREFIX}{trace_id}", None) for trace_id in self.assembler.forgotten()
        )
        keys = self.runtime.state.keys(AGAIN_PREFIX)
        stored = {}
        for start in range(0, len(keys), 500):
            stored.update(self.runtime.state.get_many(keys[start : start + 500]))
        remembered = self.assembler.emitted()
        for key, value in stored.items():
            trace_id = key[len(AGAIN_PREFIX) :]
            readable = isinstance(value, dict) and all(
                isinstance(n, int) and not isinstance(n, bool) for n in value.values()
            )
            if trace_id in remembered and readable:
                self.assembler.restore_again(trace_id, value)
                self._again_keys.add(trace_id)
            else:  # its trace forgotten (or never written: a crash before its hand-over)
                self._remembered[key] = None

    def _deletes_of(self, trace_ids: Iterable[str]) -> dict[str, None]:
        """``{pending key: None}`` of ``trace_ids``, forgotten as open (caller holds the lock)."""
        return {key: None for trace_id in trace_ids for key in self._keys.pop(trace_id, ())}

    def restore(self) -> int:
        """Read the pending spans of the state store back into the assembler, each key's
        spans aged by the time since they arrived (module docstring), oldest first. Spans the
        assembler does not keep (limits lowered since) are dead-lettered as on receipt, and
        their keys deleted; so is a stored value that cannot be read (``invalid_value``).

        Returns:
            the number of open traces restored.

        Raises:
            service.state.StateError: the state file cannot be read.
        """
        self._restore_emitted()
        keys = self.runtime.state.keys(PENDING_PREFIX)
        if not keys:
            return 0
        entries: list[tuple[float, tuple[str, int], str, list[Span]]] = []
        letters: list[DeadLetter] = []
        drop: dict[str, None] = {}
        stored: dict[str, Any] = {}
        for start in range(0, len(keys), 500):  # under any SQLite build's bound (>= 999)
            stored.update(self.runtime.state.get_many(keys[start : start + 500]))
        for key, value in stored.items():
            try:
                arrived = float(value["t"])
                spans = _restored(value)
            except (TraceDecodeError, KeyError, TypeError, ValueError) as exc:
                raw = json.dumps(value, ensure_ascii=True).encode("ascii")
                detail = f"pending spans in the state file cannot be read ({type(exc).__name__})"
                letters.append(dead_letter(raw, "invalid_value", detail))
                drop[key] = None
                continue
            entries.append((arrived, _arrival(key), key, spans))
        entries.sort(key=lambda entry: entry[:2])  # arrival order, also within one second
        wall_now, now = self.wall(), self.clock()
        rejected: list[Rejected] = []
        with self._lock:
            for arrived, _, key, spans in entries:
                rejected += self.assembler.add(spans, now=now - max(0.0, wall_now - arrived))
                trace_id = key[len(PENDING_PREFIX) :].split("/", 1)[0]
                if any(self.assembler.holds(s.trace_id, s.span_id) for s in spans):
                    self._keys.setdefault(trace_id, []).append(key)
                else:
                    drop[key] = None
            drop.update(self._deletes_of(r.trace_id for r in rejected if r.reason == "evicted"))
            restored = len(self.assembler)
            self.metrics.open_traces.set(restored)
        self.metrics.restored.inc(restored)
        letters += _sort_out(rejected)[0]
        if letters and not self.runtime.loaded.is_set():  # the first hand-over writes them
            with self._lock:
                self._letters.extend(letters)
                self._deletes.update(drop)
            for item in rejected:
                if item.reason not in REPEAT_REASONS:
                    self.metrics.spans_rejected.labels(reason=item.reason).inc(len(item.spans) or 1)
            self._count_repeats(rejected)
        elif letters:
            try:  # written, then counted in the checkpoint that deletes their keys
                self.runtime.ingest([], extra=drop, letters=letters)
            except (EngineBusy, OSError) as exc:  # the keys stay: read again at the next start
                log.warning("trace ingest: cannot dead-letter at restore: %s", exc)
            else:
                for item in rejected:
                    if item.reason not in REPEAT_REASONS:
                        self.metrics.spans_rejected.labels(reason=item.reason).inc(
                            len(item.spans) or 1
                        )
                self._count_repeats(rejected)
        elif drop:
            self.runtime.state.checkpoint(drop)
        # at the default level (WARNING) when there were some: acknowledged spans that only
        # the state file held (trial t47 LOW 2, as the line at stop)
        log.log(logging.WARNING if restored else logging.INFO,
                "trace ingest: restored %d open traces (%d spans) acknowledged before the "
                "last stop", restored, self.assembler.open_spans)  # fmt: skip
        return restored

    def tick(self, flush: bool = False, last: bool = False) -> int:
        """Hand out due traces (all with ``flush``), map and process them. Each trace is
        mapped once; its event waits (in memory) until the pipeline takes it, its dead
        letter until the file takes it; its pending spans leave the state store with the
        checkpoint that records its event (module docstring).

        While a hand-over waits (the engine busy, the dead-letter or state file failing), no
        further trace is handed out: the waiting events and letters are at most one
        hand-over, the traces behind them stay open (bounded by ``max_open_traces``; a full
        assembler makes ``POST /v1/traces`` answer 429). A hand-over that failed for the
        dead-letter file is tried again only once the file can take it
        (:meth:`~consumers.jsonl_dead_letters.JsonlDeadLetters.problem`, the check behind
        ``/readyz``); each letter is written once (a letter written for a hand-over whose
        checkpoint then failed is not written again: :meth:`Runtime.ingest`), and the log
        has one line when a hand-over starts waiting and one when it went through. The stop's
        tick (``last``, or ``flush``) tries a waiting hand-over once whatever the file says.

        Returns:
            events handed to the pipeline now (processed or duplicates).
        """
        waited = 0
        if self._values or self._letters:
            if not (flush or last) and self.runtime.http_dead_letters.problem() is not None:
                return 0  # the file still cannot take them: no write, no log line
            waited = self._hand_over()
            if self._values or self._letters:
                return 0
        with self._lock:
            now = self.clock()
            done = self.assembler.flush() if flush else self.assembler.due(now)
            self.metrics.open_traces.set(len(self.assembler))
            self._deletes.update(self._deletes_of(trace.trace_id for trace in done))
            # the span ids of handed-out traces, so a retry after a restart is a duplicate
            bound, wall = self.config.assembly.remember_span_ids, self.wall()
            self._remembered.update(
                (f"{EMITTED_PREFIX}{trace.trace_id}",
                 {"t": wall, "ids": sorted(span.span_id for span in trace.spans)})
                for trace in done if len(trace.spans) <= bound
            )  # fmt: skip
            forgotten = self.assembler.forgotten()
            self._remembered.update((f"{EMITTED_PREFIX}{trace_id}", None) for trace_id in forgotten)
            # counts of retries of a trace forgotten, or handed out anew (they start over)
            for trace_id in itertools.chain(forgotten, (trace.trace_id for trace in done)):
                if trace_id in self._again_keys:
                    self._again_keys.discard(trace_id)
                    self._remembered[f"{AGAIN_PREFIX}{trace_id}"] = None
        for trace in done:
            self.metrics.assembled.labels(why=trace.why).inc()
            if not trace.has_root:
                self.metrics.without_root.inc()
            try:
                built = trace_to_event(trace.spans, self.config.mapping, self.content_index)
            except TraceMappingError as exc:
                self.metrics.unmapped.labels(reason=exc.reason).inc()
                letter = dead_letter(encode_json(trace.spans), exc.reason, exc.detail)
                self._letters.append(letter)
                continue
            self._values.append(built.event.model_dump_json().encode("utf-8", "surrogatepass"))
            self._dropped.append(built.dropped)
            if not self._stray_logged and (stray := stray_documents_message(built)):
                self._stray_logged = True
                log.warning("trace ingest: %s", stray)
        return waited + self._hand_over()

    def _hand_over(self) -> int:
        """Give the waiting events and dead letters to the pipeline in one
        :meth:`Runtime.ingest` (the letters written once and counted with the events), with
        the deletion of their traces' pending keys and the handed-out traces' span ids in its
        checkpoint.

        Returns:
            events handed over (0 when nothing waited or the hand-over failed: it waits).
        """
        with self._lock:
            deletes = {**self._deletes, **self._remembered}
        try:
            if self._values or self._letters:  # the letters counted with the events
                self.runtime.ingest(self._values, extra=deletes, letters=self._letters,
                                    dropped=self._dropped)  # fmt: skip
            elif deletes:
                self.runtime.state.checkpoint(deletes)
        except (EngineBusy, OSError, StateError) as exc:  # kept: retried at a later tick
            if self._waiting is None:  # the messages name files and reasons, never content
                log.warning("trace ingest: %d events and %d dead letters wait for the "
                            "pipeline (%s); no trace is handed out until they are taken, "
                            "logged again when they are", len(self._values),
                            len(self._letters), exc)  # fmt: skip
                self._waiting = time.monotonic()
            return 0
        if self._waiting is not None:
            log.info("trace ingest: the waiting hand-over went through after %.0f s",
                     time.monotonic() - self._waiting)  # fmt: skip
            self._waiting = None
        with self._lock:
            for key in deletes:
                self._deletes.pop(key, None)
                self._remembered.pop(key, None)
        taken, self._values, self._letters, self._dropped = len(self._values), [], [], []
        return taken

    def start(self) -> None:
        """Start the ticker thread (every quarter of ``settle_s``, at most every second)."""
        interval = min(self.config.assembly.settle_s / 4, 1.0)

        def run() -> None:
            while not self._stop.wait(interval):
                try:
                    self.tick()
                except Exception as exc:  # keep ticking; the log says why (type and stage:
                    # the text can hold event text)
                    log.error("trace ingest tick failed: %s", describe_error(exc))

        self._thread = threading.Thread(target=run, name="goldwatch-traces", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop the ticker and hand the traces due now to the pipeline (one last
        :meth:`tick`); keep the other open traces in the state file, where :meth:`restore`
        finds them at the next start (module docstring), and log how many. With
        ``traces.flush_on_stop``, or a state store in memory (nothing outlives the process),
        hand every open trace out instead (``flushed``). Call before the runtime stops.
        Never raises: a failed last hand-over is logged, its traces' spans stay in the state
        file and are built again at the next start."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        flush = self.config.flush_on_stop or self.runtime.state.label == ":memory:"
        with self._lock:
            open_before = len(self.assembler)
        if not self.runtime.loaded.is_set():  # stopped while starting: nothing can be built
            flush = False
        else:
            try:
                self.tick(flush=flush, last=True)
            except Exception as exc:
                log.error("trace ingest: the last hand-over at stop failed: %s",
                          describe_error(exc))  # fmt: skip
        with self._lock:
            kept, spans = len(self.assembler), self.assembler.open_spans
        if flush and not kept:
            log.info("trace ingest: handed out all %d open traces at stop (flushed: "
                     "traces.flush_on_stop, or a state in memory)", open_before)  # fmt: skip
        else:  # shown at the default level when some were kept: they live only in the
            # state file until the next start (moving or deleting it loses them; t47 LOW 2)
            log.log(logging.WARNING if kept else logging.INFO,
                    "trace ingest: kept %d open traces (%d spans) in the state file at stop; "
                    "the next start restores them (their settle time and timeout run from "
                    "their spans' arrival, also while stopped)", kept, spans)  # fmt: skip
        if self._values or self._letters:
            log.warning("trace ingest: %d events and %d dead letters of handed-out traces "
                        "were not taken at stop; their spans stay in the state file and are "
                        "built again at the next start", len(self._values),
                        len(self._letters))  # fmt: skip


def _sort_out(rejected: Sequence[Rejected]) -> tuple[list[DeadLetter], int]:
    """Sort out assembly's rejections: the dead letters (spans as OTLP/JSON, one per record
    of :data:`~service.traces.assembly.REJECT_REASONS`) and the number of times traces were
    sent again after they were handed out (``duplicate`` records that
    :attr:`~service.traces.assembly.Rejected.counts_duplicate`: one per retry of a trace,
    however many requests its spans came in); spans sent again into an open trace
    (``repeated``) are neither (only counted in the trace metrics)."""
    letters: list[DeadLetter] = []
    again = 0
    for item in rejected:
        if item.reason in REPEAT_REASONS:
            again += item.counts_duplicate
            continue
        letters.append(dead_letter(encode_json(item.spans), item.reason, item.detail))
    return letters, again


def _stored(spans: Sequence[Span]) -> dict[str, str]:
    """``spans`` as a state-store value that :func:`_restored` reads back to equal spans.

    Usually ``{"spans": JSON text}``: one array per span (``[trace id, span id, parent id,
    name, start, end, attributes, [[event name, time, attributes], ...], resource, status,
    parent is remote]``; a value without the last item, written before it existed: unknown),
    attribute values as plain JSON (str, bool, int, float, list, map), ASCII-escaped (SQLite
    takes only valid UTF-8; decoded spans hold no lone surrogate since session 37, and one
    stored by an earlier version is restored as U+FFFD, as decoding now gives it). Values
    plain JSON cannot hold (bytes, NaN, infinities) fall back to ``{"otlp": OTLP/JSON text}``
    (:func:`~service.traces.otlp.encode_json`, typed values; about ten times slower).
    """
    rows = [
        [s.trace_id, s.span_id, s.parent_span_id, s.name, s.start_unix_nano, s.end_unix_nano,
         s.attributes, [[e.name, e.time_unix_nano, e.attributes] for e in s.events],
         s.resource, s.status_code, s.parent_is_remote]
        for s in spans
    ]  # fmt: skip
    try:
        return {"spans": json.dumps(rows, allow_nan=False, separators=(",", ":"))}
    except (TypeError, ValueError):  # bytes or a non-finite float somewhere
        pass
    payload = encode_json(spans)
    try:
        return {"otlp": payload.decode("utf-8")}
    except UnicodeDecodeError:
        return {"otlp": json.dumps(json.loads(payload.decode("utf-8", "surrogatepass")))}


def _restored(value: Mapping[str, Any]) -> list[Span]:
    """The spans of a value :func:`_stored` made.

    Raises:
        KeyError, TypeError, ValueError, TraceDecodeError: the value is not one it made.
    """
    if "otlp" in value:
        return decode_json(str(value["otlp"]).encode("utf-8", "surrogatepass"))
    text = str(value["spans"])
    rows = json.loads(text)
    if SURROGATE_ESCAPE.search(text) is not None:  # stored before session 37: now U+FFFD
        rows = without_surrogates(rows)
    spans = []
    for row in rows:
        (trace_id, span_id, parent, name, start, end, attributes, events, resource,
         status) = row[:10]  # fmt: skip
        remote = row[10] if len(row) > 10 else None  # written before the field: unknown
        if not (isinstance(attributes, dict) and isinstance(resource, dict)):
            raise TypeError("attributes and resource must be maps")
        if len(row) > 11 or remote not in (None, True, False):
            raise ValueError("not a stored span")
        spans.append(Span(
            str(trace_id), str(span_id), None if parent is None else str(parent), str(name),
            int(start), int(end), attributes,
            tuple(SpanEvent(str(n), int(t), dict(a)) for n, t, a in events), resource,
            int(status), remote,
        ))  # fmt: skip
    return spans


def _arrival(key: str) -> tuple[str, int]:
    """(process run, request number) of a pending key ``traces/open/<trace>/<run>.<n>``:
    with the arrival time, the order in which requests were received."""
    run, _, number = key.rpartition("/")[2].partition(".")
    return run, int(number) if number.isdigit() else 0
