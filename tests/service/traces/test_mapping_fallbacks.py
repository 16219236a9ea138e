"""The mapping's fallbacks for what no convention fixes: citations where the application
records them, retrieval spans without ``gen_ai.operation.name`` (``gen_ai.retrieval.top_k``
as well as ``gen_ai.request.top_k``), and the user role from ``user.roles``, the deprecated
``enduser.role`` or a configured metadata key; expected events written out by hand."""

from __future__ import annotations

import json

import pytest

from service.events import Answer, QueryLogEvent, Retrieval, RetrievedPassage, User
from service.traces.mapping import TraceMapping, trace_to_event
from service.traces.spans import Span
from tests.service.traces.test_mapping import AT_T0, TRACE, span


def _root(**attrs: object) -> Span:
    return span("ask", "1", None, 0, 100, **{"input.value": "Fees?", "output.value": "Yes.",
                                             **attrs})  # fmt: skip


def _llm(**attrs: object) -> Span:
    return span("llm", "3", "1", 20, 90, **{"openinference.span.kind": "LLM", **attrs})


def _event(answer: Answer | None = None, user: User | None = None, **rest: object) -> QueryLogEvent:
    return QueryLogEvent(event_id=TRACE, trace_id=TRACE, timestamp=AT_T0, question="Fees?",
                         answer=answer or Answer(text="Yes."), user=user, **rest)  # fmt: skip


CITED = TraceMapping(citations_attribute="app.citations", citations_metadata_key="cited")


@pytest.mark.parametrize(
    ("spans", "citations"),
    [
        # a string array on the LLM span
        ([_root(), _llm(**{"app.citations": ["p-3", "p-1", "p-3"]})], ("p-3", "p-1")),
        # a JSON array string (ids as integers too) on the root
        ([_root(**{"app.citations": '["p-9", 12]'}), _llm()], ("p-9", "12")),
        # one id
        ([_root(**{"app.citations": "p-4"}), _llm()], ("p-4",)),
        # the OpenInference metadata JSON
        ([_root(metadata=json.dumps({"cited": ["p-5", "p-6"]})), _llm()], ("p-5", "p-6")),
        # Langfuse's flattened trace metadata
        ([_root(**{"langfuse.trace.metadata.cited": ["p-7"]}), _llm()], ("p-7",)),
        # the attribute wins over the metadata key
        (
            [_root(metadata=json.dumps({"cited": ["p-5"]})), _llm(**{"app.citations": ["p-8"]})],
            ("p-8",),
        ),
        # blanks, booleans and floats are no ids; nothing left means no citations
        ([_root(**{"app.citations": ["", " "]}), _llm()], ()),
        ([_root(**{"app.citations": '[true, 1.5, " "]'}), _llm()], ()),
    ],
)
def test_citations_where_the_app_records_them(
    spans: list[Span], citations: tuple[str, ...]
) -> None:
    built = trace_to_event(spans, CITED)
    assert built.event == _event(answer=Answer(text="Yes.", citations=citations))


def test_citations_need_configuration() -> None:
    spans = [_root(metadata=json.dumps({"cited": ["p-5"]}), **{"app.citations": ["p-8"]})]
    assert trace_to_event(spans, TraceMapping()).event == _event()


def test_citations_alone_make_an_answer() -> None:
    spans = [span("ask", "1", None, 0, 100, **{"input.value": "Fees?", "app.citations": "p-2"})]
    built = trace_to_event(spans, CITED)
    assert built.event.answer == Answer(text=None, refused=None, citations=("p-2",))


def _retrieval_span(**attrs: object) -> Span:
    documents = json.dumps([{"id": "d-1", "score": 0.9}, {"id": "d-2", "score": 0.3}])
    return span("search kb", "2", "1", 5, 9, **{"gen_ai.retrieval.documents": documents, **attrs})


EXPECTED_RETRIEVAL = Retrieval(
    retriever="search kb",
    latency_ms=4.0,
    results=(
        RetrievedPassage(id="d-1", score=0.9, rank=1),
        RetrievedPassage(id="d-2", score=0.3, rank=2),
    ),
)


@pytest.mark.parametrize(
    "attrs",
    [
        {"gen_ai.retrieval.top_k": 5},  # the name some implementations emit
        {"gen_ai.request.top_k": 5.0, "gen_ai.data_source.id": "search kb"},  # the spec's
        {},  # the documents alone
        {"gen_ai.retrieval.query.text": "fees"},
    ],
)
def test_genai_retrieval_span_without_operation_name(attrs: dict[str, object]) -> None:
    built = trace_to_event([_root(), _retrieval_span(**attrs)], TraceMapping())
    assert built.event == _event(retrieval=EXPECTED_RETRIEVAL)


def test_request_top_k_alone_is_an_llm_sampling_parameter() -> None:
    # gen_ai.request.top_k on a span that is no retrieval (no data source, no documents):
    # an LLM request parameter, not a retriever
    spans = [_root(), span("sample", "2", "1", 5, 9, **{"gen_ai.request.top_k": 40.0})]
    assert trace_to_event(spans, TraceMapping()).event.retrieval is None
    # and an LLM span with it stays an LLM span
    chat = _llm(**{"gen_ai.request.top_k": 40.0, "gen_ai.retrieval.query.text": "x"})
    assert trace_to_event([_root(), chat], TraceMapping()).event.retrieval is None


OPENINFERENCE_DOCUMENTS = {"retrieval.documents.0.document.id": "d-1",
                           "retrieval.documents.0.document.score": 0.9,
                           "retrieval.documents.1.document.id": "d-2",
                           "retrieval.documents.1.document.score": 0.3}  # fmt: skip


def test_openinference_documents_without_a_span_kind_make_a_retrieval_span() -> None:
    """Trial 51 (M1): the OpenInference documents are retrieval evidence by themselves, as
    ``gen_ai.retrieval.documents`` is: a kindless span carrying them is read as a RETRIEVER
    would be (same passages, same drops: none)."""
    kindless = span("search kb", "2", "1", 5, 9, **OPENINFERENCE_DOCUMENTS)
    built = trace_to_event([_root(), kindless], TraceMapping())
    assert (built.event, built.dropped) == (_event(retrieval=EXPECTED_RETRIEVAL), ())
    retriever = span("search kb", "2", "1", 5, 9, **{"openinference.span.kind": "retriever",
                                                     **OPENINFERENCE_DOCUMENTS})  # fmt: skip
    assert trace_to_event([_root(), retriever], TraceMapping()) == built


@pytest.mark.parametrize(
    "attrs",
    [
        {"openinference.span.kind": "CHAIN", **OPENINFERENCE_DOCUMENTS},  # another kind
        {"gen_ai.operation.name": "embeddings", **OPENINFERENCE_DOCUMENTS},  # another operation
        {"gen_ai.operation.name": "chat", **OPENINFERENCE_DOCUMENTS},  # an LLM span
        {
            "openinference.span.kind": "TOOL",  # the GenAI documents on a span of another kind
            "gen_ai.retrieval.documents": json.dumps([{"id": "d-1", "score": 0.9}]),
        },
    ],
)
def test_documents_on_a_span_that_is_not_a_retrieval_span_are_counted(
    attrs: dict[str, object],
) -> None:
    """Documents on a span of another kind or operation are ambiguous: not read, and the
    event names them once (``retrieval.results: other_span_ignored``), never silently."""
    stray = span("tool", "2", "1", 5, 9, **attrs)
    built = trace_to_event([_root(), stray], TraceMapping())
    assert built.event == _event()
    assert built.dropped == (("retrieval.results", "other_span_ignored"),)
    # two such spans, next to a real retriever: its passages read, the stray counted once
    stray = span("tool", "5", "1", 5, 9, **attrs)
    other = span("tool2", "4", "1", 10, 12, **attrs)
    built = trace_to_event([_root(), stray, _retrieval_span(), other], TraceMapping())
    assert built.event == _event(retrieval=EXPECTED_RETRIEVAL)
    assert built.dropped == (("retrieval.results", "other_span_ignored"),)


IGNORED = (("retrieval.results", "other_span_ignored"),)
ROOT_DOCUMENTS = [
    {"retrieval.documents.0.document.id": "r-1", "retrieval.documents.1.document.id": "r-2"},
    {"gen_ai.retrieval.documents": json.dumps([{"id": "r-1", "score": 0.5}])},
]


@pytest.mark.parametrize("root_documents", ROOT_DOCUMENTS)
@pytest.mark.parametrize(
    "explicit",
    [{"openinference.span.kind": "RETRIEVER"}, {"gen_ai.operation.name": "retrieval"}],
)
def test_an_explicit_retrieval_span_wins_over_a_kindless_root_with_documents(
    root_documents: dict[str, object], explicit: dict[str, object]
) -> None:
    """Review of session 51 (case A, and E for the GenAI convention): a kindless root with
    documents does not outrank a retrieval child: the child's passages and its 4 ms are
    read, the root's documents are counted, never silently."""
    child = span("search kb", "2", "1", 5, 9, **explicit, **OPENINFERENCE_DOCUMENTS)
    built = trace_to_event([_root(**root_documents), child], TraceMapping())
    assert (built.event, built.dropped) == (_event(retrieval=EXPECTED_RETRIEVAL), IGNORED)
    # without the explicit child, the kindless root is the retrieval (whole trace: 100 ms)
    alone = trace_to_event([_root(**root_documents)], TraceMapping())
    assert alone.event.retrieval is not None
    assert (alone.event.retrieval.retriever, alone.event.retrieval.latency_ms) == ("ask", 100.0)
    assert alone.event.retrieval.results[0].id == "r-1"
    assert alone.dropped == ()


def test_a_kindless_span_with_documents_after_the_retriever_does_not_replace_it() -> None:
    """Review of session 51 (case B): CHAIN root, RETRIEVER (5-9 ms), then a kindless
    "filter" span with one of its documents (10-12 ms), then the LLM (20-90 ms): the
    retriever's passages are read, the filter's counted."""
    root = _root(**{"openinference.span.kind": "CHAIN"})
    retriever = span("search kb", "2", "1", 5, 9, **{"openinference.span.kind": "RETRIEVER",
                                                     **OPENINFERENCE_DOCUMENTS})  # fmt: skip
    kept = span("filter", "4", "1", 10, 12, **{"retrieval.documents.0.document.id": "d-2"})
    built = trace_to_event([root, retriever, kept, _llm()], TraceMapping())
    assert (built.event, built.dropped) == (_event(retrieval=EXPECTED_RETRIEVAL), IGNORED)
    # without the retriever, the kindless span is read (d-2 alone, no score, 2 ms)
    built = trace_to_event([root, kept, _llm()], TraceMapping())
    assert built.event.retrieval == Retrieval(
        retriever="filter", latency_ms=2.0, results=(RetrievedPassage(id="d-2", rank=1),)
    )
    assert built.dropped == ()


@pytest.mark.parametrize(
    ("attrs", "role"),
    [
        ({"user.roles": ["staff", "admin"], "enduser.role": "guest"}, "staff"),
        ({"enduser.role": "guest", "metadata": json.dumps({"role": "parent"})}, "guest"),
        ({"metadata": json.dumps({"role": "parent"})}, "parent"),
        ({"metadata": json.dumps({"role": ["teacher", "parent"]})}, "teacher"),
        ({"langfuse.trace.metadata.role": "student"}, "student"),
        ({"metadata": json.dumps({"role": " "})}, None),
    ],
)
def test_role_precedence(attrs: dict[str, object], role: str | None) -> None:
    spans = [_root(**{"user.id": "u-1", **attrs})]
    built = trace_to_event(spans, TraceMapping(role_metadata_key="role"))
    assert built.event == _event(user=User(id="u-1", role=role))
