"""The Dockerfile, read as text (no Docker engine runs here): multi-stage, wheel into a venv,
python:3.11-slim runtime as uid 10001, state in /var/lib/goldwatch, the chart's command, and a
default configuration that goldwatch accepts."""

from __future__ import annotations

import json
import re
from pathlib import Path

import yaml

from service.settings import load_settings
from tests.ops import opsfiles

DOCKERFILE = (opsfiles.REPO / "Dockerfile").read_text()
VALUES = yaml.safe_load((opsfiles.CHART / "values.yaml").read_text())


def _instructions() -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) with continuation lines joined, comments dropped."""
    text = re.sub(r"(?s)(COPY <<(\w+) \S+)\n.*?\n\2\n", r"\1\n", DOCKERFILE)  # heredocs
    text = re.sub(r"\\\n", " ", text)
    lines = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return [(line.split(maxsplit=1)[0], line.split(maxsplit=1)[1]) for line in lines]


def test_multi_stage_wheel_into_venv_then_slim_runtime() -> None:
    stages = [args for op, args in _instructions() if op == "FROM"]
    assert stages == ["${PYTHON_IMAGE} AS builder", "${PYTHON_IMAGE} AS runtime"]
    assert "ARG PYTHON_IMAGE=python:3.11-slim" in DOCKERFILE
    assert "pip wheel --no-deps --wheel-dir /wheels ." in DOCKERFILE
    assert "/opt/venv/bin/pip install -c requirements.lock /wheels/goldwatch-*.whl" in DOCKERFILE
    assert "COPY --from=builder /opt/venv /opt/venv" in DOCKERFILE


def test_runs_as_uid_10001_with_state_in_var_lib() -> None:
    ops = dict(_instructions())
    assert ops["USER"] == "10001:10001"
    assert "--uid 10001" in DOCKERFILE and "chown 10001:10001 /var/lib/goldwatch" in DOCKERFILE
    assert json.loads(ops["VOLUME"]) == ["/var/lib/goldwatch"]
    assert ops["WORKDIR"] == "/var/lib/goldwatch"
    assert VALUES["podSecurityContext"]["runAsUser"] == 10001


def test_command_matches_the_chart() -> None:
    cmd = json.loads(dict(_instructions())["CMD"])
    assert cmd == ["goldwatch", "serve", "--config", "/etc/goldwatch/goldwatch.yaml"]
    deployment = (opsfiles.CHART / "templates" / "deployment.yaml").read_text()
    assert 'args: ["serve", "--config", "/etc/goldwatch/goldwatch.yaml"]' in deployment
    assert "mountPath: /etc/goldwatch/goldwatch.yaml" in deployment
    assert f"EXPOSE {VALUES['config']['api']['port']}" in DOCKERFILE


def test_default_config_in_the_image_is_valid(tmp_path: Path) -> None:
    body = re.search(r"COPY <<(\w+) /etc/goldwatch/goldwatch.yaml\n(.*?)\n\1\n", DOCKERFILE, re.S)
    assert body is not None
    path = tmp_path / "goldwatch.yaml"
    path.write_text(body.group(2))
    settings = load_settings(path)
    assert settings.source.kind == "none" and settings.api.host == "0.0.0.0"
    assert str(settings.state.path).startswith("/var/lib/goldwatch/")


def test_dockerignore_sends_only_the_package() -> None:
    lines = (opsfiles.REPO / ".dockerignore").read_text().split()
    assert lines[lines.index("*")] == "*"
    allowed = {line[1:].rstrip("/") for line in lines if line.startswith("!")}
    assert allowed == {"pyproject.toml", "README.md", "requirements.lock", "service", "consumers"}
    copied = re.findall(r"^COPY (?!--from)(?!<<)(.+?) \S+$", DOCKERFILE, re.M)
    sources = {part for line in copied for part in line.split()}
    assert sources <= allowed
