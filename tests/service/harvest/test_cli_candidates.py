"""``goldwatch candidates export`` on a state file written by the harvest stage."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from service.cli_candidates import candidates_group
from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates
from service.state import StateStore
from tests.service.harvest.helpers import batch, event


def test_export_reads_the_state_file(tmp_path: Path) -> None:
    state = tmp_path / "state.sqlite"
    with StateStore.open(state) as store:
        stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[StateStoreCandidates(store)])
        stage.process(batch(
            [event("e1", "bus pass fee"), event("e2", "Bus pass fee?"),
             event("e3", "aadhaar 2341 2341 2346 lost, hostel form?")],
            [{"refused": True}, {"refused": True}, {"under_refusal": True}],
        ))  # fmt: skip
    out = tmp_path / "out" / "candidates.jsonl"
    result = CliRunner().invoke(candidates_group, ["export", "--state", str(state),
                                                   "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert result.output == f"2 suggestion(s) -> {out}\n"
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # answered out of scope weighs 2.5 (count 1); refused 2.0 x (1 + log2 2) = 4.0 wins
    assert [(r["question"], r["count"], r["reasons"]) for r in rows] == [
        ("bus pass fee", 2, ["refused"]),
        ("aadhaar <AADHAAR> lost, hostel form?", 1, ["answered_out_of_scope"]),
    ]
    assert all(r["gold"] == [] and r["status"] == "suggested" for r in rows)


def test_missing_state_file_exits_2(tmp_path: Path) -> None:
    result = CliRunner().invoke(candidates_group, ["export", "--state", str(tmp_path / "no"),
                                                   "--out", str(tmp_path / "x.jsonl")])  # fmt: skip
    assert result.exit_code == 2 and "state file not found" in result.output
