"""Fixtures for the retriever tests (the doubles live in ``retriever_fakes``)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from service.records import Passage
from tests.service.retrievers.retriever_fakes import HAND_CORPUS, FakeServer, serve


@pytest.fixture(scope="session")
def hand_corpus() -> list[Passage]:
    """Four short passages; only p1 mentions a scholarship, all mention students."""
    return list(HAND_CORPUS)


@pytest.fixture
def fake_server() -> Iterator[FakeServer]:
    """A running :class:`FakeServer`, stopped after the test."""
    with serve() as server:
        yield server
