"""``bench_pipeline --kafka-pairs``: the pairs alternate which side runs first, every
goldwatch run is checked for its counts, and the median ratio is the middle of the pairs'
ratios (no broker: the two runs are replaced by recorders of the calls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import bench_pipeline as bp
from consumers.loop import Report


def _report(consumed: int, processed: int) -> Report:
    return Report(consumed, processed, {}, consumed - processed, {}, 1, 1)


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runs made, in order; raw reads cost 6 µs an event, goldwatch's loop 10, 12, 11,
    13 µs in its successive runs (CPU seconds for 1,000 events)."""
    made: list[str] = []
    goldwatch_cpu = iter([0.010, 0.012, 0.011, 0.013])

    def raw(bootstrap: str, topic: str, n: int, fetch_bounds: bool = False) -> bp.Row:
        assert fetch_bounds  # the pairs compare with the raw read under goldwatch's bounds
        made.append("raw")
        return bp.Row("kafka", "raw", n, 0.1, 0.006)

    def loop(bootstrap: str, topic: str, n: int, workdir: Path) -> tuple[bp.Row, Report]:
        made.append("goldwatch")
        return bp.Row("kafka", "goldwatch loop", n, 0.2, next(goldwatch_cpu)), _report(n, n - 10)

    monkeypatch.setattr(bp, "raw_consume", raw)
    monkeypatch.setattr(bp, "kafka_pipeline", loop)
    return made


def test_pairs_alternate_and_give_each_ratio(calls: list[str], tmp_path: Path) -> None:
    pairs = bp.kafka_pairs("broker:9092", "topic", 1_000, tmp_path, 4)
    assert calls == ["raw", "goldwatch", "goldwatch", "raw", "raw", "goldwatch", "goldwatch", "raw"]
    assert [p.raw_first for p in pairs] == [True, False, True, False]
    # 6 µs over 10, 12, 11, 13 µs an event
    assert [round(p.ratio, 4) for p in pairs] == [0.6, 0.5, 0.5455, 0.4615]
    text = bp.render_pairs(pairs)
    # the median of 0.4615, 0.5, 0.5455, 0.6 is (0.5 + 0.5455) / 2 = 0.523; goldwatch's
    # median (11 + 12) / 2 = 11.5
    assert "median cpu ratio of 4 pairs 0.52 (range 0.46-0.60)" in text
    assert "goldwatch median 11.50, raw median 6.00" in text
    assert bp.render_pairs([]) == ""


def test_a_goldwatch_run_with_other_counts_stops_the_pairs(
    calls: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    processed = iter([990, 989])

    def loop(bootstrap: str, topic: str, n: int, workdir: Path) -> tuple[bp.Row, Report]:
        calls.append("goldwatch")
        return bp.Row("kafka", "goldwatch loop", n, 0.2, 0.01), _report(n, next(processed))

    monkeypatch.setattr(bp, "kafka_pipeline", loop)
    with pytest.raises(RuntimeError, match="counts wrong in pair 2"):
        bp.kafka_pairs("broker:9092", "topic", 1_000, tmp_path, 3)
