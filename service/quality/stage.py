"""Live quality stage: known questions scored on live traffic, and access-control violations.

Placed after the refusal stage (it reads ``annotations[i]["refused"]``) and before the shadow
stage (which should hand every finished :class:`~service.shadow.runner.ShadowResult` to
:meth:`LiveQualityStage.observe_candidate`). Per batch, :meth:`LiveQualityStage.process`:

1. matches every question against the gold set in one call
   (:meth:`~service.quality.known.KnownQuestionIndex.match_many`) and writes
   ``annotations[i]["known"] = {"gold_id": str, "similarity": float} | None``;
2. for a known question, scores production's ranking (``production_ranking(event)``) when it
   is not empty: recall@k, hit@k, reciprocal rank@k (:func:`~service.quality.known.live_scores`,
   trec_eval semantics). The gold passages the asker's role may not read are dropped first;
   a question left with none (gold ``()``, or a student asking a staff-only question) is
   *unanswerable for this asker*: not scored, and a refusal is the right answer;
3. counts refusals of known questions both ways: ``refused_answerable`` (``refused`` is
   True on an answerable one) and ``answered_unanswerable`` (``refused`` is False on an
   unanswerable one); ``refused`` None counts in neither;
4. writes ``annotations[i]["acl_violations"]`` (production's retrieved passage ids the
   event's ``user.role`` may not read, ranking order; ``[]`` when none or role unknown) and
   ``annotations[i]["acl_leaks"]`` (the answer's citations the role may not read, when the
   answer was not a refusal: the restricted text reached the user). Both are counted per
   (retriever, role label); events with either are kept for review.

Role labels are bounded: a role named in the corpus ACLs (first ``max_roles``), else
``"other"``; ``None`` → ``"unknown"``. Retriever labels are production's label and the
configured candidates'. The review list holds the newest leaks first, then the newest
retrieval violations, never more than ``max_review`` rows; each row is ``{"event_id",
"timestamp", "role", "retriever", "passage_ids", "leaked", "question"}`` with the question as
the pipeline holds it (PII is scrubbed upstream).

Persistence: the aggregates and review rows are the snapshot (versioned, JSON-able). Known
aggregates are restored only if ``k`` and the gold-set version are unchanged. The map of
recently matched events (for candidates' results) is not persisted: results in flight at a
restart are lost anyway, which only thins the sample.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict, deque
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from service.pipeline import Batch
from service.quality.acl import AccessPolicy
from service.quality.known import KnownQuestionIndex, live_scores
from service.records import GoldQuestion
from service.shadow.runner import ShadowResult, production_ranking

__all__ = ["LiveQualityStage"]

_VERSION = 1
_SCORES = ("recall", "hit", "rr")


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

    Raises:
        ValueError: a bound below its minimum.
    """

    name = "quality"

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
    ) -> None:
        if k < 1 or max_review < 0 or max_roles < 1 or max_events < 1:
            raise ValueError("need k >= 1, max_review >= 0, max_roles >= 1, max_events >= 1")
        self.index, self.policy, self.k, self.production = index, policy, k, production
        self.max_review, self.max_events = max_review, max_events
        self._roles = frozenset(policy.roles[:max_roles]) if policy is not None else frozenset()
        self._lock = threading.Lock()
        self._recent: OrderedDict[str, str] = OrderedDict()
        self._known: dict[str, list[float]] = {}  # retriever -> [n_known, n_scored, Σr, Σh, Σrr]
        self._refusals: Counter[str] = Counter()
        self._acl: Counter[tuple[str, str, str]] = Counter()  # (kind, retriever, role) -> n
        self._review: dict[str, deque[dict[str, Any]]] = {
            "leaks": deque(maxlen=max_review),
            "violations": deque(maxlen=max_review),
        }
        self._pending = self._empty_pending()

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
        """Annotate ``known``, ``acl_violations`` and ``acl_leaks``; update the aggregates."""
        index = self.index
        matches = index.match_many([e.question for e in batch.events]) if index else []
        # without a restricted passage (or an asker's role) nothing can be a violation: the
        # ranking is then only needed to score a known question
        acl = self.policy is not None and bool(self.policy.roles)
        with self._lock:
            for i, (event, notes) in enumerate(zip(batch.events, batch.annotations, strict=True)):
                role = event.user.role if event.user is not None else None
                check = acl and role is not None
                match = matches[i] if index is not None else None
                ranking = production_ranking(event) if check or match is not None else ()
                notes["known"] = None
                if match is not None and index is not None:
                    notes["known"] = {"gold_id": match.gold_id, "similarity": match.similarity}
                    self._remember(event.event_id, match.gold_id)
                    question = index.gold.by_id[match.gold_id]
                    self._score(self.production, question, role, ranking)
                    self._count_refusal(question, role, notes.get("refused"))
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
                question = self.index.gold.by_id[gold_id]
                self._score(result.candidate, question, result.role, result.ranking, ran=True)

    def _remember(self, event_id: str, gold_id: str) -> None:
        self._recent[event_id] = gold_id
        self._recent.move_to_end(event_id)
        while len(self._recent) > self.max_events:
            self._recent.popitem(last=False)

    def _violations(self, ranking: Sequence[str], role: str | None) -> list[str]:
        return self.policy.violations(ranking, role) if self.policy is not None else []

    def _score(
        self,
        retriever: str,
        question: GoldQuestion,
        role: str | None,
        ranking: Sequence[str],
        ran: bool = False,
    ) -> None:
        """Count a known event; score it unless unanswerable for ``role`` or the ranking is
        empty without proof the retriever ran (``ran``: a candidate's empty answer scores 0;
        production's empty results may just be unlogged)."""
        cell = self._known.setdefault(retriever, [0, 0, 0.0, 0.0, 0.0])
        cell[0] += 1
        self._pending["known"][retriever] += 1
        if not (ranking or ran) or not self._readable(question, role):
            return
        policy = self.policy
        readable = None if policy is None else (lambda pid: policy.allowed(pid, role))
        scores = live_scores(question, ranking, self.k, readable=readable)
        cell[1] += 1
        for j, name in enumerate(_SCORES):
            cell[2 + j] += scores[name]
            self._pending[f"known_{name}"].setdefault(retriever, []).append(scores[name])

    def _count_refusal(self, question: GoldQuestion, role: str | None, refused: Any) -> None:
        answerable = self._readable(question, role)
        self._refusals["known_answerable" if answerable else "known_unanswerable"] += 1
        if refused is True and answerable:
            self._refusals["refused_answerable"] += 1
            self._pending["refusals"]["refused_answerable"] += 1
        elif refused is False and not answerable:
            self._refusals["answered_unanswerable"] += 1
            self._pending["refusals"]["answered_unanswerable"] += 1

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

    def report(self) -> dict[str, Any]:
        """Return the aggregates as JSON-able data.

        ``{"k", "threshold", "gold_set_version", "known": {retriever: {"n_known", "n_scored",
        "recall", "hit_rate", "mrr"}} (means over scored events, ``None`` when none),
        "refusals": {"known_answerable", "refused_answerable", "known_unanswerable",
        "answered_unanswerable"}, "acl": {"violations": [rows], "leaks": [rows],
        "restricted_passages": n, "passages_with_acl": n}, "review": [rows]}`` — rows as in
        :meth:`pending_observations`, review rows as in the module docstring.
        ``restricted_passages``: passages at least one role named in the corpus ACLs may not
        read (:attr:`~service.quality.acl.AccessPolicy.restricted_from_a_role`; an ACL listing every
        role restricts nothing); ``passages_with_acl``: passages with a non-empty ACL.
        """
        with self._lock:
            known = {name: _means(cell) for name, cell in sorted(self._known.items())}
            review = [*reversed(self._review["leaks"]), *reversed(self._review["violations"])]
            return {
                "k": self.k,
                "threshold": self.index.threshold if self.index else None,
                "gold_set_version": self.index.gold.version if self.index else None,
                "known": known,
                "refusals": {key: self._refusals[key] for key in _REFUSAL_KEYS},
                "acl": {
                    "violations": _acl_rows(self._acl, "violations"),
                    "leaks": _acl_rows(self._acl, "leaks"),
                    "restricted_passages": (
                        len(self.policy.restricted_from_a_role) if self.policy else 0
                    ),
                    "passages_with_acl": len(self.policy.restricted) if self.policy else 0,
                },
                "review": [dict(row) for row in review[: self.max_review]],
            }

    def state_snapshot(self) -> Any:
        """Return the aggregates and review rows (JSON-able, ``version`` 1)."""
        with self._lock:
            return {
                "version": _VERSION,
                "k": self.k,
                "gold_set_version": self.index.gold.version if self.index else None,
                "known": {name: list(cell) for name, cell in self._known.items()},
                "refusals": dict(self._refusals),
                "acl": [[*key, n] for key, n in sorted(self._acl.items())],
                "review": {kind: list(rows) for kind, rows in self._review.items()},
            }

    def restore(self, state: Any) -> None:
        """Load a :meth:`state_snapshot`; other versions (or ``None``) are ignored. Known
        aggregates and refusal counts come back only with the same ``k`` and gold-set version."""
        if not isinstance(state, Mapping) or state.get("version") != _VERSION:
            return
        gold_version = self.index.gold.version if self.index else None
        with self._lock:
            if state.get("k") == self.k and state.get("gold_set_version") == gold_version:
                self._known = {name: list(cell) for name, cell in state.get("known", {}).items()}
                self._refusals = Counter(state.get("refusals", {}))
            self._acl = Counter(
                {(kind, r, role): int(n) for kind, r, role, n in state.get("acl", [])}
            )
            for kind, rows in state.get("review", {}).items():
                if kind in self._review:
                    self._review[kind].extend(rows)


_REFUSAL_KEYS = ("known_answerable", "refused_answerable", "known_unanswerable",
                 "answered_unanswerable")  # fmt: skip


def _means(cell: list[float]) -> dict[str, Any]:
    n_known, n_scored, recall, hit, rr = cell
    mean = (lambda total: total / n_scored) if n_scored else (lambda total: None)
    return {"n_known": int(n_known), "n_scored": int(n_scored), "recall": mean(recall),
            "hit_rate": mean(hit), "mrr": mean(rr)}  # fmt: skip


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
