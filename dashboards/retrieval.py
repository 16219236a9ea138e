"""goldwatch / retrieval quality: gold-set scores per retriever and kind, shadow agreement with
production, shadow latency and errors, ACL violations.

Shadow agreement is exported as histograms (``goldwatch_shadow_agreement{retriever,measure}``)
so that means over all replicas are ``sum(rate(_sum)) / sum(rate(_count))``; the gold-set
scores are gauges set by each gold-set run.
"""

from __future__ import annotations

from dashboards.grafana import RATE, SEL, Panel, no_value, query_variable, row, table, timeseries

GOLD = f'{SEL}, retriever=~"$retriever", k=~"$k", kind=~"$kind"'
SHADOW = f'{SEL}, retriever=~"$candidate"'
#: What an empty panel says: the gold gauges appear with the first gold-set run, the shadow
#: series with the first configured candidate (none by default).
NO_GOLD_RUN = (
    "No gold-set run yet (shadow.production or shadow.candidates, then "
    "shadow.evaluate_on_start, shadow.evaluate_every_s or POST /v1/shadow/evaluate)"
)
NO_CANDIDATE = "No shadow candidate configured (shadow.candidates)"

VARIABLES = [
    query_variable("retriever", "Retriever",
                   f"label_values(goldwatch_gold_recall{{{SEL}}}, retriever)"),
    query_variable("k", "k", f"label_values(goldwatch_gold_recall{{{SEL}}}, k)"),
    query_variable("kind", "Kind", f"label_values(goldwatch_gold_recall{{{SEL}}}, kind)"),
    query_variable("candidate", "Shadow candidate",
                   f"label_values(goldwatch_shadow_offers_total{{{SEL}}}, retriever)"),
]  # fmt: skip


def _gold() -> list[Panel | list[Panel]]:
    return [
        row("Gold set"),
        [
            no_value(NO_GOLD_RUN, timeseries(
                "Gold-set recall@k per retriever and kind",
                "Share of gold passages found in the top k, per retriever and kind of question "
                "(plain, expert, multi-passage, role-restricted), on the whole gold set. A drop "
                "after a deploy or a re-index is a retrieval regression (GoldRecallDropped): "
                "compare with goldwatch eval --compare and read the misses. A step right after "
                "a gold-set change is expected.",
                [(f"max by (retriever, k, kind) (goldwatch_gold_recall{{{GOLD}}})",
                  "{{retriever}} recall@{{k}} {{kind}}")],
                "percentunit", maximum=1,
            )),
            no_value(NO_GOLD_RUN, timeseries(
                "Gold-set MRR per retriever and kind",
                "Mean reciprocal rank of the first gold passage, per retriever and kind. Recall "
                "steady but MRR falling means the gold passage is still found but ranked "
                "lower: check re-ranking and the citation behaviour of the answers.",
                [(f'max by (retriever, kind) (goldwatch_gold_mrr{{{SEL}, '
                  f'retriever=~"$retriever", kind=~"$kind"}})', "{{retriever}} {{kind}}")],
                "percentunit", maximum=1,
            )),
        ],
        [
            no_value(NO_GOLD_RUN, timeseries(
                "Gold-set hit rate@k and nDCG@k (all kinds)",
                "Hit rate: share of answerable gold questions with at least one gold passage "
                "in the top k. nDCG@k: graded, position-discounted gain (trec_eval "
                "ndcg_cut). Hit rate steady while recall falls: multi-passage questions lose "
                "their second passage.",
                [(f'max by (retriever, k) (goldwatch_gold_hit_rate{{{SEL}, '
                  f'retriever=~"$retriever", k=~"$k", kind="all"}})',
                  "{{retriever}} hit rate@{{k}}"),
                 (f'max by (retriever, k) (goldwatch_gold_ndcg{{{SEL}, '
                  f'retriever=~"$retriever", k=~"$k", kind="all"}})',
                  "{{retriever}} nDCG@{{k}}")],
                "percentunit", maximum=1,
            )),
            timeseries(
                "Age of the latest gold-set run, and failed runs",
                "Seconds since each retriever's latest gold-set run finished, and failed runs "
                "in the last hour. The age grows past shadow.evaluate_every_s when runs fail "
                "(see GET /v1/shadow/evaluate: last_error) — the gold gauges are then stale. No "
                "age line before the first gold-set run (shadow.evaluate_on_start, "
                "shadow.evaluate_every_s or POST /v1/shadow/evaluate).",
                [(f'time() - max by (retriever) (goldwatch_gold_run_timestamp_seconds{{{SEL}, '
                  f'retriever=~"$retriever"}})', "{{retriever}} age"),
                 (f'sum(increase(goldwatch_gold_runs_total{{{SEL}, outcome="failed"}}[1h]))',
                  "failed runs / h")],
                "s",
            ),
        ],
        no_value(NO_GOLD_RUN, table(
            "Latest recall@k: retriever x kind",
            "The latest gold-set recall@k per retriever, k and kind, side by side. Use it to "
            "pick a candidate: compare rows at the same k; kinds with few questions move in big "
            "steps.",
            [(f"max by (retriever, k, kind) (goldwatch_gold_recall{{{GOLD}}})", "")],
            "percentunit",
        )),
    ]  # fmt: skip


def _mean(measure: str) -> str:
    """Mean of one agreement measure over the rate window, all replicas."""
    sel = f'{SHADOW}, measure="{measure}"'
    return (
        f"sum by (retriever) (rate(goldwatch_shadow_agreement_sum{{{sel}}}[{RATE}]))"
        f" / sum by (retriever) (rate(goldwatch_shadow_agreement_count{{{sel}}}[{RATE}]))"
    )


def _by_language(measure: str) -> str:
    sel = f'{SHADOW}, measure="{measure}"'
    metric = "goldwatch_shadow_agreement_by_language"
    return (
        f"sum by (retriever, language) (rate({metric}_sum{{{sel}}}[{RATE}]))"
        f" / sum by (retriever, language) (rate({metric}_count{{{sel}}}[{RATE}]))"
    )


def _by_topic(measure: str) -> str:
    sel = f'{SHADOW}, measure="{measure}"'
    metric = "goldwatch_shadow_agreement_by_topic"
    return (
        f"sum by (retriever, topic) (rate({metric}_sum{{{sel}}}[{RATE}]))"
        f" / sum by (retriever, topic) (rate({metric}_count{{{sel}}}[{RATE}]))"
    )


def _agreement() -> list[Panel | list[Panel]]:
    return [
        row("Shadow candidates against production (live questions)"),
        [
            no_value(NO_CANDIDATE, timeseries(
                "Top-k overlap with production",
                "Share of production's top-k passages that the candidate also returns, on the "
                "same live questions (mean over the recent window). Low overlap is not bad by "
                "itself — a better retriever disagrees — but a sudden fall means the candidate "
                "changed or broke: check its errors and its gold-set recall.",
                [(_mean("overlap"), "{{retriever}}")],
                "percentunit", maximum=1,
            )),
            no_value(NO_CANDIDATE, timeseries(
                "Rank-biased overlap (RBO) with production",
                "Rank-biased overlap of the candidate's ranking with production's (top-weighted "
                "agreement, 1 = same order). Read with the overlap: same passages but low RBO "
                "means a different order, which changes what the model reads first.",
                [(_mean("rbo"), "{{retriever}}")],
                "percentunit", maximum=1,
            )),
            no_value(NO_CANDIDATE, timeseries(
                "Citation recall: passages the answer cited that the candidate returns",
                "Share of the passages production's answer cited that the candidate also "
                "retrieves. The closest live proxy of gold recall: if it falls, the candidate "
                "would have lost passages the answers actually used.",
                [(_mean("citation_recall"), "{{retriever}}")],
                "percentunit", maximum=1,
            )),
        ],
        [
            no_value(NO_CANDIDATE, timeseries(
                "RBO with production by question language",
                "Rank-biased overlap per candidate and language of the live question. A "
                "candidate that handles cross-lingual questions differently from production "
                "shows low RBO on those languages only: check its gold-set recall for them "
                "before reading it as worse.",
                [(_by_language("rbo"), "{{retriever}} {{language}}")],
                "percentunit", maximum=1,
            )),
            no_value(NO_CANDIDATE, timeseries(
                "RBO with production by topic",
                "Rank-biased overlap per candidate and topic of the live question. A topic "
                "where only one candidate disagrees is where its index or chunking differs: "
                "read that topic's disagreements (GET /v1/shadow/disagreements).",
                [(_by_topic("rbo"), "{{retriever}} {{topic}}")],
                "percentunit", maximum=1,
            )),
            no_value(NO_CANDIDATE, timeseries(
                "Sustained RBO drop per candidate",
                "While a candidate's RBO with production stands lower since a point in event "
                "time than before it (the replay's sustained verdict, worked out live each "
                "event-time hour: paired t-test on per-question mean RBOs, Bonferroni over "
                "the runs scanned at 0.05), the drop in mean RBO per question; 0 otherwise. "
                "Above 0 fires ShadowAgreementDropped; GET /v1/shadow (sustained) gives "
                "its start and p.",
                [(f"max by (retriever) (goldwatch_shadow_rbo_lower_effect{{{SHADOW}}})",
                  "{{retriever}}")],
                "short", threshold=0.0,
            )),
        ],
        [
            timeseries(
                "Live recall on known questions",
                "Live questions that near-duplicate a gold question, scored against that "
                "gold row's passages: mean recall@k per retriever over the window (production "
                "and candidates). The gold set's verdict on real traffic; a drop here with a "
                "steady gold-set run means the live system differs from what is evaluated. "
                "At a few known questions an hour it is noisy: the service tests production's "
                "miss rate on its own day-long windows (drift dimension known_miss: alerts "
                "DriftAlarmRaised and DriftDetected; GET /v1/quality recent).",
                [(f"sum by (retriever) (rate(goldwatch_known_recall_sum{{{SEL}}}[{RATE}]))"
                  f" / sum by (retriever) (rate(goldwatch_known_recall_count{{{SEL}}}[{RATE}]))",
                  "{{retriever}}")],
                "percentunit", maximum=1,
            ),
            timeseries(
                "Known questions per second, and refusal mistakes on them",
                "Live questions matched to a gold question (per retriever scored), and among "
                "them refusals of answerable gold questions and answers to unanswerable ones. "
                "Either mistake on a question the gold set already covers is a regression "
                "the gold-set run should also show.",
                [(f"sum by (retriever) (rate(goldwatch_known_questions_total{{{SEL}}}[{RATE}]))",
                  "known: {{retriever}}"),
                 (f"sum by (kind) (rate(goldwatch_known_refusals_total{{{SEL}}}[{RATE}]))",
                  "{{kind}}")],
                "reqps",
            ),
        ],
    ]  # fmt: skip


def _health() -> list[Panel | list[Panel]]:
    bucket = f"goldwatch_shadow_request_duration_seconds_bucket{{{SHADOW}}}[{RATE}]"
    count = f"goldwatch_shadow_request_duration_seconds_count{{{SHADOW}}}[{RATE}]"
    return [
        row("Shadow health and access control"),
        [
            no_value(NO_CANDIDATE, timeseries(
                "Shadow call latency per candidate (p50, p95, p99)",
                "Duration of the shadow calls to each candidate, all replicas. Compare with "
                "production's latency budget before a rollout; a p99 close to the shadow "
                "timeout turns into timeouts (errors) and slows the consumer.",
                [
                    (f"histogram_quantile(0.5, sum by (retriever, le) (rate({bucket})))",
                     "{{retriever}} p50"),
                    (f"histogram_quantile(0.95, sum by (retriever, le) (rate({bucket})))",
                     "{{retriever}} p95"),
                    (f"histogram_quantile(0.99, sum by (retriever, le) (rate({bucket})))",
                     "{{retriever}} p99"),
                ],
                "s",
            )),
            no_value(NO_CANDIDATE, timeseries(
                "Shadow calls per second per candidate",
                "Shadow calls made to each candidate per second, all replicas. It follows the "
                "live traffic (times the sampling rate); zero for a configured candidate means "
                "the shadow runner skips it.",
                [(f"sum by (retriever) (rate({count}))", "{{retriever}}")],
                "reqps",
            )),
        ],
        [
            no_value(NO_CANDIDATE, timeseries(
                "Skipped shadow offers per second by reason",
                "Live events not shadow-run, by candidate and reason: not_sampled and filtered "
                "are configuration; scrubbed: the question held personal data production saw "
                "unscrubbed (no fair comparison); queue_full, rate_limited and breaker_open "
                "mean the candidate cannot keep up or is failing (the live path never waits "
                "for it), or, with cpu_budget, a backlog read faster than the budget allows; "
                "displaced: queued, then replaced in a full queue by a later event of lower "
                "sampling draw, so the events compared spread over the backlog.",
                [(f'sum by (retriever, outcome) (rate(goldwatch_shadow_offers_total{{{SHADOW}, '
                  f'outcome!="queued"}}[{RATE}]))', "{{retriever}}: {{outcome}}"),
                 (f"sum by (retriever, reason) (rate(goldwatch_shadow_displaced_total"
                  f"{{{SHADOW}}}[{RATE}]))", "{{retriever}}: displaced ({{reason}})")],
                "reqps",
            )),
            timeseries(
                "Shadow queue depth, workers and open breakers",
                "Events waiting per candidate, its worker threads, and 1 while its circuit "
                "breaker is open (after consecutive failures; half-open probes close it). A "
                "full queue drops offers as queue_full; dropped results mean the pipeline "
                "collects slower than the candidates answer. Only the dropped results show "
                "while no shadow candidate is configured (shadow.candidates).",
                [(f"sum by (retriever) (goldwatch_shadow_queue_depth{{{SHADOW}}})",
                  "{{retriever}} queued"),
                 (f"sum by (retriever) (goldwatch_shadow_workers{{{SHADOW}}})",
                  "{{retriever}} workers"),
                 (f'max by (retriever) (goldwatch_shadow_breaker_state{{{SHADOW}, '
                  f'state="open"}})', "{{retriever}} breaker open"),
                 (f"sum by (retriever) (increase(goldwatch_shadow_breaker_opened_total"
                  f"{{{SHADOW}}}[1h]))", "{{retriever}} breaker openings / h"),
                 (f"sum(increase(goldwatch_shadow_results_dropped_total{{{SEL}}}[1h]))",
                  "results dropped / h")],
                "short",
            ),
        ],
        [
            no_value(NO_CANDIDATE, timeseries(
                "Shadow error share per candidate",
                "Failed shadow calls per call, all replicas. Above 5 % with 50 calls in 15 "
                "minutes fires ShadowCandidateFailing; the candidate's agreement numbers then "
                "cover only its successful calls.",
                [(f"sum by (retriever) (rate(goldwatch_shadow_errors_total{{{SHADOW}}}[{RATE}]))"
                  f" / sum by (retriever) (rate({count}))", "{{retriever}}")],
                "percentunit", maximum=1, threshold=0.05,
            )),
            no_value(NO_CANDIDATE, timeseries(
                "Shadow errors per second by reason",
                "Failed shadow calls per second by candidate and reason (timeout, connection, "
                "HTTP status, bad response). Timeouts: raise the timeout or scale the "
                "candidate; connection errors: it is down or its URL changed.",
                [(f"sum by (retriever, reason) "
                  f"(rate(goldwatch_shadow_errors_total{{{SHADOW}}}[{RATE}]))",
                  "{{retriever}}: {{reason}}")],
                "reqps",
            )),
            timeseries(
                "ACL violations per hour by retriever and role",
                "Events whose results hold a passage the asker's role may not read (its ACL "
                "excludes the role), per retriever and role, last hour; 'leaked in answers' "
                "counts answers that cited such a passage (the text reached the user); "
                "'gold-set run' counts them on role-restricted gold questions. Must be zero: "
                "any violation fires ACLViolation (critical). Production: a data-exposure "
                "incident; a candidate: block its rollout.",
                [(f"sum by (retriever, role) "
                  f"(increase(goldwatch_acl_violations_total{{{SEL}}}[1h]))",
                  "{{retriever}} / {{role}}"),
                 (f"sum by (retriever, role) "
                  f"(increase(goldwatch_acl_leaks_total{{{SEL}}}[1h]))",
                  "leaked in answers: {{retriever}} / {{role}}"),
                 (f"max by (retriever, role) (goldwatch_gold_acl_violations{{{SEL}}})",
                  "gold-set run: {{retriever}} / {{role}}")],
                "short", threshold=1,
            ),
        ],
    ]  # fmt: skip


def dashboard() -> Panel:
    """The retrieval-quality dashboard as Grafana JSON (a dict)."""
    from dashboards.grafana import dashboard as build

    return build("goldwatch-retrieval", "goldwatch / retrieval quality",
                 "Retrievers scored on the gold set, and shadow candidates compared with "
                 "production on live questions: agreement, latency, errors, ACL violations.",
                 [*_gold(), *_agreement(), *_health()], VARIABLES)  # fmt: skip
