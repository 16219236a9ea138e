"""``Labelling.counts()`` and the listing count different things, and say so (session 51 brief
N item 5: a run's status said 214 suggested where the listing held 213).

The case: two stored suggestions asking the same question (the harvest stage's LSH left the
pair unmerged; about 1 in 500 on the demo log). The listing
(:func:`~service.harvest.ranking.select`, ``distinct``) leaves the second out as a
near-duplicate of the first; ``counts()`` counts what is stored. The page now carries that
difference (``near_duplicates``) so ``total + near_duplicates`` is what ``counts()`` says.
"""

from __future__ import annotations

from pathlib import Path

from service.harvest import MemoryCandidates
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling
from service.harvest.suggestion import Suggestion
from service.html import render_status_page
from tests.service.html.test_status_page import STATUS


def _labelling(tmp_path: Path) -> Labelling:
    gold = tmp_path / "gold.jsonl"
    gold.write_text('{"id": "q-001", "question": "When are fees due?", "gold": ["p-1"]}\n',
                    encoding="utf-8")  # fmt: skip
    repo = MemoryCandidates()
    repo.publish([
        Suggestion("c-1", "hostel fee refund kab milega", "hostel fee refund kab milega",
                   reasons={"refused": 2}, count=2).to_json(),
        # the same question once more, stored apart: a near-duplicate of c-1
        Suggestion("c-2", "Hostel fee refund kab milega??", "hostel fee refund kab milega",
                   reasons={"refused": 1}).to_json(),
        Suggestion("c-3", "exam schedule for sem 3", "exam schedule for sem 3",
                   reasons={"low_confidence": 1}).to_json(),
    ])  # fmt: skip
    return Labelling(repo, gold, HarvestConfig())


def test_counts_are_the_stored_suggestions_the_listing_its_distinct_ones(tmp_path: Path) -> None:
    labelling = _labelling(tmp_path)
    assert labelling.counts() == {"suggested": 3, "accepted": 0, "rejected": 0}
    page = labelling.list()
    assert [item["id"] for item in page.items] == ["c-1", "c-3"]
    assert (page.total, page.near_duplicates) == (2, 1)
    assert page.total + page.near_duplicates == sum(labelling.counts().values())
    suggested = labelling.list(status="suggested")
    assert suggested.total + suggested.near_duplicates == labelling.counts()["suggested"]
    # a filter matching no pair: nothing left out
    exams = labelling.list(reason="low_confidence")
    assert (exams.total, exams.near_duplicates) == (1, 0)


def test_the_status_page_says_what_the_difference_is(tmp_path: Path) -> None:
    labelling = _labelling(tmp_path)
    page = labelling.list(status="suggested")
    extras = {"gold_candidates": {"suggestions": page.items, "n_suggestions": page.total,
                                  "near_duplicates": page.near_duplicates,
                                  "by_status": {**labelling.counts(), "rejected": 1}}}  # fmt: skip
    html = render_status_page(STATUS, None, extras=extras)
    # 2 listed + 1 near-duplicate + 1 rejected = 4 in all
    assert (
        "2 suggested, 1 more held as near-duplicate of those (4 in all: 0 accepted, "
        "1 rejected)" in html
    )
