"""Metrics of the gold-set refresh: after an accepted suggestion, and when the file changed
on disk (an edit by hand, seen by the background check), ``serve`` reloads the gold-set file
and refits what depends on it in the background
(:meth:`service.runtime.process.Runtime.request_gold_refresh`); a refresh that fails keeps the old
gold set in use, so the accepted question is not gold yet and the next start may refuse the
file. Built by every ``serve`` (:class:`~service.runtime.process.Runtime`).

A file broken by hand starts no refresh at all: accepts are refused before they append
(503) and ``/readyz`` says 503, so the gauge also reads the file's own check at each scrape
(:meth:`GoldRefreshMetrics.watch_file`, trial 15: it stayed 0 while the file was broken) —
its remembered answer, which ``/readyz``, accepts and the runtime's background check (every
``GOLD_CHECK_S``, 10 s) keep current: a scrape reads no file.

======================================== ======= ====================================
name                                     type    labels
======================================== ======= ====================================
goldwatch_gold_refreshes_total           counter outcome (ok, failed; pre-initialised)
goldwatch_gold_refresh_failing           gauge   (1 while the newest refresh failed)
======================================== ======= ====================================

>>> from prometheus_client import CollectorRegistry
>>> registry = CollectorRegistry()
>>> metrics = build_gold_refresh_metrics(registry)
>>> metrics.observe(ok=False)
>>> registry.get_sample_value("goldwatch_gold_refreshes_total", {"outcome": "failed"})
1.0
>>> registry.get_sample_value("goldwatch_gold_refresh_failing")
1.0
>>> metrics.observe(ok=True)
>>> registry.get_sample_value("goldwatch_gold_refresh_failing")
0.0
>>> problem: list[str | None] = ["gold.jsonl, line 53 (id 'q-53'), field 'kind': ..."]
>>> metrics.watch_file(lambda: problem[0])
>>> registry.get_sample_value("goldwatch_gold_refresh_failing")
1.0
>>> problem[0] = None
>>> registry.get_sample_value("goldwatch_gold_refresh_failing")
0.0
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry, Counter, Gauge

from service.telemetry.conventions import metric_name as _name

#: Outcomes of a gold-set refresh.
GOLD_REFRESH_OUTCOMES: tuple[str, ...] = ("ok", "failed")


@dataclass(frozen=True, slots=True)
class GoldRefreshMetrics:
    """Metrics of the gold-set refresh; build with :func:`build_gold_refresh_metrics`."""

    refreshes: Counter
    failing: Gauge
    #: [whether the newest refresh failed] (a one-item list: the dataclass is frozen)
    _newest_failed: list[bool] = field(default_factory=lambda: [False])

    def observe(self, ok: bool) -> None:
        """Count one finished refresh; the newest refresh's outcome is what ``failing``
        reports (0 after a success, 1 after a failure: the gold set in use is then older
        than the file), together with the file's check once :meth:`watch_file` is set."""
        self.refreshes.labels(outcome="ok" if ok else "failed").inc()
        self._newest_failed[0] = not ok
        self.failing.set(0 if ok else 1)  # without watch_file; ignored once it is set

    def watch_file(self, problem: Callable[[], str | None]) -> None:
        """From now on ``failing`` is computed at each scrape: 1 while the newest refresh
        failed or ``problem()`` names why the gold-set file as it is now would be refused
        (by a refresh, an accept or the next start), else 0.

        Args:
            problem: the file's check's answer, e.g.
                :meth:`service.data.goldset.GoldFileCheck.last_problem` (remembered: no I/O);
                ``None`` when the file loads. It runs on the scraping thread (the HTTP event
                loop), so it must be cheap, thread-safe and must not raise.
        """

        def value() -> float:
            return 1.0 if self._newest_failed[0] or problem() is not None else 0.0

        self.failing.set_function(value)


def build_gold_refresh_metrics(registry: CollectorRegistry) -> GoldRefreshMetrics:
    """Register the gold-set refresh metrics on ``registry`` (both outcomes at 0, the gauge
    at 0).

    Raises:
        ValueError: already registered on ``registry``.
    """
    refreshes = Counter(
        _name("gold_refreshes"),
        "Gold-set refreshes after accepted suggestions or a change of the file on disk, by "
        "outcome (failed: the old gold set stays in use; GET /v1/status gold_refresh_error "
        "says why).",
        ["outcome"],
        registry=registry,
    )
    for outcome in GOLD_REFRESH_OUTCOMES:
        refreshes.labels(outcome=outcome)
    failing = Gauge(
        _name("gold_refresh_failing"),
        "1 while the newest gold-set refresh failed (accepted questions are not gold yet) "
        "or the gold-set file as it is now would be refused (accepts answer 503, /readyz "
        "503, the next start stops), else 0.",
        registry=registry,
    )
    failing.set(0)
    return GoldRefreshMetrics(refreshes, failing)
