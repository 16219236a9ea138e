"""Schema v1 of the query-log event: types, timestamps, ids, and the field mapping."""

from __future__ import annotations

from dataclasses import FrozenInstanceError
from datetime import UTC, datetime
from enum import IntEnum

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import ValidationError

from service.events import (
    MAX_EVENT_ID_CHARS,
    Answer,
    Feedback,
    FieldMapping,
    QueryLogEvent,
    Retrieval,
    RetrievedPassage,
    User,
    parse_timestamp,
    to_id,
)
from service.records import ScoredDoc

BASE = {"event_id": "e-1", "timestamp": "2026-11-29T10:00:00Z", "question": "q?"}
TEN_UTC = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)


def error_type(**fields: object) -> str:
    with pytest.raises(ValidationError) as info:
        QueryLogEvent.model_validate({**BASE, **fields})
    return str(info.value.errors()[0]["type"])


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("2026-11-29T10:00:00Z", TEN_UTC),
        ("2026-11-29t10:00:00z", TEN_UTC),
        ("2026-11-29T15:30:00+05:30", TEN_UTC),
        ("2026-11-29T15:30:00+0530", TEN_UTC),
        ("2026-11-29T05:00:00-05:00", TEN_UTC),
        ("2026-11-29 10:00:00Z", TEN_UTC),
        ("2026-11-29T10:00:00", TEN_UTC),  # naive: read as UTC
        ("2026-11-29T10:00:00.25Z", TEN_UTC.replace(microsecond=250_000)),
        ("2026-11-29T10:00:00.123456789Z", TEN_UTC.replace(microsecond=123_456)),
        ("2016-12-31T23:59:60Z", datetime(2016, 12, 31, 23, 59, 59, 999_999, tzinfo=UTC)),
        (1_795_946_400, TEN_UTC),  # epoch seconds
        (1_795_946_400.5, TEN_UTC.replace(microsecond=500_000)),  # float seconds
        (1_795_946_400_000, TEN_UTC),  # milliseconds
        (1_795_946_400_250.0, TEN_UTC.replace(microsecond=250_000)),  # float ms
        (1_795_946_400_000_000, TEN_UTC),  # microseconds
        (1_795_946_400_000_000_000, TEN_UTC),  # nanoseconds
        (0, datetime(1970, 1, 1, tzinfo=UTC)),
        (datetime(2026, 11, 29, 10, 0), TEN_UTC),
    ],
)
def test_timestamps_become_aware_utc(raw: object, expected: datetime) -> None:
    stamp = parse_timestamp(raw)
    assert stamp == expected
    assert stamp.tzinfo is UTC


@pytest.mark.parametrize(
    "raw",
    ["yesterday", "", "2026-11-29", "2026-11-29T10:00Z", "29/11/2026 10:00:00", "1795946400",
     "２０２６-11-29T10:00:00Z", True, False, None, [1], {"s": 1}],
)  # fmt: skip
def test_timestamp_of_the_wrong_shape_is_wrong_type(raw: object) -> None:
    assert error_type(timestamp=raw) == "wrong_type"


@pytest.mark.parametrize(
    "raw",
    ["2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-11-29T24:00:00Z",
     "2026-11-29T10:00:00+24:00", "0001-01-01T00:00:00Z", "1969-12-31T23:59:59Z",
     "1969-12-31T23:59:59.999Z", "2026-02-30T00:00:00.5Z", "0000-01-01T00:00:00.000Z",
     -1, float("inf"), float("nan"), 10**30],
)  # fmt: skip
def test_impossible_or_out_of_range_timestamp_is_invalid_value(raw: object) -> None:
    assert error_type(timestamp=raw) == "invalid_value"


def test_ids_accept_strings_and_integers_only() -> None:
    assert (to_id("p-1"), to_id(0), to_id(-3), to_id(10**20)) == ("p-1", "0", "-3", str(10**20))
    for bad in (1.0, True, None, ["p"], {"id": 1}):
        with pytest.raises(ValueError):  # PydanticCustomError is a ValueError
            to_id(bad)
    event = QueryLogEvent.model_validate(
        {**BASE, "event_id": 12345, "user": {"id": 77},
         "retrieval": {"results": [{"id": 412}]}, "answer": {"citations": [412, "p-9"]}}
    )  # fmt: skip
    assert event.event_id == "12345"
    assert event.user is not None and event.user.id == "77"
    assert event.retrieval is not None and event.retrieval.results[0].id == "412"
    assert event.answer is not None and event.answer.citations == ("412", "p-9")


@pytest.mark.parametrize(
    ("fields", "expected"),
    [
        ({"event_id": ""}, "invalid_value"),
        ({"event_id": "  \t"}, "invalid_value"),
        ({"event_id": "e" * (MAX_EVENT_ID_CHARS + 1)}, "invalid_value"),
        ({"event_id": 1.5}, "wrong_type"),
        ({"event_id": False}, "wrong_type"),
        ({"question": ""}, "string_pattern_mismatch"),
        ({"question": " \n\u3000"}, "string_pattern_mismatch"),
        ({"question": 42}, "string_type"),
        ({"retrieval": {"latency_ms": -1}}, "greater_than_equal"),
        ({"retrieval": {"latency_ms": "35"}}, "float_type"),
        ({"retrieval": {"latency_ms": True}}, "float_type"),
        ({"retrieval": {"results": [{"id": "p", "rank": 0}]}}, "greater_than_equal"),
        ({"retrieval": {"results": [{"id": "p", "rank": 1.0}]}}, "int_type"),
        ({"retrieval": {"results": [{"id": "p", "score": float("nan")}]}}, "finite_number"),
        ({"answer": {"refused": "yes"}}, "bool_type"),
        ({"feedback": {"rating": float("inf")}}, "finite_number"),
        ({"channel": 3}, "string_type"),
        ({"user": "alice"}, "dict_type"),  # a record is a msgspec Struct read as a typed dict
    ],
)
def test_field_constraints(fields: dict[str, object], expected: str) -> None:
    assert error_type(**fields) == expected


def test_event_id_at_the_length_limit_is_accepted() -> None:
    event = QueryLogEvent.model_validate({**BASE, "event_id": "e" * MAX_EVENT_ID_CHARS})
    assert len(event.event_id) == MAX_EVENT_ID_CHARS


def test_question_is_stored_exactly_as_sent() -> None:
    text = "  Hostel ka fee\u200d\u0301 semester wise? 🏠\n"
    assert QueryLogEvent.model_validate({**BASE, "question": text}).question == text


def test_unknown_fields_are_ignored_and_not_stored() -> None:
    event = QueryLogEvent.model_validate(
        {**BASE, "extra": 1, "user": {"email": "alice@example.com"}, "retrieval": {"x": []}}
    )
    assert "extra" not in event.model_dump()
    assert event.user == User()
    assert not hasattr(event.user, "__dict__")  # slotted: nowhere to keep extras


def test_events_are_frozen_and_hashable_records() -> None:
    event = QueryLogEvent.model_validate({**BASE, "retrieval": {"results": [{"id": "p"}]}})
    with pytest.raises(FrozenInstanceError):
        event.question = "other"  # type: ignore[misc]
    assert event.retrieval is not None and isinstance(event.retrieval.results, tuple)
    again = QueryLogEvent.model_validate({**BASE, "retrieval": {"results": [{"id": "p"}]}})
    assert event == again and hash(event) == hash(again) and len({event, again}) == 1


def test_json_round_trip_and_dump() -> None:
    results = (RetrievedPassage(id="p"),)
    event = QueryLogEvent(
        event_id="e-1", timestamp=TEN_UTC, question="q?", retrieval=Retrieval(results=results)
    )
    assert QueryLogEvent.model_validate_json(event.model_dump_json()) == event
    dumped = event.model_dump(mode="json")
    assert dumped["timestamp"] == "2026-11-29T10:00:00Z"
    assert dumped["retrieval"]["results"][0]["id"] == "p"
    assert event.model_dump()["timestamp"] == TEN_UTC


def test_optional_parts_default_to_none_or_empty() -> None:
    event = QueryLogEvent.model_validate(BASE)
    assert (event.user, event.channel, event.retrieval, event.answer, event.feedback) == (
        (None,) * 5
    )
    assert Answer().citations == ()
    assert RetrievedPassage(id="p").rank is None


def test_passage_maps_onto_scored_doc() -> None:
    passage = RetrievedPassage(id="p-0412", score=12.3, rank=1)
    assert ScoredDoc(passage.id, passage.score or 0.0) == ScoredDoc("p-0412", 12.3)


def test_field_mapping_defaults_and_user_aliases() -> None:
    mapping = FieldMapping()
    assert mapping.question == ("query", "input", "prompt")
    assert mapping.event_id == ("id", "request_id")
    assert mapping.timestamp == ("ts", "time", "created_at")
    assert mapping.results == ("contexts", "documents")
    assert mapping.answer == ("response", "output")
    assert mapping.string_results == "ignore"
    custom = FieldMapping.model_validate({"question": ["query", "input", "prompt", "my_q"]})
    assert custom.question[-1] == "my_q"
    with pytest.raises(ValidationError):
        custom.question = ()


@pytest.mark.parametrize(
    "config",
    [
        {"question": ["question"]},  # a canonical name
        {"question": ["id"]},  # already an event_id alias
        {"question": [""]},
        {"results": ["x" * 129]},
        {"string_results": "texts"},
        {"questions": ["q"]},  # unknown key
    ],
)
def test_field_mapping_rejects_bad_config(config: dict[str, object]) -> None:
    with pytest.raises(ValidationError):
        FieldMapping.model_validate(config)


def test_field_mapping_guards_cover_literal_dotted_and_escaped_keys() -> None:
    guards = FieldMapping(answer=("meta.answer",), results=("docs",)).optional_guards
    assert guards[0] == b"\\u"
    assert {b'"meta"', b'"meta.answer"', b'"docs"'} <= set(guards)
    assert FieldMapping(results=("a/b",)).optional_guards[0] == b"\\"


@given(
    stamp=st.datetimes(min_value=datetime(1970, 1, 1), max_value=datetime(9999, 12, 31)),
    spelling=st.sampled_from(["{}Z", "{}+00:00", "{}-00:00", "{}z", "{}+0000"]),
    timespec=st.sampled_from(["microseconds", "milliseconds", "seconds"]),
)
def test_utc_spellings_parse_to_the_same_instant(
    stamp: datetime, spelling: str, timespec: str
) -> None:
    # "...Z" with 0, 3 or 6 fraction digits is the shape parse_timestamp checks without its
    # regex; the instant is the datetime cut to the digits written
    text = spelling.format(stamp.isoformat(timespec=timespec))
    kept = {"microseconds": 1, "milliseconds": 1000, "seconds": 1_000_000}[timespec]
    expected = stamp.replace(microsecond=stamp.microsecond // kept * kept, tzinfo=UTC)
    parsed = parse_timestamp(text)
    assert parsed == expected and parsed.tzinfo is UTC


def test_ids_from_python_subclasses_become_plain_strings() -> None:
    class Code(IntEnum):
        SEVEN = 7

    class Name(str):
        pass

    event = QueryLogEvent.model_validate({**BASE, "user": {"id": Code.SEVEN},
                                          "answer": {"citations": [Name("p-1")]}})  # fmt: skip
    assert event.user is not None and event.answer is not None
    assert (type(event.user.id), event.user.id) == (str, "7")
    assert [(type(c), c) for c in event.answer.citations] == [(str, "p-1")]
    assert error_type(user={"id": 1.5}) == error_type(answer={"citations": [True]}) == "wrong_type"


def test_decoded_records_are_untracked_by_the_collector() -> None:
    """The records are ``gc=False`` Structs: of a decoded event with a user, two passages, an
    answer and feedback, only the event and its two tuples (results, citations) are tracked
    (counted by hand from the line below); the dataclasses were 8 more (user, retrieval, two
    passages, answer, feedback)."""
    import gc

    from consumers.base import Origin, RawMessage
    from consumers.decoding import decode_batch

    line = (b'{"event_id":"e-1","timestamp":"2026-11-29T10:00:00Z","question":"q?",'
            b'"user":{"id":"u"},"retrieval":{"results":[{"id":"p-1","rank":1},{"id":"p-2"}]},'
            b'"answer":{"text":"a","citations":["p-1"]},"feedback":{"rating":1.0}}')  # fmt: skip
    decoded, dead = decode_batch([RawMessage(line, Origin(file="x", line=1))], FieldMapping(),
                                 10_000)  # fmt: skip
    assert dead == [] and len(decoded) == 1
    event = decoded[0][1]
    assert event.retrieval is not None and event.answer is not None
    records = [event.user, event.retrieval, *event.retrieval.results, event.answer,
               event.feedback]  # fmt: skip
    assert [gc.is_tracked(r) for r in records] == [False] * 6


def test_record_constructors_validate_as_the_dataclasses_did() -> None:
    """A record's constructor applies pydantic's rules, as the pydantic dataclasses did (a
    msgspec Struct's own ``__init__`` checks nothing): an integer id becomes its decimal
    string, a list of citations or of result dicts a tuple (so the record stays hashable),
    positional arguments go in field order, and a rank of 0, a float id or a missing
    passage id raise. Expected values worked out from the rules in the module docstring."""

    assert User(id=5).id == "5" and User(5, "parent") == User(id="5", role="parent")
    answer = Answer(text="a", citations=["p-1", 7])  # type: ignore[arg-type]
    assert answer.citations == ("p-1", "7") and hash(answer) == hash(answer)
    retrieval = Retrieval(retriever="r", results=[{"id": 3, "rank": 1}])  # type: ignore[list-item]
    assert type(retrieval.results) is tuple and retrieval.results[0].id == "3"
    problems = [({"id": "p", "rank": 0}, ("rank",), "greater_than_equal"),
                ({"id": 1.5}, ("id",), "wrong_type"), ({}, ("id",), "missing"),
                ({"id": "p", "score": float("nan")}, ("score",), "finite_number")]  # fmt: skip
    for values, loc, kind in problems:
        with pytest.raises(ValidationError) as caught:
            RetrievedPassage(**values)
        assert [(e["loc"], e["type"]) for e in caught.value.errors()] == [(loc, kind)]
        assert caught.value.title == "RetrievedPassage"
    with pytest.raises(ValidationError):
        Feedback(rating=True)  # type: ignore[arg-type]


def test_records_pickle_and_deepcopy_as_they_were_and_keep_their_schema() -> None:
    """Review of s30-pstruct2: a record msgspec built by its own rules (``convert`` lets a
    NaN score through; pydantic refuses it) pickled as a call of its type, which validates,
    so it failed to load; and the event's JSON schema lost the records' ``$defs``."""
    import copy
    import math
    import pickle

    import msgspec
    from pydantic import TypeAdapter

    from service.events import QueryLogEvent, Retrieval, RetrievedPassage, User

    odd = msgspec.convert({"id": "p-1", "score": math.nan}, RetrievedPassage)
    for back in (pickle.loads(pickle.dumps(odd)), copy.deepcopy(odd)):
        assert type(back) is RetrievedPassage and back.id == "p-1"
        assert math.isnan(back.score)
    nested = Retrieval(retriever="bm25", results=[{"id": "p-2", "score": 1.5, "rank": 1}])
    assert pickle.loads(pickle.dumps(nested)) == nested == copy.deepcopy(nested)
    assert pickle.loads(pickle.dumps(User(id=5))) == User(id="5")
    defs = TypeAdapter(QueryLogEvent).json_schema().get("$defs", {})
    for name in ("User", "RetrievedPassage", "Retrieval", "Answer", "Feedback"):
        assert name in defs, name
