"""What narrowed language candidates hide, in words: the start-up notice naming the languages
``analytics.language.candidates`` leaves out, and the reports' account of the live questions
that read as one of them.

With ``candidates: [en, de]`` a Spanish question is labelled ``en`` (or ``und``): the language
shares, the language drift and everything per language count it there, and nothing else
tells. :class:`~service.language.detector.LanguageDetector` knows which languages its
candidates leave out (:attr:`~service.language.detector.LanguageDetector.excluded`) and
whether a question reads as one (:meth:`~service.language.detector.LanguageDetector.\
excluded_language`); the language stage counts those questions. This module says so:
:func:`candidates_notice` at start, :func:`excluded_report` (the JSON reports'
``analytics.language_candidates``) and :func:`excluded_text` (the text and HTML reports).

The language figures are called unreliable when at least :data:`MATERIAL_SHARE` of the
judged questions read as a left-out language, once at least ``min_n`` questions were judged
(``analytics.quality_min_class``, the rule the detectors' quality figures follow): below it a
share is no measurement.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MATERIAL_SHARE", "candidates_notice", "excluded_report", "excluded_text"]

#: Share of the judged questions reading as a left-out language from which the language
#: figures are unreliable.
MATERIAL_SHARE = 0.05
#: Left-out languages named in a sentence, most frequent first (the JSON has them all).
NAMED = 3


def candidates_notice(candidates: Sequence[str], excluded: Sequence[str]) -> str | None:
    """The start-up line when the candidates leave languages out, else ``None``.

    Args:
        candidates: the detector's candidates (``analytics.language.candidates`` plus the
            gold set's languages).
        excluded: the languages they leave out
            (:attr:`~service.language.detector.LanguageDetector.excluded`).

    >>> print(candidates_notice(["en", "de"], ["es", "fr"]))
    ... # doctest: +NORMALIZE_WHITESPACE
    the language candidates (analytics.language.candidates plus the gold set's languages, if any:
    en, de) leave out 2 languages the default candidates tell apart: es, fr. A question in one of
    them is labelled as a candidate written in its script, or und, so the language shares and
    language drift count it there; the reports count the live questions that read as a left-out
    language (analytics.language_candidates) and say when that makes the language figures
    unreliable. Remove analytics.language.candidates to use the defaults, or add the languages your
    users write
    >>> candidates_notice(["en"], []) is None
    True
    """
    if not excluded:
        return None
    return (
        "the language candidates (analytics.language.candidates plus the gold set's "
        f"languages, if any: {', '.join(candidates)}) leave out {len(excluded)} "
        f"language{'s' if len(excluded) != 1 else ''} the default candidates tell apart: "
        f"{', '.join(excluded)}. A question in one of them is labelled as a candidate written "
        "in its script, or und, so the language shares and language drift count it there; "
        "the reports count the live questions that read as a left-out language "
        "(analytics.language_candidates) and say when that makes the language figures "
        "unreliable. Remove analytics.language.candidates to use the defaults, or add the "
        "languages your users write"
    )


def excluded_report(
    candidates: Sequence[str],
    excluded: Sequence[str],
    judged: int,
    by_language: Mapping[str, int],
    min_n: int,
) -> dict[str, Any] | None:
    """The JSON reports' ``analytics.language_candidates``, ``None`` when the candidates
    leave nothing out.

    Args:
        candidates: the detector's candidates (configured plus the gold set's languages).
        excluded: the languages they leave out.
        judged: live questions judged for a left-out language (every question since the
            first start under these candidates).
        by_language: of those, the questions reading as each left-out language.
        min_n: fewest judged questions for a share to count (``analytics.quality_min_class``).

    Returns:
        ``{"candidates", "left_out", "judged", "excluded", "share", "by_language" (most
        first), "min_n", "material_share", "unreliable"}``: ``share`` is ``excluded /
        judged`` (``None`` with nothing judged); ``unreliable`` the sentence saying the
        language figures are unreliable (at least :data:`MATERIAL_SHARE` of at least
        ``min_n`` questions), else ``None``.

    >>> report = excluded_report(["en", "de"], ["es", "hi-Latn"], 100, {"es": 30, "hi-Latn": 7},
    ...                          min_n=10)
    >>> report["excluded"], report["share"]
    (37, 0.37)
    >>> print(report["unreliable"])  # doctest: +NORMALIZE_WHITESPACE
    the language figures are unreliable: analytics.language.candidates excludes languages
    seen in traffic — 37 of 100 questions (37.0%) read as es (30) or hi-Latn (7) and were
    labelled en, de or und; add es, hi-Latn to analytics.language.candidates, or remove the
    setting to use the defaults
    >>> excluded_report(["en", "de"], ["es"], 9, {"es": 9}, min_n=10)["unreliable"] is None
    True
    """
    if not excluded:
        return None
    ranked = dict(sorted(((lang, n) for lang, n in by_language.items() if n > 0),
                         key=lambda item: (-item[1], item[0])))  # fmt: skip
    count = sum(ranked.values())
    share = count / judged if judged else None
    unreliable = None
    if share is not None and judged >= min_n and share >= MATERIAL_SHARE:
        named = list(ranked.items())[:NAMED]
        seen = _or([f"{lang} ({n})" for lang, n in named])
        more = len(ranked) - len(named)
        seen += f" and {more} more" if more else ""
        unreliable = (
            "the language figures are unreliable: analytics.language.candidates excludes "
            f"languages seen in traffic — {count} of {judged} questions ({share:.1%}) read "
            f"as {seen} and were labelled {_or([*candidates, 'und'])}; add "
            f"{', '.join(ranked)} to analytics.language.candidates, or remove the setting to "
            "use the defaults"
        )
    return {
        "candidates": list(candidates),
        "left_out": list(excluded),
        "judged": judged,
        "excluded": count,
        "share": share,
        "by_language": ranked,
        "min_n": min_n,
        "material_share": MATERIAL_SHARE,
        "unreliable": unreliable,
    }


def excluded_text(report: Mapping[str, Any] | None) -> str | None:
    """One line for the text and HTML reports from :func:`excluded_report` (``None``: the
    candidates leave nothing out); its ``unreliable`` sentence when there is one.

    >>> print(excluded_text(excluded_report(["en"], ["es", "fr"], 3610, {"es": 2}, 10)))
    ... # doctest: +NORMALIZE_WHITESPACE
    analytics.language.candidates leaves out 2 languages (es, fr): 2 of 3610 questions (0.1%)
    read as one of them (es 2), under the 5% at which the language figures are unreliable
    >>> print(excluded_text(excluded_report(["en"], ["es"], 4, {"es": 2}, 10)))
    ... # doctest: +NORMALIZE_WHITESPACE
    analytics.language.candidates leaves out 1 language (es): 2 of 4 questions read as it
    (es 2); too few questions to judge (fewer than 10, analytics.quality_min_class)
    """
    if report is None:
        return None
    if report.get("unreliable"):
        return str(report["unreliable"])
    left_out = report["left_out"]
    one = len(left_out) == 1
    head = (f"analytics.language.candidates leaves out {len(left_out)} "
            f"language{'' if one else 's'} ({', '.join(left_out)})")  # fmt: skip
    judged = report["judged"]
    if not judged:
        return f"{head}: no question judged yet"
    counts = ", ".join(f"{lang} {n}" for lang, n in report["by_language"].items())
    which = "it" if one else "one of them"
    if judged < report["min_n"]:
        return (f"{head}: {report['excluded']} of {judged} questions read as {which}"
                f"{f' ({counts})' if counts else ''}; too few questions to judge (fewer than "
                f"{report['min_n']}, analytics.quality_min_class)")  # fmt: skip
    floor = f"{report['material_share']:.0%}"
    return (f"{head}: {report['excluded']} of {judged} questions ({report['share']:.1%}) read "
            f"as {which}{f' ({counts})' if counts else ''}, under the {floor} at which the "
            "language figures are unreliable")  # fmt: skip


def _or(items: Sequence[str]) -> str:
    """``a``, ``a or b``, ``a, b or c``."""
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} or {items[-1]}"
