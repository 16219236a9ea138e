"""ShadowRunner with in-process fake candidates: never blocks, skips counted, breaker, timeouts."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest

import service.shadow.runner as runner_module
from service.events import QueryLogEvent
from service.retrievers.base import RetrieverError
from service.shadow.runner import (
    CandidateConfig,
    ShadowConfig,
    ShadowRunner,
    classify_error,
    production_ranking,
    sample_fraction,
)
from tests.service.shadow.shadow_fakes import (
    PRODUCTION,
    Fixed,
    Flaky,
    Hanging,
    Switch,
    collect,
    docs,
    make_event,
    wait_for,
)


class FakeClock:
    """The runner's clock, moved by the test; counts the reads of the runner's watchdog
    thread (one per tick), so a test can wait for a whole tick to run after a change."""

    def __init__(self) -> None:
        self.now = 1_000.0
        self.watchdog_reads = 0

    def __call__(self) -> float:
        if threading.current_thread().name == "shadow-watchdog":
            self.watchdog_reads += 1
        return self.now


class FakeTime:
    """Stands in for the runner module's ``time``: ``monotonic`` is ``now`` (moved by the
    test), ``thread_time`` is per-thread CPU that :meth:`burn` adds, ``sleep`` sleeps for real
    and is recorded in ``slept``; the rest is the real module. ``watchdog_reads`` counts the
    watchdog's ``monotonic`` reads (one per tick, in the CPU-budget check)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.cpu: dict[int, float] = {}
        self.slept: list[float] = []
        self.watchdog_reads = 0

    def monotonic(self) -> float:
        if threading.current_thread().name == "shadow-watchdog":
            self.watchdog_reads += 1
        return self.now

    def thread_time(self) -> float:
        return self.cpu.get(threading.get_ident(), 0.0)

    def burn(self, seconds: float) -> None:
        self.cpu[threading.get_ident()] = self.thread_time() + seconds

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture
def fake_time(monkeypatch: pytest.MonkeyPatch) -> FakeTime:
    fake = FakeTime()
    monkeypatch.setattr(runner_module, "time", fake)
    return fake


def offer_all(runner: ShadowRunner, events: Sequence[QueryLogEvent]) -> Counter[str]:
    """Offer ``events`` from another thread; return the outcomes once every offer returned.

    The tests gate their candidate until this returns, so an offer that waited for a call
    would never return: the 60 s join is a bound for a loaded machine, not a timing.
    """
    outcomes: Counter[str] = Counter()

    def offer() -> None:
        for event in events:
            outcomes.update(runner.offer(event, {}).values())

    thread = threading.Thread(target=offer, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "an offer waited for the held candidate"
    return outcomes


def runner_for(retriever: Any, clock: Any = time.monotonic, **candidate: Any) -> ShadowRunner:
    shadow = {k: candidate.pop(k) for k in list(candidate) if k in ShadowConfig.model_fields}
    shadow.setdefault("max_cpu_share", None)  # the CPU budget has its own tests
    config = ShadowConfig(candidates=(CandidateConfig(name="cand", **candidate),), **shadow)
    return ShadowRunner(config, {"cand": retriever}, clock=clock)


@pytest.fixture
def hanging() -> Iterator[Hanging]:
    retriever = Hanging()
    yield retriever
    retriever.release.set()  # let the abandoned threads finish


def test_identical_candidate_agrees_fully() -> None:
    with runner_for(Fixed(), k=10) as runner:
        assert runner.offer(make_event(1), {"language": "en", "topic": "fees"}) == {
            "cand": "queued"
        }
        (result,) = collect(runner, 1)
    assert result.error is None and result.production == PRODUCTION
    assert result.ranking == PRODUCTION and result.language == "en" and result.topic == "fees"
    agreement = result.agreement
    assert agreement is not None and agreement.depth == 5  # capped at production's depth
    assert agreement.rbo == pytest.approx(1.0) and agreement.overlap == 1.0
    assert agreement.kendall_tau == pytest.approx(1.0) and agreement.citation_recall == 1.0
    assert result.latency_s >= 0 and result.attempts == 1


class Overlong(Fixed):
    """Returns its whole ranking whatever ``k`` (a remote candidate ignoring ``k``)."""

    def search(self, question: str, k: int) -> list[Any]:
        return docs(self.ranking)


def test_candidate_k_beyond_productions_depth_counts_in_rbo() -> None:
    """New-user trial: production logged 5 passages; a candidate with k = 10 ranked 3 of them
    6th to 8th. The runner cut both to 5 (disjoint: RBO 0.0, as with k = 5); RBO_ext now
    compares production's 5 with the candidate's 10 (by hand in test_agreement: 0.1735367)."""
    ranking = ("x1", "x2", "x3", "x4", "x5", "p3", "p2", "p1", "x6", "x7", "p4", "p5")
    rbo = {}
    for k in (5, 10):
        with runner_for(Overlong(ranking), k=k) as runner:
            runner.offer(make_event(1), {})
            (result,) = collect(runner, 1)
        agreement = result.agreement
        assert agreement is not None and agreement.depth == 5  # the common depth
        assert agreement.overlap == 0.0 and agreement.citation_recall == 0.0  # p1: rank 8
        rbo[k] = agreement.rbo
    # k = 10: the candidate's 10 only (its ranks 11-12, p4 and p5, are past its k).
    assert rbo == {5: 0.0, 10: pytest.approx(0.1735367, abs=1e-7)}


def test_submit_never_blocks_on_a_hanging_candidate(hanging: Hanging) -> None:
    # timeout_s: longer than any wait here, so no call is abandoned and no slot frees up.
    runner = runner_for(hanging, queue_size=100, max_concurrency=2, timeout_s=300)
    events = [make_event(i) for i in range(10_000)]
    assert [runner.offer(event, {}) for event in events[:2]] == [{"cand": "queued"}] * 2
    assert wait_for(lambda: hanging.started == 2)  # both workers are stuck in a call
    outcomes = offer_all(runner, events[2:])
    assert not hanging.release.is_set()  # the offers all returned while the candidate hung
    # A full queue keeps the lowest sampling draws: worked out here with a sorted list, an
    # event is queued when the queue has room or its draw is below the 100th lowest so far
    # (it then displaces that one, counted as queue_full too)
    kept: list[float] = []
    queued = 0
    for event in events[2:]:
        draw = sample_fraction(event.event_id)
        if len(kept) < 100 or draw < kept[-1]:
            queued += 1
            kept = sorted([*kept, draw])[:100]
    displaced = queued - 100
    assert 100 < queued < 1_000  # ~100 (1 + ln(9,998 / 100)) = 561 expected
    assert outcomes == Counter(queued=queued, queue_full=9_898 - displaced)
    assert runner.evicted_by() == {"cand": {"queue_full": displaced}}
    lane = runner._lanes["cand"]
    waiting = sorted(job.draw for job in lane.jobs if not job.evicted)
    assert waiting == kept and runner.stats()["cand"]["queue_depth"] == 100
    assert not runner.close(timeout=0.2)  # two workers are stuck in a call
    assert runner.offer(make_event(0), {}) == {"cand": "queue_full"}  # closed: nothing queued


def test_timeouts_are_abandoned_counted_and_threads_bounded(hanging: Hanging) -> None:
    # The runner's clock is the test's: a call is late when the test says so, and its
    # latency is read on that clock (0.125 s: exact in binary, so equality holds).
    clock = FakeClock()
    runner = runner_for(hanging, clock, timeout_s=0.125, max_concurrency=2, max_abandoned=2)
    for i in range(20):
        runner.submit(make_event(i), {})
    assert wait_for(lambda: hanging.started == 2)
    clock.now += 0.125  # the first two calls' deadline: abandoned, two replacements start
    assert wait_for(lambda: hanging.started == 4)
    clock.now += 0.125  # the replacements' deadline: abandoned, none replaces them (cap 4)
    results = collect(runner, 4)
    assert not hanging.release.is_set()  # the candidate never answered: the runner ended them
    assert [r.error for r in results] == ["timeout"] * 4
    assert [r.latency_s for r in results] == [0.125] * 4  # abandoned at the deadline
    reads = clock.watchdog_reads
    assert wait_for(lambda: clock.watchdog_reads >= reads + 2)  # a whole tick ran since
    stats = runner.stats()["cand"]
    # 2 live workers replaced twice, then the abandoned cap stops further replacements.
    assert stats["abandoned_running"] == 4 and stats["workers"] == 0
    assert hanging.started == 4 and stats["abandoned_total"] == 4
    hanging.release.set()  # the candidate comes back: the abandoned threads rejoin or exit
    assert wait_for(lambda: runner.stats()["cand"]["abandoned_running"] == 0)
    assert runner.close(timeout=60)  # returns once the workers exited; 60 s: a bound


def test_breaker_opens_then_half_open_probe_closes_it() -> None:
    clock, candidate = FakeClock(), Switch()
    runner = runner_for(candidate, clock, failure_threshold=3, cooldown_s=30, half_open_probes=1)
    for i in range(3):
        assert runner.offer(make_event(i), {}) == {"cand": "queued"}
        assert collect(runner, 1)[0].error == "http_error"
    assert runner.offer(make_event(3), {}) == {"cand": "breaker_open"}
    assert runner.stats()["cand"]["breaker_state"] == "open"
    clock.now += 30  # cool-down over: one probe goes through, the others are refused
    candidate.failing = False
    assert runner.offer(make_event(4), {}) == {"cand": "queued"}
    assert runner.offer(make_event(5), {}) == {"cand": "breaker_open"}
    assert collect(runner, 1)[0].error is None
    assert runner.stats()["cand"]["breaker_state"] == "closed"
    assert runner.offer(make_event(6), {}) == {"cand": "queued"}
    runner.close()


def test_failed_probe_reopens() -> None:
    clock, candidate = FakeClock(), Switch()
    runner = runner_for(candidate, clock, failure_threshold=1, cooldown_s=10)
    runner.submit(make_event(0), {})
    collect(runner, 1)
    clock.now += 10
    assert runner.offer(make_event(1), {}) == {"cand": "queued"}
    collect(runner, 1)
    assert runner.stats()["cand"]["breaker_opened_total"] == 2
    assert runner.offer(make_event(2), {}) == {"cand": "breaker_open"}
    runner.close()


def test_sampling_is_deterministic_and_paired() -> None:
    config = ShadowConfig(
        max_cpu_share=None,
        candidates=(
            CandidateConfig(name="a", sample_rate=0.3),
            CandidateConfig(name="b", sample_rate=0.3),
        ),
    )
    events = [make_event(i) for i in range(2_000)]

    def sampled(salt: str = "") -> dict[str, set[str]]:
        runner = ShadowRunner(
            config.model_copy(update={"sample_salt": salt}), {"a": Fixed(), "b": Fixed()}
        )
        chosen: dict[str, set[str]] = {"a": set(), "b": set()}
        for event in events:
            for name, outcome in runner.offer(event, {}).items():
                if outcome != "not_sampled":
                    chosen[name].add(event.event_id)
        runner.close()
        return chosen

    first, replay = sampled(), sampled()
    assert first == replay  # a replay samples the same events
    assert first["a"] == first["b"]  # candidates see the same sample
    assert 0.27 < len(first["a"]) / len(events) < 0.33
    assert sampled("other salt")["a"] != first["a"]


def test_filters_and_missing_production() -> None:
    runner = runner_for(Fixed(), languages={"en", "hi"}, channels={"web"}, roles={"parent"})
    parent = make_event(1, role="parent")
    assert runner.offer(parent, {"language": "en"}) == {"cand": "queued"}
    assert runner.offer(parent, {"language": "de"}) == {"cand": "filtered"}
    assert runner.offer(parent, {}) == {"cand": "filtered"}  # unknown language
    assert runner.offer(make_event(2), {"language": "en"}) == {"cand": "filtered"}  # student
    assert runner.offer(make_event(3, role="parent", channel="app"), {"language": "hi"}) == {
        "cand": "filtered"
    }
    empty = make_event(4, results=(), role="parent")
    assert runner.offer(empty, {"language": "en"}) == {"cand": "no_production"}
    runner.close()


def test_rate_limit_with_token_bucket() -> None:
    clock = FakeClock()
    runner = runner_for(Fixed(), clock, max_rps=2, burst=2)
    outcomes = [runner.offer(make_event(i), {})["cand"] for i in range(3)]
    assert outcomes == ["queued", "queued", "rate_limited"]
    clock.now += 0.5
    assert runner.offer(make_event(9), {}) == {"cand": "queued"}
    runner.close()


def test_flaky_candidate_errors_counted_and_agreement_on_successes() -> None:
    with runner_for(Flaky(0.3), k=5, failure_threshold=10_000) as runner:
        for i in range(600):
            runner.submit(make_event(i), {})
        results = collect(runner, 600)
    errors = Counter(r.error for r in results)
    assert len(results) == 600 and set(errors) == {None, "http_error"}
    assert 0.25 < errors["http_error"] / 600 < 0.35
    assert all((r.agreement is None) == (r.error is not None) for r in results)


def test_retries_within_the_budget(fake_time: FakeTime) -> None:
    candidate = Switch()

    class OnceFailing(Fixed):
        def __init__(self) -> None:
            super().__init__()
            self.failures = 0

        def search(self, question: str, k: int) -> Any:
            if self.failures == 0:
                self.failures += 1
                raise RetrieverError("retriever 'x': transport error (ConnectError)")
            return super().search(question, k)

    with runner_for(OnceFailing(), retries=2, backoff_s=0.001) as runner:
        runner.submit(make_event(1), {})
        (result,) = collect(runner, 1)
    assert result.error is None and result.attempts == 2
    (first_backoff,) = fake_time.slept  # uniform in [b/2, b], b = backoff_s
    assert 0.0005 <= first_backoff <= 0.001
    # A backoff longer than the remaining budget is not slept: the failure is returned.
    with runner_for(candidate, retries=3, backoff_s=5.0, timeout_s=1.0) as runner:
        runner.submit(make_event(2), {})
        (result,) = collect(runner, 1)
    assert result.error == "http_error" and result.attempts == 1
    assert fake_time.slept == [first_backoff]  # only the first runner's backoff was slept


def test_bad_responses_and_exceptions_are_classified() -> None:
    class Garbage(Fixed):
        def search(self, question: str, k: int) -> Any:
            return "not a list"

    class Broken(Fixed):
        def search(self, question: str, k: int) -> Any:
            raise ZeroDivisionError

    for retriever, reason in ((Garbage(), "bad_response"), (Broken(), "exception")):
        with runner_for(retriever) as runner:
            runner.submit(make_event(1), {})
            assert collect(runner, 1)[0].error == reason
    assert classify_error(RetrieverError("retriever 'h': timed out (timeout 1s)")) == "timeout"
    assert classify_error(RetrieverError("retriever 'h': bad response: x")) == "bad_response"
    assert classify_error(TimeoutError()) == "timeout"


def test_results_buffer_is_bounded() -> None:
    with runner_for(Fixed(), max_results=5) as runner:
        for i in range(20):
            runner.submit(make_event(i), {})
        assert wait_for(lambda: runner.results_dropped == 15)
        assert len(runner.drain()) == 5
        assert runner.drain() == []


def test_slow_candidate_does_not_slow_the_caller(hanging: Hanging) -> None:
    # Slower than any caller: its call answers only when released, after all the offers.
    with runner_for(hanging, queue_size=10, max_concurrency=1, timeout_s=300) as runner:
        assert runner.offer(make_event(0), {}) == {"cand": "queued"}
        assert wait_for(lambda: hanging.started == 1)  # the one worker is in the slow call
        outcomes = offer_all(runner, [make_event(i) for i in range(1, 1_001)])
        assert not hanging.release.is_set()
        # no slot freed meanwhile: the queue (10 lowest draws kept), the rest skipped
        kept, queued = _lowest([], [f"e-{i}" for i in range(1, 1_001)], 10)
        assert outcomes == Counter(queued=queued, queue_full=1_000 - queued)
        hanging.release.set()
        results = collect(runner, 11)
    assert len(results) == 11 and {r.error for r in results} == {None}  # slow, not failed
    assert sorted(r.event_id for r in results) == sorted(["e-0"] + [e for _, e in kept])


def test_production_ranking_order_rules() -> None:
    event = make_event(1, results=("a", "b", "c"))
    assert production_ranking(event) == ("a", "b", "c")
    scored = make_event(2).model_dump()
    scored["retrieval"]["results"] = [
        {"id": "x", "score": 1.0},
        {"id": "y", "score": 3.0},
        {"id": "x", "score": 0.5},
    ]
    assert production_ranking(type(event).model_validate(scored)) == ("y", "x")
    ranked = make_event(3).model_dump()  # ranks logged out of order, one id twice
    ranked["retrieval"]["results"] = [
        {"id": "p", "rank": 3, "score": 9.0},
        {"id": "q", "rank": 1, "score": 1.0},
        {"id": "p", "rank": 2, "score": 5.0},
        {"id": "r", "rank": 4, "score": 7.0},
    ]
    assert production_ranking(type(event).model_validate(ranked)) == ("q", "p", "r")


def test_config_validation() -> None:
    with pytest.raises(ValueError):
        CandidateConfig(name="c", sample_rate=1.5)
    with pytest.raises(ValueError):
        ShadowConfig(candidates=(CandidateConfig(name="c"), CandidateConfig(name="c")))
    with pytest.raises(KeyError):
        ShadowRunner(ShadowConfig(candidates=(CandidateConfig(name="c"),)), {})
    assert CandidateConfig(name="c", retriever="bm25").retriever_name == "bm25"


class Burner:
    """A candidate that answers at once but burns ``cpu_s`` of CPU per call."""

    name = "burner"

    def __init__(self, cpu_s: float) -> None:
        self.cpu_s = cpu_s

    def search(self, question: str, k: int) -> list[Any]:
        end = time.thread_time() + self.cpu_s
        while time.thread_time() < end:
            pass
        return Fixed(PRODUCTION).search(question, k)


def _offer_for(runner: ShadowRunner, seconds: float) -> Counter[str]:
    outcomes: Counter[str] = Counter()
    deadline, i = time.monotonic() + seconds, 0
    while time.monotonic() < deadline:
        outcomes.update(runner.offer(make_event(i), {}).values())
        i += 1
        time.sleep(0.002)
    return outcomes


class GatedBurner(Fixed):
    """Each call waits for a token in ``tokens``, then burns ``cpu_s`` of :class:`FakeTime` CPU."""

    def __init__(self, fake_time: FakeTime, cpu_s: float) -> None:
        super().__init__(name="gated-burner")
        self.fake_time, self.cpu_s = fake_time, cpu_s
        self.tokens = threading.Semaphore(0)
        self.started = 0

    def search(self, question: str, k: int) -> Any:
        self.started += 1
        self.tokens.acquire()
        self.fake_time.burn(self.cpu_s)
        return super().search(question, k)


def _lowest(draws: Sequence[tuple[float, str]], offered: Sequence[str], size: int
            ) -> tuple[list[tuple[float, str]], int]:  # fmt: skip
    """A full queue's rule worked out with a sorted list: from the queue ``draws`` (draw,
    event id), offer each id of ``offered``; it is queued when there is room or its draw is
    below the highest queued one (which it displaces). Returns the queue and how many of
    ``offered`` were queued."""
    kept, queued = sorted(draws), 0
    for event_id in offered:
        draw = sample_fraction(event_id)
        if len(kept) < size or draw < kept[-1][0]:
            queued += 1
            kept = sorted([*kept, (draw, event_id)])[:size]
    return kept, queued


def test_cpu_budget_holds_calls_back_and_keeps_the_lowest_draws(fake_time: FakeTime) -> None:
    # The CPU window's clock and the calls' CPU are the test's: a call burns 1/16 CPU-s,
    # against a budget of 0.02 core-s/s, and time moves only when the test moves it.
    burner = GatedBurner(fake_time, 0.0625)
    with runner_for(burner, max_cpu_share=0.02, max_concurrency=1, timeout_s=300,
                    queue_size=8) as runner:  # fmt: skip
        assert wait_for(lambda: fake_time.watchdog_reads >= 1)  # a window mark at 0 CPU-s
        assert [runner.offer(make_event(i), {})["cand"] for i in range(4)] == ["queued"] * 4
        burner.tokens.release()  # the first call ends: 1/16 CPU-s over the window > budget
        assert wait_for(lambda: runner.cpu_throttled)
        reads = fake_time.watchdog_reads
        assert wait_for(lambda: fake_time.watchdog_reads >= reads + 3)
        # the worker took e-1 too (started 2) only if it did before the tick saw the CPU
        started = burner.started
        assert started in (1, 2), started
        waiting = [(sample_fraction(f"e-{i}"), f"e-{i}") for i in range(started, 4)]
        ids = [f"e-{i}" for i in range(4, 104)]
        kept, queued = _lowest(waiting, ids, 8)
        outcomes = Counter(runner.offer(make_event(i), {})["cand"] for i in range(4, 104))
        # while over the budget offers queue up, then displace higher draws; the rest skip
        assert outcomes == Counter(queued=queued, cpu_budget=100 - queued)
        displaced = len(waiting) + queued - 8
        assert runner.evicted_by() == {"cand": {"cpu_budget": displaced}}
        assert runner.stats()["cand"]["queue_depth"] == 8
        for _ in range(3):
            burner.tokens.release()  # tokens for 3 more calls, but...
        reads = fake_time.watchdog_reads
        assert wait_for(lambda: fake_time.watchdog_reads >= reads + 3)
        assert wait_for(lambda: runner.cpu_s == 0.0625 * burner.started)
        assert burner.started == started  # ...no queued call starts while over the budget
        assert runner.cpu_throttled
        fake_time.now += 10.0  # the first calls' CPU leaves the one-second window
        assert wait_for(lambda: not runner.cpu_throttled)
        for _ in range(20):
            burner.tokens.release()
        results = collect(runner, started + 8)  # the queued calls ran once back under budget
    ran = [f"e-{i}" for i in range(started)]
    assert sorted(r.event_id for r in results) == sorted(ran + [e for _, e in kept])
    assert runner.cpu_s == (started + 8) * 0.0625


def test_cpu_budget_throttles_on_measured_thread_cpu() -> None:
    # Real thread CPU: 20 ms a call against 0.02 core-s/s, so two calls within the window
    # (about a second; one call is enough while it is still short) are over the budget.
    # Offer until one is refused (60 s: a bound for a loaded machine, not a timing).
    with runner_for(Burner(0.02), max_cpu_share=0.02, max_concurrency=1) as runner:
        deadline, i = time.monotonic() + 60, 0
        while runner.offer(make_event(i), {})["cand"] != "cpu_budget":
            assert time.monotonic() < deadline, "never throttled"
            i += 1
            time.sleep(0.002)
        assert runner.cpu_s >= 0.02  # throttled only once the calls used CPU


def test_cheap_calls_are_never_throttled() -> None:
    with runner_for(Burner(0.0), max_cpu_share=0.5) as cheap:
        assert _offer_for(cheap, 0.5)["cpu_budget"] == 0


def test_no_cpu_budget_means_no_throttling() -> None:
    with runner_for(Burner(0.02), max_cpu_share=None, max_concurrency=1, queue_size=10_000) as r:
        outcomes = _offer_for(r, 0.6)
        assert outcomes["cpu_budget"] == 0 and outcomes["queued"] == sum(outcomes.values())
        assert r.stats()["cand"]["cpu_throttled"] is False


def test_settle_lifts_the_budget_until_the_queue_drains_then_puts_it_back(
    fake_time: FakeTime,
) -> None:
    # The end of a finite input (trial 41 L5): calls the budget holds back run once the
    # runner settles; afterwards the budget is in force again (HTTP ingest may go on).
    # A call burns 1/16 CPU-s against 0.02 core-s/s; time moves only when the test moves it,
    # so the settle's 60 s never pass: it returns only once the runner is idle.
    burner = GatedBurner(fake_time, 0.0625)
    with runner_for(burner, max_cpu_share=0.02, max_concurrency=1, timeout_s=300,
                    queue_size=8) as runner:  # fmt: skip
        assert wait_for(lambda: fake_time.watchdog_reads >= 1)
        assert [runner.offer(make_event(i), {})["cand"] for i in range(4)] == ["queued"] * 4
        burner.tokens.release()
        assert wait_for(lambda: runner.cpu_throttled)
        for _ in range(3):
            burner.tokens.release()  # tokens for the other three calls, but...
        reads = fake_time.watchdog_reads
        assert wait_for(lambda: fake_time.watchdog_reads >= reads + 3)
        started = burner.started
        assert wait_for(lambda: runner.cpu_s == 0.0625 * started)
        assert started in (1, 2), started  # ...none starts while over the budget
        assert runner.busy_calls() == 4 - started
        assert runner.wait_idle(0.0) is False
        settled: list[bool] = []
        thread = threading.Thread(target=lambda: settled.append(runner.settle(60.0)))
        thread.start()
        thread.join(60)
        assert not thread.is_alive(), "the settle never saw the queue drain"
        assert settled == [True] and burner.started == 4 and runner.busy_calls() == 0
        assert sorted(r.event_id for r in collect(runner, 4)) == [f"e-{i}" for i in range(4)]
        # the budget is back: the next call's CPU throttles again
        assert not runner.cpu_throttled
        assert runner.offer(make_event(4), {})["cand"] == "queued"
        burner.tokens.release()
        assert wait_for(lambda: runner.cpu_throttled)


def test_settle_gives_up_at_its_timeout_and_leaves_the_calls_queued(hanging: Hanging) -> None:
    # A hung candidate: the settle returns False after its timeout; nothing is given up.
    with runner_for(hanging, max_concurrency=1, timeout_s=300) as runner:
        assert runner.offer(make_event(0), {})["cand"] == "queued"
        assert runner.offer(make_event(1), {})["cand"] == "queued"
        assert runner.settle(0.2) is False
        assert runner.busy_calls() == 2  # one running, one queued
        stop = threading.Event()
        stop.set()
        assert runner.settle(60.0, stop) is False  # a stop ends it at once
        hanging.release.set()
        assert runner.settle(60.0) is True and runner.busy_calls() == 0
