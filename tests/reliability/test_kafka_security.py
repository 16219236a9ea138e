"""Kafka security settings: passed through to kafka-python, secrets only from the environment or
files, never printed by ``goldwatch config check`` nor logged or served by ``goldwatch serve``
(even when the broker rejects the client)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from service.settings.kafka import KafkaSourceConfig
from tests.acceptance.service_process import REPO_ROOT, write_config
from tests.kafka_broker import TansuBroker
from tests.reliability.conftest import StartService, kafka_serve_config, wait_for

BASE: dict[str, Any] = {"bootstrap_servers": "k:9093", "topic": "q", "consumer_group": "g"}
PASSWORD = "pw-Zq81!never-printed"
KEY_PASSWORD = "key-Xr55!never-printed"


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("protocol", ["SASL_PLAINTEXT", "SASL_SSL"])
def test_sasl_is_passed_through(mechanism: str, protocol: str) -> None:
    cfg = KafkaSourceConfig(
        **BASE,
        security_protocol=protocol,
        sasl_mechanism=mechanism,
        sasl_username="gw",
        sasl_password=PASSWORD,
    )
    kwargs = cfg.consumer_kwargs()
    assert kwargs["security_protocol"] == protocol
    assert kwargs["sasl_mechanism"] == mechanism
    assert kwargs["sasl_plain_username"] == "gw" and kwargs["sasl_plain_password"] == PASSWORD
    assert ("ssl_check_hostname" in kwargs) == (protocol == "SASL_SSL")
    assert PASSWORD not in repr(cfg) + str(cfg.model_dump()) + cfg.model_dump_json()


def test_tls_is_passed_through() -> None:
    cfg = KafkaSourceConfig(
        **BASE,
        security_protocol="SSL",
        ssl_cafile="/tls/ca.crt",
        ssl_certfile="/tls/tls.crt",
        ssl_keyfile="/tls/tls.key",
        ssl_password=KEY_PASSWORD,
        ssl_crlfile="/tls/crl.pem",
        ssl_check_hostname=False,
    )
    kwargs = cfg.client_kwargs()
    assert kwargs["ssl_cafile"] == "/tls/ca.crt" and kwargs["ssl_certfile"] == "/tls/tls.crt"
    assert kwargs["ssl_keyfile"] == "/tls/tls.key" and kwargs["ssl_crlfile"] == "/tls/crl.pem"
    assert kwargs["ssl_password"] == KEY_PASSWORD and kwargs["ssl_check_hostname"] is False
    assert KEY_PASSWORD not in repr(cfg) + cfg.model_dump_json()


def test_secrets_from_files(tmp_path: Path) -> None:
    (tmp_path / "sasl").write_text(PASSWORD + "\n")
    (tmp_path / "key").write_text(KEY_PASSWORD)
    cfg = KafkaSourceConfig(
        **BASE,
        security_protocol="SASL_SSL",
        sasl_mechanism="SCRAM-SHA-512",
        sasl_username="gw",
        sasl_password_file=str(tmp_path / "sasl"),
        ssl_password_file=str(tmp_path / "key"),
    )
    kwargs = cfg.client_kwargs()
    assert kwargs["sasl_plain_password"] == PASSWORD
    assert kwargs["ssl_password"] == KEY_PASSWORD
    missing = cfg.model_copy(update={"sasl_password_file": str(tmp_path / "nope")})
    with pytest.raises(ValueError, match="sasl_password_file") as caught:
        missing.client_kwargs()
    assert PASSWORD not in str(caught.value)
    with pytest.raises(ValidationError, match="not both"):
        KafkaSourceConfig(**BASE, sasl_password="x", sasl_password_file="/f")
    with pytest.raises(ValidationError, match="SASL needs"):
        KafkaSourceConfig(**BASE, security_protocol="SASL_SSL", sasl_mechanism="PLAIN")


def _secret_env() -> dict[str, str]:
    return {
        "GOLDWATCH_KAFKA__SASL_PASSWORD": PASSWORD,
        "GOLDWATCH_KAFKA__SSL_PASSWORD": KEY_PASSWORD,
        "GOLDWATCH_API__TOKEN": "api-" + PASSWORD,
    }


def test_config_check_masks_secrets_from_env(tmp_path: Path) -> None:
    config = write_config(
        tmp_path / "goldwatch.yaml",
        {
            "source": {"kind": "kafka"},
            "kafka": {
                **BASE,
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-256",
                "sasl_username": "gw",
            },
        },
    )
    run = subprocess.run(
        [sys.executable, "-m", "service.cli", "config", "check", "--config", str(config)],
        cwd=REPO_ROOT,
        env={**os.environ, **_secret_env()},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    out = run.stdout + run.stderr
    assert "SCRAM-SHA-256" in out, out[-2000:]
    assert PASSWORD not in out and KEY_PASSWORD not in out
    assert "***" in out


@pytest.mark.kafka
def test_serve_never_logs_or_serves_the_sasl_password(
    broker: TansuBroker, start_service: StartService, tmp_path: Path
) -> None:
    """SASL against a broker that does not speak it: the client fails, retries, logs; the
    password is in no log line and no answer."""
    config = kafka_serve_config(broker, "rel-sasl", tmp_path / "state.sqlite")
    config["kafka"].update(
        security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN", sasl_username="gw"
    )
    service = start_service(tmp_path, config, env=_secret_env())
    log = tmp_path / "serve.log"
    # Until the client has tried SASL and retried (a fixed 4 s could end before the first try
    # on a loaded machine, and the checks below would pass without having seen one).
    wait_for(
        lambda: log.read_text(errors="replace").count("SaslHandshake failed") >= 3,
        60,
        "three failed SASL handshakes in serve.log",
    )
    texts = [service.get(p).text for p in ("/v1/status", "/metrics", "/readyz", "/")]
    texts.append((tmp_path / "serve.log").read_text(errors="replace"))
    for text in texts:
        assert PASSWORD not in text and KEY_PASSWORD not in text
    assert service.alive and service.readyz() == 503
