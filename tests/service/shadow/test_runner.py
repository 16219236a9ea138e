"""ShadowRunner with in-process fake candidates: never blocks, skips counted, breaker, timeouts."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from service.retrievers.base import RetrieverError
from service.shadow.runner import (
    CandidateConfig,
    ShadowConfig,
    ShadowRunner,
    classify_error,
    production_ranking,
)
from tests.service.shadow.shadow_fakes import (
    PRODUCTION,
    Fixed,
    Flaky,
    Hanging,
    Slow,
    Switch,
    collect,
    make_event,
    wait_for,
)


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


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


def test_submit_never_blocks_on_a_hanging_candidate(hanging: Hanging) -> None:
    runner = runner_for(hanging, queue_size=100, max_concurrency=2, timeout_s=60)
    events = [make_event(i) for i in range(10_000)]
    outcomes: Counter[str] = Counter()
    started = time.perf_counter()
    for event in events:
        outcomes.update(runner.offer(event, {}).values())
    elapsed = time.perf_counter() - started
    assert elapsed < 1.0, f"10,000 submits took {elapsed:.2f} s"
    assert sum(outcomes.values()) == 10_000
    assert 100 <= outcomes["queued"] <= 102  # the queue plus what the 2 workers took
    assert outcomes["queue_full"] == 10_000 - outcomes["queued"]
    assert wait_for(lambda: hanging.started == 2)
    assert not runner.close(timeout=0.2)  # two workers are stuck in a call
    assert runner.offer(make_event(0), {}) == {"cand": "queue_full"}  # closed: nothing queued


def test_timeouts_are_abandoned_counted_and_threads_bounded(hanging: Hanging) -> None:
    runner = runner_for(hanging, timeout_s=0.1, max_concurrency=2, max_abandoned=2)
    for i in range(20):
        runner.submit(make_event(i), {})
    results = collect(runner, 4)
    assert {r.error for r in results} == {"timeout"}
    assert all(0.1 <= r.latency_s < 1.0 for r in results)
    time.sleep(0.3)
    stats = runner.stats()["cand"]
    # 2 live workers replaced twice, then the abandoned cap stops further replacements.
    assert stats["abandoned_running"] + stats["workers"] <= 4
    assert hanging.started <= 4 and stats["abandoned_total"] == 4
    hanging.release.set()  # the candidate comes back: the abandoned threads rejoin or exit
    assert wait_for(lambda: runner.stats()["cand"]["abandoned_running"] == 0)
    assert runner.close(timeout=2)


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


def test_retries_within_the_budget() -> None:
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
    # A backoff longer than the remaining budget is not slept: the failure is returned.
    with runner_for(candidate, retries=3, backoff_s=5.0, timeout_s=1.0) as runner:
        runner.submit(make_event(2), {})
        (result,) = collect(runner, 1)
    assert result.error == "http_error" and result.attempts == 1 and result.latency_s < 0.5


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


def test_slow_candidate_does_not_slow_the_caller() -> None:
    with runner_for(Slow(0.05), queue_size=10, max_concurrency=1) as runner:
        started = time.perf_counter()
        outcomes = Counter(runner.offer(make_event(i), {})["cand"] for i in range(1_000))
        assert time.perf_counter() - started < 0.5
        assert outcomes["queue_full"] >= 980


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


def test_cpu_budget_skips_offers_while_shadow_calls_use_too_much_cpu() -> None:
    # 20 ms of CPU a call against a budget of 0.02 core-s/s: one call a second is the budget,
    # so after the first calls the watchdog must throttle, and the CPU used stays near it.
    with runner_for(Burner(0.02), max_cpu_share=0.02, max_concurrency=1) as runner:
        started = time.monotonic()
        outcomes = _offer_for(runner, 1.5)
        elapsed = time.monotonic() - started
        assert outcomes["cpu_budget"] > 0, outcomes
        assert outcomes["cpu_budget"] > outcomes["queued"]
        assert runner.cpu_s < 0.02 * elapsed + 0.3  # budget plus a window's overshoot
    with runner_for(Burner(0.0), max_cpu_share=0.5) as cheap:
        assert _offer_for(cheap, 0.5)["cpu_budget"] == 0  # cheap calls are never throttled


def test_no_cpu_budget_means_no_throttling() -> None:
    with runner_for(Burner(0.02), max_cpu_share=None, max_concurrency=1, queue_size=10_000) as r:
        outcomes = _offer_for(r, 0.6)
        assert outcomes["cpu_budget"] == 0 and outcomes["queued"] == sum(outcomes.values())
        assert r.stats()["cand"]["cpu_throttled"] is False
