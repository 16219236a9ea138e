"""How far the language stage's labels can be trusted on *this* site's questions: its
agreement with the gold set's own ``language`` labels.

The live language counts, the language drift alarms and the off-corpus rule by language all
rest on :class:`~service.language.detector.LanguageDetector`'s labels. Its accuracy on
XQuAD (``tests/service/test_language_accuracy.py``) says little about a site whose questions
are two words of Hinglish; the gold set's labelled rows are that site's own questions, so the
detector — configured exactly as for live traffic (the gold set's languages as candidates
and prior) — is measured on them: the share of labelled rows it labels as their label
(both folded by :func:`~service.language.tags.language_key`, so ``en-US`` agrees with
``en``), with a Wilson 95 % interval (Wilson 1927), per gold-set language, and the
confusions (``de → en``). Rows labelled ``und`` are not counted (no language to agree on).

The measurement is optimistic in one way: the detector's prior for questions with too
little evidence is the gold set's own language mix, which these rows make. It is the prior
live questions get too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from service.drift.stats_tests import wilson_interval
from service.language.detector import UNDETERMINED
from service.language.tags import language_key

__all__ = ["LanguageAgreement", "agreement_text", "language_agreement"]


@dataclass(frozen=True)
class LanguageAgreement:
    """The language stage's agreement with the gold set's labels.

    Attributes:
        n: labelled gold rows measured on (``und`` labels left out), ≥ 0.
        agree: rows the detector labels as their label, 0 ≤ agree ≤ n.
        low, high: Wilson 95 % interval of ``agree / n``, in [0, 1] (``(0, 1)`` when n = 0).
        by_language: ``{label: (n, agree)}`` per folded gold label, most rows first.
        confusions: ``{"label → detected": rows}``, most first.
    """

    n: int
    agree: int
    low: float
    high: float
    by_language: dict[str, tuple[int, int]] = field(default_factory=dict)
    confusions: dict[str, int] = field(default_factory=dict)

    @property
    def share(self) -> float | None:
        """``agree / n`` in [0, 1], ``None`` when no row was measured."""
        return self.agree / self.n if self.n else None

    def to_json(self) -> dict[str, Any]:
        """The JSON report's ``language_quality``: ``n``, ``agree``, ``share``, ``low``,
        ``high``, ``by_language`` (``{label: {"n", "agree"}}``) and ``confusions``."""
        return {
            "n": self.n,
            "agree": self.agree,
            "share": self.share,
            "low": self.low,
            "high": self.high,
            "by_language": {k: {"n": n, "agree": a} for k, (n, a) in self.by_language.items()},
            "confusions": dict(self.confusions),
        }


def language_agreement(labels: Sequence[str | None], detected: Sequence[str]) -> LanguageAgreement:
    """Agreement of ``detected`` (the detector's labels) with the gold ``labels``, pairwise.

    Args:
        labels: each gold row's ``language`` (``None`` or ``und``: not counted).
        detected: the detector's label of each row's question, same length.

    Raises:
        ValueError: the lengths differ.

    >>> q = language_agreement(["en", "en-GB", "de", "de", None, "und"],
    ...                        ["en", "en", "de", "en", "fr", "en"])
    >>> q.n, q.agree, q.by_language, q.confusions
    (4, 3, {'en': (2, 2), 'de': (2, 1)}, {'de → en': 1})
    >>> round(q.low, 3), round(q.high, 3)
    (0.301, 0.954)
    """
    if len(labels) != len(detected):
        raise ValueError(f"{len(labels)} labels for {len(detected)} detected languages")
    rows: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    confusions: Counter[str] = Counter()
    for label, found in zip(labels, detected, strict=True):
        if not label:
            continue
        key = language_key(label)
        if key == UNDETERMINED:
            continue
        rows[key] += 1
        got = language_key(found)
        if got == key:
            agreed[key] += 1
        else:
            confusions[f"{key} → {got}"] += 1
    n, agree = sum(rows.values()), sum(agreed.values())
    low, high = wilson_interval(agree, n)
    return LanguageAgreement(
        n=n,
        agree=agree,
        low=float(low),
        high=float(high),
        by_language={k: (m, agreed[k]) for k, m in rows.most_common()},
        confusions=dict(confusions.most_common()),
    )


def agreement_text(quality: dict[str, Any] | None, live: Iterable[str] = (),
                   min_rows: int = 10) -> str:  # fmt: skip
    """The report's sentence for a :meth:`LanguageAgreement.to_json` (or why there is none);
    ``live``: the live traffic's languages, those without a labelled gold question named as
    not measured (``und`` and ``other`` are no language). The languages with fewer than
    ``min_rows`` labelled rows (``analytics.quality_min_class``, the rule of the topic
    labels' line, :func:`service.topics.quality.agreement_text`) are named as too few to
    measure language id in: trial 45 read "hi-Latn 2/2, hi 2/2" beside a topic line that
    called the same 2 rows too few (2 of 2 agreeing: Wilson 95 % interval [34.2 %, 100 %]).

    >>> print(agreement_text({"n": 50, "agree": 48, "share": 0.96, "low": 0.865, "high": 0.989,
    ...                       "by_language": {"en": {"n": 36, "agree": 36},
    ...                                       "de": {"n": 14, "agree": 12}},
    ...                       "confusions": {"de → en": 2}}))  # doctest: +NORMALIZE_WHITESPACE
    language id agrees with 48 of 50 labelled gold questions (96.0% [86.5%, 98.9%]): en 36/36,
    de 12/14; de → en 2
    >>> print(agreement_text({"n": 55, "agree": 55, "share": 1.0, "low": 0.935, "high": 1.0,
    ...                       "by_language": {"en": {"n": 51, "agree": 51},
    ...                                       "hi-Latn": {"n": 2, "agree": 2},
    ...                                       "hi": {"n": 2, "agree": 2}}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    language id agrees with 55 of 55 labelled gold questions (100.0% [93.5%, 100.0%]): en 51/51,
    hi-Latn 2/2, hi 2/2 (hi-Latn, hi: fewer than 10 labelled rows, too few to measure language
    id in)
    >>> agreement_text({"n": 0})
    'language id not measured: no gold question has a language label'
    >>> agreement_text({"n": 2, "agree": 2, "share": 1.0, "low": 0.342, "high": 1.0,
    ...                 "by_language": {"en": {"n": 2, "agree": 2}}}, ["en", "de", "und", "es"])
    ... # doctest: +ELLIPSIS
    'language id agrees with 2 of 2 ... en 2/2 (en: fewer than 10 ...); not measured on de, ...'
    """
    if not quality or not quality.get("n"):
        return "language id not measured: no gold question has a language label"
    per = ", ".join(f"{k} {v['agree']}/{v['n']}" for k, v in quality["by_language"].items())
    few = [k for k, v in quality["by_language"].items() if v["n"] < min_rows]
    if few:
        per += (f" ({', '.join(few)}: fewer than {min_rows} labelled rows, too few to measure "
                "language id in)")  # fmt: skip
    text = (f"language id agrees with {quality['agree']} of {quality['n']} labelled gold "
            f"questions ({quality['share']:.1%} [{quality['low']:.1%}, {quality['high']:.1%}]):"
            f" {per}")  # fmt: skip
    if quality.get("confusions"):
        text += "; " + ", ".join(f"{k} {n}" for k, n in quality["confusions"].items())
    known = {*quality["by_language"], UNDETERMINED, "other"}
    unmeasured = [lang for lang in dict.fromkeys(live) if lang not in known]
    if unmeasured:
        text += f"; not measured on {', '.join(unmeasured)} (no labelled gold question)"
    return text
