"""Hypothesis invariants of service.evaluation.ir_metrics: order-free input, monotone in k, [0, 1],
no NaN.
"""

from __future__ import annotations

import math
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from service.evaluation.ir_metrics import evaluate, ndcg_at_k, rank_run
from service.records import Qrels, Run, ScoredDoc

DOC_IDS = st.sampled_from([f"d{i}" for i in range(12)] + ["a", "b", "10", "9"])
MEASURES = [
    "recall@1",
    "recall@3",
    "recall@10",
    "hit_rate@1",
    "hit_rate@3",
    "hit_rate@10",
    "precision@3",
    "mrr",
    "mrr@3",
    "ndcg",
    "ndcg@3",
    "map",
    "map@5",
]
KS = [1, 2, 3, 5, 8, 13, 30]

# Few distinct scores so ties are common; duplicates of a doc id are allowed too.
scored_docs = st.lists(
    st.builds(ScoredDoc, DOC_IDS, st.sampled_from([0.0, 0.5, 1.0, 2.5, -1.0])), max_size=20
)
qrel_rows = st.dictionaries(DOC_IDS, st.integers(min_value=-1, max_value=4), max_size=10)


@st.composite
def qrels_and_run(draw: st.DrawFn) -> tuple[Qrels, Run]:
    qids = draw(st.lists(st.sampled_from(["q1", "q2", "q3", "q4"]), unique=True, max_size=4))
    qrels = {q: draw(qrel_rows) for q in qids}
    run = {q: draw(scored_docs) for q in draw(st.lists(st.sampled_from(qids + ["x"]), unique=True))}
    return qrels, run


FAST = settings(max_examples=150, deadline=None)


@FAST
@given(qrels_and_run(), st.integers(min_value=0, max_value=2**32 - 1), st.sampled_from([1, 2]))
def test_shuffling_input_never_changes_a_metric(
    case: tuple[Qrels, Run], seed: int, level: int
) -> None:
    qrels, run = case
    shuffled = {q: random.Random(seed).sample(docs, len(docs)) for q, docs in run.items()}
    before = evaluate(qrels, run, MEASURES, relevance_level=level)
    after = evaluate(qrels, shuffled, MEASURES, relevance_level=level)
    assert before == after
    for docs, again in zip(run.values(), shuffled.values(), strict=True):
        assert rank_run(docs) == rank_run(again)


@FAST
@given(qrels_and_run(), st.sampled_from([1, 2]), st.booleans())
def test_values_in_unit_interval_never_nan(
    case: tuple[Qrels, Run], level: int, complete: bool
) -> None:
    qrels, run = case
    result = evaluate(qrels, run, MEASURES, relevance_level=level, complete=complete)
    values = [v for row in result.per_query.values() for v in row.values()]
    for value in [*values, *result.mean.values()]:
        assert not math.isnan(value)
        assert 0.0 <= value <= 1.0 + 1e-12
    assert result.n_queries == len(result.per_query)


@FAST
@given(qrels_and_run(), st.sampled_from([1, 2]))
def test_recall_and_hit_rate_never_decrease_with_k(case: tuple[Qrels, Run], level: int) -> None:
    qrels, run = case
    labels = [f"{m}@{k}" for m in ("recall", "hit_rate") for k in KS]
    result = evaluate(qrels, run, labels, relevance_level=level)
    for row in result.per_query.values():
        for name in ("recall", "hit_rate"):
            series = [row[f"{name}@{k}"] for k in KS]
            assert series == sorted(series)


@FAST
@given(qrel_rows, st.lists(DOC_IDS, unique=True, max_size=5), st.sampled_from([None, *KS]))
def test_ndcg_is_one_for_the_ideal_ranking(
    qrel: dict[str, int], noise: list[str], k: int | None
) -> None:
    gold = sorted((d for d, rel in qrel.items() if rel > 0), key=lambda d: -qrel[d])
    ranking = gold + [d for d in noise if qrel.get(d, 0) <= 0]
    expected = 1.0 if gold else 0.0  # no gain at all: defined as 0, not NaN
    assert math.isclose(ndcg_at_k(qrel, ranking, k), expected)
