"""Per-topic held-out agreement (trial 19: a topic read at half its share while the overall
agreement, 81 %, said nothing of it): each topic's rows kept, where the others went, and the
rows read as it — the confusion matrix's row and column sums, worked out by hand here."""

from __future__ import annotations

import pytest

from service.html.replay_page import topic_note
from service.topics.quality import by_topic_text, topic_agreement

# 10 labelled rows: 4 tech (all kept), 4 business (1 kept, 2 read tech, 1 read sport),
# 2 sport (1 kept, 1 read business)
LABELS = ["tech"] * 4 + ["business"] * 4 + ["sport"] * 2
PREDICTED = ["tech"] * 4 + ["business", "tech", "sport", "tech"] + ["sport", "business"]


def test_by_topic_counts_are_the_confusion_matrix_row_and_column_sums() -> None:
    q = topic_agreement(LABELS, PREDICTED, ["en"] * 10)
    by_topic = q["by_topic"]
    # labels most rows first, ties by name: business (4) before tech (4), then sport (2)
    assert list(by_topic) == ["business", "tech", "sport"]
    # rows: business kept 1 of 4; tech 4 of 4; sport 1 of 2
    assert [(v["n"], v["agree"]) for v in by_topic.values()] == [(4, 1), (4, 4), (2, 1)]
    # columns: read as business = 1 (own) + 1 (sport) = 2; tech = 4 + 2 = 6; sport = 1 + 1 = 2
    assert [v["read_as_it"] for v in by_topic.values()] == [2, 6, 2]
    assert by_topic["business"]["read_as"] == {"tech": 2, "sport": 1}  # most first
    assert by_topic["tech"]["read_as"] == {} and by_topic["sport"]["read_as"] == {"business": 1}
    # the Wilson 95 % interval of 1 of 4 (z = 1.96): centre (1 + 1.9208) / 7.8416 = 0.37248,
    # half-width 1.96 * sqrt(1 * 3 / 4 + 0.9604) / 7.8416 = 0.32685 -> [0.0456, 0.6993]
    assert by_topic["business"]["share"] == 0.25
    assert by_topic["business"]["low"] == pytest.approx(0.0456, abs=1e-4)
    assert by_topic["business"]["high"] == pytest.approx(0.6993, abs=1e-4)
    assert sum(v["read_as_it"] for v in by_topic.values()) == q["n"] == 10


def test_the_line_names_each_topic_s_misses_and_what_is_read_as_it() -> None:
    q = topic_agreement(LABELS, PREDICTED, ["en"] * 10)
    assert by_topic_text(q) == (
        "by topic, held out: business 1 of 4 kept (2 read tech, 1 read sport), 2 read as "
        "business; tech 4 of 4 kept, 6 read as tech; sport 1 of 2 kept (1 read business), "
        "2 read as sport"
    )


def test_a_model_fitted_before_the_figure_has_no_line() -> None:
    old = {k: v for k, v in topic_agreement(LABELS, PREDICTED, ["en"] * 10).items()
           if k != "by_topic"}  # fmt: skip
    assert by_topic_text(old) == "" and by_topic_text(None) == ""
    note = topic_note({"supervised": True, "agreement": old})
    assert note is not None and "by topic" not in note


def test_the_html_note_carries_the_line() -> None:
    note = topic_note({"supervised": True,
                       "agreement": topic_agreement(LABELS, PREDICTED, ["en"] * 10)})  # fmt: skip
    assert note is not None
    assert "By topic, held out: business 1 of 4 kept (2 read tech, 1 read sport)" in note
