"""Live quality and shadow agreement over time, for the replay report's "Live quality" and
"Shadow agreement" sections.

Reads the time series' ``over_time`` (:func:`service.quality.over_time.over_time`): points
of a width chosen so that most results fall in points of at least ``min_n``; a point under
``min_n`` is not drawn. Each chart shades the 95 % bands (Wilson for the hit rate, the normal
interval of the mean for recall and RBO) and, with few points, writes each point's ``n``
under it; the table of points (collapsed) gives every ``n`` and its distinct questions (the
unit of the tests). Under the chart, the sustained run of points against the points before it
and the worst point against the run, in the text report's words
(:func:`service.quality.over_time.known_line`), emphasised when either is lower beyond noise.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from markupsafe import Markup

from service.html import plots
from service.html.page import esc, figure, para, table, when
from service.quality.over_time import (
    agreement_line,
    known_line,
    known_miss_alarm_text,
    width_text,
)

__all__ = ["agreement_over_time", "quality_over_time"]


def _points_table(label: str, header: list[str], rows: list[list[object]]) -> Markup:
    """The points, collapsed under a summary line."""
    return Markup(f"<details><summary>{esc(label)}: {len(rows)} points</summary>"
                  f"{table(header, rows, nowrap_columns=(0,))}</details>")  # fmt: skip


def _caption(track: Mapping[str, Any], min_n: int, what: str, bands: str) -> str:
    small = track["small"]
    labels = " and under each point" if len(track["points"]) <= plots.MAX_N_LABELS else ""
    left = (f" {small['n']} {what} in {small['points']} points under {min_n} are not drawn "
            "(the run's figures count them)." if small["points"] else "")  # fmt: skip
    return (
        f"Points of {width_text(track['bucket_s'])} (UTC), each over at least {min_n} "
        f"{what} (n: how many, in the table of points{labels}); shaded: 95 % bands "
        f"({bands}).{left}"
    )


def _verdict(line: str | None, track: Mapping[str, Any], alarmed: bool = False) -> list[Markup]:
    """The verdict's paragraph: a warning when the worst point or a sustained run of points
    is beyond noise, or ``alarmed`` (another test on the same data, ``known_miss``, alarms)."""
    if not line:
        return []
    found = alarmed or any(
        (track.get(key) or {}).get("beyond_noise") for key in ("worst", "sustained")
    )
    return [para(line.strip() + ".", "warn" if found else "muted")]


def quality_over_time(over: Mapping[str, Any] | None, k: object,
                      known_miss: Mapping[str, Any] | None = None) -> list[Markup]:  # fmt: skip
    """Production's recall@k, hit rate and MRR on known questions per point, with the worst
    point's verdict and the points' table; ``[]`` without a scored known question.

    Args:
        over: the series' ``over_time`` dict (``min_n``, ``known``), or ``None``.
        k: the stage's cut-off, for the labels.
        known_miss: the drift report's ``known_miss`` dimension: while it alarms the verdict
            cites it and is a warning (:func:`~service.quality.over_time.known_line`).
    """
    track = (over or {}).get("known")
    if not track:
        return []
    min_n = int((over or {}).get("min_n", 0))
    points = track["points"]
    parts: list[Markup] = [Markup(f"<h3>{esc('Production over time')}</h3>")]
    if len(points) >= 2:
        svg = plots.means_over_time(
            [p["start"] for p in points],
            {f"recall@{k}": [p["recall"] for p in points],
             "hit rate": [p["hit_rate"] for p in points],
             "MRR": [p["mrr"] for p in points]},
            bands={f"recall@{k}": ([p["recall_low"] for p in points],
                                   [p["recall_high"] for p in points]),
                   "hit rate": ([p["hit_low"] for p in points], [p["hit_high"] for p in points])},
            counts=[p["n"] for p in points],
            title="Production's live quality on known questions",
            ylabel="mean",
            bucket_s=track["bucket_s"],
        )  # fmt: skip
        parts.append(
            figure(
                svg,
                _caption(
                    track,
                    min_n,
                    "scored known questions",
                    "hit rate: Wilson; recall: normal, of the mean",
                ),
            )
        )
    alarmed = known_miss_alarm_text(known_miss) is not None
    parts += _verdict(known_line(over, k, known_miss), track, alarmed)
    rows: list[list[object]] = [
        [when(p["start"]), p["n"], p.get("questions"), p["recall"],
         f"{p['recall_low']:.3f} … {p['recall_high']:.3f}", p["hit_rate"],
         f"{p['hit_low']:.3f} … {p['hit_high']:.3f}", p["mrr"]]
        for p in points
    ]  # fmt: skip
    if rows:
        header = ["point (start)", "scored", "distinct questions", f"recall@{k}", "95 % band",
                  "hit rate", "95 % band", "MRR"]  # fmt: skip
        parts.append(_points_table("production", header, rows))
    return parts


def agreement_over_time(over: Mapping[str, Any] | None) -> list[Markup]:
    """Each candidate's mean RBO with production per point (one line each, with its band),
    the worst point's verdict per candidate and the points' table; ``[]`` without results.

    Args:
        over: the series' ``over_time`` dict (``min_n``, ``agreement``), or ``None``.
    """
    tracks: Mapping[str, Mapping[str, Any]] = (over or {}).get("agreement") or {}
    tracks = {name: t for name, t in tracks.items() if t["all"]["n"]}
    if not tracks:
        return []
    min_n = int((over or {}).get("min_n", 0))
    parts: list[Markup] = [Markup(f"<h3>{esc('Agreement over time')}</h3>")]
    for name, track in tracks.items():
        points = track["points"]
        if len(points) >= 2:
            svg = plots.means_over_time(
                [p["start"] for p in points],
                {"RBO": [p["rbo"] for p in points], "overlap@k": [p["overlap"] for p in points]},
                bands={"RBO": ([p["rbo_low"] for p in points], [p["rbo_high"] for p in points])},
                counts=[p["n"] for p in points],
                title=f"{name}: agreement with production",
                ylabel="mean",
                bucket_s=track["bucket_s"],
            )
            parts.append(figure(svg, _caption(track, min_n, "results",
                                              "RBO: normal, of the mean")))  # fmt: skip
        parts += _verdict(agreement_line(over, name), track)
        if points:
            parts.append(_points_table(
                name, ["point (start)", "results", "distinct questions", "RBO", "95 % band",
                       "overlap@k"],
                [[when(p["start"]), p["n"], p.get("questions"), p["rbo"],
                  f"{p['rbo_low']:.3f} … {p['rbo_high']:.3f}", p["overlap"]] for p in points],
            ))  # fmt: skip
    return parts
