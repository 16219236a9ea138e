"""The production-shaped log of ``benchmarks.bench_production``: deterministic for a seed,
the stated shares of duplicates and bad lines exactly, every other line a good event."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.bench_production import (
    MAX_EVENT_BYTES,
    MIX,
    PASSAGES,
    write_gold_and_corpus,
    write_log,
)
from benchmarks.streams import FILE_POISON_KINDS
from consumers.base import Origin, RawMessage
from consumers.loop import make_decoder

N = 1_000  # 30 duplicates (3 %), 5 bad lines (0.5 %)


@pytest.fixture(scope="module")
def log_lines(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[bytes], object]:
    path = tmp_path_factory.mktemp("log") / "events.jsonl"
    log = write_log(path, N, seed=3)
    return path.read_bytes().split(b"\n"), log


def test_same_seed_same_bytes_other_seed_other_bytes(tmp_path: Path) -> None:
    first = write_log(tmp_path / "a.jsonl", 400, seed=5).path.read_bytes()
    second = write_log(tmp_path / "b.jsonl", 400, seed=5).path.read_bytes()
    other = write_log(tmp_path / "c.jsonl", 400, seed=6).path.read_bytes()
    assert first == second
    assert first != other


def test_shares_of_duplicates_and_bad_lines_are_exact(log_lines) -> None:
    raw, log = log_lines
    assert raw[-1] == b""  # the file ends with a newline
    lines = raw[:-1]
    assert len(lines) == N
    assert len(log.duplicates) == 30  # round(1000 * 0.03)
    assert len(log.bad) == 5  # round(1000 * 0.005)
    assert not set(log.duplicates) & set(log.bad)
    # equal shares of the file poison kinds, round-robin: 5 bad lines -> the first 5 kinds
    assert Counter(log.bad.values()) == Counter(FILE_POISON_KINDS[:5])


def test_every_line_is_a_good_event_a_duplicate_or_a_stated_bad_line(log_lines) -> None:
    raw, log = log_lines
    seen: set[str] = set()
    duplicates = []
    for number, line in enumerate(raw[:-1]):
        if number in log.bad:
            continue
        event = json.loads(line)  # raises on a line that is neither good nor stated bad
        assert isinstance(event["question"], str) and event["question"].strip()
        assert len(event["retrieval"]["results"]) == PASSAGES
        scores = [r["score"] for r in event["retrieval"]["results"]]
        assert scores == sorted(scores, reverse=True)
        assert [r["rank"] for r in event["retrieval"]["results"]] == list(range(1, 11))
        assert set(event["answer"]["citations"]) <= {r["id"] for r in event["retrieval"]["results"]}
        if event["event_id"] in seen:
            duplicates.append(number)
        seen.add(event["event_id"])
    assert tuple(duplicates) == log.duplicates
    assert len(seen) == N - 30 - 5


def test_bad_lines_are_dead_lettered_with_their_kind_and_no_other(log_lines) -> None:
    raw, log = log_lines
    messages = [RawMessage(line, Origin(file="events.jsonl", line=k + 1))
                for k, line in enumerate(raw[:-1])]  # fmt: skip
    decoded, dead = make_decoder(max_event_bytes=MAX_EVENT_BYTES)(messages)
    assert {d.message.origin.line - 1: d.reason for d in dead} == log.bad
    assert len(decoded) == N - 5


def test_gold_set_and_corpus_join_the_log(tmp_path: Path) -> None:
    gold_path, corpus_path = write_gold_and_corpus(tmp_path)
    gold = [json.loads(line) for line in gold_path.read_text("utf-8").splitlines()]
    corpus = {json.loads(line)["id"] for line in corpus_path.read_text("utf-8").splitlines()}
    assert len(corpus) == 240 + 77  # XQuAD en paragraphs + one FAQ page per BANKING77 category
    assert len(gold) == 200 + 50 + 50 + 77 + 100
    assert Counter(row["language"] for row in gold) == {"en": 377, "hi": 50, "es": 50}
    assert all(set(row["gold"]) <= corpus for row in gold)
    assert sum(row["kind"] == "unanswerable" for row in gold) == 100
    assert abs(sum(MIX.values()) - 1.0) < 1e-9


def test_bound_row_keeps_serves_harvest_bound_through_the_replay(tmp_path: Path) -> None:
    """The "serve's harvest bound" row sets ``harvest.max_new_per_batch`` explicitly to 48
    (serve's default, stated in the README): a replay keeps an explicit bound and drops an
    implicit one, so a config that only inherited the default would time the unbounded
    harvest under the bounded row's name."""
    from benchmarks.bench_production import write_bound_config
    from service.settings import load_settings

    settings = load_settings(write_bound_config(tmp_path, tmp_path / "g.jsonl",
                                                tmp_path / "c.jsonl"))  # fmt: skip
    assert settings.harvest.max_new_per_batch == 48
    assert "max_new_per_batch" in settings.harvest.model_fields_set


def test_stage_timers_split_the_work_around_the_stages(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With timers on, a replay's table names the work around the stages (the file source's
    reads and dead letters, the decoder, the series stage, the collector, what follows the
    last batch) instead of leaving it in one "rest" row (33 µs/event of ~150 before the
    twenty-ninth session); the rows never add up to more than the run's CPU time (a
    collection counted inside another row would), and every patched hook is put back.

    ``freeze_heap`` (a full collection of the start-up heap, once per replay) is start-up:
    made to burn 1.5 s of CPU here, those seconds are in ``startup_cpu_s`` and not in the run
    (1,200 lines take well under 1.5 s), where they were counted before."""
    import gc

    from benchmarks.bench_production import AROUND, COLLECTOR, LETTERS, READ, replay
    from consumers.file_source import FileSource
    from service.jobs import replay as replay_job
    from service.jobs.series import TimeSeries

    gold, corpus = write_gold_and_corpus(tmp_path, seed=0)
    log = write_log(tmp_path / "events.jsonl", 1_200, seed=0)
    defaults = tmp_path / "defaults.yaml"
    defaults.write_text(f"gold_set: {gold}\ncorpus: {corpus}\n", encoding="utf-8")
    callbacks = list(gc.callbacks)
    freeze_heap = replay_job.freeze_heap

    def slow_freeze() -> None:
        freeze_heap()
        started = time.process_time()
        while time.process_time() - started < 1.5:
            pass

    monkeypatch.setattr(replay_job, "freeze_heap", slow_freeze)
    hooks = (FileSource.poll, FileSource.dead_letter, TimeSeries.process,
             replay_job.make_decoder, replay_job.run, replay_job.build_live)  # fmt: skip
    timers: dict[str, float] = {}
    run = replay(defaults, log.path, tmp_path, stage_timers=timers)
    assert run.startup_cpu_s >= 1.5 > run.cpu_s - run.startup_cpu_s
    assert run.report["dead_lettered_total"] == len(log.bad) == 6
    assert set(AROUND) <= set(timers)
    assert all(seconds >= 0 for seconds in timers.values())
    assert timers[READ] > 0 and timers[LETTERS] > 0 and timers[COLLECTOR] > 0
    # the run's CPU time (start-up excluded) holds every row, with 2 % for the clocks' steps
    assert sum(timers.values()) <= 1.02 * (run.cpu_s - run.startup_cpu_s)
    assert hooks == (FileSource.poll, FileSource.dead_letter, TimeSeries.process,
                     replay_job.make_decoder, replay_job.run, replay_job.build_live)  # fmt: skip
    assert gc.callbacks == callbacks
