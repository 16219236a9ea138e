"""Which gold rows started missing: the rows behind a ``known_miss`` alarm.

The ``known_miss`` drift alarm (:mod:`service.drift.stage`) says that production's top k
misses every gold passage of known questions more often over the latest
``analytics.drift.known_window_s`` than before; it does not say on which questions. Trial 51
(finding M3): six gold rows' articles lost their gold paragraph, and the alarm named none of
them; the tester summed the JSON report's per-hour series to find them (g-027, g-049, g-038,
g-009, g-006, g-014: 17 misses in 17 asks, no other row missed).

:func:`missing_rows` compares each gold row's misses over the same window as the alarm (the
live-quality stage's recent buckets, :class:`service.quality.stage.LiveQualityStage`) with its
misses before it (all time minus the window), and lists the rows that missed in the window:

* every row that missed at least once in the window is listed: the window's misses are what
  the alarm's rate counts, and a row that kept missing since before the window (its articles
  regressed a day before the alarm opened, as trial 51's g-027) drives it as much as one that
  started in it; its ``before`` column says which it is;
* ranked by misses in the window (most first), then by the rise of its miss rate over its
  rate before (a row not asked before: from 0), then by id;
* each with its gold document ids (the row's ``gold`` passage ids): gold rows and passage ids
  only, never a live question's text (gold rows are the user's own confirmed text).

A miss is a scored known event whose top k holds no gold passage (hit@k 0), the event the
``known_miss`` rate counts.

>>> recent = {"g-1": [3, 3, 0.0, 0.0, 0.0], "g-2": [2, 2, 2.0, 2.0, 2.0]}
>>> total = {"g-1": [5, 5, 2.0, 2.0, 2.0], "g-2": [4, 4, 4.0, 4.0, 4.0]}
>>> out = missing_rows(recent, total, {"g-1": ("d#0",)})
>>> [(r["gold_id"], r["window"], r["before"], r["documents"]) for r in out["rows"]]
[('g-1', {'asks': 3, 'misses': 3}, {'asks': 2, 'misses': 0}, ['d#0'])]
>>> out["more"], out["window_misses"], out["window_asks"]
(0, 3, 5)
>>> print(missing_rows_text(out))
g-1 (doc d#0) 3/3 missed, before 0/2
>>> out = missing_rows(recent, total, {}, since="2026-12-05T00:00:00+00:00",
...                    until="2026-12-06T00:00:00+00:00", window_s=86400.0)
>>> print(missing_window_text(out))
window 2026-12-05 00:00 → 2026-12-06 00:00 UTC (24 h); before: all earlier time
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

__all__ = ["TOP_ROWS", "missing_rows", "missing_rows_text", "missing_window_text"]

#: Rows listed by the reports (the others counted as "and K more").
TOP_ROWS = 10


def _asks_misses(cell: Sequence[float] | None) -> tuple[int, int]:
    """``(scored asks, misses)`` of a live-quality cell ``[n, n_scored, Σrecall, Σhit, Σrr]``."""
    if not cell:
        return 0, 0
    scored = int(cell[1])
    return scored, max(0, scored - round(float(cell[3])))


def missing_rows(
    recent: Mapping[str, Sequence[float]],
    total: Mapping[str, Sequence[float]],
    documents: Mapping[str, Sequence[str]],
    top: int = TOP_ROWS,
    since: str | None = None,
    until: str | None = None,
    window_s: float | None = None,
) -> dict[str, Any]:
    """The gold rows that missed in the window, against their misses before (module
    docstring).

    Args:
        recent: gold id → production's cell over the window (``[n, n_scored, Σrecall, Σhit,
            Σrr]``, hit 0 or 1 per scored event).
        total: gold id → production's cell over all time (the same layout; the window's
            events included).
        documents: gold id → the row's gold passage ids (a row without one: ``[]``).
        top: rows listed at most (≥ 0); the others are counted in ``more``.
        since, until: the window's bounds, ISO 8601 times (UTC): the start of its first
            counted bucket and the end of its newest (the stage's ``by_group_recent``), or
            ``None`` when unknown; copied into the block.
        window_s: the window's configured length in seconds (``known_window_s``), or
            ``None``; copied into the block. "Before" is all time before ``since``.

    Returns:
        ``{"rows": [{"gold_id", "documents": [ids], "window": {"asks", "misses"},
        "before": {"asks", "misses"}}], "more": rows left out, "window_asks": scored known
        events in the window, "window_misses": their misses, "since", "until", "window_s"}``
        (asks: scored known events; misses: those whose top k held no gold passage).
    """
    listed: list[tuple[int, float, str, dict[str, Any]]] = []
    window_asks = window_misses = 0
    for gold_id, cell in recent.items():
        asks, misses = _asks_misses(cell)
        window_asks += asks
        window_misses += misses
        if not misses:
            continue
        all_asks, all_misses = _asks_misses(total.get(gold_id))
        before_asks, before_misses = max(0, all_asks - asks), max(0, all_misses - misses)
        rate = misses / asks
        before_rate = before_misses / before_asks if before_asks else 0.0
        row = {
            "gold_id": gold_id,
            "documents": list(documents.get(gold_id, ())),
            "window": {"asks": asks, "misses": misses},
            "before": {"asks": before_asks, "misses": before_misses},
        }
        listed.append((-misses, before_rate - rate, gold_id, row))
    listed.sort(key=lambda item: item[:3])
    return {
        "rows": [item[3] for item in listed[:top]],
        "more": max(0, len(listed) - top),
        "window_asks": window_asks,
        "window_misses": window_misses,
        "since": since,
        "until": until,
        "window_s": window_s,
    }


def missing_rows_text(block: Mapping[str, Any] | None, max_documents: int = 3) -> str | None:
    """One line naming the rows of a :func:`missing_rows` block, or ``None`` without any:
    ``"missing in the window: g-027 (doc de:X#0) 4/4 missed, before 0/3; ...; and 2 more"``.
    At most ``max_documents`` document ids per row (then ``"+N"``)."""
    rows = (block or {}).get("rows") or []
    if not rows:
        return None
    parts = []
    for row in rows:
        docs = list(row.get("documents") or [])
        shown = ", ".join(docs[:max_documents]) + (
            f" +{len(docs) - max_documents}" if len(docs) > max_documents else ""
        )
        window, before = row["window"], row["before"]
        parts.append(
            f"{row['gold_id']}{f' (doc {shown})' if shown else ''} "
            f"{window['misses']}/{window['asks']} missed, before "
            f"{before['misses']}/{before['asks']}"
        )
    more = int((block or {}).get("more") or 0)
    return "; ".join(parts) + (f"; and {more} more" if more else "")


def _length(seconds: float) -> str:
    """``"24 h"``, ``"90 min"`` or ``"45 s"``: a window's length in the largest whole unit."""
    whole = round(seconds)
    if whole and whole % 3600 == 0:
        return f"{whole // 3600} h"
    if whole and whole % 60 == 0:
        return f"{whole // 60} min"
    return f"{whole} s"


def _minute(iso: str) -> str:
    """An ISO 8601 time as ``"2026-12-05 00:00"`` in UTC (as given when it has no offset)."""
    at = datetime.fromisoformat(iso)
    if at.utcoffset() is not None:
        at = at.astimezone(UTC)
    return at.strftime("%Y-%m-%d %H:%M")


def missing_window_text(block: Mapping[str, Any] | None) -> str | None:
    """The window a :func:`missing_rows` block counts, for the reports: ``"window 2026-12-05
    00:00 → 2026-12-06 00:00 UTC (24 h); before: all earlier time"`` (the length is
    ``until - since``: whole buckets ending with the latest event, at most ``window_s``), or
    ``None`` when the block has no bounds."""
    since, until = (block or {}).get("since"), (block or {}).get("until")
    if not since or not until:
        return None
    length = (datetime.fromisoformat(until) - datetime.fromisoformat(since)).total_seconds()
    return (
        f"window {_minute(since)} → {_minute(until)} UTC ({_length(length)}); "
        "before: all earlier time"
    )
