"""A suggestion's coverage ``gap`` says which dimension produced it (``gap_dimension``:
``language`` or ``topic``), in its record, its labelling item and the HTML list.

Expected gaps are 95 % Wilson lower bounds worked out by hand (z = 1.959964, z² = 3.841459),
the gold shares being 0 for every live label below: L(x of n) = (p + z²/2n − z·√(p(1−p)/n +
z²/4n²)) / (1 + z²/n); L(1 of 1) = 1 / (1 + z²) = 0.206549, L(2 of 2) = 2 / (2 + z²) =
0.342380, L(1 of 2) = (0.5 + 0.960365 − 1.959964 · √0.365091) / 2.920730 = 0.094531.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from service.harvest import HarvestStage
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling
from service.harvest.store import MemoryCandidates
from service.harvest.suggestion import Occurrence, Suggestion
from service.html.extras import candidates_section
from tests.service.harvest.helpers import batch, event

CONFIG = HarvestConfig(flush_interval_s=0.0, min_live_events=1)
GOLD = {"language": {"en": 4}, "topic": {"fees": 4}}
L_1_OF_1, L_2_OF_2, L_1_OF_2 = 0.206549, 0.342380, 0.094531


def _records(notes: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """One batch of distinct questions with ``notes``: their records by question."""
    stage = HarvestStage(CONFIG, gold_counts=GOLD)
    questions = ["hostel ka kiraya", "mess timings sunday", "library card lost"]
    stage.process(batch([event(f"e{i}", questions[i]) for i in range(len(notes))], notes))
    return {row["question"]: dict(row) for row in stage.records()}


@pytest.mark.parametrize(
    ("notes", "gap", "dimension"),
    [
        # hi-Latn 1 of 1 (gold 0): a language gap; fees 1 of 1 against gold 1.0: none
        ({"language": "hi-Latn", "topic": "fees"}, L_1_OF_1, "language"),
        # en is the gold set's only language: none; hostel 1 of 1 (gold 0): a topic gap
        ({"language": "en", "topic": "hostel"}, L_1_OF_1, "topic"),
        # both 1 of 1 against gold 0: equal gaps, the language is named
        ({"language": "hi-Latn", "topic": "hostel"}, L_1_OF_1, "language"),
    ],
)
def test_the_gap_names_its_dimension(notes: dict[str, str], gap: float, dimension: str) -> None:
    [row] = _records([notes]).values()
    assert row["reasons"] == {"coverage_gap": 1}
    assert row["gap"] == pytest.approx(gap, abs=1e-6)
    assert row["gap_dimension"] == dimension
    keys = list(row)
    assert keys[keys.index("gap") + 1] == "gap_dimension"  # added next to the gap


def test_the_larger_gap_wins() -> None:
    """Two events in one batch, each judged over the window right after it: en + hostel
    (en: none, hostel 1 of 1, 0.2065), then hi-Latn + hostel (language hi-Latn 1 of 2,
    0.0945; topic hostel 2 of 2, 0.3424): both carry the topic's gap, the second the
    larger one."""
    rows = _records([{"language": "en", "topic": "hostel"},
                     {"language": "hi-Latn", "topic": "hostel"}])  # fmt: skip
    assert L_1_OF_2 < L_2_OF_2  # hi-Latn's gap, 1 of 2, is the smaller
    gaps = {question: (row["gap"], row["gap_dimension"]) for question, row in rows.items()}
    first, second = L_1_OF_1, L_2_OF_2
    assert gaps == {"hostel ka kiraya": (pytest.approx(first, abs=1e-6), "topic"),
                    "mess timings sunday": (pytest.approx(second, abs=1e-6), "topic")}  # fmt: skip


def test_no_gap_no_dimension() -> None:
    """en and fees are all the gold set has: no gap, and so no dimension (refused only)."""
    [row] = _records([{"language": "en", "topic": "fees", "refused": True}]).values()
    assert row["reasons"] == {"refused": 1}
    assert (row["gap"], row["gap_dimension"]) == (0.0, None)


def _occurrence(event_id: str, gap: float, dimension: str | None) -> Occurrence:
    stamp = datetime(2026, 12, 3, tzinfo=UTC)
    return Occurrence(event_id, stamp, "hostel ka kiraya", "hostel ka kiraya", ("coverage_gap",),
                      gap=gap, gap_dimension=dimension)  # fmt: skip


def test_a_merged_suggestion_keeps_the_dimension_of_its_largest_gap() -> None:
    suggestion = Suggestion.start("c-1", _occurrence("e1", 0.1, "language"))
    suggestion.add(_occurrence("e1", 0.1, "language"))
    suggestion.add(_occurrence("e2", 0.3, "topic"))  # larger: the topic's
    assert (suggestion.gap, suggestion.gap_dimension) == (0.3, "topic")
    suggestion.add(_occurrence("e3", 0.3, "language"))  # as large: the first one stays
    suggestion.add(_occurrence("e4", 0.2, "language"))  # smaller: nothing moves
    assert (suggestion.gap, suggestion.gap_dimension) == (0.3, "topic")
    assert suggestion.to_json()["gap_dimension"] == "topic"


def test_a_record_from_before_the_field_reads_and_learns_it() -> None:
    """A stored record without ``gap_dimension`` loads as ``None``; an occurrence with as
    large a gap names it, a smaller one does not make one up."""
    old = Suggestion.start("c-1", _occurrence("e1", 0.25, "language")).to_json()
    old["gap"] = 0.25
    del old["gap_dimension"]  # type: ignore[misc]
    suggestion = Suggestion.from_record(old)
    assert suggestion.gap_dimension is None
    suggestion.add(_occurrence("e2", 0.1, "topic"))
    assert (suggestion.gap, suggestion.gap_dimension) == (0.25, None)
    suggestion.add(_occurrence("e3", 0.25, "language"))
    assert (suggestion.gap, suggestion.gap_dimension) == (0.25, "language")


def test_the_labelling_item_and_the_html_list_show_it(tmp_path: Path) -> None:
    repo = MemoryCandidates()
    stage = HarvestStage(CONFIG, gold_counts=GOLD, sinks=[repo])
    stage.process(batch([event("e1", "hostel ka kiraya")],
                        [{"language": "en", "topic": "hostel"}]))  # fmt: skip
    [item] = Labelling(repo, tmp_path / "gold.jsonl", CONFIG).list().items
    assert item["gap_dimension"] == "topic"
    html = str(candidates_section([item]))
    assert "0.207 (topic)" in html  # L(1 of 1) = 0.206549, 3 decimals
    # a record from before the field: the gap alone, no dimension made up
    old = {k: v for k, v in item.items() if k != "gap_dimension"}
    assert "0.207 (" not in str(candidates_section([old]))
