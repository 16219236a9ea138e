"""Each state has its own dead-letter file by default (trial 50, L2: nine ``replay --state``
runs over one log, on different state files, all appended to ``<log>.dlq.jsonl``: 54 lines
for 6 letters a run, while a file's run marks and positions count the letters of one state).

With ``--state S`` and neither ``--dlq`` nor ``source.dlq_path`` the letters go to
``S.dlq.jsonl``; a state that read the log before session 51 (a position or run mark without
``dlq_path``) keeps the log's ``<log>.dlq.jsonl``, where its letters are counted
(:func:`consumers.file_source.state_dead_letters`).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from consumers.file_source import FileSource, state_dead_letters, state_keys
from service.cli.config import _dead_letter_line
from service.jobs.replay import run_replay
from service.settings import Settings, load_settings
from service.state import StateStore

GOOD = '{{"event_id": "e{n}", "timestamp": "2026-11-20T10:00:{n:02d}Z", "question": "fee {n}?"}}'


def _log(path: Path, start: int, bad: int) -> Path:
    """Three good lines from event ``start``, then ``bad`` lines that are not JSON."""
    lines = [GOOD.format(n=n) for n in range(start, start + 3)]
    lines += [f"not json {start} {i}" for i in range(bad)]
    with path.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    return path


def _letters(path: Path) -> list[tuple[str, int]]:
    return [(json.loads(x)["reason"], json.loads(x)["origin"]["line"])
            for x in path.read_text(encoding="utf-8").splitlines()]  # fmt: skip


def test_two_states_on_one_log_write_two_files(tmp_path: Path) -> None:
    log = _log(tmp_path / "q.jsonl", 0, 2)  # lines 4 and 5 are not JSON
    settings = load_settings(None)
    for name in ("a.sqlite", "b.sqlite", "a.sqlite"):  # a resumed: nothing read again
        run_replay(settings, log, tmp_path / name, None)
    assert _letters(tmp_path / "a.sqlite.dlq.jsonl") == [("not_json", 4), ("not_json", 5)]
    assert _letters(tmp_path / "b.sqlite.dlq.jsonl") == [("not_json", 4), ("not_json", 5)]
    assert not (tmp_path / "q.jsonl.dlq.jsonl").exists()
    # the log grows: a resumes after line 5 and appends line 9's letter to its own file
    _log(log, 3, 1)
    report = run_replay(settings, log, tmp_path / "a.sqlite", None)
    assert report["dlq_path"] == str(tmp_path / "a.sqlite.dlq.jsonl")
    assert report["dead_lettered"] == {"not_json": 1}
    assert _letters(tmp_path / "a.sqlite.dlq.jsonl")[-1] == ("not_json", 9)
    assert len(_letters(tmp_path / "b.sqlite.dlq.jsonl")) == 2


def test_a_state_from_before_keeps_the_logs_file_and_its_letters(tmp_path: Path) -> None:
    """A state written before session 51: its position names no ``dlq_path`` and its letters
    are in ``<log>.dlq.jsonl``. Resumed without ``--dlq``, it appends there, once each."""
    log = _log(tmp_path / "q.jsonl", 0, 2)
    legacy = tmp_path / "q.jsonl.dlq.jsonl"
    state_path = tmp_path / "old.sqlite"
    settings = load_settings(None)
    run_replay(settings, log, state_path, legacy)  # where the old default put them
    position_key, _ = state_keys(log)
    assert position_key is not None
    store = StateStore.open(state_path, exclusive=True)
    try:  # as the old version stored it: no dlq_path
        position = dict(store.get(position_key))
        assert position.pop("dlq_path") == str(legacy.absolute())
        store.write_unless({position_key: position}, {})
    finally:
        store.close()
    _log(log, 3, 1)
    report = run_replay(settings, log, state_path, None)
    assert report["dlq_path"] == str(legacy)
    assert report["dead_lettered"] == {"not_json": 1}
    assert _letters(legacy) == [("not_json", 4), ("not_json", 5), ("not_json", 9)]
    assert not (tmp_path / "old.sqlite.dlq.jsonl").exists()
    # from now on its position names the file: a later run keeps it too
    store = StateStore.open(state_path)
    try:
        assert store.get(position_key)["dlq_path"] == str(legacy.absolute())
    finally:
        store.close()
    # config check prints the file the state names, not <state>.dlq.jsonl (review NIT 1)
    config = Settings.model_validate({"source": {"kind": "file", "path": str(log)},
                                      "state": {"path": str(state_path)}})  # fmt: skip
    assert _dead_letter_line(config) == (
        f"dead letters {legacy.absolute()} (appended; the file the state {state_path} names)"
    )
    fresh = config.model_copy(update={"state": config.state.model_copy(
        update={"path": tmp_path / "new.sqlite"})})  # fmt: skip
    assert _dead_letter_line(fresh) == (
        f"dead letters {tmp_path / 'new.sqlite.dlq.jsonl'} (appended; one file per state)"
    )
    assert not (tmp_path / "new.sqlite").exists()  # read, never created


def test_state_dead_letters_reads_the_position_then_the_run_mark(tmp_path: Path) -> None:
    log, own = tmp_path / "q.jsonl", tmp_path / "s.sqlite.dlq.jsonl"
    position, run_mark = state_keys(log)
    assert (position, run_mark) == (f"source/file:{log.resolve()}",
                                    f"source/file-run:{log.resolve()}")  # fmt: skip
    named = str(tmp_path / "x.dlq.jsonl")

    def reader(values: dict[str | None, object]) -> object:
        return lambda key: values.get(key)

    assert state_dead_letters(log, reader({}), own) == own  # a fresh state
    assert state_dead_letters("-", reader({}), own) == own  # stdin: no position kept
    old = {"offset": 10, "line": 1, "dlq": {"dev": 1, "ino": 2, "size": 0}}
    assert state_dead_letters(log, reader({position: old}), own) == Path(f"{log}.dlq.jsonl")
    mark = {"dlq": {"dev": 1, "ino": 2, "size": 0}, "file": str(log)}
    assert state_dead_letters(log, reader({run_mark: mark}), own) == Path(f"{log}.dlq.jsonl")
    new = {**old, "dlq_path": named}
    assert state_dead_letters(log, reader({position: new, run_mark: mark}), own) == Path(named)
    assert state_dead_letters(log, reader({run_mark: {**mark, "dlq_path": named}}), own) == (
        Path(named))  # fmt: skip


def test_positions_and_run_marks_name_their_dead_letter_file(tmp_path: Path) -> None:
    log = _log(tmp_path / "q.jsonl", 0, 0)
    source = FileSource(str(log), dlq_path=tmp_path / "d.jsonl")
    try:
        assert source.run_mark()["dlq_path"] == str((tmp_path / "d.jsonl").absolute())
        messages = source.poll(10, 1.0)
        assert source.position_after(messages)["dlq_path"] == str(tmp_path / "d.jsonl")
    finally:
        source.close()


def test_serve_on_a_file_writes_its_states_own_file(tmp_path: Path) -> None:
    """``goldwatch serve`` with a file source and no ``source.dlq_path``: the letters go to
    ``<state.path>.dlq.jsonl``, and ``/v1/status`` says so."""
    import httpx

    from tests.service.api.test_app import TOKEN, Server, _free_port

    log = _log(tmp_path / "q.jsonl", 0, 2)
    settings = load_settings(None, source={"kind": "file", "path": str(log)},
                             state={"path": tmp_path / "s.sqlite"},
                             api={"port": _free_port(), "token": TOKEN})  # fmt: skip
    with Server(settings) as server:
        deadline = time.monotonic() + 120
        while not (status := httpx.get(server.base + "/v1/status").json())["input_finished"]:
            assert time.monotonic() < deadline, "the log was not finished in time"
            time.sleep(0.1)
    assert status["source"]["dlq_path"] == str(tmp_path / "s.sqlite.dlq.jsonl")
    assert _letters(tmp_path / "s.sqlite.dlq.jsonl") == [("not_json", 4), ("not_json", 5)]
    assert not (tmp_path / "q.jsonl.dlq.jsonl").exists()


def test_config_check_names_a_state_dead_letter_file_that_is_a_folder(tmp_path: Path) -> None:
    from service.settings.checks import dead_letter_problems

    (tmp_path / "s.sqlite.dlq.jsonl").mkdir()
    settings = load_settings(None, source={"kind": "file", "path": str(tmp_path / "q.jsonl")},
                             state={"path": tmp_path / "s.sqlite"})  # fmt: skip
    assert dead_letter_problems(settings) == [
        f"the file source's dead-letter file: {tmp_path / 's.sqlite.dlq.jsonl'}: not a regular "
        "file (a FIFO, device, socket or folder)"
    ]
    configured = settings.model_copy(update={"source": settings.source.model_copy(
        update={"dlq_path": tmp_path / "d.jsonl"})})  # fmt: skip
    assert dead_letter_problems(configured) == []  # the configured one is used, and is fine
