"""Trial 21, MEDIUM 4: a gold question asked with a trailing ``my email: <address>`` was
suggested as a new gold question, and accepting it appended a second copy of the gold row
(keeping ``<EMAIL>``) without a word.

Two causes, both fixed: the subject (:func:`service.text.subject.subject`) kept the label
``my email`` of the removed ``<EMAIL>`` (the colon cut it into a clause of its own), so
harvest's gold near-duplicate check and the live quality stage's known-question match both
missed the gold row; and an accept never compared the question it writes with the rows of the
file. The inputs are the trial's own: gold row g-013 and event e-002143's question.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from service.data.goldset import GoldSet, load_gold_set
from service.harvest.config import HarvestConfig
from service.harvest.labelling import (
    DuplicatesGold,
    Labelling,
    duplicated_gold_row,
    placeholder_warning,
)
from service.harvest.stage import HarvestStage
from service.harvest.store import MemoryCandidates, StateStoreCandidates
from service.pii.scrub import scrub
from service.quality.known import KnownQuestionIndex
from service.records import GoldQuestion
from service.state import StateStore
from service.text.subject import subject
from tests.service.harvest.helpers import batch, event
from tests.service.harvest.test_labelling_api import AUTH, labelling_client

G013 = "What was the first problem astronauts encountered during the plugs-out test?"
ASKED = G013 + " my email: anita.k@corp-mail.in"  # e-002143
SCRUBBED = G013 + " my email: <EMAIL>"
G016 = "What was a plugs-out test done to simulate on the LC-34?"
OTHER = "Who commanded the Apollo 1 crew?"
GOLD_ROW = {"id": "g-013", "question": G013, "gold": ["xq-en-Apollo_program-3"],
            "kind": "plain", "source": "written", "language": "en",
            "topic": "Apollo_program"}  # fmt: skip
OTHER_ROW = {"id": "g-016", "question": G016, "gold": ["xq-en-Apollo_program-2"],
             "kind": "plain"}  # fmt: skip
REFUSED = {"refused": True, "language": "en", "topic": "Apollo_program"}


def test_the_subject_drops_the_label_of_a_removed_contact_clause() -> None:
    assert scrub(ASKED).text == SCRUBBED
    assert subject(SCRUBBED) == G013
    assert placeholder_warning(SCRUBBED) is not None
    assert "my email" not in str(placeholder_warning(SCRUBBED))


@pytest.mark.parametrize(
    ("text", "expected"),
    [  # the label is the whole question: it stays the subject, the placeholder's clause
        # removed (as before the label rule), not the whole text with its placeholder
        ("Can I change my email address: <EMAIL>", "Can I change my email address"),
        ("How do I change my phone number - <PHONE>", "How do I change my phone number"),
        ("my phone number: <PHONE>", "my phone number"),
    ],
)
def test_a_label_that_is_the_whole_question_is_kept(text: str, expected: str) -> None:
    assert subject(text) == expected


def test_live_quality_knows_the_gold_row_behind_the_contact_clause() -> None:
    gold = GoldSet((GoldQuestion("g-013", G013, ("xq-en-Apollo_program-3",)),
                    GoldQuestion("g-016", G016, ("xq-en-Apollo_program-2",))))  # fmt: skip
    (found,) = KnownQuestionIndex(gold, threshold=0.9).lookup_many([subject(SCRUBBED)])
    assert found.match is not None and found.match.gold_id == "g-013"


def test_harvest_does_not_suggest_the_gold_question_behind_the_contact_clause() -> None:
    repo = MemoryCandidates()
    gold = [GoldQuestion("g-013", G013, ("xq-en-Apollo_program-3",))]
    stage = HarvestStage(HarvestConfig(flush_interval_s=0.0), sinks=[repo], known_questions=gold)
    other = "Who commanded the Apollo 1 crew?"
    stage.process(batch([event("e-002143", ASKED, minute=1), event("e2", G013, minute=2),
                         event("e3", other, minute=3)], [REFUSED] * 3))  # fmt: skip
    assert [row["question"] for row in repo.all()] == [other]


@pytest.fixture
def suggested(tmp_path: Path) -> tuple[Labelling, Path, dict[str, str]]:
    """The trial's suggestion, harvested without the gold set (as the trial's was, its subject
    then not matching), and a gold file holding g-013 and g-016."""
    gold = tmp_path / "gold.jsonl"
    gold.write_text("".join(json.dumps(r) + "\n" for r in (GOLD_ROW, OTHER_ROW)), encoding="utf-8")
    repo = StateStoreCandidates(StateStore.in_memory())
    other = "Who commanded the Apollo 1 crew?"
    HarvestStage(HarvestConfig(flush_interval_s=0), sinks=[repo]).process(batch(
        [event("e-002143", ASKED, minute=1), event("e2", other, minute=2)], [REFUSED] * 2
    ))  # fmt: skip
    labelling = Labelling(repo, gold, HarvestConfig())
    ids = {row["question"]: row["id"] for row in labelling.list().items}
    assert set(ids) == {SCRUBBED, other}
    return labelling, gold, ids


def test_accepting_a_duplicate_of_a_gold_row_is_refused_naming_the_row(
    suggested: tuple[Labelling, Path, dict[str, str]],
) -> None:
    labelling, gold, ids = suggested
    before = gold.read_bytes()
    with pytest.raises(DuplicatesGold, match="gold row g-013") as caught:
        labelling.accept(ids[SCRUBBED], ["xq-en-Apollo_program-3"], "plain")
    assert caught.value.gold_id == "g-013"
    assert "plugs-out" not in str(caught.value) and "<EMAIL>" not in str(caught.value)
    assert gold.read_bytes() == before
    assert labelling.get(ids[SCRUBBED])["status"] == "suggested"  # still to decide
    # a rewording that asks the same is refused too; one that asks something else is written
    with pytest.raises(DuplicatesGold):
        labelling.accept(ids[SCRUBBED], ["xq-en-Apollo_program-3"], "plain",
                         {"question": G013.lower().rstrip("?")})  # fmt: skip
    reworded = "What did the astronauts smell during the plugs-out test?"
    decision = labelling.accept(ids[SCRUBBED], ["xq-en-Apollo_program-3"], "plain",
                                {"question": reworded})  # fmt: skip
    assert decision["status"] == "accepted"
    assert [q.question for q in load_gold_set(gold)][-1] == reworded


def test_the_api_answers_409_naming_the_gold_row_and_writes_nothing(
    suggested: tuple[Labelling, Path, dict[str, str]],
) -> None:
    labelling, gold, ids = suggested
    client = labelling_client(labelling)
    before = gold.read_bytes()
    answer = client.post(f"/v1/gold-candidates/{ids[SCRUBBED]}/accept", headers=AUTH,
                         json={"gold": ["xq-en-Apollo_program-3"], "kind": "plain"})  # fmt: skip
    assert answer.status_code == 409
    body = json.dumps(answer.json())
    assert "gold row g-013" in body and "plugs-out" not in body and "EMAIL" not in body
    assert gold.read_bytes() == before
    # the other suggestion is no duplicate: accepted as before
    other = client.post(f"/v1/gold-candidates/{ids[OTHER]}/accept", headers=AUTH,
                        json={"gold": ["xq-en-Apollo_program-2"], "kind": "plain"})  # fmt: skip
    assert other.status_code == 200
    # a reject still works on the refused one
    rejected = client.post(f"/v1/gold-candidates/{ids[SCRUBBED]}/reject", headers=AUTH,
                           json={"reason": "duplicate of g-013"})  # fmt: skip
    assert rejected.status_code == 200


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        (SCRUBBED, "g-013"),
        ("My name is <NAME>, my email is <EMAIL>. " + G013, "g-013"),
        (G013.upper(), "g-013"),
        ("what was the first problem the astronauts encountered during the plugs-out test",
         "g-013"),
        # another question: a number, a content word or the question word differs
        ("What was the second problem astronauts encountered during the plugs-out test?",
         None),
        ("When was the first problem astronauts encountered during the plugs-out test?", None),
        ("What was a plugs-out test done to simulate on the LC-39?", None),
        ("What was a plugs-out test done to simulate on the LC-34? my phone: <PHONE>", "g-016"),
    ],
)  # fmt: skip
def test_the_duplicate_rule_is_harvests_on_subjects(question: str, expected: str | None) -> None:
    assert duplicated_gold_row(question, [GOLD_ROW, OTHER_ROW], 0.6) == expected


VISA = {"id": "g-101", "question": "Do I need a visa for Spain?"}
PARKING = {"id": "g-102", "question": "Is parking free on campus?"}
WON = {"id": "g-103", "question": "Who won?"}


@pytest.mark.parametrize(
    ("question", "expected"),
    [  # an accept is a labeller's decision with no override: only the same question is
        # refused, never one that adds a question word to a yes/no gold question (harvest's
        # rule compares question words only when both have one: trigram Jaccard 0.87 here)
        ("Why do I need a visa for Spain?", None),
        ("Where is parking free on campus?", None),
        ("Do I need a visa for Portugal?", None),
        ("Who won in 2016?", None),
        ("Who lost?", None),
        # the same question still is one
        ("do i need a visa for spain", "g-101"),
        ("Do I need visa for Spain? my email: <EMAIL>", "g-101"),
        ("Is parking free on the campus?", "g-102"),
        ("who won", "g-103"),
    ],
)  # fmt: skip
def test_an_accept_is_refused_only_for_the_same_question(
    question: str, expected: str | None
) -> None:
    assert duplicated_gold_row(question, [VISA, PARKING, WON], 0.6) == expected


def test_the_same_question_for_another_role_is_no_duplicate() -> None:
    """Rows that differ by role are the ACL's own cases (the answer a student may see is not
    the one staff may: :func:`service.data.goldset.repeated_questions` keeps them apart), so
    an accept of the same question for another role is a new row."""
    rows = [{"id": "g-201", "question": "When does the hostel fee fall due?"},
            {"id": "g-202", "question": "What is the salary scale?", "role": "staff"}]  # fmt: skip
    question = "When does the hostel fee fall due?"
    assert duplicated_gold_row(question, rows, 0.6, role="parent") is None
    assert duplicated_gold_row(question, rows, 0.6) == "g-201"
    assert duplicated_gold_row("What is the salary scale?", rows, 0.6) is None
    assert duplicated_gold_row("What is the salary scale?", rows, 0.6, role="staff") == "g-202"


def test_an_accept_for_another_role_is_written(
    suggested: tuple[Labelling, Path, dict[str, str]],
) -> None:
    labelling, gold, ids = suggested
    decision = labelling.accept(ids[SCRUBBED], ["xq-en-Apollo_program-3"], "plain",
                                {"role": "staff"})  # fmt: skip
    assert decision["status"] == "accepted"
    last = load_gold_set(gold).questions[-1]
    assert (last.question, last.role) == (SCRUBBED, "staff")
