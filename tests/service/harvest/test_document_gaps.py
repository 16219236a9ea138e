"""Coverage gaps by corpus document (trial 37b MEDIUM 4): a question's document is that of the
passage production ranked first, the gold set's documents are its rows' relevant passages',
and a document asked far more than the gold set asks about it is under-covered — the
``coverage_gap`` reason with ``gap_dimension`` ``"document"``, and the reports' list.

Expected values worked by hand, not by the code under test: 95 % Wilson lower bounds with
z = 1.959964 (z² = 3.841459), L(x of n) = (p + z²/2n − z·√(p(1−p)/n + z²/4n²)) / (1 + z²/n):
L(1 of 1) = 1 / (1 + z²) = 0.206549; L(2 of 3) = (0.666667 + 0.640243 − 1.959964 ·
√(0.074074 + 0.106707)) / 2.280486 = 0.207660; L(60 of 100) = 0.502003.
"""

from __future__ import annotations

from typing import Any

import pytest

from service.coverage import document_counts, top_document, under_covered
from service.events import QueryLogEvent
from service.harvest import HarvestStage
from service.harvest.config import HarvestConfig
from service.harvest.signals import (
    DOCUMENT,
    DOCUMENT_RULE,
    MAX_DOCUMENT_CHARS,
    CoverageTracker,
    passage_documents,
    production_documents,
)
from service.html.extras import candidates_section, document_gap_table
from service.jobs.replay import document_gap_lines
from service.shadow.runner import production_ranking
from tests.service.harvest.helpers import batch, event

CONFIG = HarvestConfig(flush_interval_s=0.0, min_live_events=1)
L_1_OF_1, L_2_OF_3, L_60_OF_100 = 0.206549, 0.207660, 0.502003
#: p-1 and p-2 in a.html (the gold set's document), p-9 in b.html (none of its rows')
DOCS = {"p-1": "a.html", "p-2": "a.html", "p-9": "b.html"}
#: language and topic all covered: only the document can be a gap
NOTES = {"language": "en", "topic": "fees"}
GOLD = {"language": {"en": 4}, "topic": {"fees": 4}, DOCUMENT: {"a.html": 2}}


def _stage(**kwargs: Any) -> HarvestStage:
    return HarvestStage(kwargs.pop("config", CONFIG), gold_counts=kwargs.pop("gold", GOLD),
                        documents=kwargs.pop("documents", DOCS), **kwargs)  # fmt: skip


# -- the maths (service.coverage) -------------------------------------------------------


def test_a_gold_row_counts_each_of_its_documents_once() -> None:
    """Two passages of one document count it once; a row over two documents counts both;
    an unanswerable row and a passage outside the corpus count nothing."""
    qrels = [["p-1", "p-2"], ["p-1", "p-9"], [], ["p-404"]]
    assert document_counts(qrels, DOCS) == {"a.html": 2, "b.html": 1}


def test_the_first_passage_names_the_document() -> None:
    assert top_document(["p-9", "p-1", "p-2"], DOCS) == "b.html"  # not the plurality a.html
    assert top_document([], DOCS) is None
    assert top_document(["p-404", "p-1"], DOCS) is None  # not a corpus passage: no document


def test_under_covered_uses_the_ratio_and_the_floor() -> None:
    """60 of 100 live, gold 0 of 10: L(60 of 100) = 0.502003; 30 of 100 against 5 of 10:
    0.30 < 2 × 0.5, none; 10 of 100 against 0: L(10 of 100) = 0.055229 ≥ 0.02 but
    below a floor of 0.1."""
    live, gold = {"x": 60, "y": 30, "z": 10}, {"y": 5, "w": 5}
    rows = under_covered(live, gold, min_gap=0.1)
    assert [(r.label, r.live, r.live_total, r.gold, r.gold_total) for r in rows] == [
        ("x", 60, 100, 0, 10)
    ]
    assert rows[0].gap == pytest.approx(L_60_OF_100, abs=1e-6)
    assert [r.label for r in under_covered(live, gold)] == ["x", "z"]


# -- the labels -------------------------------------------------------------------------


def test_document_labels_are_scrubbed_and_bounded() -> None:
    """A URL label may carry personal data and any length: scrubbed, then cut with "…" and a
    hash of the whole, so two long URLs alike up to the cut stay two documents."""
    long_url = "https://intranet.example.org/" + "a" * 300
    labels = passage_documents([("p-1", "https://x.example.org/faq?user=ravi@example.com"),
                                ("p-2", long_url), ("p-3", None), ("p-4", long_url + "b"),
                                ("p-5", long_url)])  # fmt: skip
    assert "ravi@example.com" not in labels["p-1"] and "<EMAIL>" in labels["p-1"]
    assert len(labels["p-2"]) == MAX_DOCUMENT_CHARS
    assert labels["p-2"][: MAX_DOCUMENT_CHARS - 9] == long_url[: MAX_DOCUMENT_CHARS - 9]
    assert labels["p-2"][-9] == "…" and labels["p-2"] != labels["p-4"]
    assert labels["p-5"] == labels["p-2"]  # the same document, the same label
    assert "p-3" not in labels


def test_documents_a_scrub_makes_alike_stay_apart() -> None:
    """Every URL holding a token scrubs to ``<URL>``: a corpus of signed URLs would be one
    document. The second and later raw documents behind one scrubbed label get " #2", " #3"
    (corpus order, nothing of the raw text), the same raw document always the same label."""
    signed = [f"https://files.example.org/doc{i}.pdf?sig={i:02d}f3a9b2c7d1e4f5a6b7c8d9e0f1a2b3"
              for i in range(3)]  # fmt: skip
    labels = passage_documents([("p-1", signed[0]), ("p-2", signed[1]), ("p-3", signed[0]),
                                ("p-4", signed[2])])  # fmt: skip
    assert labels == {"p-1": "<URL>", "p-2": "<URL> #2", "p-3": "<URL>", "p-4": "<URL> #3"}
    assert not any("sig=" in label for label in labels.values())


def test_production_documents_reads_the_first_result_of_the_corpus() -> None:
    events = [event("e1", "q", results=[("p-9", 3.0), ("p-1", 2.0)]),
              event("e2", "q", retrieval=False), event("e3", "q", results=()),
              event("e4", "q", results=[("p-404", 1.0)])]  # fmt: skip
    assert production_documents(events, DOCS) == ["b.html", None, None, None]


def test_the_document_is_that_of_production_s_best_result_not_the_first_logged() -> None:
    """A log need not list results best first: the document is that of the passage the
    harvest pool ranks 1 (:func:`production_ranking`: by rank, else by score), so an event's
    document and its suggestion's agree."""
    logs = [
        [{"id": "p-9", "rank": 2}, {"id": "p-1", "rank": 1}],  # by rank
        [{"id": "p-9", "score": 1.0}, {"id": "p-1", "score": 7.0}],  # no ranks: by score
        [{"id": "p-9", "rank": 1, "score": 1.0}, {"id": "p-1", "score": 7.0}],  # not all ranked
        [{"id": "p-9", "rank": 2}, {"id": "p-1"}],  # neither complete: as logged
        [{"id": "p-1", "rank": 1}, {"id": "p-9", "rank": 1}],  # a tie: the first logged
    ]
    events = [QueryLogEvent.model_validate({"event_id": f"e{i}", "question": "q",
                                            "timestamp": "2026-12-01T00:00:00Z",
                                            "retrieval": {"results": results}})
              for i, results in enumerate(logs)]  # fmt: skip
    expected = [DOCS[production_ranking(e)[0]] for e in events]
    assert expected == ["a.html", "a.html", "a.html", "b.html", "a.html"]
    assert production_documents(events, DOCS) == expected


# -- the tracker ------------------------------------------------------------------------


def test_an_event_without_a_document_joins_no_document_window() -> None:
    """b.html 1 of 1 (gold 0): L(1 of 1); a.html 1 of 2 against 2 of 2: none; then an
    event with no document (gap 0, the window unmoved); then b.html 2 of 3: L(2 of 3)."""
    tracker = CoverageTracker({DOCUMENT: {"a.html": 2}}, min_live_events=1)
    gaps = tracker.update_each([{}] * 4, ["b.html", "a.html", None, "b.html"])[DOCUMENT]
    assert gaps == pytest.approx([L_1_OF_1, 0.0, 0.0, L_2_OF_3], abs=1e-6)
    assert tracker.events == 4 and sum(tracker.live[DOCUMENT].values()) == 3
    assert tracker.document_totals == {"b.html": 2, "a.html": 1}
    assert tracker.update_each([{}])[DOCUMENT] == [0.0]  # no documents given: no gap
    with pytest.raises(ValueError, match="2 documents for 1 events"):
        tracker.update_each([{}], ["a.html", "b.html"])


def test_a_gold_refresh_covers_the_document() -> None:
    """An accepted row on b.html (gold 1 of 3 against 2 of 3 live: 0.667 ≥ 2 × 0.333) is
    still a gap, 0.207660 − 0.333333 < 0: none; the all-time list forgets it too."""
    tracker = CoverageTracker({DOCUMENT: {"a.html": 2}}, min_live_events=1)
    tracker.update_each([{}] * 3, ["b.html", "a.html", "b.html"])
    assert tracker.gap(DOCUMENT, "b.html") == pytest.approx(L_2_OF_3, abs=1e-6)
    assert [g.label for g in tracker.document_gaps()] == ["b.html"]
    tracker.set_gold({DOCUMENT: {"a.html": 2, "b.html": 1}})
    assert tracker.gap(DOCUMENT, "b.html") == 0.0 and tracker.document_gaps() == []


def test_the_document_list_is_remembered_until_the_counts_change() -> None:
    """A poll of an unchanged state reuses the list (a copy: a caller may change its own);
    an event counted, a gold refresh or a loaded state judges the documents again."""
    tracker = CoverageTracker({DOCUMENT: {"a.html": 2}}, min_live_events=1)
    tracker.update_each([{}] * 3, ["b.html", "a.html", "b.html"])
    first = tracker.document_gaps()
    first.clear()
    assert [g.live for g in tracker.document_gaps()] == [2]
    tracker.update_each([{}], ["b.html"])
    assert [(g.live, g.live_total) for g in tracker.document_gaps()] == [(3, 4)]
    # the same total, other counts
    tracker.load({"documents": {"b.html": 1, "a.html": 3}, "document_rule": DOCUMENT_RULE})
    assert [(g.live, g.live_total) for g in tracker.document_gaps()] == [(1, 4)]


def test_the_document_counts_survive_a_snapshot() -> None:
    tracker = CoverageTracker({DOCUMENT: {"a.html": 2}}, min_live_events=1)
    tracker.update_each([{}] * 3, ["b.html", None, "b.html"])
    again = CoverageTracker({DOCUMENT: {"a.html": 2}}, min_live_events=1)
    again.load(tracker.state())
    assert again.document_totals == {"b.html": 2}
    assert again.gap(DOCUMENT, "b.html") == tracker.gap(DOCUMENT, "b.html") > 0
    before = {"events": 3, "live": {"language": {"en": 3}}}  # a snapshot from before them
    old = CoverageTracker({DOCUMENT: {"a.html": 2}}, min_live_events=1)
    old.load(before)
    assert old.document_totals == {} and old.gap(DOCUMENT, "b.html") == 0.0


# -- the stage --------------------------------------------------------------------------


def _records(stage: HarvestStage, results: list[Any]) -> dict[str, dict[str, Any]]:
    questions = ["top up failed", "card arrival", "no retrieval here", "top up pending"]
    events = [event(f"e{i}", questions[i], retrieval=r is not None, results=r or ())
              for i, r in enumerate(results)]  # fmt: skip
    stage.process(batch(events, [dict(NOTES) for _ in events]))
    return {row["question"]: dict(row) for row in stage.records()}


def test_the_reason_names_the_document_dimension() -> None:
    rows = _records(_stage(), [[("p-9", 2.0)], [("p-1", 2.0)], None, [("p-9", 1.0)]])
    first, last = rows["top up failed"], rows["top up pending"]
    assert first["reasons"] == {"coverage_gap": 1} and first["gap_dimension"] == DOCUMENT
    assert first["gap"] == pytest.approx(L_1_OF_1, abs=1e-6)
    assert last["gap"] == pytest.approx(L_2_OF_3, abs=1e-6)
    assert "card arrival" not in rows and "no retrieval here" not in rows  # no reason


def test_weight_zero_and_the_floor_keep_the_reason_off() -> None:
    off = HarvestConfig(flush_interval_s=0.0, min_live_events=1, weights={"coverage_gap": 0})
    assert _records(_stage(config=off), [[("p-9", 2.0)]]) == {}
    high = HarvestConfig(flush_interval_s=0.0, min_live_events=1, min_gap=0.25)  # > L(1 of 1)
    assert _records(_stage(config=high), [[("p-9", 2.0)]]) == {}


def test_a_corpus_without_documents_has_no_document_dimension() -> None:
    stage = _stage(documents={}, gold={"language": {"en": 4}, "topic": {"fees": 4}})
    assert _records(stage, [[("p-9", 2.0)]]) == {}
    assert stage.document_gaps(10) is None


def test_the_reports_list_the_document_and_its_suggestions() -> None:
    stage = _stage()
    _records(stage, [[("p-9", 2.0)], [("p-1", 2.0)], None, [("p-9", 1.0)]])
    report = stage.document_gaps(10)
    assert report is not None
    gap = pytest.approx(L_2_OF_3, abs=1e-6)
    assert report["gaps"] == [{"document": "b.html", "live": 2, "live_total": 3, "gold": 0,
                               "gold_total": 2, "gap": gap}]  # fmt: skip
    assert (report["n_gaps"], report["gold_documents"], report["documents"]) == (1, 1, 2)
    assert stage.document_gaps(0) == {**report, "gaps": []}  # bounded, the count kept
    groups, n = stage.best_records_in_gaps(3, 10)
    [group] = [g for g in groups if g["dimension"] == DOCUMENT]
    assert (group["value"], group["n"], n) == ("b.html", 2, 1)
    assert {r["question"] for r in group["top"]} == {"top up failed", "top up pending"}
    line, share = document_gap_lines(report)
    assert "b.html 66.7% live (2 of 3 questions) / 0.0% gold (0 of 2)" in line
    assert "asks about 1 of 2 documents" in line
    # the share of questions on documents without a gold row (test_uncovered_share.py):
    # all three in the window, none before it yet
    assert share.startswith("  documents the gold set does not cover (questions judged out of "
                            "scope left out): 66.7% of the recent questions (2 of 3)")  # fmt: skip
    assert share.endswith("not tested yet (too few questions before the recent ones)")
    html = "".join(document_gap_table(report))
    assert "b.html" in html and "2 of 3" in html
    page = str(candidates_section({"n_suggestions": 0, "by_reason": {}, "documents": report}))
    assert "Documents the gold set under-covers" in page and "b.html" in page


def test_a_restored_state_forgets_documents_the_corpus_no_longer_has() -> None:
    """b.html left the corpus between two runs: no gold row can cover it, so its all-time
    count (2 of 3, a gap) is dropped on restore, and a.html's kept."""
    stage = _stage()
    _records(stage, [[("p-9", 2.0)], [("p-1", 2.0)], None, [("p-9", 1.0)]])
    assert stage.coverage.document_totals == {"b.html": 2, "a.html": 1}
    again = _stage(documents={"p-1": "a.html", "p-2": "a.html"})
    again.restore(stage.state_snapshot())
    assert again.coverage.document_totals == {"a.html": 1}
    report = again.document_gaps(10)
    assert report is not None and report["gaps"] == [] and report["n_gaps"] == 0
    same = _stage()
    same.restore(stage.state_snapshot())
    assert same.coverage.document_totals == {"b.html": 2, "a.html": 1}


def test_a_label_is_escaped_in_the_html() -> None:
    report = {"gaps": [{"document": "<script>x</script>", "live": 5, "live_total": 9,
                        "gold": 0, "gold_total": 4, "gap": 0.2}], "n_gaps": 1}  # fmt: skip
    html = "".join(document_gap_table(report))
    assert "<script>" not in html and "&lt;script&gt;" in html
    assert "No document is under-covered" in "".join(document_gap_table({"gaps": []}))


def test_the_gold_refresh_of_the_service_recounts_documents() -> None:
    """What ``Runtime._refresh_gold`` gives the stage: the new gold set's document counts."""
    stage = _stage()
    _records(stage, [[("p-9", 2.0)], [("p-9", 1.0)]])
    assert stage.document_gaps(10)["gaps"]  # type: ignore[index]
    qrels = [["p-1"], ["p-2"], ["p-9"], ["p-9"]]  # two accepted rows on b.html
    stage.coverage.set_gold({DOCUMENT: document_counts(qrels, stage.documents)})
    assert stage.document_gaps(10)["gaps"] == []  # type: ignore[index]


def _unranked(event_id: str, results: list[tuple[str, float]]) -> QueryLogEvent:
    """An event whose results carry scores but no rank."""
    rows = [{"id": pid, "score": score} for pid, score in results]
    return QueryLogEvent.model_validate({
        "event_id": event_id, "timestamp": "2026-01-01T00:00:00Z", "question": "q",
        "retrieval": {"retriever": "prod", "results": rows}})  # fmt: skip


def test_a_retrieval_that_ranked_nothing_names_no_document() -> None:
    """Trial 49, L2: a TF-IDF retriever answered questions with no word in the corpus by the
    corpus's first passages, all at score 0 (ranked 1…10); the first of them became an
    under-covered document with 160 ``coverage_gap`` suggestions. Review: a log of
    Elasticsearch ``constant_score`` results (one score, distinct ranks) is ranked and keeps
    its documents. The rule: two or more scored results at one score name no document when
    they carry no two distinct ranks, or when the score is 0."""
    events = [event("e1", "q", results=[("p-9", 0.0), ("p-1", 0.0), ("p-2", 0.0)]),  # ranked 1-3
              event("e2", "q", results=[("p-9", 1.0), ("p-1", 1.0)]),  # constant score, ranked
              event("e3", "q", results=[("p-9", 0.0)]),  # one result: ranked
              event("e4", "q", results=[("p-9", 0.1), ("p-1", 0.0), ("p-2", 0.0)]),
              _unranked("e5", [("p-9", 0.4), ("p-1", 0.4)]),  # a tie, no rank: tie order
              _unranked("e6", [("p-9", 0.4), ("p-1", 0.3)])]  # fmt: skip
    expected = [None, "b.html", "b.html", "b.html", None, "b.html"]
    assert production_documents(events, DOCS) == expected
    assert production_documents(events, DOCS, [{}] * 6) == expected
    tied = [("p-9", 0.0), ("p-1", 0.0)]
    # the tied questions give no gap; b.html is not asked once it is ranked nowhere
    assert _records(_stage(), [tied, tied, [("p-1", 2.0)], tied]) == {}


def test_the_retrievals_that_ranked_nothing_are_counted_in_the_report() -> None:
    """The document line says how many retrievals were left out as ranking nothing: here
    e1 (zeros), e5 (an unranked tie) and e7 (zeros again) of the 8 events; e2's constant
    score is ranked, e8 has no retrieval. The count survives a snapshot and load."""
    events = [event("e1", "q", results=[("p-9", 0.0), ("p-1", 0.0)]),
              event("e2", "q", results=[("p-9", 1.0), ("p-1", 1.0)]),
              event("e3", "q", results=[("p-1", 2.0), ("p-9", 1.0)]),
              event("e4", "q", results=[("p-9", 0.0)]),
              _unranked("e5", [("p-9", 0.4), ("p-1", 0.4)]),
              _unranked("e6", [("p-9", 0.4), ("p-1", 0.3)]),
              event("e7", "q", results=[("p-2", 0.0), ("p-1", 0.0), ("p-9", 0.0)]),
              event("e8", "q", retrieval=False)]  # fmt: skip
    stage = _stage()
    stage.process(batch(events, [dict(NOTES) for _ in events]))
    documents = stage.document_gaps(10)
    assert documents is not None and documents["all_tied"] == 3
    # a.html: e3 only; b.html: e2, e4, e6 (live_total 4)
    assert sum(stage.coverage.document_totals.values()) == 4
    line = document_gap_lines(documents)[0]
    assert line.endswith("; 3 retrievals ranked nothing (two or more results, all at one "
                         "score and none ranked, or all at 0) and name no document")  # fmt: skip
    restored = CoverageTracker(GOLD)
    restored.load(stage.coverage.state())
    assert restored.documents_all_tied == 3
    assert "all_tied" not in (_stage().document_gaps(10) or {})  # none seen: no mention
