"""Metrics: names, pre-initialised labels, bounded labels, batch updates, promtool lint."""

from __future__ import annotations

import os
import re
import shutil
import subprocess

import pytest
from prometheus_client import CollectorRegistry, generate_latest

from service.telemetry import (
    DEAD_LETTER_REASONS,
    OTHER,
    SOURCES,
    BatchCounts,
    Metrics,
    bounded_label,
    build_metrics,
    source_label,
)


def fresh(**kwargs: object) -> tuple[CollectorRegistry, Metrics]:
    registry = CollectorRegistry()
    return registry, build_metrics(registry, **kwargs)  # type: ignore[arg-type]


def test_every_reason_is_pre_initialised_for_every_source() -> None:
    registry, _ = fresh()
    for source in SOURCES:
        for reason in DEAD_LETTER_REASONS:
            labels = {"source": source, "reason": reason}
            assert registry.get_sample_value("goldwatch_events_dead_lettered_total", labels) == 0
        for name in ("consumed", "processed", "duplicate"):
            sample = registry.get_sample_value(f"goldwatch_events_{name}_total", {"source": source})
            assert sample == 0


def test_reasons_match_the_decoder() -> None:
    from consumers.decoding import DROP_REASONS, REASONS
    from service.telemetry import FIELD_DROP_REASONS

    assert set(REASONS) <= set(DEAD_LETTER_REASONS)
    # the decoder's reasons, then trace ingest's own (documents on a span that is not a
    # retrieval span: service.traces.mapping.OTHER_SPAN_IGNORED)
    assert FIELD_DROP_REASONS == (*DROP_REASONS, "other_span_ignored")


def test_trace_dead_letter_reasons_are_labels_not_other() -> None:
    """Trace ingest's dead letters count in goldwatch_events_dead_lettered_total under their
    own reason (trial finding 7), also on the Kafka path."""
    from service.telemetry import TRACE_PAYLOAD_REASONS, TRACE_UNMAPPED_REASONS
    from service.traces.assembly import REJECT_REASONS
    from service.traces.otlp import REASONS as OTLP_REASONS

    trace_reasons = {*REJECT_REASONS, *OTLP_REASONS, *TRACE_PAYLOAD_REASONS,
                     *TRACE_UNMAPPED_REASONS}  # fmt: skip
    assert trace_reasons <= set(DEAD_LETTER_REASONS)


def test_dropped_field_labels_are_bounded() -> None:
    registry, metrics = fresh()
    metrics.observe_dropped_fields({("feedback.rating", "wrong_type"): 2,
                                    ("<question text>", "whatever"): 1})  # fmt: skip
    value = registry.get_sample_value
    name = "goldwatch_event_fields_dropped_total"
    assert value(name, {"field": "feedback.rating", "reason": "wrong_type"}) == 2
    assert value(name, {"field": "other", "reason": "other"}) == 1


def test_observe_batch_updates_once() -> None:
    registry, metrics = fresh()
    metrics.observe_batch(
        BatchCounts(
            source="kafka:queries",
            consumed=10,
            processed=6,
            dead_lettered={"not_json": 2, "made_up_reason": 1},
            duplicates=1,
            seconds=0.02,
            newest_event_s=1_795_946_400.0,
        )
    )

    def value(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert value("goldwatch_events_consumed_total", source="kafka") == 10
    assert value("goldwatch_events_processed_total", source="kafka") == 6
    assert value("goldwatch_events_duplicate_total", source="kafka") == 1
    assert value("goldwatch_events_dead_lettered_total", source="kafka", reason="not_json") == 2
    assert value("goldwatch_events_dead_lettered_total", source="kafka", reason=OTHER) == 1
    assert value("goldwatch_batch_size_count") == 1
    assert value("goldwatch_batch_size_sum") == 10
    assert value("goldwatch_batch_processing_seconds_count") == 1
    assert value("goldwatch_last_event_timestamp_seconds") == 1_795_946_400.0


def test_observe_status_mirrors_counter_deltas_and_bounded_lag() -> None:
    registry, metrics = fresh(topics=["queries"])
    first = {
        "commits": 3,
        "commit_failures": 1,
        "rebalances": 1,
        "lag": [
            {"topic": "queries", "partition": 0, "lag": 5},
            {"topic": "secret-topic", "partition": 1, "lag": 7},
            {"topic": "queries", "partition": 2, "lag": None},
        ],
    }
    metrics.observe_status(first, {})
    second = {
        **first,
        "commits": 5,
        "lag": [
            {"topic": "queries", "partition": 0, "lag": None, "past_end": 2},  # unknown now
            {"topic": "secret-topic", "partition": 1, "lag": 9},
            {"topic": "queries", "partition": 2, "lag": None},
        ],
    }
    metrics.observe_status(second, first)
    assert registry.get_sample_value("goldwatch_commits_total") == 5
    assert registry.get_sample_value("goldwatch_commit_failures_total") == 1
    assert registry.get_sample_value("goldwatch_rebalances_total") == 1
    lag, past = "goldwatch_consumer_lag", "goldwatch_consumer_offset_past_end"
    p0, p1, p2 = ({"topic": "queries", "partition": "0"}, {"topic": OTHER, "partition": "1"},
                  {"topic": "queries", "partition": "2"})  # fmt: skip
    assert registry.get_sample_value(lag, p0) == 5  # unknown: the last value stays
    assert registry.get_sample_value(past, p0) == 2
    assert registry.get_sample_value(lag, p1) == 9
    assert registry.get_sample_value(lag, p2) is None
    # a status without lag (a file source) leaves the series alone
    metrics.observe_status({"commits": 5}, second)
    assert registry.get_sample_value(lag, p0) == 5
    uncommitted = "goldwatch_consumer_uncommitted_offsets"
    assert registry.get_sample_value(uncommitted) == 0
    metrics.observe_status({"commits": 5, "uncommitted_offsets": 120}, second)
    assert registry.get_sample_value(uncommitted) == 120
    metrics.observe_status({"commits": 5}, second)  # not sampled: the last value stays
    assert registry.get_sample_value(uncommitted) == 120
    # a rebalance revokes every partition and assigns them again; lag is sampled later: one
    # status without them (assigned or sampled) keeps the series (the alert's `for` holds)
    gap = {**second, "assigned_partitions": [], "lag": []}
    metrics.observe_status(gap, {**second, "assigned_partitions": [0, 1, 2]})
    assert registry.get_sample_value(lag, p0) == 5
    back = {**second, "assigned_partitions": [0, 1, 2]}
    metrics.observe_status(back, gap)
    assert registry.get_sample_value(lag, p0) == 5
    # the rebalance took partitions 0 and 2 for good: gone after two samples without them
    kept = {**second, "assigned_partitions": [1], "lag": [second["lag"][1]]}
    metrics.observe_status(kept, back)
    assert registry.get_sample_value(lag, p0) == 5  # assigned in the sample before
    metrics.observe_status(kept, kept)
    assert registry.get_sample_value(lag, p0) is None
    assert registry.get_sample_value(past, p0) is None
    assert registry.get_sample_value(lag, p1) == 9
    none = {**second, "assigned_partitions": [], "lag": []}
    metrics.observe_status(none, kept)
    assert registry.get_sample_value(lag, p1) == 9
    metrics.observe_status(none, none)  # none assigned, twice
    assert registry.get_sample_value(lag, p1) is None


def test_build_info() -> None:
    registry, _ = fresh(version="9.9.9")
    text = generate_latest(registry).decode()
    assert 'goldwatch_build_info{python="' in text
    assert 'version="9.9.9"' in text


def test_bounded_label_helpers() -> None:
    assert bounded_label("file", SOURCES) == "file"
    assert bounded_label("What is my fee?", SOURCES) == OTHER
    assert bounded_label(None, SOURCES) == OTHER
    assert source_label("kafka:queries") == "kafka"
    assert source_label("stdin") == "stdin"


def test_every_name_is_namespaced_and_counters_end_in_total() -> None:
    registry, _ = fresh()
    for family in registry.collect():
        assert family.name.startswith("goldwatch_")
        for sample in family.samples:
            if family.type == "counter" and not sample.name.endswith("_created"):
                assert sample.name.endswith("_total")


def test_building_twice_on_one_registry_fails() -> None:
    registry, _ = fresh()
    with pytest.raises(ValueError):
        build_metrics(registry)


@pytest.mark.prometheus  # runs promtool
def test_promtool_check_metrics_accepts_the_exposition() -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        if os.environ.get("GOLDWATCH_ALLOW_NO_PROMTOOL"):
            pytest.skip("promtool not on PATH and GOLDWATCH_ALLOW_NO_PROMTOOL is set")
        pytest.fail(
            "promtool is not on PATH: install it (`apt-get install -y prometheus`) "
            "or set GOLDWATCH_ALLOW_NO_PROMTOOL=1 to skip this check locally"
        )
    registry, metrics = fresh(topics=["queries"])
    metrics.observe_batch(BatchCounts("file", 3, 2, {"not_json": 1}, 0, 0.01, 1.7e9))
    metrics.observe_status({"lag": [{"topic": "queries", "partition": 0, "lag": 4}]}, {})
    result = subprocess.run(
        [promtool, "check", "metrics"],
        input=generate_latest(registry),
        capture_output=True,
        timeout=60,
        check=False,
    )
    problems = (result.stdout + result.stderr).decode()
    assert result.returncode == 0, problems
    assert problems.strip() == "", problems


def test_coverage_gaps_reset_and_gold_shares_sum_into_other() -> None:
    from service.telemetry import build_analytics_metrics

    registry = CollectorRegistry()
    metrics = build_analytics_metrics(registry, language_labels=["en", "hi"])
    gap = {"category": "hi", "ci_low": 0.2}
    metrics.observe_drift({"language": {"comparisons": {}, "coverage_gaps": [gap]}})
    labels = {"dimension": "language", "category": "hi"}
    assert registry.get_sample_value("goldwatch_coverage_gap_ratio", labels) == 0.2
    metrics.observe_drift({"language": {"comparisons": {}, "coverage_gaps": []}})
    assert registry.get_sample_value("goldwatch_coverage_gap_ratio", labels) == 0.0
    # es and fr are not labels: their shares (1/4 each) add up under "other"
    metrics.set_gold_shares({"language": {"en": 2, "es": 1, "fr": 1}})
    other = {"dimension": "language", "category": "other"}
    assert registry.get_sample_value("goldwatch_gold_share_ratio", other) == 0.5
    # the rows behind the shares (4 here: 2 + 1 + 1), the n_gold of the drift rules
    rows = {"dimension": "language"}
    assert registry.get_sample_value("goldwatch_gold_share_rows", rows) == 4.0
    metrics.set_gold_shares({"language": {"en": 30, "hi": 15}, "topic": {"a": 40, "novel": 15}})
    assert registry.get_sample_value("goldwatch_gold_share_rows", rows) == 45.0
    assert registry.get_sample_value("goldwatch_gold_share_rows", {"dimension": "topic"}) == 55.0


def test_gold_shares_drop_a_category_the_refreshed_gold_set_no_longer_has() -> None:
    """A gold refresh that leaves a category with no row removes its share: a stale share
    would add a category to the drift rules' K, distort the JSD and, times the rows,
    inflate goldwatch:gold_topic:rows (the rules' n_gold)."""
    from service.telemetry import build_analytics_metrics

    registry = CollectorRegistry()
    metrics = build_analytics_metrics(
        registry, language_labels=["en", "hi"], topic_labels=["a", "b", "novel"]
    )
    metrics.set_gold_shares({"topic": {"a": 40, "b": 10, "zz": 5}, "language": {"hi": 3}})
    metrics.set_gold_shares({"topic": {"a": 45, "novel": 10}})  # b and zz (other) are gone

    def share(dimension: str, category: str) -> float | None:
        labels = {"dimension": dimension, "category": category}
        return registry.get_sample_value("goldwatch_gold_share_ratio", labels)

    assert share("topic", "b") is None
    assert share("topic", "other") is None
    assert share("topic", "a") == 45 / 55
    assert share("topic", "novel") == 10 / 55
    # the shares left sum to 1: rows * the trusted shares' sum (a, without novel) is 45
    assert registry.get_sample_value("goldwatch_gold_share_rows", {"dimension": "topic"}) == 55.0
    assert 55 * share("topic", "a") == pytest.approx(45.0)
    # a dimension absent from the refresh keeps its shares (counts merge per dimension)
    assert share("language", "hi") == 1.0


def test_shadow_metrics_export_a_stage_batch() -> None:
    """ShadowStage.pending_observations() shape in, additive series out."""
    from service.shadow.stage import METRICS
    from service.telemetry import SHADOW_MEASURES, build_shadow_metrics

    assert SHADOW_MEASURES == METRICS
    registry = CollectorRegistry()
    metrics = build_shadow_metrics(registry, candidates=["cand"], language_labels=["en"])
    pending = {
        "offers": {"cand": {"queued": 3, "queue_full": 1}, "ghost": {"queued": 2}},
        "errors": {"cand": {"timeout": 1, "weird": 1}},
        "latency_seconds": {"cand": [0.01, 0.2, 2.0]},
        "agreement": {"cand": {"rbo": [0.5, 1.0], "overlap": [0.4, 0.6]}},
        "by_language": [{"candidate": "cand", "label": "en", "measure": "rbo", "value": 0.5},
                        {"candidate": "cand", "label": "xx", "measure": "rbo", "value": 1.0}],
        "by_topic": [],
        "results_dropped": 2,
        "runner": {"cand": {"queue_depth": 7, "workers": 2, "breaker_state": "open",
                            "breaker_opened_total": 1}},
    }  # fmt: skip
    metrics.observe_shadow(pending)
    metrics.observe_shadow({"runner": {"cand": {"breaker_state": "closed", "queue_depth": 7,
                                                "breaker_opened_total": 1}}})  # fmt: skip
    value = registry.get_sample_value
    assert value("goldwatch_shadow_offers_total", {"retriever": "cand", "outcome": "queued"}) == 3
    assert value("goldwatch_shadow_offers_total", {"retriever": "other", "outcome": "queued"}) == 2
    assert value("goldwatch_shadow_errors_total", {"retriever": "cand", "reason": "other"}) == 1
    assert value("goldwatch_shadow_request_duration_seconds_count", {"retriever": "cand"}) == 3
    assert value("goldwatch_shadow_request_duration_seconds_bucket",
                 {"retriever": "cand", "le": "0.25"}) == 2  # fmt: skip
    assert value("goldwatch_shadow_agreement_sum", {"retriever": "cand", "measure": "rbo"}) == 1.5
    assert value("goldwatch_shadow_agreement_bucket",
                 {"retriever": "cand", "measure": "overlap", "le": "0.5"}) == 1  # fmt: skip
    assert value("goldwatch_shadow_agreement_by_language_count",
                 {"retriever": "cand", "language": "other", "measure": "rbo"}) == 1  # fmt: skip
    assert value("goldwatch_shadow_results_dropped_total") == 2
    assert value("goldwatch_shadow_queue_depth", {"retriever": "cand"}) == 7
    assert value("goldwatch_shadow_breaker_state", {"retriever": "cand", "state": "closed"}) == 1
    assert value("goldwatch_shadow_breaker_state", {"retriever": "cand", "state": "open"}) == 0
    # the runner's cumulative count is turned into increments, never double counted
    assert value("goldwatch_shadow_breaker_opened_total", {"retriever": "cand"}) == 1


def test_acl_violation_series_start_at_zero_for_each_retriever_and_role() -> None:
    """Review of trial 47 LOW 4's fix: a first violation after a restart on the same target
    made a new series at 1 that the last run's series hid from ACLViolation. Every live
    retriever label (the candidates and ``production``, never ``prod``) times every ACL role
    and ``other`` starts at 0; without ACLs there is none (no violation can happen)."""
    from service.telemetry import build_shadow_metrics

    registry = CollectorRegistry()
    metrics = build_shadow_metrics(
        registry, candidates=["mine"], production="prod", role_labels=["staff", "student"]
    )
    text = generate_latest(registry).decode()
    series = re.findall(r"(?m)^goldwatch_acl_violations_total\{(.*)\} 0\.0$", text)
    assert sorted(series) == sorted(
        f'retriever="{name}",role="{role}"'
        for name in ("mine", "production") for role in ("staff", "student", "other")
    )  # fmt: skip
    metrics.observe_quality({"acl_violations": [
        {"retriever": "production", "role": "student", "events": 2, "passages": 3}]})  # fmt: skip
    assert (
        registry.get_sample_value(
            "goldwatch_acl_violations_total", {"retriever": "production", "role": "student"}
        )
        == 2
    )
    bare = CollectorRegistry()
    build_shadow_metrics(bare, candidates=["mine"])
    assert "goldwatch_acl_violations_total{" not in generate_latest(bare).decode()


def test_known_question_series_carry_one_production_label() -> None:
    """Trial 15 (shadow.production ``prod``, an entrypoint retriever): /metrics had
    ``goldwatch_known_*{retriever="prod"}`` always 0 next to ``retriever="production"``, two
    "production" lines on the panel. Live known-question scores are labelled ``production``;
    the configured name only labels gold-set runs (``goldwatch_gold_*``)."""
    from service.telemetry import build_shadow_metrics

    registry = CollectorRegistry()
    metrics = build_shadow_metrics(registry, candidates=["mine", "hybrid"], production="prod")
    metrics.observe_quality({"known": {"production": 3, "mine": 2},
                             "known_recall": {"production": [1.0, 0.5]}})  # fmt: skip
    metrics.observe_gold_run({"retrievers": {"prod": {"by_kind": {"all": {"recall@10": 0.9}}}}})
    text = generate_latest(registry).decode()
    for name in ("goldwatch_known_questions_total", "goldwatch_known_recall_count"):
        labels = re.findall(rf'(?m)^{name}\{{retriever="([^"]+)"\}}', text)
        assert sorted(labels) == ["hybrid", "mine", "production"], (name, labels)
    value = registry.get_sample_value
    assert value("goldwatch_known_questions_total", {"retriever": "production"}) == 3
    assert value("goldwatch_known_recall_sum", {"retriever": "production"}) == 1.5
    # the gold-set run keeps production's configured name
    assert value("goldwatch_gold_recall", {"retriever": "prod", "k": "10", "kind": "all"}) == 0.9
