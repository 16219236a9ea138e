"""Trial 51, M3: the ``known_miss`` alarm fired but nothing said which gold rows started
missing; the tester summed the JSON report's per-hour series to find them. The live-quality
report now has ``known_miss_rows`` (:func:`service.quality.where.missing_rows`: per gold row,
misses / scored asks over the alarm's window against before it, with its gold documents), and
the text report, the HTML report's and status page's quality section and the status page's
"What moved" name them while ``known_miss`` is in drift. Values worked out by hand below.
"""

from __future__ import annotations

import copy
from typing import Any

from service.events import QueryLogEvent
from service.html import render_replay_html, render_status_page
from service.html.quality_section import quality_section
from service.jobs.replay import render_text
from service.quality.where import missing_rows, missing_rows_text, missing_window_text
from tests.service.html import samples
from tests.service.html.test_status_page import STATUS
from tests.service.test_quality import LIBRARY, MCA, build, run


def _event(n: int, at: str, question: str, results: list[str], role: str = "student") -> Any:
    return QueryLogEvent.model_validate(
        {"event_id": f"e-{n}", "timestamp": f"2026-11-29T{at}Z", "question": question,
         "user": {"role": role},
         "retrieval": {"results": [{"id": p, "rank": r} for r, p in enumerate(results, 1)]}}
    )  # fmt: skip


HIT_1, MISS = ["p-2"], ["p-7"]  # q-1's gold passage is p-2; p-7 is nobody's
HIT_2 = ["p-5"]  # one of q-2's two gold passages (p-5, p-6): a hit
#: Before the window (10:00): q-1 asked 3 times, hit 3; q-2 twice, missed once.
BEFORE = [
    _event(1, "10:00:01", MCA, HIT_1), _event(2, "10:00:02", MCA, HIT_1),
    _event(3, "10:00:03", MCA, HIT_1),
    _event(4, "10:00:04", LIBRARY, MISS), _event(5, "10:00:05", LIBRARY, HIT_2),
]  # fmt: skip
#: In the window (the 2 hours up to 14:30): q-1 3 asks, 2 misses; q-2 1 ask, 1 miss; the
#: staff row q-4 ("new DA rate", gold p-9) asked by staff once, hit.
WINDOW = [
    _event(6, "14:00:00", MCA, MISS), _event(7, "14:10:00", MCA, HIT_1),
    _event(8, "14:20:00", MCA, MISS), _event(9, "14:25:00", LIBRARY, MISS),
    _event(10, "14:30:00", "What is the new DA rate for staff?", ["p-9"], role="staff"),
]  # fmt: skip


def test_missing_rows_by_hand_ranked_with_and_k_more() -> None:
    # cells [n, n_scored, Σrecall, Σhit, Σrr]; a: 4 misses of 4 in the window, none before;
    # b: 2 of 2 (before 2 of 2: kept missing); c: 2 of 4 (before 0 of 6); d: no miss
    recent = {"a": [4, 4, 0, 0, 0], "b": [2, 2, 0, 0, 0], "c": [4, 4, 2, 2, 2],
              "d": [3, 3, 3, 3, 3]}  # fmt: skip
    total = {"a": [4, 4, 0, 0, 0], "b": [4, 4, 0, 0, 0], "c": [10, 10, 8, 8, 8],
             "d": [9, 9, 9, 9, 9]}  # fmt: skip
    out = missing_rows(recent, total, {"a": ["x#1"], "c": ["y#0", "y#1"]}, top=2)
    # a first (4 misses); c before b: both 2 misses, c's rate rose 0 -> 0.5, b's 1 -> 1
    assert [(r["gold_id"], r["window"], r["before"]) for r in out["rows"]] == [
        ("a", {"asks": 4, "misses": 4}, {"asks": 0, "misses": 0}),
        ("c", {"asks": 4, "misses": 2}, {"asks": 6, "misses": 0}),
    ]
    assert out["more"] == 1 and out["window_asks"] == 13 and out["window_misses"] == 8
    assert missing_rows_text(out) == (
        "a (doc x#1) 4/4 missed, before 0/0; c (doc y#0, y#1) 2/4 missed, before 0/6; and 1 more"
    )
    assert missing_rows_text(missing_rows({"d": [3, 3, 3, 3, 3]}, total, {})) is None


def test_the_stage_names_exactly_the_rows_that_missed_in_the_window() -> None:
    stage = build(recent_window_s=2 * 3600.0, min_n=1)  # 2-hour window: 5-minute buckets
    run(stage, BEFORE)
    run(stage, WINDOW)
    block = stage.report()["known_miss_rows"]
    assert block == {
        "rows": [
            {"gold_id": "q-1", "documents": ["p-2"], "window": {"asks": 3, "misses": 2},
             "before": {"asks": 3, "misses": 0}},
            {"gold_id": "q-2", "documents": ["p-5", "p-6"], "window": {"asks": 1, "misses": 1},
             "before": {"asks": 2, "misses": 1}},
        ],
        "more": 0, "window_asks": 5, "window_misses": 3,
        # the window in whole 5-minute buckets: from the first with a scored event (14:00) to
        # the end of the newest (14:30's: 14:35); before it, all earlier time
        "since": "2026-11-29T14:00:00+00:00", "until": "2026-11-29T14:35:00+00:00",
        "window_s": 7200.0,
    }  # fmt: skip
    assert missing_window_text(block) == (
        "window 2026-11-29 14:00 → 2026-11-29 14:35 UTC (35 min); before: all earlier time"
    )
    fresh = build(recent_window_s=2 * 3600.0, min_n=1)
    assert fresh.report()["known_miss_rows"] is None  # nothing scored yet


def _report(known_miss: str, extras: bool = True) -> dict[str, Any]:
    """The replay sample with a live-quality report holding the stage's block above and
    ``known_miss`` in state ``known_miss``."""
    stage = build(recent_window_s=2 * 3600.0, min_n=1)
    run(stage, BEFORE)
    run(stage, WINDOW)
    doc = copy.deepcopy(samples.replay_report(extras=extras))
    doc["quality"] = stage.report()
    drift = doc["analytics"]["drift"]
    drift["known_miss"] = {"state": known_miss, "comparisons": {}}
    return doc


LINE = "q-1 (doc p-2) 2/3 missed, before 0/3; q-2 (doc p-5, p-6) 1/1 missed, before 1/2"
WINDOW_TEXT = "window 2026-11-29 14:00 → 2026-11-29 14:35 UTC (35 min); before: all earlier time"


def test_the_text_report_names_the_rows_only_while_known_miss_drifts() -> None:
    assert (
        f"known_miss gold rows, misses/asks in its window vs before ({WINDOW_TEXT}): {LINE}"
    ) in render_text(
        _report("drift", extras=False)  # type: ignore[arg-type]
    )
    assert "known_miss gold rows" not in render_text(_report("ok", False))  # type: ignore[arg-type]


def test_the_html_report_and_status_page_name_the_rows_only_while_known_miss_drifts() -> None:
    doc = _report("drift")
    section = str(quality_section(doc["quality"], None, {"state": "drift"}))
    for cell in (
        "<td>q-1</td>",
        "<td>p-2</td>",
        "<td>2 / 3</td>",
        "<td>0 / 3</td>",
        "<td>q-2</td>",
        "<td>p-5, p-6</td>",
        "<td>1 / 1</td>",
        "<td>1 / 2</td>",
    ):
        assert cell in section.replace(' class="num"', "")
    assert "3 misses in 5 asks in the window" in section
    assert f"The {WINDOW_TEXT}." in section
    assert "known_miss is in drift" in str(render_replay_html(doc))  # type: ignore[arg-type]
    page = str(render_status_page(STATUS, doc["analytics"], extras={"quality": doc["quality"]}))
    moved = page[page.index('id="moved"') :]
    assert f"({WINDOW_TEXT}): {LINE}" in moved[: moved.index("</section>")]
    quiet = _report("ok")
    assert "known_miss is in drift" not in str(render_replay_html(quiet))  # type: ignore[arg-type]
    page = str(render_status_page(STATUS, quiet["analytics"], extras={"quality": quiet["quality"]}))
    assert "q-1 (doc p-2)" not in page
