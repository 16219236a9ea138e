"""deploy/otel-collector: the goldwatch config validates and reads what the Collector config
writes (topic, encoding, trace-id partitioning)."""

from __future__ import annotations

from pathlib import Path

import yaml

from service.settings import load_settings

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "otel-collector"


def test_goldwatch_reads_the_collectors_topic() -> None:
    collector = yaml.safe_load((DEPLOY / "collector.yaml").read_text(encoding="utf-8"))
    settings = load_settings(DEPLOY / "goldwatch.yaml")
    kafka = collector["exporters"]["kafka"]
    assert settings.kafka is not None and settings.source.kind == "kafka"
    assert settings.kafka.topic == kafka["traces"]["topic"]
    assert settings.traces.kafka_encoding == kafka["traces"]["encoding"]
    assert kafka["partition_traces_by_id"] is True
    pipeline = collector["service"]["pipelines"]["traces"]
    assert pipeline == {"receivers": ["otlp"], "processors": ["batch"], "exporters": ["kafka"]}
