"""Metrics of harvesting: live questions picked as gold-question candidates, merged into
suggestions and published to the sinks. Fed once per batch from
:meth:`service.harvest.stage.HarvestStage.pending_observations` (:meth:`HarvestMetrics.observe`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge

from service.telemetry.conventions import bounded_label
from service.telemetry.conventions import metric_name as _name


@dataclass(frozen=True, slots=True)
class HarvestMetrics:
    """Metrics of harvesting (suggested gold questions); build with
    :func:`build_harvest_metrics`.

    ============================================ ======= ===============================
    name                                         type    labels
    ============================================ ======= ===============================
    goldwatch_gold_candidates_total              counter reason (events picked, per reason)
    goldwatch_gold_candidates_new_total          counter (new distinct suggestions)
    goldwatch_gold_candidates_known_total        counter via (annotation, gold_set, decided)
    goldwatch_gold_candidates_evicted_total      counter (suggestions dropped at the bound)
    goldwatch_gold_candidates_shed_total         counter (new questions shed per batch)
    goldwatch_gold_candidates_too_long_total     counter (questions over max_question_chars)
    goldwatch_gold_candidate_sink_failures_total counter sink
    goldwatch_gold_candidates_held               gauge   (suggestions held by this replica)
    ============================================ ======= ===============================
    """

    picked: Counter
    new: Counter
    known: Counter
    evicted: Counter
    shed: Counter
    too_long: Counter
    sink_failures: Counter
    held: Gauge
    reasons: tuple[str, ...]

    def observe(self, pending: Mapping[str, Any]) -> None:
        """Export :meth:`service.harvest.stage.HarvestStage.pending_observations`."""
        for reason, n in pending.get("reasons", {}).items():
            self.picked.labels(reason=bounded_label(reason, self.reasons)).inc(n)
        for via, n in pending.get("known", {}).items():
            self.known.labels(via=bounded_label(via, HARVEST_KNOWN_VIA)).inc(n)
        self.new.inc(pending.get("new_suggestions", 0))
        self.evicted.inc(pending.get("evicted", 0))
        self.shed.inc(pending.get("shed", 0))
        self.too_long.inc(pending.get("too_long", 0))
        for sink, n in pending.get("sink_failures", {}).items():
            self.sink_failures.labels(sink=bounded_label(sink, HARVEST_SINKS)).inc(n)
        if "suggestions" in pending:
            self.held.set(pending["suggestions"])


HARVEST_KNOWN_VIA: tuple[str, ...] = ("annotation", "gold_set", "decided")
HARVEST_SINKS: tuple[str, ...] = ("StateStoreCandidates", "MemoryCandidates", "KafkaCandidateSink")


def build_harvest_metrics(
    registry: CollectorRegistry, reasons: Sequence[str], sinks: Sequence[str] = ()
) -> HarvestMetrics:
    """Register the harvesting metrics on ``registry``; ``reasons`` (every harvest reason)
    and ``sinks`` (the sink class names in use) are pre-initialised.

    Raises:
        ValueError: already registered on ``registry``.
    """
    metrics = HarvestMetrics(
        picked=Counter(_name("gold_candidates"), "Live events picked as gold-question "
                       "candidates, per reason (an event counts once per reason).", ["reason"],
                       registry=registry),
        new=Counter(_name("gold_candidates_new"), "New distinct gold-question suggestions "
                    "(after near-duplicate merging).", registry=registry),
        known=Counter(_name("gold_candidates_known"), "Picked events skipped as near-"
                      "duplicates of a gold question (via annotation or gold_set) or of a "
                      "decided suggestion (via decided).", ["via"], registry=registry),
        evicted=Counter(_name("gold_candidates_evicted"), "Suggestions dropped because the "
                        "bound on held suggestions was reached.", registry=registry),
        shed=Counter(_name("gold_candidates_shed"), "Picked live events whose new question "
                     "was shed by harvest.max_new_per_batch (not near-duplicate-matched, not "
                     "kept). The count depends on how fast events arrived (a batch holds "
                     "what came while the last one ran); a replay of the same file sheds "
                     "none unless its configuration sets it.", registry=registry),
        too_long=Counter(_name("gold_candidates_too_long"), "Picked live events whose "
                         "question is longer than harvest.max_question_chars (never "
                         "suggested).", registry=registry),
        sink_failures=Counter(_name("gold_candidate_sink_failures"), "Failed publications of "
                              "suggestions (state store, Kafka topic).", ["sink"],
                              registry=registry),
        held=Gauge(_name("gold_candidates_held"), "Suggestions held by this replica.",
                   registry=registry),
        reasons=tuple(reasons),
    )  # fmt: skip
    for reason in reasons:
        metrics.picked.labels(reason=reason)
    for via in HARVEST_KNOWN_VIA:
        metrics.known.labels(via=via)
    for sink in sinks:
        metrics.sink_failures.labels(sink=bounded_label(sink, HARVEST_SINKS))
    return metrics
