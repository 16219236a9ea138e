"""The event-loop handler that condenses asyncio's failed-accept reports
(:class:`service.api.serving.AcceptFailureLog`), against a stand-in loop with a hand-set clock
(the real flood is in ``tests/reliability/test_slow_clients.py``)."""

from __future__ import annotations

import errno
import logging
from collections.abc import Callable
from typing import Any

import pytest

from service.api.serving import ACCEPT_FAILED, AcceptFailureLog


class StandInLoop:
    """``time``, ``call_later`` and ``default_exception_handler``, with a clock the test sets."""

    def __init__(self) -> None:
        self.now = 100.0
        self.timers: list[tuple[float, Callable[..., Any], tuple[Any, ...]]] = []
        self.defaults: list[dict[str, Any]] = []

    def time(self) -> float:
        return self.now

    def call_later(self, delay: float, callback: Callable[..., Any], *args: Any) -> None:
        self.timers.append((self.now + delay, callback, args))

    def default_exception_handler(self, context: dict[str, Any]) -> None:
        self.defaults.append(context)

    def run_timers(self) -> None:
        due, self.timers = [t for t in self.timers if t[0] <= self.now], [
            t for t in self.timers if t[0] > self.now]  # fmt: skip
        for _, callback, args in due:
            callback(*args)


EMFILE = {"message": ACCEPT_FAILED, "exception": OSError(errno.EMFILE, "Too many open files")}


def _lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "could not accept" in r.getMessage()]


def test_a_burst_gives_one_line_now_and_one_with_the_count_an_interval_later(
    caplog: pytest.LogCaptureFixture,
) -> None:
    loop = StandInLoop()
    handler = AcceptFailureLog(interval_s=10.0)
    with caplog.at_level(logging.ERROR, logger="service.api.serving"):
        for _ in range(1967):  # the trial probe's count
            handler(loop, EMFILE)  # type: ignore[arg-type]
        assert len(_lines(caplog)) == 1 and "1 failed accepts" in _lines(caplog)[0]
        assert "EMFILE" in _lines(caplog)[0] and not caplog.records[0].exc_info
        assert [t[0] for t in loop.timers] == [110.0]  # one flush, an interval after line 1
        loop.now = 110.0
        loop.run_timers()
        assert len(_lines(caplog)) == 2
        assert "1966 failed accepts in the last 10 s" in _lines(caplog)[1]
        assert handler.logged == 1967 and handler.unlogged == 0
        loop.now = 125.0  # the next failure, more than an interval later: logged at once
        handler(loop, EMFILE)  # type: ignore[arg-type]
        assert "1 failed accepts in the last 15 s" in _lines(caplog)[2]


def test_other_contexts_go_to_the_previous_or_default_handler() -> None:
    loop = StandInLoop()
    other = {"message": "Task exception was never retrieved"}
    AcceptFailureLog()(loop, other)  # type: ignore[arg-type]
    assert loop.defaults == [other]
    seen: list[dict[str, Any]] = []
    AcceptFailureLog(previous=lambda _loop, context: seen.append(context))(loop, other)  # type: ignore[arg-type]
    assert seen == [other] and loop.defaults == [other]
