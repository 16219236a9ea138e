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

import logging
import threading
import time
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import Any, cast

from prometheus_client import CollectorRegistry
from typing_extensions import TypedDict

from consumers.base import DeadLetter, ExplainsNotReady, Origin, RawMessage, Source
from consumers.engine import Engine, Outcome, TotalsJson
from consumers.errors import GoldwatchConsumerError, suppress_on_error
from consumers.file_source import FileSource, state_dead_letters
from consumers.jsonl_dead_letters import DEAD_LETTER_MARK_KEY, JsonlDeadLetters
from consumers.loop import make_decoder, run
from service import __version__
from service.coverage import document_counts
from service.data.corpus import DataFileError, load_corpus
from service.data.goldset import GoldFileCheck, gold_file_key, load_gold_set
from service.errors import GoldwatchError, describe_error
from service.evaluation.detector_quality import quality_gauges
from service.harvest.signals import DOCUMENT
from service.pacing import Backoff
from service.pipeline import Stage
from service.quality.known import KnownQuestionIndex
from service.quality.stage import add_paired_tests, recent_known_hits, recent_known_text
from service.records import PII_TYPES, GoldQuestion
from service.runtime.live import (
    build_live,
    build_pipeline,
    gold_topic_notice,
    keep_topic_identity,
)
from service.runtime.memory import fix_mmap_threshold, freeze_heap
from service.runtime.reports import (
    GAP_GROUPS,
    AnalyticsReport,
    analytics_report,
    json_safe,
    language_candidates_report,
)
from service.runtime.threads import native_threads
from service.settings import Settings, gold_set_notice
from service.shadow.gold_runs import GoldRuns
from service.shadow.stage import ShadowStageReport
from service.state import StateError, StateStore
from service.telemetry import build_gold_refresh_metrics, build_metrics, build_trace_metrics
from service.topics.model import NOVEL
from service.traces.mapping import content_index

log = logging.getLogger(__name__)

HTTP_SOURCE = "http"
MAX_BACKOFF_S = 30.0
#: Waits between restarts of a failed consumer: 0.5, 1, 2, ... s, at most MAX_BACKOFF_S.
RESTART_BACKOFF = Backoff(0.5, max_s=MAX_BACKOFF_S)
LOCK_TIMEOUT_S = 5.0
#: Seconds between the stages' idle turns when events come only over HTTP (no poll loop).
IDLE_TURN_S = 1.0
#: Seconds between the background checks of the gold-set file (a ``stat`` each; a parse only
#: when it changed): how long ``goldwatch_gold_refresh_failing`` may lag a hand edit.
GOLD_CHECK_S = 10.0
#: Seconds a stop waits for the shadow calls still queued or running before its last
#: checkpoint (:meth:`Runtime.stop`); those it gives up are counted as ``interrupted``.
SHADOW_STOP_WAIT_S = 10.0
#: Seconds the end of a finite input waits (without the pipeline lock, the CPU budget
#: lifted) for the shadow calls still queued or running before it folds them in
#: (:meth:`Runtime._finish_input`); those still queued after it run on.
SHADOW_END_WAIT_S = 120.0


class EngineBusy(GoldwatchError, RuntimeError):
    """The pipeline stayed busy longer than the API waits; the client should retry (503)."""

    #: The ``error`` code of the HTTP answer.
    code = "busy"


class IngestUnavailable(EngineBusy):
    """HTTP ingest could not make a request durable (the state or dead-letter file cannot be
    written: disk full, read-only); nothing of it is acknowledged and the client should
    retry (503). The message names the file and the system's reason, never the input."""

    code = "unavailable"


class StatusTotals(TotalsJson):
    """``/v1/status`` ``totals``: the engine's all-time counts
    (:meth:`consumers.engine.Engine.totals_view`) and ``pii_scrubbed``, the personal-data
    items scrubbed by type (every type of :data:`~service.records.PII_TYPES`), all-time from
    the persisted annotation totals (``{}`` with analytics or ``analytics.pii`` off: nothing
    is scrubbed)."""

    pii_scrubbed: dict[str, int]


class StatusReport(TypedDict):
    """:meth:`Runtime.status`, the body of ``GET /v1/status`` (the API's
    :class:`~service.api.schemas.Status` documents each field). ``uptime_s`` in seconds,
    rounded to ms; ``source``: the source's own status (assignment, offsets, lag), ``None``
    before it is open; ``totals``: the persisted all-time counts
    (:meth:`consumers.engine.Engine.totals_view`)."""

    notices: list[str]
    version: str
    ready: bool
    not_ready_reasons: list[str]
    uptime_s: float
    source_kind: str
    source: dict[str, Any] | None
    input_finished: bool
    totals: StatusTotals
    fields_dropped: dict[str, int]
    last_error: str | None
    gold_refresh_error: str | None
    gold_file_error: str | None
    under_covered_documents: dict[str, Any] | None
    state_file: StateFileStatus


class StateFileStatus(TypedDict):
    """:meth:`Runtime.state_file_status`: the state file's path; how often it was found
    deleted or replaced at its path and written there again whole since start
    (``recreated``) and the last such event (``last_recreated``); why it cannot be written
    there now (``lost``: no offsets are committed meanwhile), else ``None``; whether the state
    started empty (``started_empty``) and where each partition's reading started after that
    (the group's committed offset at assignment, else the first offset read),
    ``{"topic[partition]": offset}`` (``uncounted_before``), with their sum
    (``uncounted_offsets``): the events before them are not in the totals."""

    path: str
    recreated: int
    last_recreated: str | None
    lost: str | None
    started_empty: bool
    uncounted_before: dict[str, int]
    uncounted_offsets: int


class GoldRunStatus(TypedDict):
    """:meth:`Runtime.gold_run_status`: whether gold-set runs can run (``enabled``), one is
    running, how many finished since start, the last failure (or ``None``) and the latest
    run's report (:class:`~service.shadow.gold_runs.GoldRuns`; ``None`` before the first)."""

    enabled: bool
    running: bool
    runs: int
    last_error: str | None
    latest: dict[str, Any] | None


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
        *,
        defer: bool = False,
    ) -> None:
        self.settings = settings
        self._stages = tuple(stages)
        #: Set once :meth:`load` built the pipeline (at once unless ``defer``).
        self.loaded = threading.Event()
        #: Why a deferred :meth:`load` failed (``None``: it did not fail, or did not run).
        self.load_error: str | None = None
        self.registry = registry or CollectorRegistry()
        fix_mmap_threshold()  # before the models load: see its docstring
        topics = [settings.kafka.topic] if settings.kafka else []
        self.metrics = build_metrics(self.registry, topics=topics)
        self.trace_metrics = build_trace_metrics(self.registry)  # /v1/traces, OTLP topics
        self.gold_refresh_metrics = build_gold_refresh_metrics(self.registry)
        settings.state.path.parent.mkdir(parents=True, exist_ok=True)
        #: The gold-set file's :func:`~service.data.goldset.gold_file_key` when the gold set
        #: in use was last read (here, before the start loads it; then by each refresh, as
        #: it starts reading): the poll (:meth:`_check_gold_file`) reloads the file when its
        #: key moves from this one (trial 24: a hand edit was served only after a restart).
        self._gold_read_key = gold_file_key(settings.gold_set) if settings.gold_set else None
        #: The key the previous :meth:`_reload_if_changed` saw (a change is read once stable).
        self._gold_seen_key = self._gold_read_key
        self.state = StateStore.open(settings.state.path, exclusive=True)
        self._native_threads: AbstractContextManager[Any] = nullcontext()
        self.gold_refreshes = 0
        #: Does the gold-set file load whole: one answer for readiness and accepts (set by
        #: :meth:`load`).
        self.gold_check: GoldFileCheck | None = None
        #: Why the last gold-set refresh failed (``None``: none failed since the last success).
        self.gold_refresh_error: str | None = None
        self.topic_notice: str | None = None
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
        self._idle_thread: threading.Thread | None = None
        self._finished = False
        # the consumer is finishing a finite input (its shadow calls settling, then the last
        # fold-in and checkpoint under the lock), until input_finished
        self._finishing = False
        # the shadow calls the end of input left queued or running (0: none), for the notice
        self._unsettled = 0
        self.last_error: str | None = None
        self._error_at = 0.0
        self._stop_error: str | None = None  # the stop's last checkpoint failed
        # shadow results folded in outside a batch since the last checkpoint (_save_late_shadow)
        self._unsaved_shadow = 0
        if not defer:
            self.load()

    def load(self) -> None:
        """Build what the process runs on (the analytics' models, embeddings, retrievers,
        the pipeline and its engine with the restored state, the HTTP dead-letter file):
        the heavy part of a start, seconds to tens of seconds. Called by the constructor
        unless ``defer``; ``goldwatch serve`` calls it on a thread after its port is open, so
        ``POST /v1/traces`` acknowledges spans into the state file meanwhile
        (:mod:`service.api.trace_ingest`, "Early acceptance"). Sets :attr:`loaded`.

        Raises:
            service.state.StateError, ValueError, OSError: as the constructor; the state
                file is closed (its writer's lock released).
        """
        settings, stages = self.settings, self._stages
        try:  # a start that fails releases the state file (and its writer's lock)
            self.live = build_live(settings, self.registry, self.state,
                                   model_cache=settings.state.model_cache_dir())  # fmt: skip
            for notice in self.live.notices:
                log.warning("%s", notice)
            # the libraries loaded so far (numpy's OpenBLAS, which the live path's products
            # use) run on one thread until stop(); see native_threads on later loads
            self._native_threads = native_threads(settings.pipeline.native_threads)
            pipeline = self.live.pipeline
            if stages:
                own = [st for st in (self.live.quality, self.live.shadow, self.live.harvest)
                       if st is not None]  # fmt: skip
                pipeline = build_pipeline(settings, [*stages, *self.live.analytics.stages, *own])
            decoder = make_decoder(settings.events, settings.pipeline.max_event_bytes,
                                   records=pipeline.reads_records)  # fmt: skip
            self.event_decoder = decoder  # wrapped by a trace source (_open_source)
            self.engine = Engine(
                pipeline, self.state, self.metrics, decoder, on_batch=self.live.observe,
                future_tolerance_s=settings.analytics.drift.future_tolerance_s,
                on_error=suppress_on_error,  # a stage error: processing_failed letters
            )  # fmt: skip
            self.engine.restore()
            self.live.export_held()  # the held suggestions restored, before any batch
            self.live.export_drift()  # the restored drift verdicts, likewise
            self.live.name_unlabelled()  # the restored language counts' notice, likewise
            freeze_heap()
            dlq = settings.source.dlq_path or settings.state.path.parent / "goldwatch.dlq.jsonl"
            self.http_dead_letters = JsonlDeadLetters(dlq)
            # no checkpoint (HTTP ingest's or the poll loop's) may count a letter not on disk
            self.engine.checkpoint_guards.append(self.http_dead_letters.flush)
            # letters written after the last checkpoint (a kill -9 before it) are not written
            # again when their request is retried: each checkpoint notes how far it counts
            self.engine.checkpoint_extras.append(self.http_dead_letters.checkpoint_mark)
            mark = self.state.get(DEAD_LETTER_MARK_KEY)
            if mark is None:  # a fresh state: note the file as it is now, durably, before any
                # letter is written, so a kill -9 before the first checkpoint leaves a mark
                # after which the letters are this run's (trial 49, M1); older ones are not
                mark = self.http_dead_letters.checkpoint_mark()[DEAD_LETTER_MARK_KEY]
                self.state.write_unless({DEAD_LETTER_MARK_KEY: mark}, {})  # counts nothing
            self.http_dead_letters.recover(mark, origin=HTTP_SOURCE)
            self.gold_runs = GoldRuns(
                settings, on_run=self._gold_run_finished, on_failure=self._gold_run_failed
            )
        except BaseException:
            self._native_threads.__exit__(None, None, None)
            self.state.close()
            raise
        #: Does the gold-set file load whole: one answer for readiness and accepts.
        self.gold_check = GoldFileCheck(settings.gold_set) if settings.gold_set else None
        if self.gold_check is not None:  # a file broken by hand starts no refresh: the gauge
            # also says 1 while the file would be refused (GoldSetRefreshFailing; trial 15)
            # the remembered answer: a scrape reads no file (a review: re-reading a changed
            # 100,000-row file held /metrics and /healthz ~2 s on the event loop); the file is
            # checked by /readyz, accepts and every GOLD_CHECK_S by _check_gold_file
            self.gold_refresh_metrics.watch_file(self.gold_check.last_problem)
        #: The gold set's topic labels are too few to be the topics (clusters instead), as
        #: of the start or the last successful refresh; ``None`` otherwise.
        self.topic_notice = self.live.topic_notice
        self.loaded.set()

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> None:
        """Start the gold-set schedule and the consumer thread (for ``source.kind: none``,
        where events come only over HTTP, a thread that gives the stages their idle turns
        instead: :meth:`_idle_turns`)."""
        self.gold_runs.schedule(ready=lambda: self.ready()[0])
        if self.gold_check is not None:
            checker = threading.Thread(target=self._check_gold_file, name="goldwatch-gold-check")
            checker.daemon = True
            checker.start()
        if self.settings.source.kind == "none":
            self._idle_thread = threading.Thread(target=self._idle_turns, name="goldwatch-idle")
            self._idle_thread.daemon = True
            self._idle_thread.start()
            return
        self._thread = threading.Thread(target=self._consume, name="goldwatch-consumer")
        self._thread.daemon = True
        self._thread.start()

    def stop(self, timeout_s: float = 15.0) -> None:
        """Ask the loop to finish its batch, checkpoint, commit and close; wait ``timeout_s``.
        Before a deferred :meth:`load` finished (the caller waits for it first), only the
        state file is closed: what it holds (acknowledged spans) is restored at the next
        start."""
        self.stop_event.set()
        if not self.loaded.is_set():
            self.state.close()  # idempotent: a failed load closed it already
            return
        self.gold_runs.stop()  # no new run; the one in progress is waited for below
        if self._idle_thread is not None:
            self._idle_thread.join(timeout_s)
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
        # a gold-set run in progress ends before the native libraries' limits are reset and
        # before the interpreter exits (see GoldRuns.stop)
        self.gold_runs.close(timeout_s)
        self._last_checkpoint()
        self.live.close()
        if self.http_dead_letters.queued:
            try:
                self.http_dead_letters.flush()
            except OSError as exc:
                log.error("%d dead letters could not be written to %s at stop (%s); their "
                          "events were not acknowledged", self.http_dead_letters.queued,
                          self.http_dead_letters.path, exc.strerror)  # fmt: skip
        self.state.close()
        # the libraries' limits as before (OpenBLAS ignores a raise from a thread other than
        # the one that started the service; the process ends after a stop anyway)
        self._native_threads.__exit__(None, None, None)

    def _last_checkpoint(self) -> None:
        """The stop's last checkpoint, once the consumer stopped cleanly (no
        :meth:`stop_problem`; else the memory may hold batches no checkpoint covers, left
        to the restart): the shadow calls still queued or running are waited for (up to
        :data:`SHADOW_STOP_WAIT_S`, :meth:`Live.stop_shadow`) and every result that came
        is checkpointed with the stages' states, those given up counted as ``interrupted``
        (a review of session 36: results that completed after the consumer's last
        checkpoint, 544 of 600 on a log read to its end, were never checkpointed, and came
        back after the restart as ``interrupted``). A failure is logged and makes the stop
        not clean (:meth:`stop_problem`)."""
        if self.stop_problem() is not None:
            return
        with self.engine.lock:
            try:  # the rest of the stop (closing the state file) must run whatever happens
                lost = self.live.stop_shadow(SHADOW_STOP_WAIT_S)
                self.engine.checkpoint()
            except Exception as exc:  # noqa: BLE001 - logged, and the stop is not clean
                self._stop_error = f"the last checkpoint failed ({describe_error(exc)})"
                log.error("%s: what the stages did since the one before is lost",
                          self._stop_error)  # fmt: skip
                return
        if lost:
            log.warning("%d shadow calls had not finished %.0f s into the stop: given up, "
                        "counted as skipped 'interrupted' (GET /v1/shadow)", lost,
                        SHADOW_STOP_WAIT_S)  # fmt: skip

    def stop_problem(self) -> str | None:
        """After :meth:`stop`: why the stop was not clean, or ``None`` when it was (the
        consumer thread ended and its last checkpoint succeeded: no consumer error since,
        and the stop's own last checkpoint was written)."""
        if not self.loaded.is_set():  # nothing ran but HTTP ingest into the state file
            return None
        if self._thread is not None and self._thread.is_alive():
            return "the consumer thread did not stop in time (its batch was not checkpointed)"
        self._clear_recovered_error()
        if self.last_error is not None:
            return f"the consumer had failed and was not checkpointed since ({self.last_error})"
        return self._stop_error

    def _check_gold_file(self) -> None:
        """Check the gold-set file (:meth:`GoldFileCheck.problem`: a ``stat``, a parse only
        when it changed) now and every :data:`GOLD_CHECK_S` until stopped, off the HTTP
        event loop, so ``goldwatch_gold_refresh_failing`` (which reads the remembered answer)
        follows a file broken by hand without a probe or an accept asking first; and reload
        a file changed since the gold set in use was read (:meth:`_reload_if_changed`)."""
        check = self.gold_check
        while check is not None:
            try:
                if check.problem() is None:
                    self._reload_if_changed()
            except Exception:  # noqa: BLE001 - a check that fails is logged, retried
                log.exception("checking the gold-set file failed")
            if self.stop_event.wait(GOLD_CHECK_S):
                return

    def _reload_if_changed(self) -> bool:
        """Start a gold-set refresh (:meth:`request_gold_refresh`, the one an accept starts)
        when the file's key (:func:`~service.data.goldset.gold_file_key`) differs from the
        one it had when the gold set in use was read, was the same at the previous call
        (unchanged for one check: an accept's own refresh, requested just after its append,
        is not doubled, and a file still being written is read once it is still), and no
        refresh is pending (a pending one reads the file anyway; if it read it before this
        change, a later call sees the key still differ). Trial 24: a file edited by hand
        while serve ran stayed unserved (``/v1/quality`` reported the old
        ``gold_set_version``) until a restart. The caller has found the file loading whole
        (a broken file keeps the old set: its problem is ``gold_file_error`` and
        ``goldwatch_gold_refresh_failing``, as before, and it is read once it loads again);
        a refresh that then fails (e.g. the topic labels' rule) keeps the old set, says so
        in ``gold_refresh_error``, and is not retried until the file changes again.
        Returns whether a refresh was started."""
        path = self.settings.gold_set
        if path is None:
            return False
        key = gold_file_key(path)
        seen, self._gold_seen_key = self._gold_seen_key, key
        if key != seen:
            return False
        # The read key is compared, and the request counted, under the lock refreshes are
        # counted under: a refresh (an accept's) that read this file and ended between the
        # comparison and the count otherwise left a stale key, or a request that came after
        # it, and the same file was read a second time (a refresh counted twice).
        with self._refresh_counter_lock:
            if key == self._gold_read_key:
                return False
            if self._refresh_requested > self._refresh_covered:
                return False  # a refresh is queued or running
            self._refresh_requested += 1
        log.info("the gold-set file %s changed since it was read: reloading it", path)
        self._start_refresh()
        return True

    def _idle_turns(self) -> None:
        """With no consumer thread (events only over HTTP), the stages' idle turn
        (:meth:`~consumers.engine.Engine.idle`: harvesting publishes what
        ``flush_interval_s`` made due) every :data:`IDLE_TURN_S` until stopped, as an empty
        poll gives it with a source (a review: the last request's suggestions waited for the
        next request or the shutdown)."""
        while not self.stop_event.wait(IDLE_TURN_S):
            self.engine.idle()
            self._save_late_shadow()

    def _save_late_shadow(self) -> None:
        """Fold in the shadow results that finished after the last ingest and, once no shadow
        call is queued or running and some were folded in since the last checkpoint (here,
        or by a report read), checkpoint (events only over HTTP: an ingest checkpoints after
        its batch, and nothing else did). The harvest stage writes a changed suggestion's
        record only after the snapshot that carries it: without this checkpoint the
        suggestions the last results changed kept their records from before them, listed
        by ``GET /v1/gold-candidates``, until the next request or the stop — which ones
        depended on when the results came (trial 47 L1: the same 4,000 traces sent fast
        and slowly listed 958 suggestions with the shadow_disagreement count of 13 of them
        off by one, 2,719 vs 2,722 events in all). A failed checkpoint is logged and
        tried again at the next turn."""
        if self.live.shadow is None:
            return
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            return  # busy: the next turn
        try:
            self._unsaved_shadow += self.live.collect_shadow()
            if not self._unsaved_shadow or self.live.shadow_busy():
                return
            self.engine.checkpoint()
            self._unsaved_shadow = 0
        except Exception as exc:  # the API keeps serving; the next turn tries again
            log.warning("checkpoint of late shadow results failed (%s)", describe_error(exc))
        finally:
            self.engine.lock.release()

    def _consume(self) -> None:
        delays = RESTART_BACKOFF.delays()
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
                    log.info("input finished: %d consumed, %d blank lines", report.consumed,
                             report.blank_lines)  # fmt: skip
                    self._finish_input()
                return
            except Exception as exc:  # the API keeps serving; retry with backoff
                # type and stage only: the text can hold event text and /v1/status is public
                self.last_error = describe_error(exc)
                self._error_at = time.monotonic()
                delay = next(delays)
                log.error("consumer stopped (%s); retrying in %.1f s", self.last_error, delay)
                self._source = None
                self.stop_event.wait(delay)

    def _finish_input(self) -> None:
        """The finite input was read to its end: as a replay ends, let the shadow calls
        queued and running finish, fold them in and publish every suggestion, then
        checkpoint, so what the API lists from then on is what a clean stop keeps and a
        restart lists (the periodic flushes hold back some records until the next
        checkpoint, which a finished input never reaches).

        The shadow calls are waited for without the pipeline lock (up to
        :data:`SHADOW_END_WAIT_S`, the CPU budget lifted: the consumer it protects has no
        more events), so the reports answer meanwhile; only the fold-in, the last flush and
        the checkpoint hold it. Trial 41: the wait ran under the lock with the budget in
        force (a few calls a second), the reports answered 503 "busy" for up to 30 s, and
        the calls still queued after it were folded in only at the stop: 15 suggestions
        more after a clean restart than at the end of input. Calls still queued after the
        wait (a slow or hung candidate) run on; :meth:`status` says so."""
        self._finishing = True
        try:
            unsettled = self.live.settle_shadow(SHADOW_END_WAIT_S, self.stop_event)
            if self.stop_event.is_set():  # the stop folds in and checkpoints
                return
            with self.engine.lock:
                self.live.finish(timeout_s=0.0)
                try:  # ... and checkpoint it (else only the stop would)
                    self.engine.checkpoint()
                except Exception as exc:  # noqa: BLE001 - the stop tries again
                    log.warning("checkpoint at the end of input failed (%s); the "
                                "stop checkpoints again", describe_error(exc))  # fmt: skip
            if unsettled:
                log.warning("input finished with %d shadow calls still queued or running "
                            "after %.0f s: their results are folded in as they come, and "
                            "at the stop at the latest", unsettled,
                            SHADOW_END_WAIT_S)  # fmt: skip
            self._unsettled = unsettled
            self._finished = True
        finally:
            self._finishing = False

    def _busy(self, partly: str = "") -> EngineBusy:
        """The error of a request that waited :data:`LOCK_TIMEOUT_S` for the pipeline lock,
        saying what holds it (``partly``: appended, e.g. an ingest's progress)."""
        if self._finishing:
            what = ("the pipeline is busy finishing the input (folding in the last shadow "
                    "results, publishing the suggestions, the last checkpoint)")  # fmt: skip
        else:
            what = (f"the pipeline is busy (its lock stayed taken for {LOCK_TIMEOUT_S:.0f} s "
                    "by a batch, a checkpoint, an ingest or another report)")  # fmt: skip
        return EngineBusy(what + partly)

    def _open_source(self) -> Source:
        config = self.settings.source
        if config.kind == "kafka":
            from consumers.align import event_times_from
            from consumers.kafka_source import KafkaSource

            assert self.settings.kafka is not None  # guaranteed by Settings validation
            # The loop schedules commits (after each checkpoint); the source commits at once.
            traces = self.settings.traces
            skew_s = alignment_skew_s(self.settings) if traces.kafka_encoding == "events" else 0.0
            settings = self.settings  # event times only: an event's records are not built
            decode_times = make_decoder(settings.events, settings.pipeline.max_event_bytes,
                                        records=False)  # fmt: skip
            future_s = settings.analytics.drift.future_tolerance_s
            times = event_times_from(decode_times, future_s) if skew_s else None
            kafka = KafkaSource(self.settings.kafka.model_copy(update={"commit_interval_s": 0.0}),
                                event_times=times, max_skew_s=skew_s)  # fmt: skip
            if traces.kafka_encoding == "events":
                return kafka
            from consumers.trace_source import TraceSource  # OTLP from the Collector (issue 20)
            from service.traces.assembly import TraceAssembler

            source = TraceSource(kafka, TraceAssembler(traces.assembly), traces.mapping,
                                 traces.kafka_encoding, metrics=self.trace_metrics,
                                 content_index=content_index(self.settings.corpus))  # fmt: skip
            self.engine.decode = source.wrap_decoder(self.event_decoder)
            return source
        path = str(config.path) if config.kind == "file" else "-"
        # a file source's own file per state, or the one its state already counts letters in
        dlq = config.dlq_path or (
            state_dead_letters(path, self.state.get, self.settings.state.dead_letter_path())
            if config.kind == "file" else self.http_dead_letters.path
        )  # fmt: skip
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
        HTTP dead-letter file can be written (:meth:`JsonlDeadLetters.problem`), and the
        pipeline is built (a deferred :meth:`load` finished)."""
        if not self.loaded.is_set():
            return False, [self.starting_reason()]
        self._clear_recovered_error()
        reasons = []
        if self.settings.source.kind != "none" and not self._finished:
            source = self._source
            if source is None:
                reasons.append("source not connected")
            elif not source.ready():
                why = source.not_ready_reason() if isinstance(source, ExplainsNotReady) else None
                generic = "source not ready"
                if self.settings.source.kind == "kafka":
                    generic += " (no assignment or broker unreachable)"
                reasons.append(why or generic)
        if self.last_error is not None:
            reasons.append("consumer error; retrying")
        if self.state.lost is not None:  # nothing committed or acknowledged meanwhile
            reasons.append(self.state.lost)
        gold_problem = self.gold_file_problem()
        if gold_problem is not None:
            reasons.append(gold_problem)
        dead_letter_problem = self.http_dead_letters.problem()
        if dead_letter_problem is not None:  # POSTs carrying a bad event get 503 meanwhile
            reasons.append(dead_letter_problem)
        return not reasons, reasons

    def starting_reason(self) -> str:
        """Why the process is not ready before its pipeline is built: loading, or the load
        failed (then the process is stopping). The failure's text is not in it (unauthenticated
        clients read this on ``/readyz`` and the 503 ``starting``): the log and serve's exit
        message say it."""
        if self.load_error is not None:
            return "start-up failed: the pipeline could not be loaded (the log says why); stopping"
        return ("starting: the pipeline is loading (POST /v1/traces acknowledges spans into "
                "the state file meanwhile; they are assembled once it is ready)")  # fmt: skip

    def _counted_under_notice(self) -> str | None:
        """The notice that the scope totals come from more than one out-of-scope detector
        (:func:`~service.runtime.analytics.counted_under_text`), led, while the detector now
        counting is calibrated, by the share of them an uncalibrated one counted
        (:func:`~service.evaluation.detector_quality.counts_uncalibrated_text`), or
        ``None``."""
        from service.runtime.analytics import counted_under_text

        totals = self.live.analytics.totals
        if totals is None:
            return None
        notice = counted_under_text(totals.counted_under, int(totals.flags["scope_scored"]))
        if self.live.analytics.uncalibrated("out_of_scope") is None:  # (else its own notice)
            # the detector now counting is calibrated; the counts an earlier one made are not
            # facts for that (trial 50 H2)
            from service.evaluation.detector_quality import counts_uncalibrated_text
            from service.pipeline.totals import counted_by_version

            versions = counted_by_version(totals.counted_under, totals.flags)
            if (why := counts_uncalibrated_text(versions)) is not None:
                untrusted = f"the out-of-scope counts are UNCALIBRATED, not facts: {why}"
                notice = untrusted if notice is None else f"{untrusted}; {notice}"
        return notice

    def gold_file_problem(self) -> str | None:
        """Why the configured gold-set file no longer loads as ``serve`` would load it at its
        next start (``load_gold_set``), or ``None`` (also without a gold-set file of one's
        own). The message names the file, the first bad line and the problem, never the
        line's content. :attr:`gold_check` parses again only when the file's identity, size
        or mtime changed, so ``/readyz`` stays a ``stat``; accepts ask the same check."""
        return self.gold_check.problem() if self.gold_check is not None else None

    def status(self) -> StatusReport:
        """Return the JSON body of ``GET /v1/status``."""
        source = self._source
        ready, reasons = self.ready()
        view = self.engine.totals_view()
        notice = gold_set_notice(self.settings)
        analytics = self.live.analytics
        # all-time, as the others: the annotation totals are checkpointed with the stages
        # (the goldwatch_pii_scrubbed_total counter restarts at 0); a fixed key set, read
        # without the lock (no iteration over a dict the pipeline may be growing)
        pii = None if analytics.totals is None else analytics.totals.pii
        scrub = pii is not None and self.settings.analytics.pii
        scrubbed = {kind: pii[kind] for kind in PII_TYPES} if scrub and pii is not None else {}
        totals: StatusTotals = {**view, "pii_scrubbed": scrubbed}
        unreliable = (language_candidates_report(analytics) or {}).get("unreliable")
        # a failed refresh first: the gold set in use is not the file's; then the language
        # figures called unreliable, before the start-up line that names the left-out ones;
        # and the topic shares called uncalibrated; then the live languages /metrics exports
        # as "other" (set after each batch)
        topic_why = analytics.topic_uncalibrated()  # a topic model near chance held out
        topics = (None if topic_why is None else "the topic shares are the topic model's "
                  f"reading, UNCALIBRATED and not facts ({topic_why}); topic drift and the "
                  "topic coverage gaps raise no alarm")  # fmt: skip
        if topics is None and (nearest := analytics.topics_nearest()) is not None:
            topics = (f"the topic shares are by nearest gold topic, not facts: {nearest}; "
                      "topic drift still alarms on a change of that distribution")  # fmt: skip
        unsettled = (f"the end of input left {self._unsettled} shadow calls queued or running "
                     f"after {SHADOW_END_WAIT_S:.0f} s: their results are folded in as they "
                     "come (at the stop at the latest), so the shadow figures and the "
                     "suggestions they start can still grow"
                     if self._finished and self._unsettled else None)  # fmt: skip
        state_file = self.state_file_status()
        notices = [*state_file_notices(state_file), self.gold_refresh_error, notice,
                   self.topic_notice, unreliable, topics,
                   analytics.language_notice, analytics.unlabelled_notice,
                   analytics.scope_notice, self._counted_under_notice(), unsettled,
                   *(shadow.cut_off_notices() if (shadow := self.live.shadow) else ())]  # fmt: skip
        return {
            "notices": [text for text in notices if text],
            "version": __version__,
            "ready": ready,
            "not_ready_reasons": reasons,
            "uptime_s": round(time.monotonic() - self._started_monotonic, 3),
            "source_kind": self.settings.source.kind,
            "source": source.status() if source is not None else None,
            "input_finished": self._finished,
            "totals": totals,
            "fields_dropped": totals["fields_dropped"],
            "last_error": self.last_error,
            "gold_refresh_error": self.gold_refresh_error,
            "gold_file_error": self.gold_file_problem(),
            "under_covered_documents": self.document_gaps(),
            "state_file": state_file,
        }

    def state_file_status(self) -> StateFileStatus:
        """The state file's place and start (:class:`StateFileStatus`), read without the
        pipeline lock (a few attributes and a copy of a small dict)."""
        store, engine = self.state, self.engine
        before = engine.uncounted_before()
        return {
            "path": store.label,
            "recreated": store.recreated,
            "last_recreated": store.last_recreated,
            "lost": store.lost,
            "started_empty": engine.started_empty,
            "uncounted_before": {f"{t}[{p}]": off for (t, p), off in sorted(before.items())},
            "uncounted_offsets": sum(before.values()),
        }

    def document_gaps(self) -> dict[str, Any] | None:
        """The documents the gold set under-covers, over all live traffic since the state
        began (:meth:`~service.harvest.stage.HarvestStage.document_gaps`, the
        :data:`~service.runtime.reports.GAP_GROUPS` largest); ``None`` without harvesting or
        when the corpus names no document. Read without the pipeline lock: the counts are
        copied first (one C-level dict copy), so a batch counting meanwhile is no danger."""
        harvest = self.live.harvest
        return None if harvest is None else harvest.document_gaps(GAP_GROUPS)

    def analytics_report(self) -> AnalyticsReport | None:
        """The analytics summary (as in ``goldwatch replay``), or ``None`` when disabled."""
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise self._busy()
        try:
            return cast("AnalyticsReport | None", json_safe(analytics_report(self.live)))
        finally:
            self.engine.lock.release()

    def shadow_report(self) -> ShadowStageReport | None:
        """The shadow stage's report after folding in the results finished so far (``None``
        without candidates), with the latest gold-set run."""
        if self.live.shadow is None:
            return None
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise self._busy()
        try:
            self._unsaved_shadow += self.live.collect_shadow()
            report = self.live.shadow.report()
        finally:
            self.engine.lock.release()
        return report

    def topics_nearest(self) -> str | None:
        """What the topic labels are while the novelty detector is untrusted (each question's
        nearest gold topic, and why: :meth:`~service.runtime.analytics.Analytics.topics_nearest`),
        or ``None``; read without the pipeline lock, as :meth:`status` reads it."""
        return self.live.analytics.topics_nearest()

    def gold_accepted(self, question: Any) -> None:
        """A suggestion was accepted into the gold-set file: :meth:`request_gold_refresh`."""
        self.request_gold_refresh()

    def request_gold_refresh(self) -> None:
        """Reload the gold set, refit the topic model, recompute the gold languages/topics
        and the known-question index, then swap them in under the pipeline lock (a
        background thread: the fit takes a while). An accept asks for it, and so does the
        poll when the file changed on disk (:meth:`_reload_if_changed`).

        Refreshes are serialised and coalesced: a refresh that starts after several accepts
        reads the file once for all of them, and the outcome (new references or
        ``gold_refresh_error``) always reflects the newest read of the file."""
        with self._refresh_counter_lock:
            self._refresh_requested += 1
        self._start_refresh()

    def _start_refresh(self) -> None:
        """The thread of a refresh counted in ``_refresh_requested`` (:meth:`_refresh_gold`)."""
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
        from service.runtime.analytics import (
            apply_gold_references,
            apply_scope_references,
            gold_references,
            gold_topic_strata,
            language_quality,
            misjudged_of,
            misjudged_unanswerable_of,
            novelty_labels,
            scope_gold,
            scope_references,
        )

        path = self.settings.gold_set
        if path is None:
            return
        self._gold_read_key = gold_file_key(path)  # before the read: a later change is seen
        try:
            gold = load_gold_set(path)
            model, counts, detector = gold_references(
                self.live.analytics, self.settings.analytics, gold
            )
            agreement = language_quality(gold, detector) if detector is not None else None
            strata = (gold_topic_strata(gold, model, detector,
                                        novelty_labels(model, self.settings.analytics))
                      if model is not None else None)  # fmt: skip
            index = KnownQuestionIndex(
                # the rows' subjects (service.text.subject) in the scope stage's canonical
                # order, as at the start (live.known_index): the same ties after a refresh
                scope_gold(gold),
                threshold=self.settings.shadow.known_threshold,
                cache_size=self.settings.analytics.question_cache_size,
            )
            scope = None
            if self.settings.corpus is not None and self.live.analytics.stages:
                corpus = load_corpus(self.settings.corpus)
                scope = scope_references(self.live.analytics, self.settings.analytics, gold,
                                         corpus)  # fmt: skip
        except DataFileError as exc:  # names file, line, id and field; no question text
            self._gold_refresh_failed(str(exc))
            return
        except Exception as exc:  # the service keeps the old references; our own errors
            # (a topic fit's "'novel' is reserved") say why, others only their type
            self._gold_refresh_failed(f"{describe_error(exc)} while reloading {path}")
            return
        with self.engine.lock:
            apply_gold_references(self.live.analytics, model, counts, detector, agreement,
                                  strata)  # fmt: skip
            if scope is not None:
                apply_scope_references(self.live.analytics, scope)
        keep_topic_identity(self.state, self.live.analytics)
        with self.engine.lock:
            if self.live.quality is not None:
                self.live.quality.index = index
            if self.live.harvest is not None:  # an accepted row's document is covered now
                harvest = self.live.harvest
                documents = harvest.documents
                gold_documents = ({DOCUMENT: document_counts((q.gold for q in gold), documents)}
                                  if documents else {})  # fmt: skip
                harvest.coverage.set_gold({**counts, **gold_documents})
            if self.live.analytics_metrics is not None:
                analytics = self.live.analytics
                if model is not None:  # a topic new since the start gets its own label
                    metrics = self.live.analytics_metrics
                    novel = model.novelty_on and novelty_labels(model, self.settings.analytics)
                    added = metrics.add_topic_labels([*model.names, *([NOVEL] if novel else [])])
                    analytics.topic_labels = (*analytics.topic_labels, *added)
                    shadow = self.live.shadow_metrics  # its topic label mirrors novel's
                    if shadow is not None and NOVEL in added:
                        shadow.add_topic_labels([NOVEL])
                    # no question is novel now (uncalibrated): no novel series stands flat
                    if not novel and metrics.remove_topic_label(NOVEL):
                        analytics.topic_labels = tuple(
                            t for t in analytics.topic_labels if t != NOVEL
                        )
                    if not novel and shadow is not None:
                        shadow.remove_topic_label(NOVEL)
                self.live.analytics_metrics.set_gold_shares(counts)
                self.live.analytics_metrics.set_detector_quality(
                    {name: quality_gauges(q) for name, q in analytics.detector_quality.items()},
                    analytics.quality_floor, analytics.min_balanced_accuracy,
                    analytics.quality_min_class,
                )  # fmt: skip
                self.live.analytics_metrics.set_topic_trusted(analytics.topic_trusted())
                misjudged = misjudged_of(analytics)
                self.live.analytics_metrics.set_misjudged_answerable(
                    None if misjudged is None else misjudged.upper
                )
                let_in = misjudged_unanswerable_of(analytics)
                self.live.analytics_metrics.set_misjudged_unanswerable(
                    None if let_in is None else let_in.upper
                )
                # the coverage gaps and drift states against the new gold set now, not at the
                # next batch: a refit whose novelty (or topic kappa) falls under its floor
                # withholds the topic gaps, and an idle service kept exporting the old ones
                # (the CoverageGap alert reads them)
                self.live.export_drift()
        topic_notice = gold_topic_notice(self.settings, gold)
        if topic_notice is not None and topic_notice != self.topic_notice:
            log.warning("%s", topic_notice)  # as serve logs the notices at start
        self.topic_notice = topic_notice
        self.gold_refresh_error = None  # before the count: a reader that saw the count
        self.gold_refreshes += 1  # go up sees the error cleared
        self.gold_refresh_metrics.observe(ok=True)
        log.info("gold set refreshed: %d questions (version %s)", len(gold), gold.version)

    def _gold_refresh_failed(self, reason: str) -> None:
        """Keep the old references, log why, count it (``goldwatch_gold_refreshes_total``,
        ``goldwatch_gold_refresh_failing``) and show it in ``/v1/status`` (its
        ``gold_refresh_error`` and first notice: the status page's top) until a refresh
        succeeds (the next start would stop on the same file)."""
        self.gold_refresh_error = f"gold-set refresh failed, the old gold set stays: {reason}"
        self.gold_refresh_metrics.observe(ok=False)
        log.error("%s", self.gold_refresh_error)

    def gold_set_problem(self, questions: Sequence[GoldQuestion]) -> str | None:
        """Why a gold-set refresh would refuse ``questions`` beyond each row's own checks
        (the topic labels' rule, :func:`~service.runtime.analytics.topic_label_rule`, when
        the topics are fitted on the gold set), or ``None``. Accepts ask it before they
        append (:class:`~service.harvest.labelling.Labelling` ``gold_rule``)."""
        from service.runtime.analytics import topic_label_rule

        analytics = self.settings.analytics
        if not analytics.enabled or analytics.topics_model is not None:
            return None
        where = str(self.settings.gold_set or "the gold set")
        return topic_label_rule(questions, analytics.use_gold_topics, where).problem

    def quality_report(self) -> dict[str, Any] | None:
        """Known questions scored live and ACL checks (``None`` when the stage is off)."""
        if self.live.quality is None:
            return None
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            raise self._busy()
        try:
            self._unsaved_shadow += self.live.collect_shadow()
            shadow = self.live.shadow.report() if self.live.shadow is not None else None
            report, paired = self.live.quality.report_and_paired(shadow)
            drift = self.live.analytics.drift
            if drift is not None:  # the latest window's figures beside the all-time ones
                test, state, window_s = drift.recent_known()
                recent = recent_known_hits(test, window_s, self.live.quality.k, state)
                report["recent"] = recent
                report["recent_text"] = recent_known_text(recent)
        finally:
            self.engine.lock.release()
        # the paired tests' resampling (seconds on thousands of questions) without holding
        # the pipeline: the consumer and the other endpoints go on meanwhile
        add_paired_tests(report, paired, self.live.quality.k, self.live.quality.production)
        return report

    def gold_run_status(self) -> GoldRunStatus:
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

    def ingest(
        self,
        values: Sequence[bytes],
        extra: Mapping[str, Any] | None = None,
        letters: Sequence[DeadLetter] = (),
        duplicates: int = 0,
        dropped: Sequence[Sequence[tuple[str, str]]] = (),
    ) -> Outcome:
        """Process events posted over HTTP: dead letters are made durable and the state is
        checkpointed before this returns (so an acknowledged event is never lost). ``extra``
        state updates go into that same checkpoint (trace ingest deletes the pending spans of
        the traces these events were assembled from: :mod:`service.api.trace_ingest`).
        ``letters`` (trace ingest's dead letters: spans and traces that give no event) and
        ``duplicates`` (traces sent again after their event was built) go with the first
        chunk into the same totals and counters as the events' (``Engine.process``).
        ``dropped``: per value (same index; shorter: none for the rest), the ``(field path,
        reason)`` its event lost before it was sent here (trace ingest:
        :attr:`~service.traces.mapping.TraceEvent.dropped`), counted in ``fields_dropped``
        when the event is kept, as the decoder's drops.

        A chunk whose dead letters cannot be written is not applied. When the request is
        not acknowledged (503), the letters it wrote are remembered by identity, so the
        client's retry counts them as duplicates, as it does events with an ``event_id``
        (:class:`JsonlDeadLetters`).

        Raises:
            EngineBusy: the pipeline stayed busy; IngestUnavailable: dead letters or the
                checkpoint cannot be written (nothing is acknowledged either way).
        """
        if not self.loaded.is_set():  # nothing can be processed or counted yet
            raise EngineBusy(self.starting_reason())
        messages = [
            RawMessage(value, Origin(file=HTTP_SOURCE, line=i + 1))
            for i, value in enumerate(values)
        ]
        field_drops = {id(messages[i]): found for i, found in enumerate(dropped) if found}
        size = self.settings.api.ingest_chunk_events
        outcomes: list[Outcome] = []
        written: list[DeadLetter] = []  # letters on disk (now or by an earlier try)
        try:
            for start in range(0, max(len(messages), 1), size):
                last = start + size >= len(messages)
                own = (letters, duplicates) if start == 0 else ((), 0)
                self._ingest_chunk(messages[start : start + size], start, len(messages), last,
                                   outcomes, written, extra, *own, field_drops)  # fmt: skip
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
        extra: Mapping[str, Any] | None = None,
        letters: Sequence[DeadLetter] = (),
        duplicates: int = 0,
        field_drops: Mapping[int, Sequence[tuple[str, str]]] | None = None,
    ) -> None:
        """Process one chunk of an HTTP ingest under the pipeline lock (and checkpoint after
        the ``last``, with ``extra``); append its outcome to ``outcomes`` and the dead letters
        that are on disk for it to ``written``.

        Raises:
            EngineBusy: the lock stayed taken for :data:`LOCK_TIMEOUT_S`.
            IngestUnavailable: dead letters or the checkpoint cannot be written.
        """
        if not self.engine.lock.acquire(timeout=LOCK_TIMEOUT_S):
            partly = (f"; {done} of {total} events were processed but not acknowledged: retry "
                      "(events with an event_id are then counted as duplicates)"
                      if done else "")  # fmt: skip
            raise self._busy(partly)

        def admit(dead: list[DeadLetter]) -> list[DeadLetter]:
            fresh = self.http_dead_letters.admit(dead)  # raises: the chunk is not counted
            written.extend(dead)  # repeats included: on disk since an earlier try
            return fresh

        try:  # every letter, processing_failed too, is on disk before it is counted
            own: dict[str, Any] = {"letters": letters} if letters else {}
            if duplicates:
                own["duplicates"] = duplicates
            if field_drops:
                own["field_drops"] = field_drops
            outcome = self.engine.process(messages, HTTP_SOURCE, admit_dead=admit, **own)
            outcomes.append(outcome)
            if last:
                self.engine.checkpoint(extra)
                if self.state.lost is not None:  # counted, but in no file a restart reads
                    raise IngestUnavailable(f"{self.state.lost}; nothing was acknowledged, "
                                            "retry later")  # fmt: skip
        except OSError as exc:
            raise IngestUnavailable(
                f"cannot write dead letters to {self.http_dead_letters.path}: "
                f"{exc.strerror or type(exc).__name__}; nothing was acknowledged, retry later"
            ) from None
        except (StateError, GoldwatchConsumerError) as exc:
            raise IngestUnavailable(f"{exc}; nothing was acknowledged, retry later") from None
        finally:
            self.engine.lock.release()


def state_file_notices(status: StateFileStatus) -> list[str]:
    """The status notices of :class:`StateFileStatus`, loudest first: the state file
    cannot be written at its path (no commits); it was recreated (until restart); the state
    started empty while earlier offsets were committed (the totals restarted)."""
    notices = []
    if status["lost"] is not None:
        notices.append(f"STATE NOT DURABLE: {status['lost']}")
    if status["last_recreated"] is not None:
        notices.append(status["last_recreated"])
    before = status["uncounted_before"]
    if before:
        where = ", ".join(f"{key} at {offset:,}" for key, offset in before.items())
        notices.append(
            f"the state started empty (no state file {status['path']}, or a new one) and the "
            f"partitions were read from {where}: the {status['uncounted_offsets']:,} events "
            "before them are not in these totals (counted by a state that is gone, by another "
            "replica of the consumer group, or never read here: auto_offset_reset latest, "
            "retention)"
        )
    return notices


def alignment_skew_s(settings: Settings) -> float:
    """The Kafka partitions' event-time alignment bound in seconds (0: off):
    ``kafka.max_event_time_skew_s`` when set, else half of
    ``analytics.drift.allowed_lateness_s`` (half of ``bucket_s`` when that is 0) with
    analytics on (the drift windows are what reads event time across partitions), 0 without
    (and without a ``kafka`` section)."""
    if settings.kafka is None:
        return 0.0
    if settings.kafka.max_event_time_skew_s is not None:
        return settings.kafka.max_event_time_skew_s
    if not settings.analytics.enabled:
        return 0.0
    drift = settings.analytics.drift
    return (drift.allowed_lateness_s or drift.bucket_s) / 2


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
