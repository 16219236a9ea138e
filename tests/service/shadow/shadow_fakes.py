"""In-process fake candidates and event builders for the shadow tests."""

from __future__ import annotations

import threading
import time
import zlib
from collections.abc import Callable, Sequence
from typing import Any

from service.events import QueryLogEvent
from service.records import ScoredDoc
from service.retrievers.base import RetrieverError
from service.shadow.runner import ShadowResult, ShadowRunner

PRODUCTION = ("p1", "p2", "p3", "p4", "p5")


def make_event(
    i: int,
    *,
    results: Sequence[str] = PRODUCTION,
    citations: Sequence[str] = ("p1",),
    channel: str | None = "web",
    role: str | None = "student",
    question: str | None = None,
) -> QueryLogEvent:
    """Return event ``e-{i}`` whose production ranking is ``results`` (ranks 1..n)."""
    data: dict[str, Any] = {
        "event_id": f"e-{i}",
        "timestamp": 1_795_946_400 + i,
        "question": question or f"question number {i}?",
        "channel": channel,
        "user": {"id": f"u-{i}", "role": role},
        "retrieval": {
            "retriever": "prod",
            "results": [
                {"id": pid, "rank": rank, "score": 10.0 - rank}
                for rank, pid in enumerate(results, 1)
            ],
        },
        "answer": {"text": "...", "citations": list(citations)},
    }
    return QueryLogEvent.model_validate(data)


def docs(ids: Sequence[str]) -> list[ScoredDoc]:
    return [ScoredDoc(pid, float(len(ids) - i)) for i, pid in enumerate(ids)]


class Fixed:
    """Answers every question with the same ranking (default: production's)."""

    def __init__(self, ranking: Sequence[str] = PRODUCTION, name: str = "fixed") -> None:
        self.name, self.ranking = name, tuple(ranking)
        self.calls = 0

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        self.calls += 1
        return docs(self.ranking[:k])

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        return [self.search(q, k) for q in questions]


class Slow(Fixed):
    def __init__(self, delay_s: float) -> None:
        super().__init__(name="slow")
        self.delay_s = delay_s

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        time.sleep(self.delay_s)
        return super().search(question, k)


class Flaky(Fixed):
    """Fails ``rate`` of questions (deterministic per question) with an HTTP-like error."""

    def __init__(self, rate: float = 0.3) -> None:
        super().__init__(name="flaky")
        self.rate = rate

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        if zlib.crc32(question.encode()) % 1000 < self.rate * 1000:
            raise RetrieverError("retriever 'flaky': HTTP 500 after 1 attempt(s)")
        return super().search(question, k)


class Switch(Fixed):
    """Fails with ``error`` while ``failing`` is set, answers otherwise."""

    def __init__(self, error: Callable[[], Exception] | None = None) -> None:
        super().__init__(name="switch")
        self.failing = True
        self.error = error or (lambda: RetrieverError("retriever 'switch': HTTP 503"))

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        self.calls += 1
        if self.failing:
            raise self.error()
        return docs(self.ranking[:k])


class Hanging(Fixed):
    """Blocks until ``release`` is set (forever, in the tests' terms)."""

    def __init__(self) -> None:
        super().__init__(name="hanging")
        self.release = threading.Event()
        self.started = 0

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        self.started += 1
        self.release.wait()
        return super().search(question, k)


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.005)
    return predicate()


def collect(runner: ShadowRunner, count: int, timeout: float = 60.0) -> list[ShadowResult]:
    """Drain results until ``count`` arrived (or ``timeout`` seconds: a bound for a loaded
    machine, not a timing; the wait ends as soon as they are there)."""
    results: list[ShadowResult] = []

    def enough() -> bool:
        results.extend(runner.drain())
        return len(results) >= count

    wait_for(enough, timeout)
    return results
