"""A long Latin-script text written with a handful of letters is no language (``und``).

The tenth new-user trial's 3,000-character ``xxxx…`` was labelled ``de`` (langdetect, given that
many letters, was taken as strong evidence). At 60 letters or more (the default
``min_evidence_letters``, fixed for this rule), a text needs
:data:`~service.language.detector.MIN_DISTINCT_LETTERS` (5) distinct letters to be read as a
language. No real text in ../shared/data is that poor (checked below on all 81,357 of them), and
short texts keep their rules ("aha" falls to the prior).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from service.language.detector import MIN_DISTINCT_LETTERS, LanguageConfig, LanguageDetector
from tests.service.test_pii_names import other_questions, xquad_squad_multihop_texts


@pytest.mark.parametrize(
    "text",
    [
        "x" * 3000,
        "xxxx " * 20,  # 80 letters, one distinct
        "asdf" * 30,  # a keysmash: 4 distinct letters
        "Ääää ÄÄÄ " * 10,  # non-ASCII Latin, one distinct letter after lowering
        "hahahaha " * 10,  # 2 distinct
    ],
)
def test_a_long_run_of_few_letters_is_und_with_or_without_a_prior(text: str) -> None:
    assert len({c for c in text.lower() if c.isalpha()}) < MIN_DISTINCT_LETTERS
    for config in (LanguageConfig(), LanguageConfig(preferred=("en", "de"))):
        assert LanguageDetector(config).detect_with_support(text) == ("und", True)


def test_the_threshold_counts_letters_not_characters() -> None:
    # five distinct letters on 60+ letters: a language again (langdetect decides, with
    # the preferred languages' prior); digits and punctuation are not letters
    detector = LanguageDetector(LanguageConfig(preferred=("en",)))
    assert detector.detect("abcde " * 12 + "123456789!?") != "und"
    assert detector.detect("abcd 1234567890 " * 20) == "und"


def test_below_the_evidence_letters_the_old_rules_hold() -> None:
    # 59 letters of one kind: too little evidence, so the prior's expected language
    detector = LanguageDetector(LanguageConfig(preferred=("en",)))
    assert detector.detect_with_support("x" * 59) == ("en", False)


@pytest.mark.slow
def test_no_real_text_is_that_poor(shared_data: Path) -> None:
    texts = other_questions(shared_data) + xquad_squad_multihop_texts(shared_data)
    assert len(texts) == 81_357
    poor = [t for t in texts
            if sum(c.isalpha() for c in t) >= 60
            and len({c.lower() for c in t if c.isalpha()}) < MIN_DISTINCT_LETTERS]  # fmt: skip
    assert poor == []
