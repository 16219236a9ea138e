"""A gold-set file edited by hand while the service runs is reloaded (real HTTP).

Trial 24 (LOW 7): the trial fixed an ``answer_contains`` and added a row by hand while
``serve`` ran; ``/v1/quality`` kept the old ``gold_set_version`` for over a minute, while
``goldwatch eval`` read the file's, until a restart. The poll that checks the file
(``Runtime._check_gold_file``, every ``GOLD_CHECK_S``; shortened here so the test does not
wait 10 s a step) now starts the refresh an accept starts when the file changed since it was
read. A file that does not load keeps the old gold set and says so (``gold_file_error``), and
is read once it loads again. ``coverage.gold_rows`` says how many rows the gold set in use
has, beside ``coverage.rows`` (the rows measured).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.data.goldset import load_gold_set
from service.demo import demo_path
from service.settings import load_settings
from tests.service.api.test_app import TOKEN, Server, _free_port

WAIT_S = 120.0  # a bound on waits for the service (a refresh refits the topic model)


@pytest.fixture()
def server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    monkeypatch.setattr("service.runtime.process.GOLD_CHECK_S", 0.2)
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    settings = load_settings(gold_set=gold, source={"kind": "none"},
                             state={"path": tmp_path / "state.sqlite"},
                             api={"port": _free_port(), "token": TOKEN})  # fmt: skip
    with Server(settings) as running:
        yield running


def _get(server: Server, route: str) -> dict[str, Any]:
    response = httpx.get(server.base + route, timeout=30)
    assert response.status_code == 200, response.text
    return response.json()  # type: ignore[no-any-return]


def _until(what: str, done: Callable[[], bool]) -> None:
    """Wait (at most ``WAIT_S``) until ``done()`` holds; fail naming ``what``."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        assert time.monotonic() < deadline, f"not within {WAIT_S} s: {what}"
        time.sleep(0.1)


def test_a_hand_edited_gold_file_is_served_without_a_restart(server: Server) -> None:
    runtime = server.runtime
    path = Path(runtime.settings.gold_set)  # type: ignore[arg-type]
    started = load_gold_set(path)
    quality = _get(server, "/v1/quality")
    assert quality["gold_set_version"] == started.version
    assert quality["coverage"]["gold_rows"] == len(started)
    assert quality["coverage"]["rows"] == 0  # no known question measured yet
    assert not runtime._reload_if_changed()  # unchanged since it was read at the start

    # the trial's edit: one row's answer_contains fixed, one row added, by hand
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    rows[0]["answer_contains"] = ["fixed by hand"]
    rows.append({"id": "q-by-hand", "question": "Can I bring my pet iguana to the hostel?",
                 "gold": [], "kind": "unanswerable"})  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    edited = load_gold_set(path)
    assert edited.version != started.version
    _until("the edited file served",
           lambda: _get(server, "/v1/quality")["gold_set_version"] == edited.version)  # fmt: skip
    quality = _get(server, "/v1/quality")
    assert quality["coverage"]["gold_rows"] == len(started) + 1
    assert [c["to"] for c in quality["coverage"]["changes"]] == [edited.version]
    assert runtime.gold_refresh_error is None
    _until("the refresh counted", lambda: runtime.gold_refreshes == 1)
    assert not runtime._reload_if_changed()  # read: no second refresh for the same file

    # a file broken by hand: the old gold set stays, gold_file_error says why, no refresh
    with path.open("a", encoding="utf-8") as handle:
        handle.write("this is not json\n")
    _until("gold_file_error reported", lambda: _get(server, "/v1/status")["gold_file_error"])
    assert _get(server, "/v1/quality")["gold_set_version"] == edited.version
    assert runtime.gold_refreshes == 1 and runtime.gold_refresh_error is None

    # mended: read again
    rows.append({"id": "q-by-hand-2", "question": "Is there a swimming pool on campus?",
                 "gold": [], "kind": "unanswerable"})  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    mended = load_gold_set(path)
    _until("the mended file served",
           lambda: _get(server, "/v1/quality")["gold_set_version"] == mended.version)  # fmt: skip
    assert _get(server, "/v1/status")["gold_file_error"] is None
    assert _get(server, "/v1/quality")["coverage"]["gold_rows"] == len(started) + 2
    _until("the second refresh counted", lambda: runtime.gold_refreshes == 2)
    assert runtime.gold_refresh_error is None


@pytest.fixture()
def with_corpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Server]:
    """As :func:`server`, with the demo corpus: out-of-scope detection and its drift on."""
    monkeypatch.setattr("service.runtime.process.GOLD_CHECK_S", 0.2)
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    settings = load_settings(gold_set=gold, corpus=demo_path("corpus.jsonl"),
                             source={"kind": "none"}, state={"path": tmp_path / "state.sqlite"},
                             api={"port": _free_port(), "token": TOKEN})  # fmt: skip
    with Server(settings) as running:
        yield running


def test_a_renumbered_shuffled_gold_file_keeps_live_quality_and_drift(with_corpus: Server) -> None:
    """Trial 50, M2: the same rows under new ids (``n-001…``) in another order. Every known
    figure, refusal count and drift window is carried over: /v1/quality before and after are
    the same but for the versions and the change record, which keeps every measured row."""
    server, runtime = with_corpus, with_corpus.runtime
    path = Path(runtime.settings.gold_set)  # type: ignore[arg-type]
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    events = [json.loads(line) for line in demo_path("querylog.jsonl").read_text(
        encoding="utf-8").splitlines()[:600]]  # fmt: skip
    for n, known in enumerate(events[::5]):  # every fifth asks a gold question word for word
        known["question"] = rows[n % len(rows)]["question"]
    for start in range(0, len(events), 200):
        response = server.post(events[start : start + 200])
        assert response.status_code == 200, response.text
    before = _get(server, "/v1/quality")
    assert before["known"]["production"]["n_known"] > 0  # the demo log asks known questions
    assert before["refusals"]["known_answerable"] > 0
    measured = before["coverage"]["rows"]

    order = sorted(range(len(rows)), key=lambda i: (i * 37) % len(rows))  # a fixed shuffle
    assert order != list(range(len(rows)))
    renumbered = [{**rows[i], "id": f"n-{n:03d}"} for n, i in enumerate(order, 1)]
    path.write_text("".join(json.dumps(row) + "\n" for row in renumbered), encoding="utf-8")
    new = load_gold_set(path)
    _until("the renumbered file served",
           lambda: _get(server, "/v1/quality")["gold_set_version"] == new.version)  # fmt: skip
    _until("the refresh counted", lambda: runtime.gold_refreshes == 1)
    assert runtime.gold_refresh_error is None
    after = _get(server, "/v1/quality")
    for key in ("known", "refusals", "known_refusal", "by_language", "near_matches_rejected"):
        assert after[key] == before[key], key
    assert after["coverage"]["rows"] == measured
    [change] = after["coverage"]["changes"]
    assert (change["kept_rows"], change["dropped_rows"], change["dropped_events"]) == (
        measured, 0, 0)  # fmt: skip
    assert change["kept_events"] == before["known"]["production"]["n_known"]
    drift = runtime.live.analytics.drift
    assert drift is not None and drift.restarts == {}  # no dimension started afresh


def test_a_restart_on_the_renumbered_file_resumes_the_same_figures(tmp_path: Path) -> None:
    """The state saved before the renumbering, resumed on the renumbered file by a restart:
    the same known figures and refusal counts, and no drift dimension started afresh."""
    gold = tmp_path / "gold.jsonl"
    shutil.copy(demo_path("gold.jsonl"), gold)
    rows = [json.loads(line) for line in gold.read_text(encoding="utf-8").splitlines()]
    events = [json.loads(line) for line in demo_path("querylog.jsonl").read_text(
        encoding="utf-8").splitlines()[:400]]  # fmt: skip
    for n, known in enumerate(events[::4]):  # every fourth asks a gold question word for word
        known["question"] = rows[n % len(rows)]["question"]

    def settings() -> Any:
        return load_settings(gold_set=gold, corpus=demo_path("corpus.jsonl"),
                             source={"kind": "none"}, state={"path": tmp_path / "state.sqlite"},
                             api={"port": _free_port(), "token": TOKEN})  # fmt: skip

    with Server(settings()) as first:
        assert first.post(events).status_code == 200
        before = _get(first, "/v1/quality")
    assert before["known"]["production"]["n_known"] == 100
    renumbered = [{**row, "id": f"n-{len(rows) - i:03d}"} for i, row in enumerate(rows)][::-1]
    gold.write_text("".join(json.dumps(row) + "\n" for row in renumbered), encoding="utf-8")
    with Server(settings()) as second:
        after = _get(second, "/v1/quality")
        drift = second.runtime.live.analytics.drift
        assert drift is not None and drift.restarts == {}
    assert after["gold_set_version"] == load_gold_set(gold).version != before["gold_set_version"]
    for key in ("known", "refusals", "known_refusal", "by_language", "near_matches_rejected"):
        assert after[key] == before[key], key
    [change] = after["coverage"]["changes"]
    assert (change["kept_rows"], change["dropped_rows"]) == (before["coverage"]["rows"], 0)
