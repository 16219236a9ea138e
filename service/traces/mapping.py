"""One assembled trace (its spans) to one goldwatch :class:`~service.events.QueryLogEvent`.

Sources of each field, first that exists (``/work/shared/otel-conventions.md`` section 4.3;
OpenInference ``spec/semantic_conventions.md``, OpenTelemetry GenAI ``gen-ai-spans.md``,
OpenLLMetry ``semconv_ai``):

* ``event_id`` and ``trace_id``: the trace id (32 hex characters), so dedup on event id is
  dedup on trace id; ``trace_id`` stays as sent even when the dedup stage pseudonymises an
  ``event_id``, and a harvested gold question keeps it (provenance).
* ``timestamp``: the root span's start.
* ``question``: root ``input.value`` (read as JSON, first of
  :attr:`TraceMapping.question_json_keys`, when ``input.mime_type`` is JSON or, whatever the
  mime type, when the value is a JSON object: producers often leave the mime type out; a JSON
  object with none of the keys is no question, never kept as text, and a trace without
  another source of one is dead-lettered ``missing_field`` saying so) -> the last user
  message of the first LLM span
  (``gen_ai.input.messages``; ``llm.input_messages.{i}.message.*``; pre-1.37 GenAI
  ``gen_ai.prompt.{i}.*`` or the ``gen_ai.content.prompt`` event) -> root
  ``traceloop.entity.input``. An LLM span: OpenInference kind ``LLM``,
  ``gen_ai.operation.name`` chat, generate_content or text_completion, OpenLLMetry
  ``llm.request.type``, or an indexed prompt ``gen_ai.prompt.0.content|role`` alone.
* rewritten query (kept apart, :attr:`TraceEvent.rewritten_query`): the chosen retriever
  span's ``input.value`` -> ``gen_ai.retrieval.query.text`` -> a reranker's
  ``reranker.query``.
* passages (per retriever span): OpenInference ``retrieval.documents.{i}.document.*``
  (rank ``i + 1``) -> GenAI ``gen_ai.retrieval.documents`` (JSON string or structured,
  ``[{id, score}]``) on the span -> the same attribute on its events (any event name; in
  event order) -> OpenLLMetry ``db.query.result`` span events (rank = event order).
  Documents carried but not read (not a list of objects, an item without an id, a metadata
  id or content, an event named ``gen_ai.retrieval.documents`` without that attribute), and
  a score sent that is not a finite number (a string, ``"12.3"`` included: the data
  contract's score is a number; the passage is kept without it), are named in
  :attr:`TraceEvent.dropped`, which the engine counts as ``fields_dropped``. A
  RERANKER span's ``reranker.output_documents`` replaces the list (final order). Several
  retriever spans: :attr:`TraceMapping.retriever_policy`. A passage without an id takes the
  first :attr:`TraceMapping.passage_id_metadata_keys` key of its metadata, else the corpus id
  whose text matches (``content_index``), else ``sha256:`` + 16 hex of its content.
* answer: root ``output.value`` (JSON as the question's, with
  :attr:`TraceMapping.answer_json_keys`) -> the last LLM span's last output message
  (``gen_ai.output.messages`` text parts; ``llm.output_messages.{i}.message.content``;
  pre-1.37 ``gen_ai.completion.{i}.content`` or the ``gen_ai.content.completion`` event) ->
  root ``traceloop.entity.output``; citations from :attr:`TraceMapping.citations_attribute`,
  else :attr:`TraceMapping.citations_metadata_key` of the ``metadata`` JSON (or Langfuse's
  ``langfuse.trace.metadata.<key>``).
* refusal: :attr:`TraceMapping.refusal_attribute` (a boolean on any span) -> a guardrail
  result (``gen_ai.guardrail.result`` event or attribute) whose value is one of
  :attr:`TraceMapping.guardrail_block_values` -> ``content_filter`` or ``refusal`` in
  ``gen_ai.response.finish_reasons`` or an output message's ``finish_reason`` -> a
  ``refusal`` output part -> ``None`` (goldwatch's refusal classifier then reads the answer).
* feedback: :attr:`TraceMapping.feedback_attribute` (a number on any span: the user's rating
  on the application's scale) -> ``feedback.rating``; a value that is not a finite number is
  named in :attr:`TraceEvent.dropped` (``feedback.rating``: ``wrong_type`` or
  ``invalid_value``), as the JSON decoder drops it. OpenTelemetry has no convention for user
  feedback, and a rating given after the trace was assembled cannot join it (its span is a
  ``late_span``; a ``POST /v1/events`` with the trace id is a duplicate): docs/traces.md,
  "User feedback".
* user: id from ``user.id`` / ``enduser.id`` / ``enduser.pseudo.id``; role from
  ``user.roles`` (the first) / ``enduser.role`` / the configured key of the OpenInference
  ``metadata`` JSON or Langfuse's ``langfuse.trace.metadata.<key>``; tenant and channel from
  configured attributes.
* retriever spans: OpenInference kind ``RETRIEVER``; ``gen_ai.operation.name: retrieval``;
  OpenLLMetry ``db.vector.query.top_k`` or ``db.query.result`` events; and, for
  instrumentations that leave out the kind and the operation name, a non-LLM span with
  OpenInference ``retrieval.documents.*`` (the spec defines those documents as what a
  retriever returned, so they are retrieval evidence by themselves, as the GenAI documents
  are), ``gen_ai.retrieval.top_k`` (the name some emit instead of the spec's
  ``gen_ai.request.top_k``), ``gen_ai.retrieval.documents`` or
  ``gen_ai.retrieval.query.text``, or with ``gen_ai.request.top_k`` next to
  ``gen_ai.data_source.id`` (``gen_ai.request.top_k`` alone is also an LLM sampling
  parameter). Explicit retrieval spans (the kind, the operation name, OpenLLMetry's) win:
  spans recognised only by that evidence are read only when the trace has no explicit one
  (a kindless root with documents never outranks a RETRIEVER child). Documents of either
  convention on any span not read (another kind such as ``CHAIN`` or ``LLM``, an LLM span,
  another operation name, a kindless span beside an explicit retriever) are ignored; the
  event names them in :attr:`TraceEvent.dropped` (``retrieval.results``,
  ``other_span_ignored``), never silently.

Attributes are looked up on the root span first, then on the other spans in start order.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    ValidationError,
)

from service.data.corpus import load_corpus
from service.errors import GoldwatchError
from service.events import Answer, Feedback, QueryLogEvent, Retrieval, User
from service.traces.spans import Span

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_LLM_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
_JSON_MIME = "application/json"
#: A configured attribute or metadata key.
Key = Annotated[str, StringConstraints(min_length=1, max_length=256)]


class TraceMapping(BaseModel):
    """How a trace becomes an event (the choices no convention fixes).

    Attributes:
        question_json_keys: keys tried, in order, when a question value is JSON
            (``input.mime_type: application/json``, or an ``input.value`` that is a JSON
            object whatever its mime type; ``traceloop.entity.input``).
        answer_json_keys: the same for ``output.value`` / ``traceloop.entity.output``.
        passage_id_metadata_keys: keys of a document's metadata that hold its id, tried in
            order when the span has no ``document.id`` (OpenInference LangChain writes none).
        retriever_policy: several retriever spans in one trace: ``last_before_llm`` (the last
            one to end before the last LLM span starts; the last one if none did) or
            ``fused`` (reciprocal rank fusion of all of them, Cormack et al. 2009, SIGIR:
            ``score = sum 1 / (rrf_k + rank)``, ties in first-seen order).
        rrf_k: the RRF constant (60 in the paper), >= 1.
        refusal_attribute: a boolean span attribute the application sets on refusals
            (``true``) and on answers (``false``): the refusal ESTIMATE measures the refusal
            patterns against both, so with ``true`` alone (the attribute left out on
            answers) the reports give a lower bound only ("no answer sets answer.refused
            false").
        guardrail_block_values: guardrail result values (case-insensitive) that mean the
            answer was blocked, e.g. Bedrock's ``GUARDRAIL_INTERVENED``.
        role_metadata_key: key of the OpenInference ``metadata`` JSON (or the Langfuse
            ``langfuse.trace.metadata.<key>`` attribute) holding the user role.
        tenant_attribute, channel_attribute: span attributes holding tenant and channel.
        citations_attribute: a span attribute holding the passage ids the answer cites (no
            convention has one): a string array, a JSON array string, or one id.
        citations_metadata_key: the same under this key of the OpenInference ``metadata``
            JSON (or ``langfuse.trace.metadata.<key>``); read when the attribute gives none.
        feedback_attribute: a numeric span attribute holding the user's rating of the answer
            on the application's own scale (``feedback.rating``; ``harvest.negative_rating``
            says which ratings are negative), e.g. ``app.feedback.rating``; the root span
            first, then the others in start order. Only a rating the trace carries when it
            is assembled counts (docs/traces.md, "User feedback and refusal flags on traces").

    Raises:
        pydantic.ValidationError: an empty key, ``rrf_k < 1``, an unknown field.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    question_json_keys: tuple[Key, ...] = ("query", "question", "input")
    answer_json_keys: tuple[Key, ...] = ("answer", "output", "response", "text")
    passage_id_metadata_keys: tuple[Key, ...] = ("id", "doc_id", "chunk_id", "source")
    retriever_policy: Literal["last_before_llm", "fused"] = "last_before_llm"
    rrf_k: int = Field(default=60, ge=1)
    refusal_attribute: Key | None = None
    guardrail_block_values: tuple[str, ...] = ("GUARDRAIL_INTERVENED", "BLOCKED", "DENY")
    role_metadata_key: Key | None = None
    tenant_attribute: Key | None = None
    channel_attribute: Key | None = None
    citations_attribute: Key | None = None
    citations_metadata_key: Key | None = None
    feedback_attribute: Key | None = None


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """What a trace yields: the event, its trace id, and the retriever's own query.

    Attributes:
        event: the goldwatch event (``event_id`` is the trace id).
        trace_id: 32 lowercase hex characters.
        rewritten_query: the query the retriever ran (may differ from the question when the
            application rewrites it), ``None`` when no span records it.
        dropped: what the trace carried that the event lost, as the decoder counts an
            optional field it drops: ``(field path, reason)``, today
            ``("retrieval.results", "wrong_type")`` (documents not a list of objects),
            ``("retrieval.results", "missing_field")`` (a document without an id, a metadata
            id or content; an event named ``gen_ai.retrieval.documents`` without that
            attribute), ``("retrieval.results", "wrong_type" | "invalid_value")`` also for a
            score that is not a number or not finite (the passage kept without it), and
            ``("answer.text", "missing_field")`` (the root's ``output.value``
            a JSON object with none of :attr:`TraceMapping.answer_json_keys`, and no other
            answer text), ``("feedback.rating", "wrong_type" | "invalid_value")`` (the
            :attr:`TraceMapping.feedback_attribute` value not a finite number),
            ``("retrieval.results", "other_span_ignored")`` (documents on a span that is
            not the trace's retrieval span: ignored, whether or not other results were read;
            once per event). The engine counts them
            (``fields_dropped``) when the event is kept.
    """

    event: QueryLogEvent
    trace_id: str
    rewritten_query: str | None
    dropped: tuple[tuple[str, str], ...] = ()


class TraceMappingError(GoldwatchError):
    """A trace that yields no event.

    Attributes:
        reason: ``missing_field`` (no question, no spans) or ``invalid_value`` (no start).
        detail: what was missing; never content.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def content_key(text: str) -> str:
    """Return the stable content id of a passage text: ``sha256:`` + 16 hex characters of
    the SHA-256 of its whitespace-normalised UTF-8 (runs of whitespace -> one space, ends
    stripped). Also the key of ``content_index`` in :func:`trace_to_event`.

    >>> content_key(" a  b\\n") == content_key("a b")
    True
    """
    normal = " ".join(text.split())
    return "sha256:" + hashlib.sha256(normal.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def content_index(corpus: Path | None) -> dict[str, str]:
    """:func:`~service.traces.mapping.content_key` of each passage text of the configured
    corpus -> its id, so a posted document without an id (OpenInference LangChain) maps to
    the corpus passage with the same text; empty without a corpus.

    Raises:
        service.data.corpus.CorpusError, OSError: the corpus cannot be read (as at start-up).
    """
    if corpus is None:
        return {}
    return {content_key(passage.text): passage.id for passage in load_corpus(corpus).passages}


def trace_to_event(
    spans: Sequence[Span],
    mapping: TraceMapping,
    content_index: Mapping[str, str] | None = None,
) -> TraceEvent:
    """Map the spans of one trace to one event (sources and precedence: module docstring).

    Args:
        spans: every span of the trace, any order, all with the same ``trace_id``.
        mapping: the configurable choices.
        content_index: :func:`content_key` of a corpus passage's text -> its corpus id, used
            for passages without an id.

    Raises:
        TraceMappingError: ``missing_field`` when there are no spans or no question,
            ``invalid_value`` when no span has a start time.
        ValueError: spans of different traces (a programming error of the caller).
    """
    if not spans:
        raise TraceMappingError("missing_field", "trace has no spans")
    trace_id = spans[0].trace_id
    if any(span.trace_id != trace_id for span in spans):
        raise ValueError("spans of more than one trace")
    ordered = _root_first(spans)
    root = ordered[0]
    llms = [span for span in ordered if _is_llm(span)]
    question = _question(root, llms, mapping)
    if question is None:
        raise TraceMappingError("missing_field", _no_question(spans, llms, root, mapping))
    # explicit retrieval spans win; spans recognised only by their evidence are read only
    # when the trace has no explicit one; documents on any span not read are counted
    explicit: list[Span] = []
    inferred: list[Span] = []
    other_docs = inferred_docs = False
    for span in ordered:
        role, documents = _retrieval_role(span)
        if role is _EXPLICIT:
            explicit.append(span)
        elif role is _INFERRED:
            inferred.append(span)
            inferred_docs = inferred_docs or documents
        else:
            other_docs = other_docs or documents
    retrievers = explicit or inferred
    stray = other_docs or (bool(explicit) and inferred_docs)
    rerankers = [span for span in ordered if _is_kind(span, "RERANKER")]
    feedback, unread_rating = _feedback(ordered, mapping.feedback_attribute)
    try:
        retrieval, rewritten, unread = _retrieval(retrievers, rerankers, llms, mapping,
                                                  content_index or {})  # fmt: skip
        event = QueryLogEvent(
            event_id=trace_id,
            timestamp=_timestamp(ordered),
            question=question,
            user=_user(ordered, mapping),
            channel=_string_attr(ordered, mapping.channel_attribute),
            retrieval=retrieval,
            answer=_answer(root, llms, ordered, mapping),
            feedback=feedback,
            trace_id=trace_id,
        )
    except ValidationError as exc:  # e.g. a lone surrogate in the question: the trace's fault
        raise TraceMappingError("invalid_value", _validation_detail(exc)) from None
    dropped: tuple[tuple[str, str], ...] = () if unread is None else ((RESULTS_FIELD, unread),)
    if stray:
        dropped += ((RESULTS_FIELD, OTHER_SPAN_IGNORED),)
    if unread_rating is not None:
        dropped += (("feedback.rating", unread_rating),)
    answer = event.answer
    if (answer is None or answer.text is None) and _json_object_without(
        root, "output", mapping.answer_json_keys
    ):  # the root's output.value a JSON object without an answer key, and no other text
        dropped += (("answer.text", "missing_field"),)
    return TraceEvent(event=event, trace_id=trace_id, rewritten_query=rewritten,
                      dropped=dropped)  # fmt: skip


def stray_documents_message(built: TraceEvent) -> str | None:
    """The log line for an event whose trace carried documents on a span that is not its
    retrieval span (:data:`OTHER_SPAN_IGNORED` in :attr:`TraceEvent.dropped`): its trace id,
    the rule a retrieval span meets, where it is counted; never content. ``None`` otherwise.
    Both trace ingest paths log it for the first such trace of the process only (every one
    counts in ``fields_dropped``)."""
    if (RESULTS_FIELD, OTHER_SPAN_IGNORED) not in built.dropped:
        return None
    return (f"trace {built.trace_id} carries retrieved documents on a span that is not its "
            f"retrieval span (one needs {RETRIEVAL_SPAN_RULE}); they were ignored, and every "
            f"such trace counts in fields_dropped as '{RESULTS_FIELD}: {OTHER_SPAN_IGNORED}' "
            f"(logged once)")  # fmt: skip


def _validation_detail(exc: ValidationError) -> str:
    """Where and what failed (``"question: string_pattern_mismatch"``), at most three
    problems; never the input value (it is content)."""
    problems = [f"{'.'.join(str(part) for part in error['loc']) or 'event'}: {error['type']}"
                for error in exc.errors(include_input=False)[:3]]  # fmt: skip
    return "event field not valid: " + "; ".join(problems)


# --- span roles ---------------------------------------------------------------------------


def _root_first(spans: Sequence[Span]) -> list[Span]:
    """The root (no parent; else the earliest span whose parent is not in the trace; else
    the earliest span), then the others by (start, end)."""
    ordered = sorted(spans, key=lambda s: (s.start_unix_nano, s.end_unix_nano))
    ids = {span.span_id for span in spans}
    root = next((s for s in ordered if s.is_root), None)
    if root is None:
        root = next((s for s in ordered if s.parent_span_id not in ids), ordered[0])
    return [root, *(s for s in ordered if s is not root)]


def _kind(span: Span) -> str:
    kind = span.attributes.get("openinference.span.kind")
    return kind.upper() if isinstance(kind, str) else ""


def _is_kind(span: Span, kind: str) -> bool:
    return _kind(span) == kind


#: Attributes that make a span an LLM span by themselves: OpenLLMetry's (and pre-1.37
#: GenAI's) indexed prompt ``gen_ai.prompt.{i}.role|content`` is the LLM's input, whether
#: or not the instrumentation also set ``llm.request.type`` (OpenLLMetry ``semconv_ai``:
#: ``LLM_PROMPTS = "gen_ai.prompt"``).
_LLM_PROMPT_KEYS = ("gen_ai.prompt.0.content", "gen_ai.prompt.0.role")
#: How a span is recognised as an LLM span (:func:`_is_llm`), for dead-letter details.
LLM_SPAN_RULE = (
    "openinference.span.kind LLM, gen_ai.operation.name chat|generate_content|"
    "text_completion, llm.request.type, or gen_ai.prompt.0.content|role"
)


def _is_llm(span: Span) -> bool:
    if _kind(span) == "LLM":
        return True
    if span.attributes.get("gen_ai.operation.name") in _LLM_OPERATIONS:
        return True
    if "llm.request.type" in span.attributes:  # OpenLLMetry's LLM spans
        return True
    return any(key in span.attributes for key in _LLM_PROMPT_KEYS)


def _no_question(
    spans: Sequence[Span], llms: Sequence[Span], root: Span, mapping: TraceMapping
) -> str:
    """The dead-letter detail of a trace without a question: where it was looked for, that
    the root's ``input.value`` is a JSON object without any of the configured keys, and
    whether any span was recognised as an LLM span (attribute keys only, never content);
    when no span of the trace is its root (every span has a parent, none of them in the
    trace: the root was never received, e.g. exported by another process or dropped), it
    says so first, since the question is most often on the root."""
    where = "no question: root input.value, LLM input messages or entity input"
    if not any(span.is_root for span in spans):
        where += (f"; the trace's root span never arrived (the earliest of the {len(spans)} "
                  "spans whose parent is not in the trace stood in for it)")  # fmt: skip
    if _json_object_without(root, "input", mapping.question_json_keys):
        keys = ", ".join(mapping.question_json_keys)
        where += (f"; root input.value is a JSON object with none of the keys {keys} "
                  "(traces.mapping.question_json_keys), not taken as the question")  # fmt: skip
    if llms:
        return f"{where}; {len(llms)} LLM span(s) without a user input message"
    return (f"{where}; none of the {len(spans)} spans was recognised as an LLM span (one "
            f"needs {LLM_SPAN_RULE})")  # fmt: skip


#: The GenAI documents attribute: ``[{id, score, ...}]``, structured or a JSON string, on
#: the retrieval span or on an event of it (the semantic conventions: "When the attribute is
#: recorded on events, it MUST be recorded in structured form"; they name no such event).
GENAI_DOCUMENTS = "gen_ai.retrieval.documents"
#: The event field whose drops :attr:`TraceEvent.dropped` names.
RESULTS_FIELD = "retrieval.results"
_GENAI_RETRIEVAL_KEYS = (
    "gen_ai.retrieval.top_k",
    GENAI_DOCUMENTS,
    "gen_ai.retrieval.query.text",
)
#: The prefix of OpenInference's flattened documents, ``retrieval.documents.{i}.document.*``
#: (``spec/semantic_conventions.md``: the documents a RETRIEVER span returned).
OPENINFERENCE_DOCUMENTS = "retrieval.documents."
#: The drop reason of ``retrieval.results`` when documents sit on a span that is not the
#: trace's retrieval span (:data:`RETRIEVAL_SPAN_RULE`): ignored, whether or not the event
#: has results from the retrieval span.
OTHER_SPAN_IGNORED = "other_span_ignored"
#: How a span is recognised as a retrieval span, for the log line of a trace whose documents
#: sit on another span.
RETRIEVAL_SPAN_RULE = (
    "openinference.span.kind RETRIEVER, gen_ai.operation.name retrieval, "
    "db.vector.query.top_k or db.query.result events; or, only when the trace has none of "
    "those, a span with no kind, no gen_ai.operation.name, not an LLM span, and "
    "retrieval.documents.*, gen_ai.retrieval.documents, gen_ai.retrieval.top_k or "
    "gen_ai.retrieval.query.text"
)


#: :func:`_retrieval_role`: a retrieval span by its kind or operation (OpenInference
#: ``RETRIEVER``, ``gen_ai.operation.name: retrieval``, an OpenLLMetry vector-DB query span).
_EXPLICIT = "explicit"
#: :func:`_retrieval_role`: a kindless span recognised as a retrieval span only by its
#: evidence (documents, top_k, query text): read only when the trace has no explicit one.
_INFERRED = "inferred"


def _retrieval_role(span: Span) -> tuple[str | None, bool]:
    """Whether a span is a retrieval span (:data:`_EXPLICIT`, :data:`_INFERRED`, ``None``;
    module docstring, "retriever spans") and, unless explicit, whether it carries documents
    of either convention (OpenInference ``retrieval.documents.*``, GenAI
    ``gen_ai.retrieval.documents`` on the span or an event): one scan of its attribute keys."""
    attrs = span.attributes
    kind = _kind(span)
    if kind == "RETRIEVER" or (kind == "" and attrs.get("gen_ai.operation.name") == "retrieval"):
        return _EXPLICIT, False
    if "db.vector.query.top_k" in attrs or any(e.name == "db.query.result" for e in span.events):
        return _EXPLICIT, False  # OpenLLMetry vector-DB query span
    documents = (
        GENAI_DOCUMENTS in attrs
        or any(key.startswith(OPENINFERENCE_DOCUMENTS) for key in attrs)
        or any(event.name == GENAI_DOCUMENTS or GENAI_DOCUMENTS in event.attributes
               for event in span.events)
    )  # fmt: skip
    if kind == "" and "gen_ai.operation.name" not in attrs and not _is_llm(span):
        if documents or any(key in attrs for key in _GENAI_RETRIEVAL_KEYS):
            return _INFERRED, documents
        if "gen_ai.request.top_k" in attrs and "gen_ai.data_source.id" in attrs:
            return _INFERRED, documents
    return None, documents


# --- question and answer ------------------------------------------------------------------


def _text(value: Any) -> str | None:
    """A non-blank string, else ``None``."""
    if isinstance(value, str) and value.strip():
        return value
    return None


def _loads(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return None
    return value


def _from_json(value: Any, keys: Sequence[str]) -> str | None:
    """The first non-blank string under ``keys`` of a JSON object (also one level down in
    ``kwargs``/``inputs``), a JSON string itself, or the first string of ``args``."""
    if isinstance(value, str):
        return _text(value)
    if not isinstance(value, dict):
        return None
    for scope in (value, value.get("kwargs"), value.get("inputs")):
        if isinstance(scope, dict):
            for key in keys:
                found = _text(scope.get(key))
                if found is not None:
                    return found
    args = value.get("args")
    if isinstance(args, list):
        return next((a for a in args if _text(a) is not None), None)
    return None


def _value_text(span: Span, prefix: str, keys: Sequence[str]) -> str | None:
    """OpenInference ``{prefix}.value``: parsed as JSON when ``{prefix}.mime_type`` says so,
    and, whatever the mime type, when it is a JSON object (OpenInference producers often
    leave the mime type out: the trial-13 ``{"query": ...}`` kept verbatim as the question);
    a JSON object without any of ``keys`` gives ``None`` (:func:`_json_object_without`
    names it), never its text."""
    value = span.attributes.get(f"{prefix}.value")
    if span.attributes.get(f"{prefix}.mime_type") == _JSON_MIME:
        return _from_json(_loads(value), keys)
    parsed = _json_object(value)
    if parsed is not None:
        return _from_json(parsed, keys)
    return _text(value)


def _json_object(value: Any) -> dict[str, Any] | None:
    """``value`` parsed when it is a string holding one JSON object (``{...}``), else
    ``None`` (plain text, a JSON string, number or array is not an object)."""
    if not isinstance(value, str) or value.lstrip()[:1] != "{":
        return None
    parsed = _loads(value)
    return parsed if isinstance(parsed, dict) else None


def _json_object_without(span: Span, prefix: str, keys: Sequence[str]) -> bool:
    """Whether ``{prefix}.value`` is a JSON object (by mime type or by shape) from which
    :func:`_from_json` reads nothing: none of ``keys`` (nor under ``kwargs``/``inputs``, nor
    a string in ``args``) holds a non-blank string."""
    value = span.attributes.get(f"{prefix}.value")
    parsed = _loads(value) if span.attributes.get(f"{prefix}.mime_type") == _JSON_MIME else None
    if not isinstance(parsed, dict):
        parsed = _json_object(value)
    return parsed is not None and _from_json(parsed, keys) is None


def _entity_text(span: Span, key: str, keys: Sequence[str]) -> str | None:
    """OpenLLMetry ``traceloop.entity.input|output``: JSON when it parses, else the text."""
    value = span.attributes.get(key)
    parsed = _loads(value)
    if parsed is not None and not isinstance(parsed, str | dict):
        return None
    return _from_json(parsed, keys) if parsed is not None else _text(value)


def _question(root: Span, llms: Sequence[Span], mapping: TraceMapping) -> str | None:
    found = _value_text(root, "input", mapping.question_json_keys)
    if found is not None:
        return found
    for span in llms:
        users = [text for role, text, _ in _messages(span, "input") if role == "user" and text]
        if users:
            return users[-1]
    return _entity_text(root, "traceloop.entity.input", mapping.question_json_keys)


def _answer(
    root: Span, llms: Sequence[Span], ordered: Sequence[Span], mapping: TraceMapping
) -> Answer | None:
    text = _value_text(root, "output", mapping.answer_json_keys)
    last = _messages(llms[-1], "output") if llms else []
    if text is None and last:
        text = next((t for _, t, _ in reversed(last) if t), None)
    if text is None:
        text = _entity_text(root, "traceloop.entity.output", mapping.answer_json_keys)
    refused = _refused(ordered, llms, last, mapping)
    citations = _citations(ordered, mapping)
    if text is None and refused is None and not citations:
        return None
    return Answer(text=text, refused=refused, citations=citations)


def _ids(value: Any) -> tuple[str, ...]:
    """Passage ids from a string array, a JSON array string, or one id (string or integer);
    blank items, booleans and other types are left out."""
    if isinstance(value, str):
        parsed = _loads(value) if value.lstrip()[:1] == "[" else value
        value = parsed if isinstance(parsed, list) else [value]
    elif isinstance(value, int) and not isinstance(value, bool):
        value = [value]
    if not isinstance(value, list | tuple):
        return ()
    ids = [str(item) for item in value if isinstance(item, str | int) and item is not True
           and item is not False and str(item).strip()]  # fmt: skip
    return tuple(dict.fromkeys(ids))


def _metadata_value(ordered: Sequence[Span], key: str) -> Any:
    """``key`` of the first OpenInference ``metadata`` JSON that has it, else the first
    ``langfuse.trace.metadata.<key>`` attribute; ``None`` when neither is set."""
    for span in ordered:
        meta = _loads(span.attributes.get("metadata"))
        if isinstance(meta, dict) and meta.get(key) is not None:
            return meta[key]
    for span in ordered:
        found = span.attributes.get(f"langfuse.trace.metadata.{key}")
        if found is not None:
            return found
    return None


def _citations(ordered: Sequence[Span], mapping: TraceMapping) -> tuple[str, ...]:
    if mapping.citations_attribute is not None:
        for span in ordered:
            ids = _ids(span.attributes.get(mapping.citations_attribute))
            if ids:
                return ids
    if mapping.citations_metadata_key is not None:
        return _ids(_metadata_value(ordered, mapping.citations_metadata_key))
    return ()


#: One chat message: (role, text of its text parts or None, [(part type, finish reason)]).
Message = tuple[str, str | None, list[str]]


def _messages(span: Span, direction: Literal["input", "output"]) -> list[Message]:
    """A span's input or output messages, from the first shape that has any."""
    attrs = span.attributes
    current = _loads(attrs.get(f"gen_ai.{direction}.messages"))
    if isinstance(current, list) and current:
        return [_genai_message(m) for m in current if isinstance(m, dict)]
    indexed = _indexed(attrs, f"llm.{direction}_messages.", "message.")
    if indexed:
        return [(str(m.get("role", "")), _text(m.get("content")), []) for m in indexed]
    old = "prompt" if direction == "input" else "completion"
    indexed = _indexed(attrs, f"gen_ai.{old}.", "")
    if indexed:
        role = "user" if direction == "input" else "assistant"
        return [
            (str(m.get("role", role)), _text(m.get("content")), _finish(m.get("finish_reason")))
            for m in indexed
        ]
    for event in span.events:  # semconv <= 1.27: gen_ai.content.prompt|completion events
        if event.name == f"gen_ai.content.{old}":
            body = _loads(event.attributes.get(f"gen_ai.{old}"))
            if isinstance(body, list):
                return [
                    (str(m.get("role", "")), _text(m.get("content")), [])
                    for m in body
                    if isinstance(m, dict)
                ]
    return []


def _finish(value: Any) -> list[str]:
    return [f"finish:{value}"] if isinstance(value, str) else []


def _genai_message(message: dict[str, Any]) -> Message:
    """GenAI >= 1.37 message: ``{role, parts: [{type, content}], finish_reason}``."""
    texts, kinds = [], _finish(message.get("finish_reason"))
    parts = message.get("parts")
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict):
            kinds.append(str(part.get("type", "")))
            if part.get("type") == "text" and isinstance(part.get("content"), str):
                texts.append(part["content"])
    return str(message.get("role", "")), _text("".join(texts)), kinds


def _indexed(attrs: Mapping[str, Any], prefix: str, inner: str) -> list[dict[str, Any]]:
    """Flattened list attributes ``{prefix}{i}.{inner}{field}`` as a list of dicts by ``i``."""
    keys = [key for key in attrs if key.startswith(prefix)]  # most spans have none
    if not keys:
        return []
    rows: dict[int, dict[str, Any]] = {}
    for key in keys:
        index, _, rest = key[len(prefix) :].partition(".")
        if not index.isdigit() or not rest.startswith(inner):
            continue
        rows.setdefault(int(index), {})[rest[len(inner) :]] = attrs[key]
    return [rows[i] for i in sorted(rows)]


@lru_cache(maxsize=64)
def _upper(values: tuple[str, ...]) -> frozenset[str]:
    return frozenset(value.upper() for value in values)


def _refused(
    ordered: Sequence[Span], llms: Sequence[Span], last: Sequence[Message], mapping: TraceMapping
) -> bool | None:
    if mapping.refusal_attribute is not None:
        for span in ordered:
            flag = span.attributes.get(mapping.refusal_attribute)
            if isinstance(flag, bool):
                return flag
    blocked = _upper(mapping.guardrail_block_values)
    for span in ordered:
        result = span.attributes.get("gen_ai.guardrail.result.value")
        if isinstance(result, str) and result.upper() in blocked:
            return True
        for e in span.events:
            if e.name == "gen_ai.guardrail.result":
                result = e.attributes.get("gen_ai.guardrail.result.value")
                if isinstance(result, str) and result.upper() in blocked:
                    return True
    if llms:
        reasons = llms[-1].attributes.get("gen_ai.response.finish_reasons")
        reasons = [reasons] if isinstance(reasons, str) else reasons
        if isinstance(reasons, list) and {"content_filter", "refusal"} & set(map(str, reasons)):
            return True
    kinds = {kind for _, _, message_kinds in last for kind in message_kinds}
    if {"finish:content_filter", "finish:refusal", "refusal"} & kinds:
        return True
    return None


# --- retrieval ----------------------------------------------------------------------------

#: One retrieved passage before ranking: (id, score or None).
Hit = tuple[str, float | None]


def _retrieval(
    retrievers: Sequence[Span],
    rerankers: Sequence[Span],
    llms: Sequence[Span],
    mapping: TraceMapping,
    content_index: Mapping[str, str],
) -> tuple[Retrieval | None, str | None, str | None]:
    """The retrieval, the rewritten query, and why documents the spans carry were not read
    (a drop reason of :attr:`TraceEvent.dropped`, ``None``: all read)."""
    if not retrievers:
        return None, None, None
    pid = _passage_id(mapping, content_index)
    if mapping.retriever_policy == "fused" and len(retrievers) > 1:
        chosen = max(retrievers, key=lambda s: s.end_unix_nano)
        each = [_hits(span, pid) for span in retrievers]
        hits = _fuse([found for found, _ in each], mapping.rrf_k)
        unread = next((why for _, why in each if why is not None), None)
        name, latency = "fused", None
    else:
        chosen = _last_before_llm(retrievers, llms)
        hits, unread = _hits(chosen, pid)
        name = _retriever_name(chosen)
        latency = max(chosen.end_unix_nano - chosen.start_unix_nano, 0) / 1e6
    rewritten = _value_text(chosen, "input", mapping.question_json_keys) or _text(
        chosen.attributes.get("gen_ai.retrieval.query.text")
    )
    if rerankers:
        reranker = rerankers[-1]
        reranked, why = _documents(reranker.attributes, "reranker.output_documents.", pid)
        if reranked:
            hits, unread = reranked, why
        rewritten = rewritten or _text(reranker.attributes.get("reranker.query"))
    # the passages as dicts: the Retrieval's constructor validates them with it, in one pass
    # (RetrievedPassage records built first cost a second pass: ~0.08 us each, a Python
    # call per record instance given to pydantic)
    results: Any = [
        {"id": passage, "score": score, "rank": rank}
        for rank, (passage, score) in enumerate(_dedupe(hits), start=1)
    ]
    return Retrieval(retriever=name, latency_ms=latency, results=results), rewritten, unread


def _last_before_llm(retrievers: Sequence[Span], llms: Sequence[Span]) -> Span:
    by_end = sorted(retrievers, key=lambda s: s.end_unix_nano)
    if llms:
        llm_start = max(llm.start_unix_nano for llm in llms)
        before = [s for s in by_end if s.end_unix_nano <= llm_start]
        if before:
            return before[-1]
    return by_end[-1]


def _retriever_name(span: Span) -> str:
    for key in ("gen_ai.data_source.id", "db.system.name", "db.system"):
        name = _text(span.attributes.get(key))
        if name is not None:
            return name
    return span.name


def _passage_id(
    mapping: TraceMapping, content_index: Mapping[str, str]
) -> Callable[[Any, Any, Any], str | None]:
    """``pid(id, metadata, content)``: the passage id by the precedence in the docstring."""

    def pid(raw_id: Any, metadata: Any, content: Any) -> str | None:
        if isinstance(raw_id, str | int) and not isinstance(raw_id, bool) and str(raw_id).strip():
            return str(raw_id)
        meta = _loads(metadata)
        if isinstance(meta, dict):
            for key in mapping.passage_id_metadata_keys:
                found = meta.get(key)
                if isinstance(found, str | int) and not isinstance(found, bool):
                    if str(found).strip():
                        return str(found)
        if isinstance(content, str) and content.strip():
            key = content_key(content)
            return content_index.get(key, key)
        return None

    return pid


def _score(value: Any) -> tuple[float | None, str | None]:
    """A document's score and, when one was sent but cannot be used, why (a drop reason).

    Returns:
        ``(score, None)`` for a finite number; ``(None, None)`` when there is none (absent or
        null: LangChain writes none); ``(None, "wrong_type")`` for any other type: a string,
        ``"12.3"`` as much as ``"high"`` (the data contract's score is a number, as the JSON
        event path reads it, and the GenAI documents schema's ``score: number``), a boolean,
        an array; ``(None, "invalid_value")`` for NaN, an infinity or an integer too large
        for a float. The passage is kept without its score and the event counts
        ``retrieval.results`` with that reason (``fields_dropped``).
    """
    if value is None:
        return None, None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None, "wrong_type"
    try:
        score = float(value)
    except OverflowError:  # an integer past 1.8e308, e.g. from a JSON string of documents
        return None, "invalid_value"
    if score == score and abs(score) != float("inf"):
        return score, None
    return None, "invalid_value"


def _documents(
    attrs: Mapping[str, Any], prefix: str, pid: Callable[..., str | None]
) -> tuple[list[Hit], str | None]:
    """OpenInference's flattened documents under ``prefix``, and why one was not read whole,
    the first problem in rank order: ``missing_field`` (neither an id, a metadata id nor
    content: the document is left out) or a score's reason (:func:`_score`: the document is
    kept without it); ``None``: every one read."""
    hits: list[Hit] = []
    unread = None
    for doc in _indexed(attrs, prefix, "document."):
        passage = pid(doc.get("id"), doc.get("metadata"), doc.get("content"))
        if passage is None:
            unread = unread or "missing_field"
            continue
        score, bad = _score(doc.get("score"))
        hits.append((passage, score))
        unread = unread or bad
    return hits, unread


def _genai_documents(value: Any, pid: Callable[..., str | None]) -> tuple[list[Hit], str | None]:
    """A ``gen_ai.retrieval.documents`` value (a list of ``{id, score}`` objects, structured
    or as a JSON string) as hits in list order, and why some were not read: ``wrong_type``
    (not a list, not JSON, an item not an object) or ``missing_field`` (an object without
    an id, a metadata id or content), or a score's reason (:func:`_score`: the document is
    kept without its score); the first problem in list order; ``None`` when every one was
    read."""
    documents = _loads(value)
    if not isinstance(documents, list):
        return [], "wrong_type"
    hits: list[Hit] = []
    unread = None
    for doc in documents:
        if not isinstance(doc, dict):
            unread = unread or "wrong_type"
            continue
        passage = pid(doc.get("id"), doc.get("metadata"), doc.get("content"))
        if passage is None:
            unread = unread or "missing_field"
            continue
        score, bad = _score(doc.get("score"))
        hits.append((passage, score))
        unread = unread or bad
    return hits, unread


def _hits(span: Span, pid: Callable[..., str | None]) -> tuple[list[Hit], str | None]:
    """One retriever span's passages in rank order, from the first shape that has any:
    OpenInference ``retrieval.documents.{i}.document.*``; the GenAI
    ``gen_ai.retrieval.documents`` attribute of the span, else of its events (any event
    name, in event order: the conventions allow the attribute on events and name none;
    producers send an event named ``gen_ai.retrieval.documents``); OpenLLMetry
    ``db.query.result`` events. Also why documents it carries were not read (a drop reason:
    :func:`_genai_documents`; an event named ``gen_ai.retrieval.documents`` without that
    attribute is ``missing_field``): of the shape read, else the first unread one."""
    hits, unread = _documents(span.attributes, OPENINFERENCE_DOCUMENTS, pid)
    if hits:
        return hits, unread
    first = unread
    if GENAI_DOCUMENTS in span.attributes:
        hits, unread = _genai_documents(span.attributes[GENAI_DOCUMENTS], pid)
        if hits:
            return hits, unread
        first = first or unread
    unread = None
    for event in span.events:
        if GENAI_DOCUMENTS in event.attributes:
            found, why = _genai_documents(event.attributes[GENAI_DOCUMENTS], pid)
            hits += found
            unread = unread or why
        elif event.name == GENAI_DOCUMENTS:
            unread = unread or "missing_field"
    if hits:
        return hits, unread
    first = first or unread
    lost = None
    for event in span.events:
        if event.name == "db.query.result":
            a = event.attributes
            passage = pid(
                a.get("db.query.result.id"),
                a.get("db.query.result.metadata"),
                a.get("db.query.result.document"),
            )
            if passage is None:
                lost = lost or "missing_field"
                continue
            score, bad = _score(a.get("db.query.result.score"))
            hits.append((passage, score))
            lost = lost or bad
    return hits, (lost if hits else first or lost)


def _fuse(lists: Iterable[list[Hit]], k: int) -> list[Hit]:
    """Reciprocal rank fusion: ``sum over lists of 1 / (k + rank)``, best first, ties in
    first-seen order (Cormack, Clarke, Buettcher 2009)."""
    fused: dict[str, float] = {}
    for hits in lists:
        for rank, (passage, _) in enumerate(_dedupe(hits), start=1):
            fused[passage] = fused.get(passage, 0.0) + 1.0 / (k + rank)
    order = sorted(fused, key=lambda p: -fused[p])  # sorted() is stable: ties keep order
    return [(p, fused[p]) for p in order]


def _dedupe(hits: Iterable[Hit]) -> list[Hit]:
    """Keep each passage's first (best-ranked) occurrence."""
    seen: set[str] = set()
    out = []
    for passage, score in hits:
        if passage not in seen:
            seen.add(passage)
            out.append((passage, score))
    return out


# --- user, time ---------------------------------------------------------------------------


def _feedback(ordered: Sequence[Span], key: str | None) -> tuple[Feedback | None, str | None]:
    """The feedback of the first span (root first) holding ``key``, and why its value was
    not read (``wrong_type``: not a number, a boolean or a numeric string included, as the
    data contract's rating is a number; ``invalid_value``: not finite); ``(None, None)``
    without the key."""
    if key is None:
        return None, None
    for span in ordered:
        if key not in span.attributes:
            continue
        value = span.attributes[key]
        if isinstance(value, bool) or not isinstance(value, int | float):
            return None, "wrong_type"
        if not math.isfinite(value):
            return None, "invalid_value"
        return Feedback(rating=float(value)), None
    return None, None


def _string_attr(ordered: Sequence[Span], key: str | None) -> str | None:
    if key is None:
        return None
    for span in ordered:
        found = span.attributes.get(key)
        if isinstance(found, str | int) and not isinstance(found, bool):
            return str(found)
    return None


def _user(ordered: Sequence[Span], mapping: TraceMapping) -> User | None:
    user_id = None
    for key in ("user.id", "enduser.id", "enduser.pseudo.id"):
        user_id = _string_attr(ordered, key)
        if user_id is not None:
            break
    role = None
    for span in ordered:
        roles = span.attributes.get("user.roles")
        if isinstance(roles, list) and roles and isinstance(roles[0], str):
            role = roles[0]
            break
        if isinstance(roles, str) and roles:
            role = roles
            break
    role = role or _string_attr(ordered, "enduser.role")
    if role is None and mapping.role_metadata_key is not None:
        found = _metadata_value(ordered, mapping.role_metadata_key)
        if isinstance(found, list) and found:  # a list of roles: the first, as user.roles
            found = found[0]
        role = found if isinstance(found, str) and found.strip() else None
    tenant = _string_attr(ordered, mapping.tenant_attribute)
    if user_id is None and role is None and tenant is None:
        return None
    return User(id=user_id, role=role, tenant=tenant)


def _timestamp(ordered: Sequence[Span]) -> datetime:
    """The root span's start (else the earliest start that is set), as aware UTC."""
    starts = [ordered[0].start_unix_nano] + [s.start_unix_nano for s in ordered[1:]]
    start = next((ns for ns in starts if ns > 0), 0)
    if start == 0:
        raise TraceMappingError("invalid_value", "no span has a start time")
    return _EPOCH + timedelta(microseconds=start // 1000)
