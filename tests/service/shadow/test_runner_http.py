"""ShadowRunner against real HTTP candidates on 127.0.0.1: one fails 30 %, one hangs."""

from __future__ import annotations

import json
import threading
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
        release.wait(120)  # released after the test; 120 s: a bound, should that not come
        return Reply()

    with serve() as server:
        server.responder = hang
        yield server
        release.set()


def test_real_http_candidates(flaky_server: FakeServer, hanging_server: FakeServer) -> None:
    flaky = HttpRetriever(flaky_server.url, name="flaky", timeout_s=2.0, retries=0)
    # The hanging candidate's own client timeout (0.3 s) fires before the runner's (300 s:
    # never during the test, so every call that ends was ended by the client, and every
    # worker that takes another job recorded a result first).
    polite = HttpRetriever(hanging_server.url, name="polite", timeout_s=0.3, retries=0)
    # This one's client would wait 100 s (the server holds it up to 120 s): the runner's
    # watchdog abandons it at 0.5 s, and no abandoned call comes back during the test.
    stubborn = HttpRetriever(hanging_server.url, name="stubborn", timeout_s=100, retries=0)
    config = ShadowConfig(
        max_cpu_share=None,  # the CPU budget has its own tests
        candidates=(
            CandidateConfig(name="flaky", max_concurrency=4, failure_threshold=1_000),
            # The breaker has its own tests; here it would turn queue_full into breaker_open
            # after 5 timeouts, i.e. depending on how long the offers took.
            CandidateConfig(
                name="polite", timeout_s=300, max_concurrency=2, queue_size=4,
                failure_threshold=1_000,
            ),
            CandidateConfig(
                name="stubborn", timeout_s=0.5, max_concurrency=2, max_abandoned=2, queue_size=4
            ),
        ),
    )  # fmt: skip
    retrievers = {"flaky": flaky, "polite": polite, "stubborn": stubborn}
    runner = ShadowRunner(config, retrievers)
    offered: dict[str, Counter[str]] = {name: Counter() for name in retrievers}

    def offer() -> None:
        for i in range(200):
            for name, outcome in runner.offer(make_event(i), {}).items():
                offered[name][outcome] += 1

    try:
        # The hanging servers never slow the caller: every offer returns while they still
        # hold their requests (an offer waiting on one stubborn call alone would take 100 s;
        # the 60 s join is a bound for a loaded machine, not a timing).
        caller = threading.Thread(target=offer, daemon=True)
        caller.start()
        caller.join(60)
        assert not caller.is_alive(), "an offer waited for a hanging candidate"
        early = runner.drain()  # a queue slot frees only after its call's result is recorded
        # an event displaced from a full queue by a lower draw never runs (queue_full)
        displaced = {name: sum(n.values()) for name, n in runner.evicted_by().items()}
        polite_queued = offered["polite"]["queued"] - displaced.get("polite", 0)
        stubborn_queued = offered["stubborn"]["queued"] - displaced.get("stubborn", 0)
        results = early + collect(runner, 200 + polite_queued + 4 - len(early))
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
    # The hanging candidates fill their small queues; everything else is skipped, not waited
    # on. Queued: the queue (4), the calls the workers took (2), and one more per slot freed
    # while offering: for polite, a call its client ended (a result recorded by then); for
    # stubborn, the 2 replacements of abandoned calls (max_abandoned), then no more workers.
    polite_early = sum(r.candidate == "polite" for r in early)
    assert polite_queued <= 4 + 2 + polite_early
    assert sum(offered["polite"].values()) == 200 and set(offered["polite"]) == {
        "queued", "queue_full"}  # fmt: skip
    assert stubborn_queued <= 4 + 2 + 2
    assert sum(offered["stubborn"].values()) == 200 and set(offered["stubborn"]) == {
        "queued", "queue_full"}  # fmt: skip
    assert len(by["polite"]) == polite_queued and {r.error for r in by["polite"]} == {"timeout"}
    assert len(by["stubborn"]) == 4 and {r.error for r in by["stubborn"]} == {"timeout"}
    # Ended by the runner at its deadline, not by the client (100 s) or the server (120 s).
    assert all(0.5 <= r.latency_s < 100 for r in by["stubborn"])
