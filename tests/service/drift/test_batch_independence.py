"""The same events give the same drift alarms and report whatever the batch size (trial 36).

A trial replayed one log (3,200 events, ~33 an hour, tests every 30 min) at
``pipeline.max_batch_size`` 50, 500 and 2,000: every count was the same, but the alarms moved
by up to 2.5 h of event time and their ``after_events`` with them, and ``goldwatch serve``
(small batches) raised them 1.5–2 h before the default replay. The detectors tested at the
same event times with the same results whatever the batching; the stage read their states
once per 100-event chunk of a batch (:data:`~service.drift.stage.ALARM_RESOLUTION`), so a
test's alarm waited for its chunk's end, and was dated by the chunk's last test.

Here the real :class:`~service.drift.stage.DriftStage` is fed one stream at batch sizes 1, 50,
500 and 2,000 (and uneven ones): the alarms (state, time, ``after_events``, what moved), the
report and the state snapshot must be identical, and each alarm is dated by its test: the
time of the event it follows. Two streams: one in event-time order at the trial's rate, with
a topic, a refusal and a rising-terms drift; and the adversarial one of
:mod:`tests.service.drift.test_batch_at_once` (late, future and held events, starved windows,
rates on some events only) with a constant clock. A replay of a small log through the whole
pipeline gives the same report at batch sizes 1, 50 and 500 (the harvest's coverage gaps
too: they were judged over the whole batch, later events included).
"""

from __future__ import annotations

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.drift.stage import DriftStage
from service.drift.windows import WindowConfig
from service.events import QueryLogEvent
from service.pipeline import Batch
from tests.service.drift.test_batch_at_once import CONFIG as ADVERSARIAL_CONFIG
from tests.service.drift.test_batch_at_once import GOLD as ADVERSARIAL_GOLD
from tests.service.drift.test_batch_at_once import NOW
from tests.service.drift.test_batch_at_once import _stream as adversarial_stream

T0 = 1_796_000_400.0  # 2026-11-30 00:20 UTC
#: The trial's windows: 4 h against a frozen 8 h warm-up, 12 h against the gold set.
TRIAL = WindowConfig(window_s=14_400, reference_window_s=43_200, warmup_s=28_800,
                     test_every_s=1_800)  # fmt: skip
GOLD = {"language": {"en": 40, "de": 2}, "topic": {"news": 20, "sport": 10, "tech": 12}}
SIZES = (1, 50, 500, 2000)
WORDS = ("market", "price", "court", "vote", "phone", "chip", "film", "album")


def _trial_stream(n: int = 2_400, seed: int = 36) -> tuple[list[float], list[dict[str, Any]],
                                                           list[str]]:  # fmt: skip
    """``n`` events about 110 s apart (~33 an hour), in event-time order: from 45 % of the
    stream sport questions (with the word ``football``) rise from 15 % to 60 %; from 70 %
    to 85 % refusals rise from 5 % to 35 %."""
    rng = random.Random(seed)
    t, stamps, notes, questions = T0, [], [], []
    for i in range(n):
        t += rng.uniform(60, 160)
        sport = rng.random() < (0.6 if i >= 0.45 * n else 0.15)
        topic = "sport" if sport else rng.choice(["news", "news", "tech"])
        note: dict[str, Any] = {"language": "de" if rng.random() < 0.05 else "en",
                                "topic": topic}  # fmt: skip
        if rng.random() < 0.8:
            note["refused"] = rng.random() < (0.35 if 0.7 * n <= i < 0.85 * n else 0.05)
        if rng.random() < 0.6:
            note["out_of_scope"] = rng.random() < 0.1
        words = rng.sample(WORDS, 3) + (["football", "league"] if sport else [])
        stamps.append(round(t, 3))
        notes.append(note)
        questions.append("what about the " + " ".join(words))
    return stamps, notes, questions


def _feed(stage: DriftStage, stamps: list[float], notes: list[dict[str, Any]],
          questions: list[str], sizes: tuple[int, ...]) -> str:  # fmt: skip
    """Feed the events in batches of ``sizes`` (taken in turn); the report, the state
    snapshot and the kept-out counts taken after each batch, as JSON (the snapshot's keys
    sorted, and each term tally's terms: a window's categories and a tally's terms are kept
    in the order they were first added, which a batch of many events may add in another
    order than one at a time; nothing is read off that order)."""
    start, turn, kept = 0, 0, {"late": 0, "future": 0}
    while start < len(stamps):
        end = min(len(stamps), start + sizes[turn % len(sizes)])
        turn += 1
        events = [QueryLogEvent(event_id=str(i), question=questions[i],
                                timestamp=datetime.fromtimestamp(stamps[i], UTC))
                  for i in range(start, end)]  # fmt: skip
        batch = Batch.of(events, "file")
        batch.annotations = [dict(note) for note in notes[start:end]]
        stage.process(batch)
        for key, value in stage.take_kept_out().items():
            kept[key] += value
        start = end
    snapshot = json.dumps(_terms_sorted(stage.state_snapshot()), sort_keys=True)
    return json.dumps([stage.report(), kept]) + snapshot


def _terms_sorted(value: Any) -> Any:
    """``value`` with each term tally's text (``"floor term count error ..."``, in the order
    the terms were first counted) in term order."""
    if isinstance(value, dict):
        return {key: _terms_sorted(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_terms_sorted(item) for item in value]
    if isinstance(value, str) and " " in value:
        floor, *cells = value.split(" ")
        triples = sorted(" ".join(cells[i : i + 3]) for i in range(0, len(cells), 3))
        return " ".join([floor, *triples])
    return value


@pytest.fixture(scope="module")
def trial() -> tuple[list[float], list[dict[str, Any]], list[str]]:
    return _trial_stream()


def _trial_stage() -> DriftStage:
    return DriftStage(GOLD, windows=TRIAL, min_count=100, clock=lambda: T0 + 30 * 86_400)


def test_the_trial_stream_gives_the_same_alarms_at_every_batch_size(
    trial: tuple[list[float], list[dict[str, Any]], list[str]],
) -> None:
    stamps, notes, questions = trial
    runs = {size: _feed(_trial_stage(), stamps, notes, questions, (size,)) for size in SIZES}
    runs[0] = _feed(_trial_stage(), stamps, notes, questions, (7, 333, 1, 1200, 64))
    report = json.loads(runs[1].partition("]{")[0] + "]")[0]
    alarms = report["alarms"]
    # the stream did what it is for: topic, terms and refusal drifts, one ending
    moves = {(a["dimension"], a["state"]) for a in alarms}
    assert moves >= {("topic", "drift"), ("terms", "drift"), ("refusal", "drift"),
                     ("refusal", "ok")}  # fmt: skip
    for size, run in runs.items():
        assert run == runs[1], f"batch size {size or 'uneven'}"
    # each alarm is dated by its test, recorded after the event whose time set it off (the
    # first of its dimension's events past a test time: in order, the test's watermark)
    for alarm in alarms:
        assert alarm["timestamp"] == stamps[alarm["after_events"] - 1]


def test_the_adversarial_stream_gives_the_same_alarms_at_every_batch_size() -> None:
    # late events that starve the windows, future ones, one held ahead (those batches go
    # chunk by chunk), rates on some events only; then 400 events (~600 s, a window: the
    # alarms' weak tests, on starved windows, then span the clear span) of the baseline mix
    stamps, notes = adversarial_stream(3_000)
    rng = random.Random(8)
    t = max(stamp for stamp in stamps if stamp < NOW)
    for _ in range(400):
        t += rng.expovariate(1 / 1.5)
        note: dict[str, Any] = {"language": rng.choice(["en"] * 9 + ["es"]),
                                "topic": rng.choice(["a", "b"])}  # fmt: skip
        if rng.random() < 0.7:
            note["refused"] = rng.random() < 0.05
        if rng.random() < 0.5:
            note["out_of_scope"] = rng.random() < 0.1
        stamps.append(round(t, 3))
        notes.append(note)
    questions = ["q"] * len(stamps)

    def stage() -> DriftStage:
        return DriftStage(ADVERSARIAL_GOLD, windows=ADVERSARIAL_CONFIG, min_count=40,
                          clock=lambda: NOW)  # fmt: skip

    runs = {size: _feed(stage(), stamps, notes, questions, (size,)) for size in SIZES}
    runs[0] = _feed(stage(), stamps, notes, questions, (7, 333, 1, 1200, 64))
    report = json.loads(runs[1].partition("]{")[0] + "]")[0]
    assert {alarm["state"] for alarm in report["alarms"]} >= {"drift", "starved"}
    assert report["event_time"]["late"] > 500 and report["event_time"]["future"] > 10
    for size, run in runs.items():
        assert run == runs[1], f"batch size {size or 'uneven'}"


def test_a_replay_gives_the_same_report_at_every_batch_size(tmp_path: Path) -> None:
    # the demo's first 1,800 events (its topic and terms drifts start at ~1,450) and its
    # configuration (tests every 5 min of event time, ~1 event a minute)
    from service.demo import demo_data, demo_path
    from service.jobs.replay import run_replay
    from service.settings import load_settings

    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    log = tmp_path / "querylog.jsonl"
    log.write_text("".join(lines[:1_800]), encoding="utf-8")
    reports = {}
    for size in (1, 50, 500):
        settings = load_settings(demo_path("goldwatch.yaml"), pipeline={"max_batch_size": size})
        doc = run_replay(settings.model_copy(update=demo_data()), log, None,
                         tmp_path / f"dlq-{size}.jsonl")  # fmt: skip
        reports[size] = doc
    drift = reports[1]["analytics"]["drift"]
    assert {alarm["dimension"] for alarm in drift["alarms"]} >= {"topic", "terms"}
    assert reports[1]["gold_candidates"]["by_reason"].get("coverage_gap")
    for size in (50, 500):
        assert reports[size]["batches"] < reports[1]["batches"]
        assert reports[size]["analytics"]["drift"] == drift, f"batch size {size}"
        assert (reports[size]["gold_candidates"]["by_reason"]
                == reports[1]["gold_candidates"]["by_reason"]), f"batch size {size}"  # fmt: skip
