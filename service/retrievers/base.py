"""The retriever protocol: ``(question, k) -> ranked list of (passage id, score)``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from service.errors import GoldwatchError
from service.records import ScoredDoc


class RetrieverError(GoldwatchError, RuntimeError):
    """A retriever failed to answer (network error, bad response, timeout after retries).

    The message never includes the question text (it may hold personal data).
    """


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks corpus passages for a question.

    Implementations return at most ``k`` :class:`~service.records.ScoredDoc`, best first
    (higher score = better). ``search_batch`` returns one list per question, in input order;
    built-in retrievers vectorise it, remote ones may loop.

    Raises:
        RetrieverError: the retriever could not answer.
        ValueError: ``k < 1``.
    """

    name: str

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Return the top ``k`` passages for one question."""
        ...

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Return the top ``k`` passages for each question, in input order."""
        ...
