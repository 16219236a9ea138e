"""Plain span records, independent of the wire format they were decoded from.

Attribute values are the OTLP ``AnyValue`` as Python values: ``str``, ``bool``, ``int``
(int64), ``float`` (double), ``bytes``, ``list`` (``arrayValue``) or ``dict``
(``kvlistValue``); an empty ``AnyValue`` is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: An attribute map: key -> decoded ``AnyValue``.
Attributes = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SpanEvent:
    """A span event (e.g. OpenLLMetry's ``db.query.result``).

    Attributes:
        name: event name.
        time_unix_nano: when it happened, nanoseconds since the Unix epoch (0: unset).
        attributes: decoded attribute values.
    """

    name: str
    time_unix_nano: int
    attributes: Attributes = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Span:
    """One span of a trace.

    Attributes:
        trace_id: 32 lowercase hex characters (16 bytes).
        span_id: 16 lowercase hex characters (8 bytes).
        parent_span_id: the parent's span id, ``None`` for a root span.
        name: span name.
        start_unix_nano, end_unix_nano: start and end, nanoseconds since the Unix epoch.
        attributes: span attributes merged over nothing else (resource attributes are kept
            apart in ``resource``).
        events: span events in the order the producer recorded them.
        resource: the attributes of the resource that emitted the span (``service.name``...).
        status_code: OTLP status code (0 unset, 1 ok, 2 error).
        parent_is_remote: whether the parent is in another process (OTLP ``flags`` bits
            ``0x100`` HAS_IS_REMOTE and ``0x200`` IS_REMOTE, opentelemetry-proto >= 1.1; the
            Python SDK sets them): ``None`` when the producer did not say.
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    start_unix_nano: int
    end_unix_nano: int
    attributes: Attributes = field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    resource: Attributes = field(default_factory=dict)
    status_code: int = 0
    parent_is_remote: bool | None = None

    @property
    def is_root(self) -> bool:
        """True for a span without a parent (the trace's root). A span whose parent is
        flagged remote (``parent_is_remote``: a service called with W3C ``traceparent``) is
        a root for settling only with ``traces.assembly.remote_parent_is_root``: when several
        services of one trace send their spans here, a downstream service's entry span has a
        remote parent too, and arrives before the caller's root (a review)."""
        return self.parent_span_id is None
