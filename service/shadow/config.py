"""Settings of shadow evaluation: the candidates and their limits (frozen pydantic models).

Apart from :mod:`service.shadow.runner` so that the settings model loads without the runner's
threads and retrievers (``service.settings`` imports this module only).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

__all__ = ["CandidateConfig", "ShadowConfig"]

_NAME = r"^[A-Za-z0-9_.\-]+$"


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CandidateConfig(_Frozen):
    """One candidate retriever shadow-run on live traffic.

    Attributes:
        name: the candidate's name (reports, metric label ``retriever``).
        retriever: the retriever to run (a ``RetrieverConfig`` name or built-in); default
            ``name``.
        k: passages asked for; RBO is measured on production's ranking as logged and the
            candidate's k passages whole (RBO_ext for uneven lengths), overlap, Jaccard,
            Kendall's tau, top-1 and citation recall at ``min(k, production depth)``.
        sample_rate: share of events run, in [0, 1] (deterministic per ``event_id``; on the
            OpenTelemetry path that is the trace id, so the same traffic sent as JSONL events
            and as traces samples different events).
        timeout_s: deadline of one shadow call in seconds, retries included.
        max_concurrency: worker threads (parallel calls).
        max_abandoned: hung calls tolerated before capacity shrinks (threads stay bounded by
            ``max_concurrency + max_abandoned``).
        queue_size: events waiting for a worker; a full queue keeps those of lowest sampling
            draw (a uniform sample of those offered while it is full), the others are skipped as
            ``queue_full`` (``cpu_budget`` while over the CPU budget).
        max_rps: calls per second admitted (token bucket), ``None``: unlimited.
        burst: token-bucket size; default one second's worth.
        languages, channels, roles: run only on these (empty: all).
        retries: retries of ``timeout``/``http_error`` failures within ``timeout_s``.
        backoff_s: first retry backoff in seconds (doubles, jittered).
        failure_threshold: the circuit breaker's N, the same in serve and replay: it opens
            after N failed calls in a row, counted in the order the calls finish (with
            ``max_concurrency`` > 1 not the event order: a candidate failing 1 call in k can
            be cut off when N ≤ k, and by how much varies between replays). When it opens,
            the events queued for the candidate are dropped uncalled (skip
            ``breaker_open``), so a candidate failing every call costs about
            ``ceil(N / max_concurrency) * timeout_s`` seconds per opening (at most
            ``N + max_concurrency - 1`` calls; a call is up to ``1 + retries`` attempts
            within its ``timeout_s``), then one probe (≤ ``timeout_s``) per ``cooldown_s``.
        cooldown_s: seconds an open breaker refuses calls before half-opening (see
            ``failure_threshold``).
        half_open_probes: calls (M) admitted while half-open (see ``failure_threshold``).
    """

    name: str = Field(min_length=1, max_length=64, pattern=_NAME)
    retriever: str | None = Field(default=None, min_length=1, max_length=64, pattern=_NAME)
    k: int = Field(default=10, ge=1, le=1_000)
    sample_rate: float = Field(default=1.0, ge=0, le=1)
    timeout_s: float = Field(default=2.0, gt=0, le=300)
    max_concurrency: int = Field(default=2, ge=1, le=64)
    max_abandoned: int = Field(default=4, ge=0, le=256)
    queue_size: int = Field(default=1_000, ge=1, le=1_000_000)
    max_rps: float | None = Field(default=None, gt=0)
    burst: float | None = Field(default=None, ge=1)
    languages: frozenset[str] = frozenset()
    channels: frozenset[str] = frozenset()
    roles: frozenset[str] = frozenset()
    retries: int = Field(default=0, ge=0, le=5)
    backoff_s: float = Field(default=0.05, ge=0, le=10)
    failure_threshold: int = Field(default=5, ge=1, le=10_000)
    cooldown_s: float = Field(default=30.0, gt=0, le=86_400)
    half_open_probes: int = Field(default=1, ge=1, le=100)

    @property
    def retriever_name(self) -> str:
        """The retriever this candidate runs."""
        return self.retriever or self.name


class ShadowConfig(_Frozen):
    """Shadow evaluation (no candidates: off).

    Attributes:
        candidates: the candidates, unique names.
        rbo_p: RBO persistence ``p`` in (0, 1).
        sample_salt: mixed into the sampling hash (change it to draw another sample).
        require_production: skip events without a production ranking (nothing to compare).
        max_results: finished results buffered until drained; beyond, the oldest is dropped.
        max_disagreements: lowest-RBO events kept per candidate in the report.
        max_label_values: languages/topics broken down per candidate (the rest: ``other``;
            a question without a label is ``unjudged_language``, given no topic as no gold
            row is written in its language, or ``not_detected``, the detection did not run:
            two buckets on top of these, never merged into ``other``).
        max_cpu_share: CPU core-seconds per second all shadow calls together may use
            (``None``: unlimited, e.g. a benchmark of shadow throughput); beyond it no call
            starts, offers wait in the candidate's queue (``queue_size``), and those a full
            queue does not keep are skipped as ``cpu_budget``. Lifted at a stop and, for up
            to 120 s, at the end of a file or stdin source while the calls still queued
            finish (no live events are left to protect).
    """

    candidates: tuple[CandidateConfig, ...] = ()
    rbo_p: float = Field(default=0.9, gt=0, lt=1)
    max_cpu_share: float | None = Field(default=0.05, gt=0, le=64)
    sample_salt: str = Field(default="", max_length=256)
    require_production: bool = True
    max_results: int = Field(default=10_000, ge=1, le=10_000_000)
    max_disagreements: int = Field(default=20, ge=0, le=10_000)
    max_label_values: int = Field(default=32, ge=1, le=1_000)

    @field_validator("candidates")
    @classmethod
    def _unique(cls, value: tuple[CandidateConfig, ...]) -> tuple[CandidateConfig, ...]:
        names = [c.name for c in value]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"duplicate shadow candidate names: {', '.join(dupes)}")
        return value
