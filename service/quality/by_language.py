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

from collections.abc import Mapping, Sequence
from typing import Any

from service.coverage import wilson_bounds

__all__ = [
    "FEW", "NO_LANGUAGE", "flag_agreement_brief", "language_of", "rate_rows", "rate_text",
    "wilson",
]  # fmt: skip

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


def flag_agreement_rows(
    counts: Mapping[str, tuple[int, int, int, int]], min_n: int = FEW
) -> list[dict[str, Any]]:
    """The refusal patterns measured against the producer's own ``answer.refused``, per
    language: ``counts`` maps a language to ``(checked, flagged, detected, both)`` — answers
    that set the flag and have a text the detector read, of those the ones the flag calls
    refused, the ones the text reads as refused, and the ones both do (counts ≥ 0,
    ``both ≤ min(flagged, detected)``). Each row: ``{"language", "checked", "flagged",
    "detected", "both", "precision", "precision_low", "precision_high", "recall",
    "recall_low", "recall_high", "few"}`` — precision ``both / detected`` and recall
    ``both / flagged`` in [0, 1] with Wilson 95 % bounds (``None`` with a denominator 0),
    ``few`` when fewer than ``min_n`` flagged refusals measure the recall. Languages with no
    checked answer are left out; most checked first, then by language.

    >>> row = flag_agreement_rows({"de": (716, 99, 0, 0), "en": (10, 2, 2, 2)})[0]
    >>> row["language"], row["precision"], row["recall"], round(row["recall_high"], 4)
    ('de', None, 0.0, 0.0374)
    """
    rows = []
    for language, (checked, flagged, detected, both) in sorted(
        counts.items(), key=lambda item: (-item[1][0], item[0])
    ):
        if checked <= 0:
            continue
        p_low, p_high = wilson(both, detected) if detected else (None, None)
        r_low, r_high = wilson(both, flagged) if flagged else (None, None)
        rows.append({"language": language, "checked": int(checked), "flagged": int(flagged),
                     "detected": int(detected), "both": int(both),
                     "precision": both / detected if detected else None,
                     "precision_low": p_low, "precision_high": p_high,
                     "recall": both / flagged if flagged else None,
                     "recall_low": r_low, "recall_high": r_high,
                     "few": flagged < min_n})  # fmt: skip
    return rows


def flag_agreement_text(rows: Sequence[Mapping[str, Any]], min_n: int = FEW,
                        reader: str = "the phrase patterns") -> str | None:  # fmt: skip
    """The rows of :func:`flag_agreement_rows` in one sentence, ``None`` without rows: per
    language ``reader``'s (what read the texts: the phrase patterns, else the running
    detector's :data:`~service.refusals.detector.READER_NAMES` entry) precision and recall
    against ``answer.refused`` with counts and Wilson 95 % intervals; a language with fewer
    than ``min_n`` flagged refusals is "too few flagged refusals to measure recall".

    >>> rows = flag_agreement_rows({"de": (716, 99, 0, 0), "en": (5, 1, 1, 1)})
    >>> print(flag_agreement_text(rows))  # doctest: +NORMALIZE_WHITESPACE
    the phrase patterns against answer.refused (the answers that set it and have a text;
    Wilson 95 %): de recall 0/99 0.000 [0.000, 0.037], precision none read as refusals (716
    answers); en precision 1/1 1.000 [0.207, 1.000], recall 1/1 (too few flagged refusals
    to measure recall: fewer than 10) (5 answers)
    """
    if not rows:
        return None

    def ratio(x: int, n: int, low: float | None, high: float | None) -> str:
        return f"{x}/{n} {x / n:.3f} [{low:.3f}, {high:.3f}]"

    parts = []
    for r in rows:
        precision = "precision none read as refusals"
        if r["detected"]:
            precision = "precision " + ratio(
                r["both"], r["detected"], r["precision_low"], r["precision_high"]
            )
        if r["few"]:
            recall = (f"recall {r['both']}/{r['flagged']} (too few flagged refusals to measure "
                      f"recall: fewer than {min_n})")  # fmt: skip
        else:
            recall = f"recall {ratio(r['both'], r['flagged'], r['recall_low'], r['recall_high'])}"
        first, second = (recall, precision) if not r["detected"] else (precision, recall)
        parts.append(f"{r['language']} {first}, {second} ({r['checked']} answers)")
    return (f"{reader} against answer.refused (the answers that set it and have a "
            "text; Wilson 95 %): " + "; ".join(parts))  # fmt: skip


def flag_agreement_brief(rows: Sequence[Mapping[str, Any]]) -> str | None:
    """The rows of :func:`flag_agreement_rows` summed over languages, in a few words for a
    headline (the status page's refusals row; :func:`flag_agreement_text` keeps the
    per-language counts and intervals): ``exact`` when the text reader read as refusals the
    very answers ``answer.refused`` flags (``both == flagged == detected``, at least one),
    else the pooled recall ``both / flagged`` and precision ``both / detected`` as counts.
    Exact pooled is exact in every language (each language's ``both`` is at most its
    ``flagged`` and its ``detected``). ``None`` without rows (no answer sets the flag).

    >>> rows = flag_agreement_rows({"en": (565, 117, 117, 117), "ru": (211, 7, 7, 7)})
    >>> print(flag_agreement_brief(rows))
    read from the text: exact against answer.refused (all 124 flagged refusals and no \
other, on the 776 answers that set it)
    >>> print(flag_agreement_brief(flag_agreement_rows({"de": (716, 99, 3, 0)})))
    read from the text against answer.refused: recall 0/99, precision 0/3 (on the 716 \
answers that set it)
    >>> print(flag_agreement_brief(flag_agreement_rows({"de": (20, 0, 0, 0)})))
    read from the text against answer.refused: no refusal flagged nor read (on the 20 \
answers that set it)
    """
    if not rows:
        return None
    checked = sum(int(r["checked"]) for r in rows)
    flagged = sum(int(r["flagged"]) for r in rows)
    detected = sum(int(r["detected"]) for r in rows)
    both = sum(int(r["both"]) for r in rows)
    on = f"on the {checked} answers that set it"
    if flagged and both == flagged == detected:
        return (f"read from the text: exact against answer.refused (all {flagged} flagged "
                f"refusals and no other, {on})")  # fmt: skip
    if not flagged and not detected:
        return f"read from the text against answer.refused: no refusal flagged nor read ({on})"
    recall = f"recall {both}/{flagged}" if flagged else "no refusal flagged"
    precision = f"precision {both}/{detected}" if detected else "none read as refusals"
    return f"read from the text against answer.refused: {recall}, {precision} ({on})"
