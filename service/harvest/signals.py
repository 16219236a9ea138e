"""What makes one live event worth a gold question: its reasons (see :mod:`.config`).

:func:`event_reasons` reads an event and the annotations of the earlier stages; the two
trackers give it the context a single event lacks:

* :class:`CoverageTracker` — live counts of topics and languages against the gold set's, so
  ``gap(dimension, label) = max(0, live share − gold share)``, in [0, 1];
* :class:`ScoreWindow` — the last N best production scores per retriever, so a score can be
  placed in their distribution (scores of different retrievers never compare).

>>> coverage = CoverageTracker({"language": {"en": 3, "hi": 1}}, min_live_events=2)
>>> coverage.update([{"language": "hi"}, {"language": "hi"}])
>>> coverage.gap("language", "hi"), coverage.gap("language", "en"), coverage.gap("topic", "x")
(0.75, 0.0, 0.0)
"""

from __future__ import annotations

import bisect
from collections import Counter, deque
from collections.abc import Collection, Iterable, Mapping
from functools import lru_cache
from math import ceil
from typing import Any

from service.events import QueryLogEvent
from service.harvest.config import REASONS, HarvestConfig
from service.pii.scrub import scrub_label

__all__ = ["DIMENSIONS", "CoverageTracker", "ScoreWindow", "event_reasons", "production_score"]

DIMENSIONS = ("topic", "language")
_MAX_RETRIEVERS = 16

_BIT = {reason: 1 << i for i, reason in enumerate(REASONS)}
_COVERAGE_GAP = _BIT["coverage_gap"]
_NOVEL = _BIT["novel"]
_REFUSED = _BIT["refused"]
_OUT_OF_SCOPE = _BIT["answered_out_of_scope"]
_LOW_CONFIDENCE = _BIT["low_confidence"]
_NEGATIVE_FEEDBACK = _BIT["negative_feedback"]
_CITED_NOT_RETRIEVED = _BIT["cited_not_retrieved"]
_ACL_VIOLATION = _BIT["acl_violation"]


@lru_cache(maxsize=4096)
def _named(bits: int, active: frozenset[str]) -> tuple[str, ...]:
    """The reasons of ``bits`` (one bit per reason, :data:`REASONS` order) that are
    ``active``, in that order; the same tuple object for the same arguments."""
    return tuple(r for r in REASONS if bits & _BIT[r] and r in active)


class CoverageTracker:
    """Live category counts per dimension against fixed gold counts.

    Args:
        gold_counts: ``{dimension: {label: count}}`` of the gold set; a dimension without
            counts has no reference and never has a gap.
        min_live_events: live events needed before any gap is reported (``gap`` gives 0).
    """

    def __init__(self, gold_counts: Mapping[str, Mapping[str, int]], min_live_events: int = 200):
        self.gold = {dim: dict(counts) for dim, counts in gold_counts.items()}
        self._gold_total = {dim: sum(c.values()) for dim, c in self.gold.items()}
        self.min_live_events = min_live_events
        self.live: dict[str, Counter[str]] = {dim: Counter() for dim in DIMENSIONS}
        self.events = 0

    def set_gold(self, gold_counts: Mapping[str, Mapping[str, int]]) -> None:
        """Replace the gold counts of the dimensions given (the gold set grew)."""
        for dim, counts in gold_counts.items():
            self.gold[dim] = dict(counts)
            self._gold_total[dim] = sum(self.gold[dim].values())

    def update(self, annotations: Iterable[Mapping[str, Any]]) -> None:
        """Count each event's ``topic`` and ``language`` annotation (missing ones: ``und``)."""
        rows = annotations if isinstance(annotations, list) else list(annotations)
        self.events += len(rows)
        for dim in DIMENSIONS:
            self.live[dim].update([str(notes.get(dim) or "und") for notes in rows])

    def gap(self, dimension: str, label: str | None) -> float:
        """``max(0, live share − gold share)`` of ``label``; 0 before ``min_live_events``."""
        gold_total = self._gold_total.get(dimension, 0)
        if self.events < self.min_live_events or not gold_total:
            return 0.0
        key = str(label or "und")
        live_share = self.live[dimension][key] / self.events
        gold_share = self.gold[dimension].get(key, 0) / gold_total
        return max(0.0, live_share - gold_share)

    def gaps(self) -> dict[str, dict[str, float]]:
        """``{dimension: {label: gap}}`` of every live label with a positive gap."""
        return {
            dim: {label: g for label in sorted(self.live[dim]) if (g := self.gap(dim, label))}
            for dim in DIMENSIONS
        }

    def state(self) -> dict[str, Any]:
        return {"events": self.events, "live": {d: dict(c) for d, c in self.live.items()}}

    def load(self, state: Mapping[str, Any]) -> None:
        self.events = int(state.get("events", 0))
        for dim, counts in state.get("live", {}).items():
            if dim in self.live:
                self.live[dim] = Counter({k: int(v) for k, v in counts.items()})


class ScoreWindow:
    """The last ``size`` best scores of each retriever, kept sorted for quantile look-ups.

    >>> window = ScoreWindow(size=4, min_count=4)
    >>> [window.is_low("r", s, 0.25) for s in (4.0, 3.0, 2.0, 1.0, 0.5, 3.5)]
    [False, False, False, False, True, False]
    """

    def __init__(self, size: int = 2_000, min_count: int = 200) -> None:
        self.size, self.min_count = size, min_count
        self._recent: dict[str, deque[float]] = {}
        self._sorted: dict[str, list[float]] = {}

    def is_low(self, retriever: str, score: float, quantile: float) -> bool:
        """Whether ``score`` is strictly below the window's ``quantile``-quantile, judged
        before ``score`` joins the window; ``False`` until ``min_count`` scores were seen.

        The quantile of the ``n`` sorted scores ``x[0] ≤ … ≤ x[n-1]`` is the empirical
        (inverse of the distribution function) one, ``x[⌈quantile·n⌉ − 1]`` (Hyndman & Fan
        1996, definition 1), ``quantile`` in (0, 1]. Strictly below: a score tied with the
        quantile is not low, so when every recent score is the same none is (a retriever
        that returns a constant score says nothing about confidence)."""
        ordered = self._sorted.get(retriever)
        if ordered is None:
            if len(self._sorted) >= _MAX_RETRIEVERS:
                return False
            ordered = self._sorted[retriever] = []
            self._recent[retriever] = deque()
        n = len(ordered)
        # ⌈quantile·n⌉ − 1, with a float product such as 0.1·30 = 3.0000000000000004 read as 3
        at = max(0, ceil(quantile * n - 1e-9) - 1)
        low = n >= self.min_count and quantile > 0 and score < ordered[at]
        recent = self._recent[retriever]
        recent.append(score)
        bisect.insort(ordered, score)
        if len(recent) > self.size:
            del ordered[bisect.bisect_left(ordered, recent.popleft())]
        return low

    def state(self) -> dict[str, list[float]]:
        return {name: list(scores) for name, scores in self._recent.items()}

    def load(self, state: Mapping[str, Iterable[float]]) -> None:
        for name, scores in state.items():
            for score in scores:
                self.is_low(name, float(score), 0.0)


def production_score(event: QueryLogEvent) -> tuple[str, float | None] | None:
    """``(retriever, best score)`` of the production retrieval: score ``None`` when it
    returned nothing (or nothing scored); ``None`` when the event logs no retrieval. The
    retriever's name is scrubbed (:func:`service.pii.scrub_label`, remembered: the PII stage
    may be off) since it keys the persisted score windows."""
    retrieval = event.retrieval
    if retrieval is None:
        return None
    scores = [r.score for r in retrieval.results if r.score is not None]
    name = scrub_label(retrieval.retriever) if retrieval.retriever else "production"
    return name, (max(scores) if scores else None)


def event_reasons(
    event: QueryLogEvent,
    notes: Mapping[str, Any],
    config: HarvestConfig,
    gap: float = 0.0,
    low_confidence: bool = False,
    active: Collection[str] | None = None,
) -> tuple[str, ...]:
    """The reasons (in :data:`~service.harvest.config.REASONS` order) that apply to one event.

    Args:
        notes: the event's annotations (``topic``, ``refused``, ``under_refusal``,
            ``acl_leaks``); missing keys mean "unknown", never a reason. An under-refusal
            whose ``scope_calibrated`` is ``False`` (the out-of-scope detector is below the
            quality floor) is no reason either, nor is a ``novel`` topic whose
            ``novelty_calibrated`` is ``False``.
        gap: the larger coverage gap of its topic and language (reason from ``min_gap``).
        low_confidence: the caller's verdict from :class:`ScoreWindow`.
        active: the reasons with weight > 0 (computed from ``config`` when ``None``; callers
            on the live path pass it once computed).

    Reasons with weight 0 are left out.
    """
    if active is None:
        active = {r for r in REASONS if config.weight(r) > 0}
    # one bit per reason (REASONS order), then one cached tuple per (bits, active): the
    # common case allocates nothing (this runs on every live event)
    bits = 0
    if gap > 0 and gap >= config.min_gap:
        bits = _COVERAGE_GAP
    get = notes.get
    if get("topic") == "novel" and get("novelty_calibrated") is not False:
        bits |= _NOVEL
    if get("refused") is True:
        bits |= _REFUSED
    if get("under_refusal") is True and get("scope_calibrated") is not False:
        bits |= _OUT_OF_SCOPE
    if low_confidence:
        bits |= _LOW_CONFIDENCE
    # shadow_disagreement: from shadow results, see HarvestStage.observe_shadow
    feedback = event.feedback
    if feedback is not None and feedback.rating is not None:
        if feedback.rating < config.negative_rating:
            bits |= _NEGATIVE_FEEDBACK
    answer, retrieval = event.answer, event.retrieval
    if answer is not None and retrieval is not None and answer.citations:
        if not {r.id for r in retrieval.results}.issuperset(answer.citations):
            bits |= _CITED_NOT_RETRIEVED
    if get("acl_leaks"):  # an answer cited what the asker may not read
        bits |= _ACL_VIOLATION
    if not bits:
        return ()
    return _named(bits, active if isinstance(active, frozenset) else frozenset(active))
