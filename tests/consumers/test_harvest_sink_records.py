"""``consumers.harvest_sink``'s record encoding, without a broker (the sink against a real Tansu
broker: test_harvest_sink.py): the key is what compaction keeps one record per — the question
and the replica's writer id, so two replicas never overwrite each other's counts (trial 46
F1) —, the value the record plus its writer as compact UTF-8 JSON."""

from __future__ import annotations

import pytest

from consumers.harvest_sink import KafkaCandidateSink, candidate_key, candidate_value
from service.settings.kafka import KafkaSourceConfig


def test_the_key_is_the_normalised_question_and_the_writer_in_utf8() -> None:
    record = {"id": "c-7", "normalised": "फीस कब जमा करें", "count": 3}
    assert candidate_key(record, "0a1b") == "फीस कब जमा करें\n0a1b".encode()
    assert candidate_key(record, "0a1b") != candidate_key(record, "2c3d")


def test_the_value_is_compact_utf8_json_in_the_records_order_with_its_writer() -> None:
    record = {"id": "c-7", "normalised": "hostel fee kab", "count": 3, "languages": ["hi-Latn"]}
    expected = ('{"id":"c-7","normalised":"hostel fee kab","count":3,"languages":["hi-Latn"],'
                '"writer":"w1"}')  # fmt: skip
    assert candidate_value(record, "w1") == expected.encode("utf-8")
    assert candidate_value({"normalised": "é"}, "w") == '{"normalised":"é","writer":"w"}'.encode()


def test_a_sink_needs_a_writer() -> None:
    config = KafkaSourceConfig(bootstrap_servers="127.0.0.1:1", topic="t", consumer_group="g")
    with pytest.raises(ValueError, match="writer"):
        KafkaCandidateSink(config, "gw-harvest", "")
