"""Answer-level dumb checks and the pattern refusal detector."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.evaluation.answers import Answer, AnswersFileError, check_answers, load_answers
from service.records import GoldQuestion
from service.refusals.detector import RefusalDetector


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, I don't have information about the placement package.",
        "The provided context does not mention the canteen timings.",
        "This is not mentioned in the documents.",
        "Mujhe iske baare mein jaankari nahi hai.",
        "मुझे इसकी जानकारी नहीं है।",
        "Lo siento, no tengo información sobre eso.",
        "",
    ],
)
def test_refusals_detected(text: str) -> None:
    assert RefusalDetector().is_refusal(text)


@pytest.mark.parametrize(
    "text",
    [
        "The hostel fee is ₹85,000 per year, payable in two instalments.",
        "No late fee is charged before 15 July.",
        "Hostel fee semester wise dena hota hai: ₹42,500 per semester.",
        "छात्रवृत्ति के लिए अंतिम तिथि 30 सितंबर है।",
    ],
)
def test_answers_not_refusals(text: str) -> None:
    assert not RefusalDetector().is_refusal(text)


def test_bad_pattern_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="invalid refusal pattern"):
        RefusalDetector(["(unclosed"])


def test_check_answers_rates() -> None:
    questions = [
        GoldQuestion("q1", "fee?", ("p1",), answer_contains=("₹85,000",)),
        GoldQuestion("q2", "deadline?", ("p2",), answer_contains=("15 July", "late fee")),
        GoldQuestion("q3", "placement?", (), kind="unanswerable"),
        GoldQuestion("q4", "canteen?", (), kind="unanswerable"),
        GoldQuestion("q5", "bus?", ("p3",)),
    ]
    answers = {
        "q1": Answer("q1", "It is ₹85,000 a year."),
        "q2": Answer("q2", "Pay by 15  JULY to avoid a LATE fee."),  # case and spaces ignored
        "q3": Answer("q3", "I don't know."),
        "q4": Answer("q4", "The average package is 12 LPA.", refused=None),
        "q5": Answer("q5", "Sure: route 4.", refused=True),  # explicit flag wins
    }
    report = check_answers(questions, answers)
    assert report.contains_rate == 1.0
    assert report.unanswerable_refusal_rate == 0.5
    assert report.over_refusal_rate == pytest.approx(1 / 3)
    assert report.per_question["q4"] == {"contains": None, "refused": False}
    assert report.missing == ()
    assert report.unknown == ()


def test_answers_for_ids_not_in_the_gold_set_are_named_not_scored() -> None:
    """Trial 12 F4: an answer row keyed ``ghost-1`` was ignored without a word."""
    questions = [GoldQuestion("q1", "fee?", ("p1",), answer_contains=("85,000",)),
                 GoldQuestion("q2", "bus?", ("p3",))]  # fmt: skip
    answers = {"ghost-1": Answer("ghost-1", "boo"), "q1": Answer("q1", "It is 85,000."),
               "Q2": Answer("Q2", "Route 4.")}  # fmt: skip
    report = check_answers(questions, answers)
    assert (report.n_answers, report.contains_rate) == (1, 1.0)
    assert report.unknown == ("ghost-1", "Q2")  # file order; ids are case-sensitive
    assert report.missing == ("q2",)
    assert report.to_json()["unknown"] == ["ghost-1", "Q2"]


def test_load_answers_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text('{"id": "q1", "answer": "ok"}\n\n{"id": "q1", "answer": "again"}\n')
    with pytest.raises(AnswersFileError, match=r"answers.jsonl:3: duplicate id"):
        load_answers(path)
    path.write_text('{"id": "q1", "answer": 5}\n')
    with pytest.raises(AnswersFileError, match=r":1: field 'answer'"):
        load_answers(path)
    path.write_text("not json\n")
    with pytest.raises(AnswersFileError, match=r":1: not valid JSON"):
        load_answers(path)


def test_a_scrubbed_label_matches_the_answer_it_was_confirmed_from() -> None:
    """An accept scrubs its labels, so a confirmed "call +1 212 555 0199" is stored as
    "call <PHONE>" (a sixth trial): it matches any phone number at that place in the answer,
    an answer without one there does not, and a placeholder typed in the answer matches too."""
    questions = [
        GoldQuestion("q1", "support?", ("p1",), answer_contains=("1596", "call <PHONE>")),
        GoldQuestion("q2", "support?", ("p1",), answer_contains=("call <PHONE>",)),
        GoldQuestion("q3", "support?", ("p1",), answer_contains=("mail <EMAIL>",)),
        GoldQuestion("q4", "support?", ("p1",), answer_contains=("1596", "call <PHONE>")),
    ]
    answers = {
        "q1": Answer("q1", "Founded in 1596; for help call +1 212 555 0199."),
        "q2": Answer("q2", "For help call us on weekdays."),
        "q3": Answer("q3", "Write to us: mail help@example.org"),
        "q4": Answer("q4", "For help call +1 212 555 0199."),  # 1596 missing
    }
    report = check_answers(questions, answers)
    assert {q: r["contains"] for q, r in report.per_question.items()} == {
        "q1": True, "q2": False, "q3": True, "q4": False,
    }  # fmt: skip
    assert report.contains_rate == 0.5


@pytest.mark.parametrize(
    ("answer", "expected", "hit"),
    [
        ("I don't know.", "No", False),  # i don t know: no token "no" (trial 11, mh-q347)
        ("No, it is not offered.", "no", True),  # "no" is the first token
        ("Nobody knows.", "No", False),
        ("The capital is Paris.", "Paris", True),
        ("A Parisian café.", "Paris", False),
        ("Rules of the u.s. navy", "U.S.", True),  # both u s
        ("Rules of the U. S. navy", "U.S.", True),  # u s as well
        ("Rules of the US navy", "U.S.", False),  # us is one token, u s two
        ("Pay by 15  JULY.", "15 july", True),
        ("Pay by 15 July.", "July 15", False),  # tokens in order
        ("ＰＡＲＩＳ!", "paris", True),  # NFKC: full-width letters
    ],
)
def test_answer_contains_matches_whole_tokens(answer: str, expected: str, hit: bool) -> None:
    """Hand-worked: both sides NFKC + casefold, punctuation to spaces; the expected tokens
    must be a consecutive run of the answer's tokens."""
    q = GoldQuestion("q1", "?", ("p1",), answer_contains=(expected,))
    report = check_answers([q], {"q1": Answer("q1", answer, refused=False)})
    assert report.per_question["q1"]["contains"] is hit
    assert report.contains_rate == (1.0 if hit else 0.0)


def test_a_refused_answer_never_contains_the_answer() -> None:
    """Trial 11: 27 answers flagged refused counted as answer_contains hits. Refused by the
    flag (q1, holding "Paris") or by the detector (q2, holding "no") is no hit; q3 is."""
    questions = [
        GoldQuestion("q1", "capital?", ("p1",), answer_contains=("Paris",)),
        GoldQuestion("q2", "fee?", ("p2",), answer_contains=("no",)),
        GoldQuestion("q3", "capital?", ("p1",), answer_contains=("Paris",)),
    ]
    answers = {
        "q1": Answer("q1", "Paris, I think, but I cannot say.", refused=True),
        "q2": Answer("q2", "I'm sorry, I don't have information, no."),
        "q3": Answer("q3", "Paris.", refused=False),
    }
    report = check_answers(questions, answers)
    assert report.per_question == {
        "q1": {"contains": False, "refused": True},
        "q2": {"contains": False, "refused": True},
        "q3": {"contains": True, "refused": False},
    }
    assert report.contains_rate == pytest.approx(1 / 3)
    assert report.to_json()["contains_rule"].startswith("every answer_contains string")
