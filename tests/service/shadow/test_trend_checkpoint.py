"""The shadow-agreement trend's checkpoints (review of s45, blocker 1): incremental (a
bucket is encoded again only when it changed), a snapshot never changes after it is taken,
and a restart from the last checkpoint of a killed process (SIGKILL) gives the verdicts of
an uninterrupted run, look for look. And the hourly re-judge's
``sustained_agreement`` equals ``over_time``'s verdict value for value."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import service.shadow.trend as trend_module
from service.quality.over_time import over_time, sustained_agreement
from service.shadow.trend import AgreementTrend
from service.state import StateStore

HOUR = 3600.0
T0 = 1795478400.0  # 2026-11-24 00:00 UTC
ROOT = Path(__file__).resolve().parents[3]


def _stream(seed: int, hours: int) -> list[tuple[float, str, float, str]]:
    """Results of two candidates, 12 an hour out of 30 questions; tfidf loses 0.2 from hour
    30 on, a late result (3 h behind) every 7th hour."""
    rng = random.Random(seed)
    base = {f"q{i}": rng.uniform(0.4, 0.9) for i in range(30)}
    out = []
    for hour in range(hours):
        for k in range(12):
            q = f"q{rng.randrange(30)}"
            for name in ("tfidf", "bm25"):
                drop = 0.2 if name == "tfidf" and hour >= 30 else 0.0
                rbo = min(1.0, max(0.0, base[q] - drop + rng.gauss(0, 0.05)))
                out.append((T0 + hour * HOUR + k * 250.0, name, rbo, q))
        if hour % 7 == 6:
            out.append((T0 + (hour - 3) * HOUR + 10.0, "bm25", base["q1"], "q1"))
    return out


def _new() -> AgreementTrend:
    return AgreementTrend(max_buckets=32, max_questions=400, clock=lambda: float("inf"))


def _looks(trend: AgreementTrend, results: Any, looks: list[Any]) -> None:
    for timestamp, name, rbo, q in results:
        if trend.add(timestamp, name, rbo, 0.5, q):
            looks.append(json.loads(json.dumps(trend.verdicts())))


def test_a_checkpoint_encodes_only_the_buckets_that_changed(monkeypatch: Any) -> None:
    trend = AgreementTrend(clock=lambda: float("inf"))
    for hour in range(5):
        for q in range(3):
            trend.add(T0 + hour * HOUR + q, "tfidf", 0.5, None, f"q{q}")
    encoded: list[Any] = []
    real = trend_module.json_text
    monkeypatch.setattr(trend_module, "json_text", lambda v: encoded.append(v[0]) or real(v))
    first = trend.state()
    assert sorted(encoded) == [int(T0 // HOUR) + h for h in range(5)]
    encoded.clear()
    trend.state()
    assert encoded == []  # nothing changed: nothing encoded
    trend.add(T0 + 4 * HOUR + 50, "tfidf", 0.6, None, "q0")  # the open hour
    trend.add(T0 + 1 * HOUR + 50, "tfidf", 0.6, None, "q0")  # a late result, a closed hour
    second = trend.state()
    assert sorted(encoded) == [int(T0 // HOUR) + 1, int(T0 // HOUR) + 4]
    for state in (first, second):  # the text is the dictionary's
        assert state.text is not None
        assert json.loads(state.text) == json.loads(json.dumps(state))


def test_a_snapshot_does_not_change_after_it_is_taken() -> None:
    """Results in the open hour, a late one in a closed hour, the question sample halving
    and the width doubling after a snapshot: its dictionary still reads as its text."""
    trend = AgreementTrend(max_buckets=4, max_questions=30, clock=lambda: float("inf"))
    for hour in range(3):
        for q in range(8):
            trend.add(T0 + hour * HOUR + q, "tfidf", 0.5, None, f"q{q}")
    snapshot = trend.state()
    taken = json.loads(snapshot.text or "")
    trend.add(T0 + 2 * HOUR + 99, "tfidf", 0.7, None, "q0")
    trend.add(T0 + 0 * HOUR + 99, "tfidf", 0.7, None, "q1")
    for q in range(8, 20):  # past 30 cells: the sample halves
        trend.add(T0 + 2 * HOUR + q, "tfidf", 0.5, None, f"q{q}")
    for hour in range(3, 6):  # past 4 buckets: the width doubles
        trend.add(T0 + hour * HOUR, "tfidf", 0.5, None, "q0")
    assert trend.bucket_s == 2 * HOUR and trend.state()["threshold"]
    assert json.loads(json.dumps(snapshot)) == taken
    restored = AgreementTrend(max_buckets=4, max_questions=30)
    restored.load(json.loads(trend.state().text or ""))
    assert restored.series() == trend.series()


def test_the_stage_checkpoint_writes_the_trend_text() -> None:
    from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
    from service.shadow.stage import ShadowStage
    from service.state import EncodedObject
    from tests.service.shadow.shadow_fakes import Fixed

    config = ShadowConfig(max_cpu_share=None, candidates=(CandidateConfig(name="same"),))
    trend = AgreementTrend(clock=lambda: float("inf"))
    trend.add(T0, "same", 0.5, None, "q")
    stage = ShadowStage(ShadowRunner(config, {"same": Fixed()}, backpressure=True),
                        synchronous=True, trend=trend)  # fmt: skip
    snapshot = stage.state_snapshot()
    assert isinstance(snapshot, EncodedObject) and snapshot.text is not None
    assert json.loads(snapshot.text) == json.loads(json.dumps(snapshot))
    store = StateStore.in_memory()
    store.checkpoint({"stage/shadow": snapshot})
    restarted = AgreementTrend(clock=lambda: float("inf"))
    restarted.load(store.get("stage/shadow")["trend"])
    assert restarted.series() == trend.series()


_CHILD = """
import json, os, signal, sys
sys.path.insert(0, {root!r})
from tests.service.shadow.test_trend_checkpoint import _new, _stream
from service.state import StateStore
results = _stream(3, 60)
store = StateStore.open({path!r})
trend = _new()
for i, (timestamp, name, rbo, q) in enumerate(results):
    trend.add(timestamp, name, rbo, 0.5, q)
    if i % 97 == 0:
        store.checkpoint({{"trend": trend.state(), "offset": i + 1}})
    if i == {kill_at}:
        os.kill(os.getpid(), signal.SIGKILL)
"""


@pytest.mark.parametrize("kill_at", [700, 1111, 1400])
def test_a_restart_after_kill_9_judges_as_an_uninterrupted_run(tmp_path: Path,
                                                               kill_at: int) -> None:  # fmt: skip
    """A process checkpointing every 97 results is killed (SIGKILL) mid-stream, past the
    drop (hour 30: result 720), the width doubling (bucket 33: result ~790) and the question
    sample halving; a restart loads the last checkpoint and goes on from its offset: every
    later look and the final verdicts equal an uninterrupted run's."""
    results = _stream(3, 60)
    whole, whole_looks = _new(), []
    _looks(whole, results, whole_looks)
    whole.close_input()
    path = tmp_path / "state.sqlite"
    code = _CHILD.format(root=str(ROOT), path=str(path), kill_at=kill_at)
    child = subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})  # fmt: skip
    assert child.returncode == -signal.SIGKILL
    store = StateStore.open(path)
    offset = store.get("offset")
    assert 0 < offset <= kill_at + 1
    restarted = _new()
    restarted.load(store.get("trend"))
    store.close()
    looks: list[Any] = []
    _looks(restarted, results[offset:], looks)
    restarted.close_input()
    assert looks and looks == whole_looks[-len(looks) :]
    assert restarted.verdicts() == whole.verdicts()
    assert restarted.series() == whole.series()
    assert any((v or {}).get("stands") for look in looks for v in look.values())


def test_sustained_agreement_equals_over_time() -> None:
    """On series with coarsening, small hours and two candidates: the same width and the
    same sustained verdict as the replay's over_time."""
    for seed in range(6):
        trend = AgreementTrend(max_buckets=24 + seed, clock=lambda: float("inf"))
        rng = random.Random(seed)
        for timestamp, name, rbo, q in _stream(seed, 48):
            if rng.random() < 0.8:
                trend.add(timestamp, name, rbo, 0.5, q)
        series = trend.series()
        report = over_time(series, min_n=10)
        for name, track in report["agreement"].items():
            assert sustained_agreement(series, name, min_n=10) == (
                track["bucket_s"],
                track["sustained"],
            )
