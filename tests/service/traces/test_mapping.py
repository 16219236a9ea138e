"""A trace to one event, per convention, against events written out by hand."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

import pytest

from service.events import Answer, QueryLogEvent, Retrieval, RetrievedPassage, User
from service.traces.mapping import TraceMapping, TraceMappingError, trace_to_event
from service.traces.spans import Span, SpanEvent

TRACE = "0af7651916cd43dd8448eb211c80319c"
T0 = 1_795_946_400_000_000_000  # 2026-11-29T10:00:00Z in nanoseconds
AT_T0 = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)
MS = 1_000_000


def span(
    name: str,
    sid: str,
    parent: str | None,
    start_ms: float,
    end_ms: float,
    events: tuple[SpanEvent, ...] = (),
    **attrs: Any,
) -> Span:
    return Span(
        trace_id=TRACE,
        span_id=sid.rjust(16, "0"),
        parent_span_id=parent.rjust(16, "0") if parent else None,
        name=name,
        start_unix_nano=T0 + int(start_ms * MS),
        end_unix_nano=T0 + int(end_ms * MS),
        attributes={k.replace("__", "."): v for k, v in attrs.items()},
        events=events,
    )


OPENINFERENCE = [  # LlamaIndex-shaped: ids and scores on the retriever span
    span(
        "query",
        "1",
        None,
        0,
        900,
        **{
            "openinference.span.kind": "CHAIN",
            "input.value": "What is the refund window?",
            "output.value": "30 days.",
            "user.id": "u-7",
            "metadata": json.dumps({"role": "parent", "tenant": "acme"}),
        },
    ),
    span(
        "retrieve",
        "2",
        "1",
        10,
        22.5,
        **{
            "openinference.span.kind": "RETRIEVER",
            "input.value": "refund window days",
            "retrieval.documents.10.document.id": "p-last",  # index 10 ranks after 1, as a number
            "retrieval.documents.0.document.id": "p-12",
            "retrieval.documents.0.document.score": 0.82,
            "retrieval.documents.0.document.content": "Refunds within 30 days.",
            "retrieval.documents.1.document.id": 7,
            "retrieval.documents.1.document.score": 0.5,
        },
    ),
    span(
        "llm",
        "3",
        "1",
        30,
        880,
        **{
            "openinference.span.kind": "LLM",
            "llm.input_messages.0.message.role": "system",
            "llm.input_messages.0.message.content": "Answer from context.",
            "llm.input_messages.1.message.role": "user",
            "llm.input_messages.1.message.content": "context... What is the refund window?",
            "llm.output_messages.0.message.role": "assistant",
            "llm.output_messages.0.message.content": "30 days.",
        },
    ),
]


def test_openinference_trace() -> None:
    built = trace_to_event(OPENINFERENCE, TraceMapping(role_metadata_key="role"))
    assert built.trace_id == TRACE
    assert built.rewritten_query == "refund window days"
    assert built.event == QueryLogEvent(
        event_id=TRACE,
        trace_id=TRACE,
        timestamp=AT_T0,
        question="What is the refund window?",
        user=User(id="u-7", role="parent"),
        retrieval=Retrieval(
            retriever="retrieve",
            latency_ms=12.5,
            results=(
                RetrievedPassage(id="p-12", score=0.82, rank=1),
                RetrievedPassage(id="7", score=0.5, rank=2),
                RetrievedPassage(id="p-last", score=None, rank=3),
            ),
        ),
        answer=Answer(text="30 days.", refused=None),
    )


def test_spans_in_any_order_give_the_same_event() -> None:
    mapping = TraceMapping(role_metadata_key="role")
    assert trace_to_event(OPENINFERENCE[::-1], mapping) == trace_to_event(OPENINFERENCE, mapping)


def test_json_input_value_takes_the_configured_key() -> None:
    root = span(
        "chain",
        "1",
        None,
        0,
        5,
        **{
            "input.value": json.dumps({"history": [], "question": "Wann öffnet ihr?"}),
            "input.mime_type": "application/json",
            "output.value": json.dumps({"answer": "Um 9."}),
            "output.mime_type": "application/json",
        },
    )
    event = trace_to_event([root], TraceMapping()).event
    assert (event.question, event.answer) == ("Wann öffnet ihr?", Answer(text="Um 9."))
    only_text = TraceMapping(question_json_keys=("text",))
    with pytest.raises(TraceMappingError) as caught:
        trace_to_event([root], only_text)
    assert caught.value.reason == "missing_field"


def _sha(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()[:16]


def test_langchain_documents_without_ids() -> None:
    """OpenInference LangChain writes content and metadata only: a metadata key, else the
    corpus id whose text matches, else a content hash."""
    retriever = span(
        "VectorStoreRetriever",
        "2",
        "1",
        1,
        3,
        **{
            "openinference.span.kind": "RETRIEVER",
            "retrieval.documents.0.document.content": "Fees are due in May.",
            "retrieval.documents.0.document.metadata": json.dumps({"source": "fees.md"}),
            "retrieval.documents.1.document.content": "Term  starts\nin June.",
            "retrieval.documents.2.document.content": "Uniforms are blue.",
        },
    )
    root = span("chain", "1", None, 0, 5, **{"input.value": "When are fees due?"})
    index = {_sha("Term starts in June."): "corpus-44"}
    results = trace_to_event([root, retriever], TraceMapping(), index).event.retrieval.results
    assert [(r.id, r.rank) for r in results] == [
        ("fees.md", 1),
        ("corpus-44", 2),
        (_sha("Uniforms are blue."), 3),
    ]


GENAI_DOCS = [{"id": "d-1", "score": 0.91}, {"id": "d-2", "score": 0.4, "extra": True}]


def _genai_trace(documents: Any) -> list[Span]:
    return [
        span("POST /ask", "1", None, 0, 100, **{"enduser.id": "e-1", "user.roles": ["staff"]}),
        span(
            "retrieval kb-main",
            "2",
            "1",
            5,
            7,
            **{
                "gen_ai.operation.name": "retrieval",
                "gen_ai.data_source.id": "kb-main",
                "gen_ai.retrieval.top_k": 5,
                "gen_ai.retrieval.query.text": "library hours",
                "gen_ai.retrieval.documents": documents,
            },
        ),
        span(
            "chat gpt-5",
            "3",
            "1",
            10,
            90,
            **{
                "gen_ai.operation.name": "chat",
                "gen_ai.input.messages": json.dumps(
                    [
                        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
                        {"role": "user", "parts": [{"type": "text", "content": "Hours?"}]},
                        {"role": "assistant", "parts": [{"type": "text", "content": "Which?"}]},
                        {"role": "user", "parts": [{"type": "text", "content": "Library hours?"}]},
                    ]
                ),
                "gen_ai.output.messages": json.dumps(
                    [
                        {
                            "role": "assistant",
                            "parts": [
                                {"type": "text", "content": "9 to "},
                                {"type": "text", "content": "5."},
                            ],
                            "finish_reason": "stop",
                        }
                    ]
                ),
                "gen_ai.response.finish_reasons": ["stop"],
            },
        ),
    ]


@pytest.mark.parametrize("documents", [json.dumps(GENAI_DOCS), GENAI_DOCS])
def test_genai_current_shape(documents: Any) -> None:
    built = trace_to_event(_genai_trace(documents), TraceMapping())
    assert built.rewritten_query == "library hours"
    assert built.event == QueryLogEvent(
        event_id=TRACE,
        trace_id=TRACE,
        timestamp=AT_T0,
        question="Library hours?",
        user=User(id="e-1", role="staff"),
        retrieval=Retrieval(
            retriever="kb-main",
            latency_ms=2.0,
            results=(
                RetrievedPassage(id="d-1", score=0.91, rank=1),
                RetrievedPassage(id="d-2", score=0.4, rank=2),
            ),
        ),
        answer=Answer(text="9 to 5."),
    )


def test_genai_pre_1_37_shape_and_content_filter() -> None:
    chat = span(
        "chat",
        "3",
        "1",
        10,
        20,
        **{
            "gen_ai.system": "openai",
            "gen_ai.operation.name": "chat",
            "gen_ai.prompt.0.role": "system",
            "gen_ai.prompt.0.content": "Be brief.",
            "gen_ai.prompt.1.role": "user",
            "gen_ai.prompt.1.content": "How do I pick a lock?",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "I can't help with that.",
            "gen_ai.response.finish_reasons": ["content_filter"],
            "enduser.role": "guest",
        },
    )
    root = span("handler", "1", None, 0, 30)
    event = trace_to_event([root, chat], TraceMapping()).event
    assert event == QueryLogEvent(
        event_id=TRACE,
        trace_id=TRACE,
        timestamp=AT_T0,
        question="How do I pick a lock?",
        user=User(role="guest"),
        answer=Answer(text="I can't help with that.", refused=True),
    )


def test_genai_1_27_content_events() -> None:
    prompt = SpanEvent(
        "gen_ai.content.prompt",
        T0,
        {"gen_ai.prompt": json.dumps([{"role": "user", "content": "Bus times?"}])},
    )
    completion = SpanEvent(
        "gen_ai.content.completion",
        T0,
        {"gen_ai.completion": json.dumps([{"role": "assistant", "content": "Every 10 min."}])},
    )
    chat = span("chat", "1", None, 0, 9, (prompt, completion), **{"gen_ai.operation.name": "chat"})
    event = trace_to_event([chat], TraceMapping()).event
    assert (event.question, event.answer) == ("Bus times?", Answer(text="Every 10 min."))


def _result(pid: str, score: float) -> SpanEvent:
    return SpanEvent(
        "db.query.result", T0, {"db.query.result.id": pid, "db.query.result.score": score}
    )


def test_openllmetry_db_query_result_events() -> None:
    root = span(
        "ask.workflow",
        "1",
        None,
        0,
        50,
        **{
            "traceloop.span.kind": "workflow",
            "traceloop.entity.input": json.dumps({"args": [], "kwargs": {"question": "Visa fee?"}}),
            "traceloop.entity.output": json.dumps("It is 60 EUR."),
        },
    )
    query = span(
        "chroma.query",
        "2",
        "1",
        2,
        4,
        (_result("v-9", 0.3), _result("v-2", 0.8)),  # rank = event order, not score order
        **{"db.system": "chroma", "db.vector.query.top_k": 2},
    )
    event = trace_to_event([root, query], TraceMapping()).event
    assert event == QueryLogEvent(
        event_id=TRACE,
        trace_id=TRACE,
        timestamp=AT_T0,
        question="Visa fee?",
        retrieval=Retrieval(
            retriever="chroma",
            latency_ms=2.0,
            results=(
                RetrievedPassage(id="v-9", score=0.3, rank=1),
                RetrievedPassage(id="v-2", score=0.8, rank=2),
            ),
        ),
        answer=Answer(text="It is 60 EUR."),
    )


def _oi_retriever(sid: str, start: float, end: float, ids: list[str]) -> Span:
    attrs = {"openinference.span.kind": "RETRIEVER", "input.value": f"q{sid}"}
    for i, pid in enumerate(ids):
        attrs[f"retrieval.documents.{i}.document.id"] = pid
    return span(f"r{sid}", sid, "1", start, end, **attrs)


ROOT = span("chain", "1", None, 0, 100, **{"input.value": "Q?"})
LLM = span("llm", "9", "1", 50, 90, **{"openinference.span.kind": "LLM"})


def test_reranker_output_gives_the_final_order() -> None:
    reranker = span(
        "rerank",
        "5",
        "1",
        30,
        40,
        **{
            "openinference.span.kind": "RERANKER",
            "reranker.query": "q",
            "reranker.output_documents.0.document.id": "b",
            "reranker.output_documents.0.document.score": 0.99,
            "reranker.output_documents.1.document.id": "a",
            "reranker.output_documents.1.document.score": 0.1,
        },
    )
    trace = [ROOT, _oi_retriever("2", 10, 20, ["a", "b", "c"]), reranker, LLM]
    results = trace_to_event(trace, TraceMapping()).event.retrieval.results
    assert results == (
        RetrievedPassage(id="b", score=0.99, rank=1),
        RetrievedPassage(id="a", score=0.1, rank=2),
    )


def test_several_retrievers_last_before_llm() -> None:
    trace = [
        ROOT,
        _oi_retriever("2", 10, 20, ["a", "b"]),
        _oi_retriever("3", 15, 30, ["c"]),  # ends last before the LLM starts at 50
        LLM,
        _oi_retriever("4", 92, 95, ["late"]),  # after the LLM call (e.g. a follow-up lookup)
    ]
    built = trace_to_event(trace, TraceMapping())
    assert [r.id for r in built.event.retrieval.results] == ["c"]
    assert (built.event.retrieval.retriever, built.rewritten_query) == ("r3", "q3")


def test_several_retrievers_fused() -> None:
    """RRF with k = 60 by hand: a = 1/61; b = 1/62 + 1/61; c = 1/62."""
    trace = [ROOT, _oi_retriever("2", 10, 20, ["a", "b"]), _oi_retriever("3", 10, 25, ["b", "c"])]
    retrieval = trace_to_event(trace, TraceMapping(retriever_policy="fused")).event.retrieval
    assert retrieval.retriever == "fused" and retrieval.latency_ms is None
    assert [(r.id, r.rank) for r in retrieval.results] == [("b", 1), ("a", 2), ("c", 3)]
    assert [r.score for r in retrieval.results] == pytest.approx([1 / 62 + 1 / 61, 1 / 61, 1 / 62])


def _answered(**attrs: Any) -> Span:
    return span("chain", "1", None, 0, 9, **{"input.value": "Q?", "output.value": "A.", **attrs})


def test_refusal_signals_in_order() -> None:
    flagged = _answered(**{"app.refused": False, "gen_ai.guardrail.result.value": "BLOCKED"})
    assert trace_to_event(
        [flagged], TraceMapping(refusal_attribute="app.refused")
    ).event.answer == (Answer(text="A.", refused=False))
    assert trace_to_event([flagged], TraceMapping()).event.answer == Answer(text="A.", refused=True)
    guard_event = SpanEvent(
        "gen_ai.guardrail.result",
        T0,
        {
            "gen_ai.guardrail.result.value": "guardrail_intervened",
            "gen_ai.guardrail.source": "OUTPUT",
        },
    )
    guarded = span("guard", "2", "1", 1, 2, (guard_event,))
    assert trace_to_event([_answered(), guarded], TraceMapping()).event.answer.refused is True
    allowed = SpanEvent("gen_ai.guardrail.result", T0, {"gen_ai.guardrail.result.value": "NONE"})
    passed = span("guard", "2", "1", 1, 2, (allowed,))
    assert trace_to_event([_answered(), passed], TraceMapping()).event.answer.refused is None
    refusal_part = span(
        "chat",
        "3",
        "1",
        3,
        4,
        **{
            "gen_ai.operation.name": "chat",
            "gen_ai.output.messages": [
                {"role": "assistant", "parts": [{"type": "refusal", "content": "No."}]}
            ],
        },
    )
    assert trace_to_event([_answered(), refusal_part], TraceMapping()).event.answer.refused is True


def test_user_tenant_channel_from_configured_attributes() -> None:
    root = _answered(**{"enduser.pseudo.id": "anon-3", "app.tenant": "t-1", "app.channel": "web"})
    mapping = TraceMapping(tenant_attribute="app.tenant", channel_attribute="app.channel")
    event = trace_to_event([root], mapping).event
    assert (event.user, event.channel) == (User(id="anon-3", tenant="t-1"), "web")


def test_trace_without_a_root_uses_the_earliest_orphan() -> None:
    """The root never arrived (emitted after the settle timeout): the earliest span whose
    parent is missing stands in for it; the timestamp is its start."""
    orphan = span("chain", "2", "f", 4, 9, **{"input.value": "Orphan?"})
    child = span("llm", "3", "2", 5, 6, **{"openinference.span.kind": "LLM"})
    event = trace_to_event([child, orphan], TraceMapping()).event
    assert event.question == "Orphan?"
    assert event.timestamp == datetime(2026, 11, 29, 10, 0, 0, 4000, tzinfo=UTC)


def test_no_question_is_missing_field() -> None:
    with pytest.raises(TraceMappingError) as caught:
        trace_to_event([span("db", "1", None, 0, 1, **{"db.system": "postgresql"})], TraceMapping())
    assert caught.value.reason == "missing_field"


def test_no_spans_and_mixed_traces() -> None:
    with pytest.raises(TraceMappingError):
        trace_to_event([], TraceMapping())
    other = Span("1" * 32, "2" * 16, None, "x", 1, 2)
    with pytest.raises(ValueError):
        trace_to_event([OPENINFERENCE[0], other], TraceMapping())


def test_a_question_the_event_model_refuses_is_a_mapping_error_without_content() -> None:
    """A lone surrogate (legal in OTLP/JSON's ``\\ud800`` escape, not text) in the question:
    the event model refuses it; that is the trace's fault, so a TraceMappingError (dead
    letter), never a ValidationError that would stop the source's poll, and its detail names
    the field, not the value."""
    bad = "What is the refund window \ud800?"
    root = span("query", "1", None, 0, 900, **{"openinference.span.kind": "CHAIN",
                                               "input.value": bad})  # fmt: skip
    with pytest.raises(TraceMappingError) as caught:
        trace_to_event([root], TraceMapping())
    assert caught.value.reason == "invalid_value"
    assert "question" in caught.value.detail and "refund" not in caught.value.detail


def test_openllmetry_indexed_prompt_alone_makes_an_llm_span() -> None:
    """OpenLLMetry's ``gen_ai.prompt.{i}.*`` is the LLM's input even without
    ``llm.request.type`` or ``gen_ai.operation.name`` (trial finding 7: such a trace was
    dead-lettered as having no question)."""
    chat = span(
        "openai.chat", "2", "1", 5, 20,
        **{
            "gen_ai.system": "openai",
            "gen_ai.prompt.0.role": "user",
            "gen_ai.prompt.0.content": "what is the boiling point of water at sea level",
            "gen_ai.completion.0.role": "assistant",
            "gen_ai.completion.0.content": "100 degrees Celsius",
            "gen_ai.completion.0.finish_reason": "stop",
        },
    )  # fmt: skip
    root = span("POST /ask", "1", None, 0, 30, **{"enduser.id": "u-otel-5"})
    assert trace_to_event([root, chat], TraceMapping()).event == QueryLogEvent(
        event_id=TRACE,
        trace_id=TRACE,
        timestamp=AT_T0,
        question="what is the boiling point of water at sea level",
        user=User(id="u-otel-5"),
        answer=Answer(text="100 degrees Celsius"),  # no refusal signal: the classifier reads it
    )


def test_no_question_says_whether_an_llm_span_was_recognised() -> None:
    chat = span("chat", "2", "1", 5, 20, **{"gen_ai.system": "openai",
                                             "gen_ai.input.messages": "[]"})  # fmt: skip
    with pytest.raises(TraceMappingError) as caught:
        trace_to_event([span("handler", "1", None, 0, 30), chat], TraceMapping())
    assert caught.value.detail == (
        "no question: root input.value, LLM input messages or entity input; none of the 2 "
        "spans was recognised as an LLM span (one needs openinference.span.kind LLM, "
        "gen_ai.operation.name chat|generate_content|text_completion, llm.request.type, or "
        "gen_ai.prompt.0.content|role)"
    )
    prompt = {"llm.request.type": "chat", "gen_ai.prompt.0.role": "system",
              "gen_ai.prompt.0.content": "Be brief."}  # fmt: skip
    system_only = span("chat", "2", "1", 5, 20, **prompt)
    with pytest.raises(TraceMappingError) as caught:
        trace_to_event([span("handler", "1", None, 0, 30), system_only], TraceMapping())
    assert caught.value.detail.endswith("; 1 LLM span(s) without a user input message")


def test_no_question_says_the_root_never_arrived() -> None:
    # a trace whose root span was never received: its one span's parent is not in it
    orphan = span("retrieve", "2", "1", 5, 20)
    with pytest.raises(TraceMappingError) as caught:
        trace_to_event([orphan], TraceMapping())
    assert caught.value.detail == (
        "no question: root input.value, LLM input messages or entity input; the trace's "
        "root span never arrived (the earliest of the 1 spans whose parent is not in the "
        "trace stood in for it); none of the 1 spans was recognised as an LLM span (one "
        "needs openinference.span.kind LLM, gen_ai.operation.name chat|generate_content|"
        "text_completion, llm.request.type, or gen_ai.prompt.0.content|role)"
    )


def test_json_objects_without_a_mime_type_are_read_for_answer_and_rewritten_query() -> None:
    """Trial 13 finding 2's rule on the other ``*.value`` attributes: a JSON object is read
    with its keys whatever the mime type; a JSON array or string stays text."""
    spans = [
        span("q", "1", None, 0, 9, openinference__span__kind="CHAIN",
             input__value='{"question": "Hostel fee?"}',
             output__value='{"answer": "Due on the 5th."}'),
        span("r", "2", "1", 1, 2, openinference__span__kind="RETRIEVER",
             input__value='{"input": "hostel fee due date"}',
             retrieval__documents__0__document__id="p-1"),
    ]  # fmt: skip
    built = trace_to_event(spans, TraceMapping())
    assert built.event.question == "Hostel fee?"
    assert built.event.answer == Answer(text="Due on the 5th.")
    assert built.rewritten_query == "hostel fee due date"
    assert built.dropped == ()
    listed = [span("q", "1", None, 0, 9, input__value='["Hostel fee?"]')]
    assert trace_to_event(listed, TraceMapping()).event.question == '["Hostel fee?"]'
    unkeyed = [span("q", "1", None, 0, 9, output__value='{"note": "x"}',
                    input__value="Hostel fee?")]  # fmt: skip
    built = trace_to_event(unkeyed, TraceMapping())
    assert built.event.answer is None  # not its text: counted as a dropped field
    assert built.dropped == (("answer.text", "missing_field"),)


def test_a_score_of_the_wrong_type_keeps_the_passage_and_is_counted() -> None:
    """Trial 24 (LOW 6): ``retrieval.documents.0.document.score`` sent as the string
    ``"high"`` became no score without a count. A string is no score, ``"12.3"`` included
    (the data contract's score is a number, as the JSON event path reads it): the passage
    is kept at its rank without a score and ``retrieval.results: wrong_type`` is counted; NaN
    is ``invalid_value``; a score left out (LangChain writes none) is no problem."""

    def retrieved(**docs: Any) -> tuple[tuple[RetrievedPassage, ...], tuple[tuple[str, str], ...]]:
        spans = [span("q", "1", None, 0, 9, openinference__span__kind="CHAIN",
                      input__value="What did TechCrunch report about OpenAI?"),
                 span("r", "2", "1", 1, 2, openinference__span__kind="RETRIEVER",
                      **{f"retrieval.documents.{k}": v for k, v in docs.items()})]  # fmt: skip
        built = trace_to_event(spans, TraceMapping())
        assert built.event.retrieval is not None
        return built.event.retrieval.results, built.dropped

    p1 = RetrievedPassage(id="p-0001", score=None, rank=1)
    p2 = RetrievedPassage(id="p-0002", score=2.5, rank=2)
    cases = (("high", "wrong_type"), ("12.3", "wrong_type"), (True, "wrong_type"),
             (float("nan"), "invalid_value"), (float("inf"), "invalid_value"))  # fmt: skip
    for bad, reason in cases:
        docs = {"0.document.id": "p-0001", "0.document.score": bad,
                "1.document.id": "p-0002", "1.document.score": 2.5}  # fmt: skip
        results, dropped = retrieved(**docs)
        assert (results, dropped) == ((p1, p2), (("retrieval.results", reason),)), bad
    results, dropped = retrieved(**{"0.document.id": "p-0001", "1.document.id": "p-0002",
                                    "1.document.score": 2.5})  # fmt: skip
    assert (results, dropped) == ((p1, p2), ())
    # a document without an id before a bad score: the first problem in rank order
    results, dropped = retrieved(**{"0.document.score": 1.0, "1.document.id": "p-0002",
                                    "1.document.score": "high"})  # fmt: skip
    assert dropped == (("retrieval.results", "missing_field"),)


def test_a_bad_score_in_genai_documents_and_db_query_results_is_counted() -> None:
    """The same rule on the other two shapes: ``gen_ai.retrieval.documents`` (a JSON string,
    where a number too large for a float is ``invalid_value``) and OpenLLMetry's
    ``db.query.result`` events."""
    root = span("q", "1", None, 0, 9, openinference__span__kind="CHAIN",
                input__value="What did TechCrunch report about OpenAI?")  # fmt: skip
    for score, reason in (('"12.3"', "wrong_type"), ("1" + "0" * 400, "invalid_value")):
        documents = f'[{{"id": "p-0001", "score": {score}}}, {{"id": "p-0002", "score": 2.5}}]'
        genai = span("r", "2", "1", 1, 2, gen_ai__operation__name="retrieval",
                     gen_ai__retrieval__documents=documents)  # fmt: skip
        built = trace_to_event([root, genai], TraceMapping())
        assert built.event.retrieval is not None
        assert [(p.id, p.score) for p in built.event.retrieval.results] == [
            ("p-0001", None), ("p-0002", 2.5)]  # fmt: skip
        assert built.dropped == (("retrieval.results", reason),)
    results = tuple(
        SpanEvent("db.query.result", T0, {"db.query.result.id": pid, "db.query.result.score": s})
        for pid, s in (("p-0001", 0.9), ("p-0002", "0.8"))
    )
    openllmetry = span("r", "2", "1", 1, 2, results, db__vector__query__top_k=2)
    built = trace_to_event([root, openllmetry], TraceMapping())
    assert built.event.retrieval is not None
    assert [(p.id, p.score) for p in built.event.retrieval.results] == [
        ("p-0001", 0.9), ("p-0002", None)]  # fmt: skip
    assert built.dropped == (("retrieval.results", "wrong_type"),)
