"""The gold-set file poll (``Runtime._reload_if_changed``) racing a refresh an accept started.

The poll compared the file's key with the key of the last read *before* it took the lock the
refresh requests are counted under. A refresh that read the same file and ended in between
left the poll a stale key and no pending request, so it read the file a second time: one
more refresh counted (``gold_refreshes``, ``goldwatch_gold_refreshes_total``) for an edit
already served. In the API tests that share one server, that second reload landed in the
next test, counting one more refresh there (CI: ``6 == 4 + 1``; the tests now read the file
and wait for that refresh, which this race could still undo).

The interleaving is made exact, not waited for: the counter lock is wrapped so the whole
refresh runs just before the poll takes it.
"""

from __future__ import annotations

import os
import shutil
import threading
from pathlib import Path
from types import TracebackType

from prometheus_client import CollectorRegistry

from service.demo import demo_path
from service.runtime.process import Runtime
from service.settings import load_settings

REFRESH_THREAD = "goldwatch-gold-refresh"  # the name Runtime gives its refresh threads


def _refreshes_done() -> None:
    for thread in [t for t in threading.enumerate() if t.name == REFRESH_THREAD]:
        thread.join(120)
        assert not thread.is_alive(), "a gold-set refresh still running after 120 s"


class _RefreshFirst:
    """The runtime's refresh-counter lock, which runs a whole refresh (an accept's) just
    before the first ``with`` takes it, then acts as the real lock again."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self.real = runtime._refresh_counter_lock

    def __enter__(self) -> bool:
        self.runtime._refresh_counter_lock = self.real  # the refresh counts under the real one
        self.runtime.gold_accepted(None)
        _refreshes_done()
        return self.real.__enter__()

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.real.__exit__(kind, exc, tb)


def test_a_poll_racing_a_refresh_of_the_same_file_reads_it_once(tmp_path: Path) -> None:
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    events = tmp_path / "events.jsonl"
    events.write_text("", encoding="utf-8")
    settings = load_settings(gold_set=gold, source={"kind": "file", "path": events},
                             state={"path": tmp_path / "state.sqlite"})  # fmt: skip
    runtime = Runtime(settings, registry=CollectorRegistry())  # not started: no poll thread
    try:
        assert not runtime._reload_if_changed()  # unchanged since the start read it
        # a hand edit: the same rows, a later mtime (the key moves; exact, no clock needed)
        stat = gold.stat()
        os.utime(gold, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
        assert not runtime._reload_if_changed()  # first seen: read once it stays so
        runtime._refresh_counter_lock = _RefreshFirst(runtime)  # type: ignore[assignment]
        # the next poll sees the key unchanged since its last look and differing from the
        # read's before the refresh; the refresh then reads the file and ends
        assert not runtime._reload_if_changed()  # before: True, a second refresh
        _refreshes_done()
        assert runtime.gold_refreshes == 1
        assert runtime.gold_refresh_error is None
        assert not runtime._reload_if_changed()  # nothing left to read
        _refreshes_done()
        assert runtime.gold_refreshes == 1
    finally:
        runtime.stop()
