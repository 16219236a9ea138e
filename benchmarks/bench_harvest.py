"""Cost of harvesting: the live analytics pipeline with and without the harvest stage.

Rows, all in the same run on the same file (so the ratio survives a noisy machine):

* ``harvest off`` — ``goldwatch replay``'s path with ``harvest.enabled=false``: file source →
  decode/validate → dedup → PII, language, topic, refusal, out-of-scope, drift → live
  quality (known questions, ACL checks) → count → SQLite checkpoints, with the Prometheus
  export of every batch; the baseline;
* ``harvest on`` — the same plus :class:`service.harvest.HarvestStage` (reasons, coverage
  gaps, score quantiles, near-duplicate merging, pools) publishing to the state store;
* ``harvest on, trigrams only`` — the same with ``harvest.embedding_similarity=null``:
  near-duplicates by trigram Jaccard alone (before the embedding OR rule); its own timed row
  follows the shipped configuration's;
* ``harvest on, per-stage timers`` — once more with each stage timed (adds a little overhead),
  for the harvest stage's own µs per event, and what it did: new suggestions and events shed
  by ``harvest.max_new_per_batch`` (its default: every row measures the shipped
  configuration). The stage's µs per event over ``harvest off``'s is printed too: on a
  loaded machine it is steadier than the difference of the first two rows (which also
  holds what harvesting adds to checkpoints, metrics export and garbage collection).

Each of the first two rows runs ``--repeats`` times, alternating, and keeps its fastest run.
Start-up (gold set, corpus, topic model, out-of-scope calibration) is excluded from the rates.

Streams (``--stream``):

* ``demo`` (default) — the embedded demo query log (3,000 events of a college bot, with
  retrieval results, answers, refusals, feedback, roles and Hinglish) repeated with fresh
  event ids, each copy three days earlier than the next, against the demo gold set and
  corpus: every reason of the harvest stage fires;
* ``mixed`` — :mod:`benchmarks.bench_analytics`'s stream (NQ-open, CLINC150, Hinglish-TOP with
  real NoMIRACL replies, no retrieval results) against its XQuAD gold set.

Target (issue 6): harvesting adds at most 15 % to the per-event cost.

Run: ``python -m benchmarks.bench_harvest [--events 30000] [--stream demo] [--repeats 2]
[--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from benchmarks.bench_analytics import write_inputs
from benchmarks.drift_streams import write_jsonl
from consumers.engine import Engine
from consumers.file_source import FileSource
from consumers.loop import make_decoder
from consumers.loop import run as run_loop
from service.demo import demo_path
from service.pipeline import Batch
from service.runtime.live import build_live
from service.settings import Settings, load_settings
from service.state import StateStore
from service.telemetry import build_metrics

DEFAULT_EVENTS = 30_000
DEFAULT_REPEATS = 2
#: The issue's bound on what harvesting adds to the per-event cost.
TARGET_OVERHEAD = 0.15
PIPELINE: dict[str, Any] = {"max_batch_size": 500, "max_batch_wait_ms": 0, "commit_interval_s": 1.0}
#: The demo's drift windows (``service/demo/goldwatch.yaml``: about 40 questions an hour).
DEMO_DRIFT: dict[str, Any] = {
    "window_s": 14_400,
    "reference_window_s": 43_200,
    "warmup_s": 28_800,
    "test_every_s": 1_800,
    "min_count": 100,
}


def _stamp(text: str, shift: timedelta) -> str:
    at = datetime.fromisoformat(text.replace("Z", "+00:00")) - shift
    return at.isoformat().replace("+00:00", "Z")


def demo_stream(out: Path, n: int) -> tuple[Path, Path, Path, int]:
    """Write ``n`` events of the demo query log repeated (module docstring) into ``out``;
    return ``(events, gold, corpus, distinct questions)``."""
    lines = demo_path("querylog.jsonl").read_text(encoding="utf-8").splitlines()
    log = [json.loads(line) for line in lines if line.strip()]
    first = datetime.fromisoformat(log[0]["timestamp"].replace("Z", "+00:00"))
    last = datetime.fromisoformat(log[-1]["timestamp"].replace("Z", "+00:00"))
    span = last - first + timedelta(hours=1)
    copies = -(-n // len(log))
    events = []
    for copy in range(copies):
        shift = span * (copies - 1 - copy)  # the last copy is the original, in the past
        for event in log:
            if len(events) == n:
                break
            events.append({**event, "event_id": f"{event['event_id']}-r{copy}",
                           "timestamp": _stamp(event["timestamp"], shift)})  # fmt: skip
    distinct = len({e["question"] for e in events})
    return (write_jsonl(out / "events.jsonl", events), demo_path("gold.jsonl"),
            demo_path("corpus.jsonl"), distinct)  # fmt: skip


def settings_for(stream: str, gold: Path, corpus: Path, harvest: bool,
                 embeddings: bool = True) -> Settings:  # fmt: skip
    """Default settings except the inputs, the pipeline cadence, the demo's drift windows
    (``demo`` stream), ``harvest.enabled`` and, without ``embeddings``,
    ``harvest.embedding_similarity=None`` (trigram near-duplicates only)."""
    analytics = {"drift": DEMO_DRIFT} if stream == "demo" else {}
    section: dict[str, Any] = {"enabled": harvest}
    if not embeddings:
        section["embedding_similarity"] = None
    return load_settings(None, gold_set=gold, corpus=corpus, pipeline=PIPELINE,
                         analytics=analytics, harvest=section)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One line of the table: what ran, events, start-up, and the run's CPU and wall seconds
    (CPU: this process, all threads — steadier than wall time on a shared machine)."""

    what: str
    events: int
    startup_s: float
    cpu_s: float
    wall_s: float
    stages: dict[str, float] = field(default_factory=dict)
    harvest: dict[str, int] = field(default_factory=dict)

    @property
    def us_per_event(self) -> float:
        """CPU µs per event, start-up excluded."""
        return 1e6 * self.cpu_s / self.events if self.events else float("inf")

    @property
    def rate(self) -> float:
        """Events per CPU second, start-up excluded."""
        return self.events / self.cpu_s if self.cpu_s > 0 else float("inf")


def _timed(fn: Callable[[Batch], None], totals: dict[str, float], key: str
           ) -> Callable[[Batch], None]:  # fmt: skip
    def wrapper(batch: Batch) -> None:
        started = time.process_time()
        fn(batch)
        totals[key] = totals.get(key, 0.0) + time.process_time() - started

    return wrapper


def replay_cpu(
    settings: Settings, events: Path, workdir: Path, what: str, *,
    per_stage: bool = False, profile: cProfile.Profile | None = None,
) -> Row:  # fmt: skip
    """``run_replay``'s path, as :func:`benchmarks.bench_analytics.replay_once`, timed in CPU
    seconds (stage timers too) as well as wall seconds."""
    tag = what.replace(" ", "-").replace(",", "")
    state = StateStore.open(workdir / f"{tag}.sqlite")
    started = time.process_time()
    registry = CollectorRegistry()
    # the state as serve and replay pass it: harvest's records there, evicted ones swept
    live = build_live(settings, registry, state)
    startup = time.process_time() - started
    stages: dict[str, float] = {}
    if per_stage:
        for stage in live.pipeline.stages:
            stage.process = _timed(stage.process, stages, stage.name)  # type: ignore[method-assign]
    observe = _timed(live.observe, stages, "metrics export") if per_stage else live.observe
    tally: dict[str, int] = {}
    harvest = live.harvest
    if per_stage and harvest is not None:
        pending = harvest.pending_observations

        def counted() -> dict[str, Any]:
            observed = pending()
            for key in ("new_suggestions", "shed"):
                tally[key] = tally.get(key, 0) + int(observed.get(key, 0))
            return observed

        harvest.pending_observations = counted  # type: ignore[method-assign]
    source = FileSource(str(events), dlq_path=workdir / f"{tag}.dlq.jsonl")
    decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes)
    engine = Engine(live.pipeline, state, build_metrics(registry), decoder, on_batch=observe)
    wall, cpu = time.perf_counter(), time.process_time()
    if profile is not None:
        profile.enable()
    report = run_loop(source, live.pipeline, state, engine.metrics, threading.Event(),
                      config=settings.pipeline, until_eof=True, engine=engine)  # fmt: skip
    if profile is not None:
        profile.disable()
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    live.close()  # publishes the last suggestions into the state store: close it after
    state.close()
    if report.dead_lettered_total:
        raise RuntimeError(f"{what}: {report.dead_lettered} dead letters in a clean stream")
    return Row(what, report.processed, startup, cpu, wall, stages, tally)


def run(n: int = DEFAULT_EVENTS, stream: str = "demo", repeats: int = DEFAULT_REPEATS,
        profile: bool = False) -> tuple[list[Row], int, str, list[float]]:  # fmt: skip
    """Run the benchmark; return ``([off, on, on with per-stage timers, trigrams only, trigrams
    only with per-stage timers], distinct questions, profile text or "", paired ratios)`` —
    the paired ratios: ``harvest on``'s µs per event over ``harvest off``'s of each
    back-to-back pair of runs, in run order.

    Raises:
        ValueError: unknown ``stream`` or ``repeats < 1``.
    """
    if stream not in ("demo", "mixed") or repeats < 1:
        raise ValueError("stream must be 'demo' or 'mixed', repeats >= 1")
    with tempfile.TemporaryDirectory(prefix="gw-bench-harvest-") as tmp:
        workdir = Path(tmp)
        if stream == "demo":
            events, gold, corpus, distinct = demo_stream(workdir, n)
        else:
            events, gold, corpus, distinct = write_inputs(workdir, n, 1.0)
        off = settings_for(stream, gold, corpus, harvest=False)
        on = settings_for(stream, gold, corpus, harvest=True)
        trigram = settings_for(stream, gold, corpus, harvest=True, embeddings=False)
        trigram_only = "harvest on, trigrams only"
        best: dict[str, Row] = {}
        paired: list[float] = []
        for k in range(repeats):
            pair: dict[str, Row] = {}
            for what, settings in (("harvest off", off), ("harvest on", on),
                                   (trigram_only, trigram)):  # fmt: skip
                row = pair[what] = replay_cpu(settings, events, workdir, f"{what} {k}")
                if what not in best or row.cpu_s < best[what].cpu_s:
                    best[what] = Row(what, row.events, row.startup_s, row.cpu_s, row.wall_s)
            paired.append(pair["harvest on"].us_per_event / pair["harvest off"].us_per_event)
        timed = replay_cpu(on, events, workdir, "harvest on, per-stage timers", per_stage=True)
        timed_trigram = replay_cpu(trigram, events, workdir, "trigrams only, per-stage timers",
                                   per_stage=True)  # fmt: skip
        text = ""
        if profile:
            profiler = cProfile.Profile()
            replay_cpu(on, events, workdir, "profiled", profile=profiler)
            buffer = io.StringIO()
            stats = pstats.Stats(profiler, stream=buffer).sort_stats("cumulative")
            stats.print_stats("service/harvest", 20)
            text = buffer.getvalue()
    rows = [best["harvest off"], best["harvest on"], timed, best[trigram_only], timed_trigram]
    return rows, distinct, text, paired


def render(rows: Sequence[Row], distinct: int, repeats: int = DEFAULT_REPEATS,
           paired: Sequence[float] = ()) -> str:  # fmt: skip
    """The table (events per CPU second, CPU µs per event, ratio to ``harvest off``, wall
    seconds), the verdict, the paired ratios with their median (when given), and the
    per-stage CPU costs of the timed row."""
    base = rows[0]
    lines = [f"{'what':30} {'events':>7} {'start-up s':>10} {'cpu s':>7} {'wall s':>7} "
             f"{'events/s':>9} {'µs/event':>9} {'ratio':>6}"]  # fmt: skip
    for row in rows:
        lines.append(f"{row.what:30} {row.events:7d} {row.startup_s:10.2f} {row.cpu_s:7.2f} "
                     f"{row.wall_s:7.2f} {row.rate:9,.0f} {row.us_per_event:9.1f} "
                     f"{row.us_per_event / base.us_per_event:6.3f}")  # fmt: skip
    lines.append(
        f"events/s and µs/event in CPU time of the run (best of {repeats} alternating "
        f"runs each); ratio = µs/event / harvest off; {distinct} distinct questions"
    )
    added = rows[1].us_per_event / base.us_per_event - 1
    verdict = "met" if added <= TARGET_OVERHEAD else "NOT met"
    lines.append(f"harvesting adds {added:+.1%} per event (target <= "
                 f"{TARGET_OVERHEAD:.0%}): {verdict}")  # fmt: skip
    if paired:  # a pair runs back to back: a load swing between pairs cancels out
        ratios = sorted(paired)
        mid = len(ratios) // 2
        median = ratios[mid] if len(ratios) % 2 else (ratios[mid - 1] + ratios[mid]) / 2
        lines.append(f"paired runs (on / off, run order): "
                     f"{', '.join(f'{r:.3f}' for r in paired)}; median {median:.3f}")  # fmt: skip
    for timed in (row for row in rows[2:] if row.stages):
        lines.append(f"\nper stage ({timed.what}): CPU seconds, µs per event, share of the run")
        for name, seconds in sorted(timed.stages.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:16} {seconds:7.2f} {1e6 * seconds / timed.events:8.1f} "
                         f"{seconds / timed.cpu_s:6.1%}")  # fmt: skip
        rest = timed.cpu_s - sum(timed.stages.values())  # source, decode, state writes
        lines.append(f"  {'loop+checkpoints':16} {rest:7.2f} "
                     f"{1e6 * rest / timed.events:8.1f} {rest / timed.cpu_s:6.1%}")  # fmt: skip
        stage = timed.stages.get("harvest")
        if stage is not None:  # steadier than the difference of two noisy rows
            us = 1e6 * stage / timed.events
            lines.append(f"harvest stage alone: {us:.1f} µs/event = "
                         f"{us / base.us_per_event:.1%} of harvest off's µs/event")  # fmt: skip
        if timed.harvest:
            lines.append(f"harvest: {timed.harvest.get('new_suggestions', 0)} new suggestions, "
                         f"{timed.harvest.get('shed', 0)} events shed (new questions beyond "
                         f"harvest.max_new_per_batch)")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table (and with ``--profile`` the harvest functions by cumulative time)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--stream", choices=("demo", "mixed"), default="demo")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                        help="runs of each configuration; the fastest is kept")  # fmt: skip
    parser.add_argument("--profile", action="store_true", help="cProfile one more run")
    args = parser.parse_args(argv)
    rows, distinct, profile, paired = run(args.events, args.stream, args.repeats, args.profile)
    print(render(rows, distinct, args.repeats, paired))
    if profile:
        print("\n" + profile)


if __name__ == "__main__":
    main()
