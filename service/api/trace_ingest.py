"""HTTP trace ingest: OTLP spans -> assembly -> events through the live pipeline (issue 20).

:class:`TraceIngest` owns one :class:`~service.traces.assembly.TraceAssembler`. Each
``POST /v1/traces`` adds its spans (:meth:`TraceIngest.receive`); a ticker thread hands out
the traces that are due, maps each to one event (:func:`~service.traces.mapping.trace_to_event`)
and runs them through :meth:`service.runtime.process.Runtime.ingest`, the path of
``POST /v1/events``: dedup on ``event_id`` (the trace id), PII scrubbing, analytics, shadow,
harvest, metrics, checkpoint. Everything not kept goes to the HTTP dead-letter file with its
reason (the spans as OTLP/JSON, replayable): undecodable payloads, rejected spans
(:data:`~service.traces.assembly.REJECT_REASONS`), traces without a question.

Durability: an open trace lives in memory only. A span is acknowledged (200) when it is
buffered, so a crash loses the traces still open (at most ``traces.assembly.timeout_s`` of
them); the Kafka path keeps them replayable instead (``service/traces/assembly.py``, crash
semantics). Traces handed out but not yet processed (the engine busy) are retried at the next
tick, never dropped.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence

from consumers.base import DeadLetter, Origin, RawMessage
from service.errors import describe_error
from service.runtime.process import EngineBusy, Runtime
from service.telemetry import TraceMetrics
from service.traces.assembly import Rejected, TraceAssembler
from service.traces.mapping import TraceMappingError, content_index, trace_to_event
from service.traces.otlp import encode_json
from service.traces.spans import Span

log = logging.getLogger(__name__)
#: ``Origin.file`` of dead letters of trace ingest.
TRACES_SOURCE = "http-traces"


def dead_letter(value: bytes, reason: str, detail: str) -> DeadLetter:
    """A dead letter of trace ingest (``Origin(file="http-traces")``)."""
    return DeadLetter(RawMessage(value, Origin(file=TRACES_SOURCE, line=1)), reason, detail)


class TraceIngest:
    """Assembly and hand-over of posted spans (module docstring).

    Args:
        runtime: the process runtime (pipeline, dead-letter file, settings).
        metrics: the trace metrics (:func:`service.telemetry.build_trace_metrics`).
        clock: monotonic seconds (tests pass their own).
    """

    def __init__(
        self, runtime: Runtime, metrics: TraceMetrics, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.runtime = runtime
        self.metrics = metrics
        self.config = runtime.settings.traces
        self.assembler = TraceAssembler(self.config.assembly)
        self.clock = clock
        self._lock = threading.Lock()
        self._values: list[bytes] = []  # events of handed-out traces, not yet processed
        self._letters: list[DeadLetter] = []  # dead letters not yet written
        #: corpus passage text (:func:`~service.traces.mapping.content_key`) -> corpus id
        self.content_index = content_index(runtime.settings.corpus)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def receive(self, spans: Sequence[Span]) -> list[Rejected]:
        """Buffer decoded spans; dead-letter and count what assembly did not keep whole.

        Returns:
            the rejections of these spans (the route reports the dropped ones as
            ``partial_success.rejected_spans``).

        Raises:
            OSError: the dead-letter file cannot be written (the route answers 503: retry).
        """
        self.metrics.spans_received.inc(len(spans))
        with self._lock:
            rejected = self.assembler.add(spans, now=self.clock())
            self.metrics.open_traces.set(len(self.assembler))
        self.reject(rejected)
        return rejected

    def reject(self, rejected: Sequence[Rejected]) -> None:
        """Dead-letter and count assembly's rejections (spans as OTLP/JSON)."""
        if not rejected:
            return
        for item in rejected:
            self.metrics.spans_rejected.labels(reason=item.reason).inc(len(item.spans) or 1)
        self.runtime.http_dead_letters.write(
            [dead_letter(encode_json(r.spans), r.reason, r.detail) for r in rejected]
        )

    def tick(self, flush: bool = False) -> int:
        """Hand out due traces (all with ``flush``), map and process them. Each trace is
        mapped once; its event waits (in memory) until the pipeline takes it, its dead
        letter until the file takes it.

        Returns:
            events handed to the pipeline now (processed or duplicates).
        """
        with self._lock:
            now = self.clock()
            done = self.assembler.flush() if flush else self.assembler.due(now)
            self.metrics.open_traces.set(len(self.assembler))
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
        try:
            if self._letters:
                self.runtime.http_dead_letters.write(self._letters)
                self._letters = []
            if not self._values:
                return 0
            self.runtime.ingest(self._values)
        except (EngineBusy, OSError) as exc:  # kept: retried at the next tick
            log.warning("trace ingest: %d events wait for the pipeline: %s", len(self._values), exc)
            return 0
        taken, self._values = len(self._values), []
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
        """Stop the ticker and hand every open trace to the pipeline (``flushed``)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.tick(flush=True)
        except Exception as exc:
            log.error("trace ingest: final flush failed: %s", describe_error(exc))
