"""The replica's writer id on the suggestions topic (``service.runtime.live.harvest_writer_id``):
kept in the state file, so a restart from the same state writes under the same keys (its
counts go on from the state's), and two state files give two ids (trial 46 F1)."""

from __future__ import annotations

import re
from pathlib import Path

from service.runtime.live import HARVEST_WRITER_KEY, harvest_writer_id
from service.state import StateStore


def test_the_writer_id_is_kept_in_the_state_and_differs_per_state(tmp_path: Path) -> None:
    with StateStore.open(tmp_path / "a.sqlite") as store:
        first = harvest_writer_id(store)
    with StateStore.open(tmp_path / "a.sqlite") as store:  # the restart
        assert harvest_writer_id(store) == first == store.get(HARVEST_WRITER_KEY)
    with StateStore.open(tmp_path / "b.sqlite") as store:
        assert harvest_writer_id(store) != first
    assert re.fullmatch(r"[0-9a-f]{16}", first)


def test_without_a_state_every_start_has_a_new_id() -> None:
    assert harvest_writer_id(None) != harvest_writer_id(None)
