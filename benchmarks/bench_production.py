"""Replay throughput on a production-shaped query log, with the defaults a user runs.

Issue 22 item 1: the figure the README quotes. Every row comes from the same run on the
same file, so the ratios survive a noisy machine (medians of ``--repeats``, default 3):

* ``goldwatch replay, defaults`` — :func:`service.jobs.replay.run_replay`, the very function
  ``goldwatch replay --config <cfg> FILE`` calls, in-process, with a configuration that sets
  only ``gold_set`` and ``corpus`` (every other setting at its default: analytics, drift,
  live quality, harvest; no shadow candidates since none is configured by default);
* ``goldwatch replay, analytics off`` — the same with ``analytics.enabled: false``;
* ``replay, serve's harvest bound`` — the defaults plus ``harvest.max_new_per_batch`` at its
  default (48), which ``goldwatch serve`` applies and a replay drops unless it is set
  (:func:`service.jobs.replay.run_replay`): with a replay's full batches this is serve's
  harvesting under a backlog (its batches full, ``pipeline.max_batch_size``), so its per-stage
  line (harvest µs/event and share, the events shed) is the harvest cost serve's defaults
  pay at capacity. Its report differs from the defaults' (shed questions are not kept);
* ``json.loads loop`` — a plain loop that only ``json.loads`` each line (the floor).

Figures: events/s on wall time and on CPU time (``time.process_time``: the process's CPU
seconds, which is one core's worth when the replay is single-threaded), over the whole
replay *including* its start-up (loading the gold set and corpus, fitting the models) as a
user waits for it, and over the run alone (start-up excluded: the clock splits when the
``freeze_heap`` call ``run_replay`` makes right after ``build_live`` returns; until the
twenty-ninth session it split before that call, so the run held its full collection of the
start-up heap, 0.08 s: 1.7 µs/event of the defaults' 50,000-line run and about 16 % of
analytics off's). One more run (not in the medians) wraps each stage's ``process``, the
batch export (``Live.observe``) and the engine's checkpoints (``Engine.checkpoint``: the
stages' snapshots, the harvest records published for them, the state store's transaction)
with a CPU timer (the replay thread's, ``time.thread_time``): µs per event per stage; and
times the work around the stages (:data:`AROUND`: the file source's reads and dead
letters, the decoder, the replay's series stage, the garbage collector between batches,
what follows the last batch). What is left, the "rest" row, is freeing each batch (its
events' records above all: ~70 objects an event) and the poll loop's bookkeeping. The
replay report has no per-stage timers of its own.

The log (:func:`write_log`, deterministic for a seed): real questions — NQ-open 25 %,
CLINC150 in-scope 25 % and out-of-scope 5 %, BANKING77 15 %, XQuAD en 10 %, hi 5 %, es 5 %,
Hinglish-TOP 10 % — each event with 10 retrieved passages (ids of the corpus, descending
scores, doc types), an answer citing 1–3 of them (refusals for out-of-scope questions and
3 % of the rest, text only: goldwatch reads the text), feedback on 12 %; exactly
``round(n * 0.03)`` duplicate deliveries (a retried event's same bytes, a few lines after
the original) and ``round(n * 0.005)`` bad lines (the file-source poison kinds of
``benchmarks.streams``, in equal shares). Gold set and corpus are of a user's kind
(:func:`write_gold_and_corpus`): the 240 English XQuAD paragraphs (``wikipedia``) and one FAQ
page per BANKING77 category (``faq``); gold questions: 200 English, 50 Hindi and 50 Spanish
XQuAD questions, 77 BANKING77 test questions and 100 CLINC150 out-of-scope questions as
unanswerable rows. Everything is written into a temporary directory, never committed.

Low rate (``--low-rate-events``, default 20,000; 0: off): the same production-shaped events
one per 86.4 s (:data:`LOW_RATE_GAP_S`: ~1,000 questions a day, a small team's traffic, as
trial 12's real 21-day log), ~20 days of event time, one default replay and one with the
per-stage timers, each stage's µs/event beside the dense log's. The dense log (2 events a
second) is the favourable case for drift, which tests every 5 minutes of event time per
dimension whatever the events: its cost is per day of event time, not per event.

``--startup`` (item 4's measuring part) times ``goldwatch serve`` from process start to the
first ``/readyz`` 200 (and to the first event counted in ``/v1/status``) with the default
configuration on the demo data (demo gold set and corpus, the demo log as a file source):
with the model cache cold (an empty state folder: every model fitted) and warm (a fresh state
file beside the ``model-cache/`` an earlier, untimed start filled: every model read back),
with analytics off, and with the demo's own configuration; medians of ``--repeats``, the
cases interleaved. ``--reference DIR`` runs the same starts on another copy of the code
(e.g. ``git archive main | tar -x -C DIR``; it runs with ``PYTHONPATH=DIR``) in the same
run, and each row gets its ratio to the reference. It also gives the model cache's size and
lists the 10 heaviest imports of serve's entry (``python -X importtime``, cumulative).

``--profile`` cProfiles one more default replay (run only, start-up excluded) and prints the
top functions by own time and the stages' cumulative shares.

Run: ``python -m benchmarks.bench_production [--events 100000] [--repeats 3]
[--low-rate-events 20000] [--startup] [--startup-only] [--reference DIR] [--profile
[--profile-out FILE]]``.
"""

from __future__ import annotations

import argparse
import cProfile
import csv
import gc
import json
import os
import pstats
import random
import re
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from benchmarks.datasets import SHARED_DATA, load_xquad
from benchmarks.streams import FILE_POISON_KINDS, poison_pill

DEFAULT_EVENTS = 100_000
DEFAULT_REPEATS = 3
DUPLICATE_SHARE = 0.03
BAD_SHARE = 0.005
FEEDBACK_SHARE = 0.12
REFUSAL_SHARE = 0.03  # of the answerable questions; out-of-scope ones are always refused
PASSAGES = 10
#: Share of each source of questions in the log.
MIX: dict[str, float] = {
    "nq": 0.25, "clinc": 0.25, "clinc_oos": 0.05, "banking": 0.15,
    "xquad_en": 0.10, "xquad_hi": 0.05, "xquad_es": 0.05, "hinglish": 0.10,
}  # fmt: skip
#: The default ``pipeline.max_event_bytes`` (``too_large`` bad lines are just over it).
MAX_EVENT_BYTES = 1_048_576
TARGET_RATE = 10_000
START = datetime(2026, 11, 2, 6, 0, 0, tzinfo=UTC)
GAP_S = 0.5
#: The low-rate log's spacing: one event per 86.4 s, 1,000 a day (86,400 s / 1,000), the
#: rate of a small team's RAG (trial 12's real log: 21,427 questions over 21 days, one per
#: ~85 s). Spread evenly over the day (no quiet nights): drift tests every ``test_every_s``
#: of event time per dimension whatever the events, so its cost follows the days covered.
LOW_RATE_GAP_S = 86.4
#: Lines of the low-rate log by default: 20,000 lines cover ~20 days of event time.
LOW_RATE_EVENTS = 20_000
TENANTS = ("college-a", "legal-aid", "shop-b")
CHANNELS = ("web", "web", "web", "mobile", "whatsapp", "api")
REFUSALS = (
    "I'm sorry, I don't have information about that in my sources.",
    "I couldn't find anything about this in the documents I can search.",
    "Sorry, that is outside what I can help with here.",
)
REPO_ROOT = Path(__file__).resolve().parents[1]


# -- the real questions, gold set and corpus ----------------------------------------------------


@dataclass(frozen=True)
class Question:
    """One real question: its text, language, and the corpus passage answering it (if any)."""

    text: str
    language: str
    gold: str | None = None
    out_of_scope: bool = False


def _banking(root: Path, split: str) -> list[tuple[str, str]]:
    with (root / "banking77" / f"{split}.csv").open(encoding="utf-8", newline="") as handle:
        return [(row["text"], row["category"]) for row in csv.DictReader(handle)]


@cache
def _pools(root: Path) -> dict[str, tuple[Question, ...]]:
    """The question pools of :data:`MIX`, from the real data sets under ``root``."""
    nq_lines = (root / "nq-open" / "NQ-open.dev.jsonl").read_text("utf-8").splitlines()
    nq = [json.loads(line)["question"] for line in nq_lines]
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    in_scope = [text for split in ("train", "val", "test") for text, _ in clinc[split]]
    oos = [text for split in ("oos_train", "oos_val", "oos_test") for text, _ in clinc[split]]
    with (root / "hinglish-top" / "test.tsv").open(encoding="utf-8", newline="") as handle:
        rows = csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE)
        hinglish = list(dict.fromkeys(r["cs_query"].strip() for r in rows if r["cs_query"]))
    pools: dict[str, tuple[Question, ...]] = {
        "nq": tuple(Question(q, "en") for q in nq),
        "clinc": tuple(Question(q, "en") for q in in_scope),
        "clinc_oos": tuple(Question(q, "en", out_of_scope=True) for q in oos),
        "banking": tuple(Question(q, "en", f"faq-{cat}") for q, cat in _banking(root, "train")),
        "hinglish": tuple(Question(q, "hi-Latn") for q in hinglish),
    }
    for lang in ("en", "hi", "es"):
        _, questions = load_xquad(lang, root)
        pools[f"xquad_{lang}"] = tuple(Question(q, lang, gold) for _, q, gold in questions)
    return pools


@cache
def _corpus(root: Path) -> tuple[dict[str, str], ...]:
    """240 XQuAD paragraphs (``wikipedia``) + one FAQ page per BANKING77 category (``faq``):
    the category's name and its first five test questions."""
    passages, _ = load_xquad("en", root)
    rows = [{"id": p.id, "text": p.text, "doc": p.doc, "doc_type": "wikipedia"} for p in passages]
    examples: dict[str, list[str]] = {}
    for text, category in _banking(root, "test"):
        examples.setdefault(category, []).append(text)
    for category in sorted(examples):
        title = category.replace("_", " ").capitalize()
        rows.append({"id": f"faq-{category}", "doc": "help-centre", "doc_type": "faq",
                     "text": f"{title}. " + " ".join(examples[category][:5])})  # fmt: skip
    return tuple(rows)


def write_gold_and_corpus(out: Path, seed: int = 0, root: Path = SHARED_DATA
                          ) -> tuple[Path, Path]:  # fmt: skip
    """Write ``(gold.jsonl, corpus.jsonl)`` into ``out`` (see the module docstring)."""
    rng = random.Random(f"production-gold-{seed}")
    gold: list[dict[str, Any]] = []
    for lang, n in (("en", 200), ("hi", 50), ("es", 50)):
        _, questions = load_xquad(lang, root)
        for i in sorted(rng.sample(range(len(questions)), n)):
            qid, text, passage = questions[i]
            gold.append({"id": f"xquad-{lang}-{qid}", "question": text, "gold": [passage],
                         "kind": "plain", "source": "written", "language": lang})  # fmt: skip
    seen: set[str] = set()
    for k, (text, category) in enumerate(_banking(root, "test")):
        if category not in seen:
            seen.add(category)
            gold.append({"id": f"banking-{k}", "question": text, "gold": [f"faq-{category}"],
                         "kind": "plain", "source": "written", "language": "en"})  # fmt: skip
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    gold += [{"id": f"oos-{k}", "question": text, "gold": [], "kind": "unanswerable",
              "source": "real", "language": "en"}
             for k, (text, _) in enumerate(clinc["oos_val"])]  # fmt: skip
    out.mkdir(parents=True, exist_ok=True)
    return _write(out / "gold.jsonl", gold), _write(out / "corpus.jsonl", list(_corpus(root)))


def _write(path: Path, rows: Sequence[dict[str, Any]]) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


# -- the log ------------------------------------------------------------------------------------


def _encode(event: dict[str, Any]) -> bytes:
    return json.dumps(event, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _event(i: int, rng: random.Random, pools: dict[str, tuple[Question, ...]],
           corpus: tuple[dict[str, str], ...], by_id: dict[str, dict[str, str]],
           gap_s: float = GAP_S) -> dict[str, Any]:  # fmt: skip
    """Good event number ``i``: a real question, 10 retrieved passages, an answer, feedback
    on some; stamped ``i * gap_s`` seconds after :data:`START`, plus up to ``gap_s``."""
    pool = pools[rng.choices(list(MIX), list(MIX.values()))[0]]
    question = pool[rng.randrange(len(pool))]
    picked = rng.sample(range(len(corpus)), PASSAGES)
    ids = [corpus[j]["id"] for j in picked]
    if question.gold is not None and rng.random() < 0.85:  # the retriever finds it 85 % of times
        if question.gold in ids:
            ids.remove(question.gold)
        ids.insert(min(int(rng.expovariate(0.6)), PASSAGES - 1), question.gold)
        ids = ids[:PASSAGES]
    score = rng.uniform(12.0, 28.0)
    results = []
    for rank, pid in enumerate(ids, 1):
        row = by_id[pid]
        results.append({"id": pid, "score": round(score, 3), "rank": rank, "doc": row["doc"],
                        "doc_type": row["doc_type"]})  # fmt: skip
        score *= rng.uniform(0.75, 0.98)
    if question.out_of_scope or rng.random() < REFUSAL_SHARE:
        answer: dict[str, Any] = {"text": rng.choice(REFUSALS), "citations": []}
    else:
        cited = ids[: rng.randint(1, 3)]
        first = by_id[cited[0]]["text"].split(". ")[0][:300]
        answer = {"text": f"{first}. [1]", "citations": cited}
    tenant = rng.choice(TENANTS)
    at = START + timedelta(seconds=i * gap_s + rng.uniform(0, gap_s))
    event: dict[str, Any] = {
        "event_id": f"prod-{i:07d}",
        "timestamp": at.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
        "question": question.text,
        "user": {"id": f"u-{rng.randrange(20_000)}", "role": "user", "tenant": tenant},
        "channel": rng.choice(CHANNELS),
        "retrieval": {"retriever": "prod-hybrid-v4", "latency_ms": round(rng.uniform(15, 240), 1),
                      "results": results},
        "answer": answer,
    }  # fmt: skip
    if rng.random() < FEEDBACK_SHARE:
        event["feedback"] = {"rating": rng.choice((-1, 1, 1, 1))}
    return event


@dataclass(frozen=True)
class Log:
    """What :func:`write_log` wrote: the path, line count, and the 0-based line numbers of
    the duplicates and of the bad lines (``{line: poison kind}``)."""

    path: Path
    lines: int
    duplicates: tuple[int, ...]
    bad: dict[int, str] = field(default_factory=dict)


def write_log(path: Path, n: int, seed: int = 0, root: Path = SHARED_DATA,
              gap_s: float = GAP_S) -> Log:  # fmt: skip
    """Write ``n`` lines to ``path``: ``round(n * 0.005)`` bad lines and ``round(n * 0.03)``
    duplicate deliveries at seeded places, the rest distinct good events in order, one per
    ``gap_s`` seconds of event time (default :data:`GAP_S`: 2 a second; the low-rate log:
    :data:`LOW_RATE_GAP_S`). The questions, passages and answers do not depend on ``gap_s``.

    A duplicate repeats the bytes of a good line 1–50 lines before it (a retried delivery,
    well inside the default dedup window). Same arguments, same bytes.

    Raises:
        ValueError: ``n`` too small to hold the duplicates after a first good line.
    """
    n_bad, n_dup = round(n * BAD_SHARE), round(n * DUPLICATE_SHARE)
    if n_dup and n - n_bad - n_dup < 1:
        raise ValueError(f"n={n} cannot hold {n_dup} duplicates and {n_bad} bad lines")
    rng = random.Random(f"production-log-{seed}")
    pools, corpus = _pools(root), _corpus(root)
    by_id = {row["id"]: row for row in corpus}
    special = rng.sample(range(1, n), n_bad + n_dup)  # line 0 is always a good event
    bad_at = sorted(special[:n_bad])
    kinds = {line: FILE_POISON_KINDS[k % len(FILE_POISON_KINDS)] for k, line in enumerate(bad_at)}
    dup_at = set(special[n_bad:])
    poison_rng = random.Random(f"production-poison-{seed}")
    good: list[bytes] = []
    with path.open("wb") as out:
        for line in range(n):
            if line in kinds:
                value = poison_pill(kinds[line], line, poison_rng, MAX_EVENT_BYTES)
                assert value is not None and b"\n" not in value  # a file kind: one line
            elif line in dup_at:
                value = good[-1 - min(int(rng.expovariate(0.1)), 49, len(good) - 1)]
            else:
                value = _encode(_event(len(good), rng, pools, corpus, by_id, gap_s))
                good.append(value)
            out.write(value + b"\n")
    return Log(path, n, tuple(sorted(dup_at)), kinds)


# -- measuring ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One measured replay: wall and CPU seconds in all and for start-up, the report."""

    wall_s: float
    cpu_s: float
    startup_wall_s: float = 0.0
    startup_cpu_s: float = 0.0
    report: dict[str, Any] = field(default_factory=dict)


def replay(config: Path, log: Path, workdir: Path,
           stage_timers: dict[str, float] | None = None,
           profile: cProfile.Profile | None = None) -> Run:  # fmt: skip
    """``goldwatch replay --config config log`` in-process (the CLI's own ``run_replay``).

    The start-up is split off when ``run_replay``'s ``freeze_heap`` call (right after
    ``build_live``) returns: its full collection of the start-up heap (0.08 s here) is paid
    once per replay, before the first event, whatever the log's length. With
    ``stage_timers`` each stage's ``process``, ``Live.observe`` and ``Engine.checkpoint``
    (:data:`CHECKPOINTS`) add their seconds there, and so does the work around them
    (:data:`AROUND`: the file source's reads and dead letters, the decoder, the replay's
    series stage, the garbage collector, what follows the last batch); with ``profile``
    the run (after start-up) is profiled.
    """
    from consumers import loop
    from consumers.engine import Engine
    from consumers.file_source import FileSource
    from service.jobs import replay as replay_job
    from service.jobs.series import TimeSeries
    from service.settings import load_settings

    settings = load_settings(config)
    split: list[tuple[float, float]] = []
    original_freeze, original_build = replay_job.freeze_heap, replay_job.build_live
    original_decoder, original_run = loop.make_decoder, loop.run  # replay_job's own names
    around = _Around(stage_timers) if stage_timers is not None else None

    def freeze() -> None:
        original_freeze()  # a full collection of the start-up heap: start-up work, once
        split.append((time.perf_counter(), time.process_time()))
        if around is not None:  # the run's collections only, not freeze_heap's own
            gc.callbacks.append(around.collector)
        if profile is not None:
            profile.enable()

    def build(*args: Any, **kwargs: Any) -> Any:
        live = original_build(*args, **kwargs)
        if stage_timers is not None:
            for stage in live.pipeline.stages:
                stage.process = _timed(stage.process, stage_timers, stage.name)
            live.observe = _timed(live.observe, stage_timers, "export (Live.observe)")
        return live

    def decoder(*args: Any, **kwargs: Any) -> Any:
        assert stage_timers is not None  # patched in only with timers
        return _timed(original_decoder(*args, **kwargs), stage_timers, DECODE)

    def run(*args: Any, **kwargs: Any) -> Any:
        try:
            return original_run(*args, **kwargs)
        finally:
            if around is not None:
                around.loop_ended()

    replay_job.freeze_heap, replay_job.build_live = freeze, build  # type: ignore[assignment]
    original_checkpoint = Engine.checkpoint
    patched: list[tuple[Any, str, Any]] = []
    if stage_timers is not None:  # the stages' snapshots and the state store's write
        Engine.checkpoint = _timed(original_checkpoint, stage_timers, CHECKPOINTS)  # type: ignore[method-assign]
        replay_job.make_decoder = decoder  # type: ignore[attr-defined]
        replay_job.run = run  # type: ignore[attr-defined]
        for owner, name, key in ((FileSource, "poll", READ), (FileSource, "dead_letter", LETTERS),
                                 (TimeSeries, "process", SERIES)):  # fmt: skip
            patched.append((owner, name, getattr(owner, name)))
            setattr(owner, name, _timed(getattr(owner, name), stage_timers, key))
    cold_caches()
    gc.collect()
    wall0, cpu0 = time.perf_counter(), time.process_time()
    try:
        report = replay_job.run_replay(settings, log, None, workdir / "dlq.jsonl")
        if around is not None:
            around.replay_ended()
    finally:
        if profile is not None:
            profile.disable()
        if around is not None and around.collector in gc.callbacks:
            gc.callbacks.remove(around.collector)
        replay_job.freeze_heap, replay_job.build_live = original_freeze, original_build
        replay_job.make_decoder = original_decoder  # type: ignore[attr-defined]
        replay_job.run = original_run  # type: ignore[attr-defined]
        Engine.checkpoint = original_checkpoint  # type: ignore[method-assign]
        for owner, name, original in patched:
            setattr(owner, name, original)
        gc.unfreeze()
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    return Run(wall, cpu, split[0][0] - wall0, split[0][1] - cpu0, report)


#: The per-stage table's rows of the work around the stages (see :class:`_Around`).
READ = "read (FileSource.poll)"
LETTERS = "dead letters (FileSource.dead_letter)"
DECODE = "decode (bytes -> events, with records)"
SERIES = "series (the replay's own last stage)"
COLLECTOR = "garbage collector (between batches)"
AFTER = "after the last batch (finish, report)"
AROUND = (READ, LETTERS, DECODE, SERIES, COLLECTOR, AFTER)


class _Around:
    """The timers of the work around the stages, into ``totals`` (CPU seconds of the replay
    thread, ``time.thread_time``): the garbage collector's collections (``gc.callbacks``;
    the poll loop pauses automatic collection during a batch and catches up between
    batches, so none falls inside a stage's timer) and the replay after the loop's end
    (``Live.finish``: the shadow calls in flight, harvest's last flush; the report), less
    the collections in that part. Before the twenty-ninth session these were one
    "(rest: read, decode, finish, report)" row with the series stage and the freeing of
    each batch: 33.4 µs/event."""

    def __init__(self, totals: dict[str, float]) -> None:
        self.totals = totals
        self._started = 0.0
        self._loop_end: float | None = None
        self._collected_after = 0.0

    def collector(self, phase: str, info: dict[str, Any]) -> None:
        """A ``gc.callbacks`` hook."""
        now = time.thread_time()
        if phase == "start":
            self._started = now
            return
        seconds = now - self._started
        self.totals[COLLECTOR] = self.totals.get(COLLECTOR, 0.0) + seconds
        if self._loop_end is not None:
            self._collected_after += seconds

    def loop_ended(self) -> None:
        """The poll loop returned (its final checkpoint done)."""
        self._loop_end = time.thread_time()

    def replay_ended(self) -> None:
        """``run_replay`` returned its report."""
        if self._loop_end is not None:
            after = time.thread_time() - self._loop_end - self._collected_after
            self.totals[AFTER] = self.totals.get(AFTER, 0.0) + after


#: The per-stage table's row of the engine's checkpoints (every stage's ``state_snapshot``,
#: the harvest records it publishes, the state store's transaction).
CHECKPOINTS = "checkpoints (Engine.checkpoint)"


def cold_caches() -> None:
    """Empty the process-wide per-question caches a replay fills, so every replay of a run
    pays what a user's ``goldwatch replay`` (a fresh process) pays: the shared embedder
    (:func:`service.embeddings.model.shared_embedder`: the model and its question vectors; the
    next build loads it again, in start-up) and harvest's normalised-text memo. Without it,
    the second and later replays of one process found the log's ~16,000 question vectors
    cached (topic 44-46 µs/event in a first replay, 14.6 in a later one; the per-stage table
    and the medians of ``--repeats`` above 1 came from warm replays). Since the thirty-fourth
    session also the rising terms' question memo, :func:`~service.text.wording.wording`'s and
    ``content_words``' token memo (without them, the timed replay after the medians' found
    the drift stage's content words of the log known)."""
    from service.drift import terms
    from service.embeddings import model
    from service.harvest import suggestion
    from service.text import wording

    with model._SHARED_LOCK:
        model._SHARED.clear()
    suggestion._normalised.cache_clear()
    terms.question_terms.cache_clear()
    wording.wording.cache_clear()
    getattr(wording, "_TOKEN_STEMS", {}).clear()  # (absent before the thirty-fourth session)


def _timed(fn: Callable[..., Any], totals: dict[str, float], key: str) -> Callable[..., Any]:
    """``fn`` adding its CPU seconds (``time.thread_time``: the calling thread's, so another
    process's load on a shared machine does not count, as wall time would) to ``totals[key]``."""

    def wrapper(*args: Any) -> Any:
        started = time.thread_time()
        try:
            return fn(*args)
        finally:
            totals[key] = totals.get(key, 0.0) + time.thread_time() - started

    return wrapper


def json_loop(log: Path) -> Run:
    """Read ``log`` line by line and only ``json.loads`` each (bad lines skipped)."""
    wall0, cpu0 = time.perf_counter(), time.process_time()
    n = 0
    with log.open("rb") as lines:
        for line in lines:
            try:
                json.loads(line)
                n += 1
            except ValueError:
                pass
    return Run(time.perf_counter() - wall0, time.process_time() - cpu0, report={"processed": n})


def write_configs(workdir: Path, gold: Path, corpus: Path) -> tuple[Path, Path]:
    """``(defaults.yaml, analytics-off.yaml)``: only the gold set and corpus set (and, in the
    second, ``analytics.enabled: false``)."""
    base = {"gold_set": str(gold), "corpus": str(corpus)}
    defaults, off = workdir / "defaults.yaml", workdir / "analytics-off.yaml"
    defaults.write_text(yaml.safe_dump(base), encoding="utf-8")
    off.write_text(yaml.safe_dump({**base, "analytics": {"enabled": False}}), encoding="utf-8")
    return defaults, off


def write_bound_config(workdir: Path, gold: Path, corpus: Path) -> Path:
    """``bound.yaml``: the gold set and corpus, and ``harvest.max_new_per_batch`` set to its
    default (the bound serve applies; a replay drops it unless it is set explicitly)."""
    from service.harvest.config import HarvestConfig

    bound = HarvestConfig.model_fields["max_new_per_batch"].default
    path = workdir / "bound.yaml"
    path.write_text(yaml.safe_dump({"gold_set": str(gold), "corpus": str(corpus),
                                    "harvest": {"max_new_per_batch": bound}}),
                    encoding="utf-8")  # fmt: skip
    return path


@dataclass(frozen=True)
class Bounded:
    """The harvest cost under serve's bound, from one more stage-timed replay: the
    harvest stage's and the whole run's CPU seconds, the bound, the events whose new
    question was shed and the events harvesting picked (with a reason)."""

    harvest_s: float
    run_s: float
    bound: int
    shed: int
    suggestions: int


@dataclass(frozen=True)
class Row:
    """One line of the table: the medians of repeated runs."""

    what: str
    events: int
    runs: list[Run]

    def median(self, key: Callable[[Run], float]) -> float:
        """The median of ``key`` over the runs."""
        return statistics.median(key(run) for run in self.runs)


def _check(report: dict[str, Any], log: Log, what: str) -> None:
    expected = {"duplicates": len(log.duplicates), "dead_lettered_total": len(log.bad),
                "processed": log.lines - len(log.duplicates) - len(log.bad)}  # fmt: skip
    got = {key: report.get(key) for key in expected}
    if got != expected:
        raise RuntimeError(f"{what}: report {got} != the log's {expected}")


def measure(n: int, repeats: int, workdir: Path, profile: bool = False, seed: int = 0,
            profile_out: Path | None = None,
            ) -> tuple[list[Row], dict[str, float], int, str, Bounded]:  # fmt: skip
    """Write the inputs, run the rows interleaved ``repeats`` times, then the per-stage runs
    (defaults; serve's harvest bound) and the profiled run with ``profile`` (its pstats file
    written to ``profile_out``).

    Returns ``(rows, stage seconds, events processed, profile text, bounded harvest)``.
    """
    gold, corpus = write_gold_and_corpus(workdir, seed)
    log = write_log(workdir / "events.jsonl", n, seed)
    defaults, off = write_configs(workdir, gold, corpus)
    bound = write_bound_config(workdir, gold, corpus)
    runs: dict[str, list[Run]] = {"defaults": [], "off": [], "bound": [], "json": []}
    for _ in range(repeats):  # interleaved: a load spike hits every row alike
        runs["defaults"].append(replay(defaults, log.path, workdir))
        _check(runs["defaults"][-1].report, log, "defaults")
        runs["off"].append(replay(off, log.path, workdir))
        _check(runs["off"][-1].report, log, "analytics off")
        runs["bound"].append(replay(bound, log.path, workdir))
        _check(runs["bound"][-1].report, log, "serve's harvest bound")
        runs["json"].append(json_loop(log.path))
    processed = log.lines - len(log.duplicates) - len(log.bad)
    rows = [
        Row("goldwatch replay, defaults", processed, runs["defaults"]),
        Row("goldwatch replay, analytics off", processed, runs["off"]),
        Row("replay, serve's harvest bound", processed, runs["bound"]),
        Row("json.loads loop (reference)", log.lines, runs["json"]),
    ]
    stages: dict[str, float] = {}
    timed = replay(defaults, log.path, workdir, stage_timers=stages)
    stages["(whole run, start-up excluded)"] = timed.cpu_s - timed.startup_cpu_s
    bound_stages: dict[str, float] = {}
    bounded_run = replay(bound, log.path, workdir, stage_timers=bound_stages)
    candidates = bounded_run.report["gold_candidates"]
    bounded = Bounded(bound_stages.get("harvest", 0.0),
                      bounded_run.cpu_s - bounded_run.startup_cpu_s,
                      candidates["max_new_per_batch"], candidates["shed"],
                      candidates["n_suggestions"])  # fmt: skip
    text = ""
    if profile:
        profiler = cProfile.Profile()
        replay(defaults, log.path, workdir, profile=profiler)
        text = profile_text(profiler)
        if profile_out is not None:
            profiler.dump_stats(profile_out)
    return rows, stages, processed, text, bounded


@dataclass(frozen=True)
class LowRate:
    """The low-rate log's replays (:func:`measure_low_rate`): one plain, one stage-timed."""

    lines: int
    processed: int
    days: float  # of event time the log covers
    plain: Run
    stages: dict[str, float]
    timed_run_s: float  # the stage-timed replay's run CPU seconds


def measure_low_rate(n: int, workdir: Path, seed: int = 0) -> LowRate:
    """The same production-shaped events as :func:`measure`'s log, ``n`` lines one per
    :data:`LOW_RATE_GAP_S` seconds (a ~1,000-a-day log: ``n`` = 20,000 covers ~20 days):
    one default replay, then one with the per-stage timers. Drift tests every
    ``test_every_s`` of event time per dimension: a test per ~3.5 events of this log, per
    600 of the dense one (86.4 s against 0.5 s between events)."""
    gold, corpus = write_gold_and_corpus(workdir, seed)
    log = write_log(workdir / "low-rate.jsonl", n, seed, gap_s=LOW_RATE_GAP_S)
    defaults, _ = write_configs(workdir, gold, corpus)
    plain = replay(defaults, log.path, workdir)
    _check(plain.report, log, "low-rate defaults")
    stages: dict[str, float] = {}
    timed = replay(defaults, log.path, workdir, stage_timers=stages)
    processed = log.lines - len(log.duplicates) - len(log.bad)
    return LowRate(n, processed, n * LOW_RATE_GAP_S / 86_400, plain, stages,
                   timed.cpu_s - timed.startup_cpu_s)  # fmt: skip


def render_low_rate(low: LowRate, dense: dict[str, float] | None = None,
                    dense_processed: int = 0) -> str:  # fmt: skip
    """The low-rate section: run µs/event and events/s, then each stage's µs/event (and,
    with ``dense``, the dense log's per-stage seconds, its µs/event beside)."""
    run = low.plain.cpu_s - low.plain.startup_cpu_s
    lines = [
        f"low rate: {low.lines:,} lines one per {LOW_RATE_GAP_S:g} s (~1,000 a day, "
        f"{low.days:.1f} days of event time; {low.processed:,} good distinct events), "
        "defaults, one run:",
        f"  run {run:.2f} s CPU: {1e6 * run / low.processed:.1f} µs/event, "
        f"{low.processed / run:,.0f} events/s on one core (start-up "
        f"{low.plain.startup_cpu_s:.2f} s)",
        f"  per stage (one more replay, timers on; run {low.timed_run_s:.2f} s CPU): µs per "
        "event low-rate" + (", dense log (above)" if dense else ""),
    ]
    for name, seconds in sorted(low.stages.items(), key=lambda kv: -kv[1]):
        dense_us = ""
        if dense is not None and dense_processed and name in dense:
            dense_us = f" {1e6 * dense[name] / dense_processed:8.1f}"
        lines.append(f"    {name:48} {1e6 * seconds / low.processed:8.1f}{dense_us}")
    rest = low.timed_run_s - sum(low.stages.values())
    lines.append(f"    {'(rest: freeing each batch, the loop around it)':48} "
                 f"{1e6 * rest / low.processed:8.1f}")  # fmt: skip
    return "\n".join(lines)


def profile_text(profiler: cProfile.Profile, top: int = 25) -> str:
    """Top functions by own time and the stages' ``process`` by cumulative time, as % of
    the profiled run."""
    stats = pstats.Stats(profiler)
    total = sum(tt for _, _, tt, _, _ in stats.stats.values())  # type: ignore[attr-defined]
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])  # type: ignore[attr-defined]
    lines = [f"profiled run: {total:.2f} s of own time in all (cProfile adds overhead)",
             f"top {top} functions by own time:"]  # fmt: skip
    for (path, line, name), (_, calls, tt, ct, _) in rows[:top]:
        where = f"{_short(path)}:{line}({name})"
        lines.append(f"  {100 * tt / total:5.1f} % own {100 * ct / total:5.1f} % cum "
                     f"{calls:9d} calls  {where}")  # fmt: skip
    lines.append("process() of the engine, pipeline and each stage, observe(): cumulative:")
    cumulative = [
        (ct, f"{_short(p)}:{ln}({n})")
        for (p, ln, n), (_, _, _, ct, _) in stats.stats.items()  # type: ignore[attr-defined]
        if n in ("process", "observe") and ("service" in p or "consumers" in p)
    ]
    for ct, where in sorted(cumulative, reverse=True)[:20]:
        lines.append(f"  {100 * ct / total:5.1f} %  {where}")
    return "\n".join(lines)


def _short(path: str) -> str:
    for marker in ("/service/", "/consumers/", "site-packages/", "/lib/python"):
        if marker in path:
            return path[path.index(marker) + 1 :]
    return path


def render(rows: Sequence[Row], stages: dict[str, float], processed: int, n: int,
           repeats: int, bounded: Bounded | None = None) -> str:  # fmt: skip
    """The table: events/s (wall, CPU; with and without start-up), µs/event, ratios; the
    per-stage table; with ``bounded``, the harvest line under serve's bound."""

    def run_cpu(row: Row) -> float:
        return row.median(lambda r: r.cpu_s - r.startup_cpu_s)

    base_cpu, base_wall = run_cpu(rows[-1]), rows[-1].median(lambda r: r.wall_s)
    lines = [
        f"{n:,} lines ({processed:,} good distinct events, {round(n * DUPLICATE_SHARE):,} "
        f"duplicates, {round(n * BAD_SHARE):,} bad); medians of {repeats}; {os.cpu_count()} CPUs",
        f"{'what':32} {'wall s':>6} {'CPU s':>6} {'start-up':>8} {'ev/s wall':>9} "
        f"{'ev/s CPU':>8} {'run ev/s':>8} {'run µs/ev':>9} {'× json run':>10} "
        f"{'× json wall':>11}",
    ]
    for row in rows:
        wall, cpu = row.median(lambda r: r.wall_s), row.median(lambda r: r.cpu_s)
        start, run = row.median(lambda r: r.startup_cpu_s), run_cpu(row)
        lines.append(
            f"{row.what:32} {wall:6.2f} {cpu:6.2f} {start:8.2f} {row.events / wall:9,.0f} "
            f"{row.events / cpu:8,.0f} {row.events / run:8,.0f} {1e6 * run / row.events:9.1f} "
            f"{run / base_cpu:10.1f} {wall / base_wall:11.1f}"
        )
    lines += [
        "wall s, CPU s, ev/s wall, ev/s CPU: the whole replay (start-up included, in-process:"
        " imports paid once, by the first run); start-up: CPU s to freeze_heap's end;",
        "run: CPU time after start-up (events/s on one core); × json: run CPU time (or whole"
        " wall time) / the json.loads loop's, same run",
    ]
    default_run = rows[0].events / run_cpu(rows[0])
    verdict = "met" if default_run >= TARGET_RATE else "NOT met"
    lines.append(f"target >= {TARGET_RATE:,} events/s on one core with the defaults: {verdict} "
                 f"({default_run:,.0f}, run CPU)")  # fmt: skip
    whole = stages.pop("(whole run, start-up excluded)")
    lines.append(f"\nper stage (one more default replay, timers on; run {whole:.2f} s CPU): "
                 "CPU seconds, µs per event, share of the run")  # fmt: skip
    around = {name: seconds for name, seconds in stages.items() if name in AROUND}
    for name, seconds in sorted(stages.items(), key=lambda kv: -kv[1]):
        if name not in around:
            lines.append(f"  {name:48} {seconds:7.2f} {1e6 * seconds / processed:8.1f} "
                         f"{seconds / whole:6.1%}")  # fmt: skip
    if around:
        lines.append("around the stages:")
    for name, seconds in sorted(around.items(), key=lambda kv: -kv[1]):
        lines.append(f"  {name:48} {seconds:7.2f} {1e6 * seconds / processed:8.1f} "
                     f"{seconds / whole:6.1%}")  # fmt: skip
    rest = whole - sum(stages.values())
    lines.append(f"  {'(rest: freeing each batch, the loop around it)':48} {rest:7.2f} "
                 f"{1e6 * rest / processed:8.1f} {rest / whole:6.1%}")  # fmt: skip
    if bounded is not None:
        lines.append(
            f"with serve's harvest bound (harvest.max_new_per_batch {bounded.bound}; a replay's "
            f"full batches, as serve's under a backlog; one more timed replay): harvest "
            f"{1e6 * bounded.harvest_s / processed:.1f} µs/event, "
            f"{bounded.harvest_s / bounded.run_s:.1%} of the run "
            f"({1e6 * bounded.run_s / processed:.1f} µs/event); {bounded.shed:,} picked events "
            f"shed, {bounded.suggestions:,} suggestions kept (target: harvest <= 15 %)"
        )
    return "\n".join(lines)


# -- start-up -----------------------------------------------------------------------------------


def startup_config(workdir: Path, port: int, analytics: bool) -> Path:
    """The default configuration on the demo data: demo gold set and corpus, the demo log as
    a file source, a state path and an API port (analytics off when asked)."""
    from service.demo import demo_data, demo_path

    config: dict[str, Any] = {key: str(path) for key, path in demo_data().items()}
    config["source"] = {"kind": "file", "path": str(demo_path("querylog.jsonl")),
                        "dlq_path": str(workdir / "dlq.jsonl")}  # fmt: skip
    config["state"] = {"path": str(workdir / "state" / "goldwatch.sqlite")}
    config["api"] = {"host": "127.0.0.1", "port": port}
    if not analytics:
        config["analytics"] = {"enabled": False}
    path = workdir / "goldwatch.yaml"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def start_once(workdir: Path, analytics: bool | None, timeout_s: float = 90.0,
               importtime: bool = False, code: Path | None = None,
               cache: Path | None = None, cpu_times: list[float | None] | None = None,
               ) -> tuple[float, float | None]:  # fmt: skip
    """Seconds from ``Popen`` of ``goldwatch serve`` to its first ``/readyz`` 200 (polled
    every 20 ms) and to the first event counted in ``/v1/status`` (``None`` with
    ``importtime``); the process is stopped with SIGTERM after. ``analytics=None`` runs the
    demo's own configuration (``benchmarks.bench_startup``'s). With ``importtime`` the
    process runs under ``python -X importtime -m service.cli`` and its log keeps the
    import times (``workdir/serve.log``). ``code``: run that copy of goldwatch
    (``PYTHONPATH=code``) instead of this one. ``cache``: a model-cache folder copied into
    the state folder first (a warm start). ``cpu_times``: the process's CPU seconds at ready
    and (not with ``importtime``) at the first event counted are appended to it
    (:func:`benchmarks.bench_startup.cpu_seconds`).

    Raises:
        RuntimeError: it exited or was not ready within ``timeout_s``.
    """
    import logging

    from benchmarks.bench_startup import (
        demo_config,
        free_port,
        seed_cache,
        serve_command,
        start_times,
    )

    logging.getLogger("httpx").setLevel(logging.WARNING)  # not a line per /readyz poll
    workdir.mkdir(parents=True, exist_ok=True)
    if cache is not None:
        seed_cache(cache, workdir / "state")
    port = free_port()
    if analytics is None:
        config = demo_config(workdir, port)
    else:
        config = startup_config(workdir, port, analytics)
    command = serve_command(config)
    if importtime:
        command = [sys.executable, "-X", "importtime", "-m", "service.cli", *command[-3:]]
    env = None if code is None else {**os.environ, "PYTHONPATH": str(code)}
    return start_times(command, workdir / "serve.log", port, timeout_s, stop_wait_s=30.0,
                       env=env, first_event=not importtime, cpu_times=cpu_times)  # fmt: skip


#: goldwatch's own packages: their cumulative import time holds every other import.
OWN_PACKAGES = ("service", "consumers", "benchmarks")


def import_profile(log: str, top: int = 10) -> tuple[float, list[tuple[float, str]]]:
    """Parse ``-X importtime`` lines of a serve start: ``(total s, [(cumulative s, package)])``
    — the ``top`` heaviest packages outside goldwatch, each at its first (and only) import,
    cumulative (its own submodules and whatever it imports first; a package imported inside
    another is counted in both). ``total`` sums the outermost imports."""
    rows: list[tuple[float, int, str]] = []
    for line in log.splitlines():
        match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if match:
            _, cum, indent, name = match.groups()
            rows.append((int(cum) / 1e6, len(indent), name))
    total = sum(cum for cum, depth, _ in rows if depth == 1)
    packages = [
        (cum, name)
        for cum, _, name in rows
        if "." not in name and not name.startswith("_") and name not in OWN_PACKAGES
    ]
    return total, sorted(packages, reverse=True)[:top]


#: The start-up cases: ``(analytics, warm)`` by label (``analytics=None``: the demo's own
#: configuration; ``warm``: the state folder seeded with a filled model cache).
STARTUP_CASES: dict[str, tuple[bool | None, bool]] = {
    "defaults, cache cold": (True, False),
    "defaults, cache warm": (True, True),
    "analytics off": (False, False),
    "demo config, cache cold": (None, False),
    "demo config, cache warm": (None, True),
}


def _median(values: Sequence[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return statistics.median(known) if known else None


def startup(repeats: int, reference: Path | None = None) -> str:
    """Start-up to ready and to the first event counted, per case of :data:`STARTUP_CASES`
    (medians of ``repeats``, every case and code interleaved: a load spike hits them
    alike), with ``reference`` (another copy of the code) measured in the same run; the
    model cache's size; the import profile of one more default start."""
    from benchmarks.bench_startup import MODEL_CACHE, cache_bytes

    tmp = Path(tempfile.mkdtemp(prefix="gw-bench-production-startup-"))
    codes: dict[str, Path | None] = {"this": None}
    if reference is not None:
        codes["reference"] = reference.resolve()
    times: dict[tuple[str, str], list[tuple[float, float | None]]] = {}
    cpus: dict[tuple[str, str], list[float | None]] = {}  # at ready, at the first event
    loads: list[float] = []
    try:
        caches: dict[tuple[str, bool | None], Path] = {}
        for code, where in codes.items():  # one untimed start fills each model cache
            for analytics in (True, None):
                prime = tmp / f"prime-{code}-{analytics}"
                start_once(prime, analytics, code=where)
                caches[code, analytics] = prime / "state" / MODEL_CACHE
        sizes = {key: cache_bytes(path.parent) for key, path in caches.items()}
        for i in range(repeats):
            for label, (analytics, warm) in STARTUP_CASES.items():
                for code, where in codes.items():
                    cache = caches[code, analytics] if warm else None
                    slug = re.sub(r"\W+", "-", label)
                    loads.append(os.getloadavg()[0])
                    run = start_once(tmp / f"{i}-{code}-{slug}", analytics, code=where,
                                     cache=cache,
                                     cpu_times=cpus.setdefault((label, code), []))  # fmt: skip
                    times.setdefault((label, code), []).append(run)
        profiled = tmp / "importtime"
        profiled_s, _ = start_once(profiled, True, importtime=True, cache=caches["this", True])
        log = (profiled / "serve.log").read_text("utf-8", errors="replace")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    lines = [
        f"start-up: goldwatch serve on the demo data (file source: the demo log), Popen → "
        f"first /readyz 200 and → first event counted in /v1/status; medians of {repeats}"
        f" ({os.cpu_count()} CPUs){'; reference: ' + str(reference) if reference else ''}; "
        f"CPU s: the serve process's user + system seconds at ready (1st ev CPU: at the "
        f"first event counted); 1-min load average "
        f"{min(loads, default=0):.2f}–{max(loads, default=0):.2f} at the starts"
    ]
    lines.append(f"  {'case':26} {'code':9} {'ready s':>8} {'ratio':>6} {'CPU s':>6} "
                 f"{'ratio':>6} {'1st event s':>11} {'1st ev CPU':>10} {'ratio':>6}"
                 "  runs (ready s / CPU s)")  # fmt: skip
    for label in STARTUP_CASES:
        ref = _median([r for r, _ in times.get((label, "reference"), [])])
        ref_cpu = _median(cpus.get((label, "reference"), [])[0::2])
        ref_first_cpu = _median(cpus.get((label, "reference"), [])[1::2])
        for code in codes:
            runs = times[label, code]
            ready, first = _median([r for r, _ in runs]), _median([f for _, f in runs])
            cpu = _median(cpus[label, code][0::2])
            first_cpu = _median(cpus[label, code][1::2])
            assert ready is not None
            ratio = f"{ready / ref:6.2f}" if ref else f"{'':6}"
            cpu_s = f"{cpu:6.2f}" if cpu is not None else f"{'—':>6}"
            cpu_ratio = f"{cpu / ref_cpu:6.2f}" if cpu is not None and ref_cpu else f"{'':6}"
            first_s = f"{first:11.2f}" if first is not None else f"{'—':>11}"
            first_cpu_s = f"{first_cpu:10.2f}" if first_cpu is not None else f"{'—':>10}"
            first_ratio = (f"{first_cpu / ref_first_cpu:6.2f}"
                           if first_cpu is not None and ref_first_cpu else f"{'':6}")  # fmt: skip
            each = ", ".join(
                f"{r:.2f}/{c:.2f}" if c is not None else f"{r:.2f}"
                for (r, _), c in zip(runs, cpus[label, code][0::2], strict=True)
            )
            lines.append(f"  {label:26} {code:9} {ready:8.2f} {ratio} {cpu_s} {cpu_ratio} "
                         f"{first_s} {first_cpu_s} {first_ratio}  {each}")  # fmt: skip
    lines.append("model cache (entries written by one start; warm starts read them): "
                 + ", ".join(f"{code} {'defaults' if analytics else 'demo config'} "
                             f"{size / 1024:,.0f} KiB"
                             for (code, analytics), size in sizes.items()))  # fmt: skip
    total, heaviest = import_profile(log)
    lines.append(f"import profile: one more default start (cache warm) under -X importtime "
                 f"({profiled_s:.2f} s to ready), {total:.2f} s of imports in all (until its "
                 "stop: also what the first batches import after ready); heaviest packages "
                 "outside goldwatch (cumulative, first import):")  # fmt: skip
    for cum, name in heaviest:
        lines.append(f"  {cum:6.3f} s  {name}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Print the throughput table (and the start-up part, the profile when asked)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS, help="lines in the log")
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--startup", action="store_true", help="also time serve's start-up")
    parser.add_argument("--startup-only", action="store_true", help="only the start-up part")
    parser.add_argument(
        "--reference",
        type=Path,
        default=None,
        help="another copy of goldwatch to time the start-up of (same run)",
    )
    parser.add_argument("--profile", action="store_true", help="cProfile one more replay")
    parser.add_argument(
        "--low-rate-events",
        type=int,
        default=LOW_RATE_EVENTS,
        help=f"lines of the low-rate log (one per {LOW_RATE_GAP_S:g} s; 0: no low-rate part)",
    )
    parser.add_argument(
        "--profile-out",
        type=Path,
        default=None,
        help="with --profile: write the pstats file here (for pstats/snakeviz)",
    )
    args = parser.parse_args(argv)
    if not args.startup_only:
        with tempfile.TemporaryDirectory(prefix="gw-bench-production-") as tmp:
            rows, stages, processed, text, bounded = measure(
                args.events, args.repeats, Path(tmp), args.profile, args.seed, args.profile_out
            )
            dense = dict(stages)  # (render pops the whole run's row)
            print(render(rows, stages, processed, args.events, args.repeats, bounded),
                  flush=True)  # fmt: skip
            if args.low_rate_events > 0:
                low = measure_low_rate(args.low_rate_events, Path(tmp), args.seed)
                print("\n" + render_low_rate(low, dense, processed), flush=True)
        if text:
            print("\n" + text, flush=True)
    if args.startup or args.startup_only:
        print("\n" + startup(args.repeats, args.reference), flush=True)


if __name__ == "__main__":
    main()
