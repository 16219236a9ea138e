"""The query-log event, schema v1 (design.md, "Data contracts"), and the field mapping.

An event is one Kafka message value or one JSONL line. Only ``event_id``, ``timestamp`` and
``question`` are required; every other field may be absent or ``null``. Unknown fields are
ignored (accepted, not stored). :func:`consumers.decoding.decode` turns bytes into a
:class:`QueryLogEvent`; this module only defines the shapes and their validation.

Type rules (chosen to surface producer bugs instead of guessing):

* Strings must be JSON strings and numbers JSON numbers (``"35"`` is not a latency);
  ``true``/``false`` are never numbers. Floats must be finite.
* Identifiers (``event_id``, ``user.id``, result ``id``, ``citations``) accept a string or a
  JSON integer; integers become their decimal string (``12345`` -> ``"12345"``), because
  auto-increment and vector-store ids are often numbers. Floats and booleans are rejected.
* ``timestamp`` accepts an RFC 3339 string (``Z``, ``+05:30`` or ``+0530`` offsets; a space
  instead of ``T``; fractional seconds; a leap second ``:60`` is read as ``:59.999999``) or a
  Unix epoch number. A string without an offset is read as UTC (``datetime.utcnow()``
  producers). Epoch units go by magnitude: ``< 1e11`` seconds, ``< 1e14`` milliseconds,
  ``< 1e17`` microseconds, else nanoseconds (so millisecond stamps before March 1973 would be
  misread). The result is always an aware UTC datetime between 1970-01-01 and 9999-12-31;
  outside that (e.g. Go's zero time ``0001-01-01``) is an ``invalid_value``.

Validation errors carry bounded codes (``wrong_type``, ``invalid_value``) as their pydantic
error type, and messages that name the expected type, never the input value.
"""

from __future__ import annotations

import math
import re
from dataclasses import fields
from datetime import UTC, datetime, timedelta, timezone
from functools import partial
from typing import Annotated, Any, Literal, get_type_hints

import msgspec
from msgspec import Meta
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    GetCoreSchemaHandler,
    GetPydanticSchema,
    PlainValidator,
    PrivateAttr,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    TypeAdapter,
    field_validator,
)
from pydantic.dataclasses import dataclass
from pydantic_core import PydanticCustomError, core_schema

#: Longest accepted ``event_id`` in characters.
MAX_EVENT_ID_CHARS = 256

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?"
    r"(?:[Zz]|([+-])(\d{2}):?(\d{2}))?",
    re.ASCII,
)
_rfc3339_shape = _RFC3339.fullmatch
_fromisoformat = datetime.fromisoformat
#: ASCII digits 1-9 -> "0", so one C-level ``bytes.translate`` turns a timestamp into its shape.
_DIGITS_AS_ZERO = bytes.maketrans(b"123456789", b"000000000")
#: The common spellings ``YYYY-MM-DDTHH:MM:SSZ`` and ``YYYY-MM-DDTHH:MM:SS.fZ`` (1 to 9
#: fraction digits) with their digits as "0": each is one the regex :data:`_RFC3339` matches,
#: so a timestamp of one of these shapes needs no regex to be known RFC 3339-shaped.
_UTC_SHAPES = frozenset(
    [b"0000-00-00T00:00:00Z", *(b"0000-00-00T00:00:00.%sZ" % (b"0" * n) for n in range(1, 10))]
)
TIMESTAMP_EXPECTED = "RFC 3339 string or epoch seconds/milliseconds number"


def _wrong_type(expected: str) -> PydanticCustomError:
    return PydanticCustomError("wrong_type", "expected {expected}", {"expected": expected})


def _invalid(problem: str) -> PydanticCustomError:
    return PydanticCustomError("invalid_value", "{problem}", {"problem": problem})


def to_id(value: Any) -> str:
    """Return an identifier as ``str``: strings unchanged, JSON integers as decimal strings.

    Raises:
        PydanticCustomError: ``wrong_type`` for anything else (floats, booleans, null, ...).

    >>> to_id(412), to_id("p-0412")
    ('412', 'p-0412')
    """
    if type(value) is str:
        return value
    if type(value) is int:
        return str(value)
    raise _wrong_type("string or integer")


def event_id_value(value: Any) -> str:
    """Return a valid ``event_id`` from its JSON value (the rule pydantic applies to the field).

    Raises:
        PydanticCustomError: ``wrong_type`` (not a string or integer) or ``invalid_value``
            (blank, or longer than :data:`MAX_EVENT_ID_CHARS` characters).
        ValueError: an integer of more than 4,300 digits (Python's ``str(int)`` limit).

    >>> event_id_value(7)
    '7'
    """
    text = to_id(value)
    if not text or text.isspace():  # what ``not text.strip()`` says, without a copy
        raise _invalid("must not be blank")
    if len(text) > MAX_EVENT_ID_CHARS:
        raise _invalid(f"longer than {MAX_EVENT_ID_CHARS} characters")
    return text


def parse_timestamp(value: Any) -> datetime:
    """Return ``value`` as an aware UTC datetime (rules in the module docstring).

    Accepts an RFC 3339 string, an epoch ``int``/``float`` (unit by magnitude) or a
    ``datetime`` (naive means UTC).

    Raises:
        PydanticCustomError: ``wrong_type`` (not a string/number, or a string not shaped like
            RFC 3339) or ``invalid_value`` (impossible date, bad offset, negative or non-finite
            epoch, outside 1970-01-01 .. 9999-12-31).

    >>> parse_timestamp("2026-11-29T15:30:00+05:30").isoformat()
    '2026-11-29T10:00:00+00:00'
    >>> parse_timestamp(1_795_946_400_000) == parse_timestamp(1_795_946_400)
    True
    """
    kind = type(value)
    if kind is str:
        # the common "...Z": no conversion, no helpers. Its shape is checked without the
        # regex first (0.1 against 0.6 µs here: the regex was most of a timestamp's cost);
        # a string of one of _UTC_SHAPES is one the regex matches, anything else asks it.
        if (value.isascii() and value.encode().translate(_DIGITS_AS_ZERO) in _UTC_SHAPES) or (
            _rfc3339_shape(value) is not None
        ):
            try:
                stamp = _fromisoformat(value)
            except ValueError:
                pass
            else:
                if stamp.tzinfo is UTC and stamp >= _EPOCH:
                    return stamp
        return _from_rfc3339(value)  # other offsets, naive, leap seconds; classifies errors
    if kind is int or kind is float:
        return _from_epoch(value)
    if isinstance(value, datetime):
        return _in_range(value if value.tzinfo else value.replace(tzinfo=UTC))
    raise _wrong_type(TIMESTAMP_EXPECTED)


def _from_rfc3339(text: str) -> datetime:
    match = _RFC3339.fullmatch(text)
    if match is None:
        raise _wrong_type(TIMESTAMP_EXPECTED)
    try:
        stamp = datetime.fromisoformat(text)  # fast, exact for the common spellings
    except ValueError:
        stamp = _from_groups(match)  # leap seconds, lowercase t/z; classifies the rest
    return _in_range(stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC))


def _from_groups(match: re.Match[str]) -> datetime:
    year, month, day, hour, minute, second, frac, sign, off_h, off_m = match.groups()
    micros = int((frac or "0")[:6].ljust(6, "0"))
    if second == "60":
        second, micros = "59", 999_999
    tz = UTC
    if sign is not None:
        if int(off_h) > 23 or int(off_m) > 59:
            raise _invalid("UTC offset out of range")
        offset = timedelta(hours=int(off_h), minutes=int(off_m))
        tz = timezone(-offset if sign == "-" else offset)
    try:
        parts = (int(year), int(month), int(day), int(hour), int(minute), int(second))
        return datetime(*parts, micros, tzinfo=tz)
    except ValueError:
        raise _invalid("not a valid calendar date and time") from None


def _from_epoch(number: float) -> datetime:
    # An int is always finite, and math.isfinite(int) overflows past ~1.8e308 (a 310-digit
    # epoch crashed decode); comparisons of an int with a float are exact, never overflow.
    if number < 0 or (type(number) is float and not math.isfinite(number)):
        raise _invalid("epoch must be a finite number >= 0")
    # the unit by magnitude: seconds below 1e11, then milliseconds, microseconds, nanoseconds
    # (an if chain: a generator over a table of the bounds cost ~0.3 µs an epoch event)
    if number < 1e11:
        ticks = 1
    elif number < 1e14:
        ticks = 1_000
    elif number < 1e17:
        ticks = 10**6
    else:
        ticks = 10**9
    try:
        if type(number) is int:
            return _EPOCH + timedelta(microseconds=number * 10**6 // ticks)
        return _EPOCH + timedelta(seconds=number / ticks)
    except OverflowError:
        raise _invalid("timestamp outside 1970-01-01 .. 9999-12-31") from None


def _in_range(stamp: datetime) -> datetime:
    try:
        stamp = stamp.astimezone(UTC)
    except OverflowError:
        raise _invalid("timestamp outside 1970-01-01 .. 9999-12-31") from None
    if stamp < _EPOCH:
        raise _invalid("timestamp outside 1970-01-01 .. 9999-12-31")
    return stamp


#: :func:`to_id` in pydantic-core: a JSON string as is, a JSON integer as its decimal string,
#: anything else ``wrong_type`` ("expected string or integer"). Built natively rather than
#: as ``PlainValidator(to_id)`` because an event carries about ten ids and each Python call
#: costs more than the check. From Python objects it also takes ``str``/``int`` subclasses
#: (enums), as plain ``str``; booleans and floats stay rejected.
_ID_SCHEMA = core_schema.union_schema(
    [
        core_schema.str_schema(strict=True),
        core_schema.no_info_after_validator_function(str, core_schema.int_schema(strict=True)),
    ],
    mode="left_to_right",
    custom_error_type="wrong_type",
    custom_error_message="expected {expected}",
    custom_error_context={"expected": "string or integer"},
)
Id = Annotated[str, GetPydanticSchema(lambda _type, _handler: _ID_SCHEMA)]
#: :func:`parse_timestamp` in pydantic-core, serialized as a datetime (RFC 3339 in JSON).
#: ``PlainValidator(parse_timestamp)`` would wrap the datetime serializer in a function whose
#: declared return type is ``datetime`` while it returns the JSON string, and pydantic warned
#: on every ``model_dump_json``.
_TIMESTAMP_SCHEMA = core_schema.no_info_plain_validator_function(
    parse_timestamp,
    json_schema_input_schema=core_schema.any_schema(),
    serialization=core_schema.simple_ser_schema("datetime"),
)
Timestamp = Annotated[datetime, GetPydanticSchema(lambda _type, _handler: _TIMESTAMP_SCHEMA)]
# Bounds are stated for both schema libraries that read these records: pydantic (``Field``)
# and msgspec (``Meta``), which decodes the nested records of the common event straight from
# bytes (consumers/decoding.py). Each ignores the other's marker.
#: A result's 1-based rank.
Rank = Annotated[StrictInt, Field(ge=1), Meta(ge=1)]
#: A non-negative duration in milliseconds.
Milliseconds = Annotated[StrictFloat, Field(ge=0), Meta(ge=0)]
#: A W3C Trace Context ``trace-id``: 32 lowercase hex characters, not all zeros (the W3C
#: recommendation's "all bytes as zero ... is considered an invalid value").
_TRACE_ID_PATTERN = r"^[0-9a-f]*[1-9a-f][0-9a-f]*$"
TraceId = Annotated[
    StrictStr,
    StringConstraints(min_length=32, max_length=32, pattern=_TRACE_ID_PATTERN),
    Meta(min_length=32, max_length=32, pattern=_TRACE_ID_PATTERN),
]


_RECORD = ConfigDict(extra="ignore", allow_inf_nan=False)
#: The records' own pydantic-core config: unknown keys ignored, no NaN or infinities.
_RECORD_CORE = core_schema.CoreConfig(extra_fields_behavior="ignore", allow_inf_nan=False)


class _RecordMeta(msgspec.StructMeta):
    """The records' metaclass: calling a record class validates, as the pydantic dataclasses
    the records were did (:meth:`__call__`); msgspec's decoder, ``msgspec.convert`` and
    ``msgspec.structs.replace`` build instances without it (the first two by msgspec's
    rules, ``replace`` checking nothing: see :class:`_Record`)."""

    def __call__(cls, *args: Any, **kwargs: Any) -> Any:
        """Validate the arguments as the record's fields (positional ones in field order) with
        pydantic and return the record: an integer id becomes its decimal string, a list of
        citations or results a tuple, unknown keywords are ignored.

        Raises:
            pydantic.ValidationError: a value breaks the record's rules (its error types and
                locations are pydantic's, e.g. ``greater_than_equal`` at ``("rank",)``).
            TypeError: more positional arguments than fields, or a field given twice.
        """
        if args:
            names = cls.__struct_fields__
            if len(args) > len(names):
                raise TypeError(f"{cls.__name__} takes at most {len(names)} positional arguments")
            for name, value in zip(names, args, strict=False):
                if name in kwargs:
                    raise TypeError(f"{cls.__name__} got multiple values for {name!r}")
                kwargs[name] = value
        validate = _VALIDATORS.get(cls)
        if validate is None:
            record: Any = cls  # the metaclass instance is the record type
            adapter = TypeAdapter[Any](record, config=ConfigDict(title=cls.__name__))
            validate = _VALIDATORS[cls] = adapter.validator.validate_python
        return validate(kwargs)


#: A record type -> its pydantic validator (``validate_python``), built at first use.
_VALIDATORS: dict[type, Any] = {}
#: ``msgspec.StructMeta.__call__``: builds a record from values already checked, without the
#: validation :meth:`_RecordMeta.__call__` adds.
_construct = msgspec.StructMeta.__call__


class _Record(msgspec.Struct, frozen=True, gc=False, metaclass=_RecordMeta):
    """Base of the event's records: frozen, hashable msgspec Structs, untracked by CPython's
    cyclic collector (``gc=False``: a record holds strings, numbers and other records, never
    a cycle), which msgspec decodes straight from bytes (consumers/decoding.py).

    What checks a record's values:

    * Its constructor (``User(id=5)``) validates with pydantic, as the pydantic dataclasses
      the records were did (:class:`_RecordMeta`): ``User(id=5).id == "5"``,
      ``RetrievedPassage(id="p", rank=0)`` raises ``pydantic.ValidationError``.
    * msgspec's decoder (the decoder's fast path) checks msgspec's types and ``Meta``
      bounds, without the constructor. Where they differ from pydantic's rules they are
      stricter (an integer id, which pydantic turns into its string, or a number out of
      range fails msgspec), and the decoder then asks pydantic (consumers/decoding.py
      ``_fast``), so a decoded record is the one pydantic would give.
    * ``msgspec.convert`` applies msgspec's rules alone (it lets a NaN score through and
      refuses an integer id): not a way to check a producer's values.
    * pydantic (``QueryLogEvent.model_validate``, ``validate_event_json``, the event's
      constructor) reads a record given as a dict or JSON object with the same rules, error
      types and locations as before (unknown keys ignored; one difference: a record given as
      a non-object is pydantic's ``dict_type``, where a dataclass said ``dataclass_type``,
      both ``wrong_type`` to the decoder): :meth:`__get_pydantic_core_schema__` reads it as a
      typed dict of its fields, then builds the Struct. A record *instance* is taken as it
      is (as a dataclass instance was), and a record serializes as that dict.
    * ``msgspec.structs.replace`` (and, on Python 3.13+, ``copy.replace``) check nothing:
      PII scrubbing uses it to put scrubbed strings where strings were. Pickle and
      ``copy.deepcopy`` rebuild a record as it was, without validating (:meth:`__reduce__`).

    ``gc=False`` is safe because the constructors and the decoder give a record only
    strings, numbers, ``None`` and tuples of records. ``structs.replace`` with a mutable
    value (a list later given a record) could make a cycle the collector never frees, and a
    subclass inherits ``gc=False`` even with a mutable field: give records immutable values.
    """

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickle (and ``copy.deepcopy``) as ``_restore(type, fields)``: msgspec's own
        ``(type, fields)`` would call the type, which validates (:class:`_RecordMeta`)."""
        return _restore, (type(self), msgspec.structs.astuple(self))

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        hints = get_type_hints(cls, include_extras=True)
        fields_: dict[str, core_schema.TypedDictField] = {}
        for field in msgspec.structs.fields(cls):
            inner = handler.generate_schema(hints[field.name])
            if field.required:
                fields_[field.name] = core_schema.typed_dict_field(inner, required=True)
            else:
                inner = core_schema.with_default_schema(inner, default=field.default)
                fields_[field.name] = core_schema.typed_dict_field(inner, required=False)
        as_dict = core_schema.typed_dict_schema(
            fields_, cls=cls, ref=f"{cls.__module__}.{cls.__qualname__}",
            extra_behavior="ignore", config=_RECORD_CORE,
        )  # fmt: skip
        build = core_schema.no_info_after_validator_function(partial(_build, cls), as_dict)
        return core_schema.json_or_python_schema(
            json_schema=build,
            python_schema=core_schema.no_info_wrap_validator_function(
                partial(_keep_instance, cls), build
            ),
            serialization=core_schema.plain_serializer_function_ser_schema(
                msgspec.structs.asdict, return_schema=as_dict
            ),
        )


def _build(cls: type[_Record], values: dict[str, Any]) -> Any:
    return _construct(cls, **values)  # validated by the typed dict: no second validation


def _restore(cls: type[_Record], values: tuple[Any, ...]) -> Any:
    """A record from its fields' values in order, as it was (pickle, ``copy.deepcopy``):
    not validated again, so a record ``msgspec.convert`` or ``structs.replace`` built
    round-trips whatever pydantic would say of it."""
    return _construct(cls, *values)


def _keep_instance(cls: type[_Record], value: Any, handler: Any) -> Any:
    return value if isinstance(value, cls) else handler(value)  # a subclass too, as before


class User(_Record, frozen=True, gc=False):
    """Who asked: ``id``, ``role`` (e.g. ``"parent"``), ``tenant``; all optional.

    Like every record here (a frozen msgspec Struct): constructing one validates with
    pydantic (``User(id=5).id == "5"``; ``pydantic.ValidationError`` on a bad value), and so
    does the decoder; ``msgspec.structs.replace`` and ``msgspec.convert`` do not apply
    pydantic's rules (:class:`_Record` lists what checks what).
    """

    id: Id | None = None
    role: StrictStr | None = None
    tenant: StrictStr | None = None


class RetrievedPassage(_Record, frozen=True, gc=False):
    """One passage the production retriever returned.

    Attributes:
        id: passage id (required; a JSON integer becomes its decimal string).
        score: retriever score, unitless, comparable within one query only; finite.
        rank: 1-based position in the result list.
        doc, doc_type: source document and its type (e.g. ``"scanned_pdf"``).

    Validated as :class:`User` is (``RetrievedPassage(id="p", rank=0)`` raises).
    """

    id: Id
    score: StrictFloat | None = None
    rank: Rank | None = None
    doc: StrictStr | None = None
    doc_type: StrictStr | None = None


class Retrieval(_Record, frozen=True, gc=False):
    """What the production retriever did: its name, latency in milliseconds (>= 0), results
    (given as dicts or passages; a list becomes a tuple). Validated as :class:`User` is."""

    retriever: StrictStr | None = None
    latency_ms: Milliseconds | None = None
    results: tuple[RetrievedPassage, ...] = ()


class Answer(_Record, frozen=True, gc=False):
    """The generated answer: ``text``, whether it was a refusal (``None``: unknown), citations
    (ids; a list becomes a tuple). Validated as :class:`User` is."""

    text: StrictStr | None = None
    refused: StrictBool | None = None
    citations: tuple[Id, ...] = ()


class Feedback(_Record, frozen=True, gc=False):
    """User feedback: ``rating`` is a finite number on the producer's own scale (e.g. -1/+1).
    Validated as :class:`User` is."""

    rating: StrictFloat | None = None


@dataclass(frozen=True, slots=True, config=_RECORD)
class QueryLogEvent:
    """One production query, schema v1 (a frozen, hashable record; unknown fields ignored).

    Attributes:
        event_id: unique id, 1..256 characters, not blank (an integer becomes a string).
        timestamp: when the query was asked, aware UTC datetime (see :func:`parse_timestamp`).
        question: the user's question, not blank; stored exactly as sent.
        user, channel, retrieval, answer, feedback: optional context, ``None`` when absent.
        trace_id: the OpenTelemetry trace the event came from (provenance: a gold question
            harvested from the event keeps it), 32 lowercase hex characters, not all zeros;
            set for events assembled from traces, and a JSON producer may send its own.
            Not personal data (a random id), so never scrubbed or pseudonymised.

    Nested records may be given as dicts (validated) or as record instances (taken as they
    are: a record's constructor validated it; see :class:`_Record` for what does not).
    ``model_validate``/``model_validate_json`` and
    ``model_dump``/``model_dump_json`` mirror the pydantic ``BaseModel`` API.

    Raises:
        pydantic.ValidationError: on construction from invalid data; error types are
            ``missing``, pydantic's ``*_type`` errors, ``wrong_type`` or ``invalid_value``.

    >>> e = QueryLogEvent(event_id=7, timestamp="2026-11-29T10:00:00Z", question="¿cuánto sale?")
    >>> e.event_id, e.timestamp.isoformat(), e.retrieval
    ('7', '2026-11-29T10:00:00+00:00', None)
    >>> QueryLogEvent.model_validate_json(e.model_dump_json()) == e
    True
    """

    event_id: Annotated[str, PlainValidator(event_id_value)]
    timestamp: Timestamp
    question: Annotated[StrictStr, StringConstraints(pattern=r"\S")]
    user: User | None = None
    channel: StrictStr | None = None
    retrieval: Retrieval | None = None
    answer: Answer | None = None
    feedback: Feedback | None = None
    trace_id: TraceId | None = None

    @classmethod
    def model_validate(cls, obj: Any) -> QueryLogEvent:
        """Validate a dict (canonical field names); raises ``pydantic.ValidationError``."""
        return _EVENT.validate_python(obj)

    @classmethod
    def model_validate_json(cls, data: bytes | str) -> QueryLogEvent:
        """Parse and validate canonical JSON in one pass; raises ``pydantic.ValidationError``."""
        return _EVENT.validate_json(data)

    def model_dump(self, mode: Literal["python", "json"] = "python") -> dict[str, Any]:
        """Return the event as a dict of plain values (``mode="json"``: JSON-able values)."""
        return _EVENT.dump_python(self, mode=mode)  # type: ignore[no-any-return]

    def model_dump_json(self) -> str:
        """Return the event as canonical JSON (timestamp as RFC 3339 UTC)."""
        return _EVENT.dump_json(self).decode()


_EVENT: TypeAdapter[QueryLogEvent] = TypeAdapter(QueryLogEvent)
#: ``QueryLogEvent.model_validate_json`` without its two Python wrappers: pydantic-core's own
#: ``validate_json(bytes | str) -> QueryLogEvent``, raising ``pydantic.ValidationError``.
validate_event_json = _EVENT.validator.validate_json
#: The canonical top-level field names, in schema order.
EVENT_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(QueryLogEvent))
#: The fields whose problem dead-letters an event; a problem anywhere else drops that field.
REQUIRED_FIELDS: tuple[str, ...] = ("event_id", "timestamp", "question")
_RECORDS: dict[str, type[_Record]] = {
    "user": User,
    "retrieval": Retrieval,
    "answer": Answer,
    "feedback": Feedback,
}


def _optional_paths() -> tuple[str, ...]:
    paths: list[str] = []
    for name in EVENT_FIELDS:
        if name not in REQUIRED_FIELDS:
            paths.append(name)
            if name in _RECORDS:
                paths += [f"{name}.{sub}" for sub in _RECORDS[name].__struct_fields__]
    return tuple(paths)


#: What the decoder may drop from an event with a mistyped optional field, as dotted paths:
#: every optional top-level field and every field of its record (``feedback.rating``,
#: ``retrieval.results``: a bad result drops the list). Bounded: the metric label values of
#: ``goldwatch_event_fields_dropped_total``.
OPTIONAL_FIELD_PATHS: tuple[str, ...] = _optional_paths()


Alias = Annotated[str, Field(min_length=1, max_length=128)]


class FieldMapping(BaseModel):
    """Other spellings of the canonical fields, tried in order when the canonical one is absent.

    A canonical field that is present and not ``null`` always wins. An alias is a top-level key
    or a dotted path into nested objects (``"meta.request_id"``); a key that literally
    contains the dot is tried first.

    Attributes:
        event_id, timestamp, question: aliases of the required fields.
        answer: aliases of ``answer``; a string value (here or in ``answer`` itself) becomes
            ``answer.text``, an object is read as an :class:`Answer`.
        results: aliases of ``retrieval.results``: a top-level list of result objects or
            strings, e.g. ``contexts`` / ``documents``.
        passage_id: aliases of ``id`` inside each result object.
        string_results: what a string item of an aliased results list means. ``"ignore"``
            (default): drop it, because ``contexts`` lists are usually passage *texts*, which
            cannot be scored against gold ids. ``"ids"``: it is a passage id, ranked by
            position (rank 1 first).

    Raises:
        pydantic.ValidationError: an alias is empty, too long, or listed for two fields.

    >>> FieldMapping(question=("query", "my_q")).question
    ('query', 'my_q')
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    event_id: tuple[Alias, ...] = ("id", "request_id")
    timestamp: tuple[Alias, ...] = ("ts", "time", "created_at")
    question: tuple[Alias, ...] = ("query", "input", "prompt")
    answer: tuple[Alias, ...] = ("response", "output")
    results: tuple[Alias, ...] = ("contexts", "documents")
    passage_id: tuple[Alias, ...] = ("doc_id", "passage_id", "chunk_id")
    string_results: Literal["ignore", "ids"] = "ignore"
    _guards: tuple[bytes, ...] = PrivateAttr(default=())

    @field_validator("event_id", "timestamp", "question", "answer", "results")
    @classmethod
    def _not_canonical(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        clash = set(value) & set(EVENT_FIELDS)
        if clash:
            raise ValueError(f"aliases may not be canonical field names: {sorted(clash)}")
        return value

    def model_post_init(self, context: Any, /) -> None:
        top = (self.event_id, self.timestamp, self.question, self.answer, self.results)
        flat = [alias for aliases in top for alias in aliases]
        dupes = sorted({a for a in flat if flat.count(a) > 1})
        if dupes:
            raise ValueError(f"aliases listed for more than one field: {dupes}")
        aliases = (*self.answer, *self.results)
        keys = sorted({*aliases, *(alias.split(".", 1)[0] for alias in aliases)})
        # A key spelled with JSON escapes escapes the plain search: any "\u" (or any
        # backslash, for keys holding characters JSON may escape short-hand) sends the event
        # to the slow path when answer/results are empty.
        escaped = any(c in '"\\/' or c < " " for key in keys for c in key)
        self._guards = (b"\\" if escaped else b"\\u", *(f'"{key}"'.encode() for key in keys))

    @property
    def optional_guards(self) -> tuple[bytes, ...]:
        """Byte strings whose presence may mean an alias feeds ``answer`` or ``results``."""
        return self._guards
