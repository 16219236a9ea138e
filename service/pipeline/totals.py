"""Running totals of the analytics annotations, persisted with the state.

The Prometheus counters of answers, refusals, out-of-scope questions and scrubbed personal
data restart from zero with the process, as counters do (PromQL's ``rate``/``increase`` read
through resets). The API's summaries (``/v1/refusals``, the analytics report) are totals since
the first start instead, like ``/v1/status``'s: they are kept here, in a pipeline stage whose
state is checkpointed with everything else, so a restart neither zeroes nor double-counts
them (the checkpoint and the position resumed from are one transaction).

Counting rules (one per event, from the annotations the analytics stages left):

* ``answers``: events whose answer was judged (``refused`` is ``True`` or ``False``);
  ``refusals``: of those, the refused ones; ``answers_by_flag`` / ``answers_by_patterns``: of
  the answers, those the event's ``answer.refused`` decided / the phrase patterns decided
  (``refused_by``; totals kept before these existed have neither, so they may sum to less);
  ``refusals_by_flag`` / ``refusals_by_patterns``: of the refusals, those decided by each
  (the same caveat: totals kept before them start at 0);
* ``scope_scored``: events given an out-of-scope verdict; ``out_of_scope``: of those, ``True``;
* ``over_refusals`` / ``under_refusals``: events flagged ``over_refusal`` / ``under_refusal``;
  ``scored_refusals``: refusals given an out-of-scope verdict (what the over-refusals are a
  share of: :class:`~service.evaluation.detector_quality.MisjudgedUnanswerable`; totals kept
  before it existed start it at 0);
* ``off_corpus``: events flagged ``off_corpus`` (out of scope because they lie outside the
  embedding detector's support: :class:`~service.refusals.scope.SupportCheck`; totals kept
  before it existed start it at 0);
* ``unstable_out`` / ``unstable_in``: events flagged ``scope_unstable`` (a verdict the
  off-corpus cutoff's range moves: :func:`~service.refusals.scope.unstable_verdicts`) judged
  out of scope / in scope (totals kept before them start them at 0); the reports state them
  since the range now in use (``unstable_since``, below), not since the first start;
* ``unstable_since`` (kept by :class:`AnnotationTotals` only): since when the unstable counts
  the reports state run — the off-corpus cutoff's range they are judged by (``band``) and
  the totals when it began; a gold-set refresh (or restart) with another range starts them
  again, so they never mix ranges (a totals state kept before it starts them at its restore);
* ``pii``: scrubbed items by type, summed over the events' ``pii`` counts;
* ``counted_under`` (kept by :class:`AnnotationTotals` only): the out-of-scope detectors the
  scope counts were counted under, in order, each with the ``scope_scored`` total when it
  began (a restart or a gold-set refresh with another detector adds one: its bounds are
  shown next to counts partly of the ones before);
* ``by_language`` (kept by :class:`AnnotationTotals` only): per language the gold-row rules
  judged a question in (:func:`~service.language.gold.judged_language`: the left-out
  language it reads as, ``language_excluded``, else its ``language`` label; folded by
  :func:`~service.language.tags.language_key` as the off-corpus rule's cutoffs are),
  ``off_corpus`` events, ``not_judged`` events (scored for scope but not
  judged by the off-corpus rule: ``off_corpus_judged`` false — their language and script have
  no cutoff) and ``no_gold_rows`` events (given no out-of-scope verdict at all, as no gold
  row is written in their language: ``scope_unjudged_language``), and ``topic_no_gold_rows``
  events (given no topic for the same reason: ``topic_unjudged_language``,
  :class:`~service.topics.stage.TopicStage`; totals kept before it start it empty); and
  ``answers`` / ``refusals`` (counted as the totals of the same name) per language label
  instead: the event's ``language`` annotation, ``und`` without one
  (:func:`~service.quality.by_language.language_of`, the label the ``languages`` counts
  use), for the refusal rate per language (totals kept before session 37 start them empty:
  the report then says the languages cover fewer answers than the total); and, per the
  same language label, of the answers that set ``answer.refused`` and have a text the
  detector read (``text_refused``, :class:`~service.refusals.stage.RefusalStage`):
  ``flag_checked`` (those answers), ``flag_refused`` (the flag says refused),
  ``text_refused`` (the text reads as a refusal) and ``both_refused`` (both): the patterns'
  precision and recall against the producer's flag (totals kept before session 38 start
  them empty); and ``text_answers`` / ``text_refusals`` (same label): the answers the text
  reader decided (``refused_by`` ``"patterns"``: no ``answer.refused``) and of those the
  refused ones, what that measured recall is applied to when it is low
  (:func:`~service.refusals.recall.text_recall`; totals kept before session 40 start them
  empty, and then no estimate is made).
* ``by_family`` (kept by :class:`AnnotationTotals` only): per corpus family of the event's
  nearest passage (``scope_family``: :mod:`service.refusals.families`; events without one
  are not counted), the events given an out-of-scope verdict (``scored``), those out of
  scope (``out_of_scope``), the ``under_refusals`` and, of those, the ones harvesting may
  suggest as ``answered_out_of_scope`` (``harvest_out_of_scope``: calibrated and stable
  verdicts, :func:`service.harvest.signals` 's rule); an event whose nearest passage has no
  ``doc_type`` is counted under ``""`` (so the events behind a reason are all counted).
  Totals kept before session 43 start them empty, and ``family_from_scored`` keeps the
  ``scope_scored`` total at which they began (the reports say what they cover).
* ``by_scope_language`` (kept by :class:`AnnotationTotals` only): the same four counts as
  ``by_family`` per language key the gold-row rule judges the event in
  (:func:`~service.language.gold.judged_language`: ``language_excluded`` first, else
  ``language``; ``und`` without one), folded by :func:`~service.language.tags.language_key`
  as the gold rows' languages are (:mod:`service.refusals.languages`), over every event
  given an out-of-scope verdict; totals kept before session 44 start them empty, and
  ``scope_language_from_scored`` keeps the ``scope_scored`` total at which they began.
* ``missed_refusals`` (kept by :class:`AnnotationTotals` only): how often each wording of a
  flagged refusal the text reader missed was seen (``missed_text``, scrubbed and normalised:
  :class:`~service.refusals.stage.RefusalStage`), at most
  :data:`~service.refusals.recall.WORDINGS_KEPT` distinct wordings (a new one past that takes
  the place of the oldest seen only once, or is not kept when every one was seen twice), and
  ``missed_askers``: the first distinct askers of each (``missed_to``, at most
  :data:`~service.refusals.recall.WORDING_MIN_SEEN`); the report names the most frequent of
  those said to that many askers (:meth:`AnnotationTotals.missed_shown`,
  :func:`~service.refusals.recall.text_recall`).

:func:`count_annotations` is the one place these rules are written; the telemetry counts
the same way through it.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from service.language.gold import judged_language
from service.language.tags import language_key
from service.pipeline import Batch
from service.refusals.recall import WORDING_MIN_SEEN, WORDINGS_KEPT

__all__ = ["FLAGS", "AnnotationTotals", "count_annotations", "unstable_counts"]

#: The per-language counts :class:`AnnotationTotals` keeps.
BY_LANGUAGE = ("off_corpus", "not_judged", "no_gold_rows", "topic_no_gold_rows", "answers",
               "refusals", "flag_checked", "flag_refused", "text_refused",
               "both_refused", "text_answers", "text_refusals")  # fmt: skip

#: The per-family counts :class:`AnnotationTotals` keeps (``by_family``).
BY_FAMILY = ("scored", "out_of_scope", "under_refusals", "harvest_out_of_scope")

#: The per-event flags counted, in report order.
FLAGS = ("answers", "refusals", "scope_scored", "out_of_scope", "over_refusals",
         "under_refusals", "answers_by_flag", "answers_by_patterns", "off_corpus",
         "refusals_by_flag", "refusals_by_patterns", "scored_refusals", "unstable_out",
         "unstable_in")  # fmt: skip


#: The totals each row of :attr:`AnnotationTotals.counted_under` keeps from when its detector
#: began counting (``from``): what :func:`counted_by_version` splits per detector version.
VERSION_FLAGS = ("scope_scored", "out_of_scope", "over_refusals", "under_refusals",
                 "scored_refusals")  # fmt: skip


def counted_by_version(
    rows: Sequence[Mapping[str, Any]], flags: Mapping[str, int]
) -> list[dict[str, Any]]:
    """The scope counts since the first start split by the detector version that counted
    them (``rows``: :attr:`AnnotationTotals.counted_under`; ``flags``: the totals now).

    Returns one ``{"detector": name, "calibrated": bool or None, "uncalibrated": why or None,
    "misjudged_unanswerable": {...} or None, "misjudged_answerable": {...} or None, **{flag:
    n for flag in VERSION_FLAGS}}`` per version, in order, each row's counts the totals when
    the next began (or now) minus its own ``from``. The counts before the first row that
    kept ``from`` (a state kept before session 51, or scored before any detector was
    recorded) come first as one version of unknown calibration (``calibrated`` ``None``, no
    rates; ``detector`` the names its rows recorded, or ``None``), when any was scored: the
    older state kept no per-flag totals where one of its rows began, so they cannot be
    split. That includes what a row :meth:`AnnotationTotals.adopt_recorded` gave a
    calibration counted before it (its ``from`` past its ``from_scored``: named "… before
    its calibration was recorded").

    >>> rows = [{"detector": "A", "from_scored": 0, "from": dict.fromkeys(VERSION_FLAGS, 0),
    ...          "calibrated": False},
    ...         {"detector": "B", "from_scored": 10, "calibrated": True,
    ...          "from": {"scope_scored": 10, "out_of_scope": 4, "over_refusals": 3,
    ...                   "under_refusals": 1, "scored_refusals": 6}}]
    >>> [(v["detector"], v["scope_scored"], v["out_of_scope"]) for v in counted_by_version(
    ...     rows, {"scope_scored": 25, "out_of_scope": 5, "over_refusals": 3,
    ...            "under_refusals": 2, "scored_refusals": 9})]
    [('A', 10, 4), ('B', 15, 1)]
    """
    known = [i for i, row in enumerate(rows) if isinstance(row.get("from"), Mapping)]
    first = known[0] if known else len(rows)
    versions: list[dict[str, Any]] = []
    head = dict(rows[first]["from"]) if known else {f: int(flags[f]) for f in VERSION_FLAGS}
    if int(head.get("scope_scored", 0)) > 0 or any(int(head.get(f, 0)) for f in VERSION_FLAGS):
        names = [str(row["detector"]) for row in rows[:first]]
        if known and int(rows[first]["from"].get("scope_scored", 0)) > int(
            rows[first]["from_scored"]
        ):  # an adopted row's counts before its calibration was recorded
            names.append(f"{rows[first]['detector']} before its calibration was recorded")
        versions.append({"detector": "; ".join(dict.fromkeys(names)) or None,
                         "calibrated": None, "uncalibrated": None,
                         "misjudged_unanswerable": None, "misjudged_answerable": None,
                         **{f: int(head.get(f, 0)) for f in VERSION_FLAGS}})  # fmt: skip
    for i in known:
        row = rows[i]
        start = {f: int(row["from"].get(f, 0)) for f in VERSION_FLAGS}
        end = rows[i + 1]["from"] if i + 1 < len(rows) else flags
        versions.append({"detector": str(row["detector"]),
                         "calibrated": row.get("calibrated"),
                         "uncalibrated": row.get("uncalibrated"),
                         "misjudged_unanswerable": row.get("misjudged_unanswerable"),
                         "misjudged_answerable": row.get("misjudged_answerable"),
                         **{f: int(end.get(f, 0)) - start[f] for f in VERSION_FLAGS}})  # fmt: skip
    return versions


#: The totals :attr:`AnnotationTotals.unstable_since` keeps from when its range began:
#: ``{key: flag}``.
SINCE_TOTALS = {"from_scored": "scope_scored", "from_out_of_scope": "out_of_scope",
                "from_unstable_out": "unstable_out", "from_unstable_in": "unstable_in"}  # fmt: skip


def unstable_counts(
    flags: Mapping[str, int], since: Mapping[str, Any] | None, band: str | None
) -> dict[str, Any]:
    """The unstable counts the reports state (``out_of_scope.unstable``): since the range now
    in use began (``since``: :attr:`AnnotationTotals.unstable_since`; ``flags``: the totals;
    ``band``: the range now in use, :attr:`AnnotationTotals.band`).
    ``{"out", "in": unstable verdicts judged out of scope / in scope, "scored", "out_of_scope":
    the scored questions and out-of-scope verdicts counted under the range, "since_scored":
    the scope_scored total before them (0: since the first start), "since": ISO 8601 event
    time of the first event counted under it, or None, "band": the range (4 places)}``;
    without ``since`` (no batch counted under a range yet: a state kept before it, restored),
    or with one of another range than ``band`` (a refresh or restart moved the range and no
    batch was counted under the new one yet: its counts are the old range's, which the
    reports would state under the new one) every count is 0 and ``since_scored`` the scored
    total (all counted before).

    >>> flags = {"scope_scored": 100, "out_of_scope": 30, "unstable_out": 7, "unstable_in": 4}
    >>> since = {"band": "[0.2878, 0.3984]", "from_scored": 60, "from_out_of_scope": 20,
    ...          "from_unstable_out": 5, "from_unstable_in": 1, "from_time": "2026-12-03T01:00:00"}
    >>> unstable_counts(flags, since, "[0.2878, 0.3984]")  # doctest: +NORMALIZE_WHITESPACE
    {'out': 2, 'in': 3, 'scored': 40, 'out_of_scope': 10, 'since_scored': 60,
     'since': '2026-12-03T01:00:00', 'band': '[0.2878, 0.3984]'}
    >>> unstable_counts(flags, None, "[0.2878, 0.3984]")["since_scored"]
    100
    >>> unstable_counts(flags, since, "[0.3100, 0.3900]")["out"]  # the range moved since
    0
    """
    if since is None or since["band"] != band:
        return {"out": 0, "in": 0, "scored": 0, "out_of_scope": 0,
                "since_scored": int(flags["scope_scored"]), "since": None,
                "band": None}  # fmt: skip
    start = {flag: int(since[key]) for key, flag in SINCE_TOTALS.items()}
    return {
        "out": int(flags["unstable_out"]) - start["unstable_out"],
        "in": int(flags["unstable_in"]) - start["unstable_in"],
        "scored": int(flags["scope_scored"]) - start["scope_scored"],
        "out_of_scope": int(flags["out_of_scope"]) - start["out_of_scope"],
        "since_scored": start["scope_scored"], "since": since.get("from_time"),
        "band": since["band"],
    }  # fmt: skip


def count_annotations(
    annotations: Iterable[Mapping[str, Any]],
) -> tuple[dict[str, int], dict[str, int]]:
    """Count a batch's annotations: ``({flag: n for flag in FLAGS}, {pii type: n})``.

    Args:
        annotations: one mapping per event (``Batch.annotations``).

    Returns:
        The flag counts (every flag present, ≥ 0) and the scrubbed items by type.
    """
    # the counts in locals, one dictionary built at the end: the same ints at 0.53 against
    # 0.84 µs an event (eleven dictionary items incremented per event); it runs twice a
    # batch, in this stage and in the telemetry
    answers = refusals = scored = out_of_scope = over = under = off_corpus = 0
    answers_by_flag = answers_by_patterns = refusals_by_flag = refusals_by_patterns = 0
    scored_refusals = unstable_out = unstable_in = 0
    pii: dict[str, int] = {}
    for notes in annotations:
        get = notes.get
        refused = get("refused")
        if refused is not None:
            answers += 1
            by = get("refused_by")
            answers_by_flag += by == "flag"
            answers_by_patterns += by == "patterns"
            if refused is True:
                refusals += 1
                refusals_by_flag += by == "flag"
                refusals_by_patterns += by == "patterns"
        out = get("out_of_scope")
        if out is not None:
            scored += 1
            out_of_scope += out is True
            scored_refusals += refused is True
            if get("scope_unstable") is True:
                unstable_out += out is True
                unstable_in += out is False
        off_corpus += get("off_corpus") is True
        over += get("over_refusal") is True
        under += get("under_refusal") is True
        for kind, n in (get("pii") or {}).items():
            pii[kind] = pii.get(kind, 0) + n
    flags = {
        "answers": answers, "refusals": refusals, "scope_scored": scored,
        "out_of_scope": out_of_scope, "over_refusals": over, "under_refusals": under,
        "answers_by_flag": answers_by_flag, "answers_by_patterns": answers_by_patterns,
        "off_corpus": off_corpus, "refusals_by_flag": refusals_by_flag,
        "refusals_by_patterns": refusals_by_patterns, "scored_refusals": scored_refusals,
        "unstable_out": unstable_out, "unstable_in": unstable_in,
    }  # fmt: skip
    return flags, pii


class AnnotationTotals:
    """A pipeline stage that keeps :func:`count_annotations` totals across restarts.

    Runs after the analytics stages (it reads their annotations, changes nothing).
    State: ``{"flags": {flag: int}, "pii": {type: int}, "by_language": {...}, "by_family"
    (when any family was counted): {kind: {family: int}}, "family_from_scored" (when not 0): int,
    "counted_under": [{"detector": str, "from_scored": int, "from": {flag: int}, and the
    judge's fields}]}`` (:attr:`counted_under`), and ``"unstable_since"``
    (:attr:`unstable_since`) once a range was counted under.

    :attr:`detector` names the out-of-scope detector the scope verdicts now come from (set by
    whoever builds or replaces it); the first batch counted under another name than the last
    in :attr:`counted_under` appends it with the ``scope_scored`` total so far.

    :attr:`band` names the off-corpus cutoff's range that marks the unstable verdicts now
    (:func:`~service.refusals.scope.band_text` to 4 places; set with :attr:`detector`); the
    first batch counted under another range than :attr:`unstable_since`'s starts the
    unstable counts again from there, and a batch counted under none (``None``) ends them, so a
    range back later starts again too (decided in session 39: one range at a time, so the
    "could rise to / fall toward" range the reports derive from them is one range's, and a
    refresh that moves the range says since when it holds; per-range counts were not kept:
    no report reads an older range's).
    """

    name = "annotation_totals"
    keeps_counts = True  # reads the annotations, changes nothing (see Stage)

    def __init__(self) -> None:
        self.flags: Counter[str] = Counter(dict.fromkeys(FLAGS, 0))
        self.pii: Counter[str] = Counter()
        #: ``{kind: {language: n}}`` for each kind of :data:`BY_LANGUAGE`
        self.by_language: dict[str, Counter[str]] = {k: Counter() for k in BY_LANGUAGE}
        #: ``{kind: {family: n}}`` for each kind of :data:`BY_FAMILY`
        self.by_family: dict[str, Counter[str]] = {k: Counter() for k in BY_FAMILY}
        #: the ``scope_scored`` total when family counting began (0: with the first verdict;
        #: a state kept without ``by_family`` restored: its total, as ``counted_under``'s
        #: ``from_scored``)
        self.family_from_scored = 0
        #: ``{kind: {language key: n}}`` for each kind of :data:`BY_FAMILY`
        self.by_scope_language: dict[str, Counter[str]] = {k: Counter() for k in BY_FAMILY}
        #: the ``scope_scored`` total when language counting began (as family_from_scored)
        self.scope_language_from_scored = 0
        #: ``{wording: times seen}`` of the flagged refusals the text reader missed
        self.missed_refusals: Counter[str] = Counter()
        #: ``{wording: [asker, …]}``: its first distinct askers, at most WORDING_MIN_SEEN
        self.missed_askers: dict[str, list[str]] = {}
        #: the out-of-scope detector counting now (``None``: none named)
        self.detector: str | None = None
        #: ``[{"detector": name, "from_scored": scope_scored total when it began, "from":
        #: {flag: total when it began} (:data:`VERSION_FLAGS`), and the :attr:`judge` then}]``
        #: (rows of a state kept before session 51 have neither ``from`` nor a judge, until
        #: :meth:`adopt_recorded` gives the last one the detector now counting's)
        self.counted_under: list[dict[str, Any]] = []
        #: what judges the detector counting now (set with :attr:`detector`): ``{"calibrated":
        #: bool, "uncalibrated": why not or None, "misjudged_unanswerable": {"count", "of",
        #: "upper"} or None, "misjudged_answerable": {...} or None}``; ``None``: not recorded
        self.judge: dict[str, Any] | None = None
        #: the off-corpus cutoff's range marking the unstable verdicts now (``None``: none)
        self.band: str | None = None
        #: since when the unstable counts run: ``{"band": str, "from_scored": int,
        #: "from_out_of_scope": int, "from_unstable_out": int, "from_unstable_in": int,
        #: "from_time": ISO 8601 event time of the first event counted under it, or None}``
        #: (the totals when ``band`` began: :func:`unstable_counts`); ``None``: not begun
        self.unstable_since: dict[str, Any] | None = None

    def adopt_recorded(self) -> None:
        """Give the last :attr:`counted_under` row of a state kept before session 51 (no
        ``from``, no calibration recorded) the calibration and rates of the detector now
        counting (:attr:`judge`) when it names the same detector, so the first batch after
        the upgrade adds no second row for it. The name carries the detector's threshold and
        cutoffs, so an equal name is the same fit; a row naming another detector is left
        as it is (its calibration is not known, and the reports say so). No-op without a
        :attr:`judge` or :attr:`detector`, or when the last row already records one.

        The adopted row's ``from`` (the totals when it began, per flag) is exact when it is
        the only row and began at 0 (all zeros: nothing was scored before it); otherwise the
        older state kept only ``from_scored``, so ``from`` is the totals now and the counts
        it made before (with those of the rows before it) stay of unknown calibration
        (:func:`counted_by_version`).
        """
        rows, judge = self.counted_under, self.judge
        if not rows or judge is None or self.detector is None:
            return
        last = rows[-1]
        if "from" in last or last["detector"] != self.detector:
            return
        whole = len(rows) == 1 and int(last["from_scored"]) == 0
        last["from"] = {flag: 0 if whole else int(self.flags[flag]) for flag in VERSION_FLAGS}
        last.update(copy.deepcopy(judge))

    def process(self, batch: Batch) -> None:
        """Add the batch's counts, and keep them on the batch (:attr:`Batch.counted`) for
        its export."""
        annotations = batch.annotations
        self.adopt_recorded()  # (a state kept before session 51 with the same detector)
        detector = self.detector
        judge = self.judge
        if detector is not None and (
            not self.counted_under
            or self.counted_under[-1]["detector"] != detector
            or self.counted_under[-1].get("calibrated") != (judge or {}).get("calibrated")
        ):  # (a refit that keeps the name but flips the calibration is another version too)
            # A version's calibration and rates are frozen here, when its row starts: a gold
            # refresh that keeps the name (threshold, cutoffs) and the calibrated flag but
            # re-measures the rates starts no row, so the row keeps the rates it began with
            # and the reports bound its counts by those (RC NIT 4; not seen in a trial).
            self.counted_under.append(
                {
                    "detector": detector,
                    "from_scored": int(self.flags["scope_scored"]),
                    "from": {flag: int(self.flags[flag]) for flag in VERSION_FLAGS},
                    **({} if judge is None else copy.deepcopy(judge)),
                }  # fmt: skip
            )
        band = self.band
        if band is None:  # no range (a detector without one): none counted under any, so a
            self.unstable_since = None  # range back later starts again, not across the gap
        elif self.unstable_since is None or self.unstable_since["band"] != band:
            totals = self.flags
            # (a batch built without events, as some callers' are, names no time)
            stamp = getattr(batch.events[0] if batch.events else None, "timestamp", None)
            self.unstable_since = {
                "band": band, "from_scored": int(totals["scope_scored"]),
                "from_out_of_scope": int(totals["out_of_scope"]),
                "from_unstable_out": int(totals["unstable_out"]),
                "from_unstable_in": int(totals["unstable_in"]),
                "from_time": None if stamp is None else stamp.isoformat(),
            }  # fmt: skip
        flags, pii = count_annotations(annotations)
        batch.counted = (annotations, flags, pii)
        self.flags.update(flags)
        self.pii.update(pii)
        off, not_judged = self.by_language["off_corpus"], self.by_language["not_judged"]
        no_gold = self.by_language["no_gold_rows"]
        no_topic = self.by_language["topic_no_gold_rows"]
        answered, refused = self.by_language["answers"], self.by_language["refusals"]
        checked, flag_refused = self.by_language["flag_checked"], self.by_language["flag_refused"]
        text_refused, both_refused = (self.by_language["text_refused"],
                                      self.by_language["both_refused"])  # fmt: skip
        read, read_refused = self.by_language["text_answers"], self.by_language["text_refusals"]
        fam_scored, fam_out = self.by_family["scored"], self.by_family["out_of_scope"]
        fam_under, fam_harvest = (self.by_family["under_refusals"],
                                  self.by_family["harvest_out_of_scope"])  # fmt: skip
        lang_scored, lang_out = (
            self.by_scope_language["scored"],
            self.by_scope_language["out_of_scope"],
        )
        lang_under, lang_harvest = (self.by_scope_language["under_refusals"],
                                    self.by_scope_language["harvest_out_of_scope"])  # fmt: skip
        for notes in batch.annotations:
            if (scope_out := notes.get("out_of_scope")) is not None:
                # the language the gold-row rule judges it in, as by_language
                key = language_key(str(judged_language(notes) or "und"))
                lang_scored[key] += 1
                lang_out[key] += scope_out is True
                if notes.get("under_refusal") is True:
                    lang_under[key] += 1
                    lang_harvest[key] += (notes.get("scope_calibrated") is not False
                                          and notes.get("scope_unstable") is not True)  # fmt: skip
            # "": families are made, and its nearest passage has no doc_type
            family = (notes["scope_family"] or "") if "scope_family" in notes else None
            if family is not None and (out := notes.get("out_of_scope")) is not None:
                fam_scored[family] += 1
                fam_out[family] += out is True
                if notes.get("under_refusal") is True:
                    fam_under[family] += 1
                    # what harvesting suggests as answered_out_of_scope (harvest.signals)
                    fam_harvest[family] += (
                        notes.get("scope_calibrated") is not False
                        and notes.get("scope_unstable") is not True
                    )
            verdict = notes.get("refused")
            if verdict is not None:  # per language label (language_of)
                label = str(notes.get("language") or "und")
                answered[label] += 1
                refused[label] += verdict is True
                if notes.get("refused_by") == "patterns":  # the text reader decided
                    read[label] += 1
                    read_refused[label] += verdict is True
                text_verdict = notes.get("text_refused")
                if text_verdict is not None:  # the flag decided; the text read too
                    checked[label] += 1
                    flag_refused[label] += verdict is True
                    text_refused[label] += text_verdict is True
                    both_refused[label] += verdict is True and text_verdict is True
                    if (wording := notes.get("missed_text")) is not None:
                        missed = self.missed_refusals
                        if wording not in missed and len(missed) >= WORDINGS_KEPT:
                            self._make_room()
                        if wording in missed or len(missed) < WORDINGS_KEPT:
                            missed[wording] += 1
                            askers = self.missed_askers.setdefault(wording, [])
                            asker = str(notes.get("missed_to"))
                            if len(askers) < WORDING_MIN_SEEN and asker not in askers:
                                askers.append(asker)
            get = notes.get
            is_off, unjudged = get("off_corpus") is True, get("off_corpus_judged") is False
            lacking = get("scope_unjudged_language") is True
            topic_lacking = get("topic_unjudged_language") is True
            if not (is_off or unjudged or lacking or topic_lacking):  # most events: none
                continue
            # in the language the gold-row rules judged it in (a left-out one it reads as
            # first: service.language.gold.judged_language)
            language = language_key(str(judged_language(notes) or "und"))
            if is_off:
                off[language] += 1
            if unjudged:
                not_judged[language] += 1
            if lacking:
                no_gold[language] += 1
            if topic_lacking:
                no_topic[language] += 1

    def state_snapshot(self) -> Any:
        """The totals, JSON-able."""
        return {"flags": dict(self.flags), "pii": dict(self.pii),
                "by_language": {k: {lang: n for lang, n in v.items() if n}
                                for k, v in self.by_language.items()},
                "counted_under": [dict(row) for row in self.counted_under],
                **({"by_family": {k: dict(v) for k, v in self.by_family.items()}}
                   if any(self.by_family.values()) else {}),
                **({"family_from_scored": self.family_from_scored}
                   if self.family_from_scored else {}),
                **({"by_scope_language": {k: dict(v) for k, v in self.by_scope_language.items()}}
                   if any(self.by_scope_language.values()) else {}),
                **({"scope_language_from_scored": self.scope_language_from_scored}
                   if self.scope_language_from_scored else {}),
                **({"missed_refusals": dict(self.missed_refusals),
                    "missed_askers": {k: list(v) for k, v in self.missed_askers.items()}}
                   if self.missed_refusals else {}),
                **({} if self.unstable_since is None
                   else {"unstable_since": dict(self.unstable_since)})}  # fmt: skip

    def restore(self, state: Any) -> None:
        """Load :meth:`state_snapshot` output (``None``: a first start keeps zeros).

        Raises:
            ValueError, TypeError, AttributeError: the state has the wrong shape (the engine
                reports the state file).
        """
        if not state:
            return
        self.flags = Counter(dict.fromkeys(FLAGS, 0))
        flags = state.get("flags", {})
        self.flags.update({str(k): int(v) for k, v in flags.items()})
        if "scored_refusals" not in flags:  # totals kept before it: every refusal, a bound
            # from above (over-refusals are scored refusals), so the error bound on them
            # stays an upper bound instead of 0 against their lifetime count
            self.flags["scored_refusals"] = self.flags["refusals"]
        self.pii = Counter({str(k): int(v) for k, v in state.get("pii", {}).items()})
        by_language = state.get("by_language", {})  # (totals kept before it: zeros)
        self.by_language = {k: Counter({str(lang): int(n)
                                        for lang, n in by_language.get(k, {}).items()})
                            for k in BY_LANGUAGE}  # fmt: skip
        by_family = state.get("by_family", {})  # (totals kept before session 43: empty)
        self.by_family = {k: Counter({str(f): int(n) for f, n in by_family.get(k, {}).items()})
                          for k in BY_FAMILY}  # fmt: skip
        # no family counted yet: counting begins now, after the verdicts the state counted
        self.family_from_scored = (int(state.get("family_from_scored", 0)) if by_family
                                   else int(self.flags["scope_scored"]))  # fmt: skip
        by_lang = state.get("by_scope_language", {})  # (totals kept before session 44: empty)
        self.by_scope_language = {k: Counter({str(f): int(n)
                                              for f, n in by_lang.get(k, {}).items()})
                                  for k in BY_FAMILY}  # fmt: skip
        begun = state.get("scope_language_from_scored", 0)
        self.scope_language_from_scored = int(begun if by_lang else self.flags["scope_scored"])
        self.missed_refusals = Counter({str(text): int(n) for text, n
                                        in state.get("missed_refusals", {}).items()})  # fmt: skip
        self.missed_askers = {str(text): [str(a) for a in askers] for text, askers
                              in state.get("missed_askers", {}).items()}  # fmt: skip
        # rows kept before session 51 have no "from" and no judge: counted_by_version
        # reports their counts as counted by a detector of unknown calibration, unless the
        # last names the detector now counting (adopt_recorded)
        self.counted_under = [{**copy.deepcopy(dict(row)), "detector": str(row["detector"]),
                               "from_scored": int(row["from_scored"])}
                              for row in state.get("counted_under", [])]  # fmt: skip
        self.adopt_recorded()  # (when the detector now counting is already known)
        # totals kept before it: their unstable counts (if any) ran under a range no state
        # names, so they start again at the first batch (unstable_counts says since when)
        since = state.get("unstable_since")
        self.unstable_since = None if since is None else {
            "band": str(since["band"]),
            **{key: int(since[key]) for key in SINCE_TOTALS},
            "from_time": None if since.get("from_time") is None else str(since["from_time"]),
        }  # fmt: skip

    def _make_room(self) -> None:
        """Drop the oldest missed wording seen only once, if any, so a new one is kept: free-text
        refusals, each seen once, would otherwise fill the table for good and keep a template
        that comes later from ever being counted (the report would name an earlier, rarer
        wording as the one missed most often). Counts of the wordings kept stay exact; one
        dropped and seen again starts again at 1 (a count never overstated)."""
        oldest = next((text for text, n in self.missed_refusals.items() if n == 1), None)
        if oldest is not None:
            del self.missed_refusals[oldest]
            self.missed_askers.pop(oldest, None)

    def missed_shown(self) -> Counter[str]:
        """The missed wordings that may be named: said to at least
        :data:`~service.refusals.recall.WORDING_MIN_SEEN` distinct askers (``missed_to``), so a
        refusal that addresses one asker by name, however often, is not (``{wording: times
        seen}``; :func:`~service.refusals.recall.shown_wordings` ranks and cuts them)."""
        return Counter({text: n for text, n in self.missed_refusals.items()
                        if len(self.missed_askers.get(text, ())) >= WORDING_MIN_SEEN})  # fmt: skip
