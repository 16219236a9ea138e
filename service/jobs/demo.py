"""The ``goldwatch demo`` job: the whole product on the embedded demo data, with no setup.

Two modes:

* live (default): the service (``goldwatch serve``) reads the demo query log
  (``service/demo/querylog.jsonl``) from the file source at a readable rate, with the demo
  configuration (``service/demo/goldwatch.yaml``: drift windows sized for the demo, the
  ``hybrid`` shadow candidate, BM25 standing in for production in gold-set runs) and
  harvesting on. It serves ``/metrics``, the API and the status page at ``/`` until Ctrl-C
  (SIGINT) or SIGTERM, then stops cleanly (exit 0).
* fast (``--fast``): the same log processed at once, like ``goldwatch replay``, and a report
  that says which planted change was detected when.

Both use a working folder (default ``./goldwatch-demo``) for the state, the dead-letter file,
the gold-set run history and a copy of the demo gold set, which is the configured ``gold_set``
so that accepting a harvested suggestion (``POST /v1/gold-candidates/{id}/accept``) has a file
to append to. Each run starts from fresh state; the gold-set copy is kept (it holds what you
accepted; delete it to start over from the packaged one).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import shlex
import shutil
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, NotRequired, cast

from typing_extensions import TypedDict

from service.api import listen
from service.demo import demo_path
from service.errors import GoldwatchError
from service.settings import Settings, load_settings

log = logging.getLogger(__name__)

#: Events per second of the live demo (3,000 events: two and a half minutes).
DEFAULT_RATE = 20.0
DEFAULT_PORT = 8000
DEFAULT_HOST = "127.0.0.1"
#: The working folder, relative to the current folder.
DEFAULT_WORKDIR = Path("goldwatch-demo")

STATE_FILE = "state.sqlite"
DLQ_FILE = "querylog.dlq.jsonl"
GOLD_FILE = "gold.jsonl"
HISTORY_FILE = "goldwatch-runs.jsonl"
MISSES_FILE = "goldwatch-misses.jsonl"


class DemoError(GoldwatchError, RuntimeError):
    """The demo cannot start (port taken, working folder unusable); the message says why."""


@dataclass(frozen=True)
class Planted:
    """One change planted in the demo query log, and how a drift alarm shows it.

    Attributes:
        dimension: the drift dimension that should alarm (``language``, ``topic``,
            ``refusal``).
        rising: the category expected among the alarm's ``rising`` ones (``None`` for a rate,
            which must go up instead).
        what: a short description for people.
        phase: the generator's phase the change starts in (:data:`service.demo.querylog.CHANGES`).
    """

    dimension: str
    rising: str | None
    what: str
    phase: str


#: The changes the generator plants (see ``service/demo/querylog.py``).
PLANTED: tuple[Planted, ...] = (
    Planted("language", "hi-Latn", "Hinglish (hi-Latn) questions rise to ~35 %", "B"),
    Planted("topic", "exams", "exam-schedule questions rise (exams ~40 %)", "B"),
    Planted("refusal", None, "refusals jump to ~25 % (timetable missing from the index)", "C"),
)


# -- set-up ----------------------------------------------------------------------------------


def prepare_workdir(workdir: Path) -> Path:
    """Create ``workdir``, clear the previous run's state and dead letters, and copy the demo
    gold set there unless a copy exists already (it keeps accepted suggestions).

    Returns:
        The gold-set copy.

    Raises:
        DemoError: the folder cannot be created or written.
    """
    try:
        workdir.mkdir(parents=True, exist_ok=True)
        for name in (STATE_FILE, f"{STATE_FILE}-wal", f"{STATE_FILE}-shm", DLQ_FILE):
            (workdir / name).unlink(missing_ok=True)
        gold = workdir / GOLD_FILE
        if not gold.is_file():
            shutil.copyfile(demo_path(GOLD_FILE), gold)
    except OSError as exc:
        raise DemoError(f"working folder {workdir}: {exc.strerror or exc}") from None
    return gold


def demo_settings(
    workdir: Path,
    *,
    rate: float | None = DEFAULT_RATE,
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    token: str | None = None,
) -> Settings:
    """The demo configuration (``service/demo/goldwatch.yaml``) pointed at ``workdir``.

    The file source reads the embedded query log at ``rate`` events/s (``None``: at once);
    state, dead letters, run history and misses live in ``workdir``, and ``gold_set`` is the
    copy made by :func:`prepare_workdir`. ``GOLDWATCH_*`` variables still apply, below these
    values.

    Raises:
        service.settings.ConfigError: a ``GOLDWATCH_*`` variable is invalid.
    """
    source: dict[str, Any] = {
        "kind": "file",
        "path": demo_path("querylog.jsonl"),
        "follow": False,
        "dlq_path": workdir / DLQ_FILE,
    }
    if rate is not None:
        source["rate"] = rate
    api: dict[str, Any] = {"host": host, "port": port}
    if token is not None:
        api["token"] = token
    return load_settings(
        demo_path("goldwatch.yaml"),
        gold_set=workdir / GOLD_FILE,
        corpus=demo_path("corpus.jsonl"),
        source=source,
        state={"path": workdir / STATE_FILE},
        api=api,
        eval={"history": workdir / HISTORY_FILE, "misses": workdir / MISSES_FILE},
    )


@dataclass(frozen=True)
class DemoToken:
    """The live demo's API token and where it comes from.

    Attributes:
        value: the token.
        source: ``None`` when the demo made it up (it is printed: the curl lines need it), else
            where the user's own token comes from (``GOLDWATCH_API__TOKEN`` or
            ``api.token_file <path>``); a user's token is never printed.
        curl_value: what the printed ``curl`` lines put after ``Bearer``: the token itself,
            or a shell expansion that reads the user's token where it is.
    """

    value: str = field(repr=False)
    source: str | None
    curl_value: str = field(repr=False)


def live_settings(
    workdir: Path, *, rate: float | None, host: str, port: int
) -> tuple[Settings, DemoToken]:
    """The live demo's settings (:func:`demo_settings`) and its API token: the user's own
    (``GOLDWATCH_API__TOKEN`` or ``GOLDWATCH_API__TOKEN_FILE``), validated as ``serve``
    validates it, else a fresh random one (144 bits, URL-safe).

    Raises:
        service.settings.ConfigError: a ``GOLDWATCH_*`` variable is invalid, e.g. an empty
            ``GOLDWATCH_API__TOKEN`` (named ``api.token``, as by ``serve``).
    """
    settings = demo_settings(workdir, rate=rate, host=host, port=port)
    configured = settings.api.token
    if configured is None:
        token = secrets.token_urlsafe(18)
        settings = demo_settings(workdir, rate=rate, host=host, port=port, token=token)
        return settings, DemoToken(token, None, token)
    value = configured.get_secret_value()
    file = settings.api.token_file
    if file is not None:
        read = f"$(cat {shlex.quote(str(file))})"
        return settings, DemoToken(value, f"api.token_file {file}", read)
    return settings, DemoToken(value, "GOLDWATCH_API__TOKEN", "$GOLDWATCH_API__TOKEN")


# -- fast mode -------------------------------------------------------------------------------

if TYPE_CHECKING:  # the replay job loads the pipeline: imported when run (see run_fast)
    from service.jobs.replay import ReplayReport
    from service.runtime.reports import HarvestSummary


class PlantedFinding(TypedDict):
    """:func:`planted_findings`: one planted change and the first alarm that shows it."""

    dimension: str
    expected: str
    what: str
    planted_at: str
    detected: bool
    alarm: NotRequired[dict[str, Any]]
    delay_h: NotRequired[float]


class DemoBlock(TypedDict):
    """The ``demo`` block of the fast report: its working folder and the planted changes."""

    workdir: str
    planted: list[PlantedFinding]


if TYPE_CHECKING:

    class DemoReport(ReplayReport):
        """:func:`run_fast`'s report: the replay report plus the ``demo`` block."""

        demo: DemoBlock


def run_fast(workdir: Path) -> DemoReport:
    """Process the whole demo log at once and return the replay report (see
    :mod:`service.jobs.replay`) with a ``demo`` block: each planted change and the first
    drift alarm that detected it.

    Raises:
        DemoError: the working folder is unusable.
        ValueError, OSError: the demo data or the analytics set-up is unusable.
    """
    from service.jobs.replay import run_replay

    settings = demo_settings(workdir, rate=None)
    prepare_workdir(workdir)
    replayed = run_replay(settings, demo_path("querylog.jsonl"), None, workdir / DLQ_FILE)
    doc = cast("DemoReport", replayed)
    doc["demo"] = {"workdir": str(workdir), "planted": planted_findings(replayed)}
    return doc


def _phase_starts() -> dict[str, str]:
    from service.demo.querylog import CHANGES

    return {str(change["phase"]): str(change["timestamp"]) for change in CHANGES}


def planted_findings(doc: ReplayReport) -> list[PlantedFinding]:
    """For each :data:`PLANTED` change, the first drift alarm of the report that shows it.

    Returns:
        One dict per change: ``dimension``, ``expected`` (the rising category or ``"up"``),
        ``what``, ``planted_at`` (RFC 3339), ``detected`` (bool) and, when detected, the
        ``alarm`` (as in ``analytics.drift.alarms``) and ``delay_h`` (event time from the
        planted start to the alarm, in hours).
    """
    analytics = doc.get("analytics")
    alarms = (analytics["drift"] if analytics else {}).get("alarms", [])
    starts = _phase_starts()
    findings = []
    for planted in PLANTED:
        match = next((a for a in alarms if _shows(a, planted)), None)
        started = datetime.fromisoformat(starts[planted.phase].replace("Z", "+00:00"))
        finding: PlantedFinding = {
            "dimension": planted.dimension,
            "expected": planted.rising or "up",
            "what": planted.what,
            "planted_at": starts[planted.phase],
            "detected": match is not None,
        }
        if match is not None:
            finding["alarm"] = match
            finding["delay_h"] = round((match["timestamp"] - started.timestamp()) / 3600, 2)
        findings.append(finding)
    return findings


def _shows(alarm: dict[str, Any], planted: Planted) -> bool:
    if alarm.get("dimension") != planted.dimension or alarm.get("state") != "drift":
        return False
    if planted.rising is not None:
        return planted.rising in alarm.get("rising", ())
    current, compared = alarm.get("rate_current"), alarm.get("rate_compared")
    return current is not None and compared is not None and current > compared


def render_fast_text(doc: DemoReport) -> str:
    """The ``--fast`` report for people: what was planted and detected, then the replay
    summary (with the harvested suggestions' count and what harvesting shed), live quality
    and the top harvested suggestions."""
    from service.jobs.replay import render_text

    lines = ["Planted in the demo log, and what goldwatch detected (drift alarms):"]
    for item in doc["demo"]["planted"]:
        head = f"  {item['dimension']:<9} {item['what']} (from {_hm(item['planted_at'])})"
        if not item["detected"]:
            lines.append(f"{head}\n            NOT DETECTED")
            continue
        alarm = item["alarm"]
        lines.append(
            f"{head}\n            detected vs {alarm['comparison']} at "
            f"{_hm(alarm['timestamp'])}, {item['delay_h']:.1f} h later, after "
            f"{alarm['after_events']} events{_effect(alarm)}"
        )
    lines += ["", render_text(doc)]  # with its live-quality block
    lines += _candidate_lines(doc.get("gold_candidates"))
    return "\n".join(lines)


def _hm(value: str | float) -> str:
    when = (
        datetime.fromtimestamp(value, UTC)
        if isinstance(value, int | float)
        else datetime.fromisoformat(value.replace("Z", "+00:00"))
    )
    return when.strftime("%Y-%m-%d %H:%M UTC")


def _effect(alarm: dict[str, Any]) -> str:
    if "rate_current" in alarm:
        from service.drift.stage import rate_moves  # (numpy, scipy: not before the port binds)

        return f" ({rate_moves(alarm)})"
    jsd = alarm.get("js_divergence")
    return f" (JSD {jsd:.3f})" if jsd is not None else ""


def _candidate_lines(summary: HarvestSummary | None, top: int = 5) -> list[str]:
    """The first ``top`` suggestions in the labellers' queue (by priority, alternating topics
    and languages: :meth:`~service.harvest.stage.HarvestStage.best_records`; their count by
    reason, and what was shed, are in the replay summary above them)."""
    if not summary or not summary["top"]:
        return []
    lines = [f"first {min(top, len(summary['top']))} suggestions in the labellers' queue:"]
    for row in summary["top"][:top]:
        lines.append(
            f"  {row['id']}  x{row['count']:<3} [{row.get('language')}, {row.get('topic')}] "
            f"{row['question']}  ({', '.join(row.get('reasons', {}))})"
        )
    return lines


# -- live mode -------------------------------------------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """Bind the listening socket now, so a taken port fails before anything starts (the
    check ``goldwatch serve`` makes too: :func:`service.api.listen.bind`).

    Raises:
        DemoError: the port is in use, or the address cannot be bound.
    """
    try:
        return listen.bind(host, port, suspect="another goldwatch demo?")
    except listen.ListenError as exc:
        raise DemoError(str(exc)) from None


def banner(settings: Settings, token: DemoToken, workdir: Path) -> str:
    """What to look at while the demo runs: URLs and copy-paste ``curl`` lines. A token the
    demo made up is shown; the user's own is not: its source is, and the ``curl`` lines read
    it from there."""
    host = settings.api.host
    shown = "127.0.0.1" if host in ("0.0.0.0", "::", "") else host
    base = f"http://{shown}:{settings.api.port}"
    auth = f'-H "Authorization: Bearer {token.curl_value}"'
    if token.source is None:
        token_line = f"  API token        {token.value}"
    else:
        token_line = f"  API token        yours, from {token.source} (not printed)"
    rate = settings.source.rate
    pace = f"{rate:g} events/s" if rate else "as fast as possible"
    return "\n".join([
        f"goldwatch demo: a college help bot's 3-day query log ({pace}), shadow candidate "
        "'hybrid', harvesting on",
        f"  working folder   {workdir}  (state, dead letters, run history, gold.jsonl)",
        token_line,
        "",
        f"  status page      {base}/",
        f"  metrics          {base}/metrics",
        f"  API docs         {base}/docs",
        "",
        "Try:",
        f"  curl -s {base}/v1/status",
        f"  curl -s {base}/v1/drift",
        f"  curl -s {base}/v1/refusals",
        f"  curl -s {base}/v1/shadow",
        f"  curl -s {base}/v1/quality",
        f"  curl -s -X POST {auth} {base}/v1/shadow/evaluate     # gold-set run now",
        f"  curl -s {base}/v1/shadow/evaluate                     # its result",
        f"  curl -s '{base}/v1/gold-candidates?limit=3'",
        "  # accept a suggestion into the gold set (ids and pooled passages from the list above):",
        f"  curl -s -X POST {auth} -H 'Content-Type: application/json' \\",
        "       -d '{\"gold\": [\"p-0038\"], \"kind\": \"plain\"}' \\",
        f"       {base}/v1/gold-candidates/<c-id>/accept",
        f"  tail -n 1 {workdir / GOLD_FILE}",
        "",
        "Ctrl-C stops it.",
    ])  # fmt: skip


def run_live(
    workdir: Path,
    *,
    rate: float,
    host: str,
    port: int,
    echo: Callable[[str], None],
) -> int:
    """Serve the demo until SIGINT or SIGTERM; return the exit code (0 after a clean stop).

    Raises:
        service.settings.ConfigError: a ``GOLDWATCH_*`` variable is invalid (checked before
            the port is bound or the working folder touched).
        DemoError: the port is taken or the working folder is unusable.
        service.state.StateError, ValueError, OSError: the service cannot start.
    """
    # the settings first: a bad GOLDWATCH_* variable fails before the port or the folder
    settings, token = live_settings(workdir, rate=rate, host=host, port=port)
    sock = bind(host, port)  # then the port, before the heavy imports: a taken port fails at once
    try:
        from service.api.app import create_app
        from service.api.serving import GracefulServer, server_config, shutdown_problem
        from service.runtime.process import Runtime

        prepare_workdir(workdir)
        runtime = Runtime(settings)
    except BaseException:
        sock.close()
        raise
    app = create_app(settings, runtime)
    config = server_config(
        app, settings.api, log_level="warning", timeout_graceful_shutdown=5, lifespan="on"
    )
    server = GracefulServer(config)
    echo(banner(settings, token, workdir))
    done = threading.Event()
    watcher = threading.Thread(
        target=_announce_end, args=(runtime, done, echo), name="goldwatch-demo-watch",
        daemon=True,
    )  # fmt: skip
    watcher.start()
    try:
        server.run(sockets=[sock])
    finally:
        done.set()
        sock.close()
    if not server.started:
        return 1
    problem = shutdown_problem(server, runtime)
    if problem is not None:
        echo(f"goldwatch demo: the stop was not clean: {problem}")
        return 1
    if server.stopped_by is not None:
        echo(
            f"goldwatch demo: stopped; its state and dead letters are kept in {workdir} "
            "until the next demo run, which starts fresh (gold.jsonl, with what you accepted, "
            "is kept)"
        )
    return 0


def _announce_end(runtime: Any, done: threading.Event, echo: Callable[[str], None]) -> None:
    """Say once when the whole log has been read (the service keeps serving)."""
    while not done.wait(1.0):
        with contextlib.suppress(Exception):  # a status read racing the shutdown
            status = runtime.status()
            if status["input_finished"]:
                processed = status["totals"].get("processed", "all")
                echo(
                    f"goldwatch demo: the whole log is in ({processed} events processed); "
                    "still serving, Ctrl-C stops it"
                )
                return
