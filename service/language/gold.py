"""Which live questions a gold set's languages judge: the one rule the topic stage
(:class:`~service.topics.stage.TopicStage`) and the out-of-scope detector
(:class:`~service.refusals.stage.EmbeddingScopeStage`) share.

A detector measured on gold rows of some languages says nothing about a question in another
(trial 12, trial 16): such a question gets no topic and no out-of-scope verdict. Three readings
decide which language a question and a gold row are "in":

* a gold row's language and a live label are compared on :func:`~service.language.tags.language_key`
  (``en-US`` rows judge live ``en``);
* a gold key the language stage never labels a question with (a script it does not tell
  apart: ``zh-Hans``, ``en-Latn``) also judges the label it gives such a question, its primary
  language (``zh``), when that is a label (:data:`~service.language.detector.LABELS`); a
  script it tells apart (``hi-Latn``) stays apart (a review of session 35: 60 ``zh-Hans`` gold
  rows judged none of the live Chinese questions, labelled ``zh``);
* a question is in the left-out language it reads as (``language_excluded``: narrowed
  candidates, ``analytics.language.candidates``, label it a candidate it is not written in),
  else in its ``language`` (:func:`judged_language`).

``und`` (no language read) is no language: it is always judged, by its own script where that
matters.

>>> sorted(gold_language_keys(["en-US", "hi-Latn", "und"]))
['en', 'hi-Latn']
>>> gold_keys_by_label(["zh-Hans", "hi"])
{'zh-Hans': ('zh-Hans',), 'hi': ('hi',), 'zh': ('zh-Hans',)}
>>> judged_language({"language": "en", "language_excluded": "de"})
'de'
>>> lacks_gold("zh", gold_language_keys(["zh-Hans"])), lacks_gold("de", frozenset({"en"}))
(False, True)
>>> lacks_gold("und", frozenset({"en"})), lacks_gold("de", None)
(False, False)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from service.language.detector import LABELS, UNDETERMINED
from service.language.tags import language_key

__all__ = [
    "covered_now_text",
    "gold_keys_by_label",
    "gold_language_keys",
    "judged_language",
    "lacks_gold",
]


def gold_keys_by_label(tags: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The live language keys the gold rows' language ``tags`` judge, each with the gold keys
    (:func:`~service.language.tags.language_key` of the tags) it is judged by: every gold key
    by itself, and a key the language stage never gives (not in
    :data:`~service.language.detector.LABELS`) also under its primary language when that is
    a label and no gold row has it as its own key (then those rows judge it; several such
    keys, e.g. ``zh-Hans`` and ``zh-Hant``: all of them, in the order first seen). ``und``
    is left out. Never raises.

    Returns:
        ``{live key: (gold key, ...)}``, the gold keys first, each tuple non-empty.
    """
    keys = list(dict.fromkeys(k for k in map(language_key, tags) if k != UNDETERMINED))
    out: dict[str, tuple[str, ...]] = {key: (key,) for key in keys}
    folded: dict[str, list[str]] = {}
    for key in keys:
        primary = key.split("-")[0]
        if key not in LABELS and primary in LABELS and primary not in out:
            folded.setdefault(primary, []).append(key)
    out.update({primary: tuple(found) for primary, found in folded.items()})
    return out


def gold_language_keys(tags: Iterable[str]) -> frozenset[str]:
    """The live language keys the gold rows' language ``tags`` judge (the keys of
    :func:`gold_keys_by_label`; a mapping of tags to counts is read by its keys). Never
    raises."""
    return frozenset(gold_keys_by_label(tags))


def judged_language(notes: Mapping[str, Any]) -> Any:
    """The language a question is judged in by the gold-row rule: the left-out language it
    reads as (``language_excluded``: the language stage's candidates leave it out, so its
    ``language`` label is a candidate it is not written in), else its ``language`` (``None``
    without one). A review of session 35 found candidates ``[en]`` labelling German and
    Spanish questions ``en``: each was given a topic, the trial-16 false topic alarm back."""
    return notes.get("language_excluded") or notes.get("language")


def lacks_gold(language: Any, gold: frozenset[str] | None) -> bool:
    """Whether a question judged in ``language`` (:func:`judged_language`: a label, a tag, or
    ``None``) has no gold row in its language: its key
    (:func:`~service.language.tags.language_key`) is not in ``gold``
    (:func:`gold_language_keys`). ``und`` and ``None`` (no language read) are judged, and
    every language is when ``gold`` is ``None`` (no gold languages known). Never raises."""
    if gold is None:
        return False
    key = language_key(str(language or UNDETERMINED))
    return key != UNDETERMINED and key not in gold


def covered_now_text(covered: Mapping[str, int], what: str) -> str:
    """The questions ``what`` (e.g. ``"given no topic"``) earlier for want of a gold row in
    their language, in languages the current gold set judges (``covered``: ``{language:
    n}``, most first): the report's ``..._covered_now``; empty when none.

    >>> covered_now_text({"en": 617}, "given no topic")  # doctest: +NORMALIZE_WHITESPACE
    '617 questions given no topic earlier, when the gold set (or its language rule) had no
    row in their language (en 617): it has now, and questions in it are judged'
    """
    if not covered:
        return ""
    n = sum(covered.values())
    named = ", ".join(f"{k} {v}" for k, v in covered.items())
    return (f"{n} question{'s' if n != 1 else ''} {what} earlier, when the gold set (or its "
            f"language rule) had no row in their language ({named}): it has now, and "
            "questions in it are judged")  # fmt: skip
