"""Hypothesis: decode never raises anything but DecodeError, on any bytes or JSON-ish input.

Also checks, for every input: the reason is a known code, the three paths agree (msgspec
from bytes, when it answers, gives exactly pydantic-core's event, value types included; both
give the slow path's json + mapping result), a decoded event's strings are valid Unicode
(lone surrogates repaired), and no detail echoes message content.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from datetime import UTC
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.decoding import (
    REASONS,
    DecodeError,
    _decode_slow,
    _fast,
    collect_dropped_fields,
    decode,
    decode_batch,
)
from service.events import FieldMapping, QueryLogEvent, validate_event_json

LIMIT = 1_000_000
MARKER = "⟦pii⟧"  # never part of a detail template, so it can only leak from the message
MAPPINGS = (FieldMapping(), FieldMapping(string_results="ids", answer=("reply.text", "output")))
FUZZ = settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)  # fmt: skip

SPECIAL = [
    "\u200f", "\u202e", "\u200d", "\u200b", "\u0301", "\u0915\u094d", "\ud800", "\udfff",
    "\ud83d", "😀", "👩\u200d💻", "\x00", "\ufeff", "\u2028", "\\", '"', "\n", MARKER, "NaN",
]  # fmt: skip
KEYS = [
    "event_id", "timestamp", "question", "user", "channel", "retrieval", "answer", "feedback",
    "query", "input", "prompt", "id", "request_id", "ts", "time", "created_at", "contexts",
    "documents", "response", "output", "results", "latency_ms", "score", "rank", "doc_id",
    "text", "refused", "citations", "rating", "role", "tenant", "retriever", "reply",
]  # fmt: skip

pieces = st.one_of(st.characters(), st.sampled_from(SPECIAL))
short_text = st.lists(pieces, max_size=12).map("".join)
big_text = st.builds(lambda c, n: c * n, st.sampled_from(SPECIAL + ["a"]), st.integers(0, 100_000))
text = st.one_of(short_text, short_text, short_text, short_text, big_text)
ids = st.one_of(short_text, st.integers(), st.integers(min_value=-(10**40), max_value=10**40))
stamps = st.one_of(
    st.sampled_from(["2026-11-29T10:00:00Z", "2026-11-29t15:30:00.5+05:30", "2016-12-31T23:59:60Z",
                     "2026-11-29 10:00:00", "2026-02-30T10:00:00Z", "0001-01-01T00:00:00Z"]),
    st.integers(min_value=-10, max_value=10**20), st.floats(), short_text,
)  # fmt: skip
scalars = st.one_of(st.none(), st.booleans(), ids, st.floats(), text, stamps)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.sampled_from(KEYS), short_text), inner, max_size=5),
    ),
    max_leaves=20,
)
events = st.dictionaries(st.one_of(st.sampled_from(KEYS), short_text), json_values, max_size=10)


def mostly(good: st.SearchStrategy[Any], bad: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """``good`` about 5 times in 6, else ``bad``: keeps valid events common, errors frequent."""
    return st.one_of(good, good, good, good, good, bad)


def shaped(fields: dict[str, st.SearchStrategy[Any]]) -> st.SearchStrategy[Any]:
    """An object with the given fields, each optional; sometimes any JSON value at all."""
    return mostly(st.fixed_dictionaries({}, optional=fields), json_values)


good_ids = st.one_of(
    st.lists(pieces, min_size=1, max_size=12).map("".join).filter(str.strip), st.integers()
)
good_stamps = st.one_of(
    st.sampled_from(["2026-11-29T10:00:00Z", "2026-11-29t15:30:00.5+05:30", "2016-12-31T23:59:60Z",
                     "2026-11-29 10:00:00", "2026-11-29T10:00:00.123456789-0800",
                     "2026-11-29T10:00:00.9999999Z", "1969-12-31T23:59:59.5Z"]),
    st.integers(0, 10**18), st.floats(0, 1e17),
)  # fmt: skip
question = mostly(st.lists(pieces, min_size=1, max_size=12).map("".join).filter(str.strip), text)
number = mostly(st.one_of(st.none(), st.floats(0, 1e9), st.integers(0, 10**6)), st.floats())
passage = shaped(
    {"id": mostly(good_ids, ids), "doc_id": ids, "score": number,
     "rank": mostly(st.integers(1, 50), st.integers()), "doc": short_text, "doc_type": short_text}
)  # fmt: skip
results = st.lists(st.one_of(passage, passage, short_text), max_size=6)
answer = shaped({"text": text, "refused": st.booleans(), "citations": st.lists(ids, max_size=3)})
plausible = st.fixed_dictionaries(
    {"event_id": mostly(good_ids, ids), "timestamp": mostly(good_stamps, stamps),
     "question": question},
    optional={
        "user": shaped({"id": mostly(good_ids, ids), "role": short_text, "tenant": short_text}),
        "channel": mostly(short_text, json_values),
        "retrieval": shaped({"retriever": short_text, "latency_ms": number, "results": results}),
        "answer": st.one_of(text, answer), "feedback": shaped({"rating": number}),
        "contexts": results, "documents": results, "response": text, "output": answer,
        "query": text, "extra": json_values,
    },
)  # fmt: skip
ascii_flags = st.sampled_from([True, True, True, False])


def check_fast(value: bytes) -> None:
    """msgspec's answer, when it gives one, is pydantic-core's: same fields, same types."""
    fast = _fast(value)
    if fast is None:
        return
    event("msgspec")
    assert repr(fast) == repr(validate_event_json(value))  # repr: 1 and 1.0 differ
    assert fast.timestamp.tzinfo is UTC


RECORDS = ("user", "retrieval", "answer", "feedback")


def check_bare(message: RawMessage, mapping: FieldMapping, limit: int) -> None:
    """``records=False`` gives the same dead letters, and each event with its four records
    ``None`` (rebuilt here through the validating constructor); of the dropped fields it
    counts exactly those outside the records."""
    with collect_dropped_fields() as full_drops:
        decoded, dead = decode_batch([message], mapping, limit)
    with collect_dropped_fields() as bare_drops:
        bare = decode_batch([message], mapping, limit, records=False)
    expected = [(m, replace(e, **dict.fromkeys(RECORDS))) for m, e in decoded]
    assert bare == (expected, dead)
    for (_, got), (_, want) in zip(bare[0], expected, strict=True):
        assert repr(got) == repr(want)  # repr: 1 and 1.0 differ
    assert bare_drops == {
        (path, reason): n for (path, reason), n in full_drops.items()
        if path.split(".")[0] not in RECORDS
    }  # fmt: skip


def check(
    value: bytes | None, mapping: FieldMapping, limit: int = LIMIT, fast_is_core: bool = True
) -> None:
    """The invariants every outcome of decode must satisfy.

    ``fast_is_core=False`` skips the msgspec == pydantic-core check, for inputs that only
    json.loads reads (nesting past pydantic-core's limit of about 200): decode must still
    give the slow path's answer.
    """
    message = RawMessage(value, Origin(file="fuzz.jsonl", line=1))
    if value is not None and fast_is_core:
        check_fast(value)
    check_bare(message, mapping, limit)
    in_batch = decode_batch([message], mapping, limit)  # its own copy of the fast path
    try:
        decoded = decode(message, mapping, limit)
    except DecodeError as error:
        assert in_batch == ([], [DeadLetter(message, error.reason, error.detail)])
        event(error.reason)
        assert error.reason in REASONS
        assert MARKER not in error.detail
        assert len(error.detail) < 400
        if value is not None and len(value) <= limit:
            try:
                _decode_slow(value, mapping)
            except DecodeError as slow_error:  # the slow path names the same problem
                assert (slow_error.reason, slow_error.detail) == (error.reason, error.detail)
            else:
                raise AssertionError("fast path rejected what the slow path accepts")
        return
    event("decoded")
    assert in_batch == ([(message, decoded)], [])
    assert isinstance(decoded, QueryLogEvent)
    assert value is not None and _decode_slow(value, mapping) == decoded
    assert decoded.timestamp.tzinfo is UTC
    assert decoded.question.strip() and 1 <= len(decoded.event_id) <= 256
    dumped = decoded.model_dump_json().encode("utf-8")  # raises on a lone surrogate
    assert json.loads(dumped)["event_id"] == decoded.event_id
    for passage in decoded.retrieval.results if decoded.retrieval else ():
        assert passage.score is None or math.isfinite(passage.score)
        assert passage.rank is None or passage.rank >= 1


def encode(obj: Any, ascii_only: bool) -> bytes:
    # ensure_ascii turns lone surrogates into "\ud800" escapes; without it they become
    # invalid UTF-8 (surrogatepass), which must be not_utf8.
    return json.dumps(obj, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")


@FUZZ
@given(st.one_of(st.none(), st.binary(max_size=3000)), st.sampled_from(MAPPINGS))
def test_arbitrary_bytes(value: bytes | None, mapping: FieldMapping) -> None:
    check(value, mapping)


@pytest.mark.slow
@FUZZ
@given(events, ascii_flags, st.sampled_from(MAPPINGS))
def test_arbitrary_json_objects(
    obj: dict[str, Any], ascii_only: bool, mapping: FieldMapping
) -> None:
    check(encode(obj, ascii_only), mapping)


@pytest.mark.slow
@FUZZ
@given(plausible, ascii_flags, st.sampled_from(MAPPINGS))
def test_plausible_events(obj: dict[str, Any], ascii_only: bool, mapping: FieldMapping) -> None:
    check(encode(obj, ascii_only), mapping)


@pytest.mark.slow
@FUZZ
@given(json_values, ascii_flags)
def test_arbitrary_json_values(obj: Any, ascii_only: bool) -> None:
    check(encode(obj, ascii_only), MAPPINGS[0])


@pytest.mark.slow
@FUZZ
@given(plausible, st.data())
def test_corrupted_and_truncated_events(obj: dict[str, Any], data: st.DataObject) -> None:
    value = bytearray(encode(obj, ascii_only=data.draw(ascii_flags)))
    for _ in range(data.draw(st.integers(0, 3))):
        position = data.draw(st.integers(0, max(len(value) - 1, 0)))
        if value:
            value[position] = data.draw(st.integers(0, 255))
    cut = data.draw(st.one_of(st.just(len(value)), st.integers(0, len(value))))
    limit = data.draw(st.sampled_from([LIMIT, max(cut, 1), max(cut // 2, 1)]))
    check(bytes(value[:cut]), MAPPINGS[0], limit)


#: Ignored values at the limits of the three JSON parsers: pydantic-core and json.loads refuse
#: integers of over 4,300 digits, msgspec skips them; pydantic-core refuses nesting deeper
#: than about 200, json.loads and msgspec deeper than the recursion limit (msgspec with a
#: RecursionError). The depths straddle pydantic-core's limit and stay far from the
#: recursion limit, where the answer depends on how deep the caller's stack already is.
digit_runs = st.builds(
    lambda sign, n, tail: sign + "7" * n + tail,
    st.sampled_from(["", "-"]), st.sampled_from([4299, 4300, 4301, 4302, 9000]),
    st.sampled_from(["", "", ".5", "e3"]),
)  # fmt: skip
nestings = st.builds(
    lambda depth, kind: kind[0] * depth + "0" + kind[1] * depth,
    st.sampled_from([199, 200, 201, 256, 500, 5000, 50_000]),
    st.sampled_from([("[", "]"), ('{"a":', "}")]),
)  # fmt: skip
SENTINEL = "\x00goldwatch-fuzz-sentinel"


@pytest.mark.slow
@FUZZ
@given(plausible, st.one_of(digit_runs, nestings), st.sampled_from(["first", "last", "nested"]),
       ascii_flags, st.sampled_from(MAPPINGS))  # fmt: skip
def test_ignored_values_at_parser_limits(
    obj: dict[str, Any], raw: str, where: str, ascii_only: bool, mapping: FieldMapping
) -> None:
    retrieval = obj.get("retrieval")
    if where == "nested" and type(retrieval) is dict:
        obj = {**obj, "retrieval": {**retrieval, "x": SENTINEL}}
    elif where == "first":
        obj = {"x": SENTINEL, **obj}
    else:
        obj = {**obj, "x": SENTINEL}
    value = encode(obj, ascii_only)
    assert value.count(b'"\\u0000goldwatch-fuzz-sentinel"') == 1
    value = value.replace(b'"\\u0000goldwatch-fuzz-sentinel"', raw.encode())
    check(value, mapping, fast_is_core=False)
