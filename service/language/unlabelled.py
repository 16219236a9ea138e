"""Languages of live traffic without their own metric label, worth naming.

The ``language`` label set of the metrics is fixed at start (the same on every replica, so
their counters add up: :class:`~service.language.detector.LanguageLabeler`), so a language
outside it — not in the gold set, ``analytics.language_labels`` nor the built-in list — is
counted and exported as ``language="other"`` however much traffic it has; its coverage gap
too (``goldwatch_coverage_gap_ratio{category="other"}``). This module names such a language
once it is worth naming, with the setting that gives it a label.

The rule: a language without its own label is named when at least
:data:`UNLABELLED_MIN_COUNT` (10) live questions read as it and the 95 % Wilson (1927) lower
bound of its share of all live questions (``und`` included) is at least
:data:`UNLABELLED_MIN_SHARE` (2 points). Every gold-set language has its own label, so a
language without one has a gold share of 0 and this is the coverage-gap rule of
:mod:`service.coverage` (``L − 0 ≥ 0.02``; ``p ≥ 2 × 0`` always holds) — a language named here
is one the drift report lists as a coverage gap — plus a floor of 10 questions, so one
question at start names nothing. It needs no gold set.

>>> from service.language.detector import LanguageLabeler
>>> labeler = LanguageLabeler(["en"], frequent=["es"])
>>> [(u["language"], u["n"]) for u in unlabelled_languages({"en": 900, "ru": 89, "es": 11},
...                                                        labeler)]
[('ru', 89)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from typing_extensions import TypedDict  # pydantic (the API models) needs it on < 3.12

from service.coverage import Z95, wilson_lower
from service.language.detector import OTHER, UNDETERMINED, LanguageLabeler

__all__ = [
    "UNLABELLED_MIN_COUNT",
    "UNLABELLED_MIN_SHARE",
    "UnlabelledLanguage",
    "unlabelled_fix",
    "unlabelled_languages",
    "unlabelled_text",
]

#: Fewest live questions of a language without its own label before it is named.
UNLABELLED_MIN_COUNT = 10
#: Least 95 % Wilson lower bound of its live share (the coverage-gap floor, 2 points).
UNLABELLED_MIN_SHARE = 0.02


class UnlabelledLanguage(TypedDict):
    """A language without its own metric label, worth naming: its live questions ``n``,
    their ``share`` of all live questions and that share's 95 % Wilson lower bound
    ``share_low`` (fractions in [0, 1])."""

    language: str
    n: int
    share: float
    share_low: float


def unlabelled_languages(
    counts: Mapping[str, int], labeler: LanguageLabeler | None
) -> list[UnlabelledLanguage]:
    """The languages of ``counts`` (live questions per detected language, ``und`` included)
    that ``labeler`` exports as ``other`` and the module's rule names, most questions first
    (ties by code); ``[]`` without a labeler or questions."""
    total = sum(counts.values())
    if labeler is None or total <= 0:
        return []
    named: list[UnlabelledLanguage] = []
    for language, n in counts.items():
        if language in (UNDETERMINED, OTHER) or labeler.label(language) != OTHER:
            continue
        if n < UNLABELLED_MIN_COUNT:
            continue
        low = wilson_lower(n, total, Z95)
        if low >= UNLABELLED_MIN_SHARE:
            named.append({"language": language, "n": int(n), "share": n / total,
                          "share_low": low})  # fmt: skip
    return sorted(named, key=lambda u: (-u["n"], u["language"]))


def unlabelled_fix(languages: Sequence[str], labeler: LanguageLabeler) -> str:
    """The setting that labels ``languages``: ``"analytics.language_labels: [uk, ru]"`` (the
    ones configured first), with ``"analytics.language_label_limit: 18"`` too when the gold
    set's languages and the configured ones would not leave room within the limit (the
    gold set's are all kept; the configured ones come before the built-in list)."""
    wanted = list(dict.fromkeys([*labeler.configured, *languages]))
    fix = f"analytics.language_labels: [{', '.join(wanted)}]"
    gold = [lang for lang in labeler.gold if lang not in (UNDETERMINED, OTHER)]
    needed = len(dict.fromkeys([*gold, *wanted]))
    if needed > labeler.limit:
        fix += f" and analytics.language_label_limit: {needed}"
    return fix


def unlabelled_text(named: Sequence[UnlabelledLanguage], labeler: LanguageLabeler) -> str | None:
    """The line naming ``named`` (:func:`unlabelled_languages`) and the fix, e.g. ``'ru 4.9%
    of the questions (89 of 1,803) is exported as language="other" on /metrics (its count
    and coverage gap): add it to analytics.language_labels (analytics.language_labels: [ru];
    the label set is fixed at start, so it takes a restart)'``; ``None`` when none is named.
    """
    if not named:
        return None
    total = round(named[0]["n"] / named[0]["share"])
    parts = [f"{u['language']} {u['share']:.1%} of the questions ({u['n']:,} of {total:,})"
             if i == 0 else f"{u['language']} {u['share']:.1%} ({u['n']:,})"
             for i, u in enumerate(named)]  # fmt: skip
    one = len(named) == 1
    fix = unlabelled_fix([u["language"] for u in named], labeler)
    return (f"{', '.join(parts)} {'is' if one else 'are'} exported as language=\"other\" on "
            f"/metrics ({'its count and coverage gap' if one else 'their counts and gaps'}): add "
            f"{'it' if one else 'them'} to analytics.language_labels ({fix}; the label set "
            "is fixed at start, so it takes a restart)")  # fmt: skip
