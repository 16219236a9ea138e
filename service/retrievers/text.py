"""Text normalisation, tokenisation and small corpus checks shared by the built-in retrievers.

The pipeline, applied to questions and passages alike:

1. :func:`service.text.normalise` (``separators="keep"``) — Unicode NFKC (full-width → ASCII,
   ligatures split, compatibility digits folded) then ``str.casefold`` (``ß`` → ``ss``).
2. Word tokens are maximal runs of word characters (``\\w``) **plus combining marks**
   (Unicode categories Mn/Mc/Me). Python's ``\\w`` alone splits Devanagari, Thai, … words at
   every vowel sign (``"कितने"`` → ``["क", "तन"]``); adding the marks keeps them whole.
3. Scripts written without spaces (Han, Hiragana, Katakana, Thai, Lao, Myanmar, Khmer) are cut
   into grapheme-ish clusters (a base character plus its marks) and emitted as unigrams and
   bigrams of clusters — the standard dictionary-free segmentation for CJK retrieval.
4. Optionally, English stop words (scikit-learn's ``ENGLISH_STOP_WORDS``, 318 words) are dropped.

>>> tokenize("Ｔｈｅ  Café's SCHOLARSHIP, 2016!")
['the', 'café', 's', 'scholarship', '2016']
>>> tokenize("The Café's scholarship", stopwords=True)
['café', 's', 'scholarship']
>>> tokenize("कितने अंक")
['कितने', 'अंक']
>>> tokenize("超级碗50")
['超', '级', '碗', '超级', '级碗', '50']
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from functools import cache

from service.records import Passage
from service.text import normalise
from service.text.stop_words import ENGLISH_STOP_WORDS
from service.text.unicode_classes import category_ranges

#: Code-point ranges of scripts written without spaces between words.
_NO_SPACE_RANGES: tuple[tuple[int, int], ...] = (
    (0x0E00, 0x0EFF),  # Thai, Lao
    (0x1000, 0x109F),  # Myanmar
    (0x1780, 0x17FF),  # Khmer
    (0x3040, 0x30FF),  # Hiragana, Katakana
    (0x31F0, 0x31FF),  # Katakana phonetic extensions
    (0x3400, 0x4DBF),  # CJK extension A
    (0x4E00, 0x9FFF),  # CJK unified ideographs
    (0xF900, 0xFAFF),  # CJK compatibility ideographs
    (0x20000, 0x2FA1F),  # CJK extensions B-F, compatibility supplement
)
_NO_SPACE_CLASS = "".join(f"{chr(lo)}-{chr(hi)}" for lo, hi in _NO_SPACE_RANGES)
_NO_SPACE_RUN = re.compile(f"([{_NO_SPACE_CLASS}]+)")

STOPWORDS: frozenset[str] = frozenset(ENGLISH_STOP_WORDS)

#: Word tokens of ASCII text after lower-casing: NFKC leaves ASCII unchanged, ``casefold`` is
#: ``lower`` on it, ASCII has no combining marks and no no-space script, and ``\w`` on ASCII
#: is ``[A-Za-z0-9_]`` — so this gives :func:`tokenize`'s tokens ~10x cheaper than the full
#: pattern (whose class lists every combining mark of Unicode).
_ASCII_WORD = re.compile(r"[a-z0-9_]+")


@cache
def _word_pattern() -> re.Pattern[str]:
    """``[\\w<combining marks>]+``, built once from the Unicode database."""
    marks = "".join(
        re.escape(chr(lo)) + "-" + re.escape(chr(hi)) for lo, hi in category_ranges("M")
    )
    return re.compile(f"[\\w{marks}]+")


def _clusters(run: str) -> list[str]:
    """Split a run of a no-space script into base characters with their trailing marks."""
    clusters: list[str] = []
    for char in run:
        if clusters and unicodedata.category(char).startswith("M"):
            clusters[-1] += char
        else:
            clusters.append(char)
    return clusters


def _split_word(word: str) -> list[str]:
    """Return ``word`` itself, or cluster uni+bigrams for its no-space-script runs."""
    if not _NO_SPACE_RUN.search(word):
        return [word]
    tokens: list[str] = []
    for index, part in enumerate(_NO_SPACE_RUN.split(word)):
        if not part:
            continue
        if index % 2 == 0:  # a piece outside the no-space scripts (split keeps runs at odd)
            tokens.append(part)
            continue
        units = _clusters(part)
        tokens.extend(units)
        tokens.extend(a + b for a, b in zip(units, units[1:], strict=False))
    return tokens


def tokenize(text: str, *, stopwords: bool = False) -> list[str]:
    """Return the tokens of ``text`` (see the module docstring), in text order.

    Args:
        text: any Unicode text; may be empty.
        stopwords: drop English stop words.

    Returns:
        Normalised tokens; ``[]`` when ``text`` has no word characters.
    """
    if text.isascii():
        tokens: list[str] = _ASCII_WORD.findall(text.lower())
        if stopwords:
            tokens = [token for token in tokens if token not in STOPWORDS]
        return tokens
    text = normalise(text, separators="keep")
    words: list[str] = _word_pattern().findall(text)
    if not _NO_SPACE_RUN.search(text):  # every word is a token
        tokens = words
    else:
        tokens = []
        for word in words:
            tokens.extend(_split_word(word))
    if stopwords:
        tokens = [token for token in tokens if token not in STOPWORDS]
    return tokens


def check_k(k: int) -> None:
    """Raise ``ValueError`` unless ``k`` is an int ≥ 1 (the :class:`Retriever` contract)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k must be an integer >= 1, got {k!r}")


def corpus_ids(corpus: Sequence[Passage]) -> list[str]:
    """Return the passage ids of ``corpus`` in order.

    Raises:
        ValueError: the corpus is empty or two passages share an id.
    """
    ids = [passage.id for passage in corpus]
    if not ids:
        raise ValueError("the corpus is empty; a built-in retriever needs at least one passage")
    if len(set(ids)) != len(ids):
        dupes = sorted(i for i, n in Counter(ids).items() if n > 1)[:5]
        raise ValueError(f"duplicate passage ids in the corpus: {', '.join(dupes)}")
    return ids
