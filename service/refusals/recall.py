"""The refusal count when the text reader is measured to miss refusals on this traffic.

An answer's refusal is decided by the event's own ``answer.refused`` when it sets it (exact)
and otherwise by the answer text's reader (the phrase patterns, or a refusal model:
:mod:`service.refusals.detector`). Where answers set the flag *and* have a text, the reader is
measured against the flag per language (``against_flag``:
:func:`~service.quality.by_language.flag_agreement_rows`). Trial 40 (MEDIUM 2): an app
flagged ~60 % of its answers; one of its three refusal wordings ("The articles do not cover
this.") was in no pattern; goldwatch measured the patterns' recall against the flag at 0.681
[0.652, 0.708] in English, yet the headline read "refusals: 1646/4000 (41.1%)" for a true
47.8 %, unmarked, and the method sentence said "not measured on this traffic".

:func:`text_recall` says what that measurement means for the count:

* **Lower bound.** When some language's reader-judged answers are read by a reader whose
  measured recall has a Wilson 95 % *upper* bound below :data:`RECALL_LEVEL` (0.95), the
  refusals it counted there are a lower bound (the flag's are exact). Why 0.95 and the upper
  bound: the patterns' recall on NoMIRACL's replies is 0.997–1.000, so a miss rate above 1
  in 20 is a defect of coverage (a wording the patterns lack), not noise; requiring the
  whole interval below 0.95 keeps a small sample from calling it (10 flagged refusals all
  read give an upper bound of 1.000; 19 of 20 read, 0.991) while trial 40's 737 of 1,083
  (upper bound 0.708) is called. A language with fewer than ``analytics.quality_min_class``
  flagged refusals has no measured recall (``few``) and never calls it.
* **Estimate.** Then, per language with a measured recall, the refusal rate among the
  answers the reader decided is estimated as Rogan and Gladen's (1978) prevalence under an
  imperfect test, ``q = (p − f) / (r − f)`` clipped to [0, 1]: ``p`` the share of those
  answers read as refusals, ``r`` the reader's recall and ``f`` its false-positive rate
  (answers the flag calls answered but the text reads as refused, of those the flag calls
  answered), both measured against the flag. Its interval is the smallest and largest ``q``
  over the box of the three Wilson intervals, each at ``1 − 0.05 / m`` (``m`` = 3 × the
  languages estimated: Bonferroni, so every interval holds at once with at least 95 %
  probability, and so does the sum over the languages); ``q`` is linear-fractional, so its
  extremes over the box are at its corners. The estimate assumes the measured recall and
  false-positive rate *transfer*: the reader misses the unflagged refusals as often as the
  flagged ones (the same wordings in the same proportions). That is not checked, so it is
  labelled an estimate, never put in place of the count, and the rate series and metrics
  keep counting what was detected.

The fix is said with it: set ``answer.refused`` on every refusal, or add the app's wordings
to ``analytics.refusal_patterns``, naming the wordings of flagged refusals the reader missed
most often (:func:`shown_wordings`) — only texts the PII stage scrubbed (none are kept without
it), normalised and cut to 80 characters, at most 256 distinct kept and 3 shown, each said
to at least 5 distinct askers (``user.id``; an event without one is its own asker): an app's
refusal template, not one asker's answer (a template that greets its asker by a name the
scrubber keeps, "Sorry Ravi, …", is said to one asker however often it is seen).

Reader-judged answers of a language without a measured recall, or whose recall gives no
estimate (it does not clear the false-positive rate, or no answer sets the flag false so that
rate is unmeasured), are counted as read (in the estimate too, which says how many and
why). Totals kept before the reader-judged answers were counted per language (session 40)
cannot be split by language: no estimate then, and it says why.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from itertools import product
from statistics import NormalDist
from typing import Any

from typing_extensions import TypedDict

from service.coverage import wilson_bounds

__all__ = [
    "INHERITED",
    "RECALL_LEVEL",
    "TextRecall",
    "estimate_rate",
    "missed_wording",
    "recall_lines",
    "shown_wordings",
    "text_recall",
]

#: A language's refusals read by the text reader are a lower bound when the reader's recall
#: against ``answer.refused`` has its Wilson 95 % upper bound below this (module docstring).
RECALL_LEVEL = 0.95

#: The joint confidence of the estimate's interval (Bonferroni over its Wilson intervals).
CONFIDENCE = 0.95

#: What to do about it, said with every lower bound.
FIX = ("to count them exactly, set answer.refused on every refusal, or add the app's own "
       "refusal wordings to analytics.refusal_patterns")  # fmt: skip


#: Said beside every figure counted from the detected refusals (the refusals of known
#: questions, over- and under-refusals) when the count is a lower bound.
INHERITED = ("counted from the refusals detected, which are a lower bound here (the text "
             "reader misses refusals on this traffic: see the refusal count): refused counts "
             "may be low, and answered ones may hold missed refusals")  # fmt: skip


#: The longest missed wording kept (characters; longer ones are cut and end in "…").
WORDING_CHARS = 80

#: The most distinct missed wordings the totals keep (a new one past it takes the place of the
#: oldest seen only once, or is not kept: an app's refusal templates repeat; free-text
#: refusals would each be counted once).
WORDINGS_KEPT = 256

#: A missed wording is shown only when it was seen at least this often (a template of the
#: app, not one asker's answer) ...
WORDING_MIN_SEEN = 5

#: ... and at most this many of them, most seen first.
WORDINGS_SHOWN = 3


def missed_wording(text: str) -> str:
    """A flagged refusal's text the reader did not read as one, as the totals keep it:
    NFKC-normalised, whitespace runs made one space, at most :data:`WORDING_CHARS`
    characters (cut with "…"). The text is already scrubbed of personal data (the PII stage
    runs first; without it no wording is kept: :class:`~service.refusals.stage.RefusalStage`).

    >>> missed_wording("  The articles\\n do not   cover this. ")
    'The articles do not cover this.'
    >>> len(missed_wording("x" * 200))
    80
    """
    text = " ".join(unicodedata.normalize("NFKC", text).split())
    return text if len(text) <= WORDING_CHARS else text[: WORDING_CHARS - 1] + "…"


def shown_wordings(kept: Mapping[str, int]) -> list[dict[str, Any]]:
    """The missed wordings worth showing: seen at least :data:`WORDING_MIN_SEEN` times, at
    most :data:`WORDINGS_SHOWN`, most seen first (then by text): ``[{"text", "seen"}]``.

    >>> shown_wordings({"The articles do not cover this.": 346, "Ask Ravi.": 1})
    [{'text': 'The articles do not cover this.', 'seen': 346}]
    """
    ranked = sorted(kept.items(), key=lambda item: (-item[1], item[0]))
    return [{"text": text, "seen": n} for text, n in ranked[:WORDINGS_SHOWN]
            if n >= WORDING_MIN_SEEN]  # fmt: skip


class TextRecall(TypedDict):
    """The text reader's measured recall applied to the count (:func:`text_recall`):
    ``level`` (:data:`RECALL_LEVEL`), ``lower_bound`` (some language's reader-judged refusals
    are a lower bound), ``below`` (those languages, most reader-judged answers first),
    ``estimate`` (``None``: no lower bound, or none can be made: ``no_estimate`` says why) —
    ``{"refused", "low", "high"}`` (refusals of all ``answers``, floats), ``"rate",
    "rate_low", "rate_high"`` (in [0, 1]), ``"answers"``, ``"languages"`` (per language
    estimated: ``{"language", "answers", "read_refused", "refused", "low", "high"}``: its
    reader-judged answers, the refusals read in them and the estimate of its refusals with
    bounds), ``"unmeasured_answers"`` (reader-judged answers of languages with no measured
    recall, or with one that gives no estimate, counted as read), ``"confidence"`` (0.95,
    joint) — ``missed``: the most frequent wordings of flagged refusals the reader did not
    read as refusals (:func:`shown_wordings`: scrubbed, normalised, short, each seen at least
    :data:`WORDING_MIN_SEEN` times; ``[]`` without a lower bound) — ``lines``: what it
    means in four short lines (``[]`` without a lower bound): the headline ("at least N of M
    answers refused (r %, a lower bound)"), the estimate with its interval or why there is
    none, why (the recall measured against ``answer.refused``) and the fix — and ``text``:
    those lines as one paragraph (``None`` without a lower bound)."""

    level: float
    lower_bound: bool
    below: list[str]
    estimate: dict[str, Any] | None
    no_estimate: str | None
    missed: list[dict[str, Any]]
    lines: list[str]
    text: str | None


def estimate_rate(
    read: tuple[int, int], flag_answered: tuple[int, int], flag_refused: tuple[int, int],
    z: float,
) -> tuple[float, float, float] | None:  # fmt: skip
    """Rogan–Gladen estimate of the refusal rate among answers the text reader decided, with
    the bounds over the box of Wilson intervals at ``z`` (module docstring).

    Args:
        read: ``(refusals read, answers read)``: ``p``.
        flag_answered: ``(read as refusals, answers the flag calls answered)``: ``f``.
        flag_refused: ``(read as refusals, answers the flag calls refused)``: ``r``.
        z: the normal quantile of each Wilson interval.

    Returns:
        ``(rate, low, high)`` in [0, 1], or ``None`` when the reader does not separate
        refusals from answers within the intervals (recall's lower bound ≤ the false-positive
        rate's upper bound) or a count is 0.

    >>> rate, low, high = estimate_rate((490, 1592), (0, 1171), (737, 1083), 2.638)
    >>> round(rate, 4)  # (490 / 1592) / (737 / 1083)
    0.4523
    >>> rate, low, high = estimate_rate((30, 100), (0, 50), (60, 100), 0.0)  # no intervals
    >>> rate, low, high
    (0.5, 0.5, 0.5)
    """
    (x, n), (fx, fn), (rx, rn) = read, flag_answered, flag_refused
    if n <= 0 or fn <= 0 or rn <= 0:
        return None
    boxes = [wilson_bounds(x, n, z), wilson_bounds(fx, fn, z), wilson_bounds(rx, rn, z)]
    if boxes[2][0] <= boxes[1][1]:  # recall's low end does not clear the false positives
        return None

    def q(p: float, f: float, r: float) -> float:
        return min(1.0, max(0.0, (p - f) / (r - f)))

    corners = [q(p, f, r) for p, f, r in product(*boxes)]
    return q(x / n, fx / fn, rx / rn), min(corners), max(corners)


def text_recall(
    against: Sequence[Mapping[str, Any]],
    read: Mapping[str, tuple[int, int]],
    read_total: int,
    answers: int,
    refused: int,
    reader: str = "the phrase patterns",
    level: float = RECALL_LEVEL,
    missed: Mapping[str, int] | None = None,
    read_refused: int | None = None,
) -> TextRecall | None:
    """What the reader's recall measured against ``answer.refused`` means for the count.

    Args:
        against: :func:`~service.quality.by_language.flag_agreement_rows` (``few``: recall
            not measured).
        read: per language label ``(answers the text reader decided, of those refused)``.
        read_total: the answers the text reader decided in all (``answers_by_patterns``);
            more than ``read`` holds: totals kept before session 40 (no estimate).
        answers: every answer judged; ``refused``: every refusal counted (≥ 0).
        reader: how the sentence names the reader.
        level: :data:`RECALL_LEVEL`.
        missed: the flagged refusals' wordings the reader missed, with how often
            (:func:`missed_wording`; ``None``: not kept); the fix names the most frequent.
        read_refused: the refusals the text reader read in all (``refusals_by_patterns``:
            with ``read_total``, what the sentence's "the N refusals they read in the M
            answers" says; ``None``: the sum over ``read``, which is less than that in totals
            kept before session 40).

    Returns:
        ``None`` when the reader decided no answer or no language has a measured recall;
        else :class:`TextRecall`.

    Trial 40's figures (en 490 refusals read in 1,592 answers; against the flag 737 of 1,083
    flagged refusals read, none of 1,171 flagged answers):

    >>> rows = [{"language": "en", "checked": 2254, "flagged": 1083, "detected": 737,
    ...          "both": 737, "recall": 737 / 1083, "recall_low": 0.652, "recall_high": 0.708,
    ...          "few": False}]
    >>> out = text_recall(rows, {"en": (1592, 490)}, 1592, 4000, 1646)
    >>> out["lower_bound"], out["below"], round(out["estimate"]["refused"])
    (True, ['en'], 1876)
    """
    if read_total <= 0:
        return None
    measured = {row["language"]: row for row in against
                if not row.get("few") and row.get("recall_high") is not None}  # fmt: skip
    if not measured:
        return None
    by_read = sorted(read.items(), key=lambda item: (-item[1][0], item[0]))
    below = [lang for lang, (n, _) in by_read
             if n > 0 and lang in measured and measured[lang]["recall_high"] < level]  # fmt: skip
    out: TextRecall = {"level": level, "lower_bound": bool(below), "below": below,
                       "estimate": None, "no_estimate": None, "missed": [],
                       "lines": [], "text": None}  # fmt: skip
    if not below:
        return out
    out["missed"] = shown = shown_wordings(missed or {})
    fix = f"fix: {FIX}"
    if shown:  # the app's own wordings the reader missed, most frequent first
        fix += "; missed most often: " + ", ".join(
            f'"{row["text"]}" ({row["seen"]} times)' for row in shown
        )
    recalls = ", ".join(
        f"{row['both']} of the {row['flagged']}{' refusals answer.refused flags' if i == 0 else ''}"
        f" in {lang} (recall {row['recall']:.3f} [{row['recall_low']:.3f}, "
        f"{row['recall_high']:.3f}])"
        for i, lang in enumerate(below) for row in [measured[lang]]
    )  # fmt: skip
    if read_refused is None:
        read_refused = sum(x for _, x in read.values())
    share = f"{refused / answers:.1%}, " if answers else ""
    headline = f"at least {refused} of {answers} answers refused ({share}a lower bound)"
    why = (f"why: {reader} read only {recalls}: Wilson 95 %, "
           f"{'each' if len(below) > 1 else 'its'} upper bound below {level:.2f}; so the "
           f"{read_refused} refusals they read in the {read_total} answers without "
           "answer.refused are a lower bound (answer.refused's own are exact)")  # fmt: skip
    if sum(n for n, _ in read.values()) < read_total:
        none = ("no estimate: the totals were kept before the answers the text reader decided "
                "were counted per language")  # fmt: skip
        out["no_estimate"] = none
        return _said(out, [headline, none, why, fix])
    estimated = [(lang, n, x) for lang, (n, x) in by_read if n > 0 and lang in measured]
    m = 3 * len(estimated)
    z = NormalDist().inv_cdf(1 - (1 - CONFIDENCE) / (2 * m))
    languages: list[dict[str, Any]] = []
    skipped: list[str] = []  # measured, but no estimate: why, per language
    for lang, n, x in estimated:
        row = measured[lang]
        answered = row["checked"] - row["flagged"]
        found = estimate_rate((x, n), (row["detected"] - row["both"], answered),
                              (row["both"], row["flagged"]), z)  # fmt: skip
        if found is None:
            skipped.append(f"in {lang} no answer sets answer.refused false, so the "
                           "false-positive rate is not measured" if answered <= 0
                           else f"in {lang} the recall's lower bound does not clear the "
                           "false-positive rate's upper bound")  # fmt: skip
            continue
        rate, low, high = found
        languages.append({"language": lang, "answers": n, "read_refused": x,
                          "refused": rate * n, "low": low * n, "high": high * n})  # fmt: skip
    done = {row["language"] for row in languages}
    unmeasured = sum(n for lang, (n, _) in read.items() if lang not in done)
    unseparated = sum(n for lang, n, _ in estimated if lang not in done)
    if not languages:
        out["no_estimate"] = none = f"no estimate: {'; '.join(skipped)}"
        return _said(out, [headline, none, why, fix])
    base = refused - sum(row["read_refused"] for row in languages)
    total = base + sum(row["refused"] for row in languages)
    low = base + sum(row["low"] for row in languages)
    high = base + sum(row["high"] for row in languages)
    estimate = {"refused": total, "low": low, "high": high, "answers": answers,
                "rate": total / answers, "rate_low": low / answers,
                "rate_high": high / answers, "languages": languages,
                "unmeasured_answers": unmeasured, "confidence": CONFIDENCE}  # fmt: skip
    out["estimate"] = estimate
    part = "".join(f"; {row['language']} {row['refused']:.0f} [{row['low']:.0f}, "
                   f"{row['high']:.0f}] of the {row['answers']} read" for row in languages
                   if len(languages) > 1)  # fmt: skip
    rest = ""
    if unmeasured - unseparated:
        rest = (f"; {unmeasured - unseparated} answers without answer.refused in languages "
                "with no measured recall counted as read")  # fmt: skip
    if unseparated:  # measured, yet no estimate there: counted as read, and why said
        rest += (f"; {unseparated} answers without answer.refused counted as read "
                 f"({'; '.join(skipped)})")  # fmt: skip
    said = (f"ESTIMATE, not a count: {total:.0f} [{low:.0f}, {high:.0f}] of {answers} answers "
            f"refused ({total / answers:.1%} [{low / answers:.1%}, {high / answers:.1%}], 95 % "
            f"jointly{part}), if {reader} miss unflagged refusals as often as flagged ones "
            f"(Rogan–Gladen, Bonferroni-adjusted Wilson intervals){rest}")  # fmt: skip
    return _said(out, [headline, said, why, fix])


def recall_lines(recall: Mapping[str, Any]) -> list[str]:
    """A :class:`TextRecall`'s lines; a report written before it had them (session 41) gives
    its paragraph as the one line (``[]`` without a lower bound).

    >>> recall_lines({"lines": ["at least 3 of 9 answers refused (33.3%, a lower bound)"]})
    ['at least 3 of 9 answers refused (33.3%, a lower bound)']
    >>> recall_lines({"text": "a lower bound: ..."})
    ['a lower bound: ...']
    """
    return list(recall.get("lines") or ([recall["text"]] if recall.get("text") else []))


def _said(out: TextRecall, lines: list[str]) -> TextRecall:
    """``out`` with its ``lines`` (headline, estimate or why none, why, fix) and ``text`` (the
    lines as one paragraph, each a sentence)."""
    out["lines"] = lines
    out["text"] = " ".join(f"{line[0].upper()}{line[1:]}." for line in lines)
    return out
