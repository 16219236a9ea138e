"""Metrics of shadow evaluation (candidate retrievers run on live questions beside
production), gold-set runs, known questions and access-control checks. Fed once per batch
from :meth:`service.shadow.stage.ShadowStage.pending_observations` and
:meth:`service.quality.stage.LiveQualityStage.pending_observations`, and once per gold-set
run (:func:`service.shadow.gold_runs.run_gold_set`).
"""

from __future__ import annotations

from collections import Counter as Counter_
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, Summary

from service.shadow.trend import stands as trend_stands
from service.telemetry.conventions import NEAREST_HELP, OTHER, bounded_label
from service.telemetry.conventions import finite as _finite
from service.telemetry.conventions import metric_name as _name

#: Agreement measures exported (service.shadow.stage.METRICS; kept equal by a test).
SHADOW_MEASURES: tuple[str, ...] = (
    "overlap", "jaccard", "rbo", "kendall_tau", "top1", "citation_recall",
)  # fmt: skip
#: Measures broken down by language and topic (bounded: 3 measures x labels x candidates).
SHADOW_BREAKDOWN_MEASURES: tuple[str, ...] = ("overlap", "rbo", "citation_recall")
SHADOW_OUTCOMES: tuple[str, ...] = (
    "queued", "filtered", "not_sampled", "no_production", "scrubbed", "cpu_budget",
    "breaker_open", "rate_limited", "queue_full",
)  # fmt: skip
SHADOW_ERRORS: tuple[str, ...] = ("timeout", "http_error", "bad_response", "exception")
#: Why a queued event was taken out of a candidate's queue (it never runs): displaced from a
#: full queue (``cpu_budget``, ``queue_full``) or dropped when its breaker opened.
SHADOW_DISPLACED: tuple[str, ...] = ("cpu_budget", "queue_full", "breaker_open")
#: Causes of ``goldwatch_shadow_not_compared_total`` (service.shadow.not_compared.CAUSES
#: without ``in_flight``, which is not settled yet; kept equal by a test).
SHADOW_NOT_COMPARED: tuple[str, ...] = (
    *SHADOW_OUTCOMES[1:], "interrupted", "result_dropped", *SHADOW_ERRORS,
)  # fmt: skip
BREAKER_STATES: tuple[str, ...] = ("closed", "open", "half_open")
#: Agreement buckets. Kendall's tau reaches -1, but a negative bucket would make
#: client_python drop ``_sum`` (OpenMetrics), and the mean needs it: tau <= 0 all land in
#: ``le="0.0"``.
AGREEMENT_BUCKETS: tuple[float, ...] = (
    0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0,
)  # fmt: skip
SHADOW_SECONDS_BUCKETS: tuple[float, ...] = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0,
)  # fmt: skip
#: Gold-set measures exported per run (``recall``/``hit_rate``/``ndcg`` per k; ``mrr`` uncut).
GOLD_CUT_MEASURES: tuple[str, ...] = ("recall", "hit_rate", "ndcg")
KNOWN_REFUSAL_KINDS: tuple[str, ...] = ("refused_answerable", "answered_unanswerable")
#: Breakdown labels of a question without a language or topic label, by why it has none
#: (service.shadow.stage.NO_LABEL; kept equal by a test): ``unjudged_language`` (topic only:
#: no gold row is written in its language, so the topic stage gave it none) and
#: ``not_detected`` (the detection did not run: topic detection off, analytics off).
SHADOW_NO_LABEL: tuple[str, ...] = ("unjudged_language", "not_detected")
#: Label of production's own results in the known-question and ACL metrics.
PRODUCTION = "production"
ALL = "all"


@dataclass(frozen=True, slots=True)
class ShadowMetrics:
    """Metrics of shadow evaluation, gold-set runs, known questions and ACL checks; build
    with :func:`build_shadow_metrics`. ``retriever`` is a candidate name, the production
    label or ``other``; ``language``/``topic`` come from the analytics' bounded labels
    (``other``: a label outside them), plus :data:`SHADOW_NO_LABEL` for a question given
    none: ``topic="unjudged_language"`` (no gold row in its language),
    ``topic``/``language`` ``"not_detected"`` (the detection did not run).

    ================================================= ========= ============================
    name                                              type      labels
    ================================================= ========= ============================
    goldwatch_shadow_offers_total                     counter   retriever, outcome
    goldwatch_shadow_displaced_total                  counter   retriever, reason
    goldwatch_shadow_errors_total                     counter   retriever, reason
    goldwatch_shadow_not_compared_total               counter   retriever, cause
    goldwatch_shadow_request_duration_seconds         histogram retriever (every call)
    goldwatch_shadow_agreement                        histogram retriever, measure
    goldwatch_shadow_agreement_by_language            summary   retriever, language, measure
    goldwatch_shadow_agreement_by_topic               summary   retriever, topic, measure
    goldwatch_shadow_queue_depth                      gauge     retriever
    goldwatch_shadow_workers                          gauge     retriever
    goldwatch_shadow_breaker_state                    gauge     retriever, state (1/0)
    goldwatch_shadow_breaker_opened_total             counter   retriever
    goldwatch_shadow_results_dropped_total            counter
    goldwatch_shadow_rbo_lower_sustained              gauge     retriever (1 while it stands)
    goldwatch_shadow_rbo_lower_effect                 gauge     retriever (RBO before - in)
    goldwatch_shadow_rbo_lower_since_seconds          gauge     retriever (its start, Unix s)
    goldwatch_gold_recall                             gauge     retriever, k, kind
    goldwatch_gold_hit_rate                           gauge     retriever, k, kind
    goldwatch_gold_ndcg                               gauge     retriever, k, kind
    goldwatch_gold_mrr                                gauge     retriever, kind
    goldwatch_gold_questions                          gauge     retriever, kind
    goldwatch_gold_acl_violations                     gauge     retriever, role
    goldwatch_gold_run_timestamp_seconds              gauge     retriever
    goldwatch_gold_runs_total                         counter   outcome (ok, failed)
    goldwatch_known_questions_total                   counter   retriever
    goldwatch_known_recall                            summary   retriever (recall@k)
    goldwatch_known_refusals_total                    counter   kind
    goldwatch_acl_violations_total                    counter   retriever, role (events; 0 at start)
    goldwatch_acl_leaks_total                         counter   retriever, role (events)
    ================================================= ========= ============================

    Means across replicas: ``sum(rate(x_sum)) / sum(rate(x_count))`` (histograms and
    summaries add up; gauges of means would not).
    """

    offers: Counter
    displaced: Counter
    errors: Counter
    not_compared: Counter
    request_duration: Histogram
    agreement: Histogram
    agreement_by_language: Summary
    agreement_by_topic: Summary
    queue_depth: Gauge
    workers: Gauge
    breaker_state: Gauge
    breaker_opened: Counter
    results_dropped: Counter
    rbo_lower: Gauge
    rbo_lower_effect: Gauge
    rbo_lower_since: Gauge
    gold_recall: Gauge
    gold_hit_rate: Gauge
    gold_ndcg: Gauge
    gold_mrr: Gauge
    gold_questions: Gauge
    gold_acl_violations: Gauge
    gold_run_timestamp: Gauge
    gold_runs: Counter
    known_questions: Counter
    known_recall: Summary
    known_refusals: Counter
    acl_violations: Counter
    acl_leaks: Counter
    retrievers: tuple[str, ...]
    language_labels: tuple[str, ...]
    topic_labels: tuple[str, ...]
    role_labels: tuple[str, ...]
    _opened_seen: dict[str, float]

    def retriever(self, name: str | None) -> str:
        """Bounded ``retriever`` label."""
        return bounded_label(name, self.retrievers)

    def observe_shadow(self, pending: Mapping[str, Any]) -> None:
        """Export what :meth:`service.shadow.stage.ShadowStage.pending_observations` returned
        (increments, values to observe, runner gauges); called once per batch."""
        for name, outcomes in pending.get("offers", {}).items():
            retriever = self.retriever(name)
            for outcome, n in outcomes.items():
                label = bounded_label(outcome, SHADOW_OUTCOMES)
                self.offers.labels(retriever=retriever, outcome=label).inc(n)
        for name, reasons in pending.get("displaced", {}).items():
            for reason, n in reasons.items():
                self.displaced.labels(
                    retriever=self.retriever(name), reason=bounded_label(reason, SHADOW_DISPLACED)
                ).inc(n)
        for name, reasons in pending.get("errors", {}).items():
            for reason, n in reasons.items():
                self.errors.labels(
                    retriever=self.retriever(name), reason=bounded_label(reason, SHADOW_ERRORS)
                ).inc(n)
        self._observe_not_compared(pending)
        for name, values in pending.get("latency_seconds", {}).items():
            histogram = self.request_duration.labels(retriever=self.retriever(name))
            for value in values:
                histogram.observe(value)
        for name, measures in pending.get("agreement", {}).items():
            retriever = self.retriever(name)
            for measure, values in measures.items():
                if measure not in SHADOW_MEASURES:
                    continue
                histogram = self.agreement.labels(retriever=retriever, measure=measure)
                for value in values:
                    histogram.observe(value)
        for key, summary, allowed in (
            ("by_language", self.agreement_by_language, self.language_labels),
            ("by_topic", self.agreement_by_topic, self.topic_labels),
        ):
            dimension = key.removeprefix("by_")
            for row in pending.get(key, ()):
                if row["measure"] not in SHADOW_BREAKDOWN_MEASURES:
                    continue
                summary.labels(
                    retriever=self.retriever(row["candidate"]),
                    measure=row["measure"],
                    **{dimension: bounded_label(row["label"], allowed)},
                ).observe(row["value"])
        self.results_dropped.inc(pending.get("results_dropped", 0))
        for name, stats in pending.get("runner", {}).items():
            retriever = self.retriever(name)
            self.queue_depth.labels(retriever=retriever).set(stats.get("queue_depth", 0))
            self.workers.labels(retriever=retriever).set(stats.get("workers", 0))
            state = stats.get("breaker_state")
            for candidate_state in BREAKER_STATES:
                self.breaker_state.labels(retriever=retriever, state=candidate_state).set(
                    state == candidate_state
                )
            opened = float(stats.get("breaker_opened_total", 0))
            seen = self._opened_seen.get(name, 0.0)
            if opened > seen:
                self.breaker_opened.labels(retriever=retriever).inc(opened - seen)
            self._opened_seen[name] = opened
        for name, verdict in pending.get("sustained", {}).items():
            self.observe_sustained(name, verdict)

    def remove_topic_label(self, topic: str) -> bool:
        """Take ``topic`` off the ``topic`` label and remove its
        ``goldwatch_shadow_agreement_by_topic`` series (every retriever and measure), as
        :meth:`~service.telemetry.analytics.AnalyticsMetrics.remove_topic_label` does for the
        analytics series: the ``novel`` label once the novelty detector labels nothing (a
        gold-set refresh left it uncalibrated), whose summary would stand flat with its old
        observations (session 51). A question later given ``topic`` is observed under
        ``other`` until :meth:`add_topic_labels` takes it back. Returns whether ``topic``
        was a label."""
        if topic not in self.topic_labels:
            return False
        object.__setattr__(self, "topic_labels",
                           tuple(t for t in self.topic_labels if t != topic))  # fmt: skip
        for retriever in self.retrievers:
            for measure in SHADOW_BREAKDOWN_MEASURES:
                try:
                    self.agreement_by_topic.remove(retriever, topic, measure)
                except KeyError:  # never observed: nothing to remove
                    pass
        return True

    def add_topic_labels(self, topics: Sequence[str]) -> tuple[str, ...]:
        """Give each of ``topics`` not yet a label its own ``topic`` label value (the
        ``novel`` label back once the novelty detector is calibrated again:
        :meth:`remove_topic_label`); return those added."""
        added = tuple(t for t in dict.fromkeys(topics) if t not in self.topic_labels)
        object.__setattr__(self, "topic_labels", (*self.topic_labels, *added))
        return added

    def observe_sustained(self, name: str, verdict: Mapping[str, Any] | None) -> None:
        """Mirror candidate ``name``'s sustained verdict on its RBO over event time
        (:meth:`service.shadow.trend.AgreementTrend.verdicts`) into the
        ``goldwatch_shadow_rbo_lower_*`` gauges: 1, the drop (mean RBO before the run minus
        in it, per question) and the run's start while a drop stands
        (:func:`service.shadow.trend.stands`: beyond noise, reaching the latest judged
        point, at consecutive looks); 0, 0, 0 otherwise (a drop that recovered too)."""
        retriever = self.retriever(name)
        stands = trend_stands(verdict)  # reaching the latest point, confirmed (trial 45 H2)
        self.rbo_lower.labels(retriever=retriever).set(float(stands))
        effect = since = 0.0
        if stands and verdict is not None:
            effect = _finite(verdict["before_question_rbo"] - verdict["question_rbo"])
            since = _finite(verdict["start"])
        self.rbo_lower_effect.labels(retriever=retriever).set(effect)
        self.rbo_lower_since.labels(retriever=retriever).set(since)

    def _observe_not_compared(self, pending: Mapping[str, Any]) -> None:
        """``goldwatch_shadow_not_compared_total``: every event whose comparison will not
        complete, once, by cause — skipped at the offer, displaced from the queue, lost
        (result dropped, interrupted: at a clean stop, or after a crash when the restarted
        process restores its state) or failed (service.shadow.not_compared)."""
        causes: Counter_[tuple[str, str]] = Counter_()
        for name, outcomes in pending.get("offers", {}).items():
            causes.update({(name, o): n for o, n in outcomes.items() if o != "queued"})
        for key in ("displaced", "lost", "errors"):
            for name, reasons in pending.get(key, {}).items():
                causes.update({(name, r): n for r, n in reasons.items()})
        for (name, cause), n in causes.items():
            if n:
                self.not_compared.labels(
                    retriever=self.retriever(name), cause=bounded_label(cause, SHADOW_NOT_COMPARED)
                ).inc(n)

    def observe_gold_run(self, run: Mapping[str, Any]) -> None:
        """Mirror one gold-set run (:func:`service.shadow.gold_runs.run_gold_set` JSON) into
        the ``goldwatch_gold_*`` gauges; ``run["retrievers"][label]`` holds ``by_kind``
        (kind → measure label → value, ``all`` included), ``n_by_kind`` and ``acl``."""
        for label, body in run.get("retrievers", {}).items():
            retriever = self.retriever(label)
            for kind, measures in body.get("by_kind", {}).items():
                for measure, value in measures.items():
                    name, _, k = measure.partition("@")
                    if name == "mrr" and not k:
                        self.gold_mrr.labels(retriever=retriever, kind=kind).set(_finite(value))
                    elif name in GOLD_CUT_MEASURES and k:
                        gauge = {"recall": self.gold_recall, "hit_rate": self.gold_hit_rate,
                                 "ndcg": self.gold_ndcg}[name]  # fmt: skip
                        gauge.labels(retriever=retriever, k=k, kind=kind).set(_finite(value))
            for kind, n in body.get("n_by_kind", {}).items():
                self.gold_questions.labels(retriever=retriever, kind=kind).set(n)
            for role, n in body.get("acl", {}).get("by_role", {}).items():
                self.gold_acl_violations.labels(
                    retriever=retriever, role=bounded_label(role, self.role_labels)
                ).set(n)
            self.gold_run_timestamp.labels(retriever=retriever).set(run.get("finished_at", 0))

    def observe_quality(self, pending: Mapping[str, Any]) -> None:
        """Export :meth:`service.quality.stage.LiveQualityStage.pending_observations` (known
        questions, their live recall, refusal checks, ACL violations)."""
        for name, n in pending.get("known", {}).items():
            self.known_questions.labels(retriever=self.retriever(name)).inc(n)
        for name, values in pending.get("known_recall", {}).items():
            summary = self.known_recall.labels(retriever=self.retriever(name))
            for value in values:
                summary.observe(value)
        for kind in KNOWN_REFUSAL_KINDS:
            self.known_refusals.labels(kind=kind).inc(pending.get(f"known_{kind}", 0))
        for key, counter in (("acl_violations", self.acl_violations),
                             ("acl_leaks", self.acl_leaks)):  # fmt: skip
            for row in pending.get(key, ()):
                counter.labels(
                    retriever=self.retriever(row["retriever"]),
                    role=bounded_label(row["role"], self.role_labels),
                ).inc(row["events"])


def build_shadow_metrics(
    registry: CollectorRegistry,
    *,
    candidates: Sequence[str] = (),
    production: str | None = None,
    language_labels: Sequence[str] = ("und", OTHER),
    topic_labels: Sequence[str] = ("und", OTHER),
    role_labels: Sequence[str] = (),
) -> ShadowMetrics:
    """Register the shadow, gold-run, known-question and ACL metrics on ``registry``.

    Args:
        candidates: the shadow candidates' names (their series are pre-initialised).
        production: the production retriever's name in gold-set runs (the
            ``goldwatch_gold_*`` series); ``production`` (the label of production's live
            results, the ``goldwatch_known_*`` series) is always a value, and the live
            series are pre-initialised for the candidates and ``production`` only. Anything
            else is exported as ``other``.
        language_labels, topic_labels: bounded label values of the analytics stages
            (``und``, ``other`` and the labels of :data:`SHADOW_NO_LABEL` are added:
            ``not_detected`` to both, ``unjudged_language`` to the topics).
        role_labels: user roles named in the corpus ACLs (``unknown`` and ``other`` added).

    Raises:
        ValueError: already registered on ``registry``.
    """

    def counter(name: str, doc: str, labels: Sequence[str] = ()) -> Counter:
        return Counter(_name(name), doc, list(labels), registry=registry)

    def gauge(name: str, doc: str, labels: Sequence[str]) -> Gauge:
        return Gauge(_name(name), doc, list(labels), registry=registry)

    def summary(name: str, doc: str, labels: Sequence[str]) -> Summary:
        return Summary(_name(name), doc, list(labels), registry=registry)

    extra = [production] if production else []
    names = tuple(dict.fromkeys([*candidates, *extra, PRODUCTION, OTHER]))
    metrics = ShadowMetrics(
        offers=counter("shadow_offers", "Live events offered to a shadow candidate, by "
                       "outcome (queued or why it was skipped).", ["retriever", "outcome"]),
        displaced=counter("shadow_displaced", "Queued shadow offers that never run: "
                          "displaced from a full queue by a later event of lower sampling "
                          "draw (reason: why the queue was full) or dropped when the "
                          "candidate's breaker opened (breaker_open); in flight = queued - "
                          "displaced - completed - errors.", ["retriever", "reason"]),
        errors=counter("shadow_errors", "Failed shadow calls, by reason.",
                       ["retriever", "reason"]),
        not_compared=counter("shadow_not_compared", "Live events offered to a shadow "
                             "candidate whose comparison will not complete, by cause: "
                             "skipped at the offer, displaced from its queue, result lost "
                             "(result_dropped, interrupted) or call failed; such an event "
                             "can get no shadow_disagreement harvest reason from that "
                             "candidate. Load causes (cpu_budget, queue_full, rate_limited, "
                             "result_dropped) depend on ingest speed; interrupted: lost at a "
                             "stop or crash (a crash's are counted by the restarted process, "
                             "once, when it restores its state). Events still in flight are "
                             "not counted until settled.", ["retriever", "cause"]),
        request_duration=Histogram(
            _name("shadow_request_duration_seconds"),
            "Duration of shadow calls (retries included; failed calls too).", ["retriever"],
            buckets=SHADOW_SECONDS_BUCKETS, registry=registry,
        ),
        agreement=Histogram(
            _name("shadow_agreement"), "Agreement of a candidate's ranking with production's "
            "on the same live question (RBO_ext of production's ranking as logged and the "
            "candidate's k passages; overlap@k, jaccard@k, Kendall's tau on shared items, "
            "top-1 and citation recall at k = min(candidate k, production depth)).",
            ["retriever", "measure"],
            buckets=AGREEMENT_BUCKETS, registry=registry,
        ),
        agreement_by_language=summary(
            "shadow_agreement_by_language", "Shadow agreement by question language (the "
            "language stage's label; other: a language outside the label set; not_detected: "
            "no language stage ran).",
            ["retriever", "language", "measure"],
        ),
        agreement_by_topic=summary(
            "shadow_agreement_by_topic", "Shadow agreement by question topic (other: a "
            "topic outside the label set; unjudged_language: given no topic, no gold row is "
            f"written in its language; not_detected: no topic detection ran). {NEAREST_HELP}",
            ["retriever", "topic", "measure"],
        ),
        queue_depth=gauge("shadow_queue_depth", "Events waiting for a shadow worker.",
                          ["retriever"]),
        workers=gauge("shadow_workers", "Shadow worker threads serving a candidate.",
                      ["retriever"]),
        breaker_state=gauge("shadow_breaker_state", "1 for the circuit breaker's current "
                            "state (closed, open, half_open), 0 for the others.",
                            ["retriever", "state"]),
        breaker_opened=counter("shadow_breaker_opened", "Times a candidate's circuit "
                               "breaker opened.", ["retriever"]),
        results_dropped=counter("shadow_results_dropped", "Finished shadow results dropped "
                                "because the result buffer was full."),
        rbo_lower=gauge("shadow_rbo_lower_sustained", "1 while a candidate's RBO with "
                        "production stands lower beyond noise since a point in event time "
                        "than before it (the replay's sustained verdict: paired t-test on "
                        "per-question mean RBOs, Bonferroni over the runs scanned at 0.05; "
                        "worked out each event-time hour; the drop reaches the latest hour, "
                        "its last quarter lower too, at 3 consecutive hourly looks), else 0 "
                        "(a drop that recovered too).", ["retriever"]),
        rbo_lower_effect=gauge("shadow_rbo_lower_effect", "While "
                               "shadow_rbo_lower_sustained is 1: the mean RBO per question "
                               "before the drop minus in it; else 0.", ["retriever"]),
        rbo_lower_since=gauge("shadow_rbo_lower_since_seconds", "While "
                              "shadow_rbo_lower_sustained is 1: the event time the drop "
                              "began (Unix seconds); else 0.", ["retriever"]),
        gold_recall=gauge("gold_recall", "Gold-set recall@k of the latest gold-set run.",
                          ["retriever", "k", "kind"]),
        gold_hit_rate=gauge("gold_hit_rate", "Gold-set hit rate@k of the latest run.",
                            ["retriever", "k", "kind"]),
        gold_ndcg=gauge("gold_ndcg", "Gold-set nDCG@k of the latest run.",
                        ["retriever", "k", "kind"]),
        gold_mrr=gauge("gold_mrr", "Gold-set MRR of the latest run.", ["retriever", "kind"]),
        gold_questions=gauge("gold_questions", "Answerable gold questions scored in the "
                             "latest run.", ["retriever", "kind"]),
        gold_acl_violations=gauge("gold_acl_violations", "Results of the latest gold-set run "
                                  "that a role-restricted question's role may not read.",
                                  ["retriever", "role"]),
        gold_run_timestamp=gauge("gold_run_timestamp_seconds", "When the latest gold-set run "
                                 "of a retriever finished (Unix seconds).", ["retriever"]),
        gold_runs=counter("gold_runs", "Gold-set runs, by outcome.", ["outcome"]),
        known_questions=counter("known_questions", "Live questions that near-duplicate a "
                                "gold question, scored per retriever (each against the gold "
                                "set loaded when it was asked: the count goes on across "
                                "gold-set reloads).", ["retriever"]),
        known_recall=summary("known_recall", "Live recall@k on known (gold) questions "
                             "(each against the gold set loaded when it was asked; goes on "
                             "across gold-set reloads).", ["retriever"]),
        known_refusals=counter("known_refusals", "Live refusals (detected, as "
                               "refusals_total) of answerable gold questions and answers to "
                               "unanswerable ones.", ["kind"]),
        acl_violations=counter("acl_violations", "Events whose results hold a passage the "
                               "asker's role may not read.", ["retriever", "role"]),
        acl_leaks=counter("acl_leaks", "Answers that cited a passage the asker's role may "
                          "not read (the restricted text reached the user).",
                          ["retriever", "role"]),
        retrievers=names,
        language_labels=tuple(dict.fromkeys([*language_labels, "und", SHADOW_NO_LABEL[1],
                                             OTHER])),
        topic_labels=tuple(dict.fromkeys([*topic_labels, "und", *SHADOW_NO_LABEL, OTHER])),
        role_labels=tuple(dict.fromkeys([*role_labels, "unknown", OTHER])),
        _opened_seen={},
    )  # fmt: skip
    for outcome_label in ("ok", "failed"):
        metrics.gold_runs.labels(outcome=outcome_label)
    for kind in KNOWN_REFUSAL_KINDS:
        metrics.known_refusals.labels(kind=kind)
    # Live known-question scores are labelled by candidate and PRODUCTION only; the gold-set
    # run name of production (``shadow.production``, e.g. "prod") never gets one, so a series
    # pre-initialised under it would stay 0 next to "production" (trial 15).
    for name in dict.fromkeys([*candidates, PRODUCTION]):
        metrics.known_questions.labels(retriever=name)
        metrics.known_recall.labels(retriever=name)
        # At 0 for every ACL role (and ``other``: a role no ACL names) when the corpus has
        # ACLs: a first violation is then an increase the ACLViolation alert sees, also after
        # a restart on the same target, where the series of the last run hides a first
        # sighting (review of trial 47 LOW 4's fix). ``unknown`` (no role) is never checked.
        for role in dict.fromkeys([*role_labels, OTHER]) if role_labels else ():
            metrics.acl_violations.labels(retriever=name, role=role)
    for name in candidates:
        for outcome in SHADOW_OUTCOMES:
            metrics.offers.labels(retriever=name, outcome=outcome)
        for reason in SHADOW_DISPLACED:
            metrics.displaced.labels(retriever=name, reason=reason)
        metrics.breaker_opened.labels(retriever=name)
        for reason in SHADOW_ERRORS:
            metrics.errors.labels(retriever=name, reason=reason)
        for cause in SHADOW_NOT_COMPARED:
            metrics.not_compared.labels(retriever=name, cause=cause)
        metrics.request_duration.labels(retriever=name)
        metrics.observe_sustained(name, None)  # 0 until a verdict stands
    return metrics
