"""How well a detector separates what it claims to separate, measured on its calibration data.

Every goldwatch detector that turns a score into a count (novel questions, out-of-scope
questions, over- and under-refusals) reports its own ROC AUC with a bootstrap interval next to
its counts; below a quality floor its counts are *uncalibrated* and it raises no alarm.

The AUC ranks scores over every threshold, but the counts come from one threshold: a detector
with its threshold also reports its *operating point* there (TPR, FPR and balanced accuracy
on the same calibration scores), and is trusted only when both reach their floors — an AUC of
0.845 whose threshold lets 78 % of the unanswerable gold questions pass as in scope
(balanced accuracy 0.584) does not make its counts facts (fresh-user trial, finding 3). Nor
does an AUC measured on a handful of rows: a detector is trusted only when each class holds
at least ``analytics.quality_min_class`` scores (trial user4: ROC AUC 0.991 [0.960, 1.000]
on 5 unanswerable gold questions, at chance on live off-corpus traffic), and every display
shows the AUC with what it was measured on (:func:`measured_on`).

ROC AUC is the probability that a random positive scores above a random negative, ties counted
one half (Mann–Whitney U / (n_pos · n_neg); Hanley & McNeil 1982). The interval is the
percentile bootstrap (Efron & Tibshirani 1993, ch. 13): positives and negatives are resampled
separately (stratified), so every replicate has both classes.

>>> q = measure_auc([0.9, 0.8, 0.7], [0.1, 0.2, 0.75], n_boot=200, seed=1)
>>> round(q.auc, 4)
0.8889
>>> q.low <= q.auc <= q.high
True
>>> q.trusted(0.75), q.trusted(0.95)
(True, False)
>>> at = q.at_threshold(0.75, tpr=1.0, fpr=1 / 3)
>>> round(at.balanced_accuracy, 4), at.trusted(0.75, min_balanced_accuracy=0.9)
(0.8333, False)
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from service.coverage import wilson_bounds

#: The default quality floor: a detector whose ROC AUC is below it raises no alarm.
DEFAULT_AUC_FLOOR = 0.75


@dataclass(frozen=True, eq=False)
class DetectorQuality:
    """A detector's measured separation. Two are equal when every field is (NaN equal to
    NaN: "not measured" or "none reported" is the same fact on both sides, e.g. after a saved
    topic model is loaded again).

    Attributes:
        auc: ROC AUC in [0, 1] (0.5: chance); NaN when either class is empty.
        low, high: percentile-bootstrap interval of the AUC (``level``), NaN when undefined.
        level: confidence level of the interval, in (0, 1).
        n_pos, n_neg: sizes of the two classes it was measured on.
        method: how the scores were obtained, e.g. ``"leave-one-out on 60 gold questions"``.
        threshold: the score threshold the detector's counts use (NaN: none reported).
        tpr, fpr: at ``threshold``, the share of positives resp. negatives of the same scores
            on the positive side, in [0, 1] (NaN: none reported).
        balanced_accuracy: ``(tpr + 1 - fpr) / 2``, in [0, 1] (0.5: chance; NaN: none).
        n_groups: the groups held out in turn when the scores were measured group by group
            (novelty: the gold set's topics, each held out as an unseen topic), 0 when not.
            With 2 topics the AUC says how well one topic is told from the other, not from
            any topic the gold set lacks: :func:`measured_on` names the count.
        negatives: what the negatives are, for the out-of-scope detector: ``""`` the gold
            set's unanswerable rows (every row with ``gold: []``; it has no ``kind:
            off-topic`` row), ``"off-topic"`` only its ``kind: off-topic`` rows (questions the
            corpus is not about), when it has at least ``off_topic_needed``
            (:func:`service.refusals.scope.scope_rows`), ``"unanswerable and off-topic"``
            (:data:`FEW_OFF_TOPIC_NEGATIVES`) every ``gold: []`` row while it has some but
            fewer off-topic rows.
        apart: the ``gold: []`` rows not marked off-topic (``kind: unanswerable``, or
            role-restricted): with ``negatives`` ``"off-topic"`` measured apart from the AUC
            and rates (in-domain ones, on the corpus's subjects with their answer missing,
            look like answerable ones to every feature); with ``"unanswerable and
            off-topic"`` among the negatives, ≥ 0.
        apart_out: of ``apart``, how many the detector judges out of scope (among the
            negatives: at the scores it was measured on), in [0, apart].
        apart_kinds: the kinds of the ``apart`` rows, in :data:`~service.records.KINDS`
            order, ``", "``-joined (``"unanswerable"``, ``"unanswerable, role-restricted"``).
        off_topic: ``kind: off-topic`` rows of the gold set, ≥ 0 (with ``negatives`` ``""``: 0).
        off_topic_needed: fewest off-topic rows that make them the only negatives
            (:func:`service.refusals.scope.off_topic_needed`), 0 when ``negatives`` is ``""``.
    """

    auc: float
    low: float
    high: float
    level: float
    n_pos: int
    n_neg: int
    method: str = ""
    threshold: float = float("nan")
    tpr: float = float("nan")
    fpr: float = float("nan")
    balanced_accuracy: float = float("nan")
    n_groups: int = 0
    negatives: str = ""
    apart: int = 0
    apart_out: int = 0
    apart_kinds: str = "unanswerable"
    off_topic: int = 0
    off_topic_needed: int = 0

    def at_threshold(self, threshold: float, tpr: float, fpr: float) -> DetectorQuality:
        """This quality with the operating point at ``threshold`` (rates in [0, 1]).

        Raises:
            ValueError: a rate is outside [0, 1].
        """
        if not (0.0 <= tpr <= 1.0 and 0.0 <= fpr <= 1.0):
            raise ValueError(f"rates must be in [0, 1], got tpr={tpr}, fpr={fpr}")
        return dataclasses.replace(
            self,
            threshold=float(threshold),
            tpr=float(tpr),
            fpr=float(fpr),
            balanced_accuracy=(tpr + 1.0 - fpr) / 2.0,
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DetectorQuality):
            return NotImplemented
        return self.as_dict() == other.as_dict()

    def __hash__(self) -> int:
        return hash(tuple(self.as_dict().values()))

    def trusted(
        self,
        floor: float = DEFAULT_AUC_FLOOR,
        min_balanced_accuracy: float = 0.0,
        min_class: int = 0,
    ) -> bool:
        """True when the AUC is known and at least ``floor`` (its point estimate), both
        classes hold at least ``min_class`` scores (``analytics.quality_min_class``: an AUC
        measured on 5 unanswerable gold questions is no measurement) and, when an operating
        point is reported, its balanced accuracy is at least ``min_balanced_accuracy`` with
        its FPR at the Wilson upper bound (:func:`bounded_balanced_accuracy`): a rate measured
        on 10 negatives is no better known than that."""
        return quality_trusted(quality_gauges(self), floor, min_balanced_accuracy, min_class)

    @property
    def bounded_balanced_accuracy(self) -> float:
        """:func:`bounded_balanced_accuracy` of this operating point (NaN: none reported)."""
        return bounded_balanced_accuracy(self.tpr, self.fpr, self.n_neg)

    def as_dict(self) -> dict[str, float | int | str | None]:
        """JSON-safe form (NaN becomes ``None``), unrounded: every display rounds the same
        figure once (rounding here to 4 places, then to 3 for display, showed the trial's AUC
        0.84449 as 0.845 next to the calibration's 0.844)."""

        def num(x: float) -> float | None:
            return None if not np.isfinite(x) else float(x)

        out: dict[str, float | int | str | None] = {
            "auc": num(self.auc),
            "auc_low": num(self.low),
            "auc_high": num(self.high),
            "level": self.level,
            "n_pos": self.n_pos,
            "n_neg": self.n_neg,
            "method": self.method,
            "threshold": num(self.threshold),
            "tpr": num(self.tpr),
            "fpr": num(self.fpr),
            "balanced_accuracy": num(self.balanced_accuracy),
            "n_groups": self.n_groups,
        }
        if self.negatives:  # only then: a report without off-topic rows reads as before
            out.update(negatives=self.negatives, apart=self.apart, apart_out=self.apart_out,
                       apart_kinds=self.apart_kinds, off_topic=self.off_topic,
                       off_topic_needed=self.off_topic_needed)  # fmt: skip
        return out


#: What a detector's two rates at its threshold count, in its user's words: ``(TPR, FPR)``.
#: The out-of-scope detector's positive class is "in scope" (answerable), so its FPR is the
#: share of unanswerable gold questions it lets pass as in scope, not a rate of false alarms.
RATE_WORDS: dict[str, tuple[str, str]] = {
    "out_of_scope": ("answerable kept in scope", "unanswerable judged in scope"),
    # novelty (trial 15: "ROC AUC 0.889" while 'novel' caught a third of off-corpus traffic):
    # its catch rate of an unseen topic at its threshold, and its in-sample false rate
    "novelty": (
        "gold questions read novel with their topic held out",
        "read novel with every topic kept",
    ),
}


def class_rates_text(quality: Mapping[str, Any], detector: str | None = None) -> str:
    """A detector's TPR and FPR at its threshold, each with the class it is a share of named
    (:data:`RATE_WORDS`) and its counts: ``"answerable kept in scope 27 of 28 (TPR 0.964);
    unanswerable judged in scope 13 of 14 (FPR 0.929)"`` of a quality entry (``tpr``,
    ``fpr``, ``n_pos``, ``n_neg``). The counts are left out where a rate is no whole share
    of its class (a rate measured on other rows than the class sizes): ``"answerable kept in
    scope: TPR 0.900; ..."``. A detector without words: ``"TPR 0.950 (38 of 40), FPR 0.000
    (0 of 12)"``.

    >>> text = class_rates_text({"tpr": 27 / 28, "fpr": 13 / 14, "n_pos": 28, "n_neg": 14},
    ...                         "out_of_scope")
    >>> for part in text.split("; "):
    ...     print(part)
    answerable kept in scope 27 of 28 (TPR 0.964)
    unanswerable judged in scope 13 of 14 (FPR 0.929)
    >>> class_rates_text({"tpr": 0.9, "fpr": 0.25}, "out_of_scope")
    'answerable kept in scope: TPR 0.900; unanswerable judged in scope: FPR 0.250'
    """

    def count(value: float, n: Any) -> str | None:
        if isinstance(n, int) and n > 0 and abs(value * n - round(value * n)) < 1e-6:
            return f"{round(value * n)} of {n}"
        return None

    words_of: tuple[str | None, str | None] = RATE_WORDS.get(detector or "", (None, None))
    if detector == "out_of_scope" and quality.get("negatives") == OFF_TOPIC_NEGATIVES:
        words_of = (words_of[0], "off-topic judged in scope")
    parts = []
    for name, value, n, words in zip(
        ("TPR", "FPR"),
        (quality["tpr"], quality["fpr"]),
        (quality.get("n_pos"), quality.get("n_neg")),
        words_of,
        strict=True,
    ):
        of = count(value, n)
        rate = f"{name} {value:.3f}"
        if words is None:
            parts.append(f"{rate} ({of})" if of else rate)
        else:
            parts.append(f"{words} {of} ({rate})" if of else f"{words}: {rate}")
    return ("; " if detector in RATE_WORDS else ", ").join(parts)


def operating_point_summary(quality: Mapping[str, Any], detector: str | None = None) -> str:
    """:func:`class_rates_text` and the balanced accuracy of a quality report entry (its
    ``tpr``, ``fpr``, ``balanced_accuracy``, ``n_pos``, ``n_neg``), each rate with the class
    it is a share of and its counts, so it can be checked against the class sizes next to it
    (``"14 unanswerable / 28 answerable gold questions"``: the out-of-scope detector's
    positives are the answerable ones, kept in scope).

    >>> text = operating_point_summary({"tpr": 0.95, "fpr": 0.0, "balanced_accuracy": 0.975,
    ...                                 "n_pos": 40, "n_neg": 12}, "out_of_scope")
    >>> for part in text.split("; "):
    ...     print(part)
    answerable kept in scope 38 of 40 (TPR 0.950)
    unanswerable judged in scope 0 of 12 (FPR 0.000)
    balanced accuracy 0.975
    >>> operating_point_summary({"tpr": 0.9, "fpr": 0.25, "balanced_accuracy": 0.825})
    'TPR 0.900, FPR 0.250, balanced accuracy 0.825'
    """
    sep = "; " if detector in RATE_WORDS else ", "
    rates = class_rates_text(quality, detector)
    return f"{rates}{sep}balanced accuracy {quality['balanced_accuracy']:.3f}"


#: What each detector's two classes are, in its user's words: ``(positives, negatives)``
#: (novelty scores the same gold questions twice: with their topic held out, and not).
CLASSES: dict[str, tuple[str, str]] = {
    "out_of_scope": ("answerable gold questions", "unanswerable gold questions"),
    "novelty": ("gold questions", "gold questions"),
}


#: :attr:`DetectorQuality.negatives` of an out-of-scope detector measured on off-topic rows.
OFF_TOPIC_NEGATIVES = "off-topic"
#: :attr:`DetectorQuality.negatives` of one measured on every ``gold: []`` row while the gold
#: set has fewer ``kind: off-topic`` rows than make them its only negatives.
FEW_OFF_TOPIC_NEGATIVES = "unanswerable and off-topic"


def classes_of(detector: str, quality: DetectorQuality) -> tuple[str, str]:
    """``(positives, negatives)`` of ``detector`` in its user's words (:data:`CLASSES`), the
    out-of-scope detector's negatives ``"off-topic gold questions"`` when it was measured on
    them (:attr:`DetectorQuality.negatives`).

    >>> classes_of("out_of_scope", DetectorQuality(0.9, 0.8, 1.0, 0.95, 30, 10,
    ...                                            negatives="off-topic"))
    ('answerable gold questions', 'off-topic gold questions')
    """
    positives, negatives = CLASSES.get(detector, ("positives", "negatives"))
    if detector == "out_of_scope" and quality.negatives == OFF_TOPIC_NEGATIVES:
        negatives = "off-topic gold questions"
    return positives, negatives


def measured_on(detector: str, quality: DetectorQuality) -> str:
    """The data ``detector``'s quality was measured on, in its user's words, to show next to
    its AUC: ``"5 unanswerable / 45 answerable gold questions"`` (out-of-scope, smaller class
    first), ``"50 gold questions, each topic held out in turn"`` (novelty), else
    ``"8 positives / 9 negatives"``.

    >>> measured_on("out_of_scope", DetectorQuality(0.99, 0.96, 1.0, 0.95, 45, 5))
    '5 unanswerable / 45 answerable gold questions'
    """
    if detector == "novelty":
        if quality.n_groups > 0:
            return (f"{quality.n_pos} gold questions, each of {quality.n_groups} topics held "
                    "out in turn")  # fmt: skip
        return f"{quality.n_pos} gold questions, each topic held out in turn"
    if detector == "out_of_scope":
        if quality.negatives == OFF_TOPIC_NEGATIVES:
            apart = (f"; {quality.apart} not marked off-topic measured apart"
                     if quality.apart else "")  # fmt: skip
            return f"{quality.n_neg} off-topic / {quality.n_pos} answerable gold questions{apart}"
        return f"{quality.n_neg} unanswerable / {quality.n_pos} answerable gold questions"
    return f"{quality.n_pos} positives / {quality.n_neg} negatives"


def _share(count: int, n: int) -> str:
    """``"20%; Wilson 95 % [7.0%, 45.2%]"``: ``count / n`` with its Wilson score interval
    (:func:`~service.coverage.wilson_bounds`), ``n`` ≥ 1."""
    low, high = wilson_bounds(count, n)
    return f"{count / n:.0%}; Wilson 95 % [{low:.1%}, {high:.1%}]"


def on_topic_flag_text(quality: Mapping[str, Any] | None) -> str | None:
    """The out-of-scope share on-topic traffic alone would show: the answerable gold rows
    the detector judges out of scope (``1 − tpr`` of ``n_pos``, held out) with its Wilson
    interval, to read beside the live out-of-scope share (review of s47-f5: "out of scope
    969/4998 (19.4 %)" is not 19.4 % off-topic traffic). ``None`` without an operating
    point, or for a gold set without ``kind: off-topic`` rows (``negatives`` ``""``: the
    reports read as before them).

    >>> print(on_topic_flag_text({"negatives": "off-topic", "tpr": 28 / 30, "n_pos": 30}))
    ... # doctest: +NORMALIZE_WHITESPACE
    on-topic questions alone would read out of scope at about its answerable gold rows' rate,
    2 of 30 (7%; Wilson 95 % [1.8%, 21.3%]): the out-of-scope share is not all off-topic
    traffic
    """
    if not quality or not quality.get("negatives"):
        return None
    tpr, n = quality.get("tpr"), int(quality.get("n_pos") or 0)
    if tpr is None or n < 1 or not math.isfinite(float(tpr)):
        return None
    out = n - round(float(tpr) * n)
    return (
        f"on-topic questions alone would read out of scope at about its answerable gold rows' "
        f"rate, {out} of {n} ({_share(out, n)}): the out-of-scope share is not all off-topic "
        "traffic"
    )


def apart_text(quality: Mapping[str, Any] | None) -> str | None:
    """What the out-of-scope detector does with the ``gold: []`` rows not marked off-topic
    (``apart``, ``apart_out``, ``apart_kinds`` of a quality entry:
    :meth:`DetectorQuality.as_dict`), or ``None`` (the gold set has no ``kind: off-topic``
    row, or every ``gold: []`` row is one).

    Measured on off-topic rows (``negatives`` ``"off-topic"``), they are measured apart: how
    many it judges out of scope, with the interval. While the gold set has fewer off-topic
    rows than ``off_topic_needed`` (``"unanswerable and off-topic"``), it is measured on every
    ``gold: []`` row as before them, and the line says so and what the off-topic rows lack.
    Either way the rows are not called in-domain — their kind says only that the corpus
    lacks the answer, and a gold set that followed the former advice wrote its off-topic
    rows so — and when it judges most of them out of scope the line says they look
    off-topic and to relabel them (review of s47-f5: 18 of 20 such CLINC rows).

    >>> print(apart_text({"negatives": "off-topic", "apart": 15, "apart_out": 4}))
    ... # doctest: +NORMALIZE_WHITESPACE
    gold: [] rows not marked off-topic (kind: unanswerable), measured apart: it judges 4 of
    15 out of scope (27%; Wilson 95 % [10.9%, 52.0%]); not in its ROC AUC or rates: those on
    the corpus's subjects with their answer missing are not what it detects
    >>> print(apart_text({"negatives": "unanswerable and off-topic", "n_neg": 22,
    ...                   "apart": 20, "apart_out": 18, "off_topic": 2,
    ...                   "off_topic_needed": 10}))  # doctest: +NORMALIZE_WHITESPACE
    2 kind: off-topic gold rows, fewer than the 10 that make them its only negatives: it is
    measured, as before them, on all 22 gold: [] rows; of the 20 not marked off-topic (kind:
    unanswerable) it judges 18 out of scope (90%; Wilson 95 % [69.9%, 97.2%]) at the
    scores it was measured on: they look off-topic — those the corpus is not about belong in
    kind: off-topic (relabelled, 22 off-topic rows: it is then measured on them alone)
    """
    if not quality or quality.get("negatives") not in (
        OFF_TOPIC_NEGATIVES,
        FEW_OFF_TOPIC_NEGATIVES,
    ):
        return None
    n, out = int(quality.get("apart") or 0), int(quality.get("apart_out") or 0)
    kinds = quality.get("apart_kinds") or "unanswerable"
    looks = 2 * out > n  # most of them read as off-topic to the detector
    if quality["negatives"] == OFF_TOPIC_NEGATIVES:
        if n < 1:
            return None
        return (
            f"gold: [] rows not marked off-topic (kind: {kinds}), measured apart: it judges "
            f"{out} of {n} out of scope ({_share(out, n)}); not in its ROC AUC or rates: "
            + (
                "most look off-topic to it — those the corpus is not about belong in kind: "
                "off-topic (relabel them)"
                if looks
                else "those on the corpus's subjects with their answer missing are not what it "
                "detects"
            )  # fmt: skip
        )
    off, needed = int(quality.get("off_topic") or 0), int(quality.get("off_topic_needed") or 0)
    head = (
        f"{off} kind: off-topic gold row{'s' if off != 1 else ''}, fewer than the {needed} "
        f"that make them its only negatives: it is measured, as before them, on all "
        f"{quality.get('n_neg')} gold: [] rows"
    )
    if n < 1:
        return head
    tail = ""
    if looks:
        after = off + n
        tail = (": they look off-topic — those the corpus is not about belong in kind: "
                f"off-topic (relabelled, {after} off-topic rows: "
                + ("it is then measured on them alone)" if after >= needed else
                   f"{needed - after} more would measure it on them alone)"))  # fmt: skip
    else:
        tail = (f"; {needed - off} more off-topic rows would measure it on them alone, these "
                "then apart")  # fmt: skip
    return (
        f"{head}; of the {n} not marked off-topic (kind: {kinds}) it judges {out} out of "
        f"scope ({_share(out, n)}) at the scores it was measured on{tail}"
    )


def too_few(detector: str, quality: DetectorQuality, min_class: int) -> str | None:
    """Why ``quality`` is too small a measurement to count (``None``: both classes hold at
    least ``min_class`` scores), naming the smaller class in the user's words:
    ``"measured on only 5 unanswerable gold questions; needs at least 10"``.

    The floor on the class size is ``analytics.quality_min_class`` (default 10, from Hanley &
    McNeil's 1982 standard error of an AUC: see :class:`service.settings.AnalyticsConfig`).

    >>> too_few("out_of_scope", DetectorQuality(0.99, 0.96, 1.0, 0.95, 45, 5), 10)
    'measured on only 5 unanswerable gold questions; needs at least 10'
    >>> too_few("out_of_scope", DetectorQuality(0.99, 0.96, 1.0, 0.95, 45, 10), 10) is None
    True
    """
    positives, negatives = classes_of(detector, quality)
    n, what = ((quality.n_neg, negatives) if quality.n_neg <= quality.n_pos
               else (quality.n_pos, positives))  # fmt: skip
    if n >= min_class:
        return None
    return f"measured on only {n} {what}; needs at least {min_class}"


def scope_calibration_advice(
    quality: DetectorQuality, floor: float, min_class: int, min_balanced_accuracy: float = 0.0
) -> str:
    """What to add to the gold set to calibrate an uncalibrated out-of-scope detector.

    The detector claims to tell questions the corpus is not about from questions it answers,
    so it is calibrated and measured on ``kind: off-topic`` rows against the answerable ones
    once the gold set has at least ``max(2, min_class)`` off-topic rows
    (:attr:`DetectorQuality.negatives` ``"off-topic"``; :func:`service.refusals.scope.scope_rows`);
    the unanswerable rows not marked off-topic (``kind: unanswerable``; in-domain ones are on
    the corpus's subjects with their answer missing, as SQuAD 2.0's "impossible" questions)
    are then measured apart (how many it judges out of scope) and not counted against it.
    With fewer off-topic rows every ``gold: []`` row is a negative, as without any:
    in-domain ones look like answerable questions to every feature (trial 41's NoMIRACL
    ``non_relevant`` rows, AUC 0.617; trial 46 F5's SQuAD impossible rows, 0.432, and 0.743
    after the 20 ``kind: unanswerable`` off-topic rows the former advice asked for), so the
    advice is always ``kind: off-topic`` rows. The count ``k`` is the least number of
    off-topic rows that reach every floor if each reads clearly out of scope, on the
    ``n`` off-topic rows there are (0 before any; those counted while fewer than make them
    the negatives):

    * an AUC is the mean, over the negative rows, of the share of answerable rows each
      is ranked beyond (Hanley & McNeil 1982), so ``k`` rows ranked beyond every answerable
      one lift it to ``(n·auc + k) / (n + k)``: ``k ≥ n·(floor − auc) / (1 − floor)``;
    * judged out of scope, they leave the false positives as they are, over ``n + k`` rows:
      the least ``k`` whose :func:`bounded_balanced_accuracy` reaches
      ``min_balanced_accuracy``; when the answerable side alone keeps it below (``(tpr + 1) / 2``
      under the floor) no off-topic count can, and the advice says so with the TPR;
    * ``min_class − n`` for the class size; too few answerable rows (``n_pos`` under
      ``min_class``) are asked for first, by count.

    More are needed when some read less clearly (the detector is refitted on them).

    Before any off-topic row (15 unanswerable rows, AUC 0.432): the class size asks 10; their
    balanced accuracy at TPR 0.9 with 0 of 10 judged in scope is (0.9 + 1 − 0.2775) / 2 =
    0.811 at the Wilson bound, over 0.68; with 1 off-topic row among 16, 9:

    >>> text = scope_calibration_advice(
    ...     DetectorQuality(0.432, 0.244, 0.633, 0.95, 30, 15).at_threshold(0.5, 0.9, 0.6),
    ...     0.75, 10, 0.68)
    >>> text[:72]
    'add at least 10 off-topic questions as gold rows with kind: off-topic an'
    >>> "the 15 unanswerable rows not marked off-topic" in text
    True
    >>> scope_calibration_advice(DetectorQuality(
    ...     0.43, 0.24, 0.63, 0.95, 30, 16, negatives="unanswerable and off-topic", apart=15,
    ...     off_topic=1, off_topic_needed=10), 0.75, 10)[:16]
    'add at least 9 o'
    """
    off_topic = quality.negatives == OFF_TOPIC_NEGATIVES
    few = quality.negatives == FEW_OFF_TOPIC_NEGATIVES
    # the negatives the detector will be measured on: its off-topic rows (0 before any; while
    # fewer than make them its negatives, they are counted but their AUC is not known)
    n, auc = ((quality.n_neg, quality.auc) if off_topic else
              (quality.off_topic, float("nan")) if few else (0, float("nan")))  # fmt: skip
    unmarked = quality.apart if (off_topic or few) else quality.n_neg
    needed = max(2, min_class)
    k = max(0, min_class - n)
    if not math.isnan(auc) and auc < floor < 1:
        k = max(k, math.ceil(round(n * (floor - auc) / (1 - floor), 9)))
    tpr, fpr = quality.tpr, (quality.fpr if off_topic else 0.0)
    short_side = False  # the answerable side alone keeps the balanced accuracy under its floor
    if min_balanced_accuracy > 0 and not (math.isnan(tpr) or math.isnan(fpr)):
        if (tpr + 1) / 2 < min_balanced_accuracy:
            short_side = True  # more off-topic rows cannot lift it; k keeps the other floors
        else:
            wrong = round(fpr * n)
            more = k
            while (
                more < 10_000
                and bounded_balanced_accuracy(tpr, wrong / max(n + more, 1), n + more)
                < min_balanced_accuracy
            ):
                more += 1
            k = more if more < 10_000 else k
    answerable = max(0, min_class - quality.n_pos)
    parts: list[str] = []
    if answerable:
        parts.append(
            f"add at least {answerable} answerable gold questions with their passages (it was "
            f"measured on {quality.n_pos}; each class needs at least {min_class})"
        )
    if k or not answerable:
        least = f"at least {k} " if k else ""
        apart = (
            f"the {unmarked} unanswerable rows not marked off-topic (kind: unanswerable; "
            "in-domain ones are on the corpus's subjects, their answer missing) are reported "
            "apart, with how many it judges out of scope, and do not count against it"
            if unmarked
            else "unanswerable rows not marked off-topic (kind: unanswerable) would be "
            "reported apart"
        )
        parts.append(
            f"add {least}off-topic questions as gold rows with kind: off-topic and gold: [] "
            "— questions your users ask that the corpus is not about (another product, "
            "small talk), in each language served; an unanswerable row that is off-topic "
            f"counts once relabelled kind: off-topic. With at least {needed} such rows the "
            "detector is calibrated and measured on them against the answerable rows, and "
            + apart
            + (
                f" ({k} such rows, each read out of scope, would bring the {n + k} off-topic "
                "rows to the quality floors; more if some read less clearly)"
                if k
                else ""
            )
        )
    if short_side:
        parts.append(
            f"the answerable side falls short too: at its threshold the detector keeps "
            f"{round(tpr * quality.n_pos)} of the {quality.n_pos} answerable gold questions in "
            f"scope (TPR {tpr:.3f}), so its balanced accuracy stays under "
            f"{min_balanced_accuracy:.2f} whatever off-topic rows are added; answerable rows "
            "worded as your users ask (the detector is refitted on them) are what lifts it"
        )
    return "; ".join(parts)


def bounded_balanced_accuracy(tpr: float, fpr: float, n_neg: float) -> float:
    """``(tpr + 1 − u) / 2``, in [0, 1]: the balanced accuracy with the false-positive rate at
    ``u``, the upper end of the Wilson 95 % interval of ``fpr`` over ``n_neg`` negatives
    (:func:`service.coverage.wilson_bounds`); NaN when a rate is unknown; ``n_neg`` ≤ 0
    gives ``u`` = 1.

    Why (trial 12 follow-up, ``benchmarks/bench_scope_coverage.py``): the out-of-scope
    detector's FPR is measured on the gold set's 10–14 unanswerable rows, so 5 of 10 let
    through reads 0.50 when the live rate may be 0.76; three of 16 seeded gold sets caught
    under half of CLINC150's out-of-scope questions (live FPR 0.52–0.84 against 0.46–0.55
    reported) while their balanced accuracy, 0.68–0.74, passed the 0.68 floor. At the bound
    they read 0.56–0.62; the 13 that catch 71 % or more read 0.686 or above (0.686: the one
    catching 71 %, its 3 of 11 let through; a thin margin, said as measured).

    >>> round(bounded_balanced_accuracy(0.941, 0.5, 10), 3)  # FPR bound 0.763
    0.589
    >>> round(bounded_balanced_accuracy(0.952, 0.07, 100), 3)  # FPR bound 0.137
    0.907
    """
    if not (math.isfinite(tpr) and math.isfinite(fpr)):
        return float("nan")
    upper = wilson_bounds(fpr * n_neg, n_neg)[1]
    return (tpr + 1.0 - upper) / 2.0


#: Detectors whose counts also ask ``min_balanced_accuracy`` of their operating point (the
#: balanced accuracy at the threshold the counts use, FPR at its Wilson upper bound): the
#: out-of-scope detector (threshold by Youden's J) and topic novelty (threshold a percentile
#: of the gold set's own leave-one-out similarities, ``analytics.topics.novelty_percentile``).
#: Novelty was reported, not floored, until a new user's trial (t40, HIGH 1: 30 gold rows on
#: 7 SQuAD articles) read it "calibrated" at ROC AUC 0.782 while at its threshold it caught
#: 5 of 30 gold questions with their topic held out (TPR 0.167, FPR 2 of 30, balanced accuracy
#: 0.550; 0.477 at the FPR's Wilson bound): 63 % of pure off-topic questions were counted
#: under a Wikipedia topic and a false topic coverage gap fed an alert and 135 suggestions.
#: Its ``novel`` share is TPR·u + FPR·(1 − u) for an unseen-topic share u, and every other
#: topic's share counts the (1 − TPR)·u it misses: at TPR 0.167 the topic shares are each
#: question's nearest gold topic, not its topic. The production-shaped benchmark's 477 gold
#: questions (AUC 0.764; 97 of 477 novel held out, FPR 0.050: balanced accuracy 0.577) are
#: below the floor too; a detector that catches half of the unseen topics at FPR 0.05 on 60
#: rows (0.681 at the bound) clears it.
BALANCED_ACCURACY_FLOORED = frozenset({"out_of_scope", "novelty"})


def balanced_accuracy_floor(detector: str, min_balanced_accuracy: float) -> float:
    """``min_balanced_accuracy`` for a detector of :data:`BALANCED_ACCURACY_FLOORED`, else 0.

    >>> balanced_accuracy_floor("out_of_scope", 0.68), balanced_accuracy_floor("novelty", 0.68)
    (0.68, 0.68)
    >>> balanced_accuracy_floor("language", 0.68)
    0.0
    """
    return min_balanced_accuracy if detector in BALANCED_ACCURACY_FLOORED else 0.0


def quality_trusted(
    quality: Mapping[str, Any],
    floor: float = DEFAULT_AUC_FLOOR,
    min_balanced_accuracy: float = 0.0,
    min_class: int = 0,
) -> bool:
    """The one trust rule, on a quality's numbers (:func:`quality_gauges` or
    :meth:`DetectorQuality.as_dict`: ``auc``, ``tpr``, ``fpr``, ``balanced_accuracy``,
    ``n_pos``, ``n_neg``; a value missing, ``None`` or NaN is unknown): True when the AUC is
    known and at least ``floor``; each class size, when known, at least ``min_class``; and
    the balanced accuracy at the threshold, when known, at least ``min_balanced_accuracy``,
    with the FPR at its Wilson 95 % upper bound over ``n_neg`` when the two rates and
    ``n_neg`` are known (:func:`bounded_balanced_accuracy`). :meth:`DetectorQuality.trusted`
    and the ``goldwatch_detector_trusted`` gauge both ask it, so the report and the
    dashboard cannot disagree.

    >>> quality_trusted({"auc": 0.9, "n_pos": 45, "n_neg": 10}, 0.75, 0.68, 10)
    True
    >>> quality_trusted({"auc": 0.9, "n_pos": 45, "n_neg": 5}, 0.75, 0.68, 10)
    False
    >>> quality_trusted({"auc": 0.9, "tpr": 0.941, "fpr": 0.5, "balanced_accuracy": 0.72,
    ...                  "n_pos": 45, "n_neg": 10}, 0.75, 0.68)  # bounded: 0.589
    False
    >>> quality_trusted({"auc": 0.9, "tpr": 0.941, "fpr": 0.5, "balanced_accuracy": 0.7205},
    ...                 0.75, 0.68)  # no n_neg: the point estimate 0.7205, unbounded
    True
    """

    def known(key: str) -> float | None:
        value = quality.get(key)
        return None if value is None or not math.isfinite(float(value)) else float(value)

    auc = known("auc")
    if auc is None or auc < floor:
        return False
    if any(n is not None and n < min_class for n in (known("n_pos"), known("n_neg"))):
        return False
    tpr, fpr, n_neg, ba = known("tpr"), known("fpr"), known("n_neg"), known("balanced_accuracy")
    if tpr is not None and fpr is not None and n_neg is not None:
        ba = bounded_balanced_accuracy(tpr, fpr, n_neg)
    return ba is None or ba >= min_balanced_accuracy


def quality_gauges(quality: DetectorQuality) -> dict[str, float]:
    """The unrounded numbers a detector's gauges export (``auc``, ``auc_low``, ``auc_high``,
    ``tpr``, ``fpr``, ``balanced_accuracy``; NaN when unknown) and the class sizes its
    ``trusted`` gauge needs (``n_pos``, ``n_neg``), for
    ``service.telemetry.AnalyticsMetrics.set_detector_quality``."""
    return {"auc": quality.auc, "auc_low": quality.low, "auc_high": quality.high,
            "tpr": quality.tpr, "fpr": quality.fpr,
            "balanced_accuracy": quality.balanced_accuracy,
            "n_pos": float(quality.n_pos), "n_neg": float(quality.n_neg)}  # fmt: skip


def roc_auc(pos: Sequence[float] | np.ndarray, neg: Sequence[float] | np.ndarray) -> float:
    """ROC AUC of scores where positives should score higher; NaN if a class is empty.

    The Mann-Whitney U statistic over ``n_pos n_neg``: ``U`` counts, over all (positive,
    negative) pairs, 1 where the positive scores higher and 1/2 where they tie — the same
    number as the rank form ``R_pos - n_pos (n_pos + 1) / 2`` with ties averaged (Mann &
    Whitney 1947; Hanley & McNeil 1982), counted here with two binary searches in the sorted
    negatives instead of ranking the pooled scores (issue 22: the bootstrap of
    :func:`measure_auc` calls this 1,000 times at start-up). ``U`` is a sum of halves, exact
    in float64, so the value is the rank form's to the last bit.
    """
    p = np.asarray(pos, dtype=np.float64)
    n = np.asarray(neg, dtype=np.float64)
    if p.size == 0 or n.size == 0:
        return float("nan")
    ordered = np.sort(n)
    below = np.searchsorted(ordered, p, side="left")  # negatives scoring lower than each positive
    tied = np.searchsorted(ordered, p, side="right") - below
    u = float(below.sum()) + float(tied.sum()) / 2.0
    return u / (p.size * n.size)


def measure_auc(
    pos: Sequence[float] | np.ndarray,
    neg: Sequence[float] | np.ndarray,
    *,
    n_boot: int = 1000,
    level: float = 0.95,
    seed: int = 0,
    method: str = "",
) -> DetectorQuality:
    """ROC AUC of ``pos`` above ``neg`` with a stratified percentile-bootstrap interval.

    Args:
        pos, neg: scores of the positive and negative class (any real units; NaN not allowed).
        n_boot: bootstrap replicates (≥ 0; 0 gives no interval: NaN bounds).
        level: interval confidence, in (0, 1).
        seed: seed of the resampling, so the same data gives the same interval.
        method: free text stored on the result.

    Raises:
        ValueError: ``level`` outside (0, 1), ``n_boot`` < 0, or NaN scores.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if n_boot < 0:
        raise ValueError(f"n_boot must be >= 0, got {n_boot}")
    p = np.asarray(pos, dtype=np.float64)
    n = np.asarray(neg, dtype=np.float64)
    if np.isnan(p).any() or np.isnan(n).any():
        raise ValueError("scores must not be NaN")
    auc = roc_auc(p, n)
    low = high = float("nan")
    if np.isfinite(auc) and n_boot:
        rng = np.random.default_rng(seed)
        reps = np.empty(n_boot)
        for b in range(n_boot):
            reps[b] = roc_auc(rng.choice(p, p.size), rng.choice(n, n.size))
        alpha = (1 - level) / 2
        low, high = (float(x) for x in np.quantile(reps, [alpha, 1 - alpha]))
    return DetectorQuality(auc, low, high, level, int(p.size), int(n.size), method)


@dataclass(frozen=True)
class MisjudgedAnswerable:
    """How often the out-of-scope detector judges an *answerable* question out of scope,
    measured on held-out gold rows: the share that bounds how many under-refusals (answered
    while judged out of scope) its own error explains.

    A bot that answers every answerable question correctly still has under-refusals: the
    answerable questions the detector misjudges (trial 9: 203 of 2,400 answerable questions,
    all answered, all counted as under-refusals, and the alert fired). Only under-refusals
    beyond ``upper`` of the scored questions are evidence of answers to questions the corpus
    cannot answer.

    Attributes:
        count: answerable gold rows judged out of scope on held-out data, by the regression
            (``(1 − tpr) · n_pos``, cross-validated) plus by the off-corpus rule (its
            ``held_out_fpr · n_answerable``): the sum bounds the rows either rule judges out of
            scope from above (a row both rules judge counts twice), ≤ ``n``.
        n: answerable gold rows (``n_pos``), ≥ 1.
        upper: the 95 % Wilson upper bound of ``count / n`` (Wilson 1927), in (0, 1].
        by_score: of ``count``, the rows the regression's score judges out of scope
            (``(1 − tpr) · n_pos``): the complement of the "answerable kept in scope" the
            detector's quality line reports, so the two read together (trial 13: "kept in
            scope 30 of 32" beside "3 of 32 misjudged" looked like a contradiction).
        by_off_corpus: of ``count``, the rows the off-corpus rule judges out of scope
            (``held_out_fpr · n_answerable``; 0 without the rule); ``by_score +
            by_off_corpus`` is ``count`` unless the cap at ``n`` cut it.
    """

    count: int
    n: int
    upper: float
    by_score: int = 0
    by_off_corpus: int = 0

    def explains(self, scored: int) -> int:
        """Under-refusals among ``scored`` live questions that the detector's own error
        explains, at most: ``⌊upper · scored⌋`` (every scored question counted as possibly
        answerable: a bound from above, so a count at or under it is no evidence)."""
        return math.floor(self.upper * scored)

    def as_dict(self) -> dict[str, float | int]:
        """``{"count", "of", "upper", "by_score", "by_off_corpus"}`` for the JSON report."""
        return {"count": self.count, "of": self.n, "upper": self.upper,
                "by_score": self.by_score, "by_off_corpus": self.by_off_corpus}  # fmt: skip


def misjudged_answerable(
    quality: Mapping[str, Any] | None, support: Mapping[str, Any] | None = None
) -> MisjudgedAnswerable | None:
    """The detector's misjudged answerable gold rows (:class:`MisjudgedAnswerable`) from its
    quality report entry (``tpr``, ``n_pos``: :meth:`DetectorQuality.as_dict`) and its
    off-corpus rule (``held_out_fpr``, ``n_answerable``: ``SupportCheck._asdict()``; the
    pooled rule's rate, also kept when the rule goes by script). ``None`` when ``tpr`` or
    ``n_pos`` is unknown (no operating point). An off-corpus rate that is unknown (NaN,
    ``None``) adds nothing.

    >>> m = misjudged_answerable({"tpr": 33 / 34, "n_pos": 34},
    ...                          {"held_out_fpr": 1 / 34, "n_answerable": 34})
    >>> m.count, m.n, round(m.upper, 4), m.explains(2400), m.by_score, m.by_off_corpus
    (2, 34, 0.1909, 458, 1, 1)
    """
    if not quality:
        return None
    tpr, n = quality.get("tpr"), quality.get("n_pos")
    if tpr is None or n is None or not math.isfinite(float(tpr)) or int(n) < 1:
        return None
    n = int(n)
    by_score = round((1.0 - float(tpr)) * n)
    by_off_corpus = 0
    if support:
        rate, rows = support.get("held_out_fpr"), support.get("n_answerable")
        if rate is not None and rows and math.isfinite(float(rate)):
            by_off_corpus = round(float(rate) * int(rows))
    count = min(by_score + by_off_corpus, n)
    return MisjudgedAnswerable(count, n, wilson_bounds(count, n)[1], by_score, by_off_corpus)


@dataclass(frozen=True)
class MisjudgedUnanswerable:
    """How often the out-of-scope detector judges an *unanswerable* question in scope,
    measured on held-out gold rows: the share that bounds how many over-refusals (refused
    while judged in scope) its own error explains — :class:`MisjudgedAnswerable`'s mirror.

    A bot that refuses only questions its corpus cannot answer still has over-refusals: the
    unanswerable questions the detector lets pass as in scope (trial 10: 298 refusals, every
    one of an out-of-scope or unanswerable question, 182 of them judged in scope by a detector
    with FPR 7 of 12, all counted as over-refusals). Only over-refusals beyond ``upper`` of the
    scored refusals are evidence of refused answerable questions.

    Attributes:
        count: unanswerable gold rows judged in scope on held-out data by the detector's
            score at its threshold (``fpr · n_neg``: the embedding detector's regression,
            cross-validated; the retriever-score detector fits nothing), ≤ ``n``. The
            off-corpus rule adds nothing: it can only move a question out of scope (an
            off-corpus question's probability of in scope is set to 0:
            :class:`service.refusals.scope.SupportCheck`), never into it, so the rows judged
            in scope by both rules together are at most the score's alone. Measured on
            off-topic rows, plus the unanswerable rows not marked off-topic it judges in scope
            (:func:`misjudged_unanswerable`).
        n: unanswerable gold rows (``n_neg``, plus ``apart`` when measured on off-topic
            rows), ≥ 1.
        upper: the 95 % Wilson upper bound of ``count / n`` (Wilson 1927), in (0, 1].
    """

    count: int
    n: int
    upper: float

    def explains(self, refused: int) -> int:
        """Over-refusals among ``refused`` scored refusals that the detector's own error
        explains, at most: ``⌊upper · refused⌋`` (every refusal counted as possibly out of
        scope: a bound from above, so a count at or under it is no evidence)."""
        return math.floor(self.upper * refused)

    def as_dict(self) -> dict[str, float | int]:
        """``{"count", "of", "upper"}`` for the JSON report."""
        return {"count": self.count, "of": self.n, "upper": self.upper}


def misjudged_unanswerable(quality: Mapping[str, Any] | None) -> MisjudgedUnanswerable | None:
    """The detector's misjudged unanswerable gold rows (:class:`MisjudgedUnanswerable`) from
    its quality report entry (``fpr``, ``n_neg``: :meth:`DetectorQuality.as_dict`, the
    operating point on cross-validated scores). ``None`` when ``fpr`` or ``n_neg`` is unknown
    (no operating point, or no unanswerable row). A detector measured on off-topic rows
    (``negatives``) adds the unanswerable rows not marked off-topic it judges in scope (``apart`` −
    ``apart_out``, of ``apart``; scored by a model not fitted on them): every unanswerable
    row counts, as a refusal of any of them is correct.

    >>> m = misjudged_unanswerable({"fpr": 0.0, "n_neg": 10, "negatives": "off-topic",
    ...                             "apart": 15, "apart_out": 3})
    >>> m.count, m.n, round(m.upper, 4)
    (12, 25, 0.665)

    >>> m = misjudged_unanswerable({"fpr": 7 / 12, "n_neg": 12})
    >>> m.count, m.n, round(m.upper, 4), m.explains(298)
    (7, 12, 0.8067, 240)
    """
    if not quality:
        return None
    fpr, n = quality.get("fpr"), quality.get("n_neg")
    if fpr is None or n is None or not math.isfinite(float(fpr)) or int(n) < 1:
        return None
    n = int(n)
    count = min(round(float(fpr) * n), n)
    if quality.get("negatives") == OFF_TOPIC_NEGATIVES:
        # the unanswerable rows not marked off-topic, measured apart, count too: a refusal of such a
        # question the detector judges in scope is a correct refusal read as an over-refusal
        apart = int(quality.get("apart") or 0)
        count += max(0, apart - int(quality.get("apart_out") or 0))
        n += apart
    return MisjudgedUnanswerable(count, n, wilson_bounds(count, n)[1])


#: What the over-refusal verdict of :func:`over_refusals_explained_text` is about.
OVER_REFUSALS_SCOPE = "this count alone is"
#: Where over-refusal is measured without the out-of-scope detector.
OVER_REFUSALS_ELSEWHERE = (
    "refusals of known answerable gold questions measure it without the detector"
)


def over_refusals_explained_text(scope: Mapping[str, Any]) -> str:
    """What the out-of-scope detector's own error explains of the over-refusals, for the text
    report (``""`` when unknown): ``over_refusals_explained`` of a scope report
    (:class:`~service.runtime.reports.OutOfScopeReport`) with the held-out measurement it
    comes from.

    >>> over_refusals_explained_text({"over_refusals": 182, "over_refusals_explained": 240,
    ...     "misjudged_unanswerable": {"count": 7, "of": 12, "upper": 0.8067}})
    ... # doctest: +NORMALIZE_WHITESPACE
    ' (up to 240 explained by the detector judging unanswerable questions in scope: 7 of 12
    unanswerable gold questions on held-out data, 95 % upper bound 80.7% of the scored
    refusals; within its error: this count alone is no evidence of over-refusal, nor of
    none (refusals of known answerable gold questions measure it without the detector))'
    """
    explained = scope.get("over_refusals_explained")
    misjudged = scope.get("misjudged_unanswerable")
    if explained is None or not misjudged:
        return ""
    # the claim's scope: the count of refusals judged in scope, through the detector's error;
    # the known questions' refusals measure over-refusal without the detector, and may show
    # it where this count cannot (trial 49, L1: the two lines read as contradicting)
    verdict = (f"within its error: {OVER_REFUSALS_SCOPE} no evidence of over-refusal, nor "
               f"of none ({OVER_REFUSALS_ELSEWHERE})"
               if scope["over_refusals"] <= explained
               else f"{scope['over_refusals'] - explained} beyond it")  # fmt: skip
    if by := scope.get("over_refusals_explained_by"):  # counted by several detector versions
        return (f" (up to {explained} explained by the detectors judging unanswerable "
                f"questions in scope, {by}; {verdict})")  # fmt: skip
    # one version counted them all: its own rates made the figure, so they are the ones
    # quoted, not the detector now counting's (a refit before any batch: RC B1)
    misjudged, who = _counting_rates(scope, "misjudged_unanswerable", misjudged)
    if misjudged is None:
        return (f" (up to {explained} explained by {who}: its rates were not recorded, so "
                f"all of them; {verdict})")  # fmt: skip
    return (
        f" (up to {explained} explained by {who} judging unanswerable questions in "
        f"scope: {misjudged['count']} of {misjudged['of']} unanswerable gold questions on "
        f"held-out data, 95 % upper bound {misjudged['upper']:.1%} of the scored refusals; "
        f"{verdict})"
    )


def under_refusals_explained_text(scope: Mapping[str, Any]) -> str:
    """What the out-of-scope detector's own error explains of the under-refusals, for the
    text report (``""`` when unknown): ``under_refusals_explained`` of a scope report
    (:class:`~service.runtime.reports.OutOfScopeReport`) with the held-out measurement it
    comes from.

    >>> under_refusals_explained_text({"under_refusals": 203, "under_refusals_explained": 458,
    ...     "misjudged_answerable": {"count": 2, "of": 34, "upper": 0.1909}})
    ... # doctest: +NORMALIZE_WHITESPACE
    ' (up to 458 explained by the detector judging answerable questions out of scope: 2 of 34
    answerable gold questions on held-out data, 95 % upper bound 19.1% of the scored
    questions; within its error: no evidence of made-up answers, nor of none)'
    """
    explained, misjudged = scope.get("under_refusals_explained"), scope.get("misjudged_answerable")
    if explained is None or not misjudged:
        return ""
    verdict = ("within its error: no evidence of made-up answers, nor of none"
               if scope["under_refusals"] <= explained
               else f"{scope['under_refusals'] - explained} beyond it")  # fmt: skip
    if by := scope.get("under_refusals_explained_by"):  # counted by several detector versions
        return (f" (up to {explained} explained by the detectors judging answerable questions "
                f"out of scope, {by}; {verdict})")  # fmt: skip
    # (one version counted them all: its own rates, as for the over-refusals; RC B1)
    misjudged, who = _counting_rates(scope, "misjudged_answerable", misjudged)
    if misjudged is None:
        return (f" (up to {explained} explained by {who}: its rates were not recorded, so "
                f"all of them; {verdict})")  # fmt: skip
    return (
        f" (up to {explained} explained by {who} judging answerable questions out "
        f"of scope: {misjudged['count']} of {misjudged['of']} answerable gold questions on "
        f"held-out data{_misjudged_split(misjudged)}, 95 % upper bound "
        f"{misjudged['upper']:.1%} of the scored questions; {verdict})"
    )


def _counting_rates(
    scope: Mapping[str, Any], key: str, now: Mapping[str, Any]
) -> tuple[Mapping[str, Any] | None, str]:
    """``(rates, who)``: the rates (``key``: ``"misjudged_unanswerable"`` or
    ``"misjudged_answerable"``, ``{"count", "of", "upper"}``; ``None``: not recorded) that
    made the explained figure when one detector version counted every scope count
    (``scope["counted_by"]``: :func:`~service.pipeline.totals.counted_by_version`), else
    ``now`` (the detector now counting's, what the figure is made of without versions), and
    how the text names the detector they are of: ``"the detector"`` when they are ``now``,
    else ``"the detector that counted them (its name)"`` — the rates kept when its
    version began, not the detector now counting's (after a refit before any batch, or a
    state kept before session 51 resumed under another detector: RC B1).
    """
    versions = scope.get("counted_by") or []
    if len(versions) != 1:
        return now, "the detector"
    version = versions[0]
    rates = version.get(key)
    if rates is not None and dict(rates) == dict(now):
        return now, "the detector"
    name = version.get("detector") or "not named"
    return rates, f"the detector that counted them ({name})"


def _misjudged_split(misjudged: Mapping[str, Any]) -> str:
    """``" (2 by its score, 1 by the off-corpus rule)"``: which rule judged the misjudged
    answerable rows out of scope, when the off-corpus rule judged any (``""`` otherwise, or
    for a report written before the split was kept). The score's count is the complement of
    the quality line's "answerable kept in scope", so the two lines read together."""
    by_score, by_rule = misjudged.get("by_score"), misjudged.get("by_off_corpus")
    if by_score is None or not by_rule:
        return ""
    return f" ({by_score} by its score, {by_rule} by the off-corpus rule)"


#: ``{kind: (rates key, count it is a share of, what it judges wrongly)}`` of the
#: out-of-scope detector's own error per counted detector version
#: (:func:`explained_by_versions`).
EXPLAINED_BY = {
    "over_refusals": ("misjudged_unanswerable", "scored_refusals", "scored refusals"),
    "under_refusals": ("misjudged_answerable", "scope_scored", "scored questions"),
}


def explained_by_versions(versions: Sequence[Mapping[str, Any]], kind: str) -> int:
    """The ``kind`` (``"over_refusals"`` or ``"under_refusals"``) that the out-of-scope
    detectors' own error explains at most, each version's rates over its own counts
    (``versions``: :func:`~service.pipeline.totals.counted_by_version`): the sum over versions
    of ``⌊upper · n⌋`` (``upper``: the version's Wilson 95 % upper bound,
    :class:`MisjudgedUnanswerable` / :class:`MisjudgedAnswerable`; ``n``: its scored refusals
    / scored questions). A version whose rates were not recorded counts whole (upper 1: a
    bound from above that claims nothing). Trial 50 H2: a refit's FPR 1 of 11 applied to
    counts an FPR-4-of-10 detector made halved the figure.

    >>> v = [{"misjudged_unanswerable": {"count": 4, "of": 10, "upper": 0.6873},
    ...       "scored_refusals": 100},
    ...      {"misjudged_unanswerable": {"count": 1, "of": 11, "upper": 0.3774},
    ...       "scored_refusals": 50},
    ...      {"misjudged_unanswerable": None, "scored_refusals": 7}]
    >>> explained_by_versions(v, "over_refusals")  # 68 + 18 + 7
    93
    """
    key, count, _ = EXPLAINED_BY[kind]
    total = 0
    for version in versions:
        rates = version.get(key)
        upper = 1.0 if not rates else float(rates["upper"])
        total += math.floor(upper * int(version[count]))
    return total


def explained_by_versions_text(versions: Sequence[Mapping[str, Any]], kind: str) -> str | None:
    """How :func:`explained_by_versions` summed ``kind`` over the detector versions that
    counted, for the reports (``None`` for one version: the figure is that version's and the
    usual clause says how).

    >>> print(explained_by_versions_text([
    ...     {"detector": "A", "misjudged_unanswerable": {"count": 4, "of": 10, "upper": 0.6873},
    ...      "scored_refusals": 100},
    ...     {"detector": "B", "misjudged_unanswerable": {"count": 1, "of": 11, "upper": 0.3774},
    ...      "scored_refusals": 50}], "over_refusals"))
    ... # doctest: +NORMALIZE_WHITESPACE
    each detector's own rates over its own counts: up to 68 of 100 scored refusals under A (4
    of 10, 95 % upper bound 68.7%), up to 18 of 50 under B (1 of 11, 95 % upper bound 37.7%)
    """
    key, count, what = EXPLAINED_BY[kind]
    if len(versions) < 2:
        return None
    parts = []
    for i, version in enumerate(versions):
        rates, n = version.get(key), int(version[count])
        name = version.get("detector") or "a detector not recorded"
        unit = f" {what}" if i == 0 else ""
        if not rates:
            parts.append(f"up to {n} of {n}{unit} under {name} (its rates were not recorded: "
                         "all of them)")  # fmt: skip
            continue
        parts.append(f"up to {math.floor(float(rates['upper']) * n)} of {n}{unit} under {name} "
                     f"({rates['count']} of {rates['of']}, 95 % upper bound "
                     f"{float(rates['upper']):.1%})")  # fmt: skip
    return f"each detector's own rates over its own counts: {', '.join(parts)}"


def scope_uncalibrated_text(now: str | None, versions: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the cumulative scope counts are not facts (``None``: they are): ``now`` (why the
    detector now counting is not calibrated, or ``None``) and the shares
    :func:`counts_uncalibrated_text` names, both when both hold — unless every version it
    names is uncalibrated for that same reason (one detector, counting still: ``now`` says
    it all). Without this the shares counted by a detector whose calibration was not
    recorded went unsaid whenever the detector now counting was uncalibrated too (RC NIT 2).

    >>> v = [{"detector": "A", "calibrated": None, "uncalibrated": None, "scope_scored": 30,
    ...       "out_of_scope": 3, "over_refusals": 2, "under_refusals": 1},
    ...      {"detector": "B", "calibrated": False, "uncalibrated": "FPR 9 of 13",
    ...       "scope_scored": 10, "out_of_scope": 1, "over_refusals": 0, "under_refusals": 0}]
    >>> print(scope_uncalibrated_text("FPR 9 of 13", v[1:]))
    FPR 9 of 13
    >>> print(scope_uncalibrated_text("FPR 9 of 13", v))
    ... # doctest: +NORMALIZE_WHITESPACE
    FPR 9 of 13; and out of scope 4 of 4, over-refusals 2 of 2, under-refusals 1 of 1 (scored
    40 of 40) counted by an uncalibrated detector (B) or a detector whose calibration was not
    recorded (A; a state kept before session 51 named the detectors that counted, not their
    calibration, and only a last one named as the detector now counting takes its
    calibration)
    """
    counts = counts_uncalibrated_text(versions)
    if now is None or counts is None:
        return now or counts
    untrusted = [v for v in versions if v.get("calibrated") is not True
                 and any(int(v[k]) for k in _VERSION_COUNTS)]  # fmt: skip
    if all(v.get("calibrated") is False and v.get("uncalibrated") == now for v in untrusted):
        return now
    return f"{now}; and {counts}"


#: The counts of a detector version (:func:`~service.pipeline.totals.counted_by_version`)
#: that make it one that counted anything.
_VERSION_COUNTS = ("scope_scored", "out_of_scope", "over_refusals", "under_refusals")


def counts_uncalibrated_text(versions: Sequence[Mapping[str, Any]]) -> str | None:
    """Why the cumulative scope counts are not facts although the detector now counting may
    be calibrated: the shares of them counted by an uncalibrated detector version, or by one
    whose calibration was not recorded (a state kept before session 51, other than the
    last row when it names the detector now counting:
    :meth:`~service.pipeline.totals.AnnotationTotals.adopt_recorded`); ``None`` when every
    version that counted anything was calibrated (``versions``:
    :func:`~service.pipeline.totals.counted_by_version`). A count is as trustworthy as the
    least trustworthy version that contributed to it (trial 50 H2).

    >>> print(counts_uncalibrated_text([
    ...     {"detector": "threshold 0.1905", "calibrated": False, "scope_scored": 3990,
    ...      "out_of_scope": 541, "over_refusals": 563, "under_refusals": 109},
    ...     {"detector": "threshold 0.3614", "calibrated": True, "scope_scored": 10,
    ...      "out_of_scope": 2, "over_refusals": 1, "under_refusals": 0}]))
    ... # doctest: +NORMALIZE_WHITESPACE
    out of scope 541 of 543, over-refusals 563 of 564, under-refusals 109 of 109 (scored 3990
    of 4000) counted by an uncalibrated detector (threshold 0.1905)
    """
    kinds = ("out_of_scope", "over_refusals", "under_refusals")
    untrusted = [v for v in versions if v.get("calibrated") is not True
                 and any(int(v[k]) for k in ("scope_scored", *kinds))]  # fmt: skip
    if not untrusted:
        return None
    labels = {"out_of_scope": "out of scope", "over_refusals": "over-refusals",
              "under_refusals": "under-refusals"}  # fmt: skip
    shares = [f"{labels[k]} {sum(int(v[k]) for v in untrusted)} of "
              f"{sum(int(v[k]) for v in versions)}" for k in kinds]  # fmt: skip
    scored = (
        f"scored {sum(int(v['scope_scored']) for v in untrusted)} of "
        f"{sum(int(v['scope_scored']) for v in versions)}"
    )
    bad = [str(v["detector"]) for v in untrusted if v.get("calibrated") is False]
    unknown = [str(v.get("detector") or "not named") for v in untrusted
               if v.get("calibrated") is None]  # fmt: skip
    who = []
    if bad:
        who.append(f"an uncalibrated detector ({'; '.join(bad)})" if len(bad) == 1
                   else f"uncalibrated detectors ({'; '.join(bad)})")  # fmt: skip
    if unknown:
        who.append(f"a detector whose calibration was not recorded ({'; '.join(unknown)}; "
                   "a state kept before session 51 named the detectors that counted, not "
                   "their calibration, and only a last one named as the detector now "
                   "counting takes its calibration)")  # fmt: skip
    return f"{', '.join(shares)} ({scored}) counted by {' or '.join(who)}"
