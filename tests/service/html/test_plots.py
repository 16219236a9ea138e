"""Chart geometry read from the SVG itself (no browser; ``tests/acceptance/test_html_fits.py``
measures the same in Chromium): the drift alarms' markers inside the plot area, the
shares-over-time legend right of it. Coordinates are the SVG's user units (points)."""

from __future__ import annotations

import re

from service.html import plots

NUMBER = r"-?[\d.]+"


def _group(svg: str, gid: str) -> str:
    """The text of ``<g id="gid">`` up to the next group of the same kind."""
    start = svg.index(f'<g id="{gid}">')
    return svg[start : svg.find('<g id="', start + 1)]


def _path_box(d: str) -> tuple[float, float, float, float]:
    """``(left, top, right, bottom)`` of a path's points (curves: their control points)."""
    values = [float(v) for v in re.findall(NUMBER, d)]
    xs, ys = values[0::2], values[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _plot_area(svg: str) -> tuple[float, float, float, float]:
    """The axes' background patch (the first patch inside ``axes_1``)."""
    axes = svg[svg.index('<g id="axes_1">') :]
    d = re.search(r'<g id="patch_\d+">\s*<path d="([^"]*)"', axes)
    assert d is not None
    return _path_box(d.group(1))


def _legend_box(svg: str) -> tuple[float, float, float, float]:
    legend = svg[svg.index('<g id="legend_1">') :]
    d = re.search(r'<path d="([^"]*)"', legend)
    assert d is not None
    return _path_box(d.group(1))


def _markers(svg: str, collection: str) -> list[tuple[float, float, float, float]]:
    """The boxes of a scatter's markers: filled ones are one marker path (in ``<defs>``)
    moved to each ``<use>``, hollow ones a path each."""
    group = _group(svg, collection)
    defined = re.search(r'<path id="[^"]*" d="([^"]*)"', group)
    if defined is None:
        return [_path_box(d) for d in re.findall(r'<path d="([^"]*)"', group)]
    left, top, right, bottom = _path_box(defined.group(1))
    uses = re.findall(rf'<use xlink:href="#[^"]*" x="({NUMBER})" y="({NUMBER})"', group)
    return [(float(x) + left, float(y) + top, float(x) + right, float(y) + bottom)
            for x, y in uses]  # fmt: skip


# the trial's status page: language entered drift 11:01, refusal 13:01, language left 20:31
ROWS = ["language", "topic", "refusal", "out_of_scope"]
START = 1772535693.0  # 2026-03-03 11:01:33 UTC
MARKS = [("language", START, True), ("refusal", START + 7190, True),
         ("language", START + 34205, False)]  # fmt: skip


def test_alarm_markers_at_the_span_ends_are_drawn_whole() -> None:
    for span in (None, (START, START + 34205), (START - 86400, START + 34205)):
        svg = plots.timeline(ROWS, MARKS, title="Drift alarms", span=span)
        left, top, right, bottom = _plot_area(svg)
        markers = _markers(svg, "PathCollection_1") + _markers(svg, "PathCollection_2")
        assert len(markers) == 3
        # a point for the outline (1 pt wide, mitred) the path leaves out
        for m_left, m_top, m_right, m_bottom in markers:
            assert left <= m_left - 1 and m_right + 1 <= right, (span, markers, left, right)
            assert top <= m_top - 1 and m_bottom + 1 <= bottom


def test_alarm_axis_padding_changes_no_tick() -> None:
    """The axis runs past the alarms, its ticks are still those of their range."""
    svg = plots.timeline(ROWS, MARKS, title="Drift alarms")
    shown = [label for _, label in plots.time_ticks(START, START + 34205)]
    assert shown == ["12:00", "14:00", "16:00", "18:00", "20:00"]
    assert re.findall(r">(\d\d:\d\d)</text>", svg) == shown


def test_shares_over_time_legend_is_right_of_the_plot_area() -> None:
    days = [START + 3600 * i for i in range(72)]
    shares = {"en": [0.88 + 0.04 * (i % 4) for i in range(72)],
              "de": [0.12 - 0.04 * (i % 4) for i in range(72)]}  # fmt: skip
    svg = plots.shares_over_time(days, shares, title="Languages", gold={"en": 1.0, "de": 0.0})
    _, _, area_right, _ = _plot_area(svg)
    legend_left, _, _, _ = _legend_box(svg)
    assert legend_left > area_right


def test_shares_over_time_ticks_are_few_and_never_run_together() -> None:
    """A second trial's replay report: matplotlib's ticks, each "03-02 06:00", ran into one
    another once the legend moved right. Two days from Mar 02 06:00 give time_ticks' 12 h
    step: 12:00, Mar 03, 12:00, Mar 04 (at most 6, short labels)."""
    start = 1_772_431_200.0  # 2026-03-02 06:00 UTC
    times = [start + i * 3600 for i in range(49)]
    svg = plots.shares_over_time(times, {"en": [0.5] * 49}, title="t")
    labels = [text for text in ("12:00", "Mar 03", "Mar 04") if text in svg]
    assert labels == ["12:00", "Mar 03", "Mar 04"]
    assert "03-02" not in svg and "06:00" not in svg


def test_k_curves_label_a_line_equal_to_an_earlier_one_and_dash_it() -> None:
    # trial 14: bm25 and tfidf had the same recall@k at every k: one visible line, two names
    svg = plots.k_curves([1, 5, 10], {"recall": {"bm25": [0.5, 0.75, 1.0],
                                                 "tfidf": [0.5, 0.75, 1.0],
                                                 "dense": [0.25, 0.5, 1.0]}})  # fmt: skip
    legend = svg[svg.index('<g id="legend_1">') :]
    labels = re.findall(r"<text [^>]*>([^<]*)</text>", legend)  # fonttype "none": real text
    assert labels == ["bm25", "tfidf (= bm25)", "dense"]
    styles = re.findall(r'<g id="line2d_\d+">\s*<path d="[^"]*"\s*style="([^"]*)"', legend)
    assert ["stroke-dasharray" in style for style in styles] == [False, True, True]


def test_shares_over_time_break_the_line_across_a_night_without_traffic() -> None:
    # hourly buckets 09:00-11:00, none overnight, then 08:00-09:00 next day (trial 14's chart
    # drew a straight line from the evening's share to the morning's)
    hour = 3600.0
    times = [START + h * hour for h in (0, 1, 2, 23, 24)]
    svg = plots.shares_over_time(times, {"en": [0.6, 0.5, 0.6, 0.2, 0.3]}, title="language")
    # the data line: the first path in the first colour drawn 1.6 wide (ticks are grey)
    line = re.search(r'<path d="([^"]*)"\s*clip-path="[^"]*"\s*'
                     r'style="[^"]*stroke: #4e79a7; stroke-width: 1.6', svg)  # fmt: skip
    assert line is not None
    assert line.group(1).count("M") == 2  # two runs of buckets: one move to each
    assert line.group(1).count("L") == 3  # 3 and 2 buckets: 2 + 1 segments


def test_k_curves_one_legend_says_equal_only_for_curves_equal_in_every_panel() -> None:
    # a review (session 32): recall differs, hit rate is equal; the one legend (the last
    # panel's) said "tfidf (= bm25)", false for recall
    svg = plots.k_curves([1, 5, 10], {
        "recall": {"bm25": [0.5, 0.75, 1.0], "tfidf": [0.5, 0.6, 0.9]},
        "hit_rate": {"bm25": [0.6, 0.8, 1.0], "tfidf": [0.6, 0.8, 1.0]}})  # fmt: skip
    legend = svg[svg.index('<g id="legend_1">') :]
    assert re.findall(r"<text [^>]*>([^<]*)</text>", legend) == ["bm25", "tfidf"]


def test_shares_over_time_with_the_bucket_width_break_every_other_bucket() -> None:
    # traffic in every other hourly bucket: no two buckets are neighbours, so the width
    # guessed from the data (2 h) finds no gap; the series' bucket_s (1 h) does
    times = [START + h * 3600.0 for h in (0, 2, 4)]
    svg = plots.shares_over_time(times, {"en": [0.6, 0.5, 0.6]}, title="x", bucket_s=3600)
    line = re.search(r'<path d="([^"]*)"\s*clip-path="[^"]*"\s*'
                     r'style="[^"]*stroke: #4e79a7; stroke-width: 1.6', svg)  # fmt: skip
    assert line is not None and line.group(1).count("L") == 0  # three lone dots, no segment


def test_grouped_bars_draw_no_bar_for_a_missing_value_and_say_why() -> None:
    """Session 40: a share with no value (the out-of-scope share of the stable verdicts before
    a batch is counted under the off-corpus cutoff's range) was drawn as a bar at 0; ``None``
    draws no bar (one patch fewer than a bar at 0) and the group says why, on a rate axis from
    0 (with no bar at all too)."""
    at_zero = plots.grouped_bars(["a", "b"], {"s": [0.5, 0.0]}, title="t", xlabel="rate")
    missing = plots.grouped_bars(["a", "b"], {"s": [0.5, None]}, title="t", xlabel="rate",
                                 notes={"b": "no batch yet under this range"})  # fmt: skip
    empty = plots.grouped_bars(["a", "b"], {"s": [None, None]}, title="t", xlabel="rate",
                               notes={"a": "no answer", "b": "no batch"})  # fmt: skip
    patches = [len(re.findall(r'<g id="patch_', svg)) for svg in (at_zero, missing, empty)]
    assert patches[0] - 1 == patches[1] == patches[2] + 1
    assert "no batch yet under this range" in missing and "no batch yet" not in at_zero
    assert ">no answer<" in empty and ">no batch<" in empty
    ticks = re.findall(r">(-?\d+\.\d+)</text>", empty)  # the x axis' tick labels
    assert ticks[0] == "0.0" and ticks[-1] == "1.0", ticks
