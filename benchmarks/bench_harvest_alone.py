"""The harvest stage alone on :mod:`benchmarks.bench_production`'s stream: its inputs recorded
from one default replay, then given to fresh stages, timed, and their outputs digested, so a
change to the stage is timed and checked for identical outputs in seconds, not minutes.

The replay (``bench_production``'s log, gold set, corpus and defaults; ``--events`` lines)
runs once with :meth:`HarvestStage.process` recording the stage's construction arguments and
each batch's events with a copy of its annotations (what the earlier stages wrote). Each of
``--repeats`` passes then builds a stage from them — without sinks (the replay's state-store
sink, its publications and its reads of decisions are left out) and with a constant clock —
and processes the batches. ``--save``/``--load`` keep the recorded inputs in a pickle file
(~60 MB for 50,000 events), so two trees can be given the same ones without a replay each.

Printed: CPU µs per event of the fastest and the median pass (``time.process_time`` around
the passes' ``process`` calls, the garbage collector on, as in a replay) and ``digest``:
SHA-256 of the records held at the end, every batch's pending observations, the coverage
and score windows and the recent events — the same on two trees when the stage's outputs
are. The timing is as noisy as the machine: only passes of the same run (or alternated runs
of two trees) compare. ``bench_production``'s defaults run no shadow retriever, so no shadow
result is recorded.

Run: ``python -m benchmarks.bench_harvest_alone [--events 50000] [--repeats 5]
[--save FILE | --load FILE]``.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import pickle
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.pipeline import Batch
from service.records import GoldQuestion

if TYPE_CHECKING:
    from service.events import QueryLogEvent


@dataclass
class Recorded:
    """What the harvest stage of one replay was given.

    Attributes:
        config: its settings; ``gold_counts``: ``{dimension: {label: count}}`` of the gold
            set; ``known``: the gold questions.
        batches: each batch's events and their annotations (copies, as the stage saw them).
        documents: ``{passage id: document}`` of the corpus (the document coverage gaps;
            empty in a pickle saved before them, or from a tree without them).
    """

    config: HarvestConfig
    gold_counts: dict[str, dict[str, int]]
    known: list[GoldQuestion]
    batches: list[tuple[list[QueryLogEvent], list[dict[str, Any]]]]
    documents: dict[str, str] = field(default_factory=dict)


def record(events: int, seed: int = 0) -> Recorded:
    """Run ``bench_production``'s default replay of ``events`` lines, recording what its
    harvest stage is given (module docstring).

    Raises:
        RuntimeError: the replay built no harvest stage, or more than one.
    """
    from benchmarks import bench_production as production

    made: list[tuple[HarvestConfig, dict[str, dict[str, int]], list[GoldQuestion],
                     dict[str, str]]] = []  # fmt: skip
    batches: list[tuple[list[QueryLogEvent], list[dict[str, Any]]]] = []
    original_init, original_process = HarvestStage.__init__, HarvestStage.process

    def init(stage: HarvestStage, config: HarvestConfig, gold_counts: Any = None,
             known_questions: Any = (), *args: Any, **kwargs: Any) -> None:  # fmt: skip
        known = list(known_questions)
        counts = {dim: dict(c) for dim, c in (gold_counts or {}).items()}
        made.append((config, counts, known, dict(kwargs.get("documents") or {})))
        original_init(stage, config, gold_counts, known, *args, **kwargs)

    def process(stage: HarvestStage, batch: Batch) -> None:
        batches.append((list(batch.events), [dict(notes) for notes in batch.annotations]))
        original_process(stage, batch)

    HarvestStage.__init__ = init  # type: ignore[assignment,method-assign]
    HarvestStage.process = process  # type: ignore[assignment,method-assign]
    try:
        with tempfile.TemporaryDirectory(prefix="gw-bench-harvest-alone-") as tmp:
            workdir = Path(tmp)
            gold, corpus = production.write_gold_and_corpus(workdir, seed)
            log = production.write_log(workdir / "events.jsonl", events, seed)
            defaults, _ = production.write_configs(workdir, gold, corpus)
            production.replay(defaults, log.path, workdir)
    finally:
        HarvestStage.__init__ = original_init  # type: ignore[method-assign]
        HarvestStage.process = original_process  # type: ignore[method-assign]
    if len(made) != 1:
        raise RuntimeError(f"the replay built {len(made)} harvest stages, not one")
    config, counts, known, documents = made[0]
    return Recorded(config, counts, known, batches, documents)


def replay(recorded: Recorded) -> tuple[float, str, int]:
    """One pass: a fresh stage given the recorded batches; ``(CPU seconds of its process
    calls, digest of its outputs, suggestions held at the end)``."""
    documents = getattr(recorded, "documents", {})  # (none in a pickle from before them)
    stage = HarvestStage(recorded.config, recorded.gold_counts, recorded.known,
                         clock=lambda: 0.0, documents=documents)  # fmt: skip
    batches = [Batch("bench", events, [dict(notes) for notes in annotations])
               for events, annotations in recorded.batches]  # fmt: skip
    observed = []
    gc.collect()
    spent = 0.0
    for batch in batches:
        started = time.process_time()
        stage.process(batch)
        spent += time.process_time() - started
        observed.append(stage.pending_observations())
    outputs = [stage.records(), observed, stage.coverage.state(), stage.scores.state(),
               list(stage._recent.items())]  # fmt: skip
    text = json.dumps(outputs, default=str, sort_keys=True)
    return spent, hashlib.sha256(text.encode("utf-8")).hexdigest(), len(stage.suggestions)


def main(argv: Sequence[str] | None = None) -> None:
    """Record (or load) the inputs, run the passes, print their times and digest."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=50_000, help="lines in the log")
    parser.add_argument("--repeats", type=int, default=5, help="passes over the batches")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--save", type=Path, default=None, help="keep the recorded inputs here")
    parser.add_argument("--load", type=Path, default=None, help="recorded inputs to use")
    args = parser.parse_args(argv)
    if args.load is not None:
        with args.load.open("rb") as file:
            recorded: Recorded = pickle.load(file)  # noqa: S301 (a file this module wrote)
    else:
        recorded = record(args.events, args.seed)
        if args.save is not None:
            with args.save.open("wb") as file:
                pickle.dump(recorded, file, protocol=pickle.HIGHEST_PROTOCOL)
    events = sum(len(found) for found, _ in recorded.batches)
    times, digests, held = [], set(), 0
    for _ in range(args.repeats):
        spent, digest, held = replay(recorded)
        times.append(spent * 1e6 / max(events, 1))
        digests.add(digest)
    print(f"{events:,} events in {len(recorded.batches)} batches; {held:,} suggestions held")
    print(f"harvest stage alone: {min(times):.2f} µs/event fastest, "
          f"{statistics.median(times):.2f} median of {len(times)} passes")  # fmt: skip
    print("digest " + ", ".join(sorted(digests)))


if __name__ == "__main__":
    main()
