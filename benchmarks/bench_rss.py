"""Memory over a long replay: RSS after 100,000 events vs after 1,000,000 (target ≤ 1.05).

A child process (``--child``) replays a generated stream through the live poll loop
(``consumers.loop.run`` with an :class:`~consumers.engine.Engine`, SQLite state,
checkpoints every second) and reads its own ``VmRSS`` from ``/proc/self/status`` after each
batch once every ``--sample-every`` events; it prints one JSON line per sample. The parent
starts the child, collects the samples and compares RSS at the 100,000th event with RSS at
the last one.

The stream is generated in memory, never written to disk: 5,000 realistic events
(``benchmarks.streams.query_log_events``: NQ-open and CLINC150 questions, retrieval results,
answers) re-encoded with a unique ``event_id`` and an event time 100 ms after the previous
one, so the dedup window, the language cache, the drift windows and the harvest fill up
and must stay bounded.

``--stages``: ``pipeline`` (dedup + count, no analytics), ``live`` (the live stages of the
demo configuration minus shadow, as ``service.runtime.live.build_live`` builds them: PII,
language, topic, refusal, scope, drift, quality, harvest).

Run: ``python -m benchmarks.bench_rss [--events 1000000] [--stages pipeline]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from consumers.base import DeadLetter, Origin, RawMessage

DEFAULT_EVENTS = 1_000_000
BASELINE_EVENTS = 100_000
TARGET_RATIO = 1.05
TEMPLATES = 5_000
START_MS = 1_795_939_200_000  # 2026-11-29T08:00:00Z
GAP_MS = 100


def rss_bytes() -> int:
    """This process's resident set size, from ``/proc/self/status`` (``VmRSS``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def templates(n: int = TEMPLATES) -> list[bytes]:
    """``n`` encoded events with ``%(id)d`` and ``%(ts)d`` slots for the id and event time."""
    from benchmarks.streams import encode, query_log_events

    out = []
    for event in query_log_events(n, seed=11):
        event["event_id"], event["timestamp"] = "@ID@", 0
        raw = encode(event).replace(b"%", b"%%")
        raw = raw.replace(b'"@ID@"', b'"r-%(id)d"').replace(b'"timestamp":0', b'"timestamp":%(ts)d')
        out.append(raw)
    return out


class GeneratedSource:
    """A :class:`~consumers.base.Source` handing out ``n`` generated events, then end of input."""

    name = "generated"

    def __init__(self, n: int) -> None:
        self.n = n
        self.sent = 0
        self._templates = templates()

    def messages(self, count: int) -> Iterator[RawMessage]:
        """The next ``count`` messages (fewer at the end)."""
        pool, size = self._templates, len(self._templates)
        for i in range(self.sent, min(self.n, self.sent + count)):
            value = pool[i % size] % {b"id": i, b"ts": START_MS + GAP_MS * i}
            yield RawMessage(value, Origin(file="generated", line=i + 1))

    def poll(self, max_records: int, timeout_ms: int) -> list[RawMessage]:
        """Up to ``max_records`` messages; an empty list at end of input."""
        batch = list(self.messages(max_records))
        self.sent += len(batch)
        return batch

    def dead_letter(self, letters: Sequence[DeadLetter]) -> None:
        """A clean stream has none; count them as a failure of the benchmark."""
        if letters:
            raise RuntimeError(f"{len(letters)} dead letters: {letters[0].reason}")

    def commit(self, messages: Sequence[RawMessage], force: bool = False) -> None:
        """Nothing to commit."""

    def status(self) -> dict[str, Any]:
        """Events handed out so far."""
        return {"sent": self.sent}

    def ready(self) -> bool:
        """Always ready."""
        return True

    def mark_failed(self) -> None:
        """Nothing to mark."""

    def close(self) -> None:
        """Nothing to close."""


def child(events: int, stages: str, sample_every: int, workdir: Path) -> None:
    """Replay ``events`` generated events; print ``{"events", "rss", "s"}`` JSON lines."""
    from prometheus_client import CollectorRegistry

    from consumers.engine import Engine
    from consumers.loop import make_decoder
    from consumers.loop import run as run_loop
    from service.demo import demo_data, demo_path
    from service.runtime.live import build_live
    from service.settings import load_settings
    from service.state import StateStore
    from service.telemetry import build_metrics

    pipeline = {"max_batch_size": 500, "max_batch_wait_ms": 0, "commit_interval_s": 1.0}
    overrides: dict[str, Any] = {"pipeline": pipeline, "shadow": {"candidates": []}}
    if stages == "pipeline":
        overrides["analytics"] = {"enabled": False}
    settings = load_settings(demo_path("goldwatch.yaml"), **demo_data(), **overrides)
    registry = CollectorRegistry()
    state = StateStore.open(workdir / "rss.sqlite")
    # the state to build_live, as serve: harvest's records go there and its checkpoints
    # sweep the evicted ones (without it they pile up in memory, which serve never does)
    live = build_live(settings, registry, state)
    source = GeneratedSource(events)
    started = time.perf_counter()
    next_sample = [sample_every]

    def observe(batch: Any) -> None:
        live.observe(batch)
        if source.sent >= next_sample[0] or source.sent >= events:
            seconds = time.perf_counter() - started
            print(json.dumps({"events": source.sent, "rss": rss_bytes(), "s": seconds}),
                  flush=True)  # fmt: skip
            next_sample[0] += sample_every

    print(json.dumps({"events": 0, "rss": rss_bytes(), "s": 0.0}), flush=True)
    decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes)
    engine = Engine(live.pipeline, state, build_metrics(registry), decoder, on_batch=observe)
    run_loop(source, live.pipeline, state, engine.metrics, threading.Event(),
             config=settings.pipeline, until_eof=True, engine=engine)  # fmt: skip
    state.close()


@dataclass(frozen=True)
class Result:
    """RSS samples of one run: ``(events, rss bytes, seconds)``, and the two compared."""

    samples: list[tuple[int, int, float]]
    baseline_events: int

    def at(self, events: int) -> tuple[int, int, float]:
        """The first sample taken at or after ``events``."""
        return next(s for s in self.samples if s[0] >= events)

    @property
    def baseline(self) -> int:
        """RSS (bytes) after :attr:`baseline_events` events."""
        return self.at(self.baseline_events)[1]

    @property
    def final(self) -> int:
        """RSS (bytes) after the last event."""
        return self.samples[-1][1]

    @property
    def events(self) -> int:
        """Events replayed."""
        return self.samples[-1][0]

    @property
    def ratio(self) -> float:
        """Final RSS / RSS after the baseline events."""
        return self.final / self.baseline

    @property
    def rate(self) -> float:
        """Events per second over the whole replay."""
        return self.events / self.samples[-1][2] if self.samples[-1][2] else 0.0


def run(events: int = DEFAULT_EVENTS, stages: str = "pipeline",
        baseline_events: int = BASELINE_EVENTS, sample_every: int = 50_000,
        timeout_s: float = 1800) -> Result:  # fmt: skip
    """Run the child; return its samples (``baseline_events`` is capped at ``events``)."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-rss-") as tmp:
        command = [sys.executable, "-m", "benchmarks.bench_rss", "--child", "--events",
                   str(events), "--stages", stages, "--sample-every", str(sample_every),
                   "--workdir", tmp]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s,
                              cwd=Path(__file__).resolve().parents[1])  # fmt: skip
        if done.returncode != 0:
            raise RuntimeError(f"bench_rss child failed: {done.stderr[-2000:]}")
    samples = []
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            samples.append((int(row["events"]), int(row["rss"]), float(row["s"])))
    return Result(samples, min(baseline_events, events))


def main(argv: Sequence[str] | None = None) -> None:
    """Print the RSS curve and the ratio against the target."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--baseline-events", type=int, default=BASELINE_EVENTS)
    parser.add_argument("--stages", choices=("pipeline", "live"), default="pipeline")
    parser.add_argument("--sample-every", type=int, default=50_000)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args.events, args.stages, args.sample_every, args.workdir)
        return
    result = run(args.events, args.stages, args.baseline_events, args.sample_every)
    for events, rss, seconds in result.samples:
        print(f"{events:>9,} events {rss / 2**20:8.1f} MiB {seconds:7.1f} s")
    verdict = "met" if result.ratio <= TARGET_RATIO else "NOT met"
    print(f"RSS after {result.events:,} / after {result.baseline_events:,} = {result.ratio:.3f}"
          f" (target <= {TARGET_RATIO}): {verdict}; {result.rate:,.0f} events/s")  # fmt: skip


if __name__ == "__main__":
    main()
