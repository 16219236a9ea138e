"""The telemetry package stays the one place metrics are defined: every metric its modules
define is registered by ``build_all_metrics`` (so ``docs/metrics.md`` lists it), and the
names other modules import from ``service.telemetry`` keep working after the split into one
module per metric family."""

from __future__ import annotations

import ast
import importlib
import pkgutil
from pathlib import Path

import pytest
from prometheus_client import CollectorRegistry

import service.telemetry as telemetry
from service.telemetry.families import FAMILIES, build_all_metrics

PACKAGE = Path(telemetry.__file__).parent
#: What the metric modules call with a metric's short name as first argument: the namespace
#: helper (imported as ``_name``) and the builders' local ``counter``/``gauge``/``summary``.
NAMING_CALLS = {"_name", "metric_name", "counter", "gauge", "summary"}
#: Every public name of service/telemetry.py before the split (commit 7288879), read off
#: that file by hand: other modules and branches import these from ``service.telemetry``.
PUBLIC_BEFORE_SPLIT = """
NAMESPACE OTHER SOURCES DEAD_LETTER_REASONS FIELD_DROP_REASONS BATCH_SIZE_BUCKETS
BATCH_SECONDS_BUCKETS bounded_label source_label BatchCounts STATUS_COUNTERS Metrics
build_metrics DRIFT_DIMENSIONS DRIFT_COMPARISONS DRIFT_STATES DETECTORS OPERATING_RATES
PII_TYPES AnalyticsMetrics build_analytics_metrics SHADOW_MEASURES SHADOW_BREAKDOWN_MEASURES
SHADOW_OUTCOMES SHADOW_ERRORS BREAKER_STATES AGREEMENT_BUCKETS SHADOW_SECONDS_BUCKETS
GOLD_CUT_MEASURES KNOWN_REFUSAL_KINDS PRODUCTION ALL ShadowMetrics build_shadow_metrics
HarvestMetrics HARVEST_KNOWN_VIA HARVEST_SINKS build_harvest_metrics TraceMetrics
TRACE_ASSEMBLED_WHY TRACE_SPAN_REJECT_REASONS TRACE_UNMAPPED_REASONS TRACE_REPEAT_REASONS
TRACE_PAYLOAD_REASONS build_trace_metrics
""".split()


def _defined_in_source() -> dict[str, str]:
    """``goldwatch_<name>`` -> module, for every string literal the package's modules pass
    as a metric's name (read from the source text, not from a registry)."""
    defined: dict[str, str] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id in NAMING_CALLS and node.args
                    and isinstance(node.args[0], ast.Constant)
                    and isinstance(node.args[0].value, str)):  # fmt: skip
                defined[f"goldwatch_{node.args[0].value}"] = path.stem
    return defined


def _registered(registry: CollectorRegistry) -> set[str]:
    """The metric names on ``registry`` as defined (counters without ``_total``)."""
    collectors = registry._collector_to_names  # noqa: SLF001 - no public API lists collectors
    return {str(collector._name) for collector in collectors}  # type: ignore[attr-defined]


def test_every_metric_the_package_defines_is_registered_by_build_all_metrics() -> None:
    registry = CollectorRegistry()
    build_all_metrics(registry)
    defined = _defined_in_source()
    assert len(defined) >= 78  # the 78 metrics of service/telemetry.py at the split, at least
    missing = {name: module for name, module in defined.items()
               if name not in _registered(registry)}  # fmt: skip
    assert missing == {}, "add the family's builder to service/telemetry/families.py FAMILIES"


def test_every_family_builds_on_its_own_registry_and_none_overlaps() -> None:
    """The docs list each family from its own registry; together they are what one
    registry holds (no metric in two families, none only reachable together)."""
    per_family = []
    for family in FAMILIES:
        registry = CollectorRegistry()
        family.build(registry)
        per_family.append(_registered(registry))
    everything = CollectorRegistry()
    build_all_metrics(everything)
    assert sum(len(names) for names in per_family) == len(_registered(everything))
    assert set().union(*per_family) == _registered(everything)
    with pytest.raises(ValueError, match="Duplicated timeseries"):
        build_all_metrics(everything)  # build once per registry


def test_family_keys_name_the_modules_that_define_them() -> None:
    defined = _defined_in_source()
    for family in FAMILIES:
        registry = CollectorRegistry()
        family.build(registry)
        modules = {defined[name] for name in _registered(registry)}
        # the live-path family registers goldwatch_build_info from build_info.py
        assert modules - {"build_info"} == {family.key}, family.title


@pytest.mark.parametrize("name", PUBLIC_BEFORE_SPLIT)
def test_every_name_imported_before_the_split_is_still_exported(name: str) -> None:
    assert name in telemetry.__all__
    value = getattr(telemetry, name)
    modules = [importlib.import_module(f"service.telemetry.{m.name}")
               for m in pkgutil.iter_modules([str(PACKAGE)])]  # fmt: skip
    homes = [m.__name__ for m in modules if name in vars(m) and vars(m)[name] is value]
    assert homes, f"{name} is not defined in a module of the package"


def test_all_lists_only_names_the_package_has() -> None:
    assert sorted(set(telemetry.__all__)) == sorted(telemetry.__all__)  # no duplicates
    for name in telemetry.__all__:
        assert hasattr(telemetry, name), name
