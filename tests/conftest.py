"""Shared fixtures: where the real data sets live (../shared/data beside the checkout), the
Tansu broker (``tests/kafka_fixtures.py``), and the markers of the tiers.

The fast tier (README "Tests") is ``pytest -m "not (slow or kafka or prometheus or chromium or
reliability)"``. Besides the markers a test states itself, :func:`pytest_collection_modifyitems`
adds them from what the test uses, so they cannot be forgotten: a broker fixture → ``kafka``,
``promtool`` (also under the ``prometheus`` server fixtures) → ``prometheus``, ``chromium`` →
``chromium``, a file under ``tests/reliability/`` → ``reliability``.
"""

from __future__ import annotations

import functools
import os
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, settings

from tests.kafka_fixtures import BROKER_FIXTURES, broker, kafka_broker, start_broker

__all__ = ["broker", "kafka_broker", "start_broker"]  # fixtures for every folder

#: Hypothesis defaults for the whole suite, loaded before any test module builds its own
#: ``settings(...)`` (which inherit what they leave unset): no per-example deadline and no
#: ``too_slow`` health check. Both measure wall-clock time, which a loaded 2-core CI machine
#: stretches; they then fail a property that holds (hypothesis reports a deadline exceeded
#: once and met on the replay as ``Flaky``). Timings belong in ``benchmarks/``.
settings.register_profile("goldwatch", deadline=None, suppress_health_check=[HealthCheck.too_slow])
#: CI (``CI`` set, as ``.ci/run`` is called) draws the same examples every run: a landing
#: must not hang on which inputs a random draw found that day; a developer's run explores.
settings.register_profile("goldwatch-ci", parent=settings.get_profile("goldwatch"),
                          derandomize=True)  # fmt: skip
settings.load_profile("goldwatch-ci" if os.environ.get("CI") else "goldwatch")

#: httpx's module-level requests (``httpx.get`` …) default to a 5 s timeout, which made each of
#: the suite's ~120 requests that set none assert "the server answers within 5 s": a loaded
#: 2-core CI machine failed it (session 49: the demo server's status page, drawn on its first
#: request, in a module fixture's setup). Answer times belong in ``benchmarks/``; a request
#: that hangs still fails, after this many seconds; a request that sets its own keeps it.
REQUEST_TIMEOUT_S = 120.0
for _verb in ("request", "get", "post", "put", "patch", "delete", "head", "options", "stream"):
    setattr(httpx, _verb, functools.partial(getattr(httpx, _verb), timeout=REQUEST_TIMEOUT_S))

REPO_ROOT = Path(__file__).resolve().parents[1]
RELIABILITY = REPO_ROOT / "tests" / "reliability"
#: marker -> fixtures whose users get it (transitively: ``item.fixturenames`` is the closure).
MARK_BY_FIXTURE: dict[str, frozenset[str]] = {
    "kafka": BROKER_FIXTURES,
    "prometheus": frozenset({"promtool"}),
    "chromium": frozenset({"chromium"}),
}
#: Tiers whose tests run one at a time under pytest-xdist (one ``xdist_group``): they start
#: brokers, servers, browsers and pipelines of their own or measure wall-clock behaviour, and were
#: written for a machine where nothing else of the suite runs beside them.
HEAVY: tuple[str, ...] = ("slow", "kafka", "prometheus", "chromium", "reliability")
SHARED_DATA = Path(os.environ.get("GOLDWATCH_SHARED_DATA", REPO_ROOT.parent / "shared" / "data"))


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """Path of ``../shared/data``; the real data sets are required, never skipped silently."""
    if not SHARED_DATA.is_dir():
        pytest.fail(f"real data sets not found at {SHARED_DATA} (set GOLDWATCH_SHARED_DATA)")
    return SHARED_DATA


@pytest.fixture(scope="session")
def demo_replay(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """The demo query log (``service/demo/querylog.jsonl``, 3,000 events) pushed once per
    session through the full pipeline with the demo configuration (``goldwatch.yaml``, its gold
    set and corpus, harvest defaults: ``GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH`` unset): the
    report of :func:`service.jobs.replay.run_replay`. Shared by every test that asks for it:
    read it, never change it (``copy.deepcopy`` first)."""
    from service.demo import demo_path
    from service.jobs.replay import run_replay
    from service.settings import load_settings

    out = tmp_path_factory.mktemp("demo-replay")
    with pytest.MonkeyPatch.context() as patch:
        patch.delenv("GOLDWATCH_HARVEST__MAX_NEW_PER_BATCH", raising=False)
        settings = load_settings(demo_path("goldwatch.yaml"), gold_set=demo_path("gold.jsonl"),
                                 corpus=demo_path("corpus.jsonl"))  # fmt: skip
        return run_replay(settings, demo_path("querylog.jsonl"), None, out / "demo.dlq.jsonl")


def _in_group(item: pytest.Item, group: str) -> None:
    """Put ``item`` in xdist's ``group`` as ``--dist loadgroup`` means to: its node id ends
    in ``@group`` on the worker, and the controller's scheduler keeps one group's tests on one
    worker. pytest-xdist 3.8.0 (the newest) still writes ``item._nodeid``, which pytest 9.2's
    ``Node.nodeid`` (``str(self._id)``) no longer reads: every group was ignored and heavy
    tests ran on both workers at once (seen: ``tests/ops/test_rules.py``'s promtool tests split
    5 / 2). Rewritten through ``NodeId.parse``, which keeps the exact string."""
    node_id = str(item.nodeid)
    if not node_id.endswith(f"@{group}"):
        from _pytest.nodeid import NodeId

        item._id = NodeId.parse(f"{node_id}@{group}")  # type: ignore[attr-defined]


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto`` (pyproject's addopts): one worker per core this process may run on
    (``os.sched_getaffinity``; xdist's own count may take physical cores or the host's)."""
    return max(1, len(os.sched_getaffinity(0)))


@pytest.hookimpl(tryfirst=True)  # before ``-m`` deselects by the markers, and before xdist
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark each test by the real components it uses and by its folder (see the docstring).

    Under pytest-xdist (``-n auto --dist loadgroup``, pyproject's addopts) every test of a heavy
    tier (:data:`HEAVY`: real brokers, servers, browsers, subprocess pipelines, wall-clock and
    fault tests) goes to one group, so they run one at a time on one worker, as in a serial
    run, while the other workers take the fast tier's unit tests beside them."""
    grouped = config.pluginmanager.hasplugin("xdist")
    # on an xdist worker with --dist loadgroup (the group goes into the id the controller sees)
    suffix = grouped and hasattr(config, "workerinput") and bool(config.getvalue("loadgroup"))
    for item in items:
        used = set(getattr(item, "fixturenames", ()))
        for mark, fixtures in MARK_BY_FIXTURE.items():
            if used & fixtures and item.get_closest_marker(mark) is None:
                item.add_marker(mark)
        if item.path.is_relative_to(RELIABILITY) and not item.get_closest_marker("reliability"):
            item.add_marker("reliability")
        if grouped and any(item.get_closest_marker(mark) for mark in HEAVY):
            item.add_marker(pytest.mark.xdist_group("heavy"))
            if suffix:
                _in_group(item, "heavy")
