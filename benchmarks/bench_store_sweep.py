"""Cost of the suggestion store's sweep per checkpoint: milliseconds of one
``StateStore.checkpoint`` writing the harvest stage's snapshot, with ``N`` suggestion records
stored and held, when the checkpoint sweeps and when it skips the sweep.

Each checkpoint that writes the harvest snapshot used to sweep (``harvest/candidate/<id>``
keys not named by the snapshot and without a decision are deleted: a scan of every record);
now it sweeps only after an eviction, or first after a start or restore
(:func:`service.harvest.store.candidate_sweep`). HTTP trace ingest checkpoints once per
request, so a checkpoint with nothing evicted is the common case. The state is a SQLite file
(``synchronous=FULL``, as serve's); each record is 1.1 KB of JSON (a record after 20,000
production-shaped events, ``docs/runbook.md``); the snapshot lists the ``N`` ids and carries
none in full (all clean). The median of ``--repeats`` checkpoints is shown.

Run: ``python -m benchmarks.bench_store_sweep [--held 5500 100000] [--repeats 15]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from service.harvest.store import CANDIDATE_PREFIX, candidate_sweep
from service.state import StateStore

KEY = "stage/harvest"
RECORD_PAD = 1_050  # characters: with the id, ~1.1 KB of JSON a record


def checkpoint_ms(held: int, sweep: bool, repeats: int) -> float:
    """Median milliseconds of one checkpoint writing a snapshot of ``held`` (≥ 0) ids that
    asks for a sweep (``sweep``) or not, over ``repeats`` (≥ 1) checkpoints."""
    with tempfile.TemporaryDirectory(prefix="gw-bench-sweep-") as tmp:
        store = StateStore.open(Path(tmp) / "state.sqlite")
        store.add_sweep(candidate_sweep(KEY))
        ids = [f"c-{i:016x}" for i in range(held)]
        for start in range(0, held, 5_000):
            store.checkpoint({CANDIDATE_PREFIX + sid: {"id": sid, "pad": "x" * RECORD_PAD}
                              for sid in ids[start : start + 5_000]})  # fmt: skip
        snapshot = {"version": 2, "ids": ids, "suggestions": [], "sweep": sweep}
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            store.checkpoint({KEY: snapshot, "stage/count": {"processed": 1}})
            times.append(time.perf_counter() - started)
        assert len(store.keys(CANDIDATE_PREFIX)) == held and store.swept == 0
        store.close()
    return statistics.median(times) * 1_000


def main(argv: Sequence[str] | None = None) -> None:
    """Print, per ``--held``, the checkpoint's milliseconds with and without the sweep."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--held", type=int, nargs="+", default=[5_500, 100_000])
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args(argv)
    for held in args.held:
        swept = checkpoint_ms(held, True, args.repeats)
        skipped = checkpoint_ms(held, False, args.repeats)
        print(f"{held:,} records held: {swept:.1f} ms a checkpoint that sweeps, "
              f"{skipped:.1f} ms one that skips it (nothing evicted since)")  # fmt: skip


if __name__ == "__main__":
    main()
