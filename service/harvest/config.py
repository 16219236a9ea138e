"""Settings of harvesting (a leaf module: pydantic only), and the reasons a question is picked.

Reasons, in report order (:data:`REASONS`), with what triggers each on one event:

=========================  ======================================================================
``coverage_gap``           its topic, language or document (that of the passage production
                           ranked first, when the corpus names documents, and none when the
                           scope stage judged it out of scope; the gold set's:
                           its rows' relevant passages') is under-represented in the gold
                           set over the last ``gap_window`` live events (once
                           ``min_live_events`` are in it): live share ≥ ``min_gap_ratio``
                           (2) × gold share AND the live share's 95 % lower bound
                           (Wilson) − gold share ≥ ``min_gap``
                           (2 points); that bound difference is the ``gap`` (in [0, 1]) a
                           suggestion's priority uses. The drift view's rule (status page
                           "Under-covered by the gold set", ``coverage_gap_ratio``: live ≥ 2
                           × gold, 95 % lower bound of the difference ≥ 2 points, all
                           traffic) with the gold shares exact — the gold set is what is
                           being completed, not a sample — and recent traffic. An
                           uncalibrated ``novel`` topic (``novelty_calibrated`` False)
                           counts for nothing, nor does any topic while the topic model's
                           held-out kappa is below ``analytics.topics.min_kappa``
                           or novelty is uncalibrated (the topics are then nearest
                           gold topics) (``topic_calibrated`` False): then only languages and
                           documents are gaps
``novel``                  the topic stage found it far from every gold topic (``"novel"``)
``refused``                the answer was a refusal (``annotations["refused"]``)
``answered_out_of_scope``  answered although out of scope (``annotations["under_refusal"]``)
``low_confidence``         production retrieved nothing, or its best score is strictly below
                           the ``low_confidence_quantile``-quantile of the recent scores (a
                           score tied with it is not low: constant scores flag nothing)
``shadow_disagreement``    a shadow candidate's RBO with production is below ``max_rbo``
``negative_feedback``      ``feedback.rating`` < ``negative_rating``
``cited_not_retrieved``    the answer cites a passage absent from the retrieved list
``acl_violation``          the answer cited a passage the asker's role may not read (the quality
                           stage's ``acl_leaks``; retrieval-only violations: GET /v1/quality)
=========================  ======================================================================
"""

from __future__ import annotations

from types import MappingProxyType
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_serializer,
    field_validator,
    model_validator,
)

from service.document_groups import BUILT_IN, compile_group_pattern

REASONS: tuple[str, ...] = (
    "coverage_gap",
    "novel",
    "refused",
    "answered_out_of_scope",
    "low_confidence",
    "shadow_disagreement",
    "negative_feedback",
    "cited_not_retrieved",
    "acl_violation",
)

#: Default weight of each reason in the priority (a failure the user saw weighs most).
DEFAULT_WEIGHTS: MappingProxyType[str, float] = MappingProxyType({
    "coverage_gap": 1.0,
    "novel": 1.5,
    "refused": 2.0,
    "answered_out_of_scope": 2.5,
    "low_confidence": 1.0,
    "shadow_disagreement": 1.0,
    "negative_feedback": 2.0,
    "cited_not_retrieved": 1.5,
    "acl_violation": 3.0,
})  # fmt: skip


def _check_reason_keys(value: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(value) - set(REASONS))
    if unknown:
        raise ValueError(f"unknown reasons {unknown}; known: {list(REASONS)}")
    return value


class HarvestConfig(BaseModel):
    """Harvesting of real production questions as gold candidates (frozen).

    Attributes:
        enabled: run the harvest stage.
        weights: reason → weight ≥ 0 in the priority; missing reasons use
            :data:`DEFAULT_WEIGHTS`; weight 0 turns a reason off.
        quotas: reason → largest share in (0, 1] of a selection whose *primary* reason (the
            heaviest) it may be; missing reasons are uncapped.
        min_gap: smallest coverage gap, in [0, 1], that gives a question harvest's ``coverage_gap``
            reason: the 95 % Wilson lower bound of its topic's, language's or document's share of
            the last ``gap_window`` live events minus its gold share (fractions; only a label whose
            live share is ≥ ``min_gap_ratio`` × its gold share has a gap). The default 0.02 is the
            drift view's floor, applied here to a lower bound too: a language the gold set lacks at
            6.2 % of the last 1,000 events (bound 4.9 %) is a gap, as a new user's trial expected
            (0.05, the former default, flagged nothing on that log); a label with a handful of
            events is not (10 of 1,000: bound 0.5 %). The drift view's coverage gaps (status page
            "Under-covered by the gold set") are the same rule over all traffic, against a fixed 2
            points. Questions judged out of scope count in the topic and language gaps (a
            question's language and topic are its own, and gold rows there, unanswerable ones
            like it among them, measure the scope detector and the refusals on that traffic)
            but in no document share (its document, production's first passage, does not
            cover it: ``min_uncovered_rise``); the reports say so beside the gaps.
        min_gap_ratio: live share ÷ gold share from which a topic or language can be a
            coverage gap (≥ 1; 2, the drift view's): a majority label a few points above its
            gold share (86 % live, 76 % gold) is not under-covered; a label the gold set
            lacks always can be. A label under twice its gold share is no gap however large
            the difference, as in the drift view: the trial's Hindi at 1.87 × its gold share
            stays unflagged with ``min_gap`` 0.02.
        gap_window: the most recent live events whose topics, languages and documents the coverage
            gaps compare with the gold set's (≥ ``min_live_events``): a change of traffic shows
            within this many events. The default 1,000 is about a day of a small deployment's
            traffic (the trials' logs: ~3,000 events over three days), so a language that rises on
            the third day is a gap on it; 5,000 would still mix in the first two (hi 5 % → 25 % then
            reads 15 %, under 2 × 12 %). Larger windows react later but bound shares tighter: the 95
            % bound is at most 3.1 points under the live share at 1,000, 1.4 at 5,000. Memory: a
            reference per event and dimension (~24 KB at 1,000); the state snapshot holds each
            event's labels as indexes into its distinct labels (~7 KB of JSON at 1,000 with a few
            labels, 13 KB with 300 topics; ~32 KB at 5,000; the document labels, when the corpus
            names documents, add ~3 KB at 1,000 with 6 documents, ~20 KB with 300 documents, ~40 KB
            at 5,000, and the all-time counts of the documents seen), written at every checkpoint:
            at most 100,000. Left unset with ``min_live_events`` above 1,000, it is
            ``min_live_events``.
        document_groups: how the ``document`` dimension groups a document's language variants
            (module ``service.document_groups``): ``languages`` (the default) groups the labels that
            differ only by an ISO 639-1 code (``Super_Bowl_50.de.html``, ``guide-pt-BR.pdf``,
            ``docs/de/guide.html``; optionally with script and region), when the corpus holds
            at least two such variants of a base and the codes are languages by the whole
            corpus's evidence: a code recurs over at least two such bases, and one that is
            also a path word (``sm``/``lg`` sizes, ``ne``/``se``/``sw`` regions, ``km``/``mi``
            units, ``ro``/``rw``, ``it``, ``hr``, ``uk``…) stands beside such a code in at
            least two (so a corpus of one translated document groups nothing; a regular
            expression does), as one document named
            ``Super_Bowl_50.html (3 variants: de, en, es)``; ``off`` groups nothing; anything
            else is a Python regular expression searched in each (scrubbed) label, whose first
            group is the key labels are grouped by and the group's name (a second group, when
            there is one, names the variant). Checked at start: a pattern that does not compile
            or has no group is a configuration error naming this field. Trial 23 (30 articles
            × en/es/de; from hour 60, 55 % of the questions on 22 articles no gold row covers):
            one document per language, the reason went to 48 questions, 41 of them on covered
            articles (a Spanish or German copy without its own gold row), and the list named
            only a covered article's Spanish copy; grouped, to 157 questions on 5 uncovered
            articles, none on a covered one, the first 5 hours after the change.
        max_documents: documents the ``document`` dimension's all-time counts (the reports'
            list, rewritten into the state at each checkpoint) hold at most (≥ 1): past it the
            least counted are forgotten down to 90 % of it and their events still count in
            every document's live share. 10,000 (~0.4 MB of state at 40 bytes a label) is more
            documents than any set the project was tried on.
        min_uncovered_rise: floor, in [0, 1], of the rise of the share of questions on
            documents no gold row asks about (a question's document: its first production
            passage's): the last ``gap_window`` such questions against all those before them,
            the 95 % lower bound of the difference (Newcombe 1998, method 10). From it the
            reports say "documents the gold set does not cover: … a coverage gap" and each
            question on such a document takes that bound as its ``document`` coverage gap (so
            ``coverage_gap`` from ``min_gap``). ``null``: the share is reported, never a gap.
            The share is of the questions not judged out of scope (a stable, calibrated
            verdict of the scope stage; an unstable or uncalibrated one counts as in scope),
            numerator and denominator: an off-topic question is about no document, whichever
            one production ranked first, so it takes no ``document`` gap either (it keeps its
            own reasons). Against earlier traffic, not the gold set (whose share is 0 by
            construction) nor a fixed floor: in trial 24, production's first passage was on
            an uncovered article for 21–25 % of those questions before any change (35–39 %
            counting the off-topic ones; multi-hop questions land anywhere in 326 articles, 63
            asked about), and 55 % of the last 1,000 after the surge of questions on ~150
            uncovered articles (each under 1 %, none with a gap of its own): the rise's bound
            was 29 points.
        min_live_events: events counted before coverage gaps (events in ``gap_window``) and
            score quantiles are used.
        low_confidence_quantile: best production scores strictly below this quantile of
            the last ``score_window`` scores are low-confidence (a tie with the quantile is
            not), in [0, 0.5]; 0: none.
        score_window: recent best scores kept for that quantile.
        max_rbo: shadow results with RBO below this are disagreements, in [0, 1].
        negative_rating: feedback ratings below this are negative (-1/+1 scale: 0).
        similarity: character-trigram Jaccard from which two questions are near-duplicates,
            in (0, 1]. Near-duplicates merge only if they also ask the same question: the
            same numbers, negation, content words, no word for its opposite and question word
            (:mod:`service.text.wording`; "best picture in 1976" is not "best actor in
            1975", "a refund before the deadline" not "... after the deadline"; on NQ-open
            it undid 100 of the 110 merges, 9 of 10 kept share an answer:
            ``benchmarks.bench_merge_rule``).
        embedding_similarity: cosine of two questions' vectors (the ``analytics.embeddings``
            layer) from which they are near-duplicates too — the rule is Jaccard ≥
            ``similarity`` OR cosine ≥ this, in (0, 1]; ``None`` (default): trigrams only.
            0.8 finds ~60 % more paraphrases at about the same precision but costs the
            default replay path ~100 µs per event more (``benchmarks.bench_analytics``, same
            run: harvest 137 vs 36 µs/event), so it is opt-in until that cost is cut (issue
            22); figures from ``python -m benchmarks.bench_neardup_embeddings`` (pools of 2,000 test
            questions, precision / recall of same-intent merges): BANKING77 .890 / .174
            with trigrams alone, .890 / .282 with the OR rule; CLINC150 .973 / .202 and
            .965 / .321 (0.85: .899 / .205 and .977 / .256; 0.75: .896 / .396 and
            .957 / .400). Costs one embedding call and one matrix product per batch of new
            questions (``max_new_per_batch`` bounds both): ~90 µs more per new question
            with 1,000 suggestions held, ~210 µs with 5,000 (CPU, one core, same bench);
            on ``python -m benchmarks.bench_harvest --stream mixed`` (high novelty) the
            stage costs 19.9 µs/event against 12.3 with trigrams only, same run.
        num_perm: MinHash permutations of the LSH index.
        max_variants: scrubbed wordings kept per suggestion, in the order first asked (told
            apart with their personal-data placeholders); when all kept hold a placeholder,
            one more without any is kept past the bound, so that the suggestion can show it.
        pool_k: passages pooled per retriever (top k of production and of each candidate).
        max_pool: most passages kept in one suggestion's pool.
        max_suggestions: suggestions held; beyond, the lowest-priority ones are evicted
            (past 1.1 × this, back to it), and the next checkpoint deletes their records
            from the state (decided ones stay): it bounds the state's records too. A
            decided suggestion is not held (no place under this bound); the last this many
            decisions are remembered so their questions are not suggested again.
        recent_events: most recent picked events whose counted reasons are remembered, and
            as many recent shed ones, and as many counted as known (gold set, decided) (so a
            late shadow verdict or a redelivery counts each reason, and each known event,
            once per event; three insertion-ordered maps keyed by event id, oldest out). A
            bound on memory (``tracemalloc``): about 0.42 KB per picked event (its id, the
            map entry, its (suggestion id, reasons) pair; each set of reasons one tuple
            shared by the events that have it), 0.15 KB per shed one and ~0.18 KB per known
            one (a 36-character id and the map entry), so the default 50,000 is at most
            ~38 MB for the three; an event older than the last
            ``recent_events`` picked ones may count its reasons again when redelivered.
        max_new_per_batch: load shedding — at most this many distinct *new* normalised
            questions per pipeline batch go through near-duplicate matching and may start
            suggestions; the others with a reason are shed (counted, not kept). Questions
            whose normalised text is already a suggestion or a known question always merge
            (an exact lookup). The choice is deterministic and stratified over (topic,
            language) (:mod:`service.harvest.shedding`). Units: distinct texts per batch
            (batches of up to ``pipeline.max_batch_size`` events, 500 by default: 48 is
            about 10 % of a full batch); ``None``: no bound. Lower bounds the CPU cost of a
            flood of new questions (~120 µs each; ~210–330 µs with
            ``embedding_similarity``) tighter but considers fewer of them per
            batch: a shed question is considered again when it recurs. In ``serve`` the
            number shed depends on how fast the events arrived (a batch holds what came
            while the last one ran: a file read faster than the pipeline fills them; one
            file gave 588 and 701 on two runs); a replay of the same file sheds none unless
            this is set explicitly.
        max_question_chars: questions longer than this (characters, as asked) are never
            suggested, only counted (the stage's ``pending_observations()["too_long"]``): a
            pasted document or log is not a gold question, and a truncated one would not be
            the question that was asked. 2,000 characters is about 300 words; a suggestion
            keeps its question and up to ``max_variants`` wordings, so this also bounds its
            size.
        flush_interval_s: changed suggestions go to the sinks at most this often (seconds;
            0: after every batch).
        generated_channels: events from these channels are model-generated questions
            (``source: "generated"``), everything else is ``"real"``.
        topic: Kafka topic of the suggestions (compacted, one record per question and
            replica: merge them with ``candidates export --from-records``; used by the
            Kafka sink only).
        gold_lock_timeout_s: longest time (seconds) an accept may wait in all, from its
            arrival: queued behind other accepts and then for the gold-set file's lock held
            by another process share this one deadline; past it the accept answers 503
            (retry later), so a stuck lock holder never ties up the server's worker
            threads.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    weights: dict[str, float] = Field(default_factory=dict)
    quotas: dict[str, float] = Field(default_factory=lambda: {"coverage_gap": 0.4})
    min_gap: float = Field(default=0.02, ge=0, le=1)
    min_gap_ratio: float = Field(default=2.0, ge=1, le=1_000)
    gap_window: int = Field(default=1_000, ge=1, le=100_000)
    min_live_events: int = Field(default=200, ge=1)
    document_groups: str = BUILT_IN
    max_documents: int = Field(default=10_000, ge=1, le=10_000_000)
    min_uncovered_rise: float | None = Field(default=0.1, ge=0, le=1)
    low_confidence_quantile: float = Field(default=0.1, ge=0, le=0.5)
    score_window: int = Field(default=2_000, ge=10, le=1_000_000)
    max_rbo: float = Field(default=0.5, ge=0, le=1)
    negative_rating: float = 0.0
    similarity: float = Field(default=0.6, gt=0, le=1)
    embedding_similarity: float | None = Field(default=None, gt=0, le=1)
    num_perm: int = Field(default=64, ge=16, le=512)
    max_variants: int = Field(default=3, ge=1, le=20)
    pool_k: int = Field(default=10, ge=1, le=100)
    max_pool: int = Field(default=40, ge=1, le=1_000)
    max_suggestions: int = Field(default=5_000, ge=10, le=1_000_000)
    recent_events: int = Field(default=50_000, ge=1, le=10_000_000)
    max_new_per_batch: int | None = Field(default=48, ge=1, le=1_000_000)
    max_question_chars: int = Field(default=2_000, ge=16, le=1_000_000)
    flush_interval_s: float = Field(default=5.0, ge=0, le=3_600)
    generated_channels: frozenset[str] = frozenset({"generated", "synthetic"})
    topic: str = Field(default="goldwatch.gold-candidates", min_length=1, max_length=249)
    gold_lock_timeout_s: float = Field(default=5.0, gt=0, le=300)

    @field_serializer("generated_channels")
    def _sorted_channels(self, channels: frozenset[str]) -> list[str]:
        # a set's order follows string hashing, which differs per process: sorted, so the
        # effective configuration (config check) prints the same on every run
        return sorted(channels)

    @field_validator("weights")
    @classmethod
    def _weights(cls, value: dict[str, float]) -> dict[str, float]:
        if any(w < 0 for w in value.values()):
            raise ValueError("weights must be >= 0")
        return _check_reason_keys(value)

    @field_validator("document_groups")
    @classmethod
    def _document_groups(cls, value: str) -> str:
        compile_group_pattern(value)  # raises ValueError: pydantic names the field
        return value

    @field_validator("quotas")
    @classmethod
    def _quotas(cls, value: dict[str, float]) -> dict[str, float]:
        if any(not 0 < q <= 1 for q in value.values()):
            raise ValueError("quotas must be shares in (0, 1]")
        return _check_reason_keys(value)

    @model_validator(mode="before")
    @classmethod
    def _default_window_holds_min_events(cls, data: Any) -> Any:
        """``gap_window`` left to its default grows to ``min_live_events`` (a configuration
        written before ``gap_window`` existed, with ``min_live_events`` over 1,000, still
        starts: a review)."""
        if isinstance(data, dict) and "gap_window" not in data:
            floor = data.get("min_live_events")
            if isinstance(floor, int) and not isinstance(floor, bool) and floor > 1_000:
                return {**data, "gap_window": floor}
        return data

    @model_validator(mode="after")
    def _window_holds_min_events(self) -> HarvestConfig:
        if self.gap_window < self.min_live_events:
            raise ValueError(
                f"gap_window ({self.gap_window}) must be >= min_live_events "
                f"({self.min_live_events}): a smaller window never has a coverage gap"
            )
        return self

    @model_validator(mode="after")
    def _some_reason_on(self) -> HarvestConfig:
        if self.enabled and not any(self.weight(r) > 0 for r in REASONS):
            raise ValueError("every reason has weight 0: nothing can be harvested")
        return self

    def weight(self, reason: str) -> float:
        """The weight of ``reason`` (configured, else the default; 0 = off)."""
        return float(self.weights.get(reason, DEFAULT_WEIGHTS[reason]))
