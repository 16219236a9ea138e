"""Joining a gold set with runs: unanswerable apart, breakdowns, misses — values by hand."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from service.evaluation.evaluate import MISSING, evaluate_run, retrieve_run
from service.records import GoldQuestion, ScoredDoc

QUESTIONS = [
    # two gold passages, one found at rank 2 -> recall@5 = 1/2, first hit rank 2 -> RR 1/2
    GoldQuestion("q1", "fee and exception?", ("p1", "p2"), kind="multi-passage", source="real"),
    # gold at rank 1
    GoldQuestion("q2", "hostel fee?", ("p3",), kind="plain", source="written", language="en"),
    # gold at rank 6 -> beyond k=5: recall@5 = 0, MRR@5 = 0, uncut RR = 1/6
    GoldQuestion("q3", "exam date?", ("p4",), kind="plain", source="real", language="hi-Latn"),
    # unanswerable: never enters recall
    GoldQuestion("q4", "placement package?", (), kind="unanswerable"),
]

RUN = {
    "q1": [ScoredDoc("p9", 3.0), ScoredDoc("p1", 2.0), ScoredDoc("p8", 1.0)],
    "q2": [ScoredDoc("p3", 9.0), ScoredDoc("p3", 1.0)],  # duplicate keeps best rank
    "q3": [ScoredDoc(f"x{i}", 10.0 - i) for i in range(5)] + [ScoredDoc("p4", 1.0)],
    "q4": [ScoredDoc("p1", 0.7), ScoredDoc("p2", 0.2)],
}


def test_overall_excludes_unanswerable() -> None:
    report = evaluate_run("bm25", QUESTIONS, RUN, [1, 5])
    assert report.n_questions == 3
    assert report.n_unanswerable == 1
    assert report.overall["recall@5"] == pytest.approx((0.5 + 1.0 + 0.0) / 3)
    assert report.overall["hit_rate@5"] == pytest.approx(2 / 3)
    assert report.overall["recall@1"] == pytest.approx(1 / 3)
    assert report.overall["mrr"] == pytest.approx((1 / 2 + 1 + 1 / 6) / 3)
    assert report.unanswerable == {"n": 1.0, "mean_top_score": 0.7}
    assert report.n_duplicates == 1


def test_breakdowns_cover_every_present_field() -> None:
    report = evaluate_run("bm25", QUESTIONS, RUN, [5])
    assert set(report.by) == {"kind", "source", "language"}
    assert report.by["kind"]["plain"]["n"] == 2
    assert report.by["kind"]["plain"]["recall@5"] == pytest.approx(0.5)
    assert report.by["kind"]["multi-passage"]["recall@5"] == pytest.approx(0.5)
    assert report.by["source"]["real"]["recall@5"] == pytest.approx(0.25)
    assert report.by["language"][MISSING]["n"] == 1
    assert "unanswerable" not in report.by["kind"]


def test_one_kind_is_a_breakdown_unless_it_is_the_default() -> None:
    # every answerable row "plain" (the loader's default: no label anyone gave): no kind
    # breakdown (trial 13); every one "multi-passage", as a user labelled them: shown, as one
    # source or language is (trial 19), its means the overall ones
    plain = [GoldQuestion("a", "fee?", ("p3",)), GoldQuestion("b", "date?", ("p4",))]
    run = {"a": [ScoredDoc("p3", 1.0)], "b": [ScoredDoc("x", 1.0), ScoredDoc("p4", 0.5)]}
    assert "kind" not in evaluate_run("bm25", plain, run, [1]).by
    multi = [GoldQuestion(q.id, q.question, q.gold, kind="multi-passage") for q in plain]
    by_kind = evaluate_run("bm25", multi, run, [1]).by["kind"]
    assert list(by_kind) == ["multi-passage"]
    # recall@1: a found at rank 1 (1), b's gold at rank 2 (0) -> 1/2
    assert by_kind["multi-passage"]["n"] == 2
    assert by_kind["multi-passage"]["recall@1"] == pytest.approx(0.5)


def test_misses_say_what_came_back_instead() -> None:
    report = evaluate_run("bm25", QUESTIONS, RUN, [1, 5])
    misses = {m.question_id: m for m in report.misses}
    assert set(misses) == {"q1", "q3"}
    assert misses["q1"].gold_ranks == {"p1": 2, "p2": None}
    assert [d for _, d, _ in misses["q1"].instead] == ["p9", "p8"]
    assert misses["q3"].gold_ranks == {"p4": 6}
    assert misses["q3"].instead[0] == (1, "x0", 10.0)
    assert misses["q3"].to_json()["k"] == 5


def test_question_missing_from_run_scores_zero() -> None:
    report = evaluate_run("bm25", QUESTIONS[:2], {"q2": RUN["q2"]}, [5])
    assert report.per_query["q1"]["recall@5"] == 0.0
    assert report.overall["recall@5"] == pytest.approx(0.5)


def test_bad_ks() -> None:
    with pytest.raises(ValueError):
        evaluate_run("bm25", QUESTIONS, RUN, [])
    with pytest.raises(ValueError):
        evaluate_run("bm25", QUESTIONS, RUN, [0])


class _Echo:
    name = "echo"

    def __init__(self) -> None:
        self.batches: list[int] = []

    def search(self, question: str, k: int) -> list[ScoredDoc]:
        return self.search_batch([question], k)[0]

    def search_batch(self, questions: Sequence[str], k: int) -> list[list[ScoredDoc]]:
        self.batches.append(len(questions))
        return [[ScoredDoc(q, 1.0)][:k] for q in questions]


def test_retrieve_run_batches_and_reports_progress() -> None:
    retriever, done = _Echo(), []
    run = retrieve_run(retriever, QUESTIONS, depth=3, batch_size=3, progress=done.append)
    assert retriever.batches == [3, 1]
    assert done == [3, 1]
    assert run["q2"] == [ScoredDoc("hostel fee?", 1.0)]
    with pytest.raises(ValueError):
        retrieve_run(retriever, QUESTIONS, depth=0)


def test_lists_of_distances_returned_best_first_are_named() -> None:
    """Trial 12 F12: a retriever returning distances (lower is better, FAISS L2) best first
    scored recall@1 0 and MRR 0.01 without a word, its lists reversed by the trec_eval rank
    (score descending). Six questions, gold at position 1 of 3, distances 0.1, 0.2, 0.3:
    ranked by score descending the gold passage is third (recall@1 0, RR 1/3, by hand), and
    6 of 6 lists are ascending: warned. Similarities in the same order: no warning."""
    questions = [GoldQuestion(f"q{i}", "?", (f"g{i}",)) for i in range(6)]
    distances = {f"q{i}": [ScoredDoc(f"g{i}", 0.1), ScoredDoc("x", 0.2), ScoredDoc("y", 0.3)]
                 for i in range(6)}  # fmt: skip
    report = evaluate_run("faiss", questions, distances, [1])
    assert report.overall["recall@1"] == 0.0 and report.overall["mrr"] == pytest.approx(1 / 3)
    assert report.ascending == (6, 6)
    warning = report.order_warning()
    assert warning is not None and warning.startswith(
        "faiss: 6 of 6 result lists came in ascending score order"
    )
    assert report.to_json()["order_warning"] == warning
    similarities = {q: [ScoredDoc(d.doc_id, 1 - d.score) for d in docs]
                    for q, docs in distances.items()}  # fmt: skip
    report = evaluate_run("faiss", questions, similarities, [1])
    assert report.overall["recall@1"] == 1.0 and report.ascending == (0, 6)
    assert report.order_warning() is None
    # fewer than 5 lists with unequal scores, or under 90 % ascending: no warning
    assert evaluate_run("f", questions[:4], distances, [1]).order_warning() is None
    mixed = {**distances, "q0": similarities["q0"]}  # 5 of 6 = 83 %
    assert evaluate_run("f", questions, mixed, [1]).order_warning() is None


def test_lists_scored_all_alike_are_counted_and_their_figures_named() -> None:
    """Trial 45 M3: an entrypoint that matched no word of two Hindi questions scored every
    passage 0; ranked by trec_eval's tie order (score descending, then passage id
    descending) their gold passages still earned reciprocal ranks, a non-zero MRR for a
    retriever that found nothing. Worked by hand, five passages d1..d5:

    * h1 (gold d2) and h2 (gold d5): all five scored 0, so trec_eval ranks d5 d4 d3 d2 d1:
      d2 is 4th (RR 1/4), d5 1st (RR 1). Both "all tied".
    * e1 (gold d1): d1 2.0, d2 1.0, d3..d5 0.5: d1 1st (RR 1); the tie at 0.5 touches no
      gold passage: not counted.
    * e2 (gold d3): d1 2.0, d3 1.0, d4 1.0: d4 > d3 by id, so d3 is 3rd (RR 1/3); its rank
      set by a tie at its score: "gold tied".

    Uncut MRR (trec_eval recip_rank mean) = (1/4 + 1 + 1 + 1/3) / 4 = 31/48 = 0.6458; the
    all-tied questions' own MRR (1/4 + 1) / 2 = 0.625, i.e. 1.25 / 4 = 0.3125 of the overall.
    (pytrec_eval, trec_eval's C code, gives the same four reciprocal ranks on this run.)
    """
    from service.evaluation.report import render_json, render_text

    zeros = [ScoredDoc(f"d{i}", 0.0) for i in range(1, 6)]
    questions = [
        GoldQuestion("h1", "?", ("d2",), language="hi"),
        GoldQuestion("h2", "?", ("d5",), language="hi"),
        GoldQuestion("e1", "fee?", ("d1",), language="en"),
        GoldQuestion("e2", "date?", ("d3",), language="en"),
    ]
    run = {
        "h1": zeros,
        "h2": list(reversed(zeros)),
        "e1": [ScoredDoc("d1", 2.0), ScoredDoc("d2", 1.0)]
        + [ScoredDoc(f"d{i}", 0.5) for i in (3, 4, 5)],
        "e2": [ScoredDoc("d1", 2.0), ScoredDoc("d3", 1.0), ScoredDoc("d4", 1.0)],
    }
    report = evaluate_run("mine", questions, run, [1, 5])
    assert report.overall["mrr"] == pytest.approx(31 / 48)
    assert {q: v["mrr"] for q, v in report.per_query.items()} == pytest.approx(
        {"h1": 1 / 4, "h2": 1.0, "e1": 1.0, "e2": 1 / 3}
    )
    assert report.all_tied == ("h1", "h2")
    assert report.gold_tied == ("e2",)
    assert report.tied_groups == {"language=hi": 2}
    assert report.tied_mrr() == pytest.approx(0.625)
    note = report.tie_note()
    assert note is not None
    assert note.startswith(
        "mine: 2 of 4 answerable questions got passages all scored alike (h1, h2; language=hi "
        "2): their ranks and their uncut MRR 0.6250 (0.3125 of the overall 0.6458) rest on "
        "trec_eval's tie order")  # fmt: skip
    assert "1 more had a gold passage tied at its score with another passage (e2)" in note
    text = render_text([report], [])
    assert f"ties: {note}" in text
    doc = render_json([report], [], gold_set={}, ks=[1, 5], depth=100)  # type: ignore[typeddict-item]
    assert doc["depth"] == 100
    ties = doc["retrievers"]["mine"]["ties"]
    assert ties["all_tied"] == ["h1", "h2"] and ties["gold_tied"] == ["e2"]
    assert ties["mrr_all_tied"] == pytest.approx(0.625) and ties["note"] == note
    # scores that order every list and touch no gold passage with a tie: nothing to say
    clean = {q: [ScoredDoc(g, 1.0) for g in gold] for q, gold in
             (("h1", ("d2",)), ("h2", ("d5",)), ("e1", ("d1",)), ("e2", ("d3",)))}  # fmt: skip
    quiet = evaluate_run("mine", questions, clean, [1])
    assert quiet.all_tied == quiet.gold_tied == () and quiet.tie_note() is None
    assert "ties:" not in render_text([quiet], [])
