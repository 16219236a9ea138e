"""Grafana JSON building blocks: panels with a unit and a description, variables, layout.

Every panel queries the ``${datasource}`` variable (no data source uid is hard-coded); the
``job`` and ``namespace`` variables filter every query (``SEL``).
"""

from __future__ import annotations

from typing import Any

DS = {"type": "prometheus", "uid": "${datasource}"}
SEL = 'job=~"$job", namespace=~"$namespace"'
RATE = "$__rate_interval"

Panel = dict[str, Any]


def target(expr: str, legend: str = "", *, ref: str = "A", instant: bool = False) -> Panel:
    """One Prometheus query of a panel."""
    out: Panel = {"datasource": DS, "expr": expr, "legendFormat": legend or "__auto",
                  "refId": ref, "range": not instant, "instant": instant}  # fmt: skip
    if instant:
        out["format"] = "table"
    return out


def _targets(queries: list[tuple[str, str]], instant: bool = False) -> list[Panel]:
    return [target(q, legend, ref=chr(ord("A") + i), instant=instant)
            for i, (q, legend) in enumerate(queries)]  # fmt: skip


def _thresholds(*steps: tuple[float | None, str]) -> Panel:
    return {"mode": "absolute", "steps": [{"color": c, "value": v} for v, c in steps]}


def timeseries(title: str, description: str, queries: list[tuple[str, str]], unit: str, *,
               stack: bool = False, maximum: float | None = None, log: bool = False,
               threshold: float | None = None) -> Panel:  # fmt: skip
    """A time-series panel; ``threshold`` draws a dashed line at that value."""
    custom: Panel = {
        "drawStyle": "line", "lineWidth": 1, "fillOpacity": 25 if stack else 10,
        "showPoints": "never", "spanNulls": False, "axisSoftMin": 0,
        "stacking": {"mode": "normal" if stack else "none", "group": "A"},
        "thresholdsStyle": {"mode": "dashed" if threshold is not None else "off"},
    }  # fmt: skip
    if log:
        custom["scaleDistribution"] = {"type": "log", "log": 10}
        del custom["axisSoftMin"]
    defaults: Panel = {
        "unit": unit, "custom": custom, "color": {"mode": "palette-classic"},
        "thresholds": _thresholds((None, "green"), *(((threshold, "red"),) if threshold else ())),
    }  # fmt: skip
    if maximum is not None:
        defaults["max"] = maximum
    return {
        "type": "timeseries", "title": title, "description": description, "datasource": DS,
        "targets": _targets(queries), "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {
            "legend": {"showLegend": True, "displayMode": "table", "placement": "bottom",
                       "calcs": ["lastNotNull", "max"]},
            "tooltip": {"mode": "multi", "sort": "desc"},
        },
    }  # fmt: skip


def stat(title: str, description: str, queries: list[tuple[str, str]], unit: str,
         steps: tuple[tuple[float | None, str], ...] = ((None, "green"),)) -> Panel:  # fmt: skip
    """A single-value panel (last value, with a sparkline)."""
    return {
        "type": "stat", "title": title, "description": description, "datasource": DS,
        "targets": _targets(queries),
        "fieldConfig": {"defaults": {"unit": unit, "thresholds": _thresholds(*steps),
                                     "color": {"mode": "thresholds"}}, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "value", "graphMode": "area", "textMode": "auto",
                    "justifyMode": "auto", "orientation": "auto"},
    }  # fmt: skip


def bargauge(title: str, description: str, queries: list[tuple[str, str]], unit: str,
             steps: tuple[tuple[float | None, str], ...]) -> Panel:  # fmt: skip
    """Horizontal bars of the latest value per series (instant query)."""
    return {
        "type": "bargauge", "title": title, "description": description, "datasource": DS,
        "targets": [dict(t, format="time_series") for t in _targets(queries, instant=True)],
        "fieldConfig": {"defaults": {"unit": unit, "min": 0, "thresholds": _thresholds(*steps),
                                     "color": {"mode": "thresholds"}}, "overrides": []},
        "options": {"displayMode": "gradient", "orientation": "horizontal", "showUnfilled": True,
                    "reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False}},
    }  # fmt: skip


def table(title: str, description: str, queries: list[tuple[str, str]], unit: str) -> Panel:
    """The latest value per label set, as a table (instant query)."""
    return {
        "type": "table", "title": title, "description": description, "datasource": DS,
        "targets": _targets(queries, instant=True),
        "fieldConfig": {"defaults": {"unit": unit, "custom": {"align": "auto"},
                                     "thresholds": _thresholds((None, "green"))},
                        "overrides": []},
        "options": {"showHeader": True, "cellHeight": "sm"},
        "transformations": [{"id": "organize", "options": {"excludeByName": {"Time": True}}}],
    }  # fmt: skip


def state_timeline(title: str, description: str, queries: list[tuple[str, str]],
                   mappings: dict[str, tuple[str, str]]) -> Panel:  # fmt: skip
    """Discrete states over time; ``mappings``: value -> (text, colour)."""
    options = {v: {"text": text, "color": color, "index": i}
               for i, (v, (text, color)) in enumerate(mappings.items())}  # fmt: skip
    return {
        "type": "state-timeline", "title": title, "description": description, "datasource": DS,
        "targets": _targets(queries),
        "fieldConfig": {"defaults": {"unit": "none", "color": {"mode": "thresholds"},
                                     "thresholds": _thresholds((None, "green")),
                                     "mappings": [{"type": "value", "options": options}],
                                     "custom": {"fillOpacity": 80, "lineWidth": 0}},
                        "overrides": []},
        "options": {"mergeValues": True, "showValue": "never", "alignValue": "left",
                    "rowHeight": 0.9, "legend": {"showLegend": True, "displayMode": "list",
                                                 "placement": "bottom"},
                    "tooltip": {"mode": "single", "sort": "none"}},
    }  # fmt: skip


def no_value(note: str, panel: Panel) -> Panel:
    """``panel`` showing ``note`` instead of "No data" (``fieldConfig.defaults.noValue``): say
    when a panel that is empty on a fresh deployment fills."""
    panel["fieldConfig"]["defaults"]["noValue"] = note
    return panel


def row(title: str) -> Panel:
    return {"type": "row", "title": title, "collapsed": False, "panels": []}


def _layout(panels: list[Panel | list[Panel]]) -> list[Panel]:
    """Give every panel an id and a gridPos: rows span the width, a list is one line of panels."""
    out: list[Panel] = []
    y = 0
    for item in panels:
        line = item if isinstance(item, list) else [item]
        if line[0]["type"] == "row":
            out.append(dict(line[0], gridPos={"h": 1, "w": 24, "x": 0, "y": y}))
            y += 1
            continue
        width = 24 // len(line)
        for i, panel in enumerate(line):
            out.append(dict(panel, gridPos={"h": 8, "w": width, "x": i * width, "y": y}))
        y += 8
    for i, panel in enumerate(out, start=1):
        panel["id"] = i
    return out


def query_variable(name: str, label: str, query: str) -> Panel:
    return {
        "type": "query", "name": name, "label": label, "datasource": DS,
        "definition": query, "query": {"query": query, "refId": f"{name}-variable"},
        "includeAll": True, "allValue": ".*", "multi": True, "refresh": 2, "sort": 1,
        "current": {"selected": True, "text": ["All"], "value": ["$__all"]},
        "hide": 0, "options": [], "regex": "", "skipUrlSync": False,
    }  # fmt: skip


def _variables(extra: list[Panel]) -> list[Panel]:
    datasource = {
        "type": "datasource", "name": "datasource", "label": "Data source", "query": "prometheus",
        "current": {}, "hide": 0, "includeAll": False, "multi": False, "options": [],
        "refresh": 1, "regex": "", "skipUrlSync": False,
    }  # fmt: skip
    return [
        datasource,
        query_variable("job", "Job", "label_values(goldwatch_build_info, job)"),
        query_variable("namespace", "Namespace",
                        'label_values(goldwatch_build_info{job=~"$job"}, namespace)'),
        *extra,
    ]  # fmt: skip


ALERTS = ("RefusalRateMoved|OverRefusal|UnderRefusal|LanguageDrift|TopicDrift|DriftDetected|"
          "DriftAlarmRaised|DriftAlarmEndedUntested|CoverageGap|GoldRecallDropped|ShadowCandidateFailing|"
          "ShadowAgreementDropped|"
          "ACLViolation|ConsumerLagHigh|"
          "DeadLetterRateHigh|NoEventsReceived|GoldSetRefreshFailing|StateFileNotDurable|"
          "GoldwatchDown")  # fmt: skip


def dashboard(uid: str, title: str, description: str, panels: list[Panel | list[Panel]],
              variables: list[Panel]) -> Panel:  # fmt: skip
    """A whole dashboard, with the firing goldwatch alerts as annotations."""
    return {
        "annotations": {"list": [
            {"builtIn": 1, "datasource": {"type": "grafana", "uid": "-- Grafana --"},
             "enable": True, "hide": True, "iconColor": "rgba(0, 211, 255, 1)",
             "name": "Annotations & Alerts", "type": "dashboard"},
            {"datasource": DS, "enable": True, "hide": False, "iconColor": "red",
             "name": "goldwatch alerts", "titleFormat": "{{alertname}}",
             "textFormat": "{{alertname}} {{severity}}", "useValueForTime": False, "step": "1m",
             "expr": f'ALERTS{{alertname=~"{ALERTS}", alertstate="firing", {SEL}}}'},
        ]},
        "description": description, "editable": True, "fiscalYearStartMonth": 0,
        "graphTooltip": 1, "id": None,
        "links": [{"type": "dashboards", "tags": ["goldwatch"], "asDropdown": False,
                   "title": "goldwatch", "includeVars": True, "keepTime": True}],
        "panels": _layout(panels), "refresh": "1m", "schemaVersion": 39,
        "tags": ["goldwatch"], "templating": {"list": _variables(variables)},
        "time": {"from": "now-24h", "to": "now"}, "timepicker": {}, "timezone": "browser",
        "title": title, "uid": uid, "version": 1, "weekStart": "",
    }  # fmt: skip


def summed(series: str, by: str = "") -> str:
    """``sum [by (...)] (series{job, namespace selectors})``."""
    return f"sum{f' by ({by})' if by else ''} ({series}{{{SEL}}})"
