"""Per-language figures: a rate or a mean per live language, with its n and a 95 % interval.

An en/hi team needs the refusal rate and the live retrieval quality of each language, not
only the overall figure (trial 37: production's hit@10 on known questions was 0.891 in
English and 0.563 in Hindi, shown only as 0.780 overall). The rows here are built the same
way wherever they are shown (the replay report's JSON, text and HTML, ``GET /v1/refusals``,
``GET /v1/quality``):

* the language is the event's ``language`` annotation (the language stage's label, the one
  the ``languages`` counts and the language drift use; ``und`` when it has none);
* languages with the most events first (ties by language code);
* a rate (refusals of answers, hits of scored known questions) has the Wilson score
  interval at 95 % (:func:`service.coverage.wilson_bounds`); a mean of values that are not
  0/1 (recall with several gold passages, reciprocal rank) is given without one;
* the rule for small languages: a row over fewer than ``min_n`` events (the reports pass
  ``analytics.quality_min_class``, 10 by default, the floor a detector's measured quality
  counts on) is kept but marked ``few`` (its interval is wide: read it, not the rate). No
  language is merged into another: the languages are bounded already (the language
  detector's candidates).

>>> rows = rate_rows({"en": (434, 681), "hi": (245, 319), "tr": (1, 3)})
>>> [(r["language"], r["n"], round(r["rate"], 3), r["few"]) for r in rows]
[('en', 681, 0.637, False), ('hi', 319, 0.768, False), ('tr', 3, 0.333, True)]
>>> round(rows[1]["low"], 3), round(rows[1]["high"], 3)
(0.719, 0.811)
>>> print(rate_text(rows))  # doctest: +NORMALIZE_WHITESPACE
en 63.7% [60.1%, 67.3%] (n 681), hi 76.8% [71.9%, 81.1%] (n 319),
tr 33.3% [6.1%, 79.2%] (n 3, few)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from service.coverage import wilson_bounds

__all__ = ["FEW", "NO_LANGUAGE", "language_of", "rate_rows", "rate_text", "wilson"]

#: Rows over fewer events than this are marked ``few`` (``analytics.quality_min_class``'s
#: default; the reports pass their own setting).
FEW = 10
#: The language of an event without a ``language`` annotation (as the drift counts it).
NO_LANGUAGE = "und"


def language_of(notes: Mapping[str, Any]) -> str:
    """The language an event's figures are counted under: its ``language`` annotation, or
    ``und`` without one."""
    return str(notes.get("language") or NO_LANGUAGE)


def wilson(x: float, n: float) -> tuple[float, float]:
    """:func:`~service.coverage.wilson_bounds` at 95 %, exactly 0 below none and 1 above all
    (the formula's rounding leaves ~1e-17 there); ``(0, 1)`` for ``n`` 0.

    >>> wilson(0, 50)[0], wilson(50, 50)[1], [round(b, 4) for b in wilson(1, 4)]
    (0.0, 1.0, [0.0456, 0.6994])
    """
    low, high = wilson_bounds(x, n)
    return (0.0 if x <= 0 else low), (1.0 if n > 0 and x >= n else high)


def rate_rows(counts: Mapping[str, tuple[int, int]], min_n: int = FEW) -> list[dict[str, Any]]:
    """``[{"language", "n", "x", "rate", "low", "high", "few"}]``: per language ``x`` of
    ``n`` (e.g. refused of answers), the rate ``x / n`` (``None`` when ``n`` is 0) and its
    Wilson 95 % interval, ``few`` when ``n < min_n``; most events first, then by language.
    Languages with ``n`` 0 are left out."""
    rows = []
    for language, (x, n) in sorted(counts.items(), key=lambda item: (-item[1][1], item[0])):
        if n <= 0:
            continue
        low, high = wilson(x, n)
        rows.append({"language": language, "n": int(n), "x": int(x), "rate": x / n,
                     "low": low, "high": high, "few": n < min_n})  # fmt: skip
    return rows


def rate_text(rows: list[dict[str, Any]]) -> str:
    """The rows of :func:`rate_rows` in one line: ``"en 63.7% [60.1%, 67.2%] (n 681), ..."``,
    ``", few"`` after the n of a row marked so; ``"none"`` without rows."""
    if not rows:
        return "none"
    return ", ".join(
        f"{r['language']} {r['rate']:.1%} [{r['low']:.1%}, {r['high']:.1%}] "
        f"(n {r['n']}{', few' if r['few'] else ''})"
        for r in rows
    )
