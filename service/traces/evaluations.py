"""goldwatch's verdicts on traced questions as OpenTelemetry ``gen_ai.evaluation.result``
events, so they show next to the trace in the user's tracing tool (issue 20, item 6).

Optional and off by default (``traces.evaluations.enabled``). The OpenTelemetry SDK and its
OTLP/HTTP log exporter (the ``otel`` extra) are imported only when it is on
(:func:`otlp_log_emitter`); this module's other parts import no OpenTelemetry code.

Which verdicts, each only for an event that carries a ``trace_id`` (assembled from a trace,
or sent with one) and only when goldwatch flags something:

* ``goldwatch.refusal``: the answer was a refusal (``annotations["refused"] is True``: the
  application's flag, a trace signal, or goldwatch's refusal check). Label ``refused``.
* ``goldwatch.out_of_scope``: the question is outside the corpus's scope
  (``annotations["out_of_scope"] is True``) and the verdict is calibrated (the detector
  reaches the quality floor, or the gold set decided; ``scope_calibrated``). Label
  ``out_of_scope``, score the probability in scope (``scope_score``, [0, 1]) when known.
* ``goldwatch.shadow_agreement``: a shadow candidate's ranking disagrees with production's
  (RBO below ``harvest.max_rbo``, the harvest's own rule). Label ``disagree``, score the RBO
  in [0, 1], the candidate named in the explanation.

Each becomes one log record with ``event_name = "gen_ai.evaluation.result"`` and the
attributes ``gen_ai.evaluation.name``, ``gen_ai.evaluation.score.label``,
``gen_ai.evaluation.score.value`` (when there is a score) and
``gen_ai.evaluation.explanation`` (OpenTelemetry GenAI semantic conventions,
``docs/gen-ai/gen-ai-evaluation-events.md``), in the trace's context: its ``trace_id``. The
span id is left unset: goldwatch keeps the trace, not the span that produced the answer, so
tools that hang evaluations on a span show it on the trace only.

Delivery is at most once per processing of an event: records are batched and exported on the
SDK's thread; one the collector refuses is dropped by the SDK (counted in its own logs). After
a kill -9, the events processed after the last checkpoint are processed again and their
verdicts emitted again (the checkpoint holds no record of what was exported): a backend may
see such a verdict twice, with the same trace id and name.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:  # the settings import this module: keep its imports light
    from service.events import QueryLogEvent
    from service.pipeline import Batch

#: The event name of the OpenTelemetry GenAI evaluation result.
EVENT_NAME = "gen_ai.evaluation.result"
REFUSAL = "goldwatch.refusal"
OUT_OF_SCOPE = "goldwatch.out_of_scope"
SHADOW_AGREEMENT = "goldwatch.shadow_agreement"
_BY_GOLD = "the gold set marks this question unanswerable"
_BY_DETECTOR = "the out-of-scope detector's probability in scope is below its threshold"


class EvaluationsConfig(BaseModel):
    """Emitting goldwatch's verdicts as ``gen_ai.evaluation.result`` events (module docstring).

    Attributes:
        enabled: emit them (needs the ``otel`` extra: ``opentelemetry-sdk`` and
            ``opentelemetry-exporter-otlp-proto-http``; and analytics on, which decide the
            verdicts).
        endpoint: the OTLP/HTTP logs URL, e.g. ``http://otel-collector:4318/v1/logs``;
            ``None``: the exporter's own default (``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT``, else
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` + ``/v1/logs``, else ``http://localhost:4318``).
            Headers (a token) come from ``OTEL_EXPORTER_OTLP_HEADERS``, kept out of the file.
        timeout_s: bound of one export request, seconds (> 0, <= 60).

    Raises:
        pydantic.ValidationError: an unknown field, a blank endpoint, a timeout out of range.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = False
    endpoint: str | None = Field(default=None, min_length=1, max_length=2048)
    timeout_s: float = Field(default=10.0, gt=0, le=60)


@dataclass(frozen=True, slots=True)
class Evaluation:
    """One verdict to emit.

    Attributes:
        trace_id: 32 lowercase hex characters.
        name: :data:`REFUSAL`, :data:`OUT_OF_SCOPE` or :data:`SHADOW_AGREEMENT`.
        label: ``refused``, ``out_of_scope`` or ``disagree``.
        score: in [0, 1] (probability in scope, RBO), ``None`` when there is none.
        explanation: what the verdict rests on; names and numbers only, never user text.
        timestamp_ns: when the question was asked, Unix nanoseconds.
    """

    trace_id: str
    name: str
    label: str
    score: float | None
    explanation: str
    timestamp_ns: int

    def attributes(self) -> dict[str, str | float]:
        """The event's attributes, by the GenAI semantic conventions' names."""
        out: dict[str, str | float] = {
            "gen_ai.evaluation.name": self.name,
            "gen_ai.evaluation.score.label": self.label,
            "gen_ai.evaluation.explanation": self.explanation,
        }
        if self.score is not None:
            out["gen_ai.evaluation.score.value"] = self.score
        return out


def _nanos(event: QueryLogEvent) -> int:
    stamp = event.timestamp
    return int(stamp.timestamp()) * 10**9 + stamp.microsecond * 1000


def event_verdicts(event: QueryLogEvent, notes: dict[str, Any]) -> list[Evaluation]:
    """The refusal and out-of-scope verdicts of one event (module docstring) from its
    annotations; ``[]`` for an event without a ``trace_id`` or with nothing flagged."""
    if event.trace_id is None:
        return []
    out = []
    if notes.get("refused") is True:
        out.append(Evaluation(event.trace_id, REFUSAL, "refused", None,
                              "the answer is a refusal", _nanos(event)))  # fmt: skip
    if notes.get("out_of_scope") is True and notes.get("scope_calibrated") is not False:
        score = notes.get("scope_score")
        known = notes.get("scope_known")
        why = _BY_GOLD if known is not None else _BY_DETECTOR
        value = float(score) if isinstance(score, int | float) and known is None else None
        out.append(Evaluation(event.trace_id, OUT_OF_SCOPE, "out_of_scope", value, why,
                              _nanos(event)))  # fmt: skip
    return out


def shadow_verdict(result: Any, max_rbo: float) -> Evaluation | None:
    """The disagreement verdict of one :class:`~service.shadow.runner.ShadowResult`:
    ``None`` unless it has a ``trace_id``, no error, and an RBO below ``max_rbo``."""
    trace_id = getattr(result, "trace_id", None)
    agreement = result.agreement
    if trace_id is None or result.error is not None or agreement is None:
        return None
    rbo = agreement.rbo
    if rbo is None or rbo >= max_rbo:
        return None
    stamp = result.timestamp
    why = f"candidate {result.candidate}: RBO with production's ranking below {max_rbo:g}"
    nanos = int(stamp.timestamp()) * 10**9 + stamp.microsecond * 1000
    return Evaluation(trace_id, SHADOW_AGREEMENT, "disagree", float(rbo), why, nanos)


class EvaluationEmitter:
    """Pipeline stage and shadow listener that hands each verdict to ``emit``.

    Runs after the analytics stages (it reads their annotations) and changes no event.

    Args:
        emit: called once per verdict (e.g. :func:`otlp_log_emitter`'s); an exception it
            raises is counted in :attr:`failed` and never stops the pipeline.
        max_rbo: shadow results with an RBO below it are disagreements (``harvest.max_rbo``).
    """

    name = "evaluations"
    keeps_counts = True  # reads the annotations only (see service.pipeline.Stage)

    def __init__(self, emit: Callable[[Evaluation], None], max_rbo: float) -> None:
        self.emit = emit
        self.max_rbo = max_rbo
        self.emitted = 0
        self.failed = 0

    def _send(self, verdicts: Sequence[Evaluation]) -> None:
        for verdict in verdicts:
            try:
                self.emit(verdict)
            except Exception:  # an exporter's failure must not stop the live path
                self.failed += 1
            else:
                self.emitted += 1

    def process(self, batch: Batch) -> None:
        """Emit the refusal and out-of-scope verdicts of the batch's traced events."""
        for event, notes in zip(batch.events, batch.annotations, strict=True):
            if event.trace_id is not None:
                self._send(event_verdicts(event, notes))

    def observe_shadow(self, result: Any) -> None:
        """Emit a finished shadow result's disagreement verdict, if any."""
        verdict = shadow_verdict(result, self.max_rbo)
        if verdict is not None:
            self._send([verdict])

    def state_snapshot(self) -> Any:
        """Nothing to persist."""
        return None

    def restore(self, state: Any) -> None:
        """Nothing to restore."""


def log_record_emitter(logger: Any) -> Callable[[Evaluation], None]:
    """``emit(verdict)`` writing one ``gen_ai.evaluation.result`` log record to ``logger`` (an
    OpenTelemetry ``Logger``) in the verdict's trace (no span: module docstring)."""
    from opentelemetry._logs import LogRecord
    from opentelemetry.trace import TraceFlags

    def emit(verdict: Evaluation) -> None:
        # LogRecord's overloads pair event_name with context= only, yet its __init__ takes
        # trace_id/span_id/trace_flags with it too (opentelemetry-api 1.45): a stubs gap
        logger.emit(LogRecord(  # type: ignore[call-overload]
            timestamp=verdict.timestamp_ns, trace_id=int(verdict.trace_id, 16), span_id=0,
            trace_flags=TraceFlags(TraceFlags.SAMPLED), event_name=EVENT_NAME,
            attributes=verdict.attributes(),
        ))  # fmt: skip

    return emit


def otlp_log_emitter(
    config: EvaluationsConfig,
) -> tuple[Callable[[Evaluation], None], Callable[[], None]]:
    """``(emit, close)`` over the OpenTelemetry SDK: a logger provider (resource
    ``service.name: goldwatch``) with a batch processor and the OTLP/HTTP log exporter to
    ``config.endpoint``. ``close`` flushes what is queued and shuts the provider down.

    Raises:
        ValueError: the ``otel`` extra is not installed (naming the setting and the extra).
    """
    try:
        from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
        from opentelemetry.sdk._logs import LoggerProvider
        from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        raise ValueError(
            "traces.evaluations.enabled needs the OpenTelemetry SDK and OTLP/HTTP exporter: "
            "pip install 'goldwatch[otel]'"
        ) from None
    exporter = OTLPLogExporter(endpoint=config.endpoint, timeout=config.timeout_s)
    provider = LoggerProvider(resource=Resource.create({"service.name": "goldwatch"}))
    provider.add_log_record_processor(BatchLogRecordProcessor(exporter))
    emit = log_record_emitter(provider.get_logger("goldwatch"))

    def close() -> None:
        provider.force_flush()
        provider.shutdown()

    return emit, close
