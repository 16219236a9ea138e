"""Two ``goldwatch serve`` replicas in one consumer group, scraped by a real Prometheus.

The Tansu broker carries a topic of 4 partitions; two replicas share one consumer group (two
partitions each) and Prometheus (Debian's 2.42, started here on a free port) scrapes both every
0.9 s and evaluates the rules every second (``SCRAPE_INTERVAL``: not a divisor of the rules'
interval, so that no replica's scrape is in flight at every evaluation, see
:func:`_settled_at`). A producer thread replays real query-log events
(benchmarks/streams.py: NQ-open and CLINC150 questions, CLINC's out-of-scope ones refused) at
``RATE`` events/s, a few poison pills among them; after ``BASELINE_S`` seconds it plants a
refusal shift: from then on ``PLANTED_SHARE`` of the answers that were not refused become the
refusal text (what a broken retriever or prompt does). Then, through the HTTP API:

- ``RefusalRateMoved`` is not even pending before the shift, although for several seconds
  before it both windows already held >= 200 answers (its sample-size guards passed), and it
  fires after it (the time from the shift to pending and to firing is printed);
- every dashboard panel query succeeds and returns data (pending metrics excepted);
- every recording rule that sums the replicas (``sum without (instance, pod ...)``) equals, at
  the same evaluation timestamp, the sum of its per-replica values, both replicas contribute,
  and the counters Prometheus holds equal both replicas' own ``/metrics`` and what was produced.

Windows. ``RefusalRateMoved`` compares the last hour with the 24 hours before it and must hold
for 15 minutes: a test cannot wait for that. Prometheus loads the shipped rules file with these
substitutions and nothing else (``shortened_rules``; the YAML is re-dumped, so comments go):

- group ``interval: 1m`` -> ``1s``;
- ``[1h]`` -> ``[20s]`` (the "last hour" of every rule), ``[1d] offset 1h`` -> ``[40s] offset
  20s`` (the day-long baseline, shifted by the new hour);
- ``for: 15m`` of ``RefusalRateMoved`` -> ``5s`` (a quarter of its window, as 15 m is of 1 h).

Thresholds (|z| >= 4, >= 5 points, >= 200 answers in each window) are the real ones. With 40
answers/s and about 6 % natural refusals, the alert's condition holds once the baseline window
has >= 200 answers of the old rate and the last 20 s enough of the new one: measured, it is
pending 3-4 s after the shift and firing 5 s later (8-9 s after the shift).
The day-long baseline shrinks to 40 s, not 1 d / 180 = 8 min: a test cannot wait for that
either, and the z test only needs the baseline to hold >= 200 answers of the old rate.
The whole test takes about 75 s.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import yaml

from benchmarks.streams import REFUSAL, encode, poison_pills, query_log_events
from tests.acceptance.conftest import kafka_config
from tests.acceptance.service_process import ServiceProcess, metric_sum
from tests.kafka_broker import TansuBroker, free_port
from tests.ops import opsfiles
from tests.ops.test_dashboards_live import (
    DEMO,
    UNTRUSTED_SCOPE_EMPTY,
    _live,
    _pending,
    _query,
    _wait,
    demo_data,
)

RATE = 40  # events per second, over 4 partitions
#: Traffic before the shift: the shortened hour (20 s) plus 12 s in which both windows hold
#: >= 200 answers of the same rate, so the alert's sample-size guards pass and it must not fire.
BASELINE_S = 32.0
PLANTED_SHARE = 0.4  # of the answers not refused, refused after the shift
ALERT_TIMEOUT_S = 40.0
HOUR, DAY, FOR = "20s", "40s", "5s"
#: Scrape interval. Prometheus starts each target's scrapes and each rule group's evaluations
#: at fixed offsets (hashes of the target and of the rules file, so a new draw every run); with
#: equal intervals a replica whose scrape straddled one evaluation straddled all of them, and
#: every recorded value then missed that replica's last scrape (the record check failed so in
#: 1 of 3 runs here). 0.9 s against 1 s shifts the offset by 0.1 s an evaluation.
SCRAPE_INTERVAL = "900ms"
#: What the alert reads (shown when it does not fire).
REFUSAL_RECORDS = ("goldwatch:refusal:ratio_rate1h", "goldwatch:refusal:ratio_rate1d_offset1h",
                   "goldwatch:refusal:zscore1h", "goldwatch:answers:increase1h",
                   "goldwatch:answers:increase1d_offset1h")  # fmt: skip
#: Panel queries that may be empty here, and why.
EXPECTED_EMPTY: dict[str, str] = {
    "ACL violations per hour by retriever and role/B":
        "no answer in this traffic cites a passage its asker may not read (no leak planted)",
    "Questions in languages the candidates leave out (share of the last hour)/A":
        "the replicas run the default language candidates, which leave no language out",
    "Questions given no topic (share of the last hour)/A":
        "every question is in a language its gold set has rows in",
    **UNTRUSTED_SCOPE_EMPTY,  # the demo's gold set: its out-of-scope detector is untrusted
}  # fmt: skip


def shortened_rules(text: str) -> str:
    """The rules file with the windows a test can wait for (see the module docstring)."""
    doc = yaml.safe_load(text)
    (group,) = doc["groups"]
    assert group["interval"] == "1m"
    group["interval"] = "1s"
    alert = next(r for r in group["rules"] if r.get("alert") == "RefusalRateMoved")
    assert alert["for"] == "15m", "RefusalRateMoved's 'for' changed: update this test"
    alert["for"] = FOR
    baseline = 0
    for rule in group["rules"]:
        expr = rule["expr"]
        baseline += expr.count("[1d] offset 1h")
        expr = expr.replace("[1d] offset 1h", f"[{DAY}] offset {HOUR}")
        rule["expr"] = expr.replace("[1h]", f"[{HOUR}]")
    # answers and refusals of the refusal baseline (and the gold-recall baseline)
    assert baseline >= 2, "the refusal baseline no longer reads [1d] offset 1h: update this test"
    return yaml.safe_dump(doc, sort_keys=False)


def _refused(event: dict[str, Any]) -> bool:
    return bool(event["answer"]["refused"])


class Traffic(threading.Thread):
    """Produces real events at ``RATE``/s round-robin over 4 partitions until stopped; after
    ``BASELINE_S`` refuses ``PLANTED_SHARE`` of the answers that were not refused."""

    def __init__(self, broker: TansuBroker, topic: str) -> None:
        super().__init__(daemon=True)
        self.broker, self.topic = broker, topic
        self.stop_event = threading.Event()
        self.events = query_log_events(RATE * 120, seed=31, id_prefix="rp-")
        self.pills = poison_pills(16, seed=31)  # two of each kind, early in the baseline
        self.rng = random.Random(31)
        self.sent = 0
        self.good = 0
        self.answers = {"before": [0, 0], "after": [0, 0]}  # [answers, refusals]
        self.shift_at: float | None = None  # time.monotonic() of the first shifted event
        self.error: BaseException | None = None

    def run(self) -> None:
        try:
            self._run()
        except BaseException as exc:  # reported by the test
            self.error = exc

    def _run(self) -> None:
        producer = self.broker.producer()
        try:
            started = time.monotonic()
            tick = 0
            while not self.stop_event.is_set():
                shifted = time.monotonic() - started >= BASELINE_S
                if shifted and self.shift_at is None:
                    self.shift_at = time.monotonic()
                for _ in range(RATE // 4):
                    self._send(producer, shifted)
                producer.flush(timeout=30)
                tick += 1
                time.sleep(max(0.0, started + tick * 0.25 - time.monotonic()))
        finally:
            producer.close()

    def _send(self, producer: Any, shifted: bool) -> None:
        n = self.sent
        if n % 40 == 20 and n // 40 < len(self.pills):  # one pill per second at first
            value, _ = self.pills[n // 40]
        else:
            event = self.events[self.good % len(self.events)]
            event = {**event, "event_id": f"rp-{self.good:07d}"}
            if shifted and not _refused(event) and self.rng.random() < PLANTED_SHARE:
                event["answer"] = {"text": REFUSAL, "refused": True, "citations": []}
            counts = self.answers["after" if shifted else "before"]
            counts[0] += 1
            counts[1] += _refused(event)
            self.good += 1
            value = encode(event)
        producer.send(self.topic, value=value, key=f"k-{n}".encode(), partition=n % 4)
        self.sent += 1


def _assigned(service: ServiceProcess) -> set[int]:
    return set((service.status().get("source") or {}).get("assigned_partitions") or ())


@pytest.fixture(scope="module")
def stack(
    promtool: str, broker: TansuBroker, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    """Broker topic, two replicas in one group, Prometheus scraping both; yields
    ``{"url", "replicas", "process"}``."""
    binary = shutil.which("prometheus")
    if binary is None:
        pytest.fail("prometheus not found next to promtool: apt-get install -y prometheus")
    workdir = tmp_path_factory.mktemp("replicas")
    topic = f"queries-prom-{uuid.uuid4().hex[:8]}"
    broker.create_topic(topic, 4)
    group = f"gw-prom-{uuid.uuid4().hex[:10]}"
    demo = yaml.safe_load((DEMO / "goldwatch.yaml").read_text())
    replicas: list[ServiceProcess] = []
    process: subprocess.Popen[bytes] | None = None
    log = (workdir / "prometheus.log").open("wb")
    try:
        for name in ("a", "b"):
            config = kafka_config(broker, topic, group, state=workdir / name / "state.sqlite")
            data = demo_data(workdir / name)
            replicas.append(ServiceProcess.start(workdir / name, {**demo, **data, **config}))
        deadline = time.monotonic() + 45
        while True:
            parts = [_assigned(r) for r in replicas]
            if all(len(p) == 2 for p in parts) and parts[0] | parts[1] == {0, 1, 2, 3}:
                break
            assert time.monotonic() < deadline, f"replicas did not split the partitions: {parts}"
            time.sleep(0.2)
        rules = workdir / "goldwatch.rules.yaml"
        rules.write_text(shortened_rules(opsfiles.RULES_FILE.read_text()))
        port = free_port()
        config_path = workdir / "prometheus.yml"
        config_path.write_text(yaml.safe_dump({
            "global": {"scrape_interval": SCRAPE_INTERVAL, "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [{"job_name": "goldwatch", "static_configs": [
                {"targets": [f"127.0.0.1:{r.port}" for r in replicas]}]}],
        }))  # fmt: skip
        process = subprocess.Popen(
            [binary, f"--config.file={config_path}", f"--storage.tsdb.path={workdir / 'tsdb'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        url = f"http://127.0.0.1:{port}"
        _wait(url, 'count(up{job="goldwatch"} == 1) == 2', process)
        _wait(url, "goldwatch:events_consumed:rate5m", process)  # rules evaluated once
        groups = httpx.get(f"{url}/api/v1/rules", timeout=10).json()["data"]["groups"]
        unhealthy = [(r["name"], r.get("lastError")) for g in groups for r in g["rules"]
                     if r["health"] != "ok"]  # fmt: skip
        assert len(groups) == 1 and unhealthy == [], unhealthy
        yield {"url": url, "replicas": replicas, "process": process, "topic": topic,
               "broker": broker}  # fmt: skip
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=10)
        log.close()
        for replica in replicas:
            replica.terminate()


def _alert(url: str, name: str) -> dict[str, Any] | None:
    alerts = httpx.get(f"{url}/api/v1/alerts", timeout=10).json()["data"]["alerts"]
    return next((a for a in alerts if a["labels"]["alertname"] == name), None)


def _vector(url: str, expr: str, at: float | None = None) -> list[dict[str, Any]]:
    params: dict[str, Any] = {"query": expr}
    if at is not None:
        params["time"] = f"{at:.3f}"
    answer = httpx.get(f"{url}/api/v1/query", params=params, timeout=10).json()
    assert answer["status"] == "success", (expr, answer)
    return list(answer["data"]["result"])


def _key(metric: dict[str, str], drop: tuple[str, ...] = ("__name__",)) -> frozenset[Any]:
    return frozenset((k, v) for k, v in metric.items() if k not in drop)


def _top_level_sum(expr: str) -> tuple[str, str] | None:
    """``sum without (instance, pod<, more>) (<inner>)`` as a whole -> (more, inner)."""
    expr = " ".join(expr.split())
    match = re.match(r"sum without \(instance, pod((?:, \w+)*)\) \(", expr)
    if match is None:
        return None
    depth = 0
    for i in range(match.end() - 1, len(expr)):
        depth += {"(": 1, ")": -1}.get(expr[i], 0)
        if depth == 0:
            return (match.group(1), expr[match.end() : i]) if i == len(expr) - 1 else None
    return None


def _summed_records() -> dict[str, tuple[str, str]]:
    out = {}
    for name, expr in opsfiles.records().items():
        parsed = _top_level_sum(expr.replace("[1h]", f"[{HOUR}]").replace(
            "[1d] offset 1h", f"[{DAY}] offset {HOUR}"))  # fmt: skip
        if parsed is not None:
            out[name] = parsed
    return out


def _scraped_after(url: str, since: float, timeout_s: float = 60.0) -> float:
    """Wait until Prometheus has scraped both replicas with a scrape that began after the
    Unix time ``since`` (``timestamp(up)`` is a scrape's start); return the later start.

    A scrape is due every 0.9 s, but on a loaded machine one can come late: a fixed sleep
    could leave the last scrape before the replicas' final counts."""
    deadline = time.monotonic() + timeout_s
    while True:
        starts = [float(s["value"][1]) for s in _vector(url, 'timestamp(up{job="goldwatch"})')]
        if len(starts) == 2 and min(starts) > since:
            return max(starts)
        assert time.monotonic() < deadline, f"no scrape of both replicas after {since}: {starts}"
        time.sleep(0.2)


#: Seconds allowed between a scrape's end and its samples being stored (a loaded machine).
STORE_MARGIN_S = 0.1


def _settled_at(url: str, at: float) -> bool:
    """Whether every scrape of both replicas that began by ``at`` had ended by then.

    A scrape's samples carry its start time but are stored when it ends; a rule evaluated at
    ``at`` while a scrape that began before ``at`` was still running did not see that scrape,
    which a query at ``at`` made later does see. Only at a settled evaluation must a record
    equal what its expression gives now."""
    job = '{job="goldwatch"}'
    starts = {s["metric"]["instance"]: float(s["value"][1])
              for s in _vector(url, f"timestamp(up{job})", at)}  # fmt: skip
    durations = {s["metric"]["instance"]: float(s["value"][1])
                 for s in _vector(url, f"scrape_duration_seconds{job}", at)}  # fmt: skip
    if len(starts) != 2 or starts.keys() != durations.keys():
        return False
    return all(starts[i] + durations[i] + STORE_MARGIN_S < at for i in starts)


def _check_record(
    url: str, name: str, more: str, inner: str, seen: set[str], at: float, skipped: list[float]
) -> str | None:
    """Compare ``name`` with the sum of its per-replica values at its last evaluation up to
    ``at`` that no scrape was running at (:func:`_settled_at`; others are skipped, as they
    say nothing about the rule, and their times added to ``skipped``); up to three such
    evaluations, in case one was missed by the margin. None when equal."""
    mismatch = None
    compared = 0
    for _ in range(40):  # 40 s of evaluations: several cycles of the scrape offsets
        stamps = _vector(url, f"timestamp({name})", at)
        if not stamps:  # e.g. no duplicates: then no replica has a value either
            per_replica = _vector(url, f"sum without (pod{more}) ({inner})", at)
            return f"{name}: no series but replicas have {per_replica}" if per_replica else None
        at = float(stamps[0]["value"][1])
        if not _settled_at(url, at):
            skipped.append(at)
            at -= 0.5  # the evaluation before
            continue
        recorded = {_key(s["metric"]): float(s["value"][1]) for s in _vector(url, name, at)}
        per_replica = _vector(url, f"sum without (pod{more}) ({inner})", at)
        summed: dict[frozenset[Any], float] = {}
        for s in per_replica:
            key = _key(s["metric"], ("__name__", "instance"))
            summed[key] = summed.get(key, 0.0) + float(s["value"][1])
        if any(recorded.values()):
            seen.add(name)
        if recorded.keys() == summed.keys() and all(
            recorded[k] == pytest.approx(summed[k], rel=1e-9, abs=1e-12) for k in recorded
        ):
            return None
        mismatch = f"{name} at {at}: recorded {recorded} != sum over replicas {summed}"
        compared += 1
        if compared == 3:
            return mismatch
        at -= 0.5
    return mismatch or f"{name}: no evaluation before {at} without a scrape in flight"


@pytest.mark.timeout(900)  # ~50 s quiet with its stack (broker, 2 replicas, Prometheus)
def test_refusal_shift_fires_dashboards_answer_and_rules_sum_the_replicas(
    stack: dict[str, Any],
) -> None:
    url, replicas = stack["url"], stack["replicas"]
    traffic = Traffic(stack["broker"], stack["topic"])
    started = time.monotonic()
    traffic.start()
    try:
        # -- before the shift the alert is not even pending, though its guards pass ----------
        guards_passed = 0.0
        while traffic.shift_at is None:
            assert traffic.error is None, traffic.error
            assert _alert(url, "RefusalRateMoved") is None, "active before the shift"
            if _vector(url, "goldwatch:answers:increase1d_offset1h >= 200"
                       " and goldwatch:answers:increase1h >= 200"):  # fmt: skip
                guards_passed = guards_passed or time.monotonic()
            assert time.monotonic() - started < BASELINE_S + 10
            time.sleep(0.5)
        unshifted_s = traffic.shift_at - guards_passed if guards_passed else 0.0
        assert unshifted_s >= 3, f"both windows full for only {unshifted_s:.1f} s before the shift"
        # -- after it, it fires -----------------------------------------------------------------
        pending_after = None
        while True:
            assert traffic.error is None, traffic.error
            alert = _alert(url, "RefusalRateMoved")
            if alert and alert["state"] == "pending" and pending_after is None:
                pending_after = time.monotonic() - traffic.shift_at
            if alert and alert["state"] == "firing":
                break
            assert time.monotonic() - traffic.shift_at < ALERT_TIMEOUT_S, (
                f"RefusalRateMoved not firing {ALERT_TIMEOUT_S} s after the shift: {alert}; "
                f"{ {q: _vector(url, q) for q in REFUSAL_RECORDS} }"
            )
            time.sleep(0.25)
        firing_after = time.monotonic() - traffic.shift_at
        assert alert["labels"]["job"] == "goldwatch"
        assert alert["labels"]["severity"] == "warning"
        before, after = traffic.answers["before"], traffic.answers["after"]
        rate_before, rate_after = before[1] / before[0], after[1] / after[0]
        assert rate_before < 0.1 < 0.3 < rate_after, (rate_before, rate_after)
        # $value is the last 20 s's rate: between the old rate and the new one, and up
        assert rate_before + 0.05 <= float(alert["value"]) <= rate_after + 0.05, alert

        # -- every dashboard query answers (traffic still flowing) --------------------------
        failed, empty = {}, []
        for dashboard in opsfiles.dashboards().values():
            for where, expr in opsfiles.dashboard_queries(dashboard):
                if where.startswith("$"):
                    expr = f"count({expr})"
                answer = _query(url, _live(expr))
                if answer.get("status") != "success":
                    failed[where] = answer.get("error")
                elif not answer["data"]["result"] and not _pending(expr):
                    empty.append(where)
        assert failed == {}
        assert sorted(set(empty) - set(EXPECTED_EMPTY)) == [], "empty: fix or explain"
    finally:
        traffic.stop_event.set()
        traffic.join(timeout=30)
    assert traffic.error is None, traffic.error

    # -- once consumed: Prometheus's counters = the replicas' own = what was produced ------
    deadline = time.monotonic() + 30
    while sum(r.metric("goldwatch_events_consumed_total") for r in replicas) < traffic.sent:
        assert time.monotonic() < deadline, [r.totals() for r in replicas]
        time.sleep(0.2)
    samples = [r.samples() for r in replicas]
    final_read = time.time()  # the replicas' counts are final from here on
    processed = [metric_sum(s, "goldwatch_events_processed_total") for s in samples]
    answers = [metric_sum(s, "goldwatch_answers_total") for s in samples]
    refusals = [metric_sum(s, "goldwatch_refusals_total") for s in samples]
    assert all(n > 0 for n in processed), processed
    assert sum(processed) == traffic.good
    assert sum(answers) == before[0] + after[0] == traffic.good
    assert sum(refusals) == before[1] + after[1]
    # Everything below is read at one instant, ``at``: a scrape of both replicas that began
    # after their final counts (and an evaluation of the rules on it). Read at "now" instead,
    # the [20s] windows would empty while the checks run on a slow machine (the traffic has
    # stopped), and the records and the ratio would read 0 or NaN.
    at = _scraped_after(url, final_read) + 1.5  # the rules are evaluated every second
    _scraped_after(url, at)  # ``at`` is in Prometheus's past: its answers there are final
    for metric, want in (("goldwatch_events_consumed_total", traffic.sent),
                         ("goldwatch_answers_total", sum(answers)),
                         ("goldwatch_refusals_total", sum(refusals))):  # fmt: skip
        by_instance = _vector(url, f"sum by (instance) ({metric})", at)
        assert len(by_instance) == 2, by_instance
        assert sum(float(s["value"][1]) for s in by_instance) == want, metric

    # -- recording rules that sum the replicas equal the sum of their per-replica values ---
    summed = _summed_records()
    assert {"goldwatch:answers:increase1h", "goldwatch:refusals:increase1h",
            "goldwatch:events_consumed:rate5m"} <= summed.keys()  # fmt: skip
    nonzero: set[str] = set()
    unsettled: list[float] = []
    mismatches = [
        m
        for name, (more, inner) in sorted(summed.items())
        if (m := _check_record(url, name, more, inner, nonzero, at, unsettled))
    ]
    assert mismatches == []
    assert {"goldwatch:answers:increase1h", "goldwatch:refusals:increase1h",
            "goldwatch:answers:increase1d_offset1h", "goldwatch:events_consumed:rate5m",
            "goldwatch:questions:increase1h"} <= nonzero  # fmt: skip
    contributing = {s["metric"]["instance"] for s in _vector(
        url, "sum without (pod) (increase(goldwatch_answers_total[20s])) > 0", at)}  # fmt: skip
    assert len(contributing) == 2, contributing
    # the ratio is the global one: summed refusals over summed answers, not a mean of ratios
    ratio = _vector(url, "goldwatch:refusal:ratio_rate1h", at)
    parts = _vector(url, "goldwatch:refusals:increase1h / goldwatch:answers:increase1h", at)
    assert float(ratio[0]["value"][1]) == pytest.approx(float(parts[0]["value"][1]))

    scrapes = _vector(url, 'sum(count_over_time(up{job="goldwatch"}[10m]))')
    print(
        f"\nproduced {traffic.sent} messages ({traffic.good} events, "
        f"{traffic.sent - traffic.good} poison pills); refusal rate {rate_before:.3f} before "
        f"the shift ({before[0]} answers), {rate_after:.3f} after ({after[0]}); replicas "
        f"processed {[int(n) for n in processed]}; {int(float(scrapes[0]['value'][1]))} scrapes "
        f"(both targets); RefusalRateMoved pending {pending_after and round(pending_after, 1)} s "
        f"and firing {firing_after:.1f} s after the shift (guards passed {unshifted_s:.1f} s "
        f"before it without the alert); {len(summed)} summed records checked "
        f"({len(unsettled)} evaluations skipped, a scrape in flight), "
        f"{len(nonzero)} non-zero: {sorted(nonzero)}"
    )
