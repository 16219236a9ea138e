"""Raw message bytes -> :class:`~service.events.QueryLogEvent`, or a bounded reason code.

Checks run in this order, and the first failure decides the reason:

1. ``tombstone``: ``value is None`` (a Kafka delete marker).
2. ``too_large``: ``len(value) > max_event_bytes``, checked before any decoding.
3. ``not_utf8``: the bytes are not UTF-8. A leading UTF-8 byte-order mark is ignored.
4. ``not_json``: not one RFC 8259 JSON text; also nesting deeper than Python's recursion
   limit and integers longer than 4,300 digits. Duplicate keys keep the last value. The
   ``NaN``/``Infinity``/``-Infinity`` literals that Python and numpy producers emit are parsed
   (harmless in ignored fields), and any schema field that reads one rejects it as
   ``invalid_value`` naming the field, which says more than ``not_json`` would. A
   ``\\ud800``-style escape of a lone UTF-16 surrogate (JavaScript producers that cut a string
   inside an emoji) is replaced by U+FFFD, not rejected.
5. ``not_object``: valid JSON whose top level is not an object.
6. ``missing_field``: a required field (``event_id``, ``timestamp``, ``question``, or a
   result's ``id``) is absent or ``null``, after trying its aliases (:class:`FieldMapping`).
7. ``wrong_type``: a field has the wrong JSON type (detail names the expected type).
8. ``invalid_value``: right type, bad value (blank question or id, impossible or
   out-of-range timestamp, negative latency, rank < 1, non-finite number).

Records left out: :func:`decode_batch` with ``records=False`` (a pipeline none of whose
stages reads ``user``, ``retrieval``, ``answer`` or ``feedback``, see
:attr:`service.pipeline.Pipeline.reads_records`) gives each event with those four fields
``None``, and never builds them: msgspec skips them as it skips unknown keys, which saves
the most costly part of a decode (the passages: 5-6 of 8 µs a production-shaped event on
this machine). The dead letters are the same as with ``records=True`` (only the required
fields dead-letter an event, and every other check is the same), and so are the other
fields; what changes is that a problem inside one of those four fields is not looked for,
so it is not counted in :func:`collect_dropped_fields` either (the field is not read, so
nothing of it is dropped). ``tests/consumers/test_decoding_fuzz.py`` checks both modes
against each other on every input.

A :class:`~consumers.base.UndecodableRecord` (a record of a Kafka record batch the consumer
could not decode, handed out by the source so it is not lost) is dead-lettered as
``undecodable_batch`` with the source's detail before any of these checks. A
:class:`~consumers.base.BlankLine` (a JSONL input's blank line) gets the reason
``blank_line``: not a dead letter, the engine takes it out of the dead letters and counts it
as a blank line (:data:`~consumers.base.BLANK_LINE`).

A detail names the field path (``retrieval.results[3].rank``), the expected type and sizes;
it never echoes content from the message, which may hold personal data.

Only the required fields (``event_id``, ``timestamp``, ``question``) dead-letter an event.
A problem (6-8) in an optional field keeps the event and its question: the field is dropped
(:data:`service.events.OPTIONAL_FIELD_PATHS`: the optional top-level field, or the field of
its record, ``feedback.rating``; any bad result drops ``retrieval.results``) and counted by
``(field, reason)`` into the dict of an enclosing :func:`collect_dropped_fields` (the engine
turns it into ``goldwatch_event_fields_dropped_total``). Every path gives the same result:
the msgspec fast path and pydantic-core's ``validate_json`` both reject such an event, and
the slow path drops the field.

Speed: an event whose bytes hold a ``"question"`` key is first decoded by msgspec straight
into the event's records (one pass, no Python dict; about 3x cheaper than pydantic-core on
a 1 kB event). msgspec knows the shapes and bounds but not goldwatch's own rules, so the top
level is read as plain values and ``event_id``, ``timestamp`` and ``question`` then go
through the very validators pydantic runs (:func:`service.events.parse_timestamp` ...). Any
doubt (msgspec rejects, an identifier is an integer, non-ASCII bytes that are not UTF-8, a
run of over 4,300 digits or nesting that msgspec skips but the other parsers refuse, a rule
fails) hands the message to pydantic-core's own ``validate_json``; if that fails too,
the slow path runs: ``json.loads``, alias mapping, validation, and error classification. A
fast result is kept unless an alias could still fill an absent ``answer`` or
``retrieval.results``. All paths give the same result for every input
(tests/consumers/test_decoding_fuzz.py checks this).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import partial
from typing import Any, NoReturn

import msgspec
from pydantic import ValidationError
from pydantic_core import from_json

from consumers.base import (
    BLANK_LINE,
    UNDECODABLE_BATCH,
    BlankLine,
    DeadLetter,
    RawMessage,
    UndecodableRecord,
)
from service.errors import GoldwatchError
from service.events import (
    EVENT_FIELDS,
    MAX_EVENT_ID_CHARS,
    OPTIONAL_FIELD_PATHS,
    REQUIRED_FIELDS,
    TIMESTAMP_EXPECTED,
    Answer,
    Feedback,
    FieldMapping,
    QueryLogEvent,
    Retrieval,
    TraceId,
    User,
    event_id_value,
    parse_timestamp,
    validate_event_json,
)

#: Every reason code :func:`decode` can raise, in check order (pre-initialise metric labels).
REASONS: tuple[str, ...] = (
    "tombstone", "too_large", "not_utf8", "not_json", "not_object",
    "missing_field", "wrong_type", "invalid_value",
)  # fmt: skip

#: Reasons an optional field is dropped for (``goldwatch_event_fields_dropped_total``).
DROP_REASONS: tuple[str, ...] = ("missing_field", "wrong_type", "invalid_value")


class DroppedFields(dict[tuple[str, str], int]):
    """``{(field path, reason): n}`` of the fields dropped in a :func:`collect_dropped_fields`
    block, and which event each drop belongs to, so a caller counts only the events it keeps
    (:meth:`kept`: the dedup stage drops an event sent again, whose fields were counted with
    its first copy; trial 13 counted three drops for one event sent three times)."""

    def __init__(self) -> None:
        super().__init__()
        #: ``id(event)`` -> (the event, its drops): the event is held so its id stays its own
        self.by_event: dict[int, tuple[Any, list[tuple[str, str]]]] = {}

    def note(self, event: Any, drops: Iterable[tuple[str, str]]) -> None:
        """Count ``drops`` (``(field path, reason)`` each) as dropped from ``event``."""
        held = self.by_event.setdefault(id(event), (event, []))[1]
        for key in drops:
            self[key] = self.get(key, 0) + 1
            held.append(key)

    def kept(self, events: Iterable[Any]) -> dict[tuple[str, str], int]:
        """The drops of ``events`` alone (identity; each counted once): ``{(field, reason):
        n}``, what was dropped from the events a caller kept."""
        counts: dict[tuple[str, str], int] = {}
        by_event = self.by_event
        for event in {id(event): event for event in events}.values():
            found = by_event.get(id(event))
            if found is not None and found[0] is event:
                for key in found[1]:
                    counts[key] = counts.get(key, 0) + 1
        return counts


#: The :class:`DroppedFields` of the enclosing :func:`collect_dropped_fields`.
_DROPS: ContextVar[DroppedFields | None] = ContextVar("dropped_fields", default=None)


@contextmanager
def collect_dropped_fields() -> Iterator[DroppedFields]:
    """Count the optional fields decoded in this block dropped: ``{(field, reason): n}``,
    ``field`` in :data:`service.events.OPTIONAL_FIELD_PATHS`, ``reason`` in
    :data:`DROP_REASONS`, with the event each was dropped from
    (:attr:`DroppedFields.by_event`). Outside such a block drops are not counted (the events
    still keep).
    """
    drops = DroppedFields()
    token = _DROPS.set(drops)
    try:
        yield drops
    finally:
        _DROPS.reset(token)


def note_dropped_fields(event: QueryLogEvent, drops: Iterable[tuple[str, str]]) -> None:
    """Count ``drops`` as dropped from ``event`` in the enclosing
    :func:`collect_dropped_fields` (none outside one): for events built elsewhere than the
    decoder, e.g. from a trace (:attr:`service.traces.mapping.TraceEvent.dropped`)."""
    counts = _DROPS.get()
    if counts is not None:
        counts.note(event, drops)


_BOM = "\ufeff"
_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
_EXPECTED = {  # field name -> the JSON type(s) it takes, for wrong_type details
    "event_id": "string or integer", "id": "string or integer", "timestamp": TIMESTAMP_EXPECTED,
    "citations": "list of strings or integers", "results": "list of objects",
    "user": "object or null", "retrieval": "object or null", "feedback": "object or null",
    "answer": "object, string or null", "refused": "boolean or null", "rank": "integer or null",
    "latency_ms": "number or null", "score": "number or null", "rating": "number or null",
    "trace_id": "string or null",
}  # fmt: skip
_CONSTRAINTS = {
    "finite_number": "must be a finite number", "string_pattern_mismatch": "must not be blank",
    "string_too_short": "too short", "string_too_long": "too long",
}  # fmt: skip
_JSON_KINDS = {list: "array", str: "string", int: "number", float: "number", bool: "boolean"}


class _Envelope(msgspec.Struct, frozen=True, gc=False):
    """The top level of an event as msgspec reads it: the three fields with goldwatch's own
    rules as plain JSON values, the nested records as the event's own msgspec Structs."""

    event_id: str | int
    timestamp: str | int | float
    question: str
    user: User | None = None
    channel: str | None = None
    retrieval: Retrieval | None = None
    answer: Answer | None = None
    feedback: Feedback | None = None
    trace_id: TraceId | None = None


_read_envelope = msgspec.json.Decoder(_Envelope).decode


class _Bare(msgspec.Struct, frozen=True, gc=False):
    """:class:`_Envelope` without the four records (``records=False``): msgspec skips their
    values as it skips unknown keys, building nothing."""

    event_id: str | int
    timestamp: str | int | float
    question: str
    channel: str | None = None
    trace_id: TraceId | None = None


_read_bare = msgspec.json.Decoder(_Bare).decode
#: The top-level fields ``records=False`` leaves out (``None``), and the first part of the
#: paths in :data:`service.events.OPTIONAL_FIELD_PATHS` whose drops it does not count.
RECORD_FIELDS: tuple[str, ...] = ("user", "retrieval", "answer", "feedback")
# RecursionError: nesting deeper than the interpreter's recursion limit, even in a field
# msgspec skips; json.loads raises it too, which the slow path reports as not_json.
_MSGSPEC_ERRORS = (msgspec.ValidationError, msgspec.DecodeError, RecursionError)
#: pydantic-core's parser refuses a JSON integer of more than 4,300 digits ("number out of
#: range", whatever ``sys.get_int_max_str_digits()`` says) and json.loads does by default;
#: msgspec skips one in an ignored field.
_MAX_INT_DIGITS = 4300
_STRIDE = _MAX_INT_DIGITS // 2  # a longer run of digits holds two consecutive multiples
_DIGIT_PAIR = re.compile(rb"[0-9][0-9]")
_LONG_DIGITS = re.compile(rb"(?<![0-9])[0-9]{%d}" % (_MAX_INT_DIGITS + 1))  # linear: run starts
_new_event = object.__new__
_set = object.__setattr__


def _event_setters() -> tuple[Any, ...]:
    """``(event_id, timestamp, question, user, channel, retrieval, answer, feedback,
    trace_id)`` slot setters of :class:`QueryLogEvent` (its descriptors' ``__set__``: about
    a third cheaper than ``object.__setattr__`` by name), or setters by name should the
    slots ever differ from :data:`~service.events.EVENT_FIELDS`."""
    if getattr(QueryLogEvent, "__slots__", None) == EVENT_FIELDS:
        return tuple(QueryLogEvent.__dict__[name].__set__ for name in EVENT_FIELDS)
    return tuple(partial(_set_named, name=name) for name in EVENT_FIELDS)


def _set_named(event: QueryLogEvent, value: Any, name: str) -> None:
    _set(event, name, value)


(_set_event_id, _set_timestamp, _set_question, _set_user, _set_channel, _set_retrieval,
 _set_answer, _set_feedback, _set_trace_id) = _event_setters()  # fmt: skip


def _fast(value: bytes, records: bool = True) -> QueryLogEvent | None:
    """Decode canonical event bytes with msgspec, or ``None`` when any check is in doubt.

    ``None`` never means "invalid": the caller then asks pydantic, which decides. A returned
    event equals what ``validate_event_json(value)`` returns, or, when an ignored value nests
    deeper than pydantic-core's limit (about 200), what the slow path returns (checked by
    fuzzing); with ``records=False``, that event with :data:`RECORD_FIELDS` ``None``.
    """
    if not value.isascii():
        try:  # msgspec checks UTF-8 only in the fields it reads, not in the ones it skips
            value.decode()
        except UnicodeDecodeError:
            return None
    if len(value) > _MAX_INT_DIGITS and _long_digit_run(value):
        return None
    try:
        top = _read_envelope(value) if records else _read_bare(value)
        event_id = top.event_id
        # event_id_value's rule, inline for the common id (a short string, not blank)
        if type(event_id) is not str or not 0 < len(event_id) <= MAX_EVENT_ID_CHARS:
            event_id = event_id_value(event_id)  # raises, or gives an integer's text
        elif event_id.isspace():
            return None  # blank: pydantic names the problem
        stamp = parse_timestamp(top.timestamp)
    except _MSGSPEC_ERRORS:
        return None
    except ValueError:  # PydanticCustomError; str() of an int over 4,300 digits
        return None
    question = top.question
    if not question or question.isspace():  # isspace() covers every char regex \s matches
        return None
    event = _new_event(QueryLogEvent)  # the dataclass without re-validating its fields
    _set_event_id(event, event_id)
    _set_timestamp(event, stamp)
    _set_question(event, question)
    _set_channel(event, top.channel)
    _set_trace_id(event, top.trace_id)
    if isinstance(top, _Envelope):  # decoded with its records
        _set_user(event, top.user)
        _set_retrieval(event, top.retrieval)
        _set_answer(event, top.answer)
        _set_feedback(event, top.feedback)
    else:
        _set_user(event, None)
        _set_retrieval(event, None)
        _set_answer(event, None)
        _set_feedback(event, None)
    return event


def _without_records(event: QueryLogEvent) -> QueryLogEvent:
    """``event`` with :data:`RECORD_FIELDS` ``None`` (a copy; the same event when already so)."""
    if not (event.user or event.retrieval or event.answer or event.feedback):
        return event
    bare = _new_event(QueryLogEvent)
    for name in EVENT_FIELDS:
        _set(bare, name, None if name in RECORD_FIELDS else getattr(event, name))
    return bare


def _long_digit_run(value: bytes) -> bool:
    """True if ``value`` holds a run of more than 4,300 ASCII digits: a JSON integer that
    pydantic-core refuses (or a string that only looks like one; pydantic then answers).

    Such a run covers two consecutive multiples of :data:`_STRIDE`, and all of the bytes
    between them, so only that rare sight (digits both at k * 2,150 and (k + 1) * 2,150, and
    between) costs a full scan: 0.2 us on a 5 kB event otherwise, against 21 us for the scan.
    """
    sampled = value[::_STRIDE]
    pair = _DIGIT_PAIR.search(sampled)
    while pair is not None:
        at = pair.start()
        if value[at * _STRIDE : (at + 1) * _STRIDE + 1].isdigit():
            return _LONG_DIGITS.search(value) is not None
        pair = _DIGIT_PAIR.search(sampled, at + 1)  # pairs may overlap: "123" holds two
    return False


class DecodeError(GoldwatchError):
    """A message that cannot become an event.

    Attributes:
        reason: one of :data:`REASONS` (a bounded metric label).
        detail: human-readable problem naming fields, expected types and sizes only.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


def decode(message: RawMessage, mapping: FieldMapping, max_event_bytes: int) -> QueryLogEvent:
    """Decode one raw message into a validated event.

    Args:
        message: the raw message; only ``message.value`` is read.
        mapping: alias rules for non-canonical spellings.
        max_event_bytes: largest accepted ``value`` in bytes (>= 1).

    Raises:
        DecodeError: with ``reason`` in :data:`REASONS` (see the module docstring),
            ``undecodable_batch`` for a :class:`~consumers.base.UndecodableRecord`, or
            ``blank_line`` for a :class:`~consumers.base.BlankLine` (not a dead letter: the
            engine counts it as a blank line).
        ValueError: ``max_event_bytes < 1`` (a programming error, not a message problem).

    >>> from consumers.base import Origin
    >>> raw = RawMessage(b'{"id": 7, "ts": 1795946400, "query": "hi"}', Origin(file="x", line=1))
    >>> decode(raw, FieldMapping(), 1_000_000).event_id
    '7'
    """
    if max_event_bytes < 1:
        raise ValueError(f"max_event_bytes must be >= 1, got {max_event_bytes}")
    return _decode(message, mapping, mapping.optional_guards, max_event_bytes)


def _decode(
    message: RawMessage, mapping: FieldMapping, guards: tuple[bytes, ...], max_event_bytes: int
) -> QueryLogEvent:
    """:func:`decode` with the mapping's alias guards looked up once by the caller (a
    pydantic private attribute costs about a microsecond per read)."""
    value = message.value
    if value is None:
        if isinstance(message, UndecodableRecord):  # value None: off the per-event fast path
            raise DecodeError(UNDECODABLE_BATCH, message.detail)
        if isinstance(message, BlankLine):  # not a dead letter: the engine counts it
            raise DecodeError(BLANK_LINE, "blank line (no data)")
        raise DecodeError("tombstone", "message value is null (tombstone)")
    size = len(value)
    if size > max_event_bytes:
        raise DecodeError("too_large", f"message is {size} bytes; limit is {max_event_bytes}")
    if b'"question"' not in value:
        return _decode_slow(value, mapping)  # aliased: a fast attempt would fail anyway
    event = _fast(value)
    if event is None:
        try:
            event = validate_event_json(value)
        except ValidationError:
            return _decode_slow(value, mapping)  # re-does the work and names the problem
    if _complete(event) or not _may_use_aliases(value, guards):
        return event
    return _decode_slow(value, mapping)


def decode_batch(
    messages: Iterable[RawMessage],
    mapping: FieldMapping,
    max_event_bytes: int,
    records: bool = True,
) -> tuple[list[tuple[RawMessage, QueryLogEvent]], list[DeadLetter]]:
    """Decode many messages; never raises for bad content.

    Args:
        records: build ``user``, ``retrieval``, ``answer`` and ``feedback``; ``False`` leaves
            them ``None`` and does not look into them (see the module docstring).

    Returns:
        ``(decoded, dead)``: ``(message, event)`` pairs and :class:`DeadLetter` records, each
        in input order; every input message lands in exactly one of the two lists (a
        :class:`~consumers.base.BlankLine` among the letters, reason ``blank_line``).

    Raises:
        ValueError: ``max_event_bytes < 1``.
    """
    if max_event_bytes < 1:
        raise ValueError(f"max_event_bytes must be >= 1, got {max_event_bytes}")
    if not records:
        return _decode_bare_batch(messages, mapping, max_event_bytes)
    decoded: list[tuple[RawMessage, QueryLogEvent]] = []
    dead: list[DeadLetter] = []
    guards = mapping.optional_guards
    fast, validate, append = _fast, validate_event_json, decoded.append
    event: QueryLogEvent | None
    for message in messages:
        value = message.value
        try:
            # the fast path of _decode, inlined: this loop runs once per event
            if value is None or len(value) > max_event_bytes or b'"question"' not in value:
                event = _decode(message, mapping, guards, max_event_bytes)
            else:
                event = fast(value)
                if event is None:
                    try:
                        event = validate(value)
                    except ValidationError:
                        event = _decode_slow(value, mapping)
                        append((message, event))
                        continue
                retrieval = event.retrieval
                if (
                    event.answer is None or retrieval is None or not retrieval.results
                ) and _may_use_aliases(value, guards):
                    event = _decode_slow(value, mapping)
        except DecodeError as error:
            dead.append(DeadLetter(message, error.reason, error.detail))
            continue
        append((message, event))
    return decoded, dead


def _decode_bare_batch(
    messages: Iterable[RawMessage], mapping: FieldMapping, max_event_bytes: int
) -> tuple[list[tuple[RawMessage, QueryLogEvent]], list[DeadLetter]]:
    """:func:`decode_batch` with ``records=False``: msgspec's bare envelope first; any doubt
    goes the full way (:func:`_decode`) and loses its records after, and the drops that way
    counts inside them are not passed on.

    Unlike the full path, no ``"question"`` key is looked for before msgspec is tried: an
    event without one fails msgspec (a required field) and goes the full way, which looks
    for it; one with it escaped (``"\\u0071uestion"``) that msgspec reads is the event the
    full way gives, since no alias applies where the canonical field is there, and aliases
    of the records do not matter here. The scan cost ~0.19 µs an event (~830-byte events,
    issue 22 item 3); an aliased event pays a failed msgspec pass (~1 µs) instead.
    """
    decoded: list[tuple[RawMessage, QueryLogEvent]] = []
    dead: list[DeadLetter] = []
    guards = mapping.optional_guards
    append, fast = decoded.append, _fast
    outer = _DROPS.get()
    with collect_dropped_fields() as drops:
        for message in messages:
            value = message.value
            if value is not None and len(value) <= max_event_bytes:
                event = fast(value, False)
                if event is not None:  # no alias can matter: they feed answer and results
                    append((message, event))
                    continue
            try:
                full = _decode(message, mapping, guards, max_event_bytes)
            except DecodeError as error:
                dead.append(DeadLetter(message, error.reason, error.detail))
                continue
            event = _without_records(full)
            found = drops.by_event.pop(id(full), None)
            if found is not None and outer is not None:  # passed on with the bare copy
                outer.note(event, [(path, reason) for path, reason in found[1]
                                   if path.split(".", 1)[0] not in RECORD_FIELDS])  # fmt: skip
            append((message, event))
    return decoded, dead


def _complete(event: QueryLogEvent) -> bool:
    """True when ``answer`` and ``retrieval.results`` are filled, so no alias can matter."""
    return (
        event.answer is not None and event.retrieval is not None and bool(event.retrieval.results)
    )


def _may_use_aliases(value: bytes, guards: tuple[bytes, ...]) -> bool:
    """True if an alias of ``answer``/``results`` may be present (a ``\\u``-escaped key too);
    ``guards`` is :attr:`FieldMapping.optional_guards`."""
    for guard in guards:
        if guard in value:
            return True
    return False


def _decode_slow(value: bytes, mapping: FieldMapping) -> QueryLogEvent:
    try:
        obj = from_json(value)  # same parser as the fast path: 2x faster than json.loads
        repair = False
    except ValueError:  # classify with the stdlib; it also takes BOMs and lone surrogates
        obj, repair = _parse_stdlib(value)
    if type(obj) is not dict:
        kind = "null" if obj is None else _JSON_KINDS.get(type(obj), "value")
        raise DecodeError("not_object", f"expected a JSON object, got {kind}")
    ignored: list[tuple[str, str]] = []  # drops of the alias mapping (string results)
    sources = _apply_mapping(obj, mapping, ignored)
    if repair:
        _repair_surrogates(obj)
    dropped: list[tuple[str, str]] = []
    try:
        event = QueryLogEvent.model_validate(obj)
    except ValidationError as error:
        errors = error.errors(include_url=False, include_input=False)
        if any(e["loc"][:1] == () or e["loc"][0] in REQUIRED_FIELDS for e in errors):
            _raise_classified(error, sources, mapping)
        dropped = _drop_fields(obj, errors)
        try:
            event = QueryLogEvent.model_validate(obj)
        except ValidationError as error:  # pragma: no cover - dropping leaves valid fields
            _raise_classified(error, sources, mapping)
    counts = _DROPS.get()
    if counts is not None and (dropped or ignored):
        counts.note(event, [*ignored, *dropped])
    return event


def _drop_fields(obj: dict[str, Any], errors: list[Any]) -> list[tuple[str, str]]:
    """Remove the optional field of each error from ``obj``; ``[(field path, reason)]``, one
    per field (its first error's reason)."""
    dropped: dict[str, str] = {}
    for error in errors:
        loc = error["loc"]
        top = str(loc[0])
        path = f"{top}.{loc[1]}" if len(loc) > 1 and isinstance(loc[1], str) else top
        if path not in OPTIONAL_FIELD_PATHS:  # a record's own spelling: drop the record
            path = top
        dropped.setdefault(path, _reason(str(error["type"])))
    for path in dropped:
        top, _, sub = path.partition(".")
        node = obj.get(top)
        if sub and type(node) is dict:
            node.pop(sub, None)
        else:
            obj.pop(top, None)
    return list(dropped.items())


def _reason(kind: str) -> str:
    """The reason code of a pydantic error type (as :func:`_raise_classified` decides it)."""
    if kind == "missing":
        return "missing_field"
    if kind == "wrong_type" or kind.endswith(("_type", "_parsing")) or kind == "int_from_float":
        return "wrong_type"
    return "invalid_value"


def _parse_stdlib(value: bytes) -> tuple[Any, bool]:
    """Return the parsed JSON and whether it may hold lone surrogates; DecodeError otherwise."""
    try:
        text = value.decode("utf-8")
    except UnicodeDecodeError as error:
        raise DecodeError("not_utf8", f"invalid UTF-8 at byte {error.start}") from None
    obj = _parse_json(text.removeprefix(_BOM))
    return obj, _SURROGATE_ESCAPE.search(text) is not None


def _parse_json(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        # json's messages end in "at" where it appends the position ("Invalid control
        # character at: line 1 column 5"); the detail says where in its own words
        problem = error.msg.split(":", 1)[0].removesuffix(" at")
        raise DecodeError(
            "not_json", f"invalid JSON: {problem} at line {error.lineno} column {error.colno}"
        ) from None
    except RecursionError:
        raise DecodeError("not_json", "invalid JSON: nesting too deep") from None
    except ValueError:  # int longer than sys.get_int_max_str_digits() (4,300)
        raise DecodeError("not_json", "invalid JSON: number too long") from None


def _repair_surrogates(obj: dict[str, Any]) -> None:
    """Replace lone surrogates by U+FFFD in every string under the canonical fields, and in
    the top-level keys (pydantic rejects a lone surrogate even in a key it then ignores)."""
    for key in [key for key in obj if _SURROGATE.search(key)]:
        obj.setdefault(_SURROGATE.sub("\ufffd", key), obj.pop(key))
    try:
        for key in EVENT_FIELDS:
            if key in obj:
                obj[key] = _replace_surrogates(obj[key])
    except RecursionError:
        raise DecodeError("not_json", "invalid JSON: nesting too deep") from None


def _replace_surrogates(node: Any) -> Any:
    if type(node) is str:
        return _SURROGATE.sub("\ufffd", node)
    if type(node) is dict:
        return {_SURROGATE.sub("\ufffd", k): _replace_surrogates(v) for k, v in node.items()}
    if type(node) is list:
        return [_replace_surrogates(item) for item in node]
    return node


def _lookup(obj: dict[str, Any], path: str) -> Any:
    """Return ``obj[path]``, else follow a dotted path into nested objects; ``None``: absent."""
    if path in obj:
        return obj[path]
    if "." not in path:
        return None
    node: Any = obj
    for key in path.split("."):
        if type(node) is not dict:
            return None
        node = node.get(key)
    return node


def _first(obj: dict[str, Any], canonical: str, aliases: tuple[str, ...]) -> tuple[Any, str]:
    """Return the canonical value if not null, else the first non-null alias, and its key."""
    value = obj.get(canonical)
    if value is not None:
        return value, canonical
    return _alias(obj, aliases)


def _alias(obj: dict[str, Any], aliases: tuple[str, ...]) -> tuple[Any, str]:
    """Return the first non-null alias value and its alias, or ``(None, "")``."""
    for alias in aliases:
        value = _lookup(obj, alias)
        if value is not None:
            return value, alias
    return None, ""


def _apply_mapping(
    obj: dict[str, Any], mapping: FieldMapping, ignored: list[tuple[str, str]]
) -> dict[str, str]:
    """Rewrite ``obj`` in place to canonical spellings; return ``{canonical: alias used}``.
    A drop of the results alias (:func:`_results_from_alias`) is appended to ``ignored``."""
    sources: dict[str, str] = {}
    for canonical in ("event_id", "timestamp", "question", "answer"):
        value, key = _first(obj, canonical, getattr(mapping, canonical))
        if value is None:
            obj.pop(canonical, None)
            continue
        if key != canonical:
            sources[canonical] = key
        obj[canonical] = {"text": value} if canonical == "answer" and type(value) is str else value
    retrieval = obj.get("retrieval")
    if retrieval is None or (type(retrieval) is dict and retrieval.get("results") is None):
        results, key = _alias(obj, mapping.results)
        if results is not None:
            sources["retrieval.results"] = key
            if type(results) is list:
                results = _results_from_alias(results, mapping, ignored)
            obj["retrieval"] = retrieval = {**(retrieval or {}), "results": results}
    if type(retrieval) is dict and type(retrieval.get("results")) is list:
        retrieval["results"] = [_passage(item, mapping) for item in retrieval["results"]]
    return sources


def _results_from_alias(
    items: list[Any], mapping: FieldMapping, ignored: list[tuple[str, str]]
) -> list[Any]:
    """Apply ``mapping.string_results`` to the string items of an aliased results list.

    Ignored string items (``"ignore"``: passage texts, not ids) are a drop of
    ``("retrieval.results", "wrong_type")``, appended to ``ignored`` once per event and
    counted with the event in the enclosing :func:`collect_dropped_fields` when it is built:
    a log of RAGAS-style ``contexts`` texts is then visible in ``dropped`` and
    ``goldwatch_event_fields_dropped_total`` instead of silently having no results.
    """
    if mapping.string_results == "ids":
        return [
            {"id": item, "rank": rank} if type(item) is str else item
            for rank, item in enumerate(items, start=1)
        ]
    kept = [item for item in items if type(item) is not str]
    if len(kept) < len(items):
        ignored.append(("retrieval.results", "wrong_type"))
    return kept


def _passage(item: Any, mapping: FieldMapping) -> Any:
    """Fill a result object's ``id`` from ``mapping.passage_id`` when it is absent or null."""
    if type(item) is not dict or item.get("id") is not None:
        return item
    value, _ = _first(item, "id", mapping.passage_id)
    return {**item, "id": value} if value is not None else item


def _raise_classified(
    error: ValidationError, sources: dict[str, str], mapping: FieldMapping
) -> NoReturn:
    """Turn the first pydantic error into a DecodeError; the detail names fields, never values."""
    errors = error.errors(include_url=False, include_input=False)
    first = errors[0]
    loc, kind = first["loc"], first["type"]
    where = f"'{_path(loc)}'"
    source = sources.get(_path(loc[:2]) if loc[:1] == ("retrieval",) else _path(loc[:1]))
    if source is not None:
        where += f" (read from '{source}')"
    more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
    if kind == "missing":
        aliases = getattr(mapping, str(loc[0]), ()) if len(loc) == 1 else mapping.passage_id
        tried = f" (aliases tried: {', '.join(aliases)})" if aliases else ""
        raise DecodeError("missing_field", f"missing required field {where}{tried}{more}")
    if kind == "wrong_type" or kind.endswith(("_type", "_parsing")) or kind == "int_from_float":
        raise DecodeError("wrong_type", f"field {where}: expected {_expected(loc, kind)}{more}")
    if kind == "invalid_value":
        problem = first["msg"]  # our own message template: fixed text, no input
    elif kind in ("greater_than_equal", "greater_than"):
        bound = first.get("ctx", {}).get("ge", first.get("ctx", {}).get("gt"))
        problem = f"must be {'>=' if kind == 'greater_than_equal' else '>'} {bound:g}"
    else:
        problem = _CONSTRAINTS.get(kind, f"invalid ({kind})")
    raise DecodeError("invalid_value", f"field {where}: {problem}{more}")


def _expected(loc: tuple[int | str, ...], kind: str) -> str:
    """Name the expected JSON type at ``loc`` (from the schema, never from the input)."""
    if loc and isinstance(loc[-1], int):
        return "object" if "results" in loc else "string or integer"
    name = str(loc[-1]) if loc else ""
    return _EXPECTED.get(name, kind.removesuffix("_type").removesuffix("_parsing"))


def _path(loc: tuple[int | str, ...]) -> str:
    """Render a pydantic location as ``retrieval.results[0].id``."""
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text
