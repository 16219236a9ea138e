"""Memory over a long production-shaped replay: RSS and every bounded structure's fill, per tenth.

Issue 22 item 5: RSS flat after warm-up (≤ 5 % from the end of the first tenth to the end),
or every remaining growth explained and bounded by a setting. The soak
(``benchmarks.soak``) measures RSS of a real serve on Kafka but cannot say *what* grows;
this benchmark runs the same stages in ``goldwatch replay`` (``service.jobs.replay.run_replay``,
in a child process so RSS is the replay's alone) on the production-shaped log of
``benchmarks.bench_production`` (:func:`~benchmarks.bench_production.write_log`), and at the
end of each tenth of the events records:

* RSS (``VmRSS``), the glibc heap (``mallinfo2``: ``arena`` bytes obtained with ``brk``,
  ``uordblks`` in use, ``fordblks`` free inside it, ``hblkhd`` in ``mmap``-ed blocks),
  pymalloc's arenas and the bytes in their allocated blocks (``sys._debugmallocstats``) and
  its block count (``sys.getallocatedblocks``): free space growing inside the heap or the
  arenas while RSS grows is fragmentation, not a structure;
* every container of the live pipeline reachable from ``Live`` (stages, their caches and
  indexes; attributes walked to depth :data:`MAX_DEPTH`) and every module-level container
  or ``lru_cache`` of ``service.*``/``consumers.*``, shown when it holds at least
  :data:`MIN_ENTRIES` entries at some tenth and changes or has a known bound: its entry
  count, its bound (:func:`bounds`: the setting or constant that caps it) and an estimate of
  its size (the container plus the mean deep size of up to :data:`SAMPLE` of its entries ×
  its length; numpy arrays with their data);
* the state store's SQLite footprint (:func:`sqlite_state`): ``sqlite3_memory_used()`` (an
  in-memory state's pages are in RSS), its pages and free pages, and the stored JSON bytes by
  key group (the suggestion records, each stage's snapshot);
* optionally (``--tracemalloc-at 1,5,10``) the traced total and the top files of a
  ``tracemalloc`` snapshot at those tenths (tracing from the start: slow, use it on a
  shorter run).

Settings as serve's: ``harvest.max_new_per_batch`` is set to its default explicitly (a replay
otherwise lifts it; serve sheds), glibc's ``mmap`` threshold is fixed as serve fixes it
(``service.runtime.memory.fix_mmap_threshold``; ``--no-mmap-fix`` to leave it), and
``--set key=value`` (dotted paths, YAML values) changes any setting, e.g. the caches' sizes.
``--malloc-trim`` calls glibc's ``malloc_trim(0)`` after each tenth's measurement (its
effect shows in the next tenth); ``--env NAME=VALUE`` sets a variable for the child
(``MALLOC_ARENA_MAX=2``). ``--state-file`` keeps the state (checkpoints, the harvest's
published suggestions) in a SQLite file as serve does; without it, as ``goldwatch replay``
without ``--state``, in an in-memory database, whose pages are in RSS. ``--reference DIR``
runs the child on another copy of the code (``PYTHONPATH=DIR``), e.g. an untouched
checkout, for a same-run reference. ``--render FILE`` prints the table of a ``--json`` result.

Run: ``python -m benchmarks.bench_memory --events 1000000 [--workdir DIR] [--set
analytics.question_cache_size=1000] [--json out.json]``. The log is written once into
``--workdir`` (about 2.2 GB for 1,000,000 lines) and reused by later runs with the same
``--events``.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import yaml

DEFAULT_EVENTS = 200_000
#: Containers with fewer entries than this at every tenth are left out of the table.
MIN_ENTRIES = 1_000
#: Attribute depth walked from ``Live``.
MAX_DEPTH = 7
#: Entries sampled for a container's deep-size estimate.
SAMPLE = 64
TARGET_GROWTH = 0.05
HERE = Path(__file__).resolve()


# -- the child: one replay, measured -----------------------------------------------------------


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]  # fmt: skip


def _libc() -> Any:
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def heap() -> dict[str, int]:
    """glibc's ``mallinfo2`` (bytes; empty off glibc or before 2.33)."""
    libc = _libc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        return {}
    libc.mallinfo2.restype = _Mallinfo2
    info = libc.mallinfo2()
    return {k: int(getattr(info, k)) for k in ("arena", "uordblks", "fordblks", "hblkhd")}


def pymalloc() -> dict[str, int]:
    """pymalloc's arenas (``sys._debugmallocstats``, which writes to fd 2: read back from a
    temporary file): ``arenas`` bytes mapped, ``allocated`` bytes in allocated blocks.
    Arenas much larger than their allocated blocks are pymalloc fragmentation."""
    out: dict[str, int] = {}
    with tempfile.TemporaryFile() as tmp:
        sys.stderr.flush()
        saved = os.dup(2)
        try:
            os.dup2(tmp.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        tmp.seek(0)
        for line in tmp.read().decode("ascii", "replace").splitlines():
            if "=" not in line:
                continue
            name, value = (part.strip() for part in line.rsplit("=", 1))
            if name.endswith("bytes/arena"):
                out["arenas"] = int(value.replace(",", ""))
            elif name == "# bytes in allocated blocks":
                out["allocated"] = int(value.replace(",", ""))
    return out


def sqlite_state(store: Any) -> dict[str, Any]:
    """The state store's SQLite footprint: ``memory_used`` (``sqlite3_memory_used()``, bytes
    SQLite holds from the allocator in this process: an in-memory database's pages and every
    connection's page cache; -1 when the library cannot be loaded), ``pages`` and ``free_pages``
    (``PRAGMA page_count`` / ``freelist_count``), ``page_size`` (bytes), and ``by_key``:
    the JSON bytes stored per key group (the key's first two ``/``-separated parts)."""
    out: dict[str, Any] = {"memory_used": -1}
    try:
        lib = ctypes.CDLL("libsqlite3.so.0")
        lib.sqlite3_memory_used.restype = ctypes.c_int64
        out["memory_used"] = int(lib.sqlite3_memory_used())
    except (OSError, AttributeError):
        pass
    read = getattr(store, "_read", None)
    if read is None:
        return out
    for pragma in ("page_count", "freelist_count", "page_size"):
        out[{"page_count": "pages", "freelist_count": "free_pages"}.get(pragma, pragma)] = int(
            read(f"PRAGMA {pragma}", [])[0][0])  # fmt: skip
    by_key: dict[str, int] = {}
    for key, size in read("SELECT key, length(value) FROM state", []):
        group = "/".join(str(key).split("/")[:2])
        by_key[group] = by_key.get(group, 0) + int(size)
    out["by_key"] = by_key
    out["keys"] = int(read("SELECT count(*) FROM state", [])[0][0])
    return out


def rss_bytes() -> int:
    """This process's resident set size, from ``/proc/self/status`` (``VmRSS``)."""
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _snapshot(items: Callable[[], Any]) -> list[Any]:
    """``list(items())``, retried while another thread (a worker of the live pipeline) changes
    the container under the copy; ``[]`` if it keeps changing."""
    for _ in range(5):
        try:
            return list(items())
        except RuntimeError:  # "... changed size / mutated during iteration"
            continue
    return []


def deep_size(obj: Any, seen: set[int], depth: int = 0) -> int:
    """Bytes of ``obj`` and what it holds (``sys.getsizeof`` summed over the objects reached
    through containers, ``__dict__`` and ``__slots__``, each counted once via ``seen``;
    a numpy array with its data, a view with the array it pins; depth-limited at 12)."""
    if id(obj) in seen or depth > 12 or isinstance(obj, type | type(sys) | Callable):  # type: ignore[arg-type]
        return 0
    seen.add(id(obj))
    if hasattr(obj, "dtype") and isinstance(getattr(obj, "nbytes", None), int):
        # an array owning its data: getsizeof counts the data; a view: the array it pins
        base = getattr(obj, "base", None)
        return sys.getsizeof(obj) + (deep_size(base, seen, depth + 1) if base is not None else 0)
    size = sys.getsizeof(obj)
    if isinstance(obj, str | bytes | int | float | bool | type(None)):
        return size
    if isinstance(obj, dict):
        for key, value in _snapshot(obj.items):
            size += deep_size(key, seen, depth + 1) + deep_size(value, seen, depth + 1)
    elif isinstance(obj, list | tuple | set | frozenset) or type(obj).__name__ == "deque":
        for item in _snapshot(lambda: obj):
            size += deep_size(item, seen, depth + 1)
    else:
        attrs = getattr(obj, "__dict__", None)
        if attrs is not None:
            size += deep_size(attrs, seen, depth + 1)
        for slot in getattr(type(obj), "__slots__", ()):
            if hasattr(obj, slot):
                size += deep_size(getattr(obj, slot), seen, depth + 1)
    return size


def estimate(container: Any) -> int:
    """Estimated bytes of ``container``: itself plus the mean deep size of up to
    :data:`SAMPLE` evenly spread entries × its length (a numpy array: ``nbytes``). Objects
    the sampled entries share count once in the sample, so a value shared by every entry is
    counted about ``len / SAMPLE`` times over, not ``len`` times; objects shared with other
    structures (a suggestion id in several maps) count in each."""
    if hasattr(container, "nbytes") and hasattr(container, "dtype"):
        return int(container.nbytes)
    n = len(container)
    if n == 0:
        return sys.getsizeof(container)
    step = max(1, n // SAMPLE)
    items = _snapshot(container.items if isinstance(container, dict) else lambda: container)
    total, k = 0, 0
    seen: set[int] = set()  # an object the sampled entries share (a reason tuple) counts once
    held = []  # the sampled items stay alive: a freed one's id could be another's
    for i, item in enumerate(items):
        if i % step == 0:
            held.append(item)
            total += deep_size(item, seen)
            k += 1
            if k >= SAMPLE:
                break
    if k == 0:  # kept changing under the copy
        return sys.getsizeof(container)
    return sys.getsizeof(container) + round(total / k * n)


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    attrs = getattr(obj, "__dict__", None)
    if isinstance(attrs, dict):
        yield from ((f".{k}", v) for k, v in attrs.items())
    for slot in getattr(type(obj), "__slots__", ()):
        if isinstance(slot, str) and hasattr(obj, slot):
            yield f".{slot}", getattr(obj, slot)
    if isinstance(obj, list | tuple) and len(obj) < MIN_ENTRIES:
        yield from ((f"[{i}]", v) for i, v in enumerate(obj))
    if isinstance(obj, dict) and len(obj) < 64:
        yield from ((f"[{k!r}]", v) for k, v in obj.items() if isinstance(k, str | int))


def _is_container(obj: Any) -> bool:
    if isinstance(obj, type):
        return False
    if hasattr(obj, "dtype") and isinstance(getattr(obj, "nbytes", None), int):
        return True
    return isinstance(obj, dict | list | set | frozenset) or type(obj).__name__ == "deque"


def structures(live: Any) -> dict[str, dict[str, int]]:
    """``{path: {"n": entries, "bytes": estimate}}`` of the containers reachable from
    ``live`` (depth :data:`MAX_DEPTH`) and the module-level caches of ``service.*``.

    A path is the first attribute path that reaches the object (``pipeline.stages[3]._cache``);
    ``functools.lru_cache`` wrappers report their ``currsize`` (bytes not estimated: -1).
    """
    out: dict[str, dict[str, int]] = {}
    seen: set[int] = set()
    queue: list[tuple[str, Any, int]] = [("live", live, 0)]
    for name, module in sorted(sys.modules.items()):
        if name.startswith(("service.", "consumers.")):
            queue.append((name, module, MAX_DEPTH - 1))
    while queue:
        path, obj, depth = queue.pop(0)
        if id(obj) in seen or isinstance(obj, str | bytes | int | float | bool | type(None)):
            continue
        seen.add(id(obj))
        info = getattr(obj, "cache_info", None)
        if callable(info) and hasattr(obj, "cache_clear"):
            out[path] = {"n": int(info().currsize), "bytes": -1}
            continue
        if _is_container(obj):
            n = int(obj.size) if hasattr(obj, "dtype") else len(obj)  # an array: its items
            out[path] = {"n": n, "bytes": estimate(obj)}
        if depth >= MAX_DEPTH or isinstance(obj, type) and depth > 0:
            continue
        if type(obj).__name__ == "module":
            # a cached function imported under its own name (``from service.text.wording
            # import wording`` in service.harvest.labelling, which sorts first) is left to the
            # module that defines it: the path otherwise depended on which modules earlier
            # tests had imported; one cached here under a name of its own
            # (``_normalised = lru_cache(...)(normalise)``) is this module's
            members = [(f".{k}", v) for k, v in vars(obj).items()
                       if _is_container(v) or hasattr(v, "cache_info")
                       and not _imported(k, v, obj.__name__)]  # fmt: skip
        else:
            members = list(_children(obj))
        for key, value in members:
            queue.append((path + key, value, depth + 1))
    return out


def _imported(name: str, value: Any, module: str) -> bool:
    """``value`` is bound in ``module`` as ``name`` by an import of the same name from another
    module (its ``__name__`` is ``name``, its ``__module__`` another)."""
    return (
        getattr(value, "__name__", None) == name and getattr(value, "__module__", module) != module
    )


def _set(doc: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        doc = doc.setdefault(key, {})
    doc[last] = value


def child(args: argparse.Namespace) -> None:
    """Replay ``args.log`` with ``args.config``; print one JSON line per tenth."""
    if not args.no_mmap_fix:
        from service.runtime import memory

        fix = getattr(memory, "fix_mmap_threshold", None)
        if fix is not None:
            fix()
    tracing = set(args.tracemalloc_at)
    if tracing:
        import tracemalloc

        tracemalloc.start()
    from service.jobs import replay as replay_job
    from service.settings import load_settings

    settings = load_settings(args.config)
    total = args.expected
    libc = _libc() if args.malloc_trim else None
    state: dict[str, Any] = {"events": 0, "tenth": 1, "live": None, "store": None}
    started = time.perf_counter()
    original_build, original_freeze = replay_job.build_live, replay_job.freeze_heap

    def emit(label: str, tenth: int) -> None:
        gc.collect()
        row: dict[str, Any] = {
            "tenth": tenth, "label": label, "events": state["events"], "rss": rss_bytes(),
            "heap": heap(), "blocks": sys.getallocatedblocks(), "pymalloc": pymalloc(),
            "s": round(time.perf_counter() - started, 1),
            "cpu_s": round(time.process_time(), 1), "load": os.getloadavg()[0],
        }  # fmt: skip
        if state["live"] is not None and tenth > 0:
            row["structures"] = structures(state["live"])
        if state["store"] is not None:
            row["sqlite"] = sqlite_state(state["store"])
        if tenth in tracing:
            import tracemalloc

            snapshot = tracemalloc.take_snapshot()
            stats = snapshot.statistics("filename")
            row["traced"] = sum(s.size for s in stats)
            row["traced_top"] = [(s.traceback[0].filename, s.size) for s in stats[:25]]
        print(json.dumps(row), flush=True)
        if libc is not None:
            libc.malloc_trim(0)

    def build(*a: Any, **k: Any) -> Any:
        live = original_build(*a, **k)
        state["live"] = live
        state["store"] = a[2] if len(a) > 2 else k.get("state")
        observe = live.observe

        def counted(batch: Any) -> None:
            observe(batch)
            state["events"] += len(batch.events)
            while state["tenth"] <= 10 and state["events"] >= total * state["tenth"] / 10:
                emit(f"tenth {state['tenth']}", state["tenth"])
                state["tenth"] += 1

        live.observe = counted
        return live

    def freeze() -> None:
        original_freeze()
        emit("start-up", 0)

    replay_job.build_live, replay_job.freeze_heap = build, freeze  # type: ignore[assignment]
    state_path = Path(args.workdir) / f"state-{os.getpid()}.sqlite" if args.state_file else None
    report = replay_job.run_replay(settings, Path(args.log), state_path,
                                   Path(args.workdir) / "dlq")  # fmt: skip
    if state_path is not None:
        for leftover in state_path.parent.glob(f"{state_path.name}*"):
            if leftover.is_file():
                leftover.unlink()
    if state["tenth"] <= 10:  # fewer events than expected reached the observer
        emit(f"end ({state['events']:,} events)", 10)
    print(json.dumps({"done": True, "processed": report["processed"],
                      "suggestions": (report.get("gold_candidates") or {}).get("n_suggestions"),
                      "rss": rss_bytes()}), flush=True)  # fmt: skip


# -- the parent: inputs, the child, the table --------------------------------------------------


def bounds(settings: dict[str, Any]) -> list[tuple[str, str, int]]:
    """``(path suffix, what bounds it, bound)`` for the structures this benchmark knows,
    with the bound read from ``settings`` (the effective configuration as a dict) or the
    code's constant (then named ``module.CONSTANT``; 0: the bound is another structure's)."""
    an, hv = settings["analytics"], settings["harvest"]
    q, lang = an["question_cache_size"], an["language"]["cache_size"]
    suggestions, batch = hv["max_suggestions"], settings["pipeline"]["max_batch_size"]
    # before this benchmark the PII memos and live quality's recent events had constants
    pii = ("analytics.pii_memo_size", an["pii_memo_size"]) if "pii_memo_size" in an else (
        "pii.scrub._MEMO_SIZE", 65_536)  # fmt: skip
    known = settings["shadow"].get("known_recent_events")
    quality = ("shadow.known_recent_events", known) if known else (
        "LiveQualityStage max_events", 100_000)  # fmt: skip
    return [
        ("recent._ids", "pipeline.dedup_window", settings["pipeline"]["dedup_window"]),
        ("recent._order", "pipeline.dedup_window (+ stale)", settings["pipeline"]["dedup_window"]),
        # the shared embedder, reached as the out-of-scope detector's (and harvest's) embedder
        ("embedder._cache", "analytics.embeddings.cache_size", an["embeddings"]["cache_size"]),
        # the nearest-similarity memo: one digest per reference (gold) matrix alive, the
        # dead ones dropped at the next digest; its last batch's values at most a batch
        ("embedder.nearest._digests", "reference matrices alive (gold vectors)", 0),
        ("harvest._recent", "harvest.recent_events", hv["recent_events"]),
        ("harvest._shed_reasons", "harvest.recent_events", hv["recent_events"]),
        ("harvest.suggestions", "harvest.max_suggestions", suggestions),
        # the near-duplicate index: one entry per key (held suggestion or gold question);
        # its rows (arrays, _keys) are reused when freed and double when full, so they stay
        # within twice the most keys held at once
        ("harvest.index._grams", "harvest.max_suggestions (+ gold)", suggestions),
        ("harvest.index._row", "harvest.max_suggestions (+ gold)", suggestions),
        # the LSH band tables: one entry per band of each row, freed rows' entries at most
        # as many as the live ones (then rebuilt)
        ("harvest.index._band_keys", "2 × bands × most keys held", 0),
        ("harvest.index._band_rows", "2 × bands × most keys held", 0),
        ("harvest.index._delta_keys", "a quarter of _band_keys + a batch's", 0),
        ("harvest.index._delta_rows", "a quarter of _band_keys + a batch's", 0),
        ("harvest.index._values", "2 × most keys held × bands × rows", 0),
        ("harvest.index._live", "2 × most keys held (rows)", 0),
        ("harvest.index._added", "rows stored since a batch", 0),
        ("harvest.index._added[*]", "a stored row's band values (bands × rows)", 0),
        ("harvest.index._removed", "rows freed since a batch", 0),
        # the index's permutations are neardup._permutations' cached array (reached first
        # under the module's name when a restore built the index from the cached parameters)
        ("._permutations", "2 × num_perm (fixed)", 0),
        ("harvest.index._keys", "2 × most keys held (rows)", 0),
        ("harvest.index._matrix", "2 × most keys held × dim", 0),
        ("harvest.index._serials", "2 × most keys held (rows)", 0),
        ("harvest.index._sizes", "2 × most keys held (rows)", 0),
        ("harvest.index._words", "2 × most keys held × 8", 0),
        ("harvest.index._free", "2 × most keys held (rows)", 0),
        ("harvest.index._unwritten", "rows stored since a batch", 0),
        ("harvest.index._batch_keys", "pipeline.max_batch_size", batch),
        ("harvest._exact", "harvest._EXACT_CACHE (with _known)", 200_000),
        ("harvest._known", "harvest._EXACT_CACHE (with _exact)", 200_000),
        ("harvest._normal", "harvest._NORMAL_CACHE", 20_000),
        ("scores._recent[*]", "harvest.score_window", hv["score_window"]),
        ("scores._sorted[*]", "harvest.score_window", hv["score_window"]),
        ("quality._recent", *quality),
        # the production scores of the remembered events: a subset of quality._recent's keys
        ("quality._recent_scores", f"{quality[0]} (a subset of _recent)", quality[1]),
        ("harvest._order", "harvest.max_suggestions (ids)", suggestions),
        ("harvest._dirty", "harvest.max_suggestions (ids)", suggestions),
        ("harvest._stale", "harvest.max_suggestions (ids)", suggestions),
        ("harvest._held", "harvest.max_suggestions (ids)", suggestions),
        ("harvest._exact_of", "harvest.max_suggestions (ids)", suggestions),
        ("suggestion._normalised", "harvest.suggestion lru_cache", 8_192),
        # one shared string per passage id: emptied at _SHARED_IDS, so fewer than that plus
        # one ranking's ids
        ("suggestion._PASSAGE_IDS", "harvest.suggestion._SHARED_IDS (+ one ranking)", 16_384),
        ("cache._data", "analytics.question_cache_size", q),
        ("verdicts._data", "analytics.question_cache_size", q),
        ("index._asked._data", "analytics.question_cache_size", q),
        ("language_stage._labels", "analytics.language.cache_size", lang),
        ("detector._cached", "analytics.language.cache_size", lang),
        ("detector._cached_prior", "analytics.language.cache_size", lang),
        ("detector._cached_confident", "analytics.language.cache_size", lang),
        ("detector._cached_label", "analytics.language.cache_size", lang),
        ("wording.wording", "text.wording lru_cache", 1 << 14),
        ("pseudonymiser._memo", *pii),
        ("memo._texts", *pii),
        ("_text_memo", *pii),
        ("_label_memo", "pii.scrub._MEMO_SIZE", 65_536),
        ("detector._memo", "RefusalDetector memo_size", 4_096),
    ]


def _accounting(first: dict[str, Any], last: dict[str, Any]) -> list[tuple[str, int]]:
    """Where the RSS growth from row ``first`` to row ``last`` went, in bytes: allocated
    (pymalloc's blocks; glibc's in-use heap, SQLite's memory part of it; glibc's ``mmap``-ed
    blocks), free inside the allocators (pymalloc's arenas, which it maps itself, not in
    blocks; glibc's heap), and the rest of RSS (code, stacks, other mappings; negative when
    freed pages are still counted as allocated). Empty when a row lacks the allocator figures
    (off glibc)."""
    h0, h1 = first.get("heap", {}), last.get("heap", {})
    p0, p1 = first.get("pymalloc", {}), last.get("pymalloc", {})
    if not all(k in h0 and k in h1 for k in ("uordblks", "fordblks", "hblkhd")) or not all(
            k in p0 and k in p1 for k in ("arenas", "allocated")):  # fmt: skip
        return []
    out = [
        ("pymalloc blocks", p1["allocated"] - p0["allocated"]),
        ("glibc heap in use", h1["uordblks"] - h0["uordblks"]),
        ("glibc mmap-ed", h1["hblkhd"] - h0["hblkhd"]),
        ("free in pymalloc arenas",
         (p1["arenas"] - p1["allocated"]) - (p0["arenas"] - p0["allocated"])),
        ("free in glibc heap", h1["fordblks"] - h0["fordblks"]),
    ]  # fmt: skip
    out.append(("rest", last["rss"] - first["rss"] - sum(v for _, v in out)))
    sq0 = first.get("sqlite", {}).get("memory_used", -1)
    sq1 = last.get("sqlite", {}).get("memory_used", -1)
    if sq0 >= 0 and sq1 >= 0:  # inside glibc's heap and mmap-ed blocks: not added again
        out.append(("SQLite (in the glibc figures)", sq1 - sq0))
    return out


def _grouped(row: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Paths differing only in a trailing ``[i]`` / ``['x']`` summed as ``prefix[*]``."""
    out: dict[str, dict[str, int]] = {}
    for path, s in row.items():
        key = re.sub(r"\[[^\]]*\]$", "[*]", path)
        into = out.setdefault(key, {"n": 0, "bytes": 0})
        into["n"] += s["n"]
        into["bytes"] = -1 if s["bytes"] < 0 or into["bytes"] < 0 else into["bytes"] + s["bytes"]
    return out


def effective_settings(config: Path, python_path: str) -> dict[str, Any]:
    """The effective settings of ``config`` (``model_dump``), loaded with ``python_path``."""
    code = ("import json,sys; from service.settings import load_settings; "
            "print(json.dumps(load_settings(sys.argv[1]).model_dump(mode='json')))")  # fmt: skip
    env = {**os.environ, "PYTHONPATH": python_path}
    done = subprocess.run([sys.executable, "-c", code, str(config)], capture_output=True,
                          text=True, check=True, env=env)  # fmt: skip
    return json.loads(done.stdout)


def prepare(events: int, workdir: Path, overrides: Sequence[str]) -> tuple[Path, Path, int]:
    """Write (or reuse) the log, the gold set and corpus, and the configuration.

    Returns ``(config, log, good events expected)``."""
    from benchmarks.bench_production import (
        BAD_SHARE,
        DUPLICATE_SHARE,
        write_gold_and_corpus,
        write_log,
    )

    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / f"production-{events}.jsonl"
    if not log.exists():
        partial = log.with_suffix(".partial")
        write_log(partial, events)
        partial.rename(log)
    gold, corpus = write_gold_and_corpus(workdir)
    doc: dict[str, Any] = {"gold_set": str(gold), "corpus": str(corpus),
                           "harvest": {"max_new_per_batch": 48}}  # fmt: skip
    for item in overrides:
        key, _, value = item.partition("=")
        _set(doc, key, yaml.safe_load(value))
    name = "config-" + "-".join(o.replace("=", "_") for o in overrides) if overrides else "config"
    config = workdir / f"{name[:150]}.yaml"
    config.write_text(yaml.safe_dump(doc), encoding="utf-8")
    expected = events - round(events * DUPLICATE_SHARE) - round(events * BAD_SHARE)
    return config, log, expected


def run(events: int, workdir: Path, overrides: Sequence[str] = (), reference: Path | None = None,
        tracemalloc_at: Sequence[int] = (), malloc_trim: bool = False, mmap_fix: bool = True,
        env: dict[str, str] | None = None, state_file: bool = False) -> dict[str, Any]:  # fmt: skip
    """Run one measured replay in a child; return ``{"rows", "done", "settings", ...}``."""
    config, log, expected = prepare(events, workdir, overrides)
    python_path = str(reference) if reference else str(HERE.parents[1])
    command = [sys.executable, str(HERE), "--child", "--config", str(config), "--log", str(log),
               "--expected", str(expected), "--workdir", str(workdir),
               "--tracemalloc-at", ",".join(map(str, tracemalloc_at))]  # fmt: skip
    if malloc_trim:
        command.append("--malloc-trim")
    if not mmap_fix:
        command.append("--no-mmap-fix")
    if state_file:
        command.append("--state-file")
    child_env = {**os.environ, **(env or {}), "PYTHONPATH": python_path}
    done = subprocess.run(command, capture_output=True, text=True, env=child_env, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"bench_memory child failed: {done.stderr[-3000:]}")
    rows = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return {"rows": [r for r in rows if "tenth" in r], "done": rows[-1],
            "settings": effective_settings(config, python_path), "overrides": list(overrides),
            "reference": str(reference) if reference else None, "events": events,
            "malloc_trim": malloc_trim, "mmap_fix": mmap_fix, "env": env or {},
            "state_file": state_file}  # fmt: skip


def render(result: dict[str, Any]) -> str:
    """The per-tenth table: RSS, heap, and each structure's entries / bound and MB."""
    rows = [r for r in result["rows"] if r["tenth"] > 0]
    start = next(r for r in result["rows"] if r["tenth"] == 0)
    mb = 2**20
    what = ", ".join(result["overrides"]) or "defaults"
    extra = [k for k in ("reference",) if result.get(k)]
    lines = [f"{result['events']:,} lines, {what}"
             + (f"; code: {result['reference']}" if extra else "")
             + ("; malloc_trim after each tenth" if result["malloc_trim"] else "")
             + ("" if result["mmap_fix"] else "; mmap threshold not fixed")
             + ("; state in a file" if result.get("state_file") else "; state in memory")
             + "".join(f"; {k}={v}" for k, v in result["env"].items())]  # fmt: skip
    head = f"{'':38}{'start':>9}" + "".join(f"{r['tenth']:>10}" for r in rows)
    lines.append(head)

    def line(label: str, values: list[str], first: str = "") -> None:
        lines.append(f"{label[:38]:38}{first:>9}" + "".join(f"{v:>10}" for v in values))

    line("events", [f"{r['events']:,}" for r in rows], "0")
    line("RSS MiB", [f"{r['rss'] / mb:.1f}" for r in rows], f"{start['rss'] / mb:.1f}")
    glibc = (("arena", "glibc heap (brk) MiB"), ("uordblks", "  in use MiB"),
             ("fordblks", "  free inside MiB"), ("hblkhd", "glibc mmap-ed MiB"))  # fmt: skip
    for key, label in glibc:
        if key in start["heap"]:
            line(label, [f"{r['heap'][key] / mb:.1f}" for r in rows],
                 f"{start['heap'][key] / mb:.1f}")  # fmt: skip
    arenas = (("arenas", "pymalloc arenas MiB"), ("allocated", "  in allocated blocks MiB"))
    for key, label in arenas:
        if key in start.get("pymalloc", {}):
            line(label, [f"{r['pymalloc'][key] / mb:.1f}" for r in rows],
                 f"{start['pymalloc'][key] / mb:.1f}")  # fmt: skip
    line("pymalloc blocks (k)", [f"{r['blocks'] / 1000:.0f}" for r in rows],
         f"{start['blocks'] / 1000:.0f}")  # fmt: skip
    if "sqlite" in start:
        sqlite = [r.get("sqlite", {}) for r in rows]
        line("SQLite memory used MiB",
             [f"{q['memory_used'] / mb:.1f}" if q.get("memory_used", -1) >= 0 else ""
              for q in sqlite], f"{start['sqlite']['memory_used'] / mb:.1f}")  # fmt: skip
        line("  state pages MiB (free pages MiB)",
             [f"{q['pages'] * q['page_size'] / mb:.0f} "
              f"({q['free_pages'] * q['page_size'] / mb:.0f})" if "pages" in q else ""
              for q in sqlite])  # fmt: skip
        groups = sorted({g for q in sqlite for g in q.get("by_key", {})},
                        key=lambda g: -sqlite[-1].get("by_key", {}).get(g, 0))  # fmt: skip
        for group in groups[:4]:
            line(f"  {group} JSON MiB",
                 [f"{q.get('by_key', {}).get(group, 0) / mb:.1f}" for q in sqlite])  # fmt: skip
    if any("traced" in r for r in rows):
        line("tracemalloc traced MiB",
             [f"{r['traced'] / mb:.1f}" if "traced" in r else "" for r in rows])  # fmt: skip
    line("load average (1 min)", [f"{r['load']:.1f}" for r in rows], f"{start['load']:.1f}")
    known = bounds(result["settings"])
    grouped = [_grouped(r["structures"]) for r in rows]
    paths = sorted({p for g in grouped for p, s in g.items() if s["n"] >= MIN_ENTRIES})
    total, static = [0] * len(rows), [0] * len(rows)
    lines.append("structures that change: entries, then ≤ bound (what sets it) and estimated "
                 "MiB; lru_cache wrappers: entries only")  # fmt: skip
    for path in paths:
        counts = [g.get(path, {"n": 0})["n"] for g in grouped]
        sizes = [g.get(path, {"bytes": -1})["bytes"] for g in grouped]
        bound = next(((b, n) for suffix, b, n in known if path.endswith(suffix)), None)
        if bound is None and len(set(counts)) == 1:
            static = [t + max(0, z) for t, z in zip(static, sizes, strict=True)]
            continue
        total = [t + max(0, z) for t, z in zip(total, sizes, strict=True)]
        line(path[-38:], [f"{c:,}" for c in counts])
        what = f"  ≤ {bound[1]:,} {bound[0]}" if bound else "  ≤ ? (no known bound)"
        line(what[:38], [f"{z / mb:.1f}" if z >= 0 else "" for z in sizes])
    line("changing structures, est. MiB in all", [f"{t / mb:.1f}" for t in total])
    line("static structures (models, indexes)", [f"{t / mb:.1f}" for t in static])
    first, last = rows[0]["rss"], rows[-1]["rss"]
    growth = (last - first) / first
    verdict = "met" if growth <= TARGET_GROWTH else "NOT met"
    lines.append(f"RSS end of the first tenth -> end: {first / mb:.1f} -> {last / mb:.1f} MiB "
                 f"({100 * growth:+.1f} %; target <= +{100 * TARGET_GROWTH:.0f} %: {verdict}); "
                 f"structures {total[0] / mb:.1f} -> {total[-1] / mb:.1f} MiB "
                 f"({(total[-1] - total[0]) / mb:+.1f}); replay {rows[-1]['s']} s")  # fmt: skip
    accounted = _accounting(rows[0], rows[-1])
    if accounted:
        lines.append("of it (MiB): " + ", ".join(f"{k} {v / mb:+.1f}" for k, v in accounted))
    for r in rows:
        if "traced_top" in r:
            lines.append(f"tracemalloc at tenth {r['tenth']}, top files (MiB):")
            lines += [f"  {size / mb:7.1f}  {name}" for name, size in r["traced_top"][:15]]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """Command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--events", type=int, default=DEFAULT_EVENTS)
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="a setting (dotted path, YAML value); repeatable")  # fmt: skip
    parser.add_argument("--reference", type=Path, help="run this copy of the code instead")
    parser.add_argument("--tracemalloc-at", default="",
                        type=lambda s: [int(x) for x in s.split(",") if x])  # fmt: skip
    parser.add_argument("--malloc-trim", action="store_true")
    parser.add_argument("--no-mmap-fix", action="store_true")
    parser.add_argument("--state-file", action="store_true",
                        help="keep the state in a SQLite file, as serve does (default: in "
                             "memory, as goldwatch replay without --state)")  # fmt: skip
    parser.add_argument("--env", action="append", default=[], metavar="NAME=VALUE",
                        help="a variable for the child: MALLOC_ARENA_MAX=2")  # fmt: skip
    parser.add_argument("--json", type=Path, help="also write the raw result here")
    parser.add_argument("--render", type=Path, help="print the table of a saved --json result")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--log", help=argparse.SUPPRESS)
    parser.add_argument("--expected", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        child(args)
        return
    if args.render:
        print(render(json.loads(args.render.read_text(encoding="utf-8"))))
        return
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="gw-bench-memory-"))
    env = dict(item.split("=", 1) for item in args.env)
    result = run(args.events, workdir, args.set, args.reference, args.tracemalloc_at,
                 args.malloc_trim, not args.no_mmap_fix, env, args.state_file)  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result), encoding="utf-8")
    print(render(result))


if __name__ == "__main__":
    if str(HERE.parents[1]) not in sys.path and "--child" not in sys.argv:
        sys.path.insert(0, str(HERE.parents[1]))
    if "--child" in sys.argv:  # this file's folder is not a package root for the child
        sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != HERE.parent]
    main()
