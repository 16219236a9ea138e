""":func:`service.text.wording.wording` reads each token once (remembered across texts): the
readings that depend on the next token or on the text (a word piece before ``"t"``, greetings,
numbers in groups, an unspaced script) come out as when nothing was remembered."""

from __future__ import annotations

from service.text import wording as module
from service.text.wording import wording


def _fresh(text: str) -> module.Wording:
    module._TOKEN_READINGS.clear()
    return wording.__wrapped__(text)


def test_a_remembered_token_reads_as_a_fresh_one_in_every_context() -> None:
    texts = ["is it a tax haven", "i haven t paid", "don quixote author", "don t know",
             "good morning who won in 1976", "the good morning show", "pay 1 000 000 now",
             "1 000 or one", "東京 2020 オリンピック", "cuál es el precio", "whos the 2nd",
             "played plays playing"]  # fmt: skip
    fresh = [_fresh(text) for text in texts]
    module._TOKEN_READINGS.clear()
    warm = [wording.__wrapped__(text) for text in texts + texts]
    assert warm[: len(texts)] == fresh and warm[len(texts) :] == fresh
    # worked out by hand: "haven" is a content word before anything but "t"; "don t" negates
    assert fresh[0].words == frozenset({"tax", "haven"}) and not fresh[0].negated
    assert "haven" not in fresh[1].words and fresh[1].negated
    assert fresh[4].numbers == frozenset({"1976"}) and "morning" not in fresh[4].words
    assert fresh[6].numbers == frozenset({"1000000"})
    assert fresh[8].numbers == frozenset({"2020"}) and fresh[8].words == frozenset()
    assert fresh[9].words == frozenset({"precio"}) and fresh[9].asks == frozenset({"what"})
    assert fresh[11].words == frozenset({"play"})


def test_a_long_token_is_read_but_not_remembered() -> None:
    """The memos' bound is a count: a token over 48 characters (a long unspaced run) is read
    each time and never kept, so it cannot hold megabytes per entry; its reading is the same."""
    long_word = "x" * 49
    text = f"where is {long_word} kept"
    fresh = _fresh(text)
    module._TOKEN_READINGS.clear()
    module._TOKEN_STEMS.clear()
    assert wording.__wrapped__(text) == fresh
    module.content_words(text)
    assert long_word not in module._TOKEN_READINGS and long_word not in module._TOKEN_STEMS
    assert "where" in module._TOKEN_READINGS  # short tokens are still remembered
