"""The live analytics' acceptance on real data, through ``goldwatch replay``'s full pipeline.

Every test writes a deterministic scenario of :mod:`benchmarks.drift_streams` (real questions
from ``../shared/data``, one every ~10 s of event time) as a JSONL query log with its gold set
and corpus, and replays it with :func:`service.jobs.replay.run_replay` — file source, decoder,
dedup, PII scrubbing, language, topic, refusal, drift, Prometheus export, SQLite state — then
reads the report: alarms (``after_events`` = events fed to the drift stage when the comparison
entered ``drift``, to within :data:`service.drift.stage.ALARM_RESOLUTION`), counts and states.

Drift windows at this rate (``DRIFT``; the defaults suit a few hundred questions an hour too,
but would need 8,640 events to fill the 24 h gold-set window): the current window is 1 h
(~360 events, 3.6 × ``min_count`` = 100, so a test never runs on a thin window), the frozen
baseline is the first 6 h of traffic (~2,160 events, inside the 3,000 events before each
change), the gold-set comparison uses the last 6 h, and a test runs every 5 min (~30 events).
The out-of-scope stage is off in these scenarios: their gold sets have no calibration split
(the throughput benchmark runs it).

Figures (printed with ``pytest -s``; deterministic): see ``test_*`` docstrings.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path
from typing import Any

import pytest

from benchmarks.drift_streams import (
    DOMAINS,
    NEW_LANGUAGES,
    Scenario,
    language_shift,
    nomiracl_label,
    refusal_shift,
    sparse_stream,
    stationary_topics,
    topic_shift,
)
from benchmarks.streams import FILE_POISON_KINDS, TEST_MAX_EVENT_BYTES, poison_pills
from service.jobs.replay import run_replay
from service.settings import load_settings

DRIFT: dict[str, Any] = {
    "window_s": 3600,
    "reference_window_s": 21_600,
    "warmup_s": 21_600,
    "test_every_s": 300,
    "min_count": 100,
}
PIPELINE: dict[str, Any] = {"max_batch_wait_ms": 0, "max_event_bytes": TEST_MAX_EVENT_BYTES}
N_POISON = 14  # two of each kind a file can hold
N_PII = 10


def replay(scenario: Scenario, out: Path, poison: int = 0) -> dict[str, Any]:
    """Write ``scenario`` into ``out`` (plus ``poison`` poison pills after line 1,000) and
    return ``run_replay``'s report; state in ``out/state.sqlite``, dead letters in
    ``out/dlq.jsonl``."""
    files = scenario.write(out)
    if poison:
        lines = files.events.read_bytes().splitlines(keepends=True)
        pills = [value + b"\n" for value, _ in poison_pills(poison, kinds=FILE_POISON_KINDS)
                 if value is not None and b"\n" not in value]  # fmt: skip
        assert len(pills) == poison
        files.events.write_bytes(b"".join([*lines[:1000], *pills, *lines[1000:]]))
    settings = load_settings(
        None,
        gold_set=files.gold,
        corpus=files.corpus,
        pipeline=PIPELINE,
        analytics={"scope_retriever": None, "drift": DRIFT},
    )
    return run_replay(settings, files.events, out / "state.sqlite", out / "dlq.jsonl")


def alarms(report: dict[str, Any], dimension: str | None = None) -> list[dict[str, Any]]:
    """The report's moves into ``drift`` (of ``dimension``, or of any), in order (an open
    alarm's widening, ``widened``, is none)."""
    found = report["analytics"]["drift"]["alarms"]
    return [a for a in found if a["state"] == "drift" and dimension in (None, a["dimension"])
            and not a.get("widened")]  # fmt: skip


def assert_silent_before(report: dict[str, Any], change_at: int) -> None:
    early = [a for a in alarms(report) if a["after_events"] <= change_at]
    assert early == [], f"alarms before the change: {early}"


# -- language -----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def language_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Scenario, dict[str, Any], Path]:
    """3,000 English XQuAD questions, then 3,000 with 30 % hi/es/zh/Hinglish; 10 questions
    carry planted personal data; 14 poison pills."""
    out = tmp_path_factory.mktemp("language")
    scenario = language_shift(3000, 3000, 0.30, n_pii=N_PII)
    return scenario, replay(scenario, out, poison=N_POISON), out


@pytest.mark.slow
def test_language_shift_alarms_within_300_events_and_names_the_new_languages(
    language_run: tuple[Scenario, dict[str, Any], Path],
) -> None:
    """Measured: the baseline comparison alarms 186 events after the change and names all
    four (es, zh, hi-Latn, hi rising; en falling); the gold-set comparison follows at 586."""
    scenario, report, _ = language_run
    assert report["processed"] == len(scenario.events)
    assert scenario.change_at is not None
    assert_silent_before(report, scenario.change_at)
    found = alarms(report, "language")
    assert found, "no language alarm"
    first = found[0]
    delay = first["after_events"] - scenario.change_at
    print(
        f"\nlanguage: alarm ({first['comparison']}) {delay} events after the change; rising "
        f"{first['rising']}, falling {first['falling']}; later: "
        f"{[(a['comparison'], a['after_events'] - scenario.change_at) for a in found[1:]]}"
    )
    assert delay <= 300
    assert set(first["rising"]) == set(NEW_LANGUAGES.values()) == scenario.rising
    assert first["falling"] == ["en"]
    assert all(set(a["rising"]) <= scenario.rising for a in found)
    languages = report["analytics"]["languages"]
    print(f"language counts: {dict(list(languages.items())[:8])}")
    assert all(languages.get(lang, 0) >= 150 for lang in scenario.rising)


def test_personal_data_is_scrubbed_before_anything_is_stored(
    language_run: tuple[Scenario, dict[str, Any], Path],
) -> None:
    """Five planted e-mail addresses and five Indian mobiles: all counted as scrubbed, none in
    the report, the dead letters (decoded too) or the state files."""
    scenario, report, out = language_run
    assert len(scenario.planted_pii) == N_PII
    assert report["analytics"]["pii_scrubbed"]["email"] == N_PII // 2
    assert report["analytics"]["pii_scrubbed"]["phone"] == N_PII // 2
    assert report["dead_lettered_total"] == N_POISON
    dlq = (out / "dlq.jsonl").read_bytes()
    decoded = b"".join(base64.b64decode(json.loads(line)["value_b64"]) for line in dlq.splitlines())
    state = b"".join(path.read_bytes() for path in out.glob("state.sqlite*"))
    assert state, "no state written"
    stored = {"report": json.dumps(report, ensure_ascii=False).encode(), "dlq": dlq,
              "dlq (decoded)": decoded, "state": state}  # fmt: skip
    for item in scenario.planted_pii:
        for where, blob in stored.items():
            for needle in {item, item.replace(" ", ""), item.split("@")[0]}:
                assert needle.encode() not in blob, f"{item!r} found in the {where}"


# -- topics -------------------------------------------------------------------------------------


def test_topic_shift_alarms_and_names_the_topics(tmp_path: Path) -> None:
    """Gold set: 900 CLINC150 train questions of banking/travel/kitchen_and_dining (50/30/20,
    topic = domain). Two new domains (auto_and_commute, home) taking 40 % come out partly as
    ``novel`` (~35 % of them), the rest misassigned to the three known topics. Measured: the
    baseline comparison alarms 200 events after the change naming ``novel`` rising and
    ``banking`` falling; the gold-set comparison at 500."""
    scenario = topic_shift(3000, 3000, 0.40)
    report = replay(scenario, tmp_path)
    assert scenario.change_at is not None
    assert_silent_before(report, scenario.change_at)
    found = alarms(report, "topic")
    assert found, "no topic alarm"
    first = found[0]
    delay = first["after_events"] - scenario.change_at
    print(
        f"\ntopic: alarm ({first['comparison']}) {delay} events after the change; rising "
        f"{first['rising']}, falling {first['falling']}; topics {report['analytics']['topics']}"
    )
    assert delay <= 300
    assert "novel" in first["rising"]
    assert set(first["rising"]) <= {"novel", *DOMAINS}
    assert set(first["falling"]) <= set(DOMAINS)


@pytest.mark.slow
def test_no_alarm_on_30k_events_from_one_fixed_mixture(tmp_path: Path) -> None:
    """30,000 events (3.5 days: three alpha periods, ~1,000 test times per comparison) of
    the fixed 50/30/20 three-domain mixture, through the whole pipeline. Measured: 0 alarms
    in any dimension.

    30,000 rather than the 100,000 it ran before (session 42): what it adds to the detectors'
    own 100,000-event stationary tests (``tests/service/drift/test_drift_acceptance.py``,
    > 3,000 tests each, no false alarm) is that the pipeline's labels of a fixed mixture
    stay fixed across days, windows and the baseline's warm-up, and all 2,250 distinct
    questions of the mixture come within the first 30,000 events (the stream is the 100,000
    one's prefix). It still fails when the effect is judged
    by the Newcombe bound farthest from zero (first alarm 5,491 events in), as at 100,000."""
    scenario = stationary_topics(30_000)
    started = time.perf_counter()
    report = replay(scenario, tmp_path)
    seconds = time.perf_counter() - started
    drift = report["analytics"]["drift"]
    print(
        f"\n30k stationary events: {len(alarms(report))} alarms in {seconds:.1f} s; "
        f"states {[(d, drift[d]['state']) for d in ('language', 'topic')]}; "
        f"topics {report['analytics']['topics']}"
    )
    assert report["processed"] == 30_000
    assert alarms(report) == []
    assert drift["topic"]["state"] == drift["language"]["state"] == "ok"
    assert set(drift["topic"]["comparisons"]) == {"reference", "baseline"}


# -- refusals -----------------------------------------------------------------------------------


def _true_refusals(scenario: Scenario) -> int:
    return sum(bool(nomiracl_label(e["answer"]["text"])) for e in scenario.events)


def test_refusal_shift_from_5_to_20_percent_alarms(tmp_path: Path) -> None:
    """Real NoMIRACL replies, refusals 5 % then 20 % (NoMIRACL's labels). Measured: the
    baseline comparison alarms 300 events after the change (5.7 % → 14.4 % in the window);
    goldwatch counts 770 refusals where NoMIRACL's labels say 747."""
    scenario = refusal_shift(3000, 3000, 0.05, 0.20)
    report = replay(scenario, tmp_path)
    assert scenario.change_at is not None
    assert_silent_before(report, scenario.change_at)
    found = alarms(report, "refusal")
    assert found, "no refusal alarm"
    first = found[0]
    delay = first["after_events"] - scenario.change_at
    refusals = report["analytics"]["refusals"]
    truth = _true_refusals(scenario)
    print(
        f"\nrefusals 5 % -> 20 %: alarm ({first['comparison']}) {delay} events after the "
        f"change, {first['rate_compared']:.1%} -> {first['rate_current']:.1%}; "
        f"{refusals['refused']} refusals counted, {truth} by NoMIRACL's labels"
    )
    assert delay <= 400
    assert first["rate_compared"] < 0.08 < 0.10 < first["rate_current"]
    assert abs(refusals["refused"] - truth) <= 0.05 * truth
    assert {a["dimension"] for a in alarms(report)} == {"refusal"}


def test_constant_refusal_rate_does_not_alarm(tmp_path: Path) -> None:
    """The same data with the rate constant at 5 %: no alarm in any dimension."""
    scenario = refusal_shift(3000, 3000, 0.05, 0.05)
    report = replay(scenario, tmp_path)
    print(
        f"\nconstant 5 % refusals: {len(alarms(report))} alarms, "
        f"rate {report['analytics']['refusals']['rate']:.1%}"
    )
    assert alarms(report) == []
    assert report["analytics"]["drift"]["refusal"]["state"] == "ok"


def test_a_window_of_8_events_never_alarms(tmp_path: Path) -> None:
    """Five days of 8 events a day, every question Chinese and every answer a refusal (against
    an English gold set): every window holds 8 events, so nothing is ever tested."""
    scenario = sparse_stream(days=5, per_day=8)
    report = replay(scenario, tmp_path)
    drift = report["analytics"]["drift"]
    assert report["processed"] == 40
    assert report["analytics"]["languages"] == {"zh": 40}
    assert report["analytics"]["refusals"]["refused"] == 40
    assert alarms(report) == []
    for dim in ("language", "topic", "refusal", "out_of_scope"):
        assert drift[dim]["state"] == "insufficient_data", dim
    assert all(c["n_current"] <= 8 for c in drift["language"]["comparisons"].values())
