"""decode / decode_batch: every reason code, every alias, timestamps, and detail privacy."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.decoding import (
    DROP_REASONS,
    REASONS,
    DecodeError,
    _decode_slow,
    collect_dropped_fields,
    decode,
    decode_batch,
)
from service.events import OPTIONAL_FIELD_PATHS, FieldMapping, QueryLogEvent

MAPPING = FieldMapping()
LIMIT = 1_000_000
SECRET = "alice@example.com"
BASE: dict[str, Any] = {"event_id": "e-1", "timestamp": "2026-11-29T10:00:00Z", "question": "q?"}
TEN_UTC = datetime(2026, 11, 29, 10, 0, tzinfo=UTC)

# The example event of design.md, "Data contracts (version 1)", verbatim.
DESIGN_EXAMPLE = b"""{"event_id": "e-000123", "timestamp": "2026-11-29T10:00:00Z",
 "question": "Hostel ka fee semester wise dena hai ya yearly?",
 "user": {"id": "u-77", "role": "parent", "tenant": "college-a"},
 "channel": "web",
 "retrieval": {"retriever": "prod-v3", "latency_ms": 35,
               "results": [{"id": "p-0412", "score": 12.3, "rank": 1,
                            "doc": "fee-circular-2026.pdf", "doc_type": "scanned_pdf"}]},
 "answer": {"text": "...", "refused": null, "citations": ["p-0412"]},
 "feedback": {"rating": -1}}"""


def raw(value: bytes | None) -> RawMessage:
    return RawMessage(value, Origin(topic="queries", partition=0, offset=7))


def encode(obj: object) -> bytes:
    return json.dumps(obj).encode()


def ok(obj: object, mapping: FieldMapping = MAPPING) -> QueryLogEvent:
    value = obj if isinstance(obj, bytes) else encode(obj)
    event = decode(raw(value), mapping, LIMIT)
    assert _decode_slow(value, mapping) == event  # the fast path never changes the answer
    return event


def fail(value: bytes | None, mapping: FieldMapping = MAPPING, limit: int = LIMIT) -> DecodeError:
    with pytest.raises(DecodeError) as info:
        decode(raw(value), mapping, limit)
    assert info.value.reason in REASONS
    return info.value


def test_design_example_decodes_exactly() -> None:
    event = ok(DESIGN_EXAMPLE)
    assert event.event_id == "e-000123"
    assert event.timestamp == TEN_UTC
    assert event.question == "Hostel ka fee semester wise dena hai ya yearly?"
    assert event.user is not None
    assert (event.user.id, event.user.role, event.user.tenant) == ("u-77", "parent", "college-a")
    assert event.channel == "web"
    assert event.retrieval is not None
    assert event.retrieval.retriever == "prod-v3"
    assert event.retrieval.latency_ms == 35.0
    [passage] = event.retrieval.results
    assert (passage.id, passage.score, passage.rank) == ("p-0412", 12.3, 1)
    assert (passage.doc, passage.doc_type) == ("fee-circular-2026.pdf", "scanned_pdf")
    assert event.answer is not None
    assert (event.answer.text, event.answer.refused) == ("...", None)
    assert event.answer.citations == ("p-0412",)
    assert event.feedback is not None and event.feedback.rating == -1.0


def test_reasons_are_the_documented_codes() -> None:
    assert REASONS == (
        "tombstone", "too_large", "not_utf8", "not_json", "not_object",
        "missing_field", "wrong_type", "invalid_value",
    )  # fmt: skip


def test_tombstone() -> None:
    assert fail(None).reason == "tombstone"


def test_too_large_is_checked_before_decoding() -> None:
    value = encode(BASE)
    assert decode(raw(value), MAPPING, len(value)).event_id == "e-1"  # limit is inclusive
    error = fail(value, limit=len(value) - 1)
    assert error.reason == "too_large"
    assert error.detail == f"message is {len(value)} bytes; limit is {len(value) - 1}"
    assert fail(b"\xff" * 100, limit=10).reason == "too_large"  # not_utf8 never looked at


def test_max_event_bytes_below_one_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="max_event_bytes"):
        decode(raw(b"{}"), MAPPING, 0)


@pytest.mark.parametrize(
    "value", [b"\xff{}", b'{"question": "\xc3"}', b'{"q": "\xed\xa0\x80"}', b"\xc0\xaf"]
)
def test_not_utf8(value: bytes) -> None:
    error = fail(value)
    assert error.reason == "not_utf8"
    assert error.detail.startswith("invalid UTF-8 at byte ")


@pytest.mark.parametrize(
    "value",
    [b"", b"   ", b"{", b'{"a": 1} {"b": 2}', b"{'a': 1}", b'{"a": 1,}', b"nan", b"[1",
     b'{"a": "\x01"}', b"[" * 100_000 + b"]" * 100_000, b"[" + b"9" * 5000 + b"]"],
)  # fmt: skip
def test_not_json(value: bytes) -> None:
    assert fail(value).reason == "not_json"


@pytest.mark.parametrize(
    ("value", "kind"),
    [(b"[]", "array"), (b'"q"', "string"), (b"1", "number"), (b"null", "null"),
     (b"true", "boolean"), (b"-Infinity", "number")],
)  # fmt: skip
def test_not_object(value: bytes, kind: str) -> None:
    error = fail(value)
    assert (error.reason, error.detail) == ("not_object", f"expected a JSON object, got {kind}")


@pytest.mark.parametrize("name", ["event_id", "timestamp", "question"])
def test_missing_required_field_absent_or_null(name: str) -> None:
    for obj in ({k: v for k, v in BASE.items() if k != name}, {**BASE, name: None}):
        error = fail(encode(obj))
        assert error.reason == "missing_field"
        assert error.detail.startswith(f"missing required field '{name}' (aliases tried: ")


def dropped(obj: object, mapping: FieldMapping = MAPPING) -> tuple[QueryLogEvent, dict]:
    """Decode through every path (decode, decode_batch, the slow path): the same event, and
    the ``{(field, reason): n}`` that decode_batch counted."""
    value = obj if isinstance(obj, bytes) else encode(obj)
    with collect_dropped_fields() as counts:
        [(_, event)], dead = decode_batch([raw(value)], mapping, LIMIT)
    assert dead == []
    assert ok(value, mapping) == event
    return event, counts


# issue 18: a mistyped optional field used to dead-letter the whole event and its question
@pytest.mark.parametrize(
    ("fields", "field", "reason"),
    [
        ({"user": "u-1"}, "user", "wrong_type"),
        ({"user": {"role": 3, "tenant": "t"}}, "user.role", "wrong_type"),
        ({"channel": ["web"]}, "channel", "wrong_type"),
        ({"retrieval": {"latency_ms": "35", "retriever": "r"}}, "retrieval.latency_ms",
         "wrong_type"),
        ({"retrieval": {"results": "oops", "retriever": "r"}}, "retrieval.results",
         "wrong_type"),
        ({"retrieval": {"results": {"id": "p"}}}, "retrieval.results", "wrong_type"),
        ({"retrieval": {"results": ["p-1"]}}, "retrieval.results", "wrong_type"),
        ({"retrieval": {"results": [{"id": "p", "rank": "1"}]}}, "retrieval.results",
         "wrong_type"),
        ({"retrieval": {"results": [{"id": "a"}, {"score": 1}]}}, "retrieval.results",
         "missing_field"),
        # trial 24 (LOW 6): a string score, a numeric one included (the contract's score is
        # a number); the trace path counts the same field and reason (tests/service/traces)
        ({"retrieval": {"results": [{"id": "p", "score": "high"}]}}, "retrieval.results",
         "wrong_type"),
        ({"retrieval": {"results": [{"id": "p", "score": "12.3"}]}}, "retrieval.results",
         "wrong_type"),
        ({"retrieval": {"latency_ms": -1}}, "retrieval.latency_ms", "invalid_value"),
        ({"retrieval": {"results": [{"id": "p", "rank": 0}]}}, "retrieval.results",
         "invalid_value"),
        ({"answer": 5}, "answer", "wrong_type"),
        ({"answer": {"refused": "no", "text": "t"}}, "answer.refused", "wrong_type"),
        ({"answer": {"citations": [1.5], "text": "t"}}, "answer.citations", "wrong_type"),
        ({"feedback": {"rating": "bad"}}, "feedback.rating", "wrong_type"),
        ({"feedback": "up"}, "feedback", "wrong_type"),
    ],
)  # fmt: skip
def test_mistyped_optional_field_is_dropped_and_counted(
    fields: dict[str, Any], field: str, reason: str
) -> None:
    event, counts = dropped({**BASE, **fields})
    assert (event.event_id, event.question, event.timestamp) == ("e-1", "q?", TEN_UTC)
    assert counts == {(field, reason): 1}
    assert field in OPTIONAL_FIELD_PATHS and reason in DROP_REASONS
    top, _, sub = field.partition(".")
    record = getattr(event, top)
    if not sub:
        assert record is None
        return
    assert record is not None  # the record stays, without the bad field
    assert getattr(record, sub) in (None, ())
    kept = {k: v for k, v in fields[top].items() if k != sub}
    assert all(getattr(record, k) is not None for k in kept)


def test_several_dropped_fields_are_counted_once_each() -> None:
    obj = {
        **BASE,
        "channel": 2,
        "feedback": {"rating": "x"},
        "user": {"role": 1, "id": [2]},
        "retrieval": {"results": [{"id": "p", "rank": 0}, {"id": "q", "rank": "2"}]},
    }
    event, counts = dropped(obj)
    assert event.question == "q?"
    assert counts == {("channel", "wrong_type"): 1, ("feedback.rating", "wrong_type"): 1,
                      ("user.role", "wrong_type"): 1, ("user.id", "wrong_type"): 1,
                      ("retrieval.results", "invalid_value"): 1}  # fmt: skip


def test_required_field_problems_still_dead_letter_with_optional_ones() -> None:
    error = fail(encode({**BASE, "timestamp": "garbage", "feedback": {"rating": "bad"}}))
    assert error.reason == "wrong_type" and error.detail.startswith("field 'timestamp'")
    with collect_dropped_fields() as counts:
        decoded, dead = decode_batch([raw(encode({**BASE, "question": " "}))], MAPPING, LIMIT)
    assert decoded == [] and [d.reason for d in dead] == ["invalid_value"] and counts == {}


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"timestamp": True},
         "field 'timestamp': expected RFC 3339 string or epoch seconds/milliseconds number"),
        ({"timestamp": "garbage"},
         "field 'timestamp': expected RFC 3339 string or epoch seconds/milliseconds number"),
        ({"event_id": 1.5}, "field 'event_id': expected string or integer"),
        ({"question": ["q"]}, "field 'question': expected string"),
    ],
)  # fmt: skip
def test_wrong_type_names_field_and_expected_type(fields: dict[str, Any], detail: str) -> None:
    error = fail(encode({**BASE, **fields}))
    assert (error.reason, error.detail) == ("wrong_type", detail)


@pytest.mark.parametrize(
    ("fields", "detail"),
    [
        ({"question": " \t"}, "field 'question': must not be blank"),
        ({"event_id": ""}, "field 'event_id': must not be blank"),
        ({"event_id": "e" * 257}, "field 'event_id': longer than 256 characters"),
        ({"timestamp": "2026-02-30T10:00:00Z"},
         "field 'timestamp': not a valid calendar date and time"),
        ({"timestamp": "0001-01-01T00:00:00Z"},
         "field 'timestamp': timestamp outside 1970-01-01 .. 9999-12-31"),
        ({"timestamp": -5}, "field 'timestamp': epoch must be a finite number >= 0"),
    ],
)  # fmt: skip
def test_invalid_value_names_field_and_problem(fields: dict[str, Any], detail: str) -> None:
    error = fail(encode({**BASE, **fields}))
    assert (error.reason, error.detail) == ("invalid_value", detail)


def test_several_problems_report_the_first_and_count_the_rest() -> None:
    error = fail(encode({**BASE, "question": 1, "channel": 2, "feedback": 3}))
    assert error.detail == "field 'question': expected string (and 2 more problems)"


def test_nan_and_infinity_are_rejected_where_read_and_ignored_elsewhere() -> None:
    text = '{"event_id": "e", "timestamp": 0, "question": "q", "x": [NaN, -Infinity]}'
    assert ok(text.encode()).event_id == "e"
    bad = text.replace('"x"', '"feedback": {"rating": NaN}, "y"').encode()
    for value in (bad, bad.replace(b"NaN}", b"1e999}")):
        event, counts = dropped(value)  # an optional field: dropped, the event kept
        assert event.feedback is not None and event.feedback.rating is None
        assert counts == {("feedback.rating", "invalid_value"): 1}
    error = fail(text.replace('"timestamp": 0', '"timestamp": NaN').encode())
    assert (error.reason, error.detail) == (
        "invalid_value", "field 'timestamp': epoch must be a finite number >= 0"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("stamp", "expected"),
    [
        ("2026-11-29T10:00:00Z", TEN_UTC),
        ("2026-11-29T15:30:00+05:30", TEN_UTC),
        ("2026-11-29T10:00:00", TEN_UTC),
        (1_795_946_400, TEN_UTC),
        (1_795_946_400_000, TEN_UTC),
        (1_795_946_400.25, TEN_UTC.replace(microsecond=250_000)),
        (1_795_946_400_250.5, TEN_UTC.replace(microsecond=250_500)),
    ],
)
def test_timestamps(stamp: object, expected: datetime) -> None:
    assert ok({**BASE, "timestamp": stamp}).timestamp == expected


@pytest.mark.parametrize("stamp", ["garbage", "2026-11-29", "", [], {}, False, "1795946400"])
def test_garbage_timestamps_are_wrong_type(stamp: object) -> None:
    assert fail(encode({**BASE, "timestamp": stamp})).reason == "wrong_type"


@pytest.mark.parametrize(
    ("alias", "field", "value"),
    [("query", "question", "q?"), ("input", "question", "q?"), ("prompt", "question", "q?"),
     ("id", "event_id", "e-1"), ("request_id", "event_id", "e-1"),
     ("ts", "timestamp", "2026-11-29T10:00:00Z"), ("time", "timestamp", 1_795_946_400),
     ("created_at", "timestamp", "2026-11-29T10:00:00Z")],
)  # fmt: skip
def test_required_field_aliases(alias: str, field: str, value: object) -> None:
    obj = {k: v for k, v in BASE.items() if k != field} | {alias: value}
    event = ok(obj)
    assert (event.event_id, event.timestamp, event.question) == ("e-1", TEN_UTC, "q?")


@pytest.mark.parametrize("alias", ["response", "output"])
def test_answer_aliases_take_a_string_or_an_object(alias: str) -> None:
    assert ok({**BASE, alias: "It is yearly."}).answer.text == "It is yearly."  # type: ignore[union-attr]
    answer = ok({**BASE, alias: {"text": "No.", "refused": True}}).answer
    assert answer is not None and (answer.text, answer.refused) == ("No.", True)
    assert ok({**BASE, "answer": "plain"}).answer.text == "plain"  # type: ignore[union-attr]


@pytest.mark.parametrize("alias", ["contexts", "documents"])
def test_results_aliases(alias: str) -> None:
    items = [{"id": "p-1", "score": 2.0}, {"doc_id": 7}, "a passage text"]
    retrieval = ok({**BASE, alias: items}).retrieval
    assert retrieval is not None
    assert [(p.id, p.score) for p in retrieval.results] == [("p-1", 2.0), ("7", None)]
    as_ids = ok({**BASE, alias: ["p-3", "p-1"]}, FieldMapping(string_results="ids")).retrieval
    assert as_ids is not None
    assert [(p.id, p.rank) for p in as_ids.results] == [("p-3", 1), ("p-1", 2)]


@pytest.mark.parametrize("alias", ["doc_id", "passage_id", "chunk_id"])
def test_passage_id_aliases(alias: str) -> None:
    retrieval = ok({**BASE, "retrieval": {"results": [{alias: "p-9", "rank": 1}]}}).retrieval
    assert retrieval is not None and retrieval.results[0].id == "p-9"


def test_string_contexts_are_dropped_by_default_but_the_event_is_kept() -> None:
    retrieval = ok({**BASE, "contexts": ["text one", "text two"]}).retrieval
    assert retrieval is not None and retrieval.results == ()


def test_ignored_string_contexts_are_counted_once_per_event() -> None:
    """Trial 12 F2: RAGAS-style ``contexts`` texts left ``dropped`` empty, so a log whose
    results were all texts looked like one without retrieval. Each event with an ignored
    string item counts one ``(retrieval.results, wrong_type)``; ids or objects count none."""
    with collect_dropped_fields() as drops:
        for contexts in (["text one", "text two"], [{"id": "p-1"}, "a text"], [{"id": "p-1"}]):
            decode(raw(encode({**BASE, "contexts": contexts})), MAPPING, LIMIT)
    assert drops == {("retrieval.results", "wrong_type"): 2}
    ids = FieldMapping(string_results="ids")
    with collect_dropped_fields() as drops:
        got = decode(raw(encode({**BASE, "contexts": ["p-1", "p-2"]})), ids, LIMIT)
    assert drops == {}
    assert got.retrieval is not None and [r.id for r in got.retrieval.results] == ["p-1", "p-2"]


def test_canonical_fields_win_over_aliases() -> None:
    obj = {**BASE, "query": "alias", "id": "x", "ts": 0, "response": "alias answer",
           "answer": {"text": "canonical"}, "contexts": [{"id": "alias"}],
           "retrieval": {"results": [{"id": "canonical", "doc_id": "alias"}]}}  # fmt: skip
    event = ok(obj)
    assert (event.question, event.event_id, event.timestamp) == ("q?", "e-1", TEN_UTC)
    assert event.answer is not None and event.answer.text == "canonical"
    assert event.retrieval is not None and event.retrieval.results[0].id == "canonical"


def test_null_canonical_falls_back_to_aliases_and_keeps_the_rest_of_retrieval() -> None:
    obj = {**BASE, "question": None, "prompt": "from prompt", "answer": None, "output": "out",
           "retrieval": {"retriever": "prod", "results": None},
           "contexts": [{"id": "p"}]}  # fmt: skip
    event = ok(obj)
    assert event.question == "from prompt"
    assert event.answer is not None and event.answer.text == "out"
    assert event.retrieval is not None
    assert (event.retrieval.retriever, event.retrieval.results[0].id) == ("prod", "p")


def test_user_configured_and_dotted_aliases() -> None:
    mapping = FieldMapping(
        question=("query", "input", "prompt", "my_q"), event_id=("meta.request_id",),
        answer=("llm.reply",), results=("hits",), passage_id=("metadata.id",),
    )  # fmt: skip
    obj = {"my_q": "q?", "meta": {"request_id": 5}, "timestamp": 0, "llm": {"reply": "r"},
           "hits": [{"metadata": {"id": "p-1"}}]}  # fmt: skip
    event = ok(obj, mapping)
    assert (event.question, event.event_id) == ("q?", "5")
    assert event.answer is not None and event.answer.text == "r"
    assert event.retrieval is not None and event.retrieval.results[0].id == "p-1"
    assert ok({**BASE, "a.b": "literal key wins"}, FieldMapping(answer=("a.b",))).answer


def test_alias_key_spelled_with_escapes_is_still_found() -> None:
    value = encode(BASE)[:-1] + b', "cont\\u0065xts": [{"id": "p"}], "outp\\u0075t": "a"}'
    event = ok(value)
    assert event.retrieval is not None and event.retrieval.results[0].id == "p"
    assert event.answer is not None and event.answer.text == "a"


def test_detail_says_which_alias_the_bad_value_came_from() -> None:
    error = fail(encode({**{k: v for k, v in BASE.items() if k != "question"}, "query": 3}))
    assert error.detail == "field 'question' (read from 'query'): expected string"
    event, counts = dropped({**BASE, "contexts": [{"id": "p", "rank": -1}]})
    assert event.retrieval is not None and event.retrieval.results == ()
    assert counts == {("retrieval.results", "invalid_value"): 1}


def test_json_details() -> None:
    assert fail(b'{"a": 1,}').detail == "invalid JSON: Expecting property name enclosed in " \
        "double quotes at line 1 column 9"  # fmt: skip
    assert fail(b"[" * 100_000).detail in {
        "invalid JSON: nesting too deep", "invalid JSON: Expecting value at line 1 column 100001"
    }  # fmt: skip


def test_bom_duplicate_keys_and_surrogates() -> None:
    assert ok(b"\xef\xbb\xbf" + encode(BASE)).event_id == "e-1"
    assert (
        ok(b'{"event_id": "a", "event_id": "b", "timestamp": 0, "question": "q"}').event_id == "b"
    )
    lone = ok(encode(BASE)[:-1] + b', "channel": "\\ud83d", "extra": "\\udc00"}')
    assert lone.channel == "\ufffd"  # a JS producer cut an emoji in half
    pair = ok(encode(BASE)[:-1] + b', "channel": "\\ud83d\\ude00"}')
    assert pair.channel == "😀"
    # in keys too: an unknown top-level key is still ignored, a nested one still read
    keyed = ok(encode(BASE)[:-1] + b', "\\ud800x": 1, "user": {"role": "r", "\\udc00": 2}}')
    assert keyed.user is not None and keyed.user.role == "r"


def test_not_json_detail_says_at_once() -> None:
    # json's own messages end in "at" before the position it appends after a colon
    assert fail(b'{"question": "a\x01"}').detail == (
        "invalid JSON: Invalid control character at line 1 column 16"
    )
    assert fail(b'{"question": "abc').detail == (
        "invalid JSON: Unterminated string starting at line 1 column 14"
    )


@pytest.mark.parametrize(
    "fields",
    [
        {"question": 12345, "x": SECRET},
        {"question": [SECRET]},
        {"question": {"email": SECRET}},
        {"timestamp": SECRET},
        {"timestamp": f"2026-02-30T10:00:00Z{SECRET}"},
        {"event_id": SECRET * 20},
        {"event_id": {"email": SECRET}},
        {"question": 7, "user": SECRET, "channel": [SECRET]},
        {"event_id": [SECRET], "retrieval": {"results": [{"id": SECRET, "rank": SECRET}]}},
        {"question": [SECRET], "answer": {"text": [SECRET], "refused": SECRET}},
        {"question": None, "query": [SECRET]},
        {"question": "   ", SECRET: SECRET},
    ],
)
def test_details_never_echo_message_content(fields: dict[str, Any]) -> None:
    for mapping in (MAPPING, FieldMapping(string_results="ids")):
        error = fail(encode({**BASE, **fields}), mapping)
        assert SECRET not in error.detail
        assert "alice" not in str(error)


def test_json_error_detail_does_not_echo_content() -> None:
    for value in (f'{{"q": "{SECRET}\\x"}}', f'{{"{SECRET}": ]}}', f"{SECRET}"):
        error = fail(value.encode())
        assert error.reason == "not_json" and SECRET not in error.detail


def test_decode_batch_splits_good_and_dead_in_order() -> None:
    messages = [raw(encode(BASE)), raw(None), raw(b"[]"), raw(encode({**BASE, "event_id": "e-2"}))]
    decoded, dead = decode_batch(messages, MAPPING, LIMIT)
    assert [(m, e.event_id) for m, e in decoded] == [(messages[0], "e-1"), (messages[3], "e-2")]
    assert dead == [
        DeadLetter(messages[1], "tombstone", "message value is null (tombstone)"),
        DeadLetter(messages[2], "not_object", "expected a JSON object, got array"),
    ]
    assert decode_batch([], MAPPING, LIMIT) == ([], [])
    with pytest.raises(ValueError):
        decode_batch(messages, MAPPING, 0)


@pytest.mark.parametrize(
    "template",
    [
        b'{"event_id": "e-1", "timestamp": 0, "question": "q", "x": %s}',
        b'{"x": %s, "event_id": "e-1", "timestamp": 0, "question": "q"}',
        b'{"event_id": "e-1", "timestamp": 0, "question": "q", "retrieval": {"results": '
        b'[{"id": "p", "x": [%s]}]}, "answer": {"text": "a"}}',
    ],
)
def test_integer_over_4300_digits_in_an_ignored_field_is_not_json(template: bytes) -> None:
    # json.loads refuses ints over 4,300 digits (sys.get_int_max_str_digits()), and so does
    # pydantic-core's parser; msgspec skips them, so its answer must not be kept.
    assert ok(template % (b"7" * 4300)).event_id == "e-1"  # the limit itself is fine
    for digits in (b"7" * 4301, b"-" + b"7" * 4301, b"7" * 50_000):
        value = template % digits
        assert fail(value).detail == "invalid JSON: number too long"
        assert decode_batch([raw(value)], MAPPING, LIMIT) == (
            [], [DeadLetter(raw(value), "not_json", "invalid JSON: number too long")]
        )  # fmt: skip


def test_integer_over_4300_digits_is_found_wherever_it_starts() -> None:
    # the fast path samples every 2,150th byte before it scans: move the run across them
    for pad in [*range(0, 4400, 43), 2149, 2150, 2151, 4299, 4300, 4301]:
        for digits, expected in ((4300, None), (4301, "invalid JSON: number too long")):
            value = encode({**BASE, "pad": "a" * pad})[:-1] + b', "x": ' + b"5" * digits + b"}"
            if expected is None:
                assert ok(value).event_id == "e-1"
            else:
                assert fail(value).detail == expected


@pytest.mark.parametrize("depth", [5_000, 100_000])
def test_nesting_deeper_than_the_recursion_limit_in_an_ignored_field_is_not_json(
    depth: int,
) -> None:
    # msgspec raises RecursionError (not one of its own errors) on deep skipped values;
    # json.loads does too, which decode reports as not_json instead of crashing the consumer.
    for inner in (b"[" * depth + b"]" * depth, b'{"a":' * depth + b"1" + b"}" * depth):
        value = encode(BASE)[:-1] + b', "x": ' + inner + b"}"
        assert fail(value).detail == "invalid JSON: nesting too deep"
        assert decode_batch([raw(value)], MAPPING, LIMIT) == (
            [], [DeadLetter(raw(value), "not_json", "invalid JSON: nesting too deep")]
        )  # fmt: skip


@pytest.mark.parametrize(
    ("stamp", "problem"),
    [
        (10**400, "timestamp outside 1970-01-01 .. 9999-12-31"),  # as 10**308 is
        (-(10**400), "epoch must be a finite number >= 0"),  # as -1 is
    ],
    ids=["1e400", "-1e400"],
)
def test_epoch_integer_too_large_for_a_float_is_invalid_value(stamp: int, problem: str) -> None:
    error = fail(encode({**BASE, "timestamp": stamp}))
    assert (error.reason, error.detail) == ("invalid_value", f"field 'timestamp': {problem}")


# issue 22: a pipeline that reads no record (analytics off) has the decoder skip them
def test_without_records_the_design_example_keeps_its_other_fields() -> None:
    [(_, event)], dead = decode_batch([raw(DESIGN_EXAMPLE)], MAPPING, LIMIT, records=False)
    assert dead == []
    assert (event.event_id, event.timestamp, event.channel) == ("e-000123", TEN_UTC, "web")
    assert event.question == "Hostel ka fee semester wise dena hai ya yearly?"
    assert (event.user, event.retrieval, event.answer, event.feedback) == (None,) * 4


def test_without_records_a_bad_record_is_not_read_but_a_bad_channel_still_counts() -> None:
    bad = {**BASE, "retrieval": {"results": [{"id": "p-1", "rank": 0}]}, "channel": 7,
           "user": "u-1", "answer": {"citations": [1.5]},
           "feedback": {"rating": "good"}}  # fmt: skip
    with collect_dropped_fields() as full:
        [(_, event)], _ = decode_batch([raw(encode(bad))], MAPPING, LIMIT)
    assert full == {("retrieval.results", "invalid_value"): 1, ("channel", "wrong_type"): 1,
                    ("user", "wrong_type"): 1, ("answer.citations", "wrong_type"): 1,
                    ("feedback.rating", "wrong_type"): 1}  # fmt: skip
    with collect_dropped_fields() as bare:
        [(_, event)], _ = decode_batch([raw(encode(bad))], MAPPING, LIMIT, records=False)
    assert bare == {("channel", "wrong_type"): 1}
    assert (event.event_id, event.channel, event.retrieval) == ("e-1", None, None)


def test_without_records_the_dead_letters_are_the_same() -> None:
    values = [b"{", b"[]", encode({"timestamp": "2026-11-29T10:00:00Z", "question": "q"}),
              encode({**BASE, "question": " "}), encode({**BASE, "retrieval": 3})]  # fmt: skip
    messages = [raw(v) for v in values]
    full_ok, full_dead = decode_batch(messages, MAPPING, LIMIT)
    bare_ok, bare_dead = decode_batch(messages, MAPPING, LIMIT, records=False)
    assert [d.reason for d in bare_dead] == ["not_json", "not_object", "missing_field",
                                             "invalid_value"]  # fmt: skip
    assert bare_dead == full_dead
    assert [m for m, _ in bare_ok] == [m for m, _ in full_ok] == [messages[4]]


# issue 22: without records no "question" key is looked for before msgspec is tried
def test_without_records_an_escaped_or_aliased_question_gives_the_full_decoders_event() -> None:
    escaped = (b'{"event_id": "e-1", "timestamp": "2026-11-29T10:00:00Z", '
               b'"\\u0071uestion": "fee?", "query": "not this", "channel": "web"}')  # fmt: skip
    aliased = encode({"id": 7, "ts": 1795946400, "query": "hostel?", "channel": "api"})
    bare_ok, bare_dead = decode_batch([raw(escaped), raw(aliased)], MAPPING, LIMIT, records=False)
    assert bare_dead == []
    # worked out by hand: the canonical key wins over its alias, the aliases fill the rest
    assert [(e.event_id, e.timestamp, e.question, e.channel) for _, e in bare_ok] == [
        ("e-1", TEN_UTC, "fee?", "web"),
        ("7", TEN_UTC, "hostel?", "api"),  # 1,795,946,400 s = 20,786 days + 10 h
    ]
    full_ok, _ = decode_batch([raw(escaped), raw(aliased)], MAPPING, LIMIT)
    assert bare_ok == full_ok
