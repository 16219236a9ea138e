"""service.evaluation.ir_metrics: trec_eval parity, hand-worked cases, differential tests (ranx,
pytrec_eval).

Expected values here are worked out by hand (formulas in the comments) or read from trec_eval's
own expected outputs (../shared/data/trec_eval-tests, NIST trec_eval 10.0 ``test/``), never
copied from this module's output.
"""

from __future__ import annotations

import math
import random
import re
from collections import defaultdict
from pathlib import Path

import pytest

from service.evaluation.ir_metrics import (
    EvalResult,
    Measure,
    average_precision,
    default_measures,
    evaluate,
    first_relevant_rank,
    hit_rate_at_k,
    ndcg_at_k,
    parse_measure,
    precision_at_k,
    rank_run,
    recall_at_k,
    reciprocal_rank,
)
from service.records import Qrels, Run, ScoredDoc

# --------------------------------------------------------------------------- trec_eval parity

#: trec_eval measure rows we reproduce (every cutoff trec_eval prints for them).
_SUPPORTED = re.compile(
    r"^(map|recip_rank|ndcg|P_\d+|recall_\d+|ndcg_cut_\d+|map_cut_\d+|success_\d+)$"
)
_TOLERANCE = 5e-5  # trec_eval prints 4 decimals


def _read_qrels(path: Path) -> Qrels:
    """``qid iter docno rel`` lines (a test-local reader; the product one is
    service.evaluation.trec).
    """
    qrels: Qrels = defaultdict(dict)
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields:
            qrels[fields[0]][fields[2]] = int(fields[3])
    return dict(qrels)


def _read_run(path: Path) -> Run:
    """``qid Q0 docno rank score tag [junk...]`` lines; the rank column is ignored."""
    run: Run = defaultdict(list)
    for line in path.read_text().splitlines():
        fields = line.split()
        if fields:
            run[fields[0]].append(ScoredDoc(fields[2], float(fields[4])))
    return dict(run)


def _read_expected(path: Path) -> dict[tuple[str, str], float]:
    """``measure  qid|all  value`` rows of a trec_eval ``-q`` output, supported measures only."""
    rows = {}
    for line in path.read_text().splitlines():
        name, qid, value = line.split()
        if _SUPPORTED.match(name):
            rows[(name, qid)] = float(value)
    return rows


@pytest.mark.parametrize(
    ("qrels_file", "run_file", "expected_file", "relevance_level"),
    [
        ("qrels.test", "results.test", "out.test.aq", 1),
        # results.trunc: unsorted, 302 missing (-c scores it 0), junk after the 6th column.
        ("qrels.test", "results.trunc", "out.test.aqc", 1),
        # -l2: binary measures count rel >= 2; nDCG still takes gains from every rel > 0 and
        # builds its ideal from them (m_ndcg.c / m_ndcg_cut.c never read relevance_level), so
        # every supported measure matches, nDCG included.
        ("qrels.rel_level", "results.test", "out.test.aql", 2),
    ],
)
def test_matches_trec_eval_expected_output(
    shared_data: Path, qrels_file: str, run_file: str, expected_file: str, relevance_level: int
) -> None:
    base = shared_data / "trec_eval-tests"
    expected = _read_expected(base / expected_file)
    names = sorted({name for name, _ in expected})
    # 3 uncut + 9 cutoffs each of P, recall, ndcg_cut, map_cut + success_1/5/10 = 42 measures,
    # each for 301, 302, 303 and all.
    assert len(names) == 42
    assert len(expected) == 42 * 4

    result = evaluate(
        _read_qrels(base / qrels_file),
        _read_run(base / run_file),
        names,
        relevance_level=relevance_level,
        complete=True,
    )

    assert result.n_queries == 3
    assert result.n_duplicates == 0
    mismatches = []
    for (name, qid), want in sorted(expected.items()):
        label = parse_measure(name).label
        got = result.mean[label] if qid == "all" else result.per_query[qid][label]
        if abs(got - want) > _TOLERANCE:
            mismatches.append(f"{name} {qid}: trec_eval {want:.4f}, ours {got:.6f}")
    assert mismatches == []


def test_known_trec_eval_values_spot_check(shared_data: Path) -> None:
    """The numbers quoted in SOURCE.md, by name, in case the bulk comparison is ever loosened."""
    base = shared_data / "trec_eval-tests"
    result = evaluate(
        _read_qrels(base / "qrels.test"),
        _read_run(base / "results.test"),
        ["recip_rank", "recall_10", "ndcg_cut_10"],
    )
    assert result.per_query["301"]["mrr"] == pytest.approx(0.1667, abs=_TOLERANCE)
    assert result.per_query["302"]["recall@10"] == pytest.approx(0.0909, abs=_TOLERANCE)
    assert result.per_query["303"]["ndcg@10"] == 0.0
    assert result.mean == pytest.approx(
        {"mrr": 0.4064, "recall@10": 0.0317, "ndcg@10": 0.3016}, abs=_TOLERANCE
    )


# --------------------------------------------------------------------------- hand-worked cases

GOLD_2 = {"p1": 1, "p2": 1, "n1": 0}


def test_two_gold_one_found_recall_half() -> None:
    ranking = ["x", "p2", "n1"]
    assert recall_at_k(GOLD_2, ranking, 3) == 0.5  # 1 of 2 gold in top 3
    assert recall_at_k(GOLD_2, ranking, 1) == 0.0
    assert hit_rate_at_k(GOLD_2, ranking, 2) == 1.0
    assert hit_rate_at_k(GOLD_2, ranking, 1) == 0.0
    assert precision_at_k(GOLD_2, ranking, 2) == 0.5  # 1 relevant / 2
    assert reciprocal_rank(GOLD_2, ranking) == 0.5
    assert first_relevant_rank(GOLD_2, ranking) == 2
    assert average_precision(GOLD_2, ranking) == 0.25  # (1/2) / num_rel 2


def test_ties_broken_by_doc_id_descending_and_rank_column_ignored() -> None:
    docs = [ScoredDoc("b", 1.0), ScoredDoc("a", 1.0), ScoredDoc("c", 1.0), ScoredDoc("z", 2.0)]
    assert rank_run(docs) == (["z", "c", "b", "a"], 0)
    # "a" sorts last of the tied docs, so it is at rank 4 whatever the input order.
    result = evaluate({"q": {"a": 1}}, {"q": docs}, ["mrr", "recall@3"])
    assert result.per_query["q"] == {"mrr": 0.25, "recall@3": 0.0}
    # String order, not numeric: "10" < "9", so "9" comes first among equal scores.
    assert rank_run([ScoredDoc("10", 0.0), ScoredDoc("9", 0.0)])[0] == ["9", "10"]


def test_duplicates_keep_best_rank_and_are_counted() -> None:
    docs = [
        ScoredDoc("x", 0.9),
        ScoredDoc("gold", 0.1),
        ScoredDoc("gold", 0.8),  # best occurrence: rank 2
        ScoredDoc("x", 0.2),
        ScoredDoc("y", 0.5),
    ]
    assert rank_run(docs) == (["x", "gold", "y"], 2)
    result = evaluate({"q": {"gold": 1, "y": 1}}, {"q": docs}, ["mrr", "map", "P@3"])
    # gold at 2, y at 3 once the duplicates are dropped: AP = (1/2 + 2/3) / 2 = 7/12
    assert result.per_query["q"] == pytest.approx({"mrr": 0.5, "map": 7 / 12, "precision@3": 2 / 3})
    assert result.n_duplicates == 2
    assert reciprocal_rank({"y": 1}, ["x", "x", "y"]) == 0.5  # ranking with a repeat: y is 2nd


def test_empty_run_and_missing_query_score_zero() -> None:
    qrels = {"q1": {"p1": 1}, "q2": {"p2": 2}}
    measures = ["recall@5", "hit_rate@5", "P@5", "mrr", "mrr@5", "ndcg", "ndcg@5", "map"]
    result = evaluate(qrels, {"q1": []}, measures)
    assert result.n_queries == 2
    assert all(v == 0.0 for row in result.per_query.values() for v in row.values())
    assert set(result.mean.values()) == {0.0}
    # Without -c a query absent from the run is skipped, but an empty list is still scored.
    assert evaluate(qrels, {"q1": []}, measures, complete=False).n_queries == 1


def test_run_queries_without_qrels_are_ignored() -> None:
    result = evaluate({"q1": {"p": 1}}, {"q1": [ScoredDoc("p", 1)], "zz": []}, ["mrr"])
    assert result.per_query == {"q1": {"mrr": 1.0}}
    assert result.mean == {"mrr": 1.0}


def test_k_larger_than_list() -> None:
    qrel = {"p1": 1, "p2": 1, "p3": 1}
    ranking = ["p1", "x"]
    assert recall_at_k(qrel, ranking, 1000) == pytest.approx(1 / 3)
    assert precision_at_k(qrel, ranking, 10) == 0.1  # divisor is k even for a short list
    assert hit_rate_at_k(qrel, ranking, 50) == 1.0
    # IDCG@50 uses all 3 gold: 1 + 1/log2(3) + 1/log2(4); DCG = 1
    assert ndcg_at_k(qrel, ranking, 50) == pytest.approx(1 / (1 + 1 / math.log2(3) + 0.5))


def test_long_ranking_beyond_the_precomputed_discounts() -> None:
    ranking = [f"d{i}" for i in range(1, 3001)]  # gold "d2500" at rank 2500
    # DCG = 1/log2(2501); IDCG = 1/log2(2) = 1
    assert ndcg_at_k({"d2500": 1}, ranking) == pytest.approx(1 / math.log2(2501))
    assert ndcg_at_k({"d2500": 1}, ranking, 2499) == 0.0
    assert average_precision({"d2500": 1}, ranking) == pytest.approx(1 / 2500)


def test_a_single_measure_string_is_one_measure() -> None:
    result = evaluate({"q": {"a": 1}}, {"q": [ScoredDoc("a", 1)]}, "ndcg@10")
    assert result.mean == {"ndcg@10": 1.0}


def test_first_hit_beyond_k_gives_mrr_at_k_zero() -> None:
    qrel = {"p": 1}
    ranking = ["a", "b", "c", "p"]
    assert reciprocal_rank(qrel, ranking) == 0.25
    assert reciprocal_rank(qrel, ranking, k=4) == 0.25
    assert reciprocal_rank(qrel, ranking, k=3) == 0.0
    assert evaluate(
        {"q": qrel},
        {"q": [ScoredDoc(d, -i) for i, d in enumerate(ranking)]},
        [
            "mrr@3",
            "mrr@10",
        ],
    ).per_query["q"] == {"mrr@3": 0.0, "mrr@10": 0.25}


def test_graded_ndcg_by_hand() -> None:
    qrel = {"a": 3, "b": 2, "c": 1, "d": 0, "e": -1}
    ranking = ["b", "d", "a", "e", "c"]
    # DCG@5  = 2/log2(2) + 0 + 3/log2(4) + 0 (negative rel -> gain 0) + 1/log2(6)
    #        = 2 + 1.5 + 0.386853 = 3.886853
    # IDCG@5 = 3/log2(2) + 2/log2(3) + 1/log2(4) = 3 + 1.261860 + 0.5 = 4.761860
    assert ndcg_at_k(qrel, ranking) == pytest.approx(3.886853 / 4.761860, abs=1e-6)
    assert ndcg_at_k(qrel, ranking, 5) == pytest.approx(3.886853 / 4.761860, abs=1e-6)
    # DCG@2 = 2; IDCG@2 = 3 + 1.261860
    assert ndcg_at_k(qrel, ranking, 2) == pytest.approx(2 / 4.261860, abs=1e-6)
    # -l2 leaves nDCG alone (trec_eval) but makes "c" non-relevant for the binary measures.
    assert ndcg_at_k(qrel, ranking, relevance_level=2) == ndcg_at_k(qrel, ranking)
    assert recall_at_k(qrel, ranking, 5, relevance_level=2) == 1.0  # a and b, both found
    assert recall_at_k(qrel, ranking, 5, relevance_level=3) == 1.0  # only a
    assert first_relevant_rank(qrel, ranking, relevance_level=3) == 3


def test_map_by_hand() -> None:
    qrel = {"a": 1, "b": 1, "c": 1, "d": 1}  # num_rel = 4, "d" never retrieved
    ranking = ["a", "x", "b", "y", "c"]
    # AP = (1/1 + 2/3 + 3/5) / 4 = 0.566667; AP@3 = (1 + 2/3) / 4 = 0.416667
    assert average_precision(qrel, ranking) == pytest.approx((1 + 2 / 3 + 3 / 5) / 4)
    assert average_precision(qrel, ranking, k=3) == pytest.approx((1 + 2 / 3) / 4)


def test_query_without_relevant_docs_is_zero_not_nan() -> None:
    qrel = {"n": 0, "m": -1}
    ranking = ["n", "m"]
    for fn in (recall_at_k, hit_rate_at_k, precision_at_k):
        assert fn(qrel, ranking, 5) == 0.0
    for fn2 in (reciprocal_rank, ndcg_at_k, average_precision):
        assert fn2(qrel, ranking) == 0.0
    assert first_relevant_rank(qrel, ranking) is None
    result = evaluate({"q": qrel, "r": {"p": 1}}, {"q": [], "r": [ScoredDoc("p", 1)]}, ["map"])
    assert result.mean == {"map": 0.5}  # counted in the mean, like trec_eval
    assert evaluate({}, {}, ["map"]) == EvalResult({}, {"map": 0.0}, 0, 0)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("recall@10", Measure("recall", 10)),
        ("recall_10", Measure("recall", 10)),
        ("hit_rate@5", Measure("hit_rate", 5)),
        ("success_10", Measure("hit_rate", 10)),
        ("precision@5", Measure("precision", 5)),
        ("P@5", Measure("precision", 5)),
        ("P_10", Measure("precision", 10)),
        ("mrr", Measure("mrr", None)),
        ("recip_rank", Measure("mrr", None)),
        ("mrr@10", Measure("mrr", 10)),
        ("ndcg", Measure("ndcg", None)),
        ("ndcg@10", Measure("ndcg", 10)),
        ("ndcg_cut_10", Measure("ndcg", 10)),
        ("map", Measure("map", None)),
        ("map@100", Measure("map", 100)),
        ("map_cut_100", Measure("map", 100)),
    ],
)
def test_parse_measure(name: str, expected: Measure) -> None:
    assert parse_measure(name) == expected


def test_canonical_labels() -> None:
    labels = ["recall@10", "hit_rate@10", "precision@10", "mrr", "mrr@10", "ndcg", "ndcg@10"]
    assert [parse_measure(x).label for x in [*labels, "map"]] == [*labels, "map"]


@pytest.mark.parametrize(
    "bad", ["", "bleu@10", "recall", "P", "ndcg@0", "recall@-1", "ndcg@ten", "set_P", "Rprec"]
)
def test_parse_measure_rejects_bad_names(bad: str) -> None:
    with pytest.raises(ValueError, match="measure"):
        parse_measure(bad)


def test_invalid_arguments_raise_value_error() -> None:
    with pytest.raises(ValueError, match="k"):
        recall_at_k({"a": 1}, ["a"], 0)
    with pytest.raises(ValueError, match="k"):
        ndcg_at_k({"a": 1}, ["a"], k=0)
    with pytest.raises(ValueError, match="relevance_level"):
        reciprocal_rank({"a": 1}, ["a"], relevance_level=0)
    with pytest.raises(ValueError, match="relevance_level"):
        evaluate({}, {}, ["mrr"], relevance_level=0)
    with pytest.raises(ValueError, match="at least one"):
        evaluate({}, {}, [])
    with pytest.raises(ValueError, match="k"):
        default_measures([5, 0])


def test_default_measures_and_duplicate_measures() -> None:
    assert default_measures([5, 1, 5]) == [
        "recall@1",
        "recall@5",
        "hit_rate@1",
        "hit_rate@5",
        "ndcg@1",
        "ndcg@5",
        "mrr",
        "map",
    ]
    result = evaluate({"q": {"a": 1}}, {"q": [ScoredDoc("a", 1)]}, ["P_5", "precision@5"])
    assert result.per_query["q"] == {"precision@5": 0.2}


# --------------------------------------------------------------------------- differential


def _random_case(
    seed: int, *, graded: bool, ties: bool, negatives: bool
) -> tuple[Qrels, dict[str, dict[str, float]]]:
    rng = random.Random(seed)
    docs = [f"d{i}" for i in range(60)]
    levels = [-1, 0, 1, 2, 3] if negatives else [0, 1, 2, 3]
    qrels: Qrels = {}
    run: dict[str, dict[str, float]] = {}
    for q in range(40):
        qid = f"q{q}"
        judged = rng.sample(docs, rng.randint(1, 15))
        qrels[qid] = {d: (rng.choice(levels) if graded else rng.randint(0, 1)) for d in judged}
        qrels[qid][judged[0]] = max(qrels[qid][judged[0]], 1)  # at least one relevant doc
        retrieved = rng.sample(docs, rng.randint(1, 40))
        if ties:
            run[qid] = {d: float(rng.randint(0, 5)) for d in retrieved}
        else:
            scores = rng.sample(range(10_000), len(retrieved))
            run[qid] = {d: s / 100 for d, s in zip(retrieved, scores, strict=True)}
    return qrels, run


def _as_run(run: dict[str, dict[str, float]]) -> Run:
    return {q: [ScoredDoc(d, s) for d, s in docs.items()] for q, docs in run.items()}


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("relevance_level", [1, 2])
def test_matches_pytrec_eval_with_ties_and_grades(seed: int, relevance_level: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels, run = _random_case(seed, graded=True, ties=True, negatives=True)
    theirs = pytrec_eval.RelevanceEvaluator(
        qrels,
        {
            "map",
            "recip_rank",
            "ndcg",
            "P.1,3,10",
            "recall.1,3,10,50",
            "ndcg_cut.3,10,50",
            "success.1,5",
            "map_cut.5,20",
        },
        relevance_level=relevance_level,
    ).evaluate(run)
    ours = evaluate(
        qrels, _as_run(run), sorted(next(iter(theirs.values()))), relevance_level=relevance_level
    )
    assert theirs.keys() == ours.per_query.keys()
    for qid, row in theirs.items():
        for name, value in row.items():
            assert ours.per_query[qid][parse_measure(name).label] == pytest.approx(value), (
                qid,
                name,
            )


@pytest.mark.slow  # the first ranx call compiles its numba kernels: ~50 s quiet, minutes loaded
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("seed", range(4))
def test_matches_ranx_with_distinct_scores(seed: int) -> None:
    ranx = pytest.importorskip("ranx")
    qrels, run = _random_case(seed, graded=True, ties=False, negatives=False)
    measures = [
        "recall@1",
        "recall@10",
        "hit_rate@1",
        "hit_rate@5",
        "precision@3",
        "mrr",
        "mrr@3",
        "ndcg@3",
        "ndcg@10",
        "map",
        "map@10",
    ]
    theirs = ranx.evaluate(ranx.Qrels(qrels), ranx.Run(run), measures, return_mean=False)
    ours = evaluate(qrels, _as_run(run), measures)
    qids = sorted(ranx.Qrels(qrels).keys())  # ranx orders its per-query arrays by query id
    for label in measures:
        want = list(theirs[label])
        assert [ours.per_query[q][label] for q in qids] == pytest.approx(want), label
