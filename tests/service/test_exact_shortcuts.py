"""The thirty-fourth session's shortcuts skip work only where it cannot change an output
(issue 22 item 2; a review found them exact on ~200,000 inputs but pinned by no test). Each
test pins the assumption a shortcut rests on, so an edit that breaks it fails here:

* PII names: ``_BEFORE`` ("jason is my name") is tried only where its cue is, so its pattern
  must hold the cue's pattern word for word;
* language: ``LanguageDetector._answer`` settles without langdetect where
  :meth:`~LanguageDetector._confident` cannot change the label: a text of fewer than
  ``CONFIDENT_LETTERS`` letters (``_confident`` is False without asking) and a label that is
  the script's dominant language (the prior gives it anyway);
* ``Pseudonymiser.peek`` reads the memo :meth:`~Pseudonymiser.memoised` fills, changing
  nothing.
"""

from __future__ import annotations

import pytest

from service.language.detector import (
    CONFIDENT_LETTERS,
    CONTRADICTED,
    NO_SUPPORT,
    SUPPORTED,
    LanguageDetector,
)
from service.pii.names import _BEFORE, _BEFORE_CUE, find_names
from service.pii.pseudonym import Pseudonymiser


def test_the_name_before_its_cue_is_searched_only_where_the_cue_is() -> None:
    assert _BEFORE_CUE.pattern in _BEFORE.pattern
    assert _BEFORE.flags == _BEFORE_CUE.flags  # no flag the cue's search would lack
    # "Jason" (characters 0-5) before the cue; after "my name is", the other pattern's
    assert list(find_names("Jason is my name")) == [(0, 5)]
    assert list(find_names("jason is my real name, ok")) == [(0, 5)]
    assert list(find_names("my name is Jason")) == [(11, 16)]


def test_confident_is_false_without_langdetect_below_its_letters() -> None:
    detector = LanguageDetector()

    def no_run(text: str) -> dict[str, float]:
        raise AssertionError("langdetect was asked")

    detector._unrestricted = no_run  # type: ignore[method-assign]
    short = "hostel fee"  # 9 letters
    assert sum(c.isalpha() for c in short) < CONFIDENT_LETTERS
    assert detector._confident(short, "nl") is False


@pytest.mark.parametrize(
    ("label", "level", "preferred", "confident", "want"),
    [
        # supported but not expected: langdetect may keep it (None: asked) ...
        ("es", SUPPORTED, ("en",), True, None),
        # ... unless the text is too short for it to be confident: the dominant language
        ("es", SUPPORTED, ("en",), False, ("en", False)),
        # expected without support: asked, unless short, or the label is the dominant one
        ("es", NO_SUPPORT, ("en", "es"), True, None),
        ("es", NO_SUPPORT, ("en", "es"), False, ("en", False)),
        ("en", NO_SUPPORT, ("en", "es"), True, ("en", False)),
        # contradicted: the dominant language, never asked
        ("es", CONTRADICTED, ("en", "es"), True, ("en", False)),
    ],
)
def test_answer_settles_what_langdetect_cannot_change(
    label: str, level: int, preferred: tuple[str, ...], confident: bool,
    want: tuple[str, bool] | None,
) -> None:  # fmt: skip
    assert LanguageDetector._answer(label, level, None, preferred, "en", confident) == want


def test_peek_reads_the_memo_and_changes_nothing() -> None:
    pseudonyms = Pseudonymiser(b"k" * 32, memo_size=2)
    user = "jo.bloggs@example.com"
    assert pseudonyms.peek(user) is None and pseudonyms.remembered == 0
    value = pseudonyms.memoised(user)
    assert value != user and pseudonyms.peek(user) == value and pseudonyms.remembered == 1
    pseudonyms.memoised("a@example.com")
    pseudonyms.memoised("b@example.com")  # past the memo's size: the memo starts again
    assert pseudonyms.remembered <= 2
    assert pseudonyms.peek(user) in (None, value)
