"""Charts rendered server-side with matplotlib (Agg/SVG backend) as inline ``<svg>`` strings.

matplotlib is imported on first use, so importing :mod:`service.html` stays cheap. Every
function returns one ``<svg>…</svg>`` element without XML prolog or metadata, ready to be
pasted into an HTML page. Text is kept as SVG ``<text>`` (``svg.fonttype = "none"``), so the
browser draws it with the viewer's fonts, as it draws the page's tables: a topic named in
Devanagari, Arabic or CJK shows its letters, where text drawn as paths (matplotlib's DejaVu
Sans glyphs, which lack those scripts) showed empty boxes. Its ``font-family`` is the font
matplotlib measured the layout with ('DejaVu Sans' and its look-alikes) ending in the generic
``sans-serif``, from which the browser takes any glyph the named fonts lack. matplotlib
escapes the text (``<`` ``&`` become ``&lt;`` ``&amp;``), so labels taken from user data can
never inject markup, and mathtext is off, so a ``$`` in a label is just a dollar sign.
Element ids are salted with a constant: the same chart gives the same bytes.

All functions raise ``ValueError`` when given no data to draw.
"""

from __future__ import annotations

import io
import math
import re
import warnings
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

#: matplotlib's date unit: days since 1970-01-01 (its default epoch).
DAY_S = 86400.0

#: Line / bar colours, in series order (colour-blind-safe Tableau 10 subset).
#: Markers and dashes of :func:`k_curves`' lines, in retriever order (with :data:`PALETTE`).
LINE_MARKERS = ("o", "s", "^", "D", "v", "P")
LINE_DASHES = ("-", "--", ":", "-.")
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#e15759",
    "#76b7b2",
    "#b07aa1",
    "#edc948",
    "#ff9da7",
    "#9c755f",
    "#bab0ac",
)
GOLD_COLOUR = "#8c6d00"
ALARM_COLOUR = "#b42318"

if TYPE_CHECKING:  # matplotlib itself is imported lazily (it is slow to import)
    from matplotlib.typing import RcKeyType

_RC: dict[RcKeyType, Any] = {
    "svg.fonttype": "none",
    "svg.hashsalt": "goldwatch",
    "text.parse_math": False,
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 96,
}
_PROLOG = re.compile(r"^.*?(?=<svg\b)", re.DOTALL)
_METADATA = re.compile(r"<metadata>.*?</metadata>\s*", re.DOTALL)


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    return plt


def _style() -> AbstractContextManager[None]:
    import matplotlib

    return matplotlib.rc_context(_RC)


def to_svg(fig: Any) -> str:
    """Serialise a matplotlib figure to an inline ``<svg>`` element and close the figure."""
    plt = _pyplot()
    buffer = io.StringIO()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # glyphs DejaVu lacks: measured as boxes, no noise
            fig.savefig(buffer, format="svg", bbox_inches="tight", metadata={"Date": None})
    finally:
        plt.close(fig)
    return _METADATA.sub("", _PROLOG.sub("", buffer.getvalue(), count=1), count=1).strip()


def _require(condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(f"nothing to plot: {what}")


def k_curves(ks: Sequence[int], panels: Mapping[str, Mapping[str, Sequence[float]]]) -> str:
    """Metric@k against k, one line per retriever, one panel per metric.

    Each retriever has its own colour, marker and dash (:data:`LINE_MARKERS`,
    :data:`LINE_DASHES`), so a line drawn over another's stays visible, and a retriever whose
    values equal an earlier one's in every panel is labelled so in the (one) legend
    (``"tfidf (= bm25)"``): two retrievers with the same recall@k curve drew one line under a
    legend of two (trial 14).

    Args:
        ks: the cut-offs (x axis), ascending.
        panels: metric name → retriever → one value in [0, 1] per k.
    """
    _require(bool(ks) and bool(panels), "no cut-offs or metrics")
    plt = _pyplot()
    with _style():
        fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.0), squeeze=False)
        # one legend (the last panel's) for every panel: "(= x)" only for equal curves in all
        curves: dict[str, tuple[tuple[float, ...], ...]] = {}
        for lines in panels.values():
            for name, values in lines.items():
                curves[name] = (*curves.get(name, ()), tuple(values))
        first: dict[tuple[tuple[float, ...], ...], str] = {}
        labels = {name: name if (same := first.setdefault(curve, name)) == name
                  else f"{name} (= {same})" for name, curve in curves.items()}  # fmt: skip
        for ax, (metric, lines) in zip(axes[0], panels.items(), strict=True):
            for i, (name, values) in enumerate(lines.items()):
                colour = PALETTE[i % len(PALETTE)]
                label = labels[name]
                ax.plot(ks, values, marker=LINE_MARKERS[i % len(LINE_MARKERS)], color=colour,
                        linestyle=LINE_DASHES[i % len(LINE_DASHES)], label=label,
                        markerfacecolor="none" if i % 2 else colour)  # fmt: skip
            ax.set(title=f"{metric} by k", xlabel="k", ylabel=metric, ylim=(0, 1.02))
            ax.set_xscale("log")
            ax.set_xticks(list(ks), [str(k) for k in ks])
            ax.minorticks_off()
        axes[0][-1].legend(loc="lower right", fontsize=8)
        return to_svg(fig)


def grouped_bars(
    categories: Sequence[str],
    series: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    xlabel: str,
    colours: Mapping[str, str] | None = None,
    notes: Mapping[str, str] | None = None,
) -> str:
    """Horizontal grouped bars: one group per category, one bar per series.

    Args:
        categories: group labels, drawn top to bottom.
        series: series name → one value per category; ``None``: no bar (no figure to draw,
            which a bar at 0 would misstate as a rate of 0).
        colours: series name → colour (default: :data:`PALETTE` in order).
        notes: category → a short text written in its group at the plot area's left edge,
            in grey italics (why it has no bar, e.g. ``no batch yet under this range``).
    """
    _require(bool(categories) and bool(series), title)
    plt = _pyplot()
    n, width = len(series), 0.8 / max(len(series), 1)
    with _style():
        height = 0.8 + 0.16 * len(categories) * (n + 0.5)
        fig, ax = plt.subplots(figsize=(6.0, min(height, 14.0)))
        positions = list(range(len(categories)))
        for i, (name, values) in enumerate(series.items()):
            drawn = [(p - 0.4 + width * (i + 0.5), v)
                     for p, v in zip(positions, values, strict=True) if v is not None]  # fmt: skip
            colour = (colours or {}).get(name, PALETTE[i % len(PALETTE)])
            ax.barh([o for o, _ in drawn], [v for _, v in drawn], height=width, color=colour,
                    label=name)  # fmt: skip
        for category, text in (notes or {}).items():
            # x in the plot area's fraction, y on the category's group
            ax.text(0.01, categories.index(category), text,
                    transform=ax.get_yaxis_transform(), va="center", ha="left", fontsize=8,
                    color="#5b6577", style="italic")  # fmt: skip
        ax.set_yticks(positions, list(categories))
        ax.invert_yaxis()
        if notes:  # every group in view and rates from 0, also with few bars or none
            ax.set_ylim(len(categories) - 0.5, -0.5)
            drawn_any = any(v is not None for values in series.values() for v in values)
            ax.set_xlim(left=0.0, **({} if drawn_any else {"right": 1.0}))
        ax.set(title=title, xlabel=xlabel)
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return to_svg(fig)


def intervals(
    labels: Sequence[str],
    values: Sequence[float],
    lows: Sequence[float],
    highs: Sequence[float],
    *,
    title: str,
    xlabel: str,
    zero: float | None = 0.0,
) -> str:
    """A forest plot: a point and its interval per label, with a vertical line at ``zero``."""
    _require(bool(labels), title)
    plt = _pyplot()
    with _style():
        fig, ax = plt.subplots(figsize=(7.0, 0.9 + 0.32 * len(labels)))
        positions = list(range(len(labels)))
        errors = [
            [v - lo for v, lo in zip(values, lows, strict=True)],
            [hi - v for v, hi in zip(values, highs, strict=True)],
        ]
        ax.errorbar(values, positions, xerr=errors, fmt="o", color=PALETTE[0], capsize=3)
        if zero is not None:
            ax.axvline(zero, color="#555555", linewidth=1)
        ax.set_yticks(positions, list(labels))
        ax.invert_yaxis()
        ax.set(title=title, xlabel=xlabel)
        return to_svg(fig)


#: Tick steps a time axis may use (seconds): the smallest that gives at most ``max_ticks``.
TICK_STEPS_S = (3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600, DAY_S, 2 * DAY_S, 7 * DAY_S)


def time_ticks(start: float, end: float, max_ticks: int = 8) -> list[tuple[float, str]]:
    """Ticks of a UTC time axis from ``start`` to ``end`` (Unix seconds): ``(time, label)``
    at whole multiples of the smallest step of :data:`TICK_STEPS_S` giving at most
    ``max_ticks`` ticks; a tick at midnight is labelled with its date (``Nov 16``), any other
    with its time of day (``12:00``), so three days read as dates with noons between. A range
    too long for a week's step gets a step of whole days, the fewest giving at most
    ``max_ticks`` ticks, labelled ``2026-11-16``: never more than ``max_ticks`` ticks (one
    1970 stamp in a 2026 log gave a week's step over 56 years: 2,970 ticks).

    Raises:
        ValueError: ``end`` < ``start`` or ``max_ticks`` < 2.

    >>> [label for _, label in time_ticks(1795046400.0, 1795046400.0 + 2.5 * 86400)]
    ['Nov 19', '12:00', 'Nov 20', '12:00', 'Nov 21', '12:00']
    >>> [label for _, label in time_ticks(0.0, 1795046400.0, max_ticks=3)]
    ['1970-01-01', '1998-06-11', '2026-11-19']
    """
    if end < start or max_ticks < 2:
        raise ValueError("need start <= end and max_ticks >= 2")
    step = next((s for s in TICK_STEPS_S if (end - start) // s + 1 <= max_ticks), None)
    dated = step is None
    if step is None:  # more than max_ticks weeks: whole days
        step = DAY_S * math.ceil((end - start) / DAY_S / (max_ticks - 1))
    first = math.ceil(start / step) * step
    ticks = []
    for i in range(int((end - first) // step) + 1):
        at = datetime.fromtimestamp(first + i * step, UTC)
        label = ("%Y-%m-%d" if dated else "%b %d") if (at.hour, at.minute) == (0, 0) else "%H:%M"
        ticks.append((float(first + i * step), at.strftime(label)))
    return ticks


#: Area of :func:`timeline`'s alarm markers (points², matplotlib's ``s``).
ALARM_MARKER_S = 70.0


def edge_pad(length: float, axis_pt: float, reach_pt: float) -> float:
    """Data units to add at each end of an axis ``axis_pt`` points long showing ``length``
    data units, so that a marker reaching ``reach_pt`` points from its centre is drawn whole
    at either end: ``pad / (length + 2 pad) * axis_pt = reach_pt``.

    >>> edge_pad(3600.0, 400.0, 8.0)  # an hour on 400 pt, a marker reaching 8 pt: 75 s more
    75.0

    Raises:
        ValueError: the axis is no longer than two reaches.
    """
    if axis_pt <= 2 * reach_pt:
        raise ValueError("axis too short for its markers")
    return length * reach_pt / (axis_pt - 2 * reach_pt)


def timeline(
    rows: Sequence[str],
    marks: Sequence[tuple[str, float, bool]],
    *,
    title: str,
    span: tuple[float, float] | None = None,
) -> str:
    """Alarm marks over time: one row per dimension; a filled red triangle where a
    comparison entered drift, a hollow grey one where it left.

    Args:
        rows: row labels (dimensions), top to bottom.
        marks: ``(row, unix_seconds, entered_drift)``.
        span: the x range to show (Unix seconds), e.g. the traffic's; default: the marks'
            own range (at least an hour). Ticks: :func:`time_ticks` of that range; the axis
            runs a marker's reach (:func:`edge_pad`) past both ends, so a mark at either end
            is drawn whole.
    """
    _require(bool(rows), title)
    plt = _pyplot()
    with _style():
        fig, ax = plt.subplots(figsize=(7.0, 0.9 + 0.35 * len(rows)))
        index = {row: i for i, row in enumerate(rows)}
        reach = 0.0  # how far a marker reaches from its centre (points)
        for entered in (True, False):
            xs = [t / DAY_S for r, t, e in marks if e is entered and r in index]
            ys = [index[r] for r, _, e in marks if e is entered and r in index]
            dots = ax.scatter(
                xs,
                ys,
                marker="v",
                s=ALARM_MARKER_S,
                zorder=3,
                color=ALARM_COLOUR if entered else "none",
                edgecolors=ALARM_COLOUR if entered else "#777777",
                label="entered drift" if entered else "left drift",
            )
            # half the triangle's width, its outline's mitred corner (under one line width
            # past the corner) and a point to spare
            edge = max(dots.get_linewidths(), default=0.0)
            reach = max(reach, math.sqrt(ALARM_MARKER_S) / 2 + edge + 1.0)
        times = [t for _, t, _ in marks]
        lo, hi = span if span is not None else (min(times, default=0.0), max(times, default=0.0))
        if hi - lo < 3600:  # one alarm, or alarms close together: an hour around them
            lo, hi = lo - 1800, hi + 1800
        # The markers are clipped to the plot area: one at lo or hi (an alarm at the span's
        # first or last moment, always so without a span) lost half its triangle. The axis
        # runs a marker's reach past both ends; the ticks stay those of lo..hi.
        pad = edge_pad(hi - lo, ax.get_position().width * fig.get_figwidth() * 72.0, reach)
        ax.set_xlim((lo - pad) / DAY_S, (hi + pad) / DAY_S)
        ticks = time_ticks(lo, hi)
        ax.set_xticks([t / DAY_S for t, _ in ticks], [label for _, label in ticks])
        ax.set_yticks(list(range(len(rows))), list(rows))
        ax.set_ylim(len(rows) - 0.5, -0.5)
        ax.set(title=title, xlabel="event time (UTC)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return to_svg(fig)


def _gapped(xs: list[float], step: float | None = None) -> tuple[list[float], list[int]]:
    """``xs`` (ascending bucket starts) with a NaN put in each gap wider than the buckets'
    ``step`` (same unit as ``xs``; ``None``: the smallest positive difference of neighbours,
    which misses gaps when no two buckets are neighbours; 1.5 times it is still no gap), and
    the indices of the original values before which each NaN goes, ascending, so the same
    NaNs can be put into a series of ``len(xs)`` values.

    >>> _gapped([0.0, 1.0, 2.0, 7.0, 8.0])
    ([0.0, 1.0, 2.0, nan, 7.0, 8.0], [3])
    >>> _gapped([0.0, 2.0, 4.0], step=1.0)
    ([0.0, nan, 2.0, nan, 4.0], [1, 2])
    """
    if step is None:
        steps = [b - a for a, b in zip(xs, xs[1:], strict=False) if b > a]
        if len(xs) < 3 or not steps:
            return list(xs), []
        step = min(steps)
    gaps = [i for i in range(1, len(xs)) if xs[i] - xs[i - 1] > 1.5 * step]
    out = list(xs)
    for at in reversed(gaps):
        out.insert(at, math.nan)
    return out, gaps


def shares_over_time(
    times: Sequence[float],
    shares: Mapping[str, Sequence[float]],
    *,
    title: str,
    gold: Mapping[str, float] | None = None,
    alarms: Sequence[float] = (),
    bucket_s: float | None = None,
) -> str:
    """Category shares per time bucket (lines), the gold set's share of each category as a
    dashed line of the same colour, and alarm times as red vertical lines; the legend right
    of the plot area, where it covers no line. A line breaks where buckets without traffic
    lie between two with it (:func:`_gapped`: a night without questions is no straight
    line from the evening's share to the morning's, trial 14).

    Args:
        times: bucket start times (Unix seconds), ascending.
        shares: category → share in [0, 1] per bucket.
        gold: category → the gold set's share.
        alarms: Unix seconds at which drift was declared.
        bucket_s: the buckets' width in seconds, for :func:`_gapped` (``None``: guessed).
    """
    _require(len(times) > 0 and bool(shares), title)
    plt = _pyplot()
    import matplotlib.dates as mdates

    days, gaps = _gapped([t / DAY_S for t in times], None if bucket_s is None else bucket_s / DAY_S)
    with _style():
        fig, ax = plt.subplots(figsize=(7.0, 3.0))
        for i, (category, values) in enumerate(shares.items()):
            colour = PALETTE[i % len(PALETTE)]
            ys = list(values)
            for at in reversed(gaps):
                ys.insert(at, math.nan)
            # a bucket alone between two gaps draws no line: its dot shows it
            ax.plot(days, ys, color=colour, label=category, linewidth=1.6, marker="o",
                    markersize=2.2)  # fmt: skip
            if gold and category in gold:
                ax.axhline(gold[category], color=colour, linestyle="--", linewidth=1)
        for t in alarms:
            ax.axvline(t / DAY_S, color=ALARM_COLOUR, linewidth=1.2, alpha=0.8)
        # At most 6 ticks labelled "Mar 02" at midnight, "12:00" between (time_ticks, as the
        # alarm timeline): matplotlib's own ticks, each "03-02 06:00", ran into one another
        # once the legend moved right of the plot (a second trial's replay report).
        ticks = time_ticks(times[0], times[-1], max_ticks=6)
        if len(ticks) >= 2:
            ax.set_xticks([t / DAY_S for t, _ in ticks], [label for _, label in ticks])
        else:  # under two hours: matplotlib's ticks, few of them
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(4))
            # matplotlib.dates ships no type annotations
            ax.xaxis.set_major_formatter(mdates.DateFormatter("%H:%M"))  # type: ignore[no-untyped-call]
        ax.set(title=title, ylabel="share", ylim=(0, 1.02), xlabel="event time (UTC)")
        # right of the plot area, as grouped_bars' legend: inside it, at the top, it hid the
        # largest share's line (a language's near 1.0) and its gold set's dashed one
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return to_svg(fig)


#: Most points :func:`means_over_time` labels with their ``n``.
MAX_N_LABELS = 16


def means_over_time(
    times: Sequence[float],
    lines: Mapping[str, Sequence[float | None]],
    *,
    title: str,
    ylabel: str,
    counts: Sequence[int],
    bands: Mapping[str, tuple[Sequence[float], Sequence[float]]] | None = None,
    bucket_s: float | None = None,
) -> str:
    """Means per time point (lines with dots, ``None`` drawn as no dot), each with its 95 %
    band shaded where ``bands`` has one, so a point over few results looks as unsure as it
    is; with at most :data:`MAX_N_LABELS` points, each is labelled with its ``n`` (the
    results it is over, ``counts``). Lines break across missing points (:func:`_gapped`).

    Args:
        times: point start times (Unix seconds), ascending.
        lines: name → one mean in [0, 1] (or ``None``) per point.
        counts: the results each point is over, one per point.
        bands: name → (lows, highs), one pair per point, in [0, 1].
        bucket_s: the points' width in seconds, for :func:`_gapped` (``None``: guessed).
    """
    _require(len(times) > 0 and bool(lines), title)
    plt = _pyplot()
    days, gaps = _gapped([t / DAY_S for t in times], None if bucket_s is None else bucket_s / DAY_S)

    def gapped(values: Sequence[float | None]) -> list[float]:
        ys = [math.nan if v is None else float(v) for v in values]
        for at in reversed(gaps):
            ys.insert(at, math.nan)
        return ys

    with _style():
        fig, ax = plt.subplots(figsize=(7.0, 3.0))
        for i, (name, values) in enumerate(lines.items()):
            colour = PALETTE[i % len(PALETTE)]
            ax.plot(days, gapped(values), color=colour, label=name, linewidth=1.6, marker="o",
                    markersize=3.0)  # fmt: skip
            if bands and name in bands:
                low, high = bands[name]
                ax.fill_between(days, gapped(low), gapped(high), color=colour, alpha=0.15,
                                linewidth=0, label=f"{name} 95 % band")  # fmt: skip
        if len(times) <= MAX_N_LABELS:
            for t, n in zip(times, counts, strict=True):
                ax.annotate(f"n {n}", (t / DAY_S, 0.02), fontsize=7, color="#555555",
                            ha="center")  # fmt: skip
        ticks = time_ticks(times[0], times[-1], max_ticks=6)
        if len(ticks) >= 2:
            ax.set_xticks([t / DAY_S for t, _ in ticks], [label for _, label in ticks])
        span = (bucket_s or 3600.0) / DAY_S / 2
        ax.set_xlim(days[0] - span, days[-1] + span)
        ax.set(title=title, ylabel=ylabel, ylim=(0, 1.02), xlabel="event time (UTC)")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return to_svg(fig)
