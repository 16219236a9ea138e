"""How many events offered to a shadow candidate got no completed comparison, and why.

A harvest suggestion gets the reason ``shadow_disagreement`` only from a *completed*
comparison (a candidate's result with RBO below ``harvest.max_rbo``). An event whose
comparison by a candidate never completed cannot get that reason from that candidate (another
candidate's comparison still can), and when it was its only reason it starts no suggestion.
The causes, each said apart:

* the configuration's, the same on every run: ``filtered``, ``not_sampled``,
  ``no_production``, ``scrubbed``;
* load (:data:`LOAD_CAUSES`), depending on how fast events arrive: serve under the CPU budget
  skips and displaces offers (``cpu_budget``, ``queue_full``), a rate limit refuses them
  (``rate_limited``), a full result buffer drops results (``result_dropped``); a replay
  waits instead, so it has none of them;
* a failing candidate: ``breaker_open`` and the call errors (:data:`ERROR_REASONS`);
* ``interrupted``: lost at a stop or a crash (the call had not finished when a clean stop
  gave up waiting, or was in flight at the last checkpoint before a crash): how the process
  ended, not how fast events came;
* ``in_flight``: queued, no result yet — not compared *yet*; it may still add the reason.

Trial 45 (L3): one log gave 983 suggestions with ``shadow_disagreement`` in a replay and 315
from ``serve`` at 400 events/s, whose output said only "shed 0". A rerun of that serve
(session 46): of its 5,256 events, 1,527 were compared and 3,729 not (cpu_budget 3,304,
queue_full 169, scrubbed 256; 3,473 for load).

The counts come from the shadow stage's aggregates (:class:`~service.shadow.stage.ShadowStage`,
checkpointed, so they cover the state file's whole history, restarts included, like the
suggestions): per candidate ``offered = compared + not_compared``, ``compared`` the calls
answered (``completed``), ``not_compared`` = Σ skipped (every skip reason, those moved from
queued included) + Σ errors + ``in_flight``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from typing_extensions import TypedDict  # served by the API (pydantic, Python < 3.12)

from service.shadow.runner import ERROR_REASONS, SKIP_REASONS

__all__ = [
    "CAUSES",
    "IN_FLIGHT",
    "INTERRUPTED",
    "LOAD_CAUSES",
    "NOT_COMPARED",
    "NotCompared",
    "count",
    "from_snapshot",
]

#: The name of the count, the same in every output (status page, ``/v1`` JSON, export,
#: replay report) and in the metric ``goldwatch_shadow_not_compared_total``.
NOT_COMPARED = "shadow_not_compared"
#: Skip reasons of queued events whose result never arrived (service.shadow.stage.LOST_REASONS).
_LOST = ("interrupted", "result_dropped")
#: Lost at a stop or a crash (neither load nor configuration; said apart).
INTERRUPTED = "interrupted"
#: Queued, no result yet: not compared *yet* (may still add the reason; said apart).
IN_FLIGHT = "in_flight"
#: Every cause, in report order: the skip reasons, the lost results, the call errors, and
#: :data:`IN_FLIGHT`.
CAUSES: tuple[str, ...] = (*SKIP_REASONS, *_LOST, *ERROR_REASONS, IN_FLIGHT)
#: The causes that depend on how fast events arrive (a replay has none of them). Not
#: :data:`INTERRUPTED` (how the process ended) nor :data:`IN_FLIGHT` (not settled yet).
LOAD_CAUSES: tuple[str, ...] = ("cpu_budget", "queue_full", "rate_limited", "result_dropped")


class NotCompared(TypedDict):
    """One candidate's count: events ``offered``, ``compared`` (its call answered) and
    ``not_compared`` (= offered - compared), the latter ``by_cause`` (only non-zero causes,
    in :data:`CAUSES` order; they add up to ``not_compared``)."""

    offered: int
    compared: int
    not_compared: int
    by_cause: dict[str, int]


def count(offers: Mapping[str, int], errors: Mapping[str, int], completed: int) -> NotCompared:
    """One candidate's :class:`NotCompared` from the shadow stage's counters.

    Args:
        offers: events by offer outcome (``queued`` or a skip reason, lost ones included).
        errors: failed calls by reason (their events were queued).
        completed: calls answered (their events were queued).

    Returns:
        The counts; ``in_flight = queued - completed - Σ errors`` (≥ 0).

    >>> count({"queued": 10, "cpu_budget": 5, "scrubbed": 1}, {"timeout": 2}, 7)
    {'offered': 16, 'compared': 7, 'not_compared': 9, 'by_cause': {'scrubbed': 1, \
'cpu_budget': 5, 'timeout': 2, 'in_flight': 1}}
    """
    by_cause = {cause: int(n) for cause, n in offers.items() if cause != "queued" and n}
    by_cause.update({reason: int(n) for reason, n in errors.items() if n})
    in_flight = int(offers.get("queued", 0)) - completed - sum(int(n) for n in errors.values())
    if in_flight > 0:
        by_cause[IN_FLIGHT] = in_flight
    order = {cause: i for i, cause in enumerate(CAUSES)}
    ordered = dict(sorted(by_cause.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    offered = sum(int(n) for n in offers.values())
    return {"offered": offered, "compared": completed, "not_compared": sum(ordered.values()),
            "by_cause": ordered}  # fmt: skip


def from_snapshot(snapshot: Any) -> dict[str, NotCompared]:
    """The counts per candidate from the shadow stage's checkpointed snapshot (state key
    ``stage/shadow``, :meth:`~service.shadow.stage.ShadowStage.state_snapshot`, version 1);
    ``{}`` for a missing or unknown snapshot (no shadow stage, another version)."""
    if not isinstance(snapshot, Mapping) or snapshot.get("version") != 1:
        return {}
    counts: dict[str, NotCompared] = {}
    for name, saved in (snapshot.get("candidates") or {}).items():
        if isinstance(saved, Mapping):
            counts[str(name)] = count(saved.get("offers") or {}, saved.get("errors") or {},
                                      int(saved.get("completed") or 0))  # fmt: skip
    return counts
