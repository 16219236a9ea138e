"""The build-info metric: which goldwatch and which Python a process runs, as labels of a gauge
that is always 1 (the ``*_build_info`` pattern of the Prometheus naming docs). Registered with
the live-path family by :func:`service.telemetry.engine.build_metrics`, so every process
exports it.

>>> import platform
>>> from prometheus_client import CollectorRegistry
>>> registry = CollectorRegistry()
>>> _ = build_info_gauge(registry, version="1.2.3")
>>> registry.get_sample_value(
...     "goldwatch_build_info", {"version": "1.2.3", "python": platform.python_version()})
1.0
"""

from __future__ import annotations

import platform

from prometheus_client import CollectorRegistry, Gauge

from service import __version__
from service.telemetry.conventions import metric_name as _name


def build_info_gauge(registry: CollectorRegistry, version: str = __version__) -> Gauge:
    """Register ``goldwatch_build_info`` on ``registry`` and set its one series to 1.

    Args:
        registry: where to register.
        version: the ``version`` label (goldwatch's version); ``python`` is the running
            interpreter's ``platform.python_version()``.

    Raises:
        ValueError: already registered on ``registry``.
    """
    gauge = Gauge(
        _name("build_info"),
        "Always 1; labels carry the goldwatch and Python versions.",
        ["version", "python"],
        registry=registry,
    )
    gauge.labels(version=version, python=platform.python_version()).set(1)
    return gauge
