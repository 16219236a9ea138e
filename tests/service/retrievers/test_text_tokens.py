"""The ASCII fast path of :func:`service.retrievers.text.tokenize` against the full pipeline."""

from __future__ import annotations

import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.retrievers.text import STOPWORDS, _word_pattern, tokenize
from service.text import normalise as normalise_text


def normalise(text: str) -> str:
    """The tokeniser's first step, as :func:`tokenize` calls it."""
    return normalise_text(text, separators="keep")


def full_pipeline(text: str, stopwords: bool) -> list[str]:
    """NFKC + casefold, then the Unicode word pattern (no no-space script can be in ASCII)."""
    words = _word_pattern().findall(normalise(text))
    return [w for w in words if not (stopwords and w in STOPWORDS)]


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=80), st.booleans())
def test_ascii_fast_path_equals_the_unicode_pipeline(text: str, stopwords: bool) -> None:
    assert tokenize(text, stopwords=stopwords) == full_pipeline(text, stopwords)


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("How do I RESET my_password, 2FA?", ["how", "do", "i", "reset", "my_password", "2fa"]),
        ("", []),
        ("--- ...", []),
        (string.printable, ["0123456789abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz", "_"]),
    ],
)
def test_ascii_tokens_by_hand(text: str, tokens: list[str]) -> None:
    assert tokenize(text) == tokens


def test_non_ascii_still_takes_the_full_path() -> None:
    # NFKC folds the full-width letters, casefold turns ß into ss, marks stay in the word.
    assert tokenize("Ｓｔｒａßｅ कितने") == ["strasse", "कितने"]
