"""``service.text.stop_words``: the copy of scikit-learn's English stop words equals the list
of the installed scikit-learn (so tokens and topic labels are what they were when the list
was imported from scikit-learn)."""

from __future__ import annotations

from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS as SKLEARN_STOP_WORDS

from service.text.stop_words import ENGLISH_STOP_WORDS


def test_the_copy_equals_scikit_learns_list() -> None:
    assert ENGLISH_STOP_WORDS == frozenset(SKLEARN_STOP_WORDS)
