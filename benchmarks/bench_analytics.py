"""Throughput of the live analytics: events per second through ``goldwatch replay``'s path.

Rows, all in the same run on the same file (so the ratios survive a noisy machine):

* ``analytics off`` — the live pipeline with ``analytics.enabled=false`` (FileSource →
  decode/validate → dedup → count → SQLite checkpoints), the baseline;
* ``analytics on`` — the same plus PII scrubbing, language, topic, refusal, out-of-scope
  (the default ``tfidf`` retriever over the corpus) and drift, with the Prometheus export of
  every batch (``Live.observe``), i.e. exactly what ``run_replay`` runs; default language
  backend (``langdetect-rs`` when importable);
* ``analytics on, language cache off`` — the same with ``analytics.language.cache_size=0``:
  every question is detected afresh (the stream repeats questions; production does too, but
  less or more).

No shadow retrievers. Start-up (loading the gold set and corpus, fitting the topic model,
calibrating out-of-scope) is timed apart and excluded from the rate; so is writing the file.
As ``run_replay`` does, the start-up heap is frozen (``freeze_heap``) before the run, so full
garbage collections walk only what the run allocates; it is unfrozen after the run.

The stream: ~50k schema-v1 events (one every ``gap_s`` seconds of event time) mixing real
questions — NQ-open (search-engine questions) 30 %, CLINC150 (assistant queries, in- and
out-of-scope) 50 %, Hinglish-TOP ``cs_query`` 20 % — each answered with a real NoMIRACL LLM
reply (text only: the refusal detector reads it). Gold set: 200 English XQuAD questions over
the 240 XQuAD paragraphs plus 100 CLINC150 out-of-scope questions as unanswerable rows (so the
out-of-scope stage is calibrated and runs).

Run: ``python -m benchmarks.bench_analytics [--events 50000] [--gap-s 1] [--profile]``.
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import pstats
import random
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from benchmarks.datasets import SHARED_DATA
from benchmarks.drift_streams import (
    hinglish_queries,
    make_event,
    nomiracl_rows,
    nq_questions,
    write_jsonl,
    xquad_corpus,
    xquad_gold,
)
from consumers.engine import Engine
from consumers.file_source import FileSource
from consumers.loop import make_decoder
from consumers.loop import run as run_loop
from service.pipeline import Batch
from service.runtime.live import build_live
from service.runtime.memory import freeze_heap
from service.settings import Settings, load_settings
from service.state import StateStore
from service.telemetry import build_metrics

DEFAULT_EVENTS = 50_000
DEFAULT_GAP_S = 1.0
#: Share of each source of questions in the stream.
MIX: dict[str, float] = {"nq": 0.3, "clinc": 0.5, "hinglish": 0.2}
#: Share of refusals among the answers.
REFUSAL_RATE = 0.08
#: The issue's target for the full analytics pipeline on one core, events per second.
TARGET_RATE = 10_000
PIPELINE: dict[str, Any] = {"max_batch_size": 500, "max_batch_wait_ms": 0, "commit_interval_s": 1.0}


@dataclass(frozen=True)
class Row:
    """One line of the table: what ran, events, start-up and run seconds, per-stage seconds."""

    what: str
    events: int
    startup_s: float
    seconds: float
    stages: dict[str, float] = field(default_factory=dict)

    @property
    def rate(self) -> float:
        """Events per second, start-up excluded."""
        return self.events / self.seconds if self.seconds > 0 else float("inf")


def _pools(root: Path) -> dict[str, list[str]]:
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    return {
        "nq": nq_questions(root),
        "clinc": [text for split in sorted(clinc) for text, _ in clinc[split]],
        "hinglish": list(hinglish_queries(root)),
    }


def write_inputs(out: Path, n: int, gap_s: float, seed: int = 0, root: Path = SHARED_DATA
                 ) -> tuple[Path, Path, Path, int]:  # fmt: skip
    """Write ``(events, gold, corpus)`` JSONL into ``out``; also return the distinct
    questions of the stream."""
    rng = random.Random(f"bench-analytics-{seed}")
    pools = _pools(root)
    replies: dict[bool, list[str]] = {True: [], False: []}
    for row in nomiracl_rows("en", root):
        for reply, label in row.replies:
            replies[label].append(reply)
    names, weights = list(MIX), list(MIX.values())
    events = []
    for i in range(n):
        pool = pools[rng.choices(names, weights)[0]]
        answers = replies[rng.random() < REFUSAL_RATE]
        answer = answers[rng.randrange(len(answers))]
        question = pool[rng.randrange(len(pool))]
        events.append(make_event("bench", i, question, rng, answer=answer, gap_s=gap_s))
    gold, _ = xquad_gold(200, seed, root)
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    gold += [{"id": f"oos-{k}", "question": text, "gold": [], "kind": "unanswerable",
              "source": "real", "language": "en"}
             for k, (text, _) in enumerate(clinc["oos_val"])]  # fmt: skip
    distinct = len({e["question"] for e in events})
    return (
        write_jsonl(out / "events.jsonl", events),
        write_jsonl(out / "gold.jsonl", gold),
        write_jsonl(out / "corpus.jsonl", list(xquad_corpus(root))),
        distinct,
    )


def _timed(fn: Callable[[Batch], None], totals: dict[str, float], key: str
           ) -> Callable[[Batch], None]:  # fmt: skip
    def wrapper(batch: Batch) -> None:
        started = time.perf_counter()
        fn(batch)
        totals[key] = totals.get(key, 0.0) + time.perf_counter() - started

    return wrapper


def replay_once(
    settings: Settings, events: Path, workdir: Path, what: str, *,
    per_stage: bool = False, profile: cProfile.Profile | None = None,
) -> Row:  # fmt: skip
    """``run_replay``'s path (``service.jobs.replay``), start-up timed apart from the run.

    :param per_stage: time each stage and the metrics export (adds a little overhead).
    :param profile: profile the run (not the start-up) with this profiler.
    """
    tag = what.replace(" ", "-").replace(",", "")
    state = StateStore.open(workdir / f"{tag}.sqlite")
    started = time.perf_counter()
    registry = CollectorRegistry()
    live = build_live(settings, registry, state)  # as run_replay: harvest's records there
    startup = time.perf_counter() - started
    freeze_heap()  # as run_replay: the start-up heap is out of the collector's reach
    stages: dict[str, float] = {}
    if per_stage:
        for stage in live.pipeline.stages:
            stage.process = _timed(stage.process, stages, stage.name)  # type: ignore[method-assign]
    observe = _timed(live.observe, stages, "metrics export") if per_stage else live.observe
    source = FileSource(str(events), dlq_path=workdir / f"{tag}.dlq.jsonl")
    decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes)
    engine = Engine(live.pipeline, state, build_metrics(registry), decoder, on_batch=observe)
    started = time.perf_counter()
    if profile is not None:
        profile.enable()
    report = run_loop(source, live.pipeline, state, engine.metrics, threading.Event(),
                 config=settings.pipeline, until_eof=True, engine=engine)  # fmt: skip
    if profile is not None:
        profile.disable()
    seconds = time.perf_counter() - started
    gc.unfreeze()  # the next run's start-up may collect this one's heap
    state.close()
    if report.dead_lettered_total:
        raise RuntimeError(f"{what}: {report.dead_lettered} dead letters in a clean stream")
    return Row(what, report.processed, startup, seconds, stages)


def settings_for(gold: Path, corpus: Path, **analytics: Any) -> Settings:
    """Default settings except the gold set, corpus, pipeline cadence and ``analytics``."""
    return load_settings(None, gold_set=gold, corpus=corpus, pipeline=PIPELINE,
                         analytics=analytics)  # fmt: skip


def run(n: int = DEFAULT_EVENTS, gap_s: float = DEFAULT_GAP_S, profile: bool = False
        ) -> tuple[list[Row], int, str]:  # fmt: skip
    """Run the benchmark; return ``(rows, distinct questions, profile text or "")``."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-analytics-") as tmp:
        workdir = Path(tmp)
        events, gold, corpus, distinct = write_inputs(workdir, n, gap_s)
        rows = [
            replay_once(settings_for(gold, corpus, enabled=False), events, workdir,
                        "analytics off (baseline)"),
            replay_once(settings_for(gold, corpus), events, workdir, "analytics on"),
            replay_once(settings_for(gold, corpus, language={"cache_size": 0}), events,
                        workdir, "analytics on, language cache off"),
            replay_once(settings_for(gold, corpus), events, workdir,
                        "analytics on, per-stage timers", per_stage=True),
        ]  # fmt: skip
        text = ""
        if profile:
            profiler = cProfile.Profile()
            replay_once(settings_for(gold, corpus), events, workdir, "profiled", profile=profiler)
            buffer = io.StringIO()
            pstats.Stats(profiler, stream=buffer).sort_stats("tottime").print_stats(15)
            text = buffer.getvalue()
    return rows, distinct, text


def render(rows: Sequence[Row], distinct: int) -> str:
    """The table: rate, ratio to the baseline, start-up; then the per-stage seconds."""
    base = rows[0].rate
    lines = [f"{'what':36} {'events':>7} {'start-up s':>10} {'run s':>7} {'events/s':>9} "
             f"{'ratio':>6}"]  # fmt: skip
    for row in rows:
        lines.append(f"{row.what:36} {row.events:7d} {row.startup_s:10.2f} {row.seconds:7.2f} "
                     f"{row.rate:9,.0f} {row.rate / base:6.2f}")  # fmt: skip
    lines.append(f"ratio = events/s / analytics off; {distinct} distinct questions in the stream")
    best = max(row.rate for row in rows[1:]) if len(rows) > 1 else base
    verdict = "met" if best >= TARGET_RATE else "NOT met"
    lines.append(f"target >= {TARGET_RATE:,} events/s with analytics: {verdict} ({best:,.0f})")
    timed = [row for row in rows if row.stages]
    if timed:
        row = timed[0]
        lines.append(f"\nper stage ({row.what}): seconds, µs per event, share of the run")
        for name, seconds in sorted(row.stages.items(), key=lambda kv: -kv[1]):
            lines.append(f"  {name:16} {seconds:7.2f} {1e6 * seconds / row.events:8.1f} "
                         f"{seconds / row.seconds:6.1%}")  # fmt: skip
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the table (and with ``--profile`` the 15 costliest functions by own time)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--gap-s", type=float, default=DEFAULT_GAP_S,
                        help="mean seconds of event time between two questions")  # fmt: skip
    parser.add_argument("--profile", action="store_true", help="cProfile one more run")
    args = parser.parse_args(argv)
    rows, distinct, profile = run(args.events, args.gap_s, args.profile)
    print(render(rows, distinct))
    if profile:
        print("\n" + profile)


if __name__ == "__main__":
    main()
