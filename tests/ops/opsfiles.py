"""Readers shared by the ops tests: the rules file, the dashboards, the metric names they use
and the metrics the service exports (built into a fresh registry)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import yaml
from prometheus_client import CollectorRegistry

REPO = Path(__file__).resolve().parents[2]
DASHBOARDS = REPO / "dashboards"
RULES_FILE = DASHBOARDS / "rules" / "goldwatch.rules.yaml"
RULE_TESTS = sorted((DASHBOARDS / "rules" / "tests").glob("*.yaml"))
CHART = REPO / "helm" / "goldwatch"
RUNBOOK = REPO / "docs" / "runbook.md"
RUNBOOK_URL = "https://github.com/goldwatch/goldwatch/blob/main/docs/runbook.md"

METRIC = re.compile(r"\bgoldwatch_[a-zA-Z0-9_]+")
RECORDED = re.compile(r"\bgoldwatch:[a-zA-Z0-9_:]+")
#: Grafana variables in queries, replaced to check the PromQL.
VARIABLES = re.compile(r"\$\{?([a-zA-Z_][a-zA-Z0-9_]*)\}?")


@cache
def rules() -> list[dict[str, Any]]:
    """Every rule of the rules file (recording and alerting), in order."""
    doc = yaml.safe_load(RULES_FILE.read_text(encoding="utf-8"))
    return [rule for group in doc["groups"] for rule in group["rules"]]


def alerts() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def records() -> dict[str, str]:
    """Recorded series name -> its expression."""
    return {rule["record"]: rule["expr"] for rule in rules() if "record" in rule}


def rule_texts() -> Iterator[tuple[str, str]]:
    """(where, text) of every expression and annotation of the rules file."""
    for rule in rules():
        name = rule.get("record") or rule["alert"]
        yield name, rule["expr"]
        for key, text in (rule.get("annotations") or {}).items():
            yield f"{name}.{key}", text


@cache
def dashboards() -> dict[str, dict[str, Any]]:
    """File name -> dashboard JSON."""
    return {path.name: json.loads(path.read_text(encoding="utf-8"))
            for path in sorted(DASHBOARDS.glob("*.json"))}  # fmt: skip


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel (rows' nested panels included), rows excluded."""
    for panel in dashboard["panels"]:
        if panel["type"] == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def dashboard_queries(dashboard: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(where, PromQL) of every panel target, query variable and annotation query."""
    for panel in panels(dashboard):
        for target in panel.get("targets", []):
            yield f"{panel['title']}/{target['refId']}", target["expr"]
    for variable in dashboard["templating"]["list"]:
        if variable["type"] == "query":
            query = variable["query"]["query"]
            inner = re.fullmatch(r"label_values\((.*),\s*[a-zA-Z_]+\)", query)
            yield f"${variable['name']}", inner.group(1) if inner else query
    for annotation in dashboard["annotations"]["list"]:
        if "expr" in annotation:
            yield f"annotation {annotation['name']}", annotation["expr"]


def promql_for_check(expr: str) -> str:
    """Replace Grafana variables by values promtool accepts (intervals, match-all regexes)."""

    def value(match: re.Match[str]) -> str:
        name = match.group(1)
        return "5m" if name in ("__rate_interval", "__interval", "__range") else ".*"

    return VARIABLES.sub(value, expr)


def metric_names(text: str) -> set[str]:
    return set(METRIC.findall(text))


def recorded_names(text: str) -> set[str]:
    return set(RECORDED.findall(text))


def used_by_dashboards() -> set[str]:
    """Raw metric names the dashboards show, directly or through recording rules."""
    texts = [expr for d in dashboards().values() for _, expr in dashboard_queries(d)]
    names = set().union(*(metric_names(t) for t in texts))
    pending = set().union(*(recorded_names(t) for t in texts))
    seen: set[str] = set()
    recorded = records()
    while pending:
        record = pending.pop()
        if record in seen or record not in recorded:
            continue
        seen.add(record)
        names |= metric_names(recorded[record])
        pending |= recorded_names(recorded[record])
    return names


def exposition_names(name: str, kind: str) -> set[str]:
    """The sample names Prometheus scrapes for a metric family (``_created`` excluded)."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count"),
                "summary": ("_sum", "_count", ""), "info": ("_info",)}.get(kind, ("",))  # fmt: skip
    return {name + suffix for suffix in suffixes}


@cache
def exported() -> dict[str, set[str]]:
    """Family name -> exposition names of every metric goldwatch exports."""
    from service.telemetry import build_all_metrics

    registry = CollectorRegistry()
    build_all_metrics(registry)
    return {family.name: exposition_names(family.name, family.type)
            for family in registry.collect()}  # fmt: skip


def name_list(path: Path) -> list[str]:
    """Names of a list file (one a line; ``#`` comments and blank lines ignored)."""
    lines = (line.split("#", 1)[0].strip() for line in path.read_text().splitlines())
    return [line.split()[0] for line in lines if line]
