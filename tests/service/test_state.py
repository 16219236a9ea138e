"""The SQLite state store: round trips, atomic checkpoints, and loud failures."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from service.state import StateError, StateStore


def test_round_trip_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    with StateStore.open(path) as store:
        store.checkpoint({"stage/dedup": ["e-1", "e-2"], "source/file:x": {"offset": 10}})
    with StateStore.open(path) as store:
        assert store.get("stage/dedup") == ["e-1", "e-2"]
        assert store.get_many(["source/file:x", "nope"]) == {"source/file:x": {"offset": 10}}
        assert store.keys("stage/") == ["stage/dedup"]


def test_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    StateStore.open(path).close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    conn.close()


def test_none_deletes_key() -> None:
    store = StateStore.in_memory()
    store.checkpoint({"a/1": 1, "a/2": 2})
    store.checkpoint({"a/1": None})
    assert store.keys() == ["a/2"]


def test_corrupt_file_names_file_and_says_move_aside(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    path.write_bytes(b"this is not sqlite at all \x00\xff" * 200)
    with pytest.raises(StateError) as info:
        StateStore.open(path)
    message = str(info.value)
    assert str(path) in message
    assert "move it aside" in message
    assert path.read_bytes().startswith(b"this is not sqlite")  # never overwritten


def test_foreign_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER)")
    conn.commit()
    conn.close()
    with pytest.raises(StateError, match="not a goldwatch state file"):
        StateStore.open(path)


def test_missing_directory(tmp_path: Path) -> None:
    with pytest.raises(StateError, match="missing"):
        StateStore.open(tmp_path / "nope" / "state.db")


def test_full_disk_rolls_back_and_keeps_previous_checkpoint(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = StateStore.open(path)
    store.checkpoint({"stage/a": "small", "stage/b": 1})
    page_count = store._conn.execute("PRAGMA page_count").fetchone()[0]
    store._conn.execute(f"PRAGMA max_page_count={page_count}")  # simulate a full disk
    with pytest.raises(StateError, match="disk is full") as info:
        store.checkpoint({"stage/b": 2, "stage/big": "x" * 200_000})
    assert str(path) in str(info.value)
    assert store.get("stage/b") == 1
    assert store.get("stage/big") is None
    store.close()


def test_read_only_database_raises_state_error(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = StateStore.open(path)
    store._conn.execute("PRAGMA query_only=ON")  # what a read-only mount looks like to SQLite
    with pytest.raises(StateError, match="not writable"):
        store.checkpoint({"stage/a": 1})
    store.close()


def test_unserialisable_value_writes_nothing() -> None:
    store = StateStore.in_memory()
    with pytest.raises(TypeError):
        store.checkpoint({"stage/a": 1, "stage/b": object()})
    assert store.keys() == []
