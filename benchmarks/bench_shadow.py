"""Shadow evaluation: live-path cost, shadow throughput, and agreement on XQuAD.

Live traffic: the XQuAD questions in its 12 languages, interleaved (seeded shuffle), as
schema-v1 events. Production = goldwatch's BM25 over the 240 English paragraphs: each event
carries its top 10 (ids, scores, ranks). The answer cites the gold paragraph when production
retrieved it in its top 10 (an answer can only cite what it was given), else nothing — so
citation recall = the share of production's correct citations the candidate also finds.
Annotations: ``language`` = the XQuAD language, ``topic`` = the article title. Questions
that share no token with any English paragraph get no production results (many in non-Latin
scripts) and are skipped as ``no_production``.

Throughput, the process pinned to one CPU core, batches of 500. The live path is a stand-in
for the analytics stages at their 10,000 events/s target (``--burn-us``, default 100 µs of
pure-Python CPU per event) followed by ``ShadowStage.process``:

* (a) no candidates — the baseline;
* (a') one in-process candidate that answers at once — the cost of in-process shadow work
  (agreement maths, results) sharing the GIL;
* (c) HTTP candidates served by another process: one that hangs, one that fails 30 % of
  requests with HTTP 500 (unlimited, ``max_rps`` 50 and 20), and both together;
* rows "default CPU budget": the same with ``shadow.max_cpu_share`` at its default (0.05
  core-seconds per second for all shadow calls); the other rows turn the budget off to show
  the raw cost;
* (b) the built-in BM25 as candidate, 100 % sampled, a queue holding all the traffic, no
  stand-in: completed shadow calls per second (target ≥ 2,000 on one core).

``live cost`` is the share of the live path's time the candidates take: (time in the stage
beyond (a) + CPU of the process's other threads) / live time per event of (a). Wall-clock
ratios (``vs (a)``) are shown too but are noisy on a shared machine; each live row is the
median of 5 round-robin runs.

Agreement: TF-IDF and hybrid (RRF of BM25 + TF-IDF) as candidates against production BM25,
overlap@10, RBO_ext (p = 0.9), Kendall's τ, top-1 and citation recall, overall and per
language.

Run: ``python -m benchmarks.bench_shadow [--per-language 400] [--passes 2] [--burn-us 100]``.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from benchmarks.datasets import XQUAD_LANGUAGES, load_xquad
from service.evaluation.report import table
from service.events import QueryLogEvent
from service.pipeline import Batch
from service.records import ScoredDoc
from service.retrievers.base import Retriever
from service.retrievers.bm25 import BM25Retriever
from service.retrievers.http import HttpRetriever
from service.retrievers.hybrid import HybridRetriever
from service.retrievers.tfidf import TfidfRetriever
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
from service.shadow.stage import ShadowStage

BATCH = 500
K = 10
TARGET_SHADOW_RATE = 2_000
#: A retriever server in another process: ``hang`` never answers, ``flaky`` answers 500 to
#: 3 requests in 10. Prints its port on stdout.
SERVER = r"""
import json, sys, time, itertools
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
mode, count = sys.argv[1], itertools.count()
class H(BaseHTTPRequestHandler):
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        if mode == "hang":
            time.sleep(3600)
        failed = next(count) % 10 < 3
        body = b'{"error": 1}' if failed else json.dumps(
            {"results": [{"id": f"d{i}", "score": 10 - i} for i in range(10)]}).encode()
        self.send_response(500 if failed else 200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    def log_message(self, *args):
        pass
server = ThreadingHTTPServer(("127.0.0.1", 0), H)
server.daemon_threads = True
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@dataclass
class Traffic:
    """Events and their annotations, in arrival order."""

    events: list[QueryLogEvent]
    notes: list[dict[str, Any]]


def build_traffic(bm25: Retriever, per_language: int, seed: int = 0) -> Traffic:
    """Return the XQuAD questions of every language as events answered by ``bm25``."""
    rows: list[tuple[QueryLogEvent, dict[str, Any]]] = []
    for lang in XQUAD_LANGUAGES:
        questions = load_xquad(lang)[1][:per_language]
        ranked = bm25.search_batch([text for _, text, _ in questions], K)
        for (qid, text, gold), docs in zip(questions, ranked, strict=True):
            ids = [doc.doc_id for doc in docs]
            event = QueryLogEvent.model_validate({
                "event_id": f"{lang}-{qid}", "timestamp": 1_795_946_400 + len(rows),
                "question": text, "channel": "web", "user": {"role": "student"},
                "retrieval": {"retriever": "bm25", "results": [
                    {"id": doc.doc_id, "score": doc.score, "rank": rank}
                    for rank, doc in enumerate(docs, 1)]},
                "answer": {"text": "...", "citations": [gold] if gold in ids else []},
            })  # fmt: skip
            rows.append((event, {"language": lang, "topic": gold.split("#")[0]}))
    random.Random(seed).shuffle(rows)
    return Traffic([event for event, _ in rows], [notes for _, notes in rows])


def batches(traffic: Traffic, passes: int) -> list[Batch]:
    """Batches of :data:`BATCH` events with fresh annotation dicts, ``passes`` times over."""
    out = []
    for _ in range(passes):
        for i in range(0, len(traffic.events), BATCH):
            notes = [dict(n) for n in traffic.notes[i : i + BATCH]]
            out.append(Batch("bench", traffic.events[i : i + BATCH], notes))
    return out


class Instant:
    """An in-process candidate that answers at once with a fixed ranking."""

    name = "instant"

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        return [ScoredDoc(f"d{i}", 1.0 / (i + 1)) for i in range(k)]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        return [self.search(q, k) for q in questions]


def settle(stage: ShadowStage, wait_s: float) -> None:
    """Collect results until every queued call has finished, or ``wait_s`` seconds."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        stage.collect()
        report = stage.report()["candidates"]
        if all(r["completed"] + sum(r["errors"].values()) >= r["queued"] for r in report.values()):
            return
        time.sleep(0.01)


class Burn:
    """Stand-in for the rest of the live path: ``us`` microseconds of pure-Python CPU per
    event (the analytics stages at their 10,000 events/s target spend ~100 µs per event).
    Bytecode that holds the GIL is the worst case for sharing a core with shadow threads."""

    name = "burn"

    def __init__(self, us: float) -> None:
        self.loops = 0
        if us > 0:
            probe = 200_000
            started = time.perf_counter()
            for _ in range(probe):
                pass
            self.loops = int(probe * us * 1e-6 / (time.perf_counter() - started))

    def process(self, batch: Batch) -> None:
        for _ in batch.events:
            for _ in range(self.loops):
                pass


#: The shadow section's default CPU budget (core-seconds per second for all shadow calls).
DEFAULT_CPU = ShadowConfig().max_cpu_share


def scenario(
    what: str,
    candidates: Sequence[CandidateConfig],
    retrievers: Mapping[str, Retriever],
    work: list[Batch],
    burn: Burn,
    wait_s: float = 0.0,
    cpu_share: float | None = None,
) -> dict[str, Any]:
    """Run ``burn`` + the shadow stage over ``work``; then wait up to ``wait_s`` for calls.

    Measures, per event: the live path's wall time, the main thread's time inside
    ``ShadowStage.process``, and the CPU the other threads of the process used meanwhile
    (``process_time - thread_time``: shadow workers, HTTP clients, watchdog) — on one core
    that CPU is taken from the live path.
    """
    config = ShadowConfig(candidates=tuple(candidates), max_cpu_share=cpu_share)
    runner = ShadowRunner(config, retrievers)
    stage = ShadowStage(runner)
    in_stage = 0.0
    cpu, main_cpu = time.process_time(), time.thread_time()
    started = time.perf_counter()
    for batch in work:
        burn.process(batch)
        before = time.perf_counter()
        stage.process(batch)
        in_stage += time.perf_counter() - before
    live_s = time.perf_counter() - started
    background = (time.process_time() - cpu) - (time.thread_time() - main_cpu)
    settle(stage, wait_s)
    shadow_s = time.perf_counter() - started
    stage.collect()
    report = stage.report()["candidates"]
    runner.close(timeout=1.0)
    skipped: Counter[str] = Counter()
    errors: Counter[str] = Counter()
    for r in report.values():
        skipped.update(r["skipped"])
        errors.update(r["errors"])
    events = sum(len(b) for b in work)
    completed = sum(r["completed"] for r in report.values())
    return {
        "scenario": what,
        "events": events,
        "live events/s": events / live_s,
        "stage µs/event": 1e6 * in_stage / events,
        "background µs/event": 1e6 * max(0.0, background) / events,
        "shadow completed/s": round(completed / shadow_s) if wait_s else "-",
        "completed": completed,
        "skipped": ", ".join(f"{k} {v}" for k, v in skipped.most_common()) or "-",
        "errors": ", ".join(f"{k} {v}" for k, v in errors.most_common()) or "-",
    }


def median_row(runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The median of each timing column over ``runs``; other columns from the median run."""
    row = dict(sorted(runs, key=lambda r: r["live events/s"])[len(runs) // 2])
    for column in ("live events/s", "stage µs/event", "background µs/event"):
        row[column] = statistics.median(r[column] for r in runs)
    return row


def start_server(mode: str) -> tuple[subprocess.Popen[str], str]:
    """Start :data:`SERVER` in another process; return it and its URL."""
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER, mode], stdout=subprocess.PIPE, text=True
    )
    port = int((process.stdout.readline() if process.stdout else "").strip())
    return process, f"http://127.0.0.1:{port}/search"


def throughput(
    traffic: Traffic, bm25: Retriever, passes: int, burn_us: float, repeats: int = 5
) -> list[dict[str, Any]]:
    """Rows (a), (a'), (c) (medians of ``repeats`` runs) and (b) of the module docstring.

    ``live cost`` = (stage µs - stage µs of (a) + background µs) / live µs per event of (a):
    the share of the live path's time that the candidates take, computed from CPU and
    in-stage time rather than from the wall-clock ratio, which a shared machine makes noisy.
    """
    hang, hang_url = start_server("hang")
    flaky, flaky_url = start_server("flaky")
    try:
        if hasattr(os, "sched_setaffinity"):
            os.sched_setaffinity(0, {min(os.sched_getaffinity(0))})  # one core from here on
        burn = Burn(burn_us)
        http = {
            "hang": HttpRetriever(hang_url, name="hang", timeout_s=1.0, retries=0),
            "flaky": HttpRetriever(flaky_url, name="flaky", timeout_s=1.0, retries=0),
        }
        hang_c = CandidateConfig(name="hang", timeout_s=2.0)
        flaky_c = CandidateConfig(name="flaky", timeout_s=2.0)
        rps50 = flaky_c.model_copy(update={"max_rps": 50.0, "burst": 5.0})
        rps20 = flaky_c.model_copy(update={"max_rps": 20.0, "burst": 5.0})
        specs = [
            ("(a) no candidates", [], {}, None),
            ("(a') instant in-process candidate", [CandidateConfig(name="i")], {"i": Instant()},
             None),
            ("(a') instant, default CPU budget 0.05", [CandidateConfig(name="i")],
             {"i": Instant()}, DEFAULT_CPU),
            ("(c) http: hangs", [hang_c], http, None),
            ("(c) http: fails 30 %", [flaky_c], http, None),
            ("(c) http: fails 30 %, default CPU budget 0.05", [flaky_c], http, DEFAULT_CPU),
            ("(c) http: fails 30 %, max_rps 50", [rps50], http, None),
            ("(c) http: fails 30 %, max_rps 20", [rps20], http, None),
            ("(c) http: hangs + fails 30 %, default CPU budget", [hang_c, flaky_c], http,
             DEFAULT_CPU),
        ]  # fmt: skip
        scenario("warm-up", [], {}, batches(traffic, 1), burn)
        runs: dict[str, list[dict[str, Any]]] = {what: [] for what, _, _, _ in specs}
        for _ in range(repeats):  # round-robin, so machine noise hits every row alike
            for what, candidates, retrievers, share in specs:
                work = batches(traffic, passes)
                runs[what].append(scenario(what, candidates, retrievers, work, burn,
                                           cpu_share=share))  # fmt: skip
        rows = [median_row(r) for r in runs.values()]
        bm25_c = CandidateConfig(name="bm25", k=K, queue_size=len(traffic.events), timeout_s=30)
        rows.append(scenario("(b) bm25 candidate, 100 % sampled, no stand-in", [bm25_c],
                             {"bm25": bm25}, batches(traffic, 1), Burn(0), wait_s=300))  # fmt: skip
        for retriever in http.values():
            retriever.close()
    finally:
        for process in (hang, flaky):
            process.kill()
            process.wait()
    base = rows[0]
    base_us = 1e6 / base["live events/s"]
    for row in rows:
        live = row is not rows[-1]
        row["vs (a)"] = round(row["live events/s"] / base["live events/s"], 3) if live else "-"
        extra = row["stage µs/event"] - base["stage µs/event"] + row["background µs/event"]
        row["live cost"] = f"{extra / base_us:.1%}" if live else "-"
    return rows


def agreement(traffic: Traffic, bm25: BM25Retriever, passages: Any) -> dict[str, Any]:
    """Run TF-IDF and hybrid as candidates on the whole traffic; return the stage report."""
    tfidf = TfidfRetriever(passages)
    hybrid = HybridRetriever([bm25, tfidf], name="hybrid")
    big = len(traffic.events) + 1
    candidates = tuple(
        CandidateConfig(name=name, k=K, queue_size=big, timeout_s=60)
        for name in ("tfidf", "hybrid")
    )
    config = ShadowConfig(candidates=candidates, max_label_values=len(XQUAD_LANGUAGES) + 50)
    runner = ShadowRunner(config, {"tfidf": tfidf, "hybrid": hybrid})
    stage = ShadowStage(runner)
    for batch in batches(traffic, 1):
        stage.process(batch)
    settle(stage, 600.0)
    runner.close()
    return stage.report()


MEASURES = ("overlap", "rbo", "kendall_tau", "top1", "citation_recall")


def agreement_rows(report: Mapping[str, Any]) -> tuple[list[list[Any]], list[list[Any]]]:
    """(overall rows, per-language rows) of the agreement tables."""
    overall, per_language = [], []
    cands = report["candidates"]
    for name, data in cands.items():
        means = data["agreement"]
        overall.append([name, data["counts"]["rbo"], *(means[m] for m in MEASURES)])
    for lang in XQUAD_LANGUAGES:
        row: list[Any] = [lang]
        for data in cands.values():
            cell = data["by_language"].get(lang, {})
            row += [cell.get("overlap"), cell.get("rbo"), cell.get("citation_recall")]
        per_language.append(row)
    return overall, per_language


def run(per_language: int = 400, passes: int = 2, burn_us: float = 100.0) -> dict[str, Any]:
    """Build the traffic, run both parts; return ``{"throughput": rows, "agreement": report}``."""
    passages, _ = load_xquad("en")
    bm25 = BM25Retriever(passages, name="bm25")
    traffic = build_traffic(bm25, per_language)
    agreement_report = agreement(traffic, bm25, passages)
    rows = throughput(traffic, bm25, passes, burn_us)
    return {"throughput": rows, "agreement": agreement_report}


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--per-language", type=int, default=400, help="questions per language")
    parser.add_argument("--passes", type=int, default=2, help="live-path passes over traffic")
    parser.add_argument("--burn-us", type=float, default=100.0,
                        help="stand-in live-path CPU per event, microseconds")  # fmt: skip
    args = parser.parse_args(argv)
    result = run(args.per_language, args.passes, args.burn_us)
    rows = result["throughput"]
    header = ["scenario", "events", "live events/s", "vs (a)", "stage µs/event",
              "background µs/event", "live cost", "shadow completed/s", "skipped",
              "errors"]  # fmt: skip
    print(f"live path = {args.burn_us:g} µs/event stand-in + ShadowStage.process, one core")
    cells = [[round(v) if h == "live events/s" else v for h, v in ((h, row[h]) for h in header)]
             for row in rows]  # fmt: skip
    print(table(header, cells))
    shadow = rows[-1]["shadow completed/s"]
    verdict = "met" if shadow >= TARGET_SHADOW_RATE else "NOT met"
    print(f"(b) target >= {TARGET_SHADOW_RATE:,} shadow calls/s on one core: {verdict}")
    overall, per_language = agreement_rows(result["agreement"])
    print("\nagreement with production (bm25), k = 10, RBO p = 0.9; citation = gold paragraph")
    print("when production retrieved it")
    print(table(["candidate", "compared", *MEASURES], overall))
    names = list(result["agreement"]["candidates"])
    header = ["lang"] + [f"{n} {m}" for n in names for m in ("overlap", "rbo", "cit.rec")]
    print()
    print(table(header, per_language))


if __name__ == "__main__":
    main()
