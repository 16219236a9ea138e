"""``traces.mapping.feedback_attribute``: a traced app's user rating becomes the event's
``feedback.rating`` (trial t42 L1: the traces path had no way to bring feedback in, so the
``negative_feedback`` harvest reason never appeared). The spans come from the OpenTelemetry
SDK (decoded from the OTLP protobuf the exporter would send)."""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Tracer

from service.events import Feedback
from service.harvest.config import HarvestConfig
from service.harvest.signals import event_reasons
from service.traces.mapping import TraceMapping, trace_to_event
from service.traces.otlp import decode_protobuf
from service.traces.spans import Span
from tests.service.api.test_traces_api import _at, _provider

KEY = "app.feedback.rating"


def _trace(rating: object | None, on_child: bool = False) -> list[Span]:
    """A 2-span RAG trace from the SDK; ``rating`` (unless ``None``) set on the root, or on
    its LLM child."""
    memory = InMemorySpanExporter()
    provider, tracer = _provider(memory)
    _spans(tracer, rating, on_child)
    provider.shutdown()
    return decode_protobuf(encode_spans(memory.get_finished_spans()).SerializeToString())


def _spans(tracer: Tracer, rating: object | None, on_child: bool) -> None:
    with tracer.start_as_current_span("query", start_time=_at(0), end_on_exit=False) as root:
        root.set_attributes({"openinference.span.kind": "CHAIN",
                             "input.value": "What is the refund window?"})  # fmt: skip
        with tracer.start_as_current_span("llm", start_time=_at(10), end_on_exit=False) as llm:
            llm.set_attribute("openinference.span.kind", "LLM")
            if rating is not None and on_child:
                llm.set_attribute(KEY, rating)  # type: ignore[arg-type]
            llm.end(end_time=_at(50))
        root.set_attribute("output.value", "30 days.")
        if rating is not None and not on_child:
            root.set_attribute(KEY, rating)  # type: ignore[arg-type]
        root.end(end_time=_at(60))


def test_a_rating_on_the_root_or_a_child_becomes_feedback() -> None:
    mapping = TraceMapping(feedback_attribute=KEY)
    assert trace_to_event(_trace(-1), mapping).event.feedback == Feedback(rating=-1.0)
    assert trace_to_event(_trace(4.5, on_child=True), mapping).event.feedback == Feedback(
        rating=4.5
    )
    built = trace_to_event(_trace(None), mapping)  # no rating: no feedback, nothing dropped
    assert (built.event.feedback, built.dropped) == (None, ())


def test_without_the_setting_a_rating_is_not_read() -> None:
    assert trace_to_event(_trace(-1), TraceMapping()).event.feedback is None


def test_a_rating_that_is_not_a_finite_number_is_dropped_and_named() -> None:
    """As the JSON decoder drops ``feedback.rating``: a string (even ``"-1"``) or a boolean
    is ``wrong_type``, NaN ``invalid_value``; the event is kept without feedback."""
    mapping = TraceMapping(feedback_attribute=KEY)
    for value, why in (("-1", "wrong_type"), (True, "wrong_type"),
                       (float("nan"), "invalid_value")):  # fmt: skip
        built = trace_to_event(_trace(value), mapping)
        assert built.event.feedback is None
        assert built.dropped == (("feedback.rating", why),)


def test_a_negative_rating_from_a_trace_is_a_negative_feedback_reason() -> None:
    """The event the trace gives carries the reason the trial never saw on the traces path
    (``feedback.rating`` -1 < ``harvest.negative_rating`` 0); +1 gives none."""
    mapping = TraceMapping(feedback_attribute=KEY)
    config = HarvestConfig()
    down = trace_to_event(_trace(-1), mapping).event
    up = trace_to_event(_trace(1), mapping).event
    assert event_reasons(down, {}, config) == ("negative_feedback",)
    assert event_reasons(up, {}, config) == ()
