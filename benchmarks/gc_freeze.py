"""Full garbage collections of the live engine, with and without freezing their survivors.

The engine of ``goldwatch serve`` (default analytics, harvest on, no broker) is fed the soak's
events (``benchmarks.soak``: a pool of 20,000 distinct events cycled, ids unique) in
250-event steps, each under :func:`consumers.loop.gc_paused` as the poll loop runs them, with a
checkpoint every 8 steps (about once a second at 2,000 events/s). Two runs in fresh
subprocesses: ``freeze`` (``gc_paused()``: the survivors of every full collection are frozen)
and ``plain`` (``gc_paused(freeze_survivors=False)``: the behaviour before).

Per run and generation: the number of collections and the longest (``gc.callbacks``, start
to stop; a collection holds the GIL throughout, so that is what an API request can wait), the
tracked objects left in the collected generations at the end (what the next full collection
walks), the frozen count at the end, and the *leak*: after the run, ``gc.unfreeze()`` and one
full collection return the unreachable objects that a freeze had hidden from the collector
(start-up objects frozen by ``freeze_heap`` included: the ``plain`` run shows that baseline).

Run: ``python -m benchmarks.gc_freeze --events 100000`` (about a minute per run).
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

#: Events per step: at 2,000 events/s the soak's polls return ~200 (``max_batch_wait_ms`` 100).
STEP = 250


def _one(events: int, freeze: bool) -> dict[str, Any]:
    """Feed ``events`` soak events to a fresh engine; return the collection figures."""
    from benchmarks.soak import POOL
    from benchmarks.streams import encode, query_log_events
    from consumers.base import Origin, RawMessage
    from consumers.loop import gc_paused
    from service.runtime.process import Runtime
    from service.settings import Settings

    work = Path(tempfile.mkdtemp(prefix="goldwatch-gc-"))
    settings = Settings.model_validate(
        {
            "source": {"kind": "none"},
            "pipeline": {"max_batch_size": STEP},
            "state": {"path": str(work / "state.sqlite")},
        }
    )
    runtime = Runtime(settings)  # freezes the start-up heap
    pool = query_log_events(POOL, seed=91)  # the producer's side: not the service's memory
    gc.collect()
    gc.freeze()
    frozen_at_start = gc.get_freeze_count()
    took: dict[int, list[float]] = {0: [], 1: [], 2: []}
    started: list[float] = []

    def timer(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            started.append(time.perf_counter())
        elif started:
            took[info["generation"]].append(time.perf_counter() - started.pop())

    gc.callbacks.append(timer)
    began = time.perf_counter()
    for step in range(events // STEP):
        with gc_paused(freeze_survivors=freeze):  # the poll is part of the loop's step too
            messages = []
            for i in range(step * STEP, (step + 1) * STEP):
                event = dict(pool[i % len(pool)])
                event["event_id"] = f"soak-{i}"
                event["timestamp"] = datetime.now(UTC).isoformat(timespec="milliseconds")
                origin = Origin(topic="soak", partition=i % 4, offset=i // 4)
                messages.append(RawMessage(encode(event), origin))
            runtime.engine.process(messages, "kafka")
            if step % 8 == 7:
                runtime.engine.checkpoint()
            del messages, event
    seconds = time.perf_counter() - began
    gc.callbacks.remove(timer)
    tracked = len(gc.get_objects())
    frozen_at_end = gc.get_freeze_count()
    gc.unfreeze()
    leaked = gc.collect()
    return {
        "mode": "freeze" if freeze else "plain",
        "events": events,
        "seconds": round(seconds, 1),
        "full_collections": len(took[2]),
        "full_ms_max": round(max(took[2], default=0.0) * 1000, 1),
        "gen1_collections": len(took[1]),
        "gen1_ms_max": round(max(took[1], default=0.0) * 1000, 1),
        "gen0_collections": len(took[0]),
        "gen0_ms_max": round(max(took[0], default=0.0) * 1000, 1),
        "tracked_unfrozen_at_end": tracked,
        "frozen_start": frozen_at_start,
        "frozen_end": frozen_at_end,
        "unreachable_after_unfreeze": leaked,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python -m benchmarks.gc_freeze --events N`` (both modes, a table)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--mode", choices=["freeze", "plain"], help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.mode:  # one run, in this (fresh) process
        print(json.dumps(_one(args.events, args.mode == "freeze")))
        return 0
    rows = []
    for mode in ("plain", "freeze"):
        command = [sys.executable, "-m", "benchmarks.gc_freeze", f"--events={args.events}"]
        out = subprocess.run([*command, f"--mode={mode}"], check=True, capture_output=True)
        rows.append(json.loads(out.stdout.decode().strip().splitlines()[-1]))
    keys = list(rows[0])
    width = max(map(len, keys))
    for key in keys:
        print(f"{key:<{width}}  " + "  ".join(f"{row[key]!s:>12}" for row in rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
