"""HttpRetriever against a real HTTP server on 127.0.0.1 (see conftest.FakeServer)."""

from __future__ import annotations

import time

import pytest

from service.records import ScoredDoc
from service.retrievers.base import RetrieverError
from service.retrievers.http import HttpRetriever
from tests.ports import free_port
from tests.service.retrievers.retriever_fakes import FakeServer, Reply

SECRET_QUESTION = "what is the salary of Jane Doe 4711?"


def client(server: FakeServer, **kwargs: object) -> HttpRetriever:
    options: dict[str, object] = {"name": "remote", "retries": 2, "backoff_s": 0.01}
    options.update(kwargs)
    return HttpRetriever(server.url, **options)  # type: ignore[arg-type]


def test_success_sends_question_k_and_headers(fake_server: FakeServer) -> None:
    with client(fake_server, headers={"Authorization": "Bearer t0k"}) as remote:
        results = remote.search(SECRET_QUESTION, 3)
    assert results == [ScoredDoc("d1", 1.0), ScoredDoc("d2", 0.5), ScoredDoc("d3", 1 / 3)]
    assert fake_server.requests == [{"question": SECRET_QUESTION, "k": 3}]
    assert fake_server.headers[0]["authorization"] == "Bearer t0k"
    assert remote.retries_total == 0


def test_a_500_then_success_is_retried_once(fake_server: FakeServer) -> None:
    fake_server.script.append(Reply(500, b"oops"))
    with client(fake_server) as remote:
        assert len(remote.search("q", 2)) == 2
        assert remote.retries_total == 1
    assert len(fake_server.requests) == 2


def test_429_is_retried(fake_server: FakeServer) -> None:
    fake_server.script.extend([Reply(429, b""), Reply(503, b"")])
    with client(fake_server) as remote:
        assert len(remote.search("q", 1)) == 1
        assert remote.retries_total == 2


def test_permanent_500_fails_after_all_retries(fake_server: FakeServer) -> None:
    fake_server.responder = lambda payload: Reply(500, b"down")
    with client(fake_server, retries=3) as remote, pytest.raises(RetrieverError) as caught:
        remote.search(SECRET_QUESTION, 5)
    assert len(fake_server.requests) == 4  # 1 attempt + 3 retries
    assert "HTTP 500" in str(caught.value) and "4 attempt" in str(caught.value)
    assert SECRET_QUESTION not in str(caught.value)


def test_400_is_not_retried(fake_server: FakeServer) -> None:
    fake_server.responder = lambda payload: Reply(400, b'{"detail": "bad"}')
    with client(fake_server) as remote, pytest.raises(RetrieverError, match="HTTP 400"):
        remote.search("q", 5)
    assert len(fake_server.requests) == 1


def test_timeout_raises_after_retries(fake_server: FakeServer) -> None:
    # The server would answer after 60 s: a search that ends sooner was ended by its timeout.
    fake_server.responder = lambda payload: Reply(200, b'{"results": []}', delay_s=60.0)
    started = time.monotonic()
    with client(fake_server, timeout_s=0.2, retries=1) as remote:
        with pytest.raises(RetrieverError, match="timed out"):
            remote.search(SECRET_QUESTION, 5)
    elapsed = time.monotonic() - started
    # Each of the 2 attempts waited its 0.2 s read timeout; 30 s: a bound for a loaded
    # machine, half the server's delay, not a timing.
    assert 0.4 <= elapsed < 30.0
    # The server records a request when its handler runs, which a loaded machine may delay
    # past the client's timeout: wait for it (60 s: a bound).
    deadline = time.monotonic() + 60
    while len(fake_server.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.005)
    assert len(fake_server.requests) == 2


def test_connection_refused_is_a_retried_transport_error() -> None:
    # A port with no listener, below the ephemeral range: a connect() to an ephemeral port
    # can be given that very port as its source and connect to itself (tests/ports.py).
    port = free_port()
    remote = HttpRetriever(f"http://127.0.0.1:{port}/", retries=1, backoff_s=0.01)
    with remote, pytest.raises(RetrieverError, match="transport error"):
        remote.search("q", 1)
    assert remote.retries_total == 1


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<html>" + SECRET_QUESTION.encode() + b"</html>", "not valid JSON"),
        (b'{"question": "' + SECRET_QUESTION.encode() + b'"}', "'results' list"),
        (b'{"results": [{"score": 1.0}]}', r"results\[0\]\.id"),
        (b'{"results": [{"id": "a", "score": "high"}]}', r"results\[0\]\.score"),
        (b'{"results": [{"id": "a", "score": true}]}', r"results\[0\]\.score"),
        (b'{"results": [{"id": "a", "score": 1}, "b"]}', r"results\[1\] is not an object"),
        (b'{"results": [{"id": "a", "score": NaN}]}', "not finite"),
    ],
)
def test_bad_responses_fail_with_a_reason_and_no_question(
    fake_server: FakeServer, body: bytes, reason: str
) -> None:
    fake_server.responder = lambda payload: Reply(200, body)
    with client(fake_server) as remote, pytest.raises(RetrieverError, match=reason) as caught:
        remote.search(SECRET_QUESTION, 5)
    assert SECRET_QUESTION not in str(caught.value)
    assert "Jane" not in str(caught.value)
    assert len(fake_server.requests) == 1  # a bad body is not retried


def test_oversized_response_is_refused(fake_server: FakeServer) -> None:
    big = b'{"results": [' + b",".join([b'{"id": "x", "score": 1}'] * 100) + b"]}"
    fake_server.responder = lambda payload: Reply(200, big)
    with client(fake_server, max_response_bytes=500) as remote:
        with pytest.raises(RetrieverError, match="larger than 500 bytes"):
            remote.search("q", 5)


def test_results_are_sorted_and_cut_to_k_ids_repeats_kept(fake_server: FakeServer) -> None:
    """A repeated id is kept (eval counts it as a run file's duplicate, trial 11); ``k``
    counts distinct ids, so k=2 keeps b, 7 and b's repeat, not a."""
    body = b'{"results": [{"id": "a", "score": 1}, {"id": "b", "score": 3}, {"id": 7, "score": 2},'
    body += b' {"id": "b", "score": 0.5}], "took_ms": 4}'
    fake_server.responder = lambda payload: Reply(200, body)
    with client(fake_server) as remote:
        assert remote.search("q", 2) == [("b", 3.0), ("7", 2.0), ("b", 0.5)]
        assert remote.search("q", 10) == [("b", 3.0), ("7", 2.0), ("a", 1.0), ("b", 0.5)]


def test_search_batch_keeps_input_order(fake_server: FakeServer) -> None:
    def echo(payload: dict[str, object]) -> Reply:
        time.sleep(0.01 * (len(str(payload["question"])) % 3))
        body = f'{{"results": [{{"id": "{payload["question"]}", "score": 1}}]}}'
        return Reply(200, body.encode())

    fake_server.responder = echo
    questions = [f"q{i}" for i in range(12)]
    with client(fake_server, concurrency=4) as remote:
        batch = remote.search_batch(questions, 1)
    assert [results[0].doc_id for results in batch] == questions


def test_the_returned_order_is_counted_before_sorting(fake_server: FakeServer) -> None:
    """Trial 12 F12: ``eval`` warns of distances from the lists as the server sent them;
    the retriever sorts them (score descending) before anyone else sees them. Two ascending
    replies and one descending: 2 rising of 3 ordered."""
    ascending = b'{"results": [{"id": "g", "score": 0.1}, {"id": "x", "score": 0.2}]}'
    descending = b'{"results": [{"id": "g", "score": 0.9}, {"id": "x", "score": 0.2}]}'
    fake_server.script.extend([Reply(200, ascending), Reply(200, ascending),
                               Reply(200, descending)])  # fmt: skip
    with client(fake_server, concurrency=1) as remote:
        found = remote.search_batch(["a", "b", "c"], 2)
    assert found[0] == [ScoredDoc("x", 0.2), ScoredDoc("g", 0.1)]
    assert (remote.returned_order.rising, remote.returned_order.ordered) == (2, 3)
