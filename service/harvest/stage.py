"""The harvest stage: pick live questions worth a gold question, merge near-duplicates, pool.

Runs after the analytics, quality, shadow and drift stages and reads their annotations
(``topic``, ``language``, ``refused``, ``under_refusal``, ``known``, ``acl_leaks``). Per
batch, :meth:`HarvestStage.process`:

1. counts every event's topic, language and document (that of the passage production
   ranked first, when the corpus names documents) into the window of the last
   ``gap_window`` (coverage gaps, :class:`CoverageTracker`) and
   places its best production score among the recent ones (:class:`ScoreWindow`);
2. keeps the events with at least one reason (:func:`event_reasons`) whose question is not
   a *known* question: ``annotations["known"]`` set by the quality stage, or — when that key
   is absent — a near-duplicate of a gold question given at construction;
3. merges each into the suggestion with the same normalised text, else the most similar one
   (:class:`NearDupIndex`: trigram Jaccard ≥ ``similarity`` or, with an embedder, cosine ≥
   ``embedding_similarity``; the batch's new texts are embedded in one call) that asks the
   same question (:func:`service.text.wording.may_merge`: the same numbers, content words
   and question word; "best picture in 1976" is not "best actor in 1975"), else a new
   suggestion with id ``candidate_id(normalised)``; a gold question is a near-duplicate by
   the same rule;
   pools production's top ``pool_k`` passages under the name ``"production"``. Load
   shedding: at most ``max_new_per_batch`` distinct *new* texts (neither a suggestion's nor
   a known question's) per batch go through the near-duplicate matching, chosen by
   :func:`service.harvest.shedding.choose` (stratified over topic and language, by reason
   weight, deterministic); the other new ones are shed and counted
   (``pending_observations()["shed"]``). Exact-text merges are never shed. A question longer
   than ``max_question_chars`` is never suggested, only counted
   (``pending_observations()["too_long"]``). Cheapest work
   first: every event pays for its reasons (a cached tuple per set of reasons) and, with
   one, a dictionary look-up of its normalised text (itself cached by wording); the
   :class:`Occurrence` (and production ranking) of an event is built only when its question
   is merged, never for a shed one;
4. hands changed suggestions to the sinks at most every ``flush_interval_s`` seconds (a
   failing sink is logged by type and retried at the next flush).

Shadow results arrive apart from their event: after it (serve's shadow calls are
asynchronous) or before it (a replay's synchronous shadow stage runs before this stage, and
so may a fast asynchronous call). The caller passes each to
:meth:`HarvestStage.observe_shadow`, which adds the candidate's ranking to the pool of the
event's suggestion, and a ``shadow_disagreement`` reason when RBO < ``max_rbo`` — a
disagreement on an event not (yet) picked starts or joins a suggestion of its own; an agreeing
result that comes before its event is kept until the end of the batch, and pooled when the
event is picked then (so a replay's suggestion lists every candidate's passages too). Reasons
add up whatever the order: a suggestion's reasons are the union over its events, and over
each event's own reasons and its shadow verdicts, each reason counted once per event. The
stage remembers the reasons counted for each recent event (``harvest.recent_events``), so an event
picked after its shadow result adds its own reasons to the event already counted, and a
redelivered event or a second disagreeing candidate adds nothing twice. An event shed by
``max_new_per_batch`` whose disagreeing verdict then starts a suggestion brings its own
reasons into it (the reasons of recent shed events are remembered, bounded, not snapshotted).

Idempotency: the snapshot (suggestions, trackers, recent event → suggestion ids) is written
with the source offsets in one checkpoint, so after a crash the replayed events rebuild the
same suggestions; sinks get whole records keyed by id, never increments. Beyond
``max_suggestions`` the lowest-priority suggestions are evicted from memory; the state
store's records of them go with the next checkpoint, unless decided
(:func:`service.harvest.store.candidate_sweep`); the other sinks keep what they were sent.

Decisions: the labelling API tells the stage of each decision kept
(:meth:`HarvestStage.decided`, applied on the consumer's thread before its next batch): the
decided suggestion is no longer held (no place under ``max_suggestions``; its record, kept
with its decision, is not republished), and an event whose question is that suggestion's is
not merged anywhere (``known`` via ``decided``), the last ``max_suggestions`` decisions
remembered (snapshot ``decided``; with a repository sink, kept by it and rewritten only when
it changed: :meth:`HarvestStage._store_decided`). A decision the stage does not know of
(kept after the last checkpoint and told before a kill, kept by another process, or past the
bound) is found three ways, none of which trusts the stage's memory: the restore asks the
repository which of the snapshot's suggestions are decided; each merge asks it (one read)
which of the suggestions it could start are decided (:meth:`HarvestStage._learn_decisions`),
so a redelivered or repeated question never starts one under a decided id; and the
repository refuses to write over a decided record, checked in the publish's own transaction
(a decision kept while a batch runs, between the stage's last look and its flush), returning
the refused ids, which the stage then stops holding and gives to no sink after the
repository (serve lists it first, so the Kafka topic never gets them). :meth:`flush` applies
the queued decisions first, so the last flush at shutdown publishes none decided since the
last batch. The Kafka topic cannot know more: a decision kept between the repository's write
and the produce, or in another replica's state file, is not seen, and a decided question's
last record stays on the topic (no tombstones); decisions live only in the state store,
which the labelling API and ``candidates export`` read. :meth:`HarvestStage.restore` is a
full reset to the snapshot (its docstring lists every piece of state), so the engine's
reload after a failed batch equals a restart from the same checkpoint.

Incremental snapshots: when a sink is a :class:`~service.harvest.store.CandidateRepository`
(the state store's ``harvest/candidate/<id>`` keys in the service), a snapshot lists the ids
of every suggestion held but carries in full only those whose record there is not their
current state (the *stale* ones); :meth:`HarvestStage.restore` rebuilds the others from their
records (:meth:`Suggestion.from_record`). So a checkpoint costs what changed, not all
``max_suggestions``. The rule that keeps a restore exact: a record the last snapshot relies on
is never overwritten before the next snapshot carries that suggestion in full — the last
*committed* snapshot: the engine confirms a commit (:meth:`HarvestStage.checkpointed`), and
until it does, after a failed checkpoint too, the records of both are held back. So a
suggestion clean at the last snapshot and changed since waits (for every sink, at most one
checkpoint interval); the others are written to the repository by :meth:`state_snapshot`
itself, just before its checkpoint, so that this snapshot can rely on them (the other sinks
still get them at the flush interval). ``flush(force=True)`` (at shutdown, after the final
checkpoint) publishes everything. Without a repository sink every suggestion is carried in
full, as in snapshot version 1 (still read).
"""

from __future__ import annotations

import logging
import time
from collections import Counter, OrderedDict, deque
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from itertools import islice
from typing import TYPE_CHECKING, Any

import msgspec

from service.files.fit_cache import Memo, no_memo
from service.harvest.config import REASONS, HarvestConfig
from service.harvest.neardup import NearDupIndex, Probe, lsh_parameters
from service.harvest.ranking import eviction_keys, select
from service.harvest.shedding import choose
from service.harvest.signals import (
    DOCUMENT,
    CoverageTracker,
    ScoreWindow,
    all_tied,
    event_reasons,
    production_documents,
)
from service.harvest.store import (
    CandidateRepository,
    CandidateSink,
    GapSuggestions,
    SuggestionRecord,
    record,
    record_text,
    records_json,
)
from service.harvest.suggestion import Occurrence, Suggestion
from service.harvest.text import candidate_id, comparison_form
from service.pacing import Backoff
from service.pii.scrub import scrub, scrub_label
from service.pii.stage import ANNOTATION_KEY as PII_ANNOTATION
from service.pipeline import Batch
from service.records import GoldQuestion
from service.shadow.runner import ShadowResult, production_ranking
from service.state import encoded_object
from service.text.subject import subject
from service.text.wording import core_form, may_merge

if TYPE_CHECKING:
    from service.embeddings.protocol import Embedder
    from service.events import QueryLogEvent

__all__ = ["PRODUCTION", "HarvestStage"]

log = logging.getLogger(__name__)

#: Waits (seconds) between the attempts of :meth:`HarvestStage.flush_final`: the poll loop's
#: capped doubling from 0.5 s (``consumers.loop.DEAD_LETTER_BACKOFF``), four retries, 7.5 s
#: in all: (0.5, 1.0, 2.0, 4.0).
FINAL_FLUSH_DELAYS_S = tuple(islice(Backoff(0.5, max_s=10.0).delays(), 4))

#: Pool name of the production retriever.
PRODUCTION = "production"
_GOLD = "gold:"
#: Index-key prefix of a decided suggestion's question (:meth:`HarvestStage.decided`).
_DECIDED = "decided:"
_VERSION = 2
_READ_VERSIONS = (1, 2)
_SNAPSHOT_RECENT = 5_000
_ALL = frozenset(REASONS)
_EXACT_CACHE = 200_000
_NORMAL_CACHE = 20_000
#: The distinct reason sets a remembered event's counted reasons take (subsets of
#: :data:`REASONS`), each one tuple shared by every event that has it (its reasons once each,
#: in :data:`REASONS` order), by the tuples they came as: not a frozenset per event (~0.2 KB
#: each: ~10 MB at the default 50,000 ``recent_events``), and not a frozenset at all: a tuple
#: of strings, and so each event's ``(suggestion id, reasons)`` entry, is left untracked by
#: the garbage collector, whose full collections walked every remembered event's entry (a
#: frozenset keeps its tuple tracked: ~28,000 of the replay's ~110,000 tracked objects on
#: ``benchmarks.bench_production``'s 50,000 events).
_REASON_SETS: dict[tuple[str, ...], tuple[str, ...]] = {}
_REASON_ORDER = {reason: at for at, reason in enumerate(REASONS)}
_new_tuple = tuple.__new__
_ENCODE = msgspec.json.encode
#: :class:`Occurrence`'s fields in the order :meth:`HarvestStage.process` builds them.
_OCCURRENCE_FIELDS = ("event_id", "timestamp", "question", "normalised", "reasons", "rankings",
                      "language", "topic", "role", "source", "gap", "counts", "trace_id",
                      "gap_dimension", "scrubbed")  # fmt: skip
if Occurrence._fields != _OCCURRENCE_FIELDS:  # a field added or moved: process must follow
    raise ImportError(f"Occurrence's fields are {Occurrence._fields}, not {_OCCURRENCE_FIELDS}")


def _reason_set(reasons: Iterable[str]) -> tuple[str, ...]:
    """The distinct ``reasons`` as one tuple, in :data:`REASONS` order (others after them,
    sorted): the shared one (:data:`_REASON_SETS`) when they are among :data:`REASONS`.
    What a remembered event's counted reasons are tested (``in``) and listed with."""
    given = reasons if isinstance(reasons, tuple) else tuple(reasons)
    shared = _REASON_SETS.get(given)
    if shared is None:
        found = frozenset(given)
        order = len(_REASON_ORDER)
        shared = tuple(sorted(found, key=lambda r: (_REASON_ORDER.get(r, order), r)))
        if found <= _ALL:  # at most 2^len(REASONS) distinct, each under a few orders
            if len(_REASON_SETS) >= 4_096:
                _REASON_SETS.clear()
            shared = _REASON_SETS.setdefault(shared, shared)
            _REASON_SETS[given] = shared
    return shared


def _larger(
    topic_gap: float, language_gap: float, document_gap: float = 0.0
) -> tuple[float, str | None]:
    """``(gap, dimension)``: the largest of a topic's, a language's and a document's coverage
    gap and whose it is (on a tie: ``"language"``, then ``"topic"``; ``None`` when it is 0).

    >>> _larger(0.1, 0.1, 0.1), _larger(0.0, 0.05, 0.3), _larger(0.0, 0.0, 0.0)
    ((0.1, 'language'), (0.3, 'document'), (0.0, None))
    """
    if document_gap > topic_gap and document_gap > language_gap:
        return document_gap, DOCUMENT
    if topic_gap > language_gap:
        return topic_gap, "topic"
    return language_gap, ("language" if language_gap > 0 else None)


def _role(event: QueryLogEvent, notes: dict[str, Any]) -> str | None:
    """The asker's role as a suggestion keeps it: scrubbed here when the PII stage did not
    run on the event (it scrubs roles itself), ``None`` when the event names none."""
    role = event.user.role if event.user is not None else None
    if role is None or PII_ANNOTATION in notes:
        return role
    return scrub_label(role)


def _datasketch_version() -> str | None:
    """The installed datasketch's version (its LSH parameters are its choice), without
    importing it."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("datasketch")
    except PackageNotFoundError:
        return None


class HarvestStage:
    """Pipeline stage harvesting gold-question suggestions (module docstring).

    Args:
        config: thresholds, weights, bounds.
        gold_counts: ``{"topic": {...}, "language": {...}}`` of the gold set (as the drift
            stage gets them), and ``"document"`` (:func:`service.coverage.document_counts`);
            without, no coverage gaps.
        known_questions: gold questions; used to skip known questions only when an event
            has no ``known`` annotation.
        sinks: where changed suggestions are published.
        clock: monotonic seconds, for ``flush_interval_s``.
        embedder: the embedding layer (:func:`service.embeddings.model.shared_embedder`) for the
            near-duplicate rule's cosine part (``config.embedding_similarity``); ``None``, or
            that setting ``None``: trigram Jaccard only.
        memo: may keep the near-duplicate index's LSH parameters between starts
            (:class:`service.files.fit_cache.FitCache`).
        documents: ``{passage id: document label}`` of the corpus
            (:func:`~service.harvest.signals.passage_documents`): an event's document is its
            first production passage's; empty or ``None``: no document gaps.
        renamed: ``{own label: group label}`` of the corpus documents that joined a group of
            language variants (:class:`~service.harvest.signals.DocumentLabels`): a state
            saved before they were grouped is counted under their group on restore.
    """

    name = "harvest"
    keeps_counts = True  # reads the annotations only (see service.pipeline.Stage)

    def __init__(
        self,
        config: HarvestConfig,
        gold_counts: Mapping[str, Mapping[str, int]] | None = None,
        known_questions: Iterable[GoldQuestion] = (),
        sinks: Sequence[CandidateSink] = (),
        clock: Callable[[], float] = time.monotonic,
        embedder: Embedder | None = None,
        memo: Memo = no_memo,
        documents: Mapping[str, str] | None = None,
        renamed: Mapping[str, str] | None = None,
    ) -> None:
        self.config = config
        self.documents: dict[str, str] = dict(documents or {})
        self.renamed: dict[str, str] = dict(renamed or {})
        self._n_documents = len(set(self.documents.values()))
        # documents that joined a group of language variants, and the groups they form
        self._n_grouped = len(self.renamed)
        self._n_groups = len(set(self.renamed.values()))
        self.sinks = list(sinks)
        self.clock = clock
        self.coverage = CoverageTracker(gold_counts or {}, config.min_live_events,
                                        config.gap_window, config.min_gap_ratio,
                                        config.max_documents,
                                        config.min_uncovered_rise)  # fmt: skip
        self.scores = ScoreWindow(config.score_window, config.min_live_events)
        cosine = config.embedding_similarity
        lsh = memo("lsh-parameters", [config.similarity, config.num_perm, _datasketch_version()],
                   lambda: lsh_parameters(config.similarity, config.num_perm))  # fmt: skip
        self._lsh = lsh
        self._embedder = embedder if cosine is not None else None
        self.index = self._new_index([])
        self.suggestions: dict[str, Suggestion] = {}
        # decided suggestions no longer held: id -> normalised question, oldest decision
        # first, at most max_suggestions (each also in the index as _DECIDED + id); a
        # question matching one is not suggested again (decided)
        self._decided: OrderedDict[str, str] = OrderedDict()
        # changes to _decided since start or restore (≥ 0), and the count at which the
        # repository sink last took the list (None: not since start or restore)
        self._decided_changes = 0
        self._decided_stored: int | None = None
        # decisions told by the labelling API (another thread), applied by the consumer's
        # thread at its next batch, shadow result or snapshot (deque appends are atomic)
        self._decisions_in: deque[tuple[str, str]] = deque()
        self._exact: dict[str, str] = {}  # normalised text -> suggestion id
        # suggestion id -> the texts _exact was given for it, and the ids whose texts may
        # point to no suggestion held or decided (placed since the last eviction, evicted,
        # or decisions forgotten): an eviction drops those texts, not a pass over _exact
        # (tuples of strings, which the garbage collector stops tracking; a list per id
        # stayed tracked, walked by every full collection)
        self._exact_of: dict[str, tuple[str, ...]] = {}
        self._exact_check: set[str] = set()
        self._known: set[str] = set()  # normalised texts near a gold question
        # event id -> (suggestion id, reasons counted for the event)
        self._recent: OrderedDict[str, tuple[str, tuple[str, ...]]] = OrderedDict()
        self._dirty: set[str] = set()  # changed since published to every sink
        self._stale: set[str] = set()  # changed since published to the repository sink
        # records a snapshot relies on (clean in it): the last committed one's (_committed)
        # and the last one taken since, until its commit is confirmed (checkpointed); a
        # snapshot whose checkpoint failed is never read, so it holds nothing back
        self._held: set[str] = set()
        self._committed: set[str] = set()
        self._taken: set[str] | None = None  # the last snapshot's, until confirmed
        # suggestions evicted since start (≥ 0); the count at the last committed snapshot
        # that asked for a sweep (None: none since start or restore); the count the last
        # snapshot taken asked for one at, until confirmed
        self._evictions = 0
        self._swept_at: int | None = None
        self._sweep_taken: int | None = None
        # suggestion id -> its eviction key (priority, last seen, id), while it is unchanged
        self._order: dict[str, tuple[float, str, str]] = {}
        # the keys of _order the last eviction kept, sorted (each the very object _order
        # held then: one _order no longer holds is out of date)
        self._ranked: list[tuple[float, str, str]] = []
        # keys put in _order by _add (a suggestion it started) since the last eviction
        self._unranked: list[tuple[float, str, str]] = []
        # ids of suggestions held that may have no key in _order: changed since keyed,
        # started unkeyed (_key_started) or restored; cleared by the eviction that keys them
        # (so always among the suggestions held: none leaves otherwise but by _forget,
        # which drops it here too)
        self._rekey: set[str] = set()
        self._repository = next((s for s in self.sinks if isinstance(s, CandidateRepository)), None)
        self._last_flush = float("-inf")
        self._idle_failed = float("-inf")  # when an idle turn's flush last failed
        self._pending: dict[str, Counter[str]] = self._empty_pending()
        self._active = frozenset(r for r in REASONS if config.weight(r) > 0)
        self._weights = {r: config.weight(r) for r in REASONS}
        self._reason_weights: dict[tuple[str, ...], float] = {}  # reasons -> weight sum
        self._normal: dict[str, str] = {}  # question -> normalised (bounded cache)
        # a question was annotated 'novel' with novelty_calibrated False (for shadow results,
        # which carry the topic but not its calibration)
        self._novel_uncalibrated = False
        # the last batch's topics were annotated topic_calibrated False: the topic model is
        # below analytics.topics.min_kappa, so no topic is a coverage gap (for shadow results
        # and the report's gaps, which carry no annotations)
        self._topic_uncalibrated = False
        # event id -> {candidate: ranking} of the agreeing shadow results that came before
        # their event was picked (a replay's synchronous shadow stage runs before this stage):
        # the event's occurrence pools them; cleared after each batch (not snapshotted)
        self._early: dict[str, dict[str, tuple[str, ...]]] = {}
        # event id -> reasons of a recent event shed by max_new_per_batch (not snapshotted)
        self._shed_reasons: OrderedDict[str, tuple[str, ...]] = OrderedDict()
        # recent events counted as known by _merge (gold_set, decided), so that the other of
        # an event's pick and its shadow verdict does not count it again (not snapshotted)
        self._known_events: OrderedDict[str, None] = OrderedDict()
        # the subjects (service.text.subject) of questions and gold rows are compared: a
        # scrubbed self-introduction is no similarity (trial 12 F6: distinct questions after
        # "My name is <NAME>, my email is <EMAIL> …" merged as one suggestion's variants)
        gold = [(f"{_GOLD}{q.id}", comparison_form(subject(q.question)))
                for q in known_questions]  # fmt: skip
        gold = [(key, text) for key, text in gold if text]
        # the gold questions' index entries, added again to each index a restore builds
        self._gold_probes = list(
            zip([k for k, _ in gold], self.index.probes([t for _, t in gold]), strict=True)
        )
        for key, probe in self._gold_probes:
            self.index.add(key, probe)

    def _new_index(self, entries: Sequence[tuple[str, Probe | str]]) -> NearDupIndex:
        """An empty near-duplicate index of the stage's parameters, with ``entries`` added."""
        config = self.config
        index = NearDupIndex(
            config.similarity, config.num_perm, embedder=self._embedder,
            cosine=config.embedding_similarity or 1.0, parameters=self._lsh, rule=may_merge,
            gate=core_form,
        )  # fmt: skip
        for key, probe in entries:
            index.add(key, probe)
        return index

    # -- live path -----------------------------------------------------------------------

    def process(self, batch: Batch) -> None:
        """Pick, merge and pool the batch's events; publish when a flush is due.

        Cheapest work first: an event costs its reasons (a cached tuple) and, with some,
        its normalised text (cached by wording); its :class:`Occurrence` (and production
        ranking) is built only if its question is kept, so a shed event, or one with no
        reason, allocates nothing that outlives the loop."""
        if self._decisions_in:
            self._apply_decisions()
        annotations = batch.annotations
        events = batch.events
        # each event's coverage gaps over the window right after it: the same whatever the
        # batching (judged over the whole batch, a 500-event replay found fewer gaps)
        # (an event judged out of scope joins no document share: production_documents)
        documents = (production_documents(events, self.documents, annotations)
                     if self.documents else None)  # fmt: skip
        if documents is not None:  # the retrievals that ranked nothing, said in the report
            self.coverage.documents_all_tied += sum(
                1 for event, doc in zip(events, documents, strict=True)
                if doc is None and event.retrieval is not None
                and all_tied(event.retrieval.results))  # fmt: skip
        coverage = self.coverage.update_each(annotations, documents)
        config, scores, active, normal = self.config, self.scores, self._active, self._normal
        quantile = config.low_confidence_quantile
        # (topic, language, uncalibrated novel, topic gap, language gap, topic uncalibrated,
        # document gap) -> ((topic, language), gap), and the gap's dimension
        strata: dict[tuple[Any, ...], tuple[tuple[Any, Any], float]] = {}
        gap_dimensions: dict[tuple[Any, ...], str | None] = {}
        topics_seen = topics_uncalibrated = False
        # the picked events: (index in the batch, normalised question, scrubbed question,
        # whether its scrub found nothing in it (Occurrence.scrubbed: the PII stage's, its
        # annotation empty: nothing in the question or answer, or the one here), reasons,
        # stratum ((topic, language), gap), the dimension of the stratum's gap, whether to
        # look for a gold near-duplicate); one tuple each, split into columns after the loop
        picked: list[tuple[int, str, str, bool, tuple[str, ...], tuple[tuple[Any, Any], float],
                           str | None, bool]] = []  # fmt: skip
        known = too_long = 0
        max_chars = config.max_question_chars
        lows = scores.lows(events, quantile)
        topic_gaps, language_gaps, document_gaps = (coverage["topic"], coverage["language"],
                                                    coverage[DOCUMENT])  # fmt: skip
        for i, (event, notes, low, topic_gap, language_gap, document_gap) in enumerate(
            zip(events, annotations, lows, topic_gaps, language_gaps, document_gaps, strict=True)
        ):
            get = notes.get
            topic = get("topic")
            # an uncalibrated 'novel' is no fact: its topic share is no coverage gap; nor is
            # any topic's while the topic assignment is near chance (topic_calibrated False)
            key = (topic, get("language"), topic == "novel" and get("novelty_calibrated") is False,
                   topic_gap, language_gap, get("topic_calibrated") is False,
                   document_gap)  # fmt: skip
            stratum = strata.get(key)
            if stratum is None:
                uncalibrated = key[2]
                if uncalibrated:
                    self._novel_uncalibrated = True
                if topic is not None:
                    topics_seen = True
                    topics_uncalibrated = topics_uncalibrated or key[5]
                gap, gap_dimensions[key] = _larger(
                    0.0 if uncalibrated or key[5] else topic_gap, language_gap, document_gap
                )
                stratum = strata[key] = ((topic, key[1]), gap)
            reasons = event_reasons(event, notes, config, stratum[1], low, active)
            if not reasons:
                continue
            if get("known"):  # once per event: its shadow verdict may have counted it
                known += self._first_known(event.event_id)
                continue
            question = event.question
            if len(question) > max_chars:
                too_long += 1
                continue
            if PII_ANNOTATION in notes:  # the PII stage's counts (question and answer)
                found = notes[PII_ANNOTATION]
            else:  # the PII stage did not run on it: scrub here
                question, found = scrub(question)
            text = normal.get(question)
            if text is None:
                if len(normal) >= _NORMAL_CACHE:
                    normal.clear()
                text = normal[question] = comparison_form(subject(question))
            if text:
                picked.append((i, text, question, found == {}, reasons, stratum,
                               gap_dimensions[key], "known" not in notes))  # fmt: skip
        if topics_seen:
            self._topic_uncalibrated = topics_uncalibrated
        rows: Sequence[int] = ()
        texts: Sequence[str] = ()
        questions: Sequence[str] = ()
        clean_of: Sequence[bool] = ()
        reasons_of: Sequence[tuple[str, ...]] = ()
        strata_of: Sequence[tuple[tuple[Any, Any], float]] = ()
        dimension_of: Sequence[str | None] = ()
        gold_of: Sequence[bool] = ()
        if picked:
            (rows, texts, questions, clean_of, reasons_of, strata_of, dimension_of,
             gold_of) = zip(*picked, strict=True)  # fmt: skip
        if known:
            self._pending["known"]["annotation"] += known
        if too_long:
            self._pending["too_long"]["events"] += too_long
        generated = config.generated_channels
        early = self._early

        def occurrence(k: int) -> Occurrence:
            event = events[rows[k]]
            (topic, language), gap = strata_of[k]
            ranking = production_ranking(event)
            rankings: dict[str, Sequence[str]] = {PRODUCTION: ranking} if ranking else {}
            candidates = early.get(event.event_id)
            if candidates:  # the candidates' results on it came first (a replay): pool them
                rankings.update(candidates)
            # Occurrence's fields in their order, as one tuple (binding fifteen keyword
            # arguments cost ~0.9 µs per picked event): event_id, timestamp, question,
            # normalised, reasons, rankings, language, topic, role, source, gap, counts,
            # trace_id, gap_dimension, scrubbed
            return _new_tuple(Occurrence, (
                event.event_id, event.timestamp, questions[k], texts[k], reasons_of[k],
                rankings, language, topic, _role(event, annotations[rows[k]]),
                "generated" if event.channel in generated else "real", gap, True,
                event.trace_id, dimension_of[k], clean_of[k],
            ))  # fmt: skip

        event_ids = [events[i].event_id for i in rows]
        shed = self._merge(texts, gold_of, strata_of, reasons_of, occurrence,
                           config.max_new_per_batch, event_ids)  # fmt: skip
        shed_reasons = self._shed_reasons
        for k in shed:  # a shadow verdict on it may still start a suggestion: keep its reasons
            shed_reasons[events[rows[k]].event_id] = reasons_of[k]
        while len(shed_reasons) > config.recent_events:
            shed_reasons.popitem(last=False)
        early.clear()  # its events are picked or not by now; a later result joins _recent
        self.flush()

    def idle(self) -> None:
        """No batch came (:meth:`service.pipeline.Pipeline.idle`): publish what is due, as
        after a batch (:meth:`flush`, not forced) — but at most once per
        ``flush_interval_s`` (a failed flush leaves :meth:`flush` due at once, and idle turns
        come about every second: a sink down on a quiet stream would be tried, under the
        engine's lock, at each of them)."""
        now = self.clock()
        since = now - max(self._last_flush, self._idle_failed)
        if not self._dirty or since < self.config.flush_interval_s:
            return
        self.flush()
        if self._dirty and self._last_flush != now:  # a sink failed: wait an interval
            self._idle_failed = now

    def observe_shadow(self, result: ShadowResult) -> None:
        """Fold one finished shadow result in (module docstring); errors are ignored."""
        if result.error is not None or not result.ranking:
            return
        if self._decisions_in:
            self._apply_decisions()
        rbo = result.agreement.rbo if result.agreement is not None else None
        disagrees = rbo is not None and rbo < self.config.max_rbo
        reasons: tuple[str, ...] = ("shadow_disagreement",) if disagrees else ()
        if self.config.weight("shadow_disagreement") <= 0:
            reasons = ()
        if reasons and result.known:  # the quality stage's known question: as its event,
            # never suggested, counted known once per event (with the event's own pick)
            self._pending["known"]["annotation"] += self._first_known(result.event_id)
            return
        rankings = {result.candidate: result.ranking}
        seen = self._recent.get(result.event_id)
        if seen is not None and seen[0] in self.suggestions:
            evidence = Occurrence(
                result.event_id, result.timestamp, result.question, "", reasons, rankings,
                counts=False,
            )  # fmt: skip
            self._add(seen[0], evidence)
            return
        # the event's own reasons when it was shed (not merged): the verdict's suggestion
        # then carries them too
        own = self._shed_reasons.pop(result.event_id, ())
        if not reasons:  # its event may be picked later in this batch: keep the ranking
            self._early.setdefault(result.event_id, {})[result.candidate] = result.ranking
            return
        if own:
            reasons = tuple(r for r in REASONS if r in own or r in reasons)
        if len(result.question) > self.config.max_question_chars:
            self._pending["too_long"]["events"] += 1
            return
        question, found = scrub(result.question)
        normalised = comparison_form(subject(question))
        if normalised:
            gap, dimension = self._gap(result.topic, result.language, topic_gap=not (
                result.topic == "novel" and self._novel_uncalibrated
                or self._topic_uncalibrated))  # fmt: skip
            occurrence = Occurrence(
                event_id=result.event_id, timestamp=result.timestamp, question=question,
                normalised=normalised, reasons=reasons,
                rankings={PRODUCTION: result.production,
                          **self._early.pop(result.event_id, {}), **rankings},
                language=result.language, topic=result.topic, role=result.role,
                gap=gap, trace_id=result.trace_id, gap_dimension=dimension,
                scrubbed=found == {},
            )  # fmt: skip
            stratum = ((occurrence.topic, occurrence.language), occurrence.gap)
            # the gold check only when no quality stage judged the event (known None), as
            # for the event itself (process): a quality stage that found no gold question
            # for it is not overruled by the near-duplicate check, whichever comes first
            # (before, a verdict that came first was counted gold_set and lost)
            self._merge([normalised], [result.known is None], [stratum], [reasons],
                        lambda _: occurrence, event_ids=[result.event_id])  # fmt: skip

    def flush(self, force: bool = False) -> int:
        """Publish changed suggestions when ``flush_interval_s`` has passed (or ``force``);
        return how many records were published (0 when not due or a sink failed).

        Without ``force``, suggestions the last snapshot relies on the records of, changed
        since, wait for the next snapshot (module docstring); the repository sink is given
        only records it does not hold yet. First applies the decisions queued (so a
        suggestion decided since the last batch is not published, also at the last flush);
        the records the repository sink refuses (decided in it: by another process, or
        while this flush ran) are given to no sink after it, and their suggestions are no
        longer held (:meth:`decided`)."""
        if self._decisions_in:
            self._apply_decisions()
        now = self.clock()
        if not self._dirty or not (force or now - self._last_flush >= self.config.flush_interval_s):
            return 0
        suggestions, config, stale = self.suggestions, self.config, self._stale
        # a suggestion the last snapshot relies on waits only when it changed since (stale):
        # unchanged, its record there is current, so the other sinks take it now
        held = () if force else self._held
        due = sorted(sid for sid in self._dirty if sid not in held or sid not in stale)
        if not due:
            return 0
        present = [sid for sid in due if sid in suggestions]
        built: dict[str, SuggestionRecord] = {}  # each record built once, when a sink needs it

        def records_of(ids: Iterable[str]) -> list[SuggestionRecord]:
            rows = []
            for sid in ids:
                row = built.get(sid)
                if row is None:
                    row = built[sid] = record(suggestions[sid], config)
                rows.append(row)
            return rows

        for sink in self.sinks:
            # the repository already holds the current record of a suggestion that is not
            # stale (state_snapshot wrote it since its last change): not written again
            ids = [sid for sid in present if sid in stale] if sink is self._repository else present
            if not ids:
                continue
            try:
                refused = sink.publish(records_of(ids))
            except Exception as exc:  # a sink outage must not stop the live path
                log.warning("harvest sink %s failed: %s", type(sink).__name__, type(exc).__name__)
                self._pending["sink_failures"][type(sink).__name__] += 1
                return 0
            if refused and sink is self._repository:  # decided there: no sink after it
                self._forget_refused(refused, built)  # gets them (the Kafka topic included)
                present = [sid for sid in present if sid in suggestions]
        self._dirty.difference_update(due)
        self._stale.difference_update(due)
        self._last_flush = now
        return len(present)

    @property
    def unpublished(self) -> int:
        """Changed suggestions no sink has taken yet (≥ 0)."""
        return len(self._dirty)

    def flush_final(
        self,
        delays_s: Sequence[float] = FINAL_FLUSH_DELAYS_S,
        wait: Callable[[float], Any] = time.sleep,
    ) -> int:
        """The last flush (shutdown, end of a replay): :meth:`flush` with ``force``, retried
        after each of ``delays_s`` (seconds; the poll loop's capped doubling from 0.5 s,
        7.5 s in all by default) while a sink fails, so a store that is briefly full or a
        broker that is briefly away loses nothing.

        Returns:
            the suggestions lost (≥ 0): changed ones no sink took after the last attempt,
            also logged as an error with that count (never silent).
        """
        self.flush(force=True)
        for delay in delays_s:
            if not self._dirty:
                return 0
            log.warning("harvest: %d suggestions not published at the last flush; retrying "
                        "in %.1f s", len(self._dirty), delay)  # fmt: skip
            wait(delay)
            self.flush(force=True)
        lost = len(self._dirty)
        if lost:
            log.error("harvest: %d suggestions lost: no sink took them after %d attempts "
                      "(see the sink failures logged above)", lost, len(delays_s) + 1)  # fmt: skip
        return lost

    # -- decisions -----------------------------------------------------------------------

    def decided(self, candidate_id: str, normalised: str = "") -> None:
        """A labelling decision (accept or reject) on suggestion ``candidate_id`` was kept
        (``normalised``: its record's normalised question, used when the stage no longer
        holds it). Thread-safe: queued, and applied by the consumer's thread before its next
        batch, shadow result or snapshot (:meth:`_apply_decisions`), never mid-batch.

        Invariants once applied: the suggestion is no longer held (it leaves
        :attr:`suggestions`, the eviction order and the unpublished sets, so it takes no
        place under ``max_suggestions`` and its record, kept by its decision, is never
        republished over the one it was decided on), and a question whose nearest non-gold
        match is its question (or whose normalised text is its) is not suggested again:
        counted as ``pending_observations()["known"]["decided"]``. An accepted question also
        joins the gold set (the service's refresh), where the quality stage's ``known``
        annotation catches it; a rejected one only this way. Bounded: the last
        ``max_suggestions`` decisions are remembered (their ids and normalised questions, in
        the snapshot and the index); an older decided question asked again is found decided
        in the repository sink before it could start a suggestion under its id
        (:meth:`_learn_decisions`), and remembered again; without a repository sink, or
        when only a near-duplicate of it (another id) is asked, it may start one anew."""
        self._decisions_in.append((candidate_id, normalised))

    def held(self) -> int:
        """How many suggestions the stage holds once the decisions queued by :meth:`decided`
        are applied (what ``pending_observations()["suggestions"]`` gives after the next
        batch), ≥ 0. Callable from the thread that calls :meth:`decided` (the queue is copied
        in one step; the suggestions are only counted and looked up)."""
        queued = {sid for sid, _ in list(self._decisions_in)}
        return len(self.suggestions) - sum(1 for sid in queued if sid in self.suggestions)

    def _forget_refused(self, refused: Iterable[str],
                        rows: Mapping[str, Mapping[str, Any]]) -> None:  # fmt: skip
        """Stop holding the suggestions whose records (``rows``, by id) the repository sink
        refused because it holds their decision (:meth:`_forget`)."""
        for sid in refused:
            row = rows.get(sid)
            self._forget(sid, str(row["normalised"]) if row is not None else "")

    def _apply_decisions(self) -> None:
        """Apply the decisions queued by :meth:`decided` (in their order)."""
        while self._decisions_in:
            sid, text = self._decisions_in.popleft()
            self._forget(sid, text)

    def _forget(self, sid: str, text: str) -> None:
        """Stop holding decided suggestion ``sid`` and remember its question (``text`` when
        it is not held) among the decided ones, bounded (:meth:`decided`)."""
        suggestion = self.suggestions.pop(sid, None)
        if suggestion is not None:
            text = suggestion.normalised
            self._order.pop(sid, None)
            self._rekey.discard(sid)
            self._dirty.discard(sid)
            self._stale.discard(sid)
            self.index.remove(sid)
        if not text:
            return
        decided = self._decided
        decided.pop(sid, None)
        decided[sid] = text
        self._decided_changes += 1
        self.index.add(_DECIDED + sid, text)
        while len(decided) > self.config.max_suggestions:
            oldest, _ = decided.popitem(last=False)
            self.index.remove(_DECIDED + oldest)
            self._exact_check.add(oldest)

    # -- merging -------------------------------------------------------------------------

    def _gap(self, topic: Any, language: Any, topic_gap: bool = True) -> tuple[float, str | None]:
        """``(gap, dimension)``: the larger coverage gap of ``topic`` (unless not
        ``topic_gap``) and ``language``, in [0, 1], and whose it is (``"language"`` when
        both are as large; ``None`` when it is 0). No document gap: a shadow result (the one
        caller) carries its event's topic and language but not production's ranking."""
        language_gap = self.coverage.gap("language", language)
        topic_gap_ = self.coverage.gap("topic", topic) if topic_gap else 0.0
        return _larger(topic_gap_, language_gap)

    def _merge(
        self,
        texts: Sequence[str],
        gold: Sequence[bool],
        strata: Sequence[tuple[tuple[Any, Any], float]],
        reasons: Sequence[tuple[str, ...]],
        occurrence: Callable[[int], Occurrence],
        budget: int | None = None,
        event_ids: Sequence[str] = (),
    ) -> list[int]:
        """Merge picked occurrences in order: the ``k``-th has normalised text
        ``texts[k]``, looks for gold near-duplicates if ``gold[k]``, has stratum and
        coverage gap ``strata[k]`` = ``((topic, language), gap)`` and ``reasons[k]``, is
        event ``event_ids[k]``, and is built by ``occurrence(k)`` only if it is merged. At
        most ``budget`` distinct new texts are matched; the others' occurrences are shed
        (:mod:`.shedding`): their indexes ``k`` are returned. An event counted as known
        (``gold_set``, ``decided``) is counted once while remembered (``recent_events``):
        its pick and its shadow verdict both come here.

        Before matching, the repository sink is asked (one read) which of the suggestions
        this merge could start are decided there (:meth:`_learn_decisions`)."""
        exact, known, weight_of = self._exact, self._known, self._reason_weights
        scores: dict[str, float] = {}  # new text -> best score in the batch
        first: dict[str, tuple[Any, Any]] = {}  # new text -> stratum of its first occurrence
        for k, text in enumerate(texts):
            if text in exact or (gold[k] and text in known):
                continue
            why = reasons[k]
            weight = weight_of.get(why)
            if weight is None:
                weight = weight_of[why] = sum(self._weights[r] for r in why)
            score = weight * (1.0 + strata[k][1])
            seen = scores.get(text)
            if seen is None:
                scores[text] = score
                first[text] = strata[k][0]
            elif score > seen:
                scores[text] = score
        shed: Collection[str] = ()
        fresh = list(scores)
        if budget is not None and len(fresh) > budget:
            kept = choose(((t, first[t], score) for t, score in scores.items()), budget)
            shed = scores.keys() - kept
            fresh = [t for t in fresh if t in kept]
        # before the probes: they see its index entries
        ids = self._learn_decisions(texts, fresh)
        probes = dict(zip(fresh, self.index.probes(fresh), strict=True)) if fresh else {}
        shed_events = gold_set = decided_events = 0
        shed_rows: list[int] = []
        decided = self._decided

        def first_time(k: int) -> bool:
            """Whether the ``k``-th event is counted as known for the first time."""
            return k >= len(event_ids) or self._first_known(event_ids[k])

        for k, text in enumerate(texts):
            if text in shed:
                shed_events += 1
                shed_rows.append(k)
                continue
            check_gold = gold[k]
            if check_gold and text in known:
                gold_set += first_time(k)
                continue
            sid = exact.get(text)
            if sid is None:
                probe = probes.get(text)
                if probe is None:  # its exact entry went with the cache, in this batch
                    probe = probes[text] = self.index.probes([text])[0]
                sid = self._place(probe, check_gold, ids)
                if sid is None:
                    gold_set += first_time(k)
                    continue
            if sid in decided:  # a decided question asked again: never suggested again
                decided_events += first_time(k)
                continue
            self._add(sid, occurrence(k))
        if shed_events:
            self._pending["shed"]["events"] += shed_events
        if gold_set:
            self._pending["known"]["gold_set"] += gold_set
        if decided_events:
            self._pending["known"]["decided"] += decided_events
        self._evict()
        return shed_rows

    def _first_known(self, event_id: str) -> bool:
        """Whether event ``event_id`` is counted as known (gold set, decided, or the quality
        stage's annotation) for the first time while remembered (``recent_events``): its
        pick and its shadow verdict may both find it known, in either order."""
        known_events = self._known_events
        if event_id in known_events:
            return False
        known_events[event_id] = None
        if len(known_events) > self.config.recent_events:
            known_events.popitem(last=False)
        return True

    def _learn_decisions(self, texts: Sequence[str], fresh: Sequence[str]) -> dict[str, str]:
        """Ask the repository sink, in one read, which suggestions this merge could start
        (the ids of the ``fresh`` texts and the exact-text ids of ``texts`` neither held nor
        among the decisions remembered) hold a decision there, and stop holding those
        (:meth:`_forget`): a decision the stage was never told of (kept by another process,
        or told before a kill -9 after the last checkpoint) or no longer remembers (past the
        bound). Without it, the redelivered or repeated question would start a suggestion
        under the decided id: held again (a place under ``max_suggestions``, never
        decidable: 409) and counted new twice. A failed read is logged and counted as a
        sink failure; the repository still refuses to write over the decided record, and the
        flush that it refuses stops holding it.

        Returns ``{text: candidate_id(text)}`` of the ``fresh`` texts it worked out (none
        without a repository sink), for :meth:`_place`."""
        repository = self._repository
        if repository is None:
            return {}
        suggestions, decided, exact = self.suggestions, self._decided, self._exact
        ids: dict[str, str] = {}  # id -> normalised text
        own = {text: candidate_id(text) for text in fresh}
        for text, sid in own.items():
            if sid not in suggestions and sid not in decided:
                ids[sid] = text
        for text in texts:
            known = exact.get(text)
            if known is not None and known not in suggestions and known not in decided:
                ids[known] = text
        if not ids:
            return own
        try:
            found = self._decided_in_repository(list(ids))
        except Exception as exc:  # the store's guard keeps the decided record (docstring)
            name = type(repository).__name__
            log.warning("harvest sink %s: decisions not read: %s", name, type(exc).__name__)
            self._pending["sink_failures"][name] += 1
            return own
        for sid in sorted(found):
            self._forget(sid, ids[sid])
        return own

    def _place(self, probe: Probe, check_gold: bool,
               ids: Mapping[str, str] | None = None) -> str | None:  # fmt: skip
        """The suggestion id a new normalised text joins or starts; ``None`` when it is a
        near-duplicate of a gold question (only looked for with ``check_gold``); the id of a
        decided suggestion (in ``_decided``, not to be suggested again) when that is its
        nearest non-gold match, or its own id is one. ``ids``: ``candidate_id`` of texts,
        already worked out (:meth:`_learn_decisions`)."""
        found = self.index.matches(probe)
        if len(self._exact) + len(self._known) >= _EXACT_CACHE:
            self._exact.clear()
            self._known.clear()
            self._exact_of.clear()
            self._exact_check.clear()
        if check_gold and found and any(key.startswith(_GOLD) for key, _ in found):
            self._known.add(probe.text)
            return None
        own = [key for key, _ in found if not key.startswith(_GOLD)] if found else []
        if own and own[0].startswith(_DECIDED):  # nearest a decided question: the caller
            sid = own[0][len(_DECIDED) :]  # drops it (a live suggestion nearer takes it)
        else:
            sid = own[0] if own else (ids or {}).get(probe.text) or candidate_id(probe.text)
            if not own and sid not in self.index and sid not in self._decided:
                self.index.add(sid, probe)
        self._exact[probe.text] = sid
        exact_of = self._exact_of
        exact_of[sid] = (*exact_of.get(sid, ()), probe.text)
        self._exact_check.add(sid)
        return sid

    def _add(self, sid: str, occurrence: Occurrence) -> None:
        """Merge ``occurrence`` into suggestion ``sid`` (started by a counted occurrence).

        An event already counted (in ``_recent``) is not counted again: only the reasons
        not yet counted for it are added (module docstring), into the suggestion that
        counted it; a counted occurrence bringing none is dropped (a redelivery)."""
        seen = self._recent.get(occurrence.event_id)
        if seen is not None and seen[0] in self.suggestions:
            sid, counted = seen
            new = tuple(r for r in occurrence.reasons if r not in counted)
            if occurrence.counts and not new:
                return
            occurrence = occurrence._replace(reasons=new, counts=False)
            if new:
                self._recent[occurrence.event_id] = (sid, _reason_set((*counted, *new)))
        suggestion = self.suggestions.get(sid)
        config = self.config
        if suggestion is None:
            if not occurrence.counts:
                return
            # started and added in one step (Suggestion.first: the same fields)
            suggestion = self.suggestions[sid] = Suggestion.first(
                sid, occurrence, config.max_variants, config.pool_k, config.max_pool)  # fmt: skip
            if sid not in self.index:
                self.index.add(sid, suggestion.normalised)
            self._pending["new"]["suggestions"] += 1
            self._key_started(suggestion, occurrence.reasons)
        elif not suggestion.add(occurrence, config.max_variants, config.pool_k, config.max_pool):
            return
        else:
            self._order.pop(sid, None)
            self._rekey.add(sid)
        self._dirty.add(sid)
        self._stale.add(sid)
        counts = self._pending["reasons"]
        for reason in occurrence.reasons:  # Counter.update: an ABC check per call
            counts[reason] += 1
        if occurrence.counts:
            recent = self._recent
            recent[occurrence.event_id] = (sid, _reason_set(occurrence.reasons))
            if len(recent) > config.recent_events:
                recent.popitem(last=False)

    def _key_started(self, suggestion: Suggestion, reasons: tuple[str, ...]) -> None:
        """Put the eviction key of ``suggestion``, just started (count 1) by an occurrence
        of ``reasons``, in ``_order`` (and ``_unranked``): the key
        :func:`~service.harvest.ranking.eviction_keys` gives, from the reasons' weight sum
        the merge already knows (``_reason_weights``: the weights summed in the reasons'
        order, as ``eviction_keys`` sums them over the suggestion's reasons, the same keys
        in the same order) — a started suggestion is keyed when it starts, not looked for
        among all those held at the next eviction. Left to the eviction (``_rekey``) when
        the reasons repeat one (the suggestion's dictionary then holds fewer)."""
        if len(reasons) != len(suggestion.reasons):
            self._rekey.add(suggestion.id)
            return
        weight = self._reason_weights.get(reasons)
        if weight is None:
            weight = self._reason_weights[reasons] = sum(self._weights[r] for r in reasons)
        # eviction_keys' total * frequency * (1 + gap), frequency 1 + log2(1) = 1.0
        key = (weight * 1.0 * (1.0 + suggestion.gap), suggestion.last_seen, suggestion.id)
        self._order[suggestion.id] = key
        unranked = self._unranked
        unranked.append(key)
        if len(unranked) > 2 * self.config.max_suggestions:  # no eviction for long (few
            # suggestions, or decisions): those changed or gone since are dropped, bounded
            order = self._order
            self._unranked = [k for k in unranked if order.get(k[2]) is k]

    def _evict(self) -> None:
        """Past ``1.1 × max_suggestions``, drop the lowest by (priority, last seen, id) down
        to ``max_suggestions``. Each one's key is computed once while it is unchanged
        (``_order``), not for every suggestion held at every eviction: a started one's when
        it starts (:meth:`_key_started`), a changed one's here. The exact-text look-up then
        loses the texts of the ids that left (O(evicted + placed since), not O(texts))."""
        limit, suggestions = self.config.max_suggestions, self.suggestions
        if len(suggestions) <= limit * 1.1:
            return
        order, rekey = self._order, self._rekey
        # new or changed since the last time (eviction_keys: priority's floats; those held
        # without a key are among _rekey, not looked for among all held), and those keyed
        # when they started (_key_started) and unchanged since
        fresh = eviction_keys([suggestions[sid] for sid in rekey if sid not in order],
                              self.config)  # fmt: skip
        rekey.clear()
        for key in fresh:
            order[key[2]] = key
        fresh += [key for key in self._unranked if order.get(key[2]) is key]
        self._unranked = []
        # the last eviction's sorted keys still current, then the new ones sorted: two runs,
        # which list.sort merges in about one pass (a full sort of the ~5,500 keys was most
        # of an eviction); order holds exactly the suggestions held, so these are its values
        ranked = [key for key in self._ranked if order.get(key[2]) is key]
        fresh.sort()
        ranked += fresh
        ranked.sort()
        evicted = len(ranked) - limit
        check = self._exact_check
        for _, _, sid in ranked[:evicted]:
            del suggestions[sid], order[sid]
            self.index.remove(sid)
            self._dirty.discard(sid)
            self._stale.discard(sid)
            check.add(sid)
        del ranked[:evicted]
        self._ranked = ranked
        # the exact-text look-up keeps only texts of suggestions held or decided: those of
        # the ids that may have left (an O(evicted + placed) pass, not one over every text)
        decided, exact, exact_of = self._decided, self._exact, self._exact_of
        for sid in check:
            if sid not in suggestions and sid not in decided:
                for text in exact_of.pop(sid, ()):
                    if exact.get(text) == sid:
                        del exact[text]
        check.clear()
        self._pending["evicted"]["suggestions"] += evicted
        self._evictions += evicted

    # -- reports, telemetry, persistence -------------------------------------------------

    @staticmethod
    def _empty_pending() -> dict[str, Counter[str]]:
        keys = ("reasons", "known", "new", "evicted", "sink_failures", "shed", "too_long")
        return {k: Counter() for k in keys}

    def pending_observations(self) -> dict[str, Any]:
        """Return and clear the increments since the last call, for the telemetry layer:
        ``{"reasons": {reason: n}, "known": {"annotation"|"gold_set"|"decided": n},
        "new_suggestions": n, "evicted": n, "shed": n, "too_long": n,
        "sink_failures": {sink: n}, "suggestions": n}`` (``shed``: events with a reason
        whose new question was shed by ``max_new_per_batch``; ``known.decided``: events
        whose question is a decided suggestion's (:meth:`decided`); ``too_long``: events with a
        reason whose question is longer than ``max_question_chars``, never suggested; the
        last is a gauge: suggestions held)."""
        pending, self._pending = self._pending, self._empty_pending()
        return {
            "reasons": dict(pending["reasons"]),
            "known": dict(pending["known"]),
            "new_suggestions": pending["new"]["suggestions"],
            "evicted": pending["evicted"]["suggestions"],
            "shed": pending["shed"]["events"],
            "too_long": pending["too_long"]["events"],
            "sink_failures": dict(pending["sink_failures"]),
            "suggestions": len(self.suggestions),
        }

    def records(self) -> list[SuggestionRecord]:
        """The current record of every suggestion held, by id."""
        return [record(self.suggestions[sid], self.config) for sid in sorted(self.suggestions)]

    def reason_counts(self) -> dict[str, int]:
        """``{reason: suggestions held that have had it}``, keys in the order :meth:`records`
        meets them (suggestions by id, each one's reasons in their order)."""
        counts: dict[str, int] = {}
        for sid in sorted(self.suggestions):
            for reason in self.suggestions[sid].reasons:
                counts[reason] = counts.get(reason, 0) + 1
        return counts

    def best_records(self, top: int) -> list[SuggestionRecord]:
        """The records of the first ``top`` (≥ 0) suggestions in the labelling queue's order:
        :func:`service.harvest.ranking.select` over every suggestion held (by priority,
        balanced over (topic, language) strata, reason quotas, near-duplicates left out), the
        order in which ``GET /v1/gold-candidates`` lists the undecided ones and ``goldwatch
        candidates export`` writes them (trial 21: the report's top 20, by priority alone,
        were 19 Hindi refusals of one topic where the labellers' queue alternated). Only
        ``top`` records are built (a report's summary needs 20 of ``max_suggestions``)."""
        config = self.config
        chosen = select(self.suggestions.values(), config, first=top) if top > 0 else []
        return [record(suggestion, config) for suggestion in chosen]

    def best_records_in_gaps(self, top: int, groups: int) -> tuple[list[GapSuggestions], int]:
        """The suggestions held per current coverage gap: for each language or topic whose
        gap over the last ``gap_window`` events (:meth:`CoverageTracker.gaps`) reaches
        ``min_gap`` — an uncalibrated ``novel`` topic is none, nor any topic while the
        topic assignment is uncalibrated, as for the reason — its
        ``gap``, how many held suggestions carry that language or topic (``n`` ≥ 1) and the
        records of its first ``top`` (≥ 0) in the labelling queue's order (as
        :meth:`best_records`: the order ``GET /v1/gold-candidates?language=…`` or
        ``?topic=…`` lists them). Returns the ``groups`` (≥ 0) largest (by ``n`` descending,
        then dimension and value) and how many gaps hold a suggestion in all. The report's
        ``top`` list ranks by priority across reasons, so a gap's suggestions can all fall
        below it (the ninth trial: German and Spanish gaps, the top 20 all English): these
        groups show each gap's own. Grouped by the suggestions' own labels, not by the
        ``gap_dimension`` they were flagged with: a suggestion's label is its first
        wording's, and a later wording in another language may have brought the gap. A
        document gap's suggestions are those whose pooled production rank-1 passage is in
        that document (:meth:`suggestion_document`)."""
        config = self.config
        current = {
            (dimension, label): gap
            for dimension, labels in self.coverage.gaps().items()
            for label, gap in labels.items()
            if gap >= config.min_gap
            and not (dimension == "topic" and label == "novel" and self._novel_uncalibrated)
            and not (dimension == "topic" and self._topic_uncalibrated)
        }
        if not current:
            return [], 0
        by_gap: dict[tuple[str, str], list[Suggestion]] = {}
        documents = any(dimension == DOCUMENT for dimension, _ in current)
        for suggestion in self.suggestions.values():
            for key in (("language", suggestion.language), ("topic", suggestion.topic)):
                if key in current:
                    by_gap.setdefault(key, []).append(suggestion)
            if documents:
                key = (DOCUMENT, self.suggestion_document(suggestion))
                if key in current:
                    by_gap.setdefault(key, []).append(suggestion)
        largest = sorted(by_gap.items(), key=lambda kv: (-len(kv[1]), kv[0]))[:groups]
        out: list[GapSuggestions] = []
        for (dimension, value), ranked in largest:
            chosen = select(ranked, config, first=top) if top > 0 else []
            best = [record(suggestion, config) for suggestion in chosen]
            out.append({"dimension": dimension, "value": value, "gap": current[dimension, value],
                        "n": len(ranked), "top": best})  # fmt: skip
        return out, len(by_gap)

    def suggestion_document(self, suggestion: Suggestion) -> str | None:
        """The document of a suggestion: that of the passage production ranked first for
        one of its questions (the first such in its pool, which keeps the best rank each
        retriever gave a passage), ``None`` when none is a corpus passage with a document."""
        for passage, ranks in suggestion.pool.items():
            if ranks.get(PRODUCTION) == 1:
                doc = self.documents.get(passage)
                if doc is not None:
                    return doc
        return None

    def document_gaps(self, top: int) -> dict[str, Any] | None:
        """The under-covered documents over all live traffic seen
        (:meth:`CoverageTracker.document_gaps`, gap ≥ ``min_gap``), for the reports:
        ``{"gaps": [{"document", "live", "live_total", "gold", "gold_total", "gap"}, …],
        "n_gaps": n, "gold_documents": k, "documents": d}`` — the ``top`` (≥ 0) largest
        gaps of ``n``, ``live`` of ``live_total`` events given a document (not those judged
        out of scope: :func:`~service.harvest.signals.production_documents`) had it first,
        ``gold`` of the gold set's ``gold_total`` row–document pairs ask about it; ``k``
        documents the gold set asks about, ``d`` the corpus's (a group of language variants
        counting once), and, when some were grouped, ``"grouped": {"documents": m,
        "groups": g}``: ``m`` corpus documents in ``g`` groups (each group's label says its
        variants); when the gold set asks about fewer documents than the corpus holds,
        ``"uncovered"``: the share of the questions on documents no gold row asks about
        (:meth:`CoverageTracker.uncovered`: all-time, over ``gap_window`` and before it,
        with 95 % Wilson intervals, and whether the rise's lower bound reaches
        ``min_uncovered_rise``); ``"all_tied"``, when positive: the retrievals seen that
        ranked nothing (:func:`~service.harvest.signals.all_tied`) and so named no
        document. ``None`` when the corpus names no document (no document
        dimension)."""
        if not self.documents:
            return None
        gaps = self.coverage.document_gaps(self.config.min_gap)
        gold = self.coverage.gold.get(DOCUMENT) or {}
        return {
            "gaps": [
                {
                    "document": g.label,
                    "live": g.live,
                    "live_total": g.live_total,
                    "gold": g.gold,
                    "gold_total": g.gold_total,
                    "gap": g.gap,
                }
                for g in gaps[: max(0, top)]
            ],
            "n_gaps": len(gaps),
            "gold_documents": len(gold),
            "documents": self._n_documents,
        } | ({"all_tied": tied} if (tied := self.coverage.documents_all_tied) else {}) | (
            {"grouped": {"documents": self._n_grouped, "groups": self._n_groups}}
            if self._n_grouped else {}) | (
            {"uncovered": uncovered}
            if len(gold) < self._n_documents and (uncovered := self.coverage.uncovered())
            else {})  # fmt: skip

    def state_snapshot(self) -> Any:
        """Trackers, recent event ids, the ids of the suggestions held (in order) and, in
        full, those whose record in the repository sink is stale (all of them without one),
        and ``sweep``: whether the checkpoint writing it should sweep the repository's
        records of suggestions no longer held (:func:`service.harvest.store.candidate_sweep`;
        true after a start or restore and when one was evicted since the last committed
        sweep), and ``decided``: ``[[id, normalised question], ...]`` of the decided
        suggestions remembered (:meth:`decided`, oldest first, at most ``max_suggestions``),
        or instead ``decided_stored: true`` when the repository sink holds that list
        (:meth:`_store_decided`: rewritten only when it changed). A read-only dictionary
        with its JSON text (:class:`~service.state.EncodedObject`; its suggestions encoded
        as :func:`json.dumps` writes them, by :func:`~service.harvest.store.records_json`,
        and its recent events, lists of strings, by msgspec: neither decoded to be checked).

        First applies the decisions queued, then writes to the repository sink the stale
        records the previous snapshot does not rely on (module docstring), so that this one
        can rely on them: encoded straight from the suggestions when the repository takes
        JSON texts (:meth:`_publish_ready`; ~2,000 records a checkpoint on
        ``benchmarks.bench_production``'s stream)."""
        if self._decisions_in:
            self._apply_decisions()
        recent = list(islice(reversed(self._recent.items()), _SNAPSHOT_RECENT))[::-1]
        # each distinct reason set sorted once (the recent events share a few of them)
        sorted_sets: dict[tuple[str, ...], list[str]] = {}

        def listed(counted: tuple[str, ...]) -> list[str]:
            found = sorted_sets.get(counted)
            if found is None:
                found = sorted_sets[counted] = sorted(counted)
            return found

        repository, stale = self._repository, self._stale
        if repository is None:
            full = list(self.suggestions.values())
            self._held, self._committed, self._taken = set(), set(), None
        else:
            ready = [sid for sid in self.suggestions if sid in stale and sid not in self._held]
            if ready:
                try:
                    refused = self._publish_ready(repository, ready)
                    stale.difference_update(ready)
                    if refused:  # decided in the repository: no longer held
                        held = self.suggestions
                        rows = {sid: {"normalised": held[sid].normalised} for sid in ready}
                        self._forget_refused(refused, rows)
                except Exception as exc:  # the snapshot then carries them in full
                    name = type(repository).__name__
                    log.warning("harvest sink %s failed: %s", name, type(exc).__name__)
                    self._pending["sink_failures"][name] += 1
            full = [s for sid, s in self.suggestions.items() if sid in stale]
            # until checkpointed() confirms this snapshot, the last committed one may still
            # be the one a restart reads: the records either relies on are held back
            self._taken = self.suggestions.keys() - stale
            self._held = self._committed | self._taken
        # the repository's records need sweeping only when a suggestion left since the last
        # committed sweep (evicted), or after a start or restore (a crashed run's leftovers)
        sweep = self._swept_at is None or self._evictions != self._swept_at
        self._sweep_taken = self._evictions if sweep else None
        decided = self._store_decided()
        carried = [s.to_json() for s in full]
        recent_rows = [[event, sid, listed(counted)] for event, (sid, counted) in recent]
        members = {
            "version": _VERSION,
            "ids": list(self.suggestions),
            "suggestions": carried,
            "coverage": self.coverage.state(),
            "scores": self.scores.state(),
            "recent": recent_rows,
            "dirty": sorted(self._dirty),
            "sweep": sweep,
            **({"decided": decided} if decided is not None else {"decided_stored": True}),
        }
        # the suggestions (most of the snapshot's bytes) as json.dumps writes them, encoded
        # as the records are (the same fields, less two), not decoded again to be checked
        texts = {"suggestions": records_json(carried)}
        # the recent events (lists of strings only: msgspec writes each string so that it
        # reads back equal, or raises on a lone surrogate, then encoded_object's checked
        # path writes them), not decoded again to be checked either
        try:
            texts["recent"] = _ENCODE(recent_rows).decode("utf-8")
        except (TypeError, ValueError):
            pass
        return encoded_object(members, texts)

    def _publish_ready(self, repository: CandidateRepository,
                       ids: Sequence[str]) -> Collection[str]:  # fmt: skip
        """Publish the current records of suggestions ``ids`` (held) to ``repository``;
        return the ids it refused. Encoded straight from the suggestions
        (:func:`~service.harvest.store.record_text`: no record's containers built) when the
        repository takes JSON texts (``publish_json``: it encodes at once anyway)."""
        suggestions, config = self.suggestions, self.config
        publish_json = getattr(repository, "publish_json", None)
        if callable(publish_json):
            refused = publish_json({sid: record_text(suggestions[sid], config) for sid in ids})
        else:
            refused = repository.publish([record(suggestions[sid], config) for sid in ids])
        return refused or ()

    def _store_decided(self) -> list[list[str]] | None:
        """The remembered decisions as the snapshot carries them (``[[id, normalised], ...]``),
        or ``None`` when the repository sink holds them instead: written there
        (``remember_decided``) only when they changed since it last took them, before the
        checkpoint this snapshot goes into, so a checkpoint does not rewrite an unchanged
        list (up to ``max_suggestions`` of them: 0.32 MB for 5,000, docs/scaling.md). A
        restore from any snapshot relying on it reads the list stored then or a newer one
        (written for a later snapshot whose checkpoint failed, or before a kill): harmless,
        a decision is durable. A failed write is logged and counted; the snapshot then
        carries the list."""
        repository = self._repository
        remember = getattr(repository, "remember_decided", None)
        if self._decided_stored == self._decided_changes and callable(remember):
            return None
        rows = [[sid, text] for sid, text in self._decided.items()]
        if callable(remember):
            try:
                remember(rows)
            except Exception as exc:  # the snapshot carries them itself
                name = type(repository).__name__
                log.warning("harvest sink %s failed: %s", name, type(exc).__name__)
                self._pending["sink_failures"][name] += 1
            else:
                self._decided_stored = self._decided_changes
                return None
        return rows

    def checkpointed(self) -> None:
        """The last :meth:`state_snapshot` was committed (the engine calls this after its
        checkpoint succeeded): only the records it relies on are held back from now on.
        Until then, after a failed checkpoint too, the records of the last committed
        snapshot are held back as well, so a flush never overwrites a record the snapshot
        a restart would read relies on. A sweep the snapshot asked for is done; one asked
        for by a snapshot whose checkpoint failed is asked for again by the next."""
        if self._taken is not None:
            self._held = self._committed = self._taken
            self._taken = None
        if self._sweep_taken is not None:
            self._swept_at, self._sweep_taken = self._sweep_taken, None

    def restore(self, state: Any) -> None:
        """Reset the stage to a :meth:`state_snapshot` (version 1 or 2); ``None`` or another
        version resets it to empty, as constructed. Suggestions not carried in full are read
        from the repository sink; one missing there is logged and left out; one decided there
        (a decision kept after the snapshot was taken) is not held again (:meth:`decided`).

        The engine calls this at start and again on the same stage to reload the last
        checkpoint after a batch failed partway, so it is a full reset: afterwards the stage
        holds exactly what a stage constructed alike and restored from ``state`` holds, and
        what the failed batch did is gone (its new suggestions, its counts, which its
        redelivery then adds once). Every piece of state is replaced: the suggestions, the
        near-duplicate index (rebuilt with the gold questions' entries), the exact-text and
        known-text look-ups, the coverage counts (the gold counts, a reference the gold-set
        refresh sets, stay), the score window, the recent and recent shed events, the
        recent events counted as known, the unpublished (``_dirty``) and repository-stale
        sets, the held-back records (``_held``/``_committed``/``_taken``), the eviction order
        and counts, the sweep marks (the next snapshot sweeps), the flush time, the
        uncalibrated-novel flag and the pending telemetry increments except
        ``sink_failures`` (publication attempts, which a redelivery does not repeat).
        Kept: the caches of pure functions (normalised texts, reason weights), the
        decisions remembered (a decision is durable in the repository before the stage is
        told of it, so a reload never forgets one) and those queued.

        Every read that can fail (the repository's records and decisions; the snapshot's
        shape) runs before anything is replaced: when one raises, the stage is unchanged.

        Raises:
            service.state.StateError: the repository cannot be read.
            KeyError, TypeError, ValueError: the snapshot has the wrong shape.
        """
        config = self.config
        valid = isinstance(state, Mapping) and state.get("version") in _READ_VERSIONS
        snapshot: Mapping[str, Any] = state if valid else {}
        full = {str(row["id"]): row for row in snapshot.get("suggestions", [])}
        ids = [str(sid) for sid in snapshot.get("ids", full)]
        stored = self._stored_records([sid for sid in ids if sid not in full])
        rows: list[Suggestion] = []
        for sid in ids:
            if sid in full:
                rows.append(Suggestion.from_json(full[sid]))
            elif sid in stored:
                rows.append(Suggestion.from_record(stored[sid]))
        if len(rows) < len(ids):
            log.warning("harvest restore: %d suggestions had no published record",
                        len(ids) - len(rows))  # fmt: skip
        decided_there = self._decided_in_repository([row.id for row in rows])
        decided: OrderedDict[str, str] = OrderedDict(
            (str(sid), str(text)) for sid, text in self._snapshot_decided(snapshot))  # fmt: skip
        for sid, text in self._decided.items():  # decided since the snapshot: still decided
            decided.pop(sid, None)
            decided[sid] = text
        for row in rows:
            if row.id in decided_there:
                decided.pop(row.id, None)
                decided[row.id] = row.normalised
        rows = [row for row in rows if row.id not in decided]  # before the bound: a decided
        while len(decided) > config.max_suggestions:  # suggestion is never held again
            decided.popitem(last=False)
        coverage = CoverageTracker(self.coverage.gold, config.min_live_events,
                                   config.gap_window, config.min_gap_ratio,
                                   config.max_documents,
                                   config.min_uncovered_rise)  # fmt: skip
        # unbounded until relabelled: per-language counts are bounded as their groups
        coverage.load(snapshot.get("coverage", {}), bound=False)
        if coverage.documents_reset:  # counted when out-of-scope questions were not left out
            log.warning("harvest restore: the document counts were saved before questions "
                        "judged out of scope were left out of them: they start afresh")  # fmt: skip
        # a document the corpus no longer has (it changed between runs) can never be covered:
        # its all-time count would keep it listed as under-covered for good; one saved under
        # its own label before it joined a group of language variants counts for the group
        # (and a group the grouping no longer forms is dropped: never mixed with its parts)
        moved, dropped = coverage.relabel_documents(set(self.documents.values()), self.renamed)
        if moved or dropped:
            log.info("harvest restore: %d document counts moved to their language-variant "
                     "group, %d of documents the corpus (as grouped now) lacks dropped",
                     moved, dropped)  # fmt: skip
        scores = ScoreWindow(config.score_window, config.min_live_events)
        scores.load(snapshot.get("scores", {}))
        # [event, suggestion, reasons]; an older snapshot's [event, suggestion] did not keep
        # them: every reason counts as counted, so a redelivered event adds none (as then)
        every = _reason_set(REASONS)
        recent = OrderedDict(
            (str(row[0]), (str(row[1]), _reason_set(map(str, row[2])) if len(row) > 2 else every))
            for row in snapshot.get("recent", [])
        )  # fmt: skip
        # the held and the decided questions' probes in one call (one embedding call)
        texts = [s.normalised for s in rows] + list(decided.values())
        probes = self.index.probes(texts) if texts else []
        keys = [s.id for s in rows] + [_DECIDED + sid for sid in decided]
        index = self._new_index([*self._gold_probes, *zip(keys, probes, strict=True)])
        suggestions = {s.id: s for s in rows}
        # nothing below can fail: the reset itself
        self.suggestions, self.index, self._decided = suggestions, index, decided
        self._decided_changes, self._decided_stored = 0, None  # the next snapshot stores them
        self._exact = {s.normalised: s.id for s in rows}
        self._exact_of = {s.id: (s.normalised,) for s in rows}
        self._exact_check = set()
        self._known = set()
        self.coverage, self.scores, self._recent = coverage, scores, recent
        self._shed_reasons = OrderedDict()
        self._early = {}
        self._known_events = OrderedDict()
        self._dirty = {sid for sid in snapshot.get("dirty", []) if sid in suggestions}
        # a record kept before the shown wording was chosen, rebuilt with its clean wording
        # (Suggestion.from_json): published again, so the list and an accept read that one
        self._dirty.update(
            s.id for s in rows
            if s.question != (full[s.id] if s.id in full else stored[s.id]).get("question")
        )  # fmt: skip
        self._stale = {sid for sid in full if sid in suggestions}
        self._held = {sid for sid in stored if sid in suggestions}
        self._committed, self._taken = set(self._held), None
        self._order, self._ranked, self._unranked = {}, [], []
        self._rekey = set(suggestions)
        self._evictions = 0
        self._swept_at = self._sweep_taken = None  # the crashed run may have left records
        self._last_flush = float("-inf")
        self._novel_uncalibrated = self._topic_uncalibrated = False
        failures = self._pending["sink_failures"]
        self._pending = self._empty_pending()
        self._pending["sink_failures"] = failures
        if self._decisions_in:
            self._apply_decisions()

    def _snapshot_decided(self, snapshot: Mapping[str, Any]) -> list[list[str]]:
        """The remembered decisions of ``snapshot``: its ``decided`` list, or the repository
        sink's (``remembered_decided``) when it says ``decided_stored`` (:meth:`_store_decided`).

        Raises:
            service.state.StateError: the repository cannot be read.
        """
        if not snapshot.get("decided_stored"):
            return list(snapshot.get("decided", []))
        remembered = getattr(self._repository, "remembered_decided", None)
        if not callable(remembered):
            log.warning("harvest restore: the snapshot's decided questions are in a repository "
                        "sink this stage has not; not remembered")  # fmt: skip
            return []
        return list(remembered())

    def _decided_in_repository(self, ids: Sequence[str]) -> set[str]:
        """The ``ids`` the repository sink holds a decision for (not a hold: an accept under
        way is not decided); empty without a repository sink."""
        repository = self._repository
        if not ids or repository is None:
            return set()
        decided_of = getattr(repository, "decided_of", None)
        if callable(decided_of):
            return set(decided_of(ids))
        return {sid for sid in ids if repository.decision(sid) is not None}

    def _stored_records(self, ids: Sequence[str]) -> dict[str, Mapping[str, Any]]:
        """The repository sink's records of ``ids`` that it has."""
        repository = self._repository
        if not ids or repository is None:
            return {}
        get_many = getattr(repository, "get_many", None)
        if callable(get_many):
            return dict(get_many(ids))
        found = ((sid, repository.get(sid)) for sid in ids)
        return {sid: row for sid, row in found if row is not None}
