"""Personal numbers an eleventh trial found kept after an explicit cue: a bare phone number
after ``my number is``/``call me on``, an SSN written ``123 45 6789`` or ``123456789`` after
``ssn``, a passport number of another country after ``passport``, and a mail client's
signature after a dash (``sent from my iPhone - Mike Johnson``). Expected texts written by
hand; each look-alike has no cue, another word between the cue and the number, or a figure's
shape."""

from __future__ import annotations

from pathlib import Path

import pytest

from service.pii import scrub
from service.pii.scrub import _find
from tests.service.test_pii_names import other_questions, xquad_squad_multihop_texts

SCRUBBED = [
    # the trial's texts (/tmp/trial11/edge/pii2.jsonl, pii.jsonl)
    ("my number is 4155550133", "my number is <PHONE>", "phone"),
    ("call me on 4155550133", "call me on <PHONE>", "phone"),
    ("my ssn is 123 45 6789", "my ssn is <SSN>", "ssn"),
    ("ssn: 123456789", "ssn: <SSN>", "ssn"),
    ("my SSN is 078 05 1120", "my SSN is <SSN>", "ssn"),
    ("my passport number is X12345678", "my passport number is <PASSPORT>", "passport"),
    ("passport X1234567 expired", "passport <PASSPORT> expired", "passport"),
    ("sent from my iPhone - Mike Johnson", "sent from my iPhone - <NAME>", "name"),
    ("Sent from my iPhone - Kevin O'Brien", "Sent from my iPhone - <NAME>", "name"),
    # more of the same: other cues, lengths and link words
    ("whatsapp: 12345678 pls", "whatsapp: <PHONE> pls", "phone"),
    ("text me at 5550133", "text me at <PHONE>", "phone"),
    ("what is my number 4155550133 in binary", "what is my number <PHONE> in binary", "phone"),
    ("social security no. 123-45-6789", "social security no. <SSN>", "ssn"),
    ("ssn 900-12-3456 (typo?)", "ssn <SSN> (typo?)", "ssn"),  # never issued, yet cued
    ("my passport no is 123456789", "my passport no is <PASSPORT>", "passport"),
    ("pasaporte: xa1234567", "pasaporte: <PASSPORT>", "passport"),
    ("Sent from my Galaxy — Ana Ruiz\nthanks", "Sent from my Galaxy — <NAME>\nthanks", "name"),
]


@pytest.mark.parametrize(("text", "expected", "kind"), SCRUBBED)
def test_a_number_after_its_cue_is_scrubbed(text: str, expected: str, kind: str) -> None:
    found = scrub(text)
    assert (found.text, found.counts) == (expected, {kind: 1})
    assert scrub(expected).text == expected  # the placeholder cues nothing further


KEPT = [
    # a number with no cue, or "number" alone: a question about the number
    "what is the number 4155550133 in binary",
    "what is 4155550133 in binary",
    # years, prices, counts and figures after a cue word
    "call me in 2026",
    "call 911",
    "reach 100000000 users",
    "my number is 42",
    "call me on Monday, order 12345678",
    "ssn 2023 rules",
    "the social security act of 1965 established",
    "when did they start assigning social security numbers at birth",
    "ssn rules changed for 123456789 people",  # a word between the cue and the number
    "ssn 12345.6789",
    "passport fee 1500000",
    "how much for a passport in the philippines",
    "passport office 2 opens at 0900",
    "passport photo 35x45",
    "passport X1234567-B",  # glued to a code
    # a dash inside the device, a sign-off, no spaces around the dash
    "sent from my Wi-Fi Phone",
    "sent from my iPhone - Regards",
    "sent from my iPhone-Mike Johnson",
]


@pytest.mark.parametrize("text", KEPT)
def test_look_alikes_without_a_cue_are_kept(text: str) -> None:
    assert scrub(text).text == text


def test_only_the_number_right_after_the_cue_is_taken() -> None:
    """A placeholder is no cue: the second number of a list stays (a limit, documented), and
    ``scrub`` stays idempotent however long the list."""
    text = "call me on 4155550133, 4155550134; passport X1234567 X7654321"
    expected = "call me on <PHONE>, 4155550134; passport <PASSPORT> X7654321"
    assert scrub(text).text == expected
    long = "passport " + "X1234567 " * 50
    once = scrub(long).text
    assert once == "passport <PASSPORT> " + "X1234567 " * 49
    assert scrub(once).text == once


@pytest.mark.slow
def test_real_texts_hold_no_cued_ssn_nor_passport(shared_data: Path) -> None:
    """None of the 81,357 real texts holds an SSN or passport span (eight name social
    security, one a passport, with no number after the cue; read by hand); the phone side is
    ``test_pii_phone.test_real_questions_hold_no_phone``."""
    texts = other_questions(shared_data) + xquad_squad_multihop_texts(shared_data)
    assert len(texts) == 81_357
    kinds = {"ssn", "passport"}
    assert [t for t in texts if any(kind in kinds for *_, kind in _find(t))] == []


@pytest.mark.slow
def test_real_texts_hold_no_loosely_grouped_iban(shared_data: Path) -> None:
    """The loosely grouped IBAN shape (trial 12: ``DE89 370400440532013000``) finds no IBAN in
    the 81,357 real texts (none holds one: questions and Wikipedia/news passages)."""
    texts = other_questions(shared_data) + xquad_squad_multihop_texts(shared_data)
    assert len(texts) == 81_357
    assert [t for t in texts if any(kind == "iban" for *_, kind in _find(t))] == []
