"""Cost of the decisions the harvest stage remembers, per checkpoint: size and milliseconds of
one checkpoint writing the stage's snapshot, with none and with ``--decided`` decisions
remembered (each one's id and normalised question; the default bound is
``harvest.max_suggestions`` = 5,000). Until the fourteenth session the snapshot carried them
(``decided``) in every checkpoint; now the repository sink keeps them, rewritten only when
they change, so an unchanged list costs a checkpoint nothing.

The stage first takes ``--events`` real questions (NQ-open's dev set, then CLINC150's, from
``../shared/data``), each asked once by a refused event, with the state store as its
repository sink (a SQLite file, ``synchronous=FULL``, as serve's): it then holds up to
``max_suggestions`` suggestions and remembers as many recent events. The decisions are on
other CLINC150 questions (told to the stage as the labelling API does, not held). The
median of ``--repeats`` snapshots and checkpoints is shown (the snapshot's building
included).

Run: ``python -m benchmarks.bench_harvest_decided [--events 5000] [--decided 5000]
[--repeats 15]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.datasets import SHARED_DATA
from service.events import QueryLogEvent
from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates
from service.harvest.text import candidate_id, comparison_form
from service.pipeline import Batch
from service.state import StateStore

KEY = "stage/harvest"
T0 = datetime(2026, 12, 2, tzinfo=UTC)


def questions(root: Path = SHARED_DATA) -> list[str]:
    """NQ-open's dev questions, then CLINC150's (every split), distinct, in that order."""
    lines = (root / "nq-open" / "NQ-open.dev.jsonl").read_text(encoding="utf-8").splitlines()
    found = [json.loads(line)["question"] for line in lines if line.strip()]
    clinc = json.loads((root / "clinc150" / "data_full.json").read_text(encoding="utf-8"))
    found += [row[0] for split in sorted(clinc) for row in clinc[split]]
    return list(dict.fromkeys(found))


def _batch(texts: Sequence[str], start: int) -> Batch:
    events = [QueryLogEvent.model_validate({
        "event_id": f"e-{start + i}", "timestamp": (T0 + timedelta(seconds=start + i)).isoformat(),
        "question": text, "answer": {"text": "an answer", "citations": []},
    }) for i, text in enumerate(texts)]  # fmt: skip
    out = Batch.of(events, "bench")
    for notes in out.annotations:
        notes.update({"refused": True, "topic": "t", "language": "en", "known": False})
    return out


def checkpoint(
    events: int, decided: int, repeats: int, texts: Sequence[str]
) -> tuple[float, float]:
    """(snapshot MB as JSON, median ms of one snapshot and its checkpoint) for a stage that
    took ``events`` questions and was told ``decided`` decisions (both ≥ 0)."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-decided-") as tmp:
        store = StateStore.open(Path(tmp) / "state.sqlite")
        stage = HarvestStage(HarvestConfig(flush_interval_s=0.0, max_new_per_batch=None),
                             sinks=[StateStoreCandidates(store)])  # fmt: skip
        for start in range(0, events, 500):
            stage.process(_batch(texts[start : min(start + 500, events)], start))
        for text in texts[events : events + decided]:
            normalised = comparison_form(text)
            stage.decided(candidate_id(normalised), normalised)
        times, size = [], 0
        for _ in range(repeats):
            started = time.perf_counter()
            snapshot = stage.state_snapshot()
            store.checkpoint({KEY: snapshot})
            stage.checkpointed()
            times.append(time.perf_counter() - started)
            size = len(json.dumps(snapshot, separators=(",", ":")).encode("utf-8"))
        store.close()
    return size / 1e6, statistics.median(times) * 1_000


def main(argv: Sequence[str] | None = None) -> None:
    """Print the snapshot's size and checkpoint milliseconds without and with decisions."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=5_000)
    parser.add_argument("--decided", type=int, default=5_000)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    texts = questions()
    for decided in (0, args.decided):
        mb, ms = checkpoint(args.events, decided, args.repeats, texts)
        print(f"{args.events:,} questions taken, {decided:,} decisions remembered: snapshot "
              f"{mb:.2f} MB, {ms:.1f} ms a snapshot and its checkpoint")  # fmt: skip


if __name__ == "__main__":
    main()
