"""The sections of the goldwatch configuration: one frozen pydantic model per section
(``api``, ``source``, ``analytics``, ``shadow``, ...) and :class:`Settings`, the whole.

Every section forbids unknown keys and non-finite floats, refuses ``true``/``false`` for a
number and an empty string for a path. The sections of other packages (``kafka``,
``pipeline``, ``events``, ``harvest``, ``traces``' parts) are nested here, so the model is
the one place every setting is declared. Built by :func:`service.settings.loader.load_settings`.
"""

from __future__ import annotations

import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from service.embeddings.config import EmbeddingConfig
from service.events import FieldMapping
from service.harvest.config import HarvestConfig
from service.language.detector import LanguageConfig
from service.pipeline import PipelineConfig
from service.refusals.detector import check_pattern
from service.settings.kafka import KafkaSourceConfig
from service.settings.secrets import pii_key_problem, read_secret_file, token_problem
from service.shadow.config import ShadowConfig
from service.topics.config import TopicConfig
from service.traces.assembly import AssemblyLimits
from service.traces.evaluations import EvaluationsConfig
from service.traces.mapping import TraceMapping

RetrieverKind = Literal["bm25", "tfidf", "dense", "hybrid", "http", "entrypoint"]
BUILTIN_RETRIEVERS: tuple[str, ...] = ("bm25", "tfidf", "dense", "hybrid", "hybrid-lexical")

#: The members a ``hybrid`` retriever fuses when its config names none: BM25 + dense.
#: Before issue 17 they were ``("bm25", "tfidf")``; that fusion is the built-in
#: ``hybrid-lexical`` now (docs/retrievers.md, "Migration").
HYBRID_MEMBERS: tuple[str, ...] = ("bm25", "dense")

#: Built-in names that are hybrids, with their members.
BUILTIN_HYBRIDS: dict[str, tuple[str, ...]] = {
    "hybrid": HYBRID_MEMBERS,
    "hybrid-lexical": ("bm25", "tfidf"),
}


class _Frozen(BaseModel):
    # allow_inf_nan=False: every float setting is finite ("window_s: .inf" is a config
    # error naming the field, not a failure when the drift windows are built).
    model_config = ConfigDict(frozen=True, extra="forbid", allow_inf_nan=False)

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        # pydantic's lax mode reads YAML's `port: true` as 1: a typo, never a number
        if isinstance(value, bool) and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            if field is not None and _is_number(field.annotation):
                raise ValueError("must be a number, not true/false")
        # an empty path is read as "." (the current folder): a mistake, named by its setting
        if isinstance(value, str) and not value.strip() and info.field_name is not None:
            field = cls.model_fields.get(info.field_name)
            if field is not None and has_path(field.annotation):
                return _path_not_empty(value)
        return value


def _is_number(annotation: Any) -> bool:
    """``int``, ``float`` or either ``| None``."""
    if annotation in (int, float):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [arg for arg in typing.get_args(annotation) if arg is not type(None)]
        return bool(args) and all(arg in (int, float) for arg in args)
    return False


def has_path(annotation: Any) -> bool:
    """True for ``Path`` and ``Path | None``."""
    if annotation is Path:
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(has_path(arg) for arg in typing.get_args(annotation))
    return False


class RetrieverConfig(_Frozen):
    """One retriever goldwatch can query.

    Attributes:
        name: unique name used on the CLI, in reports and as a metric label.
        kind: ``bm25`` | ``tfidf`` | ``dense`` | ``hybrid`` (built in, over the corpus;
            ``dense`` reads the ``analytics.embeddings`` layer), ``http`` (POST
            ``{"question","k"}`` → ``{"results":[{"id","score"}]}``) or ``entrypoint``
            (``module:callable`` taking ``(question, k)``).
        url: endpoint for ``http``.
        entrypoint: ``module:callable`` for ``entrypoint``.
        members: names of the retrievers fused by ``hybrid`` (default ``["bm25", "dense"]``;
            it was ``["bm25", "tfidf"]`` before: list them to keep that fusion, or use the
            built-in ``hybrid-lexical``).
        rrf_k: the constant of reciprocal-rank fusion, ``1 / (rrf_k + rank)`` (Cormack et al. 2009).
        timeout_s: per-request timeout in seconds (``http``).
        retries: retries after the first attempt (``http``), with exponential backoff.
        backoff_s: first backoff in seconds; doubles each retry, with jitter.
        headers: HTTP headers sent with every request (``http``), e.g. an ``Authorization``
            header; their values are masked by ``config check`` and never logged.
        params: extra keyword arguments for the retriever's constructor.
    """

    name: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")
    kind: RetrieverKind
    url: str | None = None
    entrypoint: str | None = Field(default=None, pattern=r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")
    members: tuple[str, ...] = HYBRID_MEMBERS
    rrf_k: int = Field(default=60, ge=1)
    timeout_s: float = Field(default=5.0, gt=0, le=300)
    retries: int = Field(default=2, ge=0, le=10)
    backoff_s: float = Field(default=0.2, ge=0, le=60)
    headers: dict[str, str] = Field(default_factory=dict)
    params: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _kind_needs(self) -> RetrieverConfig:
        if self.kind == "http" and not self.url:
            raise ValueError("kind 'http' needs 'url'")
        if self.kind == "http" and self.url and not self.url.startswith(("http://", "https://")):
            raise ValueError("'url' must start with http:// or https://")
        if self.kind == "entrypoint" and not self.entrypoint:
            raise ValueError("kind 'entrypoint' needs 'entrypoint' as 'module:callable'")
        return self


class EvalConfig(_Frozen):
    """Settings of ``goldwatch eval``.

    Attributes:
        k: cut-offs for recall@k, hit rate@k, precision@k, nDCG@k and MRR@k (each ≥ 1).
        depth: how many results to ask each retriever for (≥ max(k)); the uncut MRR, nDCG
            and MAP (and the misses' gold ranks) are over that list, ranked as trec_eval
            ranks it (score descending, ties by passage id descending).
        batch_size: questions per retrieval batch.
        history: JSONL file that gets one row per retriever per run (``None`` disables it).
        misses: JSONL file the misses are written to (``None`` disables it).
        relevance_level: minimum qrels level counted as relevant (trec_eval ``-l``).
    """

    k: tuple[int, ...] = (1, 5, 10, 20)
    depth: int = Field(default=100, ge=1, le=10_000)
    batch_size: int = Field(default=256, ge=1)
    history: Path | None = Path("goldwatch-runs.jsonl")
    misses: Path | None = Path("goldwatch-misses.jsonl")
    relevance_level: int = Field(default=1, ge=1)

    @field_validator("k")
    @classmethod
    def _k_positive(cls, value: tuple[int, ...]) -> tuple[int, ...]:
        if not value:
            raise ValueError("needs at least one cut-off")
        if any(k < 1 for k in value):
            raise ValueError("every cut-off must be >= 1")
        return tuple(sorted(set(value)))

    @model_validator(mode="after")
    def _depth_covers_k(self) -> EvalConfig:
        if self.depth < max(self.k):
            raise ValueError(f"depth ({self.depth}) must be >= the largest k ({max(self.k)})")
        return self


class SourceConfig(_Frozen):
    """Where the live query log comes from.

    Attributes:
        kind: ``kafka`` (the ``kafka`` section), ``file`` (a JSONL file), ``stdin``, or
            ``none`` (events only arrive through ``POST /v1/events``).
        path: the JSONL file for ``file``.
        follow: keep reading as the file grows (``tail -f``).
        rate: events per second to replay at (demos); ``None``: as fast as possible.
        dlq_path: dead-letter JSONL file of the file or stdin source and of HTTP ingest
            (``/v1/events``, ``/v1/traces``), shared. Unset: a file source writes its state's
            own ``<state.path>.dlq.jsonl`` (a state that read the file before session 51
            keeps writing the file's ``<file>.dlq.jsonl``, where its letters are), stdin and
            HTTP ingest ``<state dir>/goldwatch.dlq.jsonl`` (so with a file source, HTTP
            ingest's dead letters are in the latter). A Kafka
            source always writes its ``<topic>.dlq`` topic. ``goldwatch replay`` without
            ``--state`` ignores it: it writes its own ``<file>.replay.dlq.jsonl`` (or
            ``--dlq``), emptied at each run. Give each state its own dead-letter file:
            two states sharing one can lose or double letters across a kill.
    """

    kind: Literal["kafka", "file", "stdin", "none"] = "none"
    path: Path | None = None
    follow: bool = False
    rate: float | None = Field(default=None, gt=0)
    dlq_path: Path | None = None

    @model_validator(mode="after")
    def _file_needs_path(self) -> SourceConfig:
        if self.kind == "file" and self.path is None:
            raise ValueError("kind 'file' needs 'path'")
        return self


#: The fit cache's folder name, beside the state file (:attr:`StateConfig.model_cache`).
MODEL_CACHE_DIR = "model-cache"


class StateConfig(_Frozen):
    """Where state that must survive a restart lives (one SQLite file, WAL mode).

    Attributes:
        path: the SQLite file; its folder is created if missing.
        model_cache: keep the analytics' fitted models (out-of-scope detector, topic model,
            the gold set's reference counts) in ``model-cache/`` beside ``path``, so a restart
            with the same gold set, corpus, analytics settings and goldwatch code reads them
            back instead of fitting (the same values; any change refits). ``false``: fit at
            every start.
    """

    path: Path = Path("goldwatch-state/state.sqlite")
    model_cache: bool = True

    def model_cache_dir(self, state_path: Path | None = None) -> Path | None:
        """The fit cache's folder beside ``state_path`` (default :attr:`path`), or ``None``
        when :attr:`model_cache` is off."""
        if not self.model_cache:
            return None
        return (state_path or self.path).parent / MODEL_CACHE_DIR

    def dead_letter_path(self, state_path: Path | None = None) -> Path:
        """The dead-letter file of a file or stdin source on ``state_path`` (default
        :attr:`path`) when ``source.dlq_path`` is unset: ``<state>.dlq.jsonl`` beside it, one
        per state (a state that read its log before session 51 keeps the log's
        ``<file>.dlq.jsonl``: :func:`consumers.file_source.state_dead_letters`)."""
        return Path(f"{state_path or self.path}.dlq.jsonl")


def _path_not_empty(value: Any) -> Any:
    """Refuse an empty or blank path before pydantic reads it as ``.`` (the current folder):
    ``GOLDWATCH_ANALYTICS__PII_KEY_FILE=`` is a mistake, not a request to read ``.``."""
    if isinstance(value, str) and not value.strip():
        raise ValueError("must not be empty (leave it unset instead)")
    return value


class ApiConfig(_Frozen):
    """The HTTP API (FastAPI served by uvicorn).

    Attributes:
        host, port: where to listen.
        token: bearer token required on every mutating endpoint (``POST``); ``None`` (unset)
            refuses every mutating request (set ``GOLDWATCH_API__TOKEN``). Printable ASCII
            without leading or trailing whitespace: an empty or blank token, or one a client
            cannot send in an ``Authorization`` header (a trailing newline from a secret file,
            a control or non-ASCII character), is a configuration error. Never printed.
        token_file: read ``token`` from this file (a mounted Secret) when the configuration
            is loaded: the token and at most one final newline, nothing else (a leading space
            or a second newline is an error naming the file). Not both ``token`` and
            ``token_file``; empty is an error. The token is masked by ``config check`` and
            never logged.
        max_request_bytes: larger request bodies get 413.
        max_events_per_request: larger ``POST /v1/events`` batches get 413.
        ingest_chunk_events: a ``POST /v1/events`` batch runs through the pipeline in chunks
            of at most this many events, releasing the pipeline lock between them, so one
            maximum-size request does not keep the consumer and the report endpoints waiting
            for its whole run (seconds for 1,000 long questions); the checkpoint comes once,
            after the last chunk, before the answer.
        request_read_timeout_s: seconds a client has, from a request's first byte (from the
            connection's start, for its first request), to send the request's headers and
            body; a slower one gets 408 and is closed (slow-client protection). Raise it for
            clients that post large batches over slow links.
        keep_alive_timeout_s: seconds an idle keep-alive connection stays open after a
            response (uvicorn's ``timeout_keep_alive``).
        max_connections: most HTTP connections open at once (also kept 128 under the
            process's open-files limit). Past it the oldest connection still sending its
            request is closed (408) to make room; when every connection is running a
            request, the new one gets 503 with ``Retry-After``.
        max_header_bytes: largest request head (request line, headers, the empty line):
            larger gets 431, however it arrived (it is also h11's incomplete-event limit).
    """

    host: str = "127.0.0.1"
    port: int = Field(default=8000, ge=0, le=65535)
    token: SecretStr | None = None
    token_file: Path | None = None
    max_request_bytes: int = Field(default=4 * 1_048_576, ge=1024)
    max_events_per_request: int = Field(default=1_000, ge=1)
    ingest_chunk_events: int = Field(default=50, ge=1, le=100_000)
    request_read_timeout_s: float = Field(default=10.0, gt=0, le=3600)
    keep_alive_timeout_s: float = Field(default=5.0, gt=0, le=3600)
    max_connections: int = Field(default=512, ge=16, le=1_000_000)
    max_header_bytes: int = Field(default=16 * 1024, ge=1024, le=1_048_576)

    @model_validator(mode="before")
    @classmethod
    def _token_from_file(cls, data: Any) -> Any:
        """Fill ``token`` from ``token_file`` (read once, here, so that every reader of
        ``api.token`` sees it); messages name ``api.token_file`` and the file."""
        if not isinstance(data, dict) or data.get("token_file") is None:
            return data
        path = data["token_file"]
        if not isinstance(path, str | Path):
            return data  # the field's own validation says what is wrong
        if not str(path).strip():
            raise ValueError("api.token_file: must not be empty (leave it unset instead)")
        if data.get("token") is not None:
            raise ValueError("give token or token_file, not both")
        token = read_secret_file(Path(path), "api.token_file")
        problem = token_problem(token)
        if problem is not None:
            raise ValueError(f"api.token_file: the token in {path} {problem}")
        return {**data, "token": token}

    @field_validator("token")
    @classmethod
    def _sendable_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            problem = token_problem(value.get_secret_value())
            if problem is not None:
                raise ValueError(problem)
        return value


class DriftSettings(_Frozen):
    """Drift windows (event time, seconds) and the alarm rule's thresholds.

    Attributes:
        window_s: current window compared with the baseline of earlier traffic.
        reference_window_s: current window compared with the gold set.
        bucket_s: bucket width of all windows.
        test_every_s: one test per this much event time.
        baseline: ``frozen`` (the first ``warmup_s`` of traffic: exactly the events with
            event time in ``[start, start + warmup_s)``, ``start`` the start of the earliest
            event's bucket, whatever ``test_every_s``), ``previous`` (the window before the
            current one) or ``none``.
        warmup_s: warm-up of a frozen baseline (rounded up to whole buckets); the baseline is
            ready once the watermark is past it if it holds ``min_count`` events, else a new
            warm-up starts with the next bucket.
        allowed_lateness_s: events older than the watermark minus this are counted as late,
            not added. Each Kafka partition is judged against its own watermark (the newest
            event time read from it), so a backlog whose partitions are read one stretch
            after another is not late; an event older than the history the windows keep
            (the longest of ``window_s`` — twice it for a ``previous`` baseline —,
            ``reference_window_s`` with a gold set, and ``warmup_s`` for a ``frozen`` one) is.
        future_tolerance_s: seconds an event may be stamped ahead of the wall clock; later
            ones are kept out of the drift windows and counted as ``future``.
        max_ahead_s: seconds an event may be stamped ahead of the newest event time so far
            (the watermark) before it is held and counted as ``ahead`` instead of moving the
            watermark, so one skewed clock cannot make every later event late. A skew
            smaller than it (local time stamped as UTC: 1–8 h) would move the watermark and
            make the events after it late (a trial's one event 5.5 h ahead kept 55 % out)
            but for ``ahead_gap_factor``'s rule; lowering it towards the longest pause your
            traffic really has holds such skews as well — below that, every event after a
            pause waits for ``ahead_confirm`` others before it counts.
        ahead_confirm: held events within ``max_ahead_s`` of one another that confirm traffic
            really jumped (it resumed after a gap): they are then added and time moves on —
            if they are also at least as many as the events that arrived in time since the
            first of them (after a real jump nothing does; a skewed clock's events come
            mixed with the others', and stay held: a trial's 10 events stamped 27 days ahead,
            one every 5, had made 80 % of the log late). This many in a row, with none in
            time between, still move time on: nothing tells them from a jump. The first
            events likewise wait until this many form a run with steps of at most
            ``max_ahead_s``, which starts the watermark (so a first event stamped days off is
            held, not taken as the time). 1: never hold.
        ahead_gap_factor: the gap rule: once 32 events came in time, an event also waits as
            ``ahead`` when it is more than this many times the largest step the event time
            took over the last 32 in-time events, and more than ``allowed_lateness_s``, ahead
            of the newest event time (under ``max_ahead_s`` ahead too: a trial's one event 2 h
            ahead made the 60 after it late). ``ahead_confirm`` such events in a row (none in
            time between) confirm a real jump and are added (a restart after a pause, a
            backlog: nothing late, the watermark a few events later); one after which
            ``ahead_confirm`` events came in time was a lone outlier and stays counted as
            ``ahead``. Sparse traffic's largest recent pause is long, so it seldom waits.
            0: off (the rule of ``max_ahead_s`` alone).
        min_count: events a window needs before it is tested (below: ``insufficient_data``).
        alpha: false-alarm budget per day of the four shared dimensions (language, topic,
            refusal, out-of-scope), split by Bonferroni; ``terms``, ``known_refusal`` and
            ``known_miss`` each add a share of their own (the whole family's budget is 7/4
            of it; 8/4 while ``known_miss`` is tested per language too, two or more
            languages meeting its minimums: that family's own share).
        min_jsd, min_share_change, min_rate_change: effect sizes an alarm needs (JSD base 2;
            shares and rates as fractions; above 0), judged on the CI bound nearest zero; an
            alarm clears when the effect falls below half of it (hysteresis: with 0 it could
            never clear).
        terms: test rising terms (the ``terms`` dimension: a content word whose share of
            questions rose against the baseline, stratified by language; topic-free, so it
            sees questions on subjects no gold row covers). Needs a baseline (not ``none``).
            Its false-alarm budget is a share of ``alpha`` of its own (the other dimensions'
            levels are unchanged), split over the terms tested.
        min_term_questions: questions of the current window a term must be in to be tested
            and reported (also the privacy floor: a term in fewer is never reported).
        max_terms: terms counted per bucket and language at most (memory); a rarer term's
            count is bounded from above in the baseline, so the limit can hide a rise, never
            make one.
        known_window_s: the current window, and the frozen baseline's warm-up, of the
            ``known_refusal`` dimension: the refusal rate of known answerable gold questions
            (live questions matched to a gold row the asker may read; a refusal of one is an
            over-refusal). Known questions are a small part of the traffic, so its windows
            are longer than ``window_s`` (one day by default); its tests follow
            ``test_every_s`` and its lateness the other settings here. The ``known_miss``
            dimension (the rate at which production's top k misses the gold passages of a
            known question: 1 - its live hit rate@k) has the same windows.
        known_min_count: known answerable questions a window of ``known_refusal`` (scored
            known questions, of ``known_miss``) needs before it is tested (and its baseline
            before it is ready, up to 30).
    """

    window_s: float = Field(default=3600.0, gt=0)
    reference_window_s: float = Field(default=86_400.0, gt=0)
    bucket_s: float = Field(default=60.0, gt=0)
    test_every_s: float = Field(default=300.0, gt=0)
    baseline: Literal["frozen", "previous", "none"] = "frozen"
    warmup_s: float = Field(default=21_600.0, gt=0)
    allowed_lateness_s: float = Field(default=300.0, ge=0)
    future_tolerance_s: float = Field(default=60.0, ge=0)
    max_ahead_s: float = Field(default=21_600.0, gt=0)
    ahead_confirm: int = Field(default=5, ge=1)
    ahead_gap_factor: float = Field(default=4.0, ge=0)
    min_count: int = Field(default=200, ge=1)
    alpha: float = Field(default=0.001, gt=0, lt=1)
    min_jsd: float = Field(default=0.05, gt=0, le=1)
    min_share_change: float = Field(default=0.05, gt=0, le=1)
    min_rate_change: float = Field(default=0.05, gt=0, le=1)
    terms: bool = True
    min_term_questions: int = Field(default=10, ge=1)
    max_terms: int = Field(default=2000, ge=1)
    known_window_s: float = Field(default=86_400.0, gt=0)
    known_min_count: int = Field(default=30, ge=1)

    def cadence_notice(self, has_reference: bool) -> str | None:
        """What to change when ``test_every_s`` is longer than a window it tests (``None``
        when it is not): the baseline comparisons' ``window_s`` (unless ``baseline`` is
        ``none``) and, with a gold set (``has_reference``), the gold-set comparisons'
        ``reference_window_s`` and the known-question dimensions' ``known_window_s``. A test
        runs each time the events' time crosses a multiple of ``test_every_s`` (and at the
        first events), so the windows between two tests are never tested, and a log shorter
        than ``test_every_s`` is tested only at its start (trial 41: 999999 s, and
        ``config check`` said nothing while every dimension stayed untested).

        >>> DriftSettings(test_every_s=7200).cadence_notice(False)[:80]
        'analytics.drift.test_every_s (7200 s) is longer than the window it tests, analyt'
        >>> DriftSettings().cadence_notice(True) is None
        True
        """
        spans = [("window_s", self.window_s)] * (self.baseline != "none")
        if has_reference:
            spans += [("reference_window_s", self.reference_window_s),
                      ("known_window_s", self.known_window_s)]  # fmt: skip
        longer = [(name, span) for name, span in spans if self.test_every_s > span]
        if not longer:
            return None
        named = ", ".join(f"analytics.drift.{name} ({span:g} s)" for name, span in longer)
        shortest = min(span for _, span in longer)
        windows = "the window it tests" if len(longer) == 1 else "windows it tests"
        return (f"analytics.drift.test_every_s ({self.test_every_s:g} s) is longer than "
                f"{windows}, {named}: a drift test runs each time the events' time crosses a "
                f"multiple of test_every_s (and at the first events), so the windows between "
                f"two tests are never tested and traffic shorter than test_every_s is tested "
                f"only at its start; set analytics.drift.test_every_s to at most "
                f"{shortest:g} s (default 300 s)")  # fmt: skip

    @model_validator(mode="after")
    def _windows_hold_a_bucket(self) -> DriftSettings:
        """A window shorter than one bucket is one bucket (windows slide a bucket at a time),
        so its reports would name a span it never had ("no 1 s window ...")."""
        for name in ("window_s", "reference_window_s", "warmup_s", "known_window_s"):
            if getattr(self, name) < self.bucket_s:
                raise ValueError(f"{name} ({getattr(self, name):g} s) must be at least bucket_s "
                                 f"({self.bucket_s:g} s): windows are whole buckets")  # fmt: skip
        return self


class AnalyticsConfig(_Frozen):
    """The live analytics stages (PII, language, topic, refusal, out-of-scope, drift).

    Attributes:
        enabled: run the analytics stages at all (off: the bare pipeline).
        pii: scrub personal data first, before anything is stored, logged or labelled.
        language: the language detector; the gold set's languages are added to its
            candidates.
        language_label_limit: most languages with their own metric label (rest: ``other``).
            The label set is fixed at start, the same on every replica (so their counters
            add up): every gold-set language, then ``language_labels``, then the built-in
            list (en, es, hi-Latn, hi, fr, de, pt, zh, ar) until the limit; live traffic
            adds none. A live language left without one (exported as ``other``) is named
            with the fix in ``GET /v1/status`` notices and the replay reports once it has
            at least 10 questions and a 95 % lower bound of its share of 2 points (a
            coverage gap by :mod:`service.coverage`'s rule: :mod:`service.language.unlabelled`).
        language_labels: languages to give their own metric label after the gold set's and
            before the built-in list, within ``language_label_limit`` (e.g. ``[ru]`` for
            Russian traffic the gold set lacks); codes as the detector gives them.
        topics_model: artefact from ``goldwatch topics fit``; ``None``: fitted on the gold
            set at start.
        topics: topic-model settings used when fitting at start.
        use_gold_topics: use the gold set's own ``topic`` labels as the topics when enough
            rows carry one — at least 3, as many as the answerable rows without one, with at
            least 2 labels (rows without one are counted by the model's prediction, as live
            traffic is); fewer labelled rows: clusters, and a notice says so.
        refusal_patterns: extra refusal patterns (Python regular expressions, each compiled on
            its own; an invalid one is a configuration error naming its index).
        scope_method: how out-of-scope is judged: ``embedding`` (nearest gold questions and
            passages in the embedding space plus ``scope_retriever``'s best score, a logistic
            regression calibrated on the gold set: :class:`service.refusals.scope.EmbeddingScope`),
            ``retriever`` (``scope_retriever``'s best score against a threshold, as before
            issue 17) or ``off``.
        scope_retriever: built-in retriever (``bm25``, ``tfidf``, ``dense``, ``hybrid``) whose
            best score judges out-of-scope (``retriever``) or is one feature of it (``embedding``);
            ``None``: no out-of-scope (as before ``scope_method`` existed).
        scope_min_tpr: the calibrated threshold keeps at least this share of the gold set's
            answerable questions in scope (then maximises Youden's J). Kept at 0.95 over plain
            Youden (measured for the trial's finding 3, ``benchmarks/bench_scope.py``): on the
            trial's gold set plain Youden lifts the balanced accuracy 0.584 → 0.793 but judges
            77 % of live XQuAD-en questions (answerable from the corpus) out of scope (13 % at
            0.95); on CLINC150 it gains little (held-out 0.810 → 0.844). A poor operating point
            is labelled by ``scope_min_balanced_accuracy`` instead of hidden by a threshold that
            flags in-scope traffic.
        scope_corpus_passages: most corpus passages the ``embedding`` detector's corpus
            feature (a question's nearest passage) reads: a larger corpus is read through a
            fixed sample of this many passages, chosen by their ids
            (:func:`service.refusals.scope.corpus_sample`) and named in the detector's
            quality line; ``None``: every passage. Its cost per distinct question and its
            start-up grow with it (~27 µs and ~40 ms at 1,024; a 20,317-passage corpus read
            whole cost the production-shaped replay 274 µs/event in that stage and 26.6 s of
            start-up CPU, against 36 µs/event and 2.2 s with 317); the measured quality of a
            sample (3,608 real passages, the benchmark's gold set: held-out ROC AUC 0.993
            whole, 0.990 at 2,048, 0.982 at 1,024, 0.977 at 256) is in the report.
        scope_known_threshold: character n-gram cosine similarity, in (0, 1], from which a
            live question is a near-duplicate of a gold question (as ``shadow.known_threshold``,
            with the same wording rule) and takes its answerability, whatever its score: a
            near-duplicate of an unanswerable row is out of scope, so refusing it is correct,
            not an over-refusal.
        quality_floor: smallest ROC AUC (in [0.5, 1]) a detector must show on its calibration
            data (out-of-scope, novelty) for its counts to be reported as calibrated and its
            drift dimension to raise alarms; below it the counts are labelled uncalibrated
            and its alarms are suppressed, with the reason (novelty: it labels no question
            ``novel`` — live, gold or on the metric — and the topic shares read as nearest
            gold topics: ``scope_min_balanced_accuracy``).
        quality_min_class: smallest class a detector's quality must be measured on (≥ 2)
            for it to count as calibrated: the out-of-scope detector's unanswerable (its
            ``kind: off-topic`` ones when the gold set has at least this many, and at least
            2: the other ``gold: []`` rows are then measured apart) and answerable gold
            questions, novelty's gold questions (each scored with its topic held out);
            below it the detector is uncalibrated like one below ``quality_floor``, with
            the reason ("measured on only 5 unanswerable gold questions; needs at least 10").
            Default 10: by Hanley & McNeil's standard error
            of an AUC (1982, Radiology 143:29–36), a detector of AUC 0.90 measured on 10
            questions of its smaller class (against 45 of the other) has a 95 % interval of
            ±0.13, which clears the 0.75 floor; on 5 it is ±0.19 (down to 0.72), so such a
            measurement cannot tell a good detector from one at the floor. This is sampling
            error only: the calibration is measured on the gold set's unanswerable questions,
            and live out-of-scope traffic may look nothing like them. Also the answerable
            gold questions a language needs (written in its script) to set its script's
            off-corpus cutoff and have its held-out false-positive rate measured; a language
            with fewer is judged by its script's cutoff, a script without such a language not
            by the off-corpus rule, nor a live question in a language the gold set lacks.
        scope_min_balanced_accuracy: smallest balanced accuracy ((TPR + 1 − FPR) / 2, in
            [0.5, 1]) the out-of-scope detector must show at the threshold its counts use
            (on its cross-validated calibration scores), besides ``quality_floor`` on its AUC:
            the AUC ranks every threshold, the counts come from one. Default 0.68: the best
            balanced accuracy of an equal-variance binormal detector at AUC 0.75 (the default
            floor), Φ(Φ⁻¹(0.75) / √2) = 0.683, so the operating point must be as good as the
            weakest trusted detector at its best; the trial's 0.584 (TPR 0.952, FPR 0.783 at
            AUC 0.844) is below it. Checked with the FPR at the upper end of its Wilson 95 %
            interval over the unanswerable gold rows (the reports show both figures): an FPR
            measured on 10 rows is known to no better than that (5 of 10: 0.50, bound 0.76;
            three of 16 gold sets of ``benchmarks/bench_scope_coverage.py`` caught under half
            of the live out-of-scope questions while reading 0.68–0.74 here). Applied to topic
            novelty too (its TPR: gold questions read novel with their topic held out; its FPR:
            read novel with every topic kept), since the fortieth session: a new user's 30
            gold rows read "calibrated" at ROC AUC 0.782 while catching 5 of 30 held-out
            topics (balanced accuracy 0.550, 0.477 bounded), and 63 % of their off-topic
            questions were counted under a gold topic. Below it the topic shares are each
            question's nearest gold topic, said so on every surface; no topic coverage gap is
            exported or given to a suggestion; the topic drift alarms stand, naming nearest
            topics (``service.evaluation.detector_quality.BALANCED_ACCURACY_FLOORED``).
        drift: windows and thresholds of the drift detectors.
        embeddings: the sentence-embedding layer (backend, model folder, cache, character
            n-gram mix) that topics, novelty, out-of-scope and the ``dense``/``hybrid``
            retrievers read text through.
        question_cache_size: distinct questions whose topic, out-of-scope score and
            known-question match are remembered (three LRU caches keyed by the question,
            and a fourth of the known-question matches keyed by the question as asked, so
            the stages that match a batch's questions normalise each once; 0: none). Live
            traffic repeats its questions, so a hit skips the models. A bound on memory: a
            remembered question costs about 0.75 KB in the first three together (measured
            with ``tracemalloc``: topic 0.41, out-of-scope 0.20, known match 0.17 KB, each
            counting its own copy of a 47-character question) and ~0.25 KB in the fourth
            (estimated), so the default 65,536 is at most ~64 MB (docs/scaling.md,
            "Memory"). The language detector's
            cache is ``language.cache_size``, the embedding cache ``embeddings.cache_size``.
        pii_memo_size: distinct texts (questions, answers) whose scrubbed form, and
            distinct ``user.id`` values whose pseudonym, the PII stage remembers (two maps,
            each cleared when it holds this many; 0: none). A cache: the size changes the
            time, never a result. A bound on memory: about 0.32 KB per text and 0.13 KB per
            id (``benchmarks.bench_memory``: 47,589 texts 15.0 MiB, 20,000 ids 2.5 MiB), so
            the default 65,536 is at most ~30 MB for the two (docs/scaling.md, "Memory").
        pii_key: secret key of the ``event_id``/``user.id`` pseudonyms (HMAC-SHA256; at least
            32 printable ASCII characters without leading or trailing whitespace, e.g.
            ``openssl rand -hex 32``: a trailing newline or a control character is a
            configuration error, not part of the key; set it with
            ``GOLDWATCH_ANALYTICS__PII_KEY`` or use ``pii_key_file``; never logged, masked by
            ``config check``). ``None``: the unkeyed SHA-256, which anyone can check a guessed
            id (an e-mail address) against. Keep it: another key gives other pseudonyms, so
            redeliveries from before a change are not recognised as duplicates
            (docs/security.md).
        pii_key_file: read ``pii_key`` from this file (a mounted Secret) when the pipeline is
            built: the key and at most one final newline, nothing else (a leading space or
            a second newline is an error naming the file), so the file and the variable give
            the same pseudonyms. Not both ``pii_key`` and ``pii_key_file``; empty is an
            error.
    """

    enabled: bool = True
    pii: bool = True
    language: LanguageConfig = LanguageConfig()
    language_label_limit: int = Field(default=16, ge=1, le=100)
    language_labels: tuple[Annotated[str, Field(min_length=1, max_length=16,
                                                pattern=r"^[A-Za-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")],
                           ...] = Field(default=(), max_length=100)  # fmt: skip
    topics_model: Path | None = None
    topics: TopicConfig = TopicConfig()
    use_gold_topics: bool = True
    refusal_patterns: tuple[Annotated[str, AfterValidator(check_pattern)], ...] = ()
    scope_method: Literal["embedding", "retriever", "off"] = "embedding"
    scope_retriever: Literal["bm25", "tfidf", "dense", "hybrid"] | None = "bm25"
    scope_min_tpr: float = Field(default=0.95, ge=0, le=1)
    scope_known_threshold: float = Field(default=0.9, gt=0, le=1)
    scope_corpus_passages: int | None = Field(default=1_024, ge=16, le=10_000_000)
    quality_floor: float = Field(default=0.75, ge=0.5, le=1)
    quality_min_class: int = Field(default=10, ge=2, le=100_000)
    scope_min_balanced_accuracy: float = Field(default=0.68, ge=0.5, le=1)
    drift: DriftSettings = DriftSettings()
    embeddings: EmbeddingConfig = EmbeddingConfig()
    question_cache_size: int = Field(default=65_536, ge=0, le=10_000_000)
    pii_memo_size: int = Field(default=65_536, ge=0, le=10_000_000)
    pii_key: SecretStr | None = None
    pii_key_file: Path | None = None

    @field_validator("pii_key")
    @classmethod
    def _strong_key(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None:
            problem = pii_key_problem(value.get_secret_value())
            if problem is not None:
                raise ValueError(problem)
        return value

    _pii_key_file_not_empty = field_validator("pii_key_file", mode="before")(_path_not_empty)

    @model_validator(mode="after")
    def _one_key(self) -> AnalyticsConfig:
        if self.pii_key is not None and self.pii_key_file is not None:
            raise ValueError("give pii_key or pii_key_file, not both")
        return self

    def pii_key_bytes(self) -> bytes | None:
        """The pseudonym key as UTF-8 bytes: ``pii_key``, or ``pii_key_file``'s text with one
        final newline stripped (:func:`read_secret_file`); ``None`` when neither is set.

        Raises:
            ValueError: the file cannot be read, or its key fails :func:`pii_key_problem`
                (anything but the key and one final newline: a leading space, a second
                newline, a space before the newline); the message names the field and the
                file, never the key.
        """
        if self.pii_key is not None:
            return self.pii_key.get_secret_value().encode("utf-8")
        if self.pii_key_file is None:
            return None
        path = self.pii_key_file
        key = read_secret_file(path, "analytics.pii_key_file")
        problem = pii_key_problem(key)
        if problem is not None:
            raise ValueError(f"analytics.pii_key_file: the key in {path} {problem}")
        return key.encode("utf-8")


class ShadowSettings(ShadowConfig):
    """Shadow evaluation: candidates run on live traffic, and gold-set runs on a schedule.

    Extends :class:`~service.shadow.runner.ShadowConfig` (candidates, ``rbo_p``, sampling
    salt, bounds) with:

    Attributes:
        production: the retriever that *is* production, callable for gold-set runs (e.g. an
            ``http`` retriever in front of the live system); ``None``: gold-set runs score
            only the candidates.
        evaluate_every_s: seconds between scheduled gold-set runs of production and every
            candidate (``None``: on demand only, ``POST /v1/shadow/evaluate``).
        evaluate_on_start: run the gold set once when the service starts.
        known_threshold: character n-gram cosine similarity, in (0, 1], from which a live
            question counts as a near-duplicate ("known question") of a gold question, if it
            also asks the same question by harvest's rule (the same numbers, negation, content
            words and question word: "... did Khanbaliq not become?" is not "... did Khanbaliq
            become?" at any threshold) or asks it with a detail of the gold question left out
            (at most a third of its content words) and nothing but courtesy or an article
            added; the reports count the near-matches it turned down.
        known_k: cut-off of the live recall@k, hit@k and reciprocal rank on known questions.
        known_recent_events: most recent events matched to a known question whose match is
            remembered (an insertion-ordered map keyed by event id, oldest out), so a shadow
            candidate's result for the event, which comes later, is scored against the same
            gold question; a result for an older event is not scored. Kept with or without
            candidates. A bound on memory: about 0.28 KB per event (``benchmarks.bench_memory``:
            25,211 events 6.8 MiB), so the default 100,000 is at most ~28 MB; on the
            production-shaped benchmark log about 2.6 % of the events match, so the default
            fills after ~4 million events (docs/scaling.md, "Memory").
        history: JSONL run history of scheduled/on-demand gold-set runs (``None``:
            ``gold-runs.jsonl`` beside the state file, which is writable in a container).
    """

    production: str | None = Field(default=None, min_length=1, max_length=64)
    evaluate_every_s: float | None = Field(default=None, ge=10, le=7 * 86_400)
    evaluate_on_start: bool = False
    known_threshold: float = Field(default=0.9, gt=0, le=1)
    known_k: int = Field(default=10, ge=1, le=1_000)
    known_recent_events: int = Field(default=100_000, ge=1, le=10_000_000)
    history: Path | None = None


#: What every output of serve and replay says at its top when no gold set is configured.
GOLD_SET_OFF = (
    "gold-set comparisons are off: no gold set is configured (set gold_set: in the "
    "configuration, or GOLDWATCH_GOLD_SET, to compare live traffic with your gold set)"
)


def gold_set_notice(settings: Settings) -> str | None:
    """:data:`GOLD_SET_OFF` when ``settings`` configure no gold set, else ``None``."""
    return GOLD_SET_OFF if settings.gold_set is None else None


class TracesConfig(_Frozen):
    """OpenTelemetry traces in (``POST /v1/traces``): assembly and mapping (issue 20).

    Attributes:
        assembly: settle time, timeout and memory bounds of open traces
            (:class:`~service.traces.assembly.AssemblyLimits`: ``settle_s``, ``timeout_s``,
            ``max_open_traces``, ``max_spans_per_trace``, ``max_attribute_bytes``).
        mapping: how a trace becomes an event (:class:`~service.traces.mapping.TraceMapping`:
            JSON keys of questions and answers, passage-id metadata keys, the policy for
            several retrievers, the refusal attribute, guardrail values, role, tenant and
            channel keys).
        kafka_encoding: what the ``kafka`` source's topic holds: ``events`` (goldwatch JSON
            events), or OpenTelemetry traces as the Collector's ``kafka`` exporter writes them:
            ``otlp_proto``, ``otlp_json``, or ``otlp`` (each message detected: JSON when it
            starts with ``{``). With traces, "consumed" counts assembled traces.
        evaluations: emit goldwatch's verdicts (refusal, out of scope, shadow disagreement)
            on traced events as OpenTelemetry ``gen_ai.evaluation.result`` events over
            OTLP/HTTP (:class:`~service.traces.evaluations.EvaluationsConfig`: ``enabled``,
            off by default; ``endpoint``; ``timeout_s``).
        flush_on_stop: at a clean stop of ``goldwatch serve`` (SIGTERM, SIGINT), hand every
            open trace of ``POST /v1/traces`` out as it is (``flushed``: an event from the
            spans that came, or a dead letter) instead of keeping it in the state file, where
            the next start restores it and spans arriving after the restart join it. For a
            process whose state file does not outlive it (an ``emptyDir`` replaced by a
            rolling deploy, a replica scaled away): kept traces would be lost with the file.
            ``false`` (default): kept, as after a crash.
    """

    assembly: AssemblyLimits = AssemblyLimits()
    mapping: TraceMapping = TraceMapping()
    kafka_encoding: Literal["events", "otlp", "otlp_proto", "otlp_json"] = "events"
    evaluations: EvaluationsConfig = EvaluationsConfig()
    flush_on_stop: bool = False


class Settings(BaseSettings):
    """The whole goldwatch configuration (frozen).

    Attributes:
        gold_set: gold-set JSONL file (``None``: no gold set; serve and replay then run only
            what needs none — language, refusals, baseline drift, shadow — and say that the
            gold-set comparisons are off, :data:`GOLD_SET_OFF`). The embedded demo data is
            used only by ``goldwatch demo`` and ``--demo``.
        corpus: corpus JSONL file (``None``: none; the built-in retrievers need one).
        retrievers: declared retrievers; the built-in ``bm25``, ``tfidf``, ``dense``,
            ``hybrid`` (BM25 + dense) and ``hybrid-lexical`` (BM25 + TF-IDF) exist without
            being declared.
        eval: settings of ``goldwatch eval``.
        source, kafka, pipeline, events, state, api: the live path (``goldwatch serve`` and
            ``goldwatch replay``).
        analytics: the live analytics stages and drift detection.
        shadow: candidate retrievers shadow-run on live traffic, gold-set runs on a schedule.
        harvest: proposing real production questions as new gold questions.
        traces: OpenTelemetry traces posted to ``/v1/traces``, assembled into events.
    """

    model_config = SettingsConfigDict(
        frozen=True,
        extra="forbid",
        env_prefix="GOLDWATCH_",
        env_nested_delimiter="__",
    )

    gold_set: Path | None = None
    corpus: Path | None = None
    retrievers: tuple[RetrieverConfig, ...] = ()
    eval: EvalConfig = EvalConfig()
    source: SourceConfig = SourceConfig()
    kafka: KafkaSourceConfig | None = None
    pipeline: PipelineConfig = PipelineConfig()
    events: FieldMapping = FieldMapping()
    state: StateConfig = StateConfig()
    api: ApiConfig = ApiConfig()
    analytics: AnalyticsConfig = AnalyticsConfig()
    shadow: ShadowSettings = ShadowSettings()
    harvest: HarvestConfig = HarvestConfig()
    traces: TracesConfig = TracesConfig()

    _paths_not_empty = field_validator("gold_set", "corpus", mode="before")(_path_not_empty)

    @model_validator(mode="after")
    def _kafka_source_needs_section(self) -> Settings:
        if self.source.kind == "kafka" and self.kafka is None:
            raise ValueError("source.kind 'kafka' needs the 'kafka' section")
        return self

    @model_validator(mode="after")
    def _shadow_retrievers_known(self) -> Settings:
        fields = [
            (f"shadow.candidates[{i}].retriever", c.retriever_name)
            for i, c in enumerate(self.shadow.candidates)
        ]
        if self.shadow.production is not None:
            fields.append(("shadow.production", self.shadow.production))
        for where, name in fields:
            try:
                self.retriever(name)
            except KeyError as exc:
                raise ValueError(f"{where}: {exc.args[0]}") from None
        for where, name in fields:
            # with a gold set and no corpus every gold-set run failed at run time with a bare
            # EvalUsageError; without a gold set (the packaged demo's file: the demo command
            # adds both) gold-set runs are off and say so
            if (
                self.gold_set is not None
                and self.corpus is None
                and self._searches_corpus(name, ())
            ):
                raise ValueError(
                    f"{where}: {name!r} searches the corpus, and a gold set but no corpus is "
                    "configured: set corpus (or GOLDWATCH_CORPUS)"
                )
        return self

    def _searches_corpus(self, name: str, seen: tuple[str, ...]) -> bool:
        """Whether retriever ``name`` (known) is built on the corpus: ``bm25``, ``tfidf`` and
        ``dense`` are, a ``hybrid`` is when one of its members is (``seen``: the hybrids
        already followed, against a cycle)."""
        if name in seen:
            return False
        try:
            config = self.retriever(name)
        except KeyError:  # an unknown member: _unique_names reports it
            return False
        if config.kind == "hybrid":
            return any(self._searches_corpus(m, (*seen, name)) for m in config.members)
        return config.kind in ("bm25", "tfidf", "dense")

    @field_validator("retrievers")
    @classmethod
    def _unique_names(cls, value: tuple[RetrieverConfig, ...]) -> tuple[RetrieverConfig, ...]:
        names = [r.name for r in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate retriever names: {', '.join(dupes)}")
        for r in value:
            builtin_kind = "hybrid" if r.name in BUILTIN_HYBRIDS else r.name
            if r.name in BUILTIN_RETRIEVERS and r.kind != builtin_kind:
                raise ValueError(
                    f"retriever {r.name!r} would hide the built-in {r.name!r}; rename it"
                )
        known = set(names) | set(BUILTIN_RETRIEVERS)
        for r in value:
            if r.kind != "hybrid":
                continue
            unknown = [m for m in r.members if m not in known]
            if unknown:
                raise ValueError(f"hybrid {r.name!r} has unknown members: {', '.join(unknown)}")
            if r.name in r.members:
                raise ValueError(f"hybrid {r.name!r} lists itself as a member")
        return value

    def retriever(self, name: str) -> RetrieverConfig:
        """Return the retriever config called ``name``; built-ins get a default config.

        Raises:
            KeyError: ``name`` is neither declared nor built in.
        """
        for config in self.retrievers:
            if config.name == name:
                return config
        if name in BUILTIN_HYBRIDS:
            return RetrieverConfig(name=name, kind="hybrid", members=BUILTIN_HYBRIDS[name])
        if name in BUILTIN_RETRIEVERS:
            return RetrieverConfig(name=name, kind=name)  # type: ignore[arg-type]
        known = sorted({r.name for r in self.retrievers} | set(BUILTIN_RETRIEVERS))
        raise KeyError(f"unknown retriever {name!r}; known: {', '.join(known)}")

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """``Settings(...)`` reads keyword values over ``GOLDWATCH_*`` variables, and nothing
        else (no ``.env`` or secrets folder); the YAML file is a layer that
        :func:`~service.settings.loader.load_settings` puts under the environment
        (:func:`~service.settings.loader.layered_values`)."""
        return init_settings, env_settings
