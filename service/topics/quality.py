"""How far a supervised topic model's labels can be trusted, per language: the held-out
agreement of its nearest-centroid predictions with the gold set's own ``topic`` labels.

The topic counts, the topic drift alarms and the gold side's like-for-like counts all rest on
the assignment of :class:`~service.topics.model.TopicModel`. With an English-first embedding
it is not equally good in every language (trial 14, XQuAD questions labelled by article:
held out, 18 of 28 English gold questions keep their topic, 0 of 12 Spanish ones; live,
Spanish questions got their article's topic 48 % of the time, English ones 74 %). Then a
change of the language mix alone moves the topic shares, and a topic alarm raised while the
language mix moves cannot be told from a language change.

The figure is each labelled gold row's prediction by a model fitted without it
(``cv_folds``-fold cross-validation, :func:`~service.topics.model._cross_validated`, every
label held out, even a small one), compared with its label: the share that agree, with a
Wilson 95 % interval (Wilson 1927), per language of the question (as the language stage
would detect it). An unsupervised model has no labels, so no such figure.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from service.coverage import wilson_bounds
from service.language.gold import covered_now_text
from service.topics.bounds import DEFAULT_MIN_KAPPA

__all__ = [
    "AGREEMENT_MARGIN",
    "DEFAULT_MIN_KAPPA",
    "agreement_text",
    "by_topic_text",
    "cohen_kappa",
    "kappa_interval",
    "kappa_of",
    "kappa_text",
    "kappa_uncalibrated",
    "language_bias",
    "near_chance_text",
    "no_gold_rows_text",
    "topic_agreement",
    "unshown_languages",
]

#: Why an unsupervised model has no agreement figure.
UNSUPERVISED = "unsupervised topics: no gold label to agree with"
#: Languages that are no language to compare (the detector's "undetermined" and the export's
#: bucket for the unnamed ones).
NO_LANGUAGE = frozenset({"und", "other"})


#: The normal quantile of a two-sided 95 % interval (scipy.stats.norm.ppf(0.975)).
_Z95 = 1.959963984540054


def topic_agreement(labels: Sequence[str], predicted: Sequence[str], languages: Sequence[str],
                    method: str = "") -> dict[str, Any]:  # fmt: skip
    """Agreement of held-out ``predicted`` topics with the gold ``labels``, overall and per
    language, as JSON.

    Args:
        labels: each labelled gold row's topic label.
        predicted: the held-out prediction of each row (same length).
        languages: each row's language (same length; ``und``: undetermined).
        method: how the predictions were made (shown with the figure).

    Returns:
        ``{"n", "agree", "share", "low", "high", "by_language": {language: {"n", "agree",
        "share", "low", "high"}}, "by_topic": {label: {"n", "agree", "share", "low", "high",
        "read_as_it", "read_as": {other label: rows}}}, "method"}``: ``n`` rows, ``agree`` of
        them predicted as labelled, ``share = agree / n`` in [0, 1] (``None`` when n = 0),
        ``low``/``high`` its Wilson 95 % interval; languages most rows first (ties by name).
        Per topic (labels most rows first, ties by name): ``read_as_it``, the rows of any
        label predicted as it (its column of the confusion matrix: more than ``n`` when
        the model reads other topics' questions as it, so its live share is likely
        over-counted; fewer, under-counted — the bias of classify-and-count, Forman 2008),
        and ``read_as``, where its own rows that disagree went (most first, ties by name).

    Raises:
        ValueError: the lengths differ.

    >>> q = topic_agreement(["a", "a", "b", "b", "a"], ["a", "b", "b", "b", "a"],
    ...                     ["en", "en", "en", "es", "es"])
    >>> q["n"], q["agree"], {g: (v["n"], v["agree"]) for g, v in q["by_language"].items()}
    (5, 4, {'en': (3, 2), 'es': (2, 2)})
    >>> {t: (v["n"], v["agree"], v["read_as_it"], v["read_as"]) for t, v in q["by_topic"].items()}
    {'a': (3, 2, 2, {'b': 1}), 'b': (2, 2, 3, {})}
    """
    if not len(labels) == len(predicted) == len(languages):
        raise ValueError(f"{len(labels)} labels, {len(predicted)} predictions and "
                         f"{len(languages)} languages")  # fmt: skip
    rows: Counter[str] = Counter()
    agreed: Counter[str] = Counter()
    labelled: Counter[str] = Counter()
    kept: Counter[str] = Counter()
    read_as_it: Counter[str] = Counter()
    went: dict[str, Counter[str]] = {}
    for label, guess, language in zip(labels, predicted, languages, strict=True):
        rows[language] += 1
        agreed[language] += int(label == guess)
        labelled[label] += 1
        read_as_it[guess] += 1
        if label == guess:
            kept[label] += 1
        else:
            went.setdefault(label, Counter())[guess] += 1
    order = sorted(rows, key=lambda g: (-rows[g], g))
    topics = sorted(labelled, key=lambda t: (-labelled[t], t))
    return {
        **_share(sum(agreed.values()), sum(rows.values())),
        "by_language": {g: _share(agreed[g], rows[g]) for g in order},
        "by_topic": {
            t: {
                **_share(kept[t], labelled[t]),
                "read_as_it": read_as_it[t],
                "read_as": dict(
                    sorted(went.get(t, Counter()).items(), key=lambda kv: (-kv[1], kv[0]))
                ),
            }
            for t in topics
        },  # fmt: skip
        "method": method,
    }


def cohen_kappa(labels: Sequence[str], predicted: Sequence[str]) -> tuple[float, float] | None:
    """Cohen's kappa of ``predicted`` against ``labels`` and its chance agreement:
    ``(kappa, p_e)``, or ``None`` when undefined (no row, or ``p_e = 1``: one category on
    both sides, the model never had to choose).

    ``kappa = (p_o − p_e) / (1 − p_e)`` (Cohen 1960, "A coefficient of agreement for nominal
    scales", Educational and Psychological Measurement 20(1):37–46), with ``p_o`` the share
    of rows where the two agree and ``p_e = Σ_c (n_c / N) · (m_c / N)`` the agreement two
    independent raters with the same marginals would reach by chance (``n_c`` rows labelled
    ``c``, ``m_c`` predicted ``c``, ``N`` rows). 1 is perfect agreement, 0 chance, below 0
    worse than chance. Unlike the raw share it does not reward a model for putting most rows
    in the largest topic (a gold set 80 % one topic and a model that reads everything as it:
    80 % agreement, kappa 0). sklearn's ``cohen_kappa_score`` gives the same number.

    >>> k, chance = cohen_kappa(["a", "a", "b", "b"], ["a", "b", "b", "b"])
    >>> round(k, 3), round(chance, 3)  # p_o .75, p_e (2·1 + 2·3) / 16 = .5
    (0.5, 0.5)
    >>> cohen_kappa(["a", "a"], ["a", "a"]) is None
    True
    """
    if len(labels) != len(predicted):
        raise ValueError(f"{len(labels)} labels and {len(predicted)} predictions")
    return _kappa(sum(a == b for a, b in zip(labels, predicted, strict=True)), len(labels),
                  Counter(labels), Counter(predicted))  # fmt: skip


def _kappa(agree: int, n: int, labelled: Mapping[str, int],
           read: Mapping[str, int]) -> tuple[float, float] | None:  # fmt: skip
    if not n:
        return None
    chance = sum(labelled[c] * read.get(c, 0) for c in labelled) / (n * n)
    if chance >= 1.0:
        return None
    return ((agree / n) - chance) / (1.0 - chance), chance


def kappa_of(quality: Mapping[str, Any] | None) -> tuple[float, float] | None:
    """:func:`cohen_kappa` of a :func:`topic_agreement`, from its counts: ``n``, ``agree``
    and per label its rows (``by_topic[c]["n"]``) and the rows predicted as it
    (``read_as_it``) — the two marginals, exact since a supervised model predicts only its
    labels. ``None`` without the figure (unsupervised, a model saved before ``by_topic``
    was measured, no rows) or when undefined.

    >>> kappa_of(topic_agreement(["a", "a", "b", "b"], ["a", "b", "b", "b"], ["en"] * 4))
    (0.5, 0.5)
    """
    by_topic = (quality or {}).get("by_topic")
    if not quality or not by_topic:
        return None
    return _kappa(int(quality["agree"]), int(quality["n"]),
                  {t: int(v["n"]) for t, v in by_topic.items()},
                  {t: int(v["read_as_it"]) for t, v in by_topic.items()})  # fmt: skip


def kappa_uncalibrated(quality: Mapping[str, Any] | None,
                       min_kappa: float = DEFAULT_MIN_KAPPA) -> str | None:  # fmt: skip
    """Why the topic assignment is too poor to act on, or ``None``: its held-out Cohen's
    kappa (:func:`kappa_of`) below ``min_kappa`` (``analytics.topics.min_kappa``). ``None``
    too without a kappa (an unsupervised model: no labels to measure it on; a model saved
    before it was measured; one topic): those keep their behaviour.

    >>> q = topic_agreement(["a"] * 20 + ["b"] * 24, ["a"] * 6 + ["b"] * 14 + ["a"] * 18
    ...                     + ["b"] * 6, ["en"] * 44)
    >>> print(kappa_uncalibrated(q))  # doctest: +NORMALIZE_WHITESPACE
    topic labels held out agree with 12 of 44 (27.3%), chance 49.6%, Cohen's kappa -0.44 < 0.4
    (analytics.topics.min_kappa): too low to act on
    >>> kappa_uncalibrated(q, min_kappa=-1.0) is None
    True
    """
    found = kappa_of(quality)
    if found is None or quality is None:
        return None
    kappa, chance = found
    if kappa >= min_kappa:
        return None
    return (f"topic labels held out agree with {quality['agree']} of {quality['n']} "
            f"({quality['share']:.1%}), chance {chance:.1%}, Cohen's kappa {kappa:.2f} < "
            f"{min_kappa:g} (analytics.topics.min_kappa): too low to act on")  # fmt: skip


def kappa_interval(kappa: float, chance: float, n: int) -> tuple[float, float]:
    """The 95 % interval of a held-out kappa on ``n`` (≥ 1) rows, ``(low, high)`` in
    [-1, 1]: ``kappa ± 1.96 · σ`` with Cohen's (1960) large-sample standard error
    ``σ = sqrt(p_o (1 − p_o) / n) / (1 − p_e)`` (``p_o = kappa (1 − p_e) + p_e``, the
    observed agreement; ``chance`` = ``p_e`` < 1). On the 30–60 rows of a small gold set
    σ is ~0.08: 0.455 on 59 rows (the demo's before the fiftieth session) is [0.31, 0.60]
    (a bootstrap of its 59 rows: [0.31, 0.59]), so the floor of 0.4 lies inside it; the
    demo's 0.524 on 61 rows now (fifty-first session) is [0.38, 0.67].

    >>> [round(b, 3) for b in kappa_interval(0.45496535796766746, 0.1292731973570813, 59)]
    [0.309, 0.601]
    """
    observed = kappa * (1.0 - chance) + chance
    sigma = math.sqrt(max(observed * (1.0 - observed), 0.0) / n) / (1.0 - chance)
    return max(-1.0, kappa - _Z95 * sigma), min(1.0, kappa + _Z95 * sigma)


def kappa_text(kappa: float | None, chance: float | None, min_kappa: float,
               n: int | None = None) -> str:  # fmt: skip
    """The reports' words for a held-out kappa (:func:`topic_quality_report
    <service.runtime.reports.topic_quality_report>`'s ``kappa``, ``chance`` and
    ``min_kappa``; ``n``, the rows it was measured on, adds its 95 % interval,
    :func:`kappa_interval`, and says when the floor lies inside it: the gate reads the
    point estimate, so a few gold rows more or less could move the verdict); ``""``
    without one.

    >>> kappa_text(0.455, 0.129, 0.4)
    "Cohen's kappa 0.46 (chance agreement 12.9%; floor 0.4, analytics.topics.min_kappa)"
    >>> print(kappa_text(0.45496535796766746, 0.1292731973570813, 0.4, 59))
    ... # doctest: +NORMALIZE_WHITESPACE
    Cohen's kappa 0.45 [0.31, 0.60] (95 % interval on 59 rows; chance agreement 12.9%; floor
    0.4, analytics.topics.min_kappa, inside the interval: the gate reads the point estimate,
    and a few labelled gold questions more or less could move it across)
    >>> kappa_text(None, None, 0.4)
    ''
    """
    if kappa is None or chance is None:
        return ""
    if not n:
        return (f"Cohen's kappa {kappa:.2f} (chance agreement {chance:.1%}; floor "
                f"{min_kappa:g}, analytics.topics.min_kappa)")  # fmt: skip
    low, high = kappa_interval(kappa, chance, n)
    inside = (", inside the interval: the gate reads the point estimate, and a few labelled "
              "gold questions more or less could move it across") if low < min_kappa <= high \
        else ""  # fmt: skip
    return (f"Cohen's kappa {kappa:.2f} [{low:.2f}, {high:.2f}] (95 % interval on {n} rows; "
            f"chance agreement {chance:.1%}; floor {min_kappa:g}, analytics.topics.min_kappa"
            f"{inside})")  # fmt: skip


def near_chance_text(quality: Mapping[str, Any] | None, chance: float | None,
                     min_rows: int = 10) -> str:  # fmt: skip
    """The languages whose held-out topic agreement is not shown above chance, for the line
    next to the topic shares; ``""`` when none (or no figure). A language with at least
    ``min_rows`` labelled rows (``analytics.quality_min_class``; ``und`` and ``other`` are no
    language) is named when the lower bound of its Wilson 95 % interval of agreement is at
    or below ``chance``, the whole gold set's chance agreement (:func:`kappa_of`; a
    language's own marginals may differ a little): the shares of its questions are the
    model's reading, however well the assignment does overall (trial 37: hi 1 of 22 held
    out). No gate: the overall kappa gates the topic dimension, and :func:`language_bias`
    already holds topic quiet while such a language's share moves.

    >>> q = topic_agreement(["a", "b"] * 22, ["a", "b"] * 11 + ["b", "a"] * 11,
    ...                     ["en"] * 22 + ["hi"] * 22)
    >>> print(near_chance_text(q, 0.5))  # doctest: +NORMALIZE_WHITESPACE
    topic labels held out in hi are not shown to agree better than chance (0 of 22, 0.0%
    [0.0%, 14.9%]; chance 50.0%): the topic shares of its questions are the model's reading,
    not facts
    """
    if not quality or chance is None:
        return ""
    weak = [(g, v) for g, v in quality.get("by_language", {}).items()
            if g not in NO_LANGUAGE and v["n"] >= min_rows and v["low"] <= chance]  # fmt: skip
    if not weak:
        return ""
    named = " and ".join(g for g, _ in weak)
    figures = ", ".join(
        (f"{g} " if len(weak) > 1 else "")
        + f"{v['agree']} of {v['n']}, {v['share']:.1%} [{v['low']:.1%}, {v['high']:.1%}]"
        for g, v in weak
    )
    its = "its" if len(weak) == 1 else "their"
    return (f"topic labels held out in {named} are not shown to agree better than chance "
            f"({figures}; chance {chance:.1%}): the topic shares of {its} questions are the "
            "model's reading, not facts")  # fmt: skip


def _share(agree: int, n: int) -> dict[str, Any]:
    low, high = wilson_bounds(agree, n)
    return {"n": n, "agree": agree, "share": agree / n if n else None, "low": low, "high": high}


def language_bias(quality: Mapping[str, Any] | None, min_rows: int = 10) -> str | None:
    """Why a change of the language mix alone would move the topic shares, or ``None``.

    Among the languages with at least ``min_rows`` labelled gold rows
    (``analytics.quality_min_class``; ``und`` and ``other`` are no language to compare), the
    one whose Wilson 95 % interval of held-out agreement has the highest lower bound and the
    one whose has the lowest upper bound are compared: when the first lower bound is above
    the second upper bound (some two languages' intervals do not overlap), the assignment is
    measurably better in one language than the other, and the reason names both; otherwise
    (fewer than two such languages, or every pair of intervals overlapping) ``None``. (Not
    the highest and lowest shares: a small language agreeing 10 of 10 has a wide interval
    and hid en 270 of 300 against es 6 of 10, a review found.)

    >>> q = topic_agreement(["a"] * 40, ["a"] * 18 + ["b"] * 10 + ["b"] * 12,
    ...                     ["en"] * 28 + ["es"] * 12)
    >>> print(language_bias(q))  # doctest: +NORMALIZE_WHITESPACE
    topic labels held out agree far less in es (0 of 12, 0.0% [0.0%, 24.2%]) than in en
    (18 of 28, 64.3% [45.8%, 79.3%]): a change of the language mix alone moves the topic shares
    >>> language_bias(q, min_rows=13) is None  # es has too few rows to tell
    True
    """
    if not quality:
        return None
    measured = [(g, v) for g, v in quality.get("by_language", {}).items()
                if v["n"] >= min_rows and g not in NO_LANGUAGE]  # fmt: skip
    if len(measured) < 2:
        return None
    best = max(measured, key=lambda item: item[1]["low"])
    worst = min(measured, key=lambda item: item[1]["high"])
    if best[0] == worst[0] or best[1]["low"] <= worst[1]["high"]:
        return None
    return (f"topic labels held out agree far less in {_of(*worst)} than in {_of(*best)}: a "
            "change of the language mix alone moves the topic shares")  # fmt: skip


#: How far below the best-measured language's held-out agreement another language's may be
#: and still count as about as good (:func:`unshown_languages`): 10 points.
AGREEMENT_MARGIN = 0.10


def unshown_languages(
    quality: Mapping[str, Any] | None, min_rows: int = 10, margin: float = AGREEMENT_MARGIN
) -> tuple[str | None, frozenset[str]]:
    """The languages with too few labelled gold rows to measure the topic assignment in
    (fewer than ``min_rows``, ``analytics.quality_min_class``) whose rows do not show it
    about as good as in the best-measured language either, and why: ``(reason,
    languages)``, ``(None, ∅)`` when none.

    The best-measured language is the one with the most labelled gold rows (ties: the first
    by name; ``und`` and ``other`` are no language). A language with 1 to ``min_rows − 1``
    labelled rows is *not shown* about as good when the lower bound of its Wilson 95 %
    interval of held-out agreement is below the best-measured language's share less
    ``margin`` — a one-sided non-inferiority check at margin ``margin`` (the interval must
    exclude "worse by more than the margin", as in non-inferiority trials). Few rows rarely
    show it: 5 of 5 agreeing is [56.6 %, 100 %] (trial 17: "es 5 of 5" beside en 38 of 47,
    80.9 %; its live Spanish questions got their topic at most 59 % of the time, and the day
    Spanish rose raised a topic alarm: "rising chemistry, sports"). A language with at least
    ``min_rows`` rows is measured: :func:`language_bias` judges it (two languages measurably
    apart: any language change confounds topic). The languages named here confound topic
    only while *their* share moves (:meth:`DriftStage.confound
    <service.drift.stage.DriftStage.confound>`'s ``categories``).

    >>> unshown_languages(topic_agreement(["a"] * 47, ["a"] * 38 + ["b"] * 9, ["en"] * 47))
    (None, frozenset())
    >>> q = topic_agreement(["a"] * 52, ["a"] * 38 + ["b"] * 9 + ["a"] * 5,
    ...                     ["en"] * 47 + ["es"] * 5)
    >>> why, weak = unshown_languages(q)
    >>> sorted(weak)
    ['es']
    >>> print(why)  # doctest: +NORMALIZE_WHITESPACE
    topic labels held out are not shown to agree about as well in es (5 of 5, 100.0% [56.6%,
    100.0%]) as in en (38 of 47, 80.9% [67.5%, 89.6%]): its Wilson lower bound is under
    70.9% (en's share less 10 points), so a change of its share alone may move the topic
    shares
    """
    if not quality:
        return None, frozenset()
    by = {g: v for g, v in quality.get("by_language", {}).items()
          if g not in NO_LANGUAGE and v["n"]}  # fmt: skip
    if len(by) < 2:
        return None, frozenset()
    best = min(by, key=lambda g: (-by[g]["n"], g))
    floor = by[best]["share"] - margin
    weak = sorted(g for g, v in by.items()
                  if g != best and v["n"] < min_rows and v["low"] < floor)  # fmt: skip
    if not weak:
        return None, frozenset()
    named = ", ".join(_of(g, by[g]) for g in weak)
    its = "its Wilson lower bound is" if len(weak) == 1 else "their Wilson lower bounds are"
    share = "its share" if len(weak) == 1 else "their shares"
    return (f"topic labels held out are not shown to agree about as well in {named} as in "
            f"{_of(best, by[best])}: {its} under {floor:.1%} ({best}'s share less "
            f"{margin * 100:.0f} points), so a change of {share} alone may move the topic "
            "shares", frozenset(weak))  # fmt: skip


def _of(language: str, v: Mapping[str, Any]) -> str:
    share = f"{v['share']:.1%} [{v['low']:.1%}, {v['high']:.1%}]"
    return f"{language} ({v['agree']} of {v['n']}, {share})"


def agreement_text(quality: Mapping[str, Any] | None, supervised: bool = True,
                   min_rows: int = 10) -> str:  # fmt: skip
    """The reports' sentence for a :func:`topic_agreement` (or why there is none). The
    languages with fewer than ``min_rows`` labelled rows (``analytics.quality_min_class``;
    ``und`` and ``other`` are no language) are named as too few to measure the assignment
    in: trial 17's "es 5 of 5" read as perfect, while its live Spanish questions got their
    topic at most 59 % of the time (5 rows of 5 agreeing: Wilson 95 % interval [56.6 %,
    100 %]).

    >>> q = topic_agreement(["a"] * 5, ["a", "a", "b", "a", "b"], ["en", "en", "en", "es", "es"])
    >>> print(agreement_text(q, min_rows=3))  # doctest: +NORMALIZE_WHITESPACE
    topic labels held out agree with 3 of 5 labelled gold questions (60.0% [23.1%, 88.2%]):
    en 2 of 3, es 1 of 2 (es: fewer than 3 labelled rows, too few to measure the assignment in)
    >>> agreement_text(None, supervised=False)
    'topic labels: no agreement figure (unsupervised topics: no gold label to agree with)'
    """
    if not supervised:
        return f"topic labels: no agreement figure ({UNSUPERVISED})"
    if not quality or not quality.get("n"):
        return ("topic labels: no agreement figure (not measured: a model saved before it was "
                "or no labelled gold question)")  # fmt: skip
    by_language = quality["by_language"]
    per = ", ".join(f"{g} {v['agree']} of {v['n']}" for g, v in by_language.items())
    few = [g for g, v in by_language.items() if v["n"] < min_rows and g not in NO_LANGUAGE]
    if few:
        per += (f" ({', '.join(few)}: fewer than {min_rows} labelled rows, too few to measure "
                "the assignment in)")  # fmt: skip
    text = (f"topic labels held out agree with {quality['agree']} of {quality['n']} labelled "
            f"gold questions ({quality['share']:.1%} [{quality['low']:.1%}, "
            f"{quality['high']:.1%}])")  # fmt: skip
    return f"{text}: {per}" if per else text


def by_topic_text(quality: Mapping[str, Any] | None, limit: int | None = None) -> str:
    """The reports' line of :func:`topic_agreement`'s ``by_topic``: per topic, its labelled
    gold rows that keep their topic when held out (and where the others went), and the rows
    of any topic read as it; ``""`` without the figure (an unsupervised model, or one fitted
    before it was measured). A topic more rows are read as than it has is likely
    over-counted in the live shares, one fewer under-counted (trial 19: business 8.5 % of
    the live questions against 14.6 % sent, while the overall agreement, 81 %, said
    nothing of it). Counts only: at a few rows a topic, a difference of one or two is noise.
    ``limit``: at most this many topics, those with the most labelled rows (the text report's
    6, as its shares line), the rest counted as "N more in the JSON report"; ``None``: all.

    >>> q = topic_agreement(["tech"] * 4 + ["business"] * 3 + ["sport"] * 2,
    ...                     ["tech"] * 4 + ["tech", "tech", "business"] + ["sport"] * 2,
    ...                     ["en"] * 9)
    >>> print(by_topic_text(q))  # doctest: +NORMALIZE_WHITESPACE
    by topic, held out: tech 4 of 4 kept, 6 read as tech; business 1 of 3 kept (2 read tech),
    1 read as business; sport 2 of 2 kept, 2 read as sport
    >>> by_topic_text(q, limit=1)
    'by topic, held out: tech 4 of 4 kept, 6 read as tech; 2 more in the JSON report'
    >>> by_topic_text({"n": 3})
    ''
    """
    by_topic = (quality or {}).get("by_topic")
    if not by_topic:
        return ""
    parts = []
    for topic, v in by_topic.items():
        went = ", ".join(f"{n} read {other}" for other, n in v["read_as"].items())
        parts.append(f"{topic} {v['agree']} of {v['n']} kept" + (f" ({went})" if went else "")
                     + f", {v['read_as_it']} read as {topic}")  # fmt: skip
    more = len(parts) - limit if limit is not None and len(parts) > limit else 0
    if more:
        parts = [*parts[:limit], f"{more} more in the JSON report"]
    return "by topic, held out: " + "; ".join(parts)


def no_gold_rows_text(lacking: Mapping[str, int], covered: Mapping[str, int] | None = None) -> str:
    """The live questions given no topic because no gold row is written in their language
    (``lacking``: ``{language: n}``, the analytics report's ``topic_no_gold_rows_by_language``,
    :class:`~service.topics.stage.TopicStage`), most first; empty when none.

    >>> print(no_gold_rows_text({"es": 311, "de": 273}))  # doctest: +NORMALIZE_WHITESPACE
    584 questions given no topic: no gold row is written in their language (es 311, de 273);
    the topic shares, novelty and topic drift leave them out; add gold rows in it to judge them
    >>> no_gold_rows_text({})
    ''

    ``covered``: those counted so by an earlier gold set or rule in a language the current
    one judges (the report's ``topic_no_gold_rows_covered_now``), said apart
    (:func:`~service.language.gold.covered_now_text`).
    """
    parts = []
    if lacking:
        n = sum(lacking.values())
        named = ", ".join(f"{k} {v}" for k, v in sorted(lacking.items(), key=lambda kv: -kv[1]))
        parts.append(f"{n} question{'s' if n != 1 else ''} given no topic: no gold row is "
                     f"written in their language ({named}); the topic shares, novelty and "
                     "topic drift leave them out; add gold rows in it to judge them")  # fmt: skip
    if covered:
        parts.append(covered_now_text(covered, "given no topic"))
    return "; ".join(parts)


#: The bias-corrected Cramér's V (:func:`topic_language_association`) above which the
#: topics are said to follow language: past half-way from a subject split (0: every topic
#: holds the languages in the gold set's proportions) to a language split (1: each topic one
#: language). Measured with the default embeddings: trial 43's parallel XQuAD gold set and
#: corpus (6 languages) 0.99, bench_production's gold set (en/hi/es: every Hindi question in
#: one topic, every Spanish one in another) 0.97; with ``language_centring`` 0.38 and 0.20.
#: The demo's gold set has one language with 10 rows (en 45, hi-Latn 8, hi 3): not measured.
LANGUAGE_SPLIT_V = 0.5


def topic_language_association(counts: Mapping[str, Mapping[str, int]], min_rows: int = 10
                               ) -> dict[str, Any] | None:  # fmt: skip
    """How much of the topic assignment is explained by language: the bias-corrected
    Cramér's V between language and topic over the texts the topics were fitted on.

    ``counts[language][topic]`` counts the texts of a language given a topic. Only the
    languages with at least ``min_rows`` texts take part (``und`` and ``other`` are no
    language); with fewer than two of them, or one topic, ``None``. With ``n`` texts, ``r``
    languages, ``k`` topics and Pearson's ``χ² = Σ (O - E)² / E`` (``E`` = row total ·
    column total / n), ``φ² = χ² / n``; Cramér's V (Cramér 1946, *Mathematical Methods of
    Statistics*, §21.9) is ``√(φ² / min(r - 1, k - 1))``. With few texts per topic V is
    biased up (58 rows in 39 topics read as associated whatever the data), so the
    correction of Bergsma (2013, *J. Korean Stat. Soc.* 42:323–328) is used: ``φ²̃ = max(0,
    φ² - (k - 1)(r - 1)/(n - 1))``, ``k̃ = k - (k - 1)²/(n - 1)``, ``r̃`` likewise,
    ``Ṽ = √(φ²̃ / min(k̃ - 1, r̃ - 1))``. 0: the topics hold every language in the same
    proportions (a subject split of parallel data); 1: each topic is one language.

    Returns:
        ``{"v": Ṽ in [0, 1], "n": texts, "languages": {language: texts}, "topics": k}``.

    >>> parallel = {"en": {"a": 10, "b": 10}, "de": {"a": 10, "b": 10}}  # each topic both
    >>> topic_language_association(parallel)["v"]
    0.0
    >>> round(topic_language_association({"en": {"a": 20}, "de": {"b": 20}})["v"], 9)
    1.0
    >>> topic_language_association({"en": {"a": 20}, "de": {"b": 9}}) is None  # de: 9 < 10
    True
    """
    rows = {g: {t: c for t, c in topics.items() if c > 0} for g, topics in counts.items()
            if g not in NO_LANGUAGE and sum(topics.values()) >= min_rows}  # fmt: skip
    columns = sorted({t for topics in rows.values() for t in topics})
    if len(rows) < 2 or len(columns) < 2:
        return None
    totals = {g: sum(topics.values()) for g, topics in rows.items()}
    n = sum(totals.values())
    column_totals = {t: sum(topics.get(t, 0) for topics in rows.values()) for t in columns}
    chi2 = 0.0
    for g, topics in rows.items():
        for t in columns:
            expected = totals[g] * column_totals[t] / n
            chi2 += (topics.get(t, 0) - expected) ** 2 / expected
    r, k = len(rows), len(columns)
    phi2 = max(0.0, chi2 / n - (k - 1) * (r - 1) / (n - 1))
    k_corr = k - (k - 1) ** 2 / (n - 1)
    r_corr = r - (r - 1) ** 2 / (n - 1)
    denominator = min(k_corr - 1, r_corr - 1)
    if denominator <= 0:  # too few texts for the correction (n - 1 <= (k - 1)²): unmeasured
        return None
    v = min(1.0, math.sqrt(phi2 / denominator))
    return {"v": v, "n": n, "languages": dict(sorted(totals.items())), "topics": k}


#: What to do when the topics follow language (:func:`language_split_text`).
LANGUAGE_SPLIT_FIX = (
    "use a multilingual embedding model (analytics.embeddings: a sentence-transformers "
    "model such as paraphrase-multilingual-MiniLM-L12-v2), or centre per language "
    "(analytics.topics.language_centring: true); README 'Topics that follow language'"
)


def language_split_text(association: Mapping[str, Any] | None,
                        threshold: float = LANGUAGE_SPLIT_V) -> str | None:  # fmt: skip
    """The notice that the topics are split by language, with the measured value, or
    ``None`` (``association`` of :func:`topic_language_association` is ``None`` or its V is
    at most ``threshold``).

    >>> print(language_split_text({"v": 0.93, "n": 120, "languages": {"de": 60, "en": 60},
    ...                            "topics": 4}))  # doctest: +NORMALIZE_WHITESPACE
    topics follow language: Cramér's V between topic and language 0.93 (bias-corrected; 0 a
    subject split, 1 each topic one language; 120 texts in de, en, 4 topics) > 0.5: each topic
    holds mostly one language (on the same subjects in several languages this makes a
    different topic per language), so topic shares and topic coverage gaps move
    with the language mix (topic drift is standardised to the language mix, so it does not);
    use a multilingual embedding model (analytics.embeddings: a sentence-transformers model
    such as paraphrase-multilingual-MiniLM-L12-v2), or centre per language
    (analytics.topics.language_centring: true); README 'Topics that follow language'
    """
    if association is None or association["v"] <= threshold:
        return None
    languages = ", ".join(association["languages"])
    return (f"topics follow language: Cramér's V between topic and language "
            f"{association['v']:.2f} (bias-corrected; 0 a subject split, 1 each topic one "
            f"language; {association['n']} texts in {languages}, {association['topics']} "
            f"topics) > {threshold:g}: each topic holds mostly one language (on the same subjects "
            "in several languages this makes a different topic per language), so "
            "topic shares and topic coverage gaps move with the language mix (topic drift is "
            "standardised to the language mix, so it does not); "
            f"{LANGUAGE_SPLIT_FIX}")  # fmt: skip
