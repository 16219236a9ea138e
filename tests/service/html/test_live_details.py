"""Live-page details (issue 18, item 6): the drift-alarm time axis on three days of data and
a drift row held by hysteresis, on hand-built inputs."""

from __future__ import annotations

import copy
import re
from datetime import UTC, datetime

from service.html.drift_section import HELD_NOTE, drift_section
from service.html.plots import grouped_bars, time_ticks
from tests.service.html import samples


def _unix(text: str) -> float:
    return datetime.fromisoformat(text).replace(tzinfo=UTC).timestamp()


def test_three_days_of_traffic_tick_at_midnights_and_noons() -> None:
    # the demo log's range: 2026-11-15 19:00 to 2026-11-18 18:00 UTC (71 hours); the old
    # axis ticked every 4 h 48 min from the first alarm ("11-17 14:24", "11-17 19:12", ...)
    ticks = time_ticks(_unix("2026-11-15T19:00:00"), _unix("2026-11-18T18:00:00"))
    assert [label for _, label in ticks] == ["Nov 16", "12:00", "Nov 17", "12:00", "Nov 18",
                                             "12:00"]  # fmt: skip
    assert ticks[0][0] == _unix("2026-11-16T00:00:00")
    assert ticks[-1][0] == _unix("2026-11-18T12:00:00")
    # one afternoon, 13:00 to 18:00: hourly ticks (6, within the 8 allowed)
    hours = time_ticks(_unix("2026-11-17T13:00:00"), _unix("2026-11-17T18:00:00"))
    assert [label for _, label in hours] == ["13:00", "14:00", "15:00", "16:00", "17:00",
                                             "18:00"]  # fmt: skip


def test_a_drift_row_held_by_hysteresis_says_so() -> None:
    drift = copy.deepcopy(samples.replay_report()["analytics"]["drift"])
    plain = drift_section(drift)
    assert "held by hysteresis" not in plain
    drift["refusal"]["comparisons"]["baseline"]["held_by_hysteresis"] = True
    held = drift_section(drift)
    assert ('<span class="badge drift">drift</span> <span class="muted">held by hysteresis'
            "</span>") in held  # fmt: skip
    assert HELD_NOTE.split(":")[0] in held


def test_chart_text_is_drawn_by_the_browser_with_a_fallback_font() -> None:
    # trial finding 11: a Devanagari topic name was drawn as DejaVu Sans glyph paths (empty
    # boxes) while the tables showed it; as <text> the browser falls back as in the tables
    label = "topic-22: का, क्या, था"
    svg = grouped_bars([label, "<script>x</script> & co"], {"live": [0.5, 0.5]}, title="Topics",
                       xlabel="share")  # fmt: skip
    assert f">{label}</text>" in svg
    assert ">&lt;script&gt;x&lt;/script&gt; &amp; co</text>" in svg
    assert "<script" not in svg
    families = re.findall(r"font-family: ([^;\"]+)", svg)
    assert families and all(f.rstrip().endswith(", sans-serif") for f in families)
