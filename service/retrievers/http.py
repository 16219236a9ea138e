"""Client for a retriever behind HTTP.

Protocol: ``POST <url>`` with JSON ``{"question": str, "k": int}``; a 2xx answer carries
``{"results": [{"id": str, "score": number}, ...]}``. Extra fields are ignored.

Failure policy:

* connect errors, other transport errors, timeouts, HTTP 5xx and 429 are retried ``retries``
  times with exponential backoff and jitter: before retry ``n`` (0-based) the client sleeps a
  uniform draw from ``[d/2, d]``, ``d = min(backoff_s · 2**n, max_backoff_s)``, or longer when a
  429/503 carries a numeric ``Retry-After`` (capped at ``max_backoff_s``);
* other HTTP statuses (4xx) fail at once;
* a body over ``max_response_bytes`` (counted after content decoding), non-JSON, or a result
  with a missing/ill-typed field fails at once.

Every failure is a :class:`RetrieverError` naming the retriever and the reason — never the
question, the URL (it may hold a key) or the response body (it may echo the question).
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx

from service.pacing import Backoff
from service.records import ScoredDoc
from service.retrievers.base import RetrieverError, ReturnedOrder, top_k_ids
from service.retrievers.text import check_k

_RETRY_STATUSES = frozenset({429}) | frozenset(range(500, 600))


class _Retryable(Exception):
    """One attempt failed in a way worth retrying; ``args[0]`` is the reason."""

    def __init__(self, reason: str, wait_s: float = 0.0) -> None:
        super().__init__(reason)
        self.wait_s = wait_s


class HttpRetriever:
    """A remote retriever spoken to over HTTP (see the module docstring).

    The ``httpx.Client`` is created once and reused; call :meth:`close` (or use ``with``).

    Args:
        url: the endpoint (``http://`` or ``https://``).
        name: the retriever's name (used in error messages).
        timeout_s: per-request timeout in seconds (connect, read, write, pool each).
        retries: retries after the first attempt, ≥ 0.
        backoff_s: first backoff in seconds, ≥ 0; doubles each retry.
        max_backoff_s: cap of one backoff sleep in seconds.
        headers: extra request headers (e.g. authorisation).
        max_response_bytes: largest accepted response body.
        concurrency: parallel requests in :meth:`search_batch`, ≥ 1.

    Attributes:
        retries_total: retries made so far (all questions, all threads).
    """

    def __init__(
        self,
        url: str,
        *,
        name: str = "http",
        timeout_s: float = 5.0,
        retries: int = 2,
        backoff_s: float = 0.2,
        max_backoff_s: float = 30.0,
        headers: Mapping[str, str] | None = None,
        max_response_bytes: int = 8 * 1024 * 1024,
        concurrency: int = 4,
    ) -> None:
        if retries < 0 or backoff_s < 0 or timeout_s <= 0 or concurrency < 1:
            raise ValueError("http retriever needs retries >= 0, backoff_s >= 0, timeout_s > 0")
        if max_response_bytes < 1:
            raise ValueError("max_response_bytes must be >= 1")
        self.name = name
        self.url = url
        self.retries = retries
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self._backoff = Backoff(backoff_s, max_s=max_backoff_s, jitter=True)
        self.max_response_bytes = max_response_bytes
        self.concurrency = concurrency
        self.retries_total = 0
        #: the lists as returned, before sorting (under ``_lock``): ``eval`` warns of
        #: distances from it
        self.returned_order = ReturnedOrder()
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=timeout_s, headers=dict(headers or {}))

    def close(self) -> None:
        """Close the underlying connection pool."""
        self._client.close()

    def __enter__(self) -> HttpRetriever:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        """Ask the endpoint for ``k`` passages; at most ``k`` returned, score descending.

        Raises:
            ValueError: ``k < 1``.
            RetrieverError: see the module docstring.
        """
        check_k(k)
        body = self._post_with_retries({"question": question, "k": k})
        return parse_results(body, k, self.name, observe=self._observe)

    def _observe(self, docs: list[ScoredDoc]) -> None:
        with self._lock:
            self.returned_order.observe(docs)

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        """Call :meth:`search` per question, ``concurrency`` at a time; input order kept."""
        check_k(k)
        if self.concurrency == 1 or len(questions) <= 1:
            return [self.search(question, k) for question in questions]
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            return list(pool.map(lambda question: self.search(question, k), questions))

    def _post_with_retries(self, payload: dict[str, Any]) -> bytes:
        for attempt in range(self.retries + 1):
            try:
                return self._post_once(payload)
            except _Retryable as failure:
                reason = str(failure)
                if attempt == self.retries:
                    raise RetrieverError(
                        f"retriever {self.name!r}: {reason} after {attempt + 1} attempt(s)"
                    ) from None
                with self._lock:
                    self.retries_total += 1
                time.sleep(max(self._backoff.delay(attempt), failure.wait_s))
        raise AssertionError("unreachable")  # pragma: no cover

    def _post_once(self, payload: dict[str, Any]) -> bytes:
        try:
            with self._client.stream("POST", self.url, json=payload) as response:
                status = response.status_code
                if status in _RETRY_STATUSES:
                    raise _Retryable(f"HTTP {status}", self._retry_after(response))
                if not 200 <= status < 300:
                    raise RetrieverError(f"retriever {self.name!r}: HTTP {status} (not retried)")
                return self._read_bounded(response)
        except httpx.TimeoutException:
            raise _Retryable(f"timed out (timeout {self._client.timeout.read}s)") from None
        except httpx.TransportError as exc:
            raise _Retryable(f"transport error ({type(exc).__name__})") from None
        except httpx.HTTPError as exc:
            raise RetrieverError(f"retriever {self.name!r}: {type(exc).__name__}") from None

    def _read_bounded(self, response: httpx.Response) -> bytes:
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_response_bytes:
            raise self._too_large()
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > self.max_response_bytes:
                raise self._too_large()
            chunks.append(chunk)
        return b"".join(chunks)

    def _too_large(self) -> RetrieverError:
        limit = self.max_response_bytes
        return RetrieverError(f"retriever {self.name!r}: response larger than {limit} bytes")

    def _retry_after(self, response: httpx.Response) -> float:
        value = response.headers.get("retry-after", "")
        try:
            seconds = float(value)
        except ValueError:
            return 0.0
        return min(max(seconds, 0.0), self.max_backoff_s) if math.isfinite(seconds) else 0.0


def parse_results(
    body: bytes, k: int, name: str, observe: Callable[[list[ScoredDoc]], None] | None = None
) -> list[ScoredDoc]:
    """Validate a ``{"results": [{"id", "score"}]}`` body; return the top ``k`` results
    (``observe``, if given, first sees every result in the server's order).

    Ids may be strings or integers (turned into strings); scores finite numbers (not bools).
    Results are sorted by score descending (stable: the server's order breaks ties); the entries
    of the first ``k`` distinct ids are kept, repeats included (:func:`~service.retrievers.base.
    top_k_ids`: ``eval`` counts them as a run file's duplicates).

    Raises:
        RetrieverError: the body is not such a document; the message names the offending
            field, never its value.

    >>> parse_results(b'{"results": [{"id": "a", "score": 1}, {"id": 7, "score": 2.5}]}', 5, "x")
    [ScoredDoc(doc_id='7', score=2.5), ScoredDoc(doc_id='a', score=1.0)]
    """

    def bad(reason: str) -> RetrieverError:
        return RetrieverError(f"retriever {name!r}: bad response: {reason}")

    try:
        data = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError):
        raise bad("not valid JSON") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise bad("expected an object with a 'results' list")
    docs: list[ScoredDoc] = []
    for index, item in enumerate(data["results"]):
        if not isinstance(item, dict):
            raise bad(f"results[{index}] is not an object")
        doc_id, score = item.get("id"), item.get("score")
        if isinstance(doc_id, bool) or not isinstance(doc_id, str | int) or doc_id == "":
            raise bad(f"results[{index}].id is missing or not a non-empty string")
        if isinstance(score, bool) or not isinstance(score, int | float):
            raise bad(f"results[{index}].score is missing or not a number")
        if not math.isfinite(score):
            raise bad(f"results[{index}].score is not finite")
        docs.append(ScoredDoc(str(doc_id), float(score)))
    if observe is not None:
        observe(docs)
    return top_k_ids(docs, k)
