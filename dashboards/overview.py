"""goldwatch / overview: traffic, languages, topics, refusals, drift, coverage, ingestion health,
OpenTelemetry trace ingest.

Global numbers come from the recording rules (``goldwatch:*``, all replicas summed); the
service's own detectors (``goldwatch_drift_*``) are per replica and shown with ``max``/``min``
across replicas.
"""

from __future__ import annotations

from dashboards.grafana import (
    RATE,
    SEL,
    Panel,
    bargauge,
    no_value,
    row,
    stat,
    state_timeline,
    summed,
    table,
    timeseries,
)


def _traffic() -> list[Panel | list[Panel]]:
    return [
        row("Traffic"),
        [
            timeseries(
                "Events consumed per second by source",
                "Query-log messages read per second by goldwatch, summed over replicas, by "
                "source (kafka, file, stdin, http). It should follow your RAG system's traffic. "
                "A drop to zero while the RAG system serves means the producer or the consumer "
                "is broken (alert NoEventsReceived); a sustained rise beyond what the replicas "
                "process shows up as consumer lag below.",
                [(summed("goldwatch:events_consumed:rate5m", "source"), "{{source}}")],
                "eps",
            ),
            timeseries(
                "Personal data scrubbed per second by type",
                "E-mail addresses, phone numbers, Aadhaar and PAN numbers, cards, IPs and "
                "secret-bearing URLs replaced before anything is stored, by type. A jump means "
                "users paste personal data (a new form, a new channel): check the upstream UI, "
                "and that the scrubbed share stays plausible (a detector gone wild scrubs "
                "ordinary numbers).",
                [(f"sum by (type) (rate(goldwatch_pii_scrubbed_total{{{SEL}}}[{RATE}]))",
                  "{{type}}")],
                "cps",
            ),
        ],
        [
            timeseries(
                "Question languages (share of the last hour)",
                "Share of each detected language among the last hour's questions, all replicas "
                "(goldwatch:language_share:ratio_rate1h; hi-Latn is romanized Hindi/Hinglish, "
                "und means no evidence). Compare with the gold set's shares in the table "
                "below: a language that grows here but is rare in the gold set makes gold-set "
                "scores stale — add gold questions in it (alerts LanguageDrift, CoverageGap).",
                [(f"goldwatch:language_share:ratio_rate1h{{{SEL}}}", "{{language}}")],
                "percentunit", stack=True, maximum=1,
            ),
            timeseries(
                "Question topics (share of the last hour)",
                "Share of each topic among the last hour's questions given a topic, all "
                "replicas (goldwatch:topic_share:ratio_rate1h). 'novel' counts questions far "
                "from every gold question: traffic the gold set does not cover; no question is "
                "labelled novel (no series) while the novelty "
                "detector is untrusted (panel Detectors trusted), and the topics are "
                "then each question's NEAREST gold topic, questions on topics the gold set "
                "lacks included: not facts, no topic CoverageGap (a change of the shares is "
                "still a change of the traffic). A growing "
                "topic or novel share calls for new gold questions (alerts TopicDrift, "
                "CoverageGap). A question in a language no gold row is written in is given no "
                "topic (the panel below counts them). Empty while the topic model is below "
                "its kappa floor (panel Detectors trusted: topic): its shares are its reading "
                "then, not facts, and TopicDrift stays silent.",
                [(f"goldwatch:topic_share:ratio_rate1h{{{SEL}}}{TOPIC_UNTRUSTED}", "{{topic}}")],
                "percentunit", stack=True, maximum=1,
            ),
        ],
        [
            timeseries(
                "Questions in languages the candidates leave out (share of the last hour)",
                "Share of the last hour's questions, all replicas, whose text reads as a "
                "language that analytics.language.candidates (plus the gold set's languages) "
                "leaves out, by that language (goldwatch_questions_excluded_language_total over "
                "all questions). Such questions are labelled as a candidate or und, so the "
                "language shares and language drift miss them; from 5 % the reports and "
                "/v1/status call the language figures unreliable. Empty with the default "
                "candidates. Add the language to analytics.language.candidates, or remove the "
                "setting.",
                [(f"sum by (language) (rate(goldwatch_questions_excluded_language_total{{{SEL}}}"
                  f"[1h])) / ignoring (language) group_left () "
                  f"(sum(rate(goldwatch_questions_by_language_total{{{SEL}}}[1h])) > 0)",
                  "{{language}}")],
                "percentunit", stack=True, maximum=1,
            ),
            timeseries(
                "Questions given no topic (share of the last hour)",
                "Share of the last hour's questions, all replicas, given no topic because no "
                "gold row is written in their language, by that language "
                "(goldwatch_questions_no_topic_total over all questions): neither the topic "
                "assignment nor novelty was measured in it, so they are in no topic share and "
                "no topic drift. Empty while every question's language has gold rows. Add gold "
                "questions in the language to judge them (docs/topics.md).",
                [(f"sum by (language) (rate(goldwatch_questions_no_topic_total{{{SEL}}}[1h])) "
                  f"/ ignoring (language) group_left () "
                  f"(sum(rate(goldwatch_questions_by_language_total{{{SEL}}}[1h])) > 0)",
                  "{{language}}")],
                "percentunit", stack=True, maximum=1,
            ),
        ],
    ]  # fmt: skip


#: Appended to a query of the out-of-scope detector's judgements (series with ``job`` and
#: ``namespace``): no series while that detector is untrusted on some replica, as the
#: OverRefusal / UnderRefusal alerts gate on it.
SCOPE_TRUSTED = f" and on (job, namespace) goldwatch:out_of_scope_detector:trusted{{{SEL}}} == 1"
#: Appended to a query of topic shares (series with ``job`` and ``namespace``): no series
#: while the topic model is below its kappa floor on some replica, as TopicDrift is gated;
#: the trust series is absent with unsupervised topics, which silences nothing.
TOPIC_UNTRUSTED = f" unless on (job, namespace) goldwatch:topic_detector:trusted{{{SEL}}} == 0"
#: The same for a query summed over every label: none unless trusted on every replica shown.
ALL_SCOPE_TRUSTED = (
    f' and on () (min (goldwatch_detector_trusted{{{SEL}, detector="out_of_scope"}}) == 1)'
)


def _refusals() -> list[Panel | list[Panel]]:
    return [
        row("Refusals and scope"),
        [
            timeseries(
                "Refusal rate and its baseline",
                "Share of answers that were refusals: over 5 minutes, over the last hour, and "
                "over the 24 hours before the last hour (the baseline of alert "
                "RefusalRateMoved), all replicas; plus the service's own windows "
                "(goldwatch_drift_rate_ratio: current vs baseline/reference, per replica, "
                "averaged). Up: the assistant declines more (check recent deploys, retrieval, "
                "over-refusals). Down: it stopped declining (check under-refusals).",
                [
                    (f"goldwatch:refusal:ratio_rate5m{{{SEL}}}", "5 min"),
                    (f"goldwatch:refusal:ratio_rate1h{{{SEL}}}", "last hour"),
                    (f"goldwatch:refusal:ratio_rate1d_offset1h{{{SEL}}}",
                     "baseline (24 h before the last hour)"),
                    (f'avg by (window) (goldwatch_drift_rate_ratio{{{SEL}, '
                     f'dimension="refusal"}})', "service window: {{window}}"),
                ],
                "percentunit", maximum=1,
            ),
            stat(
                "Refusal change: z statistic",
                "Two-proportion z statistic of the last hour's refusal rate against the 24 "
                "hours before it (goldwatch:refusal:zscore1h). |z| >= 4 with a move of 5 points "
                "and at least 200 answers fires RefusalRateMoved; |z| below 2 is noise. Empty "
                "when there were no answers.",
                [(f"goldwatch:refusal:zscore1h{{{SEL}}}", "{{job}}")],
                "none", ((None, "green"), (2, "orange"), (4, "red")),
            ),
        ],
        [
            timeseries(
                "Over- and under-refusals (last hour)",
                "Over-refusal: refused questions judged in scope, per in-scope question. "
                "Under-refusal: answered questions judged out of scope, per out-of-scope "
                "question. Both come from the out-of-scope detector calibrated on the gold "
                "set, so read them as trends; while that detector is untrusted (panel "
                "Detectors trusted) its series are empty here and the alerts stay silent. "
                "A rising over-refusal rate points at retrieval or prompt regressions "
                "(OverRefusal); a rising under-refusal rate at made-up answers (UnderRefusal). "
                "The detector misjudges some answerable questions, which a correct bot answers: "
                "under-refusals per scored question up to the detector's own error bound "
                "(95 % upper bound of the answerable gold questions it judges out of scope) "
                "are explained by it and do not alert. Likewise it lets some unanswerable "
                "questions pass as in scope, which a correct bot refuses: over-refusals per "
                "refusal up to its bound on those (95 % upper bound of the unanswerable gold "
                "questions it judges in scope) are explained by it and do not alert.",
                [
                    (f"goldwatch:over_refusal:ratio_rate1h{{{SEL}}}{SCOPE_TRUSTED}",
                     "over-refusal"),
                    (f"goldwatch:under_refusal:ratio_rate1h{{{SEL}}}{SCOPE_TRUSTED}",
                     "under-refusal"),
                    (f"goldwatch:under_refusal:per_scored_rate1h{{{SEL}}}{SCOPE_TRUSTED}",
                     "under-refusals per scored question"),
                    (f"goldwatch:out_of_scope_detector:misjudged_answerable_upper{{{SEL}}}",
                     "explained by the detector's error (upper bound)"),
                    (f"goldwatch:over_refusal:per_refusal_rate1h{{{SEL}}}{SCOPE_TRUSTED}",
                     "over-refusals per refusal"),
                    (f"goldwatch:out_of_scope_detector:misjudged_unanswerable_upper{{{SEL}}}",
                     "over-refusals explained by the detector's error (upper bound)"),
                ],
                "percentunit", maximum=1,
            ),
            timeseries(
                "Out-of-scope share and its baseline",
                "Share of scored questions judged out of scope in the last hour, all replicas "
                "(every verdict), and the service's windows (current vs baseline, averaged "
                "over replicas), which count only the stable verdicts: those the off-corpus "
                "cutoff's range does not move (a question near the cutoff another draw of gold "
                "rows would judge otherwise), as the out-of-scope drift alarm does; the two "
                "differ by the verdicts in that range (the report's out_of_scope.unstable). A "
                "rise means users ask what the corpus does not cover: look at topics, novel "
                "questions and coverage gaps; add documents or mark the questions as "
                "unanswerable in the gold set. Empty while the out-of-scope detector is "
                "untrusted (panel Detectors trusted): its judgements are no facts then.",
                [
                    (f"goldwatch:out_of_scope:ratio_rate1h{{{SEL}}}{SCOPE_TRUSTED}",
                     "last hour (every verdict)"),
                    (f'avg by (window) (goldwatch_drift_rate_ratio{{{SEL}, '
                     f'dimension="out_of_scope"}}{SCOPE_TRUSTED})',
                     "service window: {{window}} (stable verdicts)"),
                ],
                "percentunit", maximum=1,
            ),
        ],
        timeseries(
            "Answers, refusals and scope judgements per second",
            "The counts behind the ratios above, all replicas: events with an answer, refusals, "
            "questions given a scope score, judged out of scope, over- and under-refusals (the "
            "last three only while the out-of-scope detector is trusted on every replica: "
            "panel Detectors trusted). Ratios over few answers are noise; alerts need at "
            "least 100-200 in the hour.",
            [
                (f"sum (rate(goldwatch_answers_total{{{SEL}}}[{RATE}]))", "answers"),
                (f"sum (rate(goldwatch_refusals_total{{{SEL}}}[{RATE}]))", "refusals"),
                (f"sum (rate(goldwatch_scope_scored_total{{{SEL}}}[{RATE}]))", "scope scored"),
                (f"sum (rate(goldwatch_out_of_scope_total{{{SEL}}}[{RATE}])){ALL_SCOPE_TRUSTED}",
                 "out of scope"),
                (f"sum (rate(goldwatch_over_refusals_total{{{SEL}}}[{RATE}])){ALL_SCOPE_TRUSTED}",
                 "over-refusals"),
                (f"sum (rate(goldwatch_under_refusals_total{{{SEL}}}[{RATE}])){ALL_SCOPE_TRUSTED}",
                 "under-refusals"),
            ],
            "eps",
        ),
        timeseries(
            "Refusal rate by language (last hour)",
            "Refusals over answers in the last hour, all replicas, by the question's language "
            "(goldwatch_refusals_by_language_total / goldwatch_answers_by_language_total; labels "
            "bounded as the language shares': the gold set's languages and the allow-list, the "
            "rest other). A language refused far more often than the others is where an answer "
            "model or its retrieval fails that language. Over fewer than ~100 answers an hour "
            "a language's rate is noise: the report and GET /v1/refusals give each with its "
            "count and 95 % interval.",
            [(f"sum by (language) (rate(goldwatch_refusals_by_language_total{{{SEL}}}[1h])) "
              f"/ (sum by (language) (rate(goldwatch_answers_by_language_total{{{SEL}}}[1h])) "
              f"> 0)", "{{language}}")],
            "percentunit", maximum=1,
        ),
        [
            timeseries(
                "Detector quality (ROC AUC on the gold set)",
                "Each detector's ROC AUC measured on the data it was calibrated on (out-of-scope: "
                "cross-validated scores of answerable vs unanswerable gold questions; novelty: "
                "leave-one-out), with its 95 % bootstrap interval; lowest over replicas. 0.5 is "
                "chance. Below analytics.quality_floor (dashed line at the default 0.75) the "
                "detector's counts are labelled uncalibrated and it raises no alarm. The "
                "out-of-scope detector also shows its rates at the threshold its counts use "
                "(tpr, fpr, balanced_accuracy); below analytics.scope_min_balanced_accuracy "
                "(default 0.68) it is uncalibrated too; so is novelty (its rates: the share "
                "of gold questions read novel with their topic held out, and with every topic "
                "kept; uncalibrated, the topic shares are nearest gold topics).",
                [
                    (f"min by (detector) (goldwatch_detector_auc{{{SEL}}})", "{{detector}}"),
                    (f'min by (detector) (goldwatch_detector_auc_bound{{{SEL}, bound="low"}})',
                     "{{detector}} interval low"),
                    (f'min by (detector) (goldwatch_detector_auc_bound{{{SEL}, bound="high"}})',
                     "{{detector}} interval high"),
                    (f"min by (detector, rate) (goldwatch_detector_operating_point_ratio{{{SEL}}})",
                     "{{detector}} {{rate}} at its threshold"),
                ],
                "none", maximum=1, threshold=0.75,
            ),
            state_timeline(
                "Detectors trusted",
                "1 (trusted) while a detector's ROC AUC reaches analytics.quality_floor (and "
                "the out-of-scope and novelty detectors' balanced accuracy at their threshold "
                "analytics.scope_min_balanced_accuracy) on every replica; 0 (uncalibrated): "
                "its counts are not facts: its drift and the OverRefusal / UnderRefusal "
                "(out-of-scope) or TopicDrift (novelty's novel share) alerts stay silent, and "
                "the panels above leave its counts out.",
                [(f"min by (detector) (goldwatch_detector_trusted{{{SEL}}})", "{{detector}}")],
                {"1": ("trusted", "green"), "0": ("uncalibrated", "orange")},
            ),
        ],
    ]  # fmt: skip


#: ``goldwatch_drift_state`` states and the value the state panel gives each (the worst of
#: any replica wins: drift over starved over uncalibrated over insufficient data over ok,
#: whose series is left out: no state at 1 reads 0).
DRIFT_STATE_VALUES = (("insufficient_data", 1), ("uncalibrated", 2), ("starved", 3), ("drift", 4))


def _drift() -> list[Panel | list[Panel]]:
    by = "dimension, comparison"
    return [
        row("Drift against the gold set and the baseline"),
        [
            state_timeline(
                "Drift alarm state per dimension (service detectors)",
                "State of the service's drift detectors per dimension (language, topic, "
                "refusal, out_of_scope, known_refusal, known_miss = production missing the "
                "gold passage of known questions, terms) and comparison (reference = the "
                "gold set, baseline = "
                "earlier traffic): drift if any replica's detector alarms (chi-square or "
                "two-proportion test at a per-day false-alarm budget, plus an effect size), "
                "insufficient data below min_count, uncalibrated while the detector feeding "
                "the dimension is below its quality floor (its verdict is no fact and raises "
                "no alarm; GET /v1/drift says why), starved when the drift windows missed 20 "
                "% of the latest events (Events kept out, below). The worst state of any "
                "replica is shown. Drift for 15 minutes fires DriftDetected "
                "(at the traffic its windows hold min_count events; the rate alerts need 200 "
                "events an hour): open the matching "
                "panel below and the runbook of LanguageDrift/TopicDrift/RefusalRateMoved.",
                [(f"max by ({by}) ("
                  + " or ".join(f'{weight} * goldwatch_drift_state{{{SEL}, state="{state}"}}'
                                for state, weight in DRIFT_STATE_VALUES)
                  + ")", "{{dimension}} vs {{comparison}}")],
                {"0": ("ok", "green"), "1": ("insufficient data", "text"),
                 "2": ("uncalibrated (untrusted)", "orange"), "3": ("starved", "yellow"),
                 "4": ("drift", "red")},
            ),
            timeseries(
                "Drift alarms raised",
                "Alarms the service's drift detectors raised (moves into drift), per hour, "
                "all replicas (goldwatch_drift_alarms_total). Counted when raised, so an alarm "
                "raised and cleared within minutes of wall time (a log or a backlog read "
                "faster than real time) shows here and fires DriftAlarmRaised once; GET "
                "/v1/drift alarms gives their event times and what moved.",
                [(f"sum by ({by}) (increase(goldwatch_drift_alarms_total{{{SEL}}}[1h]))",
                  "{{dimension}} vs {{comparison}}")],
                "short",
            ),
            timeseries(
                "Jensen-Shannon divergence against the gold set (all replicas)",
                "JSD (base 2: 0 same shares, 1 disjoint) of the last hour's language and topic "
                "shares against the gold set's, computed in PromQL from the summed counters "
                "(goldwatch:*:js_divergence_vs_gold_1h). Both sides are samples, so "
                "unchanged traffic reads above 0: the noise floor is its expected value "
                "(K - 1) / (8 ln 2) * (1/n + 1/n_gold), n this hour's questions, n_gold the "
                "gold set's rows (goldwatch:*:js_divergence_null_1h), and the threshold the "
                "alerts fire at (with at least 200 questions an hour) is the JSD unchanged "
                "traffic reaches about one hour in 1,000, at least 0.05 "
                "(goldwatch:*:js_divergence_bound_1h; docs/runbook.md#topicdrift). Dashed "
                "line: 0.05, the least threshold. No topic series while the topic model is "
                "below its kappa floor (TopicDrift is silenced then: panel Detectors trusted).",
                [
                    (f"goldwatch:language:js_divergence_vs_gold_1h{{{SEL}}}", "language"),
                    (f"goldwatch:topic:js_divergence_vs_gold_1h{{{SEL}}}{TOPIC_UNTRUSTED}",
                     "topic"),
                    (f"goldwatch:language:js_divergence_null_1h{{{SEL}}}", "language noise floor"),
                    (f"goldwatch:topic:js_divergence_null_1h{{{SEL}}}{TOPIC_UNTRUSTED}",
                     "topic noise floor"),
                    (f"goldwatch:language:js_divergence_bound_1h{{{SEL}}}", "language threshold"),
                    (f"goldwatch:topic:js_divergence_bound_1h{{{SEL}}}{TOPIC_UNTRUSTED}",
                     "topic threshold"),
                ],
                "none", threshold=0.05,
            ),
            timeseries(
                "Events kept out of the drift windows",
                "Events the drift detectors never saw, all replicas: per hour, late (older "
                "than their partition's watermark minus analytics.drift.allowed_lateness_s) "
                "and future (stamped more than analytics.drift.future_tolerance_s after the "
                "wall clock); and held now (more than analytics.drift.max_ahead_s ahead of the "
                "watermark, until analytics.drift.ahead_confirm of them confirm a jump). When "
                "they reach 20 % of the latest 5,000 events, an ok test reads starved: check "
                "the producers' clocks and how far the partitions' backlogs differ "
                "(GET /v1/drift event_time).",
                [(f"sum by (reason) (increase(goldwatch_drift_events_kept_out_total"
                  f"{{{SEL}}}[1h]))", "{{reason}} / h"),
                 (f"sum (goldwatch_drift_events_held_ahead{{{SEL}}})", "held ahead")],
                "short",
            ),
        ],
        [
            timeseries(
                "JSD per dimension and comparison (service detectors)",
                "Jensen-Shannon divergence (base 2) of each replica's current window against "
                "the gold set (reference, 24 h) and against the frozen baseline of early traffic "
                "(1 h window), highest replica. Moves before the alarm state does; the state "
                "also needs significance and enough events.",
                [(f"max by ({by}) (goldwatch_drift_js_divergence{{{SEL}}})",
                  "{{dimension}} vs {{comparison}}")],
                "none", threshold=0.05,
            ),
            timeseries(
                "PSI per dimension and comparison (service detectors)",
                "Population stability index of the current window against the comparison, "
                "highest replica. Rule of thumb: below 0.1 stable, 0.1-0.25 moderate, above "
                "0.25 a real shift — confirm with the JSD and the alarm state before acting.",
                [(f"max by ({by}) (goldwatch_drift_psi{{{SEL}}})",
                  "{{dimension}} vs {{comparison}}")],
                "none", threshold=0.25,
            ),
            timeseries(
                "Drift test p-value (service detectors)",
                "p-value of the latest drift test per dimension and comparison, lowest replica "
                "(log scale). An alarm needs it below the Bonferroni-split alpha (0.001 per day "
                "by default) and an effect size; a low p-value with a small JSD is a real but "
                "small shift — no action.",
                [(f"min by ({by}) (goldwatch_drift_p_value{{{SEL}}})",
                  "{{dimension}} vs {{comparison}}")],
                "none", log=True,
            ),
        ],
        [
            bargauge(
                "Coverage gaps: categories the gold set under-covers",
                "Lower 95 % bound of (live share - gold-set share) for the languages and topics "
                "live traffic asks about more than the gold set covers, highest replica (top 10; "
                "0 means no gap). Orange "
                "from 5 points (alert CoverageGap after an hour). Add gold questions for these "
                "categories, starting with the harvested suggestions.",
                [(f"topk(10, max by (dimension, category) "
                  f"(goldwatch_coverage_gap_ratio{{{SEL}}}))",
                  "{{dimension}}: {{category}}")],
                "percentunit", ((None, "green"), (0.05, "orange"), (0.15, "red")),
            ),
            table(
                "Gold-set shares (the drift reference)",
                "The gold set's share of each language and topic, the reference every drift "
                "number compares with. A topic's share is of the gold rows the topic model "
                "assigns to it (held out, unanswerable rows included), not of its label; "
                "novel: rows the novelty check reads as novel (TopicDrift leaves it out while "
                "that detector is untrusted). It changes only when the gold set does; if a "
                "category you see in live traffic is missing here, the gold set has no question "
                "for it.",
                [(f"max by (dimension, category) (goldwatch_gold_share_ratio{{{SEL}}})", "")],
                "percentunit",
            ),
            timeseries(
                "Harvested gold-question suggestions (per hour, by reason)",
                "Live events picked as gold-question candidates in the last hour, by why "
                "(a miss, a novel topic, an uncovered language...; an event counts once per "
                "reason), and the new distinct suggestions they made after near-duplicate "
                "merging (summed over replicas: a question asked on two replicas' partitions "
                "is a new suggestion on each, so with N replicas this counts up to N per "
                "distinct question; the merged topic export gives the distinct ones). A "
                "steady flow is healthy; review and label them regularly (GET "
                "/v1/gold-candidates) — a growing backlog means the gold set is falling behind.",
                [(f"sum by (reason) (increase(goldwatch_gold_candidates_total{{{SEL}}}[1h]))",
                  "{{reason}}"),
                 (f"sum(increase(goldwatch_gold_candidates_new_total{{{SEL}}}[1h]))",
                  "new suggestions (Σ replicas)")],
                "short",
            ),
        ],
        [
            timeseries(
                "Suggestions held, skipped as known, evicted, sink failures",
                "Suggestions held, summed over replicas (each holds its own: a question asked on "
                "two replicas' partitions is held by both and counts twice here; the distinct "
                "count is that of goldwatch candidates export --from-records); picked events "
                "skipped because they near-"
                "duplicate a gold question (known questions); suggestions evicted at "
                "harvest.max_suggestions (raise it or label faster); new questions shed under "
                "a flood (harvest.max_new_per_batch; they get another chance when they recur); "
                "questions longer than harvest.max_question_chars (never suggested); "
                "failed publications to "
                "the state store or the compacted Kafka topic (they are retried at the next "
                "flush; persistent failures: check the broker and the disk).",
                [(f"sum(goldwatch_gold_candidates_held{{{SEL}}})", "held (Σ replicas)"),
                 (f"sum by (via) (increase(goldwatch_gold_candidates_known_total{{{SEL}}}[1h]))",
                  "known ({{via}}) / h"),
                 (f"sum(increase(goldwatch_gold_candidates_evicted_total{{{SEL}}}[1h]))",
                  "evicted / h"),
                 (f"sum(increase(goldwatch_gold_candidates_shed_total{{{SEL}}}[1h]))",
                  "shed (load) / h"),
                 (f"sum(increase(goldwatch_gold_candidates_too_long_total{{{SEL}}}[1h]))",
                  "too long / h"),
                 (f"sum by (sink) (increase(goldwatch_gold_candidate_sink_failures_total"
                  f"{{{SEL}}}[1h]))", "sink failures ({{sink}}) / h")],
                "short",
            ),
        ],
    ]  # fmt: skip


def _ingestion() -> list[Panel | list[Panel]]:
    batch = f"goldwatch_batch_processing_seconds_bucket{{{SEL}}}[{RATE}]"
    size = f"goldwatch_batch_size_bucket{{{SEL}}}[{RATE}]"
    return [
        row("Ingestion health"),
        [
            no_value("No Kafka source (source.kind: kafka): lag is per Kafka partition", timeseries(
                "Consumer lag by partition",
                "Messages between the consumer group's committed offset and the end of each "
                "partition (a partition counted once even while two replicas report it during a "
                "rebalance), and the total per topic. Flat near zero is healthy; a steady climb "
                "means goldwatch cannot keep up (ConsumerLagHigh): scale replicas up to the "
                "partition count or fix slow batches. 'checkpointed, not committed': offsets "
                "the replicas checkpointed but have not committed yet, what a crash now would "
                "have the next owner count again (usually 0; up to about "
                "kafka.commit_interval_s of events while commits succeed).",
                [
                    (f"max by (topic, partition) (goldwatch_consumer_lag{{{SEL}}})",
                     "{{topic}}[{{partition}}]"),
                    (f"sum by (topic) (goldwatch:consumer_lag:sum{{{SEL}}})", "{{topic}} total"),
                    (f"sum (goldwatch_consumer_uncommitted_offsets{{{SEL}}})",
                     "checkpointed, not committed"),
                ],
                "short",
            )),
            timeseries(
                "Throughput: consumed, processed, duplicates, dead letters",
                "Messages per second through the pipeline, all replicas: consumed = processed + "
                "dead-lettered + duplicates (+ other drops). Processed falling behind consumed "
                "means messages are being rejected: see dead letters; many duplicates mean the "
                "producer retries or the topic was replayed.",
                [
                    (summed("goldwatch:events_consumed:rate5m"), "consumed"),
                    (summed("goldwatch:events_processed:rate5m"), "processed"),
                    (summed("goldwatch:events_duplicate:rate5m"), "duplicates"),
                    (summed("goldwatch:events_dead_lettered:rate5m"), "dead-lettered"),
                ],
                "eps",
            ),
            timeseries(
                "Dead letters per second by reason",
                "Messages sent to the dead-letter queue (<topic>.dlq) per second, all replicas, "
                "by reason. not_json/not_utf8/missing_field/wrong_type: the producer or the "
                "field mapping changed; too_large: raise pipeline.max_event_bytes or fix the "
                "producer; processing_failed: a goldwatch stage error (read the logs). Alert "
                "DeadLetterRateHigh above 1 % of consumed.",
                [(summed("goldwatch:events_dead_lettered:rate5m", "reason"), "{{reason}}")],
                "eps",
            ),
        ],
        [
            timeseries(
                "Batch processing time (decode to commit)",
                "Wall time per micro-batch from decoding to the checkpoint and offset commit, "
                "all replicas: median and 99th percentile. It must stay well below the Kafka "
                "max_poll_interval_ms, or the broker evicts the consumer (rebalances). A rise "
                "usually comes from slow shadow retrievers or a slow topic model.",
                [
                    (f"histogram_quantile(0.5, sum by (le) (rate({batch})))", "p50"),
                    (f"histogram_quantile(0.99, sum by (le) (rate({batch})))", "p99"),
                ],
                "s",
            ),
            timeseries(
                "Batch size",
                "Messages per polled micro-batch: median, 99th percentile and mean. Small "
                "batches at high traffic cost throughput (raise pipeline.max_batch_wait_ms); "
                "batches at pipeline.max_batch_size all the time mean a backlog. The "
                "percentiles are rounded up to a whole batch (a batch holds whole events; "
                "without it every batch of 1 read as a median of 0.5, interpolated within the "
                "lowest bucket, 0 to 1); within a wider bucket they are interpolated.",
                [
                    (f"ceil(histogram_quantile(0.5, sum by (le) (rate({size}))))", "p50"),
                    (f"ceil(histogram_quantile(0.99, sum by (le) (rate({size}))))", "p99"),
                    (f"sum (rate(goldwatch_batch_size_sum{{{SEL}}}[{RATE}])) / "
                     f"sum (rate(goldwatch_batch_size_count{{{SEL}}}[{RATE}]))", "mean"),
                ],
                "short",
            ),
            timeseries(
                "Commits, commit failures and rebalances",
                "Offset commits per second (one per checkpoint, every few seconds per replica), "
                "failed commits and consumer-group rebalances. Failures or rebalances that keep "
                "coming mean broker trouble, session timeouts or batches slower than "
                "max_poll_interval_ms: check batch time and broker health. Topic re-creations "
                "(the topic was deleted and created again; it is read from its beginning) and "
                "undecodable record batches (dead-lettered as undecodable_batch: install the "
                "producer's codec) should stay at zero, and so should state file recreations "
                "(a checkpoint found the state file deleted or replaced and wrote it again "
                "whole: /v1/status state_file says when).",
                [
                    (f"sum (rate(goldwatch_commits_total{{{SEL}}}[{RATE}]))", "commits"),
                    (f"sum (rate(goldwatch_commit_failures_total{{{SEL}}}[{RATE}]))",
                     "commit failures"),
                    (f"sum (rate(goldwatch_rebalances_total{{{SEL}}}[{RATE}]))", "rebalances"),
                    (f"sum (rate(goldwatch_kafka_topic_recreations_total{{{SEL}}}[{RATE}]))",
                     "topic re-creations"),
                    (f"sum (rate(goldwatch_kafka_undecodable_batches_total{{{SEL}}}[{RATE}]))",
                     "undecodable batches"),
                    (f"sum (rate(goldwatch_state_file_recreated_total{{{SEL}}}[{RATE}]))",
                     "state file recreations"),
                ],
                "ops",
            ),
        ],
        [
            stat(
                "Event-time freshness",
                "Seconds between now and the timestamp of the newest processed event, newest "
                "replica. Small (seconds to minutes) on live traffic; growing means the "
                "consumer is stuck or lagging, or the producer stamps events late. Large by "
                "design while replaying an old file.",
                [(f"time() - max (goldwatch_last_event_timestamp_seconds{{{SEL}}})", "")],
                "s", ((None, "green"), (600, "orange"), (1800, "red")),
            ),
            stat(
                "Replicas up",
                "goldwatch targets Prometheus scrapes successfully. Fewer than the deployment's "
                "replicas: a pod is down (GoldwatchDown) and its partitions move to the others.",
                [('sum (up{job=~"$job", namespace=~"$namespace"})', "")],
                "short", ((None, "red"), (1, "green")),
            ),
            table(
                "Versions running",
                "Replicas per goldwatch and Python version (goldwatch_build_info). More than "
                "one row outside a rollout means a stuck rollout: replicas may disagree.",
                [(f"count by (version, python) (goldwatch_build_info{{{SEL}}})", "")],
                "short",
            ),
        ],
    ]  # fmt: skip


def _traces() -> list[Panel | list[Panel]]:
    def by(metric: str, label: str) -> str:
        return f"sum by ({label}) (rate(goldwatch_{metric}{{{SEL}}}[{RATE}]))"

    return [
        row("OpenTelemetry trace ingest"),
        [
            timeseries(
                "Traces assembled per second, and those that gave no event",
                "Traces handed out for mapping to events (OTLP over Kafka or POST /v1/traces), "
                "by why: settled (root span seen, then quiet for traces.assembly.settle_s), "
                "timeout (no root within traces.assembly.timeout_s: the exporter drops spans "
                "or the root ends late), flushed (shutdown with traces.flush_on_stop). "
                "Without root: the earliest "
                "orphan span stood in. Unmapped: a trace without a question, dead-lettered "
                "(check traces.mapping against your span attributes).",
                [
                    (by("traces_assembled_total", "why"), "{{why}}"),
                    (f"sum (rate(goldwatch_traces_without_root_total{{{SEL}}}[{RATE}]))",
                     "without root"),
                    (by("traces_unmapped_total", "reason"), "unmapped: {{reason}}"),
                ],
                "ops",
            ),
            timeseries(
                "Spans received, rejected and repeated per second",
                "Spans decoded from OTLP payloads; spans not kept whole (evicted, over the "
                "per-trace bound, an attribute cut, late), dead-lettered; spans sent again "
                "by an exporter's retry (kept once); payloads that could not be decoded. "
                "Rejections above a trickle mean the assembly limits are too small for your "
                "traces (traces.assembly.*).",
                [
                    (f"sum (rate(goldwatch_trace_spans_received_total{{{SEL}}}[{RATE}]))",
                     "received"),
                    (by("trace_spans_rejected_total", "reason"), "rejected: {{reason}}"),
                    (by("trace_spans_repeated_total", "reason"), "repeated: {{reason}}"),
                    (by("trace_payloads_rejected_total", "reason"), "bad payload: {{reason}}"),
                ],
                "cps",
            ),
            timeseries(
                "Open traces, restored traces and throttled requests",
                "Traces held in memory while being assembled (bounded by "
                "traces.assembly.max_open_traces), traces read back from the state file at "
                "start (acknowledged before a stop, not yet assembled), and POST /v1/traces "
                "requests answered 429 because they would have gone over the bound (the "
                "exporter retries; a steady rate means too few replicas or too long a "
                "settle time).",
                [
                    (f"sum (goldwatch_open_traces{{{SEL}}})", "open traces"),
                    (f"sum (increase(goldwatch_traces_restored_total{{{SEL}}}[{RATE}]))",
                     "restored"),
                    (f"sum (rate(goldwatch_trace_requests_throttled_total{{{SEL}}}[{RATE}]))",
                     "throttled requests/s"),
                ],
                "short",
            ),
        ],
    ]  # fmt: skip


def dashboard() -> Panel:
    """The overview dashboard as Grafana JSON (a dict)."""
    from dashboards.grafana import dashboard as build

    return build("goldwatch-overview", "goldwatch / overview",
                 "Live traffic against the gold set: languages, topics, refusals, drift, "
                 "coverage gaps and the health of ingestion. Needs the recording rules of "
                 "dashboards/rules/goldwatch.rules.yaml.",
                 [*_traffic(), *_refusals(), *_drift(), *_ingestion(), *_traces()], [])  # fmt: skip
