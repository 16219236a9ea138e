"""Trial 45 L4: an accept with a reworded ``question`` wrote ``"source": "real"`` and nothing
else, so eval counted a labeller's wording ("Can I exchange my money to EUR?") with the real
questions users typed ("Can exchanged be made to EUR?"). A question that differs from every
wording users asked (scrubbed) now makes the row ``"source": "written"`` with
``"reworded": true`` (and, asked for, the shown wording as ``asked``); one equal to an asked
wording is written as before."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.data.goldset import load_gold_set
from service.harvest.config import HarvestConfig
from service.harvest.labelling import Labelling, is_reworded
from service.harvest.stage import HarvestStage
from service.harvest.store import StateStoreCandidates
from service.state import StateStore
from tests.service.harvest.helpers import batch, event
from tests.service.harvest.test_labelling_api import (
    AUTH,
    GOLD_LINES,
    ids_by_question,
    labelling_client,
)


@pytest.fixture
def harvested(tmp_path: Path) -> tuple[Labelling, Path, StateStore]:
    """Three suggestions (as test_labelling_api's): "hostel fee refund kab milega" (asked
    twice, the second time "Hostel fee refund kab milega??"), "call me on <PHONE> about the
    bus pass", "exam schedule for sem 3"; gold ids q-001 and q-009."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text(GOLD_LINES, encoding="utf-8")
    store = StateStore.in_memory()
    repo = StateStoreCandidates(store)
    stage = HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo])
    stage.process(batch(
        [event("e1", "hostel fee refund kab milega", minute=1),
         event("e2", "Hostel fee refund kab milega??", minute=2),
         event("e3", "call me on +91 98765 43210 about the bus pass", minute=3, rating=-1.0),
         event("e4", "exam schedule for sem 3", minute=4, citations=["p-9"])],
        [{"refused": True, "language": "hi-Latn", "topic": "hostel"}, {"refused": True},
         {"language": "en", "topic": "transport"}, {"language": "en", "topic": "exams"}],
    ))  # fmt: skip
    return Labelling(repo, gold, HarvestConfig()), gold, store


@pytest.fixture
def client(harvested: tuple[Labelling, Path, StateStore]) -> TestClient:
    return labelling_client(harvested[0])


def last_row(gold: Path) -> dict[str, object]:
    return json.loads(gold.read_text(encoding="utf-8").splitlines()[-1])  # type: ignore[no-any-return]


def test_a_reworded_accept_is_written_and_marked(
    client: TestClient, harvested: tuple[Labelling, Path, StateStore]
) -> None:
    _, gold, _ = harvested
    cid = ids_by_question(client)["exam schedule for sem 3"]
    answer = client.post(f"/v1/gold-candidates/{cid}/accept", headers=AUTH,
                         json={"gold": ["p-9"], "kind": "plain",
                               "question": "When do the semester 3 exams start?"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["source"] == "written" and body["reworded"] is True
    assert len(body["warnings"]) == 1
    assert body["warnings"][0].startswith("the question was reworded")
    assert f"/v1/gold-candidates/{cid}" in body["warnings"][0]
    # the file grew by one row: "q-010" (ids q-001, q-009 before), fields in row order
    assert last_row(gold) == {
        "id": "q-010", "question": "When do the semester 3 exams start?", "gold": ["p-9"],
        "kind": "plain", "source": "written", "reworded": True,
        "suggested": {"language": "en", "topic": "exams", "role": "student"},
        "harvest_id": cid,
    }  # fmt: skip
    assert "exam schedule" not in gold.read_text(encoding="utf-8")  # no asked text by default
    loaded = load_gold_set(gold).questions
    assert [(q.id, q.source) for q in loaded] == [("q-001", None), ("q-009", None),
                                                  ("q-010", "written")]  # fmt: skip
    kept = client.get(f"/v1/gold-candidates/{cid}").json()
    assert kept["status"] == "accepted"
    assert kept["decision"]["source"] == "written" and kept["decision"]["reworded"] is True
    assert kept["question"] == "exam schedule for sem 3"  # the asked wording stays here
    assert "warnings" not in kept["decision"]


def test_keep_asked_writes_the_shown_wording_scrubbed(
    client: TestClient, harvested: tuple[Labelling, Path, StateStore]
) -> None:
    _, gold, _ = harvested
    cid = ids_by_question(client)["call me on <PHONE> about the bus pass"]
    answer = client.post(f"/v1/gold-candidates/{cid}/accept", headers=AUTH,
                         json={"gold": ["p-4"], "kind": "plain", "keep_asked": True,
                               "question": "Whom do I call about the bus pass?"})  # fmt: skip
    assert answer.status_code == 200, answer.text
    row = last_row(gold)
    assert (row["source"], row["reworded"]) == ("written", True)
    assert row["asked"] == "call me on <PHONE> about the bus pass"
    assert "98765" not in gold.read_text(encoding="utf-8")
    assert 'in the row as "asked"' in answer.json()["warnings"][0]
    # the loader reads the row, ignoring "reworded" and "asked"
    assert load_gold_set(gold).questions[-1].question == "Whom do I call about the bus pass?"
    bad = client.post(f"/v1/gold-candidates/{ids_by_question(client)['exam schedule for sem 3']}"
                      "/accept", headers=AUTH,
                      json={"gold": ["p-9"], "kind": "plain", "keep_asked": "yes"})  # fmt: skip
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "keep_asked"]


@pytest.mark.parametrize(
    ("shown", "sent"),
    [  # the second wording asked: the same wording but for case and punctuation
     ("hostel fee refund kab milega", "Hostel fee refund kab milega??"),
     # the shown wording as the user typed it: scrubbed, it is the asked one
     ("call me on <PHONE> about the bus pass", "call me on +91 98765 43210 about the bus pass")],
)  # fmt: skip
def test_an_asked_wording_sent_back_is_real_and_unmarked(
    client: TestClient, harvested: tuple[Labelling, Path, StateStore], shown: str, sent: str
) -> None:
    _, gold, _ = harvested
    cid = ids_by_question(client)[shown]
    item = client.get(f"/v1/gold-candidates/{cid}").json()
    assert item["question"] == shown and sent not in item["variants"]  # not kept verbatim
    answer = client.post(f"/v1/gold-candidates/{cid}/accept", headers=AUTH,
                         json={"gold": ["p-1"], "kind": "plain", "question": sent})  # fmt: skip
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert "source" not in body and "reworded" not in body
    assert not any(w.startswith("the question was reworded") for w in body.get("warnings", []))
    row = last_row(gold)
    assert row["source"] == "real" and "reworded" not in row and "asked" not in row
    assert load_gold_set(gold).questions[-1].source == "real"


def test_a_retry_after_a_lost_decision_answers_as_the_row_says(
    harvested: tuple[Labelling, Path, StateStore],
) -> None:
    """The row in the file counts: a retry finding it answers ``reworded`` too."""
    labelling, gold, _ = harvested
    cid = next(
        i["id"] for i in labelling.list().items if i["question"] == "exam schedule for sem 3"
    )
    row = {"id": "q-010", "question": "When are the sem 3 exams?", "gold": ["p-9"],
           "kind": "plain", "source": "written", "reworded": True, "harvest_id": cid}  # fmt: skip
    with gold.open("a", encoding="utf-8") as out:
        out.write("\n" + json.dumps(row) + "\n")
    labelling.repository.hold(cid, labelling.repository.get(cid), "2026-12-07T00:00:00Z")
    decision = labelling.accept(cid, ["p-9"], "plain", {"question": "When are the sem 3 exams?"})
    assert decision["gold_id"] == "q-010"
    assert (decision.get("source"), decision.get("reworded")) == ("written", True)
    assert gold.read_text(encoding="utf-8").count("q-010") == 1


@pytest.mark.parametrize(
    ("asked", "sent"),
    [
        ("Can I exchange 100€ to USD?", "Can I exchange 100$ to USD?"),
        ("EUR to € or $?", "EUR to £ or ¥?"),
        ("Refund if price < 100 EUR?", "Refund if price > 100 EUR?"),
        ("How do I learn C++?", "How do I learn C?"),
        ("Is C# supported?", "Is C supported?"),
        ("fee 5% or 10%", "fee 5 or 10"),
        ("Is the fee -5%?", "Is the fee 5?"),
        ("I am <NAME>, how do I reset?", "I am name, how do I reset?"),
    ],
)
def test_a_changed_sign_is_a_rewording(asked: str, sent: str) -> None:
    # Each pair changes what the question asks by a sign alone; harvest's comparison form
    # folds signs to spaces, so these read "not reworded" before (review of s45-accept).
    assert is_reworded(sent, {"question": asked, "variants": [asked]})


def test_case_spacing_and_end_marks_are_no_rewording() -> None:
    row = {"question": "hostel fee refund kab milega", "variants": []}
    assert not is_reworded("  Hostel  fee refund kab milega?? ", row)
    assert not is_reworded("HOSTEL FEE REFUND KAB MILEGA？", row)  # full-width mark
