"""What one goldwatch process runs: the engine, its source and the consumer thread.

Process model (see ``style.md``): one uvicorn worker serves the API; one consumer thread,
started and stopped by the app's lifespan, runs the poll loop. All Kafka calls stay on that
thread. HTTP ingest shares the engine (and its lock) with the loop.

The consumer thread never dies on a fault it can outlive: a broker that is unreachable at
start or goes away, or a state store that cannot be written, is logged and retried with
capped exponential backoff while the API keeps serving (``/readyz`` says not-ready); nothing
is committed past what was applied and checkpointed.
"""

from __future__ import annotations

import ctypes
import errno
import gc
import hashlib
import importlib
import logging
import os
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prometheus_client import CollectorRegistry

from consumers.append_only import append_whole, open_append, prepare_tail
from consumers.base import DeadLetter, Origin, RawMessage, Source
from consumers.engine import Engine, Outcome
from consumers.errors import GoldwatchConsumerError
from consumers.file_source import FileSource, dead_letter_line
from consumers.loop import make_decoder, run
from service import __version__
from service.acl import AccessPolicy
from service.analytics import (
    TOPIC_IDENTITY_KEY,
    Analytics,
    build_analytics,
    pseudonymiser,
    topic_identity,
)
from service.corpus import Corpus, DataFileError, load_corpus
from service.detector_quality import quality_gauges
from service.embeddings import shared_embedder
from service.goldset import GoldSet, load_gold_set
from service.harvest import HarvestStage, MemoryCandidates, StateStoreCandidates
from service.harvest.config import REASONS
from service.known import KnownQuestionIndex
from service.pii import UNKEYED
from service.pipeline import Batch, Pipeline, Stage
from service.quality import LiveQualityStage
from service.retrievers.registry import build_retrievers
from service.settings import Settings, gold_set_notice
from service.shadow.gold_runs import GoldRuns
from service.shadow.runner import ShadowRunner
from service.shadow.stage import ShadowStage
from service.state import StateError, StateStore
from service.telemetry import (
    PRODUCTION,
    AnalyticsMetrics,
    HarvestMetrics,
    ShadowMetrics,
    build_analytics_metrics,
    build_harvest_metrics,
    build_metrics,
    build_shadow_metrics,
    build_trace_metrics,
)

log = logging.getLogger(__name__)

HTTP_SOURCE = "http"
MAX_BACKOFF_S = 30.0
LOCK_TIMEOUT_S = 5.0


class EngineBusy(RuntimeError):
    """The pipeline stayed busy longer than the API waits; the client should retry (503)."""

    #: The ``error`` code of the HTTP answer.
    code = "busy"


class IngestUnavailable(EngineBusy):
    """HTTP ingest could not make a request durable (the state or dead-letter file cannot be
    written: disk full, read-only); nothing of it is acknowledged and the client should
    retry (503). The message names the file and the system's reason, never the input."""

    code = "unavailable"


def load_stage(spec: str) -> Stage:
    """Build a custom stage from ``module:Class`` (called with no arguments).

    Raises:
        ValueError: the spec is malformed or the object cannot be imported or built.
    """
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"stage {spec!r}: expected 'module:Class'")
    try:
        factory = getattr(importlib.import_module(module_name), attr)
        return factory()  # type: ignore[no-any-return]
    except (ImportError, AttributeError, TypeError) as exc:
        raise ValueError(f"stage {spec!r} cannot be built: {type(exc).__name__}") from None


def build_pipeline(settings: Settings, extra: Sequence[Stage] = ()) -> Pipeline:
    """Return the live pipeline: dedup → built-in stages → custom stages → count.

    Raises:
        ValueError: a custom stage cannot be built, or ``analytics.pii_key_file`` cannot be
            read or holds too short a key.
    """
    custom = [load_stage(spec) for spec in settings.pipeline.extra_stages]
    scrub = settings.analytics.enabled and settings.analytics.pii  # ids as the other fields
    keyed = pseudonymiser(settings.analytics) if scrub else UNKEYED
    return Pipeline.default(settings.pipeline, extra=[*extra, *custom], pseudonymise_ids=scrub,
                            pseudonymiser=keyed)  # fmt: skip


@dataclass
class Live:
    """The live pipeline with its analytics, shadow stage and the batch observer that
    exports them.

    Attributes:
        pipeline: dedup → analytics → shadow → custom stages → count.
        analytics: the analytics stages and their labels.
        analytics_metrics: their metrics (``None`` when analytics are off).
        shadow: the shadow stage (``None`` without candidates); its runner's worker threads
            run until :meth:`close`.
        shadow_metrics: shadow, gold-run, known-question and ACL metrics.
        quality: known questions scored live, ACL checks (``None`` without a gold set).
    """

    pipeline: Pipeline
    analytics: Analytics
    analytics_metrics: AnalyticsMetrics | None
    shadow: ShadowStage | None = None
    shadow_metrics: ShadowMetrics | None = None
    quality: LiveQualityStage | None = None
    harvest: HarvestStage | None = None
    harvest_metrics: HarvestMetrics | None = None
    closers: list[Any] = field(default_factory=list)

    def observe(self, batch: Batch) -> None:
        """Export one batch's analytics (counters per batch, drift gauges from the report)
        and what the shadow stage collected since the last batch."""
        if self.analytics_metrics is not None:
            self.analytics_metrics.observe_annotations(batch.annotations)
            if self.analytics.drift is not None:
                self.analytics_metrics.observe_drift(self.analytics.drift.report())
        self.export_shadow()

    def export_shadow(self) -> None:
        """Hand the shadow and live-quality stages' pending observations to the metrics."""
        if self.shadow_metrics is None:
            return
        if self.shadow is not None:
            self.shadow_metrics.observe_shadow(self.shadow.pending_observations())
        if self.quality is not None:
            self.shadow_metrics.observe_quality(self.quality.pending_observations())
        if self.harvest is not None and self.harvest_metrics is not None:
            self.harvest_metrics.observe(self.harvest.pending_observations())

    def collect_shadow(self) -> None:
        """Fold in shadow results finished since the last batch and export them (call with
        the engine lock held: the stage is not thread-safe)."""
        if self.shadow is not None:
            self.shadow.collect()
            self.export_shadow()

    def finish(self, timeout_s: float = 30.0) -> None:
        """End of a replay: wait for the shadow calls in flight, fold them in, publish the
        harvested suggestions, export."""
        if self.shadow is not None:
            self.shadow.flush(timeout_s)
        if self.harvest is not None:
            self.harvest.flush(force=True)
        self.export_shadow()

    def close(self) -> None:
        """Stop the shadow runner's worker threads, publish the last suggestions, close the
        suggestion sinks (call before closing the state store)."""
        if self.shadow is not None:
            self.shadow.runner.close()
        if self.harvest is not None:
            self.harvest.flush(force=True)
        for closer in self.closers:
            try:
                closer()
            except Exception as exc:  # closing must not hide the real shutdown
                log.warning("closing %s failed: %s", closer, type(exc).__name__)


def freeze_heap() -> None:
    """Move everything allocated so far (models, indexes, the gold set) out of the garbage
    collector's reach (``gc.freeze``): full collections then walk only what the live path
    allocates, not the start-up heap — about 25 µs/event less on novel traffic."""
    gc.collect()
    gc.freeze()


#: glibc ``mallopt`` parameter number of ``M_MMAP_THRESHOLD`` (``<malloc.h>``).
_M_MMAP_THRESHOLD = -3
#: Allocations from this size up get their own ``mmap`` and go back to the system when freed.
MMAP_THRESHOLD_BYTES = 128 * 1024


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Keep glibc's ``mmap`` threshold at ``threshold`` bytes (its default) instead of letting
    it rise; return whether it was set (``False`` off glibc, e.g. musl or macOS).

    glibc raises the threshold to the size of each ``mmap``-ed block that is freed (up to
    32 MiB), so after the first checkpoint the service's large, short-lived buffers (the
    checkpoint's JSON, 0.3-1.4 MB each second; Kafka fetch responses, up to ~5 MB) are carved
    from the heap between long-lived allocations, and the holes they leave are not returned.
    Soak, 200,000 events at 2,000/s, same probe: the heap grew 81 -> 163 MB (free inside it
    5 -> 37 MB) and the end RSS was 454-463 MB; with the threshold fixed the heap grew 72 ->
    102 MB (free 3-8 MB), RSS 432 MB at the end (``MALLOC_MMAP_THRESHOLD_=131072``, the same
    setting). Setting it also fixes the trim threshold at its default (128 KiB), so the top
    of the heap is returned as it frees up.
    """
    try:
        libc = ctypes.CDLL("libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    return bool(mallopt(_M_MMAP_THRESHOLD, threshold))


def _keep_topic_identity(state: StateStore | None, analytics: Analytics) -> None:
    """Persist the topic ids and centroids, so the next start keeps the topic ids (a store
    that cannot be written only costs that: logged, the service goes on)."""
    identity = topic_identity(analytics)
    if state is None or identity is None:
        return
    try:
        state.checkpoint({TOPIC_IDENTITY_KEY: identity})
    except StateError as exc:
        log.warning("topic ids not kept for the next start: %s", exc)


def build_live(
    settings: Settings,
    registry: CollectorRegistry,
    state: StateStore | None = None,
    replay: bool = False,
) -> Live:
    """Build the pipeline with the analytics stages of ``settings.analytics`` and the shadow
    stage of ``settings.shadow``, against the configured gold set and corpus. Without a gold
    set (``settings.gold_set`` unset; never a stand-in) only what needs none runs: language,
    refusals, drift against the baseline (topics only from ``analytics.topics_model`` or a
    configured corpus), shadow; live quality and harvesting are off. Harvested suggestions
    are kept in ``state`` (in memory without one)
    and, with the Kafka source, published to the compacted ``harvest.topic``. With
    ``replay`` (a replay to the end of a file) the shadow stage runs with backpressure and
    waits for each batch's calls, so nothing is skipped for timing and the report is
    reproducible (:mod:`service.shadow.stage`).

    Raises:
        ValueError, OSError: the gold set, corpus, topic model or a custom stage is unusable
            (the message names the file and problem).
        service.retrievers.base.RetrieverError: a shadow candidate cannot be built.
    """
    analytics = Analytics(stages=[])
    metrics = None
    candidates = settings.shadow.candidates
    if not settings.analytics.enabled and not candidates:
        return Live(build_pipeline(settings), analytics, None)
    has_gold = settings.gold_set is not None
    gold = load_gold_set(settings.gold_set) if settings.gold_set else GoldSet(())
    corpus = load_corpus(settings.corpus) if settings.corpus else Corpus(())
    if settings.analytics.enabled:
        previous = state.get(TOPIC_IDENTITY_KEY) if state is not None else None
        analytics = build_analytics(settings.analytics, gold, corpus, previous)
        _keep_topic_identity(state, analytics)
        labeler = analytics.language_labeler
        metrics = build_analytics_metrics(
            registry,
            language_labels=labeler.labels() if labeler else (),
            topic_labels=analytics.topic_labels,
            topic_descriptions=analytics.topic_descriptions,
        )
        metrics.set_gold_shares(analytics.gold_counts)
        metrics.set_detector_quality(
            {name: quality_gauges(q) for name, q in analytics.detector_quality.items()},
            analytics.quality_floor, analytics.min_balanced_accuracy,
        )
    stages: list[Stage] = list(analytics.stages)
    shadow_stage = None
    roles = sorted({role for passage in corpus for role in passage.acl}
                   | {q.role for q in gold if q.role})  # fmt: skip
    shadow_metrics = build_shadow_metrics(
        registry,
        candidates=[c.name for c in candidates],
        production=settings.shadow.production,
        language_labels=metrics.language_labels if metrics else (),
        topic_labels=metrics.topic_labels if metrics else (),
        role_labels=roles,
    )
    quality = None
    listeners: list[Any] = []
    if has_gold:
        index = KnownQuestionIndex(gold, threshold=settings.shadow.known_threshold)
        quality = LiveQualityStage(index, AccessPolicy.from_corpus(corpus),
                                   k=settings.shadow.known_k, production=PRODUCTION)  # fmt: skip
        stages.append(quality)
        listeners.append(quality.observe_candidate)
    harvest, harvest_metrics, closers = None, None, []
    if settings.harvest.enabled and settings.analytics.enabled and has_gold:
        sinks: list[Any] = [StateStoreCandidates(state) if state else MemoryCandidates()]
        if settings.source.kind == "kafka" and settings.kafka is not None:
            from consumers.harvest_sink import KafkaCandidateSink

            kafka_sink = KafkaCandidateSink(settings.kafka, settings.harvest.topic)
            sinks.append(kafka_sink)
            closers.append(kafka_sink.close)
        embedder = None
        if settings.harvest.embedding_similarity is not None:
            # the analytics' fit texts (build_analytics), so a tfidf embedder is shared too
            fit = [q.question for q in gold] + [passage.text for passage in corpus.passages]
            embedder = shared_embedder(settings.analytics.embeddings, fit_texts=fit)
        harvest = HarvestStage(settings.harvest, analytics.gold_counts, list(gold), sinks=sinks,
                               embedder=embedder)  # fmt: skip
        harvest_metrics = build_harvest_metrics(
            registry, REASONS, sinks=[type(sink).__name__ for sink in sinks]
        )
        listeners.append(harvest.observe_shadow)
    if candidates:
        names = list(dict.fromkeys(c.retriever_name for c in candidates))
        retrievers = build_retrievers(names, settings,
                                      corpus.passages if settings.corpus else None)  # fmt: skip
        runner = ShadowRunner(settings.shadow, retrievers, backpressure=replay)
        shadow_stage = ShadowStage(runner, listeners=listeners, synchronous=replay)
        stages.append(shadow_stage)
    if harvest is not None:
        stages.append(harvest)
    return Live(build_pipeline(settings, stages), analytics, metrics, shadow_stage,
                shadow_metrics, quality, harvest, harvest_metrics, closers)  # fmt: skip


class JsonlDeadLetters:
    """Dead letters of HTTP ingest (and stdin), appended to a JSONL file and fsynced.

    HTTP ingest writes a request's letters with :meth:`admit` before the pipeline applies
    the request: if they cannot be written (disk full, read-only, a FIFO at the path),
    nothing of that request is applied or counted, the client gets a 503 and the letters are
    not kept. Letters written for a request that was then not acknowledged (a later chunk or
    the checkpoint failed) are remembered by identity (:meth:`unacknowledged`), so the
    client's retry counts them as duplicates instead of writing and counting them again.

    Letters handed to :meth:`write` that cannot be written (``processing_failed`` letters
    of a batch the pipeline already applied) stay queued in memory and go out with the next
    write; the runtime runs :meth:`flush` before every engine checkpoint, so no checkpoint
    counts a dead letter that is not on disk.

    While the file cannot be written, :meth:`problem` says why (``/readyz``)."""

    #: Identities of unacknowledged letters remembered at most (oldest forgotten first):
    #: 100 requests of the API's largest size (1,000 events).
    MAX_UNACKNOWLEDGED = 100_000

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._queued: list[DeadLetter] = []
        self._unacknowledged: OrderedDict[bytes, int] = OrderedDict()  # identity -> letters
        # (errno, bytes the failed append needed, message) of the last failed append
        self._failure: tuple[int, int, str] | None = None

    @property
    def queued(self) -> int:
        """Letters accepted but not yet on disk (≥ 0)."""
        return len(self._queued)

    def admit(self, letters: Sequence[DeadLetter]) -> list[DeadLetter]:
        """Append ``letters`` (and any queued ones) durably, except those already written
        for an unacknowledged try (:meth:`unacknowledged`), which are not written again.

        Returns:
            The letters written now (a sub-list of ``letters``, in order); the others are
            repeats, for the caller to count as duplicates.

        Raises:
            OSError: the file cannot be written: nothing was written (a partly written
                append is cut back), none of ``letters`` is kept, the remembered identities
                are as before.
        """
        with self._lock:
            fresh: list[DeadLetter] = []
            repeats: list[bytes] = []
            for letter in letters:
                key = _letter_identity(letter)
                if self._unacknowledged.get(key, 0) > 0:
                    self._unacknowledged[key] -= 1
                    if not self._unacknowledged[key]:
                        del self._unacknowledged[key]
                    repeats.append(key)
                else:
                    fresh.append(letter)
            try:
                self._append([*self._queued, *fresh])
            except OSError:
                self._remember(repeats)
                raise
            self._queued.clear()
            return fresh

    def unacknowledged(self, letters: Sequence[DeadLetter]) -> None:
        """Remember ``letters`` (on disk, counted) as belonging to a request that was not
        acknowledged: the next :meth:`admit` of the same letters (same reason and bytes: the
        client's retry) does not write them again."""
        with self._lock:
            self._remember([_letter_identity(letter) for letter in letters])

    def _remember(self, keys: Sequence[bytes]) -> None:
        for key in keys:
            self._unacknowledged[key] = self._unacknowledged.get(key, 0) + 1
            self._unacknowledged.move_to_end(key)
        while len(self._unacknowledged) > self.MAX_UNACKNOWLEDGED:
            self._unacknowledged.popitem(last=False)

    def write(self, letters: Sequence[DeadLetter]) -> None:
        """Queue ``letters`` and append every queued letter durably (flush + fsync).

        Raises:
            OSError: the file cannot be written; every letter stays queued (a partly written
                append is cut back, so a retry never leaves a torn line).
        """
        with self._lock:
            self._queued.extend(letters)
            self._flush()

    def flush(self) -> None:
        """Write the queued letters (see :meth:`write`); nothing to do when none is queued.

        Raises:
            OSError: as :meth:`write`.
        """
        with self._lock:
            self._flush()

    def _flush(self) -> None:
        self._append(self._queued)
        self._queued.clear()

    def _append(self, letters: Sequence[DeadLetter]) -> None:
        if not letters:
            return
        data = b"".join(dead_letter_line(letter) for letter in letters)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = open_append(self.path)  # 0600: raw bytes of events
            try:  # a torn tail (a crash mid-append) is cut: its letters were never checkpointed
                append_whole(fd, prepare_tail(fd, self.path, on_torn="cut") + data)
            finally:
                os.close(fd)
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            self._failure = (exc.errno or 0, len(data),
                             f"dead-letter file {self.path} cannot be written: {reason}")
            raise
        self._failure = None

    def problem(self) -> str | None:
        """Why dead letters cannot be written now, or ``None``. After a failed append the
        file is checked again at each call (opened for appending — a FIFO, folder, read-only
        file system or missing folder still fails —, and after ``ENOSPC``/``EDQUOT`` the
        file system must have room for the failed append); the problem clears when the
        check passes or an append succeeds. Names the file and the system's reason only."""
        failure = self._failure
        if failure is None:
            return None
        code, needed, message = failure
        try:
            fd = open_append(self.path)
        except OSError:
            return message
        try:
            if code in (errno.ENOSPC, errno.EDQUOT):
                space = os.fstatvfs(fd)
                if space.f_bavail * space.f_frsize < needed:
                    return message
        finally:
            os.close(fd)
        if self._failure is failure:
            self._failure = None
        return None


def _letter_identity(letter: DeadLetter) -> bytes:
    """A dead letter's identity for retries: BLAKE2b-128 of its reason and raw bytes (the
    event's bytes as sent; the same bytes in a retry are the same letter)."""
    digest = hashlib.blake2b(letter.reason.encode("utf-8") + b"\0", digest_size=16)
    digest.update(letter.message.value or b"")
    return digest.digest()


def _gold_file_problem(path: Path) -> str | None:
    """See :meth:`Runtime.gold_file_problem`: the check itself."""
    try:
        load_gold_set(path)
    except DataFileError as exc:
        more = f" (and {len(exc.problems) - 1} more)" if len(exc.problems) > 1 else ""
        first = exc.problems[0] if exc.problems else str(path)
        return f"gold-set file no longer loads: {first}{more}"
    except OSError as exc:
        return f"gold-set file {path} cannot be read: {exc.strerror or type(exc).__name__}"
    return None


class Runtime:
    """The engine, the configured source and the consumer thread of one process.

    Args:
        settings: the frozen configuration.
        registry: where the metrics live (a fresh one per process or test).
        stages: further stages to run before the analytics stages (tests).

    Raises:
        service.state.StateError: the state file is corrupt or unreadable (the message names
            it and says to move it aside).
        ValueError: a custom stage cannot be built.
    """

    def __init__(
        self,
        settings: Settings,
        registry: CollectorRegistry | None = None,
        stages: Sequence[Stage] = (),
    ) -> None:
        self.settings = settings
        self.registry = registry or CollectorRegistry()
        fix_mmap_threshold()  # before the models load: see its docstring
        topics = [settings.kafka.topic] if settings.kafka else []
        self.metrics = build_metrics(self.registry, topics=topics)
        self.trace_metrics = build_trace_metrics(self.registry)  # /v1/traces, OTLP topics
        settings.state.path.parent.mkdir(parents=True, exist_ok=True)
        self.state = StateStore.open(settings.state.path, exclusive=True)
        try:  # a start that fails releases the state file (and its writer's lock)
            decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes)
            self.event_decoder = decoder  # wrapped by a trace source (_open_source)
            self.live = build_live(settings, self.registry, self.state)
            pipeline = self.live.pipeline
            if stages:
                own = [st for st in (self.live.quality, self.live.shadow, self.live.harvest)
                       if st is not None]  # fmt: skip
                pipeline = build_pipeline(settings, [*stages, *self.live.analytics.stages, *own])
            self.engine = Engine(
                pipeline, self.state, self.metrics, decoder, on_batch=self.live.observe,
                future_tolerance_s=settings.analytics.drift.future_tolerance_s,
            )  # fmt: skip
            self.engine.restore()
            freeze_heap()
            dlq = settings.source.dlq_path or settings.state.path.parent / "goldwatch.dlq.jsonl"
            self.http_dead_letters = JsonlDeadLetters(dlq)
            # no checkpoint (HTTP ingest's or the poll loop's) may count a letter not on disk
            self.engine.checkpoint_guards.append(self.http_dead_letters.flush)
            self.gold_runs = GoldRuns(
                settings, on_run=self._gold_run_finished, on_failure=self._gold_run_failed
            )
        except BaseException:
            self.state.close()
            raise
        self.gold_refreshes = 0
        # (identity, size, mtime) of the gold-set file when last checked, and its problem
        self._gold_check: tuple[tuple[int, ...], str | None] | None = None
        self._gold_check_lock = threading.Lock()
        #: Why the last gold-set refresh failed (``None``: none failed since the last success).
        self.gold_refresh_error: str | None = None
        # Refreshes run one at a time, in order: request N is covered by any refresh that read
        # the file after N was made, so an older read can never land after a newer one.
        self._refresh_lock = threading.Lock()
        self._refresh_requested = 0  # guarded by _refresh_counter_lock
        self._refresh_covered = 0
        self._refresh_counter_lock = threading.Lock()
        self._started_monotonic = time.monotonic()  # for uptime: immune to clock steps
        self.stop_event = threading.Event()
        self._source: Source | None = None
        self._thread: threading.Thread | None = None
        self._finished = False
        self.last_error: str | None = None
        self._error_at = 0.0

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the gold-set schedule and the consumer thread (no consumer thread for
        ``source.kind: none``)."""
        self.gold_runs.schedule(ready=lambda: self.ready()[0])
        if self.settings.source.kind == "none":
            return
        self._thread = threading.Thread(target=self._consume, name="goldwatch-consumer")
        self._thread.daemon = True
        self._thread.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        """Ask the loop to finish its batch, checkpoint, commit and close; wait ``timeout_s``."""
        self.stop_event.set()
        self.gold_runs.stop()
        if self._thread is not None:
            self._thread.join(timeout_s)
            if self._thread.is_alive():
                log.error("consumer thread did not stop within %.1f s", timeout_s)
        # a gold-set refresh in flight swaps its references in before the pipeline closes;
        # none starts after this (they check stop_event)
        if self._refresh_lock.acquire(timeout=timeout_s):
            self._refresh_lock.release()
        else:
            log.error("gold-set refresh did not finish within %.1f s", timeout_s)
        self.live.close()
        if self.http_dead_letters.queued:
            try:
                self.http_dead_letters.flush()
            except OSError as exc:
                log.error("%d dead letters could not be written to %s at stop (%s); their "
                          "events were not acknowledged", self.http_dead_letters.queued,
                          self.http_dead_letters.path, exc.strerror)  # fmt: skip
        self.state.close()

    def stop_problem(self) -> str | None:
        """After :meth:`stop`: why the stop was not clean, or ``None`` when it was (the
        consumer thread ended and its last checkpoint succeeded: no consumer error since)."""
        if self._thread is not None and self._thread.is_alive():
            return "the consumer thread did not stop in time (its batch was not checkpointed)"
        self._clear_recovered_error()
        if self.last_error is not None:
            return f"the consumer had failed and was not checkpointed since ({self.last_error})"
        return None

    def _consume(self) -> None:
        backoff = 0.5
        while not self.stop_event.is_set():
            try:
                source = self._open_source()
                self._source = source
                report = run(
                    source,
                    self.engine.pipeline,
                    self.state,
                    self.metrics,
                    self.stop_event,
                    config=self.settings.pipeline,
                    until_eof=not self.settings.source.follow
                    and self.settings.source.kind != "kafka",
                    engine=self.engine,
                )
                self.last_error = None
                if not self.stop_event.is_set():
                    log.info("input finished: %d consumed", report.consumed)
                    self._finished = True
                return
            except Exception as exc:  # the API keeps serving; retry with backoff
                self.last_error = f"{type(exc).__name__}: {exc}"
                self._error_at = time.monotonic()
                log.error("consumer stopped (%s); retrying in %.1f s", self.last_error, backoff)
                self._source = None
                self.stop_event.wait(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _open_source(self) -> Source:
        config = self.settings.source
        if config.kind == "kafka":
            from consumers.kafka_source import KafkaSource

            assert self.settings.kafka is not None  # guaranteed by Settings validation
            # The loop schedules commits (after each checkpoint); the source commits at once.
            kafka = KafkaSource(self.settings.kafka.model_copy(update={"commit_interval_s": 0.0}))
            traces = self.settings.traces
            if traces.kafka_encoding == "events":
                return kafka
            from consumers.trace_source import TraceSource  # OTLP from the Collector (issue 20)
            from service.api.trace_ingest import content_index
            from service.traces.assembly import TraceAssembler

            source = TraceSource(kafka, TraceAssembler(traces.assembly), traces.mapping,
                                 traces.kafka_encoding, metrics=self.trace_metrics,
                                 content_index=content_index(self.settings.corpus))  # fmt: skip
            self.engine.decode = source.wrap_decoder(self.event_decoder)
            return source
        path = str(config.path) if config.kind == "file" else "-"
        dlq = config.dlq_path or (None if config.kind == "file" else self.http_dead_letters.path)
        return FileSource(path, follow=config.follow, rate=config.rate, dlq_path=dlq)

    # -- queries -------------------------------------------------------------------------

    def _clear_recovered_error(self) -> None:
        """A consumer error is over once a checkpoint succeeded after it (a Kafka loop never
        returns, so the retry's success is seen here, not where ``run`` returns)."""
        done = self.engine.last_checkpoint_s
        if self.last_error is not None and done is not None and done > self._error_at:
            self.last_error = None

    def ready(self) -> tuple[bool, list[str]]:
        """Return ``(ready, reasons it is not)``: state open, source open/assigned, no
        consumer error since the last successful checkpoint, the gold-set file loads, the
        HTTP dead-letter file can be written (:meth:`JsonlDeadLetters.problem`)."""
        self._clear_recovered_error()
        reasons = []
        if self.settings.source.kind != "none" and not self._finished:
            source = self._source
            if source is None:
                reasons.append("source not connected")
            elif not source.ready():
                why = getattr(source, "not_ready_reason", lambda: None)()
                reasons.append(why or "source not ready (no assignment or broker unreachable)")
        if self.last_error is not None:
            reasons.append("consumer error; retrying")
        gold_problem = self.gold_file_problem()
        if gold_problem is not None:
            reasons.append(gold_problem)
        dead_letter_problem = self.http_dead_letters.problem()
        if dead_letter_problem is not None:  # POSTs carrying a bad event get 503 meanwhile
            reasons.append(dead_letter_problem)
        return not reasons, reasons

    def gold_file_problem(self) -> str | None:
        """Why the configured gold-set file no longer loads as ``serve`` would load it at its
        next start (``load_gold_set``), or ``None`` (also without a gold-set file of one's
        own). The message names the file, the first bad line and the problem, never the
        line's content. Parsed again only when the file's identity, size or mtime changed,
        so ``/readyz`` stays a ``stat``."""
        path = self.settings.gold_set
        if path is None:
            return None
        try:
            st = os.stat(path)
            key: tuple[int, ...] = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
        except OSError as exc:
            key = (-1, exc.errno or 0)
        with self._gold_check_lock:
            if self._gold_check is not None and self._gold_check[0] == key:
                return self._gold_check[1]
            problem = _gold_file_problem(path)
            self._gold_check = (key, problem)
        if problem is not None:
            log.error("%s", problem)
        return problem

    def status(self) -> dict[str, Any]:
        """Return the JSON body of ``GET /v1/status``."""
        source = self._source
        ready, reasons = self.ready()
        totals = self.engine.totals_view()
        notice = gold_set_notice(self.settings)
        return {
            "notices": [notice] if notice else [],
            "version": __version__,
            "ready": ready,
            "not_ready_reasons": reasons,
            "uptime_s": round(time.monotonic() - self._started_monotonic, 3),
            "source_kind": self.settings.source.kind,
            "source": source.status() if source is not None else None,
            "input_finished": self._finished,
            "totals": totals,
            "last_error": self.last_error,
            "gold_refresh_error": self.gold_refresh_error,
            "gold_file_error": self.gold_file_problem(),
        }

    def analytics_report(self) -> dict[str, Any] | None:
        """The analytics summary (as in ``goldwatch replay``), or ``None`` when disabled."""
        from service.replay_job import analytics_report, json_safe

        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise EngineBusy("the pipeline is busy (the consumer is waiting on its source)")
        try:
            return json_safe(analytics_report(self.live))  # type: ignore[no-any-return]
        finally:
            self.engine.lock.release()

    def shadow_report(self) -> dict[str, Any] | None:
        """The shadow stage's report after folding in the results finished so far (``None``
        without candidates), with the latest gold-set run."""
        if self.live.shadow is None:
            return None
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise EngineBusy("the pipeline is busy (the consumer is waiting on its source)")
        try:
            self.live.collect_shadow()
            report = self.live.shadow.report()
        finally:
            self.engine.lock.release()
        return report

    def gold_accepted(self, question: Any) -> None:
        """A suggestion was accepted into the gold-set file: reload the gold set, refit the
        topic model, recompute the gold languages/topics and the known-question index, then
        swap them in under the pipeline lock (a background thread: the fit takes a while).

        Refreshes are serialised and coalesced: a refresh that starts after several accepts
        reads the file once for all of them, and the outcome (new references or
        ``gold_refresh_error``) always reflects the newest read of the file."""
        with self._refresh_counter_lock:
            self._refresh_requested += 1
        threading.Thread(target=self._refresh_gold, name="goldwatch-gold-refresh",
                         daemon=True).start()  # fmt: skip

    def _refresh_gold(self) -> None:
        with self._refresh_lock:
            if self.stop_event.is_set():
                return  # stopping: the next start loads the gold-set file anyway
            with self._refresh_counter_lock:
                wanted = self._refresh_requested
            if wanted <= self._refresh_covered:
                return  # a refresh that read the file after this request already ran
            self._refresh_gold_now()
            self._refresh_covered = wanted

    def _refresh_gold_now(self) -> None:
        from service.analytics import (
            apply_gold_references,
            apply_scope_references,
            gold_references,
            scope_references,
        )

        path = self.settings.gold_set
        if path is None:
            return
        try:
            gold = load_gold_set(path)
            model, counts = gold_references(self.live.analytics, self.settings.analytics, gold)
            index = KnownQuestionIndex(gold, threshold=self.settings.shadow.known_threshold)
            scope = None
            if self.settings.corpus is not None and self.live.analytics.stages:
                corpus = load_corpus(self.settings.corpus)
                scope = scope_references(self.live.analytics, self.settings.analytics, gold,
                                         corpus)  # fmt: skip
        except DataFileError as exc:  # names file, line, id and field; no question text
            self._gold_refresh_failed(str(exc))
            return
        except Exception as exc:  # the service keeps the old references
            self._gold_refresh_failed(f"{type(exc).__name__} while reloading {path}")
            return
        with self.engine.lock:
            apply_gold_references(self.live.analytics, model, counts)
            if scope is not None:
                apply_scope_references(self.live.analytics, scope)
        _keep_topic_identity(self.state, self.live.analytics)
        with self.engine.lock:
            if self.live.quality is not None:
                self.live.quality.index = index
            if self.live.harvest is not None:
                self.live.harvest.coverage.set_gold(counts)
            if self.live.analytics_metrics is not None:
                self.live.analytics_metrics.set_gold_shares(counts)
                analytics = self.live.analytics
                self.live.analytics_metrics.set_detector_quality(
                    {name: quality_gauges(q) for name, q in analytics.detector_quality.items()},
                    analytics.quality_floor, analytics.min_balanced_accuracy,
                )  # fmt: skip
        self.gold_refresh_error = None  # before the count: a reader that saw the count
        self.gold_refreshes += 1  # go up sees the error cleared
        log.info("gold set refreshed: %d questions (version %s)", len(gold), gold.version)

    def _gold_refresh_failed(self, reason: str) -> None:
        """Keep the old references, log why and show it in ``/v1/status`` until a refresh
        succeeds (the next start would stop on the same file)."""
        self.gold_refresh_error = f"gold-set refresh failed, the old gold set stays: {reason}"
        log.error("%s", self.gold_refresh_error)

    def quality_report(self) -> dict[str, Any] | None:
        """Known questions scored live and ACL checks (``None`` when the stage is off)."""
        if self.live.quality is None:
            return None
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise EngineBusy("the pipeline is busy (the consumer is waiting on its source)")
        try:
            self.live.collect_shadow()
            return self.live.quality.report()
        finally:
            self.engine.lock.release()

    def gold_run_status(self) -> dict[str, Any]:
        """The latest gold-set run and whether one is running."""
        return {
            "enabled": self.gold_runs.enabled,
            "running": self.gold_runs.running,
            "runs": self.gold_runs.runs,
            "last_error": self.gold_runs.last_error,
            "latest": self.gold_runs.latest,
        }

    def _gold_run_finished(self, run: Any) -> None:
        if self.live.shadow_metrics is not None:
            self.live.shadow_metrics.observe_gold_run(run)
            self.live.shadow_metrics.gold_runs.labels(outcome="ok").inc()

    def _gold_run_failed(self, reason: str) -> None:
        if self.live.shadow_metrics is not None:
            self.live.shadow_metrics.gold_runs.labels(outcome="failed").inc()

    # -- HTTP ingest ---------------------------------------------------------------------

    def ingest(self, values: Sequence[bytes]) -> Outcome:
        """Process events posted over HTTP: dead letters are made durable and the state is
        checkpointed before this returns (so an acknowledged event is never lost).

        A chunk whose dead letters cannot be written is not applied. When the request is
        not acknowledged (503), the letters it wrote are remembered by identity, so the
        client's retry counts them as duplicates, as it does events with an ``event_id``
        (:class:`JsonlDeadLetters`).

        Raises:
            EngineBusy: the pipeline stayed busy; IngestUnavailable: dead letters or the
                checkpoint cannot be written (nothing is acknowledged either way).
        """
        messages = [
            RawMessage(value, Origin(file=HTTP_SOURCE, line=i + 1))
            for i, value in enumerate(values)
        ]
        size = self.settings.api.ingest_chunk_events
        outcomes: list[Outcome] = []
        written: list[DeadLetter] = []  # letters on disk (now or by an earlier try)
        try:
            for start in range(0, max(len(messages), 1), size):
                last = start + size >= len(messages)
                self._ingest_chunk(messages[start : start + size], start, len(messages), last,
                                   outcomes, written)  # fmt: skip
                if not last:
                    time.sleep(0)  # hand the lock (and the GIL) to a waiting reader or consumer
        except EngineBusy:
            self.http_dead_letters.unacknowledged(written)
            raise
        return _combined(outcomes)

    def _ingest_chunk(
        self,
        messages: list[RawMessage],
        done: int,
        total: int,
        last: bool,
        outcomes: list[Outcome],
        written: list[DeadLetter],
    ) -> None:
        """Process one chunk of an HTTP ingest under the pipeline lock (and checkpoint after
        the ``last``); append its outcome to ``outcomes`` and the dead letters that are on
        disk for it to ``written``.

        Raises:
            EngineBusy: the lock stayed taken for :data:`LOCK_TIMEOUT_S`.
            IngestUnavailable: dead letters or the checkpoint cannot be written.
        """
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            partly = (f"; {done} of {total} events were processed but not acknowledged: retry "
                      "(events with an event_id are then counted as duplicates)"
                      if done else "")  # fmt: skip
            raise EngineBusy(
                f"the pipeline is busy (the consumer is waiting on its source){partly}"
            )
        offered: list[DeadLetter] = []

        def admit(dead: list[DeadLetter]) -> list[DeadLetter]:
            fresh = self.http_dead_letters.admit(dead)  # raises: the chunk is not applied
            written.extend(dead)  # repeats included: on disk since an earlier try
            offered.extend(dead)
            return fresh

        try:
            outcome = self.engine.process(messages, HTTP_SOURCE, admit_dead=admit)
            outcomes.append(outcome)
            ids = {id(letter) for letter in offered}
            rest = [letter for letter in outcome.dead if id(letter) not in ids]
            self.http_dead_letters.write(rest)  # processing_failed: queued when it fails
            written.extend(rest)
            if last:
                self.engine.checkpoint()
        except OSError as exc:
            raise IngestUnavailable(
                f"cannot write dead letters to {self.http_dead_letters.path}: "
                f"{exc.strerror or type(exc).__name__}; nothing was acknowledged, retry later"
            ) from None
        except (StateError, GoldwatchConsumerError) as exc:
            raise IngestUnavailable(f"{exc}; nothing was acknowledged, retry later") from None
        finally:
            self.engine.lock.release()


def _combined(outcomes: Sequence[Outcome]) -> Outcome:
    """One :class:`Outcome` for the chunks of one ingest: counts and dead letters summed in
    order (each letter keeps its index in the request); ``batch`` is the last chunk's."""
    first = outcomes[0]
    if len(outcomes) == 1:
        return first
    dead: list[DeadLetter] = [letter for o in outcomes for letter in o.dead]
    by_reason: dict[str, int] = {}
    dropped: dict[str, int] = {}
    for o in outcomes:
        for reason, n in o.counts.dead_lettered.items():
            by_reason[reason] = by_reason.get(reason, 0) + n
        for reason, n in o.dropped.items():
            dropped[reason] = dropped.get(reason, 0) + n
    newest = [o.counts.newest_event_s for o in outcomes if o.counts.newest_event_s is not None]
    counts = first.counts._replace(
        consumed=sum(o.counts.consumed for o in outcomes),
        processed=sum(o.counts.processed for o in outcomes),
        dead_lettered=by_reason,
        duplicates=sum(o.counts.duplicates for o in outcomes),
        seconds=sum(o.counts.seconds for o in outcomes),
        newest_event_s=max(newest) if newest else None,
    )
    return Outcome(outcomes[-1].batch, dead, counts, sum(o.redelivered for o in outcomes),
                   dropped, sum(o.repeated for o in outcomes))  # fmt: skip
