"""Merging the replicas' records of a question (``service.harvest.merge``): trial 46 F1's
question, asked 11 times — 10 on replica A's partitions (refused), 1 on B's (a coverage
gap) — merges to count 11 with both reasons, where the topic keyed by the question alone
kept B's last record (count 1, coverage_gap). Expected values worked out by hand below."""

from __future__ import annotations

from typing import Any

import pytest

from service.harvest.merge import merge_question, merge_records

Q = "who was count ludwig von nassau saarbucken s father"


def rec(writer: str | None, **fields: Any) -> dict[str, Any]:
    base: dict[str, Any] = {
        "id": "c-61642cdd9ab85266", "question": "Who was Count Ludwig's father?",
        "normalised": Q, "language": "en", "topic": None, "role": "reader", "source": "real",
        "trace_id": None, "gap": 0.0, "gap_dimension": None, "pool": {}, "variants": [],
        "events": [], "reasons": {},
    }  # fmt: skip
    if writer is not None:
        base["writer"] = writer
    return {**base, **fields}


A_OLD = rec("a", count=9, first_seen="2026-11-20T03:00:00Z", last_seen="2026-11-26T01:00:00Z",
            events=["e-1", "e-2"], reasons={"refused": 9},
            variants=["Who was Count Ludwig's father?"],
            pool={"p-1": {"production": 3}})  # fmt: skip
A = rec("a", count=10, first_seen="2026-11-20T03:00:00Z", last_seen="2026-11-27T09:00:00Z",
        events=["e-1", "e-2", "e-3"], reasons={"refused": 10},
        variants=["Who was Count Ludwig's father?"], pool={"p-1": {"production": 3}},
        gap=0.2, gap_dimension="topic")  # fmt: skip
B = rec("b", count=1, first_seen="2026-11-24T05:00:00Z", last_seen="2026-11-24T05:00:00Z",
        question="who was count ludwig's father", events=["e-3484"],
        reasons={"coverage_gap": 1, "refused": 1}, variants=["who was count ludwig's father"],
        pool={"p-1": {"production": 1, "candidate": 2}, "p-9": {"candidate": 1}},
        gap=0.1, gap_dimension="language")  # fmt: skip


def test_two_replicas_records_merge_to_the_single_process_record() -> None:
    # topic order: A's older record, B's, A's latest (compaction keeps A's latest and B's)
    [merged] = merge_records([A_OLD, B, A])
    assert merged["count"] == 10 + 1  # the user's grep: 11 asks
    assert merged["reasons"] == {"refused": 10 + 1, "coverage_gap": 1}
    assert (merged["first_seen"], merged["last_seen"]) == ("2026-11-20T03:00:00Z",
                                                           "2026-11-27T09:00:00Z")  # fmt: skip
    # the first asker's (A's, first seen 11-20) wording and id; B's wording a variant
    assert merged["question"] == "Who was Count Ludwig's father?"
    assert merged["variants"] == ["Who was Count Ludwig's father?", "who was count ludwig's father"]
    assert merged["pool"] == {"p-1": {"production": 1, "candidate": 2}, "p-9": {"candidate": 1}}
    assert (merged["gap"], merged["gap_dimension"]) == (0.2, "topic")
    assert sorted(merged["events"]) == ["e-1", "e-2", "e-3", "e-3484"]
    assert merged["writers"] == ["a", "b"] and "writer" not in merged


def test_the_merge_does_not_depend_on_the_topics_order_of_writers() -> None:
    assert merge_records([B, A]) == merge_records([A, B])


def test_an_older_versions_record_counts_only_when_no_writer_keyed_one_has_the_question() -> None:
    legacy = rec(None, count=1, first_seen="2026-11-24T05:00:00Z", last_seen="2026-11-24T05:00:00Z")
    [with_new] = merge_records([legacy, A, B])
    assert with_new["count"] == 11  # the legacy record (B's old last write) is not added again
    [alone] = merge_records([legacy])
    assert (alone["count"], alone["writers"]) == (1, [""])


def test_distinct_questions_stay_apart_and_come_out_sorted() -> None:
    other = rec("b", normalised="what animal sometimes swims in the rhine", count=4)
    rows = merge_records([other, A])
    assert [r["normalised"] for r in rows] == ["what animal sometimes swims in the rhine", Q]
    assert [r["count"] for r in rows] == [4, 10]


def test_nothing_to_merge_is_an_error() -> None:
    with pytest.raises(ValueError):
        merge_question([])


def test_merged_variants_are_capped_at_max_variants() -> None:
    """Two writers with three wordings each: six distinct, the first asker's first; capped at
    harvest.max_variants 3 the first three of that order are kept."""
    x = {"normalised": "q", "writer": "x", "count": 1, "first_seen": "2026-01-01T00:00:00Z",
         "last_seen": "2026-01-01T00:00:00Z", "variants": ["a", "b", "c"]}  # fmt: skip
    y = dict(x, writer="y", first_seen="2026-01-02T00:00:00Z", variants=["d", "e", "f"])
    assert merge_records([y, x], max_variants=3)[0]["variants"] == ["a", "b", "c"]
    assert merge_records([y, x])[0]["variants"] == ["a", "b", "c", "d", "e", "f"]
