"""schemathesis against the live OpenAPI document of ``goldwatch serve``: no 5xx, and every
answer conforms to the document (status code, content type, headers, body schema); ``HEAD``
works on every ``GET`` route.

Every operation of ``/openapi.json`` gets a few generated requests (bounded: ``MAX_EXAMPLES``
each), with the bearer token so mutating routes are exercised past authentication. Skipped
when schemathesis is not installed (it belongs in the ``test`` extra).

schemathesis' default checks all run except ``positive_data_acceptance`` (a request valid by
the schema must not get a 4xx): two routes refuse schema-valid requests by design — an accept
whose gold passages do not fit its kind or are not in the corpus (422), and an ingest whose
events miss the configured fields (400, dead-lettered: the field mapping is configuration,
so the document cannot state it).

Before (issue 19): ``HEAD`` got 405 everywhere; ``/v1/shadow`` answered an undocumented 404,
the report routes an undocumented 503 when busy, and ``POST /v1/events`` declared no body.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

import httpx  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402
from schemathesis.specs.openapi.checks import positive_data_acceptance  # noqa: E402

from service.demo import demo_path  # noqa: E402
from tests.acceptance.service_process import TOKEN, ServiceProcess  # noqa: E402

MAX_EXAMPLES = 12
#: The one default check left out (see the module docstring).
POSITIVE_DATA_ACCEPTANCE = positive_data_acceptance


@pytest.fixture(scope="module")
def serve(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServiceProcess]:
    """serve with HTTP ingest only, harvesting and labelling on (a gold set of its own)."""
    workdir = tmp_path_factory.mktemp("schemathesis")
    for name in ("gold.jsonl", "corpus.jsonl"):
        shutil.copy(demo_path(name), workdir / name)
    config = {
        "gold_set": str(workdir / "gold.jsonl"),
        "corpus": str(workdir / "corpus.jsonl"),
        "source": {"kind": "none"},
        "state": {"path": str(workdir / "state" / "state.sqlite")},
    }
    service = ServiceProcess.start(workdir, config)
    try:
        yield service
    finally:
        service.kill()


def test_no_server_errors(serve: ServiceProcess) -> None:
    """Every operation, ``MAX_EXAMPLES`` generated requests each (schemathesis' own pytest
    plugin does not run under pytest 9, so its strategies drive plain hypothesis)."""
    schema = schemathesis.openapi.from_url(serve.base_url + "/openapi.json")
    failures: list[str] = []
    calls: list[int] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def check(case: Any) -> None:
            response = case.call(
                base_url=serve.base_url,
                headers={"Authorization": f"Bearer {TOKEN}"},
                timeout=30,
            )
            calls.append(response.status_code)
            try:
                case.validate_response(response, excluded_checks=[POSITIVE_DATA_ACCEPTANCE])
            except BaseException as exc:  # FailureGroup is a BaseExceptionGroup
                if isinstance(exc, KeyboardInterrupt):
                    raise
                failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{str(exc)[:600]}"
                )

        check()
    assert operations >= 5 and len(calls) >= 3 * operations, (operations, len(calls))
    print(f"\n{operations} operations, {len(calls)} requests, statuses {sorted(set(calls))}")
    assert not failures, "\n".join(failures) + serve.log_tail(1500)
    assert serve.alive


def test_head_answers_like_get_without_a_body(serve: ServiceProcess) -> None:
    """Every ``GET`` route without path parameters: ``HEAD`` gets GET's status and headers
    (``content-length`` included) and no body; a POST-only route still answers 405."""
    document = httpx.get(serve.base_url + "/openapi.json").json()
    paths = [p for p, ops in document["paths"].items() if "get" in ops and "{" not in p]
    assert "/healthz" in paths and "/v1/status" in paths and "/metrics" in paths
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for path in paths:
        got = httpx.get(serve.base_url + path, headers=auth, timeout=30)
        head = httpx.head(serve.base_url + path, headers=auth, timeout=30)
        assert head.status_code == got.status_code, (path, head.status_code, got.status_code)
        assert head.content == b"", path
        assert head.headers["content-type"] == got.headers["content-type"], path
        if path not in ("/metrics", "/v1/status", "/readyz", "/"):  # these change over time
            assert head.headers["content-length"] == got.headers["content-length"], path
    assert httpx.head(serve.base_url + "/v1/shadow/evaluate", timeout=30).status_code == 200
    assert httpx.head(serve.base_url + "/v1/events", timeout=30).status_code == 405
