"""Soak: sustained replay at a fixed rate into a real ``goldwatch serve`` (every stage on).

A Tansu broker (``tests/kafka_broker.py``) carries a 4-partition topic; one ``goldwatch serve``
subprocess (``tests/acceptance/service_process.py``) consumes it with the default analytics
(PII, language, topic, refusal, out-of-scope, drift, live quality, harvest ...). A producer
*process* sends events at ``--rate`` events/s, each stamped with the wall clock when it is
sent. ``--kind production`` (the default) sends the production-shaped events of
``benchmarks/bench_production.py`` (the real multilingual question mix, 10 retrieved passages
with scores and doc types, answers with citations, feedback on some, 3 % duplicate
deliveries) and gives serve that benchmark's gold set and corpus, so live quality and
harvesting run as they do for a user; ``--kind query-log`` sends the older
``benchmarks/streams.py`` query-log events cycled from a pool of 20,000, without a gold set
(no live quality, no harvest: the favourable figure). A sampler thread scrapes ``/metrics``
every ``--scrape-s`` seconds over one kept-alive HTTP connection, as Prometheus does, and
reads the process's RSS from ``/proc``:

* end-to-end latency: when a scrape sees ``goldwatch_last_event_timestamp_seconds`` advance to
  ``T``, ``scrape time - T`` is one sample (event timestamp -> metrics updated; includes up to
  one scrape interval);
* ``/metrics`` response time of every scrape (request sent -> body read), how many took over
  100 ms (the issue's bound), and the number of series (sample lines) and bytes of the last
  scrape;
* RSS over time, and at the end of each tenth of the run (``rss_tenths_mb``) and of each
  tenth of the events processed (``rss_event_tenths_mb``, counted by
  ``goldwatch_events_processed_total`` in the scrapes: serve behind the producer on a loaded
  machine goes at a varying pace, so a tenth of the time is not a tenth of the events), with
  the growth from the end of the first tenth of the events to the end; growth = mean RSS of
  the last tenth of the run over that of the first tenth.
  Also RSS at the end of the first tenth against RSS at the end (issue 10's "RSS after 1M /
  after 100k"): the first tenth includes the warm-up, while the bounded structures (per-
  question caches, dedup window, harvested suggestions) fill, so this one isolates growth
  after it.

The measuring side must not be what is measured: a new ``httpx`` client per scrape loads the
CA bundle (20-40 ms of CPU with the GIL held), and a producer thread in the sampler's process
(pure-Python Kafka client, about half a core at 2,000 events/s) delays the sampler's wake-ups.
Hence the one connection and the separate producer process.

At the end every produced message must be accounted for (processed + dead-lettered +
duplicates). Prints a table (``--json`` for machine-readable output).

Run: ``python -m benchmarks.soak --events 1000000 --rate 2000`` (about 8.5 minutes);
``python -m benchmarks.soak --events 60000 --rate 2000`` for a short run.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import random
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from benchmarks.streams import encode, query_log_events
from tests.acceptance.conftest import FAST_KAFKA
from tests.acceptance.service_process import ServiceProcess, accounted
from tests.kafka_broker import TansuBroker

PARTITIONS = 4
POOL = 20_000  # distinct events cycled through (ids stay unique)
KINDS = ("production", "query-log")


@dataclass
class Samples:
    """What the sampler saw."""

    latency_s: list[float] = field(default_factory=list)
    scrape_s: list[float] = field(default_factory=list)
    rss: list[tuple[float, int]] = field(default_factory=list)  # (seconds since start, bytes)
    #: (events processed, RSS bytes) at each RSS sample: a tenth of the events, not of the
    #: time (serve behind the producer on a loaded machine goes at a varying pace)
    rss_by_events: list[tuple[float, int]] = field(default_factory=list)
    processed: float = 0.0  # goldwatch_events_processed_total in the last scrape
    errors: int = 0
    series: int = 0  # sample lines in the last scrape
    size: int = 0  # bytes of the last scrape
    last_seen: float = 0.0  # newest goldwatch_last_event_timestamp_seconds seen


def _rss_bytes(pid: int) -> int:
    """Resident set size of ``pid`` from ``/proc/<pid>/status`` (0 when gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _messages(events: int, kind: str) -> Iterator[bytes]:
    """The ``events`` messages of ``kind`` (:data:`KINDS`), lazily; each new event stamped
    with a unique id and the wall clock when it is made (just before it is sent)."""
    if kind == "query-log":
        pool = query_log_events(min(POOL, events), seed=91)
        for i in range(events):
            event = dict(pool[i % len(pool)])
            event["event_id"] = f"soak-{i}"
            event["timestamp"] = datetime.now(UTC).isoformat(timespec="milliseconds")
            yield encode(event)
        return
    from benchmarks import bench_production as prod

    rng = random.Random("soak-production")
    pools, corpus = prod._pools(prod.SHARED_DATA), prod._corpus(prod.SHARED_DATA)
    by_id = {row["id"]: row for row in corpus}
    recent: list[bytes] = []  # the last 50 sent, for duplicate deliveries
    made = 0
    for _ in range(events):
        if recent and rng.random() < prod.DUPLICATE_SHARE:  # a retried delivery: same bytes
            yield recent[-1 - min(int(rng.expovariate(0.1)), len(recent) - 1)]
            continue
        event = prod._event(made, rng, pools, corpus, by_id)
        event["event_id"] = f"soak-{made}"
        event["timestamp"] = datetime.now(UTC).isoformat(timespec="milliseconds")
        made += 1
        value = encode(event)
        recent = [*recent[-49:], value]
        yield value


def _produce(
    bootstrap_servers: str, topic: str, events: int, rate: float, ready: Any, go: Any,
    kind: str = "production",
) -> None:  # fmt: skip
    """Send ``events`` messages of ``kind`` at ``rate``/s, each new event stamped with the
    send time (run in its own process: see the module docstring). Sets ``ready`` once
    connected, starts on ``go`` (both ``multiprocessing`` events)."""
    from kafka import KafkaProducer

    messages = _messages(events, kind)
    producer = KafkaProducer(bootstrap_servers=bootstrap_servers, linger_ms=5, acks=1)
    ready.set()
    go.wait()
    started = time.monotonic()
    try:
        for i in range(events):
            due = started + i / rate
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            producer.send(topic, value=next(messages), partition=i % PARTITIONS)
        producer.flush(timeout=60)
    finally:
        producer.close()


def _last_event_s(text: str) -> float:
    """Sum of the ``goldwatch_last_event_timestamp_seconds`` samples of an exposition (a
    line scan: a full parse would cost the sampler more CPU than the scrape it measures)."""
    return _metric_sum(text, "goldwatch_last_event_timestamp_seconds")


def _metric_sum(text: str, prefix: str) -> float:
    """Sum of the samples of metric ``prefix`` in an exposition (a line scan, as above)."""
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith(prefix) and line[len(prefix)] in " {"
    )


def _sample(service: ServiceProcess, every_s: float, stop: threading.Event, out: Samples) -> None:
    """Scrape every ``every_s`` seconds over one kept-alive connection until ``stop``."""
    started = time.monotonic()
    next_rss = 0.0
    with httpx.Client(base_url=service.base_url, timeout=10) as client:
        while not stop.is_set():
            took = _scrape(client, out)
            elapsed = time.monotonic() - started
            if elapsed >= next_rss:
                out.rss.append((elapsed, _rss_bytes(service.process.pid)))
                out.rss_by_events.append((out.processed, out.rss[-1][1]))
                next_rss = elapsed + 1.0
            stop.wait(max(0.0, every_s - (took or 0.0)))


def _scrape(client: httpx.Client, out: Samples) -> float | None:
    """One scrape into ``out``; returns its duration in seconds (``None``: it failed)."""
    before = time.perf_counter()
    try:
        response = client.get("/metrics")
        text = response.text
    except httpx.HTTPError:
        out.errors += 1
        return None
    took = time.perf_counter() - before
    now = time.time()
    if response.status_code != 200:
        out.errors += 1
        return took
    out.scrape_s.append(took)
    out.size = len(response.content)
    out.series = sum(1 for line in text.splitlines() if line and not line.startswith("#"))
    out.processed = _metric_sum(text, "goldwatch_events_processed_total")
    newest = _last_event_s(text)
    if newest > out.last_seen:
        if out.last_seen:
            out.latency_s.append(now - newest)
        out.last_seen = newest
    return took


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def soak(events: int, rate: float, scrape_s: float = 0.25, kind: str = "production"
         ) -> dict[str, Any]:  # fmt: skip
    """Run the soak with events of ``kind`` (:data:`KINDS`) and return its figures (see the
    module docstring).

    Raises:
        ValueError: an unknown ``kind``.
        RuntimeError: the producer or serve failed.
    """
    if kind not in KINDS:
        raise ValueError(f"kind must be one of {KINDS}, got {kind!r}")
    broker = TansuBroker.start()
    workdir = Path(tempfile.mkdtemp(prefix="goldwatch-soak-"))
    topic = f"soak-{uuid.uuid4().hex[:8]}"
    service: ServiceProcess | None = None
    try:
        broker.create_topic(topic, PARTITIONS)
        config = {
            "source": {"kind": "kafka"},
            "kafka": {
                "bootstrap_servers": broker.bootstrap_servers,
                "topic": topic,
                "consumer_group": f"soak-{uuid.uuid4().hex[:8]}",
                **FAST_KAFKA,
            },
            "pipeline": {"max_batch_size": 500, "max_batch_wait_ms": 100, "commit_interval_s": 1},
            "state": {"path": str(workdir / "state.sqlite")},
        }
        if kind == "production":
            from benchmarks.bench_production import write_gold_and_corpus

            gold, corpus = write_gold_and_corpus(workdir)
            config.update(gold_set=str(gold), corpus=str(corpus))
        service = ServiceProcess.start(workdir, config)
        service.wait_until(lambda s: s["ready"], timeout_s=60, what="ready")
        samples, stop = Samples(), threading.Event()
        # a daemon: when the soak fails (not every event accounted in time) nothing stops it,
        # and it must not keep the failed soak's process alive
        sampler = threading.Thread(
            target=_sample, args=(service, scrape_s, stop, samples), daemon=True
        )
        spawn = multiprocessing.get_context("spawn")
        ready, go = spawn.Event(), spawn.Event()
        producer = spawn.Process(
            target=_produce,
            args=(broker.bootstrap_servers, topic, events, rate, ready, go, kind),
        )
        producer.start()
        if not ready.wait(120):
            raise RuntimeError("the producer process did not connect")
        started = time.monotonic()
        go.set()
        sampler.start()
        producer.join()
        produce_s = time.monotonic() - started
        if producer.exitcode != 0:
            raise RuntimeError(f"the producer process exited with {producer.exitcode}")
        status = service.wait_until(
            lambda s: accounted(s["totals"]) + s["totals"]["duplicates"] >= events,
            # serve may fall behind the rate on a loaded machine: its backlog waits in the
            # topic, and the soak waits for it (up to twice the producing time more)
            timeout_s=max(120.0, 2 * events / rate),
            what="every event accounted",
            interval_s=0.5,
        )
        seconds = time.monotonic() - started
        stop.set()
        sampler.join()
    finally:
        if service is not None:
            service.terminate()
        broker.stop()
    tenth = max(1, len(samples.rss) // 10)
    first = statistics.fmean(r for _, r in samples.rss[:tenth]) if samples.rss else 0.0
    last = statistics.fmean(r for _, r in samples.rss[-tenth:]) if samples.rss else 0.0
    totals = status["totals"]
    end_of_first = samples.rss[tenth - 1][1] if samples.rss else 0
    end = samples.rss[-1][1] if samples.rss else 0
    run_s = samples.rss[-1][0] if samples.rss else 0.0
    tenths = [next((r for t, r in samples.rss if t >= run_s * k / 10), end) for k in range(1, 11)]
    done = samples.rss_by_events[-1][0] if samples.rss_by_events else 0.0
    by_events = [next((r for n, r in samples.rss_by_events if n >= done * k / 10), end)
                 for k in range(1, 11)]  # fmt: skip
    return {
        "kind": kind,
        "events": events,
        "rate_target": rate,
        "rate_achieved": round(events / seconds, 1),
        "seconds": round(seconds, 1),
        "produce_seconds": round(produce_s, 1),
        "accounted": accounted(totals) + totals["duplicates"],
        "processed": totals["processed"],
        "dead_lettered": sum(totals["dead_lettered"].values()),
        "latency_p50_s": round(_pct(samples.latency_s, 0.5), 3),
        "latency_p99_s": round(_pct(samples.latency_s, 0.99), 3),
        "latency_max_s": round(max(samples.latency_s, default=float("nan")), 3),
        "metrics_p50_ms": round(_pct(samples.scrape_s, 0.5) * 1000, 1),
        "metrics_p99_ms": round(_pct(samples.scrape_s, 0.99) * 1000, 1),
        "metrics_max_ms": round(max(samples.scrape_s, default=float("nan")) * 1000, 1),
        "metrics_scrapes": len(samples.scrape_s),
        "metrics_over_100ms": sum(1 for took in samples.scrape_s if took > 0.1),
        "metrics_series": samples.series,
        "metrics_bytes": samples.size,
        "rss_first_tenth_mb": round(first / 2**20, 1),
        "rss_last_tenth_mb": round(last / 2**20, 1),
        "rss_growth_pct": round(100 * (last - first) / first, 2) if first else float("nan"),
        "rss_end_first_tenth_mb": round(end_of_first / 2**20, 1),
        "rss_end_mb": round(end / 2**20, 1),
        "rss_growth_after_first_tenth_pct": (
            round(100 * (end - end_of_first) / end_of_first, 2) if end_of_first else float("nan")
        ),
        "rss_tenths_mb": [round(r / 2**20, 1) for r in tenths],
        "rss_event_tenths_mb": [round(r / 2**20, 1) for r in by_events],
        "rss_growth_after_first_event_tenth_pct": (
            round(100 * (by_events[-1] - by_events[0]) / by_events[0], 2)
            if by_events[0]
            else float("nan")
        ),
        "rss_series_mb": [round(r / 2**20, 1) for _, r in samples.rss[:: max(1, tenth)]],
        "scrape_errors": samples.errors,
    }


def _table(result: dict[str, Any]) -> str:
    rows = [
        ("events (target rate /s)",
         f"{result['events']:,} {result['kind']} ({result['rate_target']:g})"),
        ("achieved rate /s, seconds",
         f"{result['rate_achieved']:,} in {result['seconds']} s"
         f" (producer done at {result['produce_seconds']} s)"),
        ("accounted / processed / dead",
         f"{result['accounted']:,} / {result['processed']:,} / {result['dead_lettered']:,}"),
        ("latency p50 / p99 / max (s)",
         f"{result['latency_p50_s']} / {result['latency_p99_s']} / {result['latency_max_s']}"),
        ("/metrics p50 / p99 / max (ms)",
         f"{result['metrics_p50_ms']} / {result['metrics_p99_ms']} / {result['metrics_max_ms']}"
         f" ({result['metrics_scrapes']} scrapes, {result['metrics_over_100ms']} over 100 ms)"),
        ("/metrics series, bytes", f"{result['metrics_series']:,}, {result['metrics_bytes']:,}"),
        ("RSS first / last tenth (MB)",
         f"{result['rss_first_tenth_mb']} / {result['rss_last_tenth_mb']}"
         f" ({result['rss_growth_pct']:+} %)"),
        ("RSS end of first tenth / end (MB)",
         f"{result['rss_end_first_tenth_mb']} / {result['rss_end_mb']}"
         f" ({result['rss_growth_after_first_tenth_pct']:+} %)"),
        ("RSS at each tenth of the time (MB)", " ".join(str(x) for x in result["rss_tenths_mb"])),
        ("RSS at each tenth of the events (MB)",
         " ".join(str(x) for x in result["rss_event_tenths_mb"])
         + f" ({result['rss_growth_after_first_event_tenth_pct']:+} % after the first)"),
        ("RSS over time (MB)", " ".join(str(x) for x in result["rss_series_mb"])),
    ]  # fmt: skip
    width = max(len(k) for k, _ in rows)
    return "\n".join(f"{k:<{width}}  {v}" for k, v in rows)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m benchmarks.soak --events N --rate R``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=60_000)
    parser.add_argument("--rate", type=float, default=2_000.0)
    parser.add_argument("--scrape-s", type=float, default=0.25)
    parser.add_argument("--kind", choices=KINDS, default="production",
                        help="events sent (see the module docstring)")  # fmt: skip
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args(argv)
    result = soak(args.events, args.rate, args.scrape_s, args.kind)
    print(json.dumps(result, indent=2) if args.json else _table(result))
    return 0 if result["accounted"] == args.events else 1


if __name__ == "__main__":
    raise SystemExit(main())
