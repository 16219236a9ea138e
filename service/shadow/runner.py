"""Run candidate retrievers on live questions in background threads, never on the live path.

:meth:`ShadowRunner.offer` decides per candidate, in O(log queue_size) and without blocking,
whether an event is shadow-run; the first gate that refuses names the skip reason:

1. ``filtered`` — the event's language (annotation), channel or user role is not in the
   candidate's filter (an empty filter admits all; a missing value fails a non-empty one);
2. ``not_sampled`` — ``h(salt, event_id) >= sample_rate``, ``h`` = the first 8 bytes of
   BLAKE2b as a fraction of 2^64: deterministic, so a replay samples the same events, and
   shared by all candidates, so their samples are paired;
3. ``no_production`` — the event carries no production ranking (``require_production``);
4. ``scrubbed`` — the question holds a personal-data placeholder (``<EMAIL>``, ``<PHONE>`` …:
   :func:`service.text.subject.has_placeholder`): production ranked the raw question, which
   the PII stage replaced in place before this stage (the raw text is no longer held
   anywhere), or a log scrubbed upstream; a candidate given the scrubbed text would be
   compared on another question (trial 15: the same retriever as production scored RBO
   0.51–0.96 on such events), so these are left out of every agreement figure, disagreement
   and listener (harvest's ``shadow_disagreement``), counted as this skip reason;
5. ``breaker_open`` — the candidate's circuit breaker refuses (:mod:`.breaker`). The breaker
   gates the queued backlog too: when it opens, every event queued for the candidate is
   dropped, never called, and counted under this reason (:meth:`ShadowRunner.evicted_by`), and
   a worker asks the breaker again before it starts a queued call. Without that, a replay
   (which queues a whole batch while the breaker is still closed) and a live backlog called a
   dead candidate once per queued event (trial 43: 294 timeouts of 2 s, 5 min 26 s for 300
   events); now at most ``failure_threshold + max_concurrency - 1`` calls (each up to
   ``1 + retries`` attempts) are made per opening. "``failure_threshold`` failures in a row"
   is counted in the order the calls finish, which with ``max_concurrency`` > 1 is not the
   event order: a candidate failing 1 call in k can be cut off when ``failure_threshold``
   ≤ k (three of its failures finishing back to back), a different number of events on
   each replay. A stop (:meth:`ShadowRunner.finish`) does not wait on an open breaker's calls;
6. ``rate_limited`` — its token bucket (``max_rps``) is empty;
7. ``queue_full`` / ``cpu_budget`` — its bounded queue (``queue_size``) is full and the event
   draws no lower than every queued one (below); ``cpu_budget`` while the runner holds back
   for the CPU budget (the shadow calls used more than ``max_cpu_share`` of a core over the
   last second), else ``queue_full``.

**A full queue keeps a sample of the stream.** Offered to a full queue, an event whose
sampling draw (the BLAKE2b fraction above) is lower than the highest of the queued ones takes
its place; the one it displaces is counted as skipped under the same reason (the stage moves it
from ``queued``: :meth:`ShadowRunner.evicted_by`; the annotation of its batch, written
already, still says ``queued``). So the events waiting are the lowest draws of those offered
while the queue was full: a uniform sample of those (the events run before it filled come
on top), not the first ``queue_size``. This matters
for a backlog (serve reading a log already on disk, trial 15): the pipeline runs through days
of events in seconds, the CPU budget holds the calls back after the first few, and the queue
used to keep the first batch (every compared event from the first day) while every later
offer was skipped as ``cpu_budget``; now the events compared come from the whole backlog.
For a given input which events are compared still depends on the timing (how many calls the
budget let through while the backlog was read); the report gives the event-time span the
compared events cover (``compared_from``/``compared_to``).

Each candidate has its own queue and ``max_concurrency`` worker threads, so a dead candidate
fills only its own queue. A worker calls ``retriever.search(question, k)``, retrying
``timeout``/``http_error`` failures up to ``retries`` times after a jittered backoff
(uniform in ``[b/2, b]``, ``b = backoff_s · 2^n``) that must fit in the remaining budget.

**Timeouts.** Python threads cannot be killed. Each call has a deadline (``timeout_s`` after
it starts, retries included); a watchdog thread checks deadlines every ``tick``
(``timeout_s / 10``, within 5–100 ms) and *abandons* a late call: it records the result as
``timeout``, tells the breaker, and starts a replacement worker so capacity is kept. The
abandoned thread runs on; when its call returns, its result is discarded and the thread
rejoins the pool if it is short of workers, or exits. Threads per candidate are bounded by
``max_concurrency + max_abandoned``: once ``max_abandoned`` calls hang, no replacement is
started, the queue fills and the breaker opens. Give remote retrievers their own client
timeout (``RetrieverConfig.timeout_s`` ≤ ``timeout_s``, ``retries: 0``) so abandoned
threads come back. (A ``future.result(timeout)`` guard would bound the wait the same way
but costs a thread hand-off per call; the watchdog keeps the happy path a direct call.)

**CPU budget.** Shadow calls run in this process's threads and share its GIL with the live
path: a candidate that answers fast (an in-process retriever, an HTTP endpoint failing at
once) costs the live path the CPU of every call (the HTTP client, the agreement maths). Each
worker measures its calls' thread CPU time (``time.thread_time``); the watchdog sums it over
a sliding window of about one second, and while it exceeds ``max_cpu_share`` (core-seconds
per second, default 0.05) the workers start no queued call (a call in progress finishes), and
offers only queue up, to ``queue_size``, then displace the higher draws (above; the others are
skipped as ``cpu_budget``). So shadowing can never
take more than about that share of a core from the live path, however fast or broken the
candidates are; a hung candidate costs no CPU and is bounded by its queue and breaker. At a
stop of the live service (:meth:`ShadowRunner.finish`) the budget is lifted: the live path
has ended, and the calls still queued run while the stop waits for them.

Results (:class:`ShadowResult`) go to a bounded buffer that the live path empties with
:meth:`ShadowRunner.drain`; when it is full the oldest result is dropped and counted.

**Backpressure (replays).** A replay has no live path to protect, so a runner built with
``backpressure=True`` never skips an event for the live path's sake: :meth:`ShadowRunner.offer`
waits for room in a full queue instead of skipping it as ``queue_full``, waits for a
token instead of skipping as ``rate_limited`` (``max_rps`` still protects the candidate's
service), ignores the CPU budget, and never drops a finished result. The skip reasons left
are the deterministic ones (``filtered``, ``not_sampled``, ``no_production``,
``scrubbed``) and
``breaker_open`` (a failing candidate). The breaker is the same as serve's (the same
settings), and its decisions depend on wall time (the cool-down) and on the order in which
concurrent calls finish, not on the event order: for a candidate that fails, which events
were called before it opened, and so its error and ``breaker_open`` counts, can differ
between two replays of the same input (the report's notice says so). "In a row" is in the order the
calls finish: a candidate that never fails ``failure_threshold`` times in a row in that order
is unaffected (its figures are the same on every replay), but with ``max_concurrency`` > 1
that is not the event order: a candidate failing 1 call in k, never ``failure_threshold`` in
a row in event order, can still be cut off when ``failure_threshold`` ≤ k, by a different
amount on each replay (a threshold above k, or ``max_concurrency: 1``, avoids it). Counting
in event order would make the count wait on the slowest earlier call (a hung one: up to
``timeout_s``), during which a fast-failing candidate's backlog would be called through:
not done.
"""

from __future__ import annotations

import hashlib
import heapq
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, NamedTuple

from typing_extensions import TypedDict  # served by the API (pydantic, Python < 3.12)

from service.events import QueryLogEvent, RetrievedPassage
from service.pacing import Backoff, TokenBucket
from service.retrievers.base import Retriever, RetrieverError
from service.shadow.agreement import Agreement, compare, unique
from service.shadow.breaker import BreakerState, CircuitBreaker
from service.shadow.config import CandidateConfig, ShadowConfig
from service.text.subject import has_placeholder

__all__ = [
    "ERROR_REASONS",
    "SKIP_REASONS",
    "CandidateConfig",
    "CutOff",
    "ShadowConfig",
    "ShadowResult",
    "ShadowRunner",
    "classify_error",
    "production_ranking",
    "sample_fraction",
]

SKIP_REASONS = (
    "filtered", "not_sampled", "no_production", "scrubbed", "cpu_budget", "breaker_open",
    "rate_limited", "queue_full",
)  # fmt: skip
#: Width of the CPU-budget window in seconds.
CPU_WINDOW_S = 1.0
ERROR_REASONS = ("timeout", "http_error", "bad_response", "exception")
_RETRIED = frozenset({"timeout", "http_error"})


class LaneStats(TypedDict):
    """One candidate's gauges from :meth:`ShadowRunner.stats` (read by the telemetry layer and
    the shadow report).

    Attributes:
        queue_depth: events waiting for a worker (≥ 0).
        workers: worker threads alive (≥ 0).
        abandoned_running: timed-out calls still running in an abandoned thread (≥ 0).
        abandoned_total: calls abandoned since start (a count).
        breaker_state: the circuit breaker's current state.
        breaker_opened_total: how many times the breaker has opened.
        breaker_cut_off_at: when (UTC, ISO 8601 seconds) the breaker first opened (``None``:
            never): from then the candidate's queued events were dropped, never called.
        cpu_throttled: the runner is holding back for the live path's CPU budget.
    """

    queue_depth: int
    workers: int
    abandoned_running: int
    abandoned_total: int
    breaker_state: BreakerState
    breaker_opened_total: int
    breaker_cut_off_at: str | None
    cpu_throttled: bool


@dataclass(frozen=True, slots=True)
class ShadowResult:
    """One finished shadow call.

    Attributes:
        candidate: candidate name.
        event_id, timestamp, question: from the event (the question as the pipeline holds
            it, after PII scrubbing: one that holds a placeholder is never run, skip
            ``scrubbed``, so this is the text production ranked).
        language, topic, channel, role: breakdown labels (``None`` when unknown).
        production: production's ranking (passage ids, best first), from the event.
        ranking: the candidate's ranking; ``()`` on error.
        agreement: RBO_ext of ``production`` and ``ranking`` whole (up to the candidate's
            ``k``), the other measures at ``min(k, len(production))``
            (:func:`~service.shadow.agreement.compare`); ``None`` on error or when production
            returned nothing.
        latency_s: call duration in seconds, retries included (≈ ``timeout_s`` on timeout).
        queue_s: seconds the event waited in the queue.
        attempts: calls started (1 + retries used).
        error: ``None`` or one of :data:`ERROR_REASONS`.
        trace_id: the event's ``trace_id`` (``None``: not from a trace).
        topic_unjudged: the topic stage gave the event no topic because no gold row is
            written in its language (``topic_unjudged_language``; ``topic`` is ``None``).
        known: the live-quality stage's verdict on the event when it was offered: ``True``
            (its ``known`` annotation names a gold question), ``False`` (the stage looked
            and found none), ``None`` (no ``known`` annotation: no quality stage). Harvest
            judges a disagreeing verdict's question by it, as it judges the event's own
            (:meth:`service.harvest.stage.HarvestStage.observe_shadow`), so which of the two
            comes first changes nothing.
    """

    candidate: str
    event_id: str
    timestamp: datetime
    question: str
    language: str | None
    topic: str | None
    channel: str | None
    role: str | None
    production: tuple[str, ...]
    ranking: tuple[str, ...]
    agreement: Agreement | None
    latency_s: float
    queue_s: float
    attempts: int
    error: str | None
    trace_id: str | None = None
    topic_unjudged: bool = False
    known: bool | None = None


def sample_fraction(event_id: str, salt: str = "") -> float:
    """Return the event's sampling draw in [0, 1): BLAKE2b-64 of ``salt\\0event_id`` / 2^64.

    >>> sample_fraction("e-1") == sample_fraction("e-1") != sample_fraction("e-2")
    True
    """
    digest = hashlib.blake2b(f"{salt}\0{event_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def production_ranking(event: QueryLogEvent) -> tuple[str, ...]:
    """Return production's passage ids, best first: by ``rank`` when every result has one,
    else by ``score`` descending when every result has one, else in logged order; repeated
    ids keep their best place."""
    retrieval = event.retrieval
    results: Sequence[RetrievedPassage] = retrieval.results if retrieval is not None else ()
    ranks = [rank for r in results if (rank := r.rank) is not None]  # each read once
    if len(ranks) == len(results):
        # logged best first (the usual case): a stable sort would change nothing
        if ranks != sorted(ranks):
            results = sorted(results, key=lambda r: r.rank or 0)
    elif all(r.score is not None for r in results):
        results = sorted(results, key=lambda r: -(r.score or 0.0))
    return tuple(dict.fromkeys([r.id for r in results]))  # unique(), as a tuple


class _BadResponse(Exception):
    """The retriever returned something that is not a list of scored passages."""


def classify_error(exc: BaseException) -> str:
    """Map a failure to one of :data:`ERROR_REASONS` (never reads the question).

    ``RetrieverError`` messages from :mod:`service.retrievers.http` name the cause: "timed
    out" → ``timeout``; "bad response"/"larger than" → ``bad_response``; anything else it
    reports (transport error, HTTP status) → ``http_error``. Other exceptions: ``exception``.
    """
    if isinstance(exc, TimeoutError):
        return "timeout"
    if isinstance(exc, _BadResponse):
        return "bad_response"
    if isinstance(exc, RetrieverError):
        message = str(exc)
        if "timed out" in message:
            return "timeout"
        if "bad response" in message or "larger than" in message:
            return "bad_response"
        return "http_error"
    return "exception"


def _ids(docs: Any) -> tuple[str, ...]:
    if not isinstance(docs, list | tuple):
        raise _BadResponse("not a list")
    try:
        return tuple(unique([str(doc.doc_id) for doc in docs]))
    except AttributeError:
        raise _BadResponse("an item has no doc_id") from None


class CutOff(NamedTuple):
    """A candidate's breaker history for its cut-off notice (:meth:`ShadowRunner.cut_offs`).

    Attributes:
        first: (UTC wall time ISO 8601, event_id, event time ISO 8601) of the failed call
            that first opened the breaker.
        errors_before: the failed calls recorded until then (that one included), by reason.
        state: the breaker's state now.
        opened_total: how many times it has opened.
        recovered: the same triple for the success that last closed it again (``None``:
            never, or it opened again since).
    """

    first: tuple[str, str, str]
    errors_before: dict[str, int]
    state: BreakerState
    opened_total: int
    recovered: tuple[str, str, str] | None


@dataclass(eq=False, slots=True)
class _Job:
    event: QueryLogEvent
    language: str | None
    topic: str | None
    enqueued: float
    draw: float = 0.0  # the event's sampling draw: a full queue keeps the lowest
    evicted: bool = False  # displaced from a full queue by a lower draw
    taken: bool = False  # a worker took it
    probe: bool = False  # admitted on a half-open breaker's probe slot
    topic_unjudged: bool = False  # no topic: no gold row in its language
    known: bool | None = None  # the quality stage's known verdict (ShadowResult.known)


@dataclass(eq=False, slots=True)
class _Ticket:
    job: _Job
    started: float
    deadline: float
    attempts: int = 0
    state: str = "running"  # running → done | abandoned


@dataclass(eq=False)
class _Lane:
    """One candidate's queue, workers and admission control (all fields under ``lock``)."""

    config: CandidateConfig
    retriever: Retriever
    breaker: CircuitBreaker
    bucket: TokenBucket | None
    lock: threading.Lock = field(default_factory=threading.Lock)
    jobs: deque[_Job] = field(default_factory=deque)  # FIFO, evicted ones left in place
    waiting: int = 0  # jobs neither taken nor evicted
    # (-draw, sequence, job) of the jobs queued (lazily: taken/evicted ones are skipped and
    # compacted away), so that a full queue finds its highest draw in O(log n)
    highest: list[tuple[float, int, _Job]] = field(default_factory=list)
    sequence: int = 0
    inflight: set[_Ticket] = field(default_factory=set)
    threads: list[threading.Thread] = field(default_factory=list)
    live: int = 0
    zombies: int = 0
    abandoned_total: int = 0
    stopping: bool = False
    # the first time the breaker opened: (wall-clock UTC ISO 8601, event_id, event time ISO)
    # of the failed call that opened it (``None``: never opened)
    cut_off: tuple[str, str, str] | None = None
    # failed calls recorded so far, by reason, and a copy of them when the breaker first
    # opened (the cut-off notice's "errors before": later probes' errors are not in it)
    errors_seen: dict[str, int] = field(default_factory=dict)
    errors_before: dict[str, int] = field(default_factory=dict)
    # the last time a success closed the breaker again (same triple as cut_off; ``None``:
    # never recovered, or opened again since)
    recovered: tuple[str, str, str] | None = None

    def __post_init__(self) -> None:
        self.ready = threading.Condition(self.lock)
        self.room = threading.Condition(self.lock)

    def put(self, job: _Job, wait: bool = False) -> tuple[bool, _Job | None]:
        """Queue ``job``; with ``wait``, block while the queue is full (until a worker takes
        a job or the lane stops). A full queue takes ``job`` in place of its job of highest
        draw when that draw is higher than ``job``'s (module docstring). Returns whether
        ``job`` was queued and the job it displaced (``None``: none). O(log queue_size)
        amortised."""
        with self.lock:
            size = self.config.queue_size
            while wait and not self.stopping and self.waiting >= size:
                self.room.wait()
            if self.stopping:
                return False, None
            out = None
            if self.waiting >= size:
                heap = self.highest
                while heap and (heap[0][2].taken or heap[0][2].evicted):
                    heapq.heappop(heap)
                if not heap or heap[0][2].draw <= job.draw:
                    return False, None
                out = heapq.heappop(heap)[2]
                out.evicted = True
                self.waiting -= 1
            self.jobs.append(job)
            self.waiting += 1
            self.sequence += 1
            heapq.heappush(self.highest, (-job.draw, self.sequence, job))
            self._compact()
            self.ready.notify()
            return True, out

    def purge(self) -> int:
        """Drop every queued job (the breaker opened: none of them is to be called); return
        how many. Wakes an offer waiting for room (``backpressure``)."""
        with self.lock:
            n = self.waiting
            for job in self.jobs:
                if not (job.taken or job.evicted):
                    job.evicted = True
            self.jobs.clear()
            self.highest.clear()
            self.waiting = 0
            self.room.notify_all()
            return n

    def drop(self, ticket: _Ticket) -> None:
        """Withdraw a started ticket whose call is not to be made (its breaker refused)."""
        with self.lock:
            if ticket.state == "running":
                ticket.state = "done"
                self.inflight.discard(ticket)

    def _compact(self) -> None:
        """Drop taken and evicted jobs from ``highest`` and evicted ones from ``jobs`` once
        they are more than half (bounded memory; amortised O(1) per put)."""
        slack = 2 * self.waiting + 64
        if len(self.highest) > slack:
            self.highest = [e for e in self.highest if not (e[2].taken or e[2].evicted)]
            heapq.heapify(self.highest)
        if len(self.jobs) > slack:
            self.jobs = deque(job for job in self.jobs if not job.evicted)

    def take(self, now: Callable[[], float], held: Callable[[], bool] = lambda: False,
             tick_s: float = 0.1) -> _Ticket | None:  # fmt: skip
        """Wait for a job and start it, or return ``None`` once the lane stops. While
        ``held()`` (the CPU budget) no job is started, also by a worker that was already
        waiting here when the budget ran out (it looks again every ``tick_s`` seconds)."""
        with self.lock:
            while not self.stopping and (not self.waiting or held()):
                self.ready.wait(tick_s if self.waiting else None)
            if self.stopping:
                return None
            job = self.jobs.popleft()
            while job.evicted:  # waiting > 0: a job neither taken nor evicted is queued
                job = self.jobs.popleft()
            job.taken = True
            self.waiting -= 1
            start = now()
            ticket = _Ticket(job, start, start + self.config.timeout_s)
            self.inflight.add(ticket)
            self.room.notify()
            return ticket

    def finish(self, ticket: _Ticket) -> bool:
        """Mark a returned call done (True), or see that it was abandoned (False)."""
        with self.lock:
            if ticket.state == "running":
                ticket.state = "done"
                self.inflight.discard(ticket)
                return True
            self.zombies -= 1
            return False

    def rejoin(self) -> bool:
        with self.lock:
            if self.stopping or self.live >= self.config.max_concurrency:
                return False
            self.live += 1
            return True

    def expire(self, now: float) -> list[_Ticket]:
        with self.lock:
            late = [t for t in self.inflight if t.deadline <= now]
            for ticket in late:
                ticket.state = "abandoned"
                self.inflight.discard(ticket)
            self.live -= len(late)
            self.zombies += len(late)
            self.abandoned_total += len(late)
            return late

    def vacancies(self) -> int:
        """Reserve and return the worker threads to start now."""
        cap = self.config.max_concurrency + self.config.max_abandoned
        with self.lock:
            wanted = 0
            while (
                not self.stopping
                and self.live < self.config.max_concurrency
                and self.live + self.zombies < cap
            ):
                self.live += 1
                wanted += 1
            return wanted


Outcome = tuple[tuple[str, ...], str | None]


class ShadowRunner:
    """Shadow-run candidates on offered events, in background worker threads.

    Workers start at construction; call :meth:`close` (or use ``with``) to stop them.

    Args:
        config: the shadow section.
        retrievers: ``{retriever name: Retriever}`` covering every candidate's
            :attr:`CandidateConfig.retriever_name` (e.g. from ``build_retrievers``).
        clock: monotonic seconds, for deadlines, breakers and buckets.
        backpressure: replay mode (see the module docstring): :meth:`offer` waits for queue
            room and rate-limit tokens instead of skipping, the CPU budget is off and no
            result is dropped. Never on the live path: :meth:`offer` may then block.

    Raises:
        KeyError: a candidate's retriever is missing from ``retrievers``.

    Thread safety: :meth:`offer`/:meth:`submit` and :meth:`drain` may be called from any
    thread; neither waits for a candidate.
    """

    def __init__(
        self,
        config: ShadowConfig,
        retrievers: Mapping[str, Retriever],
        clock: Callable[[], float] = time.monotonic,
        backpressure: bool = False,
    ) -> None:
        self.config = config
        self.backpressure = backpressure
        self._clock = clock
        self._lanes: dict[str, _Lane] = {}
        for c in config.candidates:
            if c.retriever_name not in retrievers:
                raise KeyError(f"shadow candidate {c.name!r}: no retriever {c.retriever_name!r}")
            breaker = CircuitBreaker(c.failure_threshold, c.cooldown_s, c.half_open_probes, clock)
            bucket = TokenBucket(c.max_rps, c.burst, clock=clock) if c.max_rps is not None else None
            self._lanes[c.name] = _Lane(c, retrievers[c.retriever_name], breaker, bucket)
        self._results: deque[ShadowResult] = deque()
        self._results_lock = threading.Lock()
        self.cpu_s = 0.0  # thread CPU seconds of every shadow call so far (under _results_lock)
        self._cpu_marks: deque[tuple[float, float]] = deque()  # (monotonic s, cpu_s)
        self.cpu_throttled = False
        self._budget_lifted = False  # finish(): the live path the budget protects has ended
        self._settling = False  # settle(): lifted while a finished input's calls drain
        self.results_dropped = 0
        self._dropped_by: dict[str, int] = {}
        self._evicted_by: dict[str, dict[str, int]] = {}  # under _results_lock
        self._stop = threading.Event()
        timeouts = [c.timeout_s for c in config.candidates] or [1.0]
        self.tick_s = min(0.1, max(0.005, min(timeouts) / 10))
        for lane in self._lanes.values():
            self._staff(lane)
        self._watchdog = threading.Thread(target=self._watch, name="shadow-watchdog", daemon=True)
        self._watchdog.start()

    @property
    def candidates(self) -> tuple[str, ...]:
        """The candidate names, in configuration order."""
        return tuple(self._lanes)

    def __enter__(self) -> ShadowRunner:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def offer(self, event: QueryLogEvent, annotations: Mapping[str, Any]) -> dict[str, str]:
        """Queue ``event`` for each candidate that admits it; never blocks (except with
        ``backpressure``, where it waits for queue room and rate-limit tokens).

        Returns:
            ``{candidate: "queued" | skip reason}`` (reasons: :data:`SKIP_REASONS`).
        """
        if not self._lanes:
            return {}
        language, topic = annotations.get("language"), annotations.get("topic")
        role = event.user.role if event.user is not None else None
        draw = sample_fraction(event.event_id, self.config.sample_salt)
        has_production = event.retrieval is not None and bool(event.retrieval.results)
        scrubbed = has_placeholder(event.question)  # not the text production ranked
        outcomes: dict[str, str] = {}
        throttled = self.cpu_throttled and not self.backpressure
        wait = self.backpressure
        for name, lane in self._lanes.items():
            c = lane.config
            if (
                (c.languages and language not in c.languages)
                or (c.channels and event.channel not in c.channels)
                or (c.roles and role not in c.roles)
            ):
                outcomes[name] = "filtered"
            elif draw >= c.sample_rate:
                outcomes[name] = "not_sampled"
            elif self.config.require_production and not has_production:
                outcomes[name] = "no_production"
            elif scrubbed:
                outcomes[name] = "scrubbed"
            elif (admitted := lane.breaker.admit()) is None:
                outcomes[name] = "breaker_open"
            elif lane.bucket is not None and not self._take_token(lane.bucket):
                lane.breaker.release()
                outcomes[name] = "rate_limited"
            else:
                job = _Job(
                    event,
                    _label(language),
                    _label(topic),
                    self._clock(),
                    draw,
                    probe=admitted == "probe",
                    topic_unjudged=annotations.get("topic_unjudged_language") is True,
                    known=bool(annotations["known"]) if "known" in annotations else None,
                )
                queued, out = lane.put(job, wait=wait)
                full = "cpu_budget" if throttled else "queue_full"
                if not queued:
                    lane.breaker.release()
                    outcomes[name] = full
                    continue
                outcomes[name] = "queued"
                if out is not None:  # displaced: it never runs
                    if out.probe:  # its probe slot only (a review: closed-state jobs gave
                        lane.breaker.release()  # back slots they never held)
                    with self._results_lock:
                        counts = self._evicted_by.setdefault(name, {})
                        counts[full] = counts.get(full, 0) + 1
        return outcomes

    def evicted_by(self) -> dict[str, dict[str, int]]:
        """Queued events never called since the start, per candidate and skip reason:
        displaced from a full queue (``cpu_budget`` or ``queue_full``) or dropped for an open
        breaker (``breaker_open``): ``{candidate: {reason: n}}`` (module docstring)."""
        with self._results_lock:
            return {name: dict(counts) for name, counts in self._evicted_by.items()}

    def _count_dropped(self, lane: _Lane, n: int) -> None:
        """Count ``n`` queued events of ``lane`` dropped for its open breaker (skip reason
        ``breaker_open``, moved from ``queued`` by the stage: :meth:`evicted_by`)."""
        if n > 0:
            with self._results_lock:
                counts = self._evicted_by.setdefault(lane.config.name, {})
                counts["breaker_open"] = counts.get("breaker_open", 0) + n

    def _take_token(self, bucket: TokenBucket) -> bool:
        """Take a rate-limit token; with ``backpressure`` wait for one (until closed)."""
        while not bucket.try_take():
            if not self.backpressure or self._stop.wait(min(1.0, 1.0 / bucket.rate)):
                return False
        return True

    def submit(self, event: QueryLogEvent, annotations: Mapping[str, Any]) -> bool:
        """Like :meth:`offer`; returns whether any candidate queued the event."""
        return "queued" in self.offer(event, annotations).values()

    def drain(self) -> list[ShadowResult]:
        """Return and clear the finished results, oldest first."""
        with self._results_lock:
            results = list(self._results)
            self._results.clear()
        return results

    def results_dropped_by(self) -> dict[str, int]:
        """``results_dropped`` per candidate, since the start: ``{candidate: n}``."""
        with self._results_lock:
            return dict(self._dropped_by)

    def wait_idle(self, timeout: float = 30.0, skip_open: bool = False) -> bool:
        """Wait up to ``timeout`` seconds until no candidate has a queued or running call
        (abandoned calls do not count; with ``skip_open``, neither do a candidate's whose
        breaker is open or half-open: its queue was dropped, its calls in flight, a probe
        included, are given up); return
        whether that happened. Never called on the live path (replays that end use it to
        collect the last results)."""
        deadline = time.monotonic() + timeout
        while True:
            busy = False
            for lane in self._lanes.values():
                if skip_open and lane.breaker.state != "closed":
                    continue
                with lane.lock:
                    busy = busy or bool(lane.waiting) or bool(lane.inflight)
            if not busy:
                return True
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.005)

    def finish(self, timeout: float) -> bool:
        """At a stop of the live service (its consumer and API done): lift the CPU budget,
        which protects a live path that has ended, and wait up to ``timeout`` seconds until
        no candidate has a queued or running call (:meth:`wait_idle`); return whether that
        happened. The finished results stay drainable; call :meth:`close` next (what is still
        queued or running is then given up: the shadow stage counts it as ``interrupted``).
        A candidate whose breaker is open or half-open is not waited for (trial 43: a stop
        waited 18 s on calls to a dead candidate): its queue was dropped when it opened, and
        its calls still in flight (a probe included) are given up at once."""
        self._budget_lifted = True
        self.cpu_throttled = False
        return self.wait_idle(timeout, skip_open=True)

    def settle(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """A finite input has been read to its end while the service goes on (its API, and
        HTTP ingest, which may still offer events): lift the CPU budget — the consumer it
        protects has no more events — until no candidate has a queued or running call
        (:meth:`wait_idle`), ``timeout`` seconds have passed or ``stop`` is set, then put it
        back (unless :meth:`finish` lifted it for good meanwhile), the window starting
        afresh. Returns whether the runner went idle. Nothing is given up: what is still
        queued runs on under the budget.

        Without this, the end of input waited for calls the budget held back (5 % of a core:
        a few calls a second), gave up after 30 s with hundreds still queued, and their
        results were folded in only at the stop, whose suggestions the restart then listed
        (trial 41: 1,000 suggested at the end of input, 1,015 after a clean restart)."""
        deadline = time.monotonic() + timeout
        self._settling = True
        self.cpu_throttled = False
        try:
            while True:
                left = deadline - time.monotonic()
                if self.wait_idle(max(0.0, min(left, 0.5))):
                    return True
                if left <= 0.0 or (stop is not None and stop.is_set()):
                    return False
        finally:
            with self._results_lock:
                used = self.cpu_s
            self._cpu_marks.clear()
            self._cpu_marks.append((time.monotonic(), used))
            self._settling = False

    def cut_offs(self) -> dict[str, CutOff]:
        """The candidates whose breaker has opened, each with its :class:`CutOff` (when it
        first opened, the errors recorded until then, its state now)."""
        out = {}
        for name, lane in self._lanes.items():
            with lane.lock:
                cut_off, errors, recovered = lane.cut_off, dict(lane.errors_before), lane.recovered
            if cut_off is not None:
                out[name] = CutOff(cut_off, errors, lane.breaker.state,
                                   lane.breaker.opened_total, recovered)  # fmt: skip
        return out

    def busy_calls(self) -> int:
        """Calls queued or running over all candidates (abandoned ones not counted), ≥ 0."""
        total = 0
        for lane in self._lanes.values():
            with lane.lock:
                total += lane.waiting + len(lane.inflight)
        return total

    def stats(self) -> dict[str, LaneStats]:
        """Return per candidate its :class:`LaneStats`: ``queue_depth``, ``workers``,
        ``abandoned_running``, ``abandoned_total``, ``breaker_state``,
        ``breaker_opened_total``, ``breaker_cut_off_at``, and the runner's ``cpu_throttled``
        (bool)."""
        out: dict[str, LaneStats] = {}
        for name, lane in self._lanes.items():
            with lane.lock:
                queue_depth, workers = lane.waiting, lane.live
                abandoned_running, abandoned_total = lane.zombies, lane.abandoned_total
                cut_off = lane.cut_off
            out[name] = LaneStats(
                queue_depth=queue_depth,
                workers=workers,
                abandoned_running=abandoned_running,
                abandoned_total=abandoned_total,
                breaker_state=lane.breaker.state,
                breaker_opened_total=lane.breaker.opened_total,
                breaker_cut_off_at=cut_off[0] if cut_off is not None else None,
                cpu_throttled=self.cpu_throttled,
            )
        return out

    def close(self, timeout: float = 5.0) -> bool:
        """Stop the workers; wait up to ``timeout`` seconds. Queued events are dropped
        uncounted (the live service's stop counts them, and calls still running, as
        ``interrupted``: :meth:`ShadowStage.finish <service.shadow.stage.ShadowStage.finish>`)
        and later offers are refused as ``queue_full``; results not yet drained stay
        drainable.

        Returns:
            True when every worker except abandoned (hung) ones has exited. Threads are
            daemons: a hung call never blocks interpreter exit.
        """
        deadline = time.monotonic() + timeout
        self._stop.set()
        for lane in self._lanes.values():
            with lane.lock:
                lane.stopping = True
                lane.jobs.clear()
                lane.highest.clear()
                lane.waiting = 0
                lane.ready.notify_all()
                lane.room.notify_all()
        self._watchdog.join(max(0.0, deadline - time.monotonic()))
        clean = True
        for lane in self._lanes.values():
            for thread in lane.threads:
                thread.join(max(0.0, deadline - time.monotonic()))
            alive = sum(thread.is_alive() for thread in lane.threads)
            clean = clean and alive <= lane.zombies
        return clean

    def _staff(self, lane: _Lane) -> None:
        for _ in range(lane.vacancies()):
            number = len(lane.threads)
            thread = threading.Thread(
                target=self._work, args=(lane,), name=f"shadow-{lane.config.name}-{number}"
            )
            thread.daemon = True
            # started before it is published: close() joins every thread in lane.threads,
            # and joining one not yet started raises RuntimeError (a watchdog replacing a
            # hung worker while the service stops)
            thread.start()
            lane.threads = [t for t in lane.threads if t.is_alive()] + [thread]

    def _check_cpu(self) -> None:
        """Update :attr:`cpu_throttled` from the CPU used over the last ~second."""
        budget = self.config.max_cpu_share
        if budget is None or self.backpressure or self._budget_lifted or self._settling:
            return
        now = time.monotonic()
        with self._results_lock:
            used = self.cpu_s
        marks = self._cpu_marks
        marks.append((now, used))
        while len(marks) > 2 and now - marks[1][0] >= CPU_WINDOW_S:
            marks.popleft()
        start, used_then = marks[0]
        elapsed = max(now - start, CPU_WINDOW_S / 10)
        over = (used - used_then) / elapsed > budget
        # finish() or settle() may have run since
        self.cpu_throttled = over and not self._budget_lifted and not self._settling

    def _watch(self) -> None:
        while not self._stop.wait(self.tick_s):
            self._check_cpu()
            now = self._clock()
            for lane in self._lanes.values():
                for ticket in lane.expire(now):
                    self._record(lane, ticket, ((), "timeout"), now)
                self._staff(lane)

    def _held(self) -> bool:
        return self.cpu_throttled

    def _work(self, lane: _Lane) -> None:
        while True:
            while self.cpu_throttled and not self._stop.is_set():
                self._stop.wait(self.tick_s)  # over the CPU budget: queued jobs wait too
            ticket = lane.take(self._clock, self._held, self.tick_s)
            if ticket is None:
                return
            if not ticket.job.probe:  # admitted when queued: the breaker may have opened since
                admitted = lane.breaker.admit()
                if admitted is None:  # never called: counted as skipped breaker_open
                    lane.drop(ticket)
                    self._count_dropped(lane, 1)
                    continue
                ticket.job.probe = admitted == "probe"
            started_cpu = time.thread_time()  # the call and the agreement maths
            outcome = self._call(lane, ticket)
            finished = lane.finish(ticket)
            if finished:
                self._record(lane, ticket, outcome, self._clock())
            spent = time.thread_time() - started_cpu
            with self._results_lock:
                self.cpu_s += spent
            if not finished and not lane.rejoin():
                return

    def _call(self, lane: _Lane, ticket: _Ticket) -> Outcome:
        c = lane.config
        while True:
            ticket.attempts += 1
            try:
                return _ids(lane.retriever.search(ticket.job.event.question, c.k)), None
            except Exception as exc:  # a candidate's failure must never escape a worker
                reason = classify_error(exc)
            delay = Backoff(c.backoff_s, jitter=True).delay(ticket.attempts - 1)
            budget = ticket.deadline - self._clock()
            if reason not in _RETRIED or ticket.attempts > c.retries or delay >= budget:
                return (), reason
            time.sleep(delay)

    def _record(self, lane: _Lane, ticket: _Ticket, outcome: Outcome, now: float) -> None:
        ranking, error = outcome
        job, event = ticket.job, ticket.job.event
        if error is None:
            before = lane.breaker.state
            lane.breaker.record_success()
            if before == "half_open" and lane.breaker.state == "closed":  # it recovered
                wall = datetime.now(UTC).isoformat(timespec="seconds")
                with lane.lock:
                    lane.recovered = (wall, event.event_id, event.timestamp.isoformat())
        else:
            opened = lane.breaker.opened_total
            lane.breaker.record_failure()
            with lane.lock:
                lane.errors_seen[error] = lane.errors_seen.get(error, 0) + 1
            if lane.breaker.opened_total > opened:  # it opened on this failure: the backlog
                wall = datetime.now(UTC).isoformat(timespec="seconds")
                with lane.lock:  # queued for it is dropped, never called
                    lane.recovered = None
                    if lane.cut_off is None:
                        lane.cut_off = (wall, event.event_id, event.timestamp.isoformat())
                        lane.errors_before = dict(lane.errors_seen)
                self._count_dropped(lane, lane.purge())
        production = production_ranking(event)
        agreement = None
        if error is None and production:
            cited = event.answer.citations if event.answer is not None else ()
            # RBO on both rankings whole (production's as logged, the candidate's up to its
            # k), the set measures at the depth both have: agreement.compare.
            depth = min(lane.config.k, len(production))
            agreement = compare(
                production, ranking[: lane.config.k], depth, p=self.config.rbo_p, cited=cited
            )
        result = ShadowResult(
            candidate=lane.config.name,
            event_id=event.event_id,
            timestamp=event.timestamp,
            question=event.question,
            language=job.language,
            topic=job.topic,
            channel=event.channel,
            role=event.user.role if event.user is not None else None,
            production=production,
            ranking=ranking,
            agreement=agreement,
            latency_s=max(0.0, now - ticket.started),
            queue_s=max(0.0, ticket.started - job.enqueued),
            attempts=ticket.attempts,
            error=error,
            trace_id=event.trace_id,
            topic_unjudged=job.topic_unjudged,
            known=job.known,
        )
        with self._results_lock:
            if len(self._results) >= self.config.max_results and not self.backpressure:
                lost = self._results.popleft().candidate
                self.results_dropped += 1
                self._dropped_by[lost] = self._dropped_by.get(lost, 0) + 1
            self._results.append(result)


def _label(value: Any) -> str | None:
    return value if isinstance(value, str) else None
