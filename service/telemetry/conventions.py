"""What every metric family of :mod:`service.telemetry` follows: one namespace, bounded labels,
finite gauge values.

Conventions (client_python ``metrics.py``, Prometheus naming docs): one ``goldwatch_``
namespace, base units (seconds, events), ``_total`` on counters (client_python appends it to a
counter's name), explicit histogram buckets, and only bounded label values —
:func:`bounded_label` maps anything unexpected to ``"other"``. Question text, user ids and
event ids never become labels. The family modules import :func:`metric_name` as ``_name`` and
:func:`finite` as ``_finite``, the names their builders have always used.

>>> metric_name("consumer_lag")
'goldwatch_consumer_lag'
>>> bounded_label("hi", ("en", "hi")), bounded_label("xx", ("en", "hi")), bounded_label(None, ())
('hi', 'other', 'other')
>>> finite(0.5), finite(float("inf"))
(0.5, nan)
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

NAMESPACE = "goldwatch"
OTHER = "other"


def bounded_label(value: str | None, allowed: Collection[str]) -> str:
    """Return ``value`` if it is in ``allowed``, else ``"other"`` (keeps label sets bounded)."""
    return value if value is not None and value in allowed else OTHER


def metric_name(name: str) -> str:
    """Return the full metric name: ``name`` in the :data:`NAMESPACE` (``goldwatch_<name>``);
    counters get ``_total`` from client_python, not here."""
    return f"{NAMESPACE}_{name}"


def finite(value: Any) -> float:
    """Return ``value`` as a float, with ±infinity exported as NaN (a gauge's "unknown").

    Raises:
        TypeError, ValueError: ``value`` is not a number (``float(value)`` fails).
    """
    number = float(value)
    return number if number == number and abs(number) != float("inf") else float("nan")


#: Said in the help of every metric counted per topic: while the novelty detector is
#: untrusted, a question's topic is its nearest gold topic, never ``novel`` (docs/topics.md).
NEAREST_HELP = ("While the novelty detector is untrusted (goldwatch_detector_trusted"
                "{detector=\"novelty\"} 0), no question is labelled novel (there is no novel "
                "series): a question on a topic the gold set lacks is counted under its NEAREST "
                "gold topic, so the topics are then each question's nearest gold topic, not "
                "facts.")  # fmt: skip
