"""The performance summary of issue 10: one table, every figure next to its reference.

Each row is measured in this run, its reference too (ratios survive a noisy machine; the
absolute figures are printed alongside):

=============================================  =============================================
figure                                         reference in the same run
=============================================  =============================================
file-source pipeline, no analytics (ev/s)      JSON decode-only loop over the same file
Kafka pipeline, no analytics (ev/s)            raw kafka-python consume of the same topic
full analytics (ev/s): the live stages of the  the same replay with analytics off
demo config minus shadow (PII, language,
topic, refusal, scope, drift, quality,
harvest)
language identification, µs/question uncached  plain langdetect on the same questions
shadow, built-in BM25 candidate at 100 %       the same traffic without shadow
gold-set scoring, 10,000 q × 100 results (s)   ranx (JIT warm) and pytrec_eval, the faster
RSS after 1,000,000 events                     RSS after 100,000 events (same child process)
end-to-end latency p99 at 2,000 events/s       —
start-up to ready (``goldwatch serve``)        —
scale-out: 2 replicas, one group, 4 partitions 1 replica (informative, no target)
=============================================  =============================================

End-to-end latency comes from ``benchmarks/soak.py`` (see :func:`latency`); if it cannot be
imported, from :func:`own_latency`: a writer process appends events to a file at 2,000/s,
each stamped with the wall-clock time it was written (epoch ms); the service's live stages
follow the file; latency = the time the batch holding the event was exported
(``Live.observe`` returned) − the event's timestamp.

Run: ``python -m benchmarks`` (the detail sections, then this table) or
``python -m benchmarks.summary [--quick]`` (this table only).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Figure:
    """One row of the summary.

    Attributes:
        figure: what was measured.
        value: the measured value, formatted with its unit.
        reference: what it is set against, formatted with its value ("—" when none).
        ratio: value / reference (formatted), "" when there is no reference.
        target: the issue's target, as text.
        met: whether the target is met (``None``: informative row or not measured).
        note: how it was measured when that differs from the issue (quick sizes, a miss).
    """

    figure: str
    value: str
    reference: str
    ratio: str
    target: str
    met: bool | None
    note: str = ""


def _guard(name: str, target: str, fn: Callable[[], list[Figure]]) -> list[Figure]:
    """Run one measurement; a failure becomes a row saying so instead of ending the run."""
    started = time.perf_counter()
    try:
        rows = fn()
    except Exception as exc:  # a benchmark that breaks must not hide the others
        rows = [Figure(name, "failed", "—", "", target, None, f"{type(exc).__name__}: {exc}")]
    print(f"  [{name}: {time.perf_counter() - started:.0f} s]", file=sys.stderr, flush=True)
    return rows


# -- the rows -----------------------------------------------------------------------------------


def file_and_kafka(events: int) -> list[Figure]:
    """File replay vs a ``json.loads`` loop; Kafka loop vs raw kafka-python (best of three:
    twice with its defaults, once with goldwatch's fetch bounds)."""
    from benchmarks import bench_pipeline

    with tempfile.TemporaryDirectory(prefix="gw-sum-pipe-") as tmp:
        rows = bench_pipeline.run_file(events, Path(tmp))
        json_row, pipe = rows[0], rows[-1]
        out = [Figure("pipeline, file source, no analytics",
                      f"{pipe.rate:,.0f} ev/s", f"json.loads loop {json_row.rate:,.0f} ev/s",
                      f"{pipe.rate / json_row.rate:.2f}", ">= 0.5",
                      pipe.rate / json_row.rate >= 0.5, f"{events:,} events")]  # fmt: skip
        kafka = bench_pipeline.run_kafka(events, Path(tmp))
        # by role, as bench_pipeline's own table reads them (not by position)
        raw = max(row.rate for row in kafka if "baseline" in row.what)
        (loop,) = (row.rate for row in kafka if row.what.startswith("goldwatch loop"))
        out.append(Figure("pipeline from Kafka, no analytics", f"{loop:,.0f} ev/s",
                          f"raw kafka-python {raw:,.0f} ev/s", f"{loop / raw:.2f}", ">= 0.5",
                          loop / raw >= 0.5,
                          f"{events:,} events, 4 partitions, Tansu"))  # fmt: skip
    return out


def analytics_settings(gold: Path, corpus: Path, enabled: bool = True) -> Any:
    """The demo configuration minus shadow, on ``gold`` and ``corpus`` (bench_analytics's)."""
    from benchmarks.bench_analytics import PIPELINE
    from service.demo import demo_path
    from service.settings import load_settings

    overrides: dict[str, Any] = {"gold_set": gold, "corpus": corpus, "pipeline": PIPELINE,
                                 "shadow": {"candidates": []}}  # fmt: skip
    if not enabled:
        overrides["analytics"] = {"enabled": False}
    return load_settings(demo_path("goldwatch.yaml"), **overrides)


def full_analytics(events: int) -> list[Figure]:
    """``build_live`` with the demo config minus shadow vs the same with analytics off."""
    from benchmarks import bench_analytics

    with tempfile.TemporaryDirectory(prefix="gw-sum-ana-") as tmp:
        work = Path(tmp)
        path, gold, corpus, _ = bench_analytics.write_inputs(work, events, 1.0)
        off = bench_analytics.replay_once(analytics_settings(gold, corpus, False), path, work,
                                          "off")  # fmt: skip
        on = bench_analytics.replay_once(analytics_settings(gold, corpus), path, work, "on",
                                         per_stage=True)  # fmt: skip
    stages = sorted(on.stages.items(), key=lambda kv: -kv[1])[:3]
    costly = ", ".join(f"{k} {1e6 * s / on.events:.0f} µs" for k, s in stages)
    return [Figure("full analytics (demo config minus shadow; favourable stream)",
                   f"{on.rate:,.0f} ev/s",
                   f"analytics off {off.rate:,.0f} ev/s", f"{on.rate / off.rate:.2f}",
                   ">= 10,000 ev/s", on.rate >= 10_000,
                   f"{events:,} events; start-up {on.startup_s:.1f} s; "
                   f"top stages/event: {costly}")]  # fmt: skip


def language() -> list[Figure]:
    """goldwatch's default backend uncached vs plain langdetect, median µs on XQuAD."""
    from benchmarks import bench_language

    rows = {row["tool"]: row for row in bench_language.run()}
    ours = next(r for name, r in rows.items()
                if name.startswith("goldwatch") and "uncached" in name)  # fmt: skip
    plain = rows["plain langdetect"]
    us, ref = ours["median_us"], plain["median_us"]
    return [Figure("language id, uncached", f"{us:.1f} µs/q", f"plain langdetect {ref:.0f} µs/q",
                   f"{us / ref:.3f} ({ref / us:.0f}x faster)", "<= 60 µs, >= 20x faster",
                   us <= 60 and ref / us >= 20,
                   f"{ours['tool']}, {ours['questions']} XQuAD questions")]  # fmt: skip


def shadow(per_language: int) -> list[Figure]:
    """bench_shadow's (b) row: the BM25 candidate at 100 %, one core, vs no candidates."""
    from benchmarks import bench_shadow
    from service.retrievers.bm25 import BM25Retriever
    from service.shadow.runner import CandidateConfig

    passages, _ = bench_shadow.load_xquad("en")
    bm25 = BM25Retriever(passages, name="bm25")
    traffic = bench_shadow.build_traffic(bm25, per_language)
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    try:
        if cores:
            os.sched_setaffinity(0, {min(cores)})  # one core, as the target says
        none = bench_shadow.Burn(0)
        base = bench_shadow.scenario("(a) no shadow", [], {}, bench_shadow.batches(traffic, 1),
                                     none)  # fmt: skip
        candidate = CandidateConfig(name="bm25", k=bench_shadow.K,
                                    queue_size=len(traffic.events), timeout_s=30)  # fmt: skip
        with_bm25 = bench_shadow.scenario("(b) bm25 100 %", [candidate], {"bm25": bm25},
                                          bench_shadow.batches(traffic, 1), none,
                                          wait_s=300)  # fmt: skip
    finally:
        if cores:
            os.sched_setaffinity(0, cores)
    done = float(with_bm25["shadow completed/s"])
    ref = base["live events/s"]
    return [Figure("shadow, built-in BM25 candidate at 100 %", f"{done:,.0f} ev/s",
                   f"no shadow {ref:,.0f} ev/s", f"{done / ref:.3f}", ">= 2,000 ev/s",
                   done >= 2_000, f"one core, {with_bm25['events']:,} XQuAD events, "
                   "completed shadow calls/s")]  # fmt: skip


def scoring(repeat: int) -> list[Figure]:
    """goldwatch evaluate vs the faster of ranx (JIT warm) and pytrec_eval, 10k × 100."""
    from benchmarks import bench_metrics

    rows = {row["tool"]: row for row in bench_metrics.run(repeat=repeat)}
    ours = rows["goldwatch evaluate (retriever order)"]["seconds"]
    refs = {"ranx": rows["ranx.evaluate (JIT warm)"]["seconds"],
            "pytrec_eval": rows["pytrec_eval (evaluator + evaluate)"]["seconds"]}  # fmt: skip
    name, ref = min(refs.items(), key=lambda kv: kv[1])
    other = " / ".join(f"{k} {v:.2f} s" for k, v in refs.items())
    return [Figure("gold-set scoring, 10,000 q x 100 results", f"{ours:.2f} s",
                   f"{name} {ref:.2f} s", f"{ours / ref:.2f}", "<= 2x their time",
                   ours / ref <= 2, f"{other}; best of {repeat}")]  # fmt: skip


def rss(events: int, stages: str) -> list[Figure]:
    """RSS after ``events`` vs after 100,000 (or a tenth, if fewer), in a child process."""
    from benchmarks import bench_rss

    baseline = min(bench_rss.BASELINE_EVENTS, events // 10)
    result = bench_rss.run(events, stages, baseline, sample_every=max(baseline // 2, 1000))
    note = f"{stages} stages, {result.rate:,.0f} ev/s"
    if events < bench_rss.DEFAULT_EVENTS:
        note += f"; FEWER EVENTS than the issue's 1,000,000 ({events:,})"
    return [Figure(f"RSS after {result.events:,} events ({stages})",
                   f"{result.final / 2**20:,.0f} MiB",
                   f"after {result.baseline_events:,}: {result.baseline / 2**20:,.0f} MiB",
                   f"{result.ratio:.3f}", "<= 1.05", result.ratio <= bench_rss.TARGET_RATIO,
                   note)]  # fmt: skip


WRITER = r"""
import sys, time
from benchmarks.bench_rss import templates
path, rate, seconds = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
pool = templates(2000)
n = int(rate * seconds)
tick = 0.01
with open(path, "ab", buffering=0) as out:
    start = time.time()
    i = 0
    while i < n:
        due = min(n, int((time.time() - start) * rate) + 1)
        if due > i:
            now = int(time.time() * 1000)
            out.write(b"".join(pool[j % len(pool)] % {b"id": j, b"ts": now} + b"\n"
                               for j in range(i, due)))
            i = due
        time.sleep(tick)
"""


def own_latency(rate: float, seconds: float, warmup_s: float = 2.0) -> dict[str, Any]:
    """Latency from event timestamp to its batch exported, live stages following a file.

    Returns ``{"p50", "p99", "max", "events", "warmup"}`` in seconds (events of the first
    ``warmup_s`` seconds excluded from the percentiles).
    """
    from prometheus_client import CollectorRegistry

    from consumers.engine import Engine
    from consumers.file_source import FileSource
    from consumers.loop import make_decoder
    from consumers.loop import run as run_loop
    from service.demo import demo_data, demo_path
    from service.runtime.live import build_live
    from service.settings import load_settings
    from service.state import StateStore
    from service.telemetry import build_metrics

    settings = load_settings(demo_path("goldwatch.yaml"), **demo_data(), shadow={"candidates": []})
    registry = CollectorRegistry()
    total = int(rate * seconds)
    latencies: list[float] = []
    stop = threading.Event()
    with tempfile.TemporaryDirectory(prefix="gw-sum-lat-") as tmp:
        path = Path(tmp) / "live.jsonl"
        path.touch()
        state = StateStore.open(Path(tmp) / "state.sqlite")
        live = build_live(settings, registry, state)  # as serve: harvest's records there

        def observe(batch: Any) -> None:
            live.observe(batch)
            now = time.time()
            latencies.extend(now - e.timestamp.timestamp() for e in batch.events)
            if len(latencies) >= total:
                stop.set()

        decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes)
        engine = Engine(live.pipeline, state, build_metrics(registry), decoder, on_batch=observe)
        source = FileSource(path, follow=True, dlq_path=Path(tmp) / "dlq.jsonl")
        writer = subprocess.Popen([sys.executable, "-c", WRITER, str(path), str(rate),
                                   str(seconds)], cwd=REPO_ROOT)  # fmt: skip
        killer = threading.Timer(seconds + 60, stop.set)  # never hang on a stuck writer
        killer.start()
        try:
            run_loop(source, live.pipeline, state, engine.metrics, stop,
                     config=settings.pipeline, engine=engine)  # fmt: skip
        finally:
            killer.cancel()
            writer.wait(timeout=30)
            state.close()
    skip = int(rate * warmup_s)
    steady = sorted(latencies[skip:]) or sorted(latencies)
    return {"p50": statistics.median(steady), "p99": steady[int(0.99 * (len(steady) - 1))],
            "max": steady[-1], "events": len(latencies), "warmup": skip}  # fmt: skip


def latency(rate: float, seconds: float) -> list[Figure]:
    """p99 event → metrics at ``rate`` events/s: ``benchmarks/soak.py`` (a real ``goldwatch
    serve`` on Kafka, default analytics, ``soak.soak(events, rate)``) when it is importable,
    else :func:`own_latency` (the live stages of the demo config following a file)."""
    result: dict[str, Any] | None = None
    try:
        from benchmarks import soak

        got = soak.soak(events=int(rate * seconds), rate=rate)
        result = {"p50": got["latency_p50_s"], "p99": got["latency_p99_s"],
                  "events": got["events"]}  # fmt: skip
        source = (f"benchmarks/soak.py: serve on Kafka, default analytics, achieved "
                  f"{got['rate_achieved']:,.0f} ev/s, /metrics p99 {got['metrics_p99_ms']} ms, "
                  f"RSS growth {got['rss_growth_pct']} %")  # fmt: skip
    except (ImportError, AttributeError, KeyError, TypeError) as exc:
        source = f"own measurement, live stages following a file (soak.py: {type(exc).__name__})"
    if result is None:
        result = own_latency(rate, seconds)
    p99 = float(result["p99"])
    return [Figure(f"end-to-end latency p99 at {rate:,.0f} ev/s", f"{p99:.3f} s", "—", "",
                   "<= 1 s", p99 <= 1.0,
                   f"p50 {float(result['p50']):.3f} s, {result['events']:,} events at "
                   f"{rate:,.0f}/s; {source}")]  # fmt: skip


def startup(runs: int) -> list[Figure]:
    """Median seconds from ``goldwatch serve`` to ``/readyz`` 200 (demo configuration), with
    the model cache cold (every model fitted) and warm (read back)."""
    from benchmarks import bench_startup

    figures = []
    for label, warm in (("cache cold", False), ("cache warm", True)):
        seconds = bench_startup.run(runs, warm=warm)
        median = statistics.median(seconds)
        figures.append(Figure(f"start-up to ready (goldwatch serve, demo config, {label})",
                              f"{median:.2f} s", "—", "", "<= 3 s",
                              median <= bench_startup.TARGET_S,
                              "runs " + ", ".join(f"{s:.2f}" for s in seconds)))  # fmt: skip
    return figures


def scaleout(events: int, workloads: Sequence[str]) -> list[Figure]:
    """1 vs 2 serve replicas in one group on 4 partitions (informative rows)."""
    from benchmarks import bench_scaleout

    out = []
    for workload in workloads:
        # Analytics off runs ~5x faster: 5x the events, so that the 10 %..90 % window lasts
        # seconds, not a few of bench_scaleout's 0.1 s status polls (a 0.4 s window once
        # gave an impossible 3x on 2 cores).
        n = events * (5 if workload == "none" else 1)
        rows = bench_scaleout.run(events, [workload], counts=(1, 2), partitions=(4,))
        one, two = (next(r for r in rows if r.workload == workload and r.replicas == k)
                    for k in (1, 2))  # fmt: skip
        out.append(Figure(f"scale-out, 2 replicas vs 1 ({workload} stages)",
                          f"{two.rate:,.0f} ev/s", f"1 replica {one.rate:,.0f} ev/s",
                          f"{two.rate / one.rate:.2f}", "— (measure, explain)", None,
                          f"{n:,} events; per replica "
                          f"{', '.join(map(str, two.shares))}"))  # fmt: skip
    return out


# -- the table ------------------------------------------------------------------------------


def render(figures: Sequence[Figure]) -> str:
    """The one table, then the notes (numbered) under it."""
    header = ("figure", "measured", "reference (same run)", "ratio", "target", "met?")
    cells = [(f.figure, f.value, f.reference, f.ratio, f.target,
              {True: "yes", False: "NO", None: "-"}[f.met]) for f in figures]  # fmt: skip
    widths = [max(len(str(row[i])) for row in [header, *cells]) for i in range(len(header))]
    line = "+".join("-" * (w + 2) for w in widths)
    out = [" | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)), line]
    for row in cells:
        out.append(" | ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)))
    out.append("")
    for i, f in enumerate(figures, 1):
        if f.note:
            out.append(f"  [{i}] {f.figure}: {f.note}")
    return "\n".join(out)


@dataclass(frozen=True)
class Sizes:
    """How big each measurement is (``--quick`` shrinks them)."""

    pipeline_events: int = 100_000
    analytics_events: int = 30_000
    shadow_per_language: int = 400
    scoring_repeat: int = 3
    rss_events: int = 1_000_000
    rss_stages: str = "pipeline"
    latency_s: float = 30.0
    startup_runs: int = 3
    scaleout_events: int = 30_000
    scaleout_workloads: tuple[str, ...] = ("live", "none")


QUICK = Sizes(pipeline_events=30_000, analytics_events=10_000, shadow_per_language=150,
              scoring_repeat=2, rss_events=300_000, latency_s=15.0, startup_runs=2,
              scaleout_events=15_000, scaleout_workloads=("none",))  # fmt: skip


def run(sizes: Sizes = Sizes(), skip: Sequence[str] = ()) -> list[Figure]:
    """Measure every row (except those named in ``skip``); return them in the issue's order."""
    plan: list[tuple[str, str, Callable[[], list[Figure]]]] = [
        ("pipeline", ">= 0.5", lambda: file_and_kafka(sizes.pipeline_events)),
        ("analytics", ">= 10,000 ev/s", lambda: full_analytics(sizes.analytics_events)),
        ("language", "<= 60 µs", language),
        ("shadow", ">= 2,000 ev/s", lambda: shadow(sizes.shadow_per_language)),
        ("scoring", "<= 2x", lambda: scoring(sizes.scoring_repeat)),
        ("rss", "<= 1.05", lambda: rss(sizes.rss_events, sizes.rss_stages)),
        ("latency", "<= 1 s", lambda: latency(2_000, sizes.latency_s)),
        ("startup", "<= 3 s", lambda: startup(sizes.startup_runs)),
        ("scaleout", "-", lambda: scaleout(sizes.scaleout_events, sizes.scaleout_workloads)),
    ]
    figures: list[Figure] = []
    for name, target, fn in plan:
        if name not in skip:
            figures += _guard(name, target, fn)
    return figures


def main(argv: Sequence[str] | None = None) -> None:
    """Print the summary table (``--quick``: smaller sizes, said in the notes)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--skip", default="", help="comma-separated rows to skip, e.g. scaleout")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    figures = run(QUICK if args.quick else Sizes(), [s for s in args.skip.split(",") if s])
    print(f"\n== summary (issue 10){' --quick: smaller sizes' if args.quick else ''} ==")
    print(render(figures))
    print(f"summary time {time.perf_counter() - started:.0f} s on {os.cpu_count()} CPUs")


if __name__ == "__main__":
    main()
