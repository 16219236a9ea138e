"""The one place tests get a Tansu broker (``tests/kafka_broker.py``), imported by
``tests/conftest.py`` so every folder sees the same fixtures:

* ``kafka_broker`` — the broker of the whole session, started at its first use: one Tansu
  process for the consumer, acceptance, reliability and ops tests (each test uses its own
  topics and consumer groups, and resumes the broker if it paused it);
* ``broker`` — the same broker under the name the acceptance, reliability and ops tests use;
* ``start_broker`` — ``start_broker(port=None) -> TansuBroker``: a private broker, e.g. one
  that comes up late on a port a service is already pointed at; stopped at teardown.

A test that takes any of them is marked ``kafka`` (``tests/conftest.py``), so the fast tier
leaves it out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from tests.kafka_broker import TansuBroker

#: The fixtures whose users ``tests/conftest.py`` marks ``kafka``.
BROKER_FIXTURES = frozenset({"kafka_broker", "broker", "start_broker"})

StartBroker = Callable[..., TansuBroker]


@pytest.fixture(scope="session")
def kafka_broker() -> Iterator[TansuBroker]:
    """The session's Tansu broker (memory storage) on a free port, stopped at session end."""
    started = TansuBroker.start()
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="session")
def broker(kafka_broker: TansuBroker) -> TansuBroker:
    """The session's broker (:func:`kafka_broker`), under its other name."""
    return kafka_broker


@pytest.fixture
def start_broker() -> Iterator[StartBroker]:
    """``start_broker(port=None)``: start a private broker (on ``port``, or a free one) and
    wait until it answers; every broker started so is stopped at the test's teardown."""
    started: list[TansuBroker] = []

    def start(port: int | None = None) -> TansuBroker:
        new = TansuBroker.start(port=port)
        started.append(new)
        return new

    yield start
    for running in started:
        running.stop()
