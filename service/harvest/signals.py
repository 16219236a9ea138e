"""What makes one live event worth a gold question: its reasons (see :mod:`.config`).

:func:`event_reasons` reads an event and the annotations of the earlier stages; the two
trackers give it the context a single event lacks:

* :class:`CoverageTracker` — topic, language and document counts of the last N live events
  against the gold set's (a question's document: that of the passage production ranked
  first, :func:`production_documents`; the gold set's: its rows' relevant passages',
  :func:`service.coverage.document_counts` — no model, production's own retrieval says what a
  question is about): ``gap(dimension, label)`` is ``max(0, L − gold share)`` when the live share is
  at least ``min_ratio`` (2) × the gold share, else 0, ``L`` the live share's 95 % Wilson
  lower bound; in [0, 1];
* :class:`ScoreWindow` — the last N best production scores per retriever, so a score can be
  placed in their distribution (scores of different retrievers never compare).

>>> coverage = CoverageTracker({"language": {"en": 3, "hi": 1}}, min_live_events=100)
>>> coverage.update([{"language": "hi"}] * 60 + [{"language": "en"}] * 40)
>>> hi = coverage.gap("language", "hi")  # .60 ≥ 2 × .25; Wilson lower bound of 60/100: .502
>>> round(hi, 3), coverage.gap("language", "en"), coverage.gap("topic", "x")  # en .40 < .75
(0.252, 0.0, 0.0)
"""

from __future__ import annotations

import bisect
import hashlib
import re
from collections import Counter, deque
from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from math import ceil
from typing import Any, NamedTuple

from service.coverage import (
    UNDETERMINED,
    UnderCovered,
    gap_lower_bound,
    rise_lower_bound,
    under_covered,
    wilson_bounds,
)
from service.document_groups import BUILT_IN, group_labels
from service.events import QueryLogEvent, RetrievedPassage
from service.harvest.config import REASONS, HarvestConfig
from service.pii.scrub import scrub_label

__all__ = [
    "DIMENSIONS",
    "DOCUMENT",
    "DOCUMENT_RULE",
    "CoverageTracker",
    "DocumentLabels",
    "ScoreWindow",
    "all_tied",
    "document_labels",
    "event_reasons",
    "judged_out_of_scope",
    "passage_documents",
    "production_documents",
    "production_score",
]

#: The document dimension: the corpus document of the passage production ranked first.
DOCUMENT = "document"
DIMENSIONS = ("topic", "language", DOCUMENT)
#: Characters of a document label at most (a longer one, e.g. a URL with a query, is cut and
#: ends with "…" and 8 hex digits of a hash of the whole, so two labels cut alike stay two):
#: labels are listed in reports and keyed in the snapshot.
MAX_DOCUMENT_CHARS = 120
#: What the uncovered-documents share counts (:meth:`CoverageTracker.uncovered`'s
#: ``counts``; the drift dimensions' ``counts`` say theirs alike).
UNCOVERED_COUNTS = "questions given a document, not judged out of scope"
#: Saved with the coverage state: its ``document`` window and all-time counts leave out the
#: questions judged out of scope (:func:`production_documents`). A state kept before (whose
#: document counts hold them) restores no document counts (:meth:`CoverageTracker.load`):
#: mixed with today's, its all-time ones kept the earlier uncovered share at the old rule's
#: (trial 24 upgraded after 2,000 events: 36 % before the surge instead of 22 %, the rise's
#: bound 15 points instead of 29, 61 ``coverage_gap`` suggestions after it instead of 149).
#: The cost: the all-time list starts over, and the rise is untested until
#: ``min_live_events`` such questions are before the window (in that trial, to its end: 12).
DOCUMENT_RULE = "in_scope_questions"
#: The annotation of a question the topic stage gave no topic (no gold row is written in its
#: language: :class:`~service.topics.stage.TopicStage`, ``service.drift.stage.UNJUDGED_TOPIC``).
UNJUDGED_TOPIC = "topic_unjudged_language"
_MAX_RETRIEVERS = 16
#: retriever name -> :func:`scrub_label` of it (:func:`production_score`), at most
#: :data:`_MAX_LABELS` (then forgotten): a log names few retrievers.
_RETRIEVER_LABELS: dict[str, str] = {}
_MAX_LABELS = 256
#: Gaps :meth:`CoverageTracker.update_each` keeps computed at most (then forgotten).
_MAX_GAPS = 65_536

_BIT = {reason: 1 << i for i, reason in enumerate(REASONS)}
_COVERAGE_GAP = _BIT["coverage_gap"]
_NOVEL = _BIT["novel"]
_REFUSED = _BIT["refused"]
_OUT_OF_SCOPE = _BIT["answered_out_of_scope"]
_LOW_CONFIDENCE = _BIT["low_confidence"]
_NEGATIVE_FEEDBACK = _BIT["negative_feedback"]
_CITED_NOT_RETRIEVED = _BIT["cited_not_retrieved"]
_ACL_VIOLATION = _BIT["acl_violation"]


@lru_cache(maxsize=4096)
def _named(bits: int, active: frozenset[str]) -> tuple[str, ...]:
    """The reasons of ``bits`` (one bit per reason, :data:`REASONS` order) that are
    ``active``, in that order; the same tuple object for the same arguments."""
    return tuple(r for r in REASONS if bits & _BIT[r] and r in active)


class DocumentLabels(NamedTuple):
    """A corpus's document labels (:func:`document_labels`): ``documents`` ``{passage id:
    label}`` (a grouped document's: its group's); ``renamed`` ``{own label: group label}``
    of the documents that joined a group (the labels a state saved before the grouping
    keyed them by: :meth:`CoverageTracker.relabel_documents`); ``variants`` ``{group label:
    documents in it}``."""

    documents: dict[str, str]
    renamed: dict[str, str]
    variants: dict[str, int]


def document_labels(
    passages: Iterable[tuple[str, str | None]], groups: re.Pattern[str] | str | None = BUILT_IN
) -> DocumentLabels:
    """The document labels of the corpus's ``(id, doc)`` pairs that name a document: each
    label scrubbed (:func:`~service.pii.scrub.scrub_label`: a URL may carry an e-mail
    address or a token), two documents the scrub made alike told apart by their order
    (``"<URL>"``, ``"<URL> #2"``), a document's language variants grouped
    (:func:`service.document_groups.group_labels` with ``groups``: the built-in
    language-code rule, ``None`` for none, or a compiled ``harvest.document_groups``
    pattern; on the whole scrubbed labels, so two long URLs that differ only by their
    language still group) and cut to :data:`MAX_DOCUMENT_CHARS` (keeping a hash of the
    whole). Empty when no passage names one (a corpus of passage ids only: no document
    dimension).

    >>> labels = document_labels([("p1", "a.en.html"), ("p2", "a.de.html"), ("p3", "b.html"),
    ...                           ("p4", "c.en.html"), ("p5", "c.de.html")])
    >>> labels.documents["p1"], labels.documents["p3"], list(labels.variants.values())
    ('a.html (2 variants: de, en)', 'b.html', [2, 2])
    >>> labels.renamed["a.de.html"]
    'a.html (2 variants: de, en)'
    """
    whole: dict[str, str] = {}  # passage id -> scrubbed label (uncut)
    # scrubbed label -> the raw documents it stands for, in corpus order: a scrub can make
    # two documents one label (every URL holding a token is "<URL>"); the second and later
    # get " #2", " #3"… (their order in the corpus, no hash of the raw text: it may hold the
    # token or address the scrub removed)
    raws: dict[str, dict[str, int]] = {}
    for pid, doc in passages:
        if not doc:
            continue
        label = scrub_label(doc)
        same = raws.setdefault(label, {})
        nth = same.setdefault(doc, len(same) + 1)
        if nth > 1:
            label = f"{label} #{nth}"
        whole[pid] = label
    grouped = group_labels(set(whole.values()), groups)
    cut: dict[str, str] = {}  # whole label -> its label as listed (grouped, cut)
    for label in set(whole.values()):
        cut[label] = _cut(grouped.get(label, label))
    variants = Counter(cut[label] for label in grouped)
    renamed = {_cut(label): cut[label] for label in grouped}
    return DocumentLabels({pid: cut[label] for pid, label in whole.items()}, renamed,
                          dict(sorted(variants.items())))  # fmt: skip


def _cut(label: str) -> str:
    """``label`` cut to :data:`MAX_DOCUMENT_CHARS` when longer: its start, "…" and 8 hex
    digits of a hash of the whole (two labels cut alike stay two)."""
    if len(label) <= MAX_DOCUMENT_CHARS:
        return label
    digest = hashlib.blake2b(label.encode("utf-8"), digest_size=4).hexdigest()
    return f"{label[: MAX_DOCUMENT_CHARS - 9]}…{digest}"


def passage_documents(
    passages: Iterable[tuple[str, str | None]], groups: re.Pattern[str] | str | None = BUILT_IN
) -> dict[str, str]:
    """``{passage id: document label}``: :func:`document_labels`' ``documents``.

    >>> passage_documents([("p1", "faq.html"), ("p2", None), ("p3", "")])
    {'p1': 'faq.html'}
    >>> passage_documents([("p1", "https://x.org/a?sig=0f1e2d3c4b5a69788796a5b4c3d2e1f0"),
    ...                    ("p2", "https://x.org/b?sig=a1b2c3d4e5f60718293a4b5c6d7e8f90"),
    ...                    ("p3", "https://x.org/a?sig=0f1e2d3c4b5a69788796a5b4c3d2e1f0")])
    {'p1': '<URL>', 'p2': '<URL> #2', 'p3': '<URL>'}
    """
    return document_labels(passages, groups).documents


def production_documents(
    events: Sequence[QueryLogEvent],
    doc_of: Mapping[str, str],
    annotations: Sequence[Mapping[str, Any]] | None = None,
) -> list[str | None]:
    """Per event, the document its question is about: ``doc_of`` (:func:`passage_documents`)
    of the best result of its production retrieval (:func:`_first_id`: by rank, else by
    score; :func:`service.coverage.top_document`: the corpus's document, not the event's own
    ``doc``, so live and gold are labelled alike). ``None`` without a retrieval, with no
    results, when the best passage is not a corpus passage with a document, or when the
    event's ``annotations`` (one mapping per event, the scope stage's:
    :func:`~service.refusals.stage.annotate_scope`) judge it out of scope
    (:func:`judged_out_of_scope`).

    An out-of-scope question is about no document of the corpus, whichever one production
    happened to rank first: it is no gap in the gold set's coverage of the corpus, so it
    joins no ``document`` share (neither a document's nor the uncovered-documents one, whose
    numerator and denominator are the questions *not* judged out of scope) and takes no
    ``document`` gap; it keeps its own reasons (``answered_out_of_scope`` when answered).
    Trial 24: 99 of the 308 ``coverage_gap`` suggestions were CLINC150 chit-chat the
    detector judged out of scope that production had ranked onto an uncovered article.
    Only a verdict that is a fact leaves an event out: the detector calibrated (or a known
    question deciding) and the verdict stable (an ``unstable`` one, which the off-corpus
    cutoff's bootstrap range moves, is counted as in scope, as the ``out_of_scope`` drift
    dimension and the ``answered_out_of_scope`` reason leave it out of theirs). Leaving out
    every verdict had cost trial 37b's top-up surge a third of its gap suggestions (135 →
    91: the detector judged a quarter of the top-up questions out of scope, and 31 of the 43
    it called answered out of scope were unstable verdicts); with this rule its
    ``coverage_gap`` suggestions went 152 → 116, the top-up ones 113 → 101 (74 % → 87 % of
    them), and ``faq-topup.html`` stays a gap (216 of 2,880 → 179 of 2,561 questions).
    Trial 23's detector was uncalibrated: nothing left out.

    A retrieval that ranked nothing above anything names no document either
    (:func:`all_tied`: two or more results, every one with a score, all the same score):
    its first result is the retriever's tie order, not a passage the question is about.
    Trial 49: a TF-IDF retriever answered every question with no word in the corpus by
    p-0001…p-0010, all at score 0 (188 events), and ``squad-p-0001.txt`` became an
    "under-covered document" with 160 ``coverage_gap`` suggestions. The rule needs no scale
    (a cosine, BM25 or a logit ties alike); a single result, or a log without scores, is
    taken as ranked."""
    out: list[str | None] = []
    append = out.append
    if annotations is None:
        for event in events:
            retrieval = event.retrieval
            results = retrieval.results if retrieval is not None else ()
            append(doc_of.get(_first_id(results)) if results and not all_tied(results) else None)
        return out
    for event, notes in zip(events, annotations, strict=True):
        retrieval = event.retrieval
        results = retrieval.results if retrieval is not None else ()
        if (not results or all_tied(results)
                or (notes.get("out_of_scope_stable") is True
                    and notes.get("scope_calibrated") is not False)):  # fmt: skip
            append(None)
        else:
            append(doc_of.get(_first_id(results)))
    return out


def all_tied(results: Sequence[RetrievedPassage]) -> bool:
    """Whether a retrieval ranked nothing above anything, so that its first result is the
    retriever's tie order and not a passage the question is about: two or more results,
    each with a score, all equal, and

    * no two of them with different explicit ``rank`` s (a log that ranks its results says
      their order: Elasticsearch's ``constant_score`` or ``filter`` queries, or a log with
      one placeholder score, are ranked whatever the scores), or
    * all scores 0 (no match: a lexical retriever, TF-IDF or BM25, scores 0 a passage with no
      word of the question, and trial 49's retriever returned p-0001…p-0010 at score 0,
      ranked 1…10, when nothing matched). A log whose placeholder score is 0 is read as
      unranked: the replay report counts the retrievals so left out
      (:attr:`CoverageTracker.documents_all_tied`).

    O(1) when the first two scores differ, the usual case.

    >>> from service.events import RetrievedPassage as R
    >>> all_tied([R(id="a", score=0.0), R(id="b", score=0.0)])
    True
    >>> all_tied([R(id="a", score=0.3), R(id="b", score=0.0)]), all_tied([R(id="a", score=0.0)])
    (False, False)
    >>> all_tied([R(id="a", score=0.0), R(id="b")]), all_tied([R(id="a"), R(id="b")])
    (False, False)
    >>> all_tied([R(id="a", score=1.0, rank=1), R(id="b", score=1.0, rank=2)])
    False
    >>> all_tied([R(id="a", score=0.0, rank=1), R(id="b", score=0.0, rank=2)])
    True
    """
    if len(results) < 2:
        return False
    first = results[0].score
    if first is None or results[1].score != first:
        return False
    if not all(r.score == first for r in results):
        return False
    if first == 0.0:
        return True
    ranks = {r.rank for r in results if r.rank is not None}
    return len(ranks) < 2


def judged_out_of_scope(notes: Mapping[str, Any]) -> bool:
    """Whether an event's annotations judge it out of scope as a fact: the scope stage's
    stable verdict (``out_of_scope_stable``, ``None`` when the off-corpus cutoff's range
    moves it) is ``True`` and the detector is calibrated (``scope_calibrated`` not
    ``False``; a known question's verdict is the gold set's and always calibrated). Missing
    annotations (no scope stage): ``False``. :func:`production_documents`' rule.

    >>> judged_out_of_scope({"out_of_scope_stable": True, "scope_calibrated": True})
    True
    >>> [judged_out_of_scope(n) for n in ({"out_of_scope_stable": None, "out_of_scope": True},
    ...  {"out_of_scope_stable": True, "scope_calibrated": False}, {})]
    [False, False, False]
    """
    return notes.get("out_of_scope_stable") is True and notes.get("scope_calibrated") is not False


def _first_id(results: Sequence[RetrievedPassage]) -> str:
    """The id of production's best result (non-empty ``results``), as
    :func:`service.shadow.runner.production_ranking` orders them — the harvest pool's rank 1:
    by ``rank`` when every result has one, else by ``score`` (highest) when every result has
    one, else the first logged; ties keep the logged order. A log need not list its results
    best first.

    >>> from service.events import RetrievedPassage as R
    >>> _first_id([R(id="b", rank=2), R(id="a", rank=1)]), _first_id([R(id="b", score=0.2),
    ...     R(id="a", score=0.9)]), _first_id([R(id="b", rank=1, score=0.2), R(id="a", score=0.9)])
    ('a', 'a', 'a')
    >>> _first_id([R(id="b", rank=2), R(id="a")])
    'b'
    """
    first = results[0]
    if all(r.rank is not None for r in results):  # rank 1 logged first: the usual case
        return first.id if first.rank == 1 else min(results, key=lambda r: r.rank or 0).id
    if all(r.score is not None for r in results):
        return max(results, key=lambda r: r.score or 0.0).id
    return first.id


class CoverageTracker:
    """Topic, language and document counts of the most recent live events against fixed
    gold counts.

    The live side is a sliding window: the last ``window`` events' labels per dimension, in
    arrival order, with their counts kept incrementally (each event is added once and
    removed once: O(1) amortised per event), so a change of traffic shows within ``window``
    events however long the service has run.

    A label is under-covered (:meth:`gap`) when, with ``x`` of the window's ``n`` events
    carrying it, its live share ``p = x / n`` and its gold share ``g``:

    * ``p ≥ min_ratio × g`` — relative: a majority label a few points above its gold share
      (en 86 % live, 76 % gold) is not under-covered, a label the gold set lacks is;
    * and then ``gap = max(0, L − g)``, ``L`` the 95 % Wilson lower bound of ``p`` over the
      ``n`` window events (:func:`service.drift.stats_tests.wilson_interval`, Wilson 1927),
      which the caller compares with ``min_gap`` (absolute).

    This is :func:`service.coverage.gap_lower_bound`, the rule the drift view's coverage gaps
    use too (:func:`service.drift.stats_tests.coverage_gaps`, over all live traffic): the
    gold share taken as exact (the gold set is the set being completed, not a sample of
    one), so Newcombe's (1998, method 10) lower bound of ``p − g`` is ``L − g``.

    The ``document`` dimension counts only the events given a document
    (:meth:`update_each`'s ``documents``; an event without retrieval results, or one judged
    out of scope, :func:`production_documents`, joins no document window), and also keeps
    all-time counts (:attr:`document_totals`, one entry per corpus document seen) for the
    report's list (:meth:`document_gaps`, over all live traffic as the drift view's lists
    are). Those hold at most ``max_documents`` documents: past it the least counted are
    forgotten (down to 90 % of it, ties by label) and their events kept as
    :attr:`documents_uncounted`, which still count in every document's live share (a
    document forgotten and seen again starts afresh: its share is under-, never
    over-stated).

    Args:
        gold_counts: ``{dimension: {label: count}}`` of the gold set; a dimension without
            counts has no reference and never has a gap.
        min_live_events: window events needed before any gap is reported (``gap`` gives 0).
        window: most recent events counted (≥ 1).
        min_ratio: live share ÷ gold share from which a label can be under-covered (≥ 1).
        max_documents: documents the all-time counts hold at most (≥ 1).
        min_uncovered_rise: floor in [0, 1] of the rise of the uncovered-documents share
            (:meth:`uncovered`): while the 95 % lower bound of the window's share of events
            on documents no gold row asks about less the share of the events before the
            window (:func:`~service.coverage.rise_lower_bound`) is at least this, each such
            event's ``document`` gap is at least that bound (a surge spread over many
            documents, none with a gap of its own: trial 24); ``None``: off.
    """

    def __init__(
        self,
        gold_counts: Mapping[str, Mapping[str, int]],
        min_live_events: int = 200,
        window: int = 1_000,
        min_ratio: float = 2.0,
        max_documents: int = 10_000,
        min_uncovered_rise: float | None = None,
    ) -> None:
        self.gold = {dim: dict(counts) for dim, counts in gold_counts.items()}
        self._gold_total = {dim: sum(c.values()) for dim, c in self.gold.items()}
        self.min_live_events = min_live_events
        self.window = window
        self.min_ratio = min_ratio
        # per dimension: the window's labels, oldest first, and their counts (no zero counts)
        self._labels: dict[str, deque[str]] = {dim: deque(maxlen=window) for dim in DIMENSIONS}
        self.live: dict[str, Counter[str]] = {dim: Counter() for dim in DIMENSIONS}
        #: (dimension, label, count, events) -> gap (:meth:`update_each`); cleared with the
        #: gold counts, and when it reaches _MAX_GAPS entries
        self._gaps: dict[tuple[str, str, int, int], float] = {}
        #: all-time ``{document: events}`` (at most ``max_documents``: the corpus's
        #: documents, or fewer)
        self.document_totals: Counter[str] = Counter()
        #: events of the documents forgotten from :attr:`document_totals` (≥ 0)
        self.documents_uncounted = 0
        #: those of them on documents without a gold row when forgotten (≤
        #: :attr:`documents_uncounted`): the earlier uncovered share recounted after a gold
        #: refresh or a restore (:meth:`uncovered`) still holds them
        self.documents_uncounted_uncovered = 0
        #: all-time retrievals given no document because they ranked nothing
        #: (:func:`all_tied`; counted by :meth:`count_all_tied`, kept in the state)
        self.documents_all_tied = 0
        self.max_documents = max_documents
        #: the floor of the uncovered share's rise's 95 % lower bound (the window against
        #: the events before it) from which every event on an uncovered document takes that
        #: bound as its document gap (``None``: never)
        self.min_uncovered_rise = min_uncovered_rise
        #: window events whose document has no gold row (kept with the window)
        self._uncovered = 0
        #: [events on uncovered documents, events] given a document before the window (the
        #: all-time counts less the window's; a forgotten document's events as they were
        #: when forgotten: :attr:`documents_uncounted_uncovered`)
        self._earlier = [0, 0]
        #: set_gold's count (a key of _document_memo: a gold refresh changes every gap)
        self._gold_generation = 0
        #: ((events counted, gold generation, min_gap), :meth:`document_gaps`' list): an
        #: API poll of an unchanged state reuses it (one gap per corpus document: ~0.1 s at
        #: 20,000 documents)
        self._document_memo: tuple[tuple[int, int, float], list[UnderCovered]] | None = None
        #: whether the last :meth:`load` dropped a snapshot's document counts (saved under
        #: another :data:`DOCUMENT_RULE`)
        self.documents_reset = False

    @property
    def events(self) -> int:
        """Events in the window (at most ``window``): the ``language`` window's, which every
        event reaches (the ``topic`` one leaves out the questions given no topic)."""
        return len(self._labels["language"])

    def set_gold(self, gold_counts: Mapping[str, Mapping[str, int]]) -> None:
        """Replace the gold counts of the dimensions given (the gold set grew)."""
        for dim, counts in gold_counts.items():
            self.gold[dim] = dict(counts)
            self._gold_total[dim] = sum(self.gold[dim].values())
        self._gaps.clear()
        self._gold_generation += 1
        self._count_uncovered()

    def update(self, annotations: Iterable[Mapping[str, Any]]) -> None:
        """Count each event's ``topic`` and ``language`` annotation (missing ones: ``und``)
        into the window; the oldest events beyond ``window`` leave it. A question the topic
        stage gave no topic (``topic_unjudged_language``: no gold row is written in its
        language, :class:`~service.topics.stage.TopicStage`) is in no topic share, as in the
        drift view's: the ``topic`` window holds the latest ``window`` others.
        :meth:`update_each` without its gaps (one way to move the window)."""
        self.update_each(annotations if isinstance(annotations, list) else list(annotations))

    def update_each(
        self,
        annotations: Sequence[Mapping[str, Any]],
        documents: Sequence[str | None] | None = None,
    ) -> dict[str, list[float]]:
        """:meth:`update`, event by event: ``{dimension: [gap, …]}``, each event's label's
        :meth:`gap` over the window as it stands right after that event joined it (a
        ``topic`` gap of 0 for a question given no topic, which joins no topic window), so
        an event's gap is the same whatever batch it came in (judged over the whole batch,
        its later events counted too: a replay of 500-event batches found 2 of 3 coverage
        gaps of 50-event batches, trial 36). One dict update per event and dimension, a
        cached :func:`~service.coverage.gap_lower_bound` per distinct ``(label, count,
        events)``. ``documents``: each event's document (:func:`production_documents`,
        ``None``: none), which it joins the ``document`` window (and the all-time counts)
        with; without, every ``document`` gap is 0 and that window does not move.

        Raises:
            ValueError: ``documents`` is not as long as ``annotations``."""
        judged = [notes.get(UNJUDGED_TOPIC) is not True for notes in annotations]
        out: dict[str, list[float]] = {}
        if documents is None:
            out[DOCUMENT] = [0.0] * len(annotations)
        else:
            if len(documents) != len(annotations):
                raise ValueError(f"{len(documents)} documents for {len(annotations)} events")
            named = [doc for doc in documents if doc is not None]
            self.document_totals.update(named)
            if len(self.document_totals) > self.max_documents:
                self._forget_documents()
            if len(named) == len(documents):
                out[DOCUMENT] = self._push_each(DOCUMENT, named)
            else:
                kept = iter(self._push_each(DOCUMENT, named))
                out[DOCUMENT] = [0.0 if doc is None else next(kept) for doc in documents]
        for dim in ("topic", "language"):
            labels = [str(notes.get(dim) or "und") for notes in annotations]
            if dim == "topic" and not all(judged):
                rows = [label for label, j in zip(labels, judged, strict=True) if j]
                kept = iter(self._push_each(dim, rows))
                out[dim] = [next(kept) if j else 0.0 for j in judged]
            else:
                out[dim] = self._push_each(dim, labels)
        return out

    def _push_each(self, dim: str, labels: list[str]) -> list[float]:
        """Append ``labels`` to ``dim``'s window one at a time; each one's gap right after
        it (:meth:`update_each`).

        The ``document`` window (with gold document counts) also keeps the counts of its
        events on documents without a gold row and of the events before it
        (:meth:`uncovered`), in the same step that moves the window (one eviction, so the
        counts cannot drift from the window's); with ``min_uncovered_rise`` set, an
        uncovered document's gap is the larger of its own and the lower bound ``R`` of the
        uncovered share's rise (window against earlier events) when ``R ≥
        min_uncovered_rise`` (over the window as it stands right after the event joined it,
        as every gap here). The other windows pay two tests of a local per event for it."""
        window, counts, size = self._labels[dim], self.live[dim], self.window
        gold = self.gold.get(dim, {})
        gold_total = self._gold_total.get(dim, 0)
        cache, ratio, least = self._gaps, self.min_ratio, self.min_live_events
        # the uncovered-documents counts: kept for the document window with gold counts
        track = dim == DOCUMENT and bool(gold)
        floor = self.min_uncovered_rise if track else None
        u = self._uncovered
        earlier = self._earlier
        covered = True
        gaps: list[float] = []
        for label in labels:
            if len(window) >= size:  # (the deque drops its oldest as the label joins)
                old = window[0]
                left = counts[old] - 1
                if left:
                    counts[old] = left
                else:
                    del counts[old]
                if track:
                    earlier[1] += 1
                    if old not in gold:
                        u -= 1
                        earlier[0] += 1
            window.append(label)
            x = counts[label] = counts.get(label, 0) + 1
            if track:
                covered = label in gold
                if not covered:
                    u += 1
            n = len(window)
            if n < least or not gold_total:
                gaps.append(0.0)
                continue
            key = (dim, label, x, n)
            gap = cache.get(key)
            if gap is None:
                if len(cache) >= _MAX_GAPS:
                    cache.clear()
                gap = cache[key] = gap_lower_bound(x, n, gold.get(label, 0), gold_total,
                                                   ratio, label=label)  # fmt: skip
            if floor is not None and not covered and earlier[1] >= least:
                rise = rise_lower_bound(u, n, earlier[0], earlier[1])
                if rise >= floor and rise > gap:
                    gap = rise
            gaps.append(gap)
        if track:
            self._uncovered = u
        return gaps

    def _count_uncovered(self) -> None:
        """Recount the window's events on documents without a gold row, and the earlier
        events' (the gold counts, the window or the all-time counts were replaced).

        The earlier uncovered count is kept within ``[0, earlier events]``: the events of
        documents forgotten past ``max_documents`` count as uncovered or not by the gold
        counts of when they were forgotten, while the window's are judged by today's, so
        once a gold refresh (or a restore under a grown gold set) covers a forgotten
        document that still has events in the window, the difference could exceed the
        earlier events (a share above 1, whose Wilson bound raised ``ValueError`` in
        :meth:`uncovered` and in :meth:`update_each`'s rise). Clamped, the earlier share
        is over-, never under-stated there, so the rise is under-stated: no gap from it."""
        gold = self.gold.get(DOCUMENT) or {}
        self._uncovered = sum(n for doc, n in self.live[DOCUMENT].items() if doc not in gold)
        every = sum(self.document_totals.values()) + self.documents_uncounted
        uncovered = sum(n for doc, n in self.document_totals.items() if doc not in gold)
        uncovered += self.documents_uncounted_uncovered
        before = max(0, every - len(self._labels[DOCUMENT]))
        self._earlier = [min(before, max(0, uncovered - self._uncovered)), before]

    def uncovered(self) -> dict[str, Any] | None:
        """The share of live events whose document no gold row asks about: ``{"live": x,
        "live_total": n, "low": lo, "high": hi, "recent": {…}, "earlier": {…}, "rise_low":
        r, "min_rise": floor, "gap": bool, "counts": str}`` — all-time ``x`` of the ``n``
        events given a document (:attr:`document_totals`; the events of documents forgotten
        past ``max_documents`` are in ``n``, and in ``x`` those of documents without a gold
        row when forgotten: :attr:`documents_uncounted_uncovered`) and ``[lo, hi]`` its 95 %
        Wilson interval; ``recent`` the same of the window's events,
        ``earlier`` of the events before the window (``{"live", "live_total", "low",
        "high"}`` each); ``r`` the 95 % lower bound of recent share − earlier share
        (:func:`~service.coverage.rise_lower_bound`; ``None`` before ``min_live_events``
        events on each side); ``gap``: ``r`` is at least ``min_uncovered_rise`` (its
        ``min_rise``; never when that is ``None``). ``None`` without gold document counts.
        The gold set's share is 0 by construction: the test is against earlier traffic.
        Numerators and denominators alike count the events given a document, so the share is
        of the questions *not judged out of scope* (:func:`production_documents` gives an
        event the scope stage judged out of scope, stably and calibrated, no document): a
        surge of off-topic questions neither raises it (where production happens to rank
        them) nor dilutes it; ``counts`` says so (:data:`UNCOVERED_COUNTS`) for API clients."""
        gold = self.gold.get(DOCUMENT) or {}
        if not gold:
            return None
        totals, forgotten = dict(self.document_totals), self.documents_uncounted
        x = sum(c for doc, c in totals.items() if doc not in gold)
        x += self.documents_uncounted_uncovered
        n = sum(totals.values()) + forgotten
        u, m = self._uncovered, len(self._labels[DOCUMENT])
        e, k = self._earlier
        least, floor = self.min_live_events, self.min_uncovered_rise

        def part(x: int, n: int) -> dict[str, Any]:
            lo, hi = wilson_bounds(x, n)
            return {"live": x, "live_total": n, "low": lo, "high": hi}

        rise = rise_lower_bound(u, m, e, k) if m >= least and k >= least else None
        return part(x, n) | {
            "recent": part(u, m), "earlier": part(e, k), "rise_low": rise, "min_rise": floor,
            "gap": floor is not None and rise is not None and rise >= floor,
            "counts": UNCOVERED_COUNTS,
        }  # fmt: skip

    def gap(self, dimension: str, label: str | None) -> float:
        """How far ``label``'s live share is above its gold share (class docstring):
        ``max(0, L − g)`` when ``p ≥ min_ratio × g``, else 0; a share difference in [0, 1].
        0 before ``min_live_events`` window events, without gold counts, and for ``und``
        (undetermined: a question whose language could not be told, e.g. "ok??" or a number,
        is no coverage gap of a language; gold rows rarely carry ``und``, so at the 0.02
        ``min_gap`` such questions would otherwise take the reason from about 3 % of traffic)."""
        gold_total = self._gold_total.get(dimension, 0)
        n = len(self._labels[dimension]) if dimension in self._labels else 0
        if n < self.min_live_events or not gold_total:
            return 0.0
        key = str(label or UNDETERMINED)
        x = self.live[dimension][key]
        gold_count = self.gold[dimension].get(key, 0)
        return gap_lower_bound(x, n, gold_count, gold_total, self.min_ratio, label=key)

    def document_gaps(self, min_gap: float = 0.02) -> list[UnderCovered]:
        """The under-covered documents over all live traffic seen (:attr:`document_totals`
        against the gold counts: :func:`service.coverage.under_covered`, the same rule with
        ``min_ratio``), largest gap first; ``[]`` without gold document counts. Safe to
        call from another thread than the one counting (it reads a copy). Remembered until
        an event is counted, the gold counts change or a state is loaded: each ``/v1/status``
        would otherwise judge every corpus document again."""
        generation = self._gold_generation
        gold = self.gold.get(DOCUMENT) or {}
        if not gold:
            return []
        # a copy first (dict() of a Counter is one C-level copy): an API thread may call
        # this while the consumer's thread counts
        totals, uncounted = dict(self.document_totals), self.documents_uncounted
        key = (sum(totals.values()) + uncounted, generation, min_gap)
        memo = self._document_memo
        if memo is not None and memo[0] == key:
            return list(memo[1])
        gaps = under_covered(totals, gold, self.min_ratio, min_gap, uncounted)
        self._document_memo = (key, gaps)
        return list(gaps)

    def gaps(self) -> dict[str, dict[str, float]]:
        """``{dimension: {label: gap}}`` of every live label with a positive gap."""
        return {
            dim: {label: g for label in sorted(self.live[dim]) if (g := self.gap(dim, label))}
            for dim in DIMENSIONS
        }

    def state(self) -> dict[str, Any]:
        """``{"window": {dim: {"labels": [label, ...], "at": [index, ...]}}, "events": n,
        "live": {dim: {label: count}}}``: the window's labels oldest first, each an index
        into the distinct ``labels`` (a few bytes per event); ``events`` and ``live`` (the
        window's size and counts) are what a snapshot before the window held (all-time
        counts), so code of then reads a snapshot of now as recent counts; ``documents``:
        the all-time ``{document: events}`` (:attr:`document_totals`), and
        ``documents_uncounted`` (:attr:`documents_uncounted`) and
        ``documents_uncounted_uncovered`` when the former is not 0; ``document_rule``
        (:data:`DOCUMENT_RULE`): what the document counts leave out."""
        window: dict[str, dict[str, list[Any]]] = {}
        for dim, labels in self._labels.items():
            index: dict[str, int] = {}
            at = [index.setdefault(label, len(index)) for label in labels]
            window[dim] = {"labels": list(index), "at": at}
        return {
            "events": self.events,
            "live": {d: dict(c) for d, c in self.live.items()},
            "window": window,
            "documents": dict(self.document_totals),
            "document_rule": DOCUMENT_RULE,
        } | ({"documents_all_tied": self.documents_all_tied} if self.documents_all_tied
             else {}) | ({"documents_uncounted": self.documents_uncounted,
              "documents_uncounted_uncovered": self.documents_uncounted_uncovered}
             if self.documents_uncounted else {})  # fmt: skip

    def _forget_documents(self) -> None:
        """Forget the least counted documents (ties: the later label first) down to 90 % of
        ``max_documents``, their events added to :attr:`documents_uncounted`: one sort per
        tenth of the bound's new documents, not one per new document."""
        keep = max(1, self.max_documents * 9 // 10)
        ranked = sorted(self.document_totals.items(), key=lambda item: (-item[1], item[0]))
        self.documents_uncounted += sum(n for _, n in ranked[keep:])
        gold = self.gold.get(DOCUMENT) or {}
        self.documents_uncounted_uncovered += sum(n for doc, n in ranked[keep:] if doc not in gold)
        self.document_totals = Counter(dict(ranked[:keep]))

    def relabel_documents(
        self, names: Collection[str], renamed: Mapping[str, str]
    ) -> tuple[int, int]:
        """Bring the document labels of a loaded state to the corpus's: a label in
        ``renamed`` (a document's own label → its group's, :class:`DocumentLabels`) is
        counted under its group, in the window and the all-time counts; one not in
        ``names`` (the corpus's labels now) after that is dropped from both (a document the
        corpus no longer has, or a group the grouping no longer forms: never mixed with
        today's labels). The all-time counts are then bounded to ``max_documents`` (as
        grouped: a restore loads them unbounded, :meth:`load`'s ``bound``). ``(events
        relabelled, events dropped)``, all-time counts and window events together."""
        moved = dropped = 0
        totals: Counter[str] = Counter()
        for doc, n in self.document_totals.items():
            label = renamed.get(doc, doc)
            if label not in names:
                dropped += n
                continue
            moved += n if label != doc else 0
            totals[label] += n
        window: list[str] = []
        for doc in self._labels[DOCUMENT]:
            label = renamed.get(doc, doc)
            if label not in names:
                dropped += 1
                continue
            moved += label != doc
            window.append(label)
        self.document_totals = totals
        self._labels[DOCUMENT] = deque(window, maxlen=self.window)
        self.live[DOCUMENT] = Counter(window)
        self._document_memo = None
        self._count_uncovered()
        if len(totals) > self.max_documents:
            self._forget_documents()
        return moved, dropped

    def load(self, state: Mapping[str, Any], *, bound: bool = True) -> None:
        """Replace the window with :meth:`state`'s (its newest ``window`` events). A snapshot
        without ``window`` (before it) holds all-time counts: their mix seeds the window,
        ``min(events, window)`` events spread evenly (largest remainders), so gaps go on
        from the long-run shares until recent events replace them. The all-time document counts
        are the snapshot's ``documents`` (none in a snapshot before them), bounded to
        ``max_documents`` unless ``bound`` is false: a restore leaves that to
        :meth:`relabel_documents`, which bounds them once they are counted under their groups
        (a state saved before the grouping with 15,000 per-language labels of 5,000 articles
        would otherwise lose a tenth of them before they are regrouped). A snapshot saved
        under another ``document_rule`` than :data:`DOCUMENT_RULE` (or none: before the
        questions judged out of scope were left out) restores no ``document`` window or
        all-time counts: they start afresh (:attr:`documents_reset` is then ``True``)."""
        encoded = state.get("window")
        same_rule = state.get("document_rule") == DOCUMENT_RULE
        self.documents_reset = not same_rule and bool(
            state.get("documents")
            or (encoded or {}).get(DOCUMENT, {}).get("at")
            or state.get("live", {}).get(DOCUMENT)
        )
        for dim in DIMENSIONS:
            if dim == DOCUMENT and not same_rule:
                self._labels[dim] = deque(maxlen=self.window)
                self.live[dim] = Counter()
                continue
            if isinstance(encoded, Mapping):
                part = encoded.get(dim, {})
                names = [str(name) for name in part.get("labels", [])]
                at = [int(i) for i in part.get("at", [])]
                if any(not 0 <= i < len(names) for i in at):  # a damaged state: the
                    raise ValueError(f"harvest coverage window of {dim}: label index out "
                                     "of range")  # restore's StateError names it  # fmt: skip
                labels = [names[i] for i in at]
            else:
                counts = {str(k): int(v) for k, v in state.get("live", {}).get(dim, {}).items()}
                labels = _spread(counts, min(int(state.get("events", 0)), self.window))
            self._labels[dim] = deque(labels, maxlen=self.window)
            self.live[dim] = Counter(self._labels[dim])
        documents = (state.get("documents") or {}) if same_rule else {}
        self.document_totals = Counter({str(k): int(v) for k, v in documents.items()})
        self.documents_uncounted = int(state.get("documents_uncounted", 0)) if same_rule else 0
        self.documents_all_tied = int(state.get("documents_all_tied", 0)) if same_rule else 0
        self.documents_uncounted_uncovered = min(
            self.documents_uncounted, int(state.get("documents_uncounted_uncovered", 0))
        )
        if bound and len(self.document_totals) > self.max_documents:
            self._forget_documents()
        self._document_memo = None
        self._count_uncovered()


def _spread(counts: Mapping[str, int], size: int) -> list[str]:
    """``size`` labels in the proportions of ``counts`` (largest remainders, ties by label),
    each label's copies spread evenly over the list (sorted by ``(j + ½) / k``)."""
    total = sum(counts.values())
    if size <= 0 or total <= 0:
        return []
    exact = {label: c * size / total for label, c in counts.items() if c > 0}
    whole = {label: int(q) for label, q in exact.items()}
    short = size - sum(whole.values())
    for label in sorted(exact, key=lambda lab: (whole[lab] - exact[lab], lab))[:short]:
        whole[label] += 1
    slots = sorted(((j + 0.5) / k, label) for label, k in whole.items() for j in range(k))
    return [label for _, label in slots]


class ScoreWindow:
    """The last ``size`` best scores of each retriever, kept sorted for quantile look-ups.

    >>> window = ScoreWindow(size=4, min_count=4)
    >>> [window.is_low("r", s, 0.25) for s in (4.0, 3.0, 2.0, 1.0, 0.5, 3.5)]
    [False, False, False, False, True, False]
    """

    def __init__(self, size: int = 2_000, min_count: int = 200) -> None:
        self.size, self.min_count = size, min_count
        self._recent: dict[str, deque[float]] = {}
        self._sorted: dict[str, list[float]] = {}

    def is_low(self, retriever: str, score: float, quantile: float) -> bool:
        """Whether ``score`` is strictly below the window's ``quantile``-quantile, judged
        before ``score`` joins the window; ``False`` until ``min_count`` scores were seen.

        The quantile of the ``n`` sorted scores ``x[0] ≤ … ≤ x[n-1]`` is the empirical
        (inverse of the distribution function) one, ``x[⌈quantile·n⌉ − 1]`` (Hyndman & Fan
        1996, definition 1), ``quantile`` in (0, 1]. Strictly below: a score tied with the
        quantile is not low, so when every recent score is the same none is (a retriever
        that returns a constant score says nothing about confidence)."""
        ordered = self._sorted.get(retriever)
        if ordered is None:
            if len(self._sorted) >= _MAX_RETRIEVERS:
                return False
            ordered = self._sorted[retriever] = []
            self._recent[retriever] = deque()
        n = len(ordered)
        # ⌈quantile·n⌉ − 1, with a float product such as 0.1·30 = 3.0000000000000004 read as 3
        at = max(0, ceil(quantile * n - 1e-9) - 1)
        low = n >= self.min_count and quantile > 0 and score < ordered[at]
        recent = self._recent[retriever]
        recent.append(score)
        bisect.insort(ordered, score)
        if len(recent) > self.size:
            del ordered[bisect.bisect_left(ordered, recent.popleft())]
        return low

    def lows(self, events: Sequence[QueryLogEvent], quantile: float) -> list[bool]:
        """For each event in order, whether its production retrieval is of low confidence:
        it returned nothing scored, or ``is_low(*production_score(event), quantile)``
        (which its best score then joins); ``False`` for an event that logs no retrieval.
        Exactly those calls, in that order, as one loop over the batch (the harvest stage
        judges every event: two calls and a tuple an event otherwise). The quantile's place
        is worked out again only when the window's size differs from the last event's (a
        full window's is the same at every event)."""
        out: list[bool] = []
        append = out.append
        labels, sorted_of, recent_of = _RETRIEVER_LABELS, self._sorted, self._recent
        size, min_count = self.size, self.min_count
        insort, bisect_left = bisect.insort, bisect.bisect_left
        last_n, at = -1, 0  # the window size the quantile's place ``at`` was worked out for
        for event in events:
            retrieval = event.retrieval
            if retrieval is None:
                append(False)
                continue
            scores = [score for r in retrieval.results if (score := r.score) is not None]
            if not scores:  # production_score's None: low, and no score joins the window
                append(True)
                continue
            raw = retrieval.retriever
            if not raw:
                name = "production"
            else:
                name = labels.get(raw)  # type: ignore[assignment]
                if name is None:
                    name = _retriever_label(raw)
            best = max(scores)
            ordered = sorted_of.get(name)
            if ordered is None:  # is_low's first score of a retriever, or one too many
                append(self.is_low(name, best, quantile))
                continue
            n = len(ordered)
            if n != last_n:
                last_n, at = n, max(0, ceil(quantile * n - 1e-9) - 1)  # as is_low
            append(n >= min_count and quantile > 0 and best < ordered[at])
            recent = recent_of[name]
            recent.append(best)
            insort(ordered, best)
            if len(recent) > size:
                del ordered[bisect_left(ordered, recent.popleft())]
        return out

    def state(self) -> dict[str, list[float]]:
        return {name: list(scores) for name, scores in self._recent.items()}

    def load(self, state: Mapping[str, Iterable[float]]) -> None:
        for name, scores in state.items():
            for score in scores:
                self.is_low(name, float(score), 0.0)


def production_score(event: QueryLogEvent) -> tuple[str, float | None] | None:
    """``(retriever, best score)`` of the production retrieval: score ``None`` when it
    returned nothing (or nothing scored); ``None`` when the event logs no retrieval. The
    retriever's name is scrubbed (:func:`service.pii.scrub_label`, remembered: the PII stage
    may be off) since it keys the persisted score windows."""
    retrieval = event.retrieval
    if retrieval is None:
        return None
    scores = [score for r in retrieval.results if (score := r.score) is not None]
    raw = retrieval.retriever
    if not raw:
        return "production", (max(scores) if scores else None)
    name = _RETRIEVER_LABELS.get(raw)
    if name is None:  # scrub_label's memo costs a call and a closure per event
        name = _retriever_label(raw)
    return name, (max(scores) if scores else None)


def _retriever_label(raw: str) -> str:
    """:func:`scrub_label` of a retriever's name, remembered (:data:`_RETRIEVER_LABELS`)."""
    if len(_RETRIEVER_LABELS) >= _MAX_LABELS:
        _RETRIEVER_LABELS.clear()
    name = _RETRIEVER_LABELS[raw] = scrub_label(raw)
    return name


def event_reasons(
    event: QueryLogEvent,
    notes: Mapping[str, Any],
    config: HarvestConfig,
    gap: float = 0.0,
    low_confidence: bool = False,
    active: Collection[str] | None = None,
) -> tuple[str, ...]:
    """The reasons (in :data:`~service.harvest.config.REASONS` order) that apply to one event.

    Args:
        notes: the event's annotations (``topic``, ``refused``, ``under_refusal``,
            ``acl_leaks``); missing keys mean "unknown", never a reason. An under-refusal
            whose ``scope_calibrated`` is ``False`` (the out-of-scope detector is below the
            quality floor) is no reason either, nor one whose ``scope_unstable`` is ``True``
            (the off-corpus cutoff's bootstrap range moves its verdict:
            :func:`~service.refusals.scope.unstable_verdicts`; trial 37b: 128 of the 178
            covered-intent questions and 31 of the 43 top-up ones the harvest called
            answered out of scope were such, against 33 of the 119 CLINC150 / Hinglish-TOP
            ones), nor is a ``novel`` topic whose ``novelty_calibrated`` is ``False``.
        gap: the larger coverage gap of its topic and language (reason from ``min_gap``).
        low_confidence: the caller's verdict from :class:`ScoreWindow`.
        active: the reasons with weight > 0 (computed from ``config`` when ``None``; callers
            on the live path pass it once computed).

    Reasons with weight 0 are left out.
    """
    if active is None:
        active = {r for r in REASONS if config.weight(r) > 0}
    # one bit per reason (REASONS order), then one cached tuple per (bits, active): the
    # common case allocates nothing (this runs on every live event)
    bits = 0
    if gap > 0 and gap >= config.min_gap:
        bits = _COVERAGE_GAP
    get = notes.get
    if get("topic") == "novel" and get("novelty_calibrated") is not False:
        bits |= _NOVEL
    if get("refused") is True:
        bits |= _REFUSED
    if (get("under_refusal") is True and get("scope_calibrated") is not False
            and get("scope_unstable") is not True):  # fmt: skip
        bits |= _OUT_OF_SCOPE
    if low_confidence:
        bits |= _LOW_CONFIDENCE
    # shadow_disagreement: from shadow results, see HarvestStage.observe_shadow
    feedback = event.feedback
    if feedback is not None and feedback.rating is not None:
        if feedback.rating < config.negative_rating:
            bits |= _NEGATIVE_FEEDBACK
    answer, retrieval = event.answer, event.retrieval
    if answer is not None and retrieval is not None and answer.citations:
        # each citation looked for among the results' ids in order, stopping at its own:
        # answers cite their top passages, so most results are never read (a set of all
        # ~10 ids read and hashed each: ~4 % of the harvest stage)
        results = retrieval.results
        for cited in answer.citations:
            for result in results:
                if result.id == cited:
                    break
            else:
                bits |= _CITED_NOT_RETRIEVED
                break
    if get("acl_leaks"):  # an answer cited what the asker may not read
        bits |= _ACL_VIOLATION
    if not bits:
        return ()
    return _named(bits, active if isinstance(active, frozenset) else frozenset(active))
