"""The circuit breaker gates the queued backlog, not only new offers (trial 43 M3): real HTTP
candidates on 127.0.0.1 that fail on every call (HTTP 500, or hang past the timeout)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.pipeline import Batch
from service.retrievers.base import RetrieverError
from service.retrievers.http import HttpRetriever
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
from service.shadow.stage import ShadowStage
from tests.service.retrievers.retriever_fakes import FakeServer, Reply, serve
from tests.service.shadow.shadow_fakes import PRODUCTION, docs, make_event


@pytest.fixture
def failing_server() -> Iterator[FakeServer]:
    with serve() as server:
        server.responder = lambda payload: Reply(500, b'{"error": "boom"}')
        yield server


@pytest.fixture
def hanging_server() -> Iterator[FakeServer]:
    release = threading.Event()

    def hang(payload: dict[str, Any]) -> Reply:
        release.wait(120)  # released after the test; 120 s: a bound, should that not come
        return Reply()

    with serve() as server:
        server.responder = hang
        yield server
        release.set()


def test_replay_of_a_failing_candidate_makes_only_the_calls_that_open_the_breaker(
    failing_server: FakeServer,
) -> None:
    # A replay (backpressure, synchronous stage) offers all 300 events of the batch while
    # the breaker is still closed: on main every one was called (300 requests, 300 errors).
    # One worker calls them in queue order; the 5th consecutive failure opens the breaker
    # (failure_threshold 5, cool-down far beyond the test), and the 295 still queued are
    # dropped uncalled: 5 requests, errors http_error 5, skipped breaker_open 295.
    retriever = HttpRetriever(failing_server.url, name="err", timeout_s=2.0, retries=0)
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(CandidateConfig(name="err", max_concurrency=1, queue_size=1_000,
                                    failure_threshold=5, cooldown_s=3_600),),
    )  # fmt: skip
    with ShadowRunner(config, {"err": retriever}, backpressure=True) as runner:
        stage = ShadowStage(runner, synchronous=True)
        stage.process(Batch.of([make_event(i) for i in range(300)], source="test"))
        report = stage.report()["candidates"]["err"]
    assert len(failing_server.requests) == 5
    assert report["errors"] == {"http_error": 5}
    assert report["skipped"] == {"breaker_open": 295}
    assert report["queued"] == 5 and report["in_flight"] == 0 and report["offered"] == 300
    # the 5th event (e-4, timestamp 1_795_946_400 + 4) opened it
    assert stage.cut_off_notices() == [
        "shadow candidate 'err' was cut off by its circuit breaker at event e-4 "
        "(2026-11-29T10:00:04+00:00): 295 of its 300 offered events were not compared "
        "(skipped breaker_open, never called; errors before: http_error 5); breaker now "
        "open, opened once; which events were called before it opened depends on the "
        "calls' timing "
        "(shadow.candidates[].failure_threshold, max_concurrency, cooldown_s in wall seconds)"
    ]


def test_a_later_batch_is_refused_at_the_offer(failing_server: FakeServer) -> None:
    retriever = HttpRetriever(failing_server.url, name="err", timeout_s=2.0, retries=0)
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(CandidateConfig(name="err", max_concurrency=1, failure_threshold=3,
                                    cooldown_s=3_600),),
    )  # fmt: skip
    with ShadowRunner(config, {"err": retriever}, backpressure=True) as runner:
        stage = ShadowStage(runner, synchronous=True)
        stage.process(Batch.of([make_event(i) for i in range(10)], source="test"))
        stage.process(Batch.of([make_event(i) for i in range(10, 30)], source="test"))
        report = stage.report()["candidates"]["err"]
    # 3 calls open it; 7 dropped from the first batch's queue, 20 refused at the offer
    assert len(failing_server.requests) == 3
    assert report["skipped"] == {"breaker_open": 27} and report["errors"] == {"http_error": 3}


def test_serve_stop_does_not_wait_on_a_hung_candidate_cut_off(
    hanging_server: FakeServer,
) -> None:
    # Live mode (no backpressure): 50 events queued at once for a candidate that never
    # answers. Two workers; the watchdog abandons each call at 0.3 s; the 2nd timeout opens
    # the breaker (failure_threshold 2). A replacement worker may start one more call between
    # the two timeouts, so at most N + c - 1 = 3 calls are ever made; every other queued event
    # is dropped as breaker_open. On main the queue (47+) was called through (each hanging
    # until abandoned) and the stop waited its whole timeout.
    retriever = HttpRetriever(hanging_server.url, name="hang", timeout_s=100, retries=0)
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(CandidateConfig(name="hang", timeout_s=0.3, max_concurrency=2,
                                    queue_size=100, failure_threshold=2, cooldown_s=3_600),),
    )  # fmt: skip
    runner = ShadowRunner(config, {"hang": retriever})
    stage = ShadowStage(runner)
    try:
        stage.process(Batch.of([make_event(i) for i in range(50)], source="test"))
        deadline = time.monotonic() + 10
        while runner.stats()["hang"]["breaker_state"] != "open" and time.monotonic() < deadline:
            time.sleep(0.01)
        cut_off_at = runner.stats()["hang"].get("breaker_cut_off_at")
        started = time.monotonic()
        lost = stage.finish(timeout_s=5.0)
        took = time.monotonic() - started
    finally:
        runner.close(timeout=0.0)
    report = stage.report()["candidates"]["hang"]
    assert len(hanging_server.requests) <= 3
    assert report["offered"] == 50 and report["in_flight"] == 0
    errors = report["errors"].get("timeout", 0)
    assert 2 <= errors <= 3
    assert report["skipped"]["breaker_open"] + errors + lost == 50
    assert report["skipped"]["breaker_open"] >= 47
    # not the 5 s it gave: nothing of an open breaker is waited for (a bound, not a speed)
    assert took < 2.5
    assert cut_off_at is not None and len(stage.cut_off_notices()) == 1


class _Switch:
    """Fails (HTTP 500) while ``dead``, then answers production's ranking."""

    name = "sw"

    def __init__(self) -> None:
        self.dead = True
        self.calls = 0

    def search(self, question: str, k: int) -> Any:
        self.calls += 1
        if self.dead:
            raise RetrieverError("HTTP 500")
        return docs(PRODUCTION[:k])


def test_the_notice_of_a_candidate_that_recovers_stays_true() -> None:
    # One worker (calls in event order), failure_threshold 3, cool-down 0.3 s. By hand:
    # batch 1 (e-0..e-49, dead): e-0, e-1, e-2 fail, e-2 opens it (errors 3), 47 dropped.
    # After the cool-down, batch 2 (e-50..e-59, dead): e-50 is the probe and fails (opened
    # twice, errors 4), the other 9 are refused at the offer. After the cool-down again,
    # batch 3 (e-60..e-69, alive): the probe e-60 succeeds and closes it, 9 refused. Batch 4
    # (e-70..e-99): all 30 called. Offered 100, breaker_open 47 + 9 + 9 = 65, errors 4,
    # completed 31, calls 35. "errors before" stays the 3 of the first opening (main's line
    # counted every error, 4, and still said the candidate was cut off).
    switch = _Switch()
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(CandidateConfig(name="sw", max_concurrency=1, queue_size=1_000,
                                    failure_threshold=3, cooldown_s=0.3),),
    )  # fmt: skip
    with ShadowRunner(config, {"sw": switch}, backpressure=True) as runner:
        stage = ShadowStage(runner, synchronous=True)
        stage.process(Batch.of([make_event(i) for i in range(50)], source="test"))
        open_line = stage.cut_off_notices()
        time.sleep(0.45)
        stage.process(Batch.of([make_event(i) for i in range(50, 60)], source="test"))
        time.sleep(0.45)
        switch.dead = False
        stage.process(Batch.of([make_event(i) for i in range(60, 70)], source="test"))
        stage.process(Batch.of([make_event(i) for i in range(70, 100)], source="test"))
        report = stage.report()["candidates"]["sw"]
        lines = stage.cut_off_notices()
    assert switch.calls == 35
    assert report["errors"] == {"http_error": 4} and report["completed"] == 31
    assert report["skipped"] == {"breaker_open": 65} and report["offered"] == 100
    head = ("shadow candidate 'sw' was cut off by its circuit breaker at event e-2 "
            "(2026-11-29T10:00:02+00:00): ")  # fmt: skip
    tail = ("; which events were called before it opened depends on the calls' timing "
            "(shadow.candidates[].failure_threshold, max_concurrency, cooldown_s in wall "
            "seconds)")  # fmt: skip
    assert open_line == [
        head + "47 of its 50 offered events were not compared (skipped breaker_open, never "
        "called; errors before: http_error 3); breaker now open, opened once" + tail
    ]
    assert lines == [
        head + "65 of its 100 offered events were not compared (skipped breaker_open, never "
        "called; errors before: http_error 3); breaker now closed again since event e-60 "
        "(2026-11-29T10:01:00+00:00), recovered, opened 2 times" + tail
    ]


def test_a_stop_racing_a_replacement_worker_joins_no_unstarted_thread(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The race behind a flaky stop under load ("cannot join thread before it is started"):
    # the watchdog starts a replacement for an abandoned worker while close() runs. Here
    # close() runs at the worst moment, inside the replacement's start(): on main the thread
    # was already in the lane's list, so close() joined it before it started (RuntimeError).
    retriever = HttpRetriever("http://127.0.0.1:9", name="x", timeout_s=1, retries=0)
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(CandidateConfig(name="x", timeout_s=1.0, max_concurrency=1,
                                    queue_size=10, failure_threshold=5, cooldown_s=60),),
    )  # fmt: skip
    runner = ShadowRunner(config, {"x": retriever})
    lane = runner._lanes["x"]
    with lane.lock:
        lane.live -= 1  # one worker abandoned (hung): a vacancy for a replacement
    real_start = threading.Thread.start
    closed: list[bool] = []

    def start_after_a_close(thread: threading.Thread) -> None:
        if thread.name.startswith("shadow-x") and not closed:
            closed.append(runner.close(timeout=0.0))
        real_start(thread)

    monkeypatch.setattr(threading.Thread, "start", start_after_a_close)
    runner._staff(lane)  # the watchdog's step; must not raise
    monkeypatch.undo()
    assert len(closed) == 1  # close() ran inside the start, and returned (no raise)
    runner.close(timeout=1.0)
