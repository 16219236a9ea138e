"""KafkaSourceConfig validation, secrets handling and the DLQ record (no broker)."""

from __future__ import annotations

import base64
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from consumers.base import DeadLetter, Origin, RawMessage
from consumers.errors import default_on_error, suppress_on_error
from consumers.kafka_source import DLQ_MAX_LETTER_BYTES, KafkaSourceConfig, dead_letter_value

BASE: dict[str, Any] = {"bootstrap_servers": "k:9092", "topic": "queries", "consumer_group": "g"}
SASL: dict[str, Any] = {
    **BASE,
    "security_protocol": "SASL_SSL",
    "sasl_mechanism": "SCRAM-SHA-512",
    "sasl_username": "goldwatch",
    "sasl_password": "s3cret-pw",
    "ssl_cafile": "/etc/ca.pem",
}


def test_defaults_and_dlq_topic() -> None:
    cfg = KafkaSourceConfig(**BASE)
    assert cfg.dlq_topic == "queries.dlq"
    assert cfg.auto_offset_reset == "earliest"
    assert KafkaSourceConfig(**BASE, dlq_topic="dead").dlq_topic == "dead"
    kwargs = cfg.consumer_kwargs()
    assert kwargs["enable_auto_commit"] is False and kwargs["group_id"] == "g"
    assert "sasl_plain_password" not in kwargs


def test_config_is_frozen() -> None:
    cfg = KafkaSourceConfig(**BASE)
    with pytest.raises(ValidationError):
        cfg.topic = "other"  # type: ignore[misc]


def test_secrets_are_passed_through_but_never_printed() -> None:
    cfg = KafkaSourceConfig(**SASL)
    kwargs = cfg.client_kwargs()
    assert kwargs["sasl_plain_password"] == "s3cret-pw"
    assert kwargs["sasl_plain_username"] == "goldwatch"
    assert kwargs["security_protocol"] == "SASL_SSL" and kwargs["ssl_cafile"] == "/etc/ca.pem"
    for text in (repr(cfg), str(cfg), cfg.model_dump_json(), str(cfg.model_dump())):
        assert "s3cret-pw" not in text


@pytest.mark.parametrize(
    "overrides",
    [
        {"security_protocol": "SASL_PLAINTEXT"},  # no mechanism/credentials
        {"heartbeat_interval_ms": 3000, "session_timeout_ms": 3000},
        {"max_poll_records": 0},
        {"security_protocol": "TLS"},
        {"sasl_mechanism": "GSSAPI"},
        {"unknown_field": 1},
        {"max_event_time_skew_s": -1},
        {"max_event_time_skew_s": float("inf")},
    ],
)
def test_invalid_settings_are_rejected(overrides: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        KafkaSourceConfig(**{**BASE, **overrides})


def test_dead_letter_value_carries_reason_origin_and_base64_bytes() -> None:
    msg = RawMessage(
        value=b"\xff{", origin=Origin("queries", 3, 17), key=b"u-7", timestamp_ms=1700000000000
    )
    body = json.loads(dead_letter_value(DeadLetter(msg, "not_utf8", "byte 0 invalid")))
    assert body == {
        "reason": "not_utf8",
        "detail": "byte 0 invalid",
        "origin": {"topic": "queries", "partition": 3, "offset": 17},
        "value_b64": base64.b64encode(b"\xff{").decode(),
        "key_b64": base64.b64encode(b"u-7").decode(),
        "timestamp_ms": 1700000000000,
    }
    tombstone = RawMessage(value=None, origin=Origin("queries", 0, 1))
    body = json.loads(dead_letter_value(DeadLetter(tombstone, "tombstone", "value is null")))
    assert body["value_b64"] is None and body["key_b64"] is None


def test_a_dead_letter_too_big_for_the_broker_keeps_a_prefix_and_says_so() -> None:
    # 900 kB of value: base64 alone is 1,200,000 characters, over the 1,000,000-byte bound
    value = bytes(range(256)) * 3515 + b"tail"  # 899,844 bytes
    key = b"k" * 5000
    msg = RawMessage(value=value, origin=Origin("queries", 1, 9), key=key, timestamp_ms=5)
    letter = dead_letter_value(DeadLetter(msg, "too_large", "message is 899844 bytes"))
    assert len(letter) <= DLQ_MAX_LETTER_BYTES
    body = json.loads(letter)
    assert body["truncated"] is True
    assert (body["value_bytes"], body["key_bytes"]) == (899_844, 5000)
    assert body["value_sha256"] == hashlib.sha256(value).hexdigest()
    assert body["key_sha256"] == hashlib.sha256(key).hexdigest()
    assert base64.b64decode(body["key_b64"]) == key  # 6,668 characters: under half the room
    kept = base64.b64decode(body["value_b64"])
    assert value.startswith(kept)
    # as much as fits: one more 3-byte group of base64 would cross the bound
    assert len(letter) + 4 > DLQ_MAX_LETTER_BYTES
    assert body["reason"] == "too_large" and body["origin"]["offset"] == 9
    # a key over half the room is cut to half of it; small letters are never marked
    small = json.loads(dead_letter_value(DeadLetter(msg, "too_large", "x"), max_bytes=4096))
    assert len(base64.b64decode(small["key_b64"])) < 2048 < len(key)
    assert key.startswith(base64.b64decode(small["key_b64"]))
    assert "truncated" not in json.loads(
        dead_letter_value(DeadLetter(RawMessage(b"{", Origin("q", 0, 1)), "not_json", "x"))
    )


def _letter_as_json_dumps_writes_it(letter: DeadLetter) -> bytes:
    """The letter's body as the DLQ format defines it, written by ``json.dumps`` (compact,
    ``ensure_ascii``): the bytes ``dead_letter_value`` gave before msgspec wrote them."""
    msg = letter.message
    body = {
        "reason": letter.reason,
        "detail": letter.detail,
        "origin": {"topic": msg.origin.topic, "partition": msg.origin.partition,
                   "offset": msg.origin.offset},
        "value_b64": None if msg.value is None else base64.b64encode(msg.value).decode(),
        "key_b64": None if msg.key is None else base64.b64encode(msg.key).decode(),
        "timestamp_ms": msg.timestamp_ms,
    }  # fmt: skip
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


@pytest.mark.parametrize(
    "detail",
    [
        "message is 66376 bytes; limit is 65536",
        "".join(map(chr, range(128))),  # every ASCII character, controls and DEL included
        "field 'question': expected string, got ✓ ü",  # non-ASCII: escaped as \\uXXXX
        "lone surrogate \ud800 here",  # msgspec refuses it, json.dumps writes it escaped
    ],
)
def test_dead_letter_value_is_byte_for_byte_what_json_dumps_writes(detail: str) -> None:
    value = bytes(range(256)) * 300  # 76,800 bytes: a too_large letter's size
    msg = RawMessage(value=value, origin=Origin("queries", 2, 41), key=b"k\x00\xff",
                     timestamp_ms=1_700_000_000_123)  # fmt: skip
    for letter in (
        DeadLetter(msg, "too_large", detail),
        DeadLetter(RawMessage(None, Origin("queries", 0, 7)), "tombstone", detail),
    ):
        assert dead_letter_value(letter) == _letter_as_json_dumps_writes_it(letter)


def _cut_letter_as_json_dumps_writes_it(letter: DeadLetter, max_bytes: int) -> bytes:
    """A letter over ``max_bytes`` as its docstring defines it, written by ``json.dumps``:
    the fixed fields, ``truncated``, each present part's size and SHA-256, and the longest
    whole-3-byte prefixes whose base64 fits (the key's in half the room at most)."""
    msg = letter.message
    body: dict[str, Any] = {
        "reason": letter.reason, "detail": letter.detail,
        "origin": {"topic": msg.origin.topic, "partition": msg.origin.partition,
                   "offset": msg.origin.offset},
        "value_b64": None, "key_b64": None, "timestamp_ms": msg.timestamp_ms, "truncated": True,
    }  # fmt: skip
    for name, raw in (("value", msg.value), ("key", msg.key)):
        if raw is not None:
            body[f"{name}_b64"] = ""
            body[f"{name}_bytes"] = len(raw)
            body[f"{name}_sha256"] = hashlib.sha256(raw).hexdigest()
    room = max_bytes - len(json.dumps(body, separators=(",", ":")).encode())
    if msg.key is not None:
        key_chars = min(room // 2 // 4 * 4, (len(msg.key) + 2) // 3 * 4)
        body["key_b64"] = base64.b64encode(msg.key[: key_chars // 4 * 3]).decode()
        room -= len(body["key_b64"])
    if msg.value is not None:
        body["value_b64"] = base64.b64encode(msg.value[: room // 4 * 3]).decode()
    return json.dumps(body, separators=(",", ":")).encode("utf-8")


@pytest.mark.parametrize("detail", ["message is 899844 bytes", "field ✓ ü", "lone \ud800"])
@pytest.mark.parametrize("key", [None, b"u-7", b"k" * 5000])
@pytest.mark.parametrize("max_bytes", [1024, 4096, DLQ_MAX_LETTER_BYTES])
def test_a_cut_dead_letter_is_byte_for_byte_what_json_dumps_writes(
    detail: str, key: bytes | None, max_bytes: int
) -> None:
    value = bytes(range(256)) * 3515 + b"tail"  # 899,844 bytes: over every bound here
    msg = RawMessage(value=value, origin=Origin("queries", 1, 9), key=key, timestamp_ms=5)
    letter = DeadLetter(msg, "too_large", detail)
    assert dead_letter_value(letter, max_bytes) == _cut_letter_as_json_dumps_writes_it(
        letter, max_bytes
    )


def test_error_callbacks_log_topic_partition_offset(caplog: pytest.LogCaptureFixture) -> None:
    msg = RawMessage(value=b"x", origin=Origin("queries", 2, 5))
    logger = logging.getLogger("goldwatch.test")
    with caplog.at_level(logging.WARNING, logger="goldwatch.test"):
        assert default_on_error(ValueError("bad"), msg, logger) is False
        assert suppress_on_error(ValueError("bad"), None, logger) is True
    assert 'partition="queries[2]" offset=5' in caplog.text


@pytest.mark.parametrize(
    "field",
    ["sasl_password_file", "ssl_password_file", "ssl_cafile", "ssl_certfile", "ssl_keyfile",
     "ssl_crlfile"],
)  # fmt: skip
@pytest.mark.parametrize("value", ["", "  "])
def test_an_empty_file_setting_names_the_field(field: str, value: str) -> None:
    """An empty environment variable (``GOLDWATCH_KAFKA__SASL_PASSWORD_FILE=``) was read as
    the path ``.`` ("cannot read sasl_password_file from .: IsADirectoryError")."""
    settings = {**SASL, "sasl_password": None} if field == "sasl_password_file" else BASE
    with pytest.raises(ValidationError) as raised:
        KafkaSourceConfig(**{**settings, field: value})
    (error,) = raised.value.errors()
    assert error["loc"] == (field,) and "must not be empty" in error["msg"]


def test_the_event_time_alignment_bound_is_set_or_derived(tmp_path: Path) -> None:
    """``kafka.max_event_time_skew_s``: as set (0: off); unset, half the drift's allowed
    lateness (half a bucket when that is 0) with analytics on, off without."""
    from service.runtime.process import alignment_skew_s
    from service.settings import load_settings

    def bound(text: str) -> float:
        path = tmp_path / "goldwatch.yaml"
        kafka = "kafka: {bootstrap_servers: 'k:9092', topic: q, consumer_group: g"
        path.write_text(f"source: {{kind: kafka}}\n{kafka}{text}}}\n", encoding="utf-8")
        return alignment_skew_s(load_settings(path))

    assert bound("") == 150.0
    assert bound(", max_event_time_skew_s: 30") == 30.0
    assert bound(", max_event_time_skew_s: 0") == 0.0
    assert bound("}\nanalytics: {drift: {allowed_lateness_s: 0, bucket_s: 120}") == 60.0
    assert bound("}\nanalytics: {enabled: false") == 0.0
