"""schemathesis against the live OpenAPI document of ``goldwatch serve``: no 5xx.

Every operation of ``/openapi.json`` gets a few generated requests (bounded: ``MAX_EXAMPLES``
each), with the bearer token so mutating routes are exercised past authentication. Skipped
when schemathesis is not installed (it belongs in the ``test`` extra).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from typing import Any

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from service.demo import demo_path  # noqa: E402
from tests.acceptance.service_process import TOKEN, ServiceProcess  # noqa: E402

MAX_EXAMPLES = 12


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
            if response.status_code >= 500:
                failures.append(
                    f"{case.method} {case.formatted_path} -> {response.status_code}: "
                    f"{response.text[:200]}"
                )

        check()
    assert operations >= 5 and len(calls) >= 3 * operations, (operations, len(calls))
    print(f"\n{operations} operations, {len(calls)} requests, statuses {sorted(set(calls))}")
    assert not failures, "\n".join(failures) + serve.log_tail(1500)
    assert serve.alive
