"""goldwatch / retrieval quality: gold-set scores per retriever and kind, shadow agreement with
production, shadow latency and errors, ACL violations.

The shadow and gold-set metrics are listed in ``dashboards/pending_metrics.txt`` until the
shadow runner exports them (their assumed shapes are stated there).
"""

from __future__ import annotations

from dashboards.grafana import RATE, SEL, Panel, query_variable, row, table, timeseries

GOLD = f'{SEL}, retriever=~"$retriever", k=~"$k", kind=~"$kind"'
SHADOW = f'{SEL}, retriever=~"$candidate"'

VARIABLES = [
    query_variable("retriever", "Retriever",
                   f"label_values(goldwatch_gold_recall{{{SEL}}}, retriever)"),
    query_variable("k", "k", f"label_values(goldwatch_gold_recall{{{SEL}}}, k)"),
    query_variable("kind", "Kind", f"label_values(goldwatch_gold_recall{{{SEL}}}, kind)"),
    query_variable("candidate", "Shadow candidate",
                   f"label_values(goldwatch_shadow_overlap{{{SEL}}}, retriever)"),
]  # fmt: skip


def _gold() -> list[Panel | list[Panel]]:
    return [
        row("Gold set"),
        [
            timeseries(
                "Gold-set recall@k per retriever and kind",
                "Share of gold passages found in the top k, per retriever and kind of question "
                "(plain, expert, multi-passage, role-restricted), on the whole gold set. A drop "
                "after a deploy or a re-index is a retrieval regression (GoldRecallDropped): "
                "compare with goldwatch eval --compare and read the misses. A step right after "
                "a gold-set change is expected.",
                [(f"max by (retriever, k, kind) (goldwatch_gold_recall{{{GOLD}}})",
                  "{{retriever}} recall@{{k}} {{kind}}")],
                "percentunit", maximum=1,
            ),
            timeseries(
                "Gold-set MRR per retriever and kind",
                "Mean reciprocal rank of the first gold passage, per retriever and kind. Recall "
                "steady but MRR falling means the gold passage is still found but ranked "
                "lower: check re-ranking and the citation behaviour of the answers.",
                [(f'max by (retriever, kind) (goldwatch_gold_mrr{{{SEL}, '
                  f'retriever=~"$retriever", kind=~"$kind"}})', "{{retriever}} {{kind}}")],
                "percentunit", maximum=1,
            ),
        ],
        table(
            "Latest recall@k: retriever x kind",
            "The latest gold-set recall@k per retriever, k and kind, side by side. Use it to "
            "pick a candidate: compare rows at the same k; kinds with few questions move in big "
            "steps.",
            [(f"max by (retriever, k, kind) (goldwatch_gold_recall{{{GOLD}}})", "")],
            "percentunit",
        ),
    ]  # fmt: skip


def _agreement() -> list[Panel | list[Panel]]:
    return [
        row("Shadow candidates against production (live questions)"),
        [
            timeseries(
                "Top-k overlap with production",
                "Share of production's top-k passages that the candidate also returns, on the "
                "same live questions (mean over the recent window). Low overlap is not bad by "
                "itself — a better retriever disagrees — but a sudden fall means the candidate "
                "changed or broke: check its errors and its gold-set recall.",
                [(f"max by (retriever) (goldwatch_shadow_overlap{{{SHADOW}}})",
                  "{{retriever}}")],
                "percentunit", maximum=1,
            ),
            timeseries(
                "Rank-biased overlap (RBO) with production",
                "Rank-biased overlap of the candidate's ranking with production's (top-weighted "
                "agreement, 1 = same order). Read with the overlap: same passages but low RBO "
                "means a different order, which changes what the model reads first.",
                [(f"max by (retriever) (goldwatch_shadow_rbo{{{SHADOW}}})", "{{retriever}}")],
                "percentunit", maximum=1,
            ),
            timeseries(
                "Citation recall: passages the answer cited that the candidate returns",
                "Share of the passages production's answer cited that the candidate also "
                "retrieves. The closest live proxy of gold recall: if it falls, the candidate "
                "would have lost passages the answers actually used.",
                [(f"max by (retriever) (goldwatch_shadow_citation_recall{{{SHADOW}}})",
                  "{{retriever}}")],
                "percentunit", maximum=1,
            ),
        ],
    ]  # fmt: skip


def _health() -> list[Panel | list[Panel]]:
    bucket = f"goldwatch_shadow_request_duration_seconds_bucket{{{SHADOW}}}[{RATE}]"
    count = f"goldwatch_shadow_request_duration_seconds_count{{{SHADOW}}}[{RATE}]"
    return [
        row("Shadow health and access control"),
        [
            timeseries(
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
            ),
            timeseries(
                "Shadow calls per second per candidate",
                "Shadow calls made to each candidate per second, all replicas. It follows the "
                "live traffic (times the sampling rate); zero for a configured candidate means "
                "the shadow runner skips it.",
                [(f"sum by (retriever) (rate({count}))", "{{retriever}}")],
                "reqps",
            ),
        ],
        [
            timeseries(
                "Shadow error share per candidate",
                "Failed shadow calls per call, all replicas. Above 5 % with 50 calls in 15 "
                "minutes fires ShadowCandidateFailing; the candidate's agreement numbers then "
                "cover only its successful calls.",
                [(f"sum by (retriever) (rate(goldwatch_shadow_errors_total{{{SHADOW}}}[{RATE}]))"
                  f" / sum by (retriever) (rate({count}))", "{{retriever}}")],
                "percentunit", maximum=1, threshold=0.05,
            ),
            timeseries(
                "Shadow errors per second by reason",
                "Failed shadow calls per second by candidate and reason (timeout, connection, "
                "HTTP status, bad response). Timeouts: raise the timeout or scale the "
                "candidate; connection errors: it is down or its URL changed.",
                [(f"sum by (retriever, reason) "
                  f"(rate(goldwatch_shadow_errors_total{{{SHADOW}}}[{RATE}]))",
                  "{{retriever}}: {{reason}}")],
                "reqps",
            ),
            timeseries(
                "ACL violations per hour by retriever and role",
                "Results returned for a question whose asker's role may not read the passage "
                "(its ACL excludes the role), per retriever and role, last hour. Must be zero: "
                "any violation fires ACLViolation (critical). Production: a data-exposure "
                "incident; a candidate: block its rollout.",
                [(f"sum by (retriever, role) "
                  f"(increase(goldwatch_acl_violations_total{{{SEL}}}[1h]))",
                  "{{retriever}} / {{role}}")],
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
