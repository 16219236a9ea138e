"""ShadowRunner against real HTTP candidates on 127.0.0.1: one fails 30 %, one hangs."""

from __future__ import annotations

import json
import threading
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from service.retrievers.http import HttpRetriever
from service.shadow.runner import CandidateConfig, ShadowConfig, ShadowRunner
from tests.service.retrievers.retriever_fakes import FakeServer, Reply, serve
from tests.service.shadow.shadow_fakes import PRODUCTION, collect, make_event


def flaky_responder(payload: dict[str, Any]) -> Reply:
    """500 for 30 % of questions (by hash, so retries fail too), else production's ranking."""
    if zlib.crc32(payload["question"].encode()) % 1000 < 300:
        return Reply(500, b'{"error": "boom"}')
    results = [{"id": pid, "score": 10 - i} for i, pid in enumerate(PRODUCTION)]
    return Reply(200, json.dumps({"results": results[: payload["k"]]}).encode())


@pytest.fixture
def flaky_server() -> Iterator[FakeServer]:
    with serve() as server:
        server.responder = flaky_responder
        yield server


@pytest.fixture
def hanging_server() -> Iterator[FakeServer]:
    release = threading.Event()

    def hang(payload: dict[str, Any]) -> Reply:
        release.wait(30)
        return Reply()

    with serve() as server:
        server.responder = hang
        yield server
        release.set()


def test_real_http_candidates(flaky_server: FakeServer, hanging_server: FakeServer) -> None:
    flaky = HttpRetriever(flaky_server.url, name="flaky", timeout_s=2.0, retries=0)
    # The hanging candidate's own client timeout (0.3 s) fires before the runner's (1 s).
    polite = HttpRetriever(hanging_server.url, name="polite", timeout_s=0.3, retries=0)
    # This one's client would wait 10 s: the runner's watchdog abandons it at 0.5 s.
    stubborn = HttpRetriever(hanging_server.url, name="stubborn", timeout_s=10, retries=0)
    config = ShadowConfig(
        max_cpu_share=None,  # the CPU budget has its own tests
        candidates=(
            CandidateConfig(name="flaky", max_concurrency=4, failure_threshold=1_000),
            CandidateConfig(name="polite", timeout_s=1.0, max_concurrency=2, queue_size=4),
            CandidateConfig(
                name="stubborn", timeout_s=0.5, max_concurrency=2, max_abandoned=2, queue_size=4
            ),
        ),
    )
    retrievers = {"flaky": flaky, "polite": polite, "stubborn": stubborn}
    runner = ShadowRunner(config, retrievers)
    try:
        started = time.perf_counter()
        offered: dict[str, Counter[str]] = {name: Counter() for name in retrievers}
        for i in range(200):
            for name, outcome in runner.offer(make_event(i), {}).items():
                offered[name][outcome] += 1
        assert time.perf_counter() - started < 0.5  # the hanging servers never slow the caller
        results = collect(runner, 200 + 4)
    finally:
        assert runner.close(timeout=1) in (True, False)
        for retriever in retrievers.values():
            retriever.close()
    by = {name: [r for r in results if r.candidate == name] for name in retrievers}
    flaky_errors = Counter(r.error for r in by["flaky"])
    assert offered["flaky"]["queued"] == 200 and len(by["flaky"]) == 200
    assert set(flaky_errors) == {None, "http_error"}
    assert 0.2 < flaky_errors["http_error"] / 200 < 0.4
    ok = [r for r in by["flaky"] if r.error is None]
    assert all(r.agreement is not None and r.agreement.rbo == pytest.approx(1.0) for r in ok)
    # The hanging candidates fill their small queues; everything else is skipped, not waited on.
    assert offered["polite"]["queue_full"] >= 190 and offered["stubborn"]["queue_full"] >= 190
    assert {r.error for r in by["polite"]} == {"timeout"}
    assert {r.error for r in by["stubborn"]} == {"timeout"}
    assert all(0.5 <= r.latency_s < 2.0 for r in by["stubborn"])
