"""``benchmarks.bench_memory`` names what bounds each structure of the live pipeline.

Its table says, for each container that changes, the setting or constant that caps it,
matched by the end of the container's attribute path (:func:`~benchmarks.bench_memory.bounds`).
A name the code no longer has matches nothing and the table shows its structure as
"no known bound" (the twelfth session's near-duplicate index lost ``_trigram_ids``; its
rows, ``_row`` and the arrays, had no name). Checked on the live pipeline the demo builds
with the defaults, against an in-memory state store as ``goldwatch replay`` uses.
"""

from __future__ import annotations

import json
import re
from itertools import islice

import pytest
from prometheus_client import CollectorRegistry

from benchmarks.bench_memory import _accounting, _grouped, bounds, sqlite_state, structures
from service.demo import demo_data, demo_path
from service.events import QueryLogEvent
from service.runtime.live import build_live
from service.settings import load_settings
from service.state import StateStore

# a bound for a structure this code does not build by default, or keeps at module level
# under another name: (suffix, why it matches nothing in the demo's default live pipeline)
NOT_BUILT = {
    "_label_memo": "module-level memo of service.pii.scrub (walked from sys.modules)",
    "_text_memo": "module-level memo of service.pii.scrub (walked from sys.modules)",
}


@pytest.mark.slow  # builds the demo's live pipeline (its models): ~5 s
def test_every_named_bound_matches_a_structure_of_the_live_pipeline() -> None:
    settings = load_settings(demo_path("goldwatch.yaml"), **demo_data())
    store = StateStore.in_memory()
    live = build_live(settings, CollectorRegistry(), store)
    try:
        with demo_path("querylog.jsonl").open(encoding="utf-8") as lines:
            events = [QueryLogEvent.model_validate(json.loads(line)) for line in islice(lines, 200)]
        live.pipeline.process(events, "test")
        paths = set(structures(live)) | set(_grouped(structures(live)))
        named = bounds(settings.model_dump(mode="json"))
        unmatched = [s for s, _, _ in named
                     if s not in NOT_BUILT and not any(p.endswith(s) for p in paths)]  # fmt: skip
        assert unmatched == []
        # every container of the harvest's near-duplicate index has a name
        index = sorted(p for p in paths if re.search(r"\.harvest\.index\.[^.\[]+(\[\*\])?$", p))
        assert index, "the walk reaches the harvest's index"
        nameless = [p for p in index if not any(p.endswith(s) for s, _, _ in named)]
        assert nameless == []
    finally:
        live.close()
        store.close()


def test_sqlite_state_counts_the_stored_json_by_key_group() -> None:
    store = StateStore.in_memory()
    try:
        store.checkpoint({"harvest/candidate/a": "x" * 10, "harvest/candidate/b": [1, 2],
                          "harvest/snapshot": {"k": 1}, "offsets": 7})  # fmt: skip
        got = sqlite_state(store)
    finally:
        store.close()
    # compact JSON texts: '"xxxxxxxxxx"' 12 bytes, '[1,2]' 5, '{"k":1}' 7, '7' 1
    assert got["by_key"] == {"harvest/candidate": 17, "harvest/snapshot": 7, "offsets": 1}
    assert got["keys"] == 4 and got["page_size"] > 0 and got["pages"] >= 2
    assert 0 <= got["free_pages"] < got["pages"]


def test_the_growth_is_split_between_allocated_free_and_the_rest() -> None:
    first = {"rss": 1_000, "heap": {"uordblks": 100, "fordblks": 10, "hblkhd": 50},
             "pymalloc": {"arenas": 300, "allocated": 280},
             "sqlite": {"memory_used": 5}}  # fmt: skip
    last = {"rss": 1_200, "heap": {"uordblks": 150, "fordblks": 15, "hblkhd": 70},
            "pymalloc": {"arenas": 380, "allocated": 340},
            "sqlite": {"memory_used": 25}}  # fmt: skip
    # by hand: blocks 340-280, heap in use 150-100, mmap 70-50, free in arenas (380-340) -
    # (300-280), free in heap 15-10; the rest 200 - (60+50+20+20+5); SQLite 25-5, not added
    assert _accounting(first, last) == [
        ("pymalloc blocks", 60), ("glibc heap in use", 50), ("glibc mmap-ed", 20),
        ("free in pymalloc arenas", 20), ("free in glibc heap", 5), ("rest", 45),
        ("SQLite (in the glibc figures)", 20),
    ]  # fmt: skip
    assert _accounting({"rss": 1, "heap": {}}, {"rss": 2, "heap": {}}) == []
