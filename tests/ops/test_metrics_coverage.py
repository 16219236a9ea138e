"""Dashboards and rules use only metrics the service exports (built with
``service.telemetry.build_metrics`` and ``build_analytics_metrics`` into a fresh registry) or
lists as pending; every exported family is on a dashboard or listed as hidden."""

from __future__ import annotations

import re

from tests.ops import opsfiles

HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")
PENDING = opsfiles.DASHBOARDS / "pending_metrics.txt"
HIDDEN = opsfiles.DASHBOARDS / "hidden_metrics.txt"


def _exposed() -> set[str]:
    return set().union(*opsfiles.exported().values())


def _pending(name: str, pending: set[str]) -> bool:
    base = next((name.removesuffix(s) for s in HISTOGRAM_SUFFIXES if name.endswith(s)), name)
    return name in pending or base in pending


def _used() -> dict[str, set[str]]:
    """Metric name -> where the dashboards and the rules use it."""
    where: dict[str, set[str]] = {}
    texts = list(opsfiles.rule_texts())
    for name, dashboard in opsfiles.dashboards().items():
        texts += [(f"{name}: {w}", q) for w, q in opsfiles.dashboard_queries(dashboard)]
    for place, text in texts:
        for metric in opsfiles.metric_names(text):
            where.setdefault(metric, set()).add(place)
    return where


def test_every_used_metric_is_exported_or_pending() -> None:
    exposed, pending = _exposed(), set(opsfiles.name_list(PENDING))
    unknown = {metric: sorted(places) for metric, places in _used().items()
               if metric not in exposed and not _pending(metric, pending)}  # fmt: skip
    assert unknown == {}, "neither exported by service/telemetry/ nor in pending_metrics.txt"


def test_pending_metrics_are_used_and_not_yet_exported() -> None:
    """Once the service exports a pending metric, drop it from pending_metrics.txt."""
    pending, exposed = opsfiles.name_list(PENDING), _exposed()
    families = set(opsfiles.exported())
    landed = [m for m in pending if m in exposed or m in families]
    assert landed == [], "exported now: remove from dashboards/pending_metrics.txt"
    used = _used()
    unused = [m for m in pending if not any(_pending(u, {m}) for u in used)]
    assert unused == []


def test_every_exported_family_is_on_a_dashboard_or_hidden() -> None:
    shown = opsfiles.used_by_dashboards()
    hidden = set(opsfiles.name_list(HIDDEN))
    missing = [family for family, names in sorted(opsfiles.exported().items())
               if not names & shown and family not in hidden and not names & hidden]  # fmt: skip
    assert missing == [], "add a panel, or list it in dashboards/hidden_metrics.txt with why"


def test_hidden_metrics_are_exported_and_really_hidden() -> None:
    exported = opsfiles.exported()
    shown = opsfiles.used_by_dashboards()
    for name in opsfiles.name_list(HIDDEN):
        names = exported.get(name) or next((n for n in exported.values() if name in n), None)
        assert names, f"{name} is not exported"
        assert not names & shown, f"{name} is listed as hidden but a dashboard shows it"


def test_coverage_check_sees_every_kind_of_metric() -> None:
    """Sanity: counters expose _total, histograms _bucket/_sum/_count, gauges their name."""
    exported = opsfiles.exported()
    assert exported["goldwatch_events_consumed"] == {"goldwatch_events_consumed_total"}
    assert "goldwatch_batch_size_bucket" in exported["goldwatch_batch_size"]
    assert exported["goldwatch_consumer_lag"] == {"goldwatch_consumer_lag"}
    assert len(exported) >= 28


def test_readme_counts_match_the_files() -> None:
    """dashboards/README.md's counts of alerts and hidden metrics are the files' (trial 38: it
    said 13 alerts with 15 in the rules file, and "none today" with 5 hidden metrics)."""
    readme = (opsfiles.DASHBOARDS / "README.md").read_text(encoding="utf-8")
    (alerts,) = re.findall(r"and (\d+) alerts, one group", readme)
    assert int(alerts) == len(opsfiles.alerts())
    (hidden,) = re.findall(r"\((\d+) today;", readme)
    assert int(hidden) == len(opsfiles.name_list(HIDDEN))
