"""Hypothesis: hostile Unicode through the decoder and every analytics stage, in process.

The live engine of ``goldwatch serve`` (decode → dedup → PII → language → refusal → out-of-scope
→ topic → drift → harvest ... → count, with the analytics metrics observer), built from the
default settings on the demo gold set, gets micro-batches of events whose questions, answers and
labels are made of RTL marks, zero-width joiners, combining characters, lone surrogates (as JSON
escapes and as raw bytes), emoji sequences, NUL bytes and 100 kB runs. For every batch: nothing
raises, every message is processed, dead-lettered or a duplicate, and the Prometheus exposition
still parses with a bounded number of series.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from prometheus_client import CollectorRegistry, generate_latest

from consumers.base import Origin, RawMessage
from consumers.engine import Engine
from consumers.loop import make_decoder
from service.demo import demo_path
from service.runtime.live import build_live
from service.settings import load_settings
from service.state import StateStore
from service.telemetry import build_metrics
from tests.acceptance.service_process import parse_metrics

MAX_EVENT_BYTES = 300_000
SERIES_BOUND = 2_000
TRICKY = [
    "\u200f", "\u200e", "\u202e", "\u2066", "\u200d", "\u200b", "\u0301", "\u0300\u0301\u0302",
    "\u093e", "\u0915\u094d\u0937", "\x00", "\ufeff", "\ud800", "\udfff", "\ud83d", "😀",
    "👩\u200d👩\u200d👧", "🇮🇳", "🏳️\u200d🌈", "\u2028", "\u0000\u0000", "٣", "５", "ꙮ", "𝔣",
    "I don't know", "Sorry, I can't help with that", "Hostel ka fee?", "¿cuánto sale?",
    "rahul@example.com", "+91 98765 43210",
]  # fmt: skip

pieces = st.one_of(st.characters(), st.sampled_from(TRICKY))
short = st.lists(pieces, max_size=30).map("".join)
huge = st.builds(lambda c, n: c * n, st.sampled_from(TRICKY + ["a ", "é"]), st.integers(1, 50_000))
texts = st.one_of(short, short, short, huge)
stamps = st.sampled_from(
    ["2026-11-29T10:00:00Z", "1990-01-01T00:00:00Z", "2100-01-01T00:00:00Z", 0, 1795946400, "x"]
)


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    """One event with hostile text in every free-text and label field."""
    event: dict[str, Any] = {
        "event_id": draw(st.one_of(short, st.integers(0, 50))),
        "timestamp": draw(stamps),
        "question": draw(texts),
    }
    if draw(st.booleans()):
        event["answer"] = {"text": draw(texts), "refused": draw(st.sampled_from([None, True]))}
    if draw(st.booleans()):
        event["channel"] = draw(short)
        event["user"] = {"id": draw(short), "role": draw(short), "tenant": draw(short)}
        event["retrieval"] = {
            "retriever": draw(short),
            "results": [{"id": draw(short) or "p", "rank": 1, "doc_type": draw(short)}],
        }
    return event


def encoded(event: dict[str, Any], raw: bool) -> bytes:
    """JSON with ``\\u`` escapes (lone surrogates legal), or raw UTF-8 with surrogates passed
    through as the invalid bytes a broken producer would write."""
    if raw:
        return json.dumps(event, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return json.dumps(event).encode("ascii")


@cache
def engine() -> tuple[Engine, CollectorRegistry]:
    """The serve engine with every default analytics stage, state in memory (built once)."""
    config = load_settings(pipeline={"max_event_bytes": MAX_EVENT_BYTES},
                           gold_set=demo_path("gold.jsonl"),
                           corpus=demo_path("corpus.jsonl"))  # fmt: skip
    registry = CollectorRegistry()
    live = build_live(config, registry)
    built = Engine(
        live.pipeline,
        StateStore.in_memory(),
        build_metrics(registry),
        make_decoder(config.events, MAX_EVENT_BYTES),
        on_batch=live.observe,
    )
    built.restore()
    return built, registry


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(batch=st.lists(st.tuples(events(), st.booleans()), min_size=1, max_size=6))
def test_hostile_unicode_through_decoder_and_analytics(
    batch: list[tuple[dict[str, Any], bool]],
) -> None:
    live, registry = engine()
    messages = [
        RawMessage(encoded(event, raw), Origin(file="fuzz", line=i + 1))
        for i, (event, raw) in enumerate(batch)
    ]
    outcome = live.process(messages, "http")
    counts = outcome.counts
    assert counts.consumed == len(messages)
    assert counts.processed + sum(counts.dead_lettered.values()) + counts.duplicates == len(
        messages
    ) - sum(outcome.dropped.values())
    for letter in outcome.dead:
        assert letter.reason in (
            "not_utf8",
            "too_large",
            "invalid_value",
            "wrong_type",
            "missing_field",
        ), (
            letter.reason,
            letter.detail,
        )
    live.checkpoint()  # every stage's state is JSON-serialisable after hostile input
    samples = parse_metrics(generate_latest(registry).decode("utf-8"))
    assert len(samples) <= SERIES_BOUND
