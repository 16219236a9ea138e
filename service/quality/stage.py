"""Live quality stage: known questions scored on live traffic, and access-control violations.

Placed after the refusal stage (it reads ``annotations[i]["refused"]``) and before the shadow
stage (which should hand every finished :class:`~service.shadow.runner.ShadowResult` to
:meth:`LiveQualityStage.observe_candidate`). Per batch, :meth:`LiveQualityStage.process`:

1. matches every question against the gold set in one call
   (:meth:`~service.quality.known.KnownQuestionIndex.lookup_many`) and writes
   ``annotations[i]["known"] = {"gold_id": str, "similarity": float, "scores": {"recall",
   "hit", "rr"} | None} | None`` (``scores``: production's, step 2, ``None`` when not scored;
   the replay's time series reads them, :mod:`service.jobs.series`); a gold row
   above the threshold that does not ask the same question
   (:func:`service.text.wording.known_disagreement`: harvest's merge rule on numbers,
   negation, content words and question word, a detail of the gold row left out allowed)
   is no match, and the event
   counts in ``near_matches_rejected`` (by the reason of the best row turned down, and
   whether a next-best row matched instead), so a report shows why a near-duplicate was
   not scored;
2. for a known question, scores production's ranking (``production_ranking(event)``) when it
   is not empty: recall@k, hit@k, reciprocal rank@k (:func:`~service.quality.known.live_scores`,
   trec_eval semantics). The gold passages the asker's role may not read are dropped first;
   a question left with none (gold ``()``, or a student asking a staff-only question) is
   *unanswerable for this asker*: not scored, and a refusal is the right answer;
3. counts refusals of known questions both ways: ``refused_answerable`` (``refused`` is
   True on an answerable one) and ``answered_unanswerable`` (``refused`` is False on an
   unanswerable one); ``refused`` None counts in neither. A known question answerable for
   its asker gets ``annotations[i]["known_refused"]`` = ``refused`` (``True``: an
   over-refusal, no out-of-scope detector needed; absent otherwise, and when ``refused`` is
   None): the drift stage, which runs after this one, feeds its ``known_refusal`` rate from
   it (:mod:`service.drift.stage`). A known question production's ranking was scored on
   gets ``annotations[i]["known_missed"]`` = hit@k is 0 (its top k holds no passage the
   asker may read among the gold ones; absent when not scored): the drift stage's
   ``known_miss`` rate (trial 38);
4. writes ``annotations[i]["acl_violations"]`` (production's retrieved passage ids the
   event's ``user.role`` may not read, ranking order; ``[]`` when none or role unknown) and
   ``annotations[i]["acl_leaks"]`` (the answer's citations the role may not read, when the
   answer was not a refusal: the restricted text reached the user). Both are counted per
   (retriever, role label); events with either are kept for review.

Per language (the event's ``language`` annotation, :mod:`service.quality.by_language`):
production's known-question aggregates and the refusal counts are kept per gold row and
language too, so the report gives each language's hit rate, recall, MRR and refusal rate of
known answerable questions (``by_language``), under the same gold-set change rules.

Role labels are bounded: a role named in the corpus ACLs (first ``max_roles``), else
``"other"``; ``None`` → ``"unknown"``. Retriever labels are production's label and the
configured candidates'. The review list holds the newest leaks first, then the newest
retrieval violations, never more than ``max_review`` rows; each row is ``{"event_id",
"timestamp", "role", "retriever", "passage_ids", "leaked", "question"}`` with the question as
the pipeline holds it (PII is scrubbed upstream).

Gold-set changes: a known question's measurement is per gold row (its passages, its kind, its
text), so the aggregates are kept per (retriever, gold row) and the report's figures are their
sums. When the gold set changes (a new :attr:`LiveQualityStage.index`: the service reloads the
file after an accepted suggestion or an edit; a resumed replay or a restart finds another
gold-set version in its state), the measurements of rows whose content is unchanged
(:func:`~service.data.goldset.row_version`) are carried over and those of changed or removed
rows dropped; an appended row starts with none. A row renumbered (the same content,
:func:`~service.data.goldset.row_content`, under another id: a renumbered or reordered file)
is unchanged: its measurements move to its new id (trial 50, M2), unless rows alike but for
their ids make the move ambiguous (:func:`_carried_rows`; a state lists every row alike a
measured one, so a restore decides as the reload does), and the change's ``reason`` says
how many moved. A state written before session 51 names its rows' contents by version only
(with the id), so a restore of it matches rows by id. Each change is recorded in the report's
``coverage`` (versions, the last event time before it, rows and events carried over and
dropped), and ``coverage.since`` is the earliest event the kept measurements cover, so no
figure restarts or mixes silently. (An appended row also shifts the n-gram IDF a little, so a
later live question may match it rather than an older row: each kept measurement still scored
a live question against the gold row it near-duplicated when asked.) Appending a gold row
re-weights the n-grams, so a question matched near the threshold may differ from a one-shot
run on the final gold set: the carried-over figures count it, such a run may not. A change
of ``k`` drops every row's recall, hit and RR (they depend on k) and keeps the refusal counts
(they do not); a change of the known-question threshold drops every measurement (the matches
themselves were made at the other threshold); both are recorded. ACL counts do not depend on
the gold set: they are cumulative over every gold-set version since ``acl.since`` (the first
event the stage saw). A version-1 state (no first events, aggregates not per row) makes
``coverage.since`` and ``coverage.rows`` unknown (``None``) while its figures are kept, and
``acl.since`` unknown from then on.

The service sets :attr:`LiveQualityStage.index` under the engine's lock, which
:meth:`LiveQualityStage.process` runs under too. The stage does not rely on it: a batch's
questions are matched outside the stage's lock, and a match on a gold row that an index set
meanwhile changed or removed is not counted.

Persistence: the aggregates, the measured rows' versions, the changes and the review rows are
the snapshot (versioned, JSON-able; a version-1 snapshot's known aggregates, which are not per
row, come back as one block kept only while the gold-set version is unchanged). The map of
recently matched events (for candidates' results) is not persisted: results in flight at a
restart are lost anyway, which only thins the sample. A gold-set change keeps the entries of
unchanged rows (a candidate's result then scores the same row production's match did) and
drops the others; a threshold change drops them all. The known-question threshold, the first
gold-set version (the change list keeps the newest 20) and whether the ACL counts' first event
is unknown are part of the snapshot too.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple

from service.data.goldset import row_content, row_version
from service.pipeline import Batch
from service.quality.acl import AccessPolicy
from service.quality.by_group import GROUP_FIELDS, LANGUAGE_FIELD, group_rows, paired_by_question
from service.quality.by_language import FEW, language_of, wilson
from service.quality.known import KnownLookup, KnownQuestionIndex, live_scores
from service.quality.where import missing_rows
from service.records import GoldQuestion
from service.shadow.runner import ShadowResult, production_ranking
from service.text.subject import subject

__all__ = [
    "LiveQualityStage",
    "PairedCells",
    "add_paired_tests",
    "coverage_note",
    "known_refusal_text",
    "language_lines",
    "rejected_note",
]

_VERSION = 2
_SCORES = ("recall", "hit", "rr")
#: Gold-row key of a version-1 snapshot's known aggregates (not per row): its "row version"
#: is the whole gold-set version.
_WHOLE = ""
#: Gold-set changes kept in the report (the newest).
_MAX_CHANGES = 20
#: Time buckets the latest window's by-group figures are counted in (a bucket is the window
#: over this: an hour of a one-day window).
RECENT_BUCKETS = 24


class LiveQualityStage:
    """Pipeline stage ``"quality"`` (behaviour in the module docstring).

    Args:
        index: known-question index, or ``None`` (no known-question scoring).
        policy: access policy, or ``None`` (no ACL checks).
        k: cutoff of recall/hit/RR, >= 1.
        production: retriever label of production's ranking.
        max_review: review rows kept, >= 0.
        max_roles: role label values besides ``other``/``unknown``, >= 1.
        max_events: recently matched events remembered for candidates' results, >= 1.
        future_tolerance_s: seconds an event may be stamped ahead of ``clock``; later ones
            are scored but never become the coverage's ``since`` or last event time (the
            ``at`` of a gold-set change): one client clock years ahead must not date them
            (the drift windows' setting of the same name, :mod:`service.drift.windows`).
        min_n: a language's row over fewer known questions than this is marked ``few``
            (``analytics.quality_min_class``; :mod:`service.quality.by_language`).
        recent_window_s: the span of event time the by-group figures of the latest window
            cover (``analytics.drift.known_window_s``: the ``known_miss`` rate's window), > 0;
            their rows count scored events only (``n_known`` = ``n_scored``).
        clock: the wall clock, Unix seconds.

    Raises:
        ValueError: a bound below its minimum.
    """

    name = "quality"
    #: sets ``known`` and the ACL lists only (see :class:`service.pipeline.Stage`)
    keeps_counts = True

    def __init__(
        self,
        index: KnownQuestionIndex | None,
        policy: AccessPolicy | None,
        *,
        k: int = 10,
        production: str = "production",
        max_review: int = 50,
        max_roles: int = 16,
        max_events: int = 100_000,
        future_tolerance_s: float = 60.0,
        min_n: int = FEW,
        recent_window_s: float = 86_400.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if k < 1 or max_review < 0 or max_roles < 1 or max_events < 1 or recent_window_s <= 0:
            raise ValueError("need k >= 1, max_review >= 0, max_roles >= 1, max_events >= 1, "
                             "recent_window_s > 0")  # fmt: skip
        self.min_n = min_n
        self.recent_window_s = recent_window_s
        self.policy, self.k, self.production = policy, k, production
        self.future_tolerance_s, self._clock = future_tolerance_s, clock
        self._index = index
        self._row_versions = _row_versions(index)
        self._row_contents = _row_contents(index)
        self.max_review, self.max_events = max_review, max_events
        self._roles = frozenset(policy.roles[:max_roles]) if policy is not None else frozenset()
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, str] = OrderedDict()
        # event id -> production's (recall, hit, rr) on it, for the recent events it scored
        self._recent_scores: dict[str, tuple[float, float, float]] = {}
        # production's scored known events per time bucket (a 24th of recent_window_s) and
        # gold id -> [n, n, Σr, Σh, Σrr], the latest RECENT_BUCKETS + 1 buckets kept: the
        # by-group figures of the latest window (bounded by buckets × gold rows; persisted)
        self._bucket_s = recent_window_s / RECENT_BUCKETS
        self._recent_known: dict[int, dict[str, list[float]]] = {}
        # candidate -> gold id -> [n both scored, production's Σr, Σh, Σrr, the candidate's
        # Σr, Σh, Σrr]: the paired comparison, on the events both were scored on
        self._paired: dict[str, dict[str, list[float]]] = {}
        # retriever -> gold id -> [n_known, n_scored, Σr, Σh, Σrr]
        self._known: dict[str, dict[str, list[float]]] = {}
        # retriever -> the same summed over its rows, in event order (the reported figures;
        # recomputed from the rows only when a gold-set change drops some)
        self._totals: dict[str, list[float]] = {}
        self._refusals: dict[str, Counter[str]] = {}  # gold id -> refusal counts
        # production's known aggregates and the refusal counts per gold id and language
        self._lang_known: dict[str, dict[str, list[float]]] = {}
        self._lang_refusals: dict[str, dict[str, Counter[str]]] = {}
        # the per-language figures cover less than the totals (a state kept before them)
        self._lang_partial = False
        # gold id turned down (the best, per event) -> {reason: events, "matched_another": n}
        self._rejected: dict[str, Counter[str]] = {}
        self._first_seen: dict[str, datetime] = {}  # gold id -> its first measured event
        self._since: datetime | None = None  # first event seen (ACL counts' start)
        # the ACL counts include a version-1 state's, whose first event is unknown
        self._since_unknown = False
        # the gold-set version the state first ran on (the change list is bounded)
        self._first_version = _gold_version(index)
        self._last: datetime | None = None  # latest event seen
        self._events = 0  # events seen, over every run on the state
        self._changes: list[dict[str, Any]] = []
        self._acl: Counter[tuple[str, str, str]] = Counter()  # (kind, retriever, role) -> n
        self._review: dict[str, deque[dict[str, Any]]] = {
            "leaks": deque(maxlen=max_review),
            "violations": deque(maxlen=max_review),
        }
        self._pending = self._empty_pending()

    # ---- the gold set -------------------------------------------------------------------

    @property
    def index(self) -> KnownQuestionIndex | None:
        """The known-question index (its gold set defines the known questions)."""
        return self._index

    @index.setter
    def index(self, index: KnownQuestionIndex | None) -> None:
        """Use a new index; when its gold-set version differs, carry over the measurements
        of unchanged gold rows, drop the others and record the change (module docstring)."""
        with self._lock:
            old, old_rows, old_contents = self._index, self._row_versions, self._row_contents
            self._index, self._row_versions = index, _row_versions(index)
            self._row_contents = _row_contents(index)
            old_version = old.gold.version if old is not None else None
            if self._first_version is None:
                self._first_version = _gold_version(index)
            if old is not None and index is not None and old.threshold != index.threshold:
                reason = (f"known-question threshold changed from {old.threshold:g} to "
                          f"{index.threshold:g}")  # fmt: skip
                self._reconcile(old_version, {}, reason=reason, drops="all")
            elif old_version != _gold_version(index):
                self._reconcile(old_version, {**old_rows, _WHOLE: old_version or ""},
                                old_contents=old_contents)  # fmt: skip

    def _reconcile(
        self,
        old_version: str | None,
        old_rows: Mapping[str, str],
        reason: str = "gold set changed",
        drops: str = "changed rows",
        old_contents: Mapping[str, str] | None = None,
    ) -> None:
        """Drop what a change invalidates and record it.

        ``drops``: ``"changed rows"`` (a gold-set change: keep the measurements of gold rows
        whose version in ``old_rows``, the rows they were measured on, equals the current
        one, and of those whose content in ``old_contents`` (:func:`~service.data.goldset.
        row_content`, the row without its id) the current gold set holds under another id —
        a renumbered row, moved to its new id (:func:`_carried_rows`); drop the rest),
        ``"scores"`` (a ``k`` change: drop every row's recall, hit and RR, which depend on
        k; keep the refusal counts, which do not) or ``"all"`` (a threshold change: the
        matches themselves were made at another threshold).
        """
        current = {**self._row_versions, _WHOLE: _gold_version(self._index) or ""}
        scored: set[str] = set().union(*self._known.values())
        measured = set(self._first_seen).union(self._refusals, scored)
        carried: dict[str, str] = {}
        kept: set[str]
        if drops == "scores":
            kept, dropped = set(), scored
        elif drops == "all":
            kept, dropped = set(), measured
        else:
            carried = _carried_rows(old_rows, old_contents or {}, current, self._row_contents)
            kept = measured & carried.keys()
            dropped = measured - kept
        production = self._known.get(self.production, {})
        kept_events, dropped_events = (int(sum(production[g][0] for g in rows if g in production))
                                       for rows in (kept, dropped))  # fmt: skip
        renamed = sum(carried[g] != g for g in kept)
        if drops == "changed rows":
            self._carry(carried)
        else:
            for cells in self._known.values():
                for gold_id in dropped:
                    cells.pop(gold_id, None)
            self._known = {name: cells for name, cells in self._known.items() if cells}
            for gold_id in dropped:
                self._lang_known.pop(gold_id, None)
            for cells in self._paired.values():
                for gold_id in dropped:
                    cells.pop(gold_id, None)
            self._paired = {name: cells for name, cells in self._paired.items() if cells}
            if drops == "all":
                for gold_id in dropped:
                    self._refusals.pop(gold_id, None)
                    self._lang_refusals.pop(gold_id, None)
                    self._first_seen.pop(gold_id, None)
                self._rejected.clear()  # turned down at another threshold
                self._recent.clear()  # candidates' results in flight: matched at another one
            # production's scores were taken at the old k (or threshold)
            self._recent_scores.clear()
            self._recent_known = {}
        if dropped:
            self._totals = {name: _sum_cells(cells.values()) for name, cells in self._known.items()}
        if renamed:
            reason += f"; {renamed} measured rows renumbered (same content, new id), kept"
        unknown = self._last is None and self._since_unknown  # at a version-1 state's restore
        self._changes.append({
            "from": old_version, "to": _gold_version(self._index), "reason": reason,
            "drops": drops, "at": self._last.isoformat() if self._last is not None else None,
            "after_events": None if unknown else self._events,
            "kept_rows": None if _WHOLE in kept else len(kept),
            "kept_events": kept_events,
            "dropped_rows": None if _WHOLE in dropped else len(dropped),
            "dropped_events": dropped_events,
        })  # fmt: skip
        del self._changes[:-_MAX_CHANGES]

    def _carry(self, carried: Mapping[str, str]) -> None:
        """Keep the per-row state of the old gold rows in ``carried`` (old id -> current id),
        under their current ids, and drop every other row's: the aggregates, refusal counts,
        per-language cells, first events, rejections, the latest window's buckets and the
        matched events in flight for candidates' results (still valid for a row of the same
        content at the same threshold, scored at the current k when they arrive)."""

        def move(cells: Mapping[str, Any]) -> dict[str, Any]:
            return {carried[g]: cell for g, cell in cells.items() if g in carried}

        self._known = {name: moved for name, cells in self._known.items()
                       if (moved := move(cells))}  # fmt: skip
        self._paired = {name: moved for name, cells in self._paired.items()
                        if (moved := move(cells))}  # fmt: skip
        self._lang_known, self._lang_refusals = move(self._lang_known), move(self._lang_refusals)
        self._refusals, self._first_seen = move(self._refusals), move(self._first_seen)
        self._rejected = move(self._rejected)
        self._recent = OrderedDict((event_id, carried[gold_id])
                                   for event_id, gold_id in self._recent.items()
                                   if gold_id in carried)  # fmt: skip
        self._recent_scores = {e: v for e, v in self._recent_scores.items() if e in self._recent}
        self._recent_known = {b: moved for b, cells in self._recent_known.items()
                              if (moved := move(cells))}  # fmt: skip

    # ---- labels and small helpers -------------------------------------------------------

    def role_label(self, role: str | None) -> str:
        """Bounded metric label of a role: an ACL role, ``"other"``, or ``"unknown"``."""
        if role is None:
            return "unknown"
        return role if role in self._roles else "other"

    def _readable(self, question: GoldQuestion, role: str | None) -> bool:
        """True when the live asker's ``role`` may read a gold passage (``None``: any)."""
        policy = self.policy
        return any(policy is None or policy.allowed(pid, role) for pid in question.gold)

    @staticmethod
    def _empty_pending() -> dict[str, Any]:
        return {"known": Counter(), "known_recall": {}, "known_hit": {}, "known_rr": {},
                "acl": Counter(), "refusals": Counter()}  # fmt: skip

    # ---- live path ----------------------------------------------------------------------

    def process(self, batch: Batch) -> None:
        """Annotate ``known``, ``acl_violations`` and ``acl_leaks``; update the aggregates.

        The questions are matched outside the stage's lock (the service sets :attr:`index`
        under the engine's lock, around this call too); should the index change meanwhile,
        a match on a gold row the change altered or removed, or any match when the
        threshold changed, is not counted (the change dropped those measurements); one on an
        unchanged row counts as usual.
        """
        with self._lock:
            index, matched_on, contents = self._index, self._row_versions, self._row_contents
        lookups: list[KnownLookup] = (
            index.lookup_many([subject(e.question) for e in batch.events]) if index else []
        )
        # without a restricted passage (or an asker's role) nothing can be a violation: the
        # ranking is then only needed to score a known question
        acl = self.policy is not None and bool(self.policy.roles)
        with self._lock:
            if self._index is not index:  # changed while matching (see above)
                new = self._index
                same = new is not None and index is not None and new.threshold == index.threshold
                # matched or turned down on a row the change left unchanged (under its id now)
                carried = (_carried_rows(matched_on, contents, self._row_versions,
                                         self._row_contents) if same else {})  # fmt: skip
                lookups = [
                    KnownLookup(m._replace(gold_id=carried[m.gold_id])
                                if m and m.gold_id in carried else None,
                                r._replace(gold_id=carried[r.gold_id])
                                if r and r.gold_id in carried else None)
                    for m, r in lookups
                ] or [KnownLookup(None, None)] * len(batch.events)  # fmt: skip
                index = new
            times = [e.timestamp for e in batch.events]
            if times:
                self._events += len(times)
                limit = self._clock() + self.future_tolerance_s
                if max(times).timestamp() > limit:  # stamped in the future: not a time to show
                    times = [t for t in times if t.timestamp() <= limit]
            if times:
                first, last = min(times), max(times)
                self._since = first if self._since is None else min(self._since, first)
                self._last = last if self._last is None else max(self._last, last)
            for i, (event, notes) in enumerate(zip(batch.events, batch.annotations, strict=True)):
                role = event.user.role if event.user is not None else None
                check = acl and role is not None
                match, rejected = lookups[i] if index is not None else (None, None)
                if rejected is not None:
                    counts = self._rejected.setdefault(rejected.gold_id, Counter())
                    counts[rejected.reason] += 1
                    counts["matched_another"] += match is not None
                ranking = production_ranking(event) if check or match is not None else ()
                notes["known"] = None
                if match is not None and index is not None:
                    question = index.gold.by_id[match.gold_id]
                    seen = self._first_seen.get(match.gold_id)
                    if seen is None or event.timestamp < seen:
                        self._first_seen[match.gold_id] = event.timestamp
                    scores = self._score(self.production, question, role, ranking)
                    language = language_of(notes)
                    self._count_language(match.gold_id, language, scores)
                    notes["known"] = {
                        "gold_id": match.gold_id,
                        "similarity": match.similarity,
                        "scores": None
                        if scores is None
                        else dict(zip(_SCORES, scores, strict=True)),
                    }
                    self._remember(event.event_id, match.gold_id, scores)
                    if scores is not None:  # the drift stage's known_miss rate
                        notes["known_missed"] = scores[1] == 0.0
                        self._count_recent(event.timestamp.timestamp(), match.gold_id, scores)
                    refused = notes.get("refused")
                    if self._count_refusal(question, role, refused, language) and \
                            refused is not None:  # fmt: skip
                        notes["known_refused"] = bool(refused)
                violations = self._violations(ranking, role) if check else []
                cited = event.answer.citations if check and event.answer is not None else ()
                leaks = self._violations(cited, role) if notes.get("refused") is not True else []
                notes["acl_violations"], notes["acl_leaks"] = violations, leaks
                if violations or leaks:
                    origin = (event.event_id, event.timestamp, event.question)
                    self._flag(self.production, role, violations, leaks, origin)

    def observe_candidate(self, result: ShadowResult) -> None:
        """Fold in a shadow candidate's finished result: ACL violations of its ranking for
        ``result.role`` and, when the event was matched recently, its live recall on it.
        Failed calls (``result.error`` set) are ignored."""
        if result.error is not None:
            return
        with self._lock:
            violations = self._violations(result.ranking, result.role)
            if violations:
                origin = (result.event_id, result.timestamp, result.question)
                self._flag(result.candidate, result.role, violations, [], origin)
            gold_id = self._recent.get(result.event_id)
            if gold_id is not None and self.index is not None:
                # _recent keeps only rows a change left unchanged
                question = self.index.gold.by_id[gold_id]
                scores = self._score(
                    result.candidate, question, result.role, result.ranking, ran=True
                )
                production = self._recent_scores.get(result.event_id)
                if scores is not None and production is not None:
                    cell = self._paired.setdefault(result.candidate, {}).setdefault(
                        gold_id, [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
                    )
                    cell[0] += 1
                    for j, value in enumerate((*production, *scores)):
                        cell[1 + j] += value

    def _remember(
        self, event_id: str, gold_id: str, scores: tuple[float, float, float] | None
    ) -> None:
        """Remember a matched event's gold row, and production's scores when it scored them,
        for the candidates' results to come (the newest :attr:`max_events`)."""
        self._recent[event_id] = gold_id
        self._recent.move_to_end(event_id)
        if scores is not None:
            self._recent_scores[event_id] = scores
        else:
            self._recent_scores.pop(event_id, None)
        while len(self._recent) > self.max_events:
            evicted, _ = self._recent.popitem(last=False)
            self._recent_scores.pop(evicted, None)

    def _violations(self, ranking: Sequence[str], role: str | None) -> list[str]:
        return self.policy.violations(ranking, role) if self.policy is not None else []

    def _score(
        self,
        retriever: str,
        question: GoldQuestion,
        role: str | None,
        ranking: Sequence[str],
        ran: bool = False,
    ) -> tuple[float, float, float] | None:
        """Count a known event; score it unless unanswerable for ``role`` or the ranking is
        empty without proof the retriever ran (``ran``: a candidate's empty answer scores 0;
        production's empty results may just be unlogged). Returns the (recall, hit, RR)
        scored, or ``None`` when not scored."""
        cells = self._known.setdefault(retriever, {})
        cell = cells.setdefault(question.id, [0, 0, 0.0, 0.0, 0.0])
        total = self._totals.setdefault(retriever, [0, 0, 0.0, 0.0, 0.0])
        cell[0] += 1
        total[0] += 1
        self._pending["known"][retriever] += 1
        if not (ranking or ran) or not self._readable(question, role):
            return None
        policy = self.policy
        readable = None if policy is None else (lambda pid: policy.allowed(pid, role))
        scores = live_scores(question, ranking, self.k, readable=readable)
        cell[1] += 1
        total[1] += 1
        for j, name in enumerate(_SCORES):
            cell[2 + j] += scores[name]
            total[2 + j] += scores[name]
            self._pending[f"known_{name}"].setdefault(retriever, []).append(scores[name])
        return scores["recall"], scores["hit"], scores["rr"]

    def _count_recent(self, at: float, gold_id: str, scores: tuple[float, float, float]) -> None:
        """Count production's scored known event at Unix time ``at`` on ``gold_id`` in its
        time bucket; buckets older than the newest's last :data:`RECENT_BUCKETS` are dropped.
        An event stamped beyond ``future_tolerance_s`` ahead of the clock is not counted (it
        would hold the window in the future)."""
        if at > self._clock() + self.future_tolerance_s:
            return
        bucket = int(at // self._bucket_s)
        buckets = self._recent_known
        if bucket not in buckets:
            newest = max(buckets, default=bucket)
            if bucket < newest - RECENT_BUCKETS:
                return  # older than the window already
            buckets[bucket] = {}
            for old in [b for b in buckets if b < bucket - RECENT_BUCKETS]:
                del buckets[old]
        cell = buckets[bucket].setdefault(gold_id, [0, 0, 0.0, 0.0, 0.0])
        cell[0] += 1
        cell[1] += 1
        for j, value in enumerate(scores):
            cell[2 + j] += value

    def _count_language(
        self, gold_id: str, language: str, scores: tuple[float, float, float] | None
    ) -> None:
        """Count production's known event of ``language`` on ``gold_id`` (scored or not)."""
        cell = self._lang_known.setdefault(gold_id, {}).setdefault(language, [0, 0, 0.0, 0.0, 0.0])
        cell[0] += 1
        if scores is not None:
            cell[1] += 1
            for j, value in enumerate(scores):
                cell[2 + j] += value

    def _count_refusal(
        self, question: GoldQuestion, role: str | None, refused: Any, language: str
    ) -> bool:
        """Count a known event's refusal both ways (module docstring, step 3), in total and
        for its ``language``; returns whether the question is answerable for ``role``."""
        answerable = self._readable(question, role)
        counts = self._refusals.setdefault(question.id, Counter())
        by_language = self._lang_refusals.setdefault(question.id, {}).setdefault(
            language, Counter()
        )
        for cell in (counts, by_language):
            cell["known_answerable" if answerable else "known_unanswerable"] += 1
        if refused is True and answerable:
            counts["refused_answerable"] += 1
            by_language["refused_answerable"] += 1
            self._pending["refusals"]["refused_answerable"] += 1
        elif refused is False and not answerable:
            counts["answered_unanswerable"] += 1
            by_language["answered_unanswerable"] += 1
            self._pending["refusals"]["answered_unanswerable"] += 1
        return answerable

    def _flag(
        self,
        retriever: str,
        role: str | None,
        violations: list[str],
        leaks: list[str],
        origin: tuple[str, datetime, str],
    ) -> None:
        """Count violations/leaks per (retriever, role label); keep the event for review."""
        label = self.role_label(role)
        for kind, ids in (("violations", violations), ("leaks", leaks)):
            if ids:
                for counts in (self._acl, self._pending["acl"]):
                    counts[(kind, retriever, label)] += 1
                    counts[(f"{kind}_passages", retriever, label)] += len(ids)
        event_id, timestamp, question = origin
        row = {"event_id": event_id, "timestamp": timestamp.isoformat(), "role": role,
               "retriever": retriever, "passage_ids": list(violations), "leaked": list(leaks),
               "question": question}  # fmt: skip
        self._review["leaks" if leaks else "violations"].append(row)

    # ---- reading out --------------------------------------------------------------------

    def pending_observations(self) -> dict[str, Any]:
        """Return and clear the increments since the last call, for the telemetry layer.

        Returns::

            {"known": {retriever: n},                  # known-question events seen
             "known_recall": {retriever: [r, ...]},    # recall@k per scored event, [0, 1]
             "known_hit": {retriever: [h, ...]},       # hit@k per scored event, 0.0 or 1.0
             "known_rr": {retriever: [rr, ...]},       # reciprocal rank@k, [0, 1]
             "acl_violations": [{"retriever", "role", "events", "passages"}, ...],
             "acl_leaks": [{"retriever", "role", "events", "passages"}, ...],
             "known_refused_answerable": n,
             "known_answered_unanswerable": n}

        Counts are increments (add them to counters); lists are values to observe. Role
        labels are bounded (see :meth:`role_label`); rows with zero events are left out.
        """
        with self._lock:
            pending, self._pending = self._pending, self._empty_pending()
        out: dict[str, Any] = {"known": dict(pending["known"])}
        for name in _SCORES:
            out[f"known_{name}"] = pending[f"known_{name}"]
        for kind in ("violations", "leaks"):
            out[f"acl_{kind}"] = _acl_rows(pending["acl"], kind)
        out["known_refused_answerable"] = pending["refusals"]["refused_answerable"]
        out["known_answered_unanswerable"] = pending["refusals"]["answered_unanswerable"]
        return out

    def report(self, shadow: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Return the aggregates as JSON-able data; with the shadow stage's report
        (:meth:`~service.shadow.stage.ShadowStage.report`), each candidate scored on fewer
        known questions than production also gets ``"coverage_note"`` saying so and why
        (:func:`coverage_note`), e.g. "scored on 50 known questions, results for 54 of
        production's 157 (cpu_budget skipped 550 events)"; ``None`` when it was scored on as
        many.

        ``{"k", "threshold", "gold_set_version", "known": {retriever: {"n_known", "n_scored",
        "recall", "hit_rate", "mrr"}} (means over scored events, ``None`` when none);
        a candidate's cell also has ``"paired"``: ``{"n_scored", "production": {"recall",
        "hit_rate", "mrr"}, "candidate": {...}}``, both on the same events (those both were
        scored on: a candidate skipped by the shadow runner, e.g. for ``cpu_budget``, is
        scored on fewer known questions than production, so its own means are over other
        questions than production's); ``"refusals": {"known_answerable", "refused_answerable",
        "known_unanswerable", "answered_unanswerable"}, "known_refusal": {"n", "refused",
        "rate", "low", "high"}`` (the refusal rate of known answerable questions, Wilson 95 %:
        :func:`_known_refusal`), ``"by_language": [rows]`` (production's figures and the
        known refusals per language: :func:`_language_rows`), ``"by_language_partial"``
        (the state was kept before they were counted: its known questions are in no
        language), ``"by_language_min_n"`` (rows under it are ``few``),
        ``"near_matches_rejected": {"events",
        "by_reason": {"numbers", "negation", "words", "question"}, "matched_another"}``
        (events whose best gold row at or above the threshold asks another question,
        :func:`_rejected_report`; kept per turned-down row across gold-set changes like
        ``refusals``), ``"coverage": {...},
        "acl": {"violations": [rows], "leaks": [rows], "restricted_passages": n,
        "passages_with_acl": n, "roles": [the role labels the corpus ACLs name, sorted; any
        other live role is ``other``], "since": iso}, "review": [rows]}`` — rows as in
        :meth:`pending_observations`, review rows as in the module docstring. ``known``
        and ``refusals`` are sums over the gold rows measured (kept across gold-set changes
        when unchanged); ``coverage`` says what they cover:
        ``{"gold_set_version", "since": ISO 8601 time of the earliest event they count
        (None: none, or unknown when ``rows`` is None), "rows": gold rows with a measurement
        (None: unknown, a version-1 state's figures are kept; the name kept for API clients:
        rows *measured*, not the gold set's size), "gold_rows": rows in the gold set in use
        (None without one), "changes": [{"from", "to",
        "reason", "drops": "changed rows" | "scores" (k: recall, hit, RR) | "all"
        (threshold), "at": ISO time of the last event before the change (None: none yet, or
        unknown when ``after_events`` is None), "after_events": events seen before it (since
        the restore of a version-1 state, if any), "kept_rows", "kept_events",
        "dropped_rows" (kept/dropped rows None: a version-1 state's block, not per row),
        "dropped_events"}, ...]}`` (events: production's known events; the newest 20
        changes). ``acl`` counts are cumulative over every gold-set version since
        ``acl.since`` (ISO time of the first event seen; None: none, or unknown when counts
        came from a version-1 state).
        ``restricted_passages``: passages at least one role named in the corpus ACLs may not
        read (:attr:`~service.quality.acl.AccessPolicy.restricted_from_a_role`; an ACL listing every
        role restricts nothing); ``passages_with_acl``: passages with a non-empty ACL.
        """
        out, paired = self.report_and_paired(shadow)
        add_paired_tests(out, paired, self.k, self.production)
        return out

    def report_and_paired(
        self, shadow: Mapping[str, Any] | None = None
    ) -> tuple[dict[str, Any], PairedCells]:
        """:meth:`report` without the paired tests by distinct question, and the paired cells
        they are computed from (:class:`PairedCells`), both taken under the stage's lock: for
        :func:`add_paired_tests` after the caller released its own lock
        (``Runtime.quality_report`` holds the pipeline's; the tests' 60,000 resamples per
        candidate take ~0.1 s on 40 questions, ~0.7 s on 400, ~6 s on 2,000)."""
        with self._lock:
            known = {name: _means(cell) for name, cell in sorted(self._totals.items())}
            paired_cells: dict[str, dict[str, list[float]]] = {}
            for name, cells in self._paired.items():
                if name in known and name != self.production:
                    known[name]["paired"] = _paired_means(_sum_cells(cells.values(), 7))
                    paired_cells[name] = {g: list(cell) for g, cell in cells.items()}
            contents = {g: self._row_contents[g] for cells in paired_cells.values()
                        for g in cells if g in self._row_contents}  # fmt: skip
            by_group = self._by_group()
            if shadow is not None:
                of_known = known.get(self.production, {}).get("n_known", 0)
                candidates = shadow.get("candidates") or {}
                for name, cell in known.items():
                    if name != self.production and name in candidates:
                        cell["coverage_note"] = coverage_note(
                            cell["n_known"], cell["n_scored"], of_known, candidates[name]
                        )
            refusals: Counter[str] = sum(self._refusals.values(), Counter())
            by_language = _language_rows(self._lang_known, self._lang_refusals, self.min_n)
            review = [*reversed(self._review["leaks"]), *reversed(self._review["violations"])]
            measured = set(self._first_seen).union(self._refusals, *self._known.values())
            # a version-1 state's block: neither its first event nor its rows are known
            legacy = _WHOLE in measured
            since = None if legacy else min(self._first_seen.values(), default=None)
            acl_since = None if self._since_unknown else self._since
            out = {
                "k": self.k,
                "threshold": self.index.threshold if self.index else None,
                "gold_set_version": _gold_version(self.index),
                "known": known,
                "refusals": {key: refusals[key] for key in _REFUSAL_KEYS},
                "known_refusal": _known_refusal(refusals),
                "by_language": by_language,
                "by_language_partial": self._lang_partial,
                "by_language_min_n": self.min_n,
                **by_group,
                "near_matches_rejected": _rejected_report(self._rejected.values()),
                "coverage": {
                    "gold_set_version": _gold_version(self.index),
                    "since": since.isoformat() if since is not None else None,
                    "rows": None if legacy else len(measured),
                    "gold_rows": len(self.index.gold) if self.index is not None else None,
                    "changes": [dict(change) for change in self._changes],
                },
                "acl": {
                    "violations": _acl_rows(self._acl, "violations"),
                    "leaks": _acl_rows(self._acl, "leaks"),
                    "restricted_passages": (
                        len(self.policy.restricted_from_a_role) if self.policy else 0
                    ),
                    "passages_with_acl": len(self.policy.restricted) if self.policy else 0,
                    "roles": sorted(self._roles),
                    "since": acl_since.isoformat() if acl_since is not None else None,
                },
                "review": [dict(row) for row in review[: self.max_review]],
            }
        return out, PairedCells(paired_cells, contents)

    def _by_group(self) -> dict[str, Any]:
        """Production's known-question figures per gold-row ``kind`` and ``topic`` (and
        ``language`` when the gold set's rows are in two or more languages), all-time
        and over the latest ``recent_window_s`` of event time (the caller holds the lock):
        ``{"by_group": {field: rows}, "by_group_recent": {"window_s", "since", "until",
        field: rows} | None, "by_group_min_n", "known_miss_rows"}`` (rows:
        :func:`~service.quality.by_group.group_rows`; the recent rows count scored events
        only, ``n_known`` = ``n_scored``;
        ``since``/``until``: ISO times of the first counted bucket's start and the newest
        bucket's end — the window in whole buckets of ``recent_window_s`` /
        :data:`RECENT_BUCKETS`, ending with the latest event seen, so it spans at most
        ``recent_window_s``; ``None`` without a scored event in it), ``"known_miss_rows"``: the
        gold rows that missed in that window, against their misses before it
        (:func:`service.quality.where.missing_rows`: what drives a ``known_miss`` alarm;
        ``None`` without a scored event in the window). A gold row the current
        gold set no longer has (a version-1 state's block) is group ``none``."""
        by_id = self._index.gold.by_id if self._index is not None else {}

        def value_of(field: str) -> Callable[[str], str | None]:
            def value(gold_id: str) -> str | None:
                row = by_id.get(gold_id)
                return getattr(row, field, None) if row is not None else None

            return value

        cells = self._known.get(self.production, {})
        # by gold-row language too when the gold set is in two or more (trial 43, H1)
        languages = {row.language for row in by_id.values() if row.language}
        fields = (*GROUP_FIELDS, LANGUAGE_FIELD) if len(languages) >= 2 else GROUP_FIELDS
        out: dict[str, Any] = {
            "by_group": {f: group_rows(cells, value_of(f), min_n=self.min_n) for f in fields},
            "by_group_recent": None,
            "by_group_min_n": self.min_n,
            "known_miss_rows": None,
        }
        if self._recent_known:
            # the window ends with the latest event seen (scored or not)
            newest = max(self._recent_known)
            if self._last is not None:
                newest = max(newest, int(self._last.timestamp() // self._bucket_s))
            kept = [b for b in self._recent_known if newest - RECENT_BUCKETS < b <= newest]
            recent: dict[str, list[float]] = {}
            for bucket in kept:
                for gold_id, cell in self._recent_known[bucket].items():
                    total = recent.setdefault(gold_id, [0, 0, 0.0, 0.0, 0.0])
                    for j, value in enumerate(cell):
                        total[j] += value
            if recent:
                documents = {g: by_id[g].gold for g in recent if g in by_id}
                since = datetime.fromtimestamp(min(kept) * self._bucket_s, tz=UTC)
                until = datetime.fromtimestamp((newest + 1) * self._bucket_s, tz=UTC)
                out["known_miss_rows"] = missing_rows(
                    recent, cells, documents, since=since.isoformat(),
                    until=until.isoformat(), window_s=self.recent_window_s,
                )  # fmt: skip
                out["by_group_recent"] = {
                    "window_s": self.recent_window_s,
                    "since": since.isoformat(),
                    "until": until.isoformat(),
                    **{f: group_rows(recent, value_of(f), min_n=self.min_n) for f in fields},
                }
        return out

    def known_refusal(self) -> dict[str, Any]:
        """The refusal rate of known answerable questions (:func:`_known_refusal`: ``{"n",
        "refused", "rate", "low", "high"}``), as :meth:`report`'s ``known_refusal``, without
        building the rest of the report."""
        with self._lock:
            refusals: Counter[str] = sum(self._refusals.values(), Counter())
        return _known_refusal(refusals)

    def gold_set_versions(self) -> list[str]:
        """The gold-set versions the stage's state has run on, oldest first (the first and
        the newest 20 at most; empty without a gold set): what cumulative counts judged
        against the gold set (out-of-scope, over- and under-refusals) were judged under."""
        with self._lock:
            versions = [self._first_version, *(change["to"] for change in self._changes)]
            versions.append(_gold_version(self.index))
        return [v for i, v in enumerate(versions) if v is not None and v not in versions[:i]]

    def state_snapshot(self) -> Any:
        """Return the aggregates per gold row, the measured rows' versions, the gold-set
        changes and the review rows (JSON-able, ``version`` 2)."""
        with self._lock:
            measured = set(self._first_seen).union(self._refusals, *self._known.values())
            listed = measured.union(self._rejected)
            alike = {self._row_contents[g] for g in listed if g in self._row_contents}
            listed.update(g for g, content in self._row_contents.items() if content in alike)
            return {
                "version": _VERSION,
                "k": self.k,
                "threshold": self._index.threshold if self._index is not None else None,
                "gold_set_version": _gold_version(self.index),
                "first_gold_set_version": self._first_version,
                "known": {
                    name: {g: list(cell) for g, cell in cells.items()}
                    for name, cells in self._known.items()
                },
                "totals": {name: list(cell) for name, cell in self._totals.items()},
                "paired": {
                    name: {g: list(cell) for g, cell in cells.items()}
                    for name, cells in self._paired.items()
                },
                "refusals": {g: dict(counts) for g, counts in self._refusals.items()},
                "by_language": {
                    "known": {
                        g: {lang: list(cell) for lang, cell in cells.items()}
                        for g, cells in self._lang_known.items()
                    },
                    "refusals": {
                        g: {lang: dict(counts) for lang, counts in cells.items()}
                        for g, cells in self._lang_refusals.items()
                    },
                    "partial": self._lang_partial,
                },  # fmt: skip
                "rejected": {g: dict(counts) for g, counts in self._rejected.items()},
                # the rows turned down too: a restore onto a changed gold set keeps the
                # rejections of the rows it left alone, as the same change in process does
                # (and the rows alike them but for the id, measured or not: a restore
                # decides which rows moved as the reload does, on every old row of a content)
                "rows": {
                    g: self._row_versions[g] for g in sorted(listed) if g in self._row_versions
                },  # fmt: skip
                # and their contents without the id: a restore onto a renumbered gold set
                # finds each under its new id (kept from session 51 on)
                "row_contents": {
                    g: self._row_contents[g] for g in sorted(listed) if g in self._row_contents
                },  # fmt: skip
                "first_seen": {g: t.isoformat() for g, t in self._first_seen.items()},
                "since": self._since.isoformat() if self._since is not None else None,
                "since_unknown": self._since_unknown,
                "last": self._last.isoformat() if self._last is not None else None,
                "events": self._events,
                "changes": [dict(change) for change in self._changes],
                "acl": [[*key, n] for key, n in sorted(self._acl.items())],
                "review": {kind: list(rows) for kind, rows in self._review.items()},
                "recent_known": {
                    "bucket_s": self._bucket_s,
                    "buckets": {
                        str(b): {g: list(cell) for g, cell in cells.items()}
                        for b, cells in sorted(self._recent_known.items())
                    },
                },  # fmt: skip
            }

    def restore(self, state: Any) -> None:
        """Load a :meth:`state_snapshot` (version 1 or 2; others, or ``None``, are ignored).
        Known aggregates and refusal counts of gold rows unchanged in the current gold set
        come back, the others are dropped and the change recorded (module docstring); with
        another ``k`` every row's recall, hit and RR are dropped and the refusal counts kept;
        with another known-question threshold (a state that names one: version 2 from
        ``threshold`` on) all are dropped. Each is recorded. A version-1 state's first event
        is unknown: ``coverage.since`` while its known figures are kept, and ``acl.since``
        from then on, are reported as ``None``."""
        if not isinstance(state, Mapping) or state.get("version") not in (1, _VERSION):
            return
        old_version = state.get("gold_set_version")
        with self._lock:
            if state["version"] == 1:  # aggregates not per row: one block, whole-set version
                known = {name: {_WHOLE: list(cell)}
                         for name, cell in state.get("known", {}).items()}  # fmt: skip
                refusals: dict[str, Counter[str]] = {_WHOLE: Counter(state.get("refusals", {}))}
                measured_rows: dict[str, str] = {}
                first_seen: dict[str, datetime] = {}
                # not in a version-1 state: none known (onto a live stage, the memory's go)
                self._since = self._last = None
                self._events, self._changes = 0, []
                self._since_unknown, self._first_version = True, old_version
            else:
                known = {name: {g: list(cell) for g, cell in cells.items()}
                         for name, cells in state.get("known", {}).items()}  # fmt: skip
                refusals = {g: Counter(c) for g, c in state.get("refusals", {}).items()}
                measured_rows = dict(state.get("rows", {}))
                first_seen = {g: datetime.fromisoformat(t)
                              for g, t in state.get("first_seen", {}).items()}  # fmt: skip
                self._since = _time(state.get("since"))
                self._last = _time(state.get("last"))
                self._events = int(state.get("events", 0))
                self._changes = [dict(change) for change in state.get("changes", [])]
                for change in self._changes:  # written before "drops" was: k dropped all
                    change.setdefault("drops", "all" if change["reason"].startswith("k ")
                                      else "changed rows")  # fmt: skip
                self._since_unknown = bool(state.get("since_unknown", False))
                self._first_version = state.get("first_gold_set_version") or (
                    self._changes[0]["from"] if self._changes else old_version
                )
            self._known, self._refusals, self._first_seen = known, refusals, first_seen
            # kept from session 37 on: a state before it had figures none is counted under
            lang = state.get("by_language") if state["version"] == _VERSION else None
            if isinstance(lang, Mapping):
                self._lang_known = {g: {la: list(c) for la, c in cells.items()}
                                    for g, cells in lang.get("known", {}).items()}  # fmt: skip
                refused = lang.get("refusals", {})
                self._lang_refusals = {g: {la: Counter(c) for la, c in cells.items()}
                                       for g, cells in refused.items()}  # fmt: skip
                self._lang_partial = bool(lang.get("partial", False))
            else:
                self._lang_known, self._lang_refusals = {}, {}
                self._lang_partial = bool(known or refusals)
            # not in a version-1 state, nor in a version-2 one written before it was kept
            self._rejected = {g: Counter(c) for g, c in (state.get("rejected") or {}).items()
                              if state["version"] == _VERSION}  # fmt: skip
            # not in a version-1 state, nor in a version-2 one written before it was kept
            self._paired = {name: {g: list(cell) for g, cell in cells.items()}
                            for name, cells in (state.get("paired") or {}).items()
                            if state["version"] == _VERSION}  # fmt: skip
            totals = state.get("totals") if state["version"] == _VERSION else None
            if not totals:  # a version-1 state: its one block per retriever is the total
                totals = {name: _sum_cells(cells.values()) for name, cells in known.items()}
            self._totals = {name: list(cell) for name, cell in totals.items()}
            # kept from session 39 on; buckets of another width (another window) are dropped
            recent = state.get("recent_known") or {}
            self._recent_known = (
                {int(b): {g: list(cell) for g, cell in cells.items()}
                 for b, cells in (recent.get("buckets") or {}).items()}
                if recent.get("bucket_s") == self._bucket_s else {}
            )  # fmt: skip
            threshold = self._index.threshold if self._index is not None else None
            old_threshold = state.get("threshold", threshold)  # not written: taken as the same
            k_reason = f"k changed from {state.get('k')} to {self.k}"
            if old_threshold is not None and threshold is not None and old_threshold != threshold:
                reason = f"known-question threshold changed from {old_threshold:g} to {threshold:g}"
                if state.get("k") != self.k:
                    reason += f", {k_reason}"
                self._reconcile(old_version, {}, reason=reason, drops="all")
            else:
                if old_version != _gold_version(self.index):
                    contents = state.get("row_contents") if state["version"] == _VERSION else None
                    self._reconcile(old_version, {**measured_rows, _WHOLE: old_version or ""},
                                    old_contents=dict(contents or {}))  # fmt: skip
                if state.get("k") != self.k:
                    self._reconcile(_gold_version(self.index), {}, reason=k_reason, drops="scores")
            self._acl = Counter(
                {(kind, r, role): int(n) for kind, r, role, n in state.get("acl", [])}
            )
            for kind, review in self._review.items():  # the state's rows replace the memory's
                review.clear()
                review.extend(state.get("review", {}).get(kind, []))


def _gold_version(index: KnownQuestionIndex | None) -> str | None:
    return index.gold.version if index is not None else None


def _row_versions(index: KnownQuestionIndex | None) -> dict[str, str]:
    """``{gold id: row version}`` of the index's gold set (empty without one)."""
    return {q.id: row_version(q) for q in index.gold} if index is not None else {}


def _row_contents(index: KnownQuestionIndex | None) -> dict[str, str]:
    """``{gold id: row content}`` (:func:`~service.data.goldset.row_content`: the row
    without its id) of the index's gold set (empty without one)."""
    return {q.id: row_content(q) for q in index.gold} if index is not None else {}


def _carried_rows(
    old_rows: Mapping[str, str],
    old_contents: Mapping[str, str],
    rows: Mapping[str, str],
    contents: Mapping[str, str],
) -> dict[str, str]:
    """Old gold id -> current gold id, for the old rows a gold-set change leaves unchanged.

    ``old_rows``/``rows``: ``{gold id: row version}`` before and now (the version names the
    id); ``old_contents``/``contents``: ``{gold id: row content}`` (without the id; empty:
    unknown, e.g. a state written before the contents were kept). A row whose id keeps its
    version keeps its id; an old row whose content is now under another id (a renumbering)
    moves to it when that content is one old row's and one current row's (among those not
    kept by id): rows identical apart from their ids cannot be told apart, so none of them
    moves.

    >>> _carried_rows({"q-1": "v1", "q-2": "v2", "q-3": "v3"}, {"q-1": "a", "q-2": "b"},
    ...               {"q-3": "v3", "n-1": "w1", "n-2": "w2"}, {"n-1": "b", "n-2": "c"})
    {'q-3': 'q-3', 'q-2': 'n-1'}
    """
    carried = {g: g for g, version in old_rows.items() if rows.get(g) == version}
    unclaimed: dict[str, list[str]] = {}
    for gold_id, content in contents.items():
        if gold_id not in carried:
            unclaimed.setdefault(content, []).append(gold_id)
    moving: dict[str, list[str]] = {}
    for gold_id, content in old_contents.items():
        if gold_id not in carried:
            moving.setdefault(content, []).append(gold_id)
    for content, old_ids in moving.items():
        new_ids = unclaimed.get(content, [])
        if len(old_ids) == 1 and len(new_ids) == 1:
            carried[old_ids[0]] = new_ids[0]
    return carried


def _time(value: str | None) -> datetime | None:
    return datetime.fromisoformat(value) if value is not None else None


def _sum_cells(cells: Iterable[list[float]], width: int = 5) -> list[float]:
    """Element-wise sum of ``[n_known, n_scored, Σr, Σh, Σrr]`` cells (``width`` 5), or of
    the paired comparison's ``[n, Σr, Σh, Σrr, Σr, Σh, Σrr]`` cells (``width`` 7)."""
    total: list[float] = [0, 0, 0.0, 0.0, 0.0] if width == 5 else [0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    for cell in cells:
        for j, value in enumerate(cell):
            total[j] += value
    return total


#: Why the wording rule turned a gold row down (:data:`service.text.wording.Disagreement`).
_REJECTION_REASONS = ("numbers", "negation", "words", "question")


def _rejected_report(cells: Iterable[Counter[str]]) -> dict[str, Any]:
    """``{"events": n, "by_reason": {reason: n}, "matched_another": n}``: live events whose
    best gold row at or above the threshold the wording rule turned down, by the reason (of
    that row), and how many of them matched a next-best row instead (the rest matched none).

    >>> report = _rejected_report([Counter(negation=2), Counter(words=1, matched_another=1)])
    >>> report["events"], report["matched_another"], report["by_reason"]["negation"]
    (3, 1, 2)
    """
    total: Counter[str] = sum(cells, Counter())
    by_reason = {reason: total[reason] for reason in _REJECTION_REASONS}
    return {"events": sum(by_reason.values()), "by_reason": by_reason,
            "matched_another": total["matched_another"]}  # fmt: skip


def rejected_note(rejected: Mapping[str, Any] | None) -> str | None:
    """The near-matches the wording rule turned down (``near_matches_rejected`` of
    :meth:`LiveQualityStage.report`) in words, so a reader sees why a near-duplicate of a
    gold question was not scored on it; ``None`` when there were none.

    >>> print(rejected_note({"events": 8, "matched_another": 0,
    ...       "by_reason": {"numbers": 0, "negation": 4, "words": 4, "question": 0}}))
    near-matches turned down (8 events: negation 4, content words 4): similar enough, but not \
the same question (another number, negation, content word or question word; a detail \
left out is no difference), so not scored on that gold row
    """
    if not rejected or not rejected.get("events"):
        return None
    why = ", ".join(f"{_REASON_NAMES.get(reason, reason)} {n}"
                    for reason, n in (rejected.get("by_reason") or {}).items() if n)  # fmt: skip
    another = rejected.get("matched_another") or 0
    fell_back = f"; {another} of them matched a next-best gold row instead" if another else ""
    return (f"near-matches turned down ({rejected['events']} events: {why}): similar enough, "
            "but not the same question (another number, negation, content word or question "
            "word; a detail left out is no difference), so not scored on that gold row"
            f"{fell_back}")  # fmt: skip


_REASON_NAMES = {"numbers": "numbers", "negation": "negation", "words": "content words",
                 "question": "question word"}  # fmt: skip

_REFUSAL_KEYS = ("known_answerable", "refused_answerable", "known_unanswerable",
                 "answered_unanswerable")  # fmt: skip


def _known_refusal(refusals: Mapping[str, int]) -> dict[str, Any]:
    """``{"n", "refused", "rate", "low", "high"}``: the refusal rate of known answerable
    questions (``refused_answerable`` of ``known_answerable``: each is an over-refusal, no
    detector needed) with its Wilson 95 % interval; ``rate`` ``None`` when ``n`` is 0.

    >>> _known_refusal({"known_answerable": 4, "refused_answerable": 1})["rate"]
    0.25
    """
    n, x = int(refusals.get("known_answerable", 0)), int(refusals.get("refused_answerable", 0))
    low, high = wilson(x, n) if n else (None, None)
    return {"n": n, "refused": x, "rate": x / n if n else None, "low": low, "high": high}


def recent_known_hits(
    test: Mapping[str, Any] | None, window_s: float, k: int, state: str | None = None
) -> dict[str, Any] | None:
    """Production's live hit rate@k on known questions over the latest drift window, beside
    the all-time figures of :meth:`LiveQualityStage.report` (trial 38: ``/v1/quality`` and the
    status page gave only all-time figures while a 12-hour collapse to 0 went by), from the
    drift stage's ``known_miss`` baseline comparison (``test``: its report as a dict,
    ``n_current``/``rate_current`` the latest window's scored known questions and miss rate,
    ``n_reference``/``rate_reference`` the baseline's; ``None`` before its first test).

    Returns ``{"window_s", "k", "n", "hit_rate", "low", "high", "baseline_n",
    "baseline_hit_rate", "state", "timestamp"}`` (hit rate = 1 - miss rate, its Wilson 95 %
    interval; a rate ``None`` until the comparison is tested: while its baseline warms up —
    the first ``known_window_s`` of traffic — or its window holds under ``known_min_count``
    scored known questions, ``n`` still the window's count; ``state``: the
    dimension's, default the comparison's; ``timestamp``: the test's event time, Unix
    seconds), or ``None`` without a test. Never raises on a report with keys missing.

    >>> row = recent_known_hits({"n_current": 40, "rate_current": 0.25, "n_reference": 100,
    ...                          "rate_reference": 0.03, "state": "drift", "timestamp": 0.0},
    ...                         86400.0, 10)
    >>> row["hit_rate"], row["baseline_hit_rate"], row["state"], round(row["low"], 3)
    (0.75, 0.97, 'drift', 0.598)
    """
    if not test:
        return None
    n, n_ref = int(test.get("n_current") or 0), int(test.get("n_reference") or 0)

    def hit_rate(count: int, miss: Any) -> float | None:
        return 1.0 - float(miss) if count and miss is not None and math.isfinite(miss) else None

    rate = hit_rate(n, test.get("rate_current"))
    low, high = wilson(round(rate * n), n) if rate is not None else (None, None)
    return {"window_s": float(window_s), "k": int(k), "n": n, "hit_rate": rate,
            "low": low, "high": high, "baseline_n": n_ref,
            "baseline_hit_rate": hit_rate(n_ref, test.get("rate_reference")),
            "state": state or test.get("state"), "timestamp": test.get("timestamp")}  # fmt: skip


def recent_known_text(recent: Mapping[str, Any] | None) -> str | None:
    """:func:`recent_known_hits` in words (``None`` without it, or before a window held a
    scored known question).

    >>> print(recent_known_text({"window_s": 86400.0, "k": 10, "n": 40, "hit_rate": 0.75,
    ...     "low": 0.598, "high": 0.858, "baseline_n": 100, "baseline_hit_rate": 0.97,
    ...     "state": "drift"}))  # doctest: +NORMALIZE_WHITESPACE
    last 24 h: production hit rate@10 on known questions 0.750 [0.598, 0.858] of 40
    (baseline 0.970 of 100; known_miss drift)
    """
    if not recent or recent.get("hit_rate") is None:
        return None
    hours = recent["window_s"] / 3600
    span = f"{hours:g} h" if hours >= 1 else f"{recent['window_s'] / 60:g} min"
    base = recent.get("baseline_hit_rate")
    return (f"last {span}: production hit rate@{recent['k']} on known questions "
            f"{recent['hit_rate']:.3f} [{recent['low']:.3f}, {recent['high']:.3f}] of "
            f"{recent['n']} (baseline "
            + (f"{base:.3f} of {recent['baseline_n']}" if base is not None else "not set yet")
            + f"; known_miss {recent.get('state')})")  # fmt: skip


#: What the known-refusal figures are, in the reports' words.
KNOWN_OVER_REFUSAL = "over-refusal of known answerable gold questions"


def known_refusal_text(
    figure: Mapping[str, Any] | None, drift: Mapping[str, Any] | None = None, *,
    brief: bool = False,
) -> str | None:  # fmt: skip
    """The refusal rate of known answerable gold questions in words, or ``None`` without one
    (``figure``: ``known_refusal`` of :meth:`LiveQualityStage.report`, ``n`` 0 or absent).
    A refusal of a live question matched to a gold row its asker may read is an
    over-refusal: no out-of-scope detector is needed to say so. With the drift stage's
    ``known_refusal`` dimension (``drift``), its baseline comparison: the baseline's rate →
    the latest window's, and its state (``DRIFT``), why it was not tested, or that it cannot
    alarm at these sizes. ``brief``: the comparison alone (``"6.7% → 65.2%"``, or the run's
    rate), for the over-refusal verdict of an uncalibrated detector to cite.

    >>> figure = {"n": 446, "refused": 111, "rate": 111 / 446, "low": 0.211, "high": 0.291}
    >>> test = {"state": "drift", "rate_reference": 0.0667, "rate_current": 0.652}
    >>> print(known_refusal_text(figure, {"state": "drift",
    ...                                   "comparisons": {"baseline": test}}))
    ... # doctest: +NORMALIZE_WHITESPACE
    over-refusal of known answerable gold questions (refused, though matched to a gold row the asker
    may read: no detector needed): 111 of 446 (24.9% [21.1%, 29.1%]); vs baseline 6.7% → 65.2%
    (DRIFT)
    >>> known_refusal_text(figure, {"state": "drift", "comparisons": {"baseline": test}},
    ...                    brief=True)
    'over-refusal of known answerable gold questions (no detector needed): 6.7% → 65.2%, in drift'
    """
    if not figure or not figure.get("n"):
        return None
    test = ((drift or {}).get("comparisons") or {}).get("baseline") or {}
    moved = None
    rates = (test.get("rate_reference"), test.get("rate_current"))
    if all(isinstance(r, (int, float)) and math.isfinite(r) for r in rates):  # (untested: nan)
        moved = f"{test['rate_reference']:.1%} → {test['rate_current']:.1%}"
        if brief:
            state = ", in drift" if test.get("state") == "drift" else ""
            return f"{KNOWN_OVER_REFUSAL} (no detector needed): {moved}{state}"
        moved += " (DRIFT)" if test.get("state") == "drift" else ""
    if brief:
        return f"{KNOWN_OVER_REFUSAL} (no detector needed): {figure['rate']:.1%} over the run"
    line = (f"{KNOWN_OVER_REFUSAL} (refused, though matched to a gold row the asker may read: "
            f"no detector needed): {figure['refused']} of {figure['n']} ({figure['rate']:.1%} "
            f"[{figure['low']:.1%}, {figure['high']:.1%}])")  # fmt: skip
    if moved is not None:
        line += f"; vs baseline {moved}"
    elif test.get("insufficient"):
        line += f"; vs baseline not tested: {test['insufficient']}"
    detectable = test.get("detectable") or {}
    if detectable.get("cannot_alarm"):
        line += f"; {detectable['text']}"
    return line


def language_lines(rows: Sequence[Mapping[str, Any]], k: int | None, min_n: int = FEW
                   ) -> list[str]:  # fmt: skip
    """Production's live quality and known refusals per language (``by_language`` of
    :meth:`LiveQualityStage.report`), one line each, most known questions first; the hit
    rate and the refusal rate with their Wilson 95 % intervals, ``few`` under ``min_n``.

    >>> rows = _language_rows({"g": {"hi": [5, 4, 2.0, 2.0, 1.5]}},
    ...                       {"g": {"hi": Counter(known_answerable=4, refused_answerable=1)}})
    >>> print(language_lines(rows, 10)[0])  # doctest: +NORMALIZE_WHITESPACE
    hi: 4 scored of 5 known (few: < 10); hit rate 0.500 [0.150, 0.850], recall@10 0.500, MRR 0.375;
    refused 1 of 4 answerable (25.0% [4.6%, 69.9%], few)
    """
    lines = []
    for row in rows:
        few = f" (few: < {min_n})" if row["few"] else ""
        line = f"{row['language']}: {row['n_scored']} scored of {row['n_known']} known{few}"
        if row["n_scored"]:
            line += (f"; hit rate {row['hit_rate']:.3f} [{row['hit_low']:.3f}, "
                     f"{row['hit_high']:.3f}], recall@{k} {row['recall']:.3f}, MRR "
                     f"{row['mrr']:.3f}")  # fmt: skip
        if row["known_answerable"]:
            few = ", few" if row["refused_few"] else ""
            line += (f"; refused {row['refused_answerable']} of {row['known_answerable']} "
                     f"answerable ({row['refused_rate']:.1%} [{row['refused_low']:.1%}, "
                     f"{row['refused_high']:.1%}]{few})")  # fmt: skip
        lines.append(line)
    return lines


def _language_rows(
    known: Mapping[str, Mapping[str, list[float]]],
    refusals: Mapping[str, Mapping[str, Counter[str]]],
    min_n: int = FEW,
) -> list[dict[str, Any]]:
    """Production's live quality and the known refusals per language, summed over the gold
    rows: ``[{"language", "n_known", "n_scored", "recall", "hit_rate", "hit_low",
    "hit_high", "mrr", "few", "known_answerable", "refused_answerable", "refused_rate",
    "refused_low", "refused_high", "refused_few"}]``: means over the scored events (``None``
    when none), the hit rate's and the refusal rate's Wilson 95 % intervals (``None``
    without events), ``few`` / ``refused_few`` when fewer than ``min_n`` scored / answerable
    known questions; languages with the most known questions first, then by code
    (:mod:`service.quality.by_language`).

    >>> rows = _language_rows({"g-1": {"en": [3, 2, 2.0, 2.0, 1.5], "hi": [1, 1, 0, 0, 0]}},
    ...                       {"g-1": {"en": Counter(known_answerable=3, refused_answerable=1),
    ...                                "hi": Counter(known_answerable=1)}})
    >>> [(r["language"], r["n_scored"], r["hit_rate"], r["mrr"], r["refused_answerable"])
    ...  for r in rows]
    [('en', 2, 1.0, 0.75, 1), ('hi', 1, 0.0, 0.0, 0)]
    """
    cells: dict[str, list[float]] = {}
    for scored_by_language in known.values():
        for language, cell in scored_by_language.items():
            total = cells.setdefault(language, [0, 0, 0.0, 0.0, 0.0])
            for j, value in enumerate(cell):
                total[j] += value
    counts: dict[str, Counter[str]] = {}
    for refused_by_language in refusals.values():
        for language, refused in refused_by_language.items():
            counts.setdefault(language, Counter()).update(refused)
    rows = []
    for language in cells.keys() | counts.keys():
        means = _means(cells.get(language, [0, 0, 0.0, 0.0, 0.0]))
        scored, hits = means["n_scored"], cells.get(language, [0, 0, 0.0, 0.0, 0.0])[3]
        hit_low, hit_high = wilson(hits, scored) if scored else (None, None)
        counter = counts.get(language, Counter())
        n, x = counter["known_answerable"], counter["refused_answerable"]
        low, high = wilson(x, n) if n else (None, None)
        rows.append({"language": language, **means, "hit_low": hit_low, "hit_high": hit_high,
                     "few": scored < min_n, "known_answerable": n, "refused_answerable": x,
                     "refused_rate": x / n if n else None, "refused_low": low,
                     "refused_high": high, "refused_few": n < min_n})  # fmt: skip
    return sorted(rows, key=lambda row: (-row["n_known"], row["language"]))


def _means(cell: list[float]) -> dict[str, Any]:
    n_known, n_scored, recall, hit, rr = cell
    mean = (lambda total: total / n_scored) if n_scored else (lambda total: None)
    return {"n_known": int(n_known), "n_scored": int(n_scored), "recall": mean(recall),
            "hit_rate": mean(hit), "mrr": mean(rr)}  # fmt: skip


def coverage_note(
    n_known: int, n_scored: int, of_known: int, candidate: Mapping[str, Any]
) -> str | None:
    """Why a shadow candidate was scored on fewer known questions than production, or
    ``None`` when it was not (``n_known >= of_known``). The note names the events the
    candidate was scored on (``n_scored``: its means are over those), then how many of the
    known-question events production saw it had results for (a trial-11 note had said
    "scored on 376" for a candidate scored on 318: 376 was its results, of which 58 were
    unanswerable for the asker's role and not scored).

    Args:
        n_known: known-question events the candidate had results for, >= 0.
        n_scored: those it was scored on (answerable for the asker's role), 0..n_known.
        of_known: known-question events production saw, >= 0.
        candidate: the candidate's shadow report (``skipped`` and ``errors``: ``{reason:
            events}`` over every event offered, known or not; ``in_flight``).

    >>> print(coverage_note(54, 50, 157, {"skipped": {"cpu_budget": 550}, "errors": {}}))
    scored on 50 known questions, results for 54 of production's 157 (cpu_budget skipped 550 events)
    """
    if n_known >= of_known:
        return None
    skipped = (candidate.get("skipped") or {}).items()
    why = [f"{reason} skipped {_count(n, 'event')}" for reason, n in skipped]
    why += [
        f"{_count(n, f'{reason} error')}" for reason, n in (candidate.get("errors") or {}).items()
    ]
    if candidate.get("in_flight"):
        why.append(f"{_count(candidate['in_flight'], 'result')} in flight")
    reasons = ", ".join(why) or "no skip or error recorded"
    return (
        f"scored on {_count(n_scored, 'known question')}, results for {n_known} of "
        f"production's {of_known} ({reasons})"
    )


def _count(n: int, noun: str) -> str:
    """``"1 event"``, ``"2 events"``: ``n`` and ``noun``, plural unless ``n == 1``.

    >>> _count(1, "known question"), _count(0, "result")
    ('1 known question', '0 results')
    """
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def _paired_means(cell: list[float]) -> dict[str, Any]:
    """``{"n_scored", "production": {"recall", "hit_rate", "mrr"}, "candidate": {...}}``:
    means over the events both were scored on (``None`` when none)."""
    n = int(cell[0])

    def means(sums: list[float]) -> dict[str, float | None]:
        keys = ("recall", "hit_rate", "mrr")
        return {key: (value / n if n else None) for key, value in zip(keys, sums, strict=True)}

    return {"n_scored": n, "production": means(cell[1:4]), "candidate": means(cell[4:7])}


def _acl_rows(counts: Mapping[tuple[str, str, str], int], kind: str) -> list[dict[str, Any]]:
    keys = sorted((r, role) for k, r, role in counts if k == kind and counts[(k, r, role)])
    return [
        {
            "retriever": r,
            "role": role,
            "events": counts[(kind, r, role)],
            "passages": counts.get((f"{kind}_passages", r, role), 0),
        }
        for r, role in keys
    ]


class PairedCells(NamedTuple):
    """The paired cells of :meth:`LiveQualityStage.report_and_paired`, for
    :func:`add_paired_tests`.

    Attributes:
        cells: candidate → gold id → the 7 sums of
            :func:`~service.quality.by_group.paired_by_question`.
        contents: gold id → the row's content without its id
            (:func:`~service.data.goldset.row_content`) for every id in ``cells``, taken with
            them: the tests resample the questions in content order, so their figures do not
            move with a renumbering or reordering of the gold set.
    """

    cells: dict[str, dict[str, list[float]]]
    contents: dict[str, str]


def add_paired_tests(report: dict[str, Any], paired: PairedCells, k: int, production: str) -> None:
    """Set each candidate's ``known[candidate]["paired"]["by_question"]`` in ``report`` (of
    :meth:`LiveQualityStage.report_and_paired`) to the paired tests by distinct question on
    its ``paired`` cells (:func:`~service.quality.by_group.paired_by_question`, questions in
    content order; ``None`` without a question both were scored on): the seconds of
    resampling, out of any lock."""
    for name, cells in paired.cells.items():
        report["known"][name]["paired"]["by_question"] = paired_by_question(
            cells, name, k, production, paired.contents
        )
