"""``goldwatch candidates export`` on a state file written by the harvest stage: the rows,
``--out -`` for stdout, and one-line errors (exit 2) for outputs that cannot be written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from consumers.harvest_sink import candidate_value
from service.cli.candidates import candidates_group
from service.harvest.config import HarvestConfig
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates
from service.state import StateStore
from tests.service.harvest.helpers import batch, event


@pytest.fixture
def state(tmp_path: Path) -> Path:
    """A state file holding two suggestions ("bus pass fee" x2, the Aadhaar one x1)."""
    path = tmp_path / "state.sqlite"
    with StateStore.open(path) as store:
        stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[StateStoreCandidates(store)])
        stage.process(batch(
            [event("e1", "bus pass fee"), event("e2", "Bus pass fee?"),
             event("e3", "aadhaar 2341 2341 2346 lost, hostel form?")],
            [{"refused": True}, {"refused": True}, {"under_refusal": True}],
        ))  # fmt: skip
    return path


def test_export_reads_the_state_file(tmp_path: Path, state: Path) -> None:
    out = tmp_path / "candidates.jsonl"
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


def test_dash_writes_to_stdout_and_the_summary_to_stderr(
    tmp_path: Path, state: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # a file literally named "-" would appear here
    result = CliRunner().invoke(candidates_group, ["export", "--state", str(state), "--out", "-"])
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["question"] for r in rows] == [
        "bus pass fee", "aadhaar <AADHAAR> lost, hostel form?"
    ]  # fmt: skip
    assert all(r["id"].startswith("c-") and "kind" not in r for r in rows)
    assert result.stderr == "2 suggestion(s) -> stdout\n"
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    ("out", "problem"),
    [
        ("/proc/x.jsonl", "cannot write /proc/x.jsonl: No such file or directory"),
        ("/dev/full", "cannot write /dev/full: No space left on device"),
        ("", "--out is empty: give a file name, or - for stdout"),
        ("/", "cannot write /: it is a folder"),
        ("{tmp}/no/such/dir/x.jsonl", "cannot write {tmp}/no/such/dir/x.jsonl: folder "
                                      "{tmp}/no/such/dir does not exist"),
    ],
)  # fmt: skip
def test_unwritable_outputs_fail_with_one_line_and_exit_2(
    tmp_path: Path, state: Path, out: str, problem: str
) -> None:
    out = out.format(tmp=tmp_path)
    result = CliRunner().invoke(candidates_group, ["export", "--state", str(state), "--out", out])
    assert result.exit_code == 2, result.output
    assert result.stderr == f"goldwatch: error: {problem.format(tmp=tmp_path)}\n"
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "no").exists()  # the folders are not created


class TopicCapture:
    """A candidate sink keeping the message values the Kafka sink would send for ``writer``."""

    def __init__(self, writer: str) -> None:
        self.writer = writer
        self.values: list[bytes] = []

    def publish(self, records: list[dict[str, object]]) -> None:
        self.values.extend(candidate_value(r, self.writer) for r in records)


def test_export_from_records_merges_the_replicas_records(tmp_path: Path) -> None:
    """Replica A reads "bus pass fee" (e1) and the Aadhaar question (e3), replica B "Bus pass
    fee?" (e2, another partition): merged, "bus pass fee" is asked twice, as in the state
    file of one process above (trial 46 F1: keyed by the question alone, the topic kept
    one replica's count 1)."""
    a, b = TopicCapture("a"), TopicCapture("b")
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[a]).process(batch(
        [event("e1", "bus pass fee"), event("e3", "aadhaar 2341 2341 2346 lost, hostel form?")],
        [{"refused": True}, {"under_refusal": True}]))  # fmt: skip
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[b]).process(
        batch([event("e2", "Bus pass fee?")], [{"refused": True}])
    )
    records = tmp_path / "topic.jsonl"
    records.write_bytes(b"".join(v + b"\n" for v in a.values + b.values))
    out = tmp_path / "candidates.jsonl"
    result = CliRunner().invoke(candidates_group, ["export", "--from-records", str(records),
                                                   "--out", str(out)])  # fmt: skip
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    # as the one-process export above: refused 2.0 x (1 + log2 2) = 4.0 before 2.5
    assert [(r["question"], r["count"], r["reasons"]) for r in rows] == [
        ("bus pass fee", 2, ["refused"]),
        ("aadhaar <AADHAAR> lost, hostel form?", 1, ["answered_out_of_scope"]),
    ]
    assert rows[0]["first_seen"] <= rows[0]["last_seen"]


def test_export_takes_a_state_or_records_not_both(tmp_path: Path, state: Path) -> None:
    args = ["export", "--state", str(state), "--from-records", str(state), "--out", "-"]
    result = CliRunner().invoke(candidates_group, args)
    assert result.exit_code == 2 and "not both" in result.output


def test_export_from_records_leaves_out_the_questions_of_the_gold_set(tmp_path: Path) -> None:
    """The topic carries no decisions: "bus pass fee", accepted on replica A as gold row
    q-001 "Bus pass fee?", is in the gold set, and the merged export must not list it again
    (same comparison form and role, as an accept writes it: harvest's gold-duplicate rule).
    Only the Aadhaar question is left,
    and the summary says one suggestion was left out."""
    a, b = TopicCapture("a"), TopicCapture("b")
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[a]).process(batch(
        [event("e1", "bus pass fee"), event("e3", "aadhaar 2341 2341 2346 lost, hostel form?")],
        [{"refused": True}, {"under_refusal": True}]))  # fmt: skip
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[b]).process(
        batch([event("e2", "Bus pass fee?")], [{"refused": True}])
    )
    records = tmp_path / "topic.jsonl"
    records.write_bytes(b"".join(v + b"\n" for v in a.values + b.values))
    gold = tmp_path / "gold.jsonl"
    gold.write_text(json.dumps({"id": "q-001", "question": "Bus pass fee?", "gold": ["p-1"],
                                "kind": "plain", "role": "student"}) + "\n\n")  # fmt: skip
    out = tmp_path / "candidates.jsonl"
    args = ["export", "--from-records", str(records), "--gold", str(gold), "--out", str(out)]
    result = CliRunner().invoke(candidates_group, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["question"], r["count"]) for r in rows] == [
        ("aadhaar <AADHAAR> lost, hostel form?", 1)
    ]
    assert f"1 suggestion(s) -> {out}; 1 left out as already in the gold set {gold}" in (
        result.output
    )


def test_export_from_records_says_when_no_gold_set_was_given(tmp_path: Path) -> None:
    records = tmp_path / "topic.jsonl"
    a = TopicCapture("a")
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[a]).process(
        batch([event("e1", "bus pass fee")], [{"refused": True}])
    )
    records.write_bytes(b"".join(v + b"\n" for v in a.values))
    result = CliRunner().invoke(candidates_group, ["export", "--from-records", str(records),
                                                   "--out", str(tmp_path / "o.jsonl")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "no gold set given" in result.output


def test_export_from_records_skips_the_writers_named(tmp_path: Path) -> None:
    """Writer "old" counted e1 before its state was lost; writer "new" re-read e1 from
    earliest. Merged, "bus pass fee" counts 2 (e1 twice); with --skip-writers old it counts
    the one ask."""
    old, new = TopicCapture("old"), TopicCapture("new")
    for sink in (old, new):
        HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[sink]).process(
            batch([event("e1", "bus pass fee")], [{"refused": True}])
        )
    records = tmp_path / "topic.jsonl"
    records.write_bytes(b"".join(v + b"\n" for v in old.values + new.values))
    counts = []
    for extra in ([], ["--skip-writers", "old"]):
        result = CliRunner().invoke(candidates_group, ["export", "--from-records", str(records),
                                                       *extra, "--out", "-"])  # fmt: skip
        assert result.exit_code == 0, result.output
        counts.append([json.loads(line)["count"] for line in result.stdout.splitlines()])
    assert counts == [[2], [1]]
