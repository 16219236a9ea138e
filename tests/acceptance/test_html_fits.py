"""What a reader sees at 1,400 px in a real browser (headless Chromium): the eval report's
overall table (issue 18, item 5) and the status page's suggestions table, whole ids and
questions included (item 6), fit the page without a horizontal scroll bar; so do the shadow
section's tables, at 800 px too, and every table of the demo's own pages (session 40: trial 24
saw the live status page's suggestions table scroll sideways at 1,400 px), which are served
and written as ``goldwatch demo`` serves and ``goldwatch demo --fast --html`` writes them.
The charts keep their marks whole and uncovered: the drift alarms' triangles inside the plot
area, the shares-over-time legend off every line.

The pages run no script; the test loads a copy with one appended script that logs, per
table, its section and whether its scroll box overflows (or, per chart, the boxes of its
plot area, markers and legend), and reads Chromium's console.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.evaluation.evaluate import evaluate_run
from service.html import render_eval_html, render_replay_html, render_status_page
from service.html.extras import AGREEMENT
from service.jobs.demo import demo_settings, prepare_workdir
from service.records import ScoredDoc
from tests.acceptance.test_html_chromium import CONSOLE, STATUS, chromium  # noqa: F401
from tests.service.api.test_app import TOKEN, Server, _free_port
from tests.service.api.test_harvest_service import _consumed
from tests.service.html import samples

WIDTH = 1400
_MEASURE = """<script>
for (const box of document.querySelectorAll("section .scroll")) {
  const section = box.closest("section").id;
  console.log(JSON.stringify({section, scroll: box.scrollWidth, client: box.clientWidth}));
}
</script>"""

#: The page's own width against its window's (a horizontal scroll bar on the whole page), then
#: every table's scroll box as :data:`_MEASURE` logs it.
_PAGE_AND_TABLES = """<script>
const root = document.documentElement;
console.log(JSON.stringify({section: "(page)", scroll: root.scrollWidth,
                            client: root.clientWidth}));
</script>"""
_PAGE_AND_TABLES += _MEASURE


#: Per chart (an inline SVG of :mod:`service.html.plots`): its title, the client boxes of its
#: plot area (the axes' background patch), of its scatter markers and of its legend frame,
#: and how many points of its lines (sampled each px along each path) fall in the legend.
_CHARTS = """<script>
function box(el) {
  const r = el.getBoundingClientRect();
  return {left: r.left, top: r.top, right: r.right, bottom: r.bottom};
}
for (const svg of document.querySelectorAll("figure svg")) {
  const axes = svg.querySelector('g[id^="axes_"]');
  const title = axes.querySelector(':scope > g[id^="text_"] text');
  const frame = axes.querySelector('g[id^="legend_"] > g[id^="patch_"] path');
  const legend = frame ? box(frame) : null;
  let points = 0, covered = 0;
  for (const line of axes.querySelectorAll(':scope > g[id^="line2d_"] path')) {
    const ctm = line.getScreenCTM(), length = line.getTotalLength();
    for (let at = 0; at <= length; at += 1) {
      const p = line.getPointAtLength(at).matrixTransform(ctm);
      points += 1;
      if (legend && p.x > legend.left && p.x < legend.right && p.y > legend.top
          && p.y < legend.bottom) covered += 1;
    }
  }
  // filled markers: <use> of a path in <defs>; hollow ones: a path each
  const markers = axes.querySelectorAll(':scope > g[id^="PathCollection_"] use, '
                                        + ':scope > g[id^="PathCollection_"] > path');
  console.log(JSON.stringify({
    title: title ? title.textContent : "",
    area: box(axes.querySelector(':scope > g[id^="patch_"] path')),
    markers: Array.from(markers, box), legend, points, covered}));
}
</script>"""


def logged_rows(
    browser: str, page: str, script: str, tmp_path: Path, width: int = WIDTH
) -> list[dict[str, Any]]:
    """The JSON lines ``script``, appended to ``page``, logs in a ``width`` px wide window."""
    copy = tmp_path / "measured.html"
    copy.write_text(page.replace("</body>", script + "</body>"), encoding="utf-8")
    result = subprocess.run(
        [browser, "--headless", "--disable-gpu", "--no-sandbox", "--no-first-run",
         "--disable-dev-shm-usage", f"--user-data-dir={tmp_path / 'profile'}",
         "--enable-logging=stderr", "--v=0", f"--window-size={width},1000", "--dump-dom",
         copy.resolve().as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    logged = [m.group(1) for m in map(CONSOLE.search, result.stderr.splitlines()) if m]
    # Chromium quotes the message without escaping it: "{"section":...}", source: ...
    rows = [json.loads(line.split(", source:")[0].strip()[1:-1]) for line in logged]
    assert rows, result.stderr[-2000:]
    return rows


def table_widths(
    browser: str, page: str, tmp_path: Path, width: int = WIDTH
) -> list[dict[str, Any]]:
    """Each table's ``{section, scroll, client}`` widths (px) in a ``width`` px wide window."""
    return logged_rows(browser, page, _MEASURE, tmp_path, width)


def charts(browser: str, page: str, tmp_path: Path, width: int = WIDTH) -> dict[str, Any]:
    """Each chart's geometry (:data:`_CHARTS`) by its title."""
    return {row["title"]: row for row in logged_rows(browser, page, _CHARTS, tmp_path, width)}


def test_eval_overall_table_fits_at_1400_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    outcome = samples.eval_outcome()
    # the demo's shape: three retrievers, four cut-offs (the old table needed 1,650 px)
    questions = list(outcome.gold_set)
    run = {"q-1": [ScoredDoc("p-1", 1.0)], "q-2": [ScoredDoc("p-9", 1.0)]}
    ks = (1, 5, 10, 20)
    reports = tuple(evaluate_run(name, questions, run, ks) for name in ("bm25", "tfidf", "hybrid"))
    wide = dataclasses.replace(outcome, ks=ks, reports=reports, comparisons=())
    for case in (outcome, wide):
        rows = table_widths(chromium, render_eval_html(case), tmp_path)
        overall = [r for r in rows if r["section"] == "overall"]
        assert overall and all(r["scroll"] <= r["client"] for r in overall), overall


def test_status_suggestions_table_fits_at_1400_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    # the demo's suggestions as the replay summary carries them (ids of 18 characters,
    # five reasons with their counts, RFC 3339 times)
    reasons = {"answered_out_of_scope": 8, "low_confidence": 11, "negative_feedback": 1,
               "coverage_gap": 5, "shadow_disagreement": 3}  # fmt: skip
    rows = [
        {"id": f"c-424bdba397e1bf{i:02d}", "question": "beech mein hostel chhoda to paise "
         "wapas milenge kya is saal", "normalised": "beech mein hostel", "language": "hi-Latn",
         "topic": "exam-duty", "role": "student", "source": "real", "count": 12,
         "first_seen": "2026-11-16T04:51:31Z", "last_seen": "2026-11-18T17:03:22Z",
         "reasons": reasons, "priority": 32.536, "gap": 0.092}
        for i in range(20)
    ]  # fmt: skip
    extras = {"gold_candidates": {"n_suggestions": 504, "by_reason": {}, "top": rows}}
    page = render_status_page(STATUS, samples.replay_report()["analytics"], extras=extras)
    widths = table_widths(chromium, page, tmp_path)
    table = [r for r in widths if r["section"] == "gold-candidates"]
    assert table and all(r["scroll"] <= r["client"] for r in table), table


def _long_review() -> dict[str, Any]:
    """Live quality with 20 review rows of the demo's longest shapes (four passage ids, two
    leaked, a 60-character Hinglish question) and a table of gold-set changes."""
    from tests.service.html.test_quality_section import changed_quality, quality

    doc = {**quality(review=20), "coverage": changed_quality()["coverage"]}
    for row in doc["review"]:
        row["passage_ids"] = ["p-0055", "p-0054", "p-0057", "p-0053"]
        row["leaked"] = ["p-0054", "p-0052"]
        row["question"] = "assistant professor ki basic pay kitni hai 1st year ke liye"
    return doc


def test_live_quality_tables_fit_at_1400_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """The review table holds ids, times, passage lists and whole questions: the demo's
    longest shapes (four passage ids, a 60-character Hinglish question) fit without a
    horizontal scroll bar, as every other table of the page; so does the table of gold-set
    changes (nine columns)."""
    extras = {"quality": _long_review()}
    page = render_status_page(STATUS, samples.replay_report()["analytics"], extras=extras)
    widths = [r for r in table_widths(chromium, page, tmp_path) if r["section"] == "quality"]
    assert len(widths) == 5 and all(r["scroll"] <= r["client"] for r in widths), widths


def test_replay_suggestions_table_fits_at_1400_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """Trial user 4: the replay report's suggestions table ran past a 1,400 px window and cut
    its last column ("last seen"). Its shapes: 18-character ids, 242-character questions,
    three reasons with underscores (answered_out_of_scope=6, acl_violation=1,
    negative_feedback=1), topics such as comparison_query, a role, a gap."""
    reasons = {"answered_out_of_scope": 6, "acl_violation": 1, "negative_feedback": 1}
    question = ("Which company, known for its Kindle lineup that has led the e-reader market "
                "for years according to The Verge, also provides a platform described by "
                "sellers in a Cnbc | World Business News Leader report as offering a "
                "life-changing opportunity?")  # fmt: skip
    rows = [
        {"id": f"c-598a8d1301d315{i:02d}", "question": question, "language": "en",
         "topic": "comparison_query", "role": "student", "source": "real", "count": 6,
         "first_seen": "2026-11-28T15:02:25Z", "last_seen": "2026-11-30T23:28:55Z",
         "reasons": reasons, "gap": 0.025, "trace_id": None, "priority": 26.887219,
         "primary_reason": "acl_violation"}
        for i in range(20)
    ]  # fmt: skip
    doc = samples.replay_report()
    doc["gold_candidates"] = {"n_suggestions": 20, "by_reason": {}, "top": rows}
    widths = table_widths(chromium, render_replay_html(doc), tmp_path)
    table = [r for r in widths if r["section"] == "gold-candidates"]
    assert table and all(r["scroll"] <= r["client"] for r in table), table


def test_shadow_tables_fit_at_1400_and_800_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """A new user's trial: the shadow section's coverage table (13 columns, the skip reasons
    in 14em-wide text cells) was 1,536 px wide, and scrolled sideways in a 1,400 px window.
    Its shapes: a candidate skipped for two reasons, no errors, every mean over thousands of
    results (``0.608 (n 2922)``), and the status page's ``cpu_budget`` count."""
    report = samples.replay_report()
    report["shadow"]["candidates"] = {"hybrid": {
        "offered": 3003, "completed": 482, "skipped": {"no_production": 81, "cpu_budget": 2440},
        "errors": {}, "in_flight": 0, "latency_seconds": {"count": 482, "mean": 0.001702},
        "agreement": dict(zip(AGREEMENT, (0.618, 0.491, 0.639, 0.605, 0.768, 0.926),
                              strict=True)),
        "counts": dict(zip(AGREEMENT, (2922, 2922, 2922, 2637, 2922, 2095), strict=True)),
        "by_language": {"de": {"n": 254, "rbo": 0.538}, "en": {"n": 2626, "rbo": 0.636}},
        "by_topic": {}, "disagreements": [],
    }}  # fmt: skip
    for page in (render_replay_html(report),
                 render_status_page(STATUS, report["analytics"], extras=report)):  # fmt: skip
        for width in (WIDTH, 800):
            rows = [r for r in table_widths(chromium, page, tmp_path, width)
                    if r["section"] == "shadow"]  # fmt: skip
            assert len(rows) >= 3, rows  # coverage, agreement, by language
            assert all(r["scroll"] <= r["client"] for r in rows), (width, rows)


def test_drift_alarm_markers_are_drawn_whole(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """A new user's trial: the status page's alarm chart spans its alarms (no time series
    there), so the first and last sat on the plot area's edges and lost half their triangle
    to its clip. The trial's alarms: language entered drift 11:01, refusal 13:01, language
    left 20:31. And the replay report's chart spans the traffic, with the sample's language
    alarm at its first moment."""
    analytics = samples.replay_report()["analytics"]
    start = 1772535693.0  # 2026-03-03 11:01:33 UTC
    analytics["drift"]["alarms"] = [
        {**analytics["drift"]["alarms"][0], "timestamp": start},
        {**analytics["drift"]["alarms"][1], "timestamp": start + 7190},
        {**analytics["drift"]["alarms"][0], "timestamp": start + 34205, "state": "ok"},
    ]
    pages = (render_status_page(STATUS, analytics),
             render_replay_html(samples.replay_report(series=True)))  # fmt: skip
    for page in pages:
        for width in (WIDTH, 800):
            chart = charts(chromium, page, tmp_path, width)["Drift alarms"]
            area, markers = chart["area"], chart["markers"]
            assert markers, chart
            # 1 px for the outline, which the boxes leave out
            assert all(m["left"] - 1 >= area["left"] and m["right"] + 1 <= area["right"]
                       and m["top"] - 1 >= area["top"] and m["bottom"] + 1 <= area["bottom"]
                       for m in markers), (width, chart)  # fmt: skip


def test_shares_over_time_legend_covers_no_line(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """A new user's trial: the languages-over-time legend sat in the plot area's top left
    and hid the ``en`` line (a share near 1.0) and the gold set's dashed one. Its shape: 72
    hourly buckets, ``en`` between 88 % and 100 %."""
    report = samples.replay_report(series=True)
    start = samples.T0
    report["analytics"]["series"]["buckets"] = [
        {"start": start + 3600 * i, "languages": {"en": 22 + i % 4, "hi-Latn": 3 - i % 4},
         "topics": {"fees": 10 + i % 5, "exams": 15 - i % 5}, "answers": 10, "refused": i % 4}
        for i in range(72)
    ]  # fmt: skip
    page = render_replay_html(report)
    for width in (WIDTH, 800):
        found = charts(chromium, page, tmp_path, width)
        for title in ("Languages: share over time", "Topics: share over time",
                      "Refusal rate over time"):  # fmt: skip
            chart = found[title]
            legend, area = chart["legend"], chart["area"]
            assert legend is not None and chart["points"] > 1000, chart
            assert chart["covered"] == 0, (width, chart)
            assert legend["left"] >= area["right"], (width, chart)  # off the plot area


@pytest.fixture(scope="module")
def demo_pages(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """The demo's two pages: its live status page (``goldwatch demo``'s settings, the log read
    at once, served until it is consumed: suggestions from the labelling API with their
    ``status``, live quality, shadow, document gaps) and its report (``goldwatch demo --fast
    --html``, through the real CLI)."""
    work = tmp_path_factory.mktemp("demo")
    live = work / "live"
    settings = demo_settings(live, rate=None, port=_free_port(), token=TOKEN)
    prepare_workdir(live)
    with Server(settings) as running:
        status = httpx.get(_consumed(running).base + "/", timeout=60)
    assert status.status_code == 200, status.text
    report = work / "demo.html"
    result = subprocess.run(
        [sys.executable, "-m", "service.cli", "demo", "--fast", "--workdir", str(work / "fast"),
         "--html", str(report)],
        cwd=work, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    return {"status page": status.text, "demo report": report.read_text(encoding="utf-8")}


@pytest.mark.slow  # serves the demo until its whole log is consumed, then replays it again
def test_demo_pages_scroll_nowhere_sideways_at_1400_px(
    chromium: str,  # noqa: F811
    demo_pages: dict[str, str],
    tmp_path: Path,
) -> None:
    """Trial 24: the live status page's suggestions table (with the labelling API's
    ``status`` column) needed 1,215 px of the 1,132 a 1,400 px window leaves it and scrolled
    sideways. At 1,400 px neither the page (``document.documentElement.scrollWidth`` ≤
    ``clientWidth``) nor any of its tables scrolls sideways, on the demo's status page and on
    its report."""
    for name, page in demo_pages.items():
        rows = logged_rows(chromium, page, _PAGE_AND_TABLES, tmp_path)
        whole = [r for r in rows if r["section"] == "(page)"]
        assert len(whole) == 1 and whole[0]["scroll"] <= whole[0]["client"], (name, whole)
        tables = [r for r in rows if r["section"] != "(page)"]
        assert len(tables) >= 20, (name, tables)  # every section's tables were measured
        wide = [r for r in tables if r["scroll"] > r["client"]]
        assert wide == [], (name, wide)


#: Per passage or event id (``p-0054``: letters, a hyphen, digits) in a table cell of a
#: section, how many line boxes its text takes (1: unbroken). Read from the text itself, not
#: from any markup, so it measures the page as drawn whatever wraps the ids.
_ID_LINES = r"""<script>
const idPattern = /[A-Za-z]+-\d+/g;
for (const cell of document.querySelectorAll("section td")) {
  const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    for (const m of node.data.matchAll(idPattern)) {
      const range = document.createRange();
      range.setStart(node, m.index);
      range.setEnd(node, m.index + m[0].length);
      const tops = new Set(Array.from(range.getClientRects(), r => Math.round(r.top)));
      console.log(JSON.stringify({section: cell.closest("section").id, id: m[0],
                                  lines: tops.size}));
    }
  }
}
</script>"""


def test_passage_ids_are_never_broken_at_1024_px(chromium: str, tmp_path: Path) -> None:  # noqa: F811
    """Session 41: at 1,024 px the live-quality review table's passage lists broke inside an
    id, after its hyphen (``p-0054, p-`` / ``0052``). Each id in the review table's leaked and
    passages columns and in the shadow disagreements' rankings now takes one line; the
    lists break between ids. The review rows are the demo's longest shapes, as in
    :func:`test_live_quality_tables_fit_at_1400_px` (:func:`_long_review`)."""
    report = samples.replay_report()
    cell = report["shadow"]["candidates"]["bm25-v2"]
    cell["disagreements"][0]["production"] = [f"p-00{50 + i}" for i in range(5)]
    cell["disagreements"][0]["candidate"] = [f"p-00{60 + i}" for i in range(5)]
    page = render_status_page(STATUS, report["analytics"],
                              extras={**report, "quality": _long_review()})  # fmt: skip
    page = page.replace("<details>", "<details open>")  # the disagreements are folded
    rows = logged_rows(chromium, page, _ID_LINES, tmp_path, 1024)
    quality = [r for r in rows if r["section"] == "quality"]
    shadow = [r for r in rows if r["section"] == "shadow" and r["id"].startswith("p-00")]
    assert len(quality) >= 20 * 6 and len(shadow) == 10, rows  # every id was measured
    broken = [r for r in rows if r["lines"] != 1]
    assert broken == [], broken
