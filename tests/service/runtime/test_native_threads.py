"""``pipeline.native_threads``: the live path's maths libraries run on that many threads
(OpenBLAS's busy-waiting workers otherwise burn a second core; see
:func:`service.runtime.threads.native_threads`), and the limits are restored afterwards.

A custom stage (``pipeline.extra_stages``) records, while a replay runs it, the thread
count ``threadpoolctl`` reports for every loaded BLAS library (numpy's OpenBLAS, loaded and
set to two threads by the fixture, whatever the machine's default).
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any, ClassVar

import pytest
from threadpoolctl import threadpool_info, threadpool_limits

from service.jobs.replay import run_replay
from service.pipeline import Batch, PipelineConfig, StatelessStage
from service.runtime.threads import native_threads
from service.settings import load_settings

SPEC = "tests.service.runtime.test_native_threads:RecordThreads"


def _blas_threads() -> set[int]:
    return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}


class RecordThreads(StatelessStage):
    """A stage noting the BLAS thread counts seen while the pipeline runs."""

    name = "record_threads"
    seen: ClassVar[list[set[int]]] = []

    def process(self, batch: Batch) -> None:
        RecordThreads.seen.append(_blas_threads())


@pytest.fixture
def many_threads() -> Any:
    """BLAS at two threads before the replay, whatever the machine's default."""
    import numpy  # noqa: F401  (loads OpenBLAS)

    with threadpool_limits(limits=2, user_api="blas"):
        assert _blas_threads() == {2}
        yield


def _replay(tmp_path: Path, **pipeline: Any) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"event_id": f"e{i}", "timestamp": "2026-11-20T10:00:00Z",
                                        "question": f"when does the library open {i}"}) + "\n"
                           for i in range(3)), encoding="utf-8")  # fmt: skip
    settings = load_settings(None, analytics={"enabled": False},  # the limit is the path's
                             pipeline={"extra_stages": [SPEC], **pipeline})  # fmt: skip
    RecordThreads.seen.clear()
    run_replay(settings, log, None, tmp_path / "dlq.jsonl")


def test_a_replay_runs_its_stages_on_one_blas_thread_and_restores_the_limit(
    tmp_path: Path, many_threads: None
) -> None:
    _replay(tmp_path)
    assert RecordThreads.seen and all(seen == {1} for seen in RecordThreads.seen)
    assert _blas_threads() == {2}  # as before the replay


def test_null_leaves_the_libraries_threads_alone(tmp_path: Path, many_threads: None) -> None:
    _replay(tmp_path, native_threads=None)
    assert RecordThreads.seen and all(seen == {2} for seen in RecordThreads.seen)


def test_the_setting_is_validated() -> None:
    assert PipelineConfig().native_threads == 1
    with pytest.raises(ValueError, match="native_threads"):
        PipelineConfig(native_threads=0)


def test_the_context_manager_limits_and_restores(many_threads: None) -> None:
    with native_threads(1):
        assert _blas_threads() == {1}
    assert _blas_threads() == {2}
    with native_threads(None):
        assert _blas_threads() == {2}


def _one_event_settings(tmp_path: Path) -> Any:
    """Serve settings reading a one-event file (analytics off: only the stage under test)."""
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"event_id": "e1", "timestamp": "2026-11-20T10:00:00Z",
                               "question": "when does the library open"}) + "\n",
                   encoding="utf-8")  # fmt: skip
    return load_settings(state={"path": tmp_path / "state.sqlite"},
                         source={"kind": "file", "path": log, "follow": False},
                         analytics={"enabled": False})  # fmt: skip


def _wait_processed(client: Any) -> None:
    """Until ``/v1/status`` counts the event processed (fail after 30 s)."""
    deadline = time.monotonic() + 30
    while not client.get("/v1/status").json()["totals"]["processed"]:
        assert time.monotonic() < deadline, "the event was not processed within 30 s"
        time.sleep(0.05)


def test_serve_runs_its_stages_on_one_blas_thread_until_it_stops(
    tmp_path: Path, many_threads: None
) -> None:
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from service.runtime.process import Runtime

    settings = _one_event_settings(tmp_path)
    RecordThreads.seen.clear()
    runtime = Runtime(settings, stages=[RecordThreads()])
    with TestClient(create_app(settings, runtime)) as client:
        _wait_processed(client)
        assert _blas_threads() == {1}  # while the service runs
    assert RecordThreads.seen and all(seen == {1} for seen in RecordThreads.seen)
    # (not asserted: the limit lifted at stop — TestClient stops the app in another thread
    # than the one that started it, and OpenBLAS ignores a raise of its thread count made
    # from another thread; a stopped service's process ends anyway)


class RecordTorchThreads(StatelessStage):
    """A stage noting torch's intra-op thread count on the thread that runs the stages."""

    name = "record_torch_threads"
    seen: ClassVar[list[int]] = []

    def process(self, batch: Batch) -> None:
        import torch

        RecordTorchThreads.seen.append(torch.get_num_threads())


@pytest.mark.slow  # imports torch (~3-10 s on a loaded machine)
def test_serve_runs_torch_on_one_thread_on_its_consumer_thread(tmp_path: Path) -> None:
    """The ``minilm``/``sentence-transformers`` backends embed with torch on the consumer
    thread; threadpoolctl's OpenMP limit holds only on the thread that set it, so torch's own
    limit is set too (it was 2 there before: one thread spinning on the second core)."""
    torch = pytest.importorskip("torch")  # the 'embeddings' extra (.ci/run installs it)
    from fastapi.testclient import TestClient

    from service.api.app import create_app
    from service.runtime.process import Runtime

    settings = _one_event_settings(tmp_path)
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # whatever the machine's core count
    RecordTorchThreads.seen.clear()
    try:
        runtime = Runtime(settings, stages=[RecordTorchThreads()])
        with TestClient(create_app(settings, runtime)) as client:
            _wait_processed(client)
        assert RecordTorchThreads.seen and set(RecordTorchThreads.seen) == {1}
    finally:
        torch.set_num_threads(before)
