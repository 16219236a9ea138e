"""Public response models of the HTTP API (they define the OpenAPI schema).

Every JSON route declares one, so ``/openapi.json`` documents each answer's fields. The
bodies the domain builds (:mod:`service.runtime.reports`, :mod:`service.harvest`) are
TypedDicts there and served as they are; the shapes below document what the API adds or
selects. FastAPI validates each answer against its model and writes the model's keys in
the model's order: the order here is the order the reports are built in, so the bytes
clients read are unchanged. Parts of a report whose keys vary with the configuration
(comparisons per detector kind, per-retriever tables) stay open objects, described in
prose; their TypedDicts keep keys they do not declare (``extra="allow"``).
"""

from __future__ import annotations

from typing import Any, NotRequired, Required

from pydantic import BaseModel, ConfigDict, Field, with_config
from typing_extensions import TypedDict

from service.harvest.labelling import CandidateItem
from service.runtime.process import GoldRunStatus
from service.runtime.reports import OutOfScopeReport, RefusalCounts
from service.shadow.not_compared import NotCompared
from service.shadow.stage import CandidateSummary, Disagreement

#: Keep keys a TypedDict below does not declare (after the declared ones), never drop them.
_OPEN = ConfigDict(extra="allow")


class Health(BaseModel):
    """``GET /healthz``: the process is alive."""

    status: str = "ok"


class Readiness(BaseModel):
    """``GET /readyz``: ready to consume (200) or not (503), with the reasons."""

    ready: bool
    reasons: list[str] = Field(default_factory=list)


class Rejected(BaseModel):
    """One posted event that was dead-lettered: its position in the request and why.

    ``detail`` names the field and the problem, never the submitted value.
    """

    index: int = Field(description="0-based position in the posted batch")
    reason: str
    detail: str


class IngestResult(BaseModel):
    """``POST /v1/events``: what happened to the posted events."""

    received: int
    accepted: int = Field(description="processed by the pipeline")
    duplicates: int = Field(description="already seen (same event_id)")
    dead_lettered: list[Rejected]
    note: str | None = Field(
        default=None,
        description="only when the request had duplicates and carried feedback: a "
        "duplicate is dropped whole, so its feedback is not added to the event already "
        "processed (absent otherwise)",
    )


class Totals(BaseModel):
    """All-time counts, persisted in the state store (they survive restarts)."""

    consumed: int
    processed: int
    duplicates: int
    redelivered: int
    dead_lettered: dict[str, int]
    #: Events a pipeline stage removed, by the stage's reason — whole events, so
    #: ``consumed == processed + Σ dead_lettered + duplicates + Σ dropped``. No stage
    #: removes events today (duplicates have their own count), so it reads ``{}``: a field
    #: dropped from a kept event is not a dropped event, and is ``fields_dropped``.
    dropped: dict[str, int]
    #: Optional fields the decoder (or the trace mapping) dropped from the events kept (a
    #: duplicate's are not counted again), ``{"<field>: <reason>": n}``
    #: (``feedback.rating: wrong_type``), all-time like the other totals (checkpointed; a
    #: state written before this field starts it at zero).
    fields_dropped: dict[str, int] = {}
    #: Blank (empty or whitespace-only) lines of a JSONL input (file source, stdin): no data,
    #: so neither ``consumed`` nor dead letters; lines read = ``consumed + blank_lines``
    #: (all-time, checkpointed; a state written before this field starts it at zero).
    blank_lines: int = 0
    #: Personal-data items scrubbed from the questions and answers, by type (``email``,
    #: ``phone``...: every type, 0 included), all-time like the other totals: the annotation
    #: totals are checkpointed with the stages, where ``goldwatch_pii_scrubbed_total`` restarts
    #: at 0 (trial 20); ``{}`` with analytics or ``analytics.pii`` off (nothing is scrubbed).
    pii_scrubbed: dict[str, int] = {}


class Status(BaseModel):
    """``GET /v1/status``: source, offsets, lag, counts, uptime."""

    #: What the numbers do not cover, first: the state file not durable at its path
    #: (``STATE NOT DURABLE``: no commits), recreated, or started empty with committed offsets
    #: before it (``state_file``); then a failed gold-set refresh (the old gold set
    #: stays in use: ``gold_refresh_error``); without a configured gold set, that gold-set
    #: comparisons are off and which setting turns them on (``gold_set:`` /
    #: ``GOLDWATCH_GOLD_SET``); topic labels too few to be the topics (clusters instead);
    #: that the language figures are unreliable (at least 5 % of the live questions read as
    #: a language the language candidates leave out); the languages they leave out
    #: (``analytics.language.candidates`` narrower than the defaults); the live languages
    #: without their own metric label (exported as ``language="other"``) that are worth
    #: naming, with the setting that labels them (:mod:`service.language.unlabelled`: at
    #: least 10 questions, a 95 % lower bound of their share ≥ 2 points); empty otherwise.
    notices: list[str] = []
    version: str
    ready: bool
    not_ready_reasons: list[str]
    uptime_s: float
    source_kind: str
    #: The source's own status (``None`` without one). A Kafka source's ``lag`` lists, per
    #: assigned partition, ``end_offset`` (sampled every ``kafka.lag_interval_s``),
    #: ``committed_offset`` (this replica's last successful commit, else the group's offset
    #: fetched at assignment), ``position`` (the consumer's next fetch offset, ahead of the
    #: committed one by what was fetched but not yet committed) and ``lag`` = ``end_offset -
    #: committed_offset`` (``position`` stands in only while nothing is committed): the value
    #: of ``goldwatch_consumer_lag``, which copies it every ``pipeline.status_interval_s``, so
    #: the gauge can trail this field by that long. Its ``committed_offsets``
    #: (``{"topic[partition]": offset}``) are the same values, for the partitions held now
    #: where one is known (before trial 46, F11: only this run's own commits, so ``{}`` after
    #: a restart beside a lag list committed to the end).
    source: dict[str, Any] | None
    input_finished: bool
    totals: Totals
    #: ``totals.fields_dropped`` again, kept where earlier versions put it: the optional
    #: fields the decoder dropped while keeping their events, ``{"<field>: <reason>": n}``,
    #: all-time and checkpointed (a trial-11 restart had lost them: this was the
    #: ``goldwatch_event_fields_dropped_total`` counter, which a restart resets, and still
    #: is in ``/metrics``). ``totals.dropped`` counts removed events, not fields (trial
    #: finding 5 of the sixteenth session).
    fields_dropped: dict[str, int] = {}
    last_error: str | None
    #: Why the last gold-set refresh (after an accepted suggestion) failed; ``None`` after a
    #: successful one. The old gold set stays in use meanwhile.
    gold_refresh_error: str | None = None
    #: Why the configured gold-set file no longer loads (file, line and problem, never its
    #: content), e.g. a torn last line; ``None`` when it loads. The next start would stop on
    #: it, so ``/readyz`` is 503 meanwhile.
    gold_file_error: str | None = None
    #: The documents the gold set under-covers, over all live traffic since the state began
    #: (a question's document: the one production ranked first; the gold set's: its rows'
    #: relevant passages'; the coverage-gap rule of the drift view's lists):
    #: ``{"gaps": [{"document", "live", "live_total", "gold", "gold_total", "gap"}, …]`` (the
    #: 10 largest, labels scrubbed), ``"n_gaps"``, ``"gold_documents"``, ``"documents"}``
    #: and, when language variants were grouped (``harvest.document_groups``), ``"grouped":
    #: {"documents", "groups"}`` (a group's label names its variants:
    #: ``"Warsaw.html (3 variants: de, en, es)"``); ``None`` without harvesting or when the
    #: corpus names no document.
    under_covered_documents: dict[str, Any] | None = None
    #: The state file (trial 47, F4): ``path``; ``recreated`` — times a checkpoint found it
    #: deleted, moved or replaced at its path (not the file being written) and wrote it there
    #: again with the whole current state, before committing offsets, and ``last_recreated``
    #: says when (both until restart; ``goldwatch_state_file_recreated_total``); ``lost`` —
    #: why it cannot be written at its path now (directory gone, read-only): no offsets are
    #: committed and HTTP ingest answers 503 meanwhile, not ready
    #: (``goldwatch_state_file_lost``), ``None`` normally; ``started_empty`` — this run's
    #: state held no totals (no state file, or a new one), and ``uncounted_before``
    #: (``{"topic[partition]": offset}``, where each partition's reading started since: the
    #: group's committed offset at assignment, said with no event read, else the first read;
    #: where above 0) with its sum ``uncounted_offsets``: the events before them are not in these
    #: totals (``goldwatch_state_uncounted_offsets``). Each also has a line in ``notices``.
    state_file: dict[str, Any] | None = None


class Problem(BaseModel):
    """An error body: a code and a message that never echoes submitted content."""

    error: str
    detail: str | list[dict[str, Any]]


#: OpenAPI ``responses`` entries of the errors routes answer with a :class:`Problem` body.
BUSY: dict[int | str, dict[str, Any]] = {
    503: {"model": Problem, "description": "the pipeline is busy (retry after Retry-After)"}
}


def not_found(what: str) -> dict[int | str, dict[str, Any]]:
    """A ``404`` OpenAPI response entry with a :class:`Problem` body, described by ``what``."""
    return {404: {"model": Problem, "description": what}}


# -- analytics: /v1/drift, /v1/refusals ----------------------------------------------------


@with_config(_OPEN)
class DimensionDrift(TypedDict, total=False):
    """One drift dimension (:meth:`service.drift.stage.DriftStage.report`): ``state`` (``ok``,
    ``warning``, ``drift``, ``insufficient_data``, ``uncalibrated``...), ``comparisons``
    ``{reference|baseline: latest test}`` (sizes, JSD/PSI or rates, p-value, alpha, method;
    an ``insufficient_data`` one says why and what to change in ``insufficient``; each of
    the four shared dimensions' and ``known_refusal``'s says the smallest change it can
    alarm on at its sizes in
    ``detectable``: ``text``, ``category`` (``None`` for a rate), ``share_from``,
    ``share_to``, ``n_current``, ``n_reference``, ``p_value``, ``alpha``, ``bound``,
    ``share_of``, or ``{"cannot_alarm": true, "text"}``; docs/drift.md);
    categorical dimensions add ``live_counts`` and ``gold_counts`` ``{category: events}``,
    ``coverage_gaps`` and, when some are left out, ``coverage_gaps_left_out``
    ``{category: why}``; ``categories_are``: what the categories are when they are not what
    they are named (topic while novelty is uncalibrated: each question's nearest gold topic;
    its coverage gaps are then all left out, its drift still alarms); ``tested_state`` is the
    state the test gave when suppression or hysteresis changed it; a topic test (and its
    alarm entry) whose reference was standardised to the window's language mix says
    ``adjusted_for: "language"`` (absent when compared as it is: one language,
    :mod:`service.drift.strata`); a test whose open alarm is
    held although it alone would open none says why in ``held`` (words) and ``held_because``
    (``suppressed_categories``, ``confounded``, ``not_tested``, ``hysteresis``; and
    ``quiet_hold`` beside ``uncalibrated`` with no alarm open: a drift that opened none, held
    by hysteresis, its test not meeting the alarm rule;
    :data:`service.drift.stage.HELD_BECAUSE`), a ``not_tested`` one its latest test with
    enough events in ``last_test`` (the same shape; its own JSD ``NaN`` and p ``1.0`` are the
    untested defaults); ``held_by_hysteresis`` is the detector's: the effect is not below
    the clear thresholds (half the alarm's) at every test over the clear span (one current
    window: ``window_s``, or the comparison's window when shorter), or no test ran;
    ``clearing_since`` (Unix seconds; absent when not clearing): the first of the tests in a
    row that read the effect below the clear thresholds, which end the alarm once they span
    the clear span (``held`` then says since when and the earliest end); ``suppressed`` /
    ``suppressed_categories`` say why the dimension / a category raises no alarm; ``confounded``
    ``{"by", "reason"}`` and, when only some of ``by``'s categories confound it,
    ``"categories"`` (a list): the dimension raises no alarm while ``by`` drifts too (topic by
    language: the topic assignment is measurably worse in one language; or, with
    ``categories``, while ``by``'s drift moves one of those languages, which the gold set
    does not show about as good). ``terms`` (rising terms) adds its
    false-alarm budget per day ``alpha_per_day`` and ``min_term_questions`` (the questions a
    term must be in to be tested and reported); its test says ``terms_tested`` and lists
    ``rising`` terms, each with its ``surface`` form, shares and counts, Mantel–Haenszel odds
    ratio and p-value. A rate dimension says what its windows count in ``counts``
    (``out_of_scope``: only the verdicts the off-corpus cutoff's range does not move, while
    the out-of-scope share counts every verdict). ``windows_restarted`` ``{"after_events",
    "timestamp", "why"}`` (absent: never): the dimension's windows started afresh when its
    labeller changed (``out_of_scope``: the out-of-scope detector recalibrated on a changed
    gold set; ``topic``: the topic model's assignment changed, or the first start after
    content ids, docs/topics.md), live or across a restart; counts made under two labellers
    are never compared (docs/drift.md)."""

    state: Required[str]
    comparisons: Required[dict[str, dict[str, Any]]]
    live_counts: dict[str, int]
    gold_counts: dict[str, int]
    coverage_gaps: list[dict[str, Any]]
    coverage_gaps_left_out: dict[str, str]
    categories_are: str
    tested_state: str
    suppressed: str
    suppressed_categories: dict[str, str]
    confounded: dict[str, str | list[str]]
    counts: str
    windows_restarted: dict[str, Any]
    alpha_per_day: float
    min_term_questions: int


class EventTime(TypedDict):
    """Events kept out of the drift windows: ``late`` (beyond the allowed lateness),
    ``future`` (ahead of the wall clock), ``ahead`` (held: too far ahead of the other
    events), their ``kept_out_share`` of all the events seen, the share of the latest
    ``recent_events`` seen kept out (``recent_kept_out_share``; from 0.2 a test that reads
    ``ok`` reads ``starved``), and the ``watermark`` (Unix seconds, ``None`` until the first
    events start it: ``analytics.drift.ahead_confirm`` of them in a run, each within
    ``max_ahead_s`` of the next; those before are held, counted in ``ahead``)."""

    late: int
    future: int
    ahead: int
    kept_out_share: float
    recent_events: int
    recent_kept_out_share: float
    watermark: float | None


@with_config(_OPEN)
class DriftReport(TypedDict):
    """``GET /v1/drift``: each dimension (language, topic, refusal, out-of-scope,
    ``known_refusal``: the refusal rate of known answerable gold questions, on its own
    windows, ``known_miss``: the rate at which production's top k misses the gold passages
    of a known question, 1 - live hit rate@k, on the same windows, and ``terms`` unless
    ``analytics.drift.terms`` is off),
    ``suppressed_dimensions`` ``{dimension: why it raises no alarm}`` (a whole dimension:
    ``"out_of_scope"``; a category or confound of one, ``"topic (novel share)"``, ``"topic
    (while language drifts in hi)"``: why it opens no alarm, an alarm already open staying
    open, held, and named in the reason), the ``alarms``
    history (the latest state changes of each comparison, oldest first; an entry with
    ``widened`` is no state change: a language or topic comparison already in drift named
    those categories rising since it opened; one with ``tested_state`` is a drift kept quiet
    by a confound; a gold-set comparison's opening or clearing says under ``reads`` what it
    means: a standing gap between the traffic and the gold set, found once enough traffic was
    seen, not a change at that time; one with ``restarted`` ended an open alarm when its
    dimension's windows started afresh, saying why; one of state ``insufficient_data`` with
    ``untested`` ended an open alarm for lack of data, not cleared — ``n_current`` events of
    the ``min_count`` a test needs, ``unit``, ``window_s``, ``hold_untested_s`` and
    ``last_test``; ``{}`` when kept by a version before it; no figures: nothing was measured,
    :func:`service.drift.stage.alarm_kind`), ``events_seen`` and
    :class:`EventTime`."""

    language: DimensionDrift
    topic: DimensionDrift
    refusal: DimensionDrift
    out_of_scope: DimensionDrift
    known_refusal: NotRequired[DimensionDrift]
    known_miss: NotRequired[DimensionDrift]
    terms: NotRequired[DimensionDrift]
    suppressed_dimensions: dict[str, str]
    alarms: list[dict[str, Any]]
    events_seen: int
    event_time: EventTime


class RefusalDrift(TypedDict):
    """The rate dimensions of the drift report: the refusal rate, the out-of-scope rate and
    the refusal rate of known answerable gold questions (``known_refusal``: its own windows,
    ``analytics.drift.known_window_s``)."""

    refusal: DimensionDrift
    out_of_scope: DimensionDrift
    known_refusal: NotRequired[DimensionDrift]


class RefusalsReport(TypedDict):
    """``GET /v1/refusals``: counts and rate, scope (out-of-scope share, over- and
    under-refusals, calibration), their drift, each detector's measured quality
    (:func:`service.runtime.reports.detector_quality_report`, with ``to_calibrate``: what to
    add to the gold set while the out-of-scope detector is uncalibrated; the out-of-scope detector's
    positive class is "in scope": its ``tpr`` is the share of answerable gold questions kept
    in scope, its ``fpr`` the share of unanswerable ones judged in scope — of its
    ``kind: off-topic`` rows when ``negatives`` is ``"off-topic"``, the other ``gold: []``
    rows then counted apart in ``apart`` / ``apart_out`` — not a rate of false alarms; the
    over-refusal bound, ``out_of_scope.over_refusals_explained``, counts every ``gold: []``
    row, off-topic and the others, so in-domain unanswerable rows read in scope raise it and
    the bar the over-refusal alert must clear) and the AUC floor below which
    a detector is uncalibrated (``None``: analytics without one), the class size below which
    it is likewise (``quality_min_class``), and ``refusals_method``: how the answers were
    counted as refused, with both counts (``answer.refused`` where the event sets it, else
    the answer's text: the phrase patterns, whose precision and recall are measured on
    NoMIRACL's English replies only, or a configured refusal model, measured only against
    ``answer.refused`` on this traffic, or either: the sentence names which and in which
    languages; ``refusals.method``)."""

    refusals: RefusalCounts
    out_of_scope: OutOfScopeReport
    drift: RefusalDrift
    detector_quality: dict[str, dict[str, Any]]
    quality_floor: float | None
    quality_min_class: int | None
    refusals_method: str


# -- live quality: /v1/quality -------------------------------------------------------------


@with_config(_OPEN)
class QualityReport(TypedDict):
    """``GET /v1/quality`` (:meth:`service.quality.stage.QualityStage.report`): ``k``, the
    near-duplicate ``threshold`` and ``gold_set_version`` (``None`` without a gold set);
    ``known`` ``{retriever: {n_known, n_scored, recall, hit_rate, mrr}}``, a shadow
    candidate's also with ``paired`` (``{n_scored, production: {recall, hit_rate, mrr},
    candidate: {...}}``: both on the known questions both were scored on) and
    ``coverage_note`` (why it was scored on fewer known questions than production, e.g.
    "scored on 50 known questions, results for 54 of production's 157 (cpu_budget skipped
    550 events)": scored on ``n_scored``, results for ``n_known``; ``None`` when not
    fewer); ``refusals`` of known questions (``known_answerable``, ``refused_answerable``,
    ``known_unanswerable``, ``answered_unanswerable``); ``known_refusal``: the refusal rate
    of known answerable questions (``n``, ``refused``, ``rate``, Wilson 95 % ``low`` and
    ``high``: each an over-refusal, no detector needed); ``by_language``: production's
    figures and the known refusals per language (the question's language label, most known
    questions first: ``language``, ``n_known``, ``n_scored``, ``recall``, ``hit_rate`` with
    ``hit_low``/``hit_high``, ``mrr``, ``few`` (fewer than ``by_language_min_n`` scored),
    ``known_answerable``, ``refused_answerable``, ``refused_rate`` with ``refused_low``/
    ``refused_high``, ``refused_few``), ``by_language_partial`` (true: a state kept before
    session 37, whose known questions are in no language); ``acl`` (``violations`` and
    ``leaks`` rows per retriever and role, ``restricted_passages``, ``passages_with_acl``,
    ``since``: the first event
    they count, over every gold-set version); ``coverage``: what ``known`` and ``refusals``
    cover — ``gold_set_version``, ``since`` (first event counted), ``rows`` (gold rows
    *measured*: with a known question counted since; the name is kept for clients, it is not
    the gold set's size), ``gold_rows`` (rows in the gold set in use: trial 24 read ``rows``
    50 with 53 rows loaded) and ``changes`` (each gold-set change: measurements of unchanged
    rows carried over, of changed or removed rows dropped); ``review``: scrubbed rows;
    ``known_miss_rows``: the gold rows that missed in the latest ``known_miss`` window,
    against their misses before it, most misses first (``{rows: [{gold_id, documents, window: {asks,
    misses}, before: {asks, misses}}], more, window_asks, window_misses}``;
    :func:`service.quality.where.missing_rows`; ``None`` without a scored known question in
    the window)."""

    k: int
    threshold: float | None
    gold_set_version: str | None
    known: dict[str, dict[str, Any]]
    refusals: dict[str, int]
    known_refusal: NotRequired[dict[str, Any]]
    by_language: NotRequired[list[dict[str, Any]]]
    by_language_partial: NotRequired[bool]
    by_language_min_n: NotRequired[int]
    coverage: dict[str, Any]
    acl: dict[str, Any]
    review: list[dict[str, Any]]
    known_miss_rows: NotRequired[dict[str, Any] | None]


# -- shadow: /v1/shadow, /v1/shadow/disagreements, /v1/shadow/evaluate ---------------------


@with_config(_OPEN)
class ShadowReport(TypedDict):
    """``GET /v1/shadow``: the RBO persistence ``rbo_p``, shadow results dropped, per
    candidate its offers, skips, calls, errors, latency, agreement means and counts (overall,
    by language, by topic) and runner state — the disagreement rows are at
    ``/v1/shadow/disagreements`` — and the latest gold-set run (``gold``). ``topics_are``:
    what the ``by_topic`` labels are while the novelty detector is untrusted (each question's
    NEAREST gold topic, and why), as ``/v1/drift``'s ``topic.categories_are``; ``None`` when
    they are the topic model's topics and ``novel``."""

    rbo_p: float
    results_dropped: int
    candidates: dict[str, CandidateSummary]
    gold: GoldRunStatus
    topics_are: str | None
    #: per candidate, the replay's sustained verdict on its RBO over event time, live
    #: (:meth:`service.shadow.trend.AgreementTrend.verdicts`; ``None``: no run tested yet)
    sustained: dict[str, dict[str, Any] | None]


class Disagreements(TypedDict):
    """``GET /v1/shadow/disagreements``: ``{candidate: rows, lowest RBO first}``; each row
    the event id and time, the scrubbed question, language, topic, RBO, overlap and both
    rankings."""

    rbo_p: float
    candidates: dict[str, list[Disagreement]]


class GoldRunStarted(TypedDict):
    """``POST /v1/shadow/evaluate``: a gold-set run started in the background."""

    started: bool


# -- harvest: /v1/gold-candidates ----------------------------------------------------------


class CandidatePage(TypedDict):
    """``GET /v1/gold-candidates``: ``total`` matching the filters, the page asked for
    (``offset``, ``limit``) and its ``items``."""

    total: int
    offset: int
    limit: int
    items: list[CandidateItem]
    #: picked events whose new question harvesting shed since this process started, the
    #: bound that sheds them (``harvest.max_new_per_batch``) and, with shadow candidates, per
    #: candidate the events offered whose comparison did not complete, by cause, over the
    #: state's whole history (restarts included; ``in_flight``: not compared yet) (the status
    #: page's words: :func:`service.api.status_page.shed_counts`); absent when the runtime
    #: does not harvest
    shed: NotRequired[int]
    max_new_per_batch: NotRequired[int | None]
    live: NotRequired[bool]
    shadow_not_compared: NotRequired[dict[str, NotCompared]]
