"""``consumers.harvest_sink``'s record encoding, without a broker (the sink against a real Tansu
broker: test_harvest_sink.py): the key is what compaction keeps one record per, the value the
record as compact UTF-8 JSON."""

from __future__ import annotations

from consumers.harvest_sink import candidate_key, candidate_value


def test_the_key_is_the_normalised_question_in_utf8() -> None:
    record = {"id": "c-7", "normalised": "फीस कब जमा करें", "count": 3}
    assert candidate_key(record) == "फीस कब जमा करें".encode()


def test_the_value_is_compact_utf8_json_in_the_records_order() -> None:
    record = {"id": "c-7", "normalised": "hostel fee kab", "count": 3, "languages": ["hi-Latn"]}
    expected = '{"id":"c-7","normalised":"hostel fee kab","count":3,"languages":["hi-Latn"]}'
    assert candidate_value(record) == expected.encode("utf-8")
    assert candidate_value({"normalised": "é"}) == '{"normalised":"é"}'.encode()  # not \u00e9
