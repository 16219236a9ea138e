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
