"""Keyed pseudonyms: with ``analytics.pii_key`` (or ``pii_key_file``) an ``event_id`` or
``user.id`` holding personal data becomes ``pii-`` + 32 hex digits of HMAC-SHA256 under the
key, so a guessed e-mail address can no longer be checked against its pseudonym by anyone
without the key (fresh-user trial). Without a key the unkeyed SHA-256 stays, so existing state
stays consistent. The same key gives the same pseudonyms after a restart: a redelivery is
still dropped. Expected pseudonyms are computed here with :mod:`hmac` and :mod:`hashlib`."""

from __future__ import annotations

import hashlib
import hmac
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from service.cli import main
from service.demo import demo_path
from service.events import QueryLogEvent
from service.jobs.replay import run_replay
from service.pii import Pseudonymiser, pseudonymise
from service.pipeline import Pipeline, PipelineConfig
from service.runtime.live import default_pipeline
from service.settings import ConfigError, effective_config, load_settings

KEY = "k3y-" + "0123456789abcdef" * 2  # 36 characters
OTHER_KEY = "another-" + "fedcba9876543210" * 2
STAMP = "2026-11-29T10:00:00Z"


def keyed_id(raw: str, key: str = KEY) -> str:
    """RFC 2104 HMAC-SHA256 of the raw id, first 32 hex digits, after ``pii-``."""
    return "pii-" + hmac.new(key.encode(), raw.encode(), hashlib.sha256).hexdigest()[:32]


def unkeyed_id(raw: str) -> str:
    return "pii-" + hashlib.sha256(raw.encode()).hexdigest()[:32]


def event(event_id: str, n: int = 1, user: str | None = None) -> QueryLogEvent:
    data: dict[str, Any] = {"event_id": event_id, "timestamp": STAMP, "question": f"fee {n}?"}
    if user is not None:
        data["user"] = {"id": user}
    return QueryLogEvent.model_validate(data)


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "goldwatch.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# -- the digest ----------------------------------------------------------------------------------


def test_a_key_makes_the_digest_hmac_and_no_key_keeps_sha256() -> None:
    for raw in ("ivan.1@example.com", "9876543210", "order of +91 98765 43210"):
        assert pseudonymise(raw, KEY.encode()) == keyed_id(raw)
        assert pseudonymise(raw) == unkeyed_id(raw)  # existing state stays consistent
        assert Pseudonymiser(KEY.encode())(raw) == keyed_id(raw)
        assert pseudonymise(raw, OTHER_KEY.encode()) == keyed_id(raw, OTHER_KEY)
        assert keyed_id(raw) != keyed_id(raw, OTHER_KEY) != unkeyed_id(raw)
    assert pseudonymise("e-000123", KEY.encode()) == "e-000123"  # not personal: kept
    keyed = Pseudonymiser(KEY.encode())
    assert keyed(keyed("ivan.1@example.com")) == keyed_id("ivan.1@example.com")  # idempotent
    assert KEY not in repr(keyed) and repr(keyed) == "Pseudonymiser(keyed=True)"
    with pytest.raises(ValueError, match="empty"):
        Pseudonymiser(b"")


# -- dedup across a restart ----------------------------------------------------------------------


def _pipeline(key: str | None) -> Pipeline:
    pseudonymiser = Pseudonymiser(key.encode()) if key is not None else Pseudonymiser()
    return default_pipeline(PipelineConfig(dedup_window=100), pseudonymiser=pseudonymiser)


IDS = ["ivan.1@example.com", "+91 98765 43210", "e-000007"]


def test_the_same_key_drops_redeliveries_after_a_restart() -> None:
    first = _pipeline(KEY)
    batch = first.process([event(i, n) for n, i in enumerate(IDS)], "test")
    assert [e.event_id for e in batch.events] == [keyed_id(IDS[0]), keyed_id(IDS[1]), IDS[2]]
    saved = json.loads(json.dumps(first.snapshot()))  # what the state file holds
    text = json.dumps(saved)
    assert "ivan" not in text and "98765" not in text
    assert unkeyed_id(IDS[0]) not in text

    restarted = _pipeline(KEY)
    restarted.restore(saved)
    again = restarted.process([event(i, n) for n, i in enumerate(IDS)], "test")
    assert again.events == [] and again.dropped == {"duplicate": 3}

    rekeyed = _pipeline(OTHER_KEY)  # the documented trade-off of changing the key
    rekeyed.restore(saved)
    changed = rekeyed.process([event(i, n) for n, i in enumerate(IDS)], "test")
    assert [e.event_id for e in changed.events] == [keyed_id(IDS[0], OTHER_KEY),
                                                    keyed_id(IDS[1], OTHER_KEY)]  # fmt: skip
    assert changed.dropped == {"duplicate": 1}  # only the plain id is recognised


@pytest.mark.slow
def test_replay_with_the_key_pseudonymises_event_and_user_ids_and_dedups_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GOLDWATCH_ANALYTICS__PII_KEY", KEY)
    log = tmp_path / "log.jsonl"
    rows = [{"event_id": f"ivan.{n}@example.com", "timestamp": STAMP,
             "question": f"Is the hostel fee refunded in month {n}?",
             "user": {"id": f"zoe.{n}@example.com"}} for n in (1, 2, 3)]  # fmt: skip
    log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    state = tmp_path / "state.sqlite"
    settings = load_settings(gold_set=demo_path("gold.jsonl"), corpus=demo_path("corpus.jsonl"))
    first = run_replay(settings, log, state, tmp_path / "dlq.jsonl")
    assert (first["processed"], first["duplicates"]) == (3, 0)
    stored = b"".join(p.read_bytes() for p in tmp_path.glob("state.sqlite*"))
    assert keyed_id("ivan.2@example.com").encode() in stored
    assert unkeyed_id("ivan.2@example.com").encode() not in stored
    assert b"ivan." not in stored and b"zoe." not in stored
    report = json.dumps(first)
    assert "zoe." not in report and unkeyed_id("zoe.1@example.com") not in report
    # a restart on the same state, reading the three events again (resent in another file)
    # and one new one
    again = tmp_path / "again.jsonl"
    fourth = {**rows[0], "event_id": "ivan.4@example.com"}
    again.write_text("".join(json.dumps(r) + "\n" for r in [*rows, fourth]), encoding="utf-8")
    resumed = run_replay(settings, again, state, tmp_path / "dlq.jsonl")
    assert (resumed["processed"], resumed["duplicates"]) == (1, 3)


def test_user_ids_are_keyed_too() -> None:
    from service.pii import PiiScrubStage
    from service.pipeline import Batch

    batch = Batch.of([event("e-1", user="zoe.1@example.com"), event("e-2", user="u-17")], "t")
    PiiScrubStage(Pseudonymiser(KEY.encode())).process(batch)
    users = [e.user.id for e in batch.events if e.user is not None]
    assert users == [keyed_id("zoe.1@example.com"), "u-17"]


# -- the settings ------------------------------------------------------------------------------


def test_the_key_is_masked_and_never_echoed(tmp_path: Path) -> None:
    config = _write(tmp_path, "analytics:\n  pii: true\n")
    result = CliRunner(env={"GOLDWATCH_ANALYTICS__PII_KEY": KEY}).invoke(
        main, ["config", "check", "--config", str(config)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["analytics"]["pii_key"] == "***"
    assert KEY not in result.output
    settings = load_settings(_write(tmp_path, f"analytics:\n  pii_key: {KEY}\n"))
    assert KEY not in repr(settings) and KEY not in str(effective_config(settings))
    assert settings.analytics.pii_key_bytes() == KEY.encode()


@pytest.mark.parametrize(
    ("text", "field", "problem"),
    [
        ("analytics:\n  pii_key: short-Zq7\n", "analytics.pii_key", "at least 32 characters"),
        ("analytics:\n  pii_key: '" + " " * 40 + "'\n", "analytics.pii_key", "empty or blank"),
        (
            f"analytics:\n  pii_key: {KEY}\n  pii_key_file: /k\n",
            "analytics",
            "give pii_key or pii_key_file, not both",
        ),
    ],
)
def test_bad_keys_are_configuration_errors(
    tmp_path: Path, text: str, field: str, problem: str
) -> None:
    with pytest.raises(ConfigError) as info:
        load_settings(_write(tmp_path, text))
    message = str(info.value)
    assert f"  {field}: " in message and problem in message, message
    assert "Zq7" not in message and KEY not in message


def test_the_key_file_gives_the_same_pseudonyms_as_the_variable(tmp_path: Path) -> None:
    key_file = tmp_path / "pii-key"
    key_file.write_text(KEY + "\n", encoding="utf-8")  # as a mounted Secret often ends
    config = _write(tmp_path, f"analytics:\n  pii_key_file: {key_file}\n")
    assert load_settings(config).analytics.pii_key_bytes() == KEY.encode()
    check = CliRunner().invoke(main, ["config", "check", "--config", str(config)])
    assert check.exit_code == 0, check.output
    assert KEY not in check.output


@pytest.mark.parametrize("content", [None, "Zq7-too-few\n"], ids=["missing", "short"])
def test_an_unusable_key_file_fails_config_check_naming_it(
    tmp_path: Path, content: str | None
) -> None:
    key_file = tmp_path / "pii-key"
    if content is not None:
        key_file.write_text(content, encoding="utf-8")
    config = _write(tmp_path, f"analytics:\n  pii_key_file: {key_file}\n")
    settings = load_settings(config)
    with pytest.raises(ValueError, match=r"^analytics\.pii_key_file: "):
        settings.analytics.pii_key_bytes()
    check = CliRunner().invoke(main, ["config", "check", "--config", str(config)])
    assert check.exit_code == 2
    assert "analytics.pii_key_file: " in check.stderr and str(key_file) in check.stderr
    assert "Zq7" not in check.output
