"""Names a ninth trial found in stored suggestions: a signature after a dash, a mail client's
``sent from my …`` signature, and a name given once and repeated. Expected texts written by
hand."""

from __future__ import annotations

import pytest

from service.pii import scrub
from service.pii.names import find_names, may_hold_name

CASES = [
    # a signature after a dash that ends a sentence; contact details after a comma
    (
        "Who first came up with the bubonic plague theory? - Dr. Emily Chen, emily chen at gmail "
        "dot com",
        "Who first came up with the bubonic plague theory? - <NAME>, <NAME> <EMAIL>",
    ),
    (
        "What does ocean water do to luminescence from certain animals? - Dieter Schmidt, Tel. "
        "030 1234567",
        "What does ocean water do to luminescence from certain animals? - <NAME>, Tel. <PHONE>",
    ),
    ("Where is the fee table? — Maria de la Cruz", "Where is the fee table? — <NAME>"),
    # privacy first: a two-word Title-case answer after a dash reads as a signature
    ("Who wrote Emma? - Jane Austen", "Who wrote Emma? - <NAME>"),
    # one word without a title, a lower-case clause, a sign-off word: no signature
    ("What is the capital? - France", "What is the capital? - France"),
    (
        "What is the power-to-weight ratio? - it depends",
        "What is the power-to-weight ratio? - it depends",
    ),
    ("Is it open today? - Thanks", "Is it open today? - Thanks"),
    # a dash inside a sentence, not after one
    (
        "Is Jane Austen - Emma Woodhouse the heroine?",
        "Is Jane Austen - Emma Woodhouse the heroine?",
    ),
    # a mail client's signature
    (
        " What modern city did Khanbaliq not become? sent from my iPhone, Mike Johnson",
        " What modern city did Khanbaliq not become? sent from my iPhone, <NAME>",
    ),
    (
        "How do I reset my card?\nSent from my iPad.\nJohn Carter",
        "How do I reset my card?\nSent from my iPad.\n<NAME>",
    ),
    ("sent from my Samsung Galaxy S21\nRegards", "sent from my Samsung Galaxy S21\nRegards"),
    ("sent from my iPhone", "sent from my iPhone"),
    # a name given once is the person's wherever it recurs, in any case
    (
        "My name is o'connor, sean o'connor. What is the fee?",
        "My name is <NAME>, sean <NAME>. What is the fee?",
    ),
    ("I am Alice Smith. My surname is smith.", "I am <NAME>. My surname is <NAME>."),
    # titles, particles and short words are not looked for again
    (
        "I'm Dr. Anna de Souza. Is Dr. House on de TV, Anna?",
        "I'm <NAME>. Is Dr. House on de TV, <NAME>?",
    ),
    ("Hi, I am Rahul Verma from Pune. Where is Pune?", "Hi, I am <NAME> from Pune. Where is Pune?"),
]


@pytest.mark.parametrize(("text", "expected"), CASES)
def test_scrubbed(text: str, expected: str) -> None:
    assert scrub(text).text == expected


def test_the_gate_lets_dash_signatures_through_and_keeps_plain_questions_out() -> None:
    assert may_hold_name("what is x? - dieter schmidt, tel. 030")
    assert may_hold_name("who is it? — maria")
    assert may_hold_name("q\nsent from my iphone, mike")
    assert not may_hold_name("what is the power-to-weight ratio of a steam engine?")
    assert not may_hold_name("what is its capital?")


def test_repeats_are_spans_of_their_own_in_text_order() -> None:
    text = "My name is Ana Lima. Lima? yes, LIMA."
    # found: "Ana Lima" (11-19); repeats: "Lima" at 21-25 and "LIMA" at 32-36
    assert list(find_names(text)) == [(11, 19), (21, 25), (32, 36)]
