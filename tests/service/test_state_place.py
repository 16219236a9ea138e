"""The state file found deleted, moved or replaced at its path while it is written (trial 47,
F4): every write checks the file at the path is the one it wrote, writes it there again whole
(:meth:`StateStore.check_place`), and says when it cannot (:attr:`StateStore.lost`).

Hand-made files and directories; the values each test expects are the ones it wrote."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
from pathlib import Path

import pytest

import service.state as state_module
from service.state import StateError, StateStore, Sweep


def _all(path: Path) -> dict[str, object]:
    """Every key of the state file at ``path``, read by a plain reader (not the writer)."""
    with StateStore.open(path) as reader:
        return reader.get_many(reader.keys())


def _written(store: StateStore) -> None:
    """Keys written by separate checkpoints and by ``write_unless``: a recreated file must
    hold all of them, not only the last checkpoint's."""
    store.checkpoint({"stage/count": {"processed": 3}, "totals": {"consumed": 3}})
    store.checkpoint({"harvest/candidate/a": {"q": "first"}})
    store.write_unless({"harvest/decision/a": {"status": "accepted"}}, {})
    store.checkpoint({"stage/count": {"processed": 5}, "totals": {"consumed": 5}})


EXPECTED = {
    "stage/count": {"processed": 5},
    "totals": {"consumed": 5},
    "harvest/candidate/a": {"q": "first"},
    "harvest/decision/a": {"status": "accepted"},
}


def test_a_deleted_state_file_is_written_again_whole_at_the_next_checkpoint(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    os.unlink(path)  # what the trial's user did (`rm`), leaving -wal and -shm behind
    assert store.durable  # nothing has looked yet
    store.checkpoint({"stage/count": {"processed": 7}})
    assert (store.recreated, store.lost, store.durable) == (1, None, True)
    assert store.last_recreated is not None and str(path) in store.last_recreated
    assert "missing" in store.last_recreated
    assert _all(path) == {**EXPECTED, "stage/count": {"processed": 7}}
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    # no temporary copy left beside it; the writer's lock is held on the new file
    assert sorted(p.name for p in tmp_path.iterdir() if ".recreate-" in p.name) == []
    with pytest.raises(StateError, match="in use by another goldwatch process"):
        StateStore.open(path, exclusive=True)
    # it goes on writing the new file: the next checkpoint needs no recreation
    store.checkpoint({"stage/count": {"processed": 8}})
    assert store.recreated == 1
    store.close()
    assert _all(path)["stage/count"] == {"processed": 8}


def test_a_state_file_moved_away_is_written_again_and_the_moved_one_left_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    moved = tmp_path / "state.db.bak"
    os.rename(path, moved)
    store.checkpoint({"extra": 1})
    assert store.recreated == 1
    store.close()
    assert _all(path) == {**EXPECTED, "extra": 1}
    # the operator's copy is theirs, and whole: its latest pages were in the -wal left at
    # the path, checkpointed into it before that -wal was removed (it lacked its tables)
    assert not Path(f"{moved}-wal").exists()
    assert _all(moved) == {**EXPECTED, "extra": 1}


def test_a_state_file_replaced_by_another_is_moved_aside_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    other = tmp_path / "other.db"
    with StateStore.open(other) as hand_made:
        hand_made.checkpoint({"totals": {"consumed": 99}})
    os.replace(other, path)  # e.g. an old backup restored over it while serve ran
    store.checkpoint({"extra": 2})
    assert store.recreated == 1
    assert store.last_recreated is not None and "replaced" in store.last_recreated
    store.close()
    assert _all(path) == {**EXPECTED, "extra": 2}
    (aside,) = [p for p in tmp_path.iterdir() if p.name.startswith("state.db.replaced-")]
    assert _all(aside) == {"totals": {"consumed": 99}}


def test_a_deleted_directory_is_lost_until_it_is_back_and_then_nothing_is_missing(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    path = folder / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    shutil.rmtree(folder)
    store.checkpoint({"while_lost/1": 1})  # the write itself succeeds: the file is open
    assert not store.durable
    assert store.lost is not None
    assert str(path) in store.lost and "cannot be written there again" in store.lost
    assert store.recreated == 0
    store.checkpoint({"while_lost/2": 2})  # tried again, still lost
    assert not store.durable
    folder.mkdir()  # the operator puts the directory back
    store.checkpoint({"after": 3})
    assert (store.durable, store.recreated) == (True, 1)
    store.close()
    assert _all(path) == {**EXPECTED, "while_lost/1": 1, "while_lost/2": 2, "after": 3}


def test_a_directory_deleted_right_after_a_recreation_is_lost_not_an_error(
    tmp_path: Path,
) -> None:
    """The recreated file's connection has its -wal and -shm open at once: a directory
    deleted before its first write left one that failed every write ("disk I/O error", a
    failed checkpoint) instead of writing on into the deleted files (an HTTP test found it)."""
    folder = tmp_path / "state"
    folder.mkdir()
    path = folder / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    os.unlink(path)
    store.checkpoint({"b": 1})
    assert store.recreated == 1
    shutil.rmtree(folder)
    store.checkpoint({"c": 2})  # raised StateError before
    assert not store.durable
    folder.mkdir()
    store.checkpoint({"d": 3})
    assert (store.durable, store.recreated) == (True, 2)
    store.close()
    assert _all(path) == {**EXPECTED, "b": 1, "c": 2, "d": 3}


def test_a_directory_that_became_a_file_is_lost_and_check_place_recovers_it(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "state"
    folder.mkdir()
    path = folder / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    shutil.rmtree(folder)
    folder.write_text("not a directory")  # ENOTDIR for anything beneath it
    store.check_place()
    assert store.lost is not None and "cannot be written there again" in store.lost
    folder.unlink()
    folder.mkdir()
    store.check_place()  # what the loop does while idle
    assert store.durable and store.recreated == 1
    store.close()
    assert _all(path) == EXPECTED


def test_a_copy_that_fails_midway_leaves_no_file_at_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever fails while the copy is written (here its sync: a full disk or an I/O
    error), nothing but a whole file ever appears at the path, and the open file stays in
    use: the next checkpoint tries again."""
    path = tmp_path / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    os.unlink(path)

    def failing_sync(where: Path) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(state_module, "_fsync_path", failing_sync)
    store.checkpoint({"extra": 4})
    assert store.lost is not None and "No space left on device" in store.lost
    assert not path.exists()
    assert [p.name for p in tmp_path.iterdir() if ".recreate-" in p.name] == []
    assert store.get("extra") == 4  # still written, to the open file
    monkeypatch.undo()
    store.checkpoint({"extra": 5})
    assert store.durable and store.recreated == 1
    store.close()
    assert _all(path) == {**EXPECTED, "extra": 5}


def test_the_sweeps_and_the_whole_file_survive_a_recreation(tmp_path: Path) -> None:
    """A sweep after the recreation deletes from the new file (the records of suggestions no
    longer held), so the new file is a working state file, not a read-only copy."""
    path = tmp_path / "state.db"
    store = StateStore.open(path, exclusive=True)
    store.add_sweep(Sweep("held", "rec/", lambda names: names, "keep/"))
    store.checkpoint({"rec/a": 1, "rec/b": 2, "held": ["a", "b"]})
    os.unlink(path)
    store.checkpoint({"other": 0})
    store.checkpoint({"held": ["a"]})  # sweeps rec/b
    store.close()
    assert _all(path) == {"rec/a": 1, "held": ["a"], "other": 0}
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_an_in_memory_store_is_always_durable() -> None:
    store = StateStore.in_memory()
    store.checkpoint({"a": 1})
    store.check_place()
    assert (store.durable, store.recreated, store.lost) == (True, 0, None)


def test_a_directory_deleted_between_the_copy_and_the_rename_leaves_the_old_file_in_use(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race of the review: the directory goes after ``VACUUM INTO`` and before the
    rename. The old connection stays open (it was closed first, and every later write
    failed on a closed database): the state is lost, not broken, and recovers."""
    folder = tmp_path / "state"
    folder.mkdir()
    path = folder / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    os.unlink(path)
    rename = os.rename

    def directory_gone_then_rename(src: Path, dst: Path) -> None:
        if ".recreate-" in Path(src).name:  # the copy is written and synced: now the race
            shutil.rmtree(folder)
        rename(src, dst)

    monkeypatch.setattr(state_module.os, "rename", directory_gone_then_rename)
    store.checkpoint({"extra": 1})
    monkeypatch.undo()
    assert store.lost is not None and "cannot be written there again" in store.lost
    store.checkpoint({"extra": 2})  # written to the open file, not a closed connection
    assert store.get("extra") == 2
    folder.mkdir()
    store.checkpoint({"extra": 3})
    assert (store.durable, store.recreated) == (True, 1)
    store.close()
    assert _all(path) == {**EXPECTED, "extra": 3}


def test_a_file_at_the_path_with_no_link_left_is_taken_for_deleted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A single-file bind mount whose host deleted the file: the path still leads to the
    open inode, with ``st_nlink`` 0 (simulated: ``os.stat`` of the path says 0 links)."""
    path = tmp_path / "state.db"
    store = StateStore.open(path, exclusive=True)
    _written(store)
    real_stat = os.stat

    def unlinked(file: object, *args: object, **kwargs: object) -> os.stat_result:
        st = real_stat(file, *args, **kwargs)  # type: ignore[arg-type]
        if Path(str(file)) == path:
            fields = list(st)
            fields[stat.ST_NLINK] = 0
            return os.stat_result(fields)
        return st

    monkeypatch.setattr(state_module.os, "stat", unlinked)
    store.check_place()
    monkeypatch.undo()
    assert store.recreated == 1 and store.durable
    assert store.last_recreated is not None and "missing" in store.last_recreated
    store.close()
    assert _all(path) == EXPECTED
